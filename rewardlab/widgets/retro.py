"""The retro contest tuner: scale, bonus, frame limit, the baselines' options, the level table, and the export.

Wiring only (:class:`~rewardlab.sessions.ContestSession` holds the state):
number boxes and check boxes go to ``try_update``, the level editor to
``set_level_end``, a click on a point of the bonus plot opens that episode,
and the export runs the contest plug-in's round trip in a background thread.

Examples
--------
>>> tuner = ContestTuner("data/retro/sonic_sample.parquet")  # doctest: +SKIP
>>> tuner.controls["backtracking"].value = True  # doctest: +SKIP
"""

from __future__ import annotations

import html

import ipywidgets as W
import polars as pl

from rewardlab.plots import plot_return_distribution
from rewardlab.plots.retro import GAME_SHORT, plot_bonus_by_frame, plot_finish_rates, plot_option_effects
from rewardlab.sessions import OPTION_VARIANTS, ContestSession, parse_number
from rewardlab.widgets.base import STYLE, WIDE, NumberText, SessionWidget, fmt
from rewardlab.widgets.episodes import EpisodeView
from rewardlab.widgets.figures import Click, FigurePane
from rewardlab.widgets.tasks import BackgroundTask, ExportRow, ExportsInBackground

__all__ = ["ContestTuner"]

_BOX = W.Layout(width="230px")
_WIDE_STYLE = {"description_width": "90px"}


def _frame_html(frame: pl.DataFrame) -> str:
    with pl.Config(tbl_rows=-1, tbl_cols=-1, fmt_str_lengths=40, float_precision=4):
        return frame._repr_html_()


class ContestTuner(ExportsInBackground, SessionWidget):
    """Tune the retro contest reward on a recording (see :class:`~rewardlab.sessions.ContestSession`).

    Parameters
    ----------
    data : ContestSession, DataFrame or path(s)
        A session, or the data to open one on (``rewardlab.load`` of a retro file, or its path).
    export_path : str
        Initial file name in the export box (relative to the kernel's folder).
    background : bool
        Run the export in a background thread (False: in the click, e.g. in tests).
    **options
        Passed to :class:`~rewardlab.sessions.ContestSession` when ``data`` is not a session (``scale=``,
        ``levels=``...).

    Attributes
    ----------
    session : ContestSession
    controls : dict of str to widget
        ``scale``, ``bonus``, ``frame_limit`` (number boxes), ``scaler``, ``backtracking`` (check boxes).
    level, level_end, set_level_button, reset_level_button : widgets
        The level editor: a level of the data, its end x typed, set it or put back the script's.
    summary, levels_table, options_table : HTML
    plot : FigurePane
        Episodes per level by outcome, and the episode returns (pinned candidates overlaid).
    bonus_plot : FigurePane
        The time bonus against the finishing frame (a click opens the nearest episode) and what each option
        pays per outcome.
    episode_index, open_button : widgets
        Open an episode by its index.
    episode : EpisodeView
    export_path, overwrite, export_button, export_result : widgets
    export_task : BackgroundTask

    Examples
    --------
    >>> tuner = ContestTuner("data/retro/sonic_sample.parquet", background=False)  # doctest: +SKIP
    >>> tuner.controls["scale"].value = "100"  # doctest: +SKIP
    >>> tuner.bonus_plot.click(0, 4000, 780)  # doctest: +SKIP
    """

    def __init__(self, data, *, export_path: str = "contest_reward.py", background: bool = True, **options):
        session = data if isinstance(data, ContestSession) else ContestSession(data, **options)
        super().__init__(session)
        s = session
        self.controls: dict[str, W.Widget] = {}
        for name in ("scale", "bonus", "frame_limit"):
            self.controls[name] = self._bind(NumberText(value=getattr(s, name), description=name,
                                                        continuous_update=False, style=_WIDE_STYLE, layout=_BOX),
                                             name)
        for name, label in (("scaler", "RewardScaler (x 0.01)"), ("backtracking", "AllowBacktracking")):
            self.controls[name] = self._bind(W.Checkbox(value=getattr(s, name), description=label, indent=False),
                                             name)
        self.level = W.Dropdown(options=[(f"{GAME_SHORT.get(g, g)} {state} ({key})", k)
                                         for k, (g, state, key) in enumerate(s.level_choices)],
                                value=0, description="level", style=STYLE, layout=W.Layout(width="420px"))
        self.level.observe(lambda _: self._show_level_end(), names="value")
        self.level_end = NumberText(value="", description="end x", continuous_update=False, style=STYLE,
                                    layout=W.Layout(width="200px"))
        self.set_level_button = W.Button(description="Set end x", icon="pencil")
        self.set_level_button.on_click(lambda _: self._set_level(self.level_end.value))
        self.reset_level_button = W.Button(description="Script's end x", icon="undo")
        self.reset_level_button.on_click(lambda _: self._set_level(None))
        self.summary = W.HTML()
        self.summary.add_class("rewardlab-stats")
        self.levels_table = W.HTML()
        self.options_table = W.HTML()
        self.plot = FigurePane(figsize=(11.0, 3.6))
        self.plot.add_class("rewardlab-plot")
        self.bonus_plot = FigurePane(figsize=(11.0, 3.4))
        self.bonus_plot.add_class("rewardlab-plot")
        self.bonus_plot.on_click(self._on_bonus_click)
        self.episode = EpisodeView()
        self.episode_index = NumberText(value=0, description="episode", style=STYLE, layout=W.Layout(width="170px"))
        self.open_button = W.Button(description="Open episode", icon="search")
        self.open_button.on_click(lambda _: self._open_typed())
        self.export_path = W.Text(value=export_path, description="file", style=STYLE, layout=WIDE)
        self.overwrite = W.Checkbox(value=False, description="overwrite if it exists", indent=False,
                                    layout=W.Layout(width="170px"))
        self.export_button = W.Button(description="Export contest plug-in", icon="download",
                                      tooltip="Check the file's round trip on this data in every batch mode, then "
                                      "write it")
        self.export_button.add_class("rewardlab-contest-export")
        self.export_button.on_click(self._on_export)
        self.export_task = BackgroundTask(background=background, css="rewardlab-contest-export")
        self.export_result = W.HTML()
        self.exporter = ExportRow(self.export_path, self.overwrite, self.export_button, self.export_result,
                                  self.export_task)
        self.add_class("rewardlab-contest")
        c = self.controls
        self.children = [
            W.HTML("<b>Retro contest reward</b> <small>(script.lua's progress reward and time bonus)</small>"),
            W.HBox([c["scale"], c["bonus"], c["frame_limit"]]), W.HBox([c["scaler"], c["backtracking"]]),
            W.HBox([self.level, self.level_end, self.set_level_button, self.reset_level_button]),
            self.state_bar, self.error, self.summary, self.plot, self.levels_table, self.bonus_plot,
            self.options_table, W.HBox([self.episode_index, self.open_button]), self.episode,
            W.HBox([self.export_path, self.overwrite]), W.HBox([self.export_button, self.export_task]),
            self.export_result, self.pinned]
        self.refresh()

    # -- controls -------------------------------------------------------------------
    def _sync_controls(self) -> None:
        s = self.session
        for name, control in self.controls.items():
            control.value = getattr(s, name)
        self._show_level_end()

    def _show_level_end(self) -> None:
        levels = self.session.results.levels
        self.level_end.value = int(levels["end_x"][self.level.value])

    def _set_level(self, end_x) -> None:
        game, state, _ = self.session.level_choices[self.level.value]
        if not self.session.attempt(self.session.set_level_end, game, state, end_x):
            self._show_level_end()

    def _open_typed(self) -> None:
        self._open_episode(self.episode, lambda: _episode_number(self.episode_index.value))

    def _on_bonus_click(self, click: Click) -> None:
        if click.axes == 0:
            self._open_episode(self.episode, lambda: self.session.episode_near(click.x, click.y))

    # -- outputs ----------------------------------------------------------------------
    def _render(self) -> None:
        s, r = self.session, self.session.results
        e = r.episodes
        finished = e.filter(pl.col("finished"))
        early = int(e["ends_early"].sum())
        self.summary.value = (
            f"<div>{e.height} episodes over {s.steps:,} timesteps: {finished.height} reach the level's end "
            f"({finished.height / max(e.height, 1):.0%}); mean return <b class='rewardlab-mean-return'>"
            f"{fmt(float(r.returns.mean()))}</b> (std {fmt(float(r.returns.std()))}); mean time bonus of finished "
            f"episodes {fmt(float(finished['bonus'].mean())) if finished.height else '–'}; recomputed in "
            f"{s.recompute_seconds * 1e3:.1f} ms</div>"
            + (f"<div><small>{early} episode(s) reach the contest's end before the recording's last step (a level "
               "table other than the recording's): their returns stop there.</small></div>" if early else ""))
        self.levels_table.value = "<div>per level (end x: the table in use):</div>" + _frame_html(
            r.levels.select("game", "state", "level", "end_x", "script_end_x", "episodes", "finished",
                            "recorded_finished", "lost_life", "timed_out", "finish_rate", "mean_return"))
        self.options_table.value = ("<div>mean episode return by outcome under each option combination "
                                    "(<i>live</i>: the options ticked above):</div>" + _frame_html(r.options))
        pins = [(p.label, s.pinned_results(p.label)) for p in s.pinned]
        returns = {"live": r.returns, **{f"pinned: {label}": pr.returns for label, pr in pins}}

        def draw(axes):
            plot_finish_rates(r.levels, ax=axes[0])
            plot_return_distribution(returns, ax=axes[1], bins=30)
            axes[1].set_title("Episode returns", fontsize="medium")

        self.plot.draw(draw, ncols=2)
        scaled = s.scaler
        columns = [k for k, (scaler, _) in OPTION_VARIANTS.items() if scaler == scaled]
        pinned_points = {label: pr.episodes for label, pr in pins}

        def draw_bonus(axes):
            plot_bonus_by_frame(e, frame_limit=s.frame_limit, pinned=pinned_points, ax=axes[0])
            axes[0].format_coord = lambda x, y: f"frame {fmt(x)}, bonus {fmt(y)}: click to open the nearest episode"
            plot_option_effects(r.options, columns=columns, ax=axes[1])

        self.bonus_plot.draw(draw_bonus, ncols=2)

    # -- export -------------------------------------------------------------------------
    def _on_export(self, _button=None) -> None:
        self.exporter.start(self.session.export, doing="checking the file round trip in every batch mode, then "
                            "writing it…", shown=_export_html, name="rewardlab-contest-export")


def _export_html(result) -> str:
    """What a finished contest export shows: the file written and its round trip."""
    check = "" if result.roundtrip is None else f"<pre>{html.escape(str(result.roundtrip))}</pre>"
    return (f"<div>wrote <code class='rewardlab-contest-export-written'>{html.escape(str(result.path))}</code>"
            f"</div>{check}")


def _episode_number(text) -> int:
    """The episode index typed in the box (the session refuses one out of range)."""
    return parse_number("episode", text, integer=True)
