"""The scale benchmark's corpus generator (benchmarks/scale_corpus.py) against the sample it tiles.

The reference is the sample read with the standard library, line by line: the
generated text must be the sample's lines, copy after copy, with only the game
id changed, fresh and unique per game, cut at whole games.
"""

from __future__ import annotations

import gzip
import itertools
import os
import re
import sys
from pathlib import Path

import pytest

import rewardlab

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:  # the benchmarks package sits beside tests/ (python -m pytest puts it there too)
    sys.path.insert(0, str(ROOT))

from benchmarks import bench_scale, scale_corpus  # noqa: E402
from benchmarks.scale_steps import run_step  # noqa: E402

HEX_ID = re.compile(rb"[0-9a-f]{32}")


@pytest.fixture(scope="module")
def sample_lines() -> list[bytes]:
    return gzip.open(scale_corpus.SAMPLE, "rb").read().splitlines()


@pytest.fixture(scope="module")
def games(sample_lines) -> list[tuple[bytes, list[bytes]]]:
    """The sample's games in order: (id, the lines without their id)."""
    return [(gid, [line[32:] for line in lines])
            for gid, lines in ((k, list(g)) for k, g in itertools.groupby(sample_lines, key=lambda l: l[:32]))]


def expected_lines(games, n: int) -> int:
    """Whole games, copy after copy, until at least ``n`` lines: a plain loop."""
    total = 0
    for _, body in itertools.cycle(games):
        if total >= n:
            return total
        total += len(body)


def read_lines(files: list[Path]) -> list[bytes]:
    lines: list[bytes] = []
    for path in files:
        lines.extend(gzip.open(path, "rb").read().splitlines())  # the standard library's gzip, not isal
    return lines


@pytest.mark.parametrize("n", [1, 1000, 119_555, 119_556, 2 * 119_555 + 30_000])
def test_line_count_is_n_rounded_up_to_a_whole_game(tmp_path, games, n):
    corpus = scale_corpus.tile_corpus(tmp_path, n, seed=3, lines_per_file=100_000)
    lines = read_lines(corpus.files)
    assert corpus.lines == len(lines) == expected_lines(games, n)
    assert len({line[:32] for line in lines}) == corpus.games
    assert corpus.text_bytes == sum(len(line) + 1 for line in lines)


def test_text_is_the_sample_with_fresh_unique_ids(tmp_path, sample_lines, games):
    n = 2 * len(sample_lines) + 50_000
    corpus = scale_corpus.tile_corpus(tmp_path, n, seed=7, lines_per_file=150_000)
    assert len(corpus.files) == 2  # one copy per file, the partial third copy joins the second file
    lines = read_lines(corpus.files)
    runs = [(gid, [line[32:] for line in group])
            for gid, group in ((k, list(g)) for k, g in itertools.groupby(lines, key=lambda l: l[:32]))]
    ids = [gid for gid, _ in runs]
    assert len(ids) == len(set(ids)) == corpus.games  # each game one run of lines, no id twice
    assert all(HEX_ID.fullmatch(gid) for gid in ids)
    assert not set(ids) & {gid for gid, _ in games}  # fresh: no id of the sample
    for k, (gid, body) in enumerate(runs):  # episode structure: the same game's lines, byte for byte
        assert body == games[k % len(games)][1], f"game {k} ({gid!r}) differs from sample game {k % len(games)}"
    assert lines[-1][32:] == games[len(runs) % len(games) - 1][1][-1]


def test_ids_are_deterministic_from_the_seed(tmp_path):
    corpora = []
    for folder, seed in (("a", 11), ("b", 11), ("c", 12)):
        (tmp_path / folder).mkdir()
        corpora.append(scale_corpus.tile_corpus(tmp_path / folder, 5000, seed=seed))
    a, b, c = (read_lines(corpus.files) for corpus in corpora)
    assert a == b
    assert {line[:32] for line in a}.isdisjoint({line[:32] for line in c})
    assert [line[32:] for line in a] == [line[32:] for line in c]


def test_output_parses_with_read_kanachan(tmp_path, games):
    corpus = scale_corpus.tile_corpus(tmp_path, 2 * 119_555 + 20_000, seed=0, lines_per_file=100_000)
    assert len(corpus.files) == 2
    frame = rewardlab.read_kanachan([str(p) for p in corpus.files], progress=False).frame
    assert frame.height == corpus.lines
    assert frame["game_id"].n_unique() == corpus.games > len(games)
    episodes = frame.select("game_id", "seat").unique().height
    assert frame["end_of_game"].sum() == episodes  # every episode whole: ends once
    reference = rewardlab.read_kanachan(str(scale_corpus.SAMPLE), progress=False).frame
    first_copy = frame.head(reference.height)
    for column in ("seat", "step", "round", "action", "end_of_round", "end_of_game", "results"):
        assert first_copy[column].equals(reference[column]), column


def test_sizes_as_typed():
    assert bench_scale.parse_size("2e7") == 20_000_000
    assert bench_scale.parse_size("80_000_000") == 80_000_000
    assert bench_scale.parse_size("quick") == bench_scale.QUICK_N
    with pytest.raises(ValueError, match="whole number"):
        bench_scale.parse_size("1.5")
    with pytest.raises(ValueError, match="whole number"):
        bench_scale.parse_size("0")


def test_plain_bench_run_leaves_scale_out():
    assert bench_scale.MANUAL is True
    source = (ROOT / "benchmarks" / "__main__.py").read_text()
    assert 'getattr(module, "MANUAL", False)' in source


def test_step_memory_covers_the_child_tree():
    # a child that allocates ~300 MB in a grandchild: the step's peak must see it, the main process not
    code = ("import subprocess, sys; subprocess.run([sys.executable, '-c', "
            "'b = bytearray(300 * 2**20); b[::4096] = b\"x\" * len(b[::4096])'], check=True)")
    step = run_step("tree", [sys.executable, "-c", code], rows=1)
    assert step.ok
    assert step.peak >= 300 * 2 ** 20
    assert step.main < 200 * 2 ** 20


def test_step_peak_is_not_the_benchmarks_own():
    # Linux carries a process's peak RSS into a forked child and across exec: a step started straight
    # from a big benchmark process would report the benchmark's peak (the shim starts it from zero)
    ballast = bytearray(400 * 2 ** 20)
    ballast[::4096] = b"x" * len(ballast[::4096])
    step = run_step("small", [sys.executable, "-c", "pass"], rows=1)
    assert step.ok
    assert step.peak < 200 * 2 ** 20
    del ballast


def test_step_cpu_counts_the_tree_and_the_main_process_apart():
    # the CLI process sleeps while a grandchild it waits for spins ~0.6 s of CPU: the tree's CPU sees the
    # spin, the CLI process's own does not
    spin = "import time\nt = time.process_time()\nwhile time.process_time() - t < 0.6: pass"
    code = f"import subprocess, sys, time; subprocess.run([sys.executable, '-c', {spin!r}], check=True)"
    step = run_step("tree cpu", [sys.executable, "-c", code], rows=10 ** 6)
    assert step.ok
    assert step.cpu >= 0.6 and 0 <= step.cpu_sys < step.cpu
    assert step.main_cpu < 0.3
    assert step.cpu_per_million == pytest.approx(step.cpu)
    assert 0 < step.busy <= os.cpu_count() + 0.5
    assert "CPU-s per 10^6 (" in step.cpu_text() and "% system)" in step.cpu_text()


def test_step_exit_status_is_the_commands():
    assert run_step("exit 3", [sys.executable, "-c", "raise SystemExit(3)"], rows=1).returncode == 3
    killed = run_step("killed", [sys.executable, "-c", "import os, signal; os.kill(os.getpid(), signal.SIGKILL)"],
                      rows=1)
    assert killed.returncode == 128 + 9 and not killed.ok


def test_every_benchmark_module_imports():
    # `make bench` imports them all; a renamed library function must not break one silently
    import importlib
    import pkgutil

    import benchmarks

    names = [m.name for m in pkgutil.iter_modules(benchmarks.__path__)]
    assert "bench_stats" in names and "bench_cores" in names
    for name in names:
        module = importlib.import_module(f"benchmarks.{name}")
        assert name.startswith(("bench_", "scale_", "_")) and (not name.startswith("bench_") or
                                                              callable(module.run)), name
