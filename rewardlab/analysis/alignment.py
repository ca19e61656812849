"""Alignment of multi-agent rewards with the global reward: factoredness and learnability (Agogino & Tumer).

Over a :class:`~rewardlab.analysis.joint.JointView` (``S`` joint steps, ``n``
agents), a reward evaluator ``reward_fn(joint_actions, states) -> [L, n]``
(agent ``i``'s reward ``g_i`` in column ``i``) and the global reward
``g_fn(joint_actions, states) -> [L]`` (or ``[L, n]``: agent ``i``'s ``G``
in column ``i``) are re-evaluated on *counterfactual* joint actions, with
the states held at the recorded step's values (``states`` is the view's
states and extras, each ``[L, n]`` or ``[L, n, w]``; ``L`` is however many
joint actions are passed at once).

Counterfactuals
---------------
* **Own changes**: agent ``i``'s action at step ``s`` replaced by another
  action ``a' != a_{s,i}`` of the action set (one set for every agent:
  ``action_set``, by default the distinct recorded actions), the others'
  actions kept.  ``samples=None`` enumerates every ``a'`` (``m = A - 1`` per
  (step, agent)); ``samples=k`` draws ``k`` of them uniformly, with
  replacement, seeded.
* **Others' changes**: the other agents' actions replaced by those recorded
  at a joint step ``s'`` drawn uniformly from the view (the data's
  distribution of joint actions), agent ``i``'s own action kept; ``m`` draws
  per (step, agent), seeded.

Definitions
-----------
With ``dg = g_i(z') - g_i(z)`` and ``dG = G(z') - G(z)`` for an own change
``z -> z'``, each counted as **zero** when ``|d| <= rtol * max |value|``
over the recorded steps (so a reward computed two ways that differ in the
last bits does not count as moving; ``rtol=1e-9``):

* **factoredness** of agent ``i``: the share of its own changes where ``dg``
  and ``dG`` have the same sign.  Agogino & Tumer count a pair with the
  unit step ``u[dg * dG]`` (``u[x] = 1`` only for ``x > 0``), so a change
  that moves neither counts against the reward.  Here ``ties`` says what a
  *tie* (both changes zero) counts as: ``"agree"`` (the default: the
  reward did exactly what ``G`` did), ``"disagree"`` (Agogino & Tumer's
  ``u[x]``), or ``"exclude"`` (left out of the share).  One change zero and
  the other not is always a disagreement.  ``tie_share`` reports how many
  pairs were ties, so each reading can be had from the others.
* **learnability** of agent ``i`` (Agogino & Tumer's, pooled over the data):
  the mean ``|dg|`` over its own changes divided by the mean ``|g_i(z'') -
  g_i(z)|`` over its others' changes.  Agogino & Tumer define it at each
  ``z`` (a ratio of expectations over the counterfactuals) and average over
  ``z``; the ratio of the two means over all steps is used here because it
  stays finite where the others' changes move nothing at one step.  ``inf``
  when only the own changes move ``g_i``; ``nan`` when neither does.
* **overall** values pool every agent's pairs the same way.

Confidence intervals
--------------------
Percentile bootstrap over joint steps: the ``S`` steps are cut into
``U = min(S, units)`` runs of consecutive joint steps (sizes equal up to
one; one step per run when ``S <= units``), and ``resamples`` resamples
draw ``U`` runs with replacement (seeded).  Every statistic is a ratio of
sums over steps, so each resample reweights the runs' sums; the interval is
the ``(1 - confidence) / 2`` and ``(1 + confidence) / 2`` quantiles of the
resampled statistic, each taken at a resample's value (NumPy's ``"lower"``
and ``"higher"`` methods: no interpolation, so an ``inf`` statistic keeps
``inf`` bounds; ``nan`` resamples are left out).  Resampling steps, not
pairs, respects that the pairs of one step share its joint action; runs of
consecutive steps also keep some of an episode's correlation.

The draws are public (:func:`counterfactual_draws`, :func:`bootstrap_counts`,
:func:`step_units`, :func:`kept_indices`) so the brute force in
``tests/test_alignment.py`` (every counterfactual evaluated on its own
``[1, n]`` joint action, plain loops, a loop bootstrap) uses the same ones.

Examples
--------
>>> import numpy as np, polars as pl
>>> from rewardlab.core.spec import FrameSpec
>>> from rewardlab.analysis.joint import joint_view
>>> rng = np.random.default_rng(0)
>>> frame = pl.DataFrame({"ep": np.zeros(40, int), "t": np.repeat(np.arange(20), 2),
...                       "agent": np.tile([0, 1], 20), "action": rng.integers(3, size=40)})
>>> view = joint_view(frame, spec=FrameSpec(name="s", episode=("ep",), step="t", agent="agent"))
>>> def g(a, s): return (a == 1).sum(axis=1).astype(float)   # G: agents choosing action 1
>>> def mine(a, s): return (a == 1).astype(float)            # agent i's own part of G
>>> result = alignment(view, mine, g, resamples=200)
>>> result.overall_factoredness, result.factoredness.tolist()
(1.0, [1.0, 1.0])
"""

from __future__ import annotations

import warnings
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Callable, Mapping, NamedTuple

import numpy as np
import polars as pl

from rewardlab.analysis.joint import JointView
from rewardlab.core.errors import ParameterError, check_choice, check_in_range, check_int, check_positive

__all__ = ["TIES", "AlignmentResult", "Counterfactuals", "alignment", "action_set_of", "counterfactual_draws",
           "bootstrap_counts", "step_units", "kept_indices", "percentile_interval", "alignment_table"]

#: What a tie (neither the reward nor G moves) counts as in factoredness.
TIES = ("agree", "disagree", "exclude")

#: Elements (joint actions x agents) evaluated per call of the reward functions.
CHUNK = 1 << 21


@dataclass(frozen=True, eq=False)
class AlignmentResult:
    """Factoredness and learnability of one reward, per agent and overall, with bootstrap intervals.

    Attributes
    ----------
    name : str
    agents : tuple
        The agent ids, ascending (``n``).
    steps : int
        ``S``, the joint steps analysed.
    counterfactuals : int
        ``m``: own changes (and others' changes) per (step, agent).
    exact : bool
        Whether the own changes enumerate the action set (``samples=None``).
    factoredness, learnability, tie_share : numpy.ndarray, shape ``[n]``
    factoredness_ci, learnability_ci : numpy.ndarray, shape ``[2, n]``
        Rows: low, high.
    own_change, others_change : numpy.ndarray, shape ``[n]``
        Mean ``|dg_i|`` over own changes and over others' changes (learnability is their ratio).
    overall_factoredness, overall_learnability, overall_tie_share : float
    overall_factoredness_ci, overall_learnability_ci : tuple of float
        ``(low, high)``.
    pairs : mapping
        Up to ``keep`` own changes drawn at random (seeded): ``agent`` (position), ``reward_change``,
        ``global_change``.
    values : mapping
        Up to ``keep`` recorded (step, agent) cells: ``agent``, ``reward``, ``global``.
    options : mapping
        The settings used (``action_set``, ``samples``, ``seed``, ``resamples``, ``confidence``, ``ties``,
        ``rtol``, ``units``).
    """

    name: str
    agents: tuple
    steps: int
    counterfactuals: int
    exact: bool
    factoredness: np.ndarray
    factoredness_ci: np.ndarray
    learnability: np.ndarray
    learnability_ci: np.ndarray
    tie_share: np.ndarray
    own_change: np.ndarray
    others_change: np.ndarray
    overall_factoredness: float
    overall_factoredness_ci: tuple
    overall_learnability: float
    overall_learnability_ci: tuple
    overall_tie_share: float
    pairs: Mapping[str, np.ndarray] = field(repr=False)
    values: Mapping[str, np.ndarray] = field(repr=False)
    options: Mapping[str, object] = field(repr=False)

    def table(self) -> pl.DataFrame:
        """One row per agent: factoredness and learnability with their intervals, the tie share."""
        return pl.DataFrame({
            "agent": pl.Series([str(a) for a in self.agents], dtype=pl.String),
            "factoredness": self.factoredness, "factoredness_low": self.factoredness_ci[0],
            "factoredness_high": self.factoredness_ci[1], "learnability": self.learnability,
            "learnability_low": self.learnability_ci[0], "learnability_high": self.learnability_ci[1],
            "tie_share": self.tie_share,
        })


class Counterfactuals(NamedTuple):
    """The counterfactual draws: ``alternatives[s, i, j]`` (own changes) and ``other_steps[s, i, j]``
    (the step whose others' actions replace step ``s``'s), both ``[S, n, m]``."""

    alternatives: np.ndarray
    other_steps: np.ndarray


# --------------------------------------------------------------------------
# Checks and draws (shared by the vectorized estimator and its loop twin)
# --------------------------------------------------------------------------


def _actions_of(view) -> np.ndarray:
    if not isinstance(view, JointView):
        raise ParameterError("view", "should be a JointView (rewardlab.analysis.joint.joint_view)",
                             type(view).__name__)
    actions = view.actions
    if actions.ndim != 2 or (actions.size and actions.dtype.kind not in "iu"):
        raise ParameterError("view", "should have one integer action per agent and step (discrete actions)",
                             f"actions of shape {actions.shape} and dtype {actions.dtype}")
    if view.steps == 0 or view.n_agents == 0:
        raise ParameterError("view", "should hold at least one joint step and one agent", view.rows.shape)
    return actions.astype(np.int64, copy=False)


def action_set_of(actions, action_set=None) -> np.ndarray:
    """The action set, sorted (int64): the distinct ``actions`` (None), ``0 .. A-1`` (an int) or the given values.

    Examples
    --------
    >>> action_set_of(np.array([[2, 0], [2, 2]])).tolist(), action_set_of(np.array([[1]]), 3).tolist()
    ([0, 2], [0, 1, 2])
    """
    actions = np.asarray(actions)
    if action_set is None:
        out = np.unique(actions)
    elif isinstance(action_set, (int, np.integer)) and not isinstance(action_set, bool):
        out = np.arange(check_int("action_set", action_set, low=2), dtype=np.int64)
    else:
        values = np.asarray(action_set)
        if values.ndim != 1 or (values.size and values.dtype.kind not in "iu"):
            raise ParameterError("action_set", "should be None, an int A (actions 0..A-1) or a 1-D sequence "
                                 "of integer actions", action_set)
        out = np.unique(values)
        missing = np.setdiff1d(np.unique(actions), out)
        if missing.size:
            raise ParameterError("action_set", "should hold every recorded action", f"{out.tolist()} lacks "
                                 f"{missing[:5].tolist()}")
    out = out.astype(np.int64)
    if isinstance(action_set, (int, np.integer)) and actions.size and (actions.min() < 0 or actions.max() >= out.size):
        raise ParameterError("action_set", f"should cover the recorded actions (0..{out.size - 1})",
                             f"actions {int(actions.min())}..{int(actions.max())}")
    if out.size < 2:
        raise ParameterError("action_set", "should hold at least two actions (an own change needs another "
                             "action)", out.tolist())
    return out


def _check_samples(samples) -> int | None:
    if samples is None:
        return None
    return check_int("samples", samples, low=1, rule="should be None (every other action) or an int >= 1")


def counterfactual_draws(actions, action_set, *, samples: int | None, seed: int) -> Counterfactuals:
    """The own changes and the others' steps of :func:`alignment` (seeded; ``m`` per (step, agent)).

    Parameters
    ----------
    actions : int array, shape ``[S, n]``
    action_set : int array, shape ``[A]``, sorted
        Holds every recorded action.
    samples : int or None
        None: every other action, in set order (``m = A - 1``); ``k``: ``k`` draws each.
    seed : int

    Returns
    -------
    Counterfactuals
        ``alternatives`` (actions, never the recorded one) and ``other_steps`` (in ``0 .. S-1``), ``[S, n, m]``.

    Examples
    --------
    >>> counterfactual_draws(np.array([[1, 0]]), np.array([0, 1, 2]), samples=None, seed=0).alternatives.tolist()
    [[[0, 2], [1, 2]]]
    """
    actions = np.asarray(actions, dtype=np.int64)
    steps, n = actions.shape
    a = action_set.size
    position = np.searchsorted(action_set, actions)[..., None]
    own_seed, others_seed = np.random.SeedSequence(seed).spawn(2)
    if samples is None:
        m = a - 1
        drawn = np.broadcast_to(np.arange(m), (steps, n, m))
    else:
        m = samples
        drawn = np.random.default_rng(own_seed).integers(a - 1, size=(steps, n, m))
    alternatives = action_set[drawn + (drawn >= position)]
    other_steps = np.random.default_rng(others_seed).integers(steps, size=(steps, n, m))
    return Counterfactuals(alternatives, other_steps)


def step_units(steps: int, units: int) -> np.ndarray:
    """The first joint step of each of the ``min(steps, units)`` bootstrap runs (sizes equal up to one).

    Examples
    --------
    >>> step_units(10, 4).tolist(), step_units(3, 1000).tolist()
    ([0, 2, 5, 7], [0, 1, 2])
    """
    u = min(steps, units)
    return (np.arange(u, dtype=np.int64) * steps) // u


def bootstrap_counts(units: int, resamples: int, seed: int) -> np.ndarray:
    """How often each of ``units`` runs is drawn in each resample: ``[resamples, units]`` (rows sum to ``units``).

    Examples
    --------
    >>> bootstrap_counts(3, 2, seed=0).sum(axis=1).tolist()
    [3, 3]
    """
    rng = np.random.default_rng(np.random.SeedSequence(seed).spawn(3)[2])
    draws = rng.integers(units, size=(resamples, units)) + (np.arange(resamples) * units)[:, None]
    return np.bincount(draws.ravel(), minlength=resamples * units).reshape(resamples, units)


def kept_indices(total: int, keep: int, seed: int, stream: int) -> np.ndarray:
    """``min(keep, total)`` of ``0 .. total-1``, drawn without replacement and sorted (seeded by ``seed``, ``stream``).

    :func:`alignment` keeps the own changes numbered by these (``stream=1``; change ``j`` of agent ``i`` at
    step ``s`` is ``(s * n + i) * m + j``) and the recorded cells (``stream=2``; ``s * n + i``) for plots.

    Examples
    --------
    >>> kept_indices(5, 10, 0, 1).tolist()
    [0, 1, 2, 3, 4]
    """
    rng = np.random.default_rng(np.random.SeedSequence([seed, stream]))
    return np.sort(rng.choice(total, size=min(keep, total), replace=False))


def _check_options(view, reward_fn, g_fn, action_set, samples, seed, resamples, confidence, ties, rtol, units,
                   keep):
    actions = _actions_of(view)
    for name, fn in (("reward_fn", reward_fn), ("g_fn", g_fn)):
        if not callable(fn):
            raise ParameterError(name, "should be a function (joint_actions [L, n], states) -> rewards",
                                 type(fn).__name__)
    return dict(actions=actions, action_set=action_set_of(actions, action_set), samples=_check_samples(samples),
                seed=check_int("seed", seed, low=0), resamples=check_int("resamples", resamples, low=1),
                confidence=check_in_range("confidence", confidence, 0, 1), ties=check_choice("ties", ties, TIES),
                rtol=check_positive("rtol", rtol) if rtol != 0 else 0.0, units=check_int("units", units, low=1),
                keep=check_int("keep", keep, low=0))


def _rewards(fn, name, joint, states, n) -> np.ndarray:
    out = np.asarray(fn(joint, states), dtype=np.float64)
    if out.shape != (joint.shape[0], n):
        raise ParameterError(name, f"should return a float array of shape [L, n] = [{joint.shape[0]}, {n}] "
                             "(one reward per joint action and agent)", out.shape)
    return out


def _globals(fn, joint, states, n) -> np.ndarray:
    out = np.asarray(fn(joint, states), dtype=np.float64)
    if out.shape == (joint.shape[0],):
        return np.broadcast_to(out[:, None], (joint.shape[0], n))
    if out.shape != (joint.shape[0], n):
        raise ParameterError("g_fn", f"should return a float array of shape [L] = [{joint.shape[0]}] (or "
                             f"[L, n] = [{joint.shape[0]}, {n}])", out.shape)
    return out


def _check_finite(view, name, values, where) -> None:
    bad = ~np.isfinite(values)
    if bad.any():
        k = int(np.flatnonzero(bad.ravel())[0])
        raise ParameterError(name, f"should return finite rewards; it returned {values.ravel()[k]} for "
                             f"{where(k)}", "non-finite")


def _signs(d: np.ndarray, tol: float) -> np.ndarray:
    return np.where(d > tol, 1, np.where(d < -tol, -1, 0))


# --------------------------------------------------------------------------
# Statistics from per-step sums
# --------------------------------------------------------------------------


def _ratio(num, den):
    with np.errstate(divide="ignore", invalid="ignore"):
        return np.asarray(num, dtype=np.float64) / np.asarray(den, dtype=np.float64)


def percentile_interval(samples, confidence: float) -> np.ndarray:
    """The percentile interval of bootstrap ``samples`` (resamples on axis 0; ``nan`` resamples left out).

    The low end is the ``(1 - confidence) / 2`` quantile taken at or below it (NumPy's ``"lower"``), the high
    end the ``(1 + confidence) / 2`` quantile at or above it (``"higher"``): resampled values, no interpolation.

    Returns
    -------
    numpy.ndarray, shape ``[2, ...]``
        Low, high.

    Examples
    --------
    >>> percentile_interval(np.array([1.0, 2.0, 3.0, 4.0, 5.0]), 0.5).tolist()
    [2.0, 4.0]
    >>> percentile_interval(np.array([1.0, 2.0, 3.0, np.inf]), 0.5).tolist()
    [1.0, inf]
    """
    samples = np.asarray(samples, dtype=np.float64)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        low = np.nanquantile(samples, (1 - confidence) / 2, axis=0, method="lower")
        high = np.nanquantile(samples, (1 + confidence) / 2, axis=0, method="higher")
    return np.stack([low, high])


def _options_of(o) -> Mapping[str, object]:
    return MappingProxyType({"action_set": tuple(o["action_set"].tolist()), "samples": o["samples"],
                             "seed": o["seed"], "resamples": o["resamples"], "confidence": o["confidence"],
                             "ties": o["ties"], "rtol": o["rtol"], "units": o["units"]})


def _frozen(mapping) -> Mapping[str, np.ndarray]:
    return MappingProxyType({k: _readonly(v) for k, v in mapping.items()})


def _finish(name, view, o, m, sums, pairs, values) -> AlignmentResult:
    """The result from per-step sums ``sums[key]`` (each ``[S, n]``): estimates and bootstrap intervals."""
    starts = step_units(view.steps, o["units"])
    per_unit = {k: np.add.reduceat(v, starts, axis=0) for k, v in sums.items()}  # [U, n]
    counts = bootstrap_counts(starts.size, o["resamples"], o["seed"]).astype(np.float64)  # [B, U]
    boot = {k: counts @ v for k, v in per_unit.items()}  # [B, n]
    total = {k: v.sum(axis=0) for k, v in per_unit.items()}
    f = _ratio(total["agree"], total["counted"])
    lrn = _ratio(_ratio(total["own"], total["pairs"]), _ratio(total["others"], total["pairs"]))
    f_boot = _ratio(boot["agree"], boot["counted"])
    l_boot = _ratio(boot["own"], boot["others"])
    f_all = float(_ratio(total["agree"].sum(), total["counted"].sum()))
    l_all = float(_ratio(total["own"].sum(), total["others"].sum()))
    f_all_boot = _ratio(boot["agree"].sum(axis=1), boot["counted"].sum(axis=1))
    l_all_boot = _ratio(boot["own"].sum(axis=1), boot["others"].sum(axis=1))
    conf = o["confidence"]
    return AlignmentResult(
        name=name, agents=view.agents, steps=view.steps, counterfactuals=m, exact=o["samples"] is None,
        factoredness=_readonly(f), factoredness_ci=_readonly(percentile_interval(f_boot, conf)),
        learnability=_readonly(lrn), learnability_ci=_readonly(percentile_interval(l_boot, conf)),
        tie_share=_readonly(_ratio(total["ties"], total["pairs"])),
        own_change=_readonly(_ratio(total["own"], total["pairs"])),
        others_change=_readonly(_ratio(total["others"], total["pairs"])),
        overall_factoredness=f_all,
        overall_factoredness_ci=tuple(float(x) for x in percentile_interval(f_all_boot, conf)),
        overall_learnability=l_all,
        overall_learnability_ci=tuple(float(x) for x in percentile_interval(l_all_boot, conf)),
        overall_tie_share=float(_ratio(total["ties"].sum(), total["pairs"].sum())),
        pairs=_frozen(pairs), values=_frozen(values), options=_options_of(o))


def _readonly(a) -> np.ndarray:
    a = np.array(a)
    a.setflags(write=False)
    return a


# --------------------------------------------------------------------------
# The vectorized estimator
# --------------------------------------------------------------------------


def alignment(view: JointView, reward_fn: Callable, g_fn: Callable, *, action_set=None,
              samples: int | None = None, seed: int = 0, resamples: int = 1000, confidence: float = 0.95,
              ties: str = "agree", rtol: float = 1e-9, units: int = 1000, keep: int = 2000,
              name: str = "reward") -> AlignmentResult:
    """Factoredness and learnability of ``reward_fn`` against ``g_fn`` over a joint view (module docstring).

    Parameters
    ----------
    view : JointView
        Integer actions, ``[S, n]``.
    reward_fn : callable
        ``reward_fn(joint_actions [L, n] int64, states {name: [L, n(, w)]}) -> [L, n]`` float.
    g_fn : callable
        ``g_fn(joint_actions, states) -> [L]`` (or ``[L, n]``) float: the global reward.
    action_set : None, int or sequence of int
        One action set for every agent (:func:`action_set_of`; default: the recorded actions).
    samples : int or None
        Own changes per (step, agent): None enumerates every other action; ``k`` draws ``k``.
    seed : int
        Seeds the draws, the bootstrap and the kept pairs.
    resamples : int
        Bootstrap resamples.
    confidence : float
        Interval coverage, in ``(0, 1)``.
    ties : {"agree", "disagree", "exclude"}
        What a pair where neither ``g_i`` nor ``G`` moves counts as.
    rtol : float
        A change is zero when ``|d| <= rtol * max |recorded value|``.
    units : int
        At most this many runs of consecutive joint steps are resampled.
    keep : int
        Own-change pairs and recorded cells kept for plots.
    name : str
        The reward's name in tables and plots.

    Returns
    -------
    AlignmentResult

    Examples
    --------
    >>> import numpy as np, polars as pl
    >>> from rewardlab.core.spec import FrameSpec
    >>> from rewardlab.analysis.joint import joint_view
    >>> frame = pl.DataFrame({"ep": [0] * 6, "t": [0, 0, 1, 1, 2, 2], "agent": [0, 1] * 3,
    ...                       "action": [0, 1, 1, 1, 0, 0]})
    >>> view = joint_view(frame, spec=FrameSpec(name="s", episode=("ep",), step="t", agent="agent"))
    >>> def g(a, s): return a.sum(axis=1).astype(float)
    >>> def opposed(a, s): return -a.astype(float)
    >>> alignment(view, opposed, g, resamples=50).overall_factoredness
    0.0
    """
    o = _check_options(view, reward_fn, g_fn, action_set, samples, seed, resamples, confidence, ties, rtol,
                       units, keep)
    actions, n, steps = o["actions"], view.n_agents, view.steps
    states = view.inputs
    draws = counterfactual_draws(actions, o["action_set"], samples=o["samples"], seed=o["seed"])
    m = draws.alternatives.shape[2]
    base_g = _rewards(reward_fn, "reward_fn", actions, states, n)
    base_G = _globals(g_fn, actions, states, n)
    _check_finite(view, "reward_fn", base_g, lambda k: view.describe(k // n, k % n) + " as recorded")
    _check_finite(view, "g_fn", base_G, lambda k: view.describe(k // n) + " as recorded")
    tol_g, tol_G = o["rtol"] * np.abs(base_g).max(), o["rtol"] * np.abs(base_G).max()
    sums = {k: np.zeros((steps, n)) for k in ("agree", "counted", "ties", "own", "others")}
    kept = kept_indices(steps * n * m, o["keep"], o["seed"], 1)
    kept_g, kept_G = np.empty(kept.size), np.empty(kept.size)
    per_step = n * m
    block = max(1, CHUNK // (per_step * n))
    agent_of = np.tile(np.repeat(np.arange(n), m), block)
    for s0 in range(0, steps, block):
        s1 = min(steps, s0 + block)
        length = (s1 - s0) * per_step
        who = agent_of[:length]
        cells = np.arange(length)
        sub = {k: np.repeat(v[s0:s1], per_step, axis=0) for k, v in states.items()}

        def where(k, s0=s0, kind="with its action set to"):
            s, i, j = s0 + k // per_step, (k // m) % n, k % m
            return f"{view.describe(s, i)} {kind} {int(draws.alternatives[s, i, j])}"

        # own changes: agent i's action replaced
        joint = np.repeat(actions[s0:s1], per_step, axis=0)
        joint[cells, who] = draws.alternatives[s0:s1].ravel()
        g = _rewards(reward_fn, "reward_fn", joint, sub, n)[cells, who]
        G = _globals(g_fn, joint, sub, n)[cells, who]
        _check_finite(view, "reward_fn", g, where)
        _check_finite(view, "g_fn", G, where)
        dg = g - np.repeat(base_g[s0:s1].ravel(), m)
        dG = G - np.repeat(base_G[s0:s1].ravel(), m)
        sg, sG = _signs(dg, tol_g), _signs(dG, tol_G)
        tie = (sg == 0) & (sG == 0)
        agree = sg == sG if o["ties"] == "agree" else (sg == sG) & ~tie
        shape = (s1 - s0, n, m)
        sums["agree"][s0:s1] = agree.reshape(shape).sum(axis=2)
        sums["ties"][s0:s1] = tie.reshape(shape).sum(axis=2)
        sums["counted"][s0:s1] = m - (sums["ties"][s0:s1] if o["ties"] == "exclude" else 0)
        sums["own"][s0:s1] = np.abs(dg).reshape(shape).sum(axis=2)
        lo, hi = np.searchsorted(kept, [s0 * per_step, s1 * per_step])
        kept_g[lo:hi], kept_G[lo:hi] = dg[kept[lo:hi] - s0 * per_step], dG[kept[lo:hi] - s0 * per_step]
        # others' changes: the others' actions of another recorded step, agent i's own kept
        joint = actions[draws.other_steps[s0:s1]].reshape(length, n)
        joint[cells, who] = np.repeat(actions[s0:s1].ravel(), m)
        g = _rewards(reward_fn, "reward_fn", joint, sub, n)[cells, who]
        _check_finite(view, "reward_fn", g, lambda k: where(k, kind="with the others' actions of another step;"
                                                            " its own action"))
        sums["others"][s0:s1] = np.abs(g - np.repeat(base_g[s0:s1].ravel(), m)).reshape(shape).sum(axis=2)
    sums["pairs"] = np.full((steps, n), float(m))
    cells = kept_indices(steps * n, o["keep"], o["seed"], 2)
    pairs = {"agent": (kept // m) % n, "reward_change": kept_g, "global_change": kept_G}
    values = {"agent": cells % n, "reward": base_g.ravel()[cells], "global": base_G.ravel()[cells]}
    return _finish(name, view, o, m, sums, pairs, values)


# --------------------------------------------------------------------------
# A table of several rewards
# --------------------------------------------------------------------------


def _number(x: float, digits: int) -> str:
    return "inf" if x == np.inf else ("nan" if x != x else f"{x:.{digits}f}")


def alignment_table(results, *, digits: int = 3) -> str:
    """A Markdown table of several rewards' overall factoredness and learnability with their intervals.

    Parameters
    ----------
    results : sequence of AlignmentResult
        In the table's order (each row is ``result.name``).
    digits : int
        Decimals.

    Returns
    -------
    str
        Header, separator and one line per result, each ending in a newline.

    Examples
    --------
    >>> import numpy as np, polars as pl
    >>> from rewardlab.core.spec import FrameSpec
    >>> from rewardlab.analysis.joint import joint_view
    >>> frame = pl.DataFrame({"ep": [0, 0], "t": [0, 0], "agent": [0, 1], "action": [0, 1]})
    >>> view = joint_view(frame, spec=FrameSpec(name="s", episode=("ep",), step="t", agent="agent"))
    >>> r = alignment(view, lambda a, s: a.astype(float), lambda a, s: a.sum(axis=1) * 1.0, resamples=5)
    >>> print(alignment_table([r], digits=2), end="")
    | reward | factoredness | 95% interval | learnability | 95% interval | ties |
    |---|---|---|---|---|---|
    | reward | 1.00 | [1.00, 1.00] | inf | [inf, inf] | 0.00 |
    """
    digits = check_int("digits", digits, low=0)
    results = list(results)
    if not results or not all(isinstance(r, AlignmentResult) for r in results):
        raise ParameterError("results", "should be a non-empty sequence of AlignmentResult", results)
    level = {round(100 * r.options["confidence"], 6) for r in results}
    pct = f"{level.pop():g}%" if len(level) == 1 else "interval"
    lines = [f"| reward | factoredness | {pct} interval | learnability | {pct} interval | ties |",
             "|---|---|---|---|---|---|"]
    for r in results:
        fl, fh = (_number(x, digits) for x in r.overall_factoredness_ci)
        ll, lh = (_number(x, digits) for x in r.overall_learnability_ci)
        lines.append(f"| {r.name} | {_number(r.overall_factoredness, digits)} | [{fl}, {fh}] | "
                     f"{_number(r.overall_learnability, digits)} | [{ll}, {lh}] | "
                     f"{_number(r.overall_tie_share, digits)} |")
    return "".join(line + "\n" for line in lines)
