"""Several kanachan annotation files streamed at once, in worker processes, in bounded memory.

:func:`~rewardlab.sources.kanachan.stream.stream_kanachan` reads its files
one after the other: its parse runs in threads, but cutting chunks, the
episode checks and assembling the frames run in one thread, which caps it
at a few cores.  A corpus is many files, and each file's stream is
independent but for two things carried across files: games are numbered
from the first file on, and a game may not appear in two files.  So
:func:`stream_kanachan_files` runs ``processes`` worker processes (each
with ``threads`` parse threads, started once) that each stream one file at
a time, writing its chunks, games numbered from 0, to spool files
(:func:`rewardlab.sources.spooled.write_spool`: LZ4-compressed Arrow IPC,
about a sixth of the chunk's size in memory on kanachan data; that module
says what the format costs); this process reads the chunks back in file
order, shifts the game numbers by the games of the files before, checks
for games seen in an earlier file and yields them.  The chunks equal ``stream_kanachan``'s,
concatenated (frames, skipped lines, the error raised).

With ``handoff`` (a folder of the consumer's), the workers leave their
chunks there and this process yields each as a
:class:`~rewardlab.sources.spooled.SpooledResult` (its rows, where its
episodes end, the game offset to add as it is read) without reading it: a
convert cuts its parts from those numbers and has them written by worker
processes of its own, so no row passes through this process.

Memory: each worker holds its stream's window (about twice ``chunk_bytes``);
this process one chunk.  Disk: the spool holds the chunks of at most
``2 * processes`` files handed out ahead of the one read back.

Examples
--------
>>> chunks = stream_kanachan_files(["a.tsv.gz", "b.tsv.gz"], chunk_bytes=8 << 20, skip=False, processes=2,
...                                threads=2)  # doctest: +SKIP
>>> sum(r.frame.height for r in chunks)  # doctest: +SKIP
"""

from __future__ import annotations

import concurrent.futures
import dataclasses
import os
import pickle
import queue
import shutil
import sys
import tempfile
import threading
from dataclasses import dataclass
from pathlib import Path
from typing import Iterator

import numpy as np
import polars as pl

from rewardlab.core.cuts import frame_episode_ends
from rewardlab.core.errors import DataFormatError
from rewardlab.core.files import progress_enabled
from rewardlab.core.module_processes import how_it_stopped, start_module
from rewardlab.core.spec import attach
from rewardlab.sources.kanachan import schema as S
from rewardlab.sources.kanachan.gameids import GameIdSet
from rewardlab.sources.kanachan.stream import FileStream
from rewardlab.sources.results import LoadResult
from rewardlab.sources.spooled import SpooledChunk, SpooledResult, read_spool, write_spool

__all__ = ["stream_kanachan_files", "FileChunks", "worker_main"]


@dataclass
class FileChunks:
    """What a worker made of one file: its chunks (on disk, games numbered from 0), the ids of the games each
    starts, and its skipped lines; its games, and its error."""

    chunks: list  # (SpooledChunk, game ids of the games it starts, skipped lines as a frame)
    games: int
    error: BaseException | None = None


def _stream_one(index: int, path: str, chunk_bytes: int, skip: bool, threads: int, folder: str) -> FileChunks:
    """Worker: stream one file (games numbered from 0) into IPC files under ``folder``."""
    stream = FileStream([Path(path)], chunk_bytes=chunk_bytes, skip=skip, progress=False, workers=threads)
    chunks = []
    try:
        for k, result in enumerate(stream.run()):
            target = Path(folder) / f"{index:06d}-{k:06d}.arrow"
            frame = result.frame
            write_spool(frame, target)
            ends = frame_episode_ends(frame, S.KANACHAN_SPEC)
            chunk = SpooledChunk(str(target), start=0, rows=frame.height, ends=ends)
            chunks.append((chunk, _game_starts(frame), result.skipped))
    except DataFormatError as exc:  # raised after the chunks before it, as the serial stream does
        return FileChunks(chunks, stream.games, exc)
    return FileChunks(chunks, stream.games)


class _Worker:
    """A worker process (``python -m rewardlab.sources.kanachan.stream_files``: a fresh interpreter, so no
    fork of this process's threads, and nothing of the caller's main module is imported again) that streams
    the files it is sent, one after the other: it starts once, however many files it reads.

    The protocol is one line each way per file: ``INDEX<TAB>PATH`` in, ``done INDEX`` out once
    ``SPOOL/INDEX.result`` (a pickled :class:`FileChunks`) is written.
    """

    def __init__(self, number: int, spool: Path, *, chunk_bytes: int, skip: bool, threads: int, folder: Path):
        self.spool = spool
        self.log = open(spool / f"worker-{number}.log", "w+b")
        args = [str(chunk_bytes), "skip" if skip else "raise", str(threads), str(spool), str(folder)]
        self.process = start_module("rewardlab.sources.kanachan.stream_files", args, stderr=self.log)

    def read(self, index: int, path: Path) -> FileChunks:
        """Have the worker stream ``path``; its chunks, or an error that says how the worker stopped."""
        try:
            self.process.stdin.write(f"{index}\t{path}\n".encode())
            self.process.stdin.flush()
            answer = self.process.stdout.readline().decode().strip()
        except (BrokenPipeError, OSError):
            answer = ""
        result = self.spool / f"{index:06d}.result"
        if answer != f"done {index}" or not result.exists():
            raise DataFormatError(path, None, None, "reader_failed",
                                  "the worker process reading it stopped" + how_it_stopped(self.process, self.log),
                                  hint="Run the command with --workers 1 to read the files in this process.")
        with open(result, "rb") as f:
            chunks = pickle.load(f)
        result.unlink()
        return chunks

    def stop(self) -> None:
        if self.process.poll() is None:
            self.process.kill()
        self.process.wait()
        for stream in (self.process.stdin, self.process.stdout, self.log):
            try:
                stream.close()
            except OSError:
                pass


def stream_kanachan_files(files: list[Path], *, chunk_bytes: int, skip: bool, processes: int, threads: int,
                          progress: bool | None = None, spool_in=None, first_game: int = 0,
                          earlier: GameIdSet | None = None, file_done=None,
                          handoff=None) -> Iterator[LoadResult | SpooledResult]:
    """Stream ``files`` (at least two) in ``processes`` worker processes, each streaming one file at a time.

    Parameters
    ----------
    files : list of Path
        Annotation files, in order (checked by the caller).
    chunk_bytes, skip
        As :func:`~rewardlab.sources.kanachan.stream.stream_kanachan` (``skip``: ``on_error="skip"``).
    processes : int
        Worker processes (files streamed at once).
    threads : int
        Parse threads in each worker.
    progress : bool, optional
        A bar over the files' bytes, advanced as each file is read back.
    spool_in : path, optional
        The folder to create the spool folder in (default: the system's
        temporary folder); removed when the stream ends, however it ends.
    first_game, earlier, file_done
        The games numbered before ``files`` and their ids, and a callback
        of each file's index once its chunks are yielded (as
        ``stream_kanachan``'s ``before`` and ``file_done``).
    handoff : path, optional
        A folder (of the consumer's): the workers leave the chunks there and
        this yields each as a :class:`~rewardlab.sources.spooled.SpooledResult`
        (its game numbers shifted as it is read) without reading it; the
        consumer removes the files (``PartWriter.add_spooled``).

    Yields
    ------
    LoadResult or SpooledResult
        As ``stream_kanachan``: whole games, in file order, games numbered
        across files.

    Raises
    ------
    DataFormatError
        The first file's error in file order (after that file's chunks), or
        a game found in an earlier file (once every file is read).
    """
    from tqdm.auto import tqdm

    spool = Path(tempfile.mkdtemp(prefix="rewardlab-spool-", dir=spool_in))
    earlier, cross_file, games = earlier or GameIdSet(), None, first_game
    workers: list[_Worker] = []
    tasks: queue.Queue = queue.Queue()
    results = [concurrent.futures.Future() for _ in files]
    stop = threading.Event()

    def serve(worker: _Worker) -> None:  # one thread per worker process: hand it the next file, wait for it
        while not stop.is_set():
            try:
                index = tasks.get(timeout=0.1)
            except queue.Empty:
                continue
            if index is None:
                return
            try:
                results[index].set_result(worker.read(index, files[index]))
            except BaseException as exc:  # noqa: BLE001 - raised in file order by the consumer
                results[index].set_exception(exc)
                return

    ahead = 2 * processes  # files handed out beyond the one read back: the spool holds at most these
    try:
        folder = spool if handoff is None else Path(handoff)
        for number in range(min(processes, len(files))):
            workers.append(_Worker(number, spool, chunk_bytes=chunk_bytes, skip=skip, threads=threads,
                                   folder=folder))
        servers = [threading.Thread(target=serve, args=(w,), daemon=True, name=f"rewardlab-spool-{k}")
                   for k, w in enumerate(workers)]
        for server in servers:
            server.start()
        handed = 0
        with tqdm(total=sum(p.stat().st_size for p in files), unit="B", unit_scale=True, desc="reading kanachan",
                  disable=not progress_enabled(progress), leave=False) as bar:
            for index, path in enumerate(files):
                while handed < len(files) and handed <= index + ahead:
                    tasks.put(handed)
                    handed += 1
                done = results[index].result()
                this_file = GameIdSet()
                for chunk, names, skipped in done.chunks:
                    if cross_file is None and len(earlier) and names:
                        cross_file = _cross_file(chunk, names, earlier)
                    this_file.add(names)
                    if cross_file is not None:
                        continue
                    if handoff is not None:
                        yield SpooledResult(dataclasses.replace(chunk, offsets=((S.GAME, games),)), skipped)
                        continue
                    frame = read_spool(chunk.path)
                    Path(chunk.path).unlink()
                    if games:
                        frame = frame.with_columns((pl.col(S.GAME) + games).cast(frame.schema[S.GAME]))
                    yield LoadResult(attach(frame, S.KANACHAN_SPEC), skipped)
                if done.error is not None:
                    raise done.error
                games += done.games
                earlier.absorb(this_file)
                bar.update(path.stat().st_size)
                if file_done is not None:
                    file_done(index)
        for _ in workers:
            tasks.put(None)
    finally:
        stop.set()
        for w in workers:  # stopped early (an error, the consumer gone): the workers go at once
            w.stop()
        shutil.rmtree(spool, ignore_errors=True)
    if cross_file is not None:
        raise cross_file


def _game_starts(frame: pl.DataFrame) -> list[str]:
    """The ids of the games a chunk starts (its games, in order: a chunk holds whole games)."""
    if frame.height == 0:
        return []
    game = frame[S.GAME].to_numpy()
    starts = np.flatnonzero(np.r_[True, game[1:] != game[:-1]])
    return frame[S.GAME_ID].gather(starts).cast(pl.String).to_list()


def _cross_file(chunk: SpooledChunk, names: list[str], earlier: GameIdSet) -> DataFormatError | None:
    """The error of the chunk's first game seen in an earlier file (as the serial stream words it); the chunk is
    read only for it."""
    dup = earlier.contains(names)
    if not dup.any():
        return None
    frame = read_spool(chunk.path)
    game = frame[S.GAME].to_numpy()
    r = int(np.flatnonzero(np.r_[True, game[1:] != game[:-1]])[np.argmax(dup)])
    return DataFormatError(frame[S.SOURCE_FILE][r], int(frame[S.SOURCE_LINE][r]), 0, "game_reappears",
                           f"game {frame[S.GAME_ID][r]} also appears in an earlier file; a game's lines should be in "
                           "one place", hint="Remove the duplicate game.")


def worker_main(argv: list[str]) -> int:
    """``python -m rewardlab.sources.kanachan.stream_files CHUNK_BYTES raise|skip THREADS SPOOL FOLDER``: one
    worker of :func:`stream_kanachan_files`.  It reads ``INDEX<TAB>PATH`` lines, streams each file (its chunks
    into ``FOLDER``), writes ``SPOOL/INDEX.result`` and answers ``done INDEX``; it ends when its input does."""
    chunk_bytes, mode, threads, spool, folder = argv
    answers, sys.stdout = sys.stdout, sys.stderr  # anything printed while reading goes to the log, not the protocol
    for line in sys.stdin:
        index, path = line.rstrip("\n").split("\t", 1)
        result = _stream_one(int(index), path, int(chunk_bytes), mode == "skip", int(threads), folder)
        target = Path(spool) / f"{int(index):06d}.result"
        with open(target.with_suffix(".partial"), "wb") as f:
            pickle.dump(result, f, protocol=pickle.HIGHEST_PROTOCOL)
        os.replace(target.with_suffix(".partial"), target)
        answers.write(f"done {index}\n")
        answers.flush()
    return 0


if __name__ == "__main__":  # run as the package's module, so that FileChunks pickles under its own name
    from rewardlab.sources.kanachan import stream_files

    raise SystemExit(stream_files.worker_main(sys.argv[1:]))
