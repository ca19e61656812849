"""Check a plug-in over a dataset folder part by part, and merge the parts' reports into one.

Each part (whole episodes) is checked on its own, in an engine's workers, by
:func:`rewardlab.plugins.check.check_plugin`: every batch mode and size, the
contract on every call, and batch invariance between the runs.  Batches do
not cross parts here (in one frame, ``sequential``, ``dataloader`` and
``shuffled`` batches would straddle the parts' boundaries); what the check
asks -- does the plug-in's reward depend on how the rows are batched? -- is
asked of every part.  Memory holds the parts being checked (``workers`` of
them; default at most :data:`DEFAULT_CHECK_WORKERS`).

The merged report reads like one check of the whole data: transitions and
episodes summed, each run's calls summed, contract problems by rule (counts
summed, the first occurrence named with its part), differences by run (the
first differing row counted in the whole dataset, its part named), the
reward scale over every part (a warning only where the contract asks for
mean 0 / std 1: kanachan's).  The check stops at the first part that
fails (the report says how many parts were checked): a corpus need not be
read to the end to learn that a plug-in is wrong.

Examples
--------
>>> report = check_plugin_dataset("corpus/", "data/plugins/rank_top.py")  # doctest: +SKIP
>>> print(report)  # doctest: +SKIP
"""

from __future__ import annotations

import dataclasses
import math
from pathlib import Path
from typing import Sequence

from rewardlab.contracts.checks import RewardScale
from rewardlab.core.errors import ParameterError, check_int
from rewardlab.engines.embedded import available_cores
from rewardlab.plugins.batch_modes import CHECK_BATCH_SIZES, DEFAULT_NUM_WORKERS
from rewardlab.plugins.check import CheckReport, Difference, RunSummary, check_plugin
from rewardlab.sources.datasets import PartedDataset, read_part_file
from rewardlab.sources.datasets.work import map_parts

__all__ = ["check_plugin_dataset", "merge_reports", "DEFAULT_CHECK_WORKERS"]

#: Parts checked at once by default (each is held whole, with every run's rewards, while it is checked).
DEFAULT_CHECK_WORKERS = 4


def _check_part(item: tuple) -> CheckReport:
    path, rows, _, plugin, options = item
    return check_plugin(read_part_file(path, rows), Path(plugin), **options)


def check_plugin_dataset(dataset, plugin, *, batch_sizes: Sequence[int] = CHECK_BATCH_SIZES, seed: int = 0,
                         num_workers: int = DEFAULT_NUM_WORKERS, strict: bool = True, isolate: bool | None = None,
                         timeout: float | None = None, engine: str = "embedded", workers: int | None = None,
                         address: str | None = None, progress: bool | None = None) -> CheckReport:
    """:func:`~rewardlab.plugins.check.check_plugin` over every part of a dataset folder, merged.

    Parameters
    ----------
    dataset : path or PartedDataset
        A dataset folder (``rewardlab convert ... --out FOLDER``).
    plugin : path
        The plug-in file (loaded in each part's child process).
    batch_sizes, seed, num_workers, strict, isolate, timeout
        As :func:`~rewardlab.plugins.check.check_plugin`, for each part
        (``timeout``: per part).
    engine, workers, address
        Where the parts are checked (:mod:`rewardlab.engines`); ``workers``
        defaults to the cores, at most :data:`DEFAULT_CHECK_WORKERS`.
    progress : bool, optional
        A bar over the parts.

    Returns
    -------
    CheckReport
        The merged report (see the module's text); ``parts`` is
        ``(checked, total)``.

    Examples
    --------
    >>> check_plugin_dataset("corpus/", "rank_top.py", workers=2).ok  # doctest: +SKIP
    True
    """
    ds = dataset if isinstance(dataset, PartedDataset) else PartedDataset(dataset)
    if not isinstance(plugin, (str, Path)):
        raise ParameterError("plugin", "should be a plug-in file (a path) for a dataset folder: each part is "
                             "checked in its own process", type(plugin).__name__)
    workers = min(available_cores(), DEFAULT_CHECK_WORKERS) if workers is None else check_int("workers", workers,
                                                                                               low=1)
    options = {"batch_sizes": tuple(batch_sizes), "seed": seed, "num_workers": num_workers, "strict": strict,
               "isolate": isolate, "timeout": timeout, "progress": False}
    offsets = [0]
    for entry in ds.manifest.parts:
        offsets.append(offsets[-1] + entry.rows)
    reports: list[tuple[int, int, CheckReport]] = []
    results = map_parts(ds, _check_part, (str(plugin), options), engine=engine, workers=workers, address=address,
                        progress=progress, desc=f"check_plugin {Path(plugin).stem}")
    try:
        for index, report in enumerate(results):
            reports.append((index, offsets[index], report))
            if not report.ok:
                break  # the first failing part decides; the rest need not be read
    finally:
        results.close()
    if not reports:
        raise ParameterError("dataset", "should hold at least one part to check a plug-in on", str(ds.folder))
    return merge_reports(reports, total_parts=len(ds), paths=[str(p) for p in ds.paths])


def merge_reports(reports: Sequence[tuple[int, int, CheckReport]], *, total_parts: int,
                  paths: Sequence[str] | None = None) -> CheckReport:
    """One report of the parts' reports ``(part index, first row, report)``, in part order.

    Examples
    --------
    >>> merged = merge_reports([(0, 0, a), (1, 1000, b)], total_parts=2)  # doctest: +SKIP
    >>> merged.transitions == a.transitions + b.transitions  # doctest: +SKIP
    True
    """
    if not reports:
        raise ParameterError("reports", "should hold at least one part's report", [])
    first = reports[0][2]

    def part(index: int) -> str:
        return f"part {index}" + (f" ({Path(paths[index]).name})" if paths is not None else "")

    runs: dict[str, RunSummary] = {}
    for index, _, report in reports:
        for run in report.runs:
            have = runs.get(run.label)
            if have is None:
                runs[run.label] = dataclasses.replace(run, error=_at(run.error, part(index)))
                continue
            runs[run.label] = dataclasses.replace(
                have, calls=have.calls + run.calls,
                reward_dtypes=tuple(dict.fromkeys([*have.reward_dtypes, *run.reward_dtypes])),
                error=have.error or _at(run.error, part(index)),
                error_summary=have.error_summary or run.error_summary,
                error_traceback=have.error_traceback or run.error_traceback)
    problems: dict[str, list] = {}
    for index, _, report in reports:
        for rule, message, count, where in report.problems:
            if rule not in problems:
                problems[rule] = [rule, f"{message} ({part(index)})", count, where]
            else:
                problems[rule][2] += count
                problems[rule][3] = ", ".join(dict.fromkeys([*problems[rule][3].split(", "), *where.split(", ")]))
    stopped = next((f"{part(i)}: {r.stopped}" for i, _, r in reports if r.stopped), None)
    finals = [r.final_states for _, _, r in reports]
    return CheckReport(
        plugin=first.plugin,
        transitions=sum(r.transitions for _, _, r in reports),
        episodes=sum(r.episodes for _, _, r in reports),
        runs=tuple(runs.values()),
        problems=tuple(tuple(p) for p in problems.values()),
        differences=_merged_differences([(i, o, r.differences) for i, o, r in reports], part),
        scale=_merged_scale([r.scale for _, _, r in reports]),
        seed=first.seed,
        convention_differences=_merged_differences([(i, o, r.convention_differences) for i, o, r in reports],
                                                   part),
        warnings=tuple(dict.fromkeys(w for _, _, r in reports for w in r.warnings)),
        hints=tuple(dict.fromkeys(h for _, _, r in reports for h in r.hints)),
        stopped=stopped,
        num_workers=first.num_workers,
        final_states=None if any(f is None for f in finals) else (sum(f[0] for f in finals),
                                                                   sum(f[1] for f in finals)),
        parts=(len(reports), total_parts),
        contract=first.contract, data=first.data, trainer=first.trainer, scale_asked=first.scale_asked,
    )


def _at(text: str | None, where: str) -> str | None:
    return None if text is None else f"{where}: {text}"


def _merged_differences(per_part, part) -> tuple:
    merged: dict[tuple, Difference] = {}
    for index, offset, differences in per_part:
        for d in differences:
            key = (d.run, d.reference, d.allowed)
            have = merged.get(key)
            if have is None:
                merged[key] = dataclasses.replace(d, row=d.row + offset, where=f"{d.where}, {part(index)}")
            else:
                merged[key] = dataclasses.replace(have, rewards=have.rewards + d.rewards, dones=have.dones + d.dones,
                                                  max_abs=max(have.max_abs, d.max_abs))
    return tuple(merged.values())


def _merged_scale(scales: list[RewardScale | None]) -> RewardScale | None:
    """The scale over every part's transitions, from each part's count, mean and (population) std."""
    if any(s is None for s in scales):
        return None

    def pool(triples):
        n = sum(c for _, _, c in triples)
        if not n:
            return math.nan, math.nan, 0
        s = math.fsum(m * c for m, _, c in triples if c)
        q = math.fsum((sd * sd + m * m) * c for m, sd, c in triples if c)
        mean = s / n
        return mean, math.sqrt(max(q / n - mean * mean, 0.0)), n

    mean, std, count = pool([(s.mean, s.std, s.count) for s in scales])
    mean_all, std_all, count_all = pool([(s.mean_all, s.std_all, s.count_all) for s in scales])
    return RewardScale(mean, std, count, mean_all, std_all, count_all)
