"""A step-table load's files: the files named, and for a folder its step tables (:func:`step_files`).

Shared by :func:`rewardlab.load` (format ``steps``) and
:func:`rewardlab.load_steps` / :func:`rewardlab.read_steps`, so a folder of
step tables loads as one table on every front.

Examples
--------
>>> [p.name for p in step_files("data/gym/cartpole_random.parquet")]
['cartpole_random.parquet']
"""

from __future__ import annotations

import warnings
from pathlib import Path

import polars as pl

from rewardlab.core.errors import FilesLeftOutWarning, ParameterError, RewardlabError
from rewardlab.core.files import as_paths, check_input
from rewardlab.sources.steps.files import head_of, kind_of
from rewardlab.sources.steps.roles import detect_roles
from rewardlab.sources.storage import has_rewardlab_metadata

__all__ = ["step_files"]


#: What reading a file's first rows may raise when it is not a table Polars reads (a panic of its Rust code too).
_UNREADABLE = (RewardlabError, pl.exceptions.PolarsError, pl.exceptions.PanicException, OSError, ValueError)


def _has_roles(path: Path, roles: dict) -> bool:
    """True when the file's first rows parse and hold an episode and a step column (``roles``: the options)."""
    try:
        head = head_of(path)
        found = detect_roles(head, **roles)
    except _UNREADABLE:
        return False
    return found.episode in head.columns and found.step in head.columns


def step_files(paths, *, episode=None, step=None, agent=None) -> list[Path]:
    """The files a load reads: the files named, and for a folder its step tables (recursively, sorted by path).

    A folder's step tables are its ``.parquet``, ``.csv``, ``.jsonl`` and
    ``.ndjson`` files (no rewardlab metadata, no hidden ones) whose first
    rows hold an episode and a step column (the options' names, else the
    default ones); the others beside them (a summary, a converted dataset)
    are left out and named in a
    :class:`~rewardlab.core.errors.FilesLeftOutWarning`.  When none holds
    both, the tables of the first one's kind are read, so the error names the
role the first one lacks.

    Examples
    --------
    >>> [p.name for p in step_files("data/gym/cartpole_random.parquet")]
    ['cartpole_random.parquet']
    """
    roles = dict(episode=episode, step=step, agent=agent)
    out: list[Path] = []
    for p in as_paths(paths):
        if not p.is_dir():
            out.append(p)
            continue
        check_input(p, folder=True)
        tables = sorted(q for q in p.rglob("*") if q.is_file() and kind_of(q) is not None
                        and not any(part.startswith(".") for part in q.relative_to(p).parts)
                        and not has_rewardlab_metadata(q))
        found = [q for q in tables if _has_roles(q, roles)]
        if not tables:
            raise ParameterError("paths", "should name step tables or folders holding some (.parquet, .csv, "
                                 ".jsonl, .ndjson files without rewardlab metadata)", str(p))
        if not found:  # the tables of the first one's kind: the load names the role the first one lacks
            out += [q for q in tables if kind_of(q) == kind_of(tables[0])]
            continue
        left_out = [q for q in tables if q not in found]
        if left_out:
            warnings.warn(FilesLeftOutWarning(
                f"left out {len(left_out)} file{'s' if len(left_out) > 1 else ''} of {p} that "
                f"{'are' if len(left_out) > 1 else 'is'} not a step table of this load (no episode and step "
                f"column, or not readable as a table): {', '.join(str(q) for q in left_out)}"), stacklevel=3)
        out += found
    return out
