"""Plug-in runner: overhead of apply_plugins next to one big get_reward call, and throughput per mode.

The reference is the least any runner can do: build one TensorDict of all
rows with the foundation's builder (``FrameArrays(frame).tensordict()``) and
call the plug-in once.  ``apply_plugins`` additionally cuts the rows into
batches, builds a fresh TensorDict per call, checks the contract after every
call and collects the results into columns.

The target (runner overhead <= 1.5x) is measured in ``sequential`` mode at
its default batch size (8,192 rows per call): the mode for bulk runs over
millions of transitions, as kanachan's data loader feeds the plug-in.  It is
measured as users run it, with the plug-in in a child process (the default:
``isolate=None``), and also in-process (``isolate=False``), so the cost of the
child (a fork and the results sent back) is visible.  The other modes are
reported too (in-process, where the time spent inside ``get_reward`` can be
measured).  ``episodes`` (one call per episode, about
125 rows here) and ``fragments`` (64 rows) pay a fixed cost per call, mostly
inside the plug-in itself (a dozen small torch operations per call), which
the single big call does not; ``shuffled`` gathers rows instead of slicing.
The same run over the frame cut into shards of 10,000 rows
(:mod:`rewardlab.plugins.shards`) is compared with one frame: streaming
should cost little (each window's arrays are joined once).

The reference's time depends a lot on the machine: it allocates about 1.5 GB
at once, and first-touch page faults can make it several times slower than
the same build into memory already mapped.  The runner works in bounded
chunks (:data:`rewardlab.plugins.runner.CHUNK_ROWS`) and reuses its memory, so its
ratio is measured against the best of several interleaved repeats.
"""

from __future__ import annotations

import dataclasses
import gc
import time
from pathlib import Path

import torch

import rewardlab
from benchmarks._data import SAMPLE, tiled_frame, whole_episodes_head
from rewardlab.plugins.batch_modes import DEFAULT_BATCH_SIZES
from rewardlab.contracts.kanachan.batching import FrameArrays
from rewardlab.plugins import apply_plugins, load_plugin
from rewardlab.plugins.shards import split_shards

PLUGIN = Path(__file__).resolve().parents[1] / "data" / "plugins" / "rank_top.py"
N_ROWS = 1_000_000
REPEAT = 3


def _time(fn) -> float:
    gc.collect()
    t0 = time.perf_counter()
    fn()
    return time.perf_counter() - t0


def run(report) -> None:
    sample = rewardlab.load_kanachan(SAMPLE, progress=False)
    frame = whole_episodes_head(tiled_frame(sample, N_ROWS), N_ROWS)
    n = frame.height
    plugin = load_plugin(PLUGIN)

    def one_call():
        data = FrameArrays(frame).tensordict()
        with torch.no_grad():
            plugin.get_reward(data, False)
        return data["next", "reward"]

    def bulk():
        return apply_plugins(frame, plugin, batch_mode="sequential", progress=False)

    def bulk_here():
        return apply_plugins(frame, plugin, batch_mode="sequential", isolate=False, progress=False)

    shards = split_shards(frame, rows_per_shard=10_000)

    def bulk_shards():
        return apply_plugins(shards, plugin, batch_mode="sequential", isolate=False, progress=False)

    baseline = runner = here = sharded = float("inf")
    for _ in range(REPEAT):  # interleaved, so all see the same machine
        baseline = min(baseline, _time(one_call))
        runner = min(runner, _time(bulk))
        here = min(here, _time(bulk_here))
        sharded = min(sharded, _time(bulk_shards))
    size = DEFAULT_BATCH_SIZES["sequential"]
    report(f"one TensorDict of {n:,} rows + one get_reward (rank_top)", baseline, "s")
    report(f"apply_plugins sequential x{size} (default size, child process)", runner, "s")
    report(f"apply_plugins sequential x{size} / one call", runner / baseline, "x", "<= 1.5")
    report(f"apply_plugins sequential x{size} in-process / one call", here / baseline, "x")
    report(f"apply_plugins sequential x{size} in-process, {len(shards)} shards / one frame",
           sharded / here, "x", "<= 1.5")

    inside = [0.0, 0]

    def timed(data, contiguous, _get_reward=plugin.get_reward):
        t0 = time.perf_counter()
        _get_reward(data, contiguous)
        inside[0] += time.perf_counter() - t0
        inside[1] += 1

    timed_plugin = dataclasses.replace(plugin, get_reward=timed)
    for mode, size in (("episodes", None), ("sequential", 1024), ("dataloader", None),
                       ("fragments", None), ("shuffled", None), ("shuffled", 1024)):
        inside[:] = [0.0, 0]
        seconds = _time(lambda: apply_plugins(frame, timed_plugin, batch_mode=mode, batch_size=size,
                                              isolate=False, progress=False))
        label = mode if mode == "episodes" else f"{mode} x{size or DEFAULT_BATCH_SIZES[mode]}"
        report(f"apply_plugins {label}", n / seconds, "transitions/s")
        report(f"apply_plugins {label} / one call", seconds / baseline, "x")
        report(f"apply_plugins {label}: runner time per call (outside get_reward)",
               (seconds - inside[0]) / inside[1] * 1e6, "us")
