"""Mergeable quantiles: a KLL sketch (Apache DataSketches) and the exact-until-a-limit holder of the part-wise stats.

Which method, and what it promises
----------------------------------
* :class:`QuantileSketch` wraps DataSketches' ``kll_doubles_sketch``
  (``datasketches==5.2.0``).  With the default ``k = 1000`` (:data:`DEFAULT_K`)
  every quantile it returns has a true rank within **±0.278 %**
  (``kll_doubles_sketch.get_normalized_rank_error(1000, False)`` = 0.00278;
  the library's constant is "the best fit to the 99th percentile of the
  empirically measured maximum error", so the bound holds with about 99 %
  confidence, over all ranks at once).  That is the *single-sided* bound, the
  one that applies to ``get_quantile`` / ``get_rank``; the double-sided (PMF)
  one is 0.362 % at ``k = 1000``.  ``k = 200``, DataSketches' default, gives
  ±1.33 % (±1.65 % PMF): too coarse for a 1 % tail, so rewardlab keeps 1000
  (about 24 KB serialized whatever the number of values; update about
  2.6x10^7 values/s on one core).  A quantile is the retained item of
  inclusive rank >= q (``inclusive=True``): NumPy's ``method="inverted_cdf"``
  on the data, exactly so while the sketch holds every value
  (:attr:`QuantileSketch.is_exact`).
* KLL compacts at random: two sketches of the same values may answer a few
  retained items apart (always within the bound), so sketch quantiles are not
  reproducible bit for bit from run to run.  Exact quantiles are.
* Sketches do not pickle; a :class:`QuantileSketch` pickles as its serialized
  bytes (:meth:`QuantileSketch.to_bytes`), so it crosses processes and Ray tasks.
* NaN is refused (DataSketches would skip it silently and count one value less).
  The binding takes only writeable float64 arrays; a read-only one (a view of
  a Polars column) is copied first.
* :class:`QuantileAccumulator` keeps the values themselves while there are at
  most ``exact_limit`` of them (:data:`EXACT_LIMIT` = 10^7, 80 MB of float64)
  and answers NumPy's exact quantiles (linear interpolation, NumPy's default:
  the same numbers as :func:`rewardlab.analysis.stats.reward_stats` over the
  same values); past the limit it feeds them to a :class:`QuantileSketch`, in
  order, drops them and answers from the sketch.  Its :attr:`~QuantileAccumulator.method`
  (``"exact"`` or ``"kll"``) and :attr:`~QuantileAccumulator.rank_error`
  (0.0 for exact) say which, and every printed quantile carries them.

Examples
--------
>>> import numpy as np
>>> s = QuantileSketch().update(np.arange(101.0))
>>> s.quantiles([0.5]), s.n, s.is_exact
({0.5: 50.0}, 101, True)
>>> t = QuantileSketch.from_bytes(s.to_bytes())
>>> t.merge(QuantileSketch().update(np.arange(101.0, 202.0))).n
202
"""

from __future__ import annotations

import math
from typing import Sequence

import numpy as np
from datasketches import kll_doubles_sketch

from rewardlab.core.errors import ParameterError, check_int

__all__ = ["DEFAULT_K", "EXACT_LIMIT", "QUANTILE_METHODS", "QuantileSketch", "QuantileAccumulator",
           "check_quantiles", "describe_method"]

#: KLL's accuracy parameter: single-sided normalized rank error 0.278 % (see the module docstring).
DEFAULT_K = 1000

#: How many values :class:`QuantileAccumulator` keeps to answer exact quantiles (80 MB of float64).
EXACT_LIMIT = 10_000_000

#: How a quantile was computed: NumPy over every value, or a KLL sketch.
QUANTILE_METHODS = ("exact", "kll")


def check_quantiles(quantiles) -> tuple[float, ...]:
    """Quantile levels as a tuple of floats in [0, 1] (``ParameterError`` otherwise).

    Examples
    --------
    >>> check_quantiles([0.5, 1])
    (0.5, 1.0)
    """
    try:
        qs = tuple(float(q) for q in quantiles)
    except (TypeError, ValueError):
        raise ParameterError("quantiles", "should be a sequence of numbers in [0, 1]", quantiles) from None
    for q in qs:
        if not 0.0 <= q <= 1.0:
            raise ParameterError("quantiles", "should contain numbers in [0, 1]", quantiles)
    return qs


def describe_method(method: str, rank_error: float) -> str:
    """The words printed beside quantiles: ``"exact"`` or ``"KLL sketch, rank error ±0.28%"``.

    Examples
    --------
    >>> describe_method("kll", 0.0027801733995191495)
    'KLL sketch, rank error ±0.28%'
    >>> describe_method("exact", 0.0)
    'exact'
    """
    if method not in QUANTILE_METHODS:
        raise ParameterError("method", f"should be one of {QUANTILE_METHODS}", method)
    return "exact" if method == "exact" else f"KLL sketch, rank error ±{rank_error:.2%}"


def _float_values(values, what: str = "values") -> np.ndarray:
    """``values`` as a flat float64 array, NaN refused."""
    x = np.ascontiguousarray(values, dtype=np.float64).ravel()
    nans = int(np.count_nonzero(np.isnan(x)))
    if nans:
        raise ParameterError(what, "should hold no NaN (a sketch would skip them silently)", f"{nans} NaN")
    return x


class QuantileSketch:
    """A mergeable KLL quantile sketch of float64 values (DataSketches' ``kll_doubles_sketch``).

    Mutable: :meth:`update` and :meth:`merge` change the sketch and return it.
    Pickles as its serialized bytes.

    Parameters
    ----------
    k : int
        Accuracy, 8 .. 65535 (default :data:`DEFAULT_K`); the rank error falls
        roughly as 1/k and the size grows as k.

    Examples
    --------
    >>> import numpy as np
    >>> s = QuantileSketch(k=200).update(np.random.default_rng(0).normal(size=100_000))
    >>> round(s.rank_error, 4), s.n, s.is_exact
    (0.0133, 100000, False)
    >>> abs(s.quantiles([0.5])[0.5]) < 0.05
    True
    """

    __slots__ = ("_sketch",)

    def __init__(self, *, k: int = DEFAULT_K):
        k = check_int("k", k, low=8, high=65535, rule="should be an integer in 8 .. 65535")
        self._sketch = kll_doubles_sketch(k)

    @classmethod
    def from_bytes(cls, data: bytes) -> "QuantileSketch":
        """Rebuild a sketch from :meth:`to_bytes` output.

        Examples
        --------
        >>> QuantileSketch.from_bytes(QuantileSketch().update([1.0, 2.0]).to_bytes()).n
        2
        """
        if not isinstance(data, (bytes, bytearray, memoryview)):
            raise ParameterError("data", "should be the bytes of QuantileSketch.to_bytes()", type(data).__name__)
        out = cls.__new__(cls)
        try:
            out._sketch = kll_doubles_sketch.deserialize(bytes(data))
        except (RuntimeError, ValueError, IndexError) as exc:
            raise ParameterError("data", "should be the bytes of QuantileSketch.to_bytes()",
                                 f"{len(data)} bytes ({exc})") from None
        return out

    def to_bytes(self) -> bytes:
        """The serialized sketch (DataSketches' compact KLL format; about 24 KB at k = 1000 once full).

        Examples
        --------
        >>> len(QuantileSketch().to_bytes())
        8
        """
        return self._sketch.serialize()

    def __reduce__(self):
        return (QuantileSketch.from_bytes, (self.to_bytes(),))

    def update(self, values) -> "QuantileSketch":
        """Add ``values`` (any shape, flattened, float64; NaN refused) in one vectorized call.

        Examples
        --------
        >>> QuantileSketch().update([3.0, 1.0]).update(2.0).n
        3
        """
        x = _float_values(values)
        if x.size:  # the binding takes writeable arrays only (a Polars column's view is read-only)
            self._sketch.update(x if x.flags.writeable else x.copy())
        return self

    def merge(self, other: "QuantileSketch") -> "QuantileSketch":
        """Add every value ``other`` summarizes (``other`` is unchanged); returns this sketch.

        Examples
        --------
        >>> QuantileSketch().update([1.0]).merge(QuantileSketch().update([2.0, 3.0])).n
        3
        """
        if not isinstance(other, QuantileSketch):
            raise ParameterError("other", "should be a QuantileSketch", type(other).__name__)
        self._sketch.merge(other._sketch)
        return self

    @property
    def n(self) -> int:
        """Number of values summarized."""
        return int(self._sketch.n)

    @property
    def k(self) -> int:
        """The accuracy parameter."""
        return int(self._sketch.k)

    @property
    def is_exact(self) -> bool:
        """True while the sketch still holds every value (no compaction yet): its quantiles are exact."""
        return not self._sketch.is_estimation_mode()

    @property
    def rank_error(self) -> float:
        """The normalized single-sided rank error bound of the quantiles (0.0 while :attr:`is_exact`).

        Examples
        --------
        >>> QuantileSketch().rank_error
        0.0
        """
        return 0.0 if self.is_exact else float(self._sketch.normalized_rank_error(False))

    @property
    def bound(self) -> float:
        """The rank error bound of this sketch's ``k`` once it compacts (what :attr:`rank_error` becomes)."""
        return float(self._sketch.normalized_rank_error(False))

    def quantiles(self, qs: Sequence[float]) -> dict:
        """``{q: value}`` for levels in [0, 1]: the retained item of inclusive rank >= q (NaN when empty).

        Examples
        --------
        >>> QuantileSketch().update([1.0, 2.0, 3.0, 4.0]).quantiles([0.0, 0.5, 1.0])
        {0.0: 1.0, 0.5: 2.0, 1.0: 4.0}
        >>> QuantileSketch().quantiles([0.5])
        {0.5: nan}
        """
        qs = check_quantiles(qs)
        if self._sketch.is_empty():
            return {q: math.nan for q in qs}
        return {q: float(self._sketch.get_quantile(q, True)) for q in qs}

    def __repr__(self) -> str:
        return f"QuantileSketch(k={self.k}, n={self.n}, rank_error={self.rank_error:.4%})"


class QuantileAccumulator:
    """Quantiles of values added part by part: exact while there are at most ``exact_limit``, then KLL.

    Values are kept (in the order added) while their count is at most
    ``exact_limit``; :meth:`quantiles` then gives NumPy's exact quantiles
    (linear interpolation) of them all, the very numbers ``np.quantile`` gives
    on their concatenation.  The add or merge that takes the count past the
    limit feeds the kept values to a :class:`QuantileSketch` in order and drops
    them; from then on the quantiles are the sketch's (:attr:`method` ``"kll"``,
    :attr:`rank_error` its bound).  Mutable; pickles with the sketch as bytes.

    Parameters
    ----------
    exact_limit : int
        Most values kept for exact quantiles, >= 0 (default :data:`EXACT_LIMIT`;
        0: always the sketch).
    k : int
        The sketch's accuracy (default :data:`DEFAULT_K`).

    Examples
    --------
    >>> import numpy as np
    >>> a = QuantileAccumulator(exact_limit=5).add(np.array([1.0, 2.0, 3.0]))
    >>> a.quantiles([0.5]), a.method
    ({0.5: 2.0}, 'exact')
    >>> b = a.merge(QuantileAccumulator().add(np.array([4.0, 5.0, 6.0])))
    >>> b.n, b.method
    (6, 'kll')
    """

    __slots__ = ("exact_limit", "k", "_values", "_count", "_sketch")

    def __init__(self, *, exact_limit: int = EXACT_LIMIT, k: int = DEFAULT_K):
        self.exact_limit = check_int("exact_limit", exact_limit, low=0, rule="should be an integer >= 0")
        self.k = check_int("k", k, low=8, high=65535, rule="should be an integer in 8 .. 65535")
        self._values: list[np.ndarray] | None = []
        self._count = 0
        self._sketch: QuantileSketch | None = None

    def __getstate__(self):
        return {"exact_limit": self.exact_limit, "k": self.k, "values": self._values, "count": self._count,
                "sketch": None if self._sketch is None else self._sketch.to_bytes()}

    def __setstate__(self, state):
        self.exact_limit, self.k = state["exact_limit"], state["k"]
        self._values, self._count = state["values"], state["count"]
        self._sketch = None if state["sketch"] is None else QuantileSketch.from_bytes(state["sketch"])

    @property
    def n(self) -> int:
        """Number of values added."""
        return self._count

    @property
    def method(self) -> str:
        """``"exact"`` while the values are kept, ``"kll"`` once a sketch answers."""
        return "exact" if self._sketch is None else "kll"

    @property
    def rank_error(self) -> float:
        """0.0 for exact quantiles; the sketch's normalized rank error bound otherwise."""
        return 0.0 if self._sketch is None else self._sketch.bound

    def values(self) -> np.ndarray | None:
        """Every value added, in order, as one float64 array; None once the sketch answers.

        Examples
        --------
        >>> QuantileAccumulator().add([1.0]).add([2.0]).values()
        array([1., 2.])
        """
        if self._values is None:
            return None
        if len(self._values) == 1:
            return self._values[0]
        return np.concatenate(self._values) if self._values else np.empty(0)

    def _to_sketch(self) -> None:
        sketch = QuantileSketch(k=self.k)
        for x in self._values:
            sketch.update(x)
        self._sketch, self._values = sketch, None

    def add(self, values) -> "QuantileAccumulator":
        """Add a batch of values (flattened, float64; NaN refused); returns this accumulator.

        Examples
        --------
        >>> QuantileAccumulator(exact_limit=0).add([1.0, 2.0]).method
        'kll'
        """
        x = _float_values(values)
        if x.size == 0:
            return self
        self._count += int(x.size)
        if self._sketch is not None:
            self._sketch.update(x)
            return self
        self._values.append(x)
        if self._count > self.exact_limit:
            self._to_sketch()
        return self

    def merge(self, other: "QuantileAccumulator") -> "QuantileAccumulator":
        """Add ``other``'s values after this one's (``other`` is unchanged); returns this accumulator.

        Merge parts in data order: exact quantiles do not depend on it, but the
        kept values (and what is built from them) follow it.

        Examples
        --------
        >>> a = QuantileAccumulator().add([1.0]).merge(QuantileAccumulator().add([3.0]))
        >>> a.quantiles([0.5])
        {0.5: 2.0}
        """
        if not isinstance(other, QuantileAccumulator):
            raise ParameterError("other", "should be a QuantileAccumulator", type(other).__name__)
        if other._count == 0:
            return self
        self._count += other._count
        if self._sketch is None and other._sketch is None and self._count <= self.exact_limit:
            self._values.extend(other._values)
            return self
        if self._sketch is None:
            self._to_sketch()
        if other._sketch is not None:
            self._sketch.merge(other._sketch)
        else:
            for x in other._values:
                self._sketch.update(x)
        return self

    def quantiles(self, qs: Sequence[float]) -> dict:
        """``{q: value}``: exact (NumPy, linear interpolation) or the sketch's; NaN when empty.

        Examples
        --------
        >>> QuantileAccumulator().add([0.0, 1.0]).quantiles([0.25])
        {0.25: 0.25}
        """
        qs = check_quantiles(qs)
        if self._sketch is not None:
            return self._sketch.quantiles(qs)
        if self._count == 0 or not qs:
            return {q: math.nan for q in qs}
        return dict(zip(qs, map(float, np.quantile(self.values(), qs))))

    def __repr__(self) -> str:
        return f"QuantileAccumulator(n={self.n}, method={self.method!r}, rank_error={self.rank_error:.4%})"
