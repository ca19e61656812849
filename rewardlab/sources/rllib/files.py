"""Reading RLlib's files into pieces: the rows of one batch of a JSON line, or of one Parquet row group.

Which files a load reads (a folder's ``*.json`` / ``*.parquet`` files, less
readable files that are clearly not sample data), how a JSON line's
``SampleBatch`` / ``MultiAgentBatch`` or a Parquet row group becomes NumPy
columns, and the problem of a line or row group (:class:`Problem`, rule names
in :data:`rewardlab.sources.rllib.skipped.SKIP_REASONS`).

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

from rewardlab.core.columns import reward_column
from rewardlab.core.errors import FilesLeftOutWarning, ParameterError
from rewardlab.core.files import as_paths, check_input
from rewardlab.sources.rllib.compression import UndecodableColumn, UnsafePickle, unpack
from rewardlab.sources.storage import has_rewardlab_metadata

__all__ = ["RECORDED_NAME", "DEFAULT_AGENT", "REQUIRED_COLUMNS", "parse_json", "BATCH_HEAD", "Piece", "Problem",
           "unit_name", "as_array", "layout_of", "batch_columns", "step_columns", "line_columns", "line_batches",
           "json_lines", "arrow_column", "column_array", "parquet_row_groups", "input_files", "folder_files",
           "maybe_sample_data", "is_rllib_parquet", "unit_kind", "sniff_rllib"]

#: The candidate name of the rewards RLlib recorded: its columns are ``reward_recorded`` (the steps
#: source's ``RECORDED`` column) and ``done_recorded``.
RECORDED_NAME = "recorded"


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


class Problem(Exception):
    """A problem of one line / row group: the column, rule and message."""

    def __init__(self, column: str | None, rule: str, message: str):
        self.column, self.rule, self.message = column, rule, message
        super().__init__(message)


def unit_name(kind: str, unit: int) -> str:
    """How a message names a line or row group (``unit`` -1: the whole file)."""
    if unit < 0:
        return "the whole file"
    return f"line {unit}" if kind == "line" else f"row group {unit}"


def as_array(name: str, value, n: int, *, allow_pickle: bool) -> np.ndarray:
    """One column's values of a batch as an array of ``n`` rows (decoding a packed column;
    ``n=-1``: one packed value of any shape)."""
    if isinstance(value, str):
        try:
            arr = unpack(value, allow_pickle=allow_pickle)
        except UnsafePickle as exc:
            raise Problem(name, "unsafe_pickle",
                       f"the compressed column refers to {exc.name}, not only to NumPy arrays; "
                       "rewardlab decodes RLlib's compressed columns (cloudpickle + LZ4 + base64) "
                       "without running code from the file. Pass options={'allow_pickle': True} "
                       "only for files you trust") from None
        except UndecodableColumn as exc:
            raise Problem(name, "undecodable_column", f"the compressed column cannot be decoded: "
                       f"{exc.reason}") from None
    else:
        if not isinstance(value, list):
            raise Problem(name, "column_length", f"should be a list of {n} values, found "
                       f"{type(value).__name__}")
        try:
            arr = np.asarray(value)
        except ValueError:
            arr = None
        if arr is None or arr.dtype == object:
            lengths = [len(v) if isinstance(v, list) else -1 for v in value]
            first = lengths[0] if lengths else 0
            bad = next((i for i, k in enumerate(lengths) if k != first), 0)
            raise Problem(name, "ragged", f"step {bad} of the batch has "
                       f"{'a scalar' if lengths[bad] < 0 else f'{lengths[bad]} values'}, step 0 has "
                       f"{'a scalar' if first < 0 else f'{first} values'} (ragged values)")
    if n == -1:
        return arr
    if arr.ndim == 0 or arr.shape[0] != n:
        raise Problem(name, "column_length", f"has {0 if arr.ndim == 0 else arr.shape[0]} values, the "
                   f"batch has {n} steps")
    if arr.dtype.kind not in "biuf":
        raise Problem(name, "mixed_dtype", f"holds {arr.dtype} values, not numbers")
    return arr.reshape(n, -1) if arr.ndim > 2 else arr


def layout_of(arr: np.ndarray | pl.Series) -> str:
    """A column's dtype and width, as the mixed-dtype message says them: ``float64 x 4``."""
    if isinstance(arr, pl.Series):  # Parquet ids (text)
        return str(arr.dtype)
    return f"{arr.dtype}" + (f" x {arr.shape[1]}" if arr.ndim == 2 else "")


def batch_columns(batch: dict, policy: str, *, allow_pickle: bool) -> dict:
    """The columns rewardlab keeps of one SampleBatch (a dict of columns)."""
    missing = [c for c in REQUIRED_COLUMNS if c not in batch]
    if "terminateds" not in batch and "dones" not in batch:
        missing.append("terminateds (or dones)")
    if missing:
        raise Problem(missing[0], "missing_column",
                   f"the batch lacks {', '.join(missing)}; it has {', '.join(sorted(batch)) or 'none'}")
    rewards = batch["rewards"]
    steps = next((len(batch[c]) for c in ("rewards", "eps_id", "t", "obs") if isinstance(batch[c], list)), 0)
    if steps == 0 and all(isinstance(batch[c], list) for c in REQUIRED_COLUMNS):
        return {}
    obs = as_array("obs", batch["obs"], steps, allow_pickle=allow_pickle)
    n = obs.shape[0]
    cols = {"eps_id": as_array("eps_id", batch["eps_id"], n, allow_pickle=allow_pickle),
            "agent": (as_array("agent_index", batch["agent_index"], n, allow_pickle=allow_pickle)
                      if "agent_index" in batch else np.zeros(n, dtype=np.int64)),
            "t": as_array("t", batch["t"], n, allow_pickle=allow_pickle)}
    for name in ("eps_id", "agent", "t"):
        if cols[name].ndim != 1 or cols[name].dtype.kind not in "iu":
            raise Problem("agent_index" if name == "agent" else name, "mixed_dtype",
                       f"should hold one integer per step, found {cols[name].dtype} of shape "
                       f"{cols[name].shape}")
    actions = as_array("actions", batch["actions"], n, allow_pickle=allow_pickle)
    reward = as_array("rewards", rewards, n, allow_pickle=allow_pickle)
    if reward.ndim != 1:
        raise Problem("rewards", "mixed_dtype", f"should hold one number per step, found shape {reward.shape}")
    if "terminateds" in batch:
        terminated = as_array("terminateds", batch["terminateds"], n, allow_pickle=allow_pickle)
        truncated = (as_array("truncateds", batch["truncateds"], n, allow_pickle=allow_pickle)
                     if "truncateds" in batch else np.zeros(n, dtype=bool))
    else:
        terminated = as_array("dones", batch["dones"], n, allow_pickle=allow_pickle)
        truncated = np.zeros(n, dtype=bool)
    new_obs = (as_array("new_obs", batch["new_obs"], n, allow_pickle=allow_pickle)
               if "new_obs" in batch else None)
    return step_columns(cols, policy, obs, new_obs, actions, reward, terminated, truncated)


def step_columns(cols, policy, obs, new_obs, actions, reward, terminated, truncated) -> dict:
    """The columns rewardlab keeps, as arrays (``policy``: one name, or one per row)."""
    n = obs.shape[0]
    terminated = terminated.astype(bool)
    truncated = truncated.astype(bool) & ~terminated  # both set: the episode ended (bootstrap with zero)
    data = {"eps_id": cols["eps_id"], "agent": cols["agent"], "t": cols["t"].astype(np.int64, copy=False),
            "policy_id": np.full(n, policy, dtype=object) if isinstance(policy, str) else policy,
            "obs": obs, "actions": actions, "terminated": terminated, "truncated": truncated,
            reward_column(RECORDED_NAME): reward.astype(np.float64, copy=False)}
    if new_obs is not None:
        if new_obs.shape != obs.shape or new_obs.dtype != obs.dtype:
            raise Problem("new_obs", "mixed_dtype", f"has shape {new_obs.shape[1:]} and dtype {new_obs.dtype}, "
                       f"obs has {obs.shape[1:]} and {obs.dtype}")
        data["new_obs"] = new_obs
    return data


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
                bad.message = f"policy {policy!r}: {bad.message}"
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


def column_array(table, name: str, *, allow_pickle: bool) -> np.ndarray:
    """One Parquet column of a row group as a NumPy array (packed columns decoded)."""
    import pyarrow as pa

    column = arrow_column(table.column(name))
    n = table.num_rows
    if pa.types.is_string(column.type) or pa.types.is_large_string(column.type):  # packed per row
        values = column.to_pylist()
        if None in values:
            raise Problem(name, "missing_column", f"row {values.index(None)} of the row group is empty")
        values = [as_array(name, v, -1, allow_pickle=allow_pickle) for v in values]
        shapes = {v.shape for v in values}
        if len(shapes) > 1:
            raise Problem(name, "ragged", f"the rows' decoded values have shapes {sorted(shapes)} (ragged values)")
        arr = np.stack(values) if values else np.zeros((0,))
        return arr.reshape(n, -1) if arr.ndim > 2 else arr
    if column.null_count:
        raise Problem(name, "missing_column", f"has {column.null_count} empty values")
    series = pl.from_arrow(column)
    if isinstance(series.dtype, pl.List):
        lengths = series.list.len()
        if lengths.n_unique() > 1:
            first = int(lengths[0])
            row = int((lengths != first).arg_true()[0])
            raise Problem(name, "ragged", f"row {row} of the row group has {lengths[row]} values, row 0 has "
                       f"{first} (ragged values)")
        width = int(lengths[0]) if n else 0
        flat = series.explode().to_numpy()
        return flat.reshape(n, width)
    return series.to_numpy()


def parquet_row_groups(path: Path, file: int, *, allow_pickle: bool, pieces: list, bad: list):
    """Read a Parquet file's row groups into ``pieces``; problems go to ``bad``."""
    import pyarrow.parquet as pq

    try:
        parquet = pq.ParquetFile(path)
    except Exception as exc:  # pyarrow raises ArrowInvalid, OSError
        bad.append((file, -1, Problem(None, "bad_parquet", f"not a Parquet file ({exc})")))
        return
    names = parquet.schema_arrow.names
    needed = ["eps_id", "obs", "actions", "rewards", "terminateds"]
    missing = [c for c in needed if c not in names]
    if missing:
        bad.append((file, -1, Problem(missing[0], "missing_column", f"the rows lack {', '.join(missing)}; "
                                   f"the file has {', '.join(names)}")))
        return
    for group in range(parquet.num_row_groups):
        try:
            table = parquet.read_row_group(group)
            n = table.num_rows

            def get(name):
                return column_array(table, name, allow_pickle=allow_pickle)

            # ids stay Polars text columns (concatenated per load, never Python objects row by row)
            eps = pl.from_arrow(arrow_column(table.column("eps_id"))).cast(pl.String)
            if eps.null_count():
                raise Problem("eps_id", "missing_column", f"row {int(eps.is_null().arg_true()[0])} of the "
                           "row group is empty")
            agent = (pl.from_arrow(arrow_column(table.column("agent_id"))).cast(pl.String)
                     .fill_null(DEFAULT_AGENT) if "agent_id" in names
                     else pl.repeat(DEFAULT_AGENT, n, eager=True, dtype=pl.String))
            policy = (pl.from_arrow(arrow_column(table.column("module_id"))).cast(pl.String)
                      .fill_null("default_policy") if "module_id" in names
                      else "default_policy")
            cols = {"eps_id": eps, "agent": agent, "t": np.full(n, -1, dtype=np.int64)}
            truncated = get("truncateds") if "truncateds" in names else np.zeros(n, dtype=bool)
            new_obs = get("new_obs") if "new_obs" in names else None
            frame = step_columns(cols, policy, get("obs"), new_obs, get("actions"), get("rewards"),
                           get("terminateds"), truncated)
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
    except ValueError:
        try:  # a JSON document over several lines (stats, params written with indent) is not ours
            obj = parse_json(path.read_bytes())
        except (ValueError, OSError):  # a corrupt first line: the reader reports it, and reads the others
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
