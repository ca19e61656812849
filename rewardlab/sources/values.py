"""State values as the sources compare and show them: row-wise exact comparison and message text.

A source that checks a next-state column against the following row's state
(RLlib's ``new_obs``, a step table's ``next_<state>``) compares exactly,
NaN equal to NaN, and shows a value's first entries in its messages.

Examples
--------
>>> import numpy as np
>>> rows_differ(np.array([1.0, np.nan]), np.array([1.0, np.nan])).tolist()
[False, False]
>>> values_text(np.float32(0.5))
'0.5'
"""

from __future__ import annotations

import numpy as np

__all__ = ["rows_differ", "values_text"]


def rows_differ(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """Per row: whether ``a`` and ``b`` differ (exactly; NaN equals NaN).

    Parameters
    ----------
    a, b : arrays of shape ``[N]`` or ``[N, width]``, one dtype

    Returns
    -------
    numpy.ndarray
        bool ``[N]``.

    Examples
    --------
    >>> rows_differ(np.array([[1.0, np.nan], [1.0, 2.0]]), np.array([[1.0, np.nan], [1.0, 2.5]])).tolist()
    [False, True]
    """
    differ = a != b
    if a.dtype.kind == "f":
        differ &= ~(np.isnan(a) & np.isnan(b))
    return differ if differ.ndim == 1 else differ.any(axis=1)


def values_text(value) -> str:
    """A value as a message shows it: a number, or a list's first six entries.

    Examples
    --------
    >>> values_text(np.arange(8.0)), values_text(np.array([0.5]))
    ('[0.0, 1.0, 2.0, 3.0, 4.0, 5.0, ...]', '[0.5]')
    """
    values = np.atleast_1d(value).tolist()
    if np.ndim(value) == 0:
        return repr(values[0])
    return "[" + ", ".join(repr(v) for v in values[:6]) + (", ...]" if len(values) > 6 else "]")
