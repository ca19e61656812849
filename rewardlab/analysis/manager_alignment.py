"""Alignment of any reward manager: the manager re-run on counterfactual joint actions, trial by trial.

:func:`rewardlab.analysis.alignment.alignment` re-evaluates a reward on
counterfactual joint actions through ``reward_fn(joint_actions [L, n],
states) -> [L, n]``.  A reward manager (:mod:`rewardlab.contracts.manager`)
is no such function: it is called per agent after every joint step and may
keep state across the steps of a trial (PRLT's Bar Problem manager logs the
world utility; a manager may pay for progress since the trial began).
:class:`ManagerRewardFn` makes one of it:

* the counterfactuals of joint step ``s`` see the manager as the runner
  would have left it after the trial's recorded steps before ``s``: the
  manager is replayed the PRLT way (``reset()`` at the trial's start, then
  ``get_reward(agent, state, joint_action)`` for every agent of every
  recorded step, in agent order, exactly as
  :func:`rewardlab.plugins.managers.run_trials` calls it);
* each counterfactual joint action ``z'`` of step ``s`` is evaluated on a
  **``copy.deepcopy``** of that replayed manager, taken before the calls:
  ``get_reward(i, state_s, z')`` for ``i = 0 .. n-1`` (so a manager that
  computes shared quantities on agent 0's call works), then the copy is
  dropped, so no counterfactual changes the state the next ones (or the
  recorded steps) see.  The recorded joint action itself is the replay's
  own call (identical to a copy's, for a deterministic manager);
* ``state`` is the recorded step's (the view's states and extras, without
  the step index below), as :func:`~rewardlab.analysis.alignment.alignment`
  holds the states at the recorded step.

Which step a row of ``joint_actions`` belongs to travels with the states:
:func:`with_step_index` adds a ``[S, n]`` extra :data:`STEP_KEY` (the joint
step's index) to the view, and ``alignment`` hands each counterfactual its
recorded step's extras.  So call ``alignment(fn.view, fn, g_fn)`` with the
view the function holds (:attr:`ManagerRewardFn.view`).  Steps are visited in
the order asked for; a step before the replay's position (or of another
trial) replays its trial again from the start.

Where the manager runs: :func:`manager_reward_fn` runs the manager in this
process (what ``isolate=False`` means for plug-ins: a manager that exits,
hangs or starts processes is not watched).  :func:`manager_alignment` runs the
whole counterfactual evaluation, the file's loading included, in the
isolated child process of :mod:`rewardlab.plugins.isolation` (by default;
``isolate=False`` runs it here) with an optional ``timeout``; only the
:class:`~rewardlab.analysis.alignment.AlignmentResult` comes back.

Examples
--------
>>> from rewardlab.domains.el_farol import SMALL, simulate_bar, global_reward
>>> frame = simulate_bar(SMALL, episodes=1, weeks=3, seed=0)
>>> def g(a, s): return global_reward(a, **SMALL.reward_options())
>>> result = manager_alignment(frame, "examples/managers/el_farol_difference.py", g=g, samples=1, resamples=20)
>>> result.overall_factoredness
1.0
"""

from __future__ import annotations

import copy
import dataclasses
import os
from types import MappingProxyType

import numpy as np
import polars as pl

from rewardlab.analysis.alignment import AlignmentResult, alignment
from rewardlab.analysis.joint import JointView, joint_view
from rewardlab.contracts.manager import RESULT_RULES, check_returns
from rewardlab.core.errors import ContractError, ParameterError, PluginRuntimeError, SpecError
from rewardlab.core.spec import FrameSpec
from rewardlab.plugins import isolation
from rewardlab.plugins.execution import check_cancel, check_isolation, execute, failure_error
from rewardlab.plugins.loading import Plugin
from rewardlab.plugins.manager_steps import DEFAULT_LAYOUT, joint_layout
from rewardlab.plugins.managers import load_manager, manager_items
from rewardlab.plugins.runner import plugin_traceback, safe_text
from rewardlab.sources.registry import spec_of

__all__ = ["STEP_KEY", "with_step_index", "ManagerRewardFn", "manager_reward_fn", "manager_view",
           "manager_alignment"]

#: The extra of :func:`with_step_index`: each cell's joint step index (``[S, n]`` int64).
STEP_KEY = "__rewardlab_joint_step__"


def with_step_index(view: JointView) -> JointView:
    """``view`` with the extra :data:`STEP_KEY`: ``[S, n]`` int64, the joint step index ``s`` in row ``s``.

    Examples
    --------
    >>> from rewardlab.domains.el_farol import SMALL, simulate_bar
    >>> v = with_step_index(joint_view(simulate_bar(SMALL, episodes=1, weeks=3, seed=0)))
    >>> v.extras[STEP_KEY][:, 0].tolist()
    [0, 1, 2]
    """
    if not isinstance(view, JointView):
        raise ParameterError("view", "should be a JointView (rewardlab.analysis.joint.joint_view)", type(view).__name__)
    if STEP_KEY in view.extras:
        return view
    index = np.repeat(np.arange(view.steps, dtype=np.int64)[:, None], view.n_agents, axis=1)
    index.setflags(write=False)
    return dataclasses.replace(view, extras=MappingProxyType({**view.extras, STEP_KEY: index}))


def _load(manager) -> Plugin:
    if isinstance(manager, Plugin):
        if not isinstance(manager.get_reward, type):
            raise ParameterError("manager", "should be a reward manager (rewardlab.plugins.managers.load_manager)",
                                 manager.name)
        return manager
    if isinstance(manager, (str, os.PathLike)):
        items = manager_items(manager)
        if items is None:
            raise ParameterError("manager", "should be a reward-manager file (defining RewardManager)", manager)
        return load_manager(manager, name=items[0][1])
    raise ParameterError("manager", "should be a reward-manager file or a loaded manager (load_manager)",
                         type(manager).__name__)


class ManagerRewardFn:
    """A reward manager as ``reward_fn(joint_actions [L, n], states) -> [L, n]`` for :func:`alignment`.

    Built by :func:`manager_reward_fn`; see the module docstring for how the
    manager is replayed and copied.  Pass :attr:`view` (the view with
    :data:`STEP_KEY`) to ``alignment``.

    Attributes
    ----------
    plugin : Plugin
    view : JointView
    calls : int
        ``get_reward`` calls made so far (replays and counterfactuals).

    Examples
    --------
    >>> fn = manager_reward_fn("examples/managers/el_farol_global.py", view)  # doctest: +SKIP
    >>> alignment(fn.view, fn, g)  # doctest: +SKIP
    """

    def __init__(self, plugin: Plugin, view: JointView, *, status=None):
        self.plugin = plugin
        self.view = with_step_index(view)
        self.status = status
        self.calls = 0
        n, steps = self.view.n_agents, self.view.steps
        self._inputs = {k: v for k, v in self.view.inputs.items() if k != STEP_KEY}
        self._recorded = np.full((steps, n), np.nan)
        self._have = np.zeros(steps, bool)
        self._first = np.searchsorted(self.view.episode, self.view.episode, side="left")  # each step's trial start
        self._manager = None
        self._trial = -1  # the trial (joint episode code) the live manager is in; -1: none yet
        self._cursor = -1  # the next recorded step the live manager would be called on

    # -- the calls ---------------------------------------------------------------
    def _where(self, s: int, i: int, what: str) -> str:
        return f"{self.view.describe(s, i)} ({what})"

    def _raised(self, exc: BaseException, call: str, where: str) -> PluginRuntimeError:
        text, line = plugin_traceback(exc, self.plugin.path)
        message = f"{call} raised {type(exc).__name__}: {safe_text(exc)} at {where}"
        return PluginRuntimeError(self.plugin.name, self.plugin.path, message, line=line or self.plugin.line,
                                  plugin_traceback=text)

    def _state(self, s: int) -> dict:
        return {k: v[s] for k, v in self._inputs.items()}

    def _step(self, manager, s: int, joint: np.ndarray, what: str) -> np.ndarray:
        """Every agent's ``get_reward`` on ``manager`` at step ``s`` with ``joint``; the checked rewards ``[n]``."""
        n = self.view.n_agents
        here = self._state(s)
        results = []
        i = 0
        try:
            for i in range(n):
                results.append(manager.get_reward(i, here, joint))
        except KeyboardInterrupt:
            raise
        except BaseException as exc:  # noqa: BLE001 - the manager's own failure
            raise self._raised(exc, "get_reward", self._where(s, i, what)) from None
        finally:
            self.calls += len(results)
        checked = check_returns(results, agents=n)
        if not isinstance(checked, tuple):
            raise ContractError(self.plugin.name, self.plugin.path, f"get_reward {checked.message} at "
                                f"{self._where(s, checked.index % n, what)} [rule: {checked.rule}: "
                                f"{RESULT_RULES[checked.rule]}]")
        return checked[0]

    def _seek(self, s: int) -> None:
        """Replay the live manager so that its next call is recorded step ``s``."""
        first = int(self._first[s])
        if self._manager is None:
            try:
                self._manager = self.plugin.get_reward()
            except KeyboardInterrupt:
                raise
            except BaseException as exc:  # noqa: BLE001
                raise self._raised(exc, "RewardManager()", "construction (before the first trial)") from None
        trial = int(self.view.episode[s])
        if self._trial != trial or self._cursor > s:  # another trial, or behind: start the trial again
            try:
                self._manager.reset()
            except KeyboardInterrupt:
                raise
            except BaseException as exc:  # noqa: BLE001
                raise self._raised(exc, "reset()", f"the start of the trial of {self.view.describe(s)}") from None
            self._trial, self._cursor = trial, first
        while self._cursor < s:
            self._advance()

    def _advance(self) -> None:
        s = self._cursor
        rewards = self._step(self._manager, s, self.view.actions[s], "replaying the recorded steps")
        self._recorded[s], self._have[s] = rewards, True
        self._cursor = s + 1

    # -- reward_fn ---------------------------------------------------------------
    def __call__(self, joint_actions, states) -> np.ndarray:
        """``[L, n]`` rewards of the joint actions, each at the step its ``states[STEP_KEY]`` names."""
        view = self.view
        joint = np.asarray(joint_actions)
        if joint.ndim != 2 or joint.shape[1] != view.n_agents:
            raise ParameterError("joint_actions", f"should have shape [L, n] with n = {view.n_agents}", joint.shape)
        if not hasattr(states, "keys") or STEP_KEY not in states:
            raise ParameterError("states", f"should hold the joint step index {STEP_KEY!r}: pass this function's "
                                 "view (fn.view) to alignment", sorted(states) if hasattr(states, "keys") else states)
        steps = np.asarray(states[STEP_KEY])[:, 0].astype(np.int64)
        if steps.shape != (joint.shape[0],) or (steps.size and (steps.min() < 0 or steps.max() >= view.steps)):
            raise ParameterError("states", f"should give each joint action's step in 0..{view.steps - 1}",
                                 steps.shape)
        joint = joint.astype(view.actions.dtype, copy=False)
        out = np.empty(joint.shape, dtype=np.float64)
        order = np.argsort(steps, kind="stable")
        bounds = np.flatnonzero(np.diff(steps[order])) + 1
        for group in np.split(order, bounds):
            if not group.size:
                continue
            s = int(steps[group[0]])
            recorded = view.actions[s]
            same = (joint[group] == recorded).all(axis=1)
            changed = group[~same]
            if changed.size:
                if self.status is not None:
                    self.status.doing(f"plug-in {self.plugin.name!r}: counterfactuals of {view.describe(s)}")
                self._seek(s)
                for r in changed.tolist():
                    row = joint[r].copy()
                    row.setflags(write=False)
                    what = f"the counterfactual joint action {row.tolist()}"
                    out[r] = self._step(copy.deepcopy(self._manager), s, row, what)
            if same.any():
                if not self._have[s]:
                    self._seek(s)
                    self._advance()
                out[group[same]] = self._recorded[s]
        return out


def manager_reward_fn(manager, view: JointView) -> ManagerRewardFn:
    """A reward manager as a ``reward_fn`` for :func:`~rewardlab.analysis.alignment.alignment`, run in this process.

    Parameters
    ----------
    manager : str, Path or Plugin
        A reward-manager file (loaded here: its code runs in this process) or
        :func:`~rewardlab.plugins.managers.load_manager`'s plug-in.
    view : JointView
        The joint view to analyse (integer actions).

    Returns
    -------
    ManagerRewardFn
        Call ``alignment(fn.view, fn, g_fn, ...)``.

    Examples
    --------
    >>> from rewardlab.analysis.alignment import alignment
    >>> from rewardlab.domains.el_farol import SMALL, simulate_bar, global_reward
    >>> view = joint_view(simulate_bar(SMALL, episodes=1, weeks=2, seed=0))
    >>> fn = manager_reward_fn("examples/managers/el_farol_global.py", view)
    >>> bool((fn(view.actions, fn.view.inputs)[:, 0] == global_reward(view.actions, **SMALL.reward_options())).all())
    True
    """
    return ManagerRewardFn(_load(manager), view)


def manager_view(frame: pl.DataFrame, *, spec: FrameSpec | None = None) -> JointView:
    """The joint view of ``frame`` whose states and extras are what the manager runner hands a manager as ``state``.

    The extras are the state columns of
    :func:`rewardlab.plugins.manager_steps.joint_layout` that are not the
    spec's state columns; a frame without a spec is read with the runner's
    default columns (``episode_id``, ``t``, ``agent_id``, ``action``).

    Examples
    --------
    >>> from rewardlab.domains.el_farol import SMALL, simulate_bar
    >>> manager_view(simulate_bar(SMALL, episodes=1, weeks=2, seed=0)).actions.shape
    (2, 50)
    """
    if not isinstance(frame, pl.DataFrame):
        raise ParameterError("frame", "should be a polars.DataFrame (a joint frame)", type(frame).__name__)
    try:
        found = runner = spec_of(frame, spec)
    except SpecError:  # as the runner reads it: its default columns, every other column state
        runner = None
        d = DEFAULT_LAYOUT
        found = FrameSpec(name="joint", episode=(*d.episode, d.agent), step=d.step, agent=d.agent,
                          terminated=d.terminated if d.terminated in frame.columns else None,
                          truncated=d.truncated if d.truncated in frame.columns else None,
                          columns=tuple(c for c in frame.columns if c == d.action))
    layout = joint_layout(frame.columns, runner)
    extras = tuple(c for c in layout.state if c not in found.state_names)
    return joint_view(frame, spec=found, action=layout.action, extras=extras)


def _portable(result: AlignmentResult) -> dict:
    """The result's fields, its read-only mappings as plain dicts (a ``mappingproxy`` does not pickle)."""
    return {f.name: dict(v) if isinstance(v := getattr(result, f.name), MappingProxyType) else v
            for f in dataclasses.fields(result)}


def _restore(fields: dict) -> AlignmentResult:
    def frozen(value):
        if isinstance(value, np.ndarray):
            value.setflags(write=False)
        return value

    out = {}
    for key, value in fields.items():
        if isinstance(value, dict):
            value = MappingProxyType({k: frozen(v) for k, v in value.items()})
        out[key] = frozen(value)
    return AlignmentResult(**out)


def manager_alignment(frame: pl.DataFrame, manager, *, g, spec: FrameSpec | None = None,
                      isolate: bool | None = None, timeout: float | None = None, cancel=None, action_set=None,
                      samples: int | None = None, seed: int = 0, resamples: int = 1000, confidence: float = 0.95,
                      ties: str = "agree", rtol: float = 1e-9, units: int = 1000, keep: int = 2000,
                      name: str | None = None) -> AlignmentResult:
    """Factoredness and learnability of a reward manager on a joint frame (see the module docstring).

    Parameters
    ----------
    frame : polars.DataFrame
        A joint frame (one row per episode, step and agent; integer actions).
    manager : str, Path or Plugin
        The reward-manager file (or :func:`~rewardlab.plugins.managers.load_manager`'s plug-in).
    g : callable, str, Path or Plugin
        The global reward: ``g(joint_actions [L, n], states) -> [L]`` (or
        ``[L, n]``), or a reward manager whose reward to agent ``i`` is ``G``
        as agent ``i`` sees it (e.g. ``examples/managers/el_farol_global.py``),
        evaluated the same way.
    spec : FrameSpec, optional
        ``frame``'s spec, when it carries none.
    isolate : bool or None
        Run the whole evaluation (the files' loading included) in a child
        process (None: where the platform can fork); False runs it here.
    timeout : float or None
        Seconds for the whole evaluation (needs ``isolate``).
    cancel : callable or None
        Polled; True stops the child.
    action_set, samples, seed, resamples, confidence, ties, rtol, units, keep
        As :func:`~rewardlab.analysis.alignment.alignment`.
    name : str, optional
        The reward's name in tables (default: the manager's name).

    Returns
    -------
    AlignmentResult

    Raises
    ------
    PluginLoadError, PluginRuntimeError, PluginTimeoutError, ContractError
        Naming the manager and, for a call, the episode, step and agent.

    Examples
    --------
    >>> from rewardlab.domains.el_farol import SMALL, simulate_bar
    >>> frame = simulate_bar(SMALL, episodes=1, weeks=2, seed=0)
    >>> r = manager_alignment(frame, "examples/managers/el_farol_difference.py",
    ...                       g="examples/managers/el_farol_global.py", samples=1, resamples=10)
    >>> r.name, r.overall_factoredness
    ('el_farol_difference', 1.0)
    """
    isolate, timeout = check_isolation(isolate, timeout)
    cancel = check_cancel(cancel)
    view = manager_view(frame, spec=spec)
    label = manager.name if isinstance(manager, Plugin) else None
    if isinstance(manager, (str, os.PathLike)):
        items = manager_items(manager)
        if items is None:
            raise ParameterError("manager", "should be a reward-manager file (defining RewardManager)", manager)
        label, path = items[0][1], items[0][2]
    else:
        path = getattr(manager, "path", None)
    if label is None:
        raise ParameterError("manager", "should be a reward-manager file or a loaded manager (load_manager)",
                             type(manager).__name__)
    if not (callable(g) and not isinstance(g, Plugin)) and not isinstance(g, (str, os.PathLike, Plugin)):
        raise ParameterError("g", "should be a function (joint_actions, states) -> G, or a reward-manager file",
                             type(g).__name__)
    if name is not None and not isinstance(name, str):
        raise ParameterError("name", "should be a string or None", name)

    def job(status, send):
        fn = ManagerRewardFn(_load(manager), view, status=status)
        g_fn = g if callable(g) and not isinstance(g, Plugin) else ManagerRewardFn(_load(g), view, status=status)
        result = alignment(fn.view, fn, g_fn, action_set=action_set, samples=samples, seed=seed,
                           resamples=resamples, confidence=confidence, ties=ties, rtol=rtol, units=units, keep=keep,
                           name=label if name is None else name)
        return _portable(result)

    result, _ = execute(job, isolate=isolate, timeout=timeout, bar=None, cancel=cancel, name=label)
    if isinstance(result, isolation.ChildFailure):
        raise failure_error(result, label, path, loading=False)
    return _restore(result)
