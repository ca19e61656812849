"""``docs/diagnostics.md``: the registered diagnostics' own documentation, in one page.

Each diagnostic carries its definition, assumptions and how to read it
(:attr:`rewardlab.diagnostics.Diagnostic.doc`); this module puts them in one
Markdown page after a short introduction.  ``python -m rewardlab.diagnostics.docs``
prints it; a test checks that the committed ``docs/diagnostics.md`` is that text.

Examples
--------
>>> text = render_markdown()
>>> text.startswith("# Reward diagnostics")
True
"""

from __future__ import annotations

from rewardlab.diagnostics.base import registered_diagnostics

__all__ = ["render_markdown", "INTRODUCTION"]

#: The page's opening, before the diagnostics.
INTRODUCTION = """# Reward diagnostics

`rewardlab diagnose CANDIDATE... --data DATA` (or `rewardlab.diagnose(frame, candidates)`) runs every
diagnostic below on each candidate reward over recorded data, before any training. A candidate is a
reward plug-in file (it runs in a child process, exactly as for `rewardlab apply`) or a reward column of
the data (`recorded` is the data's own reward). The *base* is what candidates are compared with: the
recorded reward where the data has one, or `--base NAME`.

Every finding has a verdict, one line of words, the numbers behind it (its evidence) and the rows and
episodes that show it; the comparison board's diagnostics panel opens those episodes, and
`rewardlab report` puts everything in one HTML file a reviewer reads without Python.

Verdicts:

- `fail`: something is wrong with the candidate or the data; `rewardlab diagnose` exits with status 1.
- `warn`: probably a mistake; read the evidence.
- `pass`: the diagnostic ran and found nothing.
- `info`: a measurement with no judgement (a distance, a term's share).
- `n/a`: the diagnostic cannot run on this candidate or data; the summary says why.

A diagnostic that stops (a plug-in failing on probes or on recombined transitions) is reported as a
failure with the plug-in's own message, never read as a pass.

Adding a diagnostic: a module with `run(context) -> list[Finding]` and one
`rewardlab.register_diagnostic(Diagnostic(name, title, run, doc=...))` call; its `doc` appears here.
"""


def render_markdown() -> str:
    """The page: :data:`INTRODUCTION`, then each registered diagnostic's title and ``doc``, in order."""
    parts = [INTRODUCTION.rstrip() + "\n"]
    for name, diagnostic in registered_diagnostics().items():
        parts.append(f"\n## `{name}`: {diagnostic.title}\n\n{diagnostic.doc.strip()}\n")
    return "".join(parts)


if __name__ == "__main__":
    print(render_markdown(), end="")
