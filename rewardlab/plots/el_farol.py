"""The El Farol tuner's figures: per-agent reward distributions and constants, G by week, one week's nights.

Each function draws arrays or tables already computed (by
:class:`rewardlab.sessions.ElFarolSession` or the
:mod:`rewardlab.domains.el_farol` functions) and returns the Axes; nothing is
computed here beyond each agent's quartiles.  Alignment is drawn by
:mod:`rewardlab.plots.alignment`.

Examples
--------
>>> import numpy as np
>>> ax = plot_agent_rewards(np.array([[1.0, 2.0], [3.0, 2.5], [2.0, 1.0]]))
>>> len(ax.collections)
3
"""

from __future__ import annotations

import numpy as np
import polars as pl

from rewardlab.core.errors import ParameterError, check_positive
from rewardlab.plots.axes import legend_outside, one_axes, require_columns
from rewardlab.plots.diagnostics import plain_label

__all__ = ["plot_agent_rewards", "plot_agent_constants", "plot_global_by_week", "plot_night_attendance"]


def _matrix(name: str, values) -> np.ndarray:
    x = np.asarray(values, dtype=np.float64)
    if x.ndim != 2 or x.shape[1] == 0:
        raise ParameterError(name, "should be 2-D, [weeks, agents], with at least one agent", x.shape)
    return x


def _agent_ticks(ax, labels) -> None:
    x = np.arange(len(labels))
    step = max(1, len(labels) // 25)  # at most about 25 tick labels
    ax.set_xticks(x[::step], [plain_label(a) for a in labels[::step]], fontsize="small",
                  rotation=90 if len(labels) > 12 else 0)
    ax.set_xlabel("agent")


def plot_agent_rewards(rewards, *, ax=None, agents=None, label: str = "reward"):
    """Each agent's reward over the weeks: its range, its middle half and its median, one column per agent.

    A box plot drawn as three collections (fast to redraw for many agents): a thin line from the minimum
    to the maximum, a thick one over the quartiles, a dot at the median.

    Parameters
    ----------
    rewards : array-like of float, shape ``[S, n]``
        Agent ``i``'s reward in week ``s`` (``ElFarolResults.rewards``).
    ax : Axes, optional
    agents : sequence, optional
        The agents' ids for the ticks (default ``0 .. n-1``).
    label : str
        The reward's name (y axis).

    Returns
    -------
    Axes
        ``ax.collections``: the ranges, the quartiles (each one segment per agent, in agent order) and the
        medians (one point per agent).

    Examples
    --------
    >>> ax = plot_agent_rewards(np.array([[1.0, 2.0], [3.0, 2.5], [2.0, 1.0]]))
    >>> ax.collections[2].get_offsets()[:, 1].tolist()
    [2.0, 2.0]
    """
    x = _matrix("rewards", rewards)
    n = x.shape[1]
    agents = list(range(n)) if agents is None else list(agents)
    if len(agents) != n:
        raise ParameterError("agents", f"should name the {n} agents (columns of rewards)", len(agents))
    ax = one_axes(ax)
    positions = np.arange(n)
    low, q1, median, q3, high = np.quantile(x, [0.0, 0.25, 0.5, 0.75, 1.0], axis=0)
    ax.vlines(positions, low, high, color="C0", linewidth=0.8, alpha=0.6, label="min to max")
    ax.vlines(positions, q1, q3, color="C0", linewidth=4.0, alpha=0.8, label="quartiles")
    ax.scatter(positions, median, color="C3", s=10, zorder=3, label="median")
    _agent_ticks(ax, agents)
    ax.set_ylabel(plain_label(label))
    ax.set_title(f"{plain_label(label)} per agent over {x.shape[0]} weeks", fontsize="medium")
    return ax


def plot_agent_constants(constants: pl.DataFrame, *, ax=None, label: str = "reward"):
    """Each agent's normalization constants: its mean reward with a bar of plus and minus one std.

    Parameters
    ----------
    constants : polars.DataFrame
        ``agent``, ``mean``, ``std`` (``ElFarolResults.constants``), one row per agent.
    ax : Axes, optional
    label : str

    Returns
    -------
    Axes
        ``ax.containers[0]``: the error bars (one point per agent).

    Examples
    --------
    >>> t = pl.DataFrame({"agent": ["0", "1"], "mean": [0.0, 1.0], "std": [1.0, 0.5]})
    >>> ax = plot_agent_constants(t)
    >>> ax.containers[0].lines[0].get_ydata().tolist()
    [0.0, 1.0]
    """
    if not isinstance(constants, pl.DataFrame):
        raise ParameterError("constants", "should be a polars.DataFrame (ElFarolResults.constants)",
                             type(constants).__name__)
    require_columns(constants, ("agent", "mean", "std"), "constants")
    ax = one_axes(ax)
    x = np.arange(constants.height)
    mean, std = constants["mean"].to_numpy(), constants["std"].to_numpy()
    ax.errorbar(x, mean, yerr=std, fmt="o", markersize=3, capsize=2, color="C2", ecolor="0.4",
                label="mean ± std")
    overall = float(np.mean(mean)) if mean.size else 0.0
    ax.axhline(overall, color="0.5", linewidth=0.8, linestyle="--", label="mean of the agents' means")
    _agent_ticks(ax, constants["agent"].to_list())
    ax.set_ylabel(f"{plain_label(label)} mean ± std")
    ax.set_title("normalization constants per agent", fontsize="medium")
    legend_outside(ax)
    return ax


def plot_global_by_week(global_reward, *, ax=None, mark: int | None = None):
    """``G`` of every week (joint step) in data order, one week marked.

    Parameters
    ----------
    global_reward : array-like of float, shape ``[S]``
    ax : Axes, optional
    mark : int, optional
        A week to mark (the one opened).

    Returns
    -------
    Axes
        ``ax.lines[0]``: G by week.

    Examples
    --------
    >>> ax = plot_global_by_week(np.array([1.0, 2.0, 1.5]), mark=1)
    >>> ax.lines[0].get_ydata().tolist()
    [1.0, 2.0, 1.5]
    """
    g = np.asarray(global_reward, dtype=np.float64)
    if g.ndim != 1:
        raise ParameterError("global_reward", "should be 1-D, [weeks]", g.shape)
    ax = one_axes(ax)
    ax.plot(np.arange(g.size), g, color="C0", linewidth=0.9)
    if mark is not None and 0 <= mark < g.size:
        ax.axvline(mark, color="C3", linewidth=0.9, linestyle=":")
        ax.plot([mark], [g[mark]], marker="o", color="C3", markersize=4)
    ax.set_xlabel("week (joint step, every episode in order)")
    ax.set_ylabel("G")
    ax.set_title("G by week: click a week to open it", fontsize="medium")
    return ax


def plot_night_attendance(attendance, *, capacity: float, ax=None, utility=None):
    """One week's attendance per night, the capacity ``b`` as a line, each night's utility written on its bar.

    Parameters
    ----------
    attendance : array-like of int, shape ``[K]``
    capacity : float
        ``b``: a night's utility ``x exp(-x / b)`` is largest at ``x = b``.
    ax : Axes, optional
    utility : array-like of float, shape ``[K]``, optional
        Each night's utility (written above its bar).

    Returns
    -------
    Axes
        One bar per night (``ax.patches``).

    Examples
    --------
    >>> ax = plot_night_attendance([3, 5, 0], capacity=4.0, utility=[1.4, 1.4, 0.0])
    >>> [float(p.get_height()) for p in ax.patches]
    [3.0, 5.0, 0.0]
    """
    x = np.asarray(attendance, dtype=np.float64)
    if x.ndim != 1:
        raise ParameterError("attendance", "should be 1-D, [nights]", x.shape)
    capacity = check_positive("capacity", capacity)
    ax = one_axes(ax)
    nights = np.arange(x.size)
    bars = ax.bar(nights, x, color=np.where(x > capacity, "C3", "C0"), alpha=0.7)
    ax.axhline(capacity, color="0.3", linewidth=0.9, linestyle="--", label=f"capacity b = {capacity:g}")
    if utility is not None:
        u = np.asarray(utility, dtype=np.float64)
        if u.shape != x.shape:
            raise ParameterError("utility", f"should have one value per night ({x.size})", u.shape)
        for bar, value in zip(bars, u):
            ax.annotate(f"{value:.3g}", (bar.get_x() + bar.get_width() / 2, bar.get_height()),
                        ha="center", va="bottom", fontsize="x-small")
    ax.set_xticks(nights)
    ax.set_xlabel("night")
    ax.set_ylabel("agents attending")
    ax.set_title("attendance (utility x·exp(-x/b) on each bar)", fontsize="medium")
    legend_outside(ax)
    return ax
