"""The kanachan features of a decision, written by the compiled tracker (:mod:`rewardlab.sources.mjai.tracker`).

One row per decision: the sparse features (room, game length, grades, seat,
round, draws so far, dora indicators, the concealed hand as tile ids, the
drawn tile), the numeric features, and, once the round is settled, its
results and summary on each player's last row of it.  The layouts are those
of :mod:`rewardlab.sources.kanachan.schema`; hands are written as
:func:`rewardlab.sources.mjai.tiles.tile_ids` writes them.

Examples
--------
>>> SUMMARY_IDS["dealer_kept"]
24
"""

from __future__ import annotations

from numba import njit

from rewardlab.sources.kanachan import schema as S

__all__ = ["SUMMARY_IDS", "write_sparse", "summary_add", "close_round", "emit_row"]

#: Round summary ids written on round-end rows (the layout of rewardlab's simulator,
#: :mod:`rewardlab.domains.mahjong.simulate`): kind, winners, the ron's discarder,
#: tenpai seats at a draw (when the log gives ``tenpais``), dealer kept, game over, bust.
SUMMARY_IDS = {"tsumo": 0, "ron": 1, "draw": 2, "winner": 3, "discarder": 7, "tenpai": 11,
               "dealer_kept": 24, "game_over": 25, "bust": 26}
(SUMMARY_TSUMO, SUMMARY_RON, SUMMARY_DRAW, SUMMARY_WINNER, SUMMARY_DISCARDER, SUMMARY_TENPAI,
 SUMMARY_DEALER_KEPT, SUMMARY_GAME_OVER, SUMMARY_BUST) = SUMMARY_IDS.values()  # (seat ids add the seat)


@njit(cache=True, nogil=True)
def write_sparse(sp, prefix, seat, chang, ju, drawn_so_far, dora, n_dora, hand, drawn):
    """kanachan's sparse features of a decision: prefix, seat, round, draws, dora, hand, drawn tile."""
    k = 0
    for j in range(prefix.shape[0]):
        sp[k] = prefix[j]
        k += 1
    sp[k] = S.SEAT_OFFSET + seat
    sp[k + 1] = S.CHANG_OFFSET + chang
    sp[k + 2] = S.JU_OFFSET + ju
    sp[k + 3] = S.DRAWS_OFFSET + (drawn_so_far - 1 if drawn_so_far > 0 else 0)
    k += 4
    for slot in range(n_dora):
        sp[k] = S.DORA_OFFSET + S.NUM_TILE_KINDS * slot + dora[slot]
        k += 1
    for base in range(34):
        if base < 27 and base % 9 == 4:
            red = 10 * (base // 9)
            plain = red + 5
            if hand[red] > 0:
                sp[k] = S.HAND_OFFSET + 4 * base
                k += 1
            first = 1 if hand[plain] < 4 else 0
            for j in range(hand[plain]):
                sp[k] = S.HAND_OFFSET + 4 * base + first + j
                k += 1
        else:
            kind = 30 + base - 27 if base >= 27 else 10 * (base // 9) + base % 9 + 1
            for j in range(hand[kind]):
                sp[k] = S.HAND_OFFSET + 4 * base + j
                k += 1
    if drawn >= 0:
        sp[k] = S.DRAWN_OFFSET + drawn
        k += 1
    while k < sp.shape[0]:
        sp[k] = S.NUM_TYPES_OF_SPARSE_FEATURES
        k += 1


@njit(cache=True, nogil=True)
def summary_add(summary, value):
    """Insert ``value`` into the sorted, padded summary (once; at most 7 ids are kept)."""
    for j in range(summary.shape[0]):
        if summary[j] == value:
            return
        if summary[j] > value:
            for m in range(summary.shape[0] - 1, j, -1):
                summary[m] = summary[m - 1]
            summary[j] = value
            return


@njit(cache=True, nogil=True)
def close_round(r_eor, r_results, r_summary, last_round_row, deltas, scores, summary):
    """Write the round's results and summary on each player's last row of the round."""
    for s in range(4):
        r = last_round_row[s]
        if r >= 0:
            r_eor[r] = True
            for j in range(4):
                r_results[r, j] = deltas[j]
                r_results[r, 4 + j] = scores[j]
            for j in range(7):
                r_summary[r, j] = summary[j]


@njit(cache=True, nogil=True)
def emit_row(n_rows, seat, line, g, step, round_index, chang, ju, ben, deposits, start_scores, prefix, draws, dora,
          n_dora, hand, drawn, last_round_row, last_game_row, r_line, r_game, r_seat, r_step, r_round, r_chang,
          r_ju, r_ben, r_sparse, r_numeric, r_results, r_summary, r_eor, r_eog):
    """Write one decision row (the state before it) at ``n_rows``, note it as ``seat``'s last row of the round
    and of the game; return the new row count."""
    r = n_rows
    r_line[r] = line
    r_game[r] = g
    r_seat[r] = seat
    r_step[r] = step[seat]
    step[seat] += 1
    r_round[r] = round_index
    r_chang[r] = chang
    r_ju[r] = ju
    r_ben[r] = ben
    write_sparse(r_sparse[r], prefix, seat, chang, ju, draws, dora, n_dora, hand, drawn)
    r_numeric[r, 0] = ben
    r_numeric[r, 1] = deposits
    for s in range(4):
        r_numeric[r, 2 + s] = start_scores[s]
    r_results[r, :] = 0
    r_summary[r, :] = S.NUM_TYPES_OF_ROUND_SUMMARY
    r_eor[r] = False
    r_eog[r] = False
    last_round_row[seat] = r
    last_game_row[seat] = r
    return n_rows + 1
