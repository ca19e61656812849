"""stream_kanachan against read_kanachan: the chunks' frames concatenated equal the whole load bit for bit,
their skipped tables its skipped table, and raise mode raises the same error, whatever the chunk size."""

from __future__ import annotations

import gzip
import random
import warnings

import polars as pl
import pytest

from rewardlab.core.errors import DataFormatError, ParameterError
from rewardlab.sources.kanachan.gameids import GameIdSet
from rewardlab.sources.kanachan.reader import read_kanachan
from rewardlab.sources.kanachan.stream import stream_kanachan
from rewardlab.sources.registry import get_source
from rewardlab.sources.results import SKIPPED_LINES_SCHEMA


def _reference(paths, on_error):
    """read_kanachan's (frame, skipped) or its error as (file, line, column, rule, message)."""
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            result = read_kanachan(paths, on_error=on_error, progress=False)
    except DataFormatError as exc:
        return None, None, _where(exc)
    return result.frame, result.skipped, None


def _where(exc: DataFormatError):
    return str(exc.path), exc.line, exc.column, exc.rule, str(exc)


def _streamed(paths, on_error, chunk_bytes, workers=None, processes=1):
    chunks = []
    try:
        for chunk in stream_kanachan(paths, on_error=on_error, chunk_bytes=chunk_bytes, progress=False,
                                     workers=workers, processes=processes):
            chunks.append(chunk)
    except DataFormatError as exc:
        return chunks, _where(exc)
    return chunks, None


def _assert_same(paths, on_error, chunk_bytes, workers=None, processes=1):
    frame, skipped, error = _reference(paths, on_error)
    chunks, stream_error = _streamed(paths, on_error, chunk_bytes, workers, processes)
    assert stream_error == error
    if error is not None:
        return chunks
    assert chunks, "a file with lines gives at least one chunk"
    got = pl.concat([c.frame for c in chunks])
    assert got.schema == frame.schema
    assert got.equals(frame), (chunk_bytes, on_error)
    assert got["game_id"].cast(pl.String).equals(frame["game_id"].cast(pl.String))
    got_skipped = pl.concat([c.skipped for c in chunks]) if chunks else pl.DataFrame(schema=SKIPPED_LINES_SCHEMA)
    assert got_skipped.equals(skipped)
    for c in chunks:  # whole episodes: each (game, seat) ends with its end-of-game row in the chunk
        ends = c.frame.group_by("game", "seat").agg(last=pl.col("end_of_game").last(),
                                                    count=pl.col("end_of_game").sum())
        assert ends["last"].all() and (ends["count"] == 1).all()
    episodes = got.select("game", "seat").unique().height
    assert sum(c.frame.select("game", "seat").unique().height for c in chunks) == episodes
    return chunks


@pytest.fixture(scope="module")
def sample_lines(sample_path) -> list[bytes]:
    with gzip.open(sample_path, "rb") as f:
        return f.read().split(b"\n")[:-1]


def _head(lines: list[bytes], games: int) -> list[bytes]:
    out, seen = [], []
    for line in lines:
        g = line.split(b"\t", 1)[0]
        if not seen or seen[-1] != g:
            seen.append(g)
        if len(seen) > games:
            break
        out.append(line)
    return out


def _write(path, lines, end=b"\n"):
    path.write_bytes(b"".join(x + end for x in lines))
    return path


@pytest.mark.parametrize("chunk_bytes", [1, 300_000, 4 << 20, 1 << 40])
def test_the_sample_streams_to_the_whole_frame(sample_path, chunk_bytes):
    chunks = _assert_same(sample_path, "raise", chunk_bytes)
    assert len(chunks) > 1 or chunk_bytes >= 4 << 20
    from rewardlab.core.spec import attached

    assert all(attached(c.frame).name == "kanachan" for c in chunks)


@pytest.mark.parametrize("chunk_bytes", [1, 200_000, 1 << 40])
def test_the_sample_in_skip_mode_and_one_worker(sample_path, chunk_bytes):
    _assert_same(sample_path, "skip", chunk_bytes, workers=1)


def _corrupt(lines: list[bytes], rng: random.Random) -> list[bytes]:
    """1-4 corruptions of the kinds the skip tests use: junk, another game's id, a cut or swapped line, ..."""
    lines = list(lines)
    ids = sorted({x.split(b"\t", 1)[0] for x in lines})
    for _ in range(rng.randint(1, 4)):
        r = rng.randrange(len(lines))
        cols = lines[r].split(b"\t")
        how = rng.choice(["junk", "game_id", "to8", "truncate", "utf8", "empty", "digit", "copy_prev", "swap",
                          "drop"])
        if how == "junk":
            c = rng.randrange(len(cols))
            cols[c] = cols[c][:3] + b"x" + cols[c][3:]
        elif how == "game_id":
            cols[0] = rng.choice(ids + [b"f" * 32, b"A" * 32])
        elif how == "to8" and len(cols) == 12:
            cols = cols[:6] + cols[10:]
        elif how == "truncate":
            cols = [lines[r][:rng.randrange(len(lines[r]) + 1)]]
        elif how == "utf8":
            k = rng.randrange(len(lines[r]) + 1)
            cols = [lines[r][:k] + b"\xff" + lines[r][k:]]
        elif how == "empty":
            cols = [b""]
        elif how == "digit" and len(cols) > 2:
            c = rng.choice([1, 2, 3, 4])
            cols[c] = cols[c].replace(b"1", b"2", 1)
        elif how == "copy_prev" and r > 0:
            cols = lines[r - 1].split(b"\t")
        elif how == "swap" and r + 1 < len(lines):
            cols = lines[r + 1].split(b"\t")
            lines[r + 1] = lines[r]
        elif how == "drop":
            del lines[r]
            continue
        lines[r] = b"\t".join(cols)
    return lines


@pytest.mark.parametrize("seed", range(24))
def test_corrupted_files_stream_as_they_load(tmp_path, sample_lines, seed):
    rng = random.Random(seed)
    lines = _corrupt(_head(sample_lines, 5), rng)
    path = _write(tmp_path / "x.tsv", lines, b"\r\n" if seed % 5 == 4 else b"\n")
    for chunk_bytes in (1, rng.randrange(2_000, 60_000), 1 << 30):
        for on_error in ("raise", "skip"):
            _assert_same(path, on_error, chunk_bytes)


def test_a_game_that_reappears_far_away(tmp_path, sample_lines):
    head = _head(sample_lines, 6)
    games = [[x for x in head if x.startswith(g)] for g in dict.fromkeys(x.split(b"\t", 1)[0] for x in head)]
    # game 1 again at the end (an exact copy of its lines) and one seat of game 2 moved after game 4
    seat_lines = games[2][:5]
    lines = games[0] + games[1] + games[2][5:] + games[3] + games[4] + seat_lines + games[5] + games[1]
    path = _write(tmp_path / "x.tsv", lines)
    for chunk_bytes in (1, 20_000, 1 << 30):
        _assert_same(path, "raise", chunk_bytes)
        _assert_same(path, "skip", chunk_bytes)


def test_errors_across_files_come_as_from_read_kanachan(tmp_path, sample_lines):
    head = _head(sample_lines, 4)
    first_game = [x for x in head if x.startswith(head[0][:32])]
    a = _write(tmp_path / "a.tsv", head)
    b = _write(tmp_path / "b.tsv", first_game)  # a game of a.tsv again
    broken = list(head[len(first_game):])
    broken[3] = b"junk"
    c = _write(tmp_path / "c.tsv", broken)
    empty = tmp_path / "empty.tsv"
    empty.write_bytes(b"")
    for chunk_bytes in (1, 50_000, 1 << 30):
        for on_error in ("raise", "skip"):
            _assert_same([a, b], on_error, chunk_bytes)  # game_reappears in b.tsv
            _assert_same([a, b, c], on_error, chunk_bytes)  # c.tsv's own error first in raise mode
            _assert_same([a, empty], on_error, chunk_bytes)
            _assert_same([b, c], on_error, chunk_bytes)


def test_compressed_inputs_stream_alike(tmp_path, sample_lines):
    import bz2

    text = b"".join(x + b"\n" for x in _head(sample_lines, 8))
    gz, bz = tmp_path / "x.tsv.gz", tmp_path / "x.tsv.bz2"
    gz.write_bytes(gzip.compress(text))
    bz.write_bytes(bz2.compress(text))
    for path in (gz, bz):
        _assert_same(path, "raise", 30_000)
    gz.write_bytes(gzip.compress(text)[:-100])  # truncated
    _assert_same(gz, "raise", 30_000)
    _assert_same(gz, "skip", 30_000)


def test_the_source_registers_its_stream_and_options_are_checked(sample_path):
    assert get_source("kanachan").stream is not None
    with pytest.raises(ParameterError, match="chunk_bytes"):
        next(stream_kanachan(sample_path, chunk_bytes=0))
    with pytest.raises(ParameterError, match="on_error"):
        next(stream_kanachan(sample_path, on_error="ignore"))
    with pytest.raises(ParameterError, match="workers"):
        next(stream_kanachan(sample_path, workers=0))


def test_game_id_set_against_a_python_set():
    rng = random.Random(0)
    ids = ["".join(rng.choice("0123456789abcdefABCDEF") for _ in range(32)) for _ in range(3000)]
    ids += [s.lower() for s in ids[:50]] + ["not an id", ""]
    seen, reference = GameIdSet(), set()
    for k in range(0, len(ids), 97):
        part = ids[k:k + 97]
        queries = part + [s.upper() for s in part[:5]]
        assert GameIdSet.contains(seen, queries).tolist() == [q in reference for q in queries]
        seen.add(part)
        reference.update(part)
    assert len(seen) == len(reference)


# --- several files at once, one worker process each (stream_files) --------------------------------------------


def _split_files(tmp_path, lines, parts):
    """``lines`` cut between games into ``parts`` files."""
    ids = [x.split(b"\t", 1)[0] for x in lines]
    cuts = [0]
    for k in range(1, parts):
        at = len(lines) * k // parts
        while 0 < at < len(lines) and ids[at] == ids[at - 1]:
            at += 1
        cuts.append(at)
    cuts.append(len(lines))
    return [_write(tmp_path / f"part{k}.tsv", lines[a:b]) for k, (a, b) in enumerate(zip(cuts[:-1], cuts[1:]))]


@pytest.mark.parametrize("on_error", ["raise", "skip"])
def test_several_files_in_worker_processes_stream_to_the_whole_frame(tmp_path, sample_lines, on_error):
    lines = _head(sample_lines, 60)
    if on_error == "skip":  # some lines to skip in every file
        lines = _corrupt(lines, random.Random(3))
    files = _split_files(tmp_path, lines, 4)
    for chunk_bytes in (50_000, 1 << 30):
        chunks = _assert_same(files, on_error, chunk_bytes, workers=2, processes=3)
        assert len(chunks) >= 4  # at least a chunk a file: every worker's chunks came back


def test_errors_across_files_in_worker_processes_come_as_from_read_kanachan(tmp_path, sample_lines):
    head = _head(sample_lines, 4)
    first_game = [x for x in head if x.startswith(head[0][:32])]
    a = _write(tmp_path / "a.tsv", head)
    b = _write(tmp_path / "b.tsv", first_game)  # a game of a.tsv again
    broken = list(head[len(first_game):])
    broken[3] = b"junk"
    c = _write(tmp_path / "c.tsv", broken)
    for on_error in ("raise", "skip"):
        _assert_same([a, b], on_error, 1 << 30, processes=2)  # game_reappears in b.tsv
        _assert_same([a, b, c], on_error, 1 << 30, processes=2)  # c.tsv's own error first in raise mode
        _assert_same([b, c], on_error, 1 << 30, processes=2)


def test_stopping_a_multi_file_stream_stops_its_workers_and_removes_the_spool(tmp_path, sample_lines):
    files = _split_files(tmp_path, _head(sample_lines, 40), 3)
    spool_in = tmp_path / "spool"
    spool_in.mkdir()
    chunks = stream_kanachan(files, chunk_bytes=20_000, progress=False, workers=2, processes=2, spool_in=spool_in)
    first = next(chunks)
    assert first.frame.height and list(spool_in.iterdir())  # the spool folder is there while it runs
    chunks.close()
    assert list(spool_in.iterdir()) == []


def test_convert_with_several_files_and_workers_equals_the_load(tmp_path, sample_lines, monkeypatch):
    import rewardlab
    from rewardlab.sources.datasets import PartedDataset
    from rewardlab.sources.datasets.convert import convert_to_parts
    from rewardlab.sources.datasets.writer import PartWriter

    files = _split_files(tmp_path, _head(sample_lines, 50), 3)
    one = convert_to_parts(files, tmp_path / "one", workers=1, part_rows=700, progress=False)

    def write_part(self, index, frame):
        raise AssertionError("with worker processes, no part is written from a frame in this process")

    monkeypatch.setattr(PartWriter, "write_part", write_part)
    many = convert_to_parts(files, tmp_path / "corpus", workers=8, part_rows=700, progress=False)  # 2 files at once
    assert PartedDataset(tmp_path / "corpus").load().equals(rewardlab.load(files))
    assert len(many.manifest.parts) >= 3
    assert [(p.rows, p.episodes, p.name) for p in many.manifest.parts] == [
        (p.rows, p.episodes, p.name) for p in one.manifest.parts]
    assert sorted(p.name for p in (tmp_path / "corpus").iterdir()) == sorted(p.name for p in one.out.iterdir())


def test_a_worker_process_that_dies_is_an_error_naming_the_file(tmp_path, sample_lines, monkeypatch):
    import sys

    files = _split_files(tmp_path, _head(sample_lines, 20), 2)
    monkeypatch.setattr(sys, "executable", "/bin/false")  # the worker exits before it reads anything
    with pytest.raises(DataFormatError, match=r"part0\.tsv.*the worker process reading it stopped with exit "
                                              r"status 1.*--workers 1") as info:
        list(stream_kanachan(files, chunk_bytes=1 << 20, progress=False, workers=2, processes=2,
                             spool_in=tmp_path))
    assert info.value.rule == "reader_failed"
    assert not list(tmp_path.glob("rewardlab-spool-*"))
