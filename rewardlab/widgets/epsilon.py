"""The epsilon-greedy schedule tuner: epsilon over steps, steps-to-threshold, the configuration snippet.

Examples
--------
>>> tuner = EpsilonScheduleTuner()  # doctest: +SKIP
>>> tuner.kind.value = "kanachan_actual"  # doctest: +SKIP
"""

from __future__ import annotations

import ipywidgets as W

from rewardlab.plots import plot_epsilon_schedule
from rewardlab.sessions import SCHEDULE_KINDS, EpsilonScheduleSession
from rewardlab.widgets.base import STYLE, NumberText, SessionWidget
from rewardlab.widgets.figures import FigurePane

__all__ = ["EpsilonScheduleTuner"]


class EpsilonScheduleTuner(SessionWidget):
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
    plot : FigurePane
        The schedule (interactive: zoom, pan, values on hover).
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
                                          style=STYLE), "kind")
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
        self.plot = FigurePane(figsize=(8.0, 3.2))
        self.plot.add_class("rewardlab-plot")
        self.snippet_format = W.ToggleButtons(options=["json", "yaml", "julia"], value="yaml")
        self.snippet_format.observe(lambda _: self._show_snippet(), names="value")
        self.snippet = W.Textarea(layout=W.Layout(width="520px", height="110px"))
        self.add_class("rewardlab-epsilon")
        self.children = [W.HTML("<b>Epsilon-greedy schedule</b>"), self.kind,
                         W.HBox([self.explorer_box, self.kanachan_box]),
                         W.HBox([c["n_steps"], c["threshold"]]), self.state_bar, self.error, self.summary,
                         self.plot, self.pinned,
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
        pins = [(p.label, s.pinned_results(p.label)) for p in s.pinned]

        def draw(axes):
            plot_epsilon_schedule(r.steps, r.epsilon, label=r.kind, reference=r.reference, marks=r.marks,
                                  threshold=s.threshold, ax=axes[0])
            for label, pr in pins:  # pinned schedules overlaid
                axes[0].plot(pr.steps, pr.epsilon, linestyle=":", linewidth=1.2, label=f"pinned: {label}")
            if pins:
                axes[0].legend(loc="upper left", bbox_to_anchor=(1.0, 1.0), fontsize="small")

        self.plot.draw(draw)
        self._show_snippet()
