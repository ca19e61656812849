"""Regression tests for bugs found in review (each failed before its fix)."""

from __future__ import annotations

import numpy as np
import pytest

from rewardlab.contracts.kanachan.batching import TENSORDICT_KEYS, FrameArrays
from rewardlab.cli import main


# --- batching: a slice with stop < start is empty, as in Python ---------------------------


@pytest.mark.parametrize("rows", [slice(10, 3), slice(5, 0), slice(-1, 2)])
def test_backwards_slice_gives_an_empty_batch(small_frame, rows):
    td = FrameArrays(small_frame).tensordict(rows)
    assert td.batch_size == (0,)
    for key in TENSORDICT_KEYS:
        assert td[key].shape[0] == 0


# --- CLI info --on-error skip: the side file can be replaced, as the message says -----------


def _broken_copy(sample_path, tmp_path):
    import gzip

    with gzip.open(sample_path, "rt") as f:
        lines = [next(f) for _ in range(400)]
    lines[4] = lines[4].rstrip("\n") + "\t1\n"  # 11 columns
    path = tmp_path / "broken.tsv"
    path.write_text("".join(lines))
    return path


def test_info_skip_can_run_twice_with_overwrite(sample_path, tmp_path, capsys):
    path = _broken_copy(sample_path, tmp_path)
    assert main(["info", str(path), "--on-error", "skip"]) == 0
    side = tmp_path / "broken.tsv.skipped.txt"
    first = side.read_text()
    assert main(["info", str(path), "--on-error", "skip"]) == 2
    assert "--overwrite" in capsys.readouterr().err
    assert main(["info", str(path), "--on-error", "skip", "--overwrite"]) == 0
    assert side.read_text() == first


# --- CLI export: refuse an existing output before reading the dataset --------------------


def test_export_refuses_existing_output_before_reading_data(tmp_path, capsys, monkeypatch):
    out = tmp_path / "plugin.py"
    out.write_text("# mine\n")

    def boom(path):  # reading the dataset is pointless when the output cannot be written
        raise AssertionError("the dataset was read before the output was checked")

    monkeypatch.setattr("rewardlab.domains.mahjong.families.prepare_frame", boom)
    assert main(["export", "ranking", "--preset", "top", "--normalize-from", str(tmp_path / "d.parquet"),
                 "--out", str(out)]) == 2
    assert "already exists" in capsys.readouterr().err
    assert out.read_text() == "# mine\n"
    assert main(["export", "points", "--preset", "raw", "--normalize-from", str(tmp_path / "d.parquet"),
                 "--out", str(out)]) == 2
    assert out.read_text() == "# mine\n"


# --- CLI plot: the message names the rewards actually drawn ------------------------------


def test_plot_message_names_only_what_is_drawn(small_frame, tmp_path, capsys):
    frame = small_frame.with_columns(
        reward_a=np.linspace(-1, 1, small_frame.height), done_a=small_frame["end_of_game"],
        reward_b=np.linspace(1, -1, small_frame.height) ** 2, done_b=small_frame["end_of_game"],
        reward_c=np.zeros(small_frame.height), done_c=small_frame["end_of_game"])
    data = tmp_path / "r.parquet"
    frame.select("game_id", "seat", "step", "reward_a", "done_a", "reward_b", "done_b", "reward_c",
                 "done_c").write_parquet(data)
    capsys.readouterr()
    assert main(["plot", str(data), "--kind", "normalization", "--out", str(tmp_path / "n.png")]) == 0
    assert capsys.readouterr().out.strip().endswith("figure of a to " + str(tmp_path / "n.png"))
    assert main(["plot", str(data), "--kind", "scatter", "--out", str(tmp_path / "s.png")]) == 0
    assert capsys.readouterr().out.strip().endswith("figure of a, b to " + str(tmp_path / "s.png"))


# --- analysis on several Parquet files: different columns give a clear error, not a traceback


def test_parquet_files_with_different_columns_are_refused_clearly(tmp_path, capsys):
    import polars as pl

    from rewardlab.core.errors import ParameterError
    from rewardlab.analysis.stats import reward_stats

    a = tmp_path / "a.parquet"
    b = tmp_path / "b.parquet"
    keys = {"game_id": ["g", "g"], "seat": [0, 0], "step": [0, 1]}
    pl.DataFrame(keys | {"reward_x": [0.0, 1.0], "done_x": [False, True]}).write_parquet(a)
    pl.DataFrame(keys | {"reward_y": [0.0, 2.0], "done_y": [False, True]}).write_parquet(b)
    with pytest.raises(ParameterError, match=r"`data` should be Parquet files with the same columns"):
        reward_stats([a, b], "x")
    assert main(["stats", str(a), str(b)]) == 2
    err = capsys.readouterr().err
    assert "b.parquet" in err and "--plugin" in err
    # shards of one table still work
    c = tmp_path / "c.parquet"
    pl.DataFrame(keys | {"reward_x": [3.0, 0.0], "done_x": [False, True]}).write_parquet(c)
    assert reward_stats([a, c], "x", quantiles=()).count == 4
