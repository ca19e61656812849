"""Multi-agent alignment on El Farol: the joint view and the alignment analysis over 10^6 agent-steps,
and vectorized difference rewards over 10^7 agent-steps.

The bar problem's shipped small setting (50 agents, 6 nights, b = 4): 10^6 agent-steps are 20,000 joint
steps.  The alignment analysis evaluates every counterfactual as a full joint action (an own change and
an others' change per (step, agent) with ``samples=1``: 2 x 10^6 joint actions of 50 agents, through
``difference_reward`` and ``global_reward``), plus the bootstrap (1000 resamples); target < 5 s.  With
``samples=None`` (every other night: 5 own changes per (step, agent)) it does five times the work; that
figure is reported too.  The difference rewards are timed against their brute force
(``difference_reward_loop``, which recomputes G without each agent) on a slice, per agent-step.
"""

from __future__ import annotations

import time

import numpy as np

from benchmarks._data import best_time
from rewardlab.analysis.alignment import alignment
from rewardlab.analysis.joint import joint_view
from rewardlab.core.spec import FrameSpec
from rewardlab.domains.el_farol import (
    SMALL, difference_reward, difference_reward_loop, global_reward, simulate_actions, simulate_bar,
)

SPEC = FrameSpec(name="el_farol", episode=("episode_id", "agent_id"), step="t", agent="agent_id",
                 terminated="terminated", truncated="truncated", columns=("action",))
AGENT_STEPS = 1_000_000
DIFFERENCE_AGENT_STEPS = 10_000_000


def run(report) -> None:
    bar = SMALL.reward_options()
    weeks = AGENT_STEPS // (SMALL.agents * 10)
    frame = simulate_bar(SMALL, episodes=10, weeks=weeks, seed=0)
    report("agent-steps in the alignment input (50 agents, 10 episodes)", frame.height, "rows")
    t0 = time.perf_counter()
    view = joint_view(frame, spec=SPEC)
    report("joint_view over 10^6 agent-steps", time.perf_counter() - t0, "s")

    def g_fn(a, s):
        return global_reward(a, **bar)

    def d_fn(a, s):
        return difference_reward(a, **bar)

    t = best_time(lambda: alignment(view, d_fn, g_fn, samples=1, seed=0), repeat=2)
    report("alignment, D against G, samples=1, 10^6 agent-steps", t, "s", "target < 5 s")
    report("alignment throughput, samples=1 (counterfactual joint actions)", 2 * AGENT_STEPS / t, "joint actions/s")
    t0 = time.perf_counter()
    result = alignment(view, d_fn, g_fn, samples=None, seed=0)
    report("alignment, D against G, every other night (5 per agent-step)", time.perf_counter() - t0, "s")
    report("  its factoredness (D: 1 expected)", result.overall_factoredness, "")
    report("  its learnability", result.overall_learnability, "")

    steps = DIFFERENCE_AGENT_STEPS // SMALL.agents
    actions = simulate_actions(SMALL, episodes=1, weeks=steps, seed=1)[0]
    t = best_time(lambda: difference_reward(actions, **bar))
    report("difference_reward over 10^7 agent-steps (vectorized)", t, "s")
    report("difference_reward throughput", DIFFERENCE_AGENT_STEPS / t, "agent-steps/s")
    part = actions[:200]
    t_loop = best_time(lambda: difference_reward_loop(part, **bar), repeat=1) / part.size
    report("difference_reward_loop (brute force), per agent-step", t_loop * 1e6, "us")
    report("vectorized speed-up over the brute force", t_loop * DIFFERENCE_AGENT_STEPS / t, "x")
    assert np.allclose(difference_reward(part, **bar), difference_reward_loop(part, **bar))
