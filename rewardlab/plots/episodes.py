"""One episode step by step, and the episodes of a dataset by how they ended.
"""

from __future__ import annotations

import numpy as np
import polars as pl

from rewardlab.core import columns
from rewardlab.analysis.episode_summary import ENDINGS, RETURN_PREFIX, summary_rewards
from rewardlab.core.errors import ParameterError, check_int
from rewardlab.plots.axes import legend_outside, one_axes, many_axes, require_columns

__all__ = ["plot_episode", "plot_episode_summary"]


def plot_episode(detail, *, ax=None):
    """One episode's running return per candidate over its steps, boundaries as vertical lines, the end marked.

    Parameters
    ----------
    detail : EpisodeDetail
        :func:`rewardlab.analysis.episodes.episode_detail` (or the mahjong
        :func:`rewardlab.domains.mahjong.episodes.mahjong_episode_detail`).
    ax : Axes, optional

    Returns
    -------
    Axes
        One line per candidate (labelled with its name and return); the
        legend sits outside the data, to the right.

    Examples
    --------
    >>> ax = plot_episode(episode_detail(frame, 0))  # doctest: +SKIP
    """
    steps = getattr(detail, "steps", None)
    if not isinstance(steps, pl.DataFrame) or not hasattr(detail, "rewards"):
        raise ParameterError("detail", "should be an EpisodeDetail (rewardlab.analysis.episodes.episode_detail)",
                             type(detail).__name__)
    ax = one_axes(ax)
    x = steps[detail.step].cast(pl.Float64).to_numpy()
    for i, name in enumerate(detail.rewards):
        ax.plot(x, steps[f"return_{name}"].to_numpy(), color=f"C{i}", drawstyle="steps-post",
                label=f"{name} (return {detail.returns[name]:.4g})")
    first = True
    for flag in detail.boundaries:
        for xb in x[steps[flag].to_numpy().astype(bool)]:
            ax.axvline(xb, color="0.6", linestyle=":", linewidth=0.9, label=f"{flag}" if first else None)
            first = False
    if x.size:
        ax.axvline(x[-1], color="0.2", linestyle="--", linewidth=1.0, label=f"end ({detail.ended})")
        ax.scatter([x[-1]] * len(detail.rewards), [detail.returns[n] for n in detail.rewards], s=18, zorder=3,
                   color=[f"C{i}" for i in range(len(detail.rewards))])
    ax.set_xlabel("step" if detail.step == "step" else f"step ({detail.step})")
    ax.set_ylabel("return so far")
    ax.set_title(f"Return step by step: {detail.title}", fontsize="medium")
    legend_outside(ax)
    return ax


#: Colours of the ways an episode ends (:data:`rewardlab.analysis.episode_summary.ENDINGS`).
_ENDING_COLORS = {"terminated": "C0", "truncated": "C1", "cut": "C3", "unflagged": "0.55"}


def _integer_edges(values: np.ndarray, bins: int) -> np.ndarray:
    """One bin per integer when the range is small, else ``bins`` equal bins."""
    lo, hi = (float(values.min()), float(values.max())) if values.size else (0.0, 1.0)
    if hi - lo + 1 <= bins:
        return np.arange(lo - 0.5, hi + 1.5)
    return np.histogram_bin_edges(values, bins=bins)


def plot_episode_summary(summary: pl.DataFrame, *, reward: str | None = None, ax=None, bins: int = 40):
    """Distributions of one reward's episode returns and of episode lengths, stacked by how episodes ended.

    Parameters
    ----------
    summary : polars.DataFrame
        :func:`rewardlab.analysis.episode_summary.episode_summary` (columns
        ``steps``, ``ended`` and ``return_<name>``).
    reward : str, optional
        Which reward's returns (default: the summary's first).
    ax : sequence of two Axes, optional
        Returns, then lengths (default: a new figure of two panels).
    bins : int
        Bins of the returns histogram (lengths get one bin per integer when
        at most ``bins`` distinct lengths fit).

    Returns
    -------
    numpy.ndarray of two Axes
        Each ending present is one stacked layer, labelled ``"terminated (N)"``.

    Examples
    --------
    >>> summary = pl.DataFrame({"steps": [3, 5, 5], "ended": ["terminated", "truncated", "terminated"],
    ...                         "return_a": [1.0, -1.0, 2.0]})
    >>> returns, lengths = plot_episode_summary(summary)
    >>> returns.get_legend_handles_labels()[1]
    ['terminated (2)', 'truncated (1)']
    """
    require_columns(summary, ("steps", "ended"), "summary")
    bins = check_int("bins", bins, low=1, rule="should be a positive integer")
    names = summary_rewards(summary)
    if not names:
        raise ParameterError("summary", "should hold a return_<name> column (episode_summary with a reward)",
                             summary.columns[:10])
    if reward is None:
        reward = names[0]
    elif reward not in names and not (reward.startswith(columns.REWARD_PREFIX)
                                      and reward[len(columns.REWARD_PREFIX):] in names):
        raise ParameterError("reward", "should be one of the summary's rewards (" + ", ".join(names) + ")",
                             reward)
    reward = reward if reward in names else reward[len(columns.REWARD_PREFIX):]
    if summary.height == 0:
        raise ParameterError("summary", "should hold at least one episode", 0)
    before, after = many_axes(ax, 2)
    endings = [e for e in ENDINGS if e in set(summary["ended"].to_list())]
    parts = [summary.filter(pl.col("ended") == e) for e in endings]
    labels = [f"{e} ({p.height})" for e, p in zip(endings, parts)]
    colors = [_ENDING_COLORS[e] for e in endings]
    returns = [p[RETURN_PREFIX + reward].cast(pl.Float64).to_numpy() for p in parts]
    lengths = [p["steps"].cast(pl.Float64).to_numpy() for p in parts]
    before.hist(returns, bins=np.histogram_bin_edges(np.concatenate(returns), bins=bins), stacked=True,
                color=colors, label=labels)
    before.set_xlabel(f"episode return ({reward})")
    before.set_ylabel("episodes")
    before.set_title(f"Return per episode: {reward}", fontsize="medium")
    after.hist(lengths, bins=_integer_edges(np.concatenate(lengths), bins), stacked=True, color=colors,
               label=labels)
    after.set_xlabel("steps per episode")
    after.set_ylabel("episodes")
    after.set_title("Steps per episode", fontsize="medium")
    legend_outside(after)
    legend_outside(before)
    return np.asarray([before, after], dtype=object)
