"""The steps reader over recordings whose rows leave a variable null where their game lacks it.

A file holding several games has a column for every game's variables, null
on the rows of a game whose ``data.json`` lacks it (``game_mode`` on S1 and
S3K rows, ``special_stage`` on S1 and S2 rows).  The steps reader refuses a
null in a numeric column (rule ``missing_value``), rightly for a variable
the game has (a game that is not installed is taken to lack the variables
it leaves null).  :func:`steps_reading` hands it the files as they are when
no such null is there (the common case: one game per file); otherwise a
copy of each file's rows as read (a temporary Parquet file, one row group)
with those nulls, and only those, set to 0.  The copy has the same rows in
the same order, so :func:`relocate_error` and :func:`relocate_skipped` put
each error and each skipped record back at the original file's line or row
group (and the original bytes, for CSV).

Examples
--------
>>> import polars as pl
>>> from rewardlab.sources.steps.files import TableFile
>>> from pathlib import Path
>>> t = TableFile(Path("a.parquet"), "parquet", pl.DataFrame({"game": ["SonicTheHedgehog-Genesis-v0"],
...                                                        "game_mode": [None], "x": [1]}))
>>> lacking_fills(t)
['game_mode']
"""

from __future__ import annotations

import tempfile
from contextlib import contextmanager
from pathlib import Path

import numpy as np
import polars as pl

from rewardlab.core.errors import StepTableError
from rewardlab.sources.retro import layout as L
from rewardlab.sources.steps.files import TableFile
from rewardlab.sources.steps.places import SKIPPED_SCHEMA

__all__ = ["lacking_fills", "lacking_mask", "steps_reading", "relocate_error", "relocate_skipped"]


def lacking_mask(frame: pl.DataFrame, name: str) -> pl.Expr:
    """True on the rows of ``frame`` whose game lacks variable ``name``: an installed game whose ``data.json``
    has no such variable, or a game stable-retro does not have (its variables are not known)."""
    games = frame.get_column(L.GAME).cast(pl.String).drop_nulls().unique().to_list() if L.GAME in frame.columns \
        else []
    lacking = [g for g in games if (known := L.game_variables(g)) is None or name not in known]
    return pl.col(L.GAME).cast(pl.String).is_in(lacking)


def lacking_fills(table: TableFile) -> list[str]:
    """The variable columns of ``table`` null on some row whose game lacks the variable."""
    frame = table.frame
    if L.GAME not in frame.columns:
        return []
    out = []
    for name in frame.columns:
        if name in L.LAYOUT_COLUMNS or not frame.get_column(name).null_count():
            continue
        if frame.select((pl.col(name).is_null() & lacking_mask(frame, name)).any()).item():
            out.append(name)
    return out


@contextmanager
def steps_reading(files: list[Path], tables: list[TableFile]):
    """Yield ``(paths for the steps reader, {temporary path: original index} or None)``; temporary files
    (when some variable is null where its game lacks it) are removed on exit."""
    fills = [lacking_fills(t) for t in tables]
    if not any(fills):
        yield files, None
        return
    with tempfile.TemporaryDirectory(prefix="rewardlab-retro-") as folder:
        paths, index = [], {}
        for k, (table, names) in enumerate(zip(tables, fills)):
            frame = table.as_read()
            if names:
                frame = frame.with_columns(pl.when(pl.col(n).is_null() & lacking_mask(frame, n)).then(0)
                                           .otherwise(pl.col(n)).cast(frame.schema[n]).alias(n) for n in names)
            path = Path(folder) / f"{k:05d}.parquet"
            frame.write_parquet(path, row_group_size=max(frame.height, 1), statistics=False)
            paths.append(path)
            index[str(path)] = k
        yield paths, index


def relocate_error(err: StepTableError, index: dict[str, int], tables: list[TableFile]) -> StepTableError:
    """``err`` (raised on a temporary copy) at the original file's line or row group."""
    k = index.get(err.path)
    if k is None:
        return err
    table = tables[k]
    message = err.message
    for temp, j in index.items():
        message = message.replace(temp, str(tables[j].path))
    where = table.where(err.row) if err.row is not None else {}
    return StepTableError(table.path, err.rule, message, column=err.column, hint=err.hint, **where)


def relocate_skipped(skipped: pl.DataFrame, index: dict[str, int], tables: list[TableFile]) -> pl.DataFrame:
    """The skipped records of temporary copies, placed in the original files (line or row group, bytes)."""
    if not skipped.height:
        return skipped
    ks = np.array([index[f] for f in skipped.get_column("file").to_list()], dtype=np.int64)
    rows = skipped.get_column("row").cast(pl.Int64).to_numpy()
    files, line, group, raw = [], [None] * rows.size, [None] * rows.size, [None] * rows.size
    files = [str(tables[k].path) for k in ks.tolist()]
    for k in np.unique(ks).tolist():
        mine = np.flatnonzero(ks == k)
        table = tables[k]
        places = table.places(rows[mine])
        for key, target in (("line", line), ("row_group", group)):
            if key in places:
                for i, v in zip(mine.tolist(), places[key].tolist()):
                    target[i] = v
        if table.kind != "parquet":
            for i, b in zip(mine.tolist(), table.raw(rows[mine].tolist())):
                raw[i] = b
    return skipped.with_columns(pl.Series("file", files, pl.String), pl.Series("line", line, pl.UInt32),
                                pl.Series("row_group", group, pl.Int32), pl.Series("raw", raw, pl.Binary)
                                ).select(list(SKIPPED_SCHEMA))
