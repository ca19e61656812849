"""Check a plug-in in every batch mode and convention, and report whether its rewards depend on batching.

Examples
--------
>>> from rewardlab.plugins import check_plugin
>>> print(check_plugin(frame, "data/plugins/rank_top.py"))  # doctest: +SKIP
"""

from __future__ import annotations

import ast
import dataclasses
from typing import Iterable, Sequence

import numpy as np
import polars as pl

from rewardlab.plugins import isolation
from rewardlab.plugins.batch_modes import BATCH_MODES, CHECK_BATCH_SIZES, DEFAULT_NUM_WORKERS, check_batch_size, \
    check_num_workers, mode_setting
from rewardlab.contracts.advice import scale_advice
from rewardlab.contracts.checks import RewardScale, compare_outputs, float16_precision, reward_scale
from rewardlab.contracts.base import Contract
from rewardlab.contracts.registry import contract_for
from rewardlab.core.spec import FrameSpec
from rewardlab.core.errors import ParameterError, PluginRunCancelled, check_int
from rewardlab.plugins.execution import (
    check_cancel, check_isolation, execute, failure_error, load_items,
    plugin_items, progress_bar,
)
from rewardlab.plugins.loading import Plugin
from rewardlab.plugins.manager_check import check_manager
from rewardlab.plugins.managers import manager_items
from rewardlab.plugins.probes import padding_probes, padding_warning
from rewardlab.plugins.shards import ShardLocator, as_shard_frames, run_shards, shard_arrays
from rewardlab.plugins.runner import Locator, RunOutcome, resolve
from rewardlab.contracts.kanachan.trainer_scope import TRAINER_NAMES, UNAVAILABLE

__all__ = ["check_plugin", "CheckReport", "RunSummary", "Difference", "CHECK_BATCH_SIZES"]

@dataclasses.dataclass(frozen=True)
class RunSummary:
    """One run of :func:`check_plugin`: a batch mode, size, ``contiguous`` flag and convention.

    Attributes
    ----------
    mode : str
    batch_size : int or None
        None for ``episodes``.
    contiguous : bool
    calls : int
    error : str or None
        The plug-in's exception (message with traceback), when it raised,
        ended its process or ran out of time.
    num_workers : int or None
        DataLoader workers (``dataloader`` runs).
    convention : str or None
        The contract's convention (kanachan: ``"offline"`` or
        ``"simulation"``); None for a contract that has none.
    reward_dtypes : tuple of str
        The reward dtypes the plug-in returned in this run.
    error_summary : str or None
        The error's first line, without the batch (runs that failed the
        same way share it).
    error_traceback : str or None
        The plug-in's traceback, when there is one.

    Examples
    --------
    >>> RunSummary("shuffled", 64, False, 10, None).label
    'shuffled x64'
    >>> RunSummary("dataloader", 64, False, 10, None, num_workers=2).label
    'dataloader x64 (2 workers)'
    >>> RunSummary("episodes", None, True, 10, None, convention="simulation").label
    'simulation episodes (contiguous=True)'
    """

    mode: str
    batch_size: int | None
    contiguous: bool
    calls: int
    error: str | None
    num_workers: int | None = None
    convention: str | None = "offline"
    reward_dtypes: tuple = ()
    error_summary: str | None = None
    error_traceback: str | None = None

    @property
    def label(self) -> str:
        """``episodes``, ``episodes (contiguous=True)``, ``sequential x64``, ``dataloader x64 (2 workers)``."""
        text = self.mode if self.batch_size is None else f"{self.mode} x{self.batch_size}"
        if self.mode == "episodes" and self.contiguous:
            text += " (contiguous=True)"
        if self.mode == "dataloader" and self.num_workers is not None:
            text += f" ({self.num_workers} worker{'s' if self.num_workers != 1 else ''})"
        if self.convention not in (None, "offline"):
            text = f"{self.convention} {text}"
        return text


@dataclasses.dataclass(frozen=True)
class Difference:
    """How a run's rewards and dones differ from a reference run.

    Attributes
    ----------
    run, reference : str
        Run labels (``"shuffled x64"``, ``"episodes"``).
    rewards, dones : int
        Transitions whose reward / done differ.
    max_abs : float
        Largest absolute reward difference.
    row : int
        Frame row of the first differing transition.
    where : str
        That transition: game, seat, step and ``file:line``.
    values : tuple
        ``(reward, reference reward, done, reference done)`` there.
    allowed : bool
        True when the difference is between ``contiguous=True`` and
        ``contiguous=False`` runs of a plug-in that reads ``contiguous``.

    Examples
    --------
    >>> d = Difference("sequential x64", "episodes", 3, 0, 0.5, 7, "frame row 7", (0.5, 0.0, True, True),
    ...                False)
    >>> str(d).startswith("sequential x64 differs from episodes: 3 rewards and 0 dones")
    True
    """

    run: str
    reference: str
    rewards: int
    dones: int
    max_abs: float
    row: int
    where: str
    values: tuple
    allowed: bool

    def __str__(self) -> str:
        r, r0, d, d0 = self.values
        text = (f"{self.run} differs from {self.reference}: {self.rewards:,} rewards and "
                f"{self.dones:,} dones; largest |reward difference| {self.max_abs:.6g}; first at "
                f"{self.where}: reward {r!r} vs {r0!r}, done {d} vs {d0}")
        if self.allowed:
            text += " (allowed: the plug-in reads `contiguous`)"
        return text


@dataclasses.dataclass(frozen=True)
class CheckReport:
    """The result of :func:`check_plugin`; ``print`` it for a readable report.

    Attributes
    ----------
    plugin : Plugin
    transitions, episodes : int
        Size of the data checked.
    runs : tuple of RunSummary
        Every run made, ``episodes`` first.
    problems : tuple of (str, str, int, str)
        Contract problems: ``(rule, message of the first occurrence (with
        its batch and transition), number of batches, runs where it occurred)``.
    differences : tuple of Difference
        Runs whose rewards or dones differ from their reference.
    scale : RewardScale or None
        Reward scale of the first run (None if it failed or saw no transitions).
    seed : int
        Seed of the shuffled runs.
    convention_differences : tuple of Difference
        Where the plug-in's rewards under kanachan's simulation convention
        differ from the offline convention (same episodes, contiguous=True):
        a warning, not a failure (a plug-in tuned offline behaves otherwise
        in self-play).
    warnings : tuple of str
        Things that do not fail the check but matter: names taken from
        kanachan's trainer scope, float16 precision, dtypes that change
        between calls.
    hints : tuple of str
        Likely causes of the differences (batch statistics).
    stopped : str or None
        Why the check stopped before making every run (the plug-in ended its
        process or ran out of time).
    num_workers : int
        Workers of the ``dataloader`` runs.
    final_states : tuple of int or None
        ``(kept, episodes)``: how many episodes' final states the data keeps
        (the rest hand padding as the next state after their last step);
        None for a contract whose padding is part of it (kanachan's).
    parts : tuple of int or None
        ``(checked, total)`` for a dataset folder checked part by part
        (:mod:`rewardlab.plugins.check_parts`); None for one frame.
    contract : str or None
        The contract the plug-in ran under (``"kanachan"``, ``"steps"``).
    data : str or None
        The name of the data's spec (``"kanachan"``, ``"gymnasium"``, ``"steps"``).
    trainer : str
        What receives the rewards, in the contract's words (``"kanachan's trainer"``).
    scale_asked : bool
        True when the contract asks for rewards near mean 0 / std 1 (kanachan's
        wiki advice): only then is a scale far from it a warning; otherwise the
        scale is reported as a fact.

    Examples
    --------
    >>> report = check_plugin(frame, "data/plugins/rank_top.py")  # doctest: +SKIP
    >>> report.ok  # doctest: +SKIP
    True
    """

    plugin: Plugin
    transitions: int
    episodes: int
    runs: tuple
    problems: tuple
    differences: tuple
    scale: RewardScale | None
    seed: int
    convention_differences: tuple = ()
    warnings: tuple = ()
    hints: tuple = ()
    stopped: str | None = None
    num_workers: int = DEFAULT_NUM_WORKERS
    final_states: tuple | None = None
    parts: tuple | None = None
    contract: str | None = None
    data: str | None = None
    trainer: str = "kanachan's trainer"
    scale_asked: bool = True

    @property
    def scale_warning(self) -> bool:
        """True when the contract asks for mean 0 / std 1 and the rewards are far from it."""
        return self.scale_asked and self.scale is not None and bool(self.scale.count_all) and self.scale.far

    @property
    def reward_dtype(self) -> str | None:
        """The reward dtype the plug-in returned (the widest, if it varied); None if none came back."""
        seen = {d for r in self.runs for d in r.reward_dtypes}
        order = ("float16", "float32", "float64")
        return max(seen, key=order.index) if seen else None

    @property
    def ok(self) -> bool:
        """True when every run finished without an exception, the check saw transitions, no
        contract rule was broken, and every difference is allowed.

        Warnings (reward scale where the contract asks for one, simulation
        convention, trainer names, float16 precision) are reported but do not
        fail the check.
        """
        return (self.stopped is None and self.transitions > 0
                and all(r.error is None for r in self.runs) and not self.problems
                and all(d.allowed for d in self.differences)
                and (self.parts is None or self.parts[0] == self.parts[1]))

    def __str__(self) -> str:
        p = self.plugin
        under = "" if self.contract is None else (
            f" ({'' if self.data is None else repr(self.data) + ' data, '}{self.contract} contract)")
        lines = [f"check-plugin {p.name!r} ({p.path})",
                 f"  data: {self.transitions:,} transitions, {self.episodes:,} episodes{under}"
                 + ("" if self.final_states is None else
                    f"; final states kept for {self.final_states[0]:,} of them"
                    + ("" if self.final_states[0] == self.final_states[1] else
                       " (after the others' last step the next state is padding)"))
                 + ("" if self.parts is None else
                    f"; {self.parts[0]:,} of {self.parts[1]:,} parts, each checked on its own (batches do "
                    "not cross parts)" + ("" if self.parts[0] == self.parts[1] else
                                          ": the check stopped at the first part that failed")),
                 "  runs: " + ", ".join(r.label for r in self.runs)
                 + f" (the shuffled runs use seed {self.seed})",
                 f"  reads `contiguous`: {'yes' if p.reads_contiguous else 'no'}"]
        if self.reward_dtype is not None:
            lines.append(f"  reward dtype: {self.reward_dtype} (kept as returned: what {self.trainer} "
                         "receives)")
        lines.append("")
        failed = [r for r in self.runs if r.error]
        if self.stopped:
            lines.append(f"stopped: {self.stopped}")
        if failed:
            lines.append(f"exceptions: {len(failed)} run(s) stopped by the plug-in")
            groups: dict = {}
            for r in failed:
                groups.setdefault((r.error_summary or r.error, r.error_traceback), []).append(r)
            for (summary, tb), runs in groups.items():
                first = runs[0]
                lines.append(f"  - {', '.join(r.label for r in runs)}: " + (
                    first.error if len(runs) == 1 else
                    f"the same failure in each; the first ({first.label}): {first.error}"
                ).replace("\n", "\n    "))
        if not self.transitions:
            lines.append("contract: not checked (no transitions)")
        elif failed or self.stopped:
            lines.append("contract: not fully checked (a run stopped early)"
                         + (f"; {len(self.problems)} problem(s) found before" if self.problems else ""))
        else:
            lines.append("contract: " + ("ok" if not self.problems else f"{len(self.problems)} problem(s)"))
        for rule, message, count, runs in self.problems:
            lines.append(f"  - [{rule}] in {count:,} batch(es) ({runs}); first: {message}")
        compared = len([r for r in self.runs if r.error is None
                        and r.convention in (None, "offline")]) - 1
        bad = [d for d in self.differences if not d.allowed]
        allowed = [d for d in self.differences if d.allowed]
        if compared < 1 or not self.transitions:
            lines.append("batch invariance: not checked (fewer than two runs finished)")
        elif not self.differences:
            lines.append("batch invariance: ok (every mode and batch size gives the same rewards "
                         "and dones)")
        else:
            head = f"{len(bad)} run(s) differ" if bad else "ok"
            if allowed:
                head += (f"; {len(allowed)} run(s) differ between contiguous=True and "
                         "contiguous=False, which is allowed because the plug-in reads `contiguous`")
            lines.append("batch invariance: " + head)
            for d in self.differences:
                lines.append(f"  - {d}")
            for hint in self.hints:
                lines.append(f"  hint: {hint}")
        sim = [r for r in self.runs if r.convention == "simulation"]
        if sim and sim[0].error is None and self.transitions:
            if self.convention_differences:
                lines.append("simulation convention: WARNING the rewards differ from the offline "
                             "files' convention (kanachan's simulator marks the game's last step "
                             "end_of_round and gives no round summary)")
                for d in self.convention_differences:
                    lines.append(f"  - {d}")
            else:
                lines.append("simulation convention: ok (same rewards and dones as in the offline "
                             "convention)")
        if self.scale is not None and self.scale.count_all:
            if self.scale_asked:  # kanachan's wiki advice: rewards near mean 0 / std 1
                verdict = "WARNING far from mean 0 / std 1" if self.scale.far else "ok"
                lines.append(f"reward scale: {verdict}: {self.scale}")
            else:  # the contract asks for no scale: a fact, not a verdict
                lines.append(f"reward scale: {self.scale}")
        for w in self.warnings:
            lines.append(f"warning: {w}")
        lines.append("")
        lines.append("result: " + ("PASS" if self.ok else "FAIL"))
        return "\n".join(lines)


@dataclasses.dataclass(frozen=True)
class _Config:
    mode: str
    batch_size: int | None
    contiguous: bool
    convention: str | None = "offline"


def _configs(sizes: list[int], conventions: tuple) -> list[_Config]:
    """The runs: every mode in the contract's default convention, then whole episodes in each other one."""
    default = conventions[0] if conventions else None
    configs = [_Config("episodes", None, False, default), _Config("episodes", None, True, default)]
    configs += [_Config(m, b, False, default) for m in BATCH_MODES if m != "episodes" for b in sizes]
    configs += [_Config("episodes", None, True, c) for c in conventions[1:]]
    return configs


def check_plugin(
    frame: pl.DataFrame | Iterable[pl.DataFrame],
    plugin,
    *,
    batch_sizes: Sequence[int] = CHECK_BATCH_SIZES,
    seed: int = 0,
    num_workers: int = DEFAULT_NUM_WORKERS,
    strict: bool = True,
    isolate: bool | None = None,
    timeout: float | None = None,
    cancel=None,
    progress=None,
    contract: str | Contract | None = None,
    spec: FrameSpec | None = None,
) -> CheckReport:
    """Check a plug-in's contract in every batch mode, and that its rewards do not depend on batching.

    The plug-in runs in ``episodes`` twice (whole episodes with ``contiguous``
    False, the default, and True: kanachan's replay buffer with
    ``contiguous_training_data`` False and True), once per batch
    size in ``sequential``, ``dataloader`` (``num_workers`` workers),
    ``fragments`` and ``shuffled``, and (kanachan contract) once on whole
    episodes in kanachan's *simulation* convention; every call is checked as in
    :func:`apply_plugins` but problems are collected, not raised.  Then every
    offline run's rewards and dones are compared with the first ``episodes``
    run (``|a - b| <= 1e-9 + 1e-7 * |b|``).  A plug-in that reads
    ``contiguous`` may differ between ``contiguous=True`` and False: those
    differences are reported as allowed.  The simulation run is compared with
    the offline ``contiguous=True`` run; a difference is a warning.

    By default the file is loaded and run in a child process: a plug-in that
    exits, kills its process or runs past ``timeout`` is reported as failing,
    with what it was doing (and, for a hang, its own stack), never as a pass.

    Parameters
    ----------
    frame : polars.DataFrame or iterable of them
        The common frame, or its shards (frames of whole episodes in
        episode order, held in memory; :mod:`rewardlab.plugins.shards`):
        the report is the frame's, rows counted from the first shard.
    plugin : Plugin or path
    batch_sizes : sequence of int
        Distinct batch sizes >= 1 tried in the modes other than ``episodes``.
    seed : int
        Seed of ``shuffled``.
    num_workers : int
        Workers of the ``dataloader`` runs (default 2, what kanachan's
        ``cql/train.py`` uses on CUDA).
    strict : bool
        Exact IN-field checks against a pristine copy after every call (the
        default here: a check should be thorough); False watches version
        counters only, as :func:`apply_plugins` does by default.
    isolate : bool or None
        Load and run the plug-in in a child process (None: where the
        platform can fork).
    timeout : float or None
        Seconds for the whole check before the plug-in is stopped.
    cancel : callable or None
        Polled while the check works; once it returns True the check stops
        (its child process is killed; in-process, between runs) and
        :class:`~rewardlab.core.errors.PluginRunCancelled` is raised.
    progress : bool, None or callable
        Progress bar; a callable gets ``progress(fraction, message)`` instead.
    contract : str, Contract or None
        The plug-in contract; None takes the one the frame's spec names
        (:func:`rewardlab.contracts.registry.contract_for`).
    spec : FrameSpec or None
        The frame's spec, when the frame does not carry one.

    Returns
    -------
    CheckReport
        Or, for a file defining ``RewardManager``, a
        :class:`~rewardlab.plugins.manager_check.ManagerCheckReport`
        (:func:`~rewardlab.plugins.manager_check.check_manager`: determinism
        and reset, not batch modes).

    Raises
    ------
    PluginLoadError
        The file does not load (also when its code exits or hangs while loading).

    Examples
    --------
    >>> report = check_plugin(frame, "data/plugins/round_delta.py")  # doctest: +SKIP
    >>> print(report)  # doctest: +SKIP
    """
    managers = manager_items([plugin]) if plugin is not None else None
    if managers is not None:  # a file defining RewardManager: determinism and reset, not batch modes
        if contract is not None and getattr(contract, "name", contract) != "manager":
            raise ParameterError("contract", "should be None or 'manager' for a file that defines RewardManager",
                                 getattr(contract, "name", contract))
        return check_manager(frame, managers[0], seed=seed, isolate=isolate, timeout=timeout, cancel=cancel,
                             progress=progress, spec=spec)
    shards, _ = as_shard_frames(frame)
    if isinstance(batch_sizes, (str, bytes)) or not isinstance(batch_sizes, Sequence) or not batch_sizes:
        raise ParameterError("batch_sizes", "should be a non-empty sequence of integers >= 1",
                             batch_sizes)
    sizes = [check_batch_size(b, "batch_sizes") for b in batch_sizes]
    if len(set(sizes)) != len(sizes):
        raise ParameterError("batch_sizes", "should be distinct", list(batch_sizes))
    seed = check_int("seed", seed, low=0, rule="should be an integer >= 0")
    num_workers = check_num_workers(num_workers)
    if not isinstance(strict, bool):
        raise ParameterError("strict", "should be True or False", strict)
    isolate, timeout = check_isolation(isolate, timeout)
    cancel = check_cancel(cancel)
    chosen, frame_spec = contract_for(shards[0], contract, spec=spec)
    [(item, name, path)] = plugin_items([plugin], chosen)
    arrays = shard_arrays(shards, lambda shard: chosen.arrays(shard, frame_spec))
    n = sum(a.n for a in arrays)
    locator = ShardLocator(shards, columns=chosen.locator_columns(frame_spec))
    configs = _configs(sizes, chosen.conventions)
    bar = progress_bar(progress, n * len(configs), f"check_plugin {name}")

    def job(status, send):
        [loaded] = load_items([(item, name, path)], status, chosen)
        send(loaded.portable())
        for cfg in configs:
            if status is None and cancel is not None and cancel():
                raise PluginRunCancelled(name)
            setting = mode_setting(cfg.mode, contiguous=cfg.contiguous, num_workers=num_workers,
                                   settings=chosen.mode_settings)
            if cfg.convention == "simulation":
                setting = "kanachan's simulator (simulation convention)"
            [outcome] = run_shards(arrays, [loaded], mode=cfg.mode, batch_size=cfg.batch_size,
                                   seed=seed, contiguous=cfg.contiguous, num_workers=num_workers,
                                   strict=strict, collect=True,
                                   bar=None if isolate else bar, convention=cfg.convention,
                                   setting=setting, status=status, interrupts_are_plugins=isolate,
                                   contract=chosen)
            outcome.plugin = loaded.portable()
            send(outcome)
        for probe in padding_probes(chosen, arrays):  # does the plug-in read padded next states?
            [outcome] = run_shards(probe, [loaded], mode="episodes", batch_size=None, seed=seed,
                                   contiguous=False, num_workers=num_workers, strict=strict, collect=True,
                                   bar=None, convention=configs[0].convention, setting="episodes (padding probe)",
                                   status=status, interrupts_are_plugins=isolate, contract=chosen)
            outcome.plugin = loaded.portable()
            send(outcome)
        return None

    try:
        result, parts = execute(job, isolate=isolate, timeout=timeout, bar=bar, cancel=cancel,
                                 name=name)
    finally:
        if bar is not None:
            bar.close()
    stopped = None
    if isinstance(result, isolation.ChildFailure) and not parts:
        raise failure_error(result, name, path, loading=True)
    report_plugin = item if isinstance(item, Plugin) else parts[0]
    outcomes: list[RunOutcome] = parts[1:len(configs) + 1]
    probes: list[RunOutcome] = parts[len(configs) + 1:]
    probe_failed = isinstance(result, isolation.ChildFailure) and len(outcomes) == len(configs)
    if isinstance(result, isolation.ChildFailure) and not probe_failed:
        cfg = configs[len(outcomes)]
        error = failure_error(result, name, path, loading=False)
        how = (f"ran out of time ({result.detail})" if result.how == "timeout" else
               f"ended its process ({result.detail})" if result.how in ("exit", "signal") else
               "failed in its process")
        stopped = (f"the plug-in {how} during the run {_label(cfg, num_workers)}, so no further run "
                   "was made (see below)")
        outcome = RunOutcome(report_plugin, cfg.mode, cfg.batch_size, np.full(n, np.nan),
                             np.concatenate([chosen.episode_flags(a) for a in arrays] or [np.zeros(0, bool)]),
                             error=error,
                             contiguous=cfg.contiguous if cfg.mode == "episodes" else None,
                             convention=cfg.convention)
        outcomes.append(outcome)
    for outcome in outcomes:
        outcome.plugin = report_plugin
    resolve(outcomes, locator)
    done_configs = configs[:len(outcomes)]
    runs = tuple(_summary(o, cfg, num_workers) for o, cfg in zip(outcomes, done_configs))
    offline = [(o, r) for o, r in zip(outcomes, runs) if r.convention == chosen.default_convention]
    differences = tuple(_differences(offline, report_plugin, locator))
    convention_differences = ()
    if len(chosen.conventions) > 1 and len(outcomes) == len(configs):
        sim, sim_run = outcomes[-1], runs[-1]
        ref = next(((o, r) for o, r in offline if r.mode == "episodes" and r.contiguous), None)
        if ref is not None and sim.error is None and ref[0].error is None:
            convention_differences = tuple(
                _differences([ref, (sim, sim_run)], report_plugin, locator))
    first = outcomes[0]
    scale = (reward_scale(first.rewards, first.dones) if first.error is None and n else None)
    episodes = sum(int(chosen.episode_flags(a).sum()) for a in arrays)
    missing = [chosen.missing_finals(a) for a in arrays]  # None: the contract pads by definition
    lacking = None if any(m is None for m in missing) else sum(int(m.sum()) for m in missing)
    padding = padding_warning(chosen, arrays, first, probes, probe_failed, locator, lacking or 0)
    return CheckReport(
        plugin=report_plugin, transitions=n, episodes=episodes,
        runs=runs,
        problems=_merge_problems(outcomes, runs), differences=differences, scale=scale, seed=seed,
        convention_differences=convention_differences,
        warnings=tuple(_warnings(report_plugin, outcomes, runs, chosen)) + padding,
        hints=tuple(_hints(report_plugin)) if any(not d.allowed for d in differences) else (),
        stopped=stopped, num_workers=num_workers,
        final_states=None if lacking is None else (episodes - lacking, episodes),
        contract=chosen.name, data=frame_spec.name if frame_spec is not None else None,
        trainer=chosen.trainer, scale_asked=chosen.asks_unit_scale)


def _label(cfg: _Config, num_workers: int) -> str:
    return RunSummary(cfg.mode, cfg.batch_size, cfg.contiguous, 0, None,
                      num_workers=num_workers if cfg.mode == "dataloader" else None,
                      convention=cfg.convention).label


def _summary(outcome: RunOutcome, cfg: _Config, num_workers: int) -> RunSummary:
    error = outcome.error
    summary = trace = None
    if error is not None:
        summary = error.message.split(" on batch ")[0].split("\n")[0]
        trace = getattr(error, "plugin_traceback", None)
    return RunSummary(cfg.mode, cfg.batch_size, cfg.contiguous, outcome.calls,
                      None if error is None else str(error),
                      num_workers=num_workers if cfg.mode == "dataloader" else None,
                      convention=cfg.convention, reward_dtypes=outcome.reward_dtypes,
                      error_summary=summary, error_traceback=trace)


def _merge_problems(outcomes: list[RunOutcome], runs: tuple) -> tuple:
    merged: dict[str, list] = {}
    for outcome, run in zip(outcomes, runs):
        for rule, (error, count) in outcome.problems.items():
            if rule not in merged:
                merged[rule] = [error.message, 0, []]
            merged[rule][1] += count
            merged[rule][2].append(run.label)
    return tuple((rule, msg, count, ", ".join(labels)) for rule, (msg, count, labels) in merged.items())


def _differences(done: list, plugin: Plugin, locator: Locator):
    """Differences of ``[(outcome, run)]`` from the first one (see :func:`check_plugin`)."""
    done = [(o, r) for o, r in done if o.error is None]
    if len(done) < 2:
        return
    if plugin.reads_contiguous:
        loose = [(o, r) for o, r in done if not r.contiguous]
        pairs = [(o, r, loose[0], True) for o, r in done if r.contiguous and loose]
        pairs += [(o, r, loose[0], False) for o, r in loose[1:]]
    else:
        pairs = [(o, r, done[0], False) for o, r in done[1:]]
    for outcome, run, (ref, ref_run), allowed in pairs:
        if run.convention != ref_run.convention:
            allowed = False  # the simulation comparison is a warning of its own
        diff = compare_outputs(outcome.rewards, outcome.dones, ref.rewards, ref.dones)
        row = diff["first_row"]
        if row is None:
            continue
        yield Difference(
            run=run.label, reference=ref_run.label, rewards=diff["rewards"], dones=diff["dones"],
            max_abs=diff["max_abs"], row=row, where=locator.transition(row),
            values=(float(outcome.rewards[row]), float(ref.rewards[row]),
                    bool(outcome.dones[row]), bool(ref.dones[row])),
            allowed=allowed)


def _warnings(plugin: Plugin, outcomes: list[RunOutcome], runs: tuple, contract: Contract):
    provided = [n for n in plugin.trainer_names if n in TRAINER_NAMES]
    missing = [n for n in plugin.trainer_names if n in UNAVAILABLE]
    if provided:
        statements = sorted({TRAINER_NAMES[n] for n in provided})
        it = 'it' if len(provided) == 1 else 'them'
        where = ("it runs in kanachan's trainer, which exec-s plug-ins into its own module where these names "
                 "exist, but it is not self-contained" if contract.name == "kanachan" else
                 f"rewardlab lends every plug-in kanachan's trainer names, but {contract.trainer} need not "
                 f"provide {it}")
        yield (f"the file uses {', '.join(provided)} without defining or importing {it}: {where}; "
               f"add {'; '.join(statements)} at its top")
    if missing:
        yield (f"the file uses {', '.join(missing)}, which kanachan's trainer has from "
               f"{'; '.join(UNAVAILABLE[n] for n in missing)}; rewardlab cannot provide "
               f"{'it' if len(missing) == 1 else 'them'} and the plug-in should not rely on the "
               "trainer's internals")
    varying = [r.label for r in runs if len(r.reward_dtypes) > 1]
    if varying:
        yield ("the reward dtype changes from call to call in " + ", ".join(varying) + " ("
               + ", ".join(sorted({d for r in runs for d in r.reward_dtypes}))
               + f"): {contract.trainer} receives each batch's dtype as returned")
    for outcome, run in zip(outcomes, runs):
        if outcome.error is None and "float16" in outcome.reward_dtypes:
            lost = float16_precision(outcome.rewards)
            if lost:
                yield f"{lost} (run {run.label})"
            break


_BATCH_STATISTICS = {"mean", "std", "var", "std_mean", "var_mean", "median", "nanmean",
                     "nanmedian", "quantile", "nanquantile", "normalize", "batch_norm", "layer_norm"}


def _hints(plugin: Plugin):
    try:
        tree = ast.parse(plugin.source)
    except SyntaxError:
        return
    found = sorted({(node.lineno, node.func.attr if isinstance(node.func, ast.Attribute) else node.func.id)
                    for node in ast.walk(tree) if isinstance(node, ast.Call)
                    and ((isinstance(node.func, ast.Attribute) and node.func.attr in _BATCH_STATISTICS)
                         or (isinstance(node.func, ast.Name) and node.func.id in _BATCH_STATISTICS))})
    if found:
        where = ", ".join(f"`{name}` on line {line}" for line, name in found[:4])
        yield (f"the plug-in computes statistics ({where}); statistics of the batch depend on how "
               "the data is cut into batches, so the rewards do too: normalize with constants "
               "computed from the training data in advance (rewardlab.normalization_constants, "
               "`rewardlab stats`) instead")
