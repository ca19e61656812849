"""The reward-manager contract: PRLT's ``Reset`` / ``GetReward`` as a Python class, and the checks of what it returns.

A manager file defines a class ``RewardManager``, constructed with no
arguments, with two methods:

``reset()``
    Called at the start of every trial (episode): clears the manager's
    internal state.
``get_reward(agent, state, joint_action) -> (reward, finished)``
    Called after every joint step once per agent, in agent order (so a
    manager may compute shared quantities, e.g. the global reward, on agent
    0's call, as PRLT's Bar Problem manager does on agent 1's).

============  =================================================================
``agent``     the agent's 0-based position in the step's agent order
              (ascending agent id)
``state``     a dict from each of the step's state and extra columns to a
              NumPy array (read-only) with one entry (or row) per agent, in
              agent order; one dict per step, shared by its agents' calls
``joint_action``  a 1-D NumPy array (read-only) of every agent's action at
              this step, in agent order
``reward``    a finite real number (``float``, ``int``, a NumPy real scalar)
``finished``  a ``bool`` (or ``numpy.bool_``): the trial is over; the same
              for every agent of a step
============  =================================================================

This module holds the contract (:data:`MANAGER`, registered by
:mod:`rewardlab.contracts.registry` as a contract a file claims by defining
``RewardManager``) and the pure checks of a trial's returns
(:func:`check_returns`); the loop that calls a manager lives in
:mod:`rewardlab.plugins.managers`.

Examples
--------
>>> MANAGER.signature
'RewardManager().get_reward(agent, state, joint_action)'
>>> rewards, finished = check_returns([(1.0, False), (2, False)], agents=2)
>>> rewards.tolist(), finished.tolist()
([1.0, 2.0], [False, False])
"""

from __future__ import annotations

import marshal
from dataclasses import dataclass

import numpy as np

from rewardlab.contracts.base import Contract, Recombination
from rewardlab.core.errors import ParameterError

__all__ = ["ManagerContract", "MANAGER", "ManagerViolation", "check_returns", "check_pairs", "pair_violation",
           "RESULT_RULES", "exact_floats", "exact_bools", "check_manager_options"]


def check_manager_options(*, batch_mode: str, batch_size, contiguous, convention) -> None:
    """Refuse the batch options a reward manager has no use for: it is called per agent after every joint step
    of whole trials, never on batches.

    Examples
    --------
    >>> check_manager_options(batch_mode="episodes", batch_size=None, contiguous=None, convention=None)
    >>> check_manager_options(batch_mode="sequential", batch_size=None, contiguous=None,
    ...                       convention=None)  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    rewardlab.core.errors.ParameterError: `batch_mode` does not apply to reward managers...
    """
    why = "a reward manager is called per agent after every joint step of whole trials (PRLT's way)"
    if batch_mode != "episodes" or batch_size is not None or contiguous:
        raise ParameterError("batch_mode", f"does not apply to reward managers: {why}",
                             batch_mode if batch_mode != "episodes" else (batch_size or contiguous),
                             hint="Leave the batch options at their defaults.")
    if convention is not None:
        raise ParameterError("convention", f"does not apply to reward managers: {why}", convention)

#: The rules :func:`check_returns` applies, by name.
RESULT_RULES = {
    "result_type": "get_reward returns a (reward, finished) tuple (any object that unpacks into two items is taken)",
    "result_length": "the tuple has exactly two items",
    "reward_type": "reward is a real number (float, int or a NumPy real scalar; not bool)",
    "reward_finite": "reward is finite (not NaN or infinite)",
    "finished_type": "finished is a bool (or numpy.bool_)",
    "finished_consistent": "finished is the same for every agent of a step",
}

_REAL = (float, int, np.floating, np.integer)
_BOOL = (bool, np.bool_)


class ManagerContract(Contract):
    """PRLT's reward-manager contract: a ``RewardManager`` class called per agent after each joint step.

    It is not a TensorDict contract: rewardlab's manager runner
    (:mod:`rewardlab.plugins.managers`) calls it, one trial at a time, in
    a child process.  A plug-in file is this contract's when it defines
    ``RewardManager`` at its top level (:attr:`defined_by`), whatever
    contract the data's spec names.

    Examples
    --------
    >>> MANAGER.name, MANAGER.defined_by, MANAGER.sample_arguments()
    ('manager', 'RewardManager', ())
    """

    name = "manager"
    entry_point = "RewardManager"
    #: How the class is constructed: with no arguments.
    parameters = ()
    #: The methods a manager defines, with their parameters (``self`` left out).
    methods = {"reset": (), "get_reward": ("agent", "state", "joint_action")}
    #: The top-level name that makes a plug-in file this contract's.
    defined_by = "RewardManager"
    description = "PRLT's reward manager: reset() per trial, get_reward(agent, state, joint_action) per agent"
    caller = "rewardlab's manager runner"
    trainer = "the agents"
    mode_settings = None

    @property
    def signature(self) -> str:
        """``RewardManager().get_reward(agent, state, joint_action)``."""
        return f"{self.entry_point}().get_reward({', '.join(self.methods['get_reward'])})"

    def call(self, function, data, contiguous: bool):
        raise NotImplementedError("a reward manager is called by rewardlab.plugins.managers, not on batches")

    def sample_arguments(self) -> tuple:
        """The constructor's arguments: none."""
        return ()

    def recombination(self, spec=None) -> Recombination:
        return Recombination(False, "a reward manager is called on whole trials of joint steps, "
                             "not on single (state, action, next state) transitions")


#: The reward-manager contract.
MANAGER = ManagerContract()


@dataclass(frozen=True)
class ManagerViolation:
    """One broken rule of a trial's returns: the rule, what was wrong and where.

    Attributes
    ----------
    rule : str
        A key of :data:`RESULT_RULES`.
    message : str
        What was returned, echoed.
    index : int
        The call's position in the trial (``step * agents + agent``).

    Examples
    --------
    >>> v = check_returns([(1.0, False), 3.0], agents=2)
    >>> v.rule, v.index
    ('result_type', 1)
    """

    rule: str
    message: str
    index: int


def _echo(value, limit: int = 60) -> str:
    try:
        return repr(value)[:limit]
    except BaseException as exc:  # noqa: BLE001 - the manager's object
        return f"<repr() raised {type(exc).__name__}>"


def _fits_float(value) -> bool:
    try:
        float(value)
    except OverflowError:
        return False
    return True


def _first(values, good) -> int:
    return next(i for i, v in enumerate(values) if not good(v))


def pair_violation(result, index: int = 0) -> ManagerViolation | None:
    """The broken rule when ``result`` is not a ``(reward, finished)`` pair; None when it is one.

    A tuple, or any other object that unpacks into exactly two items (a list
    of two), is a pair; its items are checked by :func:`check_pairs`.

    Examples
    --------
    >>> pair_violation((1.0, False)) is None
    True
    >>> pair_violation(None, 4)
    ManagerViolation(rule='result_type', message='returned NoneType None, not a (reward, finished) tuple', index=4)
    """
    try:
        _, _ = result
    except TypeError:
        return ManagerViolation("result_type", f"returned {type(result).__name__} {_echo(result)}, "
                                "not a (reward, finished) tuple", index)
    except ValueError:
        try:
            size = f"{len(result)} items"
        except TypeError:
            size = "other than two items"
        return ManagerViolation("result_length", f"returned a {type(result).__name__} of {size}, not (reward, "
                                "finished)", index)
    return None


#: marshal's encoding (format version 2: no back-references) of a list: a type code and a 4-byte length, then items.
_LIST_HEAD = 5
#: An exact ``float`` item in that encoding: the code ``g`` and the little-endian IEEE double, 9 bytes.
_FLOAT_CODE, _FLOAT_SIZE = ord("g"), 9


def exact_floats(values: list) -> np.ndarray | None:
    """``values`` as float64 when every item is exactly a ``float`` (no subclass); None otherwise.

    One pass in C instead of a type test and a conversion per item: marshal
    (format version 2) writes a list of ``n`` exact floats as a 5-byte header
    and ``n`` items of 9 bytes, the code ``g`` and the double, and writes any
    other object (an int, a bool, a float subclass such as ``numpy.float64``)
    with another code or refuses it.  Reading the items at 9-byte strides, a
    ``g`` at an item's start proves the item is a float of 9 bytes, so the
    next item starts 9 bytes on: all ``n`` codes ``g`` prove all ``n`` items
    exact floats.  None sends the caller to its item-by-item checks.

    Examples
    --------
    >>> exact_floats([1.5, float("nan")]).tolist()
    [1.5, nan]
    >>> exact_floats([1.5, 2]) is None, exact_floats([np.float64(1.5)]) is None, exact_floats([]) is None
    (True, True, True)
    """
    n = len(values)
    if not n or type(values[0]) is not float:  # not worth a try
        return None
    try:
        data = marshal.dumps(values, 2)
    except Exception:  # noqa: BLE001 - an object marshal refuses: not a float
        return None
    if len(data) != _LIST_HEAD + _FLOAT_SIZE * n:
        return None
    codes = np.frombuffer(data, np.uint8, _FLOAT_SIZE * n, _LIST_HEAD)[::_FLOAT_SIZE]
    if not (codes == _FLOAT_CODE).all():
        return None
    return np.ndarray((n,), "<f8", data, _LIST_HEAD + 1, (_FLOAT_SIZE,)).astype(np.float64)


def exact_bools(values: list) -> np.ndarray | None:
    """``values`` as a bool array when every item is exactly ``True`` or ``False``; None otherwise.

    One pass in C, as :func:`exact_floats`: marshal (format version 2) writes
    ``True`` and ``False`` as the one-byte codes ``T`` and ``F`` and every
    object as at least one byte, so a list of ``n`` items written in ``5 +
    n`` bytes of which ``n`` are ``T`` or ``F`` after the header holds only
    ``True`` and ``False`` (``numpy.bool_`` is written otherwise: None).

    Examples
    --------
    >>> exact_bools([False, True]).tolist()
    [False, True]
    >>> exact_bools([False, 0]) is None, exact_bools([np.False_]) is None
    (True, True)
    """
    n = len(values)
    if not n or type(values[0]) is not bool:
        return None
    try:
        data = marshal.dumps(values, 2)
    except Exception:  # noqa: BLE001 - an object marshal refuses: not a bool
        return None
    if len(data) != _LIST_HEAD + n:
        return None
    trues = data.count(b"T", _LIST_HEAD)
    if trues + data.count(b"F", _LIST_HEAD) != n:
        return None
    return np.frombuffer(data, np.uint8, n, _LIST_HEAD) == ord("T") if trues else np.zeros(n, bool)


def check_pairs(rewards: list, finished: list, *, agents: int) -> tuple[np.ndarray, np.ndarray] | ManagerViolation:
    """Check a trial's rewards and finished flags (the pairs ``get_reward`` returned, split) and make them arrays.

    Parameters
    ----------
    rewards, finished : list
        The two items of each return, in call order: ``steps * agents``
        items, step by step, agents in order within a step.
    agents : int
        Agents per step.

    Returns
    -------
    (numpy.ndarray of float64 [S * n], numpy.ndarray of bool [S * n]) or ManagerViolation
        The arrays, or the first broken rule (rules in the order of :data:`RESULT_RULES`, then the earliest call).

    Examples
    --------
    >>> check_pairs([1.0, 2.0], [True, False], agents=2).rule
    'finished_consistent'
    >>> check_pairs([float("nan")], [False], agents=1).message
    'returned reward nan, not a finite number'
    """
    values = exact_floats(rewards)  # the common case, checked and converted in one pass
    if values is None:
        bad = [t for t in set(map(type, rewards)) if not issubclass(t, _REAL) or issubclass(t, _BOOL)]
        if bad:
            i = _first(rewards, lambda r: type(r) not in bad)
            return ManagerViolation("reward_type", f"returned reward {type(rewards[i]).__name__} "
                                    f"{_echo(rewards[i])}, not a real number", i)
    flags = exact_bools(finished)
    if flags is None:
        bad = [t for t in set(map(type, finished)) if not issubclass(t, _BOOL)]
        if bad:
            i = _first(finished, lambda f: type(f) not in bad)
            return ManagerViolation("finished_type", f"returned finished {type(finished[i]).__name__} "
                                    f"{_echo(finished[i])}, not a bool", i)
    if values is None:
        try:
            values = np.fromiter(rewards, np.float64, len(rewards))  # the types are checked: real numbers only
        except OverflowError:  # an int too large for float64
            i = _first(rewards, _fits_float)
            return ManagerViolation("reward_finite", f"returned reward {_echo(rewards[i])}, not a finite float64", i)
    if values.size and not np.isfinite(values).all():
        i = int(np.argmax(~np.isfinite(values)))
        return ManagerViolation("reward_finite", f"returned reward {rewards[i]!r}, not a finite number", i)
    if flags is None:
        flags = np.array(finished, dtype=bool) if any(finished) else np.zeros(len(finished), bool)
    if agents > 1 and flags.size and flags.any():
        grid = flags.reshape(-1, agents)
        odd = grid != grid[:, :1]
        if odd.any():
            step, agent = divmod(int(np.argmax(odd.ravel())), agents)
            return ManagerViolation(
                "finished_consistent", f"returned finished {bool(grid[step, agent])} here but "
                f"{bool(grid[step, 0])} for the step's first agent: a trial ends for every agent at once",
                step * agents + agent)
    return values, flags


def check_returns(results: list, *, agents: int) -> tuple[np.ndarray, np.ndarray] | ManagerViolation:
    """:func:`pair_violation` on each of a trial's returns, then :func:`check_pairs`: the rules on a list of returns.

    Examples
    --------
    >>> check_returns([(1.0, False), (2, False)], agents=2)[0].tolist()
    [1.0, 2.0]
    >>> check_returns([(1.0, False, 0)], agents=1).message
    'returned a tuple of 3 items, not (reward, finished)'
    """
    for i, result in enumerate(results):
        bad = pair_violation(result, i)
        if bad is not None:
            return bad
    return check_pairs([r[0] for r in results], [r[1] for r in results], agents=agents)
