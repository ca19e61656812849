"""Record the small Gymnasium samples committed under data/gym/ (see data/gym/README.md).

    .venv/bin/python scripts/record_samples.py [--out data/gym] [--overwrite]

* ``cartpole_random.parquet``: CartPole-v1, a uniformly random policy
  (``env.action_space.sample()``, seeded by the recorder), 50 episodes from
  seed 0.  Random play always falls over long before CartPole's 500-step
  limit, so every episode ends terminated.
* ``mountaincar_scripted.parquet``: MountainCar-v0, a scripted policy that
  pushes in the direction of the car's velocity (pumping energy) on a
  random half of its steps and acts at random on the others (its own
  generator, seed 7), 20 episodes from seed 100.  About half the episodes
  reach the flag (terminated; a flag reached on the 200th step is flagged both
  ways by Gymnasium and recorded as terminated), the others are cut by the
  200-step time limit (truncated).

The committed files were recorded with Gymnasium 1.4.0 (the ``gym`` extra's
pin; the script prints the version it ran with).  Their columns are what
``rewardlab.record`` writes: ``episode_id``, ``t``, ``obs``, ``action``,
``reward_recorded``, ``done_recorded``, ``terminated``, ``truncated``.  The
same Gymnasium version and seeds give the same tables (the test compares the loaded frames).
"""

from __future__ import annotations

import argparse
from pathlib import Path

import numpy as np
import polars as pl

import rewardlab

ROOT = Path(__file__).resolve().parents[1]


class PumpSometimes:
    """MountainCar: push with the velocity (action 2 or 0) with probability ``p``, else a random action."""

    def __init__(self, p: float = 0.5, seed: int = 7):
        self.p = p
        self.rng = np.random.default_rng(seed)

    def __call__(self, obs) -> int:
        if self.rng.random() < self.p:
            return 2 if obs[1] >= 0 else 0
        return int(self.rng.integers(3))


def main(argv=None) -> None:
    import gymnasium

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, default=ROOT / "data" / "gym", help="folder to write to (must exist)")
    parser.add_argument("--overwrite", action="store_true", help="replace existing files")
    args = parser.parse_args(argv)

    cartpole = gymnasium.make("CartPole-v1")
    mountaincar = gymnasium.make("MountainCar-v0")
    recordings = {
        "cartpole_random.parquet": rewardlab.record(
            cartpole, lambda obs: cartpole.action_space.sample(), episodes=50, seed=0,
            path=args.out / "cartpole_random.parquet", overwrite=args.overwrite),
        "mountaincar_scripted.parquet": rewardlab.record(
            mountaincar, PumpSometimes(), episodes=20, seed=100,
            path=args.out / "mountaincar_scripted.parquet", overwrite=args.overwrite),
    }
    print(f"Gymnasium {gymnasium.__version__}")
    for name, frame in recordings.items():
        ends = frame.group_by("episode_id").agg(pl.col("terminated").last(), pl.col("truncated").last())
        print(f"{name}: {frame.height} steps, {ends.height} episodes, {int(ends['terminated'].sum())} terminated, "
              f"{int(ends['truncated'].sum())} truncated, {(args.out / name).stat().st_size:,} bytes")


if __name__ == "__main__":
    main()
