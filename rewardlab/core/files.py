"""File helpers shared by every writer: atomic writes, compressed text, progress bars.

Writes go to a temporary file in the destination's folder and are renamed into
place, so a crash never leaves half a file; an existing destination is
replaced only when the caller asks.
"""

from __future__ import annotations

import bz2
import contextlib
import errno
import gzip
import io
import os
import re
import secrets
import socket
import stat
import sys
import zlib
from pathlib import Path
from typing import IO, Iterator

from rewardlab.core.errors import (DataFormatError, FileAccessError, OutputExistsError, ParameterError,
                              RewardlabError)

__all__ = ["as_paths", "atomic_path", "atomic_open", "open_compressed", "progress_enabled", "compression_of",
           "check_input", "check_output", "check_not_input", "remove_stale_temporaries", "temp_name",
           "write_errno", "WRITE_ERRNOS"]


def compression_of(path: str | Path) -> str | None:
    """Return ``"gzip"``, ``"bz2"`` or ``None`` from a file name's suffix.

    Examples
    --------
    >>> compression_of("a.tsv.gz"), compression_of("a.bz2"), compression_of("a.tsv")
    ('gzip', 'bz2', None)
    """
    suffix = Path(path).suffix.lower()
    return {".gz": "gzip", ".bz2": "bz2"}.get(suffix)


#: errno values that only a write can cause: a failure with one of them is the output's fault.
WRITE_ERRNOS = frozenset({errno.ENOSPC, errno.EDQUOT, errno.EFBIG, errno.EROFS})

_FILE_KINDS = ((stat.S_ISFIFO, "a FIFO (named pipe)"), (stat.S_ISCHR, "a character device"),
               (stat.S_ISBLK, "a block device"), (stat.S_ISSOCK, "a socket"))


def _kind_of(mode: int) -> str:
    for test, name in _FILE_KINDS:
        if test(mode):
            return name
    return "not a regular file"


def check_input(path: str | Path, *, folder: bool = False) -> os.stat_result:
    """Check that ``path`` can be read as an input, without opening it; return its ``os.stat``.

    Refuses, naming the path: a missing file
    (:class:`~rewardlab.core.errors.DataFormatError`, rule ``missing_file``), a
    folder unless ``folder`` (rule ``not_a_file``), a FIFO, device or socket
    (rule ``not_a_file``: opening a FIFO for reading would block until a
    writer appears), and a file this process may not read
    (:class:`~rewardlab.core.errors.FileAccessError`).

    Examples
    --------
    >>> import tempfile, pathlib
    >>> with tempfile.TemporaryDirectory() as d:
    ...     _ = check_input(d, folder=True)
    ...     check_input(pathlib.Path(d) / "nope.tsv")
    Traceback (most recent call last):
    ...
    rewardlab.core.errors.DataFormatError: .../nope.tsv: no such file [rule: missing_file] Check the path.
    """
    try:
        st = os.stat(path)
    except FileNotFoundError:
        raise DataFormatError(path, None, None, "missing_file", "no such file",
                              hint="Check the path.") from None
    except OSError as exc:
        raise FileAccessError(path, f"cannot be read ({exc.strerror or exc})",
                              hint="Check the path and the permissions of its folders") from None
    if stat.S_ISDIR(st.st_mode):
        if folder:
            return st
        raise DataFormatError(path, None, None, "not_a_file", "is a folder, not a file",
                              hint="Name a file.")
    if not stat.S_ISREG(st.st_mode):
        raise DataFormatError(path, None, None, "not_a_file",
                              f"is {_kind_of(st.st_mode)}, not a regular file; rewardlab reads its inputs "
                              "from files (reading a pipe could block and cannot be read twice)",
                              hint="Save the data to a regular file first and pass that.")
    if not os.access(path, os.R_OK):
        raise FileAccessError(path, "cannot be read: permission denied",
                              hint="Give this user read access (e.g. chmod u+r) or copy the file")
    return st


def _same_file(a: Path, b: Path) -> bool:
    try:
        return os.path.samefile(a, b)
    except OSError:
        return a.resolve() == b.resolve()


def check_not_input(output: str | Path | None, inputs, *, name: str, folder_suffixes=()) -> None:
    """Refuse an output path that is one of the inputs (same file: hard links and symlinks too).

    ``folder_suffixes``: an output with one of these suffixes inside an input
    folder is refused too (a loader of that folder would pick it up as part
    of the input).

    Examples
    --------
    >>> import tempfile, pathlib
    >>> with tempfile.TemporaryDirectory() as d:
    ...     src = pathlib.Path(d) / "a.tsv"
    ...     _ = src.write_text("")
    ...     check_not_input(pathlib.Path(d) / "b.parquet", [src], name="out")  # fine
    ...     try:
    ...         check_not_input(src, [src], name="out")
    ...     except ValueError as exc:
    ...         print(str(exc)[:49])
    `out` should not name one of the command's inputs
    """
    if output is None:
        return
    if not isinstance(output, (str, os.PathLike)):
        raise ParameterError(name, "should be a file path (a str or pathlib.Path)", output)
    output = Path(output)
    inputs = [inputs] if isinstance(inputs, (str, Path)) else list(inputs)
    for source in inputs:
        if source is None:
            continue
        source = Path(source)
        if output.exists() and source.exists() and _same_file(output, source):
            what = "" if output == source else f" ({source})"
            raise ParameterError(name, f"should not name one of the command's inputs{what}; writing it "
                                 "would destroy the input, even with overwrite", str(output),
                                 hint="Choose another output path.")
        if (folder_suffixes and output.suffix in folder_suffixes and source.is_dir()
                and output.parent.exists() and _same_file(output.parent, source)):
            raise ParameterError(name, f"should not be inside the input folder {source}: the next load "
                                 "of that folder would read it as part of the data", str(output),
                                 hint="Write it to another folder.")


def check_output(path: str | Path, *, overwrite: bool = False) -> Path:
    """Check, before any work, that ``path`` can be written; return it as a Path.

    Refuses (naming the path) an existing file unless ``overwrite``
    (:class:`~rewardlab.core.errors.OutputExistsError`), and with
    :class:`~rewardlab.core.errors.FileAccessError` whatever overwrite says: a
    folder, a FIFO or device, a missing folder, a parent that is a file,
    an empty path.  rewardlab does not create folders, so a mistyped folder
    is reported rather than created.

    Examples
    --------
    >>> import tempfile, pathlib
    >>> with tempfile.TemporaryDirectory() as d:
    ...     check_output(d, overwrite=True)
    Traceback (most recent call last):
    ...
    rewardlab.core.errors.FileAccessError: ...: is a folder; name a file to write. ...
    """
    if not isinstance(path, (str, os.PathLike)):
        raise ParameterError("path", "should be a file path (a str or pathlib.Path)", path)
    if str(path) in ("", "."):
        raise FileAccessError(repr(str(path)), "is not a file name", hint="Name the file to write")
    path = Path(path)
    try:
        st = os.stat(path)
    except FileNotFoundError:
        st = None
    except NotADirectoryError:
        st = None  # a parent is a file: reported below
    except OSError as exc:
        raise FileAccessError(path, f"cannot be checked ({exc.strerror or exc})",
                              hint="Check the path and the permissions of its folders") from None
    if st is not None:
        if stat.S_ISDIR(st.st_mode):
            raise FileAccessError(path, "is a folder; name a file to write",
                                  hint=f"For example {path / ('out' + (path.suffix or '.txt'))}")
        if not stat.S_ISREG(st.st_mode):
            raise FileAccessError(path, f"is {_kind_of(st.st_mode)}, not a regular file; rewardlab "
                                  "writes only regular files", hint="Name a regular file")
        if not overwrite:
            raise OutputExistsError(path)
    parent = path.parent
    try:
        parent_mode = os.stat(parent).st_mode
    except (FileNotFoundError, NotADirectoryError):
        missing = next((p for p in reversed(parent.parents) if not p.is_dir()), parent)
        if missing.exists():
            raise FileAccessError(path, f"{missing} is a file, not a folder",
                                  hint="Choose an output path inside a folder") from None
        raise FileAccessError(path, f"the folder {parent} does not exist",
                              hint="Create it first (rewardlab does not create folders)") from None
    except OSError as exc:
        raise FileAccessError(path, f"its folder cannot be checked ({exc.strerror or exc})",
                              hint="Check the permissions of its folders") from None
    if not stat.S_ISDIR(parent_mode):
        raise FileAccessError(path, f"{parent} is a file, not a folder",
                              hint="Choose an output path inside a folder")
    if not os.access(parent, os.W_OK | os.X_OK):
        raise FileAccessError(path, f"the folder {parent} is not writable: permission denied",
                              hint="Choose a folder you may write to")
    return path


def _host_code() -> str:
    return f"{zlib.crc32(socket.gethostname().encode()):08x}"


_TEMP_MIDDLE = re.compile(r"(?P<host>[0-9a-f]{8})-(?P<pid>[0-9]+)-[0-9a-f]+")


def temp_name(path: Path) -> str:
    """The temporary file name :func:`atomic_path` writes ``path`` under (host, pid, random token).

    Examples
    --------
    >>> import pathlib
    >>> name = temp_name(pathlib.Path("x.parquet"))
    >>> name.startswith(".x.parquet.") and name.endswith(".tmp")
    True
    """
    return f".{path.name}.{_host_code()}-{os.getpid()}-{secrets.token_hex(4)}.tmp"


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except (PermissionError, OverflowError, ValueError):
        return True  # another user's process (or a pid we cannot test): keep its file
    return True


def remove_stale_temporaries(path: str | Path) -> list[Path]:
    """Remove the temporaries of ``path`` that writers killed on this host left behind.

    A temporary is stale when its name (:func:`temp_name`) carries this
    host's code and the pid of a process that no longer runs; the
    temporaries of running writers (this process included) and of other
    hosts sharing the folder are kept.  Returns the files removed.

    Examples
    --------
    >>> import tempfile, pathlib
    >>> with tempfile.TemporaryDirectory() as d:
    ...     remove_stale_temporaries(pathlib.Path(d) / "x.parquet")
    []
    """
    path = Path(path)
    prefix, here, removed = f".{path.name}.", _host_code(), []
    try:
        entries = list(os.scandir(path.parent))
    except OSError:
        return removed
    for entry in entries:
        name = entry.name
        if not (name.startswith(prefix) and name.endswith(".tmp")):
            continue
        match = _TEMP_MIDDLE.fullmatch(name[len(prefix):-len(".tmp")])
        if match is None or match["host"] != here:
            continue
        pid = int(match["pid"])
        if pid == os.getpid() or _alive(pid):
            continue
        try:
            os.unlink(entry.path)
            removed.append(Path(entry.path))
        except OSError:
            pass
    return removed


def write_errno(exc: BaseException) -> int | None:
    """The errno of a failed write in ``exc`` (an OSError, or a Polars error quoting ``os error N``).

    Examples
    --------
    >>> import errno
    >>> write_errno(OSError(errno.ENOSPC, "No space left on device")) == errno.ENOSPC
    True
    >>> write_errno(RuntimeError("parquet: underlying IO error: File too large (os error 27)"))
    27
    """
    code = getattr(exc, "errno", None)
    if isinstance(code, int):
        return code
    match = re.search(r"(?:os error|errno) (\d+)", str(exc), flags=re.IGNORECASE)
    return int(match.group(1)) if match else None


@contextlib.contextmanager
def atomic_path(path: str | Path, *, overwrite: bool = False) -> Iterator[Path]:
    """Yield a temporary path beside ``path``; rename it onto ``path`` on success.

    Checks ``path`` first with :func:`check_output` (an existing file and
    ``overwrite`` false: :class:`~rewardlab.core.errors.OutputExistsError`; a
    folder, a missing folder, a parent that is a file:
    :class:`~rewardlab.core.errors.FileAccessError`), before anything is written.
    On an exception the temporary file is removed and ``path`` is untouched;
    a failed write (full disk, quota, file too large, read-only file
    system) becomes a :class:`~rewardlab.core.errors.FileAccessError` naming
    ``path``.  Temporaries left by killed writers of ``path`` on this host
    are removed first (:func:`remove_stale_temporaries`).

    Examples
    --------
    >>> import tempfile, pathlib
    >>> with tempfile.TemporaryDirectory() as d:
    ...     with atomic_path(pathlib.Path(d) / "x.txt") as tmp:
    ...         _ = tmp.write_text("hi")
    ...     print((pathlib.Path(d) / "x.txt").read_text())
    hi
    """
    path = check_output(path, overwrite=overwrite)
    remove_stale_temporaries(path)
    tmp = path.parent / temp_name(path)
    try:
        os.close(os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o666))  # normal permissions (umask)
    except OSError as exc:
        raise FileAccessError(path, f"cannot be written ({exc.strerror or exc})",
                              hint=_write_hint(exc)) from None
    try:
        yield tmp
        if not overwrite and path.exists():  # appeared while we were writing
            raise OutputExistsError(path)
        os.replace(tmp, path)
    except RewardlabError:
        raise
    except Exception as exc:
        code = write_errno(exc)
        if code in WRITE_ERRNOS or (isinstance(exc, OSError) and exc.filename in (str(tmp), str(path))):
            reason = os.strerror(code) if code else str(exc)
            raise FileAccessError(path, f"could not be written ({reason}); nothing was written there",
                                  hint=_write_hint(exc)) from exc
        raise
    finally:
        with contextlib.suppress(OSError):
            tmp.unlink()


def _write_hint(exc: BaseException) -> str:
    code = write_errno(exc)
    if code in (errno.ENOSPC, errno.EDQUOT):
        return "Free some space on that disk, or write to another one"
    if code == errno.EFBIG:
        return "The file system (or a ulimit -f) refuses a file this large; write to another disk"
    if code == errno.EROFS:
        return "That file system is read-only; write somewhere else"
    return "Check the folder's permissions and free space"


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

    ``.gz`` goes through python-isal's ``igzip`` (same errors as :mod:`gzip`:
    ``EOFError`` for a truncated stream, ``gzip.BadGzipFile`` / ``OSError``
    for a damaged one), ``.bz2`` through the standard library.

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
        from isal import igzip  # ISA-L's gzip: the stdlib's interface, about 2-3x its speed

        return igzip.open(path, "rb")
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


def as_paths(paths) -> list[Path]:
    """``paths`` (a path, or a list / iterable of paths) as a non-empty list of :class:`~pathlib.Path`.

    Examples
    --------
    >>> as_paths("a.tsv"), as_paths(["a.tsv", Path("b.tsv")])
    ([PosixPath('a.tsv')], [PosixPath('a.tsv'), PosixPath('b.tsv')])
    >>> as_paths([])
    Traceback (most recent call last):
    rewardlab.core.errors.ParameterError: `paths` should name at least one file. Received [].
    """
    if isinstance(paths, (str, os.PathLike)):
        return [Path(paths)]
    try:
        items = list(paths)
    except TypeError:
        raise ParameterError("paths", "should be a path or a list of paths", type(paths).__name__) from None
    if not items:
        raise ParameterError("paths", "should name at least one file", items)
    if not all(isinstance(p, (str, os.PathLike)) for p in items):
        raise ParameterError("paths", "should be a path or a list of paths", type(paths).__name__)
    return [Path(p) for p in items]
