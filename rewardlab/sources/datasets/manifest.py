"""The manifest of a dataset folder: which parts it holds, in which order, and how to tell them.

A dataset folder (what ``rewardlab convert IN... --out FOLDER`` writes) holds
Parquet *parts*, each a run of whole episodes, and ``rewardlab-dataset.json``
(:data:`MANIFEST_NAME`): the dataset's id, its spec, and per part its file
name, rows, episodes, size in bytes and CRC-32.  Each part also records in
its own footer which dataset and which part it is
(:data:`PART_KEY`), so a part copied in from another dataset, or over
another part, is told apart without reading its data.

A *rewards dataset* (``rewardlab apply`` on a dataset folder) has the same
parts, part for part and row for row, holding only the keys, the context
and the ``reward_<name>`` / ``done_<name>`` columns; its manifest names its
``base`` (the input dataset's folder and id), so the two can be read side by
side, part by part.  Written from a base whose bad parts were left out
(``on_error="skip"``), it has the base's other parts, numbered from 0, and
``base["parts_left_out"]`` lists the ones left out (:func:`base_record`;
:func:`index_in_base` maps its parts to the base's).

Examples
--------
>>> m = Manifest(id="0" * 32, kind="parquet", spec={"name": "s"},
...              parts=(PartEntry("part-000000.parquet", rows=10, episodes=2, bytes=100, crc32="00000000"),))
>>> Manifest.from_json(m.to_json()) == m
True
>>> m.rows, m.episodes
(10, 2)
"""

from __future__ import annotations

import dataclasses
import json
import os
import zlib
from pathlib import Path

from rewardlab.core.errors import DataFormatError

__all__ = ["MANIFEST_NAME", "MANIFEST_FORMAT", "MANIFEST_VERSION", "PART_KEY", "PartEntry", "Manifest",
           "part_name", "file_crc32", "read_manifest", "has_manifest", "index_in_base", "base_record",
           "parts_left_out"]

#: The manifest's file name inside a dataset folder.
MANIFEST_NAME = "rewardlab-dataset.json"
#: ``format`` of a manifest, and the version this rewardlab writes and reads.
MANIFEST_FORMAT = "rewardlab-dataset"
MANIFEST_VERSION = 1
#: Footer key of a part: JSON ``{"dataset": ID, "index": I}``.
PART_KEY = "rewardlab.part"

_HINT = ("A dataset folder is written whole by `rewardlab convert` or `rewardlab apply`: write it again, "
         "or restore it from a copy.")


def part_name(index: int, kind: str = "parquet") -> str:
    """The file name of part ``index``.

    Examples
    --------
    >>> part_name(7)
    'part-000007.parquet'
    """
    return f"part-{index:06d}.{'parquet' if kind == 'parquet' else 'arrow'}"


def file_crc32(path: str | Path, *, block: int = 1 << 22) -> str:
    """The CRC-32 of a file's bytes, as 8 hex digits (read in blocks; a few GB/s).

    Examples
    --------
    >>> import tempfile, pathlib
    >>> with tempfile.TemporaryDirectory() as d:
    ...     p = pathlib.Path(d) / "x"
    ...     _ = p.write_bytes(b"hello")
    ...     print(file_crc32(p))
    3610a686
    """
    crc = 0
    with open(path, "rb") as f:
        while chunk := f.read(block):
            crc = zlib.crc32(chunk, crc)
    return f"{crc:08x}"


@dataclasses.dataclass(frozen=True)
class PartEntry:
    """One part as the manifest lists it."""

    name: str
    rows: int
    episodes: int
    bytes: int
    crc32: str


@dataclasses.dataclass(frozen=True)
class Manifest:
    """A dataset folder's manifest (see the module's text).

    Attributes
    ----------
    id : str
        32 hex digits, fresh for every dataset written.
    kind : {"parquet", "ipc"}
    spec : dict
        The spec's JSON object (:meth:`rewardlab.core.spec.FrameSpec.to_dict`).
    parts : tuple of PartEntry
        In dataset order.
    base : dict or None
        A rewards dataset's input: ``{"path": FOLDER relative to this one, "id": ID}``.
    source : dict
        What it was made from (informational): format, inputs, plug-ins.
    """

    id: str
    kind: str
    spec: dict
    parts: tuple[PartEntry, ...]
    base: dict | None = None
    source: dict = dataclasses.field(default_factory=dict)

    @property
    def rows(self) -> int:
        """Rows over every part."""
        return sum(p.rows for p in self.parts)

    @property
    def episodes(self) -> int:
        """Episodes over every part (parts hold whole episodes, so they add up)."""
        return sum(p.episodes for p in self.parts)

    def to_json(self) -> str:
        """The manifest as JSON text (stable key order)."""
        body = {"format": MANIFEST_FORMAT, "version": MANIFEST_VERSION, "id": self.id, "kind": self.kind,
                "rows": self.rows, "episodes": self.episodes, "spec": self.spec, "base": self.base,
                "source": self.source, "parts": [dataclasses.asdict(p) for p in self.parts]}
        return json.dumps(body, indent=1) + "\n"

    @classmethod
    def from_json(cls, text: str, *, path: str | Path = MANIFEST_NAME) -> "Manifest":
        """Parse a manifest; :class:`~rewardlab.core.errors.DataFormatError` naming ``path`` if it is not one."""
        try:
            body = json.loads(text)
        except ValueError as exc:
            raise DataFormatError(path, None, None, "bad_manifest", f"the manifest is not JSON ({exc})",
                                  hint=_HINT) from None
        if not isinstance(body, dict) or body.get("format") != MANIFEST_FORMAT:
            raise DataFormatError(path, None, None, "bad_manifest",
                                  f"the file is not a rewardlab dataset manifest (no format {MANIFEST_FORMAT!r})",
                                  hint=_HINT)
        if body.get("version") != MANIFEST_VERSION:
            raise DataFormatError(path, None, None, "bad_manifest",
                                  f"the manifest's version {body.get('version')!r} is not {MANIFEST_VERSION}, the one "
                                  "this rewardlab reads", hint="Upgrade rewardlab, or convert the data again.")
        try:
            parts = tuple(PartEntry(name=str(p["name"]), rows=int(p["rows"]), episodes=int(p["episodes"]),
                                    bytes=int(p["bytes"]), crc32=str(p["crc32"])) for p in body["parts"])
            manifest = cls(id=str(body["id"]), kind=str(body["kind"]), spec=dict(body["spec"]), parts=parts,
                           base=body.get("base"), source=dict(body.get("source") or {}))
        except (KeyError, TypeError, ValueError) as exc:
            raise DataFormatError(path, None, None, "bad_manifest", f"the manifest lacks or garbles {exc}",
                                  hint=_HINT) from None
        names = [p.name for p in parts]
        for p in parts:
            if Path(p.name).name != p.name or not p.name.startswith("part-"):
                raise DataFormatError(path, None, None, "bad_manifest",
                                      f"part name {p.name!r} is not a file name of the folder", hint=_HINT)
            if p.rows < 0 or p.episodes < 0 or p.bytes < 0:
                raise DataFormatError(path, None, None, "bad_manifest", f"part {p.name} has negative counts",
                                      hint=_HINT)
        if len(set(names)) != len(names):
            dup = next(n for n in names if names.count(n) > 1)
            raise DataFormatError(path, None, None, "duplicated_part", f"the manifest lists part {dup} twice",
                                  hint=_HINT)
        return manifest


def has_manifest(folder: str | Path) -> bool:
    """True when ``folder`` is a dataset folder (it holds :data:`MANIFEST_NAME`).

    Examples
    --------
    >>> has_manifest("/nonexistent")
    False
    """
    return (Path(folder) / MANIFEST_NAME).is_file()


def read_manifest(folder: str | Path) -> Manifest:
    """The manifest of dataset folder ``folder``.

    Examples
    --------
    >>> read_manifest("corpus").rows  # doctest: +SKIP
    20000000
    """
    path = Path(folder) / MANIFEST_NAME
    try:
        text = path.read_text()
    except FileNotFoundError:
        raise DataFormatError(folder, None, None, "missing_manifest",
                              f"the folder has no {MANIFEST_NAME}: it is not a dataset folder, or its writer did "
                              "not finish", hint=_HINT) from None
    except (OSError, UnicodeDecodeError) as exc:
        raise DataFormatError(path, None, None, "bad_manifest", f"the manifest cannot be read ({exc})",
                              hint=_HINT) from None
    return Manifest.from_json(text, path=path)


def index_in_base(index: int, written_without) -> int:
    """The base's part index of part ``index`` of a dataset written without the base's parts ``written_without``
    (sorted): its parts are the base's others, in order, numbered from 0.

    Examples
    --------
    >>> [index_in_base(i, (1, 2)) for i in range(3)], index_in_base(4, ())
    ([0, 3, 4], 4)
    """
    for skipped in written_without:
        if skipped <= index:
            index += 1
        else:
            break
    return index


def base_record(base, out) -> dict:
    """What the manifest of a dataset written part for part over ``base`` (an opened
    :class:`~rewardlab.sources.datasets.parts.PartedDataset`: rewards, returns) says of it: its
    folder relative to ``out``, its id and, when ``base`` was opened with ``on_error="skip"`` and left parts
    out, ``parts_left_out``: one ``{index, file, reason, rows, episodes}`` per part (the dataset's parts are
    the base's others, in order: a later join by part skips them, and says so).

    Examples
    --------
    >>> base_record(PartedDataset("corpus", on_error="skip"), "rewards")  # doctest: +SKIP
    {'path': '../corpus', 'id': '5f0c...', 'parts_left_out': [{'index': 3, 'file': 'part-000003.parquet', ...}]}
    """
    record = {"path": os.path.relpath(Path(base.folder).resolve(), Path(out).resolve()), "id": base.manifest.id}
    gone = [r for r in base.left_out if r.index is not None]
    if gone:
        record["parts_left_out"] = [{"index": r.index, "file": Path(r.file).name, "reason": r.reason,
                                     "rows": r.rows, "episodes": r.episodes} for r in gone]
    return record


def parts_left_out(base: dict | None) -> dict[int, dict]:
    """``base["parts_left_out"]`` of a manifest (see :func:`base_record`), by index (empty when it has none).

    Examples
    --------
    >>> parts_left_out({"path": "../corpus", "id": "0" * 32, "parts_left_out": [{"index": 3, "reason": "part_size"}]})
    {3: {'index': 3, 'reason': 'part_size'}}
    """
    found = {}
    for item in (base or {}).get("parts_left_out") or ():
        try:
            found[int(item["index"])] = dict(item)
        except (KeyError, TypeError, ValueError):
            raise ValueError(f"parts_left_out should list {{index, ...}} objects, not {item!r}") from None
    return found
