"""What a plug-in contract is: :class:`Contract`, the one description the runner reads.

A contract says what a reward plug-in receives and must give back:

==================  ==========================================================
``entry_point``     the function the plug-in file defines (``get_reward``)
``parameters``      how it is called: ``("data", "contiguous")`` or ``("data",)``
``arrays``          how a frame becomes per-row arrays, built once per run, whose
                    ``tensordict(rows, **options)`` is the TensorDict of a batch
``in_keys``         the fields a plug-in must not change
``reward_key``      the OUT field (``("next", "reward")``)
``done_key``        the IN-OUT field (``("next", "done")``)
``done_flags``      the per-row flags the done rule reads; the first is the
                    done the plug-in receives
``check_done``      what ``done`` may be after a call
``conventions``     the ways the contract can build TensorDicts (first: the
                    default), or none; ``convention=`` picks one
``padding_probes``  copies of the arrays whose padded next states (after
                    last steps whose final state the data lacks) hold other
                    values: ``check_plugin`` runs them to tell whether a
                    plug-in reads padding (none by default), and
                    ``missing_finals`` which last steps lack one
``recombination``   whether a plug-in can be evaluated on recombined
                    transitions ``(s_i, a_j, s'_j)`` (EPIC), and why not
==================  ==========================================================

The reward's post-conditions (:func:`rewardlab.contracts.checks.check_reward`) and the
IN-field checks (:func:`~rewardlab.contracts.checks.check_in_fields`,
:func:`~rewardlab.contracts.checks.changed_in_place`) are shared by every contract.
A new contract subclasses :class:`Contract` and is registered with
:func:`rewardlab.contracts.register_contract`.

Examples
--------
>>> from rewardlab.contracts import get_contract
>>> get_contract("kanachan").signature
'get_reward(data, contiguous)'
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Protocol, runtime_checkable

import numpy as np
import polars as pl

from rewardlab.contracts.checks import DONE_KEY, REWARD_KEY, Violation, check_reward
from rewardlab.core.spec import FrameSpec
from rewardlab.core.errors import ParameterError, check_choice

__all__ = ["Contract", "ContractArrays", "Recombination"]


@dataclass(frozen=True)
class Recombination:
    """Whether a contract's plug-ins can be evaluated on recombined transitions, and why not.

    A recombined transition ``(s_i, a_j, s'_j)`` pairs a recorded state with another row's
    recorded action and next state (EPIC's sample-based canonicalization,
    :mod:`rewardlab.analysis.epic`): it only makes sense where a reward is a function of
    ``(state, action, next state)``.

    Attributes
    ----------
    possible : bool
    reason : str
        Why not (a sentence), or what is recombined when possible.

    Examples
    --------
    >>> Recombination(False, "no states").possible
    False
    """

    possible: bool
    reason: str = ""



@runtime_checkable
class ContractArrays(Protocol):
    """The per-row arrays a contract builds from a frame once per run.

    Attributes
    ----------
    n : int
        Rows (transitions).

    Examples
    --------
    >>> import polars as pl
    >>> from rewardlab.contracts import get_contract
    >>> spec = FrameSpec(name="two_steps", episode=("e",))
    >>> arrays = get_contract("steps").arrays(pl.DataFrame({"e": [0, 0]}), spec)
    >>> isinstance(arrays, ContractArrays), arrays.n, arrays.tensordict(slice(0, 1)).batch_size
    (True, 2, torch.Size([1]))
    """

    n: int

    def tensordict(self, rows=None, **options):
        """The TensorDict a plug-in receives for ``rows`` (frame positions; a slice or int array)."""


class Contract:
    """A plug-in contract (subclass it; see the module docstring for the parts).

    Class attributes
    ----------------
    name : str
        What ``contract=`` and ``FrameSpec.contract`` call it.
    entry_point : str
        The function a plug-in file defines.
    parameters : tuple of str
        Its parameters, in call order: ``("data", "contiguous")`` or ``("data",)``.
    conventions : tuple of str
        Ways of building the TensorDicts (the first is the default); empty
        when the contract has only one, and then ``convention=`` is refused.
    reward_key, done_key : tuple of str
        The OUT and IN-OUT fields.
    description : str
        One line for messages and listings.
    caller : str
        Who calls the entry point, for messages ("kanachan").
    mode_settings : dict or None
        What each batch mode reproduces, in words, for messages.
    asks_unit_scale : bool
        True when the contract asks for rewards near mean 0 / std 1
        (kanachan's wiki advice for its trainer): only then do reports and
        runs warn about the reward scale
        (:func:`rewardlab.contracts.advice.scale_advice`).
    scale_advice : str
        Who asks for that scale, in words (for the warning).
    trainer : str
        What receives the plug-in's rewards, in words ("kanachan's trainer").

    Examples
    --------
    >>> from rewardlab.contracts import get_contract
    >>> get_contract("steps").options(None)
    {}
    """

    name: str = ""
    entry_point: str = "get_reward"
    parameters: tuple[str, ...] = ("data", "contiguous")
    conventions: tuple[str, ...] = ()
    reward_key: tuple[str, str] = REWARD_KEY
    done_key: tuple[str, str] = DONE_KEY
    description: str = ""
    caller: str = "rewardlab's runner"
    asks_unit_scale: bool = False
    scale_advice: str = ""
    trainer: str = "the trainer"
    #: What each batch mode reproduces, in words, for messages (``{contiguous}`` and
    #: ``{num_workers}`` are filled in); None: the batch modes' own (kanachan's) wording.
    mode_settings: dict[str, str] | None = {
        "episodes": "whole episodes, one per call, contiguous={contiguous}",
        "sequential": "rows in order, as a DataLoader with num_workers=0",
        "dataloader": "rows in order, as a DataLoader with num_workers={num_workers}",
        "fragments": "episode fragments, as RLlib's truncate_episodes",
        "shuffled": "a shuffling data loader (seeded)",
    }

    # --- the plug-in side -------------------------------------------------------

    @property
    def signature(self) -> str:
        """``get_reward(data, contiguous)``: how the entry point is called."""
        return f"{self.entry_point}({', '.join(self.parameters)})"

    @property
    def passes_contiguous(self) -> bool:
        """True when the entry point receives the batch's ``contiguous`` flag."""
        return "contiguous" in self.parameters

    def call(self, function, data, contiguous: bool):
        """Call the plug-in's entry point on one batch as the contract says; returns what it returned."""
        if self.passes_contiguous:
            return function(data, contiguous)
        return function(data)

    def sample_arguments(self) -> tuple:
        """Arguments to test-bind the entry point's signature with (``(None, False)``)."""
        return tuple(False if p == "contiguous" else None for p in self.parameters)

    # --- options --------------------------------------------------------------------

    @property
    def default_convention(self) -> str | None:
        """The convention runs use when none is given (None: the contract has none)."""
        return self.conventions[0] if self.conventions else None

    def options(self, convention: str | None) -> dict:
        """The keyword options of :meth:`ContractArrays.tensordict` for ``convention``.

        None is the contract's default.  A convention given to a contract that
        has none is refused, naming the contracts' difference.
        """
        if convention is None:
            return {}
        if not self.conventions:
            raise ParameterError(
                "convention", f"is not an option of the {self.name!r} contract: it builds its "
                "TensorDicts one way only (the kanachan contract's 'offline' / 'simulation' "
                "conventions are kanachan's)", convention, hint="Leave convention= out.")
        check_choice("convention", convention, self.conventions)
        return {"convention": convention}

    # --- the data side ------------------------------------------------------------

    def arrays(self, frame: pl.DataFrame, spec: FrameSpec | None) -> ContractArrays:
        """Build the frame's arrays once per run (see :class:`ContractArrays`)."""
        raise NotImplementedError

    def in_keys(self, arrays: ContractArrays) -> tuple:
        """The fields a plug-in receives and must not change."""
        raise NotImplementedError

    def episode_flags(self, arrays: ContractArrays) -> np.ndarray:
        """Bool ``[N]``, True on each episode's last row: plans batches, and is the done
        a run records where a plug-in gave none of the right form."""
        raise NotImplementedError

    def done_flags(self, arrays: ContractArrays, rows, **options) -> tuple[np.ndarray, ...]:
        """The per-row flags of ``rows`` the done rule reads (contiguous bool arrays);
        the first is the ``done`` handed to the plug-in."""
        raise NotImplementedError

    def check_done(self, done, *flags: np.ndarray) -> Violation | None:
        """Check ``data[done_key]`` after a call, given :meth:`done_flags` of the batch."""
        raise NotImplementedError

    def check_reward(self, reward, batch_size: int, *, returned=None) -> Violation | None:
        """Check ``data[reward_key]`` after a call (:func:`rewardlab.contracts.checks.check_reward`)."""
        return check_reward(reward, batch_size, returned=returned)

    def padding_probes(self, arrays: ContractArrays) -> list:
        """Copies of ``arrays`` whose padded next states hold other values, or ``[]``.

        A plug-in whose rewards change between the arrays and a probe reads
        the next state where the data lacks it (padding) and so learns from
        a made-up value: :func:`rewardlab.plugins.check.check_plugin` warns,
        naming the episodes.  The default has none (a contract whose padding
        is part of its definition, such as kanachan's).
        """
        return []

    def padded_states(self, arrays: ContractArrays) -> tuple[str, ...]:
        """The state keys a probe changes (named in the warning)."""
        return ()

    def missing_finals(self, arrays: ContractArrays) -> np.ndarray | None:
        """Bool ``[N]``: True on each episode's last row whose next state is padding because the data lacks
        the final state; None for a contract whose padding is part of it (nothing to report)."""
        return None

    def recombination(self, spec: FrameSpec | None = None) -> Recombination:
        """Whether the contract's plug-ins can be evaluated on recombined transitions of frames of ``spec``.

        A contract that can build such a batch overrides this (the steps contract, when the spec declares
        state columns); the default says it cannot.

        Examples
        --------
        >>> from rewardlab.contracts import get_contract
        >>> get_contract("kanachan").recombination().possible
        False
        """
        return Recombination(False, f"the {self.name!r} contract does not say how to build a batch of recombined "
                             "(state, action, next state) transitions")

    def locator_columns(self, spec: FrameSpec | None) -> tuple[tuple[str, str], ...] | None:
        """``(column, label)`` pairs that describe a row in messages (None: the runner's default).

        By default the spec's episode keys, agent and step, each labelled by its name.
        """
        if spec is None:
            return None
        names = (*spec.episode, spec.agent, spec.step)
        return tuple((c, c) for c in dict.fromkeys(c for c in names if c is not None))

    def __repr__(self) -> str:
        return f"<rewardlab contract {self.name!r}: {self.signature}>"

