"""The normalization panel: constants per scope, before / after, the running-normalizer replays.

Examples
--------
>>> panel = NormalizationPanel(frame, reward="round_delta", scope="end_of_round")  # doctest: +SKIP
>>> panel.scope.value = "all"  # doctest: +SKIP
"""

from __future__ import annotations

import html
import math

import ipywidgets as W

from rewardlab.analysis.limits import normalization_limits
from rewardlab.analysis.normalizers import replay_methods
from rewardlab.plots import legend_outside, plot_normalization
from rewardlab.sessions import NormalizationSession
from rewardlab.widgets.base import NARROW, STYLE, WIDE, NumberText, SessionWidget, fmt, message, pre, table
from rewardlab.widgets.episodes import EpisodeView
from rewardlab.widgets.figures import Click, FigurePane
from rewardlab.widgets.tasks import BackgroundTask, ExportRow, ExportsInBackground

__all__ = ["NormalizationPanel"]


class NormalizationPanel(ExportsInBackground, SessionWidget):
    """Normalization constants per scope, before / after, and the running-normalizer replays.

    Parameters
    ----------
    data : DataFrame, dataset folder or NormalizationSession
        A frame with reward columns (e.g. from :func:`rewardlab.apply_plugins`),
        or a rewards dataset folder (read part by part: each change replays
        the folder once, see :class:`~rewardlab.sessions.NormalizationSession`).
    reward : str, optional
    scope : str, optional
        Default ``end_of_game`` on kanachan data, ``episode_end`` otherwise
        (see :class:`~rewardlab.sessions.NormalizationSession`).
    plugins : sequence of paths
        The steps plug-in files the rewards come from (applied unless their
        reward column is there): the Export button writes a normalized
        version of the one shown (:meth:`NormalizationSession.export`).
    export_path : str
        Initial file name in the export box (relative to the kernel's folder).
    background : bool
        Run the export in a background thread (False: in the click, e.g. in tests).

    Attributes
    ----------
    session : NormalizationSession
    reward, scope, gamma, epsilon, clip_reward : widgets
        ``scope`` offers the scopes the data has (``session.scopes``): no
        ``boundary`` without sub-episodes, kanachan's ``end_of_round`` /
        ``end_of_game`` on kanachan data only.
    constants, stats, summary : HTML
    plot : FigurePane
        Before / after histograms (constants, Gymnasium, SB3; pinned
        candidates dashed over the "after" panel), interactive: zoom, pan,
        values on hover; a click opens the episode of the nearest step in
        :attr:`episode`.
    episode : EpisodeView
    export_path, overwrite, export_button, export_result : widgets
        The export of the normalized plug-in; ``export_result`` says what was
        written, or why not (a reward that is not from a plug-in file).
    export_task : BackgroundTask

    Examples
    --------
    >>> panel = NormalizationPanel(frame, reward="round_delta", scope="end_of_round")  # doctest: +SKIP
    >>> panel.scope.value = "all"  # doctest: +SKIP
    """

    def __init__(self, data, *, reward: str | None = None, scope: str | None = None, plugins=(),
                 export_path: str = "normalized_reward.py", background: bool = True):
        session = data if isinstance(data, NormalizationSession) else \
            NormalizationSession(data, reward=reward, scope=scope, plugins=plugins)
        super().__init__(session)
        s = session
        self.reward = self._bind(W.Dropdown(options=list(s.rewards), value=s.reward, description="reward",
                                            style=STYLE, layout=WIDE), "reward")
        self.scope = self._bind(W.ToggleButtons(options=list(s.scopes), value=s.scope, description="scope",
                                                style={"description_width": "70px", "button_width": "110px"}),
                                "scope")
        self.gamma = self._bind(NumberText(value=s.gamma, description="gamma", style=STYLE, layout=NARROW,
                                           continuous_update=False), "gamma")
        self.epsilon = self._bind(NumberText(value=s.epsilon, description="epsilon", style=STYLE,
                                             layout=NARROW, continuous_update=False), "epsilon")
        self.clip_reward = self._bind(NumberText(value=s.clip_reward, description="clip", style=STYLE,
                                                 layout=NARROW, continuous_update=False), "clip_reward")
        self.constants = W.HTML()
        self.constants.add_class("rewardlab-constants")
        self.stats = W.HTML()
        self.stats.add_class("rewardlab-stats")
        self.plot = FigurePane(figsize=(9.0, 3.2))
        self.plot.add_class("rewardlab-plot")
        self.plot.on_click(self._on_plot_click)
        self._columns: tuple[str, ...] = ()
        self.episode = EpisodeView()
        self.summary = W.HTML()
        self.export_path = W.Text(value=export_path, description="file", style=STYLE, layout=WIDE)
        self.export_path.add_class("rewardlab-normalized-export-path")
        self.overwrite = W.Checkbox(value=False, description="overwrite if it exists", indent=False)
        self.export_button = W.Button(description="Export normalized plug-in", icon="download",
                                      button_style="primary", layout=W.Layout(width="240px"))
        self.export_button.add_class("rewardlab-normalized-export")
        self.export_button.on_click(self._on_export)
        self.export_task = BackgroundTask(background=background, css="rewardlab-normalized-export")
        self.export_result = W.HTML()
        self.export_result.add_class("rewardlab-normalized-export-result")
        self.exporter = ExportRow(self.export_path, self.overwrite, self.export_button, self.export_result,
                                  self.export_task)
        self.add_class("rewardlab-normalization")
        self.children = [W.HTML("<b>Normalization</b>"), self.reward, self.scope,
                         W.HBox([W.HTML("<small>running normalizers:</small>"), self.gamma, self.epsilon,
                                 self.clip_reward]),
                         self.state_bar, self.error, self.constants, self.stats, self.plot, self.episode, self.summary,
                         W.HBox([self.export_path, self.overwrite]), W.HBox([self.export_button, self.export_task]),
                         self.export_result, self.pinned]
        self.refresh()

    def _sync_controls(self) -> None:
        s = self.session
        self.reward.value, self.scope.value = s.reward, s.scope
        self.gamma.value, self.epsilon.value, self.clip_reward.value = s.gamma, s.epsilon, s.clip_reward

    def _render(self) -> None:
        s, r = self.session, self.session.results
        c = r.constants
        if c is None:
            self.constants.value = ("<div style='color:#b06000'>no constants for this scope: "
                                    + html.escape(r.constants_error or "") + "</div>")
        else:
            self.constants.value = (
                f"<div>constants over <b>{html.escape(c.scope)}</b> ({c.count:,} values of {c.rows:,} rows): "
                f"mean <b class='rewardlab-mean'>{c.mean:.6g}</b>, std <b class='rewardlab-std'>{c.std:.6g}</b>"
                f" <small>{html.escape(c.fingerprint)}</small></div>")
        rows = []
        for label, st in (("before", r.before), ("after", r.after)):
            if st is not None:
                rows.append([label, f"{st.count:,}", fmt(st.mean), fmt(st.std), fmt(st.min), fmt(st.max),
                             f"{st.zero_fraction:.1%}" if math.isfinite(st.zero_fraction) else "–"])
        self.stats.value = (table(["in scope", "count", "mean", "std", "min", "max", "zero"], rows)
                            + (f"<div><small>{html.escape(r.note)}</small></div>" if r.note else ""))
        summary = r.summary
        self.summary.value = ("<div>every step, as each normalizer hands the rewards to the agent "
                              f"(SB3 clips {r.fraction_clipped:.2%} of the steps):</div>"
                              + summary._repr_html_()
                              + (f"<div><small>histograms: a uniform sample of {r.replays.height:,} of {r.steps:,} "
                                 "steps of the dataset folder</small></div>" if r.sampled else ""))
        replays = r.replays
        clip = s.clip_reward
        nonzero = replays["raw"].to_numpy() != 0
        pins = [(p.label, s.pinned_results(p.label).replays) for p in s.pinned]

        def draw(axes):
            plot_normalization(replays, ax=axes, clip_reward=clip, limits=normalization_limits(replays))
            for k, (label, pinned) in enumerate(pins):  # each pin's normalized reward over the live one's
                method = replay_methods(pinned)[0]
                axes[1].hist(pinned[method].to_numpy()[pinned["raw"].to_numpy() != 0], bins=50, histtype="step",
                             color="black", linestyle=("--", ":", "-.")[k % 3], label=f"pinned: {label} ({method})")
            if pins:
                legend_outside(axes[1])
            for ax, column in zip(axes, ("raw", replay_methods(replays)[0])):
                ax.format_coord = lambda x, y, c=column: (f"{c} reward {fmt(x)}, {fmt(y)} steps: click to open "
                                                          "the episode of the nearest step")

        self.plot.draw(draw, ncols=2)
        self._columns = ("raw", replay_methods(replays)[0]) if nonzero.any() else ()

    def _on_plot_click(self, click: Click) -> None:
        if click.axes < len(self._columns):
            column = self._columns[click.axes]
            self._open_episode(self.episode, lambda: self.session.episode_near(click.x, column=column))


    def _on_export(self, _button=None) -> None:
        if self.export_task.running:
            return
        blocker = self.session.export_blocker()
        if blocker is not None:
            self.export_result.value = message("not exported: " + blocker)
            return
        self.exporter.start(self.session.export, doing="checking the file round trip in every batch mode, then "
                            "writing it…", shown=self._export_html, name="rewardlab-normalized-export")

    @staticmethod
    def _export_html(result) -> str:
        """What a finished export shows: the file, its companion and check."""
        rt = result.roundtrip
        color = "#1b7f1b" if rt is None or rt.ok else "#b00020"
        return (f"<div>wrote <code class='rewardlab-normalized-export-written'>"
                f"{html.escape(str(result.path.resolve()))}</code>; it runs "
                f"<code>{html.escape(str(result.plugin))}</code> from beside it and refuses to run if that file "
                "is moved or changed</div>" + pre(result.header)
                + (f"<div style='color:{color};white-space:pre-wrap'>{html.escape(str(rt))}</div>" if rt else "")
                + "".join(message(w) for w in result.warnings))

