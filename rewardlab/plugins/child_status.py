"""The block of memory the plug-in process shares with rewardlab: what it is doing, and its pid.

The worker (see :mod:`rewardlab.plugins.isolation`) writes what it is about
to run and the rows it has done into a :class:`ChildStatus`; the keeper
writes the worker's pid there, and the parent reads all three: for its
progress bar, to say what the child was doing when it died or timed out, and
to find the worker to ask for its stack or to kill.

Examples
--------
>>> from rewardlab.plugins.child_status import ChildStatus
>>> status = ChildStatus()
>>> status.doing("batch 0"); status.advance(3)
>>> status.text, status.rows, status.worker
('batch 0', 3, 0)
>>> status.close()
"""

from __future__ import annotations

import mmap
import os
import struct

_STATUS_BYTES = 4096
_HEADER = struct.Struct("<qq")  # rows done, length of the "doing" text
_WORKER = struct.Struct("<q")  # the worker's pid (0 before the keeper forked it)
_TEXT = _HEADER.size + _WORKER.size  # where the "doing" text starts

# Taken once: a plug-in that replaces os._exit or os.getpid does not change how rewardlab ends.
_exit, _getpid = os._exit, os.getpid


class ChildStatus:
    """What the child is doing, in memory shared with the parent.

    The child calls :meth:`doing` before each plug-in call and :meth:`advance`
    after it; the parent reads :attr:`rows` for its progress bar and
    :attr:`text` when the child dies or times out.  Writes are a few bytes
    into shared memory, so they cost nothing next to a plug-in call.  In a
    copy of the child that a plug-in forked and let return into rewardlab,
    either call ends that copy (``os._exit(0)``): only the child reports.

    Attributes
    ----------
    owner : int or None
        The worker's pid, set by the worker when it starts (None before):
        in any other process, :meth:`doing` and :meth:`advance` end it.

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
        self.owner = None  # the worker's pid, once it runs

    def _check_owner(self) -> None:
        if self.owner is not None and _getpid() != self.owner:
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
