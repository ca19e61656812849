"""The running normalizers' replays over a dataset folder, part by part, in bounded memory.

Gymnasium's ``NormalizeReward`` and SB3's ``VecNormalize`` are sequential
recursions over every step (:mod:`rewardlab.analysis.normalizers`), so a
folder's replay reads its parts **in order** and carries each normalizer's
state from part to part: the running return ``G`` and ``RunningMeanStd``'s
``mean``, ``var`` and ``count`` (a float64 array ``[4]``, updated in place by
the compiled loops below, which perform the same float64 operations in the
same order as :mod:`rewardlab.analysis.replay_kernels`).  The normalized
rewards therefore equal the whole-frame replay's bit for bit
(``tests/test_normalization_folder.py`` cuts one frame into many parts).
The parts are read and their flags computed in an engine's workers
(:func:`~rewardlab.sources.datasets.work.map_parts`, results in part order);
the loop itself runs on the driver, about 9 ms per million steps.

What is kept (:class:`FolderReplays`), whatever the number of rows:

* **the rows drawn**: every row while the folder has at most ``limit``
  (:data:`~rewardlab.analysis.episode_parts.SAMPLE_LIMIT` = 10^7) rows, the
  :func:`~rewardlab.analysis.normalizers.normalized_rewards` frame itself;
  past it, a seeded uniform sample of ``limit`` rows (every method at the same
  rows, in data order; each row's key is drawn from its part's index, so the
  sample depends on the folder only, :func:`sample_positions`);
* **the summary**: while every row is kept,
  :func:`~rewardlab.analysis.normalizers.normalization_summary` of them (the
  whole-frame table, bit for bit); past it, the same figures from moments
  merged part by part over **every** step (Chan's merge: equal to rounding),
  and the exact fraction SB3 clips.

Examples
--------
>>> out = dataset_normalized_rewards("rewards/", "top")  # doctest: +SKIP
>>> out.summary, out.sampled  # doctest: +SKIP
"""

from __future__ import annotations

import dataclasses
import math

import numpy as np
import polars as pl

from rewardlab.analysis import replay_kernels
from rewardlab.analysis.episode_parts import SAMPLE_LIMIT
from rewardlab.analysis.normalizers import (
    RMS_PRIOR_COUNT, normalization_summary, replay_inputs,
)
from rewardlab.analysis.moments import Moments
from rewardlab.analysis.stats import NormalizationConstants
from rewardlab.analysis.stats_parts import NormalizationParts, RewardStatsParts
from rewardlab.analysis.scopes import RETURN_SCOPES, check_scope
from rewardlab.analysis.tables import resolve_reward
from rewardlab.core import columns
from rewardlab.core.errors import ParameterError, RewardlabError, check_in_range, check_int, check_positive
from rewardlab.core.spec import FrameSpec
from rewardlab.sources.datasets import PartedDataset, read_part_file
from rewardlab.sources.datasets.work import map_parts

__all__ = [
    "initial_state",
    "sample_positions",
    "FolderReplays",
    "dataset_normalized_rewards",
    "dataset_scope_statistics",
]

#: Seed of the row sample's keys (with the part's index).
SAMPLE_SEED = 0x4E524D


def initial_state() -> np.ndarray:
    """A fresh normalizer's state ``[G, mean, var, count]``: ``[0, 0, 1, 1e-4]`` (the wrappers' prior count).

    Examples
    --------
    >>> initial_state().tolist()
    [0.0, 0.0, 1.0, 0.0001]
    """
    return replay_kernels.initial_state(RMS_PRIOR_COUNT)


def _part_keys(index: int, rows: int) -> np.ndarray:
    return np.random.default_rng([int(index), SAMPLE_SEED]).random(rows)


def sample_positions(part_rows, limit: int = SAMPLE_LIMIT) -> list[np.ndarray] | None:
    """The rows of a uniform sample of ``limit`` rows, per part (ascending local positions), or None for all.

    Each row gets a key drawn from its part's index (so the sample depends
    on the parts' sizes only) and the ``limit`` smallest keys are kept.  Only
    keys below a threshold a little above ``limit / rows`` are gathered (a
    larger one is tried in the unlikely case too few fall below it), so
    memory stays about ``limit`` keys.

    Parameters
    ----------
    part_rows : sequence of int
        The rows of every part, in order.
    limit : int
        Rows kept.

    Examples
    --------
    >>> [p.size for p in sample_positions([5, 5], limit=4)]  # doctest: +SKIP
    [2, 2]
    >>> sample_positions([2, 3], limit=5) is None
    True
    """
    limit = check_int("limit", limit, low=1)
    part_rows = [int(n) for n in part_rows]
    total = sum(part_rows)
    if total <= limit:
        return None
    threshold = min(1.0, (limit + 8.0 * math.sqrt(limit) + 64.0) / total)
    while True:
        keys, where = [], []
        for index, rows in enumerate(part_rows):
            k = _part_keys(index, rows)
            local = np.flatnonzero(k < threshold)
            keys.append(k[local])
            where.append(local.astype(np.int64) + (np.int64(index) << np.int64(40)))
        keys, where = np.concatenate(keys), np.concatenate(where)
        if keys.size >= limit or threshold >= 1.0:
            break
        threshold = min(1.0, threshold * 2.0)
    chosen = np.sort(where[np.argpartition(keys, limit - 1)[:limit]])
    parts = chosen >> np.int64(40)
    local = chosen & np.int64((1 << 40) - 1)
    bounds = np.searchsorted(parts, np.arange(len(part_rows) + 1))
    return [local[bounds[i]:bounds[i + 1]] for i in range(len(part_rows))]


@dataclasses.dataclass(frozen=True, eq=False)
class FolderReplays:
    """The running normalizers over a dataset folder (see the module docstring).

    Attributes
    ----------
    replays : polars.DataFrame
        :func:`~rewardlab.analysis.normalizers.normalized_rewards`' columns at
        the rows kept: all of them (then the whole frame's table) or a sample.
    rows : numpy.ndarray of int64
        The kept rows' numbers in the whole folder, ascending.
    total : int
        Rows of the folder.
    summary : polars.DataFrame
        :func:`~rewardlab.analysis.normalizers.normalization_summary` over every step.
    fraction_clipped : float
        Fraction of every step SB3's clipping saturates.

    Examples
    --------
    >>> out = dataset_normalized_rewards("rewards/", "top")  # doctest: +SKIP
    >>> out.replays.height <= SAMPLE_LIMIT  # doctest: +SKIP
    True
    """

    replays: pl.DataFrame
    rows: np.ndarray
    total: int
    summary: pl.DataFrame
    fraction_clipped: float

    @property
    def sampled(self) -> bool:
        """True when :attr:`replays` is a sample (the folder has more rows than were kept)."""
        return self.replays.height < self.total


def _check_constants(constants) -> None:
    if constants is not None and (not isinstance(constants, NormalizationConstants)
                                  or constants.scope in RETURN_SCOPES):
        raise ParameterError("constants", "should be NormalizationConstants of a per-step scope (not "
                             "'episode_return' or 'trajectory_return')", getattr(constants, "scope", constants))


def _replay_part(item: tuple) -> tuple:
    """One part's replay inputs (a work item): raw, boundary, terminated (and in_scope) as arrays."""
    path, rows, index, needed, name, constants, spec = item
    df = replay_inputs(read_part_file(path, rows, columns=needed), name, constants=constants, spec=spec)
    return tuple(df[c].to_numpy() for c in df.columns)


def _summary_of_moments(total: int, moments: dict, clipped: int) -> pl.DataFrame:
    """:func:`normalization_summary`'s table from merged moments (every step, and the nonzero ones)."""
    rows = []
    for method, (every, nonzero) in moments.items():
        rows.append({"method": method, "count": total,
                     "mean": every.mean if every.count else None, "std": every.std if every.count else None,
                     "min": every.min if every.count else None, "max": every.max if every.count else None,
                     "nonzero_mean": nonzero.mean if nonzero.count else None,
                     "nonzero_std": nonzero.std if nonzero.count else None,
                     "fraction_clipped": clipped / total if method == "sb3" and total else 0.0})
    schema = {"method": pl.String, "count": pl.Int64} | {
        k: pl.Float64 for k in ("mean", "std", "min", "max", "nonzero_mean", "nonzero_std", "fraction_clipped")}
    return pl.DataFrame(rows, schema=schema)


def dataset_normalized_rewards(dataset, reward: str, *, constants: NormalizationConstants | None = None,
                               gamma: float = 0.99, epsilon: float = 1e-8, clip_reward: float = 10.0,
                               spec: FrameSpec | None = None, limit: int = SAMPLE_LIMIT, engine: str = "embedded",
                               workers: int | None = None, address: str | None = None,
                               progress: bool | None = None) -> FolderReplays:
    """:func:`~rewardlab.analysis.normalizers.normalized_rewards` over a dataset folder, one pass, in part order.

    Parameters
    ----------
    dataset : path or PartedDataset
        A dataset folder with ``reward_<name>`` / ``done_<name>`` (a rewards folder).
    reward : str
        The plug-in name.
    constants : NormalizationConstants, optional
        Of a per-step scope: also the ``constants`` column.
    gamma, epsilon, clip_reward
        The running normalizers' parameters.
    spec : FrameSpec, optional
        Default: the folder's.
    limit : int
        Most rows kept for the figures (then a seeded uniform sample).
    engine, workers, address, progress
        Where the parts are read (the replay itself runs here, in part order).

    Returns
    -------
    FolderReplays

    Examples
    --------
    >>> dataset_normalized_rewards("rewards/", "top", gamma=0.9).summary  # doctest: +SKIP
    """
    ds = dataset if isinstance(dataset, PartedDataset) else PartedDataset(dataset)
    gamma = float(check_in_range("gamma", gamma, 0.0, 1.0))
    epsilon = float(check_positive("epsilon", epsilon))
    clip_reward = float(check_positive("clip_reward", clip_reward))
    _check_constants(constants)
    spec = ds.spec if spec is None else spec
    name = resolve_reward(list(ds.columns), reward)
    needed = [c for c in dict.fromkeys([*spec.episode, *spec.structure, columns.reward_column(name),
                                        columns.done_column(name)]) if c in ds.columns]
    positions = sample_positions([e.rows for e in ds.manifest.parts], limit)
    methods = ["raw", *(["constants"] if constants is not None else []), "gymnasium", "sb3"]
    moments = {m: (Moments(), Moments()) for m in methods}
    kept = {m: [] for m in [*methods, "sb3_clipped"]}
    rows_kept, clipped, start = [], 0, 0
    gym_state, sb3_state = initial_state(), initial_state()
    for index, arrays in enumerate(map_parts(ds, _replay_part, (needed, name, constants, spec), engine=engine,
                                             workers=workers, address=address, progress=progress,
                                             desc="normalizer replays")):
        raw, boundary, terminated = (np.ascontiguousarray(a) for a in arrays[:3])
        n = raw.shape[0]
        gym, scratch_returns, scratch_var = np.empty(n), np.empty(n), np.empty(n)
        sb3, sb3_clipped = np.empty(n, dtype=np.float32), np.empty(n, dtype=bool)
        replay_kernels.gymnasium_replay(raw, terminated, gamma, epsilon, gym_state, gym, scratch_returns,
                                        scratch_var)
        replay_kernels.sb3_replay(raw, boundary, gamma, epsilon, clip_reward, sb3_state, sb3, scratch_returns,
                                  scratch_var, sb3_clipped)
        cols = {"raw": raw}
        if constants is not None:
            cols["constants"] = np.where(arrays[3], constants.apply(raw), raw)
        cols |= {"gymnasium": gym, "sb3": sb3.astype(np.float64), "sb3_clipped": sb3_clipped}
        nonzero = raw != 0
        for m in methods:
            every, nz = moments[m]
            moments[m] = (every.merge(Moments.of(cols[m])), nz.merge(Moments.of(cols[m][nonzero])))
        clipped += int(np.count_nonzero(sb3_clipped))
        local = np.arange(n) if positions is None else positions[index]
        for c, values in cols.items():
            kept[c].append(values if positions is None else values[local])
        rows_kept.append(local + start)
        start += n
    replays = pl.DataFrame({c: np.concatenate(v) if v else np.zeros(0, dtype=bool if c == "sb3_clipped" else float)
                            for c, v in kept.items()})
    rows = np.concatenate(rows_kept) if rows_kept else np.zeros(0, dtype=np.int64)
    if positions is None:  # every row: the whole frame's table, bit for bit
        summary = normalization_summary(replays)
    else:
        summary = _summary_of_moments(start, moments, clipped)
    return FolderReplays(replays=replays, rows=rows, total=start, summary=summary,
                         fraction_clipped=clipped / start if start else 0.0)


def _scope_part(item: tuple) -> tuple:
    """One part's constants and statistics accumulators (a work item), before or after ``constants``."""
    path, rows, index, needed, name, scope, constants, spec = item
    part = read_part_file(path, rows, columns=needed)
    stats = RewardStatsParts(name, scope=scope, constants=constants, spec=spec).add(part, part=index)
    norm = NormalizationParts(name, scope=scope, spec=spec).add(part, part=index) if constants is None else None
    return norm, stats


def dataset_scope_statistics(dataset, reward: str, scope: str, *, spec: FrameSpec | None = None,
                             engine: str = "embedded", workers: int | None = None, address: str | None = None,
                             progress: bool | None = None) -> tuple:
    """A reward's normalization constants over ``scope`` of a dataset folder, and its statistics before / after.

    What the normalization session shows for a scope: one pass (in the
    engine's workers) for the constants and the statistics before them, a
    second for the statistics after them (:mod:`rewardlab.analysis.stats_parts`:
    identical to the whole frame's up to 10^7 values in scope).

    Returns
    -------
    (NormalizationConstants or None, str or None, RewardStats, RewardStats or None)
        The constants (None, and the reason, when the scope cannot be normalized), before, after.

    Examples
    --------
    >>> constants, error, before, after = dataset_scope_statistics("rewards/", "top", "nonzero")  # doctest: +SKIP
    """
    ds = dataset if isinstance(dataset, PartedDataset) else PartedDataset(dataset)
    scope = check_scope(scope)
    spec = ds.spec if spec is None else spec
    name = resolve_reward(list(ds.columns), reward)
    needed = [c for c in dict.fromkeys([*spec.episode, *spec.structure, columns.reward_column(name),
                                        columns.done_column(name)]) if c in ds.columns]
    norm, before = NormalizationParts(name, scope=scope, spec=spec), RewardStatsParts(name, scope=scope, spec=spec)
    for part_norm, part_stats in map_parts(ds, _scope_part, (needed, name, scope, None, spec), engine=engine,
                                           workers=workers, address=address, progress=progress, desc="constants"):
        norm.merge(part_norm)
        before.merge(part_stats)
    try:
        constants, error = norm.result(), None
    except RewardlabError as exc:  # no values, a constant reward, or statistics that overflow
        constants, error = None, str(exc)
    after = None
    if constants:
        after = RewardStatsParts(name, scope=scope, constants=constants, spec=spec)
        for _, part_stats in map_parts(ds, _scope_part, (needed, name, scope, constants, spec), engine=engine,
                                       workers=workers, address=address, progress=progress, desc="after"):
            after.merge(part_stats)
        after = after.result()
    return constants, error, before.result(), after
