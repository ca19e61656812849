"""The round trip of a reward-manager file: what a family exporting a ``RewardManager`` checks before it writes.

A manager file (PRLT's form, :mod:`rewardlab.contracts.manager`) is called
per agent over whole trials, so it has no batch modes to compare: the file
runs once through :func:`~rewardlab.plugins.managers.apply_managers` (in the
isolated child) and its rewards and dones are compared bit for bit with the
library's (:func:`~rewardlab.families.roundtrip.compare_bits`), then
:func:`~rewardlab.plugins.manager_check.check_manager` runs on whole trials
spread over the frame.  :func:`~rewardlab.families.roundtrip.family_roundtrip`
is the same check for the TensorDict contracts.

Examples
--------
>>> from types import SimpleNamespace
>>> str(ManagerRoundTrip(4, (0, 0), 0.0, SimpleNamespace(ok=True), 4, 1, 1)).startswith("round trip: identical")
True
"""

from __future__ import annotations

import dataclasses

import numpy as np
import polars as pl

from rewardlab.analysis.joint import joint_view
from rewardlab.core import columns
from rewardlab.core.errors import ParameterError, check_int
from rewardlab.core.spec import FrameSpec
from rewardlab.families.roundtrip import CHECK_ROWS, compare_bits
from rewardlab.plugins.manager_check import ManagerCheckReport, check_manager
from rewardlab.plugins.managers import apply_managers, manager_items
from rewardlab.sources.registry import spec_of

__all__ = ["ManagerRoundTrip", "manager_roundtrip"]


@dataclasses.dataclass(frozen=True, eq=False)
class ManagerRoundTrip:
    """A reward-manager file compared bit for bit with the library on a joint frame, and check-plugin on it.

    Attributes
    ----------
    rows : int
        Agent-steps compared.
    differing : (int, int)
        Rewards differing bit for bit, dones differing.
    largest : float
        The largest ``|file - library|`` reward difference.
    report : ManagerCheckReport
        :func:`~rewardlab.plugins.manager_check.check_manager` on ``checked_rows`` rows of whole trials.
    checked_rows, checked_trials, trials : int

    Examples
    --------
    >>> from types import SimpleNamespace
    >>> rt = ManagerRoundTrip(4, (0, 0), 0.0, SimpleNamespace(ok=True), 4, 1, 1)
    >>> rt.ok, str(rt).startswith("round trip: identical")
    (True, True)
    """

    rows: int
    differing: tuple
    largest: float
    report: ManagerCheckReport
    checked_rows: int
    checked_trials: int
    trials: int

    @property
    def identical(self) -> bool:
        """Every reward bit for bit and every done equal."""
        return self.differing == (0, 0)

    @property
    def ok(self) -> bool:
        """Identical and passing check-plugin."""
        return self.identical and bool(self.report.ok)

    def __str__(self) -> str:
        if self.identical:
            same = f"identical to rewardlab's rewards and dones on all {self.rows:,} agent-steps"
        else:
            same = (f"DIFFERS from rewardlab ({self.differing[0]:,} rewards, {self.differing[1]:,} dones of "
                    f"{self.rows:,} agent-steps; largest |difference| {self.largest!r})")
        check = ("check-plugin: PASS" if self.report.ok else "check-plugin: FAIL") + \
            f" (on {self.checked_rows:,} agent-steps, {self.checked_trials:,} whole trials of {self.trials:,})"
        text = f"round trip: {same}; {check}"
        return text if self.report.ok else text + "\n" + str(self.report)


def manager_roundtrip(path, frame: pl.DataFrame, expected: tuple[np.ndarray, np.ndarray], *,
                      spec: FrameSpec | None = None, check_rows: int = CHECK_ROWS) -> ManagerRoundTrip:
    """Apply a reward-manager file to a joint frame, compare with ``expected`` bit for bit, run check-plugin.

    A manager runs on whole trials (no batch modes): the file goes once
    through :func:`~rewardlab.plugins.managers.apply_managers` (in a child
    process), and :func:`~rewardlab.plugins.manager_check.check_manager`
    runs on about ``check_rows`` rows of whole trials spread evenly over the
    frame (every trial when the frame is no bigger).

    Parameters
    ----------
    path : str or Path
        The manager file.
    frame : polars.DataFrame
        A joint frame.
    expected : (float64 array ``[R]``, bool array ``[R]``)
        The library's rewards and dones, in frame row order.
    spec : FrameSpec, optional
        ``frame``'s spec, when it carries none (its episodes are one agent's steps of a trial, its ``agent``
        the agent column).
    check_rows : int

    Returns
    -------
    ManagerRoundTrip

    Examples
    --------
    >>> from rewardlab.domains.el_farol import ElFarolFamily
    >>> fam = ElFarolFamily.from_preset("difference")
    >>> prepared = fam.prepare(frame)  # doctest: +SKIP
    >>> manager_roundtrip("d.py", frame, (fam.evaluate(prepared), prepared.done("all"))).ok  # doctest: +SKIP
    True
    """
    check_rows = check_int("check_rows", check_rows, low=1, rule="should be an integer >= 1")
    items = manager_items(path)
    if items is None or len(items) != 1:
        raise ParameterError("path", "should be one reward-manager file (defining RewardManager)", path)
    lib_reward, lib_done = (np.asarray(a) for a in expected)
    if lib_reward.shape != (frame.height,) or lib_done.shape != (frame.height,):
        raise ParameterError("expected", f"should be two arrays of {frame.height} rows (rewards, dones)",
                             (lib_reward.shape, lib_done.shape))
    name = items[0][1]
    applied = apply_managers(frame, items, spec=spec)
    differing_rewards, differing_dones, largest = compare_bits(
        applied[columns.reward_column(name)].to_numpy(), applied[columns.done_column(name)].to_numpy(),
        lib_reward.astype(np.float64), lib_done.astype(bool))
    view = joint_view(frame, spec=spec_of(frame) if spec is None else spec)
    trials = int(view.episode[-1]) + 1 if view.steps else 0
    per_trial = max(1, frame.height // max(1, trials))
    picked = np.unique(np.linspace(0, max(trials - 1, 0), max(1, min(trials, check_rows // per_trial)))
                       .round().astype(np.int64)) if trials else np.zeros(0, np.int64)
    if picked.size == trials:
        sample = frame
    else:
        sample = frame[np.sort(view.rows[np.isin(view.episode, picked)].ravel())]
    report = check_manager(sample, items[0], spec=spec)
    return ManagerRoundTrip(frame.height, (differing_rewards, differing_dones), largest, report, sample.height,
                            int(picked.size), trials)
