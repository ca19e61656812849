"""The stand-alone HTML report of a diagnosis: :func:`build_report`, :func:`diagnosis_report`, :func:`write_report`.

One HTML file, read in any browser without Python, a server or the network:
its style is inline, its pictures embedded PNGs (``data:`` URIs), and it holds
no script.  Its parts, in order:

1. a header: data, rows, episodes, candidates, base, spec and contract,
   options, rewardlab's version, the date;
2. the verdicts: candidate x diagnostic, colour-coded, each cell linking the
   candidate's part;
3. per candidate: statistics of its step rewards and episode returns, their
   distributions, its findings with their evidence and the rows and episodes
   they name, its terms (a table and their shares of the variance) when it
   reports terms, and one to ``max_episodes`` episodes step by step (those the
   findings name first, with the steps they name marked, then typical ones);
4. the comparison: correlation heat maps of episode returns and the EPIC
   distances with their standard errors (from the ``epic`` findings), or,
   when EPIC could not be measured, the Pearson distance of episode returns,
   labelled as not shaping-invariant;
5. how to read each diagnostic present: its registered documentation.

Every text from the data, the plug-ins and the diagnostics is escaped.

Examples
--------
>>> html = diagnosis_report(rewardlab.diagnose(frame, ["a.py", "b.py"]))  # doctest: +SKIP
>>> write_report("report.html", html)  # doctest: +SKIP
"""

from __future__ import annotations

import datetime as _dt
from pathlib import Path

import numpy as np

from rewardlab._version import __version__
from rewardlab.core.errors import ParameterError, check_int
from rewardlab.core.files import atomic_open, check_not_input, progress_enabled
from rewardlab.diagnostics.base import VERDICTS, DiagnosisContext, Finding, registered_diagnostics
from rewardlab.report import sections as S
from rewardlab.report.html import STYLE, number, table, text, value, verdict_badge

__all__ = ["build_report", "diagnosis_report", "write_report", "DEFAULT_TITLE"]

#: The page's title when none is given.
DEFAULT_TITLE = "Reward diagnostics report"


class _Steps:
    """Progress over the report's parts: a callable ``progress(fraction, message)``, a tqdm bar, or nothing."""

    def __init__(self, progress, total: int):
        self.total, self.done, self.bar, self.call = total, 0, None, None
        if callable(progress):
            self.call = progress
        elif progress_enabled(progress):
            from tqdm.auto import tqdm

            self.bar = tqdm(total=total, unit="part", desc="report")

    def __call__(self, message: str) -> None:
        self.done += 1
        if self.call is not None:
            self.call(min(self.done / self.total, 1.0), f"report: {message}")
        elif self.bar is not None:
            self.bar.set_postfix_str(message[:40])
            self.bar.update(1)

    def close(self) -> None:
        if self.bar is not None:
            self.bar.close()


def _check_findings(findings) -> tuple:
    try:
        found = tuple(findings)
    except TypeError:
        raise ParameterError("findings", "should be a sequence of rewardlab.diagnostics.Finding",
                             type(findings).__name__) from None
    bad = [type(f).__name__ for f in found if not isinstance(f, Finding)]
    if bad:
        raise ParameterError("findings", "should hold only rewardlab.diagnostics.Finding objects", bad[0])
    return found


def _plugin_text(candidate) -> str:
    plugin = candidate.plugin
    if plugin is None:
        return "a reward column of the data"
    path = getattr(plugin, "path", plugin)
    return f"plug-in {path}"


def _header(ctx: DiagnosisContext, *, title: str, data, generated: str, findings, errors) -> str:
    names = [c.name for c in ctx.candidates]
    spec = ctx.spec
    contract = getattr(ctx.contract, "name", ctx.contract)
    if data is None:
        data_text = "(a frame in memory)"
    elif isinstance(data, (str, Path)):
        data_text = str(data)
    else:
        data_text = ", ".join(str(d) for d in data)
    counts = {v: sum(f.verdict == v for f in findings) for v in VERDICTS}
    rows = [
        ["data", text(data_text)],
        ["rows", number(ctx.n)],
        ["episodes", number(ctx.n_episodes) + f' <span class="muted">({int(np.sum(ctx.terminated)):,} terminated, '
         f"{int(np.sum(ctx.truncated)):,} truncated)</span>"],
        ["candidates", ", ".join(f"{text(c.name)} <span class=\"muted\">({text(_plugin_text(c))})</span>"
                                 for c in ctx.candidates) or "–"],
        ["base", text(ctx.base.name) + f' <span class="muted">({text(_plugin_text(ctx.base))})</span>'
         if ctx.base is not None else "none (no recorded reward, no --base)"],
        ["spec", text(getattr(spec, "name", spec)) + (f' <span class="muted">{text(spec.description)}</span>'
                                                       if getattr(spec, "description", None) else "")],
        ["contract", text(contract)],
        ["findings", " ".join(verdict_badge(v, f"{v} {counts[v]}") for v in VERDICTS if counts[v]) or "none"],
        ["options", S.options_text(ctx.options)],
        ["rewardlab", text(__version__)],
        ["generated", text(generated)],
    ]
    head = [[text(k), v] for k, v in rows]
    toc = ['<a href="#verdicts">verdicts</a>']
    toc += [f'<a href="#cand-{i}">{text(n)}</a>' for i, n in enumerate(names)]
    toc += ['<a href="#comparison">comparison</a>', '<a href="#how-to-read">how to read</a>']
    out = (f"<header><h1>{text(title)}</h1>" + table(None, head, cls="data kv")
           + f'<nav class="toc">{" ".join(toc)}</nav></header>')
    if errors:
        out += ('<p><strong>Diagnostics that stopped</strong> (reported as failures, never as a pass):</p><ul>'
                + "".join(f"<li>{text(d)}: {text(m)}</li>" for d, m in errors) + "</ul>")
    return out


def build_report(context: DiagnosisContext, findings, *, errors=(), title: str | None = None, data=None,
                 max_episodes: int = 3, generated: str | None = None, progress=None) -> str:
    """The stand-alone HTML report of a diagnosis (one string: a whole page, nothing fetched).

    Parameters
    ----------
    context : DiagnosisContext
        What the diagnostics read: the frame, its spec, the candidates' rewards and terms, the base, the
        options, the episodes (:attr:`rewardlab.diagnostics.run.Diagnosis.context`).
    findings : sequence of Finding
        The findings to report (:attr:`~rewardlab.diagnostics.run.Diagnosis.findings`).
    errors : sequence of (str, str)
        ``(diagnostic, message)`` of diagnostics that stopped (:attr:`~rewardlab.diagnostics.run.Diagnosis.errors`).
    title : str, optional
        The page's title (default :data:`DEFAULT_TITLE`).
    data : str, path or sequence of them, optional
        The data's file names, for the header.
    max_episodes : int
        Episodes shown step by step per candidate, 0 to 20 (default 3).
    generated : str, optional
        The date written in the header (default: now, UTC, to the second).
    progress : bool, None or callable
        A bar over the report's parts (None: on an interactive terminal or Jupyter; a callable gets
        ``(fraction, message)``).

    Returns
    -------
    str
        The HTML document.

    Examples
    --------
    >>> import numpy as np, polars as pl
    >>> from rewardlab.core.spec import FrameSpec
    >>> from rewardlab.diagnostics import Candidate, DiagnosisContext, DiagnosisOptions, Finding
    >>> ctx = DiagnosisContext(pl.DataFrame({"t": [0, 1, 0, 1]}), FrameSpec(name="s"), None,
    ...                        (Candidate("a", np.array([0.0, 1.0, 0.0, 2.0])),), None, DiagnosisOptions(),
    ...                        np.array([0, 0, 1, 1]), np.array([0, 2, 4]), np.array([0, 1, 0, 1], bool),
    ...                        np.zeros(4, bool))
    >>> page = build_report(ctx, [Finding("x", "a", "warn", "look <here>", episodes=(1,))], progress=False)
    >>> page.startswith("<!DOCTYPE html>"), "look &lt;here&gt;" in page, "<script" in page
    (True, True, False)
    """
    if not isinstance(context, DiagnosisContext):
        raise ParameterError("context", "should be a rewardlab.diagnostics.DiagnosisContext (Diagnosis.context)",
                             type(context).__name__)
    findings = _check_findings(findings)
    max_episodes = check_int("max_episodes", max_episodes, low=0, high=20)
    errors = tuple((str(d), str(m)) for d, m in errors)
    title = DEFAULT_TITLE if title is None else str(title)
    if generated is None:
        generated = _dt.datetime.now(_dt.timezone.utc).strftime("%Y-%m-%d %H:%M:%S UTC")
    ctx = context
    registry = registered_diagnostics()
    titles = {name: d.title for name, d in registry.items()}
    candidates = list(ctx.candidates)
    names = [c.name for c in candidates]
    series = candidates + ([ctx.base] if ctx.base is not None and ctx.base.name not in names else [])
    steps = _Steps(progress, 3 + len(candidates))
    try:
        parts = [_header(ctx, title=title, data=data, generated=generated, findings=findings, errors=errors)]
        steps("header")
        anchors = {n: f"cand-{i}" for i, n in enumerate(names)}
        others = [n for n in dict.fromkeys(f.candidate for f in findings) if n not in anchors]
        parts.append('<section id="verdicts"><h2>Verdicts</h2>'
                     + S.verdict_table(names + others, findings, titles, anchors=anchors) + "</section>")
        base_rewards = ctx.base.rewards if ctx.base is not None else None
        for i, c in enumerate(candidates):
            parts.append(_candidate(ctx, i, c, findings, titles, base_rewards, max_episodes))
            steps(c.name)
        if others:
            parts.append('<section><h2>Other findings</h2>' + S.findings_table_html(
                [f for f in findings if f.candidate in others], titles) + "</section>")
        parts.append('<section class="comparison" id="comparison"><h2>Comparison</h2>'
                     + S.comparison_section(series, ctx.episode_starts, findings) + "</section>")
        steps("comparison")
        present = list(dict.fromkeys(f.diagnostic for f in findings))
        docs = "".join(S.doc_section(d, titles.get(d, ""), registry[d].doc if d in registry else "")
                       for d in present)
        parts.append('<section id="how-to-read"><h2>How to read the diagnostics</h2>'
                     + (docs or '<p class="note">No diagnostic reported a finding.</p>') + "</section>")
        steps("how to read")
    finally:
        steps.close()
    footer = (f"<footer>Written by rewardlab {text(__version__)} on {text(generated)}. One file: its pictures "
              "are embedded and it loads nothing else.</footer>")
    return ("<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">"
            "<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">"
            "<meta http-equiv=\"Content-Security-Policy\" content=\"default-src 'none'; img-src data:; "
            "style-src 'unsafe-inline'\">"
            f"<title>{text(title)}</title><style>{STYLE}</style></head><body>\n"
            + "\n".join(parts) + footer + "\n</body></html>\n")


def _candidate(ctx, i: int, c, findings, titles, base_rewards, max_episodes: int) -> str:
    mine = [f for f in findings if f.candidate == c.name]
    as_other = [f for f in findings if f.other == c.name and f.candidate != c.name]
    returns = S.episode_returns(c.rewards, ctx.episode_starts)
    shown = S.episode_choice(mine, returns, max_episodes) if ctx.n_episodes else []
    anchor = {e: f"cand-{i}-ep-{e}" for e in shown}
    out = [f'<section class="candidate" id="cand-{i}"><h2>{text(c.name)}</h2>',
           f'<p class="muted">{text(_plugin_text(c))}'
           + (f"; terms: {', '.join(text(t) for t in c.terms)}" if c.terms else "") + "</p>",
           "<h3>Statistics</h3>", S.statistics_table(c.rewards, returns, c.dtype),
           S.distribution_figures(c, returns),
           "<h3>Findings</h3>", S.findings_table_html(mine, titles, episode_anchor=anchor.get)]
    if as_other:
        out.append('<p class="note">Findings of other candidates against this one: '
                   + "; ".join(f"{text(f.candidate)} ({text(f.diagnostic)}: {verdict_badge(f.verdict)})"
                               for f in as_other) + "</p>")
    out.append(S.terms_section(c.name, c.rewards, c.terms, base_rewards if ctx.base is not c else None))
    if shown:
        out.append("<h3>Episodes</h3>")
        out += [S.episode_section(ctx, c, e, mine, anchor=anchor[e]) for e in shown]
    out.append("</section>")
    return "".join(out)


def diagnosis_report(diagnosis, *, title: str | None = None, data=None, max_episodes: int = 3,
                     generated: str | None = None, progress=None) -> str:
    """:func:`build_report` of a :class:`~rewardlab.diagnostics.run.Diagnosis` (its context, findings and errors).

    Examples
    --------
    >>> html = diagnosis_report(rewardlab.diagnose(frame, ["a.py"]))  # doctest: +SKIP
    """
    context = getattr(diagnosis, "context", None)
    if context is None or not hasattr(diagnosis, "findings"):
        raise ParameterError("diagnosis", "should be a Diagnosis with its context (rewardlab.diagnose(...))",
                             type(diagnosis).__name__)
    return build_report(context, diagnosis.findings, errors=getattr(diagnosis, "errors", ()), title=title,
                        data=data, max_episodes=max_episodes, generated=generated, progress=progress)


def write_report(path, html: str, *, overwrite: bool = False, inputs=()) -> Path:
    """Write the report to ``path`` atomically (UTF-8); returns the path.

    Parameters
    ----------
    path : str or Path
        The HTML file to write.
    html : str
        :func:`build_report`'s page.
    overwrite : bool
        Replace an existing file (by default one is refused:
        :class:`~rewardlab.core.errors.OutputExistsError`).
    inputs : sequence of paths
        The files the report was made from (data, plug-ins): ``path`` may not be one of them, even with
        ``overwrite``.

    Examples
    --------
    >>> import tempfile, pathlib
    >>> with tempfile.TemporaryDirectory() as d:
    ...     p = write_report(pathlib.Path(d) / "r.html", "<!DOCTYPE html><html></html>")
    ...     write_report(p, "again")
    Traceback (most recent call last):
    ...
    rewardlab.core.errors.OutputExistsError: .../r.html already exists; pass overwrite=True to replace it
    """
    if not isinstance(html, str):
        raise ParameterError("html", "should be the report's text (build_report)", type(html).__name__)
    check_not_input(path, list(inputs), name="path")
    with atomic_open(path, "w", overwrite=overwrite, compress="auto") as f:
        f.write(html)
    return Path(path)
