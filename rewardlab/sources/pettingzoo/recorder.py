"""Record a PettingZoo parallel environment into a joint step table: :func:`record_parallel`.

PettingZoo's parallel API (``pettingzoo.utils.env.ParallelEnv``, 1.27.0):
``reset(seed=) -> (observations, infos)`` and ``step(actions) ->
(observations, rewards, terminations, truncations, infos)``, every one a
dict by agent name.  :func:`record_parallel` plays one policy per agent and
writes **one row per (episode, step, agent)**, rows ordered by
``episode_id``, ``t``, ``agent_id``, in the N+1 layout of
:mod:`rewardlab.sources.steps.finals`:

================  =============  ==============================================================
column            dtype          value
================  =============  ==============================================================
``episode_id``    Int64          0, 1, ...
``t``             Int64          the step (the joint action's index in the episode)
``agent_id``      Int64          the agent's position in ``env.possible_agents`` (see below)
``agent``         String         the agent's name (``agent_0``)
``final``         Boolean        true on the agent's final row, false on its steps
``obs``           Array(Float32  the agent's observation the action was taken in, flattened (on a
                  or Float64, w) final row: the observation after the agent's last step)
``action``        Int64 or Array the agent's action (null on final rows)
``reward``        Float64        the reward ``step`` returned for the agent (null on final rows)
``terminated``    Boolean        the environment's termination (null on final rows)
``truncated``     Boolean        its truncation, or the ``max_steps`` cut (null on final rows)
step columns      Float64        one per ``step_columns`` entry (null on final rows)
================  =============  ==============================================================

**Agent ids.** ``agent_id`` is the index of the agent's name in
``env.possible_agents``, the environment's own fixed order of every agent
it can have (for ``simple_spread``: ``agent_0 -> 0``, ``agent_1 -> 1``,
...).  Names are never sorted as text (``agent_10`` would come before
``agent_2``); the name stays in ``agent``.  Within a step, rows come in
ascending ``agent_id``, the order a reward manager's ``get_reward`` calls go
in (issue 25).

**Observations** are one fixed-size list column ``obs`` (as
:func:`rewardlab.record` writes them), not ``obs_0 .. obs_k``: the steps
source reads a list column as one state and its final rows as that state's
final column (``final_obs``), once per agent.  Every agent's observation
space must flatten to the same width (pad heterogeneous ones first, e.g.
SuperSuit's ``pad_observations_v0``).

**Final rows.** After the step where an agent is terminated or truncated,
the agent gets one final row at ``t`` = its last step + 1 holding the
observation that step returned (null when the environment returned none).
:mod:`rewardlab.sources.steps.finals` supports this for several agents: the
steps reader gathers rows per (episode, agent) before it takes the final
rows out, so each agent's final row follows its own last step, and the key
of the final rows' rules is (episode, agent).  ``rewardlab.load(path)`` reads the table
as a steps frame with ``agent_id`` as its agent and ``final_obs`` per agent.

An agent leaves the table when it is terminated or truncated; an agent that
drops out of ``env.agents`` without either flag is an error, as is a
reward missing for an agent that acted.

PettingZoo is imported only through the environment you pass; Gymnasium
(its dependency) gives the spaces.

Examples
--------
>>> from mpe2 import simple_spread_v3
>>> from rewardlab.sources.pettingzoo.recorder import record_parallel
>>> env = simple_spread_v3.parallel_env(N=3, local_ratio=0.5, max_cycles=4)
>>> frame = record_parallel(env, lambda obs, agent, rng: int(rng.integers(5)), episodes=1, seed=0)
>>> frame.columns
['episode_id', 't', 'agent_id', 'agent', 'final', 'obs', 'action', 'reward', 'terminated', 'truncated']
>>> frame.filter(pl.col("agent_id") == 1)["t"].to_list(), frame["final"].sum()
([0, 1, 2, 3, 4], 3)
"""

from __future__ import annotations

from typing import Callable

import numpy as np
import polars as pl

from rewardlab.core.columns import check_name
from rewardlab.core.errors import ParameterError, check_int
from rewardlab.core.extras import import_extra
from rewardlab.core.files import atomic_path
from rewardlab.sources.gymnasium.recorder import (action_column, action_dtype, check_record_path, flat_obs,
                                                  obs_layout, with_nulls)
from rewardlab.sources.storage import write_table

__all__ = ["record_parallel", "COLUMNS", "agent_ids"]

#: The table's own columns, in order; the step columns follow.
COLUMNS = ("episode_id", "t", "agent_id", "agent", "final", "obs", "action", "reward", "terminated", "truncated")


def _spaces():
    return import_extra("gymnasium.spaces", extra="pettingzoo", what="rewardlab.record_parallel",
                        package="Gymnasium")


def agent_ids(possible_agents) -> dict[str, int]:
    """Each agent name's ``agent_id``: its index in ``possible_agents`` (the environment's own order).

    Examples
    --------
    >>> agent_ids(["adversary_0", "agent_0", "agent_1"])
    {'adversary_0': 0, 'agent_0': 1, 'agent_1': 2}
    """
    names = list(possible_agents)
    if len(set(names)) != len(names):
        raise ParameterError("env", "should list each agent once in possible_agents", names)
    return {name: i for i, name in enumerate(names)}


def _check_env(env) -> list:
    if callable(getattr(env, "agent_iter", None)) and callable(getattr(env, "last", None)):
        raise ParameterError("env", "should be a PettingZoo parallel environment, not an AEC one", type(env).__name__,
                             hint="Use the environment's parallel_env(...), or "
                                  "pettingzoo.utils.conversions.aec_to_parallel(env).")
    for method in ("reset", "step", "observation_space", "action_space"):
        if not callable(getattr(env, method, None)):
            raise ParameterError("env", f"should be a PettingZoo ParallelEnv (it has no {method}() method)",
                                 type(env).__name__, hint="Pass e.g. simple_spread_v3.parallel_env(...).")
    possible = getattr(env, "possible_agents", None)
    if not possible:
        raise ParameterError("env", "should list its agents in possible_agents", type(env).__name__)
    return list(possible)


def _policies(policies, names: list) -> dict[str, Callable]:
    if callable(policies):
        return {name: policies for name in names}
    if isinstance(policies, dict):
        unknown = [k for k in policies if k not in names]
        missing = [n for n in names if n not in policies]
        if unknown or missing:
            raise ParameterError("policies", "should map every agent of env.possible_agents (" + ", ".join(names)
                                 + ") to a callable" + (f"; unknown: {unknown}" if unknown else "")
                                 + (f"; missing: {missing}" if missing else ""), sorted(map(str, policies)))
        bad = [k for k, v in policies.items() if not callable(v)]
        if bad:
            raise ParameterError("policies", f"should hold callables; the policy of {bad[0]!r} is a",
                                 type(policies[bad[0]]).__name__)
        return dict(policies)
    raise ParameterError("policies", "should be one callable policy(obs, agent, rng) -> action shared by every "
                         "agent, or a dict from agent name to such a callable", type(policies).__name__)


def _step_columns(step_columns) -> dict[str, Callable]:
    if step_columns is None:
        return {}
    if not isinstance(step_columns, dict):
        raise ParameterError("step_columns", "should be None or a dict from column name to a callable "
                             "f(env, agent) -> float", type(step_columns).__name__)
    for name, fn in step_columns.items():
        check_name(name, what="step_columns")
        if name in COLUMNS or name == "next" or name.startswith(("reward_", "done_", "term_", "final_")):
            raise ParameterError("step_columns", "should not name one of the table's columns, 'next', or a "
                                 "reward_/done_/term_/final_ column (rewardlab's own)", name)
        if not callable(fn):
            raise ParameterError("step_columns", f"should map {name!r} to a callable f(env, agent) -> float",
                                 type(fn).__name__)
    return dict(step_columns)


def _layouts(env, names: list, spaces) -> tuple[int, str, pl.DataType]:
    """The one observation width and dtype and the one action dtype every agent shares."""
    obs = {name: obs_layout(env.observation_space(name), spaces) for name in names}
    widths = {w for w, _ in obs.values()}
    if len(widths) > 1:
        raise ParameterError("env", "should give every agent observations of one flattened size (the table "
                             "holds one obs list column)", {n: w for n, (w, _) in obs.items()},
                             hint="Pad them to one size first (SuperSuit's pad_observations_v0).")
    dtype = "float32" if all(d == "float32" for _, d in obs.values()) else "float64"
    actions = {name: action_dtype(env.action_space(name), spaces) for name in names}
    if len(set(actions.values())) > 1:
        raise ParameterError("env", "should give every agent the same kind of action space (the table holds one "
                             "action column)", {n: str(d) for n, d in actions.items()},
                             hint="Pad them to one space first (SuperSuit's pad_action_space_v0).")
    return widths.pop(), dtype, actions[names[0]]


def record_parallel(env, policies, *, episodes: int, seed: int, path=None, overwrite: bool = False,
                    max_steps: int | None = None, step_columns: dict | None = None) -> pl.DataFrame:
    """Play ``policies`` in a PettingZoo parallel environment and return (and optionally write) the joint step
    table (see the module for its columns, agent ids and final rows).

    Episode ``i`` starts with ``env.reset(seed=seed + i)``; agent ``k``'s
    policy gets ``numpy.random.default_rng([seed, i, k])`` in that episode,
    and each agent's action space is seeded with ``seed + k`` first (so a
    policy that calls ``env.action_space(agent).sample()`` is reproducible too).

    Parameters
    ----------
    env : pettingzoo.ParallelEnv
        ``reset``, ``step``, ``possible_agents``, ``observation_space(agent)``
        (Box, Discrete, MultiDiscrete or MultiBinary, one flattened width for
        every agent) and ``action_space(agent)`` (one kind for every agent).
        It is not closed.
    policies : callable or dict
        ``policy(obs, agent, rng) -> action``, one shared by every agent or a
        dict from each agent name to its own; ``obs`` is the observation as
        the environment returned it, ``agent`` the agent's name.
    episodes : int
        >= 1.
    seed : int
        >= 0.
    path : str or Path, optional
        A ``.parquet`` file to write (atomically; a plain table, no spec);
        checked before anything is played.
    overwrite : bool
        Replace an existing ``path`` (default: refuse).
    max_steps : int, optional
        Cut an episode after this many steps, marking its agents truncated.
    step_columns : dict, optional
        ``{column: f(env, agent) -> float}``: extra Float64 columns, called
        for every agent that acted right after each ``step`` (for MPE, the
        global and local parts of the reward: see
        ``scripts/make_simple_spread.py``).

    Returns
    -------
    polars.DataFrame
        The table as written (no spec attached).

    Raises
    ------
    ParameterError
        A bad argument; an action outside an agent's action space, an
        observation of the wrong size, a missing reward, an agent that left
        without a flag (naming the episode, step and agent).
    ImportError
        Gymnasium (PettingZoo's dependency) is missing: install the
        ``pettingzoo`` extra.

    Examples
    --------
    >>> from mpe2 import simple_spread_v3
    >>> env = simple_spread_v3.parallel_env(N=2, local_ratio=0.25, max_cycles=10)
    >>> policies = {"agent_0": lambda obs, agent, rng: 1, "agent_1": lambda obs, agent, rng: 2}
    >>> frame = record_parallel(env, policies, episodes=2, seed=5, max_steps=3)
    >>> frame.filter(~pl.col("final")).group_by("agent", maintain_order=True).agg(pl.col("action").unique())
    shape: (2, 2)
    ┌─────────┬───────────┐
    │ agent   ┆ action    │
    │ ---     ┆ ---       │
    │ str     ┆ list[i64] │
    ╞═════════╪═══════════╡
    │ agent_0 ┆ [1]       │
    │ agent_1 ┆ [2]       │
    └─────────┴───────────┘
    >>> frame.filter(pl.col("t") == 2)["truncated"].to_list()  # the max_steps cut
    [True, True, True, True]
    """
    spaces = _spaces()
    names = _check_env(env)
    ids = agent_ids(names)
    chosen = _policies(policies, names)
    episodes = check_int("episodes", episodes, low=1, rule="should be an int >= 1")
    seed = check_int("seed", seed, low=0, rule="should be an int >= 0")
    if max_steps is not None:
        max_steps = check_int("max_steps", max_steps, low=1, rule="should be None or an int >= 1")
    extra = _step_columns(step_columns)
    path = check_record_path(path, overwrite)
    width, obs_dtype, space_dtype = _layouts(env, names, spaces)
    for name in names:
        env.action_space(name).seed(seed + ids[name])

    rows: dict[str, list] = {c: [] for c in COLUMNS if c not in ("agent_id", "agent")}
    rows.update(agent_id=[], agent=[], **{c: [] for c in extra})
    for episode in range(episodes):
        _play_episode(env, chosen, ids, episode, seed, width, max_steps, extra, rows)
    frame = _table(rows, width, obs_dtype, space_dtype, extra)
    if path is not None:
        with atomic_path(path, overwrite=overwrite) as tmp:
            write_table(frame, tmp)
    return frame


def _play_episode(env, chosen, ids, episode, seed, width, max_steps, extra, rows) -> None:
    def add(t, agent, final, obs, action=None, reward=None, terminated=None, truncated=None, values=None):
        for column, value in (("episode_id", episode), ("t", t), ("agent_id", ids[agent]), ("agent", agent),
                              ("final", final), ("obs", obs), ("action", action), ("reward", reward),
                              ("terminated", terminated), ("truncated", truncated)):
            rows[column].append(value)
        for column in extra:
            rows[column].append(None if values is None else values[column])

    observations, _ = env.reset(seed=seed + episode)
    rngs = {name: np.random.default_rng([seed, episode, k]) for name, k in ids.items()}
    live = _agents(env, ids, episode, 0)
    if not live:
        raise ParameterError("env", f"should have agents after reset; at episode {episode} env.agents is", live)
    t = 0
    while live:
        actions, flats = {}, {}
        for agent in live:
            where = f"at episode {episode}, step {t}, agent {agent!r}"
            if agent not in observations:
                raise ParameterError("env", f"should return an observation for every live agent; {where} it "
                                     "returned none", sorted(observations))
            flats[agent] = flat_obs(observations[agent], width, where)
            action = chosen[agent](observations[agent], agent, rngs[agent])
            if not env.action_space(agent).contains(action):
                raise ParameterError("policies", f"should return actions in the agent's action space "
                                     f"{env.action_space(agent)}; {where} it returned", action)
            actions[agent] = np.array(action, copy=True) if isinstance(action, np.ndarray) else action
        observations, rewards, terminations, truncations, _ = env.step(actions)
        values = {agent: {c: _value(fn, env, agent, c, episode, t) for c, fn in extra.items()} for agent in live}
        cut = max_steps is not None and t + 1 >= max_steps
        ended = []
        for agent in live:
            if agent not in rewards:
                raise ParameterError("env", f"should return a reward for every agent that acted; at episode "
                                     f"{episode}, step {t} it returned none for", agent)
            try:
                reward = float(rewards[agent])
            except (TypeError, ValueError):
                raise ParameterError("env", f"should return a number as the reward; at episode {episode}, step "
                                     f"{t}, agent {agent!r} it returned", rewards[agent]) from None
            terminated = bool(terminations.get(agent, False))
            truncated = not terminated and (bool(truncations.get(agent, False)) or cut)
            add(t, agent, False, flats[agent], actions[agent], reward, terminated, truncated, values[agent])
            if terminated or truncated:
                ended.append(agent)
        for agent in ended:
            after = observations.get(agent)
            add(t + 1, agent, True, None if after is None else
                flat_obs(after, width, f"at episode {episode}, step {t}, agent {agent!r}"))
        still = _agents(env, ids, episode, t + 1)
        left = [a for a in live if a not in ended and a not in still]
        if left:
            raise ParameterError("env", f"should keep an agent until it is terminated or truncated; at episode "
                                 f"{episode}, step {t} agent {left[0]!r} left env.agents without either flag",
                                 left[0])
        live = [] if cut else [a for a in still if a not in ended]
        t += 1


def _value(fn, env, agent, column, episode, t) -> float:
    value = fn(env, agent)
    try:
        return float(value)
    except (TypeError, ValueError):
        raise ParameterError("step_columns", f"should return a number; {column!r} at episode {episode}, step {t}, "
                             f"agent {agent!r} returned", value) from None


def _agents(env, ids, episode, t) -> list:
    """``env.agents`` in ascending agent id, each checked to be one of ``possible_agents``."""
    agents = list(getattr(env, "agents", []))
    unknown = [a for a in agents if a not in ids]
    if unknown:
        raise ParameterError("env", f"should only have agents of possible_agents; at episode {episode}, step {t} "
                             "env.agents holds", unknown[0])
    return sorted(agents, key=ids.__getitem__)


def _table(rows, width, obs_dtype, space_dtype, extra) -> pl.DataFrame:
    n = len(rows["t"])
    order = np.lexsort((np.asarray(rows["agent_id"]), np.asarray(rows["t"]), np.asarray(rows["episode_id"])))
    final = np.asarray(rows["final"], dtype=bool)
    held_obs = np.array([o is not None for o in rows["obs"]], dtype=bool)
    obs_type = pl.Array(pl.Float32 if obs_dtype == "float32" else pl.Float64, width)
    obs_values = (np.stack([o for o in rows["obs"] if o is not None]).astype(obs_dtype, copy=False)
                  if held_obs.any() else np.zeros((0, width), dtype=obs_dtype))
    columns = {
        "episode_id": pl.Series(rows["episode_id"], dtype=pl.Int64),
        "t": pl.Series(rows["t"], dtype=pl.Int64),
        "agent_id": pl.Series(rows["agent_id"], dtype=pl.Int64),
        "agent": pl.Series(rows["agent"], dtype=pl.String),
        "final": pl.Series(final, dtype=pl.Boolean),
        "obs": with_nulls(pl.Series("obs", obs_values, dtype=obs_type), held_obs),
        "action": with_nulls(action_column([a for a, f in zip(rows["action"], final) if not f], space_dtype),
                             ~final),
        "reward": pl.Series(rows["reward"], dtype=pl.Float64),
        "terminated": pl.Series(rows["terminated"], dtype=pl.Boolean),
        "truncated": pl.Series(rows["truncated"], dtype=pl.Boolean),
        **{c: pl.Series(rows[c], dtype=pl.Float64) for c in extra},
    }
    return pl.DataFrame(columns)[order] if n else pl.DataFrame(columns)
