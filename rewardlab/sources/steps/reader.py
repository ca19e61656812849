"""Generic step tables (Parquet, CSV, JSON lines; one row per step) -> a frame with the steps spec.

Several files are one dataset, read in the order given; each column must
have one type in all of them (CSV and JSON lines infer types from text, so
there an integer column in one file and a float one in another are read as
floats; any other difference is an error).  Column roles come from
:mod:`rewardlab.sources.steps.roles`.  The frame keeps the table's columns
(flags as Boolean, list columns as fixed-size ``Array``), with the recorded
reward renamed ``reward_recorded`` (Float64) and ``done_recorded`` (True on
each episode's last step) added, so the table's own reward is a candidate
every comparison can use as a baseline.  Steps and the recorded reward
are finite numbers: a NaN or infinite one is an error (rule ``not_finite``,
skippable like any other), since it would break every order check or
poison every statistic.  A table already in that layout (a
``reward_recorded`` column, as the step-table sources and ``rewardlab.record``
write it) reads back as itself; its own ``done_recorded``, if any, must be
True exactly on the episodes' last steps.  Each episode's final state (the
state after its last step: a ``final`` row after it, ``next_<state>`` /
``new_<state>`` columns, or ``final_<state>`` columns) goes into the state's
final column (:mod:`rewardlab.sources.steps.finals`).

Errors name the file, the line (CSV, JSON lines; 1-based as an editor shows
it) or the row group (Parquet), the column and the rule
(:class:`~rewardlab.core.errors.StepTableError`).  With ``on_error="skip"``
the episodes holding a bad row are dropped whole, counted by reason and kept:
in ``result.skipped`` and, with ``skipped_path``, in a side file (text files:
the original lines byte for byte, a CSV's header first; Parquet: a Parquet
file of the skipped rows as read), both in file order
(:mod:`rewardlab.sources.steps.places`).  A file that does not parse (its
first line Polars cannot read is named), columns missing or differing
between files, a CSV header naming a column twice, a column without a name
and a state or extra column named ``next`` (reserved: the steps contract
hands the next states, flags and reward under ``data["next"]``) are errors
in either mode.  An integer beyond Int64 (Polars reads such a column as
Int128) is a row's error (``integer_out_of_range``); a column whose
integers all fit is read as Int64.  A text column's kind (numbers, lists,
text) is decided by most of its values, not its first one, and a list
column's width by the length most rows have: a bad first row is the row at
fault.  An episode whose rows come back after another's is reported where
it comes back (``episode_not_contiguous``), not as unfinished where it
stopped.
"""

from __future__ import annotations

import warnings
from pathlib import Path

import numpy as np
import polars as pl

from rewardlab.core.errors import ParameterError, SkippedLinesWarning, StepTableError, check_choice
from rewardlab.core.fronts import Fix, Text
from rewardlab.core.files import as_paths, check_input, check_not_input, check_output
from rewardlab.core.spec import FrameSpec, StateColumn, attach
from rewardlab.sources.results import LoadResult
from rewardlab.sources.steps import checks as C
from rewardlab.sources.steps import finals as F
from rewardlab.sources.steps.files import TableFile, kind_of, read_file
from rewardlab.sources.steps.folders import step_files
from rewardlab.sources.steps.places import SKIPPED_SCHEMA, RowPlaces, skipped_records, write_skipped
from rewardlab.sources.steps.roles import DEFAULT_NAMES, RESERVED, ROLE_OPTIONS, StepRoles, detect_roles, mostly

__all__ = ["read_steps", "load_steps", "read_tables", "RECORDED", "RECORDED_DONE", "SKIPPED_SCHEMA", "STEPS_SPEC"]

#: The recorded reward's columns (a candidate named ``recorded``; see :mod:`rewardlab.core.columns`).
RECORDED, RECORDED_DONE = "reward_recorded", "done_recorded"

#: The spec registered for the format.  Frames carry their own, built from their columns; this one
#: names no episode column, so a plain frame is never taken for a step table by its column names
#: (:func:`rewardlab.sources.registry.spec_of` asks for a declared spec instead).
STEPS_SPEC = FrameSpec(name="steps", contract="steps",
                       description="a generic step table: one row per step (Parquet, CSV, JSON lines)")

_HINT = Text("Fix the row, or ", Fix("on_error", "skip", verb="load with", option=True), " to skip its episode and keep it in a side file.")

_STATE_DTYPES = {pl.Boolean: "bool", pl.Int8: "int8", pl.Int16: "int16", pl.Int32: "int32", pl.Int64: "int64",
                 pl.UInt8: "uint8", pl.UInt16: "uint16", pl.UInt32: "uint32", pl.UInt64: "uint64",
                 pl.Float32: "float32", pl.Float64: "float64"}




# ----------------------------------------------------------------------------
# Files -> one raw frame
# ----------------------------------------------------------------------------


def _combine(tables: list[TableFile]) -> pl.DataFrame:
    """The files' rows as one frame; columns and dtypes must agree (ints and floats of text files
    are unified to Float64)."""
    first = tables[0]
    names = first.frame.columns
    text = first.kind != "parquet"
    dtypes = dict(first.frame.schema)
    for t in tables[1:]:
        missing = [c for c in names if c not in t.frame.schema]
        extra = [c for c in t.frame.columns if c not in dtypes]
        if missing or extra:
            raise StepTableError(t.path, "columns_differ", f"its columns differ from {first.path}'s: "
                                 + "; ".join(x for x in (missing and "missing " + ", ".join(missing),
                                                         extra and "extra " + ", ".join(extra)) if x),
                                 column=(missing or extra)[0],
                                 hint="Files of one dataset hold the same columns.")
        for c in names:
            a, b = dtypes[c], t.frame.schema[c]
            if a == b:
                continue
            if text and a.is_numeric() and b.is_numeric():
                dtypes[c] = pl.Float64
                continue
            if text and pl.Null in (a, b):  # a column empty in one text file
                dtypes[c] = b if a == pl.Null else a
                continue
            owner = next((u for u in tables if u.frame.schema[c] == a), first)
            raise StepTableError(t.path, "mixed_dtypes", f"the column is {b} here and {a} in {owner.path}",
                                 column=c, hint="Files of one dataset store each column with one type; "
                                 "cast it when you write the files.")
    frames = [t.frame if dict(t.frame.schema) == dtypes else t.frame.cast(
        {c: d for c, d in dtypes.items() if t.frame.schema[c] != d}) for t in tables]
    return pl.concat(frames, how="vertical", rechunk=False) if len(frames) > 1 else frames[0]


def _refuse_reserved(table: TableFile, roles: StepRoles) -> None:
    """A state or extra column named ``next`` (:data:`~rewardlab.sources.steps.roles.RESERVED`) is refused:
    the steps contract's TensorDict holds the next states and the flags under that key."""
    for name in (*roles.states, *roles.extras):
        if name in RESERVED:
            raise StepTableError(
                table.path, "reserved_column", f"the name {name!r} is reserved: the steps contract's TensorDict "
                f'holds the next states, the flags and the reward under data["{name}"] (data["{name}", "<state>"], '
                f'data["{name}", "done"], data["{name}", "terminated"], data["{name}", "truncated"], '
                f'data["{name}", "reward"]), so the column would collide with them', column=name,
                hint=f"Rename the column (for example to {name}_value) and load again.",
                **({"line": 1} if table.kind == "csv" else {}))


def _too_wide(tables: list[TableFile], order: np.ndarray | None, problems: C.Problems) -> None:
    """The rows holding an integer beyond Int64 (:attr:`TableFile.too_wide
    <rewardlab.sources.steps.files.TableFile>`), as problems of frame rows (``order``: each frame row's
    place in the files), before the other problems of those rows (which their null value causes)."""
    starts = np.concatenate(([0], np.cumsum([t.frame.height for t in tables])))
    inverse = None
    if order is not None:
        inverse = np.empty(order.size, dtype=np.int64)
        inverse[order] = np.arange(order.size)
    for k, table in enumerate(tables):
        for name, (rows, series) in table.too_wide.items():
            frame_rows = rows + starts[k] if inverse is None else inverse[rows + starts[k]]
            shown = dict(zip(frame_rows.tolist(), series.gather(rows).to_list()))
            problems.add(frame_rows, name, "integer_out_of_range",
                         lambda r, shown=shown: f"{_value_text(shown[r])} is beyond the 64-bit integer range "
                         "(-2**63 to 2**63 - 1)", first=True)


def _value_text(value) -> str:
    text = str(value)
    return text if len(text) <= 60 else text[:57] + "..."


def _missing_role(path: Path, role: str, columns: list[str]) -> StepTableError:
    return StepTableError(
        path, "missing_column", f"no {role} column: none of " + ", ".join(DEFAULT_NAMES[role])
        + " is in the table (columns: " + ", ".join(columns[:40]) + (", ..." if len(columns) > 40 else "") + ")",
        hint=Text("Name it with ", Fix(role, "COLUMN", verb="", option=True), " (the format's options: ")
        + ", ".join(ROLE_OPTIONS)
        + ", unfinished, on_error, skipped_path, overwrite).")


# ----------------------------------------------------------------------------
# Checks and conversion
# ----------------------------------------------------------------------------


def _key_ends(frame: pl.DataFrame, keys: tuple[str, ...], problems: C.Problems) -> tuple[np.ndarray, pl.DataFrame]:
    """(True on each row whose next row is another episode, the key columns with nulls filled)."""
    n = frame.height
    filled = {}
    ends = np.zeros(n, dtype=bool)
    if n:
        ends[-1] = True
    for key in keys:
        col = frame.get_column(key)
        if col.null_count():
            nulls = col.is_null().to_numpy()
            problems.add(nulls, key, "missing_value", lambda r, key=key: f"the {key} value is missing (null)")
            near = np.flatnonzero(nulls)  # which episode such a row belongs to cannot be told: both sides go
            neighbours = np.unique(np.clip(np.concatenate((near - 1, near + 1)), 0, max(n - 1, 0)))
            if problems.skip:
                problems.add(neighbours[~nulls[neighbours]], key, "in_broken_episode",
                             lambda r: "the row borders a row whose episode is missing")
            col = col.fill_null(strategy="forward").fill_null(strategy="backward")
        if col.dtype in (pl.Categorical, pl.Enum):
            col = col.to_physical()
        filled[key] = col
        if n > 1:
            ends[:-1] |= (col.slice(0, n - 1) != col.slice(1)).fill_null(True).to_numpy()
    return ends, pl.DataFrame(filled)


def _keyed_rows(frame: pl.DataFrame, keys: tuple[str, ...]) -> np.ndarray | None:
    """True on the rows whose key columns all have a value; None when every row has them."""
    if not any(frame.get_column(k).null_count() for k in keys):
        return None
    return frame.select(pl.all_horizontal(pl.col(k).is_not_null() for k in keys)).to_series().to_numpy()


class _Subset:
    """A :class:`~rewardlab.sources.steps.checks.Problems` seen through the rows with a key (``index``: their
    rows in the whole frame).  A row beside a row without a key is not judged (it may be that row's
    episode that goes on or ends there): the keyless row is the error, and in skip mode its neighbours'
    episodes go with it."""

    def __init__(self, problems: C.Problems, index: np.ndarray, height: int):
        self.problems, self.index = problems, index
        border = np.ones(height, dtype=bool)
        border[index] = False  # keyless rows
        border = np.concatenate(([False], border[:-1])) | np.concatenate((border[1:], [False]))
        self.judged = ~border[index]

    def add(self, rows, column, rule, message) -> None:
        rows = np.asarray(rows)
        rows = np.flatnonzero(rows) if rows.dtype == bool else rows.astype(np.int64)
        rows = rows[self.judged[rows]]
        self.problems.add(self.index[rows], column, rule,
                          lambda r: message(int(np.searchsorted(self.index, r))))


def _agent_order(raw: pl.DataFrame, keys: tuple[str, ...]) -> np.ndarray | None:
    """Rows gathered per (episode, agent) in order of first appearance, each keeping its order (agents
    of a multi-agent episode take turns in the file); None when they already are."""
    index = raw.select(pl.struct(keys).alias("_k")).with_row_index("_i")
    first = index.with_columns(pl.col("_i").min().over("_k").alias("_f"))
    order = first.sort(["_f", "_i"])["_i"].to_numpy()
    return None if np.array_equal(order, np.arange(raw.height)) else order


def _episode_text(keys: pl.DataFrame, row: int):
    values = keys.row(row)
    return values[0] if len(values) == 1 else values


def _comes_back(keys: pl.DataFrame, ends: np.ndarray) -> np.ndarray:
    """True on the last row of each run of an episode's rows that is not its last run (the episode comes
    back after another: ``episode_not_contiguous`` is reported where it does, and this row is no end)."""
    out = np.zeros(keys.height, dtype=bool)
    if keys.height:
        last_rows = np.flatnonzero(ends)
        runs = keys[last_rows]
        out[last_rows] = ~runs.select(pl.struct(runs.columns).is_last_distinct()).to_series().to_numpy()
    return out


def _check_episodes(keys: pl.DataFrame, ends: np.ndarray, step: np.ndarray, step_name: str,
                    flags: dict[str, np.ndarray], problems: C.Problems, unfinished: str) -> np.ndarray:
    """Contiguity, step order, flags at the ends; returns the rows of unfinished episodes' last steps."""
    n = keys.height
    if n == 0:
        return np.zeros(0, dtype=np.int64)
    starts = np.flatnonzero(np.concatenate(([True], ends[:-1])))
    run_keys = keys[starts]
    again = ~run_keys.select(pl.struct(run_keys.columns).is_first_distinct()).to_series().to_numpy()
    returns = _comes_back(keys, ends)  # a run whose episode comes back is reported there, not as unfinished
    if again.any():
        rows = starts[again]
        problems.add(rows, keys.columns[0], "episode_not_contiguous",
                     lambda r: f"episode {_episode_text(keys, r)!r} comes back after another episode; an "
                     "episode's rows should be consecutive")
    if step.size > 1:
        before, after = step[:-1], step[1:]  # compared, not subtracted: a difference of int64 steps may overflow
        inside = ~ends[:-1]
        back = np.flatnonzero((after < before) & inside) + 1
        same = np.flatnonzero((after == before) & inside) + 1
        problems.add(back, step_name, "step_order",
                     lambda r: f"step {step[r]:g} follows step {step[r - 1]:g} in episode "
                     f"{_episode_text(keys, r)!r}; steps should increase within an episode")
        problems.add(same, step_name, "step_repeated",
                     lambda r: f"step {step[r]:g} is repeated in episode {_episode_text(keys, r)!r}")
    any_flag = np.zeros(n, dtype=bool)
    for name, values in flags.items():
        problems.add(values & ~ends, name, "flag_mid_episode",
                     lambda r, name=name: f"{name} is set on step {step[r]:g} of episode "
                     f"{_episode_text(keys, r)!r}, which is not its last step")
        any_flag |= values
    if len(flags) == 2:
        (a, va), (b, vb) = flags.items()
        problems.add(va & vb, b, "both_flags", lambda r: f"{a} and {b} are both set on step {step[r]:g} of "
                     f"episode {_episode_text(keys, r)!r}; an episode ends one way")
    unflagged = np.flatnonzero(ends & ~any_flag & ~returns)
    if unfinished == "error":
        flag_names = " nor ".join(flags) if flags else "terminated nor truncated (the table has no flag column)"
        problems.add(unflagged, next(iter(flags), None), "unfinished_episode",
                     lambda r: f"episode {_episode_text(keys, r)!r} ends at step {step[r]:g} with neither "
                     f"{flag_names} set")
        return np.zeros(0, dtype=np.int64)
    return unflagged


def _state_dtype(series: pl.Series) -> tuple[pl.Series, str, int | None]:
    """(the series in a StateColumn dtype, its dtype name, its width)."""
    dtype = series.dtype
    width = None
    inner = dtype
    if isinstance(dtype, pl.Array):
        width, inner = dtype.size, dtype.inner
    if inner not in _STATE_DTYPES:
        inner = pl.Float64
        series = series.cast(pl.Array(inner, width) if width else inner)
    return series, _STATE_DTYPES[inner], width


def _convert(frame: pl.DataFrame, roles: StepRoles, problems: C.Problems) -> dict[str, pl.Series]:
    """Each column checked and converted (flags to bool arrays are done by the caller)."""
    out: dict[str, pl.Series] = {}
    for name in (*roles.states, *roles.extras):
        series = frame.get_column(name)
        if name in roles.states:
            out[name] = C.state_values(series, name, problems)
        elif C.looks_list(series):
            out[name] = C.list_values(series, name, problems)
        elif series.dtype == pl.String and mostly(series, numbers=True):
            out[name] = C.numeric(series, name, problems)
        elif series.dtype.is_numeric() or series.dtype == pl.Boolean:
            nulls = series.is_null()
            if nulls.any():
                problems.add(nulls.to_numpy(), name, "missing_value", lambda r: "the value is missing (null)")
            out[name] = series
        else:
            out[name] = series
    if roles.reward is not None:
        out[roles.reward] = C.numeric(frame.get_column(roles.reward), roles.reward, problems,
                                      what="reward", finite=True).cast(pl.Float64)
    if roles.time is not None:
        out[roles.time] = _time(frame.get_column(roles.time), roles.time, problems)
    return out


def _time(series: pl.Series, name: str, problems: C.Problems) -> pl.Series:
    if series.dtype.is_numeric() or series.dtype.is_temporal():
        return series
    if series.dtype == pl.String:
        parsed = series.str.to_datetime(strict=False)
        bad = (parsed.is_null() & series.is_not_null()).to_numpy()
        values = series
        problems.add(bad, name, "bad_time", lambda r: f"{values[r]!r} is not a number, date or time")
        return parsed
    dtype = series.dtype
    problems.add(np.ones(series.len(), dtype=bool), name, "bad_time",
                 lambda r: f"the time column should hold numbers or times; it holds {dtype}")
    return series


# ----------------------------------------------------------------------------
# Public API
# ----------------------------------------------------------------------------


def read_steps(paths, *, episode: str | None = None, step: str | None = None, agent: str | None = None,
               terminated: str | None = None, truncated: str | None = None, done: str | None = None,
               reward: str | None = None, time: str | None = None, final: str | None = None,
               unfinished: str = "error", on_error: str = "raise", skipped_path: str | Path | None = None,
               overwrite: bool = False) -> LoadResult:
    """Read step tables (``.parquet``, ``.csv``, ``.jsonl`` / ``.ndjson``) and report skipped rows.

    Parameters
    ----------
    paths : path or sequence of paths
        Files of one kind, one dataset, read in the order given; a folder
        stands for its step tables (:func:`~rewardlab.sources.steps.folders.step_files`).
    episode, step, agent, terminated, truncated, done, reward, time, final : str, None or False
        The column of each role (:mod:`rewardlab.sources.steps.roles`):
        None detects it by its default names, False uses none.  With
        ``agent``, an episode is one agent's steps in one episode (agents
        may take turns in the file: each agent's rows are gathered, keeping
        their order, in order of first appearance).  A
        ``done`` flag alone is read as terminated, and as truncated where a
        ``truncated`` column is set.  ``final`` flags the rows after
        episodes' last steps (N+1 layout): they are taken out and their
        states become final states (:mod:`rewardlab.sources.steps.finals`,
        which also reads ``next_<state>`` / ``new_<state>`` and
        ``final_<state>`` columns).
    unfinished : {"error", "truncate"}
        An episode whose last step has neither terminated nor truncated set:
        an error (``"error"``) or loaded as truncated (``"truncate"``; a
        ``truncated`` column is added when the table has none).
    on_error : {"raise", "skip"}
        ``"raise"`` stops at the first bad row with a
        :class:`~rewardlab.core.errors.StepTableError` naming file, line or
        row group, and column.  ``"skip"`` drops every episode holding a bad
        row, whole (with its final row), and reports them (``result.skipped``,
        in file order, and ``skip_counts``).
    skipped_path : path, optional
        With ``on_error="skip"``, also write the skipped rows to this file
        (text: the original lines, byte for byte, after a CSV's header;
        Parquet: the rows as read; in file order).  An existing file is not replaced unless
        ``overwrite``.
    overwrite : bool
        Replace an existing ``skipped_path``.

    Returns
    -------
    LoadResult
        ``frame`` (its spec attached), ``skipped`` (schema
        :data:`SKIPPED_SCHEMA`), ``skipped_path``.

    Examples
    --------
    >>> import polars as pl, tempfile, pathlib
    >>> folder = pathlib.Path(tempfile.mkdtemp())
    >>> (folder / "steps.csv").write_text("ep,t,obs_x,action,reward,done\\n0,0,0.5,1,1.0,false\\n"
    ...                                   "0,1,0.25,0,0.0,true\\n")
    70
    >>> result = read_steps(folder / "steps.csv", episode="ep")
    >>> result.frame.columns
    ['ep', 't', 'obs_x', 'action', 'reward_recorded', 'done_recorded', 'done']
    >>> from rewardlab.core.spec import attached
    >>> spec = attached(result.frame)
    >>> spec.episode, spec.terminated, spec.state_names, spec.columns
    (('ep',), 'done', ('obs_x',), ('action', 'reward_recorded'))

    An N+1 table: the final row's state becomes ``final_obs_x`` of the step before.

    >>> (folder / "n1.csv").write_text("ep,t,obs_x,reward,done,final\\n0,0,0.5,1.0,false,false\\n"
    ...                                "0,1,0.25,0.0,true,false\\n0,2,0.75,,,true\\n")
    93
    >>> frame = read_steps(folder / "n1.csv", episode="ep").frame
    >>> frame["final_obs_x"].to_list(), attached(frame).states[0].final
    ([None, 0.75], 'final_obs_x')
    """
    check_choice("unfinished", unfinished, ("error", "truncate"))
    check_choice("on_error", on_error, ("raise", "skip"))
    if not isinstance(overwrite, bool):
        raise ParameterError("overwrite", "should be True or False", overwrite)
    files = step_files(paths, episode=episode, step=step, agent=agent)  # a folder: its step tables
    if skipped_path is not None and on_error != "skip":
        raise ParameterError("skipped_path", Text("is only used with ", Fix("on_error", "skip", verb="", option=True)), str(skipped_path))
    kinds = [kind_of(p) for p in files]
    for p, k in zip(files, kinds):
        if k is None:
            raise StepTableError(p, "file_kind", "a step table is a .parquet, .csv, .jsonl or .ndjson file",
                                 hint="Rename or convert the file.")
    if len(set(kinds)) > 1:
        raise ParameterError("paths", "should all be one kind of file (Parquet, CSV or JSON lines)",
                             [str(p) for p in files])
    for p in files:
        check_input(p)
    check_not_input(skipped_path, files, name="skipped_path")  # even with overwrite
    if skipped_path is not None:
        check_output(skipped_path, overwrite=overwrite)  # before any work
    options = dict(episode=episode, step=step, agent=agent, terminated=terminated, truncated=truncated,
                   done=done, reward=reward, time=time, final=final)
    tables = [read_file(p) for p in files]
    as_read = raw = _combine(tables)
    roles = detect_roles(raw, **options)
    for role in ("episode", "step"):
        if getattr(roles, role) is None:
            raise _missing_role(files[0], role, raw.columns)
    _refuse_reserved(tables[0], roles)
    if roles.reward and roles.reward != RECORDED and (RECORDED in raw.columns or RECORDED_DONE in raw.columns):
        raise ParameterError("reward", f"cannot be kept as {RECORDED}: the table already has a column of "
                             "that name", roles.reward, hint="Pass reward=False to keep the table as it is.")
    keys_names = (roles.episode, *((roles.agent,) if roles.agent else ()))
    order = _agent_order(raw, keys_names) if roles.agent else None
    if order is not None:
        raw = raw[order]
    skip = on_error == "skip"
    problems = C.Problems(skip)
    rows = F.split_final_rows(raw, roles, keys_names, problems)  # frame rows: the steps, then final rows
    if rows.order is not None:
        order = rows.order if order is None else order[rows.order]
    where = RowPlaces(tables, order)
    _too_wide(tables, order, problems)
    if problems and not skip:  # the layout first: a flag on a final row would read as an unfinished episode
        raise _first(problems, where)
    raw = rows.steps
    ends, keys = _key_ends(raw, keys_names, problems)
    step_values = C.numeric(raw.get_column(roles.step), roles.step, problems, what="step", finite=True)
    step_np = (step_values.to_numpy() if step_values.dtype.is_numeric() and not step_values.null_count()
               else step_values.cast(pl.Float64).fill_null(np.nan).to_numpy())
    flags: dict[str, np.ndarray] = {}
    for role in ("terminated", "truncated"):
        name = getattr(roles, role)
        if name is not None:
            flags[name] = C.flag(raw.get_column(name), name, problems)
    done_values = None
    if roles.done is not None and roles.terminated is None:
        done_values = C.flag(raw.get_column(roles.done), roles.done, problems)
        trunc = flags.get(roles.truncated) if roles.truncated else None
        flags = {roles.done: done_values & ~trunc if trunc is not None else done_values, **flags}
    converted = _convert(raw, roles, problems)
    converted[roles.step] = step_values
    # the episode checks see only rows with a key: a keyless row (a blank CSV line) would join the episode
    # before it and make a good line look bad; it is reported itself (missing_value) and its neighbours'
    # episodes are skipped with it
    keyed = _keyed_rows(raw, keys_names)
    if keyed is None:
        index, sub_keys, sub_ends, sub_step, sub_flags, checked = None, keys, ends, step_np, flags, problems
    else:
        index, mask = np.flatnonzero(keyed), pl.Series(keyed)
        sub_keys, sub_ends = keys.filter(mask), _key_ends(raw.filter(mask), keys_names, problems)[0]
        sub_step, sub_flags = step_np[index], {k: v[index] for k, v in flags.items()}
        checked = _Subset(problems, index, raw.height)
    if roles.reward == RECORDED and RECORDED_DONE in raw.columns:  # the recorded layout: checked, then rebuilt
        own = C.flag(raw.get_column(RECORDED_DONE), RECORDED_DONE, problems)
        sub_own = own if index is None else own[index]
        sub_last = sub_ends & ~_comes_back(sub_keys, sub_ends)  # an episode coming back is reported as such
        checked.add(sub_own != sub_last, RECORDED_DONE, "done_recorded_mismatch",
                    lambda r: f"{RECORDED_DONE} is {bool(sub_own[r])} on step {sub_step[r]:g} of episode "
                    f"{_episode_text(sub_keys, r)!r}; it should be True exactly on an episode's last step")
    unflagged = _check_episodes(sub_keys, sub_ends, sub_step, roles.step, sub_flags, checked, unfinished)
    if index is not None:
        unflagged = index[unflagged]
    finals = F.final_states(raw, roles, converted, rows, ends, keyed, step_np, keys, problems)
    keep = None
    if problems and not skip:
        raise _first(problems, where, raw=raw, roles=roles)
    skipped_rows = np.zeros(0, dtype=np.int64)
    all_keys = keys if rows.keys is None else pl.concat([keys, rows.keys])  # by frame row: final rows last
    if problems:
        bad = problems.bad_rows
        bad_keys = all_keys[bad].unique()
        drop = all_keys.with_row_index("_r").join(bad_keys, on=keys.columns, how="semi")["_r"].to_numpy()
        skipped_rows = np.union1d(drop, bad).astype(np.int64)
        keep = np.ones(raw.height, dtype=bool)
        keep[skipped_rows[skipped_rows < raw.height]] = False
    frame, spec = _build(raw, roles, converted, flags, ends, unflagged, keep, finals)
    skipped = (skipped_records(skipped_rows, problems, where) if skipped_rows.size
               else pl.DataFrame(schema=SKIPPED_SCHEMA))
    result_path = None
    if skip and skipped_path is not None and skipped_rows.size:
        result_path = Path(skipped_path)
        if tables[0].kind == "parquet" and any(t.too_wide for t in tables):  # keep the integers beyond Int64
            as_read = pl.concat([t.as_read() for t in tables], how="vertical_relaxed")
        write_skipped(result_path, skipped_rows, as_read, where, overwrite)
    result = LoadResult(attach(frame, spec), skipped, result_path)
    if skipped.height:
        counts = ", ".join(f"{k}: {v}" for k, v in result.skip_counts.items())
        episodes = all_keys[skipped_rows].n_unique()
        kept = f"; kept in {result_path}" if result_path else "; see result.skipped"
        warnings.warn(SkippedLinesWarning(f"skipped {episodes} episodes, {skipped.height} of {as_read.height} "
                                          f"rows ({counts}){kept}"), stacklevel=2)
    return result


def _first(problems: C.Problems, where: RowPlaces, *, raw: pl.DataFrame | None = None,
           roles: StepRoles | None = None) -> StepTableError:
    """The error of the earliest problem (raise mode); a flag before a row without a reward (the N+1 layout's
    final row, unnamed) says how to name it."""
    r, column, rule, message = problems.first
    hint = _UNFINISHED_HINT if rule == "unfinished_episode" else F.HINTS.get(rule, _HINT)
    if (rule == "flag_mid_episode" and raw is not None and roles is not None and roles.reward is not None
            and roles.final is None and r + 1 < raw.height and raw.get_column(roles.reward)[r + 1] is None):
        hint = ("The next row has no reward: if it holds the state after the episode's last step (the N+1 "
                "layout), name the column that flags such rows: " + Text(Fix("final", "COLUMN", verb="", option=True))
                + ". " + hint)
    return where.error(r, column, rule, message(r), hint=hint)


_UNFINISHED_HINT = Text("Set terminated (the episode ended) or truncated (it was cut short) on its last step, or ",
                        Fix("unfinished", "truncate", verb="load with", option=True),
                        " to load such episodes as truncated.")


def _build(raw: pl.DataFrame, roles: StepRoles, converted: dict, flags: dict, ends: np.ndarray,
           unflagged: np.ndarray, keep: np.ndarray | None, finals: dict) -> tuple[pl.DataFrame, FrameSpec]:
    """The frame (converted columns, flags, recorded reward, final states) and its spec."""
    final_of = roles.final_columns()  # a table's own final column stays in place, a new one follows its state
    dropped, own = {c for _, c in roles.nexts}, {c for _, c in roles.finals}
    recorded_layout = roles.reward == RECORDED
    columns: list[pl.Series] = []
    terminated_name = roles.terminated
    truncated_name = roles.truncated
    if roles.terminated is None and roles.done is not None:
        if roles.truncated is None:
            terminated_name = roles.done
        else:
            terminated_name = _free("terminated", raw.columns)
    truncate_added = None
    if unflagged.size and truncated_name is None:
        truncated_name = truncate_added = _free("truncated", raw.columns)
    for name in raw.columns:
        if name in dropped:
            continue
        if name in own:
            columns.append(finals[name])
        elif name == roles.reward:
            columns.append(converted[name].rename(RECORDED))
            columns.append(pl.Series(RECORDED_DONE, ends))
        elif name == RECORDED_DONE and roles.reward == RECORDED:  # checked equal to ends: added above
            continue
        elif name in converted:
            columns.append(converted[name])
            if name in final_of and final_of[name] not in raw.columns:
                columns.append(finals[final_of[name]])
        elif name in flags and name != terminated_name and roles.done != name:
            values = flags[name]
            if name == truncated_name and unflagged.size:
                values = values.copy()
                values[unflagged] = True
            columns.append(pl.Series(name, values))
        elif name == roles.done and terminated_name == name:
            columns.append(pl.Series(name, flags[name]))
        elif name == roles.terminated:
            columns.append(pl.Series(name, flags[name]))
        elif name in roles.ignored:  # a done beside terminated: not used, so kept as read
            columns.append(raw.get_column(name))
        elif name == roles.done:  # the done beside a computed terminated (read_steps reported its problems)
            columns.append(pl.Series(name, C.flag(raw.get_column(name), name, C.Problems(True))))
        else:
            columns.append(raw.get_column(name))
    if terminated_name is not None and terminated_name not in raw.columns:
        columns.append(pl.Series(terminated_name, flags[roles.done]))
    if truncate_added is not None:
        values = np.zeros(raw.height, dtype=bool)
        values[unflagged] = True
        columns.append(pl.Series(truncate_added, values))
    frame = pl.DataFrame(columns)
    if keep is not None:
        frame = frame.filter(pl.Series(keep))
    states = []
    for name in roles.states:
        series, dtype, width = _state_dtype(frame.get_column(name))
        final = final_of.get(name)
        if series.dtype != frame.schema[name]:
            frame = frame.with_columns(series)
        if final is not None and frame.schema[final] != series.dtype:
            frame = frame.with_columns(frame.get_column(final).cast(series.dtype))
        states.append(StateColumn(name, width, dtype, 0, final=final))
    extras = [c for c in roles.extras if not (recorded_layout and c == RECORDED_DONE)] + (
        [RECORDED] if roles.reward else [])
    spec = FrameSpec(name="steps", episode=(roles.episode, *((roles.agent,) if roles.agent else ())),
                     step=roles.step, agent=roles.agent, terminated=terminated_name, truncated=truncated_name,
                     states=tuple(states), columns=tuple(extras), contract="steps", time=roles.time,
                     description="a generic step table (rewardlab.sources.steps)")
    return frame, spec


def _free(name: str, taken) -> str:
    while name in taken:
        name += "_"
    return name


def read_tables(paths) -> pl.DataFrame:
    """The files' rows as read, as one frame (columns and dtypes checked across files), without roles or
    rules: what ``rewardlab.load(paths, format="steps", spec=...)`` checks against a declared spec.

    Examples
    --------
    >>> read_tables(["a.parquet", "b.parquet"]).height  # doctest: +SKIP
    """
    files = as_paths(paths)
    for p in files:
        check_input(p)
    tables = [read_file(p) for p in files]
    problems = C.Problems(False)
    _too_wide(tables, None, problems)
    if problems:
        r, column, rule, message = problems.first
        raise RowPlaces(tables).error(r, column, rule, message(r), hint=Text("Fix the row, or drop spec= to ", Fix("on_error", "skip", verb="load with", option=True),
                                                " (skip its episode and keep it in a side file)."))
    return _combine(tables)


def load_steps(paths, *, episode: str | None = None, step: str | None = None, agent: str | None = None,
               terminated: str | None = None, truncated: str | None = None, done: str | None = None,
               reward: str | None = None, time: str | None = None, final: str | None = None,
               unfinished: str = "error", on_error: str = "raise", skipped_path: str | Path | None = None,
               overwrite: bool = False) -> pl.DataFrame:
    """Load step tables into a frame carrying its spec (see :func:`read_steps` for the options).

    With ``on_error="skip"`` a ``skipped_path`` is required, so what is
    skipped is kept somewhere (:func:`read_steps` keeps it in memory instead).

    Examples
    --------
    >>> frame = load_steps("episodes.parquet", episode="ep", unfinished="truncate")  # doctest: +SKIP
    """
    if on_error == "skip" and skipped_path is None:
        raise ParameterError("skipped_path", Text("is required with ", Fix("on_error", "skip", verb="", option=True), " so skipped rows are kept"), None,
                             hint="Name a side file, or call rewardlab.sources.steps.read_steps() to get "
                             "them in memory.")
    return read_steps(paths, episode=episode, step=step, agent=agent, terminated=terminated,
                      truncated=truncated, done=done, reward=reward, time=time, final=final, unfinished=unfinished,
                      on_error=on_error, skipped_path=skipped_path, overwrite=overwrite).frame
