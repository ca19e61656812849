"""ipywidgets fronts over :mod:`rewardlab.sessions` (the only package that imports ipywidgets).

Wiring only: each control's value goes to the session's
:meth:`~rewardlab.sessions.Session.try_update` (an invalid value shows the
session's error message instead of raising in a widget callback), and the
session's observer redraws the outputs.  Number boxes are text boxes
(:class:`NumberText`): the session reads what was typed
(:func:`rewardlab.sessions.parse_number`: ``"1.5"`` in an integer field is
refused, not read as 15), and a refused value shows its message while the
box returns to the value in use.  Figures are drawn by
:mod:`rewardlab.plots` on a :class:`matplotlib.figure.Figure` (no pyplot, no
global state) shown on an ipympl canvas (:class:`FigurePane`): zoom, pan and
the values under the mouse in JupyterLab, redrawn in place on every change;
a click on a bar or a point opens that episode (:class:`EpisodeView`).  Sliders and
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
* :class:`ContestTuner`: the retro contest reward (scale, bonus, frame
  limit, scaler and backtracking, the level table): finish rates per level,
  returns, the time bonus by finishing frame, what each option pays per
  outcome, the checked export.
* :class:`ElFarolTuner`: El Farol's per-agent rewards (capacity, kind,
  agents, nights): alignment with G per agent and beside the pins, reward
  distributions and constants per agent, one week opened, the checked
  reward-manager export.

Each is an :class:`ipywidgets.VBox` (display it as the last expression of a
cell) with its session in ``.session``.

Modules
-------
* :mod:`rewardlab.widgets.base`: :class:`NumberText`, the HTML helpers and
  the session-widget base class.
* :mod:`rewardlab.widgets.figures`: :class:`FigurePane` (interactive figures).
* :mod:`rewardlab.widgets.episodes`: :class:`EpisodeView` (an opened episode).
* :mod:`rewardlab.widgets.ranking`, :mod:`rewardlab.widgets.epsilon`,
  :mod:`rewardlab.widgets.normalization`, :mod:`rewardlab.widgets.el_farol`,
  :mod:`rewardlab.widgets.comparison`, :mod:`rewardlab.widgets.retro`: one tuner each.

Examples
--------
>>> from rewardlab.widgets import RankingTuner
>>> tuner = RankingTuner("data/sample.tsv.gz")  # doctest: +SKIP
>>> tuner  # doctest: +SKIP
>>> tuner.rank_inputs[3].value = -150.0  # doctest: +SKIP
>>> tuner.session.results.reward_moments.std  # doctest: +SKIP
"""

from rewardlab.widgets.base import NumberText, fmt, number_text
from rewardlab.widgets.comparison import ComparisonBoard
from rewardlab.widgets.episodes import EpisodeView
from rewardlab.widgets.el_farol import ElFarolTuner
from rewardlab.widgets.epsilon import EpsilonScheduleTuner
from rewardlab.widgets.figures import Click, FigurePane
from rewardlab.widgets.normalization import NormalizationPanel
from rewardlab.widgets.ranking import RankingTuner
from rewardlab.widgets.retro import ContestTuner

__all__ = ["RankingTuner", "EpsilonScheduleTuner", "NormalizationPanel", "ComparisonBoard", "ContestTuner",
           "FigurePane", "ElFarolTuner", "Click", "EpisodeView", "NumberText", "number_text", "fmt"]
