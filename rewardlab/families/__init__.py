"""Tunable reward families: parameters in frozen dataclasses, evaluated three identical ways.

Families
--------
* :class:`Ranking`: ``vector[rank]`` at the end of the game.
* :class:`Points`: ``(score - offset) / divisor`` at the end of the game.
* :class:`RankingPoints`: ``vector[rank] + (score - offset) // divisor``.
* :class:`RoundDelta`: ``(delta - offset) / divisor`` at every round end,
  ``done`` at every round end and at the end of the game.

Each normalizes ``(raw - mean) / std`` with constants that are typed, taken
from the seed's recipe, or measured on data
(:meth:`RewardFamily.with_constants_from`), and records where they came from
(:class:`Provenance`).  Each evaluates on a TensorDict batch
(:meth:`RewardFamily.get_reward`, the plug-in contract) and on a whole frame
from a :class:`PreparedFrame` (:meth:`RewardFamily.evaluate`), bit for bit
like the file :func:`rewardlab.export_plugin` writes.

Examples
--------
>>> from rewardlab.families import Ranking
>>> fam = Ranking.from_preset("top_two")
>>> prepared = fam.prepare("data/sample.tsv.gz")  # doctest: +SKIP
>>> reward, done = fam.with_params(vector=(1, 0.5, -0.5, -1)).evaluate(prepared)  # doctest: +SKIP
"""

from rewardlab.families.base import (
    PreparedFrame,
    Provenance,
    RewardFamily,
    field_hints,
    population_constants,
    prepare_frame,
)
from rewardlab.families.points import POINTS_PRESETS, Points, PointsParams
from rewardlab.families.presets import FAMILIES, all_presets, family_class, preset_names, ranking_preset
from rewardlab.families.ranking import (
    RANKING_PRESETS,
    Ranking,
    RankingParams,
    SeedNormalizationCheck,
    check_seed_normalization,
    seed_constants,
)
from rewardlab.families.ranking_points import RANKING_POINTS_PRESETS, RankingPoints, RankingPointsParams
from rewardlab.families.round_delta import ROUND_DELTA_PRESETS, RoundDelta, RoundDeltaParams

__all__ = [
    "PreparedFrame", "Provenance", "RewardFamily", "field_hints", "population_constants", "prepare_frame",
    "Ranking", "RankingParams", "RANKING_PRESETS", "SeedNormalizationCheck", "check_seed_normalization",
    "seed_constants",
    "Points", "PointsParams", "POINTS_PRESETS",
    "RankingPoints", "RankingPointsParams", "RANKING_POINTS_PRESETS",
    "RoundDelta", "RoundDeltaParams", "ROUND_DELTA_PRESETS",
    "FAMILIES", "all_presets", "family_class", "preset_names", "ranking_preset",
]
