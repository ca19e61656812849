"""kanachan annotation files read chunk by chunk, in memory bounded by the chunk size.

:func:`stream_kanachan` yields :class:`~rewardlab.sources.results.LoadResult`
objects whose frames hold whole games (so whole episodes), in file order,
each from about ``chunk_bytes`` of text.  Their concatenation equals
:func:`~rewardlab.sources.kanachan.reader.read_kanachan`'s frame bit for bit
(game numbers, rounds, source lines included), their skipped tables its
skipped table, and in raise mode it raises the same error (file, line,
column, rule).

How it stays exact.  Lines are parsed in blocks (as ``read_kanachan`` does:
:func:`~rewardlab.sources.kanachan.blocks.file_blocks`) and gathered into a
window; the window is cut where nothing after the cut can change what comes
before it:

- raise mode: at the last change of game in the window.  Games seen in
  earlier chunks are kept in a :class:`~rewardlab.sources.kanachan.gameids.GameIdSet`
  (20 bytes a game) for ``game_reappears``.  The first episode error stops
  the output, the rest of the file is still checked line by line (an error
  on a later line is what ``read_kanachan`` reports), then it is raised; a
  game found in two files is reported once every file has been checked.
- skip mode: the skip mode drops a game whose lines are interrupted by
  another game's *anywhere in the file*, so a first pass reads each file's
  first column (:func:`~rewardlab.sources.kanachan.gameids.game_spans`:
  where each game's lines end; a compressed file is decompressed twice), and
  the window is cut between two kept episodes, after an end-of-game line,
  where no game started before the cut has lines after it.  A game spread
  over a whole file therefore keeps the file in one chunk.

Examples
--------
>>> from rewardlab.sources.kanachan.stream import stream_kanachan
>>> chunks = stream_kanachan("data/sample.tsv.gz", chunk_bytes=8 << 20, progress=False)  # doctest: +SKIP
>>> sum(r.frame.height for r in chunks)  # doctest: +SKIP
119555
"""

from __future__ import annotations

from pathlib import Path
from typing import Iterator

import numpy as np
import polars as pl

from rewardlab.sources.kanachan import schema as S
from rewardlab.sources.kanachan.assembly import assemble, skipped_frame
from rewardlab.engines.embedded import available_cores
from rewardlab.sources.kanachan.blocks import CHUNK_BYTES, ParsedBlock, file_blocks
from rewardlab.sources.kanachan.episodes import episode_checks, skip_episodes
from rewardlab.sources.kanachan.gameids import GameIdSet, game_spans, id_hashes
from rewardlab.sources.kanachan.problems import HINT, Problems, other_format
from rewardlab.sources.results import SKIPPED_LINES_SCHEMA, LoadResult
from rewardlab.sources.spooled import SpooledResult
from rewardlab.core.errors import DataFormatError, ParameterError, check_choice, check_int
from rewardlab.core.files import as_paths, progress_enabled
from rewardlab.core.spec import attach

__all__ = ["stream_kanachan", "DEFAULT_CHUNK_BYTES", "FileStream", "THREADS_PER_FILE", "games_before"]

#: Text bytes behind each chunk by default (a chunk's frame is about 0.8 of it in memory).
DEFAULT_CHUNK_BYTES = 64 << 20
#: The smallest block of text parsed at once (smaller chunks gather several games' lines from one block).
MIN_BLOCK_BYTES = 1 << 16
#: Workers per file streamed at once when several files are (see ``processes``).
THREADS_PER_FILE = 4


def stream_kanachan(
    paths,
    *,
    chunk_bytes: int = DEFAULT_CHUNK_BYTES,
    on_error: str = "raise",
    progress: bool | None = None,
    workers: int | None = None,
    processes: int | None = None,
    spool_in=None,
    before=None,
    file_done=None,
    handoff=None,
) -> Iterator[LoadResult | SpooledResult]:
    """Read kanachan annotation files (plain, ``.gz``, ``.bz2``) chunk by chunk, whole games in each.

    Parameters
    ----------
    paths : path or sequence of paths
        Annotation files, read in the order given; games must not repeat
        across files.
    chunk_bytes : int
        About how many bytes of text each chunk is built from (at least one
        whole game, however small).  Memory stays near twice this, whatever
        the file size.
    on_error : {"raise", "skip"}
        As in :func:`~rewardlab.sources.kanachan.reader.read_kanachan`.
        Skip mode yields each chunk's skipped lines in ``skipped`` (no
        warning is given; count them as they come) and reads each file's
        first column once before the chunks.
    progress : bool, optional
        Show a tqdm bar over the input bytes (default: when interactive).
    workers : int, optional
        Cores to use (default: the cores this process may run on): parse
        threads, split between the files streamed at once.
    processes : int, optional
        Files streamed at once, each in a worker process
        (:mod:`~rewardlab.sources.kanachan.stream_files`; default: one per
        :data:`THREADS_PER_FILE` workers, at most one per file; 1: one file
        after the other in this process).
    spool_in : path, optional
        With several processes: the folder in which a temporary spool folder
        holds the chunks of files streamed ahead (default: the system's
        temporary folder).
    before : callable, optional
        ``before(columns)`` yields the rows that come before ``paths`` (a
        resumed convert: the rows of the input files it does not read
        again), those columns only, in order: games are numbered after
        theirs, and a game of theirs found again is a game in two files
        (see :func:`games_before`).
    file_done : callable, optional
        Called with each file's index in ``paths`` once every chunk of it is
        yielded (a convert journals which files it has read whole).
    handoff : path, optional
        With several processes: a folder of the consumer's in which the
        worker processes leave their chunks, yielded as
        :class:`~rewardlab.sources.spooled.SpooledResult` without being read
        here (a convert's parts are then cut from them and written in worker
        processes: ``PartWriter.add_spooled``).  One process yields frames
        whatever this says.

    Yields
    ------
    LoadResult
        ``frame`` (the kanachan frame with its spec attached: whole games,
        in file order, ``game`` numbered across chunks and files) and
        ``skipped`` (this chunk's skipped lines).  Concatenated, they equal
        ``read_kanachan(paths, on_error=on_error)``'s frame and skipped
        table.

    Raises
    ------
    DataFormatError
        In raise mode, the error ``read_kanachan`` raises (after the chunks
        before it); in both modes, a game in two files (once every file is
        checked) and unreadable files.

    Examples
    --------
    >>> from rewardlab.sources.kanachan.stream import stream_kanachan
    >>> for chunk in stream_kanachan("data/sample.tsv.gz", progress=False):  # doctest: +SKIP
    ...     print(chunk.frame.height, chunk.frame["game"].min())
    """
    check_choice("on_error", on_error, ("raise", "skip"))
    chunk_bytes = check_int("chunk_bytes", chunk_bytes, low=1)
    workers = available_cores() if workers is None else check_int("workers", workers, low=1)
    files = as_paths(paths)
    from rewardlab.sources.storage import is_dataset

    if any(is_dataset(p) for p in files):
        raise ParameterError("paths", "should be annotation text files (a converted dataset is read part by "
                             "part as it is)", [str(p) for p in files])
    for p in files:  # another format's file: say what it looks like, not which TAB column it lacks
        problem = other_format(p) if p.is_file() else None
        if problem is not None:
            raise problem
    if processes is None:  # a few parse threads per file: the serial part of each stream runs beside the others'
        processes = max(1, min(len(files), workers // THREADS_PER_FILE))
    processes = check_int("processes", processes, low=1)
    first_game, earlier = games_before(before)
    if processes > 1 and len(files) > 1:
        from rewardlab.sources.kanachan.stream_files import stream_kanachan_files

        return stream_kanachan_files(files, chunk_bytes=chunk_bytes, skip=on_error == "skip", processes=processes,
                                     threads=max(1, workers // processes), progress=progress, spool_in=spool_in,
                                     first_game=first_game, earlier=earlier, file_done=file_done, handoff=handoff)
    return FileStream(files, chunk_bytes=chunk_bytes, skip=on_error == "skip", progress=progress,
                      workers=workers, first_game=first_game, earlier=earlier, file_done=file_done).run()


def games_before(before) -> tuple[int, GameIdSet]:
    """The games numbered in the rows ``before(columns)`` yields (rows of a stream, in order: the last ``game``
    + 1) and their ids; ``(0, empty)`` for None.

    Examples
    --------
    >>> f = pl.DataFrame({"game_id": ["a" * 32, "a" * 32, "b" * 32], "game": [0, 0, 1]})
    >>> games, ids = games_before(lambda columns: [f.select(columns)])
    >>> games, len(ids)
    (2, 2)
    """
    games, seen = 0, GameIdSet()
    for frame in (before([S.GAME, S.GAME_ID]) if before is not None else ()):
        if frame.height:
            games = int(frame[S.GAME][-1]) + 1
            seen.add(frame[S.GAME_ID].cast(pl.String).unique(maintain_order=True).to_list())
    return games, seen


class FileStream:
    """The state of one stream over files read one after the other: game numbering, games of earlier files,
    the pending error (:meth:`run` yields the chunks)."""

    def __init__(self, files: list[Path], *, chunk_bytes: int, skip: bool, progress, workers: int,
                 first_game: int = 0, earlier: GameIdSet | None = None, file_done=None):
        self.files, self.chunk_bytes, self.skip, self.workers = files, chunk_bytes, skip, workers
        self.progress = progress
        # blocks: a few per chunk, and every worker busy with one
        self.block_bytes = max(min(CHUNK_BYTES, chunk_bytes // (workers + 1)), MIN_BLOCK_BYTES)
        self.earlier_files = earlier or GameIdSet()  # games kept from earlier files (a game in two files)
        self.this_file = GameIdSet()  # games kept from earlier chunks of this file
        self.games = first_game  # games numbered so far
        self.file_done = file_done
        self.last_game: tuple[int, int] | None = None  # (file index, game_id code) of the last row yielded
        self.cross_file: DataFormatError | None = None  # the first game found in two files
        self.file_error: DataFormatError | None = None  # raise mode: an episode error of this file
        self.spans: tuple[np.ndarray, np.ndarray] | None = None

    def run(self) -> Iterator[LoadResult]:
        from tqdm.auto import tqdm

        total = sum(p.stat().st_size for p in self.files if p.exists())
        with tqdm(total=total, unit="B", unit_scale=True, desc="reading kanachan",
                  disable=not progress_enabled(self.progress), leave=False) as bar:
            for index, path in enumerate(self.files):
                start = bar.n
                yield from self._file(index, path, bar, start)
                if self.file_done is not None:
                    self.file_done(index)
                bar.n = start + (path.stat().st_size if path.exists() else 0)
                bar.refresh()
        if self.cross_file is not None:
            raise self.cross_file

    # ---- one file

    def _file(self, index: int, path: Path, bar, offset: int) -> Iterator[LoadResult]:
        spath = str(path)
        self.this_file = GameIdSet()
        self.file_error = None
        if self.skip:
            from rewardlab.core.files import check_input

            if path.exists() and not path.is_dir():
                check_input(path)
                self.spans = game_spans(path, chunk_bytes=self.block_bytes)
        window: list[ParsedBlock] = []
        size = 0
        for parsed in file_blocks(path, skip=self.skip, bar=bar, offset=offset, chunk_bytes=self.block_bytes,
                                  workers=self.workers):
            if self.file_error is not None:
                continue  # the line rules still run (file_blocks raises the first line error)
            window.append(parsed)
            size += parsed.nbytes
            if size >= self.chunk_bytes:
                result, window = self._cut(index, spath, window, final=False)
                size = sum(p.nbytes for p in window)
                if result is not None:
                    yield result
        if self.file_error is None and window:
            result, _ = self._cut(index, spath, window, final=True)
            if result is not None:
                yield result
        if self.file_error is not None:
            raise self.file_error
        self.earlier_files.absorb(self.this_file)

    def _cut(self, index: int, spath: str, window: list[ParsedBlock], *, final: bool):
        """Cut the window where it is safe; return (the chunk before the cut or None, the blocks after it)."""
        kind = np.concatenate([p.block.kind for p in window])
        n = kind.shape[0]
        first_line = window[0].first_line
        gid = pl.concat([p.block.game_id for p in window]) if len(window) > 1 else window[0].block.game_id
        codes = gid.to_physical().to_numpy().astype(np.int64)
        seat = np.concatenate([p.ids["seat"] for p in window]).astype(np.int64)
        if self.skip:
            cut, keep, episode, row_problem = self._skip_cut(spath, window, kind, seat, codes, gid, first_line,
                                                             final)
        else:
            cut, keep, episode, row_problem = self._raise_cut(spath, kind, seat, codes, gid, first_line, final)
        if cut is None:
            return None, window
        before, after = _split(window, cut)
        result = None
        if self.file_error is None:
            result = self._chunk(index, spath, before, keep[:cut], episode, row_problem, first_line)
        return result, after

    def _raise_cut(self, spath, kind, seat, codes, gid, first_line, final):
        n = kind.shape[0]
        if final:
            cut = n
        else:
            change = np.flatnonzero(codes[1:] != codes[:-1])
            if not change.size:
                return None, None, None, None
            cut = int(change[-1]) + 1
        problems = Problems(spath, lambda r: r + first_line, False)
        episode = episode_checks(codes[:cut], seat[:cut], kind[:cut], problems, lambda r: gid[r])
        run_start = np.flatnonzero(np.r_[True, codes[1:cut] != codes[:cut - 1]])
        names = gid.gather(run_start).cast(pl.String).to_list()
        again = self.this_file.contains(names)
        problems.add(run_start[again], 0, "game_reappears",
                     lambda r: f"game {gid[r]} reappears after other games; a game's lines should be consecutive")
        if problems.first is not None:
            r, col, rule, message = problems.first
            self.file_error = DataFormatError(spath, r + first_line, col, rule, message(r), hint=HINT)
        return cut, np.ones(cut, dtype=bool), episode, {}

    def _skip_cut(self, spath, window, kind, seat, codes, gid, first_line, final):
        n = kind.shape[0]
        row_problem: dict[int, tuple] = {}
        base = 0
        for p in window:
            for r, v in p.problems.rows.items():
                row_problem[base + r] = v
            base += p.n
        bad = np.zeros(n, dtype=bool)
        if row_problem:
            bad[np.fromiter(row_problem, dtype=np.int64)] = True
        kept_idx = np.flatnonzero(~bad)
        ep_problems = Problems(spath, lambda r: int(kept_idx[r]) + first_line, True)
        episode_checks(codes[kept_idx], seat[kept_idx], kind[kept_idx], ep_problems,
                       lambda r: gid[int(kept_idx[r])])
        keep, episode = skip_episodes(kind, seat, codes, bad, row_problem,
                                      {int(kept_idx[r]): v for r, v in ep_problems.rows.items()},
                                      lambda r: gid[r], first_line=first_line)
        if final:
            return n, keep, episode, row_problem
        cut = self._skip_cut_point(kind, bad, keep, gid, first_line)
        if cut is None:
            return None, None, None, None
        return cut, keep, episode[:int(keep[:cut].sum())], {r: v for r, v in row_problem.items() if r < cut}

    def _skip_cut_point(self, kind, bad, keep, gid, first_line) -> int | None:
        """The last row p (0 < p < n) where the window may be cut in skip mode, or None."""
        n = kind.shape[0]
        boundary = (kind == 8) & ~bad
        seg = np.cumsum(boundary) - boundary
        # after a passed end-of-game line, between two kept rows, not in the window's last segment
        ok = np.zeros(n, dtype=bool)
        ok[1:] = boundary[:-1] & keep[:-1] & keep[1:] & (seg[1:] < seg[-1])
        if not ok.any():
            return None
        # no game started before the cut has lines after it (spans from the first pass)
        codes = gid.to_physical().to_numpy()
        run_start = np.flatnonzero(np.r_[True, codes[1:] != codes[:-1]])
        names = gid.gather(run_start).cast(pl.String).to_list()
        h, valid = id_hashes(names)
        span_h, span_last = self.spans
        at = np.clip(np.searchsorted(span_h, h), 0, max(span_h.size - 1, 0))
        found = valid & (span_h.size > 0)
        if span_h.size:
            found &= span_h[at] == h
        run_last = np.where(found, span_last[at] if span_h.size else 0, 0) - first_line  # as window rows
        reach = np.maximum.accumulate(np.repeat(run_last, np.diff(np.r_[run_start, n])))
        ok[1:] &= reach[:-1] < np.arange(1, n)
        rows = np.flatnonzero(ok)
        return int(rows[-1]) if rows.size else None

    # ---- the chunk

    def _chunk(self, index, spath, before, keep, episode, row_problem, first_line) -> LoadResult | None:
        kept_idx = np.flatnonzero(keep)
        frame = assemble([p.block for p in before], [(p.ids, p.grades) for p in before], keep, kept_idx,
                         episode, spath, first_line=first_line)
        skipped = (skipped_frame(spath, [p.block for p in before], row_problem, first_line=first_line)
                   if row_problem else pl.DataFrame(schema=SKIPPED_LINES_SCHEMA))
        if frame.height == 0 and skipped.height == 0:
            return None
        frame = self._number(index, frame)
        if self.cross_file is not None:
            return None  # nothing more is given once a game is found in two files
        return LoadResult(attach(frame, S.KANACHAN_SPEC), skipped)

    def _number(self, index: int, frame: pl.DataFrame) -> pl.DataFrame:
        """Game numbers and rounds (as ``read_kanachan`` gives them), and the check of games across files."""
        from rewardlab.sources.kanachan.tokenizer import game_rounds

        if frame.height == 0:
            return frame
        codes = frame[S.GAME_ID].to_physical().to_numpy()
        starts = np.ones(frame.height, dtype=bool)
        starts[1:] = codes[1:] != codes[:-1]
        starts[0] = self.last_game != (index, int(codes[0]))
        run_rows = np.flatnonzero(starts)
        names = frame[S.GAME_ID].gather(run_rows).cast(pl.String).to_list()
        if self.cross_file is None and len(self.earlier_files):
            dup = self.earlier_files.contains(names)
            if dup.any():
                r = int(run_rows[np.argmax(dup)])
                self.cross_file = DataFormatError(
                    frame[S.SOURCE_FILE][r], int(frame[S.SOURCE_LINE][r]), 0, "game_reappears",
                    f"game {frame[S.GAME_ID][r]} also appears in an earlier file; a game's lines should be in one "
                    "place", hint="Remove the duplicate game.")
        game = self.games + np.cumsum(starts) - 1
        self.games += int(starts.sum())
        self.last_game = (index, int(codes[-1]))
        round_starts = run_rows if starts[0] else np.r_[0, run_rows]
        key = (frame[S.CHANG].to_numpy().astype(np.int64) * 4096 + frame[S.JU].to_numpy().astype(np.int64) * 256
               + frame[S.BEN].to_numpy())
        rounds = game_rounds(key, round_starts)
        self.this_file.add(names)
        return frame.with_columns(pl.Series(S.GAME, game.astype(np.uint32)),
                                  pl.Series(S.ROUND, rounds.astype(np.uint8)))


def _split(window: list[ParsedBlock], cut: int) -> tuple[list[ParsedBlock], list[ParsedBlock]]:
    """The window's blocks before row ``cut`` and from it on (a block cut in two is sliced)."""
    before, after, done = [], [], 0
    for p in window:
        if done + p.n <= cut:
            before.append(p)
        elif done >= cut:
            after.append(p)
        else:
            before.append(p.rows(0, cut - done))
            after.append(p.rows(cut - done, p.n))
        done += p.n
    return before, after
