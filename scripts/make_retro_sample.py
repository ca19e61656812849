"""Write the simulated Sonic sample data/retro/sonic_sample.parquet (see data/retro/README.md).

    .venv/bin/python scripts/make_retro_sample.py [--out data/retro/sonic_sample.parquet] [--overwrite]

There is no Sonic ROM to ship, so this is **not** emulator output: a small
side-scroller simulation, seeded, that writes the variables a stable-retro
recording of the Sonic games holds, in the retro source's layout
(:mod:`rewardlab.sources.retro.layout`), with what the contest's evaluation
does around the game:

- levels, start values and level ends are real: each episode starts from
  the installed stable-retro ``.state`` file's RAM (``x``, ``y``, ``lives``,
  ``zone``, ``act``, ``screen_x``, ... read by
  :func:`rewardlab.sources.retro.levels.state_values`) and runs towards
  ``level_max_x`` of ``script.lua`` (:func:`~rewardlab.sources.retro.levels.level_table`);
- one timestep is 4 emulator frames with the contest's sticky frame skip
  (``retro_contest.StochasticFrameSkip(n=4, stickprob=0.25)``: on a step's
  first frame the previous action sticks with probability 0.25, the new one
  takes over on the second frame; the loop breaks on done, so the last step
  may be shorter), and ``TimeLimit(max_episode_steps=4500)`` truncates;
- the episode ends (terminated) on the emulator frame where the contest
  script's ``contest_done`` would: ``lives`` below the previous frame's, or
  progress ``clip(x + offset_x, 0, end_x) / end_x >= 1`` (with S3K's
  ``offset_x`` correction by the ``screen_x`` jump on the frame the act
  changes: AIZ and ICZ act 1 change act mid-level here, as in the game);
- the recorded ``reward`` is the simulation's own: the change of the
  act-corrected x over the step (pixels), **not** the contest reward
  (compute that with the contest family, checked against the Lua).

The game itself is a toy: a ground speed with acceleration and friction,
walls that stop a runner on the ground, hazards that cost the rings or, with
none, a life (after a 90-frame death), rings and enemies, jumps on the B
button; policies over the 7 actions of retro-baselines' ``SonicDiscretizer``
(recorded as ``action``, 0-6): ``runner`` (right, jumping what it sees
ahead), ``careless`` (right, jumping at random) and ``timid`` (hesitant,
rarely jumps: stuck at a wall until the time limit).
"""

from __future__ import annotations

import argparse
import math
from pathlib import Path

import numpy as np
import polars as pl

from rewardlab.core.files import atomic_path
from rewardlab.sources.retro.levels import level_key, level_table, state_values

ROOT = Path(__file__).resolve().parents[1]
OUT = ROOT / "data" / "retro" / "sonic_sample.parquet"

SEED = 2018
FRAMES, STICKPROB, MAX_STEPS = 4, 0.25, 4500
#: SonicDiscretizer's actions: LEFT, RIGHT, LEFT+DOWN, RIGHT+DOWN, DOWN, DOWN+B, B.
LEFT, RIGHT, LEFT_DOWN, RIGHT_DOWN, DOWN, DOWN_B, B = range(7)

S1, S2, S3K = "SonicTheHedgehog-Genesis-v0", "SonicTheHedgehog2-Genesis-v0", "SonicAndKnuckles3-Genesis-v0"
#: (game, state, policies of its episodes).
EPISODES = [
    (S1, "GreenHillZone.Act1", ("runner", "runner", "careless", "timid")),
    (S1, "MarbleZone.Act2", ("runner", "careless")),
    (S1, "StarLightZone.Act3", ("runner", "careless")),
    (S2, "EmeraldHillZone.Act1", ("runner", "runner", "careless", "timid")),
    (S2, "ChemicalPlantZone.Act2", ("runner", "careless")),
    (S2, "MetropolisZone.Act3", ("runner", "careless")),
    (S3K, "AngelIslandZone.Act1", ("runner", "runner", "careless", "timid")),
    (S3K, "IcecapZone.Act1", ("runner", "careless")),
    (S3K, "HydrocityZone.Act2", ("runner", "careless")),
]
#: S3K levels whose act changes mid-level here: level key -> (x where it changes, x shift of the new act).
ACT_CHANGES = {"zone=0,act=0": (13000, 0x2E00), "zone=5,act=0": (20000, 0x4000)}

VARIABLES = ("act", "game_mode", "level_end_bonus", "lives", "rings", "score", "screen_x", "screen_x_end",
             "screen_y", "special_stage", "x", "y", "zone")


class Level:
    """A level's walls, hazards, rings and enemies between the start and the end, from its own generator."""

    def __init__(self, start: int, end: int, rng: np.random.Generator):
        span = end - start
        self.walls = np.sort(rng.uniform(start + 300, end - 200, max(2, span // 1500)).astype(int))
        self.hazards = np.sort(rng.uniform(start + 200, end - 100, max(3, span // 900)).astype(int))
        self.rings = np.sort(rng.uniform(start, end, max(10, span // 150)).astype(int))
        self.enemies = np.sort(rng.uniform(start + 100, end, max(3, span // 1200)).astype(int))

    @staticmethod
    def crossed(points: np.ndarray, a: float, b: float) -> np.ndarray:
        lo, hi = (a, b) if a <= b else (b, a)
        return points[(points > lo) & (points <= hi)]

    @staticmethod
    def ahead(points: np.ndarray, x: float, distance: float) -> bool:
        k = np.searchsorted(points, x, side="right")
        return k < points.size and points[k] - x <= distance


class Sonic:
    """The simulated game state and one emulator frame of it."""

    def __init__(self, game: str, start: dict, level: Level):
        self.game, self.level = game, level
        self.v = {name: start.get(name) for name in VARIABLES}
        self.x = float(start["x"])
        self.speed, self.air, self.dying = 0.0, 0, 0
        self.ground_y = int(start["y"])
        self.shift = 0  # sum of the act changes' x shifts (act-corrected x = x + shift)
        self.change = ACT_CHANGES.get(level_key(start["zone"], start["act"])) if game == S3K else None

    def frame(self, action: int) -> None:
        v = self.v
        if self.dying:
            self.dying -= 1
            v["y"] += 4
            if self.dying == 0:
                v["lives"] -= 1
            return
        right, left = action in (RIGHT, RIGHT_DOWN), action in (LEFT, LEFT_DOWN)
        if action in (B, DOWN_B) and self.air == 0:
            self.air = 40
        if right:
            self.speed = min(6.0, self.speed + (0.5 if self.speed < 0 else 0.09))
        elif left:
            self.speed = max(-6.0, self.speed - (0.5 if self.speed > 0 else 0.09))
        else:
            self.speed -= math.copysign(min(abs(self.speed), 0.05), self.speed)
        old, new = self.x, self.x + self.speed
        lv = self.level
        if self.air == 0:
            wall = lv.crossed(lv.walls, old + self.shift, new + self.shift)
            if wall.size and self.speed > 0:
                new, self.speed = float(wall[0] - 1 - self.shift), 0.0
            hazard = lv.crossed(lv.hazards, old + self.shift, new + self.shift)
            if hazard.size:
                if v["rings"] > 0:
                    v["rings"], self.speed = 0, -2.0
                    new = old
                else:
                    self.dying, self.speed = 90, 0.0
                    new = old
        else:
            self.air -= 1
            v["score"] += 100 * lv.crossed(lv.enemies, old + self.shift, new + self.shift).size
        v["rings"] += lv.crossed(lv.rings, old + self.shift, new + self.shift).size
        self.x = max(0.0, new)
        height = 0 if self.air == 0 else int(self.air * (40 - self.air) / 5)
        v["y"] = self.ground_y + int(30 * math.sin((self.x + self.shift) / 300)) - height
        v["x"] = int(self.x)
        v["screen_x"] = max(0, v["x"] - 160)
        v["screen_y"] = max(0, v["y"] - 96)
        if self.game == S2:
            v["game_mode"] = 12
        if self.change is not None and v["act"] == 0 and self.x + self.shift >= self.change[0]:
            shift = self.change[1]  # the new act's coordinates: x and the camera jump back together
            self.shift += shift
            self.x -= shift
            v["x"], v["screen_x"], v["act"] = int(self.x), max(0, int(self.x) - 160), 1

    def progress_x(self) -> float:
        return self.x + self.shift


class ContestDone:
    """``contest_done`` of the game's script.lua, frame by frame (with ``calc_progress``'s state)."""

    def __init__(self, game: str, table: dict):
        self.game, self.table = game, table
        self.prev_lives, self.offset_x, self.end_x = 3, None, None
        self.prev_act = self.prev_screen_x = None

    def __call__(self, v: dict) -> bool:
        if self.game == S2 and v["game_mode"] == 16:
            return True
        if self.game == S3K and v["special_stage"] != 0:
            return True
        if v["lives"] < self.prev_lives:
            return True
        self.prev_lives = v["lives"]
        return self.progress(v) >= 1

    def progress(self, v: dict) -> float:
        if self.offset_x is None:
            self.offset_x = -v["x"]
            self.prev_act, self.prev_screen_x = v["act"], v["screen_x"]
            self.end_x = self.table[level_key(v["zone"], v["act"])] - v["x"]
        if self.game == S3K:
            if v["act"] != self.prev_act:
                self.offset_x -= v["screen_x"] - self.prev_screen_x
            self.prev_act, self.prev_screen_x = v["act"], v["screen_x"]
        return min(max(v["x"] + self.offset_x, 0), self.end_x) / self.end_x


def policy(kind: str, sonic: Sonic, rng: np.random.Generator) -> int:
    lv, x = sonic.level, sonic.progress_x()
    if kind == "timid":  # never jumps; brakes before a wall or hazard and dithers there until the time limit
        if lv.ahead(lv.walls, x, 80) or lv.ahead(lv.hazards, x, 80):
            return LEFT
        return RIGHT if rng.random() < 0.7 else DOWN
    if kind == "runner" and (lv.ahead(lv.walls, x, 40) or lv.ahead(lv.hazards, x, 40)):
        return B if rng.random() < 0.85 else RIGHT
    if kind == "careless" and rng.random() < 0.03:
        return B
    return int(rng.choice([RIGHT, RIGHT, RIGHT, RIGHT, RIGHT_DOWN, LEFT, DOWN_B]))


def episode(game: str, state: str, kind: str, rng: np.random.Generator) -> dict:
    """One episode's rows (N steps, then the final row) as columns."""
    start = state_values(game, state)
    table = level_table(game)
    end = table[level_key(start["zone"], start["act"])]
    sonic = Sonic(game, start, Level(start["x"], end, rng))
    done_rule = ContestDone(game, table)
    rows = {name: [] for name in ("t", "frame", "action", "reward", "terminated", "truncated", *VARIABLES)}

    def snapshot(t, frame):
        rows["t"].append(t)
        rows["frame"].append(frame)
        for name in VARIABLES:
            rows[name].append(sonic.v[name])

    frame, current, done = 0, None, False
    for t in range(MAX_STEPS):
        snapshot(t, frame)
        action = policy(kind, sonic, rng)
        before = sonic.progress_x()
        for i in range(FRAMES):  # retro_contest.StochasticFrameSkip.step
            if current is None:
                current = action
            elif i == 0:
                if rng.random() > STICKPROB:
                    current = action
            elif i == 1:
                current = action
            sonic.frame(current)
            frame += 1
            done = done_rule(sonic.v)
            if done:
                break
        rows["action"].append(action)
        rows["reward"].append(float(sonic.progress_x() - before))
        rows["terminated"].append(done)
        rows["truncated"].append(t + 1 == MAX_STEPS)  # gymnasium's TimeLimit
        if done:
            break
    snapshot(len(rows["action"]), frame)
    for name in ("action", "reward", "terminated", "truncated"):
        rows[name].append(None)
    return rows


def make_sample(seed: int = SEED) -> pl.DataFrame:
    """The sample's table (every episode, in order)."""
    children = np.random.SeedSequence(seed).spawn(sum(len(p) for _, _, p in EPISODES))
    parts, k = [], 0
    for game, state, kinds in EPISODES:
        for kind in kinds:
            rows = episode(game, state, kind, np.random.default_rng(children[k]))
            n = len(rows["t"])
            final = [False] * (n - 1) + [True]
            parts.append(pl.DataFrame({
                "episode_id": [k] * n, "t": rows["t"], "final": final, "game": [game] * n, "state": [state] * n,
                "frame": rows["frame"], "action": rows["action"], "reward": rows["reward"],
                "terminated": rows["terminated"], "truncated": rows["truncated"],
                **{name: rows[name] for name in VARIABLES}},
                schema={"episode_id": pl.Int64, "t": pl.Int64, "final": pl.Boolean, "game": pl.String,
                        "state": pl.String, "frame": pl.Int64, "action": pl.Int64, "reward": pl.Float64,
                        "terminated": pl.Boolean, "truncated": pl.Boolean, **{v: pl.Int64 for v in VARIABLES}}))
            k += 1
    return pl.concat(parts)


def write_sample(path: Path, *, seed: int = SEED, overwrite: bool = False) -> pl.DataFrame:
    """Write the sample to ``path`` (plain Parquet, zstd); returns the table."""
    table = make_sample(seed)
    with atomic_path(path, overwrite=overwrite) as tmp:
        table.write_parquet(tmp, compression="zstd", compression_level=19, statistics=False)
    return table


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, default=OUT, help="the file to write")
    parser.add_argument("--seed", type=int, default=SEED, help="the simulation's seed")
    parser.add_argument("--overwrite", action="store_true", help="replace an existing file")
    args = parser.parse_args(argv)
    table = write_sample(args.out, seed=args.seed, overwrite=args.overwrite)
    print(f"wrote {table.height:,} rows, {table['episode_id'].n_unique()} episodes to {args.out} "
          f"({args.out.stat().st_size:,} bytes)")


if __name__ == "__main__":
    main()
