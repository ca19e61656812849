"""rewardlab: interactive reward analysis for reinforcement learning.

Load recorded trajectories into Polars frames, run reward plug-ins over them
exactly as the training program would, compare and tune rewards, and export a
self-contained plug-in file.  ``import rewardlab`` needs no ipywidgets; the
widgets live in :mod:`rewardlab.widgets`.

Examples
--------
>>> import rewardlab
>>> frame = rewardlab.load_kanachan("data/sample.tsv.gz")  # doctest: +SKIP
>>> td = rewardlab.to_tensordict(frame, rows=slice(0, 64))  # doctest: +SKIP
"""

from rewardlab._version import __version__
from rewardlab import errors, schema
from rewardlab.batching import FrameArrays, to_tensordict
from rewardlab.dataset import DatasetSummary, convert, summarize
from rewardlab.mahjong import episode_outcomes, ranks_from_scores
from rewardlab.sources.kanachan import LoadResult, load_kanachan, read_kanachan, scan_kanachan

__all__ = [
    "__version__", "errors", "schema",
    "FrameArrays", "to_tensordict",
    "DatasetSummary", "convert", "summarize",
    "episode_outcomes", "ranks_from_scores",
    "LoadResult", "load_kanachan", "read_kanachan", "scan_kanachan",
]

# Each section below belongs to one area; add its imports and extend __all__ there.
# --- plug-ins ---
from rewardlab.plugins import CheckReport, Plugin, apply_plugins, check_plugin, load_plugin

__all__ += ["CheckReport", "Plugin", "apply_plugins", "check_plugin", "load_plugin"]
# --- analysis ---
from rewardlab.stats import (
    SCOPES, Moments, NormalizationConstants, RewardStats, describe_rewards, normalization_constants,
    reward_moments, reward_stats,
)
from rewardlab.returns import episode_returns, gae, reward_to_go
from rewardlab.normalizers import (
    gymnasium_normalize_reward, normalization_summary, normalized_rewards, sb3_normalize_reward,
)
from rewardlab.ranking import (
    RankTable, affine_equivalence, bootstrap_rank_ci, expected_reward, reward_by_rank, stable_rank,
)
from rewardlab.compare import (
    compare_rewards, episode_return_table, most_disagreeing_episodes, step_difference,
)
from rewardlab.plots import (
    plot_correlation_heatmap, plot_normalization, plot_return_distribution, plot_return_scatter,
    plot_reward_by_rank, plot_reward_distribution,
)

__all__ += [
    "SCOPES", "Moments", "NormalizationConstants", "RewardStats", "describe_rewards",
    "normalization_constants", "reward_moments", "reward_stats",
    "episode_returns", "gae", "reward_to_go",
    "gymnasium_normalize_reward", "normalization_summary", "normalized_rewards", "sb3_normalize_reward",
    "RankTable", "affine_equivalence", "bootstrap_rank_ci", "expected_reward", "reward_by_rank",
    "stable_rank",
    "compare_rewards", "episode_return_table", "most_disagreeing_episodes", "step_difference",
    "plot_correlation_heatmap", "plot_normalization", "plot_return_distribution", "plot_return_scatter",
    "plot_reward_by_rank", "plot_reward_distribution",
]
# --- families, schedules, export ---
from rewardlab import families, schedules
from rewardlab.families import (
    Points, PointsParams, PreparedFrame, Provenance, Ranking, RankingParams, RankingPoints,
    RankingPointsParams, RewardFamily, RoundDelta, RoundDeltaParams, check_seed_normalization,
    prepare_frame,
)
from rewardlab.schedules import ExplorerSchedule, KanachanEpsilonGreedy
from rewardlab.export import export_plugin, render_plugin

__all__ += [
    "families", "schedules",
    "Points", "PointsParams", "PreparedFrame", "Provenance", "Ranking", "RankingParams", "RankingPoints",
    "RankingPointsParams", "RewardFamily", "RoundDelta", "RoundDeltaParams", "check_seed_normalization",
    "prepare_frame",
    "ExplorerSchedule", "KanachanEpsilonGreedy",
    "export_plugin", "render_plugin",
]
