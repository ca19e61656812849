"""Loading: text parse vs raw Polars read, Parquet throughput, memory, TensorDict building."""

from __future__ import annotations

import tempfile
from pathlib import Path

import numpy as np
import polars as pl

import rewardlab
from rewardlab.dataset import write_dataset
from rewardlab.sources.storage import verify_dataset
from benchmarks._data import best_time, big_text_file, tiled_frame, whole_episodes_head


def _raw_read(path: Path) -> pl.DataFrame:
    """What Polars takes just to read the file as raw string columns (no parsing, no checks)."""
    return pl.read_csv(path, has_header=False, separator="\t", quote_char=None,
                       schema={f"c{i}": pl.String for i in range(12)},
                       truncate_ragged_lines=True, missing_columns="insert")


_MEMORY_PROBE = """
import gc, os, sys
import polars, torch, rewardlab
def rss():
    with open('/proc/self/statm') as f:
        return int(f.read().split()[1]) * os.sysconf('SC_PAGE_SIZE')
# warm up: Polars' thread pool and allocator arenas are created on first use
rewardlab.load_kanachan(sys.argv[2], progress=False)
gc.collect()
base = rss()
frame = rewardlab.load_kanachan(sys.argv[1], progress=False)
gc.collect()
print(rss() - base, frame.height)
"""


def _rss_growth_in_subprocess(path: Path, warmup: Path) -> tuple[int, int]:
    """(RSS growth of loading ``path`` in a fresh process after loading small ``warmup``, rows)."""
    import subprocess
    import sys

    out = subprocess.run([sys.executable, "-c", _MEMORY_PROBE, str(path), str(warmup)],
                         capture_output=True, text=True, check=True).stdout.split()
    return int(out[0]), int(out[1])


def run(report) -> None:
    path = big_text_file(400_000)
    n_lines = sum(1 for _ in open(path, "rb"))
    raw = best_time(lambda: _raw_read(path))
    full = best_time(lambda: rewardlab.load_kanachan(path, progress=False))
    report("text file lines", n_lines, "lines")
    report("raw Polars read as string columns", n_lines / raw, "lines/s")
    report("full parse + validation (load_kanachan)", n_lines / full, "lines/s")
    report("full parse / raw read time", full / raw, "x", "target <= 2.5")

    frame = rewardlab.load_kanachan(path, progress=False)
    report("frame.estimated_size() per transition", frame.estimated_size() / frame.height, "B")
    with tempfile.TemporaryDirectory() as tmp:
        arrow, small = Path(tmp) / "d.arrow", Path(tmp) / "small.arrow"
        write_dataset(frame, arrow, kind="ipc")
        write_dataset(whole_episodes_head(frame, 2000), small, kind="ipc")
        growth, rows = _rss_growth_in_subprocess(arrow, small)
        report("resident bytes per transition, frame loaded in a fresh process", growth / rows, "B",
               "target <= 450")
        growth, rows = _rss_growth_in_subprocess(path, small)
        report("RSS growth per transition of a text load (parse buffers, allocator caches)",
               growth / rows, "B")

    big = tiled_frame(frame, 2_000_000)
    with tempfile.TemporaryDirectory() as tmp:
        for suffix, kind in ((".parquet", "parquet"), (".arrow", "ipc")):
            out = Path(tmp) / f"d{suffix}"
            write_dataset(big, out, kind=kind)
            t = best_time(lambda: rewardlab.load_kanachan(out))
            report(f"converted dataset load, {suffix} ({out.stat().st_size / big.height:.0f} B/row on disk)",
                   big.height / t, "transitions/s", "target >= 5e6")
            t = best_time(lambda: rewardlab.scan_kanachan(out).select("seat", "results", "end_of_game").collect())
            report(f"lazy scan of 3 columns, {suffix}", big.height / t, "transitions/s")
            t = best_time(lambda: verify_dataset(out, cached=False))
            report(f"verification pass of a first lazy scan (checksums, nulls; once per file), {suffix}",
                   big.height / t, "transitions/s")
    del big

    million = whole_episodes_head(tiled_frame(frame, 1_100_000), 1_000_000)
    arrays = rewardlab.FrameArrays(million)
    t = best_time(lambda: arrays.tensordict(), repeat=2)
    report(f"to_tensordict, {million.height:,} rows, one batch", million.height / t, "rows/s")
    rows = np.random.default_rng(0).permutation(million.height)
    t = best_time(lambda: arrays.tensordict(rows), repeat=2)
    report(f"to_tensordict, {million.height:,} shuffled rows", million.height / t, "rows/s")
