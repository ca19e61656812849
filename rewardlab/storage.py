"""Dataset file layouts: write the common frame to disk and read it back, eagerly or lazily.

A converted dataset is one ``.parquet`` or ``.arrow`` file, several of them, or
a folder of them, each holding the common frame (schema
:data:`rewardlab.schema.FRAME_SCHEMA`, possibly with extra columns such as
``reward_<name>`` after it).

Arrow IPC (``.arrow``) stores the frame as Polars does, with zstd.

Parquet (``.parquet``) stores every ``pl.Array`` column of the frame
(``grades``, ``sparse``, ``numeric``, ``progression``, ``candidates``,
``round_summary``, ``results``) as **FixedSizeBinary**: one value per row
holding the row's ``width`` numbers as little-endian bytes.  Polars decodes
Parquet's fixed-size-list columns element by element (under 1 M rows/s);
these binary columns decode as flat buffers, several times faster.  The file
says so in its key-value metadata: ``rewardlab.layout`` (:data:`LAYOUT`) and
``rewardlab.arrays`` (JSON: each array column's little-endian dtype and
width).  A plain ``pl.read_parquet`` of such a file therefore shows the array
columns as ``Binary``; :func:`rewardlab.load_kanachan` and
:func:`rewardlab.scan_kanachan` (through :func:`read_dataset` and
:func:`scan_dataset`) decode them.  A Parquet file without the marker, whose
array columns are ``pl.Array`` (what ``frame.write_parquet(path)`` writes),
still loads the way Polars reads it.

Examples
--------
>>> import tempfile, pathlib, polars as pl
>>> from rewardlab import storage
>>> from rewardlab.schema import FRAME_SCHEMA
>>> frame = pl.DataFrame(schema=FRAME_SCHEMA)  # an empty common frame
>>> with tempfile.TemporaryDirectory() as d:
...     path = pathlib.Path(d) / "empty.parquet"
...     storage.write_dataset(frame, path, kind="parquet")
...     print(storage.layout_of(path), storage.read_dataset(path).equals(frame))
fsb-1 True
"""

from __future__ import annotations

import json
import os
from pathlib import Path

import numpy as np
import polars as pl

from rewardlab import schema as S
from rewardlab._io import check_input
from rewardlab.errors import ColumnNotFoundError, DataFormatError, FrameError, ParameterError

__all__ = [
    "write_table",
    "verify_table",
    "DATASET_SUFFIXES",
    "LAYOUT",
    "PARQUET_COMPRESSION",
    "dataset_files",
    "is_dataset",
    "layout_of",
    "read_dataset",
    "scan_dataset",
    "verify_dataset",
    "write_dataset",
]

#: Suffixes of converted datasets: Parquet (portable) and Arrow IPC.
DATASET_SUFFIXES = {".parquet": "parquet", ".arrow": "ipc", ".ipc": "ipc", ".feather": "ipc"}

#: Value of the ``rewardlab.layout`` Parquet metadata key: array columns as FixedSizeBinary.
LAYOUT = "fsb-1"
LAYOUT_KEY = "rewardlab.layout"
ARRAYS_KEY = "rewardlab.arrays"

#: Parquet codec of :func:`write_dataset` (chosen by measurement, see its docstring).
PARQUET_COMPRESSION = "lz4"
PARQUET_ROW_GROUP = 65536

_LITTLE_ENDIAN = {
    pl.Int8: "<i1", pl.Int16: "<i2", pl.Int32: "<i4", pl.Int64: "<i8",
    pl.UInt8: "<u1", pl.UInt16: "<u2", pl.UInt32: "<u4", pl.UInt64: "<u8",
    pl.Float32: "<f4", pl.Float64: "<f8",
}

#: The frame's array columns: name -> (little-endian NumPy dtype string, width).
ARRAY_COLUMNS: dict[str, tuple[str, int]] = {
    name: (_LITTLE_ENDIAN[dtype.inner], dtype.size)
    for name, dtype in S.FRAME_SCHEMA.items() if isinstance(dtype, pl.Array)
}

_HINT = "Create datasets with `rewardlab convert` (or rewardlab.dataset.write_dataset)."
_DAMAGED_HINT = ("Its bytes are not what was written: convert the source files again (or restore "
                 "the file from a copy) and remove the damaged one.")
_EMPTY_HINT = ("The file is empty (a write that did not finish?): convert the source files again "
               "and remove it.")


def is_dataset(path: str | Path) -> bool:
    """True for a converted dataset: a ``.parquet`` / ``.arrow`` file, or a folder of them.

    Examples
    --------
    >>> is_dataset("d.parquet"), is_dataset("d.arrow"), is_dataset("d.tsv.gz")
    (True, True, False)
    """
    path = Path(path)
    if path.suffix in DATASET_SUFFIXES:
        return True
    return path.is_dir() and any(p.suffix in DATASET_SUFFIXES for p in path.iterdir())


def dataset_files(paths) -> tuple[list[Path], str]:
    """The dataset files named by ``paths`` (folders expanded, sorted) and their kind.

    Every file is checked with :func:`rewardlab._io.check_input` (a FIFO,
    device or unreadable file is refused before anything opens it).

    Parameters
    ----------
    paths : path or sequence of paths
        Dataset files or folders holding them, all of one kind.

    Returns
    -------
    files : list of Path
    kind : {"parquet", "ipc"}

    Examples
    --------
    >>> dataset_files(["a.parquet", "b.parquet"])  # doctest: +SKIP
    ([PosixPath('a.parquet'), PosixPath('b.parquet')], 'parquet')
    """
    paths = [Path(paths)] if isinstance(paths, (str, Path)) else [Path(p) for p in paths]
    files: list[Path] = []
    for p in paths:
        if p.suffix not in DATASET_SUFFIXES and p.exists() and not p.is_dir():
            raise ParameterError("paths", "should be .parquet or .arrow datasets, or folders of them",
                                 str(p))
        check_input(p, folder=True)
        if p.is_dir():
            try:
                inside = sorted(q for q in p.iterdir() if q.suffix in DATASET_SUFFIXES)
            except OSError as exc:
                raise DataFormatError(p, None, None, "unreadable_folder",
                                      f"the folder cannot be listed ({exc.strerror or exc})",
                                      hint="Check its permissions.") from None
            kinds = sorted({DATASET_SUFFIXES[q.suffix] for q in inside})
            if len(kinds) > 1:
                raise DataFormatError(p, None, None, "mixed_kinds",
                                      "the folder holds both Parquet and Arrow files "
                                      f"({', '.join(q.name for q in inside)}); a dataset is of one kind",
                                      hint="If they are the same data converted twice, keep one of them; "
                                      "otherwise put them in separate folders.")
            for q in inside:
                check_input(q)
            files.extend(inside)
        else:
            files.append(p)
    if not files:
        raise ParameterError("paths", "should name dataset files or folders holding them",
                             [str(p) for p in paths])
    kinds = {DATASET_SUFFIXES[f.suffix] for f in files}
    if len(kinds) > 1:
        raise ParameterError("paths", "should be datasets of one kind (all Parquet or all Arrow)",
                             [str(f) for f in files])
    return files, kinds.pop()


# ----------------------------------------------------------------------------
# Writing
# ----------------------------------------------------------------------------


def write_dataset(frame: pl.DataFrame, path: str | Path, *, kind: str = "parquet") -> None:
    """Write the common frame as a dataset file of ``kind`` ``"parquet"`` or ``"ipc"``.

    Not atomic by itself: public entry points (:func:`rewardlab.convert`)
    write to :func:`rewardlab._io.atomic_path` and pass the temporary path.

    Parquet: the array columns as little-endian FixedSizeBinary (see the
    module docstring), written with pyarrow; lz4, row groups of 65,536 rows
    (cheap lazy scans and slices), statistics on, dictionary encoding for the
    other columns only, a CRC-32 checksum in every page header (verified
    on read, see :func:`read_dataset` and :func:`verify_dataset`).  lz4
    was chosen over zstd by measurement (the 2 million tiled sample rows of
    ``python -m benchmarks loading``, 2 cores):
    lz4 loaded at 7-10 M rows/s with 47 bytes per row on disk, zstd at
    6.0-6.4 M rows/s with 26 bytes per row (the target is 5 M rows/s).  That
    data repeats the sample's games, so sizes on disk of real data will differ.
    A plain ``pl.read_parquet`` shows the array columns as ``Binary``; load
    the file with :func:`rewardlab.load_kanachan` or
    :func:`rewardlab.scan_kanachan`.

    Arrow IPC: as Polars writes it, zstd.

    Parameters
    ----------
    frame : polars.DataFrame
        The common frame (:data:`rewardlab.schema.FRAME_SCHEMA`, no nulls in
        the array columns); extra columns are written after it unchanged.
    path : path
        The file to write.
    kind : {"parquet", "ipc"}

    Examples
    --------
    >>> write_dataset(frame, "/tmp/d.parquet", kind="parquet")  # doctest: +SKIP
    >>> write_dataset(frame, "/tmp/d.arrow", kind="ipc")  # doctest: +SKIP
    """
    if kind not in ("parquet", "ipc"):
        raise ParameterError("kind", "should be 'parquet' or 'ipc'", kind)
    _check_frame(frame)
    if kind == "ipc":
        frame.write_ipc(path, compression="zstd")
        return
    import pyarrow.parquet as pq

    table = _to_fixed_size_binary(frame)
    scalars = [c for c in frame.columns if c not in ARRAY_COLUMNS]
    pq.write_table(table, path, compression=PARQUET_COMPRESSION, row_group_size=PARQUET_ROW_GROUP,
                   use_dictionary=scalars, write_statistics=True, write_page_checksum=True)


def _check_frame(frame: pl.DataFrame) -> None:
    if not isinstance(frame, pl.DataFrame):
        raise ParameterError("frame", "should be a polars DataFrame (the common frame)",
                             type(frame).__name__)
    for name, dtype in S.FRAME_SCHEMA.items():
        if name not in frame.columns:
            raise ColumnNotFoundError(name, frame.columns)
        if frame.schema[name] != dtype:
            raise FrameError(f"column {name!r} should be {dtype}, found {frame.schema[name]}",
                             hint="Write the frame rewardlab.load_kanachan() returns")


def _to_fixed_size_binary(frame: pl.DataFrame):
    """A pyarrow table of ``frame`` with the array columns as little-endian FixedSizeBinary."""
    import pyarrow as pa

    table = frame.drop(list(ARRAY_COLUMNS)).to_arrow()
    columns = {}
    for name in frame.columns:
        if name not in ARRAY_COLUMNS:
            columns[name] = table[name]
            continue
        dtype, width = ARRAY_COLUMNS[name]
        values = frame[name].to_numpy()  # (rows, width); floats when there are nulls
        if values.dtype != np.dtype(dtype).newbyteorder("="):
            raise FrameError(f"column {name!r} has null values; a dataset's array columns cannot",
                             hint="Drop or fill those rows first")
        data = np.ascontiguousarray(values.astype(dtype, copy=False))
        columns[name] = pa.FixedSizeBinaryArray.from_buffers(
            pa.binary(data.itemsize * width), len(data), [None, pa.py_buffer(data)])
    metadata = {LAYOUT_KEY: LAYOUT,
                ARRAYS_KEY: json.dumps({c: {"dtype": d, "width": w} for c, (d, w) in ARRAY_COLUMNS.items()})}
    return pa.table(columns).replace_schema_metadata(metadata)


# ----------------------------------------------------------------------------
# Reading
# ----------------------------------------------------------------------------


def layout_of(path: str | Path) -> str | None:
    """The ``rewardlab.layout`` marker of a Parquet file (:data:`LAYOUT`), or None without one.

    Reads only the file's footer.

    Examples
    --------
    >>> layout_of("data/d.parquet")  # doctest: +SKIP
    'fsb-1'
    """
    import pyarrow.parquet as pq

    metadata = _read_schema(Path(path), pq).metadata or {}
    value = metadata.get(LAYOUT_KEY.encode())
    return None if value is None else value.decode()


def _read_schema(path: Path, pq):
    try:
        return pq.read_schema(path)
    except (OSError, ValueError) as exc:  # ArrowInvalid is a ValueError
        raise DataFormatError(path, None, None, "not_parquet",
                              f"cannot be read as Parquet ({_one_line(exc)})",
                              hint=_EMPTY_HINT if _is_empty(path) else _DAMAGED_HINT) from exc


def _read_ipc_schema(path: Path):
    try:
        return pl.read_ipc_schema(path)
    except (OSError, ValueError, pl.exceptions.PolarsError) as exc:
        raise DataFormatError(path, None, None, "not_arrow",
                              f"cannot be read as an Arrow IPC file ({_one_line(exc)})",
                              hint=_EMPTY_HINT if _is_empty(path) else _DAMAGED_HINT) from exc


def _is_empty(path: Path) -> bool:
    try:
        return path.stat().st_size == 0
    except OSError:
        return False


def _one_line(exc: BaseException) -> str:
    """An exception's text on one line (pyarrow and Polars messages can span several)."""
    return " ".join(str(exc).split()) or type(exc).__name__


def _damaged(path: Path, exc: BaseException, *, hint: str = _DAMAGED_HINT) -> DataFormatError:
    return DataFormatError(path, None, None, "damaged_file",
                           f"the file is damaged or truncated ({_one_line(exc)}); no data was loaded",
                           hint=hint)


def _nulls(path: Path, name: str, outer: int, inner: int) -> None:
    """Refuse ``outer`` null values of column ``name``, or ``inner`` ones inside its arrays."""
    if outer or inner:
        raise DataFormatError(path, None, None, "null_values",
                              f"column {name!r} has {outer or inner} null values"
                              + ("" if outer else " inside its arrays"), hint=_HINT)


def _inspect_parquet(path: Path) -> tuple[list[str], bool]:
    """The file's columns and whether it has the FixedSizeBinary layout (checked against the schema)."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    schema = _read_schema(path, pq)
    _require_frame_columns(path, schema.names, "Parquet")
    metadata = schema.metadata or {}
    layout = metadata.get(LAYOUT_KEY.encode())
    dtypes = pl.from_arrow(schema.empty_table()).schema  # what Polars reads, before decoding
    _check_dtypes(path, dtypes, skip=ARRAY_COLUMNS if layout is not None else ())
    if layout is None:
        return schema.names, False
    if layout.decode() != LAYOUT:
        raise DataFormatError(path, None, None, "unknown_layout",
                              f"the file's layout {layout.decode()!r} is not {LAYOUT!r}, the one this "
                              "version reads", hint="Upgrade rewardlab, or convert the data again.")
    listed = _listed_arrays(path, metadata.get(ARRAYS_KEY.encode()))
    for name, (dtype, width) in ARRAY_COLUMNS.items():
        got = listed.get(name)
        if got != {"dtype": dtype, "width": width}:
            raise DataFormatError(path, None, None, "layout_mismatch",
                                  f"column {name!r}: the file's metadata lists {got}, the frame has "
                                  f"{{'dtype': {dtype!r}, 'width': {width}}}", hint=_HINT)
        stored = schema.field(name).type
        size = np.dtype(dtype).itemsize * width
        if not pa.types.is_fixed_size_binary(stored) or stored.byte_width != size:
            raise DataFormatError(path, None, None, "layout_mismatch",
                                  f"column {name!r} is stored as {stored}, should be "
                                  f"fixed_size_binary[{size}] ({width} x {dtype})", hint=_HINT)
    return schema.names, True


def _listed_arrays(path: Path, raw: bytes | None) -> dict:
    try:
        listed = json.loads(raw) if raw is not None else None
    except ValueError:
        listed = None
    if not isinstance(listed, dict):
        raise DataFormatError(path, None, None, "layout_mismatch",
                              f"the {ARRAYS_KEY!r} metadata should be a JSON object, found {raw!r}",
                              hint=_HINT)
    return listed


def _check_dtypes(path: Path, dtypes, *, skip=()) -> None:
    for name, dtype in S.FRAME_SCHEMA.items():
        if name not in skip and dtypes[name] != dtype:
            raise DataFormatError(path, None, None, "wrong_dtype",
                                  f"column {name!r} is {dtypes[name]}, should be {dtype}", hint=_HINT)


def _require_frame_columns(path: Path, names: list[str], what: str) -> None:
    missing = [c for c in S.FRAME_SCHEMA if c not in names]
    if missing:
        raise DataFormatError(path, None, None, "not_a_dataset",
                              f"the {what} file lacks columns {missing}", hint=_HINT)


def _inspect(files: list[Path], kind: str) -> list[bool]:
    """Check every file is a dataset (columns, dtypes, layout) with the first file's columns.

    Returns, per file, whether it has the FixedSizeBinary layout.  Reads only footers / schemas.
    """
    layouts, first = [], None
    for path in files:
        if kind == "parquet":
            names, fsb = _inspect_parquet(path)
        else:
            dtypes, fsb = _read_ipc_schema(path), False
            names = list(dtypes)
            _require_frame_columns(path, names, "Arrow")
            _check_dtypes(path, dtypes)
        if first is not None and names != first[1]:
            raise DataFormatError(path, None, None, "mixed_columns",
                                  f"the file's columns {names} differ from those of {first[0]} "
                                  f"{first[1]}", hint="Load files of one dataset together.")
        first = first or (path, names)
        layouts.append(fsb)
    return layouts


def _ordered(frame):
    """``frame`` (eager or lazy) with the frame's columns first, in schema order, then the others."""
    names = frame.collect_schema().names()
    return frame.select(*S.FRAME_SCHEMA, *(c for c in names if c not in S.FRAME_SCHEMA))


def read_dataset(paths) -> pl.DataFrame:
    """Read converted datasets into one frame (files concatenated in order).

    Parquet files of the FixedSizeBinary layout are read with pyarrow,
    verifying every page's checksum, and their array columns rebuilt
    without copying; other Parquet and Arrow files are read by Polars.

    Refused with a :class:`~rewardlab.errors.DataFormatError` naming the
    file: a file that is not a dataset, empty, truncated or damaged (a page
    whose checksum does not match), nulls in a column of the frame (inside
    the arrays too), and an episode (game and seat) present in two files (the same data twice,
    e.g. a copy, or one frame as ``.parquet`` and ``.arrow``).

    Parameters
    ----------
    paths : path or sequence of paths
        ``.parquet`` or ``.arrow`` files, or folders of them (one kind).

    Returns
    -------
    polars.DataFrame
        Schema :data:`rewardlab.schema.FRAME_SCHEMA`, in that column order,
        then any extra columns the files hold.

    Examples
    --------
    >>> frame = read_dataset("data/sample.parquet")  # doctest: +SKIP
    """
    files, kind = dataset_files(paths)
    layouts = _inspect(files, kind)
    frames = []
    for path, fsb in zip(files, layouts):
        frame = _ordered(_read_one(path, kind, fsb))
        _check_nulls(path, frame)
        frames.append(frame)
    _check_episodes_once([(path, frame.select(S.GAME_ID, S.SEAT)) for path, frame in zip(files, frames)])
    return pl.concat(frames, how="vertical", rechunk=False) if len(frames) > 1 else frames[0]


def _read_one(path: Path, kind: str, fsb: bool) -> pl.DataFrame:
    try:
        if fsb:
            return _read_fsb(path)
        if kind == "ipc":
            return pl.scan_ipc(path).collect()
        return pl.read_parquet(path)
    except DataFormatError:
        raise
    except (OSError, ValueError, pl.exceptions.PolarsError) as exc:  # pyarrow raises OSError / ValueError
        raise _damaged(path, exc) from exc


def _check_nulls(path: Path, frame: pl.DataFrame) -> None:
    """Refuse nulls in the frame's columns: whole values, and elements inside the array columns."""
    for name in S.FRAME_SCHEMA:
        series = frame.get_column(name)
        outer = series.null_count()
        inner = 0 if outer or name not in ARRAY_COLUMNS else sum(
            chunk.to_arrow().flatten().null_count for chunk in series.get_chunks())
        _nulls(path, name, outer, inner)


def _check_episodes_once(episodes: list[tuple[Path, pl.DataFrame]]) -> None:
    """Refuse an episode present in two files of one dataset: the same data is there twice.

    ``episodes``: per file, a frame of its ``game_id`` and ``seat`` (any
    number of rows per episode).  An episode is one seat's trajectory
    through one game, which a dataset holds once; files that split a game
    between its seats are fine.
    """
    if len(episodes) < 2:
        return
    keys = [pl.DataFrame({"game": e[S.GAME_ID].cast(pl.String), "seat": e[S.SEAT]})
            .unique(maintain_order=True) for _, e in episodes]
    table = pl.concat([k.with_columns(file=pl.lit(n, dtype=pl.UInt32)) for n, k in enumerate(keys)])
    shared = table.filter(pl.struct("game", "seat").is_duplicated())
    if shared.height == 0:
        return
    first = shared.row(0, named=True)  # an episode of the earliest file that has one elsewhere
    files = shared.filter((pl.col("game") == first["game"]) & (pl.col("seat") == first["seat"]))["file"]
    (a, _), (b, _) = episodes[files[0]], episodes[files[1]]
    both = keys[files[1]].join(keys[files[0]], on=["game", "seat"], how="semi").height
    raise DataFormatError(
        b, None, None, "episode_in_two_files",
        f"the episode of game {first['game']}, seat {first['seat']} is also in {a} ({both} of this "
        f"file's {keys[files[1]].height} episodes are); a dataset holds each episode once, so the same "
        "data is there twice (a copy, or one frame converted to both .parquet and .arrow)",
        hint="Remove the duplicate file, or load the files separately.")


def _read_fsb(path: Path) -> pl.DataFrame:
    import pyarrow as pa
    import pyarrow.parquet as pq

    table = pq.read_table(path, page_checksum_verification=True)
    columns = {}
    for name in table.column_names:
        column = table[name]
        if name in ARRAY_COLUMNS:
            dtype, width = ARRAY_COLUMNS[name]
            chunks = [_fixed_size_list(chunk, np.dtype(dtype), width, path, name)
                      for chunk in column.chunks]
            value_type = pa.from_numpy_dtype(np.dtype(dtype).newbyteorder("="))
            column = pa.chunked_array(chunks, type=pa.list_(value_type, width))
        columns[name] = column
    # One chunk per row group, like the chunks of an Arrow IPC load; rechunking would copy every column.
    return pl.from_arrow(pa.table(columns), rechunk=False)


def _fixed_size_list(chunk, dtype: np.dtype, width: int, path: Path, name: str):
    """A FixedSizeBinary chunk as a fixed-size list of ``dtype`` (no copy on little-endian hosts)."""
    import pyarrow as pa

    _nulls(path, name, chunk.null_count, 0)
    n = len(chunk) * width
    data = chunk.buffers()[1]
    values = (np.frombuffer(data, dtype=dtype, count=n, offset=chunk.offset * width * dtype.itemsize)
              if n else np.empty(0, dtype=dtype))
    values = values.astype(dtype.newbyteorder("="), copy=False)  # a no-op on little-endian hosts
    return pa.FixedSizeListArray.from_arrays(pa.array(values), width)


def scan_dataset(paths) -> pl.LazyFrame:
    """Scan converted datasets lazily (files concatenated in order).

    Filters and projections are pushed into the scan: only the columns
    selected are read and decoded (``bin.reinterpret`` for the array columns
    of the FixedSizeBinary layout).  Before the first scan of a file in a
    process, :func:`verify_dataset` reads the whole file once (page
    checksums, nulls, episodes in two files), since Polars' scan verifies
    nothing; that costs about one eager load per file, once.

    Parameters
    ----------
    paths : path or sequence of paths
        ``.parquet`` or ``.arrow`` files, or folders of them (one kind).

    Returns
    -------
    polars.LazyFrame
        Schema :data:`rewardlab.schema.FRAME_SCHEMA`, in that column order,
        then any extra columns the files hold.

    Examples
    --------
    >>> lf = scan_dataset("data/sample.parquet")  # doctest: +SKIP
    >>> lf.filter(pl.col("end_of_game")).select("seat", "results").collect()  # doctest: +SKIP
    """
    files, kind = dataset_files(paths)
    layouts = _inspect(files, kind)
    _verify(files, kind)
    if kind == "ipc":
        return _ordered(pl.scan_ipc(files))
    groups: list[tuple[bool, list[Path]]] = []  # runs of files of one layout, in order
    for path, fsb in zip(files, layouts):
        if groups and groups[-1][0] == fsb:
            groups[-1][1].append(path)
        else:
            groups.append((fsb, [path]))
    frames = [_ordered(_decode_lazy(pl.scan_parquet(group)) if fsb else pl.scan_parquet(group))
              for fsb, group in groups]
    return pl.concat(frames, how="vertical") if len(frames) > 1 else frames[0]


def verify_dataset(paths, *, cached: bool = True) -> None:
    """Read every file of a dataset once and check it, without keeping the data.

    The checks of :func:`read_dataset`: each Parquet page's checksum (files
    :func:`write_dataset` wrote carry one), that every page decodes, no
    nulls in the frame's columns (inside the arrays too), no episode (game and seat) in two
    files.  Reads one row group (Parquet) at a time, so memory stays small.
    :func:`scan_dataset` calls it, because Polars' own Parquet reader, which
    the lazy scan uses, does not verify page checksums.  A file verified
    once is not read again in the same process while its size, time stamp
    and inode stay the same (``cached=False`` reads it again).

    Raises
    ------
    DataFormatError
        Naming the file, as :func:`read_dataset` does.

    Examples
    --------
    >>> verify_dataset("data/sample.parquet")  # doctest: +SKIP
    """
    files, kind = dataset_files(paths)
    _inspect(files, kind)
    _verify(files, kind, cached=cached)


#: Files verified in this process: (real path, device, inode, size, mtime) -> its (game_id, seat) pairs.
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


def _verify(files: list[Path], kind: str, *, cached: bool = True) -> None:
    games = []
    for path in files:
        key = _identity(path)
        if key not in _VERIFIED or not cached:
            _VERIFIED[key] = _verify_parquet(path) if kind == "parquet" else _verify_ipc(path)
        games.append((path, _VERIFIED[key]))
    _check_episodes_once(games)


def _verify_parquet(path: Path) -> pl.DataFrame:
    """Read a Parquet file a row group at a time (checksums verified); return its episodes."""
    import pyarrow as pa

    ids = []
    try:
        for table in _row_groups(path):
            for name in S.FRAME_SCHEMA:
                column = table[name]
                outer = column.null_count
                inner = 0 if outer or name not in ARRAY_COLUMNS or pa.types.is_fixed_size_binary(
                    column.type) else sum(chunk.flatten().null_count for chunk in column.chunks)
                _nulls(path, name, outer, inner)
            ids.append(pl.from_arrow(table.select([S.GAME_ID, S.SEAT])).unique(maintain_order=True))
    except DataFormatError:
        raise
    except (OSError, ValueError) as exc:  # pyarrow's errors
        raise _damaged(path, exc) from exc
    if not ids:
        return pl.DataFrame(schema={S.GAME_ID: pl.String, S.SEAT: pl.UInt8})
    return pl.concat(ids).unique(maintain_order=True)


def write_table(frame: pl.DataFrame, path: str | Path, *, compression: str = "zstd") -> None:
    """Write a plain table (a rewards table, not a dataset) as Parquet with a checksum in every page.

    Column types are kept as they are (Float16 rewards stay float16); use
    :func:`rewardlab._io.atomic_path` around it for an atomic write.
    :func:`verify_table` checks the checksums when the table is read back.

    Examples
    --------
    >>> write_table(rewards, "rewards.parquet")  # doctest: +SKIP
    """
    import pyarrow.parquet as pq

    pq.write_table(frame.to_arrow(), str(path), compression=compression, write_statistics=True,
                   write_page_checksum=True)


def verify_table(path: str | Path) -> None:
    """Read a Parquet table once, a row group at a time, verifying its page checksums.

    For tables :func:`write_table` wrote (e.g. ``rewardlab apply``'s rewards):
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
        raise _damaged(path, exc, hint="Its bytes are not what was written: write it again (for a "
                       "rewards table, run `rewardlab apply` again) and remove the damaged one.") from exc
    _VERIFIED_TABLES.add(key)


#: Tables :func:`verify_table` verified in this process, by file identity (path, inode, size, mtime).
_VERIFIED_TABLES: set[tuple] = set()


def _verify_ipc(path: Path) -> pl.DataFrame:
    """Read an Arrow IPC file (no checksums in the format): it decodes, no nulls; return its episodes."""
    lf = pl.scan_ipc(path)
    counts = [pl.col(name).null_count().alias(f"outer {name}") for name in S.FRAME_SCHEMA]
    counts += [pl.col(name).arr.explode().null_count().alias(f"inner {name}") for name in ARRAY_COLUMNS]
    try:
        nulls = lf.select(counts).collect().row(0, named=True)
        ids = lf.select(S.GAME_ID, S.SEAT).unique(maintain_order=True).collect()
    except (OSError, ValueError, pl.exceptions.PolarsError) as exc:
        raise _damaged(path, exc) from exc
    for name in S.FRAME_SCHEMA:  # an exploded null array counts once more: take the outer ones off
        outer = nulls[f"outer {name}"]
        _nulls(path, name, outer, nulls.get(f"inner {name}", 0) - outer)
    return ids


def _decode_lazy(lf: pl.LazyFrame) -> pl.LazyFrame:
    return lf.with_columns(
        pl.col(name).bin.reinterpret(dtype=S.FRAME_SCHEMA[name], endianness="little")
        for name in ARRAY_COLUMNS
    )
