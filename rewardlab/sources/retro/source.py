"""The ``"retro"`` entry of the source registry: detection by columns, options, and the per-level outcomes
``rewardlab info`` shows.

Detection: a Parquet file without rewardlab metadata, or a CSV file, whose
columns include ``episode_id``, ``t``, ``final``, ``game``, ``state`` and
``frame`` (the footer or the header line only) is claimed by content, before
the ``"steps"`` source (listed before it in
:data:`~rewardlab.sources.registry.BUILTIN_SOURCES`).  No suffix is claimed.
A folder loads as one table of its recordings.

Examples
--------
>>> SOURCE.name, sniff_retro("data/retro/sonic_sample.parquet")
('retro', True)
"""

from __future__ import annotations

import warnings
from pathlib import Path

import polars as pl

from rewardlab.core.errors import FilesLeftOutWarning, SkippedLinesWarning
from rewardlab.core.spec import attached
from rewardlab.sources.registry import Source, register_source
from rewardlab.sources.retro import layout as L
from rewardlab.sources.retro.outcomes import level_outcomes, outcome_lines
from rewardlab.sources.retro.reader import load_retro, read_retro
from rewardlab.sources.steps.files import kind_of
from rewardlab.sources.storage import has_rewardlab_metadata

__all__ = ["SOURCE", "sniff_retro", "retro_roles", "SNIFF_COLUMNS"]

#: The columns that make a table a retro recording.
SNIFF_COLUMNS = (L.EPISODE, L.STEP, L.FINAL, L.GAME, L.STATE, L.FRAME)


def sniff_retro(path) -> bool:
    """True for a Parquet (no rewardlab metadata) or CSV file whose columns include :data:`SNIFF_COLUMNS`.

    Examples
    --------
    >>> sniff_retro("data/sample.tsv.gz")
    False
    """
    path = Path(path)
    kind = kind_of(path)
    try:
        if kind == "parquet":
            if has_rewardlab_metadata(path):
                return False
            names = set(pl.read_parquet_schema(path))
        elif kind == "csv":
            with open(path, "rb") as f:
                header = f.readline(65536).decode("utf-8", errors="replace").strip().lstrip("\ufeff")
            names = {n.strip().strip('"') for n in header.split(",")}
        else:
            return False
    except (pl.exceptions.PolarsError, OSError, ValueError):
        return False
    return set(SNIFF_COLUMNS) <= names


def retro_roles(paths, *, levels=None, unfinished="error", frame: pl.DataFrame | None = None) -> dict:
    """The roles of a recording's columns and, per level (game and state), how its episodes ended
    (:func:`~rewardlab.sources.retro.outcomes.level_outcomes`; episodes the rules reject are left out).

    ``frame``: the recording as already loaded with the same ``levels`` and
    ``unfinished`` (``rewardlab info`` passes its own), so it is not read
    again; None reads ``paths``.

    Examples
    --------
    >>> roles = retro_roles("data/retro/sonic_sample.parquet")
    >>> roles["final"]
    "final (rows after an episode's last step: removed, their values -> final_<column>)"
    """
    if frame is None:
        with warnings.catch_warnings():  # the load itself reports what it skips and the files it leaves out
            warnings.simplefilter("ignore", SkippedLinesWarning)
            warnings.simplefilter("ignore", FilesLeftOutWarning)
            frame = read_retro(paths, levels=levels, unfinished=unfinished, on_error="skip").frame
    spec = attached(frame)
    out = {"episode": L.EPISODE, "step": L.STEP,
           "final": f"{L.FINAL} (rows after an episode's last step: removed, their values -> final_<column>)",
           "terminated": L.TERMINATED, "truncated": L.TRUNCATED, "reward": f"{L.REWARD} -> reward_recorded",
           "states": [s.name for s in spec.states] if spec is not None else [],
           "extras": list(spec.columns) if spec is not None else []}
    for key, text in outcome_lines(level_outcomes(frame)).items():
        out["level " + key] = text
    return out


def _load(paths, *, levels=None, unfinished="error", on_error="raise", skipped_path=None, overwrite=False):
    return load_retro(paths, levels=levels, unfinished=unfinished, on_error=on_error, skipped_path=skipped_path,
                      overwrite=overwrite)


def _read(paths, *, levels=None, unfinished="error", on_error="raise", skipped_path=None, overwrite=False):
    return read_retro(paths, levels=levels, unfinished=unfinished, on_error=on_error, skipped_path=skipped_path,
                      overwrite=overwrite)


#: stable-retro recordings as a source (format ``"retro"``).
SOURCE = register_source(Source(
    name="retro",
    spec=L.RETRO_SPEC,
    load=_load,
    read=_read,
    suffixes=(),
    sniff=sniff_retro,
    description="stable-retro recordings (Parquet or CSV step tables in the N+1 layout: episode_id, t, final, "
    "game, state, frame, action, reward, terminated, truncated and the game's data.json variables)",
    roles=retro_roles,
))
