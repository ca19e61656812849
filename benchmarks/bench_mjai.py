"""MJAI log loading (issue 14): games and transitions per second, against orjson parsing the same lines.

A temporary folder holds :data:`GAMES` logs, copies of the six shipped
riichienv games (``data/mjai``) in turn, each made distinct by its first
line, ``{"type":"start_game","id":K}`` (the scanner skips unknown keys; the
game's bytes, and so its id, change, so the loader's duplicate-game check
lets every copy in).  The logs are plain ``.json``; a second, smaller folder
of :data:`GZ_GAMES` ``.json.gz`` copies is measured apart.

Each time is the best of three rounds (orjson, default threads, one thread,
in turn, so that a busy machine weighs on all three alike), after a warm-up
load of ``data/mjai`` (numba's compiled kernels loaded from its cache, or
compiled).  The baseline reads
every file as the loader does (``read_bytes``, ``gzip.decompress`` for
``.gz``) and calls ``orjson.loads`` on each line, in one thread.  The load is
``read_mjai(folder, progress=False)``, everything included (file listing,
scanning, hand tracking, features, every rule checked, game ids, the frame):
with the default threads, and with ``workers=1``.  Target (issue 14): the
whole load within 3x of the orjson time, measured in the same run.

Memory: a fresh process loads the folder after a warm-up load; its peak
resident growth (``VmHWM``, its own high-water mark: ``ru_maxrss`` can carry
the parent's across exec, which inflated it under ``make bench``) and what it keeps (before and after glibc's
``malloc_trim`` hands back the freed memory its arenas cache) are given per
transition next to the frame's ``estimated_size()`` and the JSON text's size,
to show that memory grows with the frame, not with the text.
"""

from __future__ import annotations

import gzip
import os
import subprocess
import sys
import tempfile
from pathlib import Path

import orjson

from rewardlab.sources.mjai.reader import log_files, read_mjai
from benchmarks._data import ROOT, timings

DATA = ROOT / "data" / "mjai"
#: Games in the plain ``.json`` folder, and in the ``.json.gz`` one.
GAMES = 2_000
GZ_GAMES = 500
REPEAT = 3


def _shipped_games() -> list[tuple[str, bytes]]:
    """(stem, text after the ``start_game`` line) of each shipped log, decompressed."""
    out = []
    for path in log_files(DATA):
        data = path.read_bytes()
        if path.name.endswith(".gz"):
            data = gzip.decompress(data)
        first, rest = data.split(b"\n", 1)
        if orjson.loads(first) != {"type": "start_game"}:
            raise ValueError(f"{path}: the first line should be a bare start_game event, not {first!r}")
        out.append((path.name.split(".")[0], rest))
    return out


def _write_copies(folder: Path, games: int, *, gz: bool) -> int:
    """Write ``games`` distinct logs into ``folder``; the bytes of JSON text written (uncompressed)."""
    folder.mkdir()
    shipped = _shipped_games()
    size = 0
    for k in range(games):
        stem, rest = shipped[k % len(shipped)]
        text = b'{"type":"start_game","id":%d}\n' % k + rest
        size += len(text)
        if gz:
            (folder / f"{k:06d}_{stem}.json.gz").write_bytes(gzip.compress(text, compresslevel=6, mtime=0))
        else:
            (folder / f"{k:06d}_{stem}.json").write_bytes(text)
    return size


def _orjson_parse(files: list[Path]) -> int:
    """Read every file as the loader does and ``orjson.loads`` each line; the number of lines."""
    lines = 0
    for path in files:
        data = path.read_bytes()
        if path.name.endswith(".gz"):
            data = gzip.decompress(data)
        for line in data.splitlines():
            orjson.loads(line)
            lines += 1
    return lines


_MEMORY_PROBE = """
import gc, os, sys
from rewardlab.sources.mjai.reader import read_mjai
def rss():
    with open('/proc/self/statm') as f:
        return int(f.read().split()[1]) * os.sysconf('SC_PAGE_SIZE')
# warm up: the compiled kernels, the thread pool and the allocator arenas are set up on first use
read_mjai(sys.argv[2], progress=False)
gc.collect()
base = rss()
frame = read_mjai(sys.argv[1], progress=False).frame
with open('/proc/self/status') as f:  # VmHWM: this process's own peak (ru_maxrss can carry the parent's across exec)
    peak = next(int(line.split()[1]) for line in f if line.startswith('VmHWM:')) * 1024
gc.collect()
kept = rss() - base
try:  # glibc keeps freed memory in its arenas; give it back to see what the frame itself holds
    import ctypes
    ctypes.CDLL("libc.so.6").malloc_trim(0)
    trimmed = rss() - base
except (OSError, AttributeError):
    trimmed = -1
print(peak - base, kept, trimmed, frame.height, frame.estimated_size())
"""


def _memory_in_subprocess(folder: Path) -> tuple[int, int, int, int, int]:
    """(peak RSS growth, RSS kept, RSS kept after ``malloc_trim`` (-1 without glibc), rows,
    frame.estimated_size()) of loading ``folder`` in a fresh process after a warm-up load."""
    env = {**os.environ, "REWARDLAB_PROGRESS": "0"}
    out = subprocess.run([sys.executable, "-c", _MEMORY_PROBE, str(folder), str(DATA)], capture_output=True,
                         text=True, check=True, cwd=ROOT, env=env).stdout.split()
    peak, kept, trimmed, rows, size = (int(x) for x in out)
    return peak, kept, trimmed, rows, size


def _measure(report, label: str, folder: Path, games: int, text_bytes: int) -> None:
    files = log_files(folder)
    lines = _orjson_parse(files)
    rows = read_mjai(folder, progress=False).frame.height
    report(f"{label}: {games:,} games, {lines:,} lines, {text_bytes / 2**20:.0f} MiB of JSON", rows,
           "transitions")
    # rounds of (orjson, default workers, workers=1), best of each: the three share the machine's load
    cases = {"orjson": lambda: _orjson_parse(files), None: lambda: read_mjai(folder, progress=False),
             1: lambda: read_mjai(folder, progress=False, workers=1)}
    best = {k: float("inf") for k in cases}
    for _ in range(REPEAT):
        best = {k: min(best[k], timings(fn, 1)[0]) for k, fn in cases.items()}
    base = best["orjson"]
    report(f"{label}: orjson.loads per line, reading included, 1 thread", lines / base, "lines/s")
    threads = os.cpu_count() or 1
    for workers, name in ((None, f"default workers ({threads})"), (1, "workers=1")):
        t = best[workers]
        report(f"{label}: read_mjai, {name}", games / t, "games/s")
        report(f"{label}: read_mjai, {name}", rows / t, "transitions/s")
        report(f"{label}: read_mjai, {name} / orjson time", t / base, "x", "target <= 3")


def run(report) -> None:
    read_mjai(DATA, progress=False)  # warm-up: numba's kernels compiled or loaded from its cache
    with tempfile.TemporaryDirectory() as tmp:
        tmp = Path(tmp)
        plain, gz = tmp / "plain", tmp / "gz"
        text_bytes = _write_copies(plain, GAMES, gz=False)
        _measure(report, "json", plain, GAMES, text_bytes)
        peak, kept, trimmed, rows, size = _memory_in_subprocess(plain)
        report(f"json: frame.estimated_size() per transition ({size / 2**20:.0f} MiB)", size / rows, "B")
        report(f"json: JSON text per transition ({text_bytes / 2**20:.0f} MiB)", text_bytes / rows, "B")
        report("json: peak RSS growth per transition (fresh process)", peak / rows, "B")
        report("json: RSS kept per transition after the load", kept / rows, "B")
        if trimmed >= 0:
            report("json: RSS kept per transition after malloc_trim(0)", trimmed / rows, "B")
        gz_bytes = _write_copies(gz, GZ_GAMES, gz=True)
        _measure(report, "json.gz", gz, GZ_GAMES, gz_bytes)
