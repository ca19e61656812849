"""Run plug-in work in a forked child process: exits, hangs, crashes and stray processes stay there.

A reward plug-in is code.  Run in rewardlab's own process, a plug-in that
calls ``os._exit`` (at import or call time) ends rewardlab without a report,
one that loops forever hangs it, ``sys.exit`` or a ``BaseException`` unwinds
through it, and processes it starts outlive it.  :func:`run_in_child` forks,
runs a function in a child and brings back its result; whatever the child
does, the parent gets either that result or a :class:`ChildFailure` saying
how the child ended and, from a small shared status block, what it was doing
at the time.  When it returns (a result, a failure, a timeout, a cancel,
Ctrl-C), no process the plug-in started is left running.

How the plug-in's processes are ended: the parent forks a *keeper*, and the
keeper forks the *worker*, which runs the function (loads and calls the
plug-ins).  The keeper runs no plug-in code.  On Linux it is a child
subreaper (``prctl(PR_SET_CHILD_SUBREAPER)``), so every process the worker
starts stays below it whatever it does: a plain ``fork`` (same process
group), a new session (``os.setsid``, ``subprocess.Popen(...,
start_new_session=True)``) or a double-forked daemon whose middle process
exits is re-parented to the keeper, never to init.  The keeper waits for the
worker with ``waitpid`` (its death itself, not the end of a pipe a grandchild
may hold open), then kills (SIGKILL) every process left below it, found by
walking the parent links of ``/proc/*/stat``, reaps them, and only then tells
the parent, through a pipe only it holds, how the worker ended.  A subreaper
with no child left has no descendant left, so "no child" (``ECHILD``) is the
proof the tree is gone; on the common path (no process started) that proof
costs one ``waitpid``.  A timeout, a cancel or Ctrl-C asks the keeper
(SIGTERM) to kill the worker, and the same clean-up follows.  The keeper
reaps everything itself, so no zombie is left even where init does not
reap.  The parent watches the keeper with ``waitpid`` beside the two pipes
(continuing it with SIGCONT if a plug-in stopped it), and a keeper that
dies without its word (a plug-in killed it) is reported as such, after
rewardlab kills the worker and what it can still find below it.

* The child inherits the parent's memory (the frame's arrays, loaded
  plug-ins, ``linecache``), so nothing is pickled on the way in; only the
  result comes back, pickled through a pipe that the parent reads without
  ever blocking, so a grandchild holding it open or writing into it cannot
  hang the parent (what cannot be read back is a failure, not a traceback).
* The worker ignores SIGINT: Ctrl-C reaches the parent, which ends the
  worker's tree and raises :class:`KeyboardInterrupt` cleanly.
* ``timeout`` (seconds) ends the worker's tree once passed, after asking the
  worker for its Python stack (not when it is stopped: it could not answer).
* A copy of the worker that a plug-in forks and lets return into rewardlab
  (``os.fork()`` with no ``os._exit`` in the copy) ends quietly at its next
  step: only the worker sends results.
* The worker runs torch with one intra-op thread (OpenMP thread pools do not
  survive ``fork``), and must not use Polars (its thread pool does not
  either): give it NumPy arrays.
* The keeper costs a second ``fork`` per run; its own exit is reaped in a
  background thread, so the parent does not wait for it.

What cannot be reported: a plug-in runs as the user and can signal any of
the user's processes.  One that stops (SIGSTOP) its parent, the keeper, is
continued by rewardlab; one that kills the keeper takes the subreaper with
it, so a daemon that had already left the worker's own tree (a double fork)
can no longer be found.  A plug-in that stops or kills rewardlab's own
process (the keeper's parent) cannot be reported at all: nothing is left to
report it.  One that stops itself is reported only when a ``timeout`` is
set.  Without ``/proc`` and ``prctl`` (macOS) the worker's death is still
seen directly, but the processes a plug-in started are not looked for; and
plug-ins run in-process (``isolate=False``) are not watched at all.

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
import fcntl
import mmap
import os
import pickle
import resource
import selectors
import signal
import struct
import sys
import tempfile
import threading
import time
import traceback
from typing import Callable

__all__ = ["AVAILABLE", "ChildFailure", "ChildStatus", "run_in_child"]

#: Whether this platform can fork (Linux, macOS); elsewhere plug-ins run in-process.
AVAILABLE = hasattr(os, "fork")

_STATUS_BYTES = 4096
_HEADER = struct.Struct("<qq")  # rows done, length of the "doing" text
_WORKER = struct.Struct("<q")  # the worker's pid (0 before the keeper forked it)
_TEXT = _HEADER.size + _WORKER.size  # where the "doing" text starts
_ENDED = struct.Struct("<qq")  # the keeper's last word: the worker's pid and wait status
#: Feeders of this process that may read and send an item at the same time (each item is one dataset
#: part's arrays, ~1 KB a row): the parent's memory stays a few parts whatever the number of workers,
#: and reading a part takes a small share of the time a worker spends on it.
FEEDS_AT_ONCE = 4
_SENDING = threading.BoundedSemaphore(FEEDS_AT_ONCE)

#: A fed item's head: the pickle's size and the number of out-of-band buffers after it.
_FEED_HEAD = struct.Struct("<qq")
_CHUNK = 1 << 20
_END_GRACE = 10.0  # seconds the keeper has to end the tree once asked, before rewardlab kills it
_PROC = "/proc"
_PR_SET_CHILD_SUBREAPER = 36

# Taken once: a plug-in that replaces os._exit or os.write does not change how rewardlab ends.
_exit, _write, _getpid, _kill = os._exit, os.write, os.getpid, os.kill


class ChildStatus:
    """What the child is doing, in memory shared with the parent.

    The child calls :meth:`doing` before each plug-in call and :meth:`advance`
    after it; the parent reads :attr:`rows` for its progress bar and
    :attr:`text` when the child dies or times out.  Writes are a few bytes
    into shared memory, so they cost nothing next to a plug-in call.  In a
    copy of the child that a plug-in forked and let return into rewardlab,
    either call ends that copy (``os._exit(0)``): only the child reports.

    Examples
    --------
    >>> status = ChildStatus()
    >>> status.doing("batch 3 of mode 'episodes'"); status.advance(10)
    >>> status.text, status.rows
    ("batch 3 of mode 'episodes'", 10)
    """

    def __init__(self):
        self._map = mmap.mmap(-1, _STATUS_BYTES)
        self._map[:_TEXT] = _HEADER.pack(0, 0) + _WORKER.pack(0)
        self._owner = None  # the worker's pid, once it runs

    def _check_owner(self) -> None:
        if self._owner is not None and _getpid() != self._owner:
            _exit(0)  # a forked copy of the worker: it must not report, nor run more plug-in calls

    def doing(self, text: str) -> None:
        """Record what is about to run (truncated to about 4 kB)."""
        self._check_owner()
        data = text.encode("utf-8", "replace")[: _STATUS_BYTES - _TEXT]
        rows, _ = _HEADER.unpack_from(self._map, 0)
        self._map[_TEXT:_TEXT + len(data)] = data
        _HEADER.pack_into(self._map, 0, rows, len(data))

    def advance(self, rows: int) -> None:
        """Count ``rows`` more transitions done."""
        self._check_owner()
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
        return bytes(self._map[_TEXT:_TEXT + length]).decode("utf-8", "replace")

    @property
    def worker(self) -> int:
        """The pid of the process running the plug-ins (0 before it started and once it ended)."""
        return _WORKER.unpack_from(self._map, _HEADER.size)[0]

    @worker.setter
    def worker(self, pid: int) -> None:
        _WORKER.pack_into(self._map, _HEADER.size, pid)

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
        exception could not be brought back as itself, or what the child
        sent back could not be read).
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


# --- the process tree -----------------------------------------------------------------------------


def _parents() -> dict[int, int]:
    """``{pid: parent pid}`` of every process in ``/proc`` (empty without it)."""
    table = {}
    try:
        names = os.listdir(_PROC)
    except OSError:
        return table
    for name in names:
        if not name.isdigit():
            continue
        try:
            table[int(name)] = int(_stat_fields(int(name)).split(None, 2)[1])
        except (OSError, ValueError, IndexError):
            continue
    return table


def _descendants(root: int) -> list[int]:
    """The processes below ``root`` (children first), from ``/proc``'s parent links."""
    children: dict[int, list[int]] = {}
    for pid, parent in _parents().items():
        children.setdefault(parent, []).append(pid)
    found, todo, seen = [], [root], {root}
    while todo:
        for child in children.get(todo.pop(), ()):
            if child not in seen:  # a pid reused while /proc was read could close a loop
                seen.add(child)
                found.append(child)
                todo.append(child)
    return found


def _stat_fields(pid: int) -> bytes:
    """``/proc/PID/stat`` after the command name: ``b"state ppid ..."`` (the name may hold spaces and
    parentheses, so it is cut at the last ``)``); OSError when the process is gone."""
    fd = os.open(f"{_PROC}/{pid}/stat", os.O_RDONLY)
    try:
        data = os.read(fd, 1024)
    finally:
        os.close(fd)
    return data[data.rfind(b")") + 2:]


def _state(pid: int) -> bytes:
    """The state letter of ``pid`` in ``/proc`` (``b"T"`` stopped, ``b"Z"`` zombie; ``b""`` when gone)."""
    try:
        return _stat_fields(pid)[:1]
    except OSError:
        return b""


def _signal(pid: int, sig: int) -> None:
    try:
        _kill(pid, sig)
    except (ProcessLookupError, PermissionError):
        pass


_PRCTL = []  # libc's prctl, looked up once in the parent (Linux)


def _find_prctl() -> None:
    if not _PRCTL and sys.platform.startswith("linux"):
        try:
            import ctypes

            _PRCTL.append(ctypes.CDLL(None, use_errno=True).prctl)
        except Exception:  # noqa: BLE001 - without it, orphans go to init: the tree walk still ends the rest
            _PRCTL.append(None)


def _become_subreaper() -> None:
    """Make this process adopt its orphaned descendants (Linux; elsewhere nothing)."""
    if _PRCTL and _PRCTL[0] is not None:
        _PRCTL[0](_PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0)


def _end_descendants(deadline: float) -> None:
    """Kill every process below this one and reap it (this process being a subreaper).

    With no child left, there is no descendant left: an orphan below a
    subreaper is re-parented to it.  The walk is repeated, as processes fork
    while it runs.
    """
    me = _getpid()
    while True:
        try:
            while os.waitpid(-1, os.WNOHANG)[0]:
                pass
        except ChildProcessError:
            return
        for pid in _descendants(me):
            _signal(pid, signal.SIGKILL)
        if time.monotonic() > deadline:
            return
        time.sleep(0.002)


# --- the worker and its keeper --------------------------------------------------------------------


def _write_message(fd: int, payload) -> None:
    data = pickle.dumps(payload, protocol=pickle.HIGHEST_PROTOCOL)
    view = memoryview(struct.pack("<q", len(data)) + data)
    while view:
        n = _write(fd, view)
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


def _read_exactly(stream, size: int) -> bytearray:
    buffer = bytearray(size)
    view, got = memoryview(buffer), 0
    while got < size:
        n = stream.readinto(view[got:])
        if not n:
            raise EOFError("rewardlab's feed of data to the plug-in process ended early")
        got += n
    return buffer


def _received(fds: tuple[int, int]):
    """The objects the parent feeds (see :func:`run_in_child`'s ``feed``), one at a time, each asked for.

    ``fds`` is (the data pipe's read end, the ask pipe's write end): one byte
    on the ask pipe lets the parent's feeder read and send the next item, so
    the parent holds an item only while it is being sent.
    """
    data_fd, ask_fd = fds
    with os.fdopen(data_fd, "rb", buffering=1 << 20) as stream:
        try:
            while True:
                try:
                    os.write(ask_fd, b"\x01")
                except BrokenPipeError:
                    pass  # the feeder has stopped: what it sent last (end, abort) is read below
                head = _read_exactly(stream, _FEED_HEAD.size)
                meta_size, count = _FEED_HEAD.unpack(head)
                sizes = struct.unpack(f"<{count}q", _read_exactly(stream, 8 * count)) if count else ()
                meta = _read_exactly(stream, meta_size)
                buffers = [_read_exactly(stream, n) for n in sizes]
                kind, payload = pickle.loads(meta, buffers=buffers)
                if kind == "end":
                    return
                if kind == "abort":  # the parent could not read the next item: it reports why
                    raise EOFError("rewardlab's parent process stopped feeding data: " + str(payload))
                yield payload
        finally:
            os.close(ask_fd)


def _worker(fn: Callable, status: ChildStatus, write_fd: int, dump_fd: int,
            feed_fds: tuple[int, int] | None = None) -> None:
    """Run ``fn`` in the worker; never returns."""
    code = 0
    me = status._owner = _getpid()
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
            if _getpid() != me:  # a copy a plug-in forked: only the worker reports
                _exit(0)
            _write_message(write_fd, _sendable(("part", obj)))

        try:
            payload = ("ok", fn(status, send) if feed_fds is None else fn(status, send, _received(feed_fds)))
        except BaseException as exc:  # noqa: BLE001 - everything goes back to the parent
            payload = ("raised", exc, "".join(traceback.format_exception(exc)))
        if _getpid() == me:
            _write_message(write_fd, _sendable(payload))
    except BaseException:  # noqa: BLE001
        code = 70
    finally:
        for stream in (sys.stdout, sys.stderr):
            try:
                stream.flush()
            except BaseException:  # noqa: BLE001
                pass
        _exit(code if _getpid() == me else 0)


def _keeper(fn: Callable, status: ChildStatus, write_fd: int, ended_fd: int, dump_fd: int,
            feed_fds: tuple[int, int] | None = None) -> None:
    """Fork the worker, wait for it, end every process left below, tell the parent; never returns."""
    code = 0
    try:
        signal.signal(signal.SIGINT, signal.SIG_IGN)
        signal.signal(signal.SIGCHLD, signal.SIG_DFL)  # waitpid must see the worker's status
        worker, ending = 0, False

        def end(signum, frame):  # the parent asks: timeout, cancel, Ctrl-C
            nonlocal ending
            ending = True
            if worker:
                _signal(worker, signal.SIGKILL)

        signal.signal(signal.SIGTERM, end)
        _become_subreaper()
        try:
            worker = os.fork()
        except OSError as exc:
            _write(ended_fd, _ENDED.pack(0, exc.errno or 0))
            return
        if worker == 0:  # pragma: no cover - runs in the worker
            signal.signal(signal.SIGTERM, signal.SIG_DFL)
            os.close(ended_fd)
            _worker(fn, status, write_fd, dump_fd, feed_fds)
            _exit(70)
        if feed_fds is not None:
            for fd in feed_fds:  # only the worker holds the feed's ends: its death ends the parent's writes
                os.close(fd)
        status.worker = worker
        if ending:
            _signal(worker, signal.SIGKILL)
        os.close(write_fd)
        while True:  # reap orphans adopted meanwhile until the worker itself ends
            pid, wait_status = os.waitpid(-1, 0)
            if pid == worker:
                break
        status.worker = 0  # reaped: its pid may be reused, so the parent must no longer signal it
        _end_descendants(time.monotonic() + _END_GRACE)
        _write(ended_fd, _ENDED.pack(worker, wait_status))
    except BaseException:  # noqa: BLE001
        code = 70
    finally:
        _exit(code)


# --- the parent's side ----------------------------------------------------------------------------


class _Messages:
    """The length-prefixed pickles read from the worker, never blocking on a read."""

    def __init__(self, fd: int):
        self.fd, self.buffer, self.closed, self.junk = fd, bytearray(), False, None

    def read(self) -> None:
        """Read what is there now: until the pipe is empty or closed, at most 64 MB at a time."""
        for _ in range(64):
            try:
                chunk = os.read(self.fd, _CHUNK)
            except BlockingIOError:
                return
            if not chunk:
                self.closed = True
                return
            self.buffer += chunk

    def messages(self) -> list:
        """The whole messages read so far; :attr:`junk` says why reading stopped at one that is not."""
        found, start = [], 0
        try:
            while self.junk is None and len(self.buffer) - start >= 8:
                size = struct.unpack_from("<q", self.buffer, start)[0]
                if size < 0:
                    raise ValueError(f"a message length of {size} bytes")
                if len(self.buffer) - start - 8 < size:
                    break
                with memoryview(self.buffer) as view, view[start + 8:start + 8 + size] as data:
                    message = pickle.loads(data)
                start += 8 + size
                if not (isinstance(message, tuple) and len(message) >= 2
                        and message[0] in ("part", "ok", "raised")):
                    raise ValueError(f"an unexpected message ({type(message).__name__})")
                found.append(message)
        except (Exception, SystemExit) as exc:  # noqa: BLE001 - e.g. a plug-in wrote into the pipe
            self.junk = "".join(traceback.format_exception_only(type(exc), exc)).strip()
        if self.junk is None:
            del self.buffer[:start]
        return found

    @property
    def unfinished(self) -> bool:
        """Whether bytes of a message that never ended are left."""
        return bool(self.buffer)


def _stack_of(pid: int, dump) -> str:
    """Ask a hung worker for its Python stack (faulthandler on SIGUSR1), then read it."""
    if not pid or _state(pid) in (b"T", b"t"):  # a stopped process cannot answer
        return ""
    try:
        _kill(pid, signal.SIGUSR1)
    except ProcessLookupError:
        return ""
    deadline = time.monotonic() + 5.0  # the worker may wait for a core on a busy machine
    text = last = b""
    while time.monotonic() < deadline:
        time.sleep(0.05)
        dump.seek(0)
        text = dump.read()
        if b"File " in text and text.endswith(b"\n") and text == last:  # written, no longer growing
            break
        last = text
    return text.decode("utf-8", "replace").strip()


def _reap_later(pid: int) -> None:
    """Reap the keeper in the background: it exits at once, but a large process takes a while to unmap."""
    def reap():
        try:
            os.waitpid(pid, 0)
        except ChildProcessError:
            pass

    threading.Thread(target=reap, name=f"rewardlab-reap-{pid}", daemon=True).start()


class _Keeper:
    """The parent's handle on the keeper process: its end, its stops, its last word."""

    def __init__(self, pid: int, ended_fd: int, status: ChildStatus):
        self.pid, self.ended_fd, self.status = pid, ended_fd, status
        self.ended = None  # (worker pid, wait status) once the keeper said how the worker ended
        self.exit = None  # the keeper's own wait status once reaped
        self._word = b""

    @property
    def done(self) -> bool:
        """Whether the keeper has spoken or is gone."""
        return self.ended is not None or self.exit is not None

    def look(self) -> None:
        """Reap the keeper if it ended (continue it if stopped), then read its word if there."""
        if self.exit is None:
            try:
                pid, wait_status = os.waitpid(self.pid, os.WNOHANG | os.WUNTRACED)
            except ChildProcessError:  # reaped elsewhere (SIGCHLD ignored): its pipe's end tells
                pid, wait_status = 0, 0
                if self.ended_fd is None:
                    self.exit = 0
            if pid and os.WIFSTOPPED(wait_status):
                _signal(self.pid, signal.SIGCONT)  # the plug-in stopped its parent
            elif pid:
                self.exit = wait_status  # all it wrote is in the pipe now
        while self.ended is None and self.ended_fd is not None:
            try:
                chunk = os.read(self.ended_fd, _ENDED.size - len(self._word))
            except BlockingIOError:
                break
            if not chunk:  # the keeper is gone (only it held the other end)
                os.close(self.ended_fd)
                self.ended_fd = None
                break
            self._word += chunk
            if len(self._word) == _ENDED.size:
                self.ended = _ENDED.unpack(self._word)

    def finish(self) -> None:
        """Let the keeper go: reap it now or in the background."""
        if self.exit is None:
            try:
                if os.waitpid(self.pid, os.WNOHANG)[0] == 0:
                    _reap_later(self.pid)
            except ChildProcessError:
                pass
            self.exit = 0
        if self.ended_fd is not None:
            os.close(self.ended_fd)
            self.ended_fd = None

    def end(self) -> None:
        """Have the keeper end the worker's tree; kill what is left if it does not in time."""
        if self.done:
            self.finish()
            return
        _signal(self.pid, signal.SIGTERM)
        _signal(self.pid, signal.SIGCONT)  # a stopped keeper takes SIGTERM only once continued
        deadline = time.monotonic() + _END_GRACE
        selector = selectors.DefaultSelector()
        try:
            if self.ended_fd is not None:
                selector.register(self.ended_fd, selectors.EVENT_READ)
            while not self.done and time.monotonic() < deadline:
                selector.select(0.02)  # once its pipe is closed, this waits the whole time
                self.look()
        finally:
            selector.close()
            if not self.done:
                self.kill()
            self.finish()

    def kill(self) -> None:
        """The keeper did not answer or is dead: kill the worker and every process still found below."""
        roots = [self.pid] if self.exit is None else []
        worker = self.status.worker
        if worker:
            roots.append(worker)
        for root in roots:
            _signal(root, signal.SIGSTOP)  # no more forks or reaping while the tree is walked
        victims = {pid for root in roots for pid in _descendants(root)} | set(roots)
        for pid in victims:
            _signal(pid, signal.SIGKILL)
        deadline = time.monotonic() + _END_GRACE  # not its children: wait until they have died
        while any(_state(pid) not in (b"", b"Z", b"X") for pid in victims) and time.monotonic() < deadline:
            time.sleep(0.005)
        if self.exit is None:
            try:
                self.exit = os.waitpid(self.pid, 0)[1]
            except ChildProcessError:
                self.exit = 0


class _Feeder:
    """The parent's thread that sends a feed's items into the worker's pipe, each when the worker asks.

    The next item is read (``next(items)``) only once the worker has asked
    for it, and sent with pickle's out-of-band buffers (protocol 5: a numpy
    array's memory is written straight into the pipe, never copied into a
    pickle), so the parent holds an item only while sending it; at most
    :data:`FEEDS_AT_ONCE` feeders of this process read and send at once,
    however many workers run.
    """

    def __init__(self, items, fd: int, ask_fd: int):
        self.error: BaseException | None = None
        self._fd = fd
        self._ask_fd = ask_fd
        self._thread = threading.Thread(target=self._run, args=(items,), name="rewardlab-feed", daemon=True)
        self._thread.start()

    def _write(self, data) -> None:
        view = memoryview(data).cast("B")
        while view:
            n = os.write(self._fd, view)
            view = view[n:]

    def _send(self, kind: str, payload) -> None:
        buffers: list[pickle.PickleBuffer] = []
        meta = pickle.dumps((kind, payload), protocol=5, buffer_callback=buffers.append)
        raws = [b.raw() for b in buffers]
        self._write(_FEED_HEAD.pack(len(meta), len(raws))
                    + (struct.pack(f"<{len(raws)}q", *(r.nbytes for r in raws)) if raws else b""))
        self._write(meta)
        for raw in raws:
            self._write(raw)

    def _asked(self) -> bool:
        """Wait until the worker asks for the next item; False when it has gone (no more asks can come)."""
        while True:
            try:
                return os.read(self._ask_fd, 1) != b""
            except InterruptedError:  # pragma: no cover - retried by Python itself since PEP 475
                continue

    def _run(self, items) -> None:
        try:
            try:
                iterator = iter(items)
                while self._asked():
                    with _SENDING:  # memory: a few items in the parent at once, however many workers
                        try:
                            item = next(iterator)
                        except StopIteration:
                            self._send("end", None)
                            return
                        self._send("item", item)
                        del item
            except BrokenPipeError:
                return  # the worker ended: the parent reports how
            except BaseException as exc:  # noqa: BLE001 - reading the next item failed: raised in the parent
                self.error = exc
                self._send("abort", "".join(traceback.format_exception_only(exc)).strip())
                return
        except OSError:
            pass  # the worker is gone
        finally:
            os.close(self._fd)
            os.close(self._ask_fd)

    def join(self) -> None:
        self._thread.join()

    def raise_error(self) -> None:
        """Raise what reading the feed raised (it is why the child stopped), if anything."""
        self._thread.join()
        if self.error is not None:
            raise self.error


def run_in_child(fn: Callable, *, timeout: float | None = None,
                 on_progress: Callable[[int], None] | None = None,
                 on_part: Callable[[object], None] | None = None,
                 cancel: Callable[[], bool] | None = None, poll: float = 0.05, feed=None):
    """Run ``fn(status, send)`` (``fn(status, send, items)`` with a ``feed``) in a forked child and return its result.

    The child's processes (whatever the plug-in started, in its session or
    a new one) are ended before this returns; see the module's text.

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
    feed : iterable or None
        Objects to hand the child one at a time, while it runs: a thread of
        the parent pickles each into a pipe as the child reads, so neither
        side holds more than about one item (a dataset's parts, read here
        and worked on there, never all in memory).  ``fn`` gets them as a
        third argument, an iterator.  An exception raised by ``feed`` stops
        the child and is raised here.

    Returns
    -------
    object or ChildFailure
        ``fn``'s result; a :class:`ChildFailure` when the child exited,
        was killed or timed out before returning, raised an exception
        that could not be brought back, or sent back what cannot be read.
        An exception that can be brought back (an ``Exception``; not
        ``SystemExit`` and the like) is raised again in the parent.

    Raises
    ------
    KeyboardInterrupt
        Ctrl-C in the parent: the child's processes are ended first.

    Examples
    --------
    >>> run_in_child(lambda status, send: os._exit(3)).detail  # doctest: +SKIP
    'exit status 3'
    """
    _find_prctl()
    status = ChildStatus()
    read_fd, write_fd = os.pipe()
    if hasattr(fcntl, "F_SETPIPE_SZ"):  # fewer, larger reads for a large result (Linux)
        try:
            fcntl.fcntl(write_fd, fcntl.F_SETPIPE_SZ, _CHUNK)
        except OSError:  # above the user's pipe limits: the default size works too
            pass
    ended_read, ended_write = os.pipe()
    feed_read, feed_write = os.pipe() if feed is not None else (None, None)
    ask_read, ask_write = os.pipe() if feed is not None else (None, None)
    dump = tempfile.TemporaryFile()
    for stream in (sys.stdout, sys.stderr):  # no buffered text printed twice
        try:
            stream.flush()
        except Exception:  # noqa: BLE001
            pass
    try:
        pid = os.fork()
    except BaseException:
        for fd in (read_fd, write_fd, ended_read, ended_write, feed_read, feed_write, ask_read, ask_write):
            if fd is not None:
                os.close(fd)
        dump.close()
        status.close()
        raise
    if pid == 0:  # pragma: no cover - runs in the keeper; covered through the parent's view
        os.close(read_fd)
        os.close(ended_read)
        if feed_write is not None:
            os.close(feed_write)
            os.close(ask_read)
        _keeper(fn, status, write_fd, ended_write, dump.fileno(),
                None if feed_read is None else (feed_read, ask_write))
        _exit(70)
    os.close(write_fd)
    os.close(ended_write)
    feeder = None
    if feed is not None:
        os.close(feed_read)
        os.close(ask_write)
        feeder = _Feeder(feed, feed_write, ask_read)
    os.set_blocking(read_fd, False)
    os.set_blocking(ended_read, False)
    keeper = _Keeper(pid, ended_read, status)
    reader = _Messages(read_fd)
    selector = selectors.DefaultSelector()
    selector.register(read_fd, selectors.EVENT_READ)
    selector.register(ended_read, selectors.EVENT_READ)
    deadline = None if timeout is None else time.monotonic() + timeout
    settle = None  # once the result is in: how long the worker has left to exit
    reported = 0
    final = None
    try:
        while True:
            wait = poll if deadline is None else max(0.0, min(poll, deadline - time.monotonic()))
            selector.select(wait)
            if on_progress is not None:
                rows = status.rows
                if rows > reported:
                    on_progress(rows - reported)
                    reported = rows
            reader.read()
            for message in reader.messages():
                if message[0] == "part":
                    if on_part is not None:
                        on_part(message[1])
                else:
                    final = message
                    settle = time.monotonic() + _END_GRACE
            if reader.closed and read_fd in selector.get_map():
                selector.unregister(read_fd)
            keeper.look()
            if keeper.ended_fd is None and ended_read in selector.get_map():
                selector.unregister(ended_read)
            if keeper.done:
                break
            if reader.junk is not None or (settle is not None and time.monotonic() >= settle):
                keeper.end()  # nothing more can be read, or the result is in but the worker lingers
                break
            if cancel is not None and cancel():
                keeper.end()
                return ChildFailure("cancelled", "cancelled", status.text)
            if deadline is not None and final is None and time.monotonic() >= deadline:
                stack = _stack_of(status.worker, dump)
                keeper.end()
                return ChildFailure("timeout", f"{timeout:g} s", status.text, stack)
        if keeper.ended is None and keeper.exit is not None:  # the keeper died without a word
            keeper.kill()
        reader.read()
        for message in reader.messages():
            if message[0] != "part":
                final = message
            elif on_part is not None:
                on_part(message[1])
        if final is not None:  # whole, whatever came after it
            if feeder is not None:
                feeder.raise_error()
            if final[0] == "ok":
                return final[1]
            if isinstance(final[1], Exception):  # e.g. a rewardlab error: raise it here as itself
                raise final[1]
            return ChildFailure("raised", final[2], status.text)
        worker_exit = None if keeper.ended is None or not keeper.ended[0] else keeper.ended[1]
        if reader.junk is None and reader.unfinished and worker_exit == 0:
            reader.junk = "a message that never ended"  # its writer exited as if it had sent it
        if reader.junk is not None:
            return ChildFailure("raised", "rewardlab could not read what the child process sent back "
                                f"({reader.junk}); a plug-in must not write into the descriptors it "
                                "inherits", status.text)
        if keeper.ended is None:
            how = "exit" if os.WIFEXITED(keeper.exit) else "signal"
            return ChildFailure(how, "rewardlab's process watching it was "
                                + ("" if how == "signal" else "ended with ") + _describe_exit(keeper.exit),
                                status.text)
        worker, code = keeper.ended
        if not worker:
            return ChildFailure("raised", "rewardlab could not start a process for the plug-in: "
                                f"{os.strerror(code)}", status.text)
        return ChildFailure("exit" if os.WIFEXITED(code) else "signal", _describe_exit(code), status.text)
    finally:
        try:
            if not keeper.done:  # interrupted (Ctrl-C) or failed while waiting: no orphan left behind
                keeper.end()
            keeper.finish()
            if feeder is not None:
                feeder.join()
        finally:
            selector.close()
            os.close(read_fd)
            dump.close()
            status.close()
