# End-of-game ranking + raw points: Mahjong Soul, jade room, half-length game, Saint 3.
#
#     reward = _REWARD_BY_RANKING[rank] + (final score - 25000) // 1000
#
# with _REWARD_BY_RANKING = [135.0, 65.0, -5.0, -255.0], normalized as (reward - _REWARD_MEAN) / _REWARD_STDEV.
#
# A kanachan reward plug-in (written for rewardlab, self-contained: imports only torch
# and tensordict). Paid on the player's last step in the game, 0 on every other step;
# `done` is left as given (end_of_game). Vectorized: no Python loop over rows;
# batch-invariant. `//` is floor division, as in Python (rounds towards -infinity).
#
# _REWARD_MEAN / _REWARD_STDEV: mean and sample std (ddof=1) of the unnormalized reward
# of every episode in the bundled sample data/sample.tsv.gz (`rewardlab sample --games 240 --seed 2024`: 119,555
# transitions, 960 episodes), computed with data/plugins/tools/constants.py.
# Recompute them for your own training data.
import torch
from torch import Tensor
from tensordict import TensorDict

_REWARD_BY_RANKING = [135.0, 65.0, -5.0, -255.0]
_RANKING = torch.tensor(_REWARD_BY_RANKING, device="cpu", dtype=torch.float64)
_REWARD_MEAN = -15.438541666666667
_REWARD_STDEV = 157.82092904751443


def _final_rank(sparse: Tensor, results: Tensor) -> tuple[Tensor, Tensor]:
    """Final score and rank (0 = top) of the acting player, one per row.

    A player's rank counts the players with a higher final score; among
    equal scores the lower seat ranks higher (the wiki's loop).
    """
    seat = sparse[:, 6].to(torch.int64) - 71
    scores = results[:, 4:8].to(torch.int64)
    score = scores.gather(1, seat[:, None])
    other = torch.arange(4)[None, :]
    ahead = ((other < seat[:, None]) & (scores >= score)) | ((other > seat[:, None]) & (scores > score))
    return score[:, 0], ahead.sum(dim=1)


def get_reward(data: TensorDict, contiguous: bool) -> None:
    end_of_game: Tensor = data["next", "end_of_game"]
    reward = torch.zeros(end_of_game.shape, dtype=torch.float64)
    rows = torch.nonzero(end_of_game)[:, 0]
    score, rank = _final_rank(data["sparse"][rows], data["next", "results"][rows])
    points = torch.div(score - 25000, 1000, rounding_mode="floor")
    reward[rows] = (_RANKING[rank] + points.to(torch.float64) - _REWARD_MEAN) / _REWARD_STDEV
    data["next", "reward"] = reward
