"""rewardlab: interactive reward analysis for reinforcement learning.

Load recorded trajectories into Polars frames, run reward plug-ins over them
exactly as the training program would, compare and tune rewards, and export a
self-contained plug-in file.  ``import rewardlab`` needs no ipywidgets; the
widgets live in :mod:`rewardlab.widgets`.

Examples
--------
>>> import rewardlab
>>> frame = rewardlab.load("data/sample.tsv.gz")  # doctest: +SKIP
>>> frame = rewardlab.load_kanachan("data/sample.tsv.gz")  # doctest: +SKIP
>>> td = rewardlab.to_tensordict(frame, rows=slice(0, 64))  # doctest: +SKIP

Importing :mod:`rewardlab` is cheap: the public names below are imported from
their modules on first use (PEP 562), so ``import rewardlab.core.errors`` or the
command line's ``--help`` do not load torch.
"""

from __future__ import annotations

from rewardlab._version import __version__
from rewardlab.core.lazy import install

#: Submodules available as attributes of the package: ``{attribute: module}``.
_SUBMODULES = {
    "errors": "rewardlab.core.errors",
    "schema": "rewardlab.sources.kanachan.schema",
    "families": "rewardlab.families",
    "schedules": "rewardlab.schedules",
}

#: Where each public name lives: ``{module: names}``.
_EXPORTS = {
    "rewardlab.sources.dispatch": ("load", "scan"),
    "rewardlab.sources.gymnasium.recorder": ("record",),
    "rewardlab.sources.retro.recorder": ("record_retro",),
    "rewardlab.sources.retro.reader": ("read_retro", "load_retro"),
    "rewardlab.sources.retro.levels": ("level_table", "load_levels"),
    "rewardlab.sources.pettingzoo.recorder": ("record_parallel",),
    "rewardlab.sources.steps": ("read_steps", "load_steps"),
    "rewardlab.sources.rllib": ("read_rllib", "load_rllib"),
    "rewardlab.core.spec": ("FrameSpec", "StateColumn"),
    "rewardlab.sources.registry": ("Source", "register_source", "spec_of"),
    "rewardlab.contracts": ("Contract", "register_contract", "get_contract"),
    "rewardlab.contracts.kanachan.batching": ("FrameArrays", "to_tensordict"),
    "rewardlab.dataset": ("DatasetSummary", "convert", "summarize"),
    "rewardlab.domains.mahjong.rules": ("episode_outcomes", "ranks_from_scores"),
    "rewardlab.sources.kanachan.reader": ("load_kanachan", "read_kanachan", "scan_kanachan"),
    "rewardlab.sources.mjai.reader": ("load_mjai", "read_mjai"),
    "rewardlab.sources.minari.reader": ("load_minari",),
    "rewardlab.sources.results": ("LoadResult", "PartLeftOut"),
    "rewardlab.sources.datasets": ("open_dataset", "read_dataset_folder"),
    "rewardlab.plugins": (
        "CheckReport", "Plugin", "apply_plugins", "check_plugin", "load_plugin", "split_shards",
        "apply_managers", "load_manager", "check_manager", "ManagerCheckReport",
    ),
    "rewardlab.domains.retro.family": ("ContestFamily", "ContestParams", "export_contest_plugin"),
    "rewardlab.analysis.scopes": ("SCOPES", "scope_values"),
    "rewardlab.analysis.joint": ("JointView", "joint_view", "scatter_rows"),
    "rewardlab.analysis.alignment": ("AlignmentResult", "alignment", "alignment_table"),
    "rewardlab.analysis.limits": ("DisplayLimits", "display_limits", "series_limits", "normalization_limits"),
    "rewardlab.normalized_export": ("export_normalized_plugin", "plugin_constants"),
    "rewardlab.analysis.stats": (
        "Moments", "NormalizationConstants", "RewardStats", "describe_rewards",
        "normalization_constants", "reward_moments", "reward_stats",
    ),
    "rewardlab.analysis.return_tables": ("episode_returns", "trajectory_returns", "gae", "reward_to_go",
                                         "bootstrap_from_final"),
    "rewardlab.analysis.normalizers": (
        "gymnasium_normalize_reward", "normalization_summary", "normalized_rewards",
        "sb3_normalize_reward",
    ),
    "rewardlab.domains.mahjong.ranking": (
        "RankTable", "affine_equivalence", "bootstrap_rank_ci", "expected_reward",
        "reward_by_rank", "stable_rank",
    ),
    "rewardlab.analysis.compare": (
        "compare_rewards", "episode_return_table", "most_disagreeing_episodes",
        "step_difference",
    ),
    "rewardlab.analysis.episodes": ("EpisodeDetail", "episode_detail"),
    "rewardlab.diagnostics.run": ("Diagnosis", "diagnose"),
    "rewardlab.diagnostics.base": ("DiagnosisOptions", "Finding", "register_diagnostic", "Diagnostic"),
    "rewardlab.analysis.episode_summary": ("episode_summary",),
    "rewardlab.domains.mahjong.episodes": ("mahjong_episode_detail",),
    "rewardlab.plots": (
        "plot_correlation_heatmap", "plot_episode_summary", "plot_normalization", "plot_return_distribution",
        "plot_return_scatter", "plot_reward_by_rank", "plot_reward_distribution", "plot_agent_alignment",
        "plot_alignment_comparison", "plot_reward_vs_global", "plot_agent_rewards", "plot_agent_constants",
        "plot_global_by_week", "plot_night_attendance", "plot_finish_rates", "plot_bonus_by_frame",
        "plot_option_effects",
    ),
    "rewardlab.domains.el_farol.family": ("ElFarolFamily", "ElFarolParams", "export_el_farol_manager"),
    "rewardlab.analysis.manager_alignment": ("manager_alignment", "manager_reward_fn"),
    "rewardlab.families": ("Provenance", "RewardFamily"),
    "rewardlab.domains.mahjong.families": (
        "Points", "PointsParams", "PreparedFrame", "Ranking", "RankingParams",
        "RankingPoints", "RankingPointsParams", "RoundDelta",
        "RoundDeltaParams", "check_seed_normalization", "prepare_frame",
    ),
    "rewardlab.schedules": ("ExplorerSchedule", "KanachanEpsilonGreedy"),
    "rewardlab.export": ("export_plugin", "render_plugin"),
    "rewardlab.scaling": ("StepsScaling", "ScalingParams", "export_scaling_plugin"),
}

__all__ = ["__version__"]
install(globals(), _EXPORTS, submodules=_SUBMODULES)
