"""The layout of a stable-retro recording: its columns, each game's variables, and the frame's spec.

A recording is a step table (Parquet or CSV) in the N+1 layout of
:mod:`rewardlab.sources.steps.finals`.  Per episode, rows ``t = 0..N-1``
hold the state *before* step ``t`` (row 0: the values at reset) with that
step's ``action``, recorded ``reward``, ``terminated`` and ``truncated``;
row ``t = N`` has ``final`` true and holds the state after the last step
(``action`` and ``reward`` null, flags false or null).

=====================  =====================================================
column                 meaning
=====================  =====================================================
``episode_id``         the episode (contiguous rows)
``t``                  the step, 0..N (N: the final row)
``final``              true on the final row only
``game``               the stable-retro id, e.g. ``SonicTheHedgehog-Genesis-v0``
``state``              the ``.state`` it started from, e.g. ``GreenHillZone.Act1``
``frame``              emulator frames since reset before the row's state (0 on
                       row 0; the contest's sticky frame skip adds 4 per step,
                       fewer on a step cut short by done)
``action``             the step's action (any type; null on the final row)
``reward``             the recorded reward of the step (null on the final row)
``terminated``,        the step's flags (the time limit truncates)
``truncated``
one per variable       each ``data.json`` variable of the game under its own
                       name (``x``, ``y``, ``lives``, ``zone``, ``act``,
                       ``screen_x``, ``rings``, ``score``, ``level_end_bonus``,
                       ...); null on the rows of a game that lacks it
=====================  =====================================================

The loaded frame (spec ``"retro"``, contract ``"steps"``) keeps the steps
source's conventions: ``reward`` becomes ``reward_recorded`` with
``done_recorded`` beside it, the final rows are removed and their values go
to final columns (``final_<variable>``, ``final_frame``: the value after
the episode's last step, on its last row, null elsewhere).  ``frame`` and
every variable are *states* (the steps contract hands ``("next", "x")`` and
so on), Int64.  A variable a game lacks (``game_mode`` outside S2,
``special_stage`` outside S3K) reads 0 on that game's rows in the frame:
the value under which S2's bonus-stage and S3K's special-stage ends never
fire; ``game`` says which game a row is.  The source adds episode constants
as columns, so a plug-in needs no hidden state: ``game_code`` (the game's
index in :data:`~rewardlab.sources.retro.levels.SONIC_GAMES`, -1 for
another game), ``start_x``, ``start_zone``, ``start_act`` (the values on
the episode's row 0, which fix the level's end in ``script.lua``), and the
running ``act_shift`` (S3K's accumulated act-change shift) and ``reach_x``
(``max(x - act_shift)`` so far) of :mod:`rewardlab.sources.retro.running`.

Examples
--------
>>> script_variables("SonicAndKnuckles3-Genesis-v0")
('x', 'zone', 'act', 'lives', 'special_stage', 'screen_x')
>>> game_variables("SonicTheHedgehog-Genesis-v0")[:3]
('act', 'level_end_bonus', 'lives')
"""

from __future__ import annotations

import json

from rewardlab.core.spec import FrameSpec, StateColumn
from rewardlab.sources.retro.levels import SONIC_GAMES, game_folder

__all__ = ["EPISODE", "STEP", "FINAL", "GAME", "STATE", "FRAME", "ACTION", "REWARD", "TERMINATED", "TRUNCATED",
           "LAYOUT_COLUMNS", "REQUIRED_COLUMNS", "SCRIPT_VARIABLES", "CONSTANT_COLUMNS", "script_variables",
           "game_variables", "game_code", "RETRO_SPEC", "retro_spec", "final_name"]

EPISODE, STEP, FINAL, GAME, STATE, FRAME = "episode_id", "t", "final", "game", "state", "frame"
ACTION, REWARD, TERMINATED, TRUNCATED = "action", "reward", "terminated", "truncated"

#: The layout's own columns (every other column is a variable).
LAYOUT_COLUMNS = (EPISODE, STEP, FINAL, GAME, STATE, FRAME, ACTION, REWARD, TERMINATED, TRUNCATED)
#: The columns every recording has (``action`` may be absent).
REQUIRED_COLUMNS = (EPISODE, STEP, FINAL, GAME, STATE, FRAME, REWARD, TERMINATED, TRUNCATED)

#: The variables each contest script reads (``contest_done`` / ``contest_reward`` / ``calc_progress``).
SCRIPT_VARIABLES = {
    "SonicTheHedgehog-Genesis-v0": ("x", "zone", "act", "lives"),
    "SonicTheHedgehog2-Genesis-v0": ("x", "zone", "act", "lives", "game_mode"),
    "SonicAndKnuckles3-Genesis-v0": ("x", "zone", "act", "lives", "special_stage", "screen_x"),
}

#: The columns the source adds: the game's code, the values of the episode's row 0, and the running
#: ``act_shift`` / ``reach_x`` (:mod:`rewardlab.sources.retro.running`).
CONSTANT_COLUMNS = ("game_code", "start_x", "start_zone", "start_act", "act_shift", "reach_x")


def script_variables(game: str) -> tuple[str, ...]:
    """The variables ``game``'s contest script reads (empty for a game without a contest script).

    Examples
    --------
    >>> script_variables("Airstriker-Genesis-v0")
    ()
    """
    return SCRIPT_VARIABLES.get(game, ())


_VARIABLES: dict[str, tuple[str, ...] | None] = {}


def game_variables(game: str) -> tuple[str, ...] | None:
    """The ``data.json`` variables of the installed ``game`` (sorted as in the file), None when it is not
    installed.

    Examples
    --------
    >>> game_variables("Airstriker-Genesis-v0")
    ('gameover', 'lives', 'score')
    """
    if game not in _VARIABLES:
        try:
            folder = game_folder(game)
            _VARIABLES[game] = tuple(json.loads((folder / "data.json").read_text())["info"])
        except Exception:  # not installed, not a game id, an unreadable data.json: nothing known
            _VARIABLES[game] = None
    return _VARIABLES[game]


def game_code(game: str) -> int:
    """``game``'s index in :data:`~rewardlab.sources.retro.levels.SONIC_GAMES`, -1 for another game.

    Examples
    --------
    >>> game_code("SonicTheHedgehog2-Genesis-v0"), game_code("Airstriker-Genesis-v0")
    (1, -1)
    """
    return SONIC_GAMES.index(game) if game in SONIC_GAMES else -1


def final_name(column: str) -> str:
    """The frame's final column of a state (``final_<column>``)."""
    return "final_" + column


#: The spec registered for the format (a frame carries its own, with its variables as states).
RETRO_SPEC = FrameSpec(name="retro", contract="steps",
                       description="a stable-retro recording: one row per step, N+1 layout (Parquet, CSV)")


def retro_spec(variables, extras) -> FrameSpec:
    """The spec of a loaded recording whose variables are ``variables`` and other columns ``extras``.

    Examples
    --------
    >>> spec = retro_spec(("x", "lives"), ("action", "reward_recorded"))
    >>> [(s.name, s.final) for s in spec.states]
    [('frame', 'final_frame'), ('x', 'final_x'), ('lives', 'final_lives')]
    """
    states = tuple(StateColumn(name, None, "int64", 0, final=final_name(name)) for name in (FRAME, *variables))
    return FrameSpec(name="retro", episode=(EPISODE,), step=STEP, terminated=TERMINATED, truncated=TRUNCATED,
                     states=states, columns=tuple(extras), contract="steps",
                     description="a stable-retro recording (rewardlab.sources.retro)")
