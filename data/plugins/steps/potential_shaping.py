# Potential-based reward shaping for the steps contract (Ng, Harada and Russell, 1999):
#
#     reward = GAMMA * potential(next obs) - potential(obs)
#
# with the potential of the state after a termination taken as 0 (the textbook rule: shaping
# of this form leaves the optimal policies of the task unchanged). After a truncation (a time
# limit) the episode did not end: the next state exists, and ("next", "obs") holds it, the
# episode's final observation, when the data keeps it (rewardlab.record, RLlib with new_obs,
# Minari, step tables with final rows or next_ columns). Where the data lacks it, ("next",
# "obs") is padding there and `rewardlab check-plugin` warns, naming the episodes. Add it to
# the task's own reward (e.g. the recorded one) in your trainer, or compare it on its own.
#
# `potential` is a plain function: replace it with your own (one float64 per row). The one
# here is minus the Euclidean length of the observation (higher nearer the origin).
#
# A plug-in for rewardlab's steps contract (self-contained: imports only torch). It reads
# the state column "obs" (change OBS_KEY for another state column), ("next", "obs") and
# ("next", "terminated"); `done` is left as given. Vectorized:
# no Python loop over rows; batch-invariant.
import torch

GAMMA = 0.99
OBS_KEY = "obs"


def potential(obs: torch.Tensor) -> torch.Tensor:
    """Minus the Euclidean length of each row's observation, in float64 (shape [B])."""
    flat = obs.to(torch.float64).reshape(obs.shape[0], -1)
    return -torch.linalg.vector_norm(flat, dim=1)


def get_reward(data, contiguous):
    after = torch.where(data["next", "terminated"], 0.0, potential(data["next", OBS_KEY]))
    data["next", "reward"] = GAMMA * after - potential(data[OBS_KEY])
