"""Fingerprints of the data a session reads, the same for a frame and for a dataset folder of the same rows.

A saved state records the fingerprint of the columns its session read
(:func:`fingerprint_columns`), and loading the state checks it.  The
fingerprint is a hash of the columns one after the other, each whole, so a
dataset folder's is computed part by part with :class:`ColumnsFingerprint`:
each column's bytes go to a spool file on disk as the parts come, and the
files are hashed in column order at the end.  A state saved on a file
therefore restores on its converted folder.

Examples
--------
>>> import polars as pl
>>> f = pl.DataFrame({"a": [1, 2, 3], "b": ["x", None, "z"]})
>>> acc = ColumnsFingerprint(["a", "b"])
>>> with acc:
...     acc.add(f[:1]); acc.add(f[1:])
...     parted = acc.hexdigest()
>>> parted == fingerprint_columns(f, ["a", "b"])
True
"""

from __future__ import annotations

import contextlib
import hashlib
import tempfile

import numpy as np
import polars as pl

from rewardlab.core.errors import ParameterError

__all__ = ["fingerprint_columns", "ColumnsFingerprint"]

#: Bytes read at once when the spooled columns are hashed.
_BLOCK = 8 << 20


def _numeric(series: pl.Series) -> bool:
    return series.dtype.is_numeric() or series.dtype == pl.Boolean


def fingerprint_columns(frame: pl.DataFrame, names) -> str:
    """``blake2b-128:`` + hex digest of the named columns (names, types and values), in order.

    Numeric and boolean columns are hashed from their memory (one pass, no
    copy for contiguous data), other columns from their text.  Cheap next to
    what a session computes from the same columns.

    Examples
    --------
    >>> f = pl.DataFrame({"a": [1, 2], "b": ["x", None]})
    >>> fingerprint_columns(f, ["a", "b"]) == fingerprint_columns(f, ["a", "b"])
    True
    >>> fingerprint_columns(f, ["a"]) == fingerprint_columns(f.with_columns(a=pl.lit(3)), ["a"])
    False
    """
    digest = hashlib.blake2b(digest_size=16)
    digest.update(np.int64(frame.height).tobytes())
    for name in names:
        series = frame[name]
        digest.update(f"{name}\x00{series.dtype}\x00".encode())
        if _numeric(series):
            values = series.to_numpy()
            if series.null_count():
                digest.update(series.is_null().to_numpy().tobytes())
                values = series.fill_null(0).to_numpy()
            digest.update(np.ascontiguousarray(values).tobytes())
        else:
            text = series.cast(pl.String).fill_null("\x01null").str.join("\x00").item()
            digest.update(text.encode("utf-8"))
    return "blake2b-128:" + digest.hexdigest()


class ColumnsFingerprint:
    """:func:`fingerprint_columns` of frames added one after the other (a dataset folder's parts), in bounded memory.

    A context manager (its spool files live in a temporary folder removed on
    exit); :meth:`add` each frame in order, then :meth:`hexdigest`.

    Parameters
    ----------
    names : list of str
        The columns, in the order they are hashed.

    Examples
    --------
    >>> with ColumnsFingerprint(["reward_a"]) as acc:  # doctest: +SKIP
    ...     for part in dataset.frames(["reward_a"]):
    ...         acc.add(part)
    ...     fingerprint = acc.hexdigest()
    """

    def __init__(self, names):
        self.names = list(names)
        self.rows = 0
        self._dtypes: dict[str, str] = {}
        self._nulls = {name: False for name in self.names}
        self._stack = contextlib.ExitStack()
        self._files: dict[str, tuple] = {}

    def __enter__(self) -> "ColumnsFingerprint":
        spool = self._stack.enter_context(tempfile.TemporaryDirectory(prefix="rewardlab-fingerprint-"))
        for k, name in enumerate(self.names):
            self._files[name] = (self._stack.enter_context(open(f"{spool}/{k}.mask", "w+b")),
                                 self._stack.enter_context(open(f"{spool}/{k}.values", "w+b")))
        return self

    def __exit__(self, *exc) -> None:
        self._stack.close()

    def add(self, frame: pl.DataFrame) -> None:
        """Hash ``frame``'s columns after the rows added before (the same names and types in every frame)."""
        for name in self.names:
            series = frame[name]
            dtype = str(series.dtype)
            if self._dtypes.setdefault(name, dtype) != dtype:
                raise ParameterError("frame", f"should hold column {name!r} as {self._dtypes[name]} like the frames "
                                     "before it", dtype)
            mask, values = self._files[name]
            if _numeric(series):
                if series.null_count():
                    self._nulls[name] = True
                mask.write(series.is_null().to_numpy().tobytes())
                filled = series.fill_null(False if series.dtype == pl.Boolean else 0) if series.null_count() \
                    else series
                values.write(np.ascontiguousarray(filled.to_numpy()).tobytes())  # Boolean: one byte a value
            elif frame.height:
                text = series.cast(pl.String).fill_null("\x01null").str.join("\x00").item()
                values.write((("\x00" if self.rows else "") + text).encode("utf-8"))
        self.rows += frame.height

    def hexdigest(self) -> str:
        """The fingerprint of every row added: what :func:`fingerprint_columns` gives on them in one frame."""
        digest = hashlib.blake2b(digest_size=16)
        digest.update(np.int64(self.rows).tobytes())
        for name in self.names:
            digest.update(f"{name}\x00{self._dtypes.get(name, 'String')}\x00".encode())
            mask, values = self._files[name]
            # a Boolean column with nulls is hashed as fill_null(0) gives it: Int32
            widen = self._nulls[name] and self._dtypes[name] == "Boolean"
            for handle in ((mask, values) if self._nulls[name] else (values,)):
                handle.seek(0)
                while block := handle.read(_BLOCK):
                    digest.update(np.frombuffer(block, np.uint8).astype(np.int32).tobytes()
                                  if widen and handle is values else block)
        return "blake2b-128:" + digest.hexdigest()
