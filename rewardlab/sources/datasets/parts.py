"""Dataset folders of episode-aligned parts: open and check one (:class:`PartedDataset`), write one (:class:`PartWriter`).

A part is one Parquet file of whole episodes, written by
:func:`rewardlab.sources.storage.write_dataset` (the spec in its footer, the
array columns as FixedSizeBinary), read back with
:func:`rewardlab.sources.storage.read_part`.  The folder's manifest
(:mod:`rewardlab.sources.datasets.manifest`) lists the parts in order.  A
dataset is read part by part, so memory holds one part at a time whatever
the dataset's size.

Opening a folder checks what is cheap (every part listed is there, has the
size the manifest says and, in its footer, this dataset's id and its own
index; no other part file lies in the folder), so a missing, truncated,
foreign or duplicated part is named before any work starts.
:meth:`PartedDataset.verify` also reads every part (CRC-32 and page
checksums).

Writing goes to a staging folder beside the output (``OUT.partial``), which
is renamed onto ``OUT`` once the manifest is written: a run that fails is
cleaned up, and one that is killed leaves only the staging folder, which the
next run refuses by name (a run does not resume yet).

Examples
--------
>>> import tempfile, pathlib, polars as pl
>>> from rewardlab.core.spec import FrameSpec, attach
>>> spec = FrameSpec(name="toy", episode=("e",))
>>> frame = attach(pl.DataFrame({"e": [0, 0, 1, 2, 2, 2], "x": [1.0, 2, 3, 4, 5, 6]}), spec)
>>> with tempfile.TemporaryDirectory() as d:
...     with PartWriter(pathlib.Path(d) / "toy", spec=spec, part_rows=2) as w:
...         _ = w.add(frame)
...     ds = PartedDataset(pathlib.Path(d) / "toy")
...     print(ds.rows, ds.episodes, [p.height for p in ds.frames()])
6 3 [2, 4]
"""

from __future__ import annotations

import bisect
import fcntl
import json
import os
import shutil
import threading
import uuid
from concurrent.futures import Future, ThreadPoolExecutor
from pathlib import Path
from typing import Iterator

import numpy as np
import polars as pl

from rewardlab.core.errors import (
    ColumnNotFoundError, DataFormatError, FileAccessError, OutputExistsError, ParameterError, check_int,
)
from rewardlab.core.spec import FrameSpec, attach, attached
from rewardlab.sources.datasets.manifest import (
    MANIFEST_NAME, PART_KEY, Manifest, PartEntry, file_crc32, has_manifest, part_name, read_manifest,
)
from rewardlab.sources.storage import DATASET_SUFFIXES, file_metadata, read_part, write_dataset

__all__ = ["PartedDataset", "PartWriter", "open_dataset", "is_dataset_folder", "episode_cuts", "STAGING_SUFFIX",
           "RUN_NAME", "JOURNAL_GLOB", "read_part_file", "check_part_rows",
           "DEFAULT_PART_ROWS", "part_rows_for", "write_part_file"]

#: The suffix of the folder a dataset is written into before it gets its final name.
STAGING_SUFFIX = ".partial"
#: In a staging folder: the run that writes it (``{"id", "run"}``), for a resumed run to check.
RUN_NAME = "rewardlab-run.json"
#: Staging folders this process is writing (a POSIX lock does not refuse its own process).
_WRITING: set[str] = set()
_WRITING_LOCK = threading.Lock()
#: In a staging folder: a run's journals of finished parts (JSON lines), removed when the dataset is done.
JOURNAL_GLOB = "journal-*.jsonl"
#: Rows per part when nothing says otherwise (about 300 MB of a kanachan frame in memory).
DEFAULT_PART_ROWS = 262_144

_REWRITE = "Write the dataset again (`rewardlab convert`, or `rewardlab apply` for a rewards dataset)."


def part_rows_for(memory_bytes: int, *, bytes_per_row: int = 1100) -> int:
    """Rows per part that keep a command's memory near ``memory_bytes``.

    A part is held about twice at once (read, and built into a plug-in's
    arrays or a writer's table), so a part gets a third of the budget;
    ``bytes_per_row`` is what a row costs in memory (kanachan's frame: about
    1.1 KB).

    Examples
    --------
    >>> part_rows_for(512 << 20)
    162688
    """
    memory_bytes = check_int("memory", memory_bytes, low=1 << 20, rule="should be at least 1 MiB")
    return max(1024, memory_bytes // 3 // bytes_per_row)


def is_dataset_folder(path) -> bool:
    """True when ``path`` is a folder holding a dataset manifest.

    Examples
    --------
    >>> is_dataset_folder("data")
    False
    """
    return isinstance(path, (str, os.PathLike)) and Path(path).is_dir() and has_manifest(path)


def episode_cuts(frame: pl.DataFrame, spec: FrameSpec, rows: int) -> list[int]:
    """Where to cut ``frame`` into pieces of whole episodes of at least ``rows`` rows (the last may be smaller).

    Returns the end row of each piece (the last is ``frame.height``).

    Examples
    --------
    >>> from rewardlab.core.spec import FrameSpec
    >>> episode_cuts(pl.DataFrame({"e": [0, 0, 1, 2, 2, 2]}), FrameSpec(name="s", episode=("e",)), 2)
    [2, 6]
    """
    if frame.height == 0:
        return []
    ends = np.flatnonzero(frame.select(spec.episode_end(frame.columns)).to_series().to_numpy()) + 1
    cuts, start = [], 0
    while start < frame.height:
        k = bisect.bisect_left(ends, start + rows)
        stop = int(ends[min(k, ends.size - 1)])
        cuts.append(stop)
        start = stop
    return cuts


def _episodes(frame: pl.DataFrame, spec: FrameSpec) -> int:
    return int(frame.select(spec.episode_end(frame.columns)).to_series().sum()) if frame.height else 0


class PartedDataset:
    """A dataset folder, opened and checked: its manifest, spec and parts, read one part at a time.

    Parameters
    ----------
    folder : path
        A folder with a manifest (``rewardlab convert ... --out FOLDER``).

    Raises
    ------
    DataFormatError
        The manifest is missing or damaged; a part listed is missing, has
        another size than listed (truncated, or replaced), belongs to
        another dataset or sits at another index (copied over another
        part); a part file lies in the folder that the manifest does not
        list; a rewards dataset's base folder is missing or is another
        dataset.  Each names the folder or the part and what to do.

    Examples
    --------
    >>> ds = PartedDataset("corpus")  # doctest: +SKIP
    >>> for part in ds.frames(columns=["reward_top"]):  # doctest: +SKIP
    ...     ...
    """

    def __init__(self, folder):
        self.folder = Path(folder)
        if not self.folder.is_dir():
            raise DataFormatError(self.folder, None, None, "missing_file", "the dataset folder does not exist",
                                  hint="Check the path.")
        self.manifest = read_manifest(self.folder)
        try:
            self.spec = FrameSpec.from_dict(self.manifest.spec)
        except Exception as exc:  # noqa: BLE001 - any failure to rebuild it is a damaged manifest
            raise DataFormatError(self.folder / MANIFEST_NAME, None, None, "bad_manifest",
                                  f"the manifest's spec cannot be read ({exc})", hint=_REWRITE) from None
        self.paths = [self.folder / p.name for p in self.manifest.parts]
        self._check_parts()
        self._base: PartedDataset | None = None
        self._columns: tuple[str, ...] | None = None
        if self.manifest.base is not None:
            self._base = self._open_base()

    # --- what it holds ------------------------------------------------------------------------------

    @property
    def rows(self) -> int:
        """Rows (transitions) over every part."""
        return self.manifest.rows

    @property
    def episodes(self) -> int:
        """Episodes over every part."""
        return self.manifest.episodes

    @property
    def base(self) -> "PartedDataset | None":
        """A rewards dataset's input dataset (same parts, row for row); None for other datasets."""
        return self._base

    def __len__(self) -> int:
        return len(self.paths)

    def __repr__(self) -> str:
        return (f"PartedDataset({str(self.folder)!r}: {self.rows:,} rows, {self.episodes:,} episodes, "
                f"{len(self)} parts, spec {self.spec.name!r})")

    @property
    def columns(self) -> tuple[str, ...]:
        """The parts' columns (from the first part's footer; every part has the same)."""
        if self._columns is None:
            if not self.paths:
                self._columns = tuple(self.spec.required)
            else:
                import pyarrow.parquet as pq

                self._columns = tuple(pq.read_schema(self.paths[0]).names)
        return self._columns

    @property
    def all_columns(self) -> tuple[str, ...]:
        """Its columns, then its base's that it lacks (what :meth:`frames` can read)."""
        own = self.columns
        return own + tuple(c for c in (self._base.all_columns if self._base else ()) if c not in own)

    # --- reading ------------------------------------------------------------------------------------

    def read(self, index: int, columns=None) -> pl.DataFrame:
        """Part ``index`` (all its columns, or ``columns``: from this dataset, else from its base).

        The spec's episode columns are read too (first), whatever ``columns``
        says; the frame carries the spec projected to its columns.
        """
        index = check_int("index", index, low=0, high=len(self) - 1 if len(self) else 0,
                          rule=f"should be a part index in [0, {len(self) - 1}]")
        if columns is None:
            frame = read_part(self.paths[index])
        else:
            columns = list(dict.fromkeys(columns))
            unknown = [c for c in columns if c not in self.all_columns]
            if unknown:
                raise ColumnNotFoundError(unknown[0], list(self.all_columns))
            own = [c for c in columns if c in self.columns]
            other = [c for c in columns if c not in self.columns]
            frame = read_part(self.paths[index], columns=own or list(self.spec.episode))
            if other:
                extra = self._base.read(index, other)
                if extra.height != frame.height:
                    raise DataFormatError(self.paths[index], None, None, "base_mismatch",
                                          f"the part has {frame.height:,} rows, part {index} of its base "
                                          f"{self._base.folder} {extra.height:,}", hint=_REWRITE)
                frame = frame.hstack(extra.select(other))
            frame = frame.select(list(dict.fromkeys([*self.spec.episode, *columns])))  # with its episode keys
        check_part_rows(frame, self.paths[index], self.manifest.parts[index].rows)
        return attach(frame, self.spec.project(frame.columns))

    def part_items(self) -> list[tuple[str, int, int]]:
        """``(file, rows, index)`` of every part: what a work item needs to read one part on its own
        (:func:`read_part_file`), without opening the folder again (which checks every part's footer).

        Examples
        --------
        >>> open_dataset("corpus").part_items()[0]  # doctest: +SKIP
        ('corpus/part-000000.parquet', 162762, 0)
        """
        return [(str(p), e.rows, i) for i, (p, e) in enumerate(zip(self.paths, self.manifest.parts))]

    def frames(self, columns=None) -> Iterator[pl.DataFrame]:
        """Each part in order (see :meth:`read`); one part is held at a time."""
        for index in range(len(self)):
            yield self.read(index, columns)

    def load(self, columns=None) -> pl.DataFrame:
        """Every part in one frame (the dataset must fit in memory)."""
        frames = list(self.frames(columns))
        if not frames:
            return attach(pl.DataFrame(), self.spec)
        frame = pl.concat(frames, how="vertical", rechunk=False)
        return attach(frame, self.spec.project(frame.columns))

    # --- checks -------------------------------------------------------------------------------------

    def _check_parts(self) -> None:
        listed = {p.name for p in self.manifest.parts}
        for index, (entry, path) in enumerate(zip(self.manifest.parts, self.paths)):
            try:
                size = path.stat().st_size
            except FileNotFoundError:
                raise DataFormatError(path, None, None, "missing_part",
                                      f"part {index} of {len(self.paths)} listed in the manifest is missing",
                                      hint=_REWRITE) from None
            if size != entry.bytes:
                raise DataFormatError(path, None, None, "part_size",
                                      f"the part has {size:,} bytes, the manifest says {entry.bytes:,} "
                                      "(truncated, or replaced by another file)", hint=_REWRITE)
            raw = file_metadata(path).get(PART_KEY.encode())
            try:
                found = json.loads(raw) if raw is not None else None
            except ValueError:
                found = None
            if not isinstance(found, dict) or found.get("dataset") != self.manifest.id:
                raise DataFormatError(path, None, None, "foreign_part",
                                      "the part belongs to another dataset (its footer names "
                                      f"{found.get('dataset') if isinstance(found, dict) else 'none'}, the "
                                      f"manifest {self.manifest.id})", hint=_REWRITE)
            if found.get("index") != index:
                raise DataFormatError(path, None, None, "duplicated_part",
                                      f"the file is part {found.get('index')} of this dataset, copied over "
                                      f"part {index}", hint=_REWRITE)
        strays = sorted(p.name for p in self.folder.iterdir()
                        if p.suffix in DATASET_SUFFIXES and p.name not in listed)
        if strays:
            raise DataFormatError(self.folder / strays[0], None, None, "foreign_part",
                                  f"the folder holds {len(strays)} part file(s) its manifest does not list "
                                  f"({', '.join(strays[:3])}{', ...' if len(strays) > 3 else ''})",
                                  hint="Move them out of the dataset folder (a dataset folder holds only its "
                                  "own parts).")

    def _open_base(self) -> "PartedDataset":
        base = self.manifest.base or {}
        where = (self.folder / str(base.get("path", ""))).resolve()
        if not is_dataset_folder(where):
            raise DataFormatError(self.folder / MANIFEST_NAME, None, None, "missing_base",
                                  f"the rewards dataset's input {where} is not there (it was made from it, "
                                  "and reads states and context from it)",
                                  hint="Keep the two folders side by side, as `rewardlab apply` wrote them.")
        found = PartedDataset(where)
        if found.manifest.id != base.get("id") or len(found) != len(self):
            raise DataFormatError(self.folder / MANIFEST_NAME, None, None, "base_mismatch",
                                  f"{where} is not the dataset these rewards were computed on (its id or parts "
                                  "differ)", hint="Apply the plug-ins to it again.")
        return found

    def verify(self, *, progress=None) -> None:
        """Read every part once: its CRC-32 against the manifest, its page checksums, its rows and episodes.

        Raises
        ------
        DataFormatError
            Naming the first part that fails.
        """
        for index, (entry, path) in enumerate(zip(self.manifest.parts, self.paths)):
            crc = file_crc32(path)
            if crc != entry.crc32:
                raise DataFormatError(path, None, None, "part_checksum",
                                      f"the part's CRC-32 is {crc}, the manifest says {entry.crc32}: its bytes "
                                      "changed since it was written", hint=_REWRITE)
            frame = self.read(index)
            got = _episodes(frame, attached(frame) or self.spec)
            if got != entry.episodes:
                raise DataFormatError(path, None, None, "part_mismatch",
                                      f"the part holds {got:,} episodes, the manifest says {entry.episodes:,}",
                                      hint=_REWRITE)
            if progress is not None:
                progress(index + 1, len(self))


def check_part_rows(frame: pl.DataFrame, path, rows: int) -> None:
    """Refuse a part whose row count differs from its manifest's (naming the part)."""
    if frame.height != rows:
        raise DataFormatError(path, None, None, "part_mismatch",
                              f"the part holds {frame.height:,} rows, the manifest says {rows:,}", hint=_REWRITE)


def read_part_file(path, rows: int, *, columns=None) -> pl.DataFrame:
    """One part of a dataset folder read on its own (see :meth:`PartedDataset.part_items`), or only
    ``columns`` of it, its row count checked against the manifest's ``rows``; its spec attached.

    Examples
    --------
    >>> path, rows, _ = open_dataset("corpus").part_items()[0]  # doctest: +SKIP
    >>> read_part_file(path, rows, columns=["game_id"]).height == rows  # doctest: +SKIP
    True
    """
    frame = read_part(path, columns=columns)
    check_part_rows(frame, path, rows)
    return frame


def open_dataset(folder) -> PartedDataset:
    """Open a dataset folder (see :class:`PartedDataset`).

    Examples
    --------
    >>> import rewardlab
    >>> ds = rewardlab.open_dataset("corpus")  # doctest: +SKIP
    """
    return PartedDataset(folder)


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

    Examples
    --------
    >>> with PartWriter("corpus", spec=spec, part_rows=100_000) as w:  # doctest: +SKIP
    ...     for chunk in chunks:
    ...         w.add(chunk)
    """

    def __init__(self, out, *, spec: FrameSpec, part_rows: int = DEFAULT_PART_ROWS, overwrite: bool = False,
                 base: PartedDataset | None = None, source: dict | None = None, run: dict | None = None,
                 resume: bool = False):
        if not isinstance(spec, FrameSpec):
            raise ParameterError("spec", "should be a rewardlab.FrameSpec", type(spec).__name__)
        self.part_rows = check_int("part_rows", part_rows, low=1, rule="should be an integer >= 1")
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
        # add() and flush() write in this thread, one part at a time, beside the caller's next chunk
        self._writer: ThreadPoolExecutor | None = None
        self._in_flight: Future | None = None

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
        try:
            left = json.loads((self.staging / RUN_NAME).read_text())
            same = left["run"] == json.loads(json.dumps(run, sort_keys=True))
            dataset_id = str(left["id"])
        except (OSError, ValueError, KeyError, TypeError):
            raise FileAccessError(self.staging, "holds no readable record of the run that left it, so its parts "
                                  "cannot be trusted", hint="Remove it and run again without --resume.") from None
        if not same:
            differ = sorted(k for k in set(run) | set(left["run"]) if left["run"].get(k) != run.get(k))
            raise FileAccessError(self.staging, "was left by another run (its " + ", ".join(differ)
                                  + " differ from this one's)", hint="Run the command that left it, with the same "
                                  "plug-in files, input and options, or remove it and run again without --resume.")
        return dataset_id

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

    def flush(self) -> list[int]:
        """Write what :meth:`add` holds back as a part (call it where a unit of work ends)."""
        if not self._pending_rows:
            return []
        whole = pl.concat(self._pending, how="vertical", rechunk=False)
        self._pending, self._pending_rows = [], 0
        index = self._write_behind(self._next, whole)
        self._next += 1
        return [index]

    def _write_behind(self, index: int, frame: pl.DataFrame) -> int:
        """Write part ``index`` in the writer thread once the part before it is written (its error raised
        here): one part in flight, so memory holds at most one part more than a synchronous write."""
        self.wait()
        if self._writer is None:
            self._writer = ThreadPoolExecutor(max_workers=1, thread_name_prefix="rewardlab-part-writer")
        self._in_flight = self._writer.submit(self.write_part, index, frame)
        return index

    def wait(self) -> None:
        """Wait for the part being written in the background; raise its error."""
        future, self._in_flight = self._in_flight, None
        if future is not None:
            future.result()

    def write_part(self, index: int, frame: pl.DataFrame) -> int:
        """Write ``frame`` as part ``index`` (atomically, in the staging folder); thread-safe."""
        self.register(index, write_part_file(self.staging, index, attach(frame, attached(frame) or self.spec),
                                             dataset_id=self.id))
        return index

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
        if indexes != list(range(len(indexes))):
            missing = sorted(set(range(max(indexes) + 1)) - set(indexes)) if indexes else []
            raise FileAccessError(self.staging, f"parts {missing[:5]} were never written", hint=_REWRITE)
        if self.base is not None and len(indexes) != len(self.base):
            raise FileAccessError(self.staging, f"{len(indexes)} parts written for an input of {len(self.base)}",
                                  hint=_REWRITE)
        base = None
        if self.base is not None:
            base = {"path": os.path.relpath(self.base.folder.resolve(), self.out.resolve()),
                    "id": self.base.manifest.id}
        manifest = Manifest(id=self.id, kind="parquet", spec=self.spec.to_dict(),
                            parts=tuple(self._entries[i] for i in indexes), base=base, source=self.source)
        (self.staging / MANIFEST_NAME).write_text(manifest.to_json())
        self._unlock_run()
        for leftover in [self.staging / RUN_NAME, *self.staging.glob(JOURNAL_GLOB)]:
            leftover.unlink(missing_ok=True)  # the run's own records: the dataset is the parts and the manifest
        _promote(self.staging, self.out, overwrite=self.overwrite)
        self.manifest = manifest
        return manifest

    def _stop_writer(self) -> None:
        if self._writer is not None:
            self._writer.shutdown(wait=True)
            self._writer = None

    def abort(self, *, keep: bool = False) -> None:
        """Remove the staging folder (after the part being written, if any, is finished); ``keep`` leaves it
        for a resumed run (a run with a ``run`` description, stopped by Ctrl-C)."""
        self._in_flight = None
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


def write_part_file(staging: Path, index: int, frame: pl.DataFrame, *, dataset_id: str) -> PartEntry:
    """Write ``frame`` (with its spec attached) as part ``index`` of dataset ``dataset_id`` into ``staging``.

    Atomic (a temporary name, then a rename), so a retried or killed worker
    leaves the part whole or absent.  Returns the manifest's entry for it.
    """
    name = part_name(index)
    tmp = Path(staging) / f"{name}.{os.getpid()}.{threading.get_ident()}.tmp"
    spec = attached(frame)
    try:
        write_dataset(frame, tmp, kind="parquet", spec=spec,
                      metadata={PART_KEY: json.dumps({"dataset": dataset_id, "index": index})})
        entry = PartEntry(name=name, rows=frame.height, episodes=_episodes(frame, spec),
                          bytes=tmp.stat().st_size, crc32=file_crc32(tmp))
        os.replace(tmp, Path(staging) / name)
    except OSError as exc:
        tmp.unlink(missing_ok=True)
        if isinstance(exc, FileAccessError):
            raise
        raise FileAccessError(Path(staging) / name, f"part {index} could not be written "
                              f"({exc.strerror or exc})", hint="Check the free space and permissions of the "
                              "output's folder; nothing is left under the output's name, so run again once "
                              "fixed.") from exc
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise
    return entry


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
