"""Minari's HDF5 storage, read with h5py: :func:`read_hdf5_episodes`.

Minari 0.5's ``hdf5`` storage keeps every episode in the data folder's
``main_data.hdf5``, episode ``i`` as the group ``episode_i``: the datasets
``observations`` (``N + 1`` values, the last the final observation),
``actions``, ``rewards``, ``terminations`` and ``truncations`` (``N``
each), a group ``infos`` (not read), and the attributes ``id``, ``seed``
and ``total_steps``.  A Dict or Tuple space would be a group instead of a
dataset; such spaces are refused from ``metadata.json`` before this runs.

h5py comes with the optional ``minari`` extra (in a checkout: ``.venv/bin/pip install -e '.[minari]'``;
a missing h5py is refused with the exact command, :func:`rewardlab.core.extras.missing_extra`).

Examples
--------
>>> from rewardlab.sources.minari.metadata import read_metadata
>>> meta = read_metadata("data/minari/mountaincar-hdf5-v0/data")
>>> episodes = read_hdf5_episodes(meta, range(2))
>>> [e.id for e in episodes], episodes[0].obs.shape[1]
([0, 1], 2)
"""

from __future__ import annotations

import numpy as np

from rewardlab.core.errors import DataFormatError
from rewardlab.core.extras import import_extra
from rewardlab.core.files import check_input
from rewardlab.sources.minari.episodes import DAMAGED_HINT, STORED_COLUMNS, Episode, episode_error, make_episode
from rewardlab.sources.minari.metadata import HDF5_FILE, MinariMetadata

__all__ = ["read_hdf5_episodes", "EXTRA", "MAX_EXPANSION"]

#: How much larger than its stored bytes a dataset may read (gzip, HDF5's strongest built-in filter, reaches
#: about 1032 to 1); a dataset declaring more is refused before it is read.
MAX_EXPANSION = 1100

#: The extra that installs h5py (:func:`rewardlab.core.extras.install_command` gives the command).
EXTRA = "minari"


def _h5py():
    return import_extra("h5py", extra=EXTRA, what="Reading a Minari dataset's HDF5 storage")


def _declared_steps(group) -> int | None:
    value = group.attrs.get("total_steps")
    if isinstance(value, (int, np.integer)) and not isinstance(value, (bool, np.bool_)):
        return int(value)
    return None


def _check_count(h5py, file, meta: MinariMetadata, path) -> None:
    ids = sorted(int(k[len("episode_"):]) for k in file.keys()
                 if k.startswith("episode_") and k[len("episode_"):].isascii() and k[len("episode_"):].isdigit())
    extra = [i for i in ids if i >= meta.total_episodes]
    if extra:
        raise DataFormatError(meta.path, None, None, "episode_count",
                              f"counts total_episodes {meta.total_episodes}, and {path.name} holds groups up to "
                              f"episode_{extra[-1]} ({len(extra)} more)",
                              hint="An interrupted write? Write the dataset again with Minari")


def _check_stored(item, path, column: str, episode: int) -> None:
    """Refuse a dataset that declares more bytes than its file could hold: a shape written with no data behind it
    (reading it would allocate the declared size), before it is read."""
    stored = int(item.id.get_storage_size())
    if item.nbytes > max(stored * MAX_EXPANSION, 1 << 20):
        raise episode_error(path, column, "declared_shape",
                            f"episode {episode}'s {column.rsplit('/', 1)[-1]} declare shape {item.shape} "
                            f"({item.nbytes} bytes) and the file stores {stored} bytes of them",
                            hint=DAMAGED_HINT)


def _episode(h5py, file, meta: MinariMetadata, path, i: int) -> Episode:
    name = f"episode_{i}"
    group = file.get(name)
    if not isinstance(group, h5py.Group):
        raise DataFormatError(path, None, None, "missing_episode",
                              f"has no group {name!r}: episode {i} of the {meta.total_episodes} that {meta.path} "
                              "counts is missing",
                              hint="Copy the whole dataset folder again, or write the dataset again with Minari")
    values = {}
    for column in STORED_COLUMNS:
        item = group.get(column)
        if not isinstance(item, h5py.Dataset):
            found = "is missing" if item is None else f"is a {type(item).__name__}, not a dataset of numbers"
            raise episode_error(path, f"{name}/{column}", "missing_column" if item is None else "shape",
                                f"episode {i}'s {column} {found}")
        if item.dtype.kind not in "biuf":
            raise episode_error(path, f"{name}/{column}", "shape",
                                f"episode {i}'s {column} are stored as {item.dtype}, not numbers")
        _check_stored(item, path, f"{name}/{column}", i)
        values[column] = item[()]
    return make_episode(i, path, name + "/", meta.observations, meta.actions, **values,
                        declared=_declared_steps(group))


def read_hdf5_episodes(meta: MinariMetadata, ids) -> list[Episode]:
    """Read episodes ``ids`` (Minari's episode ids) of the HDF5 storage described by ``meta``.

    Raises :class:`~rewardlab.core.errors.DataFormatError` naming
    ``main_data.hdf5``: missing, damaged or truncated (rule
    ``damaged_file``), a missing episode group (``missing_episode``) or
    dataset (``missing_column``), more groups than ``total_episodes``
    (``episode_count``), and the rules of
    :func:`~rewardlab.sources.minari.episodes.make_episode` (stored column
    ``episode_i/observations`` and so on).  ImportError naming the extra
    when h5py is not installed.
    """
    h5py = _h5py()
    path = meta.folder / HDF5_FILE
    check_input(path)
    try:
        with h5py.File(path, "r") as file:
            _check_count(h5py, file, meta, path)
            return [_episode(h5py, file, meta, path, i) for i in ids]
    except (OSError, RuntimeError) as exc:
        text = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
        raise DataFormatError(path, None, None, "damaged_file", f"cannot be read as HDF5 ({text})",
                              hint=DAMAGED_HINT) from None
