"""The data commands: sample, convert, info (run in-process through rewardlab.cli.main)."""

from __future__ import annotations

import gzip
import json

import polars as pl

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
    assert "episodes" in text and "final ranks" in text


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
