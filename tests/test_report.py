"""The stand-alone HTML report (rewardlab.report, `rewardlab report`): self-contained, escaped, complete.

The page is parsed with the standard library's HTML parser: every tag must be
one the report writes, no script, no event attribute, no address but an
in-page anchor or an embedded PNG (each decoded and opened).  The numbers the
page shows are recomputed here with plain loops.
"""

from __future__ import annotations

import base64
import io
import math
import subprocess
import sys
from html.parser import HTMLParser

import numpy as np
import polars as pl
import pytest

from conftest import ROOT
from rewardlab.core.errors import FileAccessError, OutputExistsError, ParameterError
from rewardlab.core.spec import FrameSpec
from rewardlab.diagnostics import (Candidate, DiagnosisContext, DiagnosisOptions, Diagnostic, Finding,
                                   register_diagnostic, unregister_diagnostic)
from rewardlab.report import build_report, write_report
from rewardlab.report.html import markdown, number, text

MOUNTAINCAR = ROOT / "data" / "gym" / "mountaincar_scripted.parquet"
SHAPING = ROOT / "data" / "plugins" / "steps" / "potential_shaping.py"
HOSTILE = "x</table><script>alert(1)</script>"
HOSTILE_DOLLAR = r"m$\frac{$"  # matplotlib would parse $...$ as mathematics
#: The only tags the report writes.
ALLOWED_TAGS = {"html", "head", "meta", "title", "style", "body", "header", "h1", "h2", "h3", "h4", "p", "span",
                "strong", "em", "code", "pre", "ul", "ol", "li", "table", "thead", "tbody", "tr", "th", "td", "a",
                "nav", "section", "div", "figure", "figcaption", "img", "br", "footer"}
PNG_SIGNATURE = b"\x89PNG\r\n\x1a\n"


class Page(HTMLParser):
    """Every start tag with its attributes, and the text of the page."""

    def __init__(self, html: str):
        super().__init__(convert_charrefs=True)
        self.tags: list[tuple[str, dict]] = []
        self.texts: list[str] = []
        self.feed(html)
        self.close()

    def handle_starttag(self, tag, attrs):
        self.tags.append((tag, dict(attrs)))

    def handle_startendtag(self, tag, attrs):
        self.tags.append((tag, dict(attrs)))

    def handle_data(self, data):
        self.texts.append(data)

    @property
    def text(self) -> str:
        return " ".join(self.texts)


def check_self_contained(html: str) -> list[bytes]:
    """Assert the page loads nothing and runs nothing; return its pictures' PNG bytes (each opened)."""
    from PIL import Image

    page = Page(html)
    tags = {t for t, _ in page.tags}
    assert tags <= ALLOWED_TAGS, tags - ALLOWED_TAGS
    assert "script" not in tags and "link" not in tags and "iframe" not in tags
    pngs = []
    for tag, attrs in page.tags:
        assert not any(k.startswith("on") for k in attrs), (tag, attrs)
        if "href" in attrs:
            assert attrs["href"].startswith("#"), attrs["href"]
        if tag == "img":
            src = attrs["src"]
            assert src.startswith("data:image/png;base64,"), src[:60]
            data = base64.b64decode(src.split(",", 1)[1], validate=True)
            assert data.startswith(PNG_SIGNATURE)
            with Image.open(io.BytesIO(data)) as im:
                im.verify()
            with Image.open(io.BytesIO(data)) as im:
                assert im.format == "PNG" and im.size[0] > 50 and im.size[1] > 50
            pngs.append(data)
        else:
            assert "src" not in attrs, (tag, attrs)
    lowered = html.lower()
    for needle in ("http://", "https://", "url(", "@import", "<script", "javascript:"):
        assert needle not in lowered, needle
    return pngs


# --------------------------------------------------------------------------
# A context built by hand: 3 episodes of known rewards
# --------------------------------------------------------------------------

LENGTHS = (4, 6, 5)


def toy_context(names=("alpha", "beta"), *, terms=None) -> DiagnosisContext:
    n = sum(LENGTHS)
    episode = np.repeat(np.arange(len(LENGTHS)), LENGTHS)
    t = np.concatenate([np.arange(k) for k in LENGTHS])
    last = np.zeros(n, bool)
    last[np.cumsum(LENGTHS) - 1] = True
    terminated = last & (episode != 1)
    truncated = last & (episode == 1)
    frame = pl.DataFrame({"episode_id": episode + 100, "t": t, "terminated": terminated, "truncated": truncated})
    spec = FrameSpec(name="toy", episode=("episode_id",), step="t", terminated="terminated", truncated="truncated")
    rng = np.random.default_rng(3)
    candidates = []
    for k, name in enumerate(names):
        rewards = rng.normal(size=n) * (k + 1)
        rewards[::3] = 0.0
        candidates.append(Candidate(name, rewards, terms=(terms or {}) if k == 0 else {}))
    base = Candidate("recorded", -np.ones(n))
    starts = np.concatenate([[0], np.cumsum(LENGTHS)]).astype(np.int64)
    return DiagnosisContext(frame, spec, None, tuple(candidates), base, DiagnosisOptions(), episode.astype(np.int64),
                            starts, terminated, truncated)


def plain_returns(rewards) -> list[float]:
    out, at = [], 0
    for k in LENGTHS:
        total = 0.0
        for v in rewards[at:at + k]:
            total += float(v)
        out.append(total)
        at += k
    return out


def test_the_page_is_self_contained_and_every_picture_is_a_png():
    ctx = toy_context()
    findings = [Finding("shaping", "alpha", "warn", "not shaping", evidence={"residual": 0.25}, rows=(5, 6),
                        episodes=(1,), other="recorded"),
                Finding("trap.constant", "beta", "pass", "fine")]
    html = build_report(ctx, findings, progress=False, generated="2020-01-01 00:00:00 UTC")
    pngs = check_self_contained(html)
    # per candidate: reward and return distributions, its episodes; the comparison: 2 correlation heat maps
    assert len(pngs) == 2 * 2 + 2 * 3 + 2
    assert html.startswith("<!DOCTYPE html>") and html.rstrip().endswith("</html>")
    assert "2020-01-01 00:00:00 UTC" in html


def test_numbers_shown_match_plain_loops():
    ctx = toy_context()
    html = build_report(ctx, [], progress=False, max_episodes=0)
    text_ = Page(html).text
    for c in ctx.candidates:
        returns = plain_returns(c.rewards)
        mean = sum(c.rewards) / len(c.rewards)
        assert number(mean) in text_
        assert number(sum(returns) / len(returns)) in text_
        assert number(max(returns)) in text_
    assert f"{sum(LENGTHS):,}" in text_ and "1 terminated" not in text_ and "2 terminated, 1 truncated" in text_


def test_episodes_named_by_findings_come_first_with_their_steps_marked():
    ctx = toy_context()
    rows = (4 + 1, 4 + 3)  # steps 1 and 3 of episode 1
    findings = [Finding("shaping", "alpha", "fail", "breaks", rows=rows, episodes=(1,)),
                Finding("other", "alpha", "info", "note", episodes=(2, 1))]
    html = build_report(ctx, findings, progress=False, max_episodes=2)
    page = Page(html)
    ids = [a["id"] for _, a in page.tags if a.get("id", "").startswith("cand-0-ep-")]
    assert ids == ["cand-0-ep-1", "cand-0-ep-2"]  # the fail's episode first, then the info's next one
    assert "2 step(s) named by findings marked red" in html
    assert '<a href="#cand-0-ep-1">1</a>' in html  # the findings table links the episode shown
    beta = [a["id"] for _, a in page.tags if a.get("id", "").startswith("cand-1-ep-")]
    returns = np.asarray(plain_returns(ctx.candidates[1].rewards))
    typical = int(np.argsort(np.abs(returns - np.median(returns)), kind="stable")[0])
    assert beta[0] == f"cand-1-ep-{typical}"  # no finding on beta: the return nearest the median first


def test_verdict_table_shows_the_worst_verdict_and_the_count():
    ctx = toy_context()
    findings = [Finding("d1", "alpha", "pass", "ok"), Finding("d1", "alpha", "fail", "bad"),
                Finding("d1", "beta", "info", "measured"), Finding("d2", "beta", "n/a", "cannot")]
    html = build_report(ctx, findings, progress=False, max_episodes=0)
    table_ = html[html.index('<table class="verdicts">'):]
    table_ = table_[:table_.index("</table>")]
    assert '<span class="badge v-fail">fail ×2</span>' in table_
    assert '<span class="badge v-info">info</span>' in table_
    assert '<span class="badge v-na">n/a</span>' in table_
    assert table_.count("<tr>") == 3  # header, d1, d2


def test_hostile_names_and_messages_are_escaped_everywhere():
    doc = "**Definition.** <img src=x onerror=alert(2)> and `<b>code</b>`\n\n- <script>bad()</script>"
    register_diagnostic(Diagnostic(HOSTILE, HOSTILE, lambda ctx: [], doc=doc), replace=True)
    try:
        ctx = toy_context(names=(HOSTILE, HOSTILE_DOLLAR), terms={HOSTILE: np.zeros(sum(LENGTHS)),
                                                                  "ok": np.ones(sum(LENGTHS))})
        findings = [Finding(HOSTILE, HOSTILE, "fail", "<img src=x onerror=alert(3)>",
                            evidence={HOSTILE: "<b>bold</b>", "n": 3}, rows=(1,), episodes=(0,), other=HOSTILE_DOLLAR),
                    Finding("epic", HOSTILE, "info", "d", evidence={"distance": 0.25, "stderr": 0.01},
                            other=HOSTILE_DOLLAR)]
        html = build_report(ctx, findings, title=HOSTILE, data=[HOSTILE], progress=False)
    finally:
        unregister_diagnostic(HOSTILE)
    check_self_contained(html)
    for raw in ("<script>", "</table><script", "<img src=x", "<b>bold</b>", "<b>code</b>"):
        assert raw not in html
    assert text(HOSTILE) in html and "&lt;img src=x onerror=alert(3)&gt;" in html
    assert "<code>&lt;b&gt;code&lt;/b&gt;</code>" in html  # the doc's markdown, from escaped text
    assert "0.25 ± 0.01" in html  # the EPIC matrix of two hostile names


def test_epic_matrix_from_findings_or_the_labelled_fallback():
    ctx = toy_context()
    epic = [Finding("epic", "alpha", "info", "d", evidence={"distance": 0.125, "stderr": 0.003}, other="beta"),
            Finding("epic", "alpha", "n/a", "recorded is a column", other="recorded")]
    html = build_report(ctx, epic, progress=False, max_episodes=0)
    assert "0.125 ± 0.003" in html and "Not measured" not in html
    html = build_report(ctx, epic[1:], progress=False, max_episodes=0)
    assert "Not measured" in html and "recorded is a column" in html
    assert "Pearson distance of episode returns" in html and "not</em> invariant to shaping" in html
    a, b = (np.asarray(plain_returns(c.rewards)) for c in ctx.candidates)
    rho = float(np.sum((a - a.mean()) * (b - b.mean())) / math.sqrt(np.sum((a - a.mean()) ** 2)
                                                                       * np.sum((b - b.mean()) ** 2)))
    assert number(math.sqrt((1 - rho) / 2)) in html


def test_terms_table_shares_match_a_plain_computation():
    n = sum(LENGTHS)
    rng = np.random.default_rng(5)
    big, small = rng.normal(size=n) * 10, rng.normal(size=n) * 0.1
    ctx = toy_context(terms={"big": big, "small": small})
    alpha = ctx.candidates[0]
    ctx = DiagnosisContext(ctx.frame, ctx.spec, None, (Candidate("alpha", big + small, terms=alpha.terms),),
                           ctx.base, ctx.options, ctx.episode_of_row, ctx.episode_starts, ctx.terminated,
                           ctx.truncated)
    html = build_report(ctx, [], progress=False, max_episodes=0)
    total = big + small
    for term in (big, small):
        share = sum((x - term.mean()) * (y - total.mean()) for x, y in zip(term, total)) / n / total.var()
        assert f"{share:.1%}" in html
    assert "Share of the total&#x27;s variance per term of alpha" in html


def test_markdown_subset():
    assert markdown("a *b* _c_ **d**") == "<p>a <em>b</em> <em>c</em> <strong>d</strong></p>"
    assert markdown("x\ny\n\nz") == "<p>x y</p>\n<p>z</p>"
    assert markdown("- a\n  more\n- b\n\n1. c") == "<ul><li>a more</li><li>b</li></ul>\n<ol><li>c</li></ol>"
    assert markdown("```\n<x> & y\n```") == "<pre><code>&lt;x&gt; &amp; y</code></pre>"
    assert markdown("``a ` b``") == "<p><code>a ` b</code></p>"
    assert markdown("snake_case_name and 2*3*4") == "<p>snake_case_name and 2*3*4</p>"
    assert markdown("[link](http://x)") == "<p>[link](http://x)</p>"  # no links: literal text


def test_bad_arguments_are_named():
    ctx = toy_context()
    with pytest.raises(ParameterError, match="`context`"):
        build_report("not a context", [])
    with pytest.raises(ParameterError, match="`findings`"):
        build_report(ctx, ["not a finding"])
    with pytest.raises(ParameterError, match="`max_episodes`"):
        build_report(ctx, [], max_episodes=21)


def test_write_report_refuses_to_replace_or_to_write_over_an_input(tmp_path):
    out = tmp_path / "r.html"
    write_report(out, "one")
    with pytest.raises(OutputExistsError):
        write_report(out, "two")
    assert out.read_text() == "one"
    write_report(out, "two", overwrite=True)
    assert out.read_text() == "two"
    data = tmp_path / "data.parquet"
    data.write_bytes(b"x")
    with pytest.raises(ParameterError, match="inputs"):
        write_report(data, "three", overwrite=True, inputs=[data])
    assert data.read_bytes() == b"x"
    with pytest.raises(FileAccessError, match="does not exist"):
        write_report(tmp_path / "missing" / "r.html", "x")


def test_building_a_report_never_imports_pyplot():
    code = ("import sys\n"
            "sys.path.insert(0, 'tests')\n"
            "from test_report import toy_context\n"
            "from rewardlab.report import build_report\n"
            "from rewardlab.diagnostics import Finding\n"
            "html = build_report(toy_context(), [Finding('x', 'alpha', 'warn', 'w', episodes=(1,))], progress=False)\n"
            "assert 'matplotlib.pyplot' not in sys.modules\n"
            "print('ok')\n")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "ok"


# --------------------------------------------------------------------------
# The command, end to end on the MountainCar recording
# --------------------------------------------------------------------------


def run_cli(*args):
    from rewardlab.cli import main

    return main(["report", *map(str, args)])


@pytest.mark.slow
def test_cli_report_end_to_end(tmp_path, capsys):
    out = tmp_path / "report.html"
    assert run_cli(SHAPING, "recorded", "--data", MOUNTAINCAR, "--out", out, "--gamma", "0.99") == 0
    printed = capsys.readouterr().out
    assert printed.startswith(f"wrote {out}") and "candidate" in printed
    html = out.read_text(encoding="utf-8")
    pngs = check_self_contained(html)
    assert len(pngs) >= 2 + 3 + 2  # distributions, three episodes, the heat maps
    page = Page(html).text
    assert "potential_shaping" in page and "recorded" in page and "3,765" in page
    assert '<table class="verdicts">' in html and "How to read the diagnostics" in html
    before = out.read_bytes()
    assert run_cli(SHAPING, "--data", MOUNTAINCAR, "--out", out) == 2  # exists: refused before any work
    assert "already exists; pass --overwrite" in capsys.readouterr().err
    assert out.read_bytes() == before
    assert run_cli(SHAPING, "--data", MOUNTAINCAR, "--out", MOUNTAINCAR, "--overwrite") == 2
    assert "should not name one of the command's inputs" in capsys.readouterr().err
    assert run_cli("no_such_column", "--data", MOUNTAINCAR, "--out", tmp_path / "x.html") == 2
    assert "no_such_column" in capsys.readouterr().err
    assert not (tmp_path / "x.html").exists()


def test_episode_plot_bands_cover_each_run_of_named_steps():
    from rewardlab.plots import plot_episode_steps
    from rewardlab.report.figures import new_figure

    fig = new_figure(6, 2.5)
    ax = plot_episode_steps(np.arange(20.0) * 2, {"a": np.zeros(20)}, ax=fig.axes[0], marked=np.array([11, 3, 10]))
    bands = sorted((float(p.vertices[:, 0].min()), float(p.vertices[:, 0].max())) for p in ax.collections[0].get_paths())
    assert bands == [(5.0, 7.0), (19.0, 23.0)]  # steps 6 and 20-22, half a step on each side
