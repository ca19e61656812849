"""Rows of the common frame -> the TensorDict a kanachan reward plug-in receives.

The builder reproduces what kanachan hands ``get_reward``: int32 feature
tensors padded with kanachan's padding values, the next state taken from the
following row (padding, and zeros for ``numeric``, at the end of a game),
``round_summary`` / ``results`` as stored, bool flags, and ``("next", "done")``
a fresh copy of ``end_of_game``; everything on CPU.

:class:`FrameArrays` converts the frame's columns to NumPy once (zero-copy
where Polars allows); each batch is then slicing or fancy indexing plus one
widening copy, with no per-row Python.

Examples
--------
>>> import rewardlab
>>> frame = rewardlab.load_kanachan("data/sample.tsv.gz", progress=False)  # doctest: +SKIP
>>> td = rewardlab.to_tensordict(frame)  # doctest: +SKIP
>>> td["next", "done"].dtype  # doctest: +SKIP
torch.bool
"""

from __future__ import annotations

import numpy as np
import polars as pl
import torch
from tensordict import TensorDict

from rewardlab.sources.kanachan import schema as S
from rewardlab.core.rows import RowArrays
from rewardlab.core.errors import ColumnNotFoundError, FrameError, ParameterError, check_choice

__all__ = ["FrameArrays", "to_tensordict", "TENSORDICT_KEYS", "IN_KEYS", "CONVENTIONS"]

#: How kanachan builds the TensorDict (see :data:`rewardlab.sources.kanachan.schema.CONVENTIONS`).
CONVENTIONS = S.CONVENTIONS

#: Every key of the TensorDict a plug-in receives, in kanachan's layout.
TENSORDICT_KEYS = (
    "sparse", "numeric", "progression", "candidates", "action",
    ("next", "sparse"), ("next", "numeric"), ("next", "progression"), ("next", "candidates"),
    ("next", "round_summary"), ("next", "results"), ("next", "end_of_round"),
    ("next", "end_of_game"), ("next", "done"),
)

#: Fields a kanachan plug-in must not change: everything it receives except ``("next", "done")``.
IN_KEYS = tuple(k for k in TENSORDICT_KEYS if k != ("next", "done"))

_ARRAY_COLUMNS = (S.SPARSE, S.NUMERIC, S.PROGRESSION, S.CANDIDATES, S.ROUND_SUMMARY, S.RESULTS)
_NEEDED = _ARRAY_COLUMNS + (S.ACTION, S.END_OF_ROUND, S.END_OF_GAME)


def _column_numpy(frame: pl.DataFrame, name: str, width: int | None) -> np.ndarray:
    series = frame.get_column(name)
    if series.null_count():
        raise FrameError(f"column {name!r} has {series.null_count()} null values",
                         hint="Transitions must be complete; reload the dataset.")
    if width is None:
        return series.to_numpy()
    if not isinstance(series.dtype, pl.Array) or series.dtype.size != width:
        raise FrameError(f"column {name!r} should be Array(_, {width}), found {series.dtype}",
                         hint="Load data with rewardlab.load_kanachan() or a rewardlab source.")
    arr = series.to_numpy()
    if arr.ndim != 2:  # defensive: Polars returns a 2-D view for Array columns
        arr = np.stack(arr)
    return arr


class FrameArrays(RowArrays):
    """NumPy views of a frame's columns, built once and sliced per batch.

    Parameters
    ----------
    frame : polars.DataFrame
        The common frame, in episode order, with every episode complete
        (the row after a non-final step is the next step of the same episode).

    Examples
    --------
    >>> arrays = FrameArrays(frame)  # doctest: +SKIP
    >>> td = arrays.tensordict(np.array([5, 2, 9]))  # doctest: +SKIP
    """

    def __init__(self, frame: pl.DataFrame):
        if isinstance(frame, pl.LazyFrame):
            raise ParameterError("frame", "should be an eager polars.DataFrame (collect it first)",
                                 type(frame).__name__)
        missing = [c for c in _NEEDED if c not in frame.columns]
        if missing:
            raise ColumnNotFoundError(missing[0], frame.columns)
        self.n = frame.height
        widths = {S.SPARSE: S.MAX_NUM_ACTIVE_SPARSE_FEATURES, S.NUMERIC: S.NUM_NUMERIC_FEATURES,
                  S.PROGRESSION: S.MAX_LENGTH_OF_PROGRESSION_FEATURES,
                  S.CANDIDATES: S.MAX_NUM_ACTION_CANDIDATES, S.ROUND_SUMMARY: S.MAX_NUM_ROUND_SUMMARY,
                  S.RESULTS: S.RL_NUM_RESULTS}
        self.arrays = {name: _column_numpy(frame, name, widths[name]) for name in _ARRAY_COLUMNS}
        self.action = _column_numpy(frame, S.ACTION, None)
        self.end_of_round = _column_numpy(frame, S.END_OF_ROUND, None).astype(bool, copy=False)
        self.end_of_game = _column_numpy(frame, S.END_OF_GAME, None).astype(bool, copy=False)
        if self.n and not self.end_of_game[-1]:
            raise FrameError(
                "the frame's last row is not the end of a game, so its next state is unknown",
                hint="Pass the whole frame and select rows with `rows=` instead of slicing the frame.")

    #: The per-row fields :meth:`~rewardlab.core.rows.RowArrays.window` and ``concat`` slice and join.
    row_fields = ("arrays", "action", "end_of_round", "end_of_game")

    def tensordict(self, rows: np.ndarray | slice | None = None, *,
                   convention: str = "offline") -> TensorDict:
        """Build the plug-in TensorDict for ``rows`` (positions in the frame; default all).

        ``rows`` may be a ``slice`` (fast path: views, no gather) or an
        integer array in any order (shuffled mini-batches).  ``convention``
        is one of :data:`CONVENTIONS`.
        """
        check_choice("convention", convention, CONVENTIONS)
        if rows is None:
            rows = slice(0, self.n)
        if isinstance(rows, slice):
            start, stop, step = rows.indices(self.n)
            if step != 1:
                rows = np.arange(start, stop, step)
            else:
                stop = max(stop, start)  # slice(10, 3) is empty, as in Python
                return self._build(slice(start, stop), slice(min(start + 1, self.n), min(stop + 1, self.n)),
                                   stop - start, tail_cut=stop + 1 > self.n, convention=convention)
        rows = np.asarray(rows)
        if rows.ndim != 1 or rows.dtype.kind not in "iu":
            raise ParameterError("rows", "should be a 1-D integer array or a slice",
                                 f"array of dtype {rows.dtype} and shape {rows.shape}")
        if rows.size and (rows.min() < 0 or rows.max() >= self.n):
            raise ParameterError("rows", f"should be positions in [0, {self.n})",
                                 f"min {rows.min()}, max {rows.max()}")
        nxt = np.minimum(rows + 1, max(self.n - 1, 0))
        return self._build(rows, nxt, rows.size, tail_cut=False, convention=convention)

    def _build(self, cur, nxt, size: int, *, tail_cut: bool, convention: str) -> TensorDict:
        a = self.arrays
        eog = self.end_of_game[cur]
        root: dict = {}
        following: dict = {}
        for name in (S.SPARSE, S.NUMERIC, S.PROGRESSION, S.CANDIDATES):
            width, pad = S.STATE_FEATURES[name]
            root[name] = torch.from_numpy(a[name][cur].astype(np.int32))
            nxt_arr = np.empty((size, width), dtype=np.int32)
            src = a[name][nxt]
            if tail_cut:  # slice whose last row is the frame's last (an end of game)
                nxt_arr[: src.shape[0]] = src
                nxt_arr[src.shape[0]:] = pad
            else:
                nxt_arr[:] = src
            nxt_arr[eog] = pad
            following[name] = torch.from_numpy(nxt_arr)
        root[S.ACTION] = torch.from_numpy(self.action[cur].astype(np.int32))
        eor = self.end_of_round[cur]
        if convention == "simulation":  # kanachan/training/core/rl/simulation.py
            summary = np.full((size, S.MAX_NUM_ROUND_SUMMARY), S.NUM_TYPES_OF_ROUND_SUMMARY, dtype=np.int32)
            eor = eor | eog
        else:
            summary = a[S.ROUND_SUMMARY][cur].astype(np.int32)
            eor = eor.copy()
        following[S.ROUND_SUMMARY] = torch.from_numpy(summary)
        following[S.RESULTS] = torch.from_numpy(a[S.RESULTS][cur].astype(np.int32))
        following[S.END_OF_ROUND] = torch.from_numpy(eor)
        eog_t = torch.from_numpy(np.array(eog, dtype=bool, copy=True))
        following[S.END_OF_GAME] = eog_t
        following["done"] = eog_t.clone()
        # kanachan's order: the state and action first, then the "next" keys (TENSORDICT_KEYS)
        return TensorDict({**root, "next": following}, batch_size=[size], device="cpu")


def to_tensordict(frame: pl.DataFrame, rows: np.ndarray | slice | None = None, *,
                  convention: str = "offline") -> TensorDict:
    """Build exactly the TensorDict kanachan hands a reward plug-in.

    Parameters
    ----------
    frame : polars.DataFrame
        The whole common frame (episode order, complete episodes).  Do not
        pass a slice cut mid-episode: the next state of its last row would be
        missing.  Select rows with ``rows`` instead.
    rows : slice or 1-D int array, optional
        Frame positions to include, in the order the batch should have.
    convention : {"offline", "simulation"}
        Build it as kanachan's offline loaders do (the default) or as its
        simulator does (:data:`CONVENTIONS`).

    Returns
    -------
    tensordict.TensorDict
        Batch size ``[B]``; keys :data:`TENSORDICT_KEYS`; int32 features of
        shape ``[B, 29]``, ``[B, 6]``, ``[B, 109]``, ``[B, 32]``, action
        ``[B]``, ``("next", "round_summary")`` ``[B, 7]``,
        ``("next", "results")`` ``[B, 8]``, bool flags ``[B]``; on CPU.

    Examples
    --------
    >>> td = to_tensordict(frame, rows=np.array([3, 1, 2]))  # doctest: +SKIP
    >>> td.batch_size  # doctest: +SKIP
    torch.Size([3])
    """
    return FrameArrays(frame).tensordict(rows, convention=convention)
