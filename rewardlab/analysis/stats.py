"""Reward statistics and normalization constants, over a frame, a lazy scan, a dataset path, or part by part.

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

Part by part (data larger than memory)
--------------------------------------
:class:`RewardStatsParts` and :class:`NormalizationParts` take a dataset one
part (whole episodes, so every scope is computed within a part) at a time:
``add(part)`` in a worker, ``merge(other)`` on the driver **in part order**,
``result()`` at the end; :func:`reward_stats_of_parts` and
:func:`normalization_constants_of_parts` do the three in one loop.  Their state
pickles small (moments, counts, a KLL sketch as bytes) once past the exact limit.

* **Quantiles: exact up to 10^7 values, then a KLL sketch.**  The values in
  scope are kept while there are at most ``exact_limit`` of them
  (:data:`~rewardlab.analysis.sketches.EXACT_LIMIT` = 10^7, 80 MB): the
  quantiles are then NumPy's over them all, *identical* to
  :func:`reward_stats` over the same data in one frame.  Past the limit they
  go into a KLL sketch (:mod:`rewardlab.analysis.sketches`, k = 1000): every
  quantile's true rank is within ±0.278 % (99 % confidence), and sketch
  quantiles may differ by a few retained items from run to run (KLL compacts
  at random).  :attr:`RewardStats.quantile_method` (``"exact"`` / ``"kll"``)
  and :attr:`RewardStats.quantile_rank_error` (0.0 / the bound) say which,
  in ``to_dict()`` and wherever the quantiles are printed.  (An exact
  two-pass method, a sketch then the values between its bounds, was not
  chosen: it needs a second read of the dataset.)
* **Moments.**  While the values are kept, count, mean, std, min and max are
  taken from them all (``Moments.of``), bit for bit those of
  :func:`reward_stats`.  Past the limit they are the Chan merge of each
  part's ``Moments.of``: the same to rounding (relative 1e-15 or so), not bit
  for bit -- Chan's update rounds differently from one two-pass sum -- and
  the same bits for the same parts merged in the same order.
* **Fingerprint.**  While the values are kept, the fingerprint is the
  in-memory one (``"blake2b-128:..."`` of all values in order).  BLAKE2 is a
  sequential hash, so past the limit each part's values are hashed on their
  own and the fingerprint is ``"blake2b-128-parts:..."``, the hash of the
  parts' (count, digest) list, in order: the same for the same dataset
  (same parts), whatever the engine, but not equal to the in-memory one.

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

from rewardlab.analysis.scopes import VALUE, check_scope, scope_lazy, scope_values
from rewardlab.analysis.sketches import DEFAULT_K, EXACT_LIMIT, QuantileAccumulator, check_quantiles
from rewardlab.analysis.tables import column_names, lazy_table, resolve_reward, rewards_to_use
from rewardlab.core.errors import FrameError, ParameterError, check_finite, check_int, check_positive
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
    "RewardStatsParts",
    "NormalizationParts",
    "reward_stats_of_parts",
    "normalization_constants_of_parts",
]

#: Quantiles reported by default.
DEFAULT_QUANTILES = (0.01, 0.05, 0.25, 0.5, 0.75, 0.95, 0.99)


# --------------------------------------------------------------------------
# Mergeable moments
# --------------------------------------------------------------------------


@dataclasses.dataclass(frozen=True)
class Moments:
    """Count, mean, M2 (sum of squared deviations), min and max of a set of values; exact merge.

    Immutable: :meth:`update` and :meth:`merge` return a new object.  The
    merge is Chan, Golub and LeVeque's pairwise update in float64, so the
    moments of a dataset equal the merge of the moments of its parts (up to
    rounding), in any order.

    Attributes
    ----------
    count : int
        Number of values.
    mean : float
        Their mean (0.0 when empty).
    m2 : float
        ``sum((x - mean) ** 2)``.
    min, max : float
        Extremes (``inf`` / ``-inf`` when empty).

    Examples
    --------
    >>> import numpy as np
    >>> a = Moments.of(np.array([1.0, 2.0]))
    >>> b = Moments.of(np.array([3.0, 4.0, 5.0]))
    >>> m = a.merge(b)
    >>> m.count, m.mean, m.var
    (5, 3.0, 2.0)
    """

    count: int = 0
    mean: float = 0.0
    m2: float = 0.0
    min: float = math.inf
    max: float = -math.inf

    @classmethod
    def of(cls, values) -> "Moments":
        """Moments of an array (any shape, flattened; converted to float64; two-pass M2).

        Examples
        --------
        >>> Moments.of([2.0, 4.0]).m2
        2.0
        """
        x = np.asarray(values, dtype=np.float64).ravel()
        if x.size == 0:
            return cls()
        mean = float(x.mean())
        d = x - mean
        return cls(int(x.size), mean, float(np.dot(d, d)), float(x.min()), float(x.max()))

    def update(self, values) -> "Moments":
        """Return these moments merged with those of ``values`` (one batch).

        Examples
        --------
        >>> Moments().update([1.0, 3.0]).update([5.0]).mean
        3.0
        """
        return self.merge(Moments.of(values))

    def merge(self, other: "Moments") -> "Moments":
        """Return the moments of the union of both sets of values.

        Examples
        --------
        >>> (Moments.of([0.0]) + Moments.of([2.0])).var
        1.0
        """
        if not isinstance(other, Moments):
            raise ParameterError("other", "should be a Moments", type(other).__name__)
        if other.count == 0:
            return self
        if self.count == 0:
            return other
        n = self.count + other.count
        delta = other.mean - self.mean
        mean = self.mean + delta * (other.count / n)
        m2 = self.m2 + other.m2 + delta * delta * (self.count * other.count / n)
        return Moments(n, mean, m2, min(self.min, other.min), max(self.max, other.max))

    __add__ = merge

    @property
    def var(self) -> float:
        """Population variance ``m2 / count`` (NaN when empty)."""
        return self.m2 / self.count if self.count else math.nan

    @property
    def sample_var(self) -> float:
        """Sample variance ``m2 / (count - 1)`` (NaN for fewer than 2 values)."""
        return self.m2 / (self.count - 1) if self.count > 1 else math.nan

    @property
    def std(self) -> float:
        """Population standard deviation."""
        return math.sqrt(self.var) if self.count else math.nan

    @property
    def sample_std(self) -> float:
        """Sample standard deviation (ddof = 1)."""
        return math.sqrt(self.sample_var) if self.count > 1 else math.nan

    def to_dict(self) -> dict:
        """A JSON-ready dict: count, mean, m2, min, max, std, sample_std (NaN/inf as None).

        Examples
        --------
        >>> sorted(Moments.of([1.0]).to_dict())
        ['count', 'm2', 'max', 'mean', 'min', 'sample_std', 'std']
        """
        out = dataclasses.asdict(self) | {"std": self.std, "sample_std": self.sample_std}
        return {k: _json_number(v) for k, v in out.items()}


def _json_number(v):
    if isinstance(v, float) and not math.isfinite(v):
        return None
    return v


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


def _values_of_lazy(sl: pl.LazyFrame, *, what: str) -> np.ndarray:
    """The ``value`` column materialised as a float64 array (nulls and NaN refused)."""
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
        out["quantiles"] = {_q_key(q): _json_number(v) for q, v in self.quantiles.items()}
        return {k: (_json_number(v) if isinstance(v, float) else v) for k, v in out.items()}


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
        x = _values_of_lazy(sl, what=what)
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


def _fingerprint(values: np.ndarray) -> str:
    x = np.ascontiguousarray(values, dtype="<f8")
    return "blake2b-128:" + hashlib.blake2b(memoryview(x).cast("B"), digest_size=16).hexdigest()


def _check_normalizable(name: str, scope: str, m: Moments) -> None:
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
    _check_normalizable(name, scope, m)
    rows = lf.select(pl.len()).collect(engine="streaming").item()
    return NormalizationConstants(reward=name, scope=scope, mean=m.mean, std=m.std, count=m.count,
                                  source=source, rows=int(rows), fingerprint=_fingerprint(values))


# --------------------------------------------------------------------------
# Part by part: accumulators that merge (see the module docstring)
# --------------------------------------------------------------------------


def _where(name: str, part) -> str:
    return f"reward {name!r}" + ("" if part is None else f" in part {part}")


def _merge_name(a: str | None, b: str | None) -> str | None:
    if a is not None and b is not None and a != b:
        raise ParameterError("other", f"should accumulate the same reward ({a!r})", b)
    return a if a is not None else b


class RewardStatsParts:
    """:func:`reward_stats` of one reward in one scope, accumulated part by part and merged.

    Each part is whole episodes (a polars DataFrame with its spec attached, a
    LazyFrame, or a Parquet part's path); parts are added, or accumulators
    merged, in data order.  Small and picklable (moments, a zero count, and
    the kept values or a KLL sketch's bytes; see the module docstring for
    what is exact).

    Parameters
    ----------
    reward : str
        The plug-in name (``"top"``) or its column (``"reward_top"``).
    scope, quantiles, constants, spec
        As :func:`reward_stats`.
    exact_limit : int
        Most values kept for exact quantiles (default 10^7; 0: always the sketch).
    k : int
        The KLL sketch's accuracy past the limit (default 1000).

    Examples
    --------
    >>> import polars as pl
    >>> a = RewardStatsParts("a", quantiles=(0.5,)).add(pl.DataFrame({"reward_a": [1.0, 2.0]}))
    >>> b = RewardStatsParts("a", quantiles=(0.5,)).add(pl.DataFrame({"reward_a": [3.0]}))
    >>> s = a.merge(b).result()
    >>> s.count, s.mean, s.quantiles, s.quantile_method
    (3, 2.0, {0.5: 2.0}, 'exact')
    """

    def __init__(self, reward: str, *, scope: str = "all", quantiles: Sequence[float] = DEFAULT_QUANTILES,
                 constants: "NormalizationConstants | None" = None, spec: FrameSpec | None = None,
                 exact_limit: int = EXACT_LIMIT, k: int = DEFAULT_K):
        if not isinstance(reward, str):
            raise ParameterError("reward", "should be a reward name such as 'top'", reward)
        if constants is not None and not isinstance(constants, NormalizationConstants):
            raise ParameterError("constants", "should be NormalizationConstants (see normalization_constants)",
                                 type(constants).__name__)
        self.reward, self.scope, self.quantiles = reward, check_scope(scope), check_quantiles(quantiles)
        self.constants, self.spec = constants, spec
        self.name: str | None = None
        self.moments, self.zeros = Moments(), 0
        self.values = QuantileAccumulator(exact_limit=exact_limit, k=k) if self.quantiles else None

    def add(self, data, *, part=None) -> "RewardStatsParts":
        """Add one part of whole episodes; ``part`` (a path or number) names it in error messages.

        Examples
        --------
        >>> import polars as pl
        >>> RewardStatsParts("a").add(pl.DataFrame({"reward_a": [0.0, 4.0]}), part=0).result().zero_fraction
        0.5
        """
        lf, _ = lazy_table(data)
        name = resolve_reward(column_names(lf), self.reward)
        self.name = _merge_name(self.name, name)
        sl = scope_lazy(lf, name, self.scope, self.spec)
        if self.constants is not None:
            sl = sl.select(((pl.col(VALUE) - self.constants.mean) / self.constants.std).alias(VALUE))
        x = _values_of_lazy(sl, what=_where(name, part))
        self.moments = self.moments.merge(Moments.of(x))
        self.zeros += int(np.count_nonzero(x == 0))
        if self.values is not None:
            self.values.add(x)
        return self

    def merge(self, other: "RewardStatsParts") -> "RewardStatsParts":
        """Add ``other``'s parts after this one's (``other`` is unchanged); returns this accumulator.

        Examples
        --------
        >>> RewardStatsParts("a").merge(RewardStatsParts("a")).result().count
        0
        """
        if not isinstance(other, RewardStatsParts):
            raise ParameterError("other", "should be a RewardStatsParts", type(other).__name__)
        for field in ("scope", "quantiles", "constants"):
            if getattr(other, field) != getattr(self, field):
                raise ParameterError("other", f"should have the same {field} ({getattr(self, field)!r})",
                                     getattr(other, field))
        self.name = _merge_name(self.name, other.name)
        self.moments = self.moments.merge(other.moments)
        self.zeros += other.zeros
        if self.values is not None:
            self.values.merge(other.values)
        return self

    def result(self) -> RewardStats:
        """The :class:`RewardStats` of every value added, with how its quantiles were computed.

        Examples
        --------
        >>> RewardStatsParts("reward_a", quantiles=(0.5,)).result().quantiles
        {0.5: nan}
        """
        m, qvals, method, error = self.moments, {}, "exact", 0.0
        if self.values is not None:
            kept = self.values.values()
            if kept is not None:  # exact: the in-memory numbers, bit for bit
                m = Moments.of(kept)
            qvals, method, error = self.values.quantiles(self.quantiles), self.values.method, self.values.rank_error
        name = self.name if self.name is not None else self.reward.removeprefix("reward_")
        return RewardStats(
            reward=name, scope=self.scope, count=m.count, mean=m.mean if m.count else math.nan,
            std=m.std, sample_std=m.sample_std,
            min=m.min if m.count else math.nan, max=m.max if m.count else math.nan,
            zero_fraction=self.zeros / m.count if m.count else math.nan, quantiles=qvals,
            normalized_by=None if self.constants is None else self.constants.to_dict(),
            quantile_method=method, quantile_rank_error=error,
        )


class NormalizationParts:
    """:func:`normalization_constants` accumulated part by part and merged (see the module docstring).

    Parameters
    ----------
    reward : str
        The plug-in name (``"top"``) or its column (``"reward_top"``).
    scope, spec
        As :func:`normalization_constants`.
    source : str, optional
        The dataset's description, recorded in the constants.
    exact_limit : int
        Most values kept for the in-memory fingerprint and moments (default
        10^7); past it, the per-part fingerprint and merged moments.

    Examples
    --------
    >>> import polars as pl
    >>> acc = NormalizationParts("a").add(pl.DataFrame({"reward_a": [1.0]}))
    >>> c = acc.merge(NormalizationParts("a").add(pl.DataFrame({"reward_a": [3.0]}))).result()
    >>> c.mean, c.std, c.rows, c == normalization_constants(pl.DataFrame({"reward_a": [1.0, 3.0]}), "a")
    (2.0, 1.0, 2, True)
    """

    def __init__(self, reward: str, *, scope: str = "all", spec: FrameSpec | None = None,
                 source: str | None = None, exact_limit: int = EXACT_LIMIT):
        if not isinstance(reward, str):
            raise ParameterError("reward", "should be a reward name such as 'top'", reward)
        if source is not None and not isinstance(source, str):
            raise ParameterError("source", "should be a string or None", type(source).__name__)
        self.reward, self.scope, self.spec, self.source = reward, check_scope(scope), spec, source
        self.exact_limit = check_int("exact_limit", exact_limit, low=0, rule="should be an integer >= 0")
        self.name: str | None = None
        self.moments, self.rows = Moments(), 0
        self.kept: list[np.ndarray] | None = []
        self.digests: list[tuple[int, bytes]] = []

    def add(self, data, *, part=None) -> "NormalizationParts":
        """Add one part of whole episodes; ``part`` (a path or number) names it in error messages.

        Examples
        --------
        >>> import polars as pl
        >>> NormalizationParts("a").add(pl.DataFrame({"reward_a": [0.0, 2.0]})).result().mean
        1.0
        """
        lf, _ = lazy_table(data)
        name = resolve_reward(column_names(lf), self.reward)
        self.name = _merge_name(self.name, name)
        x = scope_values(lf, name, scope=self.scope, spec=self.spec)
        bad = int(np.count_nonzero(~np.isfinite(x)))
        if bad:
            raise FrameError(f"{_where(name, part)} has {bad} non-finite values in scope {self.scope!r}",
                             hint="Rewards must be finite numbers; check the plug-in")
        self.rows += int(data.height) if isinstance(data, pl.DataFrame) else \
            int(lf.select(pl.len()).collect(engine="streaming").item())
        self.moments = self.moments.merge(Moments.of(x))
        x = np.ascontiguousarray(x, dtype="<f8")
        self.digests.append((int(x.size), hashlib.blake2b(memoryview(x).cast("B"), digest_size=16).digest()))
        if self.kept is not None:
            self.kept.append(x)
            if self.moments.count > self.exact_limit:
                self.kept = None
        return self

    def merge(self, other: "NormalizationParts") -> "NormalizationParts":
        """Add ``other``'s parts after this one's (``other`` is unchanged); returns this accumulator.

        Examples
        --------
        >>> NormalizationParts("a").merge(NormalizationParts("a")).rows
        0
        """
        if not isinstance(other, NormalizationParts):
            raise ParameterError("other", "should be a NormalizationParts", type(other).__name__)
        if other.scope != self.scope:
            raise ParameterError("other", f"should have the same scope ({self.scope!r})", other.scope)
        self.name = _merge_name(self.name, other.name)
        self.moments = self.moments.merge(other.moments)
        self.rows += other.rows
        self.digests += other.digests
        if self.kept is not None and other.kept is not None and self.moments.count <= self.exact_limit:
            self.kept = self.kept + other.kept
        else:
            self.kept = None
        return self

    def fingerprint(self) -> str:
        """The in-memory fingerprint while the values are kept, else ``"blake2b-128-parts:<hex>"``.

        Examples
        --------
        >>> import polars as pl
        >>> NormalizationParts("a", exact_limit=0).add(pl.DataFrame({"reward_a": [1.0]})).fingerprint()[:18]
        'blake2b-128-parts:'
        """
        if self.kept is not None:
            h = hashlib.blake2b(digest_size=16)
            for x in self.kept:
                h.update(memoryview(x).cast("B"))
            return "blake2b-128:" + h.hexdigest()
        h = hashlib.blake2b(digest_size=16)
        for count, digest in self.digests:
            h.update(count.to_bytes(8, "little") + digest)
        return "blake2b-128-parts:" + h.hexdigest()

    def result(self) -> NormalizationConstants:
        """The :class:`NormalizationConstants` of every value added (the same errors as the in-memory call).

        Examples
        --------
        >>> import polars as pl
        >>> NormalizationParts("a").add(pl.DataFrame({"reward_a": [1.0, 3.0]})).result().count
        2
        """
        name = self.name if self.name is not None else self.reward.removeprefix("reward_")
        m = Moments.of(np.concatenate(self.kept)) if self.kept else self.moments
        _check_normalizable(name, self.scope, m)
        return NormalizationConstants(reward=name, scope=self.scope, mean=m.mean, std=m.std, count=m.count,
                                      source=self.source, rows=self.rows, fingerprint=self.fingerprint())


def reward_stats_of_parts(parts: Iterable, reward: str, *, scope: str = "all",
                          quantiles: Sequence[float] = DEFAULT_QUANTILES,
                          constants: "NormalizationConstants | None" = None, spec: FrameSpec | None = None,
                          exact_limit: int = EXACT_LIMIT) -> RewardStats:
    """:func:`reward_stats` over parts of whole episodes, one part in memory at a time.

    Identical to :func:`reward_stats` on the parts' concatenation while the
    values in scope number at most ``exact_limit`` (10^7); past it the
    quantiles are a KLL sketch's (``quantile_method == "kll"``, rank error
    ±0.278 %) and the moments the merge of the parts' (equal to rounding).

    Parameters
    ----------
    parts : iterable
        Parts in data order: polars DataFrames (spec attached) or LazyFrames
        of whole episodes, or Parquet parts' paths.
    reward, scope, quantiles, constants, spec
        As :func:`reward_stats`.
    exact_limit : int
        Most values kept for exact quantiles (0: always the sketch).

    Returns
    -------
    RewardStats

    Examples
    --------
    >>> import polars as pl
    >>> parts = [pl.DataFrame({"reward_a": [0.0, 1.0]}), pl.DataFrame({"reward_a": [3.0]})]
    >>> reward_stats_of_parts(parts, "a", quantiles=(0.5,)) == reward_stats(pl.concat(parts), "a", quantiles=(0.5,))
    True
    """
    acc = RewardStatsParts(reward, scope=scope, quantiles=quantiles, constants=constants, spec=spec,
                           exact_limit=exact_limit)
    for i, part in enumerate(parts):
        acc.add(part, part=i)
    return acc.result()


def normalization_constants_of_parts(parts: Iterable, reward: str, *, scope: str = "all",
                                     spec: FrameSpec | None = None, source: str | None = None,
                                     exact_limit: int = EXACT_LIMIT) -> NormalizationConstants:
    """:func:`normalization_constants` over parts of whole episodes, one part in memory at a time.

    Identical to the in-memory call on the parts' concatenation while the
    values in scope number at most ``exact_limit``; past it the mean and std
    are the merge of the parts' (equal to rounding) and the fingerprint is the
    per-part one (``"blake2b-128-parts:..."``).

    Parameters
    ----------
    parts : iterable
        Parts in data order (see :func:`reward_stats_of_parts`).
    reward, scope, spec
        As :func:`normalization_constants`.
    source : str, optional
        The dataset's description, recorded in the constants.
    exact_limit : int
        Most values kept for the in-memory fingerprint.

    Returns
    -------
    NormalizationConstants

    Examples
    --------
    >>> import polars as pl
    >>> parts = [pl.DataFrame({"reward_a": [1.0]}), pl.DataFrame({"reward_a": [3.0]})]
    >>> normalization_constants_of_parts(parts, "a") == normalization_constants(pl.concat(parts), "a")
    True
    """
    acc = NormalizationParts(reward, scope=scope, spec=spec, source=source, exact_limit=exact_limit)
    for i, part in enumerate(parts):
        acc.add(part, part=i)
    return acc.result()
