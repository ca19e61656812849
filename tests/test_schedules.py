"""Epsilon-greedy schedules against plain transliterations of the two programs' code."""

from __future__ import annotations

import json
import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from rewardlab import schedules
from rewardlab.core.errors import ParameterError
from rewardlab.schedules import (
    ExplorerSchedule,
    KanachanEpsilonGreedy,
    expected_random_actions,
    first_step_below,
    to_json,
    to_yaml,
)


# ---------------------------------------------------------------------------
# Plain references
# ---------------------------------------------------------------------------


def julia_get_epsilon(kind, eps_init, eps_stable, warmup, decay, step):
    """ReinforcementLearningCore's get_ϵ, line by line (Julia's n / 0 = Inf)."""
    if kind == "linear":
        if step <= warmup:
            return eps_init
        if step >= warmup + decay:
            return eps_stable
        steps_left = warmup + decay - step
        return eps_stable + steps_left / decay * (eps_init - eps_stable)
    if step <= warmup:
        return eps_init
    n = step - warmup
    scale = eps_init - eps_stable
    x = -1.0 * n / decay if decay else -math.inf
    return eps_stable + scale * math.exp(x)


class KanachanEpsilonGreedyCode:
    """kanachan/nn/epsilon_greedy.py's state machine (step() and the epsilon update), in floats."""

    def __init__(self, first, last, annealing_steps, *, intended=False):
        self.first, self.last, self.annealing_steps = first, last, annealing_steps
        self.epsilon = first
        self._step = 0
        self.intended = intended

    def step(self, steps=1):
        if self.intended:
            self._step = min(self._step + steps, self.annealing_steps)
        elif self._step + steps >= self.annealing_steps:
            self._step = self.annealing_steps
        if self.annealing_steps == 0:
            return
        a = self.annealing_steps
        self.epsilon = self.first * ((a - self._step) / a) + self.last * (self._step / a)


def kanachan_loop(first, last, annealing, increment, n_steps, *, intended):
    """Epsilon used at steps 0..n-1 when the loop calls step(increment) after every increment steps."""
    code = KanachanEpsilonGreedyCode(first, last, annealing, intended=intended)
    out = []
    for t in range(n_steps):
        if t and t % increment == 0:
            code.step(increment)
        out.append(code.epsilon)
    return out


# ---------------------------------------------------------------------------
# ReinforcementLearning.jl
# ---------------------------------------------------------------------------


@pytest.mark.parametrize("kind", ["linear", "exp"])
@pytest.mark.parametrize("init, stable, warmup, decay", [
    (1.0, 0.1, 0, 0), (0.9, 0.1, 100, 100), (1.0, 0.05, 0, 1000), (0.5, 0.5, 10, 10), (0.2, 0.8, 3, 7),
])
def test_explorer_matches_julia(kind, init, stable, warmup, decay):
    s = ExplorerSchedule(kind=kind, epsilon_init=init, epsilon_stable=stable, warmup_steps=warmup,
                         decay_steps=decay)
    steps = np.arange(0, 3 * (warmup + decay) + 20)
    got = s.epsilon(steps)
    ref = [julia_get_epsilon(kind, init, stable, warmup, decay, int(t)) for t in steps]
    if kind == "linear":
        assert got.tolist() == ref  # same operations, same order: exact
    else:
        np.testing.assert_allclose(got, ref, rtol=1e-15, atol=0)


@settings(max_examples=60, deadline=None)
@given(kind=st.sampled_from(["linear", "exp"]), init=st.floats(0, 1), stable=st.floats(0, 1),
       warmup=st.integers(0, 50), decay=st.integers(0, 50),
       steps=st.lists(st.integers(0, 200), min_size=1, max_size=30))
def test_explorer_matches_julia_random(kind, init, stable, warmup, decay, steps):
    s = ExplorerSchedule(kind=kind, epsilon_init=init, epsilon_stable=stable, warmup_steps=warmup,
                         decay_steps=decay)
    ref = [julia_get_epsilon(kind, init, stable, warmup, decay, t) for t in steps]
    np.testing.assert_allclose(s.epsilon(np.array(steps)), ref, rtol=1e-14, atol=1e-300)


def test_explorer_examples_from_the_docs():
    lin = ExplorerSchedule(kind="linear", epsilon_init=0.9, epsilon_stable=0.1, warmup_steps=100,
                           decay_steps=100)
    assert lin.epsilon(np.array([100, 150, 200])).tolist() == pytest.approx([0.9, 0.5, 0.1])
    exp = ExplorerSchedule(kind="exp", epsilon_init=0.9, epsilon_stable=0.1, warmup_steps=100,
                           decay_steps=100)
    assert exp.epsilon(np.array([200]))[0] == pytest.approx(0.1 + 0.8 * math.exp(-1))
    assert lin.steps(3).tolist() == [1, 2, 3]
    s = ExplorerSchedule(epsilon_stable=0.0, decay_steps=100)
    summary = s.summary(1000, threshold=0.5)
    # epsilon(step) = (100 - step) / 100 for step < 100: first < 0.5 at step 51
    assert summary.first_below == 51 and summary.steps_until_below == 50
    assert summary.expected_random_actions == pytest.approx(sum((100 - t) / 100 for t in range(1, 100)))
    assert s.julia() == ("EpsilonGreedyExplorer(kind=:linear, ϵ_init=1.0, ϵ_stable=0.0, "
                         "warmup_steps=0, decay_steps=100)")


@pytest.mark.parametrize("kw, message", [
    ({"epsilon_stable": 1.5}, "`epsilon_stable` should be in [0, 1] (a probability). Received 1.5."),
    ({"epsilon_stable": 0.1, "epsilon_init": -0.1}, "`epsilon_init` should be in [0, 1]"),
    ({"epsilon_stable": float("nan")}, "`epsilon_stable` should be a finite number"),
    ({"epsilon_stable": 0.1, "kind": "cosine"}, "`kind` should be 'linear' or 'exp'. Received 'cosine'."),
    ({"epsilon_stable": 0.1, "warmup_steps": -1}, "`warmup_steps` should be >= 0. Received -1."),
    ({"epsilon_stable": 0.1, "decay_steps": 2.5}, "`decay_steps` should be an integer. Received 2.5."),
])
def test_explorer_validation(kw, message):
    with pytest.raises(ParameterError) as info:
        ExplorerSchedule(**kw)
    assert message in str(info.value)


# ---------------------------------------------------------------------------
# kanachan
# ---------------------------------------------------------------------------


@pytest.mark.parametrize("first, last, annealing, increment", [
    (1.0, 0.1, 100, 1), (1.0, 0.1, 100, 7), (1.0, 0.1, 100, 100), (1.0, 0.1, 100, 250),
    (0.5, 0.5, 0, 3), (0.3, 0.0, 1, 1), (0.9, 0.05, 64, 64),
])
def test_kanachan_intended_and_actual_match_its_state_machine(first, last, annealing, increment):
    k = KanachanEpsilonGreedy(epsilon_first=first, epsilon_last=last, annealing_steps=annealing)
    n = 600
    steps = k.steps(n)
    assert k.intended(steps, increment=increment).tolist() == kanachan_loop(
        first, last, annealing, increment, n, intended=True)
    assert k.actual(steps, increment=increment).tolist() == kanachan_loop(
        first, last, annealing, increment, n, intended=False)


@settings(max_examples=60, deadline=None)
@given(first=st.floats(0, 1), frac=st.floats(0, 1), annealing=st.integers(1, 60), increment=st.integers(1, 80))
def test_kanachan_random(first, frac, annealing, increment):
    last = first * frac
    k = KanachanEpsilonGreedy(epsilon_first=first, epsilon_last=last, annealing_steps=annealing)
    steps = k.steps(200)
    assert k.intended(steps, increment=increment).tolist() == kanachan_loop(
        first, last, annealing, increment, 200, intended=True)
    assert k.actual(steps, increment=increment).tolist() == kanachan_loop(
        first, last, annealing, increment, 200, intended=False)


@settings(max_examples=60, deadline=None)
@given(increments=st.lists(st.integers(0, 30), max_size=20), annealing=st.integers(0, 25))
def test_kanachan_after_arbitrary_calls(increments, annealing):
    last = 0.25 if annealing else 1.0
    k = KanachanEpsilonGreedy(epsilon_first=1.0, epsilon_last=last, annealing_steps=annealing)
    code = KanachanEpsilonGreedyCode(1.0, last, annealing)
    ref = []
    for inc in increments:
        code.step(inc)
        ref.append(code.epsilon)
    assert k.actual_after_calls(increments).tolist() == ref


def test_kanachan_actual_never_anneals_with_small_increments():
    k = KanachanEpsilonGreedy(epsilon_first=1.0, epsilon_last=0.05, annealing_steps=10_000)
    actual = k.summary(50_000, threshold=0.5, increment=256)
    intended = k.summary(50_000, threshold=0.5, actual=False, increment=256)
    assert actual.first_below is None and actual.expected_random_actions == 50_000.0
    assert intended.first_below is not None and intended.expected_random_actions < 20_000
    jump = k.summary(50_000, threshold=0.5, increment=10_000)
    assert jump.first_below == 10_000 and jump.final_epsilon == 0.05


@pytest.mark.parametrize("kw, message", [
    ({"epsilon_first": 1.2, "epsilon_last": 0.1, "annealing_steps": 10}, "`epsilon_first` should be in [0, 1]"),
    ({"epsilon_first": 0.1, "epsilon_last": 0.2, "annealing_steps": 10},
     "`epsilon_last` should be <= epsilon_first (0.1). Received 0.2."),
    ({"epsilon_first": 0.5, "epsilon_last": -0.1, "annealing_steps": 10}, "`epsilon_last` should be in [0, 1]"),
    ({"epsilon_first": 0.5, "epsilon_last": 0.1, "annealing_steps": -1}, "`annealing_steps` should be >= 0"),
    ({"epsilon_first": 0.5, "epsilon_last": 0.1, "annealing_steps": 0},
     "`annealing_steps` should be > 0 unless epsilon_first == epsilon_last. Received 0."),
])
def test_kanachan_validation(kw, message):
    with pytest.raises(ParameterError) as info:
        KanachanEpsilonGreedy(**kw)
    assert message in str(info.value)


def test_step_arrays_and_increments_are_validated():
    k = KanachanEpsilonGreedy(epsilon_first=1.0, epsilon_last=0.0, annealing_steps=5)
    with pytest.raises(ParameterError, match="`increment` should be >= 1. Received 0."):
        k.actual(k.steps(3), increment=0)
    with pytest.raises(ParameterError, match="`steps` should be an integer array"):
        k.intended(np.array([0.5]))
    with pytest.raises(ParameterError, match=r"`steps` should be in \[0, 2\*\*52\]"):
        k.intended(np.array([-1]))


# ---------------------------------------------------------------------------
# Summary figures and snippets
# ---------------------------------------------------------------------------


def test_summary_figures_against_a_loop(monkeypatch):
    monkeypatch.setattr(schedules, "_CHUNK", 37)  # several chunks
    s = ExplorerSchedule(kind="exp", epsilon_init=0.8, epsilon_stable=0.02, warmup_steps=20, decay_steps=30)
    n, threshold = 500, 0.1
    eps = [julia_get_epsilon("exp", 0.8, 0.02, 20, 30, t) for t in range(1, n + 1)]
    summary = s.summary(n, threshold=threshold)
    assert summary.first_below == next(t for t, e in zip(range(1, n + 1), eps) if e < threshold)
    assert summary.expected_random_actions == pytest.approx(math.fsum(eps), rel=1e-12)
    assert summary.final_epsilon == pytest.approx(eps[-1], rel=1e-15)
    assert "expected random actions" in str(summary)
    assert first_step_below(np.arange(3), np.array([1.0, 1.0, 1.0]), 0.5) is None
    assert expected_random_actions(np.array([0.25, 0.25])) == 0.5
    with pytest.raises(ParameterError, match="`n_steps` should be >= 1"):
        s.summary(0)


def test_json_and_yaml_snippets():
    k = KanachanEpsilonGreedy(epsilon_first=1.0, epsilon_last=1e-05, annealing_steps=1000)
    assert json.loads(to_json(k)) == {"epsilon_first": 1.0, "epsilon_last": 1e-05, "annealing_steps": 1000}
    assert to_yaml(k) == "epsilon_first: 1.0\nepsilon_last: 1.0e-05\nannealing_steps: 1000\n"
    e = ExplorerSchedule(kind="exp", epsilon_stable=0.1, decay_steps=10)
    assert json.loads(to_json(e)) == {"kind": "exp", "ϵ_init": 1.0, "ϵ_stable": 0.1, "warmup_steps": 0,
                                      "decay_steps": 10}
    with pytest.raises(ParameterError, match="`schedule` should be an ExplorerSchedule"):
        to_json({"epsilon": 0.1})


def test_yaml_snippet_parses_as_yaml():
    yaml = pytest.importorskip("yaml")  # PyYAML is not a dependency; check with it when present
    for sched in (KanachanEpsilonGreedy(epsilon_first=0.5, epsilon_last=3e-07, annealing_steps=7),
                  ExplorerSchedule(kind="linear", epsilon_init=1.0, epsilon_stable=1e-10, decay_steps=5)):
        assert yaml.safe_load(to_yaml(sched)) == sched.to_config()
