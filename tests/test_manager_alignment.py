"""Alignment of reward managers: the manager re-run on counterfactual joint actions, trial by trial.

References: El Farol's shipped difference manager must give the alignment of the vectorized difference reward, bit
for bit (in this process and in the isolated child); a stateful manager is compared with a brute force that runs a
fresh manager from the trial's start for every counterfactual (no copies), so a counterfactual that leaked into the
replayed state would show.
"""

from __future__ import annotations

import dataclasses
import textwrap

import numpy as np
import polars as pl
import pytest

from rewardlab.analysis.alignment import alignment
from rewardlab.analysis.joint import joint_view
from rewardlab.analysis.manager_alignment import (STEP_KEY, ManagerRewardFn, manager_alignment, manager_reward_fn,
                                                  manager_view, with_step_index)
from rewardlab.core.errors import ContractError, ParameterError, PluginRuntimeError, PluginTimeoutError
from rewardlab.domains.el_farol import SMALL, difference_reward, global_reward, simulate_bar
from rewardlab.plugins.isolation import AVAILABLE
from rewardlab.plugins.managers import load_manager

DIFFERENCE = "examples/managers/el_farol_difference.py"
GLOBAL = "examples/managers/el_farol_global.py"
OPTS = SMALL.reward_options()


def g_fn(a, s):
    return global_reward(a, **OPTS)


def d_fn(a, s):
    return difference_reward(a, **OPTS)


def _same(a, b) -> None:
    """Two AlignmentResults equal field by field, arrays bit for bit."""
    for f in dataclasses.fields(a):
        x, y = getattr(a, f.name), getattr(b, f.name)
        if isinstance(x, np.ndarray):
            assert x.tobytes() == y.tobytes(), f.name
        elif f.name in ("pairs", "values"):
            assert set(x) == set(y)
            for k in x:
                assert np.asarray(x[k]).tobytes() == np.asarray(y[k]).tobytes(), (f.name, k)
        elif f.name == "options":
            assert dict(x) == dict(y)
        else:
            assert x == y or (x != x and y != y), (f.name, x, y)


@pytest.fixture(scope="module")
def frame():
    return simulate_bar(SMALL, episodes=2, weeks=4, seed=11, policy="preference")


@pytest.mark.parametrize("samples", [None, 2])
def test_the_difference_manager_has_the_alignment_of_the_vectorized_difference_reward(frame, samples):
    view = joint_view(frame)
    want = alignment(view, d_fn, g_fn, samples=samples, resamples=100, seed=3, name="reward")
    fn = manager_reward_fn(DIFFERENCE, view)
    _same(alignment(fn.view, fn, g_fn, samples=samples, resamples=100, seed=3, name="reward"), want)
    assert want.overall_factoredness == 1.0


@pytest.mark.skipif(not AVAILABLE, reason="needs os.fork")
def test_manager_alignment_in_the_child_with_a_manager_as_g(frame):
    want = alignment(joint_view(frame), d_fn, g_fn, samples=2, resamples=100, seed=1, name="el_farol_difference")
    got = manager_alignment(frame, DIFFERENCE, g=GLOBAL, samples=2, resamples=100, seed=1)
    _same(got, want)
    assert got.pairs["agent"].flags.writeable is False
    _same(manager_alignment(frame, load_manager(DIFFERENCE), g=g_fn, samples=2, resamples=100, seed=1,
                            isolate=False), want)


STATEFUL = '''
import numpy as np

class RewardManager:
    """Pays agent i the weeks of this trial (before now) it chose the night it chooses now, plus the
    attendance of its night now, plus a count of every call since reset (a counterfactual that leaked
    into the replayed manager would change the counts)."""

    def __init__(self):
        self.history = []
        self.calls = 0

    def reset(self):
        self.history = []
        self.calls = 0

    def get_reward(self, agent, state, joint_action):
        self.calls += 1
        if agent == 0:
            self.history.append(np.array(joint_action))
        past = sum(int(h[agent] == joint_action[agent]) for h in self.history[:-1])
        x = int((joint_action == joint_action[agent]).sum())
        return past + 0.5 * x + 0.001 * self.calls, False
'''


def _brute_force(path, view, joint, steps):
    """Each row's rewards by a fresh manager run from its trial's start (recorded steps), then the row's step."""
    cls = load_manager(path).get_reward
    out = np.empty(joint.shape)
    for r, s in enumerate(steps):
        manager = cls()
        manager.reset()
        first = int(np.flatnonzero(view.episode == view.episode[s])[0])
        for u in range(first, s):
            for i in range(view.n_agents):
                manager.get_reward(i, {}, view.actions[u])
        out[r] = [manager.get_reward(i, {}, joint[r])[0] for i in range(view.n_agents)]
    return out


def test_a_stateful_manager_is_replayed_and_copied(tmp_path, frame):
    path = tmp_path / "stateful.py"
    path.write_text(STATEFUL)
    small = frame.filter(pl.col("agent_id") < 6)
    view = manager_view(small)  # no spec after filter: the runner's default columns
    fn = manager_reward_fn(path, view)
    rng = np.random.default_rng(0)
    steps = rng.integers(view.steps, size=40)  # any order, steps repeated, trials interleaved
    joint = view.actions[steps].copy()
    change = (rng.random(joint.shape) < 0.3) & (rng.random(len(steps)) < 0.6)[:, None]  # some rows as recorded
    joint[change] = rng.integers(SMALL.nights, size=int(change.sum()))
    states = {STEP_KEY: fn.view.extras[STEP_KEY][steps]}
    got = fn(joint, states)
    assert got.view(np.uint64).tolist() == _brute_force(path, view, joint, steps).view(np.uint64).tolist()
    # the recorded steps give what the runner gives
    from rewardlab.plugins.managers import apply_managers

    applied = apply_managers(small, path, isolate=False)["reward_stateful"].to_numpy()
    assert fn(view.actions, fn.view.inputs).tolist() == applied[view.rows].tolist()
    # and the whole alignment equals the one of the brute force used as reward_fn
    def brute(joint_actions, st):
        return _brute_force(path, view, joint_actions, st[STEP_KEY][:, 0])

    _same(alignment(fn.view, fn, g_fn, samples=1, resamples=50), alignment(fn.view, brute, g_fn, samples=1,
                                                                           resamples=50))


def test_the_view_must_carry_the_step_index(frame):
    view = joint_view(frame)
    fn = manager_reward_fn(DIFFERENCE, view)
    assert isinstance(fn, ManagerRewardFn) and with_step_index(fn.view) is fn.view
    with pytest.raises(ParameterError, match="pass this function's view"):
        alignment(view, fn, g_fn, samples=1, resamples=10)
    with pytest.raises(ParameterError, match="reward-manager file"):
        manager_reward_fn(__file__, view)  # defines no RewardManager at its top level


def test_manager_view_holds_the_runners_state_columns(frame):
    from rewardlab.domains.el_farol import SPEC

    extra = frame.with_columns((pl.col("action") * 10).alias("score"))
    spec = dataclasses.replace(SPEC, columns=("action", "score"))
    assert manager_view(extra, spec=spec).inputs["score"].tolist() == (joint_view(frame).actions * 10).tolist()
    plain = pl.DataFrame(extra.to_dict())  # no spec: the runner's default columns, every other one is state
    assert manager_view(plain).inputs["score"].tolist() == (joint_view(frame).actions * 10).tolist()
    assert "score" not in manager_view(extra, spec=SPEC).inputs  # not in the spec: not handed to a manager


FAILING = '''
import os, time

class RewardManager:
    def reset(self):
        self.weeks = 0

    def get_reward(self, agent, state, joint_action):
        if agent == 0:
            self.weeks += 1
        if int(joint_action[0]) == {bad} and self.weeks == 2:
            {what}
        return 1.0, False
'''


@pytest.mark.skipif(not AVAILABLE, reason="needs os.fork")
@pytest.mark.parametrize("what,error,match", [
    ("raise KeyError('boom')", PluginRuntimeError, r"get_reward raised KeyError: 'boom' at episode 0, step t=1, "
     r"agent 0 \(the counterfactual joint action \["),
    ("return None", ContractError, r"returned NoneType None.*counterfactual joint action"),
    ("os._exit(3)", PluginRuntimeError, r"ended rewardlab's child process \(exit status 3\)"),
    ("time.sleep(60)", PluginTimeoutError, r"timeout|time"),
])
def test_a_failing_manager_is_reported_naming_the_step(tmp_path, what, error, match):
    frame = simulate_bar(SMALL, episodes=1, weeks=3, seed=0).filter(pl.col("agent_id") < 3)
    recorded = manager_view(frame).actions[1, 0]
    path = tmp_path / "failing.py"
    path.write_text(FAILING.format(bad=(int(recorded) + 1) % SMALL.nights, what=what))
    with pytest.raises(error, match=match) as info:
        manager_alignment(frame, path, g=g_fn, action_set=SMALL.nights, resamples=10, timeout=3)
    assert info.value.plugin == "failing"
