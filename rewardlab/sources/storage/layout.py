"""Dataset files and their layout: which files form a dataset, the layout's constants, what a footer says.

The constants of the FixedSizeBinary Parquet layout (:data:`LAYOUT` and the
metadata keys naming it, the codec and row-group size :func:`rewardlab.sources.storage.write_dataset`
uses, each array column's little-endian dtype); :func:`is_dataset` and
:func:`dataset_files` (the files a path or folder names, checked before
anything opens them); the spec a frame is written with (:func:`dataset_spec`)
and what it promises (:func:`exact_schema`, :func:`checked_columns`,
:func:`outer_nulls`, :func:`array_layout`); and what a file's footer says,
read without its data (:func:`layout_of`, :func:`row_group_ends`,
:func:`file_metadata`, :func:`file_columns`, :func:`has_rewardlab_metadata`,
:func:`read_spec`, :func:`read_parquet_schema`, :func:`read_ipc_schema`).

Examples
--------
>>> is_dataset("d.parquet"), DATASET_SUFFIXES[".arrow"], LAYOUT
(True, 'ipc', 'fsb-1')
"""

from __future__ import annotations

from pathlib import Path

import polars as pl

from rewardlab.sources.kanachan import schema as S
from rewardlab.core.files import check_input
from rewardlab.core.spec import DECLARE_HINT, SPEC_KEY, FrameSpec, attached
from rewardlab.core.errors import DataFormatError, ParameterError, SpecError
from rewardlab.sources.storage.problems import DAMAGED_HINT, EMPTY_HINT, is_empty, looks_hint, one_line

__all__ = [
    "datasets_below",
    "DATASET_SUFFIXES",
    "LAYOUT",
    "LAYOUT_KEY",
    "ARRAYS_KEY",
    "PARQUET_COMPRESSION",
    "PARQUET_ROW_GROUP",
    "LITTLE_ENDIAN",
    "ARRAY_COLUMNS",
    "is_dataset",
    "dataset_files",
    "dataset_spec",
    "exact_schema",
    "checked_columns",
    "outer_nulls",
    "array_layout",
    "polars_array",
    "layout_of",
    "row_group_ends",
    "file_metadata",
    "file_columns",
    "has_rewardlab_metadata",
    "read_spec",
    "stored_spec",
    "read_parquet_schema",
    "read_ipc_schema",
]

#: Suffixes of converted datasets: Parquet (portable) and Arrow IPC.
DATASET_SUFFIXES = {".parquet": "parquet", ".arrow": "ipc", ".ipc": "ipc", ".feather": "ipc"}

#: Value of the ``rewardlab.layout`` Parquet metadata key: array columns as FixedSizeBinary.
LAYOUT = "fsb-1"
#: The Parquet metadata key holding :data:`LAYOUT`.
LAYOUT_KEY = "rewardlab.layout"
#: The Parquet metadata key listing the FixedSizeBinary columns (JSON: name -> dtype and width).
ARRAYS_KEY = "rewardlab.arrays"

#: Parquet codec of :func:`rewardlab.sources.storage.write_dataset` (chosen by measurement, see its docstring).
PARQUET_COMPRESSION = "lz4"
#: Rows per Parquet row group (and per Arrow IPC record batch) of a dataset file.
PARQUET_ROW_GROUP = 65536

#: The numeric Polars dtypes an array column may hold -> their little-endian NumPy dtype strings.
LITTLE_ENDIAN = {
    pl.Int8: "<i1", pl.Int16: "<i2", pl.Int32: "<i4", pl.Int64: "<i8",
    pl.UInt8: "<u1", pl.UInt16: "<u2", pl.UInt32: "<u4", pl.UInt64: "<u8",
    pl.Float32: "<f4", pl.Float64: "<f8",
}

#: The frame's array columns: name -> (little-endian NumPy dtype string, width).
ARRAY_COLUMNS: dict[str, tuple[str, int]] = {
    name: (LITTLE_ENDIAN[dtype.inner], dtype.size)
    for name, dtype in S.FRAME_SCHEMA.items() if isinstance(dtype, pl.Array)
}

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


def datasets_below(paths) -> list[Path]:
    """The dataset folders one level below the folders among ``paths`` (what a user may have meant).

    Examples
    --------
    >>> datasets_below(["corpora"])  # doctest: +SKIP
    [PosixPath('corpora/mahjong'), PosixPath('corpora/mahjong-rewards')]
    """
    found: list[Path] = []
    for p in map(Path, paths):
        try:
            found += sorted(q for q in p.iterdir() if q.is_dir() and is_dataset(q)) if p.is_dir() else []
        except OSError:  # unreadable: the error above names the folder
            continue
    return found


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
                                 str(p), hint=looks_hint(p))
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
        below = datasets_below(paths)
        raise ParameterError("paths", "should name dataset files or folders holding them",
                             [str(p) for p in paths],
                             hint=f"It holds dataset folders: {', '.join(map(str, below[:5]))}"
                             f"{f' and {len(below) - 5} more' if len(below) > 5 else ''}; name one of them."
                             if below else None)
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


def exact_schema(spec: FrameSpec) -> dict | None:
    """The full schema a spec's frames have, where rewardlab knows it (kanachan's frame); else None.

    Examples
    --------
    >>> exact_schema(S.KANACHAN_SPEC) is S.FRAME_SCHEMA
    True
    """
    return S.FRAME_SCHEMA if spec == S.KANACHAN_SPEC else None


def checked_columns(spec: FrameSpec) -> tuple[str, ...]:
    """The columns a dataset of ``spec`` must hold without nulls (final-state columns: no null inside a value).

    Examples
    --------
    >>> checked_columns(S.KANACHAN_SPEC) == tuple(S.FRAME_SCHEMA)
    True
    """
    exact = exact_schema(spec)
    return tuple(exact) if exact is not None else spec.required


def outer_nulls(spec: FrameSpec, name: str, count: int) -> int:
    """The null values that count against column ``name``: none for a final-state column, null off the
    episodes' last rows and where the data lacks the final state (``FrameSpec.validate`` checks where).

    ``count`` is the column's null count; the reader and the verifier refuse what this returns.

    Examples
    --------
    >>> outer_nulls(S.KANACHAN_SPEC, "seat", 3)  # kanachan names no final state
    3
    """
    return 0 if name in spec.final_names else count


def array_layout(schema) -> dict[str, tuple[str, int]]:
    """Every fixed-width array column of numbers: name -> (little-endian NumPy dtype, width).

    Examples
    --------
    >>> array_layout({"x": pl.Array(pl.Int16, 3), "s": pl.String})
    {'x': ('<i2', 3)}
    """
    return {name: (LITTLE_ENDIAN[dtype.inner.base_type()], dtype.size)
            for name, dtype in schema.items()
            if isinstance(dtype, pl.Array) and dtype.inner.base_type() in LITTLE_ENDIAN}


def polars_array(dtype: str, width: int) -> pl.DataType:
    """The Polars array dtype of ``width`` numbers of the little-endian NumPy ``dtype`` (:data:`LITTLE_ENDIAN`).

    Examples
    --------
    >>> polars_array("<f4", 2)
    Array(Float32, shape=(2,))
    """
    inner = next(k for k, v in LITTLE_ENDIAN.items() if v == dtype)
    return pl.Array(inner, width)



def layout_of(path: str | Path) -> str | None:
    """The ``rewardlab.layout`` marker of a Parquet file (:data:`LAYOUT`), or None without one.

    Reads only the file's footer.

    Examples
    --------
    >>> layout_of("data/d.parquet")  # doctest: +SKIP
    'fsb-1'
    """
    metadata = read_parquet_schema(Path(path)).metadata or {}
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
    return stored_spec(path, file_metadata(path))


def stored_spec(path: Path, metadata: dict) -> FrameSpec | None:
    """The spec stored in ``metadata`` (a file's key-value metadata, bytes to bytes), or None when it has none.

    Raises :class:`~rewardlab.core.errors.DataFormatError` (rule ``bad_spec``)
    naming ``path`` when the stored spec cannot be read.

    Examples
    --------
    >>> stored_spec(Path("d.parquet"), {}) is None
    True
    """
    raw = metadata.get(SPEC_KEY.encode())
    if raw is None:
        return None
    try:
        return FrameSpec.from_json(raw.decode("utf-8", "replace"))
    except (ParameterError, TypeError) as exc:
        raise DataFormatError(path, None, None, "bad_spec",
                              f"the spec stored in the file's metadata cannot be read ({exc})",
                              hint="Write the dataset again with this version of rewardlab.") from None


def read_parquet_schema(path: Path):
    """A Parquet file's pyarrow schema (its footer only); a file that is not Parquet is refused (rule ``not_parquet``).

    Examples
    --------
    >>> read_parquet_schema(Path("data/sample.parquet")).metadata  # doctest: +SKIP
    """
    import pyarrow.parquet as pq

    try:
        return pq.read_schema(path)
    except (OSError, ValueError) as exc:  # ArrowInvalid is a ValueError
        raise DataFormatError(path, None, None, "not_parquet",
                              f"cannot be read as Parquet ({one_line(exc)})",
                              hint=EMPTY_HINT if is_empty(path) else DAMAGED_HINT) from exc


def read_ipc_schema(path: Path):
    """The Arrow IPC file's Polars schema and its key-value metadata; a file that is not one is refused (rule
    ``not_arrow``).

    Examples
    --------
    >>> dtypes, metadata = read_ipc_schema(Path("d.arrow"))  # doctest: +SKIP
    """
    try:
        dtypes = pl.read_ipc_schema(path)
        import pyarrow as pa

        with pa.memory_map(str(path)) as source:
            metadata = dict(pa.ipc.open_file(source).schema.metadata or {})
        return dtypes, metadata
    except (OSError, ValueError, pl.exceptions.PolarsError) as exc:
        raise DataFormatError(path, None, None, "not_arrow",
                              f"cannot be read as an Arrow IPC file ({one_line(exc)})",
                              hint=EMPTY_HINT if is_empty(path) else DAMAGED_HINT) from exc


