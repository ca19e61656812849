"""Comparing candidate reward plug-ins: correlations of episode returns, Pearson distance, disagreements.

Candidates are compared on the same episodes, found through the frame's
spec (:func:`rewardlab.sources.registry.spec_of`, or ``spec=``): an episode
ends where a terminal flag fires or the episode key changes (in a kanachan
frame, one player's whole game: ``end_of_game``, or a change of ``game_id`` /
``seat`` in a rewards table), whatever each plug-in's own ``done`` says, so
that every candidate has one return per episode.  Tables of episode returns
carry the spec's episode key columns.

The Pearson distance between two candidates is ``sqrt((1 - rho) / 2)``
with ``rho`` the Pearson correlation of their episode returns: 0 for
returns that are a positive affine map of each other, 1/sqrt(2) for
uncorrelated returns, 1 for perfectly anti-correlated ones.  It is *not*
EPIC: EPIC (:mod:`rewardlab.analysis.epic`, the ``epic`` diagnostic) applies
the same map to rewards canonicalized so that potential shaping cancels;
episode returns are not canonicalized, so adding potential shaping to a
reward changes this distance.

Examples
--------
>>> import numpy as np
>>> from rewardlab.analysis.compare import correlation_matrix, pearson_distance
>>> x = np.array([[1.0, 2.0], [2.0, 4.0], [3.0, 7.0]])
>>> np.round(correlation_matrix(x, method="spearman"), 6)
array([[1., 1.],
       [1., 1.]])
>>> float(pearson_distance(1.0))
0.0
"""

from __future__ import annotations

import dataclasses

import numpy as np
import polars as pl

from rewardlab.core import columns
from rewardlab.core.spec import FrameSpec, attach, attached
from rewardlab.core.errors import ColumnNotFoundError, ParameterError, check_choice, check_int
from rewardlab.sources.registry import known_specs, spec_of
from rewardlab.analysis.epic import pearson_distance
from rewardlab.analysis.scopes import episode_end_expr, summed_segments
from rewardlab.analysis.sums import tie_groups
from rewardlab.analysis.tables import column_names, lazy_table, resolve_reward, rewards_to_use

__all__ = [
    "rankdata",
    "correlation_matrix",
    "pearson_distance",
    "episode_return_table",
    "RewardComparison",
    "compare_rewards",
    "most_disagreeing_episodes",
    "StepDifference",
    "step_difference",
    "episode_key_columns",
]


# --------------------------------------------------------------------------
# Pure functions
# --------------------------------------------------------------------------


def rankdata(x) -> np.ndarray:
    """Ranks of each column (1-based, ties get the average rank), as SciPy's ``rankdata(method="average")``.

    Values equal up to summation error (:func:`rewardlab.analysis.sums.tie_groups`: a few units in the
    last place) are ties: episode returns that are equal sums of other orders of the same rewards tie.

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
    >>> rankdata(np.array([0.1 + 0.2, 0.3, 1.0]))  # equal up to rounding: a tie
    array([1.5, 1.5, 3. ])
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
        new_group = tie_groups(sorted_vals)
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


# --------------------------------------------------------------------------
# Frame layer
# --------------------------------------------------------------------------


def episode_key_columns(table: pl.DataFrame, spec: FrameSpec | None = None) -> list[str]:
    """The key columns of a table of episode returns: ``episode`` and the spec's episode keys, in table order.

    The spec is ``spec`` when given, else the one the table carries
    (:func:`episode_return_table` attaches it), else every registered spec
    whose episode columns the table holds (kanachan's ``game_id``, ``seat``).

    Examples
    --------
    >>> episode_key_columns(pl.DataFrame({"episode": [0], "game_id": [1], "seat": [0], "a": [1.0]}))
    ['episode', 'game_id', 'seat']
    """
    names = list(table.columns)
    if spec is None:
        spec = attached(table)
    specs = [spec] if spec is not None else [s for s in known_specs().values() if s.matches(names)]
    keys = {"episode"} | {k for s in specs for k in s.episode}
    return [c for c in names if c in keys]


def episode_return_table(data, rewards=None, *, spec: FrameSpec | None = None) -> pl.DataFrame:
    """Undiscounted return of each candidate over each episode (one player's game in kanachan data).

    Parameters
    ----------
    data : polars.DataFrame, LazyFrame, or path(s) to Parquet
        A rewards table or a frame with reward columns.
    rewards : str or iterable of str, optional
        Plug-in names; default every ``reward_*`` column.
    spec : FrameSpec, optional
        How the rows form episodes (default: the frame's spec, see
        :func:`rewardlab.sources.registry.spec_of`).

    Returns
    -------
    polars.DataFrame
        ``episode`` (0, 1, ...), the spec's episode key columns present
        (``game_id`` and ``seat`` for kanachan; an episode key called
        ``episode`` takes the index's place), then one Float64 column per
        candidate named after it; in data order.  It carries the spec
        (projected to its key columns), which :func:`compare_rewards` and the
        plots read to tell keys from candidates.

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
    here = spec_of(lf, spec)
    keys = [k for k in here.episode if k in names]
    clash = [n for n in use if n in keys or n == "episode"]
    if clash:
        raise ParameterError("rewards", "should not be named like a key column of the returns table "
                             f"({', '.join(dict.fromkeys(['episode', *keys]))})", clash)
    index = "episode" if "episode" not in keys else "_episode"  # an episode key named so is the index
    table = summed_segments(lf, episode_end_expr(names, here),
                            {n: pl.col(columns.reward_column(n)) for n in use}, keep=keys)
    table = table.select(pl.int_range(table.height, dtype=pl.Int64).alias(index), pl.all())
    if index != "episode":
        table = table.drop(index)
    return attach(table, here.project(table.columns)) if here.episode else table


@dataclasses.dataclass(frozen=True, eq=False)
class RewardComparison:
    """Correlations and distances between candidates' episode returns (see :func:`compare_rewards`).

    Attributes
    ----------
    names : tuple of str
        The candidates, in matrix order.
    episodes : int
        Episodes compared.
    pearson, spearman : numpy.ndarray of shape ``[K, K]``
        Correlation matrices of the episode returns.
    pearson_distance : numpy.ndarray of shape ``[K, K]``
        ``sqrt((1 - pearson) / 2)`` of the episode returns (not EPIC: not invariant to shaping;
        see :func:`rewardlab.analysis.epic.pearson_distance`).

    Examples
    --------
    >>> cmp = compare_rewards(frame)  # doctest: +SKIP
    >>> cmp.pairs().sort("pearson_distance", descending=True).head(3)  # doctest: +SKIP
    """

    names: tuple[str, ...]
    episodes: int
    pearson: np.ndarray
    spearman: np.ndarray
    pearson_distance: np.ndarray

    def matrix(self, metric: str = "spearman") -> pl.DataFrame:
        """One metric as a square frame: column ``reward`` then one column per candidate.

        Examples
        --------
        >>> cmp.matrix("pearson")  # doctest: +SKIP
        """
        check_choice("metric", metric, ("pearson", "spearman", "pearson_distance"))
        m = getattr(self, metric)
        return pl.DataFrame({"reward": list(self.names)} | {n: m[:, i] for i, n in enumerate(self.names)})

    def pairs(self) -> pl.DataFrame:
        """One row per unordered pair: ``a, b, pearson, spearman, pearson_distance``.

        Examples
        --------
        >>> cmp.pairs().columns  # doctest: +SKIP
        ['a', 'b', 'pearson', 'spearman', 'pearson_distance']
        """
        i, j = np.triu_indices(len(self.names), k=1)
        return pl.DataFrame({
            "a": [self.names[k] for k in i], "b": [self.names[k] for k in j],
            "pearson": self.pearson[i, j], "spearman": self.spearman[i, j],
            "pearson_distance": self.pearson_distance[i, j],
        }, schema={"a": pl.String, "b": pl.String, "pearson": pl.Float64, "spearman": pl.Float64,
                   "pearson_distance": pl.Float64})


def compare_rewards(data, rewards=None, *, spec: FrameSpec | None = None) -> RewardComparison:
    """Pearson and Spearman correlation and Pearson distance of episode returns, for every pair.

    Parameters
    ----------
    data : polars.DataFrame, LazyFrame, path(s) to Parquet, or the output of :func:`episode_return_table`
        A rewards table or a frame with reward columns.
    rewards : str or iterable of str, optional
        Plug-in names; default every ``reward_*`` column (at least two).
    spec : FrameSpec, optional
        How the rows form episodes, or which columns of a returns table are
        keys (default: the spec the data carries or is recognized by).

    Returns
    -------
    RewardComparison

    Examples
    --------
    >>> import polars as pl
    >>> f = pl.DataFrame({"game_id": ["g", "h", "i"], "seat": [0, 0, 0],
    ...                   "reward_a": [1.0, 2.0, 3.0], "reward_b": [2.0, 4.0, 6.0]})
    >>> cmp = compare_rewards(f)
    >>> round(float(cmp.pearson[0, 1]), 9), bool(cmp.pearson_distance[0, 1] < 1e-6)
    (1.0, True)
    """
    table = _returns_table(data, rewards, spec)
    keys = episode_key_columns(table, spec)
    names = tuple(c for c in table.columns if c not in keys)
    if len(names) < 2:
        raise ParameterError("rewards", "should name at least two candidates to compare", list(names))
    x = table.select(names).to_numpy().astype(np.float64)
    pearson = correlation_matrix(x, method="pearson")
    spearman = correlation_matrix(x, method="spearman")
    return RewardComparison(names, int(x.shape[0]), pearson, spearman, pearson_distance(pearson))


def _returns_table(data, rewards, spec: FrameSpec | None) -> pl.DataFrame:
    if _is_returns_table(data):
        if rewards is None:
            return data
        use = [rewards] if isinstance(rewards, str) else list(rewards)
        missing = [n for n in use if n not in data.columns]
        if missing:
            raise ColumnNotFoundError(missing[0], data.columns)
        keep = episode_key_columns(data, spec)
        table = data.select(*keep, *use)
        carried = spec if spec is not None else attached(data)
        return attach(table, carried.project(keep)) if carried is not None and carried.episode else table
    return episode_return_table(data, rewards, spec=spec)


def most_disagreeing_episodes(data, a: str, b: str, *, k: int = 10,
                              spec: FrameSpec | None = None) -> pl.DataFrame:
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
    spec : FrameSpec, optional
        How the rows form episodes, or which columns of a returns table are
        keys (default: the spec the data carries or is recognized by).

    Returns
    -------
    polars.DataFrame
        ``episode`` (and the spec's episode keys when known: ``game_id``,
        ``seat`` for kanachan), ``return_a``, ``return_b``, ``z_a``, ``z_b``,
        ``gap``; largest gap first.

    Examples
    --------
    >>> most_disagreeing_episodes(frame, "top", "points", k=5)  # doctest: +SKIP
    """
    k = check_int("k", k, low=1, rule="should be a positive integer")
    if a == b:
        raise ParameterError("b", "should differ from `a`", b)
    if _is_returns_table(data):
        table = _returns_table(data, [a, b], spec)
    else:
        lf, _ = lazy_table(data)
        names = column_names(lf)
        a, b = resolve_reward(names, a), resolve_reward(names, b)
        table = episode_return_table(lf, [a, b], spec=spec)

    def z(col: str) -> pl.Expr:
        std = pl.col(col).std(ddof=0)
        return pl.when(std > 0).then((pl.col(col) - pl.col(col).mean()) / std).otherwise(0.0)

    keys = episode_key_columns(table, spec)
    out = (
        table.select(*keys, pl.col(a).alias("return_a"), pl.col(b).alias("return_b"),
                     z(a).alias("z_a"), z(b).alias("z_b"))
        .with_columns((pl.col("z_a") - pl.col("z_b")).abs().alias("gap"))
        .sort("gap", descending=True, maintain_order=True)
        .head(int(k))
    )
    carried = attached(table)
    return attach(out, carried.project(keys)) if carried is not None else out


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
