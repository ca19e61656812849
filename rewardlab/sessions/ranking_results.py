"""What a ranking reward does on the data: the ranking tuner's results (:class:`RankingResults`).

Computed from the precomputed per-game arrays (the families'
:class:`~rewardlab.domains.mahjong.families.PreparedFrame` and a
:class:`~rewardlab.domains.mahjong.ranking.RankTable`) by
:func:`ranking_results`: a gather over episodes plus a few reductions, the
same for a frame and a dataset folder.

Examples
--------
>>> from rewardlab.sessions.ranking_results import RankingResults, ranking_results
>>> r = ranking_results(session.family, session.prepared, session.table)  # doctest: +SKIP
>>> r.by_rank_table().columns  # doctest: +SKIP
['reward', 'rank', 'mean']
"""

from __future__ import annotations

import dataclasses
import math

import numpy as np
import polars as pl

from rewardlab.sources.kanachan import schema as S
from rewardlab.domains.mahjong.ranking import RankTable, expected_reward

__all__ = ["RankingResults", "ranking_results", "HIST_BINS"]

#: Bins of the histogram of the reward (:attr:`RankingResults.histogram_counts`).
HIST_BINS = 40


@dataclasses.dataclass(frozen=True, eq=False)
class RankingResults:
    """What a ranking reward does on the data (see :class:`RankingTuningSession`).

    ``raw`` is the reward before normalization (``vector[rank]``, plus the
    points term when on), ``reward`` after (``(raw - mean) / std``), both
    per episode, i.e. at the end-of-game steps; every other step gets 0.

    Attributes
    ----------
    family : RewardFamily
        :class:`~rewardlab.domains.mahjong.families.Ranking` or
        :class:`~rewardlab.domains.mahjong.families.RankingPoints` with the session's parameters.
    raw, reward : float64 arrays ``[E]``
        Per episode (end-of-game step), in data order.
    raw_moments, reward_moments : Moments
        Over the end-of-game steps, before and after normalization.
    raw_moments_all, reward_moments_all : Moments
        Over every step (zeros off the end of the game).
    histogram_counts : int array ``[B]``
    histogram_edges : float array ``[B + 1]``
        Histogram of ``reward`` (end-of-game steps).
    zero_steps : int
        Steps whose reward is exactly 0.
    rank_counts, rank_probabilities : arrays ``[4]``
        The data's final-rank distribution.
    raw_mean_by_rank, mean_by_rank : float arrays ``[4]``
        Mean reward per final rank (NaN for an absent rank).
    expected_raw, expected_reward : float
        Expected per-game reward under the data's rank distribution
        (``sum_k p[k] * mean_by_rank[k]``), before and after normalization.

    Examples
    --------
    >>> r = RankingTuningSession("data/sample.tsv.gz").results  # doctest: +SKIP
    >>> r.reward_moments.mean, r.reward_moments.std  # doctest: +SKIP
    """

    family: object
    raw: np.ndarray
    reward: np.ndarray
    raw_moments: object
    reward_moments: object
    raw_moments_all: object
    reward_moments_all: object
    histogram_counts: np.ndarray
    histogram_edges: np.ndarray
    zero_steps: int
    rank_counts: np.ndarray
    rank_probabilities: np.ndarray
    raw_mean_by_rank: np.ndarray
    mean_by_rank: np.ndarray
    expected_raw: float
    expected_reward: float

    def by_rank_table(self, name: str = "reward") -> pl.DataFrame:
        """Mean reward per final rank as the frame :func:`rewardlab.plot_reward_by_rank` draws.

        Examples
        --------
        >>> results.by_rank_table().columns  # doctest: +SKIP
        ['reward', 'rank', 'mean']
        """
        return pl.DataFrame({"reward": [name] * S.NUM_SEATS, "rank": list(range(S.NUM_SEATS)),
                             "mean": self.mean_by_rank},
                            schema={"reward": pl.String, "rank": pl.Int64, "mean": pl.Float64})

    def __str__(self) -> str:
        b, a = self.raw_moments, self.reward_moments
        by_rank = ", ".join(f"{v:.4g}" for v in self.mean_by_rank)
        return (f"{self.family.describe()}\n"
                f"end-of-game steps ({b.count:,}): before mean {b.mean:.4g} std {b.std:.4g}; "
                f"after mean {a.mean:.4g} std {a.std:.4g}\n"
                f"mean reward by final rank: {by_rank}; expected reward {self.expected_reward:.4g}")


def ranking_results(family, prepared, table: RankTable, *, counts: np.ndarray | None = None,
                    probabilities: np.ndarray | None = None) -> RankingResults:
    """What ``family`` (a ranking reward with its constants) does on the data: :class:`RankingResults`.

    Parameters
    ----------
    family : RewardFamily
        :class:`~rewardlab.domains.mahjong.families.Ranking` or
        :class:`~rewardlab.domains.mahjong.families.RankingPoints`.
    prepared : PreparedFrame
        What the families read (:func:`rewardlab.domains.mahjong.families.prepare_frame`).
    table : RankTable
        The data's final ranks (:class:`rewardlab.domains.mahjong.ranking.RankTable`).
    counts, probabilities : arrays ``[4]``, optional
        ``table.counts`` and ``table.probabilities``, when already at hand (a
        session computes them once).

    Examples
    --------
    >>> ranking_results(session.family, session.prepared, session.table).expected_reward  # doctest: +SKIP
    """
    counts = table.counts if counts is None else counts
    probabilities = table.probabilities if probabilities is None else probabilities
    p = family.params
    raw = family.raw_values(prepared)
    reward = (raw - p.mean) / p.std  # the same IEEE operations as family.evaluate()
    hist, edges = np.histogram(reward, bins=HIST_BINS) if reward.size else (
        np.zeros(HIST_BINS, np.int64), np.linspace(-1.0, 1.0, HIST_BINS + 1))
    raw_by_rank = table.mean_by_rank(raw)
    by_rank = table.mean_by_rank(reward)
    expected_raw = expected_reward(np.nan_to_num(raw_by_rank, nan=0.0), probabilities) \
        if reward.size else math.nan
    return RankingResults(
        family=family, raw=raw, reward=reward,
        raw_moments=table.moments(raw, scope="end_of_game"),
        reward_moments=table.moments(reward, scope="end_of_game"),
        raw_moments_all=table.moments(raw, scope="all"),
        reward_moments_all=table.moments(reward, scope="all"),
        histogram_counts=hist, histogram_edges=edges,
        zero_steps=int(table.n_rows - reward.size + np.count_nonzero(reward == 0)),
        rank_counts=counts, rank_probabilities=probabilities,
        raw_mean_by_rank=raw_by_rank, mean_by_rank=by_rank,
        expected_raw=float(expected_raw), expected_reward=float((expected_raw - p.mean) / p.std),
    )
