"""The data commands: sample, convert, info (run in-process through rewardlab.cli.main)."""

from __future__ import annotations

import gzip
import json

import polars as pl
import pytest

import rewardlab
from rewardlab.cli import main
from lines import game_lines, gid, write


def test_sample_writes_a_loadable_file_and_refuses_to_overwrite(tmp_path, capsys):
    out = tmp_path / "s.tsv.gz"
    assert main(["sample", "--games", "3", "--seed", "5", "--out", str(out)]) == 0
    assert "3 games" in capsys.readouterr().out
    frame = rewardlab.load_kanachan(out)
    assert frame["game_id"].n_unique() == 3
    before = out.read_bytes()
    assert main(["sample", "--games", "4", "--seed", "5", "--out", str(out)]) == 2
    assert "already exists" in capsys.readouterr().err
    assert out.read_bytes() == before
    assert main(["sample", "--games", "3", "--seed", "5", "--out", str(out), "--overwrite"]) == 0
    assert gzip.decompress(out.read_bytes()) == gzip.decompress(before)  # same seed, same games


def test_convert_and_info(tmp_path, capsys, sample_path):
    out = tmp_path / "d.parquet"
    assert main(["convert", str(sample_path), "--out", str(out)]) == 0
    assert "transitions" in capsys.readouterr().out
    assert main(["info", str(out), "--json"]) == 0
    info = json.loads(capsys.readouterr().out)
    summary = rewardlab.summarize(rewardlab.load_kanachan(sample_path))
    assert info == json.loads(json.dumps(summary.to_dict()))
    assert info["episodes"] == 4 * info["games"]
    assert main(["info", str(sample_path)]) == 0
    text = capsys.readouterr().out
    assert "episodes" in text and "final places 1st: " in text


def test_convert_reports_the_bad_line(tmp_path, capsys):
    lines = game_lines(gid(1))
    lines[2] = lines[2].replace("\t", "\tx", 1)
    src = write(tmp_path / "bad.tsv", lines)
    assert main(["convert", str(src), "--out", str(tmp_path / "d.parquet")]) == 2
    err = capsys.readouterr().err
    assert f"{src}:3: column 1" in err and "[rule: not_integer]" in err
    assert not (tmp_path / "d.parquet").exists()


def test_convert_skip_mode_keeps_skipped_lines(tmp_path, capsys):
    lines = game_lines(gid(1)) + game_lines(gid(2))
    lines[3] = "broken line"
    src = write(tmp_path / "bad.tsv", lines)
    out = tmp_path / "d.parquet"
    assert main(["convert", str(src), "--out", str(out), "--on-error", "skip"]) == 0
    err = capsys.readouterr().err
    side = tmp_path / "d.parquet.skipped.txt"
    assert "column_count: 1" in err and str(side) in err
    kept = side.read_text().splitlines()
    assert "broken line" in kept
    loaded = rewardlab.load_kanachan(out)  # decodes the dataset's array columns
    assert loaded.height + len(kept) == len(lines)
    lost = loaded.filter((pl.col("game_id").cast(pl.String) == gid(1)) & (pl.col("seat") == 0))
    assert lost.height == 0 and len(kept) == 5  # the broken line's episode, whole, and nothing else


def test_bundled_sample_is_what_make_sample_writes():
    """data/sample.tsv.gz is reproducible: the Makefile's command regenerates it line for line."""
    import re

    from conftest import ROOT, SAMPLE
    from rewardlab.domains.mahjong.simulate import iter_kanachan_lines, simulate_games

    command = re.search(r"rewardlab sample --games (\d+) --seed (\d+) --out \$\(SAMPLE\)",
                        (ROOT / "Makefile").read_text())
    games, seed = int(command.group(1)), int(command.group(2))
    with gzip.open(SAMPLE, "rt") as f:
        bundled = f.read().splitlines()
    assert bundled == list(iter_kanachan_lines(simulate_games(games, seed=seed)))


def _steps_parquet(path, *, bad_episode: int | None = 1) -> pl.DataFrame:
    """Three episodes of two steps; ``bad_episode`` repeats its step 0."""
    frame = pl.DataFrame({"episode_id": [0, 0, 1, 1, 2, 2], "t": [0, 1, 0, 1, 0, 1],
                          "reward": [1.0, 0.5, 0.25, 1.0, 0.0, 2.0],
                          "terminated": [False, True, False, True, False, True]})
    if bad_episode is not None:
        frame = frame.with_columns(pl.when(pl.col("episode_id") == bad_episode).then(0).otherwise(pl.col("t"))
                                   .alias("t"))
    frame.write_parquet(path)
    return frame


def test_info_on_a_step_parquet_takes_on_error_and_skipped(tmp_path, capsys):
    src = tmp_path / "x.parquet"
    frame = _steps_parquet(src)
    side = tmp_path / "f.parquet"
    assert main(["info", str(src), "--format", "steps", "--on-error", "skip", "--skipped", str(side),
                 "--json"]) == 0
    out = capsys.readouterr()
    assert json.loads(out.out)["transitions"] == 4 and "step_repeated: 1" in out.err
    assert pl.read_parquet(side).equals(frame.filter(pl.col("episode_id") == 1))


def test_the_default_side_file_of_parquet_input_is_parquet(tmp_path, capsys):
    src = tmp_path / "x.parquet"
    frame = _steps_parquet(src)
    assert main(["info", str(src), "--format", "steps", "--on-error", "skip"]) == 0
    assert str(tmp_path / "x.parquet.skipped.parquet") in capsys.readouterr().err
    assert pl.read_parquet(tmp_path / "x.parquet.skipped.parquet").equals(frame.filter(pl.col("episode_id") == 1))
    out = tmp_path / "d.parquet"
    assert main(["convert", str(src), "--out", str(out), "--format", "steps", "--on-error", "skip"]) == 0
    assert pl.read_parquet(tmp_path / "d.parquet.skipped.parquet").height == 2
    assert not (tmp_path / "d.parquet.skipped.txt").exists()


def test_option_values_true_false_none_are_constants(tmp_path, capsys):
    from rewardlab.core.spec import attached

    src = tmp_path / "x.parquet"
    _steps_parquet(src, bad_episode=None)
    out = tmp_path / "d.parquet"
    assert main(["convert", str(src), "--out", str(out), "--format", "steps", "--option", "reward=False",
                 "--option", "time=none"]) == 0
    spec = attached(rewardlab.load(out))
    assert "reward" in spec.columns and "reward_recorded" not in spec.columns  # kept as a plain column
    capsys.readouterr()
    with pytest.raises(SystemExit):
        main(["info", "--help"])
    assert "true / false / none" in " ".join(capsys.readouterr().out.split())
