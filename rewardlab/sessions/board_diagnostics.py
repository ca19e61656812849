"""The comparison board's EPIC matrix and diagnostics panel: their state, in plain Python.

:class:`BoardDiagnostics` is mixed into
:class:`~rewardlab.sessions.comparison.ComparisonSession`; it holds what the
board's EPIC matrix and diagnostics panel need beside the correlations of
episode returns:

* **EPIC** (:func:`rewardlab.diagnostics.epic.epic_matrix`: the distance of
  canonicalized rewards over recombined transitions, with its standard
  error) runs the plug-ins, so it is computed only when asked
  (:meth:`BoardDiagnostics.compute_epic`) and kept per set of candidates.
  :meth:`BoardDiagnostics.matrix_view` is the matrix the board shows for a
  metric (:data:`METRICS`): EPIC where it ran, else the Pearson distance,
  titled as a fallback, with the reason (reward columns, a contract that
  cannot recombine transitions).
* The **diagnostics** (:meth:`BoardDiagnostics.run_diagnostics`) keep their
  findings (:attr:`BoardDiagnostics.findings`,
  :meth:`BoardDiagnostics.finding_indices`), and
  :meth:`BoardDiagnostics.open_finding` opens a finding's episode
  (:class:`FindingEpisode`).

Examples
--------
>>> s = ComparisonSession(frame, ["potential_shaping.py", "mountaincar_terms.py"])  # doctest: +SKIP
>>> s.metric = "epic"; _ = s.compute_epic()  # doctest: +SKIP
>>> s.results.shown  # doctest: +SKIP
'epic'
>>> _ = s.run_diagnostics(); s.open_finding(s.finding_indices("fail")[0]).marks  # doctest: +SKIP
"""

from __future__ import annotations

import dataclasses

import numpy as np
import polars as pl

from rewardlab.analysis.episodes import EpisodeDetail
from rewardlab.contracts.base import Recombination
from rewardlab.contracts.registry import contract_for
from rewardlab.core import columns
from rewardlab.core.errors import (ParameterError, PluginRunCancelled, RewardlabError, check_choice,
                                   check_int)
from rewardlab.core.spec import keep_spec
from rewardlab.diagnostics.base import VERDICTS, DiagnosisOptions, Finding
from rewardlab.diagnostics.epic import epic_matrix
from rewardlab.diagnostics.run import Diagnosis, diagnose as run_diagnose
from rewardlab.sessions.inputs import CancelToken, cancel_token, progress_callback

__all__ = ["METRICS", "METRIC_TITLES", "BoardDiagnostics", "FindingEpisode", "MatrixView", "epic_reasons"]

#: The matrices the board shows (the comparison session's ``metric``).
METRICS = ("pearson", "spearman", "pearson_distance", "epic")

#: What each matrix is, in words (the plot's title; a fallback says so after it).
METRIC_TITLES = {
    "pearson": "Pearson correlation of episode returns",
    "spearman": "Spearman correlation of episode returns",
    "pearson_distance": "Pearson distance of episode returns",
    "epic": "EPIC distance ± standard error",
}


@dataclasses.dataclass(frozen=True, eq=False)
class MatrixView:
    """The matrix the board shows for a metric (:meth:`BoardDiagnostics.matrix_view`).

    Attributes
    ----------
    shown : str
        The matrix shown: the metric asked for, except ``"pearson_distance"`` where EPIC was asked for but
        cannot be shown (:attr:`note` says why).
    title : str
        What the matrix is, in words (a fallback says it is one).
    matrix : polars.DataFrame or None
        Column ``reward``, then one column per candidate (EPIC's holds the evaluable candidates only); None
        with fewer than two candidates.
    stderr : polars.DataFrame or None
        EPIC's standard errors, shaped as :attr:`matrix` (None unless ``shown == "epic"``).
    note : str or None
        Why EPIC is not shown, or which candidates it leaves out and why.
    pending : bool
        EPIC was asked for and can run, but has not run for these candidates.
    pairs : polars.DataFrame or None
        ``comparison.pairs()``, with ``epic`` and ``epic_stderr`` columns once EPIC ran for the candidates
        (null for a pair it could not evaluate).
    """

    shown: str
    title: str
    matrix: pl.DataFrame | None
    stderr: pl.DataFrame | None
    note: str | None
    pending: bool
    pairs: pl.DataFrame | None


@dataclasses.dataclass(frozen=True, eq=False)
class FindingEpisode:
    """A diagnostic's finding opened in its first episode (:meth:`BoardDiagnostics.open_finding`).

    Attributes
    ----------
    index : int
        The finding's index in :attr:`BoardDiagnostics.findings`.
    finding : Finding
    episode : int
        The episode opened (0, 1, ... in frame order: the finding's first).
    detail : EpisodeDetail
        That episode step by step, as the board's episode view shows it.
    positions : tuple of int
        The finding's rows within the episode (0 = its first step).
    marks : tuple
        The same steps as the episode plot's x values (``detail.steps[detail.step]``).
    """

    index: int
    finding: Finding
    episode: int
    detail: EpisodeDetail
    positions: tuple
    marks: tuple


class BoardDiagnostics:
    """EPIC and the diagnostics of a comparison session (a mixin: see the module's notes).

    The session it is mixed into calls :meth:`setup_diagnostics` before it
    computes anything and :meth:`record_plugins` as it applies plug-ins, and
    supplies what these methods read: ``frame`` (None on a rewards folder),
    ``spec``, ``dataset``, ``data_path``, ``chosen``, ``lock``,
    ``episode(episode)`` and :class:`~rewardlab.sessions.base.Session`'s
    refresh and notification.

    Attributes
    ----------
    diagnosis_options : DiagnosisOptions
        The options EPIC and the diagnostics run with (gamma, epic_states, epic_pairs, epic_repeats, seed,
        isolate, timeout).
    diagnosis : Diagnosis or None
        The last :meth:`run_diagnostics` result (None before).
    diagnosis_version : int
        Incremented by each :meth:`run_diagnostics` (what a panel redraws on).
    opened_finding : FindingEpisode or None
        The finding last opened (:meth:`open_finding`).

    Examples
    --------
    >>> s.finding_indices(("fail", "warn"))  # doctest: +SKIP
    [3, 0]
    """

    def setup_diagnostics(self, *, options: DiagnosisOptions | None = None, epic=None, diagnose=None) -> None:
        """EPIC's and the diagnostics' settings, functions and caches (nothing runs yet).

        Parameters
        ----------
        options : DiagnosisOptions, optional
            None: ``DiagnosisOptions()``.
        epic : callable, optional
            What computes EPIC, called as :func:`rewardlab.diagnostics.epic.epic_matrix` (the default).
        diagnose : callable, optional
            What runs the diagnostics, called as :func:`rewardlab.diagnostics.run.diagnose` (the default).

        Examples
        --------
        >>> s.setup_diagnostics(options=DiagnosisOptions(epic_repeats=2))  # doctest: +SKIP
        """
        if options is not None and not isinstance(options, DiagnosisOptions):
            raise ParameterError("diagnosis_options", "should be a rewardlab.diagnostics.DiagnosisOptions or None",
                                 type(options).__name__)
        for name, given in (("epic", epic), ("diagnose", diagnose)):
            if given is not None and not callable(given):
                raise ParameterError(name, "should be callable or None", given)
        self.diagnosis_options = DiagnosisOptions() if options is None else options
        self._epic_fn = epic_matrix if epic is None else epic
        self._diagnose_fn = run_diagnose if diagnose is None else diagnose
        self._epic_cache: dict = {}  # (sorted plug-in names, options) -> EpicMatrix
        self._sources: dict = {}  # candidate name -> its plug-in (path or Plugin), for EPIC and the diagnostics
        self._recombination = None  # whether the frame's contract can recombine transitions (asked once)
        self.diagnosis: Diagnosis | None = None
        self.diagnosis_version = 0
        self.opened_finding: FindingEpisode | None = None

    def record_plugins(self, sources: dict) -> None:
        """Remember each plug-in candidate's plug-in (``{name: path or Plugin}``): EPIC and the diagnostics run it.

        Examples
        --------
        >>> s.record_plugins({"rank_top": "/abs/data/plugins/rank_top.py"})  # doctest: +SKIP
        """
        self._sources.update(sources)

    # -- EPIC ----------------------------------------------------------------------
    def matrix_view(self, comparison, chosen, metric: str) -> MatrixView:
        """The matrix the board shows for ``metric`` over the ``chosen`` candidates.

        Parameters
        ----------
        comparison : RewardComparison or None
            Correlations of the chosen candidates' episode returns
            (:func:`rewardlab.analysis.compare.compare_rewards`; None with fewer than two chosen).
        chosen : sequence of str
        metric : {"pearson", "spearman", "pearson_distance", "epic"}

        Returns
        -------
        MatrixView
            For ``"epic"``: EPIC kept from :meth:`compute_epic`, permuted to the chosen order, or the
            Pearson distance titled as a fallback, with why.

        Examples
        --------
        >>> v = s.matrix_view(s.results.comparison, s.chosen, "epic")  # doctest: +SKIP
        >>> v.shown, v.pending  # doctest: +SKIP
        ('pearson_distance', True)
        """
        check_choice("metric", metric, METRICS)
        shown, title, matrix, stderr, note, pending = metric, METRIC_TITLES[metric], None, None, None, False
        m, reasons, names = self._epic_for(chosen)
        if comparison is not None and metric == "epic":
            evaluable = [n for n in names if reasons[n] is None]
            grouped: dict = {}  # reason -> the candidates it leaves out
            for n, why in reasons.items():
                if why is not None:
                    grouped.setdefault(why, []).append(n)
            unlike = [", ".join(group) + f": {why}" for why, group in grouped.items()]
            if m is not None and len(evaluable) >= 2:
                at = [tuple(m.names).index(n) for n in evaluable]  # EPIC's order to the chosen one
                matrix, stderr = (_square(evaluable, values, at) for values in (m.distance, m.stderr))
                note = ("EPIC leaves out " + "; ".join(unlike)) if unlike else None
            else:
                pending = m is None and len(names) >= 2 and self.frame is not None
                shown = "pearson_distance"
                title = METRIC_TITLES[shown] + (" (EPIC not computed yet)" if pending else " (fallback: not EPIC)")
                note = ("EPIC runs the plug-ins on recombined transitions; it has not run for these candidates "
                        "(compute_epic(), or the board's 'compute EPIC')") if pending else \
                    "EPIC cannot be shown: " + ("; ".join(unlike) if unlike else "it needs two or more candidates")
        if comparison is not None and shown != "epic":
            matrix = comparison.matrix(shown)
        pairs = None if comparison is None else _with_epic(comparison.pairs(), m, names, reasons)
        return MatrixView(shown=shown, title=title, matrix=matrix, stderr=stderr, note=note, pending=pending,
                          pairs=pairs)

    def _epic_for(self, chosen) -> tuple:
        """EPIC's matrix cached for ``chosen`` (or None), each chosen candidate's reason it is left out (None:
        evaluable, as far as known), and the plug-in candidates among them (in chosen order)."""
        names = [c for c in chosen if c in self._sources and self.frame is not None]
        reasons = {c: None if c in names else (
            "a reward column of the data, not a plug-in: EPIC evaluates the reward on recombined transitions, "
            "so it needs the plug-in" + (" (apply it to data in memory: ComparisonSession(rewardlab.load(DATA), "
                                         "plugins))" if self.dataset is not None else "")) for c in chosen}
        if names and self._recombination is None:  # the contract's word, once: kanachan's cannot recombine
            try:
                contract, spec = contract_for(self.frame, None, spec=self.spec)
                self._recombination = contract.recombination(spec)
            except RewardlabError as exc:  # no contract found: EPIC cannot run, and the board says why
                self._recombination = Recombination(False, str(exc))
        if names and not self._recombination.possible:
            reasons.update({n: self._recombination.reason for n in names})
            return None, reasons, []
        m = self._cached_epic(names) if len(names) >= 2 else None
        if m is not None:
            reasons.update({n: epic_reasons(m)[n] for n in names})
        return m, reasons, names

    def _cached_epic(self, names):
        """An EPIC matrix computed with the session's options over (at least) ``names``, or None."""
        for (held, options), m in self._epic_cache.items():
            if options == self.diagnosis_options and set(names) <= set(held):
                return m
        return None

    def compute_epic(self, *, progress=None, cancel: CancelToken | None = None):
        """Run EPIC on the chosen plug-in candidates (unless kept from an earlier run), keep it and show it.

        EPIC (:func:`rewardlab.diagnostics.epic.epic_matrix`) runs each plug-in
        on recombined transitions, with :attr:`diagnosis_options` (``gamma``,
        ``epic_states``, ``epic_pairs``, ``epic_repeats``, ``seed``,
        ``isolate``, ``timeout``).  The result is kept per set of candidates:
        choosing them again, or fewer of them, shows it without running
        anything.  Reward columns (no plug-in) are left out, with the reason.

        Parameters
        ----------
        progress : callable, optional
            ``progress(fraction, message)`` before and after the run.
        cancel : CancelToken, optional
            Cancelled while EPIC runs: its result is dropped and
            :class:`~rewardlab.core.errors.PluginRunCancelled` raised.

        Returns
        -------
        EpicMatrix
            Over the chosen plug-ins (and any others of the run it was kept from).

        Raises
        ------
        ParameterError
            Fewer than two chosen candidates are plug-ins of data in memory.

        Examples
        --------
        >>> s.update(metric="epic"); m = s.compute_epic()  # doctest: +SKIP
        >>> s.results.shown, s.results.stderr is not None  # doctest: +SKIP
        ('epic', True)
        """
        progress = progress_callback(progress)
        token = cancel_token(cancel)
        chosen = self.chosen
        m, reasons, names = self._epic_for(chosen)
        if len(names) < 2:
            raise ParameterError("chosen", "should hold two or more plug-in candidates for EPIC (it runs the "
                                 "plug-ins on recombined transitions): " + "; ".join(
                                     f"{n}: {r}" for n, r in reasons.items() if r is not None), chosen)
        if m is None:
            options = self.diagnosis_options
            progress(0.0, f"EPIC: running {len(names)} plug-ins on recombined transitions")
            drop = [c for n in names for c in (columns.reward_column(n), columns.done_column(n))
                    if c in self.frame.columns]  # their own columns: the plug-ins write them again
            m = self._epic_fn(keep_spec(self.frame, self.frame.drop(drop)), [self._sources[n] for n in names],
                              spec=self.spec, gamma=options.gamma, n_states=options.epic_states,
                              n_pairs=options.epic_pairs, repeats=options.epic_repeats, seed=options.seed,
                              isolate=options.isolate, timeout=options.timeout)
            if token.cancelled:
                raise PluginRunCancelled(", ".join(names))
            missing = [n for n in names if n not in tuple(m.names)]
            if missing:
                raise ParameterError("epic", "should return a matrix over every plug-in it was given", missing)
            progress(1.0, "EPIC done")
        with self.lock:
            self._epic_cache[(tuple(sorted(m.names)), self.diagnosis_options)] = m
            self._refresh()
        return m

    # -- diagnostics ------------------------------------------------------------------
    def run_diagnostics(self, *, base: str | None = None, options: DiagnosisOptions | None = None, only=None,
                        progress=None, cancel: CancelToken | None = None) -> Diagnosis:
        """Run the reward diagnostics on the chosen candidates and keep their findings (:attr:`findings`).

        Plug-in candidates are run again by the diagnostics (in a child
        process unless ``options.isolate`` is False); reward columns are read
        as they are.  Observers are told once the findings are kept.

        Parameters
        ----------
        base : str, optional
            The candidate or reward column the others are compared with (None:
            the recorded reward where the data has one).
        options : DiagnosisOptions, optional
            Default: :attr:`diagnosis_options`.
        only : sequence of str, optional
            Run only these diagnostics (see :func:`rewardlab.diagnostics.run.diagnose`).
        progress : callable, optional
            ``progress(fraction, message)`` while the plug-ins run.
        cancel : CancelToken, optional
            Cancelled while they run: nothing is kept and
            :class:`~rewardlab.core.errors.PluginRunCancelled` raised.

        Returns
        -------
        Diagnosis

        Examples
        --------
        >>> d = s.run_diagnostics(base="recorded")  # doctest: +SKIP
        >>> s.findings[0].verdict  # doctest: +SKIP
        'pass'
        """
        frame = self._memory_frame("the diagnostics")
        token = cancel_token(cancel)
        chosen = self.chosen
        found = self._diagnose_fn(frame, [self._sources.get(c, c) for c in chosen], base=base,
                                  options=self.diagnosis_options if options is None else options, spec=self.spec,
                                  only=only, progress=None if progress is None else progress_callback(progress))
        if token.cancelled:
            raise PluginRunCancelled(", ".join(c for c in chosen if c in self._sources) or "diagnostics")
        with self.lock:
            self.diagnosis, self.opened_finding = found, None
            self.diagnosis_version += 1
        self._notify()
        return found

    def _memory_frame(self, what: str) -> pl.DataFrame:
        if self.frame is None:
            raise ParameterError("data", f"should be a frame in memory for {what} (they run the plug-ins); the "
                                 "session reads a rewards folder part by part", self.data_path,
                                 hint="ComparisonSession(rewardlab.load(DATA), plugins)")
        return self.frame

    @property
    def findings(self) -> tuple:
        """The findings of the last :meth:`run_diagnostics` (empty before)."""
        return () if self.diagnosis is None else tuple(self.diagnosis.findings)

    def finding_indices(self, verdicts=VERDICTS) -> list[int]:
        """The indices in :attr:`findings` of those whose verdict is in ``verdicts``, worst verdict first.

        Examples
        --------
        >>> s.finding_indices(("fail", "warn"))  # doctest: +SKIP
        [3, 0]
        """
        verdicts = (verdicts,) if isinstance(verdicts, str) else tuple(verdicts)
        for v in verdicts:
            check_choice("verdicts", v, VERDICTS)
        kept = [k for k, f in enumerate(self.findings) if f.verdict in verdicts]
        return sorted(kept, key=lambda k: VERDICTS.index(self.findings[k].verdict))

    def open_finding(self, index: int) -> FindingEpisode:
        """Open finding ``index``'s first episode, as the episode view shows it, with the finding's steps in it.

        Raises
        ------
        ParameterError
            No such finding, or one that names no episode (a distance, a table row).

        Examples
        --------
        >>> opened = s.open_finding(s.finding_indices("fail")[0])  # doctest: +SKIP
        >>> opened.detail.title, opened.positions[:3]  # doctest: +SKIP
        ('episode 12', (4, 5, 9))
        """
        findings = self.findings
        if not findings:
            raise ParameterError("index", "should name a finding, but there are none yet (run_diagnostics() first)",
                                 index)
        index = check_int("index", index, low=0, high=len(findings) - 1,
                          rule=f"should be a finding's index in [0, {len(findings) - 1}]")
        finding = findings[index]
        if not finding.episodes:
            raise ParameterError("index", f"should name a finding with an episode to open; {finding.diagnostic} on "
                                 f"{finding.candidate} names none ({finding.verdict}: {finding.summary})", index)
        episode = finding.episodes[0]
        detail = self.episode(episode)
        starts = getattr(self.diagnosis.context, "episode_starts", None)
        positions = np.zeros(0, dtype=np.int64)
        if starts is not None and finding.rows:
            rows = np.asarray(finding.rows, dtype=np.int64)
            low, high = int(starts[episode]), int(starts[episode + 1])
            positions = rows[(rows >= low) & (rows < high)] - low
            positions = positions[positions < detail.length]
        marks = tuple(detail.steps[detail.step].to_numpy()[positions].tolist())
        opened = FindingEpisode(index=index, finding=finding, episode=int(episode), detail=detail,
                                positions=tuple(int(x) for x in positions), marks=marks)
        self.opened_finding = opened
        return opened


def epic_reasons(m) -> dict:
    """``{name: None or why}`` of an :class:`~rewardlab.diagnostics.epic.EpicMatrix`: None where the candidate
    was evaluable on recombined transitions (a fallback matrix gives its reason for every candidate).

    Examples
    --------
    >>> from types import SimpleNamespace
    >>> epic_reasons(SimpleNamespace(names=("a", "b"), evaluable=(True, False), reasons=("", "it reads x"),
    ...                              fallback=False))
    {'a': None, 'b': 'it reads x'}
    """
    if m.fallback:
        return {n: m.fallback_reason or "EPIC fell back to episode returns" for n in m.names}
    return {n: None if ok else (why or "not evaluable on recombined transitions")
            for n, ok, why in zip(m.names, m.evaluable, m.reasons)}


def _square(names: list, values, index: list) -> pl.DataFrame:
    """``values[index][:, index]`` as a square frame: column ``reward``, then one column per name.

    >>> _square(["b", "a"], [[0.0, 0.3], [0.3, 0.0]], [1, 0])["a"].to_list()
    [0.3, 0.0]
    """
    sub = np.asarray(values, dtype=np.float64)[np.ix_(index, index)]
    return pl.DataFrame({"reward": list(names)} | {n: sub[:, k] for k, n in enumerate(names)},
                        schema={"reward": pl.String} | {n: pl.Float64 for n in names})


def _with_epic(pairs: pl.DataFrame, m, names: list, reasons: dict) -> pl.DataFrame:
    """``pairs`` with ``epic`` and ``epic_stderr`` columns when ``m`` holds EPIC (null where a side is left out)."""
    if m is None:
        return pairs
    where = {n: k for k, n in enumerate(m.names)}
    distance, stderr = np.asarray(m.distance, dtype=np.float64), np.asarray(m.stderr, dtype=np.float64)

    def cell(values, a, b):
        ok = all(x in names and reasons.get(x) is None for x in (a, b))
        return float(values[where[a], where[b]]) if ok else None

    rows = list(zip(pairs["a"].to_list(), pairs["b"].to_list()))
    return pairs.with_columns(pl.Series("epic", [cell(distance, a, b) for a, b in rows], dtype=pl.Float64),
                              pl.Series("epic_stderr", [cell(stderr, a, b) for a, b in rows], dtype=pl.Float64))
