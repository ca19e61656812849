"""One part file of a dataset folder: written atomically, fingerprinted, journaled for a resumed run.

The functions here run wherever a part is written: a :class:`~rewardlab.sources.datasets.writer.PartWriter`'s
writer threads, an engine's workers (``apply``), or the processes that write parts cut from spooled chunks
(:mod:`rewardlab.sources.datasets.spooled_parts`).

Examples
--------
>>> import polars as pl
>>> from rewardlab.core.spec import FrameSpec
>>> len(episodes_fingerprint(pl.DataFrame({"e": [0, 0, 1]}), FrameSpec(name="s", episode=("e",))))
64
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
import os
import threading
from pathlib import Path

import polars as pl

from rewardlab.core.errors import FileAccessError
from rewardlab.core.spec import EPISODE_END, FrameSpec, attach, attached
from rewardlab.sources.datasets.manifest import PART_KEY, PartEntry, file_crc32, part_name
from rewardlab.sources.datasets.parts import count_episodes
from rewardlab.sources.storage import write_dataset

__all__ = ["write_part_file", "write_journaled_part", "episodes_fingerprint", "journaled_parts", "journal_line",
           "PARTS_JOURNAL"]

#: In a staging folder of a writer with ``journal=True`` (``convert``): one JSON line per part written (its
#: manifest entry and :func:`episodes_fingerprint`), for a resumed run to keep the part if it reads the same one.
PARTS_JOURNAL = "journal-parts.jsonl"


def write_part_file(staging: Path, index: int, frame: pl.DataFrame, *, dataset_id: str) -> PartEntry:
    """Write ``frame`` (with its spec attached) as part ``index`` of dataset ``dataset_id`` into ``staging``.

    Atomic (a temporary name, then a rename), so a retried or killed worker
    leaves the part whole or absent.  Returns the manifest's entry for it.
    """
    name = part_name(index)
    tmp = Path(staging) / f"{name}.{os.getpid()}.{threading.get_ident()}.tmp"
    spec = attached(frame)
    try:
        write_dataset(frame, tmp, kind="parquet", spec=spec,
                      metadata={PART_KEY: json.dumps({"dataset": dataset_id, "index": index})})
        entry = PartEntry(name=name, rows=frame.height, episodes=count_episodes(frame, spec),
                          bytes=tmp.stat().st_size, crc32=file_crc32(tmp))
        os.replace(tmp, Path(staging) / name)
    except OSError as exc:
        tmp.unlink(missing_ok=True)
        if isinstance(exc, FileAccessError):
            raise
        raise FileAccessError(Path(staging) / name, f"part {index} could not be written "
                              f"({exc.strerror or exc})", hint="Check the free space and permissions of the "
                              "output's folder; nothing is left under the output's name, so run again once "
                              "fixed.") from exc
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise
    return entry


def write_journaled_part(staging, index: int, frame: pl.DataFrame, *, spec: FrameSpec, dataset_id: str,
                         kept: tuple[PartEntry, str] | None = None) -> tuple[PartEntry, str, bool]:
    """Write part ``index`` for a journaling writer: its entry, its :func:`episodes_fingerprint`, and whether
    it was kept rather than written.

    ``kept`` is the part a stopped run finished (its entry and fingerprint): it is kept as it is when
    ``frame`` holds the same episodes, and refused, naming the part, otherwise.  The caller journals a part
    written (:func:`journal_line`) once this returns: a part journaled is whole.
    """
    frame = attach(frame, attached(frame) or spec)
    fingerprint = episodes_fingerprint(frame, spec)
    if kept is not None:
        entry, recorded = kept
        if recorded != fingerprint:
            raise FileAccessError(Path(staging) / entry.name, f"part {index}, kept from the run that left "
                                  f"{Path(staging).name}, holds other episodes than this run reads for it (the "
                                  "input read differs, or its cuts into parts)",
                                  hint="Remove the staging folder and run again without --resume.")
        return entry, fingerprint, True
    return write_part_file(staging, index, frame, dataset_id=dataset_id), fingerprint, False


def journal_line(index: int, entry: PartEntry, fingerprint: str) -> str:
    """The :data:`PARTS_JOURNAL` line of a part written (no newline)."""
    return json.dumps({"index": index, "entry": dataclasses.asdict(entry), "fingerprint": fingerprint})


def episodes_fingerprint(frame: pl.DataFrame, spec: FrameSpec) -> str:
    """A digest of which episodes ``frame`` holds, in order: its rows, and each episode's key and length.

    Cheap (it reads the key columns at each episode's end only), it tells
    whether a part read again holds the same episodes cut at the same rows
    as the part written before; the rest of a row is the reader's output on
    the same input bytes (the run record checks their sizes and times).

    Examples
    --------
    >>> from rewardlab.core.spec import FrameSpec
    >>> spec = FrameSpec(name="s", episode=("e",))
    >>> a = episodes_fingerprint(pl.DataFrame({"e": [0, 0, 1]}), spec)
    >>> a == episodes_fingerprint(pl.DataFrame({"e": [0, 1, 1]}), spec), len(a)
    (False, 64)
    """
    digest = hashlib.sha256(str(frame.height).encode())
    if frame.height:
        keys = [k for k in spec.episode if k in frame.columns]
        ends = (frame.select(pl.col(keys), spec.episode_end(frame.columns), pl.int_range(pl.len()).alias("_row"))
                .filter(pl.col(EPISODE_END)).drop(EPISODE_END))
        ends = ends.with_columns(pl.col(pl.Categorical, pl.Enum).cast(pl.String))
        digest.update(ends.hash_rows(seed=0).to_numpy().tobytes())
    return digest.hexdigest()


def journaled_parts(staging) -> dict[int, tuple[PartEntry, str]]:
    """The parts journaled in ``staging``'s :data:`PARTS_JOURNAL` whose files are whole (size and CRC-32), with
    their fingerprints; any other part file there is removed (it is written again).  A line cut short by a kill
    is ignored."""
    staging = Path(staging)
    found: dict[int, tuple[PartEntry, str]] = {}
    journal = staging / PARTS_JOURNAL
    for line in (journal.read_text().splitlines() if journal.is_file() else []):
        try:
            record = json.loads(line)
            index, entry, fingerprint = int(record["index"]), PartEntry(**record["entry"]), str(record["fingerprint"])
        except (ValueError, KeyError, TypeError):
            continue
        path = staging / entry.name
        if entry.name != part_name(index) or not path.is_file() or path.stat().st_size != entry.bytes:
            continue
        if file_crc32(path) != entry.crc32:
            continue
        found[index] = (entry, fingerprint)
    names = {entry.name for entry, _ in found.values()}
    for path in staging.glob("part-*"):
        if path.name not in names:
            path.unlink(missing_ok=True)
    return found
