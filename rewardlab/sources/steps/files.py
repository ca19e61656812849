"""Reading one step-table file (Parquet, CSV, JSON lines) and placing its rows: line or row group.

:func:`read_file` returns a :class:`TableFile`: the rows as Polars read them,
and a locator that turns a row number into the place an editor or
``pyarrow`` shows (a 1-based line for text, a row group for Parquet) and
gives a text row's bytes exactly as in the file, for the skip mode's side
file.  The locator reads the file's bytes again only when asked (an error
or a skip), so a clean load pays nothing for it.

Examples
--------
>>> kind_of("steps.jsonl"), kind_of("a.CSV"), kind_of("x.txt")
('jsonl', 'csv', None)
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import polars as pl

from rewardlab.core.errors import StepTableError
from rewardlab.sources.storage import row_group_ends

__all__ = ["KINDS", "kind_of", "TableFile", "read_file", "head_of"]

#: File kinds by suffix.
KINDS = {".parquet": "parquet", ".csv": "csv", ".jsonl": "jsonl", ".ndjson": "jsonl"}

#: Rows Polars looks at to infer a CSV column's type (a later value of another type is diagnosed).
CSV_INFER_ROWS = 10_000


def kind_of(path) -> str | None:
    """``"parquet"``, ``"csv"``, ``"jsonl"`` from the suffix, or None."""
    return KINDS.get(Path(path).suffix.lower())


@dataclass
class TableFile:
    """One file's rows and where each came from.

    Attributes
    ----------
    path : Path
    kind : str
    frame : polars.DataFrame
        The rows as read (before any conversion).
    """

    path: Path
    kind: str
    frame: pl.DataFrame
    _records: tuple | None = field(default=None, repr=False)
    _groups: np.ndarray | None = field(default=None, repr=False)

    # --- where a row is ------------------------------------------------------------

    def _text_records(self):
        """(data, starts, ends, lines, header) of the rows, or None when they cannot be matched to lines."""
        if self._records is None:
            data = self.path.read_bytes()
            arr = np.frombuffer(data, dtype=np.uint8)
            nl = np.flatnonzero(arr == 10)
            if self.kind == "csv":  # a newline inside a quoted field does not end a record
                quotes = np.flatnonzero(arr == 34)
                nl_ends = nl[np.searchsorted(quotes, nl) % 2 == 0]
            else:
                nl_ends = nl
            starts = np.concatenate(([0], nl_ends + 1))
            ends = np.concatenate((nl_ends, [len(data)]))
            if starts[-1] >= len(data):  # the file ends with a newline: no record after it
                starts, ends = starts[:-1], ends[:-1]
            lines = np.searchsorted(nl, starts) + 1  # 1-based line of each record's first byte
            header = None
            if self.kind == "csv":
                header = (int(starts[0]), int(ends[0])) if starts.size else None
                starts, ends, lines = starts[1:], ends[1:], lines[1:]
            else:  # JSON lines: Polars skips blank lines (a record without a byte other than whitespace)
                solid = np.flatnonzero(~np.isin(arr, np.frombuffer(b" \t\r\n\x0b\x0c", dtype=np.uint8)))
                kept = np.searchsorted(solid, starts) < np.searchsorted(solid, ends)
                starts, ends, lines = starts[kept], ends[kept], lines[kept]
            ok = starts.size == self.frame.height
            self._records = (data, starts, ends, lines, header) if ok else (None,)
        return None if self._records[0] is None else self._records

    def where(self, row: int) -> dict:
        """``line`` (text) or ``row_group`` and ``row`` (Parquet) of the 0-based ``row``, for errors."""
        places = self.places(np.array([row], dtype=np.int64))
        if "row_group" in places:
            return {"row_group": int(places["row_group"][0]), "row": int(row)}
        if "line" in places:
            return {"line": int(places["line"][0])}
        return {"row": int(row)}

    def places(self, rows: np.ndarray) -> dict[str, np.ndarray]:
        """``{"line": ...}`` (text) or ``{"row_group": ...}`` (Parquet) of 0-based ``rows``; {} when a text
        file's records cannot be matched to its rows."""
        if self.kind == "parquet":
            if self._groups is None:
                self._groups = np.asarray(row_group_ends(self.path), dtype=np.int64)
            return {"row_group": np.searchsorted(self._groups, rows, side="right")}
        records = self._text_records()
        return {} if records is None else {"line": records[3][rows]}

    def raw(self, rows) -> list[bytes]:
        """The bytes of text rows as in the file (no ``\\n``; a CR of a CRLF line end stays)."""
        records = self._text_records()
        if records is None:
            raise StepTableError(self.path, "unmatched_lines", "its records could not be matched to the "
                                 "rows read, so skipped rows cannot be kept byte for byte",
                                 hint="Load with on_error='raise' and fix the file.")
        data, starts, ends = records[0], records[1], records[2]
        return [data[starts[r]:ends[r]] for r in rows]

    def header(self) -> bytes | None:
        """A CSV file's header line as in the file (no ``\\n``)."""
        records = self._text_records()
        if records is None or records[4] is None:
            return None
        s, e = records[4]
        return records[0][s:e]


def head_of(path, rows: int = 100) -> pl.DataFrame:
    """A file's first ``rows`` rows, for its columns' names, dtypes and first values (reads little)."""
    path = Path(path)
    kind = kind_of(path)
    if kind == "parquet":
        return pl.read_parquet(path, n_rows=rows)
    if kind == "csv":
        return pl.read_csv(path, n_rows=rows, infer_schema_length=rows)
    return pl.read_ndjson(path, n_rows=rows, infer_schema_length=rows)


def _hint(kind: str) -> str:
    return f"Fix the file (it does not parse as {kind})."


def read_file(path: Path) -> TableFile:
    """Read one file into a :class:`TableFile`; a file that does not parse is a
    :class:`~rewardlab.core.errors.StepTableError` naming its line (and column) where it can."""
    kind = kind_of(path)
    if kind is None:
        raise StepTableError(path, "file_kind", "a step table is a .parquet, .csv, .jsonl or .ndjson file",
                             hint="Rename or convert the file.")
    try:
        if kind == "parquet":
            frame = pl.read_parquet(path)
        elif kind == "csv":
            frame = pl.read_csv(path, infer_schema_length=CSV_INFER_ROWS)
        else:
            frame = pl.read_ndjson(path, infer_schema_length=None)
    except (pl.exceptions.PolarsError, OSError, ValueError) as exc:
        if kind == "csv":
            return TableFile(path, kind, _diagnose_csv(path, exc))
        if kind == "jsonl":
            _diagnose_jsonl(path, exc)
        raise StepTableError(path, "unreadable", f"Polars cannot read it: {str(exc).splitlines()[0]}",
                             hint=_hint(kind)) from None
    return TableFile(path, kind, frame)


def _diagnose_csv(path: Path, exc) -> pl.DataFrame:
    """A CSV file Polars could not type (a value of another type after the first rows): infer the types
    from every row (a column holding an odd value is read as text, so the reader's checks name its
    line), else read every column as text."""
    try:
        return pl.read_csv(path, infer_schema_length=None)
    except (pl.exceptions.PolarsError, OSError):
        pass
    try:
        return pl.read_csv(path, infer_schema=False)
    except (pl.exceptions.PolarsError, OSError) as again:
        raise StepTableError(path, "unreadable", f"Polars cannot read it: {str(again).splitlines()[0]}",
                             hint=_hint("CSV")) from None


def _diagnose_jsonl(path: Path, exc) -> None:
    """Name the first line that is not a JSON object."""
    with open(path, "rb") as f:
        for number, line in enumerate(f, 1):
            if not line.strip():
                continue
            try:
                value = json.loads(line)
            except ValueError as err:
                raise StepTableError(path, "bad_json", f"the line is not JSON ({err})", line=number,
                                     hint="Each line holds one JSON object, one step.") from None
            if not isinstance(value, dict):
                raise StepTableError(path, "bad_json", f"the line holds a JSON {type(value).__name__}, "
                                     "not an object", line=number,
                                     hint="Each line holds one JSON object, one step.")
