"""The ranking tuner's games of a dataset folder: keys read on demand, a game's steps read from its part.

A :class:`~rewardlab.sessions.ranking.RankingTuningSession` on a dataset
folder (``rewardlab convert ... --out FOLDER``) holds per-game arrays only
(:func:`rewardlab.domains.mahjong.ranking_parts.tuning_tables_of_dataset`);
:class:`FolderGames` finds a game by its index or its key and reads its
steps from the one part that holds it.

Examples
--------
>>> from rewardlab.sessions.ranking_folder import FolderGames
>>> games = FolderGames(PartedDataset("corpus/"), table)  # doctest: +SKIP
>>> games.key(0)  # doctest: +SKIP
{'game_id': ..., 'seat': 0}
"""

from __future__ import annotations

import numpy as np
import polars as pl

from rewardlab.sources.kanachan import schema as S
from rewardlab.core.errors import ParameterError, check_int
from rewardlab.domains.mahjong.ranking import RankTable
from rewardlab.analysis.episodes import EpisodeDetail
from rewardlab.sessions.episodes import open_episode
from rewardlab.sessions.inputs import base_columns
from rewardlab.sources.registry import spec_of
from rewardlab.sources.datasets import PartedDataset

__all__ = ["FolderGames"]


class FolderGames:
    """A dataset folder's games (episodes), as the ranking tuner opens them.

    Parameters
    ----------
    dataset : PartedDataset
        The folder.
    table : RankTable
        Its final ranks, one row per game in data order (``table.row``: the
        row of each game's last step).

    Attributes
    ----------
    keys : dict
        The episode keys read so far, by episode index.

    Examples
    --------
    >>> games = FolderGames(PartedDataset("corpus/"), table)  # doctest: +SKIP
    >>> games.find(games.key(333))  # doctest: +SKIP
    333
    """

    def __init__(self, dataset: PartedDataset, table: RankTable):
        self.dataset = dataset
        self.table = table
        self.keys: dict[int, dict] = {}

    def index(self, episode) -> int:
        """A dataset folder's episode (its index in data order, or its key) as its index."""
        if isinstance(episode, dict):
            key = {k: episode[k] for k in sorted(episode)}
            if key in self.keys.values():
                return next(i for i, k in self.keys.items() if k == key)
            index = self.find(key)
        else:
            index = check_int("episode", episode, low=0, high=max(self.table.rank.size - 1, 0),
                              rule=f"should be an episode index in [0, {self.table.rank.size - 1}] or its key")
        return index

    def key(self, episode: int) -> dict:
        """Episode ``episode`` (data order, as :attr:`table`) as its key values (read once, then kept)."""
        row = int(self.table.row[episode])
        if episode not in self.keys:
            found = self.dataset.take(np.array([row]), list(self.dataset.spec.episode))
            self.keys[episode] = {k: found[k][0] for k in sorted(self.dataset.spec.episode)}
        return dict(self.keys[episode])

    def find(self, key: dict) -> int:
        """The index of the dataset folder's episode with ``key`` (reads the key columns of every part)."""
        names = list(self.dataset.spec.episode)
        if sorted(key) != sorted(names):
            raise ParameterError("episode", f"should name the episode columns {names}", key)
        starts = self.dataset.part_starts()
        for index in range(len(self.dataset)):
            part = self.dataset.read(index, names)
            hit = part.with_row_index("_row").filter(
                pl.all_horizontal([pl.col(k) == key[k] for k in names]))
            if hit.height:
                row = int(starts[index]) + int(hit["_row"][-1])
                at = int(np.searchsorted(self.table.row, row))
                if at < self.table.row.size:
                    self.keys[at] = {k: key[k] for k in sorted(names)}
                    return at
        raise ParameterError("episode", "should be an episode of the data", key)

    def episode(self, episode, rewards: np.ndarray, *, name: str) -> EpisodeDetail:
        """One game step by step, read from its part, with ``rewards`` (one per game) as ``reward_<name>``.

        Parameters
        ----------
        episode : int or dict
            The game's index in data order, or its key.
        rewards : float array ``[E]``
            The reward of each game's last step (every other step's is 0).
        name : str
            The candidate's name in the detail.
        """
        index = self.index(episode)
        part = self.dataset.part_of_row(int(self.table.row[index]))
        start, stop = self.dataset.part_starts()[part:part + 2]
        frame = base_columns(self.dataset.read(part))
        inside = (self.table.row >= start) & (self.table.row < stop)
        reward = np.zeros(frame.height, dtype=np.float64)
        reward[self.table.row[inside] - start] = rewards[inside]
        frame = frame.with_columns(pl.Series(f"reward_{name}", reward), pl.col(S.END_OF_GAME).alias(f"done_{name}"))
        return open_episode(frame, self.key(index), rewards=(name,), spec=spec_of(frame))
