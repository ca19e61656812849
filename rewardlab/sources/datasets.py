"""Converted datasets as a source: Parquet / Arrow files written by :mod:`rewardlab.sources.storage`.

Format name ``"dataset"``.  Recognized by content first: a Parquet or Arrow
file whose metadata holds rewardlab's layout marker or a stored spec
(:data:`rewardlab.core.spec.SPEC_KEY`); then by suffix (``.parquet``,
``.arrow``, ``.ipc``, ``.feather``: a plain Parquet file of a kanachan frame
loads too).  The frame carries the spec stored in the files; files written
before rewardlab stored one hold kanachan frames.

Examples
--------
>>> import rewardlab
>>> frame = rewardlab.load("data/sample.parquet")  # doctest: +SKIP
>>> rewardlab.core.spec.attached(frame).name  # doctest: +SKIP
'kanachan'
"""

from __future__ import annotations

from rewardlab.core.spec import FrameSpec
from rewardlab.sources.kanachan.schema import KANACHAN_SPEC
from rewardlab.sources.registry import Source, register_source
from rewardlab.sources.storage import DATASET_SUFFIXES, has_rewardlab_metadata, read_dataset, scan_dataset

__all__ = ["SOURCE", "load_dataset", "scan_dataset_source"]


def load_dataset(paths, *, spec: FrameSpec | None = None):
    """Read converted dataset files (see :func:`rewardlab.sources.storage.read_dataset`)."""
    return read_dataset(paths, spec=spec)


def scan_dataset_source(paths, *, spec: FrameSpec | None = None):
    """Scan converted dataset files lazily (see :func:`rewardlab.sources.storage.scan_dataset`)."""
    return scan_dataset(paths, spec=spec)


#: The converted-dataset source.  Its spec is the one of files that store none (kanachan's).
SOURCE = register_source(Source(
    name="dataset",
    spec=KANACHAN_SPEC,
    load=load_dataset,
    scan=scan_dataset_source,
    suffixes=tuple(DATASET_SUFFIXES),
    sniff=has_rewardlab_metadata,
    description="converted datasets (.parquet / .arrow written by `rewardlab convert`); "
    "the spec is read from the file metadata",
))
