"""A convert killed or interrupted midway resumes from its finished parts (``resume=True`` / ``--resume``).

The reference is an uninterrupted convert of the same input with the same
options: the resumed dataset must equal it byte for byte (manifest, every
part, the skipped-lines side file).  Both runs get the same dataset id (the
writer's uuid is fixed), which is all that tells two such runs apart.
"""

from __future__ import annotations

import gzip
import json
import os
import subprocess
import sys
import threading
import types

import pytest

from rewardlab.core.errors import FileAccessError
from rewardlab.sources.datasets import MANIFEST_NAME, open_dataset
from rewardlab.sources.datasets import part_files as part_files_module
from rewardlab.sources.datasets import writer as writer_module
from rewardlab.sources.datasets.convert import convert_to_parts
from rewardlab.sources.datasets.writer import PARTS_JOURNAL, RUN_NAME, PartWriter

PART_ROWS = 12_000
FIXED_ID = "0123456789abcdef" * 2


@pytest.fixture(autouse=True)
def fixed_id(monkeypatch):
    monkeypatch.setattr(writer_module, "uuid", types.SimpleNamespace(uuid4=lambda: types.SimpleNamespace(hex=FIXED_ID)))


@pytest.fixture(scope="module")
def inputs(tmp_path_factory, sample_path):
    """The sample cut between games into 3 files; ``skip``: the same with junk lines to skip in every file."""
    with gzip.open(sample_path, "rb") as f:
        lines = f.read().split(b"\n")[:-1]
    folder = tmp_path_factory.mktemp("inputs")
    ids = [x.split(b"\t", 1)[0] for x in lines]
    cuts = [0]
    for k in (1, 2):
        at = len(lines) * k // 3
        while ids[at] == ids[at - 1]:
            at += 1
        cuts.append(at)
    cuts.append(len(lines))
    made = {"raise": [], "skip": []}
    for k, (a, b) in enumerate(zip(cuts[:-1], cuts[1:])):
        chunk = lines[a:b]
        junk = list(chunk)
        for at in (len(junk) // 5, len(junk) // 2, 4 * len(junk) // 5):
            junk.insert(at, b"not a kanachan line %d" % at)
        for mode, body in (("raise", chunk), ("skip", junk)):
            path = folder / f"{mode}{k}.tsv"
            path.write_bytes(b"".join(x + b"\n" for x in body))
            made[mode].append(path)
    return made


def _convert(files, out, on_error, **kw):
    skipped = out.with_name(out.name + ".skipped.txt") if on_error == "skip" else None
    return convert_to_parts(files, out, part_rows=PART_ROWS, on_error=on_error, skipped_path=skipped,
                            progress=False, workers=1, **kw)


@pytest.fixture(scope="module")
def references(tmp_path_factory, inputs):
    """Uninterrupted converts, in raise and skip modes."""
    mp = pytest.MonkeyPatch()
    mp.setattr(writer_module, "uuid", types.SimpleNamespace(uuid4=lambda: types.SimpleNamespace(hex=FIXED_ID)))
    try:
        folder = tmp_path_factory.mktemp("references")
        return {mode: _convert(inputs[mode], folder / f"ref-{mode}", mode) for mode in ("raise", "skip")}
    finally:
        mp.undo()


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


def _assert_same_dataset(out, reference):
    ref = reference.out
    assert (out / MANIFEST_NAME).read_bytes() == (ref / MANIFEST_NAME).read_bytes()
    assert sorted(p.name for p in out.iterdir()) == sorted(p.name for p in ref.iterdir())
    for path in ref.iterdir():
        assert (out / path.name).read_bytes() == path.read_bytes(), path.name
    open_dataset(out).verify()
    if reference.skipped_path is not None:
        mine = out.with_name(out.name + ".skipped.txt")
        assert mine.read_bytes() == reference.skipped_path.read_bytes()


@pytest.mark.parametrize("on_error", ["raise", "skip"])
def test_an_interrupted_convert_resumes_to_the_uninterrupted_dataset(tmp_path, inputs, references, on_error,
                                                                    monkeypatch):
    reference = references[on_error]
    n_parts = len(reference.manifest.parts)
    assert n_parts >= 8
    if on_error == "skip":
        assert reference.skipped.height >= 9  # three junk lines a file (and the games they cut)
    out = tmp_path / "corpus"
    staging = tmp_path / "corpus.partial"
    real = _interrupt_after(monkeypatch, 3)
    with pytest.raises(KeyboardInterrupt):
        _convert(inputs[on_error], out, on_error)
    assert not out.exists() and (staging / RUN_NAME).is_file()
    assert not (tmp_path / "corpus.skipped.txt").exists()
    journaled = [json.loads(x) for x in (staging / PARTS_JOURNAL).read_text().splitlines()]
    assert sorted(r["index"] for r in journaled) == [0, 1, 2]
    kept = {r["entry"]["name"]: (staging / r["entry"]["name"]).stat() for r in journaled}
    monkeypatch.setattr(PartWriter, "finish_part", real)

    with pytest.raises(FileAccessError, match="did not finish.*--resume"):
        _convert(inputs[on_error], out, on_error)  # without resume: refused, naming the way on

    written = []
    real_file = part_files_module.write_part_file

    def spy(staging_, index, frame, *, dataset_id):
        written.append(index)
        return real_file(staging_, index, frame, dataset_id=dataset_id)

    monkeypatch.setattr(part_files_module, "write_part_file", spy)
    result = _convert(inputs[on_error], out, on_error, resume=True)
    assert sorted(written) == list(range(3, n_parts))  # the finished parts were not written again
    for name, before in kept.items():
        after = (out / name).stat()
        assert (after.st_ino, after.st_mtime_ns) == (before.st_ino, before.st_mtime_ns), name
    assert not staging.exists()
    assert result.manifest == reference.manifest
    assert result.skipped.equals(reference.skipped)
    _assert_same_dataset(out, reference)


def test_a_killed_convert_resumes(tmp_path, inputs, references, capsys):
    """A process killed by SIGKILL once 4 parts are written (some maybe half-journaled), then ``--resume``."""
    reference = references["skip"]
    out = tmp_path / "corpus"
    staging = tmp_path / "corpus.partial"
    script = f"""
import os, signal, sys, types, threading
from rewardlab.sources.datasets import writer
writer.uuid = types.SimpleNamespace(uuid4=lambda: types.SimpleNamespace(hex={FIXED_ID!r}))
real, n, lock = writer.PartWriter.write_part, [0], threading.Lock()
def write_part(self, index, frame):
    with lock:
        n[0] += 1
        if n[0] > 4:
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
    assert not out.exists() and (staging / RUN_NAME).is_file()
    from rewardlab.cli import main

    assert main(["convert", *map(str, inputs["skip"]), "--out", str(out), "--on-error", "skip",
                 "--skipped", str(tmp_path / "corpus.skipped.txt"), "--workers", "1", "--resume"]) == 2
    assert "its part_rows differ" in capsys.readouterr().err
    # the command line sets its rows per part from --memory, not as that run did: refused, naming them
    result = _convert(inputs["skip"], out, "skip", resume=True)
    assert result.manifest == reference.manifest
    _assert_same_dataset(out, reference)


def test_the_parts_do_not_depend_on_the_input_chunks(tmp_path, inputs, references):
    """The cuts into parts are made on the rows alone: chunks of 1 MiB or of the whole input give the same parts,
    row for row (their Parquet bytes may differ with the chunks' layout, so a resumed run keeps the memory)."""
    small = _convert(inputs["skip"], tmp_path / "small", "skip", memory="1M")
    big = convert_to_parts(inputs["skip"], tmp_path / "big", part_rows=PART_ROWS, on_error="skip", progress=False,
                           workers=1, memory="4G")
    ref = open_dataset(references["skip"].out)
    for got in (open_dataset(small.out), open_dataset(big.out)):
        assert [(p.rows, p.episodes) for p in got.manifest.parts] == [(p.rows, p.episodes) for p in ref.manifest.parts]
        for index in range(len(ref)):
            assert got.read(index).equals(ref.read(index))


def _interrupted(tmp_path, files, monkeypatch, on_error="raise"):
    out = tmp_path / "corpus"
    real = _interrupt_after(monkeypatch, 2)
    with pytest.raises(KeyboardInterrupt):
        _convert(files, out, on_error)
    monkeypatch.setattr(PartWriter, "finish_part", real)
    return out


def test_a_changed_input_or_option_is_refused_by_name(tmp_path, inputs, references, monkeypatch):
    files = []
    for path in inputs["raise"]:
        files.append(tmp_path / path.name)
        files[-1].write_bytes(path.read_bytes())
    out = _interrupted(tmp_path, files, monkeypatch)
    staging = tmp_path / "corpus.partial"
    left = sorted(p.name for p in staging.iterdir())
    with pytest.raises(FileAccessError, match="options differ"):
        _convert(files, out, "skip", resume=True)
    with pytest.raises(FileAccessError, match="part_rows differ"):
        convert_to_parts(files, out, part_rows=PART_ROWS + 1, progress=False, resume=True)
    with pytest.raises(FileAccessError, match="memory differ"):
        _convert(files, out, "raise", resume=True, memory="64M")
    with pytest.raises(FileAccessError, match=r"3 input files now, 2 then|2 input files now, 3 then"):
        _convert(files[:2], out, "raise", resume=True)
    with pytest.raises(FileAccessError, match="input 1 is .*raise1.tsv, not .*raise0.tsv"):
        _convert(files[1:] + files[:1], out, "raise", resume=True)
    stat = files[1].stat()
    os.utime(files[1], ns=(stat.st_atime_ns, stat.st_mtime_ns + 10**9))
    with pytest.raises(FileAccessError, match=r"raise1.tsv changed since \(mtime_ns"):
        _convert(files, out, "raise", resume=True)
    os.utime(files[1], ns=(stat.st_atime_ns, stat.st_mtime_ns))
    assert sorted(p.name for p in staging.iterdir()) == left  # refusals leave the staging folder as it was
    result = _convert(files, out, "raise", resume=True)  # the same command still resumes
    # the copies' rows name their own files (source_file): the same cuts, not the same bytes
    assert [(p.rows, p.episodes) for p in result.manifest.parts] == [
        (p.rows, p.episodes) for p in references["raise"].manifest.parts]


def test_a_kept_part_that_is_not_read_again_is_refused_by_name(tmp_path, inputs, references, monkeypatch):
    """A part finished out of order (past the first part not finished) is read again and must hold the episodes
    recorded for it (a reader that changed, say): refused.  The parts before the first unfinished one are kept
    without being read again (the input files' identity vouches for them)."""
    out = _interrupted(tmp_path, inputs["raise"], monkeypatch)
    journal = tmp_path / "corpus.partial" / PARTS_JOURNAL
    records = [json.loads(x) for x in journal.read_text().splitlines()]
    assert [r["index"] for r in records] == [0, 1]
    records[0]["fingerprint"] = "0" * 64  # before the first unfinished part: not read again, kept
    journal.write_text("".join(json.dumps(r) + "\n" for r in records))
    result = _convert(inputs["raise"], out, "raise", resume=True)
    assert result.manifest == references["raise"].manifest
    (tmp_path / "b").mkdir()
    out2 = _interrupted(tmp_path / "b", inputs["raise"], monkeypatch)
    journal = tmp_path / "b" / "corpus.partial" / PARTS_JOURNAL
    records = [json.loads(x) for x in journal.read_text().splitlines()]
    (tmp_path / "b" / "corpus.partial" / records[0]["entry"]["name"]).unlink()  # part 0 is to be written again,
    records[1]["fingerprint"] = "0" * 64  # so part 1 is read again: other episodes than recorded
    journal.write_text("".join(json.dumps(r) + "\n" for r in records))
    with pytest.raises(FileAccessError, match="part 1, kept from the run .* holds other episodes"):
        _convert(inputs["raise"], out2, "raise", resume=True)


def test_a_damaged_or_unjournaled_part_is_written_again(tmp_path, inputs, references, monkeypatch):
    out = _interrupted(tmp_path, inputs["raise"], monkeypatch)
    staging = tmp_path / "corpus.partial"
    part = staging / "part-000000.parquet"
    part.write_bytes(part.read_bytes()[:-10])  # truncated after it was journaled
    journal = staging / PARTS_JOURNAL
    journal.write_text(journal.read_text() + '{"index": 2, "entry": {"na')  # a line cut short by a kill
    (staging / "part-000005.parquet").write_bytes(b"written, never journaled")
    result = _convert(inputs["raise"], out, "raise", resume=True)
    assert result.manifest == references["raise"].manifest
    _assert_same_dataset(out, references["raise"])


def test_resume_without_a_staging_folder_starts_afresh_and_a_file_output_refuses_it(tmp_path, inputs, references):
    from rewardlab.core.errors import ParameterError
    from rewardlab.dataset import convert

    result = _convert(inputs["raise"], tmp_path / "corpus", "raise", resume=True)
    assert result.manifest == references["raise"].manifest
    with pytest.raises(ParameterError, match="resume"):
        convert(inputs["raise"], tmp_path / "one.parquet", resume=True, progress=False)
