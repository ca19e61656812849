"""Traps, as lints with the rows that trigger them: ``trap.*`` diagnostics (orders 40..49).

Each runs on every candidate and returns one :class:`~rewardlab.diagnostics.base.Finding`:

* ``trap.terminal_next_state`` (fail): a plug-in that reads ``("next", state)`` where it is padding;
* ``trap.constant`` (fail): the same reward on every row;
* ``trap.sparse`` (warn): a reward non-zero on only a handful of rows;
* ``trap.normalizer_clip`` (warn): rewards the trainer's normalizer clips or swamps;
* ``trap.discount_horizon`` (warn): a terminal-only reward the discount leaves almost nothing of at the start;
* ``trap.float16`` (warn): float16 rewards that lose distinct values / precision;
* ``trap.offline_simulation`` (warn): a kanachan plug-in whose rewards differ between offline and self-play.

The arithmetic lives in :mod:`rewardlab.analysis.traps` (thresholds there); the plug-in runs (padding probes,
conventions) in :mod:`rewardlab.plugins.probes`, shared with :func:`rewardlab.plugins.check_plugin`.

Examples
--------
>>> from rewardlab.diagnostics import get_diagnostic
>>> get_diagnostic("trap.constant").order
41
"""

from __future__ import annotations

import numpy as np

from rewardlab.analysis import traps as T
from rewardlab.contracts.checks import PRECISION_TOLERANCE, float16_precision
from rewardlab.core.errors import PluginError
from rewardlab.diagnostics.base import MAX_ROWS, Candidate, DiagnosisContext, Diagnostic, Finding, \
    register_diagnostic
from rewardlab.plugins.probes import convention_runs, probe_padding

__all__ = ["terminal_next_state", "constant", "sparse", "normalizer_clip", "discount_horizon", "float16",
           "offline_simulation", "TRAP_DIAGNOSTICS"]


def _finding(ctx: DiagnosisContext, name: str, candidate: Candidate, verdict: str, summary: str,
             evidence: dict | None = None, rows=()) -> Finding:
    """A finding whose episodes are those of ``rows`` (worst first), rows kept to :data:`MAX_ROWS`."""
    rows = np.asarray(rows, dtype=np.int64)[:MAX_ROWS]
    return Finding(name, candidate.name, verdict, summary, evidence=evidence or {}, rows=tuple(rows.tolist()),
                   episodes=ctx.episodes_of(rows) if rows.size else ())


def _rerun(ctx: DiagnosisContext, name: str, c: Candidate, what: str, run):
    """``run()`` on candidate ``c``'s plug-in again, or the finding that says why it could not: a reward column
    has no plug-in (``n/a``: ``what`` says what would have run), a plug-in that fails now fails the check.
    Returns ``(result, None)`` or ``(None, finding)``."""
    if not c.is_plugin:
        return None, _finding(ctx, name, c, "n/a", f"a reward column: there is no plug-in to run {what}")
    try:
        return run(), None
    except PluginError as exc:
        return None, _finding(ctx, name, c, "fail", "the plug-in failed when run again for this check: "
                              f"{str(exc).splitlines()[0]}")


def _plural(count: int, word: str) -> str:
    return f"{count:,} {word}{'' if count == 1 else 's'}"


# --- trap.terminal_next_state ------------------------------------------------------------------------


TERMINAL_NEXT_STATE_DOC = """\
**Definition.** Where the data lacks an episode's final state (a step table without final rows or `next_`
columns, a recording that dropped it), the steps contract hands the plug-in the state's *padding* as
`("next", state)` on that episode's last step. A plug-in that reads it there computes from a made-up value:
a potential evaluated there is `phi(padding)`, not 0 (or the final state's value). The trap runs the
candidate's plug-in on the episodes that lack their final state (whole episodes, in a child process) and
again on the contract's *padding probes*, copies whose padding lies above and below every value of the
state; the rows whose reward changes (or a plug-in that fails once the padding changes) read the padding.

**Verdicts.** `fail`: the plug-in reads the padding (rows: the steps whose reward changes, largest change
first), or the plug-in fails when run again on the data. `pass`: the data keeps every final state, or the
reward does not change. `n/a`: a reward column (no
plug-in to run), or a contract whose padding is part of its definition (kanachan's: the next state after a
game's last step is defined as padding).

**Assumptions.** A reward that does not move with two probes (one above, one below the data's range) does not
read the padding; the runs use the `episodes` batch mode.

**What to do.** Load data that keeps each episode's final state (`rewardlab.record`, RLlib with `new_obs`,
Minari, a step table with final rows or `next_` columns), or leave the next state alone where
`("next", "done")` is True (terminal potential 0).
"""


def terminal_next_state(ctx: DiagnosisContext) -> list[Finding]:
    """``trap.terminal_next_state`` on every candidate (see :data:`TERMINAL_NEXT_STATE_DOC`)."""
    name = "trap.terminal_next_state"
    out = []
    for c in ctx.candidates:
        probe, said = _rerun(ctx, name, c, "on the padding probes", lambda c=c: probe_padding(
            ctx.frame, c.plugin, contract=ctx.contract, spec=ctx.spec, isolate=ctx.options.isolate,
            timeout=ctx.options.timeout))
        if said is not None:
            out.append(said)
            continue
        contract = getattr(ctx.contract, "name", str(ctx.contract))
        if probe is None:
            out.append(_finding(ctx, name, c, "n/a", f"the {contract} contract's padding is part of its definition "
                                "(the next state after an episode's last step is padding by design): nothing to probe"))
            continue
        lacking = int(probe.lacking.sum())
        evidence = {"episodes_lacking_final_state": lacking, "episodes": ctx.n_episodes,
                    "padded_states": list(probe.keys)}
        if not lacking:
            out.append(_finding(ctx, name, c, "pass", "the data keeps every episode's final state: no next state "
                                "is padding", evidence))
            continue
        if probe.error is not None:
            out.append(_finding(ctx, name, c, "fail", f"the plug-in failed on the data itself: {probe.error}",
                                evidence))
            continue
        keys = " and ".join(probe.keys) or "the next state"
        where = f"{keys} on the last step of the {_plural(lacking, 'episode')} whose final state the data lacks"
        if probe.reads_padding:
            changed = np.flatnonzero(probe.changed)
            if changed.size:
                rows = T.worst_first(changed, probe.delta[changed])
                what = (f"its reward changes with the padding on {_plural(int(changed.size), 'step')} "
                        f"(largest change {float(probe.delta[rows[0]]):.6g})")
            else:
                rows = np.flatnonzero(probe.lacking)
                what = f"it fails once the padding changes ({probe.probe_error})"
            evidence |= {"steps_changed": int(changed.size),
                         "max_change": float(probe.delta[changed].max()) if changed.size else 0.0,
                         "probe_error": probe.probe_error}
            out.append(_finding(ctx, name, c, "fail", f"the plug-in reads {where} (padding, not an observation): "
                                f"{what}; load data that keeps final states, or leave the next state alone where "
                                "(\"next\", \"done\") is True", evidence, rows))
        else:
            out.append(_finding(ctx, name, c, "pass", f"the reward does not change with the padding in {where}",
                                evidence | {"steps_changed": 0}))
    return out


# --- trap.constant, trap.sparse ----------------------------------------------------------------------


CONSTANT_DOC = """\
**Definition.** The reward holds the same value on every row of the data.

**Verdict.** `fail` when it does (rows: each episode's first row), `pass` otherwise.

**How to read it.** A constant reward carries no information about what the agent did: every policy has the
same return per step, so nothing is learned (a constant per-step bonus only changes the value of ending
early). Usually a plug-in that never reaches its reward branch (a wrong key, a condition never True on this
data) or writes into a copy of `data["next", "reward"]`.

**What to do.** Open an episode and read the plug-in's branch that should fire; check the keys it reads.
"""


def constant(ctx: DiagnosisContext) -> list[Finding]:
    """``trap.constant`` on every candidate (see :data:`CONSTANT_DOC`)."""
    name = "trap.constant"
    out = []
    for c in ctx.candidates:
        value = T.constant_value(c.rewards)
        if value is None:
            distinct = int(np.unique(c.rewards).size) if c.rewards.size else 0
            out.append(_finding(ctx, name, c, "pass" if c.rewards.size else "n/a",
                                f"{_plural(distinct, 'distinct value')}" if c.rewards.size else "no rows",
                                {"distinct_values": distinct}))
            continue
        out.append(_finding(ctx, name, c, "fail", f"the reward is {value:.6g} on every one of the "
                            f"{ctx.n:,} rows: it tells the agent nothing; check the branch that should set it",
                            {"value": value, "rows": ctx.n}, ctx.episode_starts[:-1]))
    return out


SPARSE_DOC = f"""\
**Definition.** The reward is non-zero on fewer than `max({T.SPARSE_MIN_ROWS}, {T.SPARSE_FRACTION:g} * N)` of
the `N` rows (`rewardlab.analysis.traps.sparse_limit`).

**Verdict.** `warn` when it is (rows: the non-zero rows, largest `|r|` first), `pass` otherwise, `n/a` when
the reward is 0 everywhere (see `trap.constant`).

**How to read it.** So few informative steps give the learner almost no signal on this data: the credit of
each non-zero reward must travel back over every step before it. It may be intended (a goal reached rarely);
then the data may simply not hold enough successes to judge the reward.

**What to do.** Check that the non-zero rows are the events you meant; consider a denser, potential-based
shaping term (it keeps the optimal policy), or data with more of those events.
"""


def sparse(ctx: DiagnosisContext) -> list[Finding]:
    """``trap.sparse`` on every candidate (see :data:`SPARSE_DOC`)."""
    name = "trap.sparse"
    out = []
    limit = T.sparse_limit(ctx.n)
    for c in ctx.candidates:
        rows = T.nonzero_rows(c.rewards)
        evidence = {"nonzero_rows": int(rows.size), "rows": ctx.n, "limit": limit,
                    "nonzero_fraction": rows.size / ctx.n if ctx.n else 0.0}
        if not rows.size:
            out.append(_finding(ctx, name, c, "n/a", "the reward is 0 on every row (see trap.constant)", evidence))
        elif rows.size < limit:
            out.append(_finding(ctx, name, c, "warn", f"the reward is non-zero on only {rows.size:,} of "
                                f"{ctx.n:,} rows (fewer than {limit:,}): little signal to learn from on this data",
                                evidence, rows))
        else:
            out.append(_finding(ctx, name, c, "pass", f"non-zero on {rows.size:,} of {ctx.n:,} rows", evidence))
    return out


# --- trap.normalizer_clip ----------------------------------------------------------------------------


NORMALIZER_DOC = f"""\
**Definition.** The trainer's running reward normalizer (`normalizer=`: `"gymnasium"` for Gymnasium's
`NormalizeReward`, `"sb3"` for Stable-Baselines3's `VecNormalize`; `gamma=` its discount, `clip=` its clip)
is replayed over the candidate's rewards in frame order, as one environment playing the episodes one after
another, with rewardlab's exact replays (`rewardlab.analysis.normalizers`, equal to the libraries' classes bit
for bit; SB3 sees the rewards as float32, as `DummyVecEnv` stores them). Both divide each reward by the
running standard deviation of the discounted return.

* **Clipped**: steps whose normalized reward `|r / sqrt(var + 1e-8)|` exceeds `clip` (`VecNormalize` clips
  them to `±clip`; `NormalizeReward` does not clip, and the steps are those a `ClipReward(-clip, clip)` after
  it would). Too many when more than {T.CLIP_FRACTION:g} of all steps or {T.CLIP_NONZERO_FRACTION:g} of the
  steps with a non-zero reward are clipped, after the first {T.CLIP_WARMUP} steps (a fresh normalizer's variance
  starts near 0, so its first steps come out near 100 whatever the reward: counted apart, as
  `warmup_clipped_steps`).
* **Swamped**: rare large rewards dominate the running variance, so the common rewards come out near 0: some
  raw rewards are at least {T.SWAMP_RATIO:g} times the median non-zero `|r|` (the rare large ones) and the
  median non-zero reward normalizes below {T.SWAMP_LEVEL:g}.

**Verdict.** `warn` when either happens (rows: the clipped steps, most clipped first, then the dominating
rewards); `pass` otherwise; `n/a` when no normalizer is given.

**Assumptions.** One environment (a vectorized trainer's per-environment statistics mix differently), the
statistics starting fresh at the first row.

**What to do.** Clipping: scale the reward down or raise the clip. Swamping: bring the rare rewards and the
common ones to comparable scales (or drop the running normalizer for fixed constants,
`rewardlab.normalization_constants`).
"""


def normalizer_clip(ctx: DiagnosisContext) -> list[Finding]:
    """``trap.normalizer_clip`` on every candidate (see :data:`NORMALIZER_DOC`)."""
    name = "trap.normalizer_clip"
    options = ctx.options
    normalizer = options.normalizer
    out = []
    if normalizer is None:
        return [_finding(ctx, name, c, "n/a", "no normalizer named: name your trainer's (normalizer gymnasium "
                         "for NormalizeReward, sb3 for VecNormalize, and its clip) to replay it on the rewards")
                for c in ctx.candidates]
    end = ctx.episode_end
    for c in ctx.candidates:
        done = end if c.dones is None else end | np.asarray(c.dones, dtype=bool)
        terminated = done & ~np.asarray(ctx.truncated, dtype=bool)
        trap = T.normalizer_trap(c.rewards, terminated, done, normalizer=normalizer, gamma=options.gamma,
                                 clip=options.clip)
        clipped = np.flatnonzero(trap.counted)
        dominating = np.flatnonzero(trap.dominating & ~trap.counted)
        evidence = {"normalizer": normalizer, "clip": trap.clip, "gamma": options.gamma,
                    "clipped_steps": int(clipped.size), "warmup_clipped_steps": int(trap.clipped[:T.CLIP_WARMUP].sum()), "fraction_clipped": trap.fraction_clipped,
                    "nonzero_fraction_clipped": trap.nonzero_fraction_clipped,
                    "median_nonzero_normalized": trap.median_nonzero, "max_normalized": trap.max_abs,
                    "swamped": trap.swamped, "dominating_steps": int(trap.dominating.sum())}
        problems = []
        if trap.clips_too_much:
            problems.append(f"{trap.fraction_clipped:.2%} of the steps ({clipped.size:,}; "
                            f"{trap.nonzero_fraction_clipped:.2%} of the non-zero ones) normalize beyond the clip "
                            f"±{trap.clip:g} (largest {trap.max_abs:.4g})")
        if trap.swamped:
            problems.append(f"{_plural(int(trap.dominating.sum()), 'large reward')} (at least {T.SWAMP_RATIO:g} "
                            "times the median non-zero one) swamp the rest: the median non-zero reward normalizes "
                            f"to {trap.median_nonzero:.2g}")
        label = {"gymnasium": "Gymnasium's NormalizeReward", "sb3": "SB3's VecNormalize"}[normalizer]
        if not problems:
            out.append(_finding(ctx, name, c, "pass", f"under {label} (gamma {options.gamma:g}, clip ±{trap.clip:g}) "
                                f"{trap.fraction_clipped:.2%} of the steps are clipped and the median non-zero "
                                f"reward normalizes to {trap.median_nonzero:.3g}", evidence))
            continue
        rows = np.concatenate([T.worst_first(clipped, np.abs(trap.scaled[clipped])) if trap.clips_too_much
                               else np.zeros(0, np.int64),
                               T.worst_first(dominating, np.abs(trap.scaled[dominating]))])
        out.append(_finding(ctx, name, c, "warn", f"under {label}: " + "; ".join(problems)
                            + ": rescale the reward (or the rare large rewards) or change the clip", evidence, rows))
    return out


# --- trap.discount_horizon ---------------------------------------------------------------------------


DISCOUNT_DOC = f"""\
**Definition.** A *terminal-only* reward is non-zero only on episodes' last rows. Under the discount
`gamma`, a reward at the last step of an episode of `T` steps is worth `gamma ** (T - 1)` of itself at the
episode's start. The trap fires when the median episode keeps less than {T.HORIZON_FACTOR:g} of it.

**Verdict.** `warn` then (rows: the first rows of the episodes that keep less than that, longest first);
`pass` otherwise, and for a reward that is not terminal-only. Evidence: the median and 90th percentile
episode length, `gamma ** (T - 1)` at each, and the effective horizon `1 / (1 - gamma)`.

**How to read it.** When the episodes are many times longer than the effective horizon, the value at the start
of an episode barely depends on how it ends: early decisions get almost no credit.

**What to do.** Raise `gamma` (the horizon should exceed the typical episode), or add intermediate rewards
(potential-based shaping keeps the optimal policy).
"""


def discount_horizon(ctx: DiagnosisContext) -> list[Finding]:
    """``trap.discount_horizon`` on every candidate (see :data:`DISCOUNT_DOC`)."""
    name = "trap.discount_horizon"
    gamma = ctx.options.gamma
    out = []
    horizon = T.discount_horizon(ctx.episode_starts, gamma=gamma) if ctx.n_episodes else None
    for c in ctx.candidates:
        if horizon is None or not T.terminal_only(c.rewards, ctx.episode_starts):
            out.append(_finding(ctx, name, c, "pass", "the reward is not terminal-only (non-zero before some "
                                "episode's last step, or nowhere)"))
            continue
        evidence = {"gamma": gamma, "median_length": horizon.median_length, "p90_length": horizon.p90_length,
                    "factor_at_median": horizon.factor, "factor_at_p90": horizon.p90_factor,
                    "effective_horizon": horizon.horizon}
        what = (f"a terminal-only reward keeps gamma^(T-1) = {horizon.factor:.3g} of itself at the start of the "
                f"median episode ({horizon.median_length:g} steps; 90th percentile {horizon.p90_length:g} steps: "
                f"{horizon.p90_factor:.3g}) under gamma {gamma:g} (effective horizon {horizon.horizon:.4g} steps)")
        if not horizon.discounted_away:
            out.append(_finding(ctx, name, c, "pass", what, evidence))
            continue
        short = np.flatnonzero(horizon.factors < T.HORIZON_FACTOR)
        episodes = T.worst_first(short, np.diff(ctx.episode_starts)[short])
        out.append(_finding(ctx, name, c, "warn", what + f", below {T.HORIZON_FACTOR:g}: raise gamma or add "
                            "intermediate (potential-based) rewards", evidence | {"episodes_below": int(short.size)},
                            ctx.episode_starts[episodes]))
    return out


# --- trap.float16 --------------------------------------------------------------------------------------


FLOAT16_DOC = f"""\
**Definition.** A plug-in that returns float16 rewards hands the trainer float16 values: 11 significant bits,
so a value `v` with `2**e <= |v| < 2**(e+1)` is rounded by up to `2**(e-11)`. The trap reports the candidates
whose dtype is float16 when that rounding, at the largest reward, exceeds {PRECISION_TOLERANCE:g} of the
spread (standard deviation) of the non-zero rewards, or the rewards reach `|v| >= 2048`, where float16 cannot
hold every integer (`rewardlab.contracts.checks.float16_precision`, the warning `check-plugin` prints).

**Verdict.** `warn` then (rows: those where the rule holds row by row, largest `|r|` first:
`rewardlab.analysis.traps.float16_rows`); `pass` otherwise, and for float32 / float64 rewards.

**How to read it.** Distinct rewards closer than the rounding collapse into one value, and normalized rewards
are off by that fraction of a standard deviation.

**What to do.** Return float32 or float64 rewards, or scale them down before casting to float16.
"""


def float16(ctx: DiagnosisContext) -> list[Finding]:
    """``trap.float16`` on every candidate (see :data:`FLOAT16_DOC`)."""
    name = "trap.float16"
    out = []
    for c in ctx.candidates:
        if c.dtype != "float16":
            out.append(_finding(ctx, name, c, "pass", f"the rewards are {c.dtype}: no float16 rounding"))
            continue
        message = float16_precision(c.rewards)
        finite = c.rewards[np.isfinite(c.rewards)]
        evidence = {"dtype": c.dtype, "distinct_values": int(np.unique(finite).size),
                    "max_abs": float(np.abs(finite).max()) if finite.size else 0.0}
        if message is None:
            out.append(_finding(ctx, name, c, "pass", "float16 rewards, but their rounding is small against their "
                                "spread", evidence))
            continue
        rows = T.float16_rows(c.rewards)
        out.append(_finding(ctx, name, c, "warn", message, evidence | {"rows_affected": int(rows.size)}, rows))
    return out


# --- trap.offline_simulation ---------------------------------------------------------------------------


OFFLINE_SIMULATION_DOC = """\
**Definition.** Kanachan builds the TensorDict a plug-in receives one way in its offline loaders
(`end_of_round` False on a game's last step, the round summary as the files give it) and another in its
self-play simulator (`end_of_round` True on every round's last step including the game's last, no round
summary). The trap runs the candidate's plug-in on whole episodes (`contiguous=True`) under both conventions
and compares rewards and dones row by row (`rewardlab.plugins.probes.convention_runs`; `check-plugin`'s
"simulation convention" warning compares the same runs).

**Verdict.** `warn` when any row differs (rows: largest reward difference first, then rows whose done alone
differs); `fail` when the plug-in fails under a convention (kanachan's simulator would stop there);
`pass` when none differs; `n/a` for a reward column or a contract without conventions (the steps contract).

**How to read it.** A plug-in tuned offline then behaves otherwise in self-play: the rows show where.

**What to do.** Read what the plug-in uses at a game's last step (`end_of_round`, `round_summary`), and decide
what it should do under each convention.
"""


def offline_simulation(ctx: DiagnosisContext) -> list[Finding]:
    """``trap.offline_simulation`` on every candidate (see :data:`OFFLINE_SIMULATION_DOC`)."""
    name = "trap.offline_simulation"
    out = []
    conventions = tuple(getattr(ctx.contract, "conventions", ()))
    for c in ctx.candidates:
        if len(conventions) < 2:
            contract = getattr(ctx.contract, "name", str(ctx.contract))
            out.append(_finding(ctx, name, c, "n/a", f"the {contract} contract has no offline / simulation "
                                "conventions"))
            continue
        runs, said = _rerun(ctx, name, c, "under each convention", lambda c=c: convention_runs(
            ctx.frame, c.plugin, contract=ctx.contract, spec=ctx.spec, isolate=ctx.options.isolate,
            timeout=ctx.options.timeout))
        if said is not None:
            out.append(said)
            continue
        if runs.errors:
            which, error = next(iter(runs.errors.items()))
            out.append(_finding(ctx, name, c, "fail", f"the plug-in failed under the {which} convention: {error}",
                                {"errors": [f"{k}: {v}" for k, v in runs.errors.items()]}))
            continue
        rewards_rows = np.flatnonzero(runs.reward_changed)
        done_rows = np.flatnonzero(runs.done_changed & ~runs.reward_changed)
        evidence = {"conventions": list(runs.conventions), "rewards_differ": int(rewards_rows.size),
                    "dones_differ": int(runs.done_changed.sum()),
                    "max_abs_difference": float(runs.delta.max()) if runs.delta.size else 0.0}
        ref, other = runs.conventions[0], ", ".join(runs.conventions[1:])
        if not rewards_rows.size and not done_rows.size:
            out.append(_finding(ctx, name, c, "pass", f"the same rewards and dones under the {ref} and {other} "
                                "conventions", evidence))
            continue
        rows = np.concatenate([T.worst_first(rewards_rows, runs.delta[rewards_rows]), done_rows])
        out.append(_finding(ctx, name, c, "warn", f"the {other} convention (kanachan's simulator) gives other "
                            f"results than the {ref} one on {_plural(int(rows.size), 'row')} "
                            f"({_plural(int(rewards_rows.size), 'reward')}, "
                            f"{_plural(evidence['dones_differ'], 'done')}; largest reward difference "
                            f"{evidence['max_abs_difference']:.6g}): a plug-in tuned offline behaves otherwise in "
                            "self-play", evidence, rows))
    return out


#: The trap diagnostics, in their order.
TRAP_DIAGNOSTICS = (
    Diagnostic("trap.terminal_next_state", "reads the padded next state", terminal_next_state,
               doc=TERMINAL_NEXT_STATE_DOC, order=40),
    Diagnostic("trap.constant", "constant reward", constant, doc=CONSTANT_DOC, order=41),
    Diagnostic("trap.sparse", "sparse reward", sparse, doc=SPARSE_DOC, order=42),
    Diagnostic("trap.normalizer_clip", "clipped or swamped by the normalizer", normalizer_clip,
               doc=NORMALIZER_DOC, order=43),
    Diagnostic("trap.discount_horizon", "terminal reward discounted away", discount_horizon, doc=DISCOUNT_DOC,
               order=44),
    Diagnostic("trap.float16", "float16 collapse", float16, doc=FLOAT16_DOC, order=45),
    Diagnostic("trap.offline_simulation", "offline vs simulation", offline_simulation,
               doc=OFFLINE_SIMULATION_DOC, order=46),
)

for _diagnostic in TRAP_DIAGNOSTICS:
    register_diagnostic(_diagnostic)
