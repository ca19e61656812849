"""Run reward plug-ins over a stream of episode-aligned shards, with the results of one pass.

A *shard* is a run of whole episodes, in episode order; a whole in-memory
frame is one shard.  A dataset larger than memory read piece by piece, or the
blocks of a Ray Dataset, are a stream of shards: this module is the seam they
come through, and nothing in it needs a row position across shards.

* :class:`BatchStream` plans a batch mode shard by shard.  ``episodes`` and
  ``fragments`` never cross an episode, so each shard is planned alone.
  ``sequential``, ``dataloader`` and ``shuffled`` cut the rows into *blocks*
  (:func:`rewardlab.plugins.batch_modes.block_rows`) whose batches depend on the
  block only; the rows of an unfinished block are *carried* to the next
  shard.  Carried rows are the tail of the stream so far, so they end at an
  episode's end and need nothing from the next shard (the next state of a row
  is the following row of its episode).  The carry is less than one block:
  ``batch_size`` rows, ``num_workers * batch_size`` rows, or the shuffle
  window (``shuffle_window`` rows, :data:`~rewardlab.plugins.batch_modes.SHUFFLE_WINDOW`).
  The batches are exactly those of :func:`~rewardlab.plugins.batch_modes.plan_batches`
  over all the rows, however the stream is cut.
* :func:`stream_shards` runs plug-ins on a stream of shard *arrays* (what
  :class:`~rewardlab.contracts.kanachan.batching.FrameArrays` builds; no Polars, so it runs in
  the child process of :mod:`rewardlab.plugins.isolation`).  Each *window* (the
  carried rows, then the shards waiting) is handed to
  :func:`rewardlab.plugins.runner.run_plugins` once it holds a whole block, with its
  batches' positions relative to the window; it yields each shard's results
  as soon as every row of it has been through a batch.
  :func:`run_shards` merges them (:func:`merge_outcomes`) into the outcome
  of one pass.
* :func:`split_shards` cuts a frame into shards at episode ends (tests, and
  the in-memory engine); :class:`ShardLocator` describes rows of a stream of
  shard frames by ``file:line`` in messages.

Positions in messages and findings count rows from the start of the stream
(for a frame cut into shards, the frame's rows), so a stream reports a
problem with the same text as one frame; nothing else uses them.  An engine
for a new kind of shard (a file read piece by piece, a Ray block) turns each
into arrays and calls :func:`stream_shards`; modes other than ``episodes``
and ``fragments`` need the shards in stream order, since they carry rows from
one to the next.

Examples
--------
>>> from rewardlab.contracts.registry import DEFAULT_CONTRACT, contract_for, get_contract
>>> shards = split_shards(frame, rows_per_shard=5000)  # doctest: +SKIP
>>> outcomes = run_shards([FrameArrays(s) for s in shards], [plugin], mode="sequential",
...                       batch_size=64)  # doctest: +SKIP
"""

from __future__ import annotations

import bisect
import collections
import dataclasses
import itertools
from typing import Iterable, Iterator

import numpy as np
import polars as pl

from rewardlab.plugins.batch_modes import (
    BATCH_MODES, DEFAULT_NUM_WORKERS, SHUFFLE_WINDOW, block_rows, check_contiguous, check_num_workers,
    check_shuffle_window, episode_ends, plan_block, plan_episodes, plan_fragments,
)
from rewardlab.contracts.registry import DEFAULT_CONTRACT, contract_for, get_contract
from rewardlab.core.cuts import cuts_at_ends, frame_episode_ends
from rewardlab.core.errors import FrameError, ParameterError, ShardError, check_choice, check_int
from rewardlab.plugins.execution import check_frame
from rewardlab.plugins.runner import CHUNK_ROWS, Locator, RunOutcome, run_plugins
from rewardlab.sources.registry import spec_of

__all__ = ["split_shards", "as_shard_frames", "shard_arrays", "BatchStream", "ShardLocator",
           "stream_shards", "run_shards", "merge_outcomes"]

_SHARD_HINT = "A shard holds whole episodes: cut shards at episode ends (rewardlab.plugins.shards.split_shards)"


def split_shards(frame: pl.DataFrame, *, rows_per_shard: int, spec=None) -> list[pl.DataFrame]:
    """Cut ``frame`` into shards of whole episodes, each of at least ``rows_per_shard`` rows.

    A shard ends at the first episode end at or after ``rows_per_shard``
    rows (the last shard may be smaller); episodes are found through the
    frame's spec (:func:`rewardlab.sources.registry.spec_of`).  The shards
    are zero-copy slices of ``frame``.

    Parameters
    ----------
    frame : polars.DataFrame
        Rows in episode order, every episode complete.
    rows_per_shard : int
        Rows per shard, >= 1 (a longer episode makes its shard longer).
    spec : FrameSpec or None
        The frame's spec, when it carries none.

    Returns
    -------
    list of polars.DataFrame
        Empty for an empty frame.

    Examples
    --------
    >>> import polars as pl
    >>> from rewardlab.core.spec import FrameSpec
    >>> f = pl.DataFrame({"e": [0, 0, 0, 1, 2, 2]})
    >>> [s.height for s in split_shards(f, rows_per_shard=2, spec=FrameSpec(name="s", episode=("e",)))]
    [3, 3]
    """
    if not isinstance(frame, pl.DataFrame):
        raise ParameterError("frame", "should be a polars.DataFrame", type(frame).__name__)
    rows_per_shard = check_int("rows_per_shard", rows_per_shard, low=1, rule="should be an integer >= 1")
    spec = spec_of(frame, spec)
    starts = [0, *cuts_at_ends(frame_episode_ends(frame, spec), rows_per_shard)]
    return [frame.slice(a, b - a) for a, b in zip(starts[:-1], starts[1:])]


def as_shard_frames(data) -> tuple[list[pl.DataFrame], bool]:
    """``(shard frames, whether data was one frame)``: a DataFrame is one shard; an iterable, the shards.

    Validates each shard (an eager ``polars.DataFrame``); the shards are
    held in a list.

    Examples
    --------
    >>> import polars as pl
    >>> shards, single = as_shard_frames(pl.DataFrame({"a": [1]}))
    >>> len(shards), single
    (1, True)
    """
    if isinstance(data, pl.DataFrame):
        return [data], True
    if isinstance(data, (pl.LazyFrame, pl.Series, str, bytes)) or not isinstance(data, Iterable):
        check_frame(data)  # the frame's own message (collect a LazyFrame, ...)
    shards = list(data)
    for i, shard in enumerate(shards):
        if not isinstance(shard, pl.DataFrame):
            raise ParameterError("frame", f"should hold only polars.DataFrame shards; shard {i} is a "
                                 f"{type(shard).__name__}", type(shard).__name__,
                                 hint="Collect LazyFrames first.")
    return shards, False


def shard_arrays(frames: list[pl.DataFrame], arrays_of=None) -> list:
    """The arrays of each shard frame (``arrays_of(frame)``), naming the shard that cannot be built.

    ``arrays_of`` None builds them with the contract each shard's spec names
    (:func:`rewardlab.contracts.registry.contract_for`).

    Examples
    --------
    >>> arrays = shard_arrays(split_shards(frame, rows_per_shard=4096))  # doctest: +SKIP
    """
    out = []
    for i, frame in enumerate(frames):
        try:
            if arrays_of is None:
                contract, spec = contract_for(frame)
                out.append(contract.arrays(frame, spec))
            else:
                out.append(arrays_of(frame))
        except FrameError as exc:
            if len(frames) == 1:  # one frame is no stream: its own error, unchanged
                raise
            raise ShardError(i, str(exc), hint=_SHARD_HINT) from None
    return out


class ShardLocator(Locator):
    """A :class:`~rewardlab.plugins.runner.Locator` over a stream of shard frames; rows count from the stream's start.

    Examples
    --------
    >>> ShardLocator(split_shards(frame, rows_per_shard=100)).source(250)  # doctest: +SKIP
    'data/sample.tsv.gz:251'
    """

    def __init__(self, frames: list[pl.DataFrame], *, columns: tuple | None = None):
        super().__init__(frames[0] if frames else pl.DataFrame(), columns=columns)  # labels; rows below
        self._locators = [Locator(f, columns=columns) for f in frames]
        self._starts = np.concatenate(([0], np.cumsum([f.height for f in frames]))).tolist()

    def info(self, row: int) -> dict:
        k = bisect.bisect_right(self._starts, int(row)) - 1
        k = min(max(k, 0), len(self._locators) - 1)
        return self._locators[k].info(int(row) - self._starts[k]) if self._locators else {}


class BatchStream:
    """The batches of a batch mode, planned one shard at a time.

    Feed the shards' episode ends in stream order (:meth:`feed`); each call
    plans a *window*: the rows carried from before, then this shard.  The
    batches, in order over all calls, are those of
    :func:`rewardlab.plugins.batch_modes.plan_batches` over the whole stream.

    Parameters
    ----------
    mode : str
        One of :data:`rewardlab.plugins.batch_modes.BATCH_MODES`.
    batch_size, seed, contiguous, num_workers, shuffle_window
        As :func:`rewardlab.plugins.batch_modes.plan_batches`.

    Attributes
    ----------
    carried : int
        Rows carried to the next window (fewer than one block).

    Examples
    --------
    >>> import numpy as np
    >>> stream = BatchStream("sequential", batch_size=4)
    >>> done, plan = stream.feed(np.array([3]))
    >>> done, list(plan), stream.carried
    (0, [], 3)
    >>> done, plan = stream.feed(np.array([2, 6]), last=True)
    >>> done, list(plan)
    (9, [(slice(0, 4, None), False), (slice(4, 8, None), False), (slice(8, 9, None), False)])
    """

    def __init__(self, mode: str, *, batch_size: int, seed: int = 0, contiguous: bool | None = None,
                 num_workers: int = DEFAULT_NUM_WORKERS, shuffle_window: int = SHUFFLE_WINDOW):
        check_choice("batch_mode", mode, BATCH_MODES)
        self.mode = mode
        self.batch_size = batch_size
        self.contiguous = check_contiguous(mode, contiguous)
        self.num_workers = check_num_workers(num_workers)
        self.block = block_rows(mode, batch_size=batch_size, num_workers=num_workers,
                                shuffle_window=check_shuffle_window(shuffle_window))
        seed = check_int("seed", seed, low=0, rule="should be an integer >= 0")
        self._rng = np.random.default_rng(seed) if mode == "shuffled" else None
        self.carried = 0

    def feed(self, ends: np.ndarray, *, last: bool = False) -> tuple[int, Iterator]:
        """Plan the window of the carried rows followed by a shard whose episodes end at ``ends``.

        Parameters
        ----------
        ends : int array
            The shard's exclusive episode end positions, relative to the
            shard (:func:`rewardlab.plugins.batch_modes.episode_ends`); empty for an
            empty shard.
        last : bool
            True for the stream's last shard: every row left is planned.

        Returns
        -------
        (int, iterator of (slice or int64 array, bool))
            ``done``: the window's first ``done`` rows are in the batches
            (positions relative to the window); the rest are carried.
        """
        ends = np.asarray(ends, dtype=np.int64)
        rows = int(ends[-1]) if ends.size else 0
        if self.block is None:  # episodes, fragments: whole episodes, nothing carried
            plan = (plan_episodes(ends, contiguous=self.contiguous) if self.mode == "episodes"
                    else plan_fragments(ends, self.batch_size))
            return rows, plan
        total = self.carried + rows
        done = total if last else total - total % self.block
        self.carried = total - done
        starts = range(0, done, self.block)
        if self.mode == "shuffled":  # draw the permutations now, in window order
            blocks = [list(plan_block("shuffled", min(self.block, done - a), batch_size=self.batch_size,
                                      rng=self._rng)) for a in starts]
        else:
            blocks = (plan_block(self.mode, min(self.block, done - a), batch_size=self.batch_size,
                                 num_workers=self.num_workers) for a in starts)
        return done, _shifted(starts, blocks)


def _shifted(starts, blocks) -> Iterator:
    for start, block in zip(starts, blocks):
        if not start:  # positions as planned
            yield from block
            continue
        for rows, contiguous in block:
            if isinstance(rows, slice):
                yield slice(rows.start + start, rows.stop + start), contiguous
            else:
                yield rows + start, contiguous


class _Counted:
    """An iterator that counts what it yielded (the batches of a window)."""

    def __init__(self, items):
        self._items = iter(items)
        self.count = 0

    def __iter__(self):
        return self

    def __next__(self):
        item = next(self._items)
        self.count += 1
        return item

    def drain(self) -> int:
        for _ in self:
            pass
        return self.count


def merge_outcomes(parts: list[RunOutcome]) -> RunOutcome:
    """One plug-in's outcomes over consecutive rows, merged into the outcome of one pass.

    Rewards and dones are concatenated; calls and problem counts add up
    (the first problem of each rule is kept, in the order found); the first
    error is kept; reward dtypes in the order first seen.  Reward terms are
    concatenated by name (names in the order first seen; NaN over a part that
    has none of a name); the term names are the first part's that made a call.

    Examples
    --------
    >>> merged = merge_outcomes([first_shard, second_shard])  # doctest: +SKIP
    >>> merged.rewards.size == first_shard.rewards.size + second_shard.rewards.size  # doctest: +SKIP
    True
    """
    if not parts:
        raise ParameterError("parts", "should hold at least one RunOutcome", parts)
    head = parts[0]
    problems: dict = {}
    dtypes: tuple = ()
    for p in parts:
        for rule, (first, count) in p.problems.items():
            problems[rule] = (problems[rule][0], problems[rule][1] + count) if rule in problems else (first, count)
        dtypes += tuple(d for d in p.reward_dtypes if d not in dtypes)
    return RunOutcome(
        head.plugin, head.mode, head.batch_size,
        np.concatenate([p.rewards for p in parts]), np.concatenate([p.dones for p in parts]),
        calls=sum(p.calls for p in parts), problems=problems,
        error=next((p.error for p in parts if p.error is not None), None), reward_dtypes=dtypes,
        contiguous=next((p.contiguous for p in parts if p.contiguous is not None), None),
        convention=head.convention, terms=_merge_terms(parts),
        term_names=next((p.term_names for p in parts if p.term_names is not None), None))


def _merge_terms(parts: list[RunOutcome]) -> dict:
    """The parts' reward terms concatenated by name (NaN over a part without a name); {} when none has any."""
    names = list(dict.fromkeys(name for p in parts for name in p.terms))
    if not names:
        return {}
    if len(parts) == 1:
        return dict(parts[0].terms)
    return {name: np.concatenate([p.terms[name] if name in p.terms else np.full(p.rewards.shape[0], np.nan)
                                  for p in parts]) for name in names}


def _cut(outcome: RunOutcome, rows: int) -> tuple[RunOutcome, RunOutcome]:
    """The first ``rows`` rows (with every count) and the rest (rows only)."""
    head = dataclasses.replace(outcome, rewards=outcome.rewards[:rows], dones=outcome.dones[:rows],
                               terms={k: v[:rows] for k, v in outcome.terms.items()})
    tail = RunOutcome(outcome.plugin, outcome.mode, outcome.batch_size, outcome.rewards[rows:],
                      outcome.dones[rows:], convention=outcome.convention,
                      terms={k: v[rows:] for k, v in outcome.terms.items()}, term_names=outcome.term_names)
    return head, tail


def _with_last(items: Iterable) -> Iterator[tuple[object, bool]]:
    it = iter(items)
    try:
        prev = next(it)
    except StopIteration:
        return
    for item in it:
        yield prev, False
        prev = item
    yield prev, True


def stream_shards(
    shards: Iterable,
    plugins: list,
    *,
    mode: str,
    batch_size: int | None,
    seed: int = 0,
    contiguous: bool | None = None,
    num_workers: int = DEFAULT_NUM_WORKERS,
    shuffle_window: int = SHUFFLE_WINDOW,
    **options,
) -> Iterator[tuple[int, list[RunOutcome]]]:
    """Run plug-ins over a stream of shards; yield each shard's outcomes once all its rows are done.

    Parameters
    ----------
    shards : iterable of FrameArrays
        The shards' arrays in stream order, each a run of whole episodes
        (it ends at an end of episode).  Read one at a time, one shard
        ahead (to know the last); at most one block of rows is held back
        (see :class:`BatchStream`).  Any arrays object
        :func:`~rewardlab.plugins.runner.run_plugins` takes will do if it has ``n``,
        ``window(start, stop)`` (rows ``start:stop``, ``stop`` at an episode
        end) and a class method ``concat(parts)``
        (:class:`rewardlab.core.rows.RowArrays` gives both); the contract's
        ``episode_flags(arrays)`` says where episodes end.
    plugins : list of Plugin
        As :func:`rewardlab.plugins.runner.run_plugins`.
    mode, batch_size, seed, contiguous, num_workers, shuffle_window
        The batch mode and its settings (:func:`rewardlab.plugins.batch_modes.plan_batches`);
        ``batch_size`` None is for ``episodes``.
    **options
        Passed on to :func:`rewardlab.plugins.runner.run_plugins` (``contract``,
        ``strict``, ``collect``, ``bar``, ``chunk_rows``, ``convention``,
        ``setting``, ``status``, ``interrupts_are_plugins``).  No locator: problems stay
        :class:`~rewardlab.plugins.runner.Finding` objects with rows counted from the
        stream's start; resolve them with a :class:`ShardLocator`.

    Yields
    ------
    (int, list of RunOutcome)
        The shard's index and one outcome per plug-in over the shard's rows.
        Calls, problems and errors are counted in the first shard yielded
        after the batch that made them; :func:`merge_outcomes` of all of a
        plug-in's outcomes is the outcome of one pass.  A plug-in that
        raised is not called again (with ``collect=False``, no plug-in is
        called after the first problem): its later rows have NaN rewards and
        the end-of-game flags as dones, as in one pass.

    Raises
    ------
    ShardError
        A shard does not end at an end of episode.
    """
    collect = options.get("collect", False)
    options.setdefault("chunk_rows", CHUNK_ROWS)
    contract = get_contract(options.get("contract") or DEFAULT_CONTRACT)
    options["contract"] = contract
    ends_of = contract.episode_flags
    plugins = list(plugins)
    stream = BatchStream(mode, batch_size=batch_size or 1, seed=seed, contiguous=contiguous,
                         num_workers=num_workers, shuffle_window=shuffle_window)
    convention = options.get("convention") or contract.default_convention
    empty = np.zeros(0)
    buffers = [RunOutcome(p, mode, batch_size, empty, np.zeros(0, dtype=bool), convention=convention)
               for p in plugins]
    stopped = [False] * len(plugins)
    parts: list = []
    at = {"offset": 0, "batches": 0}
    yielded = 0
    sizes: collections.deque = collections.deque()
    next_shard = 0

    def run_window(window, plan, done: int) -> None:
        """Run the plan over ``window``; keep the results of its first ``done`` rows."""
        nonlocal stopped
        active = [i for i, s in enumerate(stopped) if not s]
        counted = _Counted(plan)
        outs = dict(zip(active, run_plugins(
            window, None, [plugins[i] for i in active], counted, mode=mode, batch_size=batch_size,
            row_offset=at["offset"], first_batch=at["batches"],
            term_names=[buffers[i].term_names for i in active], **options))) if active else {}
        at["batches"] += counted.drain()
        at["offset"] += done
        for i, plugin in enumerate(plugins):
            piece = outs[i] if i in outs else RunOutcome(
                plugin, mode, batch_size, np.full(window.n, np.nan), ends_of(window).copy(),
                convention=convention)
            piece, _ = _cut(piece, done)
            if piece.error is not None:
                stopped[i] = True
            if not collect and (piece.error is not None or piece.problems):
                stopped = [True] * len(plugins)  # one pass stops at the first problem
            buffers[i] = merge_outcomes([buffers[i], piece])

    for index, (arrays, last) in enumerate(_with_last(shards)):
        if arrays.n and not ends_of(arrays)[-1]:
            raise ShardError(index, f"its last row (row {arrays.n - 1} of the shard) does not end an "
                             "episode, so its next state is unknown", hint=_SHARD_HINT)
        sizes.append(arrays.n)
        carried = sum(p.n for p in parts)
        done, plan = stream.feed(episode_ends(ends_of(arrays)), last=last)
        block = stream.block
        m = (block or 0) - carried
        if carried and mode != "shuffled" and done >= (block or 0) and m < arrays.n:
            # the carried rows and the shard's first rows make one block (a small copy, with
            # one more row, which the shard has, for the next state); the rest of the shard
            # runs, or is carried, without a copy
            plan = iter(plan)
            head, first = [], None
            for item in plan:
                if _first(item[0]) >= block:
                    first = item
                    break
                head.append(item)
            run_window(type(arrays).concat(parts + [arrays.window(0, m + 1)]), head, block)
            arrays, done = arrays.window(m, arrays.n), done - block
            plan = _shifted([-block], [itertools.chain([] if first is None else [first], plan)])
            parts = []
        parts.append(arrays)
        if done:
            window = type(parts[0]).concat(parts)
            run_window(window, plan, done)
            parts = [window.window(done, window.n)] if done < window.n else []
        while sizes and yielded + sizes[0] <= at["offset"]:
            rows = sizes.popleft()
            heads = []
            for i in range(len(plugins)):
                head_rows, buffers[i] = _cut(buffers[i], rows)
                heads.append(head_rows)
            yield next_shard, heads
            yielded += rows
            next_shard += 1


def _first(rows) -> int:
    return rows.start if isinstance(rows, slice) else int(rows[0])


def run_shards(shards: Iterable, plugins: list, **options) -> list[RunOutcome]:
    """Run plug-ins over a stream of shards and merge the results into the outcomes of one pass.

    Takes what :func:`stream_shards` takes; returns one
    :class:`~rewardlab.plugins.runner.RunOutcome` per plug-in over every row of the
    stream, in order (problems as :class:`~rewardlab.plugins.runner.Finding` objects).
    With one shard, this is :func:`rewardlab.plugins.runner.run_plugins` over
    :func:`rewardlab.plugins.batch_modes.plan_batches`, call for call.

    Examples
    --------
    >>> outcomes = run_shards([FrameArrays(frame)], [plugin], mode="episodes",
    ...                       batch_size=None)  # doctest: +SKIP
    """
    plugins = list(plugins)
    pieces: list[list[RunOutcome]] = [[] for _ in plugins]
    for _, outcomes in stream_shards(shards, plugins, **options):
        for i, outcome in enumerate(outcomes):
            pieces[i].append(outcome)
    if not pieces or not pieces[0]:  # no shard at all
        contract = get_contract(options.get("contract") or DEFAULT_CONTRACT)
        return [RunOutcome(p, options["mode"], options["batch_size"], np.zeros(0), np.zeros(0, dtype=bool),
                           convention=options.get("convention") or contract.default_convention)
                for p in plugins]
    return [merge_outcomes(p) for p in pieces]
