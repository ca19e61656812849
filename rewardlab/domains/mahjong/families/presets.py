"""Presets of every family by name, and lookup across the two ranking families.

The CLI's ``export ranking --preset NAME`` accepts the presets of both
:class:`~rewardlab.domains.mahjong.families.Ranking` (rank vector only) and
:class:`~rewardlab.domains.mahjong.families.RankingPoints` (rank vector + points); their names
do not overlap.

Examples
--------
>>> from rewardlab.domains.mahjong.families.presets import ranking_preset, preset_names
>>> ranking_preset("mleague").name
'ranking_points'
>>> "tenhou_houou_7dan" in preset_names("ranking")
True
"""

from __future__ import annotations

from rewardlab.core.errors import ParameterError
from rewardlab.families.base import RewardFamily
from rewardlab.domains.mahjong.families.points import Points
from rewardlab.domains.mahjong.families.ranking import Ranking
from rewardlab.domains.mahjong.families.ranking_points import RankingPoints
from rewardlab.domains.mahjong.families.round_delta import RoundDelta
from rewardlab.domains.mahjong.families.preset_values import preset_names

__all__ = ["FAMILIES", "family_class", "preset_names", "ranking_preset", "all_presets"]

#: Family classes by name.
FAMILIES: dict[str, type[RewardFamily]] = {
    cls.name: cls for cls in (Ranking, Points, RankingPoints, RoundDelta)
}


def family_class(name: str) -> type[RewardFamily]:
    """The family class called ``name`` (``ranking``, ``points``, ``ranking_points``, ``round_delta``).

    Examples
    --------
    >>> family_class("round-delta").__name__
    'RoundDelta'
    """
    key = name.replace("-", "_") if isinstance(name, str) else name
    if key not in FAMILIES:
        raise ParameterError("family", "should be one of " + ", ".join(FAMILIES), name)
    return FAMILIES[key]


def ranking_preset(name: str) -> RewardFamily:
    """A ranking preset (rank vector only) or a ranking + points preset, by name.

    Examples
    --------
    >>> ranking_preset("top").params.vector
    (1.0, -1.0, -1.0, -1.0)
    """
    key = name.replace("-", "_") if isinstance(name, str) else name
    if key in RankingPoints.presets:
        return RankingPoints.from_preset(key)
    if key in Ranking.presets:
        return Ranking.from_preset(key)
    raise ParameterError("preset", "should be one of " + ", ".join(preset_names("ranking")), name)


def all_presets() -> list[RewardFamily]:
    """Every preset of every family, as family objects (default constants).

    Examples
    --------
    >>> len(all_presets()) >= 12
    True
    """
    return [cls.from_preset(p) for cls in FAMILIES.values() for p in cls.presets]
