"""Plots of reward analyses: ``plot_*(data, *, ax=None)`` draws what it is given and returns the Axes.

Every function takes data already computed by :mod:`rewardlab.analysis.stats`,
:mod:`rewardlab.domains.mahjong.ranking`, :mod:`rewardlab.analysis.compare` or
:mod:`rewardlab.analysis.normalizers` (or plain arrays), draws it on ``ax`` (a new
figure when None) and returns the Axes, or an array of Axes for multi-panel
plots.  No statistics are computed here beyond binning a histogram.
``matplotlib.pyplot`` is imported only when a figure has to be created.

Most steps of a sparse reward are 0, so distributions of step rewards show
the nonzero values and report the zero share in the legend.

Histograms take ``limits=``: :class:`rewardlab.analysis.limits.DisplayLimits`
computed by :func:`rewardlab.analysis.limits.display_limits` (or
``series_limits`` per panel, ``normalization_limits``).  The bins then span
the limits, values outside them are left out, and the x label says how many
and their extremes ("42 values outside the limits, min -70.71, max -0.03519"),
so one extreme value no longer flattens the rest into a one-pixel spike.

Examples
--------
>>> from rewardlab.plots import plot_reward_distribution
>>> import numpy as np
>>> ax = plot_reward_distribution({"top": np.array([0.0, 0.0, 1.0, -1.0])}, bins=4)
>>> ax.get_legend_handles_labels()[1]
['top (zero: 50.0%)']

The functions live by subject: :mod:`~rewardlab.plots.distributions` (step
rewards, episode returns, correlations, a pair's scatter, reward by final
rank), :mod:`~rewardlab.plots.schedules` (normalization, epsilon schedules),
:mod:`~rewardlab.plots.episodes` (one episode, episode summaries),
:mod:`~rewardlab.plots.diagnostics` (a distance matrix with its standard errors,
the steps a finding points at, one episode's step rewards with those steps
marked, a composite reward's terms), :mod:`~rewardlab.plots.alignment`
(multi-agent factoredness and learnability per agent or per reward, an
agent's reward against the global reward), with what they share in
:mod:`~rewardlab.plots.axes`.
"""

from __future__ import annotations

from rewardlab.plots.alignment import plot_agent_alignment, plot_alignment_comparison, plot_reward_vs_global
from rewardlab.plots.axes import legend_outside
from rewardlab.plots.distributions import (
    plot_correlation_heatmap, plot_return_distribution, plot_return_scatter, plot_reward_by_rank,
    plot_reward_distribution,
)
from rewardlab.plots.diagnostics import (
    plot_distance_matrix, plot_episode_steps, plot_step_marks, plot_term_shares,
)
from rewardlab.plots.el_farol import (
    plot_agent_constants, plot_agent_rewards, plot_global_by_week, plot_night_attendance,
)
from rewardlab.plots.episodes import plot_episode, plot_episode_summary
from rewardlab.plots.retro import plot_bonus_by_frame, plot_finish_rates, plot_option_effects
from rewardlab.plots.schedules import plot_epsilon_schedule, plot_normalization

__all__ = [
    "plot_reward_distribution",
    "plot_reward_by_rank",
    "plot_return_distribution",
    "plot_correlation_heatmap",
    "plot_return_scatter",
    "plot_normalization",
    "plot_epsilon_schedule",
    "plot_episode",
    "plot_episode_summary",
    "plot_distance_matrix",
    "plot_step_marks",
    "plot_episode_steps",
    "plot_term_shares",
    "plot_agent_alignment",
    "plot_alignment_comparison",
    "plot_reward_vs_global",
    "plot_agent_rewards",
    "plot_agent_constants",
    "plot_global_by_week",
    "plot_night_attendance",
    "plot_finish_rates",
    "plot_bonus_by_frame",
    "plot_option_effects",
    "legend_outside",
]
