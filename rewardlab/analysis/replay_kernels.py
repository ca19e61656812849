"""Compiled step-by-step replays of Gymnasium's ``NormalizeReward`` and SB3's ``VecNormalize`` rewards.

Each kernel walks one environment's reward stream in order and performs, step
by step, the float64 operations the library performs, in the library's order
(IEEE arithmetic, no fast-math: numba keeps the order written here), so the
results equal the real classes bit for bit; ``tests/test_normalizers.py``
runs ``gymnasium.wrappers.NormalizeReward`` (Gymnasium 1.4) and
``stable_baselines3.common.vec_env.VecNormalize`` (SB3 2.9) over recorded
reward streams and compares.  Per step, with ``RunningMeanStd.update`` fed
one value ``x`` (batch mean ``x``, batch variance ``0``, batch count ``1``)::

    delta = x - mean;  total = count + 1
    mean  = mean + delta * 1 / total
    var   = (var * count + 0 * 1 + delta**2 * count * 1 / total) / total
    count = total

Gymnasium: ``G = G * gamma * (1 - terminated) + r``, then the update with
``G``, then ``r / sqrt(var + epsilon)``.  SB3: ``G = G * gamma + r``, the
update, ``clip(r / sqrt(var + epsilon), -clip, clip)`` cast to float32 (SB3
hands float32 rewards over), and ``G = 0`` after a done step.

The kernels check nothing (numba does not check array bounds): every array
must hold ``T`` elements of the dtype named.  Call them through the checked
:func:`rewardlab.analysis.normalizers.gymnasium_normalize_reward` and
:func:`~rewardlab.analysis.normalizers.sb3_normalize_reward`.

Compiled by numba on first use and cached on disk next to this module
(``python -m rewardlab.analysis.replay_kernels`` compiles them now; ``make``
does once per install).  The running state (``[G, mean, var, count]``) is an
argument, read first and written back, so a dataset folder's parts replayed in
order (:mod:`rewardlab.analysis.normalizer_parts`) equal one replay.  A plain-Python twin of each loop lives in the tests.

Examples
--------
>>> import numpy as np
>>> n = 3
>>> out, ret, var = np.empty(n), np.empty(n), np.empty(n)
>>> state = initial_state(1e-4)
>>> gymnasium_replay(np.ones(n), np.zeros(n, dtype=np.bool_), 0.5, 1e-8, state, out, ret, var)
>>> ret
array([1.  , 1.5 , 1.75])

The state carries on: a stream replayed in two pieces equals one replay.

>>> first, rest = initial_state(1e-4), np.empty(n)
>>> gymnasium_replay(np.ones(2), np.zeros(2, dtype=np.bool_), 0.5, 1e-8, first, out[:2], ret[:2], var[:2])
>>> gymnasium_replay(np.ones(1), np.zeros(1, dtype=np.bool_), 0.5, 1e-8, first, rest[:1], ret[2:], var[2:])
>>> bool(first[0] == 1.75)
True
"""

from __future__ import annotations

import math

import numpy as np
from numba import njit

__all__ = ["gymnasium_replay", "sb3_replay", "initial_state"]


@njit(nogil=True, cache=True)
def _rms_update(x, mean, var, count):
    """``RunningMeanStd.update(np.array([x]))``: the batch moments of one value, then the merge."""
    batch_mean = x / 1.0
    batch_var = (x - batch_mean) * (x - batch_mean) / 1.0
    delta = batch_mean - mean
    total = count + 1.0
    new_mean = mean + delta * 1.0 / total
    m2 = var * count + batch_var * 1.0 + delta * delta * count * 1.0 / total
    return new_mean, m2 / total, total


@njit(nogil=True, cache=True)
def gymnasium_replay(reward, terminated, gamma, epsilon, state, normalized, returns, var_out):
    """Fill ``normalized``, ``returns`` and ``var_out`` (float64 ``[T]``) for one environment's stream.

    ``reward`` float64 ``[T]``, ``terminated`` bool ``[T]``; ``gamma`` and
    ``epsilon`` as the wrapper has them; ``state`` the running state
    ``[G, mean, var, count]`` (float64 ``[4]``: :func:`initial_state` for a
    fresh wrapper), read first and updated in place, so a stream replayed in
    pieces (a dataset folder's parts, in order) equals one replay bit for bit.
    """
    g, mean, var, count = state[0], state[1], state[2], state[3]
    for t in range(reward.shape[0]):
        r = reward[t]
        keep = 0.0 if terminated[t] else 1.0  # numpy's `1 - terminated`, an int, as float64
        g = g * gamma * keep + r
        mean, var, count = _rms_update(g, mean, var, count)
        returns[t] = g
        var_out[t] = var
        normalized[t] = r / math.sqrt(var + epsilon)
    state[0], state[1], state[2], state[3] = g, mean, var, count


@njit(nogil=True, cache=True)
def sb3_replay(reward, done, gamma, epsilon, clip_reward, state, normalized, returns, var_out, clipped):
    """Fill ``normalized`` (float32), ``returns``, ``var_out`` (float64) and ``clipped`` (bool), all ``[T]``.

    ``reward`` float64 ``[T]`` (what the vectorized environment handed over;
    ``DummyVecEnv`` stores rewards as float32 first), ``done`` bool ``[T]``;
    ``state`` as in :func:`gymnasium_replay`, updated in place.
    """
    g, mean, var, count = state[0], state[1], state[2], state[3]
    for t in range(reward.shape[0]):
        r = reward[t]
        g = g * gamma + r
        mean, var, count = _rms_update(g, mean, var, count)
        returns[t] = g
        var_out[t] = var
        x = r / math.sqrt(var + epsilon)
        clipped[t] = abs(x) > clip_reward
        if x < -clip_reward:  # np.clip: maximum with the lower bound, then minimum with the upper
            x = -clip_reward
        if x > clip_reward:
            x = clip_reward
        normalized[t] = np.float32(x)
        if done[t]:
            g = 0.0
    state[0], state[1], state[2], state[3] = g, mean, var, count


def initial_state(prior_count: float) -> np.ndarray:
    """A fresh normalizer's running state ``[G, mean, var, count]``: ``[0, 0, 1, prior_count]``.

    Examples
    --------
    >>> initial_state(1e-4).tolist()
    [0.0, 0.0, 1.0, 0.0001]
    """
    return np.array([0.0, 0.0, 1.0, float(prior_count)])


def compile_all() -> None:
    """Compile (or load from numba's cache) both kernels, for writable and read-only inputs.

    Polars hands read-only NumPy views over (``Series.to_numpy()``), and
    numba compiles a separate variant for them: both are built here, so the
    first normalization after ``make`` does not compile.
    """
    n = 1
    for writable in (True, False):
        f8, flags = np.zeros(n), np.zeros(n, dtype=np.bool_)
        f8.flags.writeable = flags.flags.writeable = writable
        gymnasium_replay(f8, flags, 0.99, 1e-8, initial_state(1e-4), np.empty(n), np.empty(n), np.empty(n))
        sb3_replay(f8, flags, 0.99, 1e-8, 10.0, initial_state(1e-4), np.empty(n, dtype=np.float32), np.empty(n),
                   np.empty(n), np.empty(n, dtype=np.bool_))


if __name__ == "__main__":  # `python -m rewardlab.analysis.replay_kernels`: compile now (make does, once per install)
    import time

    t0 = time.perf_counter()
    compile_all()
    print(f"rewardlab: normalizer replays ready ({time.perf_counter() - t0:.1f} s; compiled once, then cached by numba)")
