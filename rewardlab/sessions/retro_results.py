"""What the retro contest tuner shows: :class:`ContestResults` and the tables' vocabulary.

:class:`~rewardlab.sessions.retro.ContestSession` computes them; this module
holds what they are (as ``ranking_results`` does for the ranking tuner).

Examples
--------
>>> OUTCOME_GROUPS[:2]
('all', 'finished')
"""

from __future__ import annotations

import dataclasses

import numpy as np
import polars as pl

from rewardlab.domains.retro.family import ContestFamily
from rewardlab.sources.retro.levels import level_table

__all__ = ["OPTION_VARIANTS", "OUTCOME_GROUPS", "ContestResults", "installed_table", "with_nulls"]

#: The baselines' option combinations the options table compares: name -> (scaler, backtracking).
OPTION_VARIANTS = {"no options": (False, False), "scaler": (True, False), "backtracking": (False, True),
                   "scaler + backtracking": (True, True)}
#: The episode groups of the options table, in order (an episode that backtracks is also in its outcome's group).
OUTCOME_GROUPS = ("all", "finished", "lost a life", "timed out", "bonus/special stage", "other", "backtracks")


def installed_table(game: str) -> dict[str, int]:
    """The installed ``script.lua``'s ``level_max_x`` of ``game``, read once per process.

    Examples
    --------
    >>> installed_table("SonicTheHedgehog-Genesis-v0")["zone=0,act=0"]
    9568
    """
    table = _INSTALLED.get(game)
    if table is None:
        table = _INSTALLED[game] = dict(level_table(game))
    return dict(table)


_INSTALLED: dict[str, dict[str, int]] = {}


def with_nulls(values: np.ndarray, missing: np.ndarray) -> pl.Series:
    """``values`` as Int64, null where ``missing``.

    Examples
    --------
    >>> with_nulls(np.array([3, 4]), np.array([False, True])).to_list()
    [3, None]
    """
    series = pl.Series(np.asarray(values, dtype=np.int64), dtype=pl.Int64)
    return series.scatter(np.flatnonzero(missing), None) if missing.any() else series


@dataclasses.dataclass(frozen=True, eq=False)
class ContestResults:
    """The contest reward with the session's parameters, on every step and per episode and level.

    Attributes
    ----------
    family : ContestFamily
        The family with the session's parameters (what :meth:`ContestSession.export` writes).
    reward : float64 ``[N]``
        The contest reward of every step (the frame's rows, in order).
    done : bool ``[N]``
        The contest's done on every step (a life lost, the level's end reached, a bonus / special stage).
    returns : float64 ``[E]``
        Each episode's return: Neumaier's sum (:func:`rewardlab.analysis.sums.segment_sums`) of its steps up
        to the contest's end, the first step where the contest's done fires (every step when it never
        does).  On a recording made with the same level table that is the recording's last step; with a
        level shortened in the table, the steps the recording holds after the new end (where the contest
        would pay the bonus again on every step) are left out.
    variants : dict of str to float64 ``[E]``
        Each episode's return under each combination of :data:`OPTION_VARIANTS`, with the session's
        scale, bonus, frame limit and level table (``returns`` is one of them).
    episodes : polars.DataFrame
        One row per episode: ``episode`` (its index), ``episode_id``, ``game``, ``state``, ``level``
        (``"zone=Z,act=A"``), ``steps``, ``outcome`` (as recorded: ``finished``, ``lost_life``,
        ``timed_out``, ``stage``), ``finished`` (it reaches its level's end in the session's table),
        ``finish_step`` and ``finish_frame`` (the first step that reaches it and the recording's frame
        after it; null when it never does), ``bonus`` (the time bonus paid on that step: its reward
        minus its reward with bonus 0; 0 when not finished), ``contest_end`` (the first step where the
        contest's done fires; null when it never does), ``ends_early`` (that is before the recording's
        last step, e.g. a shortened level), ``backtracks`` (it ends behind the furthest point it reached,
        so ``AllowBacktracking``, which pays the furthest progress, pays it more) and ``return``.
    levels : polars.DataFrame
        One row per level of the data: ``game``, ``state``, ``level``, ``end_x`` (the session's table),
        ``script_end_x`` (the installed ``script.lua``'s, null for a level it lacks), ``episodes``,
        ``finished`` (episodes reaching the level's end in the session's table), ``recorded_finished``
        (episodes the recording says finished), the recorded ``lost_life`` / ``timed_out`` / ``stage``
        counts of the episodes not finished, ``other`` (not finished, recorded as finished: see
        ``options``), ``finish_rate`` (``finished / episodes``) and ``mean_return``.
    options : polars.DataFrame
        Per episode group (:data:`OUTCOME_GROUPS`, groups without episodes left out): ``group``,
        ``episodes``, ``live`` (the mean return with the session's options) and the mean return under
        each of :data:`OPTION_VARIANTS`.  ``finished``: reaching the level's end in the session's table;
        ``lost a life``, ``timed out``, ``bonus/special stage``: the recorded outcome of the others;
        ``other``: recorded as finished without reaching the end in the table (a lengthened level, or an
        S3K act change seen per timestep, see :mod:`rewardlab.domains.retro.contest`); ``backtracks``:
        ending behind the furthest point reached (also counted in its outcome's group).
    """

    family: ContestFamily
    reward: np.ndarray
    done: np.ndarray
    returns: np.ndarray
    variants: dict
    episodes: pl.DataFrame
    levels: pl.DataFrame
    options: pl.DataFrame

    def __str__(self) -> str:
        e = self.episodes
        return (f"{e.height} episodes, {int(e['finished'].sum())} finished, mean return "
                f"{float(np.mean(self.returns)) if self.returns.size else float('nan'):.6g}")
