"""The report's figures: drawn on a :class:`matplotlib.figure.Figure` with the Agg canvas (never pyplot),
saved as PNG and embedded as a ``data:`` URI.

The plots come from :mod:`rewardlab.plots` (``ax=`` one of the figure's
Axes, so they never make a pyplot figure); what is the report's own lives
here: its figures (:func:`new_figure`) and their PNG encoding.  Labels that
come from data pass through :func:`rewardlab.plots.diagnostics.plain_label`.

Examples
--------
>>> fig = new_figure(3.0, 2.0)
>>> _ = fig.axes[0].plot([0, 1], [1, 0])
>>> png_data_uri(fig).startswith("data:image/png;base64,iVBOR")
True
"""

from __future__ import annotations

import base64
import io

from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.figure import Figure

from rewardlab.core.errors import check_positive

__all__ = ["DPI", "new_figure", "png_bytes", "png_data_uri"]

#: Resolution of the embedded pictures (dots per inch).
DPI = 96


def new_figure(width: float, height: float, *, n: int = 1, ncols: int | None = None) -> Figure:
    """A constrained-layout :class:`~matplotlib.figure.Figure` of ``width`` x ``height`` inches on an Agg
    canvas, with ``n`` Axes in ``ncols`` columns (default one row)."""
    check_positive("width", width)
    check_positive("height", height)
    fig = Figure(figsize=(width, height), dpi=DPI, layout="constrained")
    FigureCanvasAgg(fig)
    ncols = ncols or n
    nrows = -(-n // ncols)
    for k in range(n):
        fig.add_subplot(nrows, ncols, k + 1)
    return fig


def png_bytes(fig: Figure) -> bytes:
    """The figure as PNG bytes (no metadata that changes from run to run: no software or date stamp)."""
    buf = io.BytesIO()
    fig.savefig(buf, format="png", dpi=DPI, metadata={"Software": None})
    return buf.getvalue()


def png_data_uri(fig: Figure) -> str:
    """The figure as a ``data:image/png;base64,...`` URI."""
    return "data:image/png;base64," + base64.b64encode(png_bytes(fig)).decode("ascii")
