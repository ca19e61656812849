"""Ranking analysis for mahjong datasets: final-rank distribution, reward per rank, stable rank, CIs.

The precomputed path
--------------------
:class:`RankTable` reads a frame once and keeps, per episode (one player's
game), the final rank, the final score and the row index of the end-of-game
step.  Re-evaluating a rank reward ``v`` (a 4-vector: reward for 1st..4th)
is then a gather and a few reductions over episodes, with no pass over the
transitions::

    table = RankTable.from_frame(frame)           # once per dataset
    per_episode = table.episode_rewards(v)        # [E] gather: v[rank]
    table.moments(per_episode, scope="all")       # stats over every step (zeros elsewhere)
    table.moments(per_episode, scope="end_of_game")
    table.mean_by_rank(per_episode)               # [4]

``episode_rewards`` can also be any per-episode array (e.g. ``v[rank] +
(final_score - 25000) / 1000``), computed by the caller from ``table.rank``
and ``table.final_score``.

Note that when a dataset holds all four players of every game, its final
ranks are exactly uniform; the distribution says something about a subset
of players (a grade, a room's winners, one model's seats in an evaluation).
Filter whole episodes before building the table.

Examples
--------
>>> import numpy as np
>>> from rewardlab.domains.mahjong.ranking import expected_reward, stable_rank
>>> p = np.array([0.28, 0.26, 0.24, 0.22])
>>> round(expected_reward([1.0, 0.4, -0.4, -1.0], p), 3)
0.068
>>> round(stable_rank(p, table="phoenix"), 3)
9.182
"""

from __future__ import annotations

import dataclasses
from typing import Callable

import numpy as np
import polars as pl

from rewardlab.sources.kanachan import schema as S
from rewardlab.core import columns
from rewardlab.core.errors import FrameError, ParameterError, check_choice, check_finite, check_in_range, \
    check_int
from rewardlab.domains.mahjong.rules import ranks_from_scores, require_mahjong
from rewardlab.analysis.moments import Moments
from rewardlab.analysis.sums import segment_sums
from rewardlab.analysis.tables import lazy_table, column_names, rewards_to_use

__all__ = [
    "RankTable",
    "ConfidenceInterval",
    "AffineRelation",
    "TENHOU_TABLES",
    "rank_probabilities",
    "expected_reward",
    "stable_rank",
    "tenhou_points",
    "bootstrap_mean_ci",
    "bootstrap_rank_ci",
    "reward_by_rank",
    "by_rank_table",
    "affine_equivalence",
]

#: Tenhou's rank points for 1st and 2nd place in a half-length (東南) game, per table.
#: 3rd place scores 0 and 4th loses ``15 * (dan + 2)`` points at dan 1-10 (e.g. -120 at
#: 6-dan, the kanachan wiki's "Tokujo-taku, 6-dan" example ``[75, 30, 0, -120]``).
#: East-only games scale every figure by 2/3, which leaves the stable rank unchanged.
TENHOU_TABLES: dict[str, tuple[float, float]] = {
    "phoenix": (90.0, 45.0),  # 鳳凰卓
    "tokujo": (75.0, 30.0),  # 特上卓
}
_FOURTH_SCALE = 15.0
_FOURTH_OFFSET = 2.0


# --------------------------------------------------------------------------
# Pure functions of ranks
# --------------------------------------------------------------------------


def _rank_vector(v, name: str = "rank_vector") -> np.ndarray:
    arr = np.asarray(v, dtype=np.float64)
    if arr.shape != (S.NUM_SEATS,):
        raise ParameterError(name, "should have 4 entries (reward for 1st, 2nd, 3rd, 4th)",
                             np.asarray(v).tolist() if np.asarray(v).size <= 8 else np.asarray(v).shape)
    if not np.all(np.isfinite(arr)):
        raise ParameterError(name, "should hold finite numbers", arr.tolist())
    return arr


def _probabilities(p, name: str = "probabilities") -> np.ndarray:
    arr = np.asarray(p, dtype=np.float64)
    if arr.ndim == 0 or arr.shape[-1] != S.NUM_SEATS:
        raise ParameterError(name, "should have shape [..., 4]", arr.shape)
    if np.any(arr < 0) or not np.all(np.isfinite(arr)):
        raise ParameterError(name, "should hold finite non-negative numbers", arr.tolist() if arr.size <= 8 else "...")
    return arr


def rank_probabilities(ranks) -> np.ndarray:
    """Empirical distribution of final ranks (0 = top).

    Parameters
    ----------
    ranks : int array of shape ``[E]``
        Values 0-3.

    Returns
    -------
    numpy.ndarray of shape ``[4]``, float64
        Fractions of 1st, 2nd, 3rd, 4th places (NaN when ``ranks`` is empty).

    Examples
    --------
    >>> rank_probabilities(np.array([0, 0, 1, 3]))
    array([0.5 , 0.25, 0.  , 0.25])
    """
    r = np.asarray(ranks)
    if r.ndim != 1:
        raise ParameterError("ranks", "should be 1-D with shape [E]", r.shape)
    if r.size and (r.min() < 0 or r.max() > 3):
        raise ParameterError("ranks", "should hold ranks 0-3", int(r.min() if r.min() < 0 else r.max()))
    if r.size == 0:
        return np.full(S.NUM_SEATS, np.nan)
    return np.bincount(r.astype(np.int64), minlength=S.NUM_SEATS) / r.size


def expected_reward(rank_vector, probabilities):
    """Expected reward ``sum_k p[k] * v[k]`` of a rank vector under a rank distribution.

    Parameters
    ----------
    rank_vector : array of shape ``[4]``
        Reward for 1st, 2nd, 3rd, 4th.
    probabilities : array of shape ``[..., 4]``
        Rank probabilities, or counts (the result is then a total).

    Returns
    -------
    float, or numpy.ndarray of shape ``[...]``

    Examples
    --------
    >>> expected_reward([75.0, 30.0, 0.0, -120.0], [0.25, 0.25, 0.25, 0.25])
    -3.75
    """
    v = _rank_vector(rank_vector)
    p = _probabilities(probabilities)
    out = p @ v
    return float(out) if out.ndim == 0 else out


def tenhou_points(dan: float, *, table: str = "tokujo") -> np.ndarray:
    """Tenhou's rank points for a half-length game at ``dan`` (1-10): ``[P1, P2, 0, -15 * (dan + 2)]``.

    Examples
    --------
    >>> tenhou_points(6, table="tokujo")
    array([  75.,   30.,    0., -120.])
    """
    check_choice("table", table, tuple(TENHOU_TABLES))
    dan = check_finite("dan", dan)
    p1, p2 = TENHOU_TABLES[table]
    return np.array([p1, p2, 0.0, -_FOURTH_SCALE * (dan + _FOURTH_OFFSET)])


def stable_rank(probabilities, *, table: str = "phoenix"):
    """Tenhou's "stable rank" (安定段位): the dan at which these placements would hold steady.

    At dan ``d`` a half-length game earns ``P1``, ``P2``, 0 or
    ``-15 * (d + 2)`` rank points (:data:`TENHOU_TABLES`); the stable rank is
    the ``d`` where the expected change is 0::

        d = (P1 * p1 + P2 * p2) / (15 * p4) - 2

    which is ``(6 p1 + 3 p2) / p4 - 2`` at the phoenix table and
    ``(5 p1 + 2 p2) / p4 - 2`` at the tokujo table.

    Parameters
    ----------
    probabilities : array of shape ``[..., 4]``
        Rank probabilities or counts (only ratios matter).
    table : {"phoenix", "tokujo"}

    Returns
    -------
    float, or numpy.ndarray of shape ``[...]``
        ``inf`` when there are no 4th places.

    Examples
    --------
    >>> stable_rank([0.25, 0.25, 0.25, 0.25], table="phoenix")
    7.0
    >>> stable_rank([0.25, 0.25, 0.25, 0.25], table="tokujo")
    5.0
    """
    check_choice("table", table, tuple(TENHOU_TABLES))
    p = _probabilities(probabilities)
    p1, p2 = TENHOU_TABLES[table]
    with np.errstate(divide="ignore", invalid="ignore"):
        out = (p1 * p[..., 0] + p2 * p[..., 1]) / (_FOURTH_SCALE * p[..., 3]) - _FOURTH_OFFSET
    return float(out) if np.ndim(out) == 0 else out


# --------------------------------------------------------------------------
# Bootstrap
# --------------------------------------------------------------------------


@dataclasses.dataclass(frozen=True)
class ConfidenceInterval:
    """A percentile-bootstrap confidence interval.

    Attributes
    ----------
    estimate : float
        The statistic on the data itself.
    low, high : float
        The interval's bounds.
    confidence : float
        Its level, e.g. 0.95.
    n_resamples : int
        Bootstrap resamples drawn.

    Examples
    --------
    >>> ci = bootstrap_mean_ci(np.arange(100.0), seed=0)
    >>> ci.low < ci.estimate < ci.high
    True
    """

    estimate: float
    low: float
    high: float
    confidence: float
    n_resamples: int

    def to_dict(self) -> dict:
        """A JSON-ready dict."""
        return dataclasses.asdict(self)


def _check_bootstrap(n_resamples: int, confidence: float) -> tuple[int, float]:
    n_resamples = check_int("n_resamples", n_resamples, low=1, rule="should be a positive integer")
    confidence = check_in_range("confidence", confidence, 0.0, 1.0)
    if not 0.0 < confidence < 1.0:
        raise ParameterError("confidence", "should be in (0, 1)", confidence)
    return n_resamples, confidence


def _interval(estimate: float, samples: np.ndarray, confidence: float, n: int) -> ConfidenceInterval:
    samples = samples[np.isfinite(samples)]
    alpha = (1.0 - confidence) / 2.0
    if samples.size == 0:
        return ConfidenceInterval(float(estimate), np.nan, np.nan, confidence, n)
    low, high = np.quantile(samples, [alpha, 1.0 - alpha])
    return ConfidenceInterval(float(estimate), float(low), float(high), confidence, n)


def _resampled_counts(weights_rows: np.ndarray, n_resamples: int, rng: np.random.Generator) -> np.ndarray:
    """Sum rows of ``weights_rows`` ([G, k]) over ``n_resamples`` resamples of the G rows with replacement."""
    g = weights_rows.shape[0]
    out = np.empty((n_resamples, weights_rows.shape[1]))
    chunk = max(1, 4_000_000 // max(g, 1))
    for start in range(0, n_resamples, chunk):
        stop = min(n_resamples, start + chunk)
        draws = rng.integers(0, g, size=(stop - start, g))
        out[start:stop] = weights_rows[draws].sum(axis=1)
    return out


def bootstrap_mean_ci(values, *, n_resamples: int = 2000, confidence: float = 0.95,
                      seed: int | None = 0) -> ConfidenceInterval:
    """Percentile-bootstrap confidence interval of the mean of ``values`` (resampled with replacement).

    Parameters
    ----------
    values : float array of shape ``[N]``
    n_resamples : int
        Resamples (default 2000).
    confidence : float
        Level in (0, 1) (default 0.95).
    seed : int or None
        Seed of NumPy's default generator (None: fresh entropy).

    Returns
    -------
    ConfidenceInterval

    Examples
    --------
    >>> ci = bootstrap_mean_ci(np.array([1.0, 2.0, 3.0, 4.0]), n_resamples=500, seed=1)
    >>> ci.estimate
    2.5
    """
    n_resamples, confidence = _check_bootstrap(n_resamples, confidence)
    x = np.asarray(values, dtype=np.float64).ravel()
    if x.size == 0:
        return ConfidenceInterval(np.nan, np.nan, np.nan, confidence, n_resamples)
    rng = np.random.default_rng(seed)
    sums = _resampled_counts(x[:, None], n_resamples, rng)[:, 0]
    return _interval(float(x.mean()), sums / x.size, confidence, n_resamples)


# --------------------------------------------------------------------------
# The precomputed table
# --------------------------------------------------------------------------


@dataclasses.dataclass(frozen=True, eq=False)
class RankTable:
    """Per-episode final rank and score of a frame, built once; rank rewards re-evaluate from it.

    Attributes
    ----------
    rank : numpy.ndarray of shape ``[E]``, int64
        Final rank, 0 = top (kanachan's tie rule: lower seat ranks higher).
    final_score : numpy.ndarray of shape ``[E]``, int64
        The player's final score.
    row : numpy.ndarray of shape ``[E]``, int64
        Row index of each episode's end-of-game step in the frame.
    game : numpy.ndarray of shape ``[E]``, int64
        Game index (``game`` column, or a running index of ``game_id`` runs).
    seat : numpy.ndarray of shape ``[E]``, int64
        The player's seat.
    n_rows : int
        Transitions in the frame.

    Examples
    --------
    >>> table = RankTable.from_frame(frame)  # doctest: +SKIP
    >>> table.moments(table.episode_rewards([1.0, 0.4, -0.4, -1.0])).std  # doctest: +SKIP
    """

    rank: np.ndarray
    final_score: np.ndarray
    row: np.ndarray
    game: np.ndarray
    seat: np.ndarray
    n_rows: int

    @classmethod
    def from_frame(cls, data) -> "RankTable":
        """Read end-of-game rows, seats and final scores (``results[4:8]``) once.

        Parameters
        ----------
        data : polars.DataFrame, LazyFrame, or path(s) to Parquet
            The common frame (or a subset of whole episodes) in episode order.

        Examples
        --------
        >>> table = RankTable.from_frame(rewardlab.load_kanachan("data/sample.tsv.gz"))  # doctest: +SKIP
        """
        lf, _ = lazy_table(data)
        names = column_names(lf)
        require_mahjong(names, (S.SEAT, S.RESULTS, S.END_OF_GAME), "the ranking analysis")
        game_expr = pl.col(S.GAME) if S.GAME in names else (
            (pl.col(S.GAME_ID) != pl.col(S.GAME_ID).shift(1)).fill_null(True).cum_sum()
            if S.GAME_ID in names else pl.lit(0))
        ends = (
            lf.select(
                pl.int_range(pl.len(), dtype=pl.Int64).alias("_row"),
                game_expr.cast(pl.Int64).alias("_game"),
                pl.col(S.SEAT).cast(pl.Int64).alias("_seat"),
                pl.col(S.RESULTS).arr.slice(4, 4).list.to_array(4).alias("_scores"),
                pl.col(S.END_OF_GAME),
                (pl.int_range(pl.len()) == pl.len() - 1).alias("_last"),
            )
            .filter(pl.col(S.END_OF_GAME) | pl.col("_last"))
            .collect()
        )
        if ends.height == 0:
            raise FrameError("the frame has no rows", hint="Load a dataset first")
        if not ends[S.END_OF_GAME][-1]:
            raise FrameError("the frame's last row is not the end of a game, so its last episode is "
                             "incomplete", hint="Filter whole episodes (e.g. by game), not single rows")
        scores = ends["_scores"].to_numpy().reshape(-1, S.NUM_SEATS).astype(np.int64)
        seat = ends["_seat"].to_numpy()
        rank = ranks_from_scores(scores, seat)
        own = np.take_along_axis(scores, seat[:, None], axis=1)[:, 0]
        n_rows = int(ends["_row"][-1]) + 1
        return cls(rank=rank, final_score=own, row=ends["_row"].to_numpy().astype(np.int64),
                   game=ends["_game"].to_numpy(), seat=seat, n_rows=n_rows)

    @property
    def episodes(self) -> int:
        """Number of episodes."""
        return int(self.rank.shape[0])

    @property
    def counts(self) -> np.ndarray:
        """Number of 1st, 2nd, 3rd, 4th places, shape ``[4]``."""
        return np.bincount(self.rank, minlength=S.NUM_SEATS)

    @property
    def probabilities(self) -> np.ndarray:
        """Empirical final-rank distribution, shape ``[4]``."""
        return rank_probabilities(self.rank)

    def episode_rewards(self, rank_vector) -> np.ndarray:
        """The end-of-game reward of each episode under ``rank_vector``: ``v[rank]``, shape ``[E]``.

        Examples
        --------
        >>> table.episode_rewards([1.0, 0.0, 0.0, -1.0])[:4]  # doctest: +SKIP
        """
        return _rank_vector(rank_vector)[self.rank]

    def _check_per_episode(self, episode_rewards) -> np.ndarray:
        x = np.asarray(episode_rewards, dtype=np.float64)
        if x.shape != (self.episodes,):
            raise ParameterError("episode_rewards", f"should have shape [{self.episodes}] (one value "
                                 "per episode)", x.shape)
        return x

    def moments(self, episode_rewards, *, scope: str = "all") -> Moments:
        """Moments of the step rewards a plug-in paying ``episode_rewards`` at the end of each game gives.

        Parameters
        ----------
        episode_rewards : float array of shape ``[E]``
        scope : {"all", "end_of_game"}
            ``"all"``: over every transition (0 on all but the end-of-game
            steps), without materialising them; ``"end_of_game"``: over the
            end-of-game steps.

        Returns
        -------
        Moments

        Examples
        --------
        >>> table.moments(table.episode_rewards([1, 0, 0, -1]), scope="all").std  # doctest: +SKIP
        """
        check_choice("scope", scope, ("all", "end_of_game"))
        x = self._check_per_episode(episode_rewards)
        if scope == "end_of_game":
            return Moments.of(x)
        return Moments.of(x, zeros=self.n_rows - x.size)

    def mean_by_rank(self, episode_rewards) -> np.ndarray:
        """Mean of ``episode_rewards`` per final rank, shape ``[4]`` (NaN for an absent rank).

        Examples
        --------
        >>> table.mean_by_rank(table.final_score)  # doctest: +SKIP
        """
        x = self._check_per_episode(episode_rewards)
        counts = self.counts
        with np.errstate(invalid="ignore", divide="ignore"):
            return np.bincount(self.rank, weights=x, minlength=S.NUM_SEATS) / counts

    def step_rewards(self, episode_rewards) -> np.ndarray:
        """The full step reward column: ``episode_rewards`` on end-of-game rows, 0 elsewhere, shape ``[n_rows]``.

        Examples
        --------
        >>> table.step_rewards(table.episode_rewards([1, 0, 0, -1])).sum()  # doctest: +SKIP
        """
        x = self._check_per_episode(episode_rewards)
        out = np.zeros(self.n_rows)
        out[self.row] = x
        return out

    def game_rank_counts(self) -> np.ndarray:
        """Rank counts per game, shape ``[G, 4]`` (games in order of appearance)."""
        _, inverse = np.unique(self.game, return_inverse=True)
        out = np.zeros((int(inverse.max()) + 1 if inverse.size else 0, S.NUM_SEATS))
        np.add.at(out, (inverse, self.rank), 1.0)
        return out


def bootstrap_rank_ci(table: RankTable, statistic: Callable[[np.ndarray], np.ndarray], *,
                      by: str = "episode", n_resamples: int = 2000, confidence: float = 0.95,
                      seed: int | None = 0) -> ConfidenceInterval:
    """Bootstrap confidence interval of a statistic of the final-rank counts.

    Parameters
    ----------
    table : RankTable
    statistic : callable
        Maps rank counts of shape ``[B, 4]`` to ``[B]``, e.g.
        ``lambda c: stable_rank(c)`` or ``lambda c: expected_reward(v, c / c.sum(1, keepdims=True))``.
    by : {"episode", "game"}
        Resample episodes, or whole games (the four players of a game are
        not independent; resampling games respects that).
    n_resamples, confidence, seed
        As in :func:`bootstrap_mean_ci`.

    Returns
    -------
    ConfidenceInterval

    Examples
    --------
    >>> bootstrap_rank_ci(table, lambda c: stable_rank(c), by="game")  # doctest: +SKIP
    """
    if not isinstance(table, RankTable):
        raise ParameterError("table", "should be a RankTable", type(table).__name__)
    if not callable(statistic):
        raise ParameterError("statistic", "should be a function of counts [B, 4]", statistic)
    check_choice("by", by, ("episode", "game"))
    n_resamples, confidence = _check_bootstrap(n_resamples, confidence)
    counts = table.counts.astype(np.float64)
    estimate = np.asarray(statistic(counts[None, :]), dtype=np.float64).reshape(-1)[0]
    rng = np.random.default_rng(seed)
    if by == "episode":
        samples = rng.multinomial(table.episodes, counts / max(table.episodes, 1), size=n_resamples)
        samples = samples.astype(np.float64)
    else:
        samples = _resampled_counts(table.game_rank_counts(), n_resamples, rng)
    values = np.asarray(statistic(samples), dtype=np.float64).reshape(-1)
    if values.shape != (n_resamples,):
        raise ParameterError("statistic", "should return one value per row of its [B, 4] input",
                             values.shape)
    return _interval(float(estimate), values, confidence, n_resamples)


# --------------------------------------------------------------------------
# Frame layer
# --------------------------------------------------------------------------


def reward_by_rank(data, rewards=None, *, table: RankTable | None = None, confidence: float = 0.95,
                   n_resamples: int = 1000, seed: int | None = 0) -> pl.DataFrame:
    """Mean per-episode return of each reward by the episode's final rank, with bootstrap CIs.

    An episode here is one player's whole game (whatever the plug-in's done
    says), so every reward is compared on the same episodes.

    Parameters
    ----------
    data : polars.DataFrame or LazyFrame
        The common frame with reward columns, in episode order.
    rewards : str or iterable of str, optional
        Plug-in names; default every ``reward_*`` column.
    table : RankTable, optional
        A table built from the same frame (saves re-reading ranks).
    confidence, n_resamples, seed
        Of the percentile bootstrap of each mean.

    Returns
    -------
    polars.DataFrame
        Columns ``reward, rank (0-3), episodes, mean, std, ci_low, ci_high``.

    Examples
    --------
    >>> reward_by_rank(frame, "top").select("rank", "mean")  # doctest: +SKIP
    """
    lf, _ = lazy_table(data)
    names = column_names(lf)
    use = rewards_to_use(names, rewards)
    if table is None:
        table = RankTable.from_frame(lf)
    elif not isinstance(table, RankTable):
        raise ParameterError("table", "should be a RankTable built from the same frame", type(table).__name__)
    df = lf.select([pl.col(columns.reward_column(n)).cast(pl.Float64) for n in use]).collect()
    if df.height != table.n_rows:
        raise ParameterError("table", f"should be built from the same frame ({df.height} rows)",
                             f"a table of {table.n_rows} rows")
    starts = np.concatenate(([0], table.row[:-1] + 1)) if table.episodes else np.zeros(0, np.int64)
    per_episode = {n: segment_sums(df[columns.reward_column(n)].to_numpy(), starts) if table.episodes
                   else np.zeros(0) for n in use}
    return by_rank_table(per_episode, table.rank, confidence=confidence, n_resamples=n_resamples, seed=seed)


def by_rank_table(per_episode: dict, rank: np.ndarray, *, confidence: float = 0.95, n_resamples: int = 1000,
                  seed: int | None = 0) -> pl.DataFrame:
    """:func:`reward_by_rank`'s table from each reward's per-episode returns and each episode's final rank.

    Examples
    --------
    >>> t = by_rank_table({"a": np.array([1.0, 0.0, 3.0])}, np.array([0, 1, 0]), n_resamples=10)
    >>> t.filter(pl.col("rank") == 0)["mean"].item()
    2.0
    """
    rows = []
    for n, returns in per_episode.items():
        for k in range(S.NUM_SEATS):
            x = returns[rank == k]
            ci = bootstrap_mean_ci(x, n_resamples=n_resamples, confidence=confidence, seed=seed)
            rows.append({"reward": n, "rank": k, "episodes": int(x.size),
                         "mean": float(x.mean()) if x.size else np.nan,
                         "std": float(x.std()) if x.size else np.nan,
                         "ci_low": ci.low, "ci_high": ci.high})
    schema = {"reward": pl.String, "rank": pl.Int64, "episodes": pl.Int64, "mean": pl.Float64,
              "std": pl.Float64, "ci_low": pl.Float64, "ci_high": pl.Float64}
    return pl.DataFrame(rows, schema=schema)


# --------------------------------------------------------------------------
# Affine equivalence
# --------------------------------------------------------------------------


@dataclasses.dataclass(frozen=True)
class AffineRelation:
    """Whether rank vector ``w`` is a positive affine map of ``v`` (``w = scale * v + offset``).

    Attributes
    ----------
    equivalent : bool
        True when ``w = scale * v + offset`` with ``scale > 0`` (both rank
        every distribution of final ranks in the same order, and normalize
        to the same vector).
    scale, offset : float
        The least-squares fit ``w ~ scale * v + offset``.
    residual : float
        Largest absolute deviation from the fit.
    witness : tuple of two arrays or None
        When not equivalent, two rank distributions ``(p, q)`` that ``v``
        and ``w`` order differently (``p·v > q·v`` but ``p·w < q·w``, or
        one ties where the other does not).

    Examples
    --------
    >>> affine_equivalence([1, 0.4, -0.4, -1], [90, 45, 0, -135]).equivalent
    False
    """

    equivalent: bool
    scale: float
    offset: float
    residual: float
    witness: tuple[np.ndarray, np.ndarray] | None


def affine_equivalence(v, w, *, atol: float = 1e-9) -> AffineRelation:
    """Check whether two rank vectors induce the same ordering of policies (positive affine maps).

    The expected reward of a policy under a rank vector is ``p · v`` where
    ``p`` is its final-rank distribution; two vectors order every pair of
    distributions the same way exactly when ``w = a v + b`` with ``a > 0``
    (or both are constant).

    Parameters
    ----------
    v, w : array of shape ``[4]``
        Rewards for 1st..4th.
    atol : float
        Tolerance on the residual, relative to the spread of ``w``.

    Returns
    -------
    AffineRelation

    Examples
    --------
    >>> r = affine_equivalence([1.0, 0.0, 0.0, -1.0], [3.0, 1.0, 1.0, -1.0])
    >>> r.equivalent, r.scale, r.offset
    (True, 2.0, 1.0)
    """
    v = _rank_vector(v, "v")
    w = _rank_vector(w, "w")
    spread_v = float(np.ptp(v))
    spread_w = float(np.ptp(w))
    tol_w = atol * max(spread_w, float(np.abs(w).max()), 1.0)
    if spread_v == 0.0:
        equivalent = spread_w <= tol_w
        scale, offset = 0.0, float(w.mean())
    else:
        vc = v - v.mean()
        scale = float(np.dot(vc, w - w.mean()) / np.dot(vc, vc))
        offset = float(w.mean() - scale * v.mean())
        equivalent = scale > 0 and float(np.abs(w - (scale * v + offset)).max()) <= tol_w \
            and scale * spread_v > tol_w
    residual = float(np.abs(w - (scale * v + offset)).max())
    return AffineRelation(bool(equivalent), scale, offset, residual,
                          None if equivalent else _witness(v, w, atol))


def _witness(v: np.ndarray, w: np.ndarray, atol: float):
    eye = np.eye(S.NUM_SEATS)
    tv = atol * max(float(np.ptp(v)), 1.0)
    tw = atol * max(float(np.ptp(w)), 1.0)

    def sign(x, t):
        return 0 if abs(x) <= t else (1 if x > 0 else -1)

    # pure placements ordered differently
    for i in range(S.NUM_SEATS):
        for j in range(i + 1, S.NUM_SEATS):
            if sign(v[i] - v[j], tv) != sign(w[i] - w[j], tw):
                return eye[i], eye[j]
    # same pairwise order, different relative gaps: compare j with a mix of i and k
    for i in range(S.NUM_SEATS):
        for k in range(S.NUM_SEATS):
            if i == k or sign(v[i] - v[k], tv) == 0:
                continue
            for j in range(S.NUM_SEATS):
                if j in (i, k):
                    continue
                t_v = (v[j] - v[k]) / (v[i] - v[k])
                t_w = (w[j] - w[k]) / (w[i] - w[k])
                if abs(t_v - t_w) > 1e-6 and 0.0 <= min(t_v, t_w) and max(t_v, t_w) <= 1.0:
                    t = (t_v + t_w) / 2.0
                    return eye[j], t * eye[i] + (1.0 - t) * eye[k]
    return None
