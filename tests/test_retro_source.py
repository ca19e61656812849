"""The retro source (format "retro") and the simulated Sonic sample.

References: the sample's rows read plainly (a loop per episode for final values and constants), the games'
own script.lua run by Lua 5.1 (lupa) step by step over the recorded variables, and the sample script run
again.
"""

from __future__ import annotations

import importlib.util
import warnings

import numpy as np
import polars as pl
import pytest

import rewardlab
from conftest import ROOT
from rewardlab.cli import main
from rewardlab.core.errors import SkippedLinesWarning, StepTableError
from rewardlab.core.spec import attached
from rewardlab.sources.registry import detect_source
from rewardlab.sources.retro import layout as L
from rewardlab.sources.retro.levels import game_folder, level_key
from rewardlab.sources.retro.outcomes import episode_outcomes, level_outcomes
from rewardlab.sources.retro.reader import read_retro

SAMPLE = ROOT / "data" / "retro" / "sonic_sample.parquet"
S1, S2, S3K = "SonicTheHedgehog-Genesis-v0", "SonicTheHedgehog2-Genesis-v0", "SonicAndKnuckles3-Genesis-v0"


@pytest.fixture(scope="module")
def raw():
    return pl.read_parquet(SAMPLE)


@pytest.fixture(scope="module")
def frame():
    return rewardlab.load(SAMPLE)


def sample_script():
    spec = importlib.util.spec_from_file_location("make_retro_sample", ROOT / "scripts" / "make_retro_sample.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


# ----------------------------------------------------------------------------
# The sample
# ----------------------------------------------------------------------------


def test_sample_regenerates_equal(raw, tmp_path):
    out = tmp_path / "sample.parquet"
    sample_script().main(["--out", str(out)])
    assert pl.read_parquet(out).equals(raw)
    assert SAMPLE.stat().st_size < 1_000_000


def test_sample_layout_and_endings(raw):
    assert raw.columns[:10] == list(L.LAYOUT_COLUMNS)
    assert set(raw["game"]) == {S1, S2, S3K}
    for (ep,), rows in raw.group_by("episode_id", maintain_order=True):
        t, frames, final = rows["t"].to_list(), rows["frame"].to_numpy(), rows["final"].to_list()
        assert t == list(range(len(t))) and final == [False] * (len(t) - 1) + [True]
        steps = np.diff(frames)
        assert frames[0] == 0 and (steps[:-1] == 4).all() and 1 <= steps[-1] <= 4  # done may cut the last step
        assert rows["action"][-1] is None and rows["reward"][-1] is None
        term, trunc = rows["terminated"].to_list()[:-1], rows["truncated"].to_list()[:-1]
        assert not any(term[:-1]) and not any(trunc[:-1]) and (term[-1] or trunc[-1])
        if trunc[-1]:
            assert len(t) - 1 == 4500 and frames[-1] == 18000
    game_mode_games = set(raw.filter(pl.col("game_mode").is_not_null())["game"])
    special_games = set(raw.filter(pl.col("special_stage").is_not_null())["game"])
    assert game_mode_games == {S2} and special_games == {S3K}


def test_sample_has_every_ending_in_every_game(frame):
    table = episode_outcomes(frame)
    for game in (S1, S2, S3K):
        outcomes = set(table.filter(pl.col("game") == game)["outcome"])
        assert {"finished", "timed_out"} <= outcomes
    assert {"finished", "lost_life", "timed_out"} == set(table["outcome"])
    # S3K: an act change mid-level in some episodes, with the screen_x jump
    s3k = frame.filter(pl.col("game") == S3K)
    changed = s3k.group_by("episode_id").agg((pl.col("act").n_unique() > 1).alias("c"))["c"].sum()
    assert changed >= 2


def lua_runtime(game):
    lupa = pytest.importorskip("lupa.lua51")
    runtime = lupa.LuaRuntime()
    runtime.execute("data = {}; scenario = {frame = 0}")
    runtime.execute((game_folder(game) / "script.lua").read_text())
    return runtime


def test_sample_ends_where_the_games_lua_says(raw):
    """contest_done of the real script.lua, run on each recorded row in retro's order (done, then reward; a
    fresh script per episode), is first true on the final row of each terminated episode.  S3K's act
    change is seen per step here (the script sees it per frame), so there the finish may come one step late."""
    for (ep,), rows in raw.group_by("episode_id", maintain_order=True):
        game = rows["game"][0]
        runtime = lua_runtime(game)
        data, scenario = runtime.globals().data, runtime.globals().scenario
        first = None
        for r, row in enumerate(rows.iter_rows(named=True)):
            for name in L.script_variables(game):
                data[name] = row[name]
            scenario.frame = row["frame"]  # (done does not read it)
            done = runtime.globals().contest_done()
            runtime.globals().contest_reward()
            if done and first is None:
                first = r
        last = rows.height - 1
        terminated = rows["terminated"][last - 1]
        act_change = rows["act"].n_unique() > 1
        if terminated and not act_change:
            assert first == last, ep
        elif terminated:
            assert first is None or first >= last, ep
        else:
            assert first is None, ep


# ----------------------------------------------------------------------------
# Loading
# ----------------------------------------------------------------------------


def test_detected_by_columns(tmp_path, raw):
    assert detect_source(SAMPLE).name == "retro"
    csv = tmp_path / "sample.csv"
    raw.head(2000).write_csv(csv)
    assert detect_source(csv).name == "retro"
    plain = tmp_path / "plain.parquet"
    raw.drop("frame").head(10).write_parquet(plain)
    assert detect_source(plain).name == "steps"


def test_frame_against_plain_loops(raw, frame):
    spec = attached(frame)
    spec.validate(frame)
    assert spec.contract == "steps" and spec.terminated == "terminated" and spec.truncated == "truncated"
    variables = [c for c in raw.columns if c not in L.LAYOUT_COLUMNS]
    assert [s.name for s in spec.states] == ["frame", *variables]
    assert all(s.final == "final_" + s.name for s in spec.states)
    assert frame.height == raw.height - raw["episode_id"].n_unique()
    k = 0
    for (ep,), rows in raw.group_by("episode_id", maintain_order=True):
        steps, final_row = rows[:-1], rows[-1]
        got = frame[k:k + steps.height]
        k += steps.height
        game = rows["game"][0]
        for name in ["frame", *variables]:
            expected = steps[name].fill_null(0).to_list()
            assert got[name].to_list() == expected, (ep, name)
            finals = got["final_" + name].to_list()
            assert finals[:-1] == [None] * (steps.height - 1)
            assert finals[-1] == (final_row[name][0] if final_row[name][0] is not None else 0)
        assert got["reward_recorded"].to_list() == steps["reward"].to_list()
        assert got["game_code"].to_list() == [(S1, S2, S3K).index(game)] * steps.height
        for name in ("x", "zone", "act"):
            assert set(got["start_" + name]) == {rows[name][0]}


def test_running_columns_against_the_scripts_walk(frame):
    """act_shift / reach_x against a plain walk of calc_progress's offset_x (prev_act, prev_screen_x)."""
    shift, reach = [], []
    for row in frame.iter_rows(named=True):
        if row["t"] == 0:
            acc, prev_act, prev_sx, best = 0, row["act"], row["screen_x"], None
        if row["game"] == S3K and row["act"] != prev_act:
            acc += row["screen_x"] - prev_sx
        prev_act, prev_sx = row["act"], row["screen_x"]
        best = row["x"] - acc if best is None else max(best, row["x"] - acc)
        shift.append(acc)
        reach.append(best)
    assert frame["act_shift"].to_list() == shift and frame["reach_x"].to_list() == reach
    assert min(shift) < 0  # the sample's S3K act changes shift
    contest = pytest.importorskip("rewardlab.domains.retro.contest")  # the contest family's own definition
    loop = contest.episode_columns_loop(frame["t"].to_numpy() == 0, frame["x"].to_numpy(), frame["act"].to_numpy(),
                                        frame["screen_x"].to_numpy(), frame["game_code"].to_numpy())
    assert loop[0].tolist() == frame["start_x"].to_list()
    assert loop[1].tolist() == shift and loop[2].tolist() == reach


def test_csv_loads_the_same(raw, frame, tmp_path):
    csv = tmp_path / "sample.csv"
    raw.write_csv(csv)
    assert rewardlab.load(csv).equals(frame)


TERM_X = """\
import torch


def get_reward(data, contiguous):
    # progress in pixels over the step: the next x (the final state's on a last step) minus this x
    data["next", "reward"] = (data["next", "x"] - data["x"]).to(torch.float64)
"""


def test_a_plugin_reads_next_states_and_constants(frame, tmp_path):
    plugin = tmp_path / "dx.py"
    plugin.write_text(TERM_X)
    applied = rewardlab.apply_plugins(frame, [plugin], isolate=False)
    nxt = pl.when(pl.col("episode_id") == pl.col("episode_id").shift(-1)).then(pl.col("x").shift(-1)) \
        .otherwise(pl.col("final_x"))
    expected = frame.select((nxt - pl.col("x")).cast(pl.Float64)).to_series()
    assert applied["reward_dx"].to_list() == expected.to_list()


def test_info_shows_outcomes_per_level(capsys):
    assert main(["info", str(SAMPLE)]) == 0
    out = capsys.readouterr().out
    table = level_outcomes(rewardlab.load(SAMPLE))
    for row in table.iter_rows(named=True):
        line = (f"level {row['game']} {row['state']} {row['episodes']} episodes: finished {row['finished']}, "
                f"lost a life {row['lost_life']}, timed out {row['timed_out']}")
        assert line in out
    assert int(table["episodes"].sum()) == 24


# ----------------------------------------------------------------------------
# Bad input: each names file, episode and step; skip mode drops whole episodes
# ----------------------------------------------------------------------------


@pytest.fixture(scope="module")
def small(raw):
    """Three episodes, one per game (S3K's changes act)."""
    eps = [0, 8, 16]
    return raw.filter(pl.col("episode_id").is_in(eps))


def row_of(table, ep, t):
    return table.with_row_index("_r").filter((pl.col("episode_id") == ep) & (pl.col("t") == t))["_r"][0]


def set_value(table, ep, t, column, value):
    r = row_of(table, ep, t)
    return table.with_columns(pl.when(pl.int_range(pl.len()) == r).then(pl.lit(value, table.schema[column]))
                              .otherwise(pl.col(column)).alias(column))


BROKEN = {
    "frame_order": lambda t: set_value(t, 8, 10, "frame", 20),
    "frame_start": lambda t: set_value(t, 8, 0, "frame", 3),
    "level_not_in_table": lambda t: set_value(set_value(t, 8, 0, "zone", 9), 8, 0, "act", 3),
    "not_a_level": lambda t: t.with_columns(pl.when(pl.col("episode_id") == 8).then(pl.lit("EmeraldHillZone.Act9"))
                                            .otherwise(pl.col("state")).alias("state")),
    "state_level_mismatch": lambda t: t.with_columns(
        pl.when(pl.col("episode_id") == 8).then(pl.lit("EmeraldHillZone.Act2")).otherwise(pl.col("state"))
        .alias("state")),
    "final_row_missing": lambda t: t.filter(~((pl.col("episode_id") == 8) & pl.col("final"))),
    "game_changes": lambda t: set_value(t, 8, 5, "game", S1),
    "unknown_game": lambda t: t.with_columns(pl.when(pl.col("episode_id") == 8).then(pl.lit("MyGame-Genesis-v0"))
                                             .otherwise(pl.col("game")).alias("game")),
    "missing_value": lambda t: set_value(t, 8, 7, "x", None),  # the steps reader's rule, at its line
}


@pytest.mark.parametrize("rule", sorted(BROKEN))
@pytest.mark.parametrize("kind", ["parquet", "csv"])
def test_bad_input_names_episode_step_and_line(small, tmp_path, rule, kind):
    broken = BROKEN[rule](small)
    path = tmp_path / f"bad.{kind}"
    broken.write_parquet(path) if kind == "parquet" else broken.write_csv(path)
    with pytest.raises(StepTableError) as info:
        rewardlab.load(path, format="retro")
    err = info.value
    assert err.rule == rule and err.path == str(path)
    if rule not in ("missing_value",):
        assert "episode 8" in err.message
    if kind == "csv":
        assert err.line is not None
    # skip mode: episode 8 goes whole, the others load as they would alone
    with pytest.warns(SkippedLinesWarning):
        result = read_retro(path, on_error="skip", skipped_path=tmp_path / f"skipped.{kind}")
    assert sorted(result.frame["episode_id"].unique()) == [0, 16]
    clean = tmp_path / f"clean.{kind}"
    rest = small.filter(pl.col("episode_id") != 8)
    rest.write_parquet(clean) if kind == "parquet" else rest.write_csv(clean)
    assert result.frame.equals(rewardlab.load(clean, format="retro"))
    assert rule in result.skip_counts or rule == "final_row_missing" and result.skip_counts
    kept = pl.read_parquet(result.skipped_path) if kind == "parquet" else pl.read_csv(result.skipped_path)
    assert set(kept["episode_id"]) == {8} and kept.height == broken.filter(pl.col("episode_id") == 8).height


def test_csv_side_file_keeps_the_lines(small, tmp_path):
    broken = BROKEN["frame_order"](small)
    path = tmp_path / "bad.csv"
    broken.write_csv(path)
    lines = path.read_bytes().splitlines()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", SkippedLinesWarning)
        result = read_retro(path, on_error="skip", skipped_path=tmp_path / "skipped.csv")
    episode = [i + 1 for i, ep in enumerate(broken["episode_id"].to_list()) if ep == 8]
    assert (tmp_path / "skipped.csv").read_bytes().splitlines() == [lines[0]] + [lines[i] for i in episode]
    assert result.skipped["line"].to_list() == [i + 1 for i in episode]


def test_missing_script_variable_names_the_file(small, tmp_path):
    path = tmp_path / "no_lives.parquet"
    small.drop("lives").write_parquet(path)
    with pytest.raises(StepTableError, match="lives") as info:
        rewardlab.load(path, format="retro")
    assert info.value.rule == "missing_column" and info.value.path == str(path)
    path = tmp_path / "no_special.parquet"
    small.drop("special_stage").write_parquet(path)
    with pytest.raises(StepTableError, match="special_stage.*SonicAndKnuckles3"):
        rewardlab.load(path, format="retro")


def test_null_where_the_game_has_the_variable(small, tmp_path):
    path = tmp_path / "null_mode.parquet"
    set_value(small, 8, 4, "game_mode", None).write_parquet(path)  # S2 has game_mode
    with pytest.raises(StepTableError) as info:
        rewardlab.load(path, format="retro")
    assert info.value.column == "game_mode" and info.value.path == str(path)
    assert info.value.row == row_of(small, 8, 4)


def test_user_levels_let_an_unknown_level_load(small, tmp_path):
    broken = BROKEN["level_not_in_table"](small)
    path = tmp_path / "own.parquet"
    broken.write_parquet(path)
    levels = tmp_path / "levels.json"
    levels.write_text('{"%s": {"extends_installed": true, "level_max_x": {"zone=9,act=3": 12000},'
                      ' "states": {"MyLevel": [9, 3]}}}' % S2)
    broken = broken.with_columns(pl.when(pl.col("episode_id") == 8).then(pl.lit("MyLevel"))
                                 .otherwise(pl.col("state")).alias("state"))
    broken.write_parquet(path)
    frame = rewardlab.load(path, format="retro", levels=str(levels))
    assert set(frame.filter(pl.col("episode_id") == 8)["start_zone"]) == {9}
    assert level_key(9, 3) == "zone=9,act=3"


def test_a_game_without_levels_loads(tmp_path):
    """Airstriker (the ROM stable-retro ships): its own variables, no level, no level rule."""
    rows = {"episode_id": [0, 0, 0], "t": [0, 1, 2], "final": [False, False, True],
            "game": ["Airstriker-Genesis-v0"] * 3, "state": ["Level1"] * 3, "frame": [0, 4, 8],
            "action": [1, 2, None], "reward": [0.0, 10.0, None], "terminated": [False, False, None],
            "truncated": [False, True, None], "gameover": [0, 0, 0], "lives": [3, 3, 3], "score": [0, 10, 10]}
    path = tmp_path / "air.parquet"
    pl.DataFrame(rows).write_parquet(path)
    frame = rewardlab.load(path)
    assert frame["final_score"].to_list() == [None, 10] and frame["game_code"].to_list() == [-1, -1]
    assert [s.name for s in attached(frame).states] == ["frame", "gameover", "lives", "score"]


def test_without_stable_retro_a_contest_game_says_which_extra_to_install(monkeypatch, raw, tmp_path):
    from rewardlab.core.errors import FileAccessError
    from rewardlab.sources.retro import reader

    def missing(game):
        raise FileAccessError("stable_retro", "stable-retro is not installed, so its level tables cannot be read")

    monkeypatch.setattr(reader, "game_levels", missing)
    path = tmp_path / "one.parquet"
    raw.filter(pl.col("episode_id") == raw["episode_id"][0]).write_parquet(path)
    with pytest.raises(StepTableError, match=r"stable-retro is not installed; install the retro extra \(.*\.\[retro\]"):
        read_retro(path)


def test_info_on_a_folder_kept_with_a_readme_and_a_summary_names_the_left_out_file_once(tmp_path, capsys):
    folder = tmp_path / "runs"
    folder.mkdir()
    (folder / "sonic.parquet").write_bytes(SAMPLE.read_bytes())
    (folder / "README.md").write_text("# my runs\n")
    (folder / "summary.csv").write_text("episode,return\n0,1.0\n")
    with warnings.catch_warnings(record=True) as caught:  # the command's own warning, as a user sees it
        warnings.simplefilter("always")
        assert main(["info", str(folder)]) == 0
    captured = capsys.readouterr()
    said = captured.err + "".join(str(w.message) for w in caught)
    assert "format       retro (spec retro)" in captured.out
    assert said.count("summary.csv") == 1, said


def test_info_reads_a_recording_once_and_lists_its_levels(tmp_path, capsys, monkeypatch):
    # the roles hook is given the frame info has loaded, rather than reading the recording again
    import rewardlab.sources.retro.source as source_module

    calls = []
    real = source_module.read_retro

    def counted(*args, **kwargs):
        calls.append(args)
        return real(*args, **kwargs)

    monkeypatch.setattr(source_module, "read_retro", counted)
    assert main(["info", str(SAMPLE)]) == 0
    out = capsys.readouterr().out
    assert len(calls) == 1
    assert "level " in out and "finished" in out
    assert source_module.retro_roles(SAMPLE) == source_module.retro_roles(SAMPLE, frame=rewardlab.load(SAMPLE))
