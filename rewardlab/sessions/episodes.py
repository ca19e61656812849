"""Drill-down for every session: one episode of the session's frame, with the domain's facts where they apply.

:func:`open_episode` is what ``session.episode(...)`` calls: it takes an
episode index, a dict of episode key values, or a row of a table the session
shows (a row of ``results.disagreements``: its ``return_a``, ``gap`` ...
columns are dropped, its key columns kept) and returns the
:class:`~rewardlab.analysis.episodes.EpisodeDetail`, with the mahjong scores
and ranks per round when the frame has the mahjong columns.

:func:`episode_tables` is what a person sees of it (the widgets' episode
view): final ranks there read as places, ``"1st"`` ... ``"4th"``, as the
plots' by-rank bars say, in a ``place`` column; the data itself keeps
``rank`` 0-based (0 = first place: :attr:`EpisodeDetail.segments`,
``outcome["rank"]``, frames, JSON and plug-in inputs).  The sub-episode
table is called ``rounds`` on mahjong data, ``sub-episodes`` where the spec
has other boundary flags, and is left out for an episode that has none.

Examples
--------
>>> detail = open_episode(frame, {"game_id": gid, "seat": 0}, rewards=["top"], spec=spec)  # doctest: +SKIP
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping

import numpy as np

import polars as pl

from rewardlab.analysis.episodes import EpisodeDetail, episode_detail
from rewardlab.analysis.scopes import episode_end_expr, segment_id_expr
from rewardlab.core.errors import ParameterError
from rewardlab.core.spec import FrameSpec
from rewardlab.domains.mahjong.episodes import is_mahjong, mahjong_episode_detail
from rewardlab.domains.mahjong.rules import PLACES, place_label

__all__ = ["open_episode", "episode_selector", "episode_at_row", "PLACES", "place_label", "EpisodeTables",
           "episode_tables"]

#: The column a displayed table shows places in, for the data's 0-based ``rank``.
PLACE = "place"


def _places(frame: pl.DataFrame) -> pl.DataFrame:
    """``frame`` with its 0-based ``rank`` column shown as ``place`` (``"1st"`` ...), in the same position."""
    if "rank" not in frame.columns:
        return frame
    places = pl.Series(PLACE, [place_label(r) for r in frame["rank"].to_list()], dtype=pl.String)
    return frame.with_columns(places).select([PLACE if c == "rank" else c for c in frame.columns])


@dataclasses.dataclass(frozen=True, eq=False)
class EpisodeTables:
    """An episode as a person reads it (see :func:`episode_tables`).

    Attributes
    ----------
    heading : str
        The episode's name, length and how it ended.
    summary : polars.DataFrame
        ``what`` / ``value``: the outcome, a final rank shown as ``place`` (``"2nd"``).
    segments_title : str or None
        ``"rounds ..."`` (mahjong), ``"sub-episodes ..."`` (other boundary
        flags), None when the episode has no sub-episodes.
    segments : polars.DataFrame or None
        The sub-episodes, ``rank`` shown as ``place``; None with the title.
    steps : polars.DataFrame
        Every step.
    """

    heading: str
    summary: pl.DataFrame
    segments_title: str | None
    segments: pl.DataFrame | None
    steps: pl.DataFrame


def episode_tables(detail: EpisodeDetail) -> EpisodeTables:
    """What the episode view shows of ``detail``: places instead of 0-based ranks, sub-episodes only where they are.

    Examples
    --------
    >>> from rewardlab.analysis.episodes import episode_detail
    >>> f = pl.DataFrame({"e": [0, 0], "reward_a": [1.0, 2.0]})
    >>> t = episode_tables(episode_detail(f, 0, spec=FrameSpec(name="s", episode=("e",))))
    >>> t.heading, t.segments_title
    ('e 0: 2 steps, unflagged', None)
    """
    if not isinstance(detail, EpisodeDetail):
        raise ParameterError("detail", "should be an EpisodeDetail (session.episode(...))", type(detail).__name__)
    outcome = {(PLACE if k == "rank" else k): (place_label(v) if k == "rank" else v)
               for k, v in detail.outcome.items()}
    summary = pl.DataFrame({"what": list(outcome), "value": [str(v) for v in outcome.values()]},
                           schema={"what": pl.String, "value": pl.String})
    mahjong = "rank" in detail.segments.columns or "end_of_round" in detail.boundaries
    if mahjong:
        title = "rounds (each ends at the round's end or the game's end; place after the round):"
    elif detail.boundaries:
        title = f"sub-episodes (each ends at {' or '.join(detail.boundaries)} or the episode's end):"
    else:
        title = None
    return EpisodeTables(heading=f"{detail.title}: {detail.length} steps, {detail.ended}", summary=summary,
                         segments_title=title, segments=None if title is None else _places(detail.segments),
                         steps=detail.steps)


def episode_selector(episode, spec: FrameSpec):
    """``episode`` as :func:`~rewardlab.analysis.episodes.episode_detail` takes it.

    An int stays; a mapping (a table row) keeps the spec's episode key
    columns when it holds them all, else its ``episode`` index.

    Examples
    --------
    >>> episode_selector({"episode": 4, "e": 9, "gap": 1.5}, FrameSpec(name="s", episode=("e",)))
    {'e': 9}
    """
    if isinstance(episode, Mapping):
        row = dict(episode)
        if spec.episode and all(k in row for k in spec.episode):
            return {k: row[k] for k in spec.episode}
        if "episode" in row:
            return {"episode": row["episode"]}
        return row  # episode_detail names what is wrong
    if isinstance(episode, (int, np.integer)) and not isinstance(episode, (bool, np.bool_)):
        return int(episode)
    raise ParameterError("episode", "should be an episode index (int), a dict of episode key values, or a "
                         "row of the most disagreeing episodes", episode)


def open_episode(frame, episode, *, rewards, spec: FrameSpec) -> EpisodeDetail:
    """The session frame's episode ``episode`` for candidates ``rewards`` (mahjong facts when the frame has them).

    Examples
    --------
    >>> open_episode(frame, 0, rewards=["top"], spec=spec).returns  # doctest: +SKIP
    """
    which = episode_selector(episode, spec)
    if is_mahjong(frame.columns):
        return mahjong_episode_detail(frame, which, rewards=list(rewards), spec=spec)
    return episode_detail(frame, which, rewards=list(rewards), spec=spec)


def episode_at_row(frame: pl.DataFrame, row: int, *, spec: FrameSpec):
    """The episode that row ``row`` of ``frame`` belongs to, as :func:`open_episode` takes it.

    Its key values when the spec names episode key columns, else its index.

    Examples
    --------
    >>> spec = FrameSpec(name="s", episode=("e",))
    >>> episode_at_row(pl.DataFrame({"e": [7, 7, 9]}), 2, spec=spec)
    {'e': 9}
    >>> episode_at_row(pl.DataFrame({"e": [7, 7, 9]}), 1, spec=FrameSpec(name="t"))
    0
    """
    if not 0 <= row < frame.height:
        raise ParameterError("row", f"should be a row of the frame, 0 ... {frame.height - 1}", row)
    if spec.episode and all(k in frame.columns for k in spec.episode):
        return {k: frame[k][row] for k in spec.episode}
    ids = frame.select(segment_id_expr(episode_end_expr(frame.columns, spec)))
    return int(ids.to_series()[row])
