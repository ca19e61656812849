"""RLlib offline output registered as a source (format ``"rllib"``).

Examples
--------
>>> SOURCE.name, SOURCE.spec.contract
('rllib', 'steps')
"""

from __future__ import annotations

import polars as pl

from rewardlab.sources.results import LoadResult
from rewardlab.sources.registry import Source, register_source
from rewardlab.sources.rllib.files import sniff_rllib
from rewardlab.sources.rllib.reader import RLLIB_SPEC, load_rllib, read_rllib

__all__ = ["SOURCE"]

def _load_source(paths, *, on_error: str = "raise", skipped_path=None, overwrite: bool = False,
                 unfinished: str = "error", allow_pickle: bool = False) -> pl.DataFrame:
    return load_rllib(paths, on_error=on_error, skipped_path=skipped_path, overwrite=overwrite,
                      unfinished=unfinished, allow_pickle=allow_pickle)


def _read_source(paths, *, on_error: str = "raise", skipped_path=None, overwrite: bool = False,
                 unfinished: str = "error", allow_pickle: bool = False) -> LoadResult:
    return read_rllib(paths, on_error=on_error, skipped_path=skipped_path, overwrite=overwrite,
                      unfinished=unfinished, allow_pickle=allow_pickle)


#: RLlib offline output as a source (format ``"rllib"``).
SOURCE = register_source(Source(
    name="rllib",
    spec=RLLIB_SPEC,
    load=_load_source,
    read=_read_source,
    sniff=sniff_rllib,
    description="RLlib offline data (JSON lines of SampleBatch / MultiAgentBatch; new-stack Parquet)",
))
