"""Per-row running values of a retro episode that a plug-in over shuffled rows cannot compute itself.

``act_shift``: S3K's ``calc_progress`` corrects ``offset_x`` when the act
changes mid-level, by the ``screen_x`` jump; per step, the shift accumulated
up to a row is the sum, over the episode's rows after the first where
``act`` differs from the row before, of ``screen_x - screen_x[row - 1]`` (0
for the other games), so the script's ``offset_x`` there is ``-start_x -
act_shift``.  ``reach_x``: ``max(x - act_shift)`` over the episode's rows up
to this one (the baselines' ``AllowBacktracking`` pays new maxima of it).
The same definitions as the contest family's
``rewardlab.domains.retro.contest.episode_columns`` (a test compares them).

Examples
--------
>>> import numpy as np
>>> shift, reach = running_columns(np.array([True, False, False]), np.array([5, 9, 7]), np.array([0, 0, 1]),
...                                np.array([0, 10, 4]), np.array([2, 2, 2]))
>>> shift.tolist(), reach.tolist()
([0, 0, -6], [5, 9, 13])
"""

from __future__ import annotations

import numpy as np

__all__ = ["running_columns", "S3K_CODE"]

#: S3K's ``game_code`` (its index in :data:`~rewardlab.sources.retro.levels.SONIC_GAMES`).
S3K_CODE = 2


def running_columns(start, x, act, screen_x, game_code) -> tuple[np.ndarray, np.ndarray]:
    """``(act_shift, reach_x)`` per row (int64 ``[R]``), rows in episode order, ``start`` True on each
    episode's first row; ``game_code`` per row (only S3K's rows shift).

    Examples
    --------
    >>> running_columns(np.array([True]), np.array([3]), np.array([0]), np.array([0]), np.array([0]))
    (array([0]), array([3]))
    """
    start = np.asarray(start, dtype=bool)
    x, act, screen_x = (np.asarray(a, dtype=np.int64) for a in (x, act, screen_x))
    n = start.size
    if n == 0:
        return np.zeros(0, np.int64), np.zeros(0, np.int64)
    segment = np.cumsum(start) - 1
    jump = np.zeros(n, np.int64)
    inside = ~start[1:] & (act[1:] != act[:-1]) & (np.asarray(game_code)[1:] == S3K_CODE)
    jump[1:][inside] = (screen_x[1:] - screen_x[:-1])[inside]
    total = np.cumsum(jump)
    first = np.flatnonzero(start)
    before = np.concatenate([[0], total[first[1:] - 1]])
    shift = total - before[segment]
    u = x - shift
    low = int(u.min())
    span = int(u.max()) - low + 1
    lifted = (u - low) + segment * span  # each episode above the ones before: one running max
    reach = np.maximum.accumulate(lifted) - segment * span + low
    return shift, reach
