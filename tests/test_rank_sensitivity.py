"""Rank-vector sensitivity (rewardlab.domains.mahjong.sensitivity, .rank_statistics) and the ``ranks`` diagnostic."""

from __future__ import annotations

import numpy as np
import polars as pl
import pytest

import rewardlab
from rewardlab.analysis.scopes import episode_end_expr, segment_id_expr
from rewardlab.contracts.registry import get_contract
from rewardlab.core.errors import ParameterError
from rewardlab.diagnostics import Candidate, DiagnosisContext, DiagnosisOptions, get_diagnostic
from rewardlab.diagnostics import ranks as ranks_diag
from rewardlab.domains.mahjong import rank_statistics as rstat
from rewardlab.domains.mahjong import sensitivity as sens
from rewardlab.domains.mahjong.ranking import RankTable, stable_rank
from rewardlab.sources.registry import spec_of

SAMPLE = "data/sample.tsv.gz"


def table_of(rank, game=None, score=None, lengths=None, seed=0):
    """A RankTable from per-episode arrays (episodes one after another, ``lengths`` rows each)."""
    rng = np.random.default_rng(seed)
    rank = np.asarray(rank, dtype=np.int64)
    n = rank.size
    game = np.arange(n) if game is None else np.asarray(game, dtype=np.int64)
    score = (40000 - 10000 * rank + rng.integers(-50, 50, n) * 100) if score is None else np.asarray(score)
    lengths = rng.integers(5, 40, n) if lengths is None else np.asarray(lengths)
    row = np.cumsum(lengths) - 1
    return RankTable(rank=rank, final_score=score.astype(np.int64), row=row.astype(np.int64), game=game,
                     seat=np.zeros(n, np.int64), n_rows=int(row[-1]) + 1)


# --------------------------------------------------------------------------
# Vectorized versus plain loops
# --------------------------------------------------------------------------


def test_vectorized_pieces_equal_their_loops():
    rng = np.random.default_rng(1)
    rank = rng.integers(0, 4, 300)
    groups = rng.integers(-1, 5, 300)
    assert np.array_equal(rstat.group_rank_counts(rank, groups, 5), rstat.group_rank_counts_loop(rank, groups, 5))
    game = rng.integers(0, 40, 300)
    values = rng.normal(size=(300, 3))
    assert np.allclose(rstat.game_sums(game, values), rstat.game_sums_loop(game, values))
    per_game = rng.normal(size=(25, 3))
    assert np.allclose(rstat.bootstrap_game_sums(per_game, 30, seed=4),
                       rstat.bootstrap_game_sums_loop(per_game, 30, seed=4))
    v = np.array([1.5, 0.25, -0.5, -2.0])
    for _ in range(20):
        p = rng.dirichlet(np.ones(4), size=6)
        low, high = rstat.order_interval(p, v)
        low_l, high_l = rstat.order_interval_loop(p, v)
        assert np.allclose(low, low_l) and np.allclose(high, high_l)
        assert np.allclose(rstat.break_even(p[0], v), rstat.break_even_loop(p[0], v))
        counts = rng.integers(0, 30, size=(5, 4)).astype(float)
        assert np.allclose(rstat.homogeneity_chi2(counts), rstat.homogeneity_chi2_loop(counts))
    batch = rng.dirichlet(np.ones(4), size=(7, 5))  # leading axis: resamples
    low, high = rstat.order_interval(batch, v)
    for b in range(7):
        lo, hi = rstat.order_interval_loop(batch[b], v)
        assert np.allclose(low[b], lo) and np.allclose(high[b], hi)
    x = np.array([1.0, 2.0, 2.0, np.inf, np.inf, 0.5])
    y = np.array([3.0, 1.0, 2.0, 5.0, 4.0, 4.0])
    assert np.isclose(rstat.kendall_tau(x, y), rstat.kendall_tau_loop(x, y))
    rewards = np.array([2.0, 0.5, 0.5, -1.0, 2.0])
    fit = rstat.recover_rank_vector([0, 1, 1, 3, 0], rewards)
    vec, pure = rstat.recover_rank_vector_loop([0, 1, 1, 3, 0], rewards)
    assert fit.pure == pure and np.allclose(fit.vector, vec, equal_nan=True)
    bad = rstat.recover_rank_vector([0, 1, 1, 3, 0], rewards + [0, 0, 1e-3, 0, 0])
    assert not bad.pure and bad.worst in (1, 2)
    assert not rstat.recover_rank_vector_loop([0, 1, 1, 3, 0], rewards + [0, 0, 1e-3, 0, 0])[1]


def test_chi2_survival_function():
    assert rstat.chi2_sf(3.841458820694124, 1) == pytest.approx(0.05, abs=1e-9)
    assert rstat.chi2_sf(24.995790139728616, 15) == pytest.approx(0.05, abs=1e-9)
    assert rstat.chi2_sf(0.0, 3) == 1.0
    stats = pytest.importorskip("scipy.stats")
    for df in (1, 2, 3, 7, 15, 40):
        for x in (0.2, 1.0, 5.0, 20.0, 80.0):
            assert rstat.chi2_sf(x, df) == pytest.approx(stats.chi2.sf(x, df), rel=1e-9, abs=1e-300)


# --------------------------------------------------------------------------
# The analysis against brute force and known truths
# --------------------------------------------------------------------------


def _expected_loop(table, reward):
    """Expected reward per game and per step, and mean by rank, by a plain loop over episodes."""
    total, by_rank, n_rank = 0.0, [0.0] * 4, [0] * 4
    for k, score in zip(table.rank, table.final_score):
        points = (int(score) - reward.offset) // reward.divisor if reward.has_points else 0
        r = (reward.vector[int(k)] + points - reward.mean) / reward.std
        total += r
        by_rank[int(k)] += r
        n_rank[int(k)] += 1
    return total / table.episodes, total / table.n_rows, [b / n if n else np.nan for b, n in zip(by_rank, n_rank)]


@pytest.mark.parametrize("points", [False, True])
def test_derivatives_match_finite_differences_of_a_loop(points):
    rng = np.random.default_rng(7)
    table = table_of(rng.choice(4, 500, p=[0.4, 0.3, 0.2, 0.1]), game=np.arange(500) // 2)
    kw = {"offset": 25000, "divisor": 1000} if points else {}
    reward = sens.RankReward((3.0, 1.0, -1.0, -3.0), mean=0.5, std=2.0, **kw)
    s = sens.rank_sensitivity(table, reward, n_resamples=50)
    game0, step0, by0 = _expected_loop(table, reward)
    assert s.expected_game[0] == pytest.approx(game0) and s.expected_step[0] == pytest.approx(step0)
    assert np.allclose(s.mean_by_rank, by0)
    for k in range(4):
        moved = sens.RankReward(tuple(np.add(reward.vector, np.eye(4)[k] * 0.75)), mean=0.5, std=2.0, **kw)
        game1, step1, by1 = _expected_loop(table, moved)
        assert s.per_game[k] == pytest.approx((game1 - game0) / 0.75)
        assert s.per_step[k] == pytest.approx((step1 - step0) / 0.75)
        assert np.allclose((np.array(by1) - by0) / 0.75, s.by_rank_jacobian[k])
    assert np.all(s.probabilities_low <= s.probabilities) and np.all(s.probabilities <= s.probabilities_high)
    assert s.stable_rank[0] == pytest.approx(stable_rank(table.counts))
    assert not s.complete_games


def test_tenhou_break_even_is_the_stable_rank():
    rng = np.random.default_rng(3)
    table = table_of(rng.choice(4, 400, p=[0.3, 0.27, 0.23, 0.2]))
    s = sens.rank_sensitivity(table, [90.0, 45.0, 0.0, -135.0], n_resamples=100)
    assert -s.break_even[3] / 15.0 - 2.0 == pytest.approx(s.stable_rank[0])
    assert -s.break_even_low[3] / 15.0 - 2.0 == pytest.approx(s.stable_rank[2], rel=0.05)  # lower v4: higher dan


def test_a_rank_that_never_occurs_does_not_matter():
    rng = np.random.default_rng(5)
    rank = rng.choice([0, 1, 3], 600)  # never 3rd
    table = table_of(rank)
    groups = rng.integers(0, 3, 600)
    s = sens.rank_sensitivity(table, [1.0, 0.5, 0.0, -1.0], groups=groups, n_resamples=50)
    assert s.counts[2] == 0 and s.per_game[2] == 0.0 and np.isnan(s.break_even[2])
    assert not s.matters[2] and "never" in s.reasons[2]
    assert np.isnan(s.by_rank_jacobian[2]).all()


def test_groups_that_differ_matter_and_equal_groups_do_not():
    # group 0 wins and loses far more often than group 1; group 1 lives in 2nd and 3rd
    a = np.repeat([0, 3, 1, 2], [150, 150, 50, 50])
    b = np.repeat([0, 3, 1, 2], [50, 50, 150, 150])
    table = table_of(np.concatenate([a, b]))
    groups = np.repeat([0, 1], 400)
    s = sens.rank_sensitivity(table, [1.0, 0.2, -0.4, -1.0], groups=groups, n_resamples=200)
    assert s.matters.all() and s.groups.differs.all()
    same = table_of(np.concatenate([a, a]))
    s2 = sens.rank_sensitivity(same, [1.0, 0.4, -0.4, -1.0], groups=groups, n_resamples=200)
    assert not s2.matters.any() and np.all(s2.groups.p_value == 1.0)
    assert np.all(s2.groups.difference_low <= 0) and np.all(s2.groups.difference_high >= 0)
    # the order of the two groups: E_0 - E_1 = 0.25 (v0 + v3 - v1 - v2) = 0.05 changes sign where it is 0
    low, high = s.groups.order_low, s.groups.order_high
    assert (low[0], high[0]) == (pytest.approx(0.8), np.inf)
    assert (low[1], high[1]) == (-np.inf, pytest.approx(0.4))
    assert (low[2], high[2]) == (-np.inf, pytest.approx(-0.2))
    assert (low[3], high[3]) == (pytest.approx(-1.2), np.inf)
    assert s.groups.flips.tolist() == [True, True, True, True]  # each within the vector's spread, 2.0


def test_constant_shift_and_positive_scale_change_no_order():
    rng = np.random.default_rng(11)
    table = table_of(rng.choice(4, 800, p=[0.25, 0.3, 0.25, 0.2]), game=np.arange(800) // 4)
    groups = rng.integers(0, 4, 800)
    v = np.array([1.0, 0.3, -0.2, -1.0])
    s = sens.rank_sensitivity(table, v, groups=groups, n_resamples=100, seed=2)
    t = sens.rank_sensitivity(table, 3.0 * v + 7.0, groups=groups, n_resamples=100, seed=2)
    assert np.array_equal(s.matters, t.matters) and np.array_equal(s.groups.differs, t.groups.differs)
    assert np.allclose(3.0 * s.groups.order_low + 7.0, t.groups.order_low)
    assert np.allclose(3.0 * s.groups.order_high + 7.0, t.groups.order_high)
    assert s.groups.tau == pytest.approx(t.groups.tau)
    assert np.allclose(s.groups.tau_up, t.groups.tau_up, equal_nan=True)
    assert np.allclose(s.per_game, t.per_game)  # the derivative does not depend on v
    shifted = sens.rank_sensitivity(table, v + 5.0, groups=groups, n_resamples=100, seed=2)
    assert shifted.expected_game[0] == pytest.approx(s.expected_game[0] + 5.0)
    assert np.allclose(np.argsort(shifted.groups.expected), np.argsort(s.groups.expected))


def test_order_interval_ends_are_where_the_order_changes():
    rng = np.random.default_rng(13)
    p = rng.dirichlet(np.ones(4) * 5, size=5)
    v = np.array([1.0, 0.2, -0.3, -1.0])
    low, high = rstat.order_interval(p, v)
    order = np.argsort(p @ v)
    for k in range(4):
        for end, inside in ((low[k], 1e-7), (high[k], -1e-7)):
            if not np.isfinite(end):
                continue
            w = v.copy()
            w[k] = end + inside
            assert np.array_equal(np.argsort(p @ w), order)
            w[k] = end - inside
            assert not np.array_equal(np.argsort(p @ w), order)


def test_bootstrap_intervals_cover_the_truth():
    truth = np.array([0.35, 0.3, 0.2, 0.15])
    rng = np.random.default_rng(2024)
    hits = np.zeros(4)
    reps = 100
    for rep in range(reps):
        table = table_of(rng.choice(4, 300, p=truth), seed=rep)
        s = sens.rank_sensitivity(table, [1.0, 0.0, 0.0, -1.0], n_resamples=200, seed=rep)
        hits += (s.probabilities_low <= truth) & (truth <= s.probabilities_high)
    assert np.all(hits / reps >= 0.85), hits / reps  # nominal 0.95
    assert np.all(hits / reps <= 1.0)


def test_complete_games_have_quarter_probabilities_without_spread():
    table = table_of(np.tile([2, 0, 3, 1], 50), game=np.repeat(np.arange(50), 4))
    s = sens.rank_sensitivity(table, [5.0, 1.0, 0.0, -2.0], n_resamples=50)
    assert s.complete_games and np.allclose(s.probabilities, 0.25)
    assert np.allclose(s.probabilities_low, 0.25) and np.allclose(s.probabilities_high, 0.25)
    assert s.expected_game[0] == pytest.approx(1.0)  # the vector's mean, whatever the play
    assert "complete games" in s.reasons[0]


def test_argument_checks():
    table = table_of([0, 1, 2, 3])
    with pytest.raises(ParameterError):
        sens.rank_sensitivity(table, [1.0, 2.0, 3.0])
    with pytest.raises(Exception, match="offset"):
        sens.RankReward((1, 0, 0, -1), offset=100)
    with pytest.raises(Exception, match="groups"):
        sens.rank_sensitivity(table, [1, 0, 0, -1], groups=[0, 1])


# --------------------------------------------------------------------------
# The diagnostic, end to end on the bundled sample
# --------------------------------------------------------------------------


@pytest.fixture(scope="module")
def sample():
    frame = rewardlab.load_kanachan(SAMPLE)
    return rewardlab.apply_plugins(frame, ["data/plugins/rank_top.py", "data/plugins/rank_points_mleague.py"])


def context(frame, rewards: dict, **options):
    spec = spec_of(frame)
    ep = frame.select(segment_id_expr(episode_end_expr(frame.columns, spec)))["_episode"].to_numpy()
    ep = ep.astype(np.int64)
    starts = np.concatenate(([0], np.flatnonzero(np.diff(ep)) + 1, [ep.size])).astype(np.int64)
    end = np.zeros(ep.size, dtype=bool)
    end[starts[1:] - 1] = True
    cands = tuple(Candidate(name, np.asarray(r, dtype=np.float64)) for name, r in rewards.items())
    return DiagnosisContext(frame, spec, get_contract("kanachan"), cands, None, DiagnosisOptions(**options),
                            ep, starts, end, np.zeros(ep.size, dtype=bool))


def test_registered():
    d = get_diagnostic("ranks")
    assert d.order == 60 and "Assumptions" in d.doc and "does not matter" in d.doc


def test_shipped_rank_top_on_the_sample(sample):
    table = RankTable.from_frame(sample)
    ctx = context(sample, {"rank_top": sample["reward_rank_top"].cast(pl.Float64).to_numpy(),
                           "mleague": sample["reward_rank_points_mleague"].cast(pl.Float64).to_numpy()},
                  bootstrap=100, seed=3)
    top, mleague = get_diagnostic("ranks").run(ctx)
    assert top.verdict in ("warn", "info") and top.candidate == "rank_top"
    ev = top.evidence
    assert ev["preset"] == "top" and ev["complete_games"] is True
    v = np.array(ev["vector"])
    assert np.allclose(v, (np.array([1.0, -1.0, -1.0, -1.0]) + 0.5) / 1.0)  # the wiki's normalization: std 1
    assert np.allclose(ev["p"], 0.25) and np.allclose(ev["d_per_game"], 0.25)
    assert np.allclose(ev["d_per_step"], 240 / table.n_rows)
    assert len(ev["matters"]) == 4 and len(ev["reasons"]) == 4 and ev["seat_groups"] == 4
    assert (top.verdict == "warn") == (not all(ev["matters"]))
    # the example episodes are games ending 1st, 2nd, 3rd, 4th, then again
    end_rows = np.asarray(top.rows)
    ranks_shown = table.rank[np.searchsorted(table.row, end_rows)]
    assert ranks_shown[:8].tolist() == [0, 1, 2, 3, 0, 1, 2, 3]
    assert list(top.episodes) == [int(ctx.episode_of_row[r]) for r in end_rows]
    assert mleague.verdict == "n/a" and "score term" in mleague.summary


def test_constructed_rewards_on_the_sample(sample):
    table = RankTable.from_frame(sample)
    linear = table.step_rewards(np.array([2.0, 1.0, 0.0, -1.0])[table.rank])
    early = linear.copy()
    early[5] = 0.25  # a reward before the end of a game
    ctx = context(sample, {"linear": linear, "early": early}, bootstrap=50)
    lin, bad = get_diagnostic("ranks").run(ctx)
    assert lin.evidence["preset"] == "linear" and lin.evidence["vector"] == [2.0, 1.0, 0.0, -1.0]
    assert bad.verdict == "n/a" and bad.rows == (5,) and bad.episodes == (int(ctx.episode_of_row[5]),)


def test_a_subset_without_fourth_places_warns(sample):
    table = RankTable.from_frame(sample)
    ep = np.repeat(np.arange(table.episodes), np.diff(np.concatenate(([-1], table.row))))
    keep = table.rank[ep] != 3
    subset = sample.filter(pl.Series(keep))
    sub_table = RankTable.from_frame(subset)
    rewards = sub_table.step_rewards(np.array([1.0, 0.4, -0.4, -1.0])[sub_table.rank])
    (f,) = get_diagnostic("ranks").run(context(subset, {"celestial": rewards}, bootstrap=50))
    assert f.verdict == "warn" and "4th: never occurs" in f.summary
    assert np.isnan(f.evidence["vector"][3]) and f.evidence["matters"][3] is False
    assert f.evidence["counts"][3] == 0 and f.evidence["complete_games"] is False


def test_not_a_mahjong_frame():
    frame = pl.DataFrame({"episode": [0, 0, 1], "step": [0, 1, 0], "x": [1.0, 2.0, 3.0]})
    ctx = DiagnosisContext(frame, None, None, (Candidate("a", np.zeros(3)),), None, DiagnosisOptions(),
                           np.array([0, 0, 1]), np.array([0, 2, 3]), np.array([False, True, True]),
                           np.zeros(3, dtype=bool))
    (f,) = ranks_diag.run(ctx)
    assert f.verdict == "n/a" and "mahjong" in f.summary
