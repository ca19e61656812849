"""The ``epic`` diagnostic: how far apart two rewards are, ignoring potential shaping and scale.

:func:`epic_matrix` is the measurement (the comparison board calls it too);
the registered diagnostic turns it into one ``info`` finding per pair of
candidates, and one per candidate against the base where the base can be
evaluated.  The math is :mod:`rewardlab.analysis.epic`; the recombined
transitions are :mod:`rewardlab.contracts.steps.recombine`'s.

Examples
--------
>>> import rewardlab
>>> frame = rewardlab.load("data/gym/mountaincar_scripted.parquet")  # doctest: +SKIP
>>> m = epic_matrix(frame, ["a.py", "b.py"], gamma=0.99, n_states=256, n_pairs=256, repeats=3, seed=0)  # doctest: +SKIP
>>> m.pairs()  # doctest: +SKIP
"""

from __future__ import annotations

import itertools
from dataclasses import dataclass

import numpy as np
import polars as pl

from rewardlab.analysis.compare import correlation_matrix, episode_return_table
from rewardlab.analysis.sums import segment_sums
from rewardlab.analysis.epic import canonicalize, epic_distance, mean_and_stderr, pearson_distance
from rewardlab.contracts.registry import contract_for
from rewardlab.contracts.steps.recombine import grid_transitions, transition_pool, transitions_frame
from rewardlab.core import columns
from rewardlab.core.errors import ParameterError, PluginError, check_int
from rewardlab.core.spec import FrameSpec
from rewardlab.diagnostics.base import Diagnostic, Finding, register_diagnostic
from rewardlab.plugins.apply import apply_plugins
from rewardlab.plugins.execution import plugin_items

__all__ = ["EpicMatrix", "epic_matrix", "EPIC_METHOD", "FALLBACK_METHOD", "PROBE_ROWS", "EPIC_BATCH_SIZE",
           "transition_columns", "DOC", "FLAT_RTOL", "flat_candidates"]

#: A canonicalized reward whose standard deviation is at most this fraction of the raw rewards' largest
#: magnitude counts as constant (a constant reward, or pure potential shaping, up to rounding).
FLAT_RTOL = 1e-9
#: The method of a real EPIC estimate, as findings and :class:`EpicMatrix` name it.
EPIC_METHOD = "EPIC, sample-based canonicalization (Gleave et al. 2021)"

#: The method of the fallback, where rewards cannot be evaluated on recombined transitions.
FALLBACK_METHOD = "pearson_distance of episode returns (fallback: not EPIC)"

#: Recombined rows re-run with an extra column drawn from other rows, to tell whether a plug-in reads it.
PROBE_ROWS = 2048

#: Rows per plug-in call on recombined transitions (``sequential`` batches; each row is a whole episode).
EPIC_BATCH_SIZE = 8192


def transition_columns(extras) -> tuple[str, ...]:
    """The handed extra columns that describe the transition's action: ``action`` and names starting with it.

    Every other extra (the recorded reward ``reward_recorded``, ...) is not a function of
    ``(state, action, next state)``; a plug-in that reads one cannot be evaluated on recombined
    transitions.

    Examples
    --------
    >>> transition_columns(["action", "reward_recorded", "action_mask"])
    ('action', 'action_mask')
    """
    return tuple(c for c in extras if c == "action" or c.startswith("action"))


@dataclass(frozen=True, eq=False)
class EpicMatrix:
    """EPIC distances between candidates (see :func:`epic_matrix`).

    Attributes
    ----------
    names : tuple of str
        The candidates, in matrix order.
    distance, stderr : float64 arrays of shape ``[K, K]``
        The mean distance over the repeats and its standard error (NaN where a side is not
        evaluable, where a canonicalized reward is constant, or for the stderr of one repeat;
        0 on the diagonal of evaluable candidates).
    evaluable : tuple of bool
        Whether each candidate could be evaluated on recombined transitions.
    reasons : tuple of str
        Why not (``""`` where it could).
    method : str
        :data:`EPIC_METHOD`, or :data:`FALLBACK_METHOD` where the contract cannot recombine.
    fallback_reason : str
        Why the fallback was used (``""`` for EPIC).
    gamma : float
    n_states, n_pairs, repeats : int
        The sample: states and (action, next state) pairs per repeat, and independent repeats.
    excluded_pairs : int
        Last rows left out of the pairs because the data lacks their final state.

    Examples
    --------
    >>> m = EpicMatrix(("a", "b"), np.array([[0.0, 0.2], [0.2, 0.0]]), np.full((2, 2), 0.01),
    ...                (True, True), ("", ""), EPIC_METHOD, "", 0.99, 8, 8, 2, 0)
    >>> m.pairs().row(0)
    ('a', 'b', 0.2, 0.01)
    """

    names: tuple
    distance: np.ndarray
    stderr: np.ndarray
    evaluable: tuple
    reasons: tuple
    method: str
    fallback_reason: str
    gamma: float
    n_states: int
    n_pairs: int
    repeats: int
    excluded_pairs: int

    @property
    def fallback(self) -> bool:
        """True when the distances are the fallback's, not EPIC's."""
        return self.method == FALLBACK_METHOD

    def matrix(self, what: str = "distance") -> pl.DataFrame:
        """``distance`` or ``stderr`` as a square frame: ``reward`` then one column per candidate
        (the layout :func:`rewardlab.plots.plot_correlation_heatmap` draws).

        Examples
        --------
        >>> m.matrix().columns  # doctest: +SKIP
        ['reward', 'a', 'b']
        """
        if what not in ("distance", "stderr"):
            raise ParameterError("what", "should be 'distance' or 'stderr'", what)
        values = getattr(self, what)
        return pl.DataFrame({"reward": list(self.names)} | {n: values[:, i] for i, n in enumerate(self.names)})

    def pairs(self) -> pl.DataFrame:
        """One row per unordered pair: ``a, b, distance, stderr``."""
        i, j = np.triu_indices(len(self.names), k=1)
        return pl.DataFrame({"a": [self.names[k] for k in i], "b": [self.names[k] for k in j],
                             "distance": self.distance[i, j], "stderr": self.stderr[i, j]},
                            schema={"a": pl.String, "b": pl.String, "distance": pl.Float64, "stderr": pl.Float64})


def _check_sample(gamma, n_states, n_pairs, repeats, seed) -> tuple:
    if isinstance(gamma, bool) or not isinstance(gamma, (int, float)) or not 0.0 < gamma <= 1.0:
        raise ParameterError("gamma", "should be in (0, 1]", gamma)
    return (float(gamma), check_int("n_states", n_states, low=1), check_int("n_pairs", n_pairs, low=1),
            check_int("repeats", repeats, low=1), check_int("seed", seed, low=0))


def _run(frame, spec, plugins, names, isolate, timeout) -> tuple[dict, dict]:
    """Rewards of each plug-in on ``frame`` (``{name: float64 [M]}``) and ``{name: error}`` for those that fail.

    All run in one child process; when that fails, each runs alone so one failing plug-in does not hide the
    others' distances.
    """
    def one_call(items, item_names):
        out = apply_plugins(frame, items, spec=spec, batch_mode="sequential", batch_size=EPIC_BATCH_SIZE,
                            isolate=isolate, timeout=timeout, progress=False, replace=True)
        return {n: out.get_column(columns.reward_column(n)).cast(pl.Float64).to_numpy() for n in item_names}

    try:
        return one_call(list(plugins), names), {}
    except PluginError as exc:
        if len(plugins) == 1:
            return {}, {names[0]: str(exc).splitlines()[0]}
    rewards, errors = {}, {}
    for item, name in zip(plugins, names):
        try:
            rewards.update(one_call([item], [name]))
        except PluginError as exc:
            errors[name] = str(exc).splitlines()[0]
    return rewards, errors


def _recombined_estimates(frame, spec, plugins, names, *, gamma, n_states, n_pairs, repeats, seed, isolate,
                          timeout):
    """Per repeat canonicalized rewards ``{name: [R][S, P]}``, reasons for the others, and the excluded count."""
    pool = transition_pool(frame, spec)
    reasons = {}
    if not pool.pair_rows.size:
        why = ("no (action, next state) pair: every row is an episode's last step without its final state "
               "in the data")
        return {}, {n: why for n in names}, pool.excluded
    rng = np.random.default_rng(seed)
    blocks = []  # (states, following, {column: rows}) per block
    for _ in range(repeats):  # i.i.d. draws (with replacement) from the recorded states and pairs
        state_rows = rng.integers(0, pool.n, n_states)
        pair_rows = pool.pair_rows[rng.integers(0, pool.pair_rows.size, n_pairs)]
        states, following, rows = grid_transitions(pool, state_rows, pair_rows)
        blocks.append((states, following, {c: rows for c in pool.arrays.extras}))
    probed = [c for c in pool.arrays.extras if c not in transition_columns(pool.arrays.extras)]
    size = n_states * n_pairs
    probe = min(PROBE_ROWS, size)
    for column in probed:  # the first rows again, with this column taken from other recorded rows
        states, following, rows = blocks[0]
        drawn = dict(rows)
        drawn[column] = rng.integers(0, pool.n, probe)
        blocks.append(({k: v[:probe] for k, v in states.items()}, {k: v[:probe] for k, v in following.items()},
                       {c: (drawn[c] if c == column else r[:probe]) for c, r in drawn.items()}))
    states = {k: np.concatenate([b[0][k] for b in blocks]) for k in blocks[0][0]}
    following = {k: np.concatenate([b[1][k] for b in blocks]) for k in blocks[0][1]}
    extra_rows = {c: np.concatenate([b[2][c] for b in blocks]) for c in pool.arrays.extras}
    if not extra_rows:
        extra_rows = np.zeros(next(iter(states.values())).shape[0], dtype=np.int64)
    recombined, recombined_spec = transitions_frame(pool.arrays, states, following, extra_rows)
    rewards, errors = _run(recombined, recombined_spec, plugins, names, isolate, timeout)
    for name, error in errors.items():
        reasons[name] = f"it fails on recombined transitions: {error}"
    per_block = (size + n_pairs * n_pairs)
    canon = {}
    for name, r in rewards.items():
        main = r[:repeats * per_block]
        scale = float(np.abs(main).max(initial=0.0))
        read = []
        for k, column in enumerate(probed):
            start = repeats * per_block + k * probe
            if not np.allclose(r[start:start + probe], main[:probe], rtol=1e-6, atol=1e-9 * max(scale, 1.0)):
                read.append(column)
        if read:
            reasons[name] = ("its reward changes when " + ", ".join(map(repr, read)) + " comes from another "
                             "recorded row: it reads " + " and ".join(map(repr, read)) + ", which is not a function of "
                             "(state, action, next state), so it cannot be evaluated on recombined transitions")
            continue
        canon[name] = []
        for rep in range(repeats):
            block = main[rep * per_block:(rep + 1) * per_block]
            canon[name].append(canonicalize(block[:size].reshape(n_states, n_pairs),
                                            block[size:].reshape(n_pairs, n_pairs), gamma))
        # a constant reward or pure shaping canonicalizes to a constant plus rounding noise of the size of
        # the raw rewards (not of the canonicalized ones): judge it against the raw scale, and make it exact
        if all(float(np.std(c)) <= FLAT_RTOL * max(scale, 1e-300) for c in canon[name]):
            canon[name] = [np.zeros_like(c) for c in canon[name]]
    return canon, reasons, pool.excluded


def flat_candidates(canon: dict) -> set:
    """The names whose canonicalized rewards are constant (set to exact zeros where they were constant up to
    :data:`FLAT_RTOL`).

    Examples
    --------
    >>> sorted(flat_candidates({"a": [np.zeros(3)], "b": [np.ones(3)]}))
    ['a']
    """
    return {name for name, arrays in canon.items() if all(not np.any(c) for c in arrays)}


def _distances(names, canon, repeats) -> tuple[np.ndarray, np.ndarray]:
    k = len(names)
    per = np.full((repeats, k, k), np.nan)
    for (i, a), (j, b) in itertools.combinations(enumerate(names), 2):
        if a in canon and b in canon:
            d = [epic_distance(canon[a][r], canon[b][r]) for r in range(repeats)]
            per[:, i, j] = per[:, j, i] = d
    for i, a in enumerate(names):
        if a in canon:
            per[:, i, i] = 0.0
    mean, stderr = mean_and_stderr(per, axis=0)
    for i, a in enumerate(names):
        if a in canon:
            stderr[i, i] = 0.0 if repeats > 1 else np.nan
    return mean, stderr


def _fallback_distances(returns: np.ndarray) -> np.ndarray:
    return pearson_distance(correlation_matrix(returns, method="pearson"))


def epic_matrix(frame: pl.DataFrame, plugins, *, spec: FrameSpec | None = None, gamma: float, n_states: int,
                n_pairs: int, repeats: int, seed: int, isolate: bool | None = None,
                timeout: float | None = None) -> EpicMatrix:
    """EPIC distances between reward plug-ins on a frame's recorded transitions, with their sampling error.

    Each repeat draws ``n_states`` recorded states and ``n_pairs`` recorded (action, next state)
    pairs (independently, with replacement, seeded by ``seed``), evaluates every plug-in on the
    recombined transitions (:mod:`rewardlab.contracts.steps.recombine`: one run through
    :func:`rewardlab.plugins.apply_plugins`, in a child process unless ``isolate`` is False),
    canonicalizes (:func:`rewardlab.analysis.epic.canonicalize`) and takes the Pearson distances;
    the result is the mean over the repeats and its standard error.

    Where the frame's contract cannot recombine transitions (kanachan:
    :meth:`rewardlab.contracts.base.Contract.recombination`), the plug-ins are applied to the frame
    and the distances are :data:`FALLBACK_METHOD` (``method`` says so; not shaping-invariant).

    Parameters
    ----------
    frame : polars.DataFrame
        Whole episodes in episode order, with a spec (attached, or ``spec``).
    plugins : sequence of Plugin or path
        The candidates (distinct names).
    spec : FrameSpec or None
    gamma : float
        The discount, in ``(0, 1]``.
    n_states, n_pairs, repeats, seed : int
        The sample (see above).
    isolate, timeout
        As :func:`rewardlab.plugins.apply_plugins`.

    Returns
    -------
    EpicMatrix
        A plug-in that reads an extra column other than the action (the recorded reward,
        ...), or fails on recombined transitions, is not evaluable: NaN distances and the reason.

    Examples
    --------
    >>> m = epic_matrix(frame, ["r1.py", "r2.py"], gamma=0.99, n_states=512, n_pairs=512,
    ...                 repeats=5, seed=0)  # doctest: +SKIP
    >>> m.distance[0, 1], m.stderr[0, 1]  # doctest: +SKIP
    """
    gamma, n_states, n_pairs, repeats, seed = _check_sample(gamma, n_states, n_pairs, repeats, seed)
    contract, frame_spec = contract_for(frame, None, spec=spec)
    items = plugin_items(plugins, contract)
    names = tuple(name for _, name, _ in items)
    plugin_list = [item for item, _, _ in items]
    capability = contract.recombination(frame_spec)
    if not capability.possible:
        out = apply_plugins(frame, plugin_list, spec=frame_spec, isolate=isolate, timeout=timeout, progress=False,
                            replace=True)
        returns = episode_return_table(out, list(names), spec=frame_spec).select(names).to_numpy()
        k = len(names)
        distance = _fallback_distances(returns.astype(np.float64)) if returns.shape[0] > 1 else np.full((k, k), np.nan)
        return EpicMatrix(names, distance, np.full((k, k), np.nan), (True,) * k, ("",) * k, FALLBACK_METHOD,
                          capability.reason, gamma, 0, 0, 0, 0)
    canon, reasons, excluded = _recombined_estimates(
        frame, frame_spec, plugin_list, names, gamma=gamma, n_states=n_states, n_pairs=n_pairs, repeats=repeats,
        seed=seed, isolate=isolate, timeout=timeout)
    distance, stderr = _distances(names, canon, repeats)
    return EpicMatrix(names, distance, stderr, tuple(n in canon for n in names),
                      tuple(reasons.get(n, "") for n in names), EPIC_METHOD, "", gamma, n_states, n_pairs,
                      repeats, excluded)


# --------------------------------------------------------------------------
# The diagnostic
# --------------------------------------------------------------------------


def _pair_finding(a: str, b: str, distance: float, stderr: float, m: EpicMatrix, reason_a: str,
                  reason_b: str, flat=frozenset()) -> Finding:
    evidence = {"distance": distance, "stderr": stderr, "n_states": m.n_states, "n_pairs": m.n_pairs,
                "repeats": m.repeats, "gamma": m.gamma, "method": m.method, "excluded_pairs": m.excluded_pairs}
    if m.fallback:
        evidence["reason"] = m.fallback_reason
        return Finding("epic", a, "info", f"Pearson distance of episode returns {distance:.4f} (not EPIC: "
                       f"{m.fallback_reason}; not invariant to shaping)", evidence=evidence, other=b)
    why = reason_a and f"{a!r}: {reason_a}" or reason_b and f"{b!r}: {reason_b}"
    if why:
        return Finding("epic", a, "n/a", f"no EPIC distance: {why}", evidence={"method": m.method, "reason": why},
                       other=b)
    if distance != distance:  # NaN: a canonicalized reward is constant
        which = [n for n in (a, b) if n in flat] or [a, b]
        said = " and ".join(map(repr, which))
        return Finding("epic", a, "info", f"EPIC distance undefined: {said} "
                       f"{'is' if len(which) == 1 else 'are'} constant up to potential shaping on the recombined "
                       "sample (a constant reward, pure shaping, or a reward of the flags the sample holds fixed: "
                       "every recombined transition is handed as not terminated)", evidence=evidence, other=b)
    error = f" ± {stderr:.4f}" if stderr == stderr else ""
    return Finding("epic", a, "info", f"EPIC distance {distance:.4f}{error} (0: same reward up to shaping and "
                   "scale; 0.71: unrelated; 1: opposite)", evidence=evidence, other=b)


def run_epic(ctx) -> list[Finding]:
    """The ``epic`` diagnostic's findings on a :class:`~rewardlab.diagnostics.DiagnosisContext`."""
    options = ctx.options
    base = ctx.base
    everyone = list(ctx.candidates) + ([base] if base is not None else [])
    if len(everyone) < 2:
        return [Finding("epic", c.name, "n/a", "EPIC compares two rewards; there is only one")
                for c in ctx.candidates]
    capability = ctx.contract.recombination(ctx.spec)
    canon = {}
    if not capability.possible:  # the episode returns the context already holds
        k = len(everyone)
        returns = np.stack([segment_sums(c.rewards, ctx.episode_starts[:-1]) if ctx.n else np.zeros(0)
                            for c in everyone], axis=1)
        distance = _fallback_distances(returns) if returns.shape[0] > 1 else np.full((k, k), np.nan)
        m = EpicMatrix(tuple(c.name for c in everyone), distance, np.full((k, k), np.nan), (True,) * k,
                       ("",) * k, FALLBACK_METHOD, capability.reason, options.gamma, 0, 0, 0, 0)
    else:
        plugins = [c for c in everyone if c.is_plugin]
        canon, reasons, excluded = ({}, {}, 0)
        if plugins:
            canon, reasons, excluded = _recombined_estimates(
                ctx.frame, ctx.spec, [c.plugin for c in plugins], tuple(c.name for c in plugins),
                gamma=options.gamma, n_states=options.epic_states, n_pairs=options.epic_pairs,
                repeats=options.epic_repeats, seed=options.seed, isolate=options.isolate, timeout=options.timeout)
        for c in everyone:
            if not c.is_plugin:
                reasons[c.name] = ("it is a column of recorded rewards, not a function rewardlab can evaluate on "
                                   "recombined transitions")
        names = tuple(c.name for c in everyone)
        distance, stderr = _distances(names, canon, options.epic_repeats)
        m = EpicMatrix(names, distance, stderr, tuple(n in canon for n in names),
                       tuple(reasons.get(n, "") for n in names), EPIC_METHOD, "", options.gamma,
                       options.epic_states, options.epic_pairs, options.epic_repeats, excluded)
    findings = []
    flat = flat_candidates(canon) if not m.fallback else set()
    k = len(ctx.candidates)
    pairs = list(itertools.combinations(range(k), 2)) + ([(i, k) for i in range(k)] if base is not None else [])
    for i, j in pairs:
        findings.append(_pair_finding(m.names[i], m.names[j], float(m.distance[i, j]), float(m.stderr[i, j]), m,
                                      m.reasons[i], m.reasons[j], flat))
    return findings


#: The diagnostic's documentation (docs/diagnostics.md, the report).
DOC = """\
**Definition.** EPIC (Gleave et al. 2021, *Quantifying Differences in Reward Functions*) first
canonicalizes each reward,
`C(R)(s,a,s') = R(s,a,s') + γ E[R(s',A,S')] − E[R(s,A,S')] − γ E[R(S,A,S')]`,
which maps every potential-shaped variant `R + γφ(s') − φ(s)` of a reward to the same function, then
takes the Pearson distance `sqrt((1 − ρ) / 2)` of the two canonicalized rewards over a coverage
distribution of transitions. It is invariant to potential shaping and to a positive scale.

**Sample-based form.** Each repeat draws `epic_states` recorded states `s_i` and `epic_pairs` recorded
(action, next state) pairs `(a_j, s'_j)` (independently, with replacement); the coverage distribution is
every `(s_i, a_j, s'_j)`; the expectations average over the pairs (`E[R(s,A,S')]`) and over the states
(`E[R(S,A,S')]`). Each candidate is evaluated on those recombined transitions by running the plug-in on a
steps-contract batch whose rows are one-step episodes handed as truncated (`("next", obs)` is `s'_j`,
`("next", "terminated")` is False: EPIC pretends episodes never end, so nothing is masked at terminal
steps). The distance is the mean over `epic_repeats` independent repeats (seeds); its standard error is
their standard deviation over `sqrt(repeats)`: the error of sampling from this data, not of the data itself.
An episode's last step whose final state the data lacks (padding) is not used as a pair (`excluded_pairs`).

**Assumptions.** The reward is a function of `(state, action, next state)` that rewardlab can call on
transitions that were never recorded together: a plug-in (a column of recorded rewards cannot be
re-evaluated) that reads only the states, the next states and the action. A plug-in whose reward changes
when another extra column (the recorded reward `reward_recorded`, ...) is drawn from other rows reads it
and is reported `n/a` with that reason. The coverage distribution is the recorded one: two rewards that
differ only on transitions the data never reaches can look alike.

**How to read it.** 0: the same reward up to potential shaping and a positive scale (they induce the same
optimal policies); about 0.71: unrelated; 1: opposite. Compare a distance with its standard error before
reading a difference between two distances. An undefined distance means a canonicalized reward is constant
on the sample (a constant reward, or one that is pure potential shaping).

**Fallback.** Where the contract cannot evaluate rewards on recombined transitions (kanachan: round results
are not functions of recombined (state, action, next state) transitions), the finding is the Pearson
distance of the candidates' episode returns, labelled `pearson_distance of episode returns (fallback: not
EPIC)`: it is not invariant to shaping.
"""

register_diagnostic(Diagnostic("epic", "EPIC distance (shaping- and scale-invariant)", run_epic, doc=DOC, order=30))
