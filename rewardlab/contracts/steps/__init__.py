"""The steps plug-in contract (TorchRL's key layout for generic step tables).

Examples
--------
>>> from rewardlab.contracts.steps import STEPS
>>> STEPS.name
'steps'
"""

from rewardlab.contracts.steps.arrays import FLAG_KEYS, StepsArrays
from rewardlab.contracts.steps.contract import STEPS, StepsContract

__all__ = ["STEPS", "StepsContract", "StepsArrays", "FLAG_KEYS"]
