"""Reward statistics part by part, for datasets larger than memory: accumulators that merge.

:class:`RewardStatsParts` and :class:`NormalizationParts` take a dataset one
part (whole episodes, so every scope is computed within a part) at a time:
``add(part)`` in a worker, ``merge(other)`` on the driver **in part order**,
``result()`` at the end; :func:`reward_stats_of_parts` and
:func:`normalization_constants_of_parts` do the three in one loop.  Their state
pickles small (moments, counts, a KLL sketch as bytes) once past the exact limit.

* **Quantiles: exact up to 10^7 values, then a KLL sketch.**  The values in
  scope are kept while there are at most ``exact_limit`` of them
  (:data:`~rewardlab.analysis.sketches.EXACT_LIMIT` = 10^7, 80 MB): the
  quantiles are then NumPy's over them all, *identical* to
  :func:`reward_stats` over the same data in one frame.  Past the limit they
  go into a KLL sketch (:mod:`rewardlab.analysis.sketches`, k = 1000): every
  quantile's true rank is within ±0.278 % (99 % confidence), and sketch
  quantiles may differ by a few retained items from run to run (KLL compacts
  at random).  :attr:`RewardStats.quantile_method` (``"exact"`` / ``"kll"``)
  and :attr:`RewardStats.quantile_rank_error` (0.0 / the bound) say which,
  in ``to_dict()`` and wherever the quantiles are printed.  (An exact
  two-pass method, a sketch then the values between its bounds, was not
  chosen: it needs a second read of the dataset.)  On a dataset folder, a
  scope whose values certainly outnumber the limit (the steps of ``all``
  past 10^7 rows, one value per episode past 10^7 episodes:
  :func:`sketched_scopes`, from the manifest) is sketched part by part in
  the workers, and the driver merges the sketches (24 KB each) instead of
  feeding every value to one sketch itself, one core's work: the same
  bound, and the same moments.
* **Moments.**  While the values are kept, count, mean, std, min and max are
  taken from them all (``Moments.of``), bit for bit those of
  :func:`reward_stats`.  Past the limit they are the Chan merge of each
  part's ``Moments.of``: the same to rounding (relative 1e-15 or so), not bit
  for bit -- Chan's update rounds differently from one two-pass sum -- and
  the same bits for the same parts merged in the same order.
* **Fingerprint.**  While the values are kept, the fingerprint is the
  in-memory one (``"blake2b-128:..."`` of all values in order).  BLAKE2 is a
  sequential hash, so past the limit each part's values are hashed on their
  own and the fingerprint is ``"blake2b-128-parts:..."``, the hash of the
  parts' (count, digest) list, in order: the same for the same dataset
  (same parts), whatever the engine, but not equal to the in-memory one.

Examples
--------
>>> import polars as pl
>>> from rewardlab.analysis.stats_parts import reward_stats_of_parts
>>> parts = [pl.DataFrame({"reward_a": [0.0, 1.0]}), pl.DataFrame({"reward_a": [3.0]})]
>>> s = reward_stats_of_parts(parts, "a", quantiles=(0.5,))
>>> s.count, s.quantiles, s.quantile_method
(3, {0.5: 1.0}, 'exact')
"""

from __future__ import annotations

import hashlib
import math
from pathlib import Path
from typing import Iterable, Sequence

import numpy as np
import polars as pl

from rewardlab.analysis.scopes import SCOPE_ALIASES, VALUE, check_scope, scope_lazy, scope_values
from rewardlab.analysis.sketches import DEFAULT_K, EXACT_LIMIT, QuantileAccumulator, check_quantiles
from rewardlab.analysis.moments import Moments
from rewardlab.analysis.stats import (
    DEFAULT_QUANTILES, NormalizationConstants, RewardStats, check_normalizable, values_of_lazy,
)
from rewardlab.analysis.tables import column_names, lazy_table, resolve_reward, rewards_to_use
from rewardlab.core.errors import FrameError, ParameterError, check_int
from rewardlab.core.spec import FrameSpec, attached
from rewardlab.sources.datasets import PartedDataset, read_part_file
from rewardlab.sources.datasets.work import map_parts

__all__ = [
    "RewardStatsParts",
    "NormalizationParts",
    "reward_stats_of_parts",
    "normalization_constants_of_parts",
    "dataset_reward_stats",
    "sketched_scopes",
    "part_stats",
]


# --------------------------------------------------------------------------
# Part by part: accumulators that merge (see the module docstring)
# --------------------------------------------------------------------------


def _where(name: str, part) -> str:
    return f"reward {name!r}" + ("" if part is None else f" in part {part}")


def _merge_name(a: str | None, b: str | None) -> str | None:
    if a is not None and b is not None and a != b:
        raise ParameterError("other", f"should accumulate the same reward ({a!r})", b)
    return a if a is not None else b


class RewardStatsParts:
    """:func:`reward_stats` of one reward in one scope, accumulated part by part and merged.

    Each part is whole episodes (a polars DataFrame with its spec attached, a
    LazyFrame, or a Parquet part's path); parts are added, or accumulators
    merged, in data order.  Small and picklable (moments, a zero count, and
    the kept values or a KLL sketch's bytes; see the module docstring for
    what is exact).

    Parameters
    ----------
    reward : str
        The plug-in name (``"top"``) or its column (``"reward_top"``).
    scope, quantiles, constants, spec
        As :func:`reward_stats`.
    exact_limit : int
        Most values kept for exact quantiles (default 10^7; 0: always the sketch).
    k : int
        The KLL sketch's accuracy past the limit (default 1000).

    Examples
    --------
    >>> import polars as pl
    >>> a = RewardStatsParts("a", quantiles=(0.5,)).add(pl.DataFrame({"reward_a": [1.0, 2.0]}))
    >>> b = RewardStatsParts("a", quantiles=(0.5,)).add(pl.DataFrame({"reward_a": [3.0]}))
    >>> s = a.merge(b).result()
    >>> s.count, s.mean, s.quantiles, s.quantile_method
    (3, 2.0, {0.5: 2.0}, 'exact')
    """

    def __init__(self, reward: str, *, scope: str = "all", quantiles: Sequence[float] = DEFAULT_QUANTILES,
                 constants: "NormalizationConstants | None" = None, spec: FrameSpec | None = None,
                 exact_limit: int = EXACT_LIMIT, k: int = DEFAULT_K):
        if not isinstance(reward, str):
            raise ParameterError("reward", "should be a reward name such as 'top'", reward)
        if constants is not None and not isinstance(constants, NormalizationConstants):
            raise ParameterError("constants", "should be NormalizationConstants (see normalization_constants)",
                                 type(constants).__name__)
        self.reward, self.scope, self.quantiles = reward, check_scope(scope), check_quantiles(quantiles)
        self.constants, self.spec = constants, spec
        self.name: str | None = None
        self.moments, self.zeros = Moments(), 0
        self.values = QuantileAccumulator(exact_limit=exact_limit, k=k) if self.quantiles else None

    def add(self, data, *, part=None) -> "RewardStatsParts":
        """Add one part of whole episodes; ``part`` (a path or number) names it in error messages.

        Examples
        --------
        >>> import polars as pl
        >>> RewardStatsParts("a").add(pl.DataFrame({"reward_a": [0.0, 4.0]}), part=0).result().zero_fraction
        0.5
        """
        lf, _ = lazy_table(data)
        name = resolve_reward(column_names(lf), self.reward)
        self.name = _merge_name(self.name, name)
        sl = scope_lazy(lf, name, self.scope, self.spec)
        if self.constants is not None:
            sl = sl.select(((pl.col(VALUE) - self.constants.mean) / self.constants.std).alias(VALUE))
        x = values_of_lazy(sl, what=_where(name, part))
        self.moments = self.moments.merge(Moments.of(x))
        self.zeros += int(np.count_nonzero(x == 0))
        if self.values is not None:
            self.values.add(x)
        return self

    def merge(self, other: "RewardStatsParts") -> "RewardStatsParts":
        """Add ``other``'s parts after this one's (``other`` is unchanged); returns this accumulator.

        Examples
        --------
        >>> RewardStatsParts("a").merge(RewardStatsParts("a")).result().count
        0
        """
        if not isinstance(other, RewardStatsParts):
            raise ParameterError("other", "should be a RewardStatsParts", type(other).__name__)
        for field in ("scope", "quantiles", "constants"):
            if getattr(other, field) != getattr(self, field):
                raise ParameterError("other", f"should have the same {field} ({getattr(self, field)!r})",
                                     getattr(other, field))
        self.name = _merge_name(self.name, other.name)
        self.moments = self.moments.merge(other.moments)
        self.zeros += other.zeros
        if self.values is not None:
            self.values.merge(other.values)
        return self

    def result(self) -> RewardStats:
        """The :class:`RewardStats` of every value added, with how its quantiles were computed.

        Examples
        --------
        >>> RewardStatsParts("reward_a", quantiles=(0.5,)).result().quantiles
        {0.5: nan}
        """
        m, qvals, method, error = self.moments, {}, "exact", 0.0
        if self.values is not None:
            kept = self.values.values()
            if kept is not None:  # exact: the in-memory numbers, bit for bit
                m = Moments.of(kept)
            qvals, method, error = self.values.quantiles(self.quantiles), self.values.method, self.values.rank_error
        name = self.name if self.name is not None else self.reward.removeprefix("reward_")
        return RewardStats(
            reward=name, scope=self.scope, count=m.count, mean=m.mean if m.count else math.nan,
            std=m.std, sample_std=m.sample_std,
            min=m.min if m.count else math.nan, max=m.max if m.count else math.nan,
            zero_fraction=self.zeros / m.count if m.count else math.nan, quantiles=qvals,
            normalized_by=None if self.constants is None else self.constants.to_dict(),
            quantile_method=method, quantile_rank_error=error,
        )


class NormalizationParts:
    """:func:`normalization_constants` accumulated part by part and merged (see the module docstring).

    Parameters
    ----------
    reward : str
        The plug-in name (``"top"``) or its column (``"reward_top"``).
    scope, spec
        As :func:`normalization_constants`.
    source : str, optional
        The dataset's description, recorded in the constants.
    exact_limit : int
        Most values kept for the in-memory fingerprint and moments (default
        10^7); past it, the per-part fingerprint and merged moments.

    Examples
    --------
    >>> import polars as pl
    >>> from rewardlab.analysis.stats import normalization_constants
    >>> acc = NormalizationParts("a").add(pl.DataFrame({"reward_a": [1.0]}))
    >>> c = acc.merge(NormalizationParts("a").add(pl.DataFrame({"reward_a": [3.0]}))).result()
    >>> c.mean, c.std, c.rows, c == normalization_constants(pl.DataFrame({"reward_a": [1.0, 3.0]}), "a")
    (2.0, 1.0, 2, True)
    """

    def __init__(self, reward: str, *, scope: str = "all", spec: FrameSpec | None = None,
                 source: str | None = None, exact_limit: int = EXACT_LIMIT):
        if not isinstance(reward, str):
            raise ParameterError("reward", "should be a reward name such as 'top'", reward)
        if source is not None and not isinstance(source, str):
            raise ParameterError("source", "should be a string or None", type(source).__name__)
        self.reward, self.scope, self.spec, self.source = reward, check_scope(scope), spec, source
        self.exact_limit = check_int("exact_limit", exact_limit, low=0, rule="should be an integer >= 0")
        self.name: str | None = None
        self.moments, self.rows = Moments(), 0
        self.kept: list[np.ndarray] | None = []
        self.digests: list[tuple[int, bytes]] = []

    def add(self, data, *, part=None) -> "NormalizationParts":
        """Add one part of whole episodes; ``part`` (a path or number) names it in error messages.

        Examples
        --------
        >>> import polars as pl
        >>> NormalizationParts("a").add(pl.DataFrame({"reward_a": [0.0, 2.0]})).result().mean
        1.0
        """
        lf, _ = lazy_table(data)
        name = resolve_reward(column_names(lf), self.reward)
        self.name = _merge_name(self.name, name)
        x = scope_values(lf, name, scope=self.scope, spec=self.spec)
        bad = int(np.count_nonzero(~np.isfinite(x)))
        if bad:
            raise FrameError(f"{_where(name, part)} has {bad} non-finite values in scope {self.scope!r}",
                             hint="Rewards must be finite numbers; check the plug-in")
        self.rows += int(data.height) if isinstance(data, pl.DataFrame) else \
            int(lf.select(pl.len()).collect(engine="streaming").item())
        self.moments = self.moments.merge(Moments.of(x))
        x = np.ascontiguousarray(x, dtype="<f8")
        self.digests.append((int(x.size), hashlib.blake2b(memoryview(x).cast("B"), digest_size=16).digest()))
        if self.kept is not None:
            self.kept.append(x)
            if self.moments.count > self.exact_limit:
                self.kept = None
        return self

    def merge(self, other: "NormalizationParts") -> "NormalizationParts":
        """Add ``other``'s parts after this one's (``other`` is unchanged); returns this accumulator.

        Examples
        --------
        >>> NormalizationParts("a").merge(NormalizationParts("a")).rows
        0
        """
        if not isinstance(other, NormalizationParts):
            raise ParameterError("other", "should be a NormalizationParts", type(other).__name__)
        if other.scope != self.scope:
            raise ParameterError("other", f"should have the same scope ({self.scope!r})", other.scope)
        self.name = _merge_name(self.name, other.name)
        self.moments = self.moments.merge(other.moments)
        self.rows += other.rows
        self.digests += other.digests
        if self.kept is not None and other.kept is not None and self.moments.count <= self.exact_limit:
            self.kept = self.kept + other.kept
        else:
            self.kept = None
        return self

    def fingerprint(self) -> str:
        """The in-memory fingerprint while the values are kept, else ``"blake2b-128-parts:<hex>"``.

        Examples
        --------
        >>> import polars as pl
        >>> NormalizationParts("a", exact_limit=0).add(pl.DataFrame({"reward_a": [1.0]})).fingerprint()[:18]
        'blake2b-128-parts:'
        """
        if self.kept is not None:
            h = hashlib.blake2b(digest_size=16)
            for x in self.kept:
                h.update(memoryview(x).cast("B"))
            return "blake2b-128:" + h.hexdigest()
        h = hashlib.blake2b(digest_size=16)
        for count, digest in self.digests:
            h.update(count.to_bytes(8, "little") + digest)
        return "blake2b-128-parts:" + h.hexdigest()

    def result(self) -> NormalizationConstants:
        """The :class:`NormalizationConstants` of every value added (the same errors as the in-memory call).

        Examples
        --------
        >>> import polars as pl
        >>> NormalizationParts("a").add(pl.DataFrame({"reward_a": [1.0, 3.0]})).result().count
        2
        """
        name = self.name if self.name is not None else self.reward.removeprefix("reward_")
        m = Moments.of(np.concatenate(self.kept)) if self.kept else self.moments
        check_normalizable(name, self.scope, m)
        return NormalizationConstants(reward=name, scope=self.scope, mean=m.mean, std=m.std, count=m.count,
                                      source=self.source, rows=self.rows, fingerprint=self.fingerprint())


def reward_stats_of_parts(parts: Iterable, reward: str, *, scope: str = "all",
                          quantiles: Sequence[float] = DEFAULT_QUANTILES,
                          constants: "NormalizationConstants | None" = None, spec: FrameSpec | None = None,
                          exact_limit: int = EXACT_LIMIT) -> RewardStats:
    """:func:`reward_stats` over parts of whole episodes, one part in memory at a time.

    Identical to :func:`reward_stats` on the parts' concatenation while the
    values in scope number at most ``exact_limit`` (10^7); past it the
    quantiles are a KLL sketch's (``quantile_method == "kll"``, rank error
    ±0.278 %) and the moments the merge of the parts' (equal to rounding).

    Parameters
    ----------
    parts : iterable
        Parts in data order: polars DataFrames (spec attached) or LazyFrames
        of whole episodes, or Parquet parts' paths.
    reward, scope, quantiles, constants, spec
        As :func:`reward_stats`.
    exact_limit : int
        Most values kept for exact quantiles (0: always the sketch).

    Returns
    -------
    RewardStats

    Examples
    --------
    >>> import polars as pl
    >>> from rewardlab.analysis.stats import reward_stats
    >>> parts = [pl.DataFrame({"reward_a": [0.0, 1.0]}), pl.DataFrame({"reward_a": [3.0]})]
    >>> reward_stats_of_parts(parts, "a", quantiles=(0.5,)) == reward_stats(pl.concat(parts), "a", quantiles=(0.5,))
    True
    """
    acc = RewardStatsParts(reward, scope=scope, quantiles=quantiles, constants=constants, spec=spec,
                           exact_limit=exact_limit)
    for i, part in enumerate(parts):
        acc.add(part, part=i)
    return acc.result()


def normalization_constants_of_parts(parts: Iterable, reward: str, *, scope: str = "all",
                                     spec: FrameSpec | None = None, source: str | None = None,
                                     exact_limit: int = EXACT_LIMIT) -> NormalizationConstants:
    """:func:`normalization_constants` over parts of whole episodes, one part in memory at a time.

    Identical to the in-memory call on the parts' concatenation while the
    values in scope number at most ``exact_limit``; past it the mean and std
    are the merge of the parts' (equal to rounding) and the fingerprint is the
    per-part one (``"blake2b-128-parts:..."``).

    Parameters
    ----------
    parts : iterable
        Parts in data order (see :func:`reward_stats_of_parts`).
    reward, scope, spec
        As :func:`normalization_constants`.
    source : str, optional
        The dataset's description, recorded in the constants.
    exact_limit : int
        Most values kept for the in-memory fingerprint.

    Returns
    -------
    NormalizationConstants

    Examples
    --------
    >>> import polars as pl
    >>> from rewardlab.analysis.stats import normalization_constants
    >>> parts = [pl.DataFrame({"reward_a": [1.0]}), pl.DataFrame({"reward_a": [3.0]})]
    >>> normalization_constants_of_parts(parts, "a") == normalization_constants(pl.concat(parts), "a")
    True
    """
    acc = NormalizationParts(reward, scope=scope, spec=spec, source=source, exact_limit=exact_limit)
    for i, part in enumerate(parts):
        acc.add(part, part=i)
    return acc.result()


# --------------------------------------------------------------------------
# A dataset folder, part by part, in an engine's workers
# --------------------------------------------------------------------------


def part_stats(item: tuple) -> dict:
    """One part's accumulators: ``{(name, scope): RewardStatsParts}`` (a work item of an engine).

    ``item`` is ``(file, rows, index, names, scopes, quantiles, exact_limit, sketched)``.

    The item names the part's file (not the folder: opening a dataset checks
    every part's footer, which per part would cost the square of the parts).
    A scope in ``sketched`` holds more values over the whole dataset than
    ``exact_limit`` (known from the manifest), so its quantiles come from the
    sketch whatever the part: the part's values go into a sketch here, in the
    worker, and only the sketch's bytes go to the driver.
    """
    path, rows, index, names, scopes, quantiles, exact_limit, sketched = item
    part = read_part_file(path, rows)
    spec = attached(part)
    where = f"{index} ({Path(path).name})"
    return {(n, s): RewardStatsParts(n, scope=s, quantiles=quantiles, spec=spec,
                                     exact_limit=0 if s in sketched else exact_limit)
            .add(part, part=where) for n in names for s in scopes}


def sketched_scopes(ds: PartedDataset, scopes: Sequence[str], exact_limit: int) -> tuple[str, ...]:
    """The scopes whose values over the whole of ``ds`` outnumber ``exact_limit``, known before reading it.

    A step scope (``all``) holds a value per row, an episode scope
    (``episode_end`` and its kanachan name, ``episode_return``) one per episode, from the
    manifest; the others hold a number only reading tells, so they stay
    exact until the driver's merge passes the limit.

    Examples
    --------
    >>> sketched_scopes(open_dataset("corpus"), ("all", "nonzero"), 10 ** 7)  # doctest: +SKIP
    ('all',)
    """
    counts = {"all": ds.rows, "episode_end": ds.episodes, "episode_return": ds.episodes}
    return tuple(s for s in scopes if counts.get(SCOPE_ALIASES.get(s, s), -1) > exact_limit)


def dataset_reward_stats(dataset, rewards=None, scopes: Sequence[str] = ("all",), *,
                         quantiles: Sequence[float] = DEFAULT_QUANTILES, engine: str = "embedded",
                         workers: int | None = None, address: str | None = None, progress: bool | None = None,
                         exact_limit: int = EXACT_LIMIT) -> dict[str, dict[str, RewardStats]]:
    """:func:`~rewardlab.analysis.stats.reward_stats` of rewards in scopes over a dataset folder, one part at a time.

    Each part (whole episodes) is read, projected to its own columns, in an
    engine's workers and summarised there (:class:`RewardStatsParts`); the
    driver merges the summaries in part order.  Memory: a few parts, plus
    the kept values (at most ``exact_limit`` per reward and scope, then a
    KLL sketch; see the module docstring).

    Parameters
    ----------
    dataset : path or PartedDataset
        A dataset folder with ``reward_*`` columns (a rewards dataset from
        ``rewardlab apply FOLDER --out REWARDS``).
    rewards : str or sequence of str, optional
        Reward names (default: every ``reward_*`` column).
    scopes : sequence of str
        Scopes, as :func:`~rewardlab.analysis.stats.reward_stats`.
    quantiles : sequence of float
        As :func:`~rewardlab.analysis.stats.reward_stats`.
    engine, workers, address
        Where the parts are read (see :mod:`rewardlab.engines`; default: this
        machine's threads, one per core).
    progress : bool, optional
        A bar over the parts (default: when interactive).
    exact_limit : int
        Most values kept for exact quantiles per reward and scope.

    Returns
    -------
    dict
        ``{name: {scope: RewardStats}}``, in the order asked.

    Examples
    --------
    >>> stats = dataset_reward_stats("rewards/", scopes=("all", "episode_return"))  # doctest: +SKIP
    >>> stats["top"]["all"].mean  # doctest: +SKIP
    """
    ds = dataset if isinstance(dataset, PartedDataset) else PartedDataset(dataset)
    names = rewards_to_use(list(ds.columns), [rewards] if isinstance(rewards, str) else rewards)
    if isinstance(scopes, str):
        scopes = (scopes,)
    scopes = [check_scope(s) for s in dict.fromkeys(scopes)]
    quantiles = check_quantiles(quantiles)
    exact_limit = check_int("exact_limit", exact_limit, low=0, rule="should be an integer >= 0")
    acc = {(n, s): RewardStatsParts(n, scope=s, quantiles=quantiles, spec=ds.spec, exact_limit=exact_limit)
           for n in names for s in scopes}
    sketched = sketched_scopes(ds, scopes, exact_limit)
    for part in map_parts(ds, part_stats, (names, scopes, quantiles, exact_limit, sketched), engine=engine,
                          workers=workers, address=address, progress=progress, desc="statistics"):
        for key, value in part.items():
            acc[key].merge(value)
    return {n: {s: acc[(n, s)].result() for s in scopes} for n in names}
