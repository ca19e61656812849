"""The kanachan rules on whole episodes and games, and the skip mode that keeps only whole episodes.

:func:`episode_checks` (raise mode, and the reasons skip mode gives) checks
that a player's lines in a game are consecutive and end with one 8-column
end-of-game line, and that a game's lines are not interrupted by other
games.  :func:`skip_episodes` decides, in skip mode, which lines to keep:
only whole episodes, whatever was corrupted.

Examples
--------
>>> import numpy as np
>>> from rewardlab.sources.kanachan.problems import Problems
>>> p = Problems("a.tsv", lambda r: r + 1, skip=True)
>>> episode_checks(np.array([0, 0, 1]), np.array([0, 0, 0]), np.array([10, 8, 10]), p, str).tolist()
[0, 0, 1]
>>> sorted(v[1] for v in p.rows.values())
['missing_end_of_game']
"""

from __future__ import annotations

from typing import Callable

import numpy as np

from rewardlab.sources.kanachan.problems import Problems

__all__ = ["episode_checks", "skip_episodes", "later_occurrences"]


def later_occurrences(keys: np.ndarray) -> np.ndarray:
    """Bool mask: True where a key occurred earlier in ``keys`` (every occurrence but the first).

    Examples
    --------
    >>> later_occurrences(np.array([3, 1, 3, 3, 1])).tolist()
    [False, False, True, True, True]
    """
    _, first = np.unique(keys, return_index=True)
    mask = np.ones(keys.size, dtype=bool)
    mask[first] = False
    return mask


def episode_checks(game_codes: np.ndarray, seat: np.ndarray, kind: np.ndarray, problems: Problems,
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
    seen_again = later_occurrences(game_codes[run_start])
    problems.add(run_start[seen_again], 0, "game_reappears",
                 lambda r: f"game {game_name(r)} reappears after other games; "
                 "a game's lines should be consecutive")
    # seat runs repeating within a game run
    ep_start = np.flatnonzero(new_ep)
    game_run_of_ep = np.cumsum(new_game)[ep_start]
    dup_ep = later_occurrences(game_run_of_ep.astype(np.int64) * 8 + seat[ep_start])
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



def skip_episodes(kind: np.ndarray, seat: np.ndarray, codes: np.ndarray, bad: np.ndarray, row_problem: dict,
                  episode_problems: dict, game_name: Callable[[int], str], *,
                  first_line: int = 1) -> tuple[np.ndarray, np.ndarray]:
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
    ``first_line``: the file line of row 0 (messages name lines).
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
            why = f"line {c + first_line} ({row_problem[c][1]})" if c >= 0 and c in row_problem else "its structure"
            row_problem[r] = (None, "in_broken_episode", f"the line's episode was skipped because of {why}")
    return keep, seg[keep]


