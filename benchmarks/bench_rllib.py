"""RLlib offline data load throughput (format="rllib"), steps per second.

The committed real output (``data/rllib/``, PPO on CartPole with Ray 2.60.0) is
tiled in a temporary folder to a few 10^5 steps, each copy's episodes under
fresh ids (an episode id may appear once): old-stack JSON lines as RLlib
writes them (every PPO column, 250 steps a line), the same with ``obs`` /
``new_obs`` compressed, and new-stack Parquet rows.  Each figure is the best
of two loads, every check included (new_obs against the next obs, step
order, flags).
"""

from __future__ import annotations

import json
import tempfile
from pathlib import Path

import polars as pl

import rewardlab
from benchmarks._data import ROOT, best_time

DATA = ROOT / "data" / "rllib"
STEPS = 300_000


def _tile_json(folder: Path, out: Path, steps: int) -> int:
    (source,) = sorted((folder / "data").glob("*.json"))
    lines = [json.loads(x) for x in source.read_bytes().splitlines()]
    ids: dict[int, int] = {}
    for line in lines:
        for eps in line["policy_batches"]["default_policy"]["eps_id"]:
            ids.setdefault(eps, len(ids))
    per_copy = sum(x["count"] for x in lines)
    copies = -(-steps // per_copy)
    with open(out, "w") as f:
        for k in range(copies):
            for line in lines:
                batch = dict(line["policy_batches"]["default_policy"])
                batch["eps_id"] = [ids[e] + k * len(ids) for e in batch["eps_id"]]
                f.write(json.dumps({**line, "policy_batches": {"default_policy": batch}}) + "\n")
    return copies * per_copy


def _tile_parquet(out: Path, steps: int) -> int:
    frames = [pl.read_parquet(p, columns=["eps_id", "agent_id", "obs", "actions", "rewards", "new_obs",
                                          "terminateds", "truncateds"])
              for p in sorted((DATA / "new_stack_parquet" / "data").rglob("*.parquet"))]
    one = pl.concat(frames)
    copies = -(-steps // one.height)
    tiled = pl.concat([one.with_columns(pl.col("eps_id") + f"-{k}") for k in range(copies)])
    tiled.write_parquet(out, row_group_size=100_000)
    return tiled.height


def run(report) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        tmp = Path(tmp)
        cases = [("old-stack JSON lines", _tile_json(DATA / "old_stack_json", tmp / "plain.json", STEPS),
                  tmp / "plain.json"),
                 ("old-stack JSON lines, obs/new_obs compressed (LZ4)",
                  _tile_json(DATA / "old_stack_compressed", tmp / "packed.json", STEPS), tmp / "packed.json"),
                 ("new-stack Parquet", _tile_parquet(tmp / "rows.parquet", STEPS), tmp / "rows.parquet")]
        for label, steps, path in cases:
            size = path.stat().st_size
            seconds = best_time(lambda: rewardlab.load(path, format="rllib", options={"unfinished": "truncate"}),
                                repeat=2)
            report(f"{label}: {steps:,} steps, {size / 2**20:.0f} MiB", steps / seconds, "steps/s")
