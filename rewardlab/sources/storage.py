"""Dataset file layouts: write a frame to disk with its spec and read it back, eagerly or lazily.

A converted dataset is one ``.parquet`` or ``.arrow`` file, several of them, or
a folder of them, each holding a frame of any source together with its
:class:`~rewardlab.core.spec.FrameSpec`: the spec's JSON is stored under
:data:`rewardlab.core.spec.SPEC_KEY` in the file's key-value metadata, and
:func:`read_dataset` / :func:`scan_dataset` attach it to what they return.
Files written before rewardlab stored a spec hold kanachan frames
(:data:`rewardlab.sources.kanachan.schema.KANACHAN_SPEC`, schema
:data:`rewardlab.sources.kanachan.schema.FRAME_SCHEMA`, possibly with extra columns such as
``reward_<name>`` after it).

Arrow IPC (``.arrow``) stores the frame as Polars holds it, with zstd.

Parquet (``.parquet``) stores every fixed-width ``pl.Array`` column of
numbers (kanachan's ``grades``, ``sparse``, ``numeric``, ``progression``,
``candidates``, ``round_summary``, ``results``; any source's state columns)
as **FixedSizeBinary**: one value per row
holding the row's ``width`` numbers as little-endian bytes.  Polars decodes
Parquet's fixed-size-list columns element by element (under 1 M rows/s);
these binary columns decode as flat buffers, several times faster.  The file
says so in its key-value metadata: ``rewardlab.layout`` (:data:`LAYOUT`) and
``rewardlab.arrays`` (JSON: each array column's little-endian dtype and
width).  A plain ``pl.read_parquet`` of such a file therefore shows the array
columns as ``Binary``; :func:`rewardlab.load` and :func:`rewardlab.scan`
(through :func:`read_dataset` and :func:`scan_dataset`) decode them.  A
Parquet file without the marker, whose array columns are ``pl.Array`` (what
``frame.write_parquet(path)`` writes), still loads the way Polars reads it.

Examples
--------
>>> import tempfile, pathlib, polars as pl
>>> from rewardlab.sources import storage
>>> from rewardlab.sources.kanachan.schema import FRAME_SCHEMA
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
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import polars as pl

from rewardlab.sources.kanachan import schema as S
from rewardlab.core.files import check_input
from rewardlab.core.spec import DECLARE_HINT, SPEC_KEY, FrameSpec, attach, attached
from rewardlab.core.errors import ColumnNotFoundError, DataFormatError, FrameError, ParameterError, SpecError
from rewardlab.sources.registry import format_remedy, looks_like

__all__ = [
    "write_table",
    "verify_table",
    "read_part",
    "file_metadata",
    "file_columns",
    "DATASET_SUFFIXES",
    "LAYOUT",
    "PARQUET_COMPRESSION",
    "dataset_files",
    "is_dataset",
    "layout_of",
    "row_group_ends",
    "read_dataset",
    "scan_dataset",
    "verify_dataset",
    "write_dataset",
    "dataset_spec",
    "read_spec",
    "has_rewardlab_metadata",
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
_NOT_OURS_HINT = ("Only files with rewardlab's metadata (written by `rewardlab convert`) and plain files holding "
                  "every column of a kanachan frame are datasets. A table of steps with columns of your own is the "
                  "steps format: name it and its columns, --format steps --option episode=COLUMN on the command "
                  "line, format=\"steps\", episode=\"COLUMN\" in Python (rewardlab.load_steps); the steps format "
                  "reads Parquet, CSV and JSON lines.")
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

    Every file is checked with :func:`rewardlab.core.files.check_input` (a FIFO,
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
                                 str(p), hint=_looks_hint(p))
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
# The spec a dataset is written with, and which dtypes it promises
# ----------------------------------------------------------------------------


def dataset_spec(frame, spec: FrameSpec | None = None) -> FrameSpec:
    """The spec a dataset file of ``frame`` is written with.

    In order: ``spec`` when given; the spec attached to ``frame``
    (:func:`rewardlab.core.spec.attached`); the kanachan spec when the frame
    holds kanachan's episode columns (``game_id``, ``seat``; a kanachan frame
    that went through ``with_columns``).  Otherwise a
    :class:`~rewardlab.core.errors.SpecError` saying how to declare one.

    Examples
    --------
    >>> import polars as pl
    >>> dataset_spec(pl.DataFrame({"game_id": ["a"], "seat": [0]})).name
    'kanachan'
    """
    if spec is not None:
        if not isinstance(spec, FrameSpec):
            raise ParameterError("spec", "should be a rewardlab.FrameSpec", type(spec).__name__)
        return spec
    found = attached(frame)
    if found is not None:
        return found
    names = frame.collect_schema().names() if isinstance(frame, pl.LazyFrame) else frame.columns
    if S.KANACHAN_SPEC.matches(names):
        return S.KANACHAN_SPEC
    raise SpecError("the frame has no spec, so the dataset could not say where its episodes are "
                    f"(columns: {', '.join(names[:12])}{', ...' if len(names) > 12 else ''})",
                    hint=DECLARE_HINT)


def _exact_schema(spec: FrameSpec) -> dict | None:
    """The full schema a spec's frames have, where rewardlab knows it (kanachan's frame); else None."""
    return S.FRAME_SCHEMA if spec == S.KANACHAN_SPEC else None


def _checked_columns(spec: FrameSpec) -> tuple[str, ...]:
    """The columns a dataset of ``spec`` must hold without nulls (final-state columns: no null inside a value)."""
    exact = _exact_schema(spec)
    return tuple(exact) if exact is not None else spec.required


def _outer_nulls(spec: FrameSpec, name: str, count: int) -> int:
    """The null values that count against column ``name``: none for a final-state column, null off the
    episodes' last rows and where the data lacks the final state (``FrameSpec.validate`` checks where)."""
    return 0 if name in spec.final_names else count


def _array_layout(schema) -> dict[str, tuple[str, int]]:
    """Every fixed-width array column of numbers: name -> (little-endian NumPy dtype, width)."""
    return {name: (_LITTLE_ENDIAN[dtype.inner.base_type()], dtype.size)
            for name, dtype in schema.items()
            if isinstance(dtype, pl.Array) and dtype.inner.base_type() in _LITTLE_ENDIAN}


def _polars_array(dtype: str, width: int) -> pl.DataType:
    inner = next(k for k, v in _LITTLE_ENDIAN.items() if v == dtype)
    return pl.Array(inner, width)


# ----------------------------------------------------------------------------
# Writing
# ----------------------------------------------------------------------------


def write_dataset(frame: pl.DataFrame, path: str | Path, *, kind: str = "parquet",
                  spec: FrameSpec | None = None, metadata: dict[str, str] | None = None) -> None:
    """Write a frame as a dataset file of ``kind`` ``"parquet"`` or ``"ipc"``, its spec in the metadata.

    Not atomic by itself: public entry points (:func:`rewardlab.convert`)
    write to :func:`rewardlab.core.files.atomic_path` and pass the temporary path.

    The frame's spec (see :func:`dataset_spec`) is stored as JSON under
    :data:`rewardlab.core.spec.SPEC_KEY` in the file's metadata;
    :func:`read_dataset` and :func:`scan_dataset` attach it to what they
    return.  The frame must hold the spec's columns (a kanachan frame: every
    column of :data:`rewardlab.sources.kanachan.schema.FRAME_SCHEMA`, with its dtype).

    Parquet: every fixed-width array column of numbers (kanachan's
    ``sparse``, ``progression``, ...; any source's state columns) as
    little-endian FixedSizeBinary (see the module docstring), written with
    pyarrow; lz4, row groups of 65,536 rows (cheap lazy scans and slices),
    statistics on, dictionary encoding for the other columns only, a CRC-32
    checksum in every page header (verified on read, see
    :func:`read_dataset` and :func:`verify_dataset`).  lz4 was chosen over
    zstd by measurement (the 2 million tiled sample rows of
    ``python -m benchmarks loading``, 2 cores): lz4 loaded at 7-10 M rows/s
    with 47 bytes per row on disk, zstd at 6.0-6.4 M rows/s with 26 bytes
    per row (the target is 5 M rows/s).  That data repeats the sample's
    games, so sizes on disk of real data will differ.  A plain
    ``pl.read_parquet`` shows the array columns as ``Binary``; load the file
    with :func:`rewardlab.load` (or :func:`rewardlab.load_kanachan`).

    Arrow IPC: the columns as Polars holds them, zstd, written with pyarrow
    (to carry the metadata).

    Parameters
    ----------
    frame : polars.DataFrame
        The frame (no nulls in the spec's columns); extra columns are written
        after it unchanged.
    path : path
        The file to write.
    kind : {"parquet", "ipc"}
    spec : FrameSpec, optional
        The frame's spec (default: :func:`dataset_spec`).
    metadata : dict of str to str, optional
        More key-value metadata for the file's footer (a part of a dataset
        folder records which dataset and which part it is).

    Examples
    --------
    >>> write_dataset(frame, "/tmp/d.parquet", kind="parquet")  # doctest: +SKIP
    >>> write_dataset(frame, "/tmp/d.arrow", kind="ipc")  # doctest: +SKIP
    """
    if kind not in ("parquet", "ipc"):
        raise ParameterError("kind", "should be 'parquet' or 'ipc'", kind)
    if not isinstance(frame, pl.DataFrame):
        raise ParameterError("frame", "should be a polars DataFrame (the common frame)",
                             type(frame).__name__)
    spec = dataset_spec(frame, spec)
    _check_frame(frame, spec)
    if kind == "ipc":
        import pyarrow as pa

        # Polars' own string/categorical layout (no conversion on read) and record batches of
        # PARQUET_ROW_GROUP rows (Polars decodes them in parallel; one big batch reads 2x slower)
        table = frame.to_arrow(compat_level=pl.CompatLevel.newest()).replace_schema_metadata(
            {**(metadata or {}), SPEC_KEY: spec.to_json()})
        with pa.ipc.new_file(str(path), table.schema,
                             options=pa.ipc.IpcWriteOptions(compression="zstd",
                                                             unify_dictionaries=True)) as writer:
            writer.write_table(table, max_chunksize=PARQUET_ROW_GROUP)
        return
    import pyarrow.parquet as pq

    table = _to_fixed_size_binary(frame, spec)
    if metadata:
        table = table.replace_schema_metadata({**metadata, **table.schema.metadata})
    arrays = _array_layout(frame.schema)
    scalars = [c for c in frame.columns if c not in arrays]
    pq.write_table(table, path, compression=PARQUET_COMPRESSION, row_group_size=PARQUET_ROW_GROUP,
                   use_dictionary=scalars, write_statistics=True, write_page_checksum=True)


def _check_frame(frame: pl.DataFrame, spec: FrameSpec) -> None:
    exact = _exact_schema(spec)
    if exact is None:
        spec.check_columns(frame)
        for s in spec.states:
            want = s.polars_dtype
            if frame.schema[s.name] != want:
                raise SpecError(f"the state should be {want}, found {frame.schema[s.name]}", column=s.name)
        return
    for name, dtype in exact.items():
        if name not in frame.columns:
            raise ColumnNotFoundError(name, frame.columns)
        if frame.schema[name] != dtype:
            raise FrameError(f"column {name!r} should be {dtype}, found {frame.schema[name]}",
                             hint="Write the frame rewardlab.load_kanachan() returns")


def _to_fixed_size_binary(frame: pl.DataFrame, spec: FrameSpec | None = None):
    """A pyarrow table of ``frame`` with its array columns as little-endian FixedSizeBinary."""
    import pyarrow as pa

    spec = dataset_spec(frame, spec)
    arrays = _array_layout(frame.schema)
    nullable = set(spec.final_names)
    table = frame.drop(list(arrays)).to_arrow()
    columns = {}
    for name in frame.columns:
        if name not in arrays:
            columns[name] = table[name]
            continue
        dtype, width = arrays[name]
        series = frame.get_column(name)
        validity = None
        if name in nullable and series.null_count():  # a final-state column: null off the episodes' ends
            held = series.is_not_null().to_numpy()
            values = np.zeros((series.len(), width), dtype=np.dtype(dtype).newbyteorder("="))
            values[held] = series.filter(pl.Series(held)).to_numpy()
            validity = pa.py_buffer(np.packbits(held, bitorder="little"))
            series = series.filter(pl.Series(held))
        else:
            values = series.to_numpy()  # (rows, width); floats when there are nulls
        if values.dtype != np.dtype(dtype).newbyteorder("=") or (
                values.dtype.kind == "f" and (series.null_count() or series.arr.explode().null_count())):
            raise FrameError(f"column {name!r} has null values; a dataset's array columns cannot",
                             hint="Drop or fill those rows first")
        data = np.ascontiguousarray(values.astype(dtype, copy=False))
        columns[name] = pa.FixedSizeBinaryArray.from_buffers(
            pa.binary(data.itemsize * width), len(data), [validity, pa.py_buffer(data)])
    metadata = {LAYOUT_KEY: LAYOUT, SPEC_KEY: spec.to_json(),
                ARRAYS_KEY: json.dumps({c: {"dtype": d, "width": w} for c, (d, w) in arrays.items()})}
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


def row_group_ends(path: str | Path) -> list[int]:
    """The cumulative row counts of a Parquet file's row groups (its footer only): row ``r`` is in row
    group ``bisect_right(ends, r)``.

    Examples
    --------
    >>> row_group_ends("d.parquet")  # doctest: +SKIP
    [65536, 131072, 150000]
    """
    import pyarrow.parquet as pq

    meta = pq.ParquetFile(str(path)).metadata
    ends, total = [], 0
    for i in range(meta.num_row_groups):
        total += meta.row_group(i).num_rows
        ends.append(total)
    return ends


def _footer_schema(path: str | Path):
    """A Parquet or Arrow IPC file's pyarrow schema (its footer only), by its magic bytes; None for other files
    and footers that cannot be read."""
    try:
        with open(path, "rb") as f:
            magic = f.read(6)
    except OSError:
        return None
    try:
        if magic[:4] == b"PAR1":
            import pyarrow.parquet as pq

            return pq.read_schema(path)
        if magic == b"ARROW1":
            import pyarrow as pa

            with pa.memory_map(str(path)) as source:
                return pa.ipc.open_file(source).schema
    except (OSError, ValueError):  # pyarrow's errors: not a readable footer
        return None
    return None


def file_metadata(path: str | Path) -> dict[bytes, bytes]:
    """A Parquet or Arrow IPC file's key-value metadata (its footer only); {} for other files."""
    schema = _footer_schema(path)
    return {} if schema is None else dict(schema.metadata or {})


def file_columns(path: str | Path) -> tuple[str, ...] | None:
    """A Parquet or Arrow IPC file's column names (its footer only); None for other files.

    Examples
    --------
    >>> file_columns("data/gym/cartpole_random.parquet")[:3], file_columns("data/sample.tsv.gz")
    (('episode_id', 't', 'obs'), None)
    """
    path = Path(path)
    schema = _footer_schema(path) if path.is_file() else None
    return None if schema is None else tuple(schema.names)


def has_rewardlab_metadata(path: str | Path) -> bool:
    """True when ``path`` is a Parquet or Arrow file rewardlab wrote (it has a layout or a spec).

    Reads only the first bytes and the footer; any other file gives False.

    Examples
    --------
    >>> has_rewardlab_metadata("data/sample.tsv.gz")
    False
    """
    path = Path(path)
    if not path.is_file():
        return False
    metadata = file_metadata(path)
    return LAYOUT_KEY.encode() in metadata or SPEC_KEY.encode() in metadata


def read_spec(path: str | Path) -> FrameSpec | None:
    """The spec stored in a Parquet or Arrow file's metadata, or None when it has none.

    Raises :class:`~rewardlab.core.errors.DataFormatError` (rule ``bad_spec``)
    naming the file when the stored spec cannot be read.

    Examples
    --------
    >>> read_spec("data/sample.parquet").name  # doctest: +SKIP
    'kanachan'
    """
    path = Path(path)
    return _stored_spec(path, file_metadata(path))


def _stored_spec(path: Path, metadata: dict) -> FrameSpec | None:
    raw = metadata.get(SPEC_KEY.encode())
    if raw is None:
        return None
    try:
        return FrameSpec.from_json(raw.decode("utf-8", "replace"))
    except (ParameterError, TypeError) as exc:
        raise DataFormatError(path, None, None, "bad_spec",
                              f"the spec stored in the file's metadata cannot be read ({exc})",
                              hint="Write the dataset again with this version of rewardlab.") from None


def _read_schema(path: Path, pq):
    try:
        return pq.read_schema(path)
    except (OSError, ValueError) as exc:  # ArrowInvalid is a ValueError
        raise DataFormatError(path, None, None, "not_parquet",
                              f"cannot be read as Parquet ({_one_line(exc)})",
                              hint=_EMPTY_HINT if _is_empty(path) else _DAMAGED_HINT) from exc


def _read_ipc_schema(path: Path):
    """The Arrow IPC file's Polars schema and its key-value metadata."""
    try:
        dtypes = pl.read_ipc_schema(path)
        import pyarrow as pa

        with pa.memory_map(str(path)) as source:
            metadata = dict(pa.ipc.open_file(source).schema.metadata or {})
        return dtypes, metadata
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



@dataclass(frozen=True)
class _FileInfo:
    """What a dataset file's footer says: columns, spec, and its FixedSizeBinary columns (if any)."""

    names: tuple[str, ...]
    spec: FrameSpec
    fsb: bool
    arrays: tuple[tuple[str, str, int], ...] = ()  # (name, little-endian dtype, width) stored as binary

    @property
    def decoded(self) -> dict[str, pl.DataType]:
        return {name: _polars_array(dtype, width) for name, dtype, width in self.arrays}


def _file_spec(path: Path, metadata: dict, spec: FrameSpec | None) -> tuple[FrameSpec, bool]:
    """The spec a file is read with (``spec``, else the stored one, else kanachan's) and whether it was stored."""
    if spec is not None:
        return spec, True
    stored = _stored_spec(path, metadata)
    return (stored, True) if stored is not None else (S.KANACHAN_SPEC, False)


def _check_spec_fits(path: Path, spec: FrameSpec, dtypes: dict) -> None:
    """A spec (stored or given) that does not fit the file's columns: a SpecError naming the column."""
    try:
        spec.check_columns(dtypes)
    except SpecError as exc:
        raise SpecError(f"{path}: the dataset's {spec.name} spec does not fit its columns: {exc.message}",
                        column=exc.column, hint="Write the dataset again from its source, or pass the "
                        "spec that describes it as spec=") from None
    for s in spec.states:
        if dtypes[s.name] != s.polars_dtype:
            raise SpecError(f"{path}: the dataset's {spec.name} spec says {s.polars_dtype}, the file "
                            f"holds {dtypes[s.name]}", column=s.name)


def _inspect_parquet(path: Path, spec: FrameSpec | None = None) -> _FileInfo:
    """The file's columns, spec and FixedSizeBinary layout (checked against the schema)."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    schema = _read_schema(path, pq)
    metadata = schema.metadata or {}
    spec, declared = _file_spec(path, metadata, spec)
    exact = _exact_schema(spec)
    if not declared or exact is not None:
        _require_frame_columns(path, schema.names, "Parquet", exact or spec.required, plain=not declared)
    layout = metadata.get(LAYOUT_KEY.encode())
    dtypes = dict(pl.from_arrow(schema.empty_table()).schema)  # what Polars reads, before decoding
    listed = {} if layout is None else _listed_arrays(path, metadata.get(ARRAYS_KEY.encode()))
    if exact is not None:
        _check_dtypes(path, dtypes, exact, skip=listed)
    if layout is None:
        if exact is None:
            _check_spec_fits(path, spec, dtypes)
        return _FileInfo(tuple(schema.names), spec, False)
    if layout.decode() != LAYOUT:
        raise DataFormatError(path, None, None, "unknown_layout",
                              f"the file's layout {layout.decode()!r} is not {LAYOUT!r}, the one this "
                              "version reads", hint="Upgrade rewardlab, or convert the data again.")
    # kanachan's frame promises its array layout; another spec is checked on the decoded columns below
    expected = _array_layout(exact) if exact is not None else {}
    arrays = []
    for name in dict.fromkeys([*expected, *listed]):
        got = listed.get(name)
        if name in expected:
            dtype, width = expected[name]
            if got != {"dtype": dtype, "width": width}:
                raise DataFormatError(path, None, None, "layout_mismatch",
                                      f"column {name!r}: the file's metadata lists {got}, the frame has "
                                      f"{{'dtype': {dtype!r}, 'width': {width}}}", hint=_HINT)
        else:
            dtype, width = _listed_entry(path, name, got)
        if name not in schema.names:
            raise DataFormatError(path, None, None, "layout_mismatch",
                                  f"the file's metadata lists column {name!r}, which it does not hold",
                                  hint=_HINT)
        stored = schema.field(name).type
        size = np.dtype(dtype).itemsize * width
        if not pa.types.is_fixed_size_binary(stored) or stored.byte_width != size:
            raise DataFormatError(path, None, None, "layout_mismatch",
                                  f"column {name!r} is stored as {stored}, should be "
                                  f"fixed_size_binary[{size}] ({width} x {dtype})", hint=_HINT)
        arrays.append((name, dtype, width))
    info = _FileInfo(tuple(schema.names), spec, True, tuple(arrays))
    if exact is None:
        _check_spec_fits(path, spec, dtypes | info.decoded)
    return info


def _listed_entry(path: Path, name: str, got) -> tuple[str, int]:
    """A column the metadata lists (beyond the spec's states): its dtype and width, checked."""
    if (not isinstance(got, dict) or got.get("dtype") not in _LITTLE_ENDIAN.values()
            or isinstance(got.get("width"), bool) or not isinstance(got.get("width"), int)
            or got["width"] < 1):
        raise DataFormatError(path, None, None, "layout_mismatch",
                              f"column {name!r}: the file's metadata lists {got}, not a little-endian "
                              "dtype and a positive width", hint=_HINT)
    return got["dtype"], got["width"]


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


def _check_dtypes(path: Path, dtypes, exact: dict, *, skip=()) -> None:
    for name, dtype in exact.items():
        if name not in skip and dtypes[name] != dtype:
            raise DataFormatError(path, None, None, "wrong_dtype",
                                  f"column {name!r} is {dtypes[name]}, should be {dtype}", hint=_HINT)


def _looks_hint(path: Path) -> str | None:
    """What the file looks like when another format claims it, and what to pass (for the dataset reader's errors)."""
    looks = looks_like(path, besides=("dataset",)) if path.is_file() else None
    return None if looks is None else looks[0].upper() + looks[1:] + "."


def _require_frame_columns(path: Path, names, what: str, required, *, plain: bool = False) -> None:
    """Refuse a file lacking ``required`` columns (rule ``not_a_dataset``); ``plain``: a file without rewardlab's
    metadata, read as a kanachan frame, whose error says what it looks like and what to pass."""
    missing = [c for c in required if c not in names]
    if missing:
        if not plain:
            raise DataFormatError(path, None, None, "not_a_dataset", f"the {what} file lacks columns {missing}",
                                  hint=_HINT)
        raise DataFormatError(path, None, None, "not_a_dataset",
                              f"the {what} file lacks columns {missing}: it has no rewardlab metadata, so it is a "
                              "dataset only if it holds a whole kanachan frame",
                              hint=" ".join(x for x in (_looks_hint(path), _NOT_OURS_HINT) if x))


def _inspect_ipc(path: Path, spec: FrameSpec | None = None) -> _FileInfo:
    dtypes, metadata = _read_ipc_schema(path)
    spec, declared = _file_spec(path, metadata, spec)
    exact = _exact_schema(spec)
    if exact is not None or not declared:
        _require_frame_columns(path, list(dtypes), "Arrow", exact or spec.required, plain=not declared)
    if exact is not None:
        _check_dtypes(path, dtypes, exact)
    else:
        _check_spec_fits(path, spec, dict(dtypes))
    return _FileInfo(tuple(dtypes), spec, False)


def _inspect(files: list[Path], kind: str, spec: FrameSpec | None = None) -> list[_FileInfo]:
    """Check every file is a dataset (columns, dtypes, layout, spec) with the first file's columns and spec.

    Reads only footers / schemas.
    """
    infos: list[_FileInfo] = []
    for path in files:
        info = _inspect_parquet(path, spec) if kind == "parquet" else _inspect_ipc(path, spec)
        if infos and info.names != infos[0].names:
            raise DataFormatError(path, None, None, "mixed_columns",
                                  f"the file's columns {list(info.names)} differ from those of {files[0]} "
                                  f"{list(infos[0].names)}", hint="Load files of one dataset together.")
        if infos and info.spec != infos[0].spec:
            mine, first = info.spec.to_dict(), infos[0].spec.to_dict()
            fields = [k for k in mine if mine[k] != first.get(k)]
            raise DataFormatError(path, None, None, "mixed_specs",
                                  f"the file's spec ({info.spec.name}) differs from that of {files[0]} "
                                  f"({infos[0].spec.name}) in {', '.join(fields)}",
                                  hint="Load files of one dataset together (recordings of different "
                                  "environments are different datasets).")
        infos.append(info)
    return infos


def _ordered(frame, spec: FrameSpec):
    """``frame`` (eager or lazy) with a kanachan frame's columns first, in schema order, then the others."""
    exact = _exact_schema(spec)
    if exact is None:
        return frame
    names = frame.collect_schema().names()
    return frame.select(*exact, *(c for c in names if c not in exact))


def read_dataset(paths, *, spec: FrameSpec | None = None) -> pl.DataFrame:
    """Read converted datasets into one frame (files concatenated in order), with its spec attached.

    Parquet files of the FixedSizeBinary layout are read with pyarrow,
    verifying every page's checksum, and their array columns rebuilt
    without copying; other Parquet and Arrow files are read by Polars.

    The frame carries the spec stored in the files
    (:func:`rewardlab.core.spec.attached`); files written before rewardlab
    stored one hold kanachan frames.  A stored spec that does not fit the
    file's columns is a :class:`~rewardlab.core.errors.SpecError` naming the
    column.

    Refused with a :class:`~rewardlab.core.errors.DataFormatError` naming the
    file: a file that is not a dataset, empty, truncated or damaged (a page
    whose checksum does not match), nulls in a column of the frame (inside
    the arrays too), and an episode (kanachan: game and seat) present in two
    files (the same data twice, e.g. a copy, or one frame as ``.parquet``
    and ``.arrow``).

    Parameters
    ----------
    paths : path or sequence of paths
        ``.parquet`` or ``.arrow`` files, or folders of them (one kind).
    spec : FrameSpec, optional
        Read the files with this spec instead of the stored one (a plain
        Parquet table that has none).

    Returns
    -------
    polars.DataFrame
        The files' columns (a kanachan frame: :data:`rewardlab.sources.kanachan.schema.FRAME_SCHEMA`,
        in that column order, then any extra columns the files hold).

    Examples
    --------
    >>> frame = read_dataset("data/sample.parquet")  # doctest: +SKIP
    """
    files, kind = dataset_files(paths)
    infos = _inspect(files, kind, spec)
    frames = []
    for path, info in zip(files, infos):
        frame = _ordered(_read_one(path, kind, info), info.spec)
        _check_nulls(path, frame, info.spec)
        frames.append(frame)
    keys = infos[0].spec.episode
    if keys:
        _check_episodes_once([(path, frame.select(keys)) for path, frame in zip(files, frames)])
    frame = pl.concat(frames, how="vertical", rechunk=False) if len(frames) > 1 else frames[0]
    return attach(frame, infos[0].spec)


def read_part(path: str | Path, *, columns=None) -> pl.DataFrame:
    """Read one dataset file, or only ``columns`` of it, with its spec (projected) attached.

    What :func:`read_dataset` checks for one file (page checksums, nulls in
    the spec's columns read, the layout), reading only the columns asked
    for: the engines read a dataset's parts one at a time with it.

    Parameters
    ----------
    path : path
        A ``.parquet`` or ``.arrow`` file rewardlab wrote.
    columns : sequence of str or None
        The columns to read, in the file's order (None: all).  The spec's
        episode columns are read too when they are not named, since a part
        without them is no longer a run of episodes.

    Examples
    --------
    >>> read_part("corpus/part-000000.parquet", columns=["reward_top"])  # doctest: +SKIP
    """
    files, kind = dataset_files([path])
    info = _inspect(files, kind)[0]
    path = files[0]
    if columns is None:
        frame = _ordered(_read_one(path, kind, info), info.spec)
        _check_nulls(path, frame, info.spec)
        return attach(frame, info.spec)
    wanted = set(columns) | set(info.spec.episode)
    missing = [c for c in columns if c not in info.names]
    if missing:
        raise ColumnNotFoundError(missing[0], list(info.names))
    names = [c for c in info.names if c in wanted]
    frame = _read_one(path, kind, info, columns=names)
    spec = info.spec.project(names)
    _check_nulls(path, frame, spec)
    return attach(frame, spec)


def _read_one(path: Path, kind: str, info: _FileInfo, *, columns=None) -> pl.DataFrame:
    try:
        if info.fsb:
            return _read_fsb(path, info, columns=columns)
        if kind == "ipc":
            lf = pl.scan_ipc(path)
            return (lf if columns is None else lf.select(columns)).collect()
        return pl.read_parquet(path, columns=columns)
    except DataFormatError:
        raise
    except (OSError, ValueError, pl.exceptions.PolarsError) as exc:  # pyarrow raises OSError / ValueError
        raise _damaged(path, exc) from exc


def _check_nulls(path: Path, frame: pl.DataFrame, spec: FrameSpec) -> None:
    """Refuse nulls in the spec's columns: whole values, and elements inside the array columns."""
    for name in _checked_columns(spec):
        series = frame.get_column(name)
        outer = _outer_nulls(spec, name, series.null_count())
        inner = 0 if outer or not isinstance(series.dtype, pl.Array) else sum(
            chunk.to_arrow().flatten().null_count for chunk in series.get_chunks())
        _nulls(path, name, outer, inner)


def _episode_label(column: str) -> str:
    """How a message names an episode key column: ``game_id`` -> ``game``."""
    return column[:-3] if column.endswith("_id") and len(column) > 3 else column


def _check_episodes_once(episodes: list[tuple[Path, pl.DataFrame]]) -> None:
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


def _read_fsb(path: Path, info: _FileInfo, *, columns=None) -> pl.DataFrame:
    import pyarrow as pa
    import pyarrow.parquet as pq

    arrays = {name: (dtype, width) for name, dtype, width in info.arrays}
    table = pq.read_table(path, columns=None if columns is None else list(columns),
                          page_checksum_verification=True)
    columns = {}
    for name in table.column_names:
        column = table[name]
        if name in arrays:
            dtype, width = arrays[name]
            chunks = [_fixed_size_list(chunk, np.dtype(dtype), width, path, name,
                                       nullable=name in info.spec.final_names)
                      for chunk in column.chunks]
            value_type = pa.from_numpy_dtype(np.dtype(dtype).newbyteorder("="))
            column = pa.chunked_array(chunks, type=pa.list_(value_type, width))
        columns[name] = column
    # One chunk per row group, like the chunks of an Arrow IPC load; rechunking would copy every column.
    return pl.from_arrow(pa.table(columns), rechunk=False)


def _fixed_size_list(chunk, dtype: np.dtype, width: int, path: Path, name: str, *, nullable: bool = False):
    """A FixedSizeBinary chunk as a fixed-size list of ``dtype`` (no copy on little-endian hosts); null
    values stay null where ``nullable`` (a final-state column), and are refused elsewhere."""
    import pyarrow as pa

    if not nullable:
        _nulls(path, name, chunk.null_count, 0)
    n = len(chunk) * width
    data = chunk.buffers()[1]
    values = (np.frombuffer(data, dtype=dtype, count=n, offset=chunk.offset * width * dtype.itemsize)
              if n else np.empty(0, dtype=dtype))
    values = values.astype(dtype.newbyteorder("="), copy=False)  # a no-op on little-endian hosts
    mask = chunk.is_null() if chunk.null_count else None
    return pa.FixedSizeListArray.from_arrays(pa.array(values), width, mask=mask)



def scan_dataset(paths, *, spec: FrameSpec | None = None) -> pl.LazyFrame:
    """Scan converted datasets lazily (files concatenated in order), with their spec attached.

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
    spec : FrameSpec, optional
        As in :func:`read_dataset`.

    Returns
    -------
    polars.LazyFrame
        As :func:`read_dataset`'s frame; the spec stored in the files is
        attached (:func:`rewardlab.core.spec.attached`).

    Examples
    --------
    >>> lf = scan_dataset("data/sample.parquet")  # doctest: +SKIP
    >>> lf.filter(pl.col("end_of_game")).select("seat", "results").collect()  # doctest: +SKIP
    """
    files, kind = dataset_files(paths)
    infos = _inspect(files, kind, spec)
    _verify(files, kind, infos, given=spec is not None)
    file_spec = infos[0].spec
    if kind == "ipc":
        return attach(_ordered(pl.scan_ipc(files), file_spec), file_spec)
    groups: list[tuple[_FileInfo, list[Path]]] = []  # runs of files of one layout, in order
    for path, info in zip(files, infos):
        if groups and (groups[-1][0].fsb, groups[-1][0].arrays) == (info.fsb, info.arrays):
            groups[-1][1].append(path)
        else:
            groups.append((info, [path]))
    frames = [_ordered(_decode_lazy(pl.scan_parquet(group), info) if info.fsb else pl.scan_parquet(group),
                       file_spec)
              for info, group in groups]
    lf = pl.concat(frames, how="vertical") if len(frames) > 1 else frames[0]
    return attach(lf, file_spec)


def verify_dataset(paths, *, cached: bool = True) -> None:
    """Read every file of a dataset once and check it, without keeping the data.

    The checks of :func:`read_dataset`: each Parquet page's checksum (files
    :func:`write_dataset` wrote carry one), that every page decodes, no
    nulls in the spec's columns (inside the arrays too), no episode (kanachan:
    game and seat) in two files.  Reads one row group (Parquet) at a time,
    so memory stays small.  :func:`scan_dataset` calls it, because Polars'
    own Parquet reader, which the lazy scan uses, does not verify page
    checksums.  A file verified once is not read again in the same process
    while its size, time stamp and inode stay the same (``cached=False``
    reads it again).

    Raises
    ------
    DataFormatError
        Naming the file, as :func:`read_dataset` does.

    Examples
    --------
    >>> verify_dataset("data/sample.parquet")  # doctest: +SKIP
    """
    files, kind = dataset_files(paths)
    infos = _inspect(files, kind)
    _verify(files, kind, infos, cached=cached)


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



def _verify(files: list[Path], kind: str, infos: list[_FileInfo], *, cached: bool = True,
            given: bool = False) -> None:
    episodes = []
    for path, info in zip(files, infos):
        key = _identity(path) + ((info.spec,) if given else ())
        if key not in _VERIFIED or not cached:
            if given:  # read with a spec the caller gave, not the file's own
                _VERIFIED[key] = (_verify_parquet(path, info.spec) if kind == "parquet"
                                  else _verify_ipc(path, info.spec))
            else:
                _VERIFIED[key] = _verify_parquet(path) if kind == "parquet" else _verify_ipc(path)
        episodes.append((path, _VERIFIED[key]))
    if infos[0].spec.episode:
        _check_episodes_once(episodes)


def _own_spec(path: Path, spec: FrameSpec | None, kind: str) -> FrameSpec:
    if spec is not None:
        return spec
    return (_inspect_parquet(path) if kind == "parquet" else _inspect_ipc(path)).spec


def _verify_parquet(path: Path, spec: FrameSpec | None = None) -> pl.DataFrame:
    """Read a Parquet file a row group at a time (checksums verified); return its episodes' keys."""
    import pyarrow as pa

    spec = _own_spec(path, spec, "parquet")
    keys = list(spec.episode)
    ids = []
    try:
        for table in _row_groups(path):
            for name in _checked_columns(spec):
                column = table[name]
                outer = _outer_nulls(spec, name, column.null_count)
                inner = 0 if outer or not pa.types.is_fixed_size_list(column.type) else sum(
                    chunk.flatten().null_count for chunk in column.chunks)
                _nulls(path, name, outer, inner)
            if keys:
                ids.append(pl.from_arrow(table.select(keys)).unique(maintain_order=True))
    except DataFormatError:
        raise
    except (OSError, ValueError) as exc:  # pyarrow's errors
        raise _damaged(path, exc) from exc
    if not ids:
        return pl.DataFrame(schema={k: pl.String for k in keys})
    return pl.concat(ids).unique(maintain_order=True)


def write_table(frame: pl.DataFrame, path: str | Path, *, compression: str = "zstd",
                spec: FrameSpec | None = None) -> None:
    """Write a plain table (a rewards table, not a dataset) as Parquet with a checksum in every page.

    Column types are kept as they are (Float16 rewards stay float16); use
    :func:`rewardlab.core.files.atomic_path` around it for an atomic write.
    :func:`verify_table` checks the checksums when the table is read back.
    The spec (``spec``, else the one attached to ``frame``, else kanachan's
    when the table holds ``game_id`` and ``seat``), projected to the table's
    columns, is stored under :data:`rewardlab.core.spec.SPEC_KEY`; a table
    with none stores none.

    Examples
    --------
    >>> write_table(rewards, "rewards.parquet")  # doctest: +SKIP
    """
    import pyarrow.parquet as pq

    table = frame.to_arrow()
    try:
        found = dataset_spec(frame, spec)
    except SpecError:
        found = None
    if found is not None:
        projected = found.project(frame.columns)
        table = table.replace_schema_metadata({**(table.schema.metadata or {}),
                                               SPEC_KEY: projected.to_json()})
    pq.write_table(table, str(path), compression=compression, write_statistics=True,
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


def _verify_ipc(path: Path, spec: FrameSpec | None = None) -> pl.DataFrame:
    """Read an Arrow IPC file (no checksums in the format): it decodes, no nulls; return its episodes."""
    spec = _own_spec(path, spec, "ipc")
    checked = _checked_columns(spec)
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
        raise _damaged(path, exc) from exc
    for name in checked:  # an exploded null array counts once more: take the outer ones off
        outer = nulls[f"outer {name}"]
        _nulls(path, name, _outer_nulls(spec, name, outer), nulls.get(f"inner {name}", outer) - outer)
    return ids


def _decode_lazy(lf: pl.LazyFrame, info: _FileInfo) -> pl.LazyFrame:
    return lf.with_columns(
        pl.col(name).bin.reinterpret(dtype=dtype, endianness="little")
        for name, dtype in info.decoded.items()
    )
