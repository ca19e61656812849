"""Record stable-retro games with the Retro Contest's wrappers: :func:`record_retro` (``rewardlab.record_retro``).

A timestep is what the contest's evaluation environment made of an emulator
(openai/retro-contest ``support/retro_contest/local.py``, read at commit
2e3790bd5a92ae07c6a8177ef47845f4f5848d49)::

    env = retro.make(game, state, scenario='contest', use_restricted_actions=retro.ACTIONS_FILTERED)
    env = retro_contest.StochasticFrameSkip(env, n=4, stickprob=0.25)
    env = gym.wrappers.TimeLimit(env, max_episode_steps=4500)

(``make`` falls back to the game's default scenario when it has no
``contest`` one).  :func:`sticky_step` is rewardlab's own port of
``StochasticFrameSkip.step`` (``support/retro_contest/__init__.py``, read at
commit b47d9a1cd3e69794c86d792392ca0de8f3686888): one timestep is ``n``
emulator frames; on the first frame of every timestep but an episode's
first, the previous action is repeated when a uniform draw is at most
``stickprob`` (``rng.rand() > stickprob`` takes the new one), and from the
second frame on the new action runs; the frames' rewards are summed and
the loop stops on the frame where the game is done.  The time limit cuts
an episode after ``max_steps`` timesteps; a cut on the step where the game
ends is recorded as terminated (a step ends its episode one way, as in
:func:`rewardlab.record`).

The recording is the **retro layout** (the N+1 layout of
:mod:`rewardlab.sources.steps.finals`), one plain Parquet table, rows in
episode and step order:

==============  ==========  ================================================================
column          dtype       value
==============  ==========  ================================================================
``episode_id``  Int64       0, 1, ...
``t``           Int64       the step: 0..N-1, then N on the final row
``final``       Boolean     true on each episode's last row (t = N), false on the steps
``game``        String      the stable-retro id, e.g. ``Airstriker-Genesis-v0``
``state``       String      the level's state name, e.g. ``Level1``
``frame``       Int64       emulator frames since reset before this row's state (0 at reset)
``action``      Int64 or    the action the policy chose at step t (null on the final row)
                Array
``reward``      Float64     the sum of the step's frame rewards as the emulator returned them
                            (null on the final row)
``terminated``  Boolean     the game is done (the scenario's done) at step t's end (null on
                            the final row)
``truncated``   Boolean     the time limit cut the episode at step t (null on the final row)
variables       Int64       one column per ``data.json`` variable of the game, under its own
                            name, sorted by name (a name the layout uses, such as ``frame``
                            or ``state``, becomes ``data_<name>``)
==============  ==========  ================================================================

These are exactly the columns :mod:`rewardlab.sources.retro.layout` reads
(``rewardlab.load(path, format="retro")``; every column beyond its own is a
variable), so the scenario is not a column: the reward is the ``contest``
scenario's where the game has one, else the game's default scenario's
(Airstriker's: the change of ``score``), unless ``scenario=`` named another.
Whether a step's first frame repeated the previous action is not recorded
either; it follows from the seed (:func:`record_retro`), and
:func:`sticky_step` returns it.

Row t (t < N) holds the state *before* step t (row 0: the values at
reset) with step t's action, reward and flags; row N holds the state after
the last step.  The emulator's k-th frame since reset runs the scenario's
done and then its reward with ``scenario.frame == k`` (checked with a Lua
scenario in ``tests/test_record_retro.py``), so step t's frames saw
``scenario.frame = frame(t) + 1 .. frame(t+1)``: its last frame
``frame(t+1)``, the ``frame`` of the next row.  The screen is not recorded
(the variables are the state).

stable-retro is the optional ``retro`` extra, imported only when
:func:`record_retro` runs (:func:`rewardlab.core.extras.import_extra`).

Examples
--------
>>> from rewardlab.sources.retro.recorder import record_retro
>>> frame = record_retro("Airstriker-Genesis-v0", None, lambda obs, info, rng: rng.integers(0, 2, 12),
...                      episodes=1, seed=0, max_steps=5)
>>> frame["t"].to_list(), frame["final"].to_list()[-2:], frame["frame"].to_list()
([0, 1, 2, 3, 4, 5], [False, True], [0, 4, 8, 12, 16, 20])
>>> frame.columns[-3:]
['gameover', 'lives', 'score']
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import polars as pl

from rewardlab.core.errors import ParameterError, check_choice, check_in_range, check_int
from rewardlab.core.extras import import_extra
from rewardlab.core.files import atomic_path, check_input
from rewardlab.sources.gymnasium.recorder import action_column, action_dtype, check_record_path, with_nulls
from rewardlab.sources.storage import write_table

__all__ = ["record_retro", "sticky_step", "StickyStep", "LAYOUT_COLUMNS", "ACTION_SETS", "variable_column",
           "CONTEST_FRAME_SKIP", "CONTEST_STICKPROB", "CONTEST_MAX_STEPS"]

#: The contest's ``StochasticFrameSkip(n=4, stickprob=0.25)`` and ``TimeLimit(max_episode_steps=4500)``.
CONTEST_FRAME_SKIP, CONTEST_STICKPROB, CONTEST_MAX_STEPS = 4, 0.25, 4500

#: The layout's own columns, in order; the game's variables follow.
LAYOUT_COLUMNS = ("episode_id", "t", "final", "game", "state", "frame", "action", "reward", "terminated",
                  "truncated")

#: Names a variable column may not take (the layout's, and ``next``, which step tables reserve).
_TAKEN = frozenset(LAYOUT_COLUMNS) | {"next"}

#: The action sets of ``stable_retro.Actions`` by the name :func:`record_retro` takes.
ACTION_SETS = ("filtered", "discrete", "multi_discrete", "all")


def _stable_retro():
    return import_extra("stable_retro", extra="retro", what="rewardlab.record_retro", package="stable-retro")


def variable_column(name: str) -> str:
    """The column of ``data.json`` variable ``name``: the name itself, ``data_<name>`` where the layout has it.

    Examples
    --------
    >>> variable_column("score"), variable_column("frame")
    ('score', 'data_frame')
    """
    return f"data_{name}" if name in _TAKEN or name.startswith("data_") and name[5:] in _TAKEN else name


@dataclass
class StickyStep:
    """One timestep of :func:`sticky_step`: the last frame's observation and info, the summed reward,
    whether the game is done, how many frames ran, whether the previous action stuck, the action now held."""

    obs: object
    reward: float
    done: bool
    info: dict
    frames: int
    sticky: bool
    held: object


def sticky_step(env, action, held, rng: np.random.RandomState, *, n: int = CONTEST_FRAME_SKIP,
                stickprob: float = CONTEST_STICKPROB) -> StickyStep:
    """One contest timestep: ``n`` frames of ``env.step`` with a sticky first frame (``StochasticFrameSkip``).

    Parameters
    ----------
    env : stable_retro.RetroEnv
        Stepped one emulator frame per ``env.step``.
    action
        The policy's action for this timestep.
    held
        The action the previous timestep ended with; None on an episode's
        first timestep (then no draw is made and ``action`` runs).
    rng : numpy.random.RandomState
        Draws ``rng.rand()`` once per timestep after the first.
    n : int
        Frames per timestep.
    stickprob : float
        The probability that the previous action runs on the first frame.

    Returns
    -------
    StickyStep
        Its ``held`` is the action to pass as ``held`` next time.

    Examples
    --------
    >>> class Frames:  # an environment whose reward is the action it ran
    ...     def step(self, a):
    ...         return None, float(a), False, False, {}
    >>> rng = np.random.RandomState(1)  # its draws: 0.417, 0.720, 0.000114
    >>> held, out = None, []
    >>> for action in (1, 2, 3, 5):
    ...     step = sticky_step(Frames(), action, held, rng)
    ...     held = step.held
    ...     out.append((step.reward, step.sticky))
    >>> out  # the first timestep draws nothing; the last repeats 3 on its first frame
    [(4.0, False), (8.0, False), (12.0, False), (18.0, True)]
    """
    total, sticky, frames = 0.0, False, 0
    done, obs, info = False, None, {}
    for i in range(n):
        if held is None:  # an episode's first timestep: its action at once
            held = action
        elif i == 0:
            if rng.rand() > stickprob:
                held = action
            else:
                sticky = True
        elif i == 1:
            held = action
        obs, reward, terminated, truncated, info = env.step(held)
        total += reward
        frames += 1
        done = bool(terminated or truncated)
        if done:
            break
    return StickyStep(obs, total, done, info, frames, sticky, held)


def _check_game(retro, game, state, scenario):
    """The game's state and scenario names, checked (``state`` None: its default; ``scenario`` None:
    ``contest`` where the game has it, else its default), as ``local.py`` picks them."""
    if not isinstance(game, str):
        raise ParameterError("game", "should be a stable-retro game id (a str such as 'Airstriker-Genesis-v0')",
                             game)
    every = retro.data.Integrations.ALL
    if game not in retro.data.list_games(every):
        raise ParameterError("game", "should be a game stable-retro integrates", game,
                             hint="See stable_retro.data.list_games(); ids end in -v0, e.g. "
                                  "'SonicTheHedgehog-Genesis-v0'.")
    try:
        retro.data.get_romfile_path(game, every)
    except FileNotFoundError:
        raise ParameterError("game", "needs its ROM imported into stable-retro (stable-retro ships only "
                             "Airstriker-Genesis-v0's)", game,
                             hint="Import your ROM with: python -m stable_retro.import FOLDER") from None
    states = retro.data.list_states(game, every)
    if state is None:
        default = _default_state(retro, game, every)
        if default is None:
            raise ParameterError("state", f"should name one of {game}'s states (it has no default state)",
                                 state, hint="Pass one of: " + ", ".join(states))
        state = default
    if not isinstance(state, str) or state.removesuffix(".state") not in states:
        raise ParameterError("state", f"should be None (the default) or one of {game}'s states: "
                             + ", ".join(states), state)
    scenarios = retro.data.list_scenarios(game, every)
    if scenario is None:
        scenario = "contest" if "contest" in scenarios else "scenario"
    if isinstance(scenario, Path) or isinstance(scenario, str) and scenario.endswith(".json"):
        check_input(scenario)  # a scenario file of your own, as stable-retro takes it
        scenario = str(scenario)
    elif scenario not in scenarios:
        raise ParameterError("scenario", f"should be None, one of {game}'s scenarios ("
                             + ", ".join(scenarios) + ") or a scenario .json file", scenario)
    return state.removesuffix(".state"), scenario


def _default_state(retro, game, inttype) -> str | None:
    metadata = retro.data.get_file_path(game, "metadata.json", inttype)
    if not metadata:
        return None
    try:
        with open(metadata) as f:
            return json.load(f).get("default_state")
    except (OSError, ValueError):
        return None


def record_retro(game: str, state: str | None, policy, *, episodes: int, seed: int, path=None,
                 overwrite: bool = False, max_steps: int = CONTEST_MAX_STEPS, frame_skip: int = CONTEST_FRAME_SKIP,
                 stickprob: float = CONTEST_STICKPROB, scenario: str | None = None, actions: str = "filtered",
                 observations: str = "image") -> pl.DataFrame:
    """Play ``policy`` in a stable-retro game with the contest's wrappers and return (and optionally write)
    the recording in the retro layout (see the module).

    Episode ``i`` resets the emulator to ``state`` (``env.reset(seed=seed + i)``);
    its sticky draws come from ``numpy.random.RandomState([seed, i])`` and
    the policy's generator is ``numpy.random.default_rng([seed, i])``, so
    one episode replays on its own.  The emulator itself is deterministic.

    Parameters
    ----------
    game : str
        A stable-retro game id whose ROM is imported (stable-retro ships
        only ``Airstriker-Genesis-v0``'s).
    state : str or None
        A state of the game (``GreenHillZone.Act1``); None: its default.
    policy : callable
        ``policy(obs, info, rng) -> action``: ``obs`` the screen (or the RAM,
        ``observations="ram"``), ``info`` the game's variables at this row,
        ``rng`` the episode's ``numpy.random.Generator``.  Actions are
        checked against the action space.
    episodes : int
        >= 1.
    seed : int
        >= 0.
    path : str or Path, optional
        A ``.parquet`` file to write (atomically; a plain table, no spec);
        checked before anything is played.
    overwrite : bool
        Replace an existing ``path`` (default: refuse).
    max_steps : int
        The time limit in timesteps (the contest's 4500); a smaller one
        for short recordings.
    frame_skip : int
        Emulator frames per timestep (the contest's 4).
    stickprob : float
        In [0, 1]: the probability of a sticky first frame (the contest's 0.25).
    scenario : str or Path, optional
        The scenario whose reward and done are recorded: a scenario of the
        game's integration or a scenario ``.json`` file of your own (its
        ``scripts`` beside it); default ``contest`` where the game has it
        (the contest's reward), else the game's default.
    actions : str
        stable-retro's action set: ``filtered`` (the contest's: a
        MultiBinary of the buttons), ``discrete``, ``multi_discrete`` or ``all``.
    observations : str
        What the policy sees: ``image`` (the screen) or ``ram``.

    Returns
    -------
    polars.DataFrame
        The table as written (no spec attached): the retro layout's columns.

    Raises
    ------
    ParameterError
        A bad argument; a game without its ROM; an action outside the
        action space (naming the episode and step); another emulator open
        in this process (stable-retro allows one).
    ImportError
        stable-retro is not installed (the message says how to install the
        ``retro`` extra).

    Examples
    --------
    >>> from rewardlab.sources.retro.recorder import record_retro
    >>> frame = record_retro("Airstriker-Genesis-v0", "Level1", lambda obs, info, rng: rng.integers(0, 2, 12),
    ...                      episodes=2, seed=3, max_steps=3)
    >>> frame.group_by("episode_id", maintain_order=True).len()["len"].to_list()
    [4, 4]
    >>> frame.filter(pl.col("final"))["truncated"].to_list()  # flags sit on the last step, not the final row
    [None, None]
    """
    retro = _stable_retro()
    if not callable(policy):
        raise ParameterError("policy", "should be callable as policy(obs, info, rng) -> action",
                             type(policy).__name__)
    episodes = check_int("episodes", episodes, low=1, rule="should be an int >= 1")
    seed = check_int("seed", seed, low=0, rule="should be an int >= 0")
    max_steps = check_int("max_steps", max_steps, low=1, rule="should be an int >= 1")
    frame_skip = check_int("frame_skip", frame_skip, low=1, rule="should be an int >= 1")
    stickprob = check_in_range("stickprob", stickprob, 0.0, 1.0)
    check_choice("actions", actions, ACTION_SETS)
    check_choice("observations", observations, ("image", "ram"))
    path = check_record_path(path, overwrite)
    state, scenario = _check_game(retro, game, state, scenario)
    action_set = {"filtered": retro.Actions.FILTERED, "discrete": retro.Actions.DISCRETE,
                  "multi_discrete": retro.Actions.MULTI_DISCRETE, "all": retro.Actions.ALL}[actions]
    obs_type = retro.Observations.IMAGE if observations == "image" else retro.Observations.RAM
    try:
        env = retro.make(game, state=state, scenario=scenario, use_restricted_actions=action_set,
                         obs_type=obs_type, render_mode=None, inttype=retro.data.Integrations.ALL)
    except RuntimeError as exc:
        if "multiple emulator" not in str(exc):
            raise
        raise ParameterError("game", "cannot be opened while another stable-retro emulator is open in this "
                             "process (stable-retro allows one)", game,
                             hint="close() the other environment first") from None
    try:
        rows = _play(env, policy, episodes=episodes, seed=seed, max_steps=max_steps, frame_skip=frame_skip,
                     stickprob=stickprob)
        space_dtype = action_dtype(env.action_space, _spaces())
    finally:
        env.close()
    frame = _table(rows, game, state, space_dtype)
    if path is not None:
        with atomic_path(path, overwrite=overwrite) as tmp:
            write_table(frame, tmp)
    return frame


def _spaces():
    return import_extra("gymnasium.spaces", extra="retro", what="rewardlab.record_retro", package="Gymnasium")


def _play(env, policy, *, episodes, seed, max_steps, frame_skip, stickprob) -> dict[str, list]:
    rows: dict[str, list] = {c: [] for c in ("episode_id", "t", "final", "frame", "action", "reward",
                                             "terminated", "truncated", "values")}

    def add(episode, t, final, frame, values, action=None, reward=None, terminated=None, truncated=None):
        for name, value in (("episode_id", episode), ("t", t), ("final", final), ("frame", frame),
                            ("action", action), ("reward", reward), ("terminated", terminated),
                            ("truncated", truncated), ("values", values)):
            rows[name].append(value)

    for episode in range(episodes):
        obs, _ = env.reset(seed=seed + episode)
        info = dict(env.data.lookup_all())  # the values at reset (reset's own info is empty)
        sticky_rng = np.random.RandomState([seed, episode])
        policy_rng = np.random.default_rng([seed, episode])
        held, frame, t = None, 0, 0
        while True:
            action = policy(obs, dict(info), policy_rng)
            if not env.action_space.contains(action):
                raise ParameterError("policy", f"should return actions in the game's action space "
                                     f"{env.action_space}; at episode {episode}, step {t} it returned", action)
            action = np.array(action, copy=True) if isinstance(action, np.ndarray) else action
            step = sticky_step(env, action, held, sticky_rng, n=frame_skip, stickprob=stickprob)
            held = step.held
            terminated = step.done
            truncated = not terminated and t + 1 >= max_steps  # the TimeLimit
            add(episode, t, False, frame, info, action, float(step.reward), terminated, truncated)
            obs, info = step.obs, dict(step.info)
            frame += step.frames
            t += 1
            if terminated or truncated:
                add(episode, t, True, frame, info)
                break
    return rows


def _table(rows: dict[str, list], game: str, state: str, space_dtype: pl.DataType) -> pl.DataFrame:
    n = len(rows["t"])
    final = np.asarray(rows["final"], dtype=bool)
    step_actions = [a for a, f in zip(rows["action"], rows["final"]) if not f]
    names = sorted({k for values in rows["values"] for k in values})
    columns = {
        "episode_id": pl.Series(rows["episode_id"], dtype=pl.Int64),
        "t": pl.Series(rows["t"], dtype=pl.Int64),
        "final": pl.Series(final, dtype=pl.Boolean),
        "game": pl.Series([game] * n, dtype=pl.String),
        "state": pl.Series([state] * n, dtype=pl.String),
        "frame": pl.Series(rows["frame"], dtype=pl.Int64),
        "action": with_nulls(action_column(step_actions, space_dtype), ~final),
        "reward": pl.Series(rows["reward"], dtype=pl.Float64),
        "terminated": pl.Series(rows["terminated"], dtype=pl.Boolean),
        "truncated": pl.Series(rows["truncated"], dtype=pl.Boolean),
    }
    for name in names:
        values = [values.get(name) for values in rows["values"]]
        exact = all(v is None or isinstance(v, (int, np.integer)) for v in values)
        columns[variable_column(name)] = pl.Series(values, dtype=pl.Int64 if exact else pl.Float64)
    return pl.DataFrame(columns)
