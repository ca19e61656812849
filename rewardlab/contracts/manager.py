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

from dataclasses import dataclass
import numpy as np

from rewardlab.contracts.base import Contract, Recombination

__all__ = ["ManagerContract", "MANAGER", "ManagerViolation", "check_returns", "check_pairs", "pair_violation",
           "RESULT_RULES"]

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
    bad = [t for t in set(map(type, rewards)) if not issubclass(t, _REAL) or issubclass(t, _BOOL)]
    if bad:
        i = _first(rewards, lambda r: type(r) not in bad)
        return ManagerViolation("reward_type", f"returned reward {type(rewards[i]).__name__} "
                                f"{_echo(rewards[i])}, not a real number", i)
    bad = [t for t in set(map(type, finished)) if not issubclass(t, _BOOL)]
    if bad:
        i = _first(finished, lambda f: type(f) not in bad)
        return ManagerViolation("finished_type", f"returned finished {type(finished[i]).__name__} "
                                f"{_echo(finished[i])}, not a bool", i)
    try:
        values = np.fromiter(rewards, np.float64, len(rewards))  # the types are checked: real numbers only
    except OverflowError:  # an int too large for float64
        i = _first(rewards, _fits_float)
        return ManagerViolation("reward_finite", f"returned reward {_echo(rewards[i])}, not a finite float64", i)
    if values.size and not np.isfinite(values).all():
        i = int(np.argmax(~np.isfinite(values)))
        return ManagerViolation("reward_finite", f"returned reward {rewards[i]!r}, not a finite number", i)
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
