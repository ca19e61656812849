"""The retro contest family over 10^7 timesteps: the vectorized reward (target >= 50M timesteps/s).

Synthetic step columns of the three Sonic games (episodes of 4,500 timesteps, the contest's limit; x a
random walk towards the level's end, lives and acts changing now and then) built once; then timed:
``contest_rewards`` on them (the family's evaluation once its inputs are read), with each baseline option,
the episode columns (start x, act-change shift, furthest x) that a recording's frame gets once, and the
plain-loop twin on a slice for the speed-up.  The Lua reference (``tests/retro_lua.py``) is the
correctness check, not timed here.
"""

from __future__ import annotations

import numpy as np

from benchmarks._data import best_time
from rewardlab.domains.retro.contest import (ContestSteps, contest_rewards, contest_rewards_loop, episode_columns,
                                             level_codes, level_end_x)
from rewardlab.sources.retro.levels import SONIC_GAMES, level_table

TIMESTEPS = 10_000_000
EPISODE = 4_500


def synthetic_steps(n: int, *, seed: int = 0) -> tuple[ContestSteps, np.ndarray]:
    """About ``n`` timesteps of random contest play, as :class:`ContestSteps`, and the rows' episode starts.

    Episodes of :data:`EPISODE` steps (``EPISODE + 1`` states, the last one final) on random levels of the
    three games: x a random walk from a start in 50..200, a life lost or an act changed now and then, the
    camera 160 pixels behind.
    """
    rng = np.random.default_rng(seed)
    codes, max_x = level_codes({g: level_table(g) for g in SONIC_GAMES})
    episodes = -(-n // EPISODE)
    level = codes[rng.integers(0, codes.size, episodes)]
    per = EPISODE + 1
    rows = episodes * per
    start = np.zeros(rows, bool)
    start[::per] = True
    walk = np.cumsum(rng.integers(-3, 6, rows))
    x = np.repeat(rng.integers(50, 200, episodes), per) + walk - np.repeat(walk[start], per)
    lives = np.repeat(rng.integers(3, 5, episodes), per) - (rng.random(rows) < 1e-4).cumsum() % 2
    act = np.repeat(level % 256, per) + (rng.random(rows) < 2e-4).cumsum() % 2
    screen_x = np.maximum(x - 160, 0)
    games = np.repeat(level // 65536, per)
    start_x, shift, reach = episode_columns(start, x, act, screen_x, games)
    frame = np.tile(np.arange(per) * 4, episodes)
    end, _ = level_end_x(codes, max_x, np.repeat(level, per))
    here = np.flatnonzero(~np.roll(start, -1))  # every row but an episode's final state
    nxt = here + 1
    zeros = np.zeros(here.size, np.int64)
    steps = ContestSteps(game=games[here], end_x=(end - start_x)[here].astype(np.float64), start_x=start_x[here],
                         shift=shift[here], reach=reach[here], x=x[here], lives=lives[here], act=act[here],
                         screen_x=screen_x[here], next_x=x[nxt], next_lives=lives[nxt], next_act=act[nxt],
                         next_screen_x=screen_x[nxt], next_frame=frame[nxt], next_game_mode=zeros,
                         next_special_stage=zeros)
    return steps, start


def run(report) -> None:
    steps, start = synthetic_steps(TIMESTEPS)
    n = len(steps)
    report("timesteps", n, "steps")
    for label, options in (("contest", {}), ("scaler", {"scaler": True}), ("backtracking", {"backtracking": True})):
        t = best_time(lambda: contest_rewards(steps, **options))
        target = "target >= 50M timesteps/s" if label == "contest" else None
        report(f"contest_rewards ({label}) over 10^7 timesteps", t, "s")
        report(f"  throughput ({label})", n / t, "timesteps/s", target)
    rows = start.size
    rng = np.random.default_rng(1)
    x = rng.integers(0, 10000, rows)
    act = (rng.random(rows) < 1e-3).cumsum() % 2
    games = np.full(rows, 2)
    t = best_time(lambda: episode_columns(start, x, act, x, games), repeat=2)
    report("episode_columns (start x, act shift, furthest x), per row", t / rows * 1e9, "ns")
    part = 20_000
    first = np.zeros(part, bool)
    first[0] = True
    sliced = ContestSteps(**{f: getattr(steps, f)[:part] for f in steps.__dataclass_fields__})
    t_loop = best_time(lambda: contest_rewards_loop(sliced, first=first), repeat=1) / part
    t_vec = best_time(lambda: contest_rewards(steps)) / n
    report("contest_rewards_loop (plain loop), per timestep", t_loop * 1e9, "ns")
    report("vectorized speed-up over the loop", t_loop / t_vec, "x")
