"""The processes engine: work items run in worker processes on this machine, one interpreter each.

The embedded engine runs items in threads of this process, which is enough
while the heavy work releases the GIL; past a few cores the Python between
those calls (building a part's arrays, pickling them to the plug-in process,
assembling and writing the rewards) runs one thread at a time, and this
process holds every part in flight (measured on a 16-core machine: ``apply``
at 8 and 16 workers ran at the same speed, and its one process peaked at
2.0-2.1 GiB).  Here each worker is a fresh interpreter (``spawn``, started
once per run, so no Polars or Torch thread pool is inherited half-made), an
item runs there whole and only its small result comes back.  ``apply`` on a
dataset folder goes further: the worker forks its plug-in child before it
starts Polars' thread pool, so the child reads each part, runs the plug-ins
and writes the rewards itself (:mod:`rewardlab.plugins.apply_parts`), and the
worker only watches; nothing of a part crosses a pipe.  Memory is per
process: about one part each.

Items and results cross as pickles, as on the Ray engine: ``fn`` must be a
module-level function.  At most ``2 * workers`` items are handed out ahead
of the one whose result is due.

Faults
------
An exception ``fn`` raises comes back as itself (rewardlab's errors
pickle) when its item's turn comes; items not yet started are not started.
A worker that dies mid-item (killed, out of memory, a crash in native code)
stops the run with an :class:`~rewardlab.core.errors.EngineError` naming
the first item left unfinished (the pool cannot tell which of the items
running at once was the worker's); nothing is written under a final name (the driver promotes its
staging folder only after every item).  On Linux each worker is killed with
the process that started it (``PR_SET_PDEATHSIG``), so a driver killed with
``SIGKILL`` leaves no worker running.

Examples
--------
>>> from rewardlab.engines import get_engine
>>> list(get_engine("processes").map(abs, [-1, 2, -3], workers=2))  # doctest: +SKIP
[1, 2, 3]
"""

from __future__ import annotations

import multiprocessing
import signal
import sys
from concurrent.futures import ProcessPoolExecutor
from concurrent.futures.process import BrokenProcessPool
from typing import Callable, Iterable, Iterator

from rewardlab.core.errors import EngineError, ParameterError
from rewardlab.engines.embedded import check_workers, ordered_results
from rewardlab.engines.registry import Engine, register_engine

__all__ = ["map_items_processes", "ENGINE", "START_METHOD"]

#: How worker processes start: a fresh interpreter each (nothing inherited from this process's threads).
START_METHOD = "spawn"

_PR_SET_PDEATHSIG = 1


def _die_with_parent() -> None:
    """Worker initializer: be killed when the process that started this worker ends (Linux; elsewhere nothing)."""
    if sys.platform.startswith("linux"):
        try:
            import ctypes

            ctypes.CDLL(None, use_errno=True).prctl(_PR_SET_PDEATHSIG, int(signal.SIGKILL), 0, 0, 0)
        except (OSError, AttributeError):  # without it, a worker of a killed driver ends at its next item
            pass


def map_items_processes(fn: Callable, items: Iterable, *, workers: int | None = None,
                        address=None) -> Iterator:
    """Yield ``fn(item)`` for each item, in order, running up to ``workers`` at once in worker processes.

    Parameters
    ----------
    fn : callable
        A module-level function (it is pickled by name); called once per item in a worker.
    items : iterable
        Picklable items, read lazily, at most ``2 * workers`` ahead of the result yielded next.
    workers : int or None
        Worker processes (None: the cores available); 1 runs the items one
        after the other in this process, as the embedded engine does.
    address : None
        Refused by :func:`rewardlab.engines.check_engine` (no cluster to join).

    Raises
    ------
    Exception
        The first exception an item raised, in item order.
    EngineError
        A worker process died while it ran an item.

    Examples
    --------
    >>> list(map_items_processes(abs, [-1, 2], workers=1))
    [1, 2]
    """
    if address is not None:
        raise ParameterError("address", "applies to engines that join a cluster (--engine ray)", address)
    workers = check_workers(workers)
    if workers == 1:
        for item in items:
            yield fn(item)
        return
    context = multiprocessing.get_context(START_METHOD)
    with ProcessPoolExecutor(max_workers=workers, mp_context=context, initializer=_die_with_parent) as pool:
        yield from ordered_results(pool, fn, items, window=2 * workers, result=_result)


def _result(index: int, future):
    try:
        return future.result()
    except BrokenProcessPool as exc:
        raise EngineError(f"a worker process died (killed, out of memory, or a crash in native code) before work "
                          f"item {index} was done (that item or one running beside it); nothing was written "
                          "under the final name",
                          hint="Run it again; if it dies again, run with --workers 1 (or --engine embedded) to "
                               "see the error in this process.") from exc


#: The processes engine.
ENGINE = register_engine(Engine(
    name="processes",
    map=map_items_processes,
    description="this machine: each work item runs whole in one of --workers worker processes (parts read, "
    "plug-ins forked, results written there); for many cores",
))
