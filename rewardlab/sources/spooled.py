"""Rows waiting on disk: a spooled chunk of whole episodes, handed from a reader to a writer without reading it.

A reader that parses in worker processes (kanachan text over several files:
:mod:`rewardlab.sources.kanachan.stream_files`) leaves each chunk in an
Arrow IPC file and says what cutting it into parts needs: its rows and
where its episodes end.  A writer of parts (``PartWriter.add_spooled``)
cuts parts from those numbers alone and has each part's rows read and
written in its own worker processes, so the process that drives the run
never holds or copies the rows (:func:`read_pieces`).

A chunk may also carry integer offsets to add to columns as it is read
(kanachan numbers games per file in its workers; the driver learns each
file's offset only once the files before it are read).

Examples
--------
>>> import tempfile, pathlib, numpy as np, polars as pl
>>> d = pathlib.Path(tempfile.mkdtemp())
>>> pl.DataFrame({"game": [0, 0, 1]}).write_ipc(d / "c.arrow")
>>> chunk = SpooledChunk(str(d / "c.arrow"), start=0, rows=3, ends=np.array([2, 3]), offsets=(("game", 5),))
>>> read_pieces([chunk.slice(1).piece(0, 2)])["game"].to_list()
[5, 6]
"""

from __future__ import annotations

import dataclasses
from typing import NamedTuple, Sequence

import numpy as np
import polars as pl

__all__ = ["SpooledChunk", "SpooledResult", "read_pieces", "Piece"]


class Piece(NamedTuple):
    """Rows ``start .. start + rows`` of the IPC file ``path``, ``offsets`` added as they are read (what a
    process writing a part is sent: small, it pickles)."""

    path: str
    start: int
    rows: int
    offsets: tuple = ()


@dataclasses.dataclass(frozen=True)
class SpooledChunk:
    """Rows ``start .. start + rows`` of the Arrow IPC file ``path``: whole episodes, in dataset order.

    Attributes
    ----------
    path : str
        The IPC file (its owner removes it once every part holding its rows
        is written).
    start, rows : int
        The rows of the file this chunk is (a chunk sliced past rows a
        resumed run keeps starts past 0).
    ends : numpy.ndarray of int64, shape (episodes,)
        Row offsets, from ``start``, just past each episode's last row,
        ascending; the last equals ``rows`` (empty for no rows).
    offsets : tuple of (column, int)
        Added to those integer columns as the rows are read (the column
        keeps its type).
    """

    path: str
    start: int
    rows: int
    ends: np.ndarray
    offsets: tuple = ()

    def slice(self, skip: int) -> "SpooledChunk":
        """The chunk less its first ``skip`` rows (an episode boundary: rows a resumed run keeps).

        Examples
        --------
        >>> c = SpooledChunk("c.arrow", start=0, rows=5, ends=np.array([2, 5]))
        >>> c.slice(2).start, c.slice(2).rows, c.slice(2).ends.tolist()
        (2, 3, [3])
        """
        ends = self.ends[self.ends > skip] - skip
        return dataclasses.replace(self, start=self.start + skip, rows=self.rows - skip, ends=ends)

    def piece(self, a: int, b: int) -> Piece:
        """Rows ``a .. b`` of the chunk (from its first row) as a :class:`Piece`."""
        return Piece(self.path, self.start + a, b - a, tuple(self.offsets))


@dataclasses.dataclass(frozen=True)
class SpooledResult:
    """What a stream yields instead of a :class:`~rewardlab.sources.results.LoadResult` when it hands its chunks
    off: the chunk on disk, and its skipped lines (as ``LoadResult.skipped``)."""

    chunk: SpooledChunk
    skipped: pl.DataFrame


def read_pieces(pieces: Sequence[Piece]) -> pl.DataFrame:
    """The rows of ``pieces``, in order, one frame (offsets added; no spec attached).

    Each file is read whole (its chunks are compressed), and only the rows
    asked for are kept.
    """
    frames = []
    for piece in pieces:
        frame = pl.read_ipc(piece.path).slice(piece.start, piece.rows)
        if any(k for _, k in piece.offsets):
            frame = frame.with_columns((pl.col(c) + int(k)).cast(frame.schema[c]) for c, k in piece.offsets if k)
        frames.append(frame)
    if not frames:
        raise ValueError("no pieces to read")
    return pl.concat(frames, how="vertical", rechunk=False) if len(frames) > 1 else frames[0]
