"""What the El Farol tuner shows: its results, one week opened, and the helpers they are computed with.

:class:`ElFarolResults` (one reward kind on every (week, agent)), :class:`WeekDetail` (one joint step),
:func:`agent_moments` (each agent's :class:`~rewardlab.analysis.moments.Moments`, vectorized) and
:func:`joint_spec` (how a recorded joint table forms episodes).  The session is
:class:`rewardlab.sessions.ElFarolSession`.

Examples
--------
>>> agent_moments(np.array([[0.0, 1.0], [2.0, 1.0]]))[0].mean
1.0
"""

from __future__ import annotations

import dataclasses

import numpy as np
import polars as pl

from rewardlab.analysis.alignment import AlignmentResult
from rewardlab.analysis.joint import JointView
from rewardlab.analysis.moments import Moments
from rewardlab.core.errors import ParameterError, SpecError
from rewardlab.core.spec import FrameSpec
from rewardlab.domains.el_farol import SPEC, BarSetting
from rewardlab.sources.registry import spec_of

__all__ = ["ElFarolResults", "WeekDetail", "agent_moments", "joint_spec", "constants_table"]


@dataclasses.dataclass(frozen=True, eq=False)
class ElFarolResults:
    """One El Farol reward with the session's parameters, on every (week, agent) of the joint actions.

    Attributes
    ----------
    kind : str
        ``"G"``, ``"local"``, ``"D"`` or ``"WL"``.
    setting : BarSetting
        Agents, nights and capacity.
    family : ElFarolFamily
        The family with the session's parameters (what :meth:`ElFarolSession.export` writes).
    view : JointView
        The joint actions (``view.actions``: ``[S, n]``, ``S`` weeks over every episode).
    rewards : float64 ``[S, n]``
        Agent ``i``'s reward in week ``s``.
    global_reward : float64 ``[S]``
        ``G`` of each week.
    attendance : int64 ``[S, K]``
        How many agents chose each night.
    alignment : AlignmentResult
        Factoredness and learnability of the reward against ``G``, per agent and overall, with intervals.
    moments : tuple of Moments
        Each agent's rewards over the weeks (``n`` of them, in agent order).
    overall : Moments
        Every agent's rewards together.
    constants : polars.DataFrame
        One row per agent: ``agent``, ``count``, ``mean``, ``std`` (population, what a normalizing
        plug-in divides by), ``min``, ``max``, ``normalizable`` (``std > 0``).
    """

    kind: str
    setting: BarSetting
    family: object
    view: JointView
    rewards: np.ndarray
    global_reward: np.ndarray
    attendance: np.ndarray
    alignment: AlignmentResult
    moments: tuple
    overall: Moments
    constants: pl.DataFrame

    def __str__(self) -> str:
        a = self.alignment
        return (f"{self.kind} on {self.rewards.shape[0]} weeks x {self.rewards.shape[1]} agents: factoredness "
                f"{a.overall_factoredness:.3f}, learnability {a.overall_learnability:.3f}, mean "
                f"{self.overall.mean:.4g}, std {self.overall.std:.4g}")


@dataclasses.dataclass(frozen=True, eq=False)
class WeekDetail:
    """One week (joint step) opened: who went where, each night's utility, ``G`` and every agent's reward.

    Attributes
    ----------
    step : int
        The joint step (a row of ``results.rewards``).
    episode, t
        Its episode and week as the data names them.
    kind : str
    capacity : float
    attendance : int64 ``[K]``
    utility : float64 ``[K]``
        ``f(x_k) = x_k exp(-x_k / b)`` of each night (``G`` is their sum).
    global_reward : float
    agents : polars.DataFrame
        One row per agent: ``agent`` (its id), ``night``, ``reward``, ``attendance`` (of its night) and
        ``without_agent`` (``G`` of the week without it: ``G - D_i``).
    """

    step: int
    episode: object
    t: object
    kind: str
    capacity: float
    attendance: np.ndarray
    utility: np.ndarray
    global_reward: float
    agents: pl.DataFrame

    def __str__(self) -> str:
        return (f"week t={self.t} of episode {self.episode}: G = {self.global_reward:.4f}, attendance "
                f"{self.attendance.tolist()} (capacity {self.capacity:g})")


def agent_moments(rewards) -> tuple[Moments, ...]:
    """The :class:`~rewardlab.analysis.moments.Moments` of each column of ``rewards`` (``[S, n]``), vectorized.

    Mean and M2 are two-pass, per column, as :meth:`Moments.of` computes them for one column;
    both sums run down the columns in row order, NumPy's reduction over the first axis, so
    the same rewards give the same bits on any processor (an ``einsum`` or BLAS product
    adds in an order the processor's kernel chooses).

    Examples
    --------
    >>> m = agent_moments(np.array([[1.0, 0.0], [3.0, 0.0]]))
    >>> m[0].mean, m[0].var, m[1].std
    (2.0, 1.0, 0.0)
    """
    x = np.asarray(rewards, dtype=np.float64)
    if x.ndim != 2:
        raise ParameterError("rewards", "should be 2-D, [weeks, agents]", x.shape)
    if x.shape[0] == 0:
        return tuple(Moments() for _ in range(x.shape[1]))
    mean = x.mean(axis=0)
    d = x - mean
    np.multiply(d, d, out=d)
    m2 = np.add.reduce(d, axis=0)
    low, high = x.min(axis=0), x.max(axis=0)
    return tuple(Moments(int(x.shape[0]), float(mean[i]), float(m2[i]), float(low[i]), float(high[i]))
                 for i in range(x.shape[1]))


def joint_spec(frame: pl.DataFrame, spec: FrameSpec | None = None) -> FrameSpec:
    """``spec``, else the frame's own (attached or registered), else El Farol's :data:`~rewardlab.domains.el_farol.SPEC`.

    A joint table saved to Parquet by polars loses the spec :func:`~rewardlab.domains.el_farol.simulate_bar`
    attached; its columns (``episode_id``, ``t``, ``agent_id``, ``action``) are El Farol's.

    Examples
    --------
    >>> joint_spec(pl.DataFrame({"episode_id": [0], "t": [0], "agent_id": [0], "action": [1]})).agent
    'agent_id'
    """
    if spec is not None:
        if not isinstance(spec, FrameSpec):
            raise ParameterError("spec", "should be a rewardlab.FrameSpec", type(spec).__name__)
        return spec
    try:
        return spec_of(frame)
    except SpecError:
        return SPEC.project(frame.columns)


def constants_table(agents, moments) -> pl.DataFrame:
    """One row per agent: ``agent`` (its id as text), ``count``, ``mean``, ``std``, ``min``, ``max``, ``normalizable``.

    Examples
    --------
    >>> constants_table([0, 1], agent_moments(np.array([[0.0, 1.0], [2.0, 1.0]])))["std"].to_list()
    [1.0, 0.0]
    """
    return pl.DataFrame({
        "agent": pl.Series([str(a) for a in agents], dtype=pl.String),
        "count": np.array([m.count for m in moments], dtype=np.int64),
        "mean": np.array([m.mean for m in moments], dtype=np.float64),
        "std": np.array([m.std for m in moments], dtype=np.float64),
        "min": np.array([m.min for m in moments], dtype=np.float64),
        "max": np.array([m.max for m in moments], dtype=np.float64),
        "normalizable": np.array([m.std > 0 for m in moments], dtype=bool)})
