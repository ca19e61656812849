"""The retro contest tuner's recompute on 10^6 timesteps (target: under 50 ms per change).

The Sonic sample (``data/retro/sonic_sample.parquet``, simulated) is repeated with fresh episode ids until it
holds at least 10^6 timesteps; :class:`rewardlab.sessions.ContestSession` reads it once (timed apart), then
each change is timed as a user makes it: a new scale, bonus or frame limit, a baseline option toggled, a
level's end x edited (a new table: its steps and finish probe are computed once) and the undo back to a
table already seen.  Each figure is the median (and the worst) of repeated changes.
"""

from __future__ import annotations

import gc
import statistics
import time

import polars as pl

import rewardlab
from benchmarks._data import ROOT
from rewardlab.core.spec import attach, attached

SAMPLE = ROOT / "data" / "retro" / "sonic_sample.parquet"
TIMESTEPS = 1_000_000
REPEATS = 20


def big_recording(min_steps: int = TIMESTEPS) -> pl.DataFrame:
    """The sample's step frame repeated with fresh episode ids until it has at least ``min_steps`` rows."""
    frame = rewardlab.load(SAMPLE, format="retro")
    spec = attached(frame)
    span = int(frame["episode_id"].max()) + 1
    copies = -(-min_steps // frame.height)
    big = pl.concat([frame.with_columns(pl.col("episode_id") + k * span) for k in range(copies)], rechunk=True)
    return attach(big, spec)


def _timed(fn) -> float:
    gc.collect()
    t0 = time.perf_counter()
    fn()
    return time.perf_counter() - t0


def run(report) -> None:
    from rewardlab.sessions import ContestSession

    frame = big_recording()
    t0 = time.perf_counter()
    session = ContestSession(frame)
    report(f"contest session: read {frame.height:,} timesteps (once)", time.perf_counter() - t0, "s")
    report("  episodes", session.results.episodes.height, "episodes")

    changes = {
        "scale": [{"scale": 9000.0 + k} for k in range(REPEATS)],
        "bonus": [{"bonus": 1000.0 - k} for k in range(REPEATS)],
        "frame limit": [{"frame_limit": 18000 + k} for k in range(REPEATS)],
        "backtracking toggled": [{"backtracking": k % 2 == 0} for k in range(REPEATS)],
        "scaler toggled": [{"scaler": k % 2 == 0} for k in range(REPEATS)],
    }
    for label, updates in changes.items():
        times = [_timed(lambda u=u: session.update(**u)) for u in updates]
        report(f"contest recompute, {label}, median", statistics.median(times) * 1e3, "ms", target="< 50 ms")
        report(f"contest recompute, {label}, worst of {REPEATS}", max(times) * 1e3, "ms", target="< 50 ms")
        report("  of which the session's _compute (the last change)", session.recompute_seconds * 1e3, "ms")

    game, state, _ = session.level_choices[0]
    new_table = [_timed(lambda k=k: session.set_level_end(game, state, 7000 + k)) for k in range(REPEATS)]
    report("contest recompute, a level's end x edited (new table), median", statistics.median(new_table) * 1e3,
           "ms", target="< 50 ms")
    report(f"contest recompute, a level's end x edited, worst of {REPEATS}", max(new_table) * 1e3, "ms",
           target="< 50 ms")
    undo = [_timed(session.undo) for _ in range(5)]
    report("contest recompute, undo to a table seen before, median", statistics.median(undo) * 1e3, "ms",
           target="< 50 ms")
