"""Compact sets of kanachan game ids, and where each game's lines end in a file (for the streaming reader).

A game id is 32 hex digits: :class:`GameIdSet` keeps each as 20 bytes (its
128-bit value and which of its digits are upper-case letters, so ``"AB.."``
and ``"ab.."`` stay two ids, as they are two games for the reader), sorted in
a few runs, with a 64-bit hash to search.  :func:`game_spans` reads a file's
first column only and gives, for each game id (by hash), its last line.

Examples
--------
>>> ids = GameIdSet()
>>> ids.add(["0" * 31 + "a"])
>>> ids.contains(["0" * 31 + "a", "0" * 31 + "A", "not hex"]).tolist()
[True, False, False]
>>> len(ids)
1
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

__all__ = ["GameIdSet", "id_keys", "id_hashes", "game_spans", "ID_LENGTH"]

#: Characters of a game id.
ID_LENGTH = 32

_NIBBLE = np.full(256, 255, dtype=np.uint8)
for _c in b"0123456789":
    _NIBBLE[_c] = _c - 48
for _c in b"abcdef":
    _NIBBLE[_c] = _c - 87
for _c in b"ABCDEF":
    _NIBBLE[_c] = _c - 55
_UPPER = np.zeros(256, dtype=np.uint64)
_UPPER[list(b"ABCDEF")] = 1
_SHIFTS = np.arange(60, -1, -4, dtype=np.uint64)
_MIX = np.uint64(0x9E3779B97F4A7C15)


def _hash(hi: np.ndarray, lo: np.ndarray, case: np.ndarray) -> np.ndarray:
    with np.errstate(over="ignore"):
        return (hi * _MIX) ^ (lo + (lo << np.uint64(17))) ^ (case * np.uint64(0xBF58476D1CE4E5B9))


def id_keys(text: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """The keys of ids given as an (n, 32) uint8 array of their bytes: (valid, hi, lo, upper-case mask).

    ``valid``: the row is 32 hex digits; the keys of other rows are meaningless.
    """
    nib = _NIBBLE[text]
    valid = (nib != 255).all(axis=1)
    nib = np.where(nib == 255, 0, nib).astype(np.uint64)
    hi = (nib[:, :16] << _SHIFTS).sum(axis=1, dtype=np.uint64)
    lo = (nib[:, 16:] << _SHIFTS).sum(axis=1, dtype=np.uint64)
    case = (_UPPER[text] << np.arange(ID_LENGTH, dtype=np.uint64)).sum(axis=1, dtype=np.uint64)
    return valid, hi, lo, case


def _as_bytes(ids: list[str]) -> tuple[np.ndarray, np.ndarray]:
    """(n, 32) bytes of ``ids`` and which of them have the length and the ASCII of a game id."""
    fits = np.array([len(s) == ID_LENGTH and s.isascii() for s in ids], dtype=bool)
    text = "".join(s if f else "0" * ID_LENGTH for s, f in zip(ids, fits)).encode("ascii")
    return np.frombuffer(text, dtype=np.uint8).reshape(-1, ID_LENGTH), fits


def id_hashes(ids: list[str]) -> tuple[np.ndarray, np.ndarray]:
    """(64-bit hash of each id, whether it is a game id: 32 hex digits)."""
    if not ids:
        return np.zeros(0, dtype=np.uint64), np.zeros(0, dtype=bool)
    text, fits = _as_bytes(ids)
    valid, hi, lo, case = id_keys(text)
    return _hash(hi, lo, case), valid & fits


class GameIdSet:
    """An exact set of game ids in 20 bytes each (plus a 64-bit hash to search), for millions of games.

    Strings that are not 32 hex digits are kept apart, as they are (the
    reader rejects such lines, so there are few).
    """

    def __init__(self):
        self._runs: list[tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]] = []  # (hash, hi, lo, case)
        self._other: set[str] = set()

    def __len__(self) -> int:
        return sum(r[0].size for r in self._runs) + len(self._other)

    def _keys(self, ids: list[str]):
        text, fits = _as_bytes(ids)
        valid, hi, lo, case = id_keys(text)
        return valid & fits, hi, lo, case

    def add(self, ids: list[str]) -> None:
        """Add ``ids`` (strings)."""
        if not ids:
            return
        valid, hi, lo, case = self._keys(ids)
        self._other.update(s for s, v in zip(ids, valid.tolist()) if not v)
        hi, lo, case = hi[valid], lo[valid], case[valid]
        h = _hash(hi, lo, case)
        order = np.argsort(h, kind="stable")
        self._runs.append((h[order], hi[order], lo[order], case[order]))
        while len(self._runs) > 1 and self._runs[-1][0].size * 2 >= self._runs[-2][0].size:
            b, a = self._runs.pop(), self._runs.pop()
            merged = [np.concatenate([x, y]) for x, y in zip(a, b)]
            order = np.argsort(merged[0], kind="stable")
            self._runs.append(tuple(m[order] for m in merged))

    def absorb(self, other: "GameIdSet") -> None:
        """Add every id of ``other`` (which is emptied)."""
        for run in other._runs:
            self._runs.append(run)
            while len(self._runs) > 1 and self._runs[-1][0].size * 2 >= self._runs[-2][0].size:
                b, a = self._runs.pop(), self._runs.pop()
                merged = [np.concatenate([x, y]) for x, y in zip(a, b)]
                order = np.argsort(merged[0], kind="stable")
                self._runs.append(tuple(m[order] for m in merged))
        self._other |= other._other
        other._runs, other._other = [], set()

    def contains(self, ids: list[str]) -> np.ndarray:
        """Whether each of ``ids`` is in the set (bool array)."""
        out = np.zeros(len(ids), dtype=bool)
        if not ids:
            return out
        valid, hi, lo, case = self._keys(ids)
        h = _hash(hi, lo, case)
        for rh, rhi, rlo, rcase in self._runs:
            at = np.searchsorted(rh, h)
            inside = at < rh.size
            near = np.zeros(len(ids), dtype=bool)
            near[inside] = rh[at[inside]] == h[inside]
            for k in np.flatnonzero(near & valid & ~out).tolist():
                j = int(at[k])
                while j < rh.size and rh[j] == h[k]:  # ids with one hash: compare them all
                    if rhi[j] == hi[k] and rlo[j] == lo[k] and rcase[j] == case[k]:
                        out[k] = True
                        break
                    j += 1
        if self._other:
            out |= ~valid & np.array([s in self._other for s in ids], dtype=bool)
        return out


def game_spans(path: Path, *, chunk_bytes: int) -> tuple[np.ndarray, np.ndarray]:
    """For each game id in the first column of ``path``: (64-bit hash, its last 1-based line), sorted by hash.

    Reads the file once (decompressing it) and looks only at the first 33
    bytes of each line; lines whose first column is not 32 hex digits are
    left out.  Ids that share a hash share the later last line (so a span is
    never shorter than the game's).
    """
    from rewardlab.sources.kanachan.blocks import iter_blocks
    from rewardlab.sources.kanachan.tokenizer import line_ends

    hashes, lasts = [], []
    first = 1
    for data, skip in iter_blocks(path, None, 0, chunk_bytes=chunk_bytes):
        buf = np.frombuffer(data, dtype=np.uint8)
        ends = line_ends(data, skip)
        if not ends.size:
            continue
        starts = np.r_[skip, ends[:-1] + 1]
        full = ends - starts >= ID_LENGTH + 1
        full[full] = buf[starts[full] + ID_LENGTH] == 9  # a TAB after 32 characters
        rows = np.flatnonzero(full)
        if rows.size:
            text = buf[starts[rows, None] + np.arange(ID_LENGTH)]
            valid, hi, lo, case = id_keys(text)
            rows, h = rows[valid], _hash(hi[valid], lo[valid], case[valid])
            last = np.r_[h[1:] != h[:-1], True]  # the last line of each run of one id
            hashes.append(h[last])
            lasts.append(rows[last] + first)
        first += ends.size
    if not hashes:
        return np.zeros(0, dtype=np.uint64), np.zeros(0, dtype=np.int64)
    h, last = np.concatenate(hashes), np.concatenate(lasts)
    order = np.lexsort((last, h))
    h, last = h[order], last[order]
    keep = np.r_[h[1:] != h[:-1], True]  # the latest line of each hash
    return h[keep], last[keep]
