"""The traps' arithmetic: constant and sparse rewards, the normalizer's clip, the discount horizon, float16.

Pure array functions over one flat time axis ``[N]`` (episodes one after
another, as a frame holds them); :mod:`rewardlab.diagnostics.traps` turns
them into findings with the rows that trigger them.  Each threshold is a
module constant, documented where it is defined:

* a reward is **sparse** when it is non-zero on fewer than
  :func:`sparse_limit` rows: ``max(SPARSE_MIN_ROWS, SPARSE_FRACTION * N)``;
* the **discount horizon** trap fires for a terminal-only reward when the
  median episode keeps less than :data:`HORIZON_FACTOR` of it at its start
  (``gamma ** (T - 1)``);
* the **normalizer** clips too much when more than :data:`CLIP_FRACTION` of
  the steps, or :data:`CLIP_NONZERO_FRACTION` of the non-zero-reward steps,
  are clipped (after the first :data:`CLIP_WARMUP` steps); it **swamps** the
  common rewards when some rewards are :data:`SWAMP_RATIO` times the median
  non-zero one or more (raw) and the median non-zero reward comes out below
  :data:`SWAMP_LEVEL` after normalization;
* **float16** rows are those where :func:`rewardlab.contracts.checks.float16_precision`'s
  rule holds row by row (:func:`float16_rows`).

Examples
--------
>>> sparse_limit(1_000_000)
1000
>>> constant_value(np.array([2.0, 2.0])), constant_value(np.array([2.0, 0.0]))
(2.0, None)
"""

from __future__ import annotations

import dataclasses
import math

import numpy as np

from rewardlab.analysis.normalizers import gymnasium_normalize_reward, sb3_normalize_reward
from rewardlab.analysis.returns import as_array
from rewardlab.contracts.checks import PRECISION_TOLERANCE
from rewardlab.core.errors import ParameterError, check_choice, check_in_range, check_positive

__all__ = [
    "SPARSE_MIN_ROWS", "SPARSE_FRACTION", "HORIZON_FACTOR", "CLIP_FRACTION", "CLIP_NONZERO_FRACTION",
    "CLIP_WARMUP", "SWAMP_LEVEL", "SWAMP_RATIO", "NORMALIZERS", "worst_first", "constant_value", "sparse_limit", "nonzero_rows",
    "episode_lengths", "terminal_only", "DiscountHorizon", "discount_horizon", "NormalizerTrap", "normalizer_trap",
    "float16_rows",
]

#: A reward non-zero on fewer rows than ``max(SPARSE_MIN_ROWS, SPARSE_FRACTION * N)`` is sparse.
SPARSE_MIN_ROWS = 10
SPARSE_FRACTION = 1e-3

#: A terminal-only reward is discounted away when the median episode keeps less than this of it at its start.
HORIZON_FACTOR = 1e-2

#: The normalizer clips too much above this fraction of all steps ...
CLIP_FRACTION = 1e-3
#: ... or above this fraction of the steps whose raw reward is not 0.
CLIP_NONZERO_FRACTION = 1e-2
#: Clipped steps among the first this many are not counted (nor reported as rows): a fresh normalizer's
#: variance starts near 0 after its first update, so its first steps come out near ``1 / sqrt(1e-4)`` = 100.
CLIP_WARMUP = 100

#: The common rewards are swamped when the median non-zero reward's normalized magnitude is below this ...
SWAMP_LEVEL = 1e-2
#: ... while some raw rewards are at least this many times the median non-zero raw ``|r|`` (the rare large ones).
SWAMP_RATIO = 100.0

#: The normalizers replayed: Gymnasium's ``NormalizeReward``, SB3's ``VecNormalize``.
NORMALIZERS = ("gymnasium", "sb3")


def worst_first(rows, score) -> np.ndarray:
    """``rows`` ordered by ``score`` (one per row, NaN last), largest first; ties keep frame order.

    Examples
    --------
    >>> worst_first(np.array([3, 5, 9]), np.array([1.0, 4.0, 1.0])).tolist()
    [5, 3, 9]
    """
    rows = np.asarray(rows, dtype=np.int64)
    key = np.nan_to_num(np.asarray(score, dtype=np.float64), nan=-np.inf)
    return rows[np.argsort(-key, kind="stable")]


def constant_value(rewards) -> float | None:
    """The value every reward holds, or None when they differ (or there are none).

    Parameters
    ----------
    rewards : float array of shape ``[N]``
        NaN counts as a value of its own (a NaN among numbers is not constant).

    Examples
    --------
    >>> constant_value(np.zeros(4)), constant_value(np.array([1.0, np.nan]))
    (0.0, None)
    """
    r = as_array(rewards, "rewards")
    if not r.size:
        return None
    first = r[0]
    if np.isnan(first):
        return float(first) if np.isnan(r).all() else None
    return float(first) if bool((r == first).all()) else None


def sparse_limit(n: int) -> int:
    """Rows a reward must be non-zero on, out of ``n``, not to be sparse: ``max(10, ceil(0.001 * n))``.

    Examples
    --------
    >>> sparse_limit(100), sparse_limit(25_000)
    (10, 25)
    """
    if isinstance(n, bool) or not isinstance(n, (int, np.integer)) or n < 0:
        raise ParameterError("n", "should be an integer >= 0", n)
    return max(SPARSE_MIN_ROWS, math.ceil(SPARSE_FRACTION * int(n)))


def nonzero_rows(rewards) -> np.ndarray:
    """Rows whose reward is not 0 (NaN included), largest ``|r|`` first.

    Returns
    -------
    int64 array

    Examples
    --------
    >>> nonzero_rows(np.array([0.0, 1.0, 0.0, -3.0])).tolist()
    [3, 1]
    """
    r = as_array(rewards, "rewards")
    rows = np.flatnonzero(r != 0)
    return worst_first(rows, np.abs(r[rows]))


def episode_lengths(episode_starts) -> np.ndarray:
    """Length of each episode from the rows where they start, then ``N`` (int64 ``[E + 1]`` -> ``[E]``).

    Examples
    --------
    >>> episode_lengths(np.array([0, 3, 4])).tolist()
    [3, 1]
    """
    starts = np.asarray(episode_starts, dtype=np.int64)
    if starts.ndim != 1 or starts.size < 1 or (np.diff(starts) < 0).any():
        raise ParameterError("episode_starts", "should be the rows where episodes start, then N, increasing",
                             starts[:5].tolist())
    return np.diff(starts)


def terminal_only(rewards, episode_starts) -> bool:
    """True when the reward is non-zero somewhere and only on episodes' last rows.

    Parameters
    ----------
    rewards : float array of shape ``[N]``
    episode_starts : int array of shape ``[E + 1]``
        Row where each episode starts, then ``N``.

    Examples
    --------
    >>> terminal_only(np.array([0.0, 0.0, 1.0, 0.0, 2.0]), np.array([0, 3, 5]))
    True
    >>> terminal_only(np.array([0.0, 1.0, 1.0]), np.array([0, 3]))
    False
    """
    r = as_array(rewards, "rewards")
    starts = np.asarray(episode_starts, dtype=np.int64)
    last = np.zeros(r.shape[0], dtype=bool)
    ends = starts[1:][np.diff(starts) > 0] - 1
    last[ends] = True
    nonzero = r != 0
    return bool(nonzero.any() and not (nonzero & ~last).any())


@dataclasses.dataclass(frozen=True)
class DiscountHorizon:
    """How much of a reward at an episode's last step a discount leaves at its start.

    Attributes
    ----------
    gamma : float
    median_length, p90_length : float
        Median and 90th percentile of the episodes' lengths (steps).
    factor, p90_factor : float
        ``gamma ** (length - 1)`` at those lengths: what is left at the start of such an episode.
    horizon : float
        The effective horizon ``1 / (1 - gamma)`` (inf for ``gamma = 1``).
    factors : float64 array of shape ``[E]``
        ``gamma ** (T - 1)`` of every episode.

    Examples
    --------
    >>> h = discount_horizon(np.array([0, 100, 300]), gamma=0.9)
    >>> round(h.horizon, 6), h.median_length
    (10.0, 150.0)
    """

    gamma: float
    median_length: float
    p90_length: float
    factor: float
    p90_factor: float
    horizon: float
    factors: np.ndarray

    @property
    def discounted_away(self) -> bool:
        """True when the median episode keeps less than :data:`HORIZON_FACTOR` of its last reward."""
        return self.factor < HORIZON_FACTOR


def discount_horizon(episode_starts, *, gamma: float) -> DiscountHorizon:
    """What ``gamma`` leaves of a terminal reward at the start of the episodes (see :class:`DiscountHorizon`).

    Parameters
    ----------
    episode_starts : int array of shape ``[E + 1]``
        Row where each episode starts, then ``N`` (at least one episode).
    gamma : float
        The discount, in ``(0, 1]``.

    Examples
    --------
    >>> h = discount_horizon(np.array([0, 1000]), gamma=0.99)
    >>> h.factor < HORIZON_FACTOR, h.discounted_away
    (True, True)
    """
    gamma = check_in_range("gamma", gamma, 0.0, 1.0)
    if gamma <= 0:
        raise ParameterError("gamma", "should be in (0, 1]", gamma)
    lengths = episode_lengths(episode_starts)
    if not lengths.size:
        raise ParameterError("episode_starts", "should hold at least one episode", np.asarray(episode_starts).tolist())
    median, p90 = (float(v) for v in np.percentile(lengths, [50, 90]))
    factors = np.power(gamma, np.maximum(lengths - 1, 0).astype(np.float64))
    return DiscountHorizon(gamma=float(gamma), median_length=median, p90_length=p90,
                           factor=float(gamma ** max(median - 1, 0.0)), p90_factor=float(gamma ** max(p90 - 1, 0.0)),
                           horizon=math.inf if gamma == 1 else 1.0 / (1.0 - gamma), factors=factors)


@dataclasses.dataclass(frozen=True, eq=False)
class NormalizerTrap:
    """A running reward normalizer replayed over a reward stream, and what it does to the rewards.

    Attributes
    ----------
    normalizer : str
        ``"gymnasium"`` (``NormalizeReward``) or ``"sb3"`` (``VecNormalize``).
    clip : float
        The clip bound (``VecNormalize(clip_reward=...)``; Gymnasium's wrapper does not clip: the steps beyond
        it are those a ``ClipReward(-clip, clip)`` after it would clip).
    rewards : float64 array of shape ``[N]``
        The raw rewards.
    scaled : float64 array of shape ``[N]``
        ``r / sqrt(var + epsilon)`` before any clip.
    normalized : float64 array of shape ``[N]``
        What the agent receives (SB3's float32 values, clipped).
    clipped : bool array of shape ``[N]``
        ``|scaled| > clip``.
    nonzero : bool array of shape ``[N]``
        Rows whose raw reward is not 0.
    median_nonzero : float
        Median ``|scaled|`` over the non-zero rewards (NaN when there are none).
    max_abs : float
        Largest ``|scaled|`` (0.0 for no steps).

    Examples
    --------
    >>> t = normalizer_trap(np.array([0.0, 0.0, 5.0]), np.array([False, False, True]),
    ...                     np.array([False, False, True]), normalizer="sb3", clip=1.0)
    >>> t.clipped.tolist(), t.fraction_clipped  # within the warm-up: not counted
    ([False, False, True], 0.0)
    """

    normalizer: str
    clip: float
    rewards: np.ndarray
    scaled: np.ndarray
    normalized: np.ndarray
    clipped: np.ndarray
    nonzero: np.ndarray
    median_nonzero: float
    max_abs: float

    @property
    def counted(self) -> np.ndarray:
        """Bool ``[N]``: the clipped steps after the first :data:`CLIP_WARMUP` (what the verdict counts)."""
        out = self.clipped.copy()
        out[:CLIP_WARMUP] = False
        return out

    @property
    def fraction_clipped(self) -> float:
        """Fraction of the steps after the warm-up that are clipped (0.0 for none)."""
        rest = self.clipped.shape[0] - min(CLIP_WARMUP, self.clipped.shape[0])
        return float(self.counted.sum() / rest) if rest else 0.0

    @property
    def nonzero_fraction_clipped(self) -> float:
        """Fraction of the non-zero-reward steps after the warm-up that are clipped (0.0 when there are none)."""
        count = int(self.nonzero[CLIP_WARMUP:].sum())
        return float((self.counted & self.nonzero).sum() / count) if count else 0.0

    @property
    def clips_too_much(self) -> bool:
        """More than :data:`CLIP_FRACTION` of the steps or :data:`CLIP_NONZERO_FRACTION` of the non-zero ones."""
        return self.fraction_clipped > CLIP_FRACTION or self.nonzero_fraction_clipped > CLIP_NONZERO_FRACTION

    @property
    def dominating(self) -> np.ndarray:
        """Bool ``[N]``: the rare large rewards, raw ``|r|`` at least :data:`SWAMP_RATIO` times the median non-zero one."""
        magnitude = np.abs(self.rewards)
        if not self.nonzero.any():
            return np.zeros(magnitude.shape[0], dtype=bool)
        return self.nonzero & (magnitude >= SWAMP_RATIO * float(np.median(magnitude[self.nonzero])))

    @property
    def swamped(self) -> bool:
        """Rare large rewards (:attr:`dominating`) exist and the median non-zero reward normalizes below
        :data:`SWAMP_LEVEL`."""
        m = self.median_nonzero
        return bool(np.isfinite(m) and m < SWAMP_LEVEL and self.dominating.any())


def normalizer_trap(rewards, terminated, done, *, normalizer: str, gamma: float = 0.99, clip: float = 10.0,
                    epsilon: float = 1e-8) -> NormalizerTrap:
    """Replay ``normalizer`` over the rewards (one environment, frame order) and measure its clip and swamping.

    Uses rewardlab's exact replays (:mod:`rewardlab.analysis.normalizers`): Gymnasium's ``NormalizeReward``
    resets its running return on ``terminated`` only; SB3's ``VecNormalize`` after every ``done`` and sees the
    rewards as float32 (``DummyVecEnv`` stores them so).

    Parameters
    ----------
    rewards : float array of shape ``[N]``
    terminated : bool array of shape ``[N]``
        Gymnasium's reset flags (episode ends that were not cut).
    done : bool array of shape ``[N]``
        SB3's ``done``: every episode end.
    normalizer : {"gymnasium", "sb3"}
    gamma, epsilon : float
        The normalizer's discount and variance epsilon.
    clip : float
        The clip bound, > 0.

    Returns
    -------
    NormalizerTrap

    Examples
    --------
    >>> t = normalizer_trap(np.ones(4), np.zeros(4, bool), np.zeros(4, bool), normalizer="gymnasium")
    >>> t.normalized.shape, t.swamped
    ((4,), False)
    """
    check_choice("normalizer", normalizer, NORMALIZERS)
    clip = float(check_positive("clip", clip))
    r = as_array(rewards, "rewards")
    if normalizer == "gymnasium":
        replay = gymnasium_normalize_reward(r, terminated, gamma=gamma, epsilon=epsilon)
        seen = r
    else:
        seen = r.astype(np.float32)
        replay = sb3_normalize_reward(seen, done, gamma=gamma, epsilon=epsilon, clip_reward=clip)
    scaled = seen.astype(np.float64) / np.sqrt(replay.var + epsilon)
    clipped = replay.clipped if normalizer == "sb3" else np.abs(scaled) > clip
    nonzero = r != 0
    magnitude = np.abs(scaled)
    median = float(np.median(magnitude[nonzero])) if nonzero.any() else math.nan
    return NormalizerTrap(normalizer=normalizer, clip=clip, rewards=r, scaled=scaled,
                          normalized=replay.normalized.astype(np.float64), clipped=np.asarray(clipped, dtype=bool),
                          nonzero=nonzero, median_nonzero=median,
                          max_abs=float(magnitude.max()) if magnitude.size else 0.0)


def float16_rows(rewards, *, tolerance: float = PRECISION_TOLERANCE) -> np.ndarray:
    """Rows where float16 loses what :func:`~rewardlab.contracts.checks.float16_precision` warns about, worst first.

    The same rule, row by row: a row is affected when float16's rounding at its value (``2 ** (e - 11)`` for
    ``2 ** e <= |v| < 2 ** (e + 1)``) exceeds ``tolerance`` of the spread of the non-zero rewards; when no row
    is, but the rewards reach ``|v| >= 2048`` (where float16 cannot hold every integer), the rows that do.
    Empty exactly when ``float16_precision`` returns None (the rounding grows with ``|v|``, so the largest
    reward is affected whenever any is).

    Parameters
    ----------
    rewards : float array of shape ``[N]``
        The rewards as the plug-in returned them (NaN and 0 are never affected).
    tolerance : float
        As ``float16_precision``.

    Returns
    -------
    int64 array
        The rows, largest ``|v|`` first.

    Examples
    --------
    >>> float16_rows(np.array([3000.0, 0.0, 3002.0, 3004.0])).tolist()
    [3, 2, 0]
    >>> float16_rows(np.array([0.0, 1.0, -1.0, 0.5])).tolist()
    []
    """
    r = as_array(rewards, "rewards")
    ok = np.isfinite(r) & (r != 0)
    rows = np.flatnonzero(ok)
    if not rows.size:
        return rows.astype(np.int64)
    values = r[rows]
    magnitude = np.abs(values)
    top = float(magnitude.max())
    exponent = np.maximum(np.floor(np.log2(magnitude)), -14)  # below 2**-14 float16 is subnormal
    rounding = np.power(2.0, exponent - 11)
    spread = float(values.std()) or top
    hit = rounding > tolerance * spread
    if not hit.any():
        hit = magnitude >= 2048 if top >= 2048 else hit
    return worst_first(rows[hit], magnitude[hit])
