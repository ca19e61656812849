"""Converted datasets as a source: Parquet / Arrow files written by :mod:`rewardlab.sources.storage`, and dataset folders of parts.

A dataset folder (:mod:`rewardlab.sources.datasets.parts`: episode-aligned
Parquet parts and a manifest) loads as one frame too, its parts checked
against the manifest; commands that stream read it part by part instead
(:func:`open_dataset`).

A folder with bad parts (missing, truncated, foreign, duplicated) is refused,
naming the part; ``on_error="skip"`` leaves them out whole (their files stay
where they are), with a :class:`~rewardlab.core.errors.PartsLeftOutWarning`
naming each one and counting the rows and episodes left out
(:func:`read_dataset_folder` returns them in a
:class:`~rewardlab.sources.results.LoadResult`).

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
>>> frame = rewardlab.load("corpus", on_error="skip")  # doctest: +SKIP
"""

from __future__ import annotations

import warnings
from pathlib import Path

import polars as pl

from rewardlab.core.errors import FilesLeftOutWarning, ParameterError, check_choice
from rewardlab.core.spec import FrameSpec
from rewardlab.sources.kanachan.schema import FRAME_SCHEMA, KANACHAN_SPEC
from rewardlab.sources.registry import Source, register_source
from rewardlab.sources.results import SKIPPED_LINES_SCHEMA, LoadResult
from rewardlab.sources.datasets.manifest import MANIFEST_NAME, Manifest, PartEntry, read_manifest
from rewardlab.sources.datasets.parts import (
    DEFAULT_PART_ROWS, PartedDataset, episode_cuts, is_dataset_folder, open_dataset, part_rows_for, read_part_file,
)
from rewardlab.sources.datasets.writer import PartWriter
from rewardlab.sources.storage import (DATASET_SUFFIXES, file_columns, has_rewardlab_metadata, read_dataset,
                                       scan_dataset)

__all__ = ["SOURCE", "load_dataset", "scan_dataset_source", "PartedDataset", "PartWriter", "open_dataset",
           "is_dataset_folder", "episode_cuts", "part_rows_for", "DEFAULT_PART_ROWS", "Manifest", "PartEntry",
           "MANIFEST_NAME", "read_manifest", "dataset_parts", "read_part_file", "sniff_dataset", "read_dataset_folder",
           "warn_files_left_out"]


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


def _folder_of(paths):
    """The dataset folder ``paths`` names alone, or None."""
    if isinstance(paths, (list, tuple)) and len(paths) == 1:
        paths = paths[0]
    return paths if is_dataset_folder(paths) else None


def dataset_parts(paths, *, on_error: str = "raise") -> list | None:
    """The part files of a dataset folder named alone (checked against its manifest; ``on_error="skip"``:
    the good ones, see :class:`PartedDataset`); None for other paths."""
    folder = _folder_of(paths)
    return None if folder is None else PartedDataset(folder, on_error=on_error).paths


def _check_on_error(paths, on_error: str) -> str:
    """``on_error``, checked: ``"skip"`` applies to a dataset folder only (a dataset file has no parts)."""
    on_error = check_choice("on_error", on_error, ("raise", "skip"))
    if on_error == "skip" and _folder_of(paths) is None:
        raise ParameterError("on_error", "applies to a dataset folder (its bad parts are left out); a converted "
                             "dataset file is read whole or refused", on_error)
    return on_error


def warn_files_left_out(paths) -> None:
    """Warn (:class:`~rewardlab.core.errors.FilesLeftOutWarning`) about the files of a plain folder of dataset
    files that are not dataset files (a README, a summary CSV): the load reads only its ``.parquet`` /
    ``.arrow`` files and says which others it passed over.  Hidden files and dataset folders (their manifest
    lists their parts) are not named."""
    for p in [Path(paths)] if isinstance(paths, (str, Path)) else [Path(q) for q in paths]:
        if not p.is_dir() or is_dataset_folder(p):
            continue
        try:
            others = sorted(q for q in p.iterdir() if q.is_file() and q.suffix not in DATASET_SUFFIXES
                            and not q.name.startswith("."))
        except OSError:
            continue  # reading the folder reports it
        if others:
            warnings.warn(FilesLeftOutWarning(
                f"left out {len(others)} file{'s' if len(others) > 1 else ''} of {p} that "
                f"{'are' if len(others) > 1 else 'is'} not a dataset file (.parquet / .arrow): "
                + ", ".join(str(q) for q in others)), stacklevel=3)


def load_dataset(paths, *, spec: FrameSpec | None = None, on_error: str = "raise"):
    """Read converted dataset files, or a dataset folder (see :func:`rewardlab.sources.storage.read_dataset`;
    ``on_error="skip"``: a folder's bad parts left out, see :func:`read_dataset_folder`)."""
    on_error = _check_on_error(paths, on_error)
    folder = _folder_of(paths)
    if folder is not None and spec is None:
        return PartedDataset(folder, on_error=on_error).load()
    parts = dataset_parts(paths, on_error=on_error)
    if parts is None:
        warn_files_left_out(paths)
    return read_dataset(parts if parts is not None else paths, spec=spec)


def read_dataset_folder(folder, *, on_error: str = "raise") -> LoadResult:
    """A dataset folder read whole, and the parts ``on_error="skip"`` left out.

    Parameters
    ----------
    folder : path
        A dataset folder (``rewardlab convert ... --out FOLDER``).
    on_error : {"raise", "skip"}
        ``"skip"``: a missing, truncated, foreign or duplicated part is left
        out whole (never part of an episode; its file stays where it is).

    Returns
    -------
    LoadResult
        ``frame``: the kept parts, in order; ``parts_left_out``: one
        :class:`~rewardlab.sources.results.PartLeftOut` per part left out
        (index, file, reason, rows and episodes from the manifest), and
        ``parts_left_out_counts`` per reason; ``skipped`` is empty (whole
        parts are left out, no lines).

    Warns
    -----
    PartsLeftOutWarning
        Naming each part left out and the rows and episodes it held.

    Examples
    --------
    >>> result = read_dataset_folder("corpus", on_error="skip")  # doctest: +SKIP
    >>> result.parts_left_out_counts  # doctest: +SKIP
    {'part_size': 1}
    """
    ds = PartedDataset(folder, on_error=check_choice("on_error", on_error, ("raise", "skip")))
    return LoadResult(ds.load(), pl.DataFrame(schema=SKIPPED_LINES_SCHEMA), None, ds.left_out)


def scan_dataset_source(paths, *, spec: FrameSpec | None = None, on_error: str = "raise"):
    """Scan converted dataset files, or a dataset folder's parts, lazily (see
    :func:`rewardlab.sources.storage.scan_dataset`; ``on_error="skip"``: a folder's bad parts left out)."""
    parts = dataset_parts(paths, on_error=_check_on_error(paths, on_error))
    if parts is None:
        warn_files_left_out(paths)
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
