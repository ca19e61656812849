"""Which steps a statistic reads: scopes, episode ends and trajectory ends, through the frame's spec.

Scopes
------
Scopes that need episodes read them through the frame's spec
(:func:`rewardlab.sources.registry.spec_of`: an explicit ``spec=``, the spec
the frame carries, a recognized one such as kanachan's, or
:data:`~rewardlab.sources.registry.REWARDS_ONLY` for a table of ``reward_*`` /
``done_*`` columns alone, one stream).

=======================  =====================================================================
``"all"``                every step
``"nonzero"``            steps whose reward is not 0
``"boundary"``           the last step of each sub-episode: a boundary flag of the spec
                         (kanachan's ``end_of_round``) or an episode end, so a game's last step
                         counts even where kanachan's offline files mark it
                         ``end_of_round=False``.  Needs the spec's boundary flags and, like
                         ``"episode_end"``, its terminal flags.
``"episode_end"``        the last step of each episode: where the spec's ``terminated`` or
                         ``truncated`` flag fires (kanachan's ``end_of_game``); a spec without
                         terminal flags ends an episode where its episode key changes.  Needs
                         the flags the spec declares.
``"episode_return"``     the undiscounted return of each whole episode of the spec (one value per
                         episode, whatever the plug-in's ``done_<name>`` says): what the plots and
                         ``rewardlab plot --kind returns`` call an episode return (see
                         :func:`rewardlab.analysis.compare.episode_return_table`).  Needs
                         episodes, like ``"episode_end"``.
``"trajectory_return"``  the undiscounted return of each trajectory, trajectories ending at the
                         plug-in's own ``done_<name>`` and at every episode end (see
                         :func:`rewardlab.analysis.return_tables.trajectory_returns`): what kanachan's
                         trainer sums.  Equal to ``"episode_return"`` for a plug-in whose
                         ``done`` fires only at episode ends; more values otherwise (on the
                         sample, 960 episodes, 8,304 trajectories of ``delta``, done every round).
``"end_of_round"``       kanachan's word for ``"boundary"`` (same steps on any frame).
``"end_of_game"``        kanachan's word for ``"episode_end"`` (same steps on any frame).
=======================  =====================================================================

Both a rewards table written by ``rewardlab apply`` (the episode key columns
plus ``reward_*`` / ``done_*``) and a full frame with reward columns work; the
``boundary`` and ``episode_end`` scopes need the flags, so the full frame.

Examples
--------
>>> import polars as pl
>>> frame = pl.DataFrame({"e": [0, 0, 0, 1], "reward_a": [0.0, 1.0, 0.0, 3.0],
...                       "done_a": [True, True, False, True]})
>>> spec = FrameSpec(name="s", episode=("e",))
>>> scope_values(frame, "a", scope="trajectory_return", spec=spec).tolist()
[0.0, 1.0, 0.0, 3.0]
>>> scope_values(frame, "a", scope="episode_return", spec=spec).tolist()
[1.0, 3.0]
"""

from __future__ import annotations

from typing import Sequence

import numpy as np
import polars as pl

from rewardlab.analysis.sums import segment_sums
from rewardlab.analysis.tables import column_names, lazy_table, need_column, resolve_reward
from rewardlab.core import columns
from rewardlab.core.errors import ColumnNotFoundError, ParameterError, SpecError, check_choice
from rewardlab.core.spec import FrameSpec, attached
from rewardlab.sources.registry import known_specs, spec_of

__all__ = [
    "SCOPES", "SCOPE_ALIASES", "VALUE", "check_scope", "scope_values", "scope_lazy", "declared_spec",
    "episode_end_expr", "trajectory_end_expr", "cut_expr", "segment_id_expr", "scope_mask_expr", "RETURN_SCOPES",
    "summed_segments",
]

#: The scopes every statistic accepts (see the module docstring): the generic ones, then
#: kanachan's words for two of them (:data:`SCOPE_ALIASES`).
SCOPES = ("all", "nonzero", "boundary", "episode_end", "episode_return", "trajectory_return",
          "end_of_round", "end_of_game")

#: The scopes holding one sum per episode or per trajectory rather than step values.
RETURN_SCOPES = ("episode_return", "trajectory_return")

#: kanachan's names for two generic scopes; they select the same steps on any frame.
SCOPE_ALIASES = {"end_of_round": "boundary", "end_of_game": "episode_end"}

#: The column a scoped lazy frame holds (:func:`scope_lazy`).
VALUE = "value"


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


def cut_expr(names: Sequence[str], spec: FrameSpec) -> pl.Expr:
    """True on a step the spec's ``truncated`` flag cuts and its ``terminated`` flag does not end (column ``_cut``).

    The one reading of the two flags for returns and normalizer replays: a
    cut step's next state has a value (bootstrap; Gymnasium's running return
    carries on), an ended one does not, and a step flagged both ways ended
    (terminated wins, as in TorchRL and Gymnasium's wrappers).  Frames a spec
    validated never flag both; a table read without that check may.

    Examples
    --------
    >>> spec = FrameSpec(name="s", terminated="term", truncated="trunc")
    >>> f = pl.DataFrame({"term": [False, True, True], "trunc": [True, False, True]})
    >>> f.select(cut_expr(f.columns, spec))["_cut"].to_list()
    [True, False, False]
    """
    if spec.truncated is None or spec.truncated not in names:
        return pl.lit(False).alias("_cut")
    cut = pl.col(spec.truncated).fill_null(False)
    if spec.terminated is not None and spec.terminated in names:
        cut = cut & ~pl.col(spec.terminated).fill_null(False)
    return cut.alias("_cut")


def segment_id_expr(end: pl.Expr, name: str = "_episode") -> pl.Expr:
    """The index (0, 1, ...) of the segment each row belongs to, segments ending where ``end`` is True.

    Examples
    --------
    >>> pl.DataFrame({"x": [True, False, True]}).select(segment_id_expr(pl.col("x")))["_episode"].to_list()
    [0, 1, 1]
    """
    return end.shift(1, fill_value=False).cast(pl.UInt32).cum_sum().alias(name)


def summed_segments(lf: pl.LazyFrame, end: pl.Expr, values: dict, *, keep=()) -> pl.DataFrame:
    """One row per segment (segments end where ``end`` is True, and at the last row), in data order: the
    first value of each ``keep`` column, then each of ``values`` summed over the segment.

    Sums are :func:`rewardlab.analysis.sums.segment_sums` (compensated, step by step in the segment's
    order), so a segment's sum does not depend on where it lies in the data; nulls count as 0, as in a
    Polars sum.

    Parameters
    ----------
    lf : polars.LazyFrame
    end : polars.Expr
        Boolean, True on each segment's last row.
    values : dict
        ``{name: expression}`` of the values to sum (cast to Float64).
    keep : sequence of str
        Columns whose first value per segment to keep.

    Returns
    -------
    polars.DataFrame
        ``keep`` columns, then one Float64 column per name of ``values``.

    Examples
    --------
    >>> lf = pl.LazyFrame({"e": [0, 0, 1], "r": [0.1, 0.2, 4.0]})
    >>> summed_segments(lf, pl.col("e") != pl.col("e").shift(-1), {"r": pl.col("r")}, keep=["e"]).rows()
    [(0, 0.30000000000000004), (1, 4.0)]
    """
    df = lf.select(end.fill_null(True).alias("_end"), *keep,
                   *[e.cast(pl.Float64).fill_null(0.0).alias(f"_sum {n}") for n, e in values.items()]).collect()
    if df.height == 0:
        return pl.DataFrame({**{k: df[k] for k in keep}, **{n: pl.Series(n, [], dtype=pl.Float64) for n in values}})
    ends = df["_end"].to_numpy().astype(bool)
    starts = np.flatnonzero(np.concatenate(([True], ends[:-1])))
    out = {k: df[k].gather(starts) for k in keep}
    out.update({n: pl.Series(n, segment_sums(df[f"_sum {n}"].to_numpy(), starts)) for n in values})
    return pl.DataFrame(out)


def check_scope(scope: str) -> str:
    return check_choice("scope", scope, SCOPES)


def scope_mask_expr(names: Sequence[str], name: str, scope: str, spec: FrameSpec,
                    declared: FrameSpec | None = None) -> pl.Expr:
    """True on the steps of a per-step scope (every scope but :data:`RETURN_SCOPES`).

    Parameters
    ----------
    names : sequence of str
        The data's columns.
    name : str
        The plug-in name (``"nonzero"`` reads ``reward_<name>``).
    scope : str
        One of :data:`SCOPES` but :data:`RETURN_SCOPES`.
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
    raise ParameterError("scope", "should be a per-step scope (not 'episode_return' or 'trajectory_return')",
                         scope)


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


def scope_lazy(lf: pl.LazyFrame, name: str, scope: str, spec: FrameSpec | None = None) -> pl.LazyFrame:
    """A lazy frame with one Float64 column ``value``: the values of ``reward`` in ``scope``."""
    names = column_names(lf)
    col = columns.REWARD_PREFIX + name
    value = pl.col(col).cast(pl.Float64).alias(VALUE)
    if scope == "all":
        return lf.select(value)
    if scope == "nonzero":
        return lf.select(value).filter(pl.col(VALUE) != 0)
    declared, here = declared_spec(lf, spec)
    if scope == "episode_return":
        if not (here.episode or here.terminals):
            raise SpecError(f"scope 'episode_return' needs episodes, and the {here.name} spec has no episode "
                            "column and no terminal flag", column=None,
                            hint="Pass the full frame or a rewards table with its episode keys, use "
                            "scope='trajectory_return' (cut at done_<name>), or declare the episodes "
                            "with spec=rewardlab.FrameSpec(name=..., episode=('episode_id',))")
        return summed_segments(lf, episode_end_expr(names, here), {VALUE: value}).lazy()
    if scope != "trajectory_return":
        return lf.filter(scope_mask_expr(names, name, scope, here, declared)).select(value)
    done = columns.DONE_PREFIX + name
    if done not in names:
        raise ColumnNotFoundError(done, [c for c in names if c.startswith(columns.DONE_PREFIX)])
    return summed_segments(lf, trajectory_end_expr(names, done, here), {VALUE: value}).lazy()


def scope_values(data, reward: str, *, scope: str = "all", spec: FrameSpec | None = None) -> np.ndarray:
    """The values of ``reward`` in ``scope`` as a float64 array (data order; returns in episode order).

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
    >>> scope_values(f, "a", scope="trajectory_return")
    array([3., 4.])
    """
    check_scope(scope)
    lf, _ = lazy_table(data)
    name = resolve_reward(column_names(lf), reward)
    sl = scope_lazy(lf, name, scope, spec)
    return sl.collect()[VALUE].to_numpy().astype(np.float64, copy=False)
