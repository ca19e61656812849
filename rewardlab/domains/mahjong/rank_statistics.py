"""Rank statistics on recorded final ranks: counts, game-level bootstrap, break-even, group order, tests.

The array pieces of the rank-vector sensitivity analysis
(:func:`rewardlab.domains.mahjong.sensitivity.rank_sensitivity`), each a pure
function of numpy arrays with a plain-loop reference ``*_loop`` that the
tests compare it against:

* reading a rank vector back from end-of-game rewards
  (:func:`recover_rank_vector`);
* rank counts per group and column sums per game, and their percentile
  bootstrap over **games** (:func:`group_rank_counts`, :func:`game_sums`,
  :func:`bootstrap_game_sums`; the four players of a game are not
  independent, so games are what is resampled);
* the break-even value of each entry of a rank vector
  (:func:`break_even`), the range of each entry keeping an order of groups
  (:func:`order_interval`) and the agreement of two orders
  (:func:`kendall_tau`);
* Pearson's chi-square of homogeneity of "finished k-th" across groups
  (:func:`homogeneity_chi2`, :func:`chi2_sf`).

Examples
--------
>>> import numpy as np
>>> from rewardlab.domains.mahjong.rank_statistics import break_even, order_interval
>>> p = np.array([0.3, 0.25, 0.25, 0.2])
>>> break_even(p, [90.0, 45.0, 0.0, -135.0]).round(2).tolist()
[52.5, 0.0, -45.0, -191.25]
>>> low, high = order_interval(np.array([[0.3, 0.2, 0.3, 0.2], [0.2, 0.3, 0.3, 0.2]]), [1.0, 0.0, 0.0, -1.0])
>>> low.tolist(), high.tolist()
([0.0, -inf, -inf, -inf], [inf, 1.0, inf, inf])
"""

from __future__ import annotations

import dataclasses
import math

import numpy as np

from rewardlab.core.errors import ParameterError, check_int
from rewardlab.domains.mahjong.ranking import RankTable
from rewardlab.sources.kanachan import schema as S

__all__ = [
    "K", "check_rank_vector", "RankVectorFit", "recover_rank_vector", "recover_rank_vector_loop",
    "group_rank_counts", "group_rank_counts_loop",
    "game_sums", "game_sums_loop", "bootstrap_game_sums", "bootstrap_game_sums_loop", "complete_games",
    "break_even", "break_even_loop", "order_interval", "order_interval_loop",
    "kendall_tau", "kendall_tau_loop", "chi2_sf", "homogeneity_chi2", "homogeneity_chi2_loop",
]

K = S.NUM_SEATS


def check_rank_vector(v, name: str = "vector") -> np.ndarray:
    """Check a rank vector (4 finite numbers: the reward for 1st, 2nd, 3rd, 4th); float64 ``[4]``.

    Raises :class:`~rewardlab.core.errors.ParameterError` naming ``name`` otherwise.

    Examples
    --------
    >>> check_rank_vector([1, 0, 0, -1]).tolist()
    [1.0, 0.0, 0.0, -1.0]
    >>> check_rank_vector([1, 0, -1])
    Traceback (most recent call last):
    ...
    rewardlab.core.errors.ParameterError: ...
    """
    arr = np.asarray(v, dtype=np.float64)
    if arr.shape != (K,) or not np.all(np.isfinite(arr)):
        raise ParameterError(name, "should be 4 finite numbers (reward for 1st, 2nd, 3rd, 4th)",
                             np.asarray(v).tolist() if np.asarray(v).size <= 8 else np.asarray(v).shape)
    return arr



# --------------------------------------------------------------------------
# Reading a rank vector back from rewards
# --------------------------------------------------------------------------


@dataclasses.dataclass(frozen=True)
class RankVectorFit:
    """Whether end-of-game rewards are a pure rank vector on this data (:func:`recover_rank_vector`).

    Attributes
    ----------
    vector : float array ``[4]``
        The reward paid to each final rank (NaN for a rank that never occurs).
    counts : int array ``[4]``
        Episodes per final rank.
    spread : float array ``[4]``
        Largest minus smallest reward paid to each rank (0 for a pure rank vector; NaN when absent).
    pure : bool
        True when every rank's spread is within the tolerance.
    worst : int
        An episode of the rank with the largest spread, paid its rank's extreme (-1 when pure).
    """

    vector: np.ndarray
    counts: np.ndarray
    spread: np.ndarray
    pure: bool
    worst: int


def _check_ranks(rank, rewards=None):
    r = np.asarray(rank)
    if r.ndim != 1 or (r.size and (r.min() < 0 or r.max() > K - 1)):
        raise ParameterError("rank", "should be 1-D final ranks 0-3", r.shape if r.ndim != 1 else int(r.max()))
    r = r.astype(np.int64)
    if rewards is None:
        return r
    x = np.asarray(rewards, dtype=np.float64)
    if x.shape != r.shape:
        raise ParameterError("rewards", f"should have shape [{r.size}] (one per episode)", x.shape)
    return r, x


def recover_rank_vector(rank, rewards, *, rtol: float = 1e-9) -> RankVectorFit:
    """Read the rank vector back from each episode's end-of-game reward, if there is one.

    Parameters
    ----------
    rank : int array ``[E]``
        Final ranks, 0 = top.
    rewards : float array ``[E]``
        The reward of each episode's end-of-game step.
    rtol : float
        A rank's rewards count as equal when their spread is at most ``rtol * max(1, max |reward|)``.

    Returns
    -------
    RankVectorFit

    Examples
    --------
    >>> fit = recover_rank_vector(np.array([0, 1, 1, 3]), np.array([2.0, 0.5, 0.5, -1.0]))
    >>> fit.pure, fit.vector.tolist()
    (True, [2.0, 0.5, nan, -1.0])
    """
    r, x = _check_ranks(rank, rewards)
    hi = np.full(K, -np.inf)
    lo = np.full(K, np.inf)
    np.maximum.at(hi, r, x)
    np.minimum.at(lo, r, x)
    counts = np.bincount(r, minlength=K)
    present = counts > 0
    spread = np.where(present, hi - lo, np.nan)
    vector = np.where(present, np.bincount(r, weights=x, minlength=K) / np.maximum(counts, 1), np.nan)
    tol = rtol * max(1.0, float(np.abs(x).max()) if x.size else 0.0)
    pure = bool(np.all(~present | (spread <= tol)))
    worst = -1
    if not pure:
        k = int(np.nanargmax(spread))
        worst = int(np.flatnonzero((r == k) & (np.abs(x - vector[k]) == np.abs(x - vector[k])[r == k].max()))[0])
    return RankVectorFit(vector, counts, spread, pure, worst)


def recover_rank_vector_loop(rank, rewards, *, rtol: float = 1e-9) -> tuple[np.ndarray, bool]:
    """Plain-loop reference of :func:`recover_rank_vector`: ``(vector, pure)``.

    Examples
    --------
    >>> recover_rank_vector_loop([0, 0], [1.0, 2.0])[1]
    False
    """
    seen: dict[int, list] = {}
    for k, x in zip(rank, rewards):
        seen.setdefault(int(k), []).append(float(x))
    scale = max([1.0] + [abs(float(x)) for x in rewards])
    vector, pure = np.full(K, np.nan), True
    for k, xs in seen.items():
        vector[k] = sum(xs) / len(xs)
        if max(xs) - min(xs) > rtol * scale:
            pure = False
    return vector, pure


# --------------------------------------------------------------------------
# Counts per group, per game, and their bootstrap
# --------------------------------------------------------------------------


def group_rank_counts(rank, groups, n_groups: int) -> np.ndarray:
    """Rank counts per group, float64 ``[n_groups, 4]``.

    Parameters
    ----------
    rank : int array ``[E]``
    groups : int array ``[E]``
        Group codes 0 .. n_groups - 1 (negative: in no group).

    Examples
    --------
    >>> group_rank_counts(np.array([0, 1, 1]), np.array([0, 0, 1]), 2).tolist()
    [[1.0, 1.0, 0.0, 0.0], [0.0, 1.0, 0.0, 0.0]]
    """
    r = _check_ranks(rank)
    g = np.asarray(groups, dtype=np.int64)
    keep = g >= 0
    flat = np.bincount(g[keep] * K + r[keep], minlength=n_groups * K)
    return flat.reshape(n_groups, K).astype(np.float64)


def group_rank_counts_loop(rank, groups, n_groups: int) -> np.ndarray:
    """Plain-loop reference of :func:`group_rank_counts`."""
    out = np.zeros((n_groups, K))
    for k, g in zip(rank, groups):
        if g >= 0:
            out[int(g), int(k)] += 1.0
    return out


def game_sums(game, values) -> np.ndarray:
    """Sum the rows of ``values`` ``[E, C]`` per game (``game`` ``[E]``), games in sorted order: ``[G, C]``.

    Examples
    --------
    >>> game_sums(np.array([5, 2, 5]), np.array([[1.0], [2.0], [3.0]])).tolist()
    [[2.0], [4.0]]
    """
    game = np.asarray(game)
    x = np.asarray(values, dtype=np.float64)
    if x.ndim != 2 or x.shape[0] != game.shape[0]:
        raise ParameterError("values", f"should have shape [{game.shape[0]}, C]", x.shape)
    if game.size == 0:
        return np.zeros((0, x.shape[1]))
    order = np.argsort(game, kind="stable")
    g = game[order]
    starts = np.flatnonzero(np.concatenate(([True], g[1:] != g[:-1])))
    return np.add.reduceat(x[order], starts, axis=0)


def game_sums_loop(game, values) -> np.ndarray:
    """Plain-loop reference of :func:`game_sums`."""
    acc: dict = {}
    for gm, row in zip(game, np.asarray(values, dtype=np.float64)):
        acc[gm] = acc.get(gm, 0.0) + row
    return np.array([acc[k] for k in sorted(acc)]).reshape(len(acc), -1)


def _resample_weights(n_games: int, n_resamples: int, seed: int | None):
    """How often each game is drawn in each resample: yields int ``[b, n_games]`` chunks, seeded."""
    rng = np.random.default_rng(seed)
    chunk = max(1, 4_000_000 // max(n_games, 1))
    probs = np.full(n_games, 1.0 / n_games)
    for start in range(0, n_resamples, chunk):
        yield rng.multinomial(n_games, probs, size=min(chunk, n_resamples - start))


def bootstrap_game_sums(per_game, n_resamples: int, seed: int | None = 0) -> np.ndarray:
    """Column sums over ``n_resamples`` resamples of the games (rows of ``per_game`` ``[G, C]``): ``[B, C]``.

    Examples
    --------
    >>> bootstrap_game_sums(np.ones((3, 2)), 4, seed=0).tolist()
    [[3.0, 3.0], [3.0, 3.0], [3.0, 3.0], [3.0, 3.0]]
    """
    x = np.asarray(per_game, dtype=np.float64)
    n_resamples = check_int("n_resamples", n_resamples, low=1)
    if x.shape[0] == 0:
        return np.zeros((n_resamples, x.shape[1]))
    return np.concatenate([w @ x for w in _resample_weights(x.shape[0], n_resamples, seed)])


def bootstrap_game_sums_loop(per_game, n_resamples: int, seed: int | None = 0) -> np.ndarray:
    """Plain-loop reference of :func:`bootstrap_game_sums` (the same draws, summed game by game)."""
    x = np.asarray(per_game, dtype=np.float64)
    out = np.zeros((n_resamples, x.shape[1]))
    b = 0
    for weights in _resample_weights(x.shape[0], n_resamples, seed):
        for w in weights:
            for g in range(x.shape[0]):
                out[b] += w[g] * x[g]
            b += 1
    return out


def complete_games(table: RankTable) -> bool:
    """True when every game of the table has its four players, one per final rank.

    Examples
    --------
    >>> def table(game):
    ...     n = len(game)
    ...     return RankTable(rank=np.arange(n) % 4, final_score=np.full(n, 25000), row=np.arange(n) * 10 + 9,
    ...                      game=np.array(game), seat=np.arange(n) % 4, n_rows=10 * n)
    >>> complete_games(table([0, 0, 0, 0])), complete_games(table([0, 0, 0, 0, 1]))
    (True, False)
    """
    counts = table.game_rank_counts()
    return bool(counts.size) and bool(np.all(counts == 1.0))


# --------------------------------------------------------------------------
# Break-even, order intervals, rank agreement
# --------------------------------------------------------------------------


def break_even(probabilities, vector, *, level: float = 0.0) -> np.ndarray:
    """Per entry ``k``: the ``v_k`` at which ``p . v`` equals ``level``, the other entries fixed.

    ``(level - sum_{j != k} p_j v_j) / p_k``; NaN where ``p_k`` is 0.  For Tenhou's vector the 4th entry's
    break-even is ``-15 * (stable_rank + 2)``.

    Parameters
    ----------
    probabilities : float array ``[..., 4]``
    vector : 4 numbers
    level : float or array ``[...]``

    Returns
    -------
    float64 array ``[..., 4]``

    Examples
    --------
    >>> from rewardlab.domains.mahjong.ranking import stable_rank
    >>> p = np.array([0.3, 0.25, 0.25, 0.2])
    >>> bool(np.isclose(-break_even(p, [90.0, 45.0, 0.0, -135.0])[3] / 15 - 2, stable_rank(p)))
    True
    """
    p = np.asarray(probabilities, dtype=np.float64)
    v = check_rank_vector(vector)
    rest = (p @ v)[..., None] - p * v
    with np.errstate(divide="ignore", invalid="ignore"):
        out = (np.asarray(level, dtype=np.float64)[..., None] - rest) / p
    return np.where(p > 0, out, np.nan)


def break_even_loop(probabilities, vector, *, level: float = 0.0) -> np.ndarray:
    """Plain-loop reference of :func:`break_even` for one distribution ``[4]``."""
    out = np.full(K, np.nan)
    for k in range(K):
        if probabilities[k] > 0:
            rest = sum(probabilities[j] * vector[j] for j in range(K) if j != k)
            out[k] = (level - rest) / probabilities[k]
    return out


def order_interval(probabilities, vector, *, rtol: float = 1e-12) -> tuple[np.ndarray, np.ndarray]:
    """Per entry ``k``: the range of ``v_k`` over which the order of groups by expected reward stays as at ``v``.

    Group ``g``'s expected reward is ``E_g = p_g . v``; as ``v_k`` moves to ``t`` (others fixed),
    ``E_g - E_h`` changes sign at ``t = v_k - (E_g - E_h) / (p_gk - p_hk)``.  The interval runs from the
    nearest such crossing below ``v_k`` to the nearest above (``-inf`` / ``inf`` when there is none); two
    groups tied at ``v`` whose ``p_k`` differ make it the single point ``v_k``.

    Parameters
    ----------
    probabilities : float array ``[..., G, 4]``
        Rank distributions of the groups (leading axes: e.g. bootstrap resamples).
    vector : 4 numbers
    rtol : float
        A crossing within ``rtol * max(1, max |v|)`` of ``v_k`` counts as a tie at ``v``.

    Returns
    -------
    low, high : float64 arrays ``[..., 4]``

    Examples
    --------
    >>> low, high = order_interval(np.array([[0.5, 0, 0.25, 0.25], [0.25, 0.25, 0.25, 0.25]]), [1, 0, 0, -1])
    >>> low.tolist(), high.tolist()
    ([0.0, -inf, -inf, -inf], [inf, 1.0, inf, inf])
    """
    p = np.asarray(probabilities, dtype=np.float64)
    if p.ndim < 2 or p.shape[-1] != K:
        raise ParameterError("probabilities", "should have shape [..., G, 4]", p.shape)
    v = check_rank_vector(vector)
    g = p.shape[-2]
    e = p @ v
    de = e[..., :, None] - e[..., None, :]  # [..., G, G]
    dp = p[..., :, None, :] - p[..., None, :, :]  # [..., G, G, 4]
    upper = np.triu(np.ones((g, g), dtype=bool), 1)[..., None]
    valid = upper & (dp != 0)
    with np.errstate(divide="ignore", invalid="ignore"):
        t = v - de[..., None] / dp
    tol = rtol * max(1.0, float(np.abs(v).max()))
    tie = valid & (np.abs(t - v) <= tol)
    below = np.where(valid & (t < v - tol), t, -np.inf).max(axis=(-3, -2), initial=-np.inf)
    above = np.where(valid & (t > v + tol), t, np.inf).min(axis=(-3, -2), initial=np.inf)
    tied = tie.any(axis=(-3, -2))
    vb = np.broadcast_to(v, below.shape)
    return np.where(tied, vb, below), np.where(tied, vb, above)


def order_interval_loop(probabilities, vector, *, rtol: float = 1e-12) -> tuple[np.ndarray, np.ndarray]:
    """Plain-loop reference of :func:`order_interval` for one set of groups ``[G, 4]``."""
    p = [list(map(float, row)) for row in probabilities]
    v = [float(x) for x in vector]
    e = [sum(row[k] * v[k] for k in range(K)) for row in p]
    tol = rtol * max([1.0] + [abs(x) for x in v])
    low, high = [-np.inf] * K, [np.inf] * K
    for k in range(K):
        tied = False
        for a in range(len(p)):
            for b in range(a + 1, len(p)):
                slope = p[a][k] - p[b][k]
                if slope == 0:
                    continue
                t = v[k] - (e[a] - e[b]) / slope
                if abs(t - v[k]) <= tol:
                    tied = True
                elif t < v[k]:
                    low[k] = max(low[k], t)
                else:
                    high[k] = min(high[k], t)
        if tied:
            low[k] = high[k] = v[k]
    return np.array(low), np.array(high)


def _signs(x: np.ndarray) -> np.ndarray:
    with np.errstate(invalid="ignore"):
        d = x[..., :, None] - x[..., None, :]
    return np.nan_to_num(np.sign(d), nan=0.0)


def kendall_tau(x, y) -> np.ndarray:
    """Kendall's tau-b between ``x`` and ``y`` along the last axis (``inf - inf`` and NaN count as ties).

    Returns NaN where either has no untied pair.

    Examples
    --------
    >>> float(kendall_tau([1.0, 2.0, 3.0], [10.0, 30.0, 20.0]))
    0.3333333333333333
    """
    sx, sy = _signs(np.asarray(x, dtype=np.float64)), _signs(np.asarray(y, dtype=np.float64))
    s = (sx * sy).sum(axis=(-2, -1)) / 2.0
    nx = (sx != 0).sum(axis=(-2, -1)) / 2.0
    ny = (sy != 0).sum(axis=(-2, -1)) / 2.0
    with np.errstate(divide="ignore", invalid="ignore"):
        return np.where((nx > 0) & (ny > 0), s / np.sqrt(nx * ny), np.nan)


def kendall_tau_loop(x, y) -> float:
    """Plain-loop reference of :func:`kendall_tau` for 1-D inputs."""
    def sign(d):
        return 0.0 if d != d or d == 0 else (1.0 if d > 0 else -1.0)
    s = nx = ny = 0.0
    for i in range(len(x)):
        for j in range(i + 1, len(x)):
            with np.errstate(invalid="ignore"):
                a, b = sign(np.float64(x[i]) - x[j]), sign(np.float64(y[i]) - y[j])
            s += a * b
            nx += a != 0
            ny += b != 0
    return s / np.sqrt(nx * ny) if nx and ny else float("nan")


def chi2_sf(x: float, df: int) -> float:
    """Survival function of the chi-square distribution with integer ``df`` (closed forms, no SciPy).

    Examples
    --------
    >>> round(chi2_sf(3.841458820694124, 1), 6), round(chi2_sf(5.991464547107979, 2), 6)
    (0.05, 0.05)
    """
    df = check_int("df", df, low=1)
    x = float(x)
    if not x > 0:
        return 1.0
    if math.isinf(x):
        return 0.0
    y = x / 2.0
    if df % 2 == 0:  # Q(m, y) = exp(-y) sum_{i<m} y^i / i!
        term = total = 1.0
        for i in range(1, df // 2):
            term *= y / i
            total += term
        return min(1.0, math.exp(-y) * total)
    total = math.erfc(math.sqrt(y))  # Q(m + 1/2, y) = erfc(sqrt y) + exp(-y) sum_{i=1..m} y^(i-1/2) / G(i+1/2)
    term = math.sqrt(y) / math.gamma(1.5)
    for i in range(1, (df - 1) // 2 + 1):
        if i > 1:
            term *= y / (i - 0.5)
        total += math.exp(-y) * term
    return min(1.0, total)


def homogeneity_chi2(group_counts) -> np.ndarray:
    """Per rank ``k``: Pearson's chi-square of "finished k-th" versus not, across groups ``[G, 4]`` -> ``[4]``.

    ``sum_g (n_gk - n_g p_k)^2 / (n_g p_k (1 - p_k))`` with the pooled ``p_k``; 0 where ``p_k`` is 0 or 1.

    Examples
    --------
    >>> homogeneity_chi2(np.array([[10.0, 0, 0, 10], [0, 10, 10, 0]])).tolist()
    [13.333333333333334, 13.333333333333334, 13.333333333333334, 13.333333333333334]
    """
    c = np.asarray(group_counts, dtype=np.float64)
    n = c.sum(axis=1, keepdims=True)
    c, n = c[n[:, 0] > 0], n[n[:, 0] > 0]
    p = c.sum(axis=0) / max(float(n.sum()), 1.0)
    with np.errstate(divide="ignore", invalid="ignore"):
        t = ((c - n * p) ** 2 / (n * p * (1.0 - p))).sum(axis=0)
    return np.where((p > 0) & (p < 1), t, 0.0)


def homogeneity_chi2_loop(group_counts) -> np.ndarray:
    """Plain-loop reference of :func:`homogeneity_chi2`: the 2 x G table's sum of (O - E)^2 / E."""
    rows = [list(map(float, r)) for r in group_counts if sum(r) > 0]
    total = sum(sum(r) for r in rows)
    out = np.zeros(K)
    for k in range(K):
        hits = sum(r[k] for r in rows)
        if hits in (0.0, total):
            continue
        for r in rows:
            n = sum(r)
            for observed, expected in ((r[k], n * hits / total), (n - r[k], n * (total - hits) / total)):
                out[k] += (observed - expected) ** 2 / expected
    return out

