"""The episode view every tuner opens on a click: one episode's running returns (a plot) and its tables.

Examples
--------
>>> view = EpisodeView()
>>> view.show(session.episode(0))  # doctest: +SKIP
"""

from __future__ import annotations

import html

import ipywidgets as W
import polars as pl

from rewardlab.analysis.episodes import EpisodeDetail
from rewardlab.plots import plot_episode
from rewardlab.sessions.episodes import episode_tables
from rewardlab.widgets.figures import FigurePane

__all__ = ["EpisodeView"]


class EpisodeView(W.VBox):
    """One episode opened from a plot or a table: its running returns and its steps.

    Attributes
    ----------
    plot : FigurePane
        Each candidate's running return, step by step (boundaries marked).
    table : HTML
        The outcome, the rounds (mahjong) or sub-episodes (where the data
        has them), every step (:func:`rewardlab.sessions.episodes.episode_tables`:
        a final rank reads as a place, ``"1st"`` ... ``"4th"``).
    detail : EpisodeDetail or None
        The episode shown.

    Examples
    --------
    >>> view = EpisodeView()
    >>> view.detail is None and view.layout.display
    'none'
    """

    def __init__(self):
        super().__init__()
        self.plot = FigurePane(figsize=(8.4, 3.0))
        self.plot.add_class("rewardlab-episode-plot")
        self.table = W.HTML()
        self.table.add_class("rewardlab-episode-table")
        self.detail: EpisodeDetail | None = None
        self.add_class("rewardlab-episode")
        self.children = [self.plot, self.table]
        self.layout.display = "none"

    def show(self, detail: EpisodeDetail) -> None:
        """Show ``detail`` (plot and tables)."""
        self.detail = detail
        self.plot.draw(lambda axes: plot_episode(detail, ax=axes[0]))
        shown = episode_tables(detail)
        with pl.Config(tbl_rows=-1, tbl_cols=-1, fmt_str_lengths=40):
            self.table.value = (
                f"<div><b>{html.escape(detail.title)}</b>: {detail.length} steps, {html.escape(detail.ended)}</div>"
                + shown.summary._repr_html_()
                + ("" if shown.segments is None else
                   f"<div>{html.escape(shown.segments_title)}</div>" + shown.segments._repr_html_())
                + "<div>every step:</div><div style='max-height:320px;overflow:auto'>"
                + shown.steps._repr_html_() + "</div>")
        self.layout.display = None

    def clear(self) -> None:
        """Show nothing."""
        self.detail = None
        self.table.value = ""
        self.layout.display = "none"
