"""Axis limits that show the bulk of a distribution, and what they leave out.

One extreme value flattens a histogram: a running normalizer's first steps
(Gymnasium's ``NormalizeReward`` divides by a standard deviation of almost
nothing) reach -70 while every other step lies within ±0.2, and 50 equal
bins over [-70, 0] leave the distribution a one-pixel spike.
:func:`display_limits` chooses limits from robust quantiles and counts the
values outside them; the plots (:mod:`rewardlab.plots`, which compute
nothing) draw within the limits and write :attr:`DisplayLimits.note` under
the axis, so what was left out is said, with its extremes.

The rule
--------
With ``q_lo, q_hi`` the ``quantiles`` of the finite values and
``span = q_hi - q_lo``, the limits are
``[max(min, q_lo - reach * span), min(max, q_hi + reach * span)]``: the data's
own range whenever no value lies further than ``reach`` spans beyond the
quantiles, so a well-behaved distribution (a normal sample of any size, a few
discrete values) is shown whole and nothing is left out.  When the quantiles
coincide (``span == 0``: nearly every value equal) there is no scale to judge
distance by, and the whole range is kept.  Non-finite values are not drawn
by a histogram either; they are counted apart (:attr:`DisplayLimits.nonfinite`).

Examples
--------
>>> import numpy as np
>>> x = np.concatenate([np.linspace(-1.0, 1.0, 999), [-70.0]])
>>> limits = display_limits(x)
>>> round(limits.low, 2), limits.high, limits.outside
(-2.94, 1.0, 1)
>>> limits.note
'1 value outside the limits, min -70, max 1'
"""

from __future__ import annotations

import dataclasses
import math
from typing import Mapping

import numpy as np
import polars as pl

from rewardlab.analysis.normalizers import replay_methods
from rewardlab.core.errors import ColumnNotFoundError, ParameterError, check_finite, check_in_range

__all__ = ["DisplayLimits", "display_limits", "series_limits", "normalization_limits", "DEFAULT_QUANTILES",
           "DEFAULT_REACH"]

#: Quantiles whose span measures the bulk.
DEFAULT_QUANTILES = (0.01, 0.99)
#: How many spans beyond the quantiles a value may lie and still be shown.
DEFAULT_REACH = 1.0


@dataclasses.dataclass(frozen=True)
class DisplayLimits:
    """Axis limits for a distribution and what lies outside them.

    Attributes
    ----------
    low, high : float
        The limits (``low <= high``; equal when every value is).
    count : int
        Finite values the limits were chosen from.
    below, above : int
        Finite values under ``low`` and over ``high``.
    minimum, maximum : float
        The extremes of all finite values (NaN when there are none).
    nonfinite : int
        NaN and infinite values (never drawn).
    """

    low: float
    high: float
    count: int
    below: int
    above: int
    minimum: float
    maximum: float
    nonfinite: int = 0

    @property
    def outside(self) -> int:
        """Finite values outside ``[low, high]``."""
        return self.below + self.above

    @property
    def range(self) -> tuple[float, float]:
        """``(low, high)``, e.g. the ``range=`` of a histogram."""
        return (self.low, self.high)

    @property
    def note(self) -> str:
        """What the limits leave out, for the axis (empty when nothing is left out).

        Examples
        --------
        >>> DisplayLimits(0.0, 1.0, 10, 2, 1, -5.0, 9.0).note
        '3 values outside the limits, min -5, max 9'
        >>> DisplayLimits(0.0, 1.0, 10, 0, 0, 0.0, 1.0, nonfinite=1).note
        '1 value not finite'
        """
        parts = []
        if self.outside:
            parts.append(f"{self.outside:,} value{'s' if self.outside != 1 else ''} outside the limits, "
                         f"min {self.minimum:.4g}, max {self.maximum:.4g}")
        if self.nonfinite:
            parts.append(f"{self.nonfinite:,} value{'s' if self.nonfinite != 1 else ''} not finite")
        return "; ".join(parts)


def _check_rule(quantiles, reach) -> tuple[float, float, float]:
    if not isinstance(quantiles, (tuple, list)) or len(quantiles) != 2:
        raise ParameterError("quantiles", "should be a pair (low, high) of fractions", quantiles)
    q_lo = check_in_range("quantiles[0]", quantiles[0], 0.0, 1.0)
    q_hi = check_in_range("quantiles[1]", quantiles[1], 0.0, 1.0)
    if q_lo >= q_hi:
        raise ParameterError("quantiles", "should rise: the low fraction under the high one", quantiles)
    reach = check_finite("reach", reach)
    if reach < 0:
        raise ParameterError("reach", "should be >= 0 (spans beyond the quantiles)", reach)
    return q_lo, q_hi, reach


def _values(values, what: str) -> np.ndarray:
    """One float64 array from an array-like, a sequence of arrays or a mapping of arrays (pooled)."""
    if isinstance(values, Mapping):
        parts = [np.asarray(v, dtype=np.float64).ravel() for v in values.values()]
        return np.concatenate(parts) if parts else np.empty(0)
    if isinstance(values, (list, tuple)) and values and all(np.ndim(v) >= 1 for v in values):
        return np.concatenate([np.asarray(v, dtype=np.float64).ravel() for v in values])
    try:
        return np.asarray(values, dtype=np.float64).ravel()
    except (TypeError, ValueError):
        raise ParameterError(what, "should be numbers: an array, a sequence of arrays or a mapping of "
                             "name to array", type(values).__name__) from None


def display_limits(values, *, nonzero: bool = False, quantiles: tuple[float, float] = DEFAULT_QUANTILES,
                   reach: float = DEFAULT_REACH) -> DisplayLimits:
    """Limits that show the bulk of ``values``, and the count and extremes of what lies outside.

    Parameters
    ----------
    values : array-like, sequence of arrays, or mapping of str to array
        The values one axis shows; several series (an overlay) are pooled.
    nonzero : bool
        Judge only the nonzero values (the step-reward histograms show
        those: a sparse reward's zeros would make every quantile 0).
    quantiles : (float, float)
        Fractions whose quantiles measure the bulk.
    reach : float
        How many spans (``q_hi - q_lo``) beyond the quantiles a value may lie
        and still be shown (see the module's rule).

    Returns
    -------
    DisplayLimits

    Examples
    --------
    >>> limits = display_limits({"a": [0.0, 1.0, 2.0], "b": [0.0, 3.0]}, nonzero=True)
    >>> limits.range, limits.count, limits.outside, limits.note
    ((1.0, 3.0), 3, 0, '')
    """
    q_lo, q_hi, reach = _check_rule(quantiles, reach)
    x = _values(values, "values")
    if nonzero:
        x = x[x != 0]
    finite = np.isfinite(x)
    nonfinite = int(x.size - finite.sum())
    x = x[finite]
    if x.size == 0:
        return DisplayLimits(math.nan, math.nan, 0, 0, 0, math.nan, math.nan, nonfinite)
    minimum, maximum = float(x.min()), float(x.max())
    lo_q, hi_q = (float(v) for v in np.quantile(x, [q_lo, q_hi]))
    span = hi_q - lo_q
    if span > 0:
        low, high = max(minimum, lo_q - reach * span), min(maximum, hi_q + reach * span)
    else:
        low, high = minimum, maximum
    return DisplayLimits(low, high, int(x.size), int((x < low).sum()), int((x > high).sum()), minimum, maximum,
                         nonfinite)


def series_limits(series: Mapping, *, nonzero: bool = False, quantiles: tuple[float, float] = DEFAULT_QUANTILES,
                  reach: float = DEFAULT_REACH) -> dict[str, DisplayLimits]:
    """:func:`display_limits` of each series on its own (one panel each: small multiples).

    Parameters
    ----------
    series : mapping of str to array, or polars.DataFrame
        A frame's numeric columns are the series (key columns: select the
        rewards first).
    nonzero, quantiles, reach
        As for :func:`display_limits`.

    Returns
    -------
    dict of str to DisplayLimits
        Keyed like ``series``.

    Examples
    --------
    >>> limits = series_limits({"a": [1.0, 2.0], "b": [5.0, 5.0, 5.0]})
    >>> limits["a"].range, limits["b"].range
    ((1.0, 2.0), (5.0, 5.0))
    """
    if isinstance(series, pl.DataFrame):
        series = {c: series[c].cast(pl.Float64).to_numpy() for c in series.columns
                  if series[c].dtype.is_numeric()}
    if not isinstance(series, Mapping):
        raise ParameterError("series", "should be a mapping of name to array or a polars DataFrame",
                             type(series).__name__)
    return {str(name): display_limits(v, nonzero=nonzero, quantiles=quantiles, reach=reach)
            for name, v in series.items()}


def normalization_limits(normalized: pl.DataFrame, *, quantiles: tuple[float, float] = DEFAULT_QUANTILES,
                         reach: float = DEFAULT_REACH) -> tuple[DisplayLimits, DisplayLimits]:
    """Limits of the two panels of :func:`rewardlab.plots.plot_normalization`: raw, then normalized.

    Both are judged on the steps whose raw reward is nonzero (the steps the
    panels show); the normalized panel pools every method
    (:func:`rewardlab.analysis.normalizers.replay_methods`), so the early
    steps of a running normalizer, divided by a standard deviation of almost
    nothing, are left out and counted.

    Parameters
    ----------
    normalized : polars.DataFrame
        :func:`rewardlab.analysis.normalizers.normalized_rewards`.
    quantiles, reach
        As for :func:`display_limits`.

    Returns
    -------
    (DisplayLimits, DisplayLimits)

    Examples
    --------
    >>> frame = pl.DataFrame({"raw": [0.0] + [1.0] * 9, "gymnasium": [0.0, -70.0] + [0.1 * k for k in range(8)]})
    >>> raw, after = normalization_limits(frame, quantiles=(0.2, 0.8))
    >>> raw.outside, after.outside, after.minimum
    (0, 1, -70.0)
    """
    if not isinstance(normalized, pl.DataFrame):
        raise ParameterError("normalized", "should be a polars DataFrame (normalized_rewards)",
                             type(normalized).__name__)
    if "raw" not in normalized.columns:
        raise ColumnNotFoundError("raw", normalized.columns)
    raw = normalized["raw"].cast(pl.Float64).to_numpy()
    shown = raw != 0
    methods = replay_methods(normalized)
    after = {m: normalized[m].cast(pl.Float64).to_numpy()[shown] for m in methods}
    return (display_limits(raw[shown], quantiles=quantiles, reach=reach),
            display_limits(after, quantiles=quantiles, reach=reach))
