"""Per-round score delta: a reward at the end of every round, and trajectories per round.

On every end-of-round step and on the end-of-game step (which carries the
last round's results), ``raw = (delta - offset) / divisor`` in float64, where
``delta = results[seat]`` is the acting player's score change in that round;
then ``reward = (raw - mean) / std``; every other step gets 0.  ``done`` is set
at the end of every round **and** at the end of the game
(``end_of_round | end_of_game``): the offline files mark the game's last step
``end_of_round = False``, so ``done = end_of_round`` alone would never end a
game's last trajectory.

Normalization constants from data are computed over the same steps (round
ends and game ends).

Examples
--------
>>> from rewardlab.domains.mahjong.families import RoundDelta
>>> RoundDelta.from_preset("thousands").params.divisor
1000.0
"""

from __future__ import annotations

import dataclasses

import numpy as np
import torch

from rewardlab.domains.mahjong.families.base import (
    affine_extremes,
    SCOPE_ROUND,
    PreparedFrame,
    MahjongFamily,
    td_seat,
)
from rewardlab.families.parameters import (
    check_real, mean_field, param_field, provenance_field, std_field, validate_normalization,
)
from rewardlab.families.provenance import Provenance
from rewardlab.families.base import register_family
from rewardlab.domains.mahjong.families.preset_values import ROUND_DELTA_PRESETS
from rewardlab.domains.mahjong.families.points import check_divisor

__all__ = ["RoundDeltaParams", "RoundDelta", "ROUND_DELTA_PRESETS"]

@dataclasses.dataclass(frozen=True)
class RoundDeltaParams:
    """Parameters of the :class:`RoundDelta` family.

    Attributes
    ----------
    offset : float
        Subtracted from the round's score delta.
    divisor : float
        The delta minus offset is divided by it (nonzero).
    mean, std : float
        Normalization; ``std > 0``.
    provenance : Provenance

    Examples
    --------
    >>> RoundDeltaParams(divisor=float("nan"))
    Traceback (most recent call last):
    ...
    rewardlab.core.errors.ParameterError: `divisor` should be a finite number (not NaN or infinite). Received nan.
    """

    offset: float = param_field(0.0, "Subtracted from the round's score delta.",
                                min=-10000.0, max=10000.0, step=100.0)
    divisor: float = param_field(1000.0, "The delta minus offset is divided by it (nonzero).",
                                 min=1.0, max=10000.0, step=1.0)
    mean: float = mean_field(1000.0, 0.001)
    std: float = std_field(10000.0, 0.001)
    provenance: Provenance = provenance_field()

    def __post_init__(self):
        object.__setattr__(self, "offset", check_real("offset", self.offset))
        object.__setattr__(self, "divisor", check_divisor("divisor", self.divisor))
        validate_normalization(self)

    def raw_extremes(self) -> list[tuple[float, str, str, float]]:
        """``(raw, where, parameter, value)`` at the lowest and highest Int32 round delta (float64, as the file).

        The parameter blamed is ``offset`` when it is itself out of range, else ``divisor``.

        Examples
        --------
        >>> RoundDeltaParams(offset=0, divisor=1).raw_extremes()[0][:2]
        (-2147483648.0, 'a round delta of -2147483648')
        """
        return affine_extremes(self.offset, self.divisor, "a round delta")


@dataclasses.dataclass(frozen=True)
@register_family
class RoundDelta(MahjongFamily):
    """Reward from each round's score delta; done at every round end (see the module docstring).

    Examples
    --------
    >>> RoundDelta().scope
    'end_of_round'
    """

    params: RoundDeltaParams = dataclasses.field(default_factory=RoundDeltaParams)

    name = "round_delta"
    title = "Per-round score delta"
    #: What the exported file computes, for its header.
    export_formula = (
        '((delta - offset) / divisor - mean) / std on end-of-round and end-of-game',
        'steps, 0.0 elsewhere; done = end_of_round | end_of_game.',
        "delta: the acting player's score change in that round (results[seat]).",
    )
    params_type = RoundDeltaParams
    scope = SCOPE_ROUND
    presets = ROUND_DELTA_PRESETS
    export_body = '''
def get_reward(data, contiguous):
    end_of_round = data["next", "end_of_round"]
    end_of_game = data["next", "end_of_game"]
    done = end_of_round | end_of_game
    rows = done.nonzero().squeeze(1)
    seat = _RL_seat(data, rows)
    deltas = data["next", "results"][rows, 0:4].to(_RL_torch.int64)
    delta = deltas.gather(1, seat.unsqueeze(1)).squeeze(1)
    raw = (delta.to(_RL_torch.float64) - _RL_OFFSET) / _RL_DIVISOR
    reward = _RL_torch.zeros(end_of_game.shape[0], dtype=_RL_torch.float64)
    reward[rows] = (raw - _RL_MEAN) / _RL_STD
    data["next", "reward"] = reward
    data["next", "done"] = done
'''

    def raw_values(self, prepared: PreparedFrame) -> np.ndarray:
        p = self.params
        return (prepared.round_arrays()[1].astype(np.float64) - p.offset) / p.divisor

    def raw_td(self, data):
        p = self.params
        done = data["next", "end_of_round"] | data["next", "end_of_game"]
        rows = done.nonzero().squeeze(1)
        seat = td_seat(data, rows)
        deltas = data["next", "results"][rows, 0:4].to(torch.int64)
        delta = deltas.gather(1, seat.unsqueeze(1)).squeeze(1)
        raw = (delta.to(torch.float64) - p.offset) / p.divisor
        return rows, raw, done

    def export_literals(self) -> dict[str, object]:
        p = self.params
        return {"_RL_OFFSET": p.offset, "_RL_DIVISOR": p.divisor, **super().export_literals()}
