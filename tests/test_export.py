"""The exported plug-in file: round trip through the plug-in runner, safety, atomic writes, CLI."""

from __future__ import annotations

import ast
import datetime as dt
import math
import re
import warnings

import numpy as np
import polars as pl
import pytest
import torch

import rewardlab
from rewardlab.cli import main
from rewardlab.core.errors import OutputExistsError, ParameterError, RewardScaleWarning
from rewardlab.export import export_plugin, render_plugin, sanitize_comment
from rewardlab.domains.mahjong.families import (
    Points,
    PointsParams,
    Provenance,
    Ranking,
    RankingParams,
    RankingPoints,
    RoundDelta,
    all_presets,
    prepare_frame,
)
from rewardlab.plugins import apply_plugins, check_plugin, load_plugin

BATCH_MODES = ("episodes", "sequential", "fragments", "shuffled")


def bits(x) -> np.ndarray:
    return np.ascontiguousarray(np.asarray(x, dtype=np.float64)).view(np.int64)


@pytest.fixture(scope="module")
def subset(sample_frame) -> pl.DataFrame:
    """The first 20 games of the sample (whole episodes, in order): every preset runs on it."""
    return sample_frame.filter(pl.col("game") < 20)


@pytest.fixture(scope="module")
def sample_prepared(sample_frame):
    return prepare_frame(sample_frame)


def _preset_id(family) -> str:
    for name in family.presets:
        if family == type(family).from_preset(name):
            return f"{family.name}-{name}"
    return family.name


def _round_trip(family, frame, path, *, modes=BATCH_MODES):
    export_plugin(family, path)
    plugin = load_plugin(path)
    assert not plugin.reads_contiguous
    reward, done = family.evaluate(frame)
    normalized = family.params.provenance.kind == "dataset"
    for mode in modes:
        with warnings.catch_warnings():
            if not normalized:  # unnormalized rewards are far from mean 0 / std 1, and that is the point
                warnings.simplefilter("ignore", RewardScaleWarning)
            out = apply_plugins(frame, plugin, batch_mode=mode, batch_size=333, seed=7, progress=False)
        got_r = out[f"reward_{plugin.name}"].to_numpy()
        got_d = out[f"done_{plugin.name}"].to_numpy()
        assert np.array_equal(bits(got_r), bits(reward)), mode
        assert np.array_equal(got_d, done), mode
    return plugin


# ---------------------------------------------------------------------------
# Round trip: every family and preset, every batch mode, bit for bit
# ---------------------------------------------------------------------------


@pytest.mark.parametrize("preset", all_presets(), ids=_preset_id)
def test_round_trip_every_preset(preset, subset, sample_prepared, tmp_path):
    family = preset.with_constants_from(sample_prepared)
    plugin = _round_trip(family, subset, tmp_path / f"{family.name}.py")
    report = check_plugin(subset, plugin, progress=False)
    assert report.ok, str(report)
    # default constants (no normalization) too: the literals are different numbers
    _round_trip(preset, subset, tmp_path / f"{family.name}_raw.py", modes=("shuffled",))


@pytest.mark.parametrize("family", [
    Ranking.from_preset("tenhou_houou_7dan").with_seed_constants(),
    RankingPoints.from_preset("mleague").with_constants(0.1, 412.3),
    Points(PointsParams(offset=25000.5, divisor=-333.3, mean=0.2, std=3.7)),
    RoundDelta.from_preset("thousands").with_constants(1 / 3, math.pi),
], ids=lambda f: f.name)
def test_round_trip_on_the_whole_sample(family, sample_frame, tmp_path):
    _round_trip(family, sample_frame, tmp_path / "whole.py")


def test_exported_ranking_passes_check_plugin_on_the_whole_sample(sample_frame, sample_prepared, tmp_path):
    family = Ranking.from_preset("mahjongsoul_throne_celestial").with_constants_from(sample_prepared)
    path = export_plugin(family, tmp_path / "celestial.py")
    report = check_plugin(sample_frame, path, progress=False)
    assert report.ok, str(report)
    assert report.scale is not None and not report.scale.far


def test_plugin_matches_the_library_on_a_tensordict(sample_frame, tmp_path):
    family = RoundDelta.from_preset("thousands").with_constants(0.5, 2.5)
    ns: dict = {}
    exec(render_plugin(family), ns)
    rows = np.random.default_rng(0).permutation(sample_frame.height)[:4096]
    a = rewardlab.to_tensordict(sample_frame, rows=rows)
    b = a.clone()
    ns["get_reward"](a, False)
    family.get_reward(b, False)
    assert a["next", "reward"].dtype == torch.float64 and a["next", "reward"].shape == (4096,)
    assert torch.equal(a["next", "reward"].view(torch.int64), b["next", "reward"].view(torch.int64))
    assert torch.equal(a["next", "done"], b["next", "done"])


# ---------------------------------------------------------------------------
# The file's text and how kanachan runs it
# ---------------------------------------------------------------------------


def _top_level(text: str) -> list[str]:
    kinds = []
    for node in ast.parse(text).body:
        if isinstance(node, ast.Import):
            kinds.append("import " + ",".join(f"{a.name} as {a.asname}" for a in node.names))
        elif isinstance(node, ast.Assign):
            assert all(isinstance(n, (ast.Constant, ast.Tuple, ast.UnaryOp)) for n in ast.walk(node.value)
                       if not isinstance(n, (ast.USub, ast.Load)))
            kinds.append("assign " + node.targets[0].id)
        elif isinstance(node, ast.FunctionDef):
            kinds.append("def " + node.name)
        else:
            kinds.append(type(node).__name__)
    return kinds


def test_file_layout_and_header(sample_prepared):
    family = RankingPoints.from_preset("mahjongsoul_jade_saint3").with_constants_from(sample_prepared)
    when = dt.datetime(2024, 5, 6, 7, 8, 9, tzinfo=dt.timezone.utc)
    text = render_plugin(family, source="notebook tour", created=when)
    assert _top_level(text) == [
        "import torch as _RL_torch", "assign _RL_VECTOR", "assign _RL_OFFSET", "assign _RL_DIVISOR",
        "assign _RL_MEAN", "assign _RL_STD", "def _RL_seat", "def _RL_ranks", "def get_reward"]
    header = text.split("\n\nimport")[0]
    assert all(line.startswith("#") for line in header.splitlines())
    assert "rewardlab" not in text.split("\n\nimport", 1)[1]  # never imported, never named in code
    assert f"rewardlab {rewardlab.__version__} on 2024-05-06 07:08:09 UTC" in header
    assert "family:      ranking_points" in header
    assert "parameter:   vector = [135.0, 65.0, -5.0, -255.0]" in header
    assert f"constants:   mean = {family.params.mean!r}, std = {family.params.std!r}" in header
    assert f"rows:        {sample_prepared.n_rows}" in header
    assert f"fingerprint: {sample_prepared.fingerprint}" in header
    assert "source:      notebook tour" in header
    assert text.isascii()


def test_literals_read_back_as_the_same_floats():
    awkward = (0.1 + 0.2, 1e-300, -5e-324, 123456789.123456789)
    family = Ranking(RankingParams(vector=awkward, mean=1 / 3, std=2 ** -30))
    ns: dict = {}
    exec(render_plugin(family), ns)
    assert ns["_RL_VECTOR"] == awkward
    assert ns["_RL_MEAN"] == 1 / 3 and ns["_RL_STD"] == 2 ** -30


def test_runs_in_a_fresh_namespace_and_in_a_module_with_other_names(small_frame):
    family = Ranking.from_preset("top").with_constants(-0.5, 0.75)
    text = render_plugin(family)
    td = rewardlab.to_tensordict(small_frame)
    expected = td.clone()
    family.get_reward(expected, True)

    fresh: dict = {}
    exec(text, fresh)
    a = td.clone()
    fresh["get_reward"](a, True)
    assert torch.equal(a["next", "reward"], expected["next", "reward"])

    # kanachan: exec(text, globals()) inside a module that already has names of its own
    sentinel = object()
    module_globals = {"__name__": "kanachan_training", "__doc__": "the trainer", "torch": sentinel,
                      "np": sentinel, "data": sentinel, "rows": sentinel, "seat": sentinel,
                      "reward": sentinel, "_REWARD_MEAN": sentinel, "__builtins__": __builtins__}
    before = dict(module_globals)
    exec(text, module_globals)
    added = set(module_globals) - set(before)
    assert all(name == "get_reward" or name.startswith("_RL_") for name in added), added
    assert all(module_globals[k] is v for k, v in before.items() if k != "__builtins__")
    b = td.clone()
    module_globals["get_reward"](b, True)
    assert torch.equal(b["next", "reward"], expected["next", "reward"])
    assert torch.equal(b["next", "done"], expected["next", "done"])


def test_empty_batch(small_frame):
    ns: dict = {}
    exec(render_plugin(RoundDelta()), ns)
    td = rewardlab.to_tensordict(small_frame, rows=np.zeros(0, dtype=np.int64))
    ns["get_reward"](td, False)
    assert td["next", "reward"].shape == (0,) and td["next", "reward"].dtype == torch.float64


# ---------------------------------------------------------------------------
# Safety: user text cannot become code; only finite numbers are written
# ---------------------------------------------------------------------------

NASTY = [
    'x\nimport os; os.system("echo pwned")',
    'a"""\nraise SystemExit(3)\n"""',
    "line\rraise SystemExit(4)",
    "sep\u2028raise SystemExit(5)",
    "nul\x00 and \x1b[31m escape \\n",
    "'''; raise SystemExit(6); '''",
    "é" * 1000,
]


@pytest.mark.parametrize("nasty", NASTY)
def test_user_text_stays_in_one_comment_line(nasty, tmp_path):
    prov = Provenance("dataset", detail=nasty, dataset=nasty, rows=10, steps=4, scope="end_of_game",
                      fingerprint=nasty)
    family = Ranking(RankingParams(vector=(1, 0, 0, -1), mean=0.0, std=2.0, provenance=prov))
    path = export_plugin(family, tmp_path / "nasty.py", source=nasty)
    text = path.read_text()
    assert text.isascii()
    header, _, code = text.partition("\n\nimport torch as _RL_torch\n")
    assert all(line.startswith("# ") or line == "#" for line in header.splitlines())
    assert _top_level(text)[-1] == "def get_reward" and len(_top_level(text)) == 7
    ns: dict = {}
    exec(text, ns)  # nothing injected runs (SystemExit would fail the test)
    assert set(ns) - {"__builtins__"} == {"_RL_torch", "_RL_VECTOR", "_RL_MEAN", "_RL_STD", "_RL_seat",
                                          "_RL_ranks", "get_reward"}


def test_sanitize_comment():
    assert sanitize_comment("a\nb\tc\u2028") == "a\\nb\\tc\\u2028"
    assert sanitize_comment("x" * 500).endswith("...") and len(sanitize_comment("x" * 500)) == 300


@pytest.mark.parametrize("field, value, message", [
    ("std", math.nan, "`_RL_STD` should be a finite number to be written into a plug-in. Received nan."),
    ("mean", math.inf, "`_RL_MEAN` should be a finite number"),
    ("mean", "0); import os; (", "`_RL_MEAN` should be an int or float"),
    ("vector", (1.0, 0.0, 0.0, float("nan")), "`_RL_VECTOR[3]` should be a finite number"),
    ("vector", (1.0, 0.0, 0.0, "__import__('os')"), "`_RL_VECTOR[3]` should be an int or float"),
    ("vector", (1.0, 0.0, 0.0, True), "`_RL_VECTOR[3]` should be an int or float"),
    ("vector", (1.0, 0.0, 0.0, np.float64(2.0)), "`_RL_VECTOR[3]` should be an int or float"),
])
def test_non_finite_or_non_numeric_parameters_are_refused(field, value, message, tmp_path):
    params = RankingParams(vector=(1, 0, 0, -1))
    object.__setattr__(params, field, value)  # bypass validation, as a buggy caller might
    with pytest.raises(ParameterError) as info:
        export_plugin(_unchecked(params), tmp_path / "bad.py")
    assert message in str(info.value)
    assert not (tmp_path / "bad.py").exists()


def _unchecked(params):
    family = object.__new__(Ranking)
    object.__setattr__(family, "params", params)
    return family


def test_export_accepts_params_and_refuses_other_objects(tmp_path):
    path = export_plugin(PointsParams(offset=25000, divisor=1000), tmp_path / "p.py")
    assert "family:      points" in path.read_text()
    with pytest.raises(ParameterError, match="`family_or_params` should be a reward family"):
        export_plugin({"vector": [1, 0, 0, -1]}, tmp_path / "q.py")
    with pytest.raises(ParameterError, match="`source` should be a string or None"):
        export_plugin(Ranking(), tmp_path / "r.py", source=3)


# ---------------------------------------------------------------------------
# Writing
# ---------------------------------------------------------------------------


def test_never_replaces_a_file_unless_asked(tmp_path):
    path = tmp_path / "plugin.py"
    path.write_text("keep me\n")
    with pytest.raises(OutputExistsError, match="already exists"):
        export_plugin(Ranking(), path)
    assert path.read_text() == "keep me\n"
    export_plugin(Ranking.from_preset("top_two"), path, overwrite=True)
    assert "vector = [1.0, 1.0, -1.0, -1.0]" in path.read_text()
    assert [p.name for p in tmp_path.iterdir()] == ["plugin.py"]  # no temporary files left


# ---------------------------------------------------------------------------
# CLI
# ---------------------------------------------------------------------------


def test_cli_ranking_normalize_from_shows_the_seed_pitfall(sample_path, tmp_path, capsys):
    out = tmp_path / "houou.py"
    assert main(["export", "ranking", "--preset", "tenhou_houou_7dan", "--normalize-from", str(sample_path),
                 "--out", str(out)]) == 0
    text = capsys.readouterr().out
    assert f"wrote {out}" in text
    assert "population std 1.0000" in text
    assert "std 0.866 over" in text  # the wiki's normalization, measured on the data
    assert "The wiki's normalization (the ranking example of kanachan's wiki" in text and "seed" not in text
    plugin_text = out.read_text()
    assert f"dataset:     {sample_path}" in plugin_text
    assert main(["export", "ranking", "--preset", "top", "--out", str(out)]) == 2
    assert "already exists" in capsys.readouterr().err


def test_cli_ranking_with_points_and_typed_constants(tmp_path, capsys):
    out = tmp_path / "rp.py"
    assert main(["export", "ranking", "--vector=-1,0,0.5,1.5", "--points-offset", "25000",
                 "--points-divisor", "1000", "--mean", "0.5", "--std", "2", "--out", str(out)]) == 0
    text = out.read_text()
    assert "family:      ranking_points" in text and "vector = [-1.0, 0.0, 0.5, 1.5]" in text
    assert "constants:   mean = 0.5, std = 2.0" in text and "typed by the user" in text
    assert "wiki normalization" not in capsys.readouterr().out  # only for a rank vector alone
    for argv, message in [
        (["--vector", "1,2,3"], "`--vector` should have 4 entries"),  # the CLI names its flags
        (["--vector", "1,2,x,4"], "`--vector` should be four numbers separated by commas"),
        (["--preset", "top", "--points-offset", "25000"], "`--points-divisor` is required"),
        (["--preset", "top", "--mean", "1"], "`--std` is required with --mean"),
        (["--preset", "top", "--mean", "1", "--std", "0"], "`--std` should be > 0"),
        (["--preset", "mleague", "--seed-normalization"], "`--seed-normalization` applies to a rank vector"),
        (["--preset", "mleague", "--wiki-normalization"], "`--wiki-normalization` applies to a rank vector"),
        (["--preset", "top", "--wiki-normalization", "--std", "1"], "`--std` cannot be combined with "
                                                                     "--wiki-normalization"),
    ]:
        assert main(["export", "ranking", *argv, "--out", str(tmp_path / "x.py")]) == 2
        assert message in capsys.readouterr().err


def test_cli_seed_normalization_and_measure_on(sample_path, tmp_path, capsys):
    out = tmp_path / "seed.py"
    assert main(["export", "ranking", "--preset", "top", "--seed-normalization", "--measure-on",
                 str(sample_path), "--out", str(out)]) == 0
    text = capsys.readouterr().out
    assert "population std 0.8660" in text  # what the written file gives on the data
    assert "the wiki's recipe: mean and sample std" in out.read_text()


def test_cli_wiki_normalization_is_the_name_and_seed_normalization_a_hidden_alias(sample_path, tmp_path, capsys):
    with pytest.raises(SystemExit):
        main(["export", "ranking", "--help"])
    help_text = capsys.readouterr().out
    assert "--wiki-normalization" in help_text and "kanachan's wiki" in help_text
    assert "seed" not in help_text  # the old name still works, unlisted
    new, old = tmp_path / "wiki.py", tmp_path / "old.py"
    assert main(["export", "ranking", "--preset", "top", "--wiki-normalization", "--out", str(new)]) == 0
    out = capsys.readouterr()
    assert "ranking example of kanachan's wiki" in out.out and "deprecated" not in out.err
    assert main(["export", "ranking", "--preset", "top", "--seed-normalization", "--out", str(old)]) == 0
    assert "--seed-normalization is deprecated; use --wiki-normalization" in capsys.readouterr().err
    stamp = re.compile(r"\d{4}-\d\d-\d\d \d\d:\d\d:\d\d UTC")  # the two exports may straddle a second
    assert (stamp.sub("", new.read_text().replace(str(new), ""))
            == stamp.sub("", old.read_text().replace(str(old), "")))


def test_cli_other_families(small_frame, tmp_path, capsys):
    data = tmp_path / "small.parquet"
    small_frame.write_parquet(data)
    out = tmp_path / "rd.py"
    assert main(["export", "round-delta", "--preset", "thousands", "--normalize-from", str(data),
                 "--out", str(out)]) == 0
    assert "end-of-round and end-of-game steps" in capsys.readouterr().out
    family = RoundDelta.from_preset("thousands").with_constants_from(small_frame)
    ns: dict = {}
    exec(out.read_text(), ns)
    assert ns["_RL_STD"] == family.params.std
    assert main(["export", "points", "--offset", "25000", "--divisor", "0", "--out",
                 str(tmp_path / "p.py")]) == 2
    assert "`--divisor` should be a nonzero number. Received 0.0." in capsys.readouterr().err


def test_cli_schedule(capsys):
    assert main(["schedule", "kanachan", "--first", "1", "--last", "0.05", "--annealing-steps", "1000",
                 "--increment", "32", "--steps", "5000", "--format", "yaml"]) == 0
    text = capsys.readouterr().out
    assert "never leaves epsilon_first" in text and "annealing_steps: 1000" in text
    assert main(["schedule", "rljl", "--stable", "0.1", "--decay", "100", "--steps", "1000",
                 "--format", "julia"]) == 0
    assert "EpsilonGreedyExplorer(kind=:linear" in capsys.readouterr().out
    assert main(["schedule", "kanachan", "--first", "0.1", "--last", "0.2", "--annealing-steps", "5"]) == 2
    assert "`epsilon_last` should be <= epsilon_first" in capsys.readouterr().err


# ---------------------------------------------------------------------------
# Issue 10: constants that would make the file fail check-plugin are refused before writing
# ---------------------------------------------------------------------------


@pytest.mark.parametrize("make, message", [
    (lambda: Ranking.from_preset("top").with_constants(0.0, 1e-320),
     "`std` should keep the normalized reward (raw - mean) / std within ±1e+100 (beyond, rewards or their means "
     "and variances overflow); it gives inf for the raw reward 1.0 (final rank 1). Received 1e-320. Fit the "
     "constants from data, or use a std close to the spread of the raw reward."),
    (lambda: Ranking(RankingParams(vector=(1e308, 0, 0, -1e308))),
     "`vector[0]` should keep the raw reward within ±1e+100"),
    (lambda: Points(PointsParams(offset=0.0, divisor=1e-300)),
     "`divisor` should keep the raw reward within ±1e+100 (beyond, rewards or their means and variances overflow); "
     "it gives -inf at a final score of -2147483648. Received 1e-300."),
    (lambda: Points(PointsParams(offset=1e308, divisor=1.0)), "`offset` should keep the raw reward within ±1e+100"),
    (lambda: RoundDelta.from_preset("raw").with_constants(-1e250, 1.0), "`mean` should be within ±1e+100"),
    (lambda: RoundDelta.from_preset("raw").with_params(divisor=1e-95),
     "`divisor` should keep the raw reward within ±1e+100 (beyond, rewards or their means and variances overflow); "
     "it gives -2.147483648e+104 at a round delta of -2147483648."),
    (lambda: RankingPoints.from_preset("mleague").with_constants(0.0, 1e-95),
     "it gives -2.1474637e+102 for the raw reward -21474637.0 (final rank 1 with a final score of -2147483648)"),
    (lambda: Ranking.from_preset("top").with_constants(math.nan, 1.0),
     "`mean` should be a finite number (not NaN or infinite). Received nan. Type a finite number, or fit the "
     "constants from data."),
], ids=["tiny-std", "huge-vector", "tiny-divisor", "huge-offset", "huge-mean", "round-delta", "ranking-points",
        "nan-mean"])
def test_constants_that_break_the_file_are_refused(make, message):
    with pytest.raises(ParameterError) as err:
        make()
    assert message in str(err.value)


def test_render_refuses_out_of_range_parameters_built_around_validation(tmp_path):
    params = RankingParams(vector=(1, 0, 0, -1))
    object.__setattr__(params, "std", 1e-320)  # bypass validation, as a buggy caller might
    with pytest.raises(ParameterError, match=r"^`std` should keep the normalized reward"):
        export_plugin(_unchecked(params), tmp_path / "bad.py")
    assert list(tmp_path.iterdir()) == []


def test_every_preset_with_data_constants_is_in_range(sample_prepared):
    for preset in all_presets():  # the rule refuses nothing sensible
        render_plugin(preset.with_constants_from(sample_prepared))


def test_stale_constants_are_refused_unless_kept(sample_prepared, tmp_path):
    fitted = Ranking.from_preset("top").with_constants_from(sample_prepared)
    header = render_plugin(fitted).split("\n\nimport")[0]
    assert f"# constants fit: fitted for exactly these parameters (data fingerprint {sample_prepared.fingerprint})" \
        in header
    moved = fitted.with_params(vector=(1.0, 0.0, 0.0, -1.0))
    with pytest.raises(ParameterError) as err:
        export_plugin(moved, tmp_path / "moved.py")
    assert str(err.value) == (
        "`constants` should be fitted for the exported parameters (ranking: vector=[1.0, 0.0, 0.0, -1.0]), not for "
        f"ranking: vector=[1.0, -1.0, -1.0, -1.0]. Received {{'mean': {fitted.params.mean!r}, 'std': "
        f"{fitted.params.std!r}}}. Refit them for these parameters (with_constants_from(data)), or pass "
        "keep_constants=True to export them as they are.")  # Python's words only (rewardlab.core.fronts)
    assert not (tmp_path / "moved.py").exists()
    text = export_plugin(moved, tmp_path / "moved.py", keep_constants=True).read_text()
    assert ("# constants fit: NOT fitted for these parameters: fitted for ranking: vector=[1.0, -1.0, -1.0, -1.0] "
            f"(data fingerprint {sample_prepared.fingerprint}); exported as they are on request") in text
    typed = render_plugin(moved.with_constants(0.5, 2.0))
    assert "# constants fit: not fitted (typed by the user)" in typed


@pytest.mark.parametrize("argv, message", [
    (["ranking", "--preset", "top", "--mean", "0", "--std", "1e-320"], "`--std` should keep the normalized reward"),
    (["ranking", "--vector", "1e308,0,0,-1e308"], "the 1st value of `--vector` should keep the raw reward within "
     "±1e+100"),
    (["ranking", "--vector=1e308,0,0,-1e308", "--normalize-from", "SAMPLE"],
     "the 1st value of `--vector` should keep the raw reward within ±1e+100"),
    (["ranking", "--vector=1e308,0,0,-1e308", "--seed-normalization"],
     "the 1st value of `--vector` should keep the raw reward"),
    (["ranking", "--preset", "top", "--mean", "nan", "--std", "1"], "`--mean` should be a finite number (not NaN"),
    (["points", "--offset", "0", "--divisor", "1e-300"], "`--divisor` should keep the raw reward within ±1e+100"),
    (["round-delta", "--offset", "1e308", "--divisor", "1e-10"], "`--offset` should keep the raw reward"),
], ids=["tiny-std", "huge-vector", "huge-vector-from-data", "huge-vector-seed", "nan-mean", "points", "round-delta"])
def test_cli_refuses_constants_that_break_the_file(argv, message, sample_path, tmp_path, capsys):
    out = tmp_path / "x.py"
    argv = [str(sample_path) if a == "SAMPLE" else a for a in argv]
    assert main(["export", *argv, "--out", str(out)]) == 2
    err = capsys.readouterr().err
    assert message in err and "Received" in err
    assert list(tmp_path.iterdir()) == []  # checked before writing anything


def test_cli_and_library_refuse_bad_output_paths(tmp_path, capsys, monkeypatch):
    assert main(["export", "ranking", "--preset", "top", "--out", str(tmp_path)]) == 2
    assert f"`--out` should name a file, not a folder. Received {str(tmp_path)!r}." in capsys.readouterr().err
    with pytest.raises(ParameterError, match=r"^`path` should name the file to write; it is empty"):
        export_plugin(Ranking(), "")
    from rewardlab.core.errors import ExportWriteError

    def full(*args, **kwargs):
        raise OSError(28, "No space left on device")

    monkeypatch.setattr("rewardlab.export.atomic_open", full)
    out = tmp_path / "r.py"
    with pytest.raises(ExportWriteError, match=r"No space left on device\. Nothing was written"):
        export_plugin(Ranking(), out)
    assert main(["export", "ranking", "--preset", "top", "--out", str(out)]) == 2
    assert f"cannot write {str(out)!r}: No space left on device" in capsys.readouterr().err
