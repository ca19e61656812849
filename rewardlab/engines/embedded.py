"""The embedded engine: work items run in this process, a few at a time in threads.

What an item does that is heavy runs outside the GIL: Polars and the
compiled tokenizer release it, and plug-ins run in a forked child process
(:mod:`rewardlab.plugins.isolation`), so threads are enough to keep the cores
busy, and nothing is pickled on the way in.  At most ``2 * workers`` items
are started ahead of the one whose result is due, so a slow item holds back
only a bounded amount of finished work (memory stays bounded).

Examples
--------
>>> list(map_items(lambda x: x * x, range(5), workers=3))
[0, 1, 4, 9, 16]
"""

from __future__ import annotations

import collections
import os
import queue
import threading
from concurrent.futures import ThreadPoolExecutor
from typing import Callable, Iterable, Iterator

from rewardlab.core.errors import check_int
from rewardlab.engines.registry import Engine, register_engine

__all__ = ["map_items", "ordered_results", "prefetch", "available_cores", "check_workers", "ENGINE", "MAX_WORKERS"]

#: The most items the embedded engine runs at once.
MAX_WORKERS = 1024


def available_cores() -> int:
    """The cores this process may run on (its CPU affinity where the platform says, else ``os.cpu_count``).

    Examples
    --------
    >>> available_cores() >= 1
    True
    """
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except (AttributeError, OSError):
        return max(1, os.cpu_count() or 1)


def check_workers(workers, *, argument: str = "workers") -> int:
    """``workers`` checked (an integer in [1, MAX_WORKERS]); None is :func:`available_cores`.

    Examples
    --------
    >>> check_workers(3), check_workers(None) >= 1
    (3, True)
    """
    if workers is None:
        return available_cores()
    return check_int(argument, workers, low=1, high=MAX_WORKERS,
                     rule=f"should be an integer in [1, {MAX_WORKERS}]")


def map_items(fn: Callable, items: Iterable, *, workers: int | None = None, address=None) -> Iterator:
    """Yield ``fn(item)`` for each item, in order, running up to ``workers`` at once in threads.

    Parameters
    ----------
    fn : callable
        Called once per item.
    items : iterable
        Read lazily, at most ``2 * workers`` ahead of the result yielded next.
    workers : int or None
        Items at once (None: :func:`available_cores`); 1 runs them one after
        the other in this thread.
    address : None
        Refused by :func:`rewardlab.engines.check_engine` (no cluster to join).

    Raises
    ------
    Exception
        The first exception an item raised, in item order; items not yet
        started are not started, and those running are awaited.
    """
    workers = check_workers(workers)
    if workers == 1:
        for item in items:
            yield fn(item)
        return
    with ThreadPoolExecutor(max_workers=workers, thread_name_prefix="rewardlab-engine") as pool:
        yield from ordered_results(pool, fn, items, window=2 * workers)


def ordered_results(pool, fn: Callable, items: Iterable, *, window: int,
                    result: Callable = lambda index, future: future.result()) -> Iterator:
    """Submit ``fn(item)`` to ``pool`` for each item, at most ``window`` ahead, and yield the results in order.

    ``result(index, future)`` reads one result (raising its item's exception);
    when the consumer stops early or an item raises, items not yet started are
    cancelled.  Shared by the engines that run items in a
    :class:`concurrent.futures.Executor`.

    Examples
    --------
    >>> with ThreadPoolExecutor(2) as pool:
    ...     list(ordered_results(pool, abs, [-1, 2, -3], window=2))
    [1, 2, 3]
    """
    pending: collections.deque = collections.deque()
    try:
        for index, item in enumerate(items):
            pending.append((index, pool.submit(fn, item)))
            while len(pending) >= window:
                yield result(*pending.popleft())
        while pending:
            yield result(*pending.popleft())
    finally:
        for _, future in pending:
            future.cancel()


_DONE = object()


def prefetch(items: Iterable, *, depth: int = 2) -> Iterator:
    """Yield ``items`` in order, produced up to ``depth`` ahead in a background thread.

    For a serial producer whose work releases the GIL (decompression, file
    reads): it runs while the consumer works on the previous item.  The
    producer's exception is raised here, after the items before it; closing
    this generator early stops the producer at its next item.

    Examples
    --------
    >>> list(prefetch(iter(range(4)), depth=1))
    [0, 1, 2, 3]
    """
    depth = check_int("depth", depth, low=1)
    slots: queue.Queue = queue.Queue(maxsize=depth)
    stop = threading.Event()

    def produce() -> None:
        try:
            for item in items:
                while not stop.is_set():
                    try:
                        slots.put((item, None), timeout=0.1)
                        break
                    except queue.Full:
                        continue
                if stop.is_set():
                    return
            slots.put((_DONE, None))
        except BaseException as exc:  # noqa: BLE001 - handed to the consumer, raised there
            slots.put((_DONE, exc))
        finally:
            close = getattr(items, "close", None)
            if close is not None:
                close()  # a generator's own cleanup (its open files) runs in the thread that ran it

    thread = threading.Thread(target=produce, name="rewardlab-prefetch", daemon=True)
    thread.start()
    try:
        while True:
            item, error = slots.get()
            if item is _DONE:
                if error is not None:
                    raise error
                return
            yield item
    finally:
        stop.set()
        while thread.is_alive():  # unblock a producer waiting on a full queue
            try:
                slots.get_nowait()
            except queue.Empty:
                thread.join(0.05)


#: The embedded engine (the default).
ENGINE = register_engine(Engine(
    name="embedded",
    map=map_items,
    description="this machine: parts are read and worked on a few at a time in threads; plug-ins run in "
    "forked child processes",
))
