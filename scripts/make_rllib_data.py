"""Record real RLlib offline output (PPO on CartPole-v1) for rewardlab's tests: ``data/rllib/``.

Runs a few PPO iterations with RLlib's offline output turned on, three times:

* the old API stack writing JSON lines of ``SampleBatch`` with
  ``batch_mode="truncate_episodes"`` (episodes continue over lines), no
  column compressed -> ``old_stack_json/``;
* the same with RLlib's default ``output_compress_columns`` (``obs`` and
  ``new_obs`` packed: cloudpickle, LZ4 frame, base64) -> ``old_stack_compressed/``;
* the new API stack writing Parquet rows (one step a row) -> ``new_stack_parquet/``.

Each run also saves RLlib's own statistics of every episode that ended
(``on_episode_end``: episode id, length and return as RLlib counts them) to
``stats.json`` beside its data, for the tests to check the loaded frames against.

Needs the ``rllib-data`` extra (``pip install -e '.[rllib-data]'``; not part of
``make test``).  Run from the repository root::

    python scripts/make_rllib_data.py --out data/rllib

The output folder must not exist yet (nothing is overwritten) unless
``--overwrite``.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import sys
from pathlib import Path

SEED = 7

EPISODES: list[dict] = []  # filled by the callbacks (num_env_runners=0: the sampling runs in this process)


def _callbacks():
    from ray.rllib.callbacks.callbacks import RLlibCallback

    class Record(RLlibCallback):
        """Keeps RLlib's own account of each finished episode."""

        def on_episode_end(self, *, episode, prev_episode_chunks=None, **kwargs):
            if hasattr(episode, "id_"):  # new API stack: the last chunk plus the chunks returned before
                chunks = [*(prev_episode_chunks or []), episode]
                EPISODES.append({"eps_id": str(episode.id_), "agent": None,
                                 "length": int(sum(len(c) for c in chunks)),
                                 "return": float(sum(c.get_return() for c in chunks)),
                                 "terminated": bool(episode.is_terminated),
                                 "truncated": bool(episode.is_truncated)})
            else:  # old API stack: EpisodeV2
                EPISODES.append({"eps_id": int(episode.episode_id), "agent": 0,
                                 "length": int(episode.length), "return": float(episode.total_reward)})

    return Record


def _config(new_stack: bool, out: Path, compress: bool):
    from ray.rllib.algorithms.ppo import PPOConfig

    config = (
        PPOConfig()
        .api_stack(enable_rl_module_and_learner=new_stack, enable_env_runner_and_connector_v2=new_stack)
        .environment("CartPole-v1")
        .env_runners(num_env_runners=0, num_envs_per_env_runner=1, rollout_fragment_length=250,
                     batch_mode="truncate_episodes")
        .training(train_batch_size=1000, minibatch_size=250, num_epochs=2)
        .callbacks(_callbacks())
        .debugging(seed=SEED)
        .reporting(metrics_num_episodes_for_smoothing=1000)
    )
    if new_stack:
        return config.offline_data(output=str(out), output_write_episodes=False,
                                   output_compress_columns=[], output_max_rows_per_file=1000,
                                   output_write_remaining_data=True,
                                   # one Parquet file per write, not one per row (Ray Data's blocks)
                                   output_write_method_kwargs={"min_rows_per_file": 1000})
    # output_write_episodes is a new-stack setting; its default (True) would demand complete episodes
    return config.offline_data(output=str(out), output_write_episodes=False,
                               output_compress_columns=["obs", "new_obs"] if compress else [])


def record(new_stack: bool, out: Path, *, iterations: int, compress: bool = False) -> dict:
    """Train PPO for ``iterations`` with offline output into ``out``; returns the run's statistics."""
    EPISODES.clear()
    algo = _config(new_stack, out, compress).build_algo()
    results = []
    for _ in range(iterations):
        r = algo.train()
        runners = r.get("env_runners", {})
        results.append({k: runners.get(k) for k in ("num_env_steps_sampled", "num_episodes",
                                                     "episode_len_mean", "episode_return_mean")
                        if k in runners})
    algo.stop()
    import ray

    return {"ray_version": ray.__version__, "api_stack": "new" if new_stack else "old",
            "compress_columns": ["obs", "new_obs"] if compress else [], "iterations": iterations,
            "seed": SEED, "episodes": list(EPISODES), "results": results}


def _plain(value):
    """NumPy scalars in RLlib's results as plain JSON numbers."""
    if hasattr(value, "item"):
        return value.item()
    raise TypeError(f"cannot write {type(value).__name__} as JSON")


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--out", default="data/rllib")
    parser.add_argument("--iterations", type=int, default=3)
    parser.add_argument("--overwrite", action="store_true")
    parser.add_argument("--only", choices=("old", "compressed", "new"), action="append")
    args = parser.parse_args(argv)
    out = Path(args.out)
    runs = {"old": ("old_stack_json", False, False), "compressed": ("old_stack_compressed", False, True),
            "new": ("new_stack_parquet", True, False)}
    import ray

    ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False)
    for key in args.only or list(runs):
        folder, new_stack, compress = runs[key]
        target = out / folder
        if target.exists():
            if not args.overwrite:
                print(f"{target} exists; pass --overwrite to replace it", file=sys.stderr)
                return 1
            shutil.rmtree(target)
        target.mkdir(parents=True)
        iterations = 1 if compress else args.iterations
        stats = record(new_stack, (target / "data").absolute(), iterations=iterations, compress=compress)
        (target / "stats.json").write_text(json.dumps(stats, indent=1, default=_plain) + "\n")
        files = sorted(str(p.relative_to(target)) for p in (target / "data").rglob("*") if p.is_file())
        print(f"{key}: {len(stats['episodes'])} finished episodes; files: {files}")
    ray.shutdown()
    return 0


if __name__ == "__main__":
    os.environ.setdefault("RAY_DEDUP_LOGS", "0")
    sys.exit(main())
