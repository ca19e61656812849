"""Per-episode sums that do not depend on where an episode lies, and rank statistics that see ties (issue 23's
"rank statistics that are right"): the compensated kernel against a plain loop and math.fsum, episode returns
of identical episodes anywhere in a frame, and Spearman between a reward and the same reward scaled."""

from __future__ import annotations

import math

import numpy as np
import polars as pl
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import rewardlab
from conftest import ROOT
from rewardlab.analysis.compare import rankdata
from rewardlab.analysis.sums import TIE_RTOL, running_sums, segment_sums, tie_groups
from rewardlab.core.errors import ParameterError
from rewardlab.core.spec import FrameSpec, attach, attached


def loop_neumaier(values) -> float:
    """Neumaier's compensated sum, one value at a time in plain Python (the kernel's twin)."""
    total = carry = 0.0
    for x in values:
        t = total + x
        carry += (total - t) + x if abs(total) >= abs(x) else (x - t) + total
        total = t
    return total + carry


finite = st.floats(allow_nan=False, allow_infinity=False, min_value=-1e12, max_value=1e12)


@settings(max_examples=200, deadline=None)
@given(st.lists(finite, max_size=60), st.lists(st.integers(0, 60), max_size=8))
def test_segment_sums_equal_the_loop_and_stay_within_a_rounding_of_the_exact_sum(values, cuts):
    x = np.array(values, dtype=np.float64)
    starts = np.unique(np.array([0, *[c for c in cuts if c < max(len(values), 1)]], dtype=np.int64))
    if x.size == 0:
        starts = np.zeros(0, dtype=np.int64)
    got = segment_sums(x, starts)
    stops = np.append(starts[1:], x.size)
    for k, (a, b) in enumerate(zip(starts, stops)):
        seg = x[a:b].tolist()
        assert got[k] == loop_neumaier(seg)  # bit for bit: the same operations in the same order
        exact = math.fsum(seg)
        assert abs(got[k] - exact) <= 4 * np.spacing(abs(exact)) + 1e-30 + 2 * len(seg) * 1e-32 * sum(map(abs, seg))
    if x.size:
        run = running_sums(x)
        assert run[-1] == segment_sums(x, np.array([0]))[0]
        assert [run[i] for i in range(x.size)] == [loop_neumaier(values[:i + 1]) for i in range(x.size)]


def test_segment_sums_refuse_bad_starts():
    with pytest.raises(ParameterError, match="increase from 0"):
        segment_sums(np.ones(3), np.array([1, 2]))
    with pytest.raises(ParameterError, match="increase from 0"):
        segment_sums(np.ones(3), np.array([0, 2, 1]))
    with pytest.raises(ParameterError, match="start a segment at 0"):
        segment_sums(np.ones(3), np.zeros(0, dtype=np.int64))
    assert segment_sums(np.zeros(0), np.zeros(0, dtype=np.int64)).size == 0


def test_tie_groups_and_ranks_tie_values_equal_up_to_rounding():
    a = 0.1 + 0.2  # 0.30000000000000004, one unit in the last place above 0.3
    assert tie_groups(np.array([0.3, a, 0.3 + 1e-9])).tolist() == [True, False, True]
    assert tie_groups(np.array([1.0, 1.0 + 8 * np.finfo(float).eps, np.nan, np.nan])).tolist() == \
        [True, False, True, True]
    np.testing.assert_array_equal(rankdata(np.array([a, 0.3, 1.0, -1.0])), [2.5, 2.5, 4.0, 1.0])
    rng = np.random.default_rng(0)
    x = rng.integers(0, 5, 50).astype(float) * 0.1
    jittered = x * (1 + rng.choice([-1, 0, 1], 50) * TIE_RTOL / 4)
    np.testing.assert_array_equal(rankdata(jittered), rankdata(x))  # the same ties as the unjittered values


def identical_episodes_frame(copies: int, length: int, reward: float, *, padding: int) -> pl.DataFrame:
    """``copies`` episodes of the same rewards, after ``padding`` one-step episodes that shift their places."""
    ids = [*range(padding)] + [padding + e for e in range(copies) for _ in range(length)]
    rewards = [0.5] * padding + [reward] * (copies * length)
    last = [True] * padding + [t == length - 1 for _ in range(copies) for t in range(length)]
    return pl.DataFrame({"episode_id": ids, "reward_a": rewards, "done_a": last, "terminated": last})


SPEC = FrameSpec(name="walk", episode=("episode_id",), terminated="terminated")


@pytest.mark.parametrize("padding", [0, 1, 3, 7, 13])
def test_identical_episodes_have_identical_returns_wherever_they_lie(padding):
    reward = -1 / 15.513_027_4  # MountainCar's -1 over a normalization constant: not a dyadic number
    frame = identical_episodes_frame(12, 200, reward, padding=padding)
    table = rewardlab.episode_return_table(frame, ["a"], spec=SPEC)
    returns = table["a"].to_numpy()[padding:]
    assert np.unique(returns).size == 1
    assert returns[0] == loop_neumaier([reward] * 200)
    summary = rewardlab.episode_summary(frame, spec=SPEC)
    np.testing.assert_array_equal(summary["return_a"].to_numpy(), table["a"].to_numpy())
    values = rewardlab.scope_values(frame, "a", scope="episode_return", spec=SPEC)
    np.testing.assert_array_equal(values, table["a"].to_numpy())
    trajectories = rewardlab.trajectory_returns(frame, "a", spec=SPEC)
    np.testing.assert_array_equal(trajectories["return"].to_numpy(), table["a"].to_numpy())


def test_a_reward_and_the_same_reward_scaled_rank_alike():
    """notebook 06's case: `recorded` against `scale_recorded` had Pearson 1 but Spearman 0.97."""
    frame = rewardlab.load(ROOT / "data" / "gym" / "mountaincar_scripted.parquet")
    std = rewardlab.normalization_constants(frame, "recorded", scope="episode_return").std
    scaled = attach(frame.with_columns(reward_scaled=pl.col("reward_recorded") / std,
                                       done_scaled=pl.col("done_recorded")), attached(frame))
    comparison = rewardlab.compare_rewards(scaled, ["recorded", "scaled"])
    assert comparison.spearman[0, 1] == 1.0 and comparison.pearson[0, 1] == pytest.approx(1.0, abs=1e-12)
    table = rewardlab.episode_return_table(scaled, ["recorded", "scaled"])
    full = table.filter(pl.col("recorded") == -200.0)
    assert full.height >= 2 and full["scaled"].n_unique() == 1
    detail = rewardlab.episode_detail(scaled, {"episode_id": 0}, rewards=["scaled"])
    assert detail.returns["scaled"] == table["scaled"][0]  # the drill-down's running return ends on it
