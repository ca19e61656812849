"""rewardlab: interactive reward analysis for reinforcement learning.

Load recorded trajectories into Polars frames, run reward plug-ins over them
exactly as the training program would, compare and tune rewards, and export a
self-contained plug-in file.  ``import rewardlab`` needs no ipywidgets; the
widgets live in :mod:`rewardlab.widgets`.

Examples
--------
>>> import rewardlab
>>> frame = rewardlab.load_kanachan("data/sample.tsv.gz")  # doctest: +SKIP
>>> td = rewardlab.to_tensordict(frame, rows=slice(0, 64))  # doctest: +SKIP
"""

from rewardlab._version import __version__
from rewardlab import errors, schema
from rewardlab.batching import FrameArrays, to_tensordict
from rewardlab.dataset import DatasetSummary, convert, summarize
from rewardlab.mahjong import episode_outcomes, ranks_from_scores
from rewardlab.sources.kanachan import LoadResult, load_kanachan, read_kanachan, scan_kanachan

__all__ = [
    "__version__", "errors", "schema",
    "FrameArrays", "to_tensordict",
    "DatasetSummary", "convert", "summarize",
    "episode_outcomes", "ranks_from_scores",
    "LoadResult", "load_kanachan", "read_kanachan", "scan_kanachan",
]

# Each section below belongs to one area; add its imports and extend __all__ there.
# --- plug-ins ---
# --- analysis ---
# --- families, schedules, export ---
