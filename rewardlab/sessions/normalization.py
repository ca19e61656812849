"""The normalization session: constants of a reward column in a scope, before / after, running normalizers.

On a dataset folder (a rewards folder: ``rewardlab apply CORPUS --plugin ...
--out REWARDS``) the session never holds the rows: every figure comes from
passes over the parts (:mod:`rewardlab.analysis.normalizer_parts`), and what
it keeps is bounded (see :class:`NormalizationSession`).

Examples
--------
>>> s = NormalizationSession(frame, reward="rank_top", scope="end_of_game")  # doctest: +SKIP
>>> s.results.constants.std  # doctest: +SKIP
"""

from __future__ import annotations

import dataclasses
import math
import os
from pathlib import Path

import numpy as np
import polars as pl

from rewardlab.core import columns
from rewardlab.core.spec import FrameSpec, keep_spec
from rewardlab.core.errors import (
    ExportCancelled, FrameError, ParameterError, PluginRunCancelled, RewardlabError, check_choice, check_in_range,
    check_positive,
)
from rewardlab.normalized_export import NormalizedExport, export_normalized_plugin
from rewardlab.plugins import apply_plugins
from rewardlab.plugins.loading import plugin_name
from rewardlab.analysis.normalizers import (
    constants_column, normalization_summary, normalized_rewards, replay_methods,
)
from rewardlab.analysis.normalizer_parts import dataset_normalized_rewards, dataset_scope_statistics
from rewardlab.analysis.episodes import EpisodeDetail
from rewardlab.sessions.base import Param, Session
from rewardlab.sessions.episodes import episode_at_row, open_episode
from rewardlab.sessions.inputs import cancel_token, load_frame, parse_number, progress_callback, source_paths
from rewardlab.sessions.fingerprints import ColumnsFingerprint, fingerprint_columns
from rewardlab.sessions.state import spec_columns
from rewardlab.sources.datasets import PartedDataset, is_dataset_folder
from rewardlab.sources.registry import spec_of
from rewardlab.analysis.scopes import RETURN_SCOPES, SCOPE_ALIASES, SCOPES, declared_spec
from rewardlab.analysis.stats import normalization_constants, reward_stats

__all__ = ["NormalizationResults", "NormalizationSession", "data_scopes", "offered_scope"]


def data_scopes(frame, spec: FrameSpec | None = None) -> tuple[str, ...]:
    """The scopes of :data:`~rewardlab.analysis.scopes.SCOPES` the data has, in that order.

    ``boundary`` only where the spec names boundary flags (sub-episodes: a
    mahjong round); kanachan's words ``end_of_round`` / ``end_of_game`` only
    where the spec's flags are those columns (kanachan and MJAI data), so a
    step table is offered the generic scopes alone.  The scopes left out
    select the same steps as one offered (:func:`offered_scope`).

    Examples
    --------
    >>> import polars as pl
    >>> data_scopes(pl.DataFrame({"e": [0], "reward_a": [1.0]}), FrameSpec(name="s", episode=("e",)))
    ('all', 'nonzero', 'episode_end', 'episode_return', 'trajectory_return')
    >>> spec = FrameSpec(name="k", episode=("g",), terminated="end_of_game", boundaries=("end_of_round",))
    >>> data_scopes(pl.DataFrame({"g": [0], "reward_a": [1.0]}), spec)[-2:]
    ('end_of_round', 'end_of_game')
    """
    full, _ = declared_spec(frame, spec)
    flags = {"boundary": bool(full.boundaries), "end_of_round": "end_of_round" in full.boundaries,
             "end_of_game": full.terminated == "end_of_game"}
    return tuple(scope for scope in SCOPES if flags.get(scope, True))


def offered_scope(scope: str, scopes) -> str:
    """``scope`` as one of ``scopes`` (:func:`data_scopes`): a kanachan word becomes the generic scope,
    ``boundary`` without boundary flags ``episode_end`` (the same steps).

    Examples
    --------
    >>> offered_scope("end_of_game", ("all", "episode_end")), offered_scope("all", ("all",))
    ('episode_end', 'all')
    """
    scope = check_choice("scope", scope, SCOPES)
    if scope not in scopes:
        scope = SCOPE_ALIASES.get(scope, scope)
    if scope == "boundary" and scope not in scopes:
        scope = "episode_end"
    return scope


def _plugin_files(plugins) -> dict:
    """``{name: absolute Path}`` of plug-in file paths."""
    if isinstance(plugins, (str, os.PathLike)):
        plugins = [plugins]
    if not isinstance(plugins, (list, tuple)) or not all(isinstance(p, (str, os.PathLike)) for p in plugins):
        raise ParameterError("plugins", "should be a sequence of plug-in file paths", plugins)
    return {plugin_name(p): Path(os.path.abspath(os.path.expanduser(p))) for p in plugins}


def _with_plugins(frame: pl.DataFrame, plugins, spec) -> tuple[pl.DataFrame, dict]:
    """``frame`` with the rewards of ``plugins`` (paths; applied unless their reward column is there) and
    ``{name: absolute Path}``."""
    files = _plugin_files(plugins)
    missing = [str(p) for name, p in files.items() if columns.reward_column(name) not in frame.columns]
    if missing:
        frame = keep_spec(frame, apply_plugins(frame, missing, progress=False, spec=spec))
    return frame, files


def _folder_plugins(ds: PartedDataset, plugins) -> dict:
    """``{name: absolute Path}`` of plug-ins whose reward column the folder holds; refuses one it lacks
    (the session runs no plug-in on a folder)."""
    files = _plugin_files(plugins)
    missing = [str(p) for name, p in files.items() if columns.reward_column(name) not in ds.columns]
    if missing:
        raise ParameterError("plugins", "should have been applied to the dataset folder (the session reads the "
                             "folder's reward columns and runs no plug-in on it); it has no reward column of "
                             + ", ".join(missing), str(ds.folder),
                             hint=f"rewardlab apply {ds.folder} --plugin FILE.py --out REWARDS, then "
                             "NormalizationSession('REWARDS', plugins=['FILE.py']).")
    return files


@dataclasses.dataclass(frozen=True, eq=False)
class NormalizationResults:
    """Normalization constants of a reward in a scope and what they do (see :class:`NormalizationSession`).

    Attributes
    ----------
    constants : NormalizationConstants or None
        None when the scope cannot be normalized (no values, or constant);
        ``constants_error`` says why.
    constants_error : str or None
    before, after : RewardStats
        Statistics in the scope before and after applying the constants
        (``after`` is None without constants).
    replays : polars.DataFrame
        :func:`rewardlab.analysis.normalizers.normalized_rewards`: ``raw``,
        ``constants`` (per-step scopes), ``gymnasium``, ``sb3``, ``sb3_clipped``.
    summary : polars.DataFrame
        :func:`rewardlab.analysis.normalizers.normalization_summary` of the replays.
    note : str or None
        Why the constants are not applied step by step (``episode_return``, ``trajectory_return``).
    sample_rows : numpy.ndarray of int64 or None
        On a dataset folder, the rows of the whole folder ``replays`` holds
        (all of them up to 10^7 rows, else a seeded uniform sample); None on a frame.
    steps : int or None
        On a dataset folder, its rows (``summary`` and :attr:`fraction_clipped` count every one).
    clipped_share : float or None
        On a dataset folder, the fraction of every step SB3 clips.
    """

    reward: str
    scope: str
    constants: object
    constants_error: str | None
    before: object
    after: object
    replays: pl.DataFrame
    summary: pl.DataFrame
    note: str | None
    sample_rows: np.ndarray | None = None
    steps: int | None = None
    clipped_share: float | None = None

    @property
    def fraction_clipped(self) -> float:
        """Fraction of steps SB3's clipping saturates (every step, on a folder too)."""
        if self.clipped_share is not None:
            return self.clipped_share
        return float(self.replays["sb3_clipped"].mean() or 0.0) if self.replays.height else 0.0

    @property
    def sampled(self) -> bool:
        """True when :attr:`replays` is a sample of a dataset folder's rows."""
        return self.steps is not None and self.replays.height < self.steps


class NormalizationSession(Session):
    """Where normalization constants come from and what they, and running normalizers, do.

    Parameters
    ----------
    data : polars.DataFrame, or a dataset folder's path
        A frame with ``reward_<name>`` / ``done_<name>`` columns (e.g. from
        :func:`rewardlab.apply_plugins`); the full frame, so the
        end-of-round / end-of-game scopes work.  Or a rewards dataset
        folder (``rewardlab apply CORPUS --plugin ... --out REWARDS``), read
        part by part and never held whole (see Notes).
    reward : str, optional
        The reward name (default: the first reward column).
    scope : str, optional
        One of :attr:`scopes` (default ``end_of_game`` on kanachan data,
        ``episode_end`` otherwise); kanachan's words on other data, and
        ``boundary`` on data without sub-episodes, are taken as the generic
        scope selecting the same steps.
    gamma, epsilon, clip_reward : float
        The running normalizers' parameters (Gymnasium's and SB3's defaults).
    spec : FrameSpec, optional
        How the frame's rows form episodes; default: the spec the frame
        carries or its columns show (:func:`rewardlab.sources.registry.spec_of`).
    plugins : sequence of paths
        The steps plug-in files rewards come from (:attr:`plugin_files`), so
        :meth:`export` can write a normalized version of one: each is applied
        to the data (episodes mode) unless the frame already holds its
        ``reward_<name>`` column (e.g. ``board.session.frame`` with
        ``board.session.plugin_paths``; the export checks that column against
        the file).  On a folder, the plug-ins must have been applied to it
        already (their reward columns are read, none runs).

    Notes
    -----
    **On a dataset folder** the running normalizers are sequential
    recursions over every step, so each change of reward, scope, gamma,
    epsilon or clip replays the whole folder once, its parts read in order
    by the engine's workers and the normalizers' state carried from part to
    part (:func:`rewardlab.analysis.normalizer_parts.dataset_normalized_rewards`;
    a progress bar where bars are shown).  That is a pass over the folder,
    not an interactive ~1 s recompute: at 10^7 steps on 2 cores, 4.7 s with
    a 10^6-row sample and 10.5 s keeping all 10^7 rows (peak RSS 1.1 GiB,
    bounded by the 10^7 rows kept, not by the folder), most of it reading
    the parts and gathering the kept rows (the replay loop itself is ~9 ms
    per 10^6 steps).  A new scope also reads the folder twice for the constants and
    the statistics before / after them
    (:func:`~rewardlab.analysis.normalizer_parts.dataset_scope_statistics`).
    The last result of each is kept, so going back to a scope's statistics
    costs nothing.  What the session holds, whatever the folder's size:

    * the summary table and the fraction SB3 clips: over **every** step
      (bit for bit the whole frame's up to 10^7 rows, then moments merged
      part by part, equal to rounding);
    * :attr:`NormalizationResults.replays`: every row up to 10^7 rows (then
      the whole frame's table, bit for bit), else a seeded uniform sample of
      10^7 rows, the same rows for every normalizer (the figure's title and
      :attr:`NormalizationResults.sampled` say so);
    * the constants and statistics of :mod:`rewardlab.analysis.stats_parts`
      (exact quantiles up to 10^7 values in scope, then a KLL sketch).

    Opening an episode reads the part that holds it; :meth:`export` checks
    its round trip on the folder's first part (whole episodes).

    Examples
    --------
    >>> s = NormalizationSession(frame, reward="rank_top", scope="end_of_game")  # doctest: +SKIP
    >>> s.results.constants.std  # doctest: +SKIP
    >>> s.scope = "all"  # doctest: +SKIP
    >>> s = NormalizationSession(steps, plugins=["data/plugins/steps/potential_shaping.py"])  # doctest: +SKIP
    >>> print(s.export("potential_shaping_normalized.py"))  # doctest: +SKIP

    Attributes
    ----------
    scopes : tuple of str
        The scopes the data has (:func:`data_scopes`): what the panel offers.
    plugin_files : dict
        ``{reward name: absolute Path}`` of the plug-in files given as ``plugins``.
    """

    reward = Param("The reward name (a reward_<name> column of the frame).")
    scope = Param("Which values the constants come from: all, nonzero, boundary (sub-episode ends, where the "
                  "data has them), episode_end, episode_return (whole episodes), trajectory_return (cut at the "
                  "plug-in's done); end_of_round / end_of_game on kanachan data.")
    gamma = Param("Discount of the running normalizers' returns, in [0, 1].")
    epsilon = Param("Added to the running variance, > 0.")
    clip_reward = Param("SB3's clipping bound of the normalized reward, > 0.")
    _param_names = ("reward", "scope", "gamma", "epsilon", "clip_reward")
    _numeric = {"gamma": "float", "epsilon": "float", "clip_reward": "float"}
    state_kind = "normalization"

    def __init__(self, data, *, reward: str | None = None, scope: str | None = None, gamma: float = 0.99,
                 epsilon: float = 1e-8, clip_reward: float = 10.0, spec: FrameSpec | None = None, plugins=()):
        super().__init__()
        #: The dataset folder read part by part, or None when the session holds the whole frame.
        self.dataset: PartedDataset | None = None
        self._fingerprint: str | None = None
        if isinstance(data, (str, Path)) and is_dataset_folder(data):
            self.dataset = ds = PartedDataset(data)
            self.data_path, self.data_paths = str(data), source_paths(data)
            self.plugin_files = _folder_plugins(ds, plugins)
            self.frame = None
            self.spec = spec if spec is not None else ds.spec
            probe = ds.read(0, list(ds.columns)).head(0) if len(ds) else pl.DataFrame(
                schema={c: pl.Float64 for c in ds.columns})
            self.scopes = data_scopes(probe, self.spec)
            names = columns.reward_names(list(ds.columns))
        else:
            frame, source = load_frame(data)
            self.data_path, self.data_paths = source, source_paths(data)
            frame, self.plugin_files = _with_plugins(frame, plugins, spec)
            self.frame = frame
            self.spec = spec_of(frame, spec)
            self.scopes = data_scopes(frame, spec)
            names = columns.reward_names(frame)
        if scope is None:
            scope = "end_of_game" if "end_of_game" in self.scopes else "episode_end"
        if not names:
            raise FrameError("the frame has no reward_<name> columns",
                             hint="Apply plug-ins first (rewardlab.apply_plugins)")
        self.rewards = tuple(names)
        #: (reward, scope) -> constants, error, before, after: they do not depend on gamma, epsilon or the
        #: clip, so changing those recomputes only the replays (the frame never changes in a session)
        self._scope_results: dict[tuple[str, str], tuple] = {}
        self._replays_key: tuple | None = None  # (reward, gamma, epsilon, clip) of _replays
        self._replays: pl.DataFrame | None = None
        params = dict(reward=names[0] if reward is None else reward, scope=scope, gamma=gamma,
                      epsilon=epsilon, clip_reward=clip_reward)
        params = {k: parse_number(k, v) if k in self._numeric else v for k, v in params.items()}
        self._params = self._validate(params, params)
        self._refresh({"reward": params["reward"]})

    def _validate(self, params: dict, changes: dict) -> dict:
        check_choice("reward", params["reward"], self.rewards)
        params["scope"] = offered_scope(params["scope"], self.scopes)
        params["gamma"] = check_in_range("gamma", params["gamma"], 0.0, 1.0)
        params["epsilon"] = check_positive("epsilon", params["epsilon"])
        params["clip_reward"] = check_positive("clip_reward", params["clip_reward"])
        return params

    def _compute(self) -> NormalizationResults:
        p = self._params
        name, scope = p["reward"], p["scope"]
        constants, error, before, after = self._scope_statistics(name, scope)
        per_step = constants is not None and scope not in RETURN_SCOPES
        note = None
        if constants is not None and not per_step:
            what = "episode returns" if scope == "episode_return" else "trajectory returns"
            note = (f"constants over {what} scale returns, not single steps; the replays show "
                    "the raw reward and the running normalizers only")
        if self.dataset is not None:
            out = self._folder_replays(name, p["gamma"], p["epsilon"], p["clip_reward"],
                                       constants if per_step else None)
            return NormalizationResults(reward=name, scope=scope, constants=constants, constants_error=error,
                                        before=before, after=after, replays=out.replays, summary=out.summary,
                                        note=note, sample_rows=out.rows, steps=out.total,
                                        clipped_share=out.fraction_clipped)
        replays = self._running_replays(name, p["gamma"], p["epsilon"], p["clip_reward"])
        if per_step:  # the constants' column beside the running normalizers' (which do not depend on them)
            replays = replays.clone().insert_column(1, pl.Series("constants", constants_column(  # not in place
                self.frame, name, constants, spec=self.spec)))
        return NormalizationResults(reward=name, scope=scope, constants=constants, constants_error=error,
                                    before=before, after=after, replays=replays,
                                    summary=normalization_summary(replays), note=note)

    def _running_replays(self, name: str, gamma: float, epsilon: float, clip_reward: float) -> pl.DataFrame:
        """:func:`normalized_rewards` without constants, kept per (reward, gamma, epsilon, clip): a new scope reuses it."""
        key = (name, gamma, epsilon, clip_reward)
        if self._replays_key != key:
            self._replays = normalized_rewards(self.frame, name, gamma=gamma, epsilon=epsilon,
                                               clip_reward=clip_reward, spec=self.spec)
            self._replays_key = key
        return self._replays

    def _folder_replays(self, name: str, gamma: float, epsilon: float, clip_reward: float, constants):
        """One pass over the folder (:func:`dataset_normalized_rewards`), the last one kept."""
        key = (name, gamma, epsilon, clip_reward, constants)
        if self._replays_key != key:
            self._replays = dataset_normalized_rewards(self.dataset, name, constants=constants, gamma=gamma,
                                                       epsilon=epsilon, clip_reward=clip_reward, spec=self.spec,
                                                       progress=None)
            self._replays_key = key
        return self._replays

    def _scope_statistics(self, name: str, scope: str) -> tuple:
        """Constants (or why none), and the statistics before / after them, of reward ``name`` over ``scope``."""
        key = (name, scope)
        if key not in self._scope_results and self.dataset is not None:
            if len(self._scope_results) >= 16:
                self._scope_results.pop(next(iter(self._scope_results)))
            self._scope_results[key] = dataset_scope_statistics(self.dataset, name, scope, spec=self.spec,
                                                                progress=None)
        if key not in self._scope_results:
            try:
                constants, error = normalization_constants(self.frame, name, scope=scope, spec=self.spec), None
            except RewardlabError as exc:  # no values, a constant reward, or statistics that overflow
                constants, error = None, str(exc)
            before = reward_stats(self.frame, name, scope=scope, spec=self.spec)
            after = (reward_stats(self.frame, name, scope=scope, constants=constants, spec=self.spec)
                     if constants else None)
            if len(self._scope_results) >= 16:
                self._scope_results.pop(next(iter(self._scope_results)))
            self._scope_results[key] = (constants, error, before, after)
        return self._scope_results[key]

    def _nonfinite(self, r: NormalizationResults) -> list[str]:
        where = f"reward_{r.reward} over {r.scope}"
        checks = []
        for label, st in (("", r.before), ("after the constants, ", r.after)):
            if st is not None and st.count:
                checks += [(f"{label}the {k} of {where}", getattr(st, k)) for k in ("mean", "std", "min", "max")]
        if r.constants is not None:
            checks.append((f"the constants of {where}", (r.constants.mean, r.constants.std)))
        summary = r.summary
        for column in ("mean", "std", "min", "max"):
            if column in summary.columns:
                for method, value in zip(summary["method"], summary[column]):
                    if value is not None:
                        checks.append((f"the {column} of the {method} replay", value))
        return self._finite_problems(checks)

    # -- export ----------------------------------------------------------------------
    def export_blocker(self) -> str | None:
        """Why :meth:`export` cannot write the reward shown now (None when it can).

        Examples
        --------
        >>> s.export_blocker()  # doctest: +SKIP
        "reward 'recorded' is not from a plug-in file ..."
        """
        name = self._params["reward"]
        if self.spec.contract not in (None, "steps"):
            return (f"a normalized plug-in is exported for step tables (the steps contract); this data uses the "
                    f"{self.spec.contract!r} contract (export a reward family instead: rewardlab export ranking)")
        if name not in self.plugin_files:
            given = ", ".join(sorted(self.plugin_files)) or "none"
            return (f"reward {name!r} is not from a plug-in file (plug-in files given: {given}); open the panel "
                    f"with plugins=['your_plugin.py'] to export a normalized version of your plug-in, or use "
                    f"rewardlab export scaling for a column of the data")
        r = self.results
        if r.constants is None:
            return f"no constants over {r.scope}: {r.constants_error}"
        return None

    def export(self, path, *, overwrite: bool = False, check: bool = True, source: str | None = None,
               progress=None, cancel=None) -> NormalizedExport:
        """Write the normalized version of the plug-in file of the reward shown, with the constants shown.

        The file runs the plug-in from beside it and applies ``(reward - shift) / scale``
        (:func:`rewardlab.normalized_export.export_normalized_plugin`: checked bit for bit in every
        batch mode first; nothing is written when anything fails).  ``shift`` is the mean, except
        for a return scope (``episode_return``, ``trajectory_return``), whose constants only scale.
        The session is read once at the start.

        Parameters
        ----------
        path : str or Path
            The ``.py`` file to write.
        overwrite, check, source
            See :func:`~rewardlab.normalized_export.export_normalized_plugin`.
        progress : callable, optional
            ``progress(fraction, message)``.
        cancel : CancelToken, optional
            Cancelling raises :class:`~rewardlab.core.errors.ExportCancelled`; nothing is written.

        Returns
        -------
        NormalizedExport

        Raises
        ------
        ParameterError
            :meth:`export_blocker` says why.

        Examples
        --------
        >>> print(s.export("potential_shaping_normalized.py"))  # doctest: +SKIP
        """
        token, report = cancel_token(cancel), progress_callback(progress)
        blocker = self.export_blocker()
        if blocker is not None:
            raise ParameterError("reward", f"should come from a plug-in file with constants to export ({blocker})",
                                 self._params["reward"])
        r = self.results
        plugin = self.plugin_files[r.reward]
        token.check(path, "the start")
        data = self.frame
        if self.dataset is not None:  # the round trip on the first part (whole episodes, its base's columns too)
            data = self.dataset.read(0, list(self.dataset.all_columns))
        try:
            return export_normalized_plugin(plugin, r.constants, path, data=data,
                                            center=r.scope not in RETURN_SCOPES, spec=self.spec,
                                            overwrite=overwrite, check=check, source=source, progress=report,
                                            cancel=lambda: token.cancelled)
        except PluginRunCancelled:
            raise ExportCancelled(path, "the round-trip check") from None

    # -- drill-down ----------------------------------------------------------------
    def episode(self, episode) -> EpisodeDetail:
        """One episode of the frame step by step for the reward tuned (see :func:`rewardlab.sessions.episodes.open_episode`).

        Examples
        --------
        >>> s.episode(0).steps  # doctest: +SKIP
        """
        if self.dataset is None:
            return open_episode(self.frame, episode, rewards=(self._params["reward"],), spec=self.spec)
        part, local = self._folder_episode(episode)
        frame = self.dataset.read(part, list(self.dataset.all_columns))
        return open_episode(frame, local, rewards=(self._params["reward"],), spec=self.spec)

    def _folder_episode(self, episode) -> tuple[int, object]:
        """A folder's episode (index over the folder, or key values) as (part, index or key within the part)."""
        ds = self.dataset
        ends = np.cumsum([e.episodes for e in ds.manifest.parts])
        if isinstance(episode, (int, np.integer)) and not isinstance(episode, bool):
            n = int(ends[-1]) if ends.size else 0
            if not 0 <= episode < n:
                raise ParameterError("episode", f"should be an episode index in [0, {n - 1}] or its key", episode)
            part = int(np.searchsorted(ends, episode, side="right"))
            return part, int(episode) - (int(ends[part - 1]) if part else 0)
        keys = [k for k in self.spec.episode if isinstance(episode, dict) and k in episode]
        if not keys:
            raise ParameterError("episode", f"should be an episode index or its key values "
                                 f"({', '.join(self.spec.episode) or 'no key columns'})", episode)
        for part in range(len(ds)):  # one part's keys at a time
            hit = ds.read(part, keys).filter(pl.all_horizontal([pl.col(k) == episode[k] for k in keys]))
            if hit.height:
                return part, episode
        raise ParameterError("episode", "should name an episode of the dataset folder", episode)

    def episode_near(self, value: float, *, column: str = "raw"):
        """The episode of the step whose reward is nearest ``value`` (a click on a histogram).

        Parameters
        ----------
        value : float
            A point of the histogram's x axis.
        column : str
            What the histogram shows: ``"raw"`` or a replay (``"constants"``,
            ``"gymnasium"``, ``"sb3"``), over the steps whose raw reward is
            nonzero, as the plots draw them.

        Returns
        -------
        dict or int
            For :meth:`episode`.

        Examples
        --------
        >>> s.episode(s.episode_near(2.5, column="constants"))  # doctest: +SKIP
        """
        if isinstance(value, (bool, np.bool_)) or not isinstance(value, (int, float, np.number)) \
                or not math.isfinite(value):
            raise ParameterError("value", "should be a finite number (a point of the histogram)", value)
        replays = self.results.replays
        check_choice("column", column, ["raw", *replay_methods(replays)])
        raw = replays["raw"].to_numpy()
        rows = np.flatnonzero(raw != 0)
        if rows.size == 0:
            raise ParameterError("value", f"should point at a step, but reward_{self.reward} is 0 on every "
                                 "step", value)
        distance = np.abs(replays[column].to_numpy()[rows] - float(value))  # finite: the session refuses others
        row = int(rows[np.argmin(distance)])
        if self.dataset is None:
            return episode_at_row(self.frame, row, spec=self.spec)
        row = int(self.results.sample_rows[row])  # the row of the whole folder
        part = self.dataset.part_of_row(row)
        frame = self.dataset.read(part, [c for c in self.dataset.columns if c in self.spec.structure])
        found = episode_at_row(frame, row - int(self.dataset.part_starts()[part]), spec=self.spec)
        if isinstance(found, int):  # an index within the part: over the folder
            found += sum(e.episodes for e in self.dataset.manifest.parts[:part])
        return found

    # -- pins and saved state ---------------------------------------------------
    def data_fingerprint(self) -> str:
        """A fingerprint of the reward columns and the columns the spec reads (episodes, flags).

        Examples
        --------
        >>> s.data_fingerprint()  # doctest: +SKIP
        'blake2b-128:...'
        """
        if self.dataset is None:
            names = [columns.reward_column(r) for r in self.rewards] + spec_columns(self.spec, self.frame)
            return fingerprint_columns(self.frame, names)
        if self._fingerprint is None:  # one pass over the folder, the first time it is asked
            names = [columns.reward_column(r) for r in self.rewards] + spec_columns(self.spec, self.dataset.columns)
            with ColumnsFingerprint(names) as acc:
                for part in self.dataset.frames(names):
                    acc.add(part)
                self._fingerprint = acc.hexdigest()
        return self._fingerprint

    def _data_rows(self) -> int:
        return self.frame.height if self.frame is not None else self.dataset.rows

    def _state_constants(self) -> dict | None:
        c = self.results.constants
        if c is None:
            return None
        return {"mean": c.mean, "std": c.std, "how": f"measured on the data over {c.scope}",
                "provenance": {k: getattr(c, k) for k in ("reward", "scope", "count", "rows", "source",
                                                          "fingerprint")}}

    def _summary(self, r: NormalizationResults) -> dict:
        """The constants, the reward's statistics in the scope before / after them, the replays' spread."""
        out = {"constant mean": r.constants.mean if r.constants else None,
               "constant std": r.constants.std if r.constants else None}
        for label, st in (("before", r.before), ("after", r.after)):
            for key in ("count", "mean", "std", "min", "max", "zero_fraction"):
                out[f"{label}: {key.replace('_', ' ')}"] = None if st is None else getattr(st, key)
        for row in r.summary.iter_rows(named=True):
            for key in ("mean", "std"):
                if key in row:
                    out[f"{row['method']} replay: {key}"] = row[key]
        out["fraction clipped (SB3)"] = r.fraction_clipped
        return out
