"""Returns: per-episode return and length, discounted reward-to-go, generalized advantage estimation.

Pure array functions, in the style of TorchRL's ``objectives/value/functional.py``
(NumPy arrays or torch tensors in, the same type out, float64) over one flat
time axis ``[T]`` holding many trajectories one after another, delimited by
``done``: :func:`segment_ids`, :func:`segment_returns`,
:func:`discounted_reward_to_go`, :func:`generalized_advantage_estimate`, and
the linear-recurrence scan under them, :func:`linear_scan`.

The layer over frames and dataset folders that reads a plug-in's reward,
its done column and the episodes through the frame's spec
(:func:`~rewardlab.analysis.return_tables.trajectory_returns`,
:func:`~rewardlab.analysis.return_tables.reward_to_go`,
:func:`~rewardlab.analysis.return_tables.gae`) is
:mod:`rewardlab.analysis.return_tables`.

Vectorization
-------------
The recursions ``x[t] = b[t] + a[t] * x[t + 1]`` are evaluated with a
doubling (Hillis-Steele) scan: ``ceil(log2(L))`` whole-array passes where
``L`` is the longest run without a cut, stopping early once every
coefficient product is 0.  Results equal the plain loop up to floating-point
reassociation (tests compare them with ``rtol=1e-10``).

Examples
--------
>>> import numpy as np
>>> from rewardlab.analysis.returns import discounted_reward_to_go
>>> discounted_reward_to_go(np.array([1.0, 1.0, 1.0]), np.array([False, True, True]), gamma=0.5)
array([1.5, 1. , 1. ])
"""

from __future__ import annotations

import numpy as np
import torch

from rewardlab.core.errors import ParameterError, check_in_range
from rewardlab.analysis.sums import segment_sums

__all__ = [
    "as_array",
    "linear_scan",
    "segment_ids",
    "segment_returns",
    "discounted_reward_to_go",
    "generalized_advantage_estimate",
]


# --------------------------------------------------------------------------
# Array plumbing
# --------------------------------------------------------------------------


def as_array(x, name: str, *, dtype=np.float64, length: int | None = None) -> np.ndarray:
    """``x`` (array-like or tensor, shape ``[T]`` or ``[T, 1]``) as a 1-D array of ``dtype``; ``name`` for messages.

    Examples
    --------
    >>> as_array([[1.0], [2.0]], "reward")
    array([1., 2.])
    """
    if isinstance(x, torch.Tensor):
        x = x.detach().cpu().numpy()
    arr = np.asarray(x)
    if arr.ndim == 2 and arr.shape[1] == 1:  # [T, 1], as kanachan allows for rewards
        arr = arr[:, 0]
    if arr.ndim != 1:
        raise ParameterError(name, "should be 1-D with shape [T]", arr.shape)
    if length is not None and arr.shape[0] != length:
        raise ParameterError(name, f"should have shape [{length}] like `reward`", arr.shape)
    if dtype is bool:
        if arr.dtype != np.bool_:
            if not np.all((arr == 0) | (arr == 1)):
                raise ParameterError(name, "should hold booleans (or 0/1)", arr[:5].tolist())
            arr = arr.astype(bool)
        return arr
    return arr.astype(dtype, copy=False)


def _like(template, arr: np.ndarray):
    """Return ``arr`` as a torch tensor if ``template`` is one (float64), else as is."""
    if isinstance(template, torch.Tensor):
        return torch.from_numpy(np.ascontiguousarray(arr))
    return arr


# --------------------------------------------------------------------------
# Pure functions
# --------------------------------------------------------------------------


def linear_scan(coef, offset, *, reverse: bool = True):
    """Solve the first-order linear recurrence over a flat time axis.

    ``reverse=True``: ``x[t] = offset[t] + coef[t] * x[t + 1]`` with
    ``x[T] = 0`` (returns, advantages).  ``reverse=False``:
    ``x[t] = offset[t] + coef[t] * x[t - 1]`` with ``x[-1] = 0`` (running
    discounted sums, as reward normalizers keep).

    Parameters
    ----------
    coef : array or tensor of shape ``[T]``
        Per-step coefficients; 0 cuts the recursion.
    offset : array or tensor of shape ``[T]``
        Per-step additive terms.
    reverse : bool
        Direction of the recursion.

    Returns
    -------
    array or tensor of shape ``[T]``, float64
        Same type as ``offset``.

    Examples
    --------
    >>> linear_scan(np.array([0.5, 0.5, 0.0]), np.array([1.0, 2.0, 4.0]))
    array([3., 4., 4.])
    >>> linear_scan(np.array([0.0, 0.5, 0.5]), np.array([1.0, 2.0, 4.0]), reverse=False)
    array([1.  , 2.5 , 5.25])

    A non-finite value stays behind a cut (``coef`` 0):

    >>> linear_scan(np.array([0.5, 0.0, 0.5]), np.array([1.0, 2.0, np.nan]))
    array([ 2.,  2., nan])
    """
    b = as_array(offset, "offset")
    a = as_array(coef, "coef", length=b.shape[0])
    if not reverse:
        return _like(offset, _reverse_scan(a[::-1], b[::-1])[::-1].copy())
    return _like(offset, _reverse_scan(a, b))


def _reverse_scan(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """Doubling scan for ``x[t] = b[t] + a[t] * x[t + 1]``, ``x[T] = 0``.

    After the pass with shift ``s``, ``x[t]`` is the solution restricted to
    ``[t, t + 2s)`` and ``A[t]`` the product of ``a`` over that window, so one
    pass doubles the window; once every ``A`` is 0 no window reaches further.
    """
    x = np.array(b, dtype=np.float64, copy=True)
    A = np.array(a, dtype=np.float64, copy=True)
    n = x.shape[0]
    if n == 0:
        return x
    A[-1] = 0.0  # nothing follows the last step
    # a non-finite value must not cross a cut: 0 * inf is NaN, so where the window's product is 0 the
    # step adds nothing (only checked when some value is not finite: finite data keeps the plain path)
    guard = not (np.isfinite(x).all() and np.isfinite(A).all())
    s = 1
    while s < n and A.any():
        with np.errstate(invalid="ignore" if guard else "warn"):
            step = A[:-s] * x[s:]
        if guard:
            step[A[:-s] == 0.0] = 0.0
        x[:-s] += step
        A[:-s] *= A[s:]
        A[-s:] = 0.0
        s *= 2
    return x


def segment_ids(done):
    """Index of the trajectory each step belongs to (0, 1, ...); a trajectory ends at each ``done``.

    Parameters
    ----------
    done : bool array or tensor of shape ``[T]``

    Returns
    -------
    int64 array or tensor of shape ``[T]``

    Examples
    --------
    >>> segment_ids(np.array([False, True, False, True, False]))
    array([0, 0, 1, 1, 2])
    """
    d = as_array(done, "done", dtype=bool)
    ids = np.zeros(d.shape[0], dtype=np.int64)
    if d.shape[0] > 1:
        np.cumsum(d[:-1], out=ids[1:])
    return _like(done, ids)


def segment_returns(reward, done):
    """Undiscounted return and length of each trajectory (trailing steps without ``done`` form the last one).

    Like ReinforcementLearning.jl's ``TotalRewardPerEpisode`` and
    ``StepsPerEpisode`` hooks, over a recorded trajectory.

    Parameters
    ----------
    reward : float array or tensor of shape ``[T]``
    done : bool array or tensor of shape ``[T]``

    Returns
    -------
    returns : float64 array or tensor of shape ``[E]``
    lengths : int64 array or tensor of shape ``[E]``

    Examples
    --------
    >>> segment_returns(np.array([1.0, 2.0, 4.0]), np.array([False, True, True]))
    (array([3., 4.]), array([2, 1]))
    """
    r = as_array(reward, "reward")
    d = as_array(done, "done", dtype=bool, length=r.shape[0])
    if r.shape[0] == 0:
        return _like(reward, np.zeros(0)), _like(reward, np.zeros(0, dtype=np.int64))
    ends = np.flatnonzero(d)
    if ends.size == 0 or ends[-1] != r.shape[0] - 1:
        ends = np.append(ends, r.shape[0] - 1)
    starts = np.concatenate(([0], ends[:-1] + 1))
    returns = segment_sums(r, starts)  # compensated, in order: the same wherever the segment lies
    lengths = (ends - starts + 1).astype(np.int64)
    return _like(reward, returns), _like(reward, lengths)


def discounted_reward_to_go(reward, done, *, gamma: float, terminated=None, next_value=None):
    """Discounted reward-to-go ``G[t] = r[t] + gamma * (1 - done[t]) * G[t + 1]``, bootstrapping cut trajectories.

    A trajectory that ends ``done`` but not ``terminated`` (truncated: cut by
    a time limit or the end of a recording) adds ``gamma * next_value[t]`` at
    its last step, TorchRL's TD(1) return: ``G[t] = r[t] + gamma *
    next_value[t]`` there.

    Parameters
    ----------
    reward : float array or tensor of shape ``[T]``
    done : bool array or tensor of shape ``[T]``
        True on the last step of each trajectory.
    gamma : float
        Discount factor in [0, 1].
    terminated : bool array or tensor of shape ``[T]``, optional
        Terminal steps; default ``done`` (no bootstrap anywhere).
    next_value : float array or tensor of shape ``[T]``, optional
        ``V(s[t + 1])``; read only where ``done and not terminated`` (NaN
        elsewhere is fine).  Needed when such steps exist.

    Returns
    -------
    float64 array or tensor of shape ``[T]``

    Examples
    --------
    >>> discounted_reward_to_go(np.array([0.0, 0.0, 1.0]), np.array([False, False, True]), gamma=0.9)
    array([0.81, 0.9 , 1.  ])
    >>> discounted_reward_to_go(np.array([0.0, 1.0]), np.array([False, True]), gamma=0.5,
    ...                         terminated=np.array([False, False]), next_value=np.array([0.0, 4.0]))
    array([1.5, 3. ])
    """
    gamma = check_in_range("gamma", gamma, 0.0, 1.0)
    r = as_array(reward, "reward")
    n = r.shape[0]
    d = as_array(done, "done", dtype=bool, length=n)
    offset = r
    if terminated is not None:
        term = as_array(terminated, "terminated", dtype=bool, length=n)
        cut = d & ~term
        if cut.any():
            if next_value is None:
                raise ParameterError("next_value", f"should be given: {int(cut.sum())} trajectories end "
                                     f"done but not terminated (first at step {int(np.flatnonzero(cut)[0])}) "
                                     "and bootstrap with the next state's value", None)
            nv = as_array(next_value, "next_value", length=n)
            boot = nv[cut]
            if not np.all(np.isfinite(boot)):
                raise ParameterError("next_value", "should be finite where a trajectory is cut "
                                     "(done and not terminated)", boot[~np.isfinite(boot)][:3].tolist())
            offset = r.copy()
            offset[cut] += gamma * boot
    return _like(reward, _reverse_scan(gamma * (~d), offset))


def generalized_advantage_estimate(reward, value, next_value, done, *, terminated=None,
                                   gamma: float, lmbda: float):
    """Generalized advantage estimation (Schulman et al. 2016) with separate terminated / done flags.

    ``delta[t] = r[t] + gamma * (1 - terminated[t]) * next_value[t] - value[t]``
    and ``A[t] = delta[t] + gamma * lmbda * (1 - done[t]) * A[t + 1]``:
    ``terminated`` cuts the bootstrap (the next state is terminal, worth 0),
    ``done`` cuts the recursion (the trajectory ends, whether or not the state
    is terminal), as in TorchRL's functional GAE.

    Parameters
    ----------
    reward, value, next_value : float arrays or tensors of shape ``[T]``
        Rewards, ``V(s[t])`` and ``V(s[t + 1])``.
    done : bool array or tensor of shape ``[T]``
        End of each trajectory.
    terminated : bool array or tensor of shape ``[T]``, optional
        Terminal next states; default ``done``.
    gamma, lmbda : float
        Discount and GAE lambda, in [0, 1].

    Returns
    -------
    advantage : float64 array or tensor of shape ``[T]``
    value_target : float64 array or tensor of shape ``[T]``
        ``advantage + value``.

    Examples
    --------
    >>> r = np.array([0.0, 1.0]); v = np.array([0.5, 0.5]); nv = np.array([0.5, 9.0])
    >>> adv, target = generalized_advantage_estimate(r, v, nv, np.array([False, True]), gamma=1.0, lmbda=1.0)
    >>> adv
    array([0.5, 0.5])
    """
    gamma = check_in_range("gamma", gamma, 0.0, 1.0)
    lmbda = check_in_range("lmbda", lmbda, 0.0, 1.0)
    r = as_array(reward, "reward")
    n = r.shape[0]
    v = as_array(value, "value", length=n)
    nv = as_array(next_value, "next_value", length=n)
    d = as_array(done, "done", dtype=bool, length=n)
    term = d if terminated is None else as_array(terminated, "terminated", dtype=bool, length=n)
    delta = r + gamma * np.where(term, 0.0, nv) - v
    adv = _reverse_scan(gamma * lmbda * (~d), delta)
    return _like(reward, adv), _like(reward, adv + v)
