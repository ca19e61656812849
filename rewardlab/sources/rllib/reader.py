"""RLlib offline data -> a step frame for the steps contract (format ``"rllib"``).

Two layouts RLlib writes are read:

* **JSON lines** (old API stack ``JsonWriter``): each line a ``SampleBatch``
  (``{"type": "SampleBatch", "obs": [...], ...}``) or a ``MultiAgentBatch``
  (``{"type": "MultiAgentBatch", "count": N, "policy_batches": {policy: {...}}}``)
  with columns ``eps_id``, ``t``, ``agent_index``, ``obs``, ``new_obs``,
  ``actions``, ``rewards``, ``dones`` or ``terminateds`` / ``truncateds``,
  ``infos``, ...  With ``batch_mode="truncate_episodes"`` an episode
  continues over several lines (and files).
* **Parquet** (new API stack ``OfflineSingleAgentEnvRunner`` with
  ``output_write_episodes=False``): one row per step with ``eps_id``,
  ``agent_id``, ``module_id``, ``obs``, ``new_obs``, ``actions``,
  ``rewards``, ``terminateds``, ``truncateds``; a step's index is its
  position in its episode (the rows have no ``t``).

The frame has one row per step, the rows of each (episode, agent) together
in the order the episodes first appear and in step order: ``eps_id``,
``agent`` (``agent_index`` / ``agent_id``; RLlib's ``default_agent`` where
the Parquet rows have none), ``t``, ``policy_id``, ``obs`` (the state
column: ``Array`` of its width, flattened, or a scalar column), ``actions``,
``terminated``, ``truncated``, and the recorded reward as the candidate
``reward_recorded`` / ``done_recorded`` (a baseline for comparisons).
``new_obs`` is checked against the following step's ``obs`` of the same
episode and agent, then dropped (the steps contract hands the next row's
``obs`` as ``("next", "obs")``).  Columns RLlib compressed are decoded by
:mod:`rewardlab.sources.rllib.compression` (arrays only unless
``allow_pickle=True``).  With ``dones`` alone (older RLlib) ``dones`` is
``terminated``; a step with both flags set counts as terminated.

Errors are :class:`~rewardlab.core.errors.StepTableError` naming the file,
the line (JSON) or row group and row (Parquet), the column, and for episode rules
the episode, agent and step.  ``on_error="skip"`` drops whole episodes,
never part of one, counts them by reason, and keeps every input line that
held a row of a skipped episode (and every unreadable line) byte for byte
in ``result.skipped`` and, if asked, in ``skipped_path`` (Parquet input:
the skipped rows, value for value, in a Parquet side file).

Examples
--------
>>> import rewardlab
>>> frame = rewardlab.load("data/rllib/old_stack_json/data", format="rllib",
...                        options={"unfinished": "truncate"})  # doctest: +SKIP
>>> frame.select("eps_id", "agent", "t", "reward_recorded").head(2)  # doctest: +SKIP
"""

from __future__ import annotations

import json
import re
import warnings
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import polars as pl

from rewardlab.core.columns import done_column, reward_column
from rewardlab.core.errors import (FilesLeftOutWarning, ParameterError, SkippedLinesWarning, StepTableError,
                                   check_choice)
from rewardlab.core.files import as_paths, atomic_open, atomic_path, check_input, check_not_input, check_output
from rewardlab.core.spec import FrameSpec, StateColumn, attach
from rewardlab.sources.kanachan.reader import LoadResult
from rewardlab.sources.registry import Source, register_source
from rewardlab.sources.rllib.compression import UndecodableColumn, UnsafePickle, unpack

__all__ = ["read_rllib", "load_rllib", "rllib_spec", "RLLIB_SPEC", "SKIP_REASONS", "sniff_rllib",
           "RECORDED_NAME", "DEFAULT_AGENT", "SOURCE"]

#: The candidate name of the rewards RLlib recorded: its columns are ``reward_recorded`` (the steps
#: source's ``RECORDED`` column) and ``done_recorded``.
RECORDED_NAME = "recorded"

#: The agent of Parquet rows whose ``agent_id`` is empty (RLlib's ``DEFAULT_AGENT_ID``).
DEFAULT_AGENT = "default_agent"

#: Why an episode (or line) can be skipped.
SKIP_REASONS: dict[str, str] = {
    "bad_json": "the line is not a JSON object",
    "bad_parquet": "the file is a Parquet file",
    "bad_type": "the line's type is SampleBatch or MultiAgentBatch",
    "missing_column": "a batch has eps_id, t, obs, actions, rewards and terminateds or dones",
    "column_length": "every column of a batch has one value per step",
    "undecodable_column": "a compressed column decodes to an array",
    "unsafe_pickle": "a compressed column holds arrays only (or allow_pickle=True)",
    "ragged": "every step of a column has the same number of values",
    "mixed_dtype": "a column has one shape and dtype in every line and file",
    "step_order": "steps increase within an episode (no repeats, in file order)",
    "next_obs_mismatch": "new_obs equals the following step's obs of the same episode and agent",
    "flag_before_end": "terminated / truncated fire only on an episode's last step",
    "unfinished": "an episode's last step is terminated or truncated",
    "in_broken_episode": "the episode has rows next to an unreadable line",
}

_FLAG_HINT = ("Load with options={'unfinished': 'truncate'} to mark such episodes truncated (a run "
              "with batch_mode='truncate_episodes' stops mid-episode), or on_error='skip' to skip them")
_SKIP_HINT = "Fix the input, or load with on_error='skip' (and skipped_path=...) to skip whole episodes."

_REQUIRED = ("eps_id", "t", "obs", "actions", "rewards")

try:  # the rllib extra's JSON parser (about 2.5x the standard library's on RLlib lines)
    from orjson import loads as parse_json
except ImportError:  # the same values, parsed by the standard library
    parse_json = json.loads
_HEAD = re.compile(rb'^\s*\{\s*"type"\s*:\s*"(SampleBatch|MultiAgentBatch)"')


def rllib_spec(obs: StateColumn | None = None) -> FrameSpec:
    """The spec of an RLlib frame whose state column is ``obs`` (None: the template without it).

    Examples
    --------
    >>> rllib_spec(StateColumn("obs", 4, "float32", 0.0)).states[0].width
    4
    """
    return FrameSpec(
        name="rllib", episode=("eps_id", "agent"), step="t", agent="agent", terminated="terminated",
        truncated="truncated", states=() if obs is None else (obs,), columns=("actions", "policy_id"),
        contract="steps",
        description="RLlib offline data (JSON lines of SampleBatch / MultiAgentBatch, new-stack Parquet)")


#: The template spec registered for the source (a load attaches the spec with its ``obs`` column).
RLLIB_SPEC = rllib_spec()


# ----------------------------------------------------------------------------
# Pieces: the rows of one batch of one JSON line, or of one Parquet row group
# ----------------------------------------------------------------------------

@dataclass
class _Piece:
    file: int          # index into the file list
    unit: int          # 1-based line (JSON) or 0-based row group (Parquet)
    cols: dict         # column -> NumPy array, one row per step

    @property
    def height(self) -> int:
        return len(self.cols["t"])


class _Bad(Exception):
    """A problem of one line / row group: the column, rule and message."""

    def __init__(self, column: str | None, rule: str, message: str):
        self.column, self.rule, self.message = column, rule, message
        super().__init__(message)


def _where(kind: str, unit: int) -> str:
    if unit < 0:
        return "the whole file"
    return f"line {unit}" if kind == "line" else f"row group {unit}"


def _error(path, kind: str, unit: int, column: str | None, rule: str, message: str, *, row: int | None = None,
           hint: str | None = None) -> StepTableError:
    """The error of a problem at ``unit`` (1-based line, 0-based row group; -1: the whole file) and,
    for Parquet, ``row`` (0-based, within the file)."""
    here = unit if unit >= 0 else None
    return StepTableError(path, rule, message, line=here if kind == "line" else None,
                          row_group=here if kind != "line" else None, row=row, column=column, hint=hint)


def _as_array(name: str, value, n: int, *, allow_pickle: bool) -> np.ndarray:
    """One column's values of a batch as an array of ``n`` rows (decoding a packed column;
    ``n=-1``: one packed value of any shape)."""
    if isinstance(value, str):
        try:
            arr = unpack(value, allow_pickle=allow_pickle)
        except UnsafePickle as exc:
            raise _Bad(name, "unsafe_pickle",
                       f"the compressed column refers to {exc.name}, not only to NumPy arrays; "
                       "rewardlab decodes RLlib's compressed columns (cloudpickle + LZ4 + base64) "
                       "without running code from the file. Pass options={'allow_pickle': True} "
                       "only for files you trust") from None
        except UndecodableColumn as exc:
            raise _Bad(name, "undecodable_column", f"the compressed column cannot be decoded: "
                       f"{exc.reason}") from None
    else:
        if not isinstance(value, list):
            raise _Bad(name, "column_length", f"should be a list of {n} values, found "
                       f"{type(value).__name__}")
        try:
            arr = np.asarray(value)
        except ValueError:
            arr = None
        if arr is None or arr.dtype == object:
            lengths = [len(v) if isinstance(v, list) else -1 for v in value]
            first = lengths[0] if lengths else 0
            bad = next((i for i, k in enumerate(lengths) if k != first), 0)
            raise _Bad(name, "ragged", f"step {bad} of the batch has "
                       f"{'a scalar' if lengths[bad] < 0 else f'{lengths[bad]} values'}, step 0 has "
                       f"{'a scalar' if first < 0 else f'{first} values'} (ragged values)")
    if n == -1:
        return arr
    if arr.ndim == 0 or arr.shape[0] != n:
        raise _Bad(name, "column_length", f"has {0 if arr.ndim == 0 else arr.shape[0]} values, the "
                   f"batch has {n} steps")
    if arr.dtype.kind not in "biuf":
        raise _Bad(name, "mixed_dtype", f"holds {arr.dtype} values, not numbers")
    return arr.reshape(n, -1) if arr.ndim > 2 else arr


def _layout(arr: np.ndarray | pl.Series) -> str:
    """A column's dtype and width, as the mixed-dtype message says them: ``float64 x 4``."""
    if isinstance(arr, pl.Series):  # Parquet ids (text)
        return str(arr.dtype)
    return f"{arr.dtype}" + (f" x {arr.shape[1]}" if arr.ndim == 2 else "")


def _batch_frame(batch: dict, policy: str, *, allow_pickle: bool) -> dict:
    """The columns rewardlab keeps of one SampleBatch (a dict of columns)."""
    missing = [c for c in _REQUIRED if c not in batch]
    if "terminateds" not in batch and "dones" not in batch:
        missing.append("terminateds (or dones)")
    if missing:
        raise _Bad(missing[0], "missing_column",
                   f"the batch lacks {', '.join(missing)}; it has {', '.join(sorted(batch)) or 'none'}")
    rewards = batch["rewards"]
    steps = next((len(batch[c]) for c in ("rewards", "eps_id", "t", "obs") if isinstance(batch[c], list)), 0)
    if steps == 0 and all(isinstance(batch[c], list) for c in _REQUIRED):
        return {}
    obs = _as_array("obs", batch["obs"], steps, allow_pickle=allow_pickle)
    n = obs.shape[0]
    cols = {"eps_id": _as_array("eps_id", batch["eps_id"], n, allow_pickle=allow_pickle),
            "agent": (_as_array("agent_index", batch["agent_index"], n, allow_pickle=allow_pickle)
                      if "agent_index" in batch else np.zeros(n, dtype=np.int64)),
            "t": _as_array("t", batch["t"], n, allow_pickle=allow_pickle)}
    for name in ("eps_id", "agent", "t"):
        if cols[name].ndim != 1 or cols[name].dtype.kind not in "iu":
            raise _Bad("agent_index" if name == "agent" else name, "mixed_dtype",
                       f"should hold one integer per step, found {cols[name].dtype} of shape "
                       f"{cols[name].shape}")
    actions = _as_array("actions", batch["actions"], n, allow_pickle=allow_pickle)
    reward = _as_array("rewards", rewards, n, allow_pickle=allow_pickle)
    if reward.ndim != 1:
        raise _Bad("rewards", "mixed_dtype", f"should hold one number per step, found shape {reward.shape}")
    if "terminateds" in batch:
        terminated = _as_array("terminateds", batch["terminateds"], n, allow_pickle=allow_pickle)
        truncated = (_as_array("truncateds", batch["truncateds"], n, allow_pickle=allow_pickle)
                     if "truncateds" in batch else np.zeros(n, dtype=bool))
    else:
        terminated = _as_array("dones", batch["dones"], n, allow_pickle=allow_pickle)
        truncated = np.zeros(n, dtype=bool)
    new_obs = (_as_array("new_obs", batch["new_obs"], n, allow_pickle=allow_pickle)
               if "new_obs" in batch else None)
    return _frame(cols, policy, obs, new_obs, actions, reward, terminated, truncated)


def _frame(cols, policy, obs, new_obs, actions, reward, terminated, truncated) -> dict:
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
            raise _Bad("new_obs", "mixed_dtype", f"has shape {new_obs.shape[1:]} and dtype {new_obs.dtype}, "
                       f"obs has {obs.shape[1:]} and {obs.dtype}")
        data["new_obs"] = new_obs
    return data


def _line_frames(obj, *, allow_pickle: bool) -> list[dict]:
    """The columns of a line's batches (an empty batch has none)."""
    return [f for f in _line_batches(obj, allow_pickle=allow_pickle) if f]


def _line_batches(obj, *, allow_pickle: bool) -> list[dict]:
    if not isinstance(obj, dict):
        raise _Bad(None, "bad_json", f"the line is a JSON {type(obj).__name__}, not an object")
    kind = obj.get("type")
    if kind == "SampleBatch":
        return [_batch_frame({k: v for k, v in obj.items() if k != "type"}, "default_policy",
                             allow_pickle=allow_pickle)]
    if kind == "MultiAgentBatch":
        batches = obj.get("policy_batches")
        if not isinstance(batches, dict):
            raise _Bad("policy_batches", "missing_column", "a MultiAgentBatch line needs a "
                       "policy_batches object")
        out = []
        for policy, batch in batches.items():
            if not isinstance(batch, dict):
                raise _Bad("policy_batches", "bad_type", f"policy {policy!r}: the batch is a "
                           f"{type(batch).__name__}, not an object")
            try:
                out.append(_batch_frame(batch, str(policy), allow_pickle=allow_pickle))
            except _Bad as bad:
                bad.message = f"policy {policy!r}: {bad.message}"
                raise
        return out
    raise _Bad("type", "bad_type", f"type should be 'SampleBatch' or 'MultiAgentBatch', found {kind!r}")


def _json_lines(path: Path, file: int, *, allow_pickle: bool, pieces: list, bad: list, raws: dict | None):
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
                raise _Bad(None, "bad_json", f"not JSON ({exc})") from None
            for frame in _line_frames(obj, allow_pickle=allow_pickle):
                pieces.append(_Piece(file, number, frame))
        except _Bad as problem:
            bad.append((file, number, problem))


def _arrow_column(column):
    """A Parquet column as plain Arrow (Ray Data's tensor extension type -> its storage)."""
    import pyarrow as pa

    if isinstance(column.type, pa.ExtensionType):
        return pa.chunked_array([c.storage for c in column.chunks], type=column.type.storage_type)
    return column


def _column_array(table, name: str, *, allow_pickle: bool) -> np.ndarray:
    import pyarrow as pa

    column = _arrow_column(table.column(name))
    n = table.num_rows
    if pa.types.is_string(column.type) or pa.types.is_large_string(column.type):  # packed per row
        values = column.to_pylist()
        if None in values:
            raise _Bad(name, "missing_column", f"row {values.index(None)} of the row group is empty")
        values = [_as_array(name, v, -1, allow_pickle=allow_pickle) for v in values]
        shapes = {v.shape for v in values}
        if len(shapes) > 1:
            raise _Bad(name, "ragged", f"the rows' decoded values have shapes {sorted(shapes)} (ragged values)")
        arr = np.stack(values) if values else np.zeros((0,))
        return arr.reshape(n, -1) if arr.ndim > 2 else arr
    if column.null_count:
        raise _Bad(name, "missing_column", f"has {column.null_count} empty values")
    series = pl.from_arrow(column)
    if isinstance(series.dtype, pl.List):
        lengths = series.list.len()
        if lengths.n_unique() > 1:
            first = int(lengths[0])
            row = int((lengths != first).arg_true()[0])
            raise _Bad(name, "ragged", f"row {row} of the row group has {lengths[row]} values, row 0 has "
                       f"{first} (ragged values)")
        width = int(lengths[0]) if n else 0
        flat = series.explode().to_numpy()
        return flat.reshape(n, width)
    return series.to_numpy()


def _parquet_row_groups(path: Path, file: int, *, allow_pickle: bool, pieces: list, bad: list):
    import pyarrow.parquet as pq

    try:
        parquet = pq.ParquetFile(path)
    except Exception as exc:  # pyarrow raises ArrowInvalid, OSError
        bad.append((file, -1, _Bad(None, "bad_parquet", f"not a Parquet file ({exc})")))
        return
    names = parquet.schema_arrow.names
    needed = ["eps_id", "obs", "actions", "rewards", "terminateds"]
    missing = [c for c in needed if c not in names]
    if missing:
        bad.append((file, -1, _Bad(missing[0], "missing_column", f"the rows lack {', '.join(missing)}; "
                                   f"the file has {', '.join(names)}")))
        return
    for group in range(parquet.num_row_groups):
        try:
            table = parquet.read_row_group(group)
            n = table.num_rows

            def get(name):
                return _column_array(table, name, allow_pickle=allow_pickle)

            # ids stay Polars text columns (concatenated per load, never Python objects row by row)
            eps = pl.from_arrow(_arrow_column(table.column("eps_id"))).cast(pl.String)
            if eps.null_count():
                raise _Bad("eps_id", "missing_column", f"row {int(eps.is_null().arg_true()[0])} of the "
                           "row group is empty")
            agent = (pl.from_arrow(_arrow_column(table.column("agent_id"))).cast(pl.String)
                     .fill_null(DEFAULT_AGENT) if "agent_id" in names
                     else pl.repeat(DEFAULT_AGENT, n, eager=True, dtype=pl.String))
            policy = (pl.from_arrow(_arrow_column(table.column("module_id"))).cast(pl.String)
                      .fill_null("default_policy") if "module_id" in names
                      else "default_policy")
            cols = {"eps_id": eps, "agent": agent, "t": np.full(n, -1, dtype=np.int64)}
            truncated = get("truncateds") if "truncateds" in names else np.zeros(n, dtype=bool)
            new_obs = get("new_obs") if "new_obs" in names else None
            frame = _frame(cols, policy, get("obs"), new_obs, get("actions"), get("rewards"),
                           get("terminateds"), truncated)
            frame["_row"] = np.arange(n, dtype=np.uint32)
            pieces.append(_Piece(file, group, frame))
        except _Bad as problem:
            bad.append((file, group, problem))


# ----------------------------------------------------------------------------
# Episodes
# ----------------------------------------------------------------------------

def _rows_differ(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    if a.ndim == 1:
        return (a != b) & ~(np.isnan(a) & np.isnan(b)) if a.dtype.kind == "f" else a != b
    differ = a != b
    if a.dtype.kind == "f":
        differ &= ~(np.isnan(a) & np.isnan(b))
    return differ.any(axis=1)


def _format_key(eps, agent) -> str:
    return f"episode {eps!r} agent {agent!r}"


def _episode_checks(frame: pl.DataFrame, kind: str, derived_t: bool, unfinished: str, names: list[str]):
    """(frame sorted by episode, problems: list of (row, column, rule, message)) for the whole load."""
    n = frame.height
    codes = frame.select(pl.struct("eps_id", "agent").rank("dense").cast(pl.Int64) - 1).to_series().to_numpy()
    first = np.full(int(codes.max()) + 1 if n else 0, n, dtype=np.int64)
    np.minimum.at(first, codes, np.arange(n, dtype=np.int64))
    rank = np.empty_like(first)
    rank[np.argsort(first, kind="stable")] = np.arange(first.size)
    episode = rank[codes]
    order = np.argsort(episode, kind="stable")
    frame = frame[order]
    episode = episode[order]
    start = np.ones(n, dtype=bool)
    start[1:] = episode[1:] != episode[:-1]
    end = np.ones(n, dtype=bool)
    end[:-1] = start[1:]
    if derived_t:
        starts = np.flatnonzero(start)
        t = np.arange(n, dtype=np.int64) - np.repeat(starts, np.diff(np.append(starts, n)))
        frame = frame.with_columns(pl.Series("t", t))
    problems = []
    t = frame["t"].to_numpy()
    bad = np.flatnonzero(~start[1:] & (t[1:] <= t[:-1])) + 1
    for r in bad:  # every one: each marks its episode (skip mode drops them all)
        problems.append((int(r), "t", "step_order",
                         f"step t={t[r]} follows t={t[r - 1]} ({_unit_text(frame, r - 1, kind, names)}) within "
                         f"the episode: steps should increase (repeated or out of order)"))
    bad_steps = set(bad.tolist())
    if "new_obs" in frame.columns:
        obs, new_obs = _stack(frame["obs"]), _stack(frame["new_obs"])
        differ = np.zeros(n, dtype=bool)
        if n > 1:
            differ[:-1] = ~end[:-1] & _rows_differ(new_obs[:-1], obs[1:])
        for r in np.flatnonzero(differ):
            if r + 1 in bad_steps:
                continue
            problems.append((int(r), "new_obs", "next_obs_mismatch",
                             f"step t={t[r]}: new_obs {_values(new_obs[r])} differs from the obs "
                             f"{_values(obs[r + 1])} of the following step t={t[r + 1]} "
                             f"({_unit_text(frame, r + 1, kind, names)})"))
    terminated = frame["terminated"].to_numpy()
    truncated = frame["truncated"].to_numpy()
    for r in np.flatnonzero((terminated | truncated) & ~end):
        flag = "terminateds" if terminated[r] else "truncateds"
        problems.append((int(r), flag, "flag_before_end",
                         f"step t={t[r]} is {flag[:-1]} but the episode goes on at step t={t[r + 1]} "
                         f"({_unit_text(frame, r + 1, kind, names)})"))
    open_end = end & ~(terminated | truncated)
    if unfinished == "truncate":
        frame = frame.with_columns(pl.Series("truncated", truncated | open_end))
    else:
        for r in np.flatnonzero(open_end):
            problems.append((int(r), "terminateds", "unfinished",
                             f"the episode's last step t={t[r]} has neither terminateds nor truncateds "
                             "set (the recording stopped mid-episode?)"))
    return frame, episode, problems


def _stack(series: pl.Series) -> np.ndarray:
    arr = series.to_numpy()
    return np.stack(arr) if arr.dtype == object else arr


def _values(row: np.ndarray) -> str:
    values = np.atleast_1d(row).tolist()
    text = "[" + ", ".join(repr(v) for v in values[:6]) + (", ...]" if len(values) > 6 else "]")
    return text


def _unit_text(frame: pl.DataFrame, row: int, kind: str, names: list[str]) -> str:
    row = int(row)
    return f"{names[frame['_file'][row]]} {_where(kind, int(frame['_unit'][row]))}"


# ----------------------------------------------------------------------------
# Public API
# ----------------------------------------------------------------------------

def _files(paths) -> list[Path]:
    out: list[Path] = []
    for p in as_paths(paths):
        check_input(p, folder=True)
        if p.is_dir():
            found, left_out = _folder_files(p)
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


def _folder_files(folder: Path) -> tuple[list[Path], list[Path]]:
    """A folder's ``*.json`` / ``*.parquet`` files: (RLlib's, left out).  A file is left out only when
    it is readable and clearly not sample data (RLlib's output folders also hold other files: Tune's
    ``params.json`` / ``result.json``, stats); a file that cannot be read is taken, so the reader
    reports its bad lines and keeps its good episodes."""
    found, left_out = [], []
    for q in sorted(q for q in folder.rglob("*") if q.is_file() and q.suffix.lower() in (".json", ".parquet")):
        (found if _maybe_sample_data(q) else left_out).append(q)
    return found, left_out


def _maybe_sample_data(path: Path) -> bool:
    """False only for a readable file that is clearly not RLlib sample data."""
    if path.suffix.lower() == ".parquet":
        import pyarrow.parquet as pq

        try:
            schema = pq.read_schema(path)
        except Exception:  # pyarrow raises ArrowInvalid, OSError: the reader reports it
            return True
        return _rllib_parquet_schema(schema)
    try:
        with open(path, "rb") as f:
            first = next((line for line in f if line.strip()), b"")
    except OSError:  # the reader reports it
        return True
    if not first.strip() or _HEAD.match(first):
        return True
    try:
        obj = parse_json(first)
    except ValueError:
        try:  # a JSON document over several lines (stats, params written with indent) is not ours
            obj = parse_json(path.read_bytes())
        except (ValueError, OSError):  # a corrupt first line: the reader reports it, and reads the others
            return True
    return isinstance(obj, dict) and obj.get("type") in ("SampleBatch", "MultiAgentBatch")


def _rllib_parquet_schema(schema) -> bool:
    """RLlib's step columns, and no rewardlab spec (a rewardlab Parquet file is a dataset)."""
    meta = schema.metadata or {}
    return (not any(k.startswith(b"rewardlab") for k in meta)
            and all(c in schema.names for c in ("eps_id", "obs", "new_obs", "rewards", "terminateds")))


def _kind(path: Path) -> str:
    return "row group" if path.suffix.lower() == ".parquet" else "line"


def read_rllib(
    paths,
    *,
    on_error: str = "raise",
    skipped_path: str | Path | None = None,
    overwrite: bool = False,
    unfinished: str = "error",
    allow_pickle: bool = False,
) -> LoadResult:
    """Load RLlib offline output (JSON lines or new-stack Parquet) and report what was skipped.

    Parameters
    ----------
    paths : path or sequence of paths
        Files, or folders searched recursively for RLlib's ``*.json`` /
        ``*.parquet`` files (every one, except a readable file that is
        clearly not sample data: a JSON file whose first line is JSON but not
        a batch, a Parquet file without RLlib's step columns; those are named
        in a :class:`~rewardlab.core.errors.FilesLeftOutWarning`);
        all JSON lines or all Parquet.  An episode may continue over lines
        and files (in the order given, folders sorted by name).
    on_error : {"raise", "skip"}
        ``"raise"``: the first problem is a
        :class:`~rewardlab.core.errors.StepTableError` naming the file, line
        (or row group and row), column and rule.  ``"skip"``: drop every episode a
        problem touches, whole, and keep what held its rows: JSON lines
        (and unreadable lines) byte for byte in ``result.skipped``; Parquet
        rows listed there one by one (file, row group and row in the message).
        A JSON line holds steps of several episodes: a kept line is whole, so
        it may also hold steps of episodes that were loaded.
    skipped_path : path, optional
        With ``on_error="skip"``, also write those lines, verbatim, to this
        file; for Parquet input a ``.parquet`` file of the skipped rows, value
        for value, with ``rewardlab_file``, ``rewardlab_row_group`` and
        ``rewardlab_row`` added (atomic; refuses to replace a file unless
        ``overwrite``).
    overwrite : bool
        Replace an existing ``skipped_path``.
    unfinished : {"error", "truncate"}
        An episode whose last step has neither ``terminateds`` nor
        ``truncateds`` set (a ``truncate_episodes`` run stops mid-episode) is
        an error (``"error"``, as in the steps source; skipped with
        ``on_error="skip"``), or is
        loaded with its last step marked truncated (``"truncate"``).
    allow_pickle : bool
        Decode compressed columns with Python's full unpickler (it can run
        code from the file: trusted files only).  By default only NumPy
        arrays are rebuilt and anything else is an error naming the column.

    Returns
    -------
    LoadResult
        ``frame`` (spec :func:`rllib_spec` attached), ``skipped`` (one row
        per skipped line: file, line, reason, message, text, raw) and
        ``skipped_path``.

    Examples
    --------
    >>> result = read_rllib("data/rllib/old_stack_json/data", on_error="skip")  # doctest: +SKIP
    >>> result.skip_counts  # doctest: +SKIP
    {'unfinished': 1}
    """
    check_choice("on_error", on_error, ("raise", "skip"))
    check_choice("unfinished", unfinished, ("error", "truncate"))
    if not isinstance(allow_pickle, bool):
        raise ParameterError("allow_pickle", "should be True or False", allow_pickle)
    files = _files(paths)
    kinds = {_kind(p) for p in files}
    if len(kinds) > 1:
        raise ParameterError("paths", "should be all JSON lines or all Parquet files",
                             [str(p) for p in files])
    kind = kinds.pop()
    if skipped_path is not None and on_error != "skip":
        raise ParameterError("skipped_path", "is only used with on_error='skip'", str(skipped_path))
    if skipped_path is not None and kind != "line" and Path(skipped_path).suffix.lower() != ".parquet":
        raise ParameterError("skipped_path", "should end with .parquet for Parquet input (the skipped "
                             "rows are kept as Parquet rows)", str(skipped_path))
    check_not_input(skipped_path, files, name="skipped_path")
    if skipped_path is not None:
        check_output(skipped_path, overwrite=overwrite)
    skip = on_error == "skip"
    pieces: list[_Piece] = []
    bad: list[tuple[int, int, _Bad]] = []
    raws: dict[int, list[bytes]] = {}
    for i, path in enumerate(files):
        if kind == "line":
            _json_lines(path, i, allow_pickle=allow_pickle, pieces=pieces, bad=bad, raws=raws if skip else None)
        else:
            _parquet_row_groups(path, i, allow_pickle=allow_pickle, pieces=pieces, bad=bad)
        if bad and not skip:
            f, unit, problem = bad[0]
            raise _error(files[f], kind, unit, problem.column, problem.rule, problem.message, hint=_SKIP_HINT)
    pieces = _same_layout(pieces, files, kind, bad, skip)
    frame, problems = _assemble(pieces, files, kind, unfinished)
    if problems and not skip:
        row, column, rule, message = problems[0]
        raise _row_error(frame, row, column, rule, message, files, kind,
                         hint=_FLAG_HINT if rule == "unfinished" else _SKIP_HINT)
    skipped, where = None, []
    if skip:
        if kind == "line":
            skipped = _skipped(frame, problems, bad, files, raws)
        else:
            skipped, where = _skipped_rows(frame, problems, bad, files)
    if skip and skipped is not None and skipped.height:
        frame = _drop_skipped_episodes(frame, problems, bad, files, kind)
    frame = _finish(frame)
    spec = rllib_spec(_obs_state(frame))
    frame = attach(frame, spec)
    if not skip:
        return LoadResult.nothing_skipped(frame)
    result_path = None
    if skipped_path is not None:
        result_path = Path(skipped_path)
        if kind == "line":
            with atomic_open(result_path, "wb", overwrite=overwrite) as f:
                for line in skipped["raw"].to_list():
                    f.write(line + b"\n")
        else:
            _write_skipped_rows(where, files, result_path, overwrite=overwrite)
    result = LoadResult(frame, skipped, result_path)
    if skipped.height:
        counts = ", ".join(f"{k}: {v}" for k, v in result.skip_counts.items())
        where = f"; kept in {result_path}" if result_path else "; see result.skipped"
        what = "lines" if kind == "line" else "rows"
        warnings.warn(SkippedLinesWarning(f"skipped {skipped.height} {what} of RLlib data ({counts}){where}"),
                      stacklevel=2)
    return result


def _same_layout(pieces, files, kind, bad, skip) -> list[_Piece]:
    """Pieces whose columns match the first piece's dtypes and widths (others: mixed dtypes)."""
    if not pieces:
        return pieces
    first = pieces[0]
    layout = {c: _layout(a) for c, a in first.cols.items()}
    kept = []
    for piece in pieces:
        other = {c: _layout(a) for c, a in piece.cols.items()}
        wrong = next((c for c in layout if c in other and other[c] != layout[c]), None)
        if wrong is None and ("new_obs" in layout) != ("new_obs" in other):
            wrong = "new_obs"
        if wrong is not None:
            problem = _Bad(wrong, "mixed_dtype",
                           f"is {other.get(wrong, 'absent')} here, {layout.get(wrong, 'absent')} in "
                           f"{files[first.file]} {_where(kind, first.unit)}")
            if not skip:
                raise _error(files[piece.file], kind, piece.unit, wrong, "mixed_dtype", problem.message,
                             hint=_SKIP_HINT)
            bad.append((piece.file, piece.unit, problem))
            continue
        kept.append(piece)
    return kept


def _assemble(pieces, files, kind, unfinished):
    if not pieces:
        return pl.DataFrame(), []
    names = [str(p) for p in files]
    heights = [p.height for p in pieces]
    columns = {c: _concat(c, [p.cols[c] for p in pieces]) for c in pieces[0].cols}
    frame = pl.DataFrame(list(columns.values())).with_columns(
        pl.Series("_file", np.repeat([p.file for p in pieces], heights).astype(np.uint32)),
        pl.Series("_unit", np.repeat([max(p.unit, 0) for p in pieces], heights).astype(np.uint32)))
    frame, episode, problems = _episode_checks(frame, kind, kind != "line", unfinished, names)
    return frame.with_columns(pl.Series("_episode", episode)), problems


def _concat(name: str, parts: list) -> pl.Series:
    """One column of the load: Polars text columns (Parquet ids) or NumPy arrays, joined."""
    if any(isinstance(p, pl.Series) for p in parts):
        return pl.concat([p if isinstance(p, pl.Series) else pl.Series(p, dtype=pl.String) for p in parts]
                         ).alias(name)
    arr = np.concatenate(parts)
    return pl.Series(name, arr, dtype=pl.String if arr.dtype == object else None)


def _row_error(frame, row, column, rule, message, files, kind, *, hint):
    row = int(row)
    path = files[frame["_file"][row]]
    unit = int(frame["_unit"][row])
    key = _format_key(frame["eps_id"][row], frame["agent"][row])
    at = None if kind == "line" else _group_start(path, unit) + int(frame["_row"][row])
    return _error(path, kind, unit, column, rule, f"{key}: {message}", row=at, hint=hint)


def _group_start(path, group: int) -> int:
    """The file row of a Parquet row group's first row."""
    import pyarrow.parquet as pq

    meta = pq.ParquetFile(path).metadata
    return sum(meta.row_group(g).num_rows for g in range(group))


_SKIPPED_SCHEMA = {"file": pl.String, "line": pl.UInt32, "column": pl.Int16, "reason": pl.String,
                   "message": pl.String, "text": pl.String, "raw": pl.Binary}


def _bad_episodes(frame, problems, bad, files, kind) -> tuple[np.ndarray, dict]:
    """Episodes to drop (bool per episode ordinal) and the first reason of each."""
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
        key = _unit_keys(frame["_file"].to_numpy(), frame["_unit"].to_numpy())
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
                                           f"{_where(kind, line)}, which was skipped ({problem.rule})"))
    return drop, reason


def _unit_keys(file: np.ndarray, unit: np.ndarray) -> np.ndarray:
    """One int64 per (file, line or row group), ordered as the files and lines are."""
    return (file.astype(np.int64) << 32) + unit.astype(np.int64)


def _skipped(frame, problems, bad, files, raws) -> pl.DataFrame:
    drop, reason = _bad_episodes(frame, problems, bad, files, "line")
    entries: dict[tuple[int, int], tuple[str, str]] = {}
    for f, line, problem in bad:
        entries[(f, line)] = (problem.rule, (f"column {problem.column}: " if problem.column else "")
                              + problem.message)
    if frame.height and drop.any():
        rows = frame.filter(pl.Series(drop[frame["_episode"].to_numpy()]))
        for f, line, e in rows.select("_file", "_unit", "_episode").unique().iter_rows():
            entries.setdefault((f, line), reason[e])
    if not entries:
        return pl.DataFrame(schema=_SKIPPED_SCHEMA)
    keys = sorted(entries)
    raw = [raws[f][line - 1] for f, line in keys]
    return pl.DataFrame({
        "file": [str(files[f]) for f, _ in keys], "line": [line for _, line in keys],
        "column": [None] * len(keys), "reason": [entries[k][0] for k in keys],
        "message": [entries[k][1] for k in keys],
        "text": [r.decode("utf-8", "replace").removesuffix("\r") for r in raw], "raw": raw,
    }, schema=_SKIPPED_SCHEMA)


def _skipped_rows(frame, problems, bad, files) -> tuple[pl.DataFrame, list[tuple[int, int, int]]]:
    """Parquet: one entry per skipped row (``line`` empty; the message names row group and row),
    and where each is: (file index, row group, row), in file order."""
    import pyarrow.parquet as pq

    drop, reason = _bad_episodes(frame, problems, bad, files, "row group")
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
        "text": [""] * len(where), "raw": [b""] * len(where)}, schema=_SKIPPED_SCHEMA)
    return skipped, where


def _write_skipped_rows(where, files, path: Path, *, overwrite: bool) -> None:
    """The skipped Parquet rows, value for value, plus ``rewardlab_file`` / ``_row_group`` / ``_row``."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    tables = []
    groups: dict[tuple[int, int], list[int]] = {}
    for f, g, r in where:
        groups.setdefault((f, g), []).append(r)
    for (f, g), rows in groups.items():
        table = pq.ParquetFile(files[f]).read_row_group(g).take(pa.array(rows, pa.int64()))
        n = table.num_rows
        tables.append(table.append_column("rewardlab_file", pa.array([str(files[f])] * n))
                      .append_column("rewardlab_row_group", pa.array([g] * n, pa.int64()))
                      .append_column("rewardlab_row", pa.array(rows, pa.int64())))
    table = pa.concat_tables(tables, promote_options="default") if tables else pa.table({})
    with atomic_path(path, overwrite=overwrite) as tmp:
        pq.write_table(table, tmp)


def _drop_skipped_episodes(frame, problems, bad, files, kind) -> pl.DataFrame:
    drop, _ = _bad_episodes(frame, problems, bad, files, kind)
    return frame.filter(~pl.Series(drop[frame["_episode"].to_numpy()]))


def _finish(frame: pl.DataFrame) -> pl.DataFrame:
    """The frame's public columns, in order, with the recorded candidate's done flags."""
    if frame.height == 0 and not frame.columns:
        return pl.DataFrame(schema={"eps_id": pl.Int64, "agent": pl.Int64, "t": pl.Int64,
                                    "policy_id": pl.String, "obs": pl.Float64, "actions": pl.Int64,
                                    "terminated": pl.Boolean, "truncated": pl.Boolean,
                                    reward_column(RECORDED_NAME): pl.Float64, done_column(RECORDED_NAME): pl.Boolean})
    return frame.select("eps_id", "agent", "t", "policy_id", "obs", "actions", "terminated", "truncated",
                        reward_column(RECORDED_NAME),
                        (pl.col("terminated") | pl.col("truncated")).alias(done_column(RECORDED_NAME)))


def _obs_state(frame: pl.DataFrame) -> StateColumn:
    dtype = frame.schema["obs"]
    if isinstance(dtype, pl.Array):
        inner, width = dtype.inner, dtype.size
    else:
        inner, width = dtype, None
    name = {pl.Float32: "float32", pl.Float64: "float64", pl.Int64: "int64", pl.Int32: "int32",
            pl.Int16: "int16", pl.Int8: "int8", pl.UInt8: "uint8", pl.UInt16: "uint16", pl.UInt32: "uint32",
            pl.UInt64: "uint64", pl.Boolean: "bool"}[inner.base_type() if hasattr(inner, "base_type") else inner]
    return StateColumn("obs", width, name, False if name == "bool" else 0)


def load_rllib(paths, *, on_error: str = "raise", skipped_path=None, overwrite: bool = False,
               unfinished: str = "error", allow_pickle: bool = False) -> pl.DataFrame:
    """:func:`read_rllib`'s frame; ``on_error="skip"`` needs a ``skipped_path`` (nothing is lost).

    Examples
    --------
    >>> frame = load_rllib("data/rllib/new_stack_parquet/data", unfinished="truncate")  # doctest: +SKIP
    """
    if on_error == "skip" and skipped_path is None:
        raise ParameterError("skipped_path", "is required with on_error='skip' so skipped lines are kept",
                             None, hint="Name a side file, or call read_rllib() to get them in memory.")
    return read_rllib(paths, on_error=on_error, skipped_path=skipped_path, overwrite=overwrite,
                      unfinished=unfinished, allow_pickle=allow_pickle).frame


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
            import pyarrow.parquet as pq

            return _rllib_parquet_schema(pq.read_schema(path))
        with open(path, "rb") as f:
            return _HEAD.match(f.read(256)) is not None
    except Exception:  # not readable, not Parquet: not ours
        return False


def _load_source(paths, *, on_error: str = "raise", skipped_path=None, overwrite: bool = False,
                 unfinished: str = "error", allow_pickle: bool = False) -> pl.DataFrame:
    return load_rllib(paths, on_error=on_error, skipped_path=skipped_path, overwrite=overwrite,
                      unfinished=unfinished, allow_pickle=allow_pickle)


def _read_source(paths, *, on_error: str = "raise", skipped_path=None, overwrite: bool = False,
                 unfinished: str = "error", allow_pickle: bool = False) -> LoadResult:
    return read_rllib(paths, on_error=on_error, skipped_path=skipped_path, overwrite=overwrite,
                      unfinished=unfinished, allow_pickle=allow_pickle)


#: RLlib offline output as a source (format ``"rllib"``).
SOURCE = register_source(Source(
    name="rllib",
    spec=RLLIB_SPEC,
    load=_load_source,
    read=_read_source,
    sniff=sniff_rllib,
    description="RLlib offline data (JSON lines of SampleBatch / MultiAgentBatch; new-stack Parquet)",
))
