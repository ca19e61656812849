"""The retro contest tuner's session: the contest reward's constants, the baselines' options and the level table.

:class:`ContestSession` tunes :class:`~rewardlab.domains.retro.family.ContestFamily`
on a retro recording (``rewardlab.load(path)`` of a ``format="retro"`` file,
a recording in the retro layout, or its
:func:`~rewardlab.domains.retro.frames.steps_frame`).  The recording is read
once (:func:`~rewardlab.domains.retro.frames.contest_steps`: per-timestep
arrays, the episodes, their levels and recorded outcomes); a change of
``scale``, ``bonus``, ``frame_limit``, ``scaler`` or ``backtracking`` is then
two passes of the compiled contest kernel
(:func:`~rewardlab.domains.retro.contest.contest_rewards`, with and without
``AllowBacktracking``; ``RewardScaler`` is the kernel's last multiplication,
so the scaled rewards are those times 0.01, bit for bit) and a few per-episode
reductions.  A level-table edit (:meth:`ContestSession.set_level_end`) also
gathers the new end x of every step and runs the kernel once more to find
where each episode reaches its level's end (kept per table).

Examples
--------
>>> s = ContestSession("data/retro/sonic_sample.parquet")  # doctest: +SKIP
>>> s.backtracking = True  # doctest: +SKIP
>>> s.results.options  # doctest: +SKIP
"""

from __future__ import annotations

import dataclasses
from pathlib import Path

import numpy as np
import polars as pl

from rewardlab.analysis.episodes import EpisodeDetail, episode_detail
from rewardlab.analysis.sums import segment_sums
from rewardlab.core.errors import FrameError, ParameterError
from rewardlab.core.spec import FrameSpec, attached
from rewardlab.domains.retro.contest import (BONUS, FRAME_LIMIT, SCALE, SCALER, SONIC_GAMES, ContestSteps,
                                             contest_rewards, level_code, level_codes)
from rewardlab.domains.retro.family import ContestExport, ContestFamily, ContestParams, export_contest_plugin, \
    levels_tuple
from rewardlab.domains.retro.frames import EPISODE_COLUMNS, STATE_VARIABLES, contest_spec, contest_steps, steps_frame
from rewardlab.sessions.base import Param, Session
from rewardlab.sessions.fingerprints import fingerprint_columns
from rewardlab.sessions.inputs import cancel_token, load_frame, parse_number, progress_callback, source_paths
from rewardlab.sessions.retro_results import OPTION_VARIANTS, OUTCOME_GROUPS, ContestResults, installed_table, with_nulls
from rewardlab.sources.retro.levels import parse_level_key
from rewardlab.sources.retro.outcomes import episode_outcomes

__all__ = ["OPTION_VARIANTS", "OUTCOME_GROUPS", "ContestResults", "ContestSession", "installed_table"]

#: The bonus of the finish probe: larger than any progress reward with scale 1 (see ContestSession).
_PROBE_BONUS = 1.0e6
_PROBE_LIMIT = 2**31 - 1
#: An episode "backtracks" when AllowBacktracking pays it more than this share of ``scale`` (far below one
#: pixel of any level, far above float rounding).
_BEHIND = 1e-7
#: Level tables whose steps are kept (the live one, the ones undo and the pins go back to).
_TABLES_KEPT = 8


@dataclasses.dataclass(frozen=True, eq=False)
class _Table:
    """What a level table decides, kept per table: the steps with its end x, where each episode finishes and
    where the contest ends it."""

    steps: ContestSteps
    finish_row: np.ndarray  # [E]: the first row reaching the level's end, or N
    end_row: np.ndarray  # [E]: the first row where the contest's done fires, or N
    keep: np.ndarray | None  # [N]: rows up to the contest's end (None: every row)


class ContestSession(Session):
    """Tune the retro contest reward on a recording: scale, bonus, frame limit, the baselines' options, levels.

    Parameters
    ----------
    data : polars.DataFrame or path(s)
        A retro recording: ``rewardlab.load(path)`` of a ``format="retro"`` file (or the path itself), a
        recording in the retro layout (with its ``final`` rows), or its
        :func:`~rewardlab.domains.retro.frames.steps_frame`.  Every episode's level must be in the level
        table (the installed ``script.lua`` tables with the edits in ``levels``).
    scale, bonus : float
        The progress reward for a whole level (9000) and the time bonus at frame 0 (1000).
    frame_limit : int
        Emulator frames over which the bonus falls to 0 (18000).
    scaler, backtracking : bool
        retro-baselines' ``RewardScaler`` (x 0.01) and ``AllowBacktracking`` (only new maxima pay).
    levels : sequence of (game, "zone=Z,act=A", end_x)
        Edits of the installed scripts' ``level_max_x`` (replacing a level's end x, or adding a level);
        :meth:`set_level_end` changes one.

    Attributes
    ----------
    frame : polars.DataFrame
        The step frame (one row per timestep).
    steps : int
        Timesteps.
    level_choices : tuple of (game, state, "zone=Z,act=A")
        The levels of the data, in order of first appearance.

    Examples
    --------
    >>> s = ContestSession("data/retro/sonic_sample.parquet")  # doctest: +SKIP
    >>> s.update(backtracking=True, scaler=True)  # doctest: +SKIP
    >>> s.set_level_end("SonicTheHedgehog-Genesis-v0", "GreenHillZone.Act1", 6000)  # doctest: +SKIP
    >>> s.results.levels.select("state", "end_x", "finish_rate")  # doctest: +SKIP
    >>> print(s.export("contest.py"))  # doctest: +SKIP
    """

    scale = Param("Progress reward for going from the start to the level's end (script: 9000).")
    bonus = Param("Time bonus at frame 0, falling linearly to 0 at frame_limit (script: 1000).")
    frame_limit = Param("Emulator frames over which the bonus falls to 0 (script: 18000).")
    scaler = Param("retro-baselines RewardScaler: every reward times 0.01.")
    backtracking = Param("retro-baselines AllowBacktracking: pay only new maxima of the cumulative reward.")
    levels = Param("Edits of the installed scripts' level table: ((game, 'zone=Z,act=A', end_x), ...).")
    _param_names = ("scale", "bonus", "frame_limit", "scaler", "backtracking", "levels")
    _numeric = {"scale": "float", "bonus": "float", "frame_limit": "int"}
    state_kind = "retro_contest"

    def __init__(self, data, *, scale: float = SCALE, bonus: float = BONUS, frame_limit: int = FRAME_LIMIT,
                 scaler: bool = False, backtracking: bool = False, levels=()):
        super().__init__()
        frame, source = load_frame(data)
        self.data_path, self.data_paths = source, source_paths(data)
        if "final" in frame.columns:  # a recording in the retro layout (N+1 rows per episode)
            frame = steps_frame(frame)
        self.frame = frame
        self.spec = attached(frame) or contest_spec(recorded="reward_recorded" in frame.columns)
        self._fingerprint: str | None = None
        self._tables: dict[tuple, _Table] = {}
        self._prepare(levels_tuple(levels))
        params = dict(scale=scale, bonus=bonus, frame_limit=frame_limit, scaler=scaler, backtracking=backtracking,
                      levels=levels)
        params = {k: parse_number(k, v, integer=self._numeric[k] == "int") if k in self._numeric else v
                  for k, v in params.items()}
        self._params = self._validate(params, params)
        self._refresh({"data": self.data_path or "frame"})

    # -- the data, read once -------------------------------------------------------
    def _prepare(self, edits: tuple) -> None:
        """Read the steps (with the table ``edits`` gives), the episodes, their levels and recorded outcomes."""
        frame = self.frame
        if "game" in frame.columns:
            other = frame.filter(~pl.col("game").is_in(list(SONIC_GAMES)).fill_null(True))
            if other.height:
                raise FrameError(f"episode {other['episode_id'][0]!r}: the game {other['game'][0]!r} has no contest "
                                 "reward; the contest's games are " + ", ".join(SONIC_GAMES),
                                 hint="Tune the contest on Sonic recordings (filter the other games' episodes out)")
        steps, first = contest_steps(frame, level_codes(self.level_table(edits)), spec=self.spec)
        n = len(steps)
        if n == 0:
            raise FrameError("the recording has no steps", hint="Record or load at least one episode")
        self._starts = np.flatnonzero(first)
        self._lengths = np.diff(np.append(self._starts, n))
        self._lasts = self._starts + self._lengths - 1
        code = level_code(steps.game[self._starts], frame["start_zone"].to_numpy()[self._starts],
                          frame["start_act"].to_numpy()[self._starts])
        self._level_codes, first_at, self._episode_level = np.unique(code, return_index=True, return_inverse=True)
        order = np.argsort(first_at, kind="stable")  # levels in order of first appearance
        rank = np.empty_like(order)
        rank[order] = np.arange(order.size)
        self._level_codes, self._episode_level = self._level_codes[order], rank[self._episode_level]
        games = frame["game"].to_numpy()[self._starts]
        states = frame["state"].to_numpy()[self._starts]
        start_zone = frame["start_zone"].to_numpy()[self._starts]
        start_act = frame["start_act"].to_numpy()[self._starts]
        first_episode = [int(np.argmax(self._episode_level == k)) for k in range(order.size)]
        self.level_choices = tuple((str(games[e]), str(states[e]), f"zone={int(start_zone[e])},act={int(start_act[e])}")
                                   for e in first_episode)
        self._row_level = np.repeat(self._episode_level, self._lengths).astype(np.intp)
        self._start_x = steps.start_x.astype(np.int64)
        self._max_start = np.zeros(order.size, np.int64)
        np.maximum.at(self._max_start, self._episode_level, self._start_x[self._starts])
        self._games, self._states = games, states
        self._episode_ids = frame["episode_id"].to_numpy()[self._starts]
        self._steps0 = steps
        outcomes = episode_outcomes(frame)["outcome"].to_numpy()
        if outcomes.size != self._starts.size:
            raise FrameError("the recording's episodes are not contiguous: sort its rows by episode_id and t")
        self._outcomes = outcomes
        self._tables[edits] = self._table(steps)

    @property
    def steps(self) -> int:
        """Timesteps of the data."""
        return len(self._steps0)

    @staticmethod
    def level_table(edits=()) -> dict[str, dict[str, int]]:
        """``{game: {"zone=Z,act=A": end_x}}``: the installed scripts' tables with ``edits`` applied.

        Examples
        --------
        >>> t = ContestSession.level_table((("SonicTheHedgehog-Genesis-v0", "zone=0,act=0", 5000),))
        >>> t["SonicTheHedgehog-Genesis-v0"]["zone=0,act=0"]
        5000
        """
        table = {game: dict(installed_table(game)) for game in SONIC_GAMES}
        for game, key, end in levels_tuple(edits):
            table[game][key] = end
        return table

    def _level_ends(self, edits: tuple) -> np.ndarray:
        """The end x of each level of the data in the table ``edits`` gives (0 where the table lacks it)."""
        codes, max_x = level_codes(self.level_table(edits))
        at = np.minimum(np.searchsorted(codes, self._level_codes), max(codes.size - 1, 0))
        found = codes[at] == self._level_codes if codes.size else np.zeros(self._level_codes.size, bool)
        return np.where(found, max_x[at] if codes.size else 0, 0)

    def _table(self, steps: ContestSteps) -> _Table:
        """Where each episode first reaches its level's end, as the contest kernel decides it.

        The probe runs the kernel with scale 1, a bonus of 10^6 that does not fall (frame limit 2^31 - 1)
        and ``backtracking``: an unfinished step earns at most 1, a finished one more than 9 * 10^5.
        """
        probe, done = contest_rewards(steps, scale=1.0, bonus=_PROBE_BONUS, frame_limit=_PROBE_LIMIT,
                                      backtracking=True)
        n = len(steps)
        index = np.arange(n)
        finish_row = np.minimum.reduceat(np.where(probe > 2.0, index, n), self._starts)
        end_row = np.minimum.reduceat(np.where(done, index, n), self._starts)
        keep = None
        if (end_row < self._lasts).any():  # the contest ends some episode before the recording does
            keep = index <= np.repeat(np.minimum(end_row, self._lasts), self._lengths)
        return _Table(steps, finish_row, end_row, keep)

    def _steps_for(self, edits: tuple) -> _Table:
        kept = self._tables.get(edits)
        if kept is None:
            ends = self._level_ends(edits)
            end_x = (ends[self._row_level] - self._start_x).astype(np.float64)
            kept = self._table(dataclasses.replace(self._steps0, end_x=end_x))
            if len(self._tables) >= _TABLES_KEPT:
                self._tables.pop(next(iter(self._tables)))
            self._tables[edits] = kept
        return kept

    # -- parameters -------------------------------------------------------------------
    def _validate(self, params: dict, changes: dict) -> dict:
        p = ContestParams(scale=params["scale"], bonus=params["bonus"], frame_limit=params["frame_limit"],
                          scaler=params["scaler"], backtracking=params["backtracking"])
        params.update(scale=p.scale, bonus=p.bonus, frame_limit=p.frame_limit, scaler=p.scaler,
                      backtracking=p.backtracking)
        edits = levels_tuple(params["levels"])
        ends = self._level_ends(edits)
        for k, (game, state, key) in enumerate(self.level_choices):
            if ends[k] <= self._max_start[k]:
                name = f"levels[{game!r}][{key!r}]"
                if ends[k] == 0:
                    raise ParameterError(name, f"should be in the level table: the data plays {state} there",
                                         None)
                raise ParameterError(name, f"should be beyond every start x of its episodes (the largest is "
                                     f"{int(self._max_start[k])}), or progress divides by <= 0", int(ends[k]))
        params["levels"] = edits
        return params

    def set_level_end(self, game: str, level: str, end_x) -> None:
        """Set one level's end x (``level_max_x``); None puts back the installed script's.

        Parameters
        ----------
        game : str
            A contest game (``SonicTheHedgehog-Genesis-v0``...).
        level : str
            ``"zone=Z,act=A"``, or the state name the data plays it from (``GreenHillZone.Act1``).
        end_x : int, str or None
            A positive integer (text is read as :func:`~rewardlab.sessions.parse_number` reads it).

        Examples
        --------
        >>> s.set_level_end("SonicTheHedgehog-Genesis-v0", "GreenHillZone.Act1", 6000)  # doctest: +SKIP
        """
        key = self.level_key(game, level)
        edits = [row for row in self._params["levels"] if (row[0], row[1]) != (game, key)]
        if end_x is not None:
            end_x = parse_number(f"levels[{game!r}][{key!r}]", end_x, integer=True)
            script = installed_table(game).get(key)
            if script is None or int(end_x) != script:
                edits.append((game, key, end_x))
        self.update(levels=tuple(edits))

    def level_key(self, game: str, level: str) -> str:
        """``"zone=Z,act=A"`` of ``level`` (that key itself, or a state name of the data's ``game``).

        Examples
        --------
        >>> s.level_key("SonicTheHedgehog-Genesis-v0", "GreenHillZone.Act1")  # doctest: +SKIP
        'zone=0,act=0'
        """
        if game not in SONIC_GAMES:
            raise ParameterError("game", "should be one of the contest games " + ", ".join(SONIC_GAMES), game)
        for g, state, key in self.level_choices:
            if g == game and level == state:
                return key
        if not isinstance(level, str) or not level.startswith("zone="):
            states = ", ".join(s for g, s, _ in self.level_choices if g == game) or "none"
            raise ParameterError("level", f"should be 'zone=Z,act=A' or a state the data plays in {game} "
                                 f"({states})", level)
        zone, act = parse_level_key(level)
        return f"zone={zone},act={act}"

    def family(self, params: dict | None = None) -> ContestFamily:
        """The contest family with the session's parameters (or ``params``).

        Examples
        --------
        >>> s.family().params.scale  # doctest: +SKIP
        9000.0
        """
        p = self._params if params is None else params
        table = () if not p["levels"] else levels_tuple(self.level_table(p["levels"]))
        return ContestFamily(ContestParams(scale=p["scale"], bonus=p["bonus"], frame_limit=p["frame_limit"],
                                           scaler=p["scaler"], backtracking=p["backtracking"], levels=table))

    # -- results --------------------------------------------------------------------------
    def _compute(self) -> ContestResults:
        p = self._params
        kept = self._steps_for(p["levels"])
        steps, starts = kept.steps, self._starts
        common = dict(scale=p["scale"], bonus=p["bonus"], frame_limit=p["frame_limit"])
        plain, done = contest_rewards(steps, **common)
        back, _ = contest_rewards(steps, backtracking=True, **common)
        live = next(k for k, v in OPTION_VARIANTS.items() if v == (p["scaler"], p["backtracking"]))
        # the returns run up to the contest's end (0.0 after it leaves a compensated sum as it is); the kernel
        # applies RewardScaler last, so the scaled rewards are these times SCALER, bit for bit
        base = {"no options": plain, "backtracking": back}
        if kept.keep is not None:
            base = {k: np.where(kept.keep, v, 0.0) for k, v in base.items()}
        cut = {"no options": base["no options"], "scaler": base["no options"] * SCALER,
               "backtracking": base["backtracking"], "scaler + backtracking": base["backtracking"] * SCALER}
        variants = {k: segment_sums(v, starts) for k, v in cut.items()}
        reward = plain if live == "no options" else back if live == "backtracking" else \
            (plain if live == "scaler" else back) * SCALER
        returns = variants[live]
        n = len(steps)
        finish_row, end_rows = kept.finish_row, kept.end_row
        finished = (finish_row < n) & (finish_row <= end_rows)  # the end reached before anything else ends it
        at = finish_row[finished]
        bonus = np.zeros(starts.size)
        if at.size:  # the finishing step's reward, less the same step's reward without the bonus
            sub = ContestSteps(**{f.name: getattr(steps, f.name)[at] for f in dataclasses.fields(steps)})
            without, _ = contest_rewards(sub, **{**common, "bonus": 0.0}, scaler=p["scaler"],
                                         backtracking=p["backtracking"])
            bonus[finished] = reward[at] - without
        # ends behind the furthest point it reached: AllowBacktracking pays the furthest progress instead
        backtracks = variants["backtracking"] - variants["no options"] > _BEHIND * p["scale"]
        episodes = self._episode_table(finished, finish_row, bonus, end_rows, backtracks, returns, steps)
        return ContestResults(family=self.family(), reward=reward, done=done, returns=returns, variants=variants,
                              episodes=episodes, levels=self._level_table(finished, returns),
                              options=self._options_table(episodes, variants, returns))

    def _episode_table(self, finished, finish_row, bonus, end_rows, backtracks, returns, steps) -> pl.DataFrame:
        starts, n = self._starts, len(steps)
        at = np.minimum(finish_row, n - 1)
        return pl.DataFrame({
            "episode": np.arange(starts.size, dtype=np.int64),
            "episode_id": self._episode_ids,
            "game": pl.Series(self._games.astype(str), dtype=pl.String),
            "state": pl.Series(self._states.astype(str), dtype=pl.String),
            "level": [self.level_choices[k][2] for k in self._episode_level],
            "steps": self._lengths.astype(np.int64),
            "outcome": pl.Series(self._outcomes.astype(str), dtype=pl.String),
            "finished": finished,
            "finish_step": with_nulls(finish_row - starts, ~finished),
            "finish_frame": with_nulls(steps.next_frame[at], ~finished),
            "bonus": bonus,
            "contest_end": with_nulls(end_rows - starts, end_rows >= n),
            "ends_early": (end_rows < self._lasts),
            "backtracks": backtracks,
            "return": returns,
        })

    def _level_table(self, finished, returns) -> pl.DataFrame:
        edits = self._params["levels"]
        ends = self._level_ends(edits)
        k = self._episode_level
        size = len(self.level_choices)

        def count(mask) -> np.ndarray:
            return np.bincount(k[mask], minlength=size).astype(np.int64)

        episodes = count(np.ones(k.size, bool))
        done = count(finished)
        script = []
        for game, _, key in self.level_choices:
            script.append(installed_table(game).get(key))
        sums = np.bincount(k, weights=returns, minlength=size)
        return pl.DataFrame({
            "game": [g for g, _, _ in self.level_choices], "state": [s for _, s, _ in self.level_choices],
            "level": [key for _, _, key in self.level_choices], "end_x": ends.astype(np.int64),
            "script_end_x": pl.Series(script, dtype=pl.Int64), "episodes": episodes, "finished": done,
            "recorded_finished": count(self._outcomes == "finished"),
            "lost_life": count(~finished & (self._outcomes == "lost_life")),
            "timed_out": count(~finished & (self._outcomes == "timed_out")),
            "stage": count(~finished & (self._outcomes == "stage")),
            "other": count(~finished & ~np.isin(self._outcomes, ("lost_life", "timed_out", "stage"))),
            "finish_rate": done / episodes, "mean_return": sums / episodes,
        })

    def _options_table(self, episodes: pl.DataFrame, variants: dict, returns: np.ndarray) -> pl.DataFrame:
        finished = episodes["finished"].to_numpy()
        groups = {"all": np.ones(finished.size, bool), "finished": finished,
                  "lost a life": ~finished & (self._outcomes == "lost_life"),
                  "timed out": ~finished & (self._outcomes == "timed_out"),
                  "bonus/special stage": ~finished & (self._outcomes == "stage"),
                  "other": ~finished & ~np.isin(self._outcomes, ("lost_life", "timed_out", "stage")),
                  "backtracks": episodes["backtracks"].to_numpy()}
        rows = {"group": [], "episodes": [], "live": [], **{k: [] for k in OPTION_VARIANTS}}
        for group in OUTCOME_GROUPS:
            mask = groups[group]
            if not mask.any():
                continue
            rows["group"].append(group)
            rows["episodes"].append(int(mask.sum()))
            rows["live"].append(float(returns[mask].mean()))
            for name, values in variants.items():
                rows[name].append(float(values[mask].mean()))
        return pl.DataFrame(rows, schema={"group": pl.String, "episodes": pl.Int64, "live": pl.Float64,
                                          **{k: pl.Float64 for k in OPTION_VARIANTS}})

    def _nonfinite(self, r: ContestResults) -> list[str]:
        return self._finite_problems([("a step's reward", r.reward), ("an episode's return", r.returns)])

    def _summary(self, r: ContestResults) -> dict:
        """Finish rate, mean return (all and per outcome), mean time bonus of finished episodes.

        Examples
        --------
        >>> sorted(s._summary(s.results))[:2]  # doctest: +SKIP
        ['finish rate', 'mean bonus, finished']
        """
        options = {row["group"]: row["live"] for row in r.options.iter_rows(named=True)}
        e = r.episodes
        finished = e["finished"].to_numpy()
        return {"episodes": e.height, "finish rate": float(finished.mean()),
                "mean return": options.get("all"), "return std": float(np.std(r.returns)),
                "mean return, finished": options.get("finished"),
                "mean return, lost a life": options.get("lost a life"),
                "mean return, timed out": options.get("timed out"),
                "mean return, backtracks": options.get("backtracks"),
                "mean bonus, finished": float(e["bonus"].to_numpy()[finished].mean()) if finished.any() else None}

    # -- drill-down ---------------------------------------------------------------------------
    def episode(self, episode) -> EpisodeDetail:
        """One episode step by step: the contest reward with the session's parameters and the recorded one.

        Parameters
        ----------
        episode : int or dict
            The episode's index (``results.episodes["episode"]``), or ``{"episode_id": ...}`` (a row of
            ``results.episodes`` works too).

        Returns
        -------
        EpisodeDetail
            Candidates ``contest`` (and ``recorded`` where the data has it); the steps also show ``x``,
            ``lives`` and ``frame``.  Its steps run up to the contest's end (``ends_early``: the recording's
            later steps are left out, as in :attr:`ContestResults.returns`).

        Examples
        --------
        >>> s.episode(0).returns["contest"] == s.results.returns[0]  # doctest: +SKIP
        True
        """
        index = self._episode_index(episode)
        r = self.results
        end = int(r.episodes["contest_end"][index]) if r.episodes["ends_early"][index] else int(self._lasts[index])
        lo, hi = int(self._starts[index]), end + 1
        part = self.frame.slice(lo, hi - lo)
        columns = {"episode_id": part["episode_id"], "t": part["t"], "x": part["x"], "lives": part["lives"],
                   "frame": part["frame"], "terminated": part["terminated"], "truncated": part["truncated"],
                   "reward_contest": r.reward[lo:hi], "done_contest": r.done[lo:hi]}
        rewards = ["contest"]
        if "reward_recorded" in part.columns:
            columns["reward_recorded"] = part["reward_recorded"]
            rewards.append("recorded")
        spec = FrameSpec(name="retro_contest_episode", episode=("episode_id",), step="t", terminated="terminated",
                         truncated="truncated")
        return episode_detail(pl.DataFrame(columns), 0, rewards=rewards, spec=spec, columns=("x", "lives", "frame"))

    def _episode_index(self, episode) -> int:
        count = self._starts.size
        if isinstance(episode, dict):
            if "episode" in episode and "episode_id" not in episode:
                episode = episode["episode"]
            elif "episode_id" in episode:
                hits = np.flatnonzero(self._episode_ids == episode["episode_id"])
                if not hits.size:
                    raise ParameterError("episode", "should name an episode_id of the data", episode["episode_id"])
                return int(hits[0])
        if isinstance(episode, (bool, np.bool_)) or not isinstance(episode, (int, np.integer)) \
                or not 0 <= episode < count:
            raise ParameterError("episode", f"should be an episode index in [0, {count - 1}] or "
                                 "{'episode_id': ...}", episode)
        return int(episode)

    def episode_near(self, frame: float, bonus: float) -> int:
        """The finished episode whose (finishing frame, bonus) is nearest to a point of the bonus plot.

        Distances are measured in units of each axis' range, as the eye sees them.

        Examples
        --------
        >>> s.episode_near(9000, 500)  # doctest: +SKIP
        3
        """
        e = self.results.episodes.filter(pl.col("finished"))
        if e.height == 0:
            raise ParameterError("point", "should be near a finished episode (none finishes)", (frame, bonus))
        fx = e["finish_frame"].to_numpy().astype(np.float64)
        by = e["bonus"].to_numpy()
        span_x = max(float(np.ptp(fx)), 1.0)
        span_y = max(float(np.ptp(by)), 1e-12)
        d = ((fx - float(frame)) / span_x) ** 2 + ((by - float(bonus)) / span_y) ** 2
        return int(e["episode"][int(np.argmin(d))])

    # -- saved state --------------------------------------------------------------------------
    def data_fingerprint(self) -> str:
        """A fingerprint of the columns the contest reward reads (the states, their finals, the episode columns).

        Examples
        --------
        >>> s.data_fingerprint().startswith("blake2b")  # doctest: +SKIP
        True
        """
        if self._fingerprint is None:
            finals = [s.final for s in self.spec.states if s.name in STATE_VARIABLES and s.final]
            names = ["episode_id", "t", "game", *STATE_VARIABLES, *finals, *EPISODE_COLUMNS, "terminated",
                     "truncated"]
            self._fingerprint = fingerprint_columns(self.frame, [c for c in names if c in self.frame.columns])
        return self._fingerprint

    def _data_rows(self) -> int:
        return self.frame.height

    def _state_parameters(self) -> dict:
        p = dict(self._params)
        p["levels"] = [list(row) for row in p["levels"]]
        return p

    # -- export -------------------------------------------------------------------------------
    def export(self, path, *, overwrite: bool = False, check: bool = True, source: str | None = None,
               progress=None, cancel=None) -> ContestExport:
        """Write the contest plug-in with the session's parameters, after its round trip on the session's data.

        :func:`~rewardlab.domains.retro.family.export_contest_plugin`: the file is applied to the data in
        every batch mode and compared bit for bit with the family's rewards, and check-plugin runs on
        whole episodes; nothing is written unless both pass (``check=False`` skips them).

        Parameters
        ----------
        path : str or Path
            The ``.py`` file.
        overwrite : bool
        check : bool
        source : str, optional
            A note for the file's header (default: the saved state file, or the data's path).
        progress : callable, optional
            ``progress(fraction, message)``.
        cancel : CancelToken, optional
            Cancelling before the round trip starts raises
            :class:`~rewardlab.core.errors.ExportCancelled`; nothing is written.

        Returns
        -------
        ContestExport

        Examples
        --------
        >>> print(s.export("contest.py"))  # doctest: +SKIP
        """
        token, report = cancel_token(cancel), progress_callback(progress)
        if not isinstance(check, bool):
            raise ParameterError("check", "should be True or False", check)
        family = self.results.family
        note = source if source is not None else (self.state_note or self.data_path)
        token.check(path, "the start")
        report(0.05, "checking the file round trip in every batch mode, then writing it" if check else "writing")
        result = export_contest_plugin(family, Path(path), data=self.frame if check else None, overwrite=overwrite,
                                       source=note, progress=False)
        report(1.0, f"wrote {path}")
        return result
