"""Sessions: the ranking tuner's recompute path on 1 million transitions (target: under 50 ms).

The session reads the dataset once (rank table and prepared frame); each
change of the rank vector, the points term or the constants is then a gather
over episodes plus a few reductions.  Also reported: the one-off preparation,
and the whole widget update (recompute + redraw of the statistics and the
PNG figure), which is what a user waits for after committing a value.
"""

from __future__ import annotations

import gc
import statistics
import time

import numpy as np

import rewardlab
from benchmarks._data import SAMPLE, tiled_frame

ROWS = 1_000_000
REPEATS = 40


def _timed(fn) -> float:
    t0 = time.perf_counter()
    fn()
    return time.perf_counter() - t0


def run(report) -> None:
    from rewardlab.sessions import RankingTuningSession

    frame = tiled_frame(rewardlab.load_kanachan(SAMPLE, progress=False), ROWS)
    gc.collect()
    t0 = time.perf_counter()
    session = RankingTuningSession(frame, preset="tenhou_tokujo_6dan")
    report(f"ranking session: prepare {frame.height:,} transitions (once)", time.perf_counter() - t0, "s")

    rng = np.random.default_rng(0)
    vectors = [tuple(float(x) for x in rng.normal(0.0, 50.0, 4)) for _ in range(REPEATS)]
    times = [_timed(lambda v=v: session.update(vector=v)) for v in vectors]
    report(f"ranking recompute, new rank vector ({session.table.episodes:,} episodes), median",
           statistics.median(times) * 1e3, "ms", target="< 50 ms")
    report("ranking recompute, new rank vector, worst of 40", max(times) * 1e3, "ms", target="< 50 ms")

    session.update(points=True, offset=25000, divisor=1000)
    times = [_timed(lambda k=k: session.update(divisor=100 + k)) for k in range(REPEATS)]
    report("ranking recompute, points term, median", statistics.median(times) * 1e3, "ms", target="< 50 ms")

    session.update(auto_constants=True)
    times = [_timed(lambda v=v: session.update(vector=v)) for v in vectors]
    report("ranking recompute with constants refitted from data, median", statistics.median(times) * 1e3,
           "ms", target="< 50 ms")

    try:
        from rewardlab.widgets import RankingTuner
    except ImportError:  # the lab extra is not installed
        return
    tuner = RankingTuner(session)
    times = [_timed(lambda v=v: setattr(tuner.rank_inputs[3], "value", v[3])) for v in vectors[:10]]
    report("tuner widget update (recompute + statistics + PNG redraw), median", statistics.median(times) * 1e3,
           "ms")
