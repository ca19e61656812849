"""The ``ranks`` diagnostic: rank-vector sensitivity of a mahjong rank reward on recorded data.

For each candidate that pays a pure rank vector at the end of each game (read
back exactly from its rewards), it reports per entry the rank's frequency,
the derivative of the expected reward per game and per step, the mean reward
of each final rank, the break-even value, how the order of groups of players
(by grade, by seat) by expected reward moves with the entry, and whether the
entry matters on this data.  The math is
:mod:`rewardlab.domains.mahjong.sensitivity`; :data:`DOC` is the reader's text.

Examples
--------
>>> from rewardlab.diagnostics import get_diagnostic
>>> get_diagnostic("ranks").title
'rank-vector sensitivity'
"""

from __future__ import annotations

import numpy as np
import polars as pl

from rewardlab.core.errors import RewardlabError
from rewardlab.diagnostics.base import Diagnostic, DiagnosisContext, Finding, register_diagnostic
from rewardlab.domains.mahjong.families.preset_values import RANKING_PRESETS
from rewardlab.domains.mahjong.rank_statistics import recover_rank_vector
from rewardlab.domains.mahjong.ranking import RankTable, affine_equivalence
from rewardlab.domains.mahjong.rules import PLACES
from rewardlab.domains.mahjong.sensitivity import RankReward, RankSensitivity, rank_sensitivity
from rewardlab.sources.kanachan import schema as S

__all__ = ["NAME", "DOC", "EXAMPLES_PER_RANK", "MIN_GROUP", "run", "rank_table_of", "groupings_of",
           "matching_preset", "finding_of"]

NAME = "ranks"

#: Example games per final rank in a finding's ``episodes``.
EXAMPLES_PER_RANK = 3

#: Groups (grades, seats) with fewer episodes are left out of the order analysis.
MIN_GROUP = 10

DOC = """\
**Rank-vector sensitivity** (mahjong data; candidates that pay a rank vector at the end of each game).

*Definition.* A candidate is a rank vector on this data when it pays 0 on every step but a game's last one,
and the same value `v_k` to every game that ends in place `k`; `v` is then read back exactly from the rewards
(after its normalization: a positive affine map of the raw vector, which orders policies the same way).
With the recorded final ranks fixed, per entry `k`:

- `p_k`, the fraction of episodes finishing k-th, with a bootstrap interval over games;
- the derivative of the expected reward per game, `p_k / std`, and per step (every transition),
  `count_k / (rows * std)` (the tuner's two scopes);
- the mean reward of each final rank (only rank `k`'s moves with `v_k`, one for one);
- the break-even value: the `v_k` at which the expected reward per game is 0. Tenhou's stable rank is a
  function of the rank distribution alone, so no entry moves it; it is the break-even of the 4th entry of
  Tenhou's vector `[P1, P2, 0, -15 (d + 2)]`, expressed as `d`;
- for groups of players (the player's grade, the seat), the range of `v_k` over which the groups' order by
  expected reward stays as it is (`order_low`, `order_high`), whether it changes when `v_k` moves by the
  vector's spread (`flips`), and Kendall's tau between the groups' expected rewards and their stable ranks
  at `v` and with `v_k` moved (`tau_down`, `tau_up`): the decision-relevant part, since which players or
  policies a reward prefers is what it decides.

An entry **does not matter** on this data when its rank never occurs (never paid: not identifiable), or when,
in every grouping, the groups finish k-th at rates that do not differ beyond sampling noise (Pearson's
chi-square test of homogeneity across the groups, at level `1 - 0.95`; one test per entry and grouping, not
one per pair). Then moving `v_k` shifts every group's expected reward alike. The effect's size is shown
beside it: the most different pair of groups and the bootstrap interval of their difference. Adding a constant to every entry or scaling the vector by a positive number changes no order and
no verdict here.

*Assumptions.* The recorded ranks are fixed: this is the reward's sensitivity on this data, not a
prediction of how a policy trained on another vector would play. Games are the resampling unit (the four
players of a game are not independent). On data holding all four players of every game, every `p_k` is
exactly 1/4 and the expected reward is the vector's mean whatever the play: only comparisons between
groups say anything there. A reward with a score term (the ranking + points family) or any other
per-step payment is not a pure rank vector: `n/a`.

*How to read.* `warn` names the entries that do not matter; their values can be set to anything in the
reported range without changing any comparison this data can support. `info`: every entry matters. The
episodes are example games ending in each place (1st, 2nd, 3rd, 4th, then again).
"""


def rank_table_of(ctx: DiagnosisContext) -> RankTable | str:
    """The context's :class:`RankTable`, or why there is none (a sentence).

    Examples
    --------
    >>> rank_table_of(ctx)  # doctest: +SKIP
    """
    if getattr(ctx.contract, "name", None) != "kanachan":
        what = f"a {ctx.spec.name!r} frame" if ctx.spec is not None else "this frame"
        return f"applies to mahjong (kanachan) frames with final ranks, not to {what}"
    try:
        table = RankTable.from_frame(ctx.frame)
    except RewardlabError as exc:
        return f"not a mahjong (kanachan) frame: {exc}"
    if table.n_rows != ctx.n:
        return f"the rank table has {table.n_rows} rows, the context {ctx.n}"
    return table


def groupings_of(frame: pl.DataFrame, table: RankTable) -> dict:
    """The groupings of episodes the order analysis uses: the player's grade (when the frame has grades)
    and the seat, each a label array ``[E]``.

    Examples
    --------
    >>> list(groupings_of(frame, table))  # doctest: +SKIP
    ['grade', 'seat']
    """
    out = {}
    if S.GRADES in frame.columns:
        own = frame.select(pl.col(S.GRADES).arr.get(pl.col(S.SEAT).cast(pl.Int64)))[:, 0].to_numpy()
        out["grade"] = own[table.row].astype(np.int64)
    out["seat"] = table.seat.astype(np.int64)
    return out


def matching_preset(vector) -> str | None:
    """The shipped ranking preset equal to ``vector`` up to a positive scale and a shift, or None.

    Examples
    --------
    >>> matching_preset([1.5, -0.5, -0.5, -0.5])
    'top'
    """
    v = np.asarray(vector, dtype=np.float64)
    if not np.all(np.isfinite(v)):
        return None
    for name, preset in RANKING_PRESETS.items():
        if affine_equivalence(preset["vector"], v, atol=1e-7).equivalent:
            return name
    return None


def _examples(ctx: DiagnosisContext, table: RankTable) -> tuple[list, list]:
    picks = [np.flatnonzero(table.rank == k)[:EXAMPLES_PER_RANK] for k in range(S.NUM_SEATS)]
    order = [int(at[i]) for i in range(EXAMPLES_PER_RANK) for at in picks if i < at.size]
    rows = [int(table.row[e]) for e in order]
    return rows, list(ctx.episodes_of(rows)) if rows else []


def _na(name: str, summary: str, rows=(), episodes=(), **evidence) -> Finding:
    return Finding(NAME, name, "n/a", summary, evidence=evidence, rows=rows, episodes=episodes)


def _points_hint(table: RankTable, x: np.ndarray) -> str:
    """' (it grows with the final score: ...)' when the within-rank residual follows the score."""
    means = np.bincount(table.rank, weights=x, minlength=S.NUM_SEATS) / np.maximum(table.counts, 1)
    resid = x - means[table.rank]
    score = table.final_score.astype(np.float64)
    score = score - (np.bincount(table.rank, weights=score, minlength=S.NUM_SEATS)
                     / np.maximum(table.counts, 1))[table.rank]
    if np.std(resid) > 0 and np.std(score) > 0 and np.corrcoef(resid, score)[0, 1] > 0.9:
        return " (within a rank it grows with the final score: a score term, as the ranking + points family has)"
    return ""


def _lists(prefix: str, *arrays) -> dict:
    return {f"{prefix}{suffix}": np.asarray(a).tolist() for suffix, a in zip(("", "_low", "_high"), arrays)}


def finding_of(ctx: DiagnosisContext, name: str, rewards: np.ndarray, table: RankTable, groupings: dict
               ) -> Finding:
    """The ``ranks`` finding of one candidate's rewards ``[N]`` (see :data:`DOC`).

    Examples
    --------
    >>> finding_of(ctx, "top", ctx.candidate("top").rewards, table, groupings_of(ctx.frame, table))  # doctest: +SKIP
    """
    rewards = np.asarray(rewards, dtype=np.float64)
    ends = np.zeros(rewards.shape[0], dtype=bool)
    ends[table.row] = True
    before = np.flatnonzero(~ends & (rewards != 0))
    if before.size:
        return _na(name, f"not a pure rank vector: it pays a reward before the end of the game on "
                   f"{before.size:,} rows", rows=before, episodes=ctx.episodes_of(before[:1000]),
                   rows_paid_before_end=int(before.size))
    at_end = rewards[table.row]
    if not np.all(np.isfinite(at_end)):
        bad = table.row[~np.isfinite(at_end)]
        return _na(name, "not a pure rank vector: non-finite rewards at the end of games", rows=bad,
                   episodes=ctx.episodes_of(bad))
    fit = recover_rank_vector(table.rank, at_end)
    if not fit.pure:
        k = int(np.nanargmax(fit.spread))
        row = int(table.row[fit.worst])
        return _na(name, f"not a pure rank vector on this data: games ending {PLACES[k]} are paid different "
                   f"rewards (spread {fit.spread[k]:.4g}){_points_hint(table, at_end)}",
                   rows=[row], episodes=ctx.episodes_of([row]), spread=fit.spread.tolist())
    present = fit.counts > 0
    filled = np.where(present, fit.vector, np.nanmean(fit.vector))
    opts = ctx.options
    runs: dict[str, RankSensitivity] = {}
    for label, groups in groupings.items():
        runs[label] = rank_sensitivity(table, RankReward(filled), groups=groups, min_group=MIN_GROUP,
                                       n_resamples=opts.bootstrap, seed=opts.seed)
    base = next(iter(runs.values())) if runs else rank_sensitivity(
        table, RankReward(filled), n_resamples=opts.bootstrap, seed=opts.seed)
    with_groups = {label: s for label, s in runs.items() if s.groups is not None}
    if with_groups:
        matters = present & np.any([s.matters for s in with_groups.values()], axis=0)
    else:
        matters = base.matters.copy()
    reasons = []
    for k in range(S.NUM_SEATS):
        if not present[k] or not with_groups:
            reasons.append(base.reasons[k])
        else:
            reasons.append("; ".join(f"by {label}: {s.reasons[k]}" for label, s in with_groups.items()))
    preset = matching_preset(fit.vector) if present.all() else None
    evidence = {
        "vector": fit.vector.tolist(), "preset": preset or "", "counts": fit.counts.tolist(),
        **_lists("p", base.probabilities, base.probabilities_low, base.probabilities_high),
        **_lists("d_per_game", base.per_game, base.per_game_low, base.per_game_high),
        **_lists("d_per_step", base.per_step, base.per_step_low, base.per_step_high),
        **_lists("mean_by_rank", base.mean_by_rank, base.mean_by_rank_low, base.mean_by_rank_high),
        **_lists("break_even", base.break_even, base.break_even_low, base.break_even_high),
        **_lists("expected_per_game", *base.expected_game), **_lists("expected_per_step", *base.expected_step),
        **_lists("stable_rank", *base.stable_rank),
        "complete_games": base.complete_games, "games": base.n_games, "bootstrap": base.n_resamples,
        "step": base.step, "matters": matters.tolist(), "reasons": reasons,
    }
    for label, s in with_groups.items():
        g = s.groups
        evidence.update({
            f"{label}_groups": int(g.labels.size), f"{label}_tau": g.tau, f"{label}_tau_down": g.tau_down.tolist(),
            f"{label}_tau_up": g.tau_up.tolist(), f"{label}_order_low": g.order_low.tolist(),
            f"{label}_order_high": g.order_high.tolist(), f"{label}_flips": g.flips.tolist(),
            f"{label}_differs": g.differs.tolist(), f"{label}_chi2": g.chi2.tolist(),
            f"{label}_p_value": g.p_value.tolist(),
            f"{label}_pair": [f"{g.labels[a]} vs {g.labels[b]}" for a, b in g.pair],
            **_lists(f"{label}_difference", g.difference, g.difference_low, g.difference_high),
        })
    rows, episodes = _examples(ctx, table)
    shown = "(" + ", ".join("-" if np.isnan(x) else f"{x:.4g}" for x in fit.vector) + ")"
    same = f" (preset {preset!r} up to shift and scale)" if preset else ""
    quiet = [PLACES[k] for k in range(S.NUM_SEATS) if not matters[k]]
    if quiet:
        why = [f"{PLACES[k]}: " + ("never occurs, never paid" if not present[k] else
                                   "every grouping (" + ", ".join(with_groups) + ") finishes there at rates "
                                   "equal within noise")
               for k in range(S.NUM_SEATS) if not matters[k]]
        summary = (f"rank vector {shown}{same}: the {', '.join(quiet)} entr{'y' if len(quiet) == 1 else 'ies'} "
                   f"do{'es' if len(quiet) == 1 else ''} not matter on this data (" + "; ".join(why)
                   + "); moving them shifts every group's expected reward alike")
        verdict = "warn"
    else:
        summary = (f"rank vector {shown}{same}: every entry matters on this data; d(expected reward per "
                   "game)/d v_k = " + ", ".join(f"{x:.3g}" for x in base.per_game))
        verdict = "info"
    return Finding(NAME, name, verdict, summary, evidence=evidence, rows=rows, episodes=episodes)


def run(ctx: DiagnosisContext) -> list[Finding]:
    """One finding per candidate: its rank-vector sensitivity, or ``n/a`` with the reason.

    Examples
    --------
    >>> run(ctx)[0].verdict  # doctest: +SKIP
    'warn'
    """
    table = rank_table_of(ctx)
    if isinstance(table, str):
        return [_na(c.name, table) for c in ctx.candidates]
    try:
        groupings = groupings_of(ctx.frame, table)
    except (RewardlabError, pl.exceptions.PolarsError):  # an odd grades column: seats only
        groupings = {"seat": table.seat.astype(np.int64)}
    return [finding_of(ctx, c.name, c.rewards, table, groupings) for c in ctx.candidates]


register_diagnostic(Diagnostic(NAME, "rank-vector sensitivity", run, doc=DOC, order=60))
