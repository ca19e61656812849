"""A joint frame's rows as trials of joint steps, for the reward-manager runner.

A joint frame holds one row per (episode, step, agent).  :func:`joint_order`
(pure NumPy) orders its rows into joint steps (episode, then step, then
agent id ascending) and refuses the layouts a manager cannot be called on: an
episode split in two runs of rows, two rows for one agent at one step, an agent
missing from a step or one that joins mid-episode.  :func:`joint_arrays`
builds, in the parent process (Polars is used here, never in the child), the
NumPy arrays the runner hands the child: the actions and state columns in
joint order, a block per trial, and the labels its messages use.

Examples
--------
>>> import numpy as np
>>> steps = joint_order(np.array([0, 0, 0, 0]), np.array([0, 0, 1, 1]), np.array([1, 0, 0, 1]))
>>> steps.order.tolist(), steps.agents.tolist(), steps.steps.tolist()
([1, 0, 2, 3], [2], [2])
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import polars as pl

from rewardlab.core.errors import SpecError
from rewardlab.core.fronts import Fix, Text
from rewardlab.core.spec import FrameSpec, keep_spec
from rewardlab.sources.values import plain_value

__all__ = ["JointSteps", "joint_order", "trajectory_steps", "JointLayout", "joint_layout", "JointArrays",
           "joint_arrays", "DEFAULT_LAYOUT", "trajectory_order"]


@dataclass(frozen=True)
class JointSteps:
    """A joint frame's rows in joint order, trial by trial.

    Attributes
    ----------
    order : numpy.ndarray of int64, shape ``[N]``
        Frame rows in joint order: trial by trial, step by step, agents by
        ascending id.
    starts : numpy.ndarray of int64, shape ``[E + 1]``
        Where each trial's block begins in ``order`` (and the end).
    agents, steps : numpy.ndarray of int64, shape ``[E]``
        Agents per step and steps of each trial (``agents * steps`` rows).

    Examples
    --------
    >>> s = joint_order(np.array([5, 5, 9]), np.array([0, 1, 0]), np.array([0, 0, 3]))
    >>> s.starts.tolist(), s.agents.tolist(), s.steps.tolist()
    ([0, 2, 3], [1, 1], [2, 1])
    """

    order: np.ndarray
    starts: np.ndarray
    agents: np.ndarray
    steps: np.ndarray


def _refuse(message: str, *, episode, step, agent, hint: str, names=None) -> SpecError:
    if names is None:
        where = f"{episode}, step {step!r}, agent {agent!r}"
    else:
        where = f"{episode}, step {names[0]}={step!r}, agent {names[1]}={agent!r}"
    return SpecError(f"{where}: {message}", hint=hint)


_HINT = "A reward manager is called once per agent after every joint step: each step of an episode needs one " \
        "row for every agent of the episode"


def joint_order(episode, step, agent, *, labels=None, names=None) -> JointSteps:
    """Order a joint frame's rows into joint steps and check that every step has every agent once.

    Parameters
    ----------
    episode : array-like, shape ``[N]``
        Each row's episode (any comparable values, e.g. codes of the episode
        key columns); an episode's rows are contiguous, in episode order.
    step, agent : array-like of int, shape ``[N]``
        Each row's step index and agent id.
    labels : sequence of str or None
        How messages name each episode (by first-appearance position), e.g.
        ``episode_id=3``; None: ``episode`` and its value.
    names : (str, str) or None
        The step and agent columns' names, for messages (``step t=2, agent agent_id=7``).

    Returns
    -------
    JointSteps

    Raises
    ------
    SpecError
        Naming the episode, step and agent: an episode whose rows are split
        by another's, two rows for one (episode, step, agent), an agent of
        the episode's first step missing at a later step, or an agent that
        joins after the first step.

    Examples
    --------
    >>> joint_order([0, 0, 0], [0, 0, 1], [0, 1, 0])  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    rewardlab.core.errors.SpecError: episode 0, step 1, agent 1: the agent is missing at this step...
    """
    episode, step, agent = np.asarray(episode), np.asarray(step), np.asarray(agent)
    n = episode.shape[0]
    if not n:
        z = np.zeros(0, np.int64)
        return JointSteps(z, np.zeros(1, np.int64), z, z)
    change = np.empty(n, bool)
    change[0] = True
    change[1:] = episode[1:] != episode[:-1]
    run = np.cumsum(change) - 1  # run of rows = trial, by first appearance
    firsts = np.flatnonzero(change)
    values = episode[firsts]
    def name(r):
        if labels is not None:
            return labels[r]
        value = values[r]
        return f"episode {value.item() if hasattr(value, 'item') else value!r}"

    _, first_of = np.unique(values, return_index=True)
    if first_of.size != values.size:  # a value starts two runs: the episode is split
        seen = set()
        for r, v in enumerate(values.tolist()):
            if v in seen:
                row = int(firsts[r])
                raise _refuse("the episode's rows are split by another episode's (rows of one episode must be "
                              f"contiguous; it comes back at frame row {row})", episode=name(r),
                              step=plain_value(step[row]), agent=plain_value(agent[row]),
                              hint="Sort the frame by episode, step and agent", names=names)
            seen.add(v)
    same_run = run[1:] == run[:-1]
    ahead = (step[1:] > step[:-1]) | ((step[1:] == step[:-1]) & (agent[1:] > agent[:-1]))
    if (ahead | ~same_run).all():  # already in joint order (a simulator's, a sorted table): no sort, no copy
        order, r, s, a = np.arange(n, dtype=np.int64), run, step, agent
    else:
        # each agent's trajectory together (what loading a step table gives): a transpose per trial, no sort
        found = trajectory_steps(change, step, agent)
        if found is not None:
            return found
        order = np.lexsort((agent, step, run))
        r, s, a = run[order], step[order], agent[order]
    same_step = (r[1:] == r[:-1]) & (s[1:] == s[:-1])
    dup = same_step & (a[1:] == a[:-1])
    if dup.any():
        i = int(np.argmax(dup))
        raise _refuse("two rows for this agent at this step (frame rows "
                      f"{int(order[i])} and {int(order[i + 1])})", episode=name(r[i]), step=plain_value(s[i]),
                      agent=plain_value(a[i]), hint="Drop the duplicate rows", names=names)
    group_start = np.flatnonzero(np.concatenate(([True], ~same_step)))
    sizes = np.diff(np.append(group_start, n))
    group_run = r[group_start]
    trial_start = np.flatnonzero(np.concatenate(([True], group_run[1:] != group_run[:-1])))
    agents = sizes[trial_start]
    steps = np.diff(np.append(trial_start, group_start.size))
    # a step whose row count differs from its trial's first step, then (rows before it) an agent that differs from
    # the agent at the same position of the trial's first step: the first of either, in joint order
    size_bad = sizes != np.repeat(agents, steps)
    if not size_bad.any() and _same_agents(a, r, agents):  # the common case: checked without a row per row index
        return _joint_steps(order, agents, steps)
    limit = int(group_start[np.argmax(size_bad)]) if size_bad.any() else n
    trial_row_start = group_start[trial_start]
    row_trial_start = np.repeat(trial_row_start, np.diff(np.append(trial_row_start, n)))[:limit]
    row_width = np.repeat(agents, np.diff(np.append(trial_row_start, n)))[:limit]
    expected = a[row_trial_start + (np.arange(limit) - row_trial_start) % row_width]
    odd = a[:limit] != expected
    bad_group = size_bad
    if odd.any():
        bad_group = size_bad.copy()
        bad_group[int(np.searchsorted(group_start, int(np.argmax(odd)), side="right")) - 1] = True
    if bad_group.any():
        g = int(np.argmax(bad_group))
        t = int(np.searchsorted(trial_start, g, side="right")) - 1
        first = a[group_start[trial_start[t]]:group_start[trial_start[t]] + agents[t]].tolist()
        here = a[group_start[g]:group_start[g] + sizes[g]].tolist()
        missing = sorted(set(first) - set(here))
        where = dict(episode=name(int(group_run[g])), step=plain_value(s[group_start[g]]))
        if missing:
            raise _refuse(f"the agent is missing at this step (the episode's first step has agents "
                          f"{_few(first)}; this one {_few(here)})", agent=missing[0], **where, hint=_HINT, names=names)
        joined = sorted(set(here) - set(first))
        raise _refuse(f"the agent joins the episode at this step (its first step has agents {_few(first)}); "
                      "agents may not change mid-episode", agent=joined[0], **where, hint=_HINT, names=names)
    return _joint_steps(order, agents, steps)


def trajectory_steps(change: np.ndarray, step: np.ndarray, agent: np.ndarray) -> JointSteps | None:
    """The joint steps of rows in trajectory layout, or None when the rows are not in it.

    Trajectory layout (a loaded step table's): each trial's rows are its
    agents' trajectories one after another, agents ascending, every agent
    with the same steps, ascending.  The joint order (step, then agent) is
    then a transpose of each trial's ``[agents, steps]`` block, made without
    a sort, and the layout itself proves that every step has every agent
    once, so no further check is needed.

    Parameters
    ----------
    change : numpy.ndarray of bool, shape ``[N]``
        True on each trial's first row.
    step, agent : numpy.ndarray, shape ``[N]``
        Each row's step and agent.

    Returns
    -------
    JointSteps or None
        None when the rows are not in trajectory layout (the caller sorts).

    Examples
    --------
    >>> change = np.array([True, False, False, False, True, False])
    >>> s = trajectory_steps(change, np.array([0, 1, 0, 1, 4, 4]), np.array([3, 3, 5, 5, 0, 1]))
    >>> s.order.tolist(), s.agents.tolist(), s.steps.tolist()
    ([0, 2, 1, 3, 4, 5], [2, 2], [2, 1])
    >>> trajectory_steps(change, np.array([0, 1, 0, 2, 4, 4]), np.array([3, 3, 5, 5, 0, 1])) is None
    True
    """
    n = change.shape[0]
    block = change.copy()  # a block: one agent's rows of one trial
    block[1:] |= agent[1:] != agent[:-1]
    if not ((step[1:] > step[:-1]) | block[1:]).all():  # steps ascending within each block
        return None
    starts = np.flatnonzero(block)
    new_trial = change[starts]
    first = agent[starts]
    if not ((first[1:] > first[:-1]) | new_trial[1:]).all():  # agents ascending from block to block of a trial
        return None
    trial_first = np.flatnonzero(new_trial)  # each trial's first block
    agents = np.diff(np.append(trial_first, starts.size))
    lengths = np.diff(np.append(starts, n))
    steps = lengths[trial_first]
    if not (lengths == np.repeat(steps, agents)).all():  # every block as long as its trial's first
        return None
    sizes = agents * steps
    if (steps == steps[0]).all():  # one length: each block against the one before it, a fixed distance back
        w = int(steps[0])
        same = bool(((step[w:] == step[:-w]) | np.repeat(new_trial, lengths)[w:]).all())
    else:  # each block against the one before it in its trial
        back = np.repeat(steps, sizes)
        later = ~np.repeat(new_trial, lengths)
        rows = np.flatnonzero(later)
        same = bool((step[rows] == step[rows - back[rows]]).all())
    if not same:
        return None
    begin = np.append(0, np.cumsum(sizes))
    if (agents == agents[0]).all() and (steps == steps[0]).all():  # one shape: one broadcast
        a, t = int(agents[0]), int(steps[0])
        order = (begin[:-1, None, None] + np.arange(t)[None, :, None] + t * np.arange(a)[None, None, :]).ravel()
    else:  # joint position k of a trial is its row (k % agents) * steps + k // agents
        base = np.repeat(begin[:-1], sizes)
        k = np.arange(n, dtype=np.int64) - base
        q, m = np.divmod(k, np.repeat(agents, sizes))
        order = base + m * np.repeat(steps, sizes) + q
    return _joint_steps(order, agents, steps)


def _joint_steps(order, agents, steps) -> JointSteps:
    return JointSteps(order.astype(np.int64, copy=False), np.append(0, np.cumsum(agents * steps)).astype(np.int64),
                      agents.astype(np.int64, copy=False), steps.astype(np.int64, copy=False))


def _same_agents(a: np.ndarray, r: np.ndarray, agents: np.ndarray) -> bool:
    """Whether every step has its trial's first step's agents, when every trial has as many agents per step.

    False also when the trials' widths differ: the caller's general check then decides (and names what is wrong).
    Each step of ``w`` rows is compared with the one before it in its trial (``w`` rows back), so by
    induction with the first.
    """
    w = int(agents[0]) if agents.size else 0
    if not w or not (agents == w).all():
        return False
    return bool(((a[w:] == a[:-w]) | (r[w:] != r[:-w])).all())


def _few(values: list, limit: int = 8) -> str:
    text = ", ".join(map(str, values[:limit]))
    return f"[{text}{', ...' if len(values) > limit else ''}]"


@dataclass(frozen=True)
class JointLayout:
    """Which columns of a joint frame are the episode key, step, agent, action and the state handed over.

    Attributes
    ----------
    episode : tuple of str
    step, agent, action : str
    state : tuple of str
        The state and extra columns a manager's ``state`` dict holds.
    terminated, truncated : str or None

    Examples
    --------
    >>> joint_layout(["episode_id", "t", "agent_id", "action", "obs"]).state
    ('obs',)
    """

    episode: tuple
    step: str
    agent: str
    action: str
    state: tuple
    terminated: str | None = None
    truncated: str | None = None


#: The joint frame's default column names (``rewardlab.domains.el_farol.simulate_bar`` writes them).
DEFAULT_LAYOUT = JointLayout(("episode_id",), "t", "agent_id", "action", (), "terminated", "truncated")

_OUTPUT_PREFIXES = ("reward_", "done_", "term_")


def joint_layout(names, spec: FrameSpec | None = None) -> JointLayout:
    """The :class:`JointLayout` of a frame with columns ``names``: its spec's roles, else :data:`DEFAULT_LAYOUT`'s.

    A trial is one value of the episode key without the agent column (a
    spec that keys each agent's own trajectory by episode and agent, as the
    steps source does, gives its episode column).  The state a manager
    receives: the spec's state and extra columns (other
    than the action); without a spec every column that is not the episode
    key, step, agent, action, terminated or truncated, nor a reward, done or
    term column (``reward_*``, ``done_*``, ``term_*``: plug-ins' outputs).

    Raises
    ------
    SpecError
        The frame lacks the episode, step, agent or action column.

    Examples
    --------
    >>> joint_layout(["episode_id", "t", "agent_id", "action", "reward_recorded"]).state
    ()
    >>> from rewardlab.core.spec import FrameSpec
    >>> joint_layout(["e", "t", "a", "action"], FrameSpec(name="s", episode=("e", "a"), step="t", agent="a")).episode
    ('e',)
    >>> joint_layout(["episode_id", "t", "action"])  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    rewardlab.core.errors.SpecError: column 'agent_id': a reward manager runs on a joint frame (...), and this frame has no agent column 'agent_id' (columns: episode_id, t, action)...
    """
    names = list(names)
    d = DEFAULT_LAYOUT
    if spec is not None and spec.episode:
        agent = spec.agent or d.agent
        # a trial is every agent's rows: a spec keyed per agent trajectory (episode and agent) drops the agent
        episode = tuple(c for c in spec.episode if c != agent) or d.episode
        step = spec.step or d.step
        term, trunc = spec.terminated, spec.truncated
        structure = {*episode, step, agent, d.action, term, trunc}
        state = tuple(c for c in dict.fromkeys([*spec.state_names, *spec.columns]) if c not in structure
                      and c in names)
    else:
        episode, step, agent = d.episode, d.step, d.agent
        term, trunc = (c if c in names else None for c in (d.terminated, d.truncated))
        structure = {*episode, step, agent, d.action, d.terminated, d.truncated}
        state = tuple(c for c in names if c not in structure and not c.startswith(_OUTPUT_PREFIXES))
    roles = [*(("episode", c) for c in episode), ("step", step), ("agent", agent), ("action", d.action)]
    for role, column in roles:
        if column not in names:
            shown = ", ".join(names[:12]) + (", ..." if len(names) > 12 else "")
            if role == "action":  # no loader option names it: a manager reads the column named action
                hint = Text("Rename the column holding each agent's action to 'action' (in the file's header, or "
                            "frame.rename({...: 'action'})): a reward manager reads the joint action from it")
            else:
                hint = Text("Name it with ", Fix(role, "COLUMN", verb="", option=True),
                            " when loading the table (a joint table has episode, step, agent and action columns)")
            raise SpecError(f"a reward manager runs on a joint frame (one row per episode, step and agent), and this "
                            f"frame has no {role} column {column!r} (columns: {shown})", column=column, hint=hint)
    return JointLayout(tuple(episode), step, agent, d.action, state, term, trunc)


@dataclass(frozen=True)
class JointArrays:
    """What the manager runner's child needs, as NumPy arrays in joint order (built before the fork).

    Attributes
    ----------
    steps : JointSteps
    actions : numpy.ndarray, shape ``[N]`` or ``[N, d]``
        Read-only, joint order.
    state : dict of str to numpy.ndarray
        Each state column, read-only, joint order.
    episode_labels : list of str
        How messages name each trial (``episode_id=3``).
    step_values, agent_values : numpy.ndarray, shape ``[N]``
        Each frame row's step and agent id, in frame order (for messages;
        :meth:`step_at` and :meth:`agent_at` read them by joint position).
    last_step : numpy.ndarray of bool, shape ``[N]``
        True on the rows of each trial's last step (in frame order).
    layout : JointLayout

    Examples
    --------
    >>> from rewardlab.domains.el_farol import SMALL, simulate_bar
    >>> arrays = joint_arrays(simulate_bar(SMALL, episodes=2, weeks=3, seed=0))
    >>> arrays.n, arrays.episode_labels, arrays.actions.flags.writeable
    (300, ['episode_id=0', 'episode_id=1'], False)
    """

    steps: JointSteps
    actions: np.ndarray
    state: dict
    episode_labels: list
    step_values: np.ndarray
    agent_values: np.ndarray
    last_step: np.ndarray
    layout: JointLayout

    @property
    def n(self) -> int:
        """Rows (agent-steps)."""
        return int(self.steps.order.shape[0])

    def step_at(self, position: int):
        """The step (a Python value) of joint-order row ``position``."""
        return plain_value(self.step_values[self.steps.order[position]])

    def agent_at(self, position: int):
        """The agent id (a Python value: agent ids may be strings) of joint-order row ``position``."""
        return plain_value(self.agent_values[self.steps.order[position]])

    def where(self, trial: int, index: int) -> str:
        """``episode_id=3, step t=5, agent agent_id=7 (position 7 of 50)``: call ``index`` of ``trial``, in words."""
        agents = int(self.steps.agents[trial])
        row = int(self.steps.starts[trial]) + index
        lay = self.layout
        return (f"{self.episode_labels[trial]}, step {lay.step}={self.step_at(row)!r}, agent "
                f"{lay.agent}={self.agent_at(row)!r} (position {index % agents} of {agents})")


def _column_array(series: pl.Series) -> np.ndarray:
    if series.null_count():
        raise SpecError("a reward manager's state column holds nulls; fill or drop them first",
                        column=series.name, row=int(series.is_null().arg_true()[0]))
    values = series.to_numpy()
    if values.dtype == object:  # lists of one length become rows
        try:
            values = np.stack(values)
        except ValueError:
            raise SpecError("a reward manager's state column holds lists of different lengths",
                            column=series.name) from None
    return values


def joint_arrays(frame: pl.DataFrame, spec: FrameSpec | None = None) -> JointArrays:
    """The :class:`JointArrays` of a joint frame (:func:`joint_layout` picks the columns).

    Raises
    ------
    SpecError
        A role's column is missing, or the rows do not make joint steps
        (:func:`joint_order`), or a state column holds nulls.

    Examples
    --------
    >>> import polars as pl
    >>> frame = pl.DataFrame({"episode_id": [0, 0], "t": [0, 0], "agent_id": [1, 0], "action": [4, 3]})
    >>> joint_arrays(frame).actions.tolist()
    [3, 4]
    """
    layout = joint_layout(frame.columns, spec)
    cols = list(layout.episode)
    key = frame.select(pl.struct(cols) if len(cols) > 1 else pl.col(cols[0])).to_series()
    runs = key.rle_id().to_numpy()
    firsts = (np.flatnonzero(runs[1:] != runs[:-1]) + 1).tolist()
    firsts = [0, *firsts] if runs.size else []
    labels = [", ".join(f"{c}={v!r}" for c, v in zip(cols, row)) for row in frame.select(cols)[firsts].rows()]
    # one code per episode value (a split episode keeps its code): a numeric key is its own code
    codes = key.to_numpy() if len(cols) == 1 and key.dtype.is_numeric() and not key.null_count() else \
        key.rank("dense").to_numpy()
    step = frame[layout.step].to_numpy()
    agent = frame[layout.agent].to_numpy()
    steps = joint_order(codes, step, agent, labels=labels, names=(layout.step, layout.agent))
    order = steps.order

    identity = bool(order.size) and order[0] == 0 and order[-1] == order.size - 1 and \
        bool((order[1:] > order[:-1]).all())

    def ordered(values: np.ndarray) -> np.ndarray:
        out = np.ascontiguousarray(values if identity else values[order])
        if out.flags.writeable and out.base is not None and out is values:  # a view of the caller's: copy
            out = out.copy()
        out.flags.writeable = False
        return out

    actions = ordered(_column_array(frame[layout.action]))
    state = {c: ordered(_column_array(frame[c])) for c in layout.state}
    # the rows of each trial's last step: joint positions [end - agents, end) of each trial, marked by a running sum
    ends = steps.starts[1:]
    edges = np.zeros(len(order) + 1, np.int8)
    edges[ends - steps.agents] += 1
    edges[ends] -= 1
    last = np.empty(len(order), bool)
    last[order] = np.cumsum(edges[:-1], dtype=np.int8) > 0
    return JointArrays(steps, actions, state, labels, step, agent, last, layout)


def trajectory_order(frame: pl.DataFrame, spec: FrameSpec | None) -> pl.DataFrame:
    """A joint frame with each agent's trajectory contiguous, as episode-keyed analyses read it.

    A spec that keys each agent's own trajectory (its episode key holds the
    agent column, as the steps source's and El Farol's do) makes an episode
    of each run of rows of one key; a frame in joint order (episode, step,
    agent: a simulator's) would make every row its own episode.  This puts
    the rows trial by trial (in order of first appearance), then by agent id,
    then by step; a frame whose episodes are already contiguous, or whose
    spec does not key agents, is returned as it is.  The rewards a manager
    gives do not depend on the frame's row order (its runner orders the rows
    itself), so this can come before or after it runs.

    Examples
    --------
    >>> f = pl.DataFrame({"e": [0, 0, 0, 0], "t": [0, 0, 1, 1], "a": [0, 1, 0, 1], "r": [1, 2, 3, 4]})
    >>> trajectory_order(f, FrameSpec(name="s", episode=("e", "a"), step="t", agent="a"))["r"].to_list()
    [1, 3, 2, 4]
    """
    if spec is None or not spec.agent or spec.agent not in spec.episode or not frame.height:
        return frame
    keys = list(spec.episode)
    if not all(c in frame.columns for c in [*keys, spec.step or ""]):
        return frame
    key = pl.struct(keys) if len(keys) > 1 else pl.col(keys[0])
    runs, distinct = frame.select((key.rle_id().max() + 1).alias("runs"), key.n_unique().alias("keys")).row(0)
    if runs == distinct:
        return frame
    trial = [c for c in keys if c != spec.agent]
    first = "__trajectory_order_first"
    ordered = frame.with_row_index(first).with_columns(pl.col(first).min().over(trial) if trial else pl.lit(0)) \
        .sort([first, spec.agent, spec.step], maintain_order=True).drop(first)
    return keep_spec(frame, ordered)
