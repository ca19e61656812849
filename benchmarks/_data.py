"""Shared benchmark helpers: timing, and bigger inputs built from the bundled sample (cached under data/generated/)."""

from __future__ import annotations

import gc
import gzip
import time
from pathlib import Path

import polars as pl

ROOT = Path(__file__).resolve().parents[1]
SAMPLE = ROOT / "data" / "sample.tsv.gz"
CACHE = ROOT / "data" / "generated"


def sample_lines() -> list[str]:
    with gzip.open(SAMPLE, "rt") as f:
        return f.read().splitlines()


def big_text_file(min_lines: int) -> Path:
    """A plain annotation file of at least ``min_lines`` lines: the sample repeated with fresh game ids."""
    lines = sample_lines()
    copies = -(-min_lines // len(lines))
    path = CACHE / f"bench-{copies}x.tsv"
    if path.exists():
        return path
    CACHE.mkdir(parents=True, exist_ok=True)
    tmp = path.with_suffix(".tmp")
    with open(tmp, "w") as f:
        for k in range(copies):
            prefix = f"{k:08x}"
            f.writelines(prefix + line[8:] + "\n" for line in lines)
    tmp.replace(path)
    return path


def tiled_frame(frame: pl.DataFrame, min_rows: int) -> pl.DataFrame:
    """``frame`` repeated until it has at least ``min_rows`` rows (episode order is preserved)."""
    copies = -(-min_rows // frame.height)
    return pl.concat([frame] * copies, rechunk=True)


def whole_episodes_head(frame: pl.DataFrame, n: int) -> pl.DataFrame:
    """The first rows of ``frame``, at most ``n``, ending on an end-of-game row."""
    ends = frame.head(n)["end_of_game"].to_numpy().nonzero()[0]
    return frame.head(int(ends[-1]) + 1)


def timings(fn, repeat: int) -> list[float]:
    """Seconds taken by each of ``repeat`` calls of ``fn``, collecting garbage before each."""
    times = []
    for _ in range(repeat):
        gc.collect()
        t0 = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t0)
    return times


def best_time(fn, repeat: int = 3) -> float:
    """The fastest of ``repeat`` timed calls of ``fn`` (seconds), collecting garbage before each."""
    return min(timings(fn, repeat))


def interleaved(functions: dict, repeat: int = 5) -> dict:
    """The best time of each function (seconds, by label), the calls interleaved so that a busy spell of a
    shared machine slows them alike: ratios of these are steadier than ratios of separate best times."""
    best = dict.fromkeys(functions, float("inf"))
    for _ in range(repeat):
        for label, function in functions.items():
            best[label] = min(best[label], best_time(function, repeat=1))
    return best
