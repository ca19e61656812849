"""What a frame of trajectories is: :class:`FrameSpec`, the one description every module reads.

A frame holds **one row per step**, rows in episode order (every step of one
episode, in the order they happened, then the next episode).  Each state is
stored once: the next state of a row is the state of the following row of the
same episode (RLlib's shift-by-one view).  After an episode's last step the
next state is the episode's **final state** (the observation Gymnasium's last
``step`` returned, RLlib's last ``new_obs``, Minari's N+1-th observation)
where the data has one: a state column may name a *final column*
(:attr:`StateColumn.final`, by convention ``final_<state>``, see
:func:`final_column`) that holds it on the episode's last row and is null on
every other row, so a frame keeps N+1 states per episode at the cost of one
nullable column.  Where the final column is null, or the state names none,
the next state after the last step is the state's fixed ``pad``: the data
truly lacks it (kanachan's files pad the state after a game's end by
contract, so kanachan frames name no final columns).

The spec names which columns carry that structure:

==================  ==========================================================
field               meaning
==================  ==========================================================
``episode``         the column(s) whose value identifies an episode; empty for
                    a single stream whose episodes end where a terminal flag
                    fires (and at its last row)
``step``            the step index within the episode (optional)
``agent``           the acting agent (optional; multi-agent data)
``terminated``      True on an episode's last step when the episode *ended*
                    (returns bootstrap with zero)
``truncated``       True on an episode's last step when it was *cut* (time
                    limit, end of recording; returns bootstrap with a value)
``boundaries``      sub-episode boundary flags (kanachan's ``end_of_round``)
``states``          :class:`StateColumn` s: name, width, dtype, padding, and
                    the column holding the final state (optional)
``columns``         the source's other columns a contract may hand over
``contract``        the plug-in contract frames of this kind use by default
``time``            a per-step time column, e.g. seconds (optional; episode
                    summaries report the time per step from it)
==================  ==========================================================

Frames rewardlab produces carry their spec (:func:`attach` /
:func:`attached`); a converted dataset stores it in its file metadata
(:meth:`FrameSpec.to_json`).  :meth:`FrameSpec.validate` checks a frame
against its spec and names the column and first offending row.

Examples
--------
>>> import polars as pl
>>> spec = FrameSpec(name="steps", episode=("episode",), step="t", terminated="terminated",
...                  truncated="truncated", states=(StateColumn("obs", 2, "float32", 0.0),))
>>> frame = pl.DataFrame({"episode": [0, 0, 1], "t": [0, 1, 0],
...                       "obs": [[0.5, 1.0], [0.25, 0.0], [1.0, 1.0]],
...                       "terminated": [False, True, False], "truncated": [False, False, True]},
...                      schema_overrides={"obs": pl.Array(pl.Float32, 2)})
>>> spec.validate(frame)
>>> FrameSpec.from_json(spec.to_json()) == spec
True
"""

from __future__ import annotations

import json
import weakref
from dataclasses import asdict, dataclass, field, replace

import numpy as np
import polars as pl

from rewardlab.core.errors import ParameterError, SpecError

__all__ = [
    "FrameSpec", "StateColumn", "attach", "attached", "keep_spec", "final_column", "SPEC_KEY", "EPISODE_END",
    "DECLARE_HINT", "FINAL_PREFIX",
]

#: File-metadata key under which a dataset stores its spec (JSON).
SPEC_KEY = "rewardlab.spec"

#: Name of the helper column :meth:`FrameSpec.episode_end` computes.
EPISODE_END = "_episode_end"

#: The prefix of a final-state column's conventional name (:func:`final_column`).
FINAL_PREFIX = "final_"

#: What to do when a frame has no spec: said by every "no spec" error.
DECLARE_HINT = (
    "Declare one and pass it as spec=, for example "
    "spec=rewardlab.FrameSpec(name='steps', episode=('episode_id',), step='t', "
    "terminated='terminated', truncated='truncated', "
    "states=(rewardlab.StateColumn('obs', 4, 'float32', 0.0),)), "
    "or load the data with rewardlab.load(), which attaches the source's spec")

_DTYPES = {
    "bool": pl.Boolean, "int8": pl.Int8, "int16": pl.Int16, "int32": pl.Int32, "int64": pl.Int64,
    "uint8": pl.UInt8, "uint16": pl.UInt16, "uint32": pl.UInt32, "uint64": pl.UInt64,
    "float32": pl.Float32, "float64": pl.Float64,
}


def _name(value, what: str) -> str:
    if not isinstance(value, str) or not value:
        raise ParameterError(what, "should be a column name (a non-empty string)", value)
    return value


def final_column(state: str) -> str:
    """The conventional name of the column holding state ``state``'s final value: ``final_<state>``.

    Examples
    --------
    >>> final_column("obs")
    'final_obs'
    """
    return FINAL_PREFIX + _name(state, "state")


def _names(value, what: str) -> tuple[str, ...]:
    if isinstance(value, str):
        value = (value,)
    if not isinstance(value, (tuple, list)):
        raise ParameterError(what, "should be a tuple of column names", value)
    return tuple(_name(v, what) for v in value)


@dataclass(frozen=True)
class StateColumn:
    """A state column: its next value is the following row of the same episode.

    Parameters
    ----------
    name : str
        The column.
    width : int or None
        Values per row for an ``Array`` column; None for a scalar column.
    dtype : str
        The NumPy dtype of one value (``"int16"``, ``"float32"``, ...).
    pad : int or float
        The next state after an episode's last step (every element) where
        the data has no final state.
    final : str or None
        The column holding the episode's final state (the state after its
        last step) on each episode's last row, null on every other row and
        on the last rows of episodes whose final state the data lacks; the
        state's dtype and width.  None: the data has no final states (the
        next state after a last step is ``pad``).

    Examples
    --------
    >>> StateColumn("obs", 4, "float32", 0.0).polars_dtype
    Array(Float32, shape=(4,))
    >>> StateColumn("obs", 4, "float32", 0.0, final="final_obs").final
    'final_obs'
    """

    name: str
    width: int | None
    dtype: str
    pad: int | float = 0
    final: str | None = None

    def __post_init__(self):
        _name(self.name, "StateColumn.name")
        if self.width is not None and (isinstance(self.width, bool) or not isinstance(self.width, int)
                                       or self.width < 1):
            raise ParameterError(f"StateColumn({self.name!r}).width", "should be a positive int or None",
                                 self.width)
        if self.dtype not in _DTYPES:
            raise ParameterError(f"StateColumn({self.name!r}).dtype", "should be one of "
                                 + ", ".join(map(repr, _DTYPES)), self.dtype)
        if isinstance(self.pad, bool) or not isinstance(self.pad, (int, float)):
            raise ParameterError(f"StateColumn({self.name!r}).pad", "should be a number", self.pad)
        if self.final is not None:
            _name(self.final, f"StateColumn({self.name!r}).final")
            if self.final == self.name:
                raise ParameterError(f"StateColumn({self.name!r}).final", "should be another column than the "
                                     "state itself (by convention final_<state>)", self.final)

    @property
    def numpy_dtype(self) -> np.dtype:
        """The NumPy dtype of one value."""
        return np.dtype(self.dtype)

    @property
    def polars_dtype(self) -> pl.DataType:
        """The column's Polars dtype (``Array`` when it has a width)."""
        inner = _DTYPES[self.dtype]()
        return pl.Array(inner, self.width) if self.width is not None else inner


@dataclass(frozen=True)
class FrameSpec:
    """How a frame's rows form episodes, and which columns are states, flags and extras.

    See the module docstring for the fields.  Frozen and hashable; compare
    with ``==``.

    Examples
    --------
    >>> spec = FrameSpec(name="stream", episode=(), terminated="done")
    >>> spec.structure
    ('done',)
    """

    name: str
    episode: tuple[str, ...] = ()
    step: str | None = None
    agent: str | None = None
    terminated: str | None = None
    truncated: str | None = None
    boundaries: tuple[str, ...] = ()
    states: tuple[StateColumn, ...] = ()
    columns: tuple[str, ...] = ()
    contract: str | None = None
    time: str | None = None
    description: str = field(default="", compare=False)

    def __post_init__(self):
        _name(self.name, "FrameSpec.name")
        object.__setattr__(self, "episode", _names(self.episode, "FrameSpec.episode"))
        object.__setattr__(self, "boundaries", _names(self.boundaries, "FrameSpec.boundaries"))
        object.__setattr__(self, "columns", _names(self.columns, "FrameSpec.columns"))
        for what in ("step", "agent", "terminated", "truncated", "time"):
            if getattr(self, what) is not None:
                _name(getattr(self, what), f"FrameSpec.{what}")
        states = tuple(self.states)
        if not all(isinstance(s, StateColumn) for s in states):
            raise ParameterError("FrameSpec.states", "should be a tuple of rewardlab.StateColumn", states)
        object.__setattr__(self, "states", states)
        seen: set[str] = set()
        for name in self.required:
            if name in seen:
                raise ParameterError("FrameSpec", f"should name each column once; {name!r} appears twice",
                                     self.name)
            seen.add(name)
        if self.contract is not None:
            _name(self.contract, "FrameSpec.contract")

    # --- columns ----------------------------------------------------------------

    @property
    def structure(self) -> tuple[str, ...]:
        """The columns that say where episodes are: keys, step, agent, flags, boundaries."""
        optional = (self.step, self.agent, self.terminated, self.truncated)
        return tuple(dict.fromkeys(
            (*self.episode, *(c for c in optional if c is not None), *self.boundaries)))

    @property
    def state_names(self) -> tuple[str, ...]:
        """The state columns' names, in spec order."""
        return tuple(s.name for s in self.states)

    @property
    def final_names(self) -> tuple[str, ...]:
        """The final-state columns of the states that name one, in spec order."""
        return tuple(s.final for s in self.states if s.final is not None)

    @property
    def required(self) -> tuple[str, ...]:
        """Every column the spec names, structure first."""
        return (*self.structure, *self.state_names, *self.final_names, *self.columns,
                *((self.time,) if self.time else ()))

    @property
    def terminals(self) -> tuple[str, ...]:
        """The flags that end an episode (``terminated`` and ``truncated`` where declared)."""
        return tuple(c for c in (self.terminated, self.truncated) if c is not None)

    def state(self, name: str) -> StateColumn:
        """The :class:`StateColumn` called ``name``."""
        for s in self.states:
            if s.name == name:
                return s
        raise ParameterError("name", "should be one of the spec's state columns "
                             + ", ".join(map(repr, self.state_names)), name)

    def project(self, names) -> "FrameSpec":
        """The spec restricted to the columns in ``names`` (a rewards table keeps only some).

        The episode key columns must be present; flags, states and extras that
        are absent are dropped.

        Examples
        --------
        >>> spec = FrameSpec(name="s", episode=("e",), terminated="term", columns=("x",))
        >>> spec.project(["e", "term", "reward_a"]).columns
        ()
        """
        names = set(names)
        missing = [c for c in self.episode if c not in names]
        if missing:
            raise SpecError(f"the {self.name} spec's episode column is missing", column=missing[0],
                            hint="Keep the episode columns " + ", ".join(self.episode)
                            + " when you select columns")
        if not self.episode and self.terminals and not any(c in names for c in self.terminals):
            raise SpecError(f"the {self.name} spec ends episodes with its flags, and the data has none",
                            column=self.terminals[0],
                            hint="Keep the terminal flag columns when you select columns")

        def keep(c):
            return c if c is not None and c in names else None

        return replace(
            self, step=keep(self.step), agent=keep(self.agent), terminated=keep(self.terminated),
            truncated=keep(self.truncated), boundaries=tuple(c for c in self.boundaries if c in names),
            states=tuple(s if s.final is None or s.final in names else replace(s, final=None)
                         for s in self.states if s.name in names),
            columns=tuple(c for c in self.columns if c in names), time=keep(self.time))

    def matches(self, names) -> bool:
        """True when every episode key column is in ``names`` (and there is at least one)."""
        names = set(names)
        return bool(self.episode) and all(c in names for c in self.episode)

    # --- checks -----------------------------------------------------------------

    def check_columns(self, schema) -> None:
        """Raise :class:`~rewardlab.core.errors.SpecError` for a missing column or a state of the wrong width/dtype.

        ``schema`` is a frame, a lazy frame, or a ``{name: dtype}`` mapping.
        """
        if isinstance(schema, pl.LazyFrame):
            schema = schema.collect_schema()
        elif isinstance(schema, pl.DataFrame):
            schema = schema.schema
        for name in self.required:
            if name not in schema:
                raise SpecError(f"the {self.name} spec names this column and the frame lacks it",
                                column=name, hint="Available: " + ", ".join(list(schema)[:30]))
        for flag in (*self.terminals, *self.boundaries):
            if schema[flag] != pl.Boolean:
                raise SpecError(f"a flag column should be Boolean, found {schema[flag]}", column=flag,
                                hint="Cast it with pl.col(...).cast(pl.Boolean)")
        for s in self.states:
            dtype = schema[s.name]
            if s.width is None:
                if isinstance(dtype, (pl.Array, pl.List)) or not dtype.is_numeric():
                    raise SpecError(f"the state should be a numeric scalar column, found {dtype}",
                                    column=s.name)
                continue
            if not isinstance(dtype, pl.Array):
                raise SpecError(f"the state should be Array(_, {s.width}), found {dtype}", column=s.name,
                                hint="Convert a List column with pl.col(...).list.to_array(width)")
            if dtype.size != s.width:
                raise SpecError(f"the state should have width {s.width}, found {dtype.size}",
                                column=s.name)
        for s in self.states:
            if s.final is not None and schema[s.final] != schema[s.name]:
                raise SpecError(f"the final-state column should have its state's dtype {schema[s.name]} "
                                f"(state {s.name!r}), found {schema[s.final]}", column=s.final,
                                hint=f"Cast it with pl.col({s.final!r}).cast(frame.schema[{s.name!r}])")

    def validate(self, frame: pl.DataFrame) -> None:
        """Check ``frame`` against the spec: columns, widths, contiguous episodes, terminal flags.

        Raises :class:`~rewardlab.core.errors.SpecError` naming the column and the
        first offending row:

        * a column the spec names is missing, or a state has another width;
        * an episode is not contiguous (its key comes back after another);
        * the ``step`` column does not increase within an episode;
        * a terminal flag fires before an episode's last step, or no terminal
          flag fires at its last step (when the spec declares flags);
        * a final-state column holds a value on a row that is not its
          episode's last step.

        Examples
        --------
        >>> import polars as pl
        >>> spec = FrameSpec(name="s", episode=("e",), terminated="term")
        >>> spec.validate(pl.DataFrame({"e": [0, 0, 1, 0], "term": [False, True, True, True]}))
        Traceback (most recent call last):
        ...
        rewardlab.core.errors.SpecError: column 'e', row 3: episode 0 is not contiguous: it comes back after another episode. Sort the rows by episode (and step), keeping each episode's steps in order
        """
        if isinstance(frame, pl.LazyFrame):
            raise ParameterError("frame", "should be an eager polars.DataFrame (collect it first)", "LazyFrame")
        self.check_columns(frame)
        n = frame.height
        if n == 0:
            return
        ends = self._key_change(frame)
        if self.episode:
            self._check_contiguous(frame, ends)
        for s in self.states:
            if s.final is None:
                continue
            held = frame.get_column(s.final).is_not_null().to_numpy()
            stray = np.flatnonzero(held & ~ends)
            if stray.size:
                raise SpecError(f"a final state (of state {s.name!r}) on a row that is not its episode's last "
                                "step; the final state is the state after an episode's last step",
                                column=s.final, row=int(stray[0]),
                                hint="Leave the final-state column null except on each episode's last row")
        if self.step is not None:
            step = frame.get_column(self.step)
            if step.null_count():
                raise SpecError("the step column has nulls", column=self.step,
                                row=int(step.is_null().arg_true()[0]))
            s = step.cast(pl.Float64).to_numpy()
            bad = np.flatnonzero((np.diff(s) <= 0) & ~ends[:-1])
            if bad.size:
                raise SpecError(f"steps should increase within an episode; {s[bad[0] + 1]:g} follows "
                                f"{s[bad[0]]:g}", column=self.step, row=int(bad[0]) + 1,
                                hint="Sort each episode's rows by step")
        if not self.terminals:
            return
        flags = np.zeros(n, dtype=bool)
        for name in self.terminals:
            col = frame.get_column(name)
            if col.null_count():
                raise SpecError("the flag has nulls", column=name, row=int(col.is_null().arg_true()[0]))
            values = col.to_numpy().astype(bool, copy=False)
            if self.episode:
                early = np.flatnonzero(values & ~ends)
                if early.size:
                    raise SpecError("the flag fires before the episode's last step (the next row is "
                                    "the same episode)", column=name, row=int(early[0]),
                                    hint="An episode ends once; split it into two episode ids if it "
                                    "restarted")
            flags |= values
        if self.terminated is not None and self.truncated is not None:
            both = np.flatnonzero(frame.get_column(self.terminated).to_numpy().astype(bool)
                                  & frame.get_column(self.truncated).to_numpy().astype(bool))
            if both.size:
                raise SpecError("terminated and truncated both fire on one step; a step ends its "
                                "episode one way", column=self.truncated, row=int(both[0]))
        if self.episode:
            missed = np.flatnonzero(ends & ~flags)
            if missed.size:
                raise SpecError(
                    "no terminal flag fires on the episode's last step", column=self.terminals[0],
                    row=int(missed[0]),
                    hint=(f"Set {' or '.join(map(repr, self.terminals))} on every episode's last step"
                          + ("" if self.truncated else "; an episode cut short (time limit, end of "
                             "recording) needs a truncated column")))
        elif not flags[-1]:
            raise SpecError("the last row ends no episode (no terminal flag fires on it)",
                            column=self.terminals[0], row=n - 1,
                            hint="A recording cut mid-episode should mark its last step truncated")

    def _key_change(self, frame: pl.DataFrame) -> np.ndarray:
        """True on each row whose next row belongs to another episode (and on the last row)."""
        n = frame.height
        ends = np.zeros(n, dtype=bool)
        ends[-1] = True
        for key in self.episode:
            col = frame.get_column(key)
            if col.null_count():
                raise SpecError("the episode column has nulls", column=key,
                                row=int(col.is_null().arg_true()[0]))
            if col.dtype == pl.Categorical or col.dtype == pl.Enum:
                col = col.to_physical()
            ends[:-1] |= (col.slice(0, n - 1) != col.slice(1)).to_numpy()
        if not self.episode:
            for name in self.terminals:
                ends |= frame.get_column(name).fill_null(False).to_numpy().astype(bool)
        return ends

    def _check_contiguous(self, frame: pl.DataFrame, ends: np.ndarray) -> None:
        starts = np.flatnonzero(np.concatenate(([True], ends[:-1])))
        keys = frame.select(self.episode)[starts]
        dup = keys.is_duplicated()
        if dup.any():
            first = keys.with_row_index("_i").filter(dup)
            key_value = first.row(0)[1:]
            again = first.filter(pl.all_horizontal(
                pl.col(c) == v for c, v in zip(self.episode, key_value))).get_column("_i")[1]
            shown = key_value[0] if len(key_value) == 1 else key_value
            raise SpecError(f"episode {shown!r} is not contiguous: it comes back after another episode",
                            column=self.episode[0], row=int(starts[again]),
                            hint="Sort the rows by episode (and step), keeping each episode's steps in order")

    # --- expressions ------------------------------------------------------------

    def episode_end(self, names=None) -> pl.Expr:
        """A Boolean expression, True on each episode's last row (column ``_episode_end``).

        An episode ends where its key changes to the next row, where a
        terminal flag fires, and at the data's last row.  ``names`` (the
        data's columns) limits it to the flags present.

        Examples
        --------
        >>> import polars as pl
        >>> spec = FrameSpec(name="s", episode=("e",))
        >>> pl.DataFrame({"e": [0, 0, 1]}).select(spec.episode_end())[EPISODE_END].to_list()
        [False, True, True]
        """
        present = (lambda c: names is None or c in names)
        end = pl.int_range(pl.len()) == pl.len() - 1
        for key in self.episode:
            end = end | (pl.col(key) != pl.col(key).shift(-1)).fill_null(True)
        for flag in self.terminals:
            if present(flag):
                end = end | pl.col(flag)
        return end.alias(EPISODE_END)

    # --- metadata -------------------------------------------------------------------

    def to_dict(self) -> dict:
        """A JSON-ready dict (see :meth:`from_dict`)."""
        d = asdict(self)
        d["episode"] = list(self.episode)
        return d

    @classmethod
    def from_dict(cls, d: dict) -> "FrameSpec":
        """The spec :meth:`to_dict` wrote."""
        if not isinstance(d, dict):
            raise ParameterError("spec", "should be a dict written by FrameSpec.to_dict", type(d).__name__)
        known = {f for f in cls.__dataclass_fields__}
        unknown = sorted(set(d) - known)
        if unknown:
            raise ParameterError("spec", "has unknown fields " + ", ".join(unknown)
                                 + " (written by a newer rewardlab?)", sorted(d))
        d = dict(d)
        d["states"] = tuple(StateColumn(**s) for s in d.get("states", ()))
        for key in ("episode", "boundaries", "columns"):
            if key in d:
                d[key] = tuple(d[key])
        return cls(**d)

    def to_json(self) -> str:
        """The spec as compact JSON (stored under :data:`SPEC_KEY` in dataset metadata)."""
        return json.dumps(self.to_dict(), separators=(",", ":"), sort_keys=True)

    @classmethod
    def from_json(cls, text: str | bytes) -> "FrameSpec":
        """The spec :meth:`to_json` wrote."""
        try:
            d = json.loads(text)
        except (ValueError, TypeError) as exc:
            raise ParameterError("spec", f"should be JSON written by FrameSpec.to_json ({exc})",
                                 text[:80]) from None
        return cls.from_dict(d)


# --- frames carry their spec -------------------------------------------------------

_ATTACHED: dict[int, tuple[weakref.ref, FrameSpec]] = {}


def _forget(key: int):
    return lambda _ref: _ATTACHED.pop(key, None)


def attach(frame, spec: FrameSpec):
    """Record that ``frame`` (a DataFrame or LazyFrame) is described by ``spec``; returns ``frame``.

    Polars frames hold no metadata, so the record is kept beside the frame
    object (weakly: it goes when the frame goes).  A frame derived from it
    (``with_columns``, ``filter``) is a new object without the record: pass
    ``spec=`` to functions that need it, or :func:`attach` again.

    Examples
    --------
    >>> import polars as pl
    >>> spec = FrameSpec(name="s", episode=("e",))
    >>> f = attach(pl.DataFrame({"e": [0]}), spec)
    >>> attached(f) is spec
    True
    """
    if not isinstance(spec, FrameSpec):
        raise ParameterError("spec", "should be a rewardlab.FrameSpec", type(spec).__name__)
    key = id(frame)
    _ATTACHED[key] = (weakref.ref(frame, _forget(key)), spec)
    return frame


def attached(frame) -> FrameSpec | None:
    """The spec :func:`attach` recorded for this very frame object, or None."""
    entry = _ATTACHED.get(id(frame))
    if entry is None or entry[0]() is not frame:
        return None
    return entry[1]


def keep_spec(source, derived):
    """``derived`` (a frame made from ``source``) with ``source``'s attached spec, if it has one.

    Examples
    --------
    >>> import polars as pl
    >>> spec = FrameSpec(name="s", episode=("e",))
    >>> f = attach(pl.DataFrame({"e": [0]}), spec)
    >>> attached(keep_spec(f, f.with_columns(x=1))) is spec
    True
    """
    spec = attached(source)
    return attach(derived, spec) if spec is not None else derived
