"""Minari's serialized Gymnasium spaces, read as the layout of one column: :func:`space_layout`.

A Minari dataset's ``metadata.json`` stores its observation and action
spaces as JSON text (``{"type": "Box", "dtype": "float32", "shape": [2],
"low": [...], "high": [...]}``, ``{"type": "Discrete", "n": 3, ...}``).
A :class:`SpaceLayout` says how values of such a space are stored (one
value's shape and dtype) and what column they become: observations a
fixed-size list of floats (``obs``, ``final_obs``), actions an Int64 scalar
(``Discrete``) or a fixed-size list (``Box``, ``MultiDiscrete``,
``MultiBinary``).  ``Dict``, ``Tuple`` and ``Text`` spaces, and images that
Minari stored JPEG-encoded, have no such layout and are refused, naming the
file and what to do.

Examples
--------
>>> layout = space_layout('{"type": "Box", "dtype": "float32", "shape": [2, 3], "low": 0, "high": 1}',
...                       what="observation", path="metadata.json")
>>> layout.width, layout.obs_dtype, layout.shape
(6, 'float32', (2, 3))
>>> space_layout({"type": "Discrete", "dtype": "int64", "n": 3, "start": 0}, what="action",
...              path="metadata.json").action_dtype
Int64
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import polars as pl

from rewardlab.core.errors import DataFormatError

__all__ = ["SpaceLayout", "space_layout", "SUPPORTED_SPACES", "MAX_WIDTH"]

#: The space types a column can hold.
SUPPORTED_SPACES = ("Box", "Discrete", "MultiDiscrete", "MultiBinary")

#: The most numbers one value of a space may hold (the width of a fixed-size list column).
MAX_WIDTH = (1 << 31) - 1

_FLATTEN_HINT = ("rewardlab reads observations and actions that are fixed-size arrays of numbers (Box, Discrete, "
                 "MultiDiscrete, MultiBinary): collect the dataset through gymnasium.wrappers.FlattenObservation "
                 "(or flatten each episode with gymnasium.spaces.flatten and write a new dataset with "
                 "minari.create_dataset_from_buffers), then load that")


@dataclass(frozen=True)
class SpaceLayout:
    """How one space's values are stored in a Minari dataset, and the column they become.

    Attributes
    ----------
    kind : str
        The space type (one of :data:`SUPPORTED_SPACES`).
    shape : tuple of int
        One value's shape (``()`` for ``Discrete``).
    dtype : numpy.dtype
        The dtype Minari stores the values in.
    text : str
        The space as the error messages and ``rewardlab info`` show it.
    """

    kind: str
    shape: tuple[int, ...]
    dtype: np.dtype
    text: str

    @property
    def width(self) -> int:
        """The numbers in one value (1 for ``Discrete`` and for a Box of shape ``()``)."""
        return int(np.prod(self.shape, dtype=np.int64)) if self.shape else 1

    @property
    def obs_dtype(self) -> str:
        """The float dtype of the flattened observations: ``float32`` for float16 / float32 Boxes, else ``float64``."""
        if self.kind == "Box" and self.dtype in (np.float16, np.float32):
            return "float32"
        return "float64"

    @property
    def action_dtype(self) -> pl.DataType:
        """The action column's dtype: Int64 (``Discrete``), else a fixed-size list of Float32, Float64 or Int64."""
        if self.kind == "Discrete":
            return pl.Int64
        if self.kind == "Box" and np.issubdtype(self.dtype, np.floating):
            inner = pl.Float32 if self.dtype in (np.float16, np.float32) else pl.Float64
        else:
            inner = pl.Int64
        return pl.Array(inner, self.width)

    def rows(self, values: np.ndarray) -> np.ndarray | None:
        """``values`` (one value per row, as stored, or already flattened) as ``[rows, width]``; None when their
        shape is neither the space's nor ``(width,)``.

        Examples
        --------
        >>> box = SpaceLayout("Box", (2, 2), np.dtype("float32"), "Box(2, 2)")
        >>> box.rows(np.zeros((3, 2, 2))).shape, box.rows(np.zeros((3, 4))).shape, box.rows(np.zeros((3, 3)))
        ((3, 4), (3, 4), None)
        """
        values = np.asarray(values)
        if values.ndim < 1 or values.shape[1:] not in (self.shape, (self.width,)):
            return None
        return values.reshape(values.shape[0], self.width)

    def actions(self, values: np.ndarray) -> np.ndarray | None:
        """Actions as stored -> ``[rows]`` int64 (``Discrete``) or ``[rows, width]`` of the column's dtype; None
        when their shape is not the space's."""
        if self.kind == "Discrete":
            values = np.asarray(values)
            if values.ndim == 2 and values.shape[1] == 1:
                values = values[:, 0]
            return values.astype(np.int64, copy=False) if values.ndim == 1 else None
        flat = self.rows(values)
        if flat is None:
            return None
        inner = self.action_dtype.inner
        dtype = np.float32 if inner == pl.Float32 else np.float64 if inner == pl.Float64 else np.int64
        return flat.astype(dtype, copy=False)


def _is_image(d: dict, shape: tuple[int, ...], dtype: np.dtype) -> bool:
    """Minari's rule for a Box it stores JPEG-encoded (with ``jpeg_encoding``): uint8, 2 or 3 axes, at least
    32 x 32, bounds 0 and 255."""
    if dtype != np.uint8 or len(shape) not in (2, 3) or shape[0] < 32 or shape[1] < 32:
        return False
    try:
        return bool(np.all(np.asarray(d.get("low")) == 0) and np.all(np.asarray(d.get("high")) == 255))
    except (TypeError, ValueError):
        return False


def _bad(path, what: str, message: str, *, hint: str | None = None) -> DataFormatError:
    return DataFormatError(path, None, None, "unsupported_space", f"the dataset's {what} space {message}",
                           hint=hint or _FLATTEN_HINT)


def _shape(value, path, what: str) -> tuple[int, ...]:
    try:
        shape = tuple(int(n) for n in value)
    except (TypeError, ValueError, OverflowError):  # OverflowError: int(inf)
        raise _bad(path, what, f"has a shape that is not a list of sizes: {value!r}",
                   hint="Check the dataset's metadata.json; Minari writes the shape as a list of ints") from None
    if any(n < 0 for n in shape):
        raise _bad(path, what, f"has a negative size in its shape {list(shape)}",
                   hint="Check the dataset's metadata.json")
    if math.prod(shape) > MAX_WIDTH:
        raise _bad(path, what, f"has the shape {list(shape)}: {math.prod(shape)} numbers a value, more than the "
                   f"{MAX_WIDTH} a column holds", hint="Check the dataset's metadata.json")
    return shape


def _dtype(value, path, what: str) -> np.dtype:
    try:
        dtype = np.dtype(value)
    except (TypeError, ValueError, RecursionError):
        raise _bad(path, what, f"has dtype {value!r}, not a NumPy dtype",
                   hint="Check the dataset's metadata.json") from None
    if dtype.kind not in "biuf":
        raise _bad(path, what, f"holds {dtype} values, not numbers")
    return dtype


def space_layout(space, *, what: str, path: str | Path, jpeg_encoding: bool = False) -> SpaceLayout:
    """The layout of the serialized space ``space`` (JSON text or its dict), ``what`` being ``"observation"`` or
    ``"action"``.

    Raises :class:`~rewardlab.core.errors.DataFormatError` (rule
    ``unsupported_space``) naming ``path`` (the dataset's ``metadata.json``)
    for a space whose values are not fixed-size arrays of numbers (``Dict``,
    ``Tuple``, ``Text``), images Minari stored JPEG-encoded
    (``jpeg_encoding``), and a space the JSON does not describe.

    Examples
    --------
    >>> space_layout('{"type": "Dict", "subspaces": {}}', what="observation",
    ...              path="data/metadata.json")  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    rewardlab.core.errors.DataFormatError: data/metadata.json: the dataset's observation space is a Dict space; its values are not ...
    """
    if isinstance(space, str):
        try:
            space = json.loads(space)
        except (ValueError, RecursionError):  # RecursionError: nesting deeper than the parser's stack
            space = None
    if not isinstance(space, dict) or not isinstance(space.get("type"), str):
        raise _bad(path, what, "is not a space Minari serialized (a JSON object with a 'type')",
                   hint="Check the dataset's metadata.json, or write the dataset again with Minari 0.5")
    kind = space["type"]
    if kind not in SUPPORTED_SPACES:
        raise _bad(path, what, f"is a {kind} space; its values are not a fixed-size array of numbers")
    try:
        if kind == "Box":
            shape, dtype = _shape(space["shape"], path, what), _dtype(space["dtype"], path, what)
            if jpeg_encoding and _is_image(space, shape, dtype):
                raise _bad(path, what, f"holds images (Box{shape} uint8) that Minari stored JPEG-encoded",
                           hint="Write the dataset again with jpeg_encoding=False (DataCollector or "
                                "minari.create_dataset_from_buffers) to store the pixels as numbers")
            return SpaceLayout(kind, shape, dtype, f"Box{shape} {dtype}")
        if kind == "Discrete":
            n, start = int(space["n"]), int(space.get("start", 0))
            return SpaceLayout(kind, (), _dtype(space.get("dtype", "int64"), path, what),
                               f"Discrete({n}" + (f", start={start})" if start else ")"))
        if kind == "MultiDiscrete":
            nvec = np.asarray(space["nvec"])
            return SpaceLayout(kind, _shape(nvec.shape, path, what),
                               _dtype(space.get("dtype", "int64"), path, what),
                               f"MultiDiscrete{nvec.shape}")
        n = space["n"]
        shape = (int(n),) if isinstance(n, int) else _shape(n, path, what)
        return SpaceLayout(kind, shape, np.dtype("int8"), f"MultiBinary{shape}")
    except (KeyError, TypeError, ValueError, OverflowError) as exc:  # OverflowError: int(inf)
        if isinstance(exc, DataFormatError):
            raise
        raise _bad(path, what, f"({kind}) lacks or mistypes a field ({type(exc).__name__}: {exc})",
                   hint="Check the dataset's metadata.json, or write the dataset again with Minari 0.5") from None
