"""Minari's Arrow and Parquet storages, read with pyarrow: :func:`read_arrow_episodes`.

Minari 0.5's ``arrow`` (and ``parquet``) storage writes episode ``i`` into
the folder ``<data folder>/i/``: one Arrow IPC file (``part-0.arrow``; a
Parquet file for ``parquet``) whose columns are ``observations``,
``actions``, ``rewards``, ``terminations``, ``truncations`` (and ``infos``,
not read), and a ``metadata.json`` with the episode's ``id`` and
``total_steps``.  All columns have ``N + 1`` rows for ``N`` steps: the
observations end with the final observation, the other columns with a
padding row (a zero action, reward 0, both flags False), which is cut off
here.  Box, MultiDiscrete and MultiBinary values are fixed-size lists of
the flattened value; Discrete values plain integers.  File names starting
with ``_`` or ``.`` are left out, as Minari leaves them out.

Examples
--------
>>> from rewardlab.sources.minari.metadata import read_metadata
>>> meta = read_metadata("data/minari/mountaincar-arrow-v0/data")
>>> episodes = read_arrow_episodes(meta, range(2))
>>> [e.id for e in episodes], episodes[0].obs.shape[1]
([0, 1], 2)
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

from rewardlab.core.errors import DataFormatError
from rewardlab.core.extras import import_extra
from rewardlab.core.files import check_input
from rewardlab.sources.minari.episodes import DAMAGED_HINT, STORED_COLUMNS, Episode, episode_error, make_episode
from rewardlab.sources.minari.metadata import METADATA_FILE, MinariMetadata, read_json_object

__all__ = ["read_arrow_episodes"]


def _pyarrow():
    what = "Reading a Minari dataset's Arrow or Parquet storage"  # a core dependency: only a broken install lacks it
    import_extra("pyarrow.ipc", extra=None, what=what, package="pyarrow")  # the submodules used below
    import_extra("pyarrow.parquet", extra=None, what=what, package="pyarrow")
    return import_extra("pyarrow", extra=None, what=what)


def _declared_steps(folder: Path) -> int | None:
    """The episode's ``total_steps`` in its ``metadata.json`` (None when absent or unreadable)."""
    d = read_json_object(folder / METADATA_FILE)
    value = None if d is None else d.get("total_steps")
    return value if isinstance(value, int) and not isinstance(value, bool) else None


def _data_files(folder: Path) -> list[Path]:
    """The episode folder's data files, as Minari reads them (not ``_*``, ``.*`` or ``metadata.json``)."""
    return sorted(p for p in folder.iterdir()
                  if p.is_file() and not p.name.startswith(("_", ".")) and p.name != METADATA_FILE)


def _read_table(pa, path: Path, data_format: str):
    check_input(path)
    try:
        if data_format == "parquet":
            table = pa.parquet.read_table(str(path))
        else:
            with pa.OSFile(str(path), "rb") as source:
                table = pa.ipc.open_file(source).read_all()
        table.column_names  # noqa: B018 - decodes the names: damaged bytes there are not UTF-8
        table.validate(full=True)
        return table
    except (OSError, pa.ArrowException, UnicodeDecodeError) as exc:
        text = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
        raise DataFormatError(path, None, None, "damaged_file",
                              f"cannot be read as a Minari {data_format} episode file ({text})",
                              hint=DAMAGED_HINT) from None


def _values(pa, column, path: Path, name: str, episode: int) -> np.ndarray:
    """A stored column as NumPy: ``[rows]`` for plain numbers, ``[rows, size]`` for fixed-size lists."""
    array = column.combine_chunks()
    if array.null_count:
        raise episode_error(path, name, "null", f"episode {episode}'s {name} hold {array.null_count} nulls")
    kind = array.type
    if pa.types.is_fixed_size_list(kind):
        inner = array.flatten()
        if inner.null_count or not (pa.types.is_integer(inner.type) or pa.types.is_floating(inner.type)
                                    or pa.types.is_boolean(inner.type)):
            what = "with nulls" if inner.null_count else f"of {inner.type}"
            raise episode_error(path, name, "shape", f"episode {episode}'s {name} are lists {what}, not of numbers")
        return inner.to_numpy(zero_copy_only=False).reshape(len(array), kind.list_size)
    if pa.types.is_integer(kind) or pa.types.is_floating(kind) or pa.types.is_boolean(kind):
        return array.to_numpy(zero_copy_only=False)
    raise episode_error(path, name, "shape", f"episode {episode}'s {name} are stored as {kind}, not numbers or "
                        "fixed-size lists of numbers (a space rewardlab does not read)")


def _is_number(name: str) -> bool:
    """True for a name of ASCII digits only (``"²"`` is a digit to ``str.isdigit``, not to ``int``)."""
    return name.isascii() and name.isdigit()


def _check_count(meta: MinariMetadata) -> None:
    """Refuse episode folders past ``total_episodes`` (an interrupted write, or a folder of two datasets)."""
    ids = sorted(int(p.name) for p in meta.folder.iterdir() if p.is_dir() and _is_number(p.name))
    extra = [i for i in ids if i >= meta.total_episodes]
    if extra:
        raise DataFormatError(meta.path, None, None, "episode_count",
                              f"counts total_episodes {meta.total_episodes}, and the folder holds episode "
                              f"folders up to {extra[-1]} ({len(extra)} more)",
                              hint="An interrupted write? Write the dataset again with Minari, or remove the "
                                   "episode folders it does not count")


def read_arrow_episodes(meta: MinariMetadata, ids) -> list[Episode]:
    """Read episodes ``ids`` (Minari's episode ids) of the Arrow or Parquet storage described by ``meta``.

    Raises :class:`~rewardlab.core.errors.DataFormatError` naming the folder
    or file for a missing episode (rule ``missing_episode``), a file that
    cannot be read (``damaged_file``: truncated, not Arrow / Parquet), more
    episode folders than ``total_episodes`` (``episode_count``), a missing
    column (``missing_column``), and the rules of
    :func:`~rewardlab.sources.minari.episodes.make_episode`; ``observation_count``
    when an episode's row count is not its ``total_steps`` + 1.
    """
    pa = _pyarrow()
    _check_count(meta)
    episodes = []
    for i in ids:
        folder = meta.folder / str(i)
        files = _data_files(folder) if folder.is_dir() else []
        if not files:
            raise DataFormatError(folder, None, None, "missing_episode",
                                  f"episode {i} of the {meta.total_episodes} that {meta.path} counts "
                                  + ("has no data file" if folder.is_dir() else "is missing"),
                                  hint="Copy the whole dataset folder again, or write the dataset again with Minari")
        tables = [_read_table(pa, f, meta.data_format) for f in files]
        path = files[0]
        missing = [c for c in STORED_COLUMNS if c not in tables[0].column_names]
        if missing:
            raise episode_error(path, missing[0], "missing_column",
                                f"episode {i}'s file has no {missing[0]!r} column (it has "
                                f"{', '.join(tables[0].column_names)})")
        try:
            table = pa.concat_tables([t.select(list(STORED_COLUMNS)) for t in tables])
        except (pa.ArrowException, KeyError) as exc:
            names = ", ".join(f.name for f in files)
            raise episode_error(path, "observations", "schema",
                                f"episode {i}'s files {names} do not share one schema ({exc})") from None
        rows, declared = table.num_rows, _declared_steps(folder)
        if declared is not None and rows != declared + 1:
            raise episode_error(path, "observations", "observation_count",
                                f"episode {i} holds {rows} observations for {declared} steps (its metadata.json's "
                                f"total_steps); Minari stores steps + 1 = {declared + 1} (the last one is the "
                                "observation after the last step)")
        if rows == 0:
            raise episode_error(path, "observations", "observation_count",
                                f"episode {i} holds no observation; Minari stores steps + 1")
        n = rows - 1
        values = {c: _values(pa, table.column(c), path, c, i) for c in STORED_COLUMNS}
        episodes.append(make_episode(
            i, path, "", meta.observations, meta.actions, observations=values["observations"],
            actions=values["actions"][:n], rewards=values["rewards"][:n], terminations=values["terminations"][:n],
            truncations=values["truncations"][:n], declared=None))
    return episodes
