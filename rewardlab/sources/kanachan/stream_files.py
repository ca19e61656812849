"""Several kanachan annotation files streamed at once, one worker process per file, in bounded memory.

:func:`~rewardlab.sources.kanachan.stream.stream_kanachan` reads its files
one after the other: its parse runs in threads, but cutting chunks, the
episode checks and assembling the frames run in one thread, which caps it
at a few cores.  A corpus is many files, and each file's stream is
independent but for two things carried across files: games are numbered
from the first file on, and a game may not appear in two files.  So
:func:`stream_kanachan_files` runs one stream per file in a worker process
(``processes`` at once, each with ``threads`` parse threads), each writing
its chunks, numbered from 0, to Arrow IPC files in a spool folder; this
process reads the chunks back in file order, shifts the game numbers by the
games of the files before, checks for games seen in an earlier file and
yields them.  The chunks equal ``stream_kanachan``'s, concatenated (frames,
skipped lines, the error raised).

Memory: each worker holds its stream's window (about twice ``chunk_bytes``);
this process one chunk.  Disk: the spool holds the chunks of the files
started and not yet read back (at most ``processes + 1`` files).

Examples
--------
>>> chunks = stream_kanachan_files(["a.tsv.gz", "b.tsv.gz"], processes=2, threads=2)  # doctest: +SKIP
>>> sum(r.frame.height for r in chunks)  # doctest: +SKIP
"""

from __future__ import annotations

import collections
import os
import pickle
import shutil
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Iterator

import numpy as np
import polars as pl

from rewardlab.core.errors import DataFormatError
from rewardlab.core.files import progress_enabled
from rewardlab.core.spec import attach
from rewardlab.sources.kanachan import schema as S
from rewardlab.sources.kanachan.gameids import GameIdSet
from rewardlab.sources.kanachan.stream import FileStream
from rewardlab.sources.results import LoadResult

__all__ = ["stream_kanachan_files", "FileChunks", "worker_main"]


@dataclass
class FileChunks:
    """What a worker made of one file: its chunks' spool files, rows, skipped lines, games, and its error."""

    chunks: list  # (IPC file, rows, skipped lines as a frame)
    games: int
    error: BaseException | None = None


def _stream_one(index: int, path: str, chunk_bytes: int, skip: bool, threads: int, spool: str) -> FileChunks:
    """Worker: stream one file (games numbered from 0) into IPC files under ``spool``."""
    stream = FileStream([Path(path)], chunk_bytes=chunk_bytes, skip=skip, progress=False, workers=threads)
    chunks = []
    try:
        for k, result in enumerate(stream.run()):
            target = Path(spool) / f"{index:06d}-{k:06d}.arrow"
            result.frame.write_ipc(target, compression="uncompressed")
            chunks.append((str(target), result.frame.height, result.skipped))
    except DataFormatError as exc:  # raised after the chunks before it, as the serial stream does
        return FileChunks(chunks, stream.games, exc)
    return FileChunks(chunks, stream.games)


class _Worker:
    """One file streamed by ``python -m rewardlab.sources.kanachan.stream_files`` (a fresh interpreter: no
    fork of this process's threads, and nothing of the caller's main module is imported again)."""

    def __init__(self, index: int, path: Path, spool: Path, *, chunk_bytes: int, skip: bool, threads: int):
        self.index, self.path = index, path
        self.result_path = spool / f"{index:06d}.result"
        self.log = open(spool / f"{index:06d}.log", "w+b")
        root = str(Path(__file__).resolve().parents[3])  # where this rewardlab is imported from
        env = {**os.environ, "PYTHONPATH": os.pathsep.join(filter(None, [root, os.environ.get("PYTHONPATH")]))}
        self.process = subprocess.Popen(
            [sys.executable, "-m", "rewardlab.sources.kanachan.stream_files", str(index), str(path), str(chunk_bytes),
             "skip" if skip else "raise", str(threads), str(spool)],
            stdin=subprocess.DEVNULL, stdout=self.log, stderr=subprocess.STDOUT, env=env)

    @property
    def running(self) -> bool:
        return self.process.poll() is None

    def result(self) -> FileChunks:
        """Wait for the worker; its chunks, or an error that says how it stopped."""
        code = self.process.wait()
        self.log.seek(0)
        tail = self.log.read()[-2000:].decode("utf-8", "replace").strip()
        self.log.close()
        if code != 0 or not self.result_path.exists():
            raise DataFormatError(self.path, None, None, "reader_failed",
                                  f"the worker process reading it stopped with exit status {code}"
                                  + (f": {tail}" if tail else ""),
                                  hint="Run the command with --workers 1 to read the files in this process.")
        with open(self.result_path, "rb") as f:
            return pickle.load(f)

    def stop(self) -> None:
        if self.running:
            self.process.kill()
            self.process.wait()
        if not self.log.closed:
            self.log.close()


def stream_kanachan_files(files: list[Path], *, chunk_bytes: int, skip: bool, processes: int, threads: int,
                          progress: bool | None = None, spool_in=None) -> Iterator[LoadResult]:
    """Stream ``files`` (at least two) with one worker process per file, ``processes`` at once.

    Parameters
    ----------
    files : list of Path
        Annotation files, in order (checked by the caller).
    chunk_bytes, skip
        As :func:`~rewardlab.sources.kanachan.stream.stream_kanachan` (``skip``: ``on_error="skip"``).
    processes : int
        Files streamed at once.
    threads : int
        Parse threads in each worker.
    progress : bool, optional
        A bar over the files' bytes, advanced as each file is read back.
    spool_in : path, optional
        The folder to create the spool folder in (default: the system's
        temporary folder); removed when the stream ends, however it ends.

    Yields
    ------
    LoadResult
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
    earlier, cross_file, games = GameIdSet(), None, 0
    workers: collections.deque = collections.deque()
    queued = iter(enumerate(files))

    def start() -> None:  # keep `processes` workers running, and at most one file done ahead of each
        while len(workers) < 2 * processes and sum(w.running for w in workers) < processes:
            item = next(queued, None)
            if item is None:
                return
            workers.append(_Worker(item[0], item[1], spool, chunk_bytes=chunk_bytes, skip=skip, threads=threads))

    try:
        with tqdm(total=sum(p.stat().st_size for p in files), unit="B", unit_scale=True, desc="reading kanachan",
                  disable=not progress_enabled(progress), leave=False) as bar:
            start()
            while workers:
                head = workers[0]
                while head.running:  # the others start as slots free up
                    time.sleep(0.02)
                    start()
                done = workers.popleft().result()
                start()
                this_file = GameIdSet()
                for target, rows, skipped in done.chunks:
                    frame = pl.read_ipc(target)
                    Path(target).unlink()
                    frame, names = _renumber(frame, games)
                    if cross_file is None and head.index > 0 and names:
                        cross_file = _cross_file(frame, names, earlier)
                    this_file.add(names)
                    if cross_file is None:
                        yield LoadResult(attach(frame, S.KANACHAN_SPEC), skipped)
                if done.error is not None:
                    raise done.error
                games += done.games
                earlier.absorb(this_file)
                bar.update(head.path.stat().st_size)
    finally:
        for w in workers:  # stopped early (an error, the consumer gone): the workers go at once
            w.stop()
        shutil.rmtree(spool, ignore_errors=True)
    if cross_file is not None:
        raise cross_file


def _renumber(frame: pl.DataFrame, games: int) -> tuple[pl.DataFrame, list[str]]:
    """The chunk's games shifted past the ``games`` of the files before, and the ids of the games it starts."""
    if frame.height == 0:
        return frame, []
    game = frame[S.GAME].to_numpy()
    starts = np.flatnonzero(np.r_[True, game[1:] != game[:-1]])
    names = frame[S.GAME_ID].gather(starts).cast(pl.String).to_list()
    if games:
        frame = frame.with_columns((pl.col(S.GAME) + games).cast(frame.schema[S.GAME]))
    return frame, names


def _cross_file(frame: pl.DataFrame, names: list[str], earlier: GameIdSet) -> DataFormatError | None:
    """The error of the first game of the chunk seen in an earlier file (as the serial stream words it)."""
    dup = earlier.contains(names)
    if not dup.any():
        return None
    game = frame[S.GAME].to_numpy()
    r = int(np.flatnonzero(np.r_[True, game[1:] != game[:-1]])[np.argmax(dup)])
    return DataFormatError(frame[S.SOURCE_FILE][r], int(frame[S.SOURCE_LINE][r]), 0, "game_reappears",
                           f"game {frame[S.GAME_ID][r]} also appears in an earlier file; a game's lines should be in "
                           "one place", hint="Remove the duplicate game.")


def worker_main(argv: list[str]) -> int:
    """``python -m rewardlab.sources.kanachan.stream_files INDEX PATH CHUNK_BYTES raise|skip THREADS SPOOL``:
    one worker of :func:`stream_kanachan_files`; its result is written to ``SPOOL/INDEX.result``."""
    index, path, chunk_bytes, mode, threads, spool = argv
    result = _stream_one(int(index), path, int(chunk_bytes), mode == "skip", int(threads), spool)
    target = Path(spool) / f"{int(index):06d}.result"
    with open(target.with_suffix(".partial"), "wb") as f:
        pickle.dump(result, f, protocol=pickle.HIGHEST_PROTOCOL)
    os.replace(target.with_suffix(".partial"), target)
    return 0


if __name__ == "__main__":  # run as the package's module, so that FileChunks pickles under its own name
    from rewardlab.sources.kanachan import stream_files

    raise SystemExit(stream_files.worker_main(sys.argv[1:]))
