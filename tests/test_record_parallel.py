"""rewardlab.record_parallel: PettingZoo parallel environments recorded into joint step tables (one row per
episode, step and agent, N+1 final rows per agent), and the committed MPE simple_spread recording."""

from __future__ import annotations

import hashlib
import importlib.util
import os
import re
import subprocess
import sys

import numpy as np
import polars as pl
import pytest

from conftest import ROOT

_MISSING = [m for m in ("pettingzoo", "mpe2") if importlib.util.find_spec(m) is None]
if _MISSING:  # the optional pettingzoo extra
    _MESSAGE = (f"the PettingZoo recorder's tests need the pettingzoo extra ({', '.join(_MISSING)} missing): "
                "pip install -e '.[pettingzoo]'")
    if os.environ.get("CI"):
        pytest.fail(f"CI is set but {_MESSAGE}", pytrace=False)
    pytest.skip(_MESSAGE, allow_module_level=True)

from gymnasium import spaces  # noqa: E402
from mpe2 import simple_spread_v3  # noqa: E402
from pettingzoo import ParallelEnv  # noqa: E402

from rewardlab.core.errors import OutputExistsError, ParameterError  # noqa: E402
from rewardlab.core.spec import attached  # noqa: E402
from rewardlab.sources.pettingzoo.recorder import COLUMNS, agent_ids, record_parallel  # noqa: E402
from rewardlab.sources.steps import load_steps  # noqa: E402

DATA = ROOT / "data" / "pettingzoo"
SPREAD = DATA / "simple_spread.parquet"


def load_script():
    spec = importlib.util.spec_from_file_location("make_simple_spread", ROOT / "scripts" / "make_simple_spread.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def random_policy(obs, agent, rng):
    return int(rng.integers(5))


def replay(frame: pl.DataFrame, make_env, seed: int) -> None:
    """Re-run every episode of ``frame`` on a fresh environment with the recorded actions (a plain loop) and
    check observations, rewards, flags and final observations row by row."""
    env = make_env()
    for episode in frame["episode_id"].unique().sort().to_list():
        rows = frame.filter(pl.col("episode_id") == episode)
        observations, _ = env.reset(seed=seed + episode)
        for t in range(int(rows.filter(~pl.col("final"))["t"].max()) + 1):
            step = rows.filter((pl.col("t") == t) & ~pl.col("final")).sort("agent_id")
            assert step["agent"].to_list() == sorted(env.agents, key=env.possible_agents.index)
            for row in step.iter_rows(named=True):
                assert row["obs"] == np.asarray(observations[row["agent"]], np.float32).tolist()
            observations, rewards, terms, truncs, _ = env.step(dict(zip(step["agent"], step["action"])))
            for row in step.iter_rows(named=True):
                agent = row["agent"]
                assert row["reward"] == rewards[agent]
                assert row["terminated"] == terms[agent]
                assert row["truncated"] == (truncs[agent] and not terms[agent])
            for row in rows.filter((pl.col("t") == t + 1) & pl.col("final")).iter_rows(named=True):
                assert row["obs"] == np.asarray(observations[row["agent"]], np.float32).tolist()


# --------------------------------------------------------------------------
# recording simple_spread
# --------------------------------------------------------------------------


def spread(local_ratio=0.5, max_cycles=6, n=3):
    return simple_spread_v3.parallel_env(N=n, local_ratio=local_ratio, max_cycles=max_cycles)


def test_recorded_rewards_equal_the_environments_on_a_rerun():
    make = lambda: spread(max_cycles=12)  # noqa: E731
    frame = record_parallel(make(), load_script().NearestLandmark(3, 0.25), episodes=3, seed=21)
    assert frame.columns == list(COLUMNS)
    # agents collide on some steps, so their rewards differ there: a reward recorded for the wrong agent shows
    differing = frame.filter(~pl.col("final")).group_by("episode_id", "t").agg(pl.col("reward").n_unique() > 1)
    assert differing["reward"].any()
    replay(frame, make, 21)


def test_the_committed_recording_replays_in_mpe2():
    replay(pl.read_parquet(SPREAD), lambda: load_script().make_env(), 0)


def test_rewards_are_the_global_and_local_parts_mixed_by_local_ratio():
    script = load_script()
    committed = pl.read_parquet(SPREAD).filter(~pl.col("final"))
    env = spread(local_ratio=0.3, max_cycles=8)
    fresh = record_parallel(env, script.NearestLandmark(3, 0.25), episodes=4, seed=2,
                            step_columns=script.reward_parts(env)).filter(~pl.col("final"))
    for frame, ratio in ((committed, script.LOCAL_RATIO), (fresh, 0.3)):
        g, local, reward = (frame[c].to_numpy() for c in ("global_reward", "local_reward", "reward"))
        assert (reward == g * (1 - ratio) + local * ratio).all()  # mpe2's own float64 expression, bit for bit
        # the global part is shared by every agent of a step; the local part counts collisions (-1 each)
        per_step = frame.group_by("episode_id", "t").agg(pl.col("global_reward").n_unique())
        assert (per_step["global_reward"] == 1).all()
        assert set(np.unique(local)) <= {0.0, -1.0, -2.0}
    assert (committed["local_reward"] < 0).sum() == 336  # collisions happen: the two parts differ


def test_the_global_part_is_minus_the_landmarks_distances_to_their_nearest_agent():
    # independent of mpe2's code: recompute it from the observations after each step (the next row of every
    # agent: each observation holds the agent's position and the landmarks' positions relative to it)
    frame = pl.read_parquet(SPREAD)
    after = frame.with_columns(pl.col("t") - 1).filter(pl.col("t") >= 0).sort("episode_id", "t", "agent_id")
    steps = frame.filter(~pl.col("final")).sort("episode_id", "t", "agent_id")
    obs = np.stack(after["obs"].to_numpy()).astype(np.float64).reshape(-1, 3, 18)
    positions = obs[:, :, 2:4]  # (steps, agents, 2)
    landmarks = positions[:, :1, :] + obs[:, :1, 4:10].reshape(-1, 3, 2)  # from agent 0's view
    distances = np.linalg.norm(positions[:, None, :, :] - landmarks[:, :, None, :], axis=-1)
    expected = -distances.min(axis=2).sum(axis=1)
    recorded = steps["global_reward"].to_numpy().reshape(-1, 3)[:, 0]
    np.testing.assert_allclose(recorded, expected, rtol=0, atol=1e-5)  # float32 observations


def test_the_committed_recording_regenerates_identically(tmp_path):
    script = load_script()
    script.main(["--out", str(tmp_path)])
    digest = hashlib.sha256((tmp_path / script.NAME).read_bytes()).hexdigest()
    assert digest == hashlib.sha256(SPREAD.read_bytes()).hexdigest()
    readme = (DATA / "README.md").read_text()
    assert f"`{digest}`" in readme
    for stated in ("pettingzoo 1.27.0", "mpe2 1.1.1", "local_ratio=0.5", "N=3", "max_cycles=25",
                   "global part x (1 - local_ratio) + local part x local_ratio"):
        assert stated in readme
    assert SPREAD.stat().st_size < 1_000_000


def test_the_committed_recordings_layout_and_the_steps_source_reading_it():
    raw = pl.read_parquet(SPREAD)
    assert raw.columns == list(COLUMNS) + ["global_reward", "local_reward"]
    assert raw.schema["obs"] == pl.Array(pl.Float32, 18) and raw.schema["action"] == pl.Int64
    assert raw.height == 40 * 26 * 3
    assert raw.equals(raw.sort("episode_id", "t", "agent_id"))
    assert raw.select(pl.col("agent").str.replace("agent_", "").cast(pl.Int64) == pl.col("agent_id")).to_series().all()
    finals = raw.filter(pl.col("final"))
    assert finals.height == 120 and set(finals["t"]) == {25}
    empty = finals.select(pl.exclude("episode_id", "t", "agent_id", "agent", "final", "obs").null_count())
    assert empty.row(0) == (120,) * 6 and finals["obs"].null_count() == 0  # no action, reward, flags, parts
    steps = raw.filter(~pl.col("final"))
    assert steps.null_count().sum_horizontal().item() == 0
    assert steps.filter(pl.col("t") == 24)["truncated"].all() and not steps["terminated"].any()
    loaded = load_steps(SPREAD)
    spec = attached(loaded)
    assert spec.agent == "agent_id" and spec.episode == ("episode_id", "agent_id")
    assert spec.states[0].final == "final_obs"
    # each agent's final row became its last step's final state
    ordered = loaded.sort("episode_id", "agent_id", "t")
    assert ordered["reward_recorded"].to_list() == steps.sort("episode_id", "agent_id", "t")["reward"].to_list()
    lasts = ordered.filter(pl.col("final_obs").is_not_null())
    assert lasts["t"].to_list() == [24] * 120
    assert lasts["final_obs"].to_list() == finals.sort("episode_id", "agent_id")["obs"].to_list()


def test_the_joint_view_of_the_committed_recording():
    if importlib.util.find_spec("rewardlab.analysis.joint") is None:
        pytest.skip("the joint view (rewardlab/analysis/joint.py) is not there yet")
    import rewardlab
    from rewardlab.analysis.joint import joint_view

    view = joint_view(rewardlab.load(SPREAD))
    assert view.agents == (0, 1, 2) and view.actions.shape == (1000, 3)
    g, local, reward = (view.extras[c] for c in ("global_reward", "local_reward", "reward_recorded"))
    assert (g == g[:, :1]).all()  # one global part per joint step
    assert (reward == g * 0.5 + local * 0.5).all()
    steps = pl.read_parquet(SPREAD).filter(~pl.col("final"))
    assert view.actions.reshape(-1).tolist() == steps["action"].to_list()  # joint steps in (episode, t) order


# --------------------------------------------------------------------------
# policies, seeds, limits, files
# --------------------------------------------------------------------------


def test_one_policy_per_agent_seeds_and_generators():
    seen = {}

    def noting(obs, agent, rng):
        seen.setdefault(agent, rng)
        return int(rng.integers(5))

    policies = {"agent_0": noting, "agent_1": noting, "agent_2": lambda obs, agent, rng: 0}
    frame = record_parallel(spread(), policies, episodes=2, seed=4)
    steps = frame.filter(~pl.col("final"))
    assert set(steps.filter(pl.col("agent") == "agent_2")["action"]) == {0}
    # agent k's generator in episode i is default_rng([seed, i, k]): agent 1's first action of episode 0
    assert steps.filter((pl.col("agent_id") == 1) & (pl.col("t") == 0))["action"].to_list()[0] == \
        int(np.random.default_rng([4, 0, 1]).integers(5))
    assert record_parallel(spread(), policies, episodes=2, seed=4).equals(frame)
    assert not record_parallel(spread(), policies, episodes=2, seed=5).equals(frame)
    # action spaces are seeded with seed + agent_id: sampling policies are reproducible
    env = spread()
    sampled = record_parallel(env, lambda obs, agent, rng: env.action_space(agent).sample(), episodes=1, seed=9)
    env = spread()
    assert record_parallel(env, lambda obs, agent, rng: env.action_space(agent).sample(), episodes=1,
                           seed=9).equals(sampled)


def test_max_steps_truncates_every_agent(tmp_path):
    frame = record_parallel(spread(max_cycles=25), random_policy, episodes=2, seed=0, max_steps=3)
    assert frame.filter(~pl.col("final"))["t"].max() == 2
    assert frame.filter(pl.col("t") == 2)["truncated"].to_list() == [True] * 6
    assert frame.filter(pl.col("final"))["t"].to_list() == [3] * 6


def test_write_refuse_and_overwrite(tmp_path):
    path = tmp_path / "spread.parquet"
    frame = record_parallel(spread(), random_policy, episodes=1, seed=0, path=path)
    assert pl.read_parquet(path).equals(frame)
    calls = []

    def counting(obs, agent, rng):
        calls.append(agent)
        return 0

    with pytest.raises(OutputExistsError, match="spread.parquet already exists; pass overwrite=True"):
        record_parallel(spread(), counting, episodes=1, seed=0, path=path)
    assert calls == []
    other = record_parallel(spread(), counting, episodes=1, seed=0, path=path, overwrite=True)
    assert pl.read_parquet(path).equals(other) and [p.name for p in tmp_path.iterdir()] == ["spread.parquet"]


# --------------------------------------------------------------------------
# agents that end at different steps, ids that are not the names' text order
# --------------------------------------------------------------------------


class Staggered(ParallelEnv):
    """Three agents named so that text order differs from possible_agents order; ``a_2`` terminates after step 1,
    the others are truncated after step 3.  The reward is ``10 * index + action + t``; observations (2,)."""

    metadata = {"name": "staggered"}

    def __init__(self, gone=None, no_reward=None, no_final_obs=False):
        self.possible_agents = ["b", "a_10", "a_2"]
        self.gone, self.no_reward, self.no_final_obs = gone, no_reward, no_final_obs

    def observation_space(self, agent):
        return spaces.Box(-100.0, 100.0, (2,), np.float64)

    def action_space(self, agent):
        return spaces.Discrete(3)

    def reset(self, seed=None, options=None):
        self.agents, self.t = list(self.possible_agents), 0
        return {a: self._obs(a) for a in self.agents}, {a: {} for a in self.agents}

    def _obs(self, agent):
        return np.array([self.possible_agents.index(agent), self.t], dtype=np.float64)

    def step(self, actions):
        self.t += 1
        rewards = {a: 10.0 * self.possible_agents.index(a) + actions[a] + self.t - 1 for a in actions}
        if self.no_reward is not None and self.t == 2:
            rewards.pop(self.no_reward)
        terms = {a: a == "a_2" and self.t == 2 for a in actions}
        truncs = {a: self.t == 4 for a in actions}
        obs = {a: self._obs(a) for a in actions if not (self.no_final_obs and (terms[a] or truncs[a]))}
        self.agents = [a for a in self.agents if not (terms[a] or truncs[a]) and a != self.gone]
        return obs, rewards, terms, truncs, {a: {} for a in actions}


def test_agents_ending_at_different_steps_get_their_own_final_rows(tmp_path):
    assert agent_ids(Staggered().possible_agents) == {"b": 0, "a_10": 1, "a_2": 2}
    path = tmp_path / "staggered.parquet"
    frame = record_parallel(Staggered(), lambda obs, agent, rng: 1, episodes=2, seed=0, path=path)
    ep = frame.filter(pl.col("episode_id") == 0)
    assert ep.select("t", "agent_id", "agent", "final").rows() == [
        (0, 0, "b", False), (0, 1, "a_10", False), (0, 2, "a_2", False),
        (1, 0, "b", False), (1, 1, "a_10", False), (1, 2, "a_2", False),
        (2, 0, "b", False), (2, 1, "a_10", False), (2, 2, "a_2", True),
        (3, 0, "b", False), (3, 1, "a_10", False),
        (4, 0, "b", True), (4, 1, "a_10", True)]
    steps = ep.filter(~pl.col("final"))
    assert steps["reward"].to_list() == [10.0 * i + 1 + t for i, t in steps.select("agent_id", "t").rows()]
    assert steps.filter(pl.col("agent") == "a_2")["terminated"].to_list() == [False, True]
    assert steps.filter(pl.col("t") == 3)["truncated"].to_list() == [True, True]
    assert ep.filter(pl.col("final"))["obs"].to_list() == [[2.0, 2.0], [0.0, 4.0], [1.0, 4.0]]
    # the steps source reads each agent's final row as its final state
    loaded = load_steps(path).filter(pl.col("episode_id") == 0)
    finals = loaded.filter(pl.col("final_obs").is_not_null()).sort("agent_id")
    assert finals.select("agent_id", "t").rows() == [(0, 3), (1, 3), (2, 1)]
    assert finals["final_obs"].to_list() == [[0.0, 4.0], [1.0, 4.0], [2.0, 2.0]]
    # an environment that returns no observation for an ending agent: its final row's obs is null
    lacking = record_parallel(Staggered(no_final_obs=True), lambda obs, agent, rng: 1, episodes=1, seed=0)
    assert lacking.filter(pl.col("final"))["obs"].to_list() == [None, None, None]


def test_environment_and_policy_errors():
    with pytest.raises(ParameterError, match=r"should keep an agent until it is terminated or truncated; at episode "
                                             r"0, step 0 agent 'b' left env.agents without either flag"):
        record_parallel(Staggered(gone="b"), lambda obs, agent, rng: 0, episodes=1, seed=0)
    with pytest.raises(ParameterError, match=r"should return a reward for every agent that acted; at episode 0, "
                                             r"step 1 it returned none for. Received 'a_10'"):
        record_parallel(Staggered(no_reward="a_10"), lambda obs, agent, rng: 0, episodes=1, seed=0)
    with pytest.raises(ParameterError, match=r"`policies` should return actions in the agent's action space "
                                             r"Discrete\(3\); at episode 0, step 0, agent 'a_10' it returned. "
                                             r"Received 7"):
        record_parallel(Staggered(), lambda obs, agent, rng: 7 if agent == "a_10" else 0, episodes=1, seed=0)
    with pytest.raises(ParameterError, match=r"`policies` should map every agent of env.possible_agents "
                                             r"\(b, a_10, a_2\) to a callable; missing: \['a_2'\]"):
        record_parallel(Staggered(), {"b": print, "a_10": print}, episodes=1, seed=0)
    with pytest.raises(ParameterError, match=r"`policies` should be one callable"):
        record_parallel(Staggered(), 3, episodes=1, seed=0)
    with pytest.raises(ParameterError, match=r"should be a PettingZoo parallel environment, not an AEC one.*"
                                             r"aec_to_parallel"):
        record_parallel(simple_spread_v3.env(), random_policy, episodes=1, seed=0)
    with pytest.raises(ParameterError, match=r"`step_columns` should not name one of the table's columns"):
        record_parallel(spread(), random_policy, episodes=1, seed=0, step_columns={"reward": print})
    with pytest.raises(ParameterError, match=r"`episodes` should be an int >= 1. Received 0."):
        record_parallel(spread(), random_policy, episodes=0, seed=0)
    mixed = Staggered()
    mixed.observation_space = lambda agent: spaces.Box(0.0, 1.0, (3 if agent == "b" else 2,), np.float64)
    with pytest.raises(ParameterError, match=re.escape("should give every agent observations of one flattened "
                                                       "size") + r".*pad_observations_v0"):
        record_parallel(mixed, random_policy, episodes=1, seed=0)


def test_gymnasium_spaces_are_needed_only_when_record_parallel_runs():
    code = (
        "import builtins\n"
        "real = builtins.__import__\n"
        "def guard(name, *a, **k):\n"
        "    if name.split('.')[0] == 'gymnasium':\n"
        "        raise ImportError('No module named ' + name)\n"
        "    return real(name, *a, **k)\n"
        "builtins.__import__ = guard\n"
        "from rewardlab.sources.pettingzoo.recorder import record_parallel\n"
        "try:\n"
        "    record_parallel(object(), print, episodes=1, seed=0)\n"
        "except ImportError as exc:\n"
        "    print(exc)\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT)
    assert out.returncode == 0, out.stderr
    from rewardlab.core.extras import missing_extra

    assert out.stdout.strip() == str(missing_extra("rewardlab.record_parallel", "Gymnasium", "pettingzoo"))
