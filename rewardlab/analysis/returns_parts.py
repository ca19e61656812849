"""Returns of a dataset folder, part by part: reward-to-go and GAE at every step, trajectory returns.

A dataset folder's parts hold whole episodes (:mod:`rewardlab.sources.datasets`)
and a trajectory never runs across an episode
(:mod:`rewardlab.analysis.return_tables`), so the backward recursions of
:func:`~rewardlab.analysis.return_tables.reward_to_go` and
:func:`~rewardlab.analysis.return_tables.gae` are exact within each part: each part
is read in an engine's workers (:func:`~rewardlab.sources.datasets.work.map_parts`,
projected to the columns the recursion reads) and the frame function runs
on it.  The results equal the frame functions' on the whole frame, bit for
bit: every step's value depends only on its own trajectory, and the
doubling scan adds exact zeros across a cut.

The folder is a frame's folder (``rewardlab convert``), a rewards folder
(``rewardlab apply ... --out REWARDS``: the columns it lacks, a value column,
the final states, are read from its base's part of the same index), or a
folder these functions wrote.  Per-step output of a folder larger than
memory goes to a folder of its own (``out=``): the same parts, in the same
order, each holding the episode keys and the per-step columns, whose
manifest names the input as its base (like a rewards folder, so reading it
with :meth:`~rewardlab.sources.datasets.PartedDataset.read` reaches the
input's columns too).  It is written by
:class:`~rewardlab.sources.datasets.writer.PartWriter`: staged and renamed
when done, refusing an existing folder unless ``overwrite``.  Memory holds
the parts in flight (one per worker, a few ahead), never the dataset.
Without ``out`` the per-part results come back and are joined in memory.

A function of the final state as ``next_value`` (see
:func:`~rewardlab.analysis.return_tables.bootstrap_from_final`) is called once per
part on that part's truncated episodes; a function that maps each state on
its own gives the same values as one call on the whole frame (an engine that
runs in other processes, ``engine="ray"``, pickles it).

Examples
--------
>>> from rewardlab.analysis.returns_parts import reward_to_go_of_dataset
>>> reward_to_go_of_dataset("rewards/", "top", gamma=0.99, out="returns/")  # doctest: +SKIP
PartedDataset('returns': ...)
"""

from __future__ import annotations

import bisect
from pathlib import Path

import polars as pl

from rewardlab.analysis.episode_parts import concat_part_tables
from rewardlab.analysis.return_tables import gae, reward_to_go, trajectory_returns
from rewardlab.analysis.tables import resolve_reward
from rewardlab.core import columns
from rewardlab.core.errors import ColumnNotFoundError, DataFormatError, ParameterError, check_choice, check_in_range
from rewardlab.core.files import check_not_input
from rewardlab.core.spec import FrameSpec, attach
from rewardlab.sources.datasets import PartedDataset, read_part_file
from rewardlab.sources.datasets.manifest import index_in_base, part_name
from rewardlab.sources.datasets.parts import REWRITE_HINT
from rewardlab.sources.datasets.work import map_parts
from rewardlab.sources.datasets.writer import PartWriter, write_part_file

__all__ = ["reward_to_go_of_dataset", "gae_of_dataset", "trajectory_returns_of_dataset", "dataset_chain",
           "step_columns"]


def _open(dataset, on_error: str = "raise") -> PartedDataset:
    on_error = check_choice("on_error", on_error, ("raise", "skip"))
    return dataset if isinstance(dataset, PartedDataset) else PartedDataset(dataset, on_error=on_error)


def dataset_chain(ds: PartedDataset) -> list[PartedDataset]:
    """``ds``, its base, its base's base, ...: where a part's columns are read from, first match first.

    Every one names its parts ``part_name(i)`` by manifest index (checked
    here) and holds the same rows: part ``i`` of one is part
    :func:`~rewardlab.sources.datasets.parts.index_in_base` ``(i, written_without)``
    of its base (the same index, unless it was written without some of the
    base's parts), so a work item finds its part of each by folder and index.

    Examples
    --------
    >>> [d.folder.name for d in dataset_chain(PartedDataset("rewards"))]  # doctest: +SKIP
    ['rewards', 'corpus']
    """
    chain = [ds]
    while chain[-1].base is not None:
        chain.append(chain[-1].base)
    for d in chain:
        for i, entry in enumerate(d.listed.parts):
            if entry.name != part_name(i):
                raise DataFormatError(d.folder, None, None, "base_mismatch",
                                      f"part {i} is {entry.name} there, not {part_name(i)}", hint=REWRITE_HINT)
    return chain


def step_columns(kind: str, name: str, *, flag_truncated: bool = False) -> list[str]:
    """The per-step columns a folder written by :func:`reward_to_go_of_dataset` (``kind="reward_to_go"``)
    or :func:`gae_of_dataset` (``"gae"``) holds after the episode keys: the frame function's columns.

    Examples
    --------
    >>> step_columns("reward_to_go", "top", flag_truncated=True), step_columns("gae", "top")
    (['return_to_go_top', 'truncated'], ['advantage', 'value_target'])
    """
    if kind == "gae":
        return ["advantage", "value_target"]
    return [f"return_to_go_{name}", *(["truncated"] if flag_truncated else [])]


def _read(path: str, rows: int, index: int, reads: tuple) -> pl.DataFrame:
    """Part ``index``: the columns of each ``(folder, columns, written_without)`` of ``reads`` (None: ``path``'s
    own folder; ``written_without``: of the folder before it, whose part ``index`` is this one's
    :func:`index_in_base`)."""
    frames = []
    for folder, cols, without in reads:
        index = index_in_base(index, without)
        if not cols:
            continue
        where = path if folder is None else str(Path(folder) / part_name(index))
        frames.append(read_part_file(where, rows, columns=list(cols)).select(list(cols)))
    return pl.concat(frames, how="horizontal") if len(frames) > 1 else frames[0]


def _part_task(item: tuple):
    """One part: read it, run the frame function; the result, or the written part's ``(index, entry)``."""
    path, rows, index, kind, reads, spec, reward, options, write = item
    frame = _read(path, rows, index, reads)
    here = spec.project(frame.columns)
    frame = attach(frame, here)
    try:
        if kind == "reward_to_go":
            result = reward_to_go(frame, reward, spec=here, **options)
        elif kind == "gae":
            result = gae(frame, reward, spec=here, **options)
        else:
            return trajectory_returns(frame, reward, spec=here)
    except ParameterError as exc:  # its rows are the part's: say which part
        raise ParameterError(exc.name, f"{exc.rule} (in part {index}, {path}: rows counted from the part's "
                             "first row)", exc.value, hint=exc.hint) from None
    table = result.to_frame() if isinstance(result, pl.Series) else result
    if write is None:
        return table
    staging, dataset_id, keep, out_spec, left_out = write
    part = attach(frame.select(list(keep)).hstack(table.get_columns()), out_spec)
    position = index - bisect.bisect_left(left_out, index)  # the parts left out are not written: the others close up
    return position, write_part_file(Path(staging), position, part, dataset_id=dataset_id)


def _check_columns(names, wanted: dict) -> None:
    for what, col in wanted.items():
        if col is None or callable(col):
            continue
        if not isinstance(col, str):
            raise ParameterError(what, "should be a column name", col)
        if col not in names:
            raise ColumnNotFoundError(col, list(names))


def _run(dataset, kind: str, reward, options: dict, columns_used: dict, *, spec, out, overwrite, engine,
         workers, address, progress, desc: str, on_error: str = "raise") -> tuple[str, list]:
    """Run ``kind`` over every part; ``(name, per-part results)``, or ``(name, the written folder)`` with ``out``."""
    ds = _open(dataset, on_error)
    chain = dataset_chain(ds)
    names = list(ds.all_columns)
    name = resolve_reward(names, reward)
    if columns.done_column(name) not in names:
        raise ColumnNotFoundError(columns.done_column(name),
                                  [c for c in names if c.startswith(columns.DONE_PREFIX)])
    _check_columns(names, columns_used)
    if spec is not None and not isinstance(spec, FrameSpec):
        raise ParameterError("spec", "should be a rewardlab.FrameSpec", type(spec).__name__)
    spec = spec if spec is not None else chain[-1].spec  # a rewards folder's own spec is projected
    wanted = [*spec.structure, columns.reward_column(name), columns.done_column(name),
              *(c for c in columns_used.values() if isinstance(c, str))]
    if callable(options.get("next_value")):  # the final states, and their states (a spec keeps a pair only)
        wanted += [c for s in spec.states if s.final is not None for c in (s.name, s.final)]
    wanted = [c for c in dict.fromkeys(wanted) if c in names]
    reads, left = [], list(wanted)
    for i, d in enumerate(chain):
        mine = [c for c in left if c in d.columns]
        left = [c for c in left if c not in mine]
        reads.append((None if i == 0 else str(d.folder), tuple(mine), () if i == 0 else chain[i - 1].written_without))
    reads = tuple(reads)
    if out is None:
        results = list(map_parts(ds, _part_task, (kind, reads, spec, name, options, None), engine=engine,
                                 workers=workers, address=address, progress=progress, desc=desc))
        return name, results
    if not isinstance(overwrite, bool):
        raise ParameterError("overwrite", "should be True or False", overwrite)
    check_not_input(out, [d.folder for d in chain], name="out")
    outputs = step_columns(kind, name, flag_truncated=bool(options.get("flag_truncated")))
    keep = list(spec.episode) or [c for c in spec.terminals if c in wanted]
    clash = [c for c in keep if c in outputs]
    if clash:
        raise ParameterError("data", f"should not have an episode column named {clash[0]!r}, the name of an "
                             "output column", sorted(keep), hint="Rename the column, or pass data as a frame.")
    out_spec = spec.project([*keep, *outputs])
    source = {"returns": kind, "reward": name, "input": str(ds.folder),
              "options": {k: (v if v is None or isinstance(v, (bool, int, float, str))
                              else getattr(v, "__name__", type(v).__name__)) for k, v in options.items()}}
    with PartWriter(out, spec=out_spec, overwrite=overwrite, base=ds, source=source) as writer:
        left_out = tuple(sorted(r.index for r in ds.left_out if r.index is not None))
        write = (str(writer.staging), writer.id, tuple(keep), out_spec, left_out)
        for index, entry in map_parts(ds, _part_task, (kind, reads, spec, name, options, write), engine=engine,
                                      workers=workers, address=address, progress=progress, desc=desc):
            writer.register(index, entry)
    return name, PartedDataset(out, warn=False)  # the input's opening warned


def _joined(tables: list[pl.DataFrame], template: pl.DataFrame) -> pl.DataFrame:
    return pl.concat(tables, how="vertical", rechunk=True) if tables else template


def reward_to_go_of_dataset(dataset, reward: str, *, gamma: float, next_value=None, flag_truncated: bool = False,
                            spec: FrameSpec | None = None, out=None, overwrite: bool = False,
                            engine: str = "embedded", workers: int | None = None, address: str | None = None,
                            progress: bool | None = None, on_error: str = "raise"):
    """:func:`~rewardlab.analysis.return_tables.reward_to_go` of a dataset folder, one part at a time.

    Parameters
    ----------
    dataset : path or PartedDataset
        A dataset folder holding ``reward_<name>`` / ``done_<name>`` (or
        whose base holds them: a rewards folder reads what it lacks from
        its base, part by part).
    reward, gamma, next_value, flag_truncated, spec
        As :func:`~rewardlab.analysis.return_tables.reward_to_go` (``next_value``:
        a column of the folder or of its base, or a function of the final
        state; ``spec``: default the folder's, its base's where it has one).
    out : path, optional
        Write the result as a dataset folder there (see the module
        docstring) and return it opened; default: return it in memory.
    overwrite : bool
        Replace a dataset folder at ``out``.
    engine, workers, address
        Where the parts run (:mod:`rewardlab.engines`).
    progress : bool, optional
        A bar over the parts (default: when interactive).
    on_error : {"raise", "skip"}
        A missing, truncated, foreign or duplicated part of ``dataset`` (a
        path; of it or of its base): stop, naming it (``"raise"``), or leave
        it out whole (``"skip"``, with a
        :class:`~rewardlab.core.errors.PartsLeftOutWarning`): the result is
        the dataset's without it, bit for bit, and a folder written with
        ``out`` has the other parts, its manifest listing the ones left out
        (``base["parts_left_out"]``: a later read joins part for part and
        says so).  An opened ``PartedDataset`` keeps its own.

    Returns
    -------
    polars.Series or polars.DataFrame, or PartedDataset with ``out``
        In memory: what :func:`~rewardlab.analysis.return_tables.reward_to_go`
        returns on the whole frame.  With ``out``: the folder, whose parts
        hold the episode keys (or, for a spec without keys, its terminal
        flags), ``return_to_go_<name>`` and, with ``flag_truncated``,
        ``truncated``.

    Examples
    --------
    >>> reward_to_go_of_dataset("rewards/", "top", gamma=0.99, out="rtg/").rows  # doctest: +SKIP
    """
    gamma = check_in_range("gamma", gamma, 0.0, 1.0)
    if not isinstance(flag_truncated, bool):
        raise ParameterError("flag_truncated", "should be True or False", flag_truncated)
    options = {"gamma": gamma, "next_value": next_value, "flag_truncated": flag_truncated}
    name, got = _run(dataset, "reward_to_go", reward, options, {"next_value": next_value}, spec=spec, out=out,
                     overwrite=overwrite, engine=engine, workers=workers, address=address, progress=progress,
                     desc="reward-to-go", on_error=on_error)
    if out is not None:
        return got
    table = _joined(got, pl.DataFrame({c: pl.Series(c, [], dtype=pl.Boolean if c == "truncated" else pl.Float64)
                                       for c in step_columns("reward_to_go", name, flag_truncated=flag_truncated)}))
    return table if flag_truncated else table.to_series(0)


def gae_of_dataset(dataset, reward: str, *, value: str, gamma: float, lmbda: float, terminated: str | None = None,
                   next_value=None, spec: FrameSpec | None = None, out=None, overwrite: bool = False,
                   engine: str = "embedded", workers: int | None = None, address: str | None = None,
                   progress: bool | None = None, on_error: str = "raise"):
    """:func:`~rewardlab.analysis.return_tables.gae` of a dataset folder, one part at a time.

    Parameters
    ----------
    dataset : path or PartedDataset
        As :func:`reward_to_go_of_dataset`; ``value`` (and ``terminated``,
        ``next_value`` when columns) may lie in the folder or its base.
    reward, value, gamma, lmbda, terminated, next_value, spec
        As :func:`~rewardlab.analysis.return_tables.gae`.
    out, overwrite, engine, workers, address, progress, on_error
        As :func:`reward_to_go_of_dataset`.

    Returns
    -------
    polars.DataFrame, or PartedDataset with ``out``
        ``advantage`` and ``value_target`` (after the episode keys in the
        folder's parts).

    Examples
    --------
    >>> gae_of_dataset("rewards/", "top", value="v", gamma=0.99, lmbda=0.95, out="adv/")  # doctest: +SKIP
    """
    options = {"value": value, "gamma": check_in_range("gamma", gamma, 0.0, 1.0),
               "lmbda": check_in_range("lmbda", lmbda, 0.0, 1.0), "terminated": terminated,
               "next_value": next_value}
    _, got = _run(dataset, "gae", reward, options,
                  {"value": value, "terminated": terminated, "next_value": next_value}, spec=spec, out=out,
                  overwrite=overwrite, engine=engine, workers=workers, address=address, progress=progress, desc="gae",
                  on_error=on_error)
    if out is not None:
        return got
    return _joined(got, pl.DataFrame({c: pl.Series(c, [], dtype=pl.Float64) for c in step_columns("gae", "")}))


def trajectory_returns_of_dataset(dataset, reward: str, *, spec: FrameSpec | None = None, engine: str = "embedded",
                                  workers: int | None = None, address: str | None = None,
                                  progress: bool | None = None, on_error: str = "raise") -> pl.DataFrame:
    """:func:`~rewardlab.analysis.return_tables.trajectory_returns` of a dataset folder, one part at a time.

    One row per trajectory (small: it comes back in memory); ``episode`` (or
    ``trajectory``) counts across parts and ``start`` is the row in the whole
    dataset, as on the whole frame.  A rewards folder reads the flags it
    lacks from its base.  ``on_error="skip"``: as :func:`reward_to_go_of_dataset`
    (the table is the dataset's without the parts left out).

    Examples
    --------
    >>> trajectory_returns_of_dataset("rewards/", "top")["return"].mean()  # doctest: +SKIP
    """
    ds = _open(dataset, on_error)
    _, tables = _run(ds, "trajectories", reward, {}, {}, spec=spec, out=None, overwrite=False, engine=engine,
                     workers=workers, address=address, progress=progress, desc="trajectory returns")
    index = "trajectory" if tables and "trajectory" in tables[0].columns else "episode"
    return concat_part_tables(tables, ds, index, start="start")
