"""What the plot modules share: new figures and axes, legends outside, display limits, the series a figure draws.

Not part of :mod:`rewardlab.plots`' API (its functions are); public names so the plot modules share them.
"""

from __future__ import annotations

from typing import Mapping, Sequence

import numpy as np
import polars as pl

from rewardlab.core import columns
from rewardlab.analysis.compare import episode_key_columns
from rewardlab.analysis.limits import DisplayLimits
from rewardlab.core.spec import FrameSpec, attached
from rewardlab.core.errors import ColumnNotFoundError, ParameterError

__all__ = [
    "OWN_LABEL", "PANEL_WIDTH", "KEY_COLUMNS", "new_axes", "legend_outside", "one_axes", "many_axes",
    "check_limits", "limits_of", "hist_range", "show_limits", "key_columns", "series_map", "draw_ecdf",
    "require_columns",
]


#: The label of the figures made here (a legend may widen them).
OWN_LABEL = "rewardlab.plots"
#: Inches per panel of a figure made here.
PANEL_WIDTH = 4.2
#: Columns of a table that are not rewards (and the spec's columns: see :func:`key_columns`).
KEY_COLUMNS = ("episode", "start", "length")


def new_axes(n: int = 1, *, ncols: int | None = None):
    """``n`` new Axes in a constrained-layout figure of ``ncols`` columns (:data:`PANEL_WIDTH` inches each)."""
    import matplotlib.pyplot as plt

    ncols = ncols or n
    nrows = -(-n // ncols)
    fig, axes = plt.subplots(nrows, ncols, figsize=(PANEL_WIDTH * ncols, 3.2 * nrows), squeeze=False,
                             layout="constrained")
    fig.set_label(OWN_LABEL)
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
    if fig.get_label() == OWN_LABEL and hasattr(fig.canvas, "get_renderer"):
        # a figure made here widens so that each panel keeps its width beside its legend
        wide = legend.get_window_extent(fig.canvas.get_renderer()).width / fig.dpi
        spec = ax.get_subplotspec()
        ncols = spec.get_gridspec().ncols if spec is not None else 1
        fig.set_figwidth(max(fig.get_figwidth(), ncols * (PANEL_WIDTH + wide + 0.3)))
    return legend


def one_axes(ax):
    """``ax`` checked (a matplotlib Axes), or a new one when None."""
    if ax is None:
        return new_axes(1)[0]
    from matplotlib.axes import Axes

    if not isinstance(ax, Axes):
        raise ParameterError("ax", "should be a matplotlib Axes or None", type(ax).__name__)
    return ax


def many_axes(ax, n: int):
    """``ax`` checked (``n`` Axes, one per panel), or ``n`` new ones, three a row, when None."""
    if ax is None:
        return new_axes(n, ncols=min(n, 3))
    from matplotlib.axes import Axes

    axes = np.asarray(ax, dtype=object).ravel()
    if axes.size != n or not all(isinstance(a, Axes) for a in axes):
        raise ParameterError("ax", f"should be a sequence of {n} matplotlib Axes (one per panel) or None",
                             type(ax).__name__ if not hasattr(ax, "__len__") else f"{len(ax)} objects")
    return axes


def check_limits(limits, what: str = "limits"):
    """None, one :class:`DisplayLimits`, or a mapping of series name to DisplayLimits (one per panel)."""
    if limits is None or isinstance(limits, DisplayLimits):
        return limits
    if isinstance(limits, Mapping) and all(isinstance(v, DisplayLimits) for v in limits.values()):
        return limits
    raise ParameterError(what, "should be None, a DisplayLimits (rewardlab.analysis.limits.display_limits) or "
                         "a mapping of series name to DisplayLimits (series_limits)", type(limits).__name__)


def limits_of(limits, name: str) -> DisplayLimits | None:
    """The limits of series ``name``: the one DisplayLimits, or its entry in a mapping (``reward_`` prefix or not)."""
    if limits is None or isinstance(limits, DisplayLimits):
        return limits
    for key in (name, columns.REWARD_PREFIX + name):
        if key in limits:
            return limits[key]
    return None


def hist_range(limits: DisplayLimits | None):
    """The ``range=`` of a histogram within ``limits`` (None: the data's own)."""
    if limits is None or not np.isfinite(limits.low) or not np.isfinite(limits.high):
        return None
    return limits.range


def show_limits(ax, limits: DisplayLimits | None, label: str) -> None:
    """Label the x axis, keep its view within ``limits`` and say under the label what they leave out."""
    note = limits.note if limits is not None else ""
    ax.set_xlabel(f"{label}\n{note}" if note else label)
    if hist_range(limits) is None:
        return
    pad = 0.03 * (limits.high - limits.low) or 0.5
    ax.set_xlim(limits.low - pad, limits.high + pad)


def key_columns(frame: pl.DataFrame, spec: FrameSpec | None) -> set[str]:
    """Columns of ``frame`` that are not series to plot: episode keys and the spec's other columns."""
    spec = spec if spec is not None else attached(frame)
    skip = set(KEY_COLUMNS) | set(episode_key_columns(frame, spec))
    return skip | set(spec.required) if spec is not None else skip


def series_map(data, what: str, spec: FrameSpec | None = None) -> dict[str, np.ndarray]:
    """``{name: float64 array}`` from a mapping, a single array, or a frame's non-key columns."""
    if isinstance(data, pl.DataFrame):
        skip = key_columns(data, spec)
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


def draw_ecdf(ax, x: np.ndarray, **kw):
    """The empirical CDF of ``x`` as a step line on ``ax``; returns the line."""
    xs = np.sort(x)
    ys = np.arange(1, xs.size + 1) / max(xs.size, 1)
    return ax.step(xs, ys, where="post", **kw)[0]


def require_columns(frame, columns: Sequence[str], what: str) -> None:
    """Refuse a ``frame`` that is not a polars DataFrame or lacks one of ``columns`` (naming it)."""
    if not isinstance(frame, pl.DataFrame):
        raise ParameterError(what, "should be a polars DataFrame", type(frame).__name__)
    for c in columns:
        if c not in frame.columns:
            raise ColumnNotFoundError(c, frame.columns)
