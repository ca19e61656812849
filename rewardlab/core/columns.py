"""The columns rewardlab adds to any frame: ``reward_<name>`` (Float64) and ``done_<name>`` (Boolean).

Plug-in names become column names and Python identifiers in exported files,
so they are restricted to ``[A-Za-z_][A-Za-z0-9_]*`` (:func:`check_name`).

Examples
--------
>>> reward_column("top"), done_column("top")
('reward_top', 'done_top')
"""

from __future__ import annotations

import re

import polars as pl

from rewardlab.core.errors import ParameterError

__all__ = ["REWARD_PREFIX", "DONE_PREFIX", "check_name", "reward_column", "done_column", "reward_names"]

REWARD_PREFIX = "reward_"
DONE_PREFIX = "done_"
_NAME_RE = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")


def check_name(name: str, *, what: str = "name") -> str:
    """Return ``name`` if it is a valid identifier-like name, else raise.

    Reward names become column names and Python identifiers in exported
    files, so they are restricted to ``[A-Za-z_][A-Za-z0-9_]*``.

    Examples
    --------
    >>> check_name("rank_top")
    'rank_top'
    """
    if not isinstance(name, str) or not _NAME_RE.match(name):
        raise ParameterError(
            what, "should match [A-Za-z_][A-Za-z0-9_]* (letters, digits, underscores)", name
        )
    return name


def reward_column(name: str) -> str:
    """Return the frame column holding plug-in ``name``'s rewards.

    Examples
    --------
    >>> reward_column("points")
    'reward_points'
    """
    return REWARD_PREFIX + check_name(name)


def done_column(name: str) -> str:
    """Return the frame column holding plug-in ``name``'s done flags.

    Examples
    --------
    >>> done_column("points")
    'done_points'
    """
    return DONE_PREFIX + check_name(name)


def reward_names(frame) -> list[str]:
    """Names of the rewards present in ``frame`` (columns ``reward_<name>``), in column order.

    ``frame`` may also be its column names (a dataset folder's columns).

    Examples
    --------
    >>> import polars as pl
    >>> reward_names(pl.DataFrame({"reward_a": [0.0], "done_a": [True], "seat": [0]}))
    ['a']
    """
    if isinstance(frame, pl.LazyFrame):
        cols = frame.collect_schema().names()
    else:
        cols = frame.columns if isinstance(frame, pl.DataFrame) else list(frame)
    return [c[len(REWARD_PREFIX):] for c in cols if c.startswith(REWARD_PREFIX)]
