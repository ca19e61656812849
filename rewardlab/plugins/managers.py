"""Run reward managers (PRLT's ``Reset`` / ``GetReward``) over a joint frame, trial by trial, in a child process.

A manager file defines ``RewardManager`` (:mod:`rewardlab.contracts.manager`).
:func:`apply_managers` builds the frame's joint arrays in this process
(:func:`rewardlab.plugins.manager_steps.joint_arrays`), forks the child of
:mod:`rewardlab.plugins.isolation`, and there loads each file, constructs its
``RewardManager()`` once and runs :func:`run_trials`: per trial ``reset()``,
then after every joint step ``get_reward(agent, state, joint_action)`` once
per agent in agent order.  The whole frame's arrays are in the child (it
inherits them), so the loop makes no message per call, and it writes the
rewards and finished flags into memory shared with the parent
(:func:`shared_result`), so nothing is pickled back either.

The returns are checked once per trial, on the whole trial at once
(:func:`rewardlab.contracts.manager.check_returns`); an exception, a bad
return, a ``sys.exit`` or a ``reset`` that raises is reported naming the
plug-in, the episode, the step and the agent.  A manager that ends its
process or runs past ``timeout`` is reported with the trial it was in (and,
for a timeout, its own stack).

``reward_<name>`` is the reward; ``done_<name>`` is True where the manager said
the trial is finished and on every agent's row of each episode's last step
(a manager may end a trial early, as a plug-in may cut a trajectory, but an
episode of the data always ends where it ends).

:func:`apply_plugins` and :func:`check_plugin` send manager files here: a
file is a manager when it defines ``RewardManager`` at its top level
(:func:`manager_items`).  Over a dataset folder
(:func:`rewardlab.plugins.apply_parts.apply_to_dataset`) the same runner
goes part by part, whole trials at a time (:mod:`rewardlab.plugins.manager_parts`).

What a call costs beyond the manager's own work: the loop hands each step's
joint action (a row view) and a fresh ``state`` dict made in C, keeps the
two items of each return in two lists, and checks a trial's returns once,
exact floats and bools in one C pass (:func:`~rewardlab.contracts.manager.check_pairs`).

Examples
--------
>>> from rewardlab.domains.el_farol import SMALL, simulate_bar
>>> frame = simulate_bar(SMALL, episodes=2, weeks=3, seed=0)
>>> out = apply_managers(frame, "examples/managers/el_farol_global.py", isolate=False)  # doctest: +SKIP
>>> out["reward_el_farol_global"].len()  # doctest: +SKIP
300
"""

from __future__ import annotations

import ast
import inspect
import mmap
import os
from itertools import repeat
from pathlib import Path
from typing import Sequence

import numpy as np
import polars as pl

from rewardlab.contracts.manager import MANAGER, ManagerViolation, RESULT_RULES, check_pairs, pair_violation
from rewardlab.contracts.registry import claimed_contract
from rewardlab.core import columns
from rewardlab.core.errors import ContractError, ParameterError, PluginLoadError, PluginRuntimeError
from rewardlab.core.spec import FrameSpec, keep_spec
from rewardlab.plugins import isolation
from rewardlab.plugins.execution import (
    check_cancel, check_isolation, child_failure_error, execute, load_items, progress_bar,
)
from rewardlab.plugins.loading import Plugin, load_plugin, read_plugin
from rewardlab.plugins.manager_steps import JointArrays, joint_arrays
from rewardlab.plugins.runner import plugin_traceback, safe_text
from rewardlab.sources.registry import spec_of

__all__ = ["load_manager", "manager_items", "run_trials", "apply_managers", "frame_arrays", "manager_columns",
           "frame_result", "top_level_names", "shared_result", "load_managers"]


#: No call returned yet in this trial.
_NOT_YET = object()


def top_level_names(tree: ast.Module) -> set[str]:
    """The names a module binds at its top level (definitions, assignments, imports).

    Examples
    --------
    >>> sorted(top_level_names(ast.parse("import numpy as np\\nclass RewardManager: pass\\nX = 1")))
    ['RewardManager', 'X', 'np']
    """
    names = set()
    for node in tree.body:
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            names.add(node.name)
        elif isinstance(node, (ast.Assign, ast.AnnAssign)):
            for target in node.targets if isinstance(node, ast.Assign) else [node.target]:
                names.update(n.id for n in ast.walk(target) if isinstance(n, ast.Name))
        elif isinstance(node, (ast.Import, ast.ImportFrom)):
            names.update((a.asname or a.name).split(".")[0] for a in node.names)
    return names


def manager_items(plugins) -> list | None:
    """``[(item, name, path)]`` when ``plugins`` are reward managers; None when none is; refused when mixed.

    A path is a manager when its file defines ``RewardManager`` at its top
    level (read and parsed, not run); a :class:`~rewardlab.plugins.loading.Plugin`
    when it was loaded as one (:func:`load_manager`).

    Raises
    ------
    ParameterError
        Managers mixed with ``get_reward`` plug-ins, or two of one name.
    PluginLoadError
        A file does not read or parse (:func:`~rewardlab.plugins.loading.read_plugin`).

    Examples
    --------
    >>> manager_items("data/plugins/rank_top.py") is None  # doctest: +SKIP
    True
    """
    if isinstance(plugins, (Plugin, str, os.PathLike)):
        plugins = [plugins]
    if not isinstance(plugins, Sequence) or isinstance(plugins, (str, bytes)) or not plugins:
        return None  # apply_plugins says what is wrong
    items, kinds = [], []
    for item in plugins:
        if isinstance(item, Plugin):
            kinds.append(item.signature == MANAGER.signature)
            items.append((item, item.name, item.path))
        elif isinstance(item, (str, os.PathLike)):
            name, path, source, _ = read_plugin(item)
            kinds.append(claimed_contract(top_level_names(ast.parse(source, str(path)))) is MANAGER)
            items.append((Path(item), name, path))
        else:
            return None
    if not any(kinds):
        return None
    if not all(kinds):
        manager = items[kinds.index(True)]
        other = items[kinds.index(False)]
        raise ParameterError("plugins", "should be all reward managers or all get_reward plug-ins: "
                             f"{manager[1]!r} ({manager[2]}) defines RewardManager, {other[1]!r} ({other[2]}) "
                             "does not", [n for _, n, _ in items], hint="Apply them in two calls.")
    names = [n for _, n, _ in items]
    dupes = sorted({n for n in names if names.count(n) > 1})
    if dupes:
        raise ParameterError("plugins", "should have distinct names (they name the reward columns); repeated: "
                             + ", ".join(dupes), names, hint="Load one with load_manager(path, name=...).")
    return items


def _method_line(source: str, filename: str, method: str) -> int | None:
    for node in ast.parse(source, filename).body:
        if isinstance(node, ast.ClassDef) and node.name == MANAGER.entry_point:
            for sub in node.body:
                if isinstance(sub, (ast.FunctionDef, ast.AsyncFunctionDef)) and sub.name == method:
                    return sub.lineno
    return None


def load_manager(path, *, name: str | None = None) -> Plugin:
    """Load a reward-manager file (it runs here) and check its ``RewardManager`` class.

    The file runs in an empty namespace, as a stand-alone module would.  The
    returned :class:`~rewardlab.plugins.loading.Plugin` holds the class as
    its ``get_reward`` and the contract's signature.

    Raises
    ------
    PluginLoadError
        The file does not load, or ``RewardManager`` is not a class
        constructed with no arguments that has ``reset()`` and
        ``get_reward(agent, state, joint_action)``.

    Examples
    --------
    >>> load_manager("examples/managers/el_farol_global.py").signature
    'RewardManager().get_reward(agent, state, joint_action)'
    """
    plugin = load_plugin(path, name=name, trainer_scope=False, contract=MANAGER)
    cls, filename = plugin.get_reward, str(plugin.path)
    if not isinstance(cls, type):
        raise PluginLoadError(plugin.name, plugin.path, f"`{MANAGER.entry_point}` should be a class; it is a "
                              f"{type(cls).__name__}", line=plugin.line)
    for method, parameters in MANAGER.methods.items():
        function = inspect.getattr_static(cls, method, None)
        line = _method_line(plugin.source, filename, method) or plugin.line
        wanted = f"def {method}(self{''.join(', ' + p for p in parameters)})"
        if function is None or not callable(getattr(cls, method, None)):
            raise PluginLoadError(plugin.name, plugin.path, f"`{MANAGER.entry_point}` defines no method `{method}`; "
                                  f"a reward manager defines `{wanted}`", line=plugin.line)
        try:
            inspect.signature(getattr(cls, method)).bind(None, *parameters)
        except TypeError:
            raise PluginLoadError(plugin.name, plugin.path, f"`{MANAGER.entry_point}.{method}` should be "
                                  f"`{wanted}`, as {MANAGER.caller} calls it", line=line) from None
        except ValueError:  # no signature to read (a builtin): it is called and judged then
            pass
    return Plugin(name=plugin.name, path=plugin.path, get_reward=cls, source=plugin.source, reads_contiguous=False,
                  line=_method_line(plugin.source, filename, "get_reward") or plugin.line,
                  signature=MANAGER.signature)


def _error(cls, plugin: Plugin, message: str, exc: BaseException | None = None):
    text = line = None
    if exc is not None:
        text, line = plugin_traceback(exc, plugin.path)
    return cls(plugin.name, plugin.path, message, line=line or plugin.line, plugin_traceback=text)


def _raised(plugin: Plugin, exc: BaseException, call: str, where: str):
    message = f"{call} raised {type(exc).__name__}: {safe_text(exc)} at {where}"
    if isinstance(exc, SystemExit):
        message += " (it called sys.exit; a reward manager must not end the program)"
    return _error(PluginRuntimeError, plugin, message, exc)


def run_trials(plugin: Plugin, arrays: JointArrays, trials=None, *, manager=None, status=None,
               interrupts_are_plugins: bool = False, out: tuple | None = None):
    """Call a manager over the frame's trials, the PRLT way; returns ``(rewards, finished, manager)`` in joint order.

    Per trial: ``reset()``, then for every joint step ``get_reward(agent,
    state, joint_action)`` for each agent in order.  The returns of a trial
    are checked together once it ends (:func:`~rewardlab.contracts.manager.check_returns`).

    Parameters
    ----------
    plugin : Plugin
        A loaded manager (:func:`load_manager`).
    arrays : JointArrays
    trials : sequence of int or None
        The trials to run, in this order (None: all, in the frame's order);
        rows of trials not run are NaN / False.
    manager : object or None
        The ``RewardManager`` instance to call; None constructs one.
    status : ChildStatus or None
        Told the trial at hand (its text starts with ``plug-in 'NAME'``) and the rows done.
    interrupts_are_plugins : bool
        A ``KeyboardInterrupt`` is the manager's own (in a child, which ignores Ctrl-C).
    out : (numpy.ndarray of float64 [N], numpy.ndarray of bool [N]) or None
        Arrays to write the rewards and finished flags into (e.g. memory shared with the parent
        process, so nothing is sent back); None allocates them.

    Returns
    -------
    (numpy.ndarray of float64 [N], numpy.ndarray of bool [N], object)

    Raises
    ------
    PluginRuntimeError
        The constructor, ``reset`` or ``get_reward`` raised (``SystemExit`` too), naming the trial, step and agent.
    ContractError
        A return broke a rule of :data:`~rewardlab.contracts.manager.RESULT_RULES`, naming the call.

    Examples
    --------
    >>> from rewardlab.domains.el_farol import SMALL, simulate_bar
    >>> arrays = joint_arrays(simulate_bar(SMALL, episodes=1, weeks=2, seed=0))
    >>> rewards, finished, _ = run_trials(load_manager("examples/managers/el_farol_global.py"), arrays)
    >>> rewards.shape, bool(finished.any())
    ((100,), False)
    """
    n = arrays.n
    steps = arrays.steps
    trials = range(steps.agents.shape[0]) if trials is None else trials
    rewards, finished = (np.empty(n), np.empty(n, bool)) if out is None else out
    rewards[:], finished[:] = np.nan, False
    passed = () if interrupts_are_plugins else (KeyboardInterrupt,)
    if manager is None:
        try:
            manager = plugin.get_reward()
        except passed:
            raise
        except BaseException as exc:  # noqa: BLE001 - the manager's own failure
            raise _raised(plugin, exc, f"{MANAGER.entry_point}()", "construction (before the first trial)") from None
    keys = tuple(arrays.state)
    for trial in trials:
        start, stop = int(steps.starts[trial]), int(steps.starts[trial + 1])
        agents, count = int(steps.agents[trial]), int(steps.steps[trial])
        label = arrays.episode_labels[trial]
        if status is not None:
            status.doing(f"plug-in {plugin.name!r}: trial {label} ({count} steps x {agents} agents)")
        try:
            manager.reset()
        except passed:
            raise
        except BaseException as exc:  # noqa: BLE001
            raise _raised(plugin, exc, "reset()", f"the start of trial {label}, before step "
                          f"{arrays.layout.step}={arrays.step_at(start)!r} (no agent called yet)") from None
        joints = arrays.actions[start:stop].reshape(count, agents, *arrays.actions.shape[1:])
        # each step's state: a fresh dict a step (a manager may change it) of the step's rows of each column
        # (views), made in C as the steps go (no Python frame a step, no list of them)
        columns_now = [arrays.state[k][start:stop].reshape(count, agents, *arrays.state[k].shape[1:]) for k in keys]
        states = map(dict, map(zip, repeat(keys), zip(*columns_now))) if keys else map(dict, repeat((), count))
        get = manager.get_reward
        got, ends = [], []
        keep_reward, keep_end = got.append, ends.append
        agent_range = range(agents)
        result = _NOT_YET
        try:
            for joint, here in zip(joints, states):
                for i in agent_range:
                    result = get(i, here, joint)
                    reward, end = result  # a return that is no pair fails here, in this frame
                    keep_reward(reward)
                    keep_end(end)
        except passed:
            raise
        except BaseException as exc:  # noqa: BLE001
            index = len(got)  # every call before this one kept its reward
            own = exc.__traceback__ is not None and exc.__traceback__.tb_next is None
            bad = pair_violation(result, index) if own and result is not _NOT_YET else None
            if bad is None:
                raise _raised(plugin, exc, "get_reward", arrays.where(trial, index)) from None
            checked = bad
        else:
            checked = check_pairs(got, ends, agents=agents)
        if isinstance(checked, ManagerViolation):
            raise _error(ContractError, plugin, f"get_reward {checked.message} at "
                         f"{arrays.where(trial, checked.index)} [rule: {checked.rule}: {RESULT_RULES[checked.rule]}]")
        rewards[start:stop], finished[start:stop] = checked
        if status is not None:
            status.advance(stop - start)
    return rewards, finished, manager


def frame_arrays(frame, spec: FrameSpec | None = None) -> tuple[pl.DataFrame, JointArrays, FrameSpec | None]:
    """``(frame, joint arrays, spec)`` of a joint frame given to :func:`apply_managers` or the check.

    Examples
    --------
    >>> frame_arrays([1])  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    rewardlab.core.errors.ParameterError: `frame` should be one polars.DataFrame (a joint frame)...
    """
    if not isinstance(frame, pl.DataFrame):
        raise ParameterError("frame", "should be one polars.DataFrame (a joint frame) for a reward manager, "
                             "which is called on whole trials", type(frame).__name__,
                             hint="Concatenate the shards first (polars.concat).")
    try:
        found = spec_of(frame, spec)
    except Exception:  # noqa: BLE001 - no spec: the joint frame's default columns
        found = None
    return frame, joint_arrays(frame, found), found


def manager_columns(name: str, rewards: np.ndarray, finished: np.ndarray, arrays: JointArrays) -> list[pl.Series]:
    """``reward_<name>`` (Float64) and ``done_<name>`` (finished or the episode's last step) in frame order.

    Examples
    --------
    >>> from rewardlab.domains.el_farol import SMALL, simulate_bar
    >>> arrays = joint_arrays(simulate_bar(SMALL, episodes=1, weeks=2, seed=0))
    >>> r, d = manager_columns("g", np.zeros(100), np.zeros(100, bool), arrays)
    >>> r.name, int(d.sum())
    ('reward_g', 50)
    """
    reward, done = frame_result(rewards, finished, arrays)
    return [pl.Series(columns.reward_column(name), reward, dtype=pl.Float64),
            pl.Series(columns.done_column(name), done, dtype=pl.Boolean)]


def frame_result(rewards: np.ndarray, finished: np.ndarray, arrays: JointArrays) -> tuple[np.ndarray, np.ndarray]:
    """The rewards and done flags in frame order (NumPy only: a child may call it): what :func:`manager_columns` holds.

    ``done`` is the manager's finished flag or the episode's last step.

    Examples
    --------
    >>> from rewardlab.domains.el_farol import SMALL, simulate_bar
    >>> arrays = joint_arrays(simulate_bar(SMALL, episodes=1, weeks=2, seed=0))
    >>> reward, done = frame_result(np.arange(100.0), np.zeros(100, bool), arrays)
    >>> reward[:3].tolist(), int(done.sum())  # frame rows: agent 0's two weeks, then agent 1's
    ([0.0, 50.0, 1.0], 50)
    """
    order = arrays.steps.order
    reward, done = np.empty(arrays.n), np.empty(arrays.n, bool)
    reward[order], done[order] = rewards, finished
    return reward, done | arrays.last_step


def shared_result(n: int) -> tuple[np.ndarray, np.ndarray]:
    """Rewards (float64 ``[n]``) and finished flags (bool ``[n]``) in anonymous shared memory.

    A child forked after this call writes into the same pages the parent
    reads, so a million rewards cost no pickling through a pipe.

    Examples
    --------
    >>> rewards, finished = shared_result(3)
    >>> rewards.dtype, finished.shape
    (dtype('float64'), (3,))
    """
    block = mmap.mmap(-1, max(1, 9 * n))  # MAP_SHARED | MAP_ANONYMOUS: the child's writes are the parent's
    return np.frombuffer(block, np.float64, n, 0), np.frombuffer(block, np.bool_, n, 8 * n)


def load_managers(items, status=None) -> list[Plugin]:
    """Load :func:`manager_items`' paths (:func:`load_manager`); loaded plug-ins are kept as they are."""
    return load_items(items, status, load=load_manager)


def apply_managers(frame: pl.DataFrame, items, *, spec: FrameSpec | None = None, isolate: bool | None = None,
                   timeout: float | None = None, cancel=None, progress=None) -> pl.DataFrame:
    """Apply reward managers to a joint frame: ``reward_<name>`` and ``done_<name>`` per (episode, step, agent) row.

    :func:`rewardlab.plugins.apply_plugins` calls it for manager files (after
    its checks of names and columns); it can be called directly.

    Parameters
    ----------
    frame : polars.DataFrame
        A joint frame: one row per (episode, step, agent); the columns of its
        spec, or ``episode_id``, ``t``, ``agent_id``, ``action`` (and any state
        columns) without one.
    items : path, Plugin, or sequence of them; or :func:`manager_items`' list
        The manager files (or :func:`load_manager` plug-ins).
    spec : FrameSpec or None
        The frame's spec, when it carries none.
    isolate, timeout, cancel, progress
        As :func:`rewardlab.plugins.apply_plugins`.

    Returns
    -------
    polars.DataFrame
        ``frame`` with each manager's columns (those of its name replaced).

    Raises
    ------
    PluginLoadError, PluginRuntimeError, PluginTimeoutError, ContractError
        Naming the plug-in, and for a call the episode, step and agent.
    SpecError
        The frame is not a joint frame (:func:`rewardlab.plugins.manager_steps.joint_order`).

    Examples
    --------
    >>> from rewardlab.domains.el_farol import SMALL, simulate_bar
    >>> out = apply_managers(simulate_bar(SMALL, episodes=1, weeks=2, seed=0),
    ...                      "examples/managers/el_farol_difference.py", isolate=False)
    >>> out["reward_el_farol_difference"].dtype, out["done_el_farol_difference"].sum()
    (Float64, 50)
    """
    if not (isinstance(items, list) and items and all(isinstance(i, tuple) for i in items)):
        items = manager_items(items)
        if items is None:
            raise ParameterError("items", "should name reward-manager files (defining RewardManager)", items)
    isolate, timeout = check_isolation(isolate, timeout)
    cancel = check_cancel(cancel)
    frame, arrays, _ = frame_arrays(frame, spec)
    bar = progress_bar(progress, arrays.n * len(items), "apply_plugins (reward managers)")

    results = [shared_result(arrays.n) for _ in items]  # the child writes here: nothing to send back

    def job(status, send):
        loaded = load_managers(items, status)
        for plugin in loaded:
            send(plugin.portable())
        for plugin, out in zip(loaded, results):
            run_trials(plugin, arrays, status=status, interrupts_are_plugins=isolate, out=out)
            if bar is not None and not isolate:
                bar.update(arrays.n)
        return len(loaded)

    try:
        result, loaded = execute(job, isolate=isolate, timeout=timeout, bar=bar, cancel=cancel, name=items[0][1])
    finally:
        if bar is not None:
            bar.close()
    if isinstance(result, isolation.ChildFailure):
        raise child_failure_error(result, items, len(loaded))
    added = [s for (_, name, _), (rewards, finished) in zip(items, results)
             for s in manager_columns(name, rewards, finished, arrays)]
    return keep_spec(frame, frame.with_columns(added))
