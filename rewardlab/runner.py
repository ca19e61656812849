"""Call reward plug-ins batch by batch, as kanachan does, and check the contract after every call.

The runner turns a batch plan (:mod:`rewardlab.batch_modes`) into calls of
``get_reward(data, contiguous)`` under ``torch.no_grad()`` and streams the
results into preallocated arrays, so memory is bounded by the batches, not
the dataset.

How a call's TensorDict is made
-------------------------------
Consecutive batches are grouped into *chunks* of about :data:`CHUNK_ROWS`
rows (a bigger batch is a chunk of its own).  :class:`~rewardlab.batching.FrameArrays`
builds one TensorDict per chunk (one vectorized gather instead of one per
call), and each call gets a **new** TensorDict whose tensors are the rows of
its own batch in that chunk, plus its own copy of ``end_of_game`` as
``("next", "done")``.  No row is in two batches and IN fields may not be
written, so a call never sees another call's writes: ``("next", "done")``
equals ``end_of_game`` and there is no ``("next", "reward")`` before every
call, exactly as kanachan guarantees.  Several plug-ins share a chunk; when
one changed an IN field (reported as a contract problem) the chunk is rebuilt
before the next plug-in runs on it.

How unchanged IN fields are verified
------------------------------------
After every call the IN fields of the call's TensorDict must be the very
tensors handed over (a replacement is compared by value) and their
autograd version counters (``tensor._version``) must not have moved: torch
bumps the counter on every in-place operation on a tensor or a view of it
(``t[...] = x``, ``add_``, ``copy_``, ``out=``, TensorDict's ``apply_``,
``update_``, ...), also under ``torch.no_grad()``.  This costs nothing per
row.  When a counter moved, the batch is rebuilt from the frame and compared
element by element, so the message names the first changed element (a write
of identical values is not a change).  Writes that bypass torch (through
``tensor.numpy()`` or ``tensor.data``) do not move the counter: with
``strict=True`` the runner keeps a pristine copy of every chunk and compares
every call's IN fields with it exactly, which catches those too.
"""

from __future__ import annotations

import dataclasses
import traceback
from pathlib import Path
from typing import Iterable

import numpy as np
import polars as pl
import torch
from tensordict import TensorDict

from rewardlab import schema as S
from rewardlab.batching import FrameArrays
from rewardlab.contract import (
    DONE_KEY, IN_KEYS, REWARD_KEY, Violation, changed_in_place, check_done, check_in_fields,
    check_reward,
)
from rewardlab.errors import ContractError, PluginRuntimeError

__all__ = ["CHUNK_ROWS", "Locator", "RunOutcome", "run_plugins", "describe_batch", "plugin_traceback"]

#: Rows built into one TensorDict at a time (about 1.5 kB per row).
CHUNK_ROWS = 32768


def plugin_traceback(exc: BaseException, path: str | Path) -> tuple[str, int | None]:
    """Format ``exc``'s traceback from the first frame in the plug-in file on.

    rewardlab's own frames (the loader, the runner) are dropped; frames of
    libraries the plug-in called stay, so the failing torch call is visible.

    Returns
    -------
    (str, int or None)
        The formatted traceback and the line of the deepest frame in the
        plug-in file (None if the plug-in's frames are not in it).

    Examples
    --------
    >>> try:
    ...     exec(compile("1 / 0", "p.py", "exec"), {})
    ... except ZeroDivisionError as e:
    ...     text, line = plugin_traceback(e, "p.py")
    >>> line, text.splitlines()[1].strip()
    (1, 'File "p.py", line 1, in <module>')
    """
    path = str(path)
    te = traceback.TracebackException.from_exception(exc)
    frames = list(te.stack)
    mine = [i for i, f in enumerate(frames) if f.filename == path]
    line = None
    if mine:
        te.stack = traceback.StackSummary.from_list(frames[mine[0]:])
        line = frames[mine[-1]].lineno
    return "".join(te.format()), line


class Locator:
    """Describe frame rows for messages: game, seat, step and the source ``file:line``.

    Only the rows named in messages are read, so building one is free.

    Examples
    --------
    >>> Locator(frame).transition(0)  # doctest: +SKIP
    'frame row 0 (game 940eee3c..., seat 0, step 0; data/sample.tsv.gz:1)'
    """

    _COLUMNS = (S.GAME_ID, S.SEAT, S.STEP, S.SOURCE_FILE, S.SOURCE_LINE)

    def __init__(self, frame: pl.DataFrame):
        self._frame = frame
        self._columns = [c for c in self._COLUMNS if c in frame.columns]

    def info(self, row: int) -> dict:
        """The row's ``game_id``, ``seat``, ``step``, ``source_file``, ``source_line`` (those present)."""
        if not self._columns:
            return {}
        return dict(zip(self._columns, self._frame.select(self._columns).row(int(row))))

    def source(self, row: int) -> str:
        """``file:line`` of the row, or ``frame row N`` when the frame has no source columns."""
        info = self.info(row)
        if info.get(S.SOURCE_FILE) is not None and info.get(S.SOURCE_LINE) is not None:
            return f"{info[S.SOURCE_FILE]}:{info[S.SOURCE_LINE]}"
        return f"frame row {row}"

    def transition(self, row: int) -> str:
        """``frame row N (game G, seat S, step T; file:line)``."""
        info = self.info(row)
        parts = [f"{label} {info[col]}" for col, label in
                 ((S.GAME_ID, "game"), (S.SEAT, "seat"), (S.STEP, "step")) if info.get(col) is not None]
        where = ", ".join(parts)
        if info.get(S.SOURCE_FILE) is not None and info.get(S.SOURCE_LINE) is not None:
            where += ("; " if where else "") + f"{info[S.SOURCE_FILE]}:{info[S.SOURCE_LINE]}"
        return f"frame row {row}" + (f" ({where})" if where else "")


def describe_batch(mode: str, index: int, rows, contiguous: bool) -> str:
    """``batch 3 of mode 'episodes' (rows 120-188, 69 transitions, contiguous=True)``.

    Examples
    --------
    >>> describe_batch("sequential", 0, slice(0, 64), False)
    "batch 0 of mode 'sequential' (rows 0-63, 64 transitions, contiguous=False)"
    >>> describe_batch("shuffled", 2, np.array([9, 4, 7, 1]), False)
    "batch 2 of mode 'shuffled' (rows 9, 4, 7, ..., 4 transitions, contiguous=False)"
    """
    if isinstance(rows, slice):
        n = rows.stop - rows.start
        span = f"rows {rows.start}-{rows.stop - 1}" if n > 1 else f"row {rows.start}"
    else:
        n = len(rows)
        shown = ", ".join(str(int(r)) for r in rows[:3]) + (", ..." if n > 3 else "")
        span = f"row{'s' if n > 1 else ''} {shown}"
    span += f", {n} transition{'s' if n != 1 else ''}"
    return f"batch {index} of mode {mode!r} ({span}, contiguous={contiguous})"


@dataclasses.dataclass(eq=False)
class RunOutcome:
    """What one plug-in produced in one run (one batch mode and size).

    Attributes
    ----------
    plugin : Plugin
    mode : str
    batch_size : int or None
        None for ``episodes`` (whole episodes, any size).
    rewards : float64 array of shape ``[N]``
        NaN where the plug-in gave no float tensor of the right shape (or
        was not called, after an exception).
    dones : bool array of shape ``[N]``
        ``end_of_game`` where the plug-in gave no bool tensor of the right shape.
    calls : int
        Calls made.
    problems : dict
        ``{rule: (first ContractError, number of batches)}``, in the order found.
    error : PluginRuntimeError or None
        Set when ``get_reward`` raised; the run stopped there.

    Examples
    --------
    >>> [out] = run_plugins(arrays, locator, [plugin], plan, mode="episodes",
    ...                     batch_size=None, collect=True)  # doctest: +SKIP
    >>> out.problems, out.error  # doctest: +SKIP
    ({}, None)
    """

    plugin: object
    mode: str
    batch_size: int | None
    rewards: np.ndarray
    dones: np.ndarray
    calls: int = 0
    problems: dict = dataclasses.field(default_factory=dict)
    error: PluginRuntimeError | None = None


@dataclasses.dataclass
class _Chunk:
    rows: slice | np.ndarray
    batches: list  # (local start, local stop, global rows, contiguous)


def _as_slice_or_array(rows):
    if isinstance(rows, slice):
        return rows
    return np.asarray(rows, dtype=np.int64)


def _length(rows) -> int:
    return rows.stop - rows.start if isinstance(rows, slice) else len(rows)


def _close(pending: list) -> _Chunk:
    bounds, start = [], 0
    for rows, contiguous in pending:
        n = _length(rows)
        bounds.append((start, start + n, rows, contiguous))
        start += n
    slices = all(isinstance(r, slice) for r, _ in pending)
    if slices and all(pending[k][0].stop == pending[k + 1][0].start for k in range(len(pending) - 1)):
        rows = slice(pending[0][0].start, pending[-1][0].stop)
    else:
        rows = np.concatenate([np.arange(r.start, r.stop) if isinstance(r, slice) else r
                               for r, _ in pending]).astype(np.int64, copy=False)
    return _Chunk(rows, bounds)


def _chunks(batches: Iterable, limit: int):
    pending, size = [], 0
    for rows, contiguous in batches:
        rows = _as_slice_or_array(rows)
        n = _length(rows)
        if not n:
            continue
        if pending and size + n > limit:
            yield _close(pending)
            pending, size = [], 0
        pending.append((rows, bool(contiguous)))
        size += n
    if pending:
        yield _close(pending)


def _nest(leaves: dict, size: int) -> TensorDict:
    """A TensorDict with these leaves, nested by tuple keys, keys in the same order."""
    top: dict = {}
    for key, value in leaves.items():
        if isinstance(key, tuple):
            node = top
            for part in key[:-1]:
                node = node.setdefault(part, {})
            node[key[-1]] = value
        else:
            top[key] = value
    return TensorDict(top, batch_size=[size], device="cpu")


def _global_row(rows, local: int) -> int:
    return rows.start + local if isinstance(rows, slice) else int(rows[local])


class _Run:
    """One plug-in's pass over the batches (shared state for recording problems)."""

    def __init__(self, outcome: RunOutcome, locator: Locator, collect: bool):
        self.outcome = outcome
        self.locator = locator
        self.collect = collect

    def problem(self, violation: Violation, desc: str, rows) -> None:
        problems = self.outcome.problems
        if violation.rule in problems:
            first, count = problems[violation.rule]
            problems[violation.rule] = (first, count + 1)
            return
        first_row = _global_row(rows, 0)
        text = f"{violation.message}; in {desc}, first transition of the batch: {self.locator.source(first_row)}"
        if violation.row is not None:
            text += f"; offending transition: {self.locator.transition(_global_row(rows, violation.row))}"
        plugin = self.outcome.plugin
        error = ContractError(plugin.name, plugin.path, f"{text} [rule: {violation.rule}]")
        problems[violation.rule] = (error, 1)
        if not self.collect:
            raise error

    def crashed(self, exc: Exception, desc: str, rows) -> None:
        plugin = self.outcome.plugin
        text, line = plugin_traceback(exc, plugin.path)
        first_row = _global_row(rows, 0)
        error = PluginRuntimeError(
            plugin.name, plugin.path,
            f"get_reward raised {type(exc).__name__}: {exc} on {desc}; first transition of the "
            f"batch: {self.locator.transition(first_row)}",
            line=line, plugin_traceback=text)
        self.outcome.error = error
        if not self.collect:
            raise error from None


def run_plugins(
    arrays: FrameArrays,
    locator: Locator,
    plugins: list,
    batches: Iterable,
    *,
    mode: str,
    batch_size: int | None,
    strict: bool = False,
    collect: bool = False,
    bar=None,
    chunk_rows: int = CHUNK_ROWS,
) -> list[RunOutcome]:
    """Call every plug-in on every batch; check the contract after each call.

    Parameters
    ----------
    arrays : FrameArrays
        The frame's arrays, built once per run.
    locator : Locator
        Describes rows in messages.
    plugins : list of Plugin
        Distinct plug-ins (anything with ``name``, ``path``, ``get_reward``).
    batches : iterable of (slice or int array, bool)
        The plan (:func:`rewardlab.batch_modes.plan_batches`); every row at most once.
    mode : str
        The mode's name, for messages.
    batch_size : int or None
        Recorded in the outcomes.
    strict : bool
        Compare IN fields exactly with a pristine copy after every call
        instead of watching their version counters.
    collect : bool
        Record problems and go on (first problem of each rule kept, batches
        counted; a plug-in that raises stops) instead of raising the first.
    bar : tqdm or None
        Advanced by the rows of every call.
    chunk_rows : int
        Rows built into one TensorDict at a time.

    Returns
    -------
    list of RunOutcome
        One per plug-in, in order.

    Raises
    ------
    PluginRuntimeError, ContractError
        Unless ``collect``: the first exception or broken rule.

    Examples
    --------
    >>> from rewardlab.batch_modes import episode_ends, plan_batches
    >>> arrays = FrameArrays(frame)  # doctest: +SKIP
    >>> plan = plan_batches("episodes", episode_ends(arrays.end_of_game), batch_size=1)  # doctest: +SKIP
    >>> [out] = run_plugins(arrays, Locator(frame), [plugin], plan, mode="episodes",
    ...                     batch_size=None)  # doctest: +SKIP
    """
    n = arrays.n
    outcomes = [RunOutcome(p, mode, batch_size, np.full(n, np.nan), arrays.end_of_game.copy())
                for p in plugins]
    runs = [_Run(o, locator, collect) for o in outcomes]
    first_index = 0
    with torch.no_grad():
        for chunk in _chunks(batches, chunk_rows):
            active = [r for r in runs if r.outcome.error is None]
            if not active:
                break
            eog = np.ascontiguousarray(arrays.end_of_game[chunk.rows])
            eor = np.ascontiguousarray(arrays.end_of_round[chunk.rows])
            leaves = _leaves(arrays.tensordict(chunk.rows))
            pristine = {k: leaves[k].clone() for k in IN_KEYS} if strict else None
            for run in active:
                if _run_chunk(run, arrays, chunk, leaves, pristine, eog, eor, first_index, mode, bar):
                    # an IN field was changed (and collected): fresh rows for the next plug-in
                    leaves = _leaves(arrays.tensordict(chunk.rows))
            first_index += len(chunk.batches)
    return outcomes


_WATCHED = IN_KEYS + (REWARD_KEY, DONE_KEY)


def _leaves(data: TensorDict) -> dict:
    return dict(data.items(include_nested=True, leaves_only=True))


def _run_chunk(run: _Run, arrays: FrameArrays, chunk: _Chunk, leaves: dict, pristine: dict | None,
               eog, eor, first_index: int, mode: str, bar) -> bool:
    """One plug-in over one chunk's batches; True when it changed an IN field in place."""
    outcome = run.outcome
    get_reward = outcome.plugin.get_reward
    dirty = False
    for j, (a, b, rows, contiguous) in enumerate(chunk.batches):
        size = b - a
        handed = {k: v[a:b] for k, v in leaves.items()}
        handed[DONE_KEY] = torch.from_numpy(eog[a:b].copy())
        versions = [handed[k]._version for k in IN_KEYS]
        data = _nest(handed, size)
        try:
            returned = get_reward(data, contiguous)
        except Exception as exc:  # the plug-in's own failure, reported with its traceback
            run.crashed(exc, describe_batch(mode, first_index + j, rows, contiguous), rows)
            return dirty
        outcome.calls += 1
        after = _leaves(data)
        for key in _WATCHED:  # a non-tensor value is not a leaf: fetch it to report it
            if key not in after:
                after[key] = data.get(key, None)
        found: list[Violation] = []
        if pristine is not None:
            reference = {k: pristine[k][a:b] for k in IN_KEYS}
            suspects = [k for k in IN_KEYS
                        if not np.array_equal(handed[k].numpy(), reference[k].numpy())]
        else:
            suspects = [k for k, v in zip(IN_KEYS, versions) if handed[k]._version != v]
            reference = _leaves(arrays.tensordict(rows)) if suspects else {}
        changes = [v for k in suspects if (v := changed_in_place(k, reference[k], handed[k])) is not None]
        if changes:
            found.append(min(changes, key=lambda v: v.row))
            dirty = True
        v = check_in_fields({k: handed[k] for k in IN_KEYS}, after)
        if v is not None:
            found.append(v)
        reward = after.get(REWARD_KEY)
        bad_reward = check_reward(reward, size, returned=returned)
        done = after.get(DONE_KEY)
        bad_done = check_done(done, eog[a:b], eor[a:b])
        found += [x for x in (bad_reward, bad_done) if x is not None]
        for v in found:
            run.problem(v, describe_batch(mode, first_index + j, rows, contiguous), rows)
        # keep what the plug-in gave whenever it has the right form (even NaN, or a missed
        # episode end), so runs in different modes compare the plug-in's own outputs
        if bad_reward is None or bad_reward.rule == "reward_not_finite":
            outcome.rewards[rows] = reward.detach().reshape(-1).numpy()
        if bad_done is None or bad_done.rule == "done_last_step":
            outcome.dones[rows] = done.detach().numpy()
        if bar is not None:
            bar.update(size)
    if dirty and pristine is not None:
        for k in IN_KEYS:
            leaves[k].copy_(pristine[k])
        return False
    return dirty
