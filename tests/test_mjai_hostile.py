"""Hostile MJAI logs (issue 22): who pays a win, end_game ranks, the order of rounds, scores beyond the
frame's 32 bits, empty and compressed files, JSON the scanner must refuse, and a seeded fuzz of the
shipped logs.

Every expectation is derived here from the JSON lines (``json``), from riichienv playing the games, or
from a plain-Python replay of the rules (:func:`replay`), never from rewardlab's scanner or tracker:

* a win's deltas are checked against the win (only the discarder pays a ron, every other player a
  tsumo with the dealer's share larger, the winner gains what they pay plus the sticks; a seat that fed
  a big three dragons / big four winds / four kans may pay too: riichienv's own pao games load);
* ``end_game``'s ``ranks`` must be the final scores' ranks; the rank rule equals the domains' rule;
* a round must be one the round before allows (honba, deal);
* empty logs are refused, compressed bodies under plain names are named as such, and a file left out
  in skip mode leaves no blank line in the side file;
* mutated logs load cleanly (and then agree with the replay) or fail naming file, line and rule; in
  skip mode no partial game is kept and every kept game is byte for byte a game of the input.
"""

from __future__ import annotations

import bz2
import functools
import gzip
import hashlib
import json
import lzma
import random
import sys
import warnings

import numpy as np
import polars as pl
import pytest

import rewardlab
from conftest import ROOT
from rewardlab.cli import main
from rewardlab.core.errors import DataFormatError, SkippedLinesWarning
from rewardlab.domains.mahjong.rules import ranks_from_scores
from rewardlab.sources.mjai import tiles as T
from rewardlab.sources.mjai.ranking import ranks_of, top_seat
from rewardlab.sources.mjai.reader import read_mjai
from rewardlab.sources.mjai.scanner import CODES as SCAN_CODES, scan
from rewardlab.sources.registry import detect_source

DATA = ROOT / "data" / "mjai"
GAMES = json.loads((DATA / "games.meta").read_text())
NAMES = sorted(GAMES)
STICK = 1000
DECISIONS = {"dahai", "reach", "chi", "pon", "daiminkan", "ankan", "kakan", "hora"}
DRAGONS, WINDS = {"P", "F", "C"}, {"E", "S", "W", "N"}
#: Rules of a file left out whole (no line): its bytes stay in the file.
FILE_RULES = {"unreadable", "looks_compressed"}
#: Games riichienv plays with a liable seat (pao): (game_mode, seed) -> what the win is.
PAO_GAMES = {(1, 1955): "ron split between the discarder and the seat that fed the third dragon pon",
             (2, 3629): "tsumo paid whole by the seat that fed the third dragon pon"}
#: Columns a load of the same game gives equal whatever the file.
SAME = ["seat", "step", "round", "chang", "ju", "ben", "sparse", "numeric", "round_summary", "results",
        "end_of_round", "end_of_game", "source_line"]


# ------------------------------------------------------------------------------------------------
# Helpers
# ------------------------------------------------------------------------------------------------


def raw_text(name: str) -> bytes:
    data = (DATA / name).read_bytes()
    return gzip.decompress(data) if name.endswith(".gz") else data


def events(name: str) -> list[dict]:
    return [json.loads(line) for line in raw_text(name).split(b"\n")[:-1]]


def dumps(evs) -> bytes:
    return "".join(json.dumps(e, separators=(",", ":")) + "\n" for e in evs).encode()


def write_log(path, evs):
    path.write_bytes(dumps(evs))
    return path


def read(paths, **kw):
    return read_mjai(paths, progress=False, **kw)


def deltas_only(evs: list[dict]) -> list[dict]:
    """The dialect of the issue: scores on the first start_kyoku only, deltas on every result."""
    out, first = [], True
    for e in evs:
        e = dict(e)
        if e["type"] == "start_kyoku":
            if not first:
                e.pop("scores")
            first = False
        out.append(e)
    return out


def expect_error(path, rule, line, *fragments, where=None, **kw) -> DataFormatError:
    with pytest.raises(DataFormatError) as info:
        read(where or path, **kw)
    err = info.value
    assert (err.rule, err.line, err.path) == (rule, line, str(path)), str(err)
    assert str(err).startswith(f"{path}:{line}: " if line is not None else f"{path}: "), str(err)
    assert f"[rule: {rule}]" in str(err)
    for fragment in fragments:
        assert fragment in str(err), (fragment, str(err))
    return err


@functools.lru_cache(maxsize=None)
def _riichienv_log(game_mode: int, seed: int) -> tuple[str, tuple[int, ...], tuple[int, ...]]:
    sys.path.insert(0, str(ROOT / "scripts"))
    try:
        import make_mjai_logs
    finally:
        sys.path.remove(str(ROOT / "scripts"))
    env = make_mjai_logs.play(game_mode, seed)
    return json.dumps(env.mjai_log), tuple(env.scores()), tuple(env.ranks())


def riichienv_game(game_mode: int, seed: int) -> tuple[list[dict], list[int], list[int]]:
    """A game riichienv plays with the data script's agents: its events, final scores and 1-based ranks."""
    text, scores, ranks = _riichienv_log(game_mode, seed)
    return json.loads(text), list(scores), list(ranks)


def rank_list(scores) -> list[int]:
    """0-based ranks by the plain rule: higher score first, equal scores the lower seat first."""
    order = sorted(range(4), key=lambda s: (-scores[s], s))
    return [order.index(s) for s in range(4)]


# ------------------------------------------------------------------------------------------------
# The rules replayed in plain Python (the fuzz's oracle, and a check of the tests' own mutations)
# ------------------------------------------------------------------------------------------------


def payment_problem(e: dict, deltas, oya: int, sticks: int, liable: set) -> str | None:
    """The payment rule (tiles.PAYMENT_RULES name) a win breaks, or None."""
    a, tg, d = e["actor"], e["target"], deltas
    others = [s for s in range(4) if s != a]
    if a != tg:
        for s in others:
            if s != tg and d[s] != 0 and not (s in liable and d[s] < 0):
                return "bystander_pays"
        if d[tg] >= 0:
            return "discarder_free"
    elif liable:
        for s in others:
            if d[s] > 0 or (s in liable and d[s] == 0):
                return "payer_free"
    else:
        if any(d[s] >= 0 for s in others):
            return "payer_free"
        plain = [s for s in others if s != oya]
        if len({d[s] for s in plain}) > 1:
            return "unequal_shares"
        if a != oya and -d[oya] <= -d[plain[0]]:
            return "dealer_share"
    if d[a] != -sum(d[s] for s in others) + STICK * sticks:
        return "winner_gain"
    return None


def replay(evs: list[dict]) -> dict:
    """One game replayed from its events: final scores, decisions, and the rules of this issue it breaks
    (payments, ranks, round order) as (event index, rule)."""
    scores, sticks, oya, problems, decisions = None, 0, None, [], 0
    prev = None  # (chang, ju, honba, dealer won, someone won) of the round before
    for k, e in enumerate(evs):
        t = e["type"]
        decisions += t in DECISIONS
        if t == "start_kyoku":
            chang, ju, ben = "ESWN".index(e["bakaze"]), e["kyoku"] - 1, e["honba"]
            if prev is not None:
                pc, pj, pb, dealer_won, won = prev
                same = (chang, ju) == (pc, pj)
                nxt = (chang, ju) == ((pc, pj + 1) if pj < 3 else (pc + 1, 0))
                ok = ((same and ben == pb + 1) if dealer_won else (nxt and ben == 0) if won
                      else ((same or nxt) and ben == pb + 1))
                if not ok:
                    problems.append((k, "round_order"))
            if e.get("scores") is not None:
                scores = list(e["scores"])
            sticks, oya = e["kyotaku"], e["oya"]
            dragons, winds, kans = [0] * 4, [0] * 4, [0] * 4
            liable = [set() for _ in range(4)]
            prev = [chang, ju, ben, False, False]
        elif t == "reach_accepted":
            scores[e["actor"]] -= STICK
            sticks += 1
        elif t in ("pon", "daiminkan", "ankan", "kakan"):
            a = e["actor"]
            tile = e["pai"] if t != "ankan" else e["consumed"][0]
            if t != "kakan":
                if tile in DRAGONS:
                    dragons[a] += 1
                    if dragons[a] == 3 and t != "ankan":
                        liable[a].add(e["target"])
                elif tile in WINDS:
                    winds[a] += 1
                    if winds[a] == 4 and t != "ankan":
                        liable[a].add(e["target"])
            if t != "pon":
                kans[a] += 1
                if kans[a] == 4 and t == "daiminkan":
                    liable[a].add(e["target"])
        elif t in ("hora", "ryukyoku"):
            d = e["deltas"] if e.get("deltas") is not None else [x - y for x, y in zip(e["scores"], scores)]
            if t == "hora":
                rule = payment_problem(e, d, oya, sticks, liable[e["actor"]])
                if rule:
                    problems.append((k, rule))
                sticks = 0
                prev[4] = True
                prev[3] = prev[3] or e["actor"] == oya
            scores = [x + y for x, y in zip(scores, d)]
        elif t == "end_game":
            final = list(scores)
            if sticks:
                final[rank_list(scores).index(0)] += STICK * sticks
            if e.get("scores") is not None:
                final = list(e["scores"])
            ranks = e.get("ranks")
            if ranks is not None:
                base = 0 if sorted(ranks) == [0, 1, 2, 3] else 1
                if [r + base for r in rank_list(final)] != ranks:
                    problems.append((k, "ranks_mismatch"))
            return {"final": final, "decisions": decisions, "problems": problems}
    raise AssertionError("no end_game")


def moved(evs, k, amount, source, sink):
    """A copy of ``evs`` whose event ``k`` moves ``amount`` of its deltas from seat ``source`` to ``sink``."""
    out = [dict(e) for e in evs]
    d = list(out[k]["deltas"])
    d[source] += amount
    d[sink] -= amount
    out[k]["deltas"] = d
    return out


def wins(evs, *, tsumo: bool | None = None):
    """(index, actor, target, oya of its round, sticks it takes) of each hora."""
    out, oya, sticks = [], None, 0
    for k, e in enumerate(evs):
        if e["type"] == "start_kyoku":
            oya, sticks = e["oya"], e["kyotaku"]
        elif e["type"] == "reach_accepted":
            sticks += 1
        elif e["type"] == "hora":
            if tsumo is None or (e["actor"] == e["target"]) == tsumo:
                out.append((k, e["actor"], e["target"], oya, sticks))
            sticks = 0
    return out


def test_the_shipped_logs_and_riichienv_pao_games_keep_the_rules_of_the_replay():
    for name in NAMES:
        got = replay(events(name))
        assert got["problems"] == [], name
        assert [r + 1 for r in rank_list(got["final"])] == GAMES[name]["ranks"]
        assert got["final"] == GAMES[name]["scores"], name
    for mode, seed in PAO_GAMES:
        evs, scores, ranks = riichienv_game(mode, seed)
        got = replay(evs)
        assert got["problems"] == [] and got["final"] == scores, (mode, seed)


# ------------------------------------------------------------------------------------------------
# 1. Who pays a win
# ------------------------------------------------------------------------------------------------


@pytest.mark.parametrize("name", NAMES)
def test_a_ron_payment_moved_to_a_bystander_is_an_error(tmp_path, name):
    """The issue's case: 8,000 (or what the discarder paid) of a ron moved to a bystander, in the
    deltas-without-scores dialect, used to load and change the final scores and ranks."""
    evs = deltas_only(events(name))
    rons = wins(evs, tsumo=False)
    assert rons
    for k, a, tg, _, _ in rons:
        bystander = next(s for s in range(4) if s not in (a, tg))
        amount = min(8000, -evs[k]["deltas"][tg])
        bad = moved(evs, k, amount, tg, bystander)
        assert replay(bad)["problems"][0] == (k, "bystander_pays")
        path = write_log(tmp_path / "moved.json", bad)
        expect_error(path, "wrong_payment", k + 1, f"in a ron only the discarder (seat {tg}) pays",
                     f"seat {bystander}, neither the winner nor the discarder, has a delta of {-amount}",
                     "payment rule bystander_pays")
    # skip mode: that game is quarantined whole, byte for byte; a good game after it in the file is kept
    good = raw_text("tonpusen_196.json") if name != "tonpusen_196.json" else raw_text("hanchan_15.json")
    text = dumps(bad)
    path = tmp_path / "two.json"
    path.write_bytes(text + good)
    side = tmp_path / "side.jsonl"
    with pytest.warns(SkippedLinesWarning, match="wrong_payment: 1"):
        result = read(path, on_error="skip", skipped_path=side)
    assert result.skipped["raw"].to_list() == text.split(b"\n")[:-1]
    assert side.read_bytes() == text
    (tmp_path / "good.json").write_bytes(good)
    alone = read(tmp_path / "good.json").frame
    n = len(bad)
    assert result.frame.select(SAME).with_columns(pl.col("source_line") - n).equals(alone.select(SAME))


def _mutations(evs):
    """One mutation per payment rule: (rule, event index, mutated events, message fragment)."""
    out = []
    k, a, tg, oya, sticks = wins(evs, tsumo=False)[0]
    d = evs[k]["deltas"]
    out.append(("discarder_free", k, moved(evs, k, -d[tg], tg, a), f"seat {tg} discarded the tile"))
    bad = [dict(e) for e in evs]
    bad[k]["deltas"] = [x + (100 if s == a else 0) for s, x in enumerate(d)]
    out.append(("winner_gain", k, bad, f"the winner (seat {a}) gains {d[a] + 100}"))
    k, a, _, oya, sticks = next(w for w in wins(evs, tsumo=True) if w[1] != w[3])  # a non-dealer's tsumo
    d = evs[k]["deltas"]
    x, y = (s for s in range(4) if s not in (a, oya))
    out.append(("payer_free", k, moved(evs, k, -d[x], x, y), f"in a tsumo every other player pays, but seat {x}"))
    out.append(("unequal_shares", k, moved(evs, k, 100, x, y), f"seats {y} and {x} pay"))
    bad = [dict(e) for e in evs]
    share = d[x]
    bad[k]["deltas"] = [share if s == oya else v + (d[oya] - share if s == a else 0) for s, v in enumerate(d)]
    out.append(("dealer_share", k, bad, f"the dealer (seat {oya}) pays {-share}, no more than seat"))
    return out


def test_every_payment_rule_and_new_game_rule_has_a_test():
    tested = {"bystander_pays", "discarder_free", "winner_gain", "payer_free", "unequal_shares", "dealer_share"}
    assert set(T.PAYMENT_RULES) == tested
    assert {"wrong_payment", "ranks_mismatch", "round_order"} <= set(T.RULE_CODES)


@pytest.mark.parametrize("rule", ["discarder_free", "winner_gain", "payer_free", "unequal_shares", "dealer_share"])
def test_each_payment_rule_is_an_error_naming_file_line_and_rule(tmp_path, rule):
    evs = deltas_only(events("tonpusen_245.json"))  # rons and non-dealer tsumos with honba and sticks
    case = next(m for m in _mutations(evs) if m[0] == rule)
    _, k, bad, fragment = case
    assert replay(bad)["problems"][0] == (k, rule)
    expect_error(write_log(tmp_path / "bad.json", bad), "wrong_payment", k + 1, fragment, f"payment rule {rule}",
                 f"the win's deltas: {bad[k]['deltas']}")


def test_a_double_ron_pays_each_winner_from_the_discarder_and_the_first_takes_the_sticks(tmp_path):
    evs = deltas_only(events("hanchan_102.json.gz"))
    k = next(i for i in range(1, len(evs)) if evs[i]["type"] == evs[i - 1]["type"] == "hora")
    first, second = evs[k - 1], evs[k]
    assert first["target"] == second["target"] and sum(first["deltas"]) > 0 == sum(second["deltas"])
    # the second winner's payment moved to a bystander
    tg = second["target"]
    bystander = next(s for s in range(4) if s not in (first["actor"], second["actor"], tg))
    expect_error(write_log(tmp_path / "a.json", moved(evs, k, 500, tg, bystander)), "wrong_payment", k + 1,
                 "bystander_pays")
    # the sticks taken by the second winner instead of the first
    sticks = sum(first["deltas"])
    bad = [dict(e) for e in evs]
    bad[k - 1]["deltas"] = [x - (sticks if s == first["actor"] else 0) for s, x in enumerate(first["deltas"])]
    bad[k]["deltas"] = [x + (sticks if s == second["actor"] else 0) for s, x in enumerate(second["deltas"])]
    assert replay(bad)["problems"][0] == (k - 1, "winner_gain")
    expect_error(write_log(tmp_path / "b.json", bad), "wrong_payment", k, "the table's sticks go to the round's "
                 "first winner", "winner_gain")


def test_payments_given_as_scores_are_checked_too(tmp_path):
    """Engines that write scores and no deltas: the deltas are the scores' change, checked the same way."""
    evs = events("hanchan_228.json")
    scores = None
    out = []
    for e in evs:
        e = dict(e)
        if e["type"] == "start_kyoku":
            scores = list(e["scores"])
        elif e["type"] == "reach_accepted":
            scores[e["actor"]] -= STICK
        elif e["type"] in ("hora", "ryukyoku"):
            scores = [x + y for x, y in zip(scores, e.pop("deltas"))]
            e["scores"] = list(scores)
        out.append(e)
    read(write_log(tmp_path / "good.json", out))
    k, a, tg, _, _ = wins(out, tsumo=False)[0]
    bystander = next(s for s in range(4) if s not in (a, tg))
    out[k] = dict(out[k], scores=[x + (2000 if s == tg else -2000 if s == bystander else 0)
                                  for s, x in enumerate(out[k]["scores"])])
    expect_error(write_log(tmp_path / "bad.json", out), "wrong_payment", k + 1, "bystander_pays")


@pytest.mark.parametrize("mode,seed", list(PAO_GAMES), ids=[f"mode{m}-seed{s}" for m, s in PAO_GAMES])
def test_riichienv_pao_wins_load_and_only_the_liable_seat_may_share_the_payment(tmp_path, mode, seed):
    evs, scores, ranks = riichienv_game(mode, seed)
    k, a, tg, oya, _ = next(w for w in wins(evs) if sum(1 for x in evs[w[0]]["deltas"] if x < 0)
                             != (1 if w[1] != w[2] else 3))
    liable = next(s for s in range(4) if s not in (a, tg) and evs[k]["deltas"][s] < 0)
    path = write_log(tmp_path / "pao.json", [*evs[:-1], {**evs[-1], "ranks": ranks}])
    frame = read(path).frame
    ends = frame.filter("end_of_game").sort("seat")
    assert [r[4:] for r in ends["results"].to_list()] == [scores] * 4  # the engine's scores, ranks as given
    other = next(s for s in range(4) if s not in (a, liable) and (s != tg or a == tg))
    bad = moved(evs, k, -evs[k]["deltas"][liable], liable, other)
    rule = "bystander_pays" if a != tg else "payer_free"
    fragment = "neither the winner nor the discarder" if a != tg else f"seat {liable} fed the winner's big three"
    expect_error(write_log(tmp_path / "bad.json", bad), "wrong_payment", k + 1, rule, fragment)


# ------------------------------------------------------------------------------------------------
# 2. end_game ranks, and the rank rule
# ------------------------------------------------------------------------------------------------


def with_ranks(evs, ranks):
    return [*evs[:-1], {**evs[-1], "ranks": ranks}]


@pytest.mark.parametrize("name", ["hanchan_228.json", "tonpusen_193.json.gz"])  # a tie; sticks left to the top
def test_end_game_ranks_must_be_the_final_scores_ranks(tmp_path, name):
    evs = events(name)
    ranks = GAMES[name]["ranks"]  # the engine's, 1-based
    plain = read(DATA / name).frame
    for given in (ranks, [r - 1 for r in ranks]):  # 1 = top, or 0 = top
        frame = read(write_log(tmp_path / "ok.json", with_ranks(evs, given))).frame
        assert frame.select(SAME).equals(plain.select(SAME))
    end = len(evs)
    swapped = list(ranks)
    i, j = ranks.index(1), ranks.index(2)
    swapped[i], swapped[j] = 2, 1
    s0 = min(i, j)
    expect_error(write_log(tmp_path / "swapped.json", with_ranks(evs, swapped)), "ranks_mismatch", end,
                 f"end_game gives seat {s0} rank {swapped[s0]}, but the final scores {GAMES[name]['scores']} rank it "
                 f"{ranks[s0]} (1 = top")
    if name == "hanchan_228.json":  # seats 2 and 3 tie: sharing the place is not the rule
        tied = [ranks[0], ranks[1], min(ranks[2:]), min(ranks[2:])]
        expect_error(write_log(tmp_path / "tied.json", with_ranks(evs, tied)), "ranks_mismatch", end,
                     "of equal scores the lower seat")
    for junk in ("first", [1, 2, 3], [[1], 2, 3, 4]):
        expect_error(write_log(tmp_path / "junk.json", with_ranks(evs, junk)), "bad_value", end,
                     '"ranks" has a value of the wrong shape (4 integers, 1 = top)')
    # on other events a "ranks" key is not read: any JSON value is skipped
    odd = [dict(e, ranks="n/a") if e["type"] == "start_kyoku" else e for e in evs]
    assert read(write_log(tmp_path / "odd.json", odd)).frame.select(SAME).equals(plain.select(SAME))
    with pytest.warns(SkippedLinesWarning, match="ranks_mismatch: 1"):
        result = read(tmp_path / "swapped.json", on_error="skip")
    assert result.frame.height == 0 and result.skipped.height == len(evs)


def test_the_rank_rule_is_the_domains_rule():
    rng = np.random.default_rng(22)
    scores = rng.choice([-5000, 0, 25000, 30000, 30000, 41000], size=(3000, 4)).astype(np.int64)
    for row in scores:
        want = ranks_from_scores(np.repeat(row[None, :], 4, axis=0), np.arange(4))
        assert ranks_of(row).tolist() == want.tolist() == rank_list(row.tolist()), row
        assert int(top_seat(row)) == int(np.argmin(want))


# ------------------------------------------------------------------------------------------------
# 3. The order of rounds, and scores beyond 32 bits
# ------------------------------------------------------------------------------------------------


def test_a_round_that_cannot_follow_the_one_before_is_an_error(tmp_path):
    evs = events("tonpusen_196.json")
    starts = [k for k, e in enumerate(evs) if e["type"] == "start_kyoku"]
    rounds = [(evs[k]["bakaze"], evs[k]["kyoku"], evs[k]["honba"]) for k in starts]
    # round 2 follows a win by the dealer (E1 -> E1 honba 1); round 5 a non-dealer's win
    k = starts[1]
    bad = [dict(e) for e in evs]
    bad[k]["honba"] += 1
    expect_error(write_log(tmp_path / "honba.json", bad), "round_order", k + 1,
                 f"this round is E1 honba {rounds[1][2] + 1}, but after the dealer's win in E1 honba 0 the dealer "
                 "keeps it: E1 honba 1 comes next")
    k = next(starts[i] for i in range(1, len(starts)) if rounds[i][2] == 0)
    prev = rounds[starts.index(k) - 1]
    bad = [dict(e) for e in evs]
    bad[k]["kyoku"] += 1
    bad[k]["oya"] = (bad[k]["oya"] + 1) % 4
    expect_error(write_log(tmp_path / "skip.json", bad), "round_order", k + 1,
                 f"after a non-dealer's win in E{prev[1]} honba {prev[2]} the deal passes on: E{prev[1] + 1} honba 0")
    assert replay(bad)["problems"][0] == (k, "round_order")


def test_scores_beyond_32_bits_are_an_error_not_wrapped(tmp_path):
    """A ron paying 2**31 keeps every payment rule, but the frame's score columns are 32-bit."""
    evs = events("hanchan_15.json")
    k, a, tg, _, _ = wins(evs, tsumo=False)[0]
    bad = moved(evs, k, 2 ** 31, a, tg)
    assert replay(bad)["problems"] == []
    expect_error(write_log(tmp_path / "big.json", bad), "out_of_range", k + 1, "reaches",
                 "within +-2^30: its score columns are 32-bit")
    first = [dict(e) for e in evs]
    first[1]["scores"] = [2 ** 40, 0, 0, 0]
    expect_error(write_log(tmp_path / "start.json", first), "out_of_range", 2, f"reaches {2 ** 40}")


# ------------------------------------------------------------------------------------------------
# 4. Empty logs and compressed bodies
# ------------------------------------------------------------------------------------------------

EMPTY = {"empty": b"", "blank_lines": b"\n\n\n", "bom": b"\xef\xbb\xbf", "bom_and_blanks": b"\xef\xbb\xbf\r\n \t\n",
         "spaces": b"   "}


@pytest.mark.parametrize("packed", [False, True], ids=["plain", "gz"])
@pytest.mark.parametrize("on_error", ["raise", "skip"])
@pytest.mark.parametrize("content", list(EMPTY.values()), ids=list(EMPTY))
def test_an_empty_log_is_refused_naming_the_file(tmp_path, content, on_error, packed):
    path = tmp_path / ("empty.json.gz" if packed else "empty.json")
    path.write_bytes(gzip.compress(content) if packed else content)
    expect_error(path, "empty_file", None, "the file has no events", on_error=on_error)
    # also among good logs in a folder, in either mode
    (tmp_path / "a_good.json").write_bytes(raw_text("tonpusen_196.json"))
    expect_error(path, "empty_file", None, where=tmp_path, on_error=on_error)


def test_cli_convert_of_an_empty_log_fails_and_writes_nothing(tmp_path, capsys):
    path = tmp_path / "empty.jsonl"
    path.write_bytes(b"\xef\xbb\xbf\n")
    out = tmp_path / "out.parquet"
    assert main(["convert", str(path), "--format", "mjai", "--out", str(out)]) != 0
    err = capsys.readouterr().err
    assert str(path) in err and "empty_file" in err
    assert not out.exists()


COMPRESSED = {"gzip": (gzip.compress, "rename it to log.jsonl.gz"), "bz2": (bz2.compress, "rename it to log.jsonl.bz2"),
              "xz": (lzma.compress, "decompress it (xz)")}


@pytest.mark.parametrize("kind", list(COMPRESSED))
def test_a_compressed_body_under_a_plain_name_says_so(tmp_path, kind):
    pack, todo = COMPRESSED[kind]
    path = tmp_path / "log.jsonl"
    path.write_bytes(pack(raw_text("tonpusen_196.json")))
    err = expect_error(path, "looks_compressed", None, f"looks compressed: it begins with the bytes of a {kind} "
                       "stream", todo)
    assert str(err).isascii() and str(err).isprintable()  # no binary echoed


@pytest.mark.parametrize("kind", ["gzip", "bz2"])
def test_format_detection_sees_through_a_compressed_body_and_the_load_says_rename(tmp_path, kind):
    """Detection used to hand a gzip body named .jsonl to the step-table reader ("no episode column")."""
    pack = COMPRESSED[kind][0]
    path = tmp_path / "log.jsonl"
    path.write_bytes(pack(raw_text("tonpusen_196.json")))
    assert detect_source([path]).name == "mjai"
    with pytest.raises(DataFormatError) as info:
        rewardlab.load(path, progress=False)
    assert info.value.rule == "looks_compressed" and f"rename it to log.jsonl{'.gz' if kind == 'gzip' else '.bz2'}" \
        in str(info.value)


def test_a_plain_log_named_gz_says_to_rename_it(tmp_path):
    path = tmp_path / "log.json.gz"
    path.write_bytes(raw_text("tonpusen_196.json"))
    expect_error(path, "unreadable", None, "Its bytes are plain text (JSON lines), not gzip: rename it without .gz")
    path = tmp_path / "log2.json.gz"
    path.write_bytes(bz2.compress(raw_text("tonpusen_196.json")))
    expect_error(path, "unreadable", None, "It is bz2, not gzip: rename it to end in .bz2 instead")


def test_skip_mode_leaves_unreadable_files_out_whole_without_a_blank_line(tmp_path):
    folder = tmp_path / "logs"
    folder.mkdir()
    (folder / "a_good.json").write_bytes(raw_text("tonpusen_196.json"))
    evs = events("hanchan_15.json")
    k, a, tg, _, _ = wins(evs, tsumo=False)[0]
    broken = dumps(moved(evs, k, 1000, tg, next(s for s in range(4) if s not in (a, tg))))
    (folder / "b_broken.json").write_bytes(broken)
    damaged = gzip.compress(raw_text("hanchan_228.json"))[:200]
    (folder / "c_damaged.json.gz").write_bytes(damaged)
    packed = gzip.compress(raw_text("tonpusen_245.json"))
    (folder / "d_packed.jsonl").write_bytes(packed)
    side = tmp_path / "side.jsonl"
    with pytest.warns(SkippedLinesWarning) as record:
        result = read(folder, on_error="skip", skipped_path=side)
    message = str(record[0].message)
    assert "quarantined 1 game" in message and "wrong_payment: 1" in message, message
    assert "left out 2 files" in message and str(folder / "c_damaged.json.gz") in message, message
    assert str(folder / "d_packed.jsonl") in message
    # the side file holds the quarantined game's lines, byte for byte, and no blank line
    assert side.read_bytes() == broken
    files = result.skipped.filter(pl.col("line").is_null())
    assert files["file"].to_list() == [str(folder / "c_damaged.json.gz"), str(folder / "d_packed.jsonl")]
    assert files["reason"].to_list() == ["unreadable", "looks_compressed"]
    assert files["raw"].to_list() == [None, None] and files["text"].to_list() == [None, None]
    for row in files.iter_rows(named=True):
        assert f"its bytes stay in {row['file']}, not in the side file" in row["message"]
    # the files' bytes are untouched; the good game is kept as loading it alone gives
    assert (folder / "c_damaged.json.gz").read_bytes() == damaged and (folder / "d_packed.jsonl").read_bytes() == packed
    assert result.frame.select(SAME).equals(read(DATA / "tonpusen_196.json").frame.select(SAME))
    assert result.skip_counts == {"wrong_payment": len(broken.split(b"\n")) - 1, "looks_compressed": 1,
                                  "unreadable": 1}


def test_raise_mode_reports_the_first_problem_in_file_order(tmp_path):
    """A broken game in the first file comes before an unreadable or empty file after it (same batch);
    the unreadable file used to be reported first, whatever the order."""
    lines = raw_text("hanchan_15.json").split(b"\n")
    lines[5] = lines[5][:-1]  # line 6 cut: not one JSON object
    (tmp_path / "a.json").write_bytes(b"\n".join(lines))
    (tmp_path / "b.json.gz").write_bytes(b"not gzip")
    (tmp_path / "c.json").write_bytes(b"")
    expect_error(tmp_path / "a.json", "not_json", 6, where=tmp_path)
    (tmp_path / "a.json").write_bytes(raw_text("hanchan_15.json"))
    expect_error(tmp_path / "b.json.gz", "unreadable", None, where=tmp_path)
    (tmp_path / "b.json.gz").write_bytes(gzip.compress(raw_text("tonpusen_196.json")))
    expect_error(tmp_path / "c.json", "empty_file", None, where=tmp_path)


# ------------------------------------------------------------------------------------------------
# 5. JSON the scanner must refuse, and repeated keys
# ------------------------------------------------------------------------------------------------

NOT_JSON = [
    b'{"type":"end_game","x":"\\q"}',          # not one of JSON's escapes
    b'{"type":"end_game","x":"\\u12"}',        # \u and fewer than four hex digits
    b'{"type":"end_game","x":"a\\',            # a backslash at the end
    b'{"type":"end_game","x":"\xff"}',          # not UTF-8
    b'{"type":"end_game","x":"\xc3"}',          # a cut UTF-8 sequence
    b'{"type":"end_game","x":"\xed\xa0\x80"}',  # an encoded UTF-16 surrogate
    b'{"type":"end_game","x":"\xc0\xaf"}',      # an overlong encoding
]
GOOD_STRINGS = [b'{"type":"end_game","x":"\\u00e9\\n\\"\\/"}', '{"type":"end_game","x":"東 é ☃ 😀"}'.encode()]


def scan_lines(lines: list[bytes]):
    text = b"".join(line + b"\n" for line in lines)
    buf = np.frombuffer(text, dtype=np.uint8)
    ends = np.flatnonzero(buf == 10)
    return scan(buf, np.r_[0, ends[:-1] + 1].astype(np.int64), ends)


def test_the_scanner_refuses_strings_json_refuses():
    for line in NOT_JSON:
        with pytest.raises(ValueError):
            json.loads(line.decode("utf-8"))  # strict UTF-8, as the scanner
    ev = scan_lines(NOT_JSON + GOOD_STRINGS)
    assert ev.code.tolist() == [SCAN_CODES["not_json"]] * len(NOT_JSON) + [0] * len(GOOD_STRINGS)
    assert ev.type.tolist()[-2:] == [T.EVENT_TYPES["end_game"]] * 2


def _json_object(line: bytes) -> bool:
    try:
        return isinstance(json.loads(line.decode("utf-8")), dict)
    except ValueError:
        return False


def test_the_scanner_agrees_with_json_on_random_strings():
    """Strings of random escapes and bytes in a key the scanner skips (and in one it reads): the line is
    an error exactly when json.loads (strict UTF-8) refuses it; lines of every length, so the special
    bytes fall anywhere in the scanner's 8-byte words."""
    rng = random.Random(2022)
    pool = [b"a", b"Z", b" ", b"\\", b'\\"', b"\\n", b"\\u00e9", b"\\uD83D", b"\\u12g4", b"\\x", b"\\/",
            b"\xc3\xa9", b"\xe6\x9d\xb1", b"\xf0\x9f\x98\x80", b"\xc3", b"\xff", b"\x80", b"\xed\xa0\x80", b"\x7f",
            b"\x01", b"\t", b'"', b"}", b","]
    lines = []
    for _ in range(3000):
        text = b"".join(rng.choice(pool) for _ in range(rng.randrange(0, 6)))
        key = rng.choice([b"x", b"names"])
        lines.append(b'{"type":"start_game","' + key + b'":"' + text + b'"}' + b" " * rng.randrange(8))
    ev = scan_lines(lines)
    for row, line in enumerate(lines):
        want = _json_object(line)
        assert (ev.code[row] == 0) == want, (line, int(ev.code[row]))
        if want:
            assert ev.type[row] == T.EVENT_TYPES["start_game"]
    assert 0 < sum(map(_json_object, lines)) < len(lines)


def test_a_repeated_key_replaces_the_value_as_in_json():
    lines = [b'{"type":"chi","actor":1,"target":0,"pai":"3m","consumed":["1m","2m","4m"],"consumed":["1m","2m"]}',
             b'{"type":"hora","actor":1,"target":0,"deltas":[1,2,3,4],"deltas":null}',
             b'{"type":"end_game","ranks":[1,2,3,4],"ranks":null}']
    ev = scan_lines(lines)
    assert ev.consumed[0].tolist() == [T.KIND_OF_NAME["1m"], T.KIND_OF_NAME["2m"], -1, -1]
    assert not ev.has_deltas[1] and ev.deltas[1].tolist() == [0, 0, 0, 0]
    assert ev.has_ranks[2] == 0 and ev.code.tolist() == [0, 0, 0]
    assert [json.loads(line).get("deltas") for line in lines[1:2]] == [None]


# ------------------------------------------------------------------------------------------------
# 6. The fuzz: mutated lines of the shipped logs
# ------------------------------------------------------------------------------------------------

TILE_NAMES = [name for name in T.KIND_OF_NAME] + ["0m", "5zr", ""]
EVENT_NAMES = list(T.EVENT_TYPES) + ["nukidora", ""]


def _mutate_event(rng: random.Random, evs: list) -> str:
    """Mutate one event (or line) of ``evs`` in place; returns what was done."""
    kind = rng.choice(["deltas", "deltas", "scores", "actor", "tile", "type", "field", "round", "lines", "ranks"])
    k = rng.randrange(len(evs))
    if kind == "deltas":
        ks = [i for i, e in enumerate(evs) if isinstance(e, dict) and e.get("type") in ("hora", "ryukyoku")
              and isinstance(e.get("deltas"), list)]
        if ks:
            k = rng.choice(ks)
            d = list(evs[k]["deltas"])
            x, y = rng.sample(range(4), 2)
            amount = rng.choice([100, 300, 1000, 8000, -d[x], 2 ** 31, rng.randrange(1, 50000)])
            op = rng.randrange(4)
            if op == 0:
                d[x] += amount
                d[y] -= amount
            elif op == 1:
                d[x] += amount
            elif op == 2:
                rng.shuffle(d)
            else:
                d[x], d[y] = d[y], d[x]
            evs[k] = dict(evs[k], deltas=d)
    elif kind == "scores":
        ks = [i for i, e in enumerate(evs) if isinstance(e, dict) and e.get("type") in ("start_kyoku", "end_game")]
        k = rng.choice(ks)
        scores = list(evs[k].get("scores") or [25000] * 4)
        x, y = rng.sample(range(4), 2)
        amount = rng.choice([100, 1000, 8000, 2 ** 40])
        scores[x] += amount
        if rng.random() < 0.5:
            scores[y] -= amount
        evs[k] = dict(evs[k], scores=scores)
    elif kind == "actor" and isinstance(evs[k], dict):
        key = rng.choice(["actor", "target", "oya"])
        evs[k] = dict(evs[k], **{key: rng.choice([0, 1, 2, 3, 4, -1, "1"])})
    elif kind == "tile" and isinstance(evs[k], dict):
        e = dict(evs[k])
        if "consumed" in e and rng.random() < 0.5:
            c = list(e["consumed"])
            c[rng.randrange(len(c))] = rng.choice(TILE_NAMES)
            e["consumed"] = c
        elif "tehais" in e:
            hands = [list(h) for h in e["tehais"]]
            hands[rng.randrange(4)][rng.randrange(13)] = rng.choice(TILE_NAMES)
            e["tehais"] = hands
        else:
            e[rng.choice(["pai", "dora_marker"])] = rng.choice(TILE_NAMES)
        evs[k] = e
    elif kind == "type" and isinstance(evs[k], dict):
        evs[k] = dict(evs[k], type=rng.choice(EVENT_NAMES))
    elif kind == "field" and isinstance(evs[k], dict) and len(evs[k]) > 1:
        e = dict(evs[k])
        del e[rng.choice([key for key in e if key != "type"] or ["type"])]
        evs[k] = e
    elif kind == "round":
        ks = [i for i, e in enumerate(evs) if isinstance(e, dict) and e.get("type") == "start_kyoku"]
        k = rng.choice(ks)
        key = rng.choice(["honba", "kyoku", "kyotaku", "bakaze", "oya"])
        value = {"honba": rng.choice([0, 1, 2, 256]), "kyoku": rng.choice([1, 2, 3, 4, 5]),
                 "kyotaku": rng.choice([0, 1, 5, 2 ** 31 - 1]), "bakaze": rng.choice("ESWN"),
                 "oya": rng.choice([0, 1, 2, 3])}[key]
        evs[k] = dict(evs[k], **{key: value})
        if key == "kyoku" and rng.random() < 0.7:  # the dealer to match: only the order can tell
            evs[k]["oya"] = (value - 1) % 4
    elif kind == "lines":
        op = rng.randrange(3)
        if op == 0:
            del evs[k]
        elif op == 1:
            evs.insert(k, evs[k])
        elif k + 1 < len(evs):
            evs[k], evs[k + 1] = evs[k + 1], evs[k]
    elif kind == "ranks":
        ranks = rng.choice([[1, 2, 3, 4], [4, 3, 2, 1], [0, 1, 2, 3], [1, 1, 3, 4], "x", None])
        evs[-1] = dict(evs[-1], ranks=ranks) if isinstance(evs[-1], dict) else evs[-1]
    return kind


def _mutate_bytes(rng: random.Random, text: bytes) -> bytes:
    op = rng.randrange(5)
    if not text:
        return text
    at = rng.randrange(len(text))
    if op == 0:  # truncation
        return text[:at]
    if op == 1:  # a byte replaced
        return text[:at] + bytes([rng.randrange(256)]) + text[at + 1:]
    if op == 2:  # a byte inserted
        return text[:at] + bytes([rng.choice([0, 10, 13, 34, 44, 92, 123, 125, 0xC3, 0xFF, rng.randrange(256)])]) \
            + text[at:]
    if op == 3:  # a byte deleted
        return text[:at] + text[at + 1:]
    return text.replace(b"\n", b"\r\n")  # CRLF: loads the same


def make_case(seed: int, tmp_path):
    """A mutated log (file), its decompressed text, and what was done."""
    rng = random.Random(seed)
    name = rng.choice(NAMES)
    evs = events(name)
    if rng.random() < 0.5:
        evs = deltas_only(evs)
    if rng.random() < 0.3:
        evs = with_ranks(evs, GAMES[name]["ranks"])
    done = [name]
    for _ in range(rng.choice([1, 1, 2, 3])):
        done.append(_mutate_event(rng, evs))
    text = b"".join((json.dumps(e, separators=(",", ":")).encode() if isinstance(e, dict) else e) + b"\n"
                    for e in evs)
    if rng.random() < 0.35:
        text = _mutate_bytes(rng, text)
        done.append("bytes")
    if rng.random() < 0.4:  # a second game after it, good, from another log
        text += raw_text(rng.choice([n for n in NAMES if n != name]))
        done.append("second game")
    packed = rng.random() < 0.2
    data = gzip.compress(text, mtime=0) if packed else text
    plain_name = False
    if packed and rng.random() < 0.4:  # the compressed file itself: cut short, or under a plain name
        if rng.random() < 0.7:
            data = data[:rng.randrange(len(data))]
            done.append("gzip cut")
        else:
            plain_name = True
            done.append("gzip named plain")
    path = tmp_path / (f"case{seed}.json.gz" if packed and not plain_name else f"case{seed}.json")
    path.write_bytes(data)
    return path, text, done


def _lines(text: bytes) -> list[bytes]:
    if text and not text.endswith(b"\n"):
        text += b"\n"
    return text.split(b"\n")[:-1]


def _body(line: bytes) -> bytes:
    """A line as the scanner reads it: without surrounding whitespace and a leading byte order mark."""
    return line.strip(b" \t\r").removeprefix(b"\xef\xbb\xbf").strip(b" \t\r")


def _type(line: bytes):
    try:
        e = json.loads(_body(line))
    except ValueError:
        return None
    return e.get("type") if isinstance(e, dict) else None


def _spans(lines: list[bytes]) -> dict[str, tuple[int, int]]:
    """Every (start_game line, end_game line) span of the input by its bytes' hash (a game_id), 0-based."""
    types = [_type(line) for line in lines]
    out = {}
    for s, t in enumerate(types):
        if t != "start_game":
            continue
        for e in range(s + 1, len(lines)):
            if types[e] == "end_game":
                digest = hashlib.blake2b(b"".join(x + b"\n" for x in lines[s:e + 1]), digest_size=16).hexdigest()
                out[digest] = (s, e)
            if types[e] == "start_game":
                break
    return out


def check_kept(frame: pl.DataFrame, lines: list[bytes], where: str) -> set[int]:
    """Each kept game is a whole game of the input (start_game to end_game, by its game_id: the hash of its
    bytes) whose lines are JSON, that keeps the replayed rules, with its rows and final scores; returns
    the kept line numbers (1-based)."""
    spans = _spans(lines)
    kept = set()
    for gid, part in frame.partition_by("game_id", as_dict=True).items():
        gid = gid[0] if isinstance(gid, tuple) else gid
        assert gid in spans, where
        s, e = spans[gid]
        kept.update(range(s + 1, e + 2))
        for line in lines[s:e + 1]:
            if _body(line):  # the scanner took it: strict JSON (UTF-8) as well
                assert isinstance(json.loads(_body(line).decode("utf-8")), dict), (where, line)
        evs = [json.loads(_body(line)) for line in lines[s:e + 1] if _body(line)]
        got = replay(evs)
        assert got["problems"] == [], (where, got["problems"])
        assert part.height == got["decisions"], where
        final = part.filter("end_of_game")["results"].to_list()
        assert final and all(r[4:] == got["final"] for r in final), (where, final, got["final"])
        assert part["source_line"].min() > s and part["source_line"].max() <= e + 1, where
    return kept


def check_case(seed: int, tmp_path) -> str:
    """Load a fuzz case in raise and skip mode; every outcome must be one the rules allow."""
    path, text, done = make_case(seed, tmp_path)
    where = f"seed {seed}: {done}"
    lines = _lines(text)
    try:
        frame = read(path).frame
        raised = None
    except DataFormatError as err:
        raised = err
        assert err.path == str(path), where
        assert f"[rule: {err.rule}]" in str(err), where
        if err.rule in FILE_RULES or err.rule == "empty_file":
            assert err.line is None, where
        else:
            assert err.line is not None and 1 <= err.line <= max(len(lines), 1), (where, str(err))
            assert str(err).startswith(f"{path}:{err.line}: "), where
    except Exception as exc:  # noqa: BLE001 - the point: anything else is a bug
        raise AssertionError(f"{where}: {type(exc).__name__}: {exc}") from exc
    else:
        kept = check_kept(frame, lines, where)
        assert all(number in kept for number, line in enumerate(lines, 1) if _body(line)), where
    side = tmp_path / f"side{seed}.txt"
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", SkippedLinesWarning)
            result = read(path, on_error="skip", skipped_path=side)
    except DataFormatError as err:
        assert err.rule == "empty_file" and raised is not None and raised.rule == "empty_file", (where, str(err))
        return "empty"
    except Exception as exc:  # noqa: BLE001
        raise AssertionError(f"{where} (skip): {type(exc).__name__}: {exc}") from exc
    skipped = result.skipped
    if raised is None:
        assert skipped.height == 0 and result.frame.equals(frame), where
        return "clean"
    assert skipped.height > 0, where
    whole = skipped.filter(pl.col("line").is_null())
    if whole.height:  # the file left out whole: nothing kept, nothing in the side file
        assert whole["reason"].to_list()[0] in FILE_RULES and whole["raw"].to_list() == [None], where
        assert result.frame.height == 0 and side.read_bytes() == b"", where
        return "file"
    # quarantined lines are the input's, byte for byte, and the side file holds exactly them
    for number, raw in zip(skipped["line"].to_list(), skipped["raw"].to_list()):
        assert raw == lines[number - 1], (where, number)
    assert side.read_bytes() == b"".join(raw + b"\n" for raw in skipped["raw"].to_list()), where
    # kept games are whole games of the input (no partial game), and no kept line was also quarantined
    quarantined = set(skipped["line"].to_list())
    kept_lines = check_kept(result.frame, lines, where)
    assert not kept_lines & quarantined, where
    # every line that holds something is kept or quarantined: nothing is dropped silently
    for number, line in enumerate(lines, 1):
        if _body(line):
            assert number in kept_lines or number in quarantined, (where, number)
    return "skipped"


def test_fuzzed_logs_load_cleanly_or_fail_naming_file_and_line(tmp_path):
    outcomes = [check_case(seed, tmp_path) for seed in range(40)]
    assert {"clean", "skipped"} <= set(outcomes)


@pytest.mark.long_fuzz
def test_fuzzed_logs_long_run(tmp_path):
    outcomes = [check_case(seed, tmp_path) for seed in range(1000, 3000)]
    assert {"clean", "skipped", "file"} <= set(outcomes)
