"""Tunable reward families: parameters in frozen dataclasses, evaluated three identical ways.

Families
--------
* :class:`Ranking`: ``vector[rank]`` at the end of the game.
* :class:`Points`: ``(score - offset) / divisor`` at the end of the game.
* :class:`RankingPoints`: ``vector[rank] + (score - offset) // divisor``.
* :class:`RoundDelta`: ``(delta - offset) / divisor`` at every round end,
  ``done`` at every round end and at the end of the game.

Each is a :class:`MahjongFamily`, itself a :class:`rewardlab.families.RewardFamily`
(the family core, whose names ``RewardFamily``, ``Provenance``, ``field_hints`` and
``population_constants`` are re-exported here), registered on the core's registry.
Each normalizes ``(raw - mean) / std`` with constants that are typed, taken
from the wiki's recipe, or measured on data
(:meth:`RewardFamily.with_constants_from`), and records where they came from
(:class:`Provenance`).  Each evaluates on a TensorDict batch
(:meth:`RewardFamily.get_reward`, the plug-in contract) and on a whole frame
from a :class:`PreparedFrame` (:meth:`RewardFamily.evaluate`), bit for bit
like the file :func:`rewardlab.export_plugin` writes.

Examples
--------
>>> from rewardlab.domains.mahjong.families import Ranking
>>> fam = Ranking.from_preset("top_two")
>>> prepared = fam.prepare("data/sample.tsv.gz")  # doctest: +SKIP
>>> reward, done = fam.with_params(vector=(1, 0.5, -0.5, -1)).evaluate(prepared)  # doctest: +SKIP

The names below are imported from their modules on first use (PEP 562), so
``rewardlab.domains.mahjong.families.preset_values`` (plain data) loads without torch.
"""

from __future__ import annotations

from rewardlab.core.lazy import install

#: Where each public name lives: ``{module: names}``.
_EXPORTS = {
    "rewardlab.domains.mahjong.families.base": ("MahjongFamily",),
    # the family core (rewardlab.families), re-exported: the same objects
    "rewardlab.families.base": ("RewardFamily",),
    "rewardlab.families.parameters": ("field_hints",),
    "rewardlab.families.provenance": ("Provenance", "population_constants"),
    "rewardlab.domains.mahjong.families.prepared": ("PreparedFrame", "prepare_frame"),
    "rewardlab.domains.mahjong.families.prepared_parts": ("prepare_dataset",),
    "rewardlab.domains.mahjong.families.ranking": (
        "Ranking", "RankingParams", "SeedNormalizationCheck", "check_seed_normalization",
        "seed_constants",
    ),
    "rewardlab.domains.mahjong.families.points": ("Points", "PointsParams"),
    "rewardlab.domains.mahjong.families.ranking_points": ("RankingPoints", "RankingPointsParams"),
    "rewardlab.domains.mahjong.families.round_delta": ("RoundDelta", "RoundDeltaParams"),
    "rewardlab.domains.mahjong.families.preset_values": (
        "RANKING_PRESETS", "POINTS_PRESETS", "RANKING_POINTS_PRESETS", "ROUND_DELTA_PRESETS",
        "preset_names",
    ),
    "rewardlab.domains.mahjong.families.presets": ("FAMILIES", "all_presets", "family_class", "ranking_preset"),
}

install(globals(), _EXPORTS)
