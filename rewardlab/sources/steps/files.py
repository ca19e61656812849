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

import csv
import io
import json
import math
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import polars as pl

from rewardlab.core.errors import StepTableError
from rewardlab.sources.steps import checks as C
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
        The rows as read (before any conversion but 128-bit integers' to Int64).
    too_wide : dict
        ``{column: (rows, series)}``: the rows (0-based) holding an integer
        beyond Int64, null in ``frame``, and the column as read (Int128).
    """

    path: Path
    kind: str
    frame: pl.DataFrame
    too_wide: dict = field(default_factory=dict)
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
                try:
                    self._groups = np.asarray(row_group_ends(self.path), dtype=np.int64)
                except Exception:  # noqa: BLE001 - pyarrow cannot read the footer Polars read: rows only
                    self._groups = np.zeros(0, dtype=np.int64)
            if not self._groups.size:
                return {}
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

    def as_read(self) -> pl.DataFrame:
        """The rows exactly as read: :attr:`frame` with the integers beyond Int64 back in their columns."""
        if not self.too_wide:
            return self.frame
        return self.frame.with_columns(series for _, series in self.too_wide.values())

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


#: What Polars raises on a file it cannot read (a panic of its Rust code included).
_POLARS_ERRORS = (pl.exceptions.PolarsError, pl.exceptions.PanicException, OSError, ValueError)


def read_file(path: Path) -> TableFile:
    """Read one file into a :class:`TableFile`; a file that does not parse is a
    :class:`~rewardlab.core.errors.StepTableError` naming its line (and column) or row group.

    A CSV header naming a column twice is refused (rule ``duplicate_column``,
    line 1): Polars would rename the second one; so is a column without a
    name or with a NUL character in it (``bad_column_name``).  Integers
    beyond Int64 (Polars reads them as Int128) are read as Int64 where they
    fit; the rows holding one that does not are listed in
    :attr:`TableFile.too_wide` (the reader reports them, rule
    ``integer_out_of_range``).  A file Polars cannot read names its first
    line Polars cannot read (found by bisection) and says why where it can:
    bytes that are not UTF-8 (``not_utf8``), a CSV line with more fields than
    the header (``too_many_fields``), a JSON line Python's reader refuses or
    holding NaN, Infinity or a number beyond float64 or 128-bit integers
    (``bad_json``, naming the key), a JSON value of another kind than the
    same key's on an earlier line (``mixed_json_types``); else Polars'
    message (``unreadable``).  A Parquet file names its first row group that
    does not read.

    Examples
    --------
    >>> read_file(Path("steps.jsonl")).frame.columns  # doctest: +SKIP
    ['episode_id', 't', 'obs', 'reward', 'terminated']
    """
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
    except _POLARS_ERRORS as exc:
        if kind == "csv":
            _check_header(path)
            frame = _diagnose_csv(path)
        elif kind == "jsonl":
            raise _diagnose_jsonl(path, exc) from None
        else:
            raise _diagnose_parquet(path, exc) from None
    if kind == "csv" and any("_duplicated_" in c for c in frame.columns):
        _check_header(path)
    _check_names(path, kind, frame.columns)
    return _narrowed(TableFile(path, kind, frame))


def _check_names(path: Path, kind: str, names: list[str]) -> None:
    """Refuse a column without a name (pandas writes its index so) or with a NUL character in it: a
    spec names every column, and Arrow cannot hold such a name."""
    where = {"line": 1} if kind == "csv" else {}
    for name in names:
        if not name.strip():
            raise StepTableError(path, "bad_column_name", f"a column has no name ({name!r})", column=name,
                                 hint="Name the column (pandas writes its index as a column without a name: "
                                 "write the file with index=False).", **where)
        if "\x00" in name:
            raise StepTableError(path, "bad_column_name", f"the column name {name!r} holds a NUL character",
                                 column=name, hint="Rename the column.", **where)


def _narrowed(table: TableFile) -> TableFile:
    """``table`` with its 128-bit integer columns as Int64 (:func:`~rewardlab.sources.steps.checks.narrow_integers`)."""
    for series in table.frame.get_columns():
        narrowed, bad = C.narrow_integers(series)
        if narrowed is series:
            continue
        name = series.name
        table.frame = table.frame.with_columns(narrowed)
        if bad.any():
            rows = np.flatnonzero(bad)
            table.too_wide[name] = (rows, series)
    return table


def _unreadable(path: Path, kind: str, exc: BaseException, **where) -> StepTableError:
    text = str(exc).strip().splitlines()
    return StepTableError(path, "unreadable", "Polars cannot read it" + (" from this line on" if "line" in where
                          else "") + f": {text[0] if text else type(exc).__name__}", hint=_hint(kind), **where)


def _utf8_error(path: Path, data: bytes) -> StepTableError | None:
    """The line of the first byte that is not UTF-8 (Polars reads text files as UTF-8), or None."""
    try:
        data.decode("utf-8")
    except UnicodeDecodeError as err:
        line = data.count(b"\n", 0, err.start) + 1
        bad = data[err.start:err.end]
        return StepTableError(path, "not_utf8", f"byte {bad!r} is not UTF-8 text", line=line,
                              hint="Save the file as UTF-8.")
    return None


def _record_ends(data: bytes, csv: bool) -> np.ndarray:
    """The end (exclusive, after its ``\\n``) of each record of a text file: lines, or a CSV's records
    (a line break inside a quoted field does not end one)."""
    arr = np.frombuffer(data, dtype=np.uint8)
    nl = np.flatnonzero(arr == 10)
    if csv:
        quotes = np.flatnonzero(arr == 34)
        nl = nl[np.searchsorted(quotes, nl) % 2 == 0]
    ends = nl + 1
    if not ends.size or ends[-1] < len(data):
        ends = np.concatenate((ends, [len(data)]))
    return ends


def _first_failing(data: bytes, ends: np.ndarray, reads, first: int = 0) -> int | None:
    """The first record ``k`` (0-based, ``first`` or later) such that ``reads(data[:ends[k]])`` fails while
    the records before it read, by bisection (a file that fails from a record on fails on every longer
    prefix); None when the whole data reads."""

    def fails(k: int) -> bool:
        try:
            reads(data[:int(ends[k])])
        except _POLARS_ERRORS:
            return True
        return False

    lo, hi = first, ends.size - 1
    if hi < lo or not fails(hi):
        return None
    while lo < hi:
        mid = (lo + hi) // 2
        if fails(mid):
            hi = mid
        else:
            lo = mid + 1
    return lo


def _check_header(path: Path) -> None:
    """Refuse a CSV header naming a column twice (Polars would read the second as ``NAME_duplicated_0``)."""
    try:
        names = pl.read_csv(path, has_header=False, n_rows=1, infer_schema=False).row(0)
    except _POLARS_ERRORS:
        return  # no header to read: the read's own error says why
    seen = set()
    for name in names:
        if name in seen:
            raise StepTableError(path, "duplicate_column", "the header names the column twice", line=1,
                                 column=name, hint="Give each column its own name.")
        seen.add(name)


def _diagnose_csv(path: Path) -> pl.DataFrame:
    """A CSV file Polars could not type (a value of another type after the first rows): infer the types
    from every row (a column holding an odd value is read as text, so the reader's checks name its
    line), else read every column as text; a file that does not parse even so names its first line
    that does not."""
    try:
        return pl.read_csv(path, infer_schema_length=None)
    except _POLARS_ERRORS:
        pass
    try:
        return _typed(pl.read_csv(path, infer_schema=False))
    except _POLARS_ERRORS as again:
        exc = again
    data = path.read_bytes()
    if not data.strip():
        raise StepTableError(path, "empty_file", "the file is empty: a CSV step table starts with a header "
                             "line", hint="Write the header and the rows.")
    bad = _utf8_error(path, data)
    if bad is not None:
        raise bad
    ends = _record_ends(data, csv=True)
    k = _first_failing(data, ends, lambda d: pl.read_csv(io.BytesIO(d), infer_schema=False))
    if k is None:
        raise _unreadable(path, "CSV", exc) from None
    line = data.count(b"\n", 0, int(ends[k - 1]) if k else 0) + 1
    record = data[int(ends[k - 1]) if k else 0:int(ends[k])]
    header = data[:int(ends[0])]
    fields, width = _csv_fields(record), _csv_fields(header)
    if k and fields is not None and width is not None and fields > width:
        raise StepTableError(path, "too_many_fields", f"the line has {fields} fields; the header has {width}",
                             line=line, hint="Quote values holding the delimiter, or fix the line.")
    raise _unreadable(path, "CSV", exc, line=line) from None


def _typed(frame: pl.DataFrame) -> pl.DataFrame:
    """A CSV file read as text, each column typed as Polars would type it alone: integers, wider integers,
    floats, true/false, else text (so a value Polars' inference trips on makes its own column text, not
    every column)."""
    out = []
    for series in frame.get_columns():
        if series.null_count() == series.len():
            out.append(series)
            continue
        for dtype in (pl.Int64, pl.Int128, pl.Float64):
            try:
                series = series.cast(dtype)
                break
            except _POLARS_ERRORS:
                continue
        else:
            low = series.str.to_lowercase()
            if low.is_in(["true", "false"]).all():
                series = low == "true"
        out.append(series)
    return pl.DataFrame(out)


def _csv_fields(record: bytes) -> int | None:
    """How many fields a CSV record holds (Python's csv module), or None when it does not parse."""
    try:
        rows = list(csv.reader(io.StringIO(record.decode("utf-8")), strict=True))
    except (csv.Error, UnicodeDecodeError):
        return None
    return len(rows[0]) if len(rows) == 1 else None


class _Odd:
    """A JSON value Python reads and Polars does not (NaN, Infinity, a number beyond float64 or int128)."""

    def __init__(self, text: str, why: str):
        self.text, self.why = text, why


def _odd_constant(text: str) -> _Odd:
    return _Odd(text, "is not a JSON number (JSON has no NaN or Infinity); write null, or a finite number")


def _odd_float(text: str):
    value = float(text)
    return value if math.isfinite(value) else _Odd(text, "is beyond the float64 range")


def _odd_int(text: str):
    value = int(text)
    return value if -(2 ** 127) <= value < 2 ** 127 else _Odd(text, "is beyond the range of an integer "
                                                              "Polars reads (128 bits)")


def _find_odd(value, depth: int = 0) -> _Odd | None:
    if isinstance(value, _Odd):
        return value
    if depth > 64:
        return None
    items = value.values() if isinstance(value, dict) else value if isinstance(value, list) else ()
    for item in items:
        found = _find_odd(item, depth + 1)
        if found is not None:
            return found
    return None


def _explain_json(line: bytes) -> tuple[str, str | None] | None:
    """(why a JSON line cannot be read, the key at fault) as Python's JSON reader sees it, or None."""
    try:
        value = json.loads(line, parse_constant=_odd_constant, parse_float=_odd_float, parse_int=_odd_int)
    except RecursionError:
        return "the line nests lists or objects too deeply", None
    except ValueError as err:
        return f"the line is not JSON ({err})", None
    if not isinstance(value, dict):
        return f"the line holds a JSON {type(value).__name__}, not an object", None
    for key, item in value.items():
        odd = _find_odd(item)
        if odd is not None:
            return f"{odd.text[:40]} {odd.why}", key
    return None


def _diagnose_jsonl(path: Path, exc: BaseException) -> StepTableError:
    """The error of a JSON-lines file Polars cannot read: its first line Polars cannot read (and the key at
    fault, where Python's reader tells it)."""
    data = path.read_bytes()
    bad = _utf8_error(path, data)
    if bad is not None:
        return bad
    ends = _record_ends(data, csv=False)
    starts = np.concatenate(([0], ends[:-1]))
    solid = [k for k in range(ends.size) if data[int(starts[k]):int(ends[k])].strip()]
    if not solid:
        return StepTableError(path, "empty_file", "the file holds no JSON line", hint="Write one JSON object "
                              "per line, one step each.")
    k = _first_failing(data, ends, lambda d: pl.read_ndjson(io.BytesIO(d), infer_schema_length=None),
                       first=solid[0])
    if k is None:
        return _unreadable(path, "JSON lines", exc)
    line = data.count(b"\n", 0, int(starts[k])) + 1
    why = _explain_json(data[int(starts[k]):int(ends[k])])
    if why is not None:
        return StepTableError(path, "bad_json", why[0], line=line, column=why[1],
                              hint="Each line holds one JSON object, one step.")
    why = _type_clash(data, starts, ends, k, line)
    if why is not None:
        return StepTableError(path, "mixed_json_types", why[0], line=line, column=why[1],
                              hint="Write each key's values as one JSON kind (numbers, lists of numbers, "
                              "true/false), or null.")
    return _unreadable(path, "JSON lines", _polars_error(data[:int(ends[k])]), line=line)


#: How many lines before a line Polars cannot read are searched for the value its type clashes with.
CLASH_LINES = 10_000


def _json_kind(value) -> str | None:
    """A JSON value's kind as Polars types a column: None (null: any column), "number", "boolean", "text",
    "list", "object"."""
    if value is None:
        return None
    if isinstance(value, bool):
        return "boolean"
    if isinstance(value, (int, float)):
        return "number"
    return {str: "text", list: "list", dict: "object"}[type(value)]


def _type_clash(data: bytes, starts: np.ndarray, ends: np.ndarray, k: int, line: int) -> tuple[str, str] | None:
    """(why, key) where line ``k``'s value of a key is of a kind Polars cannot put in one column with an
    earlier line's value of that key (two kinds but text: a list beside a number, a Boolean beside a
    number, an object beside a list), or None."""
    try:
        row = json.loads(data[int(starts[k]):int(ends[k])])
    except (ValueError, RecursionError):
        return None
    kinds = {key: _json_kind(v) for key, v in row.items()}
    for j in range(k - 1, max(k - 1 - CLASH_LINES, -1), -1):
        try:
            before = json.loads(data[int(starts[j]):int(ends[j])])
        except (ValueError, RecursionError):
            continue
        if not isinstance(before, dict):
            continue
        for key, kind in kinds.items():
            other = _json_kind(before.get(key))
            if kind is None or other is None or kind == other or "text" in (kind, other):  # Polars: text
                continue
            earlier = data.count(b"\n", 0, int(starts[j])) + 1
            return f"the value is a JSON {kind} here and a {other} on line {earlier}; a column holds one kind " \
                   "of value", key
    return None


def _polars_error(data: bytes) -> BaseException:
    try:
        pl.read_ndjson(io.BytesIO(data), infer_schema_length=None)
    except _POLARS_ERRORS as exc:
        return exc
    return ValueError("unknown error")


def _diagnose_parquet(path: Path, exc: BaseException) -> StepTableError:
    """The error of a Parquet file Polars cannot read: its first row group that does not read, where the
    footer lists them."""
    try:
        ends = row_group_ends(path)
    except Exception:  # noqa: BLE001 - pyarrow's errors: the footer itself is broken
        return _unreadable(path, "Parquet", exc)
    start = 0
    for group, end in enumerate(ends):
        try:
            pl.scan_parquet(path).slice(start, end - start).collect()
        except _POLARS_ERRORS as err:
            return _unreadable(path, "Parquet", err, row_group=group, row=start)
        start = end
    return _unreadable(path, "Parquet", exc)
