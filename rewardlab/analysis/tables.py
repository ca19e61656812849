"""Reward data as tables: a lazy view of a frame, a lazy frame or dataset paths, and its reward columns.

What every analysis module reads first: :func:`lazy_table` (paths are
checked before any open; converted datasets and rewards tables carry their
stored spec), :func:`column_names`, :func:`resolve_reward`,
:func:`rewards_to_use` and :func:`need_column`.

Examples
--------
>>> import polars as pl
>>> lf, where = lazy_table(pl.DataFrame({"reward_a": [0.0], "seat": [0]}))
>>> rewards_to_use(column_names(lf), None), where
(['a'], None)
"""

from __future__ import annotations

from pathlib import Path
from typing import Sequence

import polars as pl

from rewardlab.core import columns
from rewardlab.core.errors import ColumnNotFoundError, FrameError, ParameterError
from rewardlab.core.files import check_input
from rewardlab.core.spec import attach, attached
from rewardlab.sources.dispatch import as_lazy
from rewardlab.sources.kanachan.schema import KEY_COLUMNS
from rewardlab.sources.storage import layout_of, read_spec, scan_dataset, verify_table

__all__ = ["lazy_table", "column_names", "resolve_reward", "rewards_to_use", "need_column"]


def lazy_table(data) -> tuple[pl.LazyFrame, str | None]:
    """A LazyFrame of ``data`` (a frame, a lazy frame, or Parquet / dataset paths) and, for paths, their description.

    Paths are checked first (a FIFO is refused, rewards tables' page checksums are verified).
    For paths, the LazyFrame carries the spec stored in the files
    (:func:`rewardlab.core.spec.attached`) where they hold one.

    Examples
    --------
    >>> lf, where = lazy_table(pl.DataFrame({"reward_a": [0.0]}))
    >>> where is None
    True
    """
    if isinstance(data, pl.LazyFrame):
        return data, None
    if isinstance(data, pl.DataFrame):
        lf = data.lazy()
        if attached(data) is not None:  # the lazy view keeps the frame's spec
            attach(lf, attached(data))
        return lf, None
    if isinstance(data, (str, Path)):
        paths = [Path(data)]
    elif isinstance(data, (list, tuple)) and data and all(isinstance(p, (str, Path)) for p in data):
        paths = [Path(p) for p in data]
    else:
        raise ParameterError("data", "should be a polars DataFrame or LazyFrame, or path(s) to Parquet "
                             "files", type(data).__name__)
    targets: list[Path] = []
    for p in paths:
        check_input(p, folder=True)  # FIFOs, devices, unreadable files: refused before any open
        if p.is_dir():
            inside = sorted(p.glob("*.parquet"))
            for q in inside:
                check_input(q)
            targets.extend(inside)
        elif p.suffix == ".parquet":
            targets.append(p)
        else:
            return as_lazy(paths), ", ".join(map(str, paths))
    if not targets:
        raise ParameterError("data", "should name Parquet files or folders holding them",
                             [str(p) for p in paths])
    _check_same_columns(targets)
    if any(layout_of(t) is not None for t in targets):  # converted datasets: decode their array columns
        return scan_dataset(targets), ", ".join(map(str, paths))  # attaches the stored spec
    for t in targets:  # Polars does not verify page checksums: a flipped bit is an error, not a value
        verify_table(t)
    lf = pl.scan_parquet(targets)
    stored = read_spec(targets[0])  # the spec `rewardlab apply` stored with its rewards table
    return (attach(lf, stored) if stored is not None else lf), ", ".join(map(str, paths))


def _check_same_columns(targets: list[Path]) -> None:
    """Several Parquet files are read as row shards of one table: their columns must agree."""
    if len(targets) < 2:
        return
    first = list(pl.read_parquet_schema(targets[0]))
    for t in targets[1:]:
        cols = list(pl.read_parquet_schema(t))
        if cols != first:
            extra = sorted(set(cols) ^ set(first)) or ["(same names, other order)"]
            raise ParameterError(
                "data", f"should be Parquet files with the same columns (row shards of one table); "
                f"{t} differs from {targets[0]} in {', '.join(extra)}", [str(x) for x in targets],
                hint="To analyse rewards of several plug-ins together, apply them in one run "
                "(`rewardlab apply DATASET --plugin A --plugin B ...`).")


def column_names(lf: pl.LazyFrame) -> list[str]:
    """The column names of a LazyFrame (its schema; no data is read).

    Examples
    --------
    >>> column_names(pl.LazyFrame({"a": [1], "b": [2]}))
    ['a', 'b']
    """
    return lf.collect_schema().names()


def resolve_reward(names: Sequence[str], reward: str) -> str:
    """The plug-in name for ``reward`` (a name like ``"top"`` or a column like ``"reward_top"``)."""
    if not isinstance(reward, str):
        raise ParameterError("reward", "should be a reward name such as 'top'", reward)
    if columns.REWARD_PREFIX + reward in names:
        return columns.check_name(reward, what="reward")
    if reward.startswith(columns.REWARD_PREFIX) and reward in names:
        return reward[len(columns.REWARD_PREFIX):]
    available = [c for c in names if c.startswith(columns.REWARD_PREFIX)]
    raise ColumnNotFoundError(columns.REWARD_PREFIX + reward, available or ["(no reward_* columns; run "
                                                                       "`rewardlab apply` first)"])


def rewards_to_use(names: Sequence[str], rewards) -> list[str]:
    """The plug-in names to analyse: ``rewards`` resolved (:func:`resolve_reward`), or every ``reward_*`` column.

    Examples
    --------
    >>> rewards_to_use(["seat", "reward_a", "reward_b"], None)
    ['a', 'b']
    """
    if rewards is None:
        found = [c[len(columns.REWARD_PREFIX):] for c in names if c.startswith(columns.REWARD_PREFIX)]
        if not found:
            raise FrameError("the data has no reward_<name> columns",
                             hint="Run reward plug-ins first (`rewardlab apply` or apply_plugins)")
        return found
    if isinstance(rewards, str):
        rewards = [rewards]
    return [resolve_reward(names, r) for r in rewards]


def need_column(names: Sequence[str], column: str, why: str, *,
                keys: Sequence[str] = KEY_COLUMNS) -> None:
    """Raise :class:`~rewardlab.core.errors.FrameError` (saying what needs it) when ``column`` is missing.

    ``keys`` are the columns a rewards table shares with its dataset (named
    in the hint; kanachan's by default).

    Examples
    --------
    >>> need_column(["seat"], "seat", "the by-rank table")
    """
    if column not in names:
        raise FrameError(
            f"{why} needs the column {column!r}, which the data lacks",
            hint="Pass the full frame (the dataset with reward columns, e.g. from apply_plugins), "
            f"or join the rewards table to the dataset on {', '.join(keys)}")
