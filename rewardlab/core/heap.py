"""Keep the garbage collector's full passes off the objects that were alive before a long loop began.

CPython's cyclic garbage collector runs a *full* pass (every tracked object
in the process) whenever enough objects have survived into its oldest
generation since the last one.  A process that has imported torch, Polars
and tensordict tracks about 330,000 objects, so one full pass costs 100-200
ms on this project's machines, and a loop that keeps a few thousand objects
alive for a while (the runner holds each chunk's per-batch views until the
chunk is done) triggers one every few dozen chunks.  Measured in-process on
2x10^6 transitions in ``episodes`` mode with two plug-ins: two full passes,
344-364 ms, about 2% of the run's CPU (none inside a frozen heap).

:func:`frozen_heap` moves the objects alive when it is entered into the
collector's permanent generation (:func:`gc.freeze`) and back when it is left
(:func:`gc.unfreeze`), so the passes inside scan only what the loop itself
made.  Nothing is lost: cyclic garbage among the older objects is collected
by the first pass after the block, as it would have been.

Examples
--------
>>> import gc
>>> with frozen_heap():
...     frozen = gc.get_freeze_count() > 0
>>> frozen, gc.get_freeze_count()
(True, 0)
"""

from __future__ import annotations

import contextlib
import gc
import os
import threading

__all__ = ["frozen_heap"]


_lock = threading.Lock()
_depth = 0  # open frozen_heap blocks that froze (any thread of this process)


def _new_lock_in_child() -> None:
    # a child forked while another thread held the lock would wait on it forever; the blocks it inherits
    # open stay open in it (their threads are not there to close them), so its heap stays frozen to its end
    global _lock
    _lock = threading.Lock()


os.register_at_fork(after_in_child=_new_lock_in_child)


@contextlib.contextmanager
def frozen_heap():
    """Hide the objects alive now from the collector's passes until the outermost block ends.

    Blocks nest and may be open in several threads at once: each block entered
    freezes again (so what an outer block's body made before it, modules its
    command imported, is hidden too), and the last one to close unfreezes.
    Does nothing when the collector is disabled, or when something else froze
    objects (its :func:`gc.unfreeze` is its own to call).

    Examples
    --------
    >>> with frozen_heap():
    ...     with frozen_heap():
    ...         pass
    ...     still = gc.get_freeze_count() > 0
    >>> still, gc.get_freeze_count()
    (True, 0)
    """
    global _depth
    with _lock:
        mine = gc.isenabled() and (_depth > 0 or gc.get_freeze_count() == 0)
        if mine:
            gc.freeze()
            _depth += 1
    if not mine:
        yield
        return
    try:
        yield
    finally:
        with _lock:
            _depth -= 1
            if _depth == 0:
                gc.unfreeze()
