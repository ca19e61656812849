"""Reward plug-ins: load them as kanachan does, apply them to a frame, check the contract.

A reward plug-in is a Python file defining ``get_reward(data, contiguous)``
(``shared/seeds/000_*.txt``).  A plug-in is code: it runs only when the user
names its file; rewardlab never scans a folder and executes what it finds.

* :func:`load_plugin` reads the file, compiles it under its real file name
  (tracebacks show the plug-in's own lines) and executes it in a fresh
  namespace, as kanachan ``exec``-s the text.
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

import polars as pl

from rewardlab import schema as S
from rewardlab._io import progress_enabled
from rewardlab.batch_modes import (
    BATCH_MODES, CONTIGUOUS, DEFAULT_BATCH_SIZES, episode_ends, plan_batches,
)
from rewardlab.batching import FrameArrays
from rewardlab.contract import RewardScale, compare_outputs, reward_scale
from rewardlab.errors import (
    ParameterError, PluginLoadError, RewardScaleWarning, check_choice,
)
from rewardlab.runner import Locator, RunOutcome, plugin_traceback, run_plugins

__all__ = [
    "Plugin",
    "load_plugin",
    "apply_plugins",
    "check_plugin",
    "CheckReport",
    "RunSummary",
    "Difference",
    "CHECK_BATCH_SIZES",
]

#: The two batch sizes :func:`check_plugin` tries in every mode but ``episodes``.
CHECK_BATCH_SIZES = (64, 2048)

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
    get_reward : callable
        ``get_reward(data, contiguous) -> None``.
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

    Examples
    --------
    >>> plugin = load_plugin("data/plugins/rank_top.py")  # doctest: +SKIP
    >>> plugin.name, plugin.reads_contiguous  # doctest: +SKIP
    ('rank_top', False)
    """

    name: str
    path: Path
    get_reward: Callable = dataclasses.field(repr=False)
    source: str = dataclasses.field(repr=False)
    reads_contiguous: bool
    line: int | None = None


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


def load_plugin(path: str | os.PathLike, *, name: str | None = None) -> Plugin:
    """Load a reward plug-in file the way kanachan does.

    The text is compiled under the file's real name (tracebacks point at
    the plug-in's lines) and executed in a fresh module namespace; the file
    must define ``get_reward`` callable as ``get_reward(data, contiguous)``.

    Parameters
    ----------
    path : str or path-like
        The plug-in file.  A folder is refused: plug-ins are code and run
        only when named one by one.
    name : str, optional
        The plug-in's name; by default the file's stem with ``-``, ``.`` and
        spaces turned into ``_``.  Must match ``[A-Za-z_][A-Za-z0-9_]*``.

    Returns
    -------
    Plugin

    Raises
    ------
    PluginLoadError
        The file is missing or unreadable, does not parse (file and line,
        with the compiler's caret), raises while executing (the plug-in's
        own traceback is kept), lacks ``get_reward``, or defines it not
        callable or with the wrong parameters (file and the definition's line).
    ParameterError
        ``name`` (given or derived from the file name) is not a valid name.

    Examples
    --------
    >>> plugin = load_plugin("data/plugins/rank_top.py")  # doctest: +SKIP
    >>> plugin.get_reward  # doctest: +SKIP
    <function get_reward at 0x...>
    """
    if not isinstance(path, (str, os.PathLike)):
        raise ParameterError("path", "should be a str or path-like naming a plug-in file", path)
    path = Path(path)
    name = _name_from_stem(path) if name is None else S.check_name(name, what="name")
    if path.is_dir():
        raise ParameterError("path", "should name a plug-in file, not a folder (plug-ins are code "
                             "and run only when named one by one)", str(path))
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
    # keep the loaded text for tracebacks even if the file changes on disk later
    linecache.cache[filename] = (len(source), None, source.splitlines(True), filename)

    module_name = f"_rewardlab_plugin_{name}_{next(_module_counter)}"
    module = types.ModuleType(module_name)
    module.__file__ = filename
    namespace = module.__dict__
    sys.modules[module_name] = module  # dataclasses and typing look the module up while it runs
    try:
        exec(code, namespace)
    except Exception as exc:  # the plug-in's own failure: keep its traceback
        text, line = plugin_traceback(exc, filename)
        raise PluginLoadError(name, path, f"raised {type(exc).__name__} while loading: {exc}",
                              line=line, plugin_traceback=text) from None
    finally:
        sys.modules.pop(module_name, None)

    tree = ast.parse(source, filename)  # compile() accepted it
    line = _def_line(tree)
    if "get_reward" not in namespace:
        close = difflib.get_close_matches("get_reward", [k for k in namespace if not k.startswith("__")],
                                          n=1, cutoff=0.6)
        hint = ""
        if close:
            near = _def_line(tree, close[0])
            hint = f"; did you mean `{close[0]}`" + (f" (line {near})" if near else "") + "?"
        raise PluginLoadError(name, path, "defines no `get_reward`; a reward plug-in must define "
                              f"`def get_reward(data, contiguous)`{hint}")
    get_reward = namespace["get_reward"]
    if not callable(get_reward):
        raise PluginLoadError(name, path, f"`get_reward` should be a function; it is a "
                              f"{type(get_reward).__name__} ({get_reward!r:.60})", line=line)
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
                  reads_contiguous=_reads_second_argument(get_reward), line=line)


def _as_plugins(plugins) -> list[Plugin]:
    if isinstance(plugins, (Plugin, str, os.PathLike)):
        plugins = [plugins]
    if not isinstance(plugins, Sequence) or isinstance(plugins, (str, bytes)):
        raise ParameterError("plugins", "should be a Plugin, a path to a plug-in file, or a "
                             "sequence of them", type(plugins).__name__)
    if not plugins:
        raise ParameterError("plugins", "should name at least one plug-in", list(plugins))
    loaded = []
    for item in plugins:
        if isinstance(item, Plugin):
            loaded.append(item)
        elif isinstance(item, (str, os.PathLike)):
            loaded.append(load_plugin(item))
        else:
            raise ParameterError("plugins", "should hold Plugin objects or paths to plug-in files",
                                 item)
    names = [p.name for p in loaded]
    dupes = sorted({n for n in names if names.count(n) > 1})
    if dupes:
        raise ParameterError("plugins", "should have distinct names (they name the reward "
                             f"columns); repeated: {', '.join(dupes)}", names,
                             hint="Load one with load_plugin(path, name=...).")
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


def _bar(progress, total: int, desc: str):
    if not progress_enabled(progress):
        return None
    from tqdm.auto import tqdm

    return tqdm(total=total, unit="transition", unit_scale=True, desc=desc)


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
    strict: bool = False,
    progress: bool | None = None,
) -> pl.DataFrame:
    """Run reward plug-ins over a frame the way kanachan's training programs call them.

    Every call gets a fresh TensorDict of its batch (see :mod:`rewardlab.runner`),
    under ``torch.no_grad()``, with ``("next", "done")`` equal to
    ``end_of_game``; the contract is checked after every call.  Results
    stream into preallocated arrays (memory bounded by the batches).

    Parameters
    ----------
    frame : polars.DataFrame
        The common frame (episode order, complete episodes).
    plugins : Plugin, path, or sequence of them
        Paths are loaded with :func:`load_plugin`.  Names must be distinct.
    batch_mode : {"episodes", "sequential", "fragments", "shuffled"}
        How transitions are cut into calls (:mod:`rewardlab.batch_modes`);
        ``episodes`` passes ``contiguous=True``, the others False.
    batch_size : int or None
        Rows per call in ``sequential`` and ``shuffled``, fragment length in
        ``fragments``; ignored by ``episodes``.  None takes the mode's
        default (:data:`rewardlab.batch_modes.DEFAULT_BATCH_SIZES`: 8192,
        64 for ``fragments``).
    seed : int
        Seed of ``shuffled``.
    strict : bool
        Compare IN fields exactly with a pristine copy after every call
        (catches any write, costs a copy of each chunk) instead of watching
        torch's version counters (free, misses writes through ``.numpy()``
        or ``.data``; see :mod:`rewardlab.runner`).
    progress : bool or None
        Progress bar; None shows one on an interactive terminal or in Jupyter.

    Returns
    -------
    polars.DataFrame
        ``frame`` with ``reward_<name>`` (Float64) and ``done_<name>``
        (Boolean) per plug-in; columns of the same names are replaced.

    Raises
    ------
    PluginRuntimeError
        A plug-in raised: its traceback, the batch (mode, index, rows) and
        the batch's first transition with its ``file:line``.
    ContractError
        A plug-in broke the contract (reward missing, wrong shape, dtype or
        device, non-finite; IN field changed; done not bool, wrong shape, or
        an episode's last step not done), with the batch and first offending row.
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
    ...                     batch_mode="sequential")  # doctest: +SKIP
    >>> out.select("reward_rank_top", "done_rank_top").describe()  # doctest: +SKIP
    """
    frame = _check_frame(frame)
    check_choice("batch_mode", batch_mode, BATCH_MODES)
    if batch_size is not None:
        batch_size = _check_int("batch_size", batch_size, 1)
    size = DEFAULT_BATCH_SIZES[batch_mode] if batch_size is None else batch_size
    size = None if batch_mode == "episodes" else size
    seed = _check_int("seed", seed, 0)
    if not isinstance(strict, bool):
        raise ParameterError("strict", "should be True or False", strict)
    plugins = _as_plugins(plugins)
    arrays = FrameArrays(frame)
    ends = episode_ends(arrays.end_of_game)
    bar = _bar(progress, arrays.n * len(plugins), f"apply_plugins ({batch_mode})")
    try:
        outcomes = run_plugins(
            arrays, Locator(frame), plugins,
            plan_batches(batch_mode, ends, batch_size=size or 1, seed=seed),
            mode=batch_mode, batch_size=size,
            strict=strict, collect=False, bar=bar)
    finally:
        if bar is not None:
            bar.close()
    columns = []
    for outcome in outcomes:
        scale = reward_scale(outcome.rewards, outcome.dones)
        if arrays.n and scale.far:
            warnings.warn(RewardScaleWarning(_scale_message(outcome.plugin, scale)), stacklevel=2)
        columns.append(pl.Series(S.reward_column(outcome.plugin.name), outcome.rewards, dtype=pl.Float64))
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
    """One run of :func:`check_plugin`: a batch mode and size.

    Attributes
    ----------
    mode : str
    batch_size : int or None
        None for ``episodes``.
    contiguous : bool
    calls : int
    error : str or None
        The plug-in's exception (message with traceback), when it raised.

    Examples
    --------
    >>> RunSummary("shuffled", 64, False, 10, None).label
    'shuffled x64'
    """

    mode: str
    batch_size: int | None
    contiguous: bool
    calls: int
    error: str | None

    @property
    def label(self) -> str:
        """``episodes`` or ``sequential x64``."""
        return self.mode if self.batch_size is None else f"{self.mode} x{self.batch_size}"


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
        Every run, ``episodes`` first.
    problems : tuple of (str, str, int, str)
        Contract problems: ``(rule, message of the first occurrence (with
        its batch and transition), number of batches, runs where it occurred)``.
    differences : tuple of Difference
        Runs whose rewards or dones differ from their reference.
    scale : RewardScale or None
        Reward scale of the ``episodes`` run (None if it failed).
    seed : int
        Seed of the shuffled runs.

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

    @property
    def ok(self) -> bool:
        """True when no run raised, no contract rule was broken, and every difference is allowed.

        The reward-scale warning is reported but does not fail the check.
        """
        return (all(r.error is None for r in self.runs) and not self.problems
                and all(d.allowed for d in self.differences))

    def __str__(self) -> str:
        p = self.plugin
        lines = [f"check-plugin {p.name!r} ({p.path})",
                 f"  data: {self.transitions:,} transitions, {self.episodes:,} episodes",
                 "  runs: " + ", ".join(r.label for r in self.runs) + f" (shuffled with seed {self.seed})",
                 f"  reads `contiguous`: {'yes' if p.reads_contiguous else 'no'}"]
        errors = [r for r in self.runs if r.error]
        lines.append("")
        if errors:
            lines.append(f"exceptions: {len(errors)} run(s) stopped")
            for r in errors:
                lines.append(f"  - {r.label}: " + r.error.replace("\n", "\n    "))
        lines.append("contract: " + ("ok" if not self.problems else f"{len(self.problems)} problem(s)"))
        for rule, message, count, runs in self.problems:
            lines.append(f"  - [{rule}] in {count:,} batch(es) ({runs}); first: {message}")
        compared = len([r for r in self.runs if r.error is None]) - 1
        bad = [d for d in self.differences if not d.allowed]
        allowed = [d for d in self.differences if d.allowed]
        if compared < 1:
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
        if self.scale is not None:
            verdict = "WARNING far from mean 0 / std 1" if self.scale.far else "ok"
            lines.append(f"reward scale: {verdict}: {self.scale}")
        lines.append("")
        lines.append("result: " + ("PASS" if self.ok else "FAIL"))
        return "\n".join(lines)


def check_plugin(
    frame: pl.DataFrame,
    plugin,
    *,
    batch_sizes: Sequence[int] = CHECK_BATCH_SIZES,
    seed: int = 0,
    strict: bool = True,
    progress: bool | None = None,
) -> CheckReport:
    """Check a plug-in's contract in every batch mode, and that its rewards do not depend on batching.

    The plug-in runs once in ``episodes`` and once per batch size in
    ``sequential``, ``fragments`` and ``shuffled``; every call is checked as
    in :func:`apply_plugins` but problems are collected, not raised.  Then
    every run's rewards and dones are compared with the ``episodes`` run.
    A plug-in that reads ``contiguous`` may differ between ``episodes``
    (``contiguous=True``) and the other modes: those differences are
    reported as allowed, and the other runs are compared with the first
    ``contiguous=False`` run instead.  Rewards agree when
    ``|a - b| <= 1e-9 + 1e-7 * |b|``.

    Parameters
    ----------
    frame : polars.DataFrame
        The common frame.
    plugin : Plugin or path
    batch_sizes : sequence of int
        Distinct batch sizes >= 1 tried in the modes other than ``episodes``.
    seed : int
        Seed of ``shuffled``.
    strict : bool
        Exact IN-field checks against a pristine copy after every call (the
        default here: a check should be thorough); False watches version
        counters only, as :func:`apply_plugins` does by default.
    progress : bool or None
        Progress bar.

    Returns
    -------
    CheckReport

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
    if not isinstance(strict, bool):
        raise ParameterError("strict", "should be True or False", strict)
    [plugin] = _as_plugins([plugin])
    arrays = FrameArrays(frame)
    ends = episode_ends(arrays.end_of_game)
    locator = Locator(frame)
    configs = [("episodes", None)] + [(m, b) for m in BATCH_MODES if m != "episodes" for b in sizes]
    bar = _bar(progress, arrays.n * len(configs), f"check_plugin {plugin.name}")
    outcomes: list[RunOutcome] = []
    try:
        for mode, size in configs:
            plan = plan_batches(mode, ends, batch_size=size or 1, seed=seed)
            [outcome] = run_plugins(arrays, locator, [plugin], plan, mode=mode, batch_size=size,
                                    strict=strict, collect=True, bar=bar)
            outcomes.append(outcome)
    finally:
        if bar is not None:
            bar.close()
    runs = tuple(RunSummary(o.mode, o.batch_size, CONTIGUOUS[o.mode], o.calls,
                            None if o.error is None else str(o.error)) for o in outcomes)
    return CheckReport(
        plugin=plugin, transitions=arrays.n, episodes=int(ends.size), runs=runs,
        problems=_merge_problems(outcomes, runs),
        differences=tuple(_differences(outcomes, runs, plugin, locator)),
        scale=None if outcomes[0].error else reward_scale(outcomes[0].rewards, outcomes[0].dones),
        seed=seed)


def _merge_problems(outcomes: list[RunOutcome], runs: tuple) -> tuple:
    merged: dict[str, list] = {}
    for outcome, run in zip(outcomes, runs):
        for rule, (error, count) in outcome.problems.items():
            if rule not in merged:
                merged[rule] = [error.message, 0, []]
            merged[rule][1] += count
            merged[rule][2].append(run.label)
    return tuple((rule, msg, count, ", ".join(labels)) for rule, (msg, count, labels) in merged.items())


def _differences(outcomes: list[RunOutcome], runs: tuple, plugin: Plugin, locator: Locator):
    done = [(o, r) for o, r in zip(outcomes, runs) if o.error is None]
    if len(done) < 2:
        return
    if plugin.reads_contiguous:
        loose = [(o, r) for o, r in done if not r.contiguous]
        pairs = [(o, r, loose[0], True) for o, r in done if r.contiguous and loose]
        pairs += [(o, r, loose[0], False) for o, r in loose[1:]]
    else:
        pairs = [(o, r, done[0], False) for o, r in done[1:]]
    for outcome, run, (ref, ref_run), allowed in pairs:
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
