"""The comparison board: candidate plug-ins side by side (distributions, a matrix, disagreements, diagnostics).

The matrix is a correlation of episode returns, their Pearson distance, or
EPIC with its standard error (run in the background when chosen, kept per set
of candidates); the diagnostics panel lists the reward diagnostics' findings,
coloured by verdict, and opens a finding's episode in the episode view.

Examples
--------
>>> board = ComparisonBoard(frame, ["data/plugins/rank_top.py", "data/plugins/raw_points.py"])  # doctest: +SKIP
>>> board.metric.value = "epic"  # doctest: +SKIP
>>> board.diagnose_button.click()  # doctest: +SKIP
"""

from __future__ import annotations

import html

import ipywidgets as W

import polars as pl

from rewardlab.analysis.limits import display_limits
from rewardlab.diagnostics.base import VERDICTS
from rewardlab.plots import legend_outside, plot_correlation_heatmap, plot_episode, plot_return_scatter, \
    plot_reward_distribution
from rewardlab.plots.diagnostics import VERDICT_COLORS, plot_distance_matrix, plot_step_marks
from rewardlab.sessions import ComparisonSession
from rewardlab.sessions.comparison import METRICS
from rewardlab.widgets.base import NARROW, STYLE, WIDE, NumberText, SessionWidget, fmt
from rewardlab.widgets.episodes import EpisodeView
from rewardlab.widgets.figures import Click, FigurePane
from rewardlab.widgets.tasks import BackgroundTask, error_html

__all__ = ["ComparisonBoard"]


class ComparisonBoard(SessionWidget):
    """Candidate plug-ins side by side: distributions, a matrix, disagreements, diagnostics.

    Parameters
    ----------
    data : DataFrame, path(s), or ComparisonSession
    plugins : sequence of paths or Plugin objects
    batch_mode : str
        How the plug-ins are applied (see :func:`rewardlab.apply_plugins`).
    background : bool
        Apply an added plug-in, compute EPIC and run the diagnostics in a
        background thread, so the notebook stays responsive and Cancel works
        (False: in the click handler, e.g. in tests).

    Attributes
    ----------
    session : ComparisonSession
    chosen : SelectMultiple
    a, b : Dropdown
        The pair whose most-disagreeing episodes are listed (and scattered).
    metric : ToggleButtons
        :data:`~rewardlab.sessions.comparison.METRICS`; choosing ``"epic"``
        starts EPIC in the background where it has not run for the chosen
        candidates (so does choosing other candidates while it is shown).
    epic_button, epic_task, epic_result : Button, BackgroundTask, HTML
        Compute EPIC again (shown while it is asked for and not computed),
        its progress and Cancel, and what stopped it.
    matrix_note : HTML
        Why the matrix is not EPIC although asked for (the fallback's reason), or what EPIC left out.
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
        Every pair's correlations and Pearson distance (and EPIC ± stderr once computed); the
        pair's most disagreeing episodes.
    episode : Dropdown
        One of the most disagreeing episodes, opened in :attr:`episode_view`.
    episode_view : EpisodeView
        The opened episode (:meth:`ComparisonSession.episode`): its running
        returns and tables (the outcome, the rounds or sub-episodes, every step).
    diagnose_button, diagnose_task, diagnose_result : Button, BackgroundTask, HTML
        Run the reward diagnostics on the chosen candidates
        (:meth:`ComparisonSession.run_diagnostics`), progress and Cancel, and a count by verdict.
    verdicts : SelectMultiple
        The verdicts listed (all by default).
    findings : HTML
        The findings of those verdicts, coloured by verdict, worst first.
    finding : Select
        One of them: its first episode opens in :attr:`episode_view`, the
        finding's steps marked on its plot and listed in :attr:`finding_steps`.
    diagnostics : VBox
        The diagnostics panel (all of the above).

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
        self.metric = self._bind(W.ToggleButtons(options=list(METRICS), value=s.metric, description="matrix",
                                                 style=STYLE), "metric")
        self.metric.observe(self._maybe_epic, names="value")
        self.chosen.observe(self._maybe_epic, names="value")
        self.epic_button = W.Button(description="compute EPIC", layout=W.Layout(display="none"))
        self.epic_button.add_class("rewardlab-epic")
        self.epic_button.on_click(self._on_epic)
        self.epic_task = BackgroundTask(background=background, css="rewardlab-epic")
        self.epic_result = W.HTML()
        self.matrix_note = W.HTML()
        self.matrix_note.add_class("rewardlab-matrix-note")
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
        self._build_diagnostics(background)
        self.add_class("rewardlab-comparison")
        self.children = [W.HTML("<b>Plug-in comparison</b>"),
                         W.HBox([self.chosen, W.VBox([self.a, self.b, self.metric, self.k])]),
                         W.HBox([self.add_path, self.add_button, self.add_task]), self.add_result,
                         self.state_bar, self.error, W.HBox([self.epic_button, self.epic_task]), self.epic_result,
                         self.plot, self.matrix_note, self.pairs, self.disagreements, self.diagnostics,
                         self.episode, self.episode_view, self.pinned]
        self.refresh()

    # -- EPIC ---------------------------------------------------------------------------
    def _maybe_epic(self, _change=None) -> None:
        """EPIC chosen (or other candidates while it is): run it in the background where it has not run."""
        if not self._syncing and self.session.results.epic_pending:
            self._on_epic()

    def _on_epic(self, _button=None) -> None:
        if self.epic_task.running:
            return
        self.epic_button.disabled = True
        self.epic_result.value = "<i>EPIC: running the plug-ins on recombined transitions…</i>"
        self.epic_task.start(lambda progress, token: self.session.compute_epic(progress=progress, cancel=token),
                             finish=self._epic_done, name="rewardlab-epic")

    def _epic_done(self, _result, error: BaseException | None) -> None:
        self.epic_button.disabled = False
        self.epic_result.value = "" if error is None else error_html(error, "EPIC")

    def wait_for_epic(self, timeout: float | None = None) -> bool:
        """Wait for EPIC being computed in the background; True when it is not running any more."""
        return self.epic_task.wait(timeout)

    # -- diagnostics panel ------------------------------------------------------------
    def _build_diagnostics(self, background: bool) -> None:
        self.diagnose_button = W.Button(description="Run diagnostics", icon="stethoscope")
        self.diagnose_button.add_class("rewardlab-diagnose")
        self.diagnose_button.on_click(self._on_diagnose)
        self.diagnose_task = BackgroundTask(background=background, css="rewardlab-diagnose")
        self.diagnose_result = W.HTML()
        self.verdicts = W.SelectMultiple(options=list(VERDICTS), value=list(VERDICTS), description="verdicts",
                                         rows=len(VERDICTS), style=STYLE, layout=W.Layout(width="170px"))
        self.verdicts.observe(lambda _: self._render_findings(), names="value")
        self.findings = W.HTML()
        self.findings.add_class("rewardlab-findings")
        self.finding = W.Select(options=[("(run the diagnostics)", None)], value=None, rows=8,
                                description="open", style=STYLE, layout=W.Layout(width="720px"))
        self.finding.add_class("rewardlab-finding-select")
        self.finding.observe(self._on_finding, names="value")
        self.finding_steps = W.HTML()
        self._diagnosis_rendered = -1
        self.diagnostics = W.VBox([W.HTML("<b>Reward diagnostics</b> (the chosen candidates)"),
                                   W.HBox([self.diagnose_button, self.diagnose_task]), self.diagnose_result,
                                   W.HBox([self.verdicts, self.finding]), self.findings, self.finding_steps])
        self.diagnostics.add_class("rewardlab-diagnostics")

    def _on_diagnose(self, _button=None) -> None:
        if self.diagnose_task.running:
            return
        self.diagnose_button.disabled = True
        self.diagnose_result.value = "<i>running the diagnostics (the plug-ins run again)…</i>"
        self.diagnose_task.start(lambda progress, token: self.session.run_diagnostics(progress=progress,
                                                                                      cancel=token),
                                 finish=self._diagnosed, name="rewardlab-diagnose")

    def _diagnosed(self, diagnosis, error: BaseException | None) -> None:
        self.diagnose_button.disabled = False
        if error is not None:
            self.diagnose_result.value = error_html(error, "the diagnostics")
            return
        counts = {v: sum(f.verdict == v for f in diagnosis.findings) for v in VERDICTS}
        self.diagnose_result.value = "<small>" + ", ".join(
            f"<span style='color:{VERDICT_COLORS[v]}'><b>{n}</b> {v}</span>" for v, n in counts.items() if n) \
            + (f"; {len(diagnosis.errors)} diagnostics stopped" if getattr(diagnosis, "errors", ()) else "") \
            + "</small>"

    def wait_for_diagnostics(self, timeout: float | None = None) -> bool:
        """Wait for the diagnostics running in the background; True when they are not running any more."""
        return self.diagnose_task.wait(timeout)

    def _on_session(self, session) -> None:
        super()._on_session(session)
        if session.diagnosis_version != self._diagnosis_rendered:
            self._diagnosis_rendered = session.diagnosis_version
            self._render_findings()

    def _render_findings(self) -> None:
        """The findings of the verdicts ticked: the coloured table and the list that opens them."""
        s = self.session
        shown = s.finding_indices(tuple(self.verdicts.value)) if s.findings else []
        rows = []
        for k in shown:
            f = s.findings[k]
            color = VERDICT_COLORS[f.verdict]
            pair = f.candidate + (f" vs {f.other}" if f.other else "")
            rows.append(f"<tr style='border-left:4px solid {color}'><td>{k}</td>"
                        f"<td style='color:{color};font-weight:bold'>{html.escape(f.verdict)}</td>"
                        f"<td>{html.escape(f.diagnostic)}</td><td>{html.escape(pair)}</td>"
                        f"<td style='text-align:left'>{html.escape(f.summary)}</td><td>{len(f.episodes)}</td></tr>")
        self.findings.value = "" if not s.findings else (
            "<div style='max-height:320px;overflow:auto'><table><thead><tr><th>#</th><th>verdict</th>"
            "<th>diagnostic</th><th>candidate</th><th style='text-align:left'>finding</th><th>episodes</th></tr>"
            "</thead><tbody>" + "".join(rows) + "</tbody></table></div>")
        options = [("(choose a finding)" if s.findings else "(run the diagnostics)", None)]
        for k in shown:
            f = s.findings[k]
            if f.episodes:
                pair = f.candidate + (f" vs {f.other}" if f.other else "")
                words = f"[{f.verdict}] {f.diagnostic} · {pair}: {f.summary}"
                options.append((words if len(words) <= 150 else words[:149] + "…", k))
        if [o[1] for o in options] != [o[1] for o in self.finding.options]:
            self.finding.options = options
            self.finding.value = None
            self.finding_steps.value = ""

    def _on_finding(self, change) -> None:
        """A finding chosen: its first episode opens in the episode view, its steps marked."""
        index = change["new"]
        if index is None:
            return
        s, opened = self.session, []
        if not s.attempt(lambda: opened.append(s.open_finding(index))):
            self.finding_steps.value = ""
            return
        o = opened[0]
        if self.episode.value is not None:
            self.episode.value = None  # the disagreement list lets go of the view
        self.episode_view.show(o.detail)
        color = VERDICT_COLORS[o.finding.verdict]

        def marked(axes):
            plot_episode(o.detail, ax=axes[0])
            plot_step_marks(o.marks, ax=axes[0], label=f"{o.finding.diagnostic} ({o.finding.verdict})", color=color)
            legend_outside(axes[0])

        if o.marks:
            self.episode_view.plot.draw(marked)
        steps = o.detail.steps[list(o.positions[:50])] if o.positions else None
        with pl.Config(tbl_rows=-1, tbl_cols=-1, fmt_str_lengths=40):
            self.finding_steps.value = (
                f"<div style='color:{color}'>{html.escape(o.finding.diagnostic)} on "
                f"{html.escape(o.finding.candidate)}: episode {o.episode} opened below"
                + (f"; its {len(o.positions)} step(s) there are marked on the plot:</div>" + steps._repr_html_()
                   if steps is not None else "; it names no single step there.</div>"))

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
        error = "" if r.stderr is None else f" ± {fmt(r.stderr[names[j]][i])}"
        return f"{r.shown}({names[i]}, {names[j]}) = {fmt(r.matrix[names[j]][i])}{error}: click to compare this pair"

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
            if r.shown == "epic":
                names = r.matrix["reward"].to_list()
                plot_distance_matrix(names, r.matrix.select(names).to_numpy(), r.stderr.select(names).to_numpy(),
                                     ax=axes[0], title=r.title)
            else:
                plot_correlation_heatmap(r.matrix, ax=axes[0], vmin=0.0 if r.shown == "pearson_distance" else -1.0)
                axes[0].set_title(r.title, fontsize="medium")
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
                ("matrix", self.matrix_plot, matrix, (r.chosen, r.metric, r.shown, r.title), height + 0.8),
                ("scatter", self.scatter_plot, scatter, (r.a, r.b), 4.0)):
            key = (*key, round(width, 3), round(height, 3))
            if self._shown.get(name) != key:
                pane.draw(draw, figsize=(width, height))
                self._shown[name] = key
        self.pairs.value = ("<div>every pair (correlations and Pearson distance of episode returns"
                            + (", EPIC ± stderr" if "epic" in r.pairs.columns else "") + "):</div><div style="
                            "'max-height:320px;overflow:auto'>" + r.pairs._repr_html_() + "</div>") \
            if r.pairs is not None else ""
        self.matrix_note.value = "" if r.epic_note is None else \
            f"<small style='color:#555555'>{html.escape(r.epic_note)}</small>"
        self.epic_button.layout.display = None if r.epic_pending else "none"
        self.disagreements.value = (
            f"<div>episodes where <b>{html.escape(r.a)}</b> and <b>{html.escape(r.b)}</b> disagree most "
            "(standardized returns):</div>" + r.disagreements._repr_html_()) if r.disagreements is not None \
            else ""
        options = self._episode_options()
        if [o[1] for o in options] != [o[1] for o in self.episode.options]:
            self.episode.options = options  # resets the choice to the first (none) and clears the view
            self.episode.value = None
