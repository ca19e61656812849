"""Dataset file layouts (rewardlab.sources.storage): round trips, lazy scans, several files, bad metadata."""

from __future__ import annotations

import json
import subprocess
import sys

import polars as pl
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

import rewardlab
from rewardlab.sources.kanachan import schema as S
from rewardlab.sources import storage
from rewardlab.dataset import write_dataset
from rewardlab.core.errors import ColumnNotFoundError, DataFormatError, FrameError
from analysis_data import with_rewards
from conftest import ROOT

#: How each dataset file is written: the FixedSizeBinary Parquet layout, the
#: plain Polars Parquet (``frame.write_parquet``, array columns as lists), Arrow IPC.
WRITERS = {
    "parquet": lambda frame, path: write_dataset(frame, path, kind="parquet"),
    "plain-parquet": lambda frame, path: frame.write_parquet(path),
    "arrow": lambda frame, path: write_dataset(frame, path, kind="ipc"),
}
SUFFIX = {"parquet": ".parquet", "plain-parquet": ".parquet", "arrow": ".arrow"}


def _write(layout, frame, path):
    WRITERS[layout](frame, path)
    return path


def _split_at_a_game(frame: pl.DataFrame) -> tuple[pl.DataFrame, pl.DataFrame]:
    cut = int(frame.with_row_index().filter(pl.col(S.END_OF_GAME))["index"][5]) + 1
    return frame.head(cut), frame.slice(cut)


def _assert_frame(got: pl.DataFrame, want: pl.DataFrame) -> None:
    assert list(got.schema.items()) == list(S.FRAME_SCHEMA.items())  # dtypes and column order
    assert got.equals(want)


@pytest.mark.parametrize("layout", list(WRITERS))
def test_round_trip_eager_and_lazy(tmp_path, sample_frame, layout):
    path = _write(layout, sample_frame, tmp_path / f"d{SUFFIX[layout]}")
    _assert_frame(rewardlab.load_kanachan(path), sample_frame)
    lf = rewardlab.scan_kanachan(path)
    assert isinstance(lf, pl.LazyFrame)
    assert list(lf.collect_schema().items()) == list(S.FRAME_SCHEMA.items())
    _assert_frame(lf.collect(), sample_frame)


def test_convert_writes_the_binary_layout_with_its_marker(tmp_path, sample_path, sample_frame):
    out = tmp_path / "d.parquet"
    rewardlab.convert(sample_path, out, progress=False)
    metadata = pq.read_schema(out).metadata
    assert metadata[b"rewardlab.layout"].decode() == storage.LAYOUT == storage.layout_of(out)
    arrays = json.loads(metadata[b"rewardlab.arrays"])
    little_endian = {pl.UInt8: "<u1", pl.Int8: "<i1", pl.Int16: "<i2", pl.Int32: "<i4"}
    assert arrays == {name: {"dtype": little_endian[dtype.inner], "width": dtype.size}
                      for name, dtype in S.FRAME_SCHEMA.items() if isinstance(dtype, pl.Array)}
    assert sorted(arrays) == sorted([S.GRADES, S.SPARSE, S.NUMERIC, S.PROGRESSION, S.CANDIDATES,
                                     S.ROUND_SUMMARY, S.RESULTS])
    plain = pl.read_parquet(out)  # what the docs say: plain Polars sees the array columns as binary
    assert plain.schema[S.SPARSE] == pl.Binary and plain.schema[S.GAME_ID] == pl.Categorical()
    assert rewardlab.load_kanachan(out).equals(sample_frame)


def test_plain_parquet_has_no_marker(tmp_path, small_frame):
    path = _write("plain-parquet", small_frame, tmp_path / "p.parquet")
    assert storage.layout_of(path) is None


def test_the_binary_columns_hold_little_endian_rows(tmp_path, small_frame):
    path = _write("parquet", small_frame, tmp_path / "d.parquet")
    raw = pq.read_table(path, columns=[S.NUMERIC])[S.NUMERIC].to_pylist()
    row = small_frame[S.NUMERIC][0].to_list()
    assert raw[0] == b"".join(int(v).to_bytes(4, "little", signed=True) for v in row)


@pytest.mark.parametrize("layout", list(WRITERS))
def test_lazy_filter_and_projection(tmp_path, sample_frame, layout):
    path = _write(layout, sample_frame, tmp_path / f"d{SUFFIX[layout]}")
    query = (rewardlab.scan_kanachan(path)
             .filter(pl.col(S.END_OF_GAME) & (pl.col(S.SEAT) == 2))
             .select(S.GAME_ID, S.SPARSE, S.RESULTS))
    want = sample_frame.filter(pl.col(S.END_OF_GAME) & (pl.col(S.SEAT) == 2)).select(
        S.GAME_ID, S.SPARSE, S.RESULTS)
    assert query.collect().equals(want)
    assert want.height == sample_frame[S.GAME_ID].n_unique()
    plan = query.explain()
    for unused in (S.PROGRESSION, S.CANDIDATES, S.ROUND_SUMMARY, S.GRADES):
        assert unused not in plan  # neither read nor decoded


@pytest.mark.parametrize("layout", list(WRITERS))
def test_several_files_and_a_folder_concatenate(tmp_path, sample_frame, layout):
    a, b = _split_at_a_game(sample_frame)
    folder = tmp_path / "parts"
    folder.mkdir()
    first = _write(layout, a, folder / f"a{SUFFIX[layout]}")
    second = _write(layout, b, folder / f"b{SUFFIX[layout]}")
    (folder / "notes.txt").write_text("not a dataset file")
    for paths in ([first, second], folder):
        _assert_frame(rewardlab.load_kanachan(paths), sample_frame)
        _assert_frame(rewardlab.scan_kanachan(paths).collect(), sample_frame)
    assert rewardlab.load_kanachan([second, first]).equals(pl.concat([b, a]))


def test_a_folder_of_both_parquet_layouts(tmp_path, sample_frame):
    a, rest = _split_at_a_game(sample_frame)
    b, c = _split_at_a_game(rest)
    _write("plain-parquet", a, tmp_path / "1.parquet")
    _write("parquet", b, tmp_path / "2.parquet")
    _write("parquet", c, tmp_path / "3.parquet")
    want = pl.concat([a, b, c])
    _assert_frame(rewardlab.load_kanachan(tmp_path), want)
    _assert_frame(rewardlab.scan_kanachan(tmp_path).collect(), want)


def test_empty_frame_round_trip(tmp_path, small_frame):
    path = _write("parquet", small_frame.head(0), tmp_path / "e.parquet")
    _assert_frame(rewardlab.load_kanachan(path), small_frame.head(0))
    _assert_frame(rewardlab.scan_kanachan(path).collect(), small_frame.head(0))


def test_extra_columns_follow_the_frame_and_stats_read_them(tmp_path, sample_frame):
    frame = with_rewards(sample_frame)
    path = _write("parquet", frame, tmp_path / "r.parquet")
    extras = [c for c in frame.columns if c not in S.FRAME_SCHEMA]
    assert rewardlab.load_kanachan(path).equals(frame.select(*S.FRAME_SCHEMA, *extras))
    assert rewardlab.scan_kanachan(path).collect().equals(frame.select(*S.FRAME_SCHEMA, *extras))
    # rewardlab.analysis.stats reads Parquet paths itself; on a converted file it must decode `results`
    assert rewardlab.reward_by_rank(path, "points").equals(rewardlab.reward_by_rank(frame, "points"))
    got = rewardlab.reward_stats(path, "points", scope="end_of_game")
    want = rewardlab.reward_stats(frame, "points", scope="end_of_game")
    assert (got.count, got.mean, got.std) == (want.count, want.mean, want.std)


def _rewrite_metadata(path, **changes):
    table = pq.read_table(path)
    metadata = dict(table.schema.metadata)
    arrays = json.loads(metadata[b"rewardlab.arrays"])
    for key, value in changes.items():
        if key == "layout":
            metadata[b"rewardlab.layout"] = value.encode()
        else:
            arrays[key] = value
    metadata[b"rewardlab.arrays"] = json.dumps(arrays).encode()
    pq.write_table(table.replace_schema_metadata(metadata), path)


@pytest.mark.parametrize("load", [rewardlab.load_kanachan, lambda p: rewardlab.scan_kanachan(p).collect()])
def test_metadata_listing_a_wrong_width_is_refused(tmp_path, small_frame, load):
    path = _write("parquet", small_frame, tmp_path / "d.parquet")
    _rewrite_metadata(path, sparse={"dtype": "<i2", "width": 28})
    with pytest.raises(DataFormatError, match=r"d\.parquet: column 'sparse': the file's metadata lists "
                       r"\{'dtype': '<i2', 'width': 28\}, the frame has \{'dtype': '<i2', 'width': 29\} "
                       r"\[rule: layout_mismatch\]") as info:
        load(path)
    assert info.value.path == str(path)


def test_stored_width_disagreeing_with_the_metadata_is_refused(tmp_path, small_frame):
    path = tmp_path / "d.parquet"
    table = storage.to_fixed_size_binary(small_frame)  # metadata says sparse is 29 x <i2 ...
    data = small_frame[S.SPARSE].to_numpy()[:, :28].astype("<i2")  # ... but store 28 per row
    column = pa.FixedSizeBinaryArray.from_buffers(pa.binary(56), len(data), [None, pa.py_buffer(data.copy())])
    pq.write_table(table.set_column(table.schema.get_field_index(S.SPARSE), S.SPARSE, column), path)
    for load in (rewardlab.load_kanachan, rewardlab.scan_kanachan):
        with pytest.raises(DataFormatError, match=r"d\.parquet: column 'sparse' is stored as "
                           r"fixed_size_binary\[56\], should be fixed_size_binary\[58\] \(29 x <i2\)"):
            load(path)


def test_unknown_layout_version_is_refused(tmp_path, small_frame):
    path = _write("parquet", small_frame, tmp_path / "d.parquet")
    _rewrite_metadata(path, layout="fsb-99")
    with pytest.raises(DataFormatError, match=r"layout 'fsb-99' is not 'fsb-1'.*unknown_layout.*Upgrade"):
        rewardlab.load_kanachan(path)


def test_files_of_one_dataset_must_share_columns(tmp_path, small_frame):
    _write("parquet", small_frame, tmp_path / "a.parquet")
    _write("parquet", small_frame.with_columns(extra=pl.lit(1)), tmp_path / "b.parquet")
    with pytest.raises(DataFormatError, match=r"b\.parquet: the file's columns .* differ from those of "
                       r".*a\.parquet.*\[rule: mixed_columns\]"):
        rewardlab.load_kanachan(tmp_path)


@pytest.mark.parametrize("suffix", [".parquet", ".arrow"])
def test_a_dataset_file_with_wrong_dtypes_is_refused(tmp_path, small_frame, suffix):
    good, bad = tmp_path / f"a{suffix}", tmp_path / f"b{suffix}"
    write_dataset(small_frame, good, kind=storage.DATASET_SUFFIXES[suffix])
    wrong = small_frame.with_columns(pl.col(S.GAME).cast(pl.Int64))
    wrong.write_parquet(bad) if suffix == ".parquet" else wrong.write_ipc(bad)
    for load in (rewardlab.load_kanachan, rewardlab.scan_kanachan):
        with pytest.raises(DataFormatError, match=r"b\.(parquet|arrow): column 'game' is Int64, should be "
                           r"UInt32 \[rule: wrong_dtype\]"):
            load([good, bad])


def test_a_marked_file_whose_array_columns_are_lists_is_refused(tmp_path, small_frame):
    path = tmp_path / "d.parquet"
    marked = small_frame.to_arrow()
    marked = marked.replace_schema_metadata(storage.to_fixed_size_binary(small_frame).schema.metadata)
    pq.write_table(marked, path)
    with pytest.raises(DataFormatError, match=r"column 'grades' is stored as fixed_size_list<.*: uint8>\[4\], "
                       r"should be fixed_size_binary\[4\] \(4 x <u1\)"):
        rewardlab.scan_kanachan(path)


def test_write_dataset_checks_the_frame(tmp_path, small_frame):
    with pytest.raises(ColumnNotFoundError, match="column 'action' not found"):
        write_dataset(small_frame.drop(S.ACTION), tmp_path / "a.parquet")
    with pytest.raises(FrameError, match=r"column 'sparse' should be Array\(Int16, shape=\(29,\)\), found"):
        write_dataset(small_frame.with_columns(pl.col(S.SPARSE).cast(pl.Array(pl.Int32, 29))),
                      tmp_path / "b.parquet")
    holes = small_frame.with_columns(
        pl.when(pl.int_range(pl.len()) == 1).then(None).otherwise(pl.col(S.RESULTS)).alias(S.RESULTS))
    with pytest.raises(FrameError, match="column 'results' has null values"):
        write_dataset(holes, tmp_path / "c.parquet")
    assert not any(tmp_path.iterdir())


def test_import_rewardlab_does_not_import_pyarrow():
    code = "import sys, rewardlab, rewardlab.cli; print('pyarrow' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "False"


def test_a_missing_dataset_file_is_named(tmp_path):
    with pytest.raises(DataFormatError, match=r"nope\.parquet: no such file \[rule: missing_file\]"):
        rewardlab.load_kanachan(tmp_path / "nope.parquet")


def test_a_file_that_is_not_parquet_is_refused(tmp_path):
    path = tmp_path / "d.parquet"
    path.write_bytes(b"this is not a parquet file")
    with pytest.raises(DataFormatError, match=r"d\.parquet: cannot be read as Parquet .*\[rule: not_parquet\]"):
        rewardlab.load_kanachan(path)


def test_null_values_in_a_stored_array_column_are_refused(tmp_path, small_frame):
    path = _write("parquet", small_frame, tmp_path / "d.parquet")
    table = pq.read_table(path)
    k = table.column_names.index("sparse")
    column = table["sparse"].combine_chunks()
    holes = pa.array([None] + column.to_pylist()[1:], type=column.type)
    pq.write_table(table.set_column(k, "sparse", holes).replace_schema_metadata(table.schema.metadata), path)
    with pytest.raises(DataFormatError, match=r"d\.parquet: column 'sparse' has 1 null values \[rule: null_values\]"):
        rewardlab.load_kanachan(path)


def test_reading_a_dataset_part_in_a_fresh_process_does_not_import_pandas(tmp_path, small_frame):
    # pandas costs every process that reads a part 0.2-0.8 s (pyarrow imports it for pa.array's check of
    # a pandas object and for pq.read_table's dataset layer); the part's columns are read without it
    path = tmp_path / "part.parquet"
    write_dataset(small_frame, path)
    code = ("import sys; from rewardlab.sources.storage.reading import read_part; "
            f"frame = read_part({str(path)!r}); print(frame.height, 'pandas' in sys.modules)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True, cwd=ROOT)
    assert out.stdout.split() == [str(small_frame.height), "False"]
    assert rewardlab.load(path).equals(small_frame)
