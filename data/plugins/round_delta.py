# Per-round reward: the player's score change in the round, one trajectory per round.
#
#     reward = (results[seat] - _DELTA_MEAN) / _DELTA_STDEV   on the player's last step in a round
#     done   = end_of_round | end_of_game
#
# A kanachan reward plug-in (written for rewardlab, self-contained: imports only torch
# and tensordict). results[0:4] hold the round's score changes of seats 0-3 on the
# player's last step in each round, including the game's last round; the reward is 0
# on every other step. Vectorized: no Python loop over rows; batch-invariant.
#
# The end-of-game trap: in offline annotation files end_of_round is False on the
# game's last step (kanachan's own simulator sets it True there), so
# `done = end_of_round` alone would never end the game's last trajectory and would
# leave its reward unpaid. This plug-in ORs in end_of_game, for both.
#
# _DELTA_MEAN / _DELTA_STDEV: mean and sample std (ddof=1) of results[seat] on every
# step that ends a round or the game in the bundled sample data/sample.tsv.gz (`rewardlab sample --games 240 --seed 2024`: 119,555
# transitions, 960 episodes), computed with data/plugins/tools/constants.py.
# Recompute them for your own training data.
import torch
from torch import Tensor
from tensordict import TensorDict

_DELTA_MEAN = 0.0
_DELTA_STDEV = 4438.853777633086


def get_reward(data: TensorDict, contiguous: bool) -> None:
    end_of_round: Tensor = data["next", "end_of_round"]
    end_of_game: Tensor = data["next", "end_of_game"]
    round_end = end_of_round | end_of_game
    reward = torch.zeros(round_end.shape, dtype=torch.float64)
    rows = torch.nonzero(round_end)[:, 0]
    seat = data["sparse"][rows, 6].to(torch.int64) - 71
    delta = data["next", "results"][rows, 0:4].to(torch.int64).gather(1, seat[:, None])[:, 0]
    reward[rows] = (delta.to(torch.float64) - _DELTA_MEAN) / _DELTA_STDEV
    data["next", "reward"] = reward
    data["next", "done"] = round_end
