"""Build the small Minari datasets committed under data/minari/ (see data/minari/README.md).

    .venv/bin/python scripts/make_minari_data.py [--out data/minari] [--overwrite]

Both are the same 8 episodes of ``MountainCar-v0`` cut at 130 steps
(``gymnasium.make("MountainCar-v0", max_episode_steps=130)``), collected by
Minari's own ``minari.DataCollector`` and written by ``create_dataset``:

* ``mountaincar-arrow-v0/``: Minari's ``arrow`` storage (one folder per episode);
* ``mountaincar-hdf5-v0/``: Minari's ``hdf5`` storage (``main_data.hdf5``).

Episode ``i`` starts from ``reset(seed=100 + i)``; the policy pushes in the
direction of the car's velocity (pumping energy) on 80% of its steps and
acts at random on the others (its own generator, seed 4).  Four episodes
are cut by the time limit (truncated), three reach the flag (terminated) and
one reaches it on its 130th step, which Gymnasium flags both ways.

Minari writes into ``$MINARI_DATASETS_PATH/<dataset_id>/data``: the script
points that variable at ``--out`` while it runs (never at ``~/.minari``) and
downloads nothing.  DataCollector needs jax (Minari's ``create`` extra; the
test extra pins it).  The same Minari, Gymnasium and seeds give the same
episodes (a test re-runs the script into a temporary folder and compares the
loaded frames); the files themselves differ in sizes and timestamps only.
"""

from __future__ import annotations

import argparse
import contextlib
import os
import shutil
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]

#: The environment, its time limit, the episodes and their first reset seed.
ENV_ID, MAX_STEPS, EPISODES, SEED = "MountainCar-v0", 130, 8, 100

#: Storage format -> dataset id (the folder under ``--out``).
DATASETS = {"arrow": "mountaincar-arrow-v0", "hdf5": "mountaincar-hdf5-v0"}


class PumpMostly:
    """MountainCar: push with the velocity (action 2 or 0) with probability ``p``, else a random action."""

    def __init__(self, p: float = 0.8, seed: int = 4):
        self.p = p
        self.rng = np.random.default_rng(seed)

    def __call__(self, obs) -> int:
        if self.rng.random() < self.p:
            return 2 if obs[1] >= 0 else 0
        return int(self.rng.integers(3))


@contextlib.contextmanager
def datasets_path(folder: Path):
    """Point Minari's ``MINARI_DATASETS_PATH`` at ``folder`` for a while (restored after)."""
    before = os.environ.get("MINARI_DATASETS_PATH")
    os.environ["MINARI_DATASETS_PATH"] = str(folder.resolve())
    try:
        yield
    finally:
        if before is None:
            del os.environ["MINARI_DATASETS_PATH"]
        else:
            os.environ["MINARI_DATASETS_PATH"] = before


def collect(data_format: str, dataset_id: str):
    """Collect the episodes with ``minari.DataCollector`` and write dataset ``dataset_id`` (MINARI_DATASETS_PATH)."""
    import gymnasium
    import minari

    env = minari.DataCollector(gymnasium.make(ENV_ID, max_episode_steps=MAX_STEPS), data_format=data_format)
    policy = PumpMostly()
    for episode in range(EPISODES):
        obs, _ = env.reset(seed=SEED + episode)
        while True:
            obs, _, terminated, truncated, _ = env.step(policy(obs))
            if terminated or truncated:
                break
    dataset = env.create_dataset(
        dataset_id, eval_env=env.spec, algorithm_name="scripted: push with the velocity 80% of the steps",
        author="rewardlab", author_email="n/a", code_permalink="scripts/make_minari_data.py (rewardlab)",
        description=f"{EPISODES} episodes of {ENV_ID} (time limit {MAX_STEPS}), reset seeds {SEED}-"
                    f"{SEED + EPISODES - 1}: rewardlab's test data for its Minari source")
    env.close()
    return dataset


def main(argv=None) -> None:
    import gymnasium
    import minari

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, default=ROOT / "data" / "minari", help="folder to write into")
    parser.add_argument("--overwrite", action="store_true", help="replace the datasets if they exist")
    args = parser.parse_args(argv)

    args.out.mkdir(parents=True, exist_ok=True)
    for dataset_id in DATASETS.values():
        target = args.out / dataset_id
        if target.exists():
            if not args.overwrite:
                parser.error(f"{target} exists; pass --overwrite to replace it")
            shutil.rmtree(target)
    print(f"Minari {minari.__version__}, Gymnasium {gymnasium.__version__}")
    with datasets_path(args.out):
        for data_format, dataset_id in DATASETS.items():
            dataset = collect(data_format, dataset_id)
            ends = [(int(e.terminations[-1]), int(e.truncations[-1])) for e in dataset.iterate_episodes()]
            size = sum(p.stat().st_size for p in (args.out / dataset_id).rglob("*") if p.is_file())
            print(f"{dataset_id}: {dataset.total_steps} steps, {dataset.total_episodes} episodes ending with "
                  f"Minari's flags: {sum(t for t, _ in ends)} terminations, {sum(u for _, u in ends)} truncations "
                  f"({sum(t and u for t, u in ends)} episode both), {size:,} bytes")


if __name__ == "__main__":
    main()
