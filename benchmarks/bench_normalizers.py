"""Normalizer replays on 1 million steps: the compiled kernels, ``normalized_rewards`` and the session recompute.

The replays of Gymnasium's ``NormalizeReward`` and SB3's ``VecNormalize``
are sequential loops compiled by numba (bit for bit with the real classes);
before them a vectorized closed form took about 60 ms per replay and
``normalized_rewards`` about 140 ms per million steps on the shared 2-core
test machine.  The ``NormalizationSession`` recompute after a change of
gamma (the replays and their summary; the scope's statistics are kept per
reward and scope) has a target of 50 ms.
"""

from __future__ import annotations

import statistics
import time

import numpy as np

import rewardlab
from benchmarks._data import SAMPLE, best_time, tiled_frame
from benchmarks.bench_stats import FLAGS, _rewards_of
from rewardlab.analysis.normalizers import gymnasium_normalize_reward, normalized_rewards, sb3_normalize_reward

ROWS = 1_000_000


def run(report) -> None:
    from rewardlab.sessions import NormalizationSession

    frame = rewardlab.load_kanachan(SAMPLE, progress=False)
    steps = tiled_frame(_rewards_of(frame), ROWS)
    r = steps["reward_points"].to_numpy()
    d = steps["done_points"].to_numpy()
    gymnasium_normalize_reward(r[:10], d[:10])  # compiled (or loaded from numba's cache) before timing
    sb3_normalize_reward(r[:10], d[:10])
    report("steps in the replay input", steps.height, "rows")
    report("Gymnasium NormalizeReward replay (compiled), 1M steps", best_time(
        lambda: gymnasium_normalize_reward(r, d)) * 1e3, "ms")
    report("SB3 VecNormalize replay (compiled), 1M steps", best_time(lambda: sb3_normalize_reward(r, d)) * 1e3, "ms")
    report("normalized_rewards (frame layer, both replays), 1M steps", best_time(
        lambda: normalized_rewards(steps, "points", spec=FLAGS)) * 1e3, "ms")

    session = NormalizationSession(steps, reward="points", scope="all", spec=FLAGS)
    times = []
    for gamma in np.linspace(0.9, 0.999, 12):
        t0 = time.perf_counter()
        session.update(gamma=float(gamma))
        times.append(time.perf_counter() - t0)
    report("NormalizationSession recompute, new gamma, 1M steps, median", statistics.median(times) * 1e3, "ms",
           target="< 50 ms")
    t0 = time.perf_counter()
    session.update(scope="nonzero")
    report("NormalizationSession recompute, new scope (statistics too)", (time.perf_counter() - t0) * 1e3, "ms")
