"""MJAI game logs into the kanachan frame: files, batches, threads, messages, skip mode.

A load lists the log files (files named, and the logs of folders named),
groups them into batches of about :data:`BATCH_BYTES` of text, and runs the
compiled scanner and tracker on each batch in a pool of threads (the kernels
release the GIL; gzip too).  A batch returns compact row arrays and its game
records; its text is dropped, so memory grows with the frame, not with the
JSON text.  The batches' rows are ordered by episode (game, seat, step) and
become the columns of :data:`rewardlab.sources.kanachan.schema.FRAME_SCHEMA`
with the kanachan spec attached.

What the log cannot give is padding, the same in every row
(:data:`PADDED_COLUMNS`): ``progression`` (all 2165), ``candidates`` (all 546)
and ``action`` (0); ``room`` and ``grades`` come from the options.

A game that breaks a rule raises :class:`~rewardlab.core.errors.DataFormatError`
naming the file, line and rule; with ``on_error="skip"`` the whole game (its
lines from ``start_game`` to ``end_game``) is quarantined: counted, kept
byte for byte in ``result.skipped`` and the side file, and none of its rows
are kept.  A file that cannot be read as a log (a damaged ``.gz`` / ``.bz2``,
or a compressed body under a plain name: rule ``unreadable`` or
``looks_compressed``) is an error too; skip mode leaves it out whole: one row
of ``result.skipped`` names it (``line`` and ``raw`` null: its bytes stay in
that file, and nothing of it goes to the side file).  A file with no event at
all (empty, blank lines, a byte order mark) is refused in both modes (rule
``empty_file``), as kanachan text and step tables are.

Examples
--------
>>> import rewardlab
>>> frame = rewardlab.load_mjai("data/mjai", progress=False)  # doctest: +SKIP
>>> frame.select("game_id", "seat", "step", "end_of_game").head(2)  # doctest: +SKIP
"""

from __future__ import annotations

import hashlib
import os
import warnings
import zlib
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import polars as pl

from rewardlab.core.errors import DataFormatError, ParameterError, SkippedLinesWarning, check_choice, \
    check_int
from rewardlab.core.fronts import Fix, Text
from rewardlab.core.files import (as_paths, check_input, check_not_input, check_output, compression_of, open_compressed,
                                  progress_enabled)
from rewardlab.core.spec import attach
from rewardlab.sources.kanachan import schema as S
from rewardlab.sources.mjai import tiles as T
from rewardlab.sources.results import SKIPPED_LINES_SCHEMA, LoadResult, write_skipped_lines

__all__ = ["read_mjai", "load_mjai", "log_files", "compression_by_content", "MJAI_SUFFIXES", "PADDED_COLUMNS",
           "DEFAULTS", "BATCH_BYTES"]

#: File names a folder's logs are found by (and a ``.gz`` or ``.bz2`` of each).
MJAI_SUFFIXES = (".json", ".jsonl", ".mjson", ".log")
#: About this much text per batch (a batch is a unit of parallel work and of memory).
BATCH_BYTES = 8 << 20
#: Columns a log cannot fill, and the value every row gets.
PADDED_COLUMNS = {
    S.PROGRESSION: f"all {S.NUM_TYPES_OF_PROGRESSION_FEATURES}: an MJAI log has no kanachan progression encoding",
    S.CANDIDATES: f"all {S.NUM_TYPES_OF_ACTIONS}: a log records the choice, not the legal options",
    S.ACTION: "0: an index into padding candidates",
}
#: What rows get for what a log does not say (options of :func:`read_mjai`).
DEFAULTS = {"room": 0, "grades": (0, 0, 0, 0), "game_length": "from the log: half-length when a South "
            "round is played, else east-only"}
_CODE_NAMES = {v: k for k, v in T.RULE_CODES.items()}
_PAYMENT_NAMES = {v: k for k, v in T.PAYMENT_RULES.items()}
#: Leading bytes of compressed streams: (magic, kind, the suffix rewardlab reads it by, or None).
_MAGIC = ((b"\x1f\x8b", "gzip", ".gz"), (b"BZh", "bz2", ".bz2"), (b"\xfd7zXZ\x00", "xz", None),
          (b"\x28\xb5\x2f\xfd", "zstd", None), (b"PK\x03\x04", "zip", None))
_BOM = b"\xef\xbb\xbf"
_HINT = Text("Fix the log, or ", Fix("on_error", "skip", verb="load with", option=True), " to quarantine the whole game and keep its lines.")
_PHASES = ("outside a game", "after start_game / end_kyoku (a start_kyoku or end_game comes next)",
           "at the start of a round (the dealer's tsumo comes next)",
           "while a player holds a drawn or called tile (a discard, riichi, kan or tsumo win comes next)",
           "after a riichi declaration (its discard comes next)",
           "after a discard (a call, ron, reach_accepted or the next tsumo comes next)",
           "after a kan (the replacement tsumo comes next)",
           "after an added kan (a robbing ron or the replacement tsumo comes next)",
           "after the round's result (end_kyoku, or another ron on the same tile, comes next)", "")


def log_files(paths) -> list[Path]:
    """The files a load reads: the files named, and, for a folder, its logs (:data:`MJAI_SUFFIXES`,
    plain, ``.gz`` or ``.bz2``, recursively, sorted by path).

    Examples
    --------
    >>> [p.name for p in log_files("data/mjai")][:2]
    ['hanchan_102.json.gz', 'hanchan_15.json']
    """
    out: list[Path] = []
    for p in as_paths(paths):
        check_input(p, folder=True)
        if p.is_dir():
            found = sorted(q for q in p.rglob("*") if q.is_file() and _log_name(q.name))
            if not found:
                raise ParameterError("paths", "should name MJAI logs or folders holding some (files ending "
                                     + ", ".join(MJAI_SUFFIXES) + ", plain, .gz or .bz2)", str(p))
            out += found
        else:
            out.append(p)
    return out


def _log_name(name: str) -> bool:
    name = name.lower().removesuffix(".gz").removesuffix(".bz2")
    return name.endswith(MJAI_SUFFIXES)


# ----------------------------------------------------------------------------------------------
# One batch of files
# ----------------------------------------------------------------------------------------------


@dataclass
class _Batch:
    """What one batch gives back: kept rows (in episode order), its games, and what it quarantined."""

    files: list[Path]
    frame: pl.DataFrame | None = None  # rows of good games in episode order; "game" numbers them in the batch
    game_ids: list = field(default_factory=list)  # per good game
    game_files: np.ndarray | None = None  # per good game: index into files
    game_lines: np.ndarray | None = None  # per good game: its start_game line number
    game_last: np.ndarray | None = None  # per good game: its last line number
    game_length: np.ndarray | None = None
    bad: list = field(default_factory=list)  # DataFormatError per quarantined game or file, in file order
    # per quarantined game: (file, first line, raw lines, error); per file left out: (file, None, None, error)
    skipped: list = field(default_factory=list)


def _read_text(path: Path) -> bytes:
    with open_compressed(path) as f:
        return f.read()


def compression_by_content(head: bytes) -> tuple[str, str | None] | None:
    """``(kind, suffix)`` of the compressed stream the bytes ``head`` begin with (gzip, bz2, xz, zstd, zip;
    ``suffix`` is the one rewardlab decompresses it by, None for kinds it does not read), or None.

    Examples
    --------
    >>> import gzip
    >>> compression_by_content(gzip.compress(b"{}")), compression_by_content(b'{"type":"start_game"}')
    (('gzip', '.gz'), None)
    """
    for magic, kind, suffix in _MAGIC:
        if head.startswith(magic) and (kind != "bz2" or (len(head) > 3 and head[3] in b"123456789")):
            return kind, suffix
    return None


def _unreadable(path: Path, exc: Exception) -> DataFormatError:
    """The error of a compressed log that does not decompress: what its bytes look like, and what to do."""
    try:
        with open(path, "rb") as f:
            head = f.read(16)
    except OSError:
        head = b""
    named = compression_of(path)
    found = compression_by_content(head)
    text = head.removeprefix(_BOM).lstrip(b" \t\r\n")
    if found is not None and found[0] != named and found[1] is not None:
        hint = f"It is {found[0]}, not {named}: rename it to end in {found[1]} instead."
    elif found is None and text[:1] == b"{":
        hint = f"Its bytes are plain text (JSON lines), not {named}: rename it without {path.suffix}."
    else:
        hint = "Check the file (a download or copy cut short?), or leave it out."
    return DataFormatError(path, None, None, "unreadable", f"cannot be read as a plain, gzip or bz2 log "
                           f"({type(exc).__name__}: {exc})", hint=hint)


def _file_problem(path: Path, data: bytes) -> DataFormatError | None:
    """The error of a file whose text cannot be a log at all: a compressed body under a plain name, or no
    event (empty, blank lines, a byte order mark); None for any other text (the kernels judge it)."""
    if compression_of(path) is None:
        found = compression_by_content(data[:16])
        if found is not None:
            kind, suffix = found
            what = (f"rename it to {path.name}{suffix} (rewardlab decompresses .gz and .bz2 logs by their name)"
                    if suffix else f"decompress it ({kind}); rewardlab reads plain, .gz and .bz2 logs")
            return DataFormatError(path, None, None, "looks_compressed",
                                   f"looks compressed: it begins with the bytes of a {kind} stream, but its name "
                                   f"says plain text", hint=f"Check the file: {what}.")
    if not _has_content(data[:4096]) and not _has_content(data):
        return DataFormatError(path, None, None, "empty_file",
                               "the file has no events (it is empty, or holds only blank lines or a byte order "
                               "mark)", hint="Check that the path points at an MJAI log, or leave the file out.")
    return None


def _has_content(data: bytes) -> bool:
    """Whether ``data`` holds anything but whitespace and byte order marks (what the scanner skips)."""
    return bool(data.replace(_BOM, b"").strip(b" \t\r\n"))


def _run_batch(files: list[Path], *, skip: bool, room: int, grades, game_length: int) -> _Batch:
    # the compiled kernels import numba: only a load needs them, not `import rewardlab` or format detection
    from rewardlab.sources.mjai.scanner import scan
    from rewardlab.sources.mjai.tracker import track

    out = _Batch(files)
    texts, kept_files = [], []
    problems = []  # (file index, line, error, skipped entry): sorted into file order at the end
    for f, path in enumerate(files):
        try:
            data = _read_text(path)
        except (OSError, EOFError, zlib.error) as e:
            err = _unreadable(path, e)
        else:
            err = _file_problem(path, data)
        if err is not None:
            if err.rule == "empty_file":  # no events at all: refused in skip mode too, before any more work
                out.bad = [err]
                return out
            problems.append((f, 0, err, (path, None, None, err)))
            if not skip:
                break  # raise mode: what comes after this file is not reported
            continue
        if data and not data.endswith(b"\n"):
            data += b"\n"
        texts.append(data)
        kept_files.append(f)
    buf = np.frombuffer(b"".join(texts), dtype=np.uint8)
    ends = np.flatnonzero(buf == 10)
    starts = np.empty_like(ends)
    if ends.size:
        starts[0] = 0
        starts[1:] = ends[:-1] + 1
    counts = [t.count(b"\n") for t in texts]
    file_starts = np.zeros(len(texts) + 1, dtype=np.int64)
    np.cumsum(counts, out=file_starts[1:])
    ev = scan(buf, starts, ends)
    tr = track(ev, file_starts, room=room, grades=grades, game_length=game_length)
    del ev

    def where(line: int) -> tuple[Path, int, int]:
        k = int(np.searchsorted(file_starts, line, side="right") - 1)
        return files[kept_files[k]], line - int(file_starts[k]) + 1, k

    good = tr.g_code == 0
    for g in np.flatnonzero(~good):
        path, number, k = where(int(tr.g_line[g]))
        first_path, first_number, _ = where(int(tr.g_first[g]))
        line = buf[starts[tr.g_line[g]]:ends[tr.g_line[g]]].tobytes()
        values = tr.g_values[g].copy()
        if tr.g_code[g] == T.RULE_CODES["unended_game"] and values[0] == 1:  # the line of the start_game that cut it
            values[1] = number + int(values[1] - tr.g_line[g])
        err = _error(path, number, int(tr.g_code[g]), values, line, tr.g_final[g])
        raws = None
        if skip:
            raws = [buf[starts[i]:ends[i]].tobytes() for i in range(int(tr.g_first[g]), int(tr.g_last[g]) + 1)]
        problems.append((kept_files[k], number, err, (first_path, first_number, raws, err)))
        if not skip:
            break  # raise mode: the batch's first problem is all that is reported (files read stop at a bad one)
    problems.sort(key=lambda p: (p[0], p[1]))
    out.bad = [p[2] for p in problems]
    out.skipped = [p[3] for p in problems] if skip else []
    if out.bad and not skip:
        return out
    games = np.flatnonzero(good)
    out.game_ids = [hashlib.blake2b(buf[starts[tr.g_first[g]]:ends[tr.g_last[g]] + 1], digest_size=16).hexdigest()
                    for g in games]
    first, last = tr.g_first[games], tr.g_last[games]
    in_file = np.searchsorted(file_starts, first, side="right") - 1  # a game never spans two files
    out.game_files = np.asarray(kept_files, dtype=np.int64)[in_file]
    out.game_lines = first - file_starts[in_file] + 1
    out.game_last = last - file_starts[in_file] + 1
    out.game_length = tr.g_length[games].astype(np.uint8)
    # rows: renumber games to the good ones, order by (game, seat, step), keep only what the frame needs
    new_game = np.full(tr.games, -1, dtype=np.int64)
    new_game[games] = np.arange(games.size)
    row_game = new_game[tr.game]
    order = np.argsort(row_game * 4 + tr.seat, kind="stable")
    line_file = np.searchsorted(file_starts, tr.line, side="right") - 1
    rows = {
        "game": row_game[order],
        "file": line_file[order] if tr.rows else np.zeros(0, np.int64),
        "line": (tr.line - file_starts[line_file] + 1)[order].astype(np.uint32),
        S.SEAT: tr.seat[order], S.STEP: tr.step[order], S.ROUND: tr.round[order], S.CHANG: tr.chang[order],
        S.JU: tr.ju[order], S.BEN: tr.ben[order], S.SPARSE: tr.sparse[order], S.NUMERIC: tr.numeric[order],
        S.RESULTS: tr.results[order], S.ROUND_SUMMARY: tr.summary[order],
        S.END_OF_ROUND: tr.end_of_round[order], S.END_OF_GAME: tr.end_of_game[order],
    }
    del tr
    out.frame = _frame(rows, out.game_ids, out.game_length, [str(files[f]) for f in kept_files], room=room,
                       grades=grades)
    return out


def _error(path: Path, number: int, code: int, values, line: bytes, extra=(0, 0, 0, 0)) -> DataFormatError:
    """The message of a game's broken rule (only formatted for games that are reported); ``extra``: the
    tracker's four numbers of the record (a win's deltas, or the final scores ranks were checked by)."""
    rule = _CODE_NAMES.get(code, "invalid")
    v0, v1, v2, v3 = (int(x) for x in values)
    four = [int(x) for x in extra]
    text = line.decode("utf-8", "replace")
    field_name = T.FIELD_NAMES.get(v0, "?")
    kind = lambda k: T.NAME_OF_KIND.get(k, str(k))  # noqa: E731
    event = lambda t: T.EVENT_NAMES.get(t, "?")  # noqa: E731
    if rule == "not_json":
        msg = f"is not one JSON object: {_clip(text)}"
    elif rule == "unknown_event":
        msg = f"has an event type that is not MJAI's: {_clip(text)} (known: {', '.join(T.EVENT_TYPES)})"
    elif rule == "bad_tile":
        msg = (f'"{field_name}" holds a name that is no tile: {_clip(text)} (tiles: 1m-9m, 1p-9p, 1s-9s, '
               "5mr 5pr 5sr, E S W N P F C)")
    elif rule == "bad_value":
        msg = f'"{field_name}" has a value of the wrong shape ({_SHAPES.get(field_name, "")}): {_clip(text)}'
    elif rule == "no_type":
        msg = f'is a JSON object without "type": {_clip(text)}'
    elif rule == "outside_game":
        msg = f'has an event ("{event(v0)}") outside a game: before its start_game or after its end_game'
    elif rule == "out_of_order":
        msg = f'"{event(v0)}" cannot come here: {_PHASES[v1] if 0 <= v1 < len(_PHASES) else ""}'
    elif rule == "wrong_player":
        msg = f"seat {v0} acts (or is named) here, but the game expects seat {v1}: {_clip(text)}"
    elif rule == "hand_inconsistent":
        msg = f"seat {v0}'s hand holds no {kind(v1)} to give up here (tracked through draws, discards and calls)"
    elif rule == "too_many_copies":
        msg = (f"the round shows {kind(v0)} {v1} times (dealt, drawn or as a dora indicator), more than "
               "the set holds")
    elif rule == "missing_field":
        msg = f'the event needs "{field_name}": {_clip(text)}'
    elif rule == "scores_mismatch":
        msg = (f"seat {v0}'s score is given as {v1}, but the round's starting scores, riichi sticks and "
               f"deltas make it {v2}")
    elif rule == "scores_do_not_add_up":
        msg = (f"the scores plus 1000 per riichi stick on the table add up to {v0}, not the game's total "
               f"{v1}: the deltas do not balance")
    elif rule == "unended_game":
        msg = (f"the game has no end_game: a start_game (line {v1}) begins the next game after this line"
               if v0 == 1 else
               "the file ends inside a game (no end_game after its last start_game)")
    elif rule == "out_of_range" and field_name == "scores":
        msg = (f"a score (given, or after this event's deltas, or final) reaches {v1}, outside what kanachan's "
               f"layout holds ({_RANGES['scores']})")
    elif rule == "out_of_range":
        shown = "ESWN"[v1] if field_name == "bakaze" and 0 <= v1 < 4 else v1
        msg = f'"{field_name}" is {shown}, outside what kanachan\'s layout holds ({_RANGES.get(field_name, "")})'
    elif rule == "wrong_payment":
        msg = _payment_message(v0, v1, v2, v3, four)
    elif rule == "ranks_mismatch":
        msg = (f"end_game gives seat {v0} rank {v1}, but the final scores {four} rank it {v2} ({v3} = top: the "
               "higher score first, of equal scores the lower seat; riichi sticks left at the end go to the top "
               "player)")
    elif rule == "round_order":
        msg = _round_order_message(v0, v1, v2, v3)
    elif rule == "hidden_tile":
        msg = (f'"{field_name}" holds a hidden tile "?": rewardlab needs full game records that show every '
               "hand and draw (a player's own view hides the others')")
    elif rule == "hand_size":
        msg = f"seat {v0} holds {v1} concealed tiles here; it should hold {v2}"
    elif rule == "deposits_mismatch":
        msg = f"kyotaku is {v0}, but {v1} riichi sticks are left on the table from the rounds before"
    elif rule == "wrong_tile":
        msg = f"seat {v0}'s tile is {kind(v1)}, but the game says {kind(v2)}"
    elif rule == "wrong_meld":
        msg = f"seat {v0}'s consumed tiles do not make this call: {_clip(text)}"
    else:
        msg = f"breaks rule {rule}: {_clip(text)}"
    return DataFormatError(path, number, None, rule, msg, hint=_HINT)


_SHAPES = {"type": "a string", "actor": "a seat 0-3", "target": "a seat 0-3", "oya": "a seat 0-3",
           "pai": "a tile name", "dora_marker": "a tile name", "consumed": "a list of up to 4 tile names",
           "tsumogiri": "true or false", "bakaze": '"E", "S", "W" or "N"', "kyoku": "an integer >= 0",
           "honba": "an integer >= 0", "kyotaku": "an integer >= 0", "scores": "4 integers",
           "deltas": "4 integers", "tehais": "4 lists of tile names", "tenpais": "4 booleans",
           "ranks": "4 integers, 1 = top"}
_RANGES = {"bakaze": "East, South and West rounds", "kyoku": "1-4", "honba": "0-255",
           "oya": "the dealer of kyoku k is seat k - 1", "pai": "70 draws per round",
           "dora_marker": "5 indicators, one more per kan", "tehais": "255 rounds per game",
           "scores": "within +-2^30: its score columns are 32-bit"}


def _payment_message(sub: int, seat: int, a: int, b: int, deltas: list[int]) -> str:
    """A ``wrong_payment`` message: which payment rule (:data:`rewardlab.sources.mjai.tiles.PAYMENT_RULES`)."""
    name = _PAYMENT_NAMES.get(sub, "?")
    pays = lambda s: -deltas[s]  # noqa: E731
    if name == "bystander_pays":
        text = (f"in a ron only the discarder (seat {b}) pays (with a seat that fed the winner's big three "
                f"dragons, big four winds or four kans: pao), but seat {seat}, neither the winner nor the "
                f"discarder, has a delta of {a}")
    elif name == "discarder_free":
        text = f"seat {seat} discarded the tile this ron wins on, so it pays, but its delta is {a}"
    elif name == "payer_free" and b == 1:
        text = (f"seat {seat} fed the winner's big three dragons, big four winds or four kans (pao), so it pays "
                f"this tsumo, but its delta is {a}")
    elif name == "payer_free":
        text = f"in a tsumo every other player pays, but seat {seat}'s delta is {a}"
    elif name == "unequal_shares":
        text = (f"seats {seat} and {a} pay {pays(seat)} and {pays(a)}, but they pay equal shares of a tsumo (the "
                "two non-dealers of a non-dealer's tsumo, all three of the dealer's)")
    elif name == "dealer_share":
        text = (f"the dealer (seat {seat}) pays {pays(seat)}, no more than seat {a}'s {pays(a)}: a non-dealer's "
                "tsumo costs the dealer the larger share")
    else:
        paid = sum(pays(s) for s in range(4) if s != seat)
        sticks = (b - paid) // 1000
        text = (f"the winner (seat {seat}) gains {a}, but what the others pay ({paid}) plus the riichi sticks it "
                f"takes ({sticks} x 1000: the table's sticks go to the round's first winner) make {b}")
    return f"{text}; the win's deltas: {deltas} (payment rule {name})"


def _round_order_message(case: int, given: int, honba: int, before: int) -> str:
    """A ``round_order`` message: the round given and the round(s) the one before allows."""
    name = lambda code: f"{'ESWN'[code // 4 % 4]}{code % 4 + 1}"  # noqa: E731
    prev, ben = before // 1024, before % 1024
    nxt = name(prev + 1)
    if case == 1:
        want = f"after a non-dealer's win in {name(prev)} honba {ben} the deal passes on: {nxt} honba 0"
    elif case == 2:
        want = f"after the dealer's win in {name(prev)} honba {ben} the dealer keeps it: {name(prev)} honba {ben + 1}"
    else:
        want = (f"after a draw in {name(prev)} honba {ben} one more honba: {name(prev)} or {nxt} honba {ben + 1}")
    return f"this round is {name(given)} honba {honba}, but {want} comes next"


def _clip(text: str, width: int = 120) -> str:
    return text if len(text) <= width else text[:width] + "..."


# ----------------------------------------------------------------------------------------------
# The load
# ----------------------------------------------------------------------------------------------


def _batches(files: list[Path]) -> list[list[Path]]:
    out, cur, size = [], [], 0
    for p in files:
        try:
            n = p.stat().st_size * (8 if compression_of(p) else 1)  # about what compressed logs unpack to
        except OSError:
            n = 0
        if cur and size + n > BATCH_BYTES:
            out.append(cur)
            cur, size = [], 0
        cur.append(p)
        size += n
    if cur:
        out.append(cur)
    return out


def _check_options(room, grades, game_length) -> tuple[int, tuple[int, ...], int]:
    """The options as (room, four grades, game length code); errors echo the value as given."""
    room = check_int("room", room, low=0, high=S.NUM_ROOMS - 1,
                     rule=f"should be an integer 0-{S.NUM_ROOMS - 1} (0 bronze .. 4 throne)")
    four = (grades,) * 4 if isinstance(grades, (int, np.integer)) and not isinstance(grades, bool) else grades
    if (not isinstance(four, (list, tuple)) or len(four) != 4
            or not all(isinstance(g, (int, np.integer)) and not isinstance(g, bool) and 0 <= g < S.NUM_GRADES
                       for g in four)):
        raise ParameterError("grades", f"should be one grade 0-{S.NUM_GRADES - 1} or four (seats 0-3)", grades)
    lengths = {None: -1, "auto": -1, 0: 0, 1: 1, "east": 0, "half": 1}
    if isinstance(game_length, bool) or game_length not in lengths:
        raise ParameterError("game_length", "should be None (from the log), 'east' (0) or 'half' (1)",
                             game_length)
    return room, tuple(int(g) for g in four), lengths[game_length]


def read_mjai(
    paths,
    *,
    on_error: str = "raise",
    skipped_path: str | Path | None = None,
    overwrite: bool = False,
    room: int = 0,
    grades=0,
    game_length: int | str | None = None,
    workers: int | None = None,
    progress: bool | None = None,
) -> LoadResult:
    """Load MJAI game logs (plain, ``.gz`` or ``.bz2``; files or folders) into the kanachan frame.

    One row per decision of a player (a discard, a riichi declaration, a chi
    / pon / open kan, a closed or added kan, a win), with the state before it;
    episodes per (game, seat), rounds keyed by (chang, ju, ben).  See
    :mod:`rewardlab.sources.mjai` for what each column holds.

    Parameters
    ----------
    paths : path or sequence of paths
        Log files (one game each, or several games one after the other) and
        folders of logs, read in the order given (a folder's logs sorted).
    on_error : {"raise", "skip"}
        ``"raise"`` stops at the first broken rule with a
        :class:`~rewardlab.core.errors.DataFormatError` naming file, line and
        rule; ``"skip"`` quarantines each broken game whole (counted by rule,
        its lines kept in ``result.skipped``).
    skipped_path : path, optional
        With ``on_error="skip"``, also write the quarantined lines verbatim
        to this side file (atomic; refuses to overwrite unless ``overwrite``).
    overwrite : bool
        Replace an existing ``skipped_path``.
    room : int
        Room (0 bronze .. 4 throne) written in every row; a log has none.
    grades : int or four ints
        Grade (0-15) of each seat's player; a log has none.
    game_length : None, "east" or "half"
        None: half-length when the game plays a South round, else east-only
        (an east-only game extended into South reads as half-length: say so).
    workers : int, optional
        Threads (default: the machine's cores).
    progress : bool, optional
        Show a tqdm bar over the files (default: when interactive).

    Returns
    -------
    LoadResult
        ``frame`` (schema :data:`rewardlab.sources.kanachan.schema.FRAME_SCHEMA`, kanachan spec),
        ``skipped`` and ``skipped_path``.

    Examples
    --------
    >>> from rewardlab import read_mjai
    >>> result = read_mjai("data/mjai", progress=False)
    >>> result.frame.select("seat").n_unique(), result.skip_counts
    (4, {})
    """
    check_choice("on_error", on_error, ("raise", "skip"))
    room, grades, length = _check_options(room, grades, game_length)
    if workers is not None:
        workers = check_int("workers", workers, low=1, rule="should be an integer >= 1")
    if skipped_path is not None and on_error != "skip":
        raise ParameterError("skipped_path", Text("is only used with ", Fix("on_error", "skip", verb="", option=True)), str(skipped_path))
    files = log_files(paths)
    check_not_input(skipped_path, files, name="skipped_path")
    if skipped_path is not None:
        check_output(skipped_path, overwrite=overwrite)
    skip = on_error == "skip"
    batches = _batches(files)
    offsets = np.cumsum([0] + [len(b) for b in batches])
    from tqdm.auto import tqdm

    results: list[_Batch] = []
    with tqdm(total=len(files), unit="log", desc="loading MJAI logs", disable=not progress_enabled(progress),
              leave=False) as bar, ThreadPoolExecutor(max_workers=workers or os.cpu_count() or 1) as pool:
        futures = [pool.submit(_run_batch, b, skip=skip, room=room, grades=grades, game_length=length)
                   for b in batches]
        try:
            for fut in futures:
                batch = fut.result()
                bar.update(len(batch.files))
                if batch.bad and (not skip or batch.bad[0].rule == "empty_file"):
                    raise batch.bad[0]  # raise mode; an empty file is refused in skip mode too
                results.append(batch)
        finally:
            for fut in futures:
                fut.cancel()
    _drop_duplicates(results, files, offsets, skip=skip)
    frame = _assemble(results)
    skipped = _skipped_frame(results)
    result_path = None
    if skip and skipped_path is not None:
        # a file left out whole has no line here (raw null): its bytes stay in the file the message names
        result_path = write_skipped_lines([r for r in skipped["raw"].to_list() if r is not None], skipped_path,
                                          overwrite=overwrite)
    result = LoadResult(frame, skipped, result_path)
    message = _skip_message(results, skipped, result_path)
    if message:
        warnings.warn(SkippedLinesWarning(message), stacklevel=2)
    return result


def _skip_message(results: list[_Batch], skipped: pl.DataFrame, result_path) -> str:
    """The warning of a skip-mode load: games quarantined (counted by rule) and files left out (named)."""
    games = [err for b in results for _, _, raws, err in b.skipped if raws is not None]
    files = [err for b in results for _, _, raws, err in b.skipped if raws is None]
    parts = []
    if games:
        lines = skipped.filter(pl.col("raw").is_not_null()).height
        where = f"; kept in {result_path}" if result_path else "; see result.skipped"
        parts.append(f"quarantined {len(games)} game{'s' if len(games) > 1 else ''} ({lines} lines; "
                     f"{_counts(games)}){where}")
    if files:
        names = ", ".join(str(err.path) for err in files[:3]) + (", ..." if len(files) > 3 else "")
        parts.append(f"left out {len(files)} file{'s' if len(files) > 1 else ''} that cannot be read as logs "
                     f"({_counts(files)}): {names}; their bytes stay in those files (see result.skipped)")
    return "; ".join(parts)


def _counts(errors: list[DataFormatError]) -> str:
    counts: dict[str, int] = {}
    for err in errors:
        counts[err.rule] = counts.get(err.rule, 0) + 1
    return ", ".join(f"{k}: {v}" for k, v in sorted(counts.items(), key=lambda kv: (-kv[1], kv[0])))


def _skipped_frame(results: list[_Batch]) -> pl.DataFrame:
    rows = {k: [] for k in SKIPPED_LINES_SCHEMA}
    for b in results:
        for path, first, raws, err in b.skipped:
            for j, raw in enumerate(raws or ()):
                number = first + j
                rows["file"].append(str(path))
                rows["line"].append(number)
                rows["column"].append(None)
                rows["reason"].append(err.rule)
                rows["message"].append(str(err) if number == err.line else
                                       f"in the game quarantined for {err.path}:{err.line} ({err.rule})")
                rows["text"].append(raw.decode("utf-8", "replace"))
                rows["raw"].append(raw)
            if raws is None:  # a file left out whole: named, its bytes left where they are
                message = f"{err} (the file is left out whole; its bytes stay in {path}, not in the side file)"
                for k, v in (("file", str(path)), ("line", None), ("column", None), ("reason", err.rule),
                             ("message", message), ("text", None), ("raw", None)):
                    rows[k].append(v)
    return pl.DataFrame(rows, schema=SKIPPED_LINES_SCHEMA)


def _assemble(results: list[_Batch]) -> pl.DataFrame:
    """The batches' frames as one, games numbered in load order."""
    frames, base = [], 0
    for b in results:
        if b.frame is not None and b.frame.height:
            frames.append(b.frame.with_columns((pl.col(S.GAME) + base).cast(pl.UInt32)))
        base += len(b.game_ids)
        b.frame = None  # the batch's rows are in the frame now
    if not frames:
        return attach(pl.DataFrame(schema=S.FRAME_SCHEMA), S.KANACHAN_SPEC)
    return attach(pl.concat(frames, how="vertical") if len(frames) > 1 else frames[0], S.KANACHAN_SPEC)


def _frame(rows: dict, ids: list[str], lengths: np.ndarray, names: list[str], *, room: int, grades) -> pl.DataFrame:
    """A batch's rows as a kanachan frame (``game`` numbers its games, ``rows["file"]`` indexes ``names``)."""
    n = rows["game"].size
    game = rows["game"]
    data = {
        S.GAME_ID: pl.Series(S.GAME_ID, ids, dtype=pl.String).cast(pl.Categorical).gather(game),
        S.GAME: game.astype(np.uint32),
        S.SEAT: rows[S.SEAT], S.STEP: rows[S.STEP], S.ROUND: rows[S.ROUND], S.CHANG: rows[S.CHANG],
        S.JU: rows[S.JU], S.BEN: rows[S.BEN],
        S.ROOM: np.full(n, room, dtype=np.uint8),
        S.GAME_LENGTH: lengths[game],
        S.GRADES: np.broadcast_to(np.asarray(grades, dtype=np.uint8), (n, S.NUM_SEATS)),
        S.SPARSE: rows[S.SPARSE], S.NUMERIC: rows[S.NUMERIC],
        S.PROGRESSION: np.full((n, S.MAX_LENGTH_OF_PROGRESSION_FEATURES), S.NUM_TYPES_OF_PROGRESSION_FEATURES,
                               dtype=np.int16),
        S.CANDIDATES: np.full((n, S.MAX_NUM_ACTION_CANDIDATES), S.NUM_TYPES_OF_ACTIONS, dtype=np.int16),
        S.ACTION: np.zeros(n, dtype=np.uint8),
        S.ROUND_SUMMARY: rows[S.ROUND_SUMMARY], S.RESULTS: rows[S.RESULTS],
        S.END_OF_ROUND: rows[S.END_OF_ROUND], S.END_OF_GAME: rows[S.END_OF_GAME],
        S.SOURCE_FILE: pl.Series(S.SOURCE_FILE, names, dtype=pl.String).cast(pl.Categorical).gather(rows["file"]),
        S.SOURCE_LINE: rows["line"],
    }
    return pl.DataFrame({name: (value if isinstance(value, pl.Series) else pl.Series(name, value, dtype=dtype))
                         for (name, dtype), value in zip(S.FRAME_SCHEMA.items(), data.values())})


def _drop_duplicates(results: list[_Batch], files: list[Path], offsets, *, skip: bool) -> None:
    """A game seen twice (the same bytes: a copied log) is an error naming both places; in skip mode the
    later copy is quarantined like a broken game (its lines read again from its file)."""
    first: dict[str, tuple[int, int]] = {}
    for k, b in enumerate(results):
        drop = []
        for j, gid in enumerate(b.game_ids):
            if gid not in first:
                first[gid] = (k, j)
                continue
            a = results[first[gid][0]]
            ja = first[gid][1]
            path = files[offsets[k] + b.game_files[j]]
            err = DataFormatError(path, int(b.game_lines[j]), None, "game_reappears",
                                  f"this game is the same, byte for byte, as the one at "
                                  f"{files[offsets[first[gid][0]] + a.game_files[ja]]}:{int(a.game_lines[ja])}",
                                  hint=Text("Remove the duplicate log, or ", Fix("on_error", "skip", verb="load with", option=True), " to quarantine it."))
            if not skip:
                raise err
            lines = _read_text(path).split(b"\n")[int(b.game_lines[j]) - 1:int(b.game_last[j])]
            b.skipped.append((path, int(b.game_lines[j]), lines, err))
            drop.append(j)
        if drop:
            _drop_games(b, np.asarray(drop))


def _drop_games(b: _Batch, drop: np.ndarray) -> None:
    """Take games ``drop`` (indices in the batch) and their rows out of batch ``b``; renumber the rest."""
    keep = np.setdiff1d(np.arange(len(b.game_ids)), drop)
    b.game_ids = [b.game_ids[j] for j in keep]
    b.game_files, b.game_lines = b.game_files[keep], b.game_lines[keep]
    b.game_last, b.game_length = b.game_last[keep], b.game_length[keep]
    frame = b.frame.filter(~pl.col(S.GAME).is_in(drop.tolist()))
    b.frame = frame.with_columns(pl.Series(S.GAME, np.searchsorted(keep, frame[S.GAME].to_numpy()).astype(np.uint32)))


def load_mjai(
    paths,
    *,
    on_error: str = "raise",
    skipped_path: str | Path | None = None,
    overwrite: bool = False,
    room: int = 0,
    grades=0,
    game_length: int | str | None = None,
    workers: int | None = None,
    progress: bool | None = None,
) -> pl.DataFrame:
    """Load MJAI game logs into the kanachan frame (:func:`read_mjai`'s frame).

    With ``on_error="skip"`` a ``skipped_path`` is required so the
    quarantined games are kept somewhere (use :func:`read_mjai` to keep them
    in memory instead).

    Examples
    --------
    >>> import rewardlab
    >>> frame = rewardlab.load_mjai("data/mjai", progress=False)
    >>> frame.filter("end_of_game").height
    24
    """
    if on_error == "skip" and skipped_path is None:
        raise ParameterError("skipped_path", Text("is required with ", Fix("on_error", "skip", verb="", option=True), " so quarantined games are kept"),
                             None, hint="Name a side file, or call read_mjai() to get them in memory.")
    return read_mjai(paths, on_error=on_error, skipped_path=skipped_path, overwrite=overwrite, room=room,
                     grades=grades, game_length=game_length, workers=workers, progress=progress).frame
