"""Exact mergeable moments: count, mean, second central moment, min and max (:class:`Moments`).

Partial results over shards, files, batches or processes combine with
``a.merge(b)`` (or ``a + b``) by Chan et al.'s parallel update in float64,
in any grouping, and the sums are processor-independent
(:meth:`Moments.of`).  :mod:`rewardlab.analysis.stats` computes them over
frames and scans; :mod:`rewardlab.analysis.stats_parts` over datasets part
by part.

Examples
--------
>>> import numpy as np
>>> m = Moments.of(np.array([1.0, 2.0])) + Moments.of(np.array([3.0, 4.0, 5.0]))
>>> m.count, m.mean, m.min, m.max
(5, 3.0, 1.0, 5.0)
"""

from __future__ import annotations

import dataclasses
import math

import numpy as np

from rewardlab.core.errors import ParameterError, check_int

__all__ = ["Moments", "json_number"]


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
    def of(cls, values, *, zeros: int = 0) -> "Moments":
        """Moments of an array (any shape, flattened; converted to float64; two-pass M2).

        ``zeros`` more values equal to 0.0 are counted without being
        materialised (a sparse reward column: its nonzero values and how
        many zeros it has): the count, the mean over all, ``M2 = sum((x -
        mean) ** 2) + zeros * mean ** 2`` and 0.0 within ``[min, max]``, the
        moments of the values with the zeros appended up to rounding (the
        sums add in another order); ``zeros=0`` is the plain case, bit for bit.

        Both sums are NumPy's pairwise sums, whose order of additions is fixed
        by the array's length: the same values give the same bits on any
        processor.  (A BLAS dot product, as ``np.dot`` is, adds in an order
        its kernel for the processor chooses, so its last bits vary from
        machine to machine, and with them the constants a plug-in exports.)

        Examples
        --------
        >>> Moments.of([2.0, 4.0]).m2
        2.0
        >>> Moments.of([3.0], zeros=2) == Moments.of([3.0, 0.0, 0.0])
        True
        """
        zeros = check_int("zeros", zeros, low=0)
        x = np.asarray(values, dtype=np.float64).ravel()
        n = x.size + zeros
        if n == 0:
            return cls()
        mean = float(np.add.reduce(x)) / n if x.size else 0.0
        d = x - mean
        np.multiply(d, d, out=d)
        m2 = float(np.add.reduce(d)) + zeros * mean * mean
        lo, hi = (float(x.min()), float(x.max())) if x.size else (0.0, 0.0)
        if zeros:
            lo, hi = min(lo, 0.0), max(hi, 0.0)
        return cls(int(n), mean, m2, lo, hi)

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
        return {k: json_number(v) for k, v in out.items()}


def json_number(v):
    """``v``, or None for a float that is not finite (NaN and infinities have no JSON).

    Examples
    --------
    >>> json_number(1.5), json_number(float("nan")), json_number(3)
    (1.5, None, 3)
    """
    if isinstance(v, float) and not math.isfinite(v):
        return None
    return v
