"""Apply reward plug-ins to a frame as kanachan's training programs call them.

Examples
--------
>>> from rewardlab.plugins import apply_plugins
>>> out = apply_plugins(frame, "data/plugins/rank_top.py")  # doctest: +SKIP
"""

from __future__ import annotations

from typing import Iterable

import numpy as np
import polars as pl

from rewardlab.plugins import isolation
from rewardlab.core import columns
from rewardlab.plugins.batch_modes import BATCH_MODES, DEFAULT_NUM_WORKERS, check_run_options, mode_setting
from rewardlab.contracts.advice import scale_advice, warn_outside
from rewardlab.contracts.checks import RewardScale, reward_scale
from rewardlab.contracts.base import Contract
from rewardlab.contracts.registry import contract_for
from rewardlab.contracts.manager import check_manager_options
from rewardlab.core.spec import FrameSpec, keep_spec
from rewardlab.core.errors import ParameterError, RewardScaleWarning, check_choice
from rewardlab.core.fronts import Fix, Text
from rewardlab.plugins.execution import (
    check_cancel, check_isolation, child_failure_error, execute,
    load_items, plugin_items, progress_bar, raise_first,
)
from rewardlab.plugins.loading import Plugin
from rewardlab.plugins.managers import apply_managers, manager_items
from rewardlab.sources.kanachan import schema as S
from rewardlab.plugins.shards import ShardLocator, as_shard_frames, run_shards, shard_arrays
from rewardlab.plugins.runner import resolve

__all__ = ["apply_plugins", "REWARD_DTYPES", "column_clashes", "check_column_clashes", "RENAME_HINT", "scale_message",
           "rewards_table_columns", "term_series"]

#: Polars dtype of a reward column, by the dtype the plug-in returned (what kanachan keeps).
REWARD_DTYPES = {"float16": pl.Float16, "float32": pl.Float32, "float64": pl.Float64}


def apply_plugins(
    frame: pl.DataFrame | Iterable[pl.DataFrame],
    plugins,
    *,
    batch_mode: str = "episodes",
    batch_size: int | None = None,
    seed: int = 0,
    contiguous: bool | None = None,
    num_workers: int = DEFAULT_NUM_WORKERS,
    convention: str | None = None,
    strict: bool = False,
    isolate: bool | None = None,
    timeout: float | None = None,
    cancel=None,
    progress=None,
    contract: str | Contract | None = None,
    spec: FrameSpec | None = None,
    replace: bool = False,
) -> pl.DataFrame:
    """Run reward plug-ins over a frame the way kanachan's training programs call them.

    Every call gets a fresh TensorDict of its batch (see :mod:`rewardlab.plugins.runner`),
    built by the plug-in contract (:mod:`rewardlab.contracts`; kanachan's
    for kanachan frames), under ``torch.no_grad()``, with ``("next", "done")``
    equal to the episode ends (kanachan: ``end_of_game``); the contract is
    checked after every call.  Each plug-in
    works on its own copy of the data, so none sees another's writes.
    Results stream into preallocated arrays (memory bounded by the batches).

    Parameters
    ----------
    frame : polars.DataFrame or iterable of them
        The common frame (episode order, complete episodes), or its shards:
        frames of whole episodes in episode order (see
        :mod:`rewardlab.plugins.shards`; they are held in memory).  The
        rewards are those of the frame the shards make, bit for bit.
    plugins : Plugin, path, or sequence of them
        Paths are loaded with :func:`load_plugin` (in the child process when
        ``isolate``).  Names must be distinct, and must not name a column the
        frame already holds (``reward_<name>`` or ``done_<name>``: the data's
        own rewards, or a plug-in applied before) unless ``replace``.
    batch_mode : {"episodes", "sequential", "dataloader", "fragments", "shuffled"}
        How transitions are cut into calls, and which kanachan setting that
        reproduces (:mod:`rewardlab.plugins.batch_modes`).
    batch_size : int or None
        Rows per call in ``sequential``, ``dataloader`` and ``shuffled``,
        fragment length in ``fragments``; ignored by ``episodes``.  None
        takes the mode's default (:data:`rewardlab.plugins.batch_modes.DEFAULT_BATCH_SIZES`).
    seed : int
        Seed of ``shuffled``.
    contiguous : bool or None
        The flag ``episodes`` passes (kanachan's ``contiguous_training_data``);
        None is kanachan's default, False.  The other modes always pass False.
    num_workers : int
        DataLoader workers of ``dataloader`` (default 2, as ``cql/train.py`` on CUDA).
    convention : {"offline", "simulation"} or None
        The kanachan contract's option: build the TensorDicts as kanachan's
        offline loaders do (None: the default), or as its simulator does
        (:data:`rewardlab.contracts.kanachan.batching.CONVENTIONS`).  A contract without
        conventions (``steps``) refuses one.
    strict : bool
        Compare IN fields exactly with a pristine copy after every call
        (catches any write, costs a copy of each chunk) instead of watching
        torch's version counters (free, misses writes through ``.numpy()``
        or ``.data``; see :mod:`rewardlab.plugins.runner`).
    isolate : bool or None
        Run the plug-ins (and load the ones given as paths) in a child
        process, so an exit, crash or hang cannot take this process with it;
        None (default) isolates where the platform can fork.
    timeout : float or None
        Seconds before an isolated run is stopped (None: no limit).
    cancel : callable or None
        Polled while an isolated run works (e.g. ``token.is_set`` of a
        ``threading.Event`` set by a UI); once it returns True the child
        process is stopped and :class:`~rewardlab.core.errors.PluginRunCancelled`
        raised (in-process runs check it between plug-ins only).
    progress : bool, None or callable
        Progress bar; None shows one on an interactive terminal or in Jupyter;
        a callable gets ``progress(fraction, message)`` instead (a widget's bar).
    contract : str, Contract or None
        The plug-in contract (a registered name, :func:`rewardlab.contracts.registered_contracts`);
        None takes the one the frame's spec names
        (:func:`rewardlab.contracts.registry.contract_for`).
    spec : FrameSpec or None
        The frame's spec, when the frame does not carry one.
    replace : bool
        Replace the frame's ``reward_<name>`` / ``done_<name>`` columns of a
        plug-in's name (e.g. to apply a changed plug-in again).  By default
        such a clash is refused, as two plug-ins of one name are
        (:func:`check_column_clashes`): applying the same plug-in twice is a
        clash too, since nothing in a column says which file made it.

    A file that defines ``RewardManager`` is a reward manager (PRLT's
    ``reset()`` / ``get_reward(agent, state, joint_action)``,
    :mod:`rewardlab.contracts.manager`): the frame must be a joint frame (one
    row per episode, step and agent) and the plug-ins are run by
    :func:`rewardlab.plugins.managers.apply_managers`, trial by trial, with
    the batch options at their defaults (managers and ``get_reward`` files
    are applied in separate calls).

    Returns
    -------
    polars.DataFrame or list of them
        ``frame`` with ``reward_<name>`` and ``done_<name>`` (Boolean) per
        plug-in (with ``replace``, in place of the columns of those names),
        and ``term_<name>.<term>`` (Float64, :func:`rewardlab.core.columns.term_column`)
        per reward term a plug-in writes under ``("next", "reward_terms", term)``
        (a plug-in's earlier term columns in the frame are dropped).  Given shards, the
        list of shards, each with its columns.  A reward column
        has the dtype the plug-in returned (Float16, Float32 or Float64:
        what kanachan's trainer receives).

    Raises
    ------
    PluginLoadError
        A plug-in file failed to load (also: its code ended the process).
    PluginRuntimeError
        A plug-in raised (its traceback), ended its process or ran out of
        time (:class:`~rewardlab.core.errors.PluginTimeoutError`): the batch (mode,
        index, rows) and the batch's first transition with its ``file:line``.
    ContractError
        A plug-in broke the contract (reward missing, wrong type, shape, dtype
        or device, non-finite; IN field changed; done not bool, wrong shape,
        or an episode's last step not done; a reward term of the wrong form or
        term names that vary from call to call), with the batch and first offending row.
    ParameterError
        Bad arguments, duplicate plug-in names, a plug-in named like a
        column of the frame (without ``replace``).

    Warns
    -----
    RewardScaleWarning
        A plug-in's rewards over the whole run are far from mean 0 / std 1
        (see :class:`rewardlab.contracts.checks.RewardScale`).

    Examples
    --------
    >>> frame = rewardlab.load_kanachan("data/sample.tsv.gz", progress=False)  # doctest: +SKIP
    >>> out = apply_plugins(frame, ["data/plugins/rank_top.py", "data/plugins/raw_points.py"],
    ...                     batch_mode="dataloader", batch_size=256)  # doctest: +SKIP
    >>> out.select("reward_rank_top", "done_rank_top").describe()  # doctest: +SKIP
    """
    managers = manager_items(plugins)  # files defining RewardManager: the manager contract's own runner
    if managers is not None:
        _check_manager_options(batch_mode=batch_mode, batch_size=batch_size, contiguous=contiguous,
                               convention=convention, contract=contract, replace=replace)
        if not replace and isinstance(frame, pl.DataFrame):
            check_column_clashes(frame.columns, [(name, path) for _, name, path in managers])
        return apply_managers(frame, managers, spec=spec, isolate=isolate, timeout=timeout, cancel=cancel,
                              progress=progress)
    shards, single = as_shard_frames(frame)
    check_choice("batch_mode", batch_mode, BATCH_MODES)
    chosen, frame_spec = contract_for(shards[0], contract, spec=spec)
    chosen.options(convention)
    size, seed, contiguous, num_workers = check_run_options(
        batch_mode, batch_size=batch_size, seed=seed, contiguous=contiguous, num_workers=num_workers, strict=strict)
    isolate, timeout = check_isolation(isolate, timeout)
    cancel = check_cancel(cancel)
    if not isinstance(replace, bool):
        raise ParameterError("replace", "should be True or False", replace)
    items = plugin_items(plugins, chosen)
    if not replace:
        check_column_clashes(dict.fromkeys(c for shard in shards for c in shard.columns),
                             [(name, path) for _, name, path in items])
    arrays = shard_arrays(shards, lambda shard: chosen.arrays(shard, frame_spec))
    n = sum(a.n for a in arrays)
    setting = mode_setting(batch_mode, contiguous=contiguous, num_workers=num_workers,
                           settings=chosen.mode_settings)
    bar = progress_bar(progress, n * len(items), f"apply_plugins ({batch_mode})")

    def job(status, send):
        loaded = load_items(items, status, chosen)
        for plugin in loaded:
            send(plugin.portable())
        outcomes = run_shards(
            arrays, loaded, mode=batch_mode, batch_size=size, seed=seed, contiguous=contiguous,
            num_workers=num_workers, strict=strict, collect=False,
            bar=None if isolate else bar, convention=convention, setting=setting, status=status,
            interrupts_are_plugins=isolate, contract=chosen)
        for outcome in outcomes:
            outcome.plugin = outcome.plugin.portable()
        return outcomes

    try:
        result, loaded = execute(job, isolate=isolate, timeout=timeout, bar=bar, cancel=cancel,
                                  name=items[0][1])
    finally:
        if bar is not None:
            bar.close()
    if isinstance(result, isolation.ChildFailure):
        raise child_failure_error(result, items, len(loaded))
    outcomes = result
    for outcome, loaded_plugin, (item, _, _) in zip(outcomes, loaded, items):
        outcome.plugin = item if isinstance(item, Plugin) else loaded_plugin
    raise_first(resolve(outcomes, ShardLocator(shards, columns=chosen.locator_columns(frame_spec))))
    added, stale = [], []
    for outcome in outcomes:
        scale = reward_scale(outcome.rewards, outcome.dones)
        if n and scale_advice(chosen, scale):  # only where the contract asks for mean 0 / std 1
            warn_outside(RewardScaleWarning(_scale_message(outcome.plugin, scale)))
        dtype = REWARD_DTYPES[outcome.reward_dtype or "float64"]
        added.append(pl.Series(columns.reward_column(outcome.plugin.name), outcome.rewards,
                                 dtype=pl.Float64).cast(dtype))
        added.append(pl.Series(columns.done_column(outcome.plugin.name), outcome.dones, dtype=pl.Boolean))
        added += term_series(outcome.plugin.name, outcome.terms)
        stale += columns.term_columns(shards[0].columns, outcome.plugin.name).values()
    stale = [c for c in stale if c not in {s.name for s in added}]
    if single:
        return keep_spec(shards[0], shards[0].drop(stale).with_columns(added))
    starts = np.cumsum([0] + [s.height for s in shards]).tolist()
    return [keep_spec(s, s.drop(stale).with_columns([c.slice(a, s.height) for c in added]))
            for s, a in zip(shards, starts)]


def _check_manager_options(*, batch_mode, batch_size, contiguous, convention, contract, replace) -> None:
    """Refuse the options a reward manager has no use for: it is called per agent over whole trials."""
    check_manager_options(batch_mode=batch_mode, batch_size=batch_size, contiguous=contiguous, convention=convention)
    if contract is not None and getattr(contract, "name", contract) != "manager":
        raise ParameterError("contract", "should be None or 'manager' for files that define RewardManager",
                             getattr(contract, "name", contract))
    if not isinstance(replace, bool):
        raise ParameterError("replace", "should be True or False", replace)


def term_series(name: str, terms: dict) -> list[pl.Series]:
    """The Float64 columns ``term_<name>.<term>`` of a plug-in's reward terms (``{term: array [N]}``), in order.

    Examples
    --------
    >>> [s.name for s in term_series("shaped", {"task": np.zeros(2), "bonus": np.ones(2)})]
    ['term_shaped.task', 'term_shaped.bonus']
    """
    return [pl.Series(columns.term_column(name, term), values, dtype=pl.Float64) for term, values in terms.items()]


def rewards_table_columns(frame_columns, spec: FrameSpec, names=()) -> list[str]:
    """The columns of a rewards table (what ``rewardlab apply`` writes) of data with ``frame_columns``.

    The keys, the context every analysis needs and the spec's structure
    (those present), the data's own rewards (``reward_<n>`` with its
    ``done_<n>``, e.g. a step table's recorded reward), then
    ``reward_<name>`` / ``done_<name>`` of each plug-in in ``names``, each
    followed by its reward terms' columns (``term_<name>.<term>``) present in
    ``frame_columns`` (pass the applied frame's columns to keep them).

    Examples
    --------
    >>> from rewardlab.core.spec import FrameSpec
    >>> rewards_table_columns(["e", "t", "x", "reward_rec", "done_rec"], FrameSpec(name="s", episode=("e",), step="t"),
    ...                       ["top"])
    ['e', 't', 'reward_rec', 'done_rec', 'reward_top', 'done_top']
    >>> rewards_table_columns(["e", "reward_top", "done_top", "term_top.task"], FrameSpec(name="s", episode=("e",)),
    ...                       ["top"])
    ['e', 'reward_top', 'done_top', 'term_top.task']
    """
    have = list(frame_columns)
    kept = [c for c in dict.fromkeys([*S.KEY_COLUMNS, *S.REWARDS_TABLE_CONTEXT, *spec.structure]) if c in have]
    names = list(names)
    recorded = [n for n in columns.reward_names(have) if n not in names and columns.done_column(n) in have]
    for name in [*recorded, *names]:
        kept += [columns.reward_column(name), columns.done_column(name), *columns.term_columns(have, name).values()]
    return kept


def column_clashes(frame_columns, names) -> list[tuple[str, str]]:
    """``(name, column)`` for each ``reward_<name>`` / ``done_<name>`` of ``names`` already in ``frame_columns``.

    Examples
    --------
    >>> column_clashes(["seat", "reward_recorded", "done_recorded", "done_top"], ["recorded", "top", "new"])
    [('recorded', 'reward_recorded'), ('recorded', 'done_recorded'), ('top', 'done_top')]
    """
    have = set(frame_columns)
    return [(name, col) for name in names
            for col in (columns.reward_column(name), columns.done_column(name)) if col in have]


#: How to rename a plug-in in the library (the CLI names only the file).
RENAME_HINT = ("Rename the plug-in file (its name comes from the file name) or load it under another name "
               "(load_plugin(path, name=...))")


#: The remedy that replaces clashing columns: ``pass replace=True`` (the CLI: ``pass --replace``).
REPLACE = Text(Fix("replace", True))


def check_column_clashes(frame_columns, plugins, *, argument: str = "plugins", replace: str = REPLACE,
                         rename: str = RENAME_HINT) -> None:
    """Refuse plug-ins whose ``reward_<name>`` / ``done_<name>`` the data already holds.

    Such a plug-in would replace the data's own column (a step table's
    ``reward_recorded``, a rewards table's earlier run) without a word, so it
    is refused, as two plug-ins of one name are, unless the caller asks to
    replace.  Re-applying the same plug-in is a clash too: a column does not
    say which file made it.

    Parameters
    ----------
    frame_columns : iterable of str
        The data's columns.
    plugins : sequence of (name, path)
        The plug-ins' names and files (the path may be None).
    argument, replace, rename : str
        How the caller's user names the plug-ins, the way to replace
        (:data:`REPLACE`, ``replace=True``, which the CLI's front words
        ``--replace``), and how to rename a plug-in (the CLI: ``--plugin``
        and renaming the file).

    Raises
    ------
    ParameterError
        Naming the plug-in, its file and the columns, and what to do.

    Examples
    --------
    >>> check_column_clashes(["reward_recorded", "done_recorded"], [("recorded", "recorded.py")])
    Traceback (most recent call last):
    ...
    rewardlab.core.errors.ParameterError: `plugins` should not be named like a column the data already holds (a plug-in adds reward_<name> and done_<name>): plug-in 'recorded' (recorded.py) would replace the data's reward_recorded, done_recorded. Received 'recorded'. Rename the plug-in file (its name comes from the file name) or load it under another name (load_plugin(path, name=...)), drop the columns from the data, or pass replace=True to replace them.
    """
    plugins = list(plugins)
    clashes = column_clashes(frame_columns, [name for name, _ in plugins])
    if not clashes:
        return
    name = clashes[0][0]
    path = next(p for n, p in plugins if n == name)
    cols = [c for n, c in clashes if n == name]
    where = f" ({path})" if path is not None else ""
    others = sorted({n for n, _ in clashes} - {name})
    more = f"; so would {', '.join(map(repr, others))}" if others else ""
    raise ParameterError(
        argument, "should not be named like a column the data already holds (a plug-in adds reward_<name> and "
        f"done_<name>): plug-in {name!r}{where} would replace the data's {', '.join(cols)}{more}", name,
        hint=Text(f"{rename}, drop the column{'s' if len(cols) > 1 else ''} from the data, or ",
                  replace if isinstance(replace, Text) else "pass " + replace,
                  f" to replace {'them' if len(cols) > 1 else 'it'}."))


def _scale_message(plugin: Plugin, scale: RewardScale) -> str:
    return scale_message(plugin.name, plugin.path, scale)


def scale_message(name: str, path, scale: RewardScale) -> str:
    """The warning of a plug-in whose rewards are far from mean 0 / std 1 (:class:`RewardScaleWarning`)."""
    return (f"plug-in {name!r} ({path}): rewards are far from the mean 0 / std 1 "
            f"the contract asks for: {scale}. Normalize them, e.g. (reward - MEAN) / STD with "
            "constants computed from the training data in advance.")
