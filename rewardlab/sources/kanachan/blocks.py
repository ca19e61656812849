"""Blocks of kanachan annotation text -> checked columns: everything about a line that needs no whole file.

A file is read in blocks that end at a line end (:func:`iter_blocks`: a
plain file is memory-mapped, a compressed one decompressed a block at a
time).  Each block is parsed by the compiled tokenizer of
:mod:`rewardlab.sources.kanachan.tokenizer` in a worker thread
(:func:`block_stage`: the line rules, the identifiers from the sparse
features, the next-state rule inside the block), and :func:`file_blocks`
runs the workers and the one check that crosses a block boundary, in file
order.  The whole-file rules (episodes, games) are in
:mod:`rewardlab.sources.kanachan.episodes`.

Examples
--------
>>> import numpy as np
>>> from rewardlab.sources.kanachan.blocks import split_ints
>>> split_ints("1,-2,007"), split_ints("1,+2")
([1, -2, 7], None)
"""

from __future__ import annotations

import bz2
import collections
import dataclasses
import gzip
import os
import zlib
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Iterator

import numpy as np
import polars as pl

from rewardlab.sources.kanachan import schema as S
from rewardlab.sources.kanachan.problems import (HINT, INT_TOKEN, LIST_OF_COLUMN, STATE_COLUMNS, Problems,
                                                 report_codes)
from rewardlab.core.files import check_input, compression_of, open_compressed
from rewardlab.core.errors import DataFormatError
from rewardlab.engines.embedded import available_cores, prefetch

__all__ = ["CHUNK_BYTES", "Block", "ParsedBlock", "iter_blocks", "file_blocks", "block_stage", "parse_block",
           "sparse_identifiers", "check_next_state", "check_boundary", "numeric_next_mismatch", "split_ints"]

#: Bytes of text parsed at a time (bounded memory for big files; 32 MB measured best on 2 cores).
CHUNK_BYTES = 32 << 20


def iter_blocks(path: Path, bar, offset: int = 0, *, chunk_bytes: int = CHUNK_BYTES
                ) -> Iterator[tuple[bytes | memoryview, int]]:
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
                              hint="Name the files: FOLDER/*.tsv.gz on the command line, "
                              "sorted(Path(folder).glob('*.tsv.gz')) in Python; only folders of converted "
                              "datasets are read whole.")
    check_input(path)  # a FIFO or device (opening it could block) or an unreadable file
    if compression_of(path) is None:
        yield from mapped_blocks(path, bar, offset, chunk_bytes)
        return
    # decompression (serial; it releases the GIL) runs a block ahead, beside the parse of the last one
    yield from prefetch(_decompressed_blocks(path, bar, offset, chunk_bytes), depth=2)


def _decompressed_blocks(path: Path, bar, offset: int, chunk_bytes: int) -> Iterator[tuple[bytes, int]]:
    with open_compressed(path) as stream:
        while True:
            try:
                block = stream.read(chunk_bytes)
                if block and not block.endswith(b"\n"):
                    block += stream.readline()  # finish the last line (one copy)
            except (EOFError, OSError, zlib.error, ValueError) as exc:
                raise DataFormatError(
                    path, None, None, "truncated_stream",
                    f"the compressed stream is damaged or truncated ({exc})",
                    hint="Re-download or re-compress the file; the lines before the damage "
                    "cannot be told apart from a complete file.") from None
            if bar is not None:
                pos = compressed_position(stream)
                bar.update(max(0, offset + pos - bar.n))
            if not block:
                break
            yield block, 0


def mapped_blocks(path: Path, bar, offset: int, chunk_bytes: int = CHUNK_BYTES) -> Iterator[tuple[memoryview, int]]:
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
        stop = min(pos + chunk_bytes, size)
        if stop < size:
            cut = mm.rfind(b"\n", pos, stop)
            stop = cut + 1 if cut >= 0 else (mm.find(b"\n", stop) + 1 or size)
        if bar is not None:
            bar.update(max(0, offset + stop - bar.n))
        start = pos - pos % 8  # blocks start on an 8-byte boundary; the bytes before pos are skipped
        yield view[start:stop], pos - start
        pos = stop


def compressed_position(stream) -> int:
    """Bytes of the file on disk consumed so far (for the progress bar; best effort)."""
    try:
        if isinstance(stream, gzip.GzipFile) and stream.fileobj is not None:
            return stream.fileobj.tell()
        if isinstance(stream, bz2.BZ2File):
            return stream._fp.tell()  # noqa: SLF001 - progress only
        return stream.tell()
    except (AttributeError, OSError, ValueError):
        return 0



@dataclasses.dataclass
class Block:
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



def parse_block(data, skip_bytes: int, ends: np.ndarray, first_line: int, problems: Problems) -> Block:
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
    block = Block(
        lines=np.arange(tok.n, dtype=np.int64) + first_line, kind=tok.kind, game_id=None,
        same_game=tok.same_game,
        arrays={S.SPARSE: tok.sparse, S.NUMERIC: tok.numeric, S.PROGRESSION: tok.progression,
                S.CANDIDATES: tok.candidates, S.ROUND_SUMMARY: tok.round_summary, S.RESULTS: tok.results},
        lengths={name: tok.lengths[:, k] for k, name in enumerate(S.LIST_LIMITS)},
        action=tok.action, next_mismatch=tok.next_mismatch, data=data, start=tok.start, end=tok.end, raw=raw)
    block.game_id = game_ids(block)
    if code.any():
        report_codes(block, tok, problems)

    # identifiers we derive from numeric: ben fits uint8, deposits are not negative
    num = tok.numeric
    bad_ben = (block.kind > 0) & ((num[:, 0] < 0) | (num[:, 0] > 255) | (num[:, 1] < 0))
    problems.add(bad_ben, 2, "out_of_range",
                 lambda r: f"ben (numeric[0]) should be in [0, 255] and deposits (numeric[1]) >= 0, "
                 f"found {num[r, 0]} and {num[r, 1]}")
    return block


def game_ids(block: Block) -> pl.Series:
    """Column 0 of every line, as a Categorical (decoded once per run of equal ids)."""
    n = block.kind.shape[0]
    new_run = ~block.same_game
    run_rows = np.flatnonzero(new_run)
    names = [block.line_text(r).split("\t", 1)[0] for r in run_rows.tolist()]
    runs = pl.Series(S.GAME_ID, names, dtype=pl.String).cast(pl.Categorical)
    return runs.gather(np.cumsum(new_run) - 1) if n else runs



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


def sparse_identifiers(sparse: np.ndarray, ok: np.ndarray, problems: Problems):
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
    ids, grades = sparse_identifiers_general(sparse, ok, problems)
    return ids, grades


def sparse_identifiers_general(sparse: np.ndarray, ok: np.ndarray, problems: Problems):
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



def split_ints(text: str | None) -> list[int] | None:
    if text is None:
        return None
    tokens = text.split(",")
    if not all(INT_TOKEN.fullmatch(t) for t in tokens):
        return None
    return [int(t) for t in tokens]


def check_next_state(block: Block, seat: np.ndarray, ok: np.ndarray, problems: Problems):
    """Lines of kind 10/12 must have next-state columns equal to the next line's state.

    The tokenizer compared the texts; pairs that differ as text are compared
    again as numbers (``007`` equals ``7``).  Only pairs of lines of the same
    episode count; a line whose successor starts another episode is reported
    by the episode checks (``missing_end_of_game``).  Returns the carry for
    the block's last line (checked against the next block by
    :func:`check_boundary`).
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
            col = numeric_next_mismatch(block.columns(r)[6:10], block.columns(r + 1)[1:5])
            if col is not None:
                colmap[r] = 6 + col
        if colmap:
            problems.add(np.fromiter(colmap, dtype=np.int64), np.fromiter(colmap.values(), dtype=np.int64),
                         "next_state_mismatch",
                         lambda r: f"next-state column {colmap[r]} ({STATE_COLUMNS[colmap[r] - 6]}) "
                         f"disagrees with the state of line {block.lines[r] + 1}")
    last = n - 1
    return {
        "next": block.columns(last)[6:10] if has_next[last] else None,
        "line": int(block.lines[last]),
        "ok": bool(ok[last]),
        "episode": (block.game_id[last], int(seat[last])),
        "problems": [],
    }


def check_boundary(carry: dict, block: Block, seat: np.ndarray, ok: np.ndarray) -> None:
    """Compare the previous block's last next-state with this block's first state."""
    if not block.kind.size or not ok[0] or not carry["ok"] or carry["next"] is None:
        return
    if carry["episode"] != (block.game_id[0], int(seat[0])):
        return
    j = numeric_next_mismatch(carry["next"], block.columns(0)[1:5])
    if j is not None:
        carry["problems"].append((carry["line"], 6 + j, j, int(block.lines[0])))


def numeric_next_mismatch(next_columns: list[str], state_columns: list[str]) -> int | None:
    """The first of four next-state columns that differs from the state column, as numbers."""
    for j in range(4):
        a, b = next_columns[j], state_columns[j]
        if a != b and split_ints(a) != split_ints(b):
            return j
    return None



def block_stage(data, skip_bytes: int, first_line: int, ends: np.ndarray, spath: str, skip: bool):
    """Everything about one block that needs no other block (runs in a worker thread)."""
    problems = Problems(spath, lambda r, base=first_line: base + r, skip)
    block = parse_block(data, skip_bytes, ends, first_line, problems)
    n = block.kind.shape[0]
    bad = np.zeros(n, dtype=bool)
    if skip:
        bad[problems.bad_rows] = True
    ok = ~bad & (block.kind > 0)
    if not skip and problems.first is not None:
        # rows before the first error are still checked, so the earliest problem wins
        ok[problems.first[0]:] = False
    ids, grades = sparse_identifiers(block.arrays[S.SPARSE], ok, problems)
    if skip:
        bad[problems.bad_rows] = True
        ok = ~bad
    carry_out = check_next_state(block, ids["seat"], ok, problems)
    nbytes = int(ends[-1]) - skip_bytes if ends.size else 0
    return ParsedBlock(block, problems, ids, grades, ok, nbytes), carry_out


@dataclasses.dataclass
class ParsedBlock:
    """One block after every check that needs no whole file.

    ``problems.rows`` (skip mode) holds each rejected row's (column, rule,
    message), the next-state rule across the following block's boundary
    included; ``ok`` marks the rows that passed (raise mode: all of them).
    """

    block: Block
    problems: Problems
    ids: dict[str, np.ndarray]  # seat, room, game length, chang, ju (one per row)
    grades: np.ndarray  # (n, 4) uint8
    ok: np.ndarray
    #: Bytes of text the block's lines took.
    nbytes: int = 0

    def rows(self, lo: int, hi: int) -> "ParsedBlock":
        """Rows ``lo:hi`` of the block (views of its arrays; its problems re-keyed)."""
        b = self.block
        raw = None if b.raw is None else (b.raw[0], b.raw[1][lo:hi], b.raw[2][lo:hi])
        block = Block(lines=b.lines[lo:hi], kind=b.kind[lo:hi], game_id=b.game_id.slice(lo, hi - lo),
                      same_game=b.same_game[lo:hi], arrays={k: v[lo:hi] for k, v in b.arrays.items()},
                      lengths={k: v[lo:hi] for k, v in b.lengths.items()}, action=b.action[lo:hi],
                      next_mismatch=b.next_mismatch[lo:hi], data=b.data,
                      start=None if b.start is None else b.start[lo:hi],
                      end=None if b.end is None else b.end[lo:hi], raw=raw)
        problems = Problems(self.problems.path, self.problems.line_of, self.problems.skip)
        problems.rows = {r - lo: v for r, v in self.problems.rows.items() if lo <= r < hi}
        share = (hi - lo) / max(self.n, 1)
        return ParsedBlock(block, problems, {k: v[lo:hi] for k, v in self.ids.items()}, self.grades[lo:hi],
                           self.ok[lo:hi], int(self.nbytes * share))

    @property
    def first_line(self) -> int:
        return int(self.block.lines[0]) if self.block.lines.size else 0

    @property
    def n(self) -> int:
        return int(self.block.kind.shape[0])


def file_blocks(path: Path, *, skip: bool, bar=None, offset: int = 0, chunk_bytes: int = CHUNK_BYTES,
                workers: int | None = None) -> Iterator[ParsedBlock]:
    """Parse and check one file block by block in ``workers`` threads; yield the blocks in file order.

    Each block is yielded once the following block's first line has been
    compared with its last (the next-state rule across the boundary), so its
    ``problems`` are final.  In raise mode the earliest line-level problem
    raises a :class:`~rewardlab.core.errors.DataFormatError` (file, line,
    column, rule) when its block comes up; an empty file raises ``empty_file``.
    This thread only reads (or decompresses) the blocks and runs the boundary
    check; the workers find the line ends and parse.
    """
    from rewardlab.sources.kanachan.tokenizer import line_ends

    spath = str(path)
    workers = available_cores() if workers is None else workers
    first_line = 1
    carry = None
    held: ParsedBlock | None = None
    with ThreadPoolExecutor(max_workers=workers) as pool:
        source = iter_blocks(path, bar, offset, chunk_bytes=chunk_bytes)
        found = collections.deque()  # (data, skip bytes, future line ends): read, lines being found
        parsing = collections.deque()  # futures of block_stage, in file order
        exhausted = False

        def fill() -> None:
            nonlocal exhausted, first_line
            # keep every worker busy and one block more; the lines of a block are counted before it is parsed
            while not exhausted and len(found) < 2:
                item = next(source, None)
                if item is None:
                    exhausted = True
                    break
                found.append((item[0], item[1], pool.submit(line_ends, item[0], item[1])))
            while found and len(parsing) <= workers:
                data, skip_bytes, ends = found.popleft()
                ends = ends.result()
                parsing.append(pool.submit(block_stage, data, skip_bytes, first_line, ends, spath, skip))
                first_line += ends.size
                if not exhausted and len(found) < 2:
                    item = next(source, None)
                    if item is None:
                        exhausted = True
                    else:
                        found.append((item[0], item[1], pool.submit(line_ends, item[0], item[1])))

        fill()
        while parsing:
            parsed, carry_out = parsing.popleft().result()
            fill()
            block = parsed.block
            if carry is not None:
                check_boundary(carry, block, parsed.ids["seat"], parsed.ok)
                for prev_line, col, j, next_line in carry["problems"]:
                    if not skip:
                        raise DataFormatError(spath, prev_line, col, "next_state_mismatch",
                                              f"next-state column {col} ({STATE_COLUMNS[j]}) disagrees with "
                                              f"the state of line {next_line}", hint=HINT)
                    held.problems.rows.setdefault(held.n - 1, (
                        col, "next_state_mismatch",
                        f"next-state column {col} ({STATE_COLUMNS[j]}) disagrees with the state of line "
                        f"{next_line}"))
            if not skip:
                parsed.problems.raise_first()
                block.drop_text()  # memory stays near the compact frame's size
            if held is not None:
                yield held
            held, carry = parsed, carry_out
    if held is None:
        raise DataFormatError(spath, None, None, "empty_file", "the file has no lines",
                              hint="Check that the path points at an annotation file.")
    yield held
