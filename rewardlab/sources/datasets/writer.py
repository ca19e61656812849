"""Write a dataset folder of parts (:class:`PartWriter`): staged, atomic, resumable.

Writing goes to a staging folder beside the output (``OUT.partial``), which
is renamed onto ``OUT`` once the manifest is written: a run that fails is
cleaned up, and one that is killed leaves only the staging folder, which the
next run refuses by name unless it resumes the same run (``run=`` and
``resume=True``; :mod:`rewardlab.plugins.apply_parts` journals its finished
parts there).  Parts are written one behind the caller in a thread
(:meth:`PartWriter.add`) or by workers (:func:`write_part_file`), each
atomically.

Examples
--------
>>> import tempfile, pathlib, polars as pl
>>> from rewardlab.core.spec import FrameSpec, attach
>>> spec = FrameSpec(name="toy", episode=("e",))
>>> with tempfile.TemporaryDirectory() as d:
...     with PartWriter(pathlib.Path(d) / "toy", spec=spec, part_rows=2) as w:
...         _ = w.add(attach(pl.DataFrame({"e": [0, 0, 1], "x": [1.0, 2, 3]}), spec))
...     print(len(w.manifest.parts), w.manifest.rows)  # parts close at the first episode end past 2 rows
2 3
"""

from __future__ import annotations

import collections
import fcntl
import json
import os
import shutil
import threading
import uuid
from concurrent.futures import Future, ThreadPoolExecutor
from pathlib import Path

import polars as pl

from rewardlab.core.errors import FileAccessError, OutputExistsError, ParameterError, check_int
from rewardlab.core.spec import FrameSpec, attach, attached
from rewardlab.engines.embedded import available_cores
from rewardlab.sources.datasets.manifest import MANIFEST_NAME, Manifest, PartEntry, base_record
from rewardlab.sources.datasets.part_files import (
    PARTS_JOURNAL, episodes_fingerprint, journal_line, journaled_parts, write_journaled_part, write_part_file,
)
from rewardlab.sources.datasets.parts import (
    DEFAULT_PART_ROWS, REWRITE_HINT, PartedDataset, episode_cuts, is_dataset_folder,
)
from rewardlab.sources.datasets.spooled_parts import SpooledParts
from rewardlab.sources.spooled import SpooledChunk
from rewardlab.sources.storage import DATASET_SUFFIXES

__all__ = ["PartWriter", "write_part_file", "STAGING_SUFFIX", "RUN_NAME", "JOURNAL_GLOB", "MAX_WRITERS",
           "default_writers", "default_part_processes", "PARTS_JOURNAL", "episodes_fingerprint", "check_staged_run",
           "journaled_parts", "SPOOL_NAME"]

STAGING_SUFFIX = ".partial"
#: In a staging folder: the run that writes it (``{"id", "run"}``), for a resumed run to check.
RUN_NAME = "rewardlab-run.json"
#: Staging folders this process is writing (a POSIX lock does not refuse its own process).
_WRITING: set[str] = set()
_WRITING_LOCK = threading.Lock()
#: In a staging folder: a run's journals of finished parts (JSON lines), removed when the dataset is done.
JOURNAL_GLOB = "journal-*.jsonl"
#: The most parts a :class:`PartWriter` writes at once.
MAX_WRITERS = 64
#: In a staging folder: ``spool-RUN``, the chunks handed to one writer (:meth:`PartWriter.add_spooled`), removed
#: as parts are written (and with the folder).  One per writer: a reader process left running by a killed run
#: cannot write into the folder of the run that resumes it.
SPOOL_NAME = "spool"


def default_writers() -> int:
    """Parts written at once by default: one per 4 cores this process may run on, 1 to 4 (each holds a part).

    Examples
    --------
    >>> 1 <= default_writers() <= 4
    True
    """
    return max(1, min(4, available_cores() // 4))


def default_part_processes(cores: int | None = None) -> int:
    """Processes writing parts cut from spooled chunks by default: one per 3 of ``cores`` (default the cores
    this process may run on), 1 to :data:`MAX_WRITERS` (reading a part's chunks and encoding it costs about a
    third of parsing its text).

    Examples
    --------
    >>> default_part_processes(16), default_part_processes(2), 1 <= default_part_processes() <= MAX_WRITERS
    (5, 1, True)
    """
    return max(1, min(MAX_WRITERS, (available_cores() if cores is None else cores) // 3))


class PartWriter:
    """Write a dataset folder part by part, in bounded memory; promote it onto its name when done.

    Use it as a context manager: on a clean exit the manifest is written
    and the staging folder renamed onto ``out``; on an exception the staging
    folder is removed and nothing is left under ``out``.

    Parameters
    ----------
    out : path
        The dataset folder to write.
    spec : FrameSpec
        The frames' spec (stored in every part and in the manifest).
    part_rows : int
        :meth:`add` closes a part at the first episode end at or after this
        many rows.
    overwrite : bool
        Replace an existing dataset folder at ``out`` (only a dataset
        folder: anything else there is refused).
    base : PartedDataset, optional
        For a rewards dataset: its input (parts are written with
        :meth:`write_part` at the input's indexes).
    source : dict, optional
        What it was made from, for the manifest.
    run : dict, optional
        What identifies the run (JSON: input id, plug-in hashes, options),
        recorded in the staging folder as :data:`RUN_NAME`.  A run with one
        that is stopped by Ctrl-C keeps its staging folder.
    resume : bool
        Reuse a staging folder left by the same ``run`` (killed or stopped):
        :attr:`id` is that run's and :attr:`resumed` is True; the caller
        registers the parts it finished (see :data:`JOURNAL_GLOB`) and
        writes the rest.  Without a staging folder it starts afresh.
    writers : int, optional
        Parts written at once in writer threads (Parquet encoding is this
        writer's own work; default :func:`default_writers`); each holds its
        part in memory until it is written.
    processes : int, optional
        Worker processes writing the parts cut from chunks handed over with
        :meth:`add_spooled` (default :func:`default_part_processes`; started
        at the first such part).
    journal : bool
        Record each part :meth:`write_part` writes in :data:`PARTS_JOURNAL`
        (its entry and :func:`episodes_fingerprint`).  Resumed, the writer
        keeps every journaled part whose file is whole (size and CRC-32):
        when the caller hands it that part again (the same input read again
        from its start), the part is not written again if it holds the same
        episodes (same fingerprint), and is refused, naming the part,
        otherwise.  For a writer fed by :meth:`add` (``convert``); a caller
        that journals its own parts (``apply``) leaves it False.

    Examples
    --------
    >>> with PartWriter("corpus", spec=spec, part_rows=100_000) as w:  # doctest: +SKIP
    ...     for chunk in chunks:
    ...         w.add(chunk)
    """

    def __init__(self, out, *, spec: FrameSpec, part_rows: int = DEFAULT_PART_ROWS, overwrite: bool = False,
                 base: PartedDataset | None = None, source: dict | None = None, run: dict | None = None,
                 resume: bool = False, writers: int | None = None, processes: int | None = None,
                 journal: bool = False):
        if not isinstance(spec, FrameSpec):
            raise ParameterError("spec", "should be a rewardlab.FrameSpec", type(spec).__name__)
        self.part_rows = check_int("part_rows", part_rows, low=1, rule="should be an integer >= 1")
        self.writers = default_writers() if writers is None else check_int(
            "writers", writers, low=1, high=MAX_WRITERS, rule=f"should be an integer in [1, {MAX_WRITERS}]")
        self.processes = default_part_processes() if processes is None else check_int(
            "processes", processes, low=1, high=MAX_WRITERS, rule=f"should be an integer in [1, {MAX_WRITERS}]")
        self.out = Path(out)
        self.spec = spec
        self.overwrite = bool(overwrite)
        self.base = base
        self.source = dict(source or {})
        _check_target(self.out, overwrite=self.overwrite)
        self.staging = self.out.with_name(self.out.name + STAGING_SUFFIX)
        self._lock = threading.Lock()
        self._entries: dict[int, PartEntry] = {}
        self._pending: list[pl.DataFrame] = []
        self._pending_rows = 0
        self._next = 0
        self.run = run
        self.resumed = False
        self._lock_file = None  # RUN_NAME, held locked while this run writes
        self.journal = bool(journal)
        #: With ``journal``: the parts a stopped run finished, ``{index: (entry, fingerprint)}``, kept if read again.
        self.kept: dict[int, tuple[PartEntry, str]] = {}
        if resume and run is None:
            raise ParameterError("resume", "needs the run's description (run=...) to tell its own staging "
                                 "folder from another run's", resume)
        if self.staging.exists():
            if not resume:
                raise FileAccessError(self.staging, "is left from a run of this output that did not finish "
                                      "(killed, or still running)",
                                      hint="If no such run is still going, remove it and run again"
                                      + (", or run the same command again with --resume to keep its finished "
                                         "parts." if run is not None else "."))
            self.id = self._resume_id(run)
            self._lock_run()  # after reading the record: closing any descriptor of it drops a POSIX lock
            self.resumed = True
            for partial in self.staging.glob("*.tmp"):  # parts the stopped run was writing: written again
                partial.unlink(missing_ok=True)
            _remove_spools(self.staging)  # its chunks: read again
            if self.journal:
                self.kept = journaled_parts(self.staging)
        else:
            try:
                self.staging.mkdir()
            except OSError as exc:
                raise FileAccessError(self.staging, f"cannot be created ({exc.strerror or exc})",
                                      hint="Check the folder's permissions and free space.") from None
            self.id = uuid.uuid4().hex
            if run is not None:
                (self.staging / RUN_NAME).write_text(json.dumps({"id": self.id, "run": run}, sort_keys=True))
                self._lock_run()
        self.manifest: Manifest | None = None
        # add() and flush() hand parts to `writers` writer threads, beside the caller's next chunk
        self._writer: ThreadPoolExecutor | None = None
        self._in_flight: collections.deque[Future] = collections.deque()
        self._spooled: SpooledParts | None = None  # add_spooled's parts, written in worker processes
        self._handoff: Path | None = None

    def _lock_run(self) -> None:
        """Lock :data:`RUN_NAME` for as long as this run writes: a second run resuming the same staging
        folder meanwhile is refused.  A POSIX record lock: it goes with this process however it ends, and
        the plug-ins' forked child processes do not inherit it; this process's own runs are told apart by
        :data:`_WRITING`."""
        key = str(self.staging.resolve())
        refused = FileAccessError(self.staging, f"is being written by a run still going (it holds the lock on "
                                  f"{RUN_NAME})", hint="Wait for it to end, or stop it, then resume.")
        with _WRITING_LOCK:
            if key in _WRITING:
                raise refused
            lock_file = open(self.staging / RUN_NAME, "r+b")
            try:
                fcntl.lockf(lock_file, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except OSError:
                lock_file.close()
                raise refused from None
            _WRITING.add(key)
        self._lock_file, self._lock_key = lock_file, key

    def _unlock_run(self) -> None:
        if self._lock_file is not None:
            with _WRITING_LOCK:
                self._lock_file.close()  # closing it releases the lock
                _WRITING.discard(self._lock_key)
            self._lock_file = None

    def _resume_id(self, run: dict) -> str:
        """The dataset id of the run that left :attr:`staging`, if it was this run (same ``run``)."""
        return check_staged_run(self.staging, run)

    # --- writing ------------------------------------------------------------------------------------

    def add(self, frame: pl.DataFrame) -> list[int]:
        """Add rows (whole episodes, in dataset order); returns the indexes of the parts closed by it."""
        if frame.height == 0:
            return []
        self._pending.append(frame)
        self._pending_rows += frame.height
        if self._pending_rows < self.part_rows:
            return []
        whole = pl.concat(self._pending, how="vertical", rechunk=False) if len(self._pending) > 1 else frame
        cuts = episode_cuts(whole, self.spec, self.part_rows)
        written, start = [], 0
        for stop in cuts:
            if stop - start < self.part_rows and stop == whole.height:
                break  # the tail waits for more rows
            written.append(self._write_behind(self._next, whole.slice(start, stop - start)))
            self._next += 1
            start = stop
        rest = whole.slice(start)
        self._pending = [rest] if rest.height else []
        self._pending_rows = rest.height
        return written

    def handoff_folder(self) -> Path:
        """The folder (made if need be) in which a reader leaves the chunks it hands to :meth:`add_spooled`:
        ``spool-RUN`` in the staging folder (this writer's own, :data:`SPOOL_NAME`), removed with it, and
        emptied as the parts are written."""
        if self._handoff is None:
            self._handoff = self.staging / f"{SPOOL_NAME}-{uuid.uuid4().hex[:12]}"
            self._handoff.mkdir()
        return self._handoff

    def add_spooled(self, chunk: SpooledChunk) -> list[int]:
        """Add rows left on disk by a reader (whole episodes, in dataset order, the next rows after those
        added before): parts are cut as :meth:`add` cuts them, from the chunk's episode ends alone, and read
        and written by :attr:`processes` worker processes (:mod:`~rewardlab.sources.datasets.spooled_parts`).
        The chunk's file is removed once every part holding its rows is written.  Returns the indexes of the
        parts it closed (being written)."""
        if self._pending_rows:
            raise ParameterError("chunk", "cannot follow rows given to add() (a writer takes frames or spooled "
                                 "chunks)", chunk.path)
        if self._spooled is None:
            self._spooled = SpooledParts(self, processes=self.processes)
        return self._spooled.add(chunk)

    def next_index(self) -> int:
        """The index of the next part (taken)."""
        index, self._next = self._next, self._next + 1
        return index

    def flush(self) -> list[int]:
        """Write what :meth:`add` holds back as a part (call it where a unit of work ends)."""
        if self._spooled is not None:
            return self._spooled.flush()
        if not self._pending_rows:
            return []
        whole = pl.concat(self._pending, how="vertical", rechunk=False)
        self._pending, self._pending_rows = [], 0
        index = self._write_behind(self._next, whole)
        self._next += 1
        return [index]

    def _write_behind(self, index: int, frame: pl.DataFrame) -> int:
        """Write part ``index`` in a writer thread, once fewer than :attr:`writers` parts are in flight (the
        oldest one's error raised here): memory holds at most ``writers`` parts more than a synchronous write."""
        while len(self._in_flight) >= self.writers:
            self._in_flight.popleft().result()
        if self._writer is None:
            self._writer = ThreadPoolExecutor(max_workers=self.writers, thread_name_prefix="rewardlab-part-writer")
        self._in_flight.append(self._writer.submit(self.write_part, index, frame))
        return index

    def wait(self) -> None:
        """Wait for the parts being written in the background; raise the first error."""
        while self._in_flight:
            self._in_flight.popleft().result()
        if self._spooled is not None:
            self._spooled.wait()

    def write_part(self, index: int, frame: pl.DataFrame) -> int:
        """Write ``frame`` as part ``index`` (atomically, in the staging folder); thread-safe."""
        frame = attach(frame, attached(frame) or self.spec)
        if not self.journal:
            self.register(index, write_part_file(self.staging, index, frame, dataset_id=self.id))
            return index
        entry, fingerprint, was_kept = write_journaled_part(self.staging, index, frame, spec=self.spec,
                                                            dataset_id=self.id, kept=self.kept.get(index))
        self.finish_part(index, entry, fingerprint, was_kept)
        return index

    def finish_part(self, index: int, entry: PartEntry, fingerprint: str | None, was_kept: bool) -> None:
        """Record part ``index``, written (journaled first when :attr:`journal`) or kept; thread-safe."""
        with self._lock:  # after the part's rename: a part journaled is whole
            if self.journal and not was_kept:
                with open(self.staging / PARTS_JOURNAL, "a") as f:
                    f.write(journal_line(index, entry, fingerprint) + "\n")
            self._entries[index] = entry

    def start_at(self, index: int) -> None:
        """Resumed with ``journal``: take the kept parts ``0 .. index - 1`` as they are, without reading them
        again (a convert that resumes past the input files whose parts are all finished); :meth:`add` then
        starts part ``index``.  Call it before any :meth:`add`."""
        missing = [i for i in range(index) if i not in self.kept]
        if missing or self._next or self._pending:
            raise ParameterError("index", "should follow kept parts only, before any rows are added", index)
        for i in range(index):
            self.register(i, self.kept[i][0])
        self._next = index

    def register(self, index: int, entry: PartEntry) -> None:
        """Record part ``index``, written into :attr:`staging` elsewhere (a worker: :func:`write_part_file`)."""
        with self._lock:
            self._entries[index] = entry

    def close(self) -> Manifest:
        """Write the remaining rows, the manifest, and rename the staging folder onto ``out``."""
        self.flush()
        self.wait()
        self._stop_writer()
        indexes = sorted(self._entries)
        unread = sorted(set(self.kept) - set(indexes))
        if unread:
            raise FileAccessError(self.staging, f"holds parts {unread[:5]} finished by the run that left it, which "
                                  "this run's input does not reach", hint="Remove the staging folder and run "
                                  "again without --resume.")
        if indexes != list(range(len(indexes))):
            missing = sorted(set(range(max(indexes) + 1)) - set(indexes)) if indexes else []
            raise FileAccessError(self.staging, f"parts {missing[:5]} were never written", hint=REWRITE_HINT)
        if self.base is not None and len(indexes) != len(self.base):
            raise FileAccessError(self.staging, f"{len(indexes)} parts written for an input of {len(self.base)}",
                                  hint=REWRITE_HINT)
        base = None if self.base is None else base_record(self.base, self.out)  # with the parts left out
        manifest = Manifest(id=self.id, kind="parquet", spec=self.spec.to_dict(),
                            parts=tuple(self._entries[i] for i in indexes), base=base, source=self.source)
        (self.staging / MANIFEST_NAME).write_text(manifest.to_json())
        self._unlock_run()
        for leftover in [self.staging / RUN_NAME, *self.staging.glob(JOURNAL_GLOB)]:
            leftover.unlink(missing_ok=True)  # the run's own records: the dataset is the parts and the manifest
        _remove_spools(self.staging)
        _promote(self.staging, self.out, overwrite=self.overwrite)
        self.manifest = manifest
        return manifest

    def _stop_writer(self) -> None:
        if self._writer is not None:
            self._writer.shutdown(wait=True)
            self._writer = None
        if self._spooled is not None:
            self._spooled.close()
            self._spooled = None

    def abort(self, *, keep: bool = False) -> None:
        """Remove the staging folder (after the part being written, if any, is finished); ``keep`` leaves it
        for a resumed run (a run with a ``run`` description, stopped by Ctrl-C)."""
        self._in_flight.clear()
        self._stop_writer()
        self._unlock_run()
        if keep and self.run is not None:
            return
        if self.staging.exists():
            shutil.rmtree(self.staging, ignore_errors=True)

    def __enter__(self) -> "PartWriter":
        return self

    def __exit__(self, kind, exc, tb) -> bool:
        if kind is None:
            try:
                self.close()
            except BaseException:
                self.abort()
                raise
        else:
            self.abort(keep=issubclass(kind, KeyboardInterrupt))
        return False


def _remove_spools(staging: Path) -> None:
    for folder in staging.glob(f"{SPOOL_NAME}-*"):
        shutil.rmtree(folder, ignore_errors=True)


def _check_target(out: Path, *, overwrite: bool) -> None:
    """Refuse an output that exists (unless a dataset folder and ``overwrite``), or whose folder is missing."""
    if out.suffix in DATASET_SUFFIXES:
        raise ParameterError("out", "should be a folder name for a dataset of parts (no .parquet / .arrow "
                             "suffix: that names a single-file dataset)", str(out))
    if not out.parent.is_dir():
        raise FileAccessError(out, f"the folder {out.parent} does not exist", hint="Create it first.")
    if out.exists() or out.is_symlink():
        if not overwrite:
            raise OutputExistsError(out)
        if not is_dataset_folder(out):
            raise FileAccessError(out, "exists and is not a dataset folder, so it is not replaced even with "
                                  "overwrite", hint="Choose another name, or remove it yourself.")


def _promote(staging: Path, out: Path, *, overwrite: bool) -> None:
    """Rename the finished staging folder onto ``out`` (an old dataset folder there is replaced only with overwrite)."""
    if out.exists():
        _check_target(out, overwrite=overwrite)
        old = out.with_name(f"{out.name}.old-{os.getpid()}")
        os.rename(out, old)
        os.rename(staging, out)
        shutil.rmtree(old, ignore_errors=True)
        return
    os.rename(staging, out)


def check_staged_run(staging, run: dict, *, same: str = "plug-in files, input and options") -> str:
    """The dataset id of the run that left the staging folder ``staging``, if it was the run ``run``; else an
    error naming what differs (the keys of ``run`` whose values differ; ``same`` says what the hint asks to keep).

    Examples
    --------
    >>> check_staged_run("corpus.partial", {"inputs": ["a.tsv"]})  # doctest: +SKIP
    '5f0c...'
    """
    staging = Path(staging)
    try:
        left = json.loads((staging / RUN_NAME).read_text())
        equal = left["run"] == json.loads(json.dumps(run, sort_keys=True))
        dataset_id = str(left["id"])
    except (OSError, ValueError, KeyError, TypeError):
        raise FileAccessError(staging, "holds no readable record of the run that left it, so its parts "
                              "cannot be trusted", hint="Remove it and run again without --resume.") from None
    if not equal:
        differ = sorted(k for k in set(run) | set(left["run"]) if left["run"].get(k) != run.get(k))
        raise FileAccessError(staging, "was left by another run (its " + ", ".join(differ)
                              + " differ from this one's)", hint=f"Run the command that left it, with the same "
                              f"{same}, or remove it and run again without --resume.")
    return dataset_id


