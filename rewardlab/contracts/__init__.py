"""Plug-in contracts as a registry: what a reward plug-in receives and must give back.

* :mod:`rewardlab.contracts.base`: :class:`Contract`, the parts of a contract.
* :mod:`rewardlab.contracts.registry`: :func:`register_contract`,
  :func:`get_contract`, :func:`registered_contracts`, :func:`contract_for`
  (the contract a frame's spec names, or the one passed as ``contract=``).
* :mod:`rewardlab.contracts.kanachan`: kanachan's ``get_reward(data, contiguous)``
  on its TensorDict (offline and simulation conventions).
* :mod:`rewardlab.contracts.steps`: the same entry point on a generic step
  table's TensorDict, in TorchRL's key layout.
* :mod:`rewardlab.contracts.advice`: whether a contract asks for rewards near
  mean 0 / std 1 (kanachan's does), and warnings that point at the user's line.

Examples
--------
>>> from rewardlab.contracts import get_contract, registered_contracts
>>> sorted(registered_contracts())
['kanachan', 'steps']
>>> get_contract("steps")
<rewardlab contract 'steps': get_reward(data, contiguous)>
"""

from rewardlab.contracts.base import Contract, ContractArrays
from rewardlab.contracts.registry import (
    contract_for, get_contract, register_contract, registered_contracts, unregister_contract,
)
from rewardlab.contracts.kanachan import KANACHAN, KanachanContract
from rewardlab.contracts.steps import STEPS, StepsArrays, StepsContract

register_contract(KANACHAN)
register_contract(STEPS)

__all__ = [
    "Contract", "ContractArrays", "register_contract", "unregister_contract", "get_contract",
    "registered_contracts",
    "contract_for", "KANACHAN", "KanachanContract", "STEPS", "StepsContract", "StepsArrays",
]
