"""The registry of plug-in contracts, and which contract a frame's plug-ins get (:func:`contract_for`).

Nothing in the runner, :func:`~rewardlab.plugins.apply_plugins` or
:func:`~rewardlab.plugins.check_plugin` names a contract: they take the one
the frame's spec names (:attr:`rewardlab.core.spec.FrameSpec.contract`) or the
one passed as ``contract=``.  Adding a contract is a folder under
``rewardlab/contracts/`` (or any module of your own) and one
:func:`register_contract` call.

Examples
--------
>>> from rewardlab.contracts import registered_contracts
>>> list(registered_contracts())
['kanachan', 'steps']
"""

from __future__ import annotations

from rewardlab.contracts.base import Contract
from rewardlab.core.spec import FrameSpec
from rewardlab.core.errors import ParameterError, SpecError
from rewardlab.core.fronts import Fix, Text
from rewardlab.sources.registry import spec_of

__all__ = ["register_contract", "get_contract", "registered_contracts", "contract_for",
           "DEFAULT_CONTRACT", "unregister_contract", "register_file_contract", "file_contracts",
           "claimed_contract"]

#: The contract a run gets when neither a ``contract=`` argument nor a spec names one
#: (the runner's default, as before contracts were a registry).
DEFAULT_CONTRACT = "kanachan"

_CONTRACTS: dict[str, Contract] = {}
#: Contracts a plug-in file claims by defining a name (:func:`register_file_contract`), by that name.
_FILE_CONTRACTS: dict[str, Contract] = {}


def register_contract(contract: Contract, *, replace: bool = False) -> Contract:
    """Add ``contract`` to the registry under ``contract.name``; returns it.

    A name already taken is refused unless ``replace=True``.

    Examples
    --------
    >>> from rewardlab.contracts import get_contract
    >>> register_contract(get_contract("steps")) is get_contract("steps")
    True
    """
    if not isinstance(contract, Contract):
        raise ParameterError("contract", "should be a rewardlab.contracts.Contract instance",
                             type(contract).__name__)
    if not isinstance(contract.name, str) or not contract.name.isidentifier():
        raise ParameterError("contract.name", "should be a Python identifier", contract.name)
    if contract.name in _CONTRACTS and not replace and _CONTRACTS[contract.name] is not contract:
        raise ParameterError("contract", Text(f"names a contract already registered ({contract.name!r}); ",
                                              Fix("replace", True), " to replace it"), contract.name)
    _CONTRACTS[contract.name] = contract
    return contract


def unregister_contract(name: str) -> Contract:
    """Remove the contract registered as ``name``; returns it.

    For tests and notebooks that register a contract of their own for a while.

    Examples
    --------
    >>> unregister_contract("nope")
    Traceback (most recent call last):
    ...
    rewardlab.core.errors.ParameterError: `name` should be a registered contract. Received 'nope'.
    """
    if name not in _CONTRACTS:
        raise ParameterError("name", "should be a registered contract", name)
    return _CONTRACTS.pop(name)


def registered_contracts() -> dict[str, Contract]:
    """The registered contracts, by name, in registration order."""
    return dict(_CONTRACTS)


def get_contract(contract: str | Contract) -> Contract:
    """The contract registered as ``contract`` (a :class:`Contract` is returned as is).

    Examples
    --------
    >>> get_contract("atari")  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    rewardlab.core.errors.ParameterError: `contract` should be one of the registered contracts 'kanachan', ...
    """
    if isinstance(contract, Contract):
        return contract
    if isinstance(contract, str):
        claimed = next((c for c in _FILE_CONTRACTS.values() if c.name == contract), None)
        if claimed is not None and contract not in _CONTRACTS:
            return claimed
    if not isinstance(contract, str) or contract not in _CONTRACTS:
        raise ParameterError("contract", "should be one of the registered contracts "
                             + ", ".join(map(repr, _CONTRACTS)), contract,
                             hint="Register it with rewardlab.contracts.register_contract(...) first.")
    return _CONTRACTS[contract]


def contract_for(frame, contract: str | Contract | None = None, *,
                 spec: FrameSpec | None = None) -> tuple[Contract, FrameSpec | None]:
    """The contract a frame's plug-ins get, and the frame's spec.

    ``contract`` when given (a name or a :class:`Contract`); otherwise the
    contract named by the frame's spec (:func:`rewardlab.sources.registry.spec_of`:
    ``spec``, the spec attached to the frame, or a registered spec its columns
    match).

    Returns
    -------
    (Contract, FrameSpec or None)
        The spec is None when ``contract`` was given and no spec describes the
        frame (a contract that needs one says so when it builds its arrays).

    Raises
    ------
    ParameterError
        ``contract`` names no registered contract.
    SpecError
        No contract given and the frame has no spec, or its spec names no contract.

    Examples
    --------
    >>> import polars as pl
    >>> contract_for(pl.DataFrame({"x": [1]}), "steps")[0].name
    'steps'
    """
    if contract is not None:
        chosen = get_contract(contract)
        try:
            found = spec_of(frame, spec)
        except SpecError:
            found = None
        return chosen, found
    found = spec_of(frame, spec)
    if found.contract is None:
        raise SpecError(f"the frame's spec {found.name!r} names no plug-in contract, so rewardlab "
                        "cannot tell what a plug-in receives",
                        hint="Pass contract= one of " + ", ".join(map(repr, _CONTRACTS))
                        + ", or declare FrameSpec(..., contract=...)")
    return get_contract(found.contract), found


def register_file_contract(contract: Contract) -> Contract:
    """Register a contract that a plug-in *file* chooses, by defining ``contract.defined_by`` at its top level.

    The contracts of :func:`register_contract` are chosen by the data (its
    spec's ``contract``, or ``contract=``); a file contract is chosen by the
    plug-in file itself, whatever the data: a file defining ``RewardManager``
    is a reward manager (:data:`rewardlab.contracts.manager.MANAGER`).
    :func:`get_contract` finds it by its name; :func:`claimed_contract` by a
    file's top-level names.

    Examples
    --------
    >>> from rewardlab.contracts.manager import MANAGER
    >>> register_file_contract(MANAGER) is get_contract("manager")
    True
    """
    marker = getattr(contract, "defined_by", None)
    if not isinstance(contract, Contract) or not isinstance(marker, str) or not marker.isidentifier():
        raise ParameterError("contract", "should be a rewardlab.contracts.Contract whose `defined_by` names the "
                             "top-level definition that marks its plug-in files", contract)
    if contract.name in _CONTRACTS:
        raise ParameterError("contract", "names a contract already registered for data", contract.name)
    _FILE_CONTRACTS[marker] = contract
    return contract


def file_contracts() -> dict[str, Contract]:
    """The contracts plug-in files choose, by the top-level name that marks them.

    Examples
    --------
    >>> file_contracts()
    {'RewardManager': <rewardlab contract 'manager': RewardManager().get_reward(agent, state, joint_action)>}
    """
    return dict(_FILE_CONTRACTS)


def claimed_contract(names) -> Contract | None:
    """The file contract a plug-in file chooses by its top-level ``names`` (None: the data chooses).

    Examples
    --------
    >>> claimed_contract({"RewardManager", "np"}).name
    'manager'
    >>> claimed_contract({"get_reward"}) is None
    True
    """
    names = set(names)
    return next((c for marker, c in _FILE_CONTRACTS.items() if marker in names), None)


from rewardlab.contracts.manager import MANAGER  # noqa: E402 - the built-in file contract

register_file_contract(MANAGER)
