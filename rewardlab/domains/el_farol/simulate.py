"""Seeded simulation of the El Farol bar problem, as a joint step table.

``n`` agents each choose one of ``K`` nights every week (step ``t``), for
``T`` weeks per trial (episode), over ``E`` trials.  This follows Wolpert and
Tumer's COIN bar problem as the facts gathered for rewardlab state it (and
Agogino & Tumer's difference-reward derivation): **every agent attends exactly
one night a week**; there is no "stay home" action unless ``home=True`` is
set in the :class:`BarSetting`, in which case action ``K`` means "stays
home" (it attends no night, so it adds nothing to any night's attendance).

The policies are learning-free, so data has structure without training:

* ``"uniform"``: every agent draws its action uniformly from its action set
  every week;
* ``"preference"``: each agent has a favourite night, drawn once per call
  (the same in every trial, so agents keep their identity); every week it
  goes there with probability ``loyalty`` and otherwise draws uniformly.

A trial never terminates (PRLT's Bar Problem manager always returns
``false``: the termination condition is undefined); it is truncated after
``T`` weeks, so ``truncated`` is True on every agent's row of the last week.

Randomness comes from ``numpy.random.SeedSequence(seed)``: its child 0 draws
the favourite nights and child ``1 + e`` draws trial ``e``, so the same seed
gives the same table and the first ``k`` trials of ``E`` are the trials of
``simulate_actions(..., episodes=k)``.

Shipped settings (module constants)
-----------------------------------
* :data:`SMALL`: 50 agents, 6 nights, capacity ``b = 4`` (the setting of a
  reimplementation found in the facts, ``ElFarol(n_agents=50, b=4, k=6)``);
* :data:`LARGE`: 168 agents, 7 nights, capacity ``b = 6``: the setting
  usually cited for Wolpert and Tumer's experiments (168 agents, 7 nights in
  Vidal's summary; ``b = 6`` is UNVERIFIED: the papers' text was not found).

Examples
--------
>>> from rewardlab.domains.el_farol.simulate import SMALL, simulate_bar
>>> frame = simulate_bar(SMALL, episodes=2, weeks=3, seed=0)
>>> frame.shape
(300, 6)
>>> frame.columns
['episode_id', 't', 'agent_id', 'action', 'terminated', 'truncated']
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import polars as pl

from rewardlab.core.errors import ParameterError, check_choice, check_in_range, check_int, check_positive
from rewardlab.core.spec import FrameSpec, attach

__all__ = ["BarSetting", "SMALL", "LARGE", "SETTINGS", "POLICIES", "SPEC", "simulate_actions", "step_table",
           "simulate_bar"]

#: The spec :func:`step_table` attaches: one row per (episode, step, agent), an episode being one agent's weeks
#: of one trial (as the steps source reads a table with ``agent_id``), the action a plain column.
SPEC = FrameSpec(name="el_farol", episode=("episode_id", "agent_id"), step="t", agent="agent_id",
                 terminated="terminated", truncated="truncated", columns=("action",), contract="steps",
                 description="a simulated El Farol bar problem (rewardlab.domains.el_farol)")

#: The learning-free policies of :func:`simulate_actions`.
POLICIES = ("uniform", "preference")

#: The joint step table's columns, in order.
COLUMNS = ("episode_id", "t", "agent_id", "action", "terminated", "truncated")


@dataclass(frozen=True)
class BarSetting:
    """One bar problem: ``agents`` (n), ``nights`` (K), ``capacity`` (b) and whether agents may stay home.

    Parameters
    ----------
    agents : int
        ``n >= 1``.
    nights : int
        ``K >= 1``.
    capacity : float
        ``b > 0``: a night's utility ``x exp(-x / b)`` is largest at ``x = b``.
    home : bool, default False
        With True, action ``K`` means "stays home".

    Examples
    --------
    >>> BarSetting(agents=10, nights=3, capacity=2.0).actions
    3
    >>> BarSetting(agents=0, nights=3, capacity=2.0)
    Traceback (most recent call last):
    ...
    rewardlab.core.errors.ParameterError: `agents` should be >= 1. Received 0.
    """

    agents: int
    nights: int
    capacity: float
    home: bool = False

    def __post_init__(self):
        check_int("agents", self.agents, low=1)
        check_int("nights", self.nights, low=1)
        object.__setattr__(self, "capacity", check_positive("capacity", self.capacity))
        if not isinstance(self.home, (bool, np.bool_)):
            raise ParameterError("home", "should be True or False", self.home)

    @property
    def actions(self) -> int:
        """The size of an agent's action set: ``K``, or ``K + 1`` with home."""
        return self.nights + int(self.home)

    def reward_options(self) -> dict:
        """The keyword options of the :mod:`~rewardlab.domains.el_farol.rewards` functions.

        Examples
        --------
        >>> SMALL.reward_options()
        {'nights': 6, 'capacity': 4.0, 'home': False}
        """
        return {"nights": self.nights, "capacity": self.capacity, "home": self.home}


#: 50 agents, 6 nights, b = 4.
SMALL = BarSetting(agents=50, nights=6, capacity=4.0)
#: 168 agents, 7 nights, b = 6 (b UNVERIFIED; see the module docstring).
LARGE = BarSetting(agents=168, nights=7, capacity=6.0)
#: The shipped settings by name.
SETTINGS = {"small": SMALL, "large": LARGE}


def simulate_actions(setting: BarSetting, *, episodes: int, weeks: int, seed: int,
                     policy: str = "uniform", loyalty: float = 0.8) -> np.ndarray:
    """Every agent's action (night) in every week of every trial.

    Parameters
    ----------
    setting : BarSetting
        Agents, nights, capacity and the home option.
    episodes : int
        ``E >= 1`` trials.
    weeks : int
        ``T >= 1`` steps per trial.
    seed : int
        ``>= 0``.
    policy : {"uniform", "preference"}
        See the module docstring.
    loyalty : float, default 0.8
        ``"preference"`` only: the probability, in ``[0, 1]``, of going to the
        favourite night.

    Returns
    -------
    numpy.ndarray of int64, shape ``[E, T, n]``
        Actions in ``0 .. setting.actions - 1``.

    Examples
    --------
    >>> a = simulate_actions(SMALL, episodes=2, weeks=5, seed=1, policy="preference")
    >>> a.shape, int(a.min()) >= 0, int(a.max()) < SMALL.nights
    ((2, 5, 50), True, True)
    """
    if not isinstance(setting, BarSetting):
        raise ParameterError("setting", "should be a BarSetting (e.g. SMALL or LARGE)", setting)
    episodes = check_int("episodes", episodes, low=1)
    weeks = check_int("weeks", weeks, low=1)
    seed = check_int("seed", seed, low=0)
    check_choice("policy", policy, POLICIES)
    loyalty = check_in_range("loyalty", loyalty, 0, 1)
    n, m = setting.agents, setting.actions
    children = np.random.SeedSequence(seed).spawn(episodes + 1)
    favourite = np.random.default_rng(children[0]).integers(setting.nights, size=n)
    out = np.empty((episodes, weeks, n), dtype=np.int64)
    for e in range(episodes):
        rng = np.random.default_rng(children[1 + e])
        drawn = rng.integers(m, size=(weeks, n))
        if policy == "preference":
            loyal = rng.random((weeks, n)) < loyalty
            drawn = np.where(loyal, favourite[None, :], drawn)
        out[e] = drawn
    return out


def step_table(actions) -> pl.DataFrame:
    """The joint step table of ``actions`` (``[E, T, n]``): one row per (episode, step, agent).

    Rows are ordered by ``episode_id``, ``agent_id``, then ``t`` ascending (each agent's weeks of a trial
    together: an episode of :data:`SPEC` is one agent's steps, and its rows are contiguous, as the steps
    source gives them when the table is loaded; :func:`rewardlab.joint_view` lines them up per week);
    ``terminated`` is always False and ``truncated`` is True on the last week
    of each trial.

    Parameters
    ----------
    actions : array-like of int, shape ``[E, T, n]``

    Returns
    -------
    polars.DataFrame
        Columns ``episode_id``, ``t``, ``agent_id``, ``action`` (Int64) and
        ``terminated``, ``truncated`` (Boolean); ``E * T * n`` rows; :data:`SPEC` attached.

    Examples
    --------
    >>> step_table(np.array([[[2, 0], [1, 1]]])).rows()
    [(0, 0, 0, 2, False, False), (0, 1, 0, 1, False, True), (0, 0, 1, 0, False, False), (0, 1, 1, 1, False, True)]
    """
    arr = np.asarray(actions)
    if arr.ndim != 3:
        raise ParameterError("actions", "should be 3-D with shape [E, T, n] (episodes, weeks, agents)", arr.shape)
    if arr.size and arr.dtype.kind not in "iu":
        raise ParameterError("actions", "should hold integers (nights)", arr.dtype)
    e, t, n = arr.shape
    by_agent = arr.transpose(0, 2, 1)  # [E, n, T]: each agent's weeks together, as the steps source reads them
    ep, agent, step = (np.broadcast_to(v, by_agent.shape).ravel()
                       for v in np.ix_(np.arange(e), np.arange(n), np.arange(t)))
    return attach(pl.DataFrame({
        "episode_id": pl.Series(ep, dtype=pl.Int64),
        "t": pl.Series(step, dtype=pl.Int64),
        "agent_id": pl.Series(agent, dtype=pl.Int64),
        "action": pl.Series(by_agent.ravel(), dtype=pl.Int64),
        "terminated": pl.Series(np.zeros(arr.size, dtype=bool)),
        "truncated": pl.Series(step == t - 1),
    }), SPEC)


def simulate_bar(setting: BarSetting, *, episodes: int, weeks: int, seed: int, policy: str = "uniform",
                 loyalty: float = 0.8) -> pl.DataFrame:
    """:func:`simulate_actions` as a joint step table (:func:`step_table`).

    Parameters
    ----------
    setting, episodes, weeks, seed, policy, loyalty
        As in :func:`simulate_actions`.

    Returns
    -------
    polars.DataFrame
        ``E * T * n`` rows; columns ``episode_id, t, agent_id, action, terminated, truncated``.

    Examples
    --------
    >>> simulate_bar(SMALL, episodes=1, weeks=2, seed=0).height
    100
    """
    return step_table(simulate_actions(setting, episodes=episodes, weeks=weeks, seed=seed, policy=policy,
                                       loyalty=loyalty))
