"""Verifying dataset files and tables: page checksums, nulls, episodes in two files, remembered per file.

Polars' lazy Parquet scan verifies nothing, so before the first scan of a
file in a process :func:`verify_files` reads it once, a row group at a time
(:func:`verify_parquet`, whose page checksums pyarrow verifies;
:func:`verify_ipc` for Arrow IPC, which has none), refuses nulls in the
spec's columns and an episode present in two files
(:func:`check_episodes_once`), and remembers the file by its identity
(real path, device, inode, size, time stamp) until
:func:`clear_verified_cache`.  :func:`verify_dataset` is the public entry
point; :func:`verify_table` does the same for a plain table that
:func:`rewardlab.sources.storage.write_table` wrote.

Examples
--------
>>> clear_verified_cache()  # the next scan of every file reads it again
"""

from __future__ import annotations

import os
from pathlib import Path

import polars as pl

from rewardlab.core.spec import FrameSpec
from rewardlab.core.errors import DataFormatError
from rewardlab.sources.storage.inspection import FileInfo, inspect_files, inspect_ipc, inspect_parquet
from rewardlab.sources.storage.layout import checked_columns, dataset_files, outer_nulls
from rewardlab.sources.storage.problems import damaged_error, refuse_nulls

__all__ = ["verify_dataset", "verify_table", "verify_files", "verify_parquet", "verify_ipc", "check_episodes_once",
           "clear_verified_cache"]

def verify_dataset(paths, *, cached: bool = True) -> None:
    """Read every file of a dataset once and check it, without keeping the data.

    The checks of :func:`~rewardlab.sources.storage.read_dataset`: each Parquet page's checksum (files
    :func:`~rewardlab.sources.storage.write_dataset` wrote carry one), that every page decodes, no
    nulls in the spec's columns (inside the arrays too), no episode (kanachan:
    game and seat) in two files.  Reads one row group (Parquet) at a time,
    so memory stays small.  :func:`~rewardlab.sources.storage.scan_dataset` calls it, because Polars'
    own Parquet reader, which the lazy scan uses, does not verify page
    checksums.  A file verified once is not read again in the same process
    while its size, time stamp and inode stay the same (``cached=False``
    reads it again).

    Raises
    ------
    DataFormatError
        Naming the file, as :func:`~rewardlab.sources.storage.read_dataset` does.

    Examples
    --------
    >>> verify_dataset("data/sample.parquet")  # doctest: +SKIP
    """
    files, kind = dataset_files(paths)
    infos = inspect_files(files, kind)
    verify_files(files, kind, infos, cached=cached)


#: Files verified in this process: (real path, device, inode, size, mtime[, spec given]) -> its episodes.
_VERIFIED: dict[tuple, pl.DataFrame] = {}


def _identity(path: Path) -> tuple:
    st = path.stat()
    return (os.path.realpath(path), st.st_dev, st.st_ino, st.st_size, st.st_mtime_ns)


def _row_groups(path: Path):
    """The Parquet file's row groups, read one at a time with page checksums verified."""
    import pyarrow.parquet as pq

    reader = pq.ParquetFile(path, page_checksum_verification=True)
    for k in range(reader.num_row_groups):
        yield reader.read_row_group(k)



def verify_files(files: list[Path], kind: str, infos: list[FileInfo], *, cached: bool = True,
                 given: bool = False) -> None:
    """Verify dataset files (:func:`verify_parquet` / :func:`verify_ipc`) not verified before, then
    :func:`check_episodes_once` over all of them.

    ``files``, ``kind`` and ``infos`` as :func:`~rewardlab.sources.storage.layout.dataset_files` and
    :func:`~rewardlab.sources.storage.inspection.inspect_files` return them.
    ``cached=False`` reads every file again; ``given``: the infos carry a
    spec the caller gave (not the files' own), which the files are verified
    with and remembered under.

    Examples
    --------
    >>> files, kind = dataset_files("data/sample.parquet")  # doctest: +SKIP
    >>> verify_files(files, kind, inspect_files(files, kind))  # doctest: +SKIP
    """
    episodes = []
    for path, info in zip(files, infos):
        key = _identity(path) + ((info.spec,) if given else ())
        if key not in _VERIFIED or not cached:
            if given:  # read with a spec the caller gave, not the file's own
                _VERIFIED[key] = (verify_parquet(path, info.spec) if kind == "parquet"
                                  else verify_ipc(path, info.spec))
            else:
                _VERIFIED[key] = verify_parquet(path) if kind == "parquet" else verify_ipc(path)
        episodes.append((path, _VERIFIED[key]))
    if infos[0].spec.episode:
        check_episodes_once(episodes)


def _own_spec(path: Path, spec: FrameSpec | None, kind: str) -> FrameSpec:
    if spec is not None:
        return spec
    return (inspect_parquet(path) if kind == "parquet" else inspect_ipc(path)).spec


def verify_parquet(path: Path, spec: FrameSpec | None = None) -> pl.DataFrame:
    """Read a Parquet file a row group at a time (checksums verified); return its episodes' keys.

    Refuses nulls in the columns of ``spec`` (default: the file's own), and
    a file that does not decode, with a
    :class:`~rewardlab.core.errors.DataFormatError` naming it.  Remembers
    nothing: :func:`verify_files` does.

    Examples
    --------
    >>> verify_parquet(Path("data/sample.parquet")).columns  # doctest: +SKIP
    ['game_id', 'seat']
    """
    import pyarrow as pa

    spec = _own_spec(path, spec, "parquet")
    keys = list(spec.episode)
    ids = []
    try:
        for table in _row_groups(path):
            for name in checked_columns(spec):
                column = table[name]
                outer = outer_nulls(spec, name, column.null_count)
                inner = 0 if outer or not pa.types.is_fixed_size_list(column.type) else sum(
                    chunk.flatten().null_count for chunk in column.chunks)
                refuse_nulls(path, name, outer, inner)
            if keys:
                ids.append(pl.from_arrow(table.select(keys)).unique(maintain_order=True))
    except DataFormatError:
        raise
    except (OSError, ValueError) as exc:  # pyarrow's errors
        raise damaged_error(path, exc) from exc
    if not ids:
        return pl.DataFrame(schema={k: pl.String for k in keys})
    return pl.concat(ids).unique(maintain_order=True)


def verify_table(path: str | Path) -> None:
    """Read a Parquet table once, a row group at a time, verifying its page checksums.

    For tables :func:`~rewardlab.sources.storage.write_table` wrote (e.g. ``rewardlab apply``'s rewards):
    Polars' reader does not verify checksums, so a flipped bit would
    otherwise read as a different value.  A file without checksums is only
    checked to decode.

    Raises
    ------
    DataFormatError
        The file is damaged (a checksum or a page that does not decode), naming it.

    Examples
    --------
    >>> verify_table("rewards.parquet")  # doctest: +SKIP
    """
    path = Path(path)
    key = _identity(path)
    if key in _VERIFIED_TABLES:
        return
    try:
        for _ in _row_groups(path):
            pass
    except (OSError, ValueError) as exc:  # pyarrow's errors
        raise damaged_error(path, exc, hint="Its bytes are not what was written: write it again (for a "
                       "rewards table, run `rewardlab apply` again) and remove the damaged one.") from exc
    _VERIFIED_TABLES.add(key)


#: Tables :func:`verify_table` verified in this process, by file identity (path, inode, size, mtime).
_VERIFIED_TABLES: set[tuple] = set()


def verify_ipc(path: Path, spec: FrameSpec | None = None) -> pl.DataFrame:
    """Read an Arrow IPC file (no checksums in the format): it decodes, no nulls; return its episodes.

    As :func:`verify_parquet`, for ``.arrow`` files.

    Examples
    --------
    >>> verify_ipc(Path("d.arrow")).columns  # doctest: +SKIP
    ['game_id', 'seat']
    """
    spec = _own_spec(path, spec, "ipc")
    checked = checked_columns(spec)
    lf = pl.scan_ipc(path)
    dtypes = lf.collect_schema()
    arrays = [name for name in checked if isinstance(dtypes[name], pl.Array)]
    counts = [pl.col(name).null_count().alias(f"outer {name}") for name in checked]
    counts += [pl.col(name).arr.explode().null_count().alias(f"inner {name}") for name in arrays]
    try:
        nulls = lf.select(counts).collect().row(0, named=True)
        ids = (lf.select(spec.episode).unique(maintain_order=True).collect() if spec.episode
               else pl.DataFrame())
    except (OSError, ValueError, pl.exceptions.PolarsError) as exc:
        raise damaged_error(path, exc) from exc
    for name in checked:  # an exploded null array counts once more: take the outer ones off
        outer = nulls[f"outer {name}"]
        refuse_nulls(path, name, outer_nulls(spec, name, outer), nulls.get(f"inner {name}", outer) - outer)
    return ids


def _episode_label(column: str) -> str:
    """How a message names an episode key column: ``game_id`` -> ``game``."""
    return column[:-3] if column.endswith("_id") and len(column) > 3 else column


def check_episodes_once(episodes: list[tuple[Path, pl.DataFrame]]) -> None:
    """Refuse an episode present in two files of one dataset: the same data is there twice.

    ``episodes``: per file, a frame of its episode key columns (kanachan:
    ``game_id`` and ``seat``; any number of rows per episode).  A dataset
    holds each episode once (kanachan: one seat's trajectory through one
    game); files that split a game between its seats are fine.
    """
    if len(episodes) < 2:
        return
    columns = episodes[0][1].columns
    keys = [e.select(pl.col(c).cast(pl.String) for c in columns).unique(maintain_order=True)
            for _, e in episodes]
    table = pl.concat([k.with_columns(_file=pl.lit(n, dtype=pl.UInt32)) for n, k in enumerate(keys)])
    shared = table.filter(pl.struct(columns).is_duplicated())
    if shared.height == 0:
        return
    first = shared.row(0, named=True)  # an episode of the earliest file that has one elsewhere
    files = shared.filter(pl.all_horizontal(pl.col(c) == first[c] for c in columns))["_file"]
    (a, _), (b, _) = episodes[files[0]], episodes[files[1]]
    both = keys[files[1]].join(keys[files[0]], on=columns, how="semi").height
    named = ", ".join(f"{_episode_label(c)} {first[c]}" for c in columns)
    raise DataFormatError(
        b, None, None, "episode_in_two_files",
        f"the episode of {named} is also in {a} ({both} of this "
        f"file's {keys[files[1]].height} episodes are); a dataset holds each episode once, so the same "
        "data is there twice (a copy, or one frame converted to both .parquet and .arrow)",
        hint="Remove the duplicate file, or load the files separately.")


def clear_verified_cache() -> None:
    """Forget every dataset file and table verified in this process: the next scan or check reads them again.

    :func:`verify_files` and :func:`verify_table` remember a file by its
    identity (real path, device, inode, size, time stamp); a test whose
    files are new calls this so that no identity lingers.

    Examples
    --------
    >>> clear_verified_cache()
    """
    _VERIFIED.clear()
    _VERIFIED_TABLES.clear()
