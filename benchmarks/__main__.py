"""Run every ``benchmarks/bench_*.py`` and print the figures it measured.

Each module exposes ``run(report)``; ``report(name, value, unit, target=None)``
records one measured figure.  Ratios are measured within one run on this
machine, never compared with numbers from elsewhere.

Each module runs in a fresh interpreter (``python -m benchmarks --one
NAME``), so its figures do not depend on the modules run before it: one
process running them all holds, by the time the later ones run, the
gigabytes the earlier ones allocated (about 2.3 GB after ``loading``), and
every ``fork`` (each isolated plug-in run forks twice) copies the page
tables of all of it, which more than doubled the manager runner's fixed
cost.  A benchmark that wants such a process measures it itself.

Usage: ``python -m benchmarks [NAME ...]`` (e.g. ``python -m benchmarks loading``).
A module that sets ``MANUAL = True`` (``bench_scale``: minutes long, ``make
bench-scale``) runs only when named.
"""

from __future__ import annotations

import importlib
import json
import os
import pkgutil
import subprocess
import sys
import time
import traceback
from pathlib import Path

os.environ.setdefault("REWARDLAB_PROGRESS", "0")

#: Marks the lines a module's interpreter sends its figures on (JSON), among what it prints.
ROW_MARK = "\x1e rewardlab-bench-row "


def run_one(name: str) -> int:
    """Run module ``name`` here (the child side of :func:`main`): its lines printed, each figure also as a row."""
    module = importlib.import_module(f"benchmarks.{name}")
    print(f"== {name}", flush=True)

    def report(label: str, value: float, unit: str, target: str | None = None) -> None:
        shown = f"{value:,.3g}" if abs(value) < 1000 else f"{value:,.0f}"
        print(f"   {label:<62} {shown:>14} {unit:<14} {target or ''}", flush=True)
        row = (name.removeprefix("bench_"), label, f"{shown} {unit}", target or "")
        print(ROW_MARK + json.dumps(row), flush=True)

    t0 = time.perf_counter()
    try:
        module.run(report)
    except Exception:  # keep going: one broken benchmark should not hide the others
        traceback.print_exc()
        return 1
    finally:
        print(f"   ({time.perf_counter() - t0:.1f} s)", flush=True)
    return 0


def run_child(name: str, rows: list) -> bool:
    """Run module ``name`` in a fresh interpreter, echo what it prints and collect its figures; True if it ran."""
    package_parent = str(Path(__file__).resolve().parents[1])
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(filter(None, [package_parent, os.environ.get("PYTHONPATH")]))}
    process = subprocess.Popen([sys.executable, "-m", "benchmarks", "--one", name], stdout=subprocess.PIPE,
                               text=True, env=env)
    for line in process.stdout:
        if line.startswith(ROW_MARK):
            rows.append(tuple(json.loads(line[len(ROW_MARK):])))
        else:
            print(line, end="", flush=True)
    return process.wait() == 0


def main(argv: list[str]) -> int:
    import benchmarks

    if argv[:1] == ["--one"] and len(argv) == 2:
        return run_one(argv[1])
    names = sorted(m.name for m in pkgutil.iter_modules(benchmarks.__path__) if m.name.startswith("bench_"))
    if argv:
        names = [n for n in names if n.removeprefix("bench_") in argv or n in argv]
    rows: list[tuple[str, str, str, str]] = []
    failed = 0
    for name in names:
        module = importlib.import_module(f"benchmarks.{name}")
        if not argv and getattr(module, "MANUAL", False):
            continue
        failed += not run_child(name, rows)
    print("\nSummary")
    for area, label, value, target in rows:
        print(f"  {area:<10} {label:<62} {value:>24}  {target}")
    return 1 if failed else 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
