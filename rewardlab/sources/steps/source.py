"""The ``"steps"`` entry of the source registry: detection, folders, options, and the roles ``rewardlab info`` shows.

Detection: a plain Parquet file (no rewardlab metadata) with a default episode
and step name is claimed by content; any other ``.parquet``, ``.csv``,
``.jsonl`` or ``.ndjson`` file by suffix, so a table whose columns have other
names is read as a step table and the error names the missing roles (a file
with rewardlab's metadata, or a plain one holding a whole kanachan frame, is
the ``"dataset"`` format's, claimed by content first).  A folder loads as one
table of its step-table files (:func:`step_files`).

Examples
--------
>>> SOURCE.name, SOURCE.suffixes
('steps', ('.parquet', '.csv', '.jsonl', '.ndjson'))
"""

from __future__ import annotations

import warnings
from pathlib import Path

import polars as pl

from rewardlab.core.errors import FilesLeftOutWarning, ParameterError
from rewardlab.sources.registry import Source, register_source
from rewardlab.sources.steps.files import head_of, kind_of
from rewardlab.sources.steps.folders import step_files
from rewardlab.sources.steps.reader import STEPS_SPEC, load_steps, read_steps, read_tables
from rewardlab.sources.steps.roles import DEFAULT_NAMES, detect_roles
from rewardlab.sources.storage import has_rewardlab_metadata

__all__ = ["SOURCE", "sniff_steps", "step_roles", "step_files"]


def sniff_steps(path) -> bool:
    """True for a ``.parquet`` file without rewardlab metadata whose columns include a default
    episode name and a default step name (reads the footer only).  Text files are claimed by suffix.

    Examples
    --------
    >>> sniff_steps("data/sample.tsv.gz")
    False
    """
    path = Path(path)
    if kind_of(path) != "parquet" or has_rewardlab_metadata(path):
        return False
    try:
        names = set(pl.read_parquet_schema(path))
    except (pl.exceptions.PolarsError, OSError, ValueError):
        return False
    return bool(names & set(DEFAULT_NAMES["episode"])) and bool(names & set(DEFAULT_NAMES["step"]))


def step_roles(paths, *, episode=None, step=None, agent=None, terminated=None, truncated=None, done=None,
               reward=None, time=None, final=None) -> dict:
    """Which column plays which role in the tables at ``paths`` (the first file's columns), as a dict.

    With final states (:mod:`rewardlab.sources.steps.finals`), ``"finals"``
    lists each final column of the frame and where it comes from (``rewardlab
    info``'s episode digest counts the episodes that keep one).

    Examples
    --------
    >>> step_roles("steps.csv")["episode"]  # doctest: +SKIP
    'episode_id'
    """
    with warnings.catch_warnings():  # the load names the files left out
        warnings.simplefilter("ignore", FilesLeftOutWarning)
        first = step_files(paths, episode=episode, step=step, agent=agent)[0]
    roles = detect_roles(head_of(first), episode=episode, step=step, agent=agent, terminated=terminated,
                         truncated=truncated, done=done, reward=reward, time=time, final=final)
    out = roles.as_dict()
    for role in ("episode", "step"):
        out.setdefault(role, "(not found: pass " + role + "='COLUMN')")
    return out


#: ``_load``'s option defaults (an option at its default is not "given").
_DEFAULTS = dict(unfinished="error", on_error="raise", overwrite=False)


def _load(paths, *, episode=None, step=None, agent=None, terminated=None, truncated=None, done=None,
          reward=None, time=None, final=None, unfinished="error", on_error="raise", skipped_path=None,
          overwrite=False, spec=None):
    """``load_steps``; with a declared ``spec`` the rows as read (``rewardlab.load`` checks them against it).

    A declared spec names the roles itself and is checked on the whole frame, with no per-line errors and
    no skip mode, so the format's options are refused beside it rather than silently ignored.
    """
    if spec is not None:
        given = {k: v for k, v in dict(
            episode=episode, step=step, agent=agent, terminated=terminated, truncated=truncated, done=done,
            reward=reward, time=time, final=final, unfinished=unfinished, on_error=on_error,
            skipped_path=skipped_path, overwrite=overwrite).items() if v != _DEFAULTS.get(k)}
        if given:
            raise ParameterError(
                next(iter(given)), "cannot be used with spec=: a declared spec names the columns' roles "
                "itself and the rows are checked against it as read (no roles to detect, no per-line "
                "errors, no skip mode); " + ", ".join(given) + " would be ignored", given,
                hint="Drop spec= to read the table with the format's options (roles, on_error, "
                "skipped_path, ...), or drop the options to check the rows against spec.")
        return read_tables(step_files(paths))
    return load_steps(step_files(paths, episode=episode, step=step, agent=agent), episode=episode, step=step,
                      agent=agent, terminated=terminated, truncated=truncated, done=done, reward=reward, time=time,
                      final=final, unfinished=unfinished, on_error=on_error, skipped_path=skipped_path,
                      overwrite=overwrite)


def _read(paths, *, episode=None, step=None, agent=None, terminated=None, truncated=None, done=None, reward=None,
          time=None, final=None, unfinished="error", on_error="raise", skipped_path=None, overwrite=False):
    """``read_steps`` of the files :func:`step_files` finds (a folder: its step tables)."""
    return read_steps(step_files(paths, episode=episode, step=step, agent=agent), episode=episode, step=step,
                      agent=agent, terminated=terminated, truncated=truncated, done=done, reward=reward, time=time,
                      final=final, unfinished=unfinished, on_error=on_error, skipped_path=skipped_path,
                      overwrite=overwrite)


#: Generic step tables as a source (format ``"steps"``).
SOURCE = register_source(Source(
    name="steps",
    spec=STEPS_SPEC,
    load=_load,
    read=_read,
    suffixes=(".parquet", ".csv", ".jsonl", ".ndjson"),
    sniff=sniff_steps,
    description="generic step tables, one row per step (.parquet, .csv, .jsonl / .ndjson files, or a folder "
    "of them); column roles detected by name or given as options",
    roles=step_roles,
    validates=True,  # read_steps checks every rule of FrameSpec.validate, naming file and line
))
