"""Loading: text parse vs raw Polars read, Parquet throughput, memory, TensorDict building."""

from __future__ import annotations

import gc
import os
import tempfile
import time
from pathlib import Path

import numpy as np
import polars as pl

import rewardlab
from benchmarks._data import big_text_file, tiled_frame


def _best(fn, repeat: int = 3) -> float:
    times = []
    for _ in range(repeat):
        gc.collect()
        t0 = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t0)
    return min(times)


def _raw_read(path: Path) -> pl.DataFrame:
    """What Polars takes just to read the file as raw string columns (no parsing, no checks)."""
    return pl.read_csv(path, has_header=False, separator="\t", quote_char=None,
                       schema={f"c{i}": pl.String for i in range(12)},
                       truncate_ragged_lines=True, missing_columns="insert")


def _rss() -> int:
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")


def run(report) -> None:
    path = big_text_file(400_000)
    n_lines = sum(1 for _ in open(path, "rb"))
    raw = _best(lambda: _raw_read(path))
    full = _best(lambda: rewardlab.load_kanachan(path, progress=False))
    report("text file lines", n_lines, "lines")
    report("raw Polars read as string columns", n_lines / raw, "lines/s")
    report("full parse + validation (load_kanachan)", n_lines / full, "lines/s")
    report("full parse / raw read time", full / raw, "x", "target <= 2.5")

    gc.collect()
    before = _rss()
    frame = rewardlab.load_kanachan(path, progress=False)
    gc.collect()
    after = _rss()
    report("resident bytes per transition (RSS growth)", (after - before) / frame.height, "B", "target <= 450")
    report("frame.estimated_size() per transition", frame.estimated_size() / frame.height, "B")

    big = tiled_frame(frame, 2_000_000)
    with tempfile.TemporaryDirectory() as tmp:
        pq = Path(tmp) / "d.parquet"
        big.write_parquet(pq, compression="lz4", row_group_size=65536)
        t = _best(lambda: rewardlab.load_kanachan(pq))
        report("Parquet load (load_kanachan on converted dataset)", big.height / t, "transitions/s",
               "target >= 5e6")
    del big

    million = tiled_frame(frame, 1_000_000).head(1_000_000)
    arrays = rewardlab.FrameArrays(million)
    t = _best(lambda: arrays.tensordict(), repeat=2)
    report("to_tensordict, 1M rows, one batch", 1_000_000 / t, "rows/s")
    rows = np.random.default_rng(0).permutation(1_000_000)
    t = _best(lambda: arrays.tensordict(rows), repeat=2)
    report("to_tensordict, 1M shuffled rows", 1_000_000 / t, "rows/s")
