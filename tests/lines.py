"""A tiny, explicit builder of valid kanachan annotation lines for tests.

Independent of the simulator: each episode is a list of states; the builder
writes 10-, 12- and 8-column lines with the next state copied from the
following state, exactly as the format says.
"""

from __future__ import annotations

import random


def sparse_for(seat: int, *, room=2, half=True, grades=(9, 10, 11, 12), chang=0, ju=0, draws=5, hand=(0, 5, 9)):
    ids = [room, 6 if half else 5]
    ids += [7 + 16 * s + g for s, g in enumerate(grades)]
    ids += [71 + seat, 75 + chang, 78 + ju, 82 + draws]
    ids += [337 + t for t in hand]
    return ids


def state(seat, *, chang=0, ju=0, ben=0, deposits=0, scores=(25000, 25000, 25000, 25000), prog_len=3, n_cand=4, rng=None):
    rng = rng or random.Random(seat)
    return {
        "sparse": sparse_for(seat, chang=chang, ju=ju, draws=min(69, prog_len)),
        "numeric": [ben, deposits, *scores],
        "progression": [0] + [rng.randrange(5, 2165) for _ in range(prog_len - 1)],
        "candidates": sorted(rng.sample(range(546), n_cand)),
        "action": rng.randrange(n_cand),
    }


def fmt(values):
    return ",".join(str(v) for v in values)


def episode_lines(game_id, seat, rounds, *, final_scores=(31000, 24000, 22000, 23000), rng=None):
    """``rounds`` is a list of step counts per round; returns the lines of one episode."""
    rng = rng or random.Random(hash((game_id, seat)) & 0xFFFF)
    states, ends = [], []
    for k, steps in enumerate(rounds):
        for t in range(steps):
            states.append(state(seat, ju=k, prog_len=2 + t, rng=rng))
            ends.append(t == steps - 1)
    lines = []
    for i, s in enumerate(states):
        cols = [game_id, fmt(s["sparse"]), fmt(s["numeric"]), fmt(s["progression"]), fmt(s["candidates"]), str(s["action"])]
        last = i == len(states) - 1
        if last:
            cols += ["3,4", fmt([6000, -2000, -2000, -2000, *final_scores])]
        else:
            nxt = states[i + 1]
            cols += [fmt(nxt["sparse"]), fmt(nxt["numeric"]), fmt(nxt["progression"]), fmt(nxt["candidates"])]
            if ends[i]:
                cols += ["1,2", fmt([1000, -1000, 0, 0, 26000, 24000, 25000, 25000])]
        lines.append("\t".join(cols))
    return lines


def game_lines(game_id, rounds=(3, 2), seats=(0, 1, 2, 3), **kw):
    out = []
    for seat in seats:
        out += episode_lines(game_id, seat, list(rounds), **kw)
    return out


def gid(k: int) -> str:
    return f"{k:032x}"


def write(path, lines):
    path.write_text("".join(line + "\n" for line in lines))
    return path


def set_column(lines, i, col, value):
    """A copy of ``lines`` with column ``col`` of line ``i`` replaced by ``value``."""
    cols = lines[i].split("\t")
    cols[col] = value
    lines = list(lines)
    lines[i] = "\t".join(cols)
    return lines
