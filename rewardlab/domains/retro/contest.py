"""The retro contest reward (Sonic), vectorized over timesteps, with a plain-loop twin beside each function.

The contest's ``script.lua`` (stable-retro's three Sonic integrations) pays,
on every emulator frame, the change in *progress* towards the level's end::

    progress = clip(x + offset_x, 0, end_x) / end_x
    offset_x = -x0,  end_x = level_max_x["zone=Z0,act=A0"] - x0      (fixed at the episode's first frame)
    reward   = (progress - prev_progress) * 9000
             + (1 - clip(scenario.frame / 18000, 0, 1)) * 1000     (once progress >= 1)
    done     = lives < prev_lives  or  progress >= 1
               or game_mode == 16 (Sonic 2)  or  special_stage != 0 (Sonic 3 & Knuckles)

and Sonic 3 & Knuckles corrects ``offset_x`` by the ``screen_x`` jump when the
act changes mid-level.  A recording holds one row per *timestep* (4 emulator
frames; the loop breaks on done), not per frame.  Progress telescopes, so a
timestep's reward is the difference of the progress of its two states
(exact); the bonus needs the frame at which the level was finished, which the
recording's ``frame`` column gives: the script saw ``scenario.frame =
frame(t+1) + FRAME_OFFSET`` (``FRAME_OFFSET = 0``) on step t's last frame.
stable-retro's C++ evaluates the script once at reset on frame 0 (``reset()``
then ``update_ram()`` runs ``Scenario::update``), so the k-th emulator frame
after reset sees ``scenario.frame == k``, and ``frame`` counts the emulator
frames stepped since reset (:mod:`rewardlab.sources.retro.recorder`; its test
``test_the_frame_column_is_the_scenarios_frame_counter`` runs a scenario of
its own on the real emulator and pins this).  Issue 24 assumed
``frame(t+1) - 1``, one frame earlier: the emulator says otherwise (the
bonus differs by ``bonus / frame_limit``, about 0.056).

What a per-step recording cannot see: the S3K act-change correction uses the
``screen_x`` change between the frame before the act changes and that frame;
a recording has it only over the whole timestep (up to 4 frames), so the
correction here adds the camera's ordinary scrolling over the step's other
frames (at most 3 frames of it; S3K's camera moves at most 16 pixels a
frame, so at most 48 pixels): every later progress is off by at most
``48 / end_x`` (``9000 * 48 / end_x`` reward in all, about 26 on Angel
Island act 1), and the level's end may be seen one step early or late.  The
same held-state rule is what ``tests/retro_lua.py`` feeds the real script,
and there the two agree exactly.

The functions work on per-timestep columns (:class:`ContestSteps`: each
step's state before and after, and the episode's constants); they are pure,
NumPy arrays in and out (:func:`contest_rewards` runs one compiled pass,
:mod:`~rewardlab.domains.retro.kernels`):

* :func:`episode_columns` (twin :func:`episode_columns_loop`): per row, the
  episode's start x, the accumulated S3K act-change shift, and the furthest
  shifted x reached so far, from episode starts;
* :func:`level_end_x`: ``level_max_x`` of each episode's starting level, from
  a level table;
* :func:`contest_rewards` (twin :func:`contest_rewards_loop`, a per-episode
  walk that keeps the script's own state): rewards and dones, with the
  baselines' options ``scaler`` (``RewardScaler``, x 0.01) and
  ``backtracking`` (``AllowBacktracking``: only new maxima of the cumulative
  reward).

Examples
--------
>>> import numpy as np
>>> steps = ContestSteps.single(x=[80, 2000, 8096], lives=[3, 3, 3], act=[1, 1, 1], screen_x=[0, 0, 0],
...                             frame=[0, 4, 8], game=0, end_x=0x1F60 - 80)
>>> reward, done = contest_rewards(steps)
>>> np.round(reward, 3).tolist(), done.tolist()
([2173.038, 7826.517], [False, True])
"""

from __future__ import annotations

import dataclasses
from typing import Mapping

import numpy as np

from rewardlab.core.errors import FrameError, ParameterError, check_int
from rewardlab.domains.retro.kernels import contest_kernel
from rewardlab.sources.retro.levels import SONIC_GAMES, parse_level_key

__all__ = [
    "SONIC_GAMES", "S1", "S2", "S3K", "FRAME_OFFSET", "SCALE", "BONUS", "FRAME_LIMIT", "SCALER", "START_LIVES",
    "BONUS_STAGE_MODE", "ContestSteps", "game_code", "level_code", "level_codes", "level_end_x", "episode_columns",
    "episode_columns_loop", "contest_rewards", "contest_rewards_loop", "check_options", "check_end_x",
]

#: Game codes: the index of the game in :data:`SONIC_GAMES` (the ``game_code`` column).
S1, S2, S3K = 0, 1, 2
#: ``scenario.frame`` on step t's last frame is ``frame(t+1) + FRAME_OFFSET`` (the recording layout's convention).
FRAME_OFFSET = 0
#: The script's constants: progress scale, time bonus, frame limit; ``RewardScaler``'s factor.
SCALE, BONUS, FRAME_LIMIT, SCALER = 9000.0, 1000.0, 18000, 0.01
#: ``data.prev_lives = 3``: the script's lives before the first frame.
START_LIVES = 3
#: Sonic 2's ``game_mode`` in a bonus stage (``contest_done`` ends the episode there).
BONUS_STAGE_MODE = 16


def game_code(game: str) -> int:
    """The code of a contest game (its index in :data:`SONIC_GAMES`).

    Examples
    --------
    >>> game_code("SonicAndKnuckles3-Genesis-v0")
    2
    """
    if game not in SONIC_GAMES:
        raise ParameterError("game", "should be one of the contest games " + ", ".join(SONIC_GAMES), game)
    return SONIC_GAMES.index(game)


def level_code(game, zone, act):
    """One integer per level: ``game * 65536 + zone * 256 + act`` (zone and act are RAM bytes, 0..255).

    Examples
    --------
    >>> int(level_code(1, 13, 1))
    68865
    """
    return np.asarray(game, dtype=np.int64) * 65536 + np.asarray(zone, dtype=np.int64) * 256 \
        + np.asarray(act, dtype=np.int64)


def level_codes(levels: Mapping[str, Mapping[str, int]]) -> tuple[np.ndarray, np.ndarray]:
    """A level table ``{game: {"zone=Z,act=A": end_x}}`` as sorted level codes and their end x.

    Returns
    -------
    codes, max_x : int64 arrays ``[L]``
        Sorted by code (:func:`level_code`).

    Examples
    --------
    >>> codes, max_x = level_codes({"SonicTheHedgehog-Genesis-v0": {"zone=0,act=1": 0x1F60, "zone=0,act=0": 1}})
    >>> codes.tolist(), max_x.tolist()
    ([0, 1], [1, 8032])
    """
    pairs = {}
    for game, table in levels.items():
        code = game_code(game)
        for key, end in table.items():
            zone, act = parse_level_key(key)
            if not (0 <= zone < 256 and 0 <= act < 256):
                raise ParameterError(f"levels[{game!r}][{key!r}]", "should have zone and act in 0..255 (RAM bytes)",
                                     key)
            pairs[int(level_code(code, zone, act))] = int(end)
    order = sorted(pairs)
    return np.array(order, dtype=np.int64), np.array([pairs[c] for c in order], dtype=np.int64)


def level_end_x(codes: np.ndarray, max_x: np.ndarray, level: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """``level_max_x`` of each row's level code, and where the table has none.

    Parameters
    ----------
    codes, max_x : int64 arrays ``[L]``
        From :func:`level_codes` (sorted).
    level : int64 array ``[N]``
        :func:`level_code` per row.

    Returns
    -------
    end : int64 array ``[N]``
        The level's end x (0 where missing).
    missing : bool array ``[N]``

    Examples
    --------
    >>> end, missing = level_end_x(np.array([0, 1]), np.array([5, 7]), np.array([1, 2, 0]))
    >>> end.tolist(), missing.tolist()
    ([7, 0, 5], [False, True, False])
    """
    level = np.asarray(level, dtype=np.int64)
    if codes.size == 0:
        return np.zeros(level.shape, np.int64), np.ones(level.shape, bool)
    at = np.minimum(np.searchsorted(codes, level), codes.size - 1)
    found = codes[at] == level
    return np.where(found, max_x[at], 0), ~found


@dataclasses.dataclass(frozen=True)
class ContestSteps:
    """Per-timestep inputs of the contest reward, all arrays ``[N]`` (one row per step).

    Attributes
    ----------
    game : int32 (every integer field is stored as int32)
        :func:`game_code` (decides the Sonic 2 / S3K rules).
    end_x : float64
        ``level_max_x`` of the episode's starting level minus its start x (> 0).
    start_x : int32
        x at the episode's first frame (its row 0).
    shift : int32
        The S3K act-change shift accumulated up to this step's state (0 for the other games).
    reach : int32
        The largest ``x - shift`` of the episode's states up to this step's.
    x, lives, act, screen_x : int32
        The state before the step.
    next_x, next_lives, next_act, next_screen_x, next_frame, next_game_mode, next_special_stage : int32
        The state after it (``next_game_mode`` / ``next_special_stage``: 0 where the game has none).
    """

    game: np.ndarray
    end_x: np.ndarray
    start_x: np.ndarray
    shift: np.ndarray
    reach: np.ndarray
    x: np.ndarray
    lives: np.ndarray
    act: np.ndarray
    screen_x: np.ndarray
    next_x: np.ndarray
    next_lives: np.ndarray
    next_act: np.ndarray
    next_screen_x: np.ndarray
    next_frame: np.ndarray
    next_game_mode: np.ndarray
    next_special_stage: np.ndarray

    def __post_init__(self):
        n = None
        for field in dataclasses.fields(self):
            value = np.asarray(getattr(self, field.name))
            if field.name == "end_x":
                out = np.ascontiguousarray(value, dtype=np.float64)
            else:  # RAM values and frame counts: int32 halves what the kernel reads
                if value.size and (value.dtype.kind not in "iub" or value.min() < -2**31 or value.max() >= 2**31):
                    raise ParameterError(field.name, "should hold integers within int32", value[:3].tolist())
                out = np.ascontiguousarray(value, dtype=np.int32)
            if out.ndim != 1 or (n is not None and out.shape[0] != n):
                raise ParameterError(field.name, f"should be 1-D with the steps' length {n}", out.shape)
            n = out.shape[0]
            object.__setattr__(self, field.name, out)

    def __len__(self) -> int:
        return int(self.x.shape[0])

    @classmethod
    def single(cls, *, x, lives, act, screen_x, frame, game: int, end_x: float, game_mode=None,
               special_stage=None) -> "ContestSteps":
        """The steps of one episode from its ``N + 1`` states (row ``N`` the final one).

        Examples
        --------
        >>> len(ContestSteps.single(x=[0, 1], lives=[3, 3], act=[0, 0], screen_x=[0, 0], frame=[0, 4], game=0,
        ...                         end_x=10.0))
        1
        """
        states = {k: np.asarray(v, dtype=np.int64) for k, v in
                  (("x", x), ("lives", lives), ("act", act), ("screen_x", screen_x), ("frame", frame))}
        n = states["x"].shape[0] - 1
        zeros = np.zeros(n + 1, np.int64)
        mode = zeros if game_mode is None else np.asarray(game_mode, np.int64)
        special = zeros if special_stage is None else np.asarray(special_stage, np.int64)
        starts = np.zeros(n + 1, bool)
        starts[0] = True
        games = np.full(n + 1, game, np.int64)
        start_x, shift, reach = episode_columns(starts, states["x"], states["act"], states["screen_x"], games)
        return cls(game=games[:n], end_x=np.full(n, float(end_x)), start_x=start_x[:n], shift=shift[:n],
                   reach=reach[:n], x=states["x"][:n], lives=states["lives"][:n], act=states["act"][:n],
                   screen_x=states["screen_x"][:n], next_x=states["x"][1:], next_lives=states["lives"][1:],
                   next_act=states["act"][1:], next_screen_x=states["screen_x"][1:], next_frame=states["frame"][1:],
                   next_game_mode=mode[1:], next_special_stage=special[1:])


# --------------------------------------------------------------------------
# Episode columns: start x, act-change shift, furthest shifted x
# --------------------------------------------------------------------------


def _act_jumps(start, act, screen_x, game) -> np.ndarray:
    """Per row, the S3K correction at that state: ``screen_x - screen_x[row - 1]`` where the act changed."""
    act = np.asarray(act, dtype=np.int64)
    screen_x = np.asarray(screen_x, dtype=np.int64)
    jump = np.zeros(act.shape, np.int64)
    if act.size > 1:
        changed = (act[1:] != act[:-1]) & ~start[1:] & (np.asarray(game)[1:] == S3K)
        jump[1:] = np.where(changed, screen_x[1:] - screen_x[:-1], 0)
    return jump


def episode_columns(start, x, act, screen_x, game) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Each row's episode constants and running values, from episode starts (rows in episode order).

    Parameters
    ----------
    start : bool array ``[R]``
        True on each episode's first row (its reset state).
    x, act, screen_x, game : int arrays ``[R]``
        The states, and :func:`game_code` per row.

    Returns
    -------
    start_x : int64 ``[R]``
        x at the episode's first row.
    shift : int64 ``[R]``
        The S3K act-change shift accumulated up to this row: the sum, over the
        episode's rows after the first where ``act`` differs from the row
        before, of ``screen_x - screen_x[row - 1]`` (0 for Sonic 1 and 2); the
        script's ``offset_x`` here is ``-start_x - shift``.
    reach : int64 ``[R]``
        ``max(x - shift)`` over the episode's rows up to this one.

    Examples
    --------
    >>> cols = episode_columns(np.array([True, False, False, True]), np.array([5, 9, 7, 2]), np.array([0, 0, 1, 0]),
    ...                        np.array([0, 10, 4, 0]), np.array([2, 2, 2, 0]))
    >>> [c.tolist() for c in cols]
    [[5, 5, 5, 2], [0, 0, -6, 0], [5, 9, 13, 2]]
    """
    start = np.asarray(start, dtype=bool)
    x = np.asarray(x, dtype=np.int64)
    if start.size == 0:
        empty = np.zeros(0, np.int64)
        return empty, empty, empty
    if not start[0]:
        raise ParameterError("start", "should be True on the first row (it starts an episode)", start[:3].tolist())
    segment = np.cumsum(start) - 1
    first = np.flatnonzero(start)
    start_x = x[first][segment]
    jump = _act_jumps(start, act, screen_x, game)
    total = np.cumsum(jump)
    before = np.concatenate([[0], total[first[1:] - 1]]) if first.size > 1 else np.zeros(1, np.int64)
    shift = total - before[segment]
    u = x - shift
    low = int(u.min())
    span = int(u.max()) - low + 1
    lifted = (u - low) + segment * span  # every episode above the ones before: a plain running max per episode
    reach = np.maximum.accumulate(lifted) - segment * span + low
    return start_x, shift, reach


def episode_columns_loop(start, x, act, screen_x, game) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Plain-loop twin of :func:`episode_columns`: the script's ``offset_x`` / ``prev_act`` walk, row by row.

    Examples
    --------
    >>> [c.tolist() for c in episode_columns_loop([True, False], [5, 9], [0, 1], [0, 10], [2, 2])]
    [[5, 5], [0, 10], [5, 5]]
    """
    n = len(x)
    start_x, shift, reach = (np.zeros(n, np.int64) for _ in range(3))
    for i in range(n):
        if start[i]:
            x0, acc, prev_act, prev_sx, best = int(x[i]), 0, int(act[i]), int(screen_x[i]), None
        if int(game[i]) == S3K and int(act[i]) != prev_act:
            acc += int(screen_x[i]) - prev_sx
        prev_act, prev_sx = int(act[i]), int(screen_x[i])
        u = int(x[i]) - acc
        best = u if best is None else max(best, u)
        start_x[i], shift[i], reach[i] = x0, acc, best
    return start_x, shift, reach


# --------------------------------------------------------------------------
# Rewards and dones
# --------------------------------------------------------------------------


def check_options(scale, bonus, frame_limit, scaler, backtracking) -> tuple[float, float, int, bool, bool]:
    """Validated reward options: ``scale > 0``, ``bonus >= 0`` (finite), ``frame_limit >= 1``, two booleans.

    Examples
    --------
    >>> check_options(9000, 1000, 18000, False, True)
    (9000.0, 1000.0, 18000, False, True)
    """
    out = []
    for name, value, low in (("scale", scale, None), ("bonus", bonus, 0.0)):
        if isinstance(value, (bool, np.bool_)) or not isinstance(value, (int, float, np.integer, np.floating)) \
                or not np.isfinite(value):
            raise ParameterError(name, "should be a finite number", value)
        if (low is None and not value > 0) or (low is not None and value < low):
            raise ParameterError(name, "should be > 0" if low is None else "should be >= 0", value)
        out.append(float(value))
    limit = check_int("frame_limit", frame_limit, low=1, rule="should be an integer >= 1 (emulator frames)")
    for name, value in (("scaler", scaler), ("backtracking", backtracking)):
        if not isinstance(value, (bool, np.bool_)):
            raise ParameterError(name, "should be True or False", value)
    return out[0], out[1], limit, bool(scaler), bool(backtracking)


def contest_rewards(steps: ContestSteps, *, scale: float = SCALE, bonus: float = BONUS, frame_limit: int = FRAME_LIMIT,
                    scaler: bool = False, backtracking: bool = False) -> tuple[np.ndarray, np.ndarray]:
    """The contest reward and done of every timestep, vectorized (one compiled pass over the rows).

    Per step ``t`` (state ``t`` before it, ``t + 1`` after):

    * ``p(t) = clip(x(t) - start_x - shift(t), 0, end_x) / end_x``; the next
      state's shift adds the S3K correction where its act differs;
    * reward ``(p(t+1) - p(t)) * scale``, plus ``(1 - clip((frame(t+1) +
      FRAME_OFFSET) / frame_limit, 0, 1)) * bonus`` where ``p(t+1) >= 1``, the
      float64 operations of the script in its order;
    * done where ``lives(t+1) < max(START_LIVES, lives(t))``, ``p(t+1) >= 1``,
      Sonic 2's ``game_mode(t+1) == 16`` or S3K's ``special_stage(t+1) != 0``;
    * ``backtracking``: ``max(0, (p(t+1) - max(p(0..t))) * scale)`` plus the
      bonus instead (``AllowBacktracking``'s new maxima of the running sum, in
      closed form; equal to the wrapper's loop up to float rounding);
    * ``scaler``: the reward times 0.01 (retro-baselines wrap ``RewardScaler``
      inside ``AllowBacktracking``; the closed form scales last, the same up
      to float rounding).

    Parameters
    ----------
    steps : ContestSteps
    scale, bonus : float
        ``scale > 0``, ``bonus >= 0``.
    frame_limit : int
        Frames over which the bonus falls to 0.
    scaler, backtracking : bool

    Returns
    -------
    reward : float64 ``[N]``
    done : bool ``[N]``

    Examples
    --------
    >>> s = ContestSteps.single(x=[80, 40, 500], lives=[3, 3, 2], act=[0, 0, 0], screen_x=[0, 0, 0], frame=[0, 4, 8],
    ...                         game=0, end_x=920.0)
    >>> r, d = contest_rewards(s, backtracking=True)
    >>> r.tolist(), d.tolist()
    ([0.0, 4108.695652173913], [False, True])
    """
    scale, bonus, frame_limit, scaler, backtracking = check_options(scale, bonus, frame_limit, scaler, backtracking)
    n = len(steps)
    reward = np.empty(n, np.float64)
    done = np.empty(n, np.bool_)
    ints = {f.name: getattr(steps, f.name) for f in dataclasses.fields(steps) if f.name != "end_x"}  # int32
    contest_kernel()(ints["game"], steps.end_x, ints["start_x"],
                     ints["shift"], ints["reach"], ints["x"], ints["lives"], ints["act"], ints["screen_x"],
                     ints["next_x"], ints["next_lives"], ints["next_act"], ints["next_screen_x"], ints["next_frame"],
                     ints["next_game_mode"], ints["next_special_stage"], scale, bonus, frame_limit, scaler,
                     backtracking, FRAME_OFFSET, START_LIVES, S2, S3K, BONUS_STAGE_MODE, SCALER, reward, done)
    return reward, done


def contest_rewards_loop(steps: ContestSteps, *, first, scale: float = SCALE, bonus: float = BONUS,
                         frame_limit: int = FRAME_LIMIT, scaler: bool = False,
                         backtracking: bool = False) -> tuple[np.ndarray, np.ndarray]:
    """Plain-loop twin of :func:`contest_rewards`: each episode walked in order, keeping the script's state.

    ``offset_x``, ``prev_progress``, ``prev_lives``, ``prev_act`` /
    ``prev_screen_x`` as the script keeps them (set from the episode's first
    state, as the reset frame does), and ``AllowBacktracking``'s ``_cur_x`` /
    ``_max_x`` as the wrapper keeps them (its running sums, so backtracking
    rewards equal :func:`contest_rewards` up to float rounding).  Reads only
    ``game``, ``end_x``, the first step's state and every step's next state.

    Parameters
    ----------
    steps : ContestSteps
    first : bool array ``[N]``
        True on each episode's first step.
    scale, bonus, frame_limit, scaler, backtracking
        As :func:`contest_rewards`.

    Examples
    --------
    >>> s = ContestSteps.single(x=[80, 40, 500], lives=[3, 3, 2], act=[0, 0, 0], screen_x=[0, 0, 0], frame=[0, 4, 8],
    ...                         game=0, end_x=920.0)
    >>> contest_rewards_loop(s, first=[True, False], backtracking=True)[0].tolist()
    [0.0, 4108.695652173913]
    """
    scale, bonus, frame_limit, scaler, backtracking = check_options(scale, bonus, frame_limit, scaler, backtracking)
    n = len(steps)
    reward = np.zeros(n)
    done = np.zeros(n, bool)
    for i in range(n):
        game, end_x = int(steps.game[i]), float(steps.end_x[i])
        if first[i]:  # the reset frame: offset fixed, prev_progress = progress of the first state
            offset = -int(steps.x[i])
            prev_act, prev_sx = int(steps.act[i]), int(steps.screen_x[i])
            prev_lives = max(START_LIVES, int(steps.lives[i]))
            prev_progress = min(max(float(int(steps.x[i]) + offset), 0.0), end_x) / end_x
            cur_sum = best_sum = 0.0
        x, act, sx = int(steps.next_x[i]), int(steps.next_act[i]), int(steps.next_screen_x[i])
        if game == S3K and act != prev_act:
            offset -= sx - prev_sx
        prev_act, prev_sx = act, sx
        progress = min(max(float(x + offset), 0.0), end_x) / end_x
        r = (progress - prev_progress) * scale
        prev_progress = progress
        if progress >= 1:
            f = float(int(steps.next_frame[i]) + FRAME_OFFSET) / float(frame_limit)
            r = r + (1.0 - min(max(f, 0.0), 1.0)) * bonus
        lives = int(steps.next_lives[i])
        d = lives < prev_lives or progress >= 1
        prev_lives = max(prev_lives, lives)
        d = d or (game == S2 and int(steps.next_game_mode[i]) == BONUS_STAGE_MODE)
        d = d or (game == S3K and int(steps.next_special_stage[i]) != 0)
        if scaler:  # RewardScaler sits inside AllowBacktracking (retro-baselines' make_env, then the wrapper)
            r = r * SCALER
        if backtracking:
            cur_sum += r
            r = max(0.0, cur_sum - best_sum)
            best_sum = max(best_sum, cur_sum)
        reward[i] = r
        done[i] = d
    return reward, done


def check_end_x(end_x: np.ndarray, where) -> None:
    """Refuse a level whose end is at or before the episode's start (progress would divide by <= 0).

    ``where(row)`` names the episode and step for the message.

    Examples
    --------
    >>> check_end_x(np.array([5.0]), lambda row: f"row {row}")
    """
    bad = ~(end_x > 0)
    if bad.any():
        row = int(np.argmax(bad))
        raise FrameError(f"{where(row)}: the level's end x is at or before the episode's start x "
                         f"(end_x = level_max_x - start x = {end_x[row]!r}); the script would divide by it",
                         hint="Check the level table's entry for this level, or the recording's start x")
