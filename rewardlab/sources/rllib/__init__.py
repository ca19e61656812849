"""RLlib offline data as a source (format ``"rllib"``): see :mod:`rewardlab.sources.rllib.reader`.

The package's modules: :mod:`~rewardlab.sources.rllib.files` (which files,
and JSON lines / Parquet row groups into columns), :mod:`~.columns` (the
rules on one column's values), :mod:`~.compression` (RLlib's packed
columns, decoded within bounds), :mod:`~.episodes` (episode rules),
:mod:`~.skipped` (skip mode: what is dropped and kept), :mod:`~.reader`
(``read_rllib``) and :mod:`~.source` (the registration).

Examples
--------
>>> from rewardlab.sources.rllib import RLLIB_SPEC
>>> RLLIB_SPEC.episode, RLLIB_SPEC.contract
(('eps_id', 'agent'), 'steps')
"""

from rewardlab.sources.rllib.columns import RECORDED_NAME
from rewardlab.sources.rllib.files import DEFAULT_AGENT, sniff_rllib
from rewardlab.sources.rllib.reader import FINAL_OBS, RLLIB_SPEC, load_rllib, read_rllib, rllib_spec
from rewardlab.sources.rllib.skipped import SKIP_REASONS
from rewardlab.sources.rllib.source import SOURCE

__all__ = ["read_rllib", "load_rllib", "rllib_spec", "RLLIB_SPEC", "FINAL_OBS", "SKIP_REASONS", "sniff_rllib",
           "RECORDED_NAME", "DEFAULT_AGENT", "SOURCE"]
