# End-of-game ranking reward: Top two, [1.0, 1.0, -1.0, -1.0].
#
# A kanachan reward plug-in (written for rewardlab, self-contained: imports only torch
# and tensordict). On the player's last step in the game the reward is the value of the
# final rank, normalized as in the kanachan wiki's example, (v - mean(v)) / std(v) with
# torch's default (sample) std; 0 on every other step. `done` is left as given
# (end_of_game). Vectorized: no Python loop over rows; batch-invariant.
import torch
from torch import Tensor
from tensordict import TensorDict

_REWARD_BY_RANKING = [1.0, 1.0, -1.0, -1.0]
_REWARD = torch.tensor(_REWARD_BY_RANKING, device="cpu", dtype=torch.float64)
_REWARD_MEAN = _REWARD.mean()
_REWARD_STDEV = _REWARD.std()
_NORMALIZED = (_REWARD - _REWARD_MEAN) / _REWARD_STDEV


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
    _, rank = _final_rank(data["sparse"][rows], data["next", "results"][rows])
    reward[rows] = _NORMALIZED[rank]
    data["next", "reward"] = reward
