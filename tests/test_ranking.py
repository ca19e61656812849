"""Ranking analysis: the precomputed RankTable against loops, Tenhou stable rank, bootstrap, affine equivalence."""

from __future__ import annotations

import numpy as np
import polars as pl
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from analysis_data import with_rewards
from rewardlab.core.errors import FrameError, ParameterError
from rewardlab.domains.mahjong.ranking import (
    RankTable, affine_equivalence, bootstrap_mean_ci, bootstrap_rank_ci, expected_reward,
    rank_probabilities, reward_by_rank, stable_rank, tenhou_points,
)
from rewardlab.analysis.stats import Moments, reward_stats
from reference import wiki_rank


@pytest.fixture(scope="module")
def frame(sample_frame):
    return with_rewards(sample_frame)


@pytest.fixture(scope="module")
def table(frame):
    return RankTable.from_frame(frame)


def test_rank_table_matches_a_row_loop(frame, table):
    ranks, scores, rows = [], [], []
    for i, row in enumerate(frame.select("end_of_game", "results", "seat").iter_rows()):
        eog, results, seat = row
        if eog:
            ranks.append(wiki_rank(results[4:8], seat))
            scores.append(results[4 + seat])
            rows.append(i)
    assert table.rank.tolist() == ranks
    assert table.final_score.tolist() == scores
    assert table.row.tolist() == rows
    assert table.n_rows == frame.height and table.episodes == len(ranks)
    # all four players of every game are in the sample: ranks are exactly uniform
    assert table.counts.tolist() == [len(ranks) // 4] * 4


def test_ties_follow_the_seat_rule(small_frame):
    t = RankTable.from_frame(small_frame)
    # the third game ends 25000, 25000, 30000, 20000
    last_game = t.game == t.game.max()
    assert dict(zip(t.seat[last_game].tolist(), t.rank[last_game].tolist())) == {0: 1, 1: 2, 2: 0, 3: 3}


@pytest.mark.parametrize("vector", [[1.0, -1.0, -1.0, -1.0], [75.0, 30.0, 0.0, -120.0], [0.0, 0.0, 0.0, 0.0]])
def test_precomputed_moments_equal_full_column_stats(frame, table, vector):
    per_episode = table.episode_rewards(vector)
    column = table.step_rewards(per_episode)
    assert np.flatnonzero(column).tolist() == [r for r, v in zip(table.row, per_episode) if v != 0]
    full = Moments.of(column)
    fast = table.moments(per_episode, scope="all")
    assert fast.count == full.count
    assert fast.mean == pytest.approx(full.mean, abs=1e-15)
    assert fast.m2 == pytest.approx(full.m2, rel=1e-12, abs=1e-12)
    assert (fast.min, fast.max) == (full.min, full.max)
    f = frame.with_columns(reward_v=pl.Series(column), done_v=pl.col("end_of_game"))
    for scope in ("all", "end_of_game"):
        s = reward_stats(f, "v", scope=scope)
        m = table.moments(per_episode, scope=scope)
        assert (m.count, m.mean, m.std) == pytest.approx((s.count, s.mean, s.std), rel=1e-12, abs=1e-15)


def test_mean_by_rank_matches_loop(table):
    x = table.final_score.astype(float)
    sums, counts = [0.0] * 4, [0] * 4
    for r, v in zip(table.rank, x):
        sums[r] += v
        counts[r] += 1
    np.testing.assert_allclose(table.mean_by_rank(x), [s / c for s, c in zip(sums, counts)])


def test_rank_table_errors(frame, table):
    with pytest.raises(ParameterError, match=r"`rank_vector` should have 4 entries"):
        table.episode_rewards([1.0, 2.0])
    with pytest.raises(ParameterError, match=r"`episode_rewards` should have shape \[960\]"):
        table.moments(np.zeros(3))
    with pytest.raises(ParameterError, match=r"`scope` should be one of 'all', 'end_of_game'"):
        table.moments(np.zeros(table.episodes), scope="nonzero")
    with pytest.raises(FrameError, match=r"last row is not the end of a game"):
        RankTable.from_frame(frame.head(10))
    with pytest.raises(FrameError, match=r"the ranking analysis is a mahjong analysis and needs the columns "
                       r"results, which the data lacks \(it has seat, end_of_game, reward_top\)"):
        RankTable.from_frame(frame.select("seat", "end_of_game", "reward_top"))


def test_mahjong_analyses_refuse_a_frame_of_another_source_naming_every_missing_column():
    """A steps table is not a mahjong frame: each mahjong-only entry point names all it lacks."""

    from rewardlab.domains.mahjong.families import prepare_frame
    from rewardlab.domains.mahjong.rules import episode_outcomes

    steps = pl.DataFrame({"episode": [0, 0, 1], "t": [0, 1, 0], "terminated": [False, True, True],
                          "reward_a": [1.0, 0.0, 2.0], "done_a": [False, True, True]})
    cases = [
        (lambda: RankTable.from_frame(steps), "the ranking analysis", "seat, results, end_of_game"),
        (lambda: reward_by_rank(steps), "the ranking analysis", "seat, results, end_of_game"),
        (lambda: episode_outcomes(steps), "the outcome table", "game_id, game, seat, results, end_of_game"),
        (lambda: prepare_frame(steps), "a reward family", "sparse, results, end_of_round, end_of_game"),
    ]
    for call, what, missing in cases:
        with pytest.raises(FrameError) as info:
            call()
        assert str(info.value).startswith(f"{what} is a mahjong analysis and needs the columns {missing}, "
                                          "which the data lacks (it has episode, t, terminated, reward_a, "
                                          "done_a)"), str(info.value)


# --------------------------------------------------------------------------
# distributions, expected reward, stable rank
# --------------------------------------------------------------------------


def test_rank_probabilities_and_expected_reward():
    p = rank_probabilities(np.array([0, 0, 1, 3]))
    assert p.tolist() == [0.5, 0.25, 0.0, 0.25]
    assert expected_reward([4.0, 2.0, 0.0, -4.0], p) == pytest.approx(1.5)
    batch = expected_reward([1.0, 0.0, 0.0, 0.0], np.array([[0.1, 0.2, 0.3, 0.4], [1.0, 0.0, 0.0, 0.0]]))
    assert batch.tolist() == [0.1, 1.0]
    with pytest.raises(ParameterError, match=r"`ranks` should hold ranks 0-3. Received 4."):
        rank_probabilities(np.array([0, 4]))
    with pytest.raises(ParameterError, match=r"`probabilities` should have shape \[..., 4\]"):
        expected_reward([1, 2, 3, 4], [0.5, 0.5])


def test_stable_rank_known_values():
    # uniform placements: 7-dan at the phoenix table, 5-dan at the tokujo table
    assert stable_rank([1, 1, 1, 1], table="phoenix") == pytest.approx(7.0)
    assert stable_rank([1, 1, 1, 1], table="tokujo") == pytest.approx(5.0)
    # 3 firsts, 4 seconds, 3 thirds, 3 fourths: (60*3 + 30*4) / 3 - 20) / 10 = 8
    assert stable_rank([3, 4, 3, 3], table="phoenix") == pytest.approx(8.0)
    assert stable_rank([1, 1, 1, 0]) == np.inf
    np.testing.assert_allclose(stable_rank(np.array([[1, 1, 1, 1], [3, 4, 3, 3]])), [7.0, 8.0])
    with pytest.raises(ParameterError, match=r"`table` should be one of 'phoenix', 'tokujo'"):
        stable_rank([1, 1, 1, 1], table="ippan")


@settings(max_examples=50, deadline=None)
@given(st.lists(st.floats(0.01, 1.0), min_size=4, max_size=4), st.sampled_from(["phoenix", "tokujo"]))
def test_stable_rank_is_where_expected_points_vanish(p, table_name):
    p = np.array(p) / sum(p)
    dan = stable_rank(p, table=table_name)
    assert expected_reward(tenhou_points(dan, table=table_name), p) == pytest.approx(0.0, abs=1e-9)


def test_tenhou_points_match_the_wiki_example():
    assert tenhou_points(6, table="tokujo").tolist() == [75.0, 30.0, 0.0, -120.0]


# --------------------------------------------------------------------------
# bootstrap
# --------------------------------------------------------------------------


def test_bootstrap_mean_ci_matches_a_loop_with_the_same_draws():
    x = np.random.default_rng(0).normal(size=50)
    ci = bootstrap_mean_ci(x, n_resamples=300, confidence=0.9, seed=7)
    rng = np.random.default_rng(7)
    draws = rng.integers(0, x.size, size=(300, x.size))
    means = [float(np.mean([x[i] for i in row])) for row in draws]
    lo, hi = np.quantile(means, [0.05, 0.95])
    assert (ci.low, ci.high) == pytest.approx((lo, hi), rel=1e-12)
    assert ci.estimate == pytest.approx(x.mean()) and ci.confidence == 0.9 and ci.n_resamples == 300
    assert bootstrap_mean_ci(x, n_resamples=300, seed=7) == bootstrap_mean_ci(x, n_resamples=300, seed=7)


def test_bootstrap_validation():
    with pytest.raises(ParameterError, match=r"`n_resamples` should be a positive integer. Received 0."):
        bootstrap_mean_ci([1.0], n_resamples=0)
    with pytest.raises(ParameterError, match=r"`confidence` should be in \(0, 1\). Received 1.0."):
        bootstrap_mean_ci([1.0], confidence=1.0)


def test_bootstrap_rank_ci_by_episode_and_by_game(table):
    by_game = bootstrap_rank_ci(table, stable_rank, by="game", n_resamples=200, seed=1)
    # whole games always hold one of each rank: the counts never change
    assert (by_game.estimate, by_game.low, by_game.high) == pytest.approx((7.0, 7.0, 7.0))
    by_episode = bootstrap_rank_ci(table, stable_rank, by="episode", n_resamples=500, seed=1)
    assert by_episode.low < 7.0 < by_episode.high
    v = np.array([1.0, 0.4, -0.4, -1.0])
    ci = bootstrap_rank_ci(table, lambda c: expected_reward(v, c / c.sum(axis=1, keepdims=True)),
                           n_resamples=500, seed=2)
    assert ci.low < 0.0 < ci.high and ci.estimate == pytest.approx(0.0)
    with pytest.raises(ParameterError, match=r"`statistic` should return one value per row"):
        bootstrap_rank_ci(table, lambda c: c, n_resamples=10)


# --------------------------------------------------------------------------
# reward by rank
# --------------------------------------------------------------------------


def test_reward_by_rank(frame, table):
    out = reward_by_rank(frame, ["top", "points"], table=table, n_resamples=200)
    assert out.columns == ["reward", "rank", "episodes", "mean", "std", "ci_low", "ci_high"]
    top = out.filter(pl.col("reward") == "top")
    assert top["mean"].to_list() == [1.0, -1.0, -1.0, -1.0]
    points = out.filter(pl.col("reward") == "points")["mean"].to_numpy()
    ref = table.mean_by_rank((table.final_score - 25000) / 1000.0)
    np.testing.assert_allclose(points, ref)
    assert np.all(np.diff(points) < 0)
    lo, hi = out["ci_low"].to_numpy(), out["ci_high"].to_numpy()
    assert np.all(lo <= out["mean"].to_numpy() + 1e-12) and np.all(out["mean"].to_numpy() <= hi + 1e-12)
    with pytest.raises(ParameterError, match=r"`table` should be built from the same frame"):
        reward_by_rank(frame.head(0), "top", table=table)


# --------------------------------------------------------------------------
# affine equivalence
# --------------------------------------------------------------------------


def test_affine_equivalence_examples():
    r = affine_equivalence([1.0, -1.0, -1.0, -1.0], [10.0, 0.0, 0.0, 0.0])
    assert r.equivalent and r.scale == pytest.approx(5.0) and r.offset == pytest.approx(5.0)
    assert not affine_equivalence([1.0, 0.0, 0.0, -1.0], [-1.0, 0.0, 0.0, 1.0]).equivalent
    assert affine_equivalence([2.0] * 4, [-3.0] * 4).equivalent  # both order nothing
    assert not affine_equivalence([2.0] * 4, [1.0, 0.0, 0.0, 0.0]).equivalent
    assert not affine_equivalence([1.0, 0.0, 0.0, 0.0], [5.0] * 4).equivalent
    # MahjongSoul throne vs Tenhou tokujo 6-dan: same order of places, different gaps
    r = affine_equivalence([1.0, 0.4, -0.4, -1.0], [75.0, 30.0, 0.0, -120.0])
    assert not r.equivalent and r.residual > 0


def _check_witness(v, w, relation):
    p, q = relation.witness
    assert np.all(p >= 0) and np.all(q >= 0)
    assert p.sum() == pytest.approx(1.0) and q.sum() == pytest.approx(1.0)
    dv, dw = float((p - q) @ v), float((p - q) @ w)
    tv, tw = 1e-9 * max(np.ptp(v), 1.0), 1e-9 * max(np.ptp(w), 1.0)
    sv = 0 if abs(dv) <= tv else np.sign(dv)
    sw = 0 if abs(dw) <= tw else np.sign(dw)
    assert sv != sw  # the two vectors order p and q differently


@settings(max_examples=100, deadline=None)
@given(st.lists(st.integers(-50, 50), min_size=4, max_size=4), st.floats(0.01, 100.0), st.floats(-100.0, 100.0),
       st.lists(st.integers(-50, 50), min_size=4, max_size=4))
def test_affine_equivalence_hypothesis(v, a, b, w):
    v = np.array(v, dtype=float)
    assert affine_equivalence(v, a * v + b).equivalent
    w = np.array(w, dtype=float)
    relation = affine_equivalence(v, w)
    if not relation.equivalent:
        _check_witness(v, w, relation)
    else:
        np.testing.assert_allclose(relation.scale * v + relation.offset, w, atol=1e-6)


def test_affine_equivalence_validation():
    with pytest.raises(ParameterError, match=r"`w` should hold finite numbers"):
        affine_equivalence([1, 2, 3, 4], [1, 2, 3, np.nan])
