"""Recombined transitions of a step table: recorded states with other rows' (action, next state).

EPIC (:mod:`rewardlab.analysis.epic`) evaluates a reward on transitions
``(s_i, a_j, s'_j)`` that were never recorded together: a recorded state ``s_i``
and the recorded action and next state of another row ``j``.  This module builds
them as a steps-contract frame and its :class:`~rewardlab.core.spec.FrameSpec`, so
``rewardlab.apply_plugins(frame, plugins, spec=spec)`` evaluates plug-ins on them
through the normal runner (child process, contract checks):

* each row is its own one-step episode, handed as **truncated**: ``("next", state)``
  holds ``s'_j`` (the row's final state) and ``("next", "terminated")`` is False
  (EPIC pretends episodes never end, so nothing is masked as terminal);
* the extra columns (``action``, ...) come from the row named for them, by default
  row ``j``: the action and whatever else the spec hands over.  An extra that is not
  a function of ``(s, a, s')`` (the recorded reward ``reward_recorded``) is therefore
  the row ``j``'s, which a reward must not read: the EPIC diagnostic tells by running
  again with such a column drawn from other rows
  (:mod:`rewardlab.diagnostics.epic`);
* a pair's next state is read as the steps contract reads it
  (:class:`~rewardlab.contracts.steps.arrays.StepsArrays`): the following row of the
  episode, or the episode's final state on its last row; a last row whose final state
  the data lacks (padding) is no pair (:attr:`TransitionPool.excluded`).

Examples
--------
>>> import polars as pl
>>> from rewardlab.core.spec import FrameSpec, StateColumn
>>> spec = FrameSpec(name="toy", episode=("ep",), terminated="term", truncated="trunc",
...                  states=(StateColumn("obs", None, "float32", 0.0),), columns=("action",))
>>> frame = pl.DataFrame({"ep": [0, 0, 1], "obs": [0.5, 1.5, 2.5], "action": [1, 0, 1],
...                       "term": [False, True, False], "trunc": [False, False, True]},
...                      schema_overrides={"obs": pl.Float32})
>>> pool = transition_pool(frame, spec)
>>> pool.pair_rows.tolist(), pool.excluded  # rows 1 and 2 end episodes without a final state
([0], 2)
>>> states, nexts, rows = grid_transitions(pool, np.array([0, 2]), pool.pair_rows)
>>> out, out_spec = transitions_frame(pool.arrays, states, nexts, rows)
>>> out.select("obs", "final_obs", "action").rows()
[(0.5, 1.5, 1), (2.5, 1.5, 1), (1.5, 1.5, 1)]
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Mapping

import numpy as np
import polars as pl

from rewardlab.contracts.steps.arrays import StepsArrays
from rewardlab.core.errors import ParameterError
from rewardlab.core.spec import FrameSpec, StateColumn, final_column

__all__ = ["TransitionPool", "transition_pool", "next_states", "grid_transitions", "transitions_frame",
           "RECOMBINED_SPEC_NAME"]

#: The name of a recombined frame's spec.
RECOMBINED_SPEC_NAME = "recombined"


@dataclass(frozen=True, eq=False)
class TransitionPool:
    """A step table's recorded states and usable (action, next state) pairs (see :func:`transition_pool`).

    Attributes
    ----------
    arrays : StepsArrays
        The frame's arrays (states, finals, extras) as the steps contract reads them.
    pair_rows : int64 array of shape ``[P]``
        Rows whose next state the data holds: every row but the last rows of episodes whose
        final state is missing (padding).
    excluded : int
        Rows left out of the pairs for that reason.
    """

    arrays: StepsArrays
    pair_rows: np.ndarray
    excluded: int

    @property
    def n(self) -> int:
        """Rows of the frame (every one is a recorded state)."""
        return int(self.arrays.n)


def transition_pool(frame: pl.DataFrame, spec: FrameSpec) -> TransitionPool:
    """The recorded states and the rows usable as (action, next state) pairs of a steps frame.

    Parameters
    ----------
    frame : polars.DataFrame
        A step table (checked against ``spec``).
    spec : FrameSpec
        Its spec; at least one state column.

    Returns
    -------
    TransitionPool

    Examples
    --------
    >>> transition_pool(frame, spec).excluded  # doctest: +SKIP
    20
    """
    if not spec.states:
        raise ParameterError("spec", "should declare at least one state column to recombine", spec.name)
    arrays = StepsArrays(frame, spec)
    held = np.ones(arrays.n, dtype=bool)  # the next state is known: a following row, or every state's final
    for state in spec.states:
        known = (frame.get_column(state.final).is_not_null().to_numpy() if state.final is not None
                 else np.zeros(arrays.n, dtype=bool))
        held &= ~arrays.episode_end | known
    rows = np.flatnonzero(held).astype(np.int64)
    return TransitionPool(arrays, rows, int(arrays.n - rows.size))


def next_states(arrays: StepsArrays, rows) -> dict[str, np.ndarray]:
    """The next state of each row in ``rows``, as the steps contract hands ``("next", state)``.

    The following row's state within an episode; on an episode's last row its final state
    (the state's ``pad`` where the data lacks it: keep such rows out, see :func:`transition_pool`).

    Returns
    -------
    dict
        ``{state: array [R] or [R, width]}`` in the state's dtype.

    Examples
    --------
    >>> next_states(pool.arrays, pool.pair_rows)["obs"][:3]  # doctest: +SKIP
    """
    rows = np.asarray(rows, dtype=np.int64)
    nxt = np.minimum(rows + 1, max(arrays.n - 1, 0))
    end = arrays.episode_end[rows]
    out = {}
    for name, values in arrays.states.items():
        after = values[nxt]
        final = arrays.finals.get(name)
        after[end] = final[rows[end]] if final is not None else arrays.state_columns[name].pad
        out[name] = after
    return out


def grid_transitions(pool: TransitionPool, state_rows, pair_rows) -> tuple[dict, dict, np.ndarray]:
    """The grid of recombined transitions: every start state with every pair, start-state major.

    Start states ``u`` are the recorded states of ``state_rows`` (``S`` of them), then the next
    states of ``pair_rows`` (``P``): row ``u * P + j`` of the grid is ``(s_u, a_j, s'_j)``.  The
    first ``S * P`` rows give EPIC's ``r_grid`` and the last ``P * P`` its ``r_next``
    (:func:`rewardlab.analysis.epic.canonicalize`).

    Parameters
    ----------
    pool : TransitionPool
    state_rows : int array of shape ``[S]``
        Rows whose state starts a transition.
    pair_rows : int array of shape ``[P]``
        Rows of ``pool.pair_rows`` whose (action, next state) end one.

    Returns
    -------
    (states, next_states, extra_rows)
        ``states`` and ``next_states``: ``{state: array [(S + P) * P, ...]}``; ``extra_rows``:
        int64 ``[(S + P) * P]``, the recorded row whose extras (action, ...) each transition takes.

    Examples
    --------
    >>> s, n, rows = grid_transitions(pool, np.array([0, 5]), pool.pair_rows[:3])  # doctest: +SKIP
    """
    state_rows = np.asarray(state_rows, dtype=np.int64)
    pair_rows = np.asarray(pair_rows, dtype=np.int64)
    if state_rows.ndim != 1 or pair_rows.ndim != 1 or not pair_rows.size:
        raise ParameterError("pair_rows", "should be a non-empty 1-D array of rows (and state_rows 1-D)",
                             pair_rows.shape)
    held = np.zeros(pool.n, dtype=bool)
    held[pool.pair_rows] = True
    if not held[pair_rows].all():
        raise ParameterError("pair_rows", "should be rows of pool.pair_rows (rows whose next state is known)",
                             int(pair_rows[~held[pair_rows]][0]))
    n_pairs = pair_rows.size
    pair_next = next_states(pool.arrays, pair_rows)
    states, following = {}, {}
    for name, values in pool.arrays.states.items():
        starts = np.concatenate([values[state_rows], pair_next[name]])
        states[name] = np.repeat(starts, n_pairs, axis=0)
        reps = (starts.shape[0],) + (1,) * (pair_next[name].ndim - 1)
        following[name] = np.tile(pair_next[name], reps)
    extra_rows = np.tile(pair_rows, state_rows.size + n_pairs)
    return states, following, extra_rows


def _fresh(name: str, taken: set) -> str:
    while name in taken:
        name = "_" + name
    taken.add(name)
    return name


def transitions_frame(arrays: StepsArrays, states: Mapping, following: Mapping,
                      extra_rows) -> tuple[pl.DataFrame, FrameSpec]:
    """A steps-contract frame of given transitions, each its own one-step truncated episode, and its spec.

    Parameters
    ----------
    arrays : StepsArrays
        The recorded frame's arrays (the state columns' dtypes, widths and pads, and the extras).
    states, following : mapping of state name to array ``[M]`` or ``[M, width]``
        Each transition's state and next state (every state of ``arrays``).
    extra_rows : int array of shape ``[M]``, or a mapping of extra column name to one
        The recorded row each transition's extras come from (a mapping may give some
        columns other rows: a column not named takes ``extra_rows["*"]``).

    Returns
    -------
    (polars.DataFrame, FrameSpec)
        The states under their names, each state's next value in its final column (the
        recorded spec's name for it, else ``final_<state>``), the extras, and an episode
        key, ``terminated`` (all False) and ``truncated`` (all True) under fresh names.
        Apply plug-ins with ``batch_mode="sequential"``: each row is a whole episode.

    Examples
    --------
    >>> out, out_spec = transitions_frame(pool.arrays, s, n, rows)  # doctest: +SKIP
    >>> out_spec.states[0].final  # doctest: +SKIP
    'final_obs'
    """
    names = list(arrays.states)
    if set(states) != set(names) or set(following) != set(names):
        raise ParameterError("states", "should give every state of the frame: " + ", ".join(names),
                             sorted(states))
    if isinstance(extra_rows, Mapping):
        per_column = {c: np.asarray(extra_rows.get(c, extra_rows.get("*")), dtype=np.int64)
                      for c in arrays.extras}
    else:
        rows = np.asarray(extra_rows, dtype=np.int64)
        per_column = {c: rows for c in arrays.extras}
    size = next(iter(states.values())).shape[0] if names else 0
    for name in names:
        if states[name].shape[0] != size or following[name].shape[0] != size:
            raise ParameterError("following", f"should have as many transitions as states ({size})", name)
    taken = set(names) | set(arrays.extras)
    spec_states, columns = [], {}
    for name in names:
        state: StateColumn = arrays.state_columns[name]
        final = _fresh(state.final or final_column(name), taken)
        spec_states.append(StateColumn(name, state.width, state.dtype, state.pad, final=final))
        columns[name] = pl.Series(name, np.ascontiguousarray(states[name], dtype=state.numpy_dtype))
        columns[final] = pl.Series(final, np.ascontiguousarray(following[name], dtype=state.numpy_dtype))
    for name, values in arrays.extras.items():
        rows = per_column[name]
        if rows.shape != (size,):
            raise ParameterError("extra_rows", f"should give one recorded row per transition ({size})", name)
        columns[name] = pl.Series(name, values[rows])
    episode = _fresh("episode", taken)
    terminated = _fresh("terminated", taken)
    truncated = _fresh("truncated", taken)
    columns[episode] = pl.Series(episode, np.arange(size, dtype=np.int64))
    columns[terminated] = pl.Series(terminated, np.zeros(size, dtype=bool))
    columns[truncated] = pl.Series(truncated, np.ones(size, dtype=bool))
    frame = pl.DataFrame(list(columns.values()))
    spec = FrameSpec(name=RECOMBINED_SPEC_NAME, episode=(episode,), terminated=terminated, truncated=truncated,
                     states=tuple(spec_states), columns=tuple(arrays.extras), contract="steps",
                     description="recombined transitions (s_i, a_j, s'_j), one truncated step each")
    return frame, spec
