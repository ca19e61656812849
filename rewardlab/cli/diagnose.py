"""The ``diagnose`` command: every registered diagnostic on candidate rewards, verdicts and evidence.

``add_diagnosis_options`` / ``diagnosis_options`` are the diagnostics' flags, shared
with ``rewardlab report``.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

from rewardlab.cli.options import add_input_options, format_options

__all__ = ["register", "add_diagnosis_options", "diagnosis_options", "add_candidates", "candidate_items",
           "load_data"]

#: How each verdict is shown in the text output.
_MARKS = {"fail": "FAIL", "warn": "warn", "pass": "ok", "info": "info", "n/a": "n/a"}


def add_candidates(p, *, required: bool = True) -> None:
    """The candidates and the data, as ``diagnose`` and ``report`` take them."""
    p.add_argument("candidates", nargs="+" if required else "*", metavar="CANDIDATE",
                   help="a reward plug-in file (.py; it runs in a child process) or a reward column of the data "
                   "(recorded = the data's own reward_recorded)")
    p.add_argument("--data", action="append", required=required, metavar="DATA",
                   help="data file(s) of any format rewardlab reads (repeat for several; see --format)")
    p.add_argument("--base", default=None, metavar="NAME",
                   help="what the candidates are compared with: a candidate or a reward column (default: the "
                   "data's recorded reward where it has one)")


def add_diagnosis_options(p) -> None:
    """The diagnostics' settings (:class:`rewardlab.diagnostics.DiagnosisOptions`) as flags."""
    g = p.add_argument_group("diagnostics")
    g.add_argument("--gamma", type=float, default=0.99, help="the trainer's discount, in (0, 1] (default 0.99)")
    g.add_argument("--basis", default="auto",
                   help="the potential's feature basis for the shaping test: auto (tabular for integer states, "
                   "else linear), tabular, linear, quadratic or a basis you registered (default auto)")
    g.add_argument("--tolerance", type=float, default=1e-6,
                   help="relative residual under which a difference counts as shaping (default 1e-6)")
    g.add_argument("--expect-shaping", action="store_true",
                   help="fail a candidate whose difference from the base is not potential-based shaping")
    g.add_argument("--epic-states", type=int, default=512, metavar="N",
                   help="states canonicalized per EPIC sample (default 512)")
    g.add_argument("--epic-pairs", type=int, default=512, metavar="N",
                   help="recorded (action, next state) pairs EPIC's expectations average over (default 512)")
    g.add_argument("--epic-repeats", type=int, default=5, metavar="N",
                   help="independent EPIC samples, for its sampling error (default 5)")
    g.add_argument("--bootstrap", type=int, default=200, metavar="N", help="bootstrap resamples (default 200)")
    g.add_argument("--normalizer", choices=("gymnasium", "sb3"), default=None,
                   help="the reward normalizer your trainer uses (gymnasium NormalizeReward, sb3 VecNormalize), "
                   "for the clip trap (default: none, the trap is skipped)")
    g.add_argument("--clip", type=float, default=10.0, help="the normalizer's reward clip (default 10)")
    g.add_argument("--seed", type=int, default=0, help="seed of every sample drawn (default 0)")
    g.add_argument("--only", action="append", metavar="NAME",
                   help="run only this diagnostic (repeat; a prefix ending in '.' such as 'trap.' takes a group)")
    g.add_argument("--timeout", type=float, default=None, metavar="SECONDS",
                   help="stop a plug-in run after this many seconds (default: no limit)")


def diagnosis_options(args):
    """:class:`rewardlab.diagnostics.DiagnosisOptions` from the flags (validated there, with the flags' names)."""
    from rewardlab.core.errors import ParameterError
    from rewardlab.diagnostics import DiagnosisOptions

    flags = {"gamma": "--gamma", "basis": "--basis", "tolerance": "--tolerance", "epic_states": "--epic-states",
             "epic_pairs": "--epic-pairs", "epic_repeats": "--epic-repeats", "bootstrap": "--bootstrap",
             "clip": "--clip", "seed": "--seed", "timeout": "--timeout", "normalizer": "--normalizer"}
    try:
        return DiagnosisOptions(
            gamma=args.gamma, basis=args.basis, tolerance=args.tolerance, expect_shaping=args.expect_shaping,
            epic_states=args.epic_states, epic_pairs=args.epic_pairs, epic_repeats=args.epic_repeats,
            bootstrap=args.bootstrap, normalizer=args.normalizer, clip=args.clip, seed=args.seed, isolate=True,
            timeout=args.timeout)
    except ParameterError as exc:
        name = flags.get(exc.name)
        if name is None:
            raise
        raise ParameterError(name, exc.rule, exc.value, hint=exc.hint) from None


def candidate_items(args) -> list:
    """The candidates as :func:`rewardlab.diagnose` takes them: each plug-in file checked, read and compiled
    before any data is read (its code runs only in a child process), reward columns by name."""
    from rewardlab.core.errors import ParameterError
    from rewardlab.core.files import check_input
    from rewardlab.diagnostics.run import is_plugin_path
    from rewardlab.plugins import read_plugin

    if not args.data:
        raise ParameterError("--data", "is required: the recorded data the candidates are diagnosed on", None,
                             hint="Add --data FILE (any format rewardlab reads).")
    if not args.candidates:
        raise ParameterError("CANDIDATE", "should name at least one plug-in file or reward column", None,
                             hint="For example: rewardlab diagnose my_reward.py recorded --data DATA")
    items = []
    for c in args.candidates:
        if is_plugin_path(c):
            check_input(c)
            read_plugin(c)
            items.append(Path(c))
        else:
            items.append(c)
    return items


def load_data(args):
    """The frame of ``--data``."""
    from rewardlab.sources.dispatch import load

    return load([Path(p) for p in args.data], format=args.format, options=format_options(args) or None)


def register(sub) -> None:
    p = sub.add_parser(
        "diagnose", help="diagnose candidate rewards: shaping, EPIC distance, terms, traps, rank sensitivity",
        description="Run every registered diagnostic on the candidates over recorded data: is a candidate's "
        "difference from the base potential-based shaping, how far apart are candidates up to shaping and "
        "scale (EPIC), which reward term dominates or does nothing, which traps the reward hits (padding read "
        "on terminal steps, constant or sparse rewards, normalizer clipping, discounting, float16), and how "
        "much each rank-vector entry matters (mahjong). Prints each verdict with its evidence and the episodes "
        "that show it. Plug-ins run in a child process. Exit status 1 when a diagnostic fails, 0 otherwise "
        "(2 when the diagnosis could not run). See docs/diagnostics.md.")
    add_candidates(p, required=False)  # --list needs neither
    add_diagnosis_options(p)
    p.add_argument("--json", action="store_true", help="print the findings as JSON (one object per finding)")
    p.add_argument("--list", action="store_true", help="list the registered diagnostics and exit")
    add_input_options(p)
    p.set_defaults(func=_diagnose)


def _list() -> int:
    from rewardlab.diagnostics import registered_diagnostics

    for name, d in registered_diagnostics().items():
        print(f"{name:<28} {d.title}")
    return 0


def _print(result) -> None:
    ctx = result.context
    base = f", base {ctx.base.name}" if ctx.base is not None else ", no base"
    print(f"diagnosed {len(ctx.candidates)} candidate(s) on {ctx.n:,} steps in {ctx.n_episodes:,} episodes{base}")
    for candidate in [c.name for c in ctx.candidates]:
        print(f"\n{candidate}")
        for f in result.findings:
            if f.candidate != candidate:
                continue
            other = f" (vs {f.other})" if f.other else ""
            print(f"  {_MARKS[f.verdict]:<5} {f.diagnostic}{other}: {f.summary}")
            if f.episodes and f.verdict in ("fail", "warn"):
                shown = ", ".join(map(str, f.episodes[:5]))
                print(f"        episodes: {shown}{' ...' if len(f.episodes) > 5 else ''}")
    for name, message in result.errors:
        print(f"\nthe diagnostic {name} could not run: {message}")
    counts = {v: sum(f.verdict == v for f in result.findings) for v in _MARKS}
    print("\n" + ", ".join(f"{n} {v}" for v, n in counts.items() if n))


def _diagnose(args) -> int:
    if args.list:
        return _list()
    from rewardlab.diagnostics.run import diagnose

    options = diagnosis_options(args)
    items = candidate_items(args)
    frame = load_data(args)
    result = diagnose(frame, items, base=args.base, options=options, only=args.only)
    if args.json:
        print(json.dumps([{"diagnostic": f.diagnostic, "candidate": f.candidate, "other": f.other,
                           "verdict": f.verdict, "summary": f.summary, "evidence": f.evidence,
                           "rows": list(f.rows), "episodes": list(f.episodes)} for f in result.findings]
                         + [{"diagnostic": n, "error": m} for n, m in result.errors], indent=1))
    else:
        _print(result)
    sys.stdout.flush()
    return 1 if result.failed else 0
