"""Comparing candidate reward plug-ins: correlations of episode returns, EPIC-style distance, disagreements.

Candidates are compared on the same episodes: one player's whole game
(ending at ``end_of_game``, or at a change of ``game_id`` / ``seat`` in a
rewards table), whatever each plug-in's own ``done`` says, so that every
candidate has one return per episode.

The EPIC-style distance between two candidates is ``sqrt((1 - rho) / 2)``
with ``rho`` the Pearson correlation of their episode returns: 0 for
returns that are a positive affine map of each other, 1/sqrt(2) for
uncorrelated returns, 1 for perfectly anti-correlated ones (Gleave et al.'s
EPIC applies the same map to canonicalized rewards over a coverage
distribution; here the coverage distribution is the dataset's episodes).

Examples
--------
>>> import numpy as np
>>> from rewardlab.compare import correlation_matrix, epic_distance
>>> x = np.array([[1.0, 2.0], [2.0, 4.0], [3.0, 7.0]])
>>> np.round(correlation_matrix(x, method="spearman"), 6)
array([[1., 1.],
       [1., 1.]])
>>> float(epic_distance(1.0))
0.0
"""

from __future__ import annotations

import dataclasses

import numpy as np
import polars as pl

from rewardlab import schema as S
from rewardlab.core import columns
from rewardlab.errors import ColumnNotFoundError, ParameterError, check_choice
from rewardlab.stats import game_end_expr, lazy_table, column_names, resolve_reward, rewards_to_use

__all__ = [
    "rankdata",
    "correlation_matrix",
    "epic_distance",
    "episode_return_table",
    "RewardComparison",
    "compare_rewards",
    "most_disagreeing_episodes",
    "StepDifference",
    "step_difference",
]


# --------------------------------------------------------------------------
# Pure functions
# --------------------------------------------------------------------------


def rankdata(x) -> np.ndarray:
    """Ranks of each column (1-based, ties get the average rank), as SciPy's ``rankdata(method="average")``.

    Parameters
    ----------
    x : array of shape ``[N]`` or ``[N, K]``

    Returns
    -------
    numpy.ndarray of the same shape, float64

    Examples
    --------
    >>> rankdata(np.array([10.0, 20.0, 10.0, 5.0]))
    array([2.5, 4. , 2.5, 1. ])
    """
    a = np.asarray(x, dtype=np.float64)
    if a.ndim not in (1, 2):
        raise ParameterError("x", "should have shape [N] or [N, K]", a.shape)
    cols = a[:, None] if a.ndim == 1 else a
    out = np.empty_like(cols)
    n = cols.shape[0]
    for k in range(cols.shape[1]):  # one vectorized pass per candidate column
        order = np.argsort(cols[:, k], kind="stable")
        sorted_vals = cols[order, k]
        new_group = np.ones(n, dtype=bool)
        new_group[1:] = sorted_vals[1:] != sorted_vals[:-1]
        group = np.cumsum(new_group) - 1
        starts = np.flatnonzero(new_group)
        ends = np.append(starts[1:], n)
        avg = (starts + ends + 1) / 2.0  # mean of 1-based positions start+1 .. end
        out[order, k] = avg[group]
    return out[:, 0] if a.ndim == 1 else out


def correlation_matrix(x, *, method: str = "pearson") -> np.ndarray:
    """Pearson or Spearman correlation between the columns of ``x``.

    Parameters
    ----------
    x : array of shape ``[N, K]``
        One row per episode, one column per candidate.
    method : {"pearson", "spearman"}

    Returns
    -------
    numpy.ndarray of shape ``[K, K]``
        NaN where a column is constant (its correlation is undefined), except
        1.0 on the diagonal.

    Examples
    --------
    >>> np.round(correlation_matrix(np.array([[0.0, 1.0], [1.0, 0.0], [2.0, -1.0]])), 6)
    array([[ 1., -1.],
           [-1.,  1.]])
    """
    check_choice("method", method, ("pearson", "spearman"))
    a = np.asarray(x, dtype=np.float64)
    if a.ndim != 2:
        raise ParameterError("x", "should have shape [N, K]", a.shape)
    if method == "spearman":
        a = rankdata(a)
    c = a - a.mean(axis=0)
    norms = np.sqrt((c * c).sum(axis=0))
    with np.errstate(invalid="ignore", divide="ignore"):
        rho = (c.T @ c) / np.outer(norms, norms)
    rho = np.clip(rho, -1.0, 1.0)
    np.fill_diagonal(rho, 1.0)
    return rho


def epic_distance(rho):
    """EPIC-style distance ``sqrt((1 - rho) / 2)`` from a correlation (scalar or array).

    Examples
    --------
    >>> round(float(epic_distance(0.0)), 6)
    0.707107
    """
    r = np.clip(np.asarray(rho, dtype=np.float64), -1.0, 1.0)
    return np.sqrt((1.0 - r) / 2.0)


# --------------------------------------------------------------------------
# Frame layer
# --------------------------------------------------------------------------


def episode_return_table(data, rewards=None) -> pl.DataFrame:
    """Undiscounted return of each candidate over each episode (one player's game).

    Parameters
    ----------
    data : polars.DataFrame, LazyFrame, or path(s) to Parquet
        A rewards table or a frame with reward columns.
    rewards : str or iterable of str, optional
        Plug-in names; default every ``reward_*`` column.

    Returns
    -------
    polars.DataFrame
        ``episode`` (0, 1, ...), ``game_id`` and ``seat`` when present, then
        one Float64 column per candidate named after it; in data order.

    Examples
    --------
    >>> import polars as pl
    >>> f = pl.DataFrame({"game_id": ["g", "g", "h"], "seat": [0, 0, 0],
    ...                   "reward_a": [1.0, 2.0, 3.0], "reward_b": [0.0, 1.0, 0.0]})
    >>> episode_return_table(f).select("a", "b").rows()
    [(3.0, 1.0), (3.0, 0.0)]
    """
    lf, _ = lazy_table(data)
    names = column_names(lf)
    use = rewards_to_use(names, rewards)
    keys = [k for k in (S.GAME_ID, S.SEAT) if k in names]
    episode = game_end_expr(names).shift(1, fill_value=False).cast(pl.UInt32).cum_sum().alias("episode")
    return (
        lf.select(episode, *keys, *[pl.col(columns.reward_column(n)).cast(pl.Float64).alias(n) for n in use])
        .group_by("episode")
        .agg(*[pl.col(k).first() for k in keys], *[pl.col(n).sum() for n in use])
        .sort("episode")
        .with_columns(pl.col("episode").cast(pl.Int64))
        .collect()
    )


@dataclasses.dataclass(frozen=True, eq=False)
class RewardComparison:
    """Correlations and distances between candidates' episode returns (see :func:`compare_rewards`).

    Attributes
    ----------
    names : tuple of str
        The candidates, in matrix order.
    episodes : int
        Episodes compared.
    pearson, spearman, epic : numpy.ndarray of shape ``[K, K]``
        Correlation matrices and the EPIC-style distance ``sqrt((1 - pearson) / 2)``.

    Examples
    --------
    >>> cmp = compare_rewards(frame)  # doctest: +SKIP
    >>> cmp.pairs().sort("epic", descending=True).head(3)  # doctest: +SKIP
    """

    names: tuple[str, ...]
    episodes: int
    pearson: np.ndarray
    spearman: np.ndarray
    epic: np.ndarray

    def matrix(self, metric: str = "spearman") -> pl.DataFrame:
        """One metric as a square frame: column ``reward`` then one column per candidate.

        Examples
        --------
        >>> cmp.matrix("pearson")  # doctest: +SKIP
        """
        check_choice("metric", metric, ("pearson", "spearman", "epic"))
        m = getattr(self, metric)
        return pl.DataFrame({"reward": list(self.names)} | {n: m[:, i] for i, n in enumerate(self.names)})

    def pairs(self) -> pl.DataFrame:
        """One row per unordered pair: ``a, b, pearson, spearman, epic``.

        Examples
        --------
        >>> cmp.pairs().columns  # doctest: +SKIP
        ['a', 'b', 'pearson', 'spearman', 'epic']
        """
        i, j = np.triu_indices(len(self.names), k=1)
        return pl.DataFrame({
            "a": [self.names[k] for k in i], "b": [self.names[k] for k in j],
            "pearson": self.pearson[i, j], "spearman": self.spearman[i, j], "epic": self.epic[i, j],
        }, schema={"a": pl.String, "b": pl.String, "pearson": pl.Float64, "spearman": pl.Float64,
                   "epic": pl.Float64})


def compare_rewards(data, rewards=None) -> RewardComparison:
    """Pearson and Spearman correlation and EPIC-style distance of episode returns, for every pair.

    Parameters
    ----------
    data : polars.DataFrame, LazyFrame, path(s) to Parquet, or the output of :func:`episode_return_table`
        A rewards table or a frame with reward columns.
    rewards : str or iterable of str, optional
        Plug-in names; default every ``reward_*`` column (at least two).

    Returns
    -------
    RewardComparison

    Examples
    --------
    >>> import polars as pl
    >>> f = pl.DataFrame({"game_id": ["g", "h", "i"], "seat": [0, 0, 0],
    ...                   "reward_a": [1.0, 2.0, 3.0], "reward_b": [2.0, 4.0, 6.0]})
    >>> cmp = compare_rewards(f)
    >>> round(float(cmp.pearson[0, 1]), 9), bool(cmp.epic[0, 1] < 1e-6)
    (1.0, True)
    """
    table = _returns_table(data, rewards)
    names = tuple(c for c in table.columns if c not in ("episode", S.GAME_ID, S.SEAT))
    if len(names) < 2:
        raise ParameterError("rewards", "should name at least two candidates to compare", list(names))
    x = table.select(names).to_numpy().astype(np.float64)
    pearson = correlation_matrix(x, method="pearson")
    spearman = correlation_matrix(x, method="spearman")
    return RewardComparison(names, int(x.shape[0]), pearson, spearman, epic_distance(pearson))


def _returns_table(data, rewards) -> pl.DataFrame:
    if _is_returns_table(data):
        if rewards is None:
            return data
        use = [rewards] if isinstance(rewards, str) else list(rewards)
        missing = [n for n in use if n not in data.columns]
        if missing:
            raise ColumnNotFoundError(missing[0], data.columns)
        keep = [c for c in ("episode", S.GAME_ID, S.SEAT) if c in data.columns]
        return data.select(*keep, *use)
    return episode_return_table(data, rewards)


def most_disagreeing_episodes(data, a: str, b: str, *, k: int = 10) -> pl.DataFrame:
    """The ``k`` episodes where candidates ``a`` and ``b`` disagree most.

    Returns are standardized per candidate (z-scores over the episodes)
    because candidates live on different scales; the disagreement is
    ``|z_a - z_b|``.

    Parameters
    ----------
    data : polars.DataFrame, LazyFrame, path(s), or the output of :func:`episode_return_table`
    a, b : str
        Two candidate names.
    k : int
        How many episodes to return (fewer if there are fewer).

    Returns
    -------
    polars.DataFrame
        ``episode`` (and ``game_id``, ``seat`` when known), ``return_a``,
        ``return_b``, ``z_a``, ``z_b``, ``gap``; largest gap first.

    Examples
    --------
    >>> most_disagreeing_episodes(frame, "top", "points", k=5)  # doctest: +SKIP
    """
    if isinstance(k, bool) or not isinstance(k, (int, np.integer)) or k < 1:
        raise ParameterError("k", "should be a positive integer", k)
    if a == b:
        raise ParameterError("b", "should differ from `a`", b)
    if _is_returns_table(data):
        table = _returns_table(data, [a, b])
    else:
        lf, _ = lazy_table(data)
        names = column_names(lf)
        a, b = resolve_reward(names, a), resolve_reward(names, b)
        table = episode_return_table(lf, [a, b])

    def z(col: str) -> pl.Expr:
        std = pl.col(col).std(ddof=0)
        return pl.when(std > 0).then((pl.col(col) - pl.col(col).mean()) / std).otherwise(0.0)

    keys = [c for c in ("episode", S.GAME_ID, S.SEAT) if c in table.columns]
    return (
        table.select(*keys, pl.col(a).alias("return_a"), pl.col(b).alias("return_b"),
                     z(a).alias("z_a"), z(b).alias("z_b"))
        .with_columns((pl.col("z_a") - pl.col("z_b")).abs().alias("gap"))
        .sort("gap", descending=True, maintain_order=True)
        .head(int(k))
    )


def _is_returns_table(data) -> bool:
    return isinstance(data, pl.DataFrame) and "episode" in data.columns and not any(
        c.startswith(columns.REWARD_PREFIX) for c in data.columns)


@dataclasses.dataclass(frozen=True)
class StepDifference:
    """Summary of the per-step reward difference ``reward_a - reward_b`` (see :func:`step_difference`).

    Attributes
    ----------
    a, b : str
        The candidates.
    count : int
        Steps compared.
    fraction_different : float
        Fraction of steps where the two rewards differ.
    mean, std, min, max, mean_abs : float
        Of the difference (population std).
    correlation : float
        Pearson correlation of the two step rewards (NaN if one is constant).
    fraction_sign_disagree : float
        Fraction of steps where one reward is positive and the other negative.

    Examples
    --------
    >>> import polars as pl
    >>> d = step_difference(pl.DataFrame({"reward_a": [1.0, 0.0], "reward_b": [1.0, 2.0]}), "a", "b")
    >>> d.fraction_different, d.mean
    (0.5, -1.0)
    """

    a: str
    b: str
    count: int
    fraction_different: float
    mean: float
    std: float
    min: float
    max: float
    mean_abs: float
    correlation: float
    fraction_sign_disagree: float

    def to_dict(self) -> dict:
        """A JSON-ready dict."""
        return dataclasses.asdict(self)


def step_difference(data, a: str, b: str) -> StepDifference:
    """Summarize the per-step difference between two candidates' rewards.

    Parameters
    ----------
    data : polars.DataFrame, LazyFrame, or path(s) to Parquet
        A rewards table or a frame with both reward columns.
    a, b : str
        Plug-in names.

    Returns
    -------
    StepDifference

    Examples
    --------
    >>> step_difference(frame, "top", "points").fraction_different  # doctest: +SKIP
    """
    lf, _ = lazy_table(data)
    names = column_names(lf)
    a = resolve_reward(names, a)
    b = resolve_reward(names, b)
    if a == b:
        raise ParameterError("b", "should differ from `a`", b)
    ra = pl.col(columns.reward_column(a)).cast(pl.Float64)
    rb = pl.col(columns.reward_column(b)).cast(pl.Float64)
    d = ra - rb
    row = lf.select(
        count=pl.len(), different=(d != 0).mean(), mean=d.mean(), std=d.std(ddof=0), min=d.min(),
        max=d.max(), mean_abs=d.abs().mean(), correlation=pl.corr(ra, rb),
        sign=(((ra > 0) & (rb < 0)) | ((ra < 0) & (rb > 0))).mean(),
    ).collect(engine="streaming").row(0, named=True)

    def f(v) -> float:
        return float("nan") if v is None else float(v)

    return StepDifference(a, b, int(row["count"]), f(row["different"]), f(row["mean"]), f(row["std"]),
                          f(row["min"]), f(row["max"]), f(row["mean_abs"]), f(row["correlation"]),
                          f(row["sign"]))
