"""Reading stable-retro recordings: the steps reader, then the retro rules and the final states.

:func:`read_retro` reads the files with
:func:`~rewardlab.sources.steps.read_steps` (episode ``episode_id``, step
``t``, final rows ``final``, flags ``terminated`` / ``truncated``, reward
``reward``): every rule of step tables (contiguous episodes, step order,
flags on last steps only, the N+1 layout's final rows) is its, with its
messages and skip mode.  The retro rules are then checked on the rows as
read (final rows included), each error naming the file and line (or row
group), the episode and the step (:class:`~rewardlab.core.errors.StepTableError`):

=========================  ===================================================
rule                       broken by
=========================  ===================================================
``missing_column``         a layout column (:data:`~.layout.REQUIRED_COLUMNS`)
                           or a variable the game's contest script reads
                           (:data:`~.layout.SCRIPT_VARIABLES`) is not in the
                           file (whole file: both modes)
``missing_variable``       ``game``, ``state`` or (on a final row) ``frame``
                           or a variable of the row's game is null (on a
                           step row a null number is first the steps
                           reader's ``missing_value``; a variable the game
                           lacks may be null, see :mod:`.relay`)
``not_a_number``           ``frame`` or a variable that is not a whole number
``game_changes``,          ``game`` / ``state`` differs within an episode
``state_changes``
``frame_start``            ``frame`` is not 0 on an episode's row 0
``frame_order``            ``frame`` does not increase from one row to the next
``unknown_game``           a row with ``zone`` / ``act`` whose game has no
                           level table (pass ``levels=``)
``level_not_in_table``     the level at row 0 (``zone``, ``act``) has no end
                           in the game's ``level_max_x``
``not_a_level``            ``state`` is none of the game's level states
``state_level_mismatch``   row 0's ``zone`` / ``act`` are not the state's level
``final_row_missing``      an episode without its final row
=========================  ===================================================

With ``on_error="skip"`` an episode breaking any rule is dropped whole (with
its final row), as the steps source does, and counted by reason; the side
file holds the rows of every skipped episode.  The frame is described in
:mod:`rewardlab.sources.retro.layout`.
"""

from __future__ import annotations

import warnings
from pathlib import Path

import numpy as np
import polars as pl

from rewardlab.core.errors import ParameterError, SkippedLinesWarning, StepTableError, check_choice
from rewardlab.core.extras import install_command
from rewardlab.core.files import check_input, check_not_input, check_output
from rewardlab.core.fronts import Fix, Text
from rewardlab.core.spec import attach
from rewardlab.sources.results import LoadResult
from rewardlab.sources.retro import layout as L
from rewardlab.sources.retro.levels import SONIC_GAMES, Levels, game_levels, level_key, load_levels
from rewardlab.sources.retro.relay import relocate_error, relocate_skipped, steps_reading
from rewardlab.sources.retro.running import running_columns
from rewardlab.sources.steps import RECORDED_DONE, SKIPPED_SCHEMA, read_steps
from rewardlab.sources.steps import checks as C
from rewardlab.sources.steps.files import TableFile, kind_of, read_file
from rewardlab.sources.steps.folders import step_files
from rewardlab.sources.steps.places import RowPlaces, skipped_records, write_skipped

__all__ = ["read_retro", "load_retro", "resolve_levels", "RETRO_RULES"]

#: The retro rules (see the module docstring), in the order they are checked.
RETRO_RULES = ("missing_column", "missing_variable", "not_a_number", "game_changes", "state_changes",
               "frame_start", "frame_order", "unknown_game", "level_not_in_table", "not_a_level",
               "state_level_mismatch", "final_row_missing")

_HINT = Text("Fix the recording, or ", Fix("on_error", "skip", verb="load with", option=True),
             " to skip the episode and keep it in a side file.")
_LEVEL_HINT = Text("Give the level's end and state in a level table of your own: ",
                   Fix("levels", "FILE", verb="", option=True),
                   " (an edited script.lua, or JSON / TOML; see rewardlab.sources.retro.levels.load_levels), "
                   "or ", Fix("on_error", "skip", verb="load with", option=True), " to skip the episode.")


def resolve_levels(levels=None) -> dict[str, Levels]:
    """``{game: Levels}``: the installed Sonic games' tables, with ``levels`` (a file for
    :func:`~rewardlab.sources.retro.levels.load_levels`, or a ``{game: Levels}`` dict) over them.

    Examples
    --------
    >>> sorted(resolve_levels())[0]
    'SonicAndKnuckles3-Genesis-v0'
    """
    out: dict[str, Levels] = {}
    for game in SONIC_GAMES:
        try:
            out[game] = game_levels(game)
        except (ParameterError, OSError):  # stable-retro missing: only the user's tables
            pass
    if levels is None:
        return out
    if isinstance(levels, dict):
        if not all(isinstance(v, Levels) for v in levels.values()):
            raise ParameterError("levels", "should be a level file (script.lua, .json, .toml) or a dict of "
                                 "game id -> rewardlab.sources.retro.levels.Levels", levels)
        return out | dict(levels)
    if not isinstance(levels, (str, Path)):
        raise ParameterError("levels", "should be a level file (script.lua, .json, .toml) or a dict of "
                             "game id -> Levels", levels)
    check_input(levels)
    return out | load_levels(levels)


# ----------------------------------------------------------------------------
# The retro rules, on the rows as read
# ----------------------------------------------------------------------------


def _missing_columns(tables: list[TableFile]) -> None:
    for table in tables:
        names = table.frame.columns
        missing = [c for c in L.REQUIRED_COLUMNS if c not in names]
        if not missing and _game_text(table):
            games = table.frame.get_column(L.GAME).drop_nulls().unique().to_list()
            needed = dict.fromkeys(v for g in sorted(map(str, games)) for v in L.script_variables(g))
            missing = [v for v in needed if v not in names]
            what = "variables the contest script of " + ", ".join(
                g for g in sorted(map(str, games)) if set(L.script_variables(g)) & set(missing)) + " reads"
        else:
            what = "columns of a retro recording"
        if missing:
            raise StepTableError(table.path, "missing_column", f"no {', '.join(missing)} column: "
                                 f"{'it is one' if len(missing) == 1 else 'they are'} of the {what} "
                                 f"(columns: {', '.join(names[:40])})", column=missing[0],
                                 hint="Record every data.json variable under its own name (see "
                                 "rewardlab.sources.retro.layout), or load the table with format='steps'.")


def _game_text(table: TableFile) -> bool:
    """True when the file's ``game`` column holds text (the layout's), so its games can be listed."""
    return table.frame.schema.get(L.GAME) in (pl.String, pl.Categorical)


def _variables(names: list[str]) -> tuple[str, ...]:
    """The variable columns of a recording: every column not of the layout, in table order."""
    return tuple(c for c in names if c not in L.LAYOUT_COLUMNS)


def _ints(raw: pl.DataFrame, name: str, problems: C.Problems, episode: np.ndarray, step) -> np.ndarray:
    """Column ``name`` as int64 (nulls: 0, left to the null checks); a value that is no whole number is a
    problem."""
    series = raw.get_column(name)
    if series.dtype.is_integer():
        return series.fill_null(0).cast(pl.Int64).to_numpy()
    if series.dtype == pl.Null:
        return np.zeros(raw.height, dtype=np.int64)
    as_float = series.cast(pl.Float64, strict=False)
    bad = (series.is_not_null() & (as_float.is_null() | ~as_float.is_finite().fill_null(False)
                                   | (as_float.fill_nan(0.5) % 1 != 0).fill_null(False))).to_numpy()
    problems.add(bad, name, "not_a_number",
                 lambda r: f"{name} is {series[r]!r} at step {step(r)} of episode {episode[r]!r}; it should be "
                 "a whole number")
    return as_float.fill_null(0).fill_nan(0).cast(pl.Int64, strict=False).fill_null(0).to_numpy()


def _retro_problems(raw: pl.DataFrame, levels: dict[str, Levels], problems: C.Problems) -> np.ndarray:
    """Check the retro rules on ``raw`` (the files' rows, final rows included); returns the final flags."""
    n = raw.height
    episode = raw.get_column(L.EPISODE).to_list()
    steps = raw.get_column(L.STEP).to_list()

    def step(r: int):
        value = steps[r]
        return int(value) if isinstance(value, float) and value.is_integer() else value

    final = C.flag(raw.get_column(L.FINAL).fill_null(False), L.FINAL, C.Problems(True))
    same = np.zeros(n, dtype=bool)  # True where the row continues the row before's episode
    if n > 1:
        ep = raw.get_column(L.EPISODE)
        same[1:] = (ep.slice(1) == ep.slice(0, n - 1)).fill_null(False).to_numpy()
    first = ~same
    last = np.ones(n, dtype=bool)
    last[:-1] = first[1:]
    where = lambda r: f"step {step(r)} of episode {episode[r]!r}"  # noqa: E731
    games = raw.get_column(L.GAME).cast(pl.String)
    states = raw.get_column(L.STATE).cast(pl.String)
    names = raw.columns
    for name, series in ((L.GAME, games), (L.STATE, states)):
        problems.add(series.is_null().to_numpy(), name, "missing_variable",
                     lambda r, name=name: f"{name} is missing (null) at {where(r)}")
        if n > 1:
            changes = same & np.concatenate(([False], (series.slice(1) != series.slice(0, n - 1))
                                             .fill_null(False).to_numpy()))
            problems.add(changes, name, f"{name}_changes",
                         lambda r, name=name, series=series: f"{name} is {series[r]!r} at {where(r)}, "
                         f"{series[r - 1]!r} on the row before: one episode plays one {name}")
    # a null variable of a game that has it (its data.json, or its contest script)
    frame_col = raw.get_column(L.FRAME)
    problems.add(frame_col.is_null().to_numpy(), L.FRAME, "missing_variable",
                 lambda r: f"frame is missing (null) at {where(r)}")
    variables = _variables(names)
    for game in sorted(games.drop_nulls().unique().to_list()):
        rows = (games == game).fill_null(False).to_numpy()
        known = L.game_variables(game) or ()
        for name in dict.fromkeys((*L.script_variables(game), *known)):
            if name not in names:
                continue
            nulls = rows & raw.get_column(name).is_null().to_numpy()
            problems.add(nulls, name, "missing_variable",
                         lambda r, name=name, game=game: f"{name} is missing (null) at {where(r)}, but {game} "
                         + ("has it (its contest script reads it)" if name in L.script_variables(game)
                            else "has it (its data.json)"))
    frames = _ints(raw, L.FRAME, problems, episode, step)
    values = {name: _ints(raw, name, problems, episode, step) for name in variables
              if raw.schema[name].is_numeric() or raw.schema[name] in (pl.String, pl.Null)}
    problems.add(first & (frames != 0) & frame_col.is_not_null().to_numpy(), L.FRAME, "frame_start",
                 lambda r: f"frame is {frames[r]} at {where(r)}, the episode's first row; it counts emulator "
                 "frames since reset, so it starts at 0")
    back = np.zeros(n, dtype=bool)
    back[1:] = same[1:] & (frames[1:] <= frames[:-1])
    problems.add(back, L.FRAME, "frame_order",
                 lambda r: f"frame {frames[r]} at {where(r)} is not after frame {frames[r - 1]} of the row "
                 "before: frames go backwards or stand still")
    has_level = all(v in values for v in ("zone", "act"))
    if has_level:
        zone, act = values["zone"], values["act"]
        set_level = (raw.get_column("zone").is_not_null() & raw.get_column("act").is_not_null()).to_numpy()
        for r in np.flatnonzero(first & set_level & games.is_not_null().to_numpy()).tolist():
            _check_level(r, games[r], states[r], int(zone[r]), int(act[r]), levels, problems, where)
    # every episode ends with its final row
    problems.add(last & ~final, L.FINAL, "final_row_missing",
                 lambda r: f"episode {episode[r]!r} ends at step {step(r)} without a final row (final = true, "
                 "the state after the last step); a retro recording has one per episode")
    return final


def _check_level(r: int, game: str, state, zone: int, act: int, levels: dict[str, Levels],
                 problems: C.Problems, where) -> None:
    table = levels.get(game)
    key = level_key(zone, act)
    if table is None:
        if game in SONIC_GAMES:  # a contest game whose table could not be read: stable-retro is missing
            problems.add([r], L.GAME, "unknown_game",
                         lambda r: f"game {game!r} at {where(r)} plays a level ({key}), whose end comes from "
                         "stable-retro's own script.lua, and stable-retro is not installed; install the retro "
                         f"extra ({install_command('retro')})")
        else:
            problems.add([r], L.GAME, "unknown_game",
                         lambda r: f"game {game!r} at {where(r)} plays a level ({key}) but has no level table "
                         "(stable-retro's are those of " + ", ".join(SONIC_GAMES) + ")")
        return
    if key not in table.max_x:
        problems.add([r], "zone", "level_not_in_table",
                     lambda r: f"the level at {where(r)} is {key}, which has no end x in {game}'s level_max_x "
                     f"({table.origin})")
        return
    if state is None:
        return
    if state not in table.states:
        problems.add([r], L.STATE, "not_a_level",
                     lambda r: f"state {state!r} at {where(r)} is not a level of {game} (its level states: "
                     + ", ".join(sorted(table.states)) + ")")
        return
    if table.states[state] != (zone, act):
        problems.add([r], "zone", "state_level_mismatch",
                     lambda r: f"the level at {where(r)} is {key}, but state {state!r} starts "
                     f"{level_key(*table.states[state])}")


# ----------------------------------------------------------------------------
# The frame
# ----------------------------------------------------------------------------


def _frame(steps_frame: pl.DataFrame, raw: pl.DataFrame, final: np.ndarray) -> pl.DataFrame:
    """The retro frame: ``steps_frame`` (the steps reader's, final rows removed) with the final columns of
    ``frame`` and every variable from ``raw``'s final rows, the missing variables as 0, the constants."""
    variables = [c for c in _variables(raw.columns) if c in steps_frame.columns]
    states = [L.FRAME, *variables]
    finals = (raw.filter(pl.Series(final)).select(
        pl.col(L.EPISODE), *(pl.col(c).cast(pl.Int64, strict=False).alias(L.final_name(c)) for c in states))
        .unique(L.EPISODE, keep="first"))
    key_dtype = steps_frame.schema[L.EPISODE]
    finals = finals.with_columns(pl.col(L.EPISODE).cast(key_dtype, strict=False))
    frame = steps_frame.with_columns(pl.col(c).cast(pl.Int64, strict=False) for c in states)
    is_last = pl.col(L.EPISODE).ne_missing(pl.col(L.EPISODE).shift(-1))
    joined = frame.with_row_index("_row").join(finals, on=L.EPISODE, how="left").sort("_row").drop("_row")
    frame = joined.with_columns(pl.when(is_last).then(pl.col(L.final_name(c))).otherwise(None)
                                .alias(L.final_name(c)) for c in states)
    # a variable the row's game lacks reads 0 (a variable every game of the file lacks is still a column)
    frame = frame.with_columns(pl.col(c).fill_null(0) for c in variables)
    frame = frame.with_columns(pl.when(is_last).then(pl.col(L.final_name(c)).fill_null(0)).otherwise(None)
                               .alias(L.final_name(c)) for c in variables)
    codes = {g: L.game_code(g) for g in frame.get_column(L.GAME).unique().to_list()}
    constants = [pl.col(L.GAME).replace_strict(codes, return_dtype=pl.Int64, default=-1).alias("game_code")]
    for name in ("x", "zone", "act"):
        if name in variables:
            constants.append(pl.col(name).first().over(L.EPISODE, order_by=L.STEP).alias("start_" + name))
    frame = frame.with_columns(constants)
    if all(c in variables for c in ("x", "act", "screen_x")):
        start = frame.get_column(L.EPISODE).ne_missing(frame.get_column(L.EPISODE).shift(1)).to_numpy()
        shift, reach = running_columns(start, frame["x"].to_numpy(), frame["act"].to_numpy(),
                                       frame["screen_x"].to_numpy(), frame["game_code"].to_numpy())
        frame = frame.with_columns(pl.Series("act_shift", shift), pl.Series("reach_x", reach))
    order = [L.EPISODE, L.STEP, L.GAME, L.STATE, *(c for c in L.CONSTANT_COLUMNS if c in frame.columns)]
    for c in steps_frame.columns:
        if c not in order and c not in variables and c != L.FRAME:
            order.append(c)
    for c in states:
        order += [c, L.final_name(c)]
    return frame.select(order)


def _spec_of(frame: pl.DataFrame, variables: list[str]):
    roles = {L.EPISODE, L.STEP, L.TERMINATED, L.TRUNCATED, RECORDED_DONE, L.FRAME, *variables,
             *(L.final_name(c) for c in (L.FRAME, *variables))}
    extras = [c for c in frame.columns if c not in roles]
    return L.retro_spec(variables, extras)


# ----------------------------------------------------------------------------
# read_retro / load_retro
# ----------------------------------------------------------------------------


def read_retro(paths, *, levels=None, unfinished: str = "error", on_error: str = "raise",
               skipped_path: str | Path | None = None, overwrite: bool = False) -> LoadResult:
    """Read stable-retro recordings (Parquet or CSV, the layout of :mod:`rewardlab.sources.retro.layout`).

    Parameters
    ----------
    paths : path or list of paths
        The files (or a folder of them), read in order as one table.
    levels : path or dict, optional
        A level table of your own over the installed games' (a ``script.lua``
        you edited, or a JSON / TOML table; see
        :func:`~rewardlab.sources.retro.levels.load_levels`), or ``{game: Levels}``.
    unfinished : {"error", "truncate"}
        An episode whose last step has neither flag: an error, or read as truncated.
    on_error : {"raise", "skip"}
        Raise on the first broken rule (the steps source's, then the retro
        rules of :mod:`rewardlab.sources.retro.reader`), or drop the
        episodes breaking one, whole, and report them.
    skipped_path : path, optional
        With ``on_error="skip"``, a side file for the skipped episodes' rows.
    overwrite : bool
        Replace an existing ``skipped_path``.

    Returns
    -------
    LoadResult
        ``frame`` (spec ``"retro"``, contract ``"steps"``), ``skipped``, ``skipped_path``.

    Examples
    --------
    >>> result = read_retro("data/retro/sonic_sample.parquet")
    >>> result.frame.select("final_x").drop_nulls().height == result.frame["episode_id"].n_unique()
    True
    """
    check_choice("on_error", on_error, ("raise", "skip"))
    check_choice("unfinished", unfinished, ("error", "truncate"))
    if not isinstance(overwrite, bool):
        raise ParameterError("overwrite", "should be True or False", overwrite)
    if skipped_path is not None and on_error != "skip":
        raise ParameterError("skipped_path", Text("is only used with ", Fix("on_error", "skip", verb="",
                                                                            option=True)), str(skipped_path))
    files = step_files(paths, episode=L.EPISODE, step=L.STEP)
    for p in files:
        check_input(p)
        if kind_of(p) is None:
            raise StepTableError(p, "file_kind", "a retro recording is a .parquet or .csv file",
                                 hint="Rename or convert the file.")
    check_not_input(skipped_path, files, name="skipped_path")
    if skipped_path is not None:
        check_output(skipped_path, overwrite=overwrite)
    table_levels = resolve_levels(levels)
    tables = [read_file(p) for p in files]
    _missing_columns(tables)
    with warnings.catch_warnings(), steps_reading(files, tables) as (inputs, index):
        warnings.simplefilter("ignore", SkippedLinesWarning)  # one warning below for both kinds of skips
        try:
            steps = read_steps(inputs, episode=L.EPISODE, step=L.STEP, agent=False, terminated=L.TERMINATED,
                               truncated=L.TRUNCATED, done=False, reward=L.REWARD, time=False, final=L.FINAL,
                               unfinished=unfinished, on_error=on_error)
        except StepTableError as err:
            if index is None:
                raise
            raise relocate_error(err, index, tables) from None
        steps_skipped = steps.skipped if index is None else relocate_skipped(steps.skipped, index, tables)
    raw = pl.concat([t.frame for t in tables], how="vertical_relaxed") if len(tables) > 1 else tables[0].frame
    where = RowPlaces(tables)
    problems = C.Problems(on_error == "skip")
    final = _retro_problems(raw, table_levels, problems)
    if problems and on_error == "raise":
        r, column, rule, message = problems.first
        raise where.error(r, column, rule, message(r),
                          hint=_LEVEL_HINT if rule in ("unknown_game", "level_not_in_table", "not_a_level")
                          else _HINT)
    frame = steps.frame
    skipped = steps_skipped
    skipped_rows = _raw_rows(skipped, files, where)
    if problems:
        episode = raw.get_column(L.EPISODE)
        bad = episode.gather(problems.bad_rows).unique()
        mine = np.flatnonzero(episode.is_in(bad.implode()).to_numpy())
        new = np.setdiff1d(mine, skipped_rows)
        if new.size:
            skipped = pl.concat([skipped, skipped_records(new, problems, where)])
            skipped_rows = np.union1d(skipped_rows, new)
        frame = frame.filter(~pl.col(L.EPISODE).is_in(bad.cast(frame.schema[L.EPISODE], strict=False).implode()))
    if skipped.height:
        order = np.argsort(_raw_rows(skipped, files, where), kind="stable")
        skipped = skipped[order]
    result_path = None
    if skipped_path is not None and skipped_rows.size:
        result_path = Path(skipped_path)
        as_read = raw if tables[0].kind != "parquet" or not any(t.too_wide for t in tables) else pl.concat(
            [t.as_read() for t in tables], how="vertical_relaxed")
        write_skipped(result_path, skipped_rows, as_read, where, overwrite)
    keep = np.ones(raw.height, dtype=bool)
    keep[skipped_rows] = False
    out = _frame(frame, raw.filter(pl.Series(keep)), final[keep])
    spec = _spec_of(out, [c for c in _variables(raw.columns) if c in frame.columns])
    result = LoadResult(attach(out, spec), skipped.select(list(SKIPPED_SCHEMA)), result_path)
    if skipped.height:
        counts = ", ".join(f"{k}: {v}" for k, v in result.skip_counts.items())
        episodes = raw.get_column(L.EPISODE).gather(skipped_rows).n_unique()
        kept = f"; kept in {result_path}" if result_path else "; see result.skipped"
        warnings.warn(SkippedLinesWarning(f"skipped {episodes} episodes, {skipped.height} of {raw.height} rows "
                                          f"({counts}){kept}"), stacklevel=2)
    return result


def _raw_rows(skipped: pl.DataFrame, files: list[Path], where: RowPlaces) -> np.ndarray:
    """The rows of the files' concatenation the skipped records are (file, row)."""
    if not skipped.height:
        return np.zeros(0, dtype=np.int64)
    index = {str(p): k for k, p in enumerate(files)}
    k = np.array([index[f] for f in skipped.get_column("file").to_list()], dtype=np.int64)
    return where.starts[k].astype(np.int64) + skipped.get_column("row").cast(pl.Int64).to_numpy()


def load_retro(paths, *, levels=None, unfinished: str = "error", on_error: str = "raise",
               skipped_path: str | Path | None = None, overwrite: bool = False) -> pl.DataFrame:
    """:func:`read_retro`'s frame (with ``on_error="skip"``, ``skipped_path`` is required).

    Examples
    --------
    >>> frame = load_retro("data/retro/sonic_sample.parquet")
    >>> frame["game"].n_unique()
    3
    """
    if on_error == "skip" and skipped_path is None:
        raise ParameterError("skipped_path", Text("is required with ", Fix("on_error", "skip", verb="",
                                                                           option=True),
                                                  " so skipped rows are kept"), None,
                             hint="Name a side file, or call rewardlab.sources.retro.read_retro() to get them "
                             "in memory.")
    return read_retro(paths, levels=levels, unfinished=unfinished, on_error=on_error, skipped_path=skipped_path,
                      overwrite=overwrite).frame
