"""Per-episode sums that do not depend on where an episode sits in memory, and ranks that see their ties.

A sum of floats depends on the order of its additions.  Polars' group-by sum
and NumPy's pairwise ``reduce`` split a column into blocks whose boundaries
depend on where the data lies (chunks, vector widths), so two episodes with
the same rewards can sum to returns one unit in the last place apart; a rank
statistic then breaks a tie that does not exist (Spearman 0.97 between a
reward and the same reward times a constant).  :func:`segment_sums` sums each
episode on its own, step by step in the episode's order, with Neumaier's
compensated summation (error about one rounding of the result plus
``n * eps**2 * sum(|x|)``): the same steps give the same return wherever the
episode is, in any frame, shard or batch, and the result is closer to the
exact sum than a plain running sum.  :func:`tie_groups` says which sorted
values are equal up to summation error, for the rank statistics.

The kernel is compiled by numba on first use and cached next to this module
(``python -m rewardlab.analysis.sums`` compiles it now; ``make`` does once per
install).  ``tests/test_sums.py`` checks it against a plain-Python loop of the
same operations and against ``math.fsum``.

Examples
--------
>>> import numpy as np
>>> segment_sums(np.array([0.1, 0.2, 0.3, 1e16, 1.0, -1e16]), np.array([0, 3])).tolist()
[0.6, 1.0]
>>> 0.1 + 0.2 + 0.3, (1e16 + 1.0) - 1e16  # a plain running sum of the same segments
(0.6000000000000001, 0.0)
"""

from __future__ import annotations

import numpy as np

from rewardlab.core.errors import ParameterError

__all__ = ["segment_sums", "running_sums", "tie_groups", "TIE_RTOL", "compile_all"]

#: Values whose difference is at most this times the larger magnitude are ties for the rank statistics: a
#: few units in the last place, the error left by compensated sums of equal rewards in another order.
TIE_RTOL = 8 * float(np.finfo(np.float64).eps)


def _neumaier_loop(values, starts, stops, out, running):  # pragma: no cover - compiled by _kernel
    for k in range(starts.shape[0]):
        total = 0.0
        carry = 0.0
        for i in range(starts[k], stops[k]):
            x = values[i]
            t = total + x
            if abs(total) >= abs(x):
                carry += (total - t) + x
            else:
                carry += (x - t) + total
            total = t
            if running.shape[0]:
                running[i] = total + carry
        out[k] = total + carry


_KERNEL = []


def _kernel():
    """The compiled loop; numba is imported on the first sum only (``import rewardlab`` and the CLI's
    commands that sum nothing stay free of its start-up time)."""
    if not _KERNEL:
        from numba import njit

        _KERNEL.append(njit(cache=True, nogil=True)(_neumaier_loop))
    return _KERNEL[0]


def segment_sums(values, starts) -> np.ndarray:
    """The sum of each segment ``values[starts[k]:starts[k + 1]]`` (the last runs to the end), compensated.

    Parameters
    ----------
    values : float array of shape ``[T]``
        Cast to float64.
    starts : int array of shape ``[E]``
        Each segment's first position, increasing, the first 0 (when ``T > 0``).

    Returns
    -------
    numpy.ndarray
        float64 ``[E]``: Neumaier's compensated running sum of each segment
        in order, the same for the same values wherever the segment starts.

    Examples
    --------
    >>> segment_sums(np.array([1.0, 2.0, 4.0]), np.array([0, 2])).tolist()
    [3.0, 4.0]
    """
    x = np.ascontiguousarray(values, dtype=np.float64)
    s = np.asarray(starts)
    if x.ndim != 1 or s.ndim != 1 or (s.size and s.dtype.kind not in "iu"):
        raise ParameterError("values, starts", "should be 1-D: float values [T] and integer starts [E]",
                             f"shapes {x.shape} and {s.shape}, starts of dtype {s.dtype}")
    s = s.astype(np.int64, copy=False)
    if s.size == 0:
        if x.size:
            raise ParameterError("starts", f"should start a segment at 0 when there are {x.size} values", s)
        return np.zeros(0)
    if s[0] != 0 or (np.diff(s) < 0).any() or s[-1] > x.size:
        raise ParameterError("starts", f"should increase from 0 and stay within the {x.size} values",
                             f"first {s[0]}, last {s[-1]}")
    stops = np.append(s[1:], x.size)
    out = np.empty(s.size)
    _kernel()(x, np.ascontiguousarray(s), stops, out, np.empty(0))
    return out


def running_sums(values) -> np.ndarray:
    """The running sum of ``values`` at every position, compensated as :func:`segment_sums` sums (its last
    value is the segment's sum).

    Parameters
    ----------
    values : float array of shape ``[T]``

    Returns
    -------
    numpy.ndarray
        float64 ``[T]``.

    Examples
    --------
    >>> running_sums(np.array([0.1, 0.2, 0.3])).tolist()
    [0.1, 0.30000000000000004, 0.6]
    """
    x = np.ascontiguousarray(values, dtype=np.float64)
    if x.ndim != 1:
        raise ParameterError("values", "should be 1-D", x.shape)
    running = np.empty(x.size)
    if x.size:
        _kernel()(x, np.zeros(1, dtype=np.int64), np.array([x.size]), np.empty(1), running)
    return running


def tie_groups(sorted_values: np.ndarray, *, rtol: float = TIE_RTOL) -> np.ndarray:
    """True where a value of a sorted array starts a new group of ties (equal up to ``rtol`` of the larger magnitude).

    A value joins the group of the one before it when they differ by at most
    ``rtol * max(|a|, |b|)``; NaN never ties.

    Parameters
    ----------
    sorted_values : float array of shape ``[N]``, ascending

    Returns
    -------
    numpy.ndarray
        bool ``[N]``, True at each group's first value.

    Examples
    --------
    >>> a = 0.1 + 0.2
    >>> tie_groups(np.array([0.3, a, 0.5])).tolist()
    [True, False, True]
    """
    v = np.asarray(sorted_values, dtype=np.float64)
    new = np.ones(v.shape[0], dtype=bool)
    if v.shape[0] > 1:
        gap = v[1:] - v[:-1]
        scale = np.maximum(np.abs(v[1:]), np.abs(v[:-1]))
        with np.errstate(invalid="ignore"):
            new[1:] = ~(gap <= rtol * scale)  # NaN gaps (and inf - inf) start a group
    return new


def compile_all() -> None:
    """Compile the kernel now (numba caches it on disk)."""
    segment_sums(np.zeros(2), np.array([0, 1]))
    running_sums(np.zeros(2))


if __name__ == "__main__":  # `python -m rewardlab.analysis.sums`: compile now (make does, once per install)
    import time

    t0 = time.perf_counter()
    compile_all()
    print(f"rewardlab: episode sums ready ({time.perf_counter() - t0:.1f} s; compiled once, then cached by numba)")
