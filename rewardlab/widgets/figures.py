"""Interactive figures for the widgets: ipympl canvases that zoom, pan, read values on hover and take clicks.

:class:`FigurePane` holds one matplotlib Figure drawn on an ipympl canvas
(the matplotlib widget backend, JupyterLab's ``jupyter-matplotlib``
extension): its toolbar zooms, pans and goes back; the footer shows what is
under the mouse (each Axes' ``format_coord``, which a tuner may replace with
a readout of its own); a click on the data calls the tuner's handler.  A
redraw clears the same Figure and draws it again, and the canvas sends the
browser the changed pixels: the plot updates in place, no new image is
added to the page.

Static PNGs (the CLI's ``plot``, reports) do not come here: the CLI saves
figures with matplotlib's Agg backend, and :meth:`FigurePane.png` gives the
current picture as PNG bytes for a report or a test.

Examples
--------
>>> pane = FigurePane(figsize=(4.0, 2.0))
>>> pane.draw(lambda axes: axes[0].bar([0, 1], [3, 1]))
>>> pane.png()[:4]
b'\\x89PNG'
"""

from __future__ import annotations

import io
import itertools
import sys
import time
import warnings
from collections.abc import Callable

import ipywidgets as W
import matplotlib
import numpy as np
from matplotlib.figure import Figure

# Importing ipympl makes it matplotlib's backend for the whole kernel (its package __init__ calls
# matplotlib.use), which would turn every pyplot figure of the user's notebook into a widget.
# rewardlab only uses its canvas class, so the backend in force before stays (read raw: reading
# rcParams["backend"] would resolve an automatic backend and import pyplot).
_BACKEND = dict.__getitem__(matplotlib.rcParams, "backend")
from ipympl.backend_nbagg import Canvas, FigureManager  # noqa: E402

if dict.__getitem__(matplotlib.rcParams, "backend") != _BACKEND:
    if "matplotlib.pyplot" in sys.modules:  # pyplot resolved its backend already: switch it back
        matplotlib.use(_BACKEND)
    else:  # the automatic choice pyplot makes when first imported (matplotlib.use cannot set it back)
        dict.__setitem__(matplotlib.rcParams, "backend", _BACKEND)

__all__ = ["FigurePane", "Click", "layout_text", "TOOLBAR_ROOM_PX"]

_NUMBERS = itertools.count(1)

#: Width in CSS pixels of the strip left of the figure that holds ipympl's toolbar.  ipympl places its
#: toolbar ``position: absolute`` over the canvas widget (3 px from a corner, whatever the position); at
#: "top" it sat over the right panel's title and legend.  Set vertically at the left and given this strip
#: of padding, it covers none of the figure: its buttons are 34 px wide (half of JupyterLab's
#: ``--jp-widgets-inline-width-tiny``), plus 3 px from the edge and a margin.
TOOLBAR_ROOM_PX = 44


def layout_text(ax) -> tuple:
    """What of an Axes decides the room around its data: tick labels, legend entries (their lengths), title lines.

    Tick labels are those the axis will draw (its locator and formatter on the
    current limits), counted by the longest one's length, so a longer number
    forces a new layout and another of the same length does not; a title or an
    axis label takes its room by its height, so only its number of lines
    counts (a new title of the same height reuses the layout).

    Examples
    --------
    >>> from matplotlib.figure import Figure
    >>> ax = Figure().subplots()
    >>> _ = ax.set_title("pearson"); _ = ax.plot([0, 10], [0, 1000])
    >>> key = layout_text(ax)
    >>> _ = ax.set_title("spearman")
    >>> layout_text(ax) == key
    True
    """
    def lines(text: str) -> int:
        return text.count("\n") + 1 if text else 0

    legend = ax.get_legend()
    # the longest label each axis will draw (digits have one width: "0.5" takes the room of "1.5"; the
    # widest y label sets the left margin, the longest x label the bottom one when turned), read without
    # making the axis' Tick artists
    ticks = tuple(max((len(t) for t in axis.get_major_formatter().format_ticks(axis.get_majorticklocs())),
                      default=0) for axis in (ax.xaxis, ax.yaxis))
    return (tuple(lines(ax.get_title(where)) for where in ("left", "center", "right")),
            lines(ax.get_xlabel()), lines(ax.get_ylabel()), ticks,
            None if legend is None else tuple(len(t.get_text()) for t in legend.get_texts()),
            len(ax.images), len(ax.figure.axes))


class Click:
    """A click on the data of a :class:`FigurePane`: which Axes (its index in the last draw) and where.

    Attributes
    ----------
    axes : int
        Index of the clicked Axes in :attr:`FigurePane.axes`.
    x, y : float
        The point in data coordinates.
    """

    __slots__ = ("axes", "x", "y")

    def __init__(self, axes: int, x: float, y: float):
        self.axes, self.x, self.y = axes, float(x), float(y)

    def __repr__(self) -> str:
        return f"Click(axes={self.axes}, x={self.x:.6g}, y={self.y:.6g})"


class FigurePane(W.Box):
    """One interactive matplotlib figure as a widget, redrawn in place.

    Parameters
    ----------
    figsize : (float, float)
        Size in inches (changed by :meth:`draw` when it is given one).
    dpi : int

    Attributes
    ----------
    figure : matplotlib.figure.Figure
    canvas : ipympl Canvas
        The widget the browser shows (toolbar: home, back, forward, pan,
        zoom, download, in a column left of the figure, where it covers
        nothing: :data:`TOOLBAR_ROOM_PX`).
    axes : list of Axes
        The Axes of the last :meth:`draw`, left to right.
    draws : int
        How many times the figure was drawn (tests and benchmarks read it).
    last_draw_seconds : float
        Time of the last :meth:`draw` in Python (clear, draw, queue the
        update; the browser then asks for the pixels).

    Examples
    --------
    >>> pane = FigurePane()
    >>> pane.on_click(lambda click: print(click))
    >>> pane.draw(lambda axes: axes[0].plot([0, 1], [0, 1]), ncols=2)
    >>> len(pane.axes), pane.draws
    (2, 1)
    """

    def __init__(self, *, figsize: tuple[float, float] = (9.0, 3.2), dpi: int = 90):
        super().__init__()
        self.figure = Figure(figsize=figsize, dpi=dpi, layout="constrained")
        self.canvas = Canvas(self.figure)
        with warnings.catch_warnings():  # ipympl's Toolbar hands its canvas on to traitlets (not ours to fix)
            warnings.filterwarnings("ignore", message=r"Passing unrecognized arguments to super\(Toolbar\)",
                                    category=DeprecationWarning)
            self.manager = FigureManager(self.canvas, next(_NUMBERS))
        self.canvas.header_visible = False
        # the toolbar in a column of its own, left of the figure: ipympl draws it over the canvas widget, so
        # the widget's left padding is its room (see TOOLBAR_ROOM_PX)
        self.canvas.toolbar_position = "left"
        self.canvas.layout.padding = f"0px 0px 0px {TOOLBAR_ROOM_PX}px"
        self.canvas.toolbar_visible = True
        self.canvas.resizable = False
        self.canvas.capture_scroll = False
        self.axes: list = []
        self.draws = 0
        self.last_draw_seconds = 0.0
        self._layout_key: tuple | None = None
        self._positions: list = []
        self._handlers: list[Callable[[Click], None]] = []
        self.canvas.mpl_connect("button_press_event", self._on_press)
        self.children = [self.canvas]

    def draw(self, draw: Callable, *, ncols: int = 1, figsize: tuple[float, float] | None = None) -> None:
        """Clear the figure, make ``ncols`` Axes side by side, call ``draw(axes)``, update the canvas.

        The layout (room for labels, ticks, legends, titles) is computed by
        matplotlib's constrained layout when the figure's text changes, and
        reused while only the data does: redraws of a tuner skip the costliest
        part of rendering.

        Parameters
        ----------
        draw : callable
            ``draw(axes)`` with a list of ``ncols`` Axes.
        ncols : int
        figsize : (float, float), optional
            New size in inches.
        """
        started = time.perf_counter()
        fig = self.figure
        fig.clear()
        if figsize is not None and tuple(np.round(fig.get_size_inches(), 3)) != tuple(np.round(figsize, 3)):
            fig.set_size_inches(*figsize, forward=True)
        self.axes = list(np.atleast_1d(fig.subplots(1, ncols, squeeze=False)[0]))
        draw(self.axes)
        self._lay_out()
        self.canvas.draw_idle()
        self.draws += 1
        self.last_draw_seconds = time.perf_counter() - started

    def _lay_out(self) -> None:
        """Constrained layout when the figure's text differs from the last layout's; else its positions again."""
        fig = self.figure
        key = (tuple(np.round(fig.get_size_inches(), 3)), tuple(layout_text(ax) for ax in self.axes))
        if key == self._layout_key:
            fig.set_layout_engine("none")
            for ax, position in zip(self.axes, self._positions):
                ax.set_position(position)
            return
        fig.set_layout_engine("constrained")
        fig.get_layout_engine().execute(fig)
        self._layout_key, self._positions = key, [ax.get_position() for ax in self.axes]
        fig.set_layout_engine("none")  # rendering keeps these positions

    def on_click(self, handler: Callable[[Click], None]) -> None:
        """Call ``handler(click)`` when the data area of an Axes is clicked (not while panning or zooming)."""
        self._handlers.append(handler)

    def click(self, axes: int, x: float, y: float) -> None:
        """Act as if the user clicked Axes ``axes`` at data point ``(x, y)`` (tests, scripted tours)."""
        for handler in self._handlers:
            handler(Click(axes, x, y))

    def _on_press(self, event) -> None:
        toolbar = self.canvas.toolbar
        if toolbar is not None and toolbar.mode:  # panning or zooming: the click belongs to the tool
            return
        if event.inaxes is None or event.xdata is None or event.ydata is None:
            return
        for i, ax in enumerate(self.axes):
            if event.inaxes is ax:
                self.click(i, event.xdata, event.ydata)
                return

    def render(self) -> float:
        """Render the figure as the browser will receive it (Agg); returns the seconds it took."""
        started = time.perf_counter()
        self.canvas.draw()
        return time.perf_counter() - started

    def png(self) -> bytes:
        """The current picture as PNG bytes (for a report, a test, or a static copy)."""
        buffer = io.BytesIO()
        self.figure.savefig(buffer, format="png")
        return buffer.getvalue()
