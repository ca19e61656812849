"""A plain, line-by-line reference of how kanachan turns annotation lines into tensors.

Deliberately naive (no NumPy, no Polars): it reads each line's own next-state
columns, pads lists with Python, and stacks at the end.  The library builds
the same tensors from the frame (next state = following row); tests compare.
"""

from __future__ import annotations

import gzip
from pathlib import Path

import torch

PAD = {"sparse": (29, 510), "numeric": (6, 0), "progression": (109, 2165), "candidates": (32, 546)}


def _ints(text: str) -> list[int]:
    return [int(t) for t in text.split(",")]


def _padded(values: list[int], width: int, pad: int) -> list[int]:
    assert len(values) <= width
    return values + [pad] * (width - len(values))


def parse_line(line: str) -> dict:
    cols = line.rstrip("\n").split("\t")
    assert len(cols) in (8, 10, 12), len(cols)
    out = {"game_id": cols[0]}
    for i, name in enumerate(("sparse", "numeric", "progression", "candidates"), start=1):
        out[name] = _padded(_ints(cols[i]), *PAD[name])
    out["action"] = int(cols[5])
    if len(cols) in (10, 12):
        for i, name in enumerate(("sparse", "numeric", "progression", "candidates"), start=6):
            out["next", name] = _padded(_ints(cols[i]), *PAD[name])
    else:
        for name, (width, pad) in PAD.items():
            out["next", name] = [pad] * width
    if len(cols) == 12:
        summary, results = cols[10], cols[11]
    elif len(cols) == 8:
        summary, results = cols[6], cols[7]
    else:
        summary, results = None, None
    out["next", "round_summary"] = _padded(_ints(summary), 7, 29) if summary else [29] * 7
    out["next", "results"] = _ints(results) if results else [0] * 8
    out["next", "end_of_round"] = len(cols) == 12
    out["next", "end_of_game"] = len(cols) == 8
    out["next", "done"] = len(cols) == 8
    return out


def read_lines(path: Path) -> list[str]:
    opener = gzip.open if str(path).endswith(".gz") else open
    with opener(path, "rt") as f:
        return [line for line in f]


def reference_tensors(lines: list[str]) -> dict:
    rows = [parse_line(line) for line in lines]
    keys = [k for k in rows[0] if k != "game_id"]
    out = {}
    for key in keys:
        values = [r[key] for r in rows]
        dtype = torch.bool if isinstance(values[0], bool) else torch.int32
        out[key] = torch.tensor(values, dtype=dtype)
    return out


def wiki_rank(scores, seat: int) -> int:
    """The kanachan wiki's ranking loop: players with a higher score, ties to the lower seat."""
    score = scores[seat]
    rank = 0
    for j in range(seat):
        if scores[j] >= score:
            rank += 1
    for j in range(seat + 1, 4):
        if scores[j] > score:
            rank += 1
    return rank
