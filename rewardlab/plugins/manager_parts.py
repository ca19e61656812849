"""Reward managers over a dataset folder, part by part: whole trials, whichever parts they span.

:func:`rewardlab.plugins.apply_parts.apply_to_dataset` sends manager files
(:func:`rewardlab.plugins.managers.manager_items`) here for the two things
that differ from ``get_reward`` plug-ins; everything else (the rewards
dataset, one table per input part with the input's keys and context and
``reward_<name>`` / ``done_<name>``, its staging folder and manifest, the
child process and its timeout) is the plug-ins' own.

* What the child is fed (:func:`trial_chunks`, in the parent, where Polars
  may run): the parts' rows as :class:`~rewardlab.plugins.manager_steps.JointArrays`
  of whole trials.  A trial is a value of the spec's episode key without
  the agent column, and a dataset's parts are cut at the spec's episodes,
  which for a step table are one agent's trajectory: one trial can span
  parts.  A part whose last trial goes on in the next part is fed together
  with it (as many parts as the trial spans; never more).  A trial that
  comes back after another trial's rows, in a later part, is refused as
  :func:`~rewardlab.plugins.apply_managers` refuses it on the whole frame.
* What the child does with them (:func:`part_job`): each manager's
  ``RewardManager()`` is constructed once and runs every trial, in the
  data's order, exactly as over the whole frame
  (:func:`~rewardlab.plugins.managers.run_trials`), so the rewards equal
  :func:`~rewardlab.plugins.managers.apply_managers`' over the parts
  concatenated, bit for bit; each part's rewards go back as soon as its
  trials are done.

All the parts are one work item, in order (one manager process): a later
part's trial may be an earlier one's coming back, which only one pass over
every part sees.  Resuming a stopped run is refused (a trial may span the
parts where it stopped); so are the batch options, which a manager has no
use for (:func:`check_part_options`).

Examples
--------
>>> from rewardlab.plugins.apply_parts import apply_to_dataset
>>> apply_to_dataset("bar-folder", "examples/managers/el_farol_difference.py", "bar-rewards")  # doctest: +SKIP
"""

from __future__ import annotations

import dataclasses
from typing import Iterator

import numpy as np
import polars as pl

from rewardlab.contracts.manager import check_manager_options
from rewardlab.core.errors import ParameterError, SpecError
from rewardlab.plugins.manager_steps import JointArrays, joint_arrays, joint_layout
from rewardlab.plugins.managers import frame_result, load_managers, run_trials
from rewardlab.plugins.scale_sums import ScaleSums

__all__ = ["TrialChunk", "trial_chunks", "part_job", "check_part_options"]


@dataclasses.dataclass(frozen=True)
class TrialChunk:
    """Consecutive parts of a work item holding whole trials, as the child gets them.

    Attributes
    ----------
    positions : tuple of int
        The parts' positions in the work item (``k`` of its ``indexes``).
    rows : tuple of int
        Each part's rows (the chunk's rows are the parts', in order).
    arrays : JointArrays
        The parts' rows as whole trials; messages name each trial's part.

    Examples
    --------
    >>> TrialChunk((0, 1), (250, 250), None).rows
    (250, 250)
    """

    positions: tuple
    rows: tuple
    arrays: JointArrays | None


def check_part_options(*, batch_mode: str, batch_size, contiguous, convention, resume: bool) -> None:
    """Refuse what a reward manager over a dataset folder has no use for: batch options, and resuming.

    Examples
    --------
    >>> check_part_options(batch_mode="episodes", batch_size=None, contiguous=None, convention=None, resume=False)
    >>> check_part_options(batch_mode="sequential", batch_size=None, contiguous=None, convention=None,
    ...                    resume=False)  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    rewardlab.core.errors.ParameterError: `batch_mode` does not apply to reward managers...
    """
    check_manager_options(batch_mode=batch_mode, batch_size=batch_size, contiguous=contiguous,
                          convention=convention)
    if resume:
        raise ParameterError("resume", "does not apply to reward managers over a dataset folder: a trial may span "
                             "the parts where a stopped run stopped", resume,
                             hint="Run it again from the start (remove OUT.partial first).")


def _label_parts(arrays: JointArrays, bounds: np.ndarray, names: list[str]) -> JointArrays:
    """``arrays`` whose trial labels name the part each trial starts in (``episode_id=3 (part 2: PATH)``)."""
    order, starts = arrays.steps.order, arrays.steps.starts[:-1]
    first_rows = order[starts] if starts.size else np.zeros(0, np.int64)  # a row of each trial, in frame order
    parts = np.searchsorted(bounds, first_rows, side="right") - 1
    labels = [f"{label} ({names[p]})" for label, p in zip(arrays.episode_labels, parts.tolist())]
    return dataclasses.replace(arrays, episode_labels=labels)


def _chunk(ds, pending: list, seen: set, layout_cols: list) -> TrialChunk:
    """One fed item: ``pending`` parts ``[(position, index, frame)]`` as whole trials, checked against ``seen``."""
    frames = [f for _, _, f in pending]
    frame = frames[0] if len(frames) == 1 else pl.concat(frames, how="vertical")
    names = [f"part {ds.part_indexes[i]}: {ds.paths[i]}" for _, i, _ in pending]
    try:
        arrays = joint_arrays(frame, ds.spec)
    except SpecError as exc:  # where in the chunk it is: name the parts
        raise SpecError(f"{exc.message} (in {'; '.join(names)}; rows count from the first)", column=exc.column,
                        row=exc.row, hint=exc.hint) from None
    bounds = np.cumsum([0] + [f.height for f in frames])
    arrays = _label_parts(arrays, bounds, names)
    keys = frame.select(layout_cols).unique(maintain_order=True).rows()
    back = [k for k in keys if k in seen]
    if back:
        row = frame.select(layout_cols).rows().index(back[0])  # (an error: a row-by-row look is fine)
        part = int(np.searchsorted(bounds, row, side="right")) - 1
        layout = arrays.layout
        episode = ", ".join(f"{c}={v!r}" for c, v in zip(layout_cols, back[0]))
        raise SpecError(f"{episode}, step {layout.step}={frame[layout.step][row]!r}, agent "
                        f"{layout.agent}={frame[layout.agent][row]!r}: the episode's rows are split by another "
                        f"episode's (rows of one episode must be contiguous; it comes back at row "
                        f"{row - int(bounds[part])} of {names[part]})",
                        hint="Sort the frame by episode, step and agent")
    seen.update(keys)
    return TrialChunk(tuple(k for k, _, _ in pending), tuple(f.height for f in frames), arrays)


def trial_chunks(ds, indexes) -> Iterator[TrialChunk]:
    """The parts ``indexes`` of the dataset ``ds``, in order, as :class:`TrialChunk` of whole trials.

    A part is held until the next part's first row is of another trial (or
    there is none), so a chunk is one part, or the few parts one trial spans.
    Runs in the parent (it reads the parts with Polars).

    Raises
    ------
    SpecError
        The rows do not make joint steps (as
        :func:`~rewardlab.plugins.manager_steps.joint_order` says, naming the
        parts), or a trial comes back in a later part.

    Examples
    --------
    >>> from rewardlab.sources.datasets import PartedDataset
    >>> [c.rows for c in trial_chunks(PartedDataset("bar-folder"), range(3))]  # doctest: +SKIP
    [(500,), (500,), (500,)]
    """
    layout_cols = list(joint_layout(ds.all_columns, ds.spec).episode)
    pending: list = []
    seen: set = set()
    last = None
    for k, index in enumerate(indexes):
        frame = ds.read(index)
        if not frame.height:
            if pending:
                pending.append((k, index, frame))
            else:
                yield TrialChunk((k,), (0,), None)
            continue
        if pending and frame.select(layout_cols).row(0) != last:
            yield _chunk(ds, pending, seen, layout_cols)
            pending = []
        pending.append((k, index, frame))
        last = frame.select(layout_cols).row(frame.height - 1)
    if pending:
        yield _chunk(ds, pending, seen, layout_cols)


def part_job(items, *, isolate: bool):
    """The work item's function for the child: ``job(status, send, chunks)`` over fed :class:`TrialChunk`.

    It sends ``("plugin", plugin)`` per manager loaded, then ``("part", k,
    [(rewards, dones, "float64", {}, ScaleSums)] per manager)`` per part, as
    the plug-ins' job does; returns ``("ok", None)``.  A manager's failure is
    raised (and brought back to the parent as itself).

    Examples
    --------
    >>> job = part_job([], isolate=False)
    >>> job(None, print, iter([]))
    ('ok', None)
    """

    def job(status, send, chunks):
        loaded = load_managers(items, status)
        for plugin in loaded:
            send(("plugin", plugin.portable()))
        managers = [None] * len(loaded)  # each constructed once, then every trial in order: the whole frame's calls
        for chunk in chunks:
            results = []
            for m, plugin in enumerate(loaded):
                if chunk.arrays is None:
                    results.append((np.zeros(0), np.zeros(0, bool)))
                    continue
                rewards, finished, managers[m] = run_trials(plugin, chunk.arrays, manager=managers[m],
                                                            status=status, interrupts_are_plugins=isolate)
                results.append(frame_result(rewards, finished, chunk.arrays))
            start = 0
            for k, rows in zip(chunk.positions, chunk.rows):
                part = [(r[start:start + rows], d[start:start + rows]) for r, d in results]
                send(("part", k, [(r, d, "float64", {}, ScaleSums.of(r, d)) for r, d in part]))
                start += rows
        return ("ok", None)

    return job
