"""The retro contest reward as the game's own Lua computes it: the independent reference of the vectorized one.

Each Sonic game's installed ``script.lua`` (stable-retro's ``contest.json``:
``done = lua:contest_done``, ``reward = lua:contest_reward``) runs in Lua 5.1
through lupa, frame by frame in retro's order, with nothing of rewardlab in
between:

* a **fresh Lua runtime per episode** with globals ``data`` (a plain table:
  the RAM variables set before every frame, the script's own ``data.*``
  variables kept between frames, ``nil`` reading back as ``nil`` as retro's
  custom variables do) and ``scenario`` (``scenario.frame``), then the
  script's top level (``data.prev_lives = 3``, ...), as ``reset()`` reloads
  the scripts (stable-retro ``src/retro.cpp`` ``PyGameData::reset``);
* ``reset()`` then runs one ``update_ram()``, which calls
  ``Scenario::update()`` on the reset state: done, then reward, results
  dropped (``src/data.cpp``: ``m_done = calculateDone();`` then the rewards,
  then ``++m_frame``).  So ``offset_x`` and ``end_x`` are fixed from row 0;
* every emulator frame of a timestep: ``contest_done()`` **before**
  ``contest_reward()``; the contest's ``StochasticFrameSkip`` (openai/retro-contest
  ``support/retro_contest/__init__.py``) sums the frames' rewards and breaks
  on done; ``TimeLimit(4500)`` cuts the episode outside the script.

**What a recording holds, and the frame mapping.**  A recording keeps every
timestep's state, not every frame's: row ``t`` holds the state before step
``t`` and ``frame(t)``, the emulator frames since reset before that state.
Step ``t`` ran ``n = frame(t+1) - frame(t)`` frames.  The reference feeds them
as the only sequence consistent with the recording: frames ``1 .. n-1`` see
the state before the step (row ``t``, held constant: the script already saw
it on the previous step's last frame, so it can neither end the episode nor
pay anything; had the level ended earlier in the step the wrapper would have
broken there and ``n`` would be smaller), and frame ``n`` sees the state after
it (row ``t+1``).  ``scenario.frame`` on frame ``j`` of step ``t`` is
``frame(t) + j + FRAME_OFFSET``: **the script saw ``scenario.frame = frame(t+1)``
on step t's last frame** (``FRAME_OFFSET = 0``; the reset evaluation sees
``frame(0)``, 0), as stable-retro's C++ counts: the reset's own update is
frame 0 and the k-th emulator frame after it is frame k (checked on the real
emulator by ``tests/test_record_retro.py``).  Issue 24 had
``frame(t+1) - 1``; ``frame_offset=-1`` runs that convention.

The per-frame rewards are Lua doubles, summed in Python floats per step in
frame order, exactly the values the script computes; retro itself hands each
frame's reward through a C++ ``float`` (``Scenario::calculateReward``), which
``float32=True`` reproduces.

Examples
--------
>>> table = lua_level_table("SonicTheHedgehog-Genesis-v0")
>>> table["zone=0,act=1"] == 0x1F60
True
>>> rows = {"x": [80, 80 + 0x1F60], "lives": [3, 3], "zone": [0, 0], "act": [1, 1], "screen_x": [0, 0],
...         "frame": [0, 4]}
>>> out = run_episode("SonicTheHedgehog-Genesis-v0", rows)
>>> out.dones, round(out.rewards[0], 6)
([True], 9999.777778)
"""

from __future__ import annotations

import dataclasses
import functools
from pathlib import Path

import lupa.lua51 as lua51
import numpy as np

#: The contest games and the RAM variables their ``contest_done`` / ``contest_reward`` read.
GAME_VARIABLES = {
    "SonicTheHedgehog-Genesis-v0": ("x", "lives", "zone", "act"),
    "SonicTheHedgehog2-Genesis-v0": ("x", "lives", "zone", "act", "game_mode"),
    "SonicAndKnuckles3-Genesis-v0": ("x", "lives", "zone", "act", "screen_x", "special_stage"),
}

#: ``scenario.frame`` on step t's last frame is ``frame(t+1) + FRAME_OFFSET`` (the recording layout's convention).
FRAME_OFFSET = 0


def script_path(game: str) -> Path:
    """The installed stable-retro ``script.lua`` of ``game``."""
    import stable_retro

    return Path(stable_retro.__file__).parent / "data" / "stable" / game / "script.lua"


@functools.lru_cache(maxsize=None)
def script_text(game: str) -> str:
    """The text of the installed ``script.lua`` of ``game`` (read once)."""
    return script_path(game).read_text()


def fresh_runtime(game: str):
    """A fresh Lua 5.1 runtime with ``data``, ``scenario`` and the script's top level run (what reset does)."""
    runtime = lua51.LuaRuntime(unpack_returned_tuples=True)
    runtime.execute("data = {}; scenario = {frame = 0}")
    runtime.execute(script_text(game))
    return runtime


def lua_level_table(game: str) -> dict[str, int]:
    """``level_max_x`` of ``game``'s script as Lua evaluates it: ``{"zone=Z,act=A": end_x}``."""
    table = fresh_runtime(game).globals().level_max_x
    return {str(k): int(v) for k, v in table.items()}


@dataclasses.dataclass
class EpisodeRun:
    """One episode through the script.

    Attributes
    ----------
    rewards : list of float
        Per step reached: the sum of its frames' rewards (Lua doubles; float32-rounded with ``float32=True``).
    dones : list of bool
        Per step reached: whether ``contest_done`` said done on one of its frames (the loop broke there).
    frames : list of int
        Per step reached: the frames it ran (fewer than recorded when done came on a held frame).
    """

    rewards: list
    dones: list
    frames: list


def run_episode(game: str, rows: dict, *, frame_offset: int = FRAME_OFFSET, float32: bool = False) -> EpisodeRun:
    """Run one recorded episode (rows ``t = 0..N``, the last one the final state) through ``game``'s script.

    Parameters
    ----------
    game : str
        One of :data:`GAME_VARIABLES`.
    rows : dict
        ``{variable: sequence of N + 1 values}`` holding at least the
        variables the script reads and ``frame``.
    frame_offset : int
        ``scenario.frame`` on step t's last frame is ``frame(t+1) + frame_offset``.
    float32 : bool
        Round each frame's reward to a C ``float`` as retro does.

    Returns
    -------
    EpisodeRun
        Stops after the first step that is done, as the contest's loop does.
    """
    names = GAME_VARIABLES[game]
    frame = [int(v) for v in rows["frame"]]
    values = {name: list(rows[name]) for name in names}
    n_rows = len(frame)
    runtime = fresh_runtime(game)
    g = runtime.globals()
    data, scenario = g.data, g.scenario
    done_fn, reward_fn = g.contest_done, g.contest_reward

    def show(row: int, scenario_frame: int) -> tuple[bool, float]:
        for name in names:
            value = values[name][row]
            data[name] = None if value is None else int(value)
        scenario.frame = scenario_frame
        done = bool(done_fn())  # done before reward, every frame
        reward = float(reward_fn())
        if float32:
            reward = float(np.float32(reward))
        return done, reward

    show(0, frame[0] + frame_offset)  # reset(): update_ram() runs the scenario once; its results are dropped
    out = EpisodeRun([], [], [])
    for t in range(n_rows - 1):
        n = frame[t + 1] - frame[t]
        if n < 1:
            raise ValueError(f"step {t}: frame does not advance ({frame[t]} -> {frame[t + 1]})")
        total, done, ran = 0.0, False, 0
        for j in range(1, n + 1):
            done, reward = show(t if j < n else t + 1, frame[t] + j + frame_offset)
            total += reward
            ran += 1
            if done:
                break
        out.rewards.append(total)
        out.dones.append(done)
        out.frames.append(ran)
        if done:
            break
    return out


def allow_backtracking(rewards) -> list:
    """retro-baselines ``AllowBacktracking`` over one episode's rewards: only new maxima of their running sum.

    ``self._cur_x += rew; rew = max(0, self._cur_x - self._max_x); self._max_x = max(self._max_x, self._cur_x)``,
    from ``_cur_x = _max_x = 0`` at reset.
    """
    cur = best = 0.0
    out = []
    for rew in rewards:
        cur += rew
        out.append(max(0, cur - best))
        best = max(best, cur)
    return out


def reward_scaler(rewards) -> list:
    """retro-baselines ``RewardScaler``: ``reward * 0.01``."""
    return [r * 0.01 for r in rewards]
