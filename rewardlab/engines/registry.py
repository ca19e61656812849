"""The registry of engines: :class:`Engine` and how commands find one by name.

An engine runs ``fn(item)`` for each work item and yields the results in the
items' order.  Items and results cross process (and machine) boundaries, so
both must pickle: module-level functions, plain data, NumPy arrays, sketches
as their serialized bytes.  ``fn`` may fork (plug-ins run in an isolated
child process inside it) and may write files, but only under names the
driver gives it (a staging folder the driver promotes once every item is
done), so a retried or abandoned item leaves nothing under a final name.

Examples
--------
>>> from rewardlab.engines.registry import get_engine, registered_engines
>>> sorted(registered_engines())
['embedded', 'processes', 'ray']
>>> list(get_engine("embedded").map(str, [1, 2], workers=2))
['1', '2']
"""

from __future__ import annotations

import importlib
from dataclasses import dataclass
from typing import Callable

from rewardlab.core.errors import ParameterError
from rewardlab.core.fronts import Fix, Text

__all__ = ["Engine", "register_engine", "unregister_engine", "get_engine", "registered_engines", "check_engine",
           "BUILTIN_ENGINES", "DEFAULT_ENGINE"]

#: The engines rewardlab ships: name -> the module that registers it when imported.
BUILTIN_ENGINES: dict[str, str] = {
    "embedded": "rewardlab.engines.embedded",
    "processes": "rewardlab.engines.processes",
    "ray": "rewardlab.engines.raydata",
}

#: The engine of every command unless ``engine=`` / ``--engine`` names another.
DEFAULT_ENGINE = "embedded"

_ENGINES: dict[str, "Engine"] = {}


@dataclass(frozen=True)
class Engine:
    """One way to run work items.

    Parameters
    ----------
    name : str
        What ``engine=`` and ``--engine`` call it.
    map : callable
        ``map(fn, items, *, workers=None, address=None)`` ->
        iterator of ``fn(item)`` in the order of ``items``.  ``workers``:
        how many items may run at once (None: the engine's default, the
        cores it has); ``address``: the cluster to join, for engines that
        join one (others refuse it).  An item that raises stops the run:
        the exception is raised from the iterator (items not yet started
        are not started).
    description : str
        One line for help texts and error messages.
    missing : callable
        ``missing() -> str | None``: None when the engine can run here,
        else what to install (checked before any work starts).
    joins_cluster : bool
        True when ``address`` means something to it.
    """

    name: str
    map: Callable
    description: str = ""
    missing: Callable[[], str | None] = lambda: None
    joins_cluster: bool = False


def register_engine(engine: Engine, *, replace: bool = False) -> Engine:
    """Add ``engine`` to the registry under ``engine.name``; returns it.

    Examples
    --------
    >>> e = register_engine(Engine("serial", map=lambda fn, items, **o: map(fn, items)))
    >>> list(get_engine("serial").map(abs, [-2]))
    [2]
    >>> _ = unregister_engine("serial")
    """
    if not isinstance(engine, Engine):
        raise ParameterError("engine", "should be a rewardlab.engines.Engine", type(engine).__name__)
    if not isinstance(engine.name, str) or not engine.name.isidentifier():
        raise ParameterError("engine.name", "should be a Python identifier", engine.name)
    if engine.name in _ENGINES and not replace and _ENGINES[engine.name] is not engine:
        raise ParameterError("engine", Text(f"names an engine already registered ({engine.name!r}); ",
                                            Fix("replace", True), " to replace it"), engine.name)
    _ENGINES[engine.name] = engine
    return engine


def unregister_engine(name: str) -> Engine:
    """Remove the engine registered as ``name``; returns it."""
    _load_builtins()
    if name not in _ENGINES:
        raise ParameterError("name", "should name a registered engine", name,
                             hint=f"Registered: {', '.join(sorted(_ENGINES))}.")
    return _ENGINES.pop(name)


def _load_builtins() -> None:
    for name, module in BUILTIN_ENGINES.items():
        if name not in _ENGINES:
            importlib.import_module(module)


def registered_engines() -> dict[str, Engine]:
    """Every registered engine by name (the built-in ones first)."""
    _load_builtins()
    return dict(_ENGINES)


def get_engine(name: str, *, argument: str = "engine") -> Engine:
    """The engine registered as ``name`` (:class:`~rewardlab.core.errors.ParameterError` naming ``argument`` otherwise).

    Examples
    --------
    >>> get_engine("spark", argument="--engine")
    Traceback (most recent call last):
    ...
    rewardlab.core.errors.ParameterError: `--engine` should be one of 'embedded', 'processes', 'ray'. Received 'spark'.
    """
    engines = registered_engines()
    if not isinstance(name, str) or name not in engines:
        raise ParameterError(argument, f"should be one of {', '.join(map(repr, engines))}", name)
    return engines[name]


def check_engine(engine, *, address=None, argument: str = "engine", address_argument: str = "address") -> Engine:
    """Validate ``engine`` (a name or an :class:`Engine`) and ``address`` together; return the engine.

    Refuses an engine that cannot run here (naming what to install) and an
    ``address`` given to an engine that joins no cluster.

    Examples
    --------
    >>> check_engine("embedded").name
    'embedded'
    >>> check_engine("embedded", address="ray://head:10001")
    Traceback (most recent call last):
    ...
    rewardlab.core.errors.ParameterError: `address` applies only to engines that join a cluster (ray). Received 'ray://head:10001'. Leave it out, or pick engine='ray'.
    """
    found = engine if isinstance(engine, Engine) else get_engine(engine, argument=argument)
    if address is not None:
        if not found.joins_cluster:
            joiners = [n for n, e in registered_engines().items() if e.joins_cluster]
            raise ParameterError(address_argument, f"applies only to engines that join a cluster "
                                 f"({', '.join(joiners)})", address,
                                 hint=f"Leave it out, or pick {argument}={joiners[0]!r}." if joiners else None)
        if not isinstance(address, str) or not address:
            raise ParameterError(address_argument, "should be a cluster address such as 'ray://HOST:10001' or "
                                 "'auto'", address)
    reason = found.missing()
    if reason is not None:
        raise ParameterError(argument, f"names an engine that cannot run here: {reason}", found.name)
    return found
