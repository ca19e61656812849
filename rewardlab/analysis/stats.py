"""Exact reward statistics and normalization constants, over a frame, a lazy scan or a dataset path.

What streams and what does not
------------------------------
* **Moments stream and merge.**  Count, mean, second central moment (M2),
  min and max come from one Polars aggregation over the lazy frame
  (``engine="streaming"``, so a Parquet dataset larger than memory works) and
  are returned as :class:`Moments`, which merges exactly (Chan et al.'s
  parallel update, float64).  Partial results over shards, files or batches
  combine with ``a.merge(b)`` (or ``a + b``).
* **Quantiles are exact, not mergeable.**  The values in scope are
  materialised as one float64 array (8 bytes per value) and NumPy computes
  them (linear interpolation, NumPy's default); with them,
  :func:`reward_stats` takes the moments from that array too (two-pass).
  ``reward_stats(..., quantiles=())`` skips them and stays streaming.
* **The fingerprint** of :class:`NormalizationConstants` hashes the values in
  scope, in data order, so it also reads that one column.

Scopes
------
Scopes that need episodes read them through the frame's spec
(:func:`rewardlab.sources.registry.spec_of`: an explicit ``spec=``, the spec
the frame carries, a recognized one such as kanachan's, or
:data:`~rewardlab.sources.registry.REWARDS_ONLY` for a table of ``reward_*`` /
``done_*`` columns alone, one stream).

=====================  =====================================================================
``"all"``              every step
``"nonzero"``          steps whose reward is not 0
``"boundary"``         the last step of each sub-episode: a boundary flag of the spec
                       (kanachan's ``end_of_round``) or an episode end, so a game's last step
                       counts even where kanachan's offline files mark it
                       ``end_of_round=False``.  Needs the spec's boundary flags and, like
                       ``"episode_end"``, its terminal flags.
``"episode_end"``      the last step of each episode: where the spec's ``terminated`` or
                       ``truncated`` flag fires (kanachan's ``end_of_game``); a spec without
                       terminal flags ends an episode where its episode key changes.  Needs
                       the flags the spec declares.
``"episode_return"``   the undiscounted return of each trajectory, trajectories ending at the
                       plug-in's own ``done_<name>`` and at every episode end (see
                       :func:`rewardlab.analysis.returns.episode_returns`).
``"end_of_round"``     kanachan's word for ``"boundary"`` (same steps on any frame).
``"end_of_game"``      kanachan's word for ``"episode_end"`` (same steps on any frame).
=====================  =====================================================================

Both a rewards table written by ``rewardlab apply`` (the episode key columns
plus ``reward_*`` / ``done_*``) and a full frame with reward columns work; the
``boundary`` and ``episode_end`` scopes need the flags, so the full frame.

Examples
--------
>>> import polars as pl
>>> from rewardlab.analysis.stats import reward_stats
>>> frame = pl.DataFrame({"reward_a": [0.0, 1.0, 0.0, 3.0], "done_a": [False, True, False, True]})
>>> s = reward_stats(frame, "a", scope="nonzero")
>>> s.count, s.mean, s.std
(2, 2.0, 1.0)
"""

from __future__ import annotations

import dataclasses
import hashlib
import math
from pathlib import Path
from typing import Iterable, Sequence

import numpy as np
import polars as pl

from rewardlab.sources.kanachan import schema as S
from rewardlab.core import columns
from rewardlab.core.spec import FrameSpec, attach, attached
from rewardlab.core.errors import (
    ColumnNotFoundError, FrameError, ParameterError, SpecError, check_choice, check_finite,
    check_positive,
)
from rewardlab.core.files import check_input
from rewardlab.sources.dispatch import as_lazy
from rewardlab.sources.registry import known_specs, spec_of
from rewardlab.sources.storage import layout_of, read_spec, scan_dataset, verify_table

__all__ = [
    "SCOPES",
    "DEFAULT_QUANTILES",
    "Moments",
    "RewardStats",
    "NormalizationConstants",
    "reward_moments",
    "reward_stats",
    "describe_rewards",
    "normalization_constants",
    "scope_values",
    # building blocks the other analysis modules share
    "lazy_table",
    "column_names",
    "resolve_reward",
    "rewards_to_use",
    "need_column",
    "declared_spec",
    "episode_end_expr",
    "trajectory_end_expr",
    "segment_id_expr",
    "scope_mask_expr",
    "game_end_expr",
    "boundary_expr",
    "SCOPE_ALIASES",
]

#: The scopes every statistic accepts (see the module docstring): the generic ones, then
#: kanachan's words for two of them (:data:`SCOPE_ALIASES`).
SCOPES = ("all", "nonzero", "boundary", "episode_end", "episode_return", "end_of_round", "end_of_game")

#: kanachan's names for two generic scopes; they select the same steps on any frame.
SCOPE_ALIASES = {"end_of_round": "boundary", "end_of_game": "episode_end"}

#: Quantiles reported by default.
DEFAULT_QUANTILES = (0.01, 0.05, 0.25, 0.5, 0.75, 0.95, 0.99)

_VALUE = "value"


# --------------------------------------------------------------------------
# Mergeable moments
# --------------------------------------------------------------------------


@dataclasses.dataclass(frozen=True)
class Moments:
    """Count, mean, M2 (sum of squared deviations), min and max of a set of values; exact merge.

    Immutable: :meth:`update` and :meth:`merge` return a new object.  The
    merge is Chan, Golub and LeVeque's pairwise update in float64, so the
    moments of a dataset equal the merge of the moments of its parts (up to
    rounding), in any order.

    Attributes
    ----------
    count : int
        Number of values.
    mean : float
        Their mean (0.0 when empty).
    m2 : float
        ``sum((x - mean) ** 2)``.
    min, max : float
        Extremes (``inf`` / ``-inf`` when empty).

    Examples
    --------
    >>> import numpy as np
    >>> a = Moments.of(np.array([1.0, 2.0]))
    >>> b = Moments.of(np.array([3.0, 4.0, 5.0]))
    >>> m = a.merge(b)
    >>> m.count, m.mean, m.var
    (5, 3.0, 2.0)
    """

    count: int = 0
    mean: float = 0.0
    m2: float = 0.0
    min: float = math.inf
    max: float = -math.inf

    @classmethod
    def of(cls, values) -> "Moments":
        """Moments of an array (any shape, flattened; converted to float64; two-pass M2).

        Examples
        --------
        >>> Moments.of([2.0, 4.0]).m2
        2.0
        """
        x = np.asarray(values, dtype=np.float64).ravel()
        if x.size == 0:
            return cls()
        mean = float(x.mean())
        d = x - mean
        return cls(int(x.size), mean, float(np.dot(d, d)), float(x.min()), float(x.max()))

    def update(self, values) -> "Moments":
        """Return these moments merged with those of ``values`` (one batch).

        Examples
        --------
        >>> Moments().update([1.0, 3.0]).update([5.0]).mean
        3.0
        """
        return self.merge(Moments.of(values))

    def merge(self, other: "Moments") -> "Moments":
        """Return the moments of the union of both sets of values.

        Examples
        --------
        >>> (Moments.of([0.0]) + Moments.of([2.0])).var
        1.0
        """
        if not isinstance(other, Moments):
            raise ParameterError("other", "should be a Moments", type(other).__name__)
        if other.count == 0:
            return self
        if self.count == 0:
            return other
        n = self.count + other.count
        delta = other.mean - self.mean
        mean = self.mean + delta * (other.count / n)
        m2 = self.m2 + other.m2 + delta * delta * (self.count * other.count / n)
        return Moments(n, mean, m2, min(self.min, other.min), max(self.max, other.max))

    __add__ = merge

    @property
    def var(self) -> float:
        """Population variance ``m2 / count`` (NaN when empty)."""
        return self.m2 / self.count if self.count else math.nan

    @property
    def sample_var(self) -> float:
        """Sample variance ``m2 / (count - 1)`` (NaN for fewer than 2 values)."""
        return self.m2 / (self.count - 1) if self.count > 1 else math.nan

    @property
    def std(self) -> float:
        """Population standard deviation."""
        return math.sqrt(self.var) if self.count else math.nan

    @property
    def sample_std(self) -> float:
        """Sample standard deviation (ddof = 1)."""
        return math.sqrt(self.sample_var) if self.count > 1 else math.nan

    def to_dict(self) -> dict:
        """A JSON-ready dict: count, mean, m2, min, max, std, sample_std (NaN/inf as None).

        Examples
        --------
        >>> sorted(Moments.of([1.0]).to_dict())
        ['count', 'm2', 'max', 'mean', 'min', 'sample_std', 'std']
        """
        out = dataclasses.asdict(self) | {"std": self.std, "sample_std": self.sample_std}
        return {k: _json_number(v) for k, v in out.items()}


def _json_number(v):
    if isinstance(v, float) and not math.isfinite(v):
        return None
    return v


# --------------------------------------------------------------------------
# Data access shared by the analysis modules
# --------------------------------------------------------------------------


def lazy_table(data) -> tuple[pl.LazyFrame, str | None]:
    """A LazyFrame of ``data`` (a frame, a lazy frame, or Parquet / dataset paths) and, for paths, their description.

    Paths are checked first (a FIFO is refused, rewards tables' page checksums are verified).
    For paths, the LazyFrame carries the spec stored in the files
    (:func:`rewardlab.core.spec.attached`) where they hold one.

    Examples
    --------
    >>> lf, where = lazy_table(pl.DataFrame({"reward_a": [0.0]}))
    >>> where is None
    True
    """
    if isinstance(data, pl.LazyFrame):
        return data, None
    if isinstance(data, pl.DataFrame):
        lf = data.lazy()
        if attached(data) is not None:  # the lazy view keeps the frame's spec
            attach(lf, attached(data))
        return lf, None
    if isinstance(data, (str, Path)):
        paths = [Path(data)]
    elif isinstance(data, (list, tuple)) and data and all(isinstance(p, (str, Path)) for p in data):
        paths = [Path(p) for p in data]
    else:
        raise ParameterError("data", "should be a polars DataFrame or LazyFrame, or path(s) to Parquet "
                             "files", type(data).__name__)
    targets: list[Path] = []
    for p in paths:
        check_input(p, folder=True)  # FIFOs, devices, unreadable files: refused before any open
        if p.is_dir():
            inside = sorted(p.glob("*.parquet"))
            for q in inside:
                check_input(q)
            targets.extend(inside)
        elif p.suffix == ".parquet":
            targets.append(p)
        else:
            return as_lazy(paths), ", ".join(map(str, paths))
    if not targets:
        raise ParameterError("data", "should name Parquet files or folders holding them",
                             [str(p) for p in paths])
    _check_same_columns(targets)
    if any(layout_of(t) is not None for t in targets):  # converted datasets: decode their array columns
        return scan_dataset(targets), ", ".join(map(str, paths))  # attaches the stored spec
    for t in targets:  # Polars does not verify page checksums: a flipped bit is an error, not a value
        verify_table(t)
    lf = pl.scan_parquet(targets)
    stored = read_spec(targets[0])  # the spec `rewardlab apply` stored with its rewards table
    return (attach(lf, stored) if stored is not None else lf), ", ".join(map(str, paths))


def _check_same_columns(targets: list[Path]) -> None:
    """Several Parquet files are read as row shards of one table: their columns must agree."""
    if len(targets) < 2:
        return
    first = list(pl.read_parquet_schema(targets[0]))
    for t in targets[1:]:
        cols = list(pl.read_parquet_schema(t))
        if cols != first:
            extra = sorted(set(cols) ^ set(first)) or ["(same names, other order)"]
            raise ParameterError(
                "data", f"should be Parquet files with the same columns (row shards of one table); "
                f"{t} differs from {targets[0]} in {', '.join(extra)}", [str(x) for x in targets],
                hint="To analyse rewards of several plug-ins together, apply them in one run "
                "(`rewardlab apply DATASET --plugin A --plugin B ...`).")


def column_names(lf: pl.LazyFrame) -> list[str]:
    """The column names of a LazyFrame (its schema; no data is read).

    Examples
    --------
    >>> column_names(pl.LazyFrame({"a": [1], "b": [2]}))
    ['a', 'b']
    """
    return lf.collect_schema().names()


def resolve_reward(names: Sequence[str], reward: str) -> str:
    """The plug-in name for ``reward`` (a name like ``"top"`` or a column like ``"reward_top"``)."""
    if not isinstance(reward, str):
        raise ParameterError("reward", "should be a reward name such as 'top'", reward)
    if columns.REWARD_PREFIX + reward in names:
        return columns.check_name(reward, what="reward")
    if reward.startswith(columns.REWARD_PREFIX) and reward in names:
        return reward[len(columns.REWARD_PREFIX):]
    available = [c for c in names if c.startswith(columns.REWARD_PREFIX)]
    raise ColumnNotFoundError(columns.REWARD_PREFIX + reward, available or ["(no reward_* columns; run "
                                                                       "`rewardlab apply` first)"])


def rewards_to_use(names: Sequence[str], rewards) -> list[str]:
    """The plug-in names to analyse: ``rewards`` resolved (:func:`resolve_reward`), or every ``reward_*`` column.

    Examples
    --------
    >>> rewards_to_use(["seat", "reward_a", "reward_b"], None)
    ['a', 'b']
    """
    if rewards is None:
        found = [c[len(columns.REWARD_PREFIX):] for c in names if c.startswith(columns.REWARD_PREFIX)]
        if not found:
            raise FrameError("the data has no reward_<name> columns",
                             hint="Run reward plug-ins first (`rewardlab apply` or apply_plugins)")
        return found
    if isinstance(rewards, str):
        rewards = [rewards]
    return [resolve_reward(names, r) for r in rewards]


def need_column(names: Sequence[str], column: str, why: str, *,
                keys: Sequence[str] = (S.GAME_ID, S.SEAT, S.STEP)) -> None:
    """Raise :class:`~rewardlab.core.errors.FrameError` (saying what needs it) when ``column`` is missing.

    ``keys`` are the columns a rewards table shares with its dataset (named
    in the hint; kanachan's by default).

    Examples
    --------
    >>> need_column(["seat"], "seat", "the by-rank table")
    """
    if column not in names:
        raise FrameError(
            f"{why} needs the column {column!r}, which the data lacks",
            hint="Pass the full frame (the dataset with reward columns, e.g. from apply_plugins), "
            f"or join the rewards table to the dataset on {', '.join(keys)}")


def declared_spec(data, spec: FrameSpec | None = None) -> tuple[FrameSpec, FrameSpec]:
    """The spec describing ``data`` as declared, and as projected to the data's columns.

    The projected one is :func:`rewardlab.sources.registry.spec_of`'s answer
    (flags the data lacks are dropped); the declared one still names them, so
    that a scope needing a flag can say which column is missing.

    Examples
    --------
    >>> full, here = declared_spec(pl.DataFrame({"game_id": [1], "seat": [0], "reward_a": [0.0]}))
    >>> full.terminated, here.terminated
    ('end_of_game', None)
    """
    here = spec_of(data, spec)
    if spec is not None:
        return spec, here
    full = attached(data) or known_specs().get(here.name)
    return (full if full is not None and full.name == here.name else here), here


def _keys_of(spec: FrameSpec) -> tuple[str, ...]:
    """The columns a rewards table shares with its dataset: episode keys and step."""
    return tuple(dict.fromkeys((*spec.episode, *((spec.step,) if spec.step else ()))))


def episode_end_expr(names: Sequence[str], spec: FrameSpec) -> pl.Expr:
    """True on the last row of each episode of the data (column ``_episode_end``).

    :meth:`FrameSpec.episode_end` over the flags present: a change of the
    episode key to the next row, a terminal flag, and the data's last row.

    Examples
    --------
    >>> spec = FrameSpec(name="s", episode=("e",))
    >>> pl.DataFrame({"e": [0, 0, 1]}).select(episode_end_expr(["e"], spec))["_episode_end"].to_list()
    [False, True, True]
    """
    return spec.episode_end(names).alias("_episode_end")


def trajectory_end_expr(names: Sequence[str], done: str, spec: FrameSpec) -> pl.Expr:
    """True on the last step of each trajectory of a reward: at ``done`` and at every episode end.

    A trajectory never runs across an episode (the next row belongs to
    another episode, another player of a kanachan game); see
    :func:`episode_end_expr`.

    Examples
    --------
    >>> f = pl.DataFrame({"e": [0, 0, 1], "done_a": [True, False, False]})
    >>> f.select(trajectory_end_expr(f.columns, "done_a", FrameSpec(name="s", episode=("e",))))["_boundary"].to_list()
    [True, True, True]
    """
    return (pl.col(done) | episode_end_expr(names, spec)).alias("_boundary")


def segment_id_expr(end: pl.Expr, name: str = "_episode") -> pl.Expr:
    """The index (0, 1, ...) of the segment each row belongs to, segments ending where ``end`` is True.

    Examples
    --------
    >>> pl.DataFrame({"x": [True, False, True]}).select(segment_id_expr(pl.col("x")))["_episode"].to_list()
    [0, 1, 1]
    """
    return end.shift(1, fill_value=False).cast(pl.UInt32).cum_sum().alias(name)


def game_end_expr(names: Sequence[str], *, spec: FrameSpec | None = None) -> pl.Expr:
    """kanachan's name for :func:`episode_end_expr`: True on the last step of each player's game.

    ``spec`` defaults to the spec the columns ``names`` are recognized as
    (kanachan's for ``game_id`` / ``seat``; one stream for reward columns alone).
    """
    if spec is None:
        spec = spec_of(pl.LazyFrame(schema=dict.fromkeys(names, pl.Null)))
    return episode_end_expr(names, spec.project(names)).alias("_game_end")


def boundary_expr(names: Sequence[str], done: str, *, spec: FrameSpec | None = None) -> pl.Expr:
    """kanachan's name for :func:`trajectory_end_expr` (``spec`` as in :func:`game_end_expr`)."""
    return (pl.col(done) | game_end_expr(names, spec=spec)).alias("_boundary")


def _check_scope(scope: str) -> str:
    return check_choice("scope", scope, SCOPES)


def scope_mask_expr(names: Sequence[str], name: str, scope: str, spec: FrameSpec,
                    declared: FrameSpec | None = None) -> pl.Expr:
    """True on the steps of a per-step scope (every scope but ``"episode_return"``).

    Parameters
    ----------
    names : sequence of str
        The data's columns.
    name : str
        The plug-in name (``"nonzero"`` reads ``reward_<name>``).
    scope : str
        One of :data:`SCOPES` but ``"episode_return"``.
    spec : FrameSpec
        The data's spec, projected to its columns (:func:`declared_spec`).
    declared : FrameSpec, optional
        The spec as declared, naming the flags the data may lack; default ``spec``.

    Raises
    ------
    FrameError
        The scope needs a flag the spec declares and the data lacks (the
        message names the column).
    SpecError
        The scope needs episodes and the spec has neither episode columns nor
        terminal flags.

    Examples
    --------
    >>> spec = FrameSpec(name="s", episode=("e",), terminated="term")
    >>> f = pl.DataFrame({"e": [0, 0], "term": [False, True], "reward_a": [1.0, 0.0]})
    >>> f.select(scope_mask_expr(f.columns, "a", "episode_end", spec)).to_series().to_list()
    [False, True]
    """
    declared = spec if declared is None else declared
    keys = _keys_of(spec)
    why = f"scope {scope!r}"
    kind = SCOPE_ALIASES.get(scope, scope)
    if kind == "all":
        return pl.lit(True)
    if kind == "nonzero":
        return pl.col(columns.reward_column(name)) != 0
    if kind == "boundary":
        for flag in declared.boundaries:
            need_column(names, flag, why, keys=keys)
        flags = [pl.col(f) for f in declared.boundaries]
        end = _episode_end_steps(names, why, spec, declared, keys)
        return pl.any_horizontal(*flags, end) if flags else end
    if kind == "episode_end":
        return _episode_end_steps(names, why, spec, declared, keys)
    raise ParameterError("scope", "should be a per-step scope (not 'episode_return')", scope)


def _episode_end_steps(names, why: str, spec: FrameSpec, declared: FrameSpec, keys) -> pl.Expr:
    """The steps that end an episode: the declared terminal flags, or else a change of episode key."""
    if declared.terminals:
        for flag in declared.terminals:
            need_column(names, flag, why, keys=keys)
        return pl.any_horizontal(*[pl.col(f) for f in declared.terminals])
    if spec.episode:
        return episode_end_expr(names, spec)
    raise SpecError(f"{why} needs episodes, and the {spec.name} spec has no episode column and no "
                    "terminal flag", column=None,
                    hint="Pass the full frame, or declare its episodes with spec=rewardlab.FrameSpec("
                    "name=..., episode=('episode_id',), terminated='terminated')")


def _scope_lazy(lf: pl.LazyFrame, name: str, scope: str, spec: FrameSpec | None = None) -> pl.LazyFrame:
    """A lazy frame with one Float64 column ``value``: the values of ``reward`` in ``scope``."""
    names = column_names(lf)
    col = columns.REWARD_PREFIX + name
    value = pl.col(col).cast(pl.Float64).alias(_VALUE)
    if scope == "all":
        return lf.select(value)
    if scope == "nonzero":
        return lf.select(value).filter(pl.col(_VALUE) != 0)
    declared, here = declared_spec(lf, spec)
    if scope != "episode_return":
        return lf.filter(scope_mask_expr(names, name, scope, here, declared)).select(value)
    done = columns.DONE_PREFIX + name
    if done not in names:
        raise ColumnNotFoundError(done, [c for c in names if c.startswith(columns.DONE_PREFIX)])
    return (
        lf.select(value, segment_id_expr(trajectory_end_expr(names, done, here)))
        .group_by("_episode")
        .agg(pl.col(_VALUE).sum())
        .sort("_episode")
        .select(_VALUE)
    )


def scope_values(data, reward: str, *, scope: str = "all", spec: FrameSpec | None = None) -> np.ndarray:
    """The values of ``reward`` in ``scope`` as a float64 array (data order; episode returns in episode order).

    Parameters
    ----------
    data : polars.DataFrame, LazyFrame, or path(s) to Parquet
        A rewards table or a frame with reward columns.
    reward : str
        The plug-in name (``"top"``) or its column (``"reward_top"``).
    scope : str
        One of :data:`SCOPES`.
    spec : FrameSpec, optional
        How the data's rows form episodes, for the scopes that need them
        (default: the spec the frame carries or is recognized by; see
        :func:`rewardlab.sources.registry.spec_of`).

    Returns
    -------
    numpy.ndarray of shape ``[N]``, float64

    Examples
    --------
    >>> import polars as pl
    >>> f = pl.DataFrame({"reward_a": [1.0, 2.0, 4.0], "done_a": [False, True, True]})
    >>> scope_values(f, "a", scope="episode_return")
    array([3., 4.])
    """
    _check_scope(scope)
    lf, _ = lazy_table(data)
    name = resolve_reward(column_names(lf), reward)
    sl = _scope_lazy(lf, name, scope, spec)
    return sl.collect()[_VALUE].to_numpy().astype(np.float64, copy=False)


# --------------------------------------------------------------------------
# Statistics
# --------------------------------------------------------------------------


def _moments_of_lazy(sl: pl.LazyFrame, *, what: str) -> tuple[Moments, int]:
    """Streaming moments and the number of zeros of the ``value`` column."""
    v = pl.col(_VALUE)
    row = sl.select(
        n=pl.len(), nulls=v.null_count(), nans=v.is_nan().sum(), mean=v.mean(),
        var=v.var(ddof=0), min=v.min(), max=v.max(), zeros=(v == 0).sum(),
    ).collect(engine="streaming").row(0, named=True)
    _check_clean(what, row["nulls"], row["nans"])
    n = int(row["n"])
    if n == 0:
        return Moments(), 0
    m = Moments(n, float(row["mean"]), float(row["var"]) * n, float(row["min"]), float(row["max"]))
    return m, int(row["zeros"])


def _check_clean(what: str, nulls: int, nans: int) -> None:
    if nulls or nans:
        raise FrameError(f"{what} has {nulls} null and {nans} NaN values",
                         hint="Rewards must be finite numbers; check the plug-in")


def _values_of_lazy(sl: pl.LazyFrame, *, what: str) -> np.ndarray:
    """The ``value`` column materialised as a float64 array (nulls and NaN refused)."""
    series = sl.collect(engine="streaming")[_VALUE]
    x = series.to_numpy().astype(np.float64, copy=False)
    nulls = series.null_count()
    _check_clean(what, nulls, 0 if nulls else int(np.isnan(x).sum()))
    return x


def reward_moments(data, reward: str, *, scope: str = "all", spec: FrameSpec | None = None) -> Moments:
    """Streaming moments (count, mean, M2, min, max) of a reward in a scope.

    One Polars aggregation over the lazy frame with the streaming engine; the
    result merges exactly with the moments of other parts of a dataset.

    Parameters
    ----------
    data : polars.DataFrame, LazyFrame, or path(s) to Parquet
        A rewards table or a frame with reward columns.
    reward : str
        The plug-in name (``"top"``) or its column (``"reward_top"``).
    scope : str
        One of :data:`SCOPES`.
    spec : FrameSpec, optional
        How the data's rows form episodes, for the scopes that need them
        (default: the spec the frame carries or is recognized by; see
        :func:`rewardlab.sources.registry.spec_of`).

    Returns
    -------
    Moments

    Examples
    --------
    >>> m = reward_moments("part1.parquet", "top") + reward_moments("part2.parquet", "top")  # doctest: +SKIP
    >>> m.mean, m.std  # doctest: +SKIP
    """
    _check_scope(scope)
    lf, _ = lazy_table(data)
    name = resolve_reward(column_names(lf), reward)
    return _moments_of_lazy(_scope_lazy(lf, name, scope, spec), what=f"reward {name!r}")[0]


def _check_quantiles(quantiles) -> tuple[float, ...]:
    try:
        qs = tuple(float(q) for q in quantiles)
    except (TypeError, ValueError):
        raise ParameterError("quantiles", "should be a sequence of numbers in [0, 1]", quantiles) from None
    for q in qs:
        if not 0.0 <= q <= 1.0:
            raise ParameterError("quantiles", "should contain numbers in [0, 1]", quantiles)
    return qs


@dataclasses.dataclass(frozen=True)
class RewardStats:
    """Statistics of one reward in one scope (see :func:`reward_stats`).

    Attributes
    ----------
    reward : str
        The plug-in name.
    scope : str
        One of :data:`SCOPES`.
    count : int
        Number of values in scope.
    mean, std, sample_std, min, max : float
        ``std`` is the population standard deviation (ddof 0), ``sample_std``
        uses ddof 1.  NaN when there are no values.
    zero_fraction : float
        Fraction of the values that are exactly 0.
    quantiles : dict of float to float
        Exact quantiles (linear interpolation, as NumPy's default).
    normalized_by : dict or None
        The constants applied before computing, if any
        (:meth:`NormalizationConstants.to_dict`).

    Examples
    --------
    >>> import polars as pl
    >>> s = reward_stats(pl.DataFrame({"reward_a": [0.0, 2.0]}), "a", quantiles=(0.5,))
    >>> s.quantiles, s.zero_fraction
    ({0.5: 1.0}, 0.5)
    """

    reward: str
    scope: str
    count: int
    mean: float
    std: float
    sample_std: float
    min: float
    max: float
    zero_fraction: float
    quantiles: dict
    normalized_by: dict | None = None

    def to_dict(self) -> dict:
        """A JSON-ready dict with stable keys (quantile keys as strings, NaN as None).

        Examples
        --------
        >>> import polars as pl
        >>> reward_stats(pl.DataFrame({"reward_a": [1.0]}), "a", quantiles=(0.5,)).to_dict()["quantiles"]
        {'0.5': 1.0}
        """
        out = {f.name: getattr(self, f.name) for f in dataclasses.fields(self)}
        out["quantiles"] = {_q_key(q): _json_number(v) for q, v in self.quantiles.items()}
        return {k: (_json_number(v) if isinstance(v, float) else v) for k, v in out.items()}


def _q_key(q: float) -> str:
    return repr(float(q))


def reward_stats(
    data,
    reward: str,
    *,
    scope: str = "all",
    quantiles: Sequence[float] = DEFAULT_QUANTILES,
    constants: "NormalizationConstants | None" = None,
    spec: FrameSpec | None = None,
) -> RewardStats:
    """Count, mean, population and sample std, min, max, zero fraction and exact quantiles.

    Parameters
    ----------
    data : polars.DataFrame, LazyFrame, or path(s) to Parquet
        A rewards table or a frame with reward columns.
    reward : str
        The plug-in name (``"top"``) or its column (``"reward_top"``).
    scope : str
        One of :data:`SCOPES`.
    quantiles : sequence of float
        Quantile levels in [0, 1]; ``()`` keeps the computation a streaming
        aggregation (no column is materialised).
    constants : NormalizationConstants, optional
        Apply ``(x - mean) / std`` to the values in scope first: "what
        normalization does".  With the constants computed from the same data
        and scope the result has mean 0 and std 1.
    spec : FrameSpec, optional
        How the data's rows form episodes, for the scopes that need them
        (default: the spec the frame carries or is recognized by; see
        :func:`rewardlab.sources.registry.spec_of`).

    Returns
    -------
    RewardStats

    Examples
    --------
    >>> import polars as pl
    >>> f = pl.DataFrame({"reward_a": [1.0, 2.0, 3.0]})
    >>> c = normalization_constants(f, "a")
    >>> s = reward_stats(f, "a", constants=c)
    >>> round(s.mean, 12), round(s.std, 12)
    (0.0, 1.0)
    """
    _check_scope(scope)
    qs = _check_quantiles(quantiles)
    if constants is not None and not isinstance(constants, NormalizationConstants):
        raise ParameterError("constants", "should be NormalizationConstants (see normalization_constants)",
                             type(constants).__name__)
    lf, _ = lazy_table(data)
    name = resolve_reward(column_names(lf), reward)
    sl = _scope_lazy(lf, name, scope, spec)
    if constants is not None:
        sl = sl.select(((pl.col(_VALUE) - constants.mean) / constants.std).alias(_VALUE))
    what = f"reward {name!r}"
    if qs:  # exact quantiles need the values: one float64 column, then NumPy for everything
        x = _values_of_lazy(sl, what=what)
        m = Moments.of(x)
        zeros = int(np.count_nonzero(x == 0))
        qvals = dict(zip(qs, map(float, np.quantile(x, qs)))) if x.size else {q: math.nan for q in qs}
    else:  # moments only: stays a streaming aggregation
        m, zeros = _moments_of_lazy(sl, what=what)
        qvals = {}
    zero_fraction = zeros / m.count if m.count else math.nan
    return RewardStats(
        reward=name, scope=scope, count=m.count, mean=m.mean if m.count else math.nan,
        std=m.std, sample_std=m.sample_std,
        min=m.min if m.count else math.nan, max=m.max if m.count else math.nan,
        zero_fraction=zero_fraction, quantiles=qvals,
        normalized_by=None if constants is None else constants.to_dict(),
    )


def describe_rewards(
    data,
    rewards: str | Iterable[str] | None = None,
    *,
    scopes: Iterable[str] = ("all",),
    quantiles: Sequence[float] = DEFAULT_QUANTILES,
    spec: FrameSpec | None = None,
) -> pl.DataFrame:
    """One row of :func:`reward_stats` per reward and scope, as a Polars frame.

    Parameters
    ----------
    data : polars.DataFrame, LazyFrame, or path(s) to Parquet
        A rewards table or a frame with reward columns.
    rewards : str or iterable of str, optional
        Plug-in names; default every ``reward_*`` column.
    scopes : iterable of str
        Scopes from :data:`SCOPES`.
    quantiles : sequence of float
        Quantile levels; columns ``q0.25`` etc.
    spec : FrameSpec, optional
        How the data's rows form episodes, for the scopes that need them
        (default: the spec the frame carries or is recognized by; see
        :func:`rewardlab.sources.registry.spec_of`).

    Returns
    -------
    polars.DataFrame
        Columns ``reward, scope, count, mean, std, sample_std, min, max,
        zero_fraction`` and one per quantile.

    Examples
    --------
    >>> import polars as pl
    >>> f = pl.DataFrame({"reward_a": [0.0, 1.0], "reward_b": [2.0, 2.0]})
    >>> describe_rewards(f, quantiles=(0.5,)).select("reward", "mean", "q0.5").rows()
    [('a', 0.5, 0.5), ('b', 2.0, 2.0)]
    """
    lf, _ = lazy_table(data)
    names = rewards_to_use(column_names(lf), rewards)
    scopes = [_check_scope(s) for s in scopes]
    qs = _check_quantiles(quantiles)
    rows = []
    for name in names:
        for scope in scopes:
            s = reward_stats(lf, name, scope=scope, quantiles=qs, spec=spec)
            row = {k: getattr(s, k) for k in ("reward", "scope", "count", "mean", "std", "sample_std",
                                               "min", "max", "zero_fraction")}
            row |= {f"q{q:g}": s.quantiles[q] for q in qs}
            rows.append(row)
    schema = {"reward": pl.String, "scope": pl.String, "count": pl.Int64} | {
        k: pl.Float64 for k in ("mean", "std", "sample_std", "min", "max", "zero_fraction")
    } | {f"q{q:g}": pl.Float64 for q in qs}
    return pl.DataFrame(rows, schema=schema)


# --------------------------------------------------------------------------
# Normalization constants
# --------------------------------------------------------------------------


@dataclasses.dataclass(frozen=True)
class NormalizationConstants:
    """Mean and population std of a reward, with where they came from: what an exported plug-in divides by.

    Attributes
    ----------
    reward : str
        The plug-in name the constants were computed for.
    scope : str
        The scope (:data:`SCOPES`) the values were taken from; the exported
        plug-in should apply the constants to the same steps.
    mean : float
        Mean of the values in scope.
    std : float
        Population standard deviation (ddof 0), > 0.
    count : int
        Number of values in scope.
    source : str or None
        The dataset path(s), when the data was given as a path.
    rows : int
        Rows (transitions) in the data.
    fingerprint : str
        ``"blake2b-128:<hex>"`` of the float64 values in scope, in data order:
        the same data and scope give the same fingerprint.

    Examples
    --------
    >>> c = NormalizationConstants("top", "end_of_game", 0.0, 2.0, 10, None, 100, "blake2b-128:00")
    >>> c.apply([2.0, -4.0])
    array([ 1., -2.])
    >>> NormalizationConstants.from_dict(c.to_dict()) == c
    True
    """

    reward: str
    scope: str
    mean: float
    std: float
    count: int
    source: str | None
    rows: int
    fingerprint: str

    def __post_init__(self):
        check_finite("mean", self.mean)
        check_positive("std", self.std)
        _check_scope(self.scope)

    def apply(self, values) -> np.ndarray:
        """``(values - mean) / std`` as a float64 array.

        Examples
        --------
        >>> NormalizationConstants("a", "all", 1.0, 2.0, 2, None, 2, "x").apply([3.0])
        array([1.])
        """
        return (np.asarray(values, dtype=np.float64) - self.mean) / self.std

    def to_dict(self) -> dict:
        """A JSON-ready dict with stable keys.

        Examples
        --------
        >>> sorted(NormalizationConstants("a", "all", 0.0, 1.0, 1, None, 1, "x").to_dict())
        ['count', 'fingerprint', 'mean', 'reward', 'rows', 'scope', 'source', 'std']
        """
        return dataclasses.asdict(self)

    @classmethod
    def from_dict(cls, d: dict) -> "NormalizationConstants":
        """Rebuild from :meth:`to_dict` output (unknown keys are an error).

        Examples
        --------
        >>> NormalizationConstants.from_dict({"reward": "a", "scope": "all", "mean": 0.0, "std": 1.0,
        ...     "count": 1, "source": None, "rows": 1, "fingerprint": "x"}).std
        1.0
        """
        fields = {f.name for f in dataclasses.fields(cls)}
        extra = sorted(set(d) - fields)
        missing = sorted(fields - set(d))
        if extra or missing:
            raise ParameterError("d", f"should have exactly the keys {sorted(fields)}",
                                 {"missing": missing, "unknown": extra})
        return cls(**d)


def _fingerprint(values: np.ndarray) -> str:
    x = np.ascontiguousarray(values, dtype="<f8")
    return "blake2b-128:" + hashlib.blake2b(memoryview(x).cast("B"), digest_size=16).hexdigest()


def normalization_constants(data, reward: str, *, scope: str = "all",
                            spec: FrameSpec | None = None) -> NormalizationConstants:
    """Compute, in one call, the mean and std a plug-in should normalize ``reward`` with.

    kanachan's reward plug-in contract asks for rewards with mean near 0 and
    standard deviation near 1, and its examples say to "calculate the mean and
    standard deviation from the training data in advance": this is that
    calculation, exact, over the whole dataset.

    Parameters
    ----------
    data : polars.DataFrame, LazyFrame, or path(s) to Parquet
        A rewards table or a frame with reward columns.
    reward : str
        The plug-in name (``"top"``) or its column (``"reward_top"``).
    scope : str
        Which values to normalize (:data:`SCOPES`): e.g. ``"end_of_game"``
        for a reward that is non-zero only at the end of a game, as in the
        kanachan examples.
    spec : FrameSpec, optional
        How the data's rows form episodes, for the scopes that need them
        (default: the spec the frame carries or is recognized by; see
        :func:`rewardlab.sources.registry.spec_of`).

    Returns
    -------
    NormalizationConstants
        Frozen; the export step takes it as is.

    Raises
    ------
    FrameError
        When the scope holds no values or they are all equal (std 0).

    Examples
    --------
    >>> import polars as pl
    >>> f = pl.DataFrame({"reward_a": [1.0, 3.0]})
    >>> c = normalization_constants(f, "a")
    >>> c.mean, c.std, c.count, c.rows
    (2.0, 1.0, 2, 2)
    """
    _check_scope(scope)
    lf, source = lazy_table(data)
    name = resolve_reward(column_names(lf), reward)
    values = scope_values(lf, name, scope=scope, spec=spec)
    if not np.all(np.isfinite(values)):
        raise FrameError(f"reward {name!r} has {int((~np.isfinite(values)).sum())} non-finite values "
                         f"in scope {scope!r}", hint="Rewards must be finite numbers; check the plug-in")
    m = Moments.of(values)
    if m.count == 0:
        raise FrameError(f"reward {name!r} has no values in scope {scope!r}",
                         hint="Choose another scope, e.g. scope='all'")
    if not m.std > 0:
        raise FrameError(f"reward {name!r} is constant ({m.mean!r}) over the {m.count} values in scope "
                         f"{scope!r}, so its standard deviation is 0 and it cannot be normalized",
                         hint="Choose a scope where the reward varies")
    rows = lf.select(pl.len()).collect(engine="streaming").item()
    return NormalizationConstants(reward=name, scope=scope, mean=m.mean, std=m.std, count=m.count,
                                  source=source, rows=int(rows), fingerprint=_fingerprint(values))
