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

from rewardlab.sources.steps.roles import mostly

__all__ = ["SKIP_REASONS", "Problems", "numeric", "flag", "list_values", "to_float", "state_values", "looks_list",
           "common_width", "narrow_integers"]


#: The rules a row can break (and ``in_broken_episode``: a good row of an episode skipped for another).
SKIP_REASONS: dict[str, str] = {
    "missing_value": "role, state and numeric columns have a value in every row",
    "not_numeric": "state, step, reward and numeric columns hold numbers",
    "not_finite": "steps and the recorded reward are finite numbers (no NaN, no inf)",
    "integer_out_of_range": "integers fit in 64 bits (-2**63 to 2**63 - 1)",
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

    def add(self, rows, column: str | None, rule: str, message: Callable[[int], str], *,
            first: bool = False) -> None:
        """Record ``rows`` (indices or a Boolean mask) as breaking ``rule`` in ``column``; with ``first``,
        this reason comes before those already recorded for a row (a problem found before the others but
        placed once the rows' order is known)."""
        rows = np.asarray(rows)
        if rows.dtype == bool:
            rows = np.flatnonzero(rows)
        if rows.size == 0:
            return
        if self.skip:  # each row's first reason wins (see reasons); messages are made only when asked
            batch = (np.unique(rows.astype(np.int64, copy=False)), column, rule, message)
            self._batches.insert(0, batch) if first else self._batches.append(batch)
        else:
            r = int(rows.min())
            if self.first is None or r < self.first[0] or (first and r == self.first[0]):
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


def list_values(series: pl.Series, name: str, problems: Problems, *, width: int | None = None,
                owner: str | None = None) -> pl.Series:
    """A list column (or text such as ``"[0.1, 0.2]"``) as ``Array(dtype, width)``.

    The width is the length most rows have (:func:`common_width`); a row of
    another length is ``ragged_list`` (with ``width``, the width of
    ``owner``, a state whose next or final values these are:
    ``final_state_shape``), a missing list or element ``missing_value``, text that
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
    lengths_np = lengths.fill_null(-1).to_numpy()
    given = width is not None
    width = width if given else common_width(lengths_np[good])
    ragged = good & (lengths_np != width)
    if ragged.any() and given:
        problems.add(ragged, name, "final_state_shape", lambda r: f"the value is a list of {lengths_np[r]} "
                     f"values; {owner} holds a list of {width} values")
    elif ragged.any():
        problems.add(ragged, name, "ragged_list",
                     lambda r: f"the list has {lengths_np[r]} values; the column's lists mostly have {width}")
    if width == 0:
        width = 1
    bad = ~good | ragged
    if bad.any():
        fill = series[int(np.argmax(~bad))].to_list() if (~bad).any() else [0] * width
        series = pl.DataFrame({"v": series, "b": bad}).select(
            pl.when(pl.col("b")).then(pl.lit(fill, dtype=series.dtype)).otherwise(pl.col("v")).alias(name)
        ).to_series()
    return series.list.to_array(width).rename(name)


def common_width(lengths: np.ndarray) -> int:
    """The length most lists of a column have (the earliest of equally common lengths; 1 without a list):
    a list of another length is the one at fault, wherever it is, so a bad first row does not make
    every good row look ragged.

    Examples
    --------
    >>> common_width(np.array([3, 2, 2, 2])), common_width(np.array([4, 5, 5, 4])), common_width(np.array([]))
    (2, 4, 1)
    """
    lengths = np.asarray(lengths, dtype=np.int64)
    if lengths.size == 0:
        return 1
    counts = np.bincount(lengths)  # lengths are >= 0; one pass, no sort
    best = np.flatnonzero(counts == counts.max())
    if best.size == 1:
        return int(best[0])
    return int(lengths[np.argmax(np.isin(lengths, best))])  # the earliest of the tied lengths


def _wide(dtype: pl.DataType) -> bool:
    """Whether ``dtype`` is, or holds, a 128-bit integer."""
    while isinstance(dtype, (pl.List, pl.Array)):
        dtype = dtype.inner
    return dtype in (pl.Int128, pl.UInt128)


def _narrow_dtype(dtype: pl.DataType, wide: bool = True) -> pl.DataType:
    """``dtype`` with its 128-bit integers as Int64 (``wide``), or with its Arrays as Lists (``wide=False``)."""
    if isinstance(dtype, (pl.List, pl.Array)):
        inner = _narrow_dtype(dtype.inner, wide)
        return pl.Array(inner, dtype.size) if wide and isinstance(dtype, pl.Array) else pl.List(inner)
    return pl.Int64 if wide and dtype in (pl.Int128, pl.UInt128) else dtype


def _set_count(expr: pl.Expr, dtype: pl.DataType) -> pl.Expr:
    """Per row, how many values are set (not null): a scalar's 0 or 1, a list's elements at any depth."""
    if isinstance(dtype, pl.List):
        return expr.list.eval(_set_count(pl.element(), dtype.inner)).list.sum().fill_null(0)
    return expr.is_not_null().cast(pl.Int64)


def narrow_integers(series: pl.Series) -> tuple[pl.Series, np.ndarray]:
    """A column of 128-bit integers (Polars' type for a CSV or JSON integer beyond Int64; a list's
    elements too) as Int64, and True on the rows holding a value beyond Int64 (-2**63 to 2**63 - 1),
    which become null: NumPy, torch and the Parquet writer take no wider integer.  Other columns are
    returned as they are.

    Examples
    --------
    >>> narrowed, bad = narrow_integers(pl.Series("t", [1, 2 ** 70, None], dtype=pl.Int128))
    >>> narrowed.dtype, narrowed.to_list(), bad.tolist()
    (Int64, [1, None, None], [False, True, False])
    """
    if not _wide(series.dtype):
        return series, np.zeros(series.len(), dtype=bool)
    narrowed = series.cast(_narrow_dtype(series.dtype), strict=False)
    as_lists = _narrow_dtype(series.dtype, wide=False)
    counts = pl.DataFrame({"a": series.cast(as_lists), "b": narrowed.cast(_narrow_dtype(as_lists, wide=False))})
    bad = counts.select(_set_count(pl.col("a"), as_lists) != _set_count(pl.col("b"), as_lists)).to_series()
    return narrowed, bad.to_numpy().astype(bool, copy=False)


def looks_list(series: pl.Series) -> bool:
    """True for a list column, or text most of whose values are lists (``"[0.1, 0.2]"``)."""
    if isinstance(series.dtype, (pl.List, pl.Array)):
        return True
    return series.dtype == pl.String and mostly(series, lists=True)


def state_values(series: pl.Series, name: str, problems: Problems, *, width: int | None = None,
                 owner: str | None = None) -> pl.Series:
    """A state column (or a state's next or final values) checked and converted: lists as ``Array``
    (:func:`list_values`; ``width`` and ``owner``: the state's width, for its next or final values),
    anything else as numbers (:func:`numeric`).

    Examples
    --------
    >>> state_values(pl.Series("obs", ["[1, 2]", "[3, 4]"]), "obs", Problems(False)).dtype
    Array(Float64, shape=(2,))
    """
    if looks_list(series):
        return list_values(series, name, problems, width=width, owner=owner)
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
