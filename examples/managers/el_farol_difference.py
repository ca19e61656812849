"""El Farol bar problem: each agent gets its difference reward D_i = G(z) - G(z_-i).

A rewardlab reward manager (PRLT's RewardManager, in Python): rewardlab calls
``reset()`` at the start of each trial, then after every week's joint action
``get_reward(agent, state, joint_action)`` once per agent, in agent order.
Like PRLT's Bar Problem manager, it does the week's shared work on the first
agent's call: the attendance of each night, G (logged as the world utility)
and every agent's D_i, which then only needs a lookup per agent.

Removing agent i changes only its own night's term, so
D_i = f(x_k) - f(x_k - 1) with f(x) = x exp(-x / b) and k agent i's night.
The setting is rewardlab.domains.el_farol.SMALL: 6 nights, capacity b = 4.
Stand-alone: only numpy.

    rewardlab apply bar.parquet --plugin examples/managers/el_farol_difference.py --out rewards.parquet
"""

import numpy as np

NIGHTS = 6
CAPACITY = 4.0


class RewardManager:
    def __init__(self):
        self.table = None  # f(x) for x = 0 .. n + 1
        self.step = None  # f(x) - f(x - 1), 0 for x = 0
        self.world_utility = []
        self.rewards = None

    def reset(self):
        self.world_utility = []
        self.rewards = None

    def get_reward(self, agent, state, joint_action):
        if agent == 0:
            n = joint_action.shape[0]
            if self.table is None or self.table.shape[0] != n + 2:
                x = np.arange(n + 2).astype(np.float64)
                self.table = x * np.exp(-x / CAPACITY)
                self.step = np.empty_like(self.table)
                self.step[0] = 0.0
                self.step[1:] = self.table[1:] - self.table[:-1]
            counts = np.bincount(joint_action, minlength=NIGHTS + 1)
            self.world_utility.append(float(self.table[counts[None, :]].sum(axis=1)[0]))
            self.rewards = self.step[counts[joint_action]].tolist()
        return self.rewards[agent], False
