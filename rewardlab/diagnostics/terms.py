"""The ``terms`` diagnostic: each named term of a composite reward, its scale and share, flat or dominating.

A plug-in reports terms by writing them beside its reward, under
``("next", "reward_terms", name)`` (:data:`rewardlab.contracts.terms.TERMS_KEY`);
the runner checks and keeps them (:attr:`Candidate.terms
<rewardlab.diagnostics.base.Candidate.terms>`).  For each candidate with terms
this diagnostic measures them with :func:`rewardlab.analysis.terms.term_table`
and returns one finding for the candidate (do the terms sum to the reward?)
and one per term (``info``, or ``warn`` for a flat or a dominating term, with
the rows where the term is largest and their episodes).  A candidate without
terms gets one ``n/a`` finding saying how to report them.

Examples
--------
>>> DIAGNOSTIC.name, DIAGNOSTIC.order
('terms', 10)
"""

from __future__ import annotations

import math

import numpy as np

from rewardlab.analysis.terms import (DOMINATING_SCALE_RATIO, DOMINATING_SHARE, FLAT_RATIO, SUM_RTOL, TermTable,
                                      term_table)
from rewardlab.diagnostics.base import Candidate, DiagnosisContext, Diagnostic, Finding, register_diagnostic

__all__ = ["NAME", "ROWS_SHOWN", "DOC", "DIAGNOSTIC", "run_terms", "largest_rows"]

#: The diagnostic's name.
NAME = "terms"
#: Rows (where the term, or the sum's difference, is largest) kept in each finding.
ROWS_SHOWN = 20

DOC = f"""\
**What it shows.** A plug-in may report the named terms of a composite reward beside the reward, each
under `("next", "reward_terms", NAME)` (a finite float16/32/64 CPU tensor of shape `[B]` or `[B, 1]`, like
the reward; the same names on every call; `rewardlab check-plugin` checks them with rules `term_shape`,
`term_dtype`, `term_not_finite`, `term_names_vary`, ...). A plug-in without terms is run as before. For each
term, on the recorded data (Eureka's reward reflection, before any training instead of on training curves):

| column | definition |
|---|---|
| `mean`, `min`, `max` | the term's mean, minimum and maximum over the rows |
| `std`, `max_abs`, `rms` | its scale: population standard deviation, largest magnitude, root mean square |
| `nonzero_fraction` | fraction of rows where it is not 0 (its sparsity) |
| `share` | `cov(term, reward) / var(reward)`: its share of the reward's variance (the shares of terms that sum to the reward sum to 1; negative: it cancels others) |
| `episode_share`, `episode_std` | the same share, and the standard deviation, of the per-episode sums (undiscounted returns) |
| `corr_total`, `corr_reference` | Pearson correlation with the reward, and with the base (the recorded reward) |
| `flat` | near identical throughout: `std <= {FLAT_RATIO:g} * std(reward)` and `episode_std <= {FLAT_RATIO:g} * std(returns)` |
| `dominating` | beside a term that is not flat: `share > {DOMINATING_SHARE:g}` and `episode_share > {DOMINATING_SHARE:g}`, or an `rms` at least {DOMINATING_SCALE_RATIO:g} times every other (non-flat) term's |

**Verdicts.** One finding per candidate says whether the terms sum to the reward: `max |sum of terms -
reward| <= {SUM_RTOL:g} * scale`, `scale` the largest `|reward| + sum |term|` of a row (terms need not sum to
the reward; when they do not, the shares need not add up to 1). One finding per term: `info` with its numbers,
or `warn` when it is flat (it does nearly nothing: rescale it, change it or drop it; Eureka's advice for a
component "near identical throughout") or dominating (the reward is nearly that term alone: rescale it or the
others). Each finding keeps the {ROWS_SHOWN} rows where the term's magnitude is largest (the sum's difference,
for the candidate's finding) and their episodes. A candidate without terms is `n/a`.

**Assumptions and how to read it.** The numbers are over the recorded rows, so they describe the data's state
distribution, not the one a new policy will visit. The per-step share alone misleads for a term that is the
same on every step (a `-1` per step cost has no step-level variance, share 0, yet sets the return through the
episode's length): read `episode_share` beside it; `flat` and `dominating` look at both levels. A potential-
based shaping term typically carries much of the step-level variance and little of the returns' (it telescopes).
"""


def largest_rows(values: np.ndarray, k: int = ROWS_SHOWN) -> np.ndarray:
    """The rows of the ``k`` largest ``|values|`` (NaN last), largest first, ties in row order.

    Parameters
    ----------
    values : float array of shape ``[N]``
    k : int

    Returns
    -------
    int64 array of shape ``[min(k, N)]``

    Examples
    --------
    >>> largest_rows(np.array([0.5, -3.0, np.nan, 2.0, 3.0]), 3).tolist()
    [1, 4, 3]
    """
    magnitude = np.abs(np.asarray(values, dtype=np.float64))
    magnitude = np.where(np.isnan(magnitude), -1.0, magnitude)
    k = min(int(k), magnitude.shape[0])
    if k <= 0:
        return np.zeros(0, dtype=np.int64)
    if k < magnitude.shape[0]:
        top = np.argpartition(-magnitude, k - 1)[:k]
        cut = magnitude[top].min()  # keep ties in row order: every row above the cut, then the first at it
        above = np.flatnonzero(magnitude > cut)
        at = np.flatnonzero(magnitude == cut)[: k - above.size]
        top = np.concatenate([above, at])
    else:
        top = np.arange(magnitude.shape[0])
    order = np.lexsort((top, -magnitude[top]))
    return top[order].astype(np.int64)


def _num(x: float) -> str:
    if not math.isfinite(x):
        return str(x)
    return f"{x:.4g}"


def _pct(x: float) -> str:
    return "n/a" if not math.isfinite(x) else f"{x:.1%}"


def _term_finding(ctx: DiagnosisContext, candidate: Candidate, table: TermTable, row: dict) -> Finding:
    name = row["term"]
    values = candidate.terms[name]
    rows = largest_rows(values)
    numbers = (f"mean {_num(row['mean'])} (min {_num(row['min'])}, max {_num(row['max'])}), std {_num(row['std'])}, "
               f"{_pct(row['share'])} of the reward's variance"
               + (f" ({_pct(row['episode_share'])} of the returns')" if math.isfinite(row["episode_share"]) else "")
               + f", non-zero on {_pct(row['nonzero_fraction'])} of rows")
    verdict = "info"
    summary = f"term {name!r}: {numbers}"
    if row["flat"]:
        verdict = "warn"
        ratio = row["std"] / table.total_std if table.total_std else 0.0
        summary = (f"term {name!r} is flat (near identical throughout: its std is {_pct(ratio)} of the reward's"
                   + (f", its returns' {_pct(row['episode_std'] / table.episode_return_std)}"
                      if math.isfinite(row["episode_std"]) and table.episode_return_std else "")
                   + f"): it barely changes what is learned; rescale it, change it or drop it. {numbers}")
    elif row["dominating"]:
        verdict = "warn"
        summary = (f"term {name!r} dominates the reward (the others barely count beside it): rescale it or the "
                   f"other terms. {numbers}")
    evidence = {k: v for k, v in row.items()}
    evidence.update(flat_ratio=FLAT_RATIO, dominating_share=DOMINATING_SHARE,
                    dominating_scale_ratio=DOMINATING_SCALE_RATIO)
    return Finding(NAME, candidate.name, verdict, summary, evidence=evidence, rows=tuple(rows),
                   episodes=ctx.episodes_of(rows) if rows.size else (),
                   other=ctx.base.name if ctx.base is not None and ctx.base is not candidate else None)


def _sum_finding(ctx: DiagnosisContext, candidate: Candidate, table: TermTable) -> Finding:
    names = table.terms
    flat = table.frame.filter("flat")["term"].to_list()
    dominating = table.frame.filter("dominating")["term"].to_list()
    evidence = {"terms": names, "sums_to_total": table.sums_to_total, "sum_residual": table.sum_residual,
                "sum_tolerance": table.sum_tolerance, "sum_rtol": SUM_RTOL, "total_std": table.total_std,
                "total_max_abs": table.total_max_abs, "episode_return_std": table.episode_return_std,
                "flat": flat, "dominating": dominating}
    listed = ", ".join(map(repr, names))
    rows = np.zeros(0, dtype=np.int64)
    if table.sums_to_total:
        summary = (f"{len(names)} term{'s' if len(names) != 1 else ''} ({listed}) sum to the reward (largest "
                   f"difference {_num(table.sum_residual)}, tolerance {_num(table.sum_tolerance)})")
    elif table.sums_to_total is None:
        summary = f"{len(names)} term{'s' if len(names) != 1 else ''} ({listed}); no row has every term and the reward"
    else:
        residual = np.sum(np.stack([candidate.terms[t] for t in names]), axis=0) - candidate.rewards
        rows = largest_rows(residual)
        summary = (f"the terms ({listed}) do not sum to the reward (largest difference {_num(table.sum_residual)}, "
                   f"tolerance {_num(table.sum_tolerance)}): allowed, but then the shares need not add up to 1")
    notes = ([f"flat: {', '.join(map(repr, flat))}"] if flat else []) + (
        [f"dominating: {', '.join(map(repr, dominating))}"] if dominating else [])
    if notes:
        summary += "; " + "; ".join(notes)
    return Finding(NAME, candidate.name, "info", summary, evidence=evidence, rows=tuple(rows),
                   episodes=ctx.episodes_of(rows) if rows.size else ())


def run_terms(ctx: DiagnosisContext) -> list[Finding]:
    """The ``terms`` findings of every candidate (and of the base, when it reports terms).

    Examples
    --------
    >>> run_terms(ctx)  # doctest: +SKIP
    [Finding(diagnostic='terms', candidate='shaped', verdict='info', ...), ...]
    """
    findings: list[Finding] = []
    reviewed = list(ctx.candidates)
    if ctx.base is not None and ctx.base.terms and ctx.base not in reviewed:
        reviewed.append(ctx.base)
    for candidate in reviewed:
        if not candidate.terms:
            why = ('the plug-in reports no terms: write data["next", "reward_terms", NAME] beside the reward to '
                   "see them" if candidate.is_plugin else
                   "a reward column has no terms: pass the plug-in file as the candidate to see its terms")
            findings.append(Finding(NAME, candidate.name, "n/a", why))
            continue
        reference = (ctx.base.rewards if ctx.base is not None and ctx.base is not candidate else None)
        table = term_table(candidate.terms, candidate.rewards, reference=reference,
                           episode_starts=ctx.episode_starts)
        findings.append(_sum_finding(ctx, candidate, table))
        findings += [_term_finding(ctx, candidate, table, row) for row in table.frame.iter_rows(named=True)]
    return findings


#: The registered diagnostic.
DIAGNOSTIC = register_diagnostic(Diagnostic(NAME, "terms of a composite reward", run_terms, doc=DOC, order=10))
