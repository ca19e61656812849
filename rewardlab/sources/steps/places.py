"""Where a step-table row came from: errors naming file and line, and the skip mode's records and side file.

The reader checks its rows in *frame order*: the files' rows concatenated,
gathered per (episode, agent) when agents take turns, then the final rows of
the N+1 layout (:mod:`rewardlab.sources.steps.finals`) after the steps.
:class:`RowPlaces` maps a row of that order back to its file and its place
there; :func:`skipped_records` and :func:`write_skipped` list and keep
skipped rows in *file order* (a final row beside its episode's steps).

Examples
--------
>>> SKIPPED_SCHEMA["line"]
UInt32
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import polars as pl

from rewardlab.core.errors import StepTableError
from rewardlab.core.files import atomic_open, atomic_path
from rewardlab.sources.steps import checks as C
from rewardlab.sources.steps.files import TableFile

__all__ = ["RowPlaces", "SKIPPED_SCHEMA", "skipped_records", "write_skipped"]

#: One row per skipped table row.
SKIPPED_SCHEMA = {"file": pl.String, "line": pl.UInt32, "row_group": pl.Int32, "row": pl.UInt32,
                  "column": pl.String, "reason": pl.String, "message": pl.String, "raw": pl.Binary}


class RowPlaces:
    """Frame rows -> (file, row in file).

    Parameters
    ----------
    tables : list of TableFile
        The files, in the order read.
    order : int array, optional
        Each frame row's place in the files' concatenation; None when the
        frame keeps the files' order.

    Examples
    --------
    >>> import polars as pl
    >>> table = TableFile(Path("a.parquet"), "parquet", pl.DataFrame({"t": [0, 1, 2]}))
    >>> RowPlaces([table, table], np.array([3, 0, 1])).original(np.array([0, 2]))
    array([1, 3])
    """

    def __init__(self, tables: list[TableFile], order: np.ndarray | None = None):
        self.tables = tables
        self.order = order
        self.starts = np.concatenate(([0], np.cumsum([t.frame.height for t in tables])))

    def original(self, rows: np.ndarray) -> np.ndarray:
        """The rows' places in the files' concatenation, in file order."""
        return rows if self.order is None else np.sort(self.order[rows])

    def locate(self, row: int) -> tuple[TableFile, int]:
        """The file of frame row ``row`` and its 0-based row there."""
        if self.order is not None:
            row = int(self.order[row])
        k = int(np.searchsorted(self.starts, row, side="right")) - 1
        return self.tables[k], int(row - self.starts[k])

    def error(self, row: int, column: str | None, rule: str, message: str, hint: str) -> StepTableError:
        """The error for frame row ``row``, naming its file and line (row group)."""
        table, local = self.locate(row)
        return StepTableError(table.path, rule, message, column=column, hint=hint, **table.where(local))


def skipped_records(rows: np.ndarray, problems: C.Problems, where: RowPlaces) -> pl.DataFrame:
    """One record per skipped frame row (schema :data:`SKIPPED_SCHEMA`), in file order, placed with
    whole-array lookups per file."""
    original = rows if where.order is None else where.order[rows]
    sort = np.argsort(original, kind="stable")
    rows, original = rows[sort], original[sort]
    n = rows.size
    k = np.searchsorted(where.starts, original, side="right") - 1
    local = original - where.starts[k]
    files = np.empty(n, dtype=object)
    line = np.full(n, None, dtype=object)
    row_group = np.full(n, None, dtype=object)
    raw_bytes = np.full(n, None, dtype=object)
    for i, table in enumerate(where.tables):
        mine = np.flatnonzero(k == i)
        if mine.size == 0:
            continue
        files[mine] = str(table.path)
        places = table.places(local[mine])
        if "line" in places:
            line[mine] = places["line"].tolist()
        if "row_group" in places:
            row_group[mine] = places["row_group"].tolist()
        if table.kind != "parquet":
            raw_bytes[mine] = table.raw(local[mine].tolist())
    broken = (None, "in_broken_episode", "the row belongs to an episode skipped for another row")
    reasons = [r or broken for r in problems.reasons(rows)]
    return pl.DataFrame({"file": files.tolist(), "line": line.tolist(), "row_group": row_group.tolist(),
                         "row": local.tolist(), "column": [r[0] for r in reasons],
                         "reason": [r[1] for r in reasons], "message": [r[2] for r in reasons],
                         "raw": raw_bytes.tolist()}, schema=SKIPPED_SCHEMA)


def write_skipped(path: Path, rows: np.ndarray, files_rows: pl.DataFrame, where: RowPlaces,
                  overwrite: bool) -> None:
    """The side file of skipped frame ``rows``: the original lines, in file order (a CSV's header before
    each file's lines when it changes), or a Parquet file of the rows as read (``files_rows``: the files'
    rows concatenated, in file order)."""
    rows = where.original(rows)
    if where.tables[0].kind == "parquet":
        with atomic_path(path, overwrite=overwrite) as tmp:
            files_rows[rows.tolist()].write_parquet(tmp)
        return
    with atomic_open(path, "wb", overwrite=overwrite) as f:
        header = None
        for k, t in enumerate(where.tables):
            mine = rows[(rows >= where.starts[k]) & (rows < where.starts[k + 1])] - where.starts[k]
            if mine.size == 0:
                continue
            if t.kind == "csv" and t.header() != header:
                header = t.header()
                f.write(header + b"\n")
            for line in t.raw(mine.tolist()):
                f.write(line + b"\n")
