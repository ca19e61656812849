"""El Farol bar-problem rewards: global, local, uniform division, difference and Wonderful Life.

Pure NumPy functions over many steps at once.  A step's joint action is a row
of ``actions`` (shape ``[S, n]``: ``S`` steps, ``n`` agents in ascending agent
order), each entry the night ``k`` in ``0 .. K-1`` the agent attends.  With
``home=True`` the action ``K`` means "stays home": that agent attends no night.

Formulas (``f(x) = x * exp(-x / b)``, the night utility, largest at ``x = b``)
-------------------------------------------------------------------------------
* attendance ``x_k``: the number of agents whose action is night ``k``;
* global ``G(z) = sum_k f(x_k)`` (the same for every agent of a step);
* local ``L_i = f(x_{k_i})``: the term of the agent's own night only (0 for an
  agent at home);
* uniform division ``UD_i = f(x_{k_i}) / x_{k_i} = exp(-x_{k_i} / b)``: the
  night's utility shared equally by the agents there (0 at home);
* difference ``D_i = G(z) - G(z_{-i})`` with ``z_{-i}`` the joint action
  without agent ``i``.  Every other night's term cancels:
  ``D_i = f(x_{k_i}) - f(x_{k_i} - 1)`` (0 at home);
* Wonderful Life ``WL_i = G(z) - G(CL_i(z))`` where ``CL_i`` clamps agent
  ``i``'s action to a fixed null action.  ``clamp=None`` (the default) clamps
  it *away* (agent ``i`` attends no night), as in the facts' source, so
  ``WL_i = D_i``; ``clamp=c`` clamps it to night ``c``:
  ``WL_i = 0`` when ``k_i = c``, else
  ``f(x_{k_i}) - f(x_{k_i} - 1) + f(x_c) - f(x_c + 1)``.

Sources: Wolpert & Tumer's COIN bar problem as summarised in Vidal's slides
(https://jmvidal.cse.sc.edu/talks/coin/farolexp.html: ``l_k(y) = a_k y
exp(-y/c)`` with ``a_k = 1`` here, UD, GR and WL with ``CL_w`` removing agent
``w``), and Agogino & Tumer's difference reward ``D_i = G(z) - G(z_{-i})``
with ``G(z) = sum_k x_k exp(-x_k / b)``.  Clamping to a fixed night ``c`` is
the general Wonderful Life clamp (a fixed action vector) of Wolpert & Tumer;
the facts gathered for rewardlab only state the null clamp.

Every vectorized function has a plain-loop brute force beside it
(``*_loop``), which recomputes ``G`` from scratch for each agent; the tests
compare the two.

Examples
--------
>>> import numpy as np
>>> from rewardlab.domains.el_farol.rewards import global_reward, difference_reward
>>> actions = np.array([[0, 1, 1, 1]])          # one step, 4 agents, 2 nights
>>> global_reward(actions, nights=2, capacity=4).round(4)
array([2.1959])
>>> difference_reward(actions, nights=2, capacity=4).round(4)
array([[0.7788, 0.204 , 0.204 , 0.204 ]])
"""

from __future__ import annotations

import math

import numpy as np

from rewardlab.core.errors import ParameterError, check_choice, check_int, check_positive

__all__ = [
    "REWARD_KINDS",
    "night_utility",
    "check_actions",
    "attendance",
    "global_reward",
    "local_reward",
    "uniform_division_reward",
    "difference_reward",
    "wonderful_life_reward",
    "agent_rewards",
    "global_reward_loop",
    "local_reward_loop",
    "uniform_division_reward_loop",
    "difference_reward_loop",
    "wonderful_life_reward_loop",
]

#: The per-agent reward kinds of :func:`agent_rewards`.
REWARD_KINDS = ("global", "local", "uniform_division", "difference", "wonderful_life")


# --------------------------------------------------------------------------
# Checks and shared pieces
# --------------------------------------------------------------------------


def _check_options(nights, capacity, home) -> tuple[int, float, bool]:
    nights = check_int("nights", nights, low=1)
    capacity = check_positive("capacity", capacity)
    if not isinstance(home, (bool, np.bool_)):
        raise ParameterError("home", "should be True or False", home)
    return nights, capacity, bool(home)


def check_actions(actions, *, nights: int, home: bool = False) -> np.ndarray:
    """``actions`` as an int64 array of shape ``[S, n]``, each entry a night in ``0 .. nights-1`` (or ``nights``: home).

    Parameters
    ----------
    actions : array-like of int, shape ``[S, n]``
        One row per step, one column per agent (ascending agent order).
    nights : int
        ``K``, the number of nights.
    home : bool, default False
        Whether action ``K`` (stay home) is allowed.

    Returns
    -------
    numpy.ndarray of int64, shape ``[S, n]``

    Examples
    --------
    >>> check_actions([[0, 2]], nights=2)
    Traceback (most recent call last):
    ...
    rewardlab.core.errors.ParameterError: `actions` should hold nights in 0..1 (home=False). Received 2.
    """
    nights = check_int("nights", nights, low=1)
    arr = np.asarray(actions)
    if arr.ndim != 2:
        raise ParameterError("actions", "should be 2-D with shape [S, n] (steps, agents)", arr.shape)
    if arr.size and arr.dtype.kind not in "iu":
        raise ParameterError("actions", "should hold integers (nights)", arr.dtype)
    arr = arr.astype(np.int64, copy=False)
    top = nights if home else nights - 1
    if arr.size:
        low, high = int(arr.min()), int(arr.max())
        if low < 0 or high > top:
            raise ParameterError("actions", f"should hold nights in 0..{top} (home={bool(home)})",
                                 low if low < 0 else high)
    return arr


def night_utility(x, *, capacity: float) -> np.ndarray:
    """``f(x) = x * exp(-x / b)``, the utility of a night with attendance ``x`` (any shape, float64).

    Examples
    --------
    >>> night_utility(np.array([0, 4, 8]), capacity=4).round(4)
    array([0.    , 1.4715, 1.0827])
    """
    capacity = check_positive("capacity", capacity)
    x = np.asarray(x, dtype=np.float64)
    return x * np.exp(-x / capacity)


def _utility_table(agents: int, capacity: float) -> np.ndarray:
    """``f(x)`` for ``x = 0 .. agents + 1``: rewards are lookups of integer attendances."""
    return night_utility(np.arange(agents + 2), capacity=capacity)


def _counts(actions: np.ndarray, bins: int) -> tuple[np.ndarray, np.ndarray]:
    """Attendance ``[S, bins]`` (int64) and the flat (step, action) index ``[S, n]`` of every agent."""
    steps = actions.shape[0]
    flat = actions + (np.arange(steps, dtype=np.int64) * bins)[:, None]
    counts = np.bincount(flat.ravel(), minlength=steps * bins).reshape(steps, bins)
    return counts, flat


def attendance(actions, *, nights: int, home: bool = False) -> np.ndarray:
    """``x_k``: how many agents attend each night, per step.

    Parameters
    ----------
    actions : array-like of int, shape ``[S, n]``
    nights : int
        ``K``.
    home : bool, default False
        Action ``K`` means stay home (not counted).

    Returns
    -------
    numpy.ndarray of int64, shape ``[S, K]``

    Examples
    --------
    >>> attendance([[0, 1, 1, 2]], nights=2, home=True)
    array([[1, 2]])
    """
    actions = check_actions(actions, nights=nights, home=home)
    counts, _ = _counts(actions, nights + 1)
    return counts[:, :nights]


def _prepare(actions, nights, capacity, home):
    nights, capacity, home = _check_options(nights, capacity, home)
    actions = check_actions(actions, nights=nights, home=home)
    counts, flat = _counts(actions, nights + 1)
    counts[:, nights] = 0  # home is no night: x_home = 0, f(0) = 0
    table = _utility_table(actions.shape[1], capacity)
    own = counts.ravel()[flat]  # x_{k_i}, [S, n]; 0 at home
    return actions, nights, capacity, counts, table, own


# --------------------------------------------------------------------------
# Vectorized rewards
# --------------------------------------------------------------------------


def global_reward(actions, *, nights: int, capacity: float, home: bool = False) -> np.ndarray:
    """``G(z) = sum_k x_k exp(-x_k / b)`` per step.

    Parameters
    ----------
    actions : array-like of int, shape ``[S, n]``
    nights : int
        ``K``.
    capacity : float
        ``b`` (> 0).
    home : bool, default False
        Action ``K`` means stay home.

    Returns
    -------
    numpy.ndarray of float64, shape ``[S]``

    Examples
    --------
    >>> global_reward([[0, 0, 0, 0], [0, 0, 1, 1]], nights=2, capacity=2).round(4)
    array([0.5413, 1.4715])
    """
    _, _, _, counts, table, _ = _prepare(actions, nights, capacity, home)
    return table[counts].sum(axis=1)


def local_reward(actions, *, nights: int, capacity: float, home: bool = False) -> np.ndarray:
    """``L_i = x_{k_i} exp(-x_{k_i} / b)``: the term of the agent's own night (0 at home).

    Parameters
    ----------
    actions : array-like of int, shape ``[S, n]``
    nights, capacity, home
        As in :func:`global_reward`.

    Returns
    -------
    numpy.ndarray of float64, shape ``[S, n]``

    Examples
    --------
    >>> local_reward([[0, 1, 1, 1]], nights=2, capacity=4).round(4)
    array([[0.7788, 1.4171, 1.4171, 1.4171]])
    """
    _, _, _, _, table, own = _prepare(actions, nights, capacity, home)
    return table[own]


def uniform_division_reward(actions, *, nights: int, capacity: float, home: bool = False) -> np.ndarray:
    """``UD_i = f(x_{k_i}) / x_{k_i} = exp(-x_{k_i} / b)``: the night's utility shared by its attendees (0 at home).

    Parameters
    ----------
    actions : array-like of int, shape ``[S, n]``
    nights, capacity, home
        As in :func:`global_reward`.

    Returns
    -------
    numpy.ndarray of float64, shape ``[S, n]``

    Examples
    --------
    >>> uniform_division_reward([[0, 1, 1, 1]], nights=2, capacity=4).round(4)
    array([[0.7788, 0.4724, 0.4724, 0.4724]])
    """
    _, _, capacity, _, _, own = _prepare(actions, nights, capacity, home)
    return np.where(own > 0, np.exp(-own / capacity), 0.0)


def difference_reward(actions, *, nights: int, capacity: float, home: bool = False) -> np.ndarray:
    """``D_i = G(z) - G(z_{-i}) = f(x_{k_i}) - f(x_{k_i} - 1)`` (0 at home).

    Only the agent's night changes when it is removed, so the closed form
    needs no recomputation of ``G``.

    Parameters
    ----------
    actions : array-like of int, shape ``[S, n]``
    nights, capacity, home
        As in :func:`global_reward`.

    Returns
    -------
    numpy.ndarray of float64, shape ``[S, n]``

    Examples
    --------
    >>> difference_reward([[0, 0, 1, 2]], nights=2, capacity=4, home=True).round(4)
    array([[0.4343, 0.4343, 0.7788, 0.    ]])
    """
    _, _, _, _, table, own = _prepare(actions, nights, capacity, home)
    diff = np.empty_like(table)
    diff[0] = 0.0
    diff[1:] = table[1:] - table[:-1]  # f(x) - f(x - 1)
    return diff[own]


def wonderful_life_reward(actions, *, nights: int, capacity: float, clamp: int | None = None,
                          home: bool = False) -> np.ndarray:
    """``WL_i = G(z) - G(CL_i(z))``: Wolpert and Tumer's Wonderful Life utility.

    Parameters
    ----------
    actions : array-like of int, shape ``[S, n]``
    nights, capacity, home
        As in :func:`global_reward`.
    clamp : int or None, default None
        The null action agent ``i`` is clamped to.  ``None``: clamped away
        (attends no night), which makes ``WL_i = D_i``.  A night ``c``:
        ``WL_i = f(x_{k_i}) - f(x_{k_i} - 1) + f(x_c) - f(x_c + 1)``, and 0 for
        the agents already at ``c`` (with ``home=True``, ``c = K`` is the
        same as ``None``).

    Returns
    -------
    numpy.ndarray of float64, shape ``[S, n]``

    Examples
    --------
    >>> wonderful_life_reward([[0, 1, 1, 1]], nights=2, capacity=4, clamp=1).round(4)
    array([[0.7244, 0.    , 0.    , 0.    ]])
    """
    actions, nights, _, counts, table, own = _prepare(actions, nights, capacity, home)
    if clamp is not None:
        clamp = check_int("clamp", clamp, low=0, high=nights if home else nights - 1,
                          rule=f"should be None or a night in 0..{nights if home else nights - 1}")
    diff = np.empty_like(table)
    diff[0] = 0.0
    diff[1:] = table[1:] - table[:-1]
    removed = diff[own]
    if clamp is None or clamp == nights:
        return removed
    at_clamp = counts[:, clamp]  # x_c; agents not at c are not counted in it
    added = table[at_clamp] - table[at_clamp + 1]  # f(x_c) - f(x_c + 1), [S]
    return np.where(actions == clamp, 0.0, removed + added[:, None])


def agent_rewards(actions, *, kind: str, nights: int, capacity: float, clamp: int | None = None,
                  home: bool = False) -> np.ndarray:
    """Per-agent rewards of one kind from :data:`REWARD_KINDS` (``"global"``: ``G`` given to every agent).

    Parameters
    ----------
    actions : array-like of int, shape ``[S, n]``
    kind : str
        ``"global"``, ``"local"``, ``"uniform_division"``, ``"difference"`` or
        ``"wonderful_life"``.
    nights, capacity, home
        As in :func:`global_reward`.
    clamp : int or None
        Only for ``"wonderful_life"`` (see :func:`wonderful_life_reward`).

    Returns
    -------
    numpy.ndarray of float64, shape ``[S, n]``

    Examples
    --------
    >>> agent_rewards([[0, 1]], kind="global", nights=2, capacity=4).round(4)
    array([[1.5576, 1.5576]])
    """
    check_choice("kind", kind, REWARD_KINDS)
    if clamp is not None and kind != "wonderful_life":
        raise ParameterError("clamp", "should be None unless kind is 'wonderful_life'", clamp)
    opts = dict(nights=nights, capacity=capacity, home=home)
    if kind == "global":
        g = global_reward(actions, **opts)
        return np.repeat(g[:, None], np.asarray(actions).shape[1], axis=1)
    if kind == "wonderful_life":
        return wonderful_life_reward(actions, clamp=clamp, **opts)
    return {"local": local_reward, "uniform_division": uniform_division_reward,
            "difference": difference_reward}[kind](actions, **opts)


# --------------------------------------------------------------------------
# Brute force: plain loops that recompute G from scratch (the tests' reference)
# --------------------------------------------------------------------------


def _g_of(row, nights: int, capacity: float) -> float:
    """``G`` of one joint action (a list of actions; ``None`` or ``nights`` is no night), from scratch."""
    x = [0] * nights
    for a in row:
        if a is not None and a != nights:
            x[a] += 1
    return sum(xk * math.exp(-xk / capacity) for xk in x)


def global_reward_loop(actions, *, nights: int, capacity: float, home: bool = False) -> np.ndarray:
    """:func:`global_reward` by a plain loop over steps.

    Examples
    --------
    >>> global_reward_loop([[0, 1, 1, 1]], nights=2, capacity=4).round(4)
    array([2.1959])
    """
    actions = check_actions(actions, nights=nights, home=home).tolist()
    return np.array([_g_of(row, nights, capacity) for row in actions], dtype=np.float64)


def _per_agent_loop(actions, nights, home, value) -> np.ndarray:
    rows = check_actions(actions, nights=nights, home=home)
    out = np.zeros(rows.shape, dtype=np.float64)
    for s, row in enumerate(rows.tolist()):
        for i in range(len(row)):
            out[s, i] = value(row, i)
    return out


def local_reward_loop(actions, *, nights: int, capacity: float, home: bool = False) -> np.ndarray:
    """:func:`local_reward` by a plain loop: count the agent's night, apply ``f``.

    Examples
    --------
    >>> local_reward_loop([[0, 1, 1, 1]], nights=2, capacity=4).round(4)
    array([[0.7788, 1.4171, 1.4171, 1.4171]])
    """
    def value(row, i):
        if row[i] == nights:
            return 0.0
        x = sum(1 for a in row if a == row[i])
        return x * math.exp(-x / capacity)
    return _per_agent_loop(actions, nights, home, value)


def uniform_division_reward_loop(actions, *, nights: int, capacity: float, home: bool = False) -> np.ndarray:
    """:func:`uniform_division_reward` by a plain loop: the night's ``f(x)`` divided by ``x``.

    Examples
    --------
    >>> uniform_division_reward_loop([[0, 1, 1, 1]], nights=2, capacity=4).round(4)
    array([[0.7788, 0.4724, 0.4724, 0.4724]])
    """
    def value(row, i):
        if row[i] == nights:
            return 0.0
        x = sum(1 for a in row if a == row[i])
        return x * math.exp(-x / capacity) / x
    return _per_agent_loop(actions, nights, home, value)


def difference_reward_loop(actions, *, nights: int, capacity: float, home: bool = False) -> np.ndarray:
    """:func:`difference_reward` by brute force: ``G(z)`` minus ``G`` recomputed with agent ``i`` removed.

    Examples
    --------
    >>> difference_reward_loop([[0, 1, 1, 1]], nights=2, capacity=4).round(4)
    array([[0.7788, 0.204 , 0.204 , 0.204 ]])
    """
    def value(row, i):
        without = row[:i] + row[i + 1:]
        return _g_of(row, nights, capacity) - _g_of(without, nights, capacity)
    return _per_agent_loop(actions, nights, home, value)


def wonderful_life_reward_loop(actions, *, nights: int, capacity: float, clamp: int | None = None,
                               home: bool = False) -> np.ndarray:
    """:func:`wonderful_life_reward` by brute force: ``G(z)`` minus ``G`` recomputed with agent ``i`` clamped.

    Examples
    --------
    >>> wonderful_life_reward_loop([[0, 1, 1, 1]], nights=2, capacity=4, clamp=1).round(4)
    array([[0.7244, 0.    , 0.    , 0.    ]])
    """
    def value(row, i):
        clamped = list(row)
        clamped[i] = clamp  # None: no night
        return _g_of(row, nights, capacity) - _g_of(clamped, nights, capacity)
    return _per_agent_loop(actions, nights, home, value)
