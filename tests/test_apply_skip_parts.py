"""Skip mode for bad parts in ``apply`` and the returns writers on a dataset folder.

A part is damaged four ways (deleted, truncated, another part copied over it,
a part of another dataset copied over it).  Raise mode names the part before
any plug-in runs and leaves nothing under the output's name.  Skip mode's
result must equal, bit for bit, the in-memory run on the intact frame minus
that part's rows (an independent reference: ``apply_plugins`` / the frame
functions on one frame), and the written dataset's manifest lists the input
part left out, so reading it joins each of its parts to the right input part
(and warns, naming it).
"""

from __future__ import annotations

import json
import shutil
import warnings

import numpy as np
import polars as pl
import pytest

from rewardlab.analysis.return_tables import gae, reward_to_go, trajectory_returns
from rewardlab.core.errors import DataFormatError, ParameterError, PartsLeftOutWarning
from rewardlab.core.spec import attach, attached
from rewardlab.plugins import apply_plugins
from rewardlab.plugins.apply_parts import apply_to_dataset
from rewardlab.sources.datasets import MANIFEST_NAME, PartedDataset, open_dataset
from rewardlab.sources.datasets.convert import convert_to_parts
from rewardlab.sources.datasets.manifest import index_in_base

PLUGIN = "data/plugins/raw_points.py"
REWARD, DONE = "reward_raw_points", "done_raw_points"
REASONS = {"missing": "missing_part", "truncated": "part_size", "duplicated": "duplicated_part",
           "foreign": "foreign_part"}
BAD = 2


@pytest.fixture(scope="module")
def corpus(tmp_path_factory):
    out = tmp_path_factory.mktemp("apply-skip") / "corpus"
    convert_to_parts("data/sample.tsv.gz", out, part_rows=20_000, progress=False)
    return out


@pytest.fixture(scope="module")
def foreign(corpus):
    other = corpus.parent / "other"
    convert_to_parts("data/sample.tsv.gz", other, part_rows=20_000, progress=False)
    return other


@pytest.fixture(scope="module")
def whole(corpus):
    return open_dataset(corpus).load()


def _damage(target, how: str, index: int, foreign) -> None:
    path = target / f"part-{index:06d}.parquet"
    if how == "missing":
        path.unlink()
    elif how == "truncated":
        path.write_bytes(path.read_bytes()[:-100])
    elif how == "duplicated":  # another part of this dataset copied over it (its size too, in the manifest)
        manifest = json.loads((target / MANIFEST_NAME).read_text())
        shutil.copy(target / "part-000000.parquet", path)
        manifest["parts"][index]["bytes"] = path.stat().st_size
        (target / MANIFEST_NAME).write_text(json.dumps(manifest))
    elif how == "foreign":  # the same part of another dataset: same size, another dataset id in its footer
        shutil.copy(foreign / path.name, path)
    else:
        raise AssertionError(how)


def _without(frame: pl.DataFrame, corpus, indexes) -> pl.DataFrame:
    """``frame`` (the intact dataset's rows) minus the rows of parts ``indexes`` (by the intact manifest)."""
    starts = open_dataset(corpus).part_starts()
    keep = np.ones(frame.height, dtype=bool)
    for i in indexes:
        keep[starts[i]:starts[i + 1]] = False
    return frame.filter(pl.Series(keep))


def _bits(series: pl.Series) -> np.ndarray:
    values = series.cast(pl.Float64).to_numpy()
    return values.view(np.uint64)


def _copy(corpus, tmp_path, name="corpus"):
    target = tmp_path / name
    shutil.copytree(corpus, target)
    return target


def _reference(whole, corpus, indexes, **options) -> pl.DataFrame:
    """The in-memory rewards of the intact frame without parts ``indexes``."""
    kept = _without(whole, corpus, indexes)
    return apply_plugins(attach(kept, attached(whole)), [PLUGIN], isolate=False, **options)


@pytest.mark.parametrize("how, engine", [*((how, "embedded") for how in REASONS),
                                         pytest.param("foreign", "processes", marks=pytest.mark.slow)])
def test_apply_names_a_bad_part_or_leaves_it_out_bit_for_bit(corpus, foreign, whole, tmp_path, how, engine):
    # on the processes engine the plug-in processes read the kept parts and write the rewards themselves
    target = _copy(corpus, tmp_path)
    _damage(target, how, BAD, foreign)
    out = tmp_path / "rewards"
    with pytest.raises(DataFormatError, match=rf"part-00000{BAD}\.parquet: .*\[rule: {REASONS[how]}\]"):
        apply_to_dataset(target, [PLUGIN], out, workers=1)
    assert not out.exists() and not out.with_name("rewards.partial").exists()
    with pytest.warns(PartsLeftOutWarning, match=rf"left out 1 of .*part-00000{BAD}\.parquet"):
        manifest = apply_to_dataset(target, [PLUGIN], out, workers=2, on_error="skip", engine=engine)
    want = _reference(whole, corpus, [BAD])
    n = len(open_dataset(corpus))
    assert len(manifest.parts) == n - 1 and manifest.rows == want.height
    (record,) = manifest.base["parts_left_out"]
    assert (record["index"], record["reason"], record["file"]) == (BAD, REASONS[how], f"part-00000{BAD}.parquet")
    with pytest.warns(PartsLeftOutWarning, match=rf"written without 1 part\(s\) of its base .*parts {BAD}"):
        ds = PartedDataset(out)  # raise mode: the base part it was written without is left out unchecked
    assert ds.written_without == (BAD,) and ds.base.part_indexes == tuple(i for i in range(n) if i != BAD)
    assert [(r.index, r.reason) for r in ds.base.left_out] == [(BAD, "written_without")]
    got = ds.load(columns=[REWARD, DONE, "game_id", "seat", "chang", "end_of_game"])  # base columns joined
    assert np.array_equal(_bits(got[REWARD]), _bits(want[REWARD]))
    assert got[DONE].to_list() == want[DONE].to_list()
    for name in ("game_id", "seat", "chang", "end_of_game"):  # each part joined to the right base part
        assert got[name].to_list() == want[name].to_list(), name


def test_skip_in_a_carrying_mode_carries_rows_across_the_gap(corpus, foreign, whole, tmp_path):
    target = _copy(corpus, tmp_path)
    _damage(target, "truncated", 1, foreign)
    _damage(target, "foreign", 3, foreign)
    out = tmp_path / "rewards"
    with pytest.warns(PartsLeftOutWarning, match="left out 2 of"):
        apply_to_dataset(target, [PLUGIN], out, batch_mode="sequential", batch_size=1000, on_error="skip")
    want = _reference(whole, corpus, [1, 3], batch_mode="sequential", batch_size=1000)
    with pytest.warns(PartsLeftOutWarning):
        got = PartedDataset(out).load(columns=[REWARD, DONE])
    assert np.array_equal(_bits(got[REWARD]), _bits(want[REWARD]))
    assert got[DONE].to_list() == want[DONE].to_list()


def test_a_rewards_dataset_written_without_a_part_follows_its_base_later(corpus, foreign, whole, tmp_path):
    target = _copy(corpus, tmp_path)
    intact = target / f"part-00000{BAD}.parquet"
    saved = intact.read_bytes()
    _damage(target, "missing", BAD, foreign)
    out = tmp_path / "rewards"
    with pytest.warns(PartsLeftOutWarning):
        apply_to_dataset(target, [PLUGIN], out, workers=1, on_error="skip")
    intact.write_bytes(saved)  # restored: the rewards still join the parts they were computed on
    with pytest.warns(PartsLeftOutWarning, match="written without"):
        ds = PartedDataset(out)
    n = len(open_dataset(corpus))
    assert ds.base.part_indexes == tuple(i for i in range(n) if i != BAD)
    # a later bad base part leaves out the rewards part built on it: base part 4 is rewards part 3
    _damage(target, "truncated", 4, foreign)
    assert index_in_base(3, (BAD,)) == 4
    with pytest.raises(DataFormatError, match="part-000004.parquet"):
        PartedDataset(out)
    with pytest.warns(PartsLeftOutWarning) as caught:
        ds = PartedDataset(out, on_error="skip")
    assert ds.part_indexes == tuple(i for i in range(n - 1) if i != 3)
    assert ds.base.part_indexes == tuple(i for i in range(n) if i not in (BAD, 4))
    assert [(r.index, r.reason) for r in ds.left_out] == [(3, "base_part_left_out")]
    assert "written_without" in str(caught[0].message) and "part_size" in str(caught[0].message)
    want = _reference(whole, corpus, [BAD, 4])
    got = ds.load(columns=[REWARD, "game_id", "seat", "end_of_game"])
    assert np.array_equal(_bits(got[REWARD]), _bits(want[REWARD]))
    assert got["game_id"].to_list() == want["game_id"].to_list()


@pytest.fixture(scope="module")
def rewards(corpus, tmp_path_factory):
    """An intact copy of the corpus and its rewards dataset, side by side."""
    root = tmp_path_factory.mktemp("apply-skip-returns")
    base = root / "corpus"
    shutil.copytree(corpus, base)
    apply_to_dataset(base, [PLUGIN], root / "rewards", workers=1)
    return root / "rewards"


def _returns_reference(whole, corpus, rewards, indexes) -> pl.DataFrame:
    """The intact frame with its rewards, without parts ``indexes``, in memory."""
    frame = whole.hstack(open_dataset(rewards).load(columns=[REWARD, DONE]).select(REWARD, DONE).get_columns())
    frame = frame.with_columns(pl.col("chang").cast(pl.Float64).alias("chang"))
    return attach(_without(frame, corpus, indexes), attached(whole))


@pytest.mark.parametrize("how", ["truncated", "duplicated"])
def test_returns_writers_name_a_bad_part_or_leave_it_out(corpus, foreign, whole, rewards, tmp_path, how):
    root = tmp_path / "r"
    shutil.copytree(rewards.parent, root)
    _damage(root / "corpus", how, BAD, foreign)
    out = tmp_path / "rtg"
    with pytest.raises(DataFormatError, match=rf"part-00000{BAD}\.parquet: .*\[rule: {REASONS[how]}\]"):
        reward_to_go(root / "rewards", "raw_points", gamma=0.9, out=out)
    assert not out.exists()
    with pytest.warns(PartsLeftOutWarning, match="left out 1 of"):
        written = reward_to_go(root / "rewards", "raw_points", gamma=0.9, out=out, on_error="skip")
    frame = _returns_reference(whole, corpus, rewards, [BAD])
    want = reward_to_go(frame, "raw_points", gamma=0.9)
    got = written.load(columns=["return_to_go_raw_points"])["return_to_go_raw_points"]
    assert np.array_equal(_bits(got), _bits(want))
    (record,) = written.manifest.base["parts_left_out"]
    assert (record["index"], record["reason"]) == (BAD, "base_part_left_out")
    with pytest.warns(PartsLeftOutWarning, match="written without"):
        reopened = PartedDataset(out, on_error="skip")
    joined = reopened.load(columns=["return_to_go_raw_points", REWARD, "game_id"])  # out -> rewards -> corpus
    assert joined[REWARD].to_list() == frame[REWARD].to_list()
    assert joined["game_id"].to_list() == frame["game_id"].to_list()
    with pytest.warns(PartsLeftOutWarning):
        table = trajectory_returns(root / "rewards", "raw_points", on_error="skip")
    assert table.equals(trajectory_returns(frame, "raw_points"))


def test_returns_over_a_rewards_dataset_written_without_a_part(corpus, foreign, whole, tmp_path):
    """GAE reads ``value`` from the base through the renumbered parts (rewards part i is base part i or i+1)."""
    target = _copy(corpus, tmp_path)
    _damage(target, "foreign", BAD, foreign)
    out = tmp_path / "rewards"
    with pytest.warns(PartsLeftOutWarning):
        apply_to_dataset(target, [PLUGIN], out, workers=1, on_error="skip")
    rewards_frame = _reference(whole, corpus, [BAD])
    frame = attach(rewards_frame.with_columns(pl.col("chang").cast(pl.Float64)), attached(whole))
    want = gae(frame, "raw_points", value="chang", gamma=0.9, lmbda=0.8)
    with pytest.warns(PartsLeftOutWarning, match="written without"):
        got = gae(out, "raw_points", value="chang", gamma=0.9, lmbda=0.8)
    for name in want.columns:
        assert np.array_equal(_bits(got[name]), _bits(want[name])), name
    with pytest.warns(PartsLeftOutWarning, match="written without"):
        written = gae(out, "raw_points", value="chang", gamma=0.9, lmbda=0.8, out=tmp_path / "adv")
    assert np.array_equal(_bits(written.load(columns=["advantage"])["advantage"]), _bits(want["advantage"]))


def test_on_error_is_checked_and_applies_to_folders(corpus, whole, tmp_path):
    with pytest.raises(ParameterError, match="on_error"):
        apply_to_dataset(corpus, [PLUGIN], tmp_path / "x", on_error="ignore")
    frame = attach(whole.head(100).with_columns(pl.lit(0.0).alias(REWARD), pl.lit(False).alias(DONE)),
                   attached(whole))
    with pytest.raises(ParameterError, match="applies to a dataset folder"):
        reward_to_go(frame, "raw_points", gamma=0.9, on_error="skip")
    with pytest.raises(ParameterError, match="applies to a dataset folder"):
        trajectory_returns(frame, "raw_points", on_error="skip")
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # nothing left out: no warning, and the same result as raise mode
        manifest = apply_to_dataset(corpus, [PLUGIN], tmp_path / "ok", workers=1, on_error="skip")
    assert "parts_left_out" not in manifest.base


def test_cli_apply_on_error(corpus, foreign, whole, tmp_path, capsys):
    from rewardlab.cli import main

    target = _copy(corpus, tmp_path)
    _damage(target, "truncated", BAD, foreign)
    out = tmp_path / "rewards"
    args = ["apply", str(target), "--plugin", PLUGIN, "--out", str(out), "--workers", "1"]
    assert main(args) == 2
    assert f"part-00000{BAD}.parquet" in capsys.readouterr().err and not out.exists()
    with warnings.catch_warnings():
        warnings.simplefilter("always")  # as outside the test suite, where warnings are not errors
        assert main([*args, "--on-error", "skip"]) == 0
    captured = capsys.readouterr()
    want = _reference(whole, corpus, [BAD])
    assert f"wrote {want.height:,} transitions" in captured.out
    lines = [line for line in captured.err.splitlines() if line]
    assert len(lines) == 1 and lines[0].startswith("rewardlab apply: warning: left out 1 of")
    assert f"part-00000{BAD}.parquet" in lines[0]
    single = tmp_path / "one.parquet"
    whole.head(1000).write_parquet(single)
    assert main(["apply", str(single), "--plugin", PLUGIN, "--out", str(tmp_path / "o.parquet"),
                 "--on-error", "skip"]) == 2
    assert "`--on-error` applies to a dataset folder" in capsys.readouterr().err


def test_an_interrupted_skip_mode_apply_resumes_with_the_same_parts_left_out(corpus, foreign, whole, tmp_path,
                                                                             monkeypatch):
    from rewardlab.core.errors import FileAccessError
    from rewardlab.plugins import apply_parts

    target = _copy(corpus, tmp_path)
    intact = target / f"part-00000{BAD}.parquet"
    saved = intact.read_bytes()
    _damage(target, "truncated", BAD, foreign)
    out = tmp_path / "rewards"
    real, calls = apply_parts.write_part_file, []

    def write_part_file(staging, index, frame, *, dataset_id):
        calls.append(index)
        if len(calls) > 2:
            raise KeyboardInterrupt
        return real(staging, index, frame, dataset_id=dataset_id)

    monkeypatch.setattr(apply_parts, "write_part_file", write_part_file)
    with pytest.warns(PartsLeftOutWarning), pytest.raises(KeyboardInterrupt):
        apply_to_dataset(target, [PLUGIN], out, workers=1, on_error="skip")
    monkeypatch.setattr(apply_parts, "write_part_file", real)
    assert out.with_name("rewards.partial").exists() and not out.exists()
    intact.write_bytes(saved)  # the part is whole again: another run (it would not leave it out)
    with pytest.raises(FileAccessError, match="parts_kept differ"):
        apply_to_dataset(target, [PLUGIN], out, workers=1, on_error="skip", resume=True)
    _damage(target, "truncated", BAD, foreign)
    written = []

    def spy(staging, index, frame, *, dataset_id):
        written.append(index)
        return real(staging, index, frame, dataset_id=dataset_id)

    monkeypatch.setattr(apply_parts, "write_part_file", spy)
    with pytest.warns(PartsLeftOutWarning):
        manifest = apply_to_dataset(target, [PLUGIN], out, workers=1, on_error="skip", resume=True)
    n = len(open_dataset(corpus))
    assert sorted(written) == list(range(2, n - 1))  # the two parts finished before the stop are kept
    assert [r["index"] for r in manifest.base["parts_left_out"]] == [BAD]
    want = _reference(whole, corpus, [BAD])
    with pytest.warns(PartsLeftOutWarning):
        got = PartedDataset(out).load(columns=[REWARD])
    assert np.array_equal(_bits(got[REWARD]), _bits(want[REWARD]))
