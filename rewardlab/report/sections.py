"""The report's parts, each a function from the diagnosis' pieces to an HTML fragment.

Every fragment is built from escaped text (:mod:`rewardlab.report.html`) and
embedded pictures (:mod:`rewardlab.report.figures`); anchors are numbered
(``cand-0``, ``cand-0-ep-12``), never made of names.  :func:`rewardlab.report.build_report`
puts them together.

Examples
--------
>>> from rewardlab.diagnostics import Finding
>>> "v-warn" in verdict_table(["a"], [Finding("x", "a", "warn", "look")], {})
True
"""

from __future__ import annotations

import dataclasses

import numpy as np
import polars as pl

from rewardlab.analysis.compare import compare_rewards
from rewardlab.analysis.limits import display_limits
from rewardlab.analysis.stats import DEFAULT_QUANTILES, reward_stats
from rewardlab.diagnostics.base import VERDICTS, worst_verdict
from rewardlab.plots import (
    plot_correlation_heatmap, plot_episode_steps, plot_return_distribution, plot_reward_distribution,
    plot_term_shares,
)
from rewardlab.plots.diagnostics import plain_label
from rewardlab.report.figures import new_figure, png_data_uri
from rewardlab.report.html import markdown, number, table, text, value, verdict_badge

__all__ = [
    "EPIC_DIAGNOSTIC", "EPIC_DISTANCE_KEYS", "EPIC_STDERR_KEYS", "figure_html", "verdict_table", "statistics_table",
    "findings_table_html", "terms_section", "episode_choice", "episode_section", "comparison_section",
    "doc_section", "episode_returns", "distribution_figures", "options_text",
]

#: The diagnostic whose pair findings carry EPIC distances.
EPIC_DIAGNOSTIC = "epic"
#: Evidence keys read, in this order, for an EPIC finding's distance and its standard error.
EPIC_DISTANCE_KEYS = ("distance", "epic", "epic_distance")
EPIC_STDERR_KEYS = ("stderr", "std_error", "standard_error", "se")
#: Rows of a finding listed in its table row (the evidence counts them all).
ROWS_SHOWN = 8
#: Verdicts whose findings choose the episode examples, worst first.
TELLING = ("fail", "warn", "info")


def figure_html(fig, caption: str = "", alt: str = "") -> str:
    """``<figure>`` with the figure as an embedded PNG (``caption`` and ``alt`` are escaped here)."""
    cap = f"<figcaption>{text(caption)}</figcaption>" if caption else ""
    return f'<figure><img src="{png_data_uri(fig)}" alt="{text(alt or caption)}">{cap}</figure>'


def _pick(evidence, keys):
    for k in keys:
        if k in evidence:
            return evidence[k]
    return None


def verdict_table(names, findings, titles: dict, *, anchors: dict | None = None) -> str:
    """Diagnostic x candidate: the worst verdict of each cell's findings (and how many), colour-coded.

    One row per diagnostic (they are many, candidates few), one column per candidate.

    Parameters
    ----------
    names : sequence of str
        The candidates, in order (the columns).
    findings : sequence of Finding
    titles : mapping of str to str
        Each diagnostic's title, shown beside its name.
    anchors : mapping of str to str, optional
        Each candidate's section anchor (its name becomes a link).
    """
    diagnostics = list(dict.fromkeys(f.diagnostic for f in findings))
    if not diagnostics:
        return '<p class="note">No diagnostic reported a finding.</p>'
    header = "<tr><th>diagnostic</th>" + "".join(
        "<th>" + (f'<a href="#{anchors[n]}">{text(n)}</a>' if anchors and n in anchors else text(n)) + "</th>"
        for n in names) + "</tr>"
    rows = []
    for d in diagnostics:
        cells = [f"<td><strong>{text(d)}</strong>"
                 + (f'<br><span class="muted">{text(titles[d])}</span>' if titles.get(d) else "") + "</td>"]
        for name in names:
            mine = [f for f in findings if f.diagnostic == d and f.candidate == name]
            worst = worst_verdict(mine)
            if worst is None:
                cells.append('<td class="muted">–</td>')
                continue
            count = f" ×{len(mine)}" if len(mine) > 1 else ""
            tip = " | ".join(f"{f.verdict}: {f.summary}" for f in mine)[:600]
            cells.append(f'<td title="{text(tip)}">{verdict_badge(worst, worst + count)}</td>')
        rows.append("<tr>" + "".join(cells) + "</tr>")
    legend = " ".join(verdict_badge(v) for v in VERDICTS)
    return (f'<div class="scroll"><table class="verdicts"><thead>{header}</thead><tbody>{"".join(rows)}'
            "</tbody></table></div>"
            f'<p class="note">Each cell: the worst verdict of the diagnostic\'s findings on the candidate '
            f'(×N: N findings; hover for their summaries). Verdicts, worst first: {legend}</p>')


def episode_returns(rewards: np.ndarray, starts: np.ndarray) -> np.ndarray:
    """Each episode's undiscounted return (``[E]``), compensated sums in step order
    (:func:`rewardlab.analysis.sums.segment_sums`)."""
    from rewardlab.analysis.sums import segment_sums

    return segment_sums(rewards, starts[:-1])


def statistics_table(rewards: np.ndarray, returns: np.ndarray, dtype: str) -> str:
    """Step rewards and episode returns: count, mean, std, min, quantiles, max, zero share
    (:func:`rewardlab.analysis.stats.reward_stats`, exact quantiles)."""
    qs = DEFAULT_QUANTILES
    rows = []
    for what, x in (("step reward", rewards), ("episode return", returns)):
        s = reward_stats(pl.DataFrame({"reward_v": x}), "v", quantiles=qs)
        rows.append([text(what), number(s.count), number(s.mean), number(s.std), number(s.min),
                     *(number(s.quantiles[q]) for q in qs), number(s.max), f"{s.zero_fraction:.1%}"
                     if s.count else "–"])
    header = ["", "count", "mean", "std", "min", *(f"q{q:g}" for q in qs), "max", "zero"]
    return table(header, rows) + f'<p class="note">Rewards returned as {text(dtype)}; std is the population ' \
                                 'standard deviation; returns are undiscounted sums over each episode.</p>'


def _rows_text(rows, count) -> str:
    if not rows:
        return "–"
    shown = ", ".join(f"{r:,}" for r in rows[:ROWS_SHOWN])
    total = max(len(rows), count or 0)
    return shown + (f", … ({total:,} in all)" if total > ROWS_SHOWN else "")


def findings_table_html(findings, titles: dict, *, episode_anchor=None) -> str:
    """One row per finding: diagnostic, verdict, other side, summary, evidence, rows and episodes.

    ``episode_anchor(e)`` gives the anchor of an episode shown as an example (its number becomes a link), or None.
    """
    if not findings:
        return '<p class="note">No findings on this candidate.</p>'
    rows = []
    for f in sorted(findings, key=lambda f: VERDICTS.index(f.verdict)):
        evidence = "<br>".join(f"{text(k)}: {value(v)}" for k, v in f.evidence.items()) or "–"
        episodes = []
        for e in f.episodes[:ROWS_SHOWN]:
            anchor = episode_anchor(e) if episode_anchor is not None else None
            episodes.append(f'<a href="#{anchor}">{e:,}</a>' if anchor else f"{e:,}")
        more = f", … ({len(f.episodes):,} in all)" if len(f.episodes) > ROWS_SHOWN else ""
        title = titles.get(f.diagnostic)
        rows.append([
            text(f.diagnostic) + (f'<br><span class="muted">{text(title)}</span>' if title else ""),
            verdict_badge(f.verdict), text(f.other) if f.other is not None else "–",
            text(f.summary), evidence, _rows_text(f.rows, f.evidence.get("rows")),
            (", ".join(episodes) + more) if episodes else "–",
        ])
    return table(["diagnostic", "verdict", "versus", "summary", "evidence", "rows", "episodes"], rows,
                 cls="data findings")


def terms_section(name: str, rewards: np.ndarray, terms: dict, base: np.ndarray | None) -> str:
    """A composite reward's terms: mean, std, min, max, zero share, share of the total's variance,
    correlation with the total (and with the base), and a bar chart of the shares."""
    if not terms:
        return ""
    total = np.asarray(rewards, dtype=np.float64)
    var = float(np.var(total))
    names, shares, scales, rows = [], [], [], []

    def corr(a, b):
        sa, sb = float(np.std(a)), float(np.std(b))
        return float(np.mean((a - a.mean()) * (b - b.mean())) / (sa * sb)) if sa > 0 and sb > 0 else float("nan")

    for term, x in terms.items():
        x = np.asarray(x, dtype=np.float64)
        share = float(np.mean((x - x.mean()) * (total - total.mean())) / var) if var > 0 else float("nan")
        names.append(str(term))
        shares.append(share)
        scales.append(float(np.std(x)))
        row = [text(term), number(float(x.mean())), number(float(np.std(x))), number(float(x.min()) if x.size else None),
               number(float(x.max()) if x.size else None),
               f"{np.mean(x == 0):.1%}" if x.size else "–", f"{share:.1%}" if np.isfinite(share) else "n/a",
               number(corr(x, total))]
        if base is not None:
            row.append(number(corr(x, np.asarray(base, dtype=np.float64))))
        rows.append(row)
    header = ["term", "mean", "std", "min", "max", "zero", "share of variance", "corr. with total"]
    if base is not None:
        header.append("corr. with base")
    fig = new_figure(8.0, 0.5 + 0.42 * len(names))
    plot_term_shares(names, np.asarray(shares), np.asarray(scales), ax=fig.axes[0])
    return ("<h3>Terms</h3>" + table(header, rows)
            + '<p class="note">Share of variance: cov(term, total) / var(total); the shares add up to 100% when '
              'the terms add up to the reward.</p>'
            + figure_html(fig, f"Share of the total's variance per term of {name}"))


def episode_choice(findings, returns: np.ndarray, k: int) -> list[int]:
    """Up to ``k`` episodes to show: those the telling findings name (worst verdict first, each finding's
    own order), then typical ones (returns nearest the median)."""
    chosen: list[int] = []
    for verdict in TELLING:
        for f in findings:
            if f.verdict != verdict:
                continue
            for e in f.episodes:
                if len(chosen) >= k:
                    return chosen
                if e not in chosen and 0 <= e < returns.size:
                    chosen.append(int(e))
    if len(chosen) < k and returns.size:
        finite = np.where(np.isfinite(returns), returns, np.inf)
        order = np.argsort(np.abs(finite - np.median(returns[np.isfinite(returns)]) if np.isfinite(returns).any()
                                  else finite), kind="stable")
        for e in order:
            if len(chosen) >= k:
                break
            if int(e) not in chosen:
                chosen.append(int(e))
    return chosen


def episode_section(ctx, candidate, episode: int, findings, *, anchor: str) -> str:
    """One episode: the candidate's (and the base's) reward at every step, the steps findings name marked."""
    starts = ctx.episode_starts
    lo, hi = int(starts[episode]), int(starts[episode + 1])
    frame, spec = ctx.frame, ctx.spec
    step_col = getattr(spec, "step", None)
    if step_col is not None and step_col in frame.columns and frame.schema[step_col].is_numeric():
        steps = frame.get_column(step_col).slice(lo, hi - lo).cast(pl.Float64).to_numpy()
    else:
        steps = np.arange(hi - lo, dtype=np.float64)
    series = {candidate.name: candidate.rewards[lo:hi]}
    base = ctx.base
    if base is not None and base.name != candidate.name:
        series[base.name] = base.rewards[lo:hi]
    naming = [f for f in findings if episode in f.episodes or any(lo <= r < hi for r in f.rows)]
    rows = sorted({r for f in naming if f.verdict in TELLING for r in f.rows if lo <= r < hi})
    marked = np.asarray(rows, dtype=np.int64) - lo
    last = hi - 1
    ended = ("terminated" if ctx.terminated[last] else "truncated" if ctx.truncated[last] else "ended")
    keys = {k: frame.get_column(k)[lo] for k in getattr(spec, "episode", ()) if k in frame.columns}
    label = ", ".join(f"{k} {v}" for k, v in keys.items()) or f"episode {episode}"
    fig = new_figure(9.0, 2.0 + 1.4 * len(series), n=len(series), ncols=1)
    for k, (name, rewards) in enumerate(series.items()):
        plot_episode_steps(steps, {name: rewards}, ax=fig.axes[k], marked=marked, ended=ended, color=f"C{k}",
                           title=f"{label}: reward at every step" if k == 0 else "")
        if k < len(series) - 1:
            fig.axes[k].set_xlabel("")
    facts = table(["episode", "key", "steps", "ended", *(f"return of {n}" for n in series), "named by"], [[
        f"{episode:,}", text(label), f"{hi - lo:,}", text(ended),
        *(number(float(np.sum(v))) for v in series.values()),
        ", ".join(f"{text(f.diagnostic)} {verdict_badge(f.verdict)}" for f in naming) or "a typical episode "
        "(return near the median)"]])
    return (f'<div id="{anchor}"><h4>Episode {episode:,} ({text(label)})</h4>{facts}'
            + figure_html(fig, f"{candidate.name}: reward per step of episode {episode}"
                          + (f"; {len(rows)} step(s) named by findings marked red" if rows else ""))
            + "</div>")


def _heatmap(matrix: np.ndarray, names, *, vmin: float, vmax: float, caption: str) -> str:
    labels = [plain_label(n) for n in names]
    frame = pl.DataFrame({"reward": labels} | {lab: matrix[:, i] for i, lab in enumerate(labels)})
    side = max(3.6, 0.5 * len(names)) + 0.08 * max(len(x) for x in labels)
    fig = new_figure(side + 1.4, side)
    plot_correlation_heatmap(frame, ax=fig.axes[0], vmin=vmin, vmax=vmax)
    return figure_html(fig, caption)


def _matrix_table(matrix: np.ndarray, names, fmt=number, stderr: np.ndarray | None = None) -> str:
    rows = []
    for i, a in enumerate(names):
        cells = [f"<strong>{text(a)}</strong>"]
        for j in range(len(names)):
            v = matrix[i, j]
            cell = fmt(v) if np.isfinite(v) else "–"
            if stderr is not None and np.isfinite(stderr[i, j]) and i != j:
                cell += f" ± {number(stderr[i, j], 2)}"
            cells.append(cell)
        rows.append(cells)
    return table(["", *names], rows)


def comparison_section(series: list, starts: np.ndarray, findings) -> str:
    """Correlation heat maps of episode returns, and EPIC distances from the ``epic`` findings (with their
    standard errors) or, when there are none, the labelled fallback: the Pearson distance of episode returns."""
    names = [c.name for c in series]
    if len(names) < 2:
        return '<p class="note">One reward only: nothing to compare.</p>'
    safe = [f"c{i}" for i in range(len(names))]  # column names that clash with nothing ("episode", ...)
    returns = pl.DataFrame({"episode": np.arange(starts.size - 1, dtype=np.int64)}
                           | {s: episode_returns(c.rewards, starts) for s, c in zip(safe, series)})
    cmp = compare_rewards(returns)
    out = [f'<p>{len(names)} rewards over {cmp.episodes:,} episodes (their undiscounted returns).</p>',
           '<div class="grid">',
           _heatmap(cmp.pearson, names, vmin=-1.0, vmax=1.0, caption="Pearson correlation of episode returns"),
           _heatmap(cmp.spearman, names, vmin=-1.0, vmax=1.0, caption="Spearman correlation of episode returns"),
           "</div>"]
    index = {n: i for i, n in enumerate(names)}
    epic = [f for f in findings if f.diagnostic == EPIC_DIAGNOSTIC]
    measured = [f for f in epic if f.other is not None and f.candidate in index and f.other in index
                and isinstance(_pick(f.evidence, EPIC_DISTANCE_KEYS), (int, float))]
    out.append("<h3>EPIC distance (invariant to shaping and scale)</h3>")
    if measured:
        k = len(names)
        dist, err = np.full((k, k), np.nan), np.full((k, k), np.nan)
        np.fill_diagonal(dist, 0.0)
        for f in measured:
            i, j = index[f.candidate], index[f.other]
            d, se = _pick(f.evidence, EPIC_DISTANCE_KEYS), _pick(f.evidence, EPIC_STDERR_KEYS)
            dist[i, j] = dist[j, i] = float(d)
            err[i, j] = err[j, i] = float(se) if isinstance(se, (int, float)) else np.nan
        out.append('<p class="note">Gleave et al. (2021): canonicalized rewards over recorded transitions, '
                   "then sqrt((1 − ρ) / 2); 0 = the same reward up to potential shaping and positive scale. "
                   "± is the standard error over independent samples.</p>")
        out.append(_matrix_table(dist, names, stderr=err))
        out.append(_heatmap(dist, names, vmin=0.0, vmax=1.0, caption="EPIC distance between the rewards"))
    else:
        why = "; ".join(dict.fromkeys(f.summary for f in epic if f.verdict == "n/a"))
        out.append('<p class="note"><strong>Not measured</strong>: ' + (text(why) if why else
                   "no EPIC finding in this diagnosis") + ". Shown instead, labelled as what it is: the "
                   "<em>Pearson distance of episode returns</em> sqrt((1 − ρ) / 2), with no canonicalization, "
                   "so it is <em>not</em> invariant to shaping and is not EPIC.</p>")
        fallback = getattr(cmp, "pearson_distance", None)
        if fallback is None:
            fallback = getattr(cmp, "epic")
        out.append(_matrix_table(np.asarray(fallback), names))
    return "".join(out)


def doc_section(name: str, title: str, doc: str) -> str:
    """A diagnostic's registered documentation ("how to read it"), its markdown rendered from escaped text."""
    body = markdown(doc) if doc and doc.strip() else '<p class="note">No documentation registered.</p>'
    return f"<h3>{text(name)}: {text(title)}</h3><div class=\"doc\">{body}</div>"


def distribution_figures(candidate, returns: np.ndarray) -> str:
    """The candidate's step-reward distribution (nonzero steps) and episode-return distribution, side by side."""
    label = plain_label(candidate.name)
    fig = new_figure(5.6, 3.2)
    x = candidate.rewards
    plot_reward_distribution({label: x}, ax=fig.axes[0], limits=display_limits(x, nonzero=True))
    fig.axes[0].set_title("Reward per step (nonzero steps)", fontsize="medium")
    fig2 = new_figure(5.6, 3.2)
    plot_return_distribution({label: returns}, ax=fig2.axes[0], limits=display_limits(returns),
                             bins=max(5, min(40, returns.size // 2 or 1)))
    fig2.axes[0].set_title("Return per episode", fontsize="medium")
    return ('<div class="grid">' + figure_html(fig, f"{candidate.name}: distribution of the nonzero step rewards")
            + figure_html(fig2, f"{candidate.name}: distribution of the episode returns") + "</div>")


def options_text(options) -> str:
    """The diagnosis options as ``name value`` pairs (any dataclass; else its ``repr``), escaped.

    Examples
    --------
    >>> from rewardlab.diagnostics import DiagnosisOptions
    >>> options_text(DiagnosisOptions())[:41]
    'gamma <code>0.99</code>, basis <code>auto'
    """
    if options is None:
        return "defaults"
    if not dataclasses.is_dataclass(options):
        return text(repr(options))
    return ", ".join(f"{text(f.name)} <code>{value(getattr(options, f.name))}</code>"
                     for f in dataclasses.fields(options))
