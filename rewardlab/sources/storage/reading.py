"""Reading dataset files, eagerly or lazily: the FixedSizeBinary decoding of Parquet's array columns.

:func:`read_dataset` reads files into one frame (pyarrow for the
FixedSizeBinary layout, verifying page checksums, the array columns rebuilt
without copying; Polars for the rest), :func:`read_part` one file or some
of its columns, and :func:`scan_dataset` scans them lazily
(``bin.reinterpret`` for the binary columns) after
:func:`~rewardlab.sources.storage.verification.verify_files` has read each
file once.  Every one of them attaches the files' spec to what it returns
and refuses, naming the file, nulls in the spec's columns and an episode
present in two files.

Examples
--------
>>> frame = read_dataset("data/sample.parquet")  # doctest: +SKIP
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import polars as pl

from rewardlab.core.spec import FrameSpec, attach
from rewardlab.core.errors import ColumnNotFoundError, DataFormatError
from rewardlab.sources.storage.inspection import FileInfo, inspect_files
from rewardlab.sources.storage.layout import checked_columns, dataset_files, exact_schema, outer_nulls
from rewardlab.sources.storage.problems import damaged_error, refuse_nulls
from rewardlab.sources.storage.verification import check_episodes_once, verify_files

__all__ = ["read_dataset", "read_part", "scan_dataset"]


def _ordered(frame, spec: FrameSpec):
    """``frame`` (eager or lazy) with a kanachan frame's columns first, in schema order, then the others."""
    exact = exact_schema(spec)
    if exact is None:
        return frame
    names = frame.collect_schema().names()
    return frame.select(*exact, *(c for c in names if c not in exact))


def read_dataset(paths, *, spec: FrameSpec | None = None) -> pl.DataFrame:
    """Read converted datasets into one frame (files concatenated in order), with its spec attached.

    Parquet files of the FixedSizeBinary layout are read with pyarrow,
    verifying every page's checksum, and their array columns rebuilt
    without copying; other Parquet and Arrow files are read by Polars.

    The frame carries the spec stored in the files
    (:func:`rewardlab.core.spec.attached`); files written before rewardlab
    stored one hold kanachan frames.  A stored spec that does not fit the
    file's columns is a :class:`~rewardlab.core.errors.SpecError` naming the
    column.

    Refused with a :class:`~rewardlab.core.errors.DataFormatError` naming the
    file: a file that is not a dataset, empty, truncated or damaged (a page
    whose checksum does not match), nulls in a column of the frame (inside
    the arrays too), and an episode (kanachan: game and seat) present in two
    files (the same data twice, e.g. a copy, or one frame as ``.parquet``
    and ``.arrow``).

    Parameters
    ----------
    paths : path or sequence of paths
        ``.parquet`` or ``.arrow`` files, or folders of them (one kind).
    spec : FrameSpec, optional
        Read the files with this spec instead of the stored one (a plain
        Parquet table that has none).

    Returns
    -------
    polars.DataFrame
        The files' columns (a kanachan frame: :data:`rewardlab.sources.kanachan.schema.FRAME_SCHEMA`,
        in that column order, then any extra columns the files hold).

    Examples
    --------
    >>> frame = read_dataset("data/sample.parquet")  # doctest: +SKIP
    """
    files, kind = dataset_files(paths)
    infos = inspect_files(files, kind, spec)
    frames = []
    for path, info in zip(files, infos):
        frame = _ordered(_read_one(path, kind, info), info.spec)
        _check_nulls(path, frame, info.spec)
        frames.append(frame)
    keys = infos[0].spec.episode
    if keys:
        check_episodes_once([(path, frame.select(keys)) for path, frame in zip(files, frames)])
    frame = pl.concat(frames, how="vertical", rechunk=False) if len(frames) > 1 else frames[0]
    return attach(frame, infos[0].spec)


def read_part(path: str | Path, *, columns=None) -> pl.DataFrame:
    """Read one dataset file, or only ``columns`` of it, with its spec (projected) attached.

    What :func:`read_dataset` checks for one file (page checksums, nulls in
    the spec's columns read, the layout), reading only the columns asked
    for: the engines read a dataset's parts one at a time with it.

    Parameters
    ----------
    path : path
        A ``.parquet`` or ``.arrow`` file rewardlab wrote.
    columns : sequence of str or None
        The columns to read, in the file's order (None: all).  The spec's
        episode columns are read too when they are not named, since a part
        without them is no longer a run of episodes.

    Examples
    --------
    >>> read_part("corpus/part-000000.parquet", columns=["reward_top"])  # doctest: +SKIP
    """
    files, kind = dataset_files([path])
    info = inspect_files(files, kind)[0]
    path = files[0]
    if columns is None:
        frame = _ordered(_read_one(path, kind, info), info.spec)
        _check_nulls(path, frame, info.spec)
        return attach(frame, info.spec)
    wanted = set(columns) | set(info.spec.episode)
    missing = [c for c in columns if c not in info.names]
    if missing:
        raise ColumnNotFoundError(missing[0], list(info.names))
    names = [c for c in info.names if c in wanted]
    frame = _read_one(path, kind, info, columns=names)
    spec = info.spec.project(names)
    _check_nulls(path, frame, spec)
    return attach(frame, spec)


def _read_one(path: Path, kind: str, info: FileInfo, *, columns=None) -> pl.DataFrame:
    try:
        if info.fsb:
            return _read_fsb(path, info, columns=columns)
        if kind == "ipc":
            lf = pl.scan_ipc(path)
            return (lf if columns is None else lf.select(columns)).collect()
        return pl.read_parquet(path, columns=columns)
    except DataFormatError:
        raise
    except (OSError, ValueError, pl.exceptions.PolarsError) as exc:  # pyarrow raises OSError / ValueError
        raise damaged_error(path, exc) from exc


def _check_nulls(path: Path, frame: pl.DataFrame, spec: FrameSpec) -> None:
    """Refuse nulls in the spec's columns: whole values, and elements inside the array columns."""
    for name in checked_columns(spec):
        series = frame.get_column(name)
        outer = outer_nulls(spec, name, series.null_count())
        inner = 0 if outer or not isinstance(series.dtype, pl.Array) else sum(
            chunk.to_arrow().flatten().null_count for chunk in series.get_chunks())
        refuse_nulls(path, name, outer, inner)


def _read_fsb(path: Path, info: FileInfo, *, columns=None) -> pl.DataFrame:
    import pyarrow as pa
    import pyarrow.parquet as pq

    arrays = {name: (dtype, width) for name, dtype, width in info.arrays}
    # ParquetFile, not pq.read_table: the latter goes through pyarrow.dataset, whose import (pandas with it)
    # costs every process that reads a part about 0.3-0.8 s of CPU; the table read is the same.
    with pq.ParquetFile(path, page_checksum_verification=True) as parquet:
        table = parquet.read(columns=None if columns is None else list(columns))
    columns = {}
    for name in table.column_names:
        column = table[name]
        if name in arrays:
            dtype, width = arrays[name]
            chunks = [_fixed_size_list(chunk, np.dtype(dtype), width, path, name,
                                       nullable=name in info.spec.final_names)
                      for chunk in column.chunks]
            value_type = pa.from_numpy_dtype(np.dtype(dtype).newbyteorder("="))
            column = pa.chunked_array(chunks, type=pa.list_(value_type, width))
        columns[name] = column
    # One chunk per row group, like the chunks of an Arrow IPC load; rechunking would copy every column.
    return pl.from_arrow(pa.table(columns), rechunk=False)


def _fixed_size_list(chunk, dtype: np.dtype, width: int, path: Path, name: str, *, nullable: bool = False):
    """A FixedSizeBinary chunk as a fixed-size list of ``dtype`` (no copy on little-endian hosts); null
    values stay null where ``nullable`` (a final-state column), and are refused elsewhere."""
    import pyarrow as pa

    if not nullable:
        refuse_nulls(path, name, chunk.null_count, 0)
    n = len(chunk) * width
    data = chunk.buffers()[1]
    values = (np.frombuffer(data, dtype=dtype, count=n, offset=chunk.offset * width * dtype.itemsize)
              if n else np.empty(0, dtype=dtype))
    values = values.astype(dtype.newbyteorder("="), copy=False)  # a no-op on little-endian hosts
    mask = chunk.is_null() if chunk.null_count else None
    # from_buffers, not pa.array(values): the same zero-copy array, without pa.array's check for a pandas
    # object, which imports pandas (0.2-0.3 s of every process that reads a part)
    flat = pa.Array.from_buffers(pa.from_numpy_dtype(values.dtype), values.size, [None, pa.py_buffer(values)])
    return pa.FixedSizeListArray.from_arrays(flat, width, mask=mask)



def scan_dataset(paths, *, spec: FrameSpec | None = None) -> pl.LazyFrame:
    """Scan converted datasets lazily (files concatenated in order), with their spec attached.

    Filters and projections are pushed into the scan: only the columns
    selected are read and decoded (``bin.reinterpret`` for the array columns
    of the FixedSizeBinary layout).  Before the first scan of a file in a
    process, :func:`~rewardlab.sources.storage.verify_dataset` reads the whole file once (page
    checksums, nulls, episodes in two files), since Polars' scan verifies
    nothing; that costs about one eager load per file, once.

    Parameters
    ----------
    paths : path or sequence of paths
        ``.parquet`` or ``.arrow`` files, or folders of them (one kind).
    spec : FrameSpec, optional
        As in :func:`read_dataset`.

    Returns
    -------
    polars.LazyFrame
        As :func:`read_dataset`'s frame; the spec stored in the files is
        attached (:func:`rewardlab.core.spec.attached`).

    Examples
    --------
    >>> lf = scan_dataset("data/sample.parquet")  # doctest: +SKIP
    >>> lf.filter(pl.col("end_of_game")).select("seat", "results").collect()  # doctest: +SKIP
    """
    files, kind = dataset_files(paths)
    infos = inspect_files(files, kind, spec)
    verify_files(files, kind, infos, given=spec is not None)
    file_spec = infos[0].spec
    if kind == "ipc":
        return attach(_ordered(pl.scan_ipc(files), file_spec), file_spec)
    groups: list[tuple[FileInfo, list[Path]]] = []  # runs of files of one layout, in order
    for path, info in zip(files, infos):
        if groups and (groups[-1][0].fsb, groups[-1][0].arrays) == (info.fsb, info.arrays):
            groups[-1][1].append(path)
        else:
            groups.append((info, [path]))
    frames = [_ordered(_decode_lazy(pl.scan_parquet(group), info) if info.fsb else pl.scan_parquet(group),
                       file_spec)
              for info, group in groups]
    lf = pl.concat(frames, how="vertical") if len(frames) > 1 else frames[0]
    return attach(lf, file_spec)


def _decode_lazy(lf: pl.LazyFrame, info: FileInfo) -> pl.LazyFrame:
    return lf.with_columns(
        pl.col(name).bin.reinterpret(dtype=dtype, endianness="little")
        for name, dtype in info.decoded.items()
    )
