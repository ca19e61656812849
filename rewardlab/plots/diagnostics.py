"""Plots of reward diagnostics: a distance matrix with its sampling error, the steps a finding points at,
one episode's step rewards with those steps marked, a composite reward's terms.

Like every :mod:`rewardlab.plots` function, these draw what they are given
(computed by :mod:`rewardlab.diagnostics` or the report) and return the Axes;
they compute nothing.  :data:`VERDICT_COLORS` is the one colour per verdict the
plots, the widgets and the report share.  Labels that come from data pass
through :func:`plain_label` (matplotlib reads ``$...$`` as mathematics: a
candidate named ``a$\\x$`` would stop the drawing).

Examples
--------
>>> import numpy as np
>>> d = np.array([[0.0, 0.25], [0.25, 0.0]])
>>> ax = plot_distance_matrix(("a", "b"), d, np.array([[0.0, 0.01], [0.01, 0.0]]))
>>> ax.texts[1].get_text()
'0.25\\n±0.01'
"""

from __future__ import annotations

import numpy as np

from rewardlab.core.errors import ParameterError
from rewardlab.plots.axes import OWN_LABEL, legend_outside, one_axes

__all__ = ["VERDICT_COLORS", "MARK_BAND_COLOR", "MARK_DOT_COLOR", "plain_label", "plot_distance_matrix",
           "plot_step_marks", "plot_episode_steps", "plot_term_shares"]

#: The colour of each verdict (:data:`rewardlab.diagnostics.VERDICTS`): fail red, warn amber, pass green,
#: info blue, n/a grey.
VERDICT_COLORS = {"fail": "#b00020", "warn": "#b26a00", "pass": "#1b7f3b", "info": "#1f5fa8", "n/a": "#707070"}
#: The bands and the dots :func:`plot_episode_steps` marks the steps a finding names with.
MARK_BAND_COLOR = "#ff8182"
MARK_DOT_COLOR = "#cf222e"


def plain_label(name) -> str:
    """``name`` as literal matplotlib text (``$`` escaped, so no mathematics is parsed).

    Examples
    --------
    >>> plain_label("a$b$")
    'a\\\\$b\\\\$'
    """
    return str(name).replace("$", r"\$")


def _square(name: str, values, n: int) -> np.ndarray:
    a = np.asarray(values, dtype=np.float64)
    if a.shape != (n, n):
        raise ParameterError(name, f"should have shape [{n}, {n}] (one row and column per name)", a.shape)
    return a


def plot_distance_matrix(names, distance, stderr=None, *, ax=None, title: str = "EPIC distance",
                         vmax: float = 1.0):
    """Heat map of a distance matrix between candidates, each cell written ``value ± stderr``.

    Parameters
    ----------
    names : sequence of str
        The candidates, in matrix order (``K`` of them).
    distance : float array of shape ``[K, K]``
        Distances (EPIC's: 0 for rewards equal up to shaping and scale, 1 at most); NaN shows as ``–``.
    stderr : float array of shape ``[K, K]`` or None
        The sampling error of each distance (its standard error over independent samples); None writes
        the values alone.
    ax : Axes, optional
    title : str
        What the matrix is, in words (a fallback says so here).
    vmax : float
        Top of the colour scale (its bottom is 0).

    Returns
    -------
    Axes
        Its image (``ax.images[0]``) holds ``distance``; ``ax.texts`` the cells' words, row by row.

    Examples
    --------
    >>> ax = plot_distance_matrix(["a", "b"], np.array([[0.0, np.nan], [np.nan, 0.0]]), title="EPIC")
    >>> [t.get_text() for t in ax.texts], ax.get_title()
    (['0', '–', '–', '0'], 'EPIC')
    """
    names = [str(n) for n in names]
    n = len(names)
    values = _square("distance", distance, n)
    errors = None if stderr is None else _square("stderr", stderr, n)
    if ax is None:  # room for n rows of full names, as plot_correlation_heatmap makes it
        import matplotlib.pyplot as plt

        label = 0.075 * max((len(x) for x in names), default=1)
        side = max(3.2, 0.55 * n)
        fig, ax = plt.subplots(figsize=(side + label + 1.2, side + label), layout="constrained")
        fig.set_label(OWN_LABEL)
    ax = one_axes(ax)
    image = ax.imshow(values, cmap="viridis", vmin=0.0, vmax=vmax)
    size = "small" if n <= 6 else "x-small"
    ax.set_xticks(range(n), names, rotation=45 if n <= 6 else 90, ha="right" if n <= 6 else "center",
                  rotation_mode="anchor" if n <= 6 else "default", fontsize=size)
    ax.set_yticks(range(n), names, fontsize=size)
    for i in range(n):
        for j in range(n):
            v = values[i, j]
            if not np.isfinite(v):
                text = "–"
            elif i == j and v == 0.0:
                text = "0"
            else:
                text = f"{v:.2f}"
                if errors is not None and np.isfinite(errors[i, j]):
                    text += f"\n±{errors[i, j]:.2f}"
            ax.text(j, i, text, ha="center", va="center", fontsize="x-small" if n <= 6 else "xx-small",
                    color="white" if np.isfinite(v) and v < 0.5 * vmax else "black")
    ax.figure.colorbar(image, ax=ax, shrink=0.8)
    ax.set_title(title, fontsize="medium")
    return ax


def plot_step_marks(steps, *, ax=None, label: str = "finding", color: str = VERDICT_COLORS["fail"],
                    width: float | None = None):
    """Mark steps of an episode plot (the rows a diagnostic's finding points at) with vertical lines or bands.

    Parameters
    ----------
    steps : sequence of numbers
        The x positions to mark (the episode plot's step values).
    ax : Axes, optional
        Usually the Axes :func:`rewardlab.plots.plot_episode` drew.
    label : str
        The legend's words for the marks (one entry; ``""`` for none).
    color : str
    width : float, optional
        None: one line per step.  A number (usually the distance between two steps): a band that wide
        centred on each step, the bands of steps closer than ``width`` merged, all in one artist (a line
        or a span each costs a layout pass each, which long episodes with many marked steps feel).

    Returns
    -------
    Axes
        With ``width=None`` one line per step (``ax.lines``), the first labelled; otherwise one more
        collection (``ax.collections[-1]``) with one path per band, in x order.

    Examples
    --------
    >>> ax = plot_step_marks([2, 5], label="shaping breaks here")
    >>> [float(line.get_xdata()[0]) for line in ax.lines], ax.lines[0].get_label()
    ([2.0, 5.0], 'shaping breaks here')
    >>> ax = plot_step_marks([2, 3, 4, 9], width=1.0)
    >>> len(ax.collections[-1].get_paths()), len(ax.lines)
    (2, 0)
    """
    x = np.asarray(steps, dtype=np.float64).ravel()
    ax = one_axes(ax)
    if width is None:
        for k, xs in enumerate(x):
            ax.axvline(xs, color=color, alpha=0.45, linewidth=2.0, label=label if k == 0 else None, zorder=1)
        return ax
    width = float(width)
    if not np.isfinite(width) or width <= 0:
        raise ParameterError("width", "should be a finite number > 0 (or None for lines)", width)
    x = np.unique(x[np.isfinite(x)])
    # runs of steps no further apart than one band (a tolerance for steps written as floats)
    runs = np.split(x, np.flatnonzero(np.diff(x) > width * (1 + 1e-9)) + 1) if x.size else []
    half = 0.5 * width
    ax.broken_barh([(r[0] - half, r[-1] - r[0] + width) for r in runs], (0.0, 1.0),
                   transform=ax.get_xaxis_transform(), color=color, alpha=0.3, linewidth=0, zorder=1,
                   label=label)
    return ax


def _series_colors(color: str, n: int) -> list[str]:
    """``color`` then the ``Cn`` colours after it (after ``C0`` when ``color`` is not one)."""
    first = int(color[1:]) if color.startswith("C") and color[1:].isdigit() else 0
    return [color] + [f"C{first + k}" for k in range(1, n)]


def plot_episode_steps(steps, rewards, *, ax=None, marked=None, title: str = "", ended: str = "",
                       color: str = "C0"):
    """One episode's reward at every step, one line per series, with the steps findings name marked.

    Parameters
    ----------
    steps : float array of shape ``[L]``
        The x positions (step numbers within the episode).
    rewards : mapping of str to float array of shape ``[L]``
        The series (usually one per panel: rewards of different scales hide each other on one axis).
    ax : Axes, optional
    marked : int array, optional
        Positions into ``steps`` that findings name: light red bands (:func:`plot_step_marks`, one step
        wide) and red dots on the first series.
    title, ended : str
        The panel's title and how the episode ended (a dashed line at its last step).
    color : str
        The first series' colour (the next ones take the following ``Cn``).

    Returns
    -------
    Axes
        Its lines: one per series, then the end's dashed line; with ``marked``, its collections: the
        bands (one path per run of consecutive steps), then the dots.

    Examples
    --------
    >>> ax = plot_episode_steps(np.arange(3.0), {"a": np.array([0.0, 1.0, 0.0])}, marked=np.array([1]),
    ...                         ended="terminated")
    >>> [line.get_label() for line in ax.lines], len(ax.collections)
    (['a', 'end (terminated)'], 2)
    >>> ax.get_legend_handles_labels()[1]
    ['a', 'steps a finding names (1)', 'end (terminated)']
    """
    x = np.asarray(steps, dtype=np.float64).ravel()
    series = {str(k): np.asarray(v, dtype=np.float64).ravel() for k, v in dict(rewards).items()}
    if not series:
        raise ParameterError("rewards", "should hold at least one series", rewards)
    for name, y in series.items():
        if y.shape != x.shape:
            raise ParameterError(f"rewards[{name!r}]", f"should have one value per step ({x.size})", y.size)
    ax = one_axes(ax)
    for (name, y), c in zip(series.items(), _series_colors(color, len(series))):
        ax.plot(x, y, drawstyle="steps-mid", color=c, linewidth=1.4, label=plain_label(name), zorder=3)
    if marked is not None and len(marked):
        marked = np.asarray(marked, dtype=np.int64).ravel()
        if marked.min() < 0 or marked.max() >= x.size:
            raise ParameterError("marked", f"should hold positions into steps, in [0, {x.size})",
                                 f"[{marked.min()}, {marked.max()}]")
        width = float(np.median(np.diff(x))) if x.size > 1 else 1.0
        plot_step_marks(x[marked], ax=ax, label="", color=MARK_BAND_COLOR, width=width if width > 0 else 1.0)
        ax.scatter(x[marked], next(iter(series.values()))[marked], s=20, color=MARK_DOT_COLOR, zorder=4,
                   label=f"steps a finding names ({marked.size})")
    if x.size:
        ax.axvline(x[-1], color="0.3", linestyle="--", linewidth=0.9, label=f"end ({ended})" if ended else "end")
    ax.set_xlabel("step")
    ax.set_ylabel("reward")
    if title:
        ax.set_title(plain_label(title), fontsize="medium")
    legend_outside(ax)
    return ax


def plot_term_shares(names, shares, scales, *, ax=None):
    """A composite reward's terms: each one's share of the total's variance, with its scale (std) written.

    Parameters
    ----------
    names : sequence of str
        The terms (``T`` of them).
    shares : float array of shape ``[T]``
        ``cov(term, total) / var(total)`` per term (they add up to 1 when the terms add up to the total);
        NaN (a flat total) shows as an empty bar written ``n/a``.
    scales : float array of shape ``[T]``
        Each term's standard deviation.
    ax : Axes, optional

    Returns
    -------
    Axes
        One bar per term (``ax.patches``, top to bottom in ``names`` order), each written
        (``ax.texts``) with its share and scale.

    Examples
    --------
    >>> ax = plot_term_shares(["a", "b"], np.array([0.9, np.nan]), np.array([1.0, 0.0]))
    >>> len(ax.patches), [t.get_text() for t in ax.texts]
    (2, ['  90.0% (std 1)', '  n/a (flat total)'])
    >>> [t.get_text() for t in ax.get_yticklabels()]
    ['a', 'b']
    """
    names = [str(n) for n in names]
    shares = np.asarray(shares, dtype=np.float64).ravel()
    scales = np.asarray(scales, dtype=np.float64).ravel()
    for what, a in (("shares", shares), ("scales", scales)):
        if a.size != len(names):
            raise ParameterError(what, f"should have one value per term ({len(names)})", a.size)
    if ax is None:  # one row per term, room on the right for the words
        import matplotlib.pyplot as plt

        fig, ax = plt.subplots(figsize=(6.4, max(2.0, 0.6 + 0.42 * len(names))), layout="constrained")
        fig.set_label(OWN_LABEL)
    ax = one_axes(ax)
    y = np.arange(len(names))
    shown = np.where(np.isfinite(shares), shares, 0.0)
    ax.barh(y, shown, color=["C3" if s < 0 else "C0" for s in shown])
    for k, (s, sd) in enumerate(zip(shares, scales)):
        ax.text(shown[k], k, f"  {s:.1%} (std {sd:.3g})" if np.isfinite(s) else "  n/a (flat total)",
                va="center", ha="left" if shown[k] >= 0 else "right", fontsize="small")
    ax.set_yticks(y, [plain_label(n) for n in names])
    ax.invert_yaxis()
    ax.axvline(0.0, color="0.4", linewidth=0.8)
    ax.set_xlabel("share of the total's variance")
    hi = max(1.0, float(np.max(shown, initial=0.0)))
    lo = min(0.0, float(np.min(shown, initial=0.0)))
    ax.set_xlim(lo - 0.05 * (hi - lo), hi + 0.35 * (hi - lo))
    return ax
