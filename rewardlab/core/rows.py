"""Per-row arrays that can be windowed and joined: what a stream of shards needs of a contract's arrays.

A contract builds its arrays from a frame once per run (one NumPy array per
field, the leading axis the rows).  A stream of shards
(:mod:`rewardlab.plugins.shards`) cuts them into windows and joins a shard's
head to the rows carried from the one before.  :class:`RowArrays` does both
for any subclass that lists its per-row fields in :attr:`RowArrays.row_fields`
(attributes holding an array, or a dict of arrays); nothing else of the
object is copied.

Examples
--------
>>> import numpy as np
>>> class Pairs(RowArrays):
...     row_fields = ("x", "columns")
...     def __init__(self, x):
...         self.n, self.x, self.columns = len(x), np.asarray(x), {"twice": 2 * np.asarray(x)}
>>> both = Pairs.concat([Pairs([1, 2, 3]).window(1, 3), Pairs([7])])
>>> both.n, both.x.tolist(), both.columns["twice"].tolist()
(3, [2, 3, 7], [4, 6, 14])
"""

from __future__ import annotations

import copy

import numpy as np

from rewardlab.core.errors import ParameterError

__all__ = ["RowArrays", "spread_episodes"]


class RowArrays:
    """Base class of a contract's arrays: ``window`` and ``concat`` over the :attr:`row_fields`.

    Attributes
    ----------
    n : int
        Rows.
    row_fields : tuple of str
        The attributes holding per-row data: a NumPy array whose first axis
        is the rows, or a dict of such arrays.
    """

    n: int
    row_fields: tuple[str, ...] = ()

    def window(self, start: int, stop: int):
        """The arrays of rows ``start:stop`` (views, no copy).

        A row's next state is the following row of the window: a caller must
        not hand a plug-in a row whose next state lies at or after ``stop``
        unless the row ends an episode.
        """
        if not (isinstance(start, (int, np.integer)) and isinstance(stop, (int, np.integer))
                and 0 <= start <= stop <= self.n):
            raise ParameterError("start, stop", f"should satisfy 0 <= start <= stop <= {self.n}",
                                 (start, stop))
        out = copy.copy(self)
        for name in self.row_fields:
            value = getattr(self, name)
            setattr(out, name, {k: v[start:stop] for k, v in value.items()} if isinstance(value, dict)
                    else value[start:stop])
        out.n = int(stop - start)
        return out

    @classmethod
    def concat(cls, parts: list):
        """The rows of ``parts`` one after another (one part is returned as it is; several are copied once)."""
        parts = list(parts)
        if not parts:
            raise ParameterError("parts", "should hold at least one arrays object", parts)
        if len(parts) == 1:
            return parts[0]
        out = copy.copy(parts[0])
        for name in cls.row_fields:
            values = [getattr(p, name) for p in parts]
            if isinstance(values[0], dict):
                setattr(out, name, {k: np.concatenate([v[k] for v in values]) for k in values[0]})
            else:
                setattr(out, name, np.concatenate(values))
        out.n = sum(p.n for p in parts)
        return out


def spread_episodes(starts: np.ndarray, stops: np.ndarray, rows: int) -> tuple[np.ndarray | None, int, int]:
    """A deterministic sample of whole episodes with about ``rows`` rows, spread evenly over the data.

    Parameters
    ----------
    starts, stops : int arrays of shape ``[E]``
        Each episode's first row and one past its last, in data order.
    rows : int
        About how many rows the sample should hold.

    Returns
    -------
    positions : int64 array or None
        The sample's rows in data order; None when the data has at most
        ``rows`` rows (use everything).
    picked, episodes : int
        Episodes in the sample, and in the data.

    Examples
    --------
    >>> positions, picked, episodes = spread_episodes(np.array([0, 2, 4]), np.array([2, 4, 6]), 2)
    >>> positions.tolist(), picked, episodes
    ([0, 1], 1, 3)
    """
    starts, stops = np.asarray(starts, dtype=np.int64), np.asarray(stops, dtype=np.int64)
    episodes = int(starts.size)
    total = int(stops[-1]) if episodes else 0
    if total <= rows or episodes == 0:
        return None, episodes, episodes
    wanted = max(1, min(episodes, round(rows * episodes / total)))
    pick = np.unique(np.linspace(0, episodes - 1, wanted).round().astype(np.int64))
    positions = np.concatenate([np.arange(a, b, dtype=np.int64) for a, b in zip(starts[pick], stops[pick])])
    return positions, int(pick.size), episodes
