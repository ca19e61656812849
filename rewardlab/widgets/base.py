"""ipywidgets fronts over :mod:`rewardlab.sessions` (the only module that imports ipywidgets).

Wiring only: each control's value goes to the session's
:meth:`~rewardlab.sessions.Session.try_update` (an invalid value shows the
session's error message instead of raising in a widget callback), and the
session's observer redraws the outputs.  Number boxes are text boxes
(:class:`NumberText`): the session reads what was typed
(:func:`rewardlab.sessions.parse_number`: ``"1.5"`` in an integer field is
refused, not read as 15), and a refused value shows its message while the
box returns to the value in use.  Figures are drawn by
:mod:`rewardlab.plots` on a :class:`matplotlib.figure.Figure` (no pyplot, no
global state) and shown as PNG in an :class:`ipywidgets.Image`.  Sliders and
number boxes send their value when released or committed
(``continuous_update=False``), so heavy redraws do not pile up.

Widgets
-------
* :class:`RankingTuner`: rank vector, points term, normalization constants,
  live statistics and plots, export with the round-trip check (progress bar
  and Cancel button; the work runs in a background thread).
* :class:`EpsilonScheduleTuner`: epsilon over steps with warm-up and decay
  marked, steps-to-threshold and the configuration snippet.
* :class:`NormalizationPanel`: constants per scope, before / after, the
  Gymnasium and Stable-Baselines3 running-normalizer replays.
* :class:`ComparisonBoard`: candidate plug-ins side by side.

Each is an :class:`ipywidgets.VBox` (display it as the last expression of a
cell) with its session in ``.session``.

Examples
--------
>>> from rewardlab.widgets import RankingTuner
>>> tuner = RankingTuner("data/sample.tsv.gz")  # doctest: +SKIP
>>> tuner  # doctest: +SKIP
>>> tuner.rank_inputs[3].value = -150.0  # doctest: +SKIP
>>> tuner.session.results.reward_moments.std  # doctest: +SKIP
"""

from __future__ import annotations

import html
import io
import math
import numbers
import threading

import ipywidgets as W
import numpy as np
import traitlets

from rewardlab.errors import ExportCancelled, RewardlabError
from rewardlab.plots import (
    plot_epsilon_schedule,
    plot_correlation_heatmap, plot_normalization, plot_return_scatter, plot_reward_by_rank,
    plot_reward_distribution,
)
from rewardlab.stats import SCOPES
from rewardlab.sessions import (
    SCHEDULE_KINDS, CancelToken, ComparisonSession, EpsilonScheduleSession, NormalizationSession,
    RankingTuningSession, Session,
)

__all__ = ["RankingTuner", "EpsilonScheduleTuner", "NormalizationPanel", "ComparisonBoard", "figure_png",
           "NumberText"]

_RANKS = ("1st", "2nd", "3rd", "4th")
_NARROW = W.Layout(width="170px")
_NUMBER = W.Layout(width="230px")
_WIDE = W.Layout(width="320px")
_STYLE = {"description_width": "70px"}


# --------------------------------------------------------------------------
# Shared pieces
# --------------------------------------------------------------------------


def figure_png(draw, *, ncols: int = 1, figsize: tuple[float, float] = (9.0, 3.2), dpi: int = 90) -> bytes:
    """Draw on a fresh matplotlib Figure (no pyplot) and return it as PNG bytes.

    Parameters
    ----------
    draw : callable
        ``draw(axes)`` with an array of ``ncols`` Axes.
    ncols : int
    figsize : (float, float)
    dpi : int

    Examples
    --------
    >>> png = figure_png(lambda axes: axes[0].plot([0, 1], [1, 0]))
    >>> png[:4]
    b'\\x89PNG'
    """
    from matplotlib.figure import Figure

    fig = Figure(figsize=figsize, dpi=dpi, layout="constrained")
    axes = np.atleast_1d(fig.subplots(1, ncols, squeeze=False)[0])
    draw(axes)
    buffer = io.BytesIO()
    fig.savefig(buffer, format="png")
    return buffer.getvalue()


def _fmt(x: float) -> str:
    """4 significant digits; rounding noise around 0 (``|x| < 1e-12``) shows as 0."""
    if x is None or not math.isfinite(x):
        return "–"
    return "0" if abs(x) < 1e-12 else f"{x:.4g}"


def _table(header: list[str], rows: list[list[str]]) -> str:
    head = "".join(f"<th style='padding:0 8px;text-align:right'>{html.escape(h)}</th>" for h in header)
    body = "".join("<tr>" + "".join(f"<td style='padding:0 8px;text-align:right'>{c}</td>" for c in row)
                   + "</tr>" for row in rows)
    return f"<table><thead><tr>{head}</tr></thead><tbody>{body}</tbody></table>"


def _pre(text: str) -> str:
    return f"<pre style='margin:2px 0;font-size:11px;line-height:1.3'>{html.escape(text)}</pre>"


def _message(text: str, *, color: str = "#b00020", mark: str = "⚠ ") -> str:
    return f"<div style='color:{color};white-space:pre-wrap'>{mark}{html.escape(text)}</div>"


def number_text(value) -> str:
    """How a number is shown in a :class:`NumberText`: ints as digits, floats exactly (``repr``).

    Examples
    --------
    >>> number_text(25000), number_text(0.1), number_text(-150.0)
    ('25000', '0.1', '-150.0')
    """
    if isinstance(value, (bool, np.bool_)):
        raise TypeError("a NumberText holds a number, not a bool")
    if isinstance(value, numbers.Integral):
        return str(int(value))
    return repr(float(value))


class _NumberOrText(traitlets.Unicode):
    """Text; a number assigned from Python is stored as its text (:func:`number_text`)."""

    def validate(self, obj, value):
        if isinstance(value, numbers.Real) and not isinstance(value, (bool, np.bool_)):
            value = number_text(value)
        return super().validate(obj, value)


class NumberText(W.Text):
    """A text box for a number: the session reads what is typed, the way a person reads it.

    ipywidgets' ``IntText`` / ``FloatText`` convert in the browser (and in
    Python ``IntText.value = 1.5`` silently becomes 1), so a typo turns into
    another number.  Here the text goes to the session as typed, which parses
    it (:func:`rewardlab.sessions.parse_number`) or refuses it with a message;
    the box then shows the value in use again.  Assigning a number from
    Python stores its text.

    Examples
    --------
    >>> box = NumberText(value=0.5)
    >>> box.value
    '0.5'
    """

    value = _NumberOrText(help="The text in the box (a number assigned from Python is stored as text).").tag(
        sync=True)


class _SessionWidget(W.VBox):
    """A VBox bound to a session: controls -> ``try_update``, session observer -> ``_render``."""

    def __init__(self, session: Session, **kwargs):
        super().__init__(**kwargs)
        self.session = session
        self._syncing = False
        self._rendered = -1
        self.error = W.HTML(layout=W.Layout(min_height="0px"))
        self.error.add_class("rewardlab-error")
        session.observe(self._on_session)

    def _bind(self, control: W.Widget, param: str) -> W.Widget:
        control.observe(lambda change: self._set(**{param: change["new"]}), names="value")
        return control

    def _set(self, **changes) -> None:
        if not self._syncing:
            self.session.try_update(**changes)

    def _call(self, method, *args) -> None:
        self.session.attempt(method, *args)

    def _on_session(self, session: Session) -> None:
        self.error.value = "" if session.last_error is None else _message(session.last_error)
        if session.version == self._rendered:
            if session.last_error is not None:  # a refused value: the controls go back to the values in use
                self._sync()
            return
        self._sync()
        self._render()
        self._rendered = session.version

    def _sync(self) -> None:
        self._syncing = True
        try:
            self._sync_controls()
        finally:
            self._syncing = False

    def refresh(self) -> None:
        """Redraw everything from the session (normally automatic)."""
        self._rendered = -1
        self._on_session(self.session)

    # subclasses
    def _sync_controls(self) -> None:  # pragma: no cover - abstract
        raise NotImplementedError

    def _render(self) -> None:  # pragma: no cover - abstract
        raise NotImplementedError


# --------------------------------------------------------------------------
# Ranking reward tuner
# --------------------------------------------------------------------------


class RankingTuner(_SessionWidget):
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
    stats : HTML
        Means and standard deviations before / after normalization, mean
        reward per final rank, expected reward.
    plot : Image
        Reward distribution and mean reward per final rank (PNG).
    export_path, overwrite, keep_constants, export_button, export_result : widgets
        ``keep_constants``: export constants fitted for other parameters as
        they are (otherwise the button is disabled until they are refitted).
    export_progress, cancel_button : FloatProgress, Button
        Progress of the running export, and a button that cancels it
        (nothing is written).

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
                                 value=s.preset or "custom", description="preset", style=_STYLE,
                                 layout=_WIDE)
        self.preset.observe(self._on_preset, names="value")
        self.background = bool(background)
        self._export_thread: threading.Thread | None = None
        self._cancel: CancelToken | None = None
        self.rank_inputs = [self._bind_rank(k, NumberText(value=v, description=_RANKS[k], style=_STYLE,
                                                          layout=_NARROW, continuous_update=False))
                            for k, v in enumerate(s.vector)]
        for k, box in enumerate(self.rank_inputs):
            box.add_class(f"rewardlab-rank-{k}")
        self.points = self._bind(W.Checkbox(value=s.points, description="add points term "
                                            "(score - offset) // divisor", indent=False,
                                            layout=W.Layout(width="300px")), "points")
        self.offset = self._bind(NumberText(value=s.offset, description="offset", style=_STYLE,
                                            layout=_NARROW, continuous_update=False), "offset")
        self.divisor = self._bind(NumberText(value=s.divisor, description="divisor", style=_STYLE,
                                             layout=_NARROW, continuous_update=False), "divisor")
        self.mean = self._bind(NumberText(value=s.mean, description="mean", style=_STYLE, layout=_NUMBER,
                                          continuous_update=False), "mean")
        self.std = self._bind(NumberText(value=s.std, description="std", style=_STYLE, layout=_NUMBER,
                                         continuous_update=False), "std")
        self.from_data = W.Button(description="from data", tooltip="Mean and population std of the raw "
                                  "reward over the end-of-game steps of the data")
        self.from_data.on_click(lambda _: self._call(s.constants_from_data))
        self.seed_recipe = W.Button(description="seed recipe", tooltip="The seed's example: vector mean "
                                    "and sample std (std ~0.87 on complete games, not 1)")
        self.seed_recipe.on_click(lambda _: self._call(s.seed_constants))
        self.no_constants = W.Button(description="none (0, 1)")
        self.no_constants.on_click(lambda _: self._call(s.reset_constants))
        self.auto_constants = self._bind(W.Checkbox(value=s.auto_constants, description="refit from data on "
                                                    "every change", indent=False), "auto_constants")
        self.provenance = W.HTML()
        self.stats = W.HTML()
        self.stats.add_class("rewardlab-stats")
        self.plot = W.Image(format="png", layout=W.Layout(width="820px"))
        self.plot.add_class("rewardlab-plot")
        self.export_path = W.Text(value=export_path, description="file", style=_STYLE, layout=_WIDE)
        self.export_path.add_class("rewardlab-export-path")
        self.overwrite = W.Checkbox(value=False, description="overwrite if it exists", indent=False)
        self.keep_constants = W.Checkbox(value=False, description="keep these constants (fitted for other "
                                         "parameters)", indent=False, layout=W.Layout(width="360px"))
        self.keep_constants.add_class("rewardlab-keep-constants")
        self.keep_constants.observe(lambda _: self._update_export_state(), names="value")
        self.export_button = W.Button(description="Export plug-in", button_style="primary", icon="download")
        self.export_button.add_class("rewardlab-export")
        self.export_button.on_click(self._on_export)
        self.cancel_button = W.Button(description="Cancel", icon="stop", disabled=True)
        self.cancel_button.add_class("rewardlab-export-cancel")
        self.cancel_button.on_click(self._on_cancel)
        self.export_progress = W.FloatProgress(value=0.0, min=0.0, max=1.0, layout=W.Layout(width="320px",
                                                                                           visibility="hidden"))
        self.export_progress.add_class("rewardlab-export-progress")
        self.export_status = W.HTML()
        self.export_result = W.HTML()
        self.export_result.add_class("rewardlab-export-result")
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
            self.error, self.stats, self.plot,
            W.HBox([self.export_path, self.overwrite, self.keep_constants]),
            W.HBox([self.export_button, self.cancel_button, self.export_progress, self.export_status]),
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
        running = self._export_thread is not None and self._export_thread.is_alive()
        self.export_button.disabled = running or self._cancel is not None or blocker is not None
        self.export_button.tooltip = "" if blocker is None else "Export disabled: " + blocker

    def _render(self) -> None:
        s, r = self.session, self.session.results
        b, a, ball, aall = r.raw_moments, r.reward_moments, r.raw_moments_all, r.reward_moments_all
        rows = [
            [f"end-of-game steps ({b.count:,})", _fmt(b.mean), _fmt(b.std),
             f"<b class='rewardlab-after-mean'>{_fmt(a.mean)}</b>",
             f"<b class='rewardlab-after-std'>{_fmt(a.std)}</b>"],
            [f"all steps ({ball.count:,})", _fmt(ball.mean), _fmt(ball.std), _fmt(aall.mean), _fmt(aall.std)],
        ]
        stats = _table(["", "mean before", "std before", "mean after", "std after"], rows)
        ranks = _table(["final rank"] + list(_RANKS),
                       [["data's distribution"] + [f"{p:.1%}" for p in r.rank_probabilities],
                        ["mean raw reward"] + [_fmt(v) for v in r.raw_mean_by_rank],
                        ["mean reward"] + [_fmt(v) for v in r.mean_by_rank]])
        self.stats.value = (
            stats + ranks
            + f"<div>expected reward per game under the data's rank distribution: raw {_fmt(r.expected_raw)}, "
            f"normalized <b class='rewardlab-expected'>{_fmt(r.expected_reward)}</b>; "
            f"steps with reward 0: {r.zero_steps:,}; "
            f"<small>recomputed in {s.recompute_seconds * 1e3:.2f} ms</small></div>")
        step_rewards = s.step_rewards()
        by_rank = r.by_rank_table("reward")

        def draw(axes):
            plot_reward_distribution({"reward": step_rewards}, ax=axes[0], bins=40)
            axes[0].set_title("reward at the end of the game")
            plot_reward_by_rank(by_rank, ax=axes[1])
            axes[1].set_title("mean reward by final rank")

        self.plot.value = figure_png(draw, ncols=2)

    def _on_export(self, _button=None) -> None:
        if self._cancel is not None:  # an export is running
            return
        path, overwrite, keep = self.export_path.value, self.overwrite.value, self.keep_constants.value
        blocker = self.session.export_blocker(keep_constants=keep)
        if blocker is not None:
            self.export_result.value = _message(f"not exported: {blocker}")
            self._update_export_state()
            return
        self._cancel = token = CancelToken()
        self.export_button.disabled = True
        self.cancel_button.disabled = False
        self.export_progress.value = 0.0
        self.export_progress.layout.visibility = "visible"
        self.export_status.value = ""
        self.export_result.value = "<i>checking the file round trip, then writing it…</i>"
        if self.background:
            self._export_thread = threading.Thread(target=self._export, args=(path, overwrite, keep, token),
                                                   name="rewardlab-export", daemon=True)
            self._export_thread.start()
        else:
            self._export(path, overwrite, keep, token)

    def _on_cancel(self, _button=None) -> None:
        if self._cancel is not None:
            self._cancel.cancel()
            self.cancel_button.disabled = True
            self.export_status.value = "<small>cancelling…</small>"

    def _on_progress(self, fraction: float, message: str) -> None:
        self.export_progress.value = min(max(float(fraction), 0.0), 1.0)
        self.export_status.value = f"<small>{html.escape(message)}</small>"

    def _export(self, path: str, overwrite: bool, keep: bool, token: CancelToken) -> None:
        """The export itself (in the background thread): any error ends as a message, never a hang."""
        try:
            result = self.session.export(path, overwrite=overwrite, keep_constants=keep,
                                         progress=self._on_progress, cancel=token)
        except ExportCancelled as exc:
            self.export_result.value = _message(str(exc), color="#555555", mark="")
        except RewardlabError as exc:
            self.export_result.value = _message(str(exc))
        except Exception as exc:  # noqa: BLE001 - a widget must show every failure, not hang on it
            self.export_result.value = _message(f"export of {path!r} failed: {type(exc).__name__}: {exc}")
        else:
            rt = result.roundtrip
            color = "#1b7f1b" if result.ok else "#b00020"
            self.export_result.value = (
                f"<div>wrote <code class='rewardlab-export-written'>{html.escape(str(result.path.resolve()))}"
                f"</code></div>" + _pre(result.header)
                + (f"<div style='color:{color};white-space:pre-wrap'>{html.escape(str(rt))}</div>" if rt else "")
                + f"<div><small>checked and written in {result.seconds:.1f} s</small></div>")
        finally:
            self._cancel = None
            self.cancel_button.disabled = True
            self.export_progress.layout.visibility = "hidden"
            self.export_status.value = ""
            self._export_thread = None
            self._update_export_state()

    def wait_for_export(self, timeout: float | None = None) -> bool:
        """Wait for a background export to finish; True when none is running any more.

        Examples
        --------
        >>> tuner.export_button.click(); tuner.wait_for_export()  # doctest: +SKIP
        True
        """
        thread = self._export_thread
        if thread is not None:
            thread.join(timeout)
        return self._export_thread is None or not self._export_thread.is_alive()


# --------------------------------------------------------------------------
# Epsilon schedule tuner
# --------------------------------------------------------------------------


class EpsilonScheduleTuner(_SessionWidget):
    """Explore epsilon-greedy schedules (ReinforcementLearning.jl's explorer, kanachan's EpsilonGreedy).

    Parameters
    ----------
    session : EpsilonScheduleSession, optional
        Default: a new session with its defaults.

    Attributes
    ----------
    session : EpsilonScheduleSession
    kind : Dropdown
    controls : dict of str to widget
        One control per session parameter (``controls["epsilon_stable"]``...); the
        probabilities are sliders without an editable readout (a browser clamps
        what is typed there), each with a text box in ``texts``.
    texts : dict of str to NumberText
        The exact value of each probability, typed (a value outside [0, 1] is
        refused with a message).
    summary : HTML
    plot : Image
    snippet_format : ToggleButtons
    snippet : Textarea

    Examples
    --------
    >>> tuner = EpsilonScheduleTuner()  # doctest: +SKIP
    >>> tuner.kind.value = "kanachan_actual"  # doctest: +SKIP
    """

    _SLIDERS = ("epsilon_init", "epsilon_stable", "epsilon_first", "epsilon_last")
    _INTS = ("warmup_steps", "decay_steps", "annealing_steps", "increment", "n_steps")

    def __init__(self, session: EpsilonScheduleSession | None = None):
        session = EpsilonScheduleSession() if session is None else session
        super().__init__(session)
        s = session
        self.kind = self._bind(W.Dropdown(options=list(SCHEDULE_KINDS), value=s.kind, description="kind",
                                          style=_STYLE), "kind")
        self.controls: dict[str, W.Widget] = {"kind": self.kind}
        self.texts: dict[str, NumberText] = {}
        for name in self._SLIDERS:
            self.controls[name] = self._bind(W.FloatSlider(
                value=getattr(s, name), min=0.0, max=1.0, step=0.01, description=name, readout=False,
                continuous_update=False, style={"description_width": "100px"}, layout=W.Layout(width="300px")),
                name)
            self.texts[name] = self._bind(NumberText(value=getattr(s, name), continuous_update=False,
                                                     layout=W.Layout(width="90px")), name)
        for name in self._INTS:
            self.controls[name] = self._bind(NumberText(value=getattr(s, name), description=name,
                                                        continuous_update=False,
                                                        style={"description_width": "110px"},
                                                        layout=W.Layout(width="260px")), name)
        self.controls["threshold"] = self._bind(NumberText(value=s.threshold, description="threshold",
                                                           continuous_update=False,
                                                           style={"description_width": "110px"},
                                                           layout=W.Layout(width="260px")), "threshold")
        c = self.controls
        pair = {name: W.HBox([c[name], self.texts[name]]) for name in self._SLIDERS}
        self.explorer_box = W.VBox([W.HTML("<small>ReinforcementLearning.jl EpsilonGreedyExplorer</small>"),
                                    pair["epsilon_init"], pair["epsilon_stable"], c["warmup_steps"],
                                    c["decay_steps"]])
        self.kanachan_box = W.VBox([W.HTML("<small>kanachan EpsilonGreedy</small>"), pair["epsilon_first"],
                                    pair["epsilon_last"], c["annealing_steps"], c["increment"]])
        self.summary = W.HTML()
        self.summary.add_class("rewardlab-stats")
        self.plot = W.Image(format="png", layout=W.Layout(width="720px"))
        self.plot.add_class("rewardlab-plot")
        self.snippet_format = W.ToggleButtons(options=["json", "yaml", "julia"], value="yaml")
        self.snippet_format.observe(lambda _: self._show_snippet(), names="value")
        self.snippet = W.Textarea(layout=W.Layout(width="520px", height="110px"))
        self.add_class("rewardlab-epsilon")
        self.children = [W.HTML("<b>Epsilon-greedy schedule</b>"), self.kind,
                         W.HBox([self.explorer_box, self.kanachan_box]),
                         W.HBox([c["n_steps"], c["threshold"]]), self.error, self.summary, self.plot,
                         self.snippet_format, self.snippet]
        self.refresh()

    def _sync_controls(self) -> None:
        s = self.session
        for name, control in (*self.controls.items(), *self.texts.items()):
            control.value = getattr(s, name)
        explorer = s.kind in ("linear", "exp")
        self.explorer_box.layout.display = "" if explorer else "none"
        self.kanachan_box.layout.display = "none" if explorer else ""
        self.controls["decay_steps"].description = "decay_steps" if s.kind == "linear" else "decay (time const)"
        options = ["json", "yaml", "julia"] if explorer else ["json", "yaml"]
        if list(self.snippet_format.options) != options:
            keep = self.snippet_format.value if self.snippet_format.value in options else "yaml"
            self.snippet_format.options = options
            self.snippet_format.value = keep

    def _show_snippet(self) -> None:
        snippets = self.session.results.snippets
        self.snippet.value = snippets.get(self.snippet_format.value, snippets["yaml"])

    def _render(self) -> None:
        s, r = self.session, self.session.results
        m = r.summary
        below = (f"<b class='rewardlab-first-below'>{m.first_below:,}</b> "
                 f"(after {m.steps_until_below:,} steps)") if m.first_below is not None else \
            "<b class='rewardlab-first-below'>never</b> within the horizon"
        self.summary.value = (
            f"<div>epsilon &lt; {s.threshold:g} from step {below}; expected random actions over "
            f"{m.n_steps:,} steps: {m.expected_random_actions:,.1f} (mean epsilon {m.mean_epsilon:.4f}, "
            f"final {m.final_epsilon:.4f})</div>"
            + ("<div><small>kanachan's step() only advances when one call reports at least "
               "annealing_steps steps; with smaller increments epsilon never leaves epsilon_first "
               "(the dashed curve is the intended anneal).</small></div>" if s.kind == "kanachan_actual" else ""))
        self.plot.value = figure_png(
            lambda axes: plot_epsilon_schedule(r.steps, r.epsilon, label=r.kind, reference=r.reference,
                                               marks=r.marks, threshold=s.threshold, ax=axes[0]),
            figsize=(8.0, 3.2))
        self._show_snippet()


# --------------------------------------------------------------------------
# Normalization panel
# --------------------------------------------------------------------------


class NormalizationPanel(_SessionWidget):
    """Normalization constants per scope, before / after, and the running-normalizer replays.

    Parameters
    ----------
    data : DataFrame or NormalizationSession
        A frame with reward columns (e.g. from :func:`rewardlab.apply_plugins`).
    reward : str, optional
    scope : str

    Attributes
    ----------
    session : NormalizationSession
    reward, scope, gamma, epsilon, clip_reward : widgets
    constants, stats, summary : HTML
    plot : Image
        Before / after histograms (constants, Gymnasium, SB3).

    Examples
    --------
    >>> panel = NormalizationPanel(frame, reward="round_delta", scope="end_of_round")  # doctest: +SKIP
    >>> panel.scope.value = "all"  # doctest: +SKIP
    """

    def __init__(self, data, *, reward: str | None = None, scope: str = "end_of_game"):
        session = data if isinstance(data, NormalizationSession) else \
            NormalizationSession(data, reward=reward, scope=scope)
        super().__init__(session)
        s = session
        self.reward = self._bind(W.Dropdown(options=list(s.rewards), value=s.reward, description="reward",
                                            style=_STYLE, layout=_WIDE), "reward")
        self.scope = self._bind(W.ToggleButtons(options=list(SCOPES), value=s.scope, description="scope",
                                                style={"description_width": "70px", "button_width": "110px"}),
                                "scope")
        self.gamma = self._bind(NumberText(value=s.gamma, description="gamma", style=_STYLE, layout=_NARROW,
                                           continuous_update=False), "gamma")
        self.epsilon = self._bind(NumberText(value=s.epsilon, description="epsilon", style=_STYLE,
                                             layout=_NARROW, continuous_update=False), "epsilon")
        self.clip_reward = self._bind(NumberText(value=s.clip_reward, description="clip", style=_STYLE,
                                                 layout=_NARROW, continuous_update=False), "clip_reward")
        self.constants = W.HTML()
        self.constants.add_class("rewardlab-constants")
        self.stats = W.HTML()
        self.stats.add_class("rewardlab-stats")
        self.plot = W.Image(format="png", layout=W.Layout(width="820px"))
        self.plot.add_class("rewardlab-plot")
        self.summary = W.HTML()
        self.add_class("rewardlab-normalization")
        self.children = [W.HTML("<b>Normalization</b>"), self.reward, self.scope,
                         W.HBox([W.HTML("<small>running normalizers:</small>"), self.gamma, self.epsilon,
                                 self.clip_reward]),
                         self.error, self.constants, self.stats, self.plot, self.summary]
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
                rows.append([label, f"{st.count:,}", _fmt(st.mean), _fmt(st.std), _fmt(st.min), _fmt(st.max),
                             f"{st.zero_fraction:.1%}" if math.isfinite(st.zero_fraction) else "–"])
        self.stats.value = (_table(["in scope", "count", "mean", "std", "min", "max", "zero"], rows)
                            + (f"<div><small>{html.escape(r.note)}</small></div>" if r.note else ""))
        summary = r.summary
        self.summary.value = ("<div>every step, as each normalizer hands the rewards to the agent "
                              f"(SB3 clips {r.fraction_clipped:.2%} of the steps):</div>"
                              + summary._repr_html_())
        replays = r.replays
        clip = s.clip_reward
        self.plot.value = figure_png(lambda axes: plot_normalization(replays, ax=axes, clip_reward=clip),
                                     ncols=2)


# --------------------------------------------------------------------------
# Comparison board
# --------------------------------------------------------------------------


class ComparisonBoard(_SessionWidget):
    """Candidate plug-ins side by side: distributions, correlation matrix, disagreements.

    Parameters
    ----------
    data : DataFrame, path(s), or ComparisonSession
    plugins : sequence of paths or Plugin objects
    batch_mode : str
        How the plug-ins are applied (see :func:`rewardlab.apply_plugins`).

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
    plot : Image
    pairs, disagreements : HTML

    Examples
    --------
    >>> board = ComparisonBoard(frame, sorted(Path("data/plugins").glob("*.py")))  # doctest: +SKIP
    >>> board.add_path.value = "my_reward.py"; board.add_button.click()  # doctest: +SKIP
    """

    def __init__(self, data, plugins=(), *, batch_mode: str = "episodes"):
        session = data if isinstance(data, ComparisonSession) else \
            ComparisonSession(data, plugins, batch_mode=batch_mode)
        super().__init__(session)
        s = session
        self.chosen = self._bind(W.SelectMultiple(options=list(s.candidates), value=list(s.chosen),
                                                  description="candidates", rows=min(10, len(s.candidates)),
                                                  style=_STYLE, layout=W.Layout(width="360px")), "chosen")
        self.a = self._bind(W.Dropdown(options=list(s.candidates), value=s.a, description="pair: a",
                                       style=_STYLE, layout=_WIDE), "a")
        self.b = self._bind(W.Dropdown(options=list(s.candidates), value=s.b, description="b",
                                       style=_STYLE, layout=_WIDE), "b")
        self.metric = self._bind(W.ToggleButtons(options=["pearson", "spearman", "epic"], value=s.metric,
                                                 description="matrix", style=_STYLE), "metric")
        self.k = self._bind(NumberText(value=s.k, description="episodes", style=_STYLE, layout=_NARROW,
                                       continuous_update=False), "k")
        self.add_path = W.Text(placeholder="path/to/your_plugin.py", description="add file", style=_STYLE,
                               layout=_WIDE)
        self.add_button = W.Button(description="Load and apply")
        self.add_button.on_click(self._on_add)
        self.plot = W.Image(format="png", layout=W.Layout(width="980px"))
        self.plot.add_class("rewardlab-plot")
        self.pairs = W.HTML()
        self.pairs.add_class("rewardlab-stats")
        self.disagreements = W.HTML()
        self.add_class("rewardlab-comparison")
        self.children = [W.HTML("<b>Plug-in comparison</b>"),
                         W.HBox([self.chosen, W.VBox([self.a, self.b, self.metric, self.k])]),
                         W.HBox([self.add_path, self.add_button]),
                         self.error, self.plot, self.pairs, self.disagreements]
        self.refresh()

    def _on_add(self, _button) -> None:
        path = self.add_path.value.strip()
        if path:
            self._call(self.session.add_plugin, path)

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
        r = self.session.results

        def draw(axes):
            plot_reward_distribution(r.step_rewards, ax=axes[0], bins=40)
            axes[0].set_title("step rewards (nonzero)")
            if r.matrix is not None:
                plot_correlation_heatmap(r.matrix, ax=axes[1], vmin=0.0 if r.metric == "epic" else -1.0)
                axes[1].set_title(f"{r.metric} of episode returns")
            else:
                axes[1].text(0.5, 0.5, "choose two or more\ncandidates", ha="center", va="center")
                axes[1].set_axis_off()
            if r.a != r.b:
                plot_return_scatter(r.pair_returns, x=r.a, y=r.b, ax=axes[2])
                axes[2].set_title("episode returns")
            else:
                axes[2].set_axis_off()

        self.plot.value = figure_png(draw, ncols=3, figsize=(12.0, 3.6))
        self.pairs.value = ("<div>every pair (episode returns):</div>" + r.comparison.pairs()._repr_html_()) \
            if r.comparison is not None else ""
        self.disagreements.value = (
            f"<div>episodes where <b>{html.escape(r.a)}</b> and <b>{html.escape(r.b)}</b> disagree most "
            "(standardized returns):</div>" + r.disagreements._repr_html_()) if r.disagreements is not None \
            else ""
