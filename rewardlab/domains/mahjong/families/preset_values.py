"""The families' presets as plain data: names and parameter values, no torch.

The family classes take their presets from here, and the command line lists
the names without importing the families (which import torch).

Examples
--------
>>> from rewardlab.domains.mahjong.families.preset_values import preset_names
>>> preset_names("points")
['raw', 'thousands', 'return_30000']
"""

from __future__ import annotations

from rewardlab.core.errors import ParameterError

__all__ = ["RANKING_PRESETS", "POINTS_PRESETS", "RANKING_POINTS_PRESETS", "ROUND_DELTA_PRESETS",
           "PRESETS", "preset_names"]

RANKING_PRESETS: dict[str, dict] = {
    "top": {"vector": (1.0, -1.0, -1.0, -1.0)},
    "top_two": {"vector": (1.0, 1.0, -1.0, -1.0)},
    "tenhou_tokujo_6dan": {"vector": (75.0, 30.0, 0.0, -120.0)},
    "mahjongsoul_throne_celestial": {"vector": (1.0, 0.4, -0.4, -1.0)},
    "tenhou_houou_7dan": {"vector": (90.0, 45.0, 0.0, -135.0)},
    "avoid_last": {"vector": (0.0, 0.0, 0.0, -1.0)},
    "linear": {"vector": (3.0, 1.0, -1.0, -3.0)},
}

POINTS_PRESETS: dict[str, dict] = {
    "raw": {"offset": 0.0, "divisor": 1.0},
    "thousands": {"offset": 25000.0, "divisor": 1000.0},
    "return_30000": {"offset": 30000.0, "divisor": 1000.0},
}

RANKING_POINTS_PRESETS: dict[str, dict] = {
    "mahjongsoul_jade_saint3": {"vector": (135.0, 65.0, -5.0, -255.0), "offset": 25000, "divisor": 1000},
    "mleague": {"vector": (500.0, 100.0, -100.0, -300.0), "offset": 30000, "divisor": 100},
}

ROUND_DELTA_PRESETS: dict[str, dict] = {
    "raw": {"offset": 0.0, "divisor": 1.0},
    "thousands": {"offset": 0.0, "divisor": 1000.0},
}

#: Presets by family name (the names of :data:`rewardlab.domains.mahjong.families.FAMILIES`).
PRESETS = {"ranking": RANKING_PRESETS, "points": POINTS_PRESETS, "ranking_points": RANKING_POINTS_PRESETS,
           "round_delta": ROUND_DELTA_PRESETS}

assert not set(RANKING_PRESETS) & set(RANKING_POINTS_PRESETS), "ranking preset names must be unique"


def preset_names(family: str) -> list[str]:
    """Preset names of a family; for ``"ranking"`` also the ranking + points presets.

    Examples
    --------
    >>> preset_names("round-delta")
    ['raw', 'thousands']
    """
    key = family.replace("-", "_") if isinstance(family, str) else family
    if key not in PRESETS:
        raise ParameterError("family", "should be one of " + ", ".join(PRESETS), family)
    names = list(PRESETS[key])
    if key == "ranking":
        names += list(RANKING_POINTS_PRESETS)
    return names
