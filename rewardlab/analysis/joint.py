"""The joint view of a multi-agent frame: every agent's action and state side by side, step by step.

A *joint frame* holds one row per (episode, step, agent): its spec names an
``agent`` column (``FrameSpec.agent``) and a ``step`` column.  The step-table
source reads one from any table with ``episode_id``, ``t``, ``agent_id``,
``action``, ``terminated``, ``truncated`` (and state) columns; there, as for
RLlib's multi-agent batches, each (episode, agent) is an episode of its own
(the spec's ``episode`` holds the agent column too) so single-agent
contracts keep working.  The *joint episode* is the spec's episode key
without the agent column.

:func:`joint_view` turns such a frame into a :class:`JointView`: one entry
per *joint step* (a joint episode and a step value), the agents in
ascending order of their ids (the column's sort order: numbers by value,
text lexicographically, so ``"agent_10"`` comes before ``"agent_2"``), and arrays shaped ``[S, n]`` (``S`` joint
steps, ``n`` agents; ``[S, n, w]`` for a column of width ``w``) for the
action, the flags, every state column and the numeric extra columns.
Joint steps come episode by episode (in order of each episode's first row
in the frame), steps ascending within an episode.  ``view.rows[s, i]`` is
the frame row of agent ``i`` at joint step ``s``; :func:`scatter_rows` (or
``view.scatter``) puts ``[S, n]`` values back in frame row order.

The view is rectangular, so the frame must be: every agent of an episode
has exactly one row at every step of it, and every episode has the same
agents.  The checks run in this order and the first problem found, in
joint order (episode, then step, then agent), is raised as a
:class:`~rewardlab.core.errors.SpecError` naming the episode, the step and
the agent and one frame row:

1. two rows for one agent and step (the row named is the second, in frame order);
2. an agent of the episode without a row at a step (the lowest such agent):
   *missing* when it acts before and after that step, otherwise *the agents
   change mid-episode* (it joins late or leaves early; the row named is the
   step's first row);
3. an episode whose agents differ from the first episode's (the row named is
   that episode's first row).

:func:`joint_view_loop` and :func:`scatter_rows_loop` are the plain-loop
twins the tests compare with.

Examples
--------
>>> import polars as pl
>>> from rewardlab.core.spec import FrameSpec
>>> frame = pl.DataFrame({"episode_id": [0, 0, 0, 0], "t": [0, 1, 0, 1], "agent_id": [7, 7, 3, 3],
...                       "action": [1, 2, 0, 1], "terminated": [False, True, False, True]})
>>> spec = FrameSpec(name="steps", episode=("episode_id", "agent_id"), step="t", agent="agent_id",
...                  terminated="terminated", columns=("action",))
>>> view = joint_view(frame, spec=spec)
>>> view.agents, view.actions.tolist(), view.rows.tolist()
((3, 7), [[0, 1], [1, 2]], [[2, 0], [3, 1]])
>>> view.scatter(view.actions * 10).tolist()
[10, 20, 0, 10]
"""

from __future__ import annotations

from dataclasses import dataclass
from types import MappingProxyType
from typing import Mapping, Sequence

import numpy as np
import polars as pl

from rewardlab.core.errors import ColumnNotFoundError, ParameterError, SpecError
from rewardlab.core.spec import FrameSpec
from rewardlab.sources.registry import spec_of
from rewardlab.sources.values import plain_value
from rewardlab.sources.steps import RECORDED

__all__ = ["ACTION_NAMES", "JointView", "joint_view", "joint_view_loop", "scatter_rows", "scatter_rows_loop",
           "joint_episode_columns"]

#: The action column's default names, tried in order among the spec's columns, then the frame's.
ACTION_NAMES = ("action", "actions")

_EPISODE_CODE = "__rewardlab_joint_episode__"


@dataclass(frozen=True, eq=False)
class JointView:
    """A joint frame as ``[S, n]`` arrays: ``S`` joint steps, ``n`` agents in ascending id order.

    Built by :func:`joint_view`; every array is read-only.

    Attributes
    ----------
    episode_columns : tuple of str
        The joint episode's key columns (the spec's episode key without the agent).
    step_column, agent_column, action_column : str
    episode_keys : polars.DataFrame
        One row per joint episode (its key values), in order of first appearance in the frame.
    episode : numpy.ndarray of int64, shape ``[S]``
        Each joint step's episode (a row of ``episode_keys``).
    t : numpy.ndarray, shape ``[S]``
        Each joint step's step value (ascending within an episode).
    agents : tuple
        The agent ids, ascending (``n`` of them).
    actions : numpy.ndarray, shape ``[S, n]`` (``[S, n, w]`` for an array column)
    terminated, truncated : numpy.ndarray of bool, shape ``[S, n]``
        The spec's flags (all False where the spec has none).
    states : mapping of str to numpy.ndarray
        Every state column of the spec, ``[S, n]`` or ``[S, n, w]``.
    extras : mapping of str to numpy.ndarray
        The extra columns asked for (by default the spec's numeric and Boolean extras but the action, and
        ``reward_recorded``).
    rows : numpy.ndarray of int64, shape ``[S, n]``
        The frame row of each (joint step, agent).
    height : int
        The frame's row count (``S * n``).
    """

    episode_columns: tuple[str, ...]
    step_column: str
    agent_column: str
    action_column: str
    episode_keys: pl.DataFrame
    episode: np.ndarray
    t: np.ndarray
    agents: tuple
    actions: np.ndarray
    terminated: np.ndarray
    truncated: np.ndarray
    states: Mapping[str, np.ndarray]
    extras: Mapping[str, np.ndarray]
    rows: np.ndarray
    height: int

    @property
    def steps(self) -> int:
        """``S``, the number of joint steps."""
        return int(self.rows.shape[0])

    @property
    def n_agents(self) -> int:
        """``n``, the number of agents."""
        return len(self.agents)

    @property
    def inputs(self) -> dict[str, np.ndarray]:
        """The states and extras in one dict (what a reward evaluator receives as ``states``)."""
        return {**self.states, **self.extras}

    def episode_value(self, step: int):
        """The key of joint step ``step``'s episode: its value (one key column) or a tuple of values."""
        values = self.episode_keys.row(int(self.episode[step]))
        return values[0] if len(values) == 1 else values

    def describe(self, step: int, agent: int | None = None) -> str:
        """``"episode E, step t=T, agent A"`` for joint step ``step`` and agent position ``agent``.

        Examples
        --------
        >>> import polars as pl
        >>> from rewardlab.core.spec import FrameSpec
        >>> f = pl.DataFrame({"ep": ["a", "a"], "t": [4, 4], "who": [1, 2], "action": [0, 0]})
        >>> v = joint_view(f, spec=FrameSpec(name="s", episode=("ep",), step="t", agent="who"))
        >>> v.describe(0, 1)
        "episode 'a', step t=4, agent 2"
        """
        text = f"episode {_show(self.episode_value(step))}, step {self.step_column}={_show(self.t[step])}"
        return text if agent is None else f"{text}, agent {_show(self.agents[agent])}"

    def scatter(self, values) -> np.ndarray:
        """:func:`scatter_rows` of ``values`` over this view."""
        return scatter_rows(self, values)


# --------------------------------------------------------------------------
# Shared pieces
# --------------------------------------------------------------------------


def _show(value) -> str:
    value = plain_value(value)
    return repr(value) if isinstance(value, (str, tuple)) else str(value)


def _readonly(a: np.ndarray) -> np.ndarray:
    a = np.ascontiguousarray(a)
    a.setflags(write=False)
    return a


def joint_episode_columns(spec: FrameSpec) -> tuple[str, ...]:
    """The joint episode's key columns: the spec's episode key without its agent column.

    Examples
    --------
    >>> joint_episode_columns(FrameSpec(name="s", episode=("eps_id", "agent"), step="t", agent="agent"))
    ('eps_id',)
    """
    return tuple(c for c in spec.episode if c != spec.agent)


def _numeric(dtype) -> bool:
    while isinstance(dtype, (pl.Array, pl.List)):
        dtype = dtype.inner
    return dtype.is_numeric() or dtype == pl.Boolean


def _resolve(frame, spec, action, extras):
    """The spec and the columns of the view, checked (shared by the view and its loop twin)."""
    if not isinstance(frame, pl.DataFrame):
        raise ParameterError("frame", "should be a polars DataFrame (collect a LazyFrame first)",
                             type(frame).__name__)
    spec = spec_of(frame, spec)
    if spec.agent is None:
        raise SpecError(f"the {spec.name} spec names no agent column: a joint view needs one row per "
                        "(episode, step, agent)",
                        hint="Load a step table with an agent_id column (rewardlab.load(path, format='steps')), "
                        "or declare agent= in the spec")
    if spec.step is None:
        raise SpecError(f"the {spec.name} spec names no step column: a joint view lines agents up by step",
                        column=spec.agent, hint="Declare step= in the spec (the step index within the episode)")
    episode = joint_episode_columns(spec)
    if not episode:
        raise SpecError(f"the {spec.name} spec's episode key is only the agent column: a joint view needs "
                        "an episode column besides the agent", column=spec.agent,
                        hint="Declare episode=('episode_id', 'agent_id') (the episode, then the agent)")
    names = frame.columns
    if action is None:
        found = [c for c in ACTION_NAMES if c in spec.columns] or [c for c in ACTION_NAMES if c in names]
        if not found:
            raise ColumnNotFoundError(" or ".join(ACTION_NAMES), names)
        action = found[0]
    elif not isinstance(action, str):
        raise ParameterError("action", "should be a column name or None (detect 'action' / 'actions')", action)
    elif action not in names:
        raise ColumnNotFoundError(action, names)
    states = spec.state_names
    if extras is None:
        candidates = (*spec.columns, *((RECORDED,) if RECORDED in names else ()))
        extras = tuple(c for c in dict.fromkeys(candidates) if c != action and c in names and c not in states
                       and _numeric(frame.schema[c]))
    else:
        if isinstance(extras, str) or not all(isinstance(c, str) for c in extras):
            raise ParameterError("extras", "should be a sequence of column names or None", extras)
        extras = tuple(extras)
        for c in extras:
            if c not in names:
                raise ColumnNotFoundError(c, names)
    for c in (*episode, spec.step, spec.agent):
        nulls = frame.get_column(c).is_null()
        if nulls.any():
            raise SpecError("a joint view needs a value here (it lines up episodes, steps and agents)",
                            column=c, row=int(nulls.arg_true()[0]), hint="Drop or fill the rows without one")
    step_dtype = frame.schema[spec.step]
    if not step_dtype.is_integer():
        raise SpecError(f"the step column should hold integers (it is {step_dtype})", column=spec.step,
                        hint="Declare the step index column as step=")
    return spec, episode, action, extras


def _column_values(frame: pl.DataFrame, name: str) -> np.ndarray:
    series = frame.get_column(name)
    if isinstance(series.dtype, pl.List):
        raise SpecError("a list column of varying width cannot be a [steps, agents] array", column=name,
                        hint="Load it as a fixed-width Array column (the state columns of loaded frames are)")
    return series.to_numpy()


def _finish(frame, spec, episode, action, extras, episode_keys, episode_of_step, t, agents, rows) -> JointView:
    def cells(name):
        return _readonly(_column_values(frame, name)[rows])

    def flags(name):
        if name is None:
            return _readonly(np.zeros(rows.shape, dtype=bool))
        return cells(name)

    return JointView(
        episode_columns=episode, step_column=spec.step, agent_column=spec.agent, action_column=action,
        episode_keys=episode_keys, episode=_readonly(np.asarray(episode_of_step, dtype=np.int64)),
        t=_readonly(np.asarray(t)), agents=tuple(agents), actions=cells(action),
        terminated=flags(spec.terminated), truncated=flags(spec.truncated),
        states=MappingProxyType({s: cells(s) for s in spec.state_names}),
        extras=MappingProxyType({c: cells(c) for c in extras}),
        rows=_readonly(np.asarray(rows, dtype=np.int64)), height=frame.height)


def _agents_text(agents) -> str:
    return "[" + ", ".join(_show(a) for a in agents) + "]"


# --------------------------------------------------------------------------
# The vectorized view
# --------------------------------------------------------------------------


def joint_view(frame: pl.DataFrame, *, spec: FrameSpec | None = None, action: str | None = None,
               extras: Sequence[str] | None = None) -> JointView:
    """The joint view of a frame with one row per (episode, step, agent) (see the module docstring).

    Parameters
    ----------
    frame : polars.DataFrame
        ``R`` rows, in any order.
    spec : FrameSpec, optional
        Its spec (default: the attached or registered one,
        :func:`~rewardlab.sources.registry.spec_of`); it must name ``agent``
        and ``step`` and an episode column besides the agent.
    action : str, optional
        The action column (default: ``action`` or ``actions``, among the
        spec's columns first).
    extras : sequence of str, optional
        Other columns to line up (default: the spec's numeric and Boolean
        columns but the action, and the recorded reward ``reward_recorded``
        where the frame has it).

    Returns
    -------
    JointView
        ``S = R / n`` joint steps of ``n`` agents.

    Raises
    ------
    SpecError
        A duplicate (episode, step, agent), an agent missing from a step,
        agents changing within an episode or across episodes: the message
        names the episode, the step and the agent.

    Examples
    --------
    >>> import polars as pl
    >>> from rewardlab.core.spec import FrameSpec
    >>> spec = FrameSpec(name="s", episode=("ep",), step="t", agent="agent")
    >>> frame = pl.DataFrame({"ep": [0, 0, 0], "t": [0, 0, 1], "agent": [0, 1, 0], "action": [1, 1, 1]})
    >>> joint_view(frame, spec=spec)  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    rewardlab.core.errors.SpecError: column 'agent', row 2: episode 0, step t=1: the agents change mid-episode: ...
    """
    spec, episode, action, extras = _resolve(frame, spec, action, extras)
    height = frame.height
    keys = frame.select(episode)
    episode_keys = keys.unique(maintain_order=True)
    ep = (keys.join(episode_keys.with_row_index(_EPISODE_CODE), on=list(episode), how="left",
                    nulls_equal=True, maintain_order="left")
          .get_column(_EPISODE_CODE).to_numpy().astype(np.int64))
    agent_series = frame.get_column(spec.agent)
    agents = tuple(agent_series.unique().sort().to_list())
    ag = agent_series.rank("dense").to_numpy().astype(np.int64) - 1
    t = frame.get_column(spec.step).to_numpy().astype(np.int64)
    order = np.lexsort((ag, t, ep))  # stable: equal keys keep frame order
    e_s, t_s, a_s = ep[order], t[order], ag[order]
    same_step = (e_s[1:] == e_s[:-1]) & (t_s[1:] == t_s[:-1])
    dup = np.flatnonzero(same_step & (a_s[1:] == a_s[:-1]))

    def where(e, step):
        values = episode_keys.row(int(e))
        return f"episode {_show(values[0] if len(values) == 1 else values)}, step {spec.step}={step}"

    if dup.size:
        p = int(dup[0])
        raise SpecError(f"{where(e_s[p], t_s[p])}, agent {_show(agents[a_s[p]])}: two rows for one agent and "
                        f"step (rows {int(order[p])} and {int(order[p + 1])})", column=spec.agent,
                        row=int(order[p + 1]), hint="Keep one row per (episode, step, agent)")
    n_episodes, n = episode_keys.height, len(agents)
    present = np.zeros((n_episodes, n), dtype=bool)
    present[ep, ag] = True
    starts = np.flatnonzero(np.concatenate(([True], ~same_step))) if height else np.zeros(0, dtype=np.int64)
    sizes = np.diff(np.append(starts, height))
    short = np.flatnonzero(sizes != present.sum(axis=1)[e_s[starts]])
    if short.size:
        k = int(short[0])
        lo, hi = int(starts[k]), int(starts[k] + sizes[k])
        e, step = int(e_s[lo]), int(t_s[lo])
        here = np.zeros(n, dtype=bool)
        here[a_s[lo:hi]] = True
        missing = int(np.flatnonzero(present[e] & ~here)[0])
        its_steps = t[(ep == e) & (ag == missing)]
        _raise_missing(where(e, step), spec.agent, agents, missing, step, its_steps,
                       a_s[lo:hi], int(order[lo]), spec.step)
    differs = np.flatnonzero((present != present[:1]).any(axis=1)) if n_episodes else np.zeros(0, dtype=np.int64)
    if differs.size:
        e = int(differs[0])
        first_row = int(np.flatnonzero(ep == e)[0])
        _raise_episodes(episode_keys, spec.agent, agents, present, e, first_row)
    rows = order.reshape(-1, n) if n else np.zeros((0, 0), dtype=np.int64)
    step_starts = rows[:, 0] if n else np.zeros(0, dtype=np.int64)
    return _finish(frame, spec, episode, action, extras, episode_keys, ep[step_starts], t[step_starts], agents,
                   rows)


def _raise_missing(where_text, column, agents, missing, step, its_steps, acting, row, step_name):
    before, after = its_steps[its_steps < step], its_steps[its_steps > step]
    acting_text = _agents_text(agents[a] for a in acting)
    who = _show(agents[missing])
    if before.size and after.size:
        message = (f"{where_text}, agent {who}: the agent has no row at this step, though it acts before "
                   f"(t={int(before.max())}) and after (t={int(after.min())}); agents {acting_text} act here")
        hint = "Every agent needs one row at every step of its episode: add the missing row or drop the episode"
    else:
        span = f"{step_name}={int(its_steps.min())}..{int(its_steps.max())}"
        message = (f"{where_text}: the agents change mid-episode: agent {who} acts at steps {span} of the "
                   f"episode and not at {step_name}={step}, where agents {acting_text} act")
        hint = ("A joint view needs one row per agent at every step: filter the agents that join or leave "
                "out, or split the episode")
    raise SpecError(message, column=column, row=row, hint=hint)


def _raise_episodes(episode_keys, column, agents, present, e, row):
    def name(k):
        values = episode_keys.row(k)
        return _show(values[0] if len(values) == 1 else values)

    raise SpecError(f"episode {name(e)} has agents {_agents_text(a for a, p in zip(agents, present[e]) if p)} "
                    f"and episode {name(0)} has agents {_agents_text(a for a, p in zip(agents, present[0]) if p)}",
                    column=column, row=row,
                    hint="A joint view needs the same agents in every episode: select the episodes of one "
                    "set of agents")


# --------------------------------------------------------------------------
# The plain-loop twin
# --------------------------------------------------------------------------


def joint_view_loop(frame: pl.DataFrame, *, spec: FrameSpec | None = None, action: str | None = None,
                    extras: Sequence[str] | None = None) -> JointView:
    """:func:`joint_view` by plain loops over rows (dicts of episodes, steps and agents): the tests' twin.

    Examples
    --------
    >>> import polars as pl
    >>> from rewardlab.core.spec import FrameSpec
    >>> spec = FrameSpec(name="s", episode=("ep",), step="t", agent="agent")
    >>> frame = pl.DataFrame({"ep": [0, 0], "t": [0, 0], "agent": [1, 0], "action": [5, 6]})
    >>> joint_view_loop(frame, spec=spec).actions.tolist()
    [[6, 5]]
    """
    spec, episode, action, extras = _resolve(frame, spec, action, extras)
    key_rows = frame.select(episode).rows()
    ts = frame.get_column(spec.step).to_list()
    ids = frame.get_column(spec.agent).to_list()
    agents = sorted(set(ids))
    position = {a: i for i, a in enumerate(agents)}
    cells: dict[tuple, dict[int, dict[int, list[int]]]] = {}  # episode -> step -> agent -> rows
    for r, (key, step, agent) in enumerate(zip(key_rows, ts, ids)):
        cells.setdefault(key, {}).setdefault(step, {}).setdefault(position[agent], []).append(r)
    order = list(cells)

    def where(key, step):
        return f"episode {_show(key[0] if len(key) == 1 else key)}, step {spec.step}={step}"

    for key in order:  # 1. duplicates
        for step in sorted(cells[key]):
            for i in sorted(cells[key][step]):
                if len(cells[key][step][i]) > 1:
                    a, b = cells[key][step][i][:2]
                    raise SpecError(f"{where(key, step)}, agent {_show(agents[i])}: two rows for one agent and "
                                    f"step (rows {a} and {b})", column=spec.agent, row=b,
                                    hint="Keep one row per (episode, step, agent)")
    present = {key: {i for step in cells[key] for i in cells[key][step]} for key in order}
    for key in order:  # 2. a step without an agent of its episode
        for step in sorted(cells[key]):
            here = sorted(cells[key][step])
            missing = sorted(present[key] - set(here))
            if missing:
                its_steps = np.array([s for s in cells[key] if missing[0] in cells[key][s]])
                _raise_missing(where(key, step), spec.agent, agents, missing[0], step, its_steps, here,
                               cells[key][step][here[0]][0], spec.step)
    for k, key in enumerate(order):  # 3. the same agents in every episode
        if present[key] != present[order[0]]:
            flags = np.array([[i in present[kk] for i in range(len(agents))] for kk in order])
            first_row = min(r for step in cells[key].values() for rs in step.values() for r in rs)
            _raise_episodes(frame.select(episode).unique(maintain_order=True), spec.agent, agents, flags, k,
                            first_row)
    rows, episode_of_step, t = [], [], []
    for k, key in enumerate(order):
        for step in sorted(cells[key]):
            rows.append([cells[key][step][i][0] for i in range(len(agents))])
            episode_of_step.append(k)
            t.append(step)
    episode_keys = frame.select(episode).unique(maintain_order=True)
    rows_array = np.array(rows, dtype=np.int64).reshape(len(rows), len(agents))
    return _finish(frame, spec, episode, action, extras, episode_keys, episode_of_step,
                   np.array(t, dtype=np.int64), agents, rows_array)


# --------------------------------------------------------------------------
# Back to frame rows
# --------------------------------------------------------------------------


def _check_cells(view: JointView, values) -> np.ndarray:
    if not isinstance(view, JointView):
        raise ParameterError("view", "should be a JointView (from joint_view)", type(view).__name__)
    values = np.asarray(values)
    if values.shape[:2] != view.rows.shape:
        raise ParameterError("values", f"should have shape [S, n] = {list(view.rows.shape)} (joint steps, agents), "
                             "with any trailing dimensions", values.shape)
    return values


def scatter_rows(view: JointView, values) -> np.ndarray:
    """``[S, n]`` values (one per joint step and agent) in frame row order: the inverse of the view.

    Parameters
    ----------
    view : JointView
    values : array-like, shape ``[S, n, ...]``

    Returns
    -------
    numpy.ndarray, shape ``[R, ...]``
        ``out[view.rows[s, i]] = values[s, i]``; every frame row gets one value.

    Examples
    --------
    >>> import polars as pl
    >>> from rewardlab.core.spec import FrameSpec
    >>> spec = FrameSpec(name="s", episode=("ep",), step="t", agent="agent")
    >>> view = joint_view(pl.DataFrame({"ep": [0, 0], "t": [0, 0], "agent": [1, 0], "action": [5, 6]}), spec=spec)
    >>> scatter_rows(view, [[0.5, 1.5]]).tolist()
    [1.5, 0.5]
    """
    values = _check_cells(view, values)
    out = np.empty((view.height, *values.shape[2:]), dtype=values.dtype)
    out[view.rows.ravel()] = values.reshape(-1, *values.shape[2:])
    return out


def scatter_rows_loop(view: JointView, values) -> np.ndarray:
    """:func:`scatter_rows` by a plain loop over joint steps and agents.

    Examples
    --------
    >>> import polars as pl
    >>> from rewardlab.core.spec import FrameSpec
    >>> spec = FrameSpec(name="s", episode=("ep",), step="t", agent="agent")
    >>> view = joint_view(pl.DataFrame({"ep": [0, 0], "t": [0, 0], "agent": [1, 0], "action": [5, 6]}), spec=spec)
    >>> scatter_rows_loop(view, [[0.5, 1.5]]).tolist()
    [1.5, 0.5]
    """
    values = _check_cells(view, values)
    out = np.empty((view.height, *values.shape[2:]), dtype=values.dtype)
    for s in range(view.steps):
        for i in range(view.n_agents):
            out[view.rows[s, i]] = values[s, i]
    return out
