# A composite reward for MountainCar, reporting its terms (rewardlab's steps contract).
#
#     reward = task + progress + energy
#
#   task      the reward the environment recorded (reward_recorded: -1 on every step)
#   progress  potential-based shaping on the position (Ng, Harada and Russell, 1999):
#             GAMMA * phi(next obs) * (1 - terminated) - phi(obs), with
#             phi(obs) = PROGRESS_SCALE * (position - GOAL_POSITION) (0 at the goal, negative below it);
#             the potential is 0 after a termination, so the term telescopes and leaves the
#             optimal policies of the task unchanged
#   energy    a small bonus for speed: ENERGY_WEIGHT * |next velocity| (NOT potential-based: it
#             changes what is optimal, a little)
#
# Each term is written beside the reward under ("next", "reward_terms", NAME), a float64 tensor
# of shape [B] like the reward: rewardlab keeps them as columns term_mountaincar_terms.task, ...
# and `rewardlab diagnose` shows each term's scale, share of the reward's variance, sparsity and
# flags (a flat term, a dominating one). A trainer reads ("next", "reward") and ignores the rest.
#
# MountainCar-v0's observation is [position, velocity] (the state column "obs", float32 [B, 2]);
# after a truncation (the 200-step limit) ("next", "obs") holds the final observation where the
# data keeps it (rewardlab.record does). Self-contained: imports only torch. Vectorized: no Python
# loop over rows; batch-invariant; `done` is left as given.
import torch

GAMMA = 0.99
GOAL_POSITION = 0.5
PROGRESS_SCALE = 10.0
ENERGY_WEIGHT = 1.0
OBS_KEY = "obs"
RECORDED_KEY = "reward_recorded"


def potential(obs: torch.Tensor) -> torch.Tensor:
    """PROGRESS_SCALE * (position - GOAL_POSITION), in float64 (shape [B])."""
    return PROGRESS_SCALE * (obs[:, 0].to(torch.float64) - GOAL_POSITION)


def get_reward(data, contiguous):
    terminated = data["next", "terminated"]
    task = data[RECORDED_KEY].to(torch.float64).reshape(-1)
    after = torch.where(terminated, 0.0, potential(data["next", OBS_KEY]))
    progress = GAMMA * after - potential(data[OBS_KEY])
    energy = ENERGY_WEIGHT * data["next", OBS_KEY][:, 1].to(torch.float64).abs()
    data["next", "reward_terms", "task"] = task
    data["next", "reward_terms", "progress"] = progress
    data["next", "reward_terms", "energy"] = energy
    data["next", "reward"] = task + progress + energy
