"""Rows of a step table -> the TensorDict of the steps contract, in TorchRL's key layout.

For each state column ``s`` of the spec the TensorDict holds ``s`` (this
step's value) and ``("next", s)`` (the following row's value; after an
episode's last step the episode's final state where the frame has one, in
the state's final column, and the column's ``pad`` only where the data
lacks it); the spec's numeric and
Boolean extra columns (``action``, ...) sit at the root; the flags are
``("next", "done")`` = ``("next", "terminated") | ("next", "truncated")``.
Every tensor keeps the column's dtype and is a fresh copy (a plug-in's
writes never reach the frame).

Examples
--------
>>> import polars as pl
>>> from rewardlab.core.spec import FrameSpec, StateColumn
>>> spec = FrameSpec(name="toy", episode=("ep",), terminated="term", truncated="trunc",
...                  states=(StateColumn("obs", None, "float32", -1.0),), columns=("action",))
>>> frame = pl.DataFrame({"ep": [0, 0, 1], "obs": [0.5, 1.5, 2.5], "action": [1, 0, 1],
...                       "term": [False, True, False], "trunc": [False, False, True]},
...                      schema_overrides={"obs": pl.Float32})
>>> td = StepsArrays(frame, spec).tensordict()
>>> td["next", "obs"].tolist(), td["next", "done"].tolist(), td["next", "truncated"].tolist()
([1.5, -1.0, -1.0], [False, True, True], [False, False, True])

With the episodes' final observations (episode 1's is missing, so it keeps the pad):

>>> final = StateColumn("obs", None, "float32", -1.0, final="final_obs")
>>> framed = frame.with_columns(final_obs=pl.Series([None, 3.5, None], dtype=pl.Float32))
>>> arrays = StepsArrays(framed, FrameSpec(name="toy", episode=("ep",), terminated="term",
...                                        truncated="trunc", states=(final,), columns=("action",)))
>>> arrays.tensordict()["next", "obs"].tolist(), arrays.missing_final.tolist()
([1.5, 3.5, -1.0], [False, False, True])
"""

from __future__ import annotations

import copy

import numpy as np
import polars as pl
import torch
from tensordict import TensorDict

from rewardlab.contracts.checks import REWARD_KEY, key_text
from rewardlab.core.rows import RowArrays
from rewardlab.core.spec import DECLARE_HINT, FrameSpec, StateColumn
from rewardlab.core.errors import ParameterError, SpecError

__all__ = ["StepsArrays", "FLAG_KEYS", "RESERVED_NAMES", "RESERVED_STATES"]

#: The flags under ``"next"``, in the TensorDict's order.
FLAG_KEYS = (("next", "done"), ("next", "terminated"), ("next", "truncated"))

#: Names no state or handed extra column may have: the root key of the next states, flags and reward.
RESERVED_NAMES = (FLAG_KEYS[0][0],)

#: Names no state may have: its next value ``("next", state)`` would be a flag or the plug-in's reward.
RESERVED_STATES = (*(key[1] for key in FLAG_KEYS), REWARD_KEY[1])


def _check_names(states, extras) -> None:
    """Refuse a state or extra whose keys would collide with the TensorDict's own (:data:`RESERVED_NAMES`,
    :data:`RESERVED_STATES`)."""
    for name in (*states, *extras):
        if name in RESERVED_NAMES or (name in states and name in RESERVED_STATES):
            key = name if name in RESERVED_NAMES else ("next", name)
            raise SpecError(f"the name {name!r} is reserved by the steps contract: the plug-in's TensorDict "
                            f"has its own {key_text(key)} (it holds " + ", ".join(
                                key_text(k) for k in (("next", "<state>"), *FLAG_KEYS, REWARD_KEY))
                            + "), so the column's key would collide with it", column=name,
                            hint="Rename the column (for example to " + name + "_value) and declare the spec "
                            "with the new name.")


def _numpy_dtype(dtype: pl.DataType) -> pl.DataType:
    """``dtype`` with a Decimal as Float64 and a 128-bit integer as Int64 (NumPy and torch have neither)."""
    if isinstance(dtype, pl.Array):
        return pl.Array(_numpy_dtype(dtype.inner), dtype.size)
    if isinstance(dtype, pl.Decimal):
        return pl.Float64
    return pl.Int64 if dtype in (pl.Int128, pl.UInt128) else dtype


def _column(frame: pl.DataFrame, name: str, dtype: np.dtype | None) -> np.ndarray:
    series = frame.get_column(name)
    if series.null_count():
        raise SpecError("the column has nulls; a plug-in's data must be complete", column=name,
                        row=int(series.is_null().arg_true()[0]))
    plain = _numpy_dtype(series.dtype)
    if plain != series.dtype:
        cast = series.cast(plain, strict=False)
        lost = cast.is_null() if not isinstance(plain, pl.Array) else cast.arr.contains(None) | cast.is_null()
        if lost.any():
            raise SpecError(f"the value {series[int(lost.arg_true()[0])]} does not fit {plain}, the type a "
                            "plug-in's tensor can hold", column=name, row=int(lost.arg_true()[0]),
                            hint="Store the column as Int64 or Float64.")
        series = cast
    arr = series.to_numpy()
    if arr.dtype == object:  # an Array column Polars could not view as 2-D
        arr = np.stack(arr)
    return arr if dtype is None else arr.astype(dtype, copy=False)


def _final(frame: pl.DataFrame, state: StateColumn) -> tuple[np.ndarray, np.ndarray]:
    """``(values, held)`` of a state's final column: the final states where held, the state's ``pad`` elsewhere."""
    series = frame.get_column(state.final)
    held = series.is_not_null().to_numpy()
    shape = (frame.height,) if state.width is None else (frame.height, state.width)
    values = np.full(shape, state.pad, dtype=state.numpy_dtype)
    if held.any():
        values[held] = _column(series.filter(pl.Series(held)).to_frame(), state.final, state.numpy_dtype)
    return values, held


def _beyond(values: np.ndarray, pad, high: bool):
    """A value above (``high``) or below every element of ``values`` and ``pad``, within the dtype's range
    (where the values fill that side of the range: beyond the other side; where they fill it all: not ``pad``)."""
    if values.dtype == bool:
        return not bool(pad)
    if values.dtype.kind == "f":
        values = values[np.isfinite(values)]  # NaN or infinite observations do not set the range
        lo, hi = min(float(values.min(initial=pad)), pad), max(float(values.max(initial=pad)), pad)
        return hi + max(1.0, abs(hi)) if high else lo - max(1.0, abs(lo))
    info = np.iinfo(values.dtype)
    lo, hi = min(int(values.min(initial=pad)), int(pad)), max(int(values.max(initial=pad)), int(pad))
    for value in ((hi + 1, lo - 1) if high else (lo - 1, hi + 1)):
        if info.min <= value <= info.max:
            return value
    return info.max if int(pad) != info.max else info.min


def _handed(series_dtype: pl.DataType) -> bool:
    """Whether an extra column goes into the TensorDict: numeric or Boolean, scalar or Array."""
    inner = series_dtype.inner if isinstance(series_dtype, pl.Array) else series_dtype
    while isinstance(inner, pl.Array):
        inner = inner.inner
    return inner.is_numeric() or inner == pl.Boolean


class StepsArrays(RowArrays):
    """NumPy arrays of a step table's states, extras and flags, built once per run.

    Parameters
    ----------
    frame : polars.DataFrame
        One row per step, episodes contiguous and complete (checked with
        :meth:`FrameSpec.validate <rewardlab.core.spec.FrameSpec.validate>`).
        No state or handed extra is named ``"next"``, and no state
        ``"done"``, ``"terminated"``, ``"truncated"`` or ``"reward"``
        (:data:`RESERVED_NAMES`, :data:`RESERVED_STATES`: a
        :class:`~rewardlab.core.errors.SpecError`).
    spec : FrameSpec
        Its spec: states, extras, terminal flags.  Where the spec has no
        ``terminated`` column, every episode end that is not truncated is
        terminated; with no ``truncated`` column nothing is truncated.

    Attributes
    ----------
    n : int
    episode_end, terminated, truncated : bool arrays of shape ``[N]``
    state_columns : dict
        ``{name: StateColumn}``.
    states : dict
        ``{name: array [N] or [N, width]}``.
    finals : dict
        ``{name: array [N] or [N, width]}`` for the states with a final
        column: the final state on episodes' last rows that have one, the
        state's ``pad`` on every other row.
    missing_final : bool array of shape ``[N]``
        True on each episode's last row whose next state is padding because
        the data lacks the final state (every last row when no state names a
        final column).
    extras : dict
        ``{name: array}`` of the extra columns handed over.
    """

    #: The per-row fields :meth:`~rewardlab.core.rows.RowArrays.window` and ``concat`` slice and join.
    row_fields = ("states", "finals", "extras", "episode_end", "terminated", "truncated", "missing_final")

    def __init__(self, frame: pl.DataFrame, spec: FrameSpec | None):
        if isinstance(frame, pl.LazyFrame):
            raise ParameterError("frame", "should be an eager polars.DataFrame (collect it first)",
                                 "LazyFrame")
        if spec is None:
            raise SpecError("the steps contract needs the frame's spec (its state columns, flags and "
                            "episodes), and the frame has none", hint=DECLARE_HINT)
        spec.validate(frame)
        self.spec = spec
        self.n = frame.height
        self.state_columns: dict[str, StateColumn] = {s.name: s for s in spec.states}
        handed = [c for c in spec.columns if c not in self.state_columns and _handed(frame.schema[c])]
        _check_names(self.state_columns, handed)
        self.states: dict[str, np.ndarray] = {
            s.name: _column(frame, s.name, s.numpy_dtype) for s in spec.states}
        self.extras: dict[str, np.ndarray] = {c: _column(frame, c, None) for c in handed}
        if self.n:
            self.episode_end = frame.select(spec.episode_end()).to_series().to_numpy().astype(bool)
        else:
            self.episode_end = np.zeros(0, dtype=bool)
        self.finals: dict[str, np.ndarray] = {}
        self.missing_final = self.episode_end.copy()
        for s in spec.states:
            if s.final is not None:
                self.finals[s.name], held = _final(frame, s)
                self.missing_final &= ~held
        self.truncated = (_column(frame, spec.truncated, None).astype(bool) if spec.truncated
                          else np.zeros(self.n, dtype=bool))
        self.terminated = (_column(frame, spec.terminated, None).astype(bool) if spec.terminated
                           else self.episode_end & ~self.truncated)

    def probe(self, *, high: bool) -> "StepsArrays":
        """A copy whose padded next states (:attr:`missing_final` rows) hold another value than ``pad``.

        Each state's probe value lies above (``high``) or below every value
        of the state in these rows and its pad (within the dtype's range);
        the other rows are unchanged, so a plug-in whose rewards differ on a
        probe reads the padding.

        Examples
        --------
        >>> import polars as pl
        >>> from rewardlab.core.spec import FrameSpec, StateColumn
        >>> spec = FrameSpec(name="toy", episode=("ep",), terminated="term",
        ...                  states=(StateColumn("obs", None, "float32", 0.0),))
        >>> arrays = StepsArrays(pl.DataFrame({"ep": [0, 0], "obs": [0.5, 2.0], "term": [False, True]},
        ...                                   schema_overrides={"obs": pl.Float32}), spec)
        >>> arrays.probe(high=True).tensordict()["next", "obs"].tolist()
        [2.0, 4.0]
        """
        out = copy.copy(self)
        out.finals = dict(self.finals)
        for name, values in self.states.items():
            state = self.state_columns[name]
            finals = out.finals.get(name)
            finals = np.full(values.shape, state.pad, dtype=values.dtype) if finals is None else finals.copy()
            finals[self.missing_final] = _beyond(values, state.pad, high)
            out.finals[name] = finals
        return out

    @property
    def keys(self) -> tuple:
        """Every key of the TensorDict, in its order."""
        return (*self.states, *self.extras, *(("next", s) for s in self.states), *FLAG_KEYS)

    def _rows(self, rows) -> np.ndarray | slice:
        if rows is None:
            return slice(0, self.n)
        if isinstance(rows, slice):
            start, stop, step = rows.indices(self.n)
            if step == 1:
                return slice(start, max(stop, start))
            rows = np.arange(start, stop, step)
        rows = np.asarray(rows)
        if rows.ndim != 1 or (rows.size and rows.dtype.kind not in "iu"):
            raise ParameterError("rows", "should be a 1-D integer array or a slice",
                                 f"array of dtype {rows.dtype} and shape {rows.shape}")
        if rows.size and (rows.min() < 0 or rows.max() >= self.n):
            raise ParameterError("rows", f"should be positions in [0, {self.n})",
                                 f"min {rows.min()}, max {rows.max()}")
        return rows.astype(np.int64, copy=False)

    def tensordict(self, rows: np.ndarray | slice | None = None) -> TensorDict:
        """The TensorDict of ``rows`` (frame positions, a slice or an int array in any order; default all).

        Returns
        -------
        tensordict.TensorDict
            Batch size ``[B]``; keys :attr:`keys`; states and extras of shape
            ``[B]`` or ``[B, width]`` in their columns' dtypes, bool flags
            ``[B]``; on CPU.
        """
        rows = self._rows(rows)
        if isinstance(rows, slice):
            size = rows.stop - rows.start
            nxt = np.minimum(np.arange(rows.start + 1, rows.stop + 1), max(self.n - 1, 0))
        else:
            size = rows.size
            nxt = np.minimum(rows + 1, max(self.n - 1, 0))
        end = self.episode_end[rows]
        ended = None  # the frame positions of the batch's last steps, found once if a final state is read
        root: dict = {}
        following: dict = {}
        for name, arr in self.states.items():
            state = self.state_columns[name]
            root[name] = torch.from_numpy(np.array(arr[rows], copy=True))
            after = arr[nxt]  # a gather: already a copy
            final = self.finals.get(name)
            if final is None:
                after[end] = state.pad
            elif end.any():  # the last steps' final states (the state's pad where the data lacks one)
                if ended is None:
                    ended = (rows.start + np.flatnonzero(end) if isinstance(rows, slice) else rows[end])
                after[end] = final[ended]
            following[name] = torch.from_numpy(after)
        for name, arr in self.extras.items():
            root[name] = torch.from_numpy(np.array(arr[rows], copy=True))
        terminated = np.array(self.terminated[rows], dtype=bool, copy=True)
        truncated = np.array(self.truncated[rows], dtype=bool, copy=True)
        following["done"] = torch.from_numpy(terminated | truncated)
        following["terminated"] = torch.from_numpy(terminated)
        following["truncated"] = torch.from_numpy(truncated)
        return TensorDict({**root, "next": following}, batch_size=[size], device="cpu")
