"""Reward statistics and normalization constants, over a frame, a lazy scan or a dataset path.

What streams and what does not
------------------------------
* **Moments stream and merge.**  Count, mean, second central moment (M2),
  min and max come from one Polars aggregation over the lazy frame
  (``engine="streaming"``, so a Parquet dataset larger than memory works) and
  are returned as :class:`Moments`, which merges exactly (Chan et al.'s
  parallel update, float64).  Partial results over shards, files or batches
  combine with ``a.merge(b)`` (or ``a + b``).
* **Quantiles are exact, not mergeable.**  The values in scope are
  materialised as one float64 array (8 bytes per value) and NumPy computes
  them (linear interpolation, NumPy's default); with them,
  :func:`reward_stats` takes the moments from that array too (two-pass).
  ``reward_stats(..., quantiles=())`` skips them and stays streaming.
* **The fingerprint** of :class:`NormalizationConstants` hashes the values in
  scope, in data order, so it also reads that one column.

Part by part (data larger than memory): :mod:`rewardlab.analysis.stats_parts`.

Scopes
------
The scopes (``"all"``, ``"nonzero"``, ``"boundary"``, ``"episode_end"``,
``"episode_return"`` (one sum per whole episode), ``"trajectory_return"``
(one sum per trajectory cut at the plug-in's ``done``), and kanachan's words ``"end_of_round"``,
``"end_of_game"``) are defined in :mod:`rewardlab.analysis.scopes`.

Examples
--------
>>> import polars as pl
>>> from rewardlab.analysis.stats import reward_stats
>>> frame = pl.DataFrame({"reward_a": [0.0, 1.0, 0.0, 3.0], "done_a": [False, True, False, True]})
>>> s = reward_stats(frame, "a", scope="nonzero")
>>> s.count, s.mean, s.std
(2, 2.0, 1.0)
"""

from __future__ import annotations

import dataclasses
import hashlib
import math
from typing import Iterable, Sequence

import numpy as np
import polars as pl

from rewardlab.analysis.moments import Moments, json_number
from rewardlab.analysis.scopes import VALUE, check_scope, scope_lazy, scope_values
from rewardlab.analysis.sketches import check_quantiles
from rewardlab.analysis.tables import column_names, lazy_table, resolve_reward, rewards_to_use
from rewardlab.core.errors import FrameError, ParameterError, check_finite, check_positive
from rewardlab.core.spec import FrameSpec

__all__ = [
    "DEFAULT_QUANTILES",
    "Moments",
    "RewardStats",
    "NormalizationConstants",
    "reward_moments",
    "reward_stats",
    "describe_rewards",
    "normalization_constants",
    "values_of_lazy",
    "fingerprint",
    "check_normalizable",
]

#: Quantiles reported by default.
DEFAULT_QUANTILES = (0.01, 0.05, 0.25, 0.5, 0.75, 0.95, 0.99)


# --------------------------------------------------------------------------
# Statistics
# --------------------------------------------------------------------------


def _moments_of_lazy(sl: pl.LazyFrame, *, what: str) -> tuple[Moments, int]:
    """Streaming moments and the number of zeros of the ``value`` column."""
    v = pl.col(VALUE)
    row = sl.select(
        n=pl.len(), nulls=v.null_count(), nans=v.is_nan().sum(), mean=v.mean(),
        var=v.var(ddof=0), min=v.min(), max=v.max(), zeros=(v == 0).sum(),
    ).collect(engine="streaming").row(0, named=True)
    _check_clean(what, row["nulls"], row["nans"])
    n = int(row["n"])
    if n == 0:
        return Moments(), 0
    m = Moments(n, float(row["mean"]), float(row["var"]) * n, float(row["min"]), float(row["max"]))
    return m, int(row["zeros"])


def _check_clean(what: str, nulls: int, nans: int) -> None:
    if nulls or nans:
        raise FrameError(f"{what} has {nulls} null and {nans} NaN values",
                         hint="Rewards must be finite numbers; check the plug-in")


def values_of_lazy(sl: pl.LazyFrame, *, what: str) -> np.ndarray:
    """The ``value`` column of a scope's lazy frame materialised as a float64 array (nulls and NaN refused).

    Examples
    --------
    >>> values_of_lazy(pl.LazyFrame({"value": [1, 2]}), what="reward 'a'")
    array([1., 2.])
    """
    series = sl.collect(engine="streaming")[VALUE]
    x = series.to_numpy().astype(np.float64, copy=False)
    nulls = series.null_count()
    _check_clean(what, nulls, 0 if nulls else int(np.isnan(x).sum()))
    return x


def reward_moments(data, reward: str, *, scope: str = "all", spec: FrameSpec | None = None) -> Moments:
    """Streaming moments (count, mean, M2, min, max) of a reward in a scope.

    One Polars aggregation over the lazy frame with the streaming engine; the
    result merges exactly with the moments of other parts of a dataset.

    Parameters
    ----------
    data : polars.DataFrame, LazyFrame, or path(s) to Parquet
        A rewards table or a frame with reward columns.
    reward : str
        The plug-in name (``"top"``) or its column (``"reward_top"``).
    scope : str
        One of :data:`SCOPES`.
    spec : FrameSpec, optional
        How the data's rows form episodes, for the scopes that need them
        (default: the spec the frame carries or is recognized by; see
        :func:`rewardlab.sources.registry.spec_of`).

    Returns
    -------
    Moments

    Examples
    --------
    >>> m = reward_moments("part1.parquet", "top") + reward_moments("part2.parquet", "top")  # doctest: +SKIP
    >>> m.mean, m.std  # doctest: +SKIP
    """
    check_scope(scope)
    lf, _ = lazy_table(data)
    name = resolve_reward(column_names(lf), reward)
    return _moments_of_lazy(scope_lazy(lf, name, scope, spec), what=f"reward {name!r}")[0]


@dataclasses.dataclass(frozen=True)
class RewardStats:
    """Statistics of one reward in one scope (see :func:`reward_stats`).

    Attributes
    ----------
    reward : str
        The plug-in name.
    scope : str
        One of :data:`SCOPES`.
    count : int
        Number of values in scope.
    mean, std, sample_std, min, max : float
        ``std`` is the population standard deviation (ddof 0), ``sample_std``
        uses ddof 1.  NaN when there are no values.
    zero_fraction : float
        Fraction of the values that are exactly 0.
    quantiles : dict of float to float
        Exact quantiles (linear interpolation, as NumPy's default), or a KLL
        sketch's estimates (see ``quantile_method``).
    normalized_by : dict or None
        The constants applied before computing, if any
        (:meth:`NormalizationConstants.to_dict`).
    quantile_method : str
        How the quantiles were computed: ``"exact"`` (NumPy over every value)
        or ``"kll"`` (a KLL sketch, :mod:`rewardlab.analysis.sketches`).
    quantile_rank_error : float
        The bound on each quantile's normalized rank error: 0.0 for exact, the
        sketch's (0.00278 at k = 1000) for ``"kll"``.

    Examples
    --------
    >>> import polars as pl
    >>> s = reward_stats(pl.DataFrame({"reward_a": [0.0, 2.0]}), "a", quantiles=(0.5,))
    >>> s.quantiles, s.zero_fraction, s.quantile_method
    ({0.5: 1.0}, 0.5, 'exact')
    """

    reward: str
    scope: str
    count: int
    mean: float
    std: float
    sample_std: float
    min: float
    max: float
    zero_fraction: float
    quantiles: dict
    normalized_by: dict | None = None
    quantile_method: str = "exact"
    quantile_rank_error: float = 0.0

    def to_dict(self) -> dict:
        """A JSON-ready dict with stable keys (quantile keys as strings, NaN as None).

        Examples
        --------
        >>> import polars as pl
        >>> reward_stats(pl.DataFrame({"reward_a": [1.0]}), "a", quantiles=(0.5,)).to_dict()["quantiles"]
        {'0.5': 1.0}
        """
        out = {f.name: getattr(self, f.name) for f in dataclasses.fields(self)}
        out["quantiles"] = {_q_key(q): json_number(v) for q, v in self.quantiles.items()}
        return {k: (json_number(v) if isinstance(v, float) else v) for k, v in out.items()}


def _q_key(q: float) -> str:
    return repr(float(q))


def reward_stats(
    data,
    reward: str,
    *,
    scope: str = "all",
    quantiles: Sequence[float] = DEFAULT_QUANTILES,
    constants: "NormalizationConstants | None" = None,
    spec: FrameSpec | None = None,
) -> RewardStats:
    """Count, mean, population and sample std, min, max, zero fraction and exact quantiles.

    Everything is computed over the data at once: the quantiles are always
    exact (``quantile_method == "exact"``).  For data larger than memory,
    :func:`reward_stats_of_parts` gives the same numbers while the values in
    scope number at most 10^7 and a KLL sketch's quantiles past that (the
    module docstring says what each promises).

    Parameters
    ----------
    data : polars.DataFrame, LazyFrame, or path(s) to Parquet
        A rewards table or a frame with reward columns.
    reward : str
        The plug-in name (``"top"``) or its column (``"reward_top"``).
    scope : str
        One of :data:`SCOPES`.
    quantiles : sequence of float
        Quantile levels in [0, 1]; ``()`` keeps the computation a streaming
        aggregation (no column is materialised).
    constants : NormalizationConstants, optional
        Apply ``(x - mean) / std`` to the values in scope first: "what
        normalization does".  With the constants computed from the same data
        and scope the result has mean 0 and std 1.
    spec : FrameSpec, optional
        How the data's rows form episodes, for the scopes that need them
        (default: the spec the frame carries or is recognized by; see
        :func:`rewardlab.sources.registry.spec_of`).

    Returns
    -------
    RewardStats

    Examples
    --------
    >>> import polars as pl
    >>> f = pl.DataFrame({"reward_a": [1.0, 2.0, 3.0]})
    >>> c = normalization_constants(f, "a")
    >>> s = reward_stats(f, "a", constants=c)
    >>> round(s.mean, 12), round(s.std, 12)
    (0.0, 1.0)
    """
    check_scope(scope)
    qs = check_quantiles(quantiles)
    if constants is not None and not isinstance(constants, NormalizationConstants):
        raise ParameterError("constants", "should be NormalizationConstants (see normalization_constants)",
                             type(constants).__name__)
    lf, _ = lazy_table(data)
    name = resolve_reward(column_names(lf), reward)
    sl = scope_lazy(lf, name, scope, spec)
    if constants is not None:
        sl = sl.select(((pl.col(VALUE) - constants.mean) / constants.std).alias(VALUE))
    what = f"reward {name!r}"
    if qs:  # exact quantiles need the values: one float64 column, then NumPy for everything
        x = values_of_lazy(sl, what=what)
        m = Moments.of(x)
        zeros = int(np.count_nonzero(x == 0))
        qvals = dict(zip(qs, map(float, np.quantile(x, qs)))) if x.size else {q: math.nan for q in qs}
    else:  # moments only: stays a streaming aggregation
        m, zeros = _moments_of_lazy(sl, what=what)
        qvals = {}
    zero_fraction = zeros / m.count if m.count else math.nan
    return RewardStats(
        reward=name, scope=scope, count=m.count, mean=m.mean if m.count else math.nan,
        std=m.std, sample_std=m.sample_std,
        min=m.min if m.count else math.nan, max=m.max if m.count else math.nan,
        zero_fraction=zero_fraction, quantiles=qvals,
        normalized_by=None if constants is None else constants.to_dict(),
    )


def describe_rewards(
    data,
    rewards: str | Iterable[str] | None = None,
    *,
    scopes: Iterable[str] = ("all",),
    quantiles: Sequence[float] = DEFAULT_QUANTILES,
    spec: FrameSpec | None = None,
) -> pl.DataFrame:
    """One row of :func:`reward_stats` per reward and scope, as a Polars frame.

    Parameters
    ----------
    data : polars.DataFrame, LazyFrame, or path(s) to Parquet
        A rewards table or a frame with reward columns.
    rewards : str or iterable of str, optional
        Plug-in names; default every ``reward_*`` column.
    scopes : iterable of str
        Scopes from :data:`SCOPES`.
    quantiles : sequence of float
        Quantile levels; columns ``q0.25`` etc.
    spec : FrameSpec, optional
        How the data's rows form episodes, for the scopes that need them
        (default: the spec the frame carries or is recognized by; see
        :func:`rewardlab.sources.registry.spec_of`).

    Returns
    -------
    polars.DataFrame
        Columns ``reward, scope, count, mean, std, sample_std, min, max,
        zero_fraction`` and one per quantile.

    Examples
    --------
    >>> import polars as pl
    >>> f = pl.DataFrame({"reward_a": [0.0, 1.0], "reward_b": [2.0, 2.0]})
    >>> describe_rewards(f, quantiles=(0.5,)).select("reward", "mean", "q0.5").rows()
    [('a', 0.5, 0.5), ('b', 2.0, 2.0)]
    """
    lf, _ = lazy_table(data)
    names = rewards_to_use(column_names(lf), rewards)
    scopes = [check_scope(s) for s in scopes]
    qs = check_quantiles(quantiles)
    rows = []
    for name in names:
        for scope in scopes:
            s = reward_stats(lf, name, scope=scope, quantiles=qs, spec=spec)
            row = {k: getattr(s, k) for k in ("reward", "scope", "count", "mean", "std", "sample_std",
                                               "min", "max", "zero_fraction")}
            row |= {f"q{q:g}": s.quantiles[q] for q in qs}
            rows.append(row)
    schema = {"reward": pl.String, "scope": pl.String, "count": pl.Int64} | {
        k: pl.Float64 for k in ("mean", "std", "sample_std", "min", "max", "zero_fraction")
    } | {f"q{q:g}": pl.Float64 for q in qs}
    return pl.DataFrame(rows, schema=schema)


# --------------------------------------------------------------------------
# Normalization constants
# --------------------------------------------------------------------------


@dataclasses.dataclass(frozen=True)
class NormalizationConstants:
    """Mean and population std of a reward, with where they came from: what an exported plug-in divides by.

    Attributes
    ----------
    reward : str
        The plug-in name the constants were computed for.
    scope : str
        The scope (:data:`SCOPES`) the values were taken from; the exported
        plug-in should apply the constants to the same steps.
    mean : float
        Mean of the values in scope.
    std : float
        Population standard deviation (ddof 0), > 0.
    count : int
        Number of values in scope.
    source : str or None
        The dataset path(s), when the data was given as a path.
    rows : int
        Rows (transitions) in the data.
    fingerprint : str
        ``"blake2b-128:<hex>"`` of the float64 values in scope, in data order:
        the same data and scope give the same fingerprint.

    Examples
    --------
    >>> c = NormalizationConstants("top", "end_of_game", 0.0, 2.0, 10, None, 100, "blake2b-128:00")
    >>> c.apply([2.0, -4.0])
    array([ 1., -2.])
    >>> NormalizationConstants.from_dict(c.to_dict()) == c
    True
    """

    reward: str
    scope: str
    mean: float
    std: float
    count: int
    source: str | None
    rows: int
    fingerprint: str

    def __post_init__(self):
        check_finite("mean", self.mean)
        check_positive("std", self.std)
        check_scope(self.scope)

    def apply(self, values) -> np.ndarray:
        """``(values - mean) / std`` as a float64 array.

        Examples
        --------
        >>> NormalizationConstants("a", "all", 1.0, 2.0, 2, None, 2, "x").apply([3.0])
        array([1.])
        """
        return (np.asarray(values, dtype=np.float64) - self.mean) / self.std

    def to_dict(self) -> dict:
        """A JSON-ready dict with stable keys.

        Examples
        --------
        >>> sorted(NormalizationConstants("a", "all", 0.0, 1.0, 1, None, 1, "x").to_dict())
        ['count', 'fingerprint', 'mean', 'reward', 'rows', 'scope', 'source', 'std']
        """
        return dataclasses.asdict(self)

    @classmethod
    def from_dict(cls, d: dict) -> "NormalizationConstants":
        """Rebuild from :meth:`to_dict` output (unknown keys are an error).

        Examples
        --------
        >>> NormalizationConstants.from_dict({"reward": "a", "scope": "all", "mean": 0.0, "std": 1.0,
        ...     "count": 1, "source": None, "rows": 1, "fingerprint": "x"}).std
        1.0
        """
        fields = {f.name for f in dataclasses.fields(cls)}
        extra = sorted(set(d) - fields)
        missing = sorted(fields - set(d))
        if extra or missing:
            raise ParameterError("d", f"should have exactly the keys {sorted(fields)}",
                                 {"missing": missing, "unknown": extra})
        return cls(**d)


def fingerprint(values: np.ndarray) -> str:
    """The hash of ``values`` as little-endian float64, in order (:attr:`NormalizationConstants.fingerprint`).

    Examples
    --------
    >>> fingerprint(np.array([1.0, 2.0])) == fingerprint(np.array([1, 2]))
    True
    """
    x = np.ascontiguousarray(values, dtype="<f8")
    return "blake2b-128:" + hashlib.blake2b(memoryview(x).cast("B"), digest_size=16).hexdigest()


def check_normalizable(name: str, scope: str, m: Moments) -> None:
    """Refuse moments a reward cannot be normalized by: no values, or a standard deviation of 0.

    Examples
    --------
    >>> check_normalizable("a", "all", Moments.of(np.array([1.0, 2.0])))
    """
    if m.count == 0:
        raise FrameError(f"reward {name!r} has no values in scope {scope!r}",
                         hint="Choose another scope, e.g. scope='all'")
    if not m.std > 0:
        raise FrameError(f"reward {name!r} is constant ({m.mean!r}) over the {m.count} values in scope "
                         f"{scope!r}, so its standard deviation is 0 and it cannot be normalized",
                         hint="Choose a scope where the reward varies")


def normalization_constants(data, reward: str, *, scope: str = "all",
                            spec: FrameSpec | None = None) -> NormalizationConstants:
    """Compute, in one call, the mean and std a plug-in should normalize ``reward`` with.

    kanachan's reward plug-in contract asks for rewards with mean near 0 and
    standard deviation near 1, and its examples say to "calculate the mean and
    standard deviation from the training data in advance": this is that
    calculation, exact, over the whole dataset.

    Parameters
    ----------
    data : polars.DataFrame, LazyFrame, or path(s) to Parquet
        A rewards table or a frame with reward columns.
    reward : str
        The plug-in name (``"top"``) or its column (``"reward_top"``).
    scope : str
        Which values to normalize (:data:`SCOPES`): e.g. ``"end_of_game"``
        for a reward that is non-zero only at the end of a game, as in the
        kanachan examples.
    spec : FrameSpec, optional
        How the data's rows form episodes, for the scopes that need them
        (default: the spec the frame carries or is recognized by; see
        :func:`rewardlab.sources.registry.spec_of`).

    Returns
    -------
    NormalizationConstants
        Frozen; the export step takes it as is.

    Raises
    ------
    FrameError
        When the scope holds no values or they are all equal (std 0).

    Examples
    --------
    >>> import polars as pl
    >>> f = pl.DataFrame({"reward_a": [1.0, 3.0]})
    >>> c = normalization_constants(f, "a")
    >>> c.mean, c.std, c.count, c.rows
    (2.0, 1.0, 2, 2)
    """
    check_scope(scope)
    lf, source = lazy_table(data)
    name = resolve_reward(column_names(lf), reward)
    values = scope_values(lf, name, scope=scope, spec=spec)
    if not np.all(np.isfinite(values)):
        raise FrameError(f"reward {name!r} has {int((~np.isfinite(values)).sum())} non-finite values "
                         f"in scope {scope!r}", hint="Rewards must be finite numbers; check the plug-in")
    m = Moments.of(values)
    check_normalizable(name, scope, m)
    rows = lf.select(pl.len()).collect(engine="streaming").item()
    return NormalizationConstants(reward=name, scope=scope, mean=m.mean, std=m.std, count=m.count,
                                  source=source, rows=int(rows), fingerprint=fingerprint(values))
