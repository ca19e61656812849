"""Replays of Gymnasium NormalizeReward and SB3 VecNormalize against step-by-step loop references
and against the real classes (``gymnasium.wrappers.NormalizeReward``,
``stable_baselines3.common.vec_env.VecNormalize``), bit for bit."""

from __future__ import annotations

import math

import numpy as np
import polars as pl
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

from analysis_data import with_rewards
from rewardlab.core.errors import ParameterError
from rewardlab.analysis.normalizers import (
    gymnasium_normalize_reward, normalization_summary, normalized_rewards, running_mean_var,
    sb3_normalize_reward,
)
from rewardlab.analysis.stats import normalization_constants

# --------------------------------------------------------------------------
# loop references: the libraries' own float64 operations, in their order, in plain Python
# --------------------------------------------------------------------------


class LoopRunningMeanStd:
    """mean 0, var 1, count 1e-4; update(batch) merges the batch's moments (one value here)."""

    def __init__(self):
        self.mean, self.var, self.count = 0.0, 1.0, 1e-4

    def update(self, x: float):
        batch_mean, batch_var, batch_count = x, 0.0, 1
        delta = batch_mean - self.mean
        total = self.count + batch_count
        m2 = self.var * self.count + batch_var * batch_count + delta * delta * self.count * batch_count / total
        self.mean = self.mean + delta * batch_count / total
        self.var = m2 / total
        self.count = total


def gymnasium_loop(rewards, terminated, gamma, epsilon):
    rms, g, out, returns = LoopRunningMeanStd(), 0.0, [], []
    for r, term in zip(rewards, terminated):
        g = g * gamma * (1 - term) + r
        rms.update(g)
        returns.append(g)
        out.append(r / math.sqrt(rms.var + epsilon))
    return np.array(out), np.array(returns)


def sb3_loop(rewards, dones, gamma, epsilon, clip):
    rms, g, out, clipped = LoopRunningMeanStd(), 0.0, [], 0
    for r, done in zip(rewards, dones):
        g = g * gamma + r
        rms.update(g)
        x = r / math.sqrt(rms.var + epsilon)
        clipped += abs(x) > clip
        out.append(np.float32(min(max(x, -clip), clip)))  # VecNormalize hands float32 over
        if done:
            g = 0.0
    return np.array(out), clipped


def case(seed, n, p_done, scale):
    rng = np.random.default_rng(seed)
    r = np.where(rng.random(n) < 0.2, rng.normal(1.0, 1.0, n) * scale, 0.0)
    return r, rng.random(n) < p_done


CASES = [(0, 1, 0.0, 1.0), (1, 200, 0.05, 1.0), (2, 2000, 0.01, 1000.0), (3, 500, 0.5, 0.001), (4, 300, 0.0, 10.0)]


@pytest.mark.parametrize("gamma", [0.0, 0.9, 0.99, 1.0])
@pytest.mark.parametrize("seed,n,p_done,scale", CASES)
def test_gymnasium_replay_matches_loop(seed, n, p_done, scale, gamma):
    r, term = case(seed, n, p_done, scale)
    out = gymnasium_normalize_reward(r, term, gamma=gamma, epsilon=1e-8)
    ref, ref_returns = gymnasium_loop(r, term, gamma, 1e-8)
    np.testing.assert_array_equal(out.returns, ref_returns)
    np.testing.assert_array_equal(out.normalized, ref)
    assert out.normalized.dtype == np.float64
    assert not out.clipped.any()


@pytest.mark.parametrize("clip", [0.5, 3.0, 10.0])
@pytest.mark.parametrize("seed,n,p_done,scale", CASES)
def test_sb3_replay_matches_loop(seed, n, p_done, scale, clip):
    r, done = case(seed, n, p_done, scale)
    out = sb3_normalize_reward(r, done, gamma=0.99, epsilon=1e-8, clip_reward=clip)
    ref, clipped = sb3_loop(r, done, 0.99, 1e-8, clip)
    np.testing.assert_array_equal(out.normalized, ref)
    assert out.normalized.dtype == np.float32
    assert int(out.clipped.sum()) == clipped
    assert out.fraction_clipped == pytest.approx(clipped / n)
    assert np.abs(out.normalized).max() <= clip


@settings(max_examples=60, deadline=None)
@given(hnp.arrays(np.float64, st.integers(1, 60), elements=st.floats(-1e3, 1e3)), st.data(),
       st.floats(0.0, 1.0))
def test_replays_hypothesis(r, data, gamma):
    flags = data.draw(hnp.arrays(np.bool_, r.shape[0]))
    ref, _ = gymnasium_loop(r, flags, gamma, 1e-8)
    np.testing.assert_array_equal(gymnasium_normalize_reward(r, flags, gamma=gamma).normalized, ref)
    ref, _ = sb3_loop(r, flags, gamma, 1e-8, 10.0)
    np.testing.assert_array_equal(sb3_normalize_reward(r, flags, gamma=gamma).normalized, ref)


def test_replay_is_exact_where_the_closed_form_rounds():
    """A case where the vectorized closed form was 1.1e-7 relative off the loop: the replay is exact."""
    r = np.array([7.8125e-03, 7.8125e-03, 4.3900e+02, 7.8125e-03, 7.8125e-03])
    flags = np.zeros(5, dtype=bool)
    ref, _ = gymnasium_loop(r, flags, 1.0, 1e-8)
    np.testing.assert_array_equal(gymnasium_normalize_reward(r, flags, gamma=1.0).normalized, ref)


def test_running_mean_var_matches_loop_with_large_offset():
    x = 1e6 + np.random.default_rng(5).normal(size=5000)
    mean, var = running_mean_var(x)
    rms = LoopRunningMeanStd()
    ref_mean, ref_var = [], []
    for v in x:
        rms.update(v)
        ref_mean.append(rms.mean)
        ref_var.append(rms.var)
    np.testing.assert_allclose(mean, ref_mean, rtol=1e-12)
    np.testing.assert_allclose(var, ref_var, rtol=1e-6)


def test_reset_semantics_differ_between_libraries():
    r = np.array([1.0, 1.0, 1.0])
    flags = np.array([False, True, False])
    # Gymnasium: the terminated step itself drops the carried sum
    assert gymnasium_normalize_reward(r, flags, gamma=1.0).returns.tolist() == [1.0, 1.0, 2.0]
    # SB3: the sum is zeroed after the done step
    assert sb3_normalize_reward(r, flags, gamma=1.0).returns.tolist() == [1.0, 2.0, 1.0]


def test_validation_messages():
    with pytest.raises(ParameterError, match=r"`epsilon` should be > 0. Received 0.0."):
        gymnasium_normalize_reward(np.zeros(2), np.zeros(2, bool), epsilon=0.0)
    with pytest.raises(ParameterError, match=r"`clip_reward` should be > 0. Received -1.0."):
        sb3_normalize_reward(np.zeros(2), np.zeros(2, bool), clip_reward=-1.0)
    with pytest.raises(ParameterError, match=r"`terminated` should have shape \[2\]"):
        gymnasium_normalize_reward(np.zeros(2), np.zeros(1, bool))


# --------------------------------------------------------------------------
# frame layer
# --------------------------------------------------------------------------


@pytest.fixture(scope="module")
def frame(sample_frame):
    return with_rewards(sample_frame)


def test_normalized_rewards_frame_layer(frame):
    c = normalization_constants(frame, "points", scope="end_of_game")
    out = normalized_rewards(frame, "points", constants=c, clip_reward=5.0)
    assert out.columns == ["raw", "constants", "gymnasium", "sb3", "sb3_clipped"]
    raw = frame["reward_points"].to_numpy()
    eog = frame["end_of_game"].to_numpy()
    np.testing.assert_allclose(out["constants"].to_numpy()[eog], (raw[eog] - c.mean) / c.std)
    np.testing.assert_array_equal(out["constants"].to_numpy()[~eog], raw[~eog])
    ref, _ = gymnasium_loop(raw, frame["done_points"].to_numpy(), 0.99, 1e-8)
    np.testing.assert_array_equal(out["gymnasium"].to_numpy(), ref)
    summary = normalization_summary(out)
    assert summary["method"].to_list() == ["raw", "constants", "gymnasium", "sb3"]
    sb3 = summary.filter(pl.col("method") == "sb3").row(0, named=True)
    assert sb3["fraction_clipped"] == pytest.approx(out["sb3_clipped"].mean())
    assert sb3["max"] <= 5.0
    on_scope = out.filter(pl.Series(eog))["constants"]
    assert on_scope.mean() == pytest.approx(0.0, abs=1e-12)
    assert on_scope.std(ddof=0) == pytest.approx(1.0, rel=1e-12)


def test_episode_return_constants_cannot_be_applied_per_step(frame):
    c = normalization_constants(frame, "points", scope="episode_return")
    with pytest.raises(ParameterError, match=r"`constants` should have a per-step scope"):
        normalized_rewards(frame, "points", constants=c)
    with pytest.raises(ParameterError, match=r"`normalized` should be the frame normalized_rewards\(\) returns"):
        normalization_summary(frame)


# --------------------------------------------------------------------------
# the real classes: Gymnasium's NormalizeReward and SB3's VecNormalize, bit for bit
# --------------------------------------------------------------------------

import gymnasium  # noqa: E402  (test dependencies, pinned in the test extra)
from gymnasium import spaces  # noqa: E402
from gymnasium.wrappers import NormalizeReward  # noqa: E402
from stable_baselines3.common.vec_env import DummyVecEnv, VecNormalize  # noqa: E402

import rewardlab  # noqa: E402
from conftest import ROOT  # noqa: E402
from rewardlab.core.spec import attached  # noqa: E402

RECORDINGS = {name: ROOT / "data" / "gym" / f"{name}.parquet" for name in ("cartpole_random", "mountaincar_scripted")}


class RecordedRewards(gymnasium.Env):
    """Hands back a recorded stream step by step: its reward, terminated and truncated flags.

    The caller resets it after each episode end (as a training loop or ``DummyVecEnv`` does); the
    stream goes on where it was.
    """

    observation_space = spaces.Box(-1.0, 1.0, (1,), np.float32)
    action_space = spaces.Discrete(1)

    def __init__(self, reward, terminated, truncated):
        self.reward, self.terminated, self.truncated = reward, terminated, truncated
        self.t = 0

    def reset(self, *, seed=None, options=None):
        super().reset(seed=seed)
        return np.zeros(1, np.float32), {}

    def step(self, action):
        t = self.t
        self.t += 1
        return (np.zeros(1, np.float32), float(self.reward[t]), bool(self.terminated[t]),
                bool(self.truncated[t]), {})


def real_gymnasium(reward, terminated, truncated, gamma, epsilon):
    """What ``NormalizeReward`` hands the agent over the stream, and the wrapper at the end."""
    env = NormalizeReward(RecordedRewards(reward, terminated, truncated), gamma=gamma, epsilon=epsilon)
    env.reset(seed=0)
    out = []
    for _ in range(len(reward)):
        _, r, term, trunc, _ = env.step(0)
        out.append(r)
        if term or trunc:
            env.reset()
    return np.array(out, dtype=np.float64), env


def real_sb3(reward, terminated, truncated, gamma, epsilon, clip):
    """What ``VecNormalize`` over a ``DummyVecEnv`` hands the agent, and the wrapper at the end."""
    venv = VecNormalize(DummyVecEnv([lambda: RecordedRewards(reward, terminated, truncated)]), norm_obs=False,
                        norm_reward=True, gamma=gamma, epsilon=epsilon, clip_reward=clip)
    venv.reset()
    out = [venv.step(np.zeros(1, dtype=np.int64))[1] for _ in range(len(reward))]
    return np.concatenate(out), venv


def recorded_stream(name):
    frame = rewardlab.load(RECORDINGS[name])
    return (frame["reward_recorded"].to_numpy(), frame["terminated"].to_numpy(), frame["truncated"].to_numpy())


def random_stream(seed, episodes=40):
    """Episodes of random lengths ending terminated, truncated or both (as a TimeLimit can), varied rewards."""
    rng = np.random.default_rng(seed)
    reward, term, trunc = [], [], []
    for _ in range(episodes):
        n = int(rng.integers(1, 60))
        r = np.where(rng.random(n) < 0.5, rng.normal(0.3, 2.0, n) * 10.0 ** rng.integers(-3, 4), 0.0)
        how = rng.choice(["terminated", "truncated", "both"], p=[0.45, 0.45, 0.1])
        reward += r.tolist()
        term += [False] * (n - 1) + [how in ("terminated", "both")]
        trunc += [False] * (n - 1) + [how in ("truncated", "both")]
    return np.array(reward), np.array(term), np.array(trunc)


STREAMS = {"cartpole_random": lambda: recorded_stream("cartpole_random"),
           "mountaincar_scripted": lambda: recorded_stream("mountaincar_scripted"),
           "mountaincar_then_cartpole": lambda: tuple(np.concatenate(pair) for pair in zip(
               recorded_stream("mountaincar_scripted"), recorded_stream("cartpole_random"))),
           "random_0": lambda: random_stream(0), "random_1": lambda: random_stream(1)}


@pytest.mark.parametrize("gamma,epsilon", [(0.99, 1e-8), (0.9, 1e-4), (1.0, 1e-8), (0.0, 1e-8)])
@pytest.mark.parametrize("stream", list(STREAMS))
def test_gymnasium_replay_equals_normalize_reward_bit_for_bit(stream, gamma, epsilon):
    reward, term, trunc = STREAMS[stream]()
    assert stream == "cartpole_random" or (term.any() and trunc.any())  # episodes end both ways
    real, wrapper = real_gymnasium(reward, term, trunc, gamma, epsilon)
    out = gymnasium_normalize_reward(reward, term, gamma=gamma, epsilon=epsilon)
    np.testing.assert_array_equal(out.normalized, real)
    assert out.returns[-1] == wrapper.discounted_reward[0] and out.var[-1] == wrapper.return_rms.var
    assert out.normalized.dtype == real.dtype


@pytest.mark.parametrize("gamma,epsilon,clip", [(0.99, 1e-8, 10.0), (0.9, 1e-4, 1.0), (1.0, 1e-8, 10.0),
                                                (0.0, 1e-8, 0.5)])
@pytest.mark.parametrize("stream", list(STREAMS))
def test_sb3_replay_equals_vec_normalize_bit_for_bit(stream, gamma, epsilon, clip):
    reward, term, trunc = STREAMS[stream]()
    real, venv = real_sb3(reward, term, trunc, gamma, epsilon, clip)
    # DummyVecEnv stores the rewards as float32 before VecNormalize sees them
    out = sb3_normalize_reward(reward.astype(np.float32), term | trunc, gamma=gamma, epsilon=epsilon,
                               clip_reward=clip)
    assert real.dtype == out.normalized.dtype == np.float32
    np.testing.assert_array_equal(out.normalized, real)
    assert out.var[-1] == venv.ret_rms.var


def test_truncation_carries_gymnasiums_running_return_but_resets_sb3s():
    """A truncated episode's running return flows into the next episode in Gymnasium only."""
    reward = np.array([1.0, 1.0, 1.0, 1.0])
    term = np.array([False, False, False, True])
    trunc = np.array([False, True, False, False])
    real, _ = real_gymnasium(reward, term, trunc, 0.5, 1e-8)
    out = gymnasium_normalize_reward(reward, term, gamma=0.5)
    np.testing.assert_array_equal(out.normalized, real)
    assert out.returns.tolist() == [1.0, 1.5, 1.75, 1.0]  # through the truncation; the terminated step drops it
    real, _ = real_sb3(reward, term, trunc, 0.5, 1e-8, 10.0)
    out = sb3_normalize_reward(reward, term | trunc, gamma=0.5)
    np.testing.assert_array_equal(out.normalized, real)
    assert out.returns.tolist() == [1.0, 1.5, 1.0, 1.5]


def _recorded_reward_frame(*names):
    frames = [rewardlab.load(RECORDINGS[n]) for n in names]
    spec = attached(frames[0]).project(["episode_id", "t", "reward_recorded", "done_recorded", "terminated",
                                        "truncated"])
    offset, parts = 0, []
    for f in frames:  # the observations differ in width: the replays need only rewards and flags
        parts.append(f.drop("obs", "final_obs", "action").with_columns(pl.col("episode_id") + offset))
        offset += f["episode_id"].max() + 1
    return pl.concat(parts), spec  # a recording holds the candidate "recorded": reward_recorded, done_recorded


@pytest.mark.parametrize("names", [("mountaincar_scripted",), ("mountaincar_scripted", "cartpole_random")])
def test_normalized_rewards_of_a_recording_equal_the_real_classes(names):
    frame, spec = _recorded_reward_frame(*names)
    out = normalized_rewards(frame, "recorded", gamma=0.95, epsilon=1e-6, clip_reward=2.0, spec=spec)
    reward, term, trunc = (frame[c].to_numpy() for c in ("reward_recorded", "terminated", "truncated"))
    np.testing.assert_array_equal(out["gymnasium"].to_numpy(), real_gymnasium(reward, term, trunc, 0.95, 1e-6)[0])
    sb3 = real_sb3(reward, term, trunc, 0.95, 1e-6, 2.0)[0]
    np.testing.assert_array_equal(out["sb3"].to_numpy(), sb3.astype(np.float64))
    assert out["sb3_clipped"].to_list() == (np.abs(sb3) >= 2.0).tolist()


def test_normalized_rewards_treat_an_end_flagged_both_ways_as_terminated():
    """A frame that flags one step both terminated and truncated (not validated): Gymnasium resets there."""
    from rewardlab.core.spec import FrameSpec

    spec = FrameSpec(name="both", episode=("episode_id",), terminated="terminated", truncated="truncated")
    frame = pl.DataFrame({"episode_id": [0, 0, 1, 1, 2, 2], "reward_a": [1.0, 2.0, 3.0, 4.0, 5.0, 6.0],
                          "terminated": [False, True, False, True, False, False],
                          "truncated": [False, False, False, True, False, True]}).with_columns(
        done_a=pl.col("terminated") | pl.col("truncated"))
    reward, term, trunc = (frame[c].to_numpy() for c in ("reward_a", "terminated", "truncated"))
    out = normalized_rewards(frame, "a", spec=spec)
    np.testing.assert_array_equal(out["gymnasium"].to_numpy(), real_gymnasium(reward, term, trunc, 0.99, 1e-8)[0])
    np.testing.assert_array_equal(out["sb3"].to_numpy(), real_sb3(reward, term, trunc, 0.99, 1e-8, 10.0)[0])


def test_normalize_reward_over_the_real_mountaincar_equals_the_replay_of_its_recording():
    """The real environment, wrapped, replaying the recorded actions from the recorded reset seeds."""
    frame = rewardlab.load(RECORDINGS["mountaincar_scripted"])
    env = NormalizeReward(gymnasium.make("MountainCar-v0"), gamma=0.99, epsilon=1e-8)
    handed = []
    for episode, steps in frame.group_by("episode_id", maintain_order=True):
        env.reset(seed=100 + episode[0])
        for action in steps["action"]:
            handed.append(env.step(action)[1])
    out = gymnasium_normalize_reward(frame["reward_recorded"].to_numpy(), frame["terminated"].to_numpy())
    np.testing.assert_array_equal(out.normalized, np.array(handed, dtype=np.float64))


def test_compile_all_builds_the_variants_the_frame_layer_uses():
    """``make`` compiles the replays once; the frame layer (read-only Polars views) must find them built."""
    import subprocess
    import sys

    code = ("import polars as pl\n"
            "from rewardlab.analysis.replay_kernels import gymnasium_replay, sb3_replay, compile_all\n"
            "from rewardlab.analysis.normalizers import normalized_rewards\n"
            "compile_all()\n"
            "before = (len(gymnasium_replay.signatures), len(sb3_replay.signatures))\n"
            "normalized_rewards(pl.DataFrame({'reward_a': [0.0, 4.0], 'done_a': [False, True]}), 'a')\n"
            "print(before == (len(gymnasium_replay.signatures), len(sb3_replay.signatures)))\n")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "True"


def test_a_session_reusing_its_running_replays_gives_what_normalized_rewards_gives(sample_frame):
    """The session keeps the running replays while only the scope changes; the table must not change."""
    from polars.testing import assert_frame_equal

    from rewardlab.analysis.normalizers import constants_column
    from rewardlab.analysis.stats import normalization_constants
    from rewardlab.domains.mahjong.families import Points
    from rewardlab.sessions import NormalizationSession

    frame = Points.from_preset("thousands").with_columns(sample_frame, "points")
    s = NormalizationSession(frame, reward="points", scope="all")
    for scope in ("end_of_round", "all", "end_of_game", "episode_return", "all"):
        s.update(scope=scope)
        c = normalization_constants(frame, "points", scope=scope)
        per_step = None if scope == "episode_return" else c
        assert_frame_equal(s.results.replays, normalized_rewards(frame, "points", constants=per_step))
        if per_step is not None:
            assert np.array_equal(constants_column(frame, "points", c), s.results.replays["constants"].to_numpy())
