"""Command-line start-up: ``rewardlab --help`` and ``rewardlab info`` next to ``import polars``.

Each figure is the best of several fresh processes (``subprocess``), so it
includes the interpreter's start and every import a command needs.  The
target (issue 12) is within 3x of a bare ``python -c "import polars"``: the
commands import torch only when they run plug-ins or families, never to
print help or summarise a converted dataset.
"""

from __future__ import annotations

import subprocess
import sys
import tempfile
import time
from pathlib import Path

from benchmarks._data import SAMPLE

REPEAT = 5


def _best(argv: list[str]) -> float:
    best = float("inf")
    for _ in range(REPEAT):
        t0 = time.perf_counter()
        subprocess.run(argv, check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        best = min(best, time.perf_counter() - t0)
    return best


def run(report) -> None:
    python = sys.executable
    with tempfile.TemporaryDirectory() as tmp:
        dataset = Path(tmp) / "sample.parquet"
        subprocess.run([python, "-m", "rewardlab", "convert", str(SAMPLE), "--out", str(dataset)],
                       check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        polars = _best([python, "-c", "import polars"])
        help_ = _best([python, "-m", "rewardlab", "--help"])
        info = _best([python, "-m", "rewardlab", "info", str(dataset)])
    report('python -c "import polars" (fresh process, best of 5)', polars, "s")
    report("rewardlab --help", help_, "s")
    report("rewardlab --help / import polars", help_ / polars, "x", "<= 3")
    report("rewardlab info on the converted sample (119,555 transitions)", info, "s")
    report("rewardlab info / import polars", info / polars, "x", "<= 3")
