"""The process tree below a process, on Linux: find it in ``/proc``, end it, adopt its orphans.

The keeper (see :mod:`rewardlab.plugins.isolation`) is a child subreaper
(:func:`become_subreaper`, ``prctl(PR_SET_CHILD_SUBREAPER)``), so whatever a
plug-in starts stays below it; :func:`end_descendants` kills and reaps all of
it, and the parent, when the keeper is gone, kills what it can still find
below (:func:`descendants`, from the parent links of ``/proc/*/stat``).
Without ``/proc`` (macOS) no descendant is found and :func:`become_subreaper`
does nothing.

Examples
--------
>>> import os
>>> from rewardlab.plugins.process_tree import descendants, process_state
>>> process_state(os.getpid()) in (b"R", b"")  # running (b"" without /proc)
True
>>> os.getpid() in descendants(os.getppid()) or not os.path.isdir("/proc")
True
"""

from __future__ import annotations

import os
import signal
import sys
import time

_PROC = "/proc"
_PR_SET_CHILD_SUBREAPER = 36
_PR_SET_PDEATHSIG = 1

# Taken once: a plug-in that replaces os.kill or os.getpid does not change how rewardlab ends.
_getpid, _kill = os.getpid, os.kill


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


def descendants(root: int) -> list[int]:
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


def process_state(pid: int) -> bytes:
    """The state letter of ``pid`` in ``/proc`` (``b"T"`` stopped, ``b"Z"`` zombie; ``b""`` when gone)."""
    try:
        return _stat_fields(pid)[:1]
    except OSError:
        return b""


def send_signal(pid: int, sig: int) -> None:
    """Send ``sig`` to ``pid``; nothing when the process is gone or not this user's."""
    try:
        _kill(pid, sig)
    except (ProcessLookupError, PermissionError):
        pass


_PRCTL = []  # libc's prctl, looked up once in the parent (Linux)


def find_prctl() -> None:
    """Look libc's ``prctl`` up once, in the parent, for :func:`become_subreaper` (Linux; elsewhere nothing)."""
    if not _PRCTL and sys.platform.startswith("linux"):
        try:
            import ctypes

            _PRCTL.append(ctypes.CDLL(None, use_errno=True).prctl)
        except Exception:  # noqa: BLE001 - without it, orphans go to init: the tree walk still ends the rest
            _PRCTL.append(None)


def signal_on_parent_death(sig: int, parent: int) -> None:
    """Have ``sig`` sent to this process when its parent ends (Linux's ``PR_SET_PDEATHSIG``; elsewhere
    nothing); sent now when ``parent`` (its pid, taken before the fork) already ended.

    Examples
    --------
    >>> signal_on_parent_death(0, os.getppid())  # doctest: +SKIP
    """
    if _PRCTL and _PRCTL[0] is not None:
        _PRCTL[0](_PR_SET_PDEATHSIG, sig, 0, 0, 0)
    if os.getppid() != parent:  # it ended before the call: the kernel will not send it
        send_signal(_getpid(), sig)


def become_subreaper() -> None:
    """Make this process adopt its orphaned descendants (Linux; elsewhere nothing)."""
    if _PRCTL and _PRCTL[0] is not None:
        _PRCTL[0](_PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0)


def end_descendants(deadline: float) -> None:
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
        for pid in descendants(me):
            send_signal(pid, signal.SIGKILL)
        if time.monotonic() > deadline:
            return
        time.sleep(0.002)
