"""Minari datasets registered as a source (format ``"minari"``): detection, options, roles.

``rewardlab.load(folder)`` detects a Minari data folder by its
``metadata.json`` (a ``data_format`` Minari writes and a
``total_episodes``); ``rewardlab.load(path, format="minari")`` also takes
the dataset's folder above it (``<datasets>/<dataset_id>``), which holds no
file of its own to detect.

Examples
--------
>>> SOURCE.name, SOURCE.spec.contract, SOURCE.options()
('minari', 'steps', ('unfinished', 'max_episodes'))
>>> import rewardlab
>>> frame = rewardlab.load("data/minari/mountaincar-arrow-v0/data")
>>> rewardlab.core.spec.attached(frame).name, frame["episode_id"].n_unique()
('minari', 8)
>>> frame = rewardlab.load("data/minari/mountaincar-hdf5-v0", format="minari", max_episodes=3)
>>> frame["episode_id"].n_unique()
3
"""

from __future__ import annotations

import polars as pl

from rewardlab.sources.minari.metadata import dataset_folder, is_minari_metadata, read_metadata
from rewardlab.sources.minari.reader import FINAL_OBS, MINARI_SPEC, dataset_description, load_minari
from rewardlab.sources.registry import Source, register_source
from rewardlab.sources.steps.reader import RECORDED

__all__ = ["SOURCE", "sniff_minari", "minari_roles"]


def sniff_minari(path) -> bool:
    """True for a Minari data folder's ``metadata.json`` (or the ``main_data.hdf5`` beside one).

    Examples
    --------
    >>> sniff_minari("data/minari/mountaincar-arrow-v0/data/metadata.json"), sniff_minari("data/gym/README.md")
    (True, False)
    """
    return is_minari_metadata(path)


def minari_roles(paths, *, unfinished: str = "error", max_episodes: int | None = None) -> dict:
    """What ``rewardlab info`` shows for a Minari dataset: where it is, its spaces, and the columns they became.

    Examples
    --------
    >>> print(minari_roles(["data/minari/mountaincar-hdf5-v0"])["obs"])
    Box(2,) float32 -> obs, final_obs (the N+1-th observation, on each episode's last row)
    """
    first = paths[0] if isinstance(paths, (list, tuple)) else paths
    meta = read_metadata(dataset_folder(first))
    return {
        "dataset": dataset_description(meta),
        "folder": str(meta.folder),
        "episodes": f"{meta.total_episodes} ({meta.total_steps} steps)"
                    + (f"; option max_episodes={max_episodes}" if max_episodes is not None else ""),
        "obs": f"{meta.observations.text} -> obs, {FINAL_OBS} (the N+1-th observation, on each "
                        "episode's last row)",
        "action": f"{meta.actions.text} -> action ({meta.actions.action_dtype})",
        "reward": f"rewards -> {RECORDED} (Float64)",
        "flags": "terminations, truncations -> terminated, truncated (both set: terminated); "
                 f"unfinished={unfinished!r}",
        "infos": "not read",
    }


def _load_source(paths, *, unfinished: str = "error", max_episodes: int | None = None) -> pl.DataFrame:
    return load_minari(paths, unfinished=unfinished, max_episodes=max_episodes)


#: Minari datasets as a source (format ``"minari"``).
SOURCE = register_source(Source(
    name="minari",
    spec=MINARI_SPEC,
    load=_load_source,
    sniff=sniff_minari,
    roles=minari_roles,
    validates=True,  # load_minari checks the episodes (file, column, row) and then the whole frame
    description="Minari offline-RL datasets (a data folder holding metadata.json and the Arrow, Parquet or "
                "HDF5 episodes): one row per step, final observations in final_obs",
))
