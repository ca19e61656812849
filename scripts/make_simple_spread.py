"""Record the small MPE simple_spread recording committed under data/pettingzoo/ (see data/pettingzoo/README.md).

    .venv/bin/python scripts/make_simple_spread.py [--out data/pettingzoo] [--overwrite]

``simple_spread.parquet``: mpe2's ``simple_spread_v3.parallel_env(N=3,
local_ratio=0.5, max_cycles=25)`` (discrete actions), 40 episodes from
reset seed 0, recorded with ``rewardlab.record_parallel``.  Every agent plays
:class:`NearestLandmark`: with probability 0.25 a uniformly random action,
otherwise the move along the larger axis towards its nearest landmark (so
agents often head for the same landmark and collide, and the local part of
the reward is not always zero).  Besides each agent's ``reward`` the table
holds the two parts MPE mixes it from, computed from the environment right
after each step (:func:`reward_parts`):

* ``global_reward``: ``Scenario.global_reward(world)``, minus the sum over
  landmarks of the distance to the nearest agent (the same for every agent);
* ``local_reward``: ``Scenario.reward(agent, world)``, minus one per other
  agent the agent collides with;

and mpe2's ``SimpleEnv._execute_world_step`` pays each agent
``global_reward * (1 - local_ratio) + local_reward * local_ratio``.
The script prints the versions it ran with and the file's SHA-256.
"""

from __future__ import annotations

import argparse
import hashlib
from pathlib import Path

import numpy as np
import polars as pl

from rewardlab.sources.pettingzoo.recorder import record_parallel

ROOT = Path(__file__).resolve().parents[1]
NAME = "simple_spread.parquet"

#: The recording's parameters (data/pettingzoo/README.md states them).
N, LOCAL_RATIO, MAX_CYCLES, EPISODES, SEED, EPSILON = 3, 0.5, 25, 40, 0, 0.25


class NearestLandmark:
    """simple_spread: with probability ``epsilon`` a random action, else a move towards the nearest landmark.

    An agent's observation is ``[vel (2), pos (2), landmarks relative (2 N),
    other agents relative (2 (N - 1)), communication (2 (N - 1))]``; actions
    are ``0`` no move, ``1`` left, ``2`` right, ``3`` down, ``4`` up.
    """

    def __init__(self, n: int, epsilon: float):
        self.n, self.epsilon = n, epsilon

    def __call__(self, obs, agent, rng) -> int:
        if rng.random() < self.epsilon:
            return int(rng.integers(5))
        landmarks = np.asarray(obs[4:4 + 2 * self.n], dtype=np.float64).reshape(self.n, 2)
        dx, dy = landmarks[int(np.argmin(np.hypot(landmarks[:, 0], landmarks[:, 1])))]
        if abs(dx) >= abs(dy):
            return 2 if dx > 0 else 1
        return 4 if dy > 0 else 3


def reward_parts(env) -> dict:
    """The ``step_columns`` giving MPE's two reward parts, read from the environment after each step."""
    def world():
        return env.unwrapped.world

    def global_part(env, agent):
        return env.unwrapped.scenario.global_reward(world())

    def local_part(env, agent):
        body = next(a for a in world().agents if a.name == agent)
        return env.unwrapped.scenario.reward(body, world())

    return {"global_reward": global_part, "local_reward": local_part}


def make_env():
    from mpe2 import simple_spread_v3

    return simple_spread_v3.parallel_env(N=N, local_ratio=LOCAL_RATIO, max_cycles=MAX_CYCLES,
                                         continuous_actions=False)


def record(path=None, *, overwrite: bool = False) -> pl.DataFrame:
    """The recording (written to ``path`` when given)."""
    env = make_env()
    return record_parallel(env, NearestLandmark(N, EPSILON), episodes=EPISODES, seed=SEED, path=path,
                           overwrite=overwrite, step_columns=reward_parts(env))


def sha256(path: Path) -> str:
    return hashlib.sha256(Path(path).read_bytes()).hexdigest()


def main(argv=None) -> None:
    import importlib.metadata as md

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, default=ROOT / "data" / "pettingzoo",
                        help="folder to write to (must exist)")
    parser.add_argument("--overwrite", action="store_true", help="replace an existing file")
    args = parser.parse_args(argv)
    path = args.out / NAME
    frame = record(path, overwrite=args.overwrite)
    print(", ".join(f"{p} {md.version(p)}" for p in ("pettingzoo", "mpe2", "gymnasium", "numpy", "polars", "pyarrow")))
    steps = frame.filter(~pl.col("final"))
    print(f"{NAME}: {frame.height} rows ({steps.height} agent-steps, {frame['final'].sum()} final rows), "
          f"{frame['episode_id'].n_unique()} episodes, collisions on {int((steps['local_reward'] < 0).sum())} "
          f"agent-steps, {path.stat().st_size:,} bytes, sha256 {sha256(path)}")


if __name__ == "__main__":
    main()
