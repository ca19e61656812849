"""kanachan text parsing: full parse vs Polars' raw string read on plain, .gz and .bz2 input; the
fresh-process load of the bundled sample vs a plain per-line Python parser; the serial share of the
parse and the speed-up from 1 to 2 workers; the streaming reader's throughput.

Every ratio is measured in this run, on this machine.
"""

from __future__ import annotations

import bz2
import cProfile
import gzip
import inspect
import os
import pstats
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

import polars as pl

import rewardlab
from rewardlab.sources.kanachan import reader as kanachan
from benchmarks._data import SAMPLE, best_time, big_text_file

#: Lines of the plain file (the sample tiled with fresh game ids); the compressed copies hold two samples' worth.
LINES = 400_000
COMPRESSED_COPIES = 2


def raw_read(path: Path) -> pl.DataFrame:
    """Polars' read of the file as raw string columns: no parsing of the lists, no checks (Polars reads
    .gz itself; .bz2 is decompressed by the standard library first)."""
    source = bz2.open(path, "rb").read() if str(path).endswith(".bz2") else path
    return pl.read_csv(source, has_header=False, separator="\t", quote_char=None,
                       schema={f"c{i}": pl.String for i in range(12)},
                       truncate_ragged_lines=True, missing_columns="insert")


def per_line_parser(path: Path) -> int:
    """The plain Python baseline: split lines, split columns, ``int()`` the comma lists."""
    opener = gzip.open if str(path).endswith(".gz") else open
    rows = 0
    with opener(path, "rt") as f:
        for line in f:
            cols = line.rstrip("\n").split("\t")
            parsed = [cols[0]] + [[int(v) for v in c.split(",")] for c in cols[1:]]
            rows += len(parsed) > 0
    return rows


def _load(path: Path, workers: int | None = None):
    """read_kanachan with ``workers`` threads (the old reader had none: its pool is patched)."""
    if workers is None:
        return kanachan.read_kanachan(path, progress=False)
    if "workers" in inspect.signature(kanachan.read_kanachan).parameters:
        return kanachan.read_kanachan(path, progress=False, workers=workers)
    import concurrent.futures as cf

    original = cf.ThreadPoolExecutor
    cf.ThreadPoolExecutor = lambda max_workers=None, **kw: original(max_workers=workers, **kw)
    try:
        return kanachan.read_kanachan(path, progress=False)
    finally:
        cf.ThreadPoolExecutor = original


def serial_share(path: Path, workers: int) -> float:
    """Share of the wall time the calling thread spends outside waiting for the workers (cProfile)."""
    profile = cProfile.Profile()
    profile.enable()
    _load(path, workers)
    profile.disable()
    stats = pstats.Stats(profile)
    total = stats.total_tt
    waiting = sum(v[3] for (file, _, name), v in stats.stats.items()  # cumulative: Future.result's waits
                  if name == "result" and file.endswith("concurrent/futures/_base.py"))
    return max(0.0, total - waiting) / total


_FRESH = """
import sys, time
t0 = time.perf_counter()
import rewardlab
t1 = time.perf_counter()
rewardlab.load_kanachan(sys.argv[1], progress=False)
t2 = time.perf_counter()
rewardlab.load_kanachan(sys.argv[1], progress=False)
t3 = time.perf_counter()
print(t1 - t0, t2 - t1, t3 - t2)
"""


def fresh_process_load(path: Path) -> tuple[float, float, float]:
    """(import rewardlab, first load, second load) in seconds, in a fresh interpreter."""
    out = subprocess.run([sys.executable, "-c", _FRESH, str(path)], capture_output=True, text=True,
                         check=True, env={**os.environ, "REWARDLAB_PROGRESS": "0"}).stdout.split()
    return tuple(float(x) for x in out)


def run(report) -> None:
    plain = big_text_file(LINES)
    n_plain = sum(1 for _ in open(plain, "rb"))
    n_part = COMPRESSED_COPIES * sum(1 for _ in gzip.open(SAMPLE, "rb"))  # whole copies: whole episodes
    with tempfile.TemporaryDirectory() as tmp:
        part = Path(tmp) / "part.tsv"
        with open(plain, "rb") as src, open(part, "wb") as dst:
            for k, line in enumerate(src):
                if k >= n_part:
                    break
                dst.write(line)
        gz, bz = Path(tmp) / "part.tsv.gz", Path(tmp) / "part.tsv.bz2"
        with open(part, "rb") as src, gzip.open(gz, "wb", compresslevel=6) as dst:
            shutil.copyfileobj(src, dst, 1 << 20)
        with open(part, "rb") as src, bz2.open(bz, "wb") as dst:
            shutil.copyfileobj(src, dst, 1 << 20)

        report("plain text lines / compressed copies' lines", n_plain, "lines")
        raw = best_time(lambda: raw_read(plain))
        plain_full = best_time(lambda: _load(plain))
        report("plain: raw Polars read as string columns", n_plain / raw, "lines/s")
        report("plain: full parse + validation (read_kanachan)", n_plain / plain_full, "lines/s")
        report("plain: full parse / raw read time", plain_full / raw, "x", "target <= 2.5 (16 cores)")
        for label, path in (("gz", gz), ("bz2", bz)):
            raw = best_time(lambda p=path: raw_read(p), repeat=2)
            full = best_time(lambda p=path: _load(p), repeat=2)
            report(f".{label}: raw Polars read as string columns", n_part / raw, "lines/s")
            report(f".{label}: full parse + validation", n_part / full, "lines/s")
            report(f".{label}: full parse / raw read time", full / raw, "x")

        t1 = best_time(lambda: _load(plain, 1), repeat=2)
        t2 = best_time(lambda: _load(plain, 2), repeat=2)
        report("plain: 1 worker", n_plain / t1, "lines/s")
        report("plain: 2 workers", n_plain / t2, "lines/s")
        report("speed-up from 1 to 2 workers", t1 / t2, "x")
        report("serial share, Amdahl fit of the 1 -> 2 worker times", max(0.0, 2 * t2 / t1 - 1) * 100, "%",
               "target < 10")
        report("serial share, calling thread's busy time (cProfile, 2 workers)",
               serial_share(plain, 2) * 100, "%", "target < 10")
        if hasattr(rewardlab.sources.kanachan, "stream") or _has_stream():
            from rewardlab.sources.kanachan.stream import stream_kanachan

            def streamed(p=plain):
                return sum(r.frame.height for r in stream_kanachan(p, progress=False))

            ts = best_time(streamed, repeat=2)
            report("plain: stream_kanachan (default chunk) lines/s", n_plain / ts, "lines/s")
            report("stream_kanachan / read_kanachan time", ts / plain_full, "x")

    sample_lines = sum(1 for _ in gzip.open(SAMPLE, "rb"))
    baseline = best_time(lambda: per_line_parser(SAMPLE), repeat=2)
    fresh = min((fresh_process_load(SAMPLE) for _ in range(3)), key=lambda t: t[1])
    report("sample.tsv.gz lines", sample_lines, "lines")
    report("plain per-line Python parser (split, int())", sample_lines / baseline, "lines/s")
    report("import rewardlab in a fresh process", fresh[0], "s")
    report("first load_kanachan in a fresh process", fresh[1], "s")
    report("second load_kanachan in the same process", fresh[2], "s")
    report("first-call overhead (first - second load)", fresh[1] - fresh[2], "s")
    report("fresh-process first load vs per-line parser", baseline / fresh[1], "x", "target >= 20")


def _has_stream() -> bool:
    try:
        import rewardlab.sources.kanachan.stream  # noqa: F401
    except ImportError:
        return False
    return True
