"""Minari episodes as arrays, and the rules they must keep: :func:`make_episode`, :func:`check_episodes`.

Both storages (:mod:`~rewardlab.sources.minari.arrow`,
:mod:`~rewardlab.sources.minari.hdf5`) hand each episode to
:func:`make_episode`, which checks its arrays against each other (``N``
steps: ``N + 1`` observations, the last being the final observation; ``N``
actions, rewards and flags; the shapes of the spaces) and flattens the
observations; :class:`StoredEpisodes` joins them, and
:func:`check_episodes` checks the rules on whole columns: every episode has
a step, its flags are on its last step only and one of them is (or
``unfinished="truncate"``), the rewards are finite.  Errors are
:class:`~rewardlab.core.errors.StepTableError` s naming the file, the
stored column (``observations``, or ``episode_3/observations`` in HDF5),
the row in it, the episode and what to do.

Examples
--------
>>> import numpy as np
>>> from rewardlab.sources.minari.spaces import SpaceLayout
>>> box = SpaceLayout("Box", (2,), np.dtype("float32"), "Box(2,) float32")
>>> one = make_episode(7, "main_data.hdf5", "episode_7/", box, SpaceLayout("Discrete", (), np.dtype("int64"), "D"),
...                    observations=np.zeros((3, 2)), actions=[0, 1], rewards=[1.0, 1.0],
...                    terminations=[False, True], truncations=[False, False], declared=2)
>>> stored = StoredEpisodes.join([one], width=2)
>>> stored.steps.tolist(), stored.obs.shape
([2], (3, 2))
>>> check_episodes(stored, unfinished="error")
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import numpy as np

from rewardlab.core.errors import StepTableError
from rewardlab.core.fronts import Fix, Text
from rewardlab.sources.minari.spaces import SpaceLayout

__all__ = ["Episode", "StoredEpisodes", "make_episode", "check_episodes", "episode_error", "UNFINISHED_CHOICES",
           "STORED_COLUMNS", "DAMAGED_HINT"]

#: The stored columns of an episode that are read (its ``infos`` are not).
STORED_COLUMNS = ("observations", "actions", "rewards", "terminations", "truncations")

#: What to do about a storage file that cannot be read.
DAMAGED_HINT = ("The file is damaged or incomplete (cut short by a copy or a full disk?): copy the dataset "
                "again, or write it again with Minari")

#: ``unfinished=``: an episode whose last step has neither flag is an error, or is marked truncated.
UNFINISHED_CHOICES = ("error", "truncate")

_REWRITE_HINT = ("The dataset's files disagree with what Minari writes; write it again with Minari "
                 "(DataCollector or minari.create_dataset_from_buffers)")


def episode_error(path, column: str, rule: str, message: str, *, row: int | None = None,
                  hint: str | None = None) -> StepTableError:
    """The error of a stored column of one episode (``row``: 0-based within that column)."""
    return StepTableError(path, rule, message, row=row, column=column, hint=hint or _REWRITE_HINT)


@dataclass(frozen=True)
class Episode:
    """One episode's arrays, checked against each other (:func:`make_episode`).

    ``obs`` is ``[N + 1, width]`` (the last row the final observation),
    ``actions`` ``[N]`` or ``[N, width]``, ``rewards`` float64 ``[N]``, the
    flags bool ``[N]``; ``path`` and ``prefix`` say where it is stored
    (``prefix`` + ``"rewards"`` names a stored column).
    """

    id: int
    path: Path
    prefix: str
    obs: np.ndarray
    actions: np.ndarray
    rewards: np.ndarray
    terminations: np.ndarray
    truncations: np.ndarray


def _vector(values, path, column: str, episode: int, n: int, what: str) -> np.ndarray:
    values = np.asarray(values)
    if values.ndim != 1 or values.shape[0] != n:
        raise episode_error(path, column, "step_count",
                            f"episode {episode} holds {what} of shape {values.shape} for {n} steps; Minari stores "
                            f"one per step")
    return values


def make_episode(episode: int, path, prefix: str, obs_layout: SpaceLayout, action_layout: SpaceLayout, *,
                 observations, actions, rewards, terminations, truncations, declared: int | None) -> Episode:
    """Check one episode's stored arrays against each other and return them as an :class:`Episode`.

    ``observations`` holds ``N + 1`` values, ``actions``, ``rewards``,
    ``terminations`` and ``truncations`` ``N`` each (an Arrow storage's
    padding row already cut off), ``N`` being ``len(rewards)``;
    ``declared`` is the episode's step count as its metadata records it
    (None: not recorded).

    Raises :class:`~rewardlab.core.errors.StepTableError` naming the file and
    stored column: rule ``observation_count`` (not ``N + 1``
    observations), ``step_count`` (another count of actions, rewards or flags,
    or a recorded count other than ``N``), ``shape`` (a value not of its
    space's shape), ``not_integer`` (a Discrete, MultiDiscrete, MultiBinary
    or integer Box action stored as a float that is not a whole number).
    """
    path = Path(path)
    rewards = np.asarray(rewards)
    if rewards.ndim != 1:
        raise episode_error(path, prefix + "rewards", "shape",
                            f"episode {episode}'s rewards have shape {rewards.shape}, not one number per step")
    n = rewards.shape[0]
    if declared is not None and declared != n:
        raise episode_error(path, prefix + "rewards", "step_count",
                            f"episode {episode} holds {n} steps, its metadata records total_steps {declared}")
    observations = np.asarray(observations)
    count = observations.shape[0] if observations.ndim else 0
    if count != n + 1:
        raise episode_error(path, prefix + "observations", "observation_count",
                            f"episode {episode} holds {count} observations for {n} steps; Minari stores "
                            f"steps + 1 = {n + 1} (the last one is the observation after the last step)")
    obs = obs_layout.rows(observations)
    if obs is None:
        raise episode_error(path, prefix + "observations", "shape",
                            f"episode {episode}'s observations have shape {observations.shape[1:]}, the "
                            f"observation space {obs_layout.text} has shape {obs_layout.shape}")
    stored_actions = np.asarray(actions)
    integral = action_layout.kind != "Box" or not np.issubdtype(action_layout.dtype, np.floating)
    if integral and stored_actions.dtype.kind == "f":
        bad = np.flatnonzero(~(np.isfinite(stored_actions) & (stored_actions == np.trunc(stored_actions)))
                             .reshape(stored_actions.shape[0], -1).any(axis=1)) if stored_actions.ndim else [0]
        if len(bad):
            row = int(bad[0])
            shown = stored_actions[row] if stored_actions.ndim else stored_actions
            raise episode_error(path, prefix + "actions", "not_integer",
                                f"episode {episode}, step {row} holds the action {shown}, not a whole number of "
                                f"the action space {action_layout.text}", row=row)
    acts = action_layout.actions(stored_actions) if stored_actions.shape[:1] == (n,) else None
    if acts is None:
        raise episode_error(path, prefix + "actions", "shape",
                            f"episode {episode} holds actions of shape {stored_actions.shape} for {n} steps of "
                            f"the action space {action_layout.text} (shape {action_layout.shape})")
    flags = [_vector(v, path, prefix + name, episode, n, name)
             for name, v in (("terminations", terminations), ("truncations", truncations))]
    for name, v in zip(("terminations", "truncations"), flags):
        if v.dtype != np.bool_ and not np.isin(v, (0, 1)).all():
            raise episode_error(path, prefix + name, "not_boolean",
                                f"episode {episode}'s {name} hold values other than True / False (0 / 1)")
    return Episode(id=int(episode), path=path, prefix=prefix, obs=obs, actions=acts,
                   rewards=rewards.astype(np.float64, copy=False), terminations=flags[0].astype(bool, copy=False),
                   truncations=flags[1].astype(bool, copy=False))


@dataclass(frozen=True)
class StoredEpisodes:
    """Episodes joined: per episode ``ids``, ``steps`` (``N``), ``paths`` and ``prefixes``; per observation
    ``obs`` ``[sum(N + 1), width]``; per step ``actions``, ``rewards``, ``terminations``, ``truncations``."""

    ids: np.ndarray
    steps: np.ndarray
    paths: list[Path]
    prefixes: list[str]
    obs: np.ndarray
    actions: np.ndarray
    rewards: np.ndarray
    terminations: np.ndarray
    truncations: np.ndarray

    @classmethod
    def join(cls, episodes: list[Episode], *, width: int, action_width: int | None = None,
             obs_dtype=np.float64, action_dtype=np.int64) -> "StoredEpisodes":
        """The episodes, in order, as one set of arrays (empty ones of these shapes for no episodes)."""
        if not episodes:
            actions_shape = (0,) if action_width is None else (0, action_width)
            return cls(np.zeros(0, np.int64), np.zeros(0, np.int64), [], [], np.zeros((0, width), obs_dtype),
                       np.zeros(actions_shape, action_dtype), np.zeros(0), np.zeros(0, bool), np.zeros(0, bool))
        return cls(
            ids=np.array([e.id for e in episodes], dtype=np.int64),
            steps=np.array([e.rewards.shape[0] for e in episodes], dtype=np.int64),
            paths=[e.path for e in episodes], prefixes=[e.prefix for e in episodes],
            obs=np.concatenate([e.obs for e in episodes]),
            actions=np.concatenate([e.actions for e in episodes]),
            rewards=np.concatenate([e.rewards for e in episodes]),
            terminations=np.concatenate([e.terminations for e in episodes]),
            truncations=np.concatenate([e.truncations for e in episodes]))

    @property
    def starts(self) -> np.ndarray:
        """Each episode's first row among the steps."""
        return np.cumsum(self.steps) - self.steps

    @property
    def last(self) -> np.ndarray:
        """Bool ``[sum(N)]``: True on each episode's last step."""
        last = np.zeros(int(self.steps.sum()), dtype=bool)
        last[np.cumsum(self.steps)[self.steps > 0] - 1] = True
        return last

    def where(self, row: int) -> tuple[int, int]:
        """``(episode index, step)`` of the step row ``row``."""
        k = int(np.searchsorted(np.cumsum(self.steps), row, side="right"))
        return k, row - int(self.starts[k])


def check_episodes(stored: StoredEpisodes, *, unfinished: str) -> None:
    """Check the rules on whole columns; raises the first broken one as a
    :class:`~rewardlab.core.errors.StepTableError` naming file, column, row and episode.

    Rules: ``empty_episode`` (no step), ``flag_before_end`` (a termination or
    truncation before an episode's last step), ``unfinished`` (neither flag on
    its last step, unless ``unfinished="truncate"``), ``not_finite`` (a NaN
    or infinite reward).
    """
    empty = np.flatnonzero(stored.steps == 0)
    if empty.size:
        k = int(empty[0])
        raise episode_error(stored.paths[k], stored.prefixes[k] + "rewards", "empty_episode",
                            f"episode {int(stored.ids[k])} has no step (one observation, no action)",
                            hint="Leave it out: write the dataset again without it")
    last = stored.last
    flag = stored.terminations | stored.truncations
    for rule, bad, message, hint in (
            ("flag_before_end", flag & ~last, "is flagged {column} before the episode's last step ({n} steps)",
             "An episode ends at its first termination or truncation: write the dataset again with Minari "
             "(DataCollector starts a new episode there)"),
            ("unfinished", (~flag & last) if unfinished == "error" else np.zeros_like(last),
             "is the episode's last step and is flagged neither terminated nor truncated",
             Text(Fix("unfinished", "truncate", verb="Load with", option=True), " to mark such episodes truncated (a "
                  "collection stopped mid-episode), or write the dataset again with its flags")),
            ("not_finite", ~np.isfinite(stored.rewards), "has the reward {reward}",
             "Fix the rewards and write the dataset again")):
        rows = np.flatnonzero(bad)
        if rows.size:
            row = int(rows[0])
            k, t = stored.where(row)
            column = ("terminations" if stored.terminations[row] else "truncations") if rule == "flag_before_end" \
                else "terminations" if rule == "unfinished" else "rewards"
            text = message.format(column=column, n=int(stored.steps[k]), reward=stored.rewards[row])
            raise episode_error(stored.paths[k], stored.prefixes[k] + column, rule,
                                f"episode {int(stored.ids[k])}, step {t} {text}", row=t, hint=hint)
