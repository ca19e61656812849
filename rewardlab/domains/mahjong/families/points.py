"""End-of-game raw points: the final score with an offset and a divisor.

``raw = (score - offset) / divisor`` (float64, true division) on the
end-of-game step, then ``reward = (raw - mean) / std``; every other step gets
0.  ``done`` is left at the end of the game.  This is the wiki's "End-of-Game
Raw Points" example with ``offset = 0, divisor = 1`` and the constants
computed from data.

Examples
--------
>>> from rewardlab.domains.mahjong.families import Points
>>> Points.from_preset("thousands").params.divisor
1000.0
>>> Points(PointsParams(divisor=0))
Traceback (most recent call last):
...
rewardlab.core.errors.ParameterError: `divisor` should be a nonzero number. Received 0.0.
"""

from __future__ import annotations

import dataclasses

import numpy as np
import torch

from rewardlab.core.errors import ParameterError
from rewardlab.domains.mahjong.families.base import (
    affine_extremes,
    end_of_game_export_body,
    PreparedFrame,
    MahjongFamily,
    td_game_rows,
)
from rewardlab.families.parameters import (
    check_real, mean_field, param_field, provenance_field, std_field, validate_normalization,
)
from rewardlab.families.provenance import Provenance
from rewardlab.families.base import register_family
from rewardlab.domains.mahjong.families.preset_values import POINTS_PRESETS

__all__ = ["PointsParams", "Points", "POINTS_PRESETS", "check_divisor"]

def check_divisor(name: str, value) -> float:
    """A finite, nonzero float, else ParameterError.

    Examples
    --------
    >>> check_divisor("divisor", 1000)
    1000.0
    >>> check_divisor("divisor", 0)
    Traceback (most recent call last):
    rewardlab.core.errors.ParameterError: `divisor` should be a nonzero number. Received 0.0.
    """
    value = check_real(name, value)
    if value == 0:
        raise ParameterError(name, "should be a nonzero number", value)
    return value


@dataclasses.dataclass(frozen=True)
class PointsParams:
    """Parameters of the :class:`Points` family.

    Attributes
    ----------
    offset : float
        Subtracted from the final score (e.g. the starting 25000).
    divisor : float
        The score minus offset is divided by it (nonzero), e.g. 1000.
    mean, std : float
        Normalization of ``raw = (score - offset) / divisor``; ``std > 0``.
    provenance : Provenance

    Examples
    --------
    >>> PointsParams(offset=25000, divisor=1000).offset
    25000.0
    """

    offset: float = param_field(0.0, "Subtracted from the final score (e.g. 25000, the starting score).",
                                min=0.0, max=50000.0, step=100.0)
    divisor: float = param_field(1.0, "The final score minus offset is divided by it (nonzero).",
                                 min=1.0, max=10000.0, step=1.0)
    mean: float = mean_field(100000.0, 0.001)
    std: float = std_field(100000.0, 0.001)
    provenance: Provenance = provenance_field()

    def __post_init__(self):
        object.__setattr__(self, "offset", check_real("offset", self.offset))
        object.__setattr__(self, "divisor", check_divisor("divisor", self.divisor))
        validate_normalization(self)

    def raw_extremes(self) -> list[tuple[float, str, str, float]]:
        """``(raw, where, parameter, value)`` at the lowest and highest Int32 final score (float64, as the file).

        The parameter blamed is ``offset`` when it is itself out of range, else ``divisor``.

        Examples
        --------
        >>> PointsParams(offset=0, divisor=1).raw_extremes()[0][:2]
        (-2147483648.0, 'a final score of -2147483648')
        """
        return affine_extremes(self.offset, self.divisor, "a final score")


@dataclasses.dataclass(frozen=True)
@register_family
class Points(MahjongFamily):
    """End-of-game reward from the final score (see the module docstring).

    Examples
    --------
    >>> Points(PointsParams(offset=25000, divisor=1000)).params.offset
    25000.0
    """

    params: PointsParams = dataclasses.field(default_factory=PointsParams)

    name = "points"
    title = "End-of-game raw points"
    #: What the exported file computes, for its header.
    export_formula = (
        '((score - offset) / divisor - mean) / std on end-of-game steps, 0.0 elsewhere;',
        "done = end_of_game.  score: the acting player's final score.",
    )
    params_type = PointsParams
    presets = POINTS_PRESETS
    export_body = end_of_game_export_body('''
    score = scores.gather(1, seat.unsqueeze(1)).squeeze(1)
    raw = (score.to(_RL_torch.float64) - _RL_OFFSET) / _RL_DIVISOR
''')

    def raw_values(self, prepared: PreparedFrame) -> np.ndarray:
        p = self.params
        return (prepared.score.astype(np.float64) - p.offset) / p.divisor

    def raw_td(self, data):
        p = self.params
        end_of_game, rows, seat, scores = td_game_rows(data)
        score = scores.gather(1, seat.unsqueeze(1)).squeeze(1)
        raw = (score.to(torch.float64) - p.offset) / p.divisor
        return rows, raw, end_of_game.clone()

    def export_literals(self) -> dict[str, object]:
        p = self.params
        return {"_RL_OFFSET": p.offset, "_RL_DIVISOR": p.divisor, **super().export_literals()}
