"""``rewardlab report CANDIDATE... --data DATA --out report.html``: the diagnostics as one stand-alone HTML file.

Runs :func:`rewardlab.diagnostics.run.diagnose` on the candidates (plug-in files,
run in a child process, or reward columns of the data), then writes
:func:`rewardlab.report.build_report`'s page atomically.  The exit status is 0
when the report was written, whatever the diagnostics found (the report shows
failures); 2 when the inputs could not be read or a plug-in did not run.
"""

from __future__ import annotations

import sys

from rewardlab.cli.diagnose import add_candidates, add_diagnosis_options, candidate_items, diagnosis_options, load_data
from rewardlab.cli.options import add_input_options


def register(sub) -> None:
    p = sub.add_parser(
        "report", help="diagnose candidate rewards and write one self-contained HTML report",
        description="Run every reward diagnostic (potential-based shaping, EPIC distance, terms, traps, ...) on "
        "each candidate over the data, then write one HTML file a reviewer opens in any browser without Python: "
        "each candidate's statistics, verdicts with their evidence, terms and episode examples, and the "
        "comparison of all candidates (pictures embedded, no script, nothing fetched). Plug-ins are code: only "
        "the files named run, in a child process. Exit status 0 once the report is written, even when a "
        "diagnostic fails (the report shows it); 2 when the data or a plug-in could not be read or run.")
    add_candidates(p)
    p.add_argument("--out", required=True, metavar="REPORT.html", help="the HTML file to write")
    p.add_argument("--max-episodes", type=int, default=3, metavar="N",
                   help="episodes shown step by step per candidate, 0 to 20 (default 3)")
    p.add_argument("--title", default=None, help="the report's title")
    p.add_argument("--overwrite", action="store_true", help="replace an existing report")
    add_diagnosis_options(p)
    add_input_options(p)
    p.set_defaults(func=_report)


def _report(args) -> int:
    from rewardlab.core.errors import check_int
    from rewardlab.core.files import check_not_input, check_output
    from rewardlab.diagnostics.run import diagnose
    from rewardlab.report import build_report, write_report

    check_int("--max-episodes", args.max_episodes, low=0, high=20)
    options = diagnosis_options(args)
    items = candidate_items(args)  # every plug-in read and compiled before any data is read
    inputs = [*args.data, *(str(c) for c in items if not isinstance(c, str))]
    check_not_input(args.out, inputs, name="--out")
    check_output(args.out, overwrite=args.overwrite)  # before the work: an existing report is refused now
    frame = load_data(args)
    diagnosis = diagnose(frame, items, base=args.base, options=options, only=args.only, progress=None)
    html = build_report(diagnosis.context, diagnosis.findings, errors=diagnosis.errors, title=args.title,
                        data=args.data, max_episodes=args.max_episodes, progress=None)
    write_report(args.out, html, overwrite=args.overwrite, inputs=inputs)
    counts = {}
    for f in diagnosis.findings:
        counts[f.verdict] = counts.get(f.verdict, 0) + 1
    verdicts = ", ".join(f"{n} {v}" for v, n in counts.items()) or "no findings"
    print(f"wrote {args.out} ({len(html) / 1e6:.2f} MB): {len(diagnosis.context.candidates)} candidate(s), "
          f"{len(diagnosis.findings)} finding(s): {verdicts}"
          + (f"; {len(diagnosis.errors)} diagnostic(s) stopped" if diagnosis.errors else ""))
    sys.stdout.flush()
    return 0
