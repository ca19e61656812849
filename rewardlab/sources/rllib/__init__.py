"""RLlib offline data as a source (format ``"rllib"``): see :mod:`rewardlab.sources.rllib.reader`.

Examples
--------
>>> from rewardlab.sources.rllib import RLLIB_SPEC
>>> RLLIB_SPEC.episode, RLLIB_SPEC.contract
(('eps_id', 'agent'), 'steps')
"""

from rewardlab.sources.rllib.reader import (DEFAULT_AGENT, RECORDED_NAME, RLLIB_SPEC, SKIP_REASONS, load_rllib,
                                            read_rllib, rllib_spec, sniff_rllib)

__all__ = ["read_rllib", "load_rllib", "rllib_spec", "RLLIB_SPEC", "SKIP_REASONS", "sniff_rllib", "RECORDED_NAME",
           "DEFAULT_AGENT"]
