"""Step tables: load throughput of a 10^7-step Parquet table, and the steps contract's TensorDict
building against kanachan's on rows of equal width."""

from __future__ import annotations

import tempfile
from pathlib import Path

import numpy as np
import polars as pl

import rewardlab
from rewardlab.contracts.kanachan.batching import FrameArrays
from rewardlab.contracts.steps import StepsArrays
from rewardlab.core.spec import FrameSpec, StateColumn
from rewardlab.sources.kanachan import schema as S
from benchmarks._data import SAMPLE, best_time, interleaved, tiled_frame, whole_episodes_head

STEPS = 10_000_000
EPISODE_LENGTH = 200


def step_table(n: int, seed: int = 0) -> pl.DataFrame:
    """``n`` steps of episodes of about :data:`EPISODE_LENGTH` steps: a few float columns and a
    4-float observation list (Gymnasium's CartPole shape), each episode ending terminated or truncated."""
    rng = np.random.default_rng(seed)
    episode = np.arange(n) // EPISODE_LENGTH
    t = (np.arange(n) % EPISODE_LENGTH).astype(np.int32)
    last = np.r_[episode[1:] != episode[:-1], True]
    cut = rng.random(n) < 0.3
    return pl.DataFrame({
        "episode_id": episode.astype(np.int64),
        "t": t,
        "obs": rng.standard_normal((n, 4), dtype=np.float32),
        "action": rng.integers(0, 2, n),
        "reward": rng.standard_normal(n),
        "time": np.arange(n, dtype=np.float64) * 0.02,
        "terminated": last & ~cut,
        "truncated": last & cut,
    })


def run(report) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "steps.parquet"
        step_table(STEPS).write_parquet(path)
        report(f"step table on disk ({STEPS:,} steps, Parquet as Polars writes it)",
               path.stat().st_size / STEPS, "B/step")
        t = best_time(lambda: rewardlab.load(path), repeat=2)
        report("Parquet step table load (rewardlab.load, detected, checked)", STEPS / t, "steps/s",
               "target >= 5e6")
        t = best_time(lambda: pl.read_parquet(path), repeat=2)
        report("  of which a raw pl.read_parquet", STEPS / t, "steps/s")
        final_rows = Path(tmp) / "steps_final.parquet"
        plain = pl.read_parquet(path).with_columns(final=pl.lit(False))
        ends = plain.filter(pl.col("terminated") | pl.col("truncated"))
        extra = ends.select("episode_id", (pl.col("t") + 1).alias("t"), "obs",
                            final=pl.lit(True))  # the state after each episode's last step
        with_finals = pl.concat([plain, extra], how="diagonal_relaxed").sort("episode_id", "t",
                                                                             maintain_order=True)
        with_finals.write_parquet(final_rows)
        t = best_time(lambda: rewardlab.load(final_rows), repeat=2)
        report(f"Parquet step table load, N+1 layout ({STEPS:,} steps + a final row per episode)", STEPS / t,
               "steps/s", "target >= 5e6")
        del plain, ends, extra, with_finals
        small = Path(tmp) / "steps.csv"
        table = step_table(1_000_000).with_columns(pl.col("obs").arr.get(i).alias(f"obs_{i}") for i in range(4))
        table.drop("obs").write_csv(small)
        t = best_time(lambda: rewardlab.load(small), repeat=2)
        report("CSV step table load, 10^6 steps (4 scalar obs columns)", 1_000_000 / t, "steps/s")

    # TensorDict building per row: kanachan's contract vs the steps contract on the same state columns
    kanachan = rewardlab.load_kanachan(SAMPLE, progress=False)
    million = whole_episodes_head(tiled_frame(kanachan, 1_100_000), 1_000_000)
    spec = FrameSpec(name="equal-width", episode=("episode",), step=S.STEP, terminated=S.END_OF_GAME,
                     states=tuple(StateColumn(c, million.schema[c].size,
                                              str(million.schema[c].inner).lower(), 0)
                                  for c in (S.SPARSE, S.NUMERIC, S.PROGRESSION, S.CANDIDATES)),
                     columns=(S.ACTION,), contract="steps")
    episode = pl.col(S.END_OF_GAME).cast(pl.UInt32).cum_sum().shift(1, fill_value=0).alias("episode")
    steps_frame = million.with_columns(episode).select(*spec.required)
    kan = FrameArrays(million)
    steps = StepsArrays(steps_frame, spec)
    rows = np.random.default_rng(0).permutation(million.height)
    for label, arg in (("one batch", None), ("shuffled rows", rows)):
        best = interleaved({"kanachan": lambda: kan.tensordict(arg), "steps": lambda: steps.tensordict(arg)},
                           repeat=3)
        tk, ts = best["kanachan"], best["steps"]
        report(f"kanachan TensorDict, {million.height:,} rows, {label}", million.height / tk, "rows/s")
        report(f"steps TensorDict, same state columns, {label}", million.height / ts, "rows/s")
        report(f"steps / kanachan time per row, {label}", ts / tk, "x", "target <= 1.5")

    # the same steps TensorDict when every state has its episodes' final states (next state on last steps)
    end = pl.col(S.END_OF_GAME)
    finals = steps_frame.with_columns(pl.when(end).then(pl.col(c)).alias(f"final_{c}") for c in spec.state_names)
    final_spec = FrameSpec(name="equal-width-final", episode=spec.episode, step=spec.step,
                           terminated=spec.terminated, columns=spec.columns, contract="steps",
                           states=tuple(StateColumn(s.name, s.width, s.dtype, s.pad, final=f"final_{s.name}")
                                        for s in spec.states))
    with_final = StepsArrays(finals, final_spec)
    for label, arg in (("one batch", None), ("shuffled rows", rows)):
        best = interleaved({"without": lambda: steps.tensordict(arg), "with": lambda: with_final.tensordict(arg)},
                           repeat=5)
        ts, tf = best["without"], best["with"]
        report(f"steps TensorDict with final states / without, time per row, {label}", tf / ts, "x",
               "target <= 1.25")
