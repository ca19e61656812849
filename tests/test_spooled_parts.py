"""Parts cut from spooled chunks and written in worker processes (``PartWriter.add_spooled``), against the
frame path (``PartWriter.add``): the same parts, row for row, whatever the chunks; the chunk files removed as
their parts are written; a worker's error or death stops the run with nothing under the final name."""

from __future__ import annotations

import sys

import numpy as np
import polars as pl
import pytest

from rewardlab.core.errors import EngineError
from rewardlab.core.spec import FrameSpec, attach
from rewardlab.sources.datasets import PartedDataset
from rewardlab.sources.datasets.parts import episode_cuts
from rewardlab.sources.datasets.spooled_parts import plan_cuts
from rewardlab.sources.datasets.writer import SPOOL_NAME, PartWriter
from rewardlab.sources import spooled
from rewardlab.sources.spooled import SpooledChunk, read_spool, write_spool

SPEC = FrameSpec(name="toy", episode=("e",))


def _episodes(rng, n_episodes: int) -> pl.DataFrame:
    lengths = rng.integers(1, 40, n_episodes)
    e = np.repeat(np.arange(n_episodes), lengths)
    return pl.DataFrame({"e": e.astype(np.int32), "x": rng.normal(size=e.size), "s": [f"r{k}" for k in range(e.size)]})


def _chunks(frame: pl.DataFrame, folder, rng, *, file_offsets: bool) -> tuple[list[SpooledChunk], list[pl.DataFrame]]:
    """``frame`` cut between episodes into chunk files (each chunk's episodes renumbered from 0 when
    ``file_offsets``, the offset carried by the chunk, as a reader's worker numbers its file's games)."""
    ends = np.flatnonzero(np.r_[frame["e"].to_numpy()[1:] != frame["e"].to_numpy()[:-1], True]) + 1
    bounds = sorted(set(rng.choice(ends[:-1], size=min(len(ends) - 1, rng.integers(0, 12)), replace=False).tolist()))
    chunks, frames, start = [], [], 0
    for k, stop in enumerate([*bounds, frame.height]):
        piece = frame.slice(start, stop - start)
        first = int(piece["e"][0])
        stored = piece.with_columns(pl.col("e") - first) if file_offsets else piece
        path = folder / f"chunk-{k}.arrow"
        write_spool(stored, path)
        local = np.flatnonzero(np.r_[piece["e"].to_numpy()[1:] != piece["e"].to_numpy()[:-1], True]) + 1
        chunks.append(SpooledChunk(str(path), start=0, rows=piece.height, ends=local,
                                   offsets=(("e", first),) if file_offsets else ()))
        frames.append(piece)
        start = stop
    return chunks, frames


@pytest.mark.parametrize("start,rows", [(0, None), (0, 7), (5, 3), (6, 12), (13, 1), (17, None), (0, 20), (20, 0)])
def test_a_spool_file_gives_back_any_rows_equal_and_in_one_chunk(tmp_path, monkeypatch, start, rows):
    monkeypatch.setattr(spooled, "SPOOL_BATCH_ROWS", 3)  # many record batches: slices start and end inside them
    ids = pl.Series("id", [f"g{k % 4}" for k in range(20)], dtype=pl.Categorical)
    frame = pl.concat([  # three chunks, each with its own categories
        pl.DataFrame({"id": ids.slice(a, b - a), "x": np.arange(a, b, dtype=np.uint16),
                      "v": pl.Series([[k, -k] for k in range(a, b)], dtype=pl.Array(pl.Int16, 2))})
        for a, b in ((0, 6), (6, 13), (13, 20))], rechunk=False)
    path = tmp_path / "c.arrow"
    write_spool(frame, path)
    got = read_spool(path, start=start, rows=rows)
    assert got.equals(frame.slice(start, rows)) and got.schema == frame.schema
    assert got.n_chunks() == 1


@pytest.mark.parametrize("values", [["b", None, "b", "c"], [], ["x"] * 5])
def test_a_spool_file_keeps_categorical_columns_with_nulls_or_no_rows(tmp_path, values):
    frame = pl.DataFrame({"id": pl.Series(values, dtype=pl.Categorical), "x": np.arange(len(values))})
    write_spool(frame, tmp_path / "c.arrow")
    got = read_spool(tmp_path / "c.arrow")
    assert got.equals(frame) and got.schema == frame.schema


@pytest.mark.parametrize("seed", range(6))
def test_plan_cuts_are_the_frame_paths_cuts(seed):
    rng = np.random.default_rng(seed)
    frame = _episodes(rng, int(rng.integers(1, 80)))
    rows = int(rng.integers(1, 200))
    sizes = np.diff(np.r_[0, np.sort(rng.choice(np.arange(1, frame.height), size=min(3, frame.height - 1),
                                                   replace=False)), frame.height]) if frame.height > 1 else [1]
    ends_all = np.flatnonzero(np.r_[frame["e"].to_numpy()[1:] != frame["e"].to_numpy()[:-1], True]) + 1
    chunks, start = [], 0
    for size in sizes:  # chunk bounds anywhere, only to test the arithmetic of offsets (ends within each)
        stop = start + int(size)
        local = ends_all[(ends_all > start) & (ends_all <= stop)] - start
        if len(local) and local[-1] == stop - start:
            chunks.append(SpooledChunk("c", start=0, rows=stop - start, ends=local))
            start = stop
    if start < frame.height:
        chunks.append(SpooledChunk("c", start=0, rows=frame.height - start, ends=ends_all[ends_all > start] - start))
    assert plan_cuts(chunks, rows, final=True) == episode_cuts(frame, SPEC, rows)


@pytest.mark.parametrize("seed,file_offsets", [(0, False), (1, True), (2, True), (3, False)])
def test_spooled_parts_equal_the_frame_paths_parts(tmp_path, seed, file_offsets):
    rng = np.random.default_rng(seed)
    frame = attach(_episodes(rng, 300), SPEC)
    part_rows = int(rng.integers(50, 900))
    with PartWriter(tmp_path / "frames", spec=SPEC, part_rows=part_rows) as w:
        for piece in _chunks(frame, tmp_path, rng, file_offsets=False)[1]:
            w.add(attach(piece, SPEC))
    with PartWriter(tmp_path / "spooled", spec=SPEC, part_rows=part_rows, processes=2) as w:
        chunks, _ = _chunks(frame, w.handoff_folder(), rng, file_offsets=file_offsets)
        for chunk in chunks:
            w.add_spooled(chunk)
        w.flush()
        w.wait()
        assert list(w.handoff_folder().iterdir()) == []  # each chunk's file went once its parts were written
    a, b = PartedDataset(tmp_path / "frames"), PartedDataset(tmp_path / "spooled")
    assert [(p.rows, p.episodes) for p in a.manifest.parts] == [(p.rows, p.episodes) for p in b.manifest.parts]
    assert len(b.manifest.parts) >= 2
    for i in range(len(a.manifest.parts)):
        assert a.read(i).equals(b.read(i)), i
    assert b.load().equals(frame)
    assert not list((tmp_path / "spooled").glob(f"{SPOOL_NAME}*"))
    b.verify()


def test_a_sliced_chunk_keeps_its_offsets_and_ends(tmp_path):
    path = tmp_path / "c.arrow"
    pl.DataFrame({"e": [0, 0, 1, 1, 1, 2]}).write_ipc(path)
    chunk = SpooledChunk(str(path), start=0, rows=6, ends=np.array([2, 5, 6]), offsets=(("e", 10),))
    tail = chunk.slice(2)
    assert (tail.start, tail.rows, tail.ends.tolist(), tail.offsets) == (2, 4, [3, 4], (("e", 10),))


def test_a_part_process_that_cannot_read_its_chunk_stops_the_run_with_its_error(tmp_path):
    rng = np.random.default_rng(5)
    frame = attach(_episodes(rng, 60), SPEC)
    out = tmp_path / "out"
    with pytest.raises(Exception) as info:
        with PartWriter(out, spec=SPEC, part_rows=100, processes=1) as w:
            chunks, _ = _chunks(frame, w.handoff_folder(), rng, file_offsets=False)
            (tmp_path / "gone").mkdir()
            chunks[0] = SpooledChunk(str(tmp_path / "gone" / "missing.arrow"), start=0, rows=chunks[0].rows,
                                     ends=chunks[0].ends)
            for chunk in chunks:
                w.add_spooled(chunk)
    assert "missing.arrow" in str(info.value)
    assert not out.exists() and not (tmp_path / "out.partial").exists()


def test_a_part_process_that_dies_is_an_engine_error_naming_the_part(tmp_path, monkeypatch):
    rng = np.random.default_rng(6)
    frame = attach(_episodes(rng, 60), SPEC)
    out = tmp_path / "out"
    monkeypatch.setattr(sys, "executable", "/bin/false")  # the worker exits before it reads a task
    with pytest.raises(EngineError, match=r"the process writing part 0 stopped with exit status 1.*--workers 1"):
        with PartWriter(out, spec=SPEC, part_rows=100, processes=2) as w:
            for chunk in _chunks(frame, w.handoff_folder(), rng, file_offsets=False)[0]:
                w.add_spooled(chunk)
    assert not out.exists() and not (tmp_path / "out.partial").exists()


def test_a_writer_takes_frames_or_chunks_not_both(tmp_path):
    rng = np.random.default_rng(7)
    frame = attach(_episodes(rng, 5), SPEC)
    with pytest.raises(Exception, match="cannot follow rows given to add"):
        with PartWriter(tmp_path / "out", spec=SPEC, part_rows=10_000) as w:
            w.add(frame)
            w.add_spooled(_chunks(frame, w.handoff_folder(), rng, file_offsets=False)[0][0])


def test_each_writer_has_its_own_spool_and_a_resumed_run_removes_the_old_one(tmp_path):
    """A reader process left running by a killed run keeps writing into that run's spool, never the resumed
    run's: each writer's spool has its own name, and resuming removes the stopped run's."""
    run = {"inputs": ["x"]}
    first = PartWriter(tmp_path / "out", spec=SPEC, part_rows=10, run=run, journal=True)
    old = first.handoff_folder()
    assert old == first.handoff_folder() and old.parent == first.staging and old.name.startswith(SPOOL_NAME + "-")
    (old / "000000-000000.arrow").write_bytes(b"left by the stopped run")
    first.abort(keep=True)  # as Ctrl-C leaves it
    again = PartWriter(tmp_path / "out", spec=SPEC, part_rows=10, run=run, resume=True, journal=True)
    assert not old.exists()
    new = again.handoff_folder()
    assert new != old and list(new.iterdir()) == []
    again.abort()


def test_a_part_process_answers_an_exception_that_does_not_pickle_in_words(monkeypatch):
    """The worker's protocol (``python -m rewardlab.sources.datasets.spooled_parts``), run here on pipes in
    memory: an exception that cannot cross as a pickle comes back as an EngineError naming the part and the
    exception; the worker ends when its input does."""
    import io
    import pickle
    import struct

    from rewardlab.sources.datasets import spooled_parts

    class Unpicklable(Exception):
        def __init__(self):
            super().__init__("disk on fire")
            self.hook = lambda: None  # a lambda does not pickle

    def fails(*task):
        raise Unpicklable()

    monkeypatch.setattr(spooled_parts, "write_spooled_part", fails)
    task = pickle.dumps(("staging", 7, [], {}, "id", None))
    stdin = io.TextIOWrapper(io.BytesIO(struct.pack("<Q", len(task)) + task))
    out = io.BytesIO()
    stdout = io.TextIOWrapper(out)  # held here: worker_main sets sys.stdout aside, and a dropped wrapper closes out
    monkeypatch.setattr(sys, "stdin", stdin)
    monkeypatch.setattr(sys, "stdout", stdout)
    assert spooled_parts.worker_main() == 0
    data = out.getvalue()
    ok, error = pickle.loads(data[8:8 + struct.unpack("<Q", data[:8])[0]])
    assert not ok and isinstance(error, EngineError)
    assert "writing part 7 failed" in str(error) and "disk on fire" in str(error)
