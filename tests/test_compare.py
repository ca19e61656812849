"""Comparing candidates: ranks and correlations against loops, EPIC distance, disagreements, step differences."""

from __future__ import annotations

import math

import numpy as np
import polars as pl
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

from analysis_data import rewards_table, with_rewards
from rewardlab.analysis.compare import (
    compare_rewards, correlation_matrix, pearson_distance, episode_return_table, most_disagreeing_episodes,
    rankdata, step_difference,
)
from rewardlab.core.errors import ColumnNotFoundError, ParameterError


def rankdata_loop(x):
    """Average ranks, one value at a time."""
    out = []
    for v in x:
        below = sum(1 for u in x if u < v)
        equal = sum(1 for u in x if u == v)
        out.append(below + (equal + 1) / 2.0)
    return np.array(out)


def pearson_loop(a, b):
    n = len(a)
    ma, mb = sum(a) / n, sum(b) / n
    cov = sum((x - ma) * (y - mb) for x, y in zip(a, b))
    va = sum((x - ma) ** 2 for x in a)
    vb = sum((y - mb) ** 2 for y in b)
    return cov / math.sqrt(va * vb)


@settings(max_examples=80, deadline=None)
@given(hnp.arrays(np.float64, st.integers(1, 40), elements=st.sampled_from([-2.0, -1.0, 0.0, 0.5, 1.0, 3.0])))
def test_rankdata_matches_loop(x):
    np.testing.assert_allclose(rankdata(x), rankdata_loop(list(x)))


@pytest.mark.parametrize("seed", range(4))
def test_correlations_match_loops(seed):
    rng = np.random.default_rng(seed)
    base = rng.normal(size=200)
    x = np.column_stack([base, 2 * base + rng.normal(size=200), np.round(base), rng.normal(size=200)])
    pearson = correlation_matrix(x)
    spearman = correlation_matrix(x, method="spearman")
    for i in range(4):
        for j in range(4):
            assert pearson[i, j] == pytest.approx(pearson_loop(list(x[:, i]), list(x[:, j])), abs=1e-12)
            ri, rj = rankdata_loop(list(x[:, i])), rankdata_loop(list(x[:, j]))
            assert spearman[i, j] == pytest.approx(pearson_loop(list(ri), list(rj)), abs=1e-12)


def test_constant_column_has_undefined_correlation():
    rho = correlation_matrix(np.array([[1.0, 5.0], [2.0, 5.0], [3.0, 5.0]]))
    assert rho[0, 0] == 1.0 and rho[1, 1] == 1.0 and math.isnan(rho[0, 1])
    with pytest.raises(ParameterError, match=r"`method` should be one of 'pearson', 'spearman'"):
        correlation_matrix(np.zeros((2, 2)), method="kendall")


def test_pearson_distance_values():
    np.testing.assert_allclose(pearson_distance(np.array([1.0, 0.0, -1.0])), [0.0, math.sqrt(0.5), 1.0])
    assert pearson_distance(1.0000000002) == 0.0  # rounding above 1 is clipped


@pytest.fixture(scope="module")
def frame(sample_frame):
    return with_rewards(sample_frame).with_columns(
        reward_scaled=pl.col("reward_points") * 3.0 + pl.col("end_of_game").cast(pl.Float64) * 2.0,
        done_scaled=pl.col("end_of_game"),
    )


def test_episode_return_table(frame):
    t = episode_return_table(frame)
    assert t.columns == ["episode", "game_id", "seat", "top", "points", "delta", "scaled"]
    assert t.height == int(frame["end_of_game"].sum())
    ends = frame.filter(pl.col("end_of_game"))
    np.testing.assert_allclose(t["points"].to_numpy(), ends["reward_points"].to_numpy())
    # per-round candidate summed over the player's whole game
    np.testing.assert_allclose(t["delta"].to_numpy(), t["points"].to_numpy(), atol=1e-9)
    # a rewards table gives the same table
    assert episode_return_table(rewards_table(frame)).select("top", "points").equals(t.select("top", "points"))


def test_compare_rewards(frame):
    cmp = compare_rewards(frame, ["top", "points", "scaled"])
    assert cmp.names == ("top", "points", "scaled") and cmp.episodes == int(frame["end_of_game"].sum())
    i, j = cmp.names.index("points"), cmp.names.index("scaled")
    assert cmp.pearson[i, j] == pytest.approx(1.0) and cmp.pearson_distance[i, j] == pytest.approx(0.0, abs=1e-6)
    assert cmp.spearman[i, j] == pytest.approx(1.0)
    pairs = cmp.pairs()
    assert pairs.height == 3 and pairs.columns == ["a", "b", "pearson", "spearman", "pearson_distance"]
    assert not hasattr(cmp, "epic") and "epic" not in pairs.columns  # not EPIC: no name that says so
    np.testing.assert_allclose(pairs["pearson_distance"].to_numpy(), np.sqrt((1 - pairs["pearson"].to_numpy()) / 2))
    m = cmp.matrix("spearman")
    assert m.columns == ["reward", "top", "points", "scaled"] and m.height == 3
    # the returns table can be passed directly
    again = compare_rewards(episode_return_table(frame), ["top", "points"])
    assert again.pearson[0, 1] == pytest.approx(cmp.pearson[0, 1])
    with pytest.raises(ParameterError, match=r"`rewards` should name at least two candidates"):
        compare_rewards(frame, ["top"])
    with pytest.raises(ColumnNotFoundError, match=r"'nope' not found"):
        compare_rewards(episode_return_table(frame), ["top", "nope"])


def test_most_disagreeing_episodes():
    t = pl.DataFrame({
        "game_id": ["a"] * 2 + ["b"] * 2 + ["c"] * 2 + ["d"] * 2, "seat": [0] * 8, "step": [0, 1] * 4,
        "reward_x": [0.0, 1.0, 0.0, 2.0, 0.0, 3.0, 0.0, 4.0],
        "reward_y": [0.0, 1.0, 0.0, 2.0, 0.0, 3.0, 0.0, -4.0],
    })
    out = most_disagreeing_episodes(t, "x", "y", k=2)
    assert out.columns == ["episode", "game_id", "seat", "return_a", "return_b", "z_a", "z_b", "gap"]
    assert out["game_id"].to_list()[0] == "d" and out.height == 2
    assert out["gap"].to_list() == sorted(out["gap"].to_list(), reverse=True)
    z = (np.array([1, 2, 3, 4.0]) - 2.5) / np.std([1, 2, 3, 4.0])
    assert out["z_a"][0] == pytest.approx(z[3])
    same = most_disagreeing_episodes(episode_return_table(t), "x", "y", k=10)
    assert same.height == 4 and same["game_id"][0] == "d"
    with pytest.raises(ParameterError, match=r"`k` should be a positive integer. Received 0."):
        most_disagreeing_episodes(t, "x", "y", k=0)
    with pytest.raises(ParameterError, match=r"`b` should differ from `a`"):
        most_disagreeing_episodes(t, "x", "x")


def test_step_difference_matches_numpy(frame):
    d = step_difference(frame, "top", "points")
    a, b = frame["reward_top"].to_numpy(), frame["reward_points"].to_numpy()
    diff = a - b
    assert d.count == frame.height
    assert d.fraction_different == pytest.approx((diff != 0).mean())
    assert (d.mean, d.std, d.min, d.max) == pytest.approx((diff.mean(), diff.std(), diff.min(), diff.max()))
    assert d.mean_abs == pytest.approx(np.abs(diff).mean())
    assert d.correlation == pytest.approx(np.corrcoef(a, b)[0, 1])
    assert d.fraction_sign_disagree == pytest.approx((((a > 0) & (b < 0)) | ((a < 0) & (b > 0))).mean())
    assert set(d.to_dict()) >= {"a", "b", "count", "mean"}
