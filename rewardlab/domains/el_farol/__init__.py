"""The El Farol bar problem: a seeded simulation and its rewards (global, local, difference, Wonderful Life).

:mod:`~rewardlab.domains.el_farol.simulate` plays learning-free policies and
writes a joint step table; :mod:`~rewardlab.domains.el_farol.rewards` holds the
vectorized rewards over ``[S, n]`` joint actions with a brute force beside each;
:mod:`~rewardlab.domains.el_farol.family` makes them a family of the family core
(``el_farol``) exported as a reward-manager file.  The family's names are
imported on first use (PEP 562): the family loads the plug-in runner.

Examples
--------
>>> from rewardlab.domains.el_farol import SMALL, simulate_actions, difference_reward
>>> a = simulate_actions(SMALL, episodes=1, weeks=4, seed=0)[0]
>>> difference_reward(a, **SMALL.reward_options()).shape
(4, 50)
"""

from rewardlab.core.lazy import install
from rewardlab.domains.el_farol.rewards import (
    REWARD_KINDS, agent_rewards, attendance, check_actions, difference_reward, difference_reward_loop,
    global_reward, global_reward_loop, local_reward, local_reward_loop, night_utility, uniform_division_reward,
    uniform_division_reward_loop, wonderful_life_reward, wonderful_life_reward_loop,
)
from rewardlab.domains.el_farol.simulate import (
    LARGE, POLICIES, SETTINGS, SMALL, SPEC, BarSetting, simulate_actions, simulate_bar, step_table,
)

__all__ = [
    "REWARD_KINDS", "agent_rewards", "attendance", "check_actions", "difference_reward", "difference_reward_loop",
    "global_reward", "global_reward_loop", "local_reward", "local_reward_loop", "night_utility",
    "uniform_division_reward", "uniform_division_reward_loop", "wonderful_life_reward",
    "wonderful_life_reward_loop",
    "LARGE", "POLICIES", "SETTINGS", "SMALL", "SPEC", "BarSetting", "simulate_actions", "simulate_bar", "step_table",
]

install(globals(), {"rewardlab.domains.el_farol.family": (
    "KIND_ALIASES", "ElFarolParams", "ElFarolPrepared", "ElFarolFamily", "ManagerRoundTrip", "manager_roundtrip",
    "ElFarolExport", "export_el_farol_manager",
)})
