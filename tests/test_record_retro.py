"""rewardlab.record_retro: real Airstriker-Genesis-v0 episodes through the contest's wrappers, checked against a
fresh emulator replaying the same seed and actions, and the retro layout (N+1 rows)."""

from __future__ import annotations

import hashlib
import importlib.util
import os
import subprocess
import sys

import numpy as np
import polars as pl
import pytest

from conftest import ROOT

if importlib.util.find_spec("stable_retro") is None:  # the optional retro extra
    _MESSAGE = "the retro recorder's tests need the retro extra: pip install -e '.[retro]'"
    if os.environ.get("CI"):
        pytest.fail(f"CI is set but stable-retro is not installed; {_MESSAGE}", pytrace=False)
    pytest.skip(_MESSAGE, allow_module_level=True)

import stable_retro  # noqa: E402

from rewardlab.core.errors import OutputExistsError, ParameterError  # noqa: E402
from rewardlab.sources.retro.recorder import (LAYOUT_COLUMNS, StickyStep, record_retro, sticky_step,  # noqa: E402
                                              variable_column)
from rewardlab.sources.steps import load_steps  # noqa: E402

GAME = "Airstriker-Genesis-v0"
VARIABLES = ["gameover", "lives", "score"]  # its data.json


def random_buttons(obs, info, rng):
    return rng.integers(0, 2, 12)


def screen(obs) -> str:
    return hashlib.sha1(np.ascontiguousarray(obs).tobytes()).hexdigest()


class Watching:
    """Random buttons; keeps a hash of every screen it is shown (the screen before each step, in row order)."""

    def __init__(self):
        self.screens = []

    def __call__(self, obs, info, rng):
        self.screens.append(screen(obs))
        return rng.integers(0, 2, 12)


# --------------------------------------------------------------------------
# the independent reference: a fresh emulator, the contest's wrapper loop written out
# --------------------------------------------------------------------------


def replay(episode_rows: pl.DataFrame, seed: int, episode: int, *, n: int = 4, stickprob: float = 0.25) -> tuple:
    """Replay recorded actions on a fresh emulator, frame by frame, as retro_contest.StochasticFrameSkip
    (support/retro_contest/__init__.py) steps.  Returns the variables at reset, and per step: (reward sum,
    frames, done, variables after, the screen before the step)."""
    env = stable_retro.make(GAME, state="Level1", scenario="scenario", render_mode=None)
    try:
        ob, _ = env.reset(seed=seed + episode)
        first = dict(env.data.lookup_all())
        rng = np.random.RandomState([seed, episode])
        curac, out = None, []
        for action in episode_rows["action"].to_list():
            ac, before = np.asarray(action), screen(ob)
            totrew, frames, done, info = 0, 0, False, {}
            for i in range(n):
                if curac is None:
                    curac = ac
                elif i == 0:
                    if rng.rand() > stickprob:
                        curac = ac
                elif i == 1:
                    curac = ac
                ob, rew, done, _, info = env.step(curac)
                totrew += rew
                frames += 1
                if done:
                    break
            out.append((totrew, frames, done, dict(info), before))
        return first, out
    finally:
        env.close()


def check_replay(frame: pl.DataFrame, screens: list, seed: int, **wrapper) -> None:
    """Every episode of ``frame`` equals its replay: rewards, frames, flags, variables, screens."""
    at = 0
    for episode in frame["episode_id"].unique().sort().to_list():
        rows = frame.filter(pl.col("episode_id") == episode)
        steps = rows.filter(~pl.col("final"))
        first, replayed = replay(steps, seed, episode, **wrapper)
        assert rows.select(VARIABLES).row(0, named=True) == first  # row 0: the values at reset
        assert steps["reward"].to_list() == [r[0] for r in replayed]
        assert np.diff(rows["frame"].to_numpy()).tolist() == [r[1] for r in replayed]
        assert steps["terminated"].to_list() == [r[2] for r in replayed]
        after = [{k: info[k] for k in VARIABLES} for _, _, _, info, _ in replayed]
        assert rows.tail(-1).select(VARIABLES).to_dicts() == after  # row t + 1: the values after step t
        # the screens the policy saw are the emulator's: every frame ran the buttons the contest's loop runs
        assert screens[at:at + steps.height] == [r[4] for r in replayed]
        at += steps.height
    assert at == len(screens)


@pytest.fixture(scope="module")
def recording():
    """Two short episodes cut by a 40-step limit and one played to the end (Airstriker ends after ~350 steps
    of random buttons), with the screens their policies saw."""
    cut_policy, whole_policy = Watching(), Watching()
    cut = record_retro(GAME, None, cut_policy, episodes=2, seed=7, max_steps=40)
    whole = record_retro(GAME, "Level1", whole_policy, episodes=1, seed=11)
    return cut, whole, cut_policy.screens, whole_policy.screens


# --------------------------------------------------------------------------
# the layout
# --------------------------------------------------------------------------


def test_the_retro_layout(recording):
    for frame in recording[:2]:
        assert frame.columns == list(LAYOUT_COLUMNS) + VARIABLES
        assert frame.schema["action"] == pl.Array(pl.Int64, 12)
        assert {frame.schema[c] for c in ("episode_id", "t", "frame", *VARIABLES)} == {pl.Int64}
        assert frame.schema["reward"] == pl.Float64 and frame.schema["game"] == pl.String
        assert set(frame["game"]) == {GAME} and set(frame["state"]) == {"Level1"}
        for _, rows in frame.group_by("episode_id", maintain_order=True):
            n = rows.height - 1
            assert rows["t"].to_list() == list(range(n + 1))
            assert rows["final"].to_list() == [False] * n + [True]
            final = rows.row(n, named=True)
            assert [final[c] for c in ("action", "reward", "terminated", "truncated")] == [None] * 4
            steps = rows.head(n)
            assert steps.select(pl.all().null_count()).sum_horizontal().item() == 0
            ends = (steps["terminated"] | steps["truncated"]).to_list()
            assert ends == [False] * (n - 1) + [True]
            assert not (steps["terminated"] & steps["truncated"]).any()
            # a frame counter from 0, four frames a step (the last may stop early on done)
            gaps = np.diff(rows["frame"].to_numpy())
            assert rows["frame"][0] == 0 and (gaps[:-1] == 4).all() and 1 <= gaps[-1] <= 4
    cut, whole = recording[:2]
    assert cut.group_by("episode_id").len()["len"].to_list() == [41, 41]
    assert cut.filter(pl.col("t") == 39)["truncated"].to_list() == [True, True]
    last = whole.filter(~pl.col("final")).tail(1)
    assert last["terminated"].item() and not last["truncated"].item()
    # the game is over on the final row: the scenario's done (gameover == 1 and lives == 0)
    end = whole.filter(pl.col("final")).row(0, named=True)
    assert (end["gameover"], end["lives"]) == (1, 0)


def test_recorded_rewards_and_states_equal_a_fresh_emulator_replaying_the_seed_and_actions(recording):
    cut, whole, cut_screens, whole_screens = recording
    check_replay(cut, cut_screens, 7)
    check_replay(whole, whole_screens, 11)


def test_the_default_scenario_reward_is_the_score_change(recording):
    # Airstriker's scenario.json: reward = the change of `score` (x 1.0) on every frame, so a step's summed
    # reward is the score after it minus the score before it: the next row's score minus this row's
    for frame in recording[:2]:
        for _, rows in frame.group_by("episode_id"):
            rows = rows.sort("t")
            score = rows["score"].to_numpy()
            assert rows.filter(~pl.col("final"))["reward"].to_numpy().tolist() == np.diff(score).astype(float).tolist()
    assert recording[1]["reward"].sum() > 0  # the played-out episode scored


def test_same_seed_same_recording_and_the_time_limit_never_overrides_a_termination(recording):
    whole = recording[1]
    again = record_retro(GAME, "Level1", Watching(), episodes=1, seed=11)
    assert again.equals(whole)
    n = whole.height - 1
    at_limit = record_retro(GAME, "Level1", Watching(), episodes=1, seed=11, max_steps=n)
    assert at_limit.equals(whole)  # the limit reached on the step the game ends: terminated only
    other = record_retro(GAME, "Level1", Watching(), episodes=1, seed=12, max_steps=40)
    assert not other.head(40).equals(whole.head(40))


def test_the_frame_column_is_the_scenarios_frame_counter(tmp_path):
    # a scenario of our own whose Lua reward is 1000 * scenario.frame + the frame its done check saw just before
    (tmp_path / "frames.lua").write_text("seen = -1\n"
                                         "function check_done() seen = scenario.frame; return false end\n"
                                         "function frame_reward() return scenario.frame * 1000 + seen end\n")
    scenario = tmp_path / "frames.json"
    scenario.write_text('{"done": {"script": "lua:check_done"}, "reward": {"script": "lua:frame_reward"}, '
                        '"scripts": ["frames.lua"]}')
    frame = record_retro(GAME, None, random_buttons, episodes=2, seed=1, max_steps=6, scenario=scenario)
    for _, rows in frame.group_by("episode_id"):
        rows = rows.sort("t")
        frames = rows["frame"].to_list()
        # step t ran frames frame(t) + 1 .. frame(t + 1), each seen by done then reward as scenario.frame
        expected = [float(sum(1001 * k for k in range(a + 1, b + 1))) for a, b in zip(frames, frames[1:])]
        assert rows.filter(~pl.col("final"))["reward"].to_list() == expected


def test_sticky_frames_follow_the_contest_wrapper():
    class Frames:
        """Returns the action it ran as the reward; done on frame ``done_at``."""

        def __init__(self, done_at=None):
            self.ran, self.done_at = [], done_at

        def step(self, a):
            self.ran.append(a)
            done = len(self.ran) == self.done_at
            return len(self.ran), float(a), done, False, {"frame": len(self.ran)}

    env = Frames()
    rng = np.random.RandomState(1)  # draws 0.417, 0.720, 0.000114, 0.302, 0.147
    held, steps = None, []
    for action in (1, 2, 3, 5, 6, 7):
        step = sticky_step(env, action, held, rng)
        held = step.held
        steps.append(step)
    # no draw on the first step; draws <= 0.25 repeat the previous action on the first frame only
    assert env.ran == [1] * 4 + [2] * 4 + [3] * 4 + [3, 5, 5, 5] + [6] * 4 + [6, 7, 7, 7]
    assert [s.sticky for s in steps] == [False, False, False, True, False, True]
    assert [s.reward for s in steps] == [4.0, 8.0, 12.0, 18.0, 24.0, 27.0]
    env = Frames(done_at=6)
    step = sticky_step(env, 1, None, np.random.RandomState(0))
    step = sticky_step(env, 2, step.held, np.random.RandomState(0))
    assert (step.frames, step.done, step.reward, step.obs, step.info) == (2, True, 4.0, 6, {"frame": 6})
    assert isinstance(step, StickyStep)
    env = Frames()
    never = [sticky_step(env, a, a - 1 or None, np.random.RandomState(a), stickprob=0.0).sticky for a in range(1, 9)]
    always = [sticky_step(env, a, a - 1 or None, np.random.RandomState(a), stickprob=1.0).sticky
              for a in range(1, 9)]
    assert not any(never) and always == [False] + [True] * 7
    env = Frames()
    sticky_step(env, 4, None, np.random.RandomState(0), n=2)
    assert env.ran == [4, 4]


@pytest.mark.parametrize("frame_skip,stickprob", [(2, 1.0), (3, 0.0)])
def test_stickprob_and_frame_skip_reach_the_emulator(frame_skip, stickprob):
    policy = Watching()
    frame = record_retro(GAME, None, policy, episodes=2, seed=5, max_steps=30, frame_skip=frame_skip,
                         stickprob=stickprob)
    assert frame.filter(pl.col("episode_id") == 0)["frame"].to_list() == list(range(0, 31 * frame_skip, frame_skip))
    check_replay(frame, policy.screens, 5, n=frame_skip, stickprob=stickprob)
    # the default wrapper would have run other buttons on some first frames: the screens differ
    with pytest.raises(AssertionError):
        check_replay(frame, policy.screens, 5, n=frame_skip, stickprob=0.25)


# --------------------------------------------------------------------------
# files
# --------------------------------------------------------------------------


def test_write_refuse_overwrite_and_the_steps_source_reads_it(tmp_path):
    path = tmp_path / "air.parquet"
    frame = record_retro(GAME, None, random_buttons, episodes=2, seed=3, max_steps=20, path=path)
    assert pl.read_parquet(path).equals(frame)
    calls = []

    def counting(obs, info, rng):
        calls.append(info)
        return np.zeros(12, np.int8)

    with pytest.raises(OutputExistsError, match="air.parquet already exists; pass overwrite=True"):
        record_retro(GAME, None, counting, episodes=1, seed=0, path=path)
    assert calls == []  # refused before anything was played
    other = record_retro(GAME, None, counting, episodes=1, seed=0, max_steps=3, path=path, overwrite=True)
    assert pl.read_parquet(path).equals(other) and [p.name for p in tmp_path.iterdir()] == ["air.parquet"]
    assert calls[0] == {"gameover": 9, "lives": 3, "score": 0}  # the policy sees the values at reset first
    # the N+1 layout as the steps source reads it: final rows taken out, the reward as reward_recorded
    path = tmp_path / "again.parquet"
    record_retro(GAME, None, random_buttons, episodes=2, seed=3, max_steps=20, path=path)
    loaded = load_steps(path)
    steps = frame.filter(~pl.col("final"))
    assert loaded.height == steps.height == 40
    assert loaded["reward_recorded"].to_list() == steps["reward"].to_list()
    assert loaded["score"].to_list() == steps["score"].to_list()


def test_the_retro_source_reads_a_recording(tmp_path):
    if importlib.util.find_spec("rewardlab.sources.retro.source") is None:
        pytest.skip("the retro source (rewardlab/sources/retro/source.py) is not there yet")
    import rewardlab
    from rewardlab.core.spec import attached

    path = tmp_path / "air.parquet"
    frame = record_retro(GAME, None, random_buttons, episodes=2, seed=4, max_steps=25, path=path)
    loaded = rewardlab.load(path, format="retro")
    assert attached(loaded).name == "retro"
    steps, finals = frame.filter(~pl.col("final")), frame.filter(pl.col("final"))
    assert loaded.height == steps.height
    assert loaded["reward_recorded"].to_list() == steps["reward"].to_list()
    for name in ("frame", *VARIABLES):
        assert loaded[name].to_list() == steps[name].to_list()
        assert loaded.filter(pl.col(f"final_{name}").is_not_null())[f"final_{name}"].to_list() == \
            finals[name].to_list()


def test_a_discrete_action_set_and_ram_observations():
    seen = []

    def policy(obs, info, rng):
        seen.append(obs.shape)
        return int(rng.integers(0, 126))

    frame = record_retro(GAME, None, policy, episodes=1, seed=0, max_steps=5, actions="discrete",
                         observations="ram")
    assert frame.schema["action"] == pl.Int64 and frame["action"].null_count() == 1
    assert set(seen) == {(65536,)}  # the RAM, not the screen


# --------------------------------------------------------------------------
# validation
# --------------------------------------------------------------------------


@pytest.mark.parametrize("args,kwargs,message", [
    (("NoSuchGame-v0", None), {}, r"`game` should be a game stable-retro integrates. Received 'NoSuchGame-v0'"),
    (("SonicTheHedgehog-Genesis-v0", None), {}, r"`game` needs its ROM imported into stable-retro.*python -m "
                                                 r"stable_retro.import"),
    ((GAME, "Level9"), {}, r"`state` should be None \(the default\) or one of Airstriker-Genesis-v0's states: "
                           r"Level1. Received 'Level9'"),
    ((GAME, None), dict(scenario="contest"), r"`scenario` should be None, one of Airstriker-Genesis-v0's scenarios "
                                             r"\(scenario\) or a scenario .json file. Received 'contest'"),
    ((GAME, None), dict(episodes=0), r"`episodes` should be an int >= 1. Received 0."),
    ((GAME, None), dict(seed=-1), r"`seed` should be an int >= 0"),
    ((GAME, None), dict(max_steps=0), r"`max_steps` should be an int >= 1. Received 0."),
    ((GAME, None), dict(frame_skip=0), r"`frame_skip` should be an int >= 1. Received 0."),
    ((GAME, None), dict(stickprob=1.5), r"`stickprob` should be in \[0, 1\]. Received 1.5."),
    ((GAME, None), dict(actions="buttons"), r"`actions` should be one of 'filtered', 'discrete'"),
    ((GAME, None), dict(path="out.csv"), r"`path` should be a .parquet file name. Received 'out.csv'."),
])
def test_argument_errors_name_the_argument(args, kwargs, message):
    options = dict(episodes=1, seed=0) | kwargs
    with pytest.raises(ParameterError, match=message):
        record_retro(*args, random_buttons, **options)


def test_policy_errors_and_one_emulator_per_process():
    with pytest.raises(ParameterError, match=r"`policy` should be callable as policy\(obs, info, rng\)"):
        record_retro(GAME, None, 3, episodes=1, seed=0)
    actions = iter([np.zeros(12, np.int8)] * 3 + [np.full(12, 2)])
    with pytest.raises(ParameterError, match=r"`policy` should return actions in the game's action space "
                                             r"MultiBinary\(12\); at episode 0, step 3 it returned"):
        record_retro(GAME, None, lambda obs, info, rng: next(actions), episodes=1, seed=0)
    other = stable_retro.make(GAME, render_mode=None)
    try:
        with pytest.raises(ParameterError, match=r"cannot be opened while another stable-retro emulator is open"):
            record_retro(GAME, None, random_buttons, episodes=1, seed=0, max_steps=2)
    finally:
        other.close()
    assert record_retro(GAME, None, random_buttons, episodes=1, seed=0, max_steps=2).height == 3  # closed after


def test_variables_named_like_the_layouts_columns_get_a_prefix():
    assert [variable_column(n) for n in ("score", "frame", "state", "next", "x")] == [
        "score", "data_frame", "data_state", "data_next", "x"]


def test_stable_retro_is_optional_until_record_retro_runs():
    code = (
        "import builtins\n"
        "real = builtins.__import__\n"
        "def guard(name, *a, **k):\n"
        "    if name.split('.')[0] == 'stable_retro':\n"
        "        raise ImportError('No module named ' + name)\n"
        "    return real(name, *a, **k)\n"
        "builtins.__import__ = guard\n"
        "from rewardlab.sources.retro.recorder import record_retro\n"
        "try:\n"
        "    record_retro('Airstriker-Genesis-v0', None, print, episodes=1, seed=0)\n"
        "except ImportError as exc:\n"
        "    print(exc)\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT)
    assert out.returncode == 0, out.stderr
    from rewardlab.core.extras import missing_extra

    assert out.stdout.strip() == str(missing_extra("rewardlab.record_retro", "stable-retro", "retro"))
