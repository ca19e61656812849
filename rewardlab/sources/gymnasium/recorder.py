"""Record a Gymnasium environment into a step table: :func:`record` (``rewardlab.record``).

A user records their own environment in two lines::

    env = gymnasium.make("CartPole-v1")
    frame = rewardlab.record(env, lambda obs: env.action_space.sample(), episodes=20, seed=0,
                             path="cartpole.parquet")

The table has one row per step (:data:`COLUMNS`): ``episode_id``, ``t``,
``obs`` (the observation the action was taken in, flattened to a fixed-size
list of floats), ``final_obs`` (on each episode's last step, the observation
that step returned: the episode's final observation, where the goal is
reached or the time limit cuts; null on every other row), ``action``, the
reward Gymnasium returned as
``reward_recorded`` (Float64) with ``done_recorded`` (``terminated |
truncated``: True on each episode's last step), and Gymnasium's own
``terminated`` and ``truncated`` flags (a ``TimeLimit`` cut is
``truncated``, not ``terminated``).  That is the layout of every step-table
source (:mod:`rewardlab.sources.steps`, :mod:`rewardlab.sources.rllib`): the
recorded reward is the candidate ``recorded``, a baseline for comparisons,
and, listed in the spec's ``columns``, the root IN key ``reward_recorded``
plug-ins read (:data:`rewardlab.scaling.RECORDED_KEY`).  A step Gymnasium flags both ways (a time limit reached on
the very step the episode ends) is recorded as terminated only, since a
rewardlab step ends its episode one way and termination is what happened:
returns bootstrap with zero there, and both normalizer replays reset as the
libraries do.  Each state is stored once, as
in every rewardlab frame: the next observation of a row is the following
row's, and after an episode's last step its final observation
(``final_obs``, the spec's :attr:`~rewardlab.core.spec.StateColumn.final`),
so a plug-in's ``("next", "obs")`` on the last step is the real observation
and a truncated episode's last step can be bootstrapped from it
(``next_value=`` of the returns takes a function of the final observation).  The frame carries a
:class:`~rewardlab.core.spec.FrameSpec` (contract ``"steps"``), and the
Parquet file stores it in its metadata, so ``rewardlab.load(path)`` reads it
back through the ``"dataset"`` source and plug-ins run on it under the steps
contract.

Gymnasium is imported only here, when :func:`record` runs (the optional
``gym`` extra; without it, :func:`record` says the command that installs it:
:func:`rewardlab.core.extras.missing_extra`).

The pieces every recorder shares are public here (:func:`check_record_path`,
:func:`obs_layout`, :func:`flat_obs`, :func:`action_dtype`,
:func:`action_column`, :func:`with_nulls`): ``rewardlab.record_retro``
(:mod:`rewardlab.sources.retro.recorder`) and ``rewardlab.record_parallel``
(:mod:`rewardlab.sources.pettingzoo.recorder`) write with them.

Examples
--------
>>> import gymnasium, rewardlab
>>> env = gymnasium.make("CartPole-v1")
>>> frame = rewardlab.record(env, lambda obs: int(obs[2] > 0), episodes=2, seed=0)
>>> frame.columns
['episode_id', 't', 'obs', 'final_obs', 'action', 'reward_recorded', 'done_recorded', 'terminated', 'truncated']
>>> frame.group_by("episode_id").len().height
2
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import polars as pl

from rewardlab.core.errors import ParameterError, check_int
from rewardlab.core.extras import import_extra
from rewardlab.core.files import atomic_path, check_output
from rewardlab.core.spec import FrameSpec, StateColumn, attach, final_column
from rewardlab.sources.steps.reader import RECORDED, RECORDED_DONE
from rewardlab.sources.storage import write_table

__all__ = ["record", "COLUMNS", "FINAL_OBS", "recording_spec", "check_record_path", "obs_layout", "flat_obs",
           "action_dtype", "action_column", "with_nulls"]

#: The column of each episode's final observation (on its last step; null elsewhere).
FINAL_OBS = final_column("obs")

#: The step table's columns, in order (the steps source's layout for a table of Gymnasium's own columns).
COLUMNS = ("episode_id", "t", "obs", FINAL_OBS, "action", RECORDED, RECORDED_DONE, "terminated", "truncated")


def _gymnasium():
    return import_extra("gymnasium", extra="gym", what="rewardlab.record", package="Gymnasium")


def recording_spec(obs_width: int, obs_dtype: str = "float32", *, description: str = "") -> FrameSpec:
    """The spec of a recorded step table whose observations hold ``obs_width`` floats of ``obs_dtype``.

    ``action`` and the recorded reward ``reward_recorded`` are its extra
    columns: the steps contract hands both to plug-ins at the root of the
    TensorDict.  ``final_obs`` holds each episode's final observation.

    Examples
    --------
    >>> recording_spec(4).states
    (StateColumn(name='obs', width=4, dtype='float32', pad=0.0, final='final_obs'),)
    >>> recording_spec(4).columns
    ('action', 'reward_recorded')
    """
    return FrameSpec(name="gymnasium", episode=("episode_id",), step="t", terminated="terminated",
                     truncated="truncated",
                     states=(StateColumn("obs", obs_width, obs_dtype, 0.0, final=FINAL_OBS),),
                     columns=("action", RECORDED), contract="steps", description=description)


def check_record_path(path, overwrite) -> Path | None:
    """Check a recorder's ``path`` (None, or a ``.parquet`` file to write) and ``overwrite``, before any work.

    Every recorder (:func:`record`, ``record_retro``, ``record_parallel``)
    checks its output this way: an existing file is refused unless
    ``overwrite`` (:func:`rewardlab.core.files.check_output`).

    Returns
    -------
    Path or None

    Examples
    --------
    >>> check_record_path(None, False) is None
    True
    >>> check_record_path("out.csv", False)
    Traceback (most recent call last):
    ...
    rewardlab.core.errors.ParameterError: `path` should be a .parquet file name. Received 'out.csv'.
    """
    if not isinstance(overwrite, bool):
        raise ParameterError("overwrite", "should be True or False", overwrite)
    if path is None:
        return None
    if not isinstance(path, (str, Path)) or Path(path).suffix != ".parquet":
        raise ParameterError("path", "should be a .parquet file name", path)
    return check_output(path, overwrite=overwrite)


def obs_layout(space, spaces) -> tuple[int, str]:
    """Width and float dtype of the flattened observations of ``space`` (``spaces``: ``gymnasium.spaces``).

    Examples
    --------
    >>> from gymnasium import spaces
    >>> obs_layout(spaces.Box(0.0, 1.0, (2, 3)), spaces), obs_layout(spaces.Discrete(4), spaces)
    ((6, 'float32'), (1, 'float64'))
    """
    if isinstance(space, spaces.Box):
        width = int(np.prod(space.shape, dtype=np.int64)) if space.shape else 1
        return width, "float32" if space.dtype in (np.float16, np.float32) else "float64"
    if isinstance(space, spaces.Discrete):
        return 1, "float64"
    if isinstance(space, (spaces.MultiDiscrete, spaces.MultiBinary)):
        return int(np.prod(space.shape, dtype=np.int64)), "float64"
    raise ParameterError("env", "should have a Box, Discrete, MultiDiscrete or MultiBinary observation space "
                         "(a step table stores a fixed-size list of floats)", type(space).__name__,
                         hint="Wrap it in gymnasium.wrappers.FlattenObservation first.")


def action_dtype(space, spaces) -> pl.DataType:
    """The action column's dtype: Int64 (Discrete), Int64 arrays, or float arrays (Box).

    Examples
    --------
    >>> from gymnasium import spaces
    >>> action_dtype(spaces.Discrete(5), spaces), action_dtype(spaces.MultiBinary(12), spaces)
    (Int64, Array(Int64, shape=(12,)))
    """
    if isinstance(space, spaces.Discrete):
        return pl.Int64
    if isinstance(space, (spaces.MultiDiscrete, spaces.MultiBinary)):
        return pl.Array(pl.Int64, int(np.prod(space.shape, dtype=np.int64)))
    if isinstance(space, spaces.Box):
        width = int(np.prod(space.shape, dtype=np.int64)) if space.shape else 1
        inner = pl.Float32 if space.dtype in (np.float16, np.float32) else (
            pl.Int64 if np.issubdtype(space.dtype, np.integer) else pl.Float64)
        return pl.Array(inner, width)
    raise ParameterError("env", "should have a Discrete, MultiDiscrete, MultiBinary or Box action space",
                         type(space).__name__, hint="Record a flattened wrapper of the environment.")


def _check_env(env, gym) -> None:
    spaces = gym.spaces
    if isinstance(env, gym.vector.VectorEnv):
        raise ParameterError("env", "should be a single environment, not a vector environment (a step table "
                             "holds one environment's episodes one after another)", type(env).__name__,
                             hint="Record gymnasium.make(...) rather than gymnasium.make_vec(...).")
    for method in ("reset", "step"):
        if not callable(getattr(env, method, None)):
            raise ParameterError("env", f"should be a Gymnasium environment (it has no {method}() method)",
                                 type(env).__name__, hint="Pass gymnasium.make(...) or your gymnasium.Env.")
    for attr in ("observation_space", "action_space"):
        if not isinstance(getattr(env, attr, None), spaces.Space):
            raise ParameterError("env", f"should have a gymnasium.spaces.Space as {attr}",
                                 type(getattr(env, attr, None)).__name__)


def record(env, policy, *, episodes: int, seed: int, path=None, overwrite: bool = False,
           max_steps: int | None = None) -> pl.DataFrame:
    """Run ``policy`` in ``env`` for ``episodes`` episodes and return (and optionally write) the step table.

    Episode ``i`` starts with ``env.reset(seed=seed + i)``, so any one
    episode can be replayed on its own; ``env.action_space`` is seeded with ``seed`` first, so a random
    policy written as ``lambda obs: env.action_space.sample()`` is
    reproducible too.  ``policy(obs)`` receives the observation as the
    environment returned it and returns an action; a policy with its own
    randomness should hold its own seeded generator.

    Parameters
    ----------
    env : gymnasium.Env
        The environment (``gymnasium.make(...)`` or your own ``gymnasium.Env``):
        ``reset``, ``step``, an observation space that is ``Box``,
        ``Discrete``, ``MultiDiscrete`` or ``MultiBinary`` (flattened to a
        fixed-size list of floats) and an action space of the same kinds.
        It is not closed.
    policy : callable
        ``policy(obs) -> action``; every action is checked against
        ``env.action_space`` before it is taken.
    episodes : int
        How many episodes, >= 1.
    seed : int
        >= 0; the episodes' reset seeds are ``seed, seed + 1, ...``.
    path : str or Path, optional
        A ``.parquet`` file to write the table to (atomically; its spec in
        the file's metadata, so :func:`rewardlab.load` reads it back).
        Checked before anything is recorded.
    overwrite : bool
        Replace an existing ``path`` (default: refuse, naming it).
    max_steps : int, optional
        Cut an episode after this many steps (>= 1) and mark its last step
        ``truncated``, as a time limit would; without it an episode runs
        until the environment terminates or truncates it.

    Returns
    -------
    polars.DataFrame
        :data:`COLUMNS`: ``episode_id`` and ``t`` Int64; ``obs`` and
        ``final_obs`` ``Array(Float32 | Float64, width)`` (``final_obs``: the
        observation the episode's last ``step`` returned, on that step's
        row; null elsewhere); ``action`` Int64 (Discrete) or an
        Array; ``reward_recorded`` Float64 (the reward ``env.step`` returned);
        ``done_recorded``, ``terminated`` and ``truncated`` Boolean
        (``done_recorded`` is ``terminated | truncated``).
        It carries its spec (:func:`recording_spec`).

    Raises
    ------
    ParameterError
        A bad argument (naming it, its rule and the value); an action outside
        the action space, or an observation or reward the table cannot hold,
        naming the episode and the step.

    Examples
    --------
    >>> import gymnasium, rewardlab
    >>> env = gymnasium.make("MountainCar-v0", max_episode_steps=50)
    >>> frame = rewardlab.record(env, lambda obs: 2 if obs[1] >= 0 else 0, episodes=1, seed=3)
    >>> frame["truncated"].to_list()[-1], frame.height, frame["final_obs"].null_count()
    (True, 50, 49)
    """
    gym = _gymnasium()
    spaces = gym.spaces
    _check_env(env, gym)
    if not callable(policy):
        raise ParameterError("policy", "should be callable as policy(obs) -> action", type(policy).__name__)
    episodes = check_int("episodes", episodes, low=1, rule="should be an int >= 1")
    seed = check_int("seed", seed, low=0, rule="should be an int >= 0 (Gymnasium's seeds are non-negative)")
    if max_steps is not None:
        max_steps = check_int("max_steps", max_steps, low=1, rule="should be None or an int >= 1")
    path = check_record_path(path, overwrite)
    width, obs_dtype = obs_layout(env.observation_space, spaces)
    action_type = action_dtype(env.action_space, spaces)

    rows: dict[str, list] = {c: [] for c in COLUMNS}
    env.action_space.seed(seed)
    for episode in range(episodes):
        obs, _ = env.reset(seed=seed + episode)
        t = 0
        while True:
            flat = flat_obs(obs, width, f"at episode {episode}, step {t}")
            action = policy(obs)
            if not env.action_space.contains(action):
                raise ParameterError("policy", f"should return actions in the environment's action space "
                                     f"{env.action_space}; at episode {episode}, step {t} it returned", action)
            obs, reward, terminated, truncated, _ = env.step(action)
            try:
                reward = float(reward)
            except (TypeError, ValueError):
                raise ParameterError("env", f"should return a number as the reward; at episode {episode}, "
                                     f"step {t} it returned", reward) from None
            terminated = bool(terminated)
            # a step ends its episode one way: a time limit hit on the terminal step is a termination
            truncated = not terminated and (bool(truncated) or (max_steps is not None and t + 1 >= max_steps))
            rows["episode_id"].append(episode)
            rows["t"].append(t)
            rows["obs"].append(flat)
            rows[FINAL_OBS].append(None)
            rows["action"].append(np.array(action, copy=True) if isinstance(action, np.ndarray) else action)
            rows[RECORDED].append(reward)
            rows[RECORDED_DONE].append(terminated or truncated)
            rows["terminated"].append(terminated)
            rows["truncated"].append(truncated)
            t += 1
            if terminated or truncated:
                rows[FINAL_OBS][-1] = flat_obs(obs, width, f"at episode {episode}, step {t}")
                break

    version = getattr(gym, "__version__", "?")
    env_id = env.spec.id if getattr(env, "spec", None) is not None else type(env).__name__
    spec = recording_spec(width, obs_dtype, description=f"{env_id} recorded with Gymnasium {version} by "
                          f"rewardlab.record ({episodes} episodes, seed {seed})")
    frame = pl.DataFrame({
        "episode_id": pl.Series(rows["episode_id"], dtype=pl.Int64),
        "t": pl.Series(rows["t"], dtype=pl.Int64),
        "obs": pl.Series(np.stack(rows["obs"]).astype(obs_dtype, copy=False), dtype=spec.states[0].polars_dtype),
        FINAL_OBS: _final_column(rows[FINAL_OBS], width, obs_dtype, spec.states[0].polars_dtype),
        "action": action_column(rows["action"], action_type),
        RECORDED: pl.Series(rows[RECORDED], dtype=pl.Float64),
        RECORDED_DONE: pl.Series(rows[RECORDED_DONE], dtype=pl.Boolean),
        "terminated": pl.Series(rows["terminated"], dtype=pl.Boolean),
        "truncated": pl.Series(rows["truncated"], dtype=pl.Boolean),
    })
    spec.validate(frame)
    frame = attach(frame, spec)
    if path is not None:
        with atomic_path(path, overwrite=overwrite) as tmp:
            write_table(frame, tmp, spec=spec)
    return frame


def flat_obs(obs, width: int, where: str) -> np.ndarray:
    """``obs`` as a copied, flat float64 array of ``width`` numbers; else a ParameterError saying ``where``.

    Examples
    --------
    >>> flat_obs([[1, 2], [3, 4]], 4, "at episode 0, step 0").tolist()
    [1.0, 2.0, 3.0, 4.0]
    """
    try:
        # a copy: an environment may refill one buffer and hand it back every step
        flat = np.array(obs, dtype=np.float64, copy=True).reshape(-1)
    except (TypeError, ValueError):
        flat = None
    if flat is None or flat.shape[0] != width:
        raise ParameterError("env", f"should return observations of {width} numbers (its observation space); "
                             f"{where} it returned", obs)
    return flat


def _final_column(finals: list, width: int, obs_dtype: str, dtype: pl.DataType) -> pl.Series:
    """The final observations (arrays on episodes' last rows, None elsewhere) as a nullable column."""
    held = np.array([f is not None for f in finals], dtype=bool)
    values = np.zeros((len(finals), width), dtype=obs_dtype)
    if held.any():
        values[held] = np.stack([f for f in finals if f is not None])
    series = pl.Series(FINAL_OBS, values, dtype=dtype)
    return pl.select(pl.when(pl.Series(held)).then(series).alias(FINAL_OBS)).to_series()


def action_column(actions: list, dtype: pl.DataType) -> pl.Series:
    """The ``action`` column of ``actions`` (one per step) in ``dtype`` (:func:`action_dtype`).

    Examples
    --------
    >>> action_column([1, 0, 4], pl.Int64).to_list()
    [1, 0, 4]
    """
    if dtype == pl.Int64:
        return pl.Series("action", np.asarray(actions, dtype=np.int64).reshape(-1), dtype=pl.Int64)
    inner = dtype.inner
    np_dtype = np.float32 if inner == pl.Float32 else np.float64 if inner == pl.Float64 else np.int64
    values = np.stack([np.asarray(a, dtype=np_dtype).reshape(-1) for a in actions])
    return pl.Series("action", values, dtype=dtype)


def with_nulls(values: pl.Series, held) -> pl.Series:
    """``values`` spread over the rows where ``held`` is true, null on the others (same name and dtype).

    ``values`` has one entry per true value of ``held`` (a bool array),
    in order: how a recorder builds a column that some rows lack (an N+1
    layout's final rows have no action or reward).

    Examples
    --------
    >>> with_nulls(pl.Series("a", [1, 2]), np.array([True, False, True])).to_list()
    [1, None, 2]
    """
    held = np.asarray(held, dtype=bool)
    if values.len() != int(held.sum()):
        raise ParameterError("values", f"should have one value per held row ({int(held.sum())})", values.len())
    if not values.len():
        return pl.Series(values.name, [None] * held.size, dtype=values.dtype)
    index = np.maximum(np.cumsum(held) - 1, 0).astype(np.uint32)
    full = values.gather(pl.Series(index))
    return pl.select(pl.when(pl.Series(held)).then(full).otherwise(None).alias(values.name)).to_series()
