"""Run every registered diagnostic over candidate rewards: :func:`diagnose`.

:func:`build_context` evaluates the candidates once (plug-ins through
:func:`rewardlab.plugins.apply_plugins`, in a child process by default; reward
columns as they are), finds the episodes through the frame's spec and picks the
base (the recorded reward where the data has one); :func:`diagnose` runs each
registered diagnostic (:func:`rewardlab.diagnostics.registered_diagnostics`)
on that context and collects their findings into a :class:`Diagnosis`.

Examples
--------
>>> import rewardlab
>>> frame = rewardlab.load("data/gym/mountaincar_scripted.parquet")  # doctest: +SKIP
>>> result = diagnose(frame, ["data/plugins/steps/potential_shaping.py"])  # doctest: +SKIP
>>> result.table.select("diagnostic", "candidate", "verdict")  # doctest: +SKIP
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import polars as pl

from rewardlab.analysis.scopes import episode_end_expr
from rewardlab.contracts.registry import contract_for
from rewardlab.core import columns
from rewardlab.core.errors import ParameterError, RewardlabError
from rewardlab.core.spec import FrameSpec
from rewardlab.diagnostics.base import (
    Candidate, DiagnosisContext, DiagnosisOptions, Finding, findings_table, registered_diagnostics, worst_verdict,
)
from rewardlab.plugins.apply import apply_plugins
from rewardlab.plugins.execution import plugin_items, progress_bar
from rewardlab.plugins.loading import Plugin

__all__ = ["Diagnosis", "build_context", "diagnose", "RECORDED", "is_plugin_path"]

#: The recorded reward's candidate name (the steps layout's ``reward_recorded`` column).
RECORDED = "recorded"


@dataclass(frozen=True, eq=False)
class Diagnosis:
    """What :func:`diagnose` found.

    Attributes
    ----------
    findings : tuple of Finding
        Every finding, diagnostic by diagnostic (registry order), candidates in the order given.
    context : DiagnosisContext
        The data and the candidates' rewards they were computed on.
    errors : tuple of (str, str)
        ``(diagnostic, message)`` for a diagnostic that raised; it is reported, never read as a pass.

    Examples
    --------
    >>> d = Diagnosis((Finding("x", "a", "fail", "bad"),), None)
    >>> d.failed, d.worst
    (True, 'fail')
    """

    findings: tuple
    context: DiagnosisContext | None
    errors: tuple = ()

    @property
    def table(self) -> pl.DataFrame:
        """The findings as a table (:func:`rewardlab.diagnostics.findings_table`)."""
        return findings_table(self.findings)

    @property
    def failed(self) -> bool:
        """True when a finding failed or a diagnostic raised."""
        return bool(self.errors) or any(f.failed for f in self.findings)

    @property
    def worst(self) -> str | None:
        """The worst verdict found (``"fail"`` when a diagnostic raised)."""
        return "fail" if self.errors else worst_verdict(self.findings)

    def of(self, candidate: str) -> tuple:
        """The findings about ``candidate`` (as the candidate or as the other side of a pair)."""
        return tuple(f for f in self.findings if candidate in (f.candidate, f.other))


def is_plugin_path(item) -> bool:
    """Whether a candidate names a plug-in file (a path object, a ``.py`` name or a name with a slash) rather
    than a reward column.

    Examples
    --------
    >>> is_plugin_path("mine.py"), is_plugin_path("plugins/mine"), is_plugin_path("recorded")
    (True, True, False)
    """
    if isinstance(item, os.PathLike):
        return True
    return isinstance(item, str) and (item.endswith(".py") or os.sep in item or "/" in item)


def _column_of(names, item: str) -> str | None:
    """The reward column a candidate name refers to (``x`` -> ``reward_x``, ``recorded`` -> ``reward_recorded``)."""
    for column in (item, columns.REWARD_PREFIX + item):
        if column in names and column.startswith(columns.REWARD_PREFIX):
            return column
    return None


def _episodes(frame: pl.DataFrame, spec: FrameSpec):
    names = frame.columns
    flags = [episode_end_expr(names, spec)]
    if spec.terminated is not None and spec.terminated in names:
        flags.append(pl.col(spec.terminated).fill_null(False).alias("_term"))
    if spec.truncated is not None and spec.truncated in names:
        flags.append(pl.col(spec.truncated).fill_null(False).alias("_trunc"))
    table = frame.select(flags)
    end = table["_episode_end"].to_numpy().astype(bool, copy=True)
    if end.size:
        end[-1] = True
    starts = np.concatenate([[0], np.flatnonzero(end) + 1]).astype(np.int64)
    episode_of_row = (np.cumsum(end) - end).astype(np.int64)
    truncated = table["_trunc"].to_numpy().astype(bool) & end if "_trunc" in table.columns else np.zeros_like(end)
    terminated = (table["_term"].to_numpy().astype(bool) & end if "_term" in table.columns
                  else np.zeros_like(end))
    terminated = terminated | (end & ~truncated)  # a last row with neither flag ended (kanachan's end_of_game)
    truncated = truncated & ~terminated
    return episode_of_row, starts, terminated, truncated


def build_context(frame: pl.DataFrame, candidates, *, base: str | None = None,
                  options: DiagnosisOptions | None = None, spec: FrameSpec | None = None,
                  progress=None) -> DiagnosisContext:
    """Evaluate ``candidates`` on ``frame`` and gather what every diagnostic reads.

    Parameters
    ----------
    frame : polars.DataFrame
        Whole episodes in episode order, with a spec (attached, or ``spec``).
    candidates : sequence of (Plugin, path or str)
        Plug-ins (a :class:`~rewardlab.plugins.Plugin` or a ``.py`` path: applied once, in a child
        process unless ``options.isolate`` is False) and reward columns by name (``"recorded"`` or
        ``"reward_recorded"``: read as they are).
    base : str or None
        The candidate or reward column the others are compared with; None takes the recorded reward
        (``reward_recorded``) where the frame has it, else no base (and none when the recorded reward is
        the only candidate: it is then diagnosed on its own).
    options : DiagnosisOptions or None
        The diagnostics' settings (None: the defaults).
    spec : FrameSpec or None
        The frame's spec, when the frame does not carry one.
    progress : bool, None or callable
        Progress of the plug-ins' run (see :func:`rewardlab.plugins.apply_plugins`).

    Returns
    -------
    DiagnosisContext

    Raises
    ------
    ParameterError
        No candidate, a name that is neither a plug-in nor a reward column, two candidates of one name.
    PluginLoadError, PluginRuntimeError, ContractError
        A plug-in failed (its traceback): nothing is diagnosed on a plug-in that does not run.

    Examples
    --------
    >>> ctx = build_context(frame, ["data/plugins/steps/potential_shaping.py"])  # doctest: +SKIP
    >>> [c.name for c in ctx.candidates], ctx.base.name  # doctest: +SKIP
    (['potential_shaping'], 'recorded')
    """
    if not isinstance(frame, pl.DataFrame):
        raise ParameterError("frame", "should be a polars.DataFrame (load the data first)", type(frame).__name__)
    options = DiagnosisOptions() if options is None else options
    if not isinstance(options, DiagnosisOptions):
        raise ParameterError("options", "should be a rewardlab.diagnostics.DiagnosisOptions", type(options).__name__)
    if isinstance(candidates, (str, os.PathLike, Plugin)):
        candidates = [candidates]
    candidates = list(candidates)
    if not candidates:
        raise ParameterError("candidates", "should name at least one plug-in or reward column", candidates)
    contract, frame_spec = contract_for(frame, None, spec=spec)
    names = frame.columns
    plugins, wanted = [], []  # wanted: ("plugin", index) or ("column", column name)
    for item in candidates:
        if isinstance(item, Plugin) or is_plugin_path(item):
            plugins.append(item)
            wanted.append(("plugin", len(plugins) - 1))
        elif isinstance(item, str):
            column = _column_of(names, item)
            if column is None:
                raise ParameterError("candidates", "should be plug-in files (.py) or reward columns of the frame "
                                     "(" + ", ".join(c for c in names if c.startswith(columns.REWARD_PREFIX))
                                     + ")", item)
            wanted.append(("column", column))
        else:
            raise ParameterError("candidates", "should be plug-in paths, Plugin objects or reward column names",
                                 type(item).__name__)
    items = plugin_items(plugins, contract) if plugins else []
    applied = frame
    if plugins:
        applied = apply_plugins(frame, plugins, spec=frame_spec, isolate=options.isolate, timeout=options.timeout,
                                progress=progress, replace=True)
    built, seen = [], set()
    for kind, what in wanted:
        if kind == "plugin":
            item, name, _ = items[what]
            column = columns.reward_column(name)
            plugin = plugins[what]
        else:
            column, plugin = what, None
            name = column.removeprefix(columns.REWARD_PREFIX)
        if name in seen:
            raise ParameterError("candidates", "should have distinct names", name)
        seen.add(name)
        series = applied.get_column(column)
        dtype = str(series.dtype).lower() if series.dtype in (pl.Float16, pl.Float32, pl.Float64) else "float64"
        done = columns.done_column(name)
        terms = {t: applied.get_column(c).cast(pl.Float64).to_numpy()
                 for t, c in columns.term_columns(applied.columns, name).items()} if plugin is not None else {}
        built.append(Candidate(
            name, series.cast(pl.Float64).to_numpy().copy(), dtype=dtype, plugin=plugin, terms=terms,
            dones=applied.get_column(done).to_numpy() if plugin is not None and done in applied.columns else None))
    if base is not None and not isinstance(base, str):
        raise ParameterError("base", "should be a candidate's name or a reward column's name", base)
    base_name = base if base is not None else (
        RECORDED if columns.reward_column(RECORDED) in applied.columns else None)
    base_candidate = None
    if base_name is not None:
        base_candidate = next((c for c in built if c.name == base_name), None)
        if base_candidate is None:
            column = _column_of(applied.columns, base_name)
            if column is None:
                raise ParameterError("base", "should name a candidate or a reward column of the frame", base_name)
            base_candidate = Candidate(column.removeprefix(columns.REWARD_PREFIX),
                                       applied.get_column(column).cast(pl.Float64).to_numpy().copy())
    rest = tuple(c for c in built if c is not base_candidate)
    if not rest:  # every candidate is the base: diagnose it on its own, or say what is missing
        if base is not None:
            raise ParameterError("candidates", f"should name at least one candidate besides the base {base!r}",
                                 [c.name for c in built], hint="Add a plug-in or a reward column to compare with it.")
        rest, base_candidate = tuple(built), None
    episode_of_row, starts, terminated, truncated = _episodes(applied, frame_spec)
    return DiagnosisContext(
        frame=applied, spec=frame_spec, contract=contract, candidates=rest,
        base=base_candidate, options=options, episode_of_row=episode_of_row, episode_starts=starts,
        terminated=terminated, truncated=truncated)


def diagnose(frame: pl.DataFrame, candidates, *, base: str | None = None, options: DiagnosisOptions | None = None,
             spec: FrameSpec | None = None, only=None, progress=None) -> Diagnosis:
    """Run every registered diagnostic on ``candidates`` over ``frame``: verdicts with their evidence.

    Parameters
    ----------
    frame : polars.DataFrame
        Whole episodes in episode order, with a spec.
    candidates : sequence of (Plugin, path or str)
        Plug-ins and reward columns (see :func:`build_context`).
    base : str or None
        What candidates are compared with (None: the recorded reward where the data has one).
    options : DiagnosisOptions or None
        Discount, the potential's basis, EPIC's sample, the normalizer, seeds (None: defaults).
    spec : FrameSpec or None
        The frame's spec, when the frame does not carry one.
    only : sequence of str or None
        Run only these diagnostics (registered names, or a prefix ending in ``.``: ``"trap."``).
    progress : bool, None or callable
        A bar over the plug-ins' run and the diagnostics (None: on an interactive terminal or Jupyter).

    Returns
    -------
    Diagnosis
        ``.findings``, ``.table``, ``.failed`` (a ``fail`` verdict or a diagnostic that raised).

    Raises
    ------
    ParameterError
        Bad arguments (see :func:`build_context`), ``only`` naming no registered diagnostic.
    PluginLoadError, PluginRuntimeError, ContractError
        A candidate plug-in failed to run.

    Examples
    --------
    >>> result = diagnose(frame, ["a.py", "b.py"], base="recorded")  # doctest: +SKIP
    >>> result.failed  # doctest: +SKIP
    False
    """
    registry = registered_diagnostics()
    chosen = list(registry.values())
    if only is not None:
        wanted = [only] if isinstance(only, str) else list(only)
        picked = {n: [d for d in chosen if d.name == n or (n.endswith(".") and d.name.startswith(n))] for n in wanted}
        for name, found in picked.items():
            if not found:
                raise ParameterError("only", "should name registered diagnostics: " + ", ".join(registry), name)
        chosen = [d for d in chosen if any(d in found for found in picked.values())]
    context = build_context(frame, candidates, base=base, options=options, spec=spec, progress=progress)
    bar = progress_bar(progress, len(chosen), "diagnose")
    findings, errors = [], []
    try:
        for diagnostic in chosen:
            if hasattr(bar, "set_postfix_str"):
                bar.set_postfix_str(diagnostic.name)
            try:
                found = diagnostic.run(context)
            except RewardlabError as exc:  # a plug-in that fails on probes or recombined data: reported as such
                errors.append((diagnostic.name, str(exc)))
                found = [Finding(diagnostic.name, c.name, "fail", f"the diagnostic stopped: {exc}")
                         for c in context.candidates]
            findings.extend(found)
            if bar is not None:
                bar.update(1)
    finally:
        if bar is not None:
            bar.close()
    return Diagnosis(tuple(findings), context, tuple(errors))
