"""The kanachan frame from checked blocks: the kept rows' columns, the skipped lines' table, game numbers.

Examples
--------
>>> import polars as pl
>>> from rewardlab.sources.kanachan import schema as S
>>> assemble([], [], None, None, None, "a.tsv").schema == pl.Schema(S.FRAME_SCHEMA)
True
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import polars as pl

from rewardlab.sources.kanachan import schema as S
from rewardlab.sources.results import SKIPPED_LINES_SCHEMA
from rewardlab.core.errors import DataFormatError

__all__ = ["assemble", "skipped_frame", "number_games"]


def assemble(blocks, ids_list, keep, kept_idx, episode, spath, *, first_line: int = 1) -> pl.DataFrame:
    """Build the frame: one chunk per block (the blocks' arrays are used as they are, not copied).

    ``keep`` (n,) marks the rows of the blocks (from file line ``first_line`` on) to keep; ``game`` and
    ``round`` are left 0 (:func:`number_games` fills them).
    """
    if not blocks:
        return pl.DataFrame(schema=S.FRAME_SCHEMA)
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
        lo = int(block.lines[0]) - first_line if block.lines.size else 0
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


def skipped_frame(spath: str, blocks: list, row_problem: dict, *, first_line: int = 1) -> pl.DataFrame:
    """The skipped lines' table: ``row_problem`` maps a row (file line ``first_line`` + row) to its
    (column, rule, message); the text comes from ``blocks`` byte for byte."""
    if not row_problem:
        return pl.DataFrame(schema=SKIPPED_LINES_SCHEMA)
    rows = sorted(row_problem)
    starts = [int(b.lines[0]) - first_line if b.lines.size else 0 for b in blocks]
    texts, raws = [], []
    for r in rows:
        k = int(np.searchsorted(starts, r, side="right")) - 1
        raws.append(blocks[k].line_bytes(r - starts[k]))
        texts.append(raws[-1].decode("utf-8", "replace").removesuffix("\r"))
    return pl.DataFrame({
        "file": [spath] * len(rows),
        "line": [r + first_line for r in rows],
        "column": [row_problem[r][0] for r in rows],
        "reason": [row_problem[r][1] for r in rows],
        "message": [row_problem[r][2] for r in rows],
        "text": texts,
        "raw": raws,
    }, schema=SKIPPED_LINES_SCHEMA)



def number_games(frame: pl.DataFrame, files: list[Path], *, skip: bool) -> pl.DataFrame:
    """Number games in load order and compute the game-wide round index; check games across files.

    A game whose lines are in two files raises ``game_reappears`` at its first line in the later file.
    """
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

