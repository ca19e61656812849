"""Generic step tables as a source (format ``"steps"``): Parquet, CSV and JSON-lines files, one row per step.

``rewardlab.load(path, format="steps", episode="ep", ...)`` reads them into a
frame carrying a :class:`~rewardlab.core.spec.FrameSpec` whose contract is
``"steps"``; column roles are detected by name
(:mod:`rewardlab.sources.steps.roles`) or named by options, and reported by
``rewardlab info``; episodes' final states (N+1 rows, ``next_obs`` /
``new_obs`` columns, ``final_obs`` columns) are read by
:mod:`rewardlab.sources.steps.finals`.  Detection: ``.csv``, ``.jsonl`` and ``.ndjson`` files
by suffix; a ``.parquet`` file without rewardlab metadata whose columns
include a default episode and step name (``episode_id`` / ``eps_id`` /
``episode`` and ``t`` / ``step``) by content.  Other Parquet files stay with
the ``"dataset"`` source; pass ``format="steps"`` for them.

Examples
--------
>>> from rewardlab.sources.steps import read_steps, detect_roles
>>> import rewardlab
>>> frame = rewardlab.load("steps.parquet", format="steps", episode="ep")  # doctest: +SKIP
"""

from rewardlab.sources.steps.reader import (RECORDED, RECORDED_DONE, SKIPPED_SCHEMA, STEPS_SPEC, load_steps,
                                            read_steps)
from rewardlab.sources.steps.roles import DEFAULT_NAMES, StepRoles, detect_roles
from rewardlab.sources.steps.source import SOURCE, sniff_steps, step_roles

__all__ = ["read_steps", "load_steps", "detect_roles", "step_roles", "StepRoles", "DEFAULT_NAMES", "SOURCE",
           "sniff_steps", "RECORDED", "RECORDED_DONE", "SKIPPED_SCHEMA", "STEPS_SPEC"]
