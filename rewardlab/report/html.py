"""The report's HTML pieces: escaping, numbers, tables, a minimal markdown renderer and the inline style.

Every text that comes from data, a plug-in or a diagnostic (names, summaries,
evidence, docs) goes through :func:`text` (``html.escape`` with quotes), so
the page holds only the tags and attributes written here.  :func:`markdown`
renders the small subset the diagnostics' docs use (paragraphs, bullets,
numbered items, ``code``, fenced code blocks, *emphasis*, **strong**) from
escaped text; anything else stays literal.

Examples
--------
>>> text("x</table><script>")
'x&lt;/table&gt;&lt;script&gt;'
>>> print(markdown("Read **this**: `r' - r`.\\n\\n- one\\n- <b>two</b>"))
<p>Read <strong>this</strong>: <code>r&#x27; - r</code>.</p>
<ul><li>one</li><li>&lt;b&gt;two&lt;/b&gt;</li></ul>
"""

from __future__ import annotations

import html
import math
import re
from typing import Sequence

__all__ = ["text", "number", "value", "table", "markdown", "STYLE", "VERDICT_CLASSES", "verdict_badge"]

#: CSS class of each verdict (colours in :data:`STYLE`).
VERDICT_CLASSES = {"fail": "v-fail", "warn": "v-warn", "pass": "v-pass", "info": "v-info", "n/a": "v-na"}


def text(value) -> str:
    """``value`` as HTML text: ``str(value)`` with ``& < > " '`` escaped.

    Examples
    --------
    >>> text('a "b" & <c>')
    'a &quot;b&quot; &amp; &lt;c&gt;'
    """
    return html.escape(str(value), quote=True)


def number(x, digits: int = 4) -> str:
    """A number for a table cell: integers with thousands separators, floats to ``digits`` significant digits,
    ``nan`` / ``inf`` spelled out, None as an en dash.

    Examples
    --------
    >>> number(1234567), number(0.000123456), number(float("nan")), number(None)
    ('1,234,567', '0.0001235', 'nan', '–')
    """
    if x is None:
        return "–"
    if isinstance(x, bool):
        return "yes" if x else "no"
    if isinstance(x, int):
        return f"{x:,}"
    try:
        f = float(x)
    except (TypeError, ValueError):
        return text(x)
    if math.isnan(f):
        return "nan"
    if math.isinf(f):
        return "inf" if f > 0 else "-inf"
    return f"{f:.{digits}g}"


def value(x, *, limit: int = 12) -> str:
    """Any evidence value as escaped HTML: numbers by :func:`number`, lists shortened to ``limit`` items
    (``…, N in all``), strings escaped.

    Examples
    --------
    >>> value([1, 2, 3, 4], limit=2), value("<x>"), value(0.5)
    ('[1, 2, …, 4 in all]', '&lt;x&gt;', '0.5')
    """
    if isinstance(x, (list, tuple)):
        shown = ", ".join(value(v, limit=limit) for v in x[:limit])
        more = f", …, {len(x):,} in all" if len(x) > limit else ""
        return f"[{shown}{more}]"
    if isinstance(x, str):
        return text(x)
    return number(x)


def table(header: Sequence[str] | None, rows: Sequence[Sequence[str]], *, cls: str = "data",
          row_classes: Sequence[str] | None = None) -> str:
    """An HTML table; ``header`` is escaped here (None: no header row), ``rows`` hold cells already made HTML
    (escape data with :func:`text` / :func:`number` first).

    Examples
    --------
    >>> table(["a<"], [["1"]])
    '<table class="data"><thead><tr><th>a&lt;</th></tr></thead><tbody><tr><td>1</td></tr></tbody></table>'
    """
    head = "" if header is None else "<thead><tr>" + "".join(f"<th>{text(h)}</th>" for h in header) + "</tr></thead>"
    body = []
    for i, row in enumerate(rows):
        attr = f' class="{text(row_classes[i])}"' if row_classes is not None and row_classes[i] else ""
        body.append(f"<tr{attr}>" + "".join(f"<td>{c}</td>" for c in row) + "</tr>")
    return (f'<table class="{text(cls)}">{head}<tbody>' + "".join(body)
            + "</tbody></table>")


def verdict_badge(verdict: str, label: str | None = None) -> str:
    """A coloured badge for ``verdict`` (its text, or ``label``).

    Examples
    --------
    >>> verdict_badge("fail")
    '<span class="badge v-fail">fail</span>'
    """
    return f'<span class="badge {VERDICT_CLASSES.get(verdict, "v-na")}">{text(label or verdict)}</span>'


_CODE = re.compile(r"(`+)(.+?)\1")
_STRONG = re.compile(r"\*\*(?=\S)(.+?)(?<=\S)\*\*")
_EM = re.compile(r"(?<![\w*])\*(?=\S)([^*]+?)(?<=\S)\*(?![\w*])|(?<!\w)_(?=\S)([^_]+?)(?<=\S)_(?!\w)")
_BULLET = re.compile(r"^\s*[-*+]\s+(.*)$")
_NUMBERED = re.compile(r"^\s*\d+[.)]\s+(.*)$")
_HEADING = re.compile(r"^(#{1,6})\s+(.*)$")


def _inline(line: str) -> str:
    """One line of markdown as HTML: escaped, then code spans, strong and emphasis (never inside code)."""
    out, at = [], 0
    pieces = []  # (is code, text)
    for m in _CODE.finditer(line):
        pieces += [(False, line[at:m.start()]), (True, m.group(2).strip())]
        at = m.end()
    pieces.append((False, line[at:]))
    for is_code, part in pieces:
        if is_code:
            out.append(f"<code>{text(part)}</code>")
            continue
        escaped = text(part)
        escaped = _STRONG.sub(lambda m: f"<strong>{m.group(1)}</strong>", escaped)
        escaped = _EM.sub(lambda m: f"<em>{m.group(1) or m.group(2)}</em>", escaped)
        out.append(escaped)
    return "".join(out)


def markdown(source: str) -> str:
    """A minimal markdown subset as HTML; every character of ``source`` is escaped first.

    Blocks: paragraphs (blank-line separated), ``-`` / ``*`` bullets, ``1.``
    numbered items, ``#`` headings (shown as bold paragraphs), fenced code
    (```` ``` ````) and indented continuation lines of an item.  Inline:
    ``code`` (one or more backticks), ``**strong**``, ``*emphasis*`` / ``_emphasis_``.

    Examples
    --------
    >>> markdown("# Title\\n\\n```\\nx < 1\\n```\\n\\n1. a\\n2. *b*")
    '<p class="h"><strong>Title</strong></p>\\n<pre><code>x &lt; 1</code></pre>\\n<ol><li>a</li><li><em>b</em></li></ol>'
    """
    lines = str(source).expandtabs(4).splitlines()
    blocks: list[str] = []
    para: list[str] = []
    items: list[str] = []
    kind = None  # "ul" / "ol" while a list is open

    def flush():
        nonlocal kind
        if para:
            blocks.append("<p>" + " ".join(_inline(p.strip()) for p in para) + "</p>")
            para.clear()
        if items:
            blocks.append(f"<{kind}>" + "".join(f"<li>{i}</li>" for i in items) + f"</{kind}>")
            items.clear()
        kind = None

    i = 0
    while i < len(lines):
        line = lines[i]
        if line.strip().startswith("```"):
            flush()
            code = []
            i += 1
            while i < len(lines) and not lines[i].strip().startswith("```"):
                code.append(lines[i])
                i += 1
            blocks.append("<pre><code>" + text("\n".join(code)) + "</code></pre>")
            i += 1
            continue
        bullet, numbered, heading = _BULLET.match(line), _NUMBERED.match(line), _HEADING.match(line)
        if not line.strip():
            flush()
        elif heading:
            flush()
            blocks.append(f'<p class="h"><strong>{_inline(heading.group(2).strip())}</strong></p>')
        elif bullet or numbered:
            want = "ul" if bullet else "ol"
            if para or (kind is not None and kind != want):
                flush()
            kind = want
            items.append(_inline((bullet or numbered).group(1).strip()))
        elif items and line.startswith((" ", "\t")):
            items[-1] += " " + _inline(line.strip())
        else:
            if items:
                flush()
            para.append(line)
        i += 1
    flush()
    return "\n".join(blocks)


#: The page's whole style: inline, no fonts or files fetched; print-friendly (no backgrounds needed to read
#: verdicts: each badge also says its verdict in words).
STYLE = """
:root { color-scheme: light; }
body { font-family: system-ui, -apple-system, "Segoe UI", Roboto, "Helvetica Neue", Arial, sans-serif;
       font-size: 14px; line-height: 1.45; color: #1b1f24; margin: 0 auto; padding: 16px 24px 48px;
       max-width: 1180px; }
h1 { font-size: 24px; margin: 8px 0 4px; }
h2 { font-size: 19px; margin: 28px 0 8px; border-bottom: 2px solid #d0d7de; padding-bottom: 4px; }
h3 { font-size: 16px; margin: 20px 0 6px; }
h4 { font-size: 14px; margin: 14px 0 4px; }
p.note, .muted { color: #57606a; }
nav.toc { font-size: 13px; margin: 8px 0 16px; }
nav.toc a { margin-right: 12px; }
table { border-collapse: collapse; margin: 6px 0 12px; font-size: 13px; }
th, td { border: 1px solid #d0d7de; padding: 3px 8px; text-align: left; vertical-align: top; }
th { background: #f6f8fa; }
table.data td { font-variant-numeric: tabular-nums; }
table.kv th { width: 12em; }
table.findings td:nth-child(4) { max-width: 420px; }
table.findings td:nth-child(5) { font-size: 12px; max-width: 360px; word-break: break-word; }
.badge { display: inline-block; padding: 0 7px; border-radius: 9px; font-size: 12px; font-weight: 600;
         border: 1px solid transparent; white-space: nowrap; }
.v-fail { background: #ffebe9; color: #a40e26; border-color: #ff8182; }
.v-warn { background: #fff8c5; color: #7d4e00; border-color: #d4a72c; }
.v-pass { background: #dafbe1; color: #116329; border-color: #4ac26b; }
.v-info { background: #ddf4ff; color: #0550ae; border-color: #54aeff; }
.v-na { background: #f6f8fa; color: #57606a; border-color: #d0d7de; }
.scroll { overflow-x: auto; max-width: 100%; }
table.verdicts td { text-align: center; }
table.verdicts td:first-child { text-align: left; }
figure { margin: 8px 0 14px; }
figure img { max-width: 100%; height: auto; border: 1px solid #eaeef2; }
figcaption { font-size: 12px; color: #57606a; }
code, pre { font-family: ui-monospace, SFMono-Regular, Menlo, Consolas, monospace; font-size: 12px; }
pre { background: #f6f8fa; padding: 6px 8px; overflow-x: auto; }
section.candidate { border-top: 1px solid #d0d7de; margin-top: 24px; }
.doc { border-left: 3px solid #d0d7de; padding-left: 12px; margin: 6px 0 14px; }
.doc p.h { margin: 8px 0 2px; }
.grid { display: flex; flex-wrap: wrap; gap: 12px; }
.grid > figure { flex: 1 1 460px; }
footer { margin-top: 32px; font-size: 12px; color: #57606a; }
@media print {
  body { max-width: none; padding: 0; font-size: 11px; }
  nav.toc { display: none; }
  section.candidate, section.comparison { break-before: page; }
  figure, table { break-inside: avoid; }
  .badge { border-color: #555; }
  a { color: inherit; text-decoration: none; }
}
"""
