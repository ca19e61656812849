"""What applying and checking share: validating plug-in arguments and running the work in a child.

:func:`execute` runs a job (loading the files given as paths, then the runs)
in a child process (:mod:`rewardlab.plugins.isolation`) or here, and
:func:`failure_error` turns a child that exited, was killed or timed out into
the error that names the plug-in.

Examples
--------
>>> from rewardlab.plugins.execution import check_isolation
>>> check_isolation(False, None)
(False, None)
"""

from __future__ import annotations

import numbers
import os
import re
from pathlib import Path
from typing import Sequence

import polars as pl

from rewardlab.plugins import isolation
from rewardlab.core.files import progress_enabled
from rewardlab.core.errors import ParameterError, PluginLoadError, PluginRunCancelled, PluginRuntimeError, \
    PluginTimeoutError
from rewardlab.plugins.loading import Plugin, load_plugin, read_plugin

__all__ = ["plugin_items", "load_items", "check_frame", "check_isolation", "progress_bar",
           "ProgressCallback", "check_cancel", "execute", "failure_error", "failed_plugin", "child_failure_error",
           "raise_first"]


def plugin_items(plugins, contract=None) -> list:
    """Validate ``plugins`` (a Plugin, a path, or a sequence of them) without running any code.

    Paths are read and compiled (:func:`read_plugin`) so their names are
    known and syntax errors come first; names must be distinct; a loaded
    Plugin must have been loaded for a contract called as ``contract`` is.
    Returns ``[(item, name, path)]``.
    """
    if isinstance(plugins, (Plugin, str, os.PathLike)):
        plugins = [plugins]
    if not isinstance(plugins, Sequence) or isinstance(plugins, (str, bytes)):
        raise ParameterError("plugins", "should be a Plugin, a path to a plug-in file, or a "
                             "sequence of them", type(plugins).__name__)
    if not plugins:
        raise ParameterError("plugins", "should name at least one plug-in", list(plugins))
    items = []
    for item in plugins:
        if isinstance(item, Plugin):
            if item.get_reward is None:
                raise ParameterError("plugins", "should hold loaded plug-ins; this one was loaded in "
                                     "a child process and has no function here", item.name,
                                     hint="Pass its path instead.")
            if contract is not None and item.signature != contract.signature:
                raise ParameterError("plugins", f"should be loaded for the {contract.name!r} "
                                     f"contract, which calls {contract.signature}; this one was "
                                     f"loaded for {item.signature}", item.name,
                                     hint="Pass its path, or load it with "
                                     f"load_plugin(path, contract={contract.name!r}).")
            items.append((item, item.name, item.path))
        elif isinstance(item, (str, os.PathLike)):
            name, path, _, _ = read_plugin(item)
            items.append((Path(item), name, path))
        else:
            raise ParameterError("plugins", "should hold Plugin objects or paths to plug-in files",
                                 item)
    names = [name for _, name, _ in items]
    dupes = sorted({n for n in names if names.count(n) > 1})
    if dupes:
        raise ParameterError("plugins", "should have distinct names (they name the reward "
                             f"columns); repeated: {', '.join(dupes)}", names,
                             hint="Load one with load_plugin(path, name=...).")
    return items


def load_items(items: list, status, contract=None, *, load=None) -> list[Plugin]:
    """Load the :func:`plugin_items` given as paths (for ``contract``; None: the default), with ``load(path,
    name=...)`` when given (a contract a file chooses itself: reward managers), else :func:`load_plugin`."""
    loaded = []
    for item, name, path in items:
        if isinstance(item, Plugin):
            loaded.append(item)
            continue
        if status is not None:
            status.doing(f"loading plug-in {name!r} ({path})")
        loaded.append(load_plugin(item, name=name, contract=contract) if load is None else load(item, name=name))
    return loaded


def check_frame(frame) -> pl.DataFrame:
    if isinstance(frame, pl.LazyFrame):
        raise ParameterError("frame", "should be an eager polars.DataFrame (collect it first)",
                             "LazyFrame")
    if not isinstance(frame, pl.DataFrame):
        raise ParameterError("frame", "should be a polars.DataFrame", type(frame).__name__)
    return frame


def check_isolation(isolate, timeout) -> tuple[bool, float | None]:
    if isolate is None:
        isolate = isolation.AVAILABLE
    if not isinstance(isolate, bool):
        raise ParameterError("isolate", "should be True, False or None", isolate)
    if isolate and not isolation.AVAILABLE:
        raise ParameterError("isolate", "needs os.fork, which this platform lacks", isolate,
                             hint="Pass isolate=False to run plug-ins in this process.")
    if timeout is not None:
        if isinstance(timeout, bool) or not isinstance(timeout, numbers.Real) or not timeout > 0:
            raise ParameterError("timeout", "should be a number of seconds > 0, or None", timeout)
        if not isolate:
            raise ParameterError("timeout", "needs isolate=True (a plug-in is stopped by ending its "
                                 "child process)", timeout)
        timeout = float(timeout)
    return isolate, timeout


class ProgressCallback:
    """A progress bar's ``update`` / ``close`` feeding ``progress(fraction, message)`` (e.g. a widget's bar).

    Examples
    --------
    >>> bar = ProgressCallback(lambda f, m: print(f"{f:.0%} {m}"), 400, "apply_plugins")
    >>> bar.update(100)
    25% apply_plugins: 100 of 400 transitions
    """

    def __init__(self, progress, total: int, desc: str):
        self.progress, self.total, self.desc, self.done = progress, int(total), desc, 0

    def update(self, n: int) -> None:
        self.done += int(n)
        self.progress(self.done / self.total if self.total else 1.0,
                      f"{self.desc}: {self.done:,} of {self.total:,} transitions")

    def close(self) -> None:
        pass


def progress_bar(progress, total: int, desc: str):
    """What reports progress: a tqdm bar, a :class:`ProgressCallback` for a callable ``progress``, or None."""
    if callable(progress):
        return ProgressCallback(progress, total, desc)
    if not progress_enabled(progress):
        return None
    from tqdm.auto import tqdm

    return tqdm(total=total, unit="transition", unit_scale=True, desc=desc)


def check_cancel(cancel):
    if cancel is not None and not callable(cancel):
        raise ParameterError("cancel", "should be a callable returning True once the work should "
                             "stop, or None", cancel)
    return cancel


def execute(job, *, isolate: bool, timeout: float | None, bar, cancel, name: str
             ) -> tuple[object, list]:
    """Run ``job(status, send)`` in a child (``isolate``) or here; returns (result, parts sent).

    In a child, every process the plug-ins start is ended before this returns
    (:mod:`rewardlab.plugins.isolation`); here (``isolate=False``) nothing
    watches them.
    """
    if cancel is not None and cancel():  # cancelled before it started: nothing runs
        raise PluginRunCancelled(name)
    parts: list = []
    if not isolate:
        return job(None, parts.append), parts
    result = isolation.run_in_child(job, timeout=timeout, on_part=parts.append, cancel=cancel,
                                    on_progress=None if bar is None else bar.update)
    if isinstance(result, isolation.ChildFailure) and result.how == "cancelled":
        raise PluginRunCancelled(name)
    return result, parts


_DOING = re.compile(r"^plug-in '([A-Za-z_][A-Za-z0-9_]*)'")


def failure_error(failure: isolation.ChildFailure, name: str, path, *, loading: bool, where: str = ""):
    """The error a child's failure stands for, naming the plug-in it was running (``where``: the data it
    was working on, e.g. a dataset's part, added to the message)."""
    where = f" ({where})" if where else ""
    if failure.how == "timeout":
        return (PluginLoadError if loading else PluginTimeoutError)(
            name, path, f"{failure}{where}. Raise --timeout / timeout= if it is only slow",
            plugin_traceback=failure.stack or None)
    if failure.how == "raised":
        return (PluginLoadError if loading else PluginRuntimeError)(
            name, path, "rewardlab's child process failed" + str(failure).removeprefix("failed") + where)
    text = (f"ended rewardlab's child process ({failure.detail}) while "
            + (f"running {failure.doing}" if failure.doing else "starting") + where
            + ": a plug-in must not exit (sys.exit, os._exit) or kill its process or the one "
            "watching it")
    return (PluginLoadError if loading else PluginRuntimeError)(name, path, text)


def failed_plugin(failure: isolation.ChildFailure, items: list) -> tuple[str, object]:
    """``(name, path)`` of the plug-in a failed child was running (the first when it cannot tell).

    The child says which plug-in it calls (:class:`~rewardlab.plugins.isolation.ChildStatus`);
    ``items`` are :func:`plugin_items`.
    """
    match = _DOING.match(failure.doing)
    name = match.group(1) if match else items[0][1]
    path = next((p for _, n, p in items if n == name), items[0][2])
    return name, path


def child_failure_error(failure: isolation.ChildFailure, items: list, loaded: int, *, where: str = ""):
    """The error of a child that failed after loading ``loaded`` of ``items`` (:func:`plugin_items`): the next
    plug-in's load failed, or (all loaded) the one it was running failed (:func:`failed_plugin`), on
    ``where`` (the data it was working on, for the message)."""
    if loaded < len(items):
        _, name, path = items[loaded]
        return failure_error(failure, name, path, loading=True)
    name, path = failed_plugin(failure, items)
    return failure_error(failure, name, path, loading=False, where=where)


def raise_first(outcomes: list) -> None:
    for outcome in outcomes:
        if outcome.error is not None:
            raise outcome.error
        if outcome.problems:
            raise next(iter(outcome.problems.values()))[0]
