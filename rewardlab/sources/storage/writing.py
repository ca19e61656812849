"""Writing dataset files and plain tables: the FixedSizeBinary encoding of Parquet's array columns.

:func:`write_dataset` writes a frame with its spec as Parquet (array columns
as little-endian FixedSizeBinary, see :mod:`rewardlab.sources.storage`) or
Arrow IPC, after checking the frame holds its spec's columns;
:func:`to_fixed_size_binary` is that Parquet encoding on its own;
:func:`write_table` writes a plain table (rewards, a recording) with page
checksums.  None of them is atomic: wrap them in
:func:`rewardlab.core.files.atomic_path`.

Examples
--------
>>> import tempfile, pathlib, polars as pl
>>> from rewardlab.sources.kanachan.schema import FRAME_SCHEMA
>>> with tempfile.TemporaryDirectory() as d:
...     write_dataset(pl.DataFrame(schema=FRAME_SCHEMA), pathlib.Path(d) / "empty.arrow", kind="ipc")
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import polars as pl

from rewardlab.core.spec import SPEC_KEY, FrameSpec
from rewardlab.core.errors import ColumnNotFoundError, FrameError, ParameterError, SpecError
from rewardlab.sources.storage.layout import (ARRAYS_KEY, LAYOUT, LAYOUT_KEY, PARQUET_COMPRESSION, PARQUET_ROW_GROUP,
                                              array_layout, dataset_spec, exact_schema)

__all__ = ["write_dataset", "write_table", "to_fixed_size_binary"]

def write_dataset(frame: pl.DataFrame, path: str | Path, *, kind: str = "parquet",
                  spec: FrameSpec | None = None, metadata: dict[str, str] | None = None) -> None:
    """Write a frame as a dataset file of ``kind`` ``"parquet"`` or ``"ipc"``, its spec in the metadata.

    Not atomic by itself: public entry points (:func:`rewardlab.convert`)
    write to :func:`rewardlab.core.files.atomic_path` and pass the temporary path.

    The frame's spec (see :func:`~rewardlab.sources.storage.dataset_spec`) is stored as JSON under
    :data:`rewardlab.core.spec.SPEC_KEY` in the file's metadata;
    :func:`~rewardlab.sources.storage.read_dataset` and
    :func:`~rewardlab.sources.storage.scan_dataset` attach it to what they
    return.  The frame must hold the spec's columns (a kanachan frame: every
    column of :data:`rewardlab.sources.kanachan.schema.FRAME_SCHEMA`, with its dtype).

    Parquet: every fixed-width array column of numbers (kanachan's
    ``sparse``, ``progression``, ...; any source's state columns) as
    little-endian FixedSizeBinary (see :mod:`rewardlab.sources.storage`), written with
    pyarrow; lz4, row groups of 65,536 rows (cheap lazy scans and slices),
    statistics (min/max, for Polars' predicate pushdown) and dictionary
    encoding for the other columns only (an array column's statistics are
    byte strings no filter uses, and cost 13% of a kanachan part's write:
    139 against 121 ms for 162,737 rows here), a CRC-32
    checksum in every page header (verified on read, see
    :func:`~rewardlab.sources.storage.read_dataset` and
    :func:`~rewardlab.sources.storage.verify_dataset`).  lz4 was chosen over
    zstd by measurement (the 2 million tiled sample rows of
    ``python -m benchmarks loading``, 2 cores): lz4 loaded at 7-10 M rows/s
    with 47 bytes per row on disk, zstd at 6.0-6.4 M rows/s with 26 bytes
    per row (the target is 5 M rows/s).  That data repeats the sample's
    games, so sizes on disk of real data will differ.  A plain
    ``pl.read_parquet`` shows the array columns as ``Binary``; load the file
    with :func:`rewardlab.load` (or :func:`rewardlab.load_kanachan`).

    Arrow IPC: the columns as Polars holds them, zstd, written with pyarrow
    (to carry the metadata).

    Parameters
    ----------
    frame : polars.DataFrame
        The frame (no nulls in the spec's columns); extra columns are written
        after it unchanged.
    path : path
        The file to write.
    kind : {"parquet", "ipc"}
    spec : FrameSpec, optional
        The frame's spec (default: :func:`~rewardlab.sources.storage.dataset_spec`).
    metadata : dict of str to str, optional
        More key-value metadata for the file's footer (a part of a dataset
        folder records which dataset and which part it is).

    Examples
    --------
    >>> write_dataset(frame, "/tmp/d.parquet", kind="parquet")  # doctest: +SKIP
    >>> write_dataset(frame, "/tmp/d.arrow", kind="ipc")  # doctest: +SKIP
    """
    if kind not in ("parquet", "ipc"):
        raise ParameterError("kind", "should be 'parquet' or 'ipc'", kind)
    if not isinstance(frame, pl.DataFrame):
        raise ParameterError("frame", "should be a polars DataFrame (the common frame)",
                             type(frame).__name__)
    spec = dataset_spec(frame, spec)
    _check_frame(frame, spec)
    if kind == "ipc":
        import pyarrow as pa

        # Polars' own string/categorical layout (no conversion on read) and record batches of
        # PARQUET_ROW_GROUP rows (Polars decodes them in parallel; one big batch reads 2x slower)
        table = frame.to_arrow(compat_level=pl.CompatLevel.newest()).replace_schema_metadata(
            {**(metadata or {}), SPEC_KEY: spec.to_json()})
        with pa.ipc.new_file(str(path), table.schema,
                             options=pa.ipc.IpcWriteOptions(compression="zstd",
                                                             unify_dictionaries=True)) as writer:
            writer.write_table(table, max_chunksize=PARQUET_ROW_GROUP)
        return
    import pyarrow.parquet as pq

    table = to_fixed_size_binary(frame, spec)
    if metadata:
        table = table.replace_schema_metadata({**metadata, **table.schema.metadata})
    arrays = array_layout(frame.schema)
    scalars = [c for c in frame.columns if c not in arrays]
    pq.write_table(table, path, compression=PARQUET_COMPRESSION, row_group_size=PARQUET_ROW_GROUP,
                   use_dictionary=scalars, write_statistics=scalars, write_page_checksum=True)


def _check_frame(frame: pl.DataFrame, spec: FrameSpec) -> None:
    exact = exact_schema(spec)
    if exact is None:
        spec.check_columns(frame)
        for s in spec.states:
            want = s.polars_dtype
            if frame.schema[s.name] != want:
                raise SpecError(f"the state should be {want}, found {frame.schema[s.name]}", column=s.name)
        return
    for name, dtype in exact.items():
        if name not in frame.columns:
            raise ColumnNotFoundError(name, frame.columns)
        if frame.schema[name] != dtype:
            raise FrameError(f"column {name!r} should be {dtype}, found {frame.schema[name]}",
                             hint="Write the frame rewardlab.load_kanachan() returns")


def to_fixed_size_binary(frame: pl.DataFrame, spec: FrameSpec | None = None):
    """A pyarrow table of ``frame`` with its array columns as little-endian FixedSizeBinary.

    What :func:`write_dataset` writes as Parquet: every fixed-width array
    column of numbers as one FixedSizeBinary value per row, the other
    columns as pyarrow converts them, and the schema's metadata naming the
    layout (:data:`~rewardlab.sources.storage.layout.LAYOUT_KEY`), the array
    columns (:data:`~rewardlab.sources.storage.layout.ARRAYS_KEY`) and the
    spec (``spec``, else :func:`~rewardlab.sources.storage.layout.dataset_spec`).
    A null value is refused (a :class:`~rewardlab.core.errors.FrameError`)
    except in a final-state column, where it is a null of the binary column.

    Examples
    --------
    >>> frame = pl.DataFrame({"game_id": ["a"], "seat": [0], "x": [[1, 2]]},
    ...                      schema_overrides={"x": pl.Array(pl.Int16, 2)})
    >>> table = to_fixed_size_binary(frame)
    >>> str(table.schema.field("x").type), table["x"][0].as_py()
    ('fixed_size_binary[4]', b'\\x01\\x00\\x02\\x00')
    """
    import pyarrow as pa

    spec = dataset_spec(frame, spec)
    arrays = array_layout(frame.schema)
    nullable = set(spec.final_names)
    table = frame.drop(list(arrays)).to_arrow()
    columns = {}
    for name in frame.columns:
        if name not in arrays:
            columns[name] = table[name]
            continue
        dtype, width = arrays[name]
        series = frame.get_column(name)
        validity = None
        if name in nullable and series.null_count():  # a final-state column: null off the episodes' ends
            held = series.is_not_null().to_numpy()
            values = np.zeros((series.len(), width), dtype=np.dtype(dtype).newbyteorder("="))
            values[held] = series.filter(pl.Series(held)).to_numpy()
            validity = pa.py_buffer(np.packbits(held, bitorder="little"))
            series = series.filter(pl.Series(held))
        else:
            values = series.to_numpy()  # (rows, width); floats when there are nulls
        if values.dtype != np.dtype(dtype).newbyteorder("=") or (
                values.dtype.kind == "f" and (series.null_count() or series.arr.explode().null_count())):
            raise FrameError(f"column {name!r} has null values; a dataset's array columns cannot",
                             hint="Drop or fill those rows first")
        data = np.ascontiguousarray(values.astype(dtype, copy=False))
        columns[name] = pa.FixedSizeBinaryArray.from_buffers(
            pa.binary(data.itemsize * width), len(data), [validity, pa.py_buffer(data)])
    metadata = {LAYOUT_KEY: LAYOUT, SPEC_KEY: spec.to_json(),
                ARRAYS_KEY: json.dumps({c: {"dtype": d, "width": w} for c, (d, w) in arrays.items()})}
    return pa.table(columns).replace_schema_metadata(metadata)



def write_table(frame: pl.DataFrame, path: str | Path, *, compression: str = "zstd",
                spec: FrameSpec | None = None) -> None:
    """Write a plain table (a rewards table, not a dataset) as Parquet with a checksum in every page.

    Column types are kept as they are (Float16 rewards stay float16); use
    :func:`rewardlab.core.files.atomic_path` around it for an atomic write.
    :func:`~rewardlab.sources.storage.verify_table` checks the checksums when the table is read back.
    The spec (``spec``, else the one attached to ``frame``, else kanachan's
    when the table holds ``game_id`` and ``seat``), projected to the table's
    columns, is stored under :data:`rewardlab.core.spec.SPEC_KEY`; a table
    with none stores none.

    Examples
    --------
    >>> write_table(rewards, "rewards.parquet")  # doctest: +SKIP
    """
    import pyarrow.parquet as pq

    table = frame.to_arrow()
    try:
        found = dataset_spec(frame, spec)
    except SpecError:
        found = None
    if found is not None:
        projected = found.project(frame.columns)
        table = table.replace_schema_metadata({**(table.schema.metadata or {}),
                                               SPEC_KEY: projected.to_json()})
    pq.write_table(table, str(path), compression=compression, write_statistics=True,
                   write_page_checksum=True)


