"""Scale (issue 21): text -> dataset -> two plug-ins -> statistics, run through the CLI as a user runs it.

Not part of plain ``make bench`` (it takes minutes): ``benchmarks/__main__.py``
runs a module that sets ``MANUAL = True`` only when it is named.

Usage::

    make bench-scale                        # N = 2x10^7 transitions (about 10 GB of text, generated)
    make bench-scale N=80000000             # the big size (or N=80000000 make bench-scale)
    make bench-scale N=20000000,80000000    # both sizes in one run: peak memory side by side
    make bench-scale N=1e6                  # quick (N=quick is the same)
    KEEP=1 make bench-scale                 # keep the generated text and datasets (their folder is printed)

Environment: ``N`` (sizes, comma-separated; default 2x10^7), ``BASELINE_N``
(size of the in-memory comparison, default 2x10^6, at most the smallest N),
``BASELINE_REPEAT`` (runs of each apply compared, interleaved, the fastest
kept; default 2), ``SEED`` (game ids), ``KEEP``, ``SCALE_ENGINES`` (``embedded,processes,ray`` by
default; ``embedded`` skips the other two).  Work happens in a fresh folder under ``TMPDIR``.

What runs, each step a separate ``rewardlab`` process timed from start to exit:

1. The corpus: the bundled sample tiled with fresh game ids
   (:mod:`benchmarks.scale_corpus`), ``.tsv.gz`` files of ~1.5M lines.  Its
   own speed is printed; it is the input, not part of the pipeline's time.
2. ``convert FILES --out CORPUS/`` (a folder: a dataset of parts),
   ``apply CORPUS/ --plugin rank_top.py --plugin raw_points.py --out REWARDS/``
   (default batch mode, episodes), the same with ``--engine processes`` and
   with ``--engine ray`` when Ray is installed (each beside, as a ratio to
   the default engine), and ``stats REWARDS/ --json``.
3. At ``BASELINE_N``: the in-memory path that exists for single files
   (``convert FILES --out x.parquet``, ``apply x.parquet ... --out r.parquet``,
   ``stats r.parquet --json``) beside the same steps out of core, for the
   ratio of apply throughputs at one size in one run, and a check that both
   give the same statistics.

Per step: transitions, seconds, transitions/s, transitions/s per core (the
cores of ``os.sched_getaffinity``), peak RSS (see :mod:`benchmarks.scale_steps`:
the largest single process of the step, the CLI process, its largest
descendant, the tree's sum).  Then end to end (convert + apply + stats,
embedded engine) per core, its projection to 10^9 transitions on 16 cores
assuming throughput linear in cores, and PASS/FAIL against the issue's
targets.  A step that fails prints the tail of its stderr and the run goes on;
the benchmark raises at the end (non-zero exit) if any step failed.
"""

from __future__ import annotations

import importlib.util
import json
import math
import os
import shutil
import sys
import tempfile
import time
from pathlib import Path

from benchmarks.scale_corpus import ROOT, Corpus, read_sample, tile_corpus
from benchmarks.scale_steps import GIB, Step, run_step, tail

MANUAL = True  # long: run only when named (make bench-scale / python -m benchmarks scale)

DEFAULT_N = 20_000_000
QUICK_N = 1_000_000
DEFAULT_BASELINE_N = 2_000_000
PLUGINS = [ROOT / "data" / "plugins" / "rank_top.py", ROOT / "data" / "plugins" / "raw_points.py"]
PEAK_TARGET = 2 * GIB
APPLY_RATIO_TARGET = 0.75
GOAL_N, GOAL_CORES, GOAL_SECONDS = 10 ** 9, 16, 15 * 60
GROWTH_TOLERANCE = 1.2  # peak at the larger size / peak at the smaller one, "does not grow with N"
TEXT_BYTES_PER_LINE = 540  # the sample's average, for the disk estimate
DISK_BYTES_PER_LINE = 400  # gz text + dataset + rewards, generous


def parse_size(text: str) -> int:
    """A transition count as typed: ``20000000``, ``2e7``, ``20_000_000`` or ``quick`` (10^6).

    Examples
    --------
    >>> parse_size("2e7"), parse_size("20_000_000"), parse_size("quick")
    (20000000, 20000000, 1000000)
    """
    text = text.strip().lower()
    if text == "quick":
        return QUICK_N
    value = float(text.replace("_", "")) if any(c in text for c in ".e") else int(text.replace("_", ""))
    if value < 1 or value != int(value):
        raise ValueError(f"N: a size is a whole number of transitions, at least 1, got {text!r}")
    return int(value)


def _sizes() -> list[int]:
    text = os.environ.get("N", "").strip()
    if os.environ.get("QUICK") and not text:
        text = "quick"
    return sorted({parse_size(t) for t in text.split(",") if t.strip()} or {DEFAULT_N})


def _cli() -> list[str]:
    script = Path(sys.executable).with_name("rewardlab")
    return [str(script)] if script.exists() else [sys.executable, "-m", "rewardlab"]


def _gib(value: float) -> str:
    return f"{value / GIB:.2f}" if value else "-"


def _rate(value: float) -> str:
    return "-" if math.isnan(value) else f"{value:,.0f}"


class Bench:
    """One run: the work folder, the cores, every step measured, and what it printed."""

    def __init__(self, work: Path, report) -> None:
        self.work = work
        self.report = report
        self.cores = len(os.sched_getaffinity(0))
        self.cli = _cli()
        self.steps: list[Step] = []
        self.repeat = max(1, int(os.environ.get("BASELINE_REPEAT") or 2))
        self.ray = importlib.util.find_spec("ray") is not None
        engines = os.environ.get("SCALE_ENGINES", "embedded,processes,ray").split(",")
        self.processes = "processes" in engines
        self.ray_skip = ("Ray is not installed (pip install 'ray[data]==2.60.0')" if not self.ray
                         else "" if "ray" in engines else "SCALE_ENGINES leaves it out")

    # --- running -------------------------------------------------------------------------------------
    def step(self, label: str, args: list[str], rows: int) -> Step:
        step = run_step(label, [*self.cli, *args], rows=rows, cwd=ROOT)
        self.steps.append(step)
        self._print(step)
        return step

    def skip(self, label: str, rows: int, why: str) -> Step:
        step = Step(label, [], rows, skipped=why)
        self.steps.append(step)
        self._print(step)
        return step

    def _print(self, step: Step) -> None:
        if step.skipped:
            print(f"   {step.label:<44} skipped: {step.skipped}", flush=True)
            return
        if not step.ok:
            print(f"   {step.label:<44} FAILED (exit {step.returncode}, {step.seconds:.1f} s): "
                  f"{' '.join(step.argv[len(self.cli):])}", flush=True)
            print("      " + tail(step.stderr or step.stdout).replace("\n", "\n      "), flush=True)
            return
        child = f"{_gib(step.child)} {step.child_name}" if step.child else "-"
        print(f"   {step.label:<44} {step.rows:>12,} {step.seconds:>9.1f} {_rate(step.rate):>12} "
              f"{_rate(step.rate / self.cores):>11} {_gib(step.peak):>6} {_gib(step.main):>6} "
              f"{child:>22} {_gib(step.tree_sum):>6} {step.processes:>5}", flush=True)

    def header(self, title: str) -> None:
        print(f"   {title}", flush=True)
        print(f"   {'step':<44} {'transitions':>12} {'seconds':>9} {'trans/s':>12} {'/s/core':>11} "
              f"{'peak':>6} {'main':>6} {'largest child (GiB)':>22} {'tree':>6} {'procs':>5}", flush=True)

    def corpus(self, n: int, folder: Path, seed: int) -> Corpus:
        folder.mkdir(parents=True)
        corpus = tile_corpus(folder, n, seed=seed, sample=self.sample)
        print(f"   generated {corpus.lines:,} transitions ({corpus.games:,} games; {n:,} asked, rounded up to a "
              f"whole game) in {len(corpus.files)} .tsv.gz files: {corpus.text_bytes / 1e9:.2f} GB of text, "
              f"{corpus.gz_bytes / 1e9:.2f} GB gzipped, {corpus.seconds:.1f} s = "
              f"{corpus.lines / corpus.seconds:,.0f} lines/s, {corpus.text_bytes / corpus.seconds / 1e6:,.0f} MB/s "
              f"(one core)", flush=True)
        self.report(f"N={n:.0e}: corpus generation", corpus.lines / corpus.seconds, "lines/s")
        return corpus

    def stats_json(self, step: Step) -> dict | None:
        if not step.ok:
            return None
        try:
            data = json.loads(step.stdout)
        except ValueError:
            print(f"      stats --json printed no JSON: {tail(step.stdout, 3)!r}")
            return None
        rows = data.get("rows")
        if rows != step.rows:
            print(f"      stats counted {rows} rows, the corpus has {step.rows:,}: MISMATCH", flush=True)
        return data

    # --- the pipeline ----------------------------------------------------------------------------------
    def out_of_core(self, n: int, corpus: Corpus, folder: Path, *, beside: bool) -> dict[str, Step]:
        """The pipeline out of core; ``beside``: apply on the other engines too (processes, Ray)."""
        files = [str(f) for f in corpus.files]
        rows = corpus.lines
        dataset, rewards = folder / "corpus", folder / "rewards"
        plugins = [arg for p in PLUGINS for arg in ("--plugin", str(p))]
        steps = {"convert": self.step("convert FILES --out CORPUS/", ["convert", *files, "--out", str(dataset)], rows)}
        steps["apply"] = self.step("apply CORPUS/ (2 plug-ins) --out REWARDS/",
                                   ["apply", str(dataset), *plugins, "--out", str(rewards)], rows)
        if beside and self.processes:
            steps["apply_processes"] = self.step("apply --engine processes",
                                                 ["apply", str(dataset), *plugins, "--engine", "processes", "--out",
                                                  str(folder / "rewards-processes")], rows)
        if beside:
            label = "apply --engine ray"
            steps["apply_ray"] = (self.skip(label, rows, self.ray_skip) if self.ray_skip else
                                  self.step(label, ["apply", str(dataset), *plugins, "--engine", "ray",
                                                    "--out", str(folder / "rewards-ray")], rows))
        steps["stats"] = self.step("stats REWARDS/ --json", ["stats", str(rewards), "--json"], rows)
        return steps

    def in_memory(self, corpus: Corpus, folder: Path) -> dict[str, Step]:
        files = [str(f) for f in corpus.files]
        rows = corpus.lines
        plugins = [arg for p in PLUGINS for arg in ("--plugin", str(p))]
        frame, rewards = folder / "x.parquet", folder / "r.parquet"
        steps = {"convert": self.step("in memory: convert --out x.parquet", ["convert", *files, "--out", str(frame)],
                                      rows)}
        steps["apply"] = self.step("in memory: apply x.parquet --out r.parquet",
                                   ["apply", str(frame), *plugins, "--out", str(rewards)], rows)
        steps["stats"] = self.step("in memory: stats r.parquet --json", ["stats", str(rewards), "--json"], rows)
        return steps

    def run(self, sizes: list[int], baseline_n: int, seed: int) -> None:
        t0 = time.perf_counter()
        self.sample = read_sample()
        print(f"   {self.cores} cores (os.sched_getaffinity); sizes {', '.join(f'{n:,}' for n in sizes)}; "
              f"in-memory baseline at {baseline_n:,}; work folder {self.work}", flush=True)
        free = shutil.disk_usage(self.work).free
        need = (max(sizes) + baseline_n) * DISK_BYTES_PER_LINE
        if free < need:
            print(f"   WARNING: {free / 1e9:.0f} GB free under {self.work}, this run may need ~{need / 1e9:.0f} GB")
        runs: dict[int, dict[str, Step]] = {}
        for n in sizes:
            folder = self.work / f"n{n}"
            print(f"\n   N = {n:,}", flush=True)
            corpus = self.corpus(n, folder / "text", seed)
            self.header(f"out of core, N = {n:,}")
            runs[n] = self.out_of_core(n, corpus, folder, beside=True)
            if n == baseline_n:
                self.header(f"in-memory baseline, same data (N = {n:,})")
                base_mem = self.in_memory(corpus, folder)
                base_ooc = runs[n]
        if baseline_n not in runs:
            folder = self.work / f"baseline{baseline_n}"
            print(f"\n   in-memory baseline and the same size out of core (N = {baseline_n:,})", flush=True)
            corpus = self.corpus(baseline_n, folder / "text", seed)
            self.header(f"in memory, N = {baseline_n:,}")
            base_mem = self.in_memory(corpus, folder)
            self.header(f"out of core, N = {baseline_n:,}")
            base_ooc = self.out_of_core(baseline_n, corpus, folder, beside=False)
        self.verdicts(runs, base_mem, base_ooc)
        print(f"\n   ({time.perf_counter() - t0:.0f} s in all)")

    # --- verdicts ----------------------------------------------------------------------------------------
    def verdicts(self, runs: dict[int, dict[str, Step]], base_mem: dict[str, Step],
                 base_ooc: dict[str, Step]) -> None:
        print("\n   Targets (issue 21)", flush=True)
        for n, steps in runs.items():
            pipeline = [steps[k] for k in ("convert", "apply", "stats")]
            tag = f"N={n:.0e}"
            for step in steps.values():
                if step.ok:
                    self.report(f"{tag}: {step.label}", step.rate, "trans/s", step.cpu_text())
                    self._verdict(f"{tag}: peak RSS, {step.label}", step.peak / GIB, "GiB",
                                  step.peak < PEAK_TARGET, "< 2 GiB per process")
            if all(s.ok for s in pipeline):
                seconds = sum(s.seconds for s in pipeline)
                per_core = n / seconds / self.cores
                projected = GOAL_N / (per_core * GOAL_CORES)
                self.report(f"{tag}: end to end (convert+apply+stats) per core", per_core, "trans/s/core")
                self._verdict(f"{tag}: projected 10^9 transitions on 16 cores (linear in cores)", projected / 60,
                              "min", projected < GOAL_SECONDS, "< 15 min")
            else:
                print(f"   {tag}: end to end not measured: "
                      f"{', '.join(s.label for s in pipeline if not s.ok)} did not run", flush=True)
            for key, engine in (("apply_processes", "processes"), ("apply_ray", "Ray")):
                other = steps.get(key)
                if other and other.ok and steps["apply"].ok:
                    self.report(f"{tag}: apply throughput, {engine} engine / embedded",
                                other.rate / steps["apply"].rate, "x", "(printed beside, no target)")
        mem, ooc = base_mem["apply"], base_ooc["apply"]
        if mem.ok and ooc.ok:
            tag = f"N={mem.rows:.0e}"
            mem, ooc = self.repeat_pair(mem, ooc)
            self._verdict(f"{tag}: apply throughput, out of core / in memory (best of {self.repeat})",
                          ooc.rate / mem.rate, "x",
                          ooc.rate / mem.rate >= APPLY_RATIO_TARGET, ">= 0.75")
            self.report(f"{tag}: in-memory apply peak RSS (baseline, no target)", mem.peak / GIB, "GiB")
        else:
            print("   apply out of core / in memory: not measured (a step failed)", flush=True)
        self.compare_stats(base_mem["stats"], base_ooc["stats"])
        if len(runs) > 1:
            self.side_by_side(runs)

    def repeat_pair(self, mem: Step, ooc: Step) -> tuple[Step, Step]:
        """The fastest of ``self.repeat`` runs of each apply, interleaved (the machine may be shared)."""
        best = {"mem": mem, "ooc": ooc}
        if self.repeat > 1:
            print(f"\n   apply at N = {mem.rows:,} again, interleaved, for the ratio (BASELINE_REPEAT={self.repeat})")
        for k in range(2, self.repeat + 1):
            for key, first in (("mem", mem), ("ooc", ooc)):
                step = self.step(f"{first.label} #{k}", [*first.argv[len(self.cli):], "--overwrite"], first.rows)
                if step.ok and step.seconds < best[key].seconds:
                    best[key] = step
        return best["mem"], best["ooc"]

    def _verdict(self, label: str, value: float, unit: str, passed: bool, target: str) -> None:
        self.report(label, value, unit, f"{target}: {'PASS' if passed else 'FAIL'}")

    def compare_stats(self, mem: Step, ooc: Step) -> None:
        a, b = self.stats_json(mem), self.stats_json(ooc)
        if a is None or b is None:
            return
        keys = ("count", "mean", "std", "min", "max")
        differ = []
        for name, scopes in a.get("rewards", {}).items():
            for scope, values in scopes.items():
                other = b.get("rewards", {}).get(name, {}).get(scope, {})
                for key in keys:
                    x, y = values.get(key), other.get(key)
                    if isinstance(x, (int, float)) and isinstance(y, (int, float)):
                        same = math.isclose(x, y, rel_tol=1e-12, abs_tol=1e-12)
                    else:
                        same = x == y
                    if not same:
                        differ.append(f"{name}/{scope}/{key}: {x} vs {y}")
        print(f"   statistics, in memory vs out of core ({', '.join(keys)}): "
              f"{'same' if not differ else 'DIFFER: ' + '; '.join(differ[:6])}", flush=True)

    def side_by_side(self, runs: dict[int, dict[str, Step]]) -> None:
        sizes = sorted(runs)
        print("\n   Peak RSS per step (GiB, largest single process) by N: must not grow with N", flush=True)
        print("   " + f"{'step':<44}" + "".join(f"{n:>14,}" for n in sizes) + f"{'ratio':>8}")
        for key in runs[sizes[0]]:
            peaks = [runs[n][key].peak if runs[n][key].ok else 0 for n in sizes]
            ratio = peaks[-1] / peaks[0] if peaks[0] and peaks[-1] else float("nan")
            print("   " + f"{runs[sizes[0]][key].label:<44}" + "".join(f"{_gib(p):>14}" for p in peaks)
                  + f"{ratio:>8.2f}", flush=True)
            if not math.isnan(ratio):
                self._verdict(f"peak RSS growth {sizes[0]:.0e} -> {sizes[-1]:.0e}, {runs[sizes[0]][key].label}",
                              ratio, "x", ratio <= GROWTH_TOLERANCE, f"<= {GROWTH_TOLERANCE} (flat)")


def run(report) -> None:
    sizes = _sizes()
    baseline_n = min(parse_size(os.environ.get("BASELINE_N") or str(DEFAULT_BASELINE_N)), sizes[0])
    seed = int(os.environ.get("SEED") or 0)
    keep = os.environ.get("KEEP", "") not in ("", "0")
    work = Path(tempfile.mkdtemp(prefix="rewardlab-bench-scale-"))
    bench = Bench(work, report)
    try:
        bench.run(sizes, baseline_n, seed)
    finally:
        if keep:
            print(f"   KEEP: the generated text and datasets stay in {work}", flush=True)
        else:
            shutil.rmtree(work, ignore_errors=True)
    failed = [s.label for s in bench.steps if not s.ok and not s.skipped]
    if failed:
        raise RuntimeError(f"{len(failed)} step(s) failed: {', '.join(failed)} (their stderr is printed above)")
