"""Advice in the words of the front in use (issue 23): one error, worded for Python, the CLI and a widget.

Each test raises one error through the library (Python's words), through
``rewardlab.cli.main`` (stderr: the command's flags), and through a widget
(the session's ``attempt`` or the widget's own action; the widget's error
text: its controls' labels), and checks that each reads only its own words.
"""

from __future__ import annotations

import html
import pickle
import warnings

import polars as pl
import pytest

import rewardlab
from rewardlab.cli import build_parser, main
from rewardlab.core.errors import DataFormatError, OutputExistsError, ParameterError, SkippedLinesWarning, StepTableError
from rewardlab.core.fronts import PYTHON, WIDGET, Arg, Fix, Text, render, text_of
from lines import game_lines, gid, write

pytest.importorskip("ipywidgets")

from rewardlab.widgets import EpsilonScheduleTuner, NormalizationPanel, RankingTuner  # noqa: E402

CARTPOLE = "data/gym/cartpole_random.parquet"


def _shown(html_text: str) -> str:
    return html.unescape(html_text)


def _cli(argv, capsys) -> tuple[int, str]:
    capsys.readouterr()
    code = main([str(a) for a in argv])
    return code, capsys.readouterr().err


@pytest.fixture()
def tuner(small_frame):
    return RankingTuner(small_frame, preset="top_two", constants="none", background=False)


# --------------------------------------------------------------------------
# export to an existing file: overwrite=True / --overwrite / tick 'overwrite if it exists'
# --------------------------------------------------------------------------


def test_export_to_an_existing_file_says_overwrite_in_the_words_of_each_front(tmp_path, tuner, capsys):
    existing = tmp_path / "r.py"
    existing.write_text("keep me\n")
    # Python
    with pytest.raises(OutputExistsError) as info:
        tuner.session.export(existing)
    assert str(info.value) == f"{existing} already exists; pass overwrite=True to replace it"
    # the CLI
    code, err = _cli(["export", "ranking", "--preset", "top_two", "--out", existing], capsys)
    assert code == 2
    assert err == f"rewardlab export: error: {existing} already exists; pass --overwrite to replace it\n"
    # a widget: the export button, and the state bar's save
    tuner.export_path.value = str(existing)
    tuner.export_button.click()
    shown = _shown(tuner.export_result.value)
    assert f"{existing} already exists; tick 'overwrite if it exists' to replace it" in shown, shown
    assert "overwrite=True" not in shown and "--overwrite" not in shown
    assert tuner.overwrite.description == "overwrite if it exists"  # the words name the control
    tuner.state_path.value = str(existing)
    tuner.save_state_button.click()
    shown = _shown(tuner.error.value)
    assert f"{existing} already exists; tick 'overwrite if it exists' to replace it" in shown, shown
    assert tuner.state_overwrite.description == "overwrite if it exists"
    assert existing.read_text() == "keep me\n"
    # each front's remedy works: the checkbox, the flag
    tuner.state_overwrite.value = True
    tuner.save_state_button.click()
    assert "saved to" in tuner.state_status.value and existing.read_text() != "keep me\n"
    assert main(["export", "ranking", "--preset", "top_two", "--out", str(existing), "--overwrite"]) == 0


# --------------------------------------------------------------------------
# the ranking tuner's 4th box: `vector[3]` / the 4th value of `--vector` / box '4th'
# --------------------------------------------------------------------------


def test_the_fourth_rank_box_is_named_4th_in_a_widget(tmp_path, tuner, capsys):
    s = tuner.session
    # Python
    with pytest.raises(ParameterError, match=r"^`vector\[3\]` should be a number such as 0\.5"):
        s.set_rank_value(3, "1,5")
    with pytest.raises(ParameterError, match=r"^`vector\[3\]` should keep the raw reward within ±1e\+100"):
        s.set_rank_value(3, 1e308)
    # the CLI
    code, err = _cli(["export", "ranking", "--vector", "1,0,0,1e308", "--out", tmp_path / "r.py"], capsys)
    assert code == 2
    assert err.startswith("rewardlab export: error: the 4th value of `--vector` should keep the raw reward "
                          "within ±1e+100"), err
    assert "vector[3]" not in err
    # a widget: the box labelled 4th
    assert tuner.rank_inputs[3].description == "4th"
    before = (s.vector, s.version)
    for typed, rule in (("1,5", "should be a number such as 0.5"),
                        ("1e308", "should keep the raw reward within ±1e+100")):
        tuner.rank_inputs[3].value = typed
        shown = _shown(tuner.error.value)
        assert f"box '4th' {rule}" in shown, shown
        assert "vector[3]" not in shown and (s.vector, s.version) == before
    assert s.last_error == str(pytest.raises(ParameterError, s.set_rank_value, 3, "1e308").value)  # Python's


# --------------------------------------------------------------------------
# a step table cut mid-episode: unfinished='truncate' / --option unfinished=truncate
# --------------------------------------------------------------------------


def test_a_run_cut_mid_episode_says_unfinished_truncate_in_the_words_of_each_front(tmp_path, capsys):
    path = tmp_path / "cut.csv"
    path.write_text("episode,step,x,terminated,reward\n0,0,1,false,1.0\n0,1,2,false,1.0\n")
    tail = " to load such episodes as truncated."
    # Python
    with pytest.raises(StepTableError) as info:
        rewardlab.load(path)
    assert str(info.value).endswith("or load with unfinished='truncate'" + tail)
    # the CLI: a format option
    code, err = _cli(["info", path], capsys)
    assert code == 2
    assert err.startswith(f"rewardlab info: error: {path}:3: column 'terminated': ")
    assert err.endswith("or load with --option unfinished=truncate" + tail + "\n"), err
    assert "unfinished='truncate'" not in err
    assert main(["info", str(path), "--option", "unfinished=truncate"]) == 0  # the advice works
    # a widget: no control loads data, so Python's words (what the notebook cell passes)
    panel = EpsilonScheduleTuner()
    assert not panel.session.attempt(rewardlab.load, path)
    shown = _shown(panel.error.value)
    assert shown.rstrip("</div>").endswith("or load with unfinished='truncate'" + tail) and "--option" not in shown


# --------------------------------------------------------------------------
# export scaling of episode-return constants: center=False / --no-center
# --------------------------------------------------------------------------


def test_export_scaling_centering_says_no_center_on_the_cli(tmp_path, capsys):
    cartpole = rewardlab.load(CARTPOLE)
    out = tmp_path / "s.py"
    constants = rewardlab.normalization_constants(cartpole, "recorded", scope="episode_return")
    hint = " to divide by the return std only, or measure constants over steps (scope='all')."
    # Python
    with pytest.raises(ParameterError) as info:
        rewardlab.export_scaling_plugin(constants, out, data=cartpole)
    assert str(info.value).startswith("`center` should be False for constants of scope 'episode_return'")
    assert str(info.value).endswith("Pass center=False" + hint)
    # the CLI
    code, err = _cli(["export", "scaling", "--data", CARTPOLE, "--scope", "episode_return", "--out", out], capsys)
    assert code == 2 and err.endswith("Pass --no-center" + hint + "\n"), err
    assert "center=False" not in err and not out.exists()
    # a widget: the panel has no centering control, so Python's words
    panel = NormalizationPanel(cartpole, reward="recorded")
    assert not panel.session.attempt(rewardlab.export_scaling_plugin, constants, out, data=cartpole)
    shown = _shown(panel.error.value)
    assert "Pass center=False" + hint in shown and "--no-center" not in shown
    assert main(["export", "scaling", "--data", CARTPOLE, "--scope", "episode_return", "--no-center",
                 "--out", str(out)]) == 0  # the advice works


# --------------------------------------------------------------------------
# a kanachan file with a bad line: on_error='skip' / --on-error skip / --option on_error=skip
# --------------------------------------------------------------------------


def test_a_bad_kanachan_line_says_skip_mode_in_the_words_of_each_front(tmp_path, capsys):
    lines = game_lines(gid(1), rounds=(3, 2)) + game_lines(gid(2), rounds=(2, 2))
    lines = lines[:3] + ["\t".join(lines[3].split("\t")[:9])] + lines[4:]
    bad = write(tmp_path / "bad.tsv", lines)
    hint = " to skip and keep such lines."
    # Python: only its own words
    with pytest.raises(DataFormatError) as info:
        rewardlab.load_kanachan(bad)
    text = str(info.value)
    assert text.endswith("[rule: column_count] Fix the line, or load with on_error='skip'" + hint)
    assert "CLI" not in text and "--on-error" not in text
    # the CLI: `info` and `apply` have --on-error
    code, err = _cli(["info", bad], capsys)
    assert code == 2 and err.endswith("Fix the line, or load with --on-error skip" + hint + "\n"), err
    assert "on_error='skip'" not in err
    code, err = _cli(["apply", bad, "--plugin", "data/plugins/rank_top.py", "--out", tmp_path / "r.parquet"],
                     capsys)
    assert code == 2 and err.endswith("Fix the line, or load with --on-error skip" + hint + "\n"), err
    side = tmp_path / "skipped.tsv"
    assert main(["info", str(bad), "--on-error", "skip", "--skipped", str(side)]) == 0  # the advice works
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", SkippedLinesWarning)  # the command reports the skipped lines itself
        assert main(["apply", str(bad), "--on-error", "skip", "--option",
                     f"skipped_path={tmp_path / 'skipped2.tsv'}", "--plugin", "data/plugins/rank_top.py",
                     "--out", str(tmp_path / "r.parquet")]) == 0
    assert (tmp_path / "skipped2.tsv").read_text().count("\n") == 5 and (tmp_path / "r.parquet").is_file()
    code, err = _cli(["apply", bad, "--on-error", "skip", "--option", "on_error=raise", "--plugin",
                      "data/plugins/rank_top.py", "--out", tmp_path / "r2.parquet"], capsys)
    assert code == 2 and "`--on-error` says skip while --option on_error says raise" in err, err
    # a widget: Python's words (the data is loaded in the notebook's cell), never the CLI's
    panel = EpsilonScheduleTuner()
    assert not panel.session.attempt(rewardlab.load_kanachan, bad)
    shown = _shown(panel.error.value)
    assert "Fix the line, or load with on_error='skip'" + hint in shown and "CLI" not in shown


# --------------------------------------------------------------------------
# the mechanism
# --------------------------------------------------------------------------


def test_the_cli_front_is_read_from_each_commands_flags():
    from rewardlab.cli import command_front

    parser = build_parser()
    args = parser.parse_args(["export", "scaling", "--data", "x", "--out", "y"])
    scaling = command_front(parser.commands["export"], args)
    assert scaling.say(Fix("center", False, verb="Pass")) == "Pass --no-center"
    assert scaling.say(Fix("overwrite", True)) == "pass --overwrite"
    assert scaling.say(Arg("key")) == "`--key`"
    info = command_front(parser.commands["info"])
    skip = Fix("on_error", "skip", verb="", option=True)
    assert info.say(skip) == "--on-error skip"
    assert command_front(parser.commands["apply"]).say(skip) == "--on-error skip"
    assert command_front(parser.commands["stats"]).say(skip) == "--on-error skip"
    assert command_front(parser.commands["apply"]).say(Fix("replace", True)) == "pass --replace"
    # no word of its own: Python's
    assert info.say(Fix("keep_constants", True)) == "pass keep_constants=True"
    assert WIDGET.say(Fix("center", False)) == PYTHON.say(Fix("center", False)) == "pass center=False"


def test_remedy_terms_survive_pickling_and_concatenation():
    err = pickle.loads(pickle.dumps(OutputExistsError("out.py")))  # an error raised in a plug-in child process
    assert render(err, WIDGET) == "out.py already exists; tick 'overwrite if it exists' to replace it"
    assert str(err) == "out.py already exists; pass overwrite=True to replace it"
    text = "see: " + text_of(err) + "."
    assert isinstance(text, Text) and render(text, WIDGET).startswith("see: out.py already exists; tick")
    assert render(ValueError("plain"), WIDGET) == "plain"


def test_python_messages_stay_plain_strings_and_keep_their_terms():
    """Python's messages read as before (equality, formatting, a Polars column); the terms ride along."""
    err = ParameterError("gamma", "should be in [0, 1]", 1.5, hint=Text(Fix("overwrite", True), " to replace it"))
    assert str(err) == "`gamma` should be in [0, 1]. Received 1.5. pass overwrite=True to replace it"
    assert f"{err}" == str(err) and type(str(err)) is str
    assert pl.Series([text_of(err)]).to_list() == [str(err)]
    assert text_of(err).terms == (Arg("gamma"), Fix("overwrite", True))
    assert render(err, WIDGET) == "`gamma` should be in [0, 1]. Received 1.5. tick 'overwrite if it exists' to replace it"
