"""The family core: what every tunable reward family shares, whatever its domain.

* :mod:`rewardlab.families.parameters`: parameter fields (doc and widget
  hints), the normalization fields and their checks.
* :mod:`rewardlab.families.provenance`: :class:`Provenance` of the
  normalization constants, constants measured on data, staleness.
* :mod:`rewardlab.families.rendering`: the literal-only rendering of
  exported files and :data:`REWARD_LIMIT`.
* :mod:`rewardlab.families.base`: :class:`RewardFamily` and the registry
  domains register their families on (:func:`register_family`).
* :mod:`rewardlab.families.export`: the exported file of any family (header,
  literals, helpers, body: :func:`render_family`, :func:`render_plugin_text`).
* :mod:`rewardlab.families.roundtrip`: the export's round trip, through the
  frame's contract and spec, in every batch mode (:func:`plugin_roundtrip`).
* :mod:`rewardlab.families.scaling`: the core's own family, registered as
  ``"scaling"``: :class:`StepsScaling` (a column of a step table scaled by
  normalization constants, for the steps contract; its checked export is
  :mod:`rewardlab.scaling`'s).

The domains' families live with their domain (the mahjong ones in
:mod:`rewardlab.domains.mahjong.families`, also re-exported from
:mod:`rewardlab`) and register here; the core names no domain.  Every name
is imported from its module on first use (PEP 562), so ``import
rewardlab.families`` loads no torch.

Examples
--------
>>> import rewardlab.families as families
>>> families.Provenance.typed().describe()
'typed by the user'
"""

from __future__ import annotations

from rewardlab.core.lazy import install

#: Where each public name lives: ``{module: names}``.
_EXPORTS = {
    "rewardlab.families.base": ("RewardFamily", "register_family", "registered_families", "get_family"),
    "rewardlab.families.parameters": (
        "param_field", "field_hints", "check_real", "check_normalization", "mean_field", "std_field",
        "provenance_field", "validate_normalization",
    ),
    "rewardlab.families.provenance": ("Provenance", "SCOPE_WORDS", "constants_stale", "population_constants"),
    "rewardlab.families.export": (
        "render_family", "render_plugin_text", "family_header", "constants_fit", "check_constants_fit",
        "generated_line", "check_created", "check_note", "FamilyExport",
    ),
    "rewardlab.families.roundtrip": (
        "ModesRoundTrip", "plugin_roundtrip", "family_roundtrip", "compare_modes", "compare_bits", "group_spans", "episode_end_rows",
        "whole_episodes", "sample_whole_episodes", "collect_warnings",
    ),
    "rewardlab.families.manager_roundtrip": ("ManagerRoundTrip", "manager_roundtrip"),
    "rewardlab.families.rendering": (
        "REWARD_LIMIT", "check_reward_range", "float_literal", "format_value", "render_literal",
        "sanitize_comment", "KeyLiteral",
    ),
    "rewardlab.families.scaling": ("StepsScaling", "ScalingParams"),
}

install(globals(), _EXPORTS)
