"""Minari offline-RL datasets as a source (format ``"minari"``): Arrow, Parquet and HDF5 storages.

`Minari <https://minari.farama.org>`_ (Farama) is the standard format of
offline-RL datasets.  ``rewardlab.load(path)`` reads a *local* Minari 0.5
dataset: its data folder (the one holding ``metadata.json``, e.g.
``~/.minari/datasets/<dataset_id>/data``; detected by that file), or the
dataset's folder above it with ``format="minari"``.  rewardlab reads the
storage files itself (pyarrow for the ``arrow`` and ``parquet`` storages,
h5py for ``hdf5``, the optional ``minari`` extra), so Minari need not be
installed, and nothing is ever downloaded.

The frame has one row per step (:data:`~rewardlab.sources.minari.reader.COLUMNS`):
``episode_id`` (Minari's episode id), ``t``, ``obs`` (the observation the
action was taken in, flattened to a fixed-size list of floats: Box,
Discrete as width 1, MultiDiscrete, MultiBinary), ``action`` (Int64 for
Discrete, else a fixed-size list), ``reward_recorded`` (Float64) with
``done_recorded`` (True on each episode's last step), ``terminated`` and
``truncated`` (a step flagged both ways is terminated only, as
:func:`rewardlab.record` records it), and ``final_obs``: Minari keeps
``N + 1`` observations for ``N`` steps, and the last one, the observation
after the episode's last step, sits in ``final_obs`` on that step's row
(null on every other row), so the steps contract hands it as
``("next", "obs")`` there and a truncated episode can be bootstrapped.
The spec (:func:`~rewardlab.sources.minari.reader.minari_spec`, contract
``"steps"``) is attached and checked.  Episodes' ``infos`` are not read
(nor their seeds and options); Dict, Tuple and Text spaces, and images
Minari stored JPEG-encoded, are refused with the file and what to do.

Modules: :mod:`~.spaces` (serialized spaces -> column layouts),
:mod:`~.metadata` (where the dataset is, ``metadata.json``), :mod:`~.arrow`
and :mod:`~.hdf5` (the storages), :mod:`~.episodes` (the episodes' rules),
:mod:`~.reader` (:func:`load_minari`: the frame and its spec),
:mod:`~.source` (the registration).

Examples
--------
>>> import polars as pl, rewardlab
>>> frame = rewardlab.load("data/minari/mountaincar-arrow-v0/data")
>>> frame.height, frame["episode_id"].n_unique()
(1022, 8)
>>> ends = frame.filter(pl.col("done_recorded"))
>>> ends["final_obs"].null_count(), int(ends["terminated"].sum()), int(ends["truncated"].sum())
(0, 4, 4)
>>> from rewardlab.contracts.steps.arrays import StepsArrays
>>> td = StepsArrays(frame, rewardlab.core.spec.attached(frame)).tensordict()
>>> td["next", "obs"][-1].tolist() == ends["final_obs"][-1].to_list()
True
"""

from rewardlab.sources.minari.metadata import dataset_folder, read_metadata
from rewardlab.sources.minari.reader import COLUMNS, FINAL_OBS, MINARI_SPEC, load_minari, minari_spec
from rewardlab.sources.minari.source import SOURCE, minari_roles, sniff_minari

__all__ = ["load_minari", "minari_spec", "MINARI_SPEC", "COLUMNS", "FINAL_OBS", "SOURCE", "sniff_minari",
           "minari_roles", "dataset_folder", "read_metadata"]
