"""The comparison board: candidate plug-ins side by side (distributions, correlation matrix, disagreements).

Examples
--------
>>> board = ComparisonBoard(frame, ["data/plugins/rank_top.py", "data/plugins/raw_points.py"])  # doctest: +SKIP
>>> board.metric.value = "epic"  # doctest: +SKIP
"""

from __future__ import annotations

import html

import ipywidgets as W

from rewardlab.analysis.limits import display_limits
from rewardlab.plots import plot_correlation_heatmap, plot_return_scatter, plot_reward_distribution
from rewardlab.sessions import ComparisonSession
from rewardlab.widgets.base import NARROW, STYLE, WIDE, NumberText, SessionWidget, fmt
from rewardlab.widgets.episodes import EpisodeView
from rewardlab.widgets.figures import Click, FigurePane
from rewardlab.widgets.tasks import BackgroundTask, error_html

__all__ = ["ComparisonBoard"]


class ComparisonBoard(SessionWidget):
    """Candidate plug-ins side by side: distributions, correlation matrix, disagreements.

    Parameters
    ----------
    data : DataFrame, path(s), or ComparisonSession
    plugins : sequence of paths or Plugin objects
    batch_mode : str
        How the plug-ins are applied (see :func:`rewardlab.apply_plugins`).
    background : bool
        Apply an added plug-in in a background thread, so the notebook stays
        responsive and Cancel works (False: in the click handler, e.g. in tests).

    Attributes
    ----------
    session : ComparisonSession
    chosen : SelectMultiple
    a, b : Dropdown
        The pair whose most-disagreeing episodes are listed (and scattered).
    metric : ToggleButtons
    k : NumberText
    add_path, add_button : Text, Button
        Load a plug-in file (e.g. your own) as one more candidate.
    add_task : BackgroundTask
        The plug-in being applied: progress, Cancel (nothing is kept), and
        ``add_result`` (HTML) saying what happened.
    steps_plot, matrix_plot, scatter_plot : FigurePane
        Step rewards, the correlation matrix and the pair's return scatter
        (interactive: zoom, pan, values on hover), side by side in ``plot``
        (an HBox).  Each is redrawn only when what it shows changed (a new
        metric redraws the matrix alone).  Clicking a cell of the matrix
        makes its two candidates the pair; clicking a point of the scatter
        opens that episode in :attr:`episode_view`.
    pairs, disagreements : HTML
    episode : Dropdown
        One of the most disagreeing episodes, opened in :attr:`episode_view`.
    episode_view : EpisodeView
        The opened episode (:meth:`ComparisonSession.episode`): its running
        returns and tables (the outcome, the rounds or sub-episodes, every step).

    Examples
    --------
    >>> board = ComparisonBoard(frame, sorted(Path("data/plugins").glob("*.py")))  # doctest: +SKIP
    >>> board.add_path.value = "my_reward.py"; board.add_button.click()  # doctest: +SKIP
    """

    def __init__(self, data, plugins=(), *, batch_mode: str = "episodes", background: bool = True):
        session = data if isinstance(data, ComparisonSession) else \
            ComparisonSession(data, plugins, batch_mode=batch_mode)
        super().__init__(session)
        s = session
        self.chosen = self._bind(W.SelectMultiple(options=list(s.candidates), value=list(s.chosen),
                                                  description="candidates", rows=min(10, len(s.candidates)),
                                                  style=STYLE, layout=W.Layout(width="360px")), "chosen")
        self.a = self._bind(W.Dropdown(options=list(s.candidates), value=s.a, description="pair: a",
                                       style=STYLE, layout=WIDE), "a")
        self.b = self._bind(W.Dropdown(options=list(s.candidates), value=s.b, description="b",
                                       style=STYLE, layout=WIDE), "b")
        self.metric = self._bind(W.ToggleButtons(options=["pearson", "spearman", "epic"], value=s.metric,
                                                 description="matrix", style=STYLE), "metric")
        self.k = self._bind(NumberText(value=s.k, description="episodes", style=STYLE, layout=NARROW,
                                       continuous_update=False), "k")
        self.add_path = W.Text(placeholder="path/to/your_plugin.py", description="add file", style=STYLE,
                               layout=WIDE)
        self.add_button = W.Button(description="Load and apply")
        self.add_button.add_class("rewardlab-add")
        self.add_button.on_click(self._on_add)
        self.add_task = BackgroundTask(background=background, css="rewardlab-add")
        self.add_result = W.HTML()
        self.add_result.add_class("rewardlab-add-result")
        self.steps_plot, self.matrix_plot, self.scatter_plot = (FigurePane(figsize=(4.0, 3.6)) for _ in range(3))
        self.matrix_plot.on_click(self._on_matrix_click)
        self.scatter_plot.on_click(self._on_scatter_click)
        self.plot = W.HBox([self.steps_plot, self.matrix_plot, self.scatter_plot],
                           layout=W.Layout(flex_flow="row wrap"))
        self.plot.add_class("rewardlab-plot")
        self._shown: dict[str, tuple] = {}  # what each pane shows now (its redraw key)
        self._shown_frame = None  # the frame those keys were taken on (held, so its id stays its own)
        self.pairs = W.HTML()
        self.pairs.add_class("rewardlab-stats")
        self.disagreements = W.HTML()
        self.episode = W.Dropdown(options=[("(choose an episode)", None)], value=None,
                                  description="open episode", style={"description_width": "90px"},
                                  layout=W.Layout(width="720px"))
        self.episode.add_class("rewardlab-episode-select")
        self.episode.observe(self._on_episode, names="value")
        self.episode_view = EpisodeView()
        self.add_class("rewardlab-comparison")
        self.children = [W.HTML("<b>Plug-in comparison</b>"),
                         W.HBox([self.chosen, W.VBox([self.a, self.b, self.metric, self.k])]),
                         W.HBox([self.add_path, self.add_button, self.add_task]), self.add_result,
                         self.state_bar, self.error, self.plot, self.pairs, self.disagreements,
                         self.episode, self.episode_view, self.pinned]
        self.refresh()

    def _on_add(self, _button=None) -> None:
        path = self.add_path.value.strip()
        if not path or self.add_task.running:
            return
        self.add_button.disabled = True
        self.add_result.value = f"<i>applying {html.escape(path)} to every episode…</i>"
        self.add_task.start(lambda progress, token: self.session.add_plugin(path, progress=progress, cancel=token),
                            finish=lambda name, error: self._added(path, name, error), name="rewardlab-add")

    def _added(self, path: str, name, error: BaseException | None) -> None:
        """Say what adding ``path`` did (in the task's thread); the session has redrawn the board."""
        self.add_button.disabled = False
        if error is not None:
            self.add_result.value = error_html(error, f"adding {path!r}")
        else:
            self.add_result.value = f"<small>added <b>{html.escape(name)}</b> from {html.escape(path)}</small>"

    def wait_for_add(self, timeout: float | None = None) -> bool:
        """Wait for a plug-in being added in the background; True when none is running any more."""
        return self.add_task.wait(timeout)

    def _on_episode(self, change) -> None:
        """Open the chosen episode: the session computes it, the view shows its plot and tables."""
        key = change["new"]
        if key is None or not self._open_episode(self.episode_view, lambda: key):
            self.episode_view.clear()

    def _on_matrix_click(self, click: Click) -> None:
        """A cell of the matrix: its row and column become the pair."""
        s, r = self.session, self.session.results
        if r.matrix is None:
            return
        names = r.matrix["reward"].to_list()
        i, j = int(round(click.y)), int(round(click.x))
        if 0 <= i < len(names) and 0 <= j < len(names):
            s.attempt(s.update, a=names[i], b=names[j])

    def _on_scatter_click(self, click: Click) -> None:
        """A point of the pair's scatter: that episode opens."""
        s = self.session
        if s.results.a != s.results.b:
            self._open_episode(self.episode_view, lambda: s.episode_near(click.x, click.y))

    def _cell_readout(self, x: float, y: float) -> str:
        r = self.session.results
        names = r.matrix["reward"].to_list()
        i, j = int(round(y)), int(round(x))
        if not (0 <= i < len(names) and 0 <= j < len(names)):
            return ""
        return f"{r.metric}({names[i]}, {names[j]}) = {fmt(r.matrix[names[j]][i])}: click to compare this pair"

    def _point_readout(self, x: float, y: float) -> str:
        r = self.session.results
        return f"{r.a} {fmt(x)}, {r.b} {fmt(y)}: click to open the nearest episode"

    def _episode_options(self) -> list:
        r = self.session.results
        options = [("(choose an episode)", None)]
        if r.disagreements is None:
            return options
        for key, row in zip(self.session.disagreement_keys(), r.disagreements.iter_rows(named=True)):
            where = ", ".join(f"{k} {v}" for k, v in key.items())
            options.append((f"{where}: {r.a} {row['return_a']:.4g} vs {r.b} {row['return_b']:.4g} "
                            f"(gap {row['gap']:.2f})", key))
        return options

    def _sync_controls(self) -> None:
        s = self.session
        for control in (self.chosen, self.a, self.b):
            if tuple(control.options) != s.candidates:
                control.options = list(s.candidates)
        self.chosen.rows = min(10, len(s.candidates))
        self.chosen.value = list(s.chosen)
        self.a.value, self.b.value = s.a, s.b
        self.metric.value, self.k.value = s.metric, s.k

    def _render(self) -> None:
        s, r = self.session, self.session.results
        # larger with more and longer-named candidates: full names fit in the legend and the heat map
        n = 0 if r.matrix is None else r.matrix.height
        names = 0.075 * max((len(c) for c in s.candidates), default=0)
        height = max(3.6, 0.4 * n + 1.6 + names)
        if self._shown_frame is not s.frame:
            self._shown, self._shown_frame = {}, s.frame

        def steps(axes):
            plot_reward_distribution(r.step_rewards, ax=axes[0], bins=40,
                                     limits=display_limits(r.step_rewards, nonzero=True))
            axes[0].set_title("step rewards (nonzero)")

        def matrix(axes):
            if r.matrix is None:
                axes[0].text(0.5, 0.5, "choose two or more\ncandidates", ha="center", va="center")
                axes[0].set_axis_off()
                return
            plot_correlation_heatmap(r.matrix, ax=axes[0], vmin=0.0 if r.metric == "epic" else -1.0)
            axes[0].set_title(f"{r.metric} of episode returns")
            axes[0].format_coord = self._cell_readout

        def scatter(axes):
            if r.a == r.b:
                axes[0].set_axis_off()
                return
            plot_return_scatter(r.pair_returns, x=r.a, y=r.b, ax=axes[0])
            axes[0].set_title("episode returns")
            axes[0].format_coord = self._point_readout

        for name, pane, draw, key, width in (
                ("steps", self.steps_plot, steps, (r.chosen,), 4.2 + 2.0 * names),
                ("matrix", self.matrix_plot, matrix, (r.chosen, r.metric), height + 0.8),
                ("scatter", self.scatter_plot, scatter, (r.a, r.b), 4.0)):
            key = (*key, round(width, 3), round(height, 3))
            if self._shown.get(name) != key:
                pane.draw(draw, figsize=(width, height))
                self._shown[name] = key
        self.pairs.value = ("<div>every pair (episode returns):</div><div style='max-height:320px;"
                            "overflow:auto'>" + r.comparison.pairs()._repr_html_() + "</div>") \
            if r.comparison is not None else ""
        self.disagreements.value = (
            f"<div>episodes where <b>{html.escape(r.a)}</b> and <b>{html.escape(r.b)}</b> disagree most "
            "(standardized returns):</div>" + r.disagreements._repr_html_()) if r.disagreements is not None \
            else ""
        options = self._episode_options()
        if [o[1] for o in options] != [o[1] for o in self.episode.options]:
            self.episode.options = options  # resets the choice to the first (none) and clears the view
            self.episode.value = None
