"""Final states of a step table: the state after each episode's last step, in three layouts.

A frame keeps one row per step; a state's **final state** goes into a final
column (``final_<state>``, :attr:`~rewardlab.core.spec.StateColumn.final`):
the final state on each episode's last row, null on every other row and on a
last row whose final state the table lacks.  The steps contract hands it as
``("next", state)`` on the last step.  The reader
(:func:`~rewardlab.sources.steps.reader.read_steps`) takes it from any of
these layouts (:mod:`rewardlab.sources.steps.roles` detects them by name):

**N+1 rows**: a Boolean column ``final`` (the ``final`` role; true/false,
1/0 or text as for flags) is true on one extra row after an episode's last
step, holding the state(s) after it.  :func:`split_final_rows` takes these
rows out of the frame; their states become the final states of the row
before.  On a final row only the episode key (and agent), the ``final``
flag and the states are read: the step, the action and other extras are
ignored (they may be null); its reward must be null, NaN or absent, its
terminal flags (``terminated``, ``truncated``, ``done``, ``done_recorded``)
null or false: the flags belong on the episode's last step, the row
before.  A null state on a final row means the table lacks that final
state.  Episodes without a final row are valid (no final state).  Rules:

======================  ======================================================
rule                    broken by
======================  ======================================================
``final_flag_missing``  a null (or NaN) ``final`` value, on any row
``final_row_not_last``  a final row followed by a step of its episode
``final_row_twice``     a second final row after an episode's last step
``final_row_alone``     a final row with no step of its episode before it
``final_row_reward``    a reward on a final row
``final_row_flag``      a terminal flag set on a final row
======================  ======================================================

**Next-state columns**: ``next_<state>`` or ``new_<state>`` beside state
``<state>`` holds the next state on every row.  It must equal the following
row's state within an episode, exactly, compared in the two columns' common
dtype (rule ``next_state_mismatch``, a null before an episode's last step
too); its value on an episode's last row is the final state (null: none).
The column is then dropped (each state is stored once).

**Final-state columns**: ``final_<state>`` beside ``<state>`` (what
rewardlab writes) is the final column itself: it must be null except on
episodes' last rows (``final_state_mid_episode``).

Layouts may be combined; where two give a step's final state, they must give
the same one (``final_state_mismatch``).  Next and final values have the
state's shape (``final_state_shape``: a number, or a list of the state's
length); a wider type widens the state (an integer ``obs`` column of a CSV
file beside float final values is read as floats).  Skip mode drops an
episode with its final row.

Examples
--------
>>> import polars as pl
>>> from rewardlab.sources.steps.checks import Problems
>>> from rewardlab.sources.steps.roles import detect_roles
>>> raw = pl.DataFrame({"ep": [0, 0, 0], "t": [0, 1, 2], "obs": [1.0, 2.0, 3.0], "final": [False, False, True]})
>>> rows = split_final_rows(raw, detect_roles(raw, episode="ep"), ("ep",), Problems(False))
>>> rows.steps.columns, rows.finals["obs"].to_list(), rows.owner.tolist()
(['ep', 't', 'obs'], [3.0], [1])
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import polars as pl

from rewardlab.sources.steps import checks as C
from rewardlab.core.fronts import Fix, Text
from rewardlab.sources.values import rows_differ, values_text
from rewardlab.sources.steps.roles import StepRoles

__all__ = ["FinalRows", "split_final_rows", "final_states", "HINTS"]

#: The hints of the final-row rules' errors.
HINTS = {
    rule: Text("A final row (final = true) holds the states after its episode's last step and comes right after "
               "that step, once per episode, " + what + "; fix the table, or ", Fix("on_error", "skip", verb="load with", option=True),
               " to skip the episode and keep it in a side file (", Fix("final", False, verb="", option=True),
               " reads the final column as a plain column).")
    for rule, what in (("final_flag_missing", "and every other row has final = false"),
                       ("final_row_not_last", "as its episode's last row"), ("final_row_twice", "never twice"),
                       ("final_row_alone", "after at least one step of its episode"),
                       ("final_row_reward", "without a reward (leave it empty)"),
                       ("final_row_flag", "without terminal flags: set them on the episode's last step, the row "
                        "before"))}


@dataclass
class FinalRows:
    """A table's step rows and its final rows (N+1 layout).

    Attributes
    ----------
    steps : polars.DataFrame
        The step rows, in order, without the ``final`` column.
    finals : polars.DataFrame
        The final rows, as read.
    order : int array or None
        The rows of the table in *frame order*: the step rows, then the final
        rows; None when the table has no final row (its order is kept).
    owner : int array
        Each final row's step: the row of ``steps`` before it (its episode's
        last step), -1 where it follows no step of its episode.
    keys : polars.DataFrame or None
        The final rows' episode keys (a missing one filled from the row
        before), for the skip mode; None without final rows.
    """

    steps: pl.DataFrame
    finals: pl.DataFrame
    order: np.ndarray | None
    owner: np.ndarray
    keys: pl.DataFrame | None


class _Mapped:
    """A :class:`~rewardlab.sources.steps.checks.Problems` seen through ``index`` (local row -> frame row)."""

    def __init__(self, problems: C.Problems, index: np.ndarray):
        self.problems, self.index, self.skip = problems, np.asarray(index, dtype=np.int64), problems.skip

    def add(self, rows, column, rule, message) -> None:
        rows = np.asarray(rows)
        rows = np.flatnonzero(rows) if rows.dtype == bool else rows.astype(np.int64)
        if rows.size:
            local = dict(zip(self.index[rows].tolist(), rows.tolist()))
            self.problems.add(self.index[rows], column, rule, lambda r: message(local[r]))


def _episode(keys: pl.DataFrame, row: int):
    values = keys.row(row)
    return values[0] if len(values) == 1 else values


def _set(series: pl.Series) -> np.ndarray:
    """True where a value is set: not null, not NaN (nor text ``nan`` or blank)."""
    out = series.is_not_null()
    if series.dtype.is_float():
        out &= ~series.is_nan().fill_null(False)
    elif series.dtype == pl.String:
        out &= ~series.str.strip_chars().str.to_lowercase().is_in(["", "nan"]).fill_null(False)
    return out.to_numpy()


def _same_key(raw: pl.DataFrame, keys: tuple[str, ...]) -> np.ndarray:
    """True on each row whose key equals the row before's (both set)."""
    n = raw.height
    same = np.zeros(n, dtype=bool)
    if n > 1:
        same[1:] = True
        for key in keys:
            col = raw.get_column(key)
            same[1:] &= (col.slice(1) == col.slice(0, n - 1)).fill_null(False).to_numpy()
    return same


def _filled_keys(raw: pl.DataFrame, keys: tuple[str, ...], rows: np.ndarray) -> pl.DataFrame:
    """The key columns of ``rows``, a missing value filled from the rows before (after), as the reader's
    episode keys are."""
    out = {}
    for key in keys:
        col = raw.get_column(key).fill_null(strategy="forward").fill_null(strategy="backward")
        out[key] = (col.to_physical() if col.dtype in (pl.Categorical, pl.Enum) else col)[rows]
    return pl.DataFrame(out)


def split_final_rows(raw: pl.DataFrame, roles: StepRoles, keys: tuple[str, ...],
                     problems: C.Problems) -> FinalRows:
    """Take the final rows (N+1 layout) out of ``raw`` (rows in episode order), checking their rules.

    Problems are recorded by frame row (the step rows, then the final rows:
    see :class:`FinalRows`).

    Parameters
    ----------
    raw : polars.DataFrame
        The table's rows as read, each (episode, agent) gathered.
    roles : StepRoles
    keys : tuple of str
        The episode key columns (episode, and agent when there is one).
    problems : Problems

    Returns
    -------
    FinalRows
        Without a ``final`` role: ``raw`` itself as the steps.

    Examples
    --------
    >>> raw = pl.DataFrame({"ep": [0, 0, 0], "t": [0, 1, 2], "final": [False, True, False]})
    >>> problems = C.Problems(False)
    >>> split_final_rows(raw, StepRoles("ep", "t", final="final"), ("ep",), problems).owner.tolist()
    [0]
    >>> row, column, rule, message = problems.first
    >>> print(row, column, rule, message(row))  # doctest: +NORMALIZE_WHITESPACE
    2 final final_row_not_last a final row is followed by step 2 of episode 0; a final row comes after
    its episode's last step
    """
    n = raw.height
    if roles.final is None:
        return FinalRows(raw, raw.clear(), None, np.zeros(0, dtype=np.int64), None)
    name = roles.final
    column = raw.get_column(name)
    if column.dtype == pl.Null:
        column = column.cast(pl.Boolean)
    missing = ~_set(column)
    scratch = C.Problems(True)
    filled = column
    if missing.any() and (column.dtype in (pl.Boolean, pl.String) or column.dtype.is_numeric()):
        # reported as final_flag_missing below, not as C.flag's missing_value or bad_flag
        filled = column.set(pl.Series(missing), {pl.Boolean: False, pl.String: "false"}.get(column.dtype, 0))
    is_final = C.flag(filled, name, scratch) & ~missing
    finals = np.flatnonzero(is_final)
    steps = np.flatnonzero(~is_final)
    order = np.concatenate((steps, finals)) if finals.size else None
    frame_row = np.empty(n, dtype=np.int64)
    frame_row[order if order is not None else np.arange(n)] = np.arange(n)
    mapped = _Mapped(problems, frame_row)
    _forward(scratch, mapped)
    key_frame = raw.select(keys)
    keyless = ~key_frame.select(pl.all_horizontal(pl.all().is_not_null())).to_series().to_numpy()
    # a row without an episode (a blank CSV line) is a step row whose missing key the reader reports
    mapped.add(missing & ~keyless, name, "final_flag_missing",
               lambda r: f"the {name} value is missing ({'NaN' if column[r] is not None else 'null'}); it is "
               "true on a final row (after an episode's last step) and false on every step")
    step_rows = raw.filter(pl.Series(~is_final)).drop(name) if finals.size else raw.drop(name)
    if not finals.size:
        return FinalRows(step_rows, raw.clear(), None, np.zeros(0, dtype=np.int64), None)
    same = _same_key(raw, keys)
    after = np.concatenate((same[1:], [False]))  # the next row is the same episode
    for key in keys:
        mapped.add(keyless & is_final & raw.get_column(key).is_null().to_numpy(), key, "missing_value",
                   lambda r, key=key: f"the {key} value is missing (null) on a final row")
    step_of = raw.get_column(roles.step)

    def step_text(r: int) -> str:
        return f"step {step_of[r]}" if step_of[r] is not None else "a step"

    prev_final = np.concatenate(([False], is_final[:-1]))
    twice = is_final & same & prev_final
    alone = is_final & ~same & ~keyless
    not_last = is_final & after & ~np.concatenate((is_final[1:], [False]))
    mapped.add(twice, name, "final_row_twice", lambda r: f"a second final row after episode "
               f"{_episode(key_frame, r)!r}'s last step; an episode has one final row")
    mapped.add(alone, name, "final_row_alone", lambda r: f"a final row of episode {_episode(key_frame, r)!r} "
               "follows no step of its episode (it starts the episode); a final row comes right after its "
               "episode's last step")
    mapped.add(not_last, name, "final_row_not_last", lambda r: f"a final row is followed by "
               f"{step_text(r + 1)} of episode {_episode(key_frame, r)!r}; a final row comes after its "
               "episode's last step")
    final_raw = raw[finals]
    at_final = _Mapped(problems, frame_row[finals])
    if roles.reward is not None:
        reward = final_raw.get_column(roles.reward)
        at_final.add(_set(reward), roles.reward, "final_row_reward",
                     lambda r: f"a final row has a reward ({reward[r]!r}); a final row holds the states after "
                     "the episode's last step, with no reward (leave it null)")
    flags = [c for c in (roles.terminated, roles.truncated, roles.done) if c is not None]
    if roles.reward == "reward_recorded" and "done_recorded" in raw.columns:
        flags.append("done_recorded")
    for flag in flags:
        values = final_raw.get_column(flag)
        at_final.add(_set(values) & ~_false(values), flag, "final_row_flag",
                     lambda r, flag=flag, values=values: f"{flag} is {values[r]!r} on a final row; the "
                     "terminal flags belong on the episode's last step (the row before)")
    owner_ok = same[finals] & ~prev_final[finals]
    owner = np.where(owner_ok, frame_row[np.maximum(finals - 1, 0)], -1)
    return FinalRows(step_rows, final_raw, order, owner.astype(np.int64), _filled_keys(raw, keys, finals))


def _false(values: pl.Series) -> np.ndarray:
    """True where a flag value reads as false (a value that is no flag is not false)."""
    if values.dtype == pl.Boolean:
        out = ~values
    elif values.dtype.is_numeric():
        out = values.cast(pl.Float64) == 0.0
    elif values.dtype == pl.String:
        out = values.str.strip_chars().str.to_lowercase().is_in(["false", "0", "0.0", "f", "no", ""])
    else:
        return np.zeros(values.len(), dtype=bool)
    return out.fill_null(True).to_numpy()


def _forward(scratch: C.Problems, problems) -> None:
    """Record ``scratch``'s problems (every row's first reason) in ``problems``."""
    bad = scratch.bad_rows
    if not bad.size:
        return
    reasons = scratch.reasons(bad)
    groups: dict[tuple, dict[int, str]] = {}
    for r, (column, rule, message) in zip(bad.tolist(), reasons):
        groups.setdefault((column, rule), {})[r] = message
    for (column, rule), messages in groups.items():
        rows = np.fromiter(messages, dtype=np.int64, count=len(messages))
        problems.add(rows, column, rule, messages.__getitem__)


# ----------------------------------------------------------------------------
# Final states from each layout
# ----------------------------------------------------------------------------


@dataclass
class _Source:
    """One layout's final states of a state: ``values`` (compact) on step rows ``at``, reported at frame
    rows ``frame_rows`` in ``column``."""

    label: str
    column: str
    values: pl.Series
    at: np.ndarray
    frame_rows: np.ndarray


def _values(series: pl.Series, column: str, frame_rows: np.ndarray, state: pl.Series,
            problems: C.Problems) -> tuple[pl.Series | None, np.ndarray]:
    """The held values of a next or final column (or a final row's state) converted as a state, and the
    rows with a problem; None when their shape is not the state's (``final_state_shape``)."""
    if not series.len():
        return pl.Series(column, [], dtype=state.dtype), np.zeros(0, dtype=np.int64)
    scratch = C.Problems(True)
    width = state.dtype.size if isinstance(state.dtype, pl.Array) else None
    values = C.state_values(series, column, scratch, width=width, owner=f"the state {state.name!r}")
    mapped = _Mapped(problems, frame_rows)
    _forward(scratch, mapped)
    mine = values.dtype.size if isinstance(values.dtype, pl.Array) else None
    if width != mine:
        shape = lambda w: "a number" if w is None else f"a list of {w} values"  # noqa: E731
        mapped.add(np.ones(series.len(), dtype=bool), column, "final_state_shape",
                   lambda r: f"the value is {shape(mine)}; the state {state.name!r} holds {shape(width)}")
        return None, scratch.bad_rows
    return values, scratch.bad_rows


def _common(a: pl.DataType, b: pl.DataType) -> pl.DataType:
    """The type both values fit in (Polars' supertype)."""
    empty = [pl.DataFrame(schema={"v": a}), pl.DataFrame(schema={"v": b})]
    return pl.concat(empty, how="vertical_relaxed").schema["v"]


def _next_source(steps: pl.DataFrame, state: str, column: str, converted: pl.Series, ends: np.ndarray,
                 keyed: np.ndarray | None, step: np.ndarray, keys: pl.DataFrame,
                 problems: C.Problems) -> _Source | None:
    """A next-state column: checked against the following row's state; its last rows' values."""
    series = steps.get_column(column)
    held = series.is_not_null().to_numpy()
    rows = np.flatnonzero(held)
    values, bad = _values(series.filter(pl.Series(held)), column, rows, converted, problems)
    n = steps.height
    inner = ~ends
    if keyed is not None:
        inner &= keyed & np.concatenate((keyed[1:], [False]))
    problems.add(inner & ~held, column, "next_state_mismatch",
                 lambda r: f"{column} is missing (null) on step {step[r]:g} of episode {_episode(keys, r)!r}, "
                 f"which goes on; it should hold the following step's {state}")
    if values is None:
        return None
    check = inner & held
    if check[:-1].any():  # whole arrays: row r's next value against row r + 1's state
        dtype = _common(values.dtype, converted.dtype)
        mine = values.cast(dtype).to_numpy()
        if rows.size != n:
            mine_all = np.zeros((n, *mine.shape[1:]), dtype=mine.dtype)
            mine_all[rows] = mine
            mine = mine_all
        following = converted.cast(dtype).to_numpy()
        differ = np.zeros(n, dtype=bool)
        differ[:-1] = check[:-1] & rows_differ(mine[:-1], following[1:])
        if differ.any():  # not where either value is broken (that row's own problem is reported)
            broken = np.zeros(n, dtype=bool)
            broken[rows[bad]] = True
            broken[_bad_state_rows(steps.get_column(state), state)] = True
            differ[:-1] &= ~broken[:-1] & ~broken[1:]
        problems.add(differ, column, "next_state_mismatch",
                     lambda r: f"{column} {values_text(mine[r])} on step {step[r]:g} of episode "
                     f"{_episode(keys, r)!r} differs from the {state} {values_text(following[r + 1])} of the "
                     f"following step {step[r + 1]:g}")
    last = np.flatnonzero(ends & held)
    return _Source(column, column, values[np.searchsorted(rows, last)], last, last)


def _bad_state_rows(series: pl.Series, name: str) -> np.ndarray:
    """The rows of a state column with a problem of their own."""
    scratch = C.Problems(True)
    C.state_values(series, name, scratch)
    return scratch.bad_rows


def _final_column_source(steps: pl.DataFrame, state: str, column: str, converted: pl.Series, ends: np.ndarray,
                         step: np.ndarray, keys: pl.DataFrame, problems: C.Problems) -> _Source | None:
    """A final-state column: null except on last rows."""
    series = steps.get_column(column)
    held = series.is_not_null().to_numpy()
    problems.add(held & ~ends, column, "final_state_mid_episode",
                 lambda r: f"{column} holds a value on step {step[r]:g} of episode {_episode(keys, r)!r}, "
                 f"which is not its last step; the final state of {state} is the state after an episode's "
                 "last step (leave it null elsewhere)")
    rows = np.flatnonzero(held)
    values, _ = _values(series.filter(pl.Series(held)), column, rows, converted, problems)
    if values is None:
        return None
    last = ends[rows]
    return _Source(column, column, values.filter(pl.Series(last)), rows[last], rows[last])


def _rows_source(rows: FinalRows, state: str, converted: pl.Series, n: int,
                 problems: C.Problems) -> _Source | None:
    """The final rows' values of a state, on their episodes' last steps."""
    series = rows.finals.get_column(state)
    held = series.is_not_null().to_numpy() & (rows.owner >= 0)
    which = np.flatnonzero(held)
    values, _ = _values(series.filter(pl.Series(held)), state, n + which, converted, problems)
    if values is None:
        return None
    return _Source("the final row", state, values, rows.owner[which], n + which)


def final_states(steps: pl.DataFrame, roles: StepRoles, converted: dict[str, pl.Series], rows: FinalRows,
                 ends: np.ndarray, keyed: np.ndarray | None, step: np.ndarray, keys: pl.DataFrame,
                 problems: C.Problems) -> dict[str, pl.Series]:
    """Each state's final column, from every layout the table has, checked.

    Parameters
    ----------
    steps : polars.DataFrame
        The step rows as read.
    roles : StepRoles
    converted : dict
        ``{state: converted column}``; a state is widened in place where
        its final values need a wider type.
    rows : FinalRows
    ends : bool array
        True on each episode's last step.
    keyed : bool array or None
        True on rows with an episode key (None: all).
    step : array
        The steps, for messages.
    keys : polars.DataFrame
        The episode keys, for messages.
    problems : Problems

    Returns
    -------
    dict
        ``{final column name: values}``, ``steps.height`` rows each, in the
        order of :meth:`StepRoles.final_columns`.

    Examples
    --------
    >>> steps = pl.DataFrame({"ep": [0, 0], "t": [0, 1], "obs": [1.0, 2.0], "next_obs": [2.0, 9.0]})
    >>> roles = StepRoles("ep", "t", states=("obs",), nexts=(("obs", "next_obs"),))
    >>> rows = FinalRows(steps, steps.clear(), None, np.zeros(0, dtype=np.int64), None)
    >>> out = final_states(steps, roles, {"obs": steps["obs"]}, rows, np.array([False, True]), None,
    ...                    np.array([0, 1]), steps.select("ep"), C.Problems(False))
    >>> out["final_obs"].to_list()
    [None, 9.0]
    """
    n = steps.height
    out: dict[str, pl.Series] = {}
    for state, name in roles.final_columns().items():
        sources = []
        if rows.finals.height:
            sources.append(_rows_source(rows, state, converted[state], n, problems))
        sources += [_next_source(steps, state, c, converted[state], ends, keyed, step, keys, problems)
                    for s, c in roles.nexts if s == state]
        sources += [_final_column_source(steps, state, c, converted[state], ends, step, keys, problems)
                    for s, c in roles.finals if s == state]
        sources = [s for s in sources if s is not None]
        dtype = converted[state].dtype
        for source in sources:
            dtype = _common(dtype, source.values.dtype)
        if dtype != converted[state].dtype:
            converted[state] = converted[state].cast(dtype)
        out[name] = _merge(sources, dtype, n, name, step, keys, problems)
    return out


def _merge(sources: list[_Source], dtype: pl.DataType, n: int, name: str, step: np.ndarray, keys: pl.DataFrame,
           problems: C.Problems) -> pl.Series:
    """One final column from the sources: the first that gives a step's final state; another that gives a
    different one is ``final_state_mismatch``."""
    position = np.full(n, -1, dtype=np.int64)  # each step's place in the joined values
    given = np.full(n, -1, dtype=np.int64)  # the source that gave it
    parts: list[pl.Series] = []
    size = 0
    for k, source in enumerate(sources):
        values = source.values.cast(dtype)
        both = position[source.at] >= 0
        if both.any():
            _mismatch(source, pl.concat(parts)[position[source.at[both]]].to_numpy(),
                      values.filter(pl.Series(both)).to_numpy(), both,
                      [sources[g].label for g in given[source.at[both]]], step, keys, problems)
        new = ~both
        parts.append(values.filter(pl.Series(new)))
        position[source.at[new]] = size + np.arange(int(new.sum()))
        given[source.at[new]] = k
        size += int(new.sum())
    if not size:
        return pl.Series(name, [None] * n, dtype=dtype)
    index = pl.Series(np.where(position >= 0, position, 0), dtype=pl.UInt32)
    joined = pl.concat(parts).gather(index)
    return pl.select(pl.when(pl.Series(position >= 0)).then(joined).otherwise(None)).to_series().rename(name)


def _mismatch(source: _Source, first: np.ndarray, mine: np.ndarray, both: np.ndarray, labels: list[str],
              step: np.ndarray, keys: pl.DataFrame, problems: C.Problems) -> None:
    """``final_state_mismatch`` where ``source`` gives another final state than an earlier layout."""
    differ = rows_differ(first, mine)
    frame_rows, at = source.frame_rows[both], source.at[both]
    shown = {int(frame_rows[i]): int(i) for i in np.flatnonzero(differ)}
    problems.add(frame_rows[differ], source.column, "final_state_mismatch",
                 lambda r: f"{source.label} gives {values_text(mine[shown[r]])} as the final state after step "
                 f"{step[at[shown[r]]]:g} of episode {_episode(keys, int(at[shown[r]]))!r}; "
                 f"{labels[shown[r]]} gives {values_text(first[shown[r]])}")
