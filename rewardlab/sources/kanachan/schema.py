"""Column names, dtypes and kanachan's constants: the vocabulary under every module.

The common frame
----------------
Every source produces a Polars frame with **one row per transition**, rows in
episode order (all of one player's steps in one game, in the order they
happened, then the next episode).  Each state is stored once: the next-state
features of a row are the features of the following row (the row after a
non-final step always belongs to the same episode), the way RLlib's trajectory
view shifts ``obs`` by one instead of storing ``new_obs``.

========================  =====================  ===============================================
column                    dtype                  meaning
========================  =====================  ===============================================
``game_id``               Categorical            the game's uuid (32 hex digits)
``game``                  UInt32                 game index in load order (0, 1, ...)
``seat``                  UInt8                  the acting player's seat, 0-3
``step``                  UInt16                 step index within the player's game
``round``                 UInt8                  round index within the game (0, 1, ...)
``chang``                 UInt8                  prevailing wind: 0 east, 1 south, 2 west
``ju``                    UInt8                  round number within the wind, 0-3
``ben``                   UInt8                  honba (repeat counter)
``room``                  UInt8                  0 bronze .. 4 throne
``game_length``           UInt8                  0 east-only, 1 half-length
``grades``                Array(UInt8, 4)        grade (0-15) of the player in each seat
``sparse``                Array(Int16, 29)       sparse features, padded with 510
``numeric``               Array(Int32, 6)        ben, deposits, scores of seats 0-3
``progression``           Array(Int16, 109)      progression features, padded with 2165
``candidates``            Array(Int16, 32)       action candidates, padded with 546
``action``                UInt8                  index into ``candidates``
``round_summary``         Array(Int8, 7)         end-of-round summary, padded with 29
``results``               Array(Int32, 8)        round deltas and scores; zeros off round ends
``end_of_round``          Boolean                last action of the player in a round (not game)
``end_of_game``           Boolean                last action of the player in the game
``source_file``           Categorical            the file the row came from
``source_line``           UInt32                 its 1-based line number there
========================  =====================  ===============================================

Reward columns added later are named ``reward_<name>`` (Float64) and
``done_<name>`` (Boolean; see :mod:`rewardlab.core.columns`).

Examples
--------
>>> from rewardlab.sources.kanachan import schema
>>> schema.MAX_NUM_ACTIVE_SPARSE_FEATURES
29
>>> schema.KANACHAN_SPEC.episode
('game_id', 'seat')
"""

from __future__ import annotations


import polars as pl

from rewardlab.core.spec import FrameSpec, StateColumn

# --- kanachan/constants.py ---------------------------------------------------
NUM_TYPES_OF_SPARSE_FEATURES = 510
MAX_NUM_ACTIVE_SPARSE_FEATURES = 29
NUM_NUMERIC_FEATURES = 6
NUM_TYPES_OF_PROGRESSION_FEATURES = 2165
MAX_LENGTH_OF_PROGRESSION_FEATURES = 109
NUM_TYPES_OF_ACTIONS = 546
MAX_NUM_ACTION_CANDIDATES = 32
NUM_TYPES_OF_ROUND_SUMMARY = 29
MAX_NUM_ROUND_SUMMARY = 7
RL_NUM_RESULTS = 8
NUM_SEATS = 4

# --- sparse feature layout (offsets into the 510 ids) ----------------------
ROOM_OFFSET = 0  # 0-4
NUM_ROOMS = 5
GAME_LENGTH_OFFSET = 5  # 5 east-only, 6 half-length
GRADE_OFFSET = 7  # 7 + 16 * seat + grade
NUM_GRADES = 16
SEAT_OFFSET = 71  # 71 + seat; the wiki examples read sparse[:, 6] - 71
SEAT_POSITION = 6  # position of the seat id in a well-formed sparse vector
CHANG_OFFSET = 75  # 75-77
NUM_CHANGS = 3
JU_OFFSET = 78  # 78-81
NUM_JUS = 4
DRAWS_OFFSET = 82  # 82 + n, n = 0..69 tiles drawn so far
NUM_DRAWS = 70
DORA_OFFSET = 152  # 37 ids per indicator slot, 5 slots
NUM_DORA_SLOTS = 5
NUM_TILE_KINDS = 37
HAND_OFFSET = 337  # one id per tile of the 136
NUM_TILES = 136
DRAWN_OFFSET = 473  # 37 ids

# numeric features
NUMERIC_BEN = 0
NUMERIC_DEPOSITS = 1
NUMERIC_SCORES = slice(2, 6)
# results
RESULTS_DELTAS = slice(0, 4)
RESULTS_SCORES = slice(4, 8)

# --- column names -------------------------------------------------------------
GAME_ID = "game_id"
GAME = "game"
SEAT = "seat"
STEP = "step"
ROUND = "round"
CHANG = "chang"
JU = "ju"
BEN = "ben"
ROOM = "room"
GAME_LENGTH = "game_length"
GRADES = "grades"
SPARSE = "sparse"
NUMERIC = "numeric"
PROGRESSION = "progression"
CANDIDATES = "candidates"
ACTION = "action"
ROUND_SUMMARY = "round_summary"
RESULTS = "results"
END_OF_ROUND = "end_of_round"
END_OF_GAME = "end_of_game"
SOURCE_FILE = "source_file"
SOURCE_LINE = "source_line"

#: The state columns, with their width and padding value; the next state of a
#: row is the following row's state (padding at the end of a game).
STATE_FEATURES: dict[str, tuple[int, int]] = {
    SPARSE: (MAX_NUM_ACTIVE_SPARSE_FEATURES, NUM_TYPES_OF_SPARSE_FEATURES),
    NUMERIC: (NUM_NUMERIC_FEATURES, 0),
    PROGRESSION: (MAX_LENGTH_OF_PROGRESSION_FEATURES, NUM_TYPES_OF_PROGRESSION_FEATURES),
    CANDIDATES: (MAX_NUM_ACTION_CANDIDATES, NUM_TYPES_OF_ACTIONS),
}

_I32 = (-(2**31), 2**31)
#: The integer lists of an annotation line, in file order, and what each value
#: may be: (most values, lowest value, highest value + 1, padding, exact count
#: or 0).  The text loader checks these and pads to the most values.
LIST_LIMITS: dict[str, tuple[int, int, int, int, int]] = {
    SPARSE: (MAX_NUM_ACTIVE_SPARSE_FEATURES, 0, NUM_TYPES_OF_SPARSE_FEATURES, NUM_TYPES_OF_SPARSE_FEATURES, 0),
    NUMERIC: (NUM_NUMERIC_FEATURES, *_I32, 0, NUM_NUMERIC_FEATURES),
    PROGRESSION: (MAX_LENGTH_OF_PROGRESSION_FEATURES, 0, NUM_TYPES_OF_PROGRESSION_FEATURES,
                  NUM_TYPES_OF_PROGRESSION_FEATURES, 0),
    CANDIDATES: (MAX_NUM_ACTION_CANDIDATES, 0, NUM_TYPES_OF_ACTIONS, NUM_TYPES_OF_ACTIONS, 0),
    ROUND_SUMMARY: (MAX_NUM_ROUND_SUMMARY, 0, NUM_TYPES_OF_ROUND_SUMMARY, NUM_TYPES_OF_ROUND_SUMMARY, 0),
    RESULTS: (RL_NUM_RESULTS, *_I32, 0, RL_NUM_RESULTS),
}

#: Schema of the common frame for kanachan data, in column order.
FRAME_SCHEMA: dict[str, pl.DataType] = {
    GAME_ID: pl.Categorical(),
    GAME: pl.UInt32(),
    SEAT: pl.UInt8(),
    STEP: pl.UInt16(),
    ROUND: pl.UInt8(),
    CHANG: pl.UInt8(),
    JU: pl.UInt8(),
    BEN: pl.UInt8(),
    ROOM: pl.UInt8(),
    GAME_LENGTH: pl.UInt8(),
    GRADES: pl.Array(pl.UInt8, NUM_SEATS),
    SPARSE: pl.Array(pl.Int16, MAX_NUM_ACTIVE_SPARSE_FEATURES),
    NUMERIC: pl.Array(pl.Int32, NUM_NUMERIC_FEATURES),
    PROGRESSION: pl.Array(pl.Int16, MAX_LENGTH_OF_PROGRESSION_FEATURES),
    CANDIDATES: pl.Array(pl.Int16, MAX_NUM_ACTION_CANDIDATES),
    ACTION: pl.UInt8(),
    ROUND_SUMMARY: pl.Array(pl.Int8, MAX_NUM_ROUND_SUMMARY),
    RESULTS: pl.Array(pl.Int32, RL_NUM_RESULTS),
    END_OF_ROUND: pl.Boolean(),
    END_OF_GAME: pl.Boolean(),
    SOURCE_FILE: pl.Categorical(),
    SOURCE_LINE: pl.UInt32(),
}

#: Keys identifying a transition in exported reward tables.
KEY_COLUMNS = (GAME_ID, SEAT, STEP)
#: Columns a rewards table (``rewardlab apply``) carries besides the keys and the
#: reward/done columns, so every statistics scope and the by-rank analysis work on it.
REWARDS_TABLE_CONTEXT = (GAME, END_OF_ROUND, END_OF_GAME, RESULTS)

#: How kanachan builds the TensorDict a plug-in receives:
#:
#: ``offline``
#:     its offline data loader and episode replay buffer, from annotation
#:     files: ``end_of_round`` is False on a game's last step, ``round_summary``
#:     and ``results`` as the file gives them.
#: ``simulation``
#:     its self-play simulator (``kanachan/training/core/rl/simulation.py``):
#:     ``end_of_round`` is True on every round's last step *including* the
#:     game's last, ``round_summary`` is all padding, ``results`` as in the
#:     files (the round's deltas and scores at a round's end, zeros elsewhere).
CONVENTIONS = ("offline", "simulation")

#: The frame spec of kanachan data: a player's game is an episode, ``end_of_game``
#: its terminal flag, ``end_of_round`` a sub-episode boundary, four state columns.
KANACHAN_SPEC = FrameSpec(
    name="kanachan",
    episode=(GAME_ID, SEAT),
    step=STEP,
    agent=SEAT,
    terminated=END_OF_GAME,
    boundaries=(END_OF_ROUND,),
    states=(
        StateColumn(SPARSE, MAX_NUM_ACTIVE_SPARSE_FEATURES, "int16", NUM_TYPES_OF_SPARSE_FEATURES),
        StateColumn(NUMERIC, NUM_NUMERIC_FEATURES, "int32", 0),
        StateColumn(PROGRESSION, MAX_LENGTH_OF_PROGRESSION_FEATURES, "int16",
                    NUM_TYPES_OF_PROGRESSION_FEATURES),
        StateColumn(CANDIDATES, MAX_NUM_ACTION_CANDIDATES, "int16", NUM_TYPES_OF_ACTIONS),
    ),
    columns=(GAME, ROUND, CHANG, JU, BEN, ROOM, GAME_LENGTH, GRADES, ACTION, ROUND_SUMMARY, RESULTS,
             SOURCE_FILE, SOURCE_LINE),
    contract="kanachan",
    description="kanachan annotation files: one row per action of a player in a game",
)
