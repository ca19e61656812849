"""Run every ``benchmarks/bench_*.py`` and print the figures it measured.

Each module exposes ``run(report)``; ``report(name, value, unit, target=None)``
records one measured figure.  Ratios are measured within one run on this
machine, never compared with numbers from elsewhere.

Usage: ``python -m benchmarks [NAME ...]`` (e.g. ``python -m benchmarks loading``).
A module that sets ``MANUAL = True`` (``bench_scale``: minutes long, ``make
bench-scale``) runs only when named.
"""

from __future__ import annotations

import importlib
import os
import pkgutil
import sys
import time
import traceback

os.environ.setdefault("REWARDLAB_PROGRESS", "0")


def main(argv: list[str]) -> int:
    import benchmarks

    names = sorted(m.name for m in pkgutil.iter_modules(benchmarks.__path__) if m.name.startswith("bench_"))
    if argv:
        names = [n for n in names if n.removeprefix("bench_") in argv or n in argv]
    rows: list[tuple[str, str, str, str]] = []
    failed = 0
    for name in names:
        module = importlib.import_module(f"benchmarks.{name}")
        if not argv and getattr(module, "MANUAL", False):
            continue
        print(f"== {name}", flush=True)

        def report(label: str, value: float, unit: str, target: str | None = None, _name=name) -> None:
            shown = f"{value:,.3g}" if abs(value) < 1000 else f"{value:,.0f}"
            print(f"   {label:<62} {shown:>14} {unit:<14} {target or ''}", flush=True)
            rows.append((_name.removeprefix("bench_"), label, f"{shown} {unit}", target or ""))

        t0 = time.perf_counter()
        try:
            module.run(report)
        except Exception:  # keep going: one broken benchmark should not hide the others
            failed += 1
            traceback.print_exc()
        print(f"   ({time.perf_counter() - t0:.1f} s)", flush=True)
    print("\nSummary")
    for area, label, value, target in rows:
        print(f"  {area:<10} {label:<62} {value:>24}  {target}")
    return 1 if failed else 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
