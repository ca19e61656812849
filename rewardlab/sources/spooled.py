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

The spool's one format (:func:`write_spool`, :func:`read_spool`): an Arrow
IPC file written by pyarrow, LZ4-compressed (Arrow's LZ4 frames carry no
content checksum; Polars' writer adds one, which its reader checks), in
record batches of :data:`SPOOL_BATCH_ROWS` rows, so that a part holding
only some of a chunk's rows decompresses only the batches that hold them.
Categorical columns go in as dictionaries of the categories the chunk uses,
built with NumPy (:func:`categories_array`).  Measured here (the 8 chunks of
one 956,440-transition file, collected first, then each written once and
read back as two halves; CPU-s, three fresh processes each): Polars'
``write_ipc`` with lz4 0.65-0.71 written, 0.91-1.13 read; pyarrow with
Polars' own ``to_arrow`` 0.86-1.02 and 0.57-0.58; this format 0.65-0.71 and
0.63-0.68 (1.28-1.39 in all, against 1.56-1.84).  A chunk is cut into
about two parts on average, so each was read whole about twice before.
Without the content checksum a spool file damaged on disk is caught only
where LZ4 finds its frames malformed; a spool file lives for seconds, and
the parts written from it carry a CRC-32 in every page.

Examples
--------
>>> import tempfile, pathlib, numpy as np, polars as pl
>>> d = pathlib.Path(tempfile.mkdtemp())
>>> write_spool(pl.DataFrame({"game": [0, 0, 1]}), d / "c.arrow")
>>> chunk = SpooledChunk(str(d / "c.arrow"), start=0, rows=3, ends=np.array([2, 3]), offsets=(("game", 5),))
>>> read_pieces([chunk.slice(1).piece(0, 2)])["game"].to_list()
[5, 6]
"""

from __future__ import annotations

import dataclasses
from typing import NamedTuple, Sequence

import numpy as np
import polars as pl
import pyarrow as pa
import pyarrow.ipc

__all__ = ["SpooledChunk", "SpooledResult", "read_pieces", "Piece", "write_spool", "read_spool", "categories_array",
           "SPOOL_BATCH_ROWS"]

#: Rows per record batch of a spool file (:func:`write_spool`): the unit a reader of some rows decompresses.
SPOOL_BATCH_ROWS = 1 << 14


def write_spool(frame: pl.DataFrame, path) -> None:
    """Write ``frame`` to ``path`` in the spool's format (see the module's text); :func:`read_spool` gives it
    back, equal (dtypes included).

    Examples
    --------
    >>> import tempfile, pathlib
    >>> path = pathlib.Path(tempfile.mkdtemp()) / "c.arrow"
    >>> f = pl.DataFrame({"id": pl.Series(["a", "b", "a"], dtype=pl.Categorical), "x": [1, 2, 3]})
    >>> write_spool(f, path)
    >>> read_spool(path).equals(f), read_spool(path, start=1, rows=1)["x"].to_list()
    (True, [2])
    """
    categorical = {name for name, dtype in frame.schema.items() if dtype == pl.Categorical}
    rest = frame.drop(categorical).to_arrow()
    table = pa.Table.from_arrays(
        [categories_array(frame[name]) if name in categorical else rest.column(name) for name in frame.columns],
        names=frame.columns).unify_dictionaries()  # an IPC file holds one dictionary per column
    options = pa.ipc.IpcWriteOptions(compression="lz4")
    with pa.OSFile(str(path), "wb") as sink, pa.ipc.new_file(sink, table.schema, options=options) as writer:
        writer.write_table(table, max_chunksize=SPOOL_BATCH_ROWS)


def categories_array(series: pl.Series) -> pa.Array:
    """A Categorical column as an Arrow dictionary array holding only the categories it uses, built with NumPy.

    With it a spool file is written as fast as Polars' ``write_ipc`` writes one, and a fifth faster than
    with Polars' own ``to_arrow`` (the module's text has the figures).  A column with nulls, or no rows,
    takes Polars' conversion.

    Examples
    --------
    >>> a = categories_array(pl.Series(["b", "a", "b"], dtype=pl.Categorical))
    >>> a.to_pylist(), len(a.dictionary)
    (['b', 'a', 'b'], 2)
    """
    if series.null_count() or series.len() == 0:
        return series.to_arrow()
    _, first, inverse = np.unique(series.to_physical().to_numpy(), return_index=True, return_inverse=True)
    values = series.gather(first).cast(pl.String).to_arrow()
    indices = np.ascontiguousarray(inverse, dtype=np.uint32)  # pa.array would import pandas (0.3 s)
    return pa.DictionaryArray.from_buffers(pa.dictionary(pa.uint32(), values.type), indices.size,
                                           [None, pa.py_buffer(indices)], values)


def read_spool(path, *, start: int = 0, rows: int | None = None) -> pl.DataFrame:
    """Rows ``start .. start + rows`` (default: to the end) of a spool file :func:`write_spool` wrote, as one
    chunk; only the record batches holding them are decompressed.

    One chunk, whatever the batches: a part's Parquet bytes depend on how its frame is chunked, and a dataset
    is the same byte for byte whichever route wrote it (``tests/test_convert_resume_files.py``).
    """
    lazy = pl.scan_ipc(path)
    if start or rows is not None:
        lazy = lazy.slice(start, rows)
    return lazy.collect().rechunk()


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

    Only the record batches of each file that hold the rows asked for are read (:func:`read_spool`).
    """
    frames = []
    for piece in pieces:
        frame = read_spool(piece.path, start=piece.start, rows=piece.rows)
        if any(k for _, k in piece.offsets):
            frame = frame.with_columns((pl.col(c) + int(k)).cast(frame.schema[c]) for c, k in piece.offsets if k)
        frames.append(frame)
    if not frames:
        raise ValueError("no pieces to read")
    return pl.concat(frames, how="vertical", rechunk=False) if len(frames) > 1 else frames[0]
