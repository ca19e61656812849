"""Where a frame's episodes end, and where to cut its rows into pieces of whole episodes.

One rule cuts a frame into shards (:func:`rewardlab.plugins.shards.split_shards`),
a dataset into parts (:func:`rewardlab.sources.datasets.parts.episode_cuts`)
and spooled chunks into parts (:mod:`rewardlab.sources.datasets.spooled_parts`,
which knows only the episodes' ends): a piece ends at the first episode end
at or past ``rows`` rows from its start.

Examples
--------
>>> import polars as pl
>>> from rewardlab.core.spec import FrameSpec
>>> ends = frame_episode_ends(pl.DataFrame({"e": [0, 0, 1, 2, 2, 2]}), FrameSpec(name="s", episode=("e",)))
>>> ends.tolist(), cuts_at_ends(ends, 2)
([2, 3, 6], [2, 6])
"""

from __future__ import annotations

import bisect

import numpy as np
import polars as pl

from rewardlab.core.errors import ParameterError
from rewardlab.core.spec import FrameSpec

__all__ = ["episode_ends", "frame_episode_ends", "cuts_at_ends"]


def episode_ends(end_of_game: np.ndarray) -> np.ndarray:
    """Exclusive end positions of the episodes, from the ``end_of_game`` flags.

    Parameters
    ----------
    end_of_game : bool array of shape ``[N]``
        True on the last row of each episode; the last row must be True
        (every episode complete) unless ``N == 0``.

    Returns
    -------
    numpy.ndarray of shape ``[E]``, int64
        ``ends[k]`` is one past the last row of episode ``k``; ``ends[-1] == N``.

    Examples
    --------
    >>> episode_ends(np.array([False, True, True]))
    array([2, 3])
    """
    eog = np.asarray(end_of_game)
    if eog.ndim != 1 or eog.dtype != np.bool_:
        raise ParameterError("end_of_game", "should be a 1-D bool array",
                             f"array of dtype {eog.dtype} and shape {eog.shape}")
    if eog.size and not eog[-1]:
        raise ParameterError("end_of_game", "should be True on the last row (complete episodes)",
                             "False on the last row", hint="Pass whole episodes.")
    return np.flatnonzero(eog).astype(np.int64) + 1


def frame_episode_ends(frame: pl.DataFrame, spec: FrameSpec) -> np.ndarray:
    """:func:`episode_ends` of ``frame``'s rows, by ``spec``'s episode keys.

    Examples
    --------
    >>> from rewardlab.core.spec import FrameSpec
    >>> frame_episode_ends(pl.DataFrame({"e": [0, 0, 1]}), FrameSpec(name="s", episode=("e",))).tolist()
    [2, 3]
    """
    if frame.height == 0:
        return np.zeros(0, np.int64)
    return episode_ends(frame.select(spec.episode_end(frame.columns)).to_series().to_numpy())


def cuts_at_ends(ends: np.ndarray, rows: int) -> list[int]:
    """The end row of each piece of whole episodes of at least ``rows`` rows (the last may be smaller), from the
    episodes' ends alone (:func:`episode_ends`, :func:`frame_episode_ends`).

    Examples
    --------
    >>> cuts_at_ends(np.array([2, 3, 6]), 2), cuts_at_ends(np.array([2, 3, 6]), 10), cuts_at_ends(np.array([]), 2)
    ([2, 6], [6], [])
    """
    cuts, start, height = [], 0, int(ends[-1]) if len(ends) else 0
    while start < height:
        k = bisect.bisect_left(ends, start + rows)
        stop = int(ends[min(k, len(ends) - 1)])
        cuts.append(stop)
        start = stop
    return cuts
