"""The MJAI reader (rewardlab.sources.mjai) against the shipped riichienv logs in data/mjai/.

Every expectation here is derived in the test, straight from the JSON lines
(``json.loads``) or from riichienv replaying them, never from rewardlab's own
scanner or tracker:

* the compiled scanner gives, line by line, what ``json.loads`` reads;
* each row's hand (sparse tile ids plus the drawn tile) is the hand riichienv
  holds at that decision, and the round / seat / draws / dora ids are the log's;
* rows, round and game ends, results and ranks follow the log and the engine's
  final scores (``games.meta``); the shipped ranking plug-ins reward the ranks
  the log gives;
* other engines' dialects (scores after each event, scores without deltas,
  end_game scores) load to the same frame, and wrong scores are errors;
* each rule of a broken log raises ``DataFormatError`` naming file, line and
  rule, and skip mode quarantines whole games byte for byte;
* the options land in the frame.
"""

from __future__ import annotations

import collections
import gzip
import json
import shutil
import warnings

import numpy as np
import polars as pl
import pytest
import riichienv

from conftest import PLUGINS_DIR, ROOT
from rewardlab.core.errors import DataFormatError, OutputExistsError, ParameterError, SkippedLinesWarning
from rewardlab.domains.mahjong.rules import ranks_from_scores
from rewardlab.plugins import apply_plugins, load_plugin
from rewardlab.sources.kanachan import schema as S
from rewardlab.sources.mjai import tiles as T
from rewardlab.sources.mjai.reader import load_mjai, read_mjai
from rewardlab.sources.mjai.scanner import CODES as SCAN_CODES, scan
from rewardlab.sources.mjai.tracker import CODES

DATA = ROOT / "data" / "mjai"
GAMES = json.loads((DATA / "games.meta").read_text())
NAMES = sorted(GAMES)
STICK = 1000
DECISIONS = ("dahai", "reach", "chi", "pon", "daiminkan", "ankan", "kakan", "hora")
PAD = S.NUM_TYPES_OF_SPARSE_FEATURES
#: Columns a load of the same game gives equal whatever the file (not the game index, file or id).
SAME = ["seat", "step", "round", "chang", "ju", "ben", "room", "game_length", "grades", "sparse", "numeric",
        "round_summary", "results", "end_of_round", "end_of_game", "source_line"]


# ------------------------------------------------------------------------------------------------
# Helpers: the logs as text and as dicts
# ------------------------------------------------------------------------------------------------


def raw_text(name: str) -> bytes:
    data = (DATA / name).read_bytes()
    return gzip.decompress(data) if name.endswith(".gz") else data


def events(name: str) -> list[dict]:
    return [json.loads(line) for line in raw_text(name).split(b"\n")[:-1]]


def dumps(evs) -> str:
    """Events (dicts, or ready strings) as compact JSON lines."""
    return "".join((e if isinstance(e, str) else json.dumps(e, separators=(",", ":"))) + "\n" for e in evs)


def write_log(path, evs):
    path.write_text(dumps(evs))
    return path


def read(paths, **kw):
    return read_mjai(paths, progress=False, **kw)


def ranks_of(scores) -> list[int]:
    """0-based ranks, ties broken by seat (the lower seat ranks higher)."""
    order = sorted(range(4), key=lambda s: (-scores[s], s))
    return [order.index(s) for s in range(4)]


def replay_scores(evs: list[dict]):
    """Scores after each line (list per line, None before the first round), sticks left, and the
    final scores with the leftover sticks given to the top player: from the log alone."""
    after, scores, sticks = [], None, 0
    for e in evs:
        t = e["type"]
        if t == "start_kyoku":
            scores, sticks = list(e["scores"]), e["kyotaku"]
        elif t == "reach_accepted":
            scores = list(scores)
            scores[e["actor"]] -= STICK
            sticks += 1
        elif t in ("hora", "ryukyoku"):
            scores = [s + d for s, d in zip(scores, e["deltas"])]
            if t == "hora":
                sticks = 0
        after.append(None if scores is None else list(scores))
    final = list(scores)
    final[ranks_of(scores).index(0)] += sticks * STICK
    return after, sticks, final


def kind_of_engine_tile(t: int) -> int:
    """riichienv's tile id (136-id, red fives at copy 0) as the 37-kind code."""
    base = t // 4
    if base >= 27:
        return 30 + base - 27
    suit, number = divmod(base, 9)
    return 10 * suit if number == 4 and t % 4 == 0 else 10 * suit + number + 1


# ------------------------------------------------------------------------------------------------
# Fixtures: each shipped log loaded alone, once
# ------------------------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def frames() -> dict[str, pl.DataFrame]:
    return {name: read(DATA / name).frame for name in NAMES}


@pytest.fixture(scope="module")
def folder_frame() -> pl.DataFrame:
    return read(DATA).frame


# ------------------------------------------------------------------------------------------------
# 1. The scanner reads what json.loads reads
# ------------------------------------------------------------------------------------------------


def line_bounds(text: bytes):
    buf = np.frombuffer(text, dtype=np.uint8)
    ends = np.flatnonzero(buf == 10)
    starts = np.r_[0, ends[:-1] + 1].astype(np.int64)
    return buf, starts, ends


def scan_text(text: bytes):
    if not text.endswith(b"\n"):
        text += b"\n"
    return scan(*line_bounds(text))


def expected_scan(e: dict) -> dict:
    """What the scanner should hold for the object ``e`` (json.loads'), field by field."""
    kind = T.KIND_OF_NAME
    consumed = [kind[p] for p in e.get("consumed", [])] + [-1] * (4 - len(e.get("consumed", [])))
    tehais = np.full((4, 14), -1, dtype=np.int64)
    for s, hand in enumerate(e.get("tehais", [])):
        tehais[s, :len(hand)] = [kind[p] for p in hand]
    return {
        "type": T.EVENT_TYPES[e["type"]],
        "actor": e.get("actor", -1), "target": e.get("target", -1),
        "pai": kind[e["pai"]] if "pai" in e else -1,
        "tsumogiri": int(e["tsumogiri"]) if "tsumogiri" in e else -1,
        "bakaze": T.WINDS[e["bakaze"]] if "bakaze" in e else -1,
        "oya": e.get("oya", -1),
        "dora": kind[e["dora_marker"]] if "dora_marker" in e else -1,
        "kyoku": e.get("kyoku", -(2 ** 31)), "honba": e.get("honba", -(2 ** 31)),
        "kyotaku": e.get("kyotaku", -(2 ** 31)),
        "consumed": consumed,
        "has_scores": e.get("scores") is not None, "has_deltas": e.get("deltas") is not None,
        "scores": e.get("scores") or [0, 0, 0, 0], "deltas": e.get("deltas") or [0, 0, 0, 0],
        "tenpais": [int(x) for x in e["tenpais"]] if "tenpais" in e else [-1] * 4,
        "tehais": tehais,
        "code": 0,
    }


def assert_scanned(ev, row: int, e: dict, where: str):
    for field, want in expected_scan(e).items():
        got = getattr(ev, field)[row]
        assert np.array_equal(np.asarray(got), np.asarray(want)), f"{where}: {field} is {got}, json says {want}"


@pytest.mark.parametrize("name", NAMES)
def test_scanner_reads_every_shipped_line_as_json_does(name):
    text = raw_text(name)
    ev = scan_text(text)
    lines = text.split(b"\n")[:-1]
    assert ev.n == len(lines) == GAMES[name]["lines"]
    for row, line in enumerate(lines):
        assert_scanned(ev, row, json.loads(line), f"{name}:{row + 1}")
    # the event counts the engine recorded
    counts = collections.Counter(T.EVENT_NAMES[int(t)] for t in ev.type)
    assert counts == GAMES[name]["events"]


#: Extra keys of every JSON kind the scanner must skip, including keys named like known fields
#: inside nested values, strings with escaped quotes, backslashes and brackets, and unicode.
EXTRAS = {
    "meta": {"type": "dahai", "pai": "xx", "scores": "no", "list": [1, [2, [3, {"actor": 9}]], {}]},
    "quote": 'he said "}{][" and \\ left, "type":"tsumo"',
    "ends_in_backslash": "C:\\",
    "unicode": "東風戦 \u00e9\u2603",
    "number": -1.5e3, "int": 12345678901234567890, "t": True, "f": False, "z": None,
    "empty": [], "empty_obj": {}, "nested": [[[["]"]]], {"}": "{"}],
    "yakus": [["riichi", 1], ["dora", 2]], "ura_markers": ["1m", "E"],
}


def _variants(e: dict) -> list[bytes]:
    """The same event written several ways, extra keys placed first, in the middle and last."""
    keys = list(e)
    mixed = {}
    for k, v in list(EXTRAS.items())[:5]:
        mixed[k] = v
    for k in keys[: len(keys) // 2]:
        mixed[k] = e[k]
    for k, v in list(EXTRAS.items())[5:]:
        mixed[k] = v
    for k in keys[len(keys) // 2:]:
        mixed[k] = e[k]
    return [
        json.dumps(mixed, ensure_ascii=False).encode(),
        json.dumps(mixed, ensure_ascii=True).encode(),
        json.dumps(mixed, indent=None, separators=(" , ", " :\t")).encode(),
        b"  \t" + json.dumps(e).encode() + b" \t",
        json.dumps(e, separators=(",", ":")).encode() + b"\r",
        json.dumps(dict(reversed(list(mixed.items()))), separators=(",", ":")).encode() + b"  \r",
    ]


@pytest.mark.parametrize("name", ["tonpusen_196.json", "hanchan_102.json.gz"])
def test_scanner_skips_unknown_keys_of_every_kind_and_whitespace(name):
    evs = events(name)
    # one event of each type (and each shape of call) from the log
    sample = {}
    for e in evs:
        sample.setdefault((e["type"], len(e.get("consumed", [])), "tsumogiri" in e), e)
    lines, wanted = [], []
    for e in sample.values():
        for text in _variants(e):
            assert json.loads(text) is not None  # every variant is valid JSON
            lines.append(text)
            wanted.append(e)
        lines.append(b"")  # blank lines: no event, no error
        wanted.append(None)
    text = b"\n".join(lines) + b"\n"
    ev = scan_text(text)
    assert ev.n == len(lines)
    for row, (line, e) in enumerate(zip(lines, wanted)):
        if e is None:
            assert ev.type[row] == 0 and ev.code[row] == 0
        else:
            assert_scanned(ev, row, e, repr(line[:80]))
    # and the whole file with CRLF line ends reads the same
    crlf = scan_text(raw_text(name).replace(b"\n", b"\r\n"))
    plain = scan_text(raw_text(name))
    for field in ("type", "actor", "target", "pai", "consumed", "tsumogiri", "scores", "deltas", "tehais", "code"):
        assert np.array_equal(getattr(crlf, field), getattr(plain, field)), field


def _col(line: str, needle: str, nth: int = 0) -> int:
    """0-based byte column of the ``nth`` occurrence of ``needle`` in ``line``."""
    at = -1
    for _ in range(nth + 1):
        at = line.encode().index(needle.encode(), at + 1)
    return at


F = T.FIELDS
#: (line, rule, column, field) : each scanner error on a crafted line, with where it is.
SCAN_ERRORS = [
    ('[1, 2]', "not_json", 0, 0),
    ('   "type"', "not_json", 3, 0),
    ('{"type":"tsumo","actor":0,"pai":"1m"', "not_json", None, 0),  # no closing brace: at the line's end
    ('{"type":"tsumo" "actor":0}', "not_json", ("\"actor", 0), 0),
    ('{"type":"end_game","x":}', "not_json", ("}", 0), 0),
    ('{"type":"end_game","x":"open}', "not_json", ('"open', 0), 0),
    ('{"type":"end_game"} trailing', "not_json", ("trailing", 0), 0),
    ('{"type":"end_game",,"x":1}', "not_json", (",", 1), 0),
    # values of keys the scanner skips are checked as JSON too
    ('{"type":"end_game","x":{]}', "not_json", ("{]", 0), 0),
    ('{"type":"end_game","x":tru}', "not_json", ("tru", 0), 0),
    ('{"type":"end_game","x":007}', "not_json", ("07", 0), 0),
    ('{"type":"end_game","x":[1,]}', "not_json", ("[1,]", 0), 0),
    ('{"type":"end_game","x":{"a" 1}}', "not_json", ('{"a"', 0), 0),
    ('{"type":"end_game","x":-.5}', "not_json", ("-.5", 0), 0),
    ('{"actor":0,"type":"nukidora"}', "unknown_event", ('"nukidora', 0), F["type"]),
    ('{"type":"dahai","actor":0,"pai":"0m","tsumogiri":false}', "bad_tile", ('"0m', 0), F["pai"]),
    ('{"type":"start_kyoku","dora_marker":"5zr"}', "bad_tile", ('"5zr', 0), F["dora_marker"]),
    ('{"type":"chi","actor":1,"target":0,"pai":"3m","consumed":["1m","2x"]}', "bad_tile", ('["1m"', 0),
     F["consumed"]),
    ('{"type":"start_kyoku","tehais":[["1m"],["2m","9q"],[],[]]}', "bad_tile", ('["2m"', 0), F["tehais"]),
    ('{"type":"dahai","actor":4,"pai":"1m"}', "bad_value", ("4,", 0), F["actor"]),
    ('{"type":"dahai","actor":"0","pai":"1m"}', "bad_value", ('"0"', 0), F["actor"]),
    ('{"type":"dahai","actor":0,"pai":1}', "bad_value", ("1}", 0), F["pai"]),
    ('{"type":"dahai","actor":0,"pai":"1m","tsumogiri":1}', "bad_value", ("1}", 0), F["tsumogiri"]),
    ('{"type":"start_kyoku","kyoku":1.5}', "bad_value", ("1.5", 0), F["kyoku"]),
    ('{"type":"start_kyoku","honba":-1}', "bad_value", ("-1", 0), F["honba"]),
    ('{"type":"start_kyoku","bakaze":"X"}', "bad_value", ('"X"', 0), F["bakaze"]),
    ('{"type":"hora","actor":0,"target":0,"deltas":[1,2,3]}', "bad_value", ("[1,2,3]", 0), F["deltas"]),
    ('{"type":"hora","actor":0,"target":0,"scores":[1,2,3,4,5]}', "bad_value", ("[1,", 0), F["scores"]),
    ('{"type":"ryukyoku","tenpais":[true,false]}', "bad_value", ("[true", 0), F["tenpais"]),
    ('{"type":"start_kyoku","tehais":[["1m"],[],[]]}', "bad_value", ('[["1m"]', 0), F["tehais"]),
    ('{"type":7}', "bad_value", ("7", 0), F["type"]),
    ('{"actor":0,"pai":"1m"}', "no_type", 0, 0),
    ('  {"actor":0}', "no_type", 2, 0),
    ('{}', "no_type", 0, 0),
]


@pytest.mark.parametrize("line,rule,column,field", SCAN_ERRORS, ids=[f"{r}-{i}" for i, (_, r, _, _)
                                                                    in enumerate(SCAN_ERRORS)])
def test_scanner_error_codes_and_columns(line, rule, column, field):
    try:
        is_object = isinstance(json.loads(line), dict)
    except json.JSONDecodeError:
        is_object = False
    assert is_object == (rule != "not_json"), "the crafted line is one JSON object unless its rule says not"
    if column is None:
        column = len(line.encode())
    elif isinstance(column, tuple):
        column = _col(line, *column)
    # the line is scanned between two good ones: the error stays on its line
    good = b'{"type":"end_game"}'
    ev = scan_text(good + b"\n" + line.encode() + b"\n" + good + b"\n")
    assert ev.code[0] == 0 and ev.code[2] == 0 and ev.type[2] == T.EVENT_TYPES["end_game"]
    assert ev.code[1] == SCAN_CODES[rule], (line, {v: k for k, v in SCAN_CODES.items()}.get(int(ev.code[1])))
    assert ev.column[1] == column, (line, int(ev.column[1]), column)
    assert ev.detail[1] == field


# ------------------------------------------------------------------------------------------------
# 2. Hands, seats, rounds, draws and dora of every row, against riichienv replaying the log
# ------------------------------------------------------------------------------------------------


def replay_decisions(name: str) -> dict[int, dict]:
    """What each decision line (1-based) should write, from the log and riichienv.

    riichienv applies the events one by one (``RiichiEnv.apply_event``); at each
    decision its hand of the actor is the hand before the decision.  Alongside,
    a plain replay keeps the drawn tile apart (the last ``tsumo`` of the actor
    not yet merged by a discard or kan), the draws and dora indicators so far.
    """
    evs = events(name)
    env = riichienv.RiichiEnv(game_mode=GAMES[name]["game_mode"])
    out = {}
    hand = [collections.Counter() for _ in range(4)]
    drawn = [None] * 4
    rnd = -1
    for number, e in enumerate(evs, 1):
        t = e["type"]
        if t == "start_kyoku":
            rnd += 1
            hand = [collections.Counter(T.KIND_OF_NAME[p] for p in h) for h in e["tehais"]]
            drawn = [None] * 4
            draws = 0
            dora = [T.KIND_OF_NAME[e["dora_marker"]]]
            kyoku = e
        elif t == "tsumo":
            draws += 1
            drawn[e["actor"]] = T.KIND_OF_NAME[e["pai"]]
        elif t == "dora":
            dora.append(T.KIND_OF_NAME[e["dora_marker"]])
        if t in DECISIONS:
            a = e["actor"]
            engine = collections.Counter(kind_of_engine_tile(x) for x in env.hands[a])
            shown = drawn[a] if t != "hora" or e["target"] == a else None
            out[number] = {
                "type": t, "seat": a, "round": rnd, "chang": T.WINDS[kyoku["bakaze"]], "ju": kyoku["kyoku"] - 1,
                "honba": kyoku["honba"], "kyotaku": kyoku["kyotaku"], "scores": kyoku["scores"],
                "draws": draws, "dora": list(dora), "engine_hand": engine,
                "hand": +hand[a], "drawn": shown,
            }
            # the plain replay
            if t in ("dahai", "ankan", "kakan") and drawn[a] is not None:
                hand[a][drawn[a]] += 1
                drawn[a] = None
            if t == "dahai" or t == "kakan":
                hand[a][T.KIND_OF_NAME[e["pai"]]] -= 1
            if t in ("chi", "pon", "daiminkan", "ankan"):
                for p in e["consumed"]:
                    hand[a][T.KIND_OF_NAME[p]] -= 1
        env.apply_event(e)
    return out


def decode_hand(ids) -> collections.Counter:
    """The 37-kind counts of sparse hand ids (337 + tile id, base = tile id // 4): copy 0 of a five is
    its red five (the shipped games use a set with one red five per suit)."""
    out = collections.Counter()
    for i in ids:
        tile = i - S.HAND_OFFSET
        base = tile // 4
        if base >= 27:
            out[30 + base - 27] += 1
        else:
            suit, number = divmod(base, 9)
            out[10 * suit if number == 4 and tile % 4 == 0 else 10 * suit + number + 1] += 1
    return out


@pytest.mark.parametrize("name", NAMES)
def test_every_row_holds_the_hand_riichienv_holds(name, frames):
    want = replay_decisions(name)
    frame = frames[name]
    lines = frame["source_line"].to_list()
    assert sorted(lines) == sorted(want), "one row per decision line, no other rows"
    sparse = frame["sparse"].to_numpy()
    length = int(any(e["type"] == "start_kyoku" and e["bakaze"] != "E" for e in events(name)))
    checked_dora = 0
    for row, number in enumerate(lines):
        w = want[number]
        ids = [int(x) for x in sparse[row] if x != PAD]
        assert all(x == PAD for x in sparse[row][len(ids):]), "padding only at the end"
        where = f"{name}:{number} ({w['type']}, seat {w['seat']})"
        hand_ids = [x for x in ids if S.HAND_OFFSET <= x < S.DRAWN_OFFSET]
        drawn_ids = [x for x in ids if x >= S.DRAWN_OFFSET]
        held = decode_hand(hand_ids)
        assert held == w["hand"], f"{where}: sparse hand {held} != log replay {w['hand']}"
        assert len(set(hand_ids)) == len(hand_ids)
        assert drawn_ids == ([S.DRAWN_OFFSET + w["drawn"]] if w["drawn"] is not None else []), where
        with_drawn = held + (collections.Counter([w["drawn"]]) if w["drawn"] is not None else collections.Counter())
        assert with_drawn == w["engine_hand"], f"{where}: hand {with_drawn}, riichienv holds {w['engine_hand']}"
        assert sorted(hand_ids) == [S.HAND_OFFSET + t for t in T.tile_ids(list(held.elements()))], where
        # the prefix and the round
        assert ids[:6] == [0, 5 + length, 7, 7 + 16, 7 + 32, 7 + 48], where
        assert 71 + w["seat"] in ids and frame["seat"][row] == w["seat"], where
        assert 75 + w["chang"] in ids and 78 + w["ju"] in ids, where
        assert w["draws"] >= 1 and 82 + w["draws"] - 1 in ids, where
        assert [x for x in ids if 82 <= x < 152] == [82 + w["draws"] - 1], where
        dora_ids = [x for x in ids if 152 <= x < S.HAND_OFFSET]
        assert dora_ids == [152 + 37 * slot + k for slot, k in enumerate(w["dora"])], where
        checked_dora += len(w["dora"]) > 1
        assert len(ids) == 6 + 4 + len(w["dora"]) + len(hand_ids) + len(drawn_ids), where
        # columns
        assert (frame["round"][row], frame["chang"][row], frame["ju"][row], frame["ben"][row]) == (
            w["round"], w["chang"], w["ju"], w["honba"]), where
    assert checked_dora > 0, "some rows come after a kan dora"


# ------------------------------------------------------------------------------------------------
# 3. Rows, round and game ends, results, numeric, the spec
# ------------------------------------------------------------------------------------------------


def rounds_of(evs: list[dict]) -> list[dict]:
    """Each round's start event, deltas summed over its hora/ryukyoku, winners, kinds."""
    out = []
    for e in evs:
        if e["type"] == "start_kyoku":
            out.append({"start": e, "deltas": [0, 0, 0, 0], "kinds": set(), "winners": set(), "from": set()})
        elif e["type"] in ("hora", "ryukyoku"):
            r = out[-1]
            r["deltas"] = [a + b for a, b in zip(r["deltas"], e["deltas"])]
            if e["type"] == "ryukyoku":
                r["kinds"].add(2)
            else:
                r["winners"].add(e["actor"])
                if e["actor"] == e["target"]:
                    r["kinds"].add(0)
                else:
                    r["kinds"].add(1)
                    r["from"].add(e["target"])
    return out


@pytest.mark.parametrize("name", NAMES)
def test_rows_flags_results_and_numeric_follow_the_log(name, frames):
    frame = frames[name]
    evs = events(name)
    meta = GAMES[name]
    S.KANACHAN_SPEC.validate(frame)
    # one row per decision event, per seat
    per_seat = collections.Counter(e["actor"] for e in evs if e["type"] in DECISIONS)
    assert dict(collections.Counter(frame["seat"].to_list())) == dict(per_seat)
    assert frame.height == sum(meta["events"].get(t, 0) for t in DECISIONS)
    assert frame["game"].unique().to_list() == [0] and frame["game_id"].n_unique() == 1
    # episodes in order: seat, then step 0..n-1
    assert frame["seat"].to_list() == sorted(frame["seat"].to_list())
    for seat in range(4):
        assert frame.filter(pl.col("seat") == seat)["step"].to_list() == list(range(per_seat[seat]))
    rounds = rounds_of(evs)
    last_round = len(rounds) - 1
    after, sticks, final = replay_scores(evs)
    assert final == meta["scores"], "the log replayed gives the engine's final scores"
    seat = frame["seat"].to_numpy()
    rnd = frame["round"].to_numpy()
    last_of_seat = np.r_[seat[1:] != seat[:-1], True]
    last_of_round = last_of_seat | np.r_[rnd[1:] != rnd[:-1], True]
    eog = frame["end_of_game"].to_numpy()
    eor = frame["end_of_round"].to_numpy()
    assert np.array_equal(eog, last_of_seat)
    assert np.array_equal(eor, last_of_round & ~last_of_seat)
    assert eor.sum() > 0 and eog.sum() == 4
    results = frame["results"].to_numpy()
    summary = frame["round_summary"].to_numpy()
    numeric = frame["numeric"].to_numpy()
    for row in range(frame.height):
        r = rounds[rnd[row]]
        start = r["start"]
        assert list(numeric[row]) == [start["honba"], start["kyotaku"], *start["scores"]], row
        if eor[row]:
            assert list(results[row, :4]) == r["deltas"], row
            assert list(results[row, 4:]) == rounds[rnd[row] + 1]["start"]["scores"], row
        elif eog[row]:
            assert list(results[row, :4]) == rounds[last_round]["deltas"], row
            assert list(results[row, 4:]) == meta["scores"], row
        else:
            assert not results[row].any(), row
            assert (summary[row] == S.NUM_TYPES_OF_ROUND_SUMMARY).all(), row
        if eor[row] or eog[row]:
            r_end = rounds[last_round] if eog[row] else r
            ids = set(summary[row].tolist()) - {S.NUM_TYPES_OF_ROUND_SUMMARY}
            want = r_end["kinds"] | {3 + w for w in r_end["winners"]} | {7 + d for d in r_end["from"]}
            assert want <= ids, (row, ids, want)
            assert (25 in ids) == bool(eog[row])  # game over
            assert (26 in ids) == (bool(eog[row]) and min(meta["scores"]) < 0)  # bust
    # ranks from the final scores are the engine's
    ends = frame.filter("end_of_game")
    res = ends["results"].to_numpy()
    ranks = ranks_from_scores(res[:, 4:], ends["seat"].to_numpy())
    assert [int(r) for r in ranks] == [meta["ranks"][s] - 1 for s in ends["seat"].to_list()]
    # and the tracker gave the leftover sticks to the top player
    top = meta["ranks"].index(1)
    assert meta["scores"][top] == after[-1][top] + sticks * STICK


def test_a_folder_loads_every_log_as_its_own_game(folder_frame, frames):
    S.KANACHAN_SPEC.validate(folder_frame)
    assert folder_frame["game"].n_unique() == len(NAMES) == folder_frame["game_id"].n_unique()
    assert folder_frame.filter("end_of_game").height == 4 * len(NAMES)
    for name, alone in frames.items():
        part = folder_frame.filter(pl.col("source_file").cast(pl.String) == str(DATA / name))
        assert part.select(SAME).equals(alone.select(SAME)), name
        assert part["game_id"].unique().to_list() == alone["game_id"].unique().to_list()


# ------------------------------------------------------------------------------------------------
# 4. The shipped ranking plug-ins reward the ranks the logs give
# ------------------------------------------------------------------------------------------------


def log_ranks() -> dict[str, tuple[list[int], list[int]]]:
    """Final scores and 0-based ranks of each shipped game, replayed with json alone."""
    out = {}
    for name in NAMES:
        _, _, final = replay_scores(events(name))
        out[name] = (final, ranks_of(final))
    return out


def test_ranking_plugins_reward_the_ranks_of_the_logs(folder_frame):
    ranks = log_ranks()
    for name, (scores, rank) in ranks.items():
        assert [r + 1 for r in rank] == GAMES[name]["ranks"], name
    top = load_plugin(PLUGINS_DIR / "rank_top.py")
    mleague = load_plugin(PLUGINS_DIR / "rank_points_mleague.py")
    out = apply_plugins(folder_frame, [top, mleague], isolate=False, progress=False)
    assert out.height == folder_frame.height
    # rank_top documents [1, -1, -1, -1] normalized by its mean and sample std
    values = np.array([1.0, -1.0, -1.0, -1.0])
    normalized = (values - values.mean()) / values.std(ddof=1)
    g = mleague.get_reward.__globals__
    ranking, mean, std = list(g["_REWARD_BY_RANKING"]), float(g["_REWARD_MEAN"]), float(g["_REWARD_STDEV"])
    ends = out.filter("end_of_game")
    assert ends.height == 4 * len(NAMES)
    firsts = 0
    for row in ends.iter_rows(named=True):
        name = row["source_file"].rsplit("/", 1)[-1]
        scores, rank = ranks[name]
        r = rank[row["seat"]]
        assert row["reward_rank_top"] == pytest.approx(normalized[r]), (name, row["seat"])
        assert (row["reward_rank_top"] > 0) == (r == 0)
        firsts += r == 0
        want = (ranking[r] + (scores[row["seat"]] - 30000) // 100 - mean) / std
        assert row["reward_rank_points_mleague"] == pytest.approx(want), (name, row["seat"])
    assert firsts == len(NAMES)
    rest = out.filter(~pl.col("end_of_game"))
    assert (rest["reward_rank_top"] == 0).all() and (rest["reward_rank_points_mleague"] == 0).all()


# ------------------------------------------------------------------------------------------------
# 5. Other engines' dialects load to the same frame; wrong scores are errors
# ------------------------------------------------------------------------------------------------


def with_scores(evs, *, deltas=True, end_game=False, leftover=True):
    """The log as other engines write it: ``scores`` after each hora / ryukyoku / reach_accepted
    (mjai.app), without ``deltas`` if asked, and ``scores`` on end_game (with or without the
    leftover sticks given to the top player)."""
    after, sticks, final = replay_scores(evs)
    out = []
    for e, scores in zip(evs, after):
        e = dict(e)
        if e["type"] in ("hora", "ryukyoku", "reach_accepted"):
            e["scores"] = scores
            if not deltas:
                e.pop("deltas", None)
        if e["type"] == "end_game" and end_game:
            e["scores"] = final if leftover else after[-1]
        out.append(e)
    return out


def with_hora_details(evs):
    """``hora`` as Mortal / mjai.app write it: the winning tile (``pai``: the last tsumo, dahai or kakan
    tile before it, the same for each ron of a double ron) and the hand's value."""
    out, tile = [], None
    for e in evs:
        e = dict(e)
        if e["type"] in ("tsumo", "dahai", "kakan"):
            tile = e["pai"]
        if e["type"] == "hora":
            e.update(pai=tile, han=3, fu=40, yakus=[["riichi", 1], ["dora", 2]], uradora_markers=["3s"])
        out.append(e)
    return out


@pytest.mark.parametrize("dialect", ["scores_and_deltas", "scores_only", "end_game_scores", "hora_pai", "all"])
@pytest.mark.parametrize("name", ["tonpusen_193.json.gz", "hanchan_102.json.gz", "hanchan_228.json"])
def test_other_engines_dialects_give_the_same_frame(tmp_path, frames, name, dialect):
    evs = events(name)
    if dialect in ("hora_pai", "all"):
        evs = with_hora_details(evs)
    kw = {"scores_and_deltas": {}, "scores_only": {"deltas": False}, "end_game_scores": {"end_game": True},
          "hora_pai": {"deltas": True}, "all": {"deltas": False, "end_game": True}}[dialect]
    changed = with_scores(evs, **kw) if dialect != "hora_pai" else evs
    assert changed != events(name)
    path = write_log(tmp_path / "other.json", changed)
    frame = read(path).frame
    assert frame.select(SAME).equals(frames[name].select(SAME))


def expect_error(path, rule, line, *fragments, where=None, **kw):
    """Load ``where`` (default ``path``): a DataFormatError for ``path``, ``line`` and ``rule``."""
    with pytest.raises(DataFormatError) as info:
        read(where or path, **kw)
    err = info.value
    assert (err.rule, err.line, err.path) == (rule, line, str(path)), str(err)
    text = str(err)
    assert text.startswith(f"{path}:{line}: " if line is not None else f"{path}: "), text
    assert text.count(f"[rule: {rule}]") == 1, text
    for fragment in fragments:
        assert fragment in text, (fragment, text)
    return err


def test_end_game_scores_with_the_leftover_sticks_forfeited_are_taken_as_given(tmp_path):
    name = "tonpusen_193.json.gz"  # 3 sticks left at the end
    evs = events(name)
    after, sticks, final = replay_scores(evs)
    assert sticks == 3
    top = ranks_of(after[-1]).index(0)
    # rules where left sticks are forfeited: end_game gives the last scores, and they are the final ones
    path = write_log(tmp_path / "no_leftover.json", with_scores(evs, end_game=True, leftover=False))
    ends = read(path).frame.filter("end_of_game").sort("seat")
    assert [r[4:] for r in ends["results"].to_list()] == [after[-1]] * 4
    # any other end_game scores are a mismatch (named against the sticks-to-the-top total)
    wrong = with_scores(evs, end_game=True, leftover=False)
    wrong[-1]["scores"] = list(wrong[-1]["scores"])
    wrong[-1]["scores"][top] += 100
    expect_error(write_log(tmp_path / "wrong.json", wrong), "scores_mismatch", len(evs),
                 f"seat {top}'s score is given as {after[-1][top] + 100}", f"make it {final[top]}")
    # with no sticks left, the end_game scores are the last scores as they are
    name = "hanchan_15.json"
    evs = events(name)
    after, sticks, final = replay_scores(evs)
    assert sticks == 0 and final == after[-1]
    read(write_log(tmp_path / "no_sticks.json", with_scores(evs, end_game=True, leftover=False)))


def test_wrong_scores_unbalanced_deltas_and_wrong_kyotaku_are_errors(tmp_path):
    name = "hanchan_228.json"
    evs = with_scores(events(name))
    # a wrong score on a hora
    k = next(i for i, e in enumerate(evs) if e["type"] == "hora")
    bad = [dict(e) for e in evs]
    bad[k]["scores"] = list(bad[k]["scores"])
    bad[k]["scores"][2] += 100
    expect_error(write_log(tmp_path / "hora.json", bad), "scores_mismatch", k + 1,
                 f"seat 2's score is given as {bad[k]['scores'][2]}", f"make it {evs[k]['scores'][2]}")
    # a wrong score on a reach_accepted
    k = next(i for i, e in enumerate(evs) if e["type"] == "reach_accepted")
    bad = [dict(e) for e in evs]
    seat = bad[k]["actor"]
    bad[k]["scores"] = [s + (STICK if j == seat else 0) for j, s in enumerate(bad[k]["scores"])]
    expect_error(write_log(tmp_path / "reach.json", bad), "scores_mismatch", k + 1, f"seat {seat}'s score")
    # deltas that do not balance (the log's own dialect: deltas only)
    evs = events(name)
    k = next(i for i, e in enumerate(evs) if e["type"] == "ryukyoku")
    bad = [dict(e) for e in evs]
    bad[k]["deltas"] = [d + (300 if j == 0 else 0) for j, d in enumerate(bad[k]["deltas"])]
    total = sum(evs[1]["scores"]) + STICK * evs[1]["kyotaku"]
    expect_error(write_log(tmp_path / "deltas.json", bad), "scores_do_not_add_up", k + 1,
                 f"add up to {total + 300}", f"total {total}")
    # the next round's kyotaku is not the sticks left on the table
    ks = [i for i, e in enumerate(evs) if e["type"] == "start_kyoku"]
    k = ks[3]
    bad = [dict(e) for e in evs]
    left = bad[k]["kyotaku"]
    bad[k]["kyotaku"] = left + 1
    expect_error(write_log(tmp_path / "kyotaku.json", bad), "deposits_mismatch", k + 1,
                 f"kyotaku is {left + 1}, but {left} riichi sticks")
    # a hora whose winning tile is not the tile it wins on
    evs = with_hora_details(events(name))
    for tsumo in (True, False):
        h = next(i for i, e in enumerate(evs) if e["type"] == "hora" and (e["actor"] == e["target"]) == tsumo)
        bad = [dict(e) for e in evs]
        other = "1m" if bad[h]["pai"] != "1m" else "9m"
        bad[h]["pai"] = other
        expect_error(write_log(tmp_path / "pai.json", bad), "wrong_tile", h + 1,
                     f"seat {bad[h]['actor']}'s tile is {other}, but the game says {evs[h]['pai']}")
    evs = events(name)
    # a wrong start_kyoku score
    bad = [dict(e) for e in evs]
    bad[k]["scores"] = [s + (100 if j == 1 else 0) - (100 if j == 2 else 0) for j, s in enumerate(bad[k]["scores"])]
    expect_error(write_log(tmp_path / "start.json", bad), "scores_mismatch", k + 1, "seat 1's score")


# ------------------------------------------------------------------------------------------------
# 6. Broken logs: one test per rule, each naming the file, the line and what is wrong
# ------------------------------------------------------------------------------------------------

BASE = "tonpusen_196.json"


def first(evs, kind, start=0, pred=lambda e: True) -> int:
    return next(i for i in range(start, len(evs)) if evs[i]["type"] == kind and pred(evs[i]))


def hands_before(evs, k) -> list[collections.Counter]:
    """Each seat's concealed tiles (drawn tile included) just before line index ``k``, from the log."""
    hand = None
    for e in evs[:k]:
        t = e["type"]
        if t == "start_kyoku":
            hand = [collections.Counter(h) for h in e["tehais"]]
        elif t == "tsumo":
            hand[e["actor"]][e["pai"]] += 1
        elif t in ("dahai", "kakan"):
            hand[e["actor"]][e["pai"]] -= 1
        elif t in ("chi", "pon", "daiminkan", "ankan"):
            for p in e["consumed"]:
                hand[e["actor"]][p] -= 1
    return [+h for h in hand]


def m_not_json(evs):
    k = first(evs, "dahai")
    evs[k] = json.dumps(evs[k], separators=(",", ":"))[:-1]
    return k, ["is not one JSON object"]


def m_unknown_event(evs):
    k = first(evs, "dahai")
    evs[k]["type"] = "nukidora"
    return k, ['"nukidora"', "not MJAI's"]


def m_bad_tile(evs):
    k = first(evs, "dahai")
    evs[k]["pai"] = "0m"
    return k, ['"pai" holds a name that is no tile', '"0m"']


def m_bad_value(evs):
    k = first(evs, "dahai")
    evs[k]["actor"] = 4
    return k, ['"actor" has a value of the wrong shape', "a seat 0-3"]


def m_no_type(evs):
    k = first(evs, "dahai")
    del evs[k]["type"]
    return k, ['without "type"']


def m_outside_game(evs):
    evs.append({"type": "tsumo", "actor": 0, "pai": "1m"})
    return len(evs) - 1, ['("tsumo") outside a game']


def m_out_of_order(evs):
    k = first(evs, "tsumo")  # the dahai swapped before its tsumo
    evs[k], evs[k + 1] = evs[k + 1], evs[k]
    assert evs[k]["type"] == "dahai"
    return k, ['"dahai" cannot come here', "the dealer's tsumo comes next"]


def m_out_of_order_end(evs):
    k = first(evs, "end_kyoku")  # end_kyoku before its result
    evs[k], evs[k - 1] = evs[k - 1], evs[k]
    return k - 1, ['"end_kyoku" cannot come here']


def m_wrong_player(evs):
    k = first(evs, "tsumo", first(evs, "dahai"))
    expected = evs[k]["actor"]
    evs[k]["actor"] = (expected + 2) % 4
    return k, [f"seat {(expected + 2) % 4} acts", f"expects seat {expected}"]


def m_hand_inconsistent(evs):
    k = first(evs, "dahai", first(evs, "dahai") + 1, lambda e: not e["tsumogiri"])
    held = hands_before(evs, k)[evs[k]["actor"]]
    missing = next(p for p in T.KIND_OF_NAME if p != "?" and p not in held and not p.startswith("5"))
    evs[k]["pai"] = missing
    return k, [f"seat {evs[k]['actor']}'s hand holds no {missing}"]


def m_too_many_copies(evs):
    k = first(evs, "start_kyoku")
    evs[k]["tehais"][0][:5] = ["E"] * 5
    seen = sum(h.count("E") for h in evs[k]["tehais"]) + (evs[k]["dora_marker"] == "E")
    return k, [f"the round shows E {seen} times"]


def m_missing_field(evs):
    k = first(evs, "dahai")
    del evs[k]["actor"]
    return k, ['the event needs "actor"']


def m_missing_deltas(evs):
    k = first(evs, "ryukyoku") if any(e["type"] == "ryukyoku" for e in evs) else first(evs, "hora")
    del evs[k]["deltas"]
    return k, ['the event needs "deltas"']


def m_hidden_tile(evs):
    k = first(evs, "tsumo")
    evs[k]["pai"] = "?"
    return k, ['"pai" holds a hidden tile "?"', "full game records"]


def m_hidden_tehai(evs):
    k = first(evs, "start_kyoku", 2)
    evs[k]["tehais"][1] = ["?"] * 13
    return k, ['"tehais" holds a hidden tile "?"']


def m_hand_size(evs):
    k = first(evs, "start_kyoku")
    evs[k]["tehais"][2] = evs[k]["tehais"][2][:-1]
    return k, ["seat 2 holds 12 concealed tiles here; it should hold 13"]


def m_wrong_tile(evs):
    k = next(i for i, e in enumerate(evs) if e["type"] == "dahai" and not e["tsumogiri"]
             and evs[i - 1]["type"] == "tsumo" and evs[i - 1]["pai"] != e["pai"])
    evs[k]["tsumogiri"] = True
    return k, [f"seat {evs[k]['actor']}'s tile is {evs[k]['pai']}, but the game says {evs[k - 1]['pai']}"]


def m_wrong_meld(evs):
    k = first(evs, "pon")
    other = "1p" if evs[k]["pai"][0] != "1" else "9p"
    evs[k]["consumed"] = [evs[k]["consumed"][0], other]
    return k, [f"seat {evs[k]['actor']}'s consumed tiles do not make this call"]


def m_wrong_chi(evs):
    k = first(evs, "chi")
    evs[k]["consumed"] = [evs[k]["pai"], evs[k]["consumed"][1]]  # the called tile twice: no run
    return k, ["do not make this call"]


def m_out_of_range(evs):
    k = first(evs, "start_kyoku")
    evs[k]["bakaze"] = "N"
    return k, ['"bakaze"', "East, South and West rounds"]


def m_unended_game(evs):
    del evs[len(evs) // 2:]
    return len(evs) - 1, ["the file ends inside a game"]


def m_outside_game_first(evs):
    del evs[0]  # no start_game: the first line is outside any game
    return 0, ['("start_kyoku") outside a game']


def m_kan_dora_without_kan(evs):
    k = first(evs, "tsumo")
    evs.insert(k, {"type": "dora", "dora_marker": "9s"})
    return k, ['"dora_marker" is 2', "one more per kan"]


def m_kyoku_five(evs):
    k = first(evs, "start_kyoku")
    evs[k]["kyoku"] = 5
    return k, ['"kyoku" is 5', "1-4"]


def m_wrong_dealer(evs):
    k = first(evs, "start_kyoku")
    evs[k]["oya"] = (evs[k]["kyoku"]) % 4
    return k, ['"oya" is', "the dealer of kyoku k is seat k - 1"]


def m_reach_accepted_without_reach(evs):
    k = first(evs, "dahai") + 1
    evs.insert(k, {"type": "reach_accepted", "actor": evs[k - 1]["actor"]})
    return k, ['"reach_accepted" cannot come here']


def m_chi_from_across(evs):
    k = first(evs, "chi")
    evs[k]["target"] = (evs[k]["actor"] + 2) % 4
    return k, [f"seat {evs[k]['target']} acts (or is named) here"]


def m_pon_of_another_tile(evs):
    k = first(evs, "pon")
    other = next(p for p in ("1m", "9m", "1p") if T.KIND_OF_NAME[p] != T.KIND_OF_NAME[evs[k]["pai"]])
    want = evs[k]["pai"]
    evs[k]["pai"] = other
    return k, [f"tile is {other}, but the game says {want}"]


MUTATIONS = {
    "not_json": m_not_json, "unknown_event": m_unknown_event, "bad_tile": m_bad_tile, "bad_value": m_bad_value,
    "no_type": m_no_type, "outside_game": m_outside_game, "out_of_order": m_out_of_order,
    "out_of_order/end_kyoku": m_out_of_order_end, "wrong_player": m_wrong_player,
    "hand_inconsistent": m_hand_inconsistent, "too_many_copies": m_too_many_copies,
    "missing_field": m_missing_field, "missing_field/deltas": m_missing_deltas, "hidden_tile": m_hidden_tile,
    "hidden_tile/tehais": m_hidden_tehai, "hand_size": m_hand_size, "wrong_tile": m_wrong_tile,
    "wrong_meld": m_wrong_meld, "wrong_meld/chi": m_wrong_chi, "out_of_range": m_out_of_range,
    "unended_game": m_unended_game, "outside_game/no_start_game": m_outside_game_first,
    "out_of_range/kan_dora": m_kan_dora_without_kan, "out_of_range/kyoku": m_kyoku_five,
    "out_of_range/oya": m_wrong_dealer, "out_of_order/reach_accepted": m_reach_accepted_without_reach,
    "wrong_player/chi": m_chi_from_across, "wrong_tile/pon": m_pon_of_another_tile,
}
#: Rules a shipped log is broken for in other tests (scores, deposits: test 5; who pays a win, end_game ranks
#: and the order of rounds: tests/test_mjai_hostile.py).
ELSEWHERE = {"scores_mismatch", "scores_do_not_add_up", "deposits_mismatch", "wrong_payment", "ranks_mismatch",
             "round_order"}


def test_every_rule_has_a_broken_log_test():
    assert set(CODES) == {m.split("/")[0] for m in MUTATIONS} | ELSEWHERE


@pytest.mark.parametrize("case", list(MUTATIONS))
def test_a_broken_log_names_file_line_and_rule(tmp_path, case):
    evs = events(BASE)
    k, fragments = MUTATIONS[case](evs)
    path = write_log(tmp_path / "broken.json", evs)
    rule = case.split("/")[0]
    expect_error(path, rule, k + 1, *fragments, f"[rule: {rule}]")
    # the same in a folder after good logs: the broken file is named
    folder = tmp_path / "logs"
    folder.mkdir()
    shutil.copy(DATA / "hanchan_15.json", folder / "a.json")
    shutil.copy(path, folder / "b.json")
    expect_error(folder / "b.json", rule, k + 1, *fragments, where=folder)


def test_a_game_loaded_twice_is_an_error(tmp_path):
    for name in ("a.json", "b.json"):
        shutil.copy(DATA / BASE, tmp_path / name)
    expect_error(tmp_path / "b.json", "game_reappears", 1,
                 f"the same, byte for byte, as the one at {tmp_path / 'a.json'}:1", where=tmp_path)
    # also when the copy is the second game of a file
    (tmp_path / "b.json").write_bytes(raw_text("hanchan_15.json") + raw_text(BASE))
    expect_error(tmp_path / "b.json", "game_reappears", len(events("hanchan_15.json")) + 1, where=tmp_path)


def test_a_game_loaded_twice_is_found_across_batches(tmp_path, monkeypatch):
    import rewardlab.sources.mjai.reader as reader

    monkeypatch.setattr(reader, "BATCH_BYTES", 1)  # each file its own batch, in its own thread
    for name in ("a.json", "b.json", "c.json"):
        shutil.copy(DATA / ("hanchan_15.json" if name == "b.json" else BASE), tmp_path / name)
    expect_error(tmp_path / "c.json", "game_reappears", 1, f"as the one at {tmp_path / 'a.json'}:1",
                 where=tmp_path, workers=3)


def test_skip_mode_quarantines_a_game_loaded_twice(tmp_path):
    for name in ("a.json", "b.json"):
        shutil.copy(DATA / BASE, tmp_path / name)
    with pytest.warns(SkippedLinesWarning, match="game_reappears: 1"):
        result = read(tmp_path, on_error="skip")
    assert result.skipped["raw"].to_list() == lines_of(raw_text(BASE))
    assert set(result.skipped["file"].to_list()) == {str(tmp_path / "b.json")}
    assert result.frame.select(SAME).equals(read(DATA / BASE).frame.select(SAME))


@pytest.mark.parametrize("content", [b"not gzip at all", gzip.compress(b'{"type":"start_game"}\n' * 50)[:30]],
                         ids=["garbage", "truncated"])
def test_an_unreadable_gz_is_an_error(tmp_path, content):
    path = tmp_path / "broken.json.gz"
    path.write_bytes(content)
    err = expect_error(path, "unreadable", None, "cannot be read as a plain, gzip or bz2 log")
    assert err.line is None


def test_a_bz2_log_loads_like_the_plain_one(tmp_path, frames):
    import bz2

    (tmp_path / "packed.json.bz2").write_bytes(bz2.compress(raw_text(BASE)))
    assert read(tmp_path).frame.select(SAME).equals(frames[BASE].select(SAME))


# ------------------------------------------------------------------------------------------------
# 7. Skip mode: whole games quarantined byte for byte, good games kept exactly
# ------------------------------------------------------------------------------------------------


def lines_of(text: bytes) -> list[bytes]:
    """A text's lines without ``\\n`` (``\\r`` kept)."""
    return text.split(b"\n")[:-1]


def broken_text(name: str, case: str, *, crlf: bool = False) -> bytes:
    evs = events(name)
    MUTATIONS[case](evs)
    text = dumps(evs).encode()
    return text.replace(b"\n", b"\r\n") if crlf else text


@pytest.fixture
def mixed_folder(tmp_path):
    """Good logs, a broken one (CRLF), a file whose second game is broken, a truncated game followed by
    a good one in the same file, and a file that is no log."""
    folder = tmp_path / "logs"
    folder.mkdir()
    shutil.copy(DATA / "tonpusen_196.json", folder / "a_good.json")
    (folder / "b_good.json.gz").write_bytes(gzip.compress(raw_text("hanchan_15.json")))
    bad_c = broken_text("tonpusen_245.json", "hand_inconsistent", crlf=True)
    (folder / "c_bad.json").write_bytes(bad_c)
    bad_d = broken_text("tonpusen_193.json.gz", "wrong_meld")
    (folder / "d_two.jsonl").write_bytes(raw_text("hanchan_228.json") + bad_d)
    cut = b"".join(line + b"\n" for line in lines_of(raw_text("hanchan_102.json.gz"))[:700])
    (folder / "e_cut.log").write_bytes(cut + raw_text("tonpusen_193.json.gz"))
    (folder / "notes.txt").write_text("not a log\n")
    good = {"a_good.json": "tonpusen_196.json", "b_good.json.gz": "hanchan_15.json",
            "d_two.jsonl": "hanchan_228.json", "e_cut.log": "tonpusen_193.json.gz"}
    # (file, first line, lines, rule) of each game that must be quarantined
    bad = [("c_bad.json", 1, lines_of(bad_c), "hand_inconsistent"),
           ("d_two.jsonl", GAMES["hanchan_228.json"]["lines"] + 1, lines_of(bad_d), "wrong_meld"),
           ("e_cut.log", 1, lines_of(cut), "unended_game")]
    return folder, good, bad


def test_skip_mode_quarantines_whole_games_and_keeps_the_good_ones(mixed_folder, frames, tmp_path):
    folder, good, bad = mixed_folder
    side = tmp_path / "skipped.jsonl"
    with pytest.warns(SkippedLinesWarning) as record:
        result = read(folder, on_error="skip", skipped_path=side)
    message = str(record[0].message)
    assert "quarantined 3 games" in message and f"{sum(len(b[2]) for b in bad)} lines" in message
    for rule in ("hand_inconsistent: 1", "wrong_meld: 1", "unended_game: 1"):
        assert rule in message, message
    frame = result.frame
    S.KANACHAN_SPEC.validate(frame)
    # every good game's rows, exactly as loading its log alone gives
    assert frame["game_id"].n_unique() == len(good) == frame["game"].n_unique()
    for file, name in good.items():
        alone = frames[name]
        part = frame.filter(pl.col("game_id") == alone["game_id"][0])
        assert part["source_file"].cast(pl.String).unique().to_list() == [str(folder / file)]
        shift = 0 if file != "e_cut.log" else 700  # the good game after the cut one starts at line 701
        assert part.select(SAME).with_columns(pl.col("source_line") - shift).equals(alone.select(SAME)), file
    # the quarantined games, whole, byte for byte (CRLF kept), counted by rule
    skipped = result.skipped
    assert skipped.height == sum(len(lines) for _, _, lines, _ in bad)
    for file, first_line, lines, rule in bad:
        part = skipped.filter(pl.col("file") == str(folder / file))
        assert part["raw"].to_list() == lines, file
        assert part["line"].to_list() == list(range(first_line, first_line + len(lines)))
        assert set(part["reason"].to_list()) == {rule}
        assert lines[0].rstrip(b"\r") == b'{"type":"start_game"}'
    assert all(raw.endswith(b"\r") for raw in skipped.filter(pl.col("file") == str(folder / "c_bad.json"))["raw"])
    assert result.skip_counts == {rule: len(lines) for _, _, lines, rule in bad}
    # the side file holds the lines verbatim
    assert result.skipped_path == side
    assert side.read_bytes() == b"".join(line + b"\n" for _, _, lines, _ in bad for line in lines)
    # the side file is not overwritten
    with pytest.raises(OutputExistsError) as info:
        read(folder, on_error="skip", skipped_path=side)
    assert str(side) in str(info.value)
    assert side.read_bytes() == b"".join(line + b"\n" for _, _, lines, _ in bad for line in lines)
    with pytest.warns(SkippedLinesWarning):
        again = read(folder, on_error="skip", skipped_path=side, overwrite=True)
    assert again.frame.equals(frame)


def test_raise_mode_stops_at_the_first_broken_game(mixed_folder):
    folder, _, bad = mixed_folder
    file, first_line, lines, rule = bad[0]
    with pytest.raises(DataFormatError) as info:
        read(folder)
    assert (info.value.path, info.value.rule) == (str(folder / file), rule)
    assert first_line <= info.value.line < first_line + len(lines)


def test_a_game_cut_short_before_the_next_start_game_is_unended(tmp_path):
    cut = lines_of(raw_text("hanchan_15.json"))[:400]
    path = tmp_path / "cut.json"
    path.write_bytes(b"".join(line + b"\n" for line in cut) + raw_text(BASE))
    expect_error(path, "unended_game", 400)
    with pytest.warns(SkippedLinesWarning):
        result = read(path, on_error="skip")
    assert result.skipped["raw"].to_list() == cut
    alone = read(DATA / BASE).frame
    assert result.frame.select(SAME).with_columns(pl.col("source_line") - 400).equals(alone.select(SAME))


def test_load_mjai_skip_needs_a_side_file(tmp_path):
    with pytest.raises(ParameterError) as info:
        load_mjai(DATA / BASE, on_error="skip", progress=False)
    assert "skipped_path" in str(info.value)
    with pytest.raises(ParameterError) as info:
        read(DATA / BASE, skipped_path=tmp_path / "x.jsonl")
    assert "skipped_path" in str(info.value) and "on_error='skip'" in str(info.value)


# ------------------------------------------------------------------------------------------------
# 8. Options, threads and batches, gzip, folders
# ------------------------------------------------------------------------------------------------


@pytest.mark.parametrize("room,grades,game_length", [(3, (1, 2, 3, 15), "east"), (4, 9, "half"), (0, [0, 5, 0, 5], 1),
                                                     (2, 0, None)])
def test_room_grades_and_game_length_land_in_sparse_and_columns(room, grades, game_length):
    name = "tonpusen_245.json"  # east-only, extended into South: half-length from the log
    frame = read(DATA / name, room=room, grades=grades, game_length=game_length).frame
    four = [grades] * 4 if isinstance(grades, int) else list(grades)
    south = any(e["type"] == "start_kyoku" and e["bakaze"] != "E" for e in events(name))
    length = {"east": 0, "half": 1, 1: 1, None: int(south)}[game_length]
    sparse = frame["sparse"].to_numpy()
    assert (sparse[:, 0] == room).all()
    assert (sparse[:, 1] == 5 + length).all()
    assert (sparse[:, 2:6] == [7 + 16 * s + g for s, g in enumerate(four)]).all()
    assert frame["room"].unique().to_list() == [room]
    assert frame["game_length"].unique().to_list() == [length]
    assert frame["grades"].to_list() == [four] * frame.height


@pytest.mark.parametrize("kw,name", [({"room": 7}, "room"), ({"room": -1}, "room"), ({"room": True}, "room"),
                                     ({"grades": (1, 2)}, "grades"),
                                     ({"grades": 16}, "grades"), ({"grades": "x"}, "grades"),
                                     ({"grades": "1,2"}, "grades"), ({"room": "9"}, "room"),
                                     ({"room": "3"}, "room"),  # text is the command line's to read
                                     ({"game_length": "x"}, "game_length"),
                                     ({"game_length": 2}, "game_length"), ({"workers": 0}, "workers"),
                                     ({"on_error": "ignore"}, "on_error")])
def test_bad_options_are_parameter_errors_naming_the_argument(kw, name):
    with pytest.raises(ParameterError) as info:
        read(DATA / BASE, **kw)
    value = next(iter(kw.values()))
    assert info.value.name == name
    assert str(info.value).startswith(f"`{name}` should"), str(info.value)
    assert f"Received {value!r}." in str(info.value), str(info.value)


def test_threads_and_batches_give_the_same_frame(folder_frame, monkeypatch):
    import rewardlab.sources.mjai.reader as reader

    one = read(DATA, workers=1).frame
    assert one.equals(folder_frame)
    monkeypatch.setattr(reader, "BATCH_BYTES", 1)  # one batch per file, in parallel threads
    assert read(DATA, workers=4).frame.equals(folder_frame)
    assert read(DATA, workers=1).frame.equals(folder_frame)


def test_a_gz_copy_loads_like_the_plain_file_and_other_files_are_ignored(tmp_path, frames):
    for name in ("hanchan_15.json", "tonpusen_193.json.gz"):
        text = raw_text(name)
        (tmp_path / "plain.json").write_bytes(text)
        (tmp_path / "packed.json.gz").write_bytes(gzip.compress(text))
        plain = read(tmp_path / "plain.json").frame
        packed = read(tmp_path / "packed.json.gz").frame
        assert plain.select(SAME).equals(packed.select(SAME)) and plain.select(SAME).equals(frames[name].select(SAME))
        assert plain["game_id"].to_list() == packed["game_id"].to_list() == frames[name]["game_id"].to_list()
    folder = tmp_path / "one"
    folder.mkdir()
    shutil.copy(DATA / BASE, folder / "game.json")
    (folder / "notes.txt").write_text("these are my notes\n")
    (folder / "games.meta").write_text("{}\n")
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        frame = read(folder).frame
    assert frame.select(SAME).equals(frames[BASE].select(SAME))
    assert frame["source_file"].cast(pl.String).unique().to_list() == [str(folder / "game.json")]


def test_skip_mode_quarantines_stray_lines_after_a_game(tmp_path):
    stray = [b'{"type":"tsumo","actor":0,"pai":"1m"}', b'{"type":"dahai","actor":0,"pai":"1m","tsumogiri":true}']
    path = tmp_path / "stray.json"
    path.write_bytes(raw_text(BASE) + b"\n".join(stray) + b"\n")
    expect_error(path, "outside_game", GAMES[BASE]["lines"] + 1, '("tsumo") outside a game')
    with pytest.warns(SkippedLinesWarning, match="outside_game: 1"):
        result = read(path, on_error="skip")
    assert result.skipped["raw"].to_list() == stray
    assert result.skipped["line"].to_list() == [GAMES[BASE]["lines"] + 1, GAMES[BASE]["lines"] + 2]
    assert result.frame.select(SAME).equals(read(DATA / BASE).frame.select(SAME))


def test_a_game_cut_by_the_next_start_game_says_so(tmp_path):
    cut = lines_of(raw_text("hanchan_15.json"))[:400]
    path = tmp_path / "cut.json"
    path.write_bytes(b"".join(line + b"\n" for line in cut) + raw_text(BASE))
    err = expect_error(path, "unended_game", 400)
    assert "the file ends" not in str(err) and "start_game" in str(err) and "401" in str(err), str(err)


def test_crlf_blank_lines_and_a_missing_last_line_end_load_the_same_rows(tmp_path, frames):
    text = raw_text(BASE)
    alone = frames[BASE].select(SAME)
    (tmp_path / "crlf.json").write_bytes(text.replace(b"\n", b"\r\n"))
    assert read(tmp_path / "crlf.json").frame.select(SAME).equals(alone)
    (tmp_path / "open.json").write_bytes(text.rstrip(b"\n"))
    assert read(tmp_path / "open.json").frame.select(SAME).equals(alone)
    # a blank line after each line: the rows are the same, their line numbers double
    (tmp_path / "blank.json").write_bytes(text.replace(b"\n", b"\n \r\n"))
    spaced = read(tmp_path / "blank.json").frame.select(SAME)
    assert spaced.drop("source_line").equals(alone.drop("source_line"))
    assert spaced["source_line"].to_list() == [2 * n - 1 for n in alone["source_line"].to_list()]


def test_a_ron_robbing_a_closed_kan_ends_the_round(tmp_path):
    """Kokushi may rob a closed kan: a hora on the ankan's player right after it is a ron, not out of order."""
    evs = events("hanchan_15.json")
    k = next(i for i, e in enumerate(evs) if e["type"] == "ankan")
    kan = evs[k]
    after, _, _ = replay_scores(evs[:k + 1])
    sticks = next(e["kyotaku"] for e in reversed(evs[:k]) if e["type"] == "start_kyoku") + sum(
        1 for e in evs[next(i for i in range(k, -1, -1) if evs[i]["type"] == "start_kyoku"):k]
        if e["type"] == "reach_accepted")
    robber = (kan["actor"] + 1) % 4
    deltas = [0, 0, 0, 0]
    deltas[robber] = 32000 + STICK * sticks
    deltas[kan["actor"]] = -32000
    robbed = [*evs[:k + 1], {"type": "hora", "actor": robber, "target": kan["actor"], "pai": kan["consumed"][0],
                             "deltas": deltas}, {"type": "end_kyoku"}, {"type": "end_game"}]
    frame = read(write_log(tmp_path / "robbed.json", robbed)).frame
    last = frame.filter("end_of_game").sort("seat")
    scores = [a + d for a, d in zip(after[-1], deltas)]
    top = ranks_of(scores).index(0)
    assert [r[4:] for r in last["results"].to_list()] == [scores] * 4 and scores[top] == max(scores)
    # after the replacement tsumo the kan can no longer be robbed
    m = next(i for i in range(k + 1, len(evs)) if evs[i]["type"] == "tsumo")
    late = [*evs[:m + 1], robbed[k + 1], {"type": "end_kyoku"}, {"type": "end_game"}]
    expect_error(write_log(tmp_path / "late.json", late), "out_of_order", m + 2, '"hora" cannot come here')


def test_a_byte_order_mark_is_read_as_whitespace(tmp_path, frames):
    path = tmp_path / "bom.json"
    path.write_bytes(b"\xef\xbb\xbf" + raw_text(BASE))
    assert read(path).frame.select(SAME).equals(frames[BASE].select(SAME))


def test_a_folder_without_logs_is_refused_naming_the_suffixes(tmp_path):
    (tmp_path / "notes.txt").write_text("no logs here")
    with pytest.raises(ParameterError) as info:
        read(tmp_path)
    assert info.value.name == "paths" and "should name MJAI logs or folders holding some" in str(info.value)
    assert ".jsonl" in str(info.value) and ".bz2" in str(info.value) and str(tmp_path) in str(info.value)
