"""A resumed convert does not read again the input files whose parts are all finished.

The reference is an uninterrupted convert of the same files with the same
options and dataset id: the resumed dataset must equal it byte for byte
(manifest, every part, the skipped-lines side file).  A spy on the kanachan
stream records which files it opens, so the files converted whole by the
stopped run are shown not to be read again; ``PartsResult.files_read`` says
the same.  Step tables are one table over all their files (read in one
read): a resume reads them all again and still gives the same dataset.
"""

from __future__ import annotations

import gzip
import json
import os
import subprocess
import sys
import threading
import types

import numpy as np
import polars as pl
import pytest

from rewardlab.core.errors import DataFormatError, FileAccessError
from rewardlab.sources.datasets import MANIFEST_NAME, open_dataset
from rewardlab.sources.datasets import part_files as part_files_module
from rewardlab.sources.datasets import writer as writer_module
from rewardlab.sources.datasets.convert import FILES_JOURNAL, convert_to_parts
from rewardlab.sources.datasets.writer import PARTS_JOURNAL, PartWriter
from rewardlab.sources.kanachan import stream as stream_module
from rewardlab.sources.kanachan import stream_files as stream_files_module

PART_ROWS = 6_000
N_FILES = 4
FIXED_ID = "fedcba9876543210" * 2


@pytest.fixture(autouse=True)
def fixed_id(monkeypatch):
    monkeypatch.setattr(writer_module, "uuid", types.SimpleNamespace(uuid4=lambda: types.SimpleNamespace(hex=FIXED_ID)))


def _split(lines: list[bytes], n: int) -> list[list[bytes]]:
    """``lines`` cut between games into ``n`` runs."""
    ids = [x.split(b"\t", 1)[0] for x in lines]
    cuts = [0]
    for k in range(1, n):
        at = len(lines) * k // n
        while ids[at] == ids[at - 1]:
            at += 1
        cuts.append(at)
    cuts.append(len(lines))
    return [lines[a:b] for a, b in zip(cuts[:-1], cuts[1:])]


@pytest.fixture(scope="module")
def inputs(tmp_path_factory, sample_path):
    """The sample cut between games into 4 files; ``skip``: with junk lines in each; ``dup``: the last file
    also holds the first file's first game (a game in two files)."""
    with gzip.open(sample_path, "rb") as f:
        lines = f.read().split(b"\n")[:-1]
    folder = tmp_path_factory.mktemp("inputs")
    made = {"raise": [], "skip": [], "dup": []}
    pieces = _split(lines, N_FILES)
    first_game = [x for x in pieces[0] if x.split(b"\t", 1)[0] == pieces[0][0].split(b"\t", 1)[0]]
    for k, chunk in enumerate(pieces):
        junk = list(chunk)
        for at in (len(junk) // 4, 3 * len(junk) // 4):
            junk.insert(at, b"not a kanachan line %d" % at)
        dup = chunk + first_game if k == N_FILES - 1 else chunk
        for mode, body in (("raise", chunk), ("skip", junk), ("dup", dup)):
            path = folder / f"{mode}{k}.tsv"
            path.write_bytes(b"".join(x + b"\n" for x in body))
            made[mode].append(path)
    return made


def _convert(files, out, on_error, **kw):
    kw.setdefault("workers", 1)
    skipped = out.with_name(out.name + ".skipped.txt") if on_error == "skip" else None
    return convert_to_parts(files, out, part_rows=PART_ROWS, on_error=on_error, skipped_path=skipped,
                            progress=False, **kw)


@pytest.fixture(scope="module")
def references(tmp_path_factory, inputs):
    mp = pytest.MonkeyPatch()
    mp.setattr(writer_module, "uuid", types.SimpleNamespace(uuid4=lambda: types.SimpleNamespace(hex=FIXED_ID)))
    try:
        folder = tmp_path_factory.mktemp("references")
        return {mode: _convert(inputs[mode], folder / f"ref-{mode}", mode) for mode in ("raise", "skip")}
    finally:
        mp.undo()


def _file_rows(reference) -> list[int]:
    """Rows of the dataset from each input file (its source_file column), in order."""
    names = open_dataset(reference.out).load(columns=["source_file"])["source_file"].cast(pl.String)
    counts = names.value_counts(sort=False)
    by_name = dict(zip(counts["source_file"].to_list(), counts["count"].to_list()))
    return [by_name.get(str(p), 0) for p in sorted(by_name, key=lambda n: n)]


def _part_in_file(reference, file: int) -> int:
    """The index of the first part whose first row lies in input file ``file`` (by the files' row counts)."""
    ends = np.cumsum(_file_rows(reference))
    starts = np.concatenate(([0], np.cumsum([p.rows for p in reference.manifest.parts])))
    for index, start in enumerate(starts[:-1]):
        if ends[file - 1] <= start < ends[file]:
            return index
    raise AssertionError(f"no part starts in file {file}")


def _interrupt_after(monkeypatch, k: int):
    """Make the k+1-th part finished raise KeyboardInterrupt before it is journaled (as Ctrl-C would stop the
    run), whoever wrote it (a writer thread, or a process writing spooled parts)."""
    calls = {"n": 0}
    lock = threading.Lock()
    real = PartWriter.finish_part

    def finish_part(self, *args):
        with lock:
            calls["n"] += 1
            n = calls["n"]
        if n > k:
            raise KeyboardInterrupt
        return real(self, *args)

    monkeypatch.setattr(PartWriter, "finish_part", finish_part)
    return real


def _spy_files(monkeypatch) -> list:
    """Record every file the kanachan stream reads (in this process, or handed to its worker processes)."""
    opened: list = []
    real_file = stream_module.FileStream._file

    def _file(self, index, path, bar, offset):
        opened.append(path.name)
        return real_file(self, index, path, bar, offset)

    real_files = stream_files_module.stream_kanachan_files

    def stream_kanachan_files(files, **kw):
        opened.extend(p.name for p in files)
        return real_files(files, **kw)

    monkeypatch.setattr(stream_module.FileStream, "_file", _file)
    monkeypatch.setattr(stream_files_module, "stream_kanachan_files", stream_kanachan_files)
    return opened


def _assert_same_dataset(out, reference):
    ref = reference.out
    assert (out / MANIFEST_NAME).read_bytes() == (ref / MANIFEST_NAME).read_bytes()
    assert sorted(p.name for p in out.iterdir()) == sorted(p.name for p in ref.iterdir())
    for path in ref.iterdir():
        assert (out / path.name).read_bytes() == path.read_bytes(), path.name
    if reference.skipped_path is not None:
        assert out.with_name(out.name + ".skipped.txt").read_bytes() == reference.skipped_path.read_bytes()


@pytest.mark.parametrize("on_error,workers", [("raise", 1), ("skip", 1), ("skip", 8)])
def test_a_resumed_convert_reads_only_from_the_first_unfinished_file(tmp_path, inputs, references, monkeypatch,
                                                                   on_error, workers):
    reference = references[on_error]
    files = inputs[on_error]
    k = _part_in_file(reference, 2)  # the first part not finished starts in file 2: files 0 and 1 are done
    out, staging = tmp_path / "corpus", tmp_path / "corpus.partial"
    real = _interrupt_after(monkeypatch, k)
    with pytest.raises(KeyboardInterrupt):
        _convert(files, out, on_error, workers=workers)
    journaled = sorted(json.loads(x)["index"] for x in (staging / PARTS_JOURNAL).read_text().splitlines())
    assert journaled == list(range(k))
    done = [json.loads(x)["file"] for x in (staging / FILES_JOURNAL).read_text().splitlines()]
    assert done[:2] == [0, 1]
    kept = {p.name: p.stat() for p in staging.glob("part-*") if int(p.stem.split("-")[1]) in journaled}
    assert len(kept) == k  # a part written but not journaled when the run stopped is written again
    monkeypatch.setattr(PartWriter, "finish_part", real)
    opened = _spy_files(monkeypatch)
    result = _convert(files, out, on_error, workers=workers, resume=True)
    assert opened == [p.name for p in files[2:]]  # files 0 and 1 were not read again
    assert (result.files_read, result.files) == (N_FILES - 2, N_FILES)
    for name, before in kept.items():
        after = (out / name).stat()
        assert (after.st_ino, after.st_mtime_ns) == (before.st_ino, before.st_mtime_ns), name
    assert result.manifest == reference.manifest
    assert result.skipped.equals(reference.skipped)
    _assert_same_dataset(out, reference)
    open_dataset(out).verify()


def test_a_killed_convert_resumes_past_its_finished_files(tmp_path, inputs, references, capsys, monkeypatch):
    """A process killed by SIGKILL once the parts of files 0 to 2 are written, then ``convert --resume``."""
    from rewardlab.cli import main

    reference = references["skip"]
    k = _part_in_file(reference, 3)
    out = tmp_path / "corpus"
    script = f"""
import os, signal, sys, types, threading
from rewardlab.sources.datasets import writer
writer.uuid = types.SimpleNamespace(uuid4=lambda: types.SimpleNamespace(hex={FIXED_ID!r}))
real, n, lock = writer.PartWriter.write_part, [0], threading.Lock()
def write_part(self, index, frame):
    with lock:
        n[0] += 1
        if n[0] > {k}:
            os.kill(os.getpid(), signal.SIGKILL)
    return real(self, index, frame)
writer.PartWriter.write_part = write_part
from rewardlab.sources.datasets.convert import convert_to_parts
convert_to_parts(sys.argv[1:], {str(out)!r}, part_rows={PART_ROWS}, on_error="skip", progress=False, workers=1,
                 skipped_path={str(tmp_path / 'corpus.skipped.txt')!r})
"""
    proc = subprocess.run([sys.executable, "-c", script, *map(str, inputs["skip"])], capture_output=True,
                          timeout=300)
    assert proc.returncode == -9, proc.stderr.decode()[-2000:]
    opened = _spy_files(monkeypatch)
    monkeypatch.setattr("rewardlab.sources.datasets.convert.part_rows_for", lambda memory: PART_ROWS)
    assert main(["convert", *map(str, inputs["skip"]), "--out", str(out), "--on-error", "skip",
                 "--skipped", str(tmp_path / "corpus.skipped.txt"), "--workers", "1", "--resume"]) == 0
    printed = capsys.readouterr().out
    assert f"resumed: read 1 of {N_FILES} input files" in printed
    assert opened == [inputs["skip"][-1].name]
    _assert_same_dataset(out, reference)


def test_a_game_of_a_file_not_read_again_is_still_found_in_a_later_file(tmp_path, inputs, references, monkeypatch):
    """The stream is told the games of the files it does not read again: a game of file 0 that reappears in
    the last file is refused on resume as in an uninterrupted run (same message)."""
    with pytest.raises(DataFormatError, match="game_reappears") as uninterrupted:
        _convert(inputs["dup"], tmp_path / "whole", "raise")
    k = _part_in_file(references["raise"], 2)
    out = tmp_path / "corpus"
    real = _interrupt_after(monkeypatch, k)
    with pytest.raises(KeyboardInterrupt):
        _convert(inputs["dup"], out, "raise")
    monkeypatch.setattr(PartWriter, "finish_part", real)
    opened = _spy_files(monkeypatch)
    with pytest.raises(DataFormatError, match="game_reappears") as resumed:
        _convert(inputs["dup"], out, "raise", resume=True)
    assert opened == [p.name for p in inputs["dup"][2:]]
    assert str(resumed.value) == str(uninterrupted.value)


def test_a_changed_input_file_is_refused_by_name_even_with_its_size_and_time(tmp_path, inputs, references,
                                                                             monkeypatch):
    files = []
    for path in inputs["raise"]:
        files.append(tmp_path / path.name)
        files[-1].write_bytes(path.read_bytes())
    k = _part_in_file(references["raise"], 2)
    out = tmp_path / "corpus"
    real = _interrupt_after(monkeypatch, k)
    with pytest.raises(KeyboardInterrupt):
        _convert(files, out, "raise")
    monkeypatch.setattr(PartWriter, "finish_part", real)
    staging = tmp_path / "corpus.partial"
    left = sorted(p.name for p in staging.iterdir())
    body = bytearray(files[0].read_bytes())
    stat = files[0].stat()
    body[10] = ord("f") if body[10] != ord("f") else ord("e")  # a finished file, same size and time
    files[0].write_bytes(bytes(body))
    os.utime(files[0], ns=(stat.st_atime_ns, stat.st_mtime_ns))
    with pytest.raises(FileAccessError, match=r"raise0\.tsv changed since \(checksum [0-9a-f]{64} then"):
        _convert(files, out, "raise", resume=True)
    assert sorted(p.name for p in staging.iterdir()) == left  # refused before anything was touched


def test_a_resume_without_journaled_files_reads_every_file(tmp_path, inputs, references, monkeypatch):
    """A files journal lost or cut short: the run reads again from the first file, and still gives the dataset."""
    reference = references["raise"]
    k = _part_in_file(reference, 2)
    out, staging = tmp_path / "corpus", tmp_path / "corpus.partial"
    real = _interrupt_after(monkeypatch, k)
    with pytest.raises(KeyboardInterrupt):
        _convert(inputs["raise"], out, "raise")
    monkeypatch.setattr(PartWriter, "finish_part", real)
    lines = (staging / FILES_JOURNAL).read_text().splitlines()
    (staging / FILES_JOURNAL).write_text(lines[0][: len(lines[0]) // 2])  # cut short by a kill
    opened = _spy_files(monkeypatch)
    result = _convert(inputs["raise"], out, "raise", resume=True)
    assert opened == [p.name for p in inputs["raise"]] and result.files_read == N_FILES
    _assert_same_dataset(out, reference)


def _steps_files(folder) -> list:
    rng = np.random.default_rng(3)
    files, first = [], 0
    for k in range(3):
        rows = []
        for e in range(first, first + 40):
            n = int(rng.integers(5, 60))
            for t in range(n):
                last = t == n - 1
                rows.append((e, t, float(rng.normal()), last and e % 3 != 0, last and e % 3 == 0, float(rng.random())))
        first += 40
        frame = pl.DataFrame(rows, schema=["episode", "step", "reward", "terminated", "truncated", "x"], orient="row")
        files.append(folder / f"steps{k}.csv")
        frame.write_csv(files[-1])
    return files


def test_steps_input_resumes_to_the_uninterrupted_dataset(tmp_path, monkeypatch):
    """Step tables are one table over their files (read in one read): the resume reads every file again,
    writes only the parts not finished, and gives the uninterrupted dataset byte for byte."""
    files = _steps_files(tmp_path)
    reference = convert_to_parts(files, tmp_path / "ref", part_rows=300, progress=False)
    assert len(reference.manifest.parts) >= 8 and reference.files_read == 3
    out = tmp_path / "corpus"
    real = _interrupt_after(monkeypatch, 4)
    with pytest.raises(KeyboardInterrupt):
        convert_to_parts(files, out, part_rows=300, progress=False)
    monkeypatch.setattr(PartWriter, "finish_part", real)
    written = []
    real_file = part_files_module.write_part_file

    def spy(staging_, index, frame, *, dataset_id):
        written.append(index)
        return real_file(staging_, index, frame, dataset_id=dataset_id)

    monkeypatch.setattr(part_files_module, "write_part_file", spy)
    result = convert_to_parts(files, out, part_rows=300, progress=False, resume=True)
    assert sorted(written) == list(range(4, len(reference.manifest.parts)))
    assert (result.files_read, result.files) == (3, 3)
    _assert_same_dataset(out, reference)
    # a changed step table is refused by name before anything is read
    real = _interrupt_after(monkeypatch, 2)
    with pytest.raises(KeyboardInterrupt):
        convert_to_parts(files, tmp_path / "again", part_rows=300, progress=False)
    monkeypatch.setattr(PartWriter, "finish_part", real)
    stat = files[1].stat()
    text = files[1].read_text()
    files[1].write_text(text.replace("\n1,", "\n7,", 1) if "\n1," in text else text[:-2] + "9\n")
    os.utime(files[1], ns=(stat.st_atime_ns, stat.st_mtime_ns))
    with pytest.raises(FileAccessError, match=r"steps1\.csv changed since"):
        convert_to_parts(files, tmp_path / "again", part_rows=300, progress=False, resume=True)
