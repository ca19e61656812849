"""Seeded simulation of Japanese-mahjong game flow, written as kanachan offline-RL annotations.

This is rewardlab's sample-data generator.  It plays whole four-player games
at the level of *game flow and scores*: a real shuffled 136-tile wall every
round, dealt hands, draws and discards in turn order, calls, closed kans,
riichi with its 1000-point stick, wins by tsumo and ron with real basic-point
arithmetic, exhaustive draws with tenpai payments, honba, dealer repeats and
rotation, busting, the all-last and extension rules, and kanachan's ranking.
It does **not** match tiles: whether a hand is tenpai, and who wins when, is a
random process (each player becomes tenpai after a random number of own
draws, then wins by tsumo or ron with fixed per-event probabilities).  Every
feature written out stays inside kanachan's valid ranges and agrees with the
simulated game.

Everything is drawn from one ``random.Random(seed)`` stream, game after game,
so the first ``k`` games of ``simulate_games(n, seed=s)`` are the games of
``simulate_games(k, seed=s)``, and the same ``(games, seed)`` always gives
byte-identical files.

Rules simulated
---------------
* 4 players, seats 0-3, 25000 points each.  Seat ``ju`` deals in round
  ``(chang, ju)``.  Room (0-4) and the four grades (0-15) are fixed per game;
  the grades are drawn from the room's usual grade band.
* East-only games play East 1-4, half-length games East 1-4 and South 1-4.
  When the scheduled last round ends without a dealer repeat and nobody has
  30000 points, the game goes into the next wind (South for east-only, West
  for half-length); there it ends as soon as a round ends with someone at
  30000 or more, and at the latest after its 4th round, so ``chang < 3`` and
  ``ju < 4`` always.
* All-last stop: when the dealer of the scheduled last round keeps the
  dealership while ranked first with at least 30000 points, the game ends.
* A game ends at once when a round leaves any score below 0 (busting).
* Wall: tile ids 0-135 are shuffled; the last 14 form the dead wall (dora
  indicators at dead-wall positions 4, 6, 8, 10, 12; kan replacement tiles at
  0-3), the first 52 are dealt (13 each, the dealer first) and the live wall
  gives 70 draws, one fewer per kan.
* Dealer repeat: on a dealer win or when the dealer is tenpai at an
  exhaustive draw (``ju`` stays, ``ben + 1``); otherwise the dealership
  passes (``ju + 1``, or ``chang + 1, ju = 0`` after ``ju`` 3), with
  ``ben = 0`` after a non-dealer win and ``ben + 1`` after an exhaustive draw.
* Riichi: only with a closed tenpai hand, at least 1000 points and at least 4
  tiles left in the live wall.  The stick is placed when the declaring discard
  is not won on (a ron on the declaring tile cancels the stick).  Sticks not
  won stay on the table; at the end of the game any left over go to the
  first-ranked player.
* Wins: no win can happen before all four players have made a decision in the
  round (no first-turn wins), which guarantees that **every player has at
  least one decision in every round**.  No double ron: when a discard is won,
  the first tenpai player after the discarder in turn order takes it (head
  bump).  Abortive draws, nagashi mangan, open kans and added kans are not
  simulated.
* Points: ``basic = fu * 2 ** (2 + han)``, capped at 2000 (mangan, also for
  han 5), 3000 (haneman, han 6-7), 4000 (baiman, 8-10), 6000 (sanbaiman,
  11-12), 8000 (yakuman, 13+).  Ron: the discarder pays 4 * basic (6 * basic
  to a dealer) rounded up to 100, plus 300 per honba.  Tsumo: the dealer pays
  2 * basic and the others basic (each pays 2 * basic to a dealer), each
  rounded up to 100, plus 100 per honba each.  The winner takes all sticks on
  the table.  Exhaustive draw: 3000 points from the noten to the tenpai
  players (1 tenpai: +3000 / -1000 x3; 2: +1500 / -1500; 3: +1000 x3 / -3000;
  0 or 4: nothing).
* Scores are always multiples of 100, and at every moment the scores plus
  1000 per stick on the table sum to 100000 (the simulator asserts it).
* Final ranks: higher score first, equal scores ranked by seat (lower seat
  first), which is kanachan's rule.

Id mappings
-----------
Tile kinds (37): a tile id ``t`` has ``base = t // 4`` (0-8 1m-9m, 9-17 1p-9p,
18-26 1s-9s, 27-33 east south west north white green red); copy 0 of each
five (ids 16, 52, 88) is the red five.  Its kind is ``10 * suit + number``
for number tiles (suit 0 m, 1 p, 2 s; number 1-9), ``10 * suit`` for a red
five (0, 10, 20) and ``30 + honor`` (30-36) for honors.

Sparse features, in this order (so that ``sparse[6] - 71`` is the seat):
room, ``5 + game_length``, ``7 + 16 * seat + grade`` for seats 0-3,
``71 + seat``, ``75 + chang``, ``78 + ju``, ``82 + n`` where ``n = 69 -
tiles left in the live wall`` (the number of tiles drawn so far minus one: 0
at the dealer's first discard, 69 once the wall is empty), the dora
indicators ``152 + 37 * slot + kind``, the concealed hand ``337 + tile id``
(sorted, without the drawn tile) and, right after a draw, ``473 + kind`` of
the drawn tile.

Numeric features: ``[ben, sticks on the table, score of seat 0, 1, 2, 3]``.

Actions (candidate ids < 546, sorted ascending in each row):
``0 + kind`` discard, ``37 + kind`` discard declaring riichi, ``74 + base``
closed kan, ``108`` tsumo, ``109`` skip (pass on a call), ``110 + 3 * kind +
pos`` chi on a discard of ``kind`` (``pos`` 0/1/2: the called tile is the
lowest/middle/highest of the run), ``221 + kind`` pon, ``258`` ron.

Decision points: the discard after every draw or call (a riichi player only
decides when a tsumo is on offer; otherwise the drawn tile is discarded
automatically), and every chance to call (pon, chi or ron) on another
player's discard.

Progression ids (< 2165): ``0`` begin of round, ``1 + seat`` riichi stick
placed, ``5 + ((seat * 37 + kind) * 2 + tsumogiri) * 2 + riichi`` discard
(5-596), ``597 + 37 * seat + kind`` chi, ``745 + 37 * seat + kind`` pon,
``893 + 34 * seat + base`` closed kan.

Round summary ids (< 29): ``0`` tsumo, ``1`` ron, ``2`` exhaustive draw,
``3 + seat`` winner, ``7 + seat`` discarder of a ron, ``11 + seat`` tenpai at
an exhaustive draw, ``15 + value`` the win's value (0-3: 1-4 han below
mangan, 4 mangan, 5 haneman, 6 baiman, 7 sanbaiman, 8 yakuman), ``24`` the
dealer keeps the dealership, ``25`` the game ended after this round, ``26``
the game ended by a bust.

Examples
--------
>>> from rewardlab.domains.mahjong.simulate import simulate_games, iter_kanachan_lines
>>> game = next(simulate_games(1, seed=7))
>>> sum(game.final_scores)
100000
>>> line = next(iter_kanachan_lines([game]))
>>> line.split("\\t")[0] == game.game_id
True
"""

from __future__ import annotations

import os
import random
from dataclasses import dataclass
from pathlib import Path
from typing import Iterable, Iterator

import numpy as np

from rewardlab.sources.kanachan import schema
from rewardlab.core.files import atomic_open, progress_enabled
from rewardlab.core.errors import ParameterError, check_int
from rewardlab.domains.mahjong.rules import ranks_from_scores

__all__ = [
    "Decision",
    "SimulatedRound",
    "SimulatedGame",
    "SampleSummary",
    "simulate_games",
    "MAX_SAMPLE_GAMES",
    "iter_kanachan_lines",
    "write_sample",
    "tile_kind",
]

#: The most games :func:`write_sample` writes in one file (about 26 GB of text; the CLI's ``sample --games``).
MAX_SAMPLE_GAMES = 100_000

# --- rules -----------------------------------------------------------------
STARTING_SCORE = 25000
TOTAL_POINTS = schema.NUM_SEATS * STARTING_SCORE
RIICHI_STICK = 1000
TARGET_SCORE = 30000  # extension / all-last stop threshold
_WALL_SIZE = schema.NUM_TILES
_DEAD_WALL = 14
_LIVE_END = _WALL_SIZE - _DEAD_WALL  # 122
_HAND_SIZE = 13
_DEALT = schema.NUM_SEATS * _HAND_SIZE  # 52
_INDICATOR_POSITIONS = (4, 6, 8, 10, 12)  # in the dead wall, per dora slot
_MAX_KANS = schema.NUM_DORA_SLOTS - 1
_MAX_CALLS = 8  # per round; keeps the progression far below its maximum length
_NUM_BASES = 34
assert _LIVE_END - _DEALT == schema.NUM_DRAWS

# --- action ids ---------------------------------------------------------------
ACTION_DISCARD = 0  # + kind
ACTION_RIICHI = 37  # + kind
ACTION_ANKAN = 74  # + base
ACTION_TSUMO = 108
ACTION_SKIP = 109
ACTION_CHI = 110  # + 3 * kind + pos
ACTION_PON = 221  # + kind
ACTION_RON = 258

# --- progression ids ----------------------------------------------------------
PROG_BEGIN = 0
PROG_RIICHI_PLACED = 1  # + seat
PROG_DISCARD = 5  # + ((seat * 37 + kind) * 2 + tsumogiri) * 2 + riichi
PROG_CHI = 597  # + 37 * seat + kind
PROG_PON = 745  # + 37 * seat + kind
PROG_ANKAN = 893  # + 34 * seat + base

# --- round summary ids --------------------------------------------------------
SUMMARY_TSUMO = 0
SUMMARY_RON = 1
SUMMARY_DRAW = 2
SUMMARY_WINNER = 3  # + seat
SUMMARY_LOSER = 7  # + seat
SUMMARY_TENPAI = 11  # + seat
SUMMARY_VALUE = 15  # + value class 0-8
SUMMARY_DEALER_KEPT = 24
SUMMARY_GAME_END = 25
SUMMARY_BUST = 26

# --- behaviour of the random process (tuned for realistic round statistics) -
_P_TSUMO = 0.065  # per own draw of a tenpai player
_P_RON = 0.05  # per discard of another player, for each tenpai player
_P_RIICHI = 0.6  # per draw while riichi is possible
_P_ANKAN = 0.6
_P_PON = 0.12
_P_CHI = 0.05
_P_TSUMOGIRI = 0.3
_TENPAI_TURN = (16.0, 6.0)  # mean and sd of the own-draw count at which a hand becomes tenpai
_ROOM_WEIGHTS = (12, 20, 34, 24, 10)
_ROOM_GRADES = ((0, 5), (3, 8), (6, 14), (9, 15), (12, 15))
_HAN_VALUES = (1, 2, 3, 4, 5, 6, 8, 11, 13)
_HAN_WEIGHTS = (45, 30, 14, 6, 3, 1.5, 0.6, 0.15, 0.05)


def tile_kind(tile: int) -> int:
    """Return the 37-kind id of tile id ``tile`` (0-135).

    Kinds: 1-9 man, 11-19 pin, 21-29 sou, 0/10/20 the red fives (copy 0 of
    each five), 30-36 honors.

    Examples
    --------
    >>> tile_kind(0), tile_kind(16), tile_kind(17), tile_kind(135)
    (1, 0, 5, 36)
    """
    base = tile // 4
    if base >= 27:
        return 30 + base - 27
    suit, number = divmod(base, 9)
    if number == 4 and tile % 4 == 0:
        return 10 * suit
    return 10 * suit + number + 1


_KIND = tuple(tile_kind(t) for t in range(_WALL_SIZE))
_BASE = tuple(t // 4 for t in range(_WALL_SIZE))
_HONOR_OR_TERMINAL = tuple(b >= 27 or b % 9 in (0, 8) for b in _BASE)


# --- records ------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Decision:
    """One decision point of one player: the state before it, the candidates and the choice.

    Attributes
    ----------
    seat : int
        The acting player's seat.
    sparse, numeric, progression, candidates : tuple of int
        kanachan's state features (unpadded) and the candidate action ids.
    action : int
        Index of the chosen candidate.

    Examples
    --------
    >>> d = Decision(0, (0, 5), (0, 0, 25000, 25000, 25000, 25000), (0,), (1, 2), 1)
    >>> d.candidates[d.action]
    2
    """

    seat: int
    sparse: tuple[int, ...]
    numeric: tuple[int, ...]
    progression: tuple[int, ...]
    candidates: tuple[int, ...]
    action: int


@dataclass(frozen=True, slots=True)
class SimulatedRound:
    """One round (hand) of a simulated game.

    Attributes
    ----------
    chang, ju, ben : int
        Prevailing wind (0 east, 1 south, 2 west), round number 0-3 (the
        dealer's seat) and honba.
    scores_start : tuple of int
        Scores when the round began; ``deposits_start`` sticks were on the table.
    outcome : str
        ``"tsumo"``, ``"ron"`` or ``"draw"`` (exhaustive draw).
    winner, loser : int or None
        The winner's seat, and the discarder's seat on a ron.
    han, fu : int or None
        The win's value (None on a draw).
    tenpai : tuple of int
        Seats tenpai at an exhaustive draw (empty after a win).
    riichi : tuple of int
        Seats whose riichi stick was placed in this round.
    deltas, scores_end : tuple of int
        ``scores_end - scores_start`` and the scores when the round ended; on
        a game's last round they include the left-over sticks given to the
        first-ranked player.
    deposits_end : int
        Sticks left on the table (0 after a win and after the game's last round).
    dealer_kept : bool
        Whether the dealer keeps the dealership.
    summary : tuple of int
        kanachan round-summary ids (see the module docstring).
    decisions : tuple of Decision
        Every decision of the round, in the order they happened.

    Examples
    --------
    >>> r = next(simulate_games(1, seed=3)).rounds[0]
    >>> (r.chang, r.ju, r.ben), sum(r.scores_end) + 1000 * r.deposits_end
    ((0, 0, 0), 100000)
    """

    chang: int
    ju: int
    ben: int
    deposits_start: int
    scores_start: tuple[int, int, int, int]
    outcome: str
    winner: int | None
    loser: int | None
    han: int | None
    fu: int | None
    tenpai: tuple[int, ...]
    riichi: tuple[int, ...]
    deltas: tuple[int, int, int, int]
    scores_end: tuple[int, int, int, int]
    deposits_end: int
    dealer_kept: bool
    summary: tuple[int, ...]
    decisions: tuple[Decision, ...]

    @property
    def results(self) -> tuple[int, ...]:
        """kanachan's 8 results: the deltas of seats 0-3, then their scores at the round's end."""
        return self.deltas + self.scores_end


@dataclass(frozen=True, slots=True)
class SimulatedGame:
    """One simulated game.

    Attributes
    ----------
    game_id : str
        32 lowercase hex digits, drawn from the seeded generator.
    room : int
        0 bronze .. 4 throne.
    game_length : int
        0 east-only, 1 half-length (as in :data:`rewardlab.sources.kanachan.schema.GAME_LENGTH`).
    grades : tuple of int
        Grade (0-15) of the player in each seat.
    rounds : tuple of SimulatedRound
        The rounds in play order.
    final_scores : tuple of int
        Scores at the end, left-over sticks included; they sum to 100000.
    final_ranks : tuple of int
        Rank (0 first) of each seat, ties broken by seat.
    bust : bool
        Whether the game ended because a score went below 0.

    Examples
    --------
    >>> g = next(simulate_games(1, seed=1))
    >>> sorted(g.final_ranks)
    [0, 1, 2, 3]
    """

    game_id: str
    room: int
    game_length: int
    grades: tuple[int, int, int, int]
    rounds: tuple[SimulatedRound, ...]
    final_scores: tuple[int, int, int, int]
    final_ranks: tuple[int, int, int, int]
    bust: bool

    @property
    def half_length(self) -> bool:
        """True for a half-length (east + south) game."""
        return self.game_length == 1


@dataclass(frozen=True)
class SampleSummary:
    """What :func:`write_sample` wrote.

    Examples
    --------
    >>> SampleSummary(games=1, lines=10, rounds=4, path=Path("x.tsv")).lines
    10
    """

    games: int
    lines: int
    rounds: int
    path: Path


# --- scoring helpers ---------------------------------------------------------------


def _ranks(scores) -> tuple[int, ...]:
    """kanachan's ranks of the four seats (:func:`rewardlab.domains.mahjong.rules.ranks_from_scores`)."""
    return tuple(ranks_from_scores(np.tile(np.asarray(scores), (4, 1)), np.arange(4)).tolist())


def _basic_points(han: int, fu: int) -> int:
    """Basic points of a win, with the mangan-and-above caps."""
    if han >= 13:
        return 8000
    if han >= 11:
        return 6000
    if han >= 8:
        return 4000
    if han >= 6:
        return 3000
    if han >= 5:
        return 2000
    return min(fu * 2 ** (2 + han), 2000)


def _value_class(han: int, fu: int) -> int:
    """0-3 for 1-4 han below mangan, 4 mangan .. 8 yakuman."""
    basic = _basic_points(han, fu)
    if basic < 2000:
        return han - 1
    return {2000: 4, 3000: 5, 4000: 6, 6000: 7, 8000: 8}[basic]


def _ceil100(points: int) -> int:
    return -(-points // 100) * 100


def _win_deltas(
    *, winner: int, loser: int | None, dealer: int, han: int, fu: int, ben: int, deposits: int
) -> list[int]:
    """Point transfers of a win (``loser=None`` for tsumo), sticks on the table included."""
    basic = _basic_points(han, fu)
    deltas = [0, 0, 0, 0]
    if loser is not None:
        pay = _ceil100(basic * (6 if winner == dealer else 4)) + 300 * ben
        deltas[loser] -= pay
        deltas[winner] += pay
    else:
        for seat in range(4):
            if seat == winner:
                continue
            factor = 2 if winner == dealer or seat == dealer else 1
            pay = _ceil100(basic * factor) + 100 * ben
            deltas[seat] -= pay
            deltas[winner] += pay
    deltas[winner] += RIICHI_STICK * deposits
    return deltas


def _tenpai_deltas(tenpai) -> list[int]:
    """Exhaustive-draw payments: 3000 points from the noten to the tenpai players."""
    tenpai = set(tenpai)
    if len(tenpai) in (0, 4):
        return [0, 0, 0, 0]
    gain = 3000 // len(tenpai)
    loss = 3000 // (4 - len(tenpai))
    return [gain if s in tenpai else -loss for s in range(4)]


def _next_round(chang: int, ju: int, ben: int, *, dealer_kept: bool, draw: bool) -> tuple[int, int, int]:
    """The (chang, ju, ben) following a round, before any end-of-game rule."""
    if dealer_kept:
        return chang, ju, ben + 1
    ben = ben + 1 if draw else 0
    if ju == 3:
        return chang + 1, 0, ben
    return chang, ju + 1, ben


def _game_over(
    *, chang: int, ju: int, game_length: int, scores, dealer_kept: bool
) -> tuple[bool, bool]:
    """``(over, bust)`` after round ``(chang, ju)`` left ``scores``."""
    if min(scores) < 0:
        return True, True
    last_chang = game_length  # 0: east-only ends after east 4, 1: half-length after south 4
    if chang < last_chang or (chang == last_chang and ju < 3):
        return False, False
    if chang == last_chang:  # all-last
        if dealer_kept:
            dealer_top = _ranks(scores)[ju] == 0
            return dealer_top and scores[ju] >= TARGET_SCORE, False
        return max(scores) >= TARGET_SCORE, False
    # extension wind: sudden death at 30000, and never past its 4th round
    if max(scores) >= TARGET_SCORE:
        return True, False
    return (ju == 3 and not dealer_kept), False


# --- the simulator ---------------------------------------------------------------


def _sample_han_fu(rng: random.Random, *, riichi: bool, is_open: bool, tsumo: bool) -> tuple[int, int]:
    han = rng.choices(_HAN_VALUES, _HAN_WEIGHTS)[0]
    if riichi:
        han += 1 + (rng.random() < 0.35)  # riichi, plus ippatsu / ura dora now and then
    elif tsumo and not is_open:
        han += 1  # menzen tsumo
    han = min(han, 13)
    closed_two = han >= 2 and not is_open
    if tsumo:
        weights = (20 if closed_two else 0, 5 if closed_two else 0, 45, 22, 6, 2, 1)
        fu = rng.choices((20, 25, 30, 40, 50, 60, 70), weights)[0]
    else:
        fu = rng.choices((25, 30, 40, 50, 60, 70), (5 if closed_two else 0, 45, 35, 10, 3, 2))[0]
    return han, fu


class _GameSim:
    """Mutable state of one game while it is played."""

    def __init__(self, rng: random.Random, *, room: int, game_length: int, grades):
        self.rng = rng
        self.game_length = game_length
        self.prefix = (
            schema.ROOM_OFFSET + room,
            schema.GAME_LENGTH_OFFSET + game_length,
            *(schema.GRADE_OFFSET + schema.NUM_GRADES * s + g for s, g in enumerate(grades)),
        )
        self.scores = [STARTING_SCORE] * 4
        self.deposits = 0
        self.chang = self.ju = self.ben = 0

    def _check_points(self) -> None:
        assert sum(self.scores) + RIICHI_STICK * self.deposits == TOTAL_POINTS, (self.scores, self.deposits)

    def play(self) -> tuple[list[SimulatedRound], bool]:
        rounds: list[SimulatedRound] = []
        while True:
            record_args, dealer_kept, draw = self._play_round()
            chang, ju, ben = self.chang, self.ju, self.ben
            over, bust = _game_over(
                chang=chang, ju=ju, game_length=self.game_length, scores=self.scores, dealer_kept=dealer_kept
            )
            if over and self.deposits:
                top = _ranks(self.scores).index(0)
                self.scores[top] += RIICHI_STICK * self.deposits
                self.deposits = 0
            self._check_points()
            summary = record_args.pop("summary")
            if dealer_kept:
                summary.append(SUMMARY_DEALER_KEPT)
            if over:
                summary.append(SUMMARY_BUST if bust else SUMMARY_GAME_END)
            start = record_args["scores_start"]
            rounds.append(
                SimulatedRound(
                    chang=chang,
                    ju=ju,
                    ben=ben,
                    deltas=tuple(e - s for e, s in zip(self.scores, start)),
                    scores_end=tuple(self.scores),
                    deposits_end=self.deposits,
                    dealer_kept=dealer_kept,
                    summary=tuple(summary),
                    **record_args,
                )
            )
            if over:
                return rounds, bust
            self.chang, self.ju, self.ben = _next_round(chang, ju, ben, dealer_kept=dealer_kept, draw=draw)
            assert self.chang < schema.NUM_CHANGS

    def _play_round(self):  # noqa: C901 - one loop reads best as one function
        rng = self.rng
        scores = self.scores
        dealer = self.ju
        scores_start = tuple(scores)
        deposits_start = self.deposits

        wall = list(range(_WALL_SIZE))
        rng.shuffle(wall)
        dead = wall[_LIVE_END:]
        hands: list[list[int]] = [[], [], [], []]
        for i in range(4):
            hands[(dealer + i) % 4] = wall[_HAND_SIZE * i : _HAND_SIZE * (i + 1)]
        pos = _DEALT
        kans = 0
        dora_ids = [schema.DORA_OFFSET + _KIND[dead[_INDICATOR_POSITIONS[0]]]]
        prog = [PROG_BEGIN]
        decisions: list[Decision] = []
        acted = [False] * 4
        riichi = [False] * 4
        is_open = [False] * 4
        tenpai = [False] * 4
        own_draws = [0] * 4
        mu, sd = _TENPAI_TURN
        tenpai_at = [max(2, round(rng.gauss(mu, sd))) for _ in range(4)]
        calls = 0
        placed: list[int] = []
        prefix = self.prefix
        situation = (schema.CHANG_OFFSET + self.chang, schema.JU_OFFSET + self.ju)

        def emit(seat: int, drawn: int | None, candidates: set[int], chosen: int) -> None:
            left = _LIVE_END - kans - pos
            sparse = [
                *prefix,
                schema.SEAT_OFFSET + seat,
                *situation,
                schema.DRAWS_OFFSET + schema.NUM_DRAWS - 1 - left,
                *dora_ids,
                *sorted(schema.HAND_OFFSET + t for t in hands[seat]),
            ]
            if drawn is not None:
                sparse.append(schema.DRAWN_OFFSET + _KIND[drawn])
            cands = sorted(candidates)
            decisions.append(
                Decision(
                    seat,
                    tuple(sparse),
                    (self.ben, self.deposits, *scores),
                    tuple(prog),
                    tuple(cands),
                    cands.index(chosen),
                )
            )
            acted[seat] = True

        def call_options(seat: int, tile: int, discarder: int) -> list[tuple[int, tuple[int, ...]]]:
            """(action id, bases taken from the hand) for each pon / chi open to ``seat``."""
            if riichi[seat] or calls >= _MAX_CALLS or _LIVE_END - kans - pos == 0:
                return []
            base, kind = _BASE[tile], _KIND[tile]
            counts = [0] * _NUM_BASES
            for t in hands[seat]:
                counts[_BASE[t]] += 1
            options = []
            if counts[base] >= 2:
                options.append((ACTION_PON + kind, (base, base)))
            if seat == (discarder + 1) % 4 and base < 27:
                number = base % 9
                for p, need in ((0, (1, 2)), (1, (-1, 1)), (2, (-2, -1))):
                    if all(0 <= number + d <= 8 and counts[base + d] for d in need):
                        options.append((ACTION_CHI + 3 * kind + p, tuple(base + d for d in need)))
            return options

        current = dealer
        need_draw = True
        drawn: int | None = None
        forbidden_base = -1  # kuikae: the base just called may not be discarded at once
        outcome = winner = loser = None

        while outcome is None:
            p = current
            if need_draw:
                if _LIVE_END - kans - pos == 0:
                    outcome = "draw"
                    break
                drawn = wall[pos]
                pos += 1
                own_draws[p] += 1
                forbidden_base = -1
            if not tenpai[p] and own_draws[p] >= tenpai_at[p]:
                tenpai[p] = True

            # -- the acting player's own decision(s): tsumo, kan, riichi, discard
            while True:
                left = _LIVE_END - kans - pos
                others_acted = all(acted[q] for q in range(4) if q != p)
                can_tsumo = drawn is not None and tenpai[p] and others_acted and rng.random() < _P_TSUMO
                kan_bases: list[int] = []
                if drawn is not None and not riichi[p] and kans < _MAX_KANS and left > 0:
                    counts = [0] * _NUM_BASES
                    for t in hands[p]:
                        counts[_BASE[t]] += 1
                    counts[_BASE[drawn]] += 1
                    kan_bases = [b for b, c in enumerate(counts) if c == 4]
                if riichi[p] and not can_tsumo:
                    tile, tsumogiri, declare = drawn, True, False  # automatic discard
                    break
                if riichi[p]:
                    emit(p, drawn, {ACTION_DISCARD + _KIND[drawn], ACTION_TSUMO}, ACTION_TSUMO)
                    outcome, winner = "tsumo", p
                    break
                pool = hands[p] + ([drawn] if drawn is not None else [])
                allowed = [t for t in pool if _BASE[t] != forbidden_base] or pool
                candidates = {ACTION_DISCARD + _KIND[t] for t in allowed}
                if can_tsumo:
                    candidates.add(ACTION_TSUMO)
                candidates.update(ACTION_ANKAN + b for b in kan_bases)
                can_riichi = (
                    drawn is not None
                    and tenpai[p]
                    and not is_open[p]
                    and scores[p] >= RIICHI_STICK
                    and left >= 4
                )
                if can_tsumo:
                    emit(p, drawn, candidates, ACTION_TSUMO)
                    outcome, winner = "tsumo", p
                    break
                if kan_bases and rng.random() < _P_ANKAN:
                    base = rng.choice(kan_bases)
                    if can_riichi:
                        candidates.add(ACTION_RIICHI + _KIND[rng.choice(allowed)])
                    emit(p, drawn, candidates, ACTION_ANKAN + base)
                    hands[p] = [t for t in pool if _BASE[t] != base]
                    kans += 1
                    indicator = dead[_INDICATOR_POSITIONS[kans]]
                    dora_ids.append(schema.DORA_OFFSET + schema.NUM_TILE_KINDS * kans + _KIND[indicator])
                    prog.append(PROG_ANKAN + _NUM_BASES * p + base)
                    drawn = dead[kans - 1]  # replacement tile
                    continue
                weights = [2 if _HONOR_OR_TERMINAL[t] else 1 for t in allowed]
                if drawn is not None and drawn in allowed and rng.random() < _P_TSUMOGIRI:
                    tile = drawn
                else:
                    tile = rng.choices(allowed, weights)[0]
                tsumogiri = tile == drawn
                declare = can_riichi and rng.random() < _P_RIICHI
                if can_riichi:
                    kinds = sorted({_KIND[t] for t in allowed} - {_KIND[tile]})
                    extra = rng.sample(kinds, min(len(kinds), rng.randint(0, 2)))
                    if declare or rng.random() < 0.5:
                        extra.append(_KIND[tile])
                    candidates.update(ACTION_RIICHI + k for k in extra)
                    if not extra:
                        candidates.add(ACTION_RIICHI + _KIND[tile] if not kinds else ACTION_RIICHI + kinds[0])
                chosen = (ACTION_RIICHI if declare else ACTION_DISCARD) + _KIND[tile]
                emit(p, drawn, candidates, chosen)
                break
            if outcome is not None:
                break

            # -- the discard
            if tile != drawn:
                hands[p].remove(tile)
                if drawn is not None:
                    hands[p].append(drawn)
            drawn = None
            kind = _KIND[tile]
            prog.append(PROG_DISCARD + ((p * schema.NUM_TILE_KINDS + kind) * 2 + tsumogiri) * 2 + declare)

            # -- ron (head bump: the first tenpai player after the discarder)
            order = [(p + i) % 4 for i in (1, 2, 3)]
            if all(acted):
                for q in order:
                    if tenpai[q] and rng.random() < _P_RON:
                        options = {ACTION_SKIP, ACTION_RON, *(a for a, _ in call_options(q, tile, p))}
                        emit(q, None, options, ACTION_RON)
                        outcome, winner, loser = "ron", q, p
                        break
                if outcome is not None:
                    break
            if declare:
                riichi[p] = True
                scores[p] -= RIICHI_STICK
                self.deposits += 1
                placed.append(p)
                prog.append(PROG_RIICHI_PLACED + p)

            # -- call chances: pon before chi, then turn order
            chances = [(q, call_options(q, tile, p)) for q in order]
            chances = [(q, o) for q, o in chances if o]
            chances.sort(key=lambda c: (not any(a >= ACTION_PON for a, _ in c[1]), order.index(c[0])))
            caller = None
            for q, options in chances:
                if caller is None:
                    pons = [o for o in options if o[0] >= ACTION_PON]
                    chis = [o for o in options if o[0] < ACTION_PON]
                    if pons and rng.random() < _P_PON:
                        caller, call = q, pons[0]
                    elif chis and rng.random() < _P_CHI:
                        caller, call = q, rng.choice(chis)
                chosen = call[0] if caller == q else ACTION_SKIP
                emit(q, None, {ACTION_SKIP, *(a for a, _ in options)}, chosen)
            if caller is not None:
                action, take = call
                for b in take:
                    hands[caller].remove(next(t for t in hands[caller] if _BASE[t] == b))
                if action >= ACTION_PON:
                    prog.append(PROG_PON + schema.NUM_TILE_KINDS * caller + kind)
                else:
                    prog.append(PROG_CHI + schema.NUM_TILE_KINDS * caller + kind)
                calls += 1
                is_open[caller] = True
                tenpai_at[caller] = max(1, tenpai_at[caller] - 2)
                forbidden_base = _BASE[tile]
                current, need_draw = caller, False
            else:
                current, need_draw = (p + 1) % 4, True

        # -- settle the round
        assert all(acted), "every player decides at least once in every round"
        assert len(prog) <= schema.MAX_LENGTH_OF_PROGRESSION_FEATURES
        ben = self.ben
        han = fu = None
        tenpai_seats: tuple[int, ...] = ()
        if outcome == "draw":
            tenpai_seats = tuple(s for s in range(4) if tenpai[s])
            deltas = _tenpai_deltas(tenpai_seats)
            dealer_kept = dealer in tenpai_seats
            summary = [SUMMARY_DRAW, *(SUMMARY_TENPAI + s for s in tenpai_seats)]
        else:
            han, fu = _sample_han_fu(
                rng, riichi=riichi[winner], is_open=is_open[winner], tsumo=outcome == "tsumo"
            )
            deltas = _win_deltas(
                winner=winner, loser=loser, dealer=dealer, han=han, fu=fu, ben=ben, deposits=self.deposits
            )
            self.deposits = 0
            dealer_kept = winner == dealer
            if outcome == "tsumo":
                summary = [SUMMARY_TSUMO, SUMMARY_WINNER + winner]
            else:
                summary = [SUMMARY_RON, SUMMARY_WINNER + winner, SUMMARY_LOSER + loser]
            summary.append(SUMMARY_VALUE + _value_class(han, fu))
        for s in range(4):
            scores[s] += deltas[s]
        self._check_points()
        record = dict(
            deposits_start=deposits_start,
            scores_start=scores_start,
            outcome=outcome,
            winner=winner,
            loser=loser,
            han=han,
            fu=fu,
            tenpai=tenpai_seats,
            riichi=tuple(placed),
            decisions=tuple(decisions),
            summary=summary,
        )
        return record, dealer_kept, outcome == "draw"


# --- public API -----------------------------------------------------------------


def simulate_games(n_games: int, *, seed: int, half_length_fraction: float = 0.6) -> Iterator[SimulatedGame]:
    """Simulate ``n_games`` games from ``seed``, lazily, in order.

    Parameters
    ----------
    n_games : int
        Number of games, >= 0.
    seed : int
        Seed (>= 0) of the one ``random.Random`` stream all games are drawn
        from; the global random state is never touched.
    half_length_fraction : float, default 0.6
        Probability that a game is half-length (east + south) rather than
        east-only, in [0, 1].

    Returns
    -------
    iterator of SimulatedGame
        Arguments are checked when the function is called, games are
        simulated as the iterator is consumed.

    Examples
    --------
    >>> games = list(simulate_games(3, seed=42))
    >>> [sum(g.final_scores) for g in games]
    [100000, 100000, 100000]
    >>> games[0] == next(simulate_games(1, seed=42))
    True
    """
    n_games = check_int("n_games", n_games, low=0)
    seed = check_int("seed", seed, low=0)
    if isinstance(half_length_fraction, bool) or not isinstance(half_length_fraction, (int, float)):
        raise ParameterError("half_length_fraction", "should be a number in [0, 1]", half_length_fraction)
    if not 0.0 <= half_length_fraction <= 1.0:  # also rejects NaN
        raise ParameterError("half_length_fraction", "should be in [0, 1]", half_length_fraction)
    return _games(n_games, seed, float(half_length_fraction))


def _games(n_games: int, seed: int, half_length_fraction: float) -> Iterator[SimulatedGame]:
    rng = random.Random(seed)
    for _ in range(n_games):
        game_id = f"{rng.getrandbits(128):032x}"
        room = rng.choices(range(schema.NUM_ROOMS), _ROOM_WEIGHTS)[0]
        game_length = int(rng.random() < half_length_fraction)
        lo, hi = _ROOM_GRADES[room]
        grades = tuple(rng.randint(lo, hi) for _ in range(4))
        sim = _GameSim(rng, room=room, game_length=game_length, grades=grades)
        rounds, bust = sim.play()
        final = tuple(sim.scores)
        assert sum(final) == TOTAL_POINTS
        yield SimulatedGame(
            game_id=game_id,
            room=room,
            game_length=game_length,
            grades=grades,
            rounds=tuple(rounds),
            final_scores=final,
            final_ranks=_ranks(final),
            bust=bust,
        )


def _ints(values) -> str:
    return ",".join(map(str, values))


def iter_kanachan_lines(games: Iterable[SimulatedGame]) -> Iterator[str]:
    """Yield kanachan offline-RL annotation lines (no trailing newline) for ``games``.

    Lines come game by game (in the given order), then seat 0-3, then in the
    order of the player's decisions.  A decision followed by another one of
    the same player in the same round has 10 columns (its next state is that
    decision's state); the player's last decision of a round has 12 columns
    (next state = their first decision of the next round, round summary,
    results), and of the game 8 columns (round summary, results).

    Parameters
    ----------
    games : iterable of SimulatedGame

    Examples
    --------
    >>> lines = list(iter_kanachan_lines(simulate_games(1, seed=5)))
    >>> sorted({len(line.split("\\t")) for line in lines})
    [8, 10, 12]
    """
    for game in games:
        if not isinstance(game, SimulatedGame):
            raise ParameterError("games", "should contain only SimulatedGame objects", game)
        gid = game.game_id
        last_round = len(game.rounds) - 1
        for seat in range(schema.NUM_SEATS):
            steps = [
                (r, d) for r, rnd in enumerate(game.rounds) for d in rnd.decisions if d.seat == seat
            ]
            states = [
                f"{_ints(d.sparse)}\t{_ints(d.numeric)}\t{_ints(d.progression)}\t{_ints(d.candidates)}"
                for _, d in steps
            ]
            for i, (r, d) in enumerate(steps):
                head = f"{gid}\t{states[i]}\t{d.action}"
                last_in_round = i + 1 == len(steps) or steps[i + 1][0] != r
                if not last_in_round:
                    yield f"{head}\t{states[i + 1]}"
                    continue
                rnd = game.rounds[r]
                tail = f"{_ints(rnd.summary)}\t{_ints(rnd.results)}"
                if r == last_round:
                    yield f"{head}\t{tail}"
                else:
                    yield f"{head}\t{states[i + 1]}\t{tail}"


def write_sample(
    path: str | os.PathLike,
    *,
    games: int,
    seed: int,
    overwrite: bool = False,
    progress: bool | None = None,
) -> SampleSummary:
    """Simulate ``games`` games and write them to ``path`` as a kanachan annotation file.

    The file is written atomically (gzip when ``path`` ends with ``.gz``, bz2
    with ``.bz2``); the same ``(games, seed)`` always gives the same bytes.

    Parameters
    ----------
    path : str or path-like
        Destination file.
    games : int
        Number of games, >= 1.
    seed : int
        Seed, >= 0 (see :func:`simulate_games`).
    overwrite : bool, default False
        Replace an existing file; otherwise
        :class:`~rewardlab.core.errors.OutputExistsError` is raised.
    progress : bool or None, default None
        Show a progress bar over games; None shows one on an interactive
        terminal or in Jupyter.

    Returns
    -------
    SampleSummary

    Examples
    --------
    >>> import tempfile, pathlib
    >>> out = pathlib.Path(tempfile.mkdtemp()) / "sample.tsv.gz"
    >>> summary = write_sample(out, games=2, seed=1, progress=False)
    >>> summary.games, summary.lines > 0, summary.path == out
    (2, True, True)
    """
    if not isinstance(path, (str, os.PathLike)):
        raise ParameterError("path", "should be a str or path-like", path)
    games = check_int("games", games, low=1, high=MAX_SAMPLE_GAMES,
                      rule=f"should be an integer from 1 to {MAX_SAMPLE_GAMES:,} (a game is about 260 KB of text)")
    seed = check_int("seed", seed, low=0)
    if not isinstance(overwrite, bool):
        raise ParameterError("overwrite", "should be True or False", overwrite)
    if progress is not None and not isinstance(progress, bool):
        raise ParameterError("progress", "should be True, False or None", progress)
    path = Path(path)
    n_lines = n_rounds = 0
    with atomic_open(path, "w", overwrite=overwrite) as out:
        bar = None
        if progress_enabled(progress):
            from tqdm.auto import tqdm

            bar = tqdm(total=games, unit="game", desc=f"simulating {path.name}")
        try:
            for game in simulate_games(games, seed=seed):
                lines = list(iter_kanachan_lines([game]))
                out.write("\n".join(lines) + "\n")
                n_lines += len(lines)
                n_rounds += len(game.rounds)
                if bar is not None:
                    bar.update(1)
        finally:
            if bar is not None:
                bar.close()
    return SampleSummary(games=games, lines=n_lines, rounds=n_rounds, path=path)
