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
episode and agent; of it the frame keeps only each episode's (and agent's)
last value, its final observation, as ``final_obs`` on the episode's last
row (null on every other row; the spec's state is
``StateColumn("obs", ..., final="final_obs")``), so the steps contract hands
the next row's ``obs`` as ``("next", "obs")`` and, after an episode's last
step, the observation RLlib recorded after it.  That holds for an episode
the recording cut (loaded with ``unfinished="truncate"``) too.  Rows without
``new_obs`` give a frame without ``final_obs`` (the next state after a last
step is then the ``obs`` column's pad).  Columns RLlib compressed are decoded by
:mod:`rewardlab.sources.rllib.compression` (numeric arrays only, within
bounds, unless ``allow_pickle=True``).  Values are numbers: float16
observations load as float32 (which holds them exactly), boolean ones as
``Boolean`` (pad ``0``, False); flags are booleans or 0 / 1 (anything else:
rule ``bad_flag``); recorded rewards are finite (``not_finite``).  With
``dones`` alone (older RLlib) ``dones`` is ``terminated``; a step with both
flags set counts as terminated.

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

import warnings
from pathlib import Path

import numpy as np
import polars as pl

from rewardlab.core.columns import done_column, reward_column
from rewardlab.core.errors import ParameterError, SkippedLinesWarning, StepTableError, check_choice
from rewardlab.core.fronts import Fix, Text
from rewardlab.core.files import check_not_input, check_output
from rewardlab.core.spec import FrameSpec, StateColumn, attach, final_column
from rewardlab.sources.results import LoadResult, write_skipped_lines
from rewardlab.sources.values import final_state_column
from rewardlab.sources.rllib.episodes import episode_checks, format_key
from rewardlab.sources.rllib.columns import RECORDED_NAME, Problem, layout_of
from rewardlab.sources.rllib.files import Piece, input_files, json_lines, parquet_row_groups, unit_kind, unit_name
from rewardlab.sources.rllib.skipped import (drop_skipped_episodes, skipped_lines, skipped_rows,
                                             write_skipped_rows)

__all__ = ["read_rllib", "load_rllib", "rllib_spec", "RLLIB_SPEC", "FINAL_OBS"]

#: The column holding each episode's final observation (its last ``new_obs``) on its last row.
FINAL_OBS = final_column("obs")

_FLAG_HINT = Text(Fix("unfinished", "truncate", verb="Load with", option=True), " to mark such episodes truncated "
                  "(a run with batch_mode='truncate_episodes' stops mid-episode), or ", Fix("on_error", "skip", verb="", option=True), " to skip them")


_SKIP_HINT = Text("Fix the input, or ", Fix("on_error", "skip", verb="load with", option=True), " (and ", Fix("skipped_path", "FILE", verb="", option=True),
                  ") to skip whole episodes.")


def rllib_spec(obs: StateColumn | None = None) -> FrameSpec:
    """The spec of an RLlib frame whose state column is ``obs`` (None: the template without it).

    A load's ``obs`` names its final column (``final_obs``) when the data has ``new_obs``.

    Examples
    --------
    >>> rllib_spec(StateColumn("obs", 4, "float32", 0.0)).states[0].width
    4
    >>> rllib_spec(StateColumn("obs", 4, "float32", 0.0, final="final_obs")).required[-3:]
    ('final_obs', 'actions', 'policy_id')
    """
    return FrameSpec(
        name="rllib", episode=("eps_id", "agent"), step="t", agent="agent", terminated="terminated",
        truncated="truncated", states=() if obs is None else (obs,), columns=("actions", "policy_id"),
        contract="steps",
        description="RLlib offline data (JSON lines of SampleBatch / MultiAgentBatch, new-stack Parquet)")


#: The template spec registered for the source (a load attaches the spec with its ``obs`` column).
RLLIB_SPEC = rllib_spec()


def _error(path, kind: str, unit: int, column: str | None, rule: str, message: str, *, row: int | None = None,
           hint: str | None = None) -> StepTableError:
    """The error of a problem at ``unit`` (1-based line, 0-based row group; -1: the whole file) and,
    for Parquet, ``row`` (0-based, within the file)."""
    here = unit if unit >= 0 else None
    return StepTableError(path, rule, message, line=here if kind == "line" else None,
                          row_group=here if kind != "line" else None, row=row, column=column, hint=hint)


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
        code from the file: trusted files only), without size limits.  By
        default only numeric NumPy arrays are rebuilt, each from bytes the
        file holds, and a packed value may decode to at most
        :data:`~rewardlab.sources.rllib.compression.MAX_UNPACKED_BYTES`
        (256 MiB) and to no more than its column can need (``new_obs``:
        ``obs``'s size; a one-value-a-step column: 8 bytes a step; a
        Parquet row: the first row's size); anything else is an error
        naming the column (rules ``unsafe_pickle``, ``undecodable_column``,
        ``oversized_column``), raised before the memory is taken.

    Returns
    -------
    LoadResult
        ``frame`` (spec :func:`rllib_spec` attached; with ``new_obs`` in
        the data, ``final_obs`` holds each episode's last ``new_obs`` on its
        last row, null elsewhere), ``skipped`` (one row
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
    files = input_files(paths)
    kinds = {unit_kind(p) for p in files}
    if len(kinds) > 1:
        raise ParameterError("paths", "should be all JSON lines or all Parquet files",
                             [str(p) for p in files])
    kind = kinds.pop()
    if skipped_path is not None and on_error != "skip":
        raise ParameterError("skipped_path", Text("is only used with ", Fix("on_error", "skip", verb="", option=True)), str(skipped_path))
    if skipped_path is not None and kind != "line" and Path(skipped_path).suffix.lower() != ".parquet":
        raise ParameterError("skipped_path", "should end with .parquet for Parquet input (the skipped "
                             "rows are kept as Parquet rows)", str(skipped_path))
    check_not_input(skipped_path, files, name="skipped_path")
    if skipped_path is not None:
        check_output(skipped_path, overwrite=overwrite)
    skip = on_error == "skip"
    pieces: list[Piece] = []
    bad: list[tuple[int, int, Problem]] = []
    raws: dict[int, list[bytes]] = {}
    for i, path in enumerate(files):
        if kind == "line":
            json_lines(path, i, allow_pickle=allow_pickle, pieces=pieces, bad=bad, raws=raws if skip else None)
        else:
            parquet_row_groups(path, i, allow_pickle=allow_pickle, pieces=pieces, bad=bad)
        if bad and not skip:
            f, unit, problem = bad[0]
            raise _error(files[f], kind, unit, problem.column, problem.rule, problem.message, hint=_SKIP_HINT)
    pieces = _same_layout(pieces, files, kind, bad, skip)
    frame, problems, finals = _assemble(pieces, files, kind, unfinished)
    if problems and not skip:
        row, column, rule, message = problems[0]
        raise _row_error(frame, row, column, rule, message, files, kind,
                         hint=_FLAG_HINT if rule == "unfinished" else _SKIP_HINT)
    skipped, where = None, []
    if skip:
        if kind == "line":
            skipped = skipped_lines(frame, problems, bad, files, raws)
        else:
            skipped, where = skipped_rows(frame, problems, bad, files)
    if skip and skipped is not None and skipped.height:
        frame = drop_skipped_episodes(frame, problems, bad, files, kind)
    frame = _finish(frame, finals)
    spec = rllib_spec(_obs_state(frame))
    frame = attach(frame, spec)
    if not skip:
        return LoadResult.nothing_skipped(frame)
    result_path = None
    if skipped_path is not None:
        result_path = Path(skipped_path)
        if kind == "line":
            write_skipped_lines(skipped["raw"].to_list(), result_path, overwrite=overwrite)
        else:
            write_skipped_rows(where, files, result_path, overwrite=overwrite)
    result = LoadResult(frame, skipped, result_path)
    if skipped.height:
        counts = ", ".join(f"{k}: {v}" for k, v in result.skip_counts.items())
        where = f"; kept in {result_path}" if result_path else "; see result.skipped"
        what = "lines" if kind == "line" else "rows"
        warnings.warn(SkippedLinesWarning(f"skipped {skipped.height} {what} of RLlib data ({counts}){where}"),
                      stacklevel=2)
    return result


def _same_layout(pieces, files, kind, bad, skip) -> list[Piece]:
    """Pieces whose columns match the first piece's dtypes and widths (others: mixed dtypes)."""
    if not pieces:
        return pieces
    first = pieces[0]
    layout = {c: layout_of(a) for c, a in first.cols.items()}
    kept = []
    for piece in pieces:
        other = {c: layout_of(a) for c, a in piece.cols.items()}
        wrong = next((c for c in layout if c in other and other[c] != layout[c]), None)
        if wrong is None and ("new_obs" in layout) != ("new_obs" in other):
            wrong = "new_obs"
        if wrong is not None:
            problem = Problem(wrong, "mixed_dtype",
                           f"is {other.get(wrong, 'absent')} here, {layout.get(wrong, 'absent')} in "
                           f"{files[first.file]} {unit_name(kind, first.unit)}")
            if not skip:
                raise _error(files[piece.file], kind, piece.unit, wrong, "mixed_dtype", problem.message,
                             hint=_SKIP_HINT)
            bad.append((piece.file, piece.unit, problem))
            continue
        kept.append(piece)
    return kept


def _assemble(pieces, files, kind, unfinished):
    """(frame sorted by episode, problems, each episode's last new_obs or None): see ``episode_checks``."""
    if not pieces:
        return pl.DataFrame(), [], None
    names = [str(p) for p in files]
    heights = [p.height for p in pieces]
    columns = {c: _concat(c, [p.cols[c] for p in pieces]) for c in pieces[0].cols}
    frame = pl.DataFrame(list(columns.values())).with_columns(
        pl.Series("_file", np.repeat([p.file for p in pieces], heights).astype(np.uint32)),
        pl.Series("_unit", np.repeat([max(p.unit, 0) for p in pieces], heights).astype(np.uint32)))
    frame, episode, problems, finals = episode_checks(frame, kind, kind != "line", unfinished, names)
    return frame.with_columns(pl.Series("_episode", episode)), problems, finals


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
    key = format_key(frame["eps_id"][row], frame["agent"][row])
    at = None if kind == "line" else _group_start(path, unit) + int(frame["_row"][row])
    return _error(path, kind, unit, column, rule, f"{key}: {message}", row=at, hint=hint)


def _group_start(path, group: int) -> int:
    """The file row of a Parquet row group's first row."""
    import pyarrow.parquet as pq

    meta = pq.ParquetFile(path).metadata
    return sum(meta.row_group(g).num_rows for g in range(group))


def _finish(frame: pl.DataFrame, finals) -> pl.DataFrame:
    """The frame's public columns, in order, with the recorded candidate's done flags and, where
    ``finals`` (each episode ordinal's last new_obs) is given, ``final_obs``."""
    if frame.height == 0 and not frame.columns:
        return pl.DataFrame(schema={"eps_id": pl.Int64, "agent": pl.Int64, "t": pl.Int64,
                                    "policy_id": pl.String, "obs": pl.Float64, "actions": pl.Int64,
                                    "terminated": pl.Boolean, "truncated": pl.Boolean,
                                    reward_column(RECORDED_NAME): pl.Float64, done_column(RECORDED_NAME): pl.Boolean})
    final = [] if finals is None else [final_state_column(frame["_episode"].to_numpy(), finals, FINAL_OBS)]
    return frame.select("eps_id", "agent", "t", "policy_id", "obs", *final, "actions", "terminated", "truncated",
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
    final = FINAL_OBS if FINAL_OBS in frame.columns else None
    return StateColumn("obs", width, name, 0, final=final)  # a bool state's pad: 0 (False)


def load_rllib(paths, *, on_error: str = "raise", skipped_path=None, overwrite: bool = False,
               unfinished: str = "error", allow_pickle: bool = False) -> pl.DataFrame:
    """:func:`read_rllib`'s frame; ``on_error="skip"`` needs a ``skipped_path`` (nothing is lost).

    Examples
    --------
    >>> frame = load_rllib("data/rllib/new_stack_parquet/data", unfinished="truncate")  # doctest: +SKIP
    """
    if on_error == "skip" and skipped_path is None:
        raise ParameterError("skipped_path", Text("is required with ", Fix("on_error", "skip", verb="", option=True), " so skipped lines are kept"),
                             None, hint="Name a side file, or call read_rllib() to get them in memory.")
    return read_rllib(paths, on_error=on_error, skipped_path=skipped_path, overwrite=overwrite,
                      unfinished=unfinished, allow_pickle=allow_pickle).frame
