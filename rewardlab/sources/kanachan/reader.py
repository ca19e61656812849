"""kanachan offline-RL annotation files -> the common frame.

A line is one transition; 8, 10 or 12 TAB-separated columns (see
:mod:`rewardlab.sources.kanachan.schema`, which documents each column).  A file is read
in blocks (a plain file is memory-mapped; a compressed one is decompressed a
block at a time) and two blocks are parsed at once in threads by the
compiled tokenizer of :mod:`rewardlab.sources.kanachan.tokenizer`, which writes the
lists straight into padded fixed-size arrays and checks every line-level
rule.  The next-state columns of a line are not stored: the tokenizer
compares them as bytes with the following line's state columns (pairs that
differ as text are compared again as numbers here), so the frame keeps each
state once.  Rules that need identifiers or whole episodes are checked here
with NumPy on whole columns.

Errors name the file, the 1-based line, the 0-based column and the rule.
With ``on_error="skip"`` malformed lines are dropped together with the
episodes they break (only whole episodes are kept, see
:func:`_skip_episodes`), counted by reason, and kept byte for byte (in the
returned report and, if asked, in a side file), so nothing is lost.
"""

from __future__ import annotations

import dataclasses
import os
import re
import zlib
import gzip
import bz2
from pathlib import Path
from typing import Callable, Iterable

import numpy as np
import polars as pl

from rewardlab.sources.kanachan import schema as S
from rewardlab.sources.results import SKIPPED_LINES_SCHEMA, LoadResult, write_skipped_lines
from rewardlab.core.files import (as_paths, check_input, check_not_input, check_output, compression_of,
                           open_compressed, progress_enabled)
from rewardlab.core.spec import attach, attached
from rewardlab.core.errors import (
    DataFormatError,
    ParameterError,
    SkippedLinesWarning,
    check_choice,
)

__all__ = [
    "LoadResult",
    "read_kanachan",
    "load_kanachan",
    "scan_kanachan",
    "SKIP_REASONS",
    "DATASET_SUFFIXES",
    "is_dataset",
    "SOURCE",
    "sniff_kanachan",
]

#: Bytes of text parsed at a time (bounded memory for big files; 32 MB measured best on 2 cores).
CHUNK_BYTES = 32 << 20

#: Reasons a line can be rejected, in the order they are checked.
SKIP_REASONS: dict[str, str] = {
    "empty_file": "the file has no lines",
    "bad_encoding": "the line has a control character or bytes that are not UTF-8",
    "column_count": "a line has 8, 10 or 12 TAB-separated columns",
    "bad_game_id": "column 0 is a 32-hex-digit game id",
    "not_integer": "list values are decimal integers separated by commas",
    "too_many_ids": "a feature list is at most its maximum length",
    "wrong_length": "numeric has 6 values, results 8, round summary 1-7, lists at least 1",
    "out_of_range": "ids are in [0, number of types)",
    "bad_action": "the action is an index into the candidates",
    "sparse_layout": "sparse features hold one room, game length, seat, chang, ju and one grade per seat",
    "next_state_mismatch": "next-state columns equal the following line's state columns",
    "missing_end_of_game": "an episode's last line is an 8-column end-of-game line",
    "end_of_game_not_last": "an 8-column line is the last line of its episode",
    "episode_not_contiguous": "one player's lines in one game are consecutive",
    "game_reappears": "a game's lines are not interrupted by other games",
    "in_broken_episode": "the line belongs to (or borders) an episode skipped for another line",
}

_STATE_COLUMNS = (S.SPARSE, S.NUMERIC, S.PROGRESSION, S.CANDIDATES)  # file columns 1-4


# ----------------------------------------------------------------------------
# Problems: every check reports rows; raise mode raises the earliest one.
# ----------------------------------------------------------------------------


class _Problems:
    """Collects rule violations for one block of lines.

    ``add`` takes the row indices that break a rule, the column, the rule name
    and a function that renders the message for one row (called only for the
    rows that are reported).
    """

    def __init__(self, path: str, line_of: Callable[[int], int], skip: bool):
        self.path = path
        self.line_of = line_of
        self.skip = skip
        self.first: tuple[int, int | None, str, Callable[[int], str]] | None = None
        self.rows: dict[int, tuple[int | None, str, str]] = {}

    def add(self, rows: np.ndarray, column: int | None | np.ndarray, rule: str, message: Callable[[int], str]):
        rows = np.asarray(rows)
        if rows.dtype == bool:
            rows = np.flatnonzero(rows)
        if rows.size == 0:
            return
        cols = column if isinstance(column, np.ndarray) else None

        def col_at(k):  # a negative column means "the whole line"
            return (int(cols[k]) if cols[k] >= 0 else None) if cols is not None else column

        if self.skip:
            for k, r in enumerate(rows.tolist()):
                if r not in self.rows:
                    self.rows[r] = (col_at(k), rule, message(r))
        else:
            r = int(rows.min())
            if self.first is None or r < self.first[0]:
                self.first = (r, col_at(int(np.argmin(rows))), rule, message)

    def raise_first(self) -> None:
        if self.first is not None:
            r, col, rule, message = self.first
            raise DataFormatError(self.path, self.line_of(r), col, rule, message(r),
                                  hint=_HINT)

    @property
    def bad_rows(self) -> np.ndarray:
        return np.fromiter(sorted(self.rows), dtype=np.int64, count=len(self.rows))


_HINT = "Fix the line, or load with on_error='skip' (CLI: --on-error skip) to skip and keep such lines."


# ----------------------------------------------------------------------------
# Reading text blocks
# ----------------------------------------------------------------------------


def _iter_blocks(path: Path, bar, offset: int = 0) -> Iterable[tuple[bytes | memoryview, int]]:
    """Yield the decompressed file in blocks ``(data, skip)`` that end at a line end.

    The block's lines are ``data[skip:]`` (see :func:`rewardlab.sources.kanachan.tokenizer.tokenize`).

    A plain file is memory-mapped and its blocks are views of the map (no
    copy); a compressed one is decompressed a block at a time.  ``bar`` (a
    tqdm bar over the bytes of all files, or None) is advanced to ``offset``
    plus the bytes of this file read so far.
    """
    if not path.exists():
        raise DataFormatError(path, None, None, "missing_file", "no such file",
                              hint="Check the path.") from None
    if path.is_dir():
        raise DataFormatError(path, None, None, "not_a_file", "is a folder, not an annotation file",
                              hint="Name the files (e.g. sorted(Path(folder).glob('*.tsv.gz'))); only "
                              "folders of converted datasets are read whole.")
    check_input(path)  # a FIFO or device (opening it could block) or an unreadable file
    if compression_of(path) is None:
        yield from _mapped_blocks(path, bar, offset)
        return
    with open_compressed(path) as stream:
        while True:
            try:
                block = stream.read(CHUNK_BYTES)
                if block and not block.endswith(b"\n"):
                    block += stream.readline()  # finish the last line (one copy)
            except (EOFError, OSError, zlib.error, ValueError) as exc:
                raise DataFormatError(
                    path, None, None, "truncated_stream",
                    f"the compressed stream is damaged or truncated ({exc})",
                    hint="Re-download or re-compress the file; the lines before the damage "
                    "cannot be told apart from a complete file.") from None
            if bar is not None:
                pos = _compressed_position(stream)
                bar.update(max(0, offset + pos - bar.n))
            if not block:
                break
            yield block, 0


def _mapped_blocks(path: Path, bar, offset: int) -> Iterable[tuple[memoryview, int]]:
    """Blocks of a plain file as views of a read-only memory map, each ending at a line end."""
    import mmap

    with open(path, "rb") as f:
        size = os.fstat(f.fileno()).st_size
        if size == 0:
            return
        # pages are mapped as the workers reach them (pre-populating measured slower: it is serial)
        mm = mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_READ)
    view = memoryview(mm)
    pos = 0
    while pos < size:
        stop = min(pos + CHUNK_BYTES, size)
        if stop < size:
            cut = mm.rfind(b"\n", pos, stop)
            stop = cut + 1 if cut >= 0 else (mm.find(b"\n", stop) + 1 or size)
        if bar is not None:
            bar.update(max(0, offset + stop - bar.n))
        start = pos - pos % 8  # blocks start on an 8-byte boundary; the bytes before pos are skipped
        yield view[start:stop], pos - start
        pos = stop


def _compressed_position(stream) -> int:
    """Bytes of the file on disk consumed so far (for the progress bar; best effort)."""
    try:
        if isinstance(stream, gzip.GzipFile) and stream.fileobj is not None:
            return stream.fileobj.tell()
        if isinstance(stream, bz2.BZ2File):
            return stream._fp.tell()  # noqa: SLF001 - progress only
        return stream.tell()
    except (AttributeError, OSError, ValueError):
        return 0


# ----------------------------------------------------------------------------
# One block of lines -> columns
# ----------------------------------------------------------------------------


@dataclasses.dataclass
class _Block:
    """Parsed columns of one block of lines."""

    lines: np.ndarray  # 1-based line numbers (int64)
    kind: np.ndarray  # 8, 10 or 12; 0 for a line with another column count (int8)
    game_id: pl.Series  # Categorical, one per line
    same_game: np.ndarray  # column 0 equals the previous line's (bool)
    arrays: dict[str, np.ndarray]  # padded 2-D arrays
    lengths: dict[str, np.ndarray]
    action: np.ndarray
    next_mismatch: np.ndarray  # see rewardlab.sources.kanachan.tokenizer.Tokens
    data: bytes | None  # the block's text (dropped once it is no longer needed)
    start: np.ndarray | None  # byte offsets of each line in ``data``
    end: np.ndarray | None
    #: The block as read with its line offsets, when ``data`` is a cleaned copy (CRLF line ends made LF).
    raw: tuple | None = None

    def line_text(self, r: int) -> str:
        """Line ``r`` of the block as parsed (without its line end), decoded for messages."""
        return bytes(self.data[self.start[r]:self.end[r]]).decode("utf-8", "replace")

    def line_bytes(self, r: int) -> bytes:
        """Line ``r`` of the block byte for byte as in the file, without its ``\\n`` (a CR before it stays)."""
        data, start, end = self.raw if self.raw is not None else (self.data, self.start, self.end)
        return bytes(data[start[r]:end[r]])

    def columns(self, r: int) -> list[str]:
        """The TAB-separated columns of line ``r``."""
        return self.line_text(r).split("\t")

    def drop_text(self) -> None:
        self.data = self.start = self.end = self.raw = None


#: File column of each parsed list, by its name (round summary and results move with the line kind).
_LIST_OF_COLUMN = {1: S.SPARSE, 2: S.NUMERIC, 3: S.PROGRESSION, 4: S.CANDIDATES,
                   6: S.ROUND_SUMMARY, 7: S.RESULTS, 10: S.ROUND_SUMMARY, 11: S.RESULTS}


def _parse_block(data, skip_bytes: int, ends: np.ndarray, first_line: int, problems: _Problems) -> _Block:
    from rewardlab.sources.kanachan import tokenizer as T
    tok = T.tokenize(data, ends, skip=skip_bytes)
    code = tok.code
    raw = None
    if (code == T.CODES["bad_encoding"]).any() and b"\r\n" in bytes(data[skip_bytes:]):
        # CRLF line ends: parse again without the CRs (a lone CR stays a control character); the
        # lines as read are kept for the skipped record (same lines, so the same line numbers)
        raw = (data, tok.start, tok.end)
        data = bytes(data[skip_bytes:]).replace(b"\r\n", b"\n")
        tok = T.tokenize(data)
        code = tok.code
    if tok.non_ascii.any():  # non-ASCII bytes: fine as UTF-8 (another rule reports them), else bad_encoding
        for r in np.flatnonzero(tok.non_ascii).tolist():
            try:
                valid = "\ufffd" not in bytes(data[tok.start[r]:tok.end[r]]).decode("utf-8")
            except UnicodeDecodeError:
                valid = False
            if not valid:
                code[r] = T.CODES["bad_encoding"]
                tok.column[r] = -1
    block = _Block(
        lines=np.arange(tok.n, dtype=np.int64) + first_line, kind=tok.kind, game_id=None,
        same_game=tok.same_game,
        arrays={S.SPARSE: tok.sparse, S.NUMERIC: tok.numeric, S.PROGRESSION: tok.progression,
                S.CANDIDATES: tok.candidates, S.ROUND_SUMMARY: tok.round_summary, S.RESULTS: tok.results},
        lengths={name: tok.lengths[:, k] for k, name in enumerate(S.LIST_LIMITS)},
        action=tok.action, next_mismatch=tok.next_mismatch, data=data, start=tok.start, end=tok.end, raw=raw)
    block.game_id = _game_ids(block)
    if code.any():
        _report_codes(block, tok, problems)

    # identifiers we derive from numeric: ben fits uint8, deposits are not negative
    num = tok.numeric
    bad_ben = (block.kind > 0) & ((num[:, 0] < 0) | (num[:, 0] > 255) | (num[:, 1] < 0))
    problems.add(bad_ben, 2, "out_of_range",
                 lambda r: f"ben (numeric[0]) should be in [0, 255] and deposits (numeric[1]) >= 0, "
                 f"found {num[r, 0]} and {num[r, 1]}")
    return block


def _game_ids(block: _Block) -> pl.Series:
    """Column 0 of every line, as a Categorical (decoded once per run of equal ids)."""
    n = block.kind.shape[0]
    new_run = ~block.same_game
    run_rows = np.flatnonzero(new_run)
    names = [block.line_text(r).split("\t", 1)[0] for r in run_rows.tolist()]
    runs = pl.Series(S.GAME_ID, names, dtype=pl.String).cast(pl.Categorical)
    return runs.gather(np.cumsum(new_run) - 1) if n else runs


def _report_codes(block: _Block, tok, problems: _Problems) -> None:
    """Turn the tokenizer's per-line error codes into reported problems (messages built on demand)."""
    from rewardlab.sources.kanachan.tokenizer import CODES

    detail, column, lengths = tok.detail, tok.column, tok.lengths
    rules = {v: k for k, v in CODES.items()}

    def name(r):  # columns 6-9 are the next state on 10- and 12-column lines
        c = int(column[r])
        return f"next {_STATE_COLUMNS[c - 6]}" if 6 <= c <= 9 and tok.kind[r] in (10, 12) else _LIST_OF_COLUMN[c]

    def where(r):
        return f"{name(r)} (column {int(column[r])})"

    def spec(r):  # (most values, lowest, highest + 1, padding, exact count)
        return S.LIST_LIMITS[name(r).removeprefix("next ")]

    def out_of_range_rule(r):
        _, lo, hi, _, _ = spec(r)
        return f"in [0, {hi})" if lo == 0 else "a 32-bit integer"

    def col_text(r):
        cols = block.columns(r)
        c = int(column[r])
        return cols[c] if c < len(cols) else ""

    messages = {
        "bad_encoding": lambda r: "the line has a control character or bytes that are not UTF-8",
        "column_count": lambda r: f"expected 8, 10 or 12 TAB-separated columns, found {detail[r]}"
        + (" (empty line)" if detail[r] == 1 and tok.start[r] == tok.end[r] else ""),
        "bad_game_id": lambda r: f"expected a game id of 32 hex digits, found {_clip(col_text(r))!r}",
        "not_integer": lambda r: (f"the action should be a decimal integer, found {_clip(col_text(r))!r}"
                                  if column[r] == 5 else
                                  f"{where(r)} should be decimal integers separated by commas, "
                                  f"found {_first_bad_token(col_text(r))!r}"),
        "too_many_ids": lambda r: f"{where(r)} has {detail[r]} values; at most {spec(r)[0]} are allowed",
        "wrong_length": lambda r: f"{where(r)} should have exactly {spec(r)[4]} values, found {detail[r]}",
        "out_of_range": lambda r: f"{where(r)} has value {detail[r]}; each should be {out_of_range_rule(r)}",
        "bad_action": lambda r: f"action {detail[r]} is not an index into the {lengths[r, 3]} candidates "
        "of column 4",
    }
    code = tok.code
    for value in np.unique(code[code > 0]).tolist():
        rows = np.flatnonzero(code == value)
        rule = rules[value]
        problems.add(rows, column[rows].astype(np.int64), rule, messages[rule])


def _clip(value, width: int = 40) -> str:
    s = "" if value is None else str(value)
    return s if len(s) <= width else s[:width] + "..."


def _first_bad_token(text: str | None) -> str:
    for token in (text or "").split(","):
        if not _INT_TOKEN.fullmatch(token):
            return _clip(token)
    return _clip(text)


# ----------------------------------------------------------------------------
# Identifiers from the sparse features
# ----------------------------------------------------------------------------


#: (name, first id, number of ids) of the identifiers at the head of a sparse vector,
#: in the order kanachan writes them (positions 0-8; seat at position 6).
_HEAD = (
    ("room", S.ROOM_OFFSET, S.NUM_ROOMS),
    ("game length", S.GAME_LENGTH_OFFSET, 2),
    *((f"grade of seat {k}", S.GRADE_OFFSET + S.NUM_GRADES * k, S.NUM_GRADES) for k in range(S.NUM_SEATS)),
    ("seat", S.SEAT_OFFSET, S.NUM_SEATS),
    ("chang", S.CHANG_OFFSET, S.NUM_CHANGS),
    ("ju", S.JU_OFFSET, S.NUM_JUS),
)
_HEAD_LOWS = np.array([lo for _, lo, _ in _HEAD], dtype=np.int64)
_HEAD_COUNTS = np.array([count for _, _, count in _HEAD], dtype=np.int64)


def _sparse_identifiers(sparse: np.ndarray, ok: np.ndarray, problems: _Problems):
    """Derive seat, room, game length, chang, ju and grades; report layout errors.

    Fast path: kanachan writes these nine ids first and in this order, and
    every later id is >= 82, so checking positions 0-9 proves "exactly one id
    of each kind".  Rows that fail it (other orders) take the general path,
    which counts ids by range over the whole vector.
    """
    from rewardlab.sources.kanachan.tokenizer import sparse_head

    head, every = sparse_head(sparse, ok, _HEAD_LOWS, _HEAD_COUNTS, S.DRAWS_OFFSET)
    if every:  # lines that are not ok are reported (or dropped) for another rule
        ids = {name: head[:, pos] for pos, (name, _, _) in enumerate(_HEAD)}
        grades = np.stack([ids.pop(f"grade of seat {k}") for k in range(S.NUM_SEATS)], axis=1)
        return ids, grades
    ids, grades = _sparse_identifiers_general(sparse, ok, problems)
    return ids, grades


def _sparse_identifiers_general(sparse: np.ndarray, ok: np.ndarray, problems: _Problems):
    n = sparse.shape[0]
    s = sparse.astype(np.int32)
    ids = {}
    for name, lo, count in (
        ("room", S.ROOM_OFFSET, S.NUM_ROOMS),
        ("game length", S.GAME_LENGTH_OFFSET, 2),
        ("seat", S.SEAT_OFFSET, S.NUM_SEATS),
        ("chang", S.CHANG_OFFSET, S.NUM_CHANGS),
        ("ju", S.JU_OFFSET, S.NUM_JUS),
    ):
        mask = (s >= lo) & (s < lo + count)
        cnt = mask.sum(axis=1)
        val = np.where(mask, s - lo, 0).sum(axis=1)
        bad = ok & (cnt != 1)
        problems.add(bad, 1, "sparse_layout",
                     lambda r, name=name, lo=lo, count=count, cnt=cnt:
                     f"sparse features should hold exactly one {name} id in [{lo}, {lo + count - 1}], "
                     f"found {cnt[r]}")
        ids[name] = val
    grades = np.zeros((n, S.NUM_SEATS), dtype=np.uint8)
    for seat in range(S.NUM_SEATS):
        lo = S.GRADE_OFFSET + S.NUM_GRADES * seat
        mask = (s >= lo) & (s < lo + S.NUM_GRADES)
        cnt = mask.sum(axis=1)
        bad = ok & (cnt != 1)
        problems.add(bad, 1, "sparse_layout",
                     lambda r, seat=seat, lo=lo, cnt=cnt:
                     f"sparse features should hold exactly one grade id for seat {seat} in "
                     f"[{lo}, {lo + S.NUM_GRADES - 1}], found {cnt[r]}")
        grades[:, seat] = np.where(mask, s - lo, 0).sum(axis=1)
    return ids, grades


# ----------------------------------------------------------------------------
# Next-state agreement between consecutive lines
# ----------------------------------------------------------------------------


#: A list value as the tokenizer reads it (int() would also take "+1", full-width digits and spaces).
_INT_TOKEN = re.compile(r"-?[0-9]{1,18}")


def _split_ints(text: str | None) -> list[int] | None:
    if text is None:
        return None
    tokens = text.split(",")
    if not all(_INT_TOKEN.fullmatch(t) for t in tokens):
        return None
    return [int(t) for t in tokens]


def _check_next_state(block: _Block, seat: np.ndarray, ok: np.ndarray, problems: _Problems):
    """Lines of kind 10/12 must have next-state columns equal to the next line's state.

    The tokenizer compared the texts; pairs that differ as text are compared
    again as numbers (``007`` equals ``7``).  Only pairs of lines of the same
    episode count; a line whose successor starts another episode is reported
    by the episode checks (``missing_end_of_game``).  Returns the carry for
    the block's last line (checked against the next block by
    :func:`_check_boundary`).
    """
    n = block.kind.shape[0]
    has_next = np.isin(block.kind, (10, 12))
    same_episode = np.zeros(n, dtype=bool)
    same_episode[:-1] = (seat[1:] == seat[:-1]) & block.same_game[1:]
    text_mismatch = np.full(n, -1, dtype=np.int64)
    text_mismatch[:-1] = block.next_mismatch[1:]
    cand = ok & has_next & same_episode & (text_mismatch >= 0)
    cand[-1] = False  # the last line is compared with the next block
    cand &= np.concatenate([ok[1:], [False]])  # the following line must be readable
    rows = np.flatnonzero(cand)
    if rows.size:
        colmap = {}
        for r in rows.tolist():
            col = _numeric_next_mismatch(block.columns(r)[6:10], block.columns(r + 1)[1:5])
            if col is not None:
                colmap[r] = 6 + col
        if colmap:
            problems.add(np.fromiter(colmap, dtype=np.int64), np.fromiter(colmap.values(), dtype=np.int64),
                         "next_state_mismatch",
                         lambda r: f"next-state column {colmap[r]} ({_STATE_COLUMNS[colmap[r] - 6]}) "
                         f"disagrees with the state of line {block.lines[r] + 1}")
    last = n - 1
    return {
        "next": block.columns(last)[6:10] if has_next[last] else None,
        "line": int(block.lines[last]),
        "ok": bool(ok[last]),
        "episode": (block.game_id[last], int(seat[last])),
        "problems": [],
    }


def _check_boundary(carry: dict, block: _Block, seat: np.ndarray, ok: np.ndarray) -> None:
    """Compare the previous block's last next-state with this block's first state."""
    if not block.kind.size or not ok[0] or not carry["ok"] or carry["next"] is None:
        return
    if carry["episode"] != (block.game_id[0], int(seat[0])):
        return
    j = _numeric_next_mismatch(carry["next"], block.columns(0)[1:5])
    if j is not None:
        carry["problems"].append((carry["line"], 6 + j, j, int(block.lines[0])))


def _numeric_next_mismatch(next_columns: list[str], state_columns: list[str]) -> int | None:
    """The first of four next-state columns that differs from the state column, as numbers."""
    for j in range(4):
        a, b = next_columns[j], state_columns[j]
        if a != b and _split_ints(a) != _split_ints(b):
            return j
    return None


# ----------------------------------------------------------------------------
# Episode structure over a whole file
# ----------------------------------------------------------------------------


def _episode_checks(game_codes: np.ndarray, seat: np.ndarray, kind: np.ndarray, problems: _Problems,
                    game_name: Callable[[int], str]):
    """Check episode structure; returns episode ids per row (int64)."""
    n = seat.shape[0]
    if n == 0:
        return np.zeros(0, dtype=np.int64)
    new_game = np.ones(n, dtype=bool)
    new_game[1:] = game_codes[1:] != game_codes[:-1]
    new_ep = new_game.copy()
    new_ep[1:] |= seat[1:] != seat[:-1]
    run_start = np.flatnonzero(new_game)
    # a game id that starts a second run
    run_games = game_codes[run_start]
    _, first_idx = np.unique(run_games, return_index=True)
    seen_again = np.ones(run_games.size, dtype=bool)
    seen_again[first_idx] = False
    problems.add(run_start[seen_again], 0, "game_reappears",
                 lambda r: f"game {game_name(r)} reappears after other games; "
                 "a game's lines should be consecutive")
    # seat runs repeating within a game run
    ep_start = np.flatnonzero(new_ep)
    game_run_of_ep = np.cumsum(new_game)[ep_start]
    key2 = game_run_of_ep.astype(np.int64) * 8 + seat[ep_start]
    _, first_ep = np.unique(key2, return_index=True)
    dup_ep = np.ones(ep_start.size, dtype=bool)
    dup_ep[first_ep] = False
    problems.add(ep_start[dup_ep], 1, "episode_not_contiguous",
                 lambda r: f"seat {seat[r]} of game {game_name(r)} has lines before "
                 "another seat's; one player's lines in one game should be consecutive")
    last_of_ep = np.zeros(n, dtype=bool)
    last_of_ep[ep_start[1:] - 1] = True
    last_of_ep[-1] = True
    problems.add(last_of_ep & (kind != 8), None, "missing_end_of_game",
                 lambda r: f"the last line of seat {seat[r]}'s episode in game "
                 f"{game_name(r)} has {kind[r]} columns; it should be an 8-column "
                 "end-of-game line (is the file cut short, or unsorted?)")
    problems.add(~last_of_ep & (kind == 8), None, "end_of_game_not_last",
                 lambda r: "an 8-column end-of-game line is followed by more lines of the same "
                 f"player in game {game_name(r)}")
    return np.cumsum(new_ep) - 1


# ----------------------------------------------------------------------------
# The whole file
# ----------------------------------------------------------------------------


def _block_stage(data, skip_bytes: int, first_line: int, ends: np.ndarray, spath: str, skip: bool):
    """Everything about one block that needs no other block (runs in a worker thread)."""
    problems = _Problems(spath, lambda r, base=first_line: base + r, skip)
    block = _parse_block(data, skip_bytes, ends, first_line, problems)
    n = block.kind.shape[0]
    bad = np.zeros(n, dtype=bool)
    if skip:
        bad[problems.bad_rows] = True
    ok = ~bad & (block.kind > 0)
    if not skip and problems.first is not None:
        # rows before the first error are still checked, so the earliest problem wins
        ok[problems.first[0]:] = False
    ids, grades = _sparse_identifiers(block.arrays[S.SPARSE], ok, problems)
    if skip:
        bad[problems.bad_rows] = True
        ok = ~bad
    carry_out = _check_next_state(block, ids["seat"], ok, problems)
    return block, problems, ids, grades, ok, carry_out


def _numbered_blocks(path: Path, bar, offset: int):
    """(first line number, line ends, block, bytes to skip at its start) for each block of the file."""
    from rewardlab.sources.kanachan.tokenizer import line_ends

    first = 1
    for data, skip in _iter_blocks(path, bar, offset):
        ends = line_ends(data, skip)  # GIL-free: runs while the workers parse
        yield first, ends, data, skip
        first += ends.size


def _read_one_file(path: Path, *, skip: bool, bar, offset: int = 0):
    """Parse and validate one file; return (frame or None, skipped rows frame).

    Blocks are parsed two at a time in worker threads (the tokenizer and
    NumPy release the GIL) while this thread counts the next block's lines;
    the checks that cross block boundaries run in order.
    """
    from concurrent.futures import ThreadPoolExecutor

    spath = str(path)
    blocks: list[_Block] = []
    line_probs: list[_Problems] = []
    ids_list = []
    first_line = 1
    carry = None
    with ThreadPoolExecutor(max_workers=2) as pool:
        pending = []
        source = _numbered_blocks(path, bar, offset)
        ready = [next(source, None)]  # the next block, its lines found while the workers parse

        def submit_next() -> None:
            item = ready.pop()
            if item is not None:
                first, ends, data, skip_bytes = item
                pending.append(pool.submit(_block_stage, data, skip_bytes, first, ends, spath, skip))
            ready.append(next(source, None) if item is not None else None)

        submit_next()
        submit_next()
        while pending:
            block, problems, ids, grades, ok, carry_out = pending.pop(0).result()
            submit_next()
            if carry is not None:
                _check_boundary(carry, block, ids["seat"], ok)
                carry_out["problems"] = carry["problems"]
            if carry_out["problems"] and not skip:
                prev_line, col, j, next_line = carry_out["problems"][0]
                raise DataFormatError(spath, prev_line, col, "next_state_mismatch",
                                      f"next-state column {col} ({_STATE_COLUMNS[j]}) disagrees with "
                                      f"the state of line {next_line}", hint=_HINT)
            if not skip:
                problems.raise_first()
            carry = carry_out
            # drop the block's text now: memory stays near the compact frame's size
            if not skip:  # skip mode keeps the lines: any of them may be skipped with its episode
                block.drop_text()
            blocks.append(block)
            line_probs.append(problems)
            ids_list.append((ids, grades))
            first_line += block.kind.shape[0]
    if first_line == 1:
        raise DataFormatError(spath, None, None, "empty_file", "the file has no lines",
                              hint="Check that the path points at an annotation file.")

    # per-row problems across blocks (skip mode): gather into one table
    n_total = first_line - 1
    row_problem: dict[int, tuple[int | None, str, str]] = {}
    for block, problems in zip(blocks, line_probs):
        base = int(block.lines[0]) - 1 if block.lines.size else 0
        for r, v in problems.rows.items():
            row_problem[base + r] = v
    if carry is not None:
        for prev_line, col, j, next_line in carry["problems"]:
            row_problem.setdefault(prev_line - 1, (col, "next_state_mismatch",
                                   f"next-state column {col} ({_STATE_COLUMNS[j]}) disagrees with "
                                   f"the state of line {next_line}"))

    bad_all = np.zeros(n_total, dtype=bool)
    if row_problem:
        bad_all[np.fromiter(row_problem, dtype=np.int64)] = True

    # ---- episode structure on the rows that passed the line checks
    keep = ~bad_all
    kind = np.concatenate([b.kind for b in blocks])
    seat = np.concatenate([ids["seat"] for ids, _ in ids_list]).astype(np.int64)
    gid_all = pl.concat([b.game_id for b in blocks])
    kept_idx = np.flatnonzero(keep)
    codes_all = gid_all.to_physical().to_numpy().astype(np.int64)  # game ids as numbers, once
    ep_problems = _Problems(spath, lambda r: int(kept_idx[r]) + 1, skip)
    episode = _episode_checks(codes_all[kept_idx], seat[kept_idx], kind[kept_idx], ep_problems,
                              lambda r: gid_all[int(kept_idx[r])])
    if not skip:
        ep_problems.raise_first()
    else:
        keep, episode = _skip_episodes(kind, seat, codes_all, bad_all, row_problem,
                                       {int(kept_idx[r]): v for r, v in ep_problems.rows.items()},
                                       lambda r: gid_all[r])
        kept_idx = np.flatnonzero(keep)

    frame = _assemble(blocks, ids_list, keep, kept_idx, episode, spath)
    skipped = _skipped_frame(spath, blocks, row_problem)
    return frame, skipped


def _skip_episodes(kind: np.ndarray, seat: np.ndarray, codes: np.ndarray, bad: np.ndarray, row_problem: dict,
                   episode_problems: dict, game_name: Callable[[int], str]) -> tuple[np.ndarray, np.ndarray]:
    """Skip mode: which lines to keep, and their episode ids; every dropped line gets a reason in ``row_problem``.

    Only whole episodes are kept, whatever was corrupted.  The file is cut
    into segments that end at the 8-column end-of-game lines that passed the
    line checks (``bad``: the lines in ``row_problem``); a clean file's
    segments are exactly its episodes.  A segment is kept only if none of its
    lines broke a line rule, all of them have one game id and seat, it ends
    with such a line, and no other segment has lines of that game and seat (a
    line corrupted into an end-of-game line splits an episode in two; two
    lines swapped across an episode's start move its first line into the
    segment before).  A bad line whose episode cannot be told is dropped with
    the episodes it could belong to: a segment that starts with a bad line
    drops the one before, and one whose end line is backed by no other line of
    the segment (same game and seat, passed) drops the one after.  Last, a
    game whose kept segments are interrupted by another game's (a game id that
    reappears) is dropped whole.  ``episode_problems`` (the episode rules,
    checked on the lines that passed) only give dropped lines their reason:
    where a corrupted line is the cause they also flag its neighbours.

    Shapes: all (n,); ``seat`` is trusted only on lines that passed.
    Returns (keep mask (n,), episode id of each kept line).
    """
    n = kind.shape[0]
    good = ~bad
    boundary = (kind == 8) & good
    seg = np.cumsum(boundary) - boundary  # the segment of each line (an end line closes its segment)
    n_seg = int(seg[-1]) + 1
    first = np.flatnonzero(np.r_[True, seg[1:] != seg[:-1]])  # the first line of each segment
    last = np.r_[first[1:] - 1, n - 1]
    drop = np.zeros(n_seg, dtype=bool)
    if row_problem:
        drop[seg[np.fromiter(row_problem, dtype=np.int64)]] = True
    drop[-1] |= not boundary[-1]  # no end-of-game line closes the file's last segment
    g = np.flatnonzero(good)
    key = codes[g] * 8 + np.clip(seat[g].astype(np.int64), 0, 7)
    gs = seg[g]
    same_seg = gs[1:] == gs[:-1]
    drop[gs[1:][same_seg & (key[1:] != key[:-1])]] = True  # two players or games in one segment
    game_known = np.zeros(n_seg, dtype=bool)
    game_known[gs] = True  # at least one line passed, and all that passed have one game id
    game_known[gs[1:][same_seg & (codes[g][1:] != codes[g][:-1])]] = False
    # one game and seat in several segments: all of them go
    # the first line of each run (fewer to sort); none when no line passed
    runs = np.r_[True, (key[1:] != key[:-1]) | ~same_seg] if g.size else np.zeros(0, dtype=bool)
    pairs = np.unique(np.stack([key[runs], gs[runs]]), axis=1)
    split_keys, counts = np.unique(pairs[0], return_counts=True)
    split = np.isin(pairs[0], split_keys[counts > 1])
    for k, sg in zip(pairs[0][split].tolist(), pairs[1][split].tolist()):
        if not drop[sg]:
            r = int(g[np.searchsorted(gs, sg)])  # the segment's first line that passed
            row_problem.setdefault(r, (None, "episode_not_contiguous",
                                       f"seat {k % 8} of game {game_name(r)} also has lines elsewhere in the "
                                       "file; one player's lines in one game should be consecutive and end "
                                       "with one 8-column line"))
        drop[sg] = True
    for r, v in episode_problems.items():  # the episode rules name the cause where they apply
        if drop[seg[r]]:
            row_problem.setdefault(r, v)
    cause = np.full(n_seg, -1, dtype=np.int64)  # the first line with a reason, per segment
    rows = np.fromiter(sorted(row_problem), dtype=np.int64, count=len(row_problem))
    cause[seg[rows[::-1]]] = rows[::-1]  # the first row of each segment wins
    # bad lines that may belong to a neighbouring episode (from the drops so far; no cascade)
    back = drop & bad[first]  # starts with a bad line: it may be the end of the segment before
    back[0] = False
    end_key = np.full(n_seg, -1, dtype=np.int64)
    passed_end = good[last]
    end_key[passed_end] = codes[last[passed_end]] * 8 + np.clip(seat[last[passed_end]].astype(np.int64), 0, 7)
    not_end = g != last[gs]
    backed = np.zeros(n_seg, dtype=bool)
    backed[gs[not_end][key[not_end] == end_key[gs[not_end]]]] = True
    fwd = drop & ~backed  # its end line is backed by no other line: it may be the start of the one after
    fwd[-1] = False
    for src, sg in [(x, x - 1) for x in np.flatnonzero(back).tolist()] + \
            [(x, x + 1) for x in np.flatnonzero(fwd).tolist()]:
        if not drop[sg] and cause[sg] < 0:
            cause[sg] = cause[src]
    drop[np.flatnonzero(back) - 1] = True
    drop[np.flatnonzero(fwd) + 1] = True
    # a game whose kept segments are interrupted by another game's: all of its segments go
    known = np.flatnonzero(game_known & ~drop)
    if known.size:
        seg_game = np.zeros(n_seg, dtype=np.int64)
        seg_game[gs[::-1]] = codes[g][::-1]
        run_game = seg_game[known]
        new_run = np.r_[True, run_game[1:] != run_game[:-1]]
        run_start, run_games = known[new_run], run_game[new_run]
        later = np.ones(run_games.size, dtype=bool)
        later[np.unique(run_games, return_index=True)[1]] = False
        because = {}
        for sg in run_start[later].tolist():
            r = int(first[sg])
            because.setdefault(int(seg_game[sg]), r)
            row_problem.setdefault(r, (0, "game_reappears",
                                       f"game {game_name(r)} reappears after other games; a game's lines "
                                       "should be consecutive"))
        gone = known[np.isin(run_game, np.fromiter(because, dtype=np.int64, count=len(because)))]
        for sg in gone.tolist():
            cause[sg] = because[int(seg_game[sg])]
        drop[gone] = True
    keep = ~drop[seg]
    for r in np.flatnonzero(~keep).tolist():
        if r not in row_problem:
            c = int(cause[seg[r]])
            why = f"line {c + 1} ({row_problem[c][1]})" if c >= 0 and c in row_problem else "its structure"
            row_problem[r] = (None, "in_broken_episode", f"the line's episode was skipped because of {why}")
    return keep, seg[keep]


def _assemble(blocks, ids_list, keep, kept_idx, episode, spath) -> pl.DataFrame:
    """Build the frame: one chunk per block (the blocks' arrays are used as they are, not copied)."""
    kind = np.concatenate([b.kind for b in blocks])[kept_idx]
    seat = np.concatenate([ids["seat"] for ids, _ in ids_list])[kept_idx]
    n = kind.shape[0]
    if n:
        ep_start = np.ones(n, dtype=bool)
        ep_start[1:] = episode[1:] != episode[:-1]
        start_idx = np.flatnonzero(ep_start)
        step = np.arange(n) - np.repeat(start_idx, np.diff(np.append(start_idx, n)))
    else:
        step = np.zeros(0, dtype=np.int64)
    source = pl.Series(S.SOURCE_FILE, [spath], dtype=pl.Categorical)
    frames, done = [], 0
    for block, (ids, grades) in zip(blocks, ids_list):
        lo = int(block.lines[0]) - 1 if block.lines.size else 0
        block_keep = keep[lo:lo + block.kind.shape[0]]
        m = int(block_keep.sum())
        if m == 0:
            continue
        pick = (lambda a: a) if block_keep.all() else (lambda a, k=block_keep: a[k])
        arrays = {name: pick(block.arrays.pop(name)) for name in S.LIST_LIMITS}
        rows = slice(done, done + m)
        frames.append(pl.DataFrame({
            S.GAME_ID: block.game_id if block_keep.all() else block.game_id.filter(pl.Series(block_keep)),
            S.GAME: np.zeros(m, dtype=np.uint32),  # numbered across files by the caller
            S.SEAT: seat[rows].astype(np.uint8),
            S.STEP: step[rows].astype(np.uint16),
            S.ROUND: np.zeros(m, dtype=np.uint8),
            S.CHANG: pick(ids["chang"]).astype(np.uint8),
            S.JU: pick(ids["ju"]).astype(np.uint8),
            S.BEN: arrays[S.NUMERIC][:, 0].astype(np.uint8),
            S.ROOM: pick(ids["room"]).astype(np.uint8),
            S.GAME_LENGTH: pick(ids["game length"]).astype(np.uint8),
            S.GRADES: pick(grades),
            S.SPARSE: arrays[S.SPARSE],
            S.NUMERIC: arrays[S.NUMERIC],
            S.PROGRESSION: arrays[S.PROGRESSION],
            S.CANDIDATES: arrays[S.CANDIDATES],
            S.ACTION: pick(block.action).astype(np.uint8),
            S.ROUND_SUMMARY: arrays[S.ROUND_SUMMARY],
            S.RESULTS: arrays[S.RESULTS],
            S.END_OF_ROUND: kind[rows] == 12,
            S.END_OF_GAME: kind[rows] == 8,
            S.SOURCE_FILE: source.gather(np.zeros(m, dtype=np.int64)),
            S.SOURCE_LINE: pick(block.lines).astype(np.uint32),
        }))
        done += m
    if not frames:
        return pl.DataFrame(schema=S.FRAME_SCHEMA)
    return pl.concat(frames, how="vertical", rechunk=False) if len(frames) > 1 else frames[0]


def _skipped_frame(spath: str, blocks: list[_Block], row_problem: dict) -> pl.DataFrame:
    if not row_problem:
        return pl.DataFrame(schema=SKIPPED_LINES_SCHEMA)
    rows = sorted(row_problem)
    starts = [int(b.lines[0]) - 1 if b.lines.size else 0 for b in blocks]
    texts, raws = [], []
    for r in rows:
        k = int(np.searchsorted(starts, r, side="right")) - 1
        raws.append(blocks[k].line_bytes(r - starts[k]))
        texts.append(raws[-1].decode("utf-8", "replace").removesuffix("\r"))
    return pl.DataFrame({
        "file": [spath] * len(rows),
        "line": [r + 1 for r in rows],
        "column": [row_problem[r][0] for r in rows],
        "reason": [row_problem[r][1] for r in rows],
        "message": [row_problem[r][2] for r in rows],
        "text": texts,
        "raw": raws,
    }, schema=SKIPPED_LINES_SCHEMA)


# ----------------------------------------------------------------------------
# Public API
# ----------------------------------------------------------------------------




# Dataset layouts live in rewardlab.sources.storage; the names are re-exported here.
from rewardlab.sources.storage import DATASET_SUFFIXES, is_dataset, read_dataset, scan_dataset  # noqa: E402
from rewardlab.sources.registry import Source, register_source  # noqa: E402


def read_kanachan(
    paths,
    *,
    on_error: str = "raise",
    skipped_path: str | Path | None = None,
    overwrite: bool = False,
    progress: bool | None = None,
) -> LoadResult:
    """Load kanachan annotation files (plain, ``.gz``, ``.bz2``) and report skipped lines.

    Parameters
    ----------
    paths : path or sequence of paths
        Annotation files, read in the order given; games must not repeat
        across files.  A converted Parquet dataset is accepted too.
    on_error : {"raise", "skip"}
        ``"raise"`` stops at the first malformed line with a
        :class:`~rewardlab.core.errors.DataFormatError` naming file, line, column
        and rule.  ``"skip"`` drops malformed lines and the episodes they
        touch, counts them by reason and keeps them in ``result.skipped``.
    skipped_path : path, optional
        With ``on_error="skip"``, also write the skipped lines verbatim to
        this side file (atomic; refuses to overwrite unless ``overwrite``).
    overwrite : bool
        Replace an existing ``skipped_path``.
    progress : bool, optional
        Show a tqdm bar over the input bytes (default: when interactive).

    Returns
    -------
    LoadResult
        ``frame`` (schema :data:`rewardlab.sources.kanachan.schema.FRAME_SCHEMA`), ``skipped``
        and ``skipped_path``.

    Examples
    --------
    >>> from rewardlab import read_kanachan
    >>> result = read_kanachan("data/sample.tsv.gz", progress=False)  # doctest: +SKIP
    >>> result.frame.height, result.skip_counts  # doctest: +SKIP
    (90012, {})
    """
    check_choice("on_error", on_error, ("raise", "skip"))
    files = as_paths(paths)
    if skipped_path is not None and on_error != "skip":
        raise ParameterError("skipped_path", "is only used with on_error='skip'", str(skipped_path))
    if all(is_dataset(p) for p in files):
        return LoadResult(_kanachan_dataset(read_dataset(files), files), pl.DataFrame(schema=SKIPPED_LINES_SCHEMA))
    if any(is_dataset(p) for p in files):
        raise ParameterError("paths", "should be all annotation files or all Parquet datasets",
                             [str(p) for p in files])
    check_not_input(skipped_path, files, name="skipped_path")  # even with overwrite
    if skipped_path is not None:
        check_output(skipped_path, overwrite=overwrite)  # before any work
    skip = on_error == "skip"
    frames, skipped = [], []
    total = sum(p.stat().st_size for p in files if p.exists())
    from tqdm.auto import tqdm

    with tqdm(total=total, unit="B", unit_scale=True, desc="loading kanachan",
              disable=not progress_enabled(progress), leave=False) as bar:
        for path in files:
            start = bar.n
            frame, skip_df = _read_one_file(path, skip=skip, bar=bar, offset=start)
            bar.n = start + (path.stat().st_size if path.exists() else 0)
            bar.refresh()
            frames.append(frame)
            skipped.append(skip_df)
    frame = pl.concat(frames, how="vertical") if len(frames) > 1 else frames[0]
    skipped_df = pl.concat(skipped) if skipped else pl.DataFrame(schema=SKIPPED_LINES_SCHEMA)
    frame = attach(_number_games(frame, files, skip=skip), S.KANACHAN_SPEC)
    result_path = None
    if skip and skipped_path is not None:
        result_path = write_skipped_lines(skipped_df["raw"].to_list(), skipped_path, overwrite=overwrite)
    result = LoadResult(frame, skipped_df, result_path)
    if skip and skipped_df.height:
        import warnings

        counts = ", ".join(f"{k}: {v}" for k, v in result.skip_counts.items())
        where = f"; kept in {result_path}" if result_path else "; see result.skipped"
        warnings.warn(SkippedLinesWarning(
            f"skipped {skipped_df.height} of {skipped_df.height + frame.height} lines ({counts}){where}"),
            stacklevel=2)
    return result


def _kanachan_dataset(frame, files: list[Path]):
    """``frame`` (a DataFrame or LazyFrame read from a dataset), refused when it is another source's frame."""
    spec = attached(frame)
    if spec is not None and spec.name != S.KANACHAN_SPEC.name:
        raise ParameterError("paths", f"should be kanachan data; {files[0]} holds a {spec.name!r} frame",
                             [str(p) for p in files], hint="Open it with rewardlab.load() or rewardlab.scan().")
    return frame


def _number_games(frame: pl.DataFrame, files: list[Path], *, skip: bool) -> pl.DataFrame:
    """Number games in load order and compute the game-wide round index; check games across files."""
    if frame.height == 0:
        return frame
    codes = frame[S.GAME_ID].to_physical().to_numpy()  # Categorical codes are global: equal ids, equal codes
    starts = np.ones(frame.height, dtype=bool)
    starts[1:] = codes[1:] != codes[:-1]
    if len(files) > 1:
        src = frame[S.SOURCE_FILE].to_physical().to_numpy()
        starts[1:] |= src[1:] != src[:-1]
    game = np.cumsum(starts) - 1
    if len(files) > 1:
        run_codes = codes[starts]
        _, first = np.unique(run_codes, return_index=True)
        dup = np.ones(run_codes.size, dtype=bool)
        dup[first] = False
        if dup.any():
            r = int(np.flatnonzero(starts)[np.argmax(dup)])
            raise DataFormatError(frame[S.SOURCE_FILE][r], int(frame[S.SOURCE_LINE][r]), 0,
                                  "game_reappears",
                                  f"game {frame[S.GAME_ID][r]} also appears in an earlier file; a game's "
                                  "lines should be in one place", hint="Remove the duplicate game.")
    from rewardlab.sources.kanachan.tokenizer import game_rounds

    key = (frame[S.CHANG].to_numpy().astype(np.int64) * 4096 + frame[S.JU].to_numpy().astype(np.int64) * 256
           + frame[S.BEN].to_numpy())
    rounds = game_rounds(key, np.flatnonzero(starts))
    return frame.with_columns(pl.Series(S.GAME, game.astype(np.uint32)),
                              pl.Series(S.ROUND, rounds.astype(np.uint8)))


def load_kanachan(
    paths,
    *,
    on_error: str = "raise",
    skipped_path: str | Path | None = None,
    overwrite: bool = False,
    progress: bool | None = None,
) -> pl.DataFrame:
    """Load kanachan annotation files (or a converted Parquet dataset) into the common frame.

    Same options as :func:`read_kanachan`; with ``on_error="skip"`` a
    ``skipped_path`` is required so the skipped lines are kept somewhere
    (use :func:`read_kanachan` to keep them in memory instead).

    Examples
    --------
    >>> import rewardlab
    >>> frame = rewardlab.load_kanachan("data/sample.tsv.gz", progress=False)  # doctest: +SKIP
    >>> frame.select("game_id", "seat", "step", "end_of_game").head(2)  # doctest: +SKIP
    """
    if on_error == "skip" and skipped_path is None:
        raise ParameterError(
            "skipped_path", "is required with on_error='skip' so skipped lines are kept", None,
            hint="Name a side file, or call read_kanachan() to get them in memory.")
    return read_kanachan(paths, on_error=on_error, skipped_path=skipped_path,
                         overwrite=overwrite, progress=progress).frame


def scan_kanachan(paths) -> pl.LazyFrame:
    """Lazily scan converted datasets (``.parquet`` or ``.arrow``; see ``rewardlab convert``).

    Annotation text files are parsed eagerly (they must be validated whole)
    and returned as a lazy frame; convert them once for lazy scans of data
    larger than memory.

    Examples
    --------
    >>> import rewardlab
    >>> lf = rewardlab.scan_kanachan("data/sample.parquet")  # doctest: +SKIP
    >>> lf.filter(pl.col("end_of_game")).select(pl.len()).collect()  # doctest: +SKIP
    """
    files = as_paths(paths)
    if not all(is_dataset(p) for p in files):
        return load_kanachan(files, progress=False).lazy()
    return _kanachan_dataset(scan_dataset(files), files)


# ----------------------------------------------------------------------------
# The source registry entry
# ----------------------------------------------------------------------------

#: Suffixes claimed without looking inside (the content test recognizes any other name).
KANACHAN_SUFFIXES = (".tsv", ".tsv.gz", ".tsv.bz2")

_GAME_ID_BYTES = re.compile(rb"[0-9a-fA-F]{32}")


def sniff_kanachan(path) -> bool:
    """True when the file's first line looks like a kanachan annotation line (8, 10 or 12
    TAB-separated columns, a 32-hex-digit game id first); reads at most 64 KiB.

    Examples
    --------
    >>> sniff_kanachan("data/sample.tsv.gz")  # doctest: +SKIP
    True
    """
    try:
        with open_compressed(path) as f:
            head = f.read(1 << 16)
    except (OSError, EOFError, ValueError):  # not readable, not gzip / bz2 after all
        return False
    line = head.split(b"\n", 1)[0].rstrip(b"\r")
    columns = line.split(b"\t")
    return len(columns) in (8, 10, 12) and _GAME_ID_BYTES.fullmatch(columns[0]) is not None


def _load_source(paths, *, on_error: str = "raise", skipped_path=None, overwrite: bool = False,
                 progress: bool | None = None) -> pl.DataFrame:
    return load_kanachan(paths, on_error=on_error, skipped_path=skipped_path, overwrite=overwrite,
                         progress=progress)


def _scan_source(paths, *, progress: bool | None = None) -> pl.LazyFrame:
    files = as_paths(paths)
    if all(is_dataset(p) for p in files):
        return scan_dataset(files)
    frame = load_kanachan(files, progress=progress)
    return attach(frame.lazy(), S.KANACHAN_SPEC)


def _read_source(paths, *, on_error: str = "raise", skipped_path=None, overwrite: bool = False,
                 progress: bool | None = None) -> LoadResult:
    return read_kanachan(paths, on_error=on_error, skipped_path=skipped_path, overwrite=overwrite,
                         progress=progress)


#: kanachan annotation files as a source (format ``"kanachan"``).
SOURCE = register_source(Source(
    name="kanachan",
    spec=S.KANACHAN_SPEC,
    load=_load_source,
    scan=_scan_source,
    read=_read_source,
    suffixes=KANACHAN_SUFFIXES,
    sniff=sniff_kanachan,
    description="kanachan offline-RL annotation files (TAB-separated text, plain, .gz or .bz2)",
))
