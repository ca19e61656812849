"""Skip mode for a dataset folder with bad parts: each left out whole, recorded, named, nothing deleted.

The reference is the intact folder: the frame of a damaged folder read with
``on_error="skip"`` must equal the intact frame minus the rows of the parts
left out (sliced by the manifest's row counts), so no episode is ever cut.
"""

from __future__ import annotations

import json
import shutil
import warnings

import numpy as np
import polars as pl
import pytest

import rewardlab
from rewardlab.core.errors import DataFormatError, ParameterError, PartsLeftOutWarning
from rewardlab.plugins.apply_parts import apply_to_dataset
from rewardlab.sources.datasets import MANIFEST_NAME, PartedDataset, open_dataset, read_dataset_folder
from rewardlab.sources.datasets.convert import convert_to_parts

PLUGIN = "data/plugins/raw_points.py"


@pytest.fixture(scope="module")
def corpus(tmp_path_factory):
    out = tmp_path_factory.mktemp("skip") / "corpus"
    convert_to_parts("data/sample.tsv.gz", out, part_rows=20_000, progress=False)
    return out


@pytest.fixture(scope="module")
def whole(corpus):
    return open_dataset(corpus).load()


def _copy(corpus, tmp_path, name="copy"):
    target = tmp_path / name
    shutil.copytree(corpus, target)
    return target


def _damage(target, how: str, index: int, tmp_path) -> None:
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
    elif how == "foreign":  # a part of another dataset, of the same size as the manifest lists
        other = tmp_path / "other"
        if not other.exists():
            convert_to_parts("data/sample.tsv.gz", other, part_rows=20_000, progress=False)
        shutil.copy(other / path.name, path)
    else:
        raise AssertionError(how)


def _without(whole: pl.DataFrame, corpus, indexes) -> pl.DataFrame:
    """The intact frame minus the rows of parts ``indexes`` (by the intact manifest's row counts)."""
    starts = (corpus if isinstance(corpus, PartedDataset) else open_dataset(corpus)).part_starts()
    keep = np.ones(whole.height, dtype=bool)
    for i in indexes:
        keep[starts[i]:starts[i + 1]] = False
    return whole.filter(pl.Series(keep))


REASONS = {"missing": "missing_part", "truncated": "part_size", "duplicated": "duplicated_part",
           "foreign": "foreign_part"}


@pytest.mark.parametrize("how", list(REASONS))
def test_skip_leaves_a_bad_part_out_whole_records_it_and_deletes_nothing(corpus, whole, tmp_path, how):
    target = _copy(corpus, tmp_path)
    _damage(target, how, 2, tmp_path)
    before = sorted((p.name, p.stat().st_size) for p in target.iterdir())
    with pytest.raises(DataFormatError, match=rf"part-000002\.parquet: .*\[rule: {REASONS[how]}\]"):
        PartedDataset(target)
    with pytest.warns(PartsLeftOutWarning) as caught:
        ds = PartedDataset(target, on_error="skip")
    entry = open_dataset(corpus).manifest.parts[2]
    (record,) = ds.left_out
    assert (record.index, record.file, record.reason) == (2, target / "part-000002.parquet", REASONS[how])
    assert (record.rows, record.episodes) == (entry.rows, entry.episodes)
    assert ds.part_indexes == tuple(i for i in range(len(ds.listed.parts)) if i != 2)
    assert ds.rows == ds.listed.rows - entry.rows and ds.episodes == ds.listed.episodes - entry.episodes
    assert [item[2] for item in ds.part_items()] == list(ds.part_indexes)
    text = str(caught[0].message)
    assert "left out 1 of" in text and str(target / "part-000002.parquet") in text
    assert f"{entry.rows:,} of {ds.listed.rows:,} rows" in text and "nothing was deleted" in text
    want = _without(whole, corpus, [2])
    assert ds.load().equals(want)
    frame = ds.load()
    assert frame["end_of_game"].sum() == ds.episodes  # whole episodes only: every kept one ends
    assert sorted((p.name, p.stat().st_size) for p in target.iterdir()) == before  # left in place


def test_load_and_read_report_the_parts_left_out(corpus, whole, tmp_path):
    target = _copy(corpus, tmp_path)
    _damage(target, "missing", 1, tmp_path)
    _damage(target, "truncated", 3, tmp_path)
    with pytest.warns(PartsLeftOutWarning, match="left out 2 of"):
        frame = rewardlab.load(target, on_error="skip")
    assert frame.equals(_without(whole, corpus, [1, 3]))
    with pytest.warns(PartsLeftOutWarning):
        result = read_dataset_folder(target, on_error="skip")
    assert result.frame.equals(frame) and result.skipped.height == 0
    assert [(p.index, p.reason) for p in result.parts_left_out] == [(1, "missing_part"), (3, "part_size")]
    assert result.parts_left_out_counts == {"missing_part": 1, "part_size": 1}
    with pytest.raises(DataFormatError, match="part-000001.parquet"):
        rewardlab.load(target)
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # nothing left out: no warning
        assert read_dataset_folder(corpus, on_error="skip").parts_left_out == ()


def test_a_stray_part_file_is_passed_over_and_recorded(corpus, whole, tmp_path):
    target = _copy(corpus, tmp_path)
    shutil.copy(target / "part-000001.parquet", target / "part-999999.parquet")
    with pytest.raises(DataFormatError, match="does not list"):
        PartedDataset(target)
    with pytest.warns(PartsLeftOutWarning, match="passed over 1 file"):
        ds = PartedDataset(target, on_error="skip")
    assert [(r.index, r.reason, r.file.name) for r in ds.left_out] == [(None, "stray_part", "part-999999.parquet")]
    assert ds.load().equals(whole) and (target / "part-999999.parquet").exists()


def test_skip_applies_to_a_folder_and_is_checked(corpus, tmp_path):
    with pytest.raises(ParameterError, match="on_error"):
        PartedDataset(corpus, on_error="ignore")
    single = tmp_path / "one.parquet"
    rewardlab.convert("data/sample.tsv.gz", single)
    with pytest.raises(ParameterError, match="applies to a dataset folder"):
        rewardlab.load(single, on_error="skip")


@pytest.fixture(scope="module")
def rewards(corpus, tmp_path_factory):
    root = tmp_path_factory.mktemp("skip-rewards")
    base = root / "corpus"
    shutil.copytree(corpus, base)
    out = root / "rewards"
    apply_to_dataset(base, [PLUGIN], out, workers=1)
    return out


def test_a_rewards_folder_and_its_base_leave_out_the_same_parts(rewards, tmp_path, capsys):
    from rewardlab.cli import main

    root = tmp_path / "r"
    shutil.copytree(rewards.parent, root)
    base, out = root / "corpus", root / "rewards"
    intact = open_dataset(out)
    reference = intact.load(columns=[*intact.columns, "end_of_game"])
    _damage(base, "truncated", 1, tmp_path)
    _damage(out, "missing", 3, tmp_path)
    with pytest.warns(PartsLeftOutWarning) as caught:
        ds = PartedDataset(out, on_error="skip")
    assert ds.part_indexes == ds.base.part_indexes == tuple(i for i in range(len(intact)) if i not in (1, 3))
    assert [(r.index, r.reason) for r in ds.left_out] == [(1, "base_part_left_out"), (3, "missing_part")]
    assert [(r.index, r.reason) for r in ds.base.left_out] == [(1, "part_size"), (3, "rewards_part_left_out")]
    text = str(caught[0].message)
    assert str(base / "part-000001.parquet") in text and str(out / "part-000003.parquet") in text
    want = _without(reference, intact, [1, 3])
    got = ds.load(columns=[*intact.columns, "end_of_game"])  # rewards with their base's columns, row for row
    assert got.equals(want)
    # stats on the damaged folder in skip mode equal stats of the kept rows in memory
    kept = tmp_path / "kept.parquet"
    want.select(intact.columns).write_parquet(kept)
    assert main(["stats", str(out)]) == 2
    assert "rewards/part-000003.parquet: part 3 of" in capsys.readouterr().err
    with warnings.catch_warnings():
        warnings.simplefilter("always")  # as outside the test suite, where warnings are not errors
        assert main(["stats", str(out), "--json", "--on-error", "skip", "--workers", "2"]) == 0
    captured = capsys.readouterr()
    skipped = json.loads(captured.out)
    warning_lines = [line for line in captured.err.splitlines() if line]
    assert len(warning_lines) == 1 and warning_lines[0].startswith("rewardlab stats: warning: left out 2 of")
    assert main(["stats", str(kept), "--json"]) == 0
    in_memory = json.loads(capsys.readouterr().out)
    assert skipped["rows"] == in_memory["rows"] == want.height
    assert skipped["rewards"] == in_memory["rewards"]
    assert main(["stats", str(kept), "--on-error", "skip"]) == 2
    assert "`--on-error` applies to a dataset folder" in capsys.readouterr().err


def test_info_on_error_skip_summarises_the_kept_parts(corpus, whole, tmp_path, capsys):
    from rewardlab.cli import main

    target = _copy(corpus, tmp_path)
    _damage(target, "foreign", 4, tmp_path)
    kept = tmp_path / "kept.parquet"
    _without(whole, corpus, [4]).write_parquet(kept)
    assert main(["info", str(target)]) == 2
    assert "part-000004.parquet" in capsys.readouterr().err
    with warnings.catch_warnings():
        warnings.simplefilter("always")  # as outside the test suite, where warnings are not errors
        assert main(["info", str(target), "--json", "--on-error", "skip"]) == 0
    captured = capsys.readouterr()
    assert captured.err.count("\n") == 1 and captured.err.startswith("rewardlab info: warning: left out 1 of")
    assert "foreign_part" in captured.err and "PartsLeftOutWarning" not in captured.err
    assert main(["info", str(kept), "--json"]) == 0
    assert json.loads(captured.out) == json.loads(capsys.readouterr().out)
    assert main(["info", str(target), "--on-error", "skip", "--skipped", str(tmp_path / "s.txt")]) == 2
    assert "`--skipped` applies to input read line by line" in capsys.readouterr().err
