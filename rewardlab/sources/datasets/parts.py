"""Dataset folders of episode-aligned parts: open and check one (:class:`PartedDataset`), read its parts.

A part is one Parquet file of whole episodes, written by
:func:`rewardlab.sources.storage.write_dataset` (the spec in its footer, the
array columns as FixedSizeBinary), read back with
:func:`rewardlab.sources.storage.read_part`.  The folder's manifest
(:mod:`rewardlab.sources.datasets.manifest`) lists the parts in order.  A
dataset is read part by part, so memory holds one part at a time whatever
the dataset's size.  Writing one: :mod:`rewardlab.sources.datasets.writer`.

Opening a folder checks what is cheap (every part listed is there, has the
size the manifest says and, in its footer, this dataset's id and its own
index; no other part file lies in the folder), so a missing, truncated,
foreign or duplicated part is named before any work starts.
:meth:`PartedDataset.verify` also reads every part (CRC-32 and page
checksums).  With ``on_error="skip"`` a bad part is left out whole instead
(a part holds whole episodes, so no episode is ever cut): the dataset is the
other parts, :attr:`PartedDataset.left_out` records each one left out
(:class:`~rewardlab.sources.results.PartLeftOut`: index, file, reason, rows
and episodes from the manifest), its file stays where it is, and a
:class:`~rewardlab.core.errors.PartsLeftOutWarning` names them.

A dataset written part for part over a base opened in skip mode (``rewardlab
apply``, the returns writers) is written without the parts left out: its
parts are the base's others, numbered from 0, and its manifest lists the
ones left out (``base["parts_left_out"]``,
:func:`~rewardlab.sources.datasets.manifest.base_record`), so opening it
leaves those base parts out unchecked (reason :data:`WRITTEN_WITHOUT`),
joins each of its parts to the right base part
(:func:`~rewardlab.sources.datasets.manifest.index_in_base`) and
warns, naming them.

Examples
--------
>>> import tempfile, pathlib, polars as pl
>>> from rewardlab.core.spec import FrameSpec, attach
>>> from rewardlab.sources.datasets.writer import PartWriter
>>> spec = FrameSpec(name="toy", episode=("e",))
>>> frame = attach(pl.DataFrame({"e": [0, 0, 1, 2, 2, 2], "x": [1.0, 2, 3, 4, 5, 6]}), spec)
>>> with tempfile.TemporaryDirectory() as d:
...     with PartWriter(pathlib.Path(d) / "toy", spec=spec, part_rows=2) as w:
...         _ = w.add(frame)
...     ds = PartedDataset(pathlib.Path(d) / "toy")
...     print(ds.rows, ds.episodes, [p.height for p in ds.frames()])
6 3 [2, 4]
"""

from __future__ import annotations

import dataclasses
import json
import os
import warnings
from pathlib import Path
from typing import Iterator

import numpy as np
import polars as pl

from rewardlab.core.errors import (
    ColumnNotFoundError, DataFormatError, ParameterError, PartsLeftOutWarning, check_choice, check_int,
)
from rewardlab.core.cuts import cuts_at_ends, frame_episode_ends
from rewardlab.core.spec import FrameSpec, attach, attached
from rewardlab.sources.datasets.manifest import (
    MANIFEST_NAME, PART_KEY, file_crc32, has_manifest, index_in_base, parts_left_out, read_manifest,
)
from rewardlab.sources.results import PartLeftOut
from rewardlab.sources.storage import DATASET_SUFFIXES, file_metadata, read_part

__all__ = ["PartedDataset", "open_dataset", "is_dataset_folder", "episode_cuts", "count_episodes",
           "read_part_file", "check_part_rows", "DEFAULT_PART_ROWS", "part_rows_for", "REWRITE_HINT", "WRITTEN_WITHOUT"]

#: The suffix of the folder a dataset is written into before it gets its final name.
DEFAULT_PART_ROWS = 262_144

REWRITE_HINT = "Write the dataset again (`rewardlab convert`, or `rewardlab apply` for a rewards dataset)."
#: The reason recorded for a base's part that a dataset built on it (rewards, returns) was written without:
#: ``on_error="skip"`` left it out then (its manifest's ``base["parts_left_out"]`` lists them).
WRITTEN_WITHOUT = "written_without"


def part_rows_for(memory_bytes: int, *, bytes_per_row: int = 1100) -> int:
    """Rows per part that keep a command's memory near ``memory_bytes``.

    A part is held about twice at once (read, and built into a plug-in's
    arrays or a writer's table), so a part gets a third of the budget;
    ``bytes_per_row`` is what a row costs in memory (kanachan's frame: about
    1.1 KB).

    Examples
    --------
    >>> part_rows_for(512 << 20)
    162688
    """
    memory_bytes = check_int("memory", memory_bytes, low=1 << 20, rule="should be at least 1 MiB")
    return max(1024, memory_bytes // 3 // bytes_per_row)


def is_dataset_folder(path) -> bool:
    """True when ``path`` is a folder holding a dataset manifest.

    Examples
    --------
    >>> is_dataset_folder("data")
    False
    """
    return isinstance(path, (str, os.PathLike)) and Path(path).is_dir() and has_manifest(path)


def episode_cuts(frame: pl.DataFrame, spec: FrameSpec, rows: int) -> list[int]:
    """Where to cut ``frame`` into pieces of whole episodes of at least ``rows`` rows (the last may be smaller).

    Returns the end row of each piece (the last is ``frame.height``): :func:`rewardlab.core.cuts.cuts_at_ends`.

    Examples
    --------
    >>> from rewardlab.core.spec import FrameSpec
    >>> episode_cuts(pl.DataFrame({"e": [0, 0, 1, 2, 2, 2]}), FrameSpec(name="s", episode=("e",)), 2)
    [2, 6]
    """
    return cuts_at_ends(frame_episode_ends(frame, spec), rows)


def count_episodes(frame: pl.DataFrame, spec: FrameSpec) -> int:
    return int(frame.select(spec.episode_end(frame.columns)).to_series().sum()) if frame.height else 0


class PartedDataset:
    """A dataset folder, opened and checked: its manifest, spec and parts, read one part at a time.

    Parameters
    ----------
    folder : path
        A folder with a manifest (``rewardlab convert ... --out FOLDER``).
    on_error : {"raise", "skip"}
        ``"raise"`` (default): a bad part stops the opening, named.
        ``"skip"``: a missing, truncated, foreign or duplicated part is left
        out whole (its file left in place) and recorded in :attr:`left_out`;
        a part file the manifest does not list is passed over and recorded
        too; one :class:`~rewardlab.core.errors.PartsLeftOutWarning` names
        them.  A rewards dataset and its base leave out the same part
        indexes (those either lacks).  A damaged manifest, or a missing or
        mismatched base, still raises: no part can be trusted then.

    Attributes
    ----------
    manifest : Manifest
        The parts kept, in order (every part, unless some were left out).
    listed : Manifest
        The manifest as written (every part it lists).
    part_indexes : tuple of int
        The manifest index of each kept part (``range(len(listed.parts))``
        when nothing was left out).
    written_without : tuple of int
        A dataset written over a base (rewards, returns) from a base opened
        with ``on_error="skip"``: the base's parts it was written without
        (its part ``i`` is the base's part
        :func:`~rewardlab.sources.datasets.manifest.index_in_base` ``(i,
        written_without)``).  Opening it leaves those base parts out
        unchecked (reason :data:`WRITTEN_WITHOUT`) and warns, naming them.
    left_out : tuple of PartLeftOut
        What ``on_error="skip"`` left out (empty otherwise).

    Raises
    ------
    DataFormatError
        The manifest is missing or damaged; a part listed is missing, has
        another size than listed (truncated, or replaced), belongs to
        another dataset or sits at another index (copied over another
        part); a part file lies in the folder that the manifest does not
        list; a rewards dataset's base folder is missing or is another
        dataset.  Each names the folder or the part and what to do.

    Examples
    --------
    >>> ds = PartedDataset("corpus")  # doctest: +SKIP
    >>> for part in ds.frames(columns=["reward_top"]):  # doctest: +SKIP
    ...     ...
    >>> PartedDataset("corpus", on_error="skip").left_out  # doctest: +SKIP
    (PartLeftOut(index=3, file=PosixPath('corpus/part-000003.parquet'), reason='part_size', ...),)
    """

    def __init__(self, folder, *, on_error: str = "raise", warn: bool = True):
        self._open(folder, check_choice("on_error", on_error, ("raise", "skip")))
        if warn and self.all_left_out():
            warnings.warn(PartsLeftOutWarning(self.left_out_message()), stacklevel=2)

    def _open(self, folder, on_error: str, written_without: dict | None = None) -> None:
        self.folder = Path(folder)
        self.on_error = on_error
        if not self.folder.is_dir():
            raise DataFormatError(self.folder, None, None, "missing_file", "the dataset folder does not exist",
                                  hint="Check the path.")
        self.listed = self.manifest = read_manifest(self.folder)
        try:
            self.spec = FrameSpec.from_dict(self.manifest.spec)
            self.written_without = tuple(sorted(parts_left_out(self.manifest.base)))
        except Exception as exc:  # noqa: BLE001 - any failure to rebuild it is a damaged manifest
            raise DataFormatError(self.folder / MANIFEST_NAME, None, None, "bad_manifest",
                                  f"the manifest's spec or base cannot be read ({exc})", hint=REWRITE_HINT) from None
        self.paths = [self.folder / p.name for p in self.manifest.parts]
        self.part_indexes: tuple[int, ...] = tuple(range(len(self.paths)))
        self.left_out: tuple[PartLeftOut, ...] = ()
        self._told_without = dict(written_without or {})  # parts a dataset built on this one was written without
        found = self._check_parts(self._told_without)
        self._base: PartedDataset | None = None
        self._columns: tuple[str, ...] | None = None
        if self.manifest.base is not None:
            self._base = self._open_base()
            found += _same_parts_left_out(self, self._base, found)
        self._leave_out(found)

    def all_left_out(self) -> tuple[PartLeftOut, ...]:
        """:attr:`left_out` and its bases' (a base's :data:`WRITTEN_WITHOUT` parts included), base last."""
        return self.left_out + (self._base.all_left_out() if self._base is not None else ())

    # --- what it holds ------------------------------------------------------------------------------

    @property
    def rows(self) -> int:
        """Rows (transitions) over every part."""
        return self.manifest.rows

    @property
    def episodes(self) -> int:
        """Episodes over every part."""
        return self.manifest.episodes

    @property
    def base(self) -> "PartedDataset | None":
        """A rewards dataset's input dataset (same parts, row for row); None for other datasets."""
        return self._base

    def __len__(self) -> int:
        return len(self.paths)

    def __repr__(self) -> str:
        return (f"PartedDataset({str(self.folder)!r}: {self.rows:,} rows, {self.episodes:,} episodes, "
                f"{len(self)} parts, spec {self.spec.name!r})")

    @property
    def columns(self) -> tuple[str, ...]:
        """The parts' columns (from the first part's footer; every part has the same)."""
        if self._columns is None:
            if not self.paths:
                self._columns = tuple(self.spec.required)
            else:
                import pyarrow.parquet as pq

                self._columns = tuple(pq.read_schema(self.paths[0]).names)
        return self._columns

    @property
    def all_columns(self) -> tuple[str, ...]:
        """Its columns, then its base's that it lacks (what :meth:`frames` can read)."""
        own = self.columns
        return own + tuple(c for c in (self._base.all_columns if self._base else ()) if c not in own)

    # --- reading ------------------------------------------------------------------------------------

    def read(self, index: int, columns=None) -> pl.DataFrame:
        """Part ``index`` (all its columns, or ``columns``: from this dataset, else from its base).

        The spec's episode columns are read too (first), whatever ``columns``
        says; the frame carries the spec projected to its columns.
        """
        index = check_int("index", index, low=0, high=len(self) - 1 if len(self) else 0,
                          rule=f"should be a part index in [0, {len(self) - 1}]")
        if columns is None:
            frame = read_part(self.paths[index])
        else:
            columns = list(dict.fromkeys(columns))
            unknown = [c for c in columns if c not in self.all_columns]
            if unknown:
                raise ColumnNotFoundError(unknown[0], list(self.all_columns))
            own = [c for c in columns if c in self.columns]
            other = [c for c in columns if c not in self.columns]
            frame = read_part(self.paths[index], columns=own or list(self.spec.episode))
            if other:
                extra = self._base.read(index, other)
                if extra.height != frame.height:
                    raise DataFormatError(self.paths[index], None, None, "base_mismatch",
                                          f"the part has {frame.height:,} rows, part {index} of its base "
                                          f"{self._base.folder} {extra.height:,}", hint=REWRITE_HINT)
                frame = frame.hstack(extra.select(other))
            frame = frame.select(list(dict.fromkeys([*self.spec.episode, *columns])))  # with its episode keys
        check_part_rows(frame, self.paths[index], self.manifest.parts[index].rows)
        return attach(frame, self.spec.project(frame.columns))

    def part_items(self) -> list[tuple[str, int, int]]:
        """``(file, rows, index)`` of every part: what a work item needs to read one part on its own
        (:func:`read_part_file`), without opening the folder again (which checks every part's footer).
        ``index`` is the part's index in the manifest (:attr:`part_indexes`: parts left out are not there).

        Examples
        --------
        >>> open_dataset("corpus").part_items()[0]  # doctest: +SKIP
        ('corpus/part-000000.parquet', 162762, 0)
        """
        return [(str(p), e.rows, i) for i, p, e in zip(self.part_indexes, self.paths, self.manifest.parts)]

    def part_starts(self) -> np.ndarray:
        """The first row of every part in the whole dataset, and the row count last (``[parts + 1]`` int64).

        Examples
        --------
        >>> open_dataset("corpus").part_starts()[:3]  # doctest: +SKIP
        array([     0, 162762, 325519])
        """
        return np.concatenate(([0], np.cumsum([e.rows for e in self.manifest.parts], dtype=np.int64)))

    def part_of_row(self, row: int) -> int:
        """The index of the part holding row ``row`` of the whole dataset (0-based).

        Examples
        --------
        >>> open_dataset("corpus").part_of_row(0)  # doctest: +SKIP
        0
        """
        row = check_int("row", row, low=0, high=max(self.rows - 1, 0),
                        rule=f"should be a row of the dataset, in [0, {self.rows - 1}]")
        return int(np.searchsorted(self.part_starts(), row, side="right") - 1)

    def take(self, positions, columns=None) -> pl.DataFrame:
        """The rows at ``positions`` (ascending rows of the whole dataset), reading only the parts that hold them.

        Parameters
        ----------
        positions : int array
            Ascending row numbers in the whole dataset.
        columns : list of str, optional
            As :meth:`read`.

        Examples
        --------
        >>> open_dataset("corpus").take(np.arange(10, 20)).height  # doctest: +SKIP
        10
        """
        positions = np.asarray(positions, dtype=np.int64)
        if positions.size and (positions[0] < 0 or positions[-1] >= self.rows or (np.diff(positions) < 0).any()):
            raise ParameterError("positions", f"should be ascending rows in [0, {self.rows - 1}]",
                                 f"{positions.size:,} positions from {positions.min()} to {positions.max()}")
        starts = self.part_starts()
        where = np.searchsorted(starts, positions, side="right") - 1
        frames = []
        for index in np.unique(where):
            local = positions[where == index] - starts[index]
            frames.append(self.read(int(index), columns)[local])
        if not frames:
            return attach(self.read(0, columns).head(0), self.spec) if len(self) else attach(pl.DataFrame(), self.spec)
        frame = pl.concat(frames, how="vertical")
        return attach(frame, self.spec.project(frame.columns))

    def frames(self, columns=None) -> Iterator[pl.DataFrame]:
        """Each part in order (see :meth:`read`); one part is held at a time."""
        for index in range(len(self)):
            yield self.read(index, columns)

    def load(self, columns=None) -> pl.DataFrame:
        """Every part in one frame (the dataset must fit in memory)."""
        frames = list(self.frames(columns))
        if not frames:
            return attach(pl.DataFrame(), self.spec)
        frame = pl.concat(frames, how="vertical", rechunk=False)
        return attach(frame, self.spec.project(frame.columns))

    # --- checks -------------------------------------------------------------------------------------

    def _check_parts(self, written_without: dict) -> list[PartLeftOut]:
        """Check every listed part's size and footer and look for part files not listed: raise the first
        problem, or (skip mode) return one record per part to leave out.  The parts of ``written_without``
        (``{index: what the dataset built on this one recorded}``) are left out unchecked."""
        found: list[PartLeftOut] = []
        for index, (entry, path) in enumerate(zip(self.manifest.parts, self.paths)):
            if index in written_without:
                was = written_without[index]
                found.append(PartLeftOut(index, path, WRITTEN_WITHOUT, f"the dataset built on it was written "
                                         f"without it (left out then: {was.get('reason', 'unknown')})",
                                         entry.rows, entry.episodes))
                continue
            try:
                self._check_part(index, entry, path)
            except DataFormatError as exc:
                if self.on_error == "raise":
                    raise
                found.append(PartLeftOut(index, path, exc.rule, exc.message, entry.rows, entry.episodes))
        listed = {p.name for p in self.manifest.parts}
        strays = sorted(p.name for p in self.folder.iterdir()
                        if p.suffix in DATASET_SUFFIXES and p.name not in listed)
        if strays and self.on_error == "raise":
            raise DataFormatError(self.folder / strays[0], None, None, "foreign_part",
                                  f"the folder holds {len(strays)} part file(s) its manifest does not list "
                                  f"({', '.join(strays[:3])}{', ...' if len(strays) > 3 else ''})",
                                  hint="Move them out of the dataset folder (a dataset folder holds only its "
                                  "own parts).")
        found += [PartLeftOut(None, self.folder / name, "stray_part", "the manifest does not list it", 0, 0)
                  for name in strays]
        return found

    def _check_part(self, index: int, entry, path: Path) -> None:
        """Raise :class:`DataFormatError` (naming ``path``) if part ``index`` is missing, has another size
        than listed, or its footer names another dataset or index."""
        try:
            size = path.stat().st_size
        except FileNotFoundError:
            raise DataFormatError(path, None, None, "missing_part",
                                  f"part {index} of {len(self.paths)} listed in the manifest is missing",
                                  hint=REWRITE_HINT) from None
        if size != entry.bytes:
            raise DataFormatError(path, None, None, "part_size",
                                  f"the part has {size:,} bytes, the manifest says {entry.bytes:,} "
                                  "(truncated, or replaced by another file)", hint=REWRITE_HINT)
        raw = file_metadata(path).get(PART_KEY.encode())
        try:
            found = json.loads(raw) if raw is not None else None
        except ValueError:
            found = None
        if not isinstance(found, dict) or found.get("dataset") != self.manifest.id:
            raise DataFormatError(path, None, None, "foreign_part",
                                  "the part belongs to another dataset (its footer names "
                                  f"{found.get('dataset') if isinstance(found, dict) else 'none'}, the "
                                  f"manifest {self.manifest.id})", hint=REWRITE_HINT)
        if found.get("index") != index:
            raise DataFormatError(path, None, None, "duplicated_part",
                                  f"the file is part {found.get('index')} of this dataset, copied over "
                                  f"part {index}", hint=REWRITE_HINT)

    def _leave_out(self, records: list[PartLeftOut]) -> None:
        """Keep every listed part but those of ``records`` (the manifest, paths and indexes of the rest)."""
        self.left_out = tuple(sorted(records, key=lambda r: (r.index is None, r.index or 0, str(r.file))))
        gone = {r.index for r in records if r.index is not None}
        if not gone:
            return
        self.part_indexes = tuple(i for i in range(len(self.listed.parts)) if i not in gone)
        self.manifest = dataclasses.replace(self.listed, parts=tuple(self.listed.parts[i] for i in self.part_indexes))
        self.paths = [self.folder / p.name for p in self.manifest.parts]

    def left_out_message(self) -> str:
        """What :attr:`left_out` holds (with its bases'), in one line: the files (left in place), why, and the
        rows and episodes left out.

        Examples
        --------
        >>> PartedDataset("corpus", on_error="skip").left_out_message()  # doctest: +SKIP
        'left out 1 of 9 parts of corpus (20,012 of 181,446 rows, 61 of 960 episodes): part 3 (...)'
        """
        records = self.all_left_out()
        if not records:
            return f"left out no part of {self.folder}"
        gone = [r for r in self.left_out if r.index is not None]
        rows, episodes = sum(r.rows for r in gone), sum(r.episodes for r in gone)
        strays = len(self.left_out) - len(gone)
        texts = []
        if self.left_out or not self.written_without:
            texts.append(f"left out {len(gone)} of {len(self.listed.parts)} parts of {self.folder} ({rows:,} of "
                         f"{self.listed.rows:,} rows, {episodes:,} of {self.listed.episodes:,} episodes)"
                         + (f" and passed over {strays} file(s) it does not list" if strays else ""))
        if self.written_without:
            texts.append(f"{self.folder} was written without {len(self.written_without)} part(s) of its base "
                         f"{self._base.folder if self._base is not None else ''} (parts "
                         f"{', '.join(map(str, self.written_without))}, left out then; its parts join the others)")
        text = "; ".join(texts)
        where = "; ".join(("base: " if r not in self.left_out else "") + r.describe() for r in records)
        if all(r.reason == WRITTEN_WITHOUT for r in records):
            return (f"{text}: {where}. To cover them, write {self.folder} again from its base once those parts "
                    "are whole.")
        return (f"{text}: {where}. The files are left where they are (nothing was deleted); write the dataset "
                "again, or restore them, to read every part.")

    def _open_base(self) -> "PartedDataset":
        base = self.manifest.base or {}
        where = (self.folder / str(base.get("path", ""))).resolve()
        if not is_dataset_folder(where):
            raise DataFormatError(self.folder / MANIFEST_NAME, None, None, "missing_base",
                                  f"the rewards dataset's input {where} is not there (it was made from it, "
                                  "and reads states and context from it)",
                                  hint="Keep the two folders side by side, as `rewardlab apply` wrote them.")
        found = PartedDataset.__new__(PartedDataset)
        # its warning is this dataset's (left_out_message names both); the parts this one was written without
        # are left out there unchecked (they may still be bad)
        told = {index_in_base(i, self.written_without): was for i, was in self._told_without.items()}
        found._open(where, self.on_error, {**told, **parts_left_out(base)})
        if (found.listed.id != base.get("id")
                or len(found.listed.parts) != len(self.listed.parts) + len(self.written_without)
                or any(i >= len(found.listed.parts) for i in self.written_without)):
            raise DataFormatError(self.folder / MANIFEST_NAME, None, None, "base_mismatch",
                                  f"{where} is not the dataset these rewards were computed on (its id or parts "
                                  "differ)", hint="Apply the plug-ins to it again.")
        return found

    def verify(self, *, progress=None) -> None:
        """Read every part once: its CRC-32 against the manifest, its page checksums, its rows and episodes.

        Raises
        ------
        DataFormatError
            Naming the first part that fails.
        """
        for index, (entry, path) in enumerate(zip(self.manifest.parts, self.paths)):
            crc = file_crc32(path)
            if crc != entry.crc32:
                raise DataFormatError(path, None, None, "part_checksum",
                                      f"the part's CRC-32 is {crc}, the manifest says {entry.crc32}: its bytes "
                                      "changed since it was written", hint=REWRITE_HINT)
            frame = self.read(index)
            got = count_episodes(frame, attached(frame) or self.spec)
            if got != entry.episodes:
                raise DataFormatError(path, None, None, "part_mismatch",
                                      f"the part holds {got:,} episodes, the manifest says {entry.episodes:,}",
                                      hint=REWRITE_HINT)
            if progress is not None:
                progress(index + 1, len(self))


def _same_parts_left_out(rewards: PartedDataset, base: PartedDataset, found: list[PartLeftOut]) -> list[PartLeftOut]:
    """Make a rewards dataset and its base leave out the same parts (part ``i`` of the rewards is the base's
    ``index_in_base(i, rewards.written_without)``): the base leaves out the parts ``found`` leaves out; the
    records of the rewards' parts whose base part was left out are returned."""
    to_base = {i: index_in_base(i, rewards.written_without) for i in range(len(rewards.listed.parts))}
    from_base = {b: i for i, b in to_base.items()}
    own = {to_base[r.index] for r in found if r.index is not None}
    theirs = {r.index for r in base.left_out if r.index is not None and r.reason != WRITTEN_WITHOUT}
    already = {r.index for r in base.left_out if r.index is not None}
    _also_leave_out(base, own - already, "rewards_part_left_out",
                    f"the part of the rewards dataset {rewards.folder} built on it is left out")
    return [PartLeftOut(i, rewards.folder / rewards.listed.parts[i].name, "base_part_left_out",
                        f"part {b} of its base {base.folder} is left out", rewards.listed.parts[i].rows,
                        rewards.listed.parts[i].episodes)
            for b in sorted(theirs - own) if (i := from_base.get(b)) is not None]


def _also_leave_out(ds: PartedDataset, indexes: set, reason: str, message: str) -> None:
    """Leave parts ``indexes`` of ``ds`` (and the same parts of its base, and so on) out too, with ``reason``."""
    if not indexes:
        return
    extra = [PartLeftOut(i, ds.folder / ds.listed.parts[i].name, reason, message, ds.listed.parts[i].rows,
                         ds.listed.parts[i].episodes) for i in sorted(indexes)]
    ds._leave_out([*ds.left_out, *extra])
    if ds.base is not None:
        mapped = {index_in_base(i, ds.written_without) for i in indexes}
        _also_leave_out(ds.base, mapped - {r.index for r in ds.base.left_out}, reason, message)


def check_part_rows(frame: pl.DataFrame, path, rows: int) -> None:
    """Refuse a part whose row count differs from its manifest's (naming the part)."""
    if frame.height != rows:
        raise DataFormatError(path, None, None, "part_mismatch",
                              f"the part holds {frame.height:,} rows, the manifest says {rows:,}", hint=REWRITE_HINT)


def read_part_file(path, rows: int, *, columns=None) -> pl.DataFrame:
    """One part of a dataset folder read on its own (see :meth:`PartedDataset.part_items`), or only
    ``columns`` of it, its row count checked against the manifest's ``rows``; its spec attached.

    Examples
    --------
    >>> path, rows, _ = open_dataset("corpus").part_items()[0]  # doctest: +SKIP
    >>> read_part_file(path, rows, columns=["game_id"]).height == rows  # doctest: +SKIP
    True
    """
    frame = read_part(path, columns=columns)
    check_part_rows(frame, path, rows)
    return frame


def open_dataset(folder, *, on_error: str = "raise") -> PartedDataset:
    """Open a dataset folder (see :class:`PartedDataset`; ``on_error="skip"`` leaves bad parts out).

    Examples
    --------
    >>> import rewardlab
    >>> ds = rewardlab.open_dataset("corpus")  # doctest: +SKIP
    >>> ds = rewardlab.open_dataset("corpus", on_error="skip")  # doctest: +SKIP
    """
    return PartedDataset(folder, on_error=on_error)
