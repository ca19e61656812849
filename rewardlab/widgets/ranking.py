"""The ranking reward tuner: rank vector, points term, constants, live statistics and plots, export.

Examples
--------
>>> tuner = RankingTuner("data/sample.tsv.gz", preset="mleague")  # doctest: +SKIP
>>> tuner.rank_inputs[0].value = 600.0  # doctest: +SKIP
"""

from __future__ import annotations

import html

import ipywidgets as W

from rewardlab.core.fronts import WIDGET, render
from rewardlab.analysis.limits import display_limits
from rewardlab.plots import legend_outside, plot_reward_by_rank, plot_reward_distribution
from rewardlab.sessions import RankingTuningSession
from rewardlab.widgets.base import NARROW, NUMBER, STYLE, WIDE, NumberText, SessionWidget, fmt, message, pre, table
from rewardlab.widgets.episodes import EpisodeView
from rewardlab.widgets.figures import Click, FigurePane
from rewardlab.widgets.tasks import BackgroundTask, ExportRow, ExportsInBackground
from rewardlab.domains.mahjong.rules import PLACES

__all__ = ["RankingTuner"]


class RankingTuner(ExportsInBackground, SessionWidget):
    """Tune a ranking reward (optionally plus points), watch its statistics, export the plug-in.

    Parameters
    ----------
    data : DataFrame, LazyFrame, path(s), or RankingTuningSession
        The dataset (read once), or an existing session.
    preset : str
        Initial preset (see :meth:`RankingTuningSession.preset_names`).
    constants : {"data", "seed", "none"}
        Initial normalization constants.
    export_path : str
        Initial file name in the export box (relative to the kernel's
        working directory).
    background : bool
        Run the export in a background thread, so the notebook stays
        responsive and Cancel works (False: in the click handler, e.g. in
        tests).

    Attributes
    ----------
    session : RankingTuningSession
    preset, rank_inputs, points, offset, divisor, mean, std, auto_constants : widgets
        The controls (``rank_inputs`` holds four :class:`NumberText`, first
        place first).
    from_data, seed_recipe, no_constants : Button
        (``seed_recipe`` is labelled "wiki's recipe": the ranking example of kanachan's wiki)
    stats : HTML
        Means and standard deviations before / after normalization, mean
        reward per final rank, expected reward.
    plot : FigurePane
        Reward distribution and mean reward per final rank (interactive:
        zoom, pan, values on hover).  Clicking a bar of the by-rank plot
        opens a typical game ending in that place, clicking the histogram
        the game whose reward is nearest (:attr:`episode`).
    episode : EpisodeView
        The game opened by a click: its returns step by step, scores and
        ranks per round.
    export_path, overwrite, keep_constants, export_button, export_result : widgets
        ``keep_constants``: export constants fitted for other parameters as
        they are (otherwise the button is disabled until they are refitted).
    export_task : BackgroundTask
        The running export: its progress bar (``export_progress``), what it
        does (``export_status``) and a button that cancels it
        (``cancel_button``; nothing is written).

    Examples
    --------
    >>> tuner = RankingTuner("data/sample.tsv.gz", preset="mleague")  # doctest: +SKIP
    >>> tuner.rank_inputs[0].value = 600.0  # doctest: +SKIP
    >>> tuner.export_button.click()  # doctest: +SKIP
    """

    def __init__(self, data, *, preset: str = "tenhou_tokujo_6dan", constants: str = "data",
                 export_path: str = "ranking_reward.py", background: bool = True):
        session = data if isinstance(data, RankingTuningSession) else \
            RankingTuningSession(data, preset=preset, constants=constants)
        super().__init__(session)
        s = session
        self.preset = W.Dropdown(options=[("(custom)", "custom")] + [(n, n) for n in s.preset_names()],
                                 value=s.preset or "custom", description="preset", style=STYLE,
                                 layout=WIDE)
        self.preset.observe(self._on_preset, names="value")
        self.rank_inputs = [self._bind_rank(k, NumberText(value=v, description=PLACES[k], style=STYLE,
                                                          layout=NARROW, continuous_update=False))
                            for k, v in enumerate(s.vector)]
        for k, box in enumerate(self.rank_inputs):
            box.add_class(f"rewardlab-rank-{k}")
        self.points = self._bind(W.Checkbox(value=s.points, description="add points term "
                                            "(score - offset) // divisor", indent=False,
                                            layout=W.Layout(width="300px")), "points")
        self.offset = self._bind(NumberText(value=s.offset, description="offset", style=STYLE,
                                            layout=NARROW, continuous_update=False), "offset")
        self.divisor = self._bind(NumberText(value=s.divisor, description="divisor", style=STYLE,
                                             layout=NARROW, continuous_update=False), "divisor")
        self.mean = self._bind(NumberText(value=s.mean, description="mean", style=STYLE, layout=NUMBER,
                                          continuous_update=False), "mean")
        self.std = self._bind(NumberText(value=s.std, description="std", style=STYLE, layout=NUMBER,
                                         continuous_update=False), "std")
        self.from_data = W.Button(description="from data", tooltip="Mean and population std of the raw "
                                  "reward over the end-of-game steps of the data")
        self.from_data.on_click(lambda _: self._call(s.constants_from_data))
        self.seed_recipe = W.Button(description="wiki's recipe", tooltip="The ranking example of kanachan's "
                                    "wiki: vector mean and sample std (std ~0.87 on complete games, not 1)")
        self.seed_recipe.on_click(lambda _: self._call(s.seed_constants))
        self.no_constants = W.Button(description="none (0, 1)")
        self.no_constants.on_click(lambda _: self._call(s.reset_constants))
        self.auto_constants = self._bind(W.Checkbox(value=s.auto_constants, description="refit from data on "
                                                    "every change", indent=False), "auto_constants")
        self.provenance = W.HTML()
        self.stats = W.HTML()
        self.stats.add_class("rewardlab-stats")
        self.plot = FigurePane(figsize=(9.0, 3.2))
        self.plot.add_class("rewardlab-plot")
        self.plot.on_click(self._on_plot_click)
        self.episode = EpisodeView()
        self.export_path = W.Text(value=export_path, description="file", style=STYLE, layout=WIDE)
        self.export_path.add_class("rewardlab-export-path")
        self.overwrite = W.Checkbox(value=False, description="overwrite if it exists", indent=False)
        self.keep_constants = W.Checkbox(value=False, description="keep these constants (fitted for other "
                                         "parameters)", indent=False, layout=W.Layout(width="360px"))
        self.keep_constants.add_class("rewardlab-keep-constants")
        self.keep_constants.observe(lambda _: self._update_export_state(), names="value")
        self.export_button = W.Button(description="Export plug-in", button_style="primary", icon="download")
        self.export_button.add_class("rewardlab-export")
        self.export_button.on_click(self._on_export)
        self.export_task = BackgroundTask(background=background, css="rewardlab-export")
        self.cancel_button = self.export_task.cancel_button
        self.export_progress, self.export_status = self.export_task.progress, self.export_task.status
        self.export_result = W.HTML()
        self.export_result.add_class("rewardlab-export-result")
        self.exporter = ExportRow(self.export_path, self.overwrite, self.export_button, self.export_result,
                                  self.export_task)
        self.add_class("rewardlab-tuner")
        frame = s.prepared
        self.children = [
            W.HTML(f"<b>Ranking reward tuner</b> &nbsp; {frame.n_rows:,} transitions, "
                   f"{frame.game_rows.size:,} episodes"
                   + (f" from {html.escape(frame.source)}" if frame.source else "")),
            self.preset,
            W.HBox(self.rank_inputs),
            W.HBox([self.points, self.offset, self.divisor]),
            W.HBox([self.mean, self.std, self.from_data, self.seed_recipe, self.no_constants]),
            W.HBox([self.auto_constants, self.provenance]),
            self.state_bar, self.error, self.stats, self.plot, self.episode, self.pinned,
            W.HBox([self.export_path, self.overwrite, self.keep_constants]),
            W.HBox([self.export_button, self.export_task]),
            self.export_result,
        ]
        self.refresh()

    def _bind_rank(self, rank: int, control: NumberText) -> NumberText:
        def on_change(change):
            if not self._syncing:
                self._call(self.session.set_rank_value, rank, change["new"])
        control.observe(on_change, names="value")
        return control

    def _on_preset(self, change) -> None:
        if not self._syncing and change["new"] != "custom":
            self._call(self.session.apply_preset, change["new"])

    def _sync_controls(self) -> None:
        s = self.session
        self.preset.value = s.preset or "custom"
        for box, v in zip(self.rank_inputs, s.vector):
            box.value = v
        self.points.value = s.points
        self.offset.value, self.divisor.value = s.offset, s.divisor
        self.offset.disabled = self.divisor.disabled = not s.points
        self.mean.value, self.std.value = s.mean, s.std
        self.auto_constants.value = s.auto_constants
        stale = (" <span style='color:#b06000'>(fitted for other parameters: click “from data”, tick “refit "
                 "from data on every change”, or tick “keep these constants” to export them)</span>") \
            if s.constants_stale else ""
        self.provenance.value = "<small>constants: " + html.escape(s.provenance.describe()) + stale + "</small>"
        self._update_export_state()

    def _update_export_state(self) -> None:
        """The export button is enabled when no export runs and the session may export."""
        blocker = self.session.export_blocker(keep_constants=self.keep_constants.value)
        self.export_button.disabled = self.export_task.running or blocker is not None
        self.export_button.tooltip = "" if blocker is None else "Export disabled: " + render(blocker, WIDGET)

    def _render(self) -> None:
        s, r = self.session, self.session.results
        b, a, ball, aall = r.raw_moments, r.reward_moments, r.raw_moments_all, r.reward_moments_all
        rows = [
            [f"end-of-game steps ({b.count:,})", fmt(b.mean), fmt(b.std),
             f"<b class='rewardlab-after-mean'>{fmt(a.mean)}</b>",
             f"<b class='rewardlab-after-std'>{fmt(a.std)}</b>"],
            [f"all steps ({ball.count:,})", fmt(ball.mean), fmt(ball.std), fmt(aall.mean), fmt(aall.std)],
        ]
        stats = table(["", "mean before", "std before", "mean after", "std after"], rows)
        ranks = table(["final rank"] + list(PLACES),
                       [["data's distribution"] + [f"{p:.1%}" for p in r.rank_probabilities],
                        ["mean raw reward"] + [fmt(v) for v in r.raw_mean_by_rank],
                        ["mean reward"] + [fmt(v) for v in r.mean_by_rank]])
        self.stats.value = (
            stats + ranks
            + f"<div>expected reward per game under the data's rank distribution: raw {fmt(r.expected_raw)}, "
            f"normalized <b class='rewardlab-expected'>{fmt(r.expected_reward)}</b>; "
            f"steps with reward 0: {r.zero_steps:,}; "
            f"<small>recomputed in {s.recompute_seconds * 1e3:.2f} ms</small></div>")
        # the reward of each game's last step (every other step's is 0: the line above counts them), so a
        # dataset folder's tuner draws the same figure without a value per transition
        step_rewards = {"reward": r.reward}
        for p in s.pinned:  # overlaid: each pin's rewards on the same data
            step_rewards[f"pinned: {p.label}"] = s.pinned_results(p.label).reward
        by_rank = r.by_rank_table("reward")
        pins = [(p.label, [p.summary.get(f"mean reward, {place} place") for place in PLACES]) for p in s.pinned]
        limits = display_limits(step_rewards, nonzero=True)  # the live reward and the pins on one scale

        def draw(axes):
            plot_reward_distribution(step_rewards, ax=axes[0], bins=40, limits=limits)
            axes[0].set_title("reward at the end of the game")
            plot_reward_by_rank(by_rank, ax=axes[1])
            for k, (label, means) in enumerate(pins):  # pinned candidates over the live bars
                ranks = [i for i, v in enumerate(means) if v is not None]
                axes[1].plot(ranks, [means[i] for i in ranks], marker="os^vD"[k % 5], linestyle="none",
                             color="black", label=f"pinned: {label}")
            if pins:
                legend_outside(axes[1])
            axes[1].set_title("mean episode return by final rank")
            axes[0].format_coord = lambda x, y: (f"reward {fmt(x)}, fraction {fmt(y)}: click to open the game "
                                                 "whose reward is nearest")
            axes[1].format_coord = self._rank_readout

        self.plot.draw(draw, ncols=2)

    def _rank_readout(self, x: float, y: float) -> str:
        """What the footer shows over the by-rank plot: the place under the mouse and its numbers."""
        k = int(round(x))
        if not 0 <= k < len(PLACES):
            return ""
        r = self.session.results
        return (f"{PLACES[k]} place: mean reward {fmt(r.mean_by_rank[k])}, {r.rank_probabilities[k]:.1%} of "
                "games; click to open one")

    def _on_plot_click(self, click: Click) -> None:
        s = self.session
        if click.axes == 0:
            self._open_episode(self.episode, lambda: s.episode_near_reward(click.x))
        elif click.axes == 1 and 0 <= round(click.x) < len(PLACES):
            self._open_episode(self.episode, lambda: s.episode_of_rank(int(round(click.x))))

    def _on_export(self, _button=None) -> None:
        if self.export_task.running:
            return
        keep = self.keep_constants.value
        blocker = self.session.export_blocker(keep_constants=keep)
        if blocker is not None:
            self.export_result.value = message("not exported: " + blocker)  # its remedy in the widgets' words
            self._update_export_state()
            return
        self.exporter.start(lambda path, **how: self.session.export(path, keep_constants=keep, **how),
                            doing="checking the file round trip, then writing it…", shown=self._export_html,
                            name="rewardlab-export", done=self._update_export_state)

    @staticmethod
    def _export_html(result) -> str:
        """What a finished export shows: the file and its check."""
        rt = result.roundtrip
        color = "#1b7f1b" if result.ok else "#b00020"
        return (f"<div>wrote <code class='rewardlab-export-written'>{html.escape(str(result.path.resolve()))}"
                f"</code></div>" + pre(result.header)
                + (f"<div style='color:{color};white-space:pre-wrap'>{html.escape(str(rt))}</div>" if rt else "")
                + f"<div><small>checked and written in {result.seconds:.1f} s</small></div>")

