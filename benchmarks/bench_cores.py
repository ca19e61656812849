"""Scaling with cores (issue 21): the text parse and the out-of-core pipeline at 1, 2, 4, ... workers.

Meant for a machine with many cores (the issue's figures are for 16); on this
project's 2-core machines it measures 1 and 2.  Not part of plain
``make bench``: run it by name::

    python -m benchmarks cores                   # N = 4x10^6 transitions
    N=1e6,8e6 python -m benchmarks cores         # two sizes: marginal rates (start-up costs cancel)
    N=2e5 PARSE_N=2e5 WORKERS=1,2 python -m benchmarks cores   # quick
    PARTS=parse python -m benchmarks cores       # the parse only (PARTS=pipeline: the pipeline only)
    PIPELINE_WORKERS=1,4,16 python -m benchmarks cores   # other worker counts for the pipeline
    LINES_PER_FILE=5e5 python -m benchmarks cores        # smaller input files (more of them)
    APPLY_ENGINE=processes python -m benchmarks cores     # apply on the processes engine only
    STATS_ENGINE=embedded python -m benchmarks cores      # stats on the embedded engine only
    APPLY_MODE=episodes,dataloader python -m benchmarks cores   # apply in both batch modes (default episodes)

What it measures, every ratio in this run:

1. Parse.  One plain annotation file of ``PARSE_LINES`` lines: Polars' raw
   read as string columns (all cores), then ``read_kanachan`` at each worker
   count: lines/s, speed-up over one worker, and the serial share by
   Amdahl's law fitted to the one-worker and the most-workers times
   (``s = (W * t_W / t_1 - 1) / (W - 1)``).  The same for the ``.gz`` copy
   (igzip decompression is one serial stream).
2. Pipeline.  ``N`` transitions as ``.tsv.gz`` files, and at each worker
   count the three CLI steps as separate processes: ``convert --workers W``,
   ``apply --workers W`` (two plug-ins, in each batch mode of ``APPLY_MODE``,
   default episodes) and ``stats``;
   ``apply`` and ``stats`` on each engine of ``APPLY_ENGINE`` and
   ``STATS_ENGINE`` (default both: ``embedded,processes``), the end-to-end
   figures from the faster of each.
   Transitions/s, speed-up, and peak RSS of the largest process
   (:mod:`benchmarks.scale_steps`); beside them the CPU seconds per 10^6
   transitions of the step's whole process tree, the cores it kept busy on
   average, and those the CLI process itself kept busy: a step at 16
   workers that keeps 5 cores busy waits on something, and one whose CLI
   process stays near 1.0 waits on that one interpreter (the embedded
   engine's threads share it).  The end-to-end rate at the most
   workers gives the projection to 10^9 transitions measured on this
   machine's cores rather than extrapolated from one (start-up included,
   so it errs long), with the parts per worker beside it: ``apply`` runs
   a worker's parts as one run, so a size with fewer than about 4 parts
   per worker measures idle workers, not the steady state a corpus runs
   at.  Use a size that gives many (``N=4e7``: 246 parts).  With two sizes
   (``N=1e6,8e6``) the rates from their difference (start-up costs
   cancel) are reported too; they mislead when the small size leaves
   workers idle (measured on lent 16-core machines: the sizes 1e6 and 8e6
   gave ``apply`` marginal rates of 0.85-4.4M/s, one size of 4e7 gave
   0.81-1.06M/s).  With
   several input files, ``convert`` at the most workers is also timed with
   the files read one after the other in one process (no worker processes:
   :data:`rewardlab.sources.kanachan.stream.THREADS_PER_FILE` set past the
   cores), beside the default of one worker process per file for every four
   cores.
"""

from __future__ import annotations

import gzip
import os
import shutil
import sys
import tempfile
from pathlib import Path

from benchmarks._data import best_time
from benchmarks.bench_parse import raw_read
from benchmarks.bench_scale import PLUGINS, parse_size
from benchmarks.scale_corpus import LINES_PER_FILE, ROOT, read_sample, tile_corpus
from benchmarks.scale_steps import GIB, run_step, tail
from rewardlab.sources.datasets import PartedDataset

MANUAL = True  # minutes: run only when named

DEFAULT_N = 4_000_000
PARSE_LINES = 2_000_000
GOAL_N, GOAL_SECONDS = 10 ** 9, 15 * 60
#: The engines of the pipeline's apply and stats steps (``APPLY_ENGINE=processes``: that one only); each is
#: timed, and the end-to-end figures take the faster.
APPLY_ENGINES = [e.strip() for e in os.environ.get("APPLY_ENGINE", "embedded,processes").split(",") if e.strip()]
STATS_ENGINES = [e.strip() for e in os.environ.get("STATS_ENGINE", "embedded,processes").split(",") if e.strip()]
#: The batch modes of the pipeline's apply step (``APPLY_MODE=episodes,dataloader``: both), each on every engine;
#: the end-to-end figures are given for each.  ``episodes`` (one call per episode, kanachan's episode replay
#: buffer) is apply's default; ``dataloader`` is how kanachan's offline trainer calls a plug-in on a corpus
#: (one call per mini-batch of 8192), so its per-call cost is a few calls per part instead of thousands.
APPLY_MODES = [m.strip() for m in os.environ.get("APPLY_MODE", "episodes").split(",") if m.strip()]


def apply_step(engine: str, mode: str) -> str:
    """The name of an apply step: ``apply ENGINE`` in the default mode (episodes), ``apply ENGINE MODE`` else.

    Examples
    --------
    >>> apply_step("embedded", "episodes"), apply_step("processes", "dataloader")
    ('apply embedded', 'apply processes dataloader')
    """
    return f"apply {engine}" if mode == "episodes" else f"apply {engine} {mode}"


def end_to_end(seconds: dict[str, float], mode: str = "episodes") -> float:
    """Convert, then the fastest apply in batch mode ``mode`` and the fastest stats (NaN when one failed on
    every engine).

    Examples
    --------
    >>> times = {"convert": 3.0, "apply embedded": 5.0, "apply processes": 4.0, "stats embedded": 1.0,
    ...          "apply embedded dataloader": 2.0}
    >>> end_to_end(times), end_to_end(times, "dataloader")
    (8.0, 6.0)
    """
    total = 0.0
    for step in ("convert", "apply", "stats"):
        times = [t for name, t in seconds.items() if name.split()[0] == step and t == t
                 and (step != "apply" or name.split()[2:] == ([] if mode == "episodes" else [mode]))]
        total += min(times) if times else float("nan")
    return total


def _worker_counts(cores: int) -> list[int]:
    text = os.environ.get("WORKERS", "").strip()
    if text:
        return sorted({int(t) for t in text.split(",") if t.strip()})
    counts, w = [], 1
    while w < cores:
        counts.append(w)
        w *= 2
    return counts + [cores]


def _amdahl_serial(t1: float, tw: float, w: int) -> float:
    """Serial share s from t_W = t_1 (s + (1 - s) / W); nan for one worker."""
    return float("nan") if w <= 1 else max(0.0, (w * tw / t1 - 1) / (w - 1))


def parse_scaling(report, work: Path, workers: list[int], lines_wanted: int) -> None:
    from rewardlab.sources.kanachan.reader import read_kanachan

    sample = read_sample()
    text = work / "parse"
    text.mkdir()
    corpus = tile_corpus(text, lines_wanted, lines_per_file=lines_wanted, sample=sample, prefix="parse")
    gz = corpus.files[0]
    plain = text / "parse.tsv"
    with gzip.open(gz, "rb") as src, open(plain, "wb") as dst:
        shutil.copyfileobj(src, dst, 1 << 22)
    lines = corpus.lines
    print(f"   parse input: {lines:,} lines, {plain.stat().st_size / 1e9:.2f} GB plain, "
          f"{gz.stat().st_size / 1e9:.2f} GB gzipped", flush=True)
    for label, path in (("plain", plain), ("gz", gz)):
        raw = best_time(lambda p=path: raw_read(p), repeat=2)
        report(f"{label}: Polars raw read as strings (all cores)", lines / raw, "lines/s")
        times = {}
        for w in workers:
            times[w] = best_time(lambda p=path, w=w: read_kanachan(p, progress=False, workers=w), repeat=2)
            report(f"{label}: read_kanachan, {w} workers", lines / times[w], "lines/s",
                   f"speed-up {times[1] / times[w]:.2f}x" if 1 in times else "")
        top = max(workers)
        if 1 in times and top > 1:
            report(f"{label}: serial share, Amdahl fit 1 -> {top} workers",
                   _amdahl_serial(times[1], times[top], top) * 100, "%", "target < 10")
        report(f"{label}: full parse ({top} workers) / raw read time", times[top] / raw, "x",
               "target <= 2.5 on 16 cores")


#: ``rewardlab convert`` with every file read in this process, one after the other (no worker processes).
_ONE_FILE_AT_A_TIME = ("import sys; from rewardlab.sources.kanachan import stream; stream.THREADS_PER_FILE = 1 << 30; "
                       "from rewardlab.cli import main; sys.exit(main(sys.argv[1:]))")


def pipeline_scaling(report, work: Path, n: int, workers: list[int]) -> dict[int, dict[str, float]]:
    """Seconds of each CLI step at each worker count, on ``n`` transitions."""
    corpus_dir = work / f"corpus-text-{n}"
    corpus_dir.mkdir()
    corpus = tile_corpus(corpus_dir, n, sample=read_sample(),
                         lines_per_file=int(float(os.environ.get("LINES_PER_FILE", LINES_PER_FILE))))
    rows = corpus.lines
    print(f"   pipeline input: {rows:,} transitions in {len(corpus.files)} .tsv.gz files "
          f"({corpus.gz_bytes / 1e9:.2f} GB)", flush=True)
    cli = [sys.executable, "-m", "rewardlab"]
    files = [str(f) for f in corpus.files]
    plugins = [a for p in PLUGINS for a in ("--plugin", str(p))]
    seconds: dict[int, dict[str, float]] = {}
    parts: dict[int, int] = {}
    top = max(workers)
    if len(files) > 1:  # the same convert with the files one after the other (the stream of before), beside
        one_by_one = [sys.executable, "-c", _ONE_FILE_AT_A_TIME, "convert", *files, "--out", str(work / "ds-serial"),
                      "--workers", str(top)]
        step = run_step(f"convert W={top}, files one after the other", one_by_one, rows=rows, cwd=ROOT)
        if step.ok:
            report(f"N={rows:.1e} convert, {top} workers, files one after the other in one process: trans/s "
                   f"(peak RSS {step.peak / GIB:.2f} GiB)", rows / step.seconds, "trans/s")
        shutil.rmtree(work / "ds-serial", ignore_errors=True)
    for w in workers:
        dataset, rewards = work / f"ds{w}", work / f"rw{w}"
        steps = {"convert": [*cli, "convert", *files, "--out", str(dataset), "--workers", str(w)]}
        for k, (mode, engine) in enumerate((m, e) for m in APPLY_MODES for e in APPLY_ENGINES):
            out = rewards if k == 0 else work / f"rw{w}-{engine}-{mode}"  # the first's rewards: the stats' input
            steps[apply_step(engine, mode)] = [*cli, "apply", str(dataset), *plugins, "--out", str(out),
                                               "--workers", str(w), "--engine", engine, "--batch-mode", mode]
        for engine in STATS_ENGINES:
            steps[f"stats {engine}"] = [*cli, "stats", str(rewards), "--json", "--workers", str(w), "--engine", engine]
        seconds[w] = {}
        for name, argv in steps.items():
            step = run_step(f"{name} W={w}", argv, rows=rows, cwd=ROOT)
            if not step.ok:
                print(f"   {name} with {w} workers FAILED (exit {step.returncode}):\n      "
                      + tail(step.stderr or step.stdout).replace("\n", "\n      "), flush=True)
                seconds[w][name] = float("nan")
                continue
            seconds[w][name] = step.seconds
            if name == "convert":
                parts[w] = len(PartedDataset(dataset).manifest.parts)
            one = seconds.get(1, {}).get(name, float("nan"))
            speed = f"speed-up {one / step.seconds:.2f}x" if w != 1 and one == one else ""
            report(f"N={rows:.1e} {name}, {w} workers: trans/s (peak RSS {step.peak / GIB:.2f} GiB)",
                   rows / step.seconds, "trans/s", "; ".join(x for x in (speed, step.cpu_text()) if x))
        for folder in (dataset, rewards, *work.glob(f"rw{w}-*")):
            shutil.rmtree(folder, ignore_errors=True)
    for mode in APPLY_MODES:
        total = end_to_end(seconds[top], mode)
        if total != total:
            continue
        label = "" if mode == "episodes" else f", apply in batch mode {mode}"
        report(f"N={rows:.1e} end to end (convert + the faster apply + the faster stats{label}), {top} workers",
               rows / total, "trans/s")
        minutes = GOAL_N / (rows / total) / 60
        per_worker = parts.get(top, 0) / top
        report(f"10^9 transitions at N={rows:.1e}'s rates (start-up included{label}), {top} workers", minutes,
               "min", f"{per_worker:.1f} parts per worker{' (too few: idle workers)' if per_worker < 4 else ''}; "
               f"target < 15 on 16 cores: {'PASS' if minutes < GOAL_SECONDS / 60 else 'FAIL'}")
    shutil.rmtree(corpus_dir, ignore_errors=True)
    return {"rows": rows, "parts": parts, **seconds}


def marginal(report, runs: list[dict], workers: list[int]) -> None:
    """Rates from the difference of two sizes: start-up costs (imports, first compiles) cancel out."""
    small, big = runs[0], runs[-1]
    extra = big["rows"] - small["rows"]
    for w in workers:
        per_step = {name: big[w][name] - small[w][name] for name in big[w]}
        for name, dt in per_step.items():
            if dt == dt and dt > 0:
                report(f"marginal {name}, {w} workers ({small['rows']:.0e} -> {big['rows']:.0e})", extra / dt,
                       "trans/s")
        dt = end_to_end(big[w]) - end_to_end(small[w])
        if dt == dt and dt > 0:
            rate = extra / dt
            fixed = end_to_end(small[w]) - small["rows"] / rate
            minutes = (GOAL_N / rate + max(0.0, fixed)) / 60
            report(f"marginal end to end, {w} workers", rate, "trans/s", f"{rate / w:,.0f} per worker")
            idle = small["parts"].get(w, 0) < 4 * w
            report(f"10^9 transitions at the marginal rate + start-up, {w} workers", minutes, "min",
                   ("not trusted: the small size leaves workers idle; " if idle else "")
                   + f"target < 15 on 16 cores: {'PASS' if minutes < GOAL_SECONDS / 60 else 'FAIL'}")


def run(report) -> None:
    cores = len(os.sched_getaffinity(0))
    workers = _worker_counts(cores)
    sizes = sorted({parse_size(t) for t in (os.environ.get("N") or str(DEFAULT_N)).split(",") if t.strip()})
    print(f"   {cores} cores; workers {workers}; N = {', '.join(f'{n:,}' for n in sizes)}", flush=True)
    work = Path(tempfile.mkdtemp(prefix="rewardlab-bench-cores-"))
    try:
        parts = os.environ.get("PARTS", "parse,pipeline").split(",")
        if "parse" in parts:
            parse_scaling(report, work, workers, parse_size(os.environ.get("PARSE_N") or str(PARSE_LINES)))
        if "pipeline" in parts:
            pipeline = os.environ.get("PIPELINE_WORKERS", "").strip()
            counts = sorted({int(t) for t in pipeline.split(",")}) if pipeline else workers
            runs = [pipeline_scaling(report, work, size, counts) for size in sizes]
            if len(runs) > 1:
                marginal(report, runs, counts)
    finally:
        shutil.rmtree(work, ignore_errors=True)
