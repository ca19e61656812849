"""The ranking reward tuner's session: a rank vector, the points term, constants, export.

Its results are :mod:`rewardlab.sessions.ranking_results`, a dataset folder's
games :mod:`rewardlab.sessions.ranking_folder`, the export's round trip
:mod:`rewardlab.sessions.ranking_export`.

Examples
--------
>>> s = RankingTuningSession("data/sample.tsv.gz", preset="mleague")  # doctest: +SKIP
>>> s.results.expected_reward  # doctest: +SKIP
"""

from __future__ import annotations

import dataclasses
import math
import time
from pathlib import Path

import numpy as np
import polars as pl

from rewardlab.sources.kanachan import schema as S
from rewardlab.core.errors import FrameError, ParameterError, check_choice, check_int
from rewardlab.core.fronts import text_of
from rewardlab.export import check_constants_fit, plugin_target, render_plugin, write_text
from rewardlab.domains.mahjong.families import (
    Provenance, Ranking, RankingParams, RankingPoints, RankingPointsParams, prepare_frame, preset_names,
    ranking_preset,
)
from rewardlab.domains.mahjong.ranking import RankTable
from rewardlab.domains.mahjong.rules import PLACES
from rewardlab.domains.mahjong.ranking_parts import tuning_tables_of_dataset
from rewardlab.analysis.episodes import EpisodeDetail
from rewardlab.sessions.base import Param, Session
from rewardlab.sessions.episodes import open_episode
from rewardlab.sessions.ranking_folder import FolderGames
from rewardlab.sessions.ranking_results import RankingResults, ranking_results
from rewardlab.sources.registry import spec_of
from rewardlab.sessions.inputs import (
    CancelToken, base_columns, cancel_token, check_bool, load_frame, parse_number, progress_callback, source_paths,
)
from rewardlab.sessions.ranking_export import check_ranking_export, header_of
from rewardlab.sessions.roundtrip import CHECK_ROWS, ExportResult
from rewardlab.sources.datasets import PartedDataset, is_dataset_folder

__all__ = ["RankingResults", "RankingTuningSession"]


class RankingTuningSession(Session):
    """Tune an end-of-game ranking reward (optionally plus points) on a dataset.

    The dataset is read once: final ranks and scores
    (:class:`rewardlab.domains.mahjong.ranking.RankTable` and the families'
    :class:`~rewardlab.domains.mahjong.families.PreparedFrame`).  Every parameter change is
    then a gather over episodes plus a few reductions, not a pass over the
    transitions (see ``benchmarks/bench_sessions.py``).

    Parameters
    ----------
    data : polars.DataFrame, LazyFrame, or path(s)
        The common frame or a dataset path (annotation files or a converted
        dataset), complete episodes in episode order.  A dataset *folder*
        (``rewardlab convert ... --out FOLDER``) is read part by part and
        never held whole: the session keeps per-game arrays only (about 50
        bytes a game), a game's steps are read from its part when it is
        opened, and :meth:`export` compares the file with the tuner part by
        part.
    preset : str
        Initial preset: any name of :func:`rewardlab.domains.mahjong.families.preset_names`
        ``("ranking")`` (ranking presets, and ranking + points presets).
    constants : {"data", "seed", "none"}
        Initial normalization constants: measured on the data (mean and
        population std over the end-of-game steps) and refitted after every
        change (``auto_constants``; set it False to freeze them), the wiki's
        recipe (vector mean and sample std; pure ranking vectors only), or
        none (0, 1).

    Notes
    -----
    Constants fitted (on data or by the wiki's recipe) for other parameters
    than the current ones are *stale* (:attr:`constants_stale`):
    :meth:`export` refuses them unless ``keep_constants=True``, and the
    file's header says whether the constants were fitted for exactly the
    exported parameters.

    Examples
    --------
    >>> s = RankingTuningSession("data/sample.tsv.gz", preset="tenhou_tokujo_6dan")  # doctest: +SKIP
    >>> s.set_rank_value(3, -150.0)  # doctest: +SKIP
    >>> s.results.raw_moments.mean  # doctest: +SKIP
    >>> s.constants_from_data()  # doctest: +SKIP
    >>> s.export("my_reward.py").ok  # doctest: +SKIP
    True
    """

    vector = Param("Raw reward by final rank: 4 numbers, entry 0 for first place.")
    points = Param("Add the points term (score - offset) // divisor (the ranking + points family).")
    offset = Param("Points term: subtracted from the final score (integer).")
    divisor = Param("Points term: the score minus offset is floor-divided by it (integer >= 1).")
    mean = Param("Normalization: subtracted from the raw reward (typing it marks the constants typed).")
    std = Param("Normalization: divides the raw reward minus mean; > 0.")
    auto_constants = Param("Refit mean and std on the data after every change (then after-normalization "
                            "statistics stay at mean 0, std 1).")
    _param_names = ("vector", "points", "offset", "divisor", "mean", "std", "auto_constants")
    _numeric = {"offset": "int", "divisor": "int", "mean": "float", "std": "float"}
    state_kind = "ranking"

    def __init__(self, data, *, preset: str = "tenhou_tokujo_6dan", constants: str = "data"):
        super().__init__()
        check_choice("constants", constants, ("data", "seed", "none"))
        check_choice("preset", preset, preset_names("ranking"))
        self.data_paths = source_paths(data)
        #: The dataset folder the session reads part by part, or None when it holds the whole frame.
        self.dataset: PartedDataset | None = None
        if isinstance(data, (str, Path)) and is_dataset_folder(data):
            self.dataset = PartedDataset(data)
            self.data_path, self.frame = str(data), None
            self.prepared, self.table = tuning_tables_of_dataset(self.dataset)
        else:
            frame, source = load_frame(data)
            self.data_path = source
            self.frame = base_columns(frame)
            prepared = prepare_frame(self.frame)
            if source is not None:
                prepared = dataclasses.replace(prepared, source=source)
            self.prepared = prepared
            self.table = RankTable.from_frame(self.frame)
        #: A dataset folder's games (keys read on demand, a game's steps from its part), or None for a frame.
        self._games = None if self.dataset is None else FolderGames(self.dataset, self.table)
        prepared = self.prepared
        if not np.array_equal(self.table.rank, prepared.rank):  # defensive: two readers of one frame
            raise FrameError("the rank table and the prepared frame disagree on final ranks")
        self._probabilities = self.table.probabilities
        self._counts = self.table.counts
        self._params = {"mean": 0.0, "std": 1.0, "auto_constants": constants == "data",
                        **self._preset_params(preset)}
        self._family, _ = self._build(self._params, Provenance.default())
        if constants == "data":
            self._family = self._family.with_constants_from(self.prepared)
        elif constants == "seed":
            self._family = self._seeded(self._family)
        self._adopt_constants()
        self._refresh({"preset": preset})

    # -- presets -----------------------------------------------------------------
    @staticmethod
    def preset_names() -> list[str]:
        """Every preset the tuner offers (ranking, then ranking + points).

        Examples
        --------
        >>> "mleague" in RankingTuningSession.preset_names()
        True
        """
        return preset_names("ranking")

    @staticmethod
    def _preset_params(name: str) -> dict:
        fam = ranking_preset(name)
        if isinstance(fam, RankingPoints):
            return {"vector": fam.params.vector, "points": True, "offset": fam.params.offset,
                    "divisor": fam.params.divisor}
        return {"vector": fam.params.vector, "points": False, "offset": 25000, "divisor": 1000}

    @property
    def preset(self) -> str | None:
        """The preset the current parameters equal, or None (custom); assign a name to apply one.

        Examples
        --------
        >>> s.preset = "mleague"  # doctest: +SKIP
        """
        for name in self.preset_names():
            p = self._preset_params(name)
            if p["vector"] == self.vector and p["points"] == self.points and (
                    not p["points"] or (p["offset"], p["divisor"]) == (self.offset, self.divisor)):
                return name
        return None

    @preset.setter
    def preset(self, name: str) -> None:
        self.apply_preset(name)

    def apply_preset(self, name: str) -> None:
        """Set the vector (and points term) of a preset; the constants are kept unless auto.

        Examples
        --------
        >>> s.apply_preset("top_two")  # doctest: +SKIP
        """
        check_choice("preset", name, self.preset_names())
        self.update(**self._preset_params(name))

    def set_rank_value(self, rank: int, value: float) -> None:
        """Set one entry of the vector (``rank`` 0 = first place).

        Examples
        --------
        >>> s.set_rank_value(0, 100.0)  # doctest: +SKIP
        """
        rank = check_int("rank", rank, low=0, high=S.NUM_SEATS - 1,
                         rule=f"should be an integer 0-{S.NUM_SEATS - 1} (0 = first place)")
        vector = list(self.vector)
        vector[rank] = parse_number(f"vector[{rank}]", value)
        self.update(vector=tuple(vector))

    # -- the family --------------------------------------------------------------
    @property
    def family(self):
        """The reward family with the current parameters and constants (what :meth:`export` writes)."""
        return self._family

    @property
    def provenance(self):
        """Where the current mean and std came from (:class:`rewardlab.domains.mahjong.families.Provenance`)."""
        return self._family.params.provenance

    @property
    def constants_stale(self) -> bool:
        """True when the constants were fitted (data or the wiki's recipe) for other parameters than now.

        See :attr:`rewardlab.domains.mahjong.families.RewardFamily.constants_stale`; :meth:`export`
        refuses stale constants unless ``keep_constants=True``.
        """
        return self._family.constants_stale

    def export_blocker(self, *, keep_constants: bool = False) -> str | None:
        """Why :meth:`export` would refuse the current state, or None when it may export.

        Examples
        --------
        >>> s.set_rank_value(0, 100.0); s.auto_constants = False  # doctest: +SKIP
        >>> s.export_blocker()  # doctest: +SKIP
        '`constants` should be fitted for the exported parameters ...'
        """
        bad = self._nonfinite(self.results)
        if bad:
            return "the results are not finite: " + "; ".join(bad)
        try:  # the export's own rule, so the button and the file agree
            check_constants_fit(self._family, keep_constants=keep_constants)
        except ParameterError as exc:
            return text_of(exc)  # its remedy terms kept: the tuner words them for widgets
        return None

    def _build(self, params: dict, provenance):
        if params["points"]:
            pp = RankingPointsParams(vector=params["vector"], offset=params["offset"], divisor=params["divisor"],
                                     mean=params["mean"], std=params["std"], provenance=provenance)
            return RankingPoints(pp), pp
        family = Ranking(RankingParams(vector=params["vector"], mean=params["mean"], std=params["std"],
                                       provenance=provenance))
        # Validate the points term even when it is off, with the family's own rules (its range alone).
        pp = RankingPointsParams(vector=(0.0,) * S.NUM_SEATS, offset=params["offset"], divisor=params["divisor"])
        return family, pp

    def _seeded(self, family):
        if not isinstance(family, Ranking):
            raise ParameterError("points", "should be off for the wiki's recipe (the wiki's example normalizes a "
                                 "pure rank vector by its mean and sample std)", True,
                                 hint="Use constants from data instead.")
        return family.with_seed_constants()

    def _adopt_constants(self) -> None:
        """Copy the family's constants into the parameters (their provenance says what they were fitted for)."""
        p = self._family.params
        self._params["mean"], self._params["std"] = p.mean, p.std

    def _validate(self, params: dict, changes: dict) -> dict:
        params["points"] = check_bool("points", params["points"])
        typed = "mean" in changes or "std" in changes
        if typed and "auto_constants" not in changes:
            params["auto_constants"] = False  # typing a constant ends the automatic refit
        params["auto_constants"] = check_bool("auto_constants", params["auto_constants"])
        provenance = Provenance.typed() if typed else self.provenance
        family, points_params = self._build(params, provenance)
        params["offset"], params["divisor"] = points_params.offset, points_params.divisor
        if params["auto_constants"]:
            family = family.with_constants_from(self.prepared)
        params["vector"] = family.params.vector
        self._family = family
        p = family.params
        params["mean"], params["std"] = p.mean, p.std
        return params

    # -- constants ------------------------------------------------------------------
    def constants_from_data(self) -> None:
        """Fit mean and std on the data: population mean and std of the raw reward over the end-of-game steps.

        Examples
        --------
        >>> s.constants_from_data()  # doctest: +SKIP
        >>> round(s.results.reward_moments.std, 12)  # doctest: +SKIP
        1.0
        """
        with self._change({"constants": "from data"}):
            self._family = self._family.with_constants_from(self.prepared)
            self._adopt_constants()

    def seed_constants(self) -> None:
        """The wiki's recipe (kanachan's wiki ranking example): vector mean and **sample** std (std ~0.87 on complete games).

        Ends the automatic refit from data (``auto_constants``).

        Examples
        --------
        >>> s.seed_constants()  # doctest: +SKIP
        """
        with self._change({"constants": "wiki's recipe"}):
            self._family = self._seeded(self._family)
            self._adopt_constants()
            self._params["auto_constants"] = False

    def reset_constants(self) -> None:
        """No normalization: mean 0, std 1.

        Examples
        --------
        >>> s.reset_constants()  # doctest: +SKIP
        """
        with self._change({"constants": "none"}):
            self._family = self._family.with_constants(0.0, 1.0, provenance=Provenance.default())
            self._adopt_constants()
            self._params["auto_constants"] = False

    # -- recompute -------------------------------------------------------------------
    def _compute(self) -> RankingResults:
        return ranking_results(self._family, self.prepared, self.table, counts=self._counts,
                               probabilities=self._probabilities)

    def _nonfinite(self, r: RankingResults) -> list[str]:
        present = r.rank_counts > 0  # an absent rank's mean is NaN by definition
        return self._finite_problems([
            ("the raw reward", r.raw), ("the reward", r.reward),
            ("the mean of the raw reward (end-of-game steps)", r.raw_moments.mean),
            ("the std of the raw reward (end-of-game steps)", r.raw_moments.std),
            ("the mean of the reward (end-of-game steps)", r.reward_moments.mean),
            ("the std of the reward (end-of-game steps)", r.reward_moments.std),
            ("the mean of the raw reward (all steps)", r.raw_moments_all.mean),
            ("the std of the raw reward (all steps)", r.raw_moments_all.std),
            ("the mean of the reward (all steps)", r.reward_moments_all.mean),
            ("the std of the reward (all steps)", r.reward_moments_all.std),
            ("the mean raw reward by final rank", r.raw_mean_by_rank[present]),
            ("the mean reward by final rank", r.mean_by_rank[present]),
            ("the expected raw reward", r.expected_raw), ("the expected reward", r.expected_reward),
            ("the constants", (r.family.params.mean, r.family.params.std)),
        ])

    def step_rewards(self) -> np.ndarray:
        """The reward of every step (``[n_rows]``, zeros off the end of the game).

        Not for a dataset folder (it would hold a number per transition): use
        :attr:`results` (``reward``: one value per game) there.

        Examples
        --------
        >>> s.step_rewards().shape  # doctest: +SKIP
        """
        if self.dataset is not None:
            raise ParameterError("data", "should be a frame for step_rewards() (a dataset folder's per-step "
                                 "rewards are not held in memory)", str(self.dataset.folder),
                                 hint="Use session.results.reward: the reward of each game's last step "
                                 "(every other step's is 0).")
        return self.table.step_rewards(self.results.reward)

    def episode(self, episode, *, name: str = "ranking") -> EpisodeDetail:
        """One player's game step by step under the current reward (as ``reward_<name>``), with scores and ranks per round.

        Parameters
        ----------
        episode : int or dict
            The game's index in data order, or ``{"game_id": ..., "seat": ...}``.
        name : str
            The candidate's name in the detail.

        Examples
        --------
        >>> s.episode({"game_id": gid, "seat": 0}).outcome["rank"]  # doctest: +SKIP
        """
        if self.dataset is None:
            frame = self.frame.with_columns(pl.Series(f"reward_{name}", self.step_rewards()),
                                            pl.col(S.END_OF_GAME).alias(f"done_{name}"))
            return open_episode(frame, episode, rewards=(name,), spec=spec_of(frame))
        return self._games.episode(episode, self.results.reward, name=name)

    def episode_of_rank(self, rank: int) -> dict:
        """The key of a typical game ending in final place ``rank`` (a click on that bar): reward nearest the bar.

        Parameters
        ----------
        rank : int
            0 for first place ... 3 for fourth, as the by-rank plot's x axis.

        Returns
        -------
        dict
            ``{"game_id": ..., "seat": ...}`` for :meth:`episode`; of the
            games whose reward is nearest the rank's mean, the first in data order.

        Examples
        --------
        >>> s.episode(s.episode_of_rank(3)).outcome["rank"]  # doctest: +SKIP
        3
        """
        rank = check_int("rank", rank, low=0, high=S.NUM_SEATS - 1,
                         rule=f"should be a final place 0 ... {S.NUM_SEATS - 1} (0 is first)")
        at = np.flatnonzero(self.table.rank == rank)
        if at.size == 0:
            raise ParameterError("rank", "should be a place some game of the data ends in (none ends "
                                 f"{PLACES[rank]})", rank)
        r = self.results
        nearest = at[np.argmin(np.abs(r.reward[at] - r.mean_by_rank[rank]))]
        return self._episode_key(int(nearest))

    def episode_near_reward(self, reward: float) -> dict:
        """The key of the game whose end-of-game reward is nearest ``reward`` (a click on the histogram).

        Examples
        --------
        >>> s.episode(s.episode_near_reward(1.2))  # doctest: +SKIP
        """
        if isinstance(reward, (bool, np.bool_)) or not isinstance(reward, (int, float, np.number)) \
                or not math.isfinite(reward):
            raise ParameterError("reward", "should be a finite number (a point of the reward histogram)", reward)
        return self._episode_key(int(np.argmin(np.abs(self.results.reward - float(reward)))))

    def _episode_key(self, episode: int) -> dict:
        """Episode ``episode`` (data order, as :attr:`table`) as its key values."""
        row = int(self.table.row[episode])
        if self.dataset is None:
            return {k: self.frame[k][row] for k in spec_of(self.frame).episode}
        return self._games.key(episode)

    def _find_key(self, key: dict) -> int:
        """The index of the dataset folder's episode with ``key`` (reads the key columns of every part)."""
        return self._games.find(key)

    # -- undo, pins and saved state ------------------------------------------------------
    def _snapshot(self) -> dict:
        return {"params": dict(self._params), "family": self._family}

    def _restore(self, snapshot: dict) -> None:
        self._params = dict(snapshot["params"])
        self._family = snapshot["family"]

    @staticmethod
    def _same_state(a: dict, b: dict) -> bool:
        return a["params"] == b["params"] and type(a["family"]) is type(b["family"]) \
            and a["family"].params == b["family"].params

    def data_fingerprint(self) -> str:
        """The fingerprint of what the families read (:attr:`rewardlab.domains.mahjong.families.PreparedFrame.fingerprint`).

        Examples
        --------
        >>> s.data_fingerprint()  # doctest: +SKIP
        'sha256:...'
        """
        return self.prepared.fingerprint

    def _data_rows(self) -> int:
        return self.prepared.n_rows

    def _state_parameters(self) -> dict:
        return {k: self._params[k] for k in ("vector", "points", "offset", "divisor", "auto_constants")}

    def _state_constants(self) -> dict:
        p = self._family.params
        return {"mean": p.mean, "std": p.std, "provenance": dataclasses.asdict(p.provenance),
                "how": p.provenance.describe()}

    @classmethod
    def _from_state(cls, state, data, path, **options) -> "RankingTuningSession":
        options.setdefault("constants", "none")  # the saved constants replace them
        return super()._from_state(state, data, path, **options)

    def _apply_state(self, parameters: dict, constants) -> None:
        unknown = [k for k in parameters if k not in self._param_names]
        if unknown:
            raise ParameterError("parameter", "should be one of " + ", ".join(self._param_names), unknown[0])
        if constants is None:
            raise ParameterError("constants", "should hold mean, std and provenance", None)
        try:
            provenance = Provenance(**dict(constants["provenance"]))
        except TypeError as exc:  # a field Provenance does not have
            raise ParameterError("provenance", f"should hold Provenance's fields ({exc})",
                                 dict(constants["provenance"])) from None
        params = {**self._params, **parameters, "mean": constants["mean"], "std": constants["std"]}
        params["vector"] = tuple(params["vector"]) if isinstance(params["vector"], (list, tuple)) \
            else params["vector"]
        params["points"] = check_bool("points", params["points"])
        params["auto_constants"] = check_bool("auto_constants", params["auto_constants"])
        family, points_params = self._build(params, provenance)
        params["offset"], params["divisor"] = points_params.offset, points_params.divisor
        params["vector"] = family.params.vector
        params["mean"], params["std"] = family.params.mean, family.params.std
        self._family, self._params = family, params

    def _summary(self, r: RankingResults) -> dict:
        """Mean reward per final rank and the expected reward (normalized and raw), moments, constants."""
        out = {f"mean reward, {name} place": v for name, v in zip(PLACES, r.mean_by_rank)}
        out["expected reward"] = r.expected_reward
        out.update({f"mean raw reward, {name} place": v for name, v in zip(PLACES, r.raw_mean_by_rank)})
        out["expected raw reward"] = r.expected_raw
        a = r.reward_moments
        out.update({"reward mean (end-of-game steps)": a.mean, "reward std (end-of-game steps)": a.std,
                    "constant mean": r.family.params.mean, "constant std": r.family.params.std})
        return out

    # -- export ------------------------------------------------------------------------
    def export(self, path: str | Path, *, overwrite: bool = False, check: bool = True,
               source: str | None = None, keep_constants: bool = False, check_rows: int = CHECK_ROWS,
               progress=None, cancel: CancelToken | None = None) -> ExportResult:
        """Check the plug-in file round trip, then write it (nothing is written when anything fails).

        In order, each step before the next:

        1. the path is validated (empty, a folder, inside a file, existing
           without ``overwrite``: refused, naming the path as typed);
        2. the state is validated: no non-finite result, no constants fitted
           for other parameters unless ``keep_constants``;
        3. the text is rendered (every literal finite, every reward the file
           can give within range: :func:`rewardlab.export.render_plugin`);
        4. with ``check``, the text is written to a temporary file and checked
           by :func:`roundtrip_check` against what the session already holds
           (its prepared frame and its rewards): bit for bit on every row,
           check-plugin on whole games; a file that fails is not written
           (:class:`~rewardlab.core.errors.RoundTripError`);
        5. the file is written atomically.

        The session is read once at the start, so changing parameters while an
        export runs (e.g. in a widget's background thread) does not change
        what is exported.

        Parameters
        ----------
        path : str or Path
            The ``.py`` file to write.
        overwrite : bool
            Replace an existing file (otherwise
            :class:`~rewardlab.core.errors.OutputExistsError`, nothing written).
        check : bool
            Run the round trip before writing.
        source : str, optional
            A note for the file's header.
        keep_constants : bool
            Export constants fitted for other parameters as they are (the
            header says so).
        check_rows : int
            Rows of whole games check-plugin runs on (see :func:`roundtrip_check`).
        progress : callable, optional
            ``progress(fraction, message)`` as the work advances.
        cancel : CancelToken, optional
            Cancelling raises :class:`~rewardlab.core.errors.ExportCancelled` at the
            next check point; nothing is written.

        Returns
        -------
        ExportResult

        Raises
        ------
        ParameterError, OutputExistsError, RoundTripError, ExportCancelled, ExportWriteError
            Each before anything is written (ExportWriteError: the write itself
            failed; the target is untouched).

        Examples
        --------
        >>> result = s.export("my_reward.py")  # doctest: +SKIP
        >>> result.ok  # doctest: +SKIP
        True
        """
        t0 = time.perf_counter()
        check = check_bool("check", check)
        overwrite = check_bool("overwrite", overwrite)
        keep_constants = check_bool("keep_constants", keep_constants)
        say = progress_callback(progress)
        token = cancel_token(cancel)
        target = plugin_target(path, overwrite=overwrite)
        shown = str(path)
        family, results = self._family, self.results  # one consistent state, whatever happens meanwhile
        bad = self._nonfinite(results)
        if bad:
            raise ParameterError("results", "should be finite to export", "; ".join(bad))
        text = render_plugin(family, source=source or "rewardlab RankingTuningSession",
                             keep_constants=keep_constants,
                             state=self.state_note)
        roundtrip = None
        if check:
            roundtrip = check_ranking_export(family, text, shown, frame=self.frame, dataset=self.dataset,
                                             prepared=self.prepared, table=self.table, reward=results.reward,
                                             check_rows=check_rows, progress=say, cancel=token)
        token.check(shown, "writing")
        write_text(target, text, overwrite=overwrite, shown=shown)
        say(1.0, f"wrote {shown}")
        return ExportResult(path=target, header=header_of(text), roundtrip=roundtrip,
                            seconds=time.perf_counter() - t0)
