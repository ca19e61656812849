"""Reading RLlib's files into pieces: the rows of one batch of a JSON line, or of one Parquet row group.

Which files a load reads (a folder's ``*.json`` / ``*.parquet`` files, less
readable files that are clearly not sample data), how a JSON line's
``SampleBatch`` / ``MultiAgentBatch`` or a Parquet row group becomes NumPy
columns, and the problem of a line or row group (a
:class:`~rewardlab.sources.rllib.columns.Problem`, rule names in
:data:`rewardlab.sources.rllib.skipped.SKIP_REASONS`); the rules on one column's values are in
:mod:`rewardlab.sources.rllib.columns`.

Examples
--------
>>> unit_name("line", 3), unit_name("row group", 0), unit_name("line", -1)
('line 3', 'row group 0', 'the whole file')
"""

from __future__ import annotations

import json
import re
import warnings
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import polars as pl

from rewardlab.core.errors import FilesLeftOutWarning, ParameterError
from rewardlab.core.files import as_paths, check_input
from rewardlab.sources.rllib.columns import (PICKLE_OVERHEAD, STEP_VALUE_BYTES, Problem, as_array, decode,
                                             step_columns)
from rewardlab.sources.storage import has_rewardlab_metadata

__all__ = ["DEFAULT_AGENT", "REQUIRED_COLUMNS", "parse_json", "BATCH_HEAD", "Piece", "unit_name",
           "batch_columns", "line_columns", "line_batches", "json_lines", "arrow_column", "column_array",
           "packed_rows", "id_column", "parquet_row_groups", "input_files", "folder_files", "maybe_sample_data",
           "is_rllib_parquet", "unit_kind", "sniff_rllib"]

#: The agent of Parquet rows whose ``agent_id`` is empty (RLlib's ``DEFAULT_AGENT_ID``).
DEFAULT_AGENT = "default_agent"


REQUIRED_COLUMNS = ("eps_id", "t", "obs", "actions", "rewards")


try:  # the rllib extra's JSON parser (about 2.5x the standard library's on RLlib lines)
    from orjson import loads as parse_json
except ImportError:  # the same values, parsed by the standard library
    parse_json = json.loads


BATCH_HEAD = re.compile(rb'^\s*\{\s*"type"\s*:\s*"(SampleBatch|MultiAgentBatch)"')


@dataclass
class Piece:
    """The rows of one batch of one JSON line, or of one Parquet row group, as NumPy columns."""

    file: int          # index into the file list
    unit: int          # 1-based line (JSON) or 0-based row group (Parquet)
    cols: dict         # column -> NumPy array, one row per step

    @property
    def height(self) -> int:
        return len(self.cols["t"])


def unit_name(kind: str, unit: int) -> str:
    """How a message names a line or row group (``unit`` -1: the whole file)."""
    if unit < 0:
        return "the whole file"
    return f"line {unit}" if kind == "line" else f"row group {unit}"


def batch_columns(batch: dict, policy: str, *, allow_pickle: bool) -> dict:
    """The columns rewardlab keeps of one SampleBatch (a dict of columns)."""
    missing = [c for c in REQUIRED_COLUMNS if c not in batch]
    if "terminateds" not in batch and "dones" not in batch:
        missing.append("terminateds (or dones)")
    if missing:
        raise Problem(missing[0], "missing_column",
                   f"the batch lacks {', '.join(missing)}; it has {', '.join(sorted(batch)) or 'none'}")
    steps = next((len(batch[c]) for c in ("rewards", "eps_id", "t", "obs") if isinstance(batch[c], list)), None)
    if steps == 0 and all(isinstance(batch[c], list) for c in REQUIRED_COLUMNS):
        return {}
    obs = as_array("obs", batch["obs"], steps, allow_pickle=allow_pickle)
    n = obs.shape[0]

    def one_a_step(name):  # one value a step: a packed one decodes to at most 8 bytes a step
        return as_array(name, batch[name], n, allow_pickle=allow_pickle, per_step=True)

    cols = {"eps_id": one_a_step("eps_id"),
            "agent": one_a_step("agent_index") if "agent_index" in batch else np.zeros(n, dtype=np.int64),
            "t": one_a_step("t")}
    for name in ("eps_id", "agent", "t"):
        if cols[name].ndim != 1 or cols[name].dtype.kind not in "iu":
            raise Problem("agent_index" if name == "agent" else name, "mixed_dtype",
                       f"should hold one integer per step, found {cols[name].dtype} of shape "
                       f"{cols[name].shape}")
    t = cols["t"]
    if t.dtype.kind == "u" and n and t.max() > np.iinfo(np.int64).max:
        raise Problem("t", "mixed_dtype", f"step {int(np.argmax(t > np.iinfo(np.int64).max))} of the batch is "
                      f"{t.max()}, past the largest 64-bit step")
    actions = as_array("actions", batch["actions"], n, allow_pickle=allow_pickle)
    reward = one_a_step("rewards")
    done = "terminateds" if "terminateds" in batch else "dones"
    terminated = one_a_step(done)
    truncated = one_a_step("truncateds") if done == "terminateds" and "truncateds" in batch else np.zeros(n, bool)
    new_obs = (as_array("new_obs", batch["new_obs"], n, allow_pickle=allow_pickle,
                        limit=obs.nbytes + PICKLE_OVERHEAD)  # obs's shape and dtype
               if "new_obs" in batch else None)
    return step_columns(cols, policy, obs, new_obs, actions, reward, terminated, truncated, done=done)


def line_columns(obj, *, allow_pickle: bool) -> list[dict]:
    """The columns of a line's batches (an empty batch has none)."""
    return [f for f in line_batches(obj, allow_pickle=allow_pickle) if f]


def line_batches(obj, *, allow_pickle: bool) -> list[dict]:
    """The columns of each batch of a parsed line (raises :class:`Problem`)."""
    if not isinstance(obj, dict):
        raise Problem(None, "bad_json", f"the line is a JSON {type(obj).__name__}, not an object")
    kind = obj.get("type")
    if kind == "SampleBatch":
        return [batch_columns({k: v for k, v in obj.items() if k != "type"}, "default_policy",
                             allow_pickle=allow_pickle)]
    if kind == "MultiAgentBatch":
        batches = obj.get("policy_batches")
        if not isinstance(batches, dict):
            raise Problem("policy_batches", "missing_column", "a MultiAgentBatch line needs a "
                       "policy_batches object")
        out = []
        for policy, batch in batches.items():
            if not isinstance(batch, dict):
                raise Problem("policy_batches", "bad_type", f"policy {policy!r}: the batch is a "
                           f"{type(batch).__name__}, not an object")
            try:
                out.append(batch_columns(batch, str(policy), allow_pickle=allow_pickle))
            except Problem as bad:
                bad.message = f"policy {policy!r}: " + bad.message  # + keeps a Text's remedy terms
                raise
        return out
    raise Problem("type", "bad_type", f"type should be 'SampleBatch' or 'MultiAgentBatch', found {kind!r}")


def json_lines(path: Path, file: int, *, allow_pickle: bool, pieces: list, bad: list, raws: dict | None):
    """Parse a file's lines; ``raws``: where to keep its lines' bytes (skip mode), or None."""
    data = path.read_bytes()
    lines = data.split(b"\n")
    if lines and lines[-1] == b"":
        lines.pop()
    if raws is not None:
        raws[file] = lines
    for number, raw in enumerate(lines, 1):
        if not raw.strip():
            continue
        try:
            try:
                obj = parse_json(raw)
            except ValueError as exc:
                raise Problem(None, "bad_json", f"not JSON ({exc})") from None
            except RecursionError:  # the standard library's parser (without orjson) recurses
                raise Problem(None, "bad_json", "not JSON (nested too deeply to parse)") from None
            for frame in line_columns(obj, allow_pickle=allow_pickle):
                pieces.append(Piece(file, number, frame))
        except Problem as problem:
            bad.append((file, number, problem))


def arrow_column(column):
    """A Parquet column as plain Arrow (Ray Data's tensor extension type -> its storage)."""
    import pyarrow as pa

    if isinstance(column.type, pa.ExtensionType):
        return pa.chunked_array([c.storage for c in column.chunks], type=column.type.storage_type)
    return column


def _numeric_arrow(kind) -> bool:
    import pyarrow as pa

    return pa.types.is_boolean(kind) or pa.types.is_integer(kind) or pa.types.is_floating(kind)


def _is_text(kind) -> bool:
    import pyarrow as pa

    return (pa.types.is_string(kind) or pa.types.is_large_string(kind)
            or getattr(pa.types, "is_string_view", lambda k: False)(kind))


def column_array(table, name: str, *, allow_pickle: bool, per_row: bool = False) -> np.ndarray:
    """One Parquet column of a row group as a NumPy array (packed columns decoded; ``per_row``: one
    value a row, so a packed row decodes to at most 8 bytes)."""
    import pyarrow as pa

    column = arrow_column(table.column(name))
    n = table.num_rows
    if _is_text(column.type):  # packed per row
        return packed_rows(name, column, allow_pickle=allow_pickle, per_row=per_row)
    if column.null_count:
        raise Problem(name, "missing_column", f"has {column.null_count} empty values")
    if pa.types.is_fixed_size_list(column.type):
        column = column.cast(pa.large_list(column.type.value_type))
    if pa.types.is_list(column.type) or pa.types.is_large_list(column.type):
        if not _numeric_arrow(column.type.value_type):
            raise Problem(name, "mixed_dtype", f"holds lists of {column.type.value_type} values, not of numbers")
        series = pl.from_arrow(column)
        lengths = series.list.len()
        if lengths.n_unique() > 1:
            first = int(lengths[0])
            row = int((lengths != first).arg_true()[0])
            raise Problem(name, "ragged", f"row {row} of the row group has {lengths[row]} values, row 0 has "
                       f"{first} (ragged values)")
        width = int(lengths[0]) if n else 0
        if n and width == 0:
            raise Problem(name, "column_length", "has no values in a step (every row's list is empty)")
        flat = series.explode()
        if flat.null_count():
            row = int(flat.is_null().arg_true()[0]) // max(width, 1)
            raise Problem(name, "missing_column", f"row {row} of the row group has an empty (null) value in "
                          "its list")
        return flat.to_numpy().reshape(n, width)
    if not _numeric_arrow(column.type):
        raise Problem(name, "mixed_dtype", f"holds {column.type} values, not numbers")
    return pl.from_arrow(column).to_numpy()


def packed_rows(name: str, column, *, allow_pickle: bool, per_row: bool = False) -> np.ndarray:
    """A Parquet column RLlib packed row by row, decoded: every row the same shape and dtype.  The
    first row decodes within :data:`~rewardlab.sources.rllib.compression.MAX_UNPACKED_BYTES` (8
    bytes with ``per_row``), every other within the first's size; a value repeated (Parquet's
    dictionary) is decoded once."""
    values = column.to_pylist()
    if None in values:
        raise Problem(name, "missing_column", f"row {values.index(None)} of the row group is empty")
    limit = STEP_VALUE_BYTES + PICKLE_OVERHEAD if per_row else None
    decoded: dict = {}
    first = None
    rows = []
    for row, text in enumerate(values):
        arr = decoded.get(text)
        if arr is None:
            arr = decode(name, text, allow_pickle=allow_pickle, limit=limit, where=f"row {row} of the row group: ")
            if first is None:  # row 0: the others hold as much
                first = arr
                limit = arr.nbytes + PICKLE_OVERHEAD if limit is None else min(limit, arr.nbytes + PICKLE_OVERHEAD)
            elif arr.shape != first.shape:
                raise Problem(name, "ragged", f"row {row} of the row group decodes to shape {arr.shape}, row 0 "
                              f"to {first.shape} (ragged values)")
            elif arr.dtype != first.dtype:
                raise Problem(name, "mixed_dtype", f"row {row} of the row group decodes to {arr.dtype}, row 0 "
                              f"to {first.dtype}")
            decoded[text] = arr
        rows.append(arr)
    return np.stack(rows) if rows else np.zeros((0,))


def id_column(table, name: str, default: str | None = None) -> pl.Series:
    """A Parquet id column (episode, agent, module) as text; ``default`` fills empty values (None: an
    empty value is a problem)."""
    import pyarrow as pa

    column = arrow_column(table.column(name))
    kind = column.type.value_type if pa.types.is_dictionary(column.type) else column.type  # pandas' category
    if not (_is_text(kind) or pa.types.is_integer(kind) or pa.types.is_null(kind)):
        raise Problem(name, "mixed_dtype", f"holds {kind} values, not text or integer ids")
    series = pl.from_arrow(column)
    if not isinstance(series, pl.Series):
        series = series.to_series()
    series = series.cast(pl.String)
    if default is not None:
        return series.fill_null(default)
    if series.null_count():
        raise Problem(name, "missing_column", f"row {int(series.is_null().arg_true()[0])} of the row group is "
                      "empty")
    return series


#: The Parquet columns a load reads.
_READ_COLUMNS = ("eps_id", "agent_id", "module_id", "obs", "new_obs", "actions", "rewards", "terminateds",
                 "truncateds")


def parquet_row_groups(path: Path, file: int, *, allow_pickle: bool, pieces: list, bad: list):
    """Read a Parquet file's row groups into ``pieces``; problems go to ``bad``."""
    import pyarrow.parquet as pq

    try:
        parquet = pq.ParquetFile(path)
        names = parquet.schema_arrow.names
    except Exception as exc:  # pyarrow raises ArrowInvalid, OSError
        bad.append((file, -1, Problem(None, "bad_parquet", f"not a Parquet file ({exc})")))
        return
    needed = ["eps_id", "obs", "actions", "rewards", "terminateds"]
    missing = [c for c in needed if c not in names]
    if missing:
        bad.append((file, -1, Problem(missing[0], "missing_column", f"the rows lack {', '.join(missing)}; "
                                   f"the file has {', '.join(names)}")))
        return
    if len(set(names)) < len(names):
        twice = next(c for c in names if names.count(c) > 1)
        bad.append((file, -1, Problem(twice, "bad_parquet", f"the file has two columns named {twice!r}")))
        return
    for group in range(parquet.num_row_groups):
        try:
            try:
                table = parquet.read_row_group(group)
            except Exception as exc:  # pyarrow raises ArrowInvalid, OSError, ...
                raise Problem(None, "bad_parquet", f"the row group cannot be read ({exc})") from None
            n = table.num_rows
            for name in _READ_COLUMNS:  # a corrupt page can hold text that is not UTF-8, or bad offsets
                if name in names:
                    try:
                        table.column(name).validate(full=True)
                    except Exception as exc:  # pyarrow raises ArrowInvalid
                        raise Problem(name, "bad_parquet", f"the column's values are corrupt ({exc})") from None

            def get(name, per_row=False):
                return column_array(table, name, allow_pickle=allow_pickle, per_row=per_row)

            # ids stay Polars text columns (concatenated per load, never Python objects row by row)
            cols = {"eps_id": id_column(table, "eps_id"),
                    "agent": (id_column(table, "agent_id", DEFAULT_AGENT) if "agent_id" in names
                              else pl.repeat(DEFAULT_AGENT, n, eager=True, dtype=pl.String)),
                    "t": np.full(n, -1, dtype=np.int64)}
            policy = (id_column(table, "module_id", "default_policy") if "module_id" in names
                      else pl.repeat("default_policy", n, eager=True, dtype=pl.String))
            obs = get("obs")
            if obs.ndim == 0 or obs.shape[0] != n:
                raise Problem("obs", "column_length", f"has {obs.shape[0] if obs.ndim else 0} values, the row "
                              f"group has {n} rows")
            truncated = get("truncateds", True) if "truncateds" in names else np.zeros(n, dtype=bool)
            new_obs = get("new_obs") if "new_obs" in names else None
            frame = step_columns(cols, policy, obs, new_obs, get("actions"), get("rewards", True),
                                 get("terminateds", True), truncated, where="row {} of the row group")
            frame["_row"] = np.arange(n, dtype=np.uint32)
            pieces.append(Piece(file, group, frame))
        except Problem as problem:
            bad.append((file, group, problem))


def input_files(paths) -> list[Path]:
    """The files a load reads: the files named, and the RLlib files of the folders named."""
    out: list[Path] = []
    for p in as_paths(paths):
        check_input(p, folder=True)
        if p.is_dir():
            found, left_out = folder_files(p)
            if left_out:
                warnings.warn(FilesLeftOutWarning(
                    f"left out {len(left_out)} file{'s' if len(left_out) > 1 else ''} of {p} that "
                    f"{'are' if len(left_out) > 1 else 'is'} not RLlib sample data (a JSON file whose first "
                    "line or whole text is JSON but not a SampleBatch / MultiAgentBatch, a Parquet file "
                    f"without RLlib's step columns): {', '.join(str(q) for q in left_out)}"), stacklevel=4)
            if not found:
                raise ParameterError("paths", "should name RLlib output files or folders holding some "
                                     "(*.json lines of SampleBatch / MultiAgentBatch, *.parquet rows)", str(p))
            out += found
        else:
            out.append(p)
    if not out:
        raise ParameterError("paths", "should name at least one file", list(paths))
    return out


def folder_files(folder: Path) -> tuple[list[Path], list[Path]]:
    """A folder's ``*.json`` / ``*.parquet`` files: (RLlib's, left out).  A file is left out only when
    it is readable and clearly not sample data (RLlib's output folders also hold other files: Tune's
    ``params.json`` / ``result.json``, stats); a file that cannot be read is taken, so the reader
    reports its bad lines and keeps its good episodes."""
    found, left_out = [], []
    for q in sorted(q for q in folder.rglob("*") if q.is_file() and q.suffix.lower() in (".json", ".parquet")):
        (found if maybe_sample_data(q) else left_out).append(q)
    return found, left_out


def maybe_sample_data(path: Path) -> bool:
    """False only for a readable file that is clearly not RLlib sample data."""
    if path.suffix.lower() == ".parquet":
        import pyarrow.parquet as pq

        try:
            pq.read_schema(path)
        except Exception:  # pyarrow raises ArrowInvalid, OSError: the reader reports it
            return True
        return is_rllib_parquet(path)
    try:
        with open(path, "rb") as f:
            first = next((line for line in f if line.strip()), b"")
    except OSError:  # the reader reports it
        return True
    if not first.strip() or BATCH_HEAD.match(first):
        return True
    try:
        obj = parse_json(first)
    except (ValueError, RecursionError):
        try:  # a JSON document over several lines (stats, params written with indent) is not ours
            obj = parse_json(path.read_bytes())
        except (ValueError, RecursionError, OSError):  # a corrupt first line: the reader reports it
            return True
    return isinstance(obj, dict) and obj.get("type") in ("SampleBatch", "MultiAgentBatch")


def is_rllib_parquet(path: Path) -> bool:
    """A Parquet file with RLlib's step columns and no rewardlab metadata (a rewardlab file is a dataset)."""
    import pyarrow.parquet as pq

    names = pq.read_schema(path).names
    return (all(c in names for c in ("eps_id", "obs", "new_obs", "rewards", "terminateds"))
            and not has_rewardlab_metadata(path))


def unit_kind(path: Path) -> str:
    """``"row group"`` for a Parquet file, ``"line"`` for JSON lines."""
    return "row group" if path.suffix.lower() == ".parquet" else "line"


def sniff_rllib(path) -> bool:
    """True for a JSON-lines file whose first line starts ``{"type": "SampleBatch"`` (or
    ``MultiAgentBatch``), or a Parquet file with RLlib's step columns and no rewardlab spec.

    Examples
    --------
    >>> sniff_rllib("data/rllib/old_stack_json/data/output-2026-11-22_23-16-02_worker-0_0.json")  # doctest: +SKIP
    True
    """
    path = Path(path)
    try:
        if path.suffix.lower() == ".parquet":
            return is_rllib_parquet(path)
        with open(path, "rb") as f:
            return BATCH_HEAD.match(f.read(256)) is not None
    except Exception:  # not readable, not Parquet: not ours
        return False
