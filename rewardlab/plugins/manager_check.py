"""Check a reward manager: its returns on every trial, determinism, and whether ``reset()`` really resets.

:func:`check_manager` is what :func:`rewardlab.plugins.check_plugin` (and
``rewardlab check-plugin``) does for a file that defines ``RewardManager``.
In one child process it loads the file, constructs ``RewardManager()`` once
and runs the frame's trials several times on that same object:

1. every trial, in the frame's order (the reference);
2. the same again: a deterministic manager whose ``reset()`` clears what a
   trial leaves behind gives the same rewards and finished flags, bit for bit;
3. in reverse order, and 4. in a seeded shuffled order (with 3 trials or
   more): the order of the trials does not change any trial's results.

Every call's return is checked as :func:`rewardlab.plugins.apply_plugins`
does.  A run that raises or breaks the contract is a failure with its message
(episode, step, agent); one that ends the process or runs out of time stops
the check, naming the run.  The report never reads as a pass unless every run
finished, the data held agent-steps, and no run differed.

Examples
--------
>>> from rewardlab.domains.el_farol import SMALL, simulate_bar
>>> report = check_manager(simulate_bar(SMALL, episodes=3, weeks=4, seed=0),
...                        "examples/managers/el_farol_difference.py", isolate=False)
>>> report.ok, [r.label for r in report.runs][:2]
(True, ['trials in order', 'trials in order again (same object)'])
"""

from __future__ import annotations

import dataclasses

import numpy as np

from rewardlab.contracts.checks import RewardScale, compare_outputs, reward_scale
from rewardlab.contracts.manager import MANAGER
from rewardlab.core.errors import ParameterError, PluginError, PluginRunCancelled, check_int
from rewardlab.plugins import isolation
from rewardlab.plugins.execution import check_cancel, check_isolation, execute, failure_error, progress_bar
from rewardlab.plugins.loading import Plugin
from rewardlab.plugins.managers import frame_arrays, load_manager, manager_items, run_trials
from rewardlab.plugins.manager_steps import JointArrays

__all__ = ["check_manager", "ManagerCheckReport", "ManagerRun", "ManagerDifference", "trial_orders", "finished_early"]


@dataclasses.dataclass(frozen=True)
class ManagerRun:
    """One pass of :func:`check_manager` over the trials.

    Attributes
    ----------
    label : str
        ``"trials in order"``, ``"trials in reverse order"``, ...
    trials : tuple of int
        The trials in the order they were run (positions in the frame).
    error : str or None
        The manager's failure in this run (it names the episode, step and agent).

    Examples
    --------
    >>> ManagerRun("trials in order", (0, 1), None).error is None
    True
    """

    label: str
    trials: tuple
    error: str | None = None


@dataclasses.dataclass(frozen=True)
class ManagerDifference:
    """How a run's rewards and finished flags differ from the first run's (bit for bit).

    Examples
    --------
    >>> str(ManagerDifference("again", 3, 0, 0.5, "episode_id=0, step t=1, agent agent_id=2 (position 2 of 4)",
    ...                       (1.5, 1.0, False, False)))  # doctest: +ELLIPSIS
    'again differs from trials in order: 3 rewards and 0 finished flags; largest |difference| 0.5; first at ...'
    """

    run: str
    rewards: int
    finished: int
    max_abs: float
    where: str
    values: tuple

    def __str__(self) -> str:
        r, r0, f, f0 = self.values
        return (f"{self.run} differs from trials in order: {self.rewards:,} rewards and {self.finished:,} finished "
                f"flags; largest |difference| {self.max_abs:.6g}; first at {self.where}: reward {r!r} vs {r0!r}, "
                f"finished {f} vs {f0}")


@dataclasses.dataclass(frozen=True)
class ManagerCheckReport:
    """The result of :func:`check_manager`; ``print`` it for a readable report.

    Attributes
    ----------
    plugin : Plugin
    transitions : int
        Agent-steps (rows) checked.
    episodes : int
        Trials.
    agents : tuple of int
        The distinct numbers of agents per step.
    runs : tuple of ManagerRun
    differences : tuple of ManagerDifference
    scale : RewardScale or None
        Of the first run (a fact: the manager contract asks for no scale).
    seed : int
        Seed of the shuffled order.
    stopped : str or None
        Why the check stopped before every run (the manager ended its process or ran out of time).
    contract : str
        ``"manager"``.
    finished_early : (int, str)
        How many trials the manager said were finished before their last
        recorded step (in the first run), and where the first was: a fact,
        not a failure (``done_<name>`` is True there, as where a plug-in cuts
        a trajectory).

    Examples
    --------
    >>> report = check_manager(frame, "examples/managers/el_farol_global.py")  # doctest: +SKIP
    >>> report.ok  # doctest: +SKIP
    True
    """

    plugin: Plugin
    transitions: int
    episodes: int
    agents: tuple
    runs: tuple
    differences: tuple
    scale: RewardScale | None
    seed: int
    stopped: str | None = None
    contract: str = MANAGER.name
    finished_early: tuple = (0, "")

    @property
    def ok(self) -> bool:
        """True only when every planned run finished without a failure, on some rows, and none differed."""
        return (self.stopped is None and self.transitions > 0 and bool(self.runs)
                and all(r.error is None for r in self.runs) and not self.differences)

    def __str__(self) -> str:
        p = self.plugin
        agents = "/".join(map(str, self.agents)) or "0"
        lines = [f"check-plugin {p.name!r} ({p.path})",
                 f"  data: {self.transitions:,} agent-steps, {self.episodes:,} trials (episodes), {agents} agents "
                 f"per step (reward-manager contract: {MANAGER.signature})",
                 "  runs: " + ", ".join(r.label for r in self.runs) + f" (the shuffled order uses seed {self.seed})",
                 ""]
        if self.stopped:
            lines.append(f"stopped: {self.stopped}")
        failed = [r for r in self.runs if r.error]
        for r in failed:
            lines.append(f"  - {r.label}: " + r.error.replace("\n", "\n    "))
        if not self.transitions:
            lines.append("contract: not checked (no agent-steps)")
        elif failed or self.stopped:
            lines.append(f"contract: FAIL ({len(failed)} run(s) failed)" if failed else
                         "contract: not fully checked (a run stopped early)")
        else:
            lines.append("contract: ok (every call returned a finite reward and a finished flag the same for "
                         "every agent of a step)")
        finished = [r for r in self.runs if r.error is None]
        again = [d for d in self.differences if "again" in d.run]
        order = [d for d in self.differences if "again" not in d.run]
        if len(finished) < 2 or not self.transitions:
            lines.append("determinism and reset: not checked (fewer than two runs finished)")
        else:
            lines.append("determinism: " + ("ok (the same trials twice give the same rewards, bit for bit)"
                                            if not again else "FAIL"))
            lines.append("reset: " + ("ok (the order of the trials does not change their results)" if not order
                                      else "FAIL (the results depend on what ran before: reset() does not clear "
                                      "everything a trial leaves behind)"))
            for d in self.differences:
                lines.append(f"  - {d}")
        if self.scale is not None and self.scale.count_all:
            lines.append(f"reward scale: {self.scale}")
        if self.finished_early[0]:
            lines.append(f"finished early: the manager ended {self.finished_early[0]:,} of {self.episodes:,} trials "
                         f"before their last recorded step (the first at {self.finished_early[1]})")
        lines.append("")
        lines.append("result: " + ("PASS" if self.ok else "FAIL"))
        return "\n".join(lines)


def trial_orders(trials: int, *, seed: int) -> list[tuple[str, tuple]]:
    """The runs of :func:`check_manager`: ``[(label, trial order)]``.

    Examples
    --------
    >>> [label for label, _ in trial_orders(3, seed=0)]
    ['trials in order', 'trials in order again (same object)', 'trials in reverse order', 'trials in shuffled order']
    >>> trial_orders(2, seed=0)[2]
    ('trials in reverse order', (1, 0))
    """
    ordered = tuple(range(trials))
    runs = [("trials in order", ordered), ("trials in order again (same object)", ordered)]
    if trials >= 2:
        runs.append(("trials in reverse order", ordered[::-1]))
    if trials >= 3:
        runs.append(("trials in shuffled order", tuple(np.random.default_rng(seed).permutation(trials).tolist())))
    return runs


def _difference(label: str, run, first, arrays: JointArrays) -> ManagerDifference | None:
    diff = compare_outputs(run[0], run[1], first[0], first[1], rtol=0.0, atol=0.0)
    row = diff["first_row"]
    if row is None:
        return None
    trial = int(np.searchsorted(arrays.steps.starts, row, side="right")) - 1
    where = arrays.where(trial, row - int(arrays.steps.starts[trial]))
    return ManagerDifference(label, diff["rewards"], diff["dones"], diff["max_abs"], where,
                             (float(run[0][row]), float(first[0][row]), bool(run[1][row]), bool(first[1][row])))


def check_manager(frame, plugin, *, seed: int = 0, isolate: bool | None = None, timeout: float | None = None,
                  cancel=None, progress=None, spec=None) -> ManagerCheckReport:
    """Check a reward manager on a joint frame (see the module docstring for the runs).

    Parameters
    ----------
    frame : polars.DataFrame
        A joint frame (:func:`rewardlab.plugins.managers.apply_managers`).
    plugin : path, Plugin, or a ``(item, name, path)`` of :func:`~rewardlab.plugins.managers.manager_items`
    seed : int
        Seed of the shuffled order.
    isolate, timeout, cancel, progress
        As :func:`rewardlab.plugins.check_plugin` (the timeout is for the whole check).
    spec : FrameSpec or None
        The frame's spec, when it carries none.

    Returns
    -------
    ManagerCheckReport

    Raises
    ------
    PluginLoadError
        The file does not load (also when its code exits or hangs while loading).

    Examples
    --------
    >>> report = check_manager(frame, "examples/managers/el_farol_global.py")  # doctest: +SKIP
    >>> print(report)  # doctest: +SKIP
    """
    if not isinstance(plugin, tuple):
        items = manager_items(plugin)
        if items is None or len(items) != 1:
            raise ParameterError("plugin", "should be one reward-manager file (defining RewardManager)", plugin)
        plugin = items[0]
    item, name, path = plugin
    seed = check_int("seed", seed, low=0, rule="should be an integer >= 0")
    isolate, timeout = check_isolation(isolate, timeout)
    cancel = check_cancel(cancel)
    frame, arrays, _ = frame_arrays(frame, spec)
    runs = trial_orders(int(arrays.steps.agents.shape[0]), seed=seed)
    bar = progress_bar(progress, arrays.n * len(runs), f"check_plugin {name}")

    def job(status, send):
        if isinstance(item, Plugin):
            loaded = item
        else:
            if status is not None:
                status.doing(f"loading plug-in {name!r} ({path})")
            loaded = load_manager(item, name=name)
        send(loaded.portable())
        manager = None
        for label, trials in runs:
            if status is None and cancel is not None and cancel():
                raise PluginRunCancelled(name)
            try:
                rewards, finished, manager = run_trials(loaded, arrays, trials, manager=manager, status=status,
                                                        interrupts_are_plugins=isolate)
            except PluginError as exc:
                send((label, None, None, str(exc)))
                continue
            finally:
                if bar is not None and not isolate:
                    bar.update(arrays.n)
            send((label, rewards, finished, None))
        return None

    try:
        result, parts = execute(job, isolate=isolate, timeout=timeout, bar=bar, cancel=cancel, name=name)
    finally:
        if bar is not None:
            bar.close()
    if isinstance(result, isolation.ChildFailure) and not parts:
        raise failure_error(result, name, path, loading=True)
    report_plugin = item if isinstance(item, Plugin) else parts[0]
    done = parts[1:]
    stopped = None
    made = [ManagerRun(label, trials, error) for (label, _, _, error), (_, trials) in zip(done, runs)]
    if isinstance(result, isolation.ChildFailure):
        label, trials = runs[len(done)]
        error = failure_error(result, name, path, loading=False)
        how = (f"ran out of time ({result.detail})" if result.how == "timeout" else
               f"ended its process ({result.detail})" if result.how in ("exit", "signal") else
               "failed in its process")
        stopped = f"the manager {how} during the run '{label}', so no further run was made"
        made.append(ManagerRun(label, trials, str(error)))
    ok_runs = [(label, (r, f)) for label, r, f, error in done if error is None]
    differences = []
    if ok_runs and done and done[0][3] is None:
        first = ok_runs[0][1]
        for label, run in ok_runs[1:]:
            d = _difference(label, run, first, arrays)
            if d is not None:
                differences.append(d)
    scale, early = None, (0, "")
    if done and done[0][3] is None and arrays.n:
        scale = reward_scale(done[0][1], done[0][2] | arrays.last_step[arrays.steps.order])
        early = finished_early(done[0][2], arrays)
    return ManagerCheckReport(
        plugin=report_plugin, transitions=arrays.n, episodes=int(arrays.steps.agents.shape[0]),
        agents=tuple(sorted(set(arrays.steps.agents.tolist()))), runs=tuple(made), differences=tuple(differences),
        scale=scale, seed=seed, stopped=stopped, finished_early=early)


def finished_early(finished: np.ndarray, arrays: JointArrays) -> tuple[int, str]:
    """``(trials, where)``: the trials whose manager said finished before their last step, and the first such call.

    Parameters
    ----------
    finished : numpy.ndarray of bool, shape ``[N]``
        In joint order.
    arrays : JointArrays

    Examples
    --------
    >>> from rewardlab.domains.el_farol import SMALL, simulate_bar
    >>> from rewardlab.plugins.manager_steps import joint_arrays
    >>> arrays = joint_arrays(simulate_bar(SMALL, episodes=2, weeks=3, seed=0))
    >>> flags = np.zeros(300, bool); flags[150:200] = True  # trial 1, its first step
    >>> finished_early(flags, arrays)
    (1, 'episode_id=1, step t=0, agent agent_id=0 (position 0 of 50)')
    """
    steps = arrays.steps
    count, where = 0, ""
    for trial in range(steps.agents.shape[0]):
        start, agents = int(steps.starts[trial]), int(steps.agents[trial])
        before_last = finished[start:int(steps.starts[trial + 1]) - agents]
        if before_last.any():
            count += 1
            if not where:
                where = arrays.where(trial, int(np.argmax(before_last)))
    return count, where
