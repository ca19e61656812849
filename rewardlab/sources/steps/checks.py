"""The step-table rules, checked on whole columns: values first, then episodes.

Each check hands the rows that break a rule to a :class:`Problems`, which in
raise mode keeps the earliest (the reader raises it, naming file, line or
row group, and column) and in skip mode records every bad row with its first
reason (the reader then drops the whole episodes they touch).

Examples
--------
>>> SKIP_REASONS["ragged_list"]
'a list column has one length in every row'
"""

from __future__ import annotations

from typing import Callable

import numpy as np
import polars as pl

from rewardlab.sources.steps.roles import first_value

__all__ = ["SKIP_REASONS", "Problems", "numeric", "flag", "list_values", "to_float", "state_values", "looks_list"]

#: The rules a row can break (and ``in_broken_episode``: a good row of an episode skipped for another).
SKIP_REASONS: dict[str, str] = {
    "missing_value": "role, state and numeric columns have a value in every row",
    "not_numeric": "state, step, reward and numeric columns hold numbers",
    "not_finite": "steps and the recorded reward are finite numbers (no NaN, no inf)",
    "ragged_list": "a list column has one length in every row",
    "bad_flag": "flags are true/false (or 1/0)",
    "bad_time": "the time column holds numbers, dates or times",
    "episode_not_contiguous": "an episode's rows are consecutive",
    "step_order": "steps increase within an episode",
    "step_repeated": "a step appears once in its episode",
    "flag_mid_episode": "terminated / truncated are set only on an episode's last step",
    "both_flags": "an episode ends one way: terminated or truncated",
    "unfinished_episode": "an episode's last step has terminated or truncated set",
    "done_recorded_mismatch": "a table's own done_recorded is True exactly on each episode's last step",
    "final_flag_missing": "the final column is true or false on every row (not null, not NaN)",
    "final_row_not_last": "a final row comes after its episode's last step: no row of its episode follows it",
    "final_row_twice": "an episode has at most one final row",
    "final_row_alone": "a final row follows a step of its own episode",
    "final_row_reward": "a final row has no reward (null, NaN or no reward column)",
    "final_row_flag": "a final row sets no terminal flag (they belong on the episode's last step, the row before)",
    "next_state_mismatch": "a next-state column (next_<state>, new_<state>) equals the following step's state",
    "final_state_mid_episode": "a final-state column (final_<state>) is null except on an episode's last step",
    "final_state_mismatch": "the layouts that give a step's final state give the same one",
    "final_state_shape": "a state's next and final values have its shape (a number, or a list of its length)",
    "in_broken_episode": "the row belongs to (or borders) an episode skipped for another row",
}


class Problems:
    """Rows that break rules (global row numbers).

    Parameters
    ----------
    skip : bool
        Record every bad row (skip mode) instead of the earliest one.

    Examples
    --------
    >>> problems = Problems(True)
    >>> problems.add([3, 1], "x", "not_numeric", lambda r: f"row {r}")
    >>> problems.add(np.array([False, True, True, False]), "y", "bad_flag", lambda r: f"flag {r}")
    >>> problems.bad_rows.tolist(), problems.reasons(np.array([1, 2, 3, 0]))
    ([1, 2, 3], [('x', 'not_numeric', 'row 1'), ('y', 'bad_flag', 'flag 2'), ('x', 'not_numeric', 'row 3'), None])
    """

    def __init__(self, skip: bool):
        self.skip = skip
        self.first: tuple[int, str | None, str, Callable[[int], str]] | None = None
        self._batches: list[tuple[np.ndarray, str | None, str, Callable[[int], str]]] = []

    def add(self, rows, column: str | None, rule: str, message: Callable[[int], str]) -> None:
        """Record ``rows`` (indices or a Boolean mask) as breaking ``rule`` in ``column``."""
        rows = np.asarray(rows)
        if rows.dtype == bool:
            rows = np.flatnonzero(rows)
        if rows.size == 0:
            return
        if self.skip:  # each row's first reason wins (see reasons); messages are made only when asked
            self._batches.append((np.unique(rows.astype(np.int64, copy=False)), column, rule, message))
        else:
            r = int(rows.min())
            if self.first is None or r < self.first[0]:
                self.first = (r, column, rule, message)

    def __bool__(self) -> bool:
        return self.first is not None or bool(self._batches)

    @property
    def bad_rows(self) -> np.ndarray:
        """Every recorded row, sorted (skip mode)."""
        if not self._batches:
            return np.zeros(0, dtype=np.int64)
        return np.unique(np.concatenate([b[0] for b in self._batches]))

    def reasons(self, rows: np.ndarray) -> list[tuple[str | None, str, str] | None]:
        """(column, rule, message) of each row's first recorded reason, None for a row without one."""
        rows = np.asarray(rows, dtype=np.int64)
        which = np.full(rows.size, -1, dtype=np.int64)
        for k, batch in enumerate(self._batches):
            hit = (which < 0) & np.isin(rows, batch[0])
            which[hit] = k
        out: list = [None] * rows.size
        for i in np.flatnonzero(which >= 0).tolist():
            _, column, rule, message = self._batches[which[i]]
            r = int(rows[i])
            out[i] = (column, rule, message(r))
        return out


def _show(value) -> str:
    text = repr(value)
    return text if len(text) <= 40 else text[:37] + "..."


def to_float(series: pl.Series, name: str, problems: Problems) -> pl.Series:
    """A text column as Float64; values that are not numbers are problems (``not_numeric``)."""
    stripped = series.str.strip_chars()
    out = stripped.cast(pl.Float64, strict=False)
    bad = (out.is_null() & stripped.is_not_null() & (stripped != "")).to_numpy()
    values = series
    problems.add(bad, name, "not_numeric", lambda r: f"{_show(values[r])} is not a number")
    return out


def numeric(series: pl.Series, name: str, problems: Problems, *, what: str = "value",
            finite: bool = False) -> pl.Series:
    """``series`` as a numeric column: numbers stay, text is parsed; nulls and text that is no number
    are problems, and with ``finite`` so are NaN and infinite values (``not_finite``: a NaN step breaks
    every order check, a NaN reward every statistic).

    Examples
    --------
    >>> problems = Problems(True)
    >>> numeric(pl.Series("t", [0.0, float("nan")]), "t", problems, what="step", finite=True).to_list()[0]
    0.0
    >>> problems.reasons([1])
    [('t', 'not_finite', 'the step is nan, not a finite number')]
    """
    if series.dtype == pl.String:
        series = to_float(series, name, problems)
    elif series.dtype == pl.Boolean:
        series = series.cast(pl.UInt8)
    elif not series.dtype.is_numeric():
        dtype = series.dtype
        problems.add(np.ones(series.len(), dtype=bool) if series.len() else [], name, "not_numeric",
                     lambda r: f"the {what} should be a number; the column holds {dtype}")
        return pl.Series(name, np.zeros(series.len()), dtype=pl.Float64)
    nulls = series.is_null()
    if nulls.any():
        problems.add(nulls.to_numpy(), name, "missing_value", lambda r: f"the {what} is missing (null)")
    if finite and series.dtype.is_float():
        bad = (~series.is_finite()).fill_null(False)
        if bad.any():
            values = series
            problems.add(bad.to_numpy(), name, "not_finite",
                         lambda r: f"the {what} is {values[r]}, not a finite number")
    return series


_TRUE = ("true", "1", "1.0", "t", "yes")
_FALSE = ("false", "0", "0.0", "f", "no", "")


def flag(series: pl.Series, name: str, problems: Problems) -> np.ndarray:
    """A flag column as a bool array: Boolean, 0/1 numbers, or true/false text."""
    values = series
    if series.dtype == pl.Boolean:
        out = series
    elif series.dtype.is_numeric():
        out = series.cast(pl.Float64)
        problems.add((~out.is_in([0.0, 1.0]) & out.is_not_null()).to_numpy(), name, "bad_flag",
                     lambda r: f"{_show(values[r])} is not a flag (true/false or 1/0)")
        out = out == 1.0
    elif series.dtype == pl.String:
        low = series.str.strip_chars().str.to_lowercase()
        problems.add((~low.is_in([*_TRUE, *_FALSE]) & low.is_not_null()).to_numpy(), name, "bad_flag",
                     lambda r: f"{_show(values[r])} is not a flag (true/false or 1/0)")
        out = low.is_in(_TRUE)
    else:
        dtype = series.dtype
        problems.add(np.ones(series.len(), dtype=bool), name, "bad_flag",
                     lambda r: f"a flag should be Boolean; the column holds {dtype}")
        return np.zeros(series.len(), dtype=bool)
    nulls = series.is_null()
    if nulls.any():
        problems.add(nulls.to_numpy(), name, "missing_value", lambda r: "the flag is missing (null)")
    return out.fill_null(False).to_numpy().astype(bool, copy=False)


def list_values(series: pl.Series, name: str, problems: Problems) -> pl.Series:
    """A list column (or text such as ``"[0.1, 0.2]"``) as ``Array(dtype, width)``.

    The width is the first row's length; a row of another length is
    ``ragged_list``, a missing list or element ``missing_value``, text that
    is no number ``not_numeric``.  Bad rows become the first good row's
    values, so the frame stays rectangular (the reader drops or reports them).
    """
    if isinstance(series.dtype, pl.Array) and _fixed_and_complete(series):
        return series  # the common Parquet case: nothing to check, nothing to copy
    if series.dtype == pl.String:  # "[0.1, 0.2]" as pandas' to_csv writes a list
        inner = series.str.strip_chars().str.strip_chars("[]").str.split(",")
        series = inner
    if isinstance(series.dtype, pl.Array):
        series = series.arr.to_list()
    inner_dtype = series.dtype.inner
    if inner_dtype == pl.String:
        parsed = series.list.eval(pl.element().str.strip_chars().cast(pl.Float64, strict=False))
        before = series.list.eval(pl.element().is_not_null()).list.sum().fill_null(0)
        after = parsed.list.eval(pl.element().is_not_null()).list.sum().fill_null(0)
        texts = series
        problems.add((before != after).to_numpy(), name, "not_numeric",
                     lambda r: f"{_show(_first_text(texts[r]))} in the list is not a number")
        series = parsed.list.eval(pl.element().fill_null(0.0))  # reported above; keep the row rectangular
        inner_dtype = pl.Float64
    elif not (inner_dtype.is_numeric() or inner_dtype == pl.Boolean):
        dtype = series.dtype
        problems.add(np.ones(series.len(), dtype=bool), name, "not_numeric",
                     lambda r: f"a list of numbers is expected; the column holds {dtype}")
        return pl.Series(name, np.zeros((series.len(), 1)), dtype=pl.Array(pl.Float64, 1))
    lengths = series.list.len()
    missing = (series.is_null() | (series.list.eval(pl.element().is_null()).list.any().fill_null(False)))
    if missing.any():
        problems.add(missing.to_numpy(), name, "missing_value",
                     lambda r: "the list (or one of its values) is missing (null)")
    good = ~missing.to_numpy()
    width = int(lengths.to_numpy()[np.argmax(good)]) if good.any() else 1
    lengths_np = lengths.fill_null(-1).to_numpy()
    ragged = good & (lengths_np != width)
    if ragged.any():
        problems.add(ragged, name, "ragged_list",
                     lambda r: f"the list has {lengths_np[r]} values; the column's first list has {width}")
    if width == 0:
        width = 1
    bad = ~good | ragged
    if bad.any():
        fill = series[int(np.argmax(~bad))].to_list() if (~bad).any() else [0] * width
        series = pl.DataFrame({"v": series, "b": bad}).select(
            pl.when(pl.col("b")).then(pl.lit(fill, dtype=series.dtype)).otherwise(pl.col("v")).alias(name)
        ).to_series()
    return series.list.to_array(width).rename(name)


def looks_list(series: pl.Series) -> bool:
    """True for a list column, or text whose first value is a list (``"[0.1, 0.2]"``)."""
    if isinstance(series.dtype, (pl.List, pl.Array)):
        return True
    return series.dtype == pl.String and first_value(series, lambda v: v.lstrip().startswith("["))


def state_values(series: pl.Series, name: str, problems: Problems) -> pl.Series:
    """A state column (or a state's next or final values) checked and converted: lists as ``Array``
    (:func:`list_values`), anything else as numbers (:func:`numeric`).

    Examples
    --------
    >>> state_values(pl.Series("obs", ["[1, 2]", "[3, 4]"]), "obs", Problems(False)).dtype
    Array(Float64, shape=(2,))
    """
    if looks_list(series):
        return list_values(series, name, problems)
    return numeric(series, name, problems, what="observation value")


def _fixed_and_complete(series: pl.Series) -> bool:
    """True for a one-dimensional numeric ``Array`` column without a missing list or value (read from
    the Arrow buffers: no copy)."""
    inner = series.dtype.inner
    if series.null_count() or not (inner.is_numeric() or inner == pl.Boolean):
        return False
    return all(chunk.to_arrow().flatten().null_count == 0 for chunk in series.get_chunks())


def _first_text(values: pl.Series):
    """The first value of a list of text that is not a number."""
    for v in values.to_list():
        try:
            float(v)
        except (TypeError, ValueError):
            if v is not None:
                return v
    return None
