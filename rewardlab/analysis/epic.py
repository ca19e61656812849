"""EPIC: a distance between reward functions that ignores potential shaping and positive scale.

Gleave et al. (2021), "Quantifying Differences in Reward Functions" (arXiv 2006.13900):
first *canonicalize* each reward so that every potential-shaped variant of it maps
to the same function,

    C(R)(s, a, s') = R(s, a, s') + gamma E[R(s', A, S')] - E[R(s, A, S')] - gamma E[R(S, A, S')]

with ``S`` drawn from a state distribution and ``(A, S')`` from an (action, next
state) distribution, then take the *Pearson distance* ``sqrt((1 - rho) / 2)`` of
the two canonicalized rewards over a coverage distribution of transitions.  It
is 0 for rewards equal up to potential shaping ``gamma phi(s') - phi(s)`` and a
positive scale, 1/sqrt(2) for uncorrelated ones, 1 for opposite ones.

This module is the sample-based form (``epic_sample.py`` of
HumanCompatibleAI/evaluating-rewards), on a grid the caller evaluates the
rewards on:

* ``n_states`` recorded states ``s_i`` (the distribution of ``S``; the coverage's states);
* ``n_pairs`` recorded ``(a_j, s'_j)`` pairs (the distribution of ``(A, S')``);
* ``r_grid[i, j] = R(s_i, a_j, s'_j)``, ``[S, P]``: the coverage transitions, and
  each ``E[R(s_i, A, S')]`` is the mean of row ``i``; ``E[R(S, A, S')]`` the mean of all;
* ``r_next[k, j] = R(s'_k, a_j, s'_j)``, ``[P, P]``: row ``k`` starts at pair ``k``'s
  next state, so ``E[R(s'_j, A, S')]`` of a coverage transition ``(s_i, a_j, s'_j)``
  is the mean of row ``j``.

Episodes never end here (EPIC is defined on infinite-horizon MDPs; the reference
code sets every ``done`` to 0): nothing is masked at terminal steps.  On one grid
the canonicalization of ``k R + gamma phi(s') - phi(s)`` (``k > 0``) is ``k C(R)``
plus a constant, so the distance is 0 up to rounding (see :func:`canonicalize`).

Examples
--------
>>> rng = np.random.default_rng(0)
>>> grid, nxt = rng.normal(size=(6, 5)), rng.normal(size=(5, 5))
>>> c = canonicalize(grid, nxt, 0.9)
>>> phi_s, phi_next = rng.normal(size=6), rng.normal(size=5)
>>> shaped = 3 * grid + 0.9 * phi_next[None, :] - phi_s[:, None]
>>> shaped_next = 3 * nxt + 0.9 * phi_next[None, :] - phi_next[:, None]
>>> round(epic_distance(c, canonicalize(shaped, shaped_next, 0.9)), 6)
0.0
"""

from __future__ import annotations

import math

import numpy as np

from rewardlab.core.errors import ParameterError

__all__ = ["pearson_distance", "canonicalize", "canonicalize_loop", "epic_distance", "epic_distance_loop",
           "mean_and_stderr"]


def pearson_distance(rho):
    """The Pearson distance ``sqrt((1 - rho) / 2)`` of a correlation (scalar or array; NaN stays NaN).

    0 for ``rho = 1``, ``1/sqrt(2)`` for 0, 1 for -1; ``rho`` is clipped to ``[-1, 1]`` first (rounding).

    Examples
    --------
    >>> round(float(pearson_distance(0.0)), 6)
    0.707107
    >>> float(pearson_distance(1.0000000002))
    0.0
    """
    r = np.clip(np.asarray(rho, dtype=np.float64), -1.0, 1.0)
    return np.sqrt((1.0 - r) / 2.0)


def _grids(r_grid, r_next) -> tuple[np.ndarray, np.ndarray]:
    grid = np.asarray(r_grid, dtype=np.float64)
    nxt = np.asarray(r_next, dtype=np.float64)
    if grid.ndim != 2 or grid.shape[0] < 1 or grid.shape[1] < 1:
        raise ParameterError("r_grid", "should have shape [S, P] with S, P >= 1", grid.shape)
    if nxt.shape != (grid.shape[1], grid.shape[1]):
        raise ParameterError("r_next", f"should have shape [P, P] = {(grid.shape[1],) * 2} (one row per pair's "
                             "next state, one column per pair)", nxt.shape)
    return grid, nxt


def _gamma(gamma) -> float:
    if isinstance(gamma, bool) or not isinstance(gamma, (int, float, np.floating)) or not 0.0 < gamma <= 1.0:
        raise ParameterError("gamma", "should be in (0, 1]", gamma)
    return float(gamma)


def canonicalize(r_grid, r_next, gamma: float) -> np.ndarray:
    """EPIC's sample-based canonicalization of a reward on the grid of recorded states x recorded pairs.

    ``C[i, j] = r_grid[i, j] + gamma * mean(r_next[j, :]) - mean(r_grid[i, :]) - gamma * mean(r_grid)``,
    i.e. ``R(s_i, a_j, s'_j) + gamma E[R(s'_j, A, S')] - E[R(s_i, A, S')] - gamma E[R(S, A, S')]``.

    Parameters
    ----------
    r_grid : float array of shape ``[S, P]``
        ``R(s_i, a_j, s'_j)`` for the sampled states ``s_i`` and the sampled pairs ``(a_j, s'_j)``.
    r_next : float array of shape ``[P, P]``
        ``R(s'_k, a_j, s'_j)``: the reward from pair ``k``'s next state, with pair ``j``'s action and next state.
    gamma : float
        The discount, in ``(0, 1]``.

    Returns
    -------
    numpy.ndarray of shape ``[S, P]``, float64
        The canonicalized reward on the coverage transitions ``(s_i, a_j, s'_j)``.

    Notes
    -----
    For ``R' = k R + gamma phi(s') - phi(s)`` evaluated on the same grid,
    ``C(R') = k C(R) + gamma (mean_i phi(s_i) - mean_j phi(s'_j))``: a positive
    scale and a constant, which the Pearson distance ignores.

    Examples
    --------
    >>> canonicalize(np.ones((2, 3)), np.ones((3, 3)), 0.5)  # a constant canonicalizes to 0
    array([[0., 0., 0.],
           [0., 0., 0.]])
    """
    grid, nxt = _grids(r_grid, r_next)
    g = _gamma(gamma)
    return grid + g * nxt.mean(axis=1)[None, :] - grid.mean(axis=1)[:, None] - g * grid.mean()


def canonicalize_loop(r_grid, r_next, gamma: float) -> np.ndarray:
    """:func:`canonicalize` as a plain double loop over states and pairs (the reference the tests compare with).

    Examples
    --------
    >>> g, n = np.arange(6.0).reshape(2, 3), np.arange(9.0).reshape(3, 3)
    >>> bool(np.allclose(canonicalize_loop(g, n, 0.9), canonicalize(g, n, 0.9)))
    True
    """
    grid, nxt = _grids(r_grid, r_next)
    g = _gamma(gamma)
    n_states, n_pairs = grid.shape
    total = 0.0
    for i in range(n_states):
        for j in range(n_pairs):
            total += float(grid[i, j])
    total /= n_states * n_pairs
    out = np.empty_like(grid)
    for i in range(n_states):
        from_s = sum(float(grid[i, j]) for j in range(n_pairs)) / n_pairs
        for j in range(n_pairs):
            from_next = sum(float(nxt[j, k]) for k in range(n_pairs)) / n_pairs
            out[i, j] = float(grid[i, j]) + g * from_next - from_s - g * total
    return out


def _weights(weights, size: int) -> np.ndarray | None:
    if weights is None:
        return None
    w = np.asarray(weights, dtype=np.float64).reshape(-1)
    if w.shape[0] != size or not np.all(np.isfinite(w)) or np.any(w < 0) or not w.sum() > 0:
        raise ParameterError("weights", f"should be {size} finite non-negative numbers with a positive sum",
                             f"array of shape {np.shape(weights)}")
    return w / w.sum()


def epic_distance(canon_a, canon_b, weights=None) -> float:
    """The Pearson distance between two canonicalized rewards over the coverage transitions.

    Parameters
    ----------
    canon_a, canon_b : float arrays of one shape (``[S, P]`` from :func:`canonicalize`, or flat)
    weights : float array of the same size, optional
        The coverage distribution's weight of each transition (default: uniform).

    Returns
    -------
    float
        ``sqrt((1 - rho) / 2)`` with ``rho`` their (weighted) Pearson correlation; NaN where
        either is constant (a reward that is pure shaping canonicalizes to a constant: its
        correlation is undefined).

    Examples
    --------
    >>> round(epic_distance(np.array([1.0, 2.0, 3.0]), np.array([3.0, 2.0, 1.0])), 6)
    1.0
    >>> epic_distance(np.array([1.0, 1.0]), np.array([0.0, 2.0]))
    nan
    """
    a = np.asarray(canon_a, dtype=np.float64).reshape(-1)
    b = np.asarray(canon_b, dtype=np.float64).reshape(-1)
    if a.shape != b.shape or a.size < 2:
        raise ParameterError("canon_b", f"should have the size of canon_a ({a.size}, at least 2)", b.size)
    w = _weights(weights, a.size)
    if w is None:
        w = np.full(a.size, 1.0 / a.size)
    ca, cb = a - w @ a, b - w @ b
    # a constant reward leaves only rounding noise after centring: treat it as constant
    scale_a = max(float(np.abs(a).max()), 1e-300)
    scale_b = max(float(np.abs(b).max()), 1e-300)
    va, vb = float(w @ (ca * ca)), float(w @ (cb * cb))
    if va <= (1e-12 * scale_a) ** 2 or vb <= (1e-12 * scale_b) ** 2:
        return math.nan
    rho = float(w @ (ca * cb)) / math.sqrt(va * vb)
    return float(pearson_distance(rho))


def epic_distance_loop(canon_a, canon_b, weights=None) -> float:
    """:func:`epic_distance` as a plain loop (the tests' reference).

    Examples
    --------
    >>> round(epic_distance_loop([1.0, 2.0, 4.0], [2.0, 4.0, 8.0]), 6)
    0.0
    """
    a = [float(v) for v in np.asarray(canon_a, dtype=np.float64).reshape(-1)]
    b = [float(v) for v in np.asarray(canon_b, dtype=np.float64).reshape(-1)]
    w = [1.0] * len(a) if weights is None else [float(v) for v in np.asarray(weights).reshape(-1)]
    total = sum(w)
    ma = sum(wi * ai for wi, ai in zip(w, a)) / total
    mb = sum(wi * bi for wi, bi in zip(w, b)) / total
    cov = sum(wi * (ai - ma) * (bi - mb) for wi, ai, bi in zip(w, a, b)) / total
    va = sum(wi * (ai - ma) ** 2 for wi, ai in zip(w, a)) / total
    vb = sum(wi * (bi - mb) ** 2 for wi, bi in zip(w, b)) / total
    if va == 0.0 or vb == 0.0:
        return math.nan
    rho = min(1.0, max(-1.0, cov / math.sqrt(va * vb)))
    return math.sqrt((1.0 - rho) / 2.0)


def mean_and_stderr(values, axis: int = 0) -> tuple[np.ndarray, np.ndarray]:
    """Mean and standard error ``std(ddof=1) / sqrt(R)`` over ``axis`` of independent repeats (NaN-aware).

    The standard error of EPIC's estimate is that of ``R`` independent samples (grids drawn
    with different seeds); with one repeat (or one finite value) it is NaN.

    Parameters
    ----------
    values : float array with the repeats along ``axis``

    Returns
    -------
    (mean, stderr) : float64 arrays without ``axis``

    Examples
    --------
    >>> m, se = mean_and_stderr(np.array([0.1, 0.3]))
    >>> round(float(m), 6), round(float(se), 6)
    (0.2, 0.1)
    """
    v = np.asarray(values, dtype=np.float64)
    finite = np.isfinite(v)
    count = finite.sum(axis=axis)
    filled = np.where(finite, v, 0.0)
    with np.errstate(invalid="ignore", divide="ignore"):
        mean = filled.sum(axis=axis) / count
        dev = np.where(finite, v - np.expand_dims(mean, axis), 0.0)
        var = (dev * dev).sum(axis=axis) / (count - 1)
        stderr = np.sqrt(var / count)
    mean = np.where(count > 0, mean, np.nan)
    stderr = np.where(count > 1, stderr, np.nan)
    return mean, stderr
