"""A Minari dataset into a frame of steps: :func:`load_minari`, and its spec :func:`minari_spec`.

One row per step, episodes in Minari's order (episode ids ``0, 1, ...``),
steps in order (:data:`COLUMNS`): ``episode_id`` (Minari's id), ``t``,
``obs`` (the observation the action was taken in, flattened), ``action``,
the reward as ``reward_recorded`` (Float64) with ``done_recorded`` (True on
each episode's last step), ``terminated`` and ``truncated`` (a step Minari
flags both ways is terminated only), and ``final_obs``: the episode's
``N + 1``-th observation on its last row, null elsewhere, so the steps
contract hands it as ``("next", "obs")`` after the last step.

Examples
--------
>>> frame = load_minari("data/minari/mountaincar-arrow-v0")
>>> frame.columns
['episode_id', 't', 'obs', 'action', 'reward_recorded', 'done_recorded', 'terminated', 'truncated', 'final_obs']
>>> from rewardlab.core.spec import attached
>>> attached(frame).states[0]
StateColumn(name='obs', width=2, dtype='float32', pad=0.0, final='final_obs')
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import polars as pl

from rewardlab.core.errors import DataFormatError, ParameterError, check_choice, check_int
from rewardlab.core.files import as_paths
from rewardlab.core.spec import FrameSpec, StateColumn, attach, final_column
from rewardlab.sources.minari.arrow import read_arrow_episodes
from rewardlab.sources.minari.episodes import UNFINISHED_CHOICES, StoredEpisodes, check_episodes
from rewardlab.sources.minari.hdf5 import read_hdf5_episodes
from rewardlab.sources.minari.metadata import MinariMetadata, dataset_folder, read_metadata
from rewardlab.sources.steps.reader import RECORDED, RECORDED_DONE
from rewardlab.sources.values import final_state_column

__all__ = ["load_minari", "minari_spec", "MINARI_SPEC", "COLUMNS", "FINAL_OBS", "dataset_description"]

#: The column holding each episode's final observation on its last row.
FINAL_OBS = final_column("obs")

#: The frame's columns, in order.
COLUMNS = ("episode_id", "t", "obs", "action", RECORDED, RECORDED_DONE, "terminated", "truncated", FINAL_OBS)

#: The source's template spec (a load attaches :func:`minari_spec` with the observations' width).  It
#: names no episode columns, so frames of other sources with an ``episode_id`` are not taken for Minari's.
MINARI_SPEC = FrameSpec(name="minari", contract="steps",
                        description="a Minari dataset: one row per step, the final observations in final_obs")


def minari_spec(width: int, dtype: str = "float32", *, description: str = "") -> FrameSpec:
    """The spec of a Minari frame whose observations hold ``width`` numbers of ``dtype``.

    Examples
    --------
    >>> spec = minari_spec(4)
    >>> spec.required
    ('episode_id', 't', 'terminated', 'truncated', 'obs', 'final_obs', 'action', 'reward_recorded')
    >>> spec.contract
    'steps'
    """
    return FrameSpec(name="minari", episode=("episode_id",), step="t", terminated="terminated",
                     truncated="truncated", states=(StateColumn("obs", width, dtype, 0.0, final=FINAL_OBS),),
                     columns=("action", RECORDED), contract="steps", description=description)


def dataset_description(meta: MinariMetadata) -> str:
    """One line saying which dataset a frame came from (the spec's description)."""
    name = meta.dataset_id or str(meta.folder)
    version = f", written by Minari {meta.minari_version}" if meta.minari_version else ""
    return (f"Minari dataset {name} ({meta.data_format} storage{version}): observations {meta.observations.text}, "
            f"actions {meta.actions.text}; infos not read")


def _one_folder(paths) -> Path:
    """The data folder of the one dataset ``paths`` name (several names of one dataset are one)."""
    folders: dict[Path, Path] = {}
    for p in as_paths(paths):
        folder = dataset_folder(p)
        folders.setdefault(folder.resolve(), folder)
    if len(folders) > 1:
        raise ParameterError("paths", "should name one Minari dataset (each numbers its episodes from 0)",
                             [str(p) for p in folders.values()],
                             hint="Load each dataset on its own and concatenate the frames with a column "
                                  "telling them apart (and that column in the spec's episode key)")
    return next(iter(folders.values()))


def _stored(meta: MinariMetadata, count: int) -> StoredEpisodes:
    read = read_hdf5_episodes if meta.data_format == "hdf5" else read_arrow_episodes
    actions = meta.actions
    return StoredEpisodes.join(read(meta, range(count)), width=meta.observations.width,
                               action_width=None if actions.kind == "Discrete" else actions.width)


def _frame(stored: StoredEpisodes, meta: MinariMetadata, *, unfinished: str) -> pl.DataFrame:
    """The frame of checked episodes (see the module docstring)."""
    obs_dtype = np.dtype(meta.observations.obs_dtype)
    steps, last = stored.steps, stored.last
    ends = np.cumsum(steps + 1) - 1  # each episode's final observation among the observations
    keep = np.ones(stored.obs.shape[0], dtype=bool)
    keep[ends] = False
    obs = stored.obs[keep].astype(obs_dtype, copy=False)
    episode = np.repeat(np.arange(steps.size), steps)
    terminated = stored.terminations.copy()
    truncated = stored.truncations & ~terminated  # a step flagged both ways ended by termination
    if unfinished == "truncate":
        truncated |= last & ~terminated
    obs_type = pl.Array(pl.Float32 if obs_dtype == np.float32 else pl.Float64, meta.observations.width)
    frame = pl.DataFrame([
        pl.Series("episode_id", np.repeat(stored.ids, steps), dtype=pl.Int64),
        pl.Series("t", np.arange(int(steps.sum()), dtype=np.int64) - np.repeat(stored.starts, steps), dtype=pl.Int64),
        pl.Series("obs", obs, dtype=obs_type),
        pl.Series("action", stored.actions, dtype=meta.actions.action_dtype),
        pl.Series(RECORDED, stored.rewards, dtype=pl.Float64),
        pl.Series(RECORDED_DONE, last, dtype=pl.Boolean),
        pl.Series("terminated", terminated, dtype=pl.Boolean),
        pl.Series("truncated", truncated, dtype=pl.Boolean),
        final_state_column(episode, stored.obs[ends].astype(obs_dtype, copy=False), FINAL_OBS).cast(obs_type),
    ])
    return frame


def load_minari(paths, *, unfinished: str = "error", max_episodes: int | None = None) -> pl.DataFrame:
    """Read a local Minari dataset (Arrow, Parquet or HDF5 storage) into a frame of steps with its spec attached.

    Parameters
    ----------
    paths : path or list of paths
        One dataset: its data folder (holding ``metadata.json``), the
        dataset's folder above it, or its ``metadata.json`` /
        ``main_data.hdf5``.
    unfinished : {"error", "truncate"}
        An episode whose last step is flagged neither terminated nor
        truncated: an error naming it (default), or marked truncated.
    max_episodes : int, optional
        Read only the first ``max_episodes`` episodes (>= 1; default all).

    Returns
    -------
    polars.DataFrame
        :data:`COLUMNS`: ``episode_id``, ``t`` Int64; ``obs`` and
        ``final_obs`` ``Array(Float32 | Float64, width)`` (``final_obs`` null
        except on episodes' last rows); ``action`` Int64 (Discrete) or an
        Array; ``reward_recorded`` Float64; ``done_recorded``,
        ``terminated``, ``truncated`` Boolean.  Its spec
        (:func:`minari_spec`) is attached and was checked.

    Raises
    ------
    DataFormatError
        Naming the folder or file and what to do: not a Minari dataset, its
        metadata, unsupported spaces (Dict, Tuple, Text, JPEG images),
        missing episodes, damaged or truncated files, counts that disagree
        (an episode whose observations are not its steps + 1), flags before
        an episode's end (:class:`~rewardlab.core.errors.StepTableError`,
        with the stored column and row).
    ParameterError
        A bad option, or paths naming several datasets.
    ImportError
        h5py missing for an HDF5 dataset (the ``minari`` extra).

    Examples
    --------
    >>> frame = load_minari("data/minari/mountaincar-hdf5-v0", max_episodes=2)
    >>> frame["episode_id"].unique().to_list()
    [0, 1]
    >>> frame.filter(pl.col("done_recorded"))["final_obs"].null_count()
    0
    """
    unfinished = check_choice("unfinished", unfinished, UNFINISHED_CHOICES)
    if max_episodes is not None:
        max_episodes = check_int("max_episodes", max_episodes, low=1, rule="should be None or an int >= 1")
    meta = read_metadata(_one_folder(paths))
    count = meta.total_episodes if max_episodes is None else min(max_episodes, meta.total_episodes)
    stored = _stored(meta, count)
    if count == meta.total_episodes and int(stored.steps.sum()) != meta.total_steps:
        raise DataFormatError(meta.path, None, None, "step_count",
                              f"counts total_steps {meta.total_steps}, and its {count} episodes hold "
                              f"{int(stored.steps.sum())} steps",
                              hint="An interrupted write? Write the dataset again with Minari")
    check_episodes(stored, unfinished=unfinished)
    frame = _frame(stored, meta, unfinished=unfinished)
    spec = minari_spec(meta.observations.width, meta.observations.obs_dtype, description=dataset_description(meta))
    spec.validate(frame)
    return attach(frame, spec)
