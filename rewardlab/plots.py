"""Plots of reward analyses: ``plot_*(data, *, ax=None)`` draws what it is given and returns the Axes.

Every function takes data already computed by :mod:`rewardlab.analysis.stats`,
:mod:`rewardlab.domains.mahjong.ranking`, :mod:`rewardlab.analysis.compare` or
:mod:`rewardlab.analysis.normalizers` (or plain arrays), draws it on ``ax`` (a new
figure when None) and returns the Axes, or an array of Axes for multi-panel
plots.  No statistics are computed here beyond binning a histogram.
``matplotlib.pyplot`` is imported only when a figure has to be created.

Most steps of a sparse reward are 0, so distributions of step rewards show
the nonzero values and report the zero share in the legend.

Examples
--------
>>> from rewardlab.plots import plot_reward_distribution
>>> import numpy as np
>>> ax = plot_reward_distribution({"top": np.array([0.0, 0.0, 1.0, -1.0])}, bins=4)
>>> ax.get_legend_handles_labels()[1]
['top (zero: 50.0%)']
"""

from __future__ import annotations

from typing import Mapping, Sequence

import numpy as np
import polars as pl

from rewardlab.sources.kanachan import schema as S
from rewardlab.core import columns
from rewardlab.analysis.compare import episode_key_columns
from rewardlab.analysis.episode_summary import ENDINGS, RETURN_PREFIX, summary_rewards
from rewardlab.analysis.normalizers import replay_methods
from rewardlab.core.spec import FrameSpec, attached
from rewardlab.core.errors import ColumnNotFoundError, ParameterError, check_choice, check_int

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
    "legend_outside",
]

_RANK_LABELS = ("1st", "2nd", "3rd", "4th")
_OWN = "rewardlab.plots"  # the label of the figures made here (a legend may widen them)
_PANEL_WIDTH = 4.2  # inches per panel of a figure made here
_KEYS = ("episode", "start", "length")  # and the spec's columns (see _key_columns)


def _new_axes(n: int = 1, *, ncols: int | None = None):
    import matplotlib.pyplot as plt

    ncols = ncols or n
    nrows = -(-n // ncols)
    fig, axes = plt.subplots(nrows, ncols, figsize=(_PANEL_WIDTH * ncols, 3.2 * nrows), squeeze=False,
                             layout="constrained")
    fig.set_label(_OWN)
    axes = axes.ravel()
    for extra in axes[n:]:
        extra.remove()
    return axes[:n]


def legend_outside(ax):
    """The Axes' legend to the right of its data, outside the axes, so it never covers a point or a bar.

    Figures made here use constrained layout, which makes room for it.

    Examples
    --------
    >>> import matplotlib.pyplot as plt
    >>> fig, ax = plt.subplots()
    >>> _ = ax.plot([0, 1], label="a")
    >>> legend_outside(ax).get_bbox_to_anchor() is not None
    True
    """
    legend = ax.legend(loc="upper left", bbox_to_anchor=(1.02, 1.0), borderaxespad=0.0,
                       fontsize="small", frameon=False)
    fig = ax.figure
    if fig.get_label() == _OWN and hasattr(fig.canvas, "get_renderer"):
        # a figure made here widens so that each panel keeps its width beside its legend
        wide = legend.get_window_extent(fig.canvas.get_renderer()).width / fig.dpi
        spec = ax.get_subplotspec()
        ncols = spec.get_gridspec().ncols if spec is not None else 1
        fig.set_figwidth(max(fig.get_figwidth(), ncols * (_PANEL_WIDTH + wide + 0.3)))
    return legend


def _one_axes(ax):
    if ax is None:
        return _new_axes(1)[0]
    from matplotlib.axes import Axes

    if not isinstance(ax, Axes):
        raise ParameterError("ax", "should be a matplotlib Axes or None", type(ax).__name__)
    return ax


def _many_axes(ax, n: int):
    if ax is None:
        return _new_axes(n, ncols=min(n, 3))
    from matplotlib.axes import Axes

    axes = np.asarray(ax, dtype=object).ravel()
    if axes.size != n or not all(isinstance(a, Axes) for a in axes):
        raise ParameterError("ax", f"should be a sequence of {n} matplotlib Axes (one per panel) or None",
                             type(ax).__name__ if not hasattr(ax, "__len__") else f"{len(ax)} objects")
    return axes


def _key_columns(frame: pl.DataFrame, spec: FrameSpec | None) -> set[str]:
    """Columns of ``frame`` that are not series to plot: episode keys and the spec's other columns."""
    spec = spec if spec is not None else attached(frame)
    skip = set(_KEYS) | set(episode_key_columns(frame, spec))
    return skip | set(spec.required) if spec is not None else skip


def _series_map(data, what: str, spec: FrameSpec | None = None) -> dict[str, np.ndarray]:
    """``{name: float64 array}`` from a mapping, a single array, or a frame's non-key columns."""
    if isinstance(data, pl.DataFrame):
        skip = _key_columns(data, spec)
        cols = [c for c in data.columns if c not in skip]
        out = {(c[len(columns.REWARD_PREFIX):] if c.startswith(columns.REWARD_PREFIX) else c):
               data[c].cast(pl.Float64).to_numpy() for c in cols if data[c].dtype.is_numeric()}
    elif isinstance(data, Mapping):
        out = {str(k): np.asarray(v, dtype=np.float64).ravel() for k, v in data.items()}
    else:
        arr = np.asarray(data)
        if arr.dtype == object or arr.ndim != 1:
            raise ParameterError(what, "should be a mapping of name to 1-D array, a 1-D array, or a "
                                 "polars DataFrame", type(data).__name__)
        out = {"reward": arr.astype(np.float64)}
    if not out:
        raise ParameterError(what, "should hold at least one series", type(data).__name__)
    return out


def _ecdf(ax, x: np.ndarray, **kw):
    xs = np.sort(x)
    ys = np.arange(1, xs.size + 1) / max(xs.size, 1)
    return ax.step(xs, ys, where="post", **kw)[0]


def plot_reward_distribution(values, *, ax=None, kind: str = "hist", layout: str = "overlay",
                             bins: int = 50, spec: FrameSpec | None = None):
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

    Returns
    -------
    Axes, or numpy.ndarray of Axes for ``"facet"``
        Each plug-in's legend label gives its zero share, e.g. ``"top (zero: 97.9%)"``.

    Examples
    --------
    >>> ax = plot_reward_distribution(frame.select("reward_top", "reward_points"), kind="ecdf")  # doctest: +SKIP
    """
    check_choice("kind", kind, ("hist", "ecdf"))
    check_choice("layout", layout, ("overlay", "facet"))
    bins = check_int("bins", bins, low=1, rule="should be a positive integer")
    series = _series_map(values, "values", spec)
    axes = [_one_axes(ax)] * len(series) if layout == "overlay" else list(_many_axes(ax, len(series)))
    for i, (name, x) in enumerate(series.items()):
        a = axes[i]
        nonzero = x[x != 0]
        share = (1.0 - nonzero.size / x.size) if x.size else float("nan")
        # one panel per reward: its title names it, the legend (outside) keeps the zero share
        label = f"zero: {share:.1%}" if layout == "facet" else f"{name} (zero: {share:.1%})"
        color = f"C{i}"
        if kind == "hist":
            if nonzero.size:
                a.hist(nonzero, bins=bins, weights=np.full(nonzero.size, 1.0 / nonzero.size),
                       histtype="stepfilled" if layout == "facet" else "step", color=color,
                       alpha=0.8, label=label)
            else:
                a.plot([], [], color=color, label=label)
            a.set_ylabel("fraction of nonzero steps")
        else:
            if nonzero.size:
                _ecdf(a, nonzero, color=color, label=label)
            else:
                a.plot([], [], color=color, label=label)
            a.set_ylabel("ECDF of nonzero steps")
            a.set_ylim(0.0, 1.02)
        a.set_xlabel("reward")
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
    _require_columns(table, ("reward", "rank", "mean"), "table")
    ax = _one_axes(ax)
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
    ax.set_xticks(range(S.NUM_SEATS), _RANK_LABELS)
    ax.set_xlabel("final rank")
    ax.set_ylabel("mean episode return")
    legend_outside(ax)
    return ax


def plot_return_distribution(returns, *, ax=None, bins: int = 40, spec: FrameSpec | None = None):
    """Histograms of episode returns, one outline per plug-in.

    Parameters
    ----------
    returns : polars.DataFrame or mapping of str to array
        E.g. :func:`rewardlab.analysis.compare.episode_return_table` (key columns are
        skipped) or ``{"top": values}`` for any one-dimensional values.
    ax : Axes, optional
    bins : int
    spec : FrameSpec, optional
        Which columns are episode keys (default: the spec the table carries,
        or a registered one whose episode columns it holds).

    Returns
    -------
    Axes

    Examples
    --------
    >>> ax = plot_return_distribution(episode_return_table(frame))  # doctest: +SKIP
    """
    bins = check_int("bins", bins, low=1, rule="should be a positive integer")
    series = _series_map(returns, "returns", spec)
    ax = _one_axes(ax)
    for i, (name, x) in enumerate(series.items()):
        ax.hist(x, bins=bins, histtype="step", color=f"C{i}", label=f"{name} ({x.size} episodes)")
    ax.set_xlabel("episode return")
    ax.set_ylabel("episodes")
    legend_outside(ax)
    return ax


def plot_correlation_heatmap(matrix: pl.DataFrame, *, ax=None, annotate: bool = True,
                             vmin: float = -1.0, vmax: float = 1.0):
    """Heat map of a square matrix between candidates (correlations or EPIC distances).

    Parameters
    ----------
    matrix : polars.DataFrame
        :meth:`rewardlab.analysis.compare.RewardComparison.matrix`: a ``reward``
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
    _require_columns(matrix, ("reward",), "matrix")
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
        fig.set_label(_OWN)
    ax = _one_axes(ax)
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
    _require_columns(returns, (x, y), "returns")
    ax = _one_axes(ax)
    ax.scatter(returns[x].to_numpy(), returns[y].to_numpy(), s=8, alpha=0.5, color="C0",
               edgecolors="none", label=f"{returns.height} episodes")
    ax.set_xlabel(f"{x} episode return")
    ax.set_ylabel(f"{y} episode return")
    legend_outside(ax)
    return ax


def plot_normalization(normalized: pl.DataFrame, *, ax=None, bins: int = 50,
                       clip_reward: float | None = None):
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
        Draw SB3's clipping bounds at ``±clip_reward`` on the "after" panel.

    Returns
    -------
    numpy.ndarray of two Axes

    Examples
    --------
    >>> axes = plot_normalization(normalized_rewards(frame, "points"), clip_reward=10.0)  # doctest: +SKIP
    """
    _require_columns(normalized, ("raw",), "normalized")
    bins = check_int("bins", bins, low=1, rule="should be a positive integer")
    methods = replay_methods(normalized)
    if not methods:
        raise ParameterError("normalized", "should have at least one normalized column besides 'raw'",
                             normalized.columns)
    before, after = _many_axes(ax, 2)
    raw = normalized["raw"].to_numpy()
    nonzero = raw != 0
    share = float(nonzero.mean()) if raw.size else 0.0
    before.hist(raw[nonzero], bins=bins, color="0.4", label=f"raw ({share:.1%} of steps nonzero)")
    before.set_title("raw reward")
    before.set_xlabel("raw reward")
    before.set_ylabel("steps")
    legend_outside(before)
    for i, m in enumerate(methods):
        after.hist(normalized[m].to_numpy()[nonzero], bins=bins, histtype="step", color=f"C{i}", label=m)
    if clip_reward is not None:
        for sign in (-1.0, 1.0):
            after.axvline(sign * float(clip_reward), color="0.3", linestyle=":", linewidth=1.0)
    after.set_title("normalized reward")
    after.set_xlabel("normalized reward")
    after.set_ylabel("steps")
    legend_outside(after)
    return np.asarray([before, after], dtype=object)


def _require_columns(frame, columns: Sequence[str], what: str) -> None:
    if not isinstance(frame, pl.DataFrame):
        raise ParameterError(what, "should be a polars DataFrame", type(frame).__name__)
    for c in columns:
        if c not in frame.columns:
            raise ColumnNotFoundError(c, frame.columns)


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
    ax = _one_axes(ax)
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
    ax = _one_axes(ax)
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
    _require_columns(summary, ("steps", "ended"), "summary")
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
    before, after = _many_axes(ax, 2)
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
