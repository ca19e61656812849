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
from rewardlab.domains.mahjong.families.prepared import ENDS_COLUMNS, PreparedFrame
from rewardlab.domains.mahjong.families.prepared_parts import PreparedParts, ends_of_part
from rewardlab.domains.mahjong.ranking import RankTable, by_rank_table
from rewardlab.sources.datasets import PartedDataset, read_part_file
from rewardlab.sources.datasets.work import map_parts
from rewardlab.sources.kanachan import schema as S

__all__ = ["rank_table_of_dataset", "dataset_reward_by_rank", "tuning_tables_of_dataset", "rank_part",
           "combine_rank_parts", "rank_columns"]


def _part(item: tuple) -> tuple:
    path, rows, index, wanted, names = item
    return rank_part(read_part_file(path, rows, columns=wanted), names)


def rank_part(part, names=()) -> tuple:
    """One part's contribution: its RankTable, its episodes' returns per reward in ``names``, its first and
    last game ids (for :func:`combine_rank_parts`)."""
    table = RankTable.from_frame(part)
    starts = np.concatenate(([0], table.row[:-1] + 1))
    returns = {n: segment_sums(part[columns.reward_column(n)].cast(float).to_numpy(), starts) for n in names}
    ids = part[S.GAME_ID] if S.GAME_ID in part.columns else None
    edges = None if ids is None else (str(ids[0]), str(ids[-1]))
    return table, returns, edges


def rank_columns(ds: PartedDataset) -> list[str]:
    """The columns of ``ds`` that :func:`rank_part` reads (besides rewards)."""
    have = set(ds.columns)
    return [c for c in (S.GAME_ID, S.GAME, S.SEAT, S.RESULTS, S.END_OF_GAME) if c in have]


def _gather(ds: PartedDataset, names: list[str], *, engine: str, workers, address):
    wanted = rank_columns(ds) + [columns.reward_column(n) for n in names]
    if not len(ds):
        raise FrameError(f"the dataset {ds.folder} has no parts", hint="Convert the data again.")
    return map_parts(ds, _part, (wanted, names), engine=engine, workers=workers, address=address,
                     desc="rank table")


def combine_rank_parts(results, *, has_game: bool) -> tuple[RankTable, dict]:
    """The parts' contributions (:func:`rank_part`, in part order) as one RankTable (rows and games counted
    across parts) and the episodes' returns per reward."""
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
    return combine_rank_parts(results, has_game=S.GAME in ds.columns)[0]


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
    table, returns = combine_rank_parts(results, has_game=S.GAME in ds.columns)
    return by_rank_table(returns, table.rank, confidence=confidence, n_resamples=n_resamples, seed=seed)


def _tuning_part(item: tuple) -> tuple:
    path, rows, index, wanted, rounds = item
    part = read_part_file(path, rows, columns=wanted)
    return ends_of_part(part, where=f"{path}: ", rounds=rounds), rank_part(part)


def tuning_tables_of_dataset(dataset, *, rounds: bool = False, engine: str = "embedded", workers: int | None = None,
                             address: str | None = None, progress: bool | None = None
                             ) -> tuple[PreparedFrame, RankTable]:
    """What the ranking tuner precomputes, in one pass over a dataset folder's parts: the families'
    :class:`PreparedFrame` (as :func:`~rewardlab.domains.mahjong.families.prepared_parts.prepare_dataset`)
    and the :class:`RankTable` (as :func:`rank_table_of_dataset`).

    Each part's few columns are read once, in the engine's workers; memory is
    per game (and per round with ``rounds``), never per row.

    Examples
    --------
    >>> prepared, table = tuning_tables_of_dataset("corpus/")  # doctest: +SKIP
    >>> bool((prepared.rank == table.rank).all())  # doctest: +SKIP
    True
    """
    ds = dataset if isinstance(dataset, PartedDataset) else PartedDataset(dataset)
    if not len(ds):
        raise FrameError(f"the dataset {ds.folder} has no parts", hint="Convert the data again.")
    wanted = list(dict.fromkeys([*ENDS_COLUMNS, *rank_columns(ds)]))
    rank_results = []
    with PreparedParts(rounds=rounds) as acc:
        for ends, ranks in map_parts(ds, _tuning_part, (wanted, bool(rounds)), engine=engine, workers=workers,
                                     address=address, progress=progress, desc="tuning tables"):
            acc.add(ends)
            rank_results.append(ranks)
        prepared = acc.finish(source=str(ds.folder))
    return prepared, combine_rank_parts(rank_results, has_game=S.GAME in ds.columns)[0]
