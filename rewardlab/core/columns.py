"""The columns rewardlab adds to any frame: ``reward_<name>`` (Float64) and ``done_<name>`` (Boolean).

Plug-in names become column names and Python identifiers in exported files,
so they are restricted to ``[A-Za-z_][A-Za-z0-9_]*`` (:func:`check_name`).
A plug-in that reports named reward terms beside its reward (the OUT key
``("next", "reward_terms", <term>)``) gets one Float64 column per term,
``term_<name>.<term>`` (:func:`term_column`): the prefix is not ``reward_``, so
code that takes every ``reward_*`` column as a candidate never takes a term
for one, and the dot (never in a name) separates the plug-in from the term.

Examples
--------
>>> reward_column("top"), done_column("top"), term_column("top", "bonus")
('reward_top', 'done_top', 'term_top.bonus')
"""

from __future__ import annotations

import re

import polars as pl

from rewardlab.core.errors import ParameterError

__all__ = ["REWARD_PREFIX", "DONE_PREFIX", "TERM_PREFIX", "TERM_SEPARATOR", "check_name", "reward_column",
           "done_column", "reward_names", "term_column", "term_columns", "split_term_column"]

REWARD_PREFIX = "reward_"
DONE_PREFIX = "done_"
#: Prefix of a reward term's column (``term_<plug-in>.<term>``).
TERM_PREFIX = "term_"
#: Between the plug-in's name and the term's in a term column (no name holds it).
TERM_SEPARATOR = "."
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


def term_column(plugin: str, term: str) -> str:
    """Return the frame column holding term ``term`` of plug-in ``plugin`` (``term_<plugin>.<term>``).

    Both names follow :func:`check_name`'s rule, so the column splits back unambiguously
    (:func:`split_term_column`).

    Examples
    --------
    >>> term_column("shaped", "progress")
    'term_shaped.progress'
    >>> term_column("shaped", "a.b")
    Traceback (most recent call last):
    ...
    rewardlab.core.errors.ParameterError: `term` should match [A-Za-z_][A-Za-z0-9_]* (letters, digits, underscores). Received 'a.b'.
    """
    return TERM_PREFIX + check_name(plugin, what="plugin") + TERM_SEPARATOR + check_name(term, what="term")


def split_term_column(column: str) -> tuple[str, str] | None:
    """``(plugin, term)`` of a term column (:func:`term_column`), or None for any other column.

    Examples
    --------
    >>> split_term_column("term_shaped.progress"), split_term_column("reward_shaped")
    (('shaped', 'progress'), None)
    """
    if not isinstance(column, str) or not column.startswith(TERM_PREFIX):
        return None
    plugin, sep, term = column[len(TERM_PREFIX):].partition(TERM_SEPARATOR)
    if not sep or not _NAME_RE.match(plugin) or not _NAME_RE.match(term):
        return None
    return plugin, term


def term_columns(frame, plugin: str) -> dict[str, str]:
    """``{term: column}`` of plug-in ``plugin``'s term columns in ``frame``, in column order.

    ``frame`` may be a DataFrame, a LazyFrame or column names.

    Examples
    --------
    >>> term_columns(["reward_a", "term_a.task", "term_ab.x", "term_a.bonus"], "a")
    {'task': 'term_a.task', 'bonus': 'term_a.bonus'}
    """
    if isinstance(frame, pl.LazyFrame):
        cols = frame.collect_schema().names()
    else:
        cols = frame.columns if isinstance(frame, pl.DataFrame) else list(frame)
    check_name(plugin, what="plugin")
    found = {}
    for c in cols:
        split = split_term_column(c)
        if split is not None and split[0] == plugin:
            found[split[1]] = c
    return found
