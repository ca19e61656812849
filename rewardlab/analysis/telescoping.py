"""Does a reward difference telescope over episodes as potential-based shaping must?

Under potential-based shaping (Ng, Harada and Russell, 1999) the reward difference on a transition is
``r'[t] - r[t] = gamma * phi(s'[t]) - phi(s[t])`` (the potential of a terminal state is 0), so the
discounted return difference of an episode of ``T`` steps telescopes to

    ``sum_t gamma^t (r'_t - r_t) = gamma^T * phi(s_T) - phi(s_0)``

(``-phi(s_0)`` when it terminated).  :func:`telescoping_check` tests this without a feature basis:
episodes with the same start state (and, truncated, the same end state and length) must have equal
discounted return differences.  The least-squares potential in a basis is
:func:`rewardlab.analysis.shaping.fit_potential`.

:func:`telescoping_check` has a plain-loop twin, :func:`telescoping_check_reference`, which the tests
compare.

Examples
--------
>>> import numpy as np
>>> phi = {0: 1.0, 1: 5.0, 2: -2.0}
>>> episodes = [[0, 1, 2], [0, 2], [1, 2]]  # states visited; each episode terminates after its last
>>> diff = np.array([0.9 * (phi[e[t + 1]] if t + 1 < len(e) else 0.0) - phi[e[t]]
...                  for e in episodes for t in range(len(e))])
>>> starts = np.array([0, 3, 5, 7]); first = np.array([e[0] for e in episodes])
>>> out = telescoping_check(diff, starts, gamma=0.9, start_keys=first, tolerance=1e-9)
>>> out.n_groups, out.broken.tolist()  # episodes 0 and 1 share a start state and agree
(1, [])
>>> out = telescoping_check(diff + np.array([0, 0.1, 0, 0, 0, 0, 0]), starts, gamma=0.9,
...                         start_keys=first, tolerance=1e-9)
>>> out.broken.tolist(), out.episodes.tolist()
([0], [0, 1])
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from rewardlab.analysis.potential_bases import tabular_ids
from rewardlab.analysis.returns import as_array, discounted_reward_to_go
from rewardlab.core.errors import ParameterError, check_in_range

__all__ = ["TelescopingCheck", "telescoping_check", "telescoping_check_reference"]


@dataclass(frozen=True, eq=False)
class TelescopingCheck:
    """Per-episode discounted return differences, grouped by what potential shaping lets them depend on.

    Attributes
    ----------
    returns : float64 array of shape ``[E]``
        ``sum_t gamma^t (r'_t - r_t)`` of each episode.
    group : int64 array of shape ``[E]``
        Each episode's group (same start state; truncated: same end state and length too); -1 for an
        episode left out.
    n_groups : int
        Groups of at least two episodes (the ones the identity can test).
    spread : float64 array of shape ``[G]``
        ``max - min`` of the returns of each group (0 for a group of one).
    broken : int64 array
        Groups whose spread exceeds the tolerance, widest first.
    episodes : int64 array
        The episodes of the broken groups, farthest from their group's median first.
    tolerance : float
        The absolute tolerance used.
    """

    returns: np.ndarray
    group: np.ndarray
    n_groups: int
    spread: np.ndarray
    broken: np.ndarray
    episodes: np.ndarray
    tolerance: float

    @property
    def max_spread(self) -> float:
        """The widest spread of a group of at least two episodes (0.0 when there is none)."""
        return float(self.spread.max()) if self.spread.size else 0.0


def _key_ids(keys, e: int, name: str) -> np.ndarray:
    k = np.asarray(keys)
    if k.ndim == 1:
        k = k[:, None]
    if k.ndim != 2 or k.shape[0] != e:
        raise ParameterError(name, f"should have one row per episode ({e})", k.shape)
    return tabular_ids(k) if e else np.zeros(0, dtype=np.int64)


def _check_telescoping(difference, episode_starts, gamma, start_keys, end_keys, truncated_last, skip,
                       tolerance):
    d = as_array(difference, "difference")
    starts = np.asarray(episode_starts)
    if starts.ndim != 1 or starts.size < 1 or starts.dtype.kind not in "iu" or starts[0] != 0 \
            or starts[-1] != d.shape[0] or np.any(np.diff(starts) <= 0):
        raise ParameterError("episode_starts", f"should be increasing row numbers from 0 to N={d.shape[0]} "
                             "(each episode's first row, then N)", starts[:5].tolist())
    starts = starts.astype(np.int64)
    e = starts.size - 1
    gamma = check_in_range("gamma", gamma, 0.0, 1.0)
    tolerance = check_in_range("tolerance", tolerance, 0.0, np.inf)
    trunc = (np.zeros(e, dtype=bool) if truncated_last is None
             else as_array(truncated_last, "truncated_last", dtype=bool, length=e))
    left = np.zeros(e, dtype=bool) if skip is None else as_array(skip, "skip", dtype=bool, length=e)
    start_ids = _key_ids(start_keys, e, "start_keys")
    if end_keys is None:
        end_ids = np.full(e, -1, dtype=np.int64)
        left = left | trunc  # a truncated episode's end state is unknown: nothing to compare it with
    else:
        end_ids = _key_ids(end_keys, e, "end_keys")
    return d, starts, e, gamma, tolerance, trunc, left, start_ids, end_ids


def telescoping_check(difference, episode_starts, *, gamma: float, start_keys, end_keys=None,
                      truncated_last=None, skip=None, tolerance: float) -> TelescopingCheck:
    """Check that episodes with the same start state (and end) have equal discounted return differences.

    Under potential shaping, ``sum_t gamma^t (r'_t - r_t) = gamma^T phi(s_T) [truncated] - phi(s_0)``
    over an episode of ``T`` steps: it depends only on the start state, and for a truncated episode on
    its end state and length too (the length only when ``gamma < 1``).

    Parameters
    ----------
    difference : float array of shape ``[N]``
        ``r' - r``, episodes one after another.
    episode_starts : int array of shape ``[E + 1]``
        Each episode's first row, then ``N``.
    gamma : float
        The discount, in [0, 1].
    start_keys : array of shape ``[E]`` or ``[E, D]``
        Each episode's start state (compared by value).
    end_keys : array of shape ``[E]`` or ``[E, D]``, optional
        Each episode's end state ``s_T`` (read for truncated episodes only); without it truncated
        episodes are left out.
    truncated_last : bool array of shape ``[E]``, optional
        True for an episode that ended truncated (default: none).
    skip : bool array of shape ``[E]``, optional
        Episodes to leave out (a truncated episode whose end state the data lacks).
    tolerance : float
        Absolute: a group is broken when its returns spread more than this.

    Returns
    -------
    TelescopingCheck

    Examples
    --------
    >>> out = telescoping_check(np.array([1.0, 0.0, 1.0, 0.5]), np.array([0, 2, 4]), gamma=1.0,
    ...                         start_keys=np.array([7, 7]), tolerance=1e-9)
    >>> out.returns.tolist(), out.n_groups, out.broken.tolist(), out.episodes.tolist()
    ([1.0, 1.5], 1, [0], [1, 0])
    """
    d, starts, e, gamma, tolerance, trunc, left, start_ids, end_ids = _check_telescoping(
        difference, episode_starts, gamma, start_keys, end_keys, truncated_last, skip, tolerance)
    done = np.zeros(d.shape[0], dtype=bool)
    done[starts[1:] - 1] = True
    returns = discounted_reward_to_go(d, done, gamma=gamma)[starts[:-1]] if e else np.zeros(0)
    lengths = np.diff(starts)
    key = np.column_stack([start_ids, trunc.astype(np.int64), np.where(trunc, end_ids, -1),
                           np.where(trunc & (gamma < 1.0), lengths, -1)])
    group = np.full(e, -1, dtype=np.int64)
    use = np.flatnonzero(~left)
    if use.size == 0:
        return TelescopingCheck(returns, group, 0, np.zeros(0), np.zeros(0, np.int64), np.zeros(0, np.int64),
                                tolerance)
    group[use] = np.unique(key[use], axis=0, return_inverse=True)[1].ravel()
    g = int(group.max()) + 1
    order = use[np.lexsort((returns[use], group[use]))]  # by group, then return
    gs = group[order]
    first = np.flatnonzero(np.r_[True, gs[1:] != gs[:-1]])
    last = np.r_[first[1:], order.size] - 1
    spread = returns[order[last]] - returns[order[first]]
    sizes = last - first + 1
    median = returns[order[first + (sizes - 1) // 2]]
    broken = np.flatnonzero((sizes > 1) & (spread > tolerance))
    broken = broken[np.argsort(-spread[broken], kind="stable")]
    members = np.flatnonzero(np.isin(group, broken))
    rank_of = np.empty(g, dtype=np.int64)
    rank_of[broken] = np.arange(broken.size)
    dev = np.abs(returns[members] - median[group[members]])
    members = members[np.lexsort((-dev, rank_of[group[members]]))]
    return TelescopingCheck(returns, group, int(np.sum(sizes > 1)), spread, broken.astype(np.int64),
                            members.astype(np.int64), tolerance)


def telescoping_check_reference(difference, episode_starts, *, gamma: float, start_keys, end_keys=None,
                                truncated_last=None, skip=None, tolerance: float) -> dict:
    """Plain-loop twin of :func:`telescoping_check`.

    Returns
    -------
    dict
        ``returns`` (list [E]), ``groups`` (``{key: [episodes]}``), ``broken`` (set of frozensets of
        episodes).

    Examples
    --------
    >>> telescoping_check_reference(np.array([1.0, 2.0]), np.array([0, 1, 2]), gamma=0.5,
    ...                             start_keys=np.array([0, 0]), tolerance=0.1)["broken"]
    {frozenset({0, 1})}
    """
    d, starts, e, gamma, tolerance, trunc, left, _, _ = _check_telescoping(
        difference, episode_starts, gamma, start_keys, end_keys, truncated_last, skip, tolerance)
    sk = np.asarray(start_keys).reshape(e, -1)
    ek = None if end_keys is None else np.asarray(end_keys).reshape(e, -1)
    returns, groups = [], {}
    for i in range(e):
        total, weight = 0.0, 1.0
        for t in range(starts[i], starts[i + 1]):
            total += weight * d[t]
            weight *= gamma
        returns.append(total)
        if left[i]:
            continue
        key = (tuple(sk[i].tolist()), bool(trunc[i]))
        if trunc[i]:
            key += (tuple(ek[i].tolist()), int(starts[i + 1] - starts[i]) if gamma < 1 else -1)
        groups.setdefault(key, []).append(i)
    broken = {frozenset(m) for m in groups.values()
              if len(m) > 1 and max(returns[i] for i in m) - min(returns[i] for i in m) > tolerance}
    return {"returns": returns, "groups": groups, "broken": broken}
