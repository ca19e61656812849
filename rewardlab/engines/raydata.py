"""The Ray engine: work items run as Ray Data tasks, on this machine or on a Ray cluster.

Each work item (a part of a dataset: whole episodes, never cut) becomes one
row of a Ray Data dataset made of **one block per item**
(``ray.data.from_items(..., override_num_blocks=len(items))``), and one
``Dataset.map`` task runs ``fn`` on it in a Ray worker, so no batching, block
splitting or coalescing can cut an item.  The item and the result cross as
pickled bytes columns (a result is any picklable object: NumPy arrays,
dataclasses, serialized sketches).  The dataset's own
:class:`ray.data.DataContext` sets ``preserve_order``, so results stream back
in item order through ``iter_rows`` while later items still run: the driver
holds one result at a time, and those not yet consumed wait in Ray's object
store (spilled to disk when it fills), not in the driver's memory.

Where it runs
-------------
- ``address=None`` (the default): joins the Ray this process already started,
  else starts a local one with the cores available here; it stays up for
  the later calls of this process and ends with it.
- ``address="auto"``: joins the cluster this machine belongs to (started
  with ``ray start --head`` / ``ray start --address=HEAD:6379``).
- ``address="ray://HOST:10001"``: joins a remote cluster through Ray Client
  (which needs ``pip install 'ray[client]==2.60.0'`` beside the extra).

Commands take it as ``engine="ray", address=...`` (CLI ``--engine ray
--ray-address ADDR``): the one flag that changes between a laptop and a cluster.

rewardlab (with the ``ray`` extra, and whatever the plug-ins import) must be
installed on every node of the cluster, at the same version as the driver's:
the workers import :mod:`rewardlab.engines.raydata` to run an item.  A Ray
started by the caller is never shut down here.

Errors and faults
-----------------
An exception that ``fn`` raises is caught in the worker and raised again on
the driver as itself (the same type, message and attributes; rewardlab's
errors pickle), when its item's turn comes, so an error reads the same as on
the embedded engine; the worker's traceback is added as a note.  Later items
are abandoned.  A worker process that dies mid-item (killed, out of memory,
a crash in native code) is a Ray system failure: Ray runs the item again, up
to :data:`TASK_RETRIES` more times, then the run stops with an
:class:`EngineError` that names the item.  ``fn`` must therefore be safe to run twice on one item
(it writes only under names the driver gave it).

Examples
--------
>>> from rewardlab.engines import get_engine
>>> get_engine("ray").joins_cluster
True
>>> results = get_engine("ray").map(abs, [-1, 2, -3], workers=2)  # doctest: +SKIP
>>> list(results)  # doctest: +SKIP
[1, 2, 3]
"""

from __future__ import annotations

import importlib.util
import logging
import os
import pickle
import traceback
import warnings
from typing import Callable, Iterable, Iterator

from rewardlab.core.errors import EngineError, ParameterError, check_int
from rewardlab.core.extras import extra_hint, pip_command
from rewardlab.engines.embedded import MAX_WORKERS, available_cores
from rewardlab.engines.registry import Engine, register_engine

__all__ = ["map_items_ray", "missing", "connect", "EngineError", "TASK_RETRIES", "ENGINE", "EXTRA"]

#: How many more times Ray runs an item whose worker process died (system failures only;
#: an exception raised by ``fn`` is never retried).
TASK_RETRIES = 3

#: The extra that installs Ray Data (:func:`rewardlab.core.extras.install_command` gives the command).
EXTRA = "ray"



def missing() -> str | None:
    """None when Ray can be imported here, else what to install.

    Examples
    --------
    >>> reason = missing()
    >>> reason is None or reason.startswith("Ray (ray[data]==2.60.0) is not installed. Install rewardlab's")
    True
    """
    if importlib.util.find_spec("ray") is None:
        return f"Ray ({_RAY_PIN}) is not installed. {extra_hint(EXTRA)}"
    return None


_RAY_PIN = "ray[data]==2.60.0"


def run_item(row: dict, *, fn: bytes) -> dict:
    """Run one item inside a Ray worker (the function ``Dataset.map`` calls).

    ``row`` holds the item's ``index`` and the pickled ``item``; ``fn`` is the
    pickled function.  Both are unpickled here, inside the ``try``, so a
    function or item that cannot be rebuilt on the worker (a module missing
    on that node) is reported as that item's exception.  The returned row
    holds ``index``, ``ok`` and ``payload``: the pickled result, or when
    anything raised, the exception (see :func:`pickle_failure`).

    Examples
    --------
    >>> row = run_item({"index": 0, "item": pickle.dumps(-2)}, fn=pickle.dumps(abs))  # doctest: +SKIP
    >>> row["ok"], pickle.loads(row["payload"])  # doctest: +SKIP
    (True, 2)
    >>> row = run_item({"index": 1, "item": pickle.dumps("x")}, fn=pickle.dumps(abs))  # doctest: +SKIP
    >>> row["ok"]  # doctest: +SKIP
    False
    """
    from ray import cloudpickle

    try:
        result = pickle.loads(fn)(pickle.loads(row["item"]))
        payload = cloudpickle.dumps(result, protocol=5)
    except (Exception, SystemExit) as exc:  # carried to the driver and raised there; KeyboardInterrupt is
        # how Ray cancels a task once the driver stopped reading, and stays Ray's
        return {"index": row["index"], "ok": False, "payload": pickle_failure(exc)}
    return {"index": row["index"], "ok": True, "payload": payload}


def pickle_failure(exc: BaseException) -> bytes:
    """``exc`` as bytes: its type name, message and traceback, and the exception itself where it pickles."""
    from ray import cloudpickle

    try:
        carried = cloudpickle.dumps(exc, protocol=5)
    except Exception:  # noqa: BLE001 -- an exception that does not pickle travels as text
        carried = None
    text = "".join(traceback.format_exception(exc))
    return pickle.dumps({"type": f"{type(exc).__module__}.{type(exc).__qualname__}", "message": str(exc),
                         "traceback": text, "error": carried}, protocol=5)


def raise_failure(payload: bytes, index: int):
    """Raise the exception an item's ``fn`` raised in a worker (see :func:`pickle_failure`).

    The original exception when it unpickles (with the worker's traceback as a
    note), else an :class:`EngineError` naming its type and message.
    """
    failure = pickle.loads(payload)
    error = None
    if failure["error"] is not None:
        try:
            error = pickle.loads(failure["error"])
        except Exception:  # noqa: BLE001 -- an exception that does not unpickle: reported by name
            error = None
    if not isinstance(error, BaseException):
        raise EngineError(f"work item {index} raised {failure['type']}: {failure['message']} (the exception "
                          f"could not be carried back from the Ray worker; its traceback there:\n"
                          f"{failure['traceback']})")
    error.add_note(f"Raised by work item {index} in a Ray worker; its traceback there:\n{failure['traceback']}")
    raise error


def connect(address: str | None) -> bool:
    """Join the Ray cluster at ``address``, or start a local Ray (``address=None``); True when this call did.

    A Ray already running in this process is used as it is (whatever
    ``address`` says) and never shut down here.  A local Ray gets the cores
    available to this process (or joins ``RAY_ADDRESS`` when that is set, as
    ``ray.init()`` does) and no dashboard; the workers' output and Ray's
    notices of dead workers still reach this process's terminal, while Ray
    Data's per-run log lines are kept to its log files.
    """
    import ray
    import ray.data  # configures Ray Data's loggers, before the level below

    if ray.is_initialized():
        return False
    options = dict(ignore_reinit_error=True, include_dashboard=False, logging_level="ERROR", log_to_driver=True)
    if address is None and os.environ.get("RAY_ADDRESS"):
        address = os.environ["RAY_ADDRESS"]
        where = f"join the Ray cluster at RAY_ADDRESS={address!r}"
    else:
        where = "start a local Ray" if address is None else f"join the Ray cluster at {address!r}"
    try:
        if address is None:
            ray.init(num_cpus=available_cores(), **options)
        else:
            ray.init(address=address, **options)
    except Exception as exc:  # noqa: BLE001 -- Ray raises ConnectionError, ValueError, RuntimeError, ...
        if "ray[client]" in str(exc):
            hint = f"A ray:// address goes through Ray Client: {pip_command()} install 'ray[client]==2.60.0'"
        elif address is not None:
            hint = ("Check the address (`ray status` on the head node prints it; Ray Client listens on port 10001) "
                    "and that this machine reaches it")
        else:
            hint = "Check the free memory and the disk space under /tmp/ray"
        raise EngineError(f"could not {where}: {type(exc).__name__}: {exc}", hint=hint) from exc
    logging.getLogger("ray.data").setLevel(logging.WARNING)
    # rewardlab shows its own progress; Ray Data's notice that its bars are off says nothing to a user
    logging.getLogger("ray.data._internal.progress").setLevel(logging.ERROR)
    return True


def map_items_ray(fn: Callable, items: Iterable, *, workers: int | None = None,
                  address: str | None = None) -> Iterator:
    """Yield ``fn(item)`` for each item, in order, each item one Ray Data task.

    Parameters
    ----------
    fn : callable
        Called once per item in a Ray worker (and again if that worker died):
        a module-level function, or a closure over picklable values.
    items : iterable
        Listed up front (Ray Data plans every task before the first runs):
        keep them small (a part's path and options), and let ``fn`` read
        the data.  Each must pickle.
    workers : int or None
        Items at once (None: as many as the cluster has CPUs).
    address : str or None
        The Ray cluster to join: None (a local Ray with this machine's
        cores), ``"auto"`` (the cluster this machine is a node of), or
        ``"ray://HOST:10001"`` (Ray Client).  A Ray this process already
        started is used as it is, whatever ``address`` says.

    Raises
    ------
    Exception
        The first exception an item's ``fn`` raised, in item order, as itself.
    EngineError
        An item's worker died on each of its ``1 + TASK_RETRIES`` runs (the
        error names the item), or Ray itself failed.

    Notes
    -----
    Work starts at the first ``next()``; the arguments are checked at the
    call.  Up to ``workers`` items run at once and Ray Data may run ahead of
    the consumer; results not yet consumed wait in Ray's object store.
    Closing the iterator (or an item's exception) stops the run: items not
    yet started are not started.

    Examples
    --------
    >>> list(map_items_ray(abs, [-1, 2, -3], workers=2))  # doctest: +SKIP
    [1, 2, 3]
    """
    if workers is not None:
        workers = check_int("workers", workers, low=1, high=MAX_WORKERS,
                            rule=f"should be an integer in [1, {MAX_WORKERS}], or None for every CPU of the cluster")
    if address is not None and (not isinstance(address, str) or not address):
        raise ParameterError("address", "should be a Ray cluster address such as 'auto' or 'ray://HOST:10001'",
                             address)
    reason = missing()
    if reason is not None:
        raise EngineError(f"the ray engine cannot run here: {reason}")
    return _stream(fn, list(items), workers, address)


def _stream(fn: Callable, items: list, workers: int | None, address: str | None) -> Iterator:
    """The results of :func:`map_items_ray`, its arguments checked."""
    if not items:
        return
    connect(address)
    import ray
    import ray.data
    from ray import cloudpickle
    from ray.data import TaskPoolStrategy

    count = len(items)
    rows = [{"index": k, "item": cloudpickle.dumps(item, protocol=5)} for k, item in enumerate(items)]
    size = None if workers is None else min(workers, count)
    retries = TASK_RETRIES
    with warnings.catch_warnings():
        # Ray 2.60 warns of its own deprecated settings as it copies a DataContext, and max_retries
        # has no named parameter yet.
        warnings.simplefilter("ignore", DeprecationWarning)
        dataset = ray.data.from_items(rows, override_num_blocks=count)  # one item, one block, one task
        context = dataset.context  # this dataset's own copy: the caller's DataContext is left as it was
        context.execution_options.preserve_order = True
        context.max_errored_blocks = -1  # an item whose worker died for good is dropped; its gap names it
        context.enable_progress_bars = False
        dataset = dataset.map(run_item, fn_kwargs={"fn": cloudpickle.dumps(fn, protocol=5)},
                              compute=TaskPoolStrategy(size=size), num_cpus=1, max_retries=retries)
    del rows  # the blocks are in Ray's object store now
    rows_out = iter(dataset.iter_rows())
    expected = 0
    try:
        while True:
            try:
                row = next(rows_out)
            except StopIteration:
                row = None
            except ray.exceptions.RayError as exc:
                raise EngineError(f"Ray failed while running work item {expected} of {count} or one after "
                                  f"it: {type(exc).__name__}: {exc}", hint=_FAULT_HINT) from exc
            if row is None and expected == count:
                return
            if row is None or row["index"] != expected:
                raise EngineError(
                    f"work item {expected} of {count} did not come back from Ray: Ray ran it {retries + 1} "
                    f"time{'s' if retries else ''} and its worker died each time (killed, out of memory, a crash "
                    "in native code), or Ray could not run it there (Ray's message is above, and in the session's "
                    "logs under /tmp/ray)",
                    hint=_FAULT_HINT)
            if not row["ok"]:
                raise_failure(row["payload"], expected)
            expected += 1
            yield pickle.loads(row["payload"])
    finally:
        rows_out.close()  # shuts the executor down: items not yet started are not started


_FAULT_HINT = ("Check the nodes' memory (the kernel's OOM killer) and the native code the work calls, and that "
               "rewardlab, at the driver's version, is installed on every node")

#: The Ray engine (``engine="ray"``, CLI ``--engine ray``).
ENGINE = register_engine(Engine(
    name="ray",
    map=map_items_ray,
    missing=missing,
    joins_cluster=True,
    description="a Ray cluster through Ray Data (a local Ray by default; address='auto' or "
    "'ray://HOST:10001' joins one): one task per part",
))
