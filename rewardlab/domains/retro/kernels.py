"""The compiled loop of :func:`rewardlab.domains.retro.contest.contest_rewards` (numba, one thread).

One pass over the timesteps: each row's reward and done from its own columns
(the state before and after the step and the episode's columns), the same
float64 operations in the same order as the script and as the exported
plug-in's torch code (numba without fast-math keeps them), so the three agree
bit for bit.  numba is imported on the first call only; the kernel is cached
next to this module (``python -m rewardlab.domains.retro.kernels`` compiles it
now, as ``make`` should once per install).  One thread: the loop is memory-bound
(one thread was as fast as two here, about 130M timesteps/s), and a parallel
kernel would bring a threading layer (GNU OpenMP) that is not fork-safe into
processes that fork plug-in workers.

Examples
--------
>>> import numpy as np
>>> from rewardlab.domains.retro.contest import ContestSteps, contest_rewards
>>> s = ContestSteps.single(x=[0, 5], lives=[3, 3], act=[0, 0], screen_x=[0, 0], frame=[0, 4], game=0, end_x=10.0)
>>> contest_rewards(s)[0].tolist()
[4500.0]
"""

from __future__ import annotations

import numpy as np

__all__ = ["contest_kernel", "compile_all"]


def _contest_loop(game, end_x, start_x, shift, reach, x, lives, act, screen_x, next_x, next_lives, next_act,
                  next_screen_x, next_frame, next_game_mode, next_special_stage, scale, bonus, frame_limit,
                  scaler, backtracking, frame_offset, start_lives, s2, s3k, bonus_mode, factor, reward, done):
    """Per row: see ``contest_rewards``; writes ``reward`` and ``done``."""
    for i in range(x.shape[0]):
        end = end_x[i]
        g = game[i]
        sh = shift[i]
        sh_next = sh
        if g == s3k and next_act[i] != act[i]:
            sh_next = sh + (next_screen_x[i] - screen_x[i])
        p_next = min(max(np.float64(next_x[i] - start_x[i] - sh_next), 0.0), end) / end
        finished = p_next >= 1.0
        time_bonus = 0.0
        if finished:
            f = np.float64(next_frame[i] + frame_offset) / np.float64(frame_limit)
            time_bonus = (1.0 - min(max(f, 0.0), 1.0)) * bonus
        if backtracking:
            p_best = min(max(np.float64(reach[i] - start_x[i]), 0.0), end) / end
            r = max((p_next - p_best) * scale, 0.0) + time_bonus
        else:
            p_now = min(max(np.float64(x[i] - start_x[i] - sh), 0.0), end) / end
            r = (p_next - p_now) * scale
            if finished:
                r = r + time_bonus
        if scaler:
            r = r * factor
        reward[i] = r
        d = next_lives[i] < max(lives[i], start_lives) or finished
        d = d or (g == s2 and next_game_mode[i] == bonus_mode) or (g == s3k and next_special_stage[i] != 0)
        done[i] = d


_KERNEL: list = []


def contest_kernel():
    """The compiled loop (numba imported and the kernel compiled, or read from its cache, on the first call).

    Examples
    --------
    >>> contest_kernel() is contest_kernel()
    True
    """
    if not _KERNEL:
        from numba import njit

        _KERNEL.append(njit(cache=True, nogil=True)(_contest_loop))
    return _KERNEL[0]


def compile_all() -> None:
    """Compile the kernel now (numba caches it next to this module).

    Examples
    --------
    >>> compile_all()
    """
    from rewardlab.domains.retro.contest import ContestSteps, contest_rewards

    contest_rewards(ContestSteps.single(x=[0, 5], lives=[3, 3], act=[0, 0], screen_x=[0, 0], frame=[0, 4], game=0,
                                        end_x=10.0))


if __name__ == "__main__":  # `python -m rewardlab.domains.retro.kernels`: compile now
    import time

    t0 = time.perf_counter()
    compile_all()
    print(f"rewardlab: retro contest kernel ready ({time.perf_counter() - t0:.1f} s)")
