"""The comparison session: candidate reward plug-ins side by side on one dataset.

The matrix shown (:data:`METRICS`) is a correlation of episode returns, their
Pearson distance ``sqrt((1 - pearson) / 2)`` (``"pearson_distance"``: not
shaping-invariant), or EPIC (``"epic"``: :func:`rewardlab.diagnostics.epic.epic_matrix`,
the distance of canonicalized rewards over recombined transitions, with its
standard error).  EPIC runs the plug-ins, so it is computed only when asked
(:meth:`ComparisonSession.compute_epic`) and kept per set of candidates; where
it cannot run (reward columns, a contract that cannot recombine transitions) the
board says why and shows the Pearson distance, titled as such.  The reward
diagnostics (:meth:`ComparisonSession.run_diagnostics`) keep their findings,
and :meth:`ComparisonSession.open_finding` opens a finding's episode.  EPIC and
the diagnostics live in :mod:`rewardlab.sessions.board_diagnostics`
(:class:`~rewardlab.sessions.board_diagnostics.BoardDiagnostics`, which the
session inherits); this module holds the session, its data and candidates, the
correlations and the drill-down into episodes.

Examples
--------
>>> s = ComparisonSession(frame, ["data/plugins/rank_top.py", "data/plugins/raw_points.py"])  # doctest: +SKIP
>>> s.results.comparison.pairs()  # doctest: +SKIP
>>> s.metric = "epic"; _ = s.compute_epic()  # doctest: +SKIP
>>> _ = s.run_diagnostics(); s.open_finding(0).detail  # doctest: +SKIP
"""

from __future__ import annotations

import dataclasses
from pathlib import Path

import numpy as np
import polars as pl

from rewardlab.core import columns
from rewardlab.core.spec import FrameSpec, keep_spec
from rewardlab.analysis.compare import (
    compare_rewards, episode_key_columns, episode_return_table, most_disagreeing_episodes,
)
from rewardlab.core.errors import FrameError, ParameterError, check_choice, check_int
from rewardlab.diagnostics.base import DiagnosisOptions
from rewardlab.diagnostics.epic import epic_matrix
from rewardlab.plugins import Plugin, apply_plugins, load_plugin
from rewardlab.plugins.loading import plugin_name
from rewardlab.plugins.manager_steps import trajectory_order
from rewardlab.plugins.managers import load_manager, manager_items
from rewardlab.plugins.batch_modes import BATCH_MODES
from rewardlab.analysis.episodes import EpisodeDetail, episode_keys
from rewardlab.sessions.base import Param, Session, check_fingerprint, saved_data
from rewardlab.sessions.board_diagnostics import METRIC_TITLES, METRICS, BoardDiagnostics, FindingEpisode
from rewardlab.sessions.episodes import open_episode
from rewardlab.sessions.inputs import (
    CancelToken, cancel_token, check_bool, load_frame, progress_callback, source_paths,
)
from rewardlab.sessions.fingerprints import ColumnsFingerprint, fingerprint_columns
from rewardlab.sessions.state import SavedState, read_state, shown_value, spec_columns, state_error
from rewardlab.analysis.episode_parts import SAMPLE_LIMIT, StepValues, concat_part_tables, needed_columns
from rewardlab.sources.datasets import PartedDataset, is_dataset_folder, read_part_file
from rewardlab.sources.datasets.work import map_parts
from rewardlab.sources.registry import spec_of

# METRICS, METRIC_TITLES, FindingEpisode (rewardlab.sessions.board_diagnostics) and epic_matrix
# (rewardlab.diagnostics.epic) are re-exported here, where they were first.
__all__ = ["METRICS", "METRIC_TITLES", "ComparisonResults", "ComparisonSession", "FindingEpisode", "epic_matrix"]


@dataclasses.dataclass(frozen=True, eq=False)
class ComparisonResults:
    """Chosen candidates side by side (see :class:`ComparisonSession`).

    Attributes
    ----------
    chosen : tuple of str
    metric : str
        The matrix asked for (:data:`METRICS`).
    shown : str
        The matrix shown: ``metric``, except ``"pearson_distance"`` where EPIC was asked for but cannot
        be shown (not computed yet, or not evaluable: :attr:`epic_note` says why).
    title : str
        What the matrix is, in words (a fallback says it is one).
    step_rewards : dict of str to float array ``[n_rows]``
        Each chosen candidate's step rewards (for overlaid distributions);
        on a dataset folder of more than
        :data:`~rewardlab.analysis.episode_parts.SAMPLE_LIMIT` rows, a seeded
        uniform sample of them (the same rows for every candidate).
    returns : polars.DataFrame
        Episode returns (:func:`rewardlab.analysis.compare.episode_return_table`) of the chosen.
    comparison : RewardComparison or None
        Correlations and Pearson distances of episode returns (None with fewer than two chosen).
    matrix : polars.DataFrame or None
        The matrix shown: column ``reward``, then one column per candidate (EPIC's holds the
        evaluable candidates only).
    stderr : polars.DataFrame or None
        EPIC's standard errors, shaped as :attr:`matrix` (None unless ``shown == "epic"``).
    epic_note : str or None
        Why EPIC is not shown, or which chosen candidates it leaves out and why (None otherwise).
    epic_pending : bool
        EPIC was asked for and can run, but has not run for these candidates
        (:meth:`ComparisonSession.compute_epic`).
    pairs : polars.DataFrame or None
        ``comparison.pairs()``, with ``epic`` and ``epic_stderr`` columns once EPIC ran for the chosen
        (null for a pair it could not evaluate).
    pair_returns : polars.DataFrame
        Episode returns of the pair ``(a, b)`` (keys, then columns ``a`` and ``b``).
    disagreements : polars.DataFrame or None
        :func:`rewardlab.analysis.compare.most_disagreeing_episodes` for the pair ``(a, b)``
        (None when ``a == b``).
    """

    chosen: tuple
    metric: str
    shown: str
    title: str
    a: str
    b: str
    step_rewards: dict
    returns: pl.DataFrame
    comparison: object
    matrix: pl.DataFrame | None
    stderr: pl.DataFrame | None
    epic_note: str | None
    epic_pending: bool
    pairs: pl.DataFrame | None
    pair_returns: pl.DataFrame
    disagreements: pl.DataFrame | None


class ComparisonSession(BoardDiagnostics, Session):
    """Compare candidate reward plug-ins on one dataset.

    Parameters
    ----------
    data : polars.DataFrame, LazyFrame, or path(s)
        The common frame; reward columns already in it are candidates too.
        A rewards dataset *folder* (``rewardlab apply CORPUS --plugin ...
        --out REWARDS``) is read part by part, once, and never held whole:
        the session keeps the episode returns and a sample of the step
        rewards, and opening an episode reads the part that holds it.
    plugins : sequence of paths or Plugin objects
        Applied once each (:func:`rewardlab.apply_plugins`); not on a
        dataset folder (apply them to the folder with ``rewardlab apply``).
    batch_mode, batch_size
        How the plug-ins are applied (see :func:`rewardlab.apply_plugins`).
    chosen : sequence of str, optional
        Candidates shown (default: all).
    metric : {"pearson", "spearman", "pearson_distance", "epic"}
        The matrix shown: correlations of episode returns, their Pearson
        distance ``sqrt((1 - pearson) / 2)``, or EPIC (computed when asked:
        :meth:`compute_epic`).
    k : int
        How many most-disagreeing episodes to list.
    spec : FrameSpec, optional
        How the frame's rows form episodes; default: the spec the frame
        carries or its columns show (:func:`rewardlab.sources.registry.spec_of`).
    diagnosis_options : DiagnosisOptions, optional
        EPIC's sample and discount, and the diagnostics' defaults (None: ``DiagnosisOptions()``).
    epic : callable, optional
        What computes EPIC, called as :func:`rewardlab.diagnostics.epic.epic_matrix` (the default).
    diagnose : callable, optional
        What runs the diagnostics, called as :func:`rewardlab.diagnostics.run.diagnose` (the default).

    Attributes
    ----------
    plugin_paths : list of str
        The plug-in files applied, absolute (what :meth:`save_state` records).
    base_fingerprint : str
        The fingerprint of the data as given (its reward columns and the
        columns the spec reads), before any plug-in ran: what
        :meth:`load_state` checks before it runs the plug-ins.

    Notes
    -----
    A saved state (:meth:`save_state`) lists the plug-in files, but loading
    it runs none of them unless the call names them: pass
    ``plugins=[...]`` to :meth:`load_state` (:meth:`saved_plugins` lists
    the files a state names, without running anything).  The data the
    plug-ins run on is checked against the file's fingerprint first.

    Examples
    --------
    >>> s = ComparisonSession(frame, ["data/plugins/rank_top.py", "data/plugins/raw_points.py"])  # doctest: +SKIP
    >>> s.results.comparison.pairs()  # doctest: +SKIP
    >>> s.add_plugin("my_reward.py")  # doctest: +SKIP
    >>> s.save_state("cmp.state.json")  # doctest: +SKIP
    >>> ComparisonSession.load_state("cmp.state.json", frame, plugins=["data/plugins/rank_top.py",
    ...                                                              "data/plugins/raw_points.py"])  # doctest: +SKIP
    """

    chosen = Param("The candidates shown (names of reward columns).")
    a = Param("First candidate of the pair whose disagreements are listed.")
    b = Param("Second candidate of the pair.")
    metric = Param("Matrix shown: pearson, spearman, pearson_distance (of episode returns), or epic.")
    k = Param("How many most-disagreeing episodes to list (>= 1).")
    _param_names = ("chosen", "a", "b", "metric", "k")
    _numeric = {"k": "int"}
    state_kind = "comparison"

    def __init__(self, data, plugins=(), *, batch_mode: str = "episodes", batch_size: int | None = None,
                 chosen=None, metric: str = "spearman", k: int = 10, spec: FrameSpec | None = None,
                 diagnosis_options: DiagnosisOptions | None = None, epic=None, diagnose=None):
        super().__init__()
        self.setup_diagnostics(options=diagnosis_options, epic=epic, diagnose=diagnose)
        self._read_data(data, spec)
        self._add_candidates(plugins, batch_mode=batch_mode, batch_size=batch_size, chosen=chosen, metric=metric,
                             k=k)

    def _read_data(self, data, spec) -> None:
        """The data before any plug-in runs, and its fingerprint (:attr:`base_fingerprint`)."""
        self.data_paths = source_paths(data)
        #: The dataset folder the session read part by part, or None when it holds the whole frame.
        self.dataset: PartedDataset | None = None
        if isinstance(data, (str, Path)) and is_dataset_folder(data):
            self.dataset = PartedDataset(data)
            self.data_path, self.frame = str(data), None
            self.spec = spec if spec is not None else self.dataset.spec
            self._read_dataset()
            self.base_fingerprint = self._fingerprint
            return
        frame, source = load_frame(data)
        self.data_path = source
        self.spec = spec_of(frame, spec)
        self.frame = frame = trajectory_order(frame, self.spec)  # a joint frame in joint order: agents' episodes
        names = [columns.reward_column(c) for c in columns.reward_names(frame)] + spec_columns(self.spec, frame)
        self.base_fingerprint = fingerprint_columns(frame, names)

    def _read_dataset(self) -> None:
        """One pass over the folder's parts: the episode returns, a step sample, the fingerprint."""
        ds = self.dataset
        names = list(columns.reward_names(ds.columns))
        fingerprinted = [columns.reward_column(c) for c in names] + spec_columns(self.spec, ds.columns)
        needed = list(dict.fromkeys([*needed_columns(ds, names, dones=False), *fingerprinted]))
        tables, steps = [], {n: StepValues(limit=SAMPLE_LIMIT) for n in names}
        with ColumnsFingerprint(fingerprinted) as acc:
            for table, values, part in map_parts(ds, _board_part, (needed, names, fingerprinted), progress=None,
                                                 desc="episode returns"):
                tables.append(table)
                for n in names:
                    steps[n].merge(values[n])
                acc.add(part)
            self._fingerprint = acc.hexdigest()
        self._dataset_returns = concat_part_tables(tables, ds, "episode") if names else pl.DataFrame()
        self._dataset_steps = {n: v.values for n, v in steps.items()}

    def _add_candidates(self, plugins, *, batch_mode: str = "episodes", batch_size: int | None = None, chosen=None,
                        metric: str = "spearman", k: int = 10) -> None:
        """Apply the plug-ins (the only code the session runs), then the candidates and parameters."""
        self.batch_mode = batch_mode
        self.batch_size = batch_size
        if isinstance(plugins, (str, Path)) or not hasattr(plugins, "__iter__"):
            plugins = [plugins]
        plugins = list(plugins)
        self.plugin_paths: list[str] = []
        if plugins and self.dataset is not None:
            self._refuse_plugins()
        if plugins:
            self.frame = keep_spec(self.frame, self._apply(self.frame, plugins))
        self._refresh_candidates()
        names = self.candidates
        if not names:
            raise FrameError("there is nothing to compare: no plug-ins and no reward_<name> columns",
                             hint="Pass plug-in files")
        chosen = tuple(names) if chosen is None else tuple(chosen) if not isinstance(chosen, str) else (chosen,)
        pair = [c for c in chosen if c in names][:2] or list(names[:2])
        params = dict(chosen=chosen, a=pair[0], b=pair[1] if len(pair) > 1 else pair[0], metric=metric, k=k)
        self._params = self._validate(params, params)
        self._refresh({"chosen": chosen})

    def _apply(self, frame: pl.DataFrame, plugins: list, *, progress=None,
               cancel: CancelToken | None = None) -> pl.DataFrame:
        applied = apply_plugins(frame, plugins, batch_mode=self.batch_mode, batch_size=self.batch_size,
                                progress=progress, cancel=None if cancel is None else (lambda: cancel.cancelled))
        paths = [str(Path(p.path if isinstance(p, Plugin) else p).expanduser().resolve()) for p in plugins]
        self.plugin_paths += paths  # absolute: a state file is read from any folder
        self.record_plugins({p.name if isinstance(p, Plugin) else plugin_name(p): p if isinstance(p, Plugin)
                             else path for p, path in zip(plugins, paths)})
        return applied

    def _refuse_plugins(self) -> None:
        folder = self.dataset.folder
        raise ParameterError("plugins", "should be applied to a dataset folder before the session reads it (the "
                             "session reads the folder's reward columns, and never holds the folder whole)",
                             str(folder), hint=f"rewardlab apply {folder} --plugin FILE.py --out REWARDS, then "
                             "ComparisonSession('REWARDS') (or ComparisonSession(rewardlab.load(FOLDER), plugins) "
                             "for data that fits in memory).")

    def _refresh_candidates(self) -> None:
        if self.dataset is not None:
            self.candidates = tuple(columns.reward_names(self.dataset.columns))
            self._returns = self._dataset_returns
            return
        self.candidates = tuple(columns.reward_names(self.frame))
        self._returns = episode_return_table(self.frame, list(self.candidates), spec=self.spec) if self.candidates \
            else pl.DataFrame()

    def add_plugin(self, plugin, *, name: str | None = None, choose: bool = True, progress=None,
                   cancel: CancelToken | None = None) -> str:
        """Load (if a path), apply and add a candidate; returns its name.

        The plug-in runs over the whole frame first (in a child process
        where the platform can fork); the session changes only once it has
        run, so a failure or a cancel leaves it as it was.

        Parameters
        ----------
        plugin : path or Plugin
            E.g. a user's own plug-in file.
        name : str, optional
            Its name (default: from the file name).
        choose : bool
            Add it to the chosen candidates.
        progress : callable, optional
            ``progress(fraction, message)`` while the plug-in runs (None: a
            progress bar on an interactive terminal or in Jupyter).
        cancel : CancelToken, optional
            Cancel it from another thread: the run is stopped and
            :class:`~rewardlab.core.errors.PluginRunCancelled` raised.

        Examples
        --------
        >>> s.add_plugin("my_reward.py")  # doctest: +SKIP
        'my_reward'
        """
        choose = check_bool("choose", choose)
        progress = None if progress is None else progress_callback(progress)
        cancel = None if cancel is None else cancel_token(cancel)
        if self.dataset is not None:
            self._refuse_plugins()
        if isinstance(plugin, Plugin):
            loaded = plugin
        else:  # a file defining RewardManager is a reward manager (run over the joint frame's trials)
            loaded = (load_manager if manager_items(plugin) is not None else load_plugin)(plugin, name=name)
        if loaded.name in self.candidates:
            raise ParameterError("name", "should differ from the candidates already loaded ("
                                 + ", ".join(self.candidates) + ")", loaded.name,
                                 hint="Pass name= to load it under another name.")
        applied = self._apply(self.frame, [loaded], progress=progress, cancel=cancel)
        with self.lock:
            self.frame = keep_spec(self.frame, applied)
            self._refresh_candidates()
            changes = {"chosen": self.chosen + ((loaded.name,) if choose else ())}
            if self.a == self.b:  # the first candidate had no partner: the new one is
                changes["b"] = loaded.name
            self.update(**changes)
        return loaded.name

    def _validate(self, params: dict, changes: dict) -> dict:
        chosen = params["chosen"]
        if isinstance(chosen, str) or not hasattr(chosen, "__iter__"):
            raise ParameterError("chosen", "should be a sequence of candidate names", chosen)
        chosen = tuple(dict.fromkeys(chosen))
        if not chosen:
            raise ParameterError("chosen", "should name at least one candidate", chosen)
        for c in chosen:
            check_choice("chosen", c, self.candidates)
        params["chosen"] = chosen
        check_choice("a", params["a"], self.candidates)
        check_choice("b", params["b"], self.candidates)
        if params["a"] == params["b"] and len(self.candidates) > 1:
            raise ParameterError("b", "should differ from `a`", params["b"])
        check_choice("metric", params["metric"], METRICS)
        params["k"] = check_int("k", params["k"], low=1, rule="should be a positive integer", integral_float=True)
        return params

    def _compute(self) -> ComparisonResults:
        p = self._params
        chosen = p["chosen"]
        keys = episode_key_columns(self._returns, self.spec)
        returns = self._returns.select(*keys, *chosen)
        comparison = compare_rewards(returns, spec=self.spec) if len(chosen) >= 2 else None
        pair = self._returns.select(*keys, *dict.fromkeys((p["a"], p["b"])))
        disagreements = (most_disagreeing_episodes(pair, p["a"], p["b"], k=p["k"], spec=self.spec)
                         if p["a"] != p["b"] else None)
        steps = {c: self._dataset_steps[c] if self.dataset is not None
                 else self.frame[columns.reward_column(c)].to_numpy() for c in chosen}
        view = self.matrix_view(comparison, chosen, p["metric"])
        return ComparisonResults(chosen=chosen, metric=p["metric"], shown=view.shown, title=view.title, a=p["a"],
                                 b=p["b"], step_rewards=steps, returns=returns, comparison=comparison,
                                 matrix=view.matrix, stderr=view.stderr, epic_note=view.note,
                                 epic_pending=view.pending, pairs=view.pairs, pair_returns=pair,
                                 disagreements=disagreements)

    # -- drill-down ----------------------------------------------------------------
    def episode(self, episode) -> EpisodeDetail:
        """One episode step by step for the chosen candidates (and the pair ``a``, ``b``).

        Parameters
        ----------
        episode : int, dict, or a row of ``results.disagreements``
            The episode's index in ``results.returns`` order, its key values
            (``{"game_id": ..., "seat": 2}``), or an entry of
            :meth:`disagreement_keys` / a row dict of ``results.disagreements``.

        Returns
        -------
        EpisodeDetail
            With the mahjong scores and ranks per round when the frame has them.

        Examples
        --------
        >>> s.episode(s.disagreement_keys()[0]).segments  # doctest: +SKIP
        """
        p = self._params
        rewards = tuple(dict.fromkeys((*p["chosen"], p["a"], p["b"])))
        if self.dataset is None:
            return open_episode(self.frame, episode, rewards=rewards, spec=self.spec)
        index = self._episode_index(episode)
        ends = np.cumsum([e.episodes for e in self.dataset.manifest.parts])
        part = int(np.searchsorted(ends, index, side="right"))
        frame = self.dataset.read(part, list(self.dataset.all_columns))
        key = episode_keys(self._returns[index], episode_key_columns(self._returns, self.spec))[0]
        return open_episode(frame, key, rewards=rewards, spec=self.spec)

    def _episode_index(self, episode) -> int:
        """A dataset folder's episode (index, key, or a row of a table of episodes) as its index in the returns."""
        n = self._returns.height
        if isinstance(episode, (int, np.integer)) and not isinstance(episode, bool):
            return check_int("episode", episode, low=0, high=max(n - 1, 0),
                             rule=f"should be an episode index in [0, {n - 1}] or its key")
        if not isinstance(episode, dict):
            raise ParameterError("episode", "should be an episode index or its key values", episode)
        columns_ = episode_key_columns(self._returns, self.spec)
        keys = [k for k in columns_ if k in episode]
        if not keys:
            raise ParameterError("episode", f"should name episode columns among {columns_}", episode)
        hit = self._returns.with_row_index("_index").filter(
            pl.all_horizontal([pl.col(k) == episode[k] for k in keys]))
        if not hit.height:
            raise ParameterError("episode", "should be an episode of the data", {k: episode[k] for k in keys})
        return int(hit["_index"][0])

    def episode_near(self, x: float, y: float) -> dict:
        """The key of the episode whose point in the pair's return scatter is nearest ``(x, y)`` (a click).

        ``x`` is candidate ``a``'s episode return, ``y`` candidate ``b``'s; distances
        are measured with each axis scaled to the data's range, as the plot shows
        it.  Pass the key to :meth:`episode`.

        Examples
        --------
        >>> s.episode(s.episode_near(1.5, -0.2))  # doctest: +SKIP
        """
        for name, v in (("x", x), ("y", y)):
            if isinstance(v, bool) or not isinstance(v, (int, float, np.number)) or not np.isfinite(v):
                raise ParameterError(name, "should be a finite number (a point of the pair's scatter)", v)
        p = self._params
        pair = self.results.pair_returns
        if p["a"] == p["b"] or pair.height == 0:
            raise ParameterError("b", "should differ from `a` to click a point of the pair's scatter", p["b"])
        pts = pair.select(p["a"], p["b"]).to_numpy().astype(np.float64)
        scale = np.ptp(pts, axis=0)
        scale[scale == 0] = 1.0
        i = int(np.argmin((((pts - np.array([x, y])) / scale) ** 2).sum(axis=1)))
        return episode_keys(pair[i], episode_key_columns(pair, self.spec))[0]

    def disagreement_keys(self) -> list[dict]:
        """The most disagreeing episodes (``results.disagreements``, largest gap first) as :meth:`episode` keys.

        Examples
        --------
        >>> s.disagreement_keys()[:1]  # doctest: +SKIP
        [{'game_id': '...', 'seat': 2}]
        """
        table = self.results.disagreements
        if table is None:
            return []
        return episode_keys(table, episode_key_columns(table, self.spec))

    # -- pins and saved state ---------------------------------------------------
    def data_fingerprint(self) -> str:
        """A fingerprint of every candidate's reward column and the columns the spec reads.

        Examples
        --------
        >>> s.data_fingerprint()  # doctest: +SKIP
        'blake2b-128:...'
        """
        if self.dataset is not None:
            return self._fingerprint  # no plug-in runs on a folder: the data is as read
        names = [columns.reward_column(c) for c in self.candidates] + spec_columns(self.spec, self.frame)
        return fingerprint_columns(self.frame, names)

    def _data_rows(self) -> int:
        return self.dataset.rows if self.dataset is not None else self.frame.height

    def _state_options(self) -> dict:
        return {"plugins": list(self.plugin_paths), "batch_mode": self.batch_mode, "batch_size": self.batch_size,
                "base_fingerprint": self.base_fingerprint}

    def _check_options(self, state: SavedState, path) -> None:
        _saved_options(state, path)  # restore applies none of them (no plug-in runs) but refuses a malformed one

    @classmethod
    def saved_plugins(cls, path) -> list[str]:
        """The plug-in files a saved comparison state names (absolute paths), read without running any.

        What :meth:`load_state` asks for as ``plugins=``: look at them, and
        pass the ones you trust.

        Raises
        ------
        DataFormatError
            Not a comparison state file, or a malformed one (naming the file and the field).

        Examples
        --------
        >>> ComparisonSession.saved_plugins("cmp.state.json")  # doctest: +SKIP
        ['/home/me/rewardlab/data/plugins/rank_top.py', '/home/me/rewardlab/data/plugins/raw_points.py']
        """
        state = read_state(path, kinds=tuple(Session.kinds))
        if state.kind != cls.state_kind:
            raise state_error(path, "kind", f"is {state.kind!r}; {cls.__name__} reads {cls.state_kind!r}")
        return _saved_options(state, path)["plugins"]

    @classmethod
    def _from_state(cls, state, data, path, **options) -> "ComparisonSession":
        return cls._open_state(state, data, path, "raise", **options)

    @classmethod
    def _open_state(cls, state: SavedState, data, path, on_mismatch: str, *, plugins=None, batch_mode=None,
                    batch_size=None, spec: FrameSpec | None = None, diagnosis_options=None, epic=None,
                    diagnose=None, **options) -> "ComparisonSession":
        """The session the state describes: its data checked against the file's fingerprint, then the
        plug-ins the caller passed applied (never the ones the file names)."""
        saved = _saved_options(state, path)
        if plugins is None:
            if saved["plugins"]:
                named = saved["plugins"]
                listed = ", ".join(repr(p[:200]) for p in named[:10]) + (f", ... ({len(named) - 10} more)"
                                                                         if len(named) > 10 else "")
                raise ParameterError(
                    "plugins", f"should list the plug-in files to run: the state file {path} names {len(named)} "
                    f"({listed}), and loading a state runs no code the call does not name", None,
                    hint=f"Read them, then pass the ones you trust: ComparisonSession.load_state({str(path)!r}, "
                    f"data, plugins=[{listed}]) (ComparisonSession.saved_plugins(path) lists them).")
            plugins = ()
        session = cls.__new__(cls)
        Session.__init__(session)
        session.setup_diagnostics(options=diagnosis_options, epic=epic, diagnose=diagnose)
        session._read_data(saved_data(state, data, path), spec)
        if saved["base_fingerprint"] is not None and on_mismatch == "raise":  # "warn": the whole data warns later
            check_fingerprint(state, path, session.base_fingerprint, session._data_rows(), on_mismatch="raise",
                              expected=saved["base_fingerprint"], what="the data (before any plug-in ran)")
        session._add_candidates(plugins, batch_mode=saved["batch_mode"] if batch_mode is None else batch_mode,
                                batch_size=saved["batch_size"] if batch_size is None else batch_size, **options)
        return session

    def _summary(self, r: ComparisonResults) -> dict:
        """Per chosen candidate, its episode returns: mean, std, min, median, max; the pair's correlation."""
        out: dict = {}
        for name in r.chosen:
            values = r.returns[name].cast(pl.Float64)
            out.update({f"{name}: return mean": values.mean(), f"{name}: return std": values.std(ddof=0),
                        f"{name}: return min": values.min(), f"{name}: return median": values.median(),
                        f"{name}: return max": values.max()})
        names = [] if r.matrix is None else r.matrix["reward"].to_list()
        if r.a in names and r.b in names and r.a != r.b:
            out[f"{r.shown}: {r.a} vs {r.b}"] = float(r.matrix[r.b][names.index(r.a)])
        return out


def _saved_options(state: SavedState, path) -> dict:
    """A comparison state's ``options``, checked: plug-in paths, batch mode and size, the data's fingerprint."""
    options = state.options
    plugins = options.get("plugins", ())
    if not isinstance(plugins, tuple):
        raise state_error(path, "options.plugins", f"should be a list of paths, not {shown_value(plugins)}")
    for k, p in enumerate(plugins):
        if not isinstance(p, str) or not p or "\x00" in p:
            raise state_error(path, f"options.plugins[{k}]", f"should be a path, not {shown_value(p)}")
    batch_mode = options.get("batch_mode", "episodes")
    if batch_mode not in BATCH_MODES:
        raise state_error(path, "options.batch_mode", "should be one of " + ", ".join(BATCH_MODES)
                          + f", not {shown_value(batch_mode)}")
    batch_size = options.get("batch_size")
    if batch_size is not None and (isinstance(batch_size, bool) or not isinstance(batch_size, int)
                                   or batch_size < 1):
        raise state_error(path, "options.batch_size", "should be a positive integer or null, not "
                          + shown_value(batch_size))
    base = options.get("base_fingerprint")
    if base is not None and not isinstance(base, str):
        raise state_error(path, "options.base_fingerprint", f"should be a string or null, not {shown_value(base)}")
    return {"plugins": list(plugins), "batch_mode": batch_mode, "batch_size": batch_size, "base_fingerprint": base}


def _board_part(item: tuple) -> tuple:
    """One part of a rewards folder: its episode returns, its step rewards (a sample past the limit), and the
    columns the fingerprint hashes."""
    path, rows, index, needed, names, fingerprinted = item
    part = read_part_file(path, rows, columns=needed)
    table = episode_return_table(part, names) if names else pl.DataFrame()
    values = {n: StepValues(limit=SAMPLE_LIMIT).add(part[columns.reward_column(n)].cast(pl.Float64).to_numpy(),
                                                    part=index) for n in names}
    return table, values, part.select(fingerprinted)
