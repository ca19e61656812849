"""One player's game in detail: :func:`rewardlab.analysis.episodes.episode_detail` plus scores and ranks per round.

At each round's end (``end_of_round``, and the game's last step, which
kanachan's offline files mark ``end_of_round=False``) the ``results`` column
holds the round's score deltas (``results[0:4]``) and the scores after it
(``results[4:8]``), seats 0-3; at the game's end, the final scores.  The
rank after each round follows kanachan's rule
(:func:`rewardlab.domains.mahjong.rules.ranks_from_scores`).

Examples
--------
>>> d = mahjong_episode_detail(frame, {"game_id": gid, "seat": 2})  # doctest: +SKIP
>>> d.segments.select("segment", "score", "rank")  # doctest: +SKIP
>>> d.outcome["rank"], d.outcome["final_scores"]  # doctest: +SKIP
"""

from __future__ import annotations

import dataclasses
from typing import Sequence

import numpy as np
import polars as pl

from rewardlab.analysis.episodes import EpisodeDetail, episode_detail
from rewardlab.analysis.tables import column_names, lazy_table
from rewardlab.core.spec import FrameSpec
from rewardlab.domains.mahjong.rules import ranks_from_scores, require_mahjong
from rewardlab.sources.kanachan import schema as S

__all__ = ["mahjong_episode_detail", "is_mahjong", "MAHJONG_EPISODE_COLUMNS"]

#: The columns the per-round scores and ranks read.
MAHJONG_EPISODE_COLUMNS = (S.SEAT, S.RESULTS, S.END_OF_ROUND, S.END_OF_GAME)


def is_mahjong(names: Sequence[str]) -> bool:
    """True when a frame's columns hold what :func:`mahjong_episode_detail` reads.

    Examples
    --------
    >>> is_mahjong(["game_id", "seat", "results", "end_of_round", "end_of_game"]), is_mahjong(["t"])
    (True, False)
    """
    return all(c in names for c in MAHJONG_EPISODE_COLUMNS)


def mahjong_episode_detail(data, episode, *, rewards=None, spec: FrameSpec | None = None,
                           columns: Sequence[str] = ()) -> EpisodeDetail:
    """:func:`~rewardlab.analysis.episodes.episode_detail` with the scores and rank after every round.

    Parameters
    ----------
    data, episode, rewards, spec, columns
        As for :func:`~rewardlab.analysis.episodes.episode_detail`; the data
        needs ``seat``, ``results``, ``end_of_round`` and ``end_of_game``.

    Returns
    -------
    EpisodeDetail
        Its ``segments`` (one row per round) gain ``delta`` and ``score``
        (the player's), ``rank`` (0 = top, after the round), ``deltas`` and
        ``scores`` (seats 0-3); its ``outcome`` gains ``seat``,
        ``final_score``, ``rank`` and ``final_scores`` (from the game's last
        step).

    Examples
    --------
    >>> d = mahjong_episode_detail(frame, 0)  # doctest: +SKIP
    >>> d.outcome["rank"]  # doctest: +SKIP
    """
    lf, _ = lazy_table(data)
    names = column_names(lf)
    require_mahjong(names, MAHJONG_EPISODE_COLUMNS, "the scores and ranks per round")
    extra = [columns] if isinstance(columns, str) else list(columns)
    asked = [*extra, *(c for c in (S.SEAT, S.RESULTS) if c not in extra)]
    detail = episode_detail(lf, episode, rewards=rewards, spec=spec, columns=asked)
    steps = detail.steps
    ends = (steps[S.END_OF_ROUND] | steps[S.END_OF_GAME]).to_numpy()
    ends[-1] = True  # the segments' rule: the episode's last step ends its last round
    results = steps[S.RESULTS].to_numpy().reshape(steps.height, S.RL_NUM_RESULTS)[ends].astype(np.int64)
    seat = int(steps[S.SEAT][0])
    scores = results[:, S.RESULTS_SCORES]
    deltas = results[:, S.RESULTS_DELTAS]
    seats = np.full(scores.shape[0], seat, dtype=np.int64)
    ranks = ranks_from_scores(scores, seats)
    segments = detail.segments.with_columns(
        pl.Series("delta", deltas[:, seat]), pl.Series("score", scores[:, seat]), pl.Series("rank", ranks),
        pl.Series("deltas", deltas.tolist(), dtype=pl.Array(pl.Int64, 4)),
        pl.Series("scores", scores.tolist(), dtype=pl.Array(pl.Int64, 4)))
    finished = bool(steps[S.END_OF_GAME][-1])
    outcome = dict(detail.outcome) | {
        "seat": seat, "final_score": int(scores[-1, seat]) if finished else None,
        "rank": int(ranks[-1]) if finished else None,
        "final_scores": scores[-1].tolist() if finished else None}
    keep = [c for c in steps.columns if c not in (S.SEAT, S.RESULTS) or c in extra]
    return dataclasses.replace(detail, steps=steps.select(keep), segments=segments, outcome=outcome)
