"""What normalization does to a reward (raw and normalized distributions) and epsilon-greedy schedules.
"""

from __future__ import annotations

from typing import Mapping

import numpy as np
import polars as pl

from rewardlab.analysis.limits import DisplayLimits
from rewardlab.analysis.normalizers import replay_methods
from rewardlab.core.errors import ParameterError, check_int
from rewardlab.plots.axes import legend_outside, one_axes, many_axes, hist_range, show_limits, require_columns

__all__ = ["plot_normalization", "plot_epsilon_schedule"]


def plot_normalization(normalized: pl.DataFrame, *, ax=None, bins: int = 50,
                       clip_reward: float | None = None, limits=None):
    """Rewards before and after normalization, on the steps whose raw reward is nonzero.

    Parameters
    ----------
    normalized : polars.DataFrame
        :func:`rewardlab.analysis.normalizers.normalized_rewards`: column ``raw`` and
        one column per method (``constants``, ``gymnasium``, ``sb3``).
    ax : sequence of two Axes, optional
        "Before" and "after" panels.
    bins : int
    clip_reward : float, optional
        Draw SB3's clipping bounds at ``±clip_reward`` on the "after" panel
        (when they fall within its limits).
    limits : (DisplayLimits, DisplayLimits), optional
        The x limits of the "before" and "after" panels:
        :func:`rewardlab.analysis.limits.normalization_limits`, which leaves
        out a running normalizer's first steps (divided by a standard
        deviation of almost nothing).  The x labels count the values outside.
        Default: the data's own range.

    Returns
    -------
    numpy.ndarray of two Axes

    Examples
    --------
    >>> normalized = normalized_rewards(frame, "points")  # doctest: +SKIP
    >>> axes = plot_normalization(normalized, clip_reward=10.0,
    ...                           limits=normalization_limits(normalized))  # doctest: +SKIP
    """
    require_columns(normalized, ("raw",), "normalized")
    bins = check_int("bins", bins, low=1, rule="should be a positive integer")
    methods = replay_methods(normalized)
    if not methods:
        raise ParameterError("normalized", "should have at least one normalized column besides 'raw'",
                             normalized.columns)
    if limits is None:
        limits = (None, None)
    if (not isinstance(limits, (tuple, list)) or len(limits) != 2
            or not all(x is None or isinstance(x, DisplayLimits) for x in limits)):
        raise ParameterError("limits", "should be a pair of DisplayLimits (before, after): "
                             "rewardlab.analysis.limits.normalization_limits(normalized)", type(limits).__name__)
    before, after = many_axes(ax, 2)
    raw = normalized["raw"].to_numpy()
    nonzero = raw != 0
    share = float(nonzero.mean()) if raw.size else 0.0
    before.hist(raw[nonzero], bins=bins, range=hist_range(limits[0]), color="0.4",
                label=f"raw ({share:.1%} of steps nonzero)")
    before.set_title("raw reward")
    show_limits(before, limits[0], "raw reward")
    before.set_ylabel("steps")
    legend_outside(before)
    for i, m in enumerate(methods):
        after.hist(normalized[m].to_numpy()[nonzero], bins=bins, range=hist_range(limits[1]), histtype="step",
                   color=f"C{i}", label=m)
    shown = hist_range(limits[1])
    if clip_reward is not None:
        for bound in (-float(clip_reward), float(clip_reward)):
            if shown is None or shown[0] <= bound <= shown[1]:
                after.axvline(bound, color="0.3", linestyle=":", linewidth=1.0)
    after.set_title("normalized reward")
    show_limits(after, limits[1], "normalized reward")
    after.set_ylabel("steps")
    legend_outside(after)
    return np.asarray([before, after], dtype=object)


def plot_epsilon_schedule(steps, epsilon, *, label: str = "epsilon", reference=None,
                          marks: Mapping[str, float] | None = None, threshold: float | None = None,
                          ax=None):
    """Epsilon over training steps, with an optional reference curve and marked steps.

    Parameters
    ----------
    steps, epsilon : 1-D arrays of the same length
        The sampled curve, e.g. from :meth:`rewardlab.schedules.ExplorerSchedule.epsilon`.
    label : str
        Legend label of the curve.
    reference : (str, array) pair, optional
        Another curve over the same ``steps`` (e.g. kanachan's intended
        schedule next to its actual one), drawn dashed.
    marks : mapping of str to step, optional
        Steps to mark with vertical lines (warmup end, decay end, ...).
    threshold : float, optional
        A horizontal line (e.g. the epsilon a summary counts steps to).
    ax : Axes, optional

    Returns
    -------
    Axes

    Examples
    --------
    >>> import numpy as np
    >>> steps = np.arange(0, 101)
    >>> ax = plot_epsilon_schedule(steps, np.clip(1 - steps / 50, 0.1, 1), marks={"decay end": 45})
    >>> [line.get_label() for line in ax.get_lines()]
    ['epsilon', 'decay end: 45']
    """
    steps = np.asarray(steps)
    epsilon = np.asarray(epsilon, dtype=np.float64)
    if steps.ndim != 1 or epsilon.shape != steps.shape:
        raise ParameterError("epsilon", f"should be 1-D with the shape of `steps` {steps.shape}",
                             epsilon.shape)
    ax = one_axes(ax)
    ax.plot(steps, epsilon, color="C0", label=label)
    if reference is not None:
        name, values = reference
        ax.plot(steps, np.asarray(values, dtype=np.float64), color="0.5", linestyle="--",
                linewidth=1.0, label=name)
    if threshold is not None:
        ax.axhline(threshold, color="C3", linestyle=":", linewidth=1.0, label=f"threshold {threshold:g}")
    for i, (name, step) in enumerate((marks or {}).items()):
        ax.axvline(step, color=f"C{i + 1}", linestyle="-.", linewidth=1.0, label=f"{name}: {step:,}")
    ax.set_xlabel("step")
    ax.set_ylabel("epsilon")
    ax.set_ylim(-0.02, 1.02)
    legend_outside(ax)
    return ax
