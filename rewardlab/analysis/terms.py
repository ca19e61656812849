"""The terms of a composite reward, one row each: scale, share of the total, sparsity, flags.

A plug-in may report named terms beside its reward (``("next", "reward_terms",
name)``, :data:`rewardlab.contracts.terms.TERMS_KEY`); the runner keeps them as
float64 arrays ``[N]`` (:attr:`rewardlab.plugins.runner.RunOutcome.terms`) and
``apply_plugins`` as columns ``term_<plugin>.<term>``.  :func:`term_table`
measures each term against the reward it makes up (the *total*), on recorded
data instead of training curves: the numbers Eureka's reward reflection feeds
back to its reward writer (each component's mean, minimum and maximum), plus
what tells a term that does nothing from one that swamps the others.

Per term (columns of :attr:`TermTable.frame`), over the rows where the term and
the total are both finite:

``mean``, ``min``, ``max``
    Eureka's reflection numbers.
``std``, ``max_abs``, ``rms``
    Its scale: population standard deviation, largest magnitude, root mean square.
``nonzero_fraction``
    Fraction of rows where it is not 0 (its sparsity: 1.0 on every step, near 0
    for a bonus paid on a handful of rows).
``share``
    ``cov(term, total) / var(total)``: its share of the total's variance.  The
    shares of terms that sum to the total sum to 1; a term may have a negative
    share (it cancels others) or one above 1.  NaN when the total is constant.
``corr_total``, ``corr_reference``
    Pearson correlation with the total and with ``reference`` (NaN when either
    side is constant, or no reference is given).
``episode_share``, ``episode_std``
    With ``episode_starts``: the same share, and the standard deviation, of the
    per-episode sums (the return, undiscounted), which is what the return an
    agent maximizes sees (a constant per-step cost has no step-level variance,
    yet it makes the whole difference between a short and a long episode).
``flat``
    Near identical throughout: ``std <= FLAT_RATIO * std(total)`` (a constant
    term always), and with episodes also
    ``episode_std <= FLAT_RATIO * std(episode returns)``.  Eureka's tip for such a
    component: rescale it, change its temperature, rewrite or discard it.
``dominating``
    Only beside another term that is not flat (a flat term is flagged as such):
    its ``share`` is above :data:`DOMINATING_SHARE` (with episodes: its
    ``episode_share`` too), or its ``rms`` is at least
    :data:`DOMINATING_SCALE_RATIO` times every other such term's.  Eureka's tip for a
    component of much larger magnitude: rescale it.
``largest_row``
    The row where ``|term|`` is largest (-1 with no finite row).

:class:`TermTable` also says whether the terms sum to the total
(``sums_to_total``): ``max |sum of terms - total| <= SUM_RTOL * scale``, over the
rows where every term and the total are finite, ``scale`` the largest
``|total| + sum |term|`` of those rows.  Terms need not sum to the total.

Everything is vectorized (a few passes over ``[N]`` per term); the plain loop
each column equals is in ``tests/test_terms.py``.

Examples
--------
>>> t = term_table({"task": np.array([1.0, 0.0, 1.0, 0.0]), "bonus": np.array([0.1, 0.1, 0.1, 0.1])},
...                np.array([1.1, 0.1, 1.1, 0.1]))
>>> t.sums_to_total, t.frame["share"].round(6).to_list(), t.frame["flat"].to_list()
(True, [1.0, 0.0], [False, True])
"""

from __future__ import annotations

import dataclasses
import math
from typing import Mapping

import numpy as np
import polars as pl

from rewardlab.analysis.sums import segment_sums
from rewardlab.core.columns import check_name
from rewardlab.core.errors import ParameterError, check_positive

__all__ = ["FLAT_RATIO", "DOMINATING_SHARE", "DOMINATING_SCALE_RATIO", "SUM_RTOL", "TERM_TABLE_SCHEMA",
           "TermTable", "term_table"]

#: A term whose standard deviation is at most this fraction of the total's is *flat* (near identical throughout).
FLAT_RATIO = 1e-2
#: A term whose share of the total's variance is above this (and with episodes, of the returns') *dominates*.
DOMINATING_SHARE = 0.9
#: A term whose root mean square is at least this many times every other term's *dominates*.
DOMINATING_SCALE_RATIO = 10.0
#: The terms *sum to the total* when ``max |sum - total|`` is at most this fraction of the rows' scale.
SUM_RTOL = 1e-5

#: The columns of :attr:`TermTable.frame`.
TERM_TABLE_SCHEMA = {
    "term": pl.String, "count": pl.Int64, "mean": pl.Float64, "min": pl.Float64, "max": pl.Float64,
    "std": pl.Float64, "max_abs": pl.Float64, "rms": pl.Float64, "nonzero_fraction": pl.Float64,
    "share": pl.Float64, "corr_total": pl.Float64, "corr_reference": pl.Float64,
    "episode_share": pl.Float64, "episode_std": pl.Float64, "flat": pl.Boolean, "dominating": pl.Boolean,
    "largest_row": pl.Int64,
}


@dataclasses.dataclass(frozen=True)
class TermTable:
    """What :func:`term_table` measures: one row per term, and whether the terms sum to the total.

    Attributes
    ----------
    frame : polars.DataFrame
        One row per term, in the order given (:data:`TERM_TABLE_SCHEMA`; the module docstring defines each).
    sums_to_total : bool or None
        Whether the terms sum to the total within tolerance; None when no row has every term and the
        total finite (or there are no terms).
    sum_residual : float
        ``max |sum of terms - total|`` over those rows (NaN when there are none).
    sum_tolerance : float
        The tolerance it was held to (``SUM_RTOL * scale``).
    total_std, total_max_abs : float
        The total's scale (over its finite rows).
    episode_return_std : float
        The standard deviation of the total's per-episode sums (NaN without ``episode_starts``).

    Examples
    --------
    >>> term_table({"a": np.zeros(2)}, np.ones(2)).sums_to_total
    False
    """

    frame: pl.DataFrame
    sums_to_total: bool | None
    sum_residual: float
    sum_tolerance: float
    total_std: float
    total_max_abs: float
    episode_return_std: float = math.nan

    def to_frame(self) -> pl.DataFrame:
        """:attr:`frame`."""
        return self.frame

    @property
    def terms(self) -> list[str]:
        """The term names, in order."""
        return self.frame["term"].to_list()


def _vector(x, name: str, n: int | None) -> np.ndarray:
    arr = np.asarray(x, dtype=np.float64)
    if arr.ndim == 2 and arr.shape[1] == 1:
        arr = arr[:, 0]
    if arr.ndim != 1:
        raise ParameterError(name, "should be a 1-D array of shape [N]", arr.shape)
    if n is not None and arr.shape[0] != n:
        raise ParameterError(name, f"should have shape [{n}] like `total`", arr.shape)
    return arr


def _starts(episode_starts, n: int) -> np.ndarray:
    starts = np.asarray(episode_starts, dtype=np.int64)
    if (starts.ndim != 1 or starts.shape[0] < 1 or starts[0] != 0 or starts[-1] != n
            or np.any(np.diff(starts) <= 0)):
        raise ParameterError("episode_starts", f"should be increasing row numbers from 0 to N = {n} (each episode's "
                             "first row, then N)", starts[:6].tolist())
    return starts


def _moments(x: np.ndarray) -> tuple[float, float]:
    """Mean and population standard deviation (NaN for no value)."""
    if not x.size:
        return math.nan, math.nan
    mean = float(x.mean())
    return mean, float(np.sqrt(np.mean((x - mean) ** 2)))


def _cov_share(x: np.ndarray, total: np.ndarray) -> float:
    """``cov(x, total) / var(total)`` (population; NaN when the total is constant or empty)."""
    if not x.size:
        return math.nan
    dt = total - total.mean()
    var = float(np.dot(dt, dt))
    if var == 0.0:
        return math.nan
    return float(np.dot(x - x.mean(), dt) / var)


def _corr(x: np.ndarray, y: np.ndarray) -> float:
    """Pearson correlation (NaN when either is constant or empty)."""
    if not x.size:
        return math.nan
    dx, dy = x - x.mean(), y - y.mean()
    sx, sy = float(np.dot(dx, dx)), float(np.dot(dy, dy))
    if sx == 0.0 or sy == 0.0:
        return math.nan
    return float(np.clip(np.dot(dx, dy) / math.sqrt(sx * sy), -1.0, 1.0))


def term_table(terms: Mapping[str, np.ndarray], total, *, reference=None, episode_starts=None,
               flat_ratio: float = FLAT_RATIO, dominating_share: float = DOMINATING_SHARE,
               dominating_scale_ratio: float = DOMINATING_SCALE_RATIO, rtol: float = SUM_RTOL) -> TermTable:
    """Measure each term of a composite reward against the total it makes up.

    Parameters
    ----------
    terms : mapping of str to float array of shape ``[N]``
        The terms by name (``[A-Za-z_][A-Za-z0-9_]*``), NaN where a term was not given.
    total : float array of shape ``[N]``
        The reward the terms make up (NaN rows are left out).
    reference : float array of shape ``[N]`` or None
        Another reward (the recorded one) for ``corr_reference``.
    episode_starts : int array of shape ``[E + 1]`` or None
        Each episode's first row, then ``N``: adds the per-episode columns (a term's NaN rows count as 0
        in its episode sums) and makes ``flat`` and ``dominating`` look at returns too.
    flat_ratio, dominating_share, dominating_scale_ratio, rtol : float
        The thresholds (:data:`FLAT_RATIO`, :data:`DOMINATING_SHARE`, :data:`DOMINATING_SCALE_RATIO`,
        :data:`SUM_RTOL`).

    Returns
    -------
    TermTable
        The table (one row per term, in order) and whether the terms sum to the total.

    Examples
    --------
    >>> total = np.array([1.0, 2.0, 3.0, 4.0])
    >>> t = term_table({"big": total * 0.99, "small": total * 0.01 + np.array([0, 1, -1, 0])}, total)
    >>> t.frame.select("term", pl.col("share").round(4), "flat", "dominating").rows()
    [('big', 0.99, False, True), ('small', -0.19, False, False)]
    >>> t.sums_to_total
    False
    """
    if not isinstance(terms, Mapping):
        raise ParameterError("terms", "should map term names to arrays of shape [N]", type(terms).__name__)
    total = _vector(total, "total", None)
    n = total.shape[0]
    arrays = {check_name(name, what="terms"): _vector(v, f"terms[{name!r}]", n) for name, v in terms.items()}
    ref = None if reference is None else _vector(reference, "reference", n)
    starts = None if episode_starts is None else _starts(episode_starts, n)
    flat_ratio = check_positive("flat_ratio", flat_ratio)
    dominating_share = check_positive("dominating_share", dominating_share)
    dominating_scale_ratio = check_positive("dominating_scale_ratio", dominating_scale_ratio)
    rtol = check_positive("rtol", rtol)

    total_ok = np.isfinite(total)
    _, total_std = _moments(total[total_ok])
    total_max_abs = float(np.abs(total[total_ok]).max()) if total_ok.any() else math.nan
    if starts is not None and n:
        episode_total = segment_sums(np.where(total_ok, total, 0.0), starts[:-1])
        _, episode_return_std = _moments(episode_total)
    else:
        episode_total, episode_return_std = None, math.nan

    rows = []
    for name, x in arrays.items():
        ok = total_ok & np.isfinite(x)
        xs, ts = x[ok], total[ok]
        mean, std = _moments(xs)
        row = {"term": name, "count": int(xs.size), "mean": mean,
               "min": float(xs.min()) if xs.size else math.nan, "max": float(xs.max()) if xs.size else math.nan,
               "std": std, "max_abs": float(np.abs(xs).max()) if xs.size else math.nan,
               "rms": float(np.sqrt(np.mean(xs * xs))) if xs.size else math.nan,
               "nonzero_fraction": float(np.count_nonzero(xs) / xs.size) if xs.size else math.nan,
               "share": _cov_share(xs, ts), "corr_total": _corr(xs, ts),
               "corr_reference": math.nan, "episode_share": math.nan, "episode_std": math.nan}
        if ref is not None:
            both = ok & np.isfinite(ref)
            row["corr_reference"] = _corr(x[both], ref[both])
        if episode_total is not None:
            sums = segment_sums(np.where(np.isfinite(x), x, 0.0), starts[:-1])
            row["episode_share"] = _cov_share(sums, episode_total)
            row["episode_std"] = _moments(sums)[1]
        magnitude = np.where(np.isfinite(x), np.abs(x), -1.0)
        row["largest_row"] = int(np.argmax(magnitude)) if xs.size else -1
        flat = bool(xs.size) and std <= flat_ratio * total_std
        if flat and episode_total is not None:
            flat = row["episode_std"] <= flat_ratio * episode_return_std
        row["flat"] = bool(flat)
        rows.append(row)

    for row in rows:
        others = [r for r in rows if r is not row and not r["flat"]]
        dominating = False
        if others and row["count"]:
            by_share = row["share"] > dominating_share
            if by_share and episode_total is not None:
                by_share = row["episode_share"] > dominating_share
            other_rms = max((r["rms"] for r in others if not math.isnan(r["rms"])), default=math.nan)
            by_scale = (not math.isnan(other_rms) and row["rms"] > 0.0
                        and row["rms"] >= dominating_scale_ratio * other_rms)
            dominating = bool(by_share or by_scale)
        row["dominating"] = dominating

    frame = pl.DataFrame(rows, schema=TERM_TABLE_SCHEMA) if rows else pl.DataFrame(schema=TERM_TABLE_SCHEMA)
    sums, residual, tolerance = _sums(arrays, total, rtol)
    return TermTable(frame, sums, residual, tolerance, total_std, total_max_abs, episode_return_std)


def _sums(arrays: dict, total: np.ndarray, rtol: float) -> tuple[bool | None, float, float]:
    """Whether the terms sum to the total (see :class:`TermTable`)."""
    if not arrays:
        return None, math.nan, math.nan
    stacked = np.stack(list(arrays.values()))
    ok = np.isfinite(total) & np.isfinite(stacked).all(axis=0)
    if not ok.any():
        return None, math.nan, math.nan
    parts = stacked[:, ok]
    residual = float(np.abs(parts.sum(axis=0) - total[ok]).max())
    scale = float((np.abs(total[ok]) + np.abs(parts).sum(axis=0)).max())
    tolerance = rtol * scale
    return residual <= tolerance, residual, tolerance
