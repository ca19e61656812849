"""Per-episode tables of a dataset folder, part by part: episode returns, trajectory returns, a step sample.

A dataset folder's parts hold whole episodes (:mod:`rewardlab.sources.datasets`),
so a per-episode table of the whole dataset is the per-part tables one after
the other, with their running indexes shifted: each part is read (projected
to the columns the table needs) in an engine's workers, and only the small
per-episode table comes back.  The tables equal the in-memory functions' on
the whole frame, value for value (each episode is summed within its part, as
in one frame).

Step-level values (``plot --kind hist``) are kept whole while there are at
most ``limit`` of them; past it, a uniform sample without replacement of
``limit`` of them: every value gets a random key (seeded by its part's index,
so the sample does not depend on the engine or the number of workers) and
the ``limit`` smallest keys are kept, which merges part by part.

Examples
--------
>>> from rewardlab.analysis.episode_parts import dataset_episode_returns
>>> table = dataset_episode_returns("rewards/")  # doctest: +SKIP
>>> compare_rewards(table).pairs()  # doctest: +SKIP
"""

from __future__ import annotations

from typing import Sequence

import numpy as np
import polars as pl

from rewardlab.analysis.compare import episode_return_table
from rewardlab.analysis.episode_summary import episode_summary
from rewardlab.analysis.return_tables import trajectory_returns
from rewardlab.analysis.tables import rewards_to_use
from rewardlab.core import columns
from rewardlab.core.errors import DataFormatError, ParameterError, check_int
from rewardlab.core.spec import attach, attached
from rewardlab.sources.datasets import PartedDataset, read_part_file
from rewardlab.sources.datasets.work import map_parts

__all__ = ["dataset_episode_returns", "dataset_trajectory_returns", "dataset_episode_summary",
           "dataset_step_values", "StepValues", "SAMPLE_LIMIT", "concat_part_tables", "needed_columns"]

#: Most step values :func:`dataset_step_values` keeps per reward (8 bytes each) before it samples.
SAMPLE_LIMIT = 10_000_000


def _open(dataset) -> PartedDataset:
    return dataset if isinstance(dataset, PartedDataset) else PartedDataset(dataset)


def needed_columns(ds: PartedDataset, names: Sequence[str], *, dones: bool) -> list[str]:
    """The part columns a per-episode table of ``names`` reads: keys, structure, the rewards (and dones)."""
    want = [*ds.spec.episode, *ds.spec.structure]
    for n in names:
        want.append(columns.reward_column(n))
        if dones:
            want.append(columns.done_column(n))
    return [c for c in dict.fromkeys(want) if c in ds.columns]


def _part_returns(item: tuple) -> pl.DataFrame:
    path, rows, index, needed, names = item
    return episode_return_table(read_part_file(path, rows, columns=needed), names)


def dataset_episode_returns(dataset, rewards=None, *, engine: str = "embedded", workers: int | None = None,
                            address: str | None = None, progress: bool | None = None) -> pl.DataFrame:
    """:func:`~rewardlab.analysis.compare.episode_return_table` of a dataset folder, one part at a time.

    Parameters
    ----------
    dataset : path or PartedDataset
        A dataset folder with ``reward_*`` columns (a rewards dataset).
    rewards : str or iterable of str, optional
        Plug-in names (default: every ``reward_*`` column).
    engine, workers, address
        Where the parts are read (:mod:`rewardlab.engines`).
    progress : bool, optional
        A bar over the parts (default: when interactive).

    Returns
    -------
    polars.DataFrame
        As :func:`~rewardlab.analysis.compare.episode_return_table` on the
        whole frame: ``episode`` (0, 1, ... across parts), the episode keys,
        one column per candidate; it carries the spec (projected).

    Examples
    --------
    >>> dataset_episode_returns("rewards/", ["top", "points"], workers=4)  # doctest: +SKIP
    """
    ds = _open(dataset)
    names = rewards_to_use(list(ds.columns), [rewards] if isinstance(rewards, str) else rewards)
    tables = list(map_parts(ds, _part_returns, (needed_columns(ds, names, dones=False), names), engine=engine,
                            workers=workers, address=address, progress=progress, desc="episode returns"))
    return concat_part_tables(tables, ds, "episode")


def _part_trajectories(item: tuple) -> pl.DataFrame:
    path, rows, index, needed, name = item
    return trajectory_returns(read_part_file(path, rows, columns=needed), name)


def dataset_trajectory_returns(dataset, reward: str, *, engine: str = "embedded", workers: int | None = None,
                               address: str | None = None, progress: bool | None = None) -> pl.DataFrame:
    """:func:`~rewardlab.analysis.return_tables.trajectory_returns` of a dataset folder, one part at a time.

    Trajectories end at the plug-in's done and at every episode end, so none
    crosses a part.  ``episode`` (or ``trajectory``) counts across parts and
    ``start`` is the row index in the whole dataset.

    Examples
    --------
    >>> dataset_trajectory_returns("rewards/", "top")["return"].mean()  # doctest: +SKIP
    """
    ds = _open(dataset)
    if not isinstance(reward, str):
        raise ParameterError("reward", "should be a reward name such as 'top'", reward)
    (name,) = rewards_to_use(list(ds.columns), [reward])
    tables = list(map_parts(ds, _part_trajectories, (needed_columns(ds, [name], dones=True), name), engine=engine,
                            workers=workers, address=address, progress=progress, desc="trajectory returns"))
    index = "trajectory" if tables and "trajectory" in tables[0].columns else "episode"
    return concat_part_tables(tables, ds, index, start="start")


def concat_part_tables(tables: list[pl.DataFrame], ds: PartedDataset, index: str, *,
                       start: str | None = None) -> pl.DataFrame:
    """The parts' tables one after the other, ``index`` counting on across parts and ``start`` (a row
    index) shifted by the rows of the parts before (from the manifest)."""
    if not tables:
        raise DataFormatError(ds.folder, None, None, "empty_dataset", "the dataset has no parts",
                              hint="Convert or apply again; a dataset with no rows has no episodes.")
    spec = attached(tables[0])
    out, counted, rows = [], 0, 0
    for table, entry in zip(tables, ds.manifest.parts):
        shift = [(pl.col(index) + counted).alias(index)] if index in table.columns else []
        if start is not None:
            shift.append((pl.col(start) + rows).alias(start))
        out.append(table.with_columns(shift))
        counted += table.height
        rows += entry.rows
    table = pl.concat(out, how="vertical", rechunk=True)  # one chunk: Polars sums it as the whole frame's
    return attach(table, spec) if spec is not None else table


def _part_summary(item: tuple) -> pl.DataFrame:
    path, rows, index, rewards = item
    return episode_summary(read_part_file(path, rows), rewards=rewards, lists=False)


def dataset_episode_summary(dataset, rewards=None, *, engine: str = "embedded", workers: int | None = None,
                            address: str | None = None, progress: bool | None = None) -> pl.DataFrame:
    """:func:`~rewardlab.analysis.episode_summary.episode_summary` of a dataset folder (``lists=False``),
    one part at a time: ``episode`` counts across parts and ``start`` is the row in the whole dataset.

    Examples
    --------
    >>> describe_episodes(dataset_episode_summary("corpus/"))  # doctest: +SKIP
    """
    ds = _open(dataset)
    if rewards is not None:
        rewards = rewards_to_use(list(ds.columns), [rewards] if isinstance(rewards, str) else rewards)
    tables = list(map_parts(ds, _part_summary, (rewards,), engine=engine, workers=workers, address=address,
                            progress=progress, desc="episode summary"))
    return concat_part_tables(tables, ds, "episode", start="start")


class StepValues:
    """Step rewards of one reward gathered part by part: all of them up to ``limit``, else a uniform sample.

    Every value gets a random key (seeded by its part's index) and the
    ``limit`` smallest keys are kept: a uniform sample without replacement
    that merges part by part, the same for the same parts in any grouping.

    Attributes
    ----------
    values : numpy.ndarray
        The kept values, in data order.
    total : int
        How many values were offered.

    Examples
    --------
    >>> s = StepValues(limit=3).add(np.arange(5.0), part=0)
    >>> s.total, s.sampled, len(s.values)
    (5, True, 3)
    """

    def __init__(self, *, limit: int = SAMPLE_LIMIT):
        self.limit = check_int("limit", limit, low=1)
        self.total = 0
        self.values = np.zeros(0)
        self.keys = np.zeros(0)

    @property
    def sampled(self) -> bool:
        """True when the values are a sample (more than ``limit`` were offered)."""
        return self.total > self.limit

    def add(self, values, *, part: int) -> "StepValues":
        """Add one part's values (after the values added so far)."""
        values = np.asarray(values, dtype=np.float64)
        return self._merge(values, np.random.default_rng([int(part), 0x5A4D]).random(values.size), values.size)

    def merge(self, other: "StepValues") -> "StepValues":
        """Add ``other``'s values after this one's (in data order); returns this."""
        if other.limit != self.limit:
            raise ParameterError("other", f"should keep the same number of values ({self.limit})", other.limit)
        return self._merge(other.values, other.keys, other.total)

    def _merge(self, values: np.ndarray, keys: np.ndarray, total: int) -> "StepValues":
        self.total += total
        self.values = np.concatenate([self.values, values])
        self.keys = np.concatenate([self.keys, keys])
        if self.values.size > self.limit:
            keep = np.sort(np.argpartition(self.keys, self.limit - 1)[:self.limit])  # data order
            self.values, self.keys = self.values[keep], self.keys[keep]
        return self


def _part_values(item: tuple) -> dict:
    path, rows, index, needed, names, nonzero, limit = item
    part = read_part_file(path, rows, columns=needed)
    out = {}
    for n in names:
        x = part[columns.reward_column(n)].cast(pl.Float64).to_numpy()
        if nonzero:
            x = x[x != 0]
        out[n] = StepValues(limit=limit).add(x, part=index)
    return out


def dataset_step_values(dataset, rewards=None, *, nonzero: bool = True, limit: int = SAMPLE_LIMIT,
                        engine: str = "embedded", workers: int | None = None, address: str | None = None,
                        progress: bool | None = None) -> dict[str, StepValues]:
    """Step rewards of a dataset folder, part by part: all of them up to ``limit`` per reward, else a sample.

    Parameters
    ----------
    dataset : path or PartedDataset
        A dataset folder with ``reward_*`` columns.
    rewards : str or iterable of str, optional
        Plug-in names (default: every ``reward_*`` column).
    nonzero : bool
        Only the nonzero values (what ``plot --kind hist`` draws).
    limit : int
        Most values kept per reward; past it a uniform sample without
        replacement of ``limit`` (seeded by part: the same sample for the
        same dataset, whatever the engine).

    Returns
    -------
    dict
        ``{name: StepValues}``.

    Examples
    --------
    >>> v = dataset_step_values("rewards/", "top")["top"]  # doctest: +SKIP
    >>> v.total, v.sampled  # doctest: +SKIP
    """
    ds = _open(dataset)
    names = rewards_to_use(list(ds.columns), [rewards] if isinstance(rewards, str) else rewards)
    limit = check_int("limit", limit, low=1)
    needed = [columns.reward_column(n) for n in names]
    parts = map_parts(ds, _part_values, (needed, names, bool(nonzero), limit), engine=engine, workers=workers,
                      address=address, progress=progress, desc="step rewards")
    out = {n: StepValues(limit=limit) for n in names}
    for part in parts:
        for n in names:
            out[n].merge(part[n])
    return out


def step_values_frame(values: dict[str, StepValues]) -> pl.DataFrame:
    """The kept values as one frame, a column per reward (shorter columns padded with nulls)."""
    longest = max((len(v.values) for v in values.values()), default=0)
    return pl.DataFrame({n: pl.Series(n, np.concatenate([v.values, np.full(longest - len(v.values), np.nan)]))
                         .fill_nan(None) for n, v in values.items()})
