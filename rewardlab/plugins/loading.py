"""Load a reward plug-in file the way kanachan's trainer does (the file runs only when named).

:func:`read_plugin` reads and compiles a file without running it;
:func:`load_plugin` runs it in a module namespace holding kanachan's trainer
names (:mod:`rewardlab.contracts.kanachan.trainer_scope`) and checks ``get_reward``.

Examples
--------
>>> from rewardlab.plugins import load_plugin
>>> plugin = load_plugin("data/plugins/rank_top.py")  # doctest: +SKIP
>>> plugin.name, plugin.trainer_names  # doctest: +SKIP
('rank_top', ())
"""

from __future__ import annotations

import ast
import dataclasses
import difflib
import dis
import inspect
import itertools
import linecache
import os
import re
import sys
import traceback
import types
from pathlib import Path
from typing import Callable

from rewardlab.core import columns
from rewardlab.contracts.base import Contract
from rewardlab.contracts.registry import DEFAULT_CONTRACT, get_contract
from rewardlab.core.errors import ParameterError, PluginLoadError
from rewardlab.plugins.runner import plugin_traceback, safe_text
from rewardlab.contracts.kanachan.trainer_scope import TRAINER_NAMES, names_from_trainer, trainer_globals

__all__ = ["Plugin", "plugin_name", "read_plugin", "load_plugin", "safe_repr"]

_module_counter = itertools.count()
_READ_OPS = {"LOAD_FAST", "LOAD_FAST_CHECK", "LOAD_FAST_AND_CLEAR", "LOAD_FAST_LOAD_FAST",
             "LOAD_DEREF", "LOAD_CLOSURE", "LOAD_FROM_DICT_OR_DEREF"}


@dataclasses.dataclass(frozen=True)
class Plugin:
    """A loaded reward plug-in.

    Attributes
    ----------
    name : str
        Its name: the file's stem (``-``, ``.`` and spaces become ``_``) or
        the ``name`` given to :func:`load_plugin`; reward columns are
        ``reward_<name>`` and ``done_<name>``.
    path : Path
        The file it was loaded from.
    get_reward : callable or None
        ``get_reward(data, contiguous) -> None``; None when the file was
        loaded and run only in a child process (:mod:`rewardlab.plugins.isolation`).
    source : str
        The file's text as loaded.
    reads_contiguous : bool
        Whether ``get_reward`` reads its ``contiguous`` argument (then its
        rewards may legitimately differ between batch modes).  Decided from
        the function's bytecode: True when any instruction of ``get_reward``
        (unwrapped from decorators) loads its second parameter, including
        capturing it for a nested function or comprehension.  A callable
        whose code cannot be inspected (no ``__code__``, or parameters
        taken as ``*args``) is assumed to read it.
    line : int or None
        Line of ``def get_reward`` in the file, when known.
    trainer_names : tuple of str
        Names the file reads from kanachan's trainer scope without binding
        them itself (``torch`` used without ``import torch``, ...): it runs
        in kanachan's trainer but is not self-contained
        (:func:`rewardlab.contracts.kanachan.trainer_scope.names_from_trainer`).
    signature : str
        How the contract it was loaded for calls it (``get_reward(data, contiguous)``).

    Examples
    --------
    >>> plugin = load_plugin("data/plugins/rank_top.py")  # doctest: +SKIP
    >>> plugin.name, plugin.reads_contiguous  # doctest: +SKIP
    ('rank_top', False)
    """

    name: str
    path: Path
    get_reward: Callable | None = dataclasses.field(repr=False)
    source: str = dataclasses.field(repr=False)
    reads_contiguous: bool
    line: int | None = None
    trainer_names: tuple = ()
    signature: str = "get_reward(data, contiguous)"

    def portable(self) -> "Plugin":
        """This plug-in without its function (which cannot leave the process that loaded it)."""
        return dataclasses.replace(self, get_reward=None)


def plugin_name(path: str | os.PathLike) -> str:
    """The name a plug-in file gets from its file name: the stem, ``-``, ``.`` and spaces turned into ``_``.

    The one rule for a plug-in's default name (:func:`read_plugin`,
    :func:`load_plugin`, ``rewardlab apply`` and ``check-plugin``); an
    exporter checks the file it is about to write with it, so it never
    writes a file the loader then refuses by name.

    Raises
    ------
    ParameterError
        The name is not ``[A-Za-z_][A-Za-z0-9_]*`` (e.g. ``é.py``, ``1abc.py``, ``x'y.py``).

    Examples
    --------
    >>> plugin_name("data/plugins/rank-top.v2.py")
    'rank_top_v2'
    >>> plugin_name("1abc.py")
    Traceback (most recent call last):
    ...
    rewardlab.core.errors.ParameterError: `name` should match [A-Za-z_][A-Za-z0-9_]* (it comes from the file name '1abc.py', with '-', '.' and spaces turned into '_'). Received '1abc'. Rename the file or pass name=... to load_plugin().
    """
    path = Path(path)
    candidate = re.sub(r"[-. ]+", "_", path.stem)
    try:
        return columns.check_name(candidate, what="name")
    except ParameterError:
        raise ParameterError(
            "name", "should match [A-Za-z_][A-Za-z0-9_]* (it comes from the file name "
            f"{path.name!r}, with '-', '.' and spaces turned into '_')", candidate,
            hint="Rename the file or pass name=... to load_plugin().") from None


def _def_line(tree, name: str = "get_reward") -> int | None:
    """Line of the last top-level definition or assignment of ``name``."""
    line = None
    for node in tree.body:
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)) and node.name == name:
            line = node.lineno
        elif isinstance(node, (ast.Assign, ast.AnnAssign)):
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            if any(isinstance(t, ast.Name) and t.id == name for t in targets):
                line = node.lineno
        elif isinstance(node, (ast.Import, ast.ImportFrom)):
            if any((a.asname or a.name) == name for a in node.names):
                line = node.lineno
    return line


def _reads_second_argument(func) -> bool:
    """Whether ``func`` loads its second positional parameter (see :attr:`Plugin.reads_contiguous`)."""
    func = inspect.unwrap(func)
    offset = 0
    if inspect.ismethod(func):
        func, offset = func.__func__, 1
    elif not inspect.isfunction(func) and callable(func) and inspect.isfunction(
            getattr(type(func), "__call__", None)):
        func, offset = type(func).__call__, 1
    code = getattr(func, "__code__", None)
    if code is None or code.co_argcount < 2 + offset:
        return True
    name = code.co_varnames[1 + offset]
    for ins in dis.get_instructions(code):
        if ins.opname in _READ_OPS:
            args = ins.argval if isinstance(ins.argval, tuple) else (ins.argval,)
            if name in args:
                return True
    return False


def read_plugin(path: str | os.PathLike, *, name: str | None = None) -> tuple[str, Path, str, object]:
    """Read and compile a plug-in file without running it: ``(name, path, source, code)``.

    The checks that need no execution (the file exists and is a regular
    file, UTF-8, compiles), so a command can report them before it reads
    data and before any plug-in code runs.

    Raises
    ------
    PluginLoadError, ParameterError
        As :func:`load_plugin`.

    Examples
    --------
    >>> name, path, source, code = read_plugin("data/plugins/rank_top.py")  # doctest: +SKIP
    """
    if not isinstance(path, (str, os.PathLike)):
        raise ParameterError("path", "should be a str or path-like naming a plug-in file", path)
    path = Path(path)
    name = plugin_name(path) if name is None else columns.check_name(name, what="name")
    if path.is_dir():
        raise ParameterError("path", "should name a plug-in file, not a folder (plug-ins are code "
                             "and run only when named one by one)", str(path))
    if path.exists() and not path.is_file():
        raise PluginLoadError(name, path, "is not a regular file (a FIFO, socket or device); name "
                              "the plug-in's .py file")
    try:
        raw = path.read_bytes()
    except FileNotFoundError:
        raise PluginLoadError(name, path, "no such file") from None
    except OSError as exc:
        raise PluginLoadError(name, path, f"cannot be read: {exc.strerror or exc}") from None
    try:
        source = raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        line = raw[: exc.start].count(b"\n") + 1
        raise PluginLoadError(name, path, f"is not UTF-8 text (byte {exc.start}: {exc.reason})",
                              line=line) from None
    filename = str(path)
    try:
        code = compile(source, filename, "exec", dont_inherit=True)
    except SyntaxError as exc:
        detail = "".join(traceback.format_exception_only(exc))
        raise PluginLoadError(name, path, f"does not parse: {exc.msg}", line=exc.lineno,
                              plugin_traceback=detail) from None
    except ValueError as exc:  # e.g. null bytes
        raise PluginLoadError(name, path, f"does not parse: {exc}") from None
    return name, path, source, code


def load_plugin(path: str | os.PathLike, *, name: str | None = None,
                trainer_scope: bool = True, contract: str | Contract | None = None) -> Plugin:
    """Load a reward plug-in file the way kanachan does.

    The text is compiled under the file's real name (tracebacks point at
    the plug-in's lines) and executed in a fresh module namespace that holds
    the names kanachan's trainer has in scope (``torch``, ``Tensor``,
    ``TensorDict``, ``math``, ...: :data:`rewardlab.contracts.kanachan.trainer_scope.TRAINER_NAMES`),
    since kanachan ``exec``-s the file into its training module; the file
    must define ``get_reward`` callable as ``get_reward(data, contiguous)``.
    The names the file takes from that scope are recorded
    (:attr:`Plugin.trainer_names`); :func:`check_plugin` warns about them.

    Loading runs the file's code in this process; :func:`check_plugin` and
    :func:`apply_plugins` given a *path* load it in their child process instead.

    Parameters
    ----------
    path : str or path-like
        The plug-in file.  A folder is refused: plug-ins are code and run
        only when named one by one.
    name : str, optional
        The plug-in's name; by default the file's stem with ``-``, ``.`` and
        spaces turned into ``_``.  Must match ``[A-Za-z_][A-Za-z0-9_]*``.
    trainer_scope : bool
        Put kanachan's trainer names in scope (default); False runs the file
        in an empty namespace, as a stand-alone module would.
    contract : str, Contract or None
        The plug-in contract whose entry point and signature the file must
        define (:mod:`rewardlab.contracts`); None is kanachan's,
        ``get_reward(data, contiguous)``.

    Returns
    -------
    Plugin

    Raises
    ------
    PluginLoadError
        The file is missing, not a regular file or unreadable, does not parse
        (file and line, with the compiler's caret), raises while executing
        (any exception, ``SystemExit`` included; the plug-in's own traceback
        is kept), lacks ``get_reward``, or defines it not callable or with the
        wrong parameters (file and the definition's line).
    ParameterError
        ``name`` (given or derived from the file name) is not a valid name.

    Examples
    --------
    >>> plugin = load_plugin("data/plugins/rank_top.py")  # doctest: +SKIP
    >>> plugin.get_reward  # doctest: +SKIP
    <function get_reward at 0x...>
    """
    if not isinstance(trainer_scope, bool):
        raise ParameterError("trainer_scope", "should be True or False", trainer_scope)
    contract = get_contract(DEFAULT_CONTRACT if contract is None else contract)
    entry = contract.entry_point
    name, path, source, code = read_plugin(path, name=name)
    filename = str(path)
    # keep the loaded text for tracebacks even if the file changes on disk later
    linecache.cache[filename] = (len(source), None, source.splitlines(True), filename)

    module_name = f"_rewardlab_plugin_{name}_{next(_module_counter)}"
    module = types.ModuleType(module_name)
    module.__file__ = filename
    namespace = module.__dict__
    if trainer_scope:
        namespace.update(trainer_globals())
    sys.modules[module_name] = module  # dataclasses and typing look the module up while it runs
    try:
        exec(code, namespace)
    except KeyboardInterrupt:
        raise  # the user's Ctrl-C (in a child process Ctrl-C is ignored: see isolation)
    except BaseException as exc:  # noqa: BLE001 - the plug-in's own failure: keep its traceback
        text, line = plugin_traceback(exc, filename)
        message = f"raised {type(exc).__name__} while loading: {safe_text(exc)}"
        if isinstance(exc, SystemExit):
            message += " (it called sys.exit; a plug-in file must not end the program)"
        raise PluginLoadError(name, path, message, line=line, plugin_traceback=text) from None
    finally:
        sys.modules.pop(module_name, None)

    tree = ast.parse(source, filename)  # compile() accepted it
    line = _def_line(tree, entry)
    if entry not in namespace:
        own = [k for k in namespace if not k.startswith("__") and k not in TRAINER_NAMES]
        close = difflib.get_close_matches(entry, own, n=1, cutoff=0.6)
        hint = ""
        if close:
            near = _def_line(tree, close[0])
            hint = f"; did you mean `{close[0]}`" + (f" (line {near})" if near else "") + "?"
        raise PluginLoadError(name, path, f"defines no `{entry}`; a reward plug-in must define "
                              f"`def {contract.signature}`{hint}")
    get_reward = namespace[entry]
    if not callable(get_reward):
        kind = "a class" if getattr(contract, "defined_by", None) == entry else "a function"
        raise PluginLoadError(name, path, f"`{entry}` should be {kind}; it is a "
                              f"{type(get_reward).__name__} ({safe_repr(get_reward)})", line=line)
    try:
        signature = inspect.signature(get_reward)
    except (TypeError, ValueError):
        signature = None
    if signature is not None:
        code_line = getattr(getattr(inspect.unwrap(get_reward), "__code__", None), "co_firstlineno", None)
        def_line = line or code_line
        try:
            signature.bind(*contract.sample_arguments())
        except TypeError:
            count = len(contract.parameters)
            raise PluginLoadError(
                name, path, f"`{entry}` should accept exactly {_COUNTS.get(count, count)} "
                f"parameter{'s' if count != 1 else ''}, ({', '.join(contract.parameters)}), as "
                f"{contract.caller} calls {contract.signature}; it is defined as "
                f"{entry}{signature}", line=def_line) from None
        line = def_line
    reads = contract.passes_contiguous and _reads_second_argument(get_reward)
    return Plugin(name=name, path=path, get_reward=get_reward, source=source,
                  reads_contiguous=reads, line=line,
                  trainer_names=names_from_trainer(source, filename), signature=contract.signature)


_COUNTS = {1: "one", 2: "two", 3: "three"}


def safe_repr(value, limit: int = 60) -> str:
    """``repr(value)`` cut to ``limit`` characters, or a note when ``repr`` fails.

    Examples
    --------
    >>> safe_repr("x" * 100, limit=8)
    "'xxxxxxx"
    """
    try:
        return repr(value)[:limit]
    except BaseException as exc:  # noqa: BLE001 - the plug-in's object
        return f"<repr() raised {type(exc).__name__}>"
