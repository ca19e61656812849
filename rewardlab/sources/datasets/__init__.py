"""Converted datasets as a source: Parquet / Arrow files written by :mod:`rewardlab.sources.storage`, and dataset folders of parts.

A dataset folder (:mod:`rewardlab.sources.datasets.parts`: episode-aligned
Parquet parts and a manifest) loads as one frame too, its parts checked
against the manifest; commands that stream read it part by part instead
(:func:`open_dataset`).

Format name ``"dataset"``.  Recognized by content (:func:`sniff_dataset`): a
Parquet or Arrow file whose metadata holds rewardlab's layout marker or a
stored spec (:data:`rewardlab.core.spec.SPEC_KEY`), or a plain one holding
every column of a kanachan frame (what ``frame.write_parquet`` writes, and
files written before rewardlab stored a spec); a folder holding a dataset
manifest.  A plain Parquet file of other columns is a step table (format
``"steps"``), never a dataset.  By suffix it claims only Arrow files
(``.arrow``, ``.ipc``, ``.feather``).  The frame carries the spec stored in
the files; files without one hold kanachan frames.

Examples
--------
>>> import rewardlab
>>> frame = rewardlab.load("data/sample.parquet")  # doctest: +SKIP
>>> rewardlab.core.spec.attached(frame).name  # doctest: +SKIP
'kanachan'
"""

from __future__ import annotations

from rewardlab.core.spec import FrameSpec
from rewardlab.sources.kanachan.schema import FRAME_SCHEMA, KANACHAN_SPEC
from rewardlab.sources.registry import Source, register_source
from rewardlab.sources.datasets.manifest import MANIFEST_NAME, Manifest, PartEntry, read_manifest
from rewardlab.sources.datasets.parts import (
    DEFAULT_PART_ROWS, PartedDataset, episode_cuts, is_dataset_folder, open_dataset, part_rows_for, read_part_file,
)
from rewardlab.sources.datasets.writer import PartWriter
from rewardlab.sources.storage import (DATASET_SUFFIXES, file_columns, has_rewardlab_metadata, read_dataset,
                                       scan_dataset)

__all__ = ["SOURCE", "load_dataset", "scan_dataset_source", "PartedDataset", "PartWriter", "open_dataset",
           "is_dataset_folder", "episode_cuts", "part_rows_for", "DEFAULT_PART_ROWS", "Manifest", "PartEntry",
           "MANIFEST_NAME", "read_manifest", "dataset_parts", "read_part_file", "sniff_dataset"]


def sniff_dataset(path) -> bool:
    """True for a dataset file: rewardlab's metadata in its footer, or a plain Parquet / Arrow file holding
    every column of a kanachan frame (reads the footer only).

    Examples
    --------
    >>> sniff_dataset("data/gym/cartpole_random.parquet"), sniff_dataset("data/sample.tsv.gz")
    (True, False)
    """
    if has_rewardlab_metadata(path):
        return True
    names = file_columns(path)
    return names is not None and all(name in names for name in KANACHAN_SPEC_COLUMNS)


#: The columns a plain file needs to be read as a kanachan frame (every column of the frame).
KANACHAN_SPEC_COLUMNS = tuple(FRAME_SCHEMA)


def dataset_parts(paths) -> list | None:
    """The part files of a dataset folder named alone (checked against its manifest); None for other paths."""
    if isinstance(paths, (list, tuple)) and len(paths) == 1:
        paths = paths[0]
    if is_dataset_folder(paths):
        return PartedDataset(paths).paths
    return None


def load_dataset(paths, *, spec: FrameSpec | None = None):
    """Read converted dataset files, or a dataset folder (see :func:`rewardlab.sources.storage.read_dataset`)."""
    parts = dataset_parts(paths)
    if parts is not None and spec is None:
        return PartedDataset(paths[0] if isinstance(paths, (list, tuple)) else paths).load()
    return read_dataset(parts if parts is not None else paths, spec=spec)


def scan_dataset_source(paths, *, spec: FrameSpec | None = None):
    """Scan converted dataset files, or a dataset folder's parts, lazily (see :func:`rewardlab.sources.storage.scan_dataset`)."""
    parts = dataset_parts(paths)
    return scan_dataset(parts if parts is not None else paths, spec=spec)


#: The converted-dataset source.  Its spec is the one of files that store none (kanachan's).
SOURCE = register_source(Source(
    name="dataset",
    spec=KANACHAN_SPEC,
    load=load_dataset,
    scan=scan_dataset_source,
    suffixes=tuple(s for s, kind in DATASET_SUFFIXES.items() if kind == "ipc"),
    sniff=sniff_dataset,
    sniff_folder=is_dataset_folder,
    description="converted datasets (.parquet / .arrow written by `rewardlab convert`, or a dataset folder); "
    "the spec is read from the file metadata",
))
