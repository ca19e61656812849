"""The kanachan reader's rules and messages: what a rejected line breaks, and how it is reported.

:class:`Problems` collects rule violations row by row (raise mode keeps the
earliest, skip mode every row's first); :func:`report_codes` turns the
compiled tokenizer's per-line error codes into messages, built only for the
lines that are reported.  :data:`SKIP_REASONS` lists every rule in the order
they are checked.

Examples
--------
>>> import numpy as np
>>> p = Problems("a.tsv", lambda r: r + 1, skip=False)
>>> p.add(np.array([3, 1]), 2, "out_of_range", lambda r: f"row {r}")
>>> p.first[:3]
(1, 2, 'out_of_range')
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Callable

import numpy as np

from rewardlab.sources.kanachan import schema as S
from rewardlab.core.errors import DataFormatError
from rewardlab.core.fronts import Fix, Text
from rewardlab.sources.registry import claim, format_remedy
from rewardlab.sources.storage import DATASET_SUFFIXES, file_columns

__all__ = ["SKIP_REASONS", "STATE_COLUMNS", "LIST_OF_COLUMN", "HINT", "Problems", "report_codes", "clip",
           "first_bad_token", "INT_TOKEN", "other_format"]


def other_format(path) -> DataFormatError | None:
    """The error for a file another format claims (an MJAI log, a step table, RLlib output), saying what it
    looks like and how to load it; None when no other format claims it (kanachan's rules then name what is
    wrong).  Rule ``other_format``.

    Examples
    --------
    >>> print(other_format("data/mjai/hanchan_15.json"))  # doctest: +ELLIPSIS
    data/mjai/hanchan_15.json: not kanachan data (annotation lines or a converted dataset): this looks like MJAI game logs ...
    >>> other_format("data/sample.tsv.gz") is None
    True
    """
    source, how = claim(path)
    if source is None or source.name in ("kanachan", "dataset"):
        return None
    if how == "suffix" and Path(path).suffix.lower() in DATASET_SUFFIXES and file_columns(path) is None:
        return None  # named like a table but not one: the reader says what is wrong with it
    return DataFormatError(path, None, None, "other_format",
                           "not kanachan data (annotation lines or a converted dataset): this looks like "
                           f"{source.what} (format {source.name!r}, recognized by its {how})",
                           hint="Load it with its own format: " + format_remedy(source.name) + ".")

#: Reasons a line can be rejected, in the order they are checked.
SKIP_REASONS: dict[str, str] = {
    "empty_file": "the file has no lines",
    "bad_encoding": "the line has a control character or bytes that are not UTF-8",
    "column_count": "a line has 8, 10 or 12 TAB-separated columns",
    "bad_game_id": "column 0 is a 32-hex-digit game id",
    "not_integer": "list values are decimal integers separated by commas",
    "too_many_ids": "a feature list is at most its maximum length",
    "wrong_length": "numeric has 6 values, results 8, round summary 1-7, lists at least 1",
    "out_of_range": "ids are in [0, number of types)",
    "bad_action": "the action is an index into the candidates",
    "sparse_layout": "sparse features hold one room, game length, seat, chang, ju and one grade per seat",
    "next_state_mismatch": "next-state columns equal the following line's state columns",
    "missing_end_of_game": "an episode's last line is an 8-column end-of-game line",
    "end_of_game_not_last": "an 8-column line is the last line of its episode",
    "episode_not_contiguous": "one player's lines in one game are consecutive",
    "game_reappears": "a game's lines are not interrupted by other games",
    "in_broken_episode": "the line belongs to (or borders) an episode skipped for another line",
}

STATE_COLUMNS = (S.SPARSE, S.NUMERIC, S.PROGRESSION, S.CANDIDATES)  # file columns 1-4


class Problems:
    """Collects rule violations for one block of lines.

    ``add`` takes the row indices that break a rule, the column, the rule name
    and a function that renders the message for one row (called only for the
    rows that are reported).
    """

    def __init__(self, path: str, line_of: Callable[[int], int], skip: bool):
        self.path = path
        self.line_of = line_of
        #: Added to ``line_of(r)``: a block parsed before its first line number was known is rebased.
        self.line_offset = 0
        self.skip = skip
        self.first: tuple[int, int | None, str, Callable[[int], str]] | None = None
        self.rows: dict[int, tuple[int | None, str, str]] = {}

    def add(self, rows: np.ndarray, column: int | None | np.ndarray, rule: str, message: Callable[[int], str]):
        rows = np.asarray(rows)
        if rows.dtype == bool:
            rows = np.flatnonzero(rows)
        if rows.size == 0:
            return
        cols = column if isinstance(column, np.ndarray) else None

        def col_at(k):  # a negative column means "the whole line"
            return (int(cols[k]) if cols[k] >= 0 else None) if cols is not None else column

        if self.skip:
            for k, r in enumerate(rows.tolist()):
                if r not in self.rows:
                    self.rows[r] = (col_at(k), rule, message(r))
        else:
            r = int(rows.min())
            if self.first is None or r < self.first[0]:
                self.first = (r, col_at(int(np.argmin(rows))), rule, message)

    def raise_first(self) -> None:
        if self.first is not None:
            r, col, rule, message = self.first
            raise DataFormatError(self.path, self.line_of(r) + self.line_offset, col, rule, message(r),
                                  hint=HINT)

    @property
    def bad_rows(self) -> np.ndarray:
        return np.fromiter(sorted(self.rows), dtype=np.int64, count=len(self.rows))


#: The hint of a bad line: its fix, or skip mode (the CLI: ``--on-error skip`` / ``--option on_error=skip``).
HINT = Text("Fix the line, or ", Fix("on_error", "skip", verb="load with", option=True), " to skip and keep such lines.")


#: File column of each parsed list, by its name (round summary and results move with the line kind).
LIST_OF_COLUMN = {1: S.SPARSE, 2: S.NUMERIC, 3: S.PROGRESSION, 4: S.CANDIDATES,
                   6: S.ROUND_SUMMARY, 7: S.RESULTS, 10: S.ROUND_SUMMARY, 11: S.RESULTS}


def report_codes(block, tok, problems: Problems) -> None:
    """Turn the tokenizer's per-line error codes into reported problems (messages built on demand)."""
    from rewardlab.sources.kanachan.tokenizer import CODES

    detail, column, lengths = tok.detail, tok.column, tok.lengths
    rules = {v: k for k, v in CODES.items()}

    def name(r):  # columns 6-9 are the next state on 10- and 12-column lines
        c = int(column[r])
        return f"next {STATE_COLUMNS[c - 6]}" if 6 <= c <= 9 and tok.kind[r] in (10, 12) else LIST_OF_COLUMN[c]

    def where(r):
        return f"{name(r)} (column {int(column[r])})"

    def spec(r):  # (most values, lowest, highest + 1, padding, exact count)
        return S.LIST_LIMITS[name(r).removeprefix("next ")]

    def out_of_range_rule(r):
        _, lo, hi, _, _ = spec(r)
        return f"in [0, {hi})" if lo == 0 else "a 32-bit integer"

    def col_text(r):
        cols = block.columns(r)
        c = int(column[r])
        return cols[c] if c < len(cols) else ""

    messages = {
        "bad_encoding": lambda r: "the line has a control character or bytes that are not UTF-8",
        "column_count": lambda r: f"expected 8, 10 or 12 TAB-separated columns, found {detail[r]}"
        + (" (empty line)" if detail[r] == 1 and tok.start[r] == tok.end[r] else ""),
        "bad_game_id": lambda r: f"expected a game id of 32 hex digits, found {clip(col_text(r))!r}",
        "not_integer": lambda r: (f"the action should be a decimal integer, found {clip(col_text(r))!r}"
                                  if column[r] == 5 else
                                  f"{where(r)} should be decimal integers separated by commas, "
                                  f"found {first_bad_token(col_text(r))!r}"),
        "too_many_ids": lambda r: f"{where(r)} has {detail[r]} values; at most {spec(r)[0]} are allowed",
        "wrong_length": lambda r: f"{where(r)} should have exactly {spec(r)[4]} values, found {detail[r]}",
        "out_of_range": lambda r: f"{where(r)} has value {detail[r]}; each should be {out_of_range_rule(r)}",
        "bad_action": lambda r: f"action {detail[r]} is not an index into the {lengths[r, 3]} candidates "
        "of column 4",
    }
    code = tok.code
    for value in np.unique(code[code > 0]).tolist():
        rows = np.flatnonzero(code == value)
        rule = rules[value]
        problems.add(rows, column[rows].astype(np.int64), rule, messages[rule])


def clip(value, width: int = 40) -> str:
    s = "" if value is None else str(value)
    return s if len(s) <= width else s[:width] + "..."


def first_bad_token(text: str | None) -> str:
    for token in (text or "").split(","):
        if not INT_TOKEN.fullmatch(token):
            return clip(token)
    return clip(text)



#: A list value as the tokenizer reads it (int() would also take "+1", full-width digits and spaces).
INT_TOKEN = re.compile(r"-?[0-9]{1,18}")

