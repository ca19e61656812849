"""Packages that re-export their names on first use (PEP 562), so importing them stays cheap.

``import rewardlab`` must not load torch, and the CLI's parser must not load
the plug-in runner: a package lists where each public name lives and
:func:`install` gives it a module ``__getattr__`` that imports the home
module the first time a name is read (then keeps the value).

Examples
--------
>>> namespace = {"__name__": "demo"}
>>> install(namespace, {"rewardlab.core.columns": ("reward_column",)})
>>> namespace["__getattr__"]("reward_column")("top")
'reward_top'
>>> namespace["__all__"]
['reward_column']
"""

from __future__ import annotations

import importlib

__all__ = ["install"]


def install(namespace: dict, exports: dict[str, tuple[str, ...]], *,
            submodules: dict[str, str] | None = None) -> None:
    """Give the package whose ``globals()`` is ``namespace`` lazy ``__getattr__``, ``__dir__`` and ``__all__``.

    Parameters
    ----------
    namespace : dict
        The package's ``globals()``.
    exports : dict
        ``{module: names}``: where each public name lives.
    submodules : dict, optional
        ``{attribute: module}``: modules available as attributes.
    """
    home = {name: module for module, names in exports.items() for name in names}
    submodules = dict(submodules or {})
    package = namespace["__name__"]

    def __getattr__(name: str):
        if name in submodules:
            value = importlib.import_module(submodules[name])
        elif name in home:
            value = getattr(importlib.import_module(home[name]), name)
        else:
            raise AttributeError(f"module {package!r} has no attribute {name!r}")
        namespace[name] = value  # imported once
        return value

    def __dir__() -> list[str]:
        return sorted(set(namespace) | set(namespace["__all__"]))

    namespace["__all__"] = [*namespace.get("__all__", ()), *submodules, *home]
    namespace["__getattr__"] = __getattr__
    namespace["__dir__"] = __dir__
