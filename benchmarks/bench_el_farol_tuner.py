"""The El Farol tuner's recompute: what one change of a parameter costs, and where the time goes.

A change of ``kind``, ``capacity`` or ``clamp`` re-evaluates the reward on every (week, agent) and runs the
alignment analysis (``samples`` own and others' changes per (week, agent), ``resamples`` bootstrap
resamples) and the per-agent constants; a change of ``agents`` or ``nights`` also simulates the bar again
(the first time for each pair; the last few are kept).  Measured with the session's defaults (50 agents,
6 nights, 4 episodes x 50 weeks: 10,000 agent-steps, ``samples=4``, ``resamples=200``), with the large
setting's 168 agents and 7 nights, and with the analysis' every-other-night enumeration for scale.  The
target is an interactive change: under 1 s with the defaults.
"""

from __future__ import annotations

import time

from benchmarks._data import best_time
from rewardlab.sessions.el_farol import ElFarolSession


def _cycle(session: ElFarolSession, changes) -> float:
    """Mean seconds of :meth:`ElFarolSession.update` over ``changes`` (recompute, no observers)."""
    t0 = time.perf_counter()
    for change in changes:
        session.update(**change)
    return (time.perf_counter() - t0) / len(changes)


def run(report) -> None:
    session = ElFarolSession()
    rows = session.results.rewards.size
    report("agent-steps analysed (defaults: 50 agents, 4 x 50 weeks)", rows, "agent-steps")
    kinds = [{"kind": k} for k in ("G", "local", "WL", "D")]
    report("recompute after a change of kind (mean over G, local, WL, D)",
           best_time(lambda: _cycle(session, kinds), repeat=2), "s", "target < 1 s")
    report("recompute after a change of capacity", best_time(lambda: _cycle(session, [{"capacity": 3.0},
                                                                                      {"capacity": 4.0}]),
                                                             repeat=2), "s", "target < 1 s")
    t0 = time.perf_counter()
    session.update(agents=60)
    report("change of agents, first time (simulates again)", time.perf_counter() - t0, "s")
    session.update(agents=50)
    t0 = time.perf_counter()
    session.update(agents=60)
    report("change of agents, again (simulation kept)", time.perf_counter() - t0, "s")
    t0 = time.perf_counter()
    session.update(agents=168, nights=7)
    report("recompute with 168 agents, 7 nights (LARGE's setting)", time.perf_counter() - t0, "s")
    report("  of which the last recompute", session.recompute_seconds, "s")
    exact = ElFarolSession(samples=5)
    report("recompute with samples=5 (as many own changes as every other night)",
           best_time(lambda: _cycle(exact, kinds[:2]), repeat=1), "s")
