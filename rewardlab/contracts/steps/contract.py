"""The steps contract: ``get_reward(data, contiguous)`` on a step table's TensorDict in TorchRL's layout.

What the plug-in receives (:class:`~rewardlab.contracts.steps.arrays.StepsArrays`):
the spec's state columns and its numeric extra columns (``action``, ...) at
the root, ``("next", state)`` for each state's following value (after an
episode's last step its final state where the data keeps it, else the
state's ``pad``), ``("next", "done")``,
``("next", "terminated")`` and ``("next", "truncated")``.  What it must give
back: ``("next", "reward")``, a finite float16/32/64 CPU tensor of shape
``[B]`` or ``[B, 1]``; every other field unchanged except
``("next", "done")``, which it may set (to cut a trajectory early) but must
leave True wherever an episode ends (terminated or truncated).

Optionally, reward terms: a plug-in whose reward is a sum of named parts may
write each beside the reward, ``data["next", "reward_terms", NAME] = tensor``
(NAME matching ``[A-Za-z_][A-Za-z0-9_]*``; a finite float16/32/64 CPU tensor of
shape ``[B]`` or ``[B, 1]``, like the reward; the same names on every call).
rewardlab checks them like the reward (rules ``term_shape``, ``term_dtype``,
``term_not_finite``, ``term_names_vary``, ...: :func:`rewardlab.contracts.terms.check_terms`),
keeps them as columns ``term_<plug-in>.<NAME>`` and measures them (the
``terms`` diagnostic).  They need not sum to the reward.  A trainer reads
``("next", "reward")`` and ignores the other keys; a plug-in without terms is
unchanged.  The kanachan contract accepts them the same way: kanachan's offline
replay buffer checks only ``("next", "reward")`` after ``get_reward`` and
stores the whole TensorDict, so terms ride along into its training batches
(memory: one value per term and row) and its losses never read them.

The entry point is called as kanachan's is, ``get_reward(data, contiguous)``:
``contiguous`` is True only in the ``episodes`` batch mode with
``contiguous=True`` (whole episodes, in order), so a plug-in can rely on
episode order there and must not elsewhere, and the same plug-in text works
with either contract.

Examples
--------
>>> from rewardlab.contracts import get_contract
>>> get_contract("steps").signature
'get_reward(data, contiguous)'
"""

from __future__ import annotations

import numpy as np
import polars as pl

from rewardlab.contracts.checks import Violation, check_done_form, key_text
from rewardlab.contracts.base import Contract, Recombination
from rewardlab.contracts.steps.arrays import StepsArrays
from rewardlab.core.spec import FrameSpec

__all__ = ["StepsContract", "STEPS"]


class StepsContract(Contract):
    """TorchRL's key layout for generic step tables (see the module docstring).

    Examples
    --------
    >>> STEPS.reward_key, STEPS.done_key
    (('next', 'reward'), ('next', 'done'))
    """

    name = "steps"
    parameters = ("data", "contiguous")
    conventions = ()
    description = ("generic step tables: get_reward(data, contiguous) on TorchRL's layout "
                   "(states at the root, ('next', state), done / terminated / truncated)")
    caller = "a trainer using the steps contract"
    trainer = "a trainer using the steps contract"

    def arrays(self, frame: pl.DataFrame, spec: FrameSpec | None) -> StepsArrays:
        """:class:`StepsArrays` of the frame, validated against ``spec``."""
        return StepsArrays(frame, spec)

    def in_keys(self, arrays: StepsArrays) -> tuple:
        """Every key of the TensorDict but ``("next", "done")``."""
        return tuple(k for k in arrays.keys if k != self.done_key)

    def episode_flags(self, arrays: StepsArrays) -> np.ndarray:
        """True on each episode's last row (terminated or truncated)."""
        return arrays.episode_end

    def done_flags(self, arrays: StepsArrays, rows) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """``(done, terminated, truncated)`` of ``rows``: ``done`` is handed to the plug-in."""
        terminated = np.ascontiguousarray(arrays.terminated[rows])
        truncated = np.ascontiguousarray(arrays.truncated[rows])
        return terminated | truncated, terminated, truncated

    def padding_probes(self, arrays: StepsArrays) -> list[StepsArrays]:
        """Two copies whose padded next states are above and below every value of the state (see
        :meth:`StepsArrays.probe <rewardlab.contracts.steps.arrays.StepsArrays.probe>`); none when no
        last step lacks its final state."""
        if not arrays.missing_final.any() or not arrays.states:
            return []
        return [arrays.probe(high=True), arrays.probe(high=False)]

    def missing_finals(self, arrays: StepsArrays) -> np.ndarray:
        """:attr:`StepsArrays.missing_final <rewardlab.contracts.steps.arrays.StepsArrays.missing_final>`."""
        return arrays.missing_final

    def padded_states(self, arrays: StepsArrays) -> tuple[str, ...]:
        """The ``("next", state)`` keys that hold padding on some last step."""
        return tuple(key_text(("next", name)) for name in arrays.states) if arrays.missing_final.any() else ()

    def recombination(self, spec: FrameSpec | None = None) -> Recombination:
        """Recorded states x recorded (action, next state) pairs, each row a one-step episode handed as
        truncated (:mod:`rewardlab.contracts.steps.recombine`); not where the spec declares no state.

        Examples
        --------
        >>> STEPS.recombination().possible
        True
        """
        if spec is not None and not spec.states:
            return Recombination(False, f"the frame's spec ({spec.name}) declares no state columns, so there is "
                                 "no (state, action, next state) to recombine")
        return Recombination(True, "recorded states x recorded (action, next state) pairs, each row a one-step "
                             "episode handed as truncated (rewardlab.contracts.steps.recombine)")

    def check_done(self, done, ends: np.ndarray, terminated: np.ndarray,
                   truncated: np.ndarray) -> Violation | None:
        """``done`` is a CPU bool ``[B]`` tensor and True wherever an episode ends.

        Rules: those of :func:`rewardlab.contracts.checks.check_done_form`, and
        ``done_last_step``.

        Examples
        --------
        >>> import torch
        >>> ends = np.array([False, True]); no = np.zeros(2, bool)
        >>> STEPS.check_done(torch.tensor([True, True]), ends, ends, no) is None
        True
        >>> STEPS.check_done(torch.tensor([False, False]), ends, ends, no).row
        1
        """
        bad_form = check_done_form(done, int(ends.shape[0]))
        if bad_form is not None:
            return bad_form
        missed = ends & ~done.detach().numpy()
        if not missed.any():
            return None
        row = int(np.argmax(missed))
        flag = "terminated" if terminated[row] else "truncated"
        n_missed = int(np.count_nonzero(missed))
        return Violation(
            "done_last_step",
            f"{key_text(self.done_key)} is False on the last step of an episode (batch row {row}, "
            f"where {key_text(('next', flag))} is True; {n_missed} such row"
            f"{'s' if n_missed > 1 else ''} in the batch): a plug-in may set done earlier, to cut a "
            "trajectory, but never clear it where an episode ends, or returns and value targets "
            "would run on into the next episode; leave it, or OR your own flag into it: "
            f'`data["next", "done"] = data["next", "done"] | my_flag`', row)


#: The steps contract (registered as ``"steps"``).
STEPS = StepsContract()
