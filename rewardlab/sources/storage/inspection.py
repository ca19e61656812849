"""Inspecting dataset files: what a Parquet or Arrow IPC file's footer says, checked before its data is read.

:func:`inspect_files` reads only footers and schemas and refuses, naming the
file, one that is not a dataset (columns, dtypes, layout, spec) or whose
columns or spec differ from the first file's; what it finds for each file is
a :class:`FileInfo` (its columns, its spec, and which columns it stores as
FixedSizeBinary), which the reader and the verifier go by.

Examples
--------
>>> info = FileInfo(("x",), FrameSpec(name="t", episode=("x",)), True, (("y", "<i2", 3),))
>>> info.decoded
{'y': Array(Int16, shape=(3,))}
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import polars as pl

from rewardlab.sources.kanachan import schema as S
from rewardlab.core.spec import FrameSpec
from rewardlab.core.errors import DataFormatError, SpecError
from rewardlab.sources.storage.layout import (ARRAYS_KEY, LAYOUT, LAYOUT_KEY, LITTLE_ENDIAN, array_layout,
                                              exact_schema, polars_array, read_ipc_schema, read_parquet_schema,
                                              stored_spec)
from rewardlab.sources.storage.problems import DATASET_HINT, looks_hint

__all__ = ["FileInfo", "inspect_files", "inspect_parquet", "inspect_ipc"]

_NOT_OURS_HINT = ("Only files with rewardlab's metadata (written by `rewardlab convert`) and plain files holding "
                  "every column of a kanachan frame are datasets. A table of steps with columns of your own is the "
                  "steps format: name it and its columns, --format steps --option episode=COLUMN on the command "
                  "line, format=\"steps\", episode=\"COLUMN\" in Python (rewardlab.load_steps); the steps format "
                  "reads Parquet, CSV and JSON lines.")

@dataclass(frozen=True)
class FileInfo:
    """What a dataset file's footer says: columns, spec, and its FixedSizeBinary columns (if any).

    ``names``: the file's columns in its order; ``spec``: the spec it is read
    with; ``fsb``: whether it has the FixedSizeBinary layout; ``arrays``:
    (name, little-endian dtype, width) of each column it stores as binary.
    """

    names: tuple[str, ...]
    spec: FrameSpec
    fsb: bool
    arrays: tuple[tuple[str, str, int], ...] = ()  # (name, little-endian dtype, width) stored as binary

    @property
    def decoded(self) -> dict[str, pl.DataType]:
        """The binary columns' Polars dtypes once decoded: name -> ``pl.Array``."""
        return {name: polars_array(dtype, width) for name, dtype, width in self.arrays}


def _file_spec(path: Path, metadata: dict, spec: FrameSpec | None) -> tuple[FrameSpec, bool]:
    """The spec a file is read with (``spec``, else the stored one, else kanachan's) and whether it was stored."""
    if spec is not None:
        return spec, True
    stored = stored_spec(path, metadata)
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


def inspect_parquet(path: Path, spec: FrameSpec | None = None) -> FileInfo:
    """The Parquet file's columns, spec and FixedSizeBinary layout (checked against the schema).

    ``spec``: read the file with it instead of the stored one (else the
    stored spec, else kanachan's).  Reads only the footer.

    Examples
    --------
    >>> inspect_parquet(Path("data/sample.parquet")).fsb  # doctest: +SKIP
    True
    """
    import pyarrow as pa

    schema = read_parquet_schema(path)
    metadata = schema.metadata or {}
    spec, declared = _file_spec(path, metadata, spec)
    exact = exact_schema(spec)
    if not declared or exact is not None:
        _require_frame_columns(path, schema.names, "Parquet", exact or spec.required, plain=not declared)
    layout = metadata.get(LAYOUT_KEY.encode())
    # what Polars reads, before decoding; from_batches, not schema.empty_table(), which imports pandas (0.2 s)
    dtypes = dict(pl.from_arrow(pa.Table.from_batches([], schema=schema)).schema)
    listed = {} if layout is None else _listed_arrays(path, metadata.get(ARRAYS_KEY.encode()))
    if exact is not None:
        _check_dtypes(path, dtypes, exact, skip=listed)
    if layout is None:
        if exact is None:
            _check_spec_fits(path, spec, dtypes)
        return FileInfo(tuple(schema.names), spec, False)
    if layout.decode() != LAYOUT:
        raise DataFormatError(path, None, None, "unknown_layout",
                              f"the file's layout {layout.decode()!r} is not {LAYOUT!r}, the one this "
                              "version reads", hint="Upgrade rewardlab, or convert the data again.")
    # kanachan's frame promises its array layout; another spec is checked on the decoded columns below
    expected = array_layout(exact) if exact is not None else {}
    arrays = []
    for name in dict.fromkeys([*expected, *listed]):
        got = listed.get(name)
        if name in expected:
            dtype, width = expected[name]
            if got != {"dtype": dtype, "width": width}:
                raise DataFormatError(path, None, None, "layout_mismatch",
                                      f"column {name!r}: the file's metadata lists {got}, the frame has "
                                      f"{{'dtype': {dtype!r}, 'width': {width}}}", hint=DATASET_HINT)
        else:
            dtype, width = _listed_entry(path, name, got)
        if name not in schema.names:
            raise DataFormatError(path, None, None, "layout_mismatch",
                                  f"the file's metadata lists column {name!r}, which it does not hold",
                                  hint=DATASET_HINT)
        stored = schema.field(name).type
        size = np.dtype(dtype).itemsize * width
        if not pa.types.is_fixed_size_binary(stored) or stored.byte_width != size:
            raise DataFormatError(path, None, None, "layout_mismatch",
                                  f"column {name!r} is stored as {stored}, should be "
                                  f"fixed_size_binary[{size}] ({width} x {dtype})", hint=DATASET_HINT)
        arrays.append((name, dtype, width))
    info = FileInfo(tuple(schema.names), spec, True, tuple(arrays))
    if exact is None:
        _check_spec_fits(path, spec, dtypes | info.decoded)
    return info


def _listed_entry(path: Path, name: str, got) -> tuple[str, int]:
    """A column the metadata lists (beyond the spec's states): its dtype and width, checked."""
    if (not isinstance(got, dict) or got.get("dtype") not in LITTLE_ENDIAN.values()
            or isinstance(got.get("width"), bool) or not isinstance(got.get("width"), int)
            or got["width"] < 1):
        raise DataFormatError(path, None, None, "layout_mismatch",
                              f"column {name!r}: the file's metadata lists {got}, not a little-endian "
                              "dtype and a positive width", hint=DATASET_HINT)
    return got["dtype"], got["width"]


def _listed_arrays(path: Path, raw: bytes | None) -> dict:
    try:
        listed = json.loads(raw) if raw is not None else None
    except ValueError:
        listed = None
    if not isinstance(listed, dict):
        raise DataFormatError(path, None, None, "layout_mismatch",
                              f"the {ARRAYS_KEY!r} metadata should be a JSON object, found {raw!r}",
                              hint=DATASET_HINT)
    return listed


def _check_dtypes(path: Path, dtypes, exact: dict, *, skip=()) -> None:
    for name, dtype in exact.items():
        if name not in skip and dtypes[name] != dtype:
            raise DataFormatError(path, None, None, "wrong_dtype",
                                  f"column {name!r} is {dtypes[name]}, should be {dtype}", hint=DATASET_HINT)


def _require_frame_columns(path: Path, names, what: str, required, *, plain: bool = False) -> None:
    """Refuse a file lacking ``required`` columns (rule ``not_a_dataset``); ``plain``: a file without rewardlab's
    metadata, read as a kanachan frame, whose error says what it looks like and what to pass."""
    missing = [c for c in required if c not in names]
    if missing:
        if not plain:
            raise DataFormatError(path, None, None, "not_a_dataset", f"the {what} file lacks columns {missing}",
                                  hint=DATASET_HINT)
        raise DataFormatError(path, None, None, "not_a_dataset",
                              f"the {what} file lacks columns {missing}: it has no rewardlab metadata, so it is a "
                              "dataset only if it holds a whole kanachan frame",
                              hint=" ".join(x for x in (looks_hint(path), _NOT_OURS_HINT) if x))


def inspect_ipc(path: Path, spec: FrameSpec | None = None) -> FileInfo:
    """The Arrow IPC file's columns and spec (checked against its schema), as :func:`inspect_parquet`.

    Examples
    --------
    >>> inspect_ipc(Path("d.arrow")).names  # doctest: +SKIP
    """
    dtypes, metadata = read_ipc_schema(path)
    spec, declared = _file_spec(path, metadata, spec)
    exact = exact_schema(spec)
    if exact is not None or not declared:
        _require_frame_columns(path, list(dtypes), "Arrow", exact or spec.required, plain=not declared)
    if exact is not None:
        _check_dtypes(path, dtypes, exact)
    else:
        _check_spec_fits(path, spec, dict(dtypes))
    return FileInfo(tuple(dtypes), spec, False)


def inspect_files(files: list[Path], kind: str, spec: FrameSpec | None = None) -> list[FileInfo]:
    """Check every file is a dataset (columns, dtypes, layout, spec) with the first file's columns and spec.

    Reads only footers / schemas.  ``files`` and ``kind`` as
    :func:`~rewardlab.sources.storage.layout.dataset_files` returns them;
    ``spec`` as in :func:`inspect_parquet`.

    Examples
    --------
    >>> infos = inspect_files([Path("a.parquet"), Path("b.parquet")], "parquet")  # doctest: +SKIP
    """
    infos: list[FileInfo] = []
    for path in files:
        info = inspect_parquet(path, spec) if kind == "parquet" else inspect_ipc(path, spec)
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
