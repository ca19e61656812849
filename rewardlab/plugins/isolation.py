"""Run plug-in work in a forked child process: exits, hangs and crashes stay there.

A reward plug-in is code.  Run in rewardlab's own process, a plug-in that
calls ``os._exit`` (at import or call time) ends rewardlab without a report,
one that loops forever hangs it, and ``sys.exit`` or a ``BaseException``
unwinds through it.  :func:`run_in_child` forks, runs a function in the child
and brings back its result; whatever the child does, the parent gets either
that result or a :class:`ChildFailure` saying how the child ended and, from a
small shared status block, what it was doing at the time.

* The child inherits the parent's memory (the frame's arrays, loaded
  plug-ins, ``linecache``), so nothing is pickled on the way in; only the
  result comes back, pickled through a pipe.
* The child ignores SIGINT: Ctrl-C reaches the parent, which kills the child
  and raises :class:`KeyboardInterrupt` cleanly.
* ``timeout`` (seconds) kills the child with SIGKILL once passed.
* The child runs torch with one intra-op thread (OpenMP thread pools do not
  survive ``fork``), and must not use Polars (its thread pool does not
  either): give it NumPy arrays.

Forking needs a POSIX system; :data:`AVAILABLE` says whether this one has it.

Examples
--------
>>> from rewardlab.plugins.isolation import run_in_child
>>> run_in_child(lambda status, send: 6 * 7)  # doctest: +SKIP
42
"""

from __future__ import annotations

import dataclasses
import faulthandler
import mmap
import os
import pickle
import resource
import select
import signal
import struct
import sys
import tempfile
import time
import traceback
from typing import Callable

__all__ = ["AVAILABLE", "ChildFailure", "ChildStatus", "run_in_child"]

#: Whether this platform can fork (Linux, macOS); elsewhere plug-ins run in-process.
AVAILABLE = hasattr(os, "fork")

_STATUS_BYTES = 4096
_HEADER = struct.Struct("<qq")  # rows done, length of the "doing" text


class ChildStatus:
    """What the child is doing, in memory shared with the parent.

    The child calls :meth:`doing` before each plug-in call and :meth:`advance`
    after it; the parent reads :attr:`rows` for its progress bar and
    :attr:`text` when the child dies or times out.  Writes are a few bytes
    into shared memory, so they cost nothing next to a plug-in call.

    Examples
    --------
    >>> status = ChildStatus()
    >>> status.doing("batch 3 of mode 'episodes'"); status.advance(10)
    >>> status.text, status.rows
    ("batch 3 of mode 'episodes'", 10)
    """

    def __init__(self):
        self._map = mmap.mmap(-1, _STATUS_BYTES)
        self._map[:_HEADER.size] = _HEADER.pack(0, 0)

    def doing(self, text: str) -> None:
        """Record what is about to run (truncated to about 4 kB)."""
        data = text.encode("utf-8", "replace")[: _STATUS_BYTES - _HEADER.size]
        rows, _ = _HEADER.unpack_from(self._map, 0)
        self._map[_HEADER.size:_HEADER.size + len(data)] = data
        _HEADER.pack_into(self._map, 0, rows, len(data))

    def advance(self, rows: int) -> None:
        """Count ``rows`` more transitions done."""
        done, length = _HEADER.unpack_from(self._map, 0)
        _HEADER.pack_into(self._map, 0, done + int(rows), length)

    @property
    def rows(self) -> int:
        """Transitions done so far."""
        return _HEADER.unpack_from(self._map, 0)[0]

    @property
    def text(self) -> str:
        """The last :meth:`doing` text ("" before the first)."""
        _, length = _HEADER.unpack_from(self._map, 0)
        return bytes(self._map[_HEADER.size:_HEADER.size + length]).decode("utf-8", "replace")

    def close(self) -> None:
        self._map.close()


@dataclasses.dataclass(frozen=True)
class ChildFailure:
    """How a child process ended without a result.

    Attributes
    ----------
    how : str
        ``"exit"`` (it exited, e.g. ``os._exit(3)``), ``"signal"`` (killed by
        a signal, e.g. a segmentation fault), ``"timeout"`` (rewardlab killed
        it after ``timeout`` seconds), ``"cancelled"`` (the caller asked to
        stop) or ``"raised"`` (the function raised in the child and the
        exception could not be brought back as itself).
    detail : str
        The exit status, signal name, time limit, or formatted traceback.
    doing : str
        What the child was doing (its last :meth:`ChildStatus.doing` text).
    stack : str
        The child's Python stack when it was stopped for taking too long
        (faulthandler's text, most recent call first), else "".

    Examples
    --------
    >>> str(ChildFailure("exit", "exit status 3", "batch 0"))
    'the process ended (exit status 3) while running batch 0'
    """

    how: str
    detail: str
    doing: str
    stack: str = ""

    def __str__(self) -> str:
        where = f" while running {self.doing}" if self.doing else ""
        if self.how == "timeout":
            return f"did not finish within {self.detail}{where}; it was stopped"
        if self.how == "raised":
            return f"failed{where}:\n{self.detail}"
        if self.how == "cancelled":
            return f"was cancelled{where}"
        return f"the process ended ({self.detail}){where}"


def _describe_exit(status: int) -> str:
    if os.WIFSIGNALED(status):
        sig = os.WTERMSIG(status)
        try:
            name = signal.Signals(sig).name
        except ValueError:
            name = f"signal {sig}"
        return f"killed by {name}"
    return f"exit status {os.WEXITSTATUS(status)}"


def _write_message(fd: int, payload) -> None:
    data = pickle.dumps(payload, protocol=pickle.HIGHEST_PROTOCOL)
    view = memoryview(struct.pack("<q", len(data)) + data)
    while view:
        n = os.write(fd, view)
        view = view[n:]


def _sendable(payload):
    """``payload`` if it pickles and unpickles; else a text stand-in."""
    try:
        pickle.loads(pickle.dumps(payload, protocol=pickle.HIGHEST_PROTOCOL))
        return payload
    except BaseException as exc:  # noqa: BLE001
        if payload[0] == "raised":
            return ("raised", None, payload[2])
        text = "".join(traceback.format_exception(exc))
        return ("raised", None, "rewardlab could not send a result back:\n" + text)


def _child(fn: Callable, status: ChildStatus, write_fd: int, dump_fd: int) -> None:
    """Run ``fn`` in the child; never returns."""
    code = 0
    try:
        signal.signal(signal.SIGINT, signal.SIG_IGN)
        faulthandler.register(signal.SIGUSR1, file=dump_fd, all_threads=False)
        resource.setrlimit(resource.RLIMIT_CORE, (0, 0))  # a crashing plug-in leaves no core file
        try:
            import torch

            torch.set_num_threads(1)
        except Exception:  # pragma: no cover - torch is a dependency
            pass

        def send(obj) -> None:
            _write_message(write_fd, _sendable(("part", obj)))

        try:
            payload = ("ok", fn(status, send))
        except BaseException as exc:  # noqa: BLE001 - everything goes back to the parent
            payload = ("raised", exc, "".join(traceback.format_exception(exc)))
        _write_message(write_fd, _sendable(payload))
    except BaseException:  # noqa: BLE001
        code = 70
    finally:
        for stream in (sys.stdout, sys.stderr):
            try:
                stream.flush()
            except Exception:  # noqa: BLE001
                pass
        os._exit(code)


def _read_exactly(fd: int, n: int) -> bytes | None:
    chunks, got = [], 0
    while got < n:
        chunk = os.read(fd, min(n - got, 1 << 24))
        if not chunk:
            return None
        chunks.append(chunk)
        got += len(chunk)
    return b"".join(chunks)


def _read_message(fd: int):
    head = _read_exactly(fd, 8)
    if head is None:
        return None
    data = _read_exactly(fd, struct.unpack("<q", head)[0])
    return None if data is None else pickle.loads(data)


def _kill(pid: int) -> None:
    """Kill the child and reap it (no zombie left behind)."""
    try:
        os.kill(pid, signal.SIGKILL)
        os.waitpid(pid, 0)
    except (ProcessLookupError, ChildProcessError):
        pass


def _stack_of(pid: int, dump) -> str:
    """Ask a hung child for its Python stack (faulthandler on SIGUSR1), then read it."""
    try:
        os.kill(pid, signal.SIGUSR1)
    except ProcessLookupError:
        return ""
    deadline = time.monotonic() + 5.0  # the child may wait for a core on a busy machine
    text = last = b""
    while time.monotonic() < deadline:
        time.sleep(0.05)
        dump.seek(0)
        text = dump.read()
        if b"File " in text and text.endswith(b"\n") and text == last:  # written, no longer growing
            break
        last = text
    return text.decode("utf-8", "replace").strip()


def run_in_child(fn: Callable, *, timeout: float | None = None,
                 on_progress: Callable[[int], None] | None = None,
                 on_part: Callable[[object], None] | None = None,
                 cancel: Callable[[], bool] | None = None, poll: float = 0.05):
    """Run ``fn(status, send)`` in a forked child and return its result.

    Parameters
    ----------
    fn : callable
        Takes a :class:`ChildStatus` and a ``send(obj)`` function that
        streams a partial result to the parent (:obj:`on_part`); its return
        value must pickle.
    timeout : float or None
        Seconds before the child is stopped (None: no limit).  A child that
        runs out of time is asked for its Python stack first (so a hung
        plug-in's own frames are reported), then killed.
    on_progress : callable or None
        Called in the parent with the rows done since the last call, while
        the child runs (for a progress bar).
    on_part : callable or None
        Called in the parent with each object the child sends.
    cancel : callable or None
        Polled in the parent; once it returns True the child is killed and
        a ``ChildFailure("cancelled", ...)`` returned.
    poll : float
        Seconds between looks at the child.

    Returns
    -------
    object or ChildFailure
        ``fn``'s result; a :class:`ChildFailure` when the child exited,
        was killed or timed out before returning, or raised an exception
        that could not be brought back.  An exception that can be brought
        back (an ``Exception``; not ``SystemExit`` and the like) is raised
        again in the parent.

    Raises
    ------
    KeyboardInterrupt
        Ctrl-C in the parent: the child is killed first.

    Examples
    --------
    >>> run_in_child(lambda status, send: os._exit(3)).detail  # doctest: +SKIP
    'exit status 3'
    """
    status = ChildStatus()
    read_fd, write_fd = os.pipe()
    dump = tempfile.TemporaryFile()
    for stream in (sys.stdout, sys.stderr):  # no buffered text printed twice
        try:
            stream.flush()
        except Exception:  # noqa: BLE001
            pass
    pid = os.fork()
    if pid == 0:  # pragma: no cover - runs in the child; covered through the parent's view
        os.close(read_fd)
        _child(fn, status, write_fd, dump.fileno())
    os.close(write_fd)
    deadline = None if timeout is None else time.monotonic() + timeout
    reported = 0
    final = None
    try:
        while final is None:
            wait = poll if deadline is None else max(0.0, min(poll, deadline - time.monotonic()))
            ready, _, _ = select.select([read_fd], [], [], wait)
            if on_progress is not None:
                rows = status.rows
                if rows > reported:
                    on_progress(rows - reported)
                    reported = rows
            if ready:
                message = _read_message(read_fd)
                if message is None:  # the child is gone without a word
                    break
                if message[0] == "part":
                    if on_part is not None:
                        on_part(message[1])
                    continue
                final = message
                break
            if cancel is not None and cancel():
                _kill(pid)
                pid = None
                return ChildFailure("cancelled", "cancelled", status.text)
            if deadline is not None and time.monotonic() >= deadline:
                stack = _stack_of(pid, dump)
                _kill(pid)
                pid = None
                detail = f"{timeout:g} s"
                return ChildFailure("timeout", detail, status.text, stack)
        _, code = os.waitpid(pid, 0)
        pid = None
        if final is None:
            return ChildFailure("exit" if os.WIFEXITED(code) else "signal", _describe_exit(code),
                                status.text)
        if final[0] == "ok":
            return final[1]
        if isinstance(final[1], Exception):  # e.g. a rewardlab error: raise it here as itself
            raise final[1]
        return ChildFailure("raised", final[2], status.text)
    finally:
        if pid is not None:  # interrupted (Ctrl-C) or failed while waiting: no orphan left behind
            _kill(pid)
        os.close(read_fd)
        dump.close()
        status.close()
