"""Convert input files of any registered source into a dataset folder of parts, in bounded memory.

How the input is read depends on what its source offers
(:class:`rewardlab.sources.registry.Source`):

* ``stream`` (kanachan text): chunks of whole episodes of about
  ``chunk_bytes`` of input each, so memory is bounded whatever the files'
  sizes; a stream that reads in worker processes (its ``handoff``: several
  kanachan files with 8 or more workers) leaves its chunks on disk, and the
  parts are cut from their row counts and written by worker processes
  (:meth:`~rewardlab.sources.datasets.writer.PartWriter.add_spooled`), so no
  row passes through this process;
* ``per_file``: one file at a time (memory bounded by the largest file),
  several files at once in the engine's workers, written in input order;
* otherwise: every file in one read (the input must fit in memory).

Whatever the route, the parts concatenated are the frame
:func:`rewardlab.load` gives for the same files, row for row.  Skip mode
works as for one frame: the skipped lines are counted, kept byte for byte
and written to ``skipped_path`` once the dataset is written.

Resuming (``resume=True``, ``rewardlab convert ... --resume``): the staging
folder ``OUT.partial`` records the run (:data:`~rewardlab.sources.datasets.writer.RUN_NAME`:
the format, each input file's resolved path, size, modification time and
a checksum of its first and last MiB (:func:`file_identity`) in input
order, the options, ``on_error``, the memory and rows per part, and the
rewardlab and polars versions) and journals every part it finishes
(:data:`~rewardlab.sources.datasets.writer.PARTS_JOURNAL`: the part's
manifest entry and a fingerprint of its episodes and rows).  A streamed
source that can start past some files (its ``stream`` takes ``before`` and
``file_done``: kanachan text) also journals every input file it has read
whole (:data:`FILES_JOURNAL`: the rows of the dataset up to its end, and
its skipped lines).  A run killed, or stopped with Ctrl-C, leaves that
folder; the same command with ``resume=True`` refuses it if anything
recorded differs (naming it: a changed input file is named with what
changed), then:

* it keeps the finished parts up to the first part not finished, ``P``,
  without reading them again, and reads the input again only from the
  file holding ``P``'s first row (the first unfinished file): the files
  before it are not opened, their skipped lines come from the journal, and
  the stream is told the rows before that file (read back from the kept
  parts: kanachan numbers its games after theirs and checks that no game
  of theirs reappears); the rows of that file that lie in kept parts are
  read and dropped;
* parts past ``P`` finished out of order (parts are written by several
  threads) are kept only if the part read again has its fingerprint (else
  the run is refused, naming the part); the others are written.

A part is cut at the first episode end at or past ``part_rows`` rows,
which depends on the rows only (not on the chunks they come in), so the
parts written equal the uninterrupted run's.  Sources read in one read
(step tables, whose files are one table) read every file again and skip
only the writing of the finished parts.  :attr:`PartsResult.files_read`
says how many input files a run read.  The dataset written equals the
uninterrupted run's byte for byte but for its id (a resumed run keeps the
id of the run that left the folder), skipped lines included.

Examples
--------
>>> result = convert_to_parts(["a.tsv.gz", "b.tsv.gz"], "corpus")  # doctest: +SKIP
>>> result.manifest.rows  # doctest: +SKIP
"""

from __future__ import annotations

import base64
import dataclasses
import hashlib
import io
import json
from pathlib import Path

import polars as pl

from rewardlab.core.errors import FileAccessError, OutputExistsError, ParameterError, check_int
from rewardlab.core.files import check_not_input, progress_enabled
from rewardlab.core.spec import FrameSpec, attach, attached
from rewardlab.engines import check_engine
from rewardlab.sources.datasets.manifest import Manifest
from rewardlab.sources.datasets.parts import part_rows_for
from rewardlab._version import __version__
from rewardlab.sources.datasets.writer import (
    PARTS_JOURNAL, RUN_NAME, STAGING_SUFFIX, PartWriter, check_staged_run, default_part_processes,
)
from rewardlab.sources.storage import read_part
from rewardlab.sources.storage.inspection import inspect_parquet
from rewardlab.sources.dispatch import load, resolve_source
from rewardlab.sources.results import SKIPPED_LINES_SCHEMA, LoadResult, write_skipped_lines
from rewardlab.sources.spooled import SpooledResult

__all__ = ["convert_to_parts", "PartsResult", "DEFAULT_MEMORY", "parse_size", "run_record", "file_identity",
           "FILES_JOURNAL", "IDENTITY_BYTES"]

#: In a staging folder of a streamed convert: one JSON line per input file read whole (its index, the dataset's
#: rows up to its end, its skipped lines as Arrow IPC in base64), for a resumed run to start past it.
FILES_JOURNAL = "journal-files.jsonl"
#: Bytes read at each end of an input file for its checksum in the run record (:func:`file_identity`).
IDENTITY_BYTES = 1 << 20

#: The memory a conversion aims to stay near, in bytes, unless told otherwise.
DEFAULT_MEMORY = 512 << 20

_UNITS = {"": 1, "k": 1 << 10, "m": 1 << 20, "g": 1 << 30, "t": 1 << 40}


def parse_size(text, *, argument: str = "memory") -> int:
    """Bytes from ``512M``, ``2G``, ``300k`` or a plain number of bytes.

    Examples
    --------
    >>> parse_size("512M"), parse_size("2g"), parse_size(1 << 20)
    (536870912, 2147483648, 1048576)
    """
    if isinstance(text, int) and not isinstance(text, bool):
        return check_int(argument, text, low=1 << 20, rule="should be at least 1 MiB")
    raw = str(text).strip().lower().removesuffix("ib").removesuffix("b")
    unit = raw[-1:] if raw[-1:] in _UNITS else ""
    try:
        value = float(raw[: len(raw) - len(unit)])
    except ValueError:
        raise ParameterError(argument, "should be a size such as 512M or 2G", text) from None
    return check_int(argument, int(value * _UNITS[unit]), low=1 << 20, rule="should be at least 1 MiB")


@dataclasses.dataclass(frozen=True)
class PartsResult:
    """What :func:`convert_to_parts` wrote: the manifest, what it skipped (as :class:`rewardlab.LoadResult`), and
    how many of the input files it read (``files_read`` of ``files``: fewer when it resumed past finished files)."""

    manifest: Manifest
    out: Path
    skipped: pl.DataFrame
    skipped_path: Path | None = None
    #: Input files this run read (all of them, unless it resumed past files whose parts were all finished).
    files_read: int = 0
    #: Input files of the conversion.
    files: int = 0

    @property
    def skip_counts(self) -> dict[str, int]:
        """Skipped lines per reason, most frequent first."""
        return LoadResult(pl.DataFrame(), self.skipped).skip_counts


def _read_one(source, files, options: dict, progress):
    """One read of ``files``: a LoadResult (the source's ``read`` where it has one, else ``load``)."""
    if source.read is not None:
        opts = source.check_options(dict(options), "read")
        if source.takes("progress", "read"):
            opts["progress"] = progress
        return source.read(files, **opts)
    frame = load(files, format=source.name, progress=progress, options=options or None)
    return LoadResult.nothing_skipped(frame)


def convert_to_parts(paths, out, *, format: str | None = None, options: dict | None = None,
                     on_error: str = "raise", skipped_path=None, memory=DEFAULT_MEMORY, part_rows: int | None = None,
                     workers: int | None = None, engine: str = "embedded", overwrite: bool = False,
                     progress: bool | None = None, resume: bool = False) -> PartsResult:
    """Convert files of one format into the dataset folder ``out`` (see the module's text).

    Parameters
    ----------
    paths : path or sequence of paths
        Input files (or folders) of one format.
    out : path
        The dataset folder to write (no ``.parquet`` / ``.arrow`` suffix).
    format, options
        As in :func:`rewardlab.load`.
    on_error : {"raise", "skip"}
        Skip mode of sources that have one; the skipped input is kept.
    skipped_path : path, optional
        Where to write the skipped input lines, byte for byte (as
        :func:`rewardlab.read_kanachan` does), once the dataset is written.
    memory : int or str
        The memory to stay near (``"512M"``): sets the input chunk size and
        the rows per part.
    part_rows : int, optional
        Rows per part (default: from ``memory``).
    workers : int, optional
        Cores to use (default: the cores available): for a streamed source
        (kanachan text), its parse threads, split between several files read
        at once in worker processes (one per 4 workers), and, when it reads
        in worker processes, the processes writing the parts (one per 3
        workers); for sources read one file at a time, the files read at
        once.
    engine : str
        ``"embedded"`` (this machine); the files are read in its workers.
    overwrite : bool
        Replace an existing dataset folder at ``out``.
    progress : bool or None
        Progress bars (None: on an interactive terminal or in Jupyter).
    resume : bool
        Keep the parts a killed or stopped run of the same command (same
        input files, unchanged, and options) finished in ``OUT.partial``;
        write the others, reading the input again only from the first file
        not converted whole where the source streams (kanachan text; see
        the module's text).  Without such a folder it starts afresh.

    Returns
    -------
    PartsResult

    Examples
    --------
    >>> convert_to_parts("data/sample.tsv.gz", "/tmp/sample", overwrite=True)  # doctest: +SKIP
    """
    out = Path(out)
    memory = parse_size(memory)
    rows = part_rows_for(memory) if part_rows is None else check_int("part_rows", part_rows, low=1,
                                                                      rule="should be an integer >= 1")
    found_engine = check_engine(engine)
    check_not_input(out, paths, name="out", folder_suffixes=())
    if skipped_path is not None:
        skipped_path = Path(skipped_path)
        check_not_input(skipped_path, paths, name="skipped_path")
        if skipped_path.exists() and not overwrite:
            raise OutputExistsError(skipped_path)
    options = dict(options or {})
    files, source = resolve_source(paths, format=format)
    if on_error != "raise":
        options["on_error"] = on_error
    run = run_record(files, source.name, options, memory=memory, part_rows=rows)
    staging = out.with_name(out.name + STAGING_SUFFIX)
    restartable = source.stream is not None and all(source.takes(k, "stream") for k in ("before", "file_done"))
    if resume and staging.exists():  # refused before any reading
        _check_inputs(staging, run)
        check_staged_run(staging, run, same="input files (unchanged) and options")
    skipped: list[pl.DataFrame] = []
    written_by_source = False
    spec: FrameSpec | None = None
    writer = None
    start = _Start()
    rows_added = 0
    files_journal = _FilesJournal(staging) if restartable else None

    def open_writer(with_spec: FrameSpec) -> None:
        nonlocal spec, writer
        spec = with_spec
        writer = PartWriter(out, spec=spec, part_rows=rows, overwrite=overwrite,
                            source={"format": source.name, "inputs": [str(f) for f in files]},
                            run=run, resume=resume, journal=True,
                            processes=default_part_processes(workers))
        writer.__enter__()

    def add(result) -> None:
        nonlocal rows_added
        if result.skipped.height:
            skipped.append(result.skipped)
        if isinstance(result, SpooledResult):  # rows left on disk by the reader's workers: cut and written there
            chunk = result.chunk
            rows_added += chunk.rows
            if start.drop:  # rows of kept parts in the first file read again
                dropped = min(start.drop, chunk.rows)
                start.drop -= dropped
                chunk = chunk.slice(dropped)
            writer.add_spooled(chunk)
            return
        frame = result.frame
        if writer is None:
            open_writer(attached(frame) or source.spec)
        rows_added += frame.height
        if start.drop:  # rows of kept parts in the first file read again
            dropped = min(start.drop, frame.height)
            start.drop -= dropped
            frame = frame.slice(dropped)
        writer.add(attach(frame, spec) if attached(frame) is None else frame)

    try:
        if restartable and resume and staging.exists():
            kept_spec = _kept_spec(staging)
            if kept_spec is not None:  # the writer checks the kept parts (size, CRC-32) before they count
                open_writer(kept_spec)
                start = _restart_from(staging, writer, len(files))
                writer.start_at(start.part)
                skipped.extend(start.skipped)
                files_journal.keep(start.journal, reported=len(skipped))
                rows_added = start.rows_before
        if source.stream is not None and restartable and start.file >= len(files):
            pass  # every file read whole, its rows in kept parts (a run stopped while closing)
        elif source.stream is not None:
            stream_options = {k: v for k, v in options.items() if k == "on_error"}
            unknown = sorted(set(options) - set(stream_options))
            if unknown:
                raise ParameterError("options", f"are not options of the {source.name} format's streaming "
                                     "reader", unknown)
            if source.takes("workers", "stream"):
                stream_options["workers"] = workers  # cores: parse threads, and files read at once
            if source.takes("spool_in", "stream"):
                stream_options["spool_in"] = out.resolve().parent  # chunks read ahead wait beside the output
            if source.takes("handoff", "stream"):  # parts cut from the reader's chunks on disk, written by workers
                if writer is None:
                    open_writer(source.spec)
                stream_options["handoff"] = writer.handoff_folder()
            if restartable:
                first = start.file

                def file_done(k: int) -> None:  # every chunk of file first + k was added
                    files_journal.file_done(first + k, rows_added, skipped, writer)

                stream_options["file_done"] = file_done
                if first:
                    stream_options["before"] = _rows_before(staging, writer, start.rows_before)
            for result in source.stream(files[start.file:], chunk_bytes=max(1 << 20, memory // 8),
                                        progress=progress, **stream_options):
                add(result)
        elif source.per_file and len(files) > 1:
            def read(file):
                return _read_one(source, [file], options, False)

            bar = _bar(progress, len(files), f"convert ({source.name})")
            for result in found_engine.map(read, files, workers=workers):
                add(result)
                if bar is not None:
                    bar.update(1)
            if bar is not None:
                bar.close()
        else:
            if skipped_path is not None and source.read is not None and source.takes("skipped_path", "read"):
                options.update(skipped_path=skipped_path, overwrite=overwrite)  # the source writes its own
                written_by_source = True
            add(_read_one(source, files, options, progress))
        if writer is None:  # no input rows at all
            add(LoadResult.nothing_skipped(attach(pl.DataFrame(), source.spec)))
        manifest = writer.close()
    except BaseException as exc:
        if writer is not None:
            writer.abort(keep=isinstance(exc, KeyboardInterrupt))  # Ctrl-C: kept for resume
        raise
    table = pl.concat(skipped, how="diagonal_relaxed") if skipped else pl.DataFrame(schema=SKIPPED_LINES_SCHEMA)
    if skipped_path is not None and table.height and not written_by_source:
        write_skipped_lines(table["raw"].to_list(), skipped_path, overwrite=overwrite)
    return PartsResult(manifest, out, table, skipped_path if table.height else None,
                       files_read=len(files) - start.file, files=len(files))


def run_record(files, format: str, options: dict, *, memory: int, part_rows: int) -> dict:
    """What makes two conversions the same run (for resuming), as JSON: each input file (resolved path, size,
    modification time, checksum of its ends: :func:`file_identity`) in order, the format, its options, the
    memory and rows per part, the versions.

    Examples
    --------
    >>> sorted(run_record([], "kanachan", {}, memory=1 << 29, part_rows=1000))
    ['format', 'inputs', 'memory', 'options', 'part_rows', 'versions']
    """
    inputs = [file_identity(file) for file in files]
    record = {"format": format, "inputs": inputs, "options": options, "memory": memory, "part_rows": part_rows,
              "versions": {"rewardlab": __version__, "polars": pl.__version__}}
    return json.loads(json.dumps(record, sort_keys=True, default=str))


def _check_inputs(staging: Path, run: dict) -> None:
    """Refuse a staging folder left by a run of other input files, naming the first file that differs."""
    try:
        left = json.loads((staging / RUN_NAME).read_text())["run"]["inputs"]
    except (OSError, ValueError, KeyError, TypeError):
        return  # check_staged_run says the record is unreadable
    now = run["inputs"]
    for k, (a, b) in enumerate(zip(left, now)):
        if a == b:
            continue
        if a.get("path") != b["path"]:
            what = f"input {k + 1} is {b['path']}, not {a.get('path')}"
        else:
            what = (f"input {b['path']} changed since (" + ", ".join(
                f"{key} {a.get(key)} then, {b[key]} now" for key in ("bytes", "mtime_ns", "checksum")
                if a.get(key) != b[key]) + ")")
        break
    else:
        if len(left) == len(now):
            return
        what = f"{len(now)} input files now, {len(left)} then"
    raise FileAccessError(staging, f"was left by a run of other input ({what}), so its parts are not kept",
                          hint="Resume with the input files that run read, unchanged, or remove the staging "
                          "folder and run again without --resume.")


def file_identity(file) -> dict:
    """What tells an input file apart for resuming: its resolved path, size, modification time and the SHA-256
    of its first and last :data:`IDENTITY_BYTES` (the whole file when smaller than twice that).

    Examples
    --------
    >>> sorted(file_identity("data/sample.tsv.gz"))
    ['bytes', 'checksum', 'mtime_ns', 'path']
    """
    path = Path(file).resolve()
    stat = path.stat()
    digest = hashlib.sha256()
    if path.is_file():
        with open(path, "rb") as f:
            digest.update(f.read(IDENTITY_BYTES))
            if stat.st_size > 2 * IDENTITY_BYTES:
                f.seek(stat.st_size - IDENTITY_BYTES)
            digest.update(f.read(IDENTITY_BYTES))
    return {"path": str(path), "bytes": stat.st_size, "mtime_ns": stat.st_mtime_ns, "checksum": digest.hexdigest()}


@dataclasses.dataclass
class _Start:
    """Where a convert starts: at ``file`` (the input files before it not read), writing part ``part`` (the
    parts before it kept unread), after ``rows_before`` rows of the dataset; ``drop`` rows of ``file`` lie in
    kept parts.  ``skipped``: the skipped lines of the files before; ``journal``: their :data:`FILES_JOURNAL`
    lines."""

    file: int = 0
    part: int = 0
    rows_before: int = 0
    drop: int = 0
    skipped: list = dataclasses.field(default_factory=list)
    journal: list = dataclasses.field(default_factory=list)


def _kept_spec(staging: Path) -> FrameSpec | None:
    """The spec stored in a part the stopped run journaled (None: none is there)."""
    journal = staging / PARTS_JOURNAL
    for line in (journal.read_text().splitlines() if journal.is_file() else []):
        try:
            path = staging / Path(json.loads(line)["entry"]["name"]).name
            return inspect_parquet(path).spec if path.is_file() else None
        except (ValueError, KeyError, TypeError, OSError):
            continue
        except Exception:  # noqa: BLE001 - a damaged part: the writer drops it and the run starts afresh
            return None
    return None


def _restart_from(staging: Path, writer: PartWriter, n_files: int) -> _Start:
    """Where a resumed convert starts: the first part not kept, and the file holding its first row."""
    part = 0
    while part in writer.kept:
        part += 1
    rows = sum(writer.kept[i][0].rows for i in range(part))
    records, lines = [], []
    journal = staging / FILES_JOURNAL
    for line in (journal.read_text().splitlines() if journal.is_file() else []):
        try:
            record = json.loads(line)
            ok = int(record["file"]) == len(records) < n_files and int(record["rows"]) >= 0
        except (ValueError, KeyError, TypeError):
            break  # a line cut short by a kill
        if not ok:
            break
        records.append(record)
        lines.append(line)
    file = 0
    while file < len(records) and int(records[file]["rows"]) <= rows:
        file += 1
    before = int(records[file - 1]["rows"]) if file else 0
    skipped = [_decode(r["skipped"]) for r in records[:file] if r.get("skipped")]
    return _Start(file=file, part=part, rows_before=before, drop=rows - before, skipped=skipped,
                  journal=lines[:file])


def _rows_before(staging: Path, writer: PartWriter, rows: int):
    """``before(columns)``: the first ``rows`` rows of the dataset, those columns, read back from the kept
    parts, part by part."""

    def before(columns):
        left, index = rows, 0
        while left > 0:
            frame = read_part(staging / writer.kept[index][0].name, columns=list(columns))
            yield frame.head(left)
            left -= frame.height
            index += 1

    return before


class _FilesJournal:
    """:data:`FILES_JOURNAL`: a line per input file once all its chunks were handed to the writer (the lines
    wait until the writer has made the staging folder)."""

    def __init__(self, staging: Path):
        self.path = staging / FILES_JOURNAL
        self.waiting: list[str] = []
        self.reported = 0  # skipped-line tables already journaled

    def keep(self, lines: list[str], *, reported: int) -> None:
        """Start from ``lines`` (a resumed run: the files it does not read again)."""
        tmp = self.path.with_name(self.path.name + ".tmp")
        tmp.write_text("".join(line + "\n" for line in lines))
        tmp.replace(self.path)
        self.reported = reported

    def file_done(self, index: int, rows: int, skipped: list, writer) -> None:
        new = skipped[self.reported:]
        self.reported = len(skipped)
        self.waiting.append(json.dumps({"file": index, "rows": rows, "skipped": _encode(new)}))
        if writer is not None:
            with open(self.path, "a") as f:
                f.write("".join(line + "\n" for line in self.waiting))
            self.waiting = []


def _encode(tables: list[pl.DataFrame]) -> str | None:
    """Skipped-line tables as one Arrow IPC stream in base64 (None: none)."""
    if not tables:
        return None
    buffer = io.BytesIO()
    pl.concat(tables, how="diagonal_relaxed").write_ipc(buffer)
    return base64.b64encode(buffer.getvalue()).decode()


def _decode(text: str) -> pl.DataFrame:
    return pl.read_ipc(io.BytesIO(base64.b64decode(text)))


def _bar(progress, total: int, desc: str):
    if not progress_enabled(progress):
        return None
    from tqdm.auto import tqdm

    return tqdm(total=total, desc=desc, unit="file")
