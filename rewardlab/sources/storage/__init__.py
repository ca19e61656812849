"""Dataset file layouts: write a frame to disk with its spec and read it back, eagerly or lazily.

A converted dataset is one ``.parquet`` or ``.arrow`` file, several of them, or
a folder of them, each holding a frame of any source together with its
:class:`~rewardlab.core.spec.FrameSpec`: the spec's JSON is stored under
:data:`rewardlab.core.spec.SPEC_KEY` in the file's key-value metadata, and
:func:`read_dataset` / :func:`scan_dataset` attach it to what they return.
Files written before rewardlab stored a spec hold kanachan frames
(:data:`rewardlab.sources.kanachan.schema.KANACHAN_SPEC`, schema
:data:`rewardlab.sources.kanachan.schema.FRAME_SCHEMA`, possibly with extra columns such as
``reward_<name>`` after it).

Arrow IPC (``.arrow``) stores the frame as Polars holds it, with zstd.

Parquet (``.parquet``) stores every fixed-width ``pl.Array`` column of
numbers (kanachan's ``grades``, ``sparse``, ``numeric``, ``progression``,
``candidates``, ``round_summary``, ``results``; any source's state columns)
as **FixedSizeBinary**: one value per row
holding the row's ``width`` numbers as little-endian bytes.  Polars decodes
Parquet's fixed-size-list columns element by element (under 1 M rows/s);
these binary columns decode as flat buffers, several times faster.  The file
says so in its key-value metadata: ``rewardlab.layout`` (:data:`LAYOUT`) and
``rewardlab.arrays`` (JSON: each array column's little-endian dtype and
width).  A plain ``pl.read_parquet`` of such a file therefore shows the array
columns as ``Binary``; :func:`rewardlab.load` and :func:`rewardlab.scan`
(through :func:`read_dataset` and :func:`scan_dataset`) decode them.  A
Parquet file without the marker, whose array columns are ``pl.Array`` (what
``frame.write_parquet(path)`` writes), still loads the way Polars reads it.

The package splits by concern, each module saying its own:
:mod:`~rewardlab.sources.storage.layout` (which files form a dataset, the
layout's constants, what a footer says), :mod:`~rewardlab.sources.storage.writing`
(writing, the FixedSizeBinary encoding), :mod:`~rewardlab.sources.storage.inspection`
(checking a file's footer before its data is read),
:mod:`~rewardlab.sources.storage.reading` (reading and scanning, the decoding),
:mod:`~rewardlab.sources.storage.verification` (page checksums, nulls and
episodes in two files, remembered per file) and
:mod:`~rewardlab.sources.storage.problems` (the errors they share).  This
module re-exports their public API.

Examples
--------
>>> import tempfile, pathlib, polars as pl
>>> from rewardlab.sources import storage
>>> from rewardlab.sources.kanachan.schema import FRAME_SCHEMA
>>> frame = pl.DataFrame(schema=FRAME_SCHEMA)  # an empty common frame
>>> with tempfile.TemporaryDirectory() as d:
...     path = pathlib.Path(d) / "empty.parquet"
...     storage.write_dataset(frame, path, kind="parquet")
...     print(storage.layout_of(path), storage.read_dataset(path).equals(frame))
fsb-1 True
"""

from rewardlab.sources.storage.layout import (ARRAY_COLUMNS, ARRAYS_KEY, DATASET_SUFFIXES, LAYOUT, LAYOUT_KEY,
                                              PARQUET_COMPRESSION, PARQUET_ROW_GROUP, dataset_files, dataset_spec,
                                              file_columns, file_metadata, has_rewardlab_metadata, is_dataset,
                                              layout_of, read_spec, row_group_ends)
from rewardlab.sources.storage.reading import read_dataset, read_part, scan_dataset
from rewardlab.sources.storage.verification import clear_verified_cache, verify_dataset, verify_table
from rewardlab.sources.storage.writing import to_fixed_size_binary, write_dataset, write_table

__all__ = [
    "write_table",
    "verify_table",
    "read_part",
    "file_metadata",
    "file_columns",
    "DATASET_SUFFIXES",
    "LAYOUT",
    "PARQUET_COMPRESSION",
    "dataset_files",
    "is_dataset",
    "layout_of",
    "row_group_ends",
    "read_dataset",
    "scan_dataset",
    "verify_dataset",
    "write_dataset",
    "dataset_spec",
    "read_spec",
    "has_rewardlab_metadata",
    "to_fixed_size_binary",
    "clear_verified_cache",
]
