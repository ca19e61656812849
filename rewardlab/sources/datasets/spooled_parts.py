"""Parts cut from spooled chunks and written in worker processes (``PartWriter.add_spooled``).

A convert of many kanachan files parses them in worker processes that leave
their chunks on disk (:class:`~rewardlab.sources.spooled.SpooledChunk`).
Reading those chunks back in the driving process, cutting them into parts
and encoding the parts there made that one process the limit past a few
cores (measured on a lent 16-core machine: ``convert`` at 1.5-1.75M
transitions/s while the parse alone ran at 3.0-3.7M lines/s).  Here the
driver cuts parts from the chunks' row counts and episode ends alone (the
same rule as :func:`~rewardlab.sources.datasets.parts.episode_cuts`, so the
parts are those of :meth:`PartWriter.add`), and each part is read from its
chunks, checked against a kept part of a resumed run and written by one of
``processes`` worker processes (``python -m
rewardlab.sources.datasets.spooled_parts``: fresh interpreters, started once,
that import nothing of the caller's main module, so a user's script needs
no ``if __name__ == "__main__"`` guard).  A chunk's file is removed once
every part holding its rows is written.

Memory in the driver: the chunks' ends, a few numbers per episode.  In each
worker: one part.

Examples
--------
>>> parts = SpooledParts(writer, processes=4)  # doctest: +SKIP
>>> parts.add(chunk)  # doctest: +SKIP
"""

from __future__ import annotations

import collections
import os
import pickle
import queue
import struct
import subprocess
import sys
import tempfile
from concurrent.futures import Future, ThreadPoolExecutor

import numpy as np

from rewardlab.core.cuts import cuts_at_ends
from rewardlab.core.errors import EngineError
from rewardlab.core.module_processes import how_it_stopped, start_module
from rewardlab.core.spec import FrameSpec
from rewardlab.sources.datasets.manifest import PartEntry
from rewardlab.sources.datasets.part_files import write_journaled_part
from rewardlab.sources.spooled import Piece, SpooledChunk, read_pieces

__all__ = ["SpooledParts", "write_spooled_part", "plan_cuts", "worker_main"]


def write_spooled_part(staging: str, index: int, pieces: list[Piece], spec: dict, dataset_id: str,
                       kept: tuple[PartEntry, str] | None) -> tuple[PartEntry, str, bool]:
    """Worker: read part ``index``'s rows from ``pieces`` and write it (see :func:`write_journaled_part`)."""
    frame = read_pieces(pieces)
    return write_journaled_part(staging, index, frame, spec=FrameSpec.from_dict(spec), dataset_id=dataset_id,
                                kept=kept)


def plan_cuts(chunks: list[SpooledChunk], part_rows: int, *, final: bool) -> list[int]:
    """The part ends (rows from the first chunk's first row) to write now: every cut of
    :func:`~rewardlab.core.cuts.cuts_at_ends` over the chunks' episode ends, but a last piece
    shorter than ``part_rows`` unless ``final`` (it waits for more rows).

    Examples
    --------
    >>> c = SpooledChunk("a", start=0, rows=5, ends=np.array([2, 3, 5]))
    >>> plan_cuts([c], 2, final=False), plan_cuts([c], 6, final=False), plan_cuts([c], 6, final=True)
    ([2, 5], [], [5])
    """
    if not chunks:
        return []
    offsets = np.cumsum([0] + [c.rows for c in chunks[:-1]])
    ends = np.concatenate([c.ends + k for c, k in zip(chunks, offsets)])
    cuts = cuts_at_ends(ends, part_rows)
    if cuts and not final and cuts[-1] - (cuts[-2] if len(cuts) > 1 else 0) < part_rows:
        cuts.pop()
    return cuts


class SpooledParts:
    """The spooled side of one :class:`~rewardlab.sources.datasets.writer.PartWriter`: chunks waiting to be
    cut, parts being written, and the worker processes.

    Parameters
    ----------
    writer : PartWriter
        Gives the staging folder, spec, dataset id, rows per part, part
        indexes (:meth:`PartWriter.next_index`), the kept parts of a resumed
        run, and records each part written (:meth:`PartWriter.finish_part`).
    processes : int
        Worker processes writing parts; at most twice as many parts are in
        flight.
    """

    def __init__(self, writer, *, processes: int):
        self.writer = writer
        self.processes = processes
        self.pending: list[SpooledChunk] = []
        self.pending_rows = 0
        self.users: collections.Counter = collections.Counter()  # chunk file -> parts planned or in flight on it
        self.waiting: set[str] = set()  # chunk files with rows not yet cut into a part
        self.in_flight: collections.deque = collections.deque()  # (future, index, files)
        self.pool: ThreadPoolExecutor | None = None  # a thread per worker process, waiting on it
        self.idle: queue.Queue = queue.Queue()  # worker processes not busy
        self.started: list[_PartProcess] = []

    def add(self, chunk: SpooledChunk) -> list[int]:
        """Take ``chunk`` (the next rows of the dataset); returns the indexes of the parts it closed."""
        if chunk.rows == 0:
            self._release([], [chunk.path])
            return []
        self.pending.append(chunk)
        self.pending_rows += chunk.rows
        self.waiting.add(chunk.path)
        if self.pending_rows < self.writer.part_rows:
            return []
        return self._cut(final=False)

    def flush(self) -> list[int]:
        """Write the rows held back as a part (the end of the input)."""
        return self._cut(final=True) if self.pending_rows else []

    def _cut(self, *, final: bool) -> list[int]:
        written, start = [], 0
        for stop in plan_cuts(self.pending, self.writer.part_rows, final=final):
            written.append(self._submit(self._pieces(start, stop)))
            start = stop
        self._drop_front(start)
        return written

    def _pieces(self, start: int, stop: int) -> list[tuple[SpooledChunk, Piece]]:
        """The pending chunks' rows ``start .. stop`` (counted over the pending chunks) as pieces."""
        pieces, offset = [], 0
        for chunk in self.pending:
            a, b = max(start - offset, 0), min(stop - offset, chunk.rows)
            if a < b:
                pieces.append((chunk, chunk.piece(a, b)))
            offset += chunk.rows
            if offset >= stop:
                break
        return pieces

    def _drop_front(self, rows: int) -> None:
        """Forget the first ``rows`` pending rows (cut into parts): whole chunks go, a chunk cut inside stays,
        sliced."""
        done = []
        while rows and self.pending:
            chunk = self.pending[0]
            if chunk.rows <= rows:
                rows -= chunk.rows
                self.pending_rows -= chunk.rows
                done.append(chunk.path)
                self.pending.pop(0)
            else:
                self.pending[0] = chunk.slice(rows)
                self.pending_rows -= rows
                rows = 0
        self._release([], done)

    def _submit(self, pieces: list[tuple[SpooledChunk, Piece]]) -> int:
        while len(self.in_flight) >= 2 * self.processes:
            self._complete(self.in_flight.popleft())
        if self.pool is None:
            self.pool = ThreadPoolExecutor(max_workers=self.processes, thread_name_prefix="rewardlab-part-process")
            for _ in range(self.processes):
                process = _PartProcess()
                self.started.append(process)
                self.idle.put(process)
        w = self.writer
        index = w.next_index()
        files = [chunk.path for chunk, _ in pieces]
        self.users.update(files)
        task = (str(w.staging), index, [p for _, p in pieces], w.spec.to_dict(), w.id, w.kept.get(index))
        future = self.pool.submit(self._run, index, task)
        self.in_flight.append((future, index, files))
        return index

    def _run(self, index: int, task: tuple):
        """In a pool thread: run ``task`` on an idle worker process."""
        process = self.idle.get()
        try:
            return process.run(index, task)
        finally:
            self.idle.put(process)

    def _complete(self, item: tuple[Future, int, list[str]]) -> None:
        future, index, files = item
        entry, fingerprint, was_kept = future.result()
        self.writer.finish_part(index, entry, fingerprint, was_kept)
        self._release(files, [])

    def _release(self, used: list[str], cut: list[str]) -> None:
        """Parts on ``used`` are written, ``cut`` chunks are cut whole: remove the chunk files no part needs."""
        self.users.subtract(used)
        self.waiting.difference_update(cut)
        for path in set(used) | set(cut):
            if self.users[path] <= 0 and path not in self.waiting:
                del self.users[path]
                try:
                    os.unlink(path)
                except FileNotFoundError:
                    pass

    def wait(self) -> None:
        """Wait for every part in flight; raise the first error (in part order)."""
        while self.in_flight:
            self._complete(self.in_flight.popleft())

    def close(self) -> None:
        """Stop the worker processes (after :meth:`wait`, or to abandon the parts in flight)."""
        for future, _, _ in self.in_flight:
            future.cancel()
        self.in_flight.clear()
        if self.pool is not None:
            self.pool.shutdown(wait=True, cancel_futures=True)
            self.pool = None
        for process in self.started:
            process.stop()
        self.started = []


_LENGTH = struct.Struct("<Q")


class _PartProcess:
    """A worker process writing parts: ``python -m rewardlab.sources.datasets.spooled_parts``, a fresh
    interpreter that imports nothing of the caller's main module.  Each task crosses as a length-prefixed
    pickle on its standard input, each answer (``(True, result)`` or ``(False, exception)``) likewise on its
    standard output; it ends when its input does (also when this process dies)."""

    def __init__(self):
        self.log = tempfile.TemporaryFile()
        self.process = start_module("rewardlab.sources.datasets.spooled_parts", [], stderr=self.log)

    def run(self, index: int, task: tuple):
        """The task's result, its exception raised, or an :class:`EngineError` if the process stopped."""
        try:
            data = pickle.dumps(task, protocol=pickle.HIGHEST_PROTOCOL)
            self.process.stdin.write(_LENGTH.pack(len(data)) + data)
            self.process.stdin.flush()
            head = self.process.stdout.read(_LENGTH.size)
            answer = pickle.loads(self.process.stdout.read(_LENGTH.unpack(head)[0])) if len(head) == _LENGTH.size \
                else None
        except (OSError, EOFError, pickle.UnpicklingError):
            answer = None
        if answer is None:
            raise self._died(index)
        ok, value = answer
        if not ok:
            raise value
        return value

    def _died(self, index: int) -> EngineError:
        return EngineError(f"the process writing part {index} stopped" + how_it_stopped(self.process, self.log),
                           hint="It was killed, ran out of memory or crashed in native code; nothing was written "
                           "under the final name. Run it again (--resume keeps the parts finished); if it stops "
                           "again, run with --workers 1 to write the parts in this process.")

    def stop(self) -> None:
        try:
            self.process.stdin.close()
            self.process.wait(timeout=10)
        except (OSError, subprocess.TimeoutExpired):
            self.process.kill()
            self.process.wait()
        for stream in (self.process.stdout, self.log):
            try:
                stream.close()
            except OSError:
                pass


def worker_main() -> int:
    """``python -m rewardlab.sources.datasets.spooled_parts``: run :func:`write_spooled_part` on each task read
    from standard input, answering on standard output (see :class:`_PartProcess`)."""
    tasks, answers = sys.stdin.buffer, sys.stdout.buffer
    sys.stdout = sys.stderr  # anything printed goes to the log, not the protocol
    while True:
        head = tasks.read(_LENGTH.size)
        if len(head) < _LENGTH.size:
            return 0
        task = pickle.loads(tasks.read(_LENGTH.unpack(head)[0]))
        try:
            answer = (True, write_spooled_part(*task))
        except Exception as exc:  # noqa: BLE001 - sent back, raised in the driver
            answer = (False, exc)
        try:
            data = pickle.dumps(answer, protocol=pickle.HIGHEST_PROTOCOL)
        except Exception:  # noqa: BLE001 - an exception that does not pickle: its words
            data = pickle.dumps((False, EngineError(f"writing part {task[1]} failed: {answer[1]!r}")))
        answers.write(_LENGTH.pack(len(data)) + data)
        answers.flush()


if __name__ == "__main__":  # run as the package's module, so that its functions pickle under their own names
    from rewardlab.sources.datasets import spooled_parts

    raise SystemExit(spooled_parts.worker_main())

