"""Distributions and comparisons of rewards: step rewards, episode returns, correlations, a pair's scatter,
reward by final rank.

Examples
--------
>>> from rewardlab.plots import plot_reward_distribution
>>> import numpy as np
>>> ax = plot_reward_distribution({"top": np.array([0.0, 0.0, 1.0, -1.0])}, bins=4)
>>> ax.get_legend_handles_labels()[1]
['top (zero: 50.0%)']
"""

from __future__ import annotations

import numpy as np
import polars as pl

from rewardlab.sources.kanachan import schema as S
from rewardlab.core import columns
from rewardlab.analysis.limits import DisplayLimits
from rewardlab.domains.mahjong.rules import PLACES
from rewardlab.core.spec import FrameSpec
from rewardlab.core.errors import ParameterError, check_choice, check_int
from rewardlab.plots.axes import (
    OWN_LABEL, legend_outside, one_axes, many_axes, check_limits, limits_of, hist_range, show_limits,
    series_map, draw_ecdf, require_columns,
)

__all__ = [
    "plot_reward_distribution", "plot_reward_by_rank", "plot_return_distribution", "plot_correlation_heatmap",
    "plot_return_scatter",
]


def plot_reward_distribution(values, *, ax=None, kind: str = "hist", layout: str = "overlay",
                             bins: int = 50, spec: FrameSpec | None = None, limits=None):
    """Distribution of step rewards per plug-in: histogram or ECDF of the nonzero values.

    Parameters
    ----------
    values : mapping of str to array, array, or polars.DataFrame
        Step rewards per plug-in (a frame's ``reward_*`` or other numeric
        columns are used; the columns of its spec, such as ``game_id``, are
        skipped).
    ax : Axes, sequence of Axes, or None
        One Axes for ``layout="overlay"``, one per plug-in for ``"facet"``.
    kind : {"hist", "ecdf"}
        Histogram (fraction of the nonzero steps per bin) or empirical CDF.
    layout : {"overlay", "facet"}
        All plug-ins on one Axes, or one panel each.
    bins : int
        Histogram bins.
    spec : FrameSpec, optional
        The frame's spec, whose columns are not rewards (default: the spec
        the frame carries, or a registered one whose episode columns it holds).
    limits : DisplayLimits or mapping of str to DisplayLimits, optional
        The x limits: one for every panel (``display_limits(values,
        nonzero=True)`` of the series pooled), or one per series by name
        (``series_limits(values, nonzero=True)``, for ``"facet"``).  Bins
        span the limits; the x label counts the values outside them.
        Default: each series' own range.

    Returns
    -------
    Axes, or numpy.ndarray of Axes for ``"facet"``
        Each plug-in's legend label gives its zero share, e.g. ``"top (zero: 97.9%)"``.

    Examples
    --------
    >>> ax = plot_reward_distribution(frame.select("reward_top", "reward_points"), kind="ecdf")  # doctest: +SKIP
    >>> from rewardlab.analysis.limits import display_limits
    >>> x = {"a": np.r_[np.linspace(-1.0, 1.0, 99), -70.0]}
    >>> ax = plot_reward_distribution(x, limits=display_limits(x, nonzero=True))
    >>> ax.get_xlabel()
    'reward\\n1 value outside the limits, min -70, max 1'
    """
    check_choice("kind", kind, ("hist", "ecdf"))
    check_choice("layout", layout, ("overlay", "facet"))
    bins = check_int("bins", bins, low=1, rule="should be a positive integer")
    limits = check_limits(limits)
    series = series_map(values, "values", spec)
    axes = [one_axes(ax)] * len(series) if layout == "overlay" else list(many_axes(ax, len(series)))
    for i, (name, x) in enumerate(series.items()):
        a = axes[i]
        shown = limits_of(limits, name)
        nonzero = x[x != 0]
        share = (1.0 - nonzero.size / x.size) if x.size else float("nan")
        # one panel per reward: its title names it, the legend (outside) keeps the zero share
        label = f"zero: {share:.1%}" if layout == "facet" else f"{name} (zero: {share:.1%})"
        color = f"C{i}"
        if kind == "hist":
            if nonzero.size:
                a.hist(nonzero, bins=bins, range=hist_range(shown),
                       weights=np.full(nonzero.size, 1.0 / nonzero.size),
                       histtype="stepfilled" if layout == "facet" else "step", color=color,
                       alpha=0.8, label=label)
            else:
                a.plot([], [], color=color, label=label)
            a.set_ylabel("fraction of nonzero steps")
        else:
            if nonzero.size:
                draw_ecdf(a, nonzero, color=color, label=label)
            else:
                a.plot([], [], color=color, label=label)
            a.set_ylabel("ECDF of nonzero steps")
            a.set_ylim(0.0, 1.02)
        show_limits(a, shown, "reward")
        if layout == "facet":
            a.set_title(name)
        legend_outside(a)
    return axes[0] if layout == "overlay" else np.asarray(axes, dtype=object)


def plot_reward_by_rank(table: pl.DataFrame, *, ax=None):
    """Mean episode return per final rank, one bar group per rank, bars per reward, CI error bars.

    Parameters
    ----------
    table : polars.DataFrame
        The output of :func:`rewardlab.domains.mahjong.ranking.reward_by_rank`: columns
        ``reward, rank, mean`` and optionally ``ci_low, ci_high``.
    ax : Axes, optional

    Returns
    -------
    Axes

    Examples
    --------
    >>> ax = plot_reward_by_rank(reward_by_rank(frame))  # doctest: +SKIP
    """
    require_columns(table, ("reward", "rank", "mean"), "table")
    ax = one_axes(ax)
    rewards = list(dict.fromkeys(table["reward"].to_list()))
    width = 0.8 / len(rewards)
    for i, name in enumerate(rewards):
        part = table.filter(pl.col("reward") == name).sort("rank")
        ranks = part["rank"].to_numpy().astype(np.float64)
        mean = part["mean"].to_numpy()
        x = ranks - 0.4 + width * (i + 0.5)
        yerr = None
        if "ci_low" in part.columns and "ci_high" in part.columns:
            lo, hi = part["ci_low"].to_numpy(), part["ci_high"].to_numpy()
            yerr = np.vstack([np.maximum(mean - lo, 0.0), np.maximum(hi - mean, 0.0)])
        ax.bar(x, mean, width=width, yerr=yerr, capsize=3 if yerr is not None else 0,
               color=f"C{i}", label=name)
    ax.axhline(0.0, color="0.5", linewidth=0.8)
    ax.set_xticks(range(S.NUM_SEATS), PLACES)
    ax.set_xlabel("final rank")
    ax.set_ylabel("mean episode return")
    legend_outside(ax)
    return ax


def plot_return_distribution(returns, *, ax=None, bins: int = 40, spec: FrameSpec | None = None,
                             layout: str = "overlay", limits=None):
    """Histograms of episode returns per plug-in: outlines on one Axes, or one panel each (small multiples).

    Parameters
    ----------
    returns : polars.DataFrame or mapping of str to array
        E.g. :func:`rewardlab.analysis.compare.episode_return_table` (key columns are
        skipped) or ``{"top": values}`` for any one-dimensional values.
    ax : Axes, sequence of Axes, or None
        One Axes for ``layout="overlay"``, one per plug-in for ``"facet"``
        (default: a new figure, three panels a row).
    bins : int
    spec : FrameSpec, optional
        Which columns are episode keys (default: the spec the table carries,
        or a registered one whose episode columns it holds).
    layout : {"overlay", "facet"}
        All plug-ins on one Axes, or one panel each, titled with its name:
        past three or four plug-ins the outlines of an overlay hide one
        another.
    limits : DisplayLimits or mapping of str to DisplayLimits, optional
        The x limits, one for all or one per plug-in by name
        (:func:`rewardlab.analysis.limits.series_limits`); the x label counts
        the returns outside them.  Default: each plug-in's own range.

    Returns
    -------
    Axes, or numpy.ndarray of Axes for ``"facet"``

    Examples
    --------
    >>> ax = plot_return_distribution(episode_return_table(frame))  # doctest: +SKIP
    >>> axes = plot_return_distribution({"a": [0.0, 1.0, 1.0], "b": [2.0, 3.0, 5.0]}, layout="facet")
    >>> [a.get_title() for a in axes]
    ['a', 'b']
    """
    bins = check_int("bins", bins, low=1, rule="should be a positive integer")
    check_choice("layout", layout, ("overlay", "facet"))
    limits = check_limits(limits)
    series = series_map(returns, "returns", spec)
    axes = [one_axes(ax)] * len(series) if layout == "overlay" else list(many_axes(ax, len(series)))
    for i, (name, x) in enumerate(series.items()):
        a = axes[i]
        shown = limits_of(limits, name)
        a.hist(x, bins=bins, range=hist_range(shown), histtype="stepfilled" if layout == "facet" else "step",
               color=f"C{i}", alpha=0.8 if layout == "facet" else 1.0,
               label=f"{x.size} episodes" if layout == "facet" else f"{name} ({x.size} episodes)")
        show_limits(a, shown, "episode return")
        a.set_ylabel("episodes")
        if layout == "facet":
            a.set_title(name)
            legend_outside(a)
    if layout == "overlay":
        legend_outside(axes[0])
        return axes[0]
    return np.asarray(axes, dtype=object)


def plot_correlation_heatmap(matrix: pl.DataFrame, *, ax=None, annotate: bool = True,
                             vmin: float = -1.0, vmax: float = 1.0):
    """Heat map of a square matrix between candidates (correlations, Pearson distances or EPIC distances).

    Parameters
    ----------
    matrix : polars.DataFrame
        :meth:`rewardlab.analysis.compare.RewardComparison.matrix` or
        :meth:`rewardlab.diagnostics.epic.EpicMatrix.matrix`: a ``reward``
        column of names, then one column per candidate in the same order.
    ax : Axes, optional
    annotate : bool
        Write each value in its cell.
    vmin, vmax : float
        Color scale limits (use 0 and 1 for distances).

    Returns
    -------
    Axes
        Its image (``ax.images[0]``) holds the matrix.

    Examples
    --------
    >>> ax = plot_correlation_heatmap(compare_rewards(frame).matrix("spearman"))  # doctest: +SKIP
    """
    require_columns(matrix, ("reward",), "matrix")
    names = matrix["reward"].to_list()
    if matrix.columns[1:] != names:
        raise ParameterError("matrix", "should be square: columns after 'reward' named like its rows",
                             matrix.columns)
    values = matrix.select(names).to_numpy().astype(np.float64)
    n = len(names)
    if ax is None:  # room for n rows of full names: about 0.45 in per candidate, plus the labels
        import matplotlib.pyplot as plt

        label = 0.075 * max((len(str(x)) for x in names), default=1)
        side = max(3.2, 0.45 * n)
        fig, ax = plt.subplots(figsize=(side + label + 1.2, side + label), layout="constrained")
        fig.set_label(OWN_LABEL)
    ax = one_axes(ax)
    image = ax.imshow(values, cmap="RdBu_r" if vmin < 0 else "viridis", vmin=vmin, vmax=vmax)
    size = "small" if n <= 6 else "x-small"  # full names, smaller and upright-rotated past 6
    ax.set_xticks(range(n), names, rotation=45 if n <= 6 else 90, ha="right" if n <= 6 else "center",
                  rotation_mode="anchor" if n <= 6 else "default", fontsize=size)
    ax.set_yticks(range(n), names, fontsize=size)
    if annotate:
        for i in range(len(names)):
            for j in range(len(names)):
                v = values[i, j]
                ax.text(j, i, "–" if not np.isfinite(v) else f"{v:.2f}", ha="center", va="center",
                        fontsize="small" if n <= 6 else "xx-small",
                        color="white" if np.isfinite(v) and abs(v) > 0.6 else "black")
    ax.figure.colorbar(image, ax=ax, shrink=0.8)
    return ax


def plot_return_scatter(returns: pl.DataFrame, *, x: str, y: str, ax=None):
    """Scatter of two candidates' episode returns, one point per episode.

    Parameters
    ----------
    returns : polars.DataFrame
        :func:`rewardlab.analysis.compare.episode_return_table` (or any frame with
        columns ``x`` and ``y``).
    x, y : str
        The two candidates.
    ax : Axes, optional

    Returns
    -------
    Axes

    Examples
    --------
    >>> ax = plot_return_scatter(episode_return_table(frame), x="top", y="points")  # doctest: +SKIP
    """
    require_columns(returns, (x, y), "returns")
    ax = one_axes(ax)
    ax.scatter(returns[x].to_numpy(), returns[y].to_numpy(), s=8, alpha=0.5, color="C0",
               edgecolors="none", label=f"{returns.height} episodes")
    ax.set_xlabel(f"{x} episode return")
    ax.set_ylabel(f"{y} episode return")
    legend_outside(ax)
    return ax
