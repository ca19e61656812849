"""The ``shaping`` and ``shaping.telescoping`` diagnostics: is a candidate the base plus potential-based shaping?

For every candidate other than the base, the difference ``r' - r`` on the recorded transitions is fitted
by ``gamma * phi(s') - phi(s)`` (:func:`rewardlab.analysis.shaping.fit_potential`; states and next states
read as the steps contract builds them, :class:`rewardlab.contracts.steps.arrays.StepsArrays`), and the
per-episode discounted return differences are compared between episodes with the same start state
(:func:`rewardlab.analysis.telescoping.telescoping_check`).  See :data:`SHAPING_DOC` and
:data:`TELESCOPING_DOC`.

Examples
--------
>>> from rewardlab.diagnostics.base import registered_diagnostics
>>> registered_diagnostics()["shaping"].title
'potential-based shaping'
"""

from __future__ import annotations

import numpy as np

from rewardlab.analysis.potential_bases import resolve_basis
from rewardlab.analysis.shaping import fit_potential, reward_scale
from rewardlab.analysis.telescoping import telescoping_check
from rewardlab.contracts.steps.arrays import StepsArrays
from rewardlab.core.errors import RewardlabError
from rewardlab.diagnostics.base import Diagnostic, DiagnosisContext, Finding, register_diagnostic

__all__ = ["SHAPING_DOC", "TELESCOPING_DOC", "Transitions", "transitions", "run_shaping", "run_telescoping",
           "effective_tolerance"]

SHAPING_DOC = """\
**Definition.** A candidate reward `r'` is *potential-based shaping* of a base reward `r` when
`r'(s, a, s') - r(s, a, s') = gamma * phi(s') - phi(s)` for some potential `phi` of the state, with
`phi = 0` after a termination (Ng, Harada and Russell 1999). Such a change leaves every optimal policy
unchanged, and it is the only additive change that always does: any other difference may change what
the agent learns to do.

rewardlab fits `phi` by least squares on the recorded transitions: `phi(s') ` is the next row's state
in the episode, or the episode's final state after its last row where the data keeps it. A feature
basis states what `phi` may be: `tabular` (one value per distinct state; the default, `auto`, for
integer or Boolean states), `linear` (`phi(s) = w . s + c`; the default for float states),
`quadratic`, or one you register (`rewardlab.analysis.potential_bases.register_basis`).

**Assumptions.** The states are Markov (the potential is a function of the recorded state only); the
potential of a terminal state is 0 (after a truncation the next state is real and its potential
counts); the data cover the states often enough to constrain `phi`. A truncated last row whose final
state the data lack cannot be tested and is left out (the evidence counts it).

**How to read it.** The verdict reads the largest residual *relative to the reward's scale*: the larger
root mean square of the candidate's and the base's rewards (`scale`); it is shaping when
`max |residual| / scale <= tolerance` (`tolerance`, raised to the rounding of the rewards' dtype). R^2 is
shown but never judged: a bonus of 0.1 on one state of a 20-state chain leaves R^2 = 0.9998. When the
data leave no residual degree of freedom (every state seen once: any difference has a potential) the
answer is *cannot tell*. A violation is located only up to shaping (a bonus on leaving a state is a
bonus on entering it plus shaping), so the rows listed are those with the largest residuals, the ones
that touch the offending states. With a continuous basis a negative answer means *not explained by a
potential in that basis*: a richer basis might explain it. `shaping.telescoping` checks the same
property per episode without any basis.
"""

TELESCOPING_DOC = """\
**Definition.** Under potential-based shaping the discounted return difference of an episode
telescopes: `sum_t gamma^t (r'_t - r_t) = gamma^T phi(s_T) - phi(s_0)`, which is `-phi(s_0)` for an
episode that terminated. So episodes with the same start state (and, for truncated ones, the same end
state and length) must have the same discounted return difference. The check groups episodes that way
and reports the groups whose differences spread more than the tolerance.

**Assumptions.** As for `shaping` (Markov states, terminal potential 0); it needs no feature basis,
but only episodes that share a start state (and end state, when truncated) are compared: with
continuous start states there is usually nothing to compare (`n/a`). Truncated episodes whose final
state the data lack are left out.

**How to read it.** A broken group proves the difference is not potential-based shaping (for any
potential); the episodes listed are those farthest from their group's median. The tolerance is the
`shaping` tolerance times the reward's scale times the longest episode's discounted horizon.
"""

_LEFT_OUT_WORDS = "truncated last rows without a final state left out"


class Transitions:
    """The rows a shaping test reads: states, next states and flags, as the steps contract builds them.

    Attributes
    ----------
    states, next_states : arrays of shape ``[N, D]``
        Every state column side by side (int64 when every column is integer or Boolean, else float64).
    terminated : bool array of shape ``[N]``
        The context's terminated flags.
    usable : bool array of shape ``[N]``
        False on truncated last rows whose next state is padding (the data lack the final state).
    """

    def __init__(self, states, next_states, terminated, usable):
        self.states, self.next_states, self.terminated, self.usable = states, next_states, terminated, usable


def transitions(ctx: DiagnosisContext) -> Transitions | str:
    """The context's transitions, or a sentence saying why the shaping test cannot read them.

    Examples
    --------
    >>> transitions(ctx).states.shape  # doctest: +SKIP
    (3765, 2)
    """
    name = getattr(ctx.contract, "name", ctx.contract)
    if name == "kanachan":
        return ("kanachan's states are padded lists of sparse feature ids of varying length, not numeric "
                "rows a potential can be fitted on")
    if name != "steps":
        return f"the shaping test reads states through the steps contract; this data uses the {name!r} contract"
    if ctx.spec is None or not ctx.spec.states:
        return "the data's spec names no state columns (a potential is a function of the state)"
    try:
        arrays = StepsArrays(ctx.frame, ctx.spec)
    except RewardlabError as exc:
        return f"the states cannot be read: {exc}"
    td = arrays.tensordict()
    names = list(arrays.states)
    whole = all(arrays.states[s].dtype.kind in "iub" for s in names)
    dtype = np.int64 if whole else np.float64

    def stack(values):
        return np.hstack([np.asarray(v).reshape(ctx.n, -1).astype(dtype) for v in values])

    states = stack(arrays.states[s] for s in names)
    following = stack(td["next", s].numpy() for s in names)
    usable = ~(ctx.truncated & ~ctx.terminated & arrays.missing_final)
    return Transitions(states, following, np.asarray(ctx.terminated, dtype=bool), usable)


def effective_tolerance(tolerance: float, candidate, base, scale: float) -> float:
    """``tolerance``, raised to 16 roundings of the narrower of the two rewards' dtypes (relative to ``scale``).

    Examples
    --------
    >>> from rewardlab.diagnostics.base import Candidate
    >>> a = Candidate("a", np.ones(2), dtype="float32"); b = Candidate("b", np.ones(2))
    >>> effective_tolerance(1e-6, a, b, 1.0) > 1e-6
    True
    """
    eps = max(float(np.finfo(np.dtype(c.dtype)).eps) if np.dtype(c.dtype).kind == "f" else 0.0
              for c in (candidate, base))
    peak = max(float(np.max(np.abs(c.rewards))) if c.rewards.size else 0.0 for c in (candidate, base))
    return max(float(tolerance), 16 * eps * peak / scale)


def _verdict(outcome: str, expect: bool) -> str:
    if outcome == "shaping":
        return "pass" if expect else "info"
    if outcome == "not shaping":
        return "fail" if expect else "info"
    return "warn" if expect else "info"


def _not_applicable(ctx, diagnostic: str, reason: str) -> list:
    return [Finding(diagnostic, c.name, "n/a", reason) for c in ctx.candidates]


def _others(ctx):
    return [c for c in ctx.candidates if c is not ctx.base and c.name != ctx.base.name]


_NO_BASE = ("no base reward to compare with: name one (another candidate or a reward column) as the base; "
            "by default it is the data's recorded reward, when that is not itself the only candidate")


def _telescope(ctx, tr: Transitions, difference, tolerance_abs):
    starts = ctx.episode_starts
    last = starts[1:] - 1
    truncated_last = np.asarray(ctx.truncated, dtype=bool)[last] & ~np.asarray(ctx.terminated, dtype=bool)[last]
    return telescoping_check(difference, starts, gamma=ctx.options.gamma, start_keys=tr.states[starts[:-1]],
                             end_keys=tr.next_states[last], truncated_last=truncated_last,
                             skip=~tr.usable[last], tolerance=tolerance_abs)


def _horizon(ctx) -> float:
    longest = int(np.diff(ctx.episode_starts).max()) if ctx.n_episodes else 0
    g = ctx.options.gamma
    return float(longest) if g == 1.0 else float((1.0 - g ** longest) / (1.0 - g))


def run_shaping(ctx: DiagnosisContext) -> list:
    """The ``shaping`` findings: one per candidate other than the base.

    Examples
    --------
    >>> [f.verdict for f in run_shaping(ctx)]  # doctest: +SKIP
    ['info']
    """
    if ctx.base is None:
        return _not_applicable(ctx, "shaping", _NO_BASE)
    basis = ctx.options.basis
    tr = transitions(ctx)
    if isinstance(tr, str):
        return _not_applicable(ctx, "shaping", tr)
    basis = resolve_basis(basis, tr.states)[0]  # an unknown basis is the caller's error: it raises
    findings = []
    use = np.flatnonzero(tr.usable)
    left_out = ctx.n - use.size
    for cand in _others(ctx):
        difference = cand.rewards - ctx.base.rewards
        scale = reward_scale(cand.rewards, ctx.base.rewards)
        tol = effective_tolerance(ctx.options.tolerance, cand, ctx.base, scale)
        fit = fit_potential(difference[use], tr.states[use], tr.next_states[use], terminated=tr.terminated[use],
                            gamma=ctx.options.gamma, basis=basis, scale=scale)
        outcome = fit.verdict(tol)
        tele = _telescope(ctx, tr, difference, tol * scale * _horizon(ctx))
        rows = use[fit.breaking_rows(tol)] if outcome == "not shaping" else np.zeros(0, dtype=np.int64)
        numbers = f"max residual {fit.max_abs_residual:.3g} of scale {scale:.3g}"
        if outcome == "shaping":
            summary = f"is potential-based shaping of {ctx.base.name} ({numbers}, {basis} basis)"
            if fit.n_testable < use.size:
                summary += f"; only {fit.n_testable} of {use.size} rows constrain the potential"
        elif outcome == "cannot tell":
            summary = (f"cannot tell whether it is potential-based shaping of {ctx.base.name}: in the {basis} "
                       "basis every transition can be fitted exactly (no residual degree of freedom: states "
                       "seen once); record more episodes or choose a smaller basis")
        elif basis == "tabular":
            summary = (f"is not potential-based shaping of {ctx.base.name}: {numbers} on {rows.size} rows, so "
                       "the difference may change the optimal policy")
        else:
            summary = (f"is not potential-based shaping of {ctx.base.name} with a potential in the {basis} "
                       f"basis: {numbers} on {rows.size} rows (a richer basis might explain it; if not, the "
                       "difference may change the optimal policy)")
        if not fit.converged:
            summary += f" (the iterative fit stopped after {fit.iterations} iterations: residuals may be overstated)"
        if left_out:
            summary += f" ({left_out} {_LEFT_OUT_WORDS})"
        evidence = {
            "is_shaping": {"shaping": "yes", "not shaping": "no"}.get(outcome, outcome), "basis": basis,
            "gamma": ctx.options.gamma, "rows": ctx.n, "rows_used": int(use.size), "rows_left_out": left_out,
            "scale": scale, "scale_rule": "larger RMS of the candidate's and the base's rewards",
            "max_abs_residual": fit.max_abs_residual, "rms_residual": fit.rms_residual,
            "relative_residual": fit.relative_residual, "tolerance": tol, "r_squared_not_judged": fit.r_squared,
            "features": fit.n_features, "rank": fit.rank, "dof": fit.dof, "dof_exact": fit.dof_exact,
            "testable_rows": fit.n_testable, "converged": fit.converged, "iterations": fit.iterations,
            "rows_breaking": int(rows.size), "telescoping_groups": tele.n_groups,
            "telescoping_broken": int(tele.broken.size), "telescoping_max_spread": tele.max_spread,
        }
        findings.append(Finding("shaping", cand.name, _verdict(outcome, ctx.options.expect_shaping), summary,
                                evidence=evidence, rows=tuple(rows[:1000]), episodes=ctx.episodes_of(rows[:1000]),
                                other=ctx.base.name))
    return findings


def run_telescoping(ctx: DiagnosisContext) -> list:
    """The ``shaping.telescoping`` findings: one per candidate other than the base.

    Examples
    --------
    >>> [f.verdict for f in run_telescoping(ctx)]  # doctest: +SKIP
    ['n/a']
    """
    if ctx.base is None:
        return _not_applicable(ctx, "shaping.telescoping", _NO_BASE)
    tr = transitions(ctx)
    if isinstance(tr, str):
        return _not_applicable(ctx, "shaping.telescoping", tr)
    findings = []
    for cand in _others(ctx):
        difference = cand.rewards - ctx.base.rewards
        scale = reward_scale(cand.rewards, ctx.base.rewards)
        tol = effective_tolerance(ctx.options.tolerance, cand, ctx.base, scale) * scale * _horizon(ctx)
        tele = _telescope(ctx, tr, difference, tol)
        evidence = {"groups": tele.n_groups, "broken": int(tele.broken.size), "max_spread": tele.max_spread,
                    "tolerance": tol, "episodes": ctx.n_episodes,
                    "episodes_left_out": int(np.sum(tele.group < 0)), "gamma": ctx.options.gamma}
        if tele.n_groups == 0:
            findings.append(Finding("shaping.telescoping", cand.name, "n/a", "no two episodes share a start "
                                    "state (and end state, when truncated): nothing to compare",
                                    evidence=evidence, other=ctx.base.name))
            continue
        if tele.broken.size:
            outcome = "not shaping"
            summary = (f"is not potential-based shaping of {ctx.base.name}: episodes with the same start state "
                       f"have different discounted return differences ({tele.broken.size} of {tele.n_groups} "
                       f"groups, spread up to {tele.max_spread:.3g}), so the difference may change the optimal "
                       "policy")
        else:
            outcome = "shaping"
            summary = (f"telescopes as potential-based shaping of {ctx.base.name} would: {tele.n_groups} groups "
                       f"of episodes with the same start state agree (spread up to {tele.max_spread:.3g})")
        episodes = tele.episodes[:1000]
        findings.append(Finding("shaping.telescoping", cand.name, _verdict(outcome, ctx.options.expect_shaping),
                                summary, evidence=evidence, rows=tuple(ctx.episode_starts[episodes]),
                                episodes=tuple(episodes), other=ctx.base.name))
    return findings


register_diagnostic(Diagnostic("shaping", "potential-based shaping", run_shaping, doc=SHAPING_DOC, order=20),
                    replace=True)
register_diagnostic(Diagnostic("shaping.telescoping", "telescoping of potential shaping", run_telescoping,
                               doc=TELESCOPING_DOC, order=21), replace=True)
