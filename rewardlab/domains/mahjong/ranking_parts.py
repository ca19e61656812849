"""The ranking analysis of a dataset folder, part by part: its :class:`RankTable` and reward by final rank.

A part holds whole episodes (one player's game), so each episode's final
rank and each reward's return over it come from one part; a worker reads a
part's few columns and sends back the part's per-episode arrays, which the
driver puts one after the other (rows and games counted across parts).  The
results equal :meth:`RankTable.from_frame` and :func:`reward_by_rank` of the
whole frame.  Memory: the per-episode arrays (tens of bytes an episode).

Examples
--------
>>> table = rank_table_of_dataset("corpus/")  # doctest: +SKIP
>>> dataset_reward_by_rank("rewards/", ["top", "points"])  # doctest: +SKIP
"""

from __future__ import annotations

import numpy as np

from rewardlab.analysis.sums import segment_sums
from rewardlab.analysis.tables import rewards_to_use
from rewardlab.core import columns
from rewardlab.core.errors import FrameError
from rewardlab.domains.mahjong.ranking import RankTable, by_rank_table
from rewardlab.sources.datasets import PartedDataset, read_part_file
from rewardlab.sources.datasets.work import map_parts
from rewardlab.sources.kanachan import schema as S

__all__ = ["rank_table_of_dataset", "dataset_reward_by_rank"]


def _part(item: tuple) -> tuple:
    """One part's RankTable, its episodes' returns per reward, and its first and last game ids."""
    path, rows, index, wanted, names = item
    part = read_part_file(path, rows, columns=wanted)
    table = RankTable.from_frame(part)
    starts = np.concatenate(([0], table.row[:-1] + 1))
    returns = {n: segment_sums(part[columns.reward_column(n)].cast(float).to_numpy(), starts) for n in names}
    ids = part[S.GAME_ID] if S.GAME_ID in part.columns else None
    edges = None if ids is None else (str(ids[0]), str(ids[-1]))
    return table, returns, edges


def _gather(ds: PartedDataset, names: list[str], *, engine: str, workers, address):
    have = set(ds.columns)
    wanted = [c for c in (S.GAME_ID, S.GAME, S.SEAT, S.RESULTS, S.END_OF_GAME) if c in have]
    wanted += [columns.reward_column(n) for n in names]
    if not len(ds):
        raise FrameError(f"the dataset {ds.folder} has no parts", hint="Convert the data again.")
    return map_parts(ds, _part, (wanted, names), engine=engine, workers=workers, address=address,
                     desc="rank table")


def _combine(results, *, has_game: bool) -> tuple[RankTable, dict]:
    tables, returns, rows, games, last_id = [], {}, 0, 0, None
    for table, part_returns, edges in results:
        game = table.game
        if not has_game:  # numbered 1, 2, ... within the part (by game id): shift past the games before it
            straddles = edges is not None and last_id is not None and edges[0] == last_id
            game = game + games - (1 if straddles else 0)  # a game cut by the boundary keeps its number
            games = int(game.max())
            last_id = None if edges is None else edges[1]
        tables.append((table, table.row + rows, game))
        rows += table.n_rows
        for n, x in part_returns.items():
            returns.setdefault(n, []).append(x)
    table = RankTable(rank=np.concatenate([t.rank for t, _, _ in tables]),
                      final_score=np.concatenate([t.final_score for t, _, _ in tables]),
                      row=np.concatenate([r for _, r, _ in tables]),
                      game=np.concatenate([g for _, _, g in tables]),
                      seat=np.concatenate([t.seat for t, _, _ in tables]), n_rows=rows)
    return table, {n: np.concatenate(x) for n, x in returns.items()}


def rank_table_of_dataset(dataset, *, engine: str = "embedded", workers: int | None = None,
                          address: str | None = None) -> RankTable:
    """:meth:`RankTable.from_frame` of a dataset folder, part by part (rows and games counted across parts).

    Examples
    --------
    >>> rank_table_of_dataset("corpus/").probabilities  # doctest: +SKIP
    """
    ds = dataset if isinstance(dataset, PartedDataset) else PartedDataset(dataset)
    results = _gather(ds, [], engine=engine, workers=workers, address=address)
    return _combine(results, has_game=S.GAME in ds.columns)[0]


def dataset_reward_by_rank(dataset, rewards=None, *, confidence: float = 0.95, n_resamples: int = 1000,
                           seed: int | None = 0, engine: str = "embedded", workers: int | None = None,
                           address: str | None = None):
    """:func:`~rewardlab.domains.mahjong.ranking.reward_by_rank` of a rewards dataset folder, part by part.

    Examples
    --------
    >>> dataset_reward_by_rank("rewards/", "top").select("rank", "mean")  # doctest: +SKIP
    """
    ds = dataset if isinstance(dataset, PartedDataset) else PartedDataset(dataset)
    names = rewards_to_use(list(ds.columns), [rewards] if isinstance(rewards, str) else rewards)
    results = _gather(ds, names, engine=engine, workers=workers, address=address)
    table, returns = _combine(results, has_game=S.GAME in ds.columns)
    return by_rank_table(returns, table.rank, confidence=confidence, n_resamples=n_resamples, seed=seed)
