"""Reward plug-ins: load them as kanachan does, apply them to a frame, check the contract.

A reward plug-in is a Python file defining ``get_reward(data, contiguous)``
(``shared/seeds/000_*.txt``).  A plug-in is code: it runs only when the user
names its file; rewardlab never scans a folder and executes what it finds.

* :func:`load_plugin` reads the file, compiles it under its real file name
  (tracebacks show the plug-in's own lines) and executes it in a fresh
  namespace holding the names kanachan's trainer has in scope
  (:mod:`rewardlab.trainer_scope`), as kanachan ``exec``-s the text into its
  training module.
* Plug-ins run in a child process by default (:mod:`rewardlab.isolation`):
  a plug-in that exits, hangs past ``timeout`` or kills its process is
  reported as failing, with what it was doing, never as a pass.
* :func:`apply_plugins` calls each plug-in on the frame's transitions in a
  batch mode (:mod:`rewardlab.batch_modes`), checks the contract after every
  call (:mod:`rewardlab.contract`) and adds ``reward_<name>`` (Float64) and
  ``done_<name>`` (Boolean) columns.
* :func:`check_plugin` runs the contract checks in every batch mode with two
  batch sizes and reports whether the rewards depend on how the data was cut.

Examples
--------
>>> import rewardlab
>>> frame = rewardlab.load_kanachan("data/sample.tsv.gz", progress=False)  # doctest: +SKIP
>>> frame = rewardlab.apply_plugins(frame, "data/plugins/rank_top.py")  # doctest: +SKIP
>>> print(rewardlab.check_plugin(frame, "data/plugins/rank_top.py"))  # doctest: +SKIP
"""

from __future__ import annotations

import ast
import dataclasses
import difflib
import dis
import inspect
import itertools
import linecache
import numbers
import os
import re
import sys
import traceback
import types
import warnings
from pathlib import Path
from typing import Callable, Sequence

import numpy as np
import polars as pl

from rewardlab import isolation
from rewardlab import schema as S
from rewardlab._io import progress_enabled
from rewardlab.batch_modes import (
    BATCH_MODES, DEFAULT_BATCH_SIZES, DEFAULT_NUM_WORKERS, check_contiguous, check_num_workers,
    episode_ends, mode_setting, plan_batches,
)
from rewardlab.batching import CONVENTIONS, FrameArrays
from rewardlab.contract import RewardScale, compare_outputs, float16_precision, reward_scale
from rewardlab.errors import (
    ParameterError, PluginLoadError, PluginRunCancelled, PluginRuntimeError, PluginTimeoutError,
    RewardScaleWarning, check_choice,
)
from rewardlab.runner import Locator, RunOutcome, plugin_traceback, resolve, run_plugins, safe_text
from rewardlab.trainer_scope import TRAINER_NAMES, UNAVAILABLE, names_from_trainer, trainer_globals

__all__ = [
    "Plugin",
    "load_plugin",
    "apply_plugins",
    "check_plugin",
    "CheckReport",
    "RunSummary",
    "Difference",
    "CHECK_BATCH_SIZES",
    "REWARD_DTYPES",
]

#: The two batch sizes :func:`check_plugin` tries in every mode but ``episodes``.
CHECK_BATCH_SIZES = (64, 2048)

#: Polars dtype of a reward column, by the dtype the plug-in returned (what kanachan keeps).
REWARD_DTYPES = {"float16": pl.Float16, "float32": pl.Float32, "float64": pl.Float64}

_module_counter = itertools.count()
_READ_OPS = {"LOAD_FAST", "LOAD_FAST_CHECK", "LOAD_FAST_AND_CLEAR", "LOAD_FAST_LOAD_FAST",
             "LOAD_DEREF", "LOAD_CLOSURE", "LOAD_FROM_DICT_OR_DEREF"}


# --------------------------------------------------------------------------
# Loading
# --------------------------------------------------------------------------


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
        loaded and run only in a child process (:mod:`rewardlab.isolation`).
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
        (:func:`rewardlab.trainer_scope.names_from_trainer`).

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

    def portable(self) -> "Plugin":
        """This plug-in without its function (which cannot leave the process that loaded it)."""
        return dataclasses.replace(self, get_reward=None)


def _name_from_stem(path: Path) -> str:
    candidate = re.sub(r"[-. ]+", "_", path.stem)
    try:
        return S.check_name(candidate, what="name")
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
    name = _name_from_stem(path) if name is None else S.check_name(name, what="name")
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
                trainer_scope: bool = True) -> Plugin:
    """Load a reward plug-in file the way kanachan does.

    The text is compiled under the file's real name (tracebacks point at
    the plug-in's lines) and executed in a fresh module namespace that holds
    the names kanachan's trainer has in scope (``torch``, ``Tensor``,
    ``TensorDict``, ``math``, ...: :data:`rewardlab.trainer_scope.TRAINER_NAMES`),
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
    line = _def_line(tree)
    if "get_reward" not in namespace:
        own = [k for k in namespace if not k.startswith("__") and k not in TRAINER_NAMES]
        close = difflib.get_close_matches("get_reward", own, n=1, cutoff=0.6)
        hint = ""
        if close:
            near = _def_line(tree, close[0])
            hint = f"; did you mean `{close[0]}`" + (f" (line {near})" if near else "") + "?"
        raise PluginLoadError(name, path, "defines no `get_reward`; a reward plug-in must define "
                              f"`def get_reward(data, contiguous)`{hint}")
    get_reward = namespace["get_reward"]
    if not callable(get_reward):
        raise PluginLoadError(name, path, f"`get_reward` should be a function; it is a "
                              f"{type(get_reward).__name__} ({safe_repr(get_reward)})", line=line)
    try:
        signature = inspect.signature(get_reward)
    except (TypeError, ValueError):
        signature = None
    if signature is not None:
        code_line = getattr(getattr(inspect.unwrap(get_reward), "__code__", None), "co_firstlineno", None)
        def_line = line or code_line
        try:
            signature.bind(None, False)
        except TypeError:
            raise PluginLoadError(
                name, path, "`get_reward` should accept exactly two parameters, (data, contiguous), "
                f"as kanachan calls get_reward(data, contiguous); it is defined as "
                f"get_reward{signature}", line=def_line) from None
        line = def_line
    return Plugin(name=name, path=path, get_reward=get_reward, source=source,
                  reads_contiguous=_reads_second_argument(get_reward), line=line,
                  trainer_names=names_from_trainer(source, filename))


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


def _items(plugins) -> list:
    """Validate ``plugins`` (a Plugin, a path, or a sequence of them) without running any code.

    Paths are read and compiled (:func:`read_plugin`) so their names are
    known and syntax errors come first; names must be distinct.
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


def _load_items(items: list, status) -> list[Plugin]:
    loaded = []
    for item, name, path in items:
        if isinstance(item, Plugin):
            loaded.append(item)
            continue
        if status is not None:
            status.doing(f"loading plug-in {name!r} ({path})")
        loaded.append(load_plugin(item, name=name))
    return loaded


def _check_frame(frame) -> pl.DataFrame:
    if isinstance(frame, pl.LazyFrame):
        raise ParameterError("frame", "should be an eager polars.DataFrame (collect it first)",
                             "LazyFrame")
    if not isinstance(frame, pl.DataFrame):
        raise ParameterError("frame", "should be a polars.DataFrame", type(frame).__name__)
    return frame


def _check_int(name: str, value, minimum: int) -> int:
    if isinstance(value, bool) or not isinstance(value, numbers.Integral) or value < minimum:
        raise ParameterError(name, f"should be an integer >= {minimum}", value)
    return int(value)


def _check_isolation(isolate, timeout) -> tuple[bool, float | None]:
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


def _bar(progress, total: int, desc: str):
    if not progress_enabled(progress):
        return None
    from tqdm.auto import tqdm

    return tqdm(total=total, unit="transition", unit_scale=True, desc=desc)


def _check_cancel(cancel):
    if cancel is not None and not callable(cancel):
        raise ParameterError("cancel", "should be a callable returning True once the work should "
                             "stop, or None", cancel)
    return cancel


def _execute(job, *, isolate: bool, timeout: float | None, bar, cancel, name: str
             ) -> tuple[object, list]:
    """Run ``job(status, send)`` in a child (``isolate``) or here; returns (result, parts sent)."""
    parts: list = []
    if not isolate:
        return job(None, parts.append), parts
    result = isolation.run_in_child(job, timeout=timeout, on_part=parts.append, cancel=cancel,
                                    on_progress=None if bar is None else bar.update)
    if isinstance(result, isolation.ChildFailure) and result.how == "cancelled":
        raise PluginRunCancelled(name)
    return result, parts


_DOING = re.compile(r"^plug-in '([A-Za-z_][A-Za-z0-9_]*)'")


def _failure_error(failure: isolation.ChildFailure, name: str, path, *, loading: bool):
    """The error a child's failure stands for, naming the plug-in it was running."""
    if failure.how == "timeout":
        return (PluginLoadError if loading else PluginTimeoutError)(
            name, path, f"{failure}. Raise --timeout / timeout= if it is only slow",
            plugin_traceback=failure.stack or None)
    if failure.how == "raised":
        return (PluginLoadError if loading else PluginRuntimeError)(
            name, path, "rewardlab's child process failed" + str(failure).removeprefix("failed"))
    text = (f"ended rewardlab's child process ({failure.detail}) while "
            + (f"running {failure.doing}" if failure.doing else "starting")
            + ": a plug-in must not exit (sys.exit, os._exit) or kill its process")
    return (PluginLoadError if loading else PluginRuntimeError)(name, path, text)


def _raise_first(outcomes: list) -> None:
    for outcome in outcomes:
        if outcome.error is not None:
            raise outcome.error
        if outcome.problems:
            raise next(iter(outcome.problems.values()))[0]


# --------------------------------------------------------------------------
# Applying
# --------------------------------------------------------------------------


def apply_plugins(
    frame: pl.DataFrame,
    plugins,
    *,
    batch_mode: str = "episodes",
    batch_size: int | None = None,
    seed: int = 0,
    contiguous: bool | None = None,
    num_workers: int = DEFAULT_NUM_WORKERS,
    convention: str = "offline",
    strict: bool = False,
    isolate: bool | None = None,
    timeout: float | None = None,
    cancel=None,
    progress: bool | None = None,
) -> pl.DataFrame:
    """Run reward plug-ins over a frame the way kanachan's training programs call them.

    Every call gets a fresh TensorDict of its batch (see :mod:`rewardlab.runner`),
    under ``torch.no_grad()``, with ``("next", "done")`` equal to
    ``end_of_game``; the contract is checked after every call.  Each plug-in
    works on its own copy of the data, so none sees another's writes.
    Results stream into preallocated arrays (memory bounded by the batches).

    Parameters
    ----------
    frame : polars.DataFrame
        The common frame (episode order, complete episodes).
    plugins : Plugin, path, or sequence of them
        Paths are loaded with :func:`load_plugin` (in the child process when
        ``isolate``).  Names must be distinct.
    batch_mode : {"episodes", "sequential", "dataloader", "fragments", "shuffled"}
        How transitions are cut into calls, and which kanachan setting that
        reproduces (:mod:`rewardlab.batch_modes`).
    batch_size : int or None
        Rows per call in ``sequential``, ``dataloader`` and ``shuffled``,
        fragment length in ``fragments``; ignored by ``episodes``.  None
        takes the mode's default (:data:`rewardlab.batch_modes.DEFAULT_BATCH_SIZES`).
    seed : int
        Seed of ``shuffled``.
    contiguous : bool or None
        The flag ``episodes`` passes (kanachan's ``contiguous_training_data``);
        None is kanachan's default, False.  The other modes always pass False.
    num_workers : int
        DataLoader workers of ``dataloader`` (default 2, as ``cql/train.py`` on CUDA).
    convention : {"offline", "simulation"}
        Build the TensorDicts as kanachan's offline loaders do, or as its
        simulator does (:data:`rewardlab.batching.CONVENTIONS`).
    strict : bool
        Compare IN fields exactly with a pristine copy after every call
        (catches any write, costs a copy of each chunk) instead of watching
        torch's version counters (free, misses writes through ``.numpy()``
        or ``.data``; see :mod:`rewardlab.runner`).
    isolate : bool or None
        Run the plug-ins (and load the ones given as paths) in a child
        process, so an exit, crash or hang cannot take this process with it;
        None (default) isolates where the platform can fork.
    timeout : float or None
        Seconds before an isolated run is stopped (None: no limit).
    cancel : callable or None
        Polled while an isolated run works (e.g. ``token.is_set`` of a
        ``threading.Event`` set by a UI); once it returns True the child
        process is stopped and :class:`~rewardlab.errors.PluginRunCancelled`
        raised (in-process runs check it between plug-ins only).
    progress : bool or None
        Progress bar; None shows one on an interactive terminal or in Jupyter.

    Returns
    -------
    polars.DataFrame
        ``frame`` with ``reward_<name>`` and ``done_<name>`` (Boolean) per
        plug-in; columns of the same names are replaced.  A reward column
        has the dtype the plug-in returned (Float16, Float32 or Float64:
        what kanachan's trainer receives).

    Raises
    ------
    PluginLoadError
        A plug-in file failed to load (also: its code ended the process).
    PluginRuntimeError
        A plug-in raised (its traceback), ended its process or ran out of
        time (:class:`~rewardlab.errors.PluginTimeoutError`): the batch (mode,
        index, rows) and the batch's first transition with its ``file:line``.
    ContractError
        A plug-in broke the contract (reward missing, wrong type, shape, dtype
        or device, non-finite; IN field changed; done not bool, wrong shape,
        or an episode's last step not done), with the batch and first offending row.
    ParameterError
        Bad arguments, duplicate plug-in names.

    Warns
    -----
    RewardScaleWarning
        A plug-in's rewards over the whole run are far from mean 0 / std 1
        (see :class:`rewardlab.contract.RewardScale`).

    Examples
    --------
    >>> frame = rewardlab.load_kanachan("data/sample.tsv.gz", progress=False)  # doctest: +SKIP
    >>> out = apply_plugins(frame, ["data/plugins/rank_top.py", "data/plugins/raw_points.py"],
    ...                     batch_mode="dataloader", batch_size=256)  # doctest: +SKIP
    >>> out.select("reward_rank_top", "done_rank_top").describe()  # doctest: +SKIP
    """
    frame = _check_frame(frame)
    check_choice("batch_mode", batch_mode, BATCH_MODES)
    check_choice("convention", convention, CONVENTIONS)
    if batch_size is not None:
        batch_size = _check_int("batch_size", batch_size, 1)
    size = DEFAULT_BATCH_SIZES[batch_mode] if batch_size is None else batch_size
    size = None if batch_mode == "episodes" else size
    seed = _check_int("seed", seed, 0)
    contiguous = check_contiguous(batch_mode, contiguous)
    num_workers = check_num_workers(num_workers)
    if not isinstance(strict, bool):
        raise ParameterError("strict", "should be True or False", strict)
    isolate, timeout = _check_isolation(isolate, timeout)
    cancel = _check_cancel(cancel)
    items = _items(plugins)
    arrays = FrameArrays(frame)
    ends = episode_ends(arrays.end_of_game)
    setting = mode_setting(batch_mode, contiguous=contiguous, num_workers=num_workers)
    bar = _bar(progress, arrays.n * len(items), f"apply_plugins ({batch_mode})")

    def job(status, send):
        loaded = _load_items(items, status)
        for plugin in loaded:
            send(plugin.portable())
        outcomes = run_plugins(
            arrays, None, loaded,
            plan_batches(batch_mode, ends, batch_size=size or 1, seed=seed, contiguous=contiguous,
                         num_workers=num_workers),
            mode=batch_mode, batch_size=size, strict=strict, collect=False,
            bar=None if isolate else bar, convention=convention, setting=setting, status=status,
            interrupts_are_plugins=isolate)
        for outcome in outcomes:
            outcome.plugin = outcome.plugin.portable()
        return outcomes

    try:
        result, loaded = _execute(job, isolate=isolate, timeout=timeout, bar=bar, cancel=cancel,
                                  name=items[0][1])
    finally:
        if bar is not None:
            bar.close()
    if isinstance(result, isolation.ChildFailure):
        if len(loaded) < len(items):
            _, name, path = items[len(loaded)]
            raise _failure_error(result, name, path, loading=True)
        match = _DOING.match(result.doing)
        name = match.group(1) if match else items[0][1]
        path = next((p for _, n, p in items if n == name), items[0][2])
        raise _failure_error(result, name, path, loading=False)
    outcomes = result
    for outcome, loaded_plugin, (item, _, _) in zip(outcomes, loaded, items):
        outcome.plugin = item if isinstance(item, Plugin) else loaded_plugin
    _raise_first(resolve(outcomes, Locator(frame)))
    columns = []
    for outcome in outcomes:
        scale = reward_scale(outcome.rewards, outcome.dones)
        if arrays.n and scale.far:
            warnings.warn(RewardScaleWarning(_scale_message(outcome.plugin, scale)), stacklevel=2)
        dtype = REWARD_DTYPES[outcome.reward_dtype or "float64"]
        columns.append(pl.Series(S.reward_column(outcome.plugin.name), outcome.rewards,
                                 dtype=pl.Float64).cast(dtype))
        columns.append(pl.Series(S.done_column(outcome.plugin.name), outcome.dones, dtype=pl.Boolean))
    return frame.with_columns(columns)


def _scale_message(plugin: Plugin, scale: RewardScale) -> str:
    return (f"plug-in {plugin.name!r} ({plugin.path}): rewards are far from the mean 0 / std 1 "
            f"the contract asks for: {scale}. Normalize them, e.g. (reward - MEAN) / STD with "
            "constants computed from the training data in advance.")


# --------------------------------------------------------------------------
# Checking
# --------------------------------------------------------------------------


@dataclasses.dataclass(frozen=True)
class RunSummary:
    """One run of :func:`check_plugin`: a batch mode, size, ``contiguous`` flag and convention.

    Attributes
    ----------
    mode : str
    batch_size : int or None
        None for ``episodes``.
    contiguous : bool
    calls : int
    error : str or None
        The plug-in's exception (message with traceback), when it raised,
        ended its process or ran out of time.
    num_workers : int or None
        DataLoader workers (``dataloader`` runs).
    convention : str
        ``"offline"`` or ``"simulation"``.
    reward_dtypes : tuple of str
        The reward dtypes the plug-in returned in this run.
    error_summary : str or None
        The error's first line, without the batch (runs that failed the
        same way share it).
    error_traceback : str or None
        The plug-in's traceback, when there is one.

    Examples
    --------
    >>> RunSummary("shuffled", 64, False, 10, None).label
    'shuffled x64'
    >>> RunSummary("dataloader", 64, False, 10, None, num_workers=2).label
    'dataloader x64 (2 workers)'
    >>> RunSummary("episodes", None, True, 10, None, convention="simulation").label
    'simulation episodes (contiguous=True)'
    """

    mode: str
    batch_size: int | None
    contiguous: bool
    calls: int
    error: str | None
    num_workers: int | None = None
    convention: str = "offline"
    reward_dtypes: tuple = ()
    error_summary: str | None = None
    error_traceback: str | None = None

    @property
    def label(self) -> str:
        """``episodes``, ``episodes (contiguous=True)``, ``sequential x64``, ``dataloader x64 (2 workers)``."""
        text = self.mode if self.batch_size is None else f"{self.mode} x{self.batch_size}"
        if self.mode == "episodes" and self.contiguous:
            text += " (contiguous=True)"
        if self.mode == "dataloader" and self.num_workers is not None:
            text += f" ({self.num_workers} worker{'s' if self.num_workers != 1 else ''})"
        if self.convention != "offline":
            text = f"{self.convention} {text}"
        return text


@dataclasses.dataclass(frozen=True)
class Difference:
    """How a run's rewards and dones differ from a reference run.

    Attributes
    ----------
    run, reference : str
        Run labels (``"shuffled x64"``, ``"episodes"``).
    rewards, dones : int
        Transitions whose reward / done differ.
    max_abs : float
        Largest absolute reward difference.
    row : int
        Frame row of the first differing transition.
    where : str
        That transition: game, seat, step and ``file:line``.
    values : tuple
        ``(reward, reference reward, done, reference done)`` there.
    allowed : bool
        True when the difference is between ``contiguous=True`` and
        ``contiguous=False`` runs of a plug-in that reads ``contiguous``.

    Examples
    --------
    >>> d = Difference("sequential x64", "episodes", 3, 0, 0.5, 7, "frame row 7", (0.5, 0.0, True, True),
    ...                False)
    >>> str(d).startswith("sequential x64 differs from episodes: 3 rewards and 0 dones")
    True
    """

    run: str
    reference: str
    rewards: int
    dones: int
    max_abs: float
    row: int
    where: str
    values: tuple
    allowed: bool

    def __str__(self) -> str:
        r, r0, d, d0 = self.values
        text = (f"{self.run} differs from {self.reference}: {self.rewards:,} rewards and "
                f"{self.dones:,} dones; largest |reward difference| {self.max_abs:.6g}; first at "
                f"{self.where}: reward {r!r} vs {r0!r}, done {d} vs {d0}")
        if self.allowed:
            text += " (allowed: the plug-in reads `contiguous`)"
        return text


@dataclasses.dataclass(frozen=True)
class CheckReport:
    """The result of :func:`check_plugin`; ``print`` it for a readable report.

    Attributes
    ----------
    plugin : Plugin
    transitions, episodes : int
        Size of the data checked.
    runs : tuple of RunSummary
        Every run made, ``episodes`` first.
    problems : tuple of (str, str, int, str)
        Contract problems: ``(rule, message of the first occurrence (with
        its batch and transition), number of batches, runs where it occurred)``.
    differences : tuple of Difference
        Runs whose rewards or dones differ from their reference.
    scale : RewardScale or None
        Reward scale of the first run (None if it failed or saw no transitions).
    seed : int
        Seed of the shuffled runs.
    convention_differences : tuple of Difference
        Where the plug-in's rewards under kanachan's simulation convention
        differ from the offline convention (same episodes, contiguous=True):
        a warning, not a failure (a plug-in tuned offline behaves otherwise
        in self-play).
    warnings : tuple of str
        Things that do not fail the check but matter: names taken from
        kanachan's trainer scope, float16 precision, dtypes that change
        between calls.
    hints : tuple of str
        Likely causes of the differences (batch statistics).
    stopped : str or None
        Why the check stopped before making every run (the plug-in ended its
        process or ran out of time).
    num_workers : int
        Workers of the ``dataloader`` runs.

    Examples
    --------
    >>> report = check_plugin(frame, "data/plugins/rank_top.py")  # doctest: +SKIP
    >>> report.ok  # doctest: +SKIP
    True
    """

    plugin: Plugin
    transitions: int
    episodes: int
    runs: tuple
    problems: tuple
    differences: tuple
    scale: RewardScale | None
    seed: int
    convention_differences: tuple = ()
    warnings: tuple = ()
    hints: tuple = ()
    stopped: str | None = None
    num_workers: int = DEFAULT_NUM_WORKERS

    @property
    def reward_dtype(self) -> str | None:
        """The reward dtype the plug-in returned (the widest, if it varied); None if none came back."""
        seen = {d for r in self.runs for d in r.reward_dtypes}
        order = ("float16", "float32", "float64")
        return max(seen, key=order.index) if seen else None

    @property
    def ok(self) -> bool:
        """True when every run finished without an exception, the check saw transitions, no
        contract rule was broken, and every difference is allowed.

        Warnings (reward scale, simulation convention, trainer names, float16
        precision) are reported but do not fail the check.
        """
        return (self.stopped is None and self.transitions > 0
                and all(r.error is None for r in self.runs) and not self.problems
                and all(d.allowed for d in self.differences))

    def __str__(self) -> str:
        p = self.plugin
        lines = [f"check-plugin {p.name!r} ({p.path})",
                 f"  data: {self.transitions:,} transitions, {self.episodes:,} episodes",
                 "  runs: " + ", ".join(r.label for r in self.runs)
                 + f" (the shuffled runs use seed {self.seed})",
                 f"  reads `contiguous`: {'yes' if p.reads_contiguous else 'no'}"]
        if self.reward_dtype is not None:
            lines.append(f"  reward dtype: {self.reward_dtype} (kept as returned: what kanachan's "
                         "trainer receives)")
        lines.append("")
        failed = [r for r in self.runs if r.error]
        if self.stopped:
            lines.append(f"stopped: {self.stopped}")
        if failed:
            lines.append(f"exceptions: {len(failed)} run(s) stopped by the plug-in")
            groups: dict = {}
            for r in failed:
                groups.setdefault((r.error_summary or r.error, r.error_traceback), []).append(r)
            for (summary, tb), runs in groups.items():
                first = runs[0]
                lines.append(f"  - {', '.join(r.label for r in runs)}: " + (
                    first.error if len(runs) == 1 else
                    f"the same failure in each; the first ({first.label}): {first.error}"
                ).replace("\n", "\n    "))
        if not self.transitions:
            lines.append("contract: not checked (no transitions)")
        elif failed or self.stopped:
            lines.append("contract: not fully checked (a run stopped early)"
                         + (f"; {len(self.problems)} problem(s) found before" if self.problems else ""))
        else:
            lines.append("contract: " + ("ok" if not self.problems else f"{len(self.problems)} problem(s)"))
        for rule, message, count, runs in self.problems:
            lines.append(f"  - [{rule}] in {count:,} batch(es) ({runs}); first: {message}")
        compared = len([r for r in self.runs if r.error is None and r.convention == "offline"]) - 1
        bad = [d for d in self.differences if not d.allowed]
        allowed = [d for d in self.differences if d.allowed]
        if compared < 1 or not self.transitions:
            lines.append("batch invariance: not checked (fewer than two runs finished)")
        elif not self.differences:
            lines.append("batch invariance: ok (every mode and batch size gives the same rewards "
                         "and dones)")
        else:
            head = f"{len(bad)} run(s) differ" if bad else "ok"
            if allowed:
                head += (f"; {len(allowed)} run(s) differ between contiguous=True and "
                         "contiguous=False, which is allowed because the plug-in reads `contiguous`")
            lines.append("batch invariance: " + head)
            for d in self.differences:
                lines.append(f"  - {d}")
            for hint in self.hints:
                lines.append(f"  hint: {hint}")
        sim = [r for r in self.runs if r.convention == "simulation"]
        if sim and sim[0].error is None and self.transitions:
            if self.convention_differences:
                lines.append("simulation convention: WARNING the rewards differ from the offline "
                             "files' convention (kanachan's simulator marks the game's last step "
                             "end_of_round and gives no round summary)")
                for d in self.convention_differences:
                    lines.append(f"  - {d}")
            else:
                lines.append("simulation convention: ok (same rewards and dones as in the offline "
                             "convention)")
        if self.scale is not None and self.scale.count_all:
            verdict = "WARNING far from mean 0 / std 1" if self.scale.far else "ok"
            lines.append(f"reward scale: {verdict}: {self.scale}")
        for w in self.warnings:
            lines.append(f"warning: {w}")
        lines.append("")
        lines.append("result: " + ("PASS" if self.ok else "FAIL"))
        return "\n".join(lines)


@dataclasses.dataclass(frozen=True)
class _Config:
    mode: str
    batch_size: int | None
    contiguous: bool
    convention: str = "offline"


def _configs(sizes: list[int]) -> list[_Config]:
    configs = [_Config("episodes", None, False), _Config("episodes", None, True)]
    configs += [_Config(m, b, False) for m in BATCH_MODES if m != "episodes" for b in sizes]
    configs.append(_Config("episodes", None, True, "simulation"))
    return configs


def check_plugin(
    frame: pl.DataFrame,
    plugin,
    *,
    batch_sizes: Sequence[int] = CHECK_BATCH_SIZES,
    seed: int = 0,
    num_workers: int = DEFAULT_NUM_WORKERS,
    strict: bool = True,
    isolate: bool | None = None,
    timeout: float | None = None,
    cancel=None,
    progress: bool | None = None,
) -> CheckReport:
    """Check a plug-in's contract in every batch mode, and that its rewards do not depend on batching.

    The plug-in runs in ``episodes`` twice (kanachan's replay buffer with
    ``contiguous_training_data`` False, its default, and True), once per batch
    size in ``sequential``, ``dataloader`` (``num_workers`` workers),
    ``fragments`` and ``shuffled``, and once on whole episodes in kanachan's
    *simulation* convention; every call is checked as in
    :func:`apply_plugins` but problems are collected, not raised.  Then every
    offline run's rewards and dones are compared with the first ``episodes``
    run (``|a - b| <= 1e-9 + 1e-7 * |b|``).  A plug-in that reads
    ``contiguous`` may differ between ``contiguous=True`` and False: those
    differences are reported as allowed.  The simulation run is compared with
    the offline ``contiguous=True`` run; a difference is a warning.

    By default the file is loaded and run in a child process: a plug-in that
    exits, kills its process or runs past ``timeout`` is reported as failing,
    with what it was doing (and, for a hang, its own stack), never as a pass.

    Parameters
    ----------
    frame : polars.DataFrame
        The common frame.
    plugin : Plugin or path
    batch_sizes : sequence of int
        Distinct batch sizes >= 1 tried in the modes other than ``episodes``.
    seed : int
        Seed of ``shuffled``.
    num_workers : int
        Workers of the ``dataloader`` runs (default 2, what kanachan's
        ``cql/train.py`` uses on CUDA).
    strict : bool
        Exact IN-field checks against a pristine copy after every call (the
        default here: a check should be thorough); False watches version
        counters only, as :func:`apply_plugins` does by default.
    isolate : bool or None
        Load and run the plug-in in a child process (None: where the
        platform can fork).
    timeout : float or None
        Seconds for the whole check before the plug-in is stopped.
    cancel : callable or None
        Polled while the check works; once it returns True the check stops
        (its child process is killed; in-process, between runs) and
        :class:`~rewardlab.errors.PluginRunCancelled` is raised.
    progress : bool or None
        Progress bar.

    Returns
    -------
    CheckReport

    Raises
    ------
    PluginLoadError
        The file does not load (also when its code exits or hangs while loading).

    Examples
    --------
    >>> report = check_plugin(frame, "data/plugins/round_delta.py")  # doctest: +SKIP
    >>> print(report)  # doctest: +SKIP
    """
    frame = _check_frame(frame)
    if isinstance(batch_sizes, (str, bytes)) or not isinstance(batch_sizes, Sequence) or not batch_sizes:
        raise ParameterError("batch_sizes", "should be a non-empty sequence of integers >= 1",
                             batch_sizes)
    sizes = [_check_int("batch_sizes", b, 1) for b in batch_sizes]
    if len(set(sizes)) != len(sizes):
        raise ParameterError("batch_sizes", "should be distinct", list(batch_sizes))
    seed = _check_int("seed", seed, 0)
    num_workers = check_num_workers(num_workers)
    if not isinstance(strict, bool):
        raise ParameterError("strict", "should be True or False", strict)
    isolate, timeout = _check_isolation(isolate, timeout)
    cancel = _check_cancel(cancel)
    [(item, name, path)] = _items([plugin])
    arrays = FrameArrays(frame)
    ends = episode_ends(arrays.end_of_game)
    locator = Locator(frame)
    configs = _configs(sizes)
    bar = _bar(progress, arrays.n * len(configs), f"check_plugin {name}")

    def job(status, send):
        [loaded] = _load_items([(item, name, path)], status)
        send(loaded.portable())
        for cfg in configs:
            if status is None and cancel is not None and cancel():
                raise PluginRunCancelled(name)
            plan = plan_batches(cfg.mode, ends, batch_size=cfg.batch_size or 1, seed=seed,
                                contiguous=cfg.contiguous, num_workers=num_workers)
            setting = mode_setting(cfg.mode, contiguous=cfg.contiguous, num_workers=num_workers)
            if cfg.convention == "simulation":
                setting = "kanachan's simulator (simulation convention)"
            [outcome] = run_plugins(arrays, None, [loaded], plan, mode=cfg.mode,
                                    batch_size=cfg.batch_size, strict=strict, collect=True,
                                    bar=None if isolate else bar, convention=cfg.convention,
                                    setting=setting, status=status, interrupts_are_plugins=isolate)
            outcome.plugin = loaded.portable()
            send(outcome)
        return None

    try:
        result, parts = _execute(job, isolate=isolate, timeout=timeout, bar=bar, cancel=cancel,
                                 name=name)
    finally:
        if bar is not None:
            bar.close()
    stopped = None
    if isinstance(result, isolation.ChildFailure) and not parts:
        raise _failure_error(result, name, path, loading=True)
    report_plugin = item if isinstance(item, Plugin) else parts[0]
    outcomes: list[RunOutcome] = parts[1:]
    if isinstance(result, isolation.ChildFailure):
        cfg = configs[len(outcomes)]
        error = _failure_error(result, name, path, loading=False)
        stopped = (f"{error.message}; the run {_label(cfg, num_workers)} and the ones after it "
                   "were not made")
        outcome = RunOutcome(report_plugin, cfg.mode, cfg.batch_size, np.full(arrays.n, np.nan),
                             arrays.end_of_game.copy(), error=error,
                             contiguous=cfg.contiguous if cfg.mode == "episodes" else None,
                             convention=cfg.convention)
        outcomes.append(outcome)
    for outcome in outcomes:
        outcome.plugin = report_plugin
    resolve(outcomes, locator)
    done_configs = configs[:len(outcomes)]
    runs = tuple(_summary(o, cfg, num_workers) for o, cfg in zip(outcomes, done_configs))
    offline = [(o, r) for o, r in zip(outcomes, runs) if r.convention == "offline"]
    differences = tuple(_differences(offline, report_plugin, locator))
    convention_differences = ()
    if len(outcomes) == len(configs):
        sim, sim_run = outcomes[-1], runs[-1]
        ref = next(((o, r) for o, r in offline if r.mode == "episodes" and r.contiguous), None)
        if ref is not None and sim.error is None and ref[0].error is None:
            convention_differences = tuple(
                _differences([ref, (sim, sim_run)], report_plugin, locator))
    first = outcomes[0]
    scale = (reward_scale(first.rewards, first.dones) if first.error is None and arrays.n else None)
    return CheckReport(
        plugin=report_plugin, transitions=arrays.n, episodes=int(ends.size), runs=runs,
        problems=_merge_problems(outcomes, runs), differences=differences, scale=scale, seed=seed,
        convention_differences=convention_differences,
        warnings=tuple(_warnings(report_plugin, outcomes, runs)),
        hints=tuple(_hints(report_plugin)) if any(not d.allowed for d in differences) else (),
        stopped=stopped, num_workers=num_workers)


def _label(cfg: _Config, num_workers: int) -> str:
    return RunSummary(cfg.mode, cfg.batch_size, cfg.contiguous, 0, None,
                      num_workers=num_workers if cfg.mode == "dataloader" else None,
                      convention=cfg.convention).label


def _summary(outcome: RunOutcome, cfg: _Config, num_workers: int) -> RunSummary:
    error = outcome.error
    summary = trace = None
    if error is not None:
        summary = error.message.split(" on batch ")[0].split("\n")[0]
        trace = getattr(error, "plugin_traceback", None)
    return RunSummary(cfg.mode, cfg.batch_size, cfg.contiguous, outcome.calls,
                      None if error is None else str(error),
                      num_workers=num_workers if cfg.mode == "dataloader" else None,
                      convention=cfg.convention, reward_dtypes=outcome.reward_dtypes,
                      error_summary=summary, error_traceback=trace)


def _merge_problems(outcomes: list[RunOutcome], runs: tuple) -> tuple:
    merged: dict[str, list] = {}
    for outcome, run in zip(outcomes, runs):
        for rule, (error, count) in outcome.problems.items():
            if rule not in merged:
                merged[rule] = [error.message, 0, []]
            merged[rule][1] += count
            merged[rule][2].append(run.label)
    return tuple((rule, msg, count, ", ".join(labels)) for rule, (msg, count, labels) in merged.items())


def _differences(done: list, plugin: Plugin, locator: Locator):
    """Differences of ``[(outcome, run)]`` from the first one (see :func:`check_plugin`)."""
    done = [(o, r) for o, r in done if o.error is None]
    if len(done) < 2:
        return
    if plugin.reads_contiguous:
        loose = [(o, r) for o, r in done if not r.contiguous]
        pairs = [(o, r, loose[0], True) for o, r in done if r.contiguous and loose]
        pairs += [(o, r, loose[0], False) for o, r in loose[1:]]
    else:
        pairs = [(o, r, done[0], False) for o, r in done[1:]]
    for outcome, run, (ref, ref_run), allowed in pairs:
        if run.convention != ref_run.convention:
            allowed = False  # the simulation comparison is a warning of its own
        diff = compare_outputs(outcome.rewards, outcome.dones, ref.rewards, ref.dones)
        row = diff["first_row"]
        if row is None:
            continue
        yield Difference(
            run=run.label, reference=ref_run.label, rewards=diff["rewards"], dones=diff["dones"],
            max_abs=diff["max_abs"], row=row, where=locator.transition(row),
            values=(float(outcome.rewards[row]), float(ref.rewards[row]),
                    bool(outcome.dones[row]), bool(ref.dones[row])),
            allowed=allowed)


def _warnings(plugin: Plugin, outcomes: list[RunOutcome], runs: tuple):
    provided = [n for n in plugin.trainer_names if n in TRAINER_NAMES]
    missing = [n for n in plugin.trainer_names if n in UNAVAILABLE]
    if provided:
        statements = sorted({TRAINER_NAMES[n] for n in provided})
        yield (f"the file uses {', '.join(provided)} without defining or importing "
               f"{'it' if len(provided) == 1 else 'them'}: it runs in kanachan's trainer, which "
               "exec-s plug-ins into its own module where these names exist, but it is not "
               f"self-contained; add {'; '.join(statements)} at its top")
    if missing:
        yield (f"the file uses {', '.join(missing)}, which kanachan's trainer has from "
               f"{'; '.join(UNAVAILABLE[n] for n in missing)}; rewardlab cannot provide "
               f"{'it' if len(missing) == 1 else 'them'} and the plug-in should not rely on the "
               "trainer's internals")
    varying = [r.label for r in runs if len(r.reward_dtypes) > 1]
    if varying:
        yield ("the reward dtype changes from call to call in " + ", ".join(varying) + " ("
               + ", ".join(sorted({d for r in runs for d in r.reward_dtypes}))
               + "): kanachan keeps each batch's dtype as returned")
    for outcome, run in zip(outcomes, runs):
        if outcome.error is None and "float16" in outcome.reward_dtypes:
            lost = float16_precision(outcome.rewards)
            if lost:
                yield f"{lost} (run {run.label})"
            break


_BATCH_STATISTICS = {"mean", "std", "var", "std_mean", "var_mean", "median", "nanmean",
                     "nanmedian", "quantile", "nanquantile", "normalize", "batch_norm", "layer_norm"}


def _hints(plugin: Plugin):
    try:
        tree = ast.parse(plugin.source)
    except SyntaxError:
        return
    found = sorted({(node.lineno, node.func.attr if isinstance(node.func, ast.Attribute) else node.func.id)
                    for node in ast.walk(tree) if isinstance(node, ast.Call)
                    and ((isinstance(node.func, ast.Attribute) and node.func.attr in _BATCH_STATISTICS)
                         or (isinstance(node.func, ast.Name) and node.func.id in _BATCH_STATISTICS))})
    if found:
        where = ", ".join(f"`{name}` on line {line}" for line, name in found[:4])
        yield (f"the plug-in computes statistics ({where}); statistics of the batch depend on how "
               "the data is cut into batches, so the rewards do too: normalize with constants "
               "computed from the training data in advance (rewardlab.normalization_constants, "
               "`rewardlab stats`) instead")
