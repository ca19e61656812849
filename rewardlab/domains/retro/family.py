"""The retro contest reward as a tunable family on the family core, and its exported steps plug-in.

:class:`ContestFamily` (registered as ``"contest"``) holds the contest's
constants as parameters (:class:`ContestParams`: ``scale`` 9000, ``bonus``
1000, ``frame_limit`` 18000, the level table ``levels``) and the baselines'
options ``scaler`` (``RewardScaler``, x 0.01) and ``backtracking``
(``AllowBacktracking``).  It evaluates a step frame of a retro recording
(:func:`~rewardlab.domains.retro.frames.steps_frame`) with
:func:`~rewardlab.domains.retro.contest.contest_rewards` and exports a
stand-alone plug-in for the steps contract that computes the same, bit for
bit, from one row at a time: the episode's start and running values reach it
as columns (``game_code``, ``start_x``, ``start_zone``, ``start_act``,
``act_shift``, ``reach_x``), never as state kept between calls, so it gives
the same rewards in every batch mode (shuffled rows included).

:func:`export_contest_plugin` writes the file after the core's round trip
(:func:`rewardlab.families.roundtrip.family_roundtrip`: every batch mode, bit
for bit, and check-plugin on whole episodes) when data is given.

Examples
--------
>>> fam = ContestFamily.from_preset("rainbow")
>>> fam.params.backtracking, fam.params.scaler
(True, False)
>>> "def get_reward(data, contiguous):" in fam.render()
True
"""

from __future__ import annotations

import dataclasses
import datetime as _dt
import hashlib
from pathlib import Path
from typing import Mapping

import numpy as np
import polars as pl

from rewardlab.core.errors import ParameterError
from rewardlab.domains.retro.contest import (BONUS, FRAME_LIMIT, FRAME_OFFSET, S2, S3K, SCALE, SCALER, SONIC_GAMES,
                                             START_LIVES, BONUS_STAGE_MODE, ContestSteps, check_options,
                                             contest_rewards, level_codes)
from rewardlab.core.spec import attached
from rewardlab.domains.retro.frames import EPISODE_COLUMNS, contest_spec, contest_steps, steps_frame
from rewardlab.families.base import RewardFamily, register_family
from rewardlab.families.export import FamilyExport, export_target, render_family, write_checked
from rewardlab.families.parameters import mean_field, param_field, provenance_field, std_field, validate_normalization
from rewardlab.families.provenance import Provenance
from rewardlab.families.roundtrip import family_roundtrip
from rewardlab.sources.retro.levels import level_table, parse_level_key

__all__ = ["ContestParams", "ContestFamily", "ContestPrepared", "ContestExport", "export_contest_plugin",
           "levels_tuple"]


def levels_tuple(levels) -> tuple:
    """A level table as the parameter holds it: sorted ``((game, "zone=Z,act=A", end_x), ...)``.

    Accepts ``{game: {"zone=Z,act=A": end_x}}``, ``{game: Levels}``
    (:func:`rewardlab.sources.retro.load_levels`) or such a tuple; an empty
    one means the installed games' tables.

    Examples
    --------
    >>> levels_tuple({"SonicTheHedgehog-Genesis-v0": {"zone=0,act=1": 8032}})
    (('SonicTheHedgehog-Genesis-v0', 'zone=0,act=1', 8032),)
    """
    if isinstance(levels, Mapping):
        rows = []
        for game, table in levels.items():
            table = getattr(table, "max_x", table)
            if not isinstance(table, Mapping):
                raise ParameterError(f"levels[{game!r}]", 'should map "zone=Z,act=A" to end x', table)
            rows += [(game, key, end) for key, end in table.items()]
    elif isinstance(levels, (tuple, list)):
        rows = list(levels)
    else:
        raise ParameterError("levels", "should be {game: {'zone=Z,act=A': end_x}} or ((game, key, end_x), ...)",
                             type(levels).__name__)
    out = []
    for row in rows:
        if not (isinstance(row, (tuple, list)) and len(row) == 3):
            raise ParameterError("levels", "should hold (game, 'zone=Z,act=A', end_x) triples", row)
        game, key, end = row
        if game not in SONIC_GAMES:
            raise ParameterError("levels", "should name contest games (" + ", ".join(SONIC_GAMES) + ")", game)
        zone, act = parse_level_key(key)
        if isinstance(end, bool) or not isinstance(end, (int, np.integer)) or not 0 < int(end) < 2**31:
            raise ParameterError(f"levels[{game!r}][{key!r}]", "should be a positive integer end x", end)
        out.append((game, f"zone={zone},act={act}", int(end)))
    keys = [(g, k) for g, k, _ in out]
    if len(set(keys)) != len(keys):
        raise ParameterError("levels", "should give each level of a game once", sorted(keys))
    return tuple(sorted(out))


@dataclasses.dataclass(frozen=True)
class ContestParams:
    """Parameters of :class:`ContestFamily` (validated on construction).

    Examples
    --------
    >>> ContestParams(scale=100).scale
    100.0
    """

    scale: float = param_field(SCALE, "Progress reward for going from the start to the level's end (script: 9000).",
                               min=1.0, max=100000.0, step=1.0)
    bonus: float = param_field(BONUS, "Time bonus at frame 0, falling linearly to 0 at frame_limit (script: 1000).",
                               min=0.0, max=100000.0, step=1.0)
    frame_limit: int = param_field(FRAME_LIMIT, "Emulator frames over which the bonus falls to 0 (script: 18000).",
                                   min=1, max=1_000_000, step=1)
    scaler: bool = param_field(False, "retro-baselines RewardScaler: every reward times 0.01 (PPO2's make_env).")
    backtracking: bool = param_field(False, "retro-baselines AllowBacktracking: pay only new maxima of the "
                                     "cumulative reward (Rainbow's).")
    levels: tuple = param_field((), "The level table ((game, 'zone=Z,act=A', end_x), ...); empty: the installed "
                                "games' script.lua tables.")
    mean: float = mean_field(1e6, 0.001)
    std: float = std_field(1e6, 0.001)
    provenance: Provenance = provenance_field()

    def __post_init__(self):
        scale, bonus, limit, scaler, backtracking = check_options(self.scale, self.bonus, self.frame_limit,
                                                                  self.scaler, self.backtracking)
        for name, value in (("scale", scale), ("bonus", bonus), ("frame_limit", limit), ("scaler", scaler),
                            ("backtracking", backtracking), ("levels", levels_tuple(self.levels))):
            object.__setattr__(self, name, value)
        validate_normalization(self)

    def raw_extremes(self):
        """The reward's extremes: a whole level back, and a whole level forward plus the full bonus."""
        factor = SCALER if self.scaler else 1.0
        low = 0.0 if self.backtracking else -self.scale * factor
        return [((self.scale + self.bonus) * factor, "a level finished at frame 0", "scale", self.scale),
                (low, "the whole level back in one step", "scale", self.scale)]

    def level_table(self) -> dict[str, dict[str, int]]:
        """``{game: {"zone=Z,act=A": end_x}}``: :attr:`levels`, or the installed scripts' tables when empty."""
        if not self.levels:
            return {game: level_table(game) for game in SONIC_GAMES}
        out: dict[str, dict[str, int]] = {}
        for game, key, end in self.levels:
            out.setdefault(game, {})[key] = end
        return out


@dataclasses.dataclass(frozen=True, eq=False)
class ContestPrepared:
    """A step frame's contest inputs, read once (the family core's *prepared* object).

    Attributes
    ----------
    steps : ContestSteps
    first : bool array ``[N]``
    flags : bool array ``[N]``
        The recorded ``terminated | truncated`` (what the plug-in receives as ``("next", "done")``).
    source : str or None
    fingerprint : str
    """

    steps: ContestSteps
    first: np.ndarray
    flags: np.ndarray
    source: str | None
    fingerprint: str

    @property
    def n_rows(self) -> int:
        return len(self.steps)

    def rows(self, scope: str) -> np.ndarray:
        """Every row (the contest pays on every step)."""
        return np.arange(self.n_rows)

    def done(self, scope: str) -> np.ndarray:
        return self.flags


def _fingerprint(steps: ContestSteps) -> str:
    digest = hashlib.blake2b(digest_size=16)
    for field in dataclasses.fields(steps):
        digest.update(np.ascontiguousarray(getattr(steps, field.name)).tobytes())
    return "blake2b-128:" + digest.hexdigest()


_BODY = '''
def get_reward(data, contiguous):
    t = _RL_torch
    i64, f64 = t.int64, t.float64
    nxt = data["next"]
    game = data["game_code"].to(i64)
    start_x = data["start_x"].to(i64)
    code = game * 65536 + data["start_zone"].to(i64) * 256 + data["start_act"].to(i64)
    codes = t.tensor(_RL_LEVEL_CODES, dtype=i64)
    at = t.clamp(t.searchsorted(codes, code), max=codes.numel() - 1)
    known = codes[at] == code
    if not bool(known.all()):
        bad = int(code[~known][0])
        raise ValueError(f"the level zone={bad % 65536 // 256},act={bad % 256} of game code {bad // 65536} is not "
                         "in this plug-in's level table; export it again with the level added")
    end_x = (t.tensor(_RL_LEVEL_MAX_X, dtype=i64)[at] - start_x).to(f64)
    if not bool((end_x > 0).all()):
        raise ValueError("a level's end x is at or before its episode's start x")
    act, next_act = data["act"].to(i64), nxt["act"].to(i64)
    screen_x, next_screen_x = data["screen_x"].to(i64), nxt["screen_x"].to(i64)
    s3k = game == _RL_S3K
    shift = data["act_shift"].to(i64)
    next_shift = shift + t.where(s3k & (next_act != act), next_screen_x - screen_x, t.zeros_like(shift))
    p_now = t.minimum(t.clamp((data["x"].to(i64) - start_x - shift).to(f64), min=0.0), end_x) / end_x
    p_next = t.minimum(t.clamp((nxt["x"].to(i64) - start_x - next_shift).to(f64), min=0.0), end_x) / end_x
    finished = p_next >= 1.0
    f = (nxt["frame"].to(i64) + _RL_FRAME_OFFSET).to(f64) / float(_RL_FRAME_LIMIT)
    time_bonus = t.where(finished, (1.0 - t.clamp(f, 0.0, 1.0)) * _RL_BONUS, t.zeros_like(f))
    if _RL_BACKTRACKING:
        p_best = t.minimum(t.clamp((data["reach_x"].to(i64) - start_x).to(f64), min=0.0), end_x) / end_x
        reward = t.clamp((p_next - p_best) * _RL_SCALE, min=0.0) + time_bonus
    else:
        step = (p_next - p_now) * _RL_SCALE
        reward = t.where(finished, step + time_bonus, step)
    if _RL_SCALER:
        reward = reward * _RL_REWARD_SCALER
    lives = data["lives"].to(i64)
    done = (nxt["lives"].to(i64) < t.clamp(lives, min=_RL_START_LIVES)) | finished
    for name, owner, ends in (("game_mode", _RL_S2, lambda v: v == _RL_BONUS_STAGE_MODE),
                              ("special_stage", _RL_S3K, lambda v: v != 0)):
        value = nxt.get(name, None)
        if value is None:
            if bool((game == owner).any()):
                raise ValueError(f"the data has no {name!r} state, and the contest's done reads it")
            continue
        done = done | ((game == owner) & ends(value.to(i64)))
    data["next", "reward"] = (reward - _RL_MEAN) / _RL_STD
    data["next", "done"] = nxt["done"] | done
'''


@register_family
@dataclasses.dataclass(frozen=True)
class ContestFamily(RewardFamily):
    """The retro contest's progress reward with its time bonus (see the module docstring).

    Examples
    --------
    >>> ContestFamily().params.scale, ContestFamily.from_preset("ppo2").params.scaler
    (9000.0, True)
    """

    params: ContestParams = dataclasses.field(default_factory=ContestParams)

    name = "contest"
    title = "Retro contest progress reward"
    params_type = ContestParams
    scope = "all"
    presets = {"contest": {}, "ppo2": {"scaler": True}, "rainbow": {"backtracking": True}}
    export_for = "the steps contract (retro contest recordings: rewardlab apply --format retro)"
    export_formula = (
        "(p(t+1) - p(t)) * scale, p = clip(x - start_x - act_shift, 0, end_x) / end_x,",
        "end_x = level_max_x[start zone, start act] - start_x; + (1 - clip((frame + FRAME_OFFSET) /",
        "frame_limit, 0, 1)) * bonus once p >= 1; done: lives lost, p >= 1, Sonic 2 bonus stage,",
        "S3K special stage (script.lua's contest_reward / contest_done per timestep)",
    )
    export_body = _BODY

    # -- data -------------------------------------------------------------------
    def prepare(self, data) -> ContestPrepared:
        """The contest inputs of a step frame (:func:`steps_frame`'s) or a recording in the retro layout.

        Examples
        --------
        >>> ContestFamily().prepare(steps_frame(recording)).n_rows  # doctest: +SKIP
        1234
        """
        if isinstance(data, ContestPrepared):
            return data
        if not isinstance(data, pl.DataFrame):
            raise ParameterError("data", "should be a polars.DataFrame of a retro recording (its step frame)",
                                 type(data).__name__)
        frame = data
        if "final" in frame.columns and not all(c in frame.columns for c in EPISODE_COLUMNS):
            frame = steps_frame(frame)
        spec = attached(frame) or contest_spec(recorded="reward_recorded" in frame.columns)
        steps, first = contest_steps(frame, level_codes(self.params.level_table()), spec=spec)
        flags = np.zeros(len(steps), bool)
        for name in (spec.terminated, spec.truncated):  # what the plug-in receives as ("next", "done")
            if name is not None:
                flags |= frame[name].fill_null(False).to_numpy().astype(bool)
        return ContestPrepared(steps, first, flags, None, _fingerprint(steps))

    def raw_values(self, prepared) -> np.ndarray:
        """The contest reward of every step (before ``mean`` / ``std``)."""
        p = self.params
        return contest_rewards(self.prepare(prepared).steps, scale=p.scale, bonus=p.bonus,
                               frame_limit=p.frame_limit, scaler=p.scaler, backtracking=p.backtracking)[0]

    def evaluate(self, prepared) -> tuple[np.ndarray, np.ndarray]:
        """Rewards ``(raw - mean) / std`` and dones (the recorded flags or the contest's done) of every row.

        Examples
        --------
        >>> reward, done = ContestFamily().evaluate(steps_frame(recording))  # doctest: +SKIP
        """
        prepared = self.prepare(prepared)
        p = self.params
        raw, done = contest_rewards(prepared.steps, scale=p.scale, bonus=p.bonus, frame_limit=p.frame_limit,
                                    scaler=p.scaler, backtracking=p.backtracking)
        return (raw - p.mean) / p.std, prepared.flags | done

    # -- plug-in -----------------------------------------------------------------
    def get_reward(self, data, contiguous: bool) -> None:
        """Run the exported file's ``get_reward`` on a steps-contract TensorDict (the same code as the file)."""
        namespace: dict = {}
        exec(compile(self.render(created=_dt.datetime(2000, 1, 1, tzinfo=_dt.timezone.utc)), "<contest>", "exec"),
             namespace)
        namespace["get_reward"](data, contiguous)

    # -- export ------------------------------------------------------------------
    def export_literals(self) -> dict[str, object]:
        p = self.params
        codes, max_x = level_codes(p.level_table())
        return {
            "_RL_SCALE": p.scale, "_RL_BONUS": p.bonus, "_RL_FRAME_LIMIT": p.frame_limit,
            "_RL_SCALER": int(p.scaler), "_RL_BACKTRACKING": int(p.backtracking), "_RL_REWARD_SCALER": SCALER,
            "_RL_FRAME_OFFSET": FRAME_OFFSET, "_RL_START_LIVES": START_LIVES, "_RL_S2": S2, "_RL_S3K": S3K,
            "_RL_BONUS_STAGE_MODE": BONUS_STAGE_MODE,
            "_RL_LEVEL_CODES": tuple(int(c) for c in codes), "_RL_LEVEL_MAX_X": tuple(int(m) for m in max_x),
            "_RL_MEAN": p.mean, "_RL_STD": p.std,
        }

    def parameter_summary(self) -> dict[str, object]:
        """The parameters for headers; the level table as a count (its values are the file's literals)."""
        out = super().parameter_summary()
        table = self.params.level_table()
        count = sum(len(v) for v in table.values())
        out["levels"] = (f"the installed scripts' tables ({count} levels)" if not self.params.levels
                         else f"{count} levels of {', '.join(sorted(table))}")
        return out

    def render(self, *, source: str | None = None, created: _dt.datetime | None = None) -> str:
        """The exported file's text (:func:`rewardlab.families.export.render_family`)."""
        return render_family(self, source=source, created=created)


class ContestExport(FamilyExport):
    """What :func:`export_contest_plugin` wrote, and its :class:`~rewardlab.families.roundtrip.ModesRoundTrip`
    (None without data).

    Examples
    --------
    >>> str(ContestExport(Path("c.py"), None)).startswith("wrote c.py")
    True
    """


def export_contest_plugin(family: ContestFamily, path, *, data: pl.DataFrame | None = None, overwrite: bool = False,
                          source: str | None = None, progress: bool | None = False) -> ContestExport:
    """Write a contest family as one stand-alone steps plug-in file, after its round trip on ``data``.

    Parameters
    ----------
    family : ContestFamily
    path : str or Path
        The ``.py`` file (an existing one is replaced only with ``overwrite``).
    data : polars.DataFrame, optional
        A retro recording or its step frame: the file is applied to it in every
        batch mode and compared bit for bit with the family's evaluation, and
        check-plugin runs on whole episodes; nothing is written unless both pass.
    overwrite : bool
    source : str, optional
        A note for the file's header.
    progress : bool or None
        Progress bars for the round trip.

    Returns
    -------
    ContestExport

    Raises
    ------
    RoundTripError
        The file differs from the family on ``data`` or fails check-plugin.

    Examples
    --------
    >>> export_contest_plugin(ContestFamily(), "contest.py", data=steps_frame(recording))  # doctest: +SKIP
    """
    target = export_target(family, ContestFamily, path, overwrite=overwrite)  # before any work
    text = family.render(source=source)
    check = None
    if data is not None:
        frame = steps_frame(data) if "final" in data.columns else data

        def check(temporary):
            return family_roundtrip(family, temporary, frame, progress=progress)
    return ContestExport(target, write_checked(text, target, overwrite=overwrite, check=check))
