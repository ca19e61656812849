"""Exact, mergeable sums of a plug-in's rewards, behind the reward-scale warning of a dataset run.

A run over a dataset folder computes them per part where the part's rewards
are made (the plug-in process, one per worker), sends them up with the
rewards, and merges them in the command's process: the warning's figures are
those of the whole dataset, and the command's one interpreter does a few
additions per part instead of a pass over every reward.

Examples
--------
>>> import numpy as np
>>> a = ScaleSums.of(np.array([0.0, 1.0, 3.0]), np.array([False, False, True]))
>>> a.merge(ScaleSums.of(np.array([2.0]), np.array([True])))
>>> a.n, a.s, a.n_all
(3, 6.0, 4)
>>> a.result().mean
2.0
"""

from __future__ import annotations

import dataclasses
import math

import numpy as np

from rewardlab.contracts.checks import RewardScale, scale_masks

__all__ = ["ScaleSums"]


@dataclasses.dataclass
class ScaleSums:
    """Counts, sums and sums of squares of the rewards a :class:`~rewardlab.contracts.checks.RewardScale`
    describes: each batch's sums correctly rounded (``math.fsum``), the batches' sums added in the order
    they are merged, so the figures equal one sum over every reward to rounding, not bit for bit.

    ``n``, ``s``, ``q``: the rewards that carry a signal (finite, and nonzero
    or on a done step); ``n_all``, ``s_all``, ``q_all``: every finite reward.
    """

    n: int = 0
    s: float = 0.0
    q: float = 0.0
    n_all: int = 0
    s_all: float = 0.0
    q_all: float = 0.0

    @classmethod
    def of(cls, rewards: np.ndarray, dones: np.ndarray) -> "ScaleSums":
        """The sums of one batch of rewards ``[N]`` and their dones ``[N]`` (bool).

        Examples
        --------
        >>> ScaleSums.of(np.array([0.0, np.nan, 2.0]), np.array([True, False, False])).n
        2
        """
        out = cls()
        for mask, suffix in zip(scale_masks(rewards, dones), ("", "_all")):
            values = rewards[mask]
            setattr(out, "n" + suffix, int(values.size))
            values = values[values != 0]  # zeros add nothing to a correctly rounded sum: fsum skips them
            setattr(out, "s" + suffix, math.fsum(values))
            setattr(out, "q" + suffix, math.fsum(values * values))
        return out

    def merge(self, other: "ScaleSums") -> None:
        """Add ``other``'s sums to these (in place)."""
        for f in dataclasses.fields(self):
            setattr(self, f.name, getattr(self, f.name) + getattr(other, f.name))

    def result(self) -> RewardScale:
        """The mean and standard deviation (population) of both sets, as the warning reports them."""
        def ms(n, s, q):
            if not n:
                return math.nan, math.nan
            mean = s / n
            return mean, math.sqrt(max(q / n - mean * mean, 0.0))

        mean, std = ms(self.n, self.s, self.q)
        mean_all, std_all = ms(self.n_all, self.s_all, self.q_all)
        return RewardScale(mean, std, self.n, mean_all, std_all, self.n_all)
