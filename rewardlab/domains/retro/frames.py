"""Retro recordings -> the step frame the contest family and its exported plug-in read.

A recording in the retro layout (:mod:`rewardlab.sources.retro.recorder`:
the N+1 layout, rows ``t = 0..N-1`` holding the state before step ``t`` and a
final row ``t = N``) becomes a step frame (one row per step, the state after
an episode's last step in ``final_<variable>`` columns) whose spec hands the
steps contract's plug-in everything the contest reward needs, row by row, in
any batch mode:

* states (the plug-in gets ``x`` and ``("next", "x")``, ...): ``x``,
  ``lives``, ``frame``, ``zone``, ``act``, ``screen_x``, ``game_mode``,
  ``special_stage`` (Int64; ``game_mode`` 0 for games without it, i.e. not
  Sonic 2, and ``special_stage`` 0 for games other than S3K);
* episode columns (extras at the root, :data:`EPISODE_COLUMNS`): ``game_code``
  (the game's index in :data:`~rewardlab.domains.retro.contest.SONIC_GAMES`),
  ``start_x``, ``start_zone``, ``start_act`` (the episode's reset state),
  ``act_shift`` (the S3K act-change shift accumulated up to this row) and
  ``reach_x`` (the largest ``x - act_shift`` so far): constants and running
  values a plug-in cannot compute from one batch of shuffled rows, so they
  travel as columns (:func:`~rewardlab.domains.retro.contest.episode_columns`).

:func:`contest_columns` adds the episode columns to a recording;
:func:`steps_frame` makes the step frame; :func:`contest_steps` reads a step
frame back into :class:`~rewardlab.domains.retro.contest.ContestSteps` the
way the steps contract hands it to a plug-in (the same next states).

Examples
--------
>>> import polars as pl
>>> rec = pl.DataFrame({"episode_id": [0, 0, 0], "t": [0, 1, 2], "final": [False, False, True],
...                     "game": ["SonicTheHedgehog-Genesis-v0"] * 3, "frame": [0, 4, 8], "x": [80, 90, 85],
...                     "lives": [3, 3, 3], "zone": [0, 0, 0], "act": [0, 0, 0], "screen_x": [0, 0, 0],
...                     "reward": [1.0, 2.0, None], "terminated": [False, False, None],
...                     "truncated": [False, True, None]})
>>> frame = steps_frame(rec)
>>> frame.select("t", "x", "final_x", "start_x", "reach_x").rows()
[(0, 80, None, 80, 80), (1, 90, 85, 80, 90)]
"""

from __future__ import annotations

import numpy as np
import polars as pl

from rewardlab.contracts.steps.arrays import StepsArrays
from rewardlab.core.errors import FrameError
from rewardlab.core.spec import FrameSpec, StateColumn, attach, attached
from rewardlab.domains.retro.contest import (S2, S3K, SONIC_GAMES, ContestSteps, check_end_x, episode_columns,
                                             level_code, level_end_x)

__all__ = ["STATE_VARIABLES", "EPISODE_COLUMNS", "GAME_ONLY", "contest_spec", "contest_columns", "steps_frame",
           "contest_steps"]

#: The state variables the contest reward reads (every one Int64 in the step frame).
STATE_VARIABLES = ("x", "lives", "frame", "zone", "act", "screen_x", "game_mode", "special_stage")
#: The episode columns (extras) the exported plug-in reads at the root.
EPISODE_COLUMNS = ("game_code", "start_x", "start_zone", "start_act", "act_shift", "reach_x")
#: The variables only one game has (0 on the other games' rows).
GAME_ONLY = {"game_mode": S2, "special_stage": S3K}


def contest_spec(*, recorded: bool = True) -> FrameSpec:
    """The spec of :func:`steps_frame`'s frame (``recorded``: it keeps ``reward_recorded``).

    Examples
    --------
    >>> contest_spec().state_names[:3], contest_spec().contract
    (('x', 'lives', 'frame'), 'steps')
    """
    states = tuple(StateColumn(v, None, "int64", 0, final=f"final_{v}") for v in STATE_VARIABLES)
    return FrameSpec(name="retro_contest", episode=("episode_id",), step="t", terminated="terminated",
                     truncated="truncated", states=states,
                     columns=(("reward_recorded",) if recorded else ()) + EPISODE_COLUMNS, contract="steps",
                     description="retro contest recording: one row per timestep, the episode's start and "
                     "running values as columns")


def _where(recording: pl.DataFrame, row: int) -> str:
    return f"episode {recording['episode_id'][row]!r}, t = {recording['t'][row]!r}"


def contest_columns(recording: pl.DataFrame) -> pl.DataFrame:
    """A recording (retro layout, N+1 rows per episode) with the episode columns added and the variables as Int64.

    ``game_mode`` / ``special_stage`` are 0 on the rows of games without
    them (added when the recording has no such column); on their own game's
    rows a null is refused (the script reads them).

    Raises
    ------
    FrameError
        A game that is not a contest game, a missing variable (naming the
        episode and step), or rows out of episode order.

    Examples
    --------
    >>> rec = pl.DataFrame({"episode_id": [0, 0], "t": [0, 1], "final": [False, True],
    ...                     "game": ["SonicAndKnuckles3-Genesis-v0"] * 2, "frame": [0, 4], "x": [5, 3],
    ...                     "lives": [3, 3], "zone": [0, 0], "act": [0, 1], "screen_x": [100, 60],
    ...                     "special_stage": [0, 0]})
    >>> contest_columns(rec).select("game_code", "act_shift", "reach_x", "game_mode").rows()
    [(2, 0, 5, 0), (2, -40, 43, 0)]
    """
    for name in ("episode_id", "t", "final", "game"):
        if name not in recording.columns:
            raise FrameError(f"the recording has no {name!r} column (the retro layout's)",
                             hint="Record with rewardlab.record_retro, or load the file with format='retro'")
    games = recording["game"]
    unknown = ~games.is_in(list(SONIC_GAMES)).fill_null(False)
    if unknown.any():
        row = int(unknown.arg_true()[0])
        raise FrameError(f"{_where(recording, row)}: the game {games[row]!r} has no contest reward (the contest's "
                         "games are " + ", ".join(SONIC_GAMES) + ")")
    code = games.replace_strict(list(SONIC_GAMES), list(range(len(SONIC_GAMES))), return_dtype=pl.Int64)
    out = recording.with_columns(game_code=code)
    for name in STATE_VARIABLES:
        only = GAME_ONLY.get(name)
        if name not in out.columns:
            if only is not None and not (out["game_code"] == only).any():
                out = out.with_columns(pl.lit(0, dtype=pl.Int64).alias(name))
                continue
            raise FrameError(f"the recording has no {name!r} column, and the contest script reads it",
                             hint="Record the game's data.json variables (rewardlab.record_retro records them all)")
        column = pl.col(name)
        if only is not None:
            column = pl.when(pl.col("game_code") == only).then(column).otherwise(pl.lit(0))
        out = out.with_columns(column.cast(pl.Int64, strict=False).alias(name))
        missing = out[name].is_null()
        if missing.any():
            row = int(missing.arg_true()[0])
            raise FrameError(f"{_where(recording, row)}: the variable {name!r} is missing (null or not an integer), "
                             "and the contest script reads it")
    episode = out["episode_id"].to_numpy()
    start = np.ones(out.height, bool)
    start[1:] = episode[1:] != episode[:-1]
    if np.unique(episode[start]).size != int(start.sum()):
        raise FrameError("the recording's episodes are not contiguous: sort its rows by episode_id and t")
    start_x, shift, reach = episode_columns(start, out["x"].to_numpy(), out["act"].to_numpy(),
                                            out["screen_x"].to_numpy(), out["game_code"].to_numpy())
    first = np.flatnonzero(start)
    segment = np.cumsum(start) - 1
    return out.with_columns(
        start_x=pl.Series(start_x, dtype=pl.Int64),
        start_zone=pl.Series(out["zone"].to_numpy()[first][segment], dtype=pl.Int64),
        start_act=pl.Series(out["act"].to_numpy()[first][segment], dtype=pl.Int64),
        act_shift=pl.Series(shift, dtype=pl.Int64),
        reach_x=pl.Series(reach, dtype=pl.Int64),
    )


def steps_frame(recording: pl.DataFrame) -> pl.DataFrame:
    """The step frame of a recording (one row per step, final states in ``final_*``), its spec attached.

    Keeps ``episode_id``, ``t``, ``game``, ``state`` (when present), the
    variables, ``reward`` as ``reward_recorded``, the flags and the episode
    columns (:func:`contest_columns`).  Every episode must end with its final
    row (the contest's reward after the last step needs it).

    Examples
    --------
    >>> rec = pl.DataFrame({"episode_id": [0, 0], "t": [0, 1], "final": [False, True],
    ...                     "game": ["SonicTheHedgehog-Genesis-v0"] * 2, "frame": [0, 4], "x": [5, 3],
    ...                     "lives": [3, 3], "zone": [0, 0], "act": [0, 0], "screen_x": [0, 0],
    ...                     "reward": [0.0, None], "terminated": [False, None], "truncated": [True, None]})
    >>> steps_frame(rec).select("x", "final_x", "final_frame").rows()
    [(5, 3, 4)]
    """
    full = contest_columns(recording)
    final = full["final"].fill_null(False).to_numpy().astype(bool)
    episode = full["episode_id"].to_numpy()
    if final.size == 0 or not final[-1]:
        row = max(full.height - 1, 0)
        raise FrameError(f"episode {episode[row] if full.height else None!r}: the recording's last row is no final "
                         "row; the contest reward of an episode's last step needs the state after it")
    last_of_episode = np.ones(full.height, bool)
    last_of_episode[:-1] = episode[1:] != episode[:-1]
    bad = final != last_of_episode
    if bad.any():
        row = int(np.argmax(bad))
        what = "is not its episode's last row" if final[row] else "ends its episode without a final row after it"
        raise FrameError(f"{_where(full, row)}: the row {what}; each episode ends with one final row (final = true) "
                         "holding the state after its last step")
    if (~final[:-1] & final[1:] & (episode[:-1] != episode[1:])).any() or (final[:-1] & final[1:]).any():
        raise FrameError("an episode has no step before its final row")
    after = np.flatnonzero(final)  # final rows; the step before each is its episode's last step
    owner = np.zeros(full.height, bool)
    owner[after - 1] = True
    steps = full.filter(pl.Series(~final))
    owner_rows = owner[~final]
    finals = {}
    for name in STATE_VARIABLES:
        values = np.zeros(steps.height, np.int64)
        values[owner_rows] = full[name].to_numpy()[after]
        finals[f"final_{name}"] = pl.Series(values, dtype=pl.Int64).scatter(
            np.flatnonzero(~owner_rows), None) if (~owner_rows).any() else pl.Series(values, dtype=pl.Int64)
    keep = [c for c in ("episode_id", "t", "game", "state") if c in steps.columns]
    recorded = "reward" in steps.columns
    frame = steps.select(
        *keep, *STATE_VARIABLES,
        *([pl.col("reward").cast(pl.Float64).alias("reward_recorded")] if recorded else []),
        *(pl.col(c).cast(pl.Boolean) for c in ("terminated", "truncated") if c in steps.columns),
        *EPISODE_COLUMNS,
    ).with_columns(**finals)
    if "terminated" not in frame.columns or "truncated" not in frame.columns:
        raise FrameError("the recording has no 'terminated' / 'truncated' columns (the retro layout's flags)")
    spec = contest_spec(recorded=recorded)
    spec.validate(frame)
    return attach(frame, spec)


def contest_steps(frame: pl.DataFrame, levels: tuple[np.ndarray, np.ndarray], *,
                  spec: FrameSpec | None = None) -> tuple[ContestSteps, np.ndarray]:
    """The contest inputs of a step frame, as the steps contract hands them to a plug-in.

    Parameters
    ----------
    frame : polars.DataFrame
        A :func:`steps_frame` frame (or one with the same columns and spec).
    levels : (codes, max_x)
        From :func:`~rewardlab.domains.retro.contest.level_codes`.
    spec : FrameSpec, optional
        The frame's spec when it carries none (default :func:`contest_spec`).

    Returns
    -------
    steps : ContestSteps
    first : bool array ``[N]``
        True on each episode's first step.

    Raises
    ------
    FrameError
        A last step without its final state, a level missing from the table,
        or a level whose end is not after its start (each naming the episode
        and step).

    Examples
    --------
    >>> steps, first = contest_steps(frame, level_codes(table))  # doctest: +SKIP
    """
    if spec is None:
        spec = attached(frame) or contest_spec(recorded="reward_recorded" in frame.columns)
    for name in (*STATE_VARIABLES, *EPISODE_COLUMNS):
        if name not in frame.columns:
            raise FrameError(f"the frame has no {name!r} column; the contest reward reads it",
                             hint="Make the frame with rewardlab.domains.retro.frames.steps_frame(recording)")
    arrays = StepsArrays(frame, spec)

    def where(row: int) -> str:
        return _where(frame, row)

    if arrays.missing_final.any():
        row = int(np.argmax(arrays.missing_final))
        raise FrameError(f"{where(row)}: the episode's last step has no final state (the state after it), and the "
                         "contest reward of that step needs it")
    ends = arrays.episode_end
    first = np.ones(arrays.n, bool)
    first[1:] = ends[:-1]

    def following(name: str) -> np.ndarray:
        cur = arrays.states[name].astype(np.int64, copy=False)
        out = np.empty_like(cur)
        out[:-1] = cur[1:]
        out[ends] = arrays.finals[name][ends]
        return out

    extras = {c: arrays.extras[c].astype(np.int64, copy=False) for c in EPISODE_COLUMNS}
    max_x, missing = level_end_x(*levels, level_code(extras["game_code"], extras["start_zone"], extras["start_act"]))
    if missing.any():
        row = int(np.argmax(missing))
        game = SONIC_GAMES[int(extras["game_code"][row])]
        raise FrameError(f"{where(row)}: the level zone={extras['start_zone'][row]},act={extras['start_act'][row]} of "
                         f"{game} is not in the level table",
                         hint="Add its end x to the table (levels=...), or leave the episode out")
    end_x = (max_x - extras["start_x"]).astype(np.float64)
    check_end_x(end_x, where)
    state = {name: arrays.states[name].astype(np.int64, copy=False) for name in ("x", "lives", "act", "screen_x")}
    steps = ContestSteps(game=extras["game_code"], end_x=end_x, start_x=extras["start_x"], shift=extras["act_shift"],
                         reach=extras["reach_x"], **state, next_x=following("x"), next_lives=following("lives"),
                         next_act=following("act"), next_screen_x=following("screen_x"),
                         next_frame=following("frame"), next_game_mode=following("game_mode"),
                         next_special_stage=following("special_stage"))
    return steps, first
