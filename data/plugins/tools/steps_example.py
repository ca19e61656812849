"""The example step table behind ``data/plugins/steps/scale_recorded.py``, and that file's export.

Not a plug-in (it imports rewardlab).  ``example_table()`` builds a small,
deterministic random-walk step table (60 episodes, seed 2024: a position and
velocity per step, a recorded reward, episodes that end terminated at the
goal or truncated at 40 steps); running the script measures the recorded
reward's normalization constants on it and exports the scaling plug-in again:

    .venv/bin/python data/plugins/tools/steps_example.py

Measure the constants on your own step table before training with the file:
``rewardlab export scaling --data YOUR_TABLE --reward recorded --out scaled.py``.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import polars as pl

import rewardlab
from rewardlab.core.spec import FrameSpec, StateColumn, attach

SPEC = FrameSpec(name="example_walk", episode=("episode_id",), step="t", terminated="terminated",
                 truncated="truncated", states=(StateColumn("obs", 2, "float32", 0.0),),
                 columns=("action", "reward_recorded"), contract="steps")
OUT = Path(__file__).resolve().parents[1] / "steps" / "scale_recorded.py"
SOURCE = "data/plugins/tools/steps_example.py (example random walk: 60 episodes, seed 2024)"


def example_table(episodes: int = 60, seed: int = 2024, limit: int = 40) -> pl.DataFrame:
    """A random walk towards a goal at position 3: one row per step, the spec attached."""
    rng = np.random.default_rng(seed)
    rows = {k: [] for k in ("episode_id", "t", "obs", "action", "reward_recorded", "terminated", "truncated")}
    for e in range(episodes):
        position, velocity = float(rng.normal()), 0.0
        for t in range(limit):
            action = int(rng.integers(0, 3))
            rows["episode_id"].append(e)
            rows["t"].append(t)
            rows["obs"].append([position, velocity])
            rows["action"].append(action)
            velocity = 0.5 * velocity + (action - 1) * 0.5 + float(rng.normal(scale=0.1))
            position += velocity
            goal = position >= 3.0
            rows["reward_recorded"].append(1.0 if goal else -0.01 * abs(position))
            rows["terminated"].append(goal)
            rows["truncated"].append(not goal and t == limit - 1)
            if goal:
                break
    frame = pl.DataFrame(rows, schema={"episode_id": pl.Int64, "t": pl.Int64, "obs": pl.Array(pl.Float32, 2),
                                       "action": pl.Int64, "reward_recorded": pl.Float64,
                                       "terminated": pl.Boolean, "truncated": pl.Boolean})
    # the layout of a step-table source: the recorded reward and its episode ends (done_recorded)
    frame = frame.with_columns(done_recorded=pl.col("terminated") | pl.col("truncated"))
    frame = frame.select("episode_id", "t", "obs", "action", "reward_recorded", "done_recorded", "terminated",
                         "truncated")
    return attach(frame, SPEC)


def main() -> None:
    frame = example_table()
    constants = rewardlab.normalization_constants(frame, "recorded")
    result = rewardlab.export_scaling_plugin(constants, OUT, data=frame, overwrite=True, source=SOURCE)
    print(result)


if __name__ == "__main__":
    main()
