"""Drill-down for every session: one episode of the session's frame, with the domain's facts where they apply.

:func:`open_episode` is what ``session.episode(...)`` calls: it takes an
episode index, a dict of episode key values, or a row of a table the session
shows (a row of ``results.disagreements``: its ``return_a``, ``gap`` ...
columns are dropped, its key columns kept) and returns the
:class:`~rewardlab.analysis.episodes.EpisodeDetail`, with the mahjong scores
and ranks per round when the frame has the mahjong columns.

Examples
--------
>>> detail = open_episode(frame, {"game_id": gid, "seat": 0}, rewards=["top"], spec=spec)  # doctest: +SKIP
"""

from __future__ import annotations

from collections.abc import Mapping

import numpy as np

import polars as pl

from rewardlab.analysis.episodes import EpisodeDetail, episode_detail
from rewardlab.analysis.scopes import episode_end_expr, segment_id_expr
from rewardlab.core.errors import ParameterError
from rewardlab.core.spec import FrameSpec
from rewardlab.domains.mahjong.episodes import is_mahjong, mahjong_episode_detail

__all__ = ["open_episode", "episode_selector", "episode_at_row"]


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
