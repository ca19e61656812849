"""Call reward plug-ins batch by batch, as kanachan does, and check the contract after every call.

The runner turns a batch plan (:mod:`rewardlab.plugins.batch_modes`) into calls of
the contract's entry point (kanachan's ``get_reward(data, contiguous)``; see
:mod:`rewardlab.contracts`) under ``torch.no_grad()`` and streams the
results into preallocated arrays, so memory is bounded by the batches, not
the dataset.  What a call receives (its TensorDict, IN keys, the done it is
handed) and what ``done`` may be afterwards come from the contract; the text
below describes the kanachan contract's, and every contract's are handed
over the same way.

How a call's TensorDict is made
-------------------------------
Consecutive batches are grouped into *chunks* of about :data:`CHUNK_ROWS`
rows (a bigger batch is a chunk of its own; :func:`~rewardlab.plugins.chunks.group_batches`).  The contract's arrays
(kanachan: :class:`~rewardlab.contracts.kanachan.batching.FrameArrays`) build one TensorDict per
chunk (one vectorized gather instead of one per call), and each call gets a
**new** TensorDict whose tensors are the rows of its own batch in that chunk,
plus its own copy of ``end_of_game`` as ``("next", "done")``.  No row is in
two batches and IN fields may not be written, so a call never sees another
call's writes: ``("next", "done")`` equals ``end_of_game`` and there is no
``("next", "reward")`` before every call, exactly as kanachan guarantees.  Several plug-ins run on the same chunk,
each on its own copy of it (the last one on the original), so no plug-in ever
sees another's writes, even writes that bypass torch.

Where problems are described
----------------------------
The runner records what it finds as :class:`Finding` objects (rule, message,
batch, frame rows) and turns them into :class:`~rewardlab.core.errors.ContractError`
/ :class:`~rewardlab.core.errors.PluginRuntimeError` with a :class:`Locator` only at
the end (:func:`resolve`).  A run in a child process (:mod:`rewardlab.plugins.isolation`)
therefore needs no Polars, and its findings come back as plain data.

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

from rewardlab.sources.kanachan import schema as S
from rewardlab.contracts.checks import REWARD_DTYPES, Violation, changed_in_place, check_in_fields
from rewardlab.contracts.terms import TERMS_KEY, check_terms, find_terms
from rewardlab.contracts.base import Contract, ContractArrays
from rewardlab.contracts.registry import DEFAULT_CONTRACT, get_contract
from rewardlab.core.errors import ContractError, PluginRuntimeError
from rewardlab.core.heap import frozen_heap
from rewardlab.plugins.chunks import BufferCopies, Chunk, group_batches

__all__ = ["CHUNK_ROWS", "Finding", "Locator", "RunOutcome", "run_plugins", "resolve",
           "describe_batch", "plugin_traceback", "safe_text"]

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

    #: The ``(column, label)`` pairs that describe a row unless ``columns=`` says otherwise.
    LABELS = ((S.GAME_ID, "game"), (S.SEAT, "seat"), (S.STEP, "step"))
    _SOURCE = (S.SOURCE_FILE, S.SOURCE_LINE)

    def __init__(self, frame: pl.DataFrame, *, columns: tuple | None = None):
        self._frame = frame
        self._labels = tuple(self.LABELS if columns is None else columns)
        wanted = (*(c for c, _ in self._labels), *self._SOURCE)
        self._columns = [c for c in dict.fromkeys(wanted) if c in frame.columns]

    def info(self, row: int) -> dict:
        """The row's labelled columns (``game_id``, ``seat``, ``step``) and ``source_file``,
        ``source_line`` (those present)."""
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
        parts = [f"{label} {info[col]}" for col, label in self._labels if info.get(col) is not None]
        where = ", ".join(parts)
        if info.get(S.SOURCE_FILE) is not None and info.get(S.SOURCE_LINE) is not None:
            where += ("; " if where else "") + f"{info[S.SOURCE_FILE]}:{info[S.SOURCE_LINE]}"
        return f"frame row {row}" + (f" ({where})" if where else "")


def safe_text(exc: BaseException) -> str:
    """``str(exc)``, or a note saying it failed (a plug-in's exception may break ``__str__``).

    Examples
    --------
    >>> class Odd(Exception):
    ...     def __str__(self):
    ...         raise RuntimeError("no")
    >>> safe_text(ValueError("bad")), safe_text(Odd())
    ('bad', '<str() of the Odd raised RuntimeError>')
    """
    try:
        return str(exc)
    except BaseException as inner:  # noqa: BLE001 - the plug-in's object, anything goes
        return f"<str() of the {type(exc).__name__} raised {type(inner).__name__}>"


def describe_batch(mode: str, index: int, rows, contiguous: bool, *, setting: str | None = None,
                   offset: int = 0) -> str:
    """``batch 3 of mode 'episodes' (rows 120-188, 69 transitions, contiguous=True)``.

    ``setting`` (the kanachan setting the mode reproduces, see
    :func:`rewardlab.plugins.batch_modes.mode_setting`) is added when given;
    ``offset`` is added to the row positions (a shard's first row in the stream).

    Examples
    --------
    >>> describe_batch("sequential", 0, slice(0, 64), False)
    "batch 0 of mode 'sequential' (rows 0-63, 64 transitions, contiguous=False)"
    >>> describe_batch("shuffled", 2, np.array([9, 4, 7, 1]), False)
    "batch 2 of mode 'shuffled' (rows 9, 4, 7, ..., 4 transitions, contiguous=False)"
    >>> describe_batch("dataloader", 0, np.array([0, 2]), False,
    ...                setting="kanachan's offline DataLoader, num_workers=2")
    "batch 0 of mode 'dataloader' (kanachan's offline DataLoader, num_workers=2; rows 0, 2, 2 transitions, contiguous=False)"
    """
    if isinstance(rows, slice):
        n = rows.stop - rows.start
        a = rows.start + offset
        span = f"rows {a}-{a + n - 1}" if n > 1 else f"row {a}"
    else:
        n = len(rows)
        shown = ", ".join(str(int(r) + offset) for r in rows[:3]) + (", ..." if n > 3 else "")
        span = f"row{'s' if n > 1 else ''} {shown}"
    span += f", {n} transition{'s' if n != 1 else ''}"
    if setting:
        span = f"{setting}; {span}"
    return f"batch {index} of mode {mode!r} ({span}, contiguous={contiguous})"


@dataclasses.dataclass(frozen=True)
class Finding:
    """One problem a run found, before it is described with the frame's game, seat and line.

    Attributes
    ----------
    kind : str
        ``"contract"`` (a broken rule) or ``"crash"`` (``get_reward`` raised).
    rule : str
        The contract rule, or ``"raised"`` for a crash.
    message : str
        The violation's message, or ``"get_reward raised T: text"`` (the contract's entry point).
    batch : str
        :func:`describe_batch` of the call.
    first_row : int
        Frame row of the batch's first transition.
    row : int or None
        Frame row of the offending transition, when there is one.
    traceback : str or None
        The plug-in's traceback (crashes).
    line : int or None
        Line in the plug-in file of the deepest plug-in frame (crashes).

    Examples
    --------
    >>> Finding("contract", "reward_missing", "no reward", "batch 0", 0).kind
    'contract'
    """

    kind: str
    rule: str
    message: str
    batch: str
    first_row: int
    row: int | None = None
    traceback: str | None = None
    line: int | None = None

    def error(self, plugin, locator: "Locator | None") -> ContractError | PluginRuntimeError:
        """The error this finding stands for, described with ``locator`` (None: frame rows only)."""
        if self.kind == "crash":
            first = locator.transition(self.first_row) if locator else f"frame row {self.first_row}"
            return PluginRuntimeError(
                plugin.name, plugin.path,
                f"{self.message} on {self.batch}; first transition of the batch: {first}",
                line=self.line, plugin_traceback=self.traceback)
        source = locator.source(self.first_row) if locator else f"frame row {self.first_row}"
        text = f"{self.message}; in {self.batch}, first transition of the batch: {source}"
        if self.row is not None:
            where = locator.transition(self.row) if locator else f"frame row {self.row}"
            text += f"; offending transition: {where}"
        return ContractError(plugin.name, plugin.path, f"{text} [rule: {self.rule}]")


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
        The rewards the plug-in gave, exactly (a float16 or float32 reward
        widens to float64 without rounding); NaN where the plug-in gave no
        float tensor of the right shape (or was not called, after an exception).
    dones : bool array of shape ``[N]``
        The contract's episode flags (kanachan: ``end_of_game``) where the
        plug-in gave no bool tensor of the right shape.
    calls : int
        Calls made.
    problems : dict
        ``{rule: (first problem, number of batches)}``, in the order found;
        the first problem is a :class:`~rewardlab.core.errors.ContractError` once
        resolved (:func:`resolve`), a :class:`Finding` before.
    error : PluginRuntimeError, Finding or None
        Set when ``get_reward`` raised (or its process ended); the run stopped there.
    reward_dtypes : tuple of str
        The reward dtypes the plug-in returned (``"float32"``, ...), in the
        order first seen: what kanachan's trainer receives.
    contiguous : bool or None
        The ``contiguous`` flag of an ``episodes`` run (None for other modes).
    convention : str or None
        The contract's convention the TensorDicts were built in (kanachan:
        ``"offline"`` or ``"simulation"``); None for a contract that has none.
    terms : dict of str to float64 array of shape ``[N]``
        The named reward terms the plug-in wrote under ``("next", "reward_terms", name)``
        (:data:`rewardlab.contracts.terms.TERMS_KEY`), exactly (widened to float64), by
        name in the order first seen; NaN where it gave none of the right form.  Empty for
        a plug-in that writes no terms (nothing is allocated for it).
    term_names : tuple of str or None
        The term names of the plug-in's first call (``()``: none); None before any call.
        Later calls must write the same set (rule ``term_names_vary``).

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
    error: object = None
    reward_dtypes: tuple = ()
    contiguous: bool | None = None
    convention: str | None = "offline"
    terms: dict = dataclasses.field(default_factory=dict)
    term_names: tuple | None = None

    @property
    def reward_dtype(self) -> str | None:
        """The widest reward dtype returned (None when no valid reward came back)."""
        order = ("float16", "float32", "float64")
        return max(self.reward_dtypes, key=order.index) if self.reward_dtypes else None


def resolve(outcomes: list, locator: "Locator | None") -> list:
    """Turn the outcomes' :class:`Finding` objects into rewardlab errors described by ``locator``.

    Examples
    --------
    >>> outcomes = resolve(outcomes, Locator(frame))  # doctest: +SKIP
    """
    for outcome in outcomes:
        if isinstance(outcome.error, Finding):
            outcome.error = outcome.error.error(outcome.plugin, locator)
        outcome.problems = {rule: (f.error(outcome.plugin, locator) if isinstance(f, Finding) else f, n)
                            for rule, (f, n) in outcome.problems.items()}
    return outcomes


_CPU = torch.device("cpu")


def _nest(leaves: dict, size: int) -> TensorDict:
    """A TensorDict with these leaves, nested by tuple keys, keys in the same order.

    ``leaves`` are CPU tensors whose first dimension is ``size`` (rows of one
    chunk), so nothing needs the constructor's checks and moves: it is built
    with ``TensorDict._new_unsafe`` (as TorchRL's losses build theirs), a
    third of the constructor's cost per call.  The result is the TensorDict
    ``TensorDict(nested, batch_size=[size], device="cpu")`` builds, node for
    node (``tests/test_contracts.py`` compares them for both contracts;
    tensordict is pinned).
    """
    top: dict = {}
    for key, value in leaves.items():
        if isinstance(key, tuple):
            node = top
            for part in key[:-1]:
                node = node.setdefault(part, {})
            node[key[-1]] = value
        else:
            top[key] = value
    return TensorDict._new_unsafe(top, batch_size=torch.Size([size]), device=_CPU)


def _global_row(rows, local: int) -> int:
    return rows.start + local if isinstance(rows, slice) else int(rows[local])


class _Stop(Exception):
    """Ends a run at the first problem when problems are not collected."""


class _Run:
    """One plug-in's pass over the batches (shared state for recording problems)."""

    def __init__(self, outcome: RunOutcome, collect: bool, entry_point: str = "get_reward", offset: int = 0):
        self.outcome = outcome
        self.collect = collect
        self.entry_point = entry_point
        self.offset = offset

    def problem(self, violation: Violation, desc: str, rows) -> None:
        problems = self.outcome.problems
        if violation.rule in problems:
            first, count = problems[violation.rule]
            problems[violation.rule] = (first, count + 1)
            return
        row = None if violation.row is None else _global_row(rows, violation.row) + self.offset
        problems[violation.rule] = (
            Finding("contract", violation.rule, violation.message, desc,
                    _global_row(rows, 0) + self.offset, row), 1)
        if not self.collect:
            raise _Stop

    def crashed(self, exc: BaseException, desc: str, rows) -> None:
        text, line = plugin_traceback(exc, self.outcome.plugin.path)
        self.outcome.error = Finding(
            "crash", "raised", f"{self.entry_point} raised {type(exc).__name__}: {safe_text(exc)}", desc,
            _global_row(rows, 0) + self.offset, traceback=text, line=line)
        if not self.collect:
            raise _Stop


def run_plugins(
    arrays: ContractArrays,
    locator: Locator | None,
    plugins: list,
    batches: Iterable,
    *,
    mode: str,
    batch_size: int | None,
    strict: bool = False,
    collect: bool = False,
    bar=None,
    chunk_rows: int = CHUNK_ROWS,
    convention: str | None = None,
    setting: str | None = None,
    status=None,
    interrupts_are_plugins: bool = False,
    contract: Contract | str | None = None,
    row_offset: int = 0,
    first_batch: int = 0,
    term_names: list | None = None,
) -> list[RunOutcome]:
    """Call every plug-in on every batch; check the contract after each call.

    Parameters
    ----------
    arrays : ContractArrays
        The frame's arrays, built once per run by the contract
        (``contract.arrays(frame, spec)``; kanachan: :class:`~rewardlab.contracts.kanachan.batching.FrameArrays`).
    locator : Locator or None
        Describes rows in messages; None leaves the problems as
        :class:`Finding` objects (for a child process: :func:`resolve` them
        in the parent) and raises nothing.
    plugins : list of Plugin
        Distinct plug-ins (anything with ``name``, ``path``, ``get_reward``).
    batches : iterable of (slice or int array, bool)
        The plan (:func:`rewardlab.plugins.batch_modes.plan_batches`); every row at most once.
    mode : str
        The mode's name, for messages.
    batch_size : int or None
        Recorded in the outcomes.
    strict : bool
        Compare IN fields exactly with a pristine copy after every call
        instead of watching their version counters.
    collect : bool
        Record problems and go on (first problem of each rule kept, batches
        counted; a plug-in that raises stops) instead of stopping at the first.
    bar : tqdm or None
        Advanced by the rows of every call.
    chunk_rows : int
        Rows built into one TensorDict at a time.
    convention : str or None
        How the TensorDicts are built, one of the contract's conventions
        (kanachan: ``"offline"``, ``"simulation"``); None is its default.
        A contract without conventions refuses one.
    setting : str or None
        The kanachan setting the mode reproduces, for messages.
    status : rewardlab.plugins.isolation.ChildStatus or None
        Told what runs before each call and the rows done after it.
    interrupts_are_plugins : bool
        Treat a ``KeyboardInterrupt`` raised inside ``get_reward`` as the
        plug-in's failure (in a child process, which ignores Ctrl-C, only the
        plug-in can raise it); False lets it through as the user's Ctrl-C.
    contract : Contract, str or None
        The plug-in contract ``arrays`` were built by (a registered name or a
        :class:`~rewardlab.contracts.base.Contract`); None is
        :data:`rewardlab.contracts.registry.DEFAULT_CONTRACT` (kanachan's).
    row_offset, first_batch : int
        Added to the rows and batch numbers in messages and findings: the
        position of ``arrays``' first row and the number of batches before
        it in a stream of shards (:func:`rewardlab.plugins.shards.run_shards`).
        The outcomes' arrays are indexed by ``arrays``' rows.
    term_names : list or None
        Per plug-in, the reward term names an earlier part of the same pass
        saw (a tuple; None: no call yet), so the rule ``term_names_vary``
        holds across the windows of a stream of shards; None: no call yet for any.

    Returns
    -------
    list of RunOutcome
        One per plug-in, in order.

    Raises
    ------
    PluginRuntimeError, ContractError
        Unless ``collect`` (or ``locator`` is None): the first exception or broken rule.

    Examples
    --------
    >>> from rewardlab.plugins.batch_modes import episode_ends, plan_batches
    >>> arrays = KANACHAN.arrays(frame, None)  # doctest: +SKIP
    >>> plan = plan_batches("episodes", episode_ends(KANACHAN.episode_flags(arrays)),
    ...                     batch_size=1)  # doctest: +SKIP
    >>> [out] = run_plugins(arrays, Locator(frame), [plugin], plan, mode="episodes",
    ...                     batch_size=None)  # doctest: +SKIP
    """
    contract = get_contract(DEFAULT_CONTRACT if contract is None else contract)
    if convention is None:
        convention = contract.default_convention
    options = contract.options(convention)
    in_keys = contract.in_keys(arrays)
    n = arrays.n
    ends = contract.episode_flags(arrays)
    names = [None] * len(plugins) if term_names is None else list(term_names)
    outcomes = [RunOutcome(p, mode, batch_size, np.full(n, np.nan), ends.copy(), convention=convention,
                           term_names=None if t is None else tuple(t))
                for p, t in zip(plugins, names)]
    runs = [_Run(o, collect, contract.entry_point, row_offset) for o in outcomes]
    first_index = first_batch
    context = _Context(arrays, mode, options, setting, bar, status, interrupts_are_plugins,
                       contract, in_keys, (*in_keys, contract.reward_key, contract.done_key), row_offset)
    copies = BufferCopies()
    stopped = False
    # frozen_heap: the collector's full passes skip the ~330k objects the imports left (core.heap)
    with torch.no_grad(), frozen_heap():
        for chunk in group_batches(batches, chunk_rows):
            active = [r for r in runs if r.outcome.error is None]
            if not active or stopped:
                break
            flags = contract.done_flags(arrays, chunk.rows, **options)
            base = _leaves(arrays.tensordict(chunk.rows, **options))
            pristine = {k: copies.copy(("pristine", k), base[k]) for k in in_keys} if strict else None
            for i, run in enumerate(active):
                # every plug-in but the last gets its own copy: none sees another's writes
                leaves = base if i == len(active) - 1 else {
                    k: copies.copy(("plug-in", k), v) for k, v in base.items()}
                try:
                    _run_chunk(run, context, chunk, leaves, pristine, flags, first_index)
                except _Stop:
                    stopped = True
                    break
            first_index += len(chunk.batches)
    if locator is None:
        return outcomes
    resolve(outcomes, locator)
    if not collect:
        for outcome in outcomes:
            if outcome.error is not None:
                raise outcome.error
            if outcome.problems:
                raise next(iter(outcome.problems.values()))[0]
    return outcomes


@dataclasses.dataclass(frozen=True)
class _Context:
    arrays: ContractArrays
    mode: str
    options: dict
    setting: str | None
    bar: object
    status: object
    interrupts_are_plugins: bool
    contract: Contract
    in_keys: tuple
    watched: tuple  # the IN keys, the reward and the done
    row_offset: int = 0


def _leaves(data: TensorDict) -> dict:
    return dict(data.items(include_nested=True, leaves_only=True))


def _run_chunk(run: _Run, ctx: _Context, chunk: Chunk, leaves: dict, pristine: dict | None,
               flags: tuple, first_index: int) -> None:
    """One plug-in over one chunk's batches (``flags``: the contract's done flags of the chunk)."""
    outcome = run.outcome
    get_reward = outcome.plugin.get_reward
    contract, in_keys = ctx.contract, ctx.in_keys
    # each batch's rows of every leaf, as views (the batches tile the chunk in order): one split per leaf
    # instead of a slice per leaf and batch
    pieces = {k: torch.split(v, [b - a for a, b, _, _ in chunk.batches]) for k, v in leaves.items()}
    for j, (a, b, rows, contiguous) in enumerate(chunk.batches):
        size = b - a
        handed = {k: v[j] for k, v in pieces.items()}
        handed[contract.done_key] = torch.from_numpy(flags[0][a:b].copy())
        versions = [handed[k]._version for k in in_keys]
        data = _nest(handed, size)
        desc = describe_batch(ctx.mode, first_index + j, rows, contiguous, setting=ctx.setting,
                              offset=ctx.row_offset)
        if ctx.status is not None:
            ctx.status.doing(f"plug-in {outcome.plugin.name!r} on {desc}")
        try:
            returned = contract.call(get_reward, data, contiguous)
        except BaseException as exc:  # noqa: BLE001 - the plug-in's own failure, with its traceback
            if isinstance(exc, KeyboardInterrupt) and not ctx.interrupts_are_plugins:
                raise  # the user's Ctrl-C
            run.crashed(exc, desc, rows)
            return
        outcome.calls += 1
        if ctx.mode == "episodes":
            outcome.contiguous = contiguous
        after = _leaves(data)
        for key in ctx.watched:  # a non-tensor value is not a leaf: fetch it to report it
            if key not in after:
                after[key] = data.get(key, None)
        found: list[Violation] = []
        if pristine is not None:
            reference = {k: pristine[k][a:b] for k in in_keys}
            suspects = [k for k in in_keys
                        if not np.array_equal(handed[k].numpy(), reference[k].numpy())]
        else:
            suspects = [k for k, v in zip(in_keys, versions) if handed[k]._version != v]
            reference = (_leaves(ctx.arrays.tensordict(rows, **ctx.options))
                         if suspects else {})
        changes = [v for k in suspects if (v := changed_in_place(k, reference[k], handed[k])) is not None]
        if changes:
            found.append(min(changes, key=lambda v: v.row))
        v = check_in_fields({k: handed[k] for k in in_keys}, after)
        if v is not None:
            found.append(v)
        reward = after.get(contract.reward_key)
        bad_reward = contract.check_reward(reward, size, returned=returned)
        done = after.get(contract.done_key)
        bad_done = contract.check_done(done, *(f[a:b] for f in flags))
        found += [x for x in (bad_reward, bad_done) if x is not None]
        # keep what the plug-in gave whenever it has the right form (even NaN, or a missed
        # episode end), so runs in different modes compare the plug-in's own outputs
        if bad_reward is None or bad_reward.rule == "reward_not_finite":
            outcome.rewards[rows] = reward.detach().reshape(-1).numpy()
            dtype = str(reward.dtype).removeprefix("torch.")
            if dtype not in outcome.reward_dtypes:
                outcome.reward_dtypes += (dtype,)
        if bad_done is None or bad_done.rule == "done_last_step":
            outcome.dones[rows] = done.detach().numpy()
        terms = find_terms(after)
        if terms or outcome.term_names:  # a plug-in without terms pays nothing more
            found += _take_terms(outcome, terms, size, rows)
        elif outcome.term_names is None:
            outcome.term_names = ()
        if ctx.bar is not None:
            ctx.bar.update(size)
        if ctx.status is not None:
            ctx.status.advance(size)
        for v in found:
            run.problem(v, desc, rows)


def _take_terms(outcome: RunOutcome, terms: dict, size: int, rows) -> list[Violation]:
    """Check a call's reward terms; keep those of the right form (even non-finite) in ``outcome.terms``."""
    bad = check_terms(terms, size, names=outcome.term_names)
    depth = len(TERMS_KEY) + 1
    if outcome.term_names is None:
        outcome.term_names = tuple(k[-1] for k in terms if len(k) == depth)
    if bad is None or bad.rule in ("term_not_finite", "term_names_vary"):
        for key, value in terms.items():
            if (len(key) != depth or key[-1] not in outcome.term_names or type(value) is not torch.Tensor
                    or value.layout != torch.strided or value.dtype not in REWARD_DTYPES or value.device.type != "cpu"
                    or tuple(value.shape) not in ((size,), (size, 1))):
                continue
            kept = outcome.terms.get(key[-1])
            if kept is None:
                kept = outcome.terms[key[-1]] = np.full(outcome.rewards.shape[0], np.nan)
            kept[rows] = value.detach().reshape(-1).numpy()
    return [] if bad is None else [bad]
