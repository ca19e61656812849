"""The retro contest tuner: its session against from-scratch references, its state, its export, its widget.

References: the session reads ``rewardlab.load(SAMPLE)`` (the retro source's frame) once and recomputes with
precomputed arrays; the tests recompute from the raw recording (``steps_frame`` of the Parquet rows, then
``contest_steps`` and ``contest_rewards``) and walk each episode's states in a plain loop (the script's
progress, offset and S3K correction, as ``contest_rewards_loop`` keeps them) for where it reaches the level's end.
"""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import polars as pl
import pytest

import rewardlab
from rewardlab.core import columns
from rewardlab.core.errors import FrameError, OutputExistsError, ParameterError
from rewardlab.domains.retro import contest as C
from rewardlab.domains.retro.frames import contest_steps, steps_frame
from rewardlab.plugins import apply_plugins
from rewardlab.plugins.loading import plugin_name
from rewardlab.sessions import ContestSession
from rewardlab.sources.retro import level_table
from rewardlab.sources.retro.outcomes import episode_outcomes

SAMPLE = Path(__file__).resolve().parents[1] / "data" / "retro" / "sonic_sample.parquet"
S1 = "SonicTheHedgehog-Genesis-v0"
GHZ = "GreenHillZone.Act1"

pytestmark = pytest.mark.skipif(not SAMPLE.is_file(), reason="no retro sample")


@pytest.fixture(scope="module")
def loaded():
    return rewardlab.load(SAMPLE, format="retro")


@pytest.fixture(scope="module")
def raw():
    """The recording's rows as written (N+1 per episode) and its step frame, made independently of the source."""
    recording = pl.read_parquet(SAMPLE)
    return recording, steps_frame(recording)


def _table(edits=()) -> dict:
    table = {g: dict(level_table(g)) for g in C.SONIC_GAMES}
    for game, key, end in edits:
        table[game][key] = end
    return table


def _scratch(frame, *, edits=(), **options):
    steps, first = contest_steps(frame, C.level_codes(_table(edits)))
    reward, done = C.contest_rewards(steps, **options)
    return reward, done, first


def _plain_finish(recording: pl.DataFrame, edits=()) -> dict:
    """Per episode id: the first step whose next state reaches the level's end (None: never), by a plain walk."""
    table = _table(edits)
    out = {}
    for (episode,), rows in recording.group_by("episode_id", maintain_order=True):
        rows = rows.sort("t")
        game = rows["game"][0]
        x, act, sx = rows["x"].to_list(), rows["act"].to_list(), rows["screen_x"].to_list()
        end = table[game][f"zone={rows['zone'][0]},act={rows['act'][0]}"] - x[0]
        offset, prev_act, prev_sx, found = -x[0], act[0], sx[0], None
        for t in range(1, len(x)):
            if game == "SonicAndKnuckles3-Genesis-v0" and act[t] != prev_act:
                offset -= sx[t] - prev_sx
            prev_act, prev_sx = act[t], sx[t]
            if min(max(float(x[t] + offset), 0.0), end) / end >= 1.0:
                found = t - 1
                break
        out[episode] = found
    return out


# --------------------------------------------------------------------------
# the recompute against from-scratch references
# --------------------------------------------------------------------------


@pytest.mark.parametrize("scaler", [False, True])
@pytest.mark.parametrize("backtracking", [False, True])
def test_recompute_equals_contest_rewards_from_scratch(loaded, raw, scaler, backtracking):
    s = ContestSession(loaded)
    edits = ((S1, "zone=0,act=0", 6000),)
    for values, table in (({"scale": 250.5, "bonus": 77.0, "frame_limit": 9000}, ()), ({"scale": 9000.0}, edits)):
        s.update(scaler=scaler, backtracking=backtracking, levels=table, **values)
        reward, done, _ = _scratch(raw[1], edits=table, scaler=scaler, backtracking=backtracking,
                                   **{"bonus": s.bonus, "frame_limit": s.frame_limit, **values})
        assert s.results.reward.view(np.uint64).tolist() == reward.view(np.uint64).tolist()
        assert s.results.done.tolist() == done.tolist()
        assert s.results.family.params.scaler is scaler and s.results.family.params.backtracking is backtracking


def test_returns_and_options_against_plain_sums(loaded, raw):
    s = ContestSession(loaded, scale=500.0)
    edits = ((S1, "zone=0,act=0", 5000),)  # ends some Green Hill episodes early
    s.update(levels=edits)
    r = s.results
    assert r.episodes["ends_early"].any()
    outcome = episode_outcomes(loaded)["outcome"].to_list()
    finished = r.episodes["finished"].to_list()
    for name, (scaler, backtracking) in {"no options": (False, False), "scaler": (True, False),
                                         "backtracking": (False, True), "scaler + backtracking": (True, True)}.items():
        reward, done, first = _scratch(raw[1], edits=edits, scale=500.0, scaler=scaler, backtracking=backtracking)
        starts = list(np.flatnonzero(first)) + [len(reward)]
        expected = []
        for a, b in zip(starts[:-1], starts[1:]):
            ends = np.flatnonzero(done[a:b])
            stop = a + int(ends[0]) + 1 if ends.size else b  # the contest ends the episode at its first done
            expected.append(math.fsum(reward[a:stop]))
        assert r.variants[name] == pytest.approx(expected, rel=1e-12, abs=1e-9)
        table = {row["group"]: row for row in r.options.iter_rows(named=True)}
        groups = {"finished": [f for f in finished],
                  "lost a life": [not f and o == "lost_life" for f, o in zip(finished, outcome)],
                  "timed out": [not f and o == "timed_out" for f, o in zip(finished, outcome)]}
        for group, mask in groups.items():
            chosen = [v for v, m in zip(expected, mask) if m]
            assert table[group]["episodes"] == len(chosen)
            assert table[group][name] == pytest.approx(sum(chosen) / len(chosen), rel=1e-12)
    backtracks = [b > a + 1e-6 for a, b in zip(r.variants["no options"], r.variants["backtracking"])]
    assert r.episodes["backtracks"].to_list() == backtracks
    assert any(backtracks) and not all(backtracks)


@pytest.mark.parametrize("edits", [(), ((S1, "zone=0,act=0", 3000), ("SonicTheHedgehog2-Genesis-v0", "zone=0,act=0",
                                                                     20000))])
def test_per_level_finish_rates_against_a_plain_loop(loaded, raw, edits):
    s = ContestSession(loaded, levels=edits)
    walk = _plain_finish(raw[0], edits)
    r = s.results
    assert r.episodes["finish_step"].to_list() == [walk[e] for e in r.episodes["episode_id"].to_list()]
    counts: dict = {}
    for game, state, episode in zip(r.episodes["game"], r.episodes["state"], r.episodes["episode_id"]):
        done, total = counts.get((game, state), (0, 0))
        counts[(game, state)] = (done + (walk[episode] is not None), total + 1)
    for row in r.levels.iter_rows(named=True):
        done, total = counts[(row["game"], row["state"])]
        assert (row["finished"], row["episodes"]) == (done, total)
        assert row["finish_rate"] == done / total
        assert row["end_x"] == _table(edits)[row["game"]][row["level"]]
    if not edits:  # Sonic 1 and 2 episodes reach the end exactly where the recording says they finished
        recorded = episode_outcomes(loaded).filter(~pl.col("game").str.starts_with("SonicAndKnuckles"))
        mine = r.episodes.filter(~pl.col("game").str.starts_with("SonicAndKnuckles"))
        assert mine["finished"].to_list() == (recorded["outcome"] == "finished").to_list()
        assert (r.levels["recorded_finished"] >= r.levels["finished"]).all()


def test_the_bonus_falls_with_the_finishing_frame(loaded):
    s = ContestSession(loaded)
    e = s.results.episodes.filter(pl.col("finished"))
    frames, bonus = e["finish_frame"].to_numpy(), e["bonus"].to_numpy()
    expected = (1.0 - np.clip((frames + C.FRAME_OFFSET) / C.FRAME_LIMIT, 0.0, 1.0)) * C.BONUS
    assert bonus == pytest.approx(expected, abs=1e-9)
    s.update(scaler=True, frame_limit=6000)
    e = s.results.episodes.filter(pl.col("finished"))
    frames = e["finish_frame"].to_numpy()
    expected = (1.0 - np.clip((frames + C.FRAME_OFFSET) / 6000, 0, 1)) * C.BONUS * 0.01
    assert e["bonus"].to_numpy() == pytest.approx(expected, abs=1e-9)
    assert (np.diff(e.sort("finish_frame")["bonus"].to_numpy()) <= 0).all()  # falls with the finishing frame


# --------------------------------------------------------------------------
# parameters, drill-down
# --------------------------------------------------------------------------


def test_refused_values_change_nothing(loaded):
    s = ContestSession(loaded)
    version = s.version
    assert not s.try_update(scale=0) and "`scale` should be > 0" in str(s.last_error)
    assert not s.try_update(frame_limit="1.5") and "frame_limit" in str(s.last_error)
    assert not s.try_update(backtracking="yes") and "backtracking" in str(s.last_error)
    assert not s.attempt(s.set_level_end, S1, GHZ, 80)  # at the episodes' start x
    assert "largest is 80" in str(s.last_error)
    with pytest.raises(ParameterError, match="`level` should be"):
        s.set_level_end(S1, "NoSuchZone.Act1", 5000)
    assert s.version == version and s.levels == () and s.scale == 9000.0
    s.scale = "120.5"
    assert s.scale == 120.5
    s.set_level_end(S1, GHZ, 7000)
    assert s.levels == ((S1, "zone=0,act=0", 7000),)
    s.set_level_end(S1, "zone=0,act=0", None)
    assert s.levels == ()


def test_a_level_missing_from_the_table_is_refused(loaded):
    cut = loaded.filter(pl.col("game") == S1)
    with pytest.raises(FrameError, match="not in the level table"):
        ContestSession(cut.with_columns(start_zone=pl.lit(9, dtype=pl.Int64)))


def test_drill_down(loaded):
    s = ContestSession(loaded, backtracking=True)
    r = s.results
    for k in (0, 3, 17):
        detail = s.episode(k)
        assert detail.returns["contest"] == pytest.approx(r.returns[k], rel=1e-12)
        assert detail.length == r.episodes["steps"][k]
    assert s.episode({"episode_id": 5}).length == r.episodes["steps"][5]
    with pytest.raises(ParameterError):
        s.episode(r.episodes.height)
    row = r.episodes.filter(pl.col("finished")).row(2, named=True)
    assert s.episode_near(row["finish_frame"], row["bonus"]) == row["episode"]
    s.set_level_end(S1, GHZ, 3000)
    early = s.results.episodes.filter(pl.col("ends_early")).row(0, named=True)
    assert s.episode(early["episode"]).length == early["contest_end"] + 1


# --------------------------------------------------------------------------
# pins, undo, saved state
# --------------------------------------------------------------------------


def test_pin_undo_and_state_round_trip(loaded, tmp_path):
    s = ContestSession(loaded)
    s.update(scale=500.0, backtracking=True)
    s.set_level_end(S1, GHZ, 7000)
    pin = s.pin("short GHZ")
    s.update(bonus=10.0)
    assert s.compare_pinned().filter(pl.col("statistic") == "mean bonus, finished")["short GHZ - live"][0] > 0
    pinned = s.pinned_results("short GHZ")
    fresh = ContestSession(loaded, scale=500.0, backtracking=True, levels=((S1, "zone=0,act=0", 7000),))
    assert pinned.reward.tolist() == fresh.results.reward.tolist()
    path = s.save_state(tmp_path / "contest.state.json")
    again = ContestSession.load_state(path, loaded)
    assert again.parameters == s.parameters and [p.label for p in again.pinned] == ["short GHZ"]
    assert again.pinned[0] == pin
    assert again.results.reward.tolist() == s.results.reward.tolist()
    with pytest.raises(FrameError, match="differs from the data"):
        ContestSession.load_state(path, loaded.filter(pl.col("episode_id") != 23))
    assert s.undo() and s.bonus == 1000.0
    assert s.undo() and s.levels == ()
    assert s.redo() and s.levels == ((S1, "zone=0,act=0", 7000),)
    s.update(scale=1.0)
    s.restore(path)
    assert s.parameters == again.parameters


# --------------------------------------------------------------------------
# export
# --------------------------------------------------------------------------


def test_export_writes_a_file_that_reproduces_the_rewards(loaded, tmp_path):
    s = ContestSession(loaded, scale=250.5, frame_limit=9000, scaler=True, backtracking=True)
    s.set_level_end("SonicTheHedgehog2-Genesis-v0", "EmeraldHillZone.Act1", 9000)
    seen = []
    result = s.export(tmp_path / "contest.py", progress=lambda fraction, text: seen.append(fraction))
    assert result.roundtrip.ok and seen[-1] == 1.0
    applied = apply_plugins(loaded, [str(result.path)], progress=False)
    name = columns.reward_column(plugin_name(result.path))
    assert applied[name].to_numpy().view(np.uint64).tolist() == s.results.reward.view(np.uint64).tolist()
    with pytest.raises(OutputExistsError):
        s.export(tmp_path / "contest.py")
    text = result.path.read_text()
    assert "9000" in text and "EmeraldHill" not in text  # literals: the edited end x, not names


# --------------------------------------------------------------------------
# the widget
# --------------------------------------------------------------------------


def test_the_widget_drives_the_session(loaded, tmp_path):
    pytest.importorskip("ipympl")
    from rewardlab.widgets import ContestTuner

    tuner = ContestTuner(loaded, background=False, export_path=str(tmp_path / "c.py"))
    s = tuner.session
    draws = tuner.plot.draws
    tuner.controls["backtracking"].value = True
    assert s.backtracking and tuner.plot.draws == draws + 1
    tuner.controls["scale"].value = "abc"
    assert "scale" in tuner.error.value and tuner.controls["scale"].value == "9000.0"
    tuner.level.value = 0
    tuner.level_end.value = "6000"
    tuner.set_level_button.click()
    assert s.levels == ((S1, "zone=0,act=0", 6000),) and "6000" in tuner.levels_table.value
    tuner.reset_level_button.click()
    assert s.levels == () and tuner.level_end.value == "9568"
    row = s.results.episodes.filter(pl.col("finished")).row(0, named=True)
    tuner.bonus_plot.click(0, row["finish_frame"], row["bonus"])
    assert tuner.episode.detail is not None and tuner.episode.detail.length == row["steps"]
    tuner.pin_button.click()
    assert "pin 1" in tuner.pinned.value
    tuner.export_button.click()
    assert (tmp_path / "c.py").is_file() and "round trip" in tuner.export_result.value
    assert tuner.bonus_plot.png()[:4] == b"\x89PNG"


# --------------------------------------------------------------------------
# the plots draw what the session computed
# --------------------------------------------------------------------------


def test_the_plots_draw_the_session_tables(loaded):
    from matplotlib.figure import Figure

    from rewardlab.plots.retro import plot_bonus_by_frame, plot_finish_rates, plot_option_effects

    r = ContestSession(loaded).results
    axes = Figure().subplots(1, 3)
    ax = plot_finish_rates(r.levels, ax=axes[0])
    widths = np.zeros(r.levels.height)
    for container in ax.containers:
        widths += np.array([bar.get_width() for bar in container])  # one bar per level, in the table's order
    assert widths.tolist() == r.levels["episodes"].cast(pl.Float64).to_list()
    ax = plot_bonus_by_frame(r.episodes, frame_limit=18000, ax=axes[1])
    offsets = np.asarray(ax.collections[0].get_offsets())
    finished = r.episodes.filter(pl.col("finished"))
    assert np.isfinite(offsets[:, 0]).sum() == finished.height
    assert sorted(offsets[np.isfinite(offsets[:, 0]), 1]) == sorted(finished["bonus"].to_list())
    ax = plot_option_effects(r.options, columns=["no options", "backtracking"], ax=axes[2])
    assert [b.get_height() for b in ax.containers[1]] == r.options["backtracking"].to_list()


def test_a_game_without_a_contest_reward_is_refused(loaded):
    airstriker = loaded.with_columns(pl.when(pl.col("episode_id") == 3).then(pl.lit("Airstriker-Genesis-v0"))
                                     .otherwise(pl.col("game")).alias("game"))
    with pytest.raises(FrameError, match="episode 3: the game 'Airstriker-Genesis-v0' has no contest reward"):
        ContestSession(airstriker)
