"""El Farol bar problem: every agent gets the global reward G(z) = sum_k x_k exp(-x_k / b).

A rewardlab reward manager (PRLT's RewardManager, in Python): rewardlab calls
``reset()`` at the start of each trial, then after every week's joint action
``get_reward(agent, state, joint_action)`` once per agent, in agent order.
Like PRLT's Bar Problem manager, it computes G once, on the first agent's
call, logs it (the world utility), then hands it to every agent.

The setting is rewardlab.domains.el_farol.SMALL: 6 nights, capacity b = 4,
every agent attends exactly one night (no stay-home action).  Stand-alone:
only numpy.

    rewardlab apply bar.parquet --plugin examples/managers/el_farol_global.py --out rewards.parquet
"""

import numpy as np

NIGHTS = 6
CAPACITY = 4.0


class RewardManager:
    def __init__(self):
        self.table = None  # f(x) = x exp(-x / b) for x = 0 .. n + 1, built on the first call
        self.world_utility = []  # G of each week of the trial (PRLT logs it)
        self.global_reward = 0.0

    def reset(self):
        self.world_utility = []
        self.global_reward = 0.0

    def get_reward(self, agent, state, joint_action):
        if agent == 0:  # the week's first call: compute G for everyone
            if self.table is None or self.table.shape[0] != joint_action.shape[0] + 2:
                x = np.arange(joint_action.shape[0] + 2).astype(np.float64)
                self.table = x * np.exp(-x / CAPACITY)
            counts = np.bincount(joint_action, minlength=NIGHTS + 1)
            self.global_reward = float(self.table[counts[None, :]].sum(axis=1)[0])
            self.world_utility.append(self.global_reward)
        return self.global_reward, False
