"""Episode rules of an RLlib load: step order, ``new_obs`` against the next ``obs``, flags at the ends.

Of ``new_obs`` only each episode's last value is kept (its final observation,
which no following ``obs`` holds): :func:`episode_checks` returns them, one
per episode, and :func:`rewardlab.sources.values.final_state_column` puts them on the episodes' last rows.

Examples
--------
>>> format_key(7, 0)
'episode 7 agent 0'
"""

from __future__ import annotations

import numpy as np
import polars as pl

from rewardlab.sources.rllib.files import unit_name
from rewardlab.sources.values import rows_differ, values_text

__all__ = ["format_key", "episode_checks", "stack_rows", "unit_text"]


def format_key(eps, agent) -> str:
    """How a message names an episode and agent."""
    return f"episode {eps!r} agent {agent!r}"


def episode_checks(frame: pl.DataFrame, kind: str, derived_t: bool, unfinished: str, names: list[str]):
    """The whole load's episodes, sorted and checked.

    Returns
    -------
    frame : pl.DataFrame
        The rows sorted by episode (each (episode, agent) in one block, in
        order of first appearance), without ``new_obs``.
    episode : int64 array of shape ``[N]``
        Each row's episode ordinal (0, 1, ...: the blocks' order).
    problems : list
        ``(row, column, rule, message)`` per broken rule.
    finals : array of shape ``[E]`` or ``[E, width]``, or None
        Each episode's last ``new_obs`` (its final observation), by episode
        ordinal; None when the rows have no ``new_obs``.
    """
    n = frame.height
    codes = frame.select(pl.struct("eps_id", "agent").rank("dense").cast(pl.Int64) - 1).to_series().to_numpy()
    first = np.full(int(codes.max()) + 1 if n else 0, n, dtype=np.int64)
    np.minimum.at(first, codes, np.arange(n, dtype=np.int64))
    rank = np.empty_like(first)
    rank[np.argsort(first, kind="stable")] = np.arange(first.size)
    episode = rank[codes]
    order = np.argsort(episode, kind="stable")
    frame = frame[order]
    episode = episode[order]
    start = np.ones(n, dtype=bool)
    start[1:] = episode[1:] != episode[:-1]
    end = np.ones(n, dtype=bool)
    end[:-1] = start[1:]
    if derived_t:
        starts = np.flatnonzero(start)
        t = np.arange(n, dtype=np.int64) - np.repeat(starts, np.diff(np.append(starts, n)))
        frame = frame.with_columns(pl.Series("t", t))
    problems = []
    t = frame["t"].to_numpy()
    bad = np.flatnonzero(~start[1:] & (t[1:] <= t[:-1])) + 1
    for r in bad:  # every one: each marks its episode (skip mode drops them all)
        problems.append((int(r), "t", "step_order",
                         f"step t={t[r]} follows t={t[r - 1]} ({unit_text(frame, r - 1, kind, names)}) within "
                         f"the episode: steps should increase (repeated or out of order)"))
    bad_steps = set(bad.tolist())
    if "new_obs" in frame.columns:
        obs, new_obs = stack_rows(frame["obs"]), stack_rows(frame["new_obs"])
        differ = np.zeros(n, dtype=bool)
        if n > 1:
            differ[:-1] = ~end[:-1] & rows_differ(new_obs[:-1], obs[1:])
        for r in np.flatnonzero(differ):
            if r + 1 in bad_steps:
                continue
            problems.append((int(r), "new_obs", "next_obs_mismatch",
                             f"step t={t[r]}: new_obs {values_text(new_obs[r])} differs from the obs "
                             f"{values_text(obs[r + 1])} of the following step t={t[r + 1]} "
                             f"({unit_text(frame, r + 1, kind, names)})"))
        finals = new_obs[end]  # one per episode, in ordinal order (a copy: the column goes)
        del obs, new_obs
        frame = frame.drop("new_obs")
    else:
        finals = None
    terminated = frame["terminated"].to_numpy()
    truncated = frame["truncated"].to_numpy()
    for r in np.flatnonzero((terminated | truncated) & ~end):
        flag = "terminateds" if terminated[r] else "truncateds"
        problems.append((int(r), flag, "flag_before_end",
                         f"step t={t[r]} is {flag[:-1]} but the episode goes on at step t={t[r + 1]} "
                         f"({unit_text(frame, r + 1, kind, names)})"))
    open_end = end & ~(terminated | truncated)
    if unfinished == "truncate":
        frame = frame.with_columns(pl.Series("truncated", truncated | open_end))
    else:
        for r in np.flatnonzero(open_end):
            problems.append((int(r), "terminateds", "unfinished",
                             f"the episode's last step t={t[r]} has neither terminateds nor truncateds "
                             "set (the recording stopped mid-episode?)"))
    return frame, episode, problems, finals


def stack_rows(series: pl.Series) -> np.ndarray:
    """A column's rows as one NumPy array (list columns stacked)."""
    arr = series.to_numpy()
    return np.stack(arr) if arr.dtype == object else arr


def unit_text(frame: pl.DataFrame, row: int, kind: str, names: list[str]) -> str:
    """The file and line (row group) a row of the frame came from."""
    row = int(row)
    return f"{names[frame['_file'][row]]} {unit_name(kind, int(frame['_unit'][row]))}"
