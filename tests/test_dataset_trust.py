"""Damaged and doubtful dataset files (issue 10): each a DataFormatError naming the file, eager and lazy.

Empty or truncated files, shards that are not datasets, nulls inside array
columns, the same episodes in two files of a folder, and a flipped bit in a
checksummed Parquet page.
"""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import polars as pl
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

import rewardlab
from rewardlab.sources.kanachan import schema as S
from rewardlab.sources import storage
from rewardlab.sources.storage import verification
from rewardlab.cli import main
from rewardlab.dataset import write_dataset
from rewardlab.core.errors import DataFormatError

LOADERS = {"load": rewardlab.load_kanachan, "scan": lambda p: rewardlab.scan_kanachan(p).collect()}


def _write(frame, path):
    write_dataset(frame, path, kind=storage.DATASET_SUFFIXES[path.suffix])
    return path


@pytest.fixture(autouse=True)
def _fresh_verification_cache():
    storage.clear_verified_cache()  # each test's files are new; do not let a verified identity linger
    yield
    storage.clear_verified_cache()


# ----------------------------------------------------------------------------
# Empty, truncated, not a dataset
# ----------------------------------------------------------------------------


@pytest.mark.parametrize("how", list(LOADERS))
def test_an_empty_arrow_file_is_named(tmp_path, how):
    path = tmp_path / "d.arrow"
    path.write_bytes(b"")
    with pytest.raises(DataFormatError, match=r"d\.arrow: cannot be read as an Arrow IPC file \(.*\) "
                       r"\[rule: not_arrow\] The file is empty \(a write that did not finish\?\)"):
        LOADERS[how](path)


@pytest.mark.parametrize("suffix", [".arrow", ".parquet"])
@pytest.mark.parametrize("how", list(LOADERS))
def test_a_truncated_dataset_file_is_named(tmp_path, small_frame, suffix, how):
    whole = _write(small_frame, tmp_path / f"whole{suffix}")
    path = tmp_path / f"cut{suffix}"
    path.write_bytes(whole.read_bytes()[: whole.stat().st_size * 2 // 3])
    rule = "not_arrow" if suffix == ".arrow" else "not_parquet"
    with pytest.raises(DataFormatError, match=rf"cut\{suffix}: cannot be read as .*\[rule: {rule}\] Its bytes "
                       r"are not what was written: convert the source files again"):
        LOADERS[how](path)


def test_an_empty_parquet_file_says_it_is_empty(tmp_path):
    path = tmp_path / "d.parquet"
    path.write_bytes(b"")
    with pytest.raises(DataFormatError, match=r"d\.parquet: cannot be read as Parquet .*\[rule: not_parquet\] "
                       r"The file is empty"):
        rewardlab.load_kanachan(path)


@pytest.mark.parametrize("how", list(LOADERS))
def test_a_shard_that_is_not_an_arrow_dataset_is_named(tmp_path, small_frame, how):
    _write(small_frame, tmp_path / "a.arrow")
    (tmp_path / "b.arrow").write_text("game_id\tseat\nnot arrow at all\n")
    with pytest.raises(DataFormatError, match=r"b\.arrow: cannot be read as an Arrow IPC file .*\[rule: not_arrow\]"):
        LOADERS[how](tmp_path)


def test_a_folder_named_like_a_shard_is_named(tmp_path, small_frame):
    _write(small_frame, tmp_path / "a.parquet")
    (tmp_path / "b.parquet").mkdir()
    with pytest.raises(DataFormatError, match=r"b\.parquet: is a folder, not a file \[rule: not_a_file\]"):
        rewardlab.load_kanachan(tmp_path)


# ----------------------------------------------------------------------------
# Nulls inside array columns
# ----------------------------------------------------------------------------


def _with_a_null_element(frame: pl.DataFrame, column: str) -> pl.DataFrame:
    """``frame`` with one element inside row 1's array of ``column`` set to null (the row stays non-null)."""
    width = frame.schema[column].size
    rows = frame[column].to_list()
    rows[1] = [None] + rows[1][1:]
    return frame.with_columns(pl.Series(column, rows, dtype=pl.Array(frame.schema[column].inner, width)))


@pytest.mark.parametrize("column", [S.SPARSE, S.PROGRESSION, S.RESULTS])
@pytest.mark.parametrize("writer", ["plain-parquet", "arrow"])
@pytest.mark.parametrize("how", list(LOADERS))
def test_a_null_inside_an_array_column_is_refused(tmp_path, small_frame, column, writer, how):
    holes = _with_a_null_element(small_frame, column)
    assert holes[column].null_count() == 0  # the row is there; one number in it is missing
    path = tmp_path / ("d.parquet" if writer == "plain-parquet" else "d.arrow")
    holes.write_parquet(path) if writer == "plain-parquet" else holes.write_ipc(path)
    with pytest.raises(DataFormatError, match=rf"d\.(parquet|arrow): column '{column}' has 1 null values "
                       r"inside its arrays \[rule: null_values\]"):
        LOADERS[how](path)


@pytest.mark.parametrize("writer", ["plain-parquet", "arrow"])
def test_a_null_array_row_is_refused_in_plain_files(tmp_path, small_frame, writer):
    holes = small_frame.with_columns(
        pl.when(pl.int_range(pl.len()) == 2).then(None).otherwise(pl.col(S.RESULTS)).alias(S.RESULTS))
    path = tmp_path / ("d.parquet" if writer == "plain-parquet" else "d.arrow")
    holes.write_parquet(path) if writer == "plain-parquet" else holes.write_ipc(path)
    for load in LOADERS.values():
        with pytest.raises(DataFormatError, match=r"column 'results' has 1 null values \[rule: null_values\]"):
            load(path)


def test_a_null_binary_row_is_refused_by_the_lazy_scan(tmp_path, small_frame):
    path = _write(small_frame, tmp_path / "d.parquet")
    table = pq.read_table(path)
    k = table.column_names.index(S.PROGRESSION)
    column = table[S.PROGRESSION].combine_chunks()
    holes = pa.array(column.to_pylist()[:3] + [None] + column.to_pylist()[4:], type=column.type)
    pq.write_table(table.set_column(k, S.PROGRESSION, holes).replace_schema_metadata(table.schema.metadata), path)
    with pytest.raises(DataFormatError, match=r"d\.parquet: column 'progression' has 1 null values "
                       r"\[rule: null_values\]"):
        rewardlab.scan_kanachan(path).collect()


# ----------------------------------------------------------------------------
# The same data twice in one folder
# ----------------------------------------------------------------------------


@pytest.mark.parametrize("suffix", [".parquet", ".arrow"])
@pytest.mark.parametrize("how", list(LOADERS))
def test_a_copy_of_a_shard_in_the_folder_is_refused(tmp_path, small_frame, suffix, how):
    _write(small_frame, tmp_path / f"x{suffix}")
    shutil.copyfile(tmp_path / f"x{suffix}", tmp_path / f"y{suffix}")
    episodes = small_frame.select(S.GAME_ID, S.SEAT).unique().height
    first = small_frame[S.GAME_ID][0]
    with pytest.raises(DataFormatError, match=rf"y\{suffix}: the episode of game {first}, seat 0 is also in "
                       rf".*x\{suffix} \({episodes} of this file's {episodes} episodes are\); a dataset holds "
                       r"each episode once.*\[rule: episode_in_two_files\] Remove the duplicate file"):
        LOADERS[how](tmp_path)


def test_files_sharing_some_episodes_are_refused_and_a_game_split_by_seat_is_fine(tmp_path, small_frame):
    seat0 = small_frame.filter(pl.col(S.SEAT) == 0)
    others = small_frame.filter(pl.col(S.SEAT) != 0)
    _write(seat0, tmp_path / "a.parquet")
    _write(others, tmp_path / "b.parquet")
    assert rewardlab.load_kanachan(tmp_path).height == small_frame.height  # episodes of one game, split
    _write(small_frame.filter(pl.col(S.SEAT) <= 1), tmp_path / "c.parquet")  # seat 0 again, and seat 1
    for load in LOADERS.values():
        with pytest.raises(DataFormatError, match=r"c\.parquet: the episode of game .* seat 0 is also in "
                           r".*a\.parquet \(3 of this file's 6 episodes are\)"):
            load(tmp_path)


def test_the_same_file_named_twice_is_refused(tmp_path, small_frame):
    path = _write(small_frame, tmp_path / "x.parquet")
    os.symlink(path, tmp_path / "link.parquet")
    for load in LOADERS.values():
        with pytest.raises(DataFormatError, match=r"\[rule: episode_in_two_files\]"):
            load([path, tmp_path / "link.parquet"])


def test_a_folder_with_parquet_and_arrow_of_one_frame_is_refused(tmp_path, small_frame):
    _write(small_frame, tmp_path / "x.parquet")
    _write(small_frame, tmp_path / "x.arrow")
    for load in LOADERS.values():
        with pytest.raises(DataFormatError, match=r": the folder holds both Parquet and Arrow files \(x\.arrow, "
                           r"x\.parquet\); a dataset is of one kind \[rule: mixed_kinds\] If they are the same "
                           r"data converted twice, keep one"):
            load(tmp_path)


# ----------------------------------------------------------------------------
# Page checksums
# ----------------------------------------------------------------------------


def _flip_a_bit_in_a_data_page(path, column: str) -> None:
    """Flip one bit inside the compressed values of ``column``'s first data page.

    The bit is one whose flip still decompresses (found by trying positions
    from the chunk's end backwards), so only the page checksum can tell.
    """
    meta = pq.ParquetFile(path).metadata
    names = [meta.schema.column(j).name for j in range(meta.num_columns)]
    chunk = meta.row_group(0).column(names.index(column))
    original = path.read_bytes()
    clean = pq.read_table(path, columns=[column])[column]
    end = chunk.data_page_offset + chunk.total_compressed_size
    for position in range(end - 100, chunk.data_page_offset, -7):
        data = bytearray(original)
        data[position] ^= 0x01
        path.write_bytes(bytes(data))
        try:
            if not pq.read_table(path, columns=[column])[column].equals(clean):
                return
        except OSError:
            continue
    raise AssertionError("no position found")  # pragma: no cover


def test_write_dataset_writes_page_checksums(tmp_path, sample_frame):
    path = _write(sample_frame, tmp_path / "d.parquet")
    clean = pq.read_table(path)
    _flip_a_bit_in_a_data_page(path, S.NUMERIC)
    unverified = pq.read_table(path)  # without the checksum the flip goes unnoticed: other values
    assert unverified.num_rows == clean.num_rows and not unverified[S.NUMERIC].equals(clean[S.NUMERIC])
    with pytest.raises(OSError, match="CRC checksum verification failed"):  # with it, it is caught
        pq.read_table(path, page_checksum_verification=True)


@pytest.mark.parametrize("how", list(LOADERS))
def test_a_flipped_bit_in_a_data_page_is_an_error_naming_the_file(tmp_path, sample_frame, how):
    path = _write(sample_frame, tmp_path / "d.parquet")
    _flip_a_bit_in_a_data_page(path, S.NUMERIC)
    with pytest.raises(DataFormatError, match=r"d\.parquet: the file is damaged or truncated \(.*CRC checksum "
                       r"verification failed.*\); no data was loaded \[rule: damaged_file\] Its bytes are not "
                       r"what was written"):
        LOADERS[how](path)


def test_verification_is_remembered_per_file_identity(tmp_path, small_frame, monkeypatch):
    path = _write(small_frame, tmp_path / "d.parquet")
    calls = []
    real = verification.verify_parquet
    monkeypatch.setattr(verification, "verify_parquet", lambda p: calls.append(p) or real(p))
    rewardlab.scan_kanachan(path)
    rewardlab.scan_kanachan(path)
    assert calls == [path]
    _write(small_frame.head(small_frame.height), tmp_path / "e.parquet")
    os.replace(tmp_path / "e.parquet", path)  # a new file (inode) at the same path is verified again
    rewardlab.scan_kanachan(path)
    assert calls == [path, path]


def test_info_on_a_damaged_dataset_is_one_line(tmp_path, sample_frame, capsys):
    path = _write(sample_frame, tmp_path / "d.parquet")
    _flip_a_bit_in_a_data_page(path, S.NUMERIC)
    assert main(["info", str(path)]) == 2
    err = capsys.readouterr().err
    assert err.startswith(f"rewardlab info: error: {path}: the file is damaged or truncated")
    assert err.count("\n") == 1 and "Traceback" not in err


def test_a_rewards_table_carries_page_checksums_and_stats_verifies_them(tmp_path, small_frame, capsys):
    """`rewardlab apply` writes its rewards table with page checksums; `stats` refuses a flipped bit."""
    data = _write(small_frame, tmp_path / "d.parquet")
    out = tmp_path / "rewards.parquet"
    plugin = str(Path(__file__).resolve().parents[1] / "data" / "plugins" / "round_delta.py")
    assert main(["apply", str(data), "--plugin", plugin, "--out", str(out)]) == 0
    assert main(["stats", str(out)]) == 0
    capsys.readouterr()
    _flip_a_bit_in_a_data_page(out, "reward_round_delta")
    assert main(["stats", str(out)]) == 2
    err = capsys.readouterr().err
    assert err.startswith(f"rewardlab stats: error: {out}: the file is damaged or truncated")
    assert "run `rewardlab apply` again" in err and err.count("\n") == 1 and "Traceback" not in err
