"""kanachan offline-RL annotation files -> the common frame.

A line is one transition; 8, 10 or 12 TAB-separated columns (see
``shared/kanachan-format.md`` and :mod:`rewardlab.schema`).  Parsing is
vectorized: Polars splits and casts whole columns, NumPy pads the lists into
fixed-size arrays, and every rule is checked on whole columns at once.  The
next-state columns of a line are not stored: they are compared (as text,
falling back to numbers) with the following line's state columns, and the
frame keeps each state once.

Errors name the file, the 1-based line, the 0-based column and the rule.
With ``on_error="skip"`` malformed lines are dropped together with the
episodes they break, counted by reason, and kept verbatim (in the returned
report and, if asked, in a side file), so nothing is lost.
"""

from __future__ import annotations

import dataclasses
import zlib
import gzip
import bz2
from pathlib import Path
from typing import Callable, Iterable

import numpy as np
import polars as pl

from rewardlab import schema as S
from rewardlab._io import atomic_open, open_compressed, progress_enabled
from rewardlab.errors import (
    DataFormatError,
    OutputExistsError,
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
]

#: Bytes of decompressed text parsed at a time (bounded memory for big files).
CHUNK_BYTES = 64 << 20

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

_LIST_COLUMNS = {
    # name: (max length, exclusive upper bound, padding, exact length or None, numpy dtype)
    S.SPARSE: (S.MAX_NUM_ACTIVE_SPARSE_FEATURES, S.NUM_TYPES_OF_SPARSE_FEATURES,
               S.NUM_TYPES_OF_SPARSE_FEATURES, None, np.int16),
    S.NUMERIC: (S.NUM_NUMERIC_FEATURES, None, 0, S.NUM_NUMERIC_FEATURES, np.int32),
    S.PROGRESSION: (S.MAX_LENGTH_OF_PROGRESSION_FEATURES, S.NUM_TYPES_OF_PROGRESSION_FEATURES,
                    S.NUM_TYPES_OF_PROGRESSION_FEATURES, None, np.int16),
    S.CANDIDATES: (S.MAX_NUM_ACTION_CANDIDATES, S.NUM_TYPES_OF_ACTIONS,
                   S.NUM_TYPES_OF_ACTIONS, None, np.int16),
    S.ROUND_SUMMARY: (S.MAX_NUM_ROUND_SUMMARY, S.NUM_TYPES_OF_ROUND_SUMMARY,
                      S.NUM_TYPES_OF_ROUND_SUMMARY, None, np.int8),
    S.RESULTS: (S.RL_NUM_RESULTS, None, 0, S.RL_NUM_RESULTS, np.int32),
}
_STATE_COLUMNS = (S.SPARSE, S.NUMERIC, S.PROGRESSION, S.CANDIDATES)  # file columns 1-4
_INT32_MIN, _INT32_MAX = -(2**31), 2**31 - 1


@dataclasses.dataclass(frozen=True)
class LoadResult:
    """What :func:`read_kanachan` returns.

    Attributes
    ----------
    frame : polars.DataFrame
        The loaded transitions (schema :data:`rewardlab.schema.FRAME_SCHEMA`).
    skipped : polars.DataFrame
        One row per skipped line: ``file``, ``line``, ``column``, ``reason``,
        ``message`` and ``text`` (the line verbatim).  Empty unless
        ``on_error="skip"``.
    skipped_path : Path or None
        The side file the skipped lines were written to, if any.

    Examples
    --------
    >>> result = read_kanachan("data/sample.tsv.gz", on_error="skip")  # doctest: +SKIP
    >>> result.skip_counts  # doctest: +SKIP
    {}
    """

    frame: pl.DataFrame
    skipped: pl.DataFrame
    skipped_path: Path | None = None

    @property
    def skip_counts(self) -> dict[str, int]:
        """Skipped lines per reason, most frequent first."""
        if self.skipped.height == 0:
            return {}
        counts = self.skipped.group_by("reason").len().sort(["len", "reason"], descending=[True, False])
        return dict(zip(counts["reason"].to_list(), counts["len"].to_list()))


_SKIPPED_SCHEMA = {
    "file": pl.String,
    "line": pl.UInt32,
    "column": pl.Int16,
    "reason": pl.String,
    "message": pl.String,
    "text": pl.String,
}


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
        if self.skip:
            for k, r in enumerate(rows.tolist()):
                if r not in self.rows:
                    col = int(cols[k]) if cols is not None else column
                    self.rows[r] = (col, rule, message(r))
        else:
            r = int(rows.min())
            if self.first is None or r < self.first[0]:
                col = int(cols[int(np.argmin(rows))]) if cols is not None else column
                self.first = (r, col, rule, message)

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


def _iter_blocks(path: Path, bar, offset: int = 0) -> Iterable[bytes]:
    """Yield the decompressed file in blocks that end at a line end.

    ``bar`` (a tqdm bar over the bytes of all files, or None) is advanced to
    ``offset`` plus the bytes of this file read so far.
    """
    try:
        stream = open_compressed(path)
    except FileNotFoundError:
        raise DataFormatError(path, None, None, "missing_file", "no such file",
                              hint="Check the path.") from None
    with stream:
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
            yield block


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
    """Parsed columns of one block (only rows that passed line-level checks)."""

    lines: np.ndarray  # 1-based line numbers (int64)
    kind: np.ndarray  # 8, 10 or 12 (int8)
    game_id: pl.Series  # String
    arrays: dict[str, np.ndarray]  # padded 2-D arrays
    lengths: dict[str, np.ndarray]
    action: np.ndarray
    next_text: pl.DataFrame | None  # next-state columns as text (for rows of kind 10/12)
    state_text: pl.DataFrame | None  # state columns 1-4 as text
    text: pl.Series | None  # the raw lines (kept in skip mode, for the side file)


def _parse_block(data: bytes, path: str, first_line: int, problems: _Problems) -> _Block:
    df = pl.read_csv(
        data, has_header=False, separator="\x1f", quote_char=None, new_columns=["line"],
        schema={"line": pl.String}, empty_string_is_null=False, encoding="utf8-lossy",
        truncate_ragged_lines=True, raise_if_empty=False,
    )
    text = df["line"]
    if b"\r" in data:
        text = text.str.strip_suffix("\r")
    n = text.len()
    rows = np.arange(n)

    # control characters (incl. our split byte) or undecodable bytes
    if _maybe_binary(data):
        bad = text.str.contains(r"[\x00-\x08\x0b-\x1f\x7f\x{FFFD}]").to_numpy()
        problems.add(bad, None, "bad_encoding",
                     lambda r: "the line has a control character or bytes that are not UTF-8")

    ncols = (text.str.count_matches("\t", literal=True) + 1).to_numpy().astype(np.int64)
    bad_count = ~np.isin(ncols, (8, 10, 12))
    problems.add(bad_count, None, "column_count",
                 lambda r: f"expected 8, 10 or 12 TAB-separated columns, found {ncols[r]}"
                 + (" (empty line)" if ncols[r] == 1 and text[r] == "" else ""))

    fields = text.str.split_exact("\t", 11).struct.unnest()
    fields.columns = [f"c{i}" for i in range(12)]
    kind = np.where(bad_count, 0, ncols).astype(np.int8)

    # ---- game id
    gid = fields["c0"]
    ok_gid = gid.str.contains(r"^[0-9a-fA-F]{32}$").fill_null(False).to_numpy()
    problems.add(~ok_gid & ~bad_count, 0, "bad_game_id",
                 lambda r: f"expected a game id of 32 hex digits, found {_clip(fields['c0'][r])!r}")

    # ---- list columns
    is8 = kind == 8
    is12 = kind == 12
    k = pl.col("k")
    sel = fields.with_columns(k=pl.Series(kind)).select(
        rs=pl.when(k == 8).then("c6").when(k == 12).then("c10"),
        res=pl.when(k == 8).then("c7").when(k == 12).then("c11"),
    )
    rs_text, res_text = sel["rs"], sel["res"]
    sources = {
        S.SPARSE: (fields["c1"], 1, None),
        S.NUMERIC: (fields["c2"], 2, None),
        S.PROGRESSION: (fields["c3"], 3, None),
        S.CANDIDATES: (fields["c4"], 4, None),
        S.ROUND_SUMMARY: (rs_text, np.where(is8, 6, 10), is8 | is12),
        S.RESULTS: (res_text, np.where(is8, 7, 11), is8 | is12),
    }
    line_ok = ~bad_count
    arrays, lengths = _parse_lists(
        {name: (series, column, line_ok if present is None else line_ok & present)
         for name, (series, column, present) in sources.items()}, problems)

    # ---- action
    act_txt = fields["c5"]
    act = act_txt.cast(pl.Int64, strict=False).to_numpy()
    act_missing = np.isnan(act) if act.dtype.kind == "f" else np.zeros(n, bool)
    act = np.nan_to_num(act, nan=-1).astype(np.int64) if act.dtype.kind == "f" else act.astype(np.int64)
    problems.add(act_missing & ~bad_count, 5, "not_integer",
                 lambda r: f"the action should be a decimal integer, found {_clip(act_txt[r])!r}")
    ncand = lengths[S.CANDIDATES]
    bad_act = ~bad_count & ~act_missing & ((act < 0) | (act >= ncand))
    problems.add(bad_act, 5, "bad_action",
                 lambda r: f"action {act[r]} is not an index into the {ncand[r]} candidates of column 4")

    # ---- numeric sanity for the identifiers we derive
    num = arrays[S.NUMERIC]
    bad_ben = ~bad_count & (lengths[S.NUMERIC] == 6) & ((num[:, 0] < 0) | (num[:, 0] > 255) | (num[:, 1] < 0))
    problems.add(bad_ben, 2, "out_of_range",
                 lambda r: f"ben (numeric[0]) should be in [0, 255] and deposits (numeric[1]) >= 0, "
                 f"found {num[r, 0]} and {num[r, 1]}")

    state_text = fields.select("c1", "c2", "c3", "c4")
    next_text = fields.select("c6", "c7", "c8", "c9")
    lines = rows + first_line
    return _Block(lines=lines, kind=kind, game_id=gid, arrays=arrays, lengths=lengths,
                  action=act, next_text=next_text, state_text=state_text, text=text)


def _maybe_binary(data: bytes) -> bool:
    """Cheap screen: a non-ASCII byte, or a control byte other than TAB, LF and CR."""
    return bool(data.translate(None, _PLAIN_BYTES))  # what is left after deleting plain text


_PLAIN_BYTES = bytes(range(0x20, 0x7F)) + b"\t\n\r"


def _clip(value, width: int = 40) -> str:
    s = "" if value is None else str(value)
    return s if len(s) <= width else s[:width] + "..."


def _parse_lists(specs, problems: _Problems) -> tuple[dict, dict]:
    """Parse comma-separated integer columns into padded 2-D arrays and lengths.

    ``specs`` maps a list name to ``(text series, file column (int or per-row
    array), active rows)``.  All columns are split and cast in one Polars
    ``select`` so they are parsed in parallel; NumPy then checks lengths and
    ranges on the flat values and pads them into fixed-size arrays.
    """
    names = list(specs)
    texts = pl.DataFrame({
        name: (series if active.all() else series.set(pl.Series(~active), None))
        for name, (series, _, active) in specs.items()
    })
    lazy = texts.lazy()
    queries = [lazy.select(pl.col(name).str.count_matches(",", literal=True) + 1) for name in names]
    queries += [lazy.select(pl.col(name).str.split(",").explode().cast(pl.Int64, strict=False))
                for name in names]
    results = pl.collect_all(queries)  # run in parallel
    arrays, lengths = {}, {}
    for k, name in enumerate(names):
        series, column, active = specs[name]
        lens = results[k].to_series().fill_null(0).to_numpy().astype(np.int64)
        flat = results[len(names) + k].to_series()
        arrays[name], lengths[name] = _check_and_pad(name, lens, flat, series, column, active, problems)
    return arrays, lengths


def _check_and_pad(name, lens: np.ndarray, flat: pl.Series, text: pl.Series, column, active,
                   problems: _Problems):
    max_len, upper, pad, exact, dtype = _LIST_COLUMNS[name]
    n = lens.shape[0]
    colarr = column if isinstance(column, np.ndarray) else None

    def col_of(rows):
        return colarr[rows] if colarr is not None else column

    def where(r):
        return f"{name} (column {int(colarr[r]) if colarr is not None else column})"

    # explode leaves one slot for a null (inactive) row and for an empty list
    slots = np.where(active & (lens > 0), lens, 1)
    owner = np.repeat(np.arange(n), slots)
    valid_slot = (active & (lens > 0))[owner]
    is_null = flat.is_null().to_numpy()
    values = flat.fill_null(0).to_numpy()
    if not valid_slot.all():
        owner, values, is_null = owner[valid_slot], values[valid_slot], is_null[valid_slot]
    if is_null.any():
        bad_rows = np.unique(owner[is_null])
        problems.add(bad_rows, col_of(bad_rows), "not_integer",
                     lambda r: f"{where(r)} should be decimal integers separated by commas, "
                     f"found {_first_bad_token(text[r])!r}")
        values = np.where(is_null, pad, values)
    too_many = active & (lens > max_len)
    problems.add(too_many, col_of(too_many), "too_many_ids",
                 lambda r: f"{where(r)} has {lens[r]} values; at most {max_len} are allowed")
    if exact is not None:
        wrong = active & (lens != exact) & ~too_many
        problems.add(wrong, col_of(wrong), "wrong_length",
                     lambda r: f"{where(r)} should have exactly {exact} values, found {lens[r]}")
    if upper is not None:
        out = (values < 0) | (values >= upper)
        rule = f"in [0, {upper})"
    else:
        out = (values < _INT32_MIN) | (values > _INT32_MAX)
        rule = "a 32-bit integer"
    if out.any():
        bad_rows, first = np.unique(owner[out], return_index=True)
        first_val = dict(zip(bad_rows.tolist(), values[out][first].tolist()))
        problems.add(bad_rows, col_of(bad_rows), "out_of_range",
                     lambda r: f"{where(r)} has value {first_val.get(r)}; each should be {rule}")
        values = np.where(out, pad, values)
    keep_lens = np.where(active, np.minimum(lens, max_len), 0)
    if too_many.any():  # cut the extra values of rows that are errors anyway
        start = np.repeat(np.cumsum(keep_lens * 0 + np.where(active, lens, 0)) - np.where(active, lens, 0),
                          np.where(active, lens, 0))
        values = values[(np.arange(values.size) - start) < max_len]
    out_arr = np.full((n, max_len), pad, dtype=dtype)
    out_arr[np.arange(max_len) < keep_lens[:, None]] = values.astype(dtype, copy=False)
    return out_arr, keep_lens


def _first_bad_token(text: str | None) -> str:
    for token in (text or "").split(","):
        try:
            int(token)
        except ValueError:
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


def _sparse_identifiers(sparse: np.ndarray, ok: np.ndarray, problems: _Problems):
    """Derive seat, room, game length, chang, ju and grades; report layout errors.

    Fast path: kanachan writes these nine ids first and in this order, and
    every later id is >= 82, so checking positions 0-9 proves "exactly one id
    of each kind".  Rows that fail it (other orders) take the general path,
    which counts ids by range over the whole vector.
    """
    head = sparse[:, : len(_HEAD) + 1].astype(np.int32)
    fast = np.ones(sparse.shape[0], dtype=bool)
    for pos, (_, lo, count) in enumerate(_HEAD):
        fast &= (head[:, pos] >= lo) & (head[:, pos] < lo + count)
    fast &= head[:, len(_HEAD)] >= S.DRAWS_OFFSET
    if fast.all():
        ids = {name: head[:, pos] - lo for pos, (name, lo, _) in enumerate(_HEAD)}
        grades = np.stack([ids.pop(f"grade of seat {k}") for k in range(S.NUM_SEATS)], axis=1)
        return ids, grades.astype(np.uint8)
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


def _split_ints(text: str | None) -> list[int] | None:
    if text is None:
        return None
    try:
        return [int(t) for t in text.split(",")]
    except ValueError:
        return None


def _check_next_state(block: _Block, seat: np.ndarray, ok: np.ndarray, problems: _Problems):
    """Lines of kind 10/12 must have next-state columns equal to the next line's state.

    Only pairs of lines of the same episode are compared; a line whose
    successor starts another episode is reported by the episode checks
    (``missing_end_of_game``).  Returns the carry for the block's last line
    (checked against the next block by :func:`_check_boundary`).
    """
    n = block.kind.shape[0]
    has_next = np.isin(block.kind, (10, 12))
    same_episode = np.zeros(n, dtype=bool)
    same_episode[:-1] = (seat[1:] == seat[:-1]) & (
        block.game_id.slice(1) == block.game_id.slice(0, n - 1)).fill_null(False).to_numpy()
    # compare text of row i's next columns with row i+1's state columns
    mismatch_col = np.full(n, -1, dtype=np.int64)
    for j in range(3, -1, -1):
        nxt = block.next_text[f"c{6 + j}"]
        cur = block.state_text[f"c{1 + j}"].shift(-1)
        neq = (nxt != cur).fill_null(True).to_numpy()
        mismatch_col = np.where(neq, j, mismatch_col)
    cand = ok & has_next & same_episode & (mismatch_col >= 0)
    cand[-1] = False  # the last line is compared with the next block
    cand &= np.concatenate([ok[1:], [False]])  # the following line must be readable
    rows = np.flatnonzero(cand)
    if rows.size:
        truly, cols = [], []
        for r in rows.tolist():
            col = _numeric_next_mismatch(block, r)
            if col is not None:
                truly.append(r)
                cols.append(6 + col)
        if truly:
            truly_arr = np.array(truly)
            cols_arr = np.array(cols)
            colmap = dict(zip(truly, cols))
            problems.add(truly_arr, cols_arr, "next_state_mismatch",
                         lambda r: f"next-state column {colmap[r]} ({_STATE_COLUMNS[colmap[r] - 6]}) "
                         f"disagrees with the state of line {block.lines[r] + 1}")
    last = n - 1
    return {
        "next": [block.next_text[f"c{6 + j}"][last] for j in range(4)] if has_next[last] else None,
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
    cur = [block.state_text[f"c{1 + j}"][0] for j in range(4)]
    for j in range(4):
        if carry["next"][j] != cur[j] and _split_ints(carry["next"][j]) != _split_ints(cur[j]):
            carry["problems"].append((carry["line"], 6 + j, j, int(block.lines[0])))
            return


def _numeric_next_mismatch(block: _Block, r: int) -> int | None:
    for j in range(4):
        a = _split_ints(block.next_text[f"c{6 + j}"][r])
        b = _split_ints(block.state_text[f"c{1 + j}"][r + 1])
        if a != b:
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


def _block_stage(data: bytes, first_line: int, spath: str, skip: bool):
    """Everything about one block that needs no other block (runs in a worker thread)."""
    problems = _Problems(spath, lambda r, base=first_line: base + r, skip)
    block = _parse_block(data, spath, first_line, problems)
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
    first = 1
    for data in _iter_blocks(path, bar, offset):
        yield first, data
        first += data.count(b"\n")


def _read_one_file(path: Path, *, skip: bool, bar, offset: int = 0):
    """Parse and validate one file; return (frame or None, skipped rows frame).

    Blocks are parsed two at a time in worker threads (Polars and NumPy
    release the GIL); the checks that cross block boundaries run in order.
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

        def submit_next() -> None:
            item = next(source, None)
            if item is not None:
                pending.append(pool.submit(_block_stage, item[1], item[0], spath, skip))

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
            block.state_text = block.next_text = None
            block.game_id = block.game_id.cast(pl.Categorical)
            if not skip:  # skip mode keeps the lines: any of them may be skipped with its episode
                block.text = None
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
    gid_kept = gid_all.filter(pl.Series(keep)) if not keep.all() else gid_all
    codes = gid_kept.cast(pl.Categorical).to_physical().to_numpy().astype(np.int64)
    ep_problems = _Problems(spath, lambda r: int(kept_idx[r]) + 1, skip)
    episode = _episode_checks(codes, seat[kept_idx], kind[kept_idx], ep_problems,
                              lambda r: gid_kept[r])
    if not skip:
        ep_problems.raise_first()
    else:
        # an episode-level problem, or a skipped line next to an episode, drops the whole episode
        broken = np.zeros(episode.max() + 1 if episode.size else 0, dtype=bool)
        for r in ep_problems.rows:
            broken[episode[r]] = True
            row_problem.setdefault(int(kept_idx[r]), ep_problems.rows[r])
        if row_problem and episode.size:
            pos = np.searchsorted(kept_idx, np.fromiter(row_problem, dtype=np.int64))
            before = pos - 1
            broken[episode[before[before >= 0]]] = True
            after = pos[pos < kept_idx.size]
            broken[episode[after]] = True
        drop_kept = broken[episode] if episode.size else np.zeros(0, bool)
        for r in np.flatnonzero(drop_kept).tolist():
            row_problem.setdefault(int(kept_idx[r]), (None, "in_broken_episode",
                                   "the line's episode was skipped because of another line"))
        keep = np.zeros(n_total, dtype=bool)
        keep[kept_idx[~drop_kept]] = True
        kept_idx = np.flatnonzero(keep)
        episode = episode[~drop_kept]

    frame = _assemble(blocks, ids_list, keep, kept_idx, episode, spath)
    skipped = _skipped_frame(spath, blocks, row_problem)
    return frame, skipped


def _assemble(blocks, ids_list, keep, kept_idx, episode, spath) -> pl.DataFrame:
    def cat(getter):
        return np.concatenate([getter(b, i) for i, b in enumerate(blocks)])

    sel = (lambda a: a[kept_idx]) if not keep.all() else (lambda a: a)
    kind = sel(cat(lambda b, i: b.kind))
    # one column at a time, releasing the blocks' parts as we go (peak: frame + one column)
    arrays = {name: sel(cat(lambda b, i, name=name: b.arrays.pop(name))) for name in _LIST_COLUMNS}
    ids = {k: sel(np.concatenate([ids[k] for ids, _ in ids_list])) for k in ids_list[0][0]}
    grades = sel(np.concatenate([g for _, g in ids_list]))
    action = sel(cat(lambda b, i: b.action))
    lines = sel(cat(lambda b, i: b.lines))
    gid = pl.concat([b.game_id for b in blocks])
    if not keep.all():
        gid = gid.filter(pl.Series(keep))
    n = kind.shape[0]
    end_of_game = kind == 8
    end_of_round = kind == 12
    if n:
        ep_start = np.ones(n, dtype=bool)
        ep_start[1:] = episode[1:] != episode[:-1]
        start_idx = np.flatnonzero(ep_start)
        step = np.arange(n) - np.repeat(start_idx, np.diff(np.append(start_idx, n)))
    else:
        step = np.zeros(0, dtype=np.int64)
    ben = arrays[S.NUMERIC][:, 0]
    frame = pl.DataFrame({
        S.GAME_ID: gid.cast(pl.Categorical),
        S.GAME: np.zeros(n, dtype=np.uint32),  # numbered across files by the caller
        S.SEAT: ids["seat"].astype(np.uint8),
        S.STEP: step.astype(np.uint16),
        S.ROUND: np.zeros(n, dtype=np.uint8),
        S.CHANG: ids["chang"].astype(np.uint8),
        S.JU: ids["ju"].astype(np.uint8),
        S.BEN: ben.astype(np.uint8),
        S.ROOM: ids["room"].astype(np.uint8),
        S.GAME_LENGTH: ids["game length"].astype(np.uint8),
        S.GRADES: grades,
        S.SPARSE: arrays[S.SPARSE],
        S.NUMERIC: arrays[S.NUMERIC],
        S.PROGRESSION: arrays[S.PROGRESSION],
        S.CANDIDATES: arrays[S.CANDIDATES],
        S.ACTION: action.astype(np.uint8),
        S.ROUND_SUMMARY: arrays[S.ROUND_SUMMARY],
        S.RESULTS: arrays[S.RESULTS],
        S.END_OF_ROUND: end_of_round,
        S.END_OF_GAME: end_of_game,
        S.SOURCE_FILE: pl.Series([spath], dtype=pl.Categorical).gather(np.zeros(n, dtype=np.int64)),
        S.SOURCE_LINE: lines.astype(np.uint32),
    })
    return frame


def _skipped_frame(spath: str, blocks: list[_Block], row_problem: dict) -> pl.DataFrame:
    if not row_problem:
        return pl.DataFrame(schema=_SKIPPED_SCHEMA)
    rows = sorted(row_problem)
    starts = [int(b.lines[0]) - 1 if b.lines.size else 0 for b in blocks]
    texts = []
    for r in rows:
        k = int(np.searchsorted(starts, r, side="right")) - 1
        texts.append(blocks[k].text[r - starts[k]])
    return pl.DataFrame({
        "file": [spath] * len(rows),
        "line": [r + 1 for r in rows],
        "column": [row_problem[r][0] for r in rows],
        "reason": [row_problem[r][1] for r in rows],
        "message": [row_problem[r][2] for r in rows],
        "text": texts,
    }, schema=_SKIPPED_SCHEMA)


# ----------------------------------------------------------------------------
# Public API
# ----------------------------------------------------------------------------


def _as_paths(paths) -> list[Path]:
    if isinstance(paths, (str, Path)):
        paths = [paths]
    out = [Path(p) for p in paths]
    if not out:
        raise ParameterError("paths", "should name at least one file", list(paths))
    return out


# Dataset layouts live in rewardlab.storage; the names are re-exported here.
from rewardlab.storage import DATASET_SUFFIXES, is_dataset, read_dataset, scan_dataset  # noqa: E402


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
        :class:`~rewardlab.errors.DataFormatError` naming file, line, column
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
        ``frame`` (schema :data:`rewardlab.schema.FRAME_SCHEMA`), ``skipped``
        and ``skipped_path``.

    Examples
    --------
    >>> from rewardlab import read_kanachan
    >>> result = read_kanachan("data/sample.tsv.gz", progress=False)  # doctest: +SKIP
    >>> result.frame.height, result.skip_counts  # doctest: +SKIP
    (90012, {})
    """
    check_choice("on_error", on_error, ("raise", "skip"))
    files = _as_paths(paths)
    if skipped_path is not None and on_error != "skip":
        raise ParameterError("skipped_path", "is only used with on_error='skip'", str(skipped_path))
    if all(is_dataset(p) for p in files):
        return LoadResult(read_dataset(files), pl.DataFrame(schema=_SKIPPED_SCHEMA))
    if any(is_dataset(p) for p in files):
        raise ParameterError("paths", "should be all annotation files or all Parquet datasets",
                             [str(p) for p in files])
    if skipped_path is not None and Path(skipped_path).exists() and not overwrite:
        raise OutputExistsError(skipped_path)  # before any work
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
    skipped_df = pl.concat(skipped) if skipped else pl.DataFrame(schema=_SKIPPED_SCHEMA)
    frame = _number_games(frame, files, skip=skip)
    result_path = None
    if skip and skipped_path is not None:
        result_path = Path(skipped_path)
        with atomic_open(result_path, overwrite=overwrite) as f:
            for line in skipped_df["text"].to_list():
                f.write(line + "\n")
    result = LoadResult(frame, skipped_df, result_path)
    if skip and skipped_df.height:
        import warnings

        counts = ", ".join(f"{k}: {v}" for k, v in result.skip_counts.items())
        where = f"; kept in {result_path}" if result_path else "; see result.skipped"
        warnings.warn(SkippedLinesWarning(
            f"skipped {skipped_df.height} of {skipped_df.height + frame.height} lines ({counts}){where}"),
            stacklevel=2)
    return result


def _number_games(frame: pl.DataFrame, files: list[Path], *, skip: bool) -> pl.DataFrame:
    """Number games in load order and compute the game-wide round index; check games across files."""
    if frame.height == 0:
        return frame
    gid = frame[S.GAME_ID].cast(pl.String)
    starts = np.ones(frame.height, dtype=bool)
    starts[1:] = (gid.slice(1) != gid.slice(0, frame.height - 1)).to_numpy()
    if len(files) > 1:
        src = frame[S.SOURCE_FILE].cast(pl.String)
        starts[1:] |= (src.slice(1) != src.slice(0, frame.height - 1)).to_numpy()
    game = np.cumsum(starts) - 1
    if len(files) > 1:
        run_ids = gid.filter(pl.Series(starts))
        dup = run_ids.is_duplicated().to_numpy() & ~run_ids.is_first_distinct().to_numpy()
        if dup.any():
            r = int(np.flatnonzero(starts)[np.argmax(dup)])
            raise DataFormatError(frame[S.SOURCE_FILE][r], int(frame[S.SOURCE_LINE][r]), 0,
                                  "game_reappears",
                                  f"game {gid[r]} also appears in an earlier file; a game's lines "
                                  "should be in one place", hint="Remove the duplicate game.")
    key = (frame[S.CHANG].cast(pl.Int32) * 4096 + frame[S.JU].cast(pl.Int32) * 256
           + frame[S.BEN].cast(pl.Int32))
    rounds = (
        pl.DataFrame({"g": game, "k": key})
        .select((pl.col("k").rank("dense").over("g") - 1).cast(pl.UInt8))
        .to_series()
    )
    return frame.with_columns(pl.Series(S.GAME, game.astype(np.uint32)), rounds.alias(S.ROUND))


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
    files = _as_paths(paths)
    if not all(is_dataset(p) for p in files):
        return load_kanachan(files, progress=False).lazy()
    return scan_dataset(files)
