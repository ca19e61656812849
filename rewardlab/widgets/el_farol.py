"""The El Farol tuner: capacity, reward kind, agents and nights; alignment, per-agent rewards, constants, one week.

Examples
--------
>>> tuner = ElFarolTuner()  # doctest: +SKIP
>>> tuner.kind.value = "local"  # doctest: +SKIP
"""

from __future__ import annotations

import html

import ipywidgets as W

from rewardlab.plots.alignment import plot_agent_alignment, plot_alignment_comparison, plot_reward_vs_global
from rewardlab.plots.el_farol import plot_agent_constants, plot_agent_rewards, plot_global_by_week, \
    plot_night_attendance
from rewardlab.sessions.el_farol import EL_FAROL_KINDS, ElFarolSession
from rewardlab.widgets.base import NARROW, STYLE, WIDE, NumberText, SessionWidget, fmt, message, table
from rewardlab.widgets.figures import Click, FigurePane
from rewardlab.widgets.tasks import BackgroundTask, ExportRow, ExportsInBackground

__all__ = ["ElFarolTuner"]

#: The kinds as the dropdown shows them.
_KIND_LABELS = {"G": "G (global)", "local": "local (own night)", "D": "D (difference)", "WL": "WL (Wonderful Life)"}


class ElFarolTuner(ExportsInBackground, SessionWidget):
    """Tune El Farol's per-agent rewards and see their alignment with G, per-agent statistics and one week.

    Parameters
    ----------
    data : None, DataFrame, path(s), or ElFarolSession
        None: a simulated bar with :class:`~rewardlab.sessions.ElFarolSession`'s defaults; a recorded joint
        frame (or its path); or an existing session (built with the options you want: ``episodes``,
        ``weeks``, ``samples``...).
    kind : {"G", "local", "D", "WL"}
        The first reward kind (a new session only).
    export_path : str
        Initial file name in the export box.
    background : bool
        Run the export in a background thread (False: in the click handler, e.g. in tests).

    Attributes
    ----------
    session : ElFarolSession
    kind : Dropdown
    capacity, agents, nights, clamp : NumberText
        ``clamp`` takes a night or ``none`` (WL only).
    summary : HTML
        Factoredness and learnability with their intervals, the reward's statistics, the recompute time.
    constants : HTML
        Every agent's mean and std (its normalization constants).
    alignment_plot : FigurePane
        Per-agent factoredness and learnability (whiskers: bootstrap intervals).
    comparison_plot : FigurePane
        The live reward beside the pinned ones (overall factoredness, learnability) and its changes
        against G's.
    agents_plot : FigurePane
        Per-agent reward distributions and constants.
    weeks_plot : FigurePane
        G by week (click a week to open it) and the opened week's attendance per night.
    week : NumberText
        The opened week (joint step).
    week_table : HTML
        The opened week's agents: night, reward, G without the agent.
    export_path, overwrite, export_button, export_result : widgets
    export_task : BackgroundTask

    Examples
    --------
    >>> tuner = ElFarolTuner()  # doctest: +SKIP
    >>> tuner.capacity.value = "6"  # doctest: +SKIP
    >>> tuner.weeks_plot.click(0, 12, 0.0)  # opens week 12  # doctest: +SKIP
    """

    def __init__(self, data=None, *, kind: str = "D", export_path: str = "el_farol_manager.py",
                 background: bool = True):
        session = data if isinstance(data, ElFarolSession) else ElFarolSession(data, kind=kind)
        super().__init__(session)
        s = session
        self.opened = 0
        self.kind = self._bind(W.Dropdown(options=[(_KIND_LABELS[k], k) for k in EL_FAROL_KINDS], value=s.kind,
                                          description="reward", style=STYLE, layout=WIDE), "kind")
        self.capacity = self._bind(NumberText(value=s.capacity, description="capacity b", style=STYLE,
                                              layout=NARROW, continuous_update=False), "capacity")
        self.agents = self._bind(NumberText(value=s.agents, description="agents", style=STYLE, layout=NARROW,
                                            continuous_update=False), "agents")
        self.nights = self._bind(NumberText(value=s.nights, description="nights", style=STYLE, layout=NARROW,
                                            continuous_update=False), "nights")
        self.clamp = self._bind(W.Text(value=self._clamp_text(s.clamp), description="WL clamp", style=STYLE,
                                       layout=NARROW, continuous_update=False,
                                       tooltip="WL only: a night, or none (clamped away: WL = D)"), "clamp")
        self.summary = W.HTML()
        self.summary.add_class("rewardlab-stats")
        self.constants = W.HTML()
        self.constants.add_class("rewardlab-constants")
        self.alignment_plot = FigurePane(figsize=(9.0, 3.0))
        self.comparison_plot = FigurePane(figsize=(11.0, 3.2))
        self.agents_plot = FigurePane(figsize=(11.0, 3.0))
        self.weeks_plot = FigurePane(figsize=(11.0, 3.0))
        self.weeks_plot.on_click(self._on_weeks_click)
        for pane in (self.alignment_plot, self.comparison_plot, self.agents_plot, self.weeks_plot):
            pane.add_class("rewardlab-plot")
        self.week = NumberText(value=0, description="week", style=STYLE, layout=NARROW, continuous_update=False)
        self.week.observe(self._on_week, names="value")
        self.week_summary = W.HTML()
        self.week_table = W.HTML()
        self.export_path = W.Text(value=export_path, description="file", style=STYLE, layout=WIDE)
        self.export_path.add_class("rewardlab-export-path")
        self.overwrite = W.Checkbox(value=False, description="overwrite if it exists", indent=False)
        self.export_button = W.Button(description="Export manager", button_style="primary", icon="download")
        self.export_button.add_class("rewardlab-export")
        self.export_button.on_click(self._on_export)
        self.export_task = BackgroundTask(background=background, css="rewardlab-export")
        self.export_result = W.HTML()
        self.export_result.add_class("rewardlab-export-result")
        self.exporter = ExportRow(self.export_path, self.overwrite, self.export_button, self.export_result,
                                  self.export_task)
        self.add_class("rewardlab-el-farol")
        source = (f"simulated: {s.episodes} episodes x {s.weeks} weeks, seed {s.seed}, policy {s.policy}"
                  if s.simulated else f"recorded: {html.escape(s.data_path or 'a frame in memory')}")
        self.children = [
            W.HTML(f"<b>El Farol reward tuner</b> &nbsp; <small>{source}; alignment with {s.samples} own "
                   f"changes per (week, agent), {s.resamples} bootstrap resamples</small>"),
            W.HBox([self.kind, self.capacity]), W.HBox([self.agents, self.nights, self.clamp]),
            self.state_bar, self.error, self.summary, self.alignment_plot, self.comparison_plot, self.pinned,
            self.agents_plot, self.constants,
            W.HBox([self.week, self.week_summary]), self.weeks_plot, self.week_table,
            W.HBox([self.export_path, self.overwrite]), W.HBox([self.export_button, self.export_task]),
            self.export_result,
        ]
        self.refresh()

    @staticmethod
    def _clamp_text(value) -> str:
        return "none" if value is None else str(value)

    def _sync_controls(self) -> None:
        s = self.session
        self.kind.value = s.kind
        self.capacity.value, self.agents.value, self.nights.value = s.capacity, s.agents, s.nights
        self.clamp.value = self._clamp_text(s.clamp)
        self.clamp.disabled = s.kind != "WL"
        self.export_button.disabled = self.export_task.running

    def _render(self) -> None:
        s, r = self.session, self.session.results
        a = r.alignment
        rows = [[html.escape(s.kind), f"<b class='rewardlab-factoredness'>{fmt(a.overall_factoredness)}</b>",
                 f"[{fmt(a.overall_factoredness_ci[0])}, {fmt(a.overall_factoredness_ci[1])}]",
                 f"<b class='rewardlab-learnability'>{fmt(a.overall_learnability)}</b>",
                 f"[{fmt(a.overall_learnability_ci[0])}, {fmt(a.overall_learnability_ci[1])}]",
                 fmt(a.overall_tie_share), fmt(r.overall.mean), fmt(r.overall.std),
                 fmt(float(r.global_reward.mean()))]]
        self.summary.value = (
            table(["reward", "factoredness", "95% interval", "learnability", "95% interval", "ties",
                   "mean reward", "reward std", "mean G"], rows)
            + f"<div><small>{r.rewards.shape[0]:,} weeks x {r.rewards.shape[1]} agents, {s.nights} nights, "
            f"b = {s.capacity:g}; recomputed in {s.recompute_seconds * 1e3:.0f} ms</small></div>")
        c = r.constants
        self.constants.value = (
            "<div><small>normalization constants per agent (population std; a plug-in normalizing agent i "
            "computes (reward - mean) / std):</small></div><div style='max-height:180px;overflow:auto'>"
            + table(["agent", "mean", "std", "min", "max"],
                    [[html.escape(row["agent"]), fmt(row["mean"]), fmt(row["std"]) if row["normalizable"]
                      else "0 (constant)", fmt(row["min"]), fmt(row["max"])] for row in c.iter_rows(named=True)])
            + "</div>")
        pins = [s.pinned_results(p.label) for p in s.pinned]
        labels = [p.label for p in s.pinned]

        def draw_alignment(axes):
            plot_agent_alignment(a, ax=axes)

        def draw_comparison(axes):
            results = [a] + [p.alignment for p in pins]
            plot_alignment_comparison(results, ax=axes[:2])
            names = [f"live: {s.kind}"] + [f"{label}: {p.kind}" for label, p in zip(labels, pins)]
            for ax in axes[:2]:
                ax.set_xticks(range(len(names)), names, fontsize="small", rotation=30 if len(names) > 2 else 0)
            plot_reward_vs_global(a, ax=axes[2])

        def draw_agents(axes):
            plot_agent_rewards(r.rewards, agents=r.view.agents, label=s.kind, ax=axes[0])
            plot_agent_constants(c, label=s.kind, ax=axes[1])

        self.alignment_plot.draw(draw_alignment, ncols=2)
        self.comparison_plot.draw(draw_comparison, ncols=3)
        self.agents_plot.draw(draw_agents, ncols=2)
        self.opened = min(self.opened, r.rewards.shape[0] - 1)
        self._render_week()

    def _render_week(self) -> None:
        s, r = self.session, self.session.results
        detail = s.week(self.opened)
        self.week.value = self.opened
        self.week_summary.value = f"<small>{html.escape(str(detail))}</small>"

        def draw(axes):
            plot_global_by_week(r.global_reward, mark=self.opened, ax=axes[0])
            plot_night_attendance(detail.attendance, capacity=detail.capacity, utility=detail.utility, ax=axes[1])

        self.weeks_plot.draw(draw, ncols=2)
        self.week_table.value = (
            "<div style='max-height:180px;overflow:auto'>"
            + table(["agent", "night", "attending", f"reward ({html.escape(s.kind)})", "G without the agent"],
                    [[html.escape(row["agent"]), str(row["night"]), str(row["attendance"]), fmt(row["reward"]),
                      fmt(row["without_agent"])] for row in detail.agents.iter_rows(named=True)])
            + "</div>")

    def open_week(self, step) -> bool:
        """Open week ``step`` (a joint step, or ``{"episode_id": ..., "t": ...}``); a refusal shows its message.

        Examples
        --------
        >>> tuner.open_week(12)  # doctest: +SKIP
        True
        """
        found: list = []
        if not self.session.attempt(lambda: found.append(self.session.week(step))):
            return False
        self.opened = found[0].step
        self._render_week()
        return True

    def _on_week(self, change) -> None:
        if self._syncing or str(change["new"]) == str(self.opened):
            return
        text = str(change["new"]).strip()
        if not text.isdigit():
            self.error.value = message(f"`week` should be a joint step in 0..{self.session.results.view.steps - 1}. "
                                       f"Received {text!r}.")
            self.week.value = self.opened
            return
        self.open_week(int(text))

    def _on_weeks_click(self, click: Click) -> None:
        if click.axes == 0:
            self.open_week(int(round(click.x)))

    def _on_export(self, _button=None) -> None:
        self.exporter.start(self.session.export, doing="checking the manager on the joint actions, then writing it…",
                            shown=lambda result: f"<div style='white-space:pre-wrap'>{html.escape(str(result))}</div>",
                            name="rewardlab-export")

