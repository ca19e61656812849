"""Rank-vector sensitivity: how a rank reward's figures move with each entry of its vector, on recorded data.

A rank reward pays, on a player's last step of a game, ``raw = v[rank]``
(rank 0 = first place), optionally plus the ranking + points family's score
term ``(final_score - offset) // divisor``, normalized as
``reward = (raw - mean) / std``; every other step gets 0.  With the recorded
final ranks held fixed, each figure the ranking tuner shows is linear in
``v``:

* expected reward per game, ``E = (p . v + mean_points - mean) / std``:
  ``dE / dv_k = p_k / std`` (``p_k``: fraction of episodes finishing k-th);
* expected reward per step (every transition, zeros off the game's end):
  ``count_k / (n_rows * std)``;
* mean reward of final rank ``j``: ``d m_j / d v_k = [j == k] / std``
  (only its own rank moves; :attr:`RankSensitivity.by_rank_jacobian`).

What "how the stable rank moves" means here
-------------------------------------------
Tenhou's stable rank (:func:`~rewardlab.domains.mahjong.ranking.stable_rank`)
is a function of the rank distribution alone; on recorded data the ranks are
fixed, so **no entry of v moves it** (its derivative is 0, and it is reported
with its bootstrap interval as a constant).  Two things do move, and these are
what this module measures:

1. The **break-even value** of each entry: the ``v_k`` at which the expected
   reward per game is 0, the other entries fixed
   (:func:`~rewardlab.domains.mahjong.rank_statistics.break_even`).  For
   Tenhou's vector ``[P1, P2, 0, -15 (d + 2)]`` the break-even of the 4th
   entry *is* the stable rank, in rank points: ``d = -break_even[3] / 15 - 2``.
   So the stable rank is the break-even of one entry of one family of
   vectors; a user's vector has a break-even per entry.
2. The **order of groups** of players (seats, grades: whatever the data has)
   by expected reward, which is what a reward decides between when used to
   compare or select policies.  It depends on ``v``; the order of the same
   groups by stable rank does not.  Per entry ``k``,
   :func:`~rewardlab.domains.mahjong.rank_statistics.order_interval` gives
   the range of ``v_k`` (others fixed) over which the order by expected
   reward stays as it is, and
   :func:`~rewardlab.domains.mahjong.rank_statistics.kendall_tau` the
   agreement of that order with the order by stable rank, at ``v`` and with
   ``v_k`` moved by the vector's spread either way.

Affine invariance
-----------------
Adding ``c`` to every entry adds ``c / std`` to every expected reward (the
``p_k`` sum to 1): no order changes; multiplying ``v`` by ``a > 0`` scales
every difference: no order changes (see
:func:`~rewardlab.domains.mahjong.ranking.affine_equivalence`).  The order
intervals move with the map (``a * low + c``), and the Kendall taus and the
"matters" verdicts are unchanged.  The group differences ``p_gk - p_hk`` used
below sum to 0 over ``k``, so they carry no constant part.

Which entries do not matter on this data
----------------------------------------
:attr:`RankSensitivity.matters` is False for entry ``k`` when rank ``k``
never occurs (``v_k`` is never paid: not identifiable), or, with groups,
when the groups' rates of finishing k-th do not differ beyond sampling
noise: Pearson's chi-square test of homogeneity of "finished k-th" across
the groups (``G - 1`` degrees of freedom,
:func:`~rewardlab.domains.mahjong.rank_statistics.chi2_sf`) does not reject
at level ``1 - confidence``.  Then moving ``v_k`` shifts every group's
expected reward alike, within noise, and changes no comparison this data can
support.  One global test per entry, not a test per pair of groups (with 16
grades, 120 pairs would find a "difference" by chance).  The effect's size
is reported beside it: the pair of groups whose difference is largest
relative to its bootstrap spread, with that difference's bootstrap
interval.  On data holding all four players of every game
(:func:`~rewardlab.domains.mahjong.rank_statistics.complete_games`), every
``p_k`` is exactly 1/4 and the expected reward is ``mean(v)`` whatever the
play: only comparisons between groups say anything there.

Intervals are percentile bootstraps over **games** (the four players of a
game are not independent), seeded.

The array pieces (counts, the bootstrap over games, break-even, order
intervals, Kendall's tau, the chi-square test) are in
:mod:`rewardlab.domains.mahjong.rank_statistics`; this module puts them
together.

Examples
--------
>>> import numpy as np
>>> from rewardlab.domains.mahjong.ranking import RankTable
>>> t = RankTable(rank=np.array([0, 1, 2, 3, 1, 0, 3, 2]), final_score=np.full(8, 25000),
...               row=np.arange(8) * 10 + 9, game=np.repeat([0, 1], 4), seat=np.tile(np.arange(4), 2), n_rows=80)
>>> s = rank_sensitivity(t, [90.0, 45.0, 0.0, -90.0], n_resamples=20)
>>> s.complete_games, s.expected_game[0], s.break_even.tolist()  # complete games: E = mean(v)
(True, 11.25, [45.0, 0.0, -45.0, -135.0])
>>> bool(np.isclose(-s.break_even[3] / 15 - 2, s.stable_rank[0]))
True
"""

from __future__ import annotations

import dataclasses
import warnings

import numpy as np

from rewardlab.core.errors import ParameterError, check_finite, check_int, check_positive
from rewardlab.domains.mahjong.rank_statistics import (K, bootstrap_game_sums, break_even, check_rank_vector,
                                                       chi2_sf, complete_games, game_sums, homogeneity_chi2,
                                                       kendall_tau, order_interval)
from rewardlab.domains.mahjong.ranking import RankTable, stable_rank

__all__ = ["RankReward", "GroupSensitivity", "RankSensitivity", "rank_sensitivity"]


@dataclasses.dataclass(frozen=True)
class RankReward:
    """A rank reward as the ranking families define it: ``(v[rank] + points - mean) / std``.

    Parameters
    ----------
    vector : 4 numbers
        Raw reward by final rank (entry 0: first place).
    offset, divisor : int or None
        The ranking + points family's score term ``(final_score - offset) // divisor``; None (both) for
        a pure rank vector.
    mean, std : float
        Normalization constants (held fixed: a derivative here is at fixed constants).

    Examples
    --------
    >>> RankReward((1, 0, 0, -1), std=2.0).episode_rewards(np.array([0, 3]), np.array([30000, 10000]))
    array([ 0.5, -0.5])
    >>> RankReward((500, 100, -100, -300), offset=30000, divisor=100).raw(np.array([0]), np.array([45000]))
    array([650.])
    """

    vector: tuple = (1.0, 0.0, 0.0, -1.0)
    offset: int | None = None
    divisor: int | None = None
    mean: float = 0.0
    std: float = 1.0

    def __post_init__(self):
        object.__setattr__(self, "vector", tuple(float(x) for x in check_rank_vector(self.vector)))
        if (self.offset is None) != (self.divisor is None):
            raise ParameterError("offset", "and divisor should be given together (the points term) or not at all",
                                 (self.offset, self.divisor))
        if self.offset is not None:
            object.__setattr__(self, "offset", check_int("offset", self.offset, integral_float=True))
            object.__setattr__(self, "divisor", check_int("divisor", self.divisor, low=1, integral_float=True))
        object.__setattr__(self, "mean", check_finite("mean", self.mean))
        object.__setattr__(self, "std", check_positive("std", self.std))

    @classmethod
    def of(cls, family) -> "RankReward":
        """The rank reward of a :class:`~rewardlab.domains.mahjong.families.Ranking` or ``RankingPoints`` family.

        Examples
        --------
        >>> from rewardlab.domains.mahjong.families import Ranking
        >>> RankReward.of(Ranking.from_preset("top")).vector
        (1.0, -1.0, -1.0, -1.0)
        """
        p = getattr(family, "params", None)
        if p is None or not hasattr(p, "vector"):
            raise ParameterError("family", "should be a ranking or ranking + points family", type(family).__name__)
        return cls(p.vector, getattr(p, "offset", None), getattr(p, "divisor", None), p.mean, p.std)

    @property
    def has_points(self) -> bool:
        """True when the score term is on."""
        return self.offset is not None

    def points(self, final_score) -> np.ndarray:
        """The score term per episode (zeros without one), float64 ``[E]``."""
        score = np.asarray(final_score)
        if not self.has_points:
            return np.zeros(score.shape, dtype=np.float64)
        return np.floor_divide(score.astype(np.int64) - self.offset, self.divisor).astype(np.float64)

    def raw(self, rank, final_score) -> np.ndarray:
        """``v[rank] + points`` per episode, float64 ``[E]``."""
        return np.asarray(self.vector)[np.asarray(rank, dtype=np.int64)] + self.points(final_score)

    def episode_rewards(self, rank, final_score) -> np.ndarray:
        """The normalized end-of-game reward per episode, float64 ``[E]``."""
        return (self.raw(rank, final_score) - self.mean) / self.std


# --------------------------------------------------------------------------
# The whole analysis
# --------------------------------------------------------------------------


def _percentiles(samples: np.ndarray, confidence: float) -> tuple[np.ndarray, np.ndarray]:
    """Percentile interval over axis 0, ignoring NaN; no interpolation across an infinite value."""
    alpha = (1.0 - confidence) / 2.0
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        return (np.nanquantile(samples, alpha, axis=0, method="lower"),
                np.nanquantile(samples, 1.0 - alpha, axis=0, method="higher"))


@dataclasses.dataclass(frozen=True, eq=False)
class GroupSensitivity:
    """The order of groups by expected reward and how each entry moves it (see :func:`rank_sensitivity`).

    Attributes
    ----------
    labels : array ``[G]``
        The groups' labels (those with at least ``min_group`` episodes).
    episodes : int array ``[G]``
    probabilities : float array ``[G, 4]``
    expected, expected_low, expected_high : float arrays ``[G]``
        Expected reward per game of each group, with its interval.
    stable_rank : float array ``[G]``
        Each group's stable rank (phoenix table; does not depend on the vector).
    tau : float
        Kendall's tau-b between the groups' expected rewards and stable ranks, at ``v``.
    tau_down, tau_up : float arrays ``[4]``
        The same with ``v_k`` lowered / raised by :attr:`RankSensitivity.step`.
    order_low, order_high : float arrays ``[4]``
        The range of ``v_k`` keeping the groups' order by expected reward
        (:func:`~rewardlab.domains.mahjong.rank_statistics.order_interval`).
    order_low_ci, order_high_ci : float arrays ``[4, 2]``
        Bootstrap intervals of those ends.
    flips : bool array ``[4]``
        The order changes with ``v_k`` moved by at most :attr:`RankSensitivity.step`.
    pair : int array ``[4, 2]``
        Per entry, the two groups (indices into ``labels``) whose rates of finishing k-th differ the most
        relative to their bootstrap spread.
    difference, difference_low, difference_high : float arrays ``[4]``
        That pair's ``p_gk - p_hk`` with its interval (the effect's size).
    chi2, p_value : float arrays ``[4]``
        Pearson's chi-square of homogeneity of "finished k-th" across the groups
        (:func:`~rewardlab.domains.mahjong.rank_statistics.homogeneity_chi2`), ``G - 1`` degrees of freedom,
        and its p-value.
    differs : bool array ``[4]``
        ``p_value < 1 - confidence``: the groups finish k-th at different rates.
    left_out : int
        Episodes in groups too small to keep.
    """

    labels: np.ndarray
    episodes: np.ndarray
    probabilities: np.ndarray
    expected: np.ndarray
    expected_low: np.ndarray
    expected_high: np.ndarray
    stable_rank: np.ndarray
    tau: float
    tau_down: np.ndarray
    tau_up: np.ndarray
    order_low: np.ndarray
    order_high: np.ndarray
    order_low_ci: np.ndarray
    order_high_ci: np.ndarray
    flips: np.ndarray
    pair: np.ndarray
    difference: np.ndarray
    difference_low: np.ndarray
    difference_high: np.ndarray
    chi2: np.ndarray
    p_value: np.ndarray
    differs: np.ndarray
    left_out: int


@dataclasses.dataclass(frozen=True, eq=False)
class RankSensitivity:
    """How a rank reward's figures move with each entry of its vector (:func:`rank_sensitivity`).

    Arrays ``[4]`` are per entry / final rank (0 = first place); ``*_low``, ``*_high``: bootstrap interval.

    Attributes
    ----------
    reward : RankReward
    counts : int array ``[4]``
    probabilities, probabilities_low, probabilities_high
        Fraction of episodes finishing k-th.
    per_game, per_game_low, per_game_high
        ``d (expected reward per game) / d v_k = p_k / std``.
    per_step, per_step_low, per_step_high
        ``d (expected reward per step) / d v_k = count_k / (n_rows * std)``.
    expected_game, expected_step : (float, float, float)
        Expected reward per game / per step, low, high.
    mean_by_rank, mean_by_rank_low, mean_by_rank_high
        Mean reward of the episodes of each final rank (NaN where absent).
    break_even, break_even_low, break_even_high
        The raw ``v_k`` at which the expected reward per game is 0
        (:func:`~rewardlab.domains.mahjong.rank_statistics.break_even`).
    stable_rank : (float, float, float)
        Phoenix stable rank of the data with its interval: a constant in ``v``.
    complete_games : bool
        Every game holds its four players (then ``p_k = 1/4`` exactly).
    step : float
        How far an entry is moved to judge "flips": the vector's spread (1 when it is constant).
    groups : GroupSensitivity or None
    matters : bool array ``[4]``
    reasons : tuple of 4 str
        Why each entry matters or not, in words.
    n_games, n_resamples : int
    confidence : float
    """

    reward: RankReward
    counts: np.ndarray
    probabilities: np.ndarray
    probabilities_low: np.ndarray
    probabilities_high: np.ndarray
    per_game: np.ndarray
    per_game_low: np.ndarray
    per_game_high: np.ndarray
    per_step: np.ndarray
    per_step_low: np.ndarray
    per_step_high: np.ndarray
    expected_game: tuple
    expected_step: tuple
    mean_by_rank: np.ndarray
    mean_by_rank_low: np.ndarray
    mean_by_rank_high: np.ndarray
    break_even: np.ndarray
    break_even_low: np.ndarray
    break_even_high: np.ndarray
    stable_rank: tuple
    complete_games: bool
    step: float
    groups: GroupSensitivity | None
    matters: np.ndarray
    reasons: tuple
    n_games: int
    n_resamples: int
    confidence: float

    @property
    def by_rank_jacobian(self) -> np.ndarray:
        """``d mean_by_rank[j] / d v[k]`` ``[4, 4]``: identity / std (NaN rows for absent ranks)."""
        out = np.eye(K) / self.reward.std
        out[self.counts == 0] = np.nan
        return out


def _codes(groups, n: int, min_group: int):
    labels, codes = np.unique(np.asarray(groups), return_inverse=True)
    if codes.shape != (n,):
        raise ParameterError("groups", f"should have shape [{n}] (one label per episode)", np.shape(groups))
    sizes = np.bincount(codes, minlength=labels.size)
    keep = sizes >= min_group
    if keep.sum() > 256:
        raise ParameterError("groups", "should have at most 256 groups of min_group episodes or more",
                             int(keep.sum()), hint="Group coarser (e.g. by grade, not by player).")
    new = np.full(labels.size, -1, dtype=np.int64)
    new[keep] = np.arange(int(keep.sum()))
    codes = new[codes]
    return labels[keep], codes, int(np.count_nonzero(codes < 0))


def rank_sensitivity(table: RankTable, reward, *, groups=None, min_group: int = 10, n_resamples: int = 200,
                     confidence: float = 0.95, seed: int | None = 0) -> RankSensitivity:
    """How a rank reward's expected reward, by-rank means and group order move with each vector entry.

    Parameters
    ----------
    table : RankTable
        The data's final ranks, scores and games.
    reward : RankReward or 4 numbers
        The rank reward (a bare vector: no points, mean 0, std 1).
    groups : array ``[E]``, optional
        A label per episode (the player's grade, the seat, ...) to compare groups by expected reward.
    min_group : int
        Groups with fewer episodes are left out of the group analysis.
    n_resamples, confidence, seed
        Of the percentile bootstrap over games.

    Returns
    -------
    RankSensitivity

    Examples
    --------
    >>> t = RankTable(rank=np.array([0, 1, 2, 3]), final_score=np.array([40000, 30000, 20000, 10000]),
    ...               row=np.array([9, 19, 29, 39]), game=np.zeros(4, np.int64), seat=np.arange(4), n_rows=40)
    >>> s = rank_sensitivity(t, [1.0, 0.0, 0.0, -1.0], n_resamples=20)
    >>> s.per_game.tolist(), s.per_step.tolist(), s.complete_games
    ([0.25, 0.25, 0.25, 0.25], [0.025, 0.025, 0.025, 0.025], True)
    """
    if not isinstance(table, RankTable):
        raise ParameterError("table", "should be a RankTable", type(table).__name__)
    reward = reward if isinstance(reward, RankReward) else RankReward(reward)
    n_resamples = check_int("n_resamples", n_resamples, low=1)
    min_group = check_int("min_group", min_group, low=1)
    confidence = check_finite("confidence", confidence)
    if not 0.0 < confidence < 1.0:
        raise ParameterError("confidence", "should be in (0, 1)", confidence)
    n = table.episodes
    if n == 0:
        raise ParameterError("table", "should hold at least one episode", 0)
    v, std = np.asarray(reward.vector), reward.std
    rank = table.rank.astype(np.int64)
    onehot = np.eye(K)[rank]  # [E, 4]
    points = reward.points(table.final_score)
    lengths = np.diff(np.concatenate(([-1], table.row))).astype(np.float64)
    columns = [onehot, onehot * points[:, None], lengths[:, None]]
    if groups is not None:
        labels, codes, left_out = _codes(groups, n, min_group)
        n_groups = labels.size
        gh = np.zeros((n, n_groups * K))
        inside = codes >= 0
        gh[np.flatnonzero(inside), codes[inside] * K + rank[inside]] = 1.0
        gp = np.zeros((n, n_groups))
        gp[np.flatnonzero(inside), codes[inside]] = points[inside]
        columns += [gh, gp]
    per_game = game_sums(table.game, np.concatenate(columns, axis=1))
    data = per_game.sum(axis=0)[None, :]
    boot = bootstrap_game_sums(per_game, n_resamples, seed)

    def figures(sums):
        counts, pts, rows = sums[:, :K], sums[:, K:2 * K], sums[:, 2 * K]
        total = counts.sum(axis=1, keepdims=True)
        with np.errstate(divide="ignore", invalid="ignore"):
            p = counts / total
            by_rank = (v + pts / counts - reward.mean) / std
            mean_points = pts.sum(axis=1) / total[:, 0]
            exp_game = (p @ v + mean_points - reward.mean) / std
            exp_step = ((counts @ v + pts.sum(axis=1)) - reward.mean * total[:, 0]) / std / rows
            be = break_even(p, v, level=reward.mean - mean_points)
            return {"p": p, "per_game": p / std, "per_step": counts / (rows[:, None] * std), "by_rank": by_rank,
                    "exp_game": exp_game, "exp_step": exp_step, "break_even": be, "stable": stable_rank(counts)}

    point, samples = figures(data), figures(boot)
    ci = {name: _percentiles(samples[name], confidence) for name in point}
    est = {name: point[name][0] for name in point}
    counts = np.bincount(rank, minlength=K)
    spread = float(np.ptp(v))
    step = spread if spread > 0 else 1.0
    complete = complete_games(table)

    group_result = None
    if groups is not None and n_groups >= 2:
        base = 2 * K + 1
        gcount = data[0, base:base + n_groups * K].reshape(n_groups, K)
        bcount = boot[:, base:base + n_groups * K].reshape(-1, n_groups, K)
        gpts, bpts = data[0, base + n_groups * K:], boot[:, base + n_groups * K:]
        with np.errstate(divide="ignore", invalid="ignore"):
            gprob = gcount / gcount.sum(axis=1, keepdims=True)
            bprob = bcount / bcount.sum(axis=2, keepdims=True)
            gexp = (gprob @ v + gpts / gcount.sum(axis=1) - reward.mean) / std
            bexp = (bprob @ v + bpts / bcount.sum(axis=2) - reward.mean) / std
        gstable = stable_rank(gcount)
        moved = v + np.diag(np.full(K, step))  # [4, 4]: row k is v with v_k raised
        lowered = v - np.diag(np.full(K, step))
        exp_at = (lambda vs: (gprob @ vs.T).T + (gpts / gcount.sum(axis=1))[None, :])
        olow, ohigh = order_interval(gprob, v)
        blow, bhigh = order_interval(np.nan_to_num(bprob), v)
        diff = gprob[:, None, :] - gprob[None, :, :]  # [G, G, 4]
        bdiff = bprob[:, :, None, :] - bprob[:, None, :, :]
        with np.errstate(divide="ignore", invalid="ignore"), warnings.catch_warnings():
            warnings.simplefilter("ignore", RuntimeWarning)
            z = np.abs(diff) / np.nanstd(bdiff, axis=0)
        z = np.where(np.isfinite(z), z, np.where(np.abs(diff) > 0, np.inf, 0.0))
        z[np.arange(n_groups), np.arange(n_groups)] = -1.0
        flat = z.reshape(n_groups * n_groups, K).argmax(axis=0)
        pair = np.stack([flat // n_groups, flat % n_groups], axis=1)
        d_est = diff[pair[:, 0], pair[:, 1], np.arange(K)]
        d_boot = bdiff[:, pair[:, 0], pair[:, 1], np.arange(K)]
        d_low, d_high = _percentiles(d_boot, confidence)
        chi2 = homogeneity_chi2(gcount)
        p_value = np.array([chi2_sf(x, n_groups - 1) for x in chi2])
        differs = p_value < 1.0 - confidence
        group_result = GroupSensitivity(
            labels=labels, episodes=gcount.sum(axis=1).astype(np.int64), probabilities=gprob,
            expected=gexp, expected_low=_percentiles(bexp, confidence)[0],
            expected_high=_percentiles(bexp, confidence)[1], stable_rank=gstable,
            tau=float(kendall_tau(gexp, gstable)),
            tau_down=kendall_tau(exp_at(lowered), gstable[None, :]),
            tau_up=kendall_tau(exp_at(moved), gstable[None, :]),
            order_low=olow, order_high=ohigh,
            order_low_ci=np.stack(_percentiles(blow, confidence), axis=1),
            order_high_ci=np.stack(_percentiles(bhigh, confidence), axis=1),
            flips=(olow > v - step) | (ohigh < v + step), pair=pair, difference=d_est,
            difference_low=d_low, difference_high=d_high, chi2=chi2, p_value=p_value, differs=differs,
            left_out=left_out)

    matters, reasons = np.ones(K, dtype=bool), []
    for k in range(K):
        place = ("1st", "2nd", "3rd", "4th")[k]
        if counts[k] == 0:
            matters[k] = False
            reasons.append(f"no episode finishes {place}: v[{k}] is never paid on this data (not identifiable)")
        elif group_result is not None:
            gr = group_result
            a, b = (gr.labels[i] for i in gr.pair[k])
            lo, hi = gr.difference_low[k], gr.difference_high[k]
            matters[k] = bool(gr.differs[k])
            test = f"chi-square p = {gr.p_value[k]:.3g}; largest: {a} vs {b}, [{lo:.3g}, {hi:.3g}]"
            reasons.append(
                f"the {gr.labels.size} groups finish {place} at different rates ({test})" if matters[k] else
                f"the {gr.labels.size} groups finish {place} at rates that do not differ beyond noise ({test}): "
                f"moving v[{k}] shifts every group alike")
        else:
            reasons.append(f"paid on {est['p'][k]:.3g} of the episodes" + (
                " (complete games: 1/4 whatever the play)" if complete else "") + "; no groups to compare")
    return RankSensitivity(
        reward=reward, counts=counts, probabilities=est["p"], probabilities_low=ci["p"][0],
        probabilities_high=ci["p"][1], per_game=est["per_game"], per_game_low=ci["per_game"][0],
        per_game_high=ci["per_game"][1], per_step=est["per_step"], per_step_low=ci["per_step"][0],
        per_step_high=ci["per_step"][1],
        expected_game=(float(est["exp_game"]), float(ci["exp_game"][0]), float(ci["exp_game"][1])),
        expected_step=(float(est["exp_step"]), float(ci["exp_step"][0]), float(ci["exp_step"][1])),
        mean_by_rank=est["by_rank"], mean_by_rank_low=ci["by_rank"][0], mean_by_rank_high=ci["by_rank"][1],
        break_even=est["break_even"], break_even_low=ci["break_even"][0], break_even_high=ci["break_even"][1],
        stable_rank=(float(est["stable"]), float(ci["stable"][0]), float(ci["stable"][1])),
        complete_games=complete, step=step, groups=group_result, matters=matters, reasons=tuple(reasons),
        n_games=int(per_game.shape[0]), n_resamples=n_resamples, confidence=confidence)
