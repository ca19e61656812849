"""End-of-game ranking reward: a 4-entry vector indexed by the final rank.

``raw = vector[rank]`` on the end-of-game step (rank 0 = top; ties broken by
seat, the lower seat ranking higher, as in kanachan's examples), then
``reward = (raw - mean) / std``; every other step gets 0.  ``done`` is left
at the end of the game.

The wiki-normalization pitfall
------------------------------
The ranking example of kanachan's wiki normalizes with the mean and the **sample**
standard deviation (``torch.std``, n - 1) of the 4-entry vector.  On complete
games every rank occurs equally often among the end-of-game steps, so the
reward there has the vector's *population* spread divided by its *sample*
spread: a standard deviation of ``sqrt(3 / 4) ~= 0.866``, not 1 (and a mean
of exactly 0 only because each rank is equally frequent).  Computing the
constants from data (:meth:`Ranking.with_constants_from`, CLI
``--normalize-from``) gives the population mean and std of the reward over the
end-of-game steps, i.e. exactly mean 0 and std 1 there.
:func:`check_seed_normalization` measures both on a dataset.

Examples
--------
>>> from rewardlab.domains.mahjong.families import Ranking
>>> fam = Ranking.from_preset("tenhou_houou_7dan")
>>> fam.params.vector
(90.0, 45.0, 0.0, -135.0)
>>> seeded = fam.with_seed_constants()
>>> seeded.params.mean
0.0
>>> check_seed_normalization("data/sample.tsv.gz", fam.params.vector).measured_std  # doctest: +SKIP
0.8660254037844386
"""

from __future__ import annotations

import dataclasses
import math

import numpy as np
import torch

from rewardlab.domains.mahjong.families.base import (
    end_of_game_export_body,
    PreparedFrame,
    MahjongFamily,
    td_game_rows,
    td_ranks,
    check_vector,
    prepare_frame,
)
from rewardlab.families.parameters import (
    mean_field, param_field, provenance_field, std_field, validate_normalization,
)
from rewardlab.families.provenance import Provenance, population_constants
from rewardlab.families.base import register_family
from rewardlab.domains.mahjong.families.preset_values import RANKING_PRESETS

__all__ = ["RankingParams", "Ranking", "RANKING_PRESETS", "SeedNormalizationCheck",
           "check_seed_normalization", "seed_constants"]

VECTOR_DOC = "Raw reward by final rank: entry k is the reward for finishing k-th (0 = top)."


@dataclasses.dataclass(frozen=True)
class RankingParams:
    """Parameters of the :class:`Ranking` family (validated on construction).

    Attributes
    ----------
    vector : tuple of 4 floats
        Raw reward by final rank (entry 0: first place).
    mean, std : float
        Normalization: ``reward = (vector[rank] - mean) / std``; ``std > 0``.
    provenance : Provenance
        Where ``mean`` and ``std`` came from.

    Examples
    --------
    >>> RankingParams(vector=[90, 45, 0, -135]).vector
    (90.0, 45.0, 0.0, -135.0)
    >>> RankingParams(vector=(1, 2, 3))
    Traceback (most recent call last):
    ...
    rewardlab.core.errors.ParameterError: `vector` should have 4 entries (one per final rank), not 3. Received (1, 2, 3).
    """

    vector: tuple[float, float, float, float] = param_field(
        (1.0, -1.0, -1.0, -1.0), VECTOR_DOC, min=-1000.0, max=1000.0, step=0.1)
    mean: float = mean_field(1000.0, 0.001)
    std: float = std_field(1000.0, 0.001)
    provenance: Provenance = provenance_field()

    def __post_init__(self):
        object.__setattr__(self, "vector", check_vector("vector", self.vector))
        validate_normalization(self)

    def raw_extremes(self) -> list[tuple[float, str, str, float]]:
        """``(raw, where, parameter, value)`` for every raw reward the file can give (one per rank).

        Examples
        --------
        >>> RankingParams(vector=(1, 0, 0, -1)).raw_extremes()[3]
        (-1.0, 'final rank 4', 'vector[3]', -1.0)
        """
        return [(v, f"final rank {k + 1}", f"vector[{k}]", v) for k, v in enumerate(self.vector)]


def seed_constants(vector) -> tuple[float, float]:
    """The wiki example's constants: mean and **sample** std (n - 1) of the vector, in torch float64.

    Examples
    --------
    >>> seed_constants((1.0, -1.0, -1.0, -1.0))
    (-0.5, 1.0)
    """
    vector = check_vector("vector", vector)
    t = torch.tensor(vector, dtype=torch.float64)
    return float(t.mean().item()), float(t.std().item())


_SEED_DETAIL = "mean and sample std (n - 1) of the 4-entry vector, as in the ranking example of kanachan's wiki"


@dataclasses.dataclass(frozen=True)
@register_family
class Ranking(MahjongFamily):
    """End-of-game reward by final rank (see the module docstring).

    Examples
    --------
    >>> fam = Ranking(RankingParams(vector=(1.0, 0.0, 0.0, -1.0)))
    >>> fam.with_params(vector=(2, 0, 0, -2)).params.vector
    (2.0, 0.0, 0.0, -2.0)
    """

    params: RankingParams = dataclasses.field(default_factory=RankingParams)

    name = "ranking"
    title = "End-of-game ranking"
    #: What the exported file computes, for its header.
    export_formula = (
        '(vector[rank] - mean) / std on end-of-game steps, 0.0 elsewhere;',
        'done = end_of_game.  rank: 0 = top, ties broken by seat (lower seat first).',
    )
    params_type = RankingParams
    presets = RANKING_PRESETS
    export_body = end_of_game_export_body('''
    rank = _RL_ranks(scores, seat)
    raw = _RL_torch.tensor(_RL_VECTOR, dtype=_RL_torch.float64)[rank]
''')

    def with_seed_constants(self) -> "Ranking":
        """A copy normalized the wiki's way: vector mean and sample std (see the module docstring)."""
        mean, std = seed_constants(self.params.vector)
        return self.with_constants(mean, std, provenance=Provenance.seed(_SEED_DETAIL,
                                                                         fitted_for=self.parameter_key()))

    def raw_values(self, prepared: PreparedFrame) -> np.ndarray:
        return np.asarray(self.params.vector, dtype=np.float64)[prepared.rank]

    def raw_td(self, data):
        end_of_game, rows, seat, scores = td_game_rows(data)
        rank = td_ranks(scores, seat)
        raw = torch.tensor(self.params.vector, dtype=torch.float64)[rank]
        return rows, raw, end_of_game.clone()

    def export_literals(self) -> dict[str, object]:
        return {"_RL_VECTOR": self.params.vector, **super().export_literals()}


@dataclasses.dataclass(frozen=True)
class SeedNormalizationCheck:
    """The wiki's ranking normalization measured on data (see :func:`check_seed_normalization`).

    Attributes
    ----------
    vector : tuple of 4 floats
    seed_mean, seed_std : float
        The wiki's constants (vector mean, vector sample std).
    measured_mean, measured_std : float
        Population mean and std of the wiki-normalized reward over the
        dataset's end-of-game steps.
    data_mean, data_std : float
        Population mean and std of the raw ``vector[rank]`` there (what
        ``--normalize-from`` uses; they give mean 0, std 1 on this data).
    steps : int
        End-of-game steps measured.
    complete_games_std : float
        ``sqrt(3) / 2``, what ``measured_std`` is when every rank is equally
        frequent (complete games).

    Examples
    --------
    >>> check = check_seed_normalization(frame, (1, -1, -1, -1))  # doctest: +SKIP
    >>> print(check)  # doctest: +SKIP
    """

    vector: tuple[float, ...]
    seed_mean: float
    seed_std: float
    measured_mean: float
    measured_std: float
    data_mean: float
    data_std: float
    steps: int
    complete_games_std: float = math.sqrt(3.0) / 2.0

    def __str__(self) -> str:
        return (f"The wiki's normalization (the ranking example of kanachan's wiki: vector mean "
                f"{self.seed_mean:g}, vector sample std {self.seed_std:.6g}) gives rewards with mean {self.measured_mean:.3f} and std "
                f"{self.measured_std:.3f} over {self.steps:,} end-of-game steps, not 1 "
                f"(sqrt(3)/2 = {self.complete_games_std:.3f} on complete games); constants from "
                f"the data (mean {self.data_mean:.6g}, population std {self.data_std:.6g}) give "
                f"mean 0 and std 1.")


def check_seed_normalization(data, vector) -> SeedNormalizationCheck:
    """Measure the wiki's ranking normalization (vector mean / sample std) on a dataset.

    Parameters
    ----------
    data : DataFrame, LazyFrame, path(s) or PreparedFrame
    vector : 4 numbers
        The rank vector.

    Returns
    -------
    SeedNormalizationCheck

    Examples
    --------
    >>> check = check_seed_normalization("data/sample.tsv.gz", (1, -1, -1, -1))  # doctest: +SKIP
    >>> round(check.measured_std, 3)  # doctest: +SKIP
    0.866
    """
    vector = check_vector("vector", vector)
    prepared = data if isinstance(data, PreparedFrame) else prepare_frame(data)
    seeded = Ranking(RankingParams(vector=vector)).with_seed_constants()
    raw = seeded.raw_values(prepared)
    normalized = (raw - seeded.params.mean) / seeded.params.std
    m_mean, m_std = population_constants(normalized)
    d_mean, d_std = population_constants(raw)
    return SeedNormalizationCheck(vector=vector, seed_mean=seeded.params.mean, seed_std=seeded.params.std,
                                  measured_mean=m_mean, measured_std=m_std, data_mean=d_mean,
                                  data_std=d_std, steps=int(raw.size))
