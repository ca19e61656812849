"""MJAI logs downstream: detection, the CLI, the ranking tuner and its export work on them unchanged.

The logs are the riichienv games in ``data/mjai/``; ranks are computed here
straight from each log's events (with ``json``), not with rewardlab.
"""

from __future__ import annotations

import gzip
import json
import shutil
from pathlib import Path

import numpy as np
import polars as pl
import pytest

import rewardlab
from rewardlab.cli import main
from rewardlab.sessions.ranking import RankingTuningSession
from rewardlab.sources.kanachan import schema as S
from rewardlab.sources.registry import detect_source

ROOT = Path(__file__).resolve().parents[1]
DATA = ROOT / "data" / "mjai"
LOGS = sorted(p for p in DATA.iterdir() if p.name.endswith((".json", ".json.gz")))


def events(path: Path) -> list[dict]:
    data = path.read_bytes()
    if path.suffix == ".gz":
        data = gzip.decompress(data)
    return [json.loads(line) for line in data.splitlines() if line.strip()]


def ranks_from_log(path: Path) -> list[int]:
    """0-based final ranks: scores replayed from the events, leftover sticks to the top, ties by seat."""
    scores, sticks = None, 0
    for e in events(path):
        if e["type"] == "start_kyoku":
            scores, sticks = list(e["scores"]), e["kyotaku"]
        elif e["type"] == "reach_accepted":
            scores[e["actor"]] -= 1000
            sticks += 1
        elif e["type"] in ("hora", "ryukyoku"):
            scores = [s + d for s, d in zip(scores, e["deltas"])]
            if e["type"] == "hora":
                sticks = 0
    order = sorted(range(4), key=lambda s: (-scores[s], s))
    if sticks:
        scores[order[0]] += 1000 * sticks
    return [order.index(s) for s in range(4)]


@pytest.fixture(scope="module")
def frame():
    return rewardlab.load(DATA, progress=False)


def test_detection_by_content_folder_and_gzip():
    assert detect_source([DATA]).name == "mjai"
    assert detect_source([DATA / "tonpusen_193.json.gz"]).name == "mjai"
    assert detect_source([DATA / "hanchan_15.json"]).name == "mjai"


def test_the_frame_is_kanachan_and_ranks_agree_with_the_logs(frame):
    assert rewardlab.core.spec.attached(frame).name == "kanachan"
    assert frame.schema == pl.Schema(S.FRAME_SCHEMA)
    ends = frame.filter("end_of_game").sort("game", "seat")
    for path in LOGS:
        mine = ends.filter(pl.col("source_file").cast(pl.String) == str(path))
        scores = np.stack(mine["results"].to_numpy())[:, 4:]
        got = rewardlab.ranks_from_scores(scores, mine["seat"].to_numpy()).tolist()
        assert got == ranks_from_log(path), path.name


def test_ranking_tuner_and_export_work_on_logs(frame, tmp_path):
    session = RankingTuningSession(frame, preset="top", constants="none")
    r = session.results
    assert r.rank_counts.tolist() == [len(LOGS)] * 4  # one player per place in each game
    session.set_rank_value(0, 2.0)
    result = session.export(tmp_path / "top.py")
    assert result.ok and result.roundtrip.identical and result.roundtrip.report.ok
    applied = rewardlab.apply_plugins(frame, tmp_path / "top.py", progress=False)
    reward = applied.filter("end_of_game").sort("game", "seat")
    first = np.array([rank == 0 for path in LOGS for rank in ranks_from_log(path)])
    rewards = reward.select(pl.col("^reward_.*$")).to_series().to_numpy()
    # games are numbered in load order: the folder's logs sorted, as LOGS
    assert np.all(rewards[first] == 2.0) and np.all(rewards[~first] != 2.0)


def test_cli_info_shows_padding_and_convert_keeps_the_frame(frame, tmp_path, capsys):
    assert main(["info", str(DATA)]) == 0
    text = capsys.readouterr().out
    assert "  progression padding, all 2165: an MJAI log has no kanachan progression encoding" in text.splitlines()
    assert "  candidates padding, all 546: a log records the choice, not the legal options" in text.splitlines()
    assert text.splitlines()[0].split() == ["games", str(len(LOGS))]
    out = tmp_path / "logs.parquet"
    assert main(["convert", str(DATA), "--format", "mjai", "--out", str(out), "--option", "room=3",
                 "--option", "grades=1,2,3,4"]) == 0
    capsys.readouterr()
    converted = rewardlab.load(out)
    assert converted["room"].unique().to_list() == [3]
    assert converted["grades"][0].to_list() == [1, 2, 3, 4]
    assert converted.drop("room", "grades", "sparse").equals(frame.drop("room", "grades", "sparse"))
    assert main(["info", str(DATA), "--json"]) == 0
    info = json.loads(capsys.readouterr().out)
    assert info["games"] == len(LOGS) and info["roles"]["action"].startswith("padding")


def test_cli_skip_quarantines_a_game_and_keeps_its_bytes(tmp_path, capsys):
    folder = tmp_path / "logs"
    folder.mkdir()
    for p in LOGS[:2]:
        shutil.copy(p, folder / p.name)
    bad = folder / "zz_bad.json"
    lines = gzip.decompress(LOGS[0].read_bytes()).splitlines(keepends=True) if LOGS[0].suffix == ".gz" \
        else LOGS[0].read_bytes().splitlines(keepends=True)
    lines = [b'{"type":"start_game","id":7}\n', *lines[1:]]
    lines[10] = lines[10].replace(b'"type":"', b'"type":"x')
    bad.write_bytes(b"".join(lines))
    out = tmp_path / "out.parquet"
    assert main(["convert", str(folder), "--out", str(out)]) == 2
    assert f"{bad}:11" in capsys.readouterr().err
    assert main(["convert", str(folder), "--out", str(out), "--on-error", "skip"]) == 0
    assert (tmp_path / "out.parquet.skipped.txt").read_bytes() == bad.read_bytes()
    kept = rewardlab.load(out)
    assert kept["game_id"].n_unique() == 2
