"""RLlib's compressed columns (``compress_columns``) decoded without running code from the file.

RLlib packs a column (``ray.rllib.utils.compression.pack``) as
``base64(lz4.frame.compress(cloudpickle.dumps(array)))``: decoding means
unpickling, and unpickling an untrusted file can run any code.  So by
default :func:`unpack` unpickles with a restricted unpickler that builds
NumPy arrays and dtypes and nothing else (the only globals a packed
numeric array refers to); anything else (an object array, a class of
your own) is refused with :class:`UnsafePickle`, and the caller says which
column and line.  ``allow_pickle=True`` unpickles with Python's full
unpickler, for files you trust.  LZ4 comes from the ``lz4`` package, the
library RLlib itself uses (the ``rllib`` extra).

Examples
--------
>>> import base64, pickle, lz4.frame, numpy as np
>>> text = base64.b64encode(lz4.frame.compress(pickle.dumps(np.arange(3.0), protocol=5))).decode()
>>> unpack(text).tolist()
[0.0, 1.0, 2.0]
"""

from __future__ import annotations

import base64
import binascii
import io
import pickle

import numpy as np

__all__ = ["unpack", "UnsafePickle", "UndecodableColumn", "SAFE_GLOBALS"]

#: The globals a pickled numeric NumPy array refers to (NumPy 1.x and 2.x module names).
SAFE_GLOBALS = frozenset({
    ("numpy._core.numeric", "_frombuffer"), ("numpy.core.numeric", "_frombuffer"),
    ("numpy._core.multiarray", "_reconstruct"), ("numpy.core.multiarray", "_reconstruct"),
    ("numpy._core.multiarray", "scalar"), ("numpy.core.multiarray", "scalar"),
    ("numpy", "ndarray"), ("numpy", "dtype"),
})


class UnsafePickle(Exception):
    """The packed value refers to something other than a NumPy array (``name``)."""

    def __init__(self, name: str):
        self.name = name
        super().__init__(name)


class UndecodableColumn(Exception):
    """The text is not base64 of an LZ4 frame of a pickle (``reason`` says which step failed)."""

    def __init__(self, reason: str):
        self.reason = reason
        super().__init__(reason)


class _ArraysOnly(pickle.Unpickler):
    def find_class(self, module, name):
        if (module, name) in SAFE_GLOBALS:
            return super().find_class(module, name)
        raise UnsafePickle(f"{module}.{name}")


def unpack(text, *, allow_pickle: bool = False) -> np.ndarray:
    """Decode one value RLlib packed (``compression.pack``) into a NumPy array.

    Parameters
    ----------
    text : str or bytes
        base64 text of an LZ4 frame of a pickle.
    allow_pickle : bool
        Unpickle with the full unpickler (may run code: trusted files only).

    Raises
    ------
    UndecodableColumn
        Not base64, not an LZ4 frame, not a pickle, or not an array.
    UnsafePickle
        A safe decode met a global other than NumPy's array builders.

    Examples
    --------
    >>> unpack("not base64!")
    Traceback (most recent call last):
    ...
    rewardlab.sources.rllib.compression.UndecodableColumn: not base64 text (Only base64 data is allowed)
    """
    import lz4.frame

    try:
        raw = base64.b64decode(text, validate=True)
    except (binascii.Error, ValueError, TypeError) as exc:
        raise UndecodableColumn(f"not base64 text ({exc})") from None
    try:
        data = lz4.frame.decompress(raw)
    except RuntimeError as exc:
        raise UndecodableColumn(f"not an LZ4 frame ({exc})") from None
    try:
        value = pickle.loads(data) if allow_pickle else _ArraysOnly(io.BytesIO(data)).load()
    except UnsafePickle:
        raise
    except Exception as exc:  # a broken pickle raises many kinds
        raise UndecodableColumn(f"not a pickle ({type(exc).__name__}: {exc})") from None
    if not isinstance(value, np.ndarray):
        raise UndecodableColumn(f"the value is a {type(value).__name__}, not an array")
    if value.dtype == object:
        raise UndecodableColumn("the array holds Python objects, not numbers")
    return value
