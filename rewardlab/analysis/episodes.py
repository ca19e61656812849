"""One episode in detail: its steps, each candidate's reward, done and running return, boundaries, how it ended.

The drill-down behind "click an episode": :func:`episode_detail` picks one
episode of a frame (by its key values, e.g. ``{"game_id": ..., "seat": 2}``
for kanachan data or ``{"episode_id": 7}`` for a steps table, or by its index
in :func:`rewardlab.analysis.compare.episode_return_table` order) and returns
an :class:`EpisodeDetail`.  Episodes are read through the frame's spec
(:func:`rewardlab.sources.registry.spec_of`, or ``spec=``), as in the
comparison: an episode ends where a terminal flag fires or the episode key
changes, whatever each plug-in's own ``done`` says, so the running return's
last value is the episode's return in the comparison's returns table.

Domain analyses add their own facts (the mahjong scores and ranks per round:
:func:`rewardlab.domains.mahjong.episodes.mahjong_episode_detail`).

Examples
--------
>>> import polars as pl
>>> from rewardlab.core.spec import FrameSpec
>>> spec = FrameSpec(name="s", episode=("e",), step="t", terminated="term")
>>> f = pl.DataFrame({"e": [0, 0, 1, 1], "t": [0, 1, 0, 1], "term": [False, True, False, True],
...                   "reward_a": [1.0, 2.0, 4.0, 8.0], "done_a": [False, True, False, True]})
>>> d = episode_detail(f, {"e": 1}, spec=spec)
>>> d.steps["return_a"].to_list(), d.returns, d.ended
([4.0, 12.0], {'a': 12.0}, 'terminated')
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from typing import Sequence

import numpy as np
import polars as pl

from rewardlab.analysis.scopes import episode_end_expr, segment_id_expr
from rewardlab.analysis.sums import running_sums, segment_sums
from rewardlab.analysis.tables import column_names, lazy_table, rewards_to_use
from rewardlab.core import columns
from rewardlab.core.errors import ColumnNotFoundError, ParameterError
from rewardlab.core.spec import FrameSpec
from rewardlab.sources.registry import spec_of
from rewardlab.sources.values import plain_value

__all__ = ["EpisodeDetail", "episode_detail", "episode_keys", "RETURN_PREFIX", "SEGMENT"]

#: Prefix of the running-return columns of :attr:`EpisodeDetail.steps` (``return_<name>``).
RETURN_PREFIX = "return_"
#: Column of :attr:`EpisodeDetail.segments` numbering the sub-episodes (rounds in mahjong).
SEGMENT = "segment"
_INDEX = "_episode"


@dataclasses.dataclass(frozen=True, eq=False)
class EpisodeDetail:
    """One episode step by step (see :func:`episode_detail`).

    Attributes
    ----------
    index : int
        The episode's index in :func:`~rewardlab.analysis.compare.episode_return_table` order.
    key : dict
        Its episode key values (``{"game_id": ..., "seat": 2}``; empty for a single stream).
    rewards : tuple of str
        The candidates shown.
    step : str
        The step column of :attr:`steps` (the spec's, or ``"step"`` numbering the rows 0, 1, ...).
    steps : polars.DataFrame
        One row per step: ``step``, then per candidate ``reward_<name>``,
        ``done_<name>`` (where the data has it) and ``return_<name>`` (the
        running undiscounted return from the episode's first step), then the
        spec's boundary flags and terminal flags present, then the
        ``columns`` asked for.
    boundaries, terminals : tuple of str
        The flag columns of :attr:`steps`.
    segments : polars.DataFrame
        One row per sub-episode (a round in kanachan data), ending at a
        boundary flag or the episode's end: ``segment`` (0, 1, ...), ``step``
        (its last step), ``length`` and ``return_<name>``, each candidate's return within it;
        domain analyses add columns (mahjong: scores, deltas and rank).
    returns : dict of str to float
        Each candidate's episode return.
    length : int
        Steps.
    ended : str
        ``"terminated"``, ``"truncated"``, or ``"unflagged"`` (the spec has no
        terminal flag there: the key changed or the data ended).
    outcome : dict
        The final result: ``length``, ``ended``, ``return_<name>``, and, where
        the spec has state columns with final columns in the data, each
        state's final value (``final_<state>``: the state after the last
        step, a list for an array state; None where the data lacks it, so a
        plug-in saw padding there); domain analyses add theirs (mahjong:
        ``final_score``, ``rank``, ``final_scores``).
    final : dict
        ``{state: value or None}``: the episode's final state per state
        with a final column (empty when the spec keeps none).
    """

    index: int
    key: dict
    rewards: tuple
    step: str
    steps: pl.DataFrame
    boundaries: tuple
    terminals: tuple
    segments: pl.DataFrame
    returns: dict
    length: int
    ended: str
    outcome: dict
    final: dict = dataclasses.field(default_factory=dict)

    @property
    def title(self) -> str:
        """A short name of the episode: its key values, or its index."""
        if self.key:
            return ", ".join(f"{k} {v}" for k, v in self.key.items())
        return f"episode {self.index}"

    def summary(self) -> pl.DataFrame:
        """:attr:`outcome` as a two-column table (``what``, ``value``) for display.

        Examples
        --------
        >>> detail.summary()  # doctest: +SKIP
        """
        return pl.DataFrame({"what": list(self.outcome), "value": [str(v) for v in self.outcome.values()]},
                            schema={"what": pl.String, "value": pl.String})


def episode_keys(table: pl.DataFrame, keys: Sequence[str]) -> list[dict]:
    """The rows of a table (returns, most disagreeing episodes) as episode selectors for :func:`episode_detail`.

    Each row gives a dict of its ``keys`` columns (kanachan's ``game_id``,
    ``seat``), or ``{"episode": i}`` when ``keys`` is just the index.

    Examples
    --------
    >>> episode_keys(pl.DataFrame({"episode": [3], "game_id": ["g"], "seat": [1], "gap": [2.0]}),
    ...              ["episode", "game_id", "seat"])
    [{'game_id': 'g', 'seat': 1}]
    """
    named = [k for k in keys if k != "episode"] or [k for k in keys if k == "episode"]
    return [dict(zip(named, row)) for row in table.select(named).iter_rows()]


def _select(lf: pl.LazyFrame, names: list[str], here: FrameSpec, episode) -> tuple[pl.Expr, int | None]:
    """The filter picking the episode, and its index when given as an index."""
    if isinstance(episode, (bool, np.bool_)):
        raise ParameterError("episode", "should be an episode index (int) or a dict of episode key values",
                             episode)
    if isinstance(episode, (int, np.integer)):
        count = lf.select(segment_id_expr(episode_end_expr(names, here), _INDEX).max()).collect().item()
        count = 0 if count is None else int(count) + 1
        if not 0 <= int(episode) < count:
            raise ParameterError("episode", f"should be an episode index in [0, {count - 1}] (the data has "
                                 f"{count} episode{'s' if count != 1 else ''})", int(episode))
        return pl.col(_INDEX) == int(episode), int(episode)
    if not isinstance(episode, Mapping):
        raise ParameterError("episode", "should be an episode index (int) or a dict of episode key values",
                             type(episode).__name__)
    keys = [k for k in here.episode if k in names]
    given = dict(episode)
    if set(given) == {"episode"}:
        return _select(lf, names, here, given["episode"])
    if not keys:
        raise ParameterError("episode", f"should be an episode index: the {here.name} spec has no episode "
                             "key columns", given)
    unknown = [k for k in given if k not in keys]
    missing = [k for k in keys if k not in given]
    if unknown or missing:
        raise ParameterError("episode", "should give exactly the episode key columns "
                             + ", ".join(keys) + (f" (unknown: {', '.join(map(str, unknown))})" if unknown else "")
                             + (f" (missing: {', '.join(missing)})" if missing else ""), given)
    expr = pl.lit(True)
    for k in keys:
        col = pl.col(k).cast(pl.String) if isinstance(given[k], str) else pl.col(k)
        expr = expr & (col == given[k])
    return expr, None


def episode_detail(data, episode, *, rewards=None, spec: FrameSpec | None = None,
                   columns: Sequence[str] = ()) -> EpisodeDetail:
    """One episode step by step: rewards, dones and running returns per candidate, boundaries, how it ended.

    Parameters
    ----------
    data : polars.DataFrame, LazyFrame, or path(s) to Parquet
        A frame or rewards table with ``reward_<name>`` columns.
    episode : int or dict
        The episode's index in :func:`~rewardlab.analysis.compare.episode_return_table`
        order, or its key values: a dict of the spec's episode key columns
        (``{"game_id": "...", "seat": 2}``; ``{"episode_id": 7}``), or
        ``{"episode": i}``.
    rewards : str or iterable of str, optional
        Candidates; default every ``reward_*`` column.
    spec : FrameSpec, optional
        How the rows form episodes (default: the frame's spec, see
        :func:`rewardlab.sources.registry.spec_of`).
    columns : sequence of str
        Other columns of the data to keep in :attr:`EpisodeDetail.steps`
        (``action``, kanachan's ``results``).

    Returns
    -------
    EpisodeDetail

    Raises
    ------
    ParameterError
        ``episode`` is out of range, names columns other than the episode
        keys, or matches no episode (the message names ``episode``).
    ColumnNotFoundError
        A column in ``columns`` or a reward is missing.

    Examples
    --------
    >>> import polars as pl
    >>> f = pl.DataFrame({"term": [False, True, True], "reward_a": [1.0, 2.0, 4.0], "done_a": [False, True, True]})
    >>> d = episode_detail(f, 0, spec=FrameSpec(name="stream", terminated="term"))
    >>> d.steps["return_a"].to_list(), d.ended
    ([1.0, 3.0], 'terminated')
    """
    lf, _ = lazy_table(data)
    names = column_names(lf)
    use = rewards_to_use(names, rewards)
    here = spec_of(lf, spec)
    extra = [columns] if isinstance(columns, str) else list(columns)
    for c in extra:
        if c not in names:
            raise ColumnNotFoundError(c, names)
    which, index = _select(lf, names, here, episode)
    keys = [k for k in here.episode if k in names]
    boundaries = tuple(b for b in here.boundaries if b in names)
    terminals = tuple(t for t in here.terminals if t in names)
    step = here.step if here.step is not None and here.step in names else "step"
    rcol = {n: pl.col(_reward_col(n)).cast(pl.Float64) for n in use}
    done = {n: _done_col(n) for n in use if _done_col(n) in names}
    finals = {st.name: st.final for st in here.states if st.final is not None and st.final in names}
    needed = dict.fromkeys([*keys, *([step] if step in names else []), *map(_reward_col, use), *done.values(),
                            *boundaries, *terminals, *finals.values(), *extra])
    picked = (  # only the columns shown are read: a dataset's state columns stay on disk
        lf.with_columns(segment_id_expr(episode_end_expr(names, here), _INDEX))
        .select(_INDEX, *needed)
        .filter(which)
        .collect()
    )
    if picked.height == 0:
        raise ParameterError("episode", "should match an episode of the data; none has these key values",
                             dict(episode), hint="Take keys from the returns table or the most disagreeing "
                             "episodes (their key columns)")
    first = int(picked[_INDEX][0])
    picked = picked.filter(pl.col(_INDEX) == first)  # a key seen twice: its first episode
    index = first if index is None else index
    n = picked.height
    step_expr = pl.col(step) if step in names else pl.int_range(pl.len(), dtype=pl.Int64).alias("step")
    cols = [step_expr]
    for name in use:
        cols.append(rcol[name].alias(_reward_col(name)))
        if name in done:
            cols.append(pl.col(done[name]))
        cols.append(pl.Series(RETURN_PREFIX + name, running_sums(picked.select(rcol[name]).to_series().to_numpy())))
    cols += [pl.col(c).fill_null(False) for c in (*boundaries, *terminals)]
    cols += [pl.col(c) for c in extra if c not in (step, *boundaries, *terminals)]
    steps = picked.select(cols)
    last = steps.row(n - 1, named=True)
    ended = next((t for t in ("terminated", "truncated")
                  if getattr(here, t) in terminals and last[getattr(here, t)]), "unflagged")
    returns = {name: float(last[RETURN_PREFIX + name]) for name in use}
    key = {k: _plain(picked[k][0]) for k in keys}
    ends = np.zeros(n, dtype=bool)
    for b in boundaries:
        ends |= steps[b].to_numpy().astype(bool)
    ends[-1] = True
    seg = np.zeros(n, dtype=np.int64)
    seg[1:] = np.cumsum(ends[:-1])
    starts = np.concatenate(([0], np.flatnonzero(ends)[:-1] + 1))
    segments = pl.DataFrame({
        SEGMENT: np.arange(starts.size, dtype=np.int64),
        "step": steps[step_expr.meta.output_name()].gather(np.flatnonzero(ends)).to_list(),
        "length": np.diff(np.append(starts, n)).astype(np.int64),
        **{RETURN_PREFIX + name: segment_sums(steps[_reward_col(name)].to_numpy(), starts) for name in use},
    })
    final = {state: _plain(picked[column][n - 1]) for state, column in finals.items()}  # an array state: a list
    outcome = ({"length": n, "ended": ended} | {RETURN_PREFIX + name: v for name, v in returns.items()}
               | {column: final[state] for state, column in finals.items()})
    return EpisodeDetail(index=index, key=key, rewards=tuple(use), step=step_expr.meta.output_name(),
                         steps=steps, boundaries=boundaries, terminals=terminals, segments=segments,
                         returns=returns, length=n, ended=ended, outcome=outcome, final=final)


def _reward_col(name: str) -> str:
    return columns.reward_column(name)


def _done_col(name: str) -> str:
    return columns.done_column(name)


def _plain(value):
    """A value as a plain Python value (NumPy scalars become ints and floats, an array's Series a list)."""
    if isinstance(value, pl.Series):
        return value.to_list()
    return plain_value(value)
