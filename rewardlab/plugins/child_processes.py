"""The two processes below rewardlab's: the worker, which runs the plug-ins, and its keeper.

The parent forks the keeper (:func:`run_keeper`), which becomes a child
subreaper, forks the worker, waits for it, ends every process left below it
(:mod:`rewardlab.plugins.process_tree`) and only then tells the parent, through
a pipe only it holds, how the worker ended.  The worker runs the function and
sends its results up the message pipe (:mod:`rewardlab.plugins.child_messages`).
The parent's handle on the keeper is a :class:`Keeper`: it reads the keeper's
last word, continues it when a plug-in stopped it, asks it to end the worker's
tree (:meth:`Keeper.end`) and, when the keeper is gone, kills what is left
itself (:meth:`Keeper.kill`).  :func:`stack_of` asks a hung worker for its
Python stack.  See :mod:`rewardlab.plugins.isolation` for the whole story.

Examples
--------
>>> from rewardlab.plugins.child_processes import stack_of
>>> stack_of(0, None)  # no worker (yet): no stack
''
"""

from __future__ import annotations

import faulthandler
import os
import resource
import selectors
import signal
import struct
import sys
import threading
import time
import traceback
from typing import Callable

from rewardlab.plugins.child_messages import received, sendable, write_message
from rewardlab.plugins.child_status import ChildStatus
from rewardlab.plugins.process_tree import become_subreaper, descendants, end_descendants, process_state, \
    send_signal, signal_on_parent_death

_ENDED = struct.Struct("<qq")  # the keeper's last word: the worker's pid and wait status
#: Seconds the keeper has to end the tree once asked, before rewardlab kills it.
END_GRACE = 10.0

# Taken once: a plug-in that replaces os._exit or os.write does not change how rewardlab ends.
_exit, _write, _getpid, _kill = os._exit, os.write, os.getpid, os.kill


def _worker(fn: Callable, status: ChildStatus, write_fd: int, dump_fd: int,
            feed_fds: tuple[int, int] | None = None) -> None:
    """Run ``fn`` in the worker; never returns."""
    code = 0
    me = status.owner = _getpid()
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
            write_message(write_fd, sendable(("part", obj)))

        try:
            payload = ("ok", fn(status, send) if feed_fds is None else fn(status, send, received(feed_fds)))
        except BaseException as exc:  # noqa: BLE001 - everything goes back to the parent
            payload = ("raised", exc, "".join(traceback.format_exception(exc)))
        if _getpid() == me:
            write_message(write_fd, sendable(payload))
    except BaseException:  # noqa: BLE001
        code = 70
    finally:
        for stream in (sys.stdout, sys.stderr):
            try:
                stream.flush()
            except BaseException:  # noqa: BLE001
                pass
        _exit(code if _getpid() == me else 0)


def run_keeper(fn: Callable, status: ChildStatus, write_fd: int, ended_fd: int, dump_fd: int,
            feed_fds: tuple[int, int] | None = None, *, parent: int | None = None) -> None:
    """Fork the worker, wait for it, end every process left below, tell the parent; never returns.

    ``parent``: the pid of the process that forked this keeper; when it ends, the keeper is sent SIGTERM
    (Linux), which ends the worker's tree as a timeout does."""
    code = 0
    try:
        signal.signal(signal.SIGINT, signal.SIG_IGN)
        signal.signal(signal.SIGCHLD, signal.SIG_DFL)  # waitpid must see the worker's status
        worker, ending = 0, False

        def end(signum, frame):  # the parent asks: timeout, cancel, Ctrl-C
            nonlocal ending
            ending = True
            if worker:
                send_signal(worker, signal.SIGKILL)

        signal.signal(signal.SIGTERM, end)
        if parent is not None:  # rewardlab's process killed: end the plug-in's tree, not leave it to init
            signal_on_parent_death(signal.SIGTERM, parent)
        become_subreaper()
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
            send_signal(worker, signal.SIGKILL)
        os.close(write_fd)
        while True:  # reap orphans adopted meanwhile until the worker itself ends
            pid, wait_status = os.waitpid(-1, 0)
            if pid == worker:
                break
        status.worker = 0  # reaped: its pid may be reused, so the parent must no longer signal it
        reaped, worker = worker, 0  # nor this keeper's own SIGTERM handler (a late parent-death signal)
        end_descendants(time.monotonic() + END_GRACE)
        _write(ended_fd, _ENDED.pack(reaped, wait_status))
    except BaseException:  # noqa: BLE001
        code = 70
    finally:
        _exit(code)


def stack_of(pid: int, dump) -> str:
    """Ask a hung worker for its Python stack (faulthandler on SIGUSR1), then read it."""
    if not pid or process_state(pid) in (b"T", b"t"):  # a stopped process cannot answer
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


class Keeper:
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
                send_signal(self.pid, signal.SIGCONT)  # the plug-in stopped its parent
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
        send_signal(self.pid, signal.SIGTERM)
        send_signal(self.pid, signal.SIGCONT)  # a stopped keeper takes SIGTERM only once continued
        deadline = time.monotonic() + END_GRACE
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
            send_signal(root, signal.SIGSTOP)  # no more forks or reaping while the tree is walked
        victims = {pid for root in roots for pid in descendants(root)} | set(roots)
        for pid in victims:
            send_signal(pid, signal.SIGKILL)
        deadline = time.monotonic() + END_GRACE  # not its children: wait until they have died
        while any(process_state(pid) not in (b"", b"Z", b"X") for pid in victims) and time.monotonic() < deadline:
            time.sleep(0.005)
        if self.exit is None:
            try:
                self.exit = os.waitpid(self.pid, 0)[1]
            except ChildProcessError:
                self.exit = 0
