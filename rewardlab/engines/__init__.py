"""Engines: where work over the parts of a dataset runs (this process's threads, or a Ray cluster).

An engine maps a function over *work items* (a part of a dataset, or a run of
parts that must go in order) and yields the results in item order; the
driver merges them (moments exactly, quantile sketches as bytes) and writes
what the run produces under its final name only once every item succeeded.
A new engine is one module and one :func:`register_engine` call.

Examples
--------
>>> from rewardlab.engines import get_engine
>>> list(get_engine("embedded").map(abs, [-1, 2, -3]))
[1, 2, 3]
"""

from rewardlab.engines.registry import (  # noqa: F401
    BUILTIN_ENGINES, DEFAULT_ENGINE, Engine, check_engine, get_engine, register_engine, registered_engines,
    unregister_engine,
)

__all__ = ["Engine", "register_engine", "unregister_engine", "get_engine", "registered_engines", "check_engine",
           "BUILTIN_ENGINES", "DEFAULT_ENGINE"]
