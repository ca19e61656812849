"""The vectorized retro contest reward against each Sonic game's own script.lua (run by Lua 5.1 through lupa).

The reference is ``tests/retro_lua.py``: the installed script, frame by frame in retro's order (done before
reward, a fresh runtime per episode, the loop breaking on done).  Random recordings are made the way the
contest's environment makes them: a random walk of the RAM variables, 4 frames a step, cut where the
script (the reference) says done, the last step's frame count drawn again (the loop broke somewhere in it).
Tolerance: none for the contest reward and done (bit for bit, the script's float64 operations in its order);
float rounding only for ``backtracking`` (the wrapper's running sums against a closed form).
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import polars as pl
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import rewardlab
from rewardlab.core.errors import FrameError, ParameterError
from rewardlab.domains.retro import contest as C
from rewardlab.domains.retro.frames import contest_steps, steps_frame

pytest.importorskip("lupa.lua51")
pytest.importorskip("stable_retro")
import retro_lua as R  # noqa: E402  (tests/ is on sys.path)

GAMES = C.SONIC_GAMES
TABLES = {game: R.lua_level_table(game) for game in GAMES}  # read by Lua itself, not by rewardlab
LEVELS = C.level_codes(TABLES)
SAMPLE = Path(__file__).resolve().parents[1] / "data" / "retro" / "sonic_sample.parquet"


# --------------------------------------------------------------------------
# Random recordings, made as the contest's environment makes them
# --------------------------------------------------------------------------


def _raw_episode(rng: np.random.Generator, game: str, steps: int, *, frames: str) -> dict:
    """``steps + 1`` random states of one level of ``game`` (not yet cut at done)."""
    key = rng.choice(sorted(TABLES[game]))
    zone, act = (int(p.split("=")[1]) for p in key.split(","))
    end = TABLES[game][key]
    x0 = int(rng.integers(0, min(end, 600)))
    span = end - x0
    x, lives, acts, sx, mode, special = [x0], [int(rng.choice([3, 3, 3, 4, 5]))], [act], [int(rng.integers(0, 300))], \
        [12], [0]
    for _ in range(steps):
        kind = rng.random()
        if kind < 0.6:
            nx = x[-1] + int(rng.integers(-40, 60))
        elif kind < 0.8:
            nx = x[-1] + int(span * rng.uniform(0.05, 0.5))
        elif kind < 0.9:
            nx = x[-1] - int(rng.integers(0, 400))
        elif kind < 0.95:
            nx = x0 + span  # exactly at the level's end
        else:
            nx = x0 + span + int(rng.integers(1, 200))
        x.append(nx)
        r = rng.random()
        lives.append(lives[-1] - 1 if r < 0.04 else lives[-1] + 1 if r < 0.07 else lives[-1])
        acts.append((acts[-1] + 1) % 3 if rng.random() < 0.1 else acts[-1])
        sx.append(max(0, sx[-1] + int(rng.integers(-30, 80))))
        mode.append(16 if rng.random() < 0.03 else 12)
        special.append(int(rng.choice([1, -1])) if rng.random() < 0.03 else 0)
    if frames == "contest":
        frame = [4 * t for t in range(steps + 1)]
    else:  # any frame counts, bonus clipped too
        frame = np.concatenate([[0], np.cumsum(rng.choice([1, 2, 3, 4, 5, 4000], size=steps))]).tolist()
    return {"x": x, "lives": lives, "zone": [zone] * (steps + 1), "act": acts, "screen_x": sx, "game_mode": mode,
            "special_stage": special, "frame": frame}


def random_episode(rng: np.random.Generator, game: str, *, frames: str = "contest") -> tuple[dict, bool]:
    """One episode's N + 1 states as the contest's loop records them, and whether it ended done."""
    raw = _raw_episode(rng, game, int(rng.integers(1, 40)), frames=frames)
    run = R.run_episode(game, raw)
    n = len(run.dones)
    rows = {k: v[: n + 1] for k, v in raw.items()}
    done = run.dones[-1]
    if done and frames == "contest":  # the loop broke on some frame of the last step
        rows["frame"][n] = rows["frame"][n - 1] + int(rng.integers(1, 5))
    return rows, done


def recording(episodes: list[tuple[str, dict, bool]]) -> pl.DataFrame:
    """The retro layout of ``(game, rows, done)`` episodes."""
    parts = []
    for e, (game, rows, done) in enumerate(episodes):
        n = len(rows["x"]) - 1
        part = {k: v for k, v in rows.items() if not (k == "game_mode" and game != GAMES[1])
                and not (k == "special_stage" and game != GAMES[2])}
        term = [False] * (n - 1) + [done] + [None]
        trunc = [False] * (n - 1) + [not done] + [None]
        parts.append(pl.DataFrame({"episode_id": [e] * (n + 1), "t": list(range(n + 1)),
                                   "final": [False] * n + [True], "game": [game] * (n + 1),
                                   "reward": [0.0] * n + [None], "terminated": term, "truncated": trunc,
                                   **{k: pl.Series(v, dtype=pl.Int64) for k, v in part.items()}}))
    return pl.concat(parts, how="diagonal_relaxed")


def reference(episodes, **options) -> tuple[np.ndarray, np.ndarray]:
    """The Lua reference over every step of the episodes (each must run to its recorded end)."""
    rewards, dones = [], []
    for game, rows, _ in episodes:
        run = R.run_episode(game, rows)
        assert len(run.rewards) == len(rows["x"]) - 1, "the script ended the episode before the recording did"
        r = run.rewards
        if options.get("scaler"):
            r = R.reward_scaler(r)
        if options.get("backtracking"):
            r = R.allow_backtracking(r)
        rewards += r
        dones += run.dones
    return np.array(rewards), np.array(dones)


def episodes_strategy(frames: str = "contest"):
    return st.tuples(st.integers(0, 2**32 - 1), st.integers(1, 6)).map(
        lambda a: _episodes(np.random.default_rng(a[0]), a[1], frames))


def _episodes(rng, count, frames):
    out = []
    for _ in range(count):
        game = GAMES[int(rng.integers(0, 3))]
        rows, done = random_episode(rng, game, frames=frames)
        out.append((game, rows, done))
    return out


def vectorized(episodes, **options):
    steps, first = contest_steps(steps_frame(recording(episodes)), LEVELS)
    return steps, first, C.contest_rewards(steps, **options)


# --------------------------------------------------------------------------
# Against the script
# --------------------------------------------------------------------------


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(episodes=episodes_strategy())
def test_rewards_and_dones_equal_the_lua_bit_for_bit(episodes):
    ref_r, ref_d = reference(episodes)
    steps, first, (reward, done) = vectorized(episodes)
    assert reward.view(np.uint64).tolist() == ref_r.view(np.uint64).tolist()
    assert done.tolist() == ref_d.tolist()
    loop_r, loop_d = C.contest_rewards_loop(steps, first=first)
    assert loop_r.view(np.uint64).tolist() == ref_r.view(np.uint64).tolist()
    assert loop_d.tolist() == ref_d.tolist()


@settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(episodes=episodes_strategy(frames="any"))
def test_any_frame_counts_equal_the_lua(episodes):
    ref_r, ref_d = reference(episodes)
    _, _, (reward, done) = vectorized(episodes)
    assert reward.view(np.uint64).tolist() == ref_r.view(np.uint64).tolist()
    assert done.tolist() == ref_d.tolist()


@settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(episodes=episodes_strategy(), scaler=st.booleans(), backtracking=st.booleans())
def test_baseline_wrappers_match_their_loops(episodes, scaler, backtracking):
    ref_r, ref_d = reference(episodes, scaler=scaler, backtracking=backtracking)
    steps, first, (reward, done) = vectorized(episodes, scaler=scaler, backtracking=backtracking)
    assert done.tolist() == ref_d.tolist()
    if backtracking:  # a closed form against the wrapper's running sums: float rounding only
        np.testing.assert_allclose(reward, ref_r, rtol=1e-12, atol=1e-8)
        loop_r, _ = C.contest_rewards_loop(steps, first=first, scaler=scaler, backtracking=True)
        np.testing.assert_allclose(loop_r, ref_r, rtol=0, atol=0)  # the twin keeps the wrapper's own sums
    else:
        assert reward.view(np.uint64).tolist() == ref_r.view(np.uint64).tolist()


@settings(max_examples=20, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(episodes=episodes_strategy(), scale=st.sampled_from([1.0, 9000.0, 123.5]),
       bonus=st.sampled_from([0.0, 1000.0, 7.25]), limit=st.sampled_from([1, 300, 18000]))
def test_parameters_follow_an_edited_script(episodes, scale, bonus, limit):
    """The script with its constants edited (9000, 1000, frame_limit) is the reference for the parameters."""
    edited = {}
    for game in GAMES:
        text = R.script_text(game).replace("* 9000", f"* {scale!r}").replace("* 1000", f"* {bonus!r}")
        edited[game] = text.replace("frame_limit = 18000", f"frame_limit = {limit}")
        assert edited[game] != R.script_text(game) or (scale, bonus, limit) == (9000.0, 1000.0, 18000)
    original = R.script_text
    try:
        R.script_text = lambda game: edited[game]
        ref_r, ref_d = reference(episodes)
    finally:
        R.script_text = original
    _, _, (reward, done) = vectorized(episodes, scale=scale, bonus=bonus, frame_limit=limit)
    assert reward.view(np.uint64).tolist() == ref_r.view(np.uint64).tolist()
    assert done.tolist() == ref_d.tolist()


def test_finished_runs_sum_to_the_scale_and_the_bonus_falls_with_the_frame():
    rng = np.random.default_rng(7)
    finished = 0
    for _ in range(200):
        game = GAMES[int(rng.integers(0, 3))]
        rows, done = random_episode(rng, game)
        if not done:
            continue
        steps = C.ContestSteps.single(x=rows["x"], lives=rows["lives"], act=rows["act"], screen_x=rows["screen_x"],
                                      frame=rows["frame"], game=GAMES.index(game),
                                      end_x=TABLES[game][f"zone={rows['zone'][0]},act={rows['act'][0]}"]
                                      - rows["x"][0], game_mode=rows["game_mode"],
                                      special_stage=rows["special_stage"])
        if GAMES.index(game) == C.S3K and len(set(rows["act"])) > 1:
            continue  # the act-change shift moves the end; checked on its own below
        no_bonus, _ = C.contest_rewards(steps, bonus=0.0)
        p_last = min(max(rows["x"][-1] - rows["x"][0], 0), steps.end_x[0]) / steps.end_x[0]
        if p_last < 1:
            continue  # ended by a lost life or a bonus / special stage
        finished += 1
        assert abs(no_bonus.sum() - 9000.0) < 1e-9
        bonuses = []
        for last in (1, 100, 5000, 17999, 18001, 30000):
            late = dict(rows, frame=rows["frame"][:-1] + [rows["frame"][-2] + last])
            ref = R.run_episode(game, late)
            bonuses.append(ref.rewards[-1] - no_bonus[-1])
        assert all(a > b for a, b in zip(bonuses[:4], bonuses[1:4])), bonuses
        assert bonuses[-2] == bonuses[-1] == 0.0 or abs(bonuses[-1]) < 1e-9
    assert finished >= 10


def test_s3k_act_change_shifts_the_offset():
    game = GAMES[2]
    end = TABLES[game]["zone=0,act=0"]
    rows = {"x": [100, 3000, 200, 1200], "lives": [3, 3, 3, 3], "zone": [0, 0, 0, 0], "act": [0, 0, 1, 1],
            "screen_x": [0, 2900, 100, 1100], "special_stage": [0, 0, 0, 0], "frame": [0, 4, 8, 12]}
    ref = R.run_episode(game, rows)
    steps = C.ContestSteps.single(x=rows["x"], lives=rows["lives"], act=rows["act"], screen_x=rows["screen_x"],
                                  frame=rows["frame"], game=C.S3K, end_x=end - 100, special_stage=rows["special_stage"])
    reward, done = C.contest_rewards(steps)
    assert reward.tolist() == ref.rewards and done.tolist() == ref.dones
    # the act change moved x back by 2800 and screen_x by 2800: progress carries on from 2900
    assert steps.shift.tolist() == [0, 0, -2800]
    assert reward[1] == pytest.approx((3000 - 100 - 2900 + 200 - 100 + 2800 - 2900) * 9000 / (end - 100) + 0.0,
                                      abs=1e-9)


@settings(max_examples=50, deadline=None)
@given(seed=st.integers(0, 2**32 - 1))
def test_episode_columns_equal_their_loop(seed):
    rng = np.random.default_rng(seed)
    n = int(rng.integers(1, 60))
    start = rng.random(n) < 0.2
    start[0] = True
    args = (start, rng.integers(-500, 5000, n), rng.integers(0, 3, n), rng.integers(0, 9000, n),
            rng.integers(0, 3, n))
    for a, b in zip(C.episode_columns(*args), C.episode_columns_loop(*args)):
        assert a.tolist() == b.tolist()


# --------------------------------------------------------------------------
# Bad input
# --------------------------------------------------------------------------


def _one(game=GAMES[0], **changes):
    rows = {"x": [80, 90, 100], "lives": [3, 3, 3], "zone": [0, 0, 0], "act": [0, 0, 0], "screen_x": [0, 0, 0],
            "frame": [0, 4, 8]}
    rows.update(changes)
    return recording([(game, rows, False)])


def test_a_level_missing_from_the_table_names_the_episode():
    with pytest.raises(FrameError, match=r"episode 0, t = 0: the level zone=9,act=0 of SonicTheHedgehog"):
        contest_steps(steps_frame(_one(zone=[9, 9, 9])), LEVELS)


def test_a_missing_variable_names_the_step():
    rec = _one().with_columns(pl.when(pl.col("t") == 1).then(None).otherwise(pl.col("lives")).alias("lives"))
    with pytest.raises(FrameError, match=r"episode 0, t = 1: the variable 'lives' is missing"):
        steps_frame(rec)
    with pytest.raises(FrameError, match="no 'screen_x' column"):
        steps_frame(_one().drop("screen_x"))
    with pytest.raises(FrameError, match="no 'game_mode' column"):
        steps_frame(_one(game=GAMES[1]))  # Sonic 2 without game_mode


def test_an_episode_without_its_final_row_is_refused():
    with pytest.raises(FrameError, match="final row"):
        steps_frame(_one().filter(~pl.col("final")))


def test_a_start_at_or_beyond_the_end_is_refused():
    end = TABLES[GAMES[0]]["zone=0,act=0"]
    with pytest.raises(FrameError, match="end x is at or before the episode's start x"):
        contest_steps(steps_frame(_one(x=[end, end, end])), LEVELS)


def test_options_are_checked():
    steps = C.ContestSteps.single(x=[0, 1], lives=[3, 3], act=[0, 0], screen_x=[0, 0], frame=[0, 4], game=0,
                                  end_x=10.0)
    for options, name in (({"scale": 0}, "scale"), ({"bonus": -1.0}, "bonus"), ({"frame_limit": 0}, "frame_limit"),
                          ({"scaler": 1}, "scaler"), ({"scale": float("nan")}, "scale")):
        with pytest.raises(ParameterError, match=f"`{name}`"):
            C.contest_rewards(steps, **options)


# --------------------------------------------------------------------------
# The shipped sample, when it is there
# --------------------------------------------------------------------------


def test_every_episode_of_the_sample_equals_the_lua():
    if not SAMPLE.is_file():
        pytest.skip(f"{SAMPLE} is not there yet (the retro source's sample)")
    rec = pl.read_parquet(SAMPLE)
    games = rec["game"].unique().to_list()
    tables = {game: R.lua_level_table(game) for game in games}
    steps, first = contest_steps(steps_frame(rec), C.level_codes(tables))
    reward, done = C.contest_rewards(steps)
    expected_r, expected_d = [], []
    for (_, game), part in rec.group_by(["episode_id", "game"], maintain_order=True):
        rows = {c: part[c].to_list() for c in part.columns}
        run = R.run_episode(game, rows)
        n = part.height - 1
        assert len(run.rewards) == n, "the script ends the episode before the sample does"
        expected_r += run.rewards
        expected_d += run.dones
    assert reward.view(np.uint64).tolist() == np.array(expected_r).view(np.uint64).tolist()
    assert done.tolist() == expected_d


def test_a_1up_mid_episode_loads_and_its_rewards_equal_the_lua(tmp_path):
    # a life gained (100 rings, a 1-up monitor) raises lives mid-episode: the script only compares each frame's
    # lives with the last frame's, so the recording is good data and loads as it is
    if not SAMPLE.is_file():
        pytest.skip(f"{SAMPLE} is not there yet (the retro source's sample)")
    rec = pl.read_parquet(SAMPLE).filter(pl.col("episode_id") == 8)
    rec = rec.with_columns(pl.when(pl.col("t") >= 10).then(pl.col("lives") + 1).otherwise(pl.col("lives"))
                           .alias("lives"))
    path = tmp_path / "one_up.parquet"
    rec.write_parquet(path)
    loaded = rewardlab.load(path, format="retro")
    assert loaded["lives"].max() > rec["lives"][0]
    game = rec["game"][0]
    steps, _ = contest_steps(steps_frame(rec), C.level_codes({game: R.lua_level_table(game)}))
    reward, done = C.contest_rewards(steps)
    run = R.run_episode(game, {c: rec[c].to_list() for c in rec.columns})
    assert len(run.rewards) == rec.height - 1
    assert reward.view(np.uint64).tolist() == np.array(run.rewards).view(np.uint64).tolist()
    assert done.tolist() == run.dones


@settings(max_examples=20, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(episodes=episodes_strategy())
def test_retros_float_rewards_are_within_float32_rounding(episodes):
    """retro hands each frame's reward through a C float: the doubles here are within its rounding of them."""
    _, _, (reward, _) = vectorized(episodes)
    as_retro = np.concatenate([R.run_episode(game, rows, float32=True).rewards for game, rows, _ in episodes])
    assert np.all(np.abs(reward - as_retro) <= np.spacing(np.abs(reward).astype(np.float32)).astype(np.float64))
    assert np.array_equal(reward.astype(np.float32), as_retro.astype(np.float32))
