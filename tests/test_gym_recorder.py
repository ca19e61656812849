"""rewardlab.record: Gymnasium environments recorded into step tables, and the committed samples in data/gym/."""

from __future__ import annotations

import dataclasses

import gymnasium
import numpy as np
import polars as pl
import pytest
from gymnasium import spaces

import rewardlab
from conftest import ROOT
from rewardlab.core.errors import OutputExistsError, ParameterError
from rewardlab.core.spec import attached
from rewardlab.sources.gymnasium.recorder import COLUMNS, recording_spec
from rewardlab.sources.storage import read_spec

GYM = ROOT / "data" / "gym"
CARTPOLE = GYM / "cartpole_random.parquet"
MOUNTAINCAR = GYM / "mountaincar_scripted.parquet"


def random_policy(env):
    return lambda obs: env.action_space.sample()


def episode_ends(frame: pl.DataFrame) -> pl.DataFrame:
    return frame.group_by("episode_id", maintain_order=True).agg(
        pl.len().alias("length"), pl.col("terminated").last(), pl.col("truncated").last(),
        (pl.col("terminated") | pl.col("truncated")).head(pl.len() - 1).any().alias("mid_flag"))


class Scripted(gymnasium.Env):
    """A user's own environment: 2x2 Box observations, a Box action, ends by itself at step ``length``.

    ``both=True`` flags its last step terminated and truncated at once, as a TimeLimit can.
    """

    observation_space = spaces.Box(-10.0, 10.0, (2, 2), np.float64)
    action_space = spaces.Box(-1.0, 1.0, (2,), np.float32)

    def __init__(self, length=3, both=False, bad_obs_at=None, reward=None):
        self.length, self.both, self.bad_obs_at, self.reward = length, both, bad_obs_at, reward
        self.episode = -1

    def reset(self, *, seed=None, options=None):
        super().reset(seed=seed)
        self.t = 0
        self.episode += 1
        return self.np_random.uniform(-1, 1, (2, 2)), {}

    def step(self, action):
        self.t += 1
        obs = np.full((2, 2), float(self.t))
        if self.bad_obs_at == (self.episode, self.t):  # the observation of step t of this episode
            obs = np.zeros(3)
        end = self.t >= self.length
        reward = self.reward if self.reward is not None else float(np.sum(action))
        return obs, reward, end, end and self.both, {}


# --------------------------------------------------------------------------
# recording
# --------------------------------------------------------------------------


def test_record_cartpole_table_spec_and_seeds():
    env = gymnasium.make("CartPole-v1")
    frame = rewardlab.record(env, random_policy(env), episodes=4, seed=11)
    assert tuple(frame.columns) == COLUMNS
    assert frame.schema["obs"] == pl.Array(pl.Float32, 4) and frame.schema["action"] == pl.Int64
    assert frame.schema["reward_recorded"] == pl.Float64 and frame.schema["episode_id"] == pl.Int64
    assert frame["done_recorded"].to_list() == (frame["terminated"] | frame["truncated"]).to_list()
    spec = attached(frame)
    assert spec == recording_spec(4, "float32") and spec.contract == "steps"
    assert "CartPole-v1 recorded with Gymnasium 1.4.0" in spec.description
    spec.validate(frame)
    ends = episode_ends(frame)
    assert ends["episode_id"].to_list() == [0, 1, 2, 3]
    assert ends["terminated"].all() and not ends["mid_flag"].any()
    assert frame["t"].to_list() == [t for n in ends["length"] for t in range(n)]
    # the same seed gives the same table; episode i started from reset(seed=seed + i)
    again = rewardlab.record(env, random_policy(env), episodes=4, seed=11)
    assert again.equals(frame)
    first_obs, _ = gymnasium.make("CartPole-v1").reset(seed=13)
    assert frame.filter((pl.col("episode_id") == 2) & (pl.col("t") == 0))["obs"].to_list()[0] == \
        pytest.approx(first_obs.tolist())
    assert not rewardlab.record(env, random_policy(env), episodes=4, seed=12).equals(frame)


def test_time_limit_is_truncated_not_terminated_and_max_steps_cuts():
    env = gymnasium.make("MountainCar-v0", max_episode_steps=30)
    frame = rewardlab.record(env, lambda obs: 1, episodes=2, seed=0)
    ends = episode_ends(frame)
    assert ends["length"].to_list() == [30, 30]
    assert ends["truncated"].all() and not ends["terminated"].any() and not ends["mid_flag"].any()
    cut = rewardlab.record(gymnasium.make("MountainCar-v0"), lambda obs: 1, episodes=2, seed=0, max_steps=7)
    assert episode_ends(cut)["length"].to_list() == [7, 7] and episode_ends(cut)["truncated"].all()


def test_a_users_own_env_flattened_box_actions_and_both_flags():
    frame = rewardlab.record(Scripted(length=3, both=True), lambda obs: np.array([0.25, 0.5], np.float32),
                             episodes=2, seed=5)
    assert frame.schema["obs"] == pl.Array(pl.Float64, 4)
    assert frame.schema["action"] == pl.Array(pl.Float32, 2)
    assert frame["obs"].to_list()[1] == [1.0, 1.0, 1.0, 1.0]
    assert frame["reward_recorded"].to_list() == [0.75] * 6
    assert frame["done_recorded"].to_list() == [False, False, True] * 2
    # Gymnasium flagged the last step both ways: recorded as what happened, a termination
    assert frame["terminated"].to_list() == [False, False, True] * 2
    assert not frame["truncated"].any()
    assert "Scripted recorded" in attached(frame).description


class OneBuffer(gymnasium.Env):
    """An environment that refills one observation buffer, and a policy that reuses one action array."""

    observation_space = spaces.Box(-100.0, 100.0, (2,), np.float64)
    action_space = spaces.Box(-100.0, 100.0, (2,), np.float64)

    def __init__(self):
        self.buffer = np.zeros(2)

    def reset(self, *, seed=None, options=None):
        super().reset(seed=seed)
        self.t = 0
        self.buffer[:] = 0.0
        return self.buffer, {}

    def step(self, action):
        self.t += 1
        self.buffer[:] = float(self.t)
        return self.buffer, 0.0, self.t >= 3, False, {}


def test_reused_observation_and_action_buffers_are_recorded_as_they_were_at_each_step():
    env, action = OneBuffer(), np.zeros(2)

    def policy(obs):
        action[:] = obs + 0.5
        return action

    frame = rewardlab.record(env, policy, episodes=1, seed=0)
    assert frame["obs"].to_list() == [[0.0, 0.0], [1.0, 1.0], [2.0, 2.0]]
    assert frame["action"].to_list() == [[0.5, 0.5], [1.5, 1.5], [2.5, 2.5]]


def test_write_load_round_trip_and_overwrite(tmp_path):
    env = gymnasium.make("CartPole-v1")
    path = tmp_path / "cartpole.parquet"
    frame = rewardlab.record(env, random_policy(env), episodes=3, seed=1, path=path)
    loaded = rewardlab.load(path)
    assert loaded.equals(frame) and attached(loaded) == attached(frame)
    assert read_spec(path) == recording_spec(4, "float32")
    # the plain table: obs as a fixed-size list of floats
    assert pl.read_parquet(path).schema["obs"] == pl.Array(pl.Float32, 4)
    calls = []

    def counting(obs):
        calls.append(1)
        return 0

    with pytest.raises(OutputExistsError, match="cartpole.parquet already exists; pass overwrite=True"):
        rewardlab.record(env, counting, episodes=3, seed=2, path=path)
    assert calls == []  # refused before anything was recorded
    assert rewardlab.load(path).equals(frame)
    other = rewardlab.record(env, counting, episodes=1, seed=2, path=path, overwrite=True)
    assert rewardlab.load(path).equals(other)
    assert [p.name for p in tmp_path.iterdir()] == ["cartpole.parquet"]  # no temporary left


def test_a_recording_runs_plugins_under_the_steps_contract(tmp_path):
    plugin = tmp_path / "flipped.py"
    plugin.write_text("def get_reward(data, contiguous):\n"
                      "    data['next', 'reward'] = (data['action'] - 1).double() * -data['reward_recorded']\n")
    frame = rewardlab.load(MOUNTAINCAR)
    out = rewardlab.apply_plugins(frame, [plugin], batch_mode="episodes", isolate=False)
    assert out["reward_flipped"].to_list() == ((frame["action"] - 1) * -frame["reward_recorded"]).to_list()
    done = (frame["terminated"] | frame["truncated"]).to_list()
    assert out["done_flipped"].to_list() == done == out["done_recorded"].to_list()
    # the recorded reward is the candidate "recorded" beside the plug-in's
    table = rewardlab.episode_return_table(out, ["recorded", "flipped"])
    sums = frame.group_by("episode_id", maintain_order=True).agg(pl.col("reward_recorded").sum())
    assert table["recorded"].to_list() == sums["reward_recorded"].to_list()


@pytest.mark.parametrize("make", [
    lambda: (gymnasium.make("CartPole-v1"), None),
    lambda: (gymnasium.make("MountainCar-v0", max_episode_steps=20), lambda obs: 2),
    lambda: (Scripted(length=3, both=True), lambda obs: np.array([0.25, 0.5], np.float32)),
], ids=["cartpole", "mountaincar-truncated", "box-both-flags"])
def test_the_recording_has_the_layout_the_steps_source_gives_the_same_plain_table(tmp_path, make):
    env, policy = make()
    frame = rewardlab.record(env, policy or random_policy(env), episodes=3, seed=4)
    want = attached(frame)
    assert want.name == "gymnasium" and want.columns == ("action", "reward_recorded")
    fields = [f.name for f in dataclasses.fields(want) if f.name not in ("name", "description")]
    # the recorder's frame as written without rewardlab metadata, and the same table with Gymnasium's own
    # reward column: the steps source gives both the recorder's layout
    tables = {"as_recorded": pl.DataFrame(frame),
              "gymnasium_reward": pl.DataFrame(frame).rename({"reward_recorded": "reward"}).drop("done_recorded")}
    for name, table in tables.items():
        plain = tmp_path / f"{name}.parquet"
        table.write_parquet(plain)
        assert read_spec(plain) is None
        loaded = rewardlab.load(plain)  # detected as a step table by its episode_id and t columns
        got = attached(loaded)
        assert got.name == "steps", name
        assert loaded.columns == frame.columns == list(COLUMNS), name
        assert loaded.schema == frame.schema, name
        assert loaded.equals(frame), name
        assert {f: getattr(got, f) for f in fields} == {f: getattr(want, f) for f in fields}, name


# --------------------------------------------------------------------------
# validation
# --------------------------------------------------------------------------


@pytest.mark.parametrize("kwargs,message", [
    (dict(episodes=0, seed=0), r"`episodes` should be an int >= 1. Received 0."),
    (dict(episodes=True, seed=0), r"`episodes` should be an int >= 1. Received True."),
    (dict(episodes=2.0, seed=0), r"`episodes` should be an int >= 1. Received 2.0."),
    (dict(episodes=1, seed="1"), r"`seed` should be an int >= 0 \(Gymnasium's seeds are non-negative\). "
                                 r"Received '1'."),
    (dict(episodes=1, seed=-1), r"`seed` should be an int >= 0"),
    (dict(episodes=1, seed=0, max_steps=0), r"`max_steps` should be None or an int >= 1. Received 0."),
    (dict(episodes=1, seed=0, path="out.csv"), r"`path` should be a .parquet file name. Received 'out.csv'."),
    (dict(episodes=1, seed=0, overwrite="yes"), r"`overwrite` should be True or False. Received 'yes'."),
])
def test_argument_errors_name_the_argument(kwargs, message):
    env = gymnasium.make("CartPole-v1")
    with pytest.raises(ParameterError, match=message):
        rewardlab.record(env, random_policy(env), **kwargs)


def test_env_and_policy_errors():
    class ResetOnly:
        def reset(self, *, seed=None):
            return 0, {}

    with pytest.raises(ParameterError, match=r"`env` should be a Gymnasium environment \(it has no step\(\) "
                                             r"method\). Received 'ResetOnly'. Pass gymnasium.make"):
        rewardlab.record(ResetOnly(), lambda obs: 0, episodes=1, seed=0)
    vector = gymnasium.make_vec("CartPole-v1", num_envs=2)
    with pytest.raises(ParameterError, match=r"`env` should be a single environment, not a vector environment"
                                             r".*Record gymnasium.make\(...\) rather than"):
        rewardlab.record(vector, lambda obs: 0, episodes=1, seed=0)
    env = gymnasium.make("CartPole-v1")
    with pytest.raises(ParameterError, match=r"`policy` should be callable as policy\(obs\) -> action. "
                                             r"Received 'int'."):
        rewardlab.record(env, 3, episodes=1, seed=0)
    policy = iter([0, 1, 0, 7])
    with pytest.raises(ParameterError, match=r"`policy` should return actions in the environment's action "
                                             r"space Discrete\(2\); at episode 0, step 3 it returned. Received 7."):
        rewardlab.record(env, lambda obs: next(policy), episodes=1, seed=0)
    with pytest.raises(ParameterError, match=r"`env` should return observations of 4 numbers \(its observation "
                                             r"space\); at episode 1, step 2 it returned"):
        rewardlab.record(Scripted(length=4, bad_obs_at=(1, 2)), lambda obs: np.zeros(2, np.float32),
                         episodes=2, seed=0)
    with pytest.raises(ParameterError, match=r"`env` should return a number as the reward; at episode 0, "
                                             r"step 0 it returned. Received 'much'."):
        rewardlab.record(Scripted(reward="much"), lambda obs: np.zeros(2, np.float32), episodes=1, seed=0)
    dict_env = Scripted()
    dict_env.observation_space = spaces.Dict({"a": spaces.Discrete(2)})
    with pytest.raises(ParameterError, match=r"should have a Box, Discrete, MultiDiscrete or MultiBinary "
                                             r"observation space.*Received 'Dict'. Wrap it in "
                                             r"gymnasium.wrappers.FlattenObservation"):
        rewardlab.record(dict_env, lambda obs: 0, episodes=1, seed=0)


# --------------------------------------------------------------------------
# the committed samples
# --------------------------------------------------------------------------


@pytest.mark.parametrize("path,episodes,terminated,truncated", [
    (CARTPOLE, 50, 50, 0), (MOUNTAINCAR, 20, 10, 10)])
def test_committed_samples_load_with_their_spec(path, episodes, terminated, truncated):
    assert path.stat().st_size < 200_000
    frame = rewardlab.load(path)
    spec = attached(frame)
    assert spec == recording_spec(frame.schema["obs"].size, "float32")
    spec.validate(frame)
    ends = episode_ends(frame)
    assert ends["episode_id"].to_list() == list(range(episodes))
    assert int(ends["terminated"].sum()) == terminated and int(ends["truncated"].sum()) == truncated
    assert (ends["terminated"] ^ ends["truncated"]).all() and not ends["mid_flag"].any()
    assert "Gymnasium 1.4.0" in spec.description
    assert "Gymnasium 1.4.0" in (GYM / "README.md").read_text()


def test_mountaincar_sample_ends_both_ways_and_replays_in_the_real_env():
    frame = rewardlab.load(MOUNTAINCAR)
    ends = episode_ends(frame)
    assert set(ends.filter(pl.col("truncated"))["length"].to_list()) == {200}  # the time limit
    # two episodes reached the flag on the 200th step: Gymnasium flagged it both ways, recorded as terminated
    assert (ends.filter(pl.col("terminated"))["length"] <= 200).all()
    assert ends.filter(pl.col("terminated") & (pl.col("length") == 200)).height == 2
    env = gymnasium.make("MountainCar-v0")
    for episode in (0, 1, int(ends.filter(pl.col("terminated"))["episode_id"][0])):
        steps = frame.filter(pl.col("episode_id") == episode)
        obs, _ = env.reset(seed=100 + episode)
        for row in steps.iter_rows(named=True):
            assert obs.tolist() == row["obs"]
            obs, reward, terminated, truncated, _ = env.step(row["action"])
            assert (reward, terminated, truncated and not terminated) == (
                row["reward_recorded"], row["terminated"], row["truncated"])
            assert row["done_recorded"] == (terminated or truncated)


def test_the_script_records_the_committed_samples(tmp_path):
    import importlib.util

    spec = importlib.util.spec_from_file_location("record_samples", ROOT / "scripts" / "record_samples.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    module.main(["--out", str(tmp_path)])
    for name in ("cartpole_random.parquet", "mountaincar_scripted.parquet"):
        assert rewardlab.load(tmp_path / name).equals(rewardlab.load(GYM / name))


def test_gymnasium_is_optional_until_record_runs():
    import subprocess
    import sys

    code = (
        "import sys, builtins\n"
        "real = builtins.__import__\n"
        "def guard(name, *a, **k):\n"
        "    if name.split('.')[0] == 'gymnasium':\n"
        "        raise ImportError('No module named ' + name)\n"
        "    return real(name, *a, **k)\n"
        "builtins.__import__ = guard\n"
        "import rewardlab\n"
        "record = rewardlab.record\n"
        "try:\n"
        "    record(object(), print, episodes=1, seed=0)\n"
        "except ImportError as exc:\n"
        "    print(exc)\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT)
    assert out.returncode == 0, out.stderr
    from rewardlab.core.extras import missing_extra

    assert out.stdout.strip() == str(missing_extra("rewardlab.record", "Gymnasium", "gym"))
