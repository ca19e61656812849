"""The compiled game tracker: MJAI events into kanachan rows, every rule checked.

One pass over the scanned events of a block (:class:`rewardlab.sources.mjai.scanner.Events`)
plays each game along: whose turn it is, each player's concealed hand (by
37-kind counts, the drawn tile apart), melds, the tiles seen (no kind more
often than the set holds), dora indicators, riichi sticks, scores and the
table's deposits, who pays each win (and who is liable for a big three
dragons, big four winds or four kans: pao), the order of rounds and the
``end_game`` ranks.  Every decision of a player (a discard, a riichi
declaration, a chi / pon / open kan, a closed or added kan, a win) becomes
one row with the state before it, in the kanachan layout (written by
:mod:`rewardlab.sources.mjai.features`); a round's results and summary are
written on each player's last row of the round once the round is settled
(at the next ``start_kyoku`` or at ``end_game``).

A game that breaks a rule stops being tracked at that line: its rows are
taken back, and the game record keeps the rule (:data:`CODES`), the line and
up to three values (seat, given, expected) for the reader's message.  The
reader quarantines such a game whole in skip mode.

Everything here is numba-compiled (cached on disk, ``make`` compiles it) and
releases the GIL.  ``tests/test_mjai.py`` checks the hands it tracks against
riichienv replaying the same logs.

Examples
--------
>>> CODES["hand_inconsistent"]
13
"""

from __future__ import annotations

import numpy as np
from numba import njit

from rewardlab.sources.kanachan import schema as S
from rewardlab.sources.mjai import tiles as T
from rewardlab.sources.mjai.ranking import ranks_of, top_seat
from rewardlab.sources.mjai.features import (SUMMARY_BUST, SUMMARY_DEALER_KEPT, SUMMARY_DISCARDER, SUMMARY_DRAW,
                                              SUMMARY_GAME_OVER, SUMMARY_RON, SUMMARY_TENPAI, SUMMARY_TSUMO,
                                              SUMMARY_WINNER, close_round, emit_row, summary_add)

__all__ = ["CODES", "Tracked", "track", "compile_all"]

#: Rule codes of a game record (:data:`rewardlab.sources.mjai.tiles.RULE_CODES`; the scanner's pass through).
CODES = T.RULE_CODES
_E_DEPOSITS_MISMATCH = CODES["deposits_mismatch"]
_E_HAND_INCONSISTENT = CODES["hand_inconsistent"]
_E_HAND_SIZE = CODES["hand_size"]
_E_HIDDEN_TILE = CODES["hidden_tile"]
_E_MISSING_FIELD = CODES["missing_field"]
_E_OUT_OF_ORDER = CODES["out_of_order"]
_E_OUT_OF_RANGE = CODES["out_of_range"]
_E_OUTSIDE_GAME = CODES["outside_game"]
_E_SCORES_DO_NOT_ADD_UP = CODES["scores_do_not_add_up"]
_E_SCORES_MISMATCH = CODES["scores_mismatch"]
_E_UNENDED_GAME = CODES["unended_game"]
_E_WRONG_MELD = CODES["wrong_meld"]
_E_WRONG_PLAYER = CODES["wrong_player"]
_E_WRONG_TILE = CODES["wrong_tile"]
_E_WRONG_PAYMENT = CODES["wrong_payment"]
_E_RANKS_MISMATCH = CODES["ranks_mismatch"]
_E_ROUND_ORDER = CODES["round_order"]
_E_BAD_VALUE = CODES["bad_value"]
_PAY_BYSTANDER, _PAY_DISCARDER_FREE, _PAY_PAYER_FREE, _PAY_UNEQUAL, _PAY_DEALER_SHARE, _PAY_WINNER_GAIN = (
    T.PAYMENT_RULES["bystander_pays"], T.PAYMENT_RULES["discarder_free"], T.PAYMENT_RULES["payer_free"],
    T.PAYMENT_RULES["unequal_shares"], T.PAYMENT_RULES["dealer_share"], T.PAYMENT_RULES["winner_gain"])
#: Scores, deltas and final scores must stay within this (kanachan's results and numeric are 32-bit).
SCORE_LIMIT = 2 ** 30
# event codes
_START_GAME, _START_KYOKU, _TSUMO, _DAHAI, _REACH, _REACH_ACC, _CHI, _PON, _DMK, _ANKAN, _KAKAN, _DORA, _HORA, \
    _RYUKYOKU, _END_KYOKU, _END_GAME = range(1, 17)
# phases
_P_NONE, _P_GAME, _P_DRAW, _P_ACT, _P_REACH, _P_DISCARDED, _P_KAN, _P_KAKAN, _P_OVER, _P_BAD = range(10)
_STICK = 1000
_ABSENT = -(2 ** 31)

_BASE = T.BASE_OF_KIND
_COPIES = T.COPIES


class Tracked:
    """What :func:`track` returns for a block.

    Attributes
    ----------
    rows : int
        Rows written (decisions of games that passed).
    line, game, seat, step, round, chang, ju, ben : numpy.ndarray, shape (rows,)
        Each row's line (index into the block), game (index into the game
        records), seat, step within the player's game, round index, wind,
        round number, honba.
    sparse, numeric, results, summary : numpy.ndarray, shape (rows, 29 / 6 / 8 / 7)
        kanachan's features (padded).
    end_of_round, end_of_game : numpy.ndarray of bool, shape (rows,)
    games : int
        Game records (a game, or a run of lines outside any game).
    g_first, g_last : numpy.ndarray of int64, shape (games,)
        First and last line (inclusive) of each record.
    g_code, g_line : numpy.ndarray, shape (games,)
        The rule a record broke (0: none) and its line; ``g_values`` (games, 4) its values.
    g_length : numpy.ndarray of int8, shape (games,)
        0 east-only, 1 half-length.
    g_final : numpy.ndarray of int64, shape (games, 4)
        Final scores; for a ``wrong_payment`` record the win's four deltas, for ``ranks_mismatch`` the
        final scores it was ranked by.
    """


def track(ev, file_starts: np.ndarray, *, room: int, grades, game_length: int) -> Tracked:
    """Track every game of a scanned block; see the module docstring.

    Parameters
    ----------
    ev : Events
        The scanned lines of the block.
    file_starts : numpy.ndarray of int64
        Index of each file's first line, and the number of lines last: a game
        must end inside its file.
    room : int
        Room id (0-4) written in every row.
    grades : sequence of 4 int
        Grade (0-15) of the player in each seat.
    game_length : int
        0 east-only, 1 half-length, -1: from the log (half-length when a
        South round is played).

    Examples
    --------
    >>> import numpy as np
    >>> from rewardlab.sources.mjai.scanner import scan
    >>> text = b'{"type":"start_game"}\\n{"type":"end_game"}\\n'
    >>> buf = np.frombuffer(text, dtype=np.uint8)
    >>> ends = np.flatnonzero(buf == 10); starts = np.r_[0, ends[:-1] + 1]
    >>> out = track(scan(buf, starts, ends), np.array([0, 2]), room=0, grades=(0, 0, 0, 0), game_length=-1)
    >>> out.games, out.rows, int(out.g_code[0]) == CODES["out_of_order"]
    (1, 0, True)
    """
    n = ev.n
    out = Tracked()
    out.line = np.empty(n, dtype=np.int64)
    out.game = np.empty(n, dtype=np.int32)
    out.seat = np.empty(n, dtype=np.uint8)
    out.step = np.empty(n, dtype=np.uint16)
    out.round = np.empty(n, dtype=np.uint8)
    out.chang = np.empty(n, dtype=np.uint8)
    out.ju = np.empty(n, dtype=np.uint8)
    out.ben = np.empty(n, dtype=np.uint8)
    out.sparse = np.empty((n, S.MAX_NUM_ACTIVE_SPARSE_FEATURES), dtype=np.int16)
    out.numeric = np.empty((n, S.NUM_NUMERIC_FEATURES), dtype=np.int32)
    out.results = np.empty((n, S.RL_NUM_RESULTS), dtype=np.int32)
    out.summary = np.empty((n, S.MAX_NUM_ROUND_SUMMARY), dtype=np.int8)
    out.end_of_round = np.empty(n, dtype=np.bool_)
    out.end_of_game = np.empty(n, dtype=np.bool_)
    cap = n + 1
    out.g_first = np.zeros(cap, dtype=np.int64)
    out.g_last = np.zeros(cap, dtype=np.int64)
    out.g_code = np.zeros(cap, dtype=np.int8)
    out.g_line = np.zeros(cap, dtype=np.int64)
    out.g_values = np.zeros((cap, 4), dtype=np.int64)
    out.g_length = np.zeros(cap, dtype=np.int8)
    out.g_final = np.zeros((cap, 4), dtype=np.int64)
    prefix = np.array([S.ROOM_OFFSET + room, S.GAME_LENGTH_OFFSET, *(S.GRADE_OFFSET + S.NUM_GRADES * s + g
                                                                     for s, g in enumerate(grades))],
                      dtype=np.int16)
    rows, games = _track_kernel(
        ev.type, ev.actor, ev.target, ev.pai, ev.tsumogiri, ev.bakaze, ev.oya, ev.dora, ev.kyoku, ev.honba,
        ev.kyotaku, ev.consumed, ev.scores, ev.deltas, ev.has_scores, ev.has_deltas, ev.tenpais, ev.tehais,
        ev.ranks, ev.has_ranks, ev.code, ev.detail, np.ascontiguousarray(file_starts, dtype=np.int64), prefix,
        np.int64(game_length), _BASE, _COPIES,
        out.line, out.game, out.seat, out.step, out.round, out.chang, out.ju, out.ben, out.sparse, out.numeric,
        out.results, out.summary, out.end_of_round, out.end_of_game,
        out.g_first, out.g_last, out.g_code, out.g_line, out.g_values, out.g_length, out.g_final)
    out.rows, out.games = int(rows), int(games)
    for name in ("line", "game", "seat", "step", "round", "chang", "ju", "ben", "sparse", "numeric", "results",
                 "summary", "end_of_round", "end_of_game"):
        setattr(out, name, getattr(out, name)[:rows])
    for name in ("g_first", "g_last", "g_code", "g_line", "g_values", "g_length", "g_final"):
        setattr(out, name, getattr(out, name)[:games])
    return out


@njit(cache=True, nogil=True)
def _payment_check(a, tg, dl, oya, sticks, liable):
    """(rule, seat, value, value) of the first payment rule the win's deltas ``dl`` break, else zeros
    (:data:`rewardlab.sources.mjai.tiles.PAYMENT_RULES`).

    ``a`` wins from ``tg`` (``a == tg``: a tsumo), ``oya`` deals, the winner takes ``sticks`` riichi
    sticks; ``liable[s]``: seat ``s`` fed the winner's big three dragons, big four winds or four kans.
    """
    pao = False
    for s in range(4):
        if s != a and liable[s]:
            pao = True
    paid = 0
    for s in range(4):
        if s != a:
            paid -= dl[s]
    if a != tg:  # a ron: the discarder pays, a liable seat may share, no one else pays
        for s in range(4):
            if s != a and s != tg and dl[s] != 0 and not (liable[s] and dl[s] < 0):
                return _PAY_BYSTANDER, s, dl[s], tg
        if dl[tg] >= 0:
            return _PAY_DISCARDER_FREE, tg, dl[tg], 0
    elif pao:  # a tsumo with a liable seat: it pays, the others may pay (the rest of a double yakuman)
        for s in range(4):
            if s != a and (dl[s] > 0 or (liable[s] and dl[s] == 0)):
                return _PAY_PAYER_FREE, s, dl[s], 1 if liable[s] else 0
    else:  # a tsumo: all pay; the non-dealers equal shares, the dealer more (all equal on the dealer's)
        for s in range(4):
            if s != a and dl[s] >= 0:
                return _PAY_PAYER_FREE, s, dl[s], 0
        ref = -1
        for s in range(4):
            if s != a and s != oya:
                if ref < 0:
                    ref = s
                elif dl[s] != dl[ref]:
                    return _PAY_UNEQUAL, s, ref, 0
        if a != oya and dl[oya] >= dl[ref]:
            return _PAY_DEALER_SHARE, oya, ref, 0
    want = paid + _STICK * sticks
    if dl[a] != want:
        return _PAY_WINNER_GAIN, a, dl[a], want
    return 0, 0, 0, 0


@njit(cache=True, nogil=True)
def _out_of_bounds(values):
    """The first of four values outside +-SCORE_LIMIT, as (index, value); index -1 when all fit."""
    for s in range(4):
        if values[s] >= SCORE_LIMIT or values[s] <= -SCORE_LIMIT:
            return s, values[s]
    return -1, 0


@njit(cache=True, nogil=True)
def _track_kernel(etype, actor, target, pai, tsumogiri, bakaze, oya, dora_ev, kyoku, honba, kyotaku, consumed,
                  scores_ev, deltas_ev, has_scores, has_deltas, tenpais, tehais, ranks_ev, has_ranks, scan_code,
                  scan_detail,
                  file_starts, prefix, game_length_opt, base_of, copies,
                  r_line, r_game, r_seat, r_step, r_round, r_chang, r_ju, r_ben, r_sparse, r_numeric, r_results,
                  r_summary, r_eor, r_eog, g_first, g_last, g_code, g_line, g_values, g_length, g_final):
    n_rows = 0
    n_games = 0
    hand = np.zeros((4, 37), dtype=np.int8)
    drawn = np.full(4, -1, dtype=np.int8)
    melds = np.zeros(4, dtype=np.int8)
    pons = np.zeros((4, 34), dtype=np.bool_)
    riichi = np.zeros(4, dtype=np.int8)  # 0 none, 1 declared, 2 declaring tile discarded
    step = np.zeros(4, dtype=np.int64)
    last_round_row = np.full(4, -1, dtype=np.int64)
    last_game_row = np.full(4, -1, dtype=np.int64)
    seen = np.zeros(37, dtype=np.int8)
    dora = np.zeros(5, dtype=np.int8)
    scores = np.zeros(4, dtype=np.int64)
    start_scores = np.zeros(4, dtype=np.int64)
    round_deltas = np.zeros(4, dtype=np.int64)
    summary = np.full(7, S.NUM_TYPES_OF_ROUND_SUMMARY, dtype=np.int8)
    tenpai = np.full(4, -1, dtype=np.int8)
    winners = np.zeros(4, dtype=np.bool_)
    dl = np.zeros(4, dtype=np.int64)  # a result's deltas (given, or the scores' change)
    dragon_melds = np.zeros(4, dtype=np.int8)  # per seat this round: melds of dragons, of winds, kans
    wind_melds = np.zeros(4, dtype=np.int8)
    kan_melds = np.zeros(4, dtype=np.int8)
    liable = np.zeros((4, 4), dtype=np.bool_)  # [winner, seat]: seat fed the winner's pao yakuman
    # game and round state (set at start_game / start_kyoku)
    first_row = 0
    total = _ABSENT
    round_index = -1
    pending = False
    deposits = 0
    start_deposits = 0
    south = False
    round_oya = -1
    chang = 0
    ju = 0
    ben = 0
    n_dora = 0
    kans = 0
    draws = 0
    turn = 0
    last_discard = -1
    ron_target = -1
    closed_kan = False
    result_line = 0
    any_win = False
    dealer_won = False

    for f in range(file_starts.shape[0] - 1):
        phase = _P_NONE
        g = -1
        last_nonblank = file_starts[f] - 1
        for i in range(file_starts[f], file_starts[f + 1]):
            t = etype[i]
            if t == 0 and scan_code[i] == 0:
                continue  # a blank line
            prev_nonblank = last_nonblank
            last_nonblank = i
            if t == _START_GAME and scan_code[i] == 0 and phase != _P_NONE and phase != _P_BAD:
                # the game before has no end_game: it is unended at its last line (value 1: a
                # start_game came next), and this start_game begins the next game, tracked on its own
                g_code[g] = _E_UNENDED_GAME
                g_line[g] = prev_nonblank
                g_last[g] = prev_nonblank
                g_values[g, 0] = 1
                g_values[g, 1] = i
                n_rows = first_row
                phase = _P_NONE
            if phase == _P_BAD:
                # a broken game: its lines run to its end_game (or to the next start_game)
                if t == _START_GAME:
                    g_last[g] = i - 1
                    phase = _P_NONE
                else:
                    g_last[g] = i
                    if t == _END_GAME:
                        phase = _P_NONE
                    continue
            if phase == _P_NONE:
                if t == _START_GAME and scan_code[i] == 0:
                    g = n_games
                    n_games += 1
                    g_first[g] = i
                    g_last[g] = i
                    g_code[g] = 0
                    g_length[g] = 0
                    first_row = n_rows
                    phase = _P_GAME
                    total = _ABSENT
                    round_index = -1
                    pending = False
                    scores[:] = 0
                    deposits = 0
                    south = False
                    step[:] = 0
                    last_game_row[:] = -1
                    round_oya = -1
                    continue
                # a line outside any game: a record of its own (extended over the stray lines after it)
                if g >= 0 and g_code[g] == _E_OUTSIDE_GAME and g_last[g] == i - 1:
                    g_last[g] = i
                    continue
                g = n_games
                n_games += 1
                g_first[g] = i
                g_last[g] = i
                g_code[g] = scan_code[i] if scan_code[i] != 0 else _E_OUTSIDE_GAME
                g_line[g] = i
                g_values[g, 0] = scan_detail[i] if scan_code[i] != 0 else t
                continue
            g_last[g] = i
            # ---------------------------------------------------------------- inside a game
            err = 0
            err_line = i
            v0 = 0
            v1 = 0
            v2 = 0
            v3 = 0
            a = actor[i]
            if scan_code[i] != 0:
                err = scan_code[i]
                v0 = scan_detail[i]
            elif t == _START_GAME:
                err, v0, v1 = _E_OUT_OF_ORDER, t, phase
            elif t == _START_KYOKU:
                if phase != _P_GAME:
                    err, v0, v1 = _E_OUT_OF_ORDER, t, phase
                elif bakaze[i] < 0:
                    err, v0 = _E_MISSING_FIELD, 7
                elif kyoku[i] == _ABSENT:
                    err, v0 = _E_MISSING_FIELD, 8
                elif honba[i] == _ABSENT:
                    err, v0 = _E_MISSING_FIELD, 9
                elif kyotaku[i] == _ABSENT:
                    err, v0 = _E_MISSING_FIELD, 10
                elif oya[i] < 0:
                    err, v0 = _E_MISSING_FIELD, 11
                elif dora_ev[i] < 0:
                    err, v0 = _E_MISSING_FIELD, 14
                elif tehais[i, 0, 0] == -1 and tehais[i, 1, 0] == -1:
                    err, v0 = _E_MISSING_FIELD, 13
                elif not has_scores[i] and round_index < 0:
                    err, v0 = _E_MISSING_FIELD, 12
                elif bakaze[i] > 2:
                    err, v0, v1 = _E_OUT_OF_RANGE, 7, bakaze[i]
                elif kyoku[i] < 1 or kyoku[i] > 4:
                    err, v0, v1 = _E_OUT_OF_RANGE, 8, kyoku[i]
                elif honba[i] > 255:
                    err, v0, v1 = _E_OUT_OF_RANGE, 9, honba[i]
                elif oya[i] != kyoku[i] - 1:
                    err, v0, v1 = _E_OUT_OF_RANGE, 11, oya[i]
                if err == 0 and round_index >= 0:
                    # the previous round is settled now: dealer kept?
                    if pending:
                        if oya[i] == round_oya:
                            summary_add(summary, SUMMARY_DEALER_KEPT)
                        close_round(r_eor, r_results, r_summary, last_round_row, round_deltas, scores, summary)
                        pending = False
                    if has_scores[i]:
                        for s in range(4):
                            if scores_ev[i, s] != scores[s] and err == 0:
                                err, v0, v1, v2 = _E_SCORES_MISMATCH, s, scores_ev[i, s], scores[s]
                    if err == 0 and kyotaku[i] != deposits:
                        err, v0, v1 = _E_DEPOSITS_MISMATCH, kyotaku[i], deposits
                    if err == 0:
                        # the round that may follow: a non-dealer's win passes the deal on and clears the
                        # honba; the dealer's win keeps the round, one more honba; a draw adds a honba,
                        # and the dealer keeps the round or not (tenpai or noten: the log may not say)
                        nc = bakaze[i]
                        nj = kyoku[i] - 1
                        same = nc == chang and nj == ju
                        nxt = (nc == chang and nj == ju + 1) or (ju == 3 and nj == 0 and nc == chang + 1)
                        case = 2 if dealer_won else (1 if any_win else 3)
                        if not ((case == 1 and nxt and honba[i] == 0)
                                or (case == 2 and same and honba[i] == ben + 1)
                                or (case == 3 and (same or nxt) and honba[i] == ben + 1)):
                            err, v0, v1, v2 = _E_ROUND_ORDER, case, nc * 4 + nj, honba[i]
                            v3 = (chang * 4 + ju) * 1024 + ben
                if err == 0:
                    # deal
                    hand[:, :] = 0
                    seen[:] = 0
                    for s in range(4):
                        cnt = 0
                        for j in range(14):
                            k = tehais[i, s, j]
                            if k < 0:
                                break
                            if k == T.HIDDEN:
                                err, v0 = _E_HIDDEN_TILE, 13
                                break
                            hand[s, k] += 1
                            seen[k] += 1
                            cnt += 1
                        if err == 0 and cnt != 13:
                            err, v0, v1, v2 = _E_HAND_SIZE, s, cnt, 13
                        if err != 0:
                            break
                    if err == 0:
                        if dora_ev[i] == T.HIDDEN:
                            err, v0 = _E_HIDDEN_TILE, 14
                        else:
                            seen[dora_ev[i]] += 1
                            err, v0, v1 = _seen_check(seen, copies, base_of)
                if err == 0:
                    round_index += 1
                    if round_index > 255:
                        err, v0, v1 = _E_OUT_OF_RANGE, 8, round_index
                if err == 0:
                    if has_scores[i]:
                        for s in range(4):
                            scores[s] = scores_ev[i, s]
                        bad_seat, bad_value = _out_of_bounds(scores)
                        if bad_seat >= 0:
                            err, v0, v1 = _E_OUT_OF_RANGE, 12, bad_value
                if err == 0:
                    if total == _ABSENT:
                        deposits = kyotaku[i]
                        total = scores[0] + scores[1] + scores[2] + scores[3] + _STICK * deposits
                    start_scores[:] = scores
                    chang = bakaze[i]
                    ju = kyoku[i] - 1
                    ben = honba[i]
                    start_deposits = deposits
                    round_oya = oya[i]
                    if chang > 0:
                        south = True
                    drawn[:] = -1
                    melds[:] = 0
                    pons[:, :] = False
                    riichi[:] = 0
                    last_round_row[:] = -1
                    round_deltas[:] = 0
                    summary[:] = S.NUM_TYPES_OF_ROUND_SUMMARY
                    tenpai[:] = -1
                    winners[:] = False
                    dora[0] = dora_ev[i]
                    n_dora = 1
                    kans = 0
                    draws = 0
                    turn = oya[i]
                    last_discard = -1
                    ron_target = -1
                    closed_kan = False
                    result_line = i
                    dragon_melds[:] = 0
                    wind_melds[:] = 0
                    kan_melds[:] = 0
                    liable[:, :] = False
                    any_win = False
                    dealer_won = False
                    phase = _P_DRAW
            elif t == _END_GAME:
                if phase != _P_GAME or round_index < 0:
                    err, v0, v1 = _E_OUT_OF_ORDER, t, phase
                else:
                    final = scores.copy()
                    if deposits > 0:
                        # sticks left on the table go to the top player (ties: the lower seat)
                        final[top_seat(scores)] += _STICK * deposits
                    if has_scores[i]:
                        # given final scores: the sticks left to the top player, or forfeited (as computed)
                        forfeited = True
                        for s in range(4):
                            if scores_ev[i, s] != scores[s]:
                                forfeited = False
                        if not forfeited:
                            for s in range(4):
                                if scores_ev[i, s] != final[s]:
                                    err, v0, v1, v2 = _E_SCORES_MISMATCH, s, scores_ev[i, s], final[s]
                                    break
                        if err == 0:
                            for s in range(4):
                                final[s] = scores_ev[i, s]
                    if err == 0:
                        bad_seat, bad_value = _out_of_bounds(final)
                        if bad_seat >= 0:
                            err, v0, v1 = _E_OUT_OF_RANGE, 12, bad_value
                    if err == 0 and has_ranks[i] == -1:
                        err, v0 = _E_BAD_VALUE, 17
                    elif err == 0 and has_ranks[i] == 1:
                        # given ranks: 1 = top (0 = top when they are 0-3), by the final scores
                        rank = ranks_of(final)
                        given = 0
                        for s in range(4):
                            if 0 <= ranks_ev[i, s] <= 3:
                                given |= 1 << ranks_ev[i, s]
                        base = 0 if given == 15 else 1
                        for s in range(4):
                            if ranks_ev[i, s] != rank[s] + base:
                                err, v0, v1, v2, v3 = _E_RANKS_MISMATCH, s, ranks_ev[i, s], rank[s] + base, base
                                g_final[g, :] = final
                                break
                    if err == 0:
                        bust = False
                        for s in range(4):
                            if final[s] < 0:
                                bust = True
                        if pending:
                            summary_add(summary, SUMMARY_GAME_OVER)
                            if bust:
                                summary_add(summary, SUMMARY_BUST)
                            close_round(r_eor, r_results, r_summary, last_round_row, round_deltas, final,
                                         summary)
                            pending = False
                        for s in range(4):
                            r = last_game_row[s]
                            if r >= 0:
                                r_eor[r] = False
                                r_eog[r] = True
                                for j in range(4):
                                    r_results[r, j] = round_deltas[j]
                                    r_results[r, 4 + j] = final[j]
                                for j in range(7):
                                    r_summary[r, j] = summary[j]
                        g_length[g] = game_length_opt if game_length_opt >= 0 else (1 if south else 0)
                        for r in range(first_row, n_rows):
                            r_sparse[r, 1] = S.GAME_LENGTH_OFFSET + g_length[g]
                        for s in range(4):
                            g_final[g, s] = final[s]
                        phase = _P_NONE
                        continue
            elif phase == _P_GAME:
                err, v0, v1 = _E_OUT_OF_ORDER, t, phase
            elif t == _END_KYOKU:
                if phase != _P_OVER:
                    err, v0, v1 = _E_OUT_OF_ORDER, t, phase
                else:
                    sticks = scores[0] + scores[1] + scores[2] + scores[3] + _STICK * deposits
                    if sticks != total:
                        err, v0, v1 = _E_SCORES_DO_NOT_ADD_UP, sticks, total
                        err_line = result_line
                    else:
                        pending = True
                        phase = _P_GAME
            elif t == _DORA:
                k = dora_ev[i]
                if phase == _P_OVER:
                    err, v0, v1 = _E_OUT_OF_ORDER, t, phase
                elif k < 0:
                    err, v0 = _E_MISSING_FIELD, 14
                elif k == T.HIDDEN:
                    err, v0 = _E_HIDDEN_TILE, 14
                elif n_dora >= 5 or n_dora > kans:
                    err, v0, v1 = _E_OUT_OF_RANGE, 14, n_dora + 1
                else:
                    dora[n_dora] = k
                    n_dora += 1
                    seen[k] += 1
                    err, v0, v1 = _seen_check(seen, copies, base_of)
            elif t == _HORA or t == _RYUKYOKU:
                if t == _HORA:
                    tg = target[i]
                    if a < 0:
                        err, v0 = _E_MISSING_FIELD, 2
                    elif tg < 0:
                        err, v0 = _E_MISSING_FIELD, 3
                    elif a == tg:  # tsumo
                        if phase != _P_ACT or drawn[a] < 0:
                            err, v0, v1 = _E_OUT_OF_ORDER, t, phase
                        elif a != turn:
                            err, v0, v1 = _E_WRONG_PLAYER, a, turn
                        elif pai[i] >= 0 and pai[i] != drawn[a]:
                            err, v0, v1, v2 = _E_WRONG_TILE, a, pai[i], drawn[a]
                    else:  # ron: on a discard, an added kan, a closed kan (kokushi), or a second ron on it
                        robbed = phase == _P_KAN and closed_kan
                        if not (phase == _P_DISCARDED or phase == _P_KAKAN or robbed
                                or (phase == _P_OVER and ron_target >= 0)):
                            err, v0, v1 = _E_OUT_OF_ORDER, t, phase
                        elif tg != turn:
                            err, v0, v1 = _E_WRONG_PLAYER, tg, turn
                        elif winners[a]:
                            err, v0, v1 = _E_OUT_OF_ORDER, t, phase
                        elif pai[i] >= 0 and pai[i] != last_discard and not (
                                closed_kan and base_of[pai[i]] == base_of[last_discard]):
                            err, v0, v1, v2 = _E_WRONG_TILE, a, pai[i], last_discard
                    if err == 0:
                        shown = drawn[a] if a == tg else -1
                        n_rows = emit_row(
                            n_rows, a, i, g, step, round_index, chang, ju, ben, start_deposits, start_scores,
                            prefix, draws, dora, n_dora, hand[a], shown,
                            last_round_row, last_game_row, r_line, r_game, r_seat, r_step, r_round, r_chang,
                            r_ju, r_ben, r_sparse, r_numeric, r_results, r_summary, r_eor, r_eog)
                        winners[a] = True
                        if a == tg:
                            summary_add(summary, SUMMARY_TSUMO)
                        else:
                            summary_add(summary, SUMMARY_RON)
                            summary_add(summary, SUMMARY_DISCARDER + tg)
                            ron_target = tg
                        summary_add(summary, SUMMARY_WINNER + a)
                else:
                    if phase == _P_OVER:
                        err, v0, v1 = _E_OUT_OF_ORDER, t, phase
                    else:
                        summary_add(summary, SUMMARY_DRAW)
                        for s in range(4):
                            if tenpais[i, s] == 1:
                                summary_add(summary, SUMMARY_TENPAI + s)
                if err == 0:
                    # the points: deltas as given, or scores minus the current ones
                    if has_deltas[i]:
                        for s in range(4):
                            dl[s] = deltas_ev[i, s]
                        if has_scores[i]:
                            for s in range(4):
                                if scores_ev[i, s] != scores[s] + dl[s] and err == 0:
                                    err, v0, v1, v2 = _E_SCORES_MISMATCH, s, scores_ev[i, s], scores[s] + dl[s]
                    elif has_scores[i]:
                        for s in range(4):
                            dl[s] = scores_ev[i, s] - scores[s]
                    else:
                        err, v0 = _E_MISSING_FIELD, 15
                if err == 0 and t == _HORA:
                    # who pays: the discarder of a ron, everyone on a tsumo; the first winner takes the sticks
                    rule, p1, p2, p3 = _payment_check(a, target[i], dl, round_oya, deposits, liable[a])
                    if rule != 0:
                        err, v0, v1, v2, v3 = _E_WRONG_PAYMENT, rule, p1, p2, p3
                        g_final[g, :] = dl
                if err == 0:
                    for s in range(4):
                        scores[s] += dl[s]
                        round_deltas[s] += dl[s]
                    bad_seat, bad_value = _out_of_bounds(scores)
                    if bad_seat < 0:
                        bad_seat, bad_value = _out_of_bounds(round_deltas)
                    if bad_seat >= 0:
                        err, v0, v1 = _E_OUT_OF_RANGE, 12, bad_value
                if err == 0:
                    if t == _HORA:
                        deposits = 0  # the sticks go to the (first) winner, in its deltas
                        any_win = True
                        if a == round_oya:
                            dealer_won = True
                    result_line = i
                    phase = _P_OVER
            elif phase == _P_OVER:
                err, v0, v1 = _E_OUT_OF_ORDER, t, phase
            elif t == _REACH_ACC:
                if a < 0:
                    err, v0 = _E_MISSING_FIELD, 2
                elif riichi[a] != 2:
                    err, v0, v1 = _E_OUT_OF_ORDER, t, phase
                else:
                    riichi[a] = 0
                    scores[a] -= _STICK
                    deposits += 1
                    if has_scores[i]:
                        for s in range(4):
                            if scores_ev[i, s] != scores[s] and err == 0:
                                err, v0, v1, v2 = _E_SCORES_MISMATCH, s, scores_ev[i, s], scores[s]
                    if has_deltas[i] and err == 0:
                        for s in range(4):
                            want = -_STICK if s == a else 0
                            if deltas_ev[i, s] != want and err == 0:
                                err, v0, v1, v2 = _E_SCORES_MISMATCH, s, deltas_ev[i, s], want
            elif t == _TSUMO:
                k = pai[i]
                if a < 0:
                    err, v0 = _E_MISSING_FIELD, 2
                elif k < 0:
                    err, v0 = _E_MISSING_FIELD, 4
                elif k == T.HIDDEN:
                    err, v0 = _E_HIDDEN_TILE, 4
                elif phase == _P_DRAW or phase == _P_KAN or phase == _P_KAKAN:
                    if a != turn:
                        err, v0, v1 = _E_WRONG_PLAYER, a, turn
                elif phase == _P_DISCARDED:
                    if a != (turn + 1) % 4:
                        err, v0, v1 = _E_WRONG_PLAYER, a, (turn + 1) % 4
                else:
                    err, v0, v1 = _E_OUT_OF_ORDER, t, phase
                if err == 0:
                    draws += 1
                    if draws > S.NUM_DRAWS:
                        err, v0, v1 = _E_OUT_OF_RANGE, 4, draws
                    else:
                        seen[k] += 1
                        err, v0, v1 = _seen_check(seen, copies, base_of)
                if err == 0:
                    drawn[a] = k
                    turn = a
                    closed_kan = False
                    phase = _P_ACT
            elif t == _DAHAI or t == _REACH or t == _ANKAN or t == _KAKAN:
                k = pai[i]
                if a < 0:
                    err, v0 = _E_MISSING_FIELD, 2
                elif not (phase == _P_ACT or (phase == _P_REACH and t == _DAHAI)):
                    err, v0, v1 = _E_OUT_OF_ORDER, t, phase
                elif a != turn:
                    err, v0, v1 = _E_WRONG_PLAYER, a, turn
                elif (t == _DAHAI or t == _KAKAN) and k < 0:
                    err, v0 = _E_MISSING_FIELD, 4
                elif (t == _REACH or t == _ANKAN or t == _KAKAN) and drawn[a] < 0:
                    err, v0, v1 = _E_OUT_OF_ORDER, t, phase
                if err == 0:
                    n_rows = emit_row(
                        n_rows, a, i, g, step, round_index, chang, ju, ben, start_deposits, start_scores,
                        prefix, draws, dora, n_dora, hand[a], drawn[a],
                        last_round_row, last_game_row, r_line, r_game, r_seat, r_step, r_round, r_chang,
                        r_ju, r_ben, r_sparse, r_numeric, r_results, r_summary, r_eor, r_eog)
                    had = drawn[a]
                    if t == _REACH:
                        if riichi[a] != 0:
                            err, v0, v1 = _E_OUT_OF_ORDER, t, phase
                        else:
                            riichi[a] = 1
                            phase = _P_REACH
                    else:
                        if had >= 0:
                            hand[a, had] += 1
                            drawn[a] = -1
                        if t == _DAHAI:
                            if tsumogiri[i] == 1 and k != had:
                                err, v0, v1, v2 = _E_WRONG_TILE, a, k, had
                            elif hand[a, k] <= 0:
                                err, v0, v1 = _E_HAND_INCONSISTENT, a, k
                            else:
                                hand[a, k] -= 1
                                size = 0
                                for j in range(37):
                                    size += hand[a, j]
                                if size != 13 - 3 * melds[a]:
                                    err, v0, v1, v2 = _E_HAND_SIZE, a, size, 13 - 3 * melds[a]
                                if riichi[a] == 1:
                                    riichi[a] = 2
                                last_discard = k
                                phase = _P_DISCARDED
                        elif t == _ANKAN:
                            b = -1
                            for j in range(4):
                                c = consumed[i, j]
                                if c < 0 or (b >= 0 and base_of[c] != b):
                                    err, v0 = _E_WRONG_MELD, a
                                    break
                                b = base_of[c]
                                if hand[a, c] <= 0:
                                    err, v0, v1 = _E_HAND_INCONSISTENT, a, c
                                    break
                                hand[a, c] -= 1
                            if err == 0:
                                melds[a] += 1
                                kans += 1
                                kan_melds[a] += 1
                                if b >= 31:
                                    dragon_melds[a] += 1
                                elif b >= 27:
                                    wind_melds[a] += 1
                                last_discard = consumed[i, 0]
                                closed_kan = True
                                phase = _P_KAN
                        else:  # kakan
                            b = base_of[k]
                            if not pons[a, b]:
                                err, v0 = _E_WRONG_MELD, a
                            elif hand[a, k] <= 0:
                                err, v0, v1 = _E_HAND_INCONSISTENT, a, k
                            else:
                                hand[a, k] -= 1
                                pons[a, b] = False
                                kans += 1
                                kan_melds[a] += 1
                                last_discard = k
                                phase = _P_KAKAN
            elif t == _CHI or t == _PON or t == _DMK:
                k = pai[i]
                tg = target[i]
                need = 3 if t == _DMK else 2
                if a < 0:
                    err, v0 = _E_MISSING_FIELD, 2
                elif tg < 0:
                    err, v0 = _E_MISSING_FIELD, 3
                elif k < 0:
                    err, v0 = _E_MISSING_FIELD, 4
                elif phase != _P_DISCARDED:
                    err, v0, v1 = _E_OUT_OF_ORDER, t, phase
                elif tg != turn:
                    err, v0, v1 = _E_WRONG_PLAYER, tg, turn
                elif a == tg or (t == _CHI and a != (tg + 1) % 4):
                    err, v0, v1 = _E_WRONG_PLAYER, a, (tg + 1) % 4
                elif k != last_discard:
                    err, v0, v1, v2 = _E_WRONG_TILE, a, k, last_discard
                else:
                    cnt = 0
                    for j in range(4):
                        if consumed[i, j] >= 0:
                            cnt += 1
                    if cnt != need:
                        err, v0 = _E_WRONG_MELD, a
                    elif t == _CHI:
                        b0 = base_of[k]
                        b1 = base_of[consumed[i, 0]]
                        b2 = base_of[consumed[i, 1]]
                        lo = min(b0, min(b1, b2))
                        hi = max(b0, max(b1, b2))
                        if lo >= 27 or hi - lo != 2 or lo // 9 != hi // 9 or b0 == b1 or b0 == b2 or b1 == b2:
                            err, v0 = _E_WRONG_MELD, a
                    else:
                        for j in range(need):
                            if base_of[consumed[i, j]] != base_of[k]:
                                err, v0 = _E_WRONG_MELD, a
                if err == 0:
                    n_rows = emit_row(
                        n_rows, a, i, g, step, round_index, chang, ju, ben, start_deposits, start_scores,
                        prefix, draws, dora, n_dora, hand[a], -1,
                        last_round_row, last_game_row, r_line, r_game, r_seat, r_step, r_round, r_chang,
                        r_ju, r_ben, r_sparse, r_numeric, r_results, r_summary, r_eor, r_eog)
                    for j in range(need):
                        c = consumed[i, j]
                        if hand[a, c] <= 0:
                            err, v0, v1 = _E_HAND_INCONSISTENT, a, c
                            break
                        hand[a, c] -= 1
                    if err == 0:
                        melds[a] += 1
                        turn = a
                        if t == _PON:
                            pons[a, base_of[k]] = True
                        if t == _DMK:
                            kans += 1
                            phase = _P_KAN
                        else:
                            phase = _P_ACT
                        # the seat that feeds a big three dragons, big four winds or four kans is liable (pao)
                        if t != _CHI:
                            b = base_of[k]
                            if b >= 31:
                                dragon_melds[a] += 1
                                if dragon_melds[a] == 3:
                                    liable[a, tg] = True
                            elif b >= 27:
                                wind_melds[a] += 1
                                if wind_melds[a] == 4:
                                    liable[a, tg] = True
                            if t == _DMK:
                                kan_melds[a] += 1
                                if kan_melds[a] == 4:
                                    liable[a, tg] = True
            else:
                err, v0, v1 = _E_OUT_OF_ORDER, t, phase
            if err != 0:
                g_code[g] = err
                g_line[g] = err_line
                g_values[g, 0] = v0
                g_values[g, 1] = v1
                g_values[g, 2] = v2
                g_values[g, 3] = v3
                n_rows = first_row  # take the game's rows back
                phase = _P_BAD if t != _END_GAME else _P_NONE
        if phase != _P_NONE and phase != _P_BAD and g >= 0:
            g_code[g] = _E_UNENDED_GAME
            g_line[g] = last_nonblank
            g_last[g] = last_nonblank
            n_rows = first_row
    return n_rows, n_games


@njit(cache=True, nogil=True)
def _seen_check(seen, copies, base_of):
    """(rule, kind, count) for a kind seen more often than the set holds, else (0, 0, 0)."""
    for k in range(37):
        if seen[k] > copies[k]:
            return _C_TOO_MANY, k, seen[k]
    for b in range(3):
        red = 10 * b
        if seen[red] + seen[red + 5] > 4:
            return _C_TOO_MANY, red + 5, seen[red] + seen[red + 5]
    return 0, 0, 0


_C_TOO_MANY = CODES["too_many_copies"]


def compile_all() -> None:
    """Compile (or load from numba's cache) the tracker on a one-round game."""
    from rewardlab.sources.mjai.scanner import scan

    text = (b'{"type":"start_game"}\n{"type":"start_kyoku","bakaze":"E","kyoku":1,"honba":0,"kyotaku":0,'
            b'"oya":0,"dora_marker":"1m","scores":[25000,25000,25000,25000],"tehais":[' +
            b",".join([b'["2m","3m","4m","5m","6m","7m","8m","9m","1p","2p","3p","4p","5p"]'] * 4) +
            b']}\n{"type":"end_game"}\n')
    buf = np.frombuffer(text, dtype=np.uint8)
    ends = np.flatnonzero(buf == 10)
    starts = np.r_[0, ends[:-1] + 1]
    track(scan(buf, starts, ends), np.array([0, len(ends)]), room=0, grades=(0, 0, 0, 0), game_length=-1)
