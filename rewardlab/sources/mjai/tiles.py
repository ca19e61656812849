"""MJAI's vocabulary as small integers: event types, fields, tiles, winds, and the rules a log can break.

The compiled scanner (:mod:`rewardlab.sources.mjai.scanner`) turns each JSON
line into these codes, and the game tracker (:mod:`rewardlab.sources.mjai.tracker`)
works on them; this module holds the tables both read, and the names error
messages print.

Tiles
-----
A tile name is MJAI's: ``1m``-``9m``, ``1p``-``9p``, ``1s``-``9s``, the red
fives ``5mr`` ``5pr`` ``5sr``, and the honors ``E S W N`` (winds) ``P F C``
(white, green, red dragon).  Its *kind* is rewardlab's 37-kind id, the one of
the kanachan layout (:mod:`rewardlab.domains.mahjong.simulate`): ``10 * suit
+ number`` for number tiles (suit 0 m, 1 p, 2 s), ``10 * suit`` for a red
five, ``30``-``36`` for ``E S W N P F C``.  ``?`` (a hidden tile) is
:data:`HIDDEN`.

Examples
--------
>>> from rewardlab.sources.mjai import tiles
>>> [tiles.KIND_OF_NAME[n] for n in ("1m", "5pr", "9s", "C")]
[1, 10, 29, 36]
>>> tiles.tile_ids([1, 5, 5, 0, 36])
[0, 16, 17, 18, 132]
"""

from __future__ import annotations

import numpy as np

__all__ = ["EVENT_TYPES", "EVENT_NAMES", "FIELDS", "FIELD_NAMES", "KIND_OF_NAME", "NAME_OF_KIND", "HIDDEN",
           "WINDS", "tile_ids", "BASE_OF_KIND", "COPIES", "SCAN_CODES", "RULE_CODES", "PAYMENT_RULES"]

#: Event type codes (0: the line has no ``type``).
EVENT_TYPES = {
    "start_game": 1, "start_kyoku": 2, "tsumo": 3, "dahai": 4, "reach": 5, "reach_accepted": 6,
    "chi": 7, "pon": 8, "daiminkan": 9, "ankan": 10, "kakan": 11, "dora": 12, "hora": 13,
    "ryukyoku": 14, "end_kyoku": 15, "end_game": 16,
}
EVENT_NAMES = {code: name for name, code in EVENT_TYPES.items()}

#: Fields the scanner reads (any other key is skipped, whatever its value).
FIELDS = {
    "type": 1, "actor": 2, "target": 3, "pai": 4, "consumed": 5, "tsumogiri": 6, "bakaze": 7,
    "kyoku": 8, "honba": 9, "kyotaku": 10, "oya": 11, "scores": 12, "tehais": 13, "dora_marker": 14,
    "deltas": 15, "tenpais": 16, "ranks": 17,
}
FIELD_NAMES = {code: name for name, code in FIELDS.items()}

#: Winds by ``bakaze`` letter: the prevailing wind is kanachan's ``chang``.
WINDS = {"E": 0, "S": 1, "W": 2, "N": 3}

HIDDEN = 37  #: the kind code of ``?``

#: Error codes of the compiled scanner (:func:`rewardlab.sources.mjai.scanner.scan`), by rule name
#: (0: the line passed).
SCAN_CODES = {
    "not_json": 1,        # not one JSON object (detail: 0)
    "unknown_event": 2,   # a "type" that is not an MJAI event (column: the value)
    "bad_tile": 3,        # a tile name that is no tile (detail: the field)
    "bad_value": 4,       # a known field with a value of the wrong shape (detail: the field)
    "no_type": 5,         # an object without "type"
}

#: Rule codes of a game record of the compiled tracker (:mod:`rewardlab.sources.mjai.tracker`); the
#: scanner's codes pass through unchanged.
RULE_CODES = dict(SCAN_CODES) | {
    "outside_game": 10,       # an event before start_game or after end_game
    "out_of_order": 11,       # an event the game's state does not allow now (values: event, phase)
    "wrong_player": 12,       # the actor (or target) is not the seat whose turn it is (values: seat, expected)
    "hand_inconsistent": 13,  # a tile the player's hand does not hold (values: seat, kind)
    "too_many_copies": 14,    # a tile seen more often in a round than the set holds (values: kind, seen)
    "missing_field": 15,      # a field the event needs (values: field)
    "scores_mismatch": 16,    # given scores differ from the computed ones (values: seat, given, computed)
    "scores_do_not_add_up": 17,  # points plus deposits differ from the game's total (values: sum, total)
    "unended_game": 18,       # the file ends inside a game, or a start_game comes before its end_game (values: 1)
    "out_of_range": 19,       # a value outside kanachan's layout (values: field, value)
    "hidden_tile": 20,        # a "?" tile: the log hides a hand
    "hand_size": 21,          # a concealed hand of the wrong size after a discard (values: seat, size, expected)
    "deposits_mismatch": 22,  # start_kyoku's kyotaku differs from the sticks left on the table (values: given, left)
    "wrong_tile": 23,         # a tile other than the one the game says (values: seat, given, expected)
    "wrong_meld": 24,         # consumed tiles that do not make the meld (values: seat)
    "wrong_payment": 25,      # a win's deltas do not pay as the win says (values: PAYMENT_RULES code, seat, ...)
    "ranks_mismatch": 26,     # end_game's ranks differ from the final scores' (values: seat, given, expected, base)
    "round_order": 27,        # a round that cannot follow the one before (values: case, round, honba, previous)
}

#: The payment rules of a win (``hora``), checked on its four deltas (given, or the scores' change), by the
#: code a ``wrong_payment`` record carries.  A seat that fed the pon or open kan completing a big three dragons,
#: big four winds or four kans of the winner is liable (pao) and may pay too; then a tsumo's shares are free.
PAYMENT_RULES = {
    "bystander_pays": 1,     # a ron: a seat that is neither the winner nor the discarder pays (or gains)
    "discarder_free": 2,     # a ron: the discarder does not pay
    "payer_free": 3,         # a tsumo: a player other than the winner does not pay (or a liable seat does not)
    "unequal_shares": 4,     # a tsumo: two seats that pay the same share (the non-dealers; all three after the
                             # dealer's tsumo) pay different amounts
    "dealer_share": 5,       # a non-dealer's tsumo: the dealer does not pay the larger share
    "winner_gain": 6,        # the winner gains other than what the others pay plus the riichi sticks it takes
}

KIND_OF_NAME: dict[str, int] = {"?": HIDDEN}
for _suit, _letter in enumerate("mps"):
    for _n in range(1, 10):
        KIND_OF_NAME[f"{_n}{_letter}"] = 10 * _suit + _n
    KIND_OF_NAME[f"5{_letter}r"] = 10 * _suit
for _h, _letter in enumerate("ESWNPFC"):
    KIND_OF_NAME[_letter] = 30 + _h
NAME_OF_KIND = {kind: name for name, kind in KIND_OF_NAME.items()}

#: The 34-base (``tile id // 4``) of each kind; -1 for codes that are no tile (7, 8, 9, ...).
BASE_OF_KIND = np.full(38, -1, dtype=np.int8)
for _kind in range(37):
    if _kind >= 30:
        BASE_OF_KIND[_kind] = 27 + _kind - 30
    elif _kind % 10 == 0:
        BASE_OF_KIND[_kind] = 9 * (_kind // 10) + 4  # a red five
    else:
        BASE_OF_KIND[_kind] = 9 * (_kind // 10) + _kind % 10 - 1

#: Copies of each kind in the 136 tiles: 1 red five and 3 plain fives per suit, 4 of the rest
#: (a set without red fives has 4 plain fives: the plain limit allows it, the base limit holds).
COPIES = np.array([1 if k % 10 == 0 and k < 30 else 4 for k in range(37)], dtype=np.int8)


def tile_ids(kinds) -> list[int]:
    """The kanachan tile ids (0-135, sorted) a hand of these kinds is written as.

    Copy 0 of each five is the red five; the plain fives take copies 1-3 (and
    copy 0 as well when a hand holds four plain fives, which only a set
    without red fives has).  The compiled tracker writes hands the same way.

    Examples
    --------
    >>> tile_ids([35, 35, 20, 25])
    [88, 89, 128, 129]
    """
    counts = np.bincount(np.asarray(kinds, dtype=np.int64), minlength=37)
    out = []
    for base in range(34):
        if base < 27 and base % 9 == 4:
            red = 10 * (base // 9)
            plain = red + 5
            if counts[red]:
                out.append(4 * base)
            first = 1 if counts[plain] < 4 else 0
            out.extend(4 * base + first + j for j in range(counts[plain]))
        else:
            kind = 30 + base - 27 if base >= 27 else 10 * (base // 9) + base % 9 + 1
            out.extend(4 * base + j for j in range(counts[kind]))
    return out
