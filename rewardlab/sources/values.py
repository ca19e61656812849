"""State values as the sources compare, show and place them: row-wise exact comparison, message text, and
the final-state column a source writes (:attr:`rewardlab.core.spec.StateColumn.final`).

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
import polars as pl

__all__ = ["rows_differ", "values_text", "plain_value", "final_state_column"]


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


def plain_value(value):
    """A NumPy scalar as the Python value it holds (an int, a float, a str); anything else as it is.

    For messages and tables: a string id read from an object column is already a Python ``str``, on which
    ``.item()`` does not exist.

    Examples
    --------
    >>> plain_value(np.int64(3)), plain_value("agent_1")
    (3, 'agent_1')
    """
    return value.item() if isinstance(value, np.generic) else value


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


def final_state_column(episode: np.ndarray, finals: np.ndarray, name: str) -> pl.Series:
    """A final-state column: each episode's final state on its last row, null on every other row.

    Parameters
    ----------
    episode : int array of shape ``[N]``
        Each row's episode ordinal; an episode's rows are one block (the
        ordinals need not be contiguous: skipped episodes leave gaps).
    finals : array of shape ``[E]`` or ``[E, width]``
        The final state of each episode ordinal (``E`` > every ordinal).
    name : str
        The column's name.

    Returns
    -------
    polars.Series
        ``N`` rows, the dtype ``pl.Series`` gives ``finals`` (``Array`` of
        its width for 2-D values).

    Examples
    --------
    >>> column = final_state_column(np.array([0, 0, 1, 3]), np.arange(8.0).reshape(4, 2), "final_obs")
    >>> column.dtype, column.to_list()
    (Array(Float64, shape=(2,)), [None, [0.0, 1.0], [2.0, 3.0], [6.0, 7.0]])
    """
    n = episode.shape[0]
    last = np.ones(n, dtype=bool)
    last[:-1] = episode[1:] != episode[:-1]
    values = np.zeros((n, *finals.shape[1:]), dtype=finals.dtype)
    values[last] = finals[episode[last]]
    return pl.select(pl.when(pl.Series(last)).then(pl.Series(name, values)).alias(name)).to_series()
