"""kanachan's plug-in contract: its TensorDict and checks behind a :class:`~rewardlab.contracts.Contract`.

The TensorDict is :class:`rewardlab.contracts.kanachan.batching.FrameArrays`'s (offline and
simulation conventions), the IN keys :data:`rewardlab.contracts.kanachan.batching.IN_KEYS`, the
done rule :func:`rewardlab.contracts.checks.check_done` (every game's last step stays
done): the contract only names them, so a kanachan run gives byte for byte
what it gave before contracts were a registry.

Examples
--------
>>> from rewardlab.contracts import get_contract
>>> kanachan = get_contract("kanachan")
>>> kanachan.conventions, kanachan.in_keys(None)[:2]
(('offline', 'simulation'), ('sparse', 'numeric'))
"""

from __future__ import annotations

import numpy as np
import polars as pl

from rewardlab.sources.kanachan import schema as S
from rewardlab.contracts.kanachan.batching import CONVENTIONS, FrameArrays
from rewardlab.contracts.checks import Violation, check_done
from rewardlab.contracts.kanachan.batching import IN_KEYS
from rewardlab.contracts.base import Contract, Recombination
from rewardlab.core.spec import FrameSpec

__all__ = ["KanachanContract", "KANACHAN"]


class KanachanContract(Contract):
    """``get_reward(data, contiguous)`` on kanachan's TensorDict (:mod:`rewardlab.contracts.kanachan.batching`).

    Examples
    --------
    >>> KANACHAN.signature
    'get_reward(data, contiguous)'
    """

    name = "kanachan"
    parameters = ("data", "contiguous")
    conventions = CONVENTIONS
    description = "kanachan's reward plug-ins: get_reward(data, contiguous) on its TensorDict"
    caller = "kanachan"
    asks_unit_scale = True  # kanachan's wiki: rewards near mean 0 / std 1 for its trainer
    scale_advice = "kanachan's wiki advises rewards near mean 0 / std 1"
    trainer = "kanachan's trainer"
    mode_settings = None  # the batch modes' own wording names kanachan's settings

    def arrays(self, frame: pl.DataFrame, spec: FrameSpec | None = None) -> FrameArrays:
        """:class:`~rewardlab.contracts.kanachan.batching.FrameArrays` of the frame (the spec is not needed)."""
        return FrameArrays(frame)

    def in_keys(self, arrays=None) -> tuple:
        """:data:`rewardlab.contracts.kanachan.batching.IN_KEYS` (the same for every frame)."""
        return IN_KEYS

    def episode_flags(self, arrays: FrameArrays) -> np.ndarray:
        """``end_of_game``."""
        return arrays.end_of_game

    def done_flags(self, arrays: FrameArrays, rows, *, convention: str = "offline"
                   ) -> tuple[np.ndarray, np.ndarray]:
        """``(end_of_game, end_of_round)`` of ``rows``; ``end_of_round | end_of_game`` in the
        simulation convention, as its TensorDict says."""
        eog = np.ascontiguousarray(arrays.end_of_game[rows])
        eor = np.ascontiguousarray(arrays.end_of_round[rows])
        if convention == "simulation":
            eor = eor | eog
        return eog, eor

    def recombination(self, spec: FrameSpec | None = None) -> Recombination:
        """Never: kanachan's round results are not functions of recombined transitions.

        Examples
        --------
        >>> KanachanContract().recombination().possible
        False
        """
        return Recombination(False, "kanachan's round results are not functions of recombined (state, action, "
                             "next state) transitions (its frames are game records)")

    def check_done(self, done, end_of_game: np.ndarray, end_of_round: np.ndarray) -> Violation | None:
        """:func:`rewardlab.contracts.checks.check_done`."""
        return check_done(done, end_of_game, end_of_round)

    def locator_columns(self, spec: FrameSpec | None) -> tuple[tuple[str, str], ...]:
        """Game, seat and step, as kanachan's messages have always named them."""
        return ((S.GAME_ID, "game"), (S.SEAT, "seat"), (S.STEP, "step"))


#: The kanachan contract (registered as ``"kanachan"``).
KANACHAN = KanachanContract()
