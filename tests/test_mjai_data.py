"""The MJAI logs shipped in data/mjai/ (riichienv games, see data/mjai/README.md) are whole and add up.

Checked straight from the JSON lines, without rewardlab's reader: every log is
one game of four players from ``start_game`` to ``end_game``; replaying the
scores round by round (``start_kyoku.scores``, minus 1000 for each
``reach_accepted``, plus the ``deltas`` of each ``hora`` / ``ryukyoku``; the
riichi sticks still on the table at the end go to the top player) gives the
next round's ``start_kyoku.scores`` and ``kyotaku`` and, at the end, the engine's
own final ``scores()`` and ``ranks()`` recorded in ``games.meta``.
"""

from __future__ import annotations

import collections
import copy
import gzip
import json
import subprocess
import sys

import orjson
import pytest

from conftest import ROOT

DATA = ROOT / "data" / "mjai"
GAMES = json.loads((DATA / "games.meta").read_text())
STICK = 1000


def read_log(path) -> list[dict]:
    """One dict per line; the text must be complete lines (``\\n`` after each, none empty)."""
    raw = gzip.decompress(path.read_bytes()) if path.suffix == ".gz" else path.read_bytes()
    assert raw.endswith(b"\n"), f"{path.name}: last line has no line end"
    return [orjson.loads(line) for line in raw.split(b"\n")[:-1]]


def ranks_of(scores: list[int]) -> list[int]:
    """1-based ranks, ties broken by seat (the lower seat ranks higher)."""
    order = sorted(range(len(scores)), key=lambda seat: (-scores[seat], seat))
    return [order.index(seat) + 1 for seat in range(len(scores))]


def replay(events: list[dict]) -> tuple[list[int], list[str]]:
    """Final scores computed from the log, and what disagrees with the log on the way there."""
    problems, scores, sticks = [], None, 0
    for line, e in enumerate(events, 1):
        if e["type"] == "start_kyoku":
            if scores is not None and (e["scores"] != scores or e["kyotaku"] != sticks):
                problems.append(f"line {line}: start_kyoku gives {e['scores']} and {e['kyotaku']} sticks, "
                                f"the previous round ended with {scores} and {sticks}")
            scores, sticks = list(e["scores"]), e["kyotaku"]
        elif e["type"] == "reach_accepted":
            scores[e["actor"]] -= STICK
            sticks += 1
        elif e["type"] in ("hora", "ryukyoku"):
            scores = [s + d for s, d in zip(scores, e["deltas"])]
            if e["type"] == "hora" and sticks:  # the first winner of the round takes the sticks
                if sum(e["deltas"]) != sticks * STICK:
                    problems.append(f"line {line}: hora deltas sum to {sum(e['deltas'])}, "
                                    f"not the {sticks} sticks on the table")
                sticks = 0
            elif sum(e["deltas"]) != 0:
                problems.append(f"line {line}: {e['type']} deltas sum to {sum(e['deltas'])}, not 0")
    top = ranks_of(scores).index(1)
    scores[top] += sticks * STICK  # leftover sticks: riichienv gives them to the top player at the end
    return scores, problems


def logs():
    return [pytest.param(name, id=name) for name in GAMES]


def test_games_json_lists_every_shipped_log():
    shipped = {p.name for p in DATA.iterdir() if p.name.endswith((".json", ".json.gz"))} - {"games.meta"}
    assert set(GAMES) == shipped
    assert len(GAMES) == 6
    assert collections.Counter(g["game_mode_name"] for g in GAMES.values()) == {"hanchan": 3, "tonpusen": 3}
    assert sum(name.endswith(".gz") for name in GAMES) == 2
    assert len({g["seed"] for g in GAMES.values()}) == 6


@pytest.mark.parametrize("name", logs())
def test_log_is_one_four_player_game(name):
    events = read_log(DATA / name)
    info = GAMES[name]
    assert events[0] == {"type": "start_game"} and events[-1] == {"type": "end_game"}
    assert [e["type"] for e in events].count("start_game") == 1
    assert [e["type"] for e in events].count("end_game") == 1
    assert info["engine"] == "riichienv" and info["engine_version"] == "0.4.11"
    for e in events:
        if e["type"] == "start_kyoku":
            assert len(e["scores"]) == 4 and len(e["tehais"]) == 4
            assert all(len(hand) == 13 for hand in e["tehais"])
        assert e.get("actor", 0) in range(4) and e.get("target", 0) in range(4)
    assert dict(collections.Counter(e["type"] for e in events)) == info["events"]
    assert info["rounds"] == info["events"]["start_kyoku"] and info["lines"] == len(events)


@pytest.mark.parametrize("name", logs())
def test_scores_and_ranks_from_the_log_match_the_engine(name):
    scores, problems = replay(read_log(DATA / name))
    assert problems == []
    assert scores == GAMES[name]["scores"]
    assert ranks_of(scores) == GAMES[name]["ranks"]


@pytest.mark.parametrize("name", logs())
def test_not_degenerate(name):
    discards = [e for e in read_log(DATA / name) if e["type"] == "dahai"]
    share = sum(e["tsumogiri"] for e in discards) / len(discards)
    assert share == pytest.approx(GAMES[name]["tsumogiri_share"], abs=1e-4)
    assert share < 0.6


def test_logs_show_what_the_readme_promises():
    events = [e for name in GAMES for e in read_log(DATA / name)]
    kinds = {e["type"] for e in events}
    assert kinds >= {"reach", "reach_accepted", "pon", "chi", "ankan", "kakan", "daiminkan", "dora", "ryukyoku"}
    horas = [e for e in events if e["type"] == "hora"]
    assert any(e.get("tsumo") for e in horas) and any(e["actor"] != e["target"] for e in horas)
    assert any(a["type"] == b["type"] == "hora" for a, b in zip(events, events[1:]))  # a double ron
    assert any(e["type"] == "start_kyoku" and e["kyotaku"] > 0 for e in events)  # sticks carried over
    assert any(min(g["scores"]) < 0 for g in GAMES.values())  # a game ended by tobi
    assert any(len(set(g["scores"])) < 4 for g in GAMES.values())  # a tie, broken by seat


def test_replay_catches_a_wrong_score():
    events = read_log(DATA / "tonpusen_196.json")
    results = [i for i, e in enumerate(events) if e["type"] in ("hora", "ryukyoku")]
    first, last = copy.deepcopy(events), copy.deepcopy(events)
    first[results[0]]["deltas"][0] += 100  # the next round's start no longer follows
    last[results[-1]]["deltas"][0] += 100  # the final scores no longer match the engine's
    assert any(f"line {results[0] + 1}: " in p and "deltas sum to" in p for p in replay(first)[1])
    assert any("start_kyoku gives" in p and "the previous round ended with" in p for p in replay(first)[1])
    scores, problems = replay(last)
    assert any(f"line {results[-1] + 1}: " in p for p in problems)
    assert scores != GAMES["tonpusen_196.json"]["scores"]


def test_ranks_break_ties_by_seat():
    assert ranks_of([30000, 25000, 25000, 20000]) == [1, 2, 3, 4]
    assert ranks_of([20000, 30000, 20000, 30000]) == [3, 1, 4, 2]


def test_script_reproduces_shipped_logs_byte_for_byte(tmp_path):
    names = ["tonpusen_196.json", "tonpusen_193.json.gz"]  # a plain and a gzipped one (gzip mtime 0)
    command = [sys.executable, str(ROOT / "scripts" / "make_mjai_logs.py"), "--out", str(tmp_path)]
    for name in names:
        command += ["--only", name]
    run = subprocess.run(command, capture_output=True, text=True, timeout=120)
    assert run.returncode == 0, run.stderr
    for name in names:
        assert (tmp_path / name).read_bytes() == (DATA / name).read_bytes(), name
    assert json.loads((tmp_path / "games.meta").read_text()) == {name: GAMES[name] for name in names}
    again = subprocess.run(command, capture_output=True, text=True, timeout=120)
    assert again.returncode == 1 and "nothing written" in again.stderr and "already exists" in again.stderr


def test_script_refuses_degenerate_games(tmp_path, monkeypatch, capsys):
    sys.path.insert(0, str(ROOT / "scripts"))
    try:
        import make_mjai_logs
    finally:
        sys.path.remove(str(ROOT / "scripts"))
    monkeypatch.setattr(make_mjai_logs, "MAX_TSUMOGIRI_SHARE", 0.25)  # tonpusen_196 has 0.2884
    assert make_mjai_logs.main(["--only", "tonpusen_196.json", "--out", str(tmp_path)]) == 1
    assert "nothing written: in tonpusen_196.json more than 25% of the discards are the drawn tile" \
        in capsys.readouterr().err
    assert list(tmp_path.iterdir()) == []
