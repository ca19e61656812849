"""What the mahjong reward families share: kanachan's batches, final scores, and their exported code.

The domain-free part of a family (parameters, provenance, constants,
rendering, :class:`~rewardlab.families.RewardFamily` and its registry) is the
family core, :mod:`rewardlab.families`; its names are re-exported here, so
imports from this module keep working.  :class:`MahjongFamily` is the base of
the mahjong families.  Every family evaluates the same numbers three ways,
bit for bit:

* on a kanachan TensorDict batch, in torch (:meth:`MahjongFamily.get_reward`,
  the plug-in contract: it sets ``("next", "reward")`` and ``("next", "done")``);
* on a whole frame, in NumPy, from a :class:`PreparedFrame` that holds the
  final ranks, final scores and round deltas once, so re-tuning a parameter
  is a gather and an element-wise formula, not a re-run
  (:meth:`~rewardlab.families.RewardFamily.evaluate`);
* in the stand-alone file written by :func:`rewardlab.export_plugin`.

Bit-identity comes from doing the same IEEE operations in the same order in
each path: the family's *raw* reward is gathered or computed exactly
(integers, table look-ups, one float64 subtraction and one division), then
normalized as ``(raw - mean) / std`` in float64; rows outside the family's
scope get ``0.0``.

Examples
--------
>>> from rewardlab.domains.mahjong.families import Ranking
>>> fam = Ranking.from_preset("top")
>>> prepared = fam.prepare(frame)  # doctest: +SKIP
>>> reward, done = fam.evaluate(prepared)  # doctest: +SKIP
"""

from __future__ import annotations

from typing import ClassVar, Iterable

import numpy as np
import torch

from rewardlab.sources.kanachan import schema as S
from rewardlab.core.errors import FrameError, ParameterError
from rewardlab.domains.mahjong.families.prepared import SCOPE_GAME, SCOPE_ROUND, PreparedFrame, prepare_frame
from rewardlab.families.base import RewardFamily
from rewardlab.families.parameters import (
    check_normalization, check_real, field_hints, mean_field, param_field, provenance_field, std_field,
    validate_normalization,
)
from rewardlab.families.provenance import SCOPE_WORDS, Provenance, population_constants
from rewardlab.families.rendering import REWARD_LIMIT, check_reward_range

__all__ = [
    # mahjong
    "MahjongFamily",
    "affine_extremes",
    "check_vector",
    "td_seat",
    "td_ranks",
    "td_game_rows",
    "end_of_game_export_body",
    "EXPORT_HELPERS",
    "SCORE_RANGE",
    "PreparedFrame",
    "prepare_frame",
    "SCOPE_GAME",
    "SCOPE_ROUND",
    # the family core (rewardlab.families), re-exported
    "SCOPE_WORDS",
    "Provenance",
    "RewardFamily",
    "check_real",
    "check_normalization",
    "param_field",
    "field_hints",
    "mean_field",
    "std_field",
    "provenance_field",
    "validate_normalization",
    "population_constants",
    "REWARD_LIMIT",
    "check_reward_range",
]

#: The final scores and round deltas a plug-in can receive (``results`` is Int32).
SCORE_RANGE = (-(2**31), 2**31 - 1)


# ---------------------------------------------------------------------------
# Validation of the rank vector (messages: name, rule, value)
# ---------------------------------------------------------------------------


def check_vector(name: str, value, length: int = 4) -> tuple[float, ...]:
    """A tuple of ``length`` finite floats, else ParameterError naming the entry.

    Examples
    --------
    >>> check_vector("vector", [1, 0, 0, -1])
    (1.0, 0.0, 0.0, -1.0)
    """
    if isinstance(value, (str, bytes)) or not isinstance(value, Iterable):
        raise ParameterError(name, f"should be a sequence of {length} numbers (one per final rank)", value)
    items = list(value.tolist() if isinstance(value, (np.ndarray, torch.Tensor)) else value)
    if len(items) != length:
        raise ParameterError(name, f"should have {length} entries (one per final rank), not {len(items)}",
                             value)
    return tuple(check_real(f"{name}[{k}]", v) for k, v in enumerate(items))


# ---------------------------------------------------------------------------
# torch pieces of the TensorDict path (the exported file repeats them verbatim)
# ---------------------------------------------------------------------------


def td_seat(data, rows: torch.Tensor) -> torch.Tensor:
    """The acting player's seat (``sparse[:, 6] - 71``) on ``rows`` of a batch; ``[R] -> [R]`` int64.

    Examples
    --------
    >>> td_seat(batch, rows)  # doctest: +SKIP
    tensor([0, 3])
    """
    seat = data["sparse"][rows, S.SEAT_POSITION].to(torch.int64) - S.SEAT_OFFSET
    if bool(((seat < 0) | (seat > 3)).any()):
        raise FrameError("sparse[:, 6] - 71 should be a seat 0-3 on the rows a reward is given "
                         f"(found {sorted(set(seat.tolist()))[:4]})")
    return seat


def td_ranks(scores: torch.Tensor, seat: torch.Tensor) -> torch.Tensor:
    """Ranks, kanachan's rule: ``#{j < seat: s_j >= s} + #{j > seat: s_j > s}``; ``[G, 4], [G] -> [G]``.

    Examples
    --------
    >>> td_ranks(torch.tensor([[100, 300, 300, 0]]), torch.tensor([2])).tolist()
    [1]
    """
    own = scores.gather(1, seat.unsqueeze(1))
    seats = torch.arange(4).unsqueeze(0)
    mine = seat.unsqueeze(1)
    higher = ((seats < mine) & (scores >= own)) | ((seats > mine) & (scores > own))
    return higher.sum(1)


def td_game_rows(data):
    """``(end_of_game, rows, seat, final scores [G, 4] int64)`` of a batch.

    Examples
    --------
    >>> end_of_game, rows, seat, scores = td_game_rows(batch)  # doctest: +SKIP
    """
    end_of_game = data["next", "end_of_game"]
    rows = end_of_game.nonzero().squeeze(1)
    seat = td_seat(data, rows)
    scores = data["next", "results"][rows, 4:8].to(torch.int64)
    return end_of_game, rows, seat, scores


def end_of_game_export_body(raw: str) -> str:
    """``get_reward`` source for an exported end-of-game family.

    ``raw`` are the lines (4-space indented) that compute ``raw``, one value
    per end-of-game row, from ``rows``, ``seat`` and ``scores`` (final
    scores of the four seats); the rest is the same for every such family.

    Examples
    --------
    >>> print(end_of_game_export_body("    raw = scores[:, 0].to(_RL_torch.float64)").splitlines()[1])
    def get_reward(data, contiguous):
    """
    return f'''
def get_reward(data, contiguous):
    end_of_game = data["next", "end_of_game"]
    rows = end_of_game.nonzero().squeeze(1)
    seat = _RL_seat(data, rows)
    scores = data["next", "results"][rows, 4:8].to(_RL_torch.int64)
{raw.strip(chr(10))}
    reward = _RL_torch.zeros(end_of_game.shape[0], dtype=_RL_torch.float64)
    reward[rows] = (raw - _RL_MEAN) / _RL_STD
    data["next", "reward"] = reward
    data["next", "done"] = end_of_game.clone()
'''


#: Fixed helper code of the exported file (the torch pieces above, with ``_RL_``
#: names so a file ``exec``-ed into another module's globals clobbers nothing).
EXPORT_HELPERS = '''
def _RL_seat(data, rows):
    seat = data["sparse"][rows, 6].to(_RL_torch.int64) - 71
    if bool(((seat < 0) | (seat > 3)).any()):
        raise ValueError("sparse[:, 6] - 71 should be a seat 0-3 on the rows a reward is given")
    return seat


def _RL_ranks(scores, seat):
    own = scores.gather(1, seat.unsqueeze(1))
    seats = _RL_torch.arange(4).unsqueeze(0)
    mine = seat.unsqueeze(1)
    higher = ((seats < mine) & (scores >= own)) | ((seats > mine) & (scores > own))
    return higher.sum(1)
'''


# ---------------------------------------------------------------------------
# The base of the mahjong families
# ---------------------------------------------------------------------------


class MahjongFamily(RewardFamily):
    """Base of the mahjong families: kanachan frames through a :class:`PreparedFrame`, kanachan batches.

    Subclasses set :attr:`name`, :attr:`title`, :attr:`params_type`,
    :attr:`scope`, :attr:`presets`, and implement :meth:`raw_values` (NumPy,
    over a :class:`PreparedFrame`), :meth:`raw_td` (torch, over a batch) and
    :meth:`export_literals` / :attr:`export_body` (the exported file).

    Examples
    --------
    >>> from rewardlab.domains.mahjong.families import Ranking
    >>> issubclass(Ranking, MahjongFamily), Ranking.scope
    (True, 'end_of_game')
    """

    scope: ClassVar[str] = SCOPE_GAME
    #: The exported file is a kanachan reward plug-in; its helpers are :data:`EXPORT_HELPERS`.
    export_for: ClassVar[str] = "kanachan"
    export_helpers: ClassVar[str] = EXPORT_HELPERS

    # -- frame path (NumPy) ----------------------------------------------------
    def prepare(self, data) -> PreparedFrame:
        """Gather what the families read from ``data`` once (see :func:`prepare_frame`).

        Examples
        --------
        >>> prepared = Ranking().prepare(frame)  # doctest: +SKIP
        """
        return data if isinstance(data, PreparedFrame) else prepare_frame(data)

    def raw_values(self, prepared: PreparedFrame) -> np.ndarray:  # pragma: no cover - abstract
        """The raw (unnormalized) float64 reward at the rows in scope, ``[G]`` or ``[R]``.

        Examples
        --------
        >>> Ranking.from_preset("top").raw_values(prepared)[:4]  # doctest: +SKIP
        array([-1., -1.,  1., -1.])
        """
        raise NotImplementedError

    # -- TensorDict path (torch) -------------------------------------------------
    def get_reward(self, data, contiguous: bool) -> None:
        """Set ``data["next", "reward"]`` (float64 ``[B]``) and ``data["next", "done"]`` like the plug-in.

        Same semantics, bit for bit, as the exported file (and as
        :meth:`evaluate` on the same rows).  ``contiguous`` is accepted for the
        contract; these families do not need it (every row's reward depends
        only on that row).

        Examples
        --------
        >>> td = rewardlab.to_tensordict(frame, rows=slice(0, 256))  # doctest: +SKIP
        >>> Ranking.from_preset("top").get_reward(td, False)  # doctest: +SKIP
        >>> td["next", "reward"].dtype  # doctest: +SKIP
        torch.float64
        """
        p = self.params
        rows, raw, done = self.raw_td(data)
        reward = torch.zeros(data["next", "end_of_game"].shape[0], dtype=torch.float64)
        reward[rows] = (raw - p.mean) / p.std
        data["next", "reward"] = reward
        data["next", "done"] = done

    def raw_td(self, data) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:  # pragma: no cover - abstract
        """``(rows, raw, done)`` of a kanachan batch: the rows in scope, their raw float64 reward, the done flags.

        Examples
        --------
        >>> rows, raw, done = Ranking.from_preset("top").raw_td(batch)  # doctest: +SKIP
        """
        raise NotImplementedError


def affine_extremes(offset: float, divisor: float, what: str) -> list[tuple[float, str, str, float]]:
    """``(raw, where, parameter, value)`` of ``(x - offset) / divisor`` at the lowest and highest Int32 ``x``.

    Computed in float64, as an exported file computes it; the parameter blamed
    is ``offset`` when it is itself out of range, else ``divisor``.

    Examples
    --------
    >>> affine_extremes(0, 1, "a final score")[0][:2]
    (-2147483648.0, 'a final score of -2147483648')
    """
    name, value = ("offset", offset) if not abs(offset) <= REWARD_LIMIT else ("divisor", divisor)
    with np.errstate(all="ignore"):
        return [(float((np.float64(x) - np.float64(offset)) / np.float64(divisor)), f"{what} of {x}",
                 name, value) for x in SCORE_RANGE]
