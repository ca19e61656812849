"""Widgets in plain pytest: set ``widget.value`` / click, check the session and the outputs."""

from __future__ import annotations

import html
from pathlib import Path

import pytest

pytest.importorskip("ipywidgets")

from rewardlab.widgets import (  # noqa: E402
    ComparisonBoard, EpsilonScheduleTuner, FigurePane, NormalizationPanel, NumberText, RankingTuner, fmt,
    number_text,
)

ROOT = Path(__file__).resolve().parents[1]
PNG = b"\x89PNG\r\n\x1a\n"


def test_import_rewardlab_does_not_import_ipywidgets():
    import subprocess
    import sys

    code = ("import sys, rewardlab, rewardlab.sessions; "
            "print('ipywidgets' in sys.modules, 'matplotlib.pyplot' in sys.modules)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.split() == ["False", "False"]


@pytest.mark.parametrize("before", ["", "import matplotlib.pyplot as plt; plt.switch_backend('svg'); "])
def test_importing_the_widgets_keeps_the_users_matplotlib_backend(before):
    """ipympl's import makes itself the backend; the user's pyplot figures must stay as they were."""
    import subprocess
    import sys

    code = (f"import matplotlib; {before}import rewardlab.widgets, matplotlib.pyplot as plt; "
            "print(plt.get_backend())")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True,
                         env={"MPLBACKEND": "", "PATH": ""})
    assert out.stdout.split() == (["svg"] if before else ["agg"])


def test_figure_pane_lays_out_again_only_when_its_text_changes():
    pane = FigurePane(figsize=(4.0, 2.0))
    pane.draw(lambda axes: axes[0].plot([0, 1], [0, 1]))
    first = pane.axes[0].get_position().bounds
    pane.draw(lambda axes: axes[0].plot([0, 1], [0, 0.9]))  # the same ticks and labels: the same room
    assert pane.axes[0].get_position().bounds == pytest.approx(first, abs=1e-12)
    pane.draw(lambda axes: axes[0].plot([0, 1], [0, 50000]))  # wider tick labels: more room on the left
    assert pane.axes[0].get_position().x0 > first[0]
    pane.draw(lambda axes: (axes[0].plot([0, 1], [0, 1]), axes[0].set_title("a title")))
    assert pane.axes[0].get_position().y1 < first[1] + first[3]  # room for the title


def test_figure_pane_redraws_in_place_and_routes_clicks():
    pane = FigurePane(figsize=(4.0, 2.0))
    clicks = []
    pane.on_click(clicks.append)
    pane.draw(lambda axes: axes[1].plot([0, 1]), ncols=2)
    figure, canvas = pane.figure, pane.canvas
    assert pane.draws == 1 and len(pane.axes) == 2 and pane.png().startswith(PNG)
    pane.draw(lambda axes: axes[0].bar([0, 1], [1, 2]), figsize=(5.0, 2.0))
    # the same figure on the same canvas widget, with new Axes and size: nothing is appended
    assert pane.figure is figure and pane.canvas is canvas and pane.children == (canvas,) and pane.draws == 2
    assert len(pane.figure.axes) == 1 and tuple(pane.figure.get_size_inches()) == (5.0, 2.0)
    # a real mouse press in the data area arrives as a Click on that Axes, in data coordinates
    ax = pane.axes[0]
    pane.render()
    x, y = ax.transData.transform((1.0, 1.5))
    canvas.handle_event({"type": "button_press", "x": x, "y": pane.figure.bbox.height - y, "button": 0,
                         "buttons": 1, "guiEvent": None, "modifiers": []})
    assert len(clicks) == 1 and clicks[0].axes == 0
    assert (clicks[0].x, clicks[0].y) == pytest.approx((1.0, 1.5), abs=0.05)
    canvas.toolbar.zoom()  # while zooming, a press belongs to the zoom tool
    canvas.handle_event({"type": "button_press", "x": x, "y": pane.figure.bbox.height - y, "button": 0,
                         "buttons": 1, "guiEvent": None, "modifiers": []})
    assert len(clicks) == 1


@pytest.fixture(scope="module")
def tuner(sample_frame):
    return RankingTuner(sample_frame, preset="tenhou_tokujo_6dan")


def test_ranking_tuner_rank_input(tuner):
    s = tuner.session
    assert [box.value for box in tuner.rank_inputs] == ["75.0", "30.0", "0.0", "-120.0"]
    assert list(s.vector) == [75.0, 30.0, 0.0, -120.0] and s.auto_constants  # constants from data, refitted
    assert tuner.plot.png().startswith(PNG) and "mean before" in tuner.stats.value
    plot, stats, version = tuner.plot.draws, tuner.stats.value, s.version
    tuner.rank_inputs[3].value = " -150 "  # what a person types
    assert s.vector == (75.0, 30.0, 0.0, -150.0) and s.version == version + 1
    assert tuner.rank_inputs[3].value == "-150.0"  # shows the value in use
    r = s.results
    assert tuner.plot.draws == plot + 1
    assert tuner.stats.value != stats
    assert f"<b class='rewardlab-after-mean'>{fmt(r.reward_moments.mean)}</b>" in tuner.stats.value
    assert f"<b class='rewardlab-after-std'>{fmt(r.reward_moments.std)}</b>" in tuner.stats.value
    assert fmt(r.raw_moments.std) in tuner.stats.value
    assert tuner.preset.value == "custom"  # no preset has this vector
    assert r.reward_moments.std == pytest.approx(1.0) and "fitted for other parameters" not in tuner.provenance.value
    s.auto_constants = False
    tuner.rank_inputs[3].value = -160.0  # a number assigned from Python is shown as its text
    assert tuner.rank_inputs[3].value == "-160.0" and s.vector[3] == -160.0
    assert "fitted for other parameters" in tuner.provenance.value and tuner.export_button.disabled
    tuner.keep_constants.value = True
    assert not tuner.export_button.disabled
    tuner.keep_constants.value = False
    tuner.from_data.click()
    assert not tuner.export_button.disabled and "fitted for other parameters" not in tuner.provenance.value


def test_ranking_tuner_invalid_value_shows_the_message(tuner):
    s = tuner.session
    std, version = s.std, s.version
    tuner.std.value = "0"
    assert s.std == std and s.version == version
    assert html.escape("`std` should be > 0 (rewards are divided by it). Received 0.0.") in tuner.error.value
    assert tuner.std.value == number_text(std)  # the box returns to the value in use
    tuner.std.value = 50.0
    assert s.std == 50.0 and tuner.error.value == "" and s.provenance.kind == "typed"
    assert "typed by the user" in tuner.provenance.value


def test_ranking_tuner_preset_points_and_constants(tuner):
    s = tuner.session
    tuner.preset.value = "mleague"
    assert [b.value for b in tuner.rank_inputs] == ["500.0", "100.0", "-100.0", "-300.0"]
    assert tuner.points.value is True and (tuner.offset.value, tuner.divisor.value) == ("30000", "100")
    assert not tuner.offset.disabled and s.family.name == "ranking_points"
    tuner.seed_recipe.click()  # not for a points term: the message, nothing else
    assert "`points` should be off for the wiki&#x27;s recipe" in tuner.error.value
    assert tuner.seed_recipe.description == "wiki's recipe" and "seed" not in tuner.seed_recipe.tooltip
    tuner.from_data.click()
    assert tuner.error.value == "" and s.provenance.kind == "dataset"
    assert tuner.mean.value == repr(s.mean) and tuner.std.value == repr(s.std)
    assert f"<b class='rewardlab-after-std'>{fmt(1.0)}</b>" in tuner.stats.value
    tuner.points.value = False
    assert s.family.name == "ranking" and tuner.offset.disabled
    tuner.auto_constants.value = True
    tuner.rank_inputs[0].value = 1000.0
    assert s.results.reward_moments.std == pytest.approx(1.0) and "fitted for other" not in tuner.provenance.value
    tuner.no_constants.click()
    assert (tuner.mean.value, tuner.std.value, tuner.auto_constants.value) == ("0.0", "1.0", False)


def test_ranking_tuner_export_button(small_frame, tmp_path):
    tuner = RankingTuner(small_frame, preset="top_two", export_path=str(tmp_path / "top_two.py"))
    tuner.export_button.click()  # in a background thread
    assert tuner.wait_for_export(60)
    path = tmp_path / "top_two.py"
    assert path.is_file()
    shown = tuner.export_result.value
    assert f"<code class='rewardlab-export-written'>{path}</code>" in shown
    assert "# family:      ranking (End-of-game ranking)" in shown and "check-plugin: PASS" in shown
    assert "bit for bit" in shown and not tuner.export_button.disabled
    text = path.read_text()
    tuner.rank_inputs[0].value = 2.0
    tuner.export_button.click()
    assert tuner.wait_for_export(60)
    assert "already exists; tick &#x27;overwrite if it exists&#x27; to replace it" in tuner.export_result.value
    assert path.read_text() == text
    tuner.overwrite.value = True
    tuner.export_button.click()
    assert tuner.wait_for_export(60)
    assert "check-plugin: PASS" in tuner.export_result.value and "_RL_VECTOR = (2.0, 1.0," in path.read_text()
    assert "# constants fit: fitted for exactly these parameters (data fingerprint sha256:" in path.read_text()


def test_epsilon_tuner():
    t = EpsilonScheduleTuner()
    s = t.session
    assert t.kanachan_box.layout.display == "none" and t.explorer_box.layout.display == ""
    assert t.snippet.value == s.results.snippets["yaml"] and t.plot.png().startswith(PNG)
    plot = t.plot.draws
    t.controls["decay_steps"].value = "100_000"  # not a number as a person writes it: refused
    assert "`decay_steps` should be a whole number such as 1000. Received &#x27;100_000&#x27;." in t.error.value
    assert t.controls["decay_steps"].value == number_text(s.decay_steps) and t.plot.draws == plot
    t.controls["decay_steps"].value = "1e5"
    assert s.decay_steps == 100_000 and t.plot.draws == plot + 1
    assert f"{s.results.summary.first_below:,}" in t.summary.value
    t.snippet_format.value = "julia"
    assert t.snippet.value.startswith("EpsilonGreedyExplorer(kind=:linear")
    t.kind.value = "kanachan_actual"
    assert s.kind == "kanachan_actual" and t.explorer_box.layout.display == "none"
    assert list(t.snippet_format.options) == ["json", "yaml"] and t.snippet.value == s.results.snippets["yaml"]
    assert "never" in t.summary.value
    t.controls["epsilon_first"].value = 0.3
    t.controls["epsilon_last"].value = 0.5
    assert s.epsilon_last == 0.05
    assert "`epsilon_last` should be &lt;= epsilon_first (0.3). Received 0.5." in t.error.value
    t.controls["increment"].value = s.annealing_steps
    assert t.error.value == "" and s.results.summary.first_below == s.annealing_steps


def test_normalization_panel(sample_frame):
    from rewardlab.domains.mahjong.families import Points

    frame = Points.from_preset("raw").with_columns(sample_frame, "score")
    panel = NormalizationPanel(frame, scope="end_of_game")
    s = panel.session
    c = s.results.constants
    assert f"{c.mean:.6g}" in panel.constants.value and f"{c.std:.6g}" in panel.constants.value
    plot = panel.plot.draws
    panel.scope.value = "all"
    assert s.scope == "all" and s.results.constants.scope == "all" and panel.plot.draws == plot + 1
    assert f"{s.results.constants.std:.6g}" in panel.constants.value
    panel.clip_reward.value = -1.0
    assert "`clip_reward` should be &gt; 0. Received -1.0." in panel.error.value and s.clip_reward == 10.0
    assert panel.clip_reward.value == "10.0"
    panel.clip_reward.value = 1.0
    assert f"SB3 clips {s.results.fraction_clipped:.2%}" in panel.summary.value


def test_comparison_board(sample_frame, small_frame, tmp_path):
    from rewardlab.domains.mahjong.families import Points, Ranking, RoundDelta

    frame = Ranking.from_preset("top").with_columns(sample_frame, "top")
    frame = Points.from_preset("thousands").with_columns(frame, "points")
    frame = RoundDelta.from_preset("thousands").with_columns(frame, "delta")
    board = ComparisonBoard(frame)
    s = board.session
    assert s.chosen == ("top", "points", "delta") and "pearson_distance" in board.pairs.value
    assert "epic" not in board.pairs.value  # the Pearson distance of returns is not called EPIC
    assert "<div style='max-height:320px;overflow:auto'>" in board.pairs.value  # scrolls at 10 candidates
    draws = [p.draws for p in (board.steps_plot, board.matrix_plot, board.scatter_plot)]
    board.metric.value = "pearson_distance"
    assert s.metric == "pearson_distance"  # only the matrix is drawn again
    assert [p.draws for p in (board.steps_plot, board.matrix_plot, board.scatter_plot)] == \
        [draws[0], draws[1] + 1, draws[2]]
    assert board.matrix_plot.axes[0].get_title() == "Pearson distance of episode returns"
    board.metric.value = "epic"  # reward columns, no plug-in: the labelled fallback, with the reason, nothing run
    assert s.results.shown == "pearson_distance" and not s.results.epic_pending and not board.epic_task.running
    assert board.matrix_plot.axes[0].get_title() == "Pearson distance of episode returns (fallback: not EPIC)"
    assert "EPIC cannot be shown: top, points, delta: a reward column of the data, not a plug-in" in \
        board.matrix_note.value
    assert board.epic_button.layout.display == "none"
    assert s.results.matrix.equals(s.results.comparison.matrix("pearson_distance"))
    board.chosen.value = ("top", "delta")
    assert s.chosen == ("top", "delta") and s.results.comparison.names == ("top", "delta")
    board.b.value = "delta"
    assert s.b == "delta" and "<b>delta</b> disagree most" in board.disagreements.value
    board.b.value = "top"
    assert "`b` should differ from `a`. Received &#x27;top&#x27;." in board.error.value

    small = ComparisonBoard(Ranking.from_preset("top").with_columns(small_frame, "top"),
                            [ROOT / "data" / "plugins" / "rank_top_two.py"], background=False)
    small.add_path.value = str(tmp_path / "missing.py")
    small.add_button.click()
    assert "missing.py" in small.add_result.value and small.session.candidates == ("top", "rank_top_two")
    assert not small.add_task.running and not small.add_button.disabled
    user = tmp_path / "negated.py"
    user.write_text((ROOT / "data" / "plugins" / "rank_top.py").read_text() +
                    '\n\n_orig = get_reward\n\n\ndef get_reward(data, contiguous):\n'
                    '    _orig(data, contiguous)\n    data["next", "reward"] = -data["next", "reward"]\n')
    small.add_path.value = str(user)
    small.add_button.click()
    assert small.error.value == "" and "negated" in small.chosen.options and "negated" in small.chosen.value
    assert "added <b>negated</b>" in small.add_result.value
    assert small.session.results.comparison.pearson[0, 2] == pytest.approx(-1.0)


SLOW_PLUGIN = (ROOT / "data" / "plugins" / "rank_top.py").read_text() + '''

import time as _time

_orig = get_reward


def get_reward(data, contiguous):
    _time.sleep(0.05)
    _orig(data, contiguous)
'''


def test_comparison_board_applies_in_the_background_with_progress_and_cancel(small_frame, tmp_path):
    import time

    from rewardlab.domains.mahjong.families import Ranking

    board = ComparisonBoard(Ranking.from_preset("top").with_columns(small_frame, "top"),
                            [ROOT / "data" / "plugins" / "rank_top_two.py"])
    s = board.session
    before = (s.candidates, s.version, s.frame.columns)
    path = tmp_path / "slow.py"
    path.write_text(SLOW_PLUGIN)
    seen = []
    board.add_task.progress.observe(lambda change: seen.append(change["new"]), names="value")
    board.add_path.value = str(path)
    board.add_button.click()
    assert board.add_task.running and board.add_button.disabled and not board.add_task.cancel_button.disabled
    assert board.add_task.progress.layout.visibility == "visible"
    board.add_button.click()  # a second click while it runs starts nothing
    deadline = time.monotonic() + 60
    while not seen and time.monotonic() < deadline:  # the notebook thread is free meanwhile
        time.sleep(0.02)
    assert seen and 0 < seen[-1] < 1 and "transitions" in board.add_task.status.value
    board.add_task.cancel_button.click()
    assert board.wait_for_add(60)
    assert "running plug-in 'slow' was cancelled; no result was kept" in html.unescape(board.add_result.value)
    assert (s.candidates, s.version, s.frame.columns) == before  # nothing kept
    assert board.add_task.progress.layout.visibility == "hidden" and not board.add_button.disabled


# --------------------------------------------------------------------------
# Issue 10: tuners must not pass bad results off as good
# --------------------------------------------------------------------------


def _shown(tuner) -> str:
    return html.unescape(tuner.export_result.value)


def _idle(tuner) -> bool:
    """The export is over: button usable again, no Cancel, no progress bar."""
    return (not tuner.export_button.disabled and tuner.cancel_button.disabled
            and tuner.export_progress.layout.visibility == "hidden")


def test_export_button_errors_show_a_message_and_reenable(small_frame, tmp_path, monkeypatch):
    tuner = RankingTuner(small_frame, preset="top_two", background=False)
    folder = tmp_path / "folder"
    folder.mkdir()
    a_file = tmp_path / "a_file.txt"
    a_file.write_text("not a folder\n")
    existing = tmp_path / "existing.py"
    existing.write_text("keep me\n")
    cases = [
        ("", False, "`path` should name the file to write; it is empty. Received ''. Type a file name"),
        ("   ", True, "`path` should name the file to write; it is empty. Received '   '."),
        (str(folder), False, f"`path` should name a file, not a folder. Received {str(folder)!r}."),
        (str(folder) + "/", True, f"`path` should name a file, not a folder. Received {str(folder) + '/'!r}."),
        (str(a_file / "r.py"), True, f"`path` cannot be written: {a_file} is a file, not a folder. "
         f"Received {str(a_file / 'r.py')!r}."),
        # found before the round trip runs, not when the file is written
        (str(tmp_path / "typo" / "r.py"), False, f"`path` cannot be written: the folder {tmp_path / 'typo'} "
         f"does not exist. Received {str(tmp_path / 'typo' / 'r.py')!r}. Create it first"),
        (str(existing), False, f"{existing} already exists; tick 'overwrite if it exists' to replace it"),
    ]
    for typed, overwrite, message in cases:
        tuner.export_path.value, tuner.overwrite.value = typed, overwrite
        tuner.export_button.click()
        assert message in _shown(tuner), (typed, _shown(tuner))
        assert _idle(tuner), typed
    assert existing.read_text() == "keep me\n" and sorted(p.name for p in tmp_path.iterdir()) == [
        "a_file.txt", "existing.py", "folder"]

    def no_space(*args, **kwargs):
        raise OSError(28, "No space left on device")

    monkeypatch.setattr("rewardlab.export.atomic_open", no_space)
    (tmp_path / "full").mkdir()
    tuner.export_path.value, tuner.overwrite.value = str(tmp_path / "full" / "r.py"), False
    tuner.export_button.click()
    assert (f"cannot write {str(tmp_path / 'full' / 'r.py')!r}: No space left on device. Nothing was written"
            in _shown(tuner))
    assert _idle(tuner)

    def broken(*args, **kwargs):
        raise RuntimeError("something nobody expected")

    monkeypatch.setattr("rewardlab.sessions.ranking.render_plugin", broken)
    tuner.export_button.click()
    assert f"export of {str(tmp_path / 'full' / 'r.py')!r} failed: RuntimeError: something nobody expected" \
        in _shown(tuner)
    assert _idle(tuner)


def test_export_in_the_background_reports_errors_too(small_frame, tmp_path):
    tuner = RankingTuner(small_frame, preset="top_two", export_path=str(tmp_path))  # a folder
    tuner.export_button.click()
    assert tuner.wait_for_export(60)
    assert f"`path` should name a file, not a folder. Received {str(tmp_path)!r}." in _shown(tuner)
    assert _idle(tuner)


def test_export_shows_progress_and_cancels(small_frame, tmp_path):
    path = tmp_path / "r.py"
    tuner = RankingTuner(small_frame, preset="top_two", export_path=str(path), background=False)
    seen = []

    def on_progress(change):
        seen.append((change["new"], html.unescape(tuner.export_status.value)))
        assert not tuner.cancel_button.disabled and tuner.export_button.disabled  # while it runs
        tuner.cancel_button.click()  # the user cancels at the first progress step

    tuner.export_progress.observe(on_progress, names="value")
    tuner.export_button.click()
    assert seen and "bit for bit" in seen[0][1]
    assert f"export of {str(path)!r} cancelled during " in _shown(tuner) and "; nothing was written" in _shown(tuner)
    assert not path.exists() and _idle(tuner)


def test_number_boxes_read_text_the_way_a_person_does(tuner, sample_frame):
    s = tuner.session
    s.update(points=True, offset=25000, divisor=1000)
    version = s.version
    for box, typed, message in [
        (tuner.offset, "1.5", "`offset` should be a whole number such as 1000. Received '1.5'."),
        (tuner.divisor, "1,000", "`divisor` should be a whole number such as 1000. Received '1,000'."),
        (tuner.rank_inputs[1], "1,5", "box '2nd' should be a number such as 0.5, -3 or 1e-3 (a dot for "
         "decimals, no thousands separators). Received '1,5'."),
        (tuner.mean, "nan", "`mean` should be a number such as 0.5"),
        (tuner.std, "1e999", "`std` should be a finite number (it overflows float64). Received '1e999'."),
    ]:
        in_use = box.value
        box.value = typed
        assert message in html.unescape(tuner.error.value), typed
        assert box.value == in_use and s.version == version  # shown as rejected; the box shows the value in use
    tuner.divisor.value = "1e3"  # a whole number, as a person reads it
    tuner.offset.value = "30000"
    assert (s.offset, s.divisor) == (30000, 1000) and tuner.error.value == ""

    eps = EpsilonScheduleTuner()
    eps.controls["n_steps"].value = "2.5"
    assert "`n_steps` should be a whole number such as 1000. Received '2.5'." in html.unescape(eps.error.value)
    assert eps.controls["n_steps"].value == "1000000" and eps.session.n_steps == 1_000_000
    eps.controls["threshold"].value = "0.25"
    assert eps.session.threshold == 0.25
    eps.texts["epsilon_stable"].value = "1.5"  # a slider's readout would clamp it to 1 in the browser
    assert "`epsilon_stable` should be in [0, 1] (a probability). Received 1.5." in html.unescape(eps.error.value)
    assert eps.texts["epsilon_stable"].value == "0.05" and not eps.controls["epsilon_stable"].readout
    eps.texts["epsilon_stable"].value = "0.125"
    assert eps.session.epsilon_stable == 0.125 and eps.controls["epsilon_stable"].value == 0.125

    from rewardlab.domains.mahjong.families import Ranking

    frame = Ranking.from_preset("top").with_columns(sample_frame, "top")
    board = ComparisonBoard(Ranking.from_preset("top_two").with_columns(frame, "two"))
    board.k.value = "2.5"
    assert "`k` should be a whole number such as 1000. Received '2.5'." in html.unescape(board.error.value)
    assert board.k.value == "10"
    board.k.value = "3"
    assert board.session.k == 3


def test_export_is_disabled_while_results_are_not_finite(small_frame, tmp_path):
    import dataclasses
    import math

    tuner = RankingTuner(small_frame, preset="top_two", background=False, export_path=str(tmp_path / "r.py"))
    s = tuner.session
    s.results = dataclasses.replace(s.results, expected_reward=math.inf)  # however it might happen
    tuner.refresh()
    assert tuner.export_button.disabled and "the expected reward would be inf" in tuner.export_button.tooltip
    tuner.export_button.click()
    assert "not exported: the results are not finite" in html.unescape(tuner.export_result.value)
    with pytest.raises(Exception, match=r"^`results` should be finite to export"):
        s.export(tmp_path / "r.py")
    assert not (tmp_path / "r.py").exists()


def test_nonfinite_results_are_refused_at_input(small_frame):
    tuner = RankingTuner(small_frame, preset="top_two", constants="none", background=False)
    s = tuner.session
    before = (s.vector, s.version, tuner.stats.value)
    tuner.rank_inputs[0].value = "1e308"
    assert "box '1st' should keep the raw reward within ±1e+100" in html.unescape(tuner.error.value)
    assert (s.vector, s.version, tuner.stats.value) == before and tuner.rank_inputs[0].value == "1.0"
    tuner.std.value = "1e-320"
    assert "`std` should keep the normalized reward (raw - mean) / std within ±1e+100" in \
        html.unescape(tuner.error.value)
    assert s.std == 1.0 and tuner.std.value == "1.0"
    assert "–" not in tuner.stats.value  # every statistic shown is a number
    assert not tuner.export_button.disabled


def test_number_text_widget():
    box = NumberText(value=3)
    assert box.value == "3"
    box.value = 0.1
    assert box.value == "0.1"
    box.value = "typed text stays text"
    assert box.value == "typed text stays text"
    with pytest.raises(Exception):
        box.value = True


def test_comparison_board_stays_readable_at_ten_long_named_candidates(sample_frame):
    import warnings

    from rewardlab.domains.mahjong.families import Points

    names = [f"candidate_{i}_with_a_long_descriptive_name" for i in range(10)]
    frame = sample_frame
    for name in names:
        frame = Points.from_preset("thousands").with_columns(frame, name)
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # constrained layout finds room for every label
        board = ComparisonBoard(frame)
    assert board.session.chosen == tuple(names)
    from matplotlib.backends.backend_agg import FigureCanvasAgg

    renderers = {}
    for pane in (board.steps_plot, board.matrix_plot):
        canvas = FigureCanvasAgg(pane.figure)
        canvas.draw()
        renderers[pane] = canvas.get_renderer()
    heatmap, renderer = board.matrix_plot.axes[0], renderers[board.matrix_plot]
    for labels in (heatmap.get_xticklabels(), heatmap.get_yticklabels()):
        assert [t.get_text() for t in labels] == names
        boxes = [t.get_window_extent(renderer) for t in labels]
        assert not any(a.overlaps(b) for a, b in zip(boxes, boxes[1:]))
        assert all(renderer_box_inside(b, board.matrix_plot.figure) for b in boxes)  # none cut off
    steps, renderer = board.steps_plot.axes[0], renderers[board.steps_plot]
    legend = steps.get_legend().get_window_extent(renderer)
    assert legend.x0 >= steps.get_window_extent(renderer).x1  # beside the data, not over it
    assert renderer_box_inside(legend, board.steps_plot.figure)  # and whole, inside its figure


def renderer_box_inside(box, figure) -> bool:
    return box.x0 >= 0 and box.y0 >= 0 and box.x1 <= figure.bbox.width + 0.5 and box.y1 <= figure.bbox.height + 0.5


def _mouse(pane, kind: str, axes: int, x: float, y: float) -> None:
    """A browser's mouse event over Axes ``axes`` at data point ``(x, y)``, as ipympl hands it over."""
    pane.render()
    px, py = pane.axes[axes].transData.transform((x, y))
    pane.canvas.handle_event({"type": kind, "x": px, "y": pane.figure.bbox.height - py, "button": 0,
                              "buttons": 1 if kind == "button_press" else 0, "guiEvent": None, "modifiers": []})


def test_ranking_tuner_hover_reads_values_and_a_click_opens_a_game(sample_frame):
    tuner = RankingTuner(sample_frame, preset="tenhou_tokujo_6dan")
    s, view = tuner.session, tuner.episode
    r = s.results
    assert view.detail is None and view.layout.display == "none"
    _mouse(tuner.plot, "motion_notify", 1, 3.0, 0.0)  # over the 4th-place bar
    assert tuner.plot.canvas._message.startswith(f"4th place: mean reward {fmt(r.mean_by_rank[3])}, "
                                                 f"{r.rank_probabilities[3]:.1%} of games")
    _mouse(tuner.plot, "button_press", 1, 3.0, 0.0)
    assert view.detail.outcome["rank"] == 3 and view.layout.display is None and tuner.error.value == ""
    assert view.detail.returns["ranking"] == pytest.approx(r.mean_by_rank[3], abs=1e-6)  # 4th: one reward
    assert "4th" not in view.table.value or "rank" in view.table.value
    top = float(r.reward.max())
    tuner.plot.click(0, top + 0.01, 1.0)  # the histogram: the game whose reward is nearest
    assert view.detail.returns["ranking"] == pytest.approx(top) and view.detail.outcome["rank"] == 0


def test_ranking_session_click_targets_are_checked(small_frame):
    from rewardlab.core.errors import ParameterError
    from rewardlab.sessions import RankingTuningSession

    s = RankingTuningSession(small_frame, preset="top")
    for rank in (4, -1, True, 1.0):
        with pytest.raises(ParameterError, match=r"`rank` should be a final place 0 \.\.\. 3 \(0 is first\)"):
            s.episode_of_rank(rank)
    with pytest.raises(ParameterError, match="`reward` should be a finite number"):
        s.episode_near_reward(float("nan"))
    key = s.episode_of_rank(0)
    assert set(key) == {"game_id", "seat"} and s.episode(key).outcome["rank"] == 0


def test_comparison_board_clicks_pick_a_pair_and_open_an_episode(sample_frame):
    from rewardlab.domains.mahjong.families import Points, Ranking, RoundDelta

    frame = Ranking.from_preset("top").with_columns(sample_frame, "top")
    frame = Points.from_preset("thousands").with_columns(frame, "points")
    frame = RoundDelta.from_preset("thousands").with_columns(frame, "delta")
    board = ComparisonBoard(frame)
    s = board.session
    assert (s.a, s.b) == ("top", "points")
    _mouse(board.matrix_plot, "motion_notify", 0, 2.0, 0.0)  # the matrix cell (top, delta)
    assert board.matrix_plot.canvas._message.startswith("spearman(top, delta) = ")
    _mouse(board.matrix_plot, "button_press", 0, 2.0, 0.0)
    assert (s.a, s.b) == ("top", "delta") and board.a.value == "top" and board.b.value == "delta"
    returns = s.results.pair_returns
    far = returns.sort("delta").row(0, named=True)  # the lowest delta return
    _mouse(board.scatter_plot, "motion_notify", 0, far["top"], far["delta"])
    assert board.scatter_plot.canvas._message.startswith(f"top {fmt(far['top'])}, delta {fmt(far['delta'])}")
    _mouse(board.scatter_plot, "button_press", 0, far["top"], far["delta"])
    detail = board.episode_view.detail
    assert detail is not None and detail.returns["delta"] == pytest.approx(far["delta"])
    assert detail.returns["top"] == pytest.approx(far["top"]) and board.error.value == ""


def test_normalization_panel_overlays_pins_and_a_click_opens_an_episode(sample_frame):
    from rewardlab.domains.mahjong.families import Points

    frame = Points.from_preset("raw").with_columns(sample_frame, "score")
    panel = NormalizationPanel(frame, scope="end_of_game")
    s = panel.session
    s.pin("first")
    panel.clip_reward.value = "2.0"  # the live candidate changes; the pin stays drawn over it
    after = panel.plot.axes[1]
    assert any(p.get_label() == "pinned: first (constants)" for p in after.patches)
    assert s.pinned_results("first") is s.pinned_results("first")  # computed once, not on every redraw
    raw = s.results.replays["raw"].to_numpy()
    top = float(raw.max())
    _mouse(panel.plot, "motion_notify", 0, top, 1.0)
    assert panel.plot.canvas._message.startswith(f"raw reward {fmt(top)}")
    _mouse(panel.plot, "button_press", 0, top, 1.0)
    detail = panel.episode.detail
    assert detail is not None and panel.error.value == ""
    assert detail.steps["reward_score"].max() == pytest.approx(top)  # the episode holds the clicked step


def test_normalization_session_episode_near_checks_its_arguments(sample_frame):
    from rewardlab.core.errors import ParameterError
    from rewardlab.domains.mahjong.families import Points
    from rewardlab.sessions import NormalizationSession

    s = NormalizationSession(Points.from_preset("raw").with_columns(sample_frame, "score"))
    with pytest.raises(ParameterError, match="`value` should be a finite number"):
        s.episode_near(float("inf"))
    with pytest.raises(ParameterError, match="`column` should be one of"):
        s.episode_near(1.0, column="sb3_clipped")
    key = s.episode_near(1.0, column="constants")
    assert set(key) == {"game_id", "seat"}
