"""Reward managers over 10^6 agent-steps: rewardlab's runner against a plain Python loop calling the same manager.

The data is El Farol (``SMALL``: 50 agents, 6 nights), 200 trials of 100
weeks, 10^6 agent-steps.  The plain loop is what a user would write: per
trial ``reset()``, per week the joint action and an (empty) state dict, then
``get_reward`` for each agent, keeping the rewards and finished flags in two
lists (no checks, no process, no frame); a second plain loop that keeps the
returned tuples as they are is reported beside it (it is slower: a million
live tuples for the garbage collector to walk).  The runner is
``apply_plugins(frame, MANAGER.py)`` end to end: the joint order and arrays
(Polars), the child process, the loop there, the checks of every return and
the columns back.  Its loop alone (``run_trials`` in this process, checks
included) is reported beside it.  Target: the runner takes at most 1.5x the
plain loop's time with the shipped difference-reward manager (a NumPy
bincount on agent 0's call, a lookup per agent).  A trivial manager
(``return 0.0, False``) is reported beside it without a target: there the
runner's own cost per call (the checks of every return, about 50-80 ns)
is as large as the call itself.  The timings are interleaved, best of five
each.

Beside them, the runner's fixed costs, which do not depend on the manager:
the joint order and arrays (``joint_arrays``, Polars and NumPy, in the
parent) and an empty run in a child process (``run_in_child`` with no work:
the two forks of :mod:`rewardlab.plugins.isolation`, its pipes and its
wait).  The per-call costs are the loop (a fresh ``state`` dict a step made
in C, bound methods, appends) and the checks of every return, made on the
whole trial at once: exact floats and bools are checked and converted in
one C pass (``contracts.manager.exact_floats`` / ``exact_bools``), about
15 ns a call, other types item by item.
"""

from __future__ import annotations

import tempfile
from pathlib import Path

import numpy as np

from benchmarks._data import ROOT, interleaved
from rewardlab.domains.el_farol import SMALL, simulate_actions, simulate_bar
from rewardlab.plugins import apply_plugins, isolation
from rewardlab.plugins.manager_steps import joint_arrays
from rewardlab.plugins.managers import load_manager, run_trials

EPISODES, WEEKS = 200, 100  # x 50 agents = 10^6 agent-steps
BALLAST, BALLAST_CHUNK = 2 << 30, 1 << 20  # the memory held for the last figures, in 1 MiB arrays
DIFFERENCE = ROOT / "examples" / "managers" / "el_farol_difference.py"
TRIVIAL = """\
class RewardManager:
    def reset(self):
        pass

    def get_reward(self, agent, state, joint_action):
        return 0.0, False
"""


def plain_loop(cls, actions) -> tuple[list, list]:
    """A plain loop calling the manager the PRLT way (the reference the runner is measured against).

    It keeps the rewards and finished flags in two lists, as the runner does
    before its checks (keeping the returned tuples instead leaves 10^6 live
    tuples for the garbage collector to walk, and made this loop slower than
    the runner's).
    """
    manager = cls()
    rewards, finished = [], []
    keep_reward, keep_finished = rewards.append, finished.append
    agents = range(actions.shape[2])
    for trial in actions:
        manager.reset()
        get = manager.get_reward
        for joint in trial:  # the week's joint action, a row view
            state = {}
            for i in agents:
                reward, done = get(i, state, joint)
                keep_reward(reward)
                keep_finished(done)
    return rewards, finished


def plain_loop_tuples(cls, actions) -> list:
    """The same plain loop keeping each returned tuple as it is (no unpacking)."""
    manager = cls()
    out = []
    append = out.append
    agents = range(actions.shape[2])
    for trial in actions:
        manager.reset()
        get = manager.get_reward
        for joint in trial:
            state = {}
            for i in agents:
                append(get(i, state, joint))
    return out


def run(report) -> None:
    actions = simulate_actions(SMALL, episodes=EPISODES, weeks=WEEKS, seed=0)
    frame = simulate_bar(SMALL, episodes=EPISODES, weeks=WEEKS, seed=0)
    calls = frame.height
    report("agent-steps (calls)", calls, "calls")
    with tempfile.TemporaryDirectory() as folder:
        trivial = Path(folder) / "trivial.py"
        trivial.write_text(TRIVIAL)
        plugin_difference = load_manager(DIFFERENCE)
        for label, path in (("El Farol difference manager", DIFFERENCE), ("trivial manager", trivial)):
            plugin = load_manager(path)
            arrays = joint_arrays(frame)
            times = interleaved({
                "plain": lambda: plain_loop(plugin.get_reward, actions),
                "tuples": lambda: plain_loop_tuples(plugin.get_reward, actions),
                "loop": lambda: run_trials(plugin, arrays),
                "runner": lambda: apply_plugins(frame, path, progress=False),
            })
            report(f"{label}: plain loop", calls / times["plain"], "calls/s")
            report(f"{label}: plain loop keeping the returned tuples", calls / times["tuples"], "calls/s")
            report(f"{label}: runner loop alone (in process, checks)", calls / times["loop"], "calls/s")
            report(f"{label}: apply_plugins (child process, end to end)", calls / times["runner"], "calls/s")
            report(f"{label}: apply_plugins time / plain loop time", times["runner"] / times["plain"], "x",
                   target="<= 1.5" if path == DIFFERENCE else None)
            report(f"{label}: apply_plugins time / plain loop (tuples) time", times["runner"] / times["tuples"], "x")
    fixed = {"arrays": lambda: joint_arrays(frame)}
    if isolation.AVAILABLE:
        fixed["child"] = lambda: isolation.run_in_child(lambda status, send: None)
    fixed = interleaved(fixed)
    report("fixed cost: joint_arrays (order, checks, arrays)", fixed["arrays"] * 1e3, "ms")
    if "child" in fixed:
        report("fixed cost: an empty run in a child process", fixed["child"] * 1e3, "ms")
    # a process holding gigabytes, as a notebook with big frames does: each fork copies its page tables
    held = [np.ones(BALLAST_CHUNK // 8) for _ in range(BALLAST // BALLAST_CHUNK)]
    loaded = {"plain": lambda: plain_loop(plugin_difference.get_reward, actions),
              "runner": lambda: apply_plugins(frame, DIFFERENCE, progress=False)}
    if isolation.AVAILABLE:
        loaded["child"] = lambda: isolation.run_in_child(lambda status, send: None)
    times = interleaved(loaded, repeat=3)
    held_text = f"with {BALLAST >> 30} GiB held in the process"
    report(f"{held_text}: apply_plugins time / plain loop time (difference)", times["runner"] / times["plain"], "x")
    if "child" in times:
        report(f"{held_text}: an empty run in a child process", times["child"] * 1e3, "ms")
    del held
