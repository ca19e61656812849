"""Apply reward plug-ins to a dataset folder part by part, writing a rewards dataset beside it.

Memory holds about one part at a time, and the plug-ins' child process never
needs the whole frame.  Where the work item's process has not started
Polars' thread pool (:func:`rewardlab.plugins.isolation.polars_forks_cleanly`:
a fresh worker process of the ``processes`` engine, which leaves Polars to
its children), the child reads each part, runs the plug-ins and writes the
part's rewards itself, and sends back only the part's manifest entry and
reward sums: nothing of a part crosses a pipe, and the work item's process
only watches.  Elsewhere (the embedded engine: its work items are threads of
a process that reads with Polars, whose pool a forked child cannot use), a
work item reads its parts one by one, hands each part's arrays to the child
through a pipe (:func:`rewardlab.plugins.isolation.run_in_child`'s ``feed``)
and writes each part's rewards as they come back (at most
:data:`WRITES_AT_ONCE` parts at a time in one process, and
:data:`~rewardlab.plugins.child_messages.FEEDS_AT_ONCE` read and sent,
however many work items its threads run).  The rewards are the same bit for
bit either way.
The plug-ins see exactly the batches of one pass over the whole frame
(:func:`rewardlab.plugins.shards.stream_shards` carries rows across parts):

* ``episodes`` and ``fragments`` never cross an episode, so the parts are
  split into runs of consecutive parts, one work item each, run at once by
  the engine's workers;
* ``sequential``, ``dataloader`` and ``shuffled`` carry rows from one part
  to the next, so all parts are one work item, in order (one plug-in
  process; the engine's other workers stay idle).

The rewards dataset has the input's parts, row for row, each holding the
input's keys and context (what the analyses need) and ``reward_<name>`` /
``done_<name>`` per plug-in, with ``term_<name>.<term>`` per reward term a
plug-in writes; its manifest names the input as its base.  With
``on_error="skip"`` a missing, truncated, foreign or duplicated input part is
left out whole before any plug-in runs: the rewards are those of the input
without it, and the rewards dataset has the other parts, its manifest listing
the ones left out (``base["parts_left_out"]``), so a later read joins each of
its parts to the right input part and warns, naming them.  It
is written to a staging folder and renamed onto its name only when every
part is done: a failed, killed or interrupted run leaves nothing there.

Resuming (``resume=True``, ``rewardlab apply ... --resume``): each work
item records every part it finishes in a journal in the staging folder
(``journal-NNNNNN.jsonl``: the part's manifest entry and its reward sums),
and the staging folder records the run (the input's id, the plug-in files'
SHA-256, the options).  A run killed, or stopped with Ctrl-C, leaves the
staging folder; the same command with ``--resume`` checks that it is the
same run, keeps every journaled part whose file is whole (size and CRC-32
as journaled) and runs the plug-ins over the others only.  The result is
the one an uninterrupted run writes, part for part (``episodes`` and
``fragments``; the modes that carry rows from part to part start afresh).

Examples
--------
>>> apply_to_dataset("corpus", ["data/plugins/rank_top.py"], "corpus-rewards")  # doctest: +SKIP
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
import threading
from pathlib import Path

import numpy as np
import polars as pl

from rewardlab.contracts.advice import scale_advice, warn_outside
from rewardlab.contracts.manager import MANAGER
from rewardlab.contracts.registry import contract_for, get_contract
from rewardlab.core import columns
from rewardlab.core.errors import DataFormatError, ParameterError, RewardScaleWarning, check_choice
from rewardlab.core.heap import frozen_heap
from rewardlab.core.spec import attach
from rewardlab.engines import check_engine
from rewardlab.engines.embedded import available_cores
from rewardlab.plugins import isolation
from rewardlab.plugins.apply import (REWARD_DTYPES, check_column_clashes, rewards_table_columns, scale_message,
                                     term_series)
from rewardlab.plugins.batch_modes import DEFAULT_NUM_WORKERS, check_run_options, mode_setting
from rewardlab.plugins.manager_parts import check_part_options, part_job, trial_chunks
from rewardlab.plugins.managers import manager_items
from rewardlab.plugins.execution import (
    check_isolation, child_failure_error, load_items, plugin_items, progress_bar,
)
from rewardlab.plugins.runner import Locator, resolve
from rewardlab.plugins.scale_sums import ScaleSums
from rewardlab.plugins.shards import stream_shards
from rewardlab.sources.datasets.manifest import Manifest, PartEntry, file_crc32
from rewardlab.sources.datasets.parts import PartedDataset
from rewardlab.sources.datasets.writer import JOURNAL_GLOB, PartWriter, write_part_file

__all__ = ["apply_to_dataset", "CARRY_MODES"]

#: Batch modes whose batches cross parts (one work item over every part, in order).
CARRY_MODES = ("sequential", "dataloader", "shuffled")

#: Work items of this process that may read, assemble and write a rewards part at the same time (the
#: embedded engine runs one item per worker in threads): the process holds a few parts' tables and
#: Parquet buffers whatever the workers, and writing a part takes a small share of the time the
#: plug-ins spend on it.
WRITES_AT_ONCE = 4
_WRITING = threading.BoundedSemaphore(WRITES_AT_ONCE)


@dataclasses.dataclass(frozen=True)
class _Task:
    """One work item: a run of consecutive parts, through one plug-in process."""

    folder: str
    indexes: tuple[int, ...]
    plugins: tuple  # (path, name) per plug-in
    settings: dict
    staging: str
    dataset_id: str
    keep: tuple[str, ...]
    timeout: float | None
    isolate: bool
    kept: tuple[int, ...]  # the manifest index of every part the driver kept (on_error="skip" leaves some out)
    on_error: str = "raise"


@dataclasses.dataclass
class _Done:
    """What a work item brings back to the driver."""

    entries: dict
    scales: list
    dtypes: list
    error: BaseException | None = None


def _first_problem(outcome):
    return outcome.error if outcome.error is not None else next(iter(outcome.problems.values()))[0]


def _locate_error(ds: PartedDataset, indexes, outcome, spec, contract):
    """Resolve an outcome's finding to an error naming the part and the row (file:line of its input)."""
    finding = _first_problem(outcome)
    row = finding.row if getattr(finding, "row", None) is not None else finding.first_row
    starts = np.cumsum([0] + [ds.manifest.parts[i].rows for i in indexes])
    k = int(np.searchsorted(starts, row, side="right")) - 1
    locator = None
    if 0 <= k < len(indexes):
        locator = _PartLocator(ds.read(indexes[k]), columns=contract.locator_columns(spec), start=int(starts[k]),
                               part=ds.part_indexes[indexes[k]], path=ds.paths[indexes[k]])
    resolve([outcome], locator)
    return _first_problem(outcome)


class _PartLocator(Locator):
    """A Locator for one part, whose rows count from a work item's start."""

    def __init__(self, frame, *, columns, start: int, part: int, path):
        super().__init__(frame, columns=columns)
        self._start = start
        self._part = part
        self._path = path

    def info(self, row: int) -> dict:
        return super().info(int(row) - self._start)

    def transition(self, row: int) -> str:
        text = super().transition(row)
        where = f"part {self._part}: {self._path}"
        return text[:-1] + f"; {where})" if text.endswith(")") else f"{text} ({where})"


def _rewards_part(ds: PartedDataset, task: _Task, index: int, results) -> PartEntry:
    """Write part ``index``'s rewards table (its kept columns and each plug-in's columns) into the staging
    folder; ``results`` holds ``(rewards, dones, dtype, terms, scale sums)`` per plug-in."""
    base = ds.read(index, list(task.keep))
    added = []
    for (rewards, dones, dtype, terms, _), (_, name) in zip(results, task.plugins):
        added.append(pl.Series(columns.reward_column(name), rewards, dtype=pl.Float64)
                     .cast(REWARD_DTYPES[dtype or "float64"]))
        added.append(pl.Series(columns.done_column(name), dones, dtype=pl.Boolean))
        added += term_series(name, terms)
    frame = attach(base.with_columns(added), ds.spec.project(base.columns))
    return write_part_file(Path(task.staging), index, frame, dataset_id=task.dataset_id)


def _results(outcomes) -> list:
    """What a part's outcomes bring back per plug-in: ``(rewards, dones, dtype, terms, scale sums)``."""
    return [(o.rewards, o.dones, o.reward_dtype, o.terms, ScaleSums.of(o.rewards, o.dones)) for o in outcomes]


def _failed(outcomes) -> bool:
    return any(o.error is not None or o.problems for o in outcomes)


def _run_task(task: _Task) -> _Done:
    """Run the plug-ins over the task's parts; write each part's rewards table into the staging folder.

    Where the work item's process has not started Polars' thread pool (a
    fresh worker process of the ``processes`` engine), the plug-in process
    reads each part and writes its rewards itself, and sends back only each
    part's manifest entry and sums: nothing of a part crosses a pipe, and
    this process only watches.  Elsewhere (the embedded engine's threads
    share a process that reads with Polars) this process reads each part,
    feeds its arrays to the plug-in process and writes the rewards it sends
    back.
    """
    ds = PartedDataset(task.folder, on_error=task.on_error, warn=False)  # the driver warned
    if ds.part_indexes != task.kept:
        raise DataFormatError(ds.folder, None, None, "dataset_changed",
                              f"the parts left out changed while the plug-ins ran (parts "
                              f"{sorted(set(task.kept) ^ set(ds.part_indexes))[:5]})",
                              hint="Leave the dataset folder alone while `rewardlab apply` runs, and run it again.")
    spec = ds.spec
    contract = get_contract(task.settings["contract"])
    items = plugin_items([Path(p) for p, _ in task.plugins], contract)
    settings = dict(task.settings)
    done = _Done(entries={}, scales=[ScaleSums() for _ in items], dtypes=[None] * len(items))
    lock = threading.Lock()
    reads_in_child = task.isolate and contract is not MANAGER and isolation.polars_forks_cleanly()

    def arrays():
        for index in task.indexes:
            yield contract.arrays(ds.read(index), spec)

    def job(status, send, shards=None):
        # shards None: this process (the plug-in process, when reads_in_child) reads each part and writes its
        # rewards itself; else the arrays are fed and the rewards sent back to be written by the work item
        loaded = load_items(items, status, contract)
        for plugin in loaded:
            send(("plugin", plugin.portable()))
        for k, outcomes in stream_shards(
                arrays() if shards is None else shards, loaded, mode=settings["mode"],
                batch_size=settings["batch_size"], seed=settings["seed"], contiguous=settings["contiguous"],
                num_workers=settings["num_workers"], strict=settings["strict"], collect=False,
                convention=settings["convention"], setting=settings["setting"], status=status,
                interrupts_are_plugins=task.isolate, contract=contract):
            if _failed(outcomes) and shards is None:  # it has the parts at hand: it names the row here
                return ("located", _locate_error(ds, task.indexes, next(o for o in outcomes if _failed([o])),
                                                 spec, contract))
            if _failed(outcomes):
                for o in outcomes:
                    o.plugin = o.plugin.portable()
                    o.rewards = o.rewards[:0]
                    o.dones = o.dones[:0]
                    o.terms = {}
                return ("failed", outcomes)
            results = _results(outcomes)
            if shards is None:
                entry = _rewards_part(ds, task, task.indexes[k], results)
                send(("written", k, entry, [r[4] for r in results], [r[2] for r in results]))
            else:
                send(("part", k, results))
        return ("ok", None)

    feed = arrays
    if contract is MANAGER:  # reward managers: whole trials, whichever parts they span (plugins.manager_parts)
        job = part_job(items, isolate=task.isolate)

        def feed():
            return trial_chunks(ds, task.indexes)

    loaded_names: list = []

    def finished(index: int, entry: PartEntry, scales: list, dtypes: list) -> None:
        with lock:
            for i, (scale, dtype) in enumerate(zip(scales, dtypes)):
                done.scales[i].merge(scale)
                done.dtypes[i] = done.dtypes[i] or dtype
        done.entries[index] = entry
        _journal(Path(task.staging), task.indexes[0], index, entry, scales, dtypes)

    def on_part(message) -> None:
        if message[0] == "plugin":
            loaded_names.append(message[1])
        elif message[0] == "written":  # the plug-in process wrote the part
            _, k, entry, scales, dtypes = message
            finished(task.indexes[k], entry, scales, dtypes)
        else:
            _, k, results = message
            index = task.indexes[k]
            with _WRITING:  # memory: a few parts' tables and file buffers at once, however many work items
                entry = _rewards_part(ds, task, index, results)
            finished(index, entry, [r[4] for r in results], [r[2] for r in results])

    if reads_in_child:
        result = isolation.run_in_child(job, timeout=task.timeout, on_part=on_part)
    elif task.isolate:
        result = isolation.run_in_child(job, timeout=task.timeout, on_part=on_part, feed=feed())
    else:
        result = job(None, on_part, feed())
    if isinstance(result, isolation.ChildFailure):
        done.error = child_failure_error(result, items, len(loaded_names), where=_part_in_progress(ds, task, done))
        return done
    status, outcomes = result
    if status == "located":
        done.error = outcomes
    elif status == "failed":
        for outcome, plugin in zip(outcomes, loaded_names):
            outcome.plugin = plugin
        bad = next(o for o in outcomes if o.error is not None or o.problems)
        done.error = _locate_error(ds, task.indexes, bad, spec, contract)
    return done


def _part_in_progress(ds: PartedDataset, task: _Task, done: _Done) -> str:
    """Where a work item's plug-in process was when it failed, in words: its first part whose rewards had
    not come back (they come back in part order), and what the rows of its message count from."""
    unfinished = [i for i in task.indexes if i not in done.entries]
    if not unfinished:
        return ""
    index = unfinished[0]
    text = f"part {ds.part_indexes[index]}: {ds.paths[index]}"
    if index != task.indexes[0]:
        text += f"; its rows count from the first row of part {ds.part_indexes[task.indexes[0]]}"
    return text


def _journal(staging: Path, first: int, index: int, entry: PartEntry, scales: list, dtypes: list) -> None:
    """Record a finished part in its work item's journal (one JSON line; a line cut short by a kill is
    ignored when resuming)."""
    line = json.dumps({"index": index, "entry": dataclasses.asdict(entry),
                       "scales": [dataclasses.asdict(s) for s in scales], "dtypes": dtypes})
    with open(staging / f"journal-{first:06d}.jsonl", "a") as f:
        f.write(line + "\n")


def _finished(staging: Path, n_parts: int) -> dict[int, tuple[PartEntry, list, list]]:
    """The parts a stopped run finished: journaled, and their files whole (size and CRC-32 as journaled)."""
    found: dict[int, tuple[PartEntry, list, list]] = {}
    for journal in sorted(staging.glob(JOURNAL_GLOB)):
        for line in journal.read_text().splitlines():
            try:
                record = json.loads(line)
                index, entry = int(record["index"]), PartEntry(**record["entry"])
                scales = [ScaleSums(**s) for s in record["scales"]]
                dtypes = list(record["dtypes"])
            except (ValueError, KeyError, TypeError):
                continue  # cut short by the kill
            path = staging / entry.name
            if not 0 <= index < n_parts or not path.is_file() or path.stat().st_size != entry.bytes:
                continue
            if file_crc32(path) != entry.crc32:
                continue
            found[index] = (entry, scales, dtypes)
    return found


def _run_key(ds: PartedDataset, items, settings: dict, keep: list[str]) -> dict:
    """What makes two runs the same run (for resuming): the input (and the parts left out of it), the plug-in
    files' bytes, the options."""
    plugins = [[name, hashlib.sha256(Path(path).read_bytes()).hexdigest()] for _, name, path in items]
    key = {"input": ds.manifest.id, "plugins": plugins, "options": settings, "columns": keep}
    if len(ds) != len(ds.listed.parts):
        key["parts_kept"] = list(ds.part_indexes)
    return key


def _groups(indexes, workers: int, mode: str) -> list[tuple[int, ...]]:
    """Runs of consecutive part indexes (of ``indexes``, sorted), one per work item.

    Examples
    --------
    >>> _groups(range(6), 2, "episodes"), _groups([0, 1, 4, 5], 4, "episodes")
    ([(0, 1, 2), (3, 4, 5)], [(0,), (1,), (4,), (5,)])
    """
    indexes = sorted(indexes)
    n = len(indexes)
    if mode in CARRY_MODES or n == 0:
        return [tuple(indexes)]
    count = min(n, max(1, workers))  # one plug-in process per worker (each loads torch and the plug-ins once)
    bounds = np.linspace(0, n, count + 1).round().astype(int)
    groups = []
    for a, b in zip(bounds[:-1], bounds[1:]):
        run: list[int] = []
        for i in indexes[a:b]:  # a run stops where a resumed run's finished parts leave a gap
            if run and i != run[-1] + 1:
                groups.append(tuple(run))
                run = []
            run.append(i)
        if run:
            groups.append(tuple(run))
    return groups


def apply_to_dataset(dataset, plugins, out, *, batch_mode: str = "episodes", batch_size: int | None = None,
                     seed: int = 0, contiguous: bool | None = None, num_workers: int = DEFAULT_NUM_WORKERS,
                     convention: str | None = None, strict: bool = False, isolate: bool | None = None,
                     timeout: float | None = None, replace: bool = False, overwrite: bool = False,
                     engine: str = "embedded", workers: int | None = None, address: str | None = None,
                     progress=None, resume: bool = False, on_error: str = "raise") -> Manifest:
    """Run plug-ins over every part of a dataset folder; write the rewards dataset ``out`` beside it.

    Parameters
    ----------
    dataset : path or PartedDataset
        A dataset folder (``rewardlab convert ... --out FOLDER``).
    plugins : path or sequence of paths
        Plug-in files (they are loaded in each work item's child process).
    out : path
        The rewards dataset folder to write.
    batch_mode, batch_size, seed, contiguous, num_workers, convention, strict, isolate, timeout, replace
        As in :func:`rewardlab.plugins.apply_plugins`; the rewards equal
        its rewards over the whole frame, bit for bit, in every mode.
    overwrite : bool
        Replace an existing rewards dataset at ``out``.
    engine : {"embedded", "ray"}
        Where work items run (:mod:`rewardlab.engines`).
    workers : int or None
        Work items at once (None: the engine's default, the cores it has).
    address : str or None
        The Ray cluster to join (``engine="ray"``; None: a local Ray).
    progress : bool or None
        A progress bar over the transitions (advanced as work items finish
        their parts); a callable gets ``progress(fraction, message)``.
    resume : bool
        Keep the parts a killed or stopped run of the same command finished
        (in ``OUT.partial``; see the module's text); ``episodes`` and
        ``fragments`` only.
    on_error : {"raise", "skip"}
        A missing, truncated, foreign or duplicated part of ``dataset`` (a
        path): stop before any plug-in runs, naming it (``"raise"``), or
        leave it out whole (``"skip"``, see
        :class:`~rewardlab.sources.datasets.PartedDataset`): the rewards are
        those of the dataset without it, bit for bit, in every batch mode
        (``sequential`` and the other carrying modes carry rows across the
        gap), and the rewards dataset is written without it, its manifest
        listing it (``base["parts_left_out"]``), so reading it with its base
        joins part for part, with a warning naming it.  An opened
        :class:`~rewardlab.sources.datasets.PartedDataset` keeps its own.

    Returns
    -------
    Manifest
        The rewards dataset's manifest.

    Raises
    ------
    PluginLoadError, PluginRuntimeError, ContractError
        As :func:`~rewardlab.plugins.apply_plugins`, naming the part and row.
    DataFormatError
        A bad part (``on_error="raise"``), naming its file and rule; a part
        whose bytes fail while it is read (page checksums), in both modes.

    Warns
    -----
    RewardScaleWarning
        As :func:`~rewardlab.plugins.apply_plugins` (from exact sums merged over parts).
    PartsLeftOutWarning
        ``on_error="skip"``: naming each part left out, its reason, rows and episodes.

    Examples
    --------
    >>> apply_to_dataset("corpus", ["rank_top.py", "raw_points.py"], "corpus-rewards",
    ...                  batch_mode="dataloader", batch_size=256)  # doctest: +SKIP
    """
    on_error = check_choice("on_error", on_error, ("raise", "skip"))
    ds = dataset if isinstance(dataset, PartedDataset) else PartedDataset(dataset, on_error=on_error)
    found = check_engine(engine, address=address)
    if isinstance(plugins, (str, Path)):
        plugins = [plugins]
    plugins = list(plugins)
    if not all(isinstance(p, (str, Path)) for p in plugins):
        raise ParameterError("plugins", "should be plug-in files (paths) for a dataset folder: each work item "
                             "loads them in its own process", [type(p).__name__ for p in plugins])
    managers = manager_items(plugins)  # files defining RewardManager: whole trials, one work item
    if managers is not None:
        check_part_options(batch_mode=batch_mode, batch_size=batch_size, contiguous=contiguous,
                           convention=convention, resume=resume)
        chosen = MANAGER
    else:
        chosen, _ = contract_for(ds.read(0, list(ds.spec.episode)) if len(ds) else attach(pl.DataFrame(), ds.spec),
                                 None, spec=ds.spec)
        chosen.options(convention)
    size, seed, contiguous, num_workers = check_run_options(
        batch_mode, batch_size=batch_size, seed=seed, contiguous=contiguous, num_workers=num_workers, strict=strict)
    isolate, timeout = check_isolation(isolate, timeout)
    if resume and batch_mode in CARRY_MODES:
        raise ParameterError("resume", f"applies to batch modes episodes and fragments ({batch_mode} carries rows "
                             "from part to part, so a stopped run cannot pick up at a part)", resume,
                             hint="Run it again from the start (remove OUT.partial first).")
    items = plugin_items([Path(p) for p in plugins], chosen)
    names = [name for _, name, _ in items]
    if not replace:
        check_column_clashes(ds.all_columns, [(name, path) for _, name, path in items])
    added = {c for n in names for c in (columns.reward_column(n), columns.done_column(n),
                                        *columns.term_columns(ds.all_columns, n).values())}
    keep = [c for c in rewards_table_columns(ds.all_columns, ds.spec) if c not in added]
    settings = {"mode": batch_mode, "batch_size": size, "seed": seed, "contiguous": contiguous,
                "num_workers": num_workers, "strict": strict, "convention": convention, "contract": chosen.name,
                "setting": mode_setting(batch_mode, contiguous=contiguous, num_workers=num_workers,
                                        settings=chosen.mode_settings)}
    run = None if batch_mode in CARRY_MODES else _run_key(ds, items, settings, keep)
    writer = PartWriter(out, spec=ds.spec.project(keep), overwrite=overwrite, base=ds,
                        source={"plugins": [str(p) for p in plugins], "batch_mode": batch_mode},
                        run=run, resume=resume)
    scales = [ScaleSums() for _ in items]
    dtypes: list = [None] * len(items)
    finished = _finished(writer.staging, len(ds)) if writer.resumed else {}
    for index, (entry, part_scales, part_dtypes) in sorted(finished.items()):
        writer.register(index, entry)
        for i, (scale, dtype) in enumerate(zip(part_scales, part_dtypes)):
            scales[i].merge(scale)
            dtypes[i] = dtypes[i] or dtype
    groups = _groups([i for i in range(len(ds)) if i not in finished], 1 if managers else workers or available_cores(),
                     batch_mode)
    tasks = [_Task(str(ds.folder), g, tuple((str(p), n) for _, n, p in items), settings, str(writer.staging),
                   writer.id, tuple(keep), timeout, isolate, tuple(ds.part_indexes), ds.on_error) for g in groups if g]
    bar = progress_bar(progress, ds.rows, f"apply_plugins ({batch_mode}, {len(ds)} parts)")
    if bar is not None and finished:
        bar.update(sum(entry.rows for entry, _, _ in finished.values()))
    with writer, frozen_heap():  # the collector's full passes skip what was alive before (core.heap)
        try:
            for done in found.map(_run_task, tasks, workers=workers, address=address):
                if done.error is not None:
                    raise done.error
                for index, entry in done.entries.items():
                    writer.register(index, entry)
                for i, (scale, dtype) in enumerate(zip(done.scales, done.dtypes)):
                    scales[i].merge(scale)
                    dtypes[i] = dtypes[i] or dtype
                if bar is not None:
                    bar.update(sum(entry.rows for entry in done.entries.values()))
        finally:
            if bar is not None:
                bar.close()
    manifest = writer.manifest
    for (_, name, path), scale in zip(items, scales):
        result = scale.result()
        if ds.rows and scale_advice(chosen, result):  # only where the contract asks for mean 0 / std 1
            warn_outside(RewardScaleWarning(scale_message(name, path, result)))
    return manifest

