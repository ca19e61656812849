"""Plots of multi-agent reward alignment: per-agent factoredness and learnability, several rewards side by
side, and an agent's reward against the global reward.

Like every :mod:`rewardlab.plots` function these draw an
:class:`~rewardlab.analysis.alignment.AlignmentResult` computed by
:func:`~rewardlab.analysis.alignment.alignment` and return the Axes; they
compute nothing (the whiskers are the result's bootstrap intervals, the
points its kept pairs).

Examples
--------
>>> import numpy as np, polars as pl
>>> from rewardlab.core.spec import FrameSpec
>>> from rewardlab.analysis.joint import joint_view
>>> from rewardlab.analysis.alignment import alignment
>>> frame = pl.DataFrame({"ep": [0] * 6, "t": [0, 0, 1, 1, 2, 2], "agent": [0, 1] * 3, "action": [0, 1, 2, 1, 0, 2]})
>>> view = joint_view(frame, spec=FrameSpec(name="s", episode=("ep",), step="t", agent="agent"))
>>> r = alignment(view, lambda a, s: a * 1.0, lambda a, s: a.sum(axis=1) * 1.0, resamples=20, name="own")
>>> axes = plot_agent_alignment(r)
>>> [len(ax.patches) for ax in axes]
[2, 2]
"""

from __future__ import annotations

import numpy as np

from rewardlab.analysis.alignment import AlignmentResult
from rewardlab.core.errors import ParameterError, check_choice
from rewardlab.plots.axes import legend_outside, many_axes, one_axes
from rewardlab.plots.diagnostics import plain_label

__all__ = ["plot_agent_alignment", "plot_alignment_comparison", "plot_reward_vs_global"]

#: The measures drawn, with their axis words.
MEASURES = {"factoredness": "factoredness (share of own changes\nmoving the reward with G)",
            "learnability": "learnability (own / others'\nmean |change| of the reward)"}


def _result(result) -> AlignmentResult:
    if not isinstance(result, AlignmentResult):
        raise ParameterError("result", "should be an AlignmentResult (rewardlab.analysis.alignment.alignment)",
                             type(result).__name__)
    return result


def _whiskers(values, interval) -> np.ndarray:
    """Distances from each value to its interval's ends (``[2, k]``, never negative; 0 where not finite)."""
    values = np.asarray(values, dtype=np.float64)
    low, high = np.asarray(interval, dtype=np.float64)
    out = np.stack([values - low, high - values])
    return np.where(np.isfinite(out), np.maximum(out, 0.0), 0.0)


def _bars(ax, labels, values, interval, measure, color):
    x = np.arange(len(labels))
    shown = np.where(np.isfinite(values), values, 0.0)
    ax.bar(x, shown, yerr=_whiskers(shown, interval), capsize=3, color=color, ecolor="0.2")
    ax.set_xticks(x, labels, rotation=90 if len(labels) > 12 else 0, fontsize="small" if len(labels) <= 12
                  else "x-small")
    ax.set_ylabel(MEASURES[measure], fontsize="small")
    if measure == "factoredness":
        ax.set_ylim(0.0, 1.05)
    else:
        ax.axhline(1.0, color="0.5", linewidth=0.8, linestyle="--")


def plot_agent_alignment(result, *, ax=None):
    """Per-agent factoredness and learnability bars, each with its bootstrap interval as a whisker.

    Parameters
    ----------
    result : AlignmentResult
    ax : sequence of two Axes, optional
        Factoredness, then learnability (new ones when None).

    Returns
    -------
    numpy.ndarray of two Axes
        Each with one bar per agent (``ax.patches``, in agent order); non-finite values draw as 0.

    Examples
    --------
    See the module docstring.
    """
    result = _result(result)
    axes = many_axes(ax, 2)
    labels = [plain_label(a) for a in result.agents]
    _bars(axes[0], labels, result.factoredness, result.factoredness_ci, "factoredness", "C0")
    _bars(axes[1], labels, result.learnability, result.learnability_ci, "learnability", "C1")
    for a, measure in zip(axes, MEASURES):
        a.set_xlabel("agent")
        a.set_title(f"{plain_label(result.name)}: {measure}", fontsize="medium")
    return axes


def plot_alignment_comparison(results, *, ax=None):
    """Several rewards' overall factoredness and learnability, with their intervals (one bar each).

    Parameters
    ----------
    results : sequence of AlignmentResult
        In bar order.
    ax : sequence of two Axes, optional

    Returns
    -------
    numpy.ndarray of two Axes
        Factoredness, then learnability; one bar per result.

    Examples
    --------
    >>> import numpy as np, polars as pl
    >>> from rewardlab.core.spec import FrameSpec
    >>> from rewardlab.analysis.joint import joint_view
    >>> from rewardlab.analysis.alignment import alignment
    >>> frame = pl.DataFrame({"ep": [0, 0, 0, 0], "t": [0, 0, 1, 1], "agent": [0, 1, 0, 1], "action": [0, 1, 1, 1]})
    >>> view = joint_view(frame, spec=FrameSpec(name="s", episode=("ep",), step="t", agent="agent"))
    >>> g = lambda a, s: a.sum(axis=1) * 1.0
    >>> rs = [alignment(view, lambda a, s: a * 1.0, g, resamples=9, name="own"),
    ...       alignment(view, lambda a, s: -a * 1.0, g, resamples=9, name="against")]
    >>> [float(p.get_height()) for p in plot_alignment_comparison(rs)[0].patches]
    [1.0, 0.0]
    """
    results = list(results)
    if not results:
        raise ParameterError("results", "should hold at least one AlignmentResult", results)
    results = [_result(r) for r in results]
    axes = many_axes(ax, 2)
    labels = [plain_label(r.name) for r in results]
    _bars(axes[0], labels, np.array([r.overall_factoredness for r in results]),
          np.array([r.overall_factoredness_ci for r in results]).T, "factoredness", "C0")
    _bars(axes[1], labels, np.array([r.overall_learnability for r in results]),
          np.array([r.overall_learnability_ci for r in results]).T, "learnability", "C1")
    for a, measure in zip(axes, MEASURES):
        a.set_title(f"{measure}, all agents", fontsize="medium")
    return axes


def plot_reward_vs_global(result, *, ax=None, what: str = "changes"):
    """An agent's reward against the global reward: its kept own changes, or recorded values.

    Parameters
    ----------
    result : AlignmentResult
    ax : Axes, optional
    what : {"changes", "values"}
        ``"changes"``: each kept own change's ``dg_i`` (y) against ``dG`` (x); a factored reward keeps
        to the quadrants where both have one sign (shaded), a reward that moves exactly as ``G`` lies on
        the diagonal.  ``"values"``: recorded ``g_i`` against ``G``.

    Returns
    -------
    Axes
        One scatter (``ax.collections[0]``) holding the points, in the result's order.

    Examples
    --------
    >>> import numpy as np, polars as pl
    >>> from rewardlab.core.spec import FrameSpec
    >>> from rewardlab.analysis.joint import joint_view
    >>> from rewardlab.analysis.alignment import alignment
    >>> frame = pl.DataFrame({"ep": [0, 0], "t": [0, 0], "agent": [0, 1], "action": [0, 1]})
    >>> view = joint_view(frame, spec=FrameSpec(name="s", episode=("ep",), step="t", agent="agent"))
    >>> r = alignment(view, lambda a, s: a * 1.0, lambda a, s: a.sum(axis=1) * 1.0, action_set=3, resamples=5)
    >>> ax = plot_reward_vs_global(r)
    >>> ax.collections[0].get_offsets().shape
    (4, 2)
    """
    result = _result(result)
    check_choice("what", what, ("changes", "values"))
    ax = one_axes(ax)
    if what == "changes":
        x, y = result.pairs["global_change"], result.pairs["reward_change"]
        agents = result.pairs["agent"]
        xlabel, ylabel = "change in G", f"change in agent's {plain_label(result.name)}"
    else:
        x, y = result.values["global"], result.values["reward"]
        agents = result.values["agent"]
        xlabel, ylabel = "G", f"agent's {plain_label(result.name)}"
    ax.scatter(x, y, c=agents, cmap="viridis", s=8, alpha=0.6, linewidths=0, label=f"{len(x)} points")
    if what == "changes":
        span = float(max(np.abs(x).max(initial=0.0), np.abs(y).max(initial=0.0))) or 1.0
        ax.axhline(0.0, color="0.5", linewidth=0.8)
        ax.axvline(0.0, color="0.5", linewidth=0.8)
        ax.fill_between([0, 1.05 * span], 0, 1.05 * span, color="C2", alpha=0.08, linewidth=0)
        ax.fill_between([-1.05 * span, 0], -1.05 * span, 0, color="C2", alpha=0.08, linewidth=0,
                        label="same sign (factored)")
        ax.plot([-span, span], [-span, span], color="C3", linewidth=0.8, linestyle=":", label="moves as G")
        ax.set_xlim(-1.05 * span, 1.05 * span)
        ax.set_ylim(-1.05 * span, 1.05 * span)
    ax.set_xlabel(xlabel)
    ax.set_ylabel(ylabel)
    ax.set_title(f"{plain_label(result.name)}: factoredness {result.overall_factoredness:.3f}", fontsize="medium")
    legend_outside(ax)
    return ax
