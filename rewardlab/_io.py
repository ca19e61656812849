"""File helpers shared by every writer: atomic writes, compressed text, progress bars.

Writes go to a temporary file in the destination's folder and are renamed into
place, so a crash never leaves half a file; an existing destination is
replaced only when the caller asks.
"""

from __future__ import annotations

import bz2
import contextlib
import gzip
import io
import os
import sys
import tempfile
from pathlib import Path
from typing import IO, Iterator

from rewardlab.errors import OutputExistsError

__all__ = ["atomic_path", "atomic_open", "open_compressed", "progress_enabled", "compression_of"]


def compression_of(path: str | Path) -> str | None:
    """Return ``"gzip"``, ``"bz2"`` or ``None`` from a file name's suffix.

    Examples
    --------
    >>> compression_of("a.tsv.gz"), compression_of("a.bz2"), compression_of("a.tsv")
    ('gzip', 'bz2', None)
    """
    suffix = Path(path).suffix.lower()
    return {".gz": "gzip", ".bz2": "bz2"}.get(suffix)


@contextlib.contextmanager
def atomic_path(path: str | Path, *, overwrite: bool = False) -> Iterator[Path]:
    """Yield a temporary path beside ``path``; rename it onto ``path`` on success.

    Raises :class:`~rewardlab.errors.OutputExistsError` before anything is
    written when ``path`` exists and ``overwrite`` is false.  On an exception
    the temporary file is removed and ``path`` is untouched.

    Examples
    --------
    >>> import tempfile, pathlib
    >>> with tempfile.TemporaryDirectory() as d:
    ...     with atomic_path(pathlib.Path(d) / "x.txt") as tmp:
    ...         _ = tmp.write_text("hi")
    ...     print((pathlib.Path(d) / "x.txt").read_text())
    hi
    """
    path = Path(path)
    if path.exists() and not overwrite:
        raise OutputExistsError(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp_name = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    os.close(fd)
    tmp = Path(tmp_name)
    umask = os.umask(0)
    os.umask(umask)
    os.chmod(tmp, 0o666 & ~umask)  # mkstemp creates 0600; give the file normal permissions
    try:
        yield tmp
        if not overwrite and path.exists():  # appeared while we were writing
            raise OutputExistsError(path)
        os.replace(tmp, path)
    finally:
        if tmp.exists():
            tmp.unlink()


@contextlib.contextmanager
def atomic_open(
    path: str | Path, mode: str = "w", *, overwrite: bool = False, compress: str | None = "auto"
) -> Iterator[IO]:
    """Open ``path`` for writing through :func:`atomic_path`.

    ``compress="auto"`` picks gzip or bz2 from the suffix.  Gzip output is
    written with ``mtime=0`` so the same content gives the same bytes.

    Examples
    --------
    >>> import gzip, tempfile, pathlib
    >>> with tempfile.TemporaryDirectory() as d:
    ...     with atomic_open(pathlib.Path(d) / "x.txt.gz") as f:
    ...         _ = f.write("a b")
    ...     print(gzip.open(pathlib.Path(d) / "x.txt.gz", "rt").read())
    a b
    """
    if mode not in ("w", "wb"):
        raise ValueError(f"`mode` should be 'w' or 'wb'. Received {mode!r}.")
    kind = compression_of(path) if compress == "auto" else compress
    with atomic_path(path, overwrite=overwrite) as tmp:
        with open(tmp, "wb") as raw:
            if kind == "gzip":
                stream: IO[bytes] = gzip.GzipFile(filename="", mode="wb", fileobj=raw, mtime=0)
            elif kind == "bz2":
                stream = bz2.BZ2File(raw, "wb")
            else:
                stream = raw
            try:
                if mode == "w":
                    text = io.TextIOWrapper(stream, encoding="utf-8", newline="\n")
                    yield text
                    text.flush()
                    text.detach()
                else:
                    yield stream
            finally:
                if stream is not raw:
                    stream.close()


def open_compressed(path: str | Path) -> IO[bytes]:
    """Open ``path`` for binary reading, decompressing ``.gz`` / ``.bz2`` transparently.

    Examples
    --------
    >>> import gzip, tempfile, pathlib
    >>> with tempfile.TemporaryDirectory() as d:
    ...     _ = (pathlib.Path(d) / "x.gz").write_bytes(gzip.compress(b"hello"))
    ...     with open_compressed(pathlib.Path(d) / "x.gz") as f:
    ...         print(f.read())
    b'hello'
    """
    kind = compression_of(path)
    if kind == "gzip":
        return gzip.open(path, "rb")
    if kind == "bz2":
        return bz2.open(path, "rb")
    return open(path, "rb")


def progress_enabled(progress: bool | None) -> bool:
    """Resolve a ``progress=None`` default: show bars only on an interactive stderr or in Jupyter.

    Examples
    --------
    >>> progress_enabled(False)
    False
    """
    if progress is not None:
        return bool(progress)
    if os.environ.get("REWARDLAB_PROGRESS") in ("0", "1"):
        return os.environ["REWARDLAB_PROGRESS"] == "1"
    return sys.stderr.isatty() or "ipykernel" in sys.modules
