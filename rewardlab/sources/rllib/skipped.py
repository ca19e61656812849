"""Skip-mode bookkeeping of an RLlib load: which episodes go, and what is kept of them (lines, rows, side files).

Examples
--------
>>> sorted(SKIPPED_SCHEMA)[:3]
['column', 'file', 'line']
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import polars as pl

from rewardlab.sources.results import SKIPPED_LINES_SCHEMA

from rewardlab.core.files import atomic_path
from rewardlab.core.fronts import Fix, Text
from rewardlab.sources.rllib.files import unit_name

__all__ = ["SKIP_REASONS", "SKIPPED_SCHEMA", "bad_episodes", "unit_keys", "skipped_lines", "skipped_rows",
           "write_skipped_rows", "drop_skipped_episodes"]

#: Why an episode (or line) can be skipped.
SKIP_REASONS: dict[str, str] = {
    "bad_json": "the line is not a JSON object",
    "bad_parquet": "the file is a Parquet file",
    "bad_type": "the line's type is SampleBatch or MultiAgentBatch",
    "missing_column": "a batch has eps_id, t, obs, actions, rewards and terminateds or dones",
    "column_length": "every column of a batch has one value per step",
    "undecodable_column": "a compressed column decodes to a numeric array, its bytes matching its shape",
    "oversized_column": "a compressed column decodes within the size its values can need",
    "unsafe_pickle": Text("a compressed column holds arrays only (or ", Fix("allow_pickle", True, verb="",
                                                                           option=True), ")"),
    "ragged": "every step of a column has the same number of values",
    "mixed_dtype": "a column holds numbers, of one shape and dtype in every line and file",
    "bad_flag": "flags are true/false (or 1/0)",
    "not_finite": "the recorded reward is a finite number (no NaN, no inf)",
    "step_order": "steps increase within an episode (no repeats, in file order)",
    "next_obs_mismatch": "new_obs equals the following step's obs of the same episode and agent",
    "flag_before_end": "terminated / truncated fire only on an episode's last step",
    "unfinished": "an episode's last step is terminated or truncated",
    "in_broken_episode": "the episode has rows next to an unreadable line",
}


SKIPPED_SCHEMA = SKIPPED_LINES_SCHEMA  # the kanachan reader's table of skipped lines


def bad_episodes(frame, problems, bad, files, kind) -> tuple[np.ndarray, dict]:
    """Episodes to drop (bool per episode ordinal) and the first reason of each."""
    if "_episode" not in frame.columns:  # no line or row group was readable: no episodes
        return np.zeros(0, dtype=bool), {}
    n_eps = int(frame["_episode"].max()) + 1 if frame.height else 0
    drop = np.zeros(n_eps, dtype=bool)
    reason: dict[int, tuple[str, str]] = {}
    episode = frame["_episode"].to_numpy()
    for row, column, rule, message in problems:
        e = int(episode[row])
        drop[e] = True
        reason.setdefault(e, (rule, f"column {column}: {message}"))
    if bad and frame.height:
        # an unreadable line (row group, file) may hold steps of the episodes on the readable lines
        # just before and after it, in the order of all lines of all files (episodes go on across
        # files; blank lines and lines of other problems are passed over)
        key = unit_keys(frame["_file"].to_numpy(), frame["_unit"].to_numpy())
        units = np.unique(key)
        for f, line, problem in bad:
            lo, hi = ((f << 32) + line, (f << 32) + line) if line >= 0 else ((f << 32) - 1, (f + 1) << 32)
            before = units[units < lo]
            after = units[units > hi]
            near = (key == lo) | (key == hi)
            if before.size:
                near |= key == before[-1]
            if after.size:
                near |= key == after[0]
            for e in np.unique(episode[near]):
                drop[int(e)] = True
                reason.setdefault(int(e), ("in_broken_episode", f"the episode has rows next to {files[f]} "
                                           f"{unit_name(kind, line)}, which was skipped ({problem.rule})"))
    return drop, reason


def unit_keys(file: np.ndarray, unit: np.ndarray) -> np.ndarray:
    """One int64 per (file, line or row group), ordered as the files and lines are."""
    return (file.astype(np.int64) << 32) + unit.astype(np.int64)


def skipped_lines(frame, problems, bad, files, raws) -> pl.DataFrame:
    """JSON input: one entry per skipped line, its bytes kept as they were."""
    drop, reason = bad_episodes(frame, problems, bad, files, "line")
    entries: dict[tuple[int, int], tuple[str, str]] = {}
    for f, line, problem in bad:
        entries[(f, line)] = (problem.rule, (f"column {problem.column}: " if problem.column else "")
                              + problem.message)
    if frame.height and drop.any():
        rows = frame.filter(pl.Series(drop[frame["_episode"].to_numpy()]))
        for f, line, e in rows.select("_file", "_unit", "_episode").unique().iter_rows():
            entries.setdefault((f, line), reason[e])
    if not entries:
        return pl.DataFrame(schema=SKIPPED_SCHEMA)
    keys = sorted(entries)
    raw = [raws[f][line - 1] for f, line in keys]
    return pl.DataFrame({
        "file": [str(files[f]) for f, _ in keys], "line": [line for _, line in keys],
        "column": [None] * len(keys), "reason": [entries[k][0] for k in keys],
        "message": [entries[k][1] for k in keys],
        "text": [r.decode("utf-8", "replace").removesuffix("\r") for r in raw], "raw": raw,
    }, schema=SKIPPED_SCHEMA)


def skipped_rows(frame, problems, bad, files) -> tuple[pl.DataFrame, list[tuple[int, int, int]]]:
    """Parquet: one entry per skipped row (``line`` empty; the message names row group and row),
    and where each is: (file index, row group, row), in file order."""
    import pyarrow.parquet as pq

    drop, reason = bad_episodes(frame, problems, bad, files, "row group")
    found: dict[tuple[int, int, int], tuple[str, str]] = {}
    for f, group, problem in bad:
        message = (f"column {problem.column}: " if problem.column else "") + problem.message
        try:
            meta = pq.ParquetFile(files[f]).metadata
            groups = range(meta.num_row_groups) if group < 0 else [group]
            sizes = {g: meta.row_group(g).num_rows for g in groups}
        except Exception:  # not Parquet at all: no rows to keep
            sizes = {}
        for g, size in sizes.items():
            for r in range(size):
                found.setdefault((f, g, r), (problem.rule, message))
    if frame.height and drop.any():
        rows = frame.filter(pl.Series(drop[frame["_episode"].to_numpy()]))
        for f, g, r, e in rows.select("_file", "_unit", "_row", "_episode").iter_rows():
            found.setdefault((f, g, r), reason[e])
    where = sorted(found)
    skipped = pl.DataFrame({
        "file": [str(files[f]) for f, _, _ in where], "line": [None] * len(where),
        "column": [None] * len(where), "reason": [found[k][0] for k in where],
        "message": [f"row group {g}, row {r}: {found[(f, g, r)][1]}" for f, g, r in where],
        "text": [""] * len(where), "raw": [b""] * len(where)}, schema=SKIPPED_SCHEMA)
    return skipped, where


def write_skipped_rows(where, files, path: Path, *, overwrite: bool) -> None:
    """The skipped Parquet rows, value for value, plus ``rewardlab_file`` / ``_row_group`` / ``_row``.

    A column that cannot be read (a corrupt page) is left out of its rows; text that is not UTF-8 is
    kept as bytes; a column whose type differs between files is kept under ``name (type)`` for the
    rows whose type is not the first one's."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    tables = []
    groups: dict[tuple[int, int], list[int]] = {}
    for f, g, r in where:
        groups.setdefault((f, g), []).append(r)
    kinds: dict[str, object] = {}  # each column's type, as first read
    for (f, g), rows in groups.items():
        columns = _readable_columns(pq.ParquetFile(files[f]), g, pa.array(rows, pa.int64()))
        named = {}
        for name, column in columns.items():
            first = kinds.get(name)
            if first is None or pa.types.is_null(first):
                kinds[name] = column.type
            elif column.type != first and not pa.types.is_null(column.type):
                name = f"{name} ({column.type})"
            named[name] = column
        n = len(rows)
        named.update({"rewardlab_file": pa.array([str(files[f])] * n),
                      "rewardlab_row_group": pa.array([g] * n, pa.int64()),
                      "rewardlab_row": pa.array(rows, pa.int64())})
        tables.append(pa.table(named))
    table = pa.concat_tables(tables, promote_options="default") if tables else pa.table({})
    with atomic_path(path, overwrite=overwrite) as tmp:
        pq.write_table(table, tmp)


def _readable_columns(parquet, group: int, rows) -> dict:
    """The ``rows`` of each column of a row group that can be read (a corrupt column is left out)."""
    import pyarrow as pa

    try:
        table = parquet.read_row_group(group)
        read = dict(zip(table.column_names, table.columns))
    except Exception:  # a corrupt page (pyarrow raises OSError, ArrowInvalid): column by column
        read = {}
        for name in dict.fromkeys(parquet.schema_arrow.names):
            try:
                read[name] = parquet.read_row_group(group, columns=[name]).column(0)
            except Exception:  # this column's pages are corrupt
                continue
    out = {}
    for name, column in read.items():
        try:
            column.validate(full=True)
        except Exception:  # pyarrow raises ArrowInvalid: text that is not UTF-8, or broken offsets
            if not (pa.types.is_string(column.type) or pa.types.is_large_string(column.type)):
                continue
            column = column.cast(pa.large_binary() if pa.types.is_large_string(column.type) else pa.binary())
            try:
                column.validate(full=True)
            except Exception:  # broken offsets
                continue
        out[name] = column.take(rows)
    return out


def drop_skipped_episodes(frame, problems, bad, files, kind) -> pl.DataFrame:
    """The frame without the skipped episodes."""
    drop, _ = bad_episodes(frame, problems, bad, files, kind)
    if not frame.height:
        return frame
    return frame.filter(~pl.Series(drop[frame["_episode"].to_numpy()]))
