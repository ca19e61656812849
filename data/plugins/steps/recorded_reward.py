# The step table's own recorded reward, unchanged: a baseline to compare candidates against.
#
# Step-table sources keep the reward the environment recorded as the column reward_recorded
# (the candidate "recorded"), listed in the frame's spec columns, so steps plug-ins read it
# at the root IN key "reward_recorded". This plug-in returns it as ("next", "reward"):
# a float column keeps its dtype, integers become float64. `done` is left as given.
# (Applied, its output is reward_recorded_reward: no clash with the data's reward_recorded.)
#
# A plug-in for rewardlab's steps contract (self-contained: imports only torch).
import torch

RECORDED_KEY = "reward_recorded"


def get_reward(data, contiguous):
    recorded = data[RECORDED_KEY]
    if not recorded.is_floating_point():
        recorded = recorded.to(torch.float64)
    data["next", "reward"] = recorded.clone()
