"""Mahjong facts as pure array functions: final ranks and scores of episodes.

Ranks follow kanachan's rule (the wiki's ranking example): a player's rank
counts the players with a higher final score; among equal scores the lower
seat ranks higher.  Rank 0 is first place.

Examples
--------
>>> import numpy as np
>>> from rewardlab.domains.mahjong.rules import ranks_from_scores
>>> scores = np.array([[25000, 25000, 30000, 20000]])
>>> ranks_from_scores(scores, np.array([1]))
array([2])
"""

from __future__ import annotations

import numpy as np
import polars as pl

from rewardlab.sources.kanachan import schema as S
from rewardlab.core.errors import ParameterError, SpecError

__all__ = ["ranks_from_scores", "episode_outcomes", "require_mahjong", "PLACES", "place_label"]


#: Final places as people read them (rank 0 is ``"1st"``), as the by-rank plots label their bars.
PLACES = ("1st", "2nd", "3rd", "4th")


def place_label(rank) -> str | None:
    """A 0-based final rank as a place (``0`` -> ``"1st"``); None stays None (an unfinished game).

    Examples
    --------
    >>> place_label(0), place_label(3), place_label(None)
    ('1st', '4th', None)
    """
    if rank is None:
        return None
    if isinstance(rank, (bool, np.bool_)) or not isinstance(rank, (int, np.integer)) or not 0 <= rank < len(PLACES):
        raise ParameterError("rank", f"should be a final rank 0 ... {len(PLACES) - 1} (0 = first place)", rank)
    return PLACES[int(rank)]


def require_mahjong(names, columns, what: str) -> None:
    """Refuse data that lacks the mahjong columns ``what`` needs, naming every missing one.

    The ranking analyses, the reward families and the outcome tables read a
    kanachan-style frame (seats, final scores in ``results``, ``end_of_game``);
    a frame of another source gets this error instead of a wrong answer.

    Examples
    --------
    >>> require_mahjong(["episode", "reward_a"], ("seat", "results"), "the by-rank table")
    Traceback (most recent call last):
    ...
    rewardlab.core.errors.SpecError: the by-rank table is a mahjong analysis and needs the columns seat, results, which the data lacks (it has episode, reward_a). Load kanachan data (rewardlab.load_kanachan); for a rewards table, pass the full frame instead (the dataset with reward columns, e.g. from apply_plugins) or join it to the dataset on game_id, seat, step
    """
    names = list(names)
    missing = [c for c in columns if c not in names]
    if missing:
        shown = ", ".join(names[:12]) + (", ..." if len(names) > 12 else "")
        raise SpecError(f"{what} is a mahjong analysis and needs the columns {', '.join(missing)}, which "
                        f"the data lacks (it has {shown})",
                        hint="Load kanachan data (rewardlab.load_kanachan); for a rewards table, pass the "
                        "full frame instead (the dataset with reward columns, e.g. from apply_plugins) or "
                        "join it to the dataset on game_id, seat, step")


def ranks_from_scores(scores: np.ndarray, seat: np.ndarray) -> np.ndarray:
    """Final rank (0 = top) of ``seat`` given the four final ``scores``.

    Parameters
    ----------
    scores : array of shape ``[N, 4]``
        Final scores of seats 0-3 (``results[4:8]`` on end-of-game rows).
    seat : int array of shape ``[N]``
        The player whose rank is wanted, 0-3.

    Returns
    -------
    numpy.ndarray of shape ``[N]``, int64
        ``#{j < seat: scores[j] >= score} + #{j > seat: scores[j] > score}``.

    Examples
    --------
    >>> ranks_from_scores(np.array([[30000, 30000, 20000, 20000]]), np.array([0]))
    array([0])
    """
    scores = np.asarray(scores)
    seat = np.asarray(seat).astype(np.int64)
    if scores.ndim != 2 or scores.shape[1] != S.NUM_SEATS:
        raise ParameterError("scores", "should have shape [N, 4]", scores.shape)
    if seat.shape != scores.shape[:1]:
        raise ParameterError("seat", f"should have shape [{scores.shape[0]}]", seat.shape)
    if seat.size and (seat.min() < 0 or seat.max() > 3):
        raise ParameterError("seat", "should be in [0, 3]", int(seat.min() if seat.min() < 0 else seat.max()))
    own = np.take_along_axis(scores, seat[:, None], axis=1)
    j = np.arange(S.NUM_SEATS)[None, :]
    before = (j < seat[:, None]) & (scores >= own)
    after = (j > seat[:, None]) & (scores > own)
    return (before | after).sum(axis=1).astype(np.int64)


def episode_outcomes(frame: pl.DataFrame | pl.LazyFrame) -> pl.DataFrame:
    """One row per episode (player in a game): final score, rank and the four final scores.

    Parameters
    ----------
    frame : polars.DataFrame or LazyFrame
        The common frame (only its end-of-game rows are read).

    Returns
    -------
    polars.DataFrame
        Columns ``game_id``, ``game``, ``seat``, ``final_score`` (Int32),
        ``rank`` (UInt8, 0 = top), ``final_scores`` (Array(Int32, 4)), in
        frame order.

    Examples
    --------
    >>> outcomes = episode_outcomes(frame)  # doctest: +SKIP
    >>> outcomes["rank"].value_counts()  # doctest: +SKIP
    """
    lf = frame.lazy()
    names = lf.collect_schema().names()
    require_mahjong(names, (S.GAME_ID, S.GAME, S.SEAT, S.RESULTS, S.END_OF_GAME), "the outcome table")
    ends = (
        lf.filter(pl.col(S.END_OF_GAME))
        .select(S.GAME_ID, S.GAME, S.SEAT,
                pl.col(S.RESULTS).arr.slice(4, 4).list.to_array(4).alias("final_scores"))
        .collect()
    )
    scores = ends["final_scores"].to_numpy().reshape(-1, S.NUM_SEATS)
    seat = ends[S.SEAT].to_numpy()
    ranks = ranks_from_scores(scores, seat) if ends.height else np.zeros(0, dtype=np.int64)
    own = np.take_along_axis(scores, seat.astype(np.int64)[:, None], axis=1)[:, 0] if ends.height else np.zeros(0)
    return ends.with_columns(
        pl.Series("final_score", own.astype(np.int32)),
        pl.Series("rank", ranks.astype(np.uint8)),
    ).select(S.GAME_ID, S.GAME, S.SEAT, "final_score", "rank", "final_scores")
