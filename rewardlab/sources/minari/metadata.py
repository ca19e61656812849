"""Where a Minari dataset is and what its ``metadata.json`` says: :func:`dataset_folder`, :func:`read_metadata`.

A Minari 0.5 dataset lives in ``<datasets>/<dataset_id>/data/``: that
*data folder* holds ``metadata.json`` (the storage format, the episode and
step counts, the spaces as JSON) and the episodes, as one folder per episode
(``0/``, ``1/``, ... each holding an Arrow IPC or Parquet file and its own
``metadata.json``; formats ``arrow`` and ``parquet``) or as the groups
``episode_0``, ``episode_1``, ... of ``main_data.hdf5`` (format ``hdf5``).
:func:`dataset_folder` accepts the data folder, the dataset's root folder
above it, or ``metadata.json`` / ``main_data.hdf5`` themselves.

Examples
--------
>>> meta = read_metadata(dataset_folder("data/minari/mountaincar-hdf5-v0"))
>>> meta.data_format, meta.total_episodes, meta.observations.text, meta.actions.text
('hdf5', 8, 'Box(2,) float32', 'Discrete(3)')
>>> is_minari_metadata("data/minari/mountaincar-arrow-v0/data/metadata.json")
True
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

from rewardlab.core.errors import DataFormatError
from rewardlab.core.files import check_input
from rewardlab.sources.minari.spaces import SpaceLayout, space_layout

__all__ = ["METADATA_FILE", "HDF5_FILE", "STORAGE_FORMATS", "MinariMetadata", "is_minari_metadata",
           "dataset_folder", "read_metadata", "read_json_object"]

#: The file a Minari data folder describes itself in.
METADATA_FILE = "metadata.json"

#: The HDF5 storage's one file.
HDF5_FILE = "main_data.hdf5"

#: Minari 0.5's storage formats (``metadata.json``'s ``data_format``).
STORAGE_FORMATS = ("arrow", "parquet", "hdf5")

#: The most ``metadata.json`` text read (its spaces' bounds make it grow with the observations).
_MAX_METADATA_BYTES = 64 << 20

_FOLDER_HINT = ("Pass a Minari dataset's data folder (the one holding metadata.json, e.g. "
                "~/.minari/datasets/<dataset_id>/data) or the dataset's folder above it")


@dataclass(frozen=True)
class MinariMetadata:
    """What a Minari data folder's ``metadata.json`` says.

    Attributes
    ----------
    folder : Path
        The data folder.
    path : Path
        Its ``metadata.json``.
    data_format : str
        One of :data:`STORAGE_FORMATS`.
    total_episodes, total_steps : int
        The counts Minari keeps.
    observations, actions : SpaceLayout
        The spaces' layouts.
    jpeg_encoding : bool
        Whether Minari stored image spaces JPEG-encoded.
    dataset_id, minari_version : str or None
        As recorded (None where absent).
    """

    folder: Path
    path: Path
    data_format: str
    total_episodes: int
    total_steps: int
    observations: SpaceLayout
    actions: SpaceLayout
    jpeg_encoding: bool
    dataset_id: str | None
    minari_version: str | None


def read_json_object(path: str | Path) -> dict | None:
    """The JSON object in ``path``, or None when it is not one (unreadable, larger than 64 MiB, or nested too
    deeply for Python's parser).

    Examples
    --------
    >>> read_json_object("data/minari/mountaincar-arrow-v0/data/0/metadata.json")["total_steps"]
    130
    >>> read_json_object("data/minari/README.md") is None
    True
    """
    try:
        with open(path, "rb") as f:
            text = f.read(_MAX_METADATA_BYTES + 1)
    except OSError:
        return None
    if len(text) > _MAX_METADATA_BYTES or not text.lstrip().startswith(b"{"):
        return None
    try:
        value = json.loads(text)
    except (ValueError, RecursionError):  # RecursionError: nesting deeper than the parser's stack
        return None
    return value if isinstance(value, dict) else None


def _looks_minari(d: dict | None) -> bool:
    return d is not None and d.get("data_format") in STORAGE_FORMATS and "total_episodes" in d


def is_minari_metadata(path: str | Path) -> bool:
    """True for a file named ``metadata.json`` holding a Minari dataset's metadata (a ``data_format`` Minari
    writes and a ``total_episodes``), or for a ``main_data.hdf5`` beside one.

    Examples
    --------
    >>> is_minari_metadata("data/minari/mountaincar-hdf5-v0/data/main_data.hdf5")
    True
    >>> is_minari_metadata("data/minari/mountaincar-arrow-v0/data/0/metadata.json")  # an episode's
    False
    """
    path = Path(path)
    if path.name == HDF5_FILE:
        path = path.with_name(METADATA_FILE)
    return path.name == METADATA_FILE and path.is_file() and _looks_minari(read_json_object(path))


def dataset_folder(path: str | Path) -> Path:
    """The data folder of the Minari dataset at ``path``: the folder holding ``metadata.json``.

    ``path`` may be the data folder, the dataset's root folder (holding
    ``data/``), or the data folder's ``metadata.json`` or ``main_data.hdf5``.
    A folder holding several datasets is refused, naming them.

    Raises :class:`~rewardlab.core.errors.DataFormatError` naming the path:
    missing (rule ``missing_file``) or not a Minari dataset (rule
    ``not_minari``).

    Examples
    --------
    >>> dataset_folder("data/minari/mountaincar-arrow-v0").as_posix()
    'data/minari/mountaincar-arrow-v0/data'
    >>> dataset_folder("data/minari")  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    rewardlab.core.errors.DataFormatError: data/minari: holds 2 Minari datasets (...), not one [rule: not_minari] ...
    """
    path = Path(path)
    check_input(path, folder=True)
    if path.is_file():
        if path.name in (METADATA_FILE, HDF5_FILE) and (path.parent / METADATA_FILE).is_file():
            return path.parent
        raise DataFormatError(path, None, None, "not_minari", "is a file, not a Minari dataset folder",
                              hint=_FOLDER_HINT)
    if (path / METADATA_FILE).is_file():
        return path
    if (path / "data" / METADATA_FILE).is_file():
        return path / "data"
    try:
        inside = sorted(q for q in path.iterdir() if (q / "data" / METADATA_FILE).is_file())
    except OSError:
        inside = []
    if inside:
        names = ", ".join(q.name for q in inside[:5]) + (", ..." if len(inside) > 5 else "")
        raise DataFormatError(path, None, None, "not_minari",
                              f"holds {len(inside)} Minari dataset{'s' if len(inside) > 1 else ''} ({names}), "
                              "not one", hint="Pass one of them: " + str(inside[0]))
    raise DataFormatError(path, None, None, "not_minari",
                          f"is not a Minari dataset: it holds no {METADATA_FILE} (nor data/{METADATA_FILE})",
                          hint=_FOLDER_HINT)


def _bad(path: Path, message: str, hint: str = "Check the file, or write the dataset again with Minari 0.5"):
    return DataFormatError(path, None, None, "bad_metadata", message, hint=hint)


def _count(d: dict, key: str, path: Path) -> int:
    value = d.get(key)
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        raise _bad(path, f"{key!r} should be a count (an int >= 0), found {value!r}")
    return value


def read_metadata(folder: str | Path) -> MinariMetadata:
    """Read and check the ``metadata.json`` of the data folder ``folder``.

    Raises :class:`~rewardlab.core.errors.DataFormatError` naming the file:
    unreadable or not Minari's JSON (rule ``bad_metadata``), a storage format
    other than :data:`STORAGE_FORMATS` or metadata without the spaces
    (written before Minari 0.5), and spaces rewardlab cannot hold in a column
    (rule ``unsupported_space``, see :func:`~rewardlab.sources.minari.spaces.space_layout`).
    """
    folder = Path(folder)
    path = folder / METADATA_FILE
    check_input(path)
    d = read_json_object(path)
    if d is None:
        raise _bad(path, "is not a JSON object (a Minari dataset's metadata)")
    data_format = d.get("data_format")
    if data_format is None and "id" in d and "total_steps" in d:
        raise _bad(path, "is an episode's metadata (of the arrow storage), not a dataset's",
                   "Pass the dataset's data folder, the one above the episode folders")
    if data_format is None:
        raise _bad(path, "has no 'data_format': it is not a Minari dataset's metadata (or was written before "
                   "Minari 0.5)", "Pass a Minari 0.5 dataset's data folder, or load the dataset with its Minari "
                   "version and write it again with Minari 0.5")
    if data_format not in STORAGE_FORMATS:
        raise _bad(path, f"names the storage format {data_format!r}; rewardlab reads Minari 0.5's "
                   + ", ".join(map(repr, STORAGE_FORMATS)),
                   "Load the dataset with its Minari version and write it again with Minari 0.5")
    for key in ("observation_space", "action_space"):
        if key not in d:
            raise _bad(path, f"has no {key!r} (Minari 0.5 records both spaces; older versions only the "
                       "environment)", "Load the dataset with minari.load_dataset and write it again with "
                       "minari.create_dataset_from_buffers (Minari 0.5), which records the spaces")
    jpeg = bool(d.get("jpeg_encoding", True))
    return MinariMetadata(
        folder=folder, path=path, data_format=data_format,
        total_episodes=_count(d, "total_episodes", path), total_steps=_count(d, "total_steps", path),
        observations=space_layout(d["observation_space"], what="observation", path=path, jpeg_encoding=jpeg),
        actions=space_layout(d["action_space"], what="action", path=path, jpeg_encoding=jpeg),
        jpeg_encoding=jpeg,
        dataset_id=d.get("dataset_id") if isinstance(d.get("dataset_id"), str) else None,
        minari_version=d.get("minari_version") if isinstance(d.get("minari_version"), str) else None)
