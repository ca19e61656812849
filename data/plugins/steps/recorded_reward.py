# The step table's own recorded reward, unchanged: a baseline to compare candidates against.
#
# Step-table sources hand the reward the environment recorded to steps plug-ins under the
# root IN key "recorded_reward" (an extra column of the frame's spec; the same values are
# the candidate column reward_recorded). This plug-in returns it as ("next", "reward"):
# a float column keeps its dtype, integers become float64. `done` is left as given.
#
# A plug-in for rewardlab's steps contract (self-contained: imports only torch).
import torch

RECORDED_KEY = "recorded_reward"


def get_reward(data, contiguous):
    recorded = data[RECORDED_KEY]
    if not recorded.is_floating_point():
        recorded = recorded.to(torch.float64)
    data["next", "reward"] = recorded.clone()
