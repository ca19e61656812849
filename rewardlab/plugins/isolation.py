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
rewardlab kills the worker and what it can still find below it.  When
rewardlab's own process ends first (killed with SIGKILL, say), the keeper is
sent SIGTERM by the kernel (``PR_SET_PDEATHSIG``, Linux) and ends the worker's
tree the same way, so no plug-in process outlives the command.

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
  survive ``fork``), and must not use Polars once this process has started
  Polars' thread pool (those threads are not forked: the worker's first
  parallel Polars call would wait for them forever): give it NumPy arrays.
  A process that has not started it yet (a fresh worker process of the
  ``processes`` engine that leaves Polars to its children) may let the
  worker read and write with Polars itself: :func:`polars_forks_cleanly`
  says which.
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

The parts, one concern a module: :mod:`rewardlab.plugins.process_tree` (the
process tree below a process in ``/proc``, the subreaper),
:mod:`rewardlab.plugins.child_messages` (the result pipe and the feed),
:mod:`rewardlab.plugins.child_status` (the shared status block) and
:mod:`rewardlab.plugins.child_processes` (the worker, the keeper and the
parent's handle on it); this module ties them together.

Examples
--------
>>> from rewardlab.plugins.isolation import run_in_child
>>> run_in_child(lambda status, send: 6 * 7)  # doctest: +SKIP
42
"""

from __future__ import annotations

import dataclasses
import fcntl
import os
import re
import selectors
import signal
import sys
import tempfile
import time
from typing import Callable

# FEEDS_AT_ONCE is still a name of this module's, as it was defined here.
from rewardlab.plugins.child_messages import CHUNK, FEEDS_AT_ONCE, Feeder, Messages  # noqa: F401
from rewardlab.plugins.child_processes import END_GRACE, Keeper, run_keeper, stack_of
from rewardlab.plugins.child_status import ChildStatus
from rewardlab.plugins.process_tree import find_prctl

__all__ = ["AVAILABLE", "ChildFailure", "ChildStatus", "run_in_child", "polars_forks_cleanly"]

#: Whether this platform can fork (Linux, macOS); elsewhere plug-ins run in-process.
AVAILABLE = hasattr(os, "fork")

#: The names of the threads Polars starts with its thread pool (its compute pool's ``polars-N`` and its
#: async runtime's); not the thread it starts on import (``polars-ooc-clea``, which a child never waits on).
POLARS_THREADS = re.compile(r"polars-\d+|tokio-rt-.*")


def polars_forks_cleanly() -> bool:
    """Whether a child forked from this process now may use Polars: its thread pool has not started here.

    Polars starts its pool at its first parallel call and never again; a
    fork copies none of its threads, so a child of a process that started
    it waits forever at its own first parallel call.  Read from the names
    of this process's threads (``/proc/self/task``, Linux); False where they
    cannot be read (another system), or when one is named as Polars names
    its pool's.

    Examples
    --------
    >>> import polars as pl
    >>> _ = pl.DataFrame({"x": [1, 2]}).select(pl.col("x").sum())  # this process starts the pool
    >>> polars_forks_cleanly()
    False
    """
    try:
        tasks = os.listdir("/proc/self/task")
    except OSError:
        return False
    for task in tasks:
        try:
            with open(f"/proc/self/task/{task}/comm") as f:
                name = f.read().strip()
        except OSError:  # the thread ended meanwhile
            continue
        if POLARS_THREADS.fullmatch(name):
            return False
    return True

# Taken once: a plug-in that replaces os._exit does not change how rewardlab ends.
_exit = os._exit


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
        the parent pickles each into a pipe as the child reads, and the child
        reads the next while ``fn`` works on one, so the parent holds about
        one item and the child two (a dataset's parts, read here and worked
        on there, never all in memory).  ``fn`` gets them as a
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
    find_prctl()
    status = ChildStatus()
    read_fd, write_fd = os.pipe()
    if hasattr(fcntl, "F_SETPIPE_SZ"):  # fewer, larger reads for a large result (Linux)
        try:
            fcntl.fcntl(write_fd, fcntl.F_SETPIPE_SZ, CHUNK)
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
    parent = os.getpid()
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
        run_keeper(fn, status, write_fd, ended_write, dump.fileno(),
                None if feed_read is None else (feed_read, ask_write), parent=parent)
        _exit(70)
    os.close(write_fd)
    os.close(ended_write)
    feeder = None
    if feed is not None:
        os.close(feed_read)
        os.close(ask_write)
        feeder = Feeder(feed, feed_write, ask_read)
    os.set_blocking(read_fd, False)
    os.set_blocking(ended_read, False)
    keeper = Keeper(pid, ended_read, status)
    reader = Messages(read_fd)
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
                    settle = time.monotonic() + END_GRACE
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
                stack = stack_of(status.worker, dump)
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
