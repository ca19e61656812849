"""Tuning sessions: the state behind every widget, in plain Python (no ipywidgets here).

A session owns its **parameters** (validated with the families' and
schedules' own rules and messages), **recomputes** its **results** whenever a
parameter changes, and tells its **observers** (plain callables, called with
the session) afterwards.  The widgets in :mod:`rewardlab.widgets` only wire
controls to :meth:`Session.try_update` and observers to their outputs; tests
and scripts drive sessions directly.

Setting parameters
------------------
* ``session.vector = (1, 0, 0, -1)`` or ``session.update(vector=..., mean=...)``
  validate, recompute and notify, or raise
  :class:`~rewardlab.core.errors.ParameterError` and change nothing.
* ``session.try_update(...)`` (what the widgets call) never raises a
  rewardlab error: it stores the message in :attr:`Session.last_error`,
  notifies the observers so the UI can show it, and returns False.
  :meth:`Session.attempt` does the same for any method (loading a plug-in,
  exporting).
* Numeric parameters also take **text**, read the way a person reads it
  (:func:`parse_number`): ``session.offset = "25000"`` works, ``"1.5"`` for
  an integer is refused, not read as 15.  The text boxes of the widgets
  send what was typed.
* A change is computed **before** it is kept: when the new results would
  hold a non-finite statistic (mean, std, expected reward, constants), the
  change is refused with a message naming the parameter and the session
  keeps its last good values.

Sessions
--------
* :class:`RankingTuningSession`: a rank vector (preset or typed), the
  optional points term, normalization constants (from data in one call,
  the wiki's recipe, or typed); results from the precomputed rank table
  (a gather per change); :meth:`~RankingTuningSession.export` checks the
  plug-in round trip (with progress and a :class:`CancelToken`), then
  writes it.
* :class:`EpsilonScheduleSession`: ReinforcementLearning.jl's linear / exp
  explorer and kanachan's EpsilonGreedy (intended and actual).
* :class:`NormalizationSession`: normalization constants of a reward column
  in a scope, before / after statistics, Gymnasium and SB3 replays.
* :class:`ComparisonSession`: candidate plug-ins side by side.
* :class:`ContestSession`: the retro contest reward (scale, bonus, frame
  limit, the baselines' scaler and backtracking, the level table) on a retro
  recording; per-level finish rates, returns, the time bonus, what each
  option pays per outcome; exports the checked contest plug-in.
* :class:`ElFarolSession`: El Farol's per-agent rewards (capacity, kind G /
  local / D / WL, agents, nights) on simulated or recorded joint actions;
  alignment with G (factoredness, learnability, intervals), per-agent
  reward distributions and normalization constants, one week opened;
  exports the checked reward manager.

Pinned candidates, undo and saved state (every tuner)
-----------------------------------------------------
* ``session.pin(label)`` keeps the current candidate as an immutable
  :class:`Pinned` record (parameters, constants and their origin, a summary
  of its statistics); :attr:`Session.pinned`, :meth:`Session.unpin`,
  :meth:`Session.clear_pins`; :meth:`Session.compare_pinned` is a table of
  their statistics beside the live candidate's, with the differences.
* ``session.undo()`` / ``session.redo()`` walk the accepted changes (up to
  :data:`HISTORY_LIMIT`; a refused change is not recorded).
* ``session.save_state(path)`` writes parameters, constants, pins, the data's
  path and fingerprint to a small JSON file; ``Session.load_state(path, data)``
  and ``session.restore(path)`` read it back and refuse other data.

Modules
-------
* :mod:`rewardlab.sessions.base`: :class:`Session`, :func:`parse_number`,
  :class:`CancelToken`, :func:`locate` and the helpers every tuner uses.
* :mod:`rewardlab.sessions.state`: :class:`Pinned`, :class:`SavedState`
  and the state file.
* :mod:`rewardlab.sessions.roundtrip`: :func:`roundtrip_check`,
  :class:`RoundTrip`, :class:`ExportResult` (the check an export runs).
* :mod:`rewardlab.sessions.ranking`, :mod:`rewardlab.sessions.epsilon`,
  :mod:`rewardlab.sessions.normalization`, :mod:`rewardlab.sessions.el_farol`,
  :mod:`rewardlab.sessions.comparison`, :mod:`rewardlab.sessions.retro`: one tuner each.
* :mod:`rewardlab.sessions.board_diagnostics`: the comparison board's EPIC
  matrix and diagnostics panel (:data:`METRICS`, :class:`FindingEpisode`),
  which :class:`ComparisonSession` inherits.

Examples
--------
>>> from rewardlab.sessions import EpsilonScheduleSession
>>> s = EpsilonScheduleSession(kind="linear", epsilon_stable=0.1, warmup_steps=0, decay_steps=1000,
...                            n_steps=5000, threshold=0.5)
>>> s.results.summary.first_below
556
>>> s.try_update(epsilon_stable=1.5)
False
>>> s.last_error
'`epsilon_stable` should be in [0, 1] (a probability). Received 1.5.'
"""

from rewardlab.sessions.base import HISTORY_LIMIT, Session
from rewardlab.sessions.inputs import CancelToken, locate, parse_number
from rewardlab.sessions.board_diagnostics import METRICS, FindingEpisode
from rewardlab.sessions.comparison import ComparisonResults, ComparisonSession
from rewardlab.sessions.el_farol import EL_FAROL_KINDS, ElFarolResults, ElFarolSession, WeekDetail
from rewardlab.sessions.epsilon import SCHEDULE_KINDS, EpsilonResults, EpsilonScheduleSession
from rewardlab.sessions.normalization import NormalizationResults, NormalizationSession
from rewardlab.sessions.ranking import RankingResults, RankingTuningSession
from rewardlab.sessions.retro import OPTION_VARIANTS, OUTCOME_GROUPS, ContestResults, ContestSession
from rewardlab.sessions.state import STATE_FORMAT, Pinned, SavedState, read_state
from rewardlab.sessions.roundtrip import (
    CHECK_ROWS, COMPARE_BATCH_SIZE, COMPARE_MODE, ExportResult, RoundTrip, roundtrip_check, sample_whole_games,
    whole_games,
)

__all__ = [
    "locate",
    "parse_number",
    "CancelToken",
    "CHECK_ROWS",
    "COMPARE_MODE",
    "COMPARE_BATCH_SIZE",
    "Session",
    "Pinned",
    "SavedState",
    "read_state",
    "STATE_FORMAT",
    "HISTORY_LIMIT",
    "RankingTuningSession",
    "RankingResults",
    "ExportResult",
    "RoundTrip",
    "roundtrip_check",
    "whole_games",
    "sample_whole_games",
    "EpsilonScheduleSession",
    "EpsilonResults",
    "SCHEDULE_KINDS",
    "ElFarolSession",
    "ElFarolResults",
    "WeekDetail",
    "EL_FAROL_KINDS",
    "NormalizationSession",
    "NormalizationResults",
    "ComparisonSession",
    "ComparisonResults",
    "FindingEpisode",
    "METRICS",
    "ContestSession",
    "ContestResults",
    "OPTION_VARIANTS",
    "OUTCOME_GROUPS",
]
