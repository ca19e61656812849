"""Per-episode summaries: ReinforcementLearning.jl's episode hooks, as one Polars frame for any source.

ReinforcementLearning.jl collects, while it runs, ``TotalRewardPerEpisode``,
``StepsPerEpisode``, ``RewardsPerEpisode`` and ``TimePerStep``.  On recorded
data the same numbers are a group-by over episodes: :func:`episode_summary`
returns one row per episode of the frame's spec, in data order.

==========================  ============================================================
hook                        column of :func:`episode_summary`
==========================  ============================================================
``StepsPerEpisode``         ``steps`` (Int64)
``TotalRewardPerEpisode``   ``return_<name>`` per reward column (Float64, undiscounted)
``RewardsPerEpisode``       ``rewards_<name>`` per reward column (List(Float64), step order)
``TimePerStep``             ``time_per_step``: the mean difference of the spec's ``time``
                            column between consecutive steps of the episode (the column's
                            unit; a Duration for a Datetime column; null for a one-step
                            episode); only when the spec has a ``time`` column
==========================  ============================================================

and, first, ``episode`` (0, 1, ... in data order), the spec's episode key
columns present (of the episode's first step; an episode key called
``episode`` takes the index's place), ``start`` (the row of its first step)
and ``ended``: how the episode ended (:data:`ENDINGS`); when the data holds
the spec's state columns, ``final_state`` (Boolean): whether the data keeps
the episode's final state (the state after its last step, in the states'
final columns, :attr:`~rewardlab.core.spec.StateColumn.final`), so a
plug-in's next state on the last step is real; False where it is padding
(always for a spec without final columns, such as kanachan's, which pads by
contract).

Episodes come from the spec only (:func:`rewardlab.analysis.scopes.episode_end_expr`):
an episode ends where its key changes, where a terminal flag fires, and at
the data's last row, whatever the plug-ins' own ``done`` says.

Examples
--------
>>> import polars as pl
>>> from rewardlab.core.spec import FrameSpec
>>> spec = FrameSpec(name="s", episode=("e",), terminated="term", truncated="trunc")
>>> f = pl.DataFrame({"e": [0, 0, 1, 2], "term": [False, True, False, False],
...                   "trunc": [False, False, True, False], "reward_a": [1.0, 2.0, 4.0, 8.0]})
>>> s = episode_summary(f, spec=spec)
>>> s.select("e", "steps", "ended", "return_a").rows()
[(0, 2, 'terminated', 3.0), (1, 1, 'truncated', 4.0), (2, 1, 'cut', 8.0)]
>>> s["rewards_a"].to_list()
[[1.0, 2.0], [4.0], [8.0]]
"""

from __future__ import annotations

import math

import numpy as np
import polars as pl

from rewardlab.analysis.scopes import declared_spec, episode_end_expr, segment_id_expr
from rewardlab.analysis.sums import segment_sums
from rewardlab.analysis.tables import column_names, lazy_table, resolve_reward
from rewardlab.core import columns
from rewardlab.core.errors import ParameterError, SpecError
from rewardlab.core.spec import FrameSpec, attach

__all__ = ["episode_summary", "summary_rewards", "describe_episodes", "ENDINGS", "RETURN_PREFIX",
           "REWARDS_PREFIX"]

#: How an episode ended (column ``ended``): its last step has ``terminated`` set, or ``truncated``;
#: ``"cut"``: the data ends there and no terminal flag of the spec fires (a recording stopped
#: mid-episode); ``"unflagged"``: the spec declares no terminal flag the data holds (or the
#: key changed without one), so the data cannot say.
ENDINGS = ("terminated", "truncated", "cut", "unflagged")
#: Prefix of the per-reward episode returns (``TotalRewardPerEpisode``).
RETURN_PREFIX = "return_"
#: Prefix of the per-reward list columns (``RewardsPerEpisode``).
REWARDS_PREFIX = "rewards_"
_FIXED = ("episode", "start", "steps", "ended", "final_state", "time_per_step")
_INDEX = "_episode"


def _rewards(names, rewards) -> list[str]:
    if rewards is None:
        return [c[len(columns.REWARD_PREFIX):] for c in names if c.startswith(columns.REWARD_PREFIX)]
    if isinstance(rewards, str):
        rewards = [rewards]
    if not isinstance(rewards, (list, tuple)):
        raise ParameterError("rewards", "should be a reward name, a list of them, or None (every reward_* "
                             "column)", rewards)
    return list(dict.fromkeys(resolve_reward(names, r) for r in rewards))


def episode_summary(frame, *, rewards=None, spec: FrameSpec | None = None, lists: bool = True) -> pl.DataFrame:
    """One row per episode: its length, how it ended, time per step, and each reward's return and rewards.

    ReinforcementLearning.jl's ``StepsPerEpisode``, ``TotalRewardPerEpisode``,
    ``RewardsPerEpisode`` and ``TimePerStep`` hooks over recorded data (see
    the module docstring for the columns).  Vectorized: one Polars group-by;
    on a lazy frame or dataset path only the columns needed are read.

    Parameters
    ----------
    frame : polars.DataFrame, LazyFrame, or path(s) to Parquet
        A frame of any source (kanachan, a step table, ...), or a rewards
        table with its episode keys.
    rewards : str or list of str, optional
        Reward names (``"top"``) or columns (``"reward_top"``); default every
        ``reward_*`` column (none is fine: lengths, endings and times only).
    spec : FrameSpec, optional
        How the rows form episodes (default: the frame's spec, see
        :func:`rewardlab.sources.registry.spec_of`).
    lists : bool, default True
        Include the ``rewards_<name>`` list columns (``RewardsPerEpisode``);
        False skips them (a summary of 10**7 steps without a copy of every reward).

    Returns
    -------
    polars.DataFrame
        ``episode``, the spec's episode key columns present, ``start``,
        ``steps``, ``ended`` (one of :data:`ENDINGS`), ``time_per_step``
        (only with a ``time`` column), then per reward ``return_<name>`` and
        ``rewards_<name>``; one row per episode, in data order.  It carries the
        spec projected to its key columns.

    Raises
    ------
    ParameterError
        A reward is named like a column of the summary, or ``lists`` is not a bool.
    ColumnNotFoundError
        A reward in ``rewards`` is missing.
    SpecError
        The data has no spec rewardlab can find (the message says how to declare one), an
        episode key is named like a summary column, or the time column is neither numbers nor times.

    Examples
    --------
    >>> import polars as pl
    >>> f = pl.DataFrame({"reward_a": [1.0, 2.0, 4.0]})
    >>> episode_summary(f).select("episode", "steps", "ended", "return_a").rows()
    [(0, 3, 'unflagged', 7.0)]
    """
    if not isinstance(lists, bool):
        raise ParameterError("lists", "should be True or False", lists)
    lf, _ = lazy_table(frame)
    names = column_names(lf)
    _, here = declared_spec(lf, spec)
    use = _rewards(names, rewards)
    keys = [k for k in here.episode if k in names]
    index = "episode" if "episode" not in keys else _INDEX
    named = [k for k in keys if k in _FIXED[1:]]
    if named:
        raise SpecError(f"the {here.name} spec's episode key is named like a column of the summary "
                        f"({', '.join(_FIXED[1:])})", column=named[0],
                        hint="Rename the key column (e.g. frame.rename(...)) and pass a spec naming it")
    taken = set(_FIXED) | set(keys)
    clash = [n for n in use if RETURN_PREFIX + n in taken or REWARDS_PREFIX + n in taken]
    if clash:
        raise ParameterError("rewards", "should not make a summary column named like a key column ("
                             + ", ".join(keys) + ")", clash)
    terminated = here.terminated if here.terminated in names else None
    truncated = here.truncated if here.truncated in names else None
    time = here.time if here.time is not None and here.time in names else None
    has_states = any(s.name in names for s in here.states)
    finals = [s.final for s in here.states if s.final is not None and s.final in names and s.name in names]
    if time is not None:
        dtype = lf.collect_schema()[time]
        if not (dtype.is_numeric() or dtype.is_temporal()):
            raise SpecError(f"the time column should hold numbers or times, found {dtype}", column=time,
                            hint="Cast it to seconds (Float64) or a Datetime")
    values = {n: pl.col(columns.reward_column(n)).cast(pl.Float64) for n in use}
    selected = [
        segment_id_expr(episode_end_expr(names, here), index),
        pl.int_range(pl.len(), dtype=pl.Int64).alias("start"),
        *keys,
        *([pl.col(terminated).fill_null(False).alias("_terminated")] if terminated else []),
        *([pl.col(truncated).fill_null(False).alias("_truncated")] if truncated else []),
        *([pl.col(time).alias("_time")] if time else []),
        *([pl.all_horizontal(pl.col(f).is_not_null() for f in finals).alias("final_state")] if finals else []),
        *[v.alias(RETURN_PREFIX + n) for n, v in values.items()],
    ]
    aggregated = [
        *[pl.col(k).first() for k in keys],
        pl.col("start").first(),
        pl.len().cast(pl.Int64).alias("steps"),
        *([pl.col("_terminated").last()] if terminated else []),
        *([pl.col("_truncated").last()] if truncated else []),
        *([pl.col("_time").diff().mean().alias("time_per_step")] if time else []),
        *([pl.col("final_state").last()] if finals else []),
    ]
    for n in use:
        if lists:
            aggregated.append(pl.col(RETURN_PREFIX + n).alias(REWARDS_PREFIX + n))
    steps = lf.select(*selected).collect()  # one read of the data: the group-by and the returns use it
    table = (
        steps.group_by(index)
        .agg(*aggregated)
        .sort(index)
        .with_columns(pl.col(index).cast(pl.Int64))
    )
    if use:  # the returns: compensated sums in each episode's own order (the same wherever it lies)
        starts = table["start"].to_numpy()
        table = table.with_columns(pl.Series(RETURN_PREFIX + n, segment_sums(steps[RETURN_PREFIX + n].to_numpy(),
                                                                             starts)) for n in use)
    expr = None
    for flag, word in (("_terminated", "terminated"), ("_truncated", "truncated")):
        if flag in table.columns:
            expr = (pl.when if expr is None else expr.when)(pl.col(flag)).then(pl.lit(word))
    if expr is None:  # no terminal flag in the data: it cannot say how episodes ended
        expr = pl.lit("unflagged")
    else:  # no flag on the data's last step: the recording stopped there
        expr = expr.when(pl.col(index) == pl.col(index).max()).then(pl.lit("cut")).otherwise(pl.lit("unflagged"))
    if has_states and not finals:  # the spec keeps no final state: every next state after a last step is padding
        table = table.with_columns(pl.lit(False).alias("final_state"))
    ordered = [index, *keys, "start", "steps", "ended", *(["final_state"] if has_states else []),
               *(["time_per_step"] if time else [])]
    for n in use:
        ordered.append(RETURN_PREFIX + n)
        if lists:
            ordered.append(REWARDS_PREFIX + n)
    table = table.with_columns(expr.cast(pl.String).alias("ended")).select(ordered)
    if index != "episode":
        table = table.drop(index)
    return attach(table, here.project(table.columns)) if here.episode else table


def summary_rewards(summary: pl.DataFrame) -> list[str]:
    """The reward names of an :func:`episode_summary` table (its ``return_<name>`` columns).

    Examples
    --------
    >>> summary_rewards(pl.DataFrame({"steps": [1], "return_a": [0.0], "rewards_a": [[0.0]]}))
    ['a']
    """
    if not isinstance(summary, pl.DataFrame):
        raise ParameterError("summary", "should be a polars DataFrame from rewardlab.episode_summary",
                             type(summary).__name__)
    return [c[len(RETURN_PREFIX):] for c in summary.columns if c.startswith(RETURN_PREFIX)]


def _distribution(values: np.ndarray) -> dict:
    """min, quartiles, max, mean and std (population) of the finite values (NaN for none), and how many are not."""
    finite = np.isfinite(values)
    nonfinite = int(values.size - np.count_nonzero(finite))
    values = values[finite]
    if values.size == 0:
        return {**{k: math.nan for k in ("min", "p25", "median", "p75", "max", "mean", "std")},
                "nonfinite": nonfinite}
    q = np.quantile(values, [0.0, 0.25, 0.5, 0.75, 1.0])
    return {"min": float(q[0]), "p25": float(q[1]), "median": float(q[2]), "p75": float(q[3]),
            "max": float(q[4]), "mean": float(values.mean()), "std": float(values.std()), "nonfinite": nonfinite}


def describe_episodes(summary: pl.DataFrame) -> dict:
    """A compact digest of an :func:`episode_summary`: episodes, endings, length and return distributions.

    What ``rewardlab info`` prints.

    Returns
    -------
    dict
        ``episodes``, ``ended`` (``{ending: count}`` for the endings that
        occur), ``final_states`` (``{"kept": count, "missing": count}``,
        when the summary has ``final_state``), ``steps`` and, per reward,
        ``returns[name]``: each a dict of
        ``min``, ``p25``, ``median``, ``p75``, ``max``, ``mean``, ``std``
        (population); and ``time_per_step`` (its mean over episodes, a float
        in the time column's unit) when the summary has it.

    Examples
    --------
    >>> s = pl.DataFrame({"steps": [2, 4], "ended": ["terminated", "cut"], "return_a": [1.0, 3.0]})
    >>> d = describe_episodes(s)
    >>> d["episodes"], d["ended"], d["steps"]["mean"], d["returns"]["a"]["max"]
    (2, {'terminated': 1, 'cut': 1}, 3.0, 3.0)
    """
    if not isinstance(summary, pl.DataFrame):
        raise ParameterError("summary", "should be a polars DataFrame from rewardlab.episode_summary",
                             type(summary).__name__)
    for c in ("steps", "ended"):
        if c not in summary.columns:
            raise ParameterError("summary", f"should be a table from rewardlab.episode_summary (it has no "
                                 f"{c!r} column)", summary.columns[:10])
    counts = summary["ended"].value_counts()
    found = dict(zip(counts["ended"].to_list(), counts["count"].to_list()))
    out = {
        "episodes": summary.height,
        "ended": {k: int(found[k]) for k in ENDINGS if k in found},
        "steps": _distribution(summary["steps"].cast(pl.Float64).to_numpy()),
        "returns": {n: _distribution(summary[RETURN_PREFIX + n].to_numpy()) for n in summary_rewards(summary)},
    }
    if "final_state" in summary.columns:
        kept = int(summary["final_state"].sum())
        out["final_states"] = {"kept": kept, "missing": summary.height - kept}
    if "time_per_step" in summary.columns:
        t = summary["time_per_step"]
        if t.dtype == pl.Duration:
            t = t.dt.total_microseconds().cast(pl.Float64) / 1e6
        mean = t.cast(pl.Float64).mean()
        out["time_per_step"] = float(mean) if mean is not None else math.nan
    return out
