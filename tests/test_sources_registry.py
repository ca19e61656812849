"""Sources as a registry (issue 11): rewardlab.load / scan, detection, options, the spec in dataset files.

The ``toy_frame`` fixture registers a source of its own from a module written
into ``tmp_path`` (no change to rewardlab's modules) and returns a frame
loaded through :func:`rewardlab.load`; tests of the rest of the pipeline on a
new source build on it.
"""

from __future__ import annotations

import importlib.util
import json
import shutil
import sys
import textwrap

import polars as pl
import pyarrow.parquet as pq
import pytest

import rewardlab
from rewardlab.sources.kanachan import schema as S
from rewardlab.sources import storage
from rewardlab.cli import main
from rewardlab.core.spec import SPEC_KEY, attached
from rewardlab.core.errors import DataFormatError, ParameterError, SpecError
from rewardlab.sources.registry import detect_source, registered_sources, spec_of, unregister_source


# ----------------------------------------------------------------------------
# A toy source, registered from a temporary module
# ----------------------------------------------------------------------------

TOY_MODULE = '''
"""A toy format: comma-separated text, one step per line, a header line first."""

import polars as pl

import rewardlab
from rewardlab.core.spec import attach

TOY_SPEC = rewardlab.FrameSpec(
    name="toy", episode=("episode",), step="step", terminated="terminated", truncated="truncated",
    states=(rewardlab.StateColumn("obs", 2, "float32", 0.0),), columns=("action",),
    contract="steps", description="toy steps")


def load_toy(paths, *, sep=","):
    frames = [pl.read_csv(p, separator=sep) for p in paths]
    frame = pl.concat(frames) if len(frames) > 1 else frames[0]
    frame = frame.select(
        pl.col("episode").cast(pl.Int64), pl.col("step").cast(pl.UInt32),
        pl.concat_list("obs0", "obs1").cast(pl.List(pl.Float32)).list.to_array(2).alias("obs"),
        pl.col("action").cast(pl.Int64),
        pl.col("terminated").cast(pl.Boolean), pl.col("truncated").cast(pl.Boolean))
    TOY_SPEC.validate(frame)
    return attach(frame, TOY_SPEC)


SOURCE = rewardlab.register_source(rewardlab.Source(
    name="toy", spec=TOY_SPEC, load=load_toy, suffixes=(".toy",),
    description="toy steps: episode, step, obs0, obs1, action, terminated, truncated"), replace=True)
'''

TOY_ROWS = [  # episode, step, obs0, obs1, action, terminated, truncated
    (0, 0, 0.5, 1.0, 1, 0, 0), (0, 1, 0.25, 0.0, 0, 0, 0), (0, 2, 0.75, 0.5, 1, 1, 0),
    (1, 0, 1.0, 1.0, 0, 0, 0), (1, 1, 0.0, 0.125, 1, 0, 1),
    (2, 0, 0.5, 0.5, 1, 1, 0),
]


def write_toy(path, rows=TOY_ROWS, sep=","):
    lines = [sep.join(("episode", "step", "obs0", "obs1", "action", "terminated", "truncated"))]
    lines += [sep.join(map(str, r)) for r in rows]
    path.write_text("\n".join(lines) + "\n")
    return path


@pytest.fixture
def toy_module(tmp_path):
    """Import the toy source's module from tmp_path (it registers itself); unregister it afterwards."""
    (tmp_path / "toy_source.py").write_text(textwrap.dedent(TOY_MODULE))
    spec = importlib.util.spec_from_file_location("toy_source", tmp_path / "toy_source.py")
    module = importlib.util.module_from_spec(spec)
    sys.modules["toy_source"] = module
    spec.loader.exec_module(module)
    yield module
    unregister_source("toy")
    sys.modules.pop("toy_source", None)


@pytest.fixture
def toy_frame(tmp_path, toy_module):
    """A toy frame loaded with rewardlab.load (format detected from the .toy suffix)."""
    return rewardlab.load(write_toy(tmp_path / "steps.toy"))


def test_a_toy_source_from_a_temporary_module_loads_with_its_spec(toy_frame, toy_module):
    assert attached(toy_frame) == toy_module.TOY_SPEC
    assert toy_frame["obs"].dtype == pl.Array(pl.Float32, 2)
    assert toy_frame["episode"].to_list() == [r[0] for r in TOY_ROWS]
    assert toy_frame["obs"].to_list()[1] == [0.25, 0.0]
    assert "toy" in registered_sources() and "toy" in rewardlab.sources.registry.format_names()
    assert spec_of(toy_frame).name == "toy"


@pytest.mark.parametrize("suffix", [".parquet", ".arrow"])
def test_a_toy_frame_converts_to_a_dataset_and_reopens_with_its_spec(tmp_path, toy_frame, toy_module, suffix):
    out = tmp_path / f"toy{suffix}"
    rewardlab.convert(tmp_path / "steps.toy", out)
    assert storage.read_spec(out) == toy_module.TOY_SPEC
    assert detect_source(out).name == "dataset"  # by its metadata
    for frame in (rewardlab.load(out), rewardlab.scan(out)):
        assert attached(frame) == toy_module.TOY_SPEC
        got = frame.collect() if isinstance(frame, pl.LazyFrame) else frame
        assert got.equals(toy_frame) and got.schema == toy_frame.schema
    if suffix == ".parquet":  # the toy's state column is stored as fixed-size binary, like kanachan's
        assert json.loads(pq.read_schema(out).metadata[b"rewardlab.arrays"]) == {
            "obs": {"dtype": "<f4", "width": 2}}


def test_toy_options_are_passed_and_a_misspelt_one_is_named(tmp_path, toy_module):
    path = write_toy(tmp_path / "semi.toy", sep=";")
    assert rewardlab.load(path, options={"sep": ";"}).height == len(TOY_ROWS)
    with pytest.raises(ParameterError, match=r"`options` should name only options of the 'toy' format "
                       r"\(sep\); 'seperator' is not one"):
        rewardlab.load(path, options={"seperator": ";"})


def test_a_toy_dataset_missing_an_episode_in_two_files_is_refused(tmp_path, toy_frame):
    folder = tmp_path / "parts"
    folder.mkdir()
    storage.write_dataset(toy_frame, folder / "a.parquet")
    storage.write_dataset(toy_frame.head(3), folder / "b.parquet", spec=attached(toy_frame))
    with pytest.raises(DataFormatError, match=r"b\.parquet: the episode of episode 0 is also in .*a\.parquet"):
        rewardlab.load(folder)


# ----------------------------------------------------------------------------
# Detection, format=, options
# ----------------------------------------------------------------------------


def test_detection_by_suffix_and_by_content(tmp_path, sample_path):
    assert detect_source(sample_path).name == "kanachan"  # .tsv.gz
    renamed = tmp_path / "annotations.dat.gz"  # no claimed suffix: recognized by its first line
    shutil.copy(sample_path, renamed)
    assert detect_source(renamed).name == "kanachan"
    fake = tmp_path / "lines.parquet"  # content goes first: kanachan text, whatever the suffix says
    shutil.copy(sample_path, tmp_path / "x.gz")
    import gzip

    fake.write_bytes(gzip.decompress((tmp_path / "x.gz").read_bytes())[:5000])
    assert detect_source(fake).name == "kanachan"
    assert attached(rewardlab.load(renamed, progress=False)) == S.KANACHAN_SPEC


def test_format_overrides_detection(tmp_path, sample_path, sample_frame):
    plain = tmp_path / "annotations.dat"  # neither claimed suffix nor compressed content sniffable as gzip
    import gzip

    plain.write_bytes(gzip.decompress(sample_path.read_bytes()))
    assert rewardlab.load(plain, format="kanachan", progress=False).drop(S.SOURCE_FILE).equals(
        sample_frame.drop(S.SOURCE_FILE))
    with pytest.raises(ParameterError, match=r"`paths` should be \.parquet or \.arrow datasets"):
        rewardlab.load(sample_path, format="dataset")  # the dataset reader, as asked
    with pytest.raises(ParameterError, match=r"`format` should be one of 'dataset', 'kanachan'.*"
                       r"Received 'kanachn'"):
        rewardlab.load(sample_path, format="kanachn")


def test_an_undetectable_file_names_the_path_and_the_formats(tmp_path):
    path = tmp_path / "notes.xyz"
    path.write_text("hello\n")
    with pytest.raises(ParameterError, match=r"`format` could not be detected for .*notes\.xyz: no registered "
                       r"source claims it by content or suffix \(it is text whose first line reads 'hello'\); "
                       r"tried 'dataset', 'kanachan'.*--format NAME on the command line, format=\"NAME\" in Python"
                       r".*Registered formats: dataset \(\.arrow, .*kanachan \(\.tsv"):
        rewardlab.load(path)
    with pytest.raises(DataFormatError, match=r"nope\.xyz: no such file"):
        rewardlab.load(tmp_path / "nope.xyz")


def test_an_unknown_kanachan_option_is_named(sample_path):
    with pytest.raises(ParameterError, match=r"`options` should name only options of the 'kanachan' format "
                       r"\(on_error, skipped_path, overwrite\); 'on_eror' is not one"):
        rewardlab.load(sample_path, options={"on_eror": "skip"})
    with pytest.raises(ParameterError, match=r"`options` should be a dict"):
        rewardlab.load(sample_path, options=["on_error"])


# ----------------------------------------------------------------------------
# The spec in the file metadata
# ----------------------------------------------------------------------------


@pytest.mark.parametrize("suffix", [".parquet", ".arrow"])
def test_the_spec_round_trips_through_convert_and_load(tmp_path, sample_path, sample_frame, suffix):
    out = tmp_path / f"d{suffix}"
    rewardlab.convert(sample_path, out, progress=False)
    assert storage.read_spec(out) == S.KANACHAN_SPEC
    frame = rewardlab.load(out)
    assert attached(frame) == S.KANACHAN_SPEC and frame.equals(sample_frame)
    assert attached(rewardlab.scan(out)) == S.KANACHAN_SPEC
    assert attached(rewardlab.load_kanachan(out)) == S.KANACHAN_SPEC  # the old names read it too


def _drop_spec(path):
    table = pq.read_table(path)
    metadata = {k: v for k, v in table.schema.metadata.items() if k != SPEC_KEY.encode()}
    pq.write_table(table.replace_schema_metadata(metadata), path)


def test_a_dataset_written_before_specs_loads_as_kanachan(tmp_path, small_frame):
    path = tmp_path / "old.parquet"
    storage.write_dataset(small_frame, path)
    _drop_spec(path)
    assert storage.read_spec(path) is None and storage.layout_of(path) == storage.LAYOUT
    frame = rewardlab.load(path)
    assert attached(frame) == S.KANACHAN_SPEC and frame.equals(small_frame)
    small_frame.write_ipc(tmp_path / "old.arrow")  # what Polars writes: no metadata at all
    assert attached(rewardlab.load(tmp_path / "old.arrow")) == S.KANACHAN_SPEC


def _set_spec(path, spec_json):
    table = pq.read_table(path)
    pq.write_table(table.replace_schema_metadata({**table.schema.metadata, SPEC_KEY.encode(): spec_json}), path)


def test_a_stored_spec_that_does_not_fit_the_columns_is_a_spec_error(tmp_path, small_frame):
    path = tmp_path / "d.parquet"
    storage.write_dataset(small_frame, path)
    spec = rewardlab.FrameSpec(name="other", episode=("game_id",), terminated="done")
    _set_spec(path, spec.to_json())
    for load in (rewardlab.load, rewardlab.scan):
        with pytest.raises(SpecError, match=r"column 'done': .*d\.parquet: the dataset's other spec does not "
                           r"fit its columns: the other spec names this column and the frame lacks it"):
            load(path)
    wide = rewardlab.FrameSpec(name="wide", episode=("game_id",),
                               states=(rewardlab.StateColumn("sparse", 30, "int16", 0),))
    _set_spec(path, wide.to_json())
    with pytest.raises(SpecError, match=r"column 'sparse': .*the state should have width 30, found 29"):
        rewardlab.load(path)
    _set_spec(path, b"{not json")
    with pytest.raises(DataFormatError, match=r"d\.parquet: the spec stored in the file's metadata cannot be "
                       r"read .*\[rule: bad_spec\]"):
        rewardlab.load(path)


def test_write_dataset_needs_a_spec_and_its_columns(tmp_path):
    plain = pl.DataFrame({"e": [0, 0], "x": [1.0, 2.0]})
    with pytest.raises(SpecError, match=r"the frame has no spec.*spec=rewardlab\.FrameSpec"):
        storage.write_dataset(plain, tmp_path / "a.parquet")
    spec = rewardlab.FrameSpec(name="s", episode=("e",), terminated="done")
    with pytest.raises(SpecError, match=r"column 'done': the s spec names this column and the frame lacks it"):
        storage.write_dataset(plain, tmp_path / "a.parquet", spec=spec)
    assert not any(tmp_path.iterdir())


def test_a_rewards_table_stores_its_projected_spec_and_lazy_table_attaches_it(tmp_path, small_frame):
    from rewardlab.analysis.tables import lazy_table

    table = small_frame.select(S.GAME_ID, S.SEAT, S.STEP, S.END_OF_GAME).with_columns(
        reward_a=pl.lit(1.0), done_a=pl.col(S.END_OF_GAME))
    path = tmp_path / "rewards.parquet"
    storage.write_table(table, path)
    want = S.KANACHAN_SPEC.project(table.columns)
    assert storage.read_spec(path) == want
    lf, _ = lazy_table(path)
    assert attached(lf) == want


# ----------------------------------------------------------------------------
# The command line
# ----------------------------------------------------------------------------


def test_cli_format_option(tmp_path, sample_path, capsys):
    import gzip

    plain = tmp_path / "annotations.dat"
    plain.write_bytes(gzip.decompress(sample_path.read_bytes()))
    assert main(["info", "--format", "kanachan", str(plain)]) == 0
    assert "transitions       119,555" in capsys.readouterr().out
    assert main(["info", "--format", "dataset", str(sample_path)]) == 2
    assert "`paths` should be .parquet or .arrow datasets" in capsys.readouterr().err
    out = tmp_path / "d.arrow"
    assert main(["convert", "--format", "kanachan", str(plain), "--out", str(out)]) == 0
    assert storage.read_spec(out) == S.KANACHAN_SPEC
    with pytest.raises(SystemExit):
        main(["info", "--format", "csv", str(plain)])
    assert "argument --format: invalid choice: 'csv' (choose from 'dataset', 'kanachan'" in capsys.readouterr().err
    assert main(["info", "--formats"]) == 0
    listing = capsys.readouterr().out
    assert listing.startswith("dataset   converted datasets") and "\nkanachan  kanachan offline-RL" in listing


def test_cli_info_and_convert_on_the_toy_source(tmp_path, toy_frame, capsys):
    out = tmp_path / "toy.parquet"
    assert main(["convert", str(tmp_path / "steps.toy"), "--out", str(out)]) == 0
    capsys.readouterr()
    assert main(["info", "--json", str(out)]) == 0
    info = json.loads(capsys.readouterr().out)
    assert (info["format"], info["spec"], info["transitions"], info["episodes"]) == ("dataset", "toy", 6, 3)
    assert main(["info", "--formats"]) == 0
    assert "\ntoy       toy steps" in capsys.readouterr().out


def test_convert_refuses_a_skip_option_a_format_does_not_take(tmp_path, toy_frame):
    with pytest.raises(ParameterError, match=r"`options` should name only options of the 'toy' format \(sep\); "
                       r"'on_error' is not one"):
        rewardlab.convert(tmp_path / "steps.toy", tmp_path / "toy.parquet", on_error="skip")
    assert not (tmp_path / "toy.parquet").exists()


def test_the_cli_parser_lists_formats_without_importing_the_sources():
    import subprocess

    from conftest import ROOT

    code = ("import sys; from rewardlab.cli import build_parser; build_parser(); "
            "print(sorted(m for m in ('rewardlab.sources.kanachan.reader', 'rewardlab.sources.datasets', "
            "'rewardlab.sources.storage', 'pyarrow') if m in sys.modules))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "[]"


def test_load_kanachan_refuses_another_sources_dataset(tmp_path, toy_frame):
    out = tmp_path / "toy.parquet"
    rewardlab.convert(tmp_path / "steps.toy", out)
    for load in (rewardlab.load_kanachan, rewardlab.scan_kanachan):
        with pytest.raises(ParameterError, match=r"`paths` should be kanachan data; .*toy\.parquet holds a "
                           r"'toy' frame.*Open it with rewardlab\.load\(\)"):
            load(out)


def test_an_arrow_dataset_of_a_frame_in_several_chunks_round_trips(tmp_path, small_frame, monkeypatch):
    """The IPC writer (pyarrow, to carry the spec) must unify the chunks' Categorical dictionaries."""
    monkeypatch.setattr(storage.writing, "PARQUET_ROW_GROUP", small_frame.height // 3)  # a game per row group
    storage.write_dataset(small_frame, tmp_path / "groups.parquet")
    frame = rewardlab.load(tmp_path / "groups.parquet")  # one chunk per row group, each its own dictionary
    assert frame.n_chunks() > 1
    path = tmp_path / "chunks.arrow"
    storage.write_dataset(frame, path, kind="ipc")
    assert rewardlab.load(path).equals(small_frame)


def test_a_plain_parquet_table_loads_with_a_declared_spec_and_is_checked(tmp_path):
    spec = rewardlab.FrameSpec(name="steps", episode=("episode",), step="t", terminated="terminated")
    table = pl.DataFrame({"episode": [0, 0, 1], "t": [0, 1, 0], "x": [1.0, 2.0, 3.0],
                          "terminated": [False, True, True]})
    table.write_parquet(tmp_path / "steps.parquet")  # no rewardlab metadata, a step table's names: "steps"
    assert attached(rewardlab.load(tmp_path / "steps.parquet")).contract == "steps"
    table.rename({"episode": "run"}).write_parquet(tmp_path / "runs.parquet")  # other names: still a step table
    with pytest.raises(DataFormatError, match=r"runs\.parquet: no episode column: .*\[rule: missing_column\]"):
        rewardlab.load(tmp_path / "runs.parquet")
    assert rewardlab.load(tmp_path / "runs.parquet", episode="run").rename({"run": "episode"}).drop(
        "reward_recorded", strict=False).equals(rewardlab.load(tmp_path / "steps.parquet"))
    frame = rewardlab.load(tmp_path / "steps.parquet", spec=spec)
    assert attached(frame) == spec and frame.equals(table)
    table.with_columns(episode=pl.Series([0, 1, 0])).write_parquet(tmp_path / "bad.parquet")
    with pytest.raises(SpecError, match=r"column 'episode', row 2: episode 0 is not contiguous"):
        rewardlab.load(tmp_path / "bad.parquet", spec=spec)


def test_cli_stats_with_format_reads_through_the_registry(tmp_path, small_frame, capsys):
    table = small_frame.select(S.GAME_ID, S.SEAT, S.STEP, S.END_OF_GAME).with_columns(
        reward_a=pl.lit(0.5), done_a=pl.col(S.END_OF_GAME))
    path = tmp_path / "rewards.parquet"
    storage.write_table(table, path)
    assert main(["stats", "--json", str(path)]) == 0
    auto = json.loads(capsys.readouterr().out)
    assert main(["stats", "--json", "--format", "dataset", str(path)]) == 0
    assert json.loads(capsys.readouterr().out) == auto
    assert auto["rows"] == small_frame.height and auto["rewards"]["a"]["all"]["mean"] == 0.5
    assert main(["stats", "--format", "dataset", str(tmp_path / "nope.parquet")]) == 2
    assert "nope.parquet: no such file" in capsys.readouterr().err
