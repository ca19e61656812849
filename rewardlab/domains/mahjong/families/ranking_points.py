"""End-of-game ranking + points: ``vector[rank] + (score - offset) // divisor``.

The wiki's "End-of-Game Ranking + Raw Points" example: the rank entry plus
the final score's floor-divided difference from an offset, in integers (so
``offset`` and ``divisor`` are integers, ``divisor >= 1``, and ``//`` floors
towards minus infinity as in Python), then ``reward = (raw - mean) / std`` in
float64 on the end-of-game step and 0 elsewhere.  ``done`` is left at the end
of the game.

Examples
--------
>>> from rewardlab.domains.mahjong.families import RankingPoints
>>> fam = RankingPoints.from_preset("mleague")
>>> fam.params.vector, fam.params.offset, fam.params.divisor
((500.0, 100.0, -100.0, -300.0), 30000, 100)
"""

from __future__ import annotations

import dataclasses

import numpy as np
import torch

from rewardlab.core.errors import check_int
from rewardlab.domains.mahjong.families.base import (
    end_of_game_export_body,
    PreparedFrame,
    MahjongFamily,
    td_game_rows,
    td_ranks,
    SCORE_RANGE,
    check_vector,
)
from rewardlab.families.parameters import (
    mean_field, param_field, provenance_field, std_field, validate_normalization,
)
from rewardlab.families.provenance import Provenance
from rewardlab.families.base import register_family
from rewardlab.domains.mahjong.families.preset_values import RANKING_POINTS_PRESETS
from rewardlab.domains.mahjong.families.ranking import VECTOR_DOC

__all__ = ["RankingPointsParams", "RankingPoints", "RANKING_POINTS_PRESETS"]

_LIMIT = -SCORE_RANGE[0]  # 2**31: scores are int32; integers stay exact in int64 and float64


@dataclasses.dataclass(frozen=True)
class RankingPointsParams:
    """Parameters of the :class:`RankingPoints` family.

    Attributes
    ----------
    vector : tuple of 4 floats
        Raw reward by final rank (entry 0: first place).
    offset : int
        Subtracted from the final score before the floor division.
    divisor : int
        ``(score - offset) // divisor``; an integer >= 1.
    mean, std : float
        Normalization; ``std > 0``.
    provenance : Provenance

    Examples
    --------
    >>> RankingPointsParams(vector=(1, 0, 0, -1), offset=25000, divisor=0)
    Traceback (most recent call last):
    ...
    rewardlab.core.errors.ParameterError: `divisor` should be >= 1. Received 0.
    """

    vector: tuple[float, float, float, float] = param_field(
        (135.0, 65.0, -5.0, -255.0), VECTOR_DOC, min=-1000.0, max=1000.0, step=1.0)
    offset: int = param_field(25000, "Subtracted from the final score (integer).",
                              min=0, max=50000, step=100)
    divisor: int = param_field(1000, "The score minus offset is floor-divided by it (integer >= 1).",
                               min=1, max=10000, step=1)
    mean: float = mean_field(10000.0, 0.001)
    std: float = std_field(10000.0, 0.001)
    provenance: Provenance = provenance_field()

    def __post_init__(self):
        object.__setattr__(self, "vector", check_vector("vector", self.vector))
        object.__setattr__(self, "offset", check_int("offset", self.offset, low=-_LIMIT, high=_LIMIT,
                                                     integral_float=True))
        object.__setattr__(self, "divisor", check_int("divisor", self.divisor, low=1, high=_LIMIT,
                                                      integral_float=True))
        validate_normalization(self)

    def raw_extremes(self) -> list[tuple[float, str, str, float]]:
        """``(raw, where, parameter, value)`` at each rank with the lowest and highest Int32 score.

        ``raw`` is computed as the file computes it (integer floor division,
        then a float64 sum), and is monotonic in the score.

        Examples
        --------
        >>> RankingPointsParams(vector=(1, 0, 0, -1), offset=0, divisor=1).raw_extremes()[1][:2]
        (2147483648.0, 'final rank 1 with a final score of 2147483647')
        """
        out = []
        for k, v in enumerate(self.vector):
            for score in SCORE_RANGE:
                points = (score - self.offset) // self.divisor
                raw = float(np.float64(v) + np.float64(points))
                out.append((raw, f"final rank {k + 1} with a final score of {score}", f"vector[{k}]", v))
        return out


@dataclasses.dataclass(frozen=True)
@register_family
class RankingPoints(MahjongFamily):
    """End-of-game reward by rank plus floor-divided points (see the module docstring).

    Examples
    --------
    >>> RankingPoints.from_preset("mahjongsoul_jade_saint3").params.divisor
    1000
    """

    params: RankingPointsParams = dataclasses.field(default_factory=RankingPointsParams)

    name = "ranking_points"
    title = "End-of-game ranking + points"
    #: What the exported file computes, for its header.
    export_formula = (
        '(vector[rank] + (score - offset) // divisor - mean) / std on end-of-game',
        'steps, 0.0 elsewhere; done = end_of_game.  // floors (integers).',
    )
    params_type = RankingPointsParams
    presets = RANKING_POINTS_PRESETS
    export_body = end_of_game_export_body('''
    rank = _RL_ranks(scores, seat)
    score = scores.gather(1, seat.unsqueeze(1)).squeeze(1)
    points = _RL_torch.div(score - _RL_OFFSET, _RL_DIVISOR, rounding_mode="floor")
    raw = _RL_torch.tensor(_RL_VECTOR, dtype=_RL_torch.float64)[rank] + points.to(_RL_torch.float64)
''')

    def raw_values(self, prepared: PreparedFrame) -> np.ndarray:
        p = self.params
        points = np.floor_divide(prepared.score - p.offset, p.divisor)
        return np.asarray(p.vector, dtype=np.float64)[prepared.rank] + points.astype(np.float64)

    def raw_td(self, data):
        p = self.params
        end_of_game, rows, seat, scores = td_game_rows(data)
        rank = td_ranks(scores, seat)
        score = scores.gather(1, seat.unsqueeze(1)).squeeze(1)
        points = torch.div(score - p.offset, p.divisor, rounding_mode="floor")
        raw = torch.tensor(p.vector, dtype=torch.float64)[rank] + points.to(torch.float64)
        return rows, raw, end_of_game.clone()

    def export_literals(self) -> dict[str, object]:
        p = self.params
        return {"_RL_VECTOR": p.vector, "_RL_OFFSET": p.offset, "_RL_DIVISOR": p.divisor,
                **super().export_literals()}
