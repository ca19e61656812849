"""Run a plug-in on altered copies of the data: the padding probes and the contract's other conventions.

Two questions :func:`rewardlab.plugins.check.check_plugin` asks, and the
``trap.*`` diagnostics (:mod:`rewardlab.diagnostics.traps`) ask again with the
rows that answer them:

* **Does the plug-in read padding?**  Where the data lacks an episode's final
  state, ``("next", state)`` on its last step is the contract's padding, not an
  observation: a potential evaluated there is ``phi(padding)``, not 0.  The
  contract's padding probes (:meth:`Contract.padding_probes
  <rewardlab.contracts.base.Contract.padding_probes>`) are copies of the
  arrays whose padding holds other values; a plug-in whose reward changes
  between the data and a probe reads it (:func:`padding_probes`,
  :func:`reward_changes`, :func:`padding_warning`, :func:`probe_padding`).
* **Does the plug-in give other rewards under another convention?**  Kanachan's
  simulator builds the TensorDicts otherwise than its offline loaders
  (``end_of_round`` on a game's last step, no round summary):
  :func:`convention_runs` runs the plug-in on whole episodes
  (``contiguous=True``) under each of the contract's conventions and marks the
  rows whose reward or done differs from the first convention's.

Rewards "change" by :func:`reward_changes`' rule, the one
:func:`rewardlab.contracts.checks.compare_outputs` uses (``|a - b| > atol +
rtol * |b|``, NaN equal to NaN).

Examples
--------
>>> reward_changes(np.array([0.0, 1.0, np.nan]), np.array([0.0, 1.5, np.nan])).tolist()
[False, True, False]
>>> probe = probe_padding(frame, "goal.py")  # doctest: +SKIP
>>> np.flatnonzero(probe.changed)  # doctest: +SKIP
array([199, 399])
"""

from __future__ import annotations

import dataclasses
import os
from pathlib import Path
from typing import Iterator

import numpy as np
import polars as pl

from rewardlab.contracts.base import Contract
from rewardlab.contracts.registry import contract_for
from rewardlab.core.errors import ParameterError
from rewardlab.core.spec import FrameSpec
from rewardlab.plugins import isolation
from rewardlab.plugins.execution import check_frame, check_isolation, execute, failure_error, load_items, \
    plugin_items
from rewardlab.plugins.loading import Plugin
from rewardlab.plugins.runner import Locator, RunOutcome, resolve
from rewardlab.plugins.shards import ShardLocator, run_shards, shard_arrays

__all__ = ["REWARD_RTOL", "REWARD_ATOL", "PADDING_REMEDY", "reward_changes", "padding_probes", "padding_what",
           "padding_warning", "PaddingProbe",
           "probe_padding", "ConventionRuns", "convention_runs"]

#: Relative and absolute tolerance under which two rewards are the same (those of ``compare_outputs``).
REWARD_RTOL = 1e-7
REWARD_ATOL = 1e-9


def reward_changes(rewards: np.ndarray, reference: np.ndarray, *, rtol: float = REWARD_RTOL,
                   atol: float = REWARD_ATOL) -> np.ndarray:
    """True where ``rewards`` differ from ``reference`` (``|a - b| > atol + rtol * |b|``; NaN equals NaN).

    Parameters
    ----------
    rewards, reference : float arrays of shape ``[N]``
    rtol, atol : float

    Returns
    -------
    bool array of shape ``[N]``

    Examples
    --------
    >>> reward_changes(np.array([1.0, 2.0]), np.array([1.0 + 1e-12, 2.5])).tolist()
    [False, True]
    """
    a = np.asarray(rewards, dtype=np.float64)
    b = np.asarray(reference, dtype=np.float64)
    with np.errstate(invalid="ignore"):
        return ~np.isclose(a, b, rtol=rtol, atol=atol, equal_nan=True)


def padding_probes(contract: Contract, arrays: list) -> Iterator[list]:
    """Each probe of the contract (:meth:`Contract.padding_probes`) as a list of shard arrays.

    A shard without probes (every final state kept) appears as itself.

    Examples
    --------
    >>> probes = list(padding_probes(STEPS, [arrays]))  # doctest: +SKIP
    >>> len(probes)  # doctest: +SKIP
    2
    """
    probes = [contract.padding_probes(a) for a in arrays]
    for k in range(max((len(p) for p in probes), default=0)):
        yield [p[k] if p else a for p, a in zip(probes, arrays)]


#: What to do about a plug-in that reads padding (the end of :func:`padding_warning`).
PADDING_REMEDY = ("load data that keeps each episode's final state (rewardlab.record, RLlib with new_obs, "
                  "Minari, a step table with final rows or next_ columns), or leave the next state alone where "
                  '("next", "done") is True')


def padding_what(contract: Contract, arrays: list, lacking: int) -> str:
    """The padded keys and how many last steps hold padding, in words (for messages).

    Examples
    --------
    >>> padding_what(STEPS, [arrays], 3)  # doctest: +SKIP
    'data["next", "obs"] on the last step of the 3 episodes whose final state the data lacks (...)'
    """
    keys = sorted({k for a in arrays for k in contract.padded_states(a)})
    return (f"{' and '.join(keys)} on the last step of the {lacking:,} episode{'s' if lacking != 1 else ''} "
            "whose final state the data lacks (there it is the state's padding, not an observation)")


def padding_warning(contract: Contract, arrays: list, first: RunOutcome, probes: list, failed: bool,
                    locator: Locator, lacking: int) -> tuple:
    """The warning for a plug-in whose rewards change with the padding after last steps lacking a final state.

    Parameters
    ----------
    contract : Contract
    arrays : list of contract arrays
        The data's shards.
    first : RunOutcome
        The plug-in's run on the data (``episodes``).
    probes : list of RunOutcome
        Its runs on each probe (:func:`padding_probes`), in the same mode.
    failed : bool
        True when the probes' child process failed (the plug-in broke on a probe).
    locator : Locator
        Names rows in the message.
    lacking : int
        Episodes whose final state the data lacks.

    Returns
    -------
    tuple of str
        One warning, or none (the first run failed, no probe ran, or no reward changed).

    Examples
    --------
    >>> padding_warning(STEPS, [arrays], first, probes, False, locator, 20)  # doctest: +SKIP
    ('the plug-in reads data["next", "obs"] on the last step of the 20 episodes ...',)
    """
    if first.error is not None or not (probes or failed):
        return ()
    what = padding_what(contract, arrays, lacking)
    if failed or any(p.error is not None for p in probes):
        return (f"the plug-in failed when the padding in {what} was changed, so it reads it; {PADDING_REMEDY}",)
    changed = np.zeros(first.rewards.shape[0], dtype=bool)
    for probe in probes:
        changed |= reward_changes(probe.rewards, first.rewards)
    rows = np.flatnonzero(changed)
    if rows.size == 0:
        return ()
    shown = "; ".join(locator.transition(int(r)) for r in rows[:5])
    more = f" and {rows.size - 5:,} more" if rows.size > 5 else ""
    return (f"the plug-in reads {what}: its reward changes when that padding does, on {rows.size:,} "
            f"step{'s' if rows.size != 1 else ''} ({shown}{more}); {PADDING_REMEDY}",)


# --- running the plug-in on variants of the data ------------------------------------------------------


def _item(plugin, contract: Contract) -> tuple:
    """``(item, name, path)`` of a plug-in given as a loaded Plugin, a portable one (its file again) or a path."""
    if isinstance(plugin, Plugin) and plugin.get_reward is None:  # loaded in a child: load its file again
        return Path(plugin.path), plugin.name, plugin.path
    if not isinstance(plugin, (Plugin, str, os.PathLike)):
        raise ParameterError("plugin", "should be a Plugin or a path to a plug-in file", type(plugin).__name__)
    [item] = plugin_items([plugin], contract)
    return item


def _episode_runs(arrays_list: list, plugin, *, contract: Contract, conventions: list, contiguous: bool,
                  locator: Locator, seed: int, isolate: bool | None, timeout: float | None
                  ) -> tuple[list[RunOutcome], str | None]:
    """Run ``plugin`` in ``episodes`` mode on each ``(arrays, convention)``; ``(outcomes, failure)``.

    The runs share one child process; ``failure`` is the child's failure (the plug-in ended its process or ran
    out of time) after the outcomes it sent, or None.
    """
    isolate, timeout = check_isolation(isolate, timeout)
    item, name, path = _item(plugin, contract)

    def job(status, send):
        [loaded] = load_items([(item, name, path)], status, contract)
        send(loaded.portable())
        for arrays, convention in zip(arrays_list, conventions):
            [outcome] = run_shards(arrays, [loaded], mode="episodes", batch_size=None, seed=seed,
                                   contiguous=contiguous, strict=False, collect=True, bar=None,
                                   convention=convention, setting="episodes (diagnostics)", status=status,
                                   interrupts_are_plugins=isolate, contract=contract)
            outcome.plugin = loaded.portable()
            send(outcome)
        return None

    result, parts = execute(job, isolate=isolate, timeout=timeout, bar=None, cancel=None, name=name)
    if isinstance(result, isolation.ChildFailure) and not parts:
        raise failure_error(result, name, path, loading=True)
    report_plugin = item if isinstance(item, Plugin) else parts[0]
    outcomes = parts[1:]
    for outcome in outcomes:
        outcome.plugin = report_plugin
    resolve(outcomes, locator)
    failure = None
    if isinstance(result, isolation.ChildFailure):
        failure = str(failure_error(result, name, path, loading=False))
    return outcomes, failure


def _error_text(outcome: RunOutcome) -> str | None:
    return None if outcome.error is None else str(outcome.error).split("\n")[0]


@dataclasses.dataclass(frozen=True, eq=False)
class PaddingProbe:
    """What :func:`probe_padding` found.

    Attributes
    ----------
    keys : tuple of str
        The padded state keys (``'data["next", "obs"]'``).
    lacking : bool array of shape ``[N]``
        True on each episode's last row whose final state the data lacks.
    probed : bool array of shape ``[N]``
        The rows the plug-in ran on (the episodes of ``lacking``, or every row).
    rewards : float64 array of shape ``[N]``
        The plug-in's rewards on the data (``episodes`` mode; NaN on rows not probed).
    changed : bool array of shape ``[N]``
        Rows whose reward changes when the padding does.
    delta : float64 array of shape ``[N]``
        The largest ``|probe reward - reward|`` of each row over the probes (0 where equal; inf where one of
        the two is NaN).
    error : str or None
        The first line of the plug-in's failure on the data itself (then nothing else is known).
    probe_error : str or None
        The first line of its failure on a probe (it broke when the padding changed: it reads it).

    Examples
    --------
    >>> probe.reads_padding  # doctest: +SKIP
    True
    """

    keys: tuple
    lacking: np.ndarray
    probed: np.ndarray
    rewards: np.ndarray
    changed: np.ndarray
    delta: np.ndarray
    error: str | None = None
    probe_error: str | None = None

    @property
    def reads_padding(self) -> bool:
        """True when a reward changed with the padding, or the plug-in failed on a probe."""
        return self.error is None and (bool(self.changed.any()) or self.probe_error is not None)


def _episodes(ends: np.ndarray) -> np.ndarray:
    """Episode number of each row, from the episodes' last rows (bool ``[N]``)."""
    return np.concatenate(([0], np.cumsum(ends[:-1]))) if ends.size else np.zeros(0, dtype=np.int64)


def probe_padding(frame: pl.DataFrame, plugin, *, contract: str | Contract | None = None,
                  spec: FrameSpec | None = None, only_lacking: bool = True,
                  isolate: bool | None = None, timeout: float | None = None) -> PaddingProbe | None:
    """Run ``plugin`` on the data and on the contract's padding probes; mark the rows whose reward changes.

    The runs are whole episodes (``episodes`` mode, ``contiguous=False``), in one child process (``isolate``),
    on the episodes that lack their final state only (``only_lacking``; an episode's rewards in this mode do
    not depend on the others), or on every row.

    Parameters
    ----------
    frame : polars.DataFrame
        The data (whole episodes, in episode order).
    plugin : Plugin or path
        The plug-in (a Plugin loaded in a child process is loaded again from its file).
    contract, spec
        As :func:`rewardlab.plugins.apply_plugins`.
    only_lacking : bool
        Run only the episodes whose final state the data lacks.
    isolate, timeout
        As :func:`rewardlab.plugins.apply_plugins`.

    Returns
    -------
    PaddingProbe or None
        None for a contract whose padding is part of its definition (kanachan's: nothing to probe).

    Raises
    ------
    PluginLoadError
        The file does not load.

    Examples
    --------
    >>> probe = probe_padding(frame, "goal.py", isolate=False)  # doctest: +SKIP
    >>> probe.reads_padding, int(probe.changed.sum())  # doctest: +SKIP
    (True, 10)
    """
    check_frame(frame)
    if not isinstance(only_lacking, bool):
        raise ParameterError("only_lacking", "should be True or False", only_lacking)
    chosen, frame_spec = contract_for(frame, contract, spec=spec)
    [arrays] = shard_arrays([frame], lambda f: chosen.arrays(f, frame_spec))
    missing = chosen.missing_finals(arrays)
    if missing is None:
        return None
    lacking = np.asarray(missing, dtype=bool)
    n = lacking.shape[0]
    nothing = np.zeros(n, dtype=bool)
    keys = tuple(chosen.padded_states(arrays))
    if not lacking.any() or not chosen.padding_probes(arrays):
        return PaddingProbe(keys, lacking, nothing, np.full(n, np.nan), nothing, np.zeros(n))
    if only_lacking:
        episode = _episodes(np.asarray(chosen.episode_flags(arrays), dtype=bool))
        probed = np.isin(episode, episode[lacking])
        sub = frame.filter(pl.Series(probed))
        [arrays] = shard_arrays([sub], lambda f: chosen.arrays(f, frame_spec))
    else:
        probed, sub = np.ones(n, dtype=bool), frame
    probes = list(padding_probes(chosen, [arrays]))
    locator = ShardLocator([sub], columns=chosen.locator_columns(frame_spec))
    conventions = [chosen.default_convention] * (1 + len(probes))
    outcomes, failure = _episode_runs([[arrays], *probes], plugin, contract=chosen, conventions=conventions,
                                      contiguous=False, locator=locator, seed=0, isolate=isolate,
                                      timeout=timeout)
    rows = np.flatnonzero(probed)
    rewards = np.full(n, np.nan)
    changed, delta = nothing.copy(), np.zeros(n)
    if not outcomes:  # the child failed on the data itself
        return PaddingProbe(keys, lacking, probed, rewards, changed, delta, error=failure.split("\n")[0])
    first = outcomes[0]
    rewards[rows] = first.rewards
    if first.error is not None:
        return PaddingProbe(keys, lacking, probed, rewards, changed, delta, error=_error_text(first))
    probe_error = next((_error_text(o) for o in outcomes[1:] if o.error is not None), None)
    if probe_error is None and failure is not None:
        probe_error = failure.split("\n")[0]
    for outcome in outcomes[1:]:
        if outcome.error is not None:
            continue
        moved = reward_changes(outcome.rewards, first.rewards)
        with np.errstate(invalid="ignore"):
            gap = np.where(moved, np.abs(outcome.rewards - first.rewards), 0.0)
        changed[rows] |= moved
        delta[rows] = np.maximum(delta[rows], np.nan_to_num(gap, nan=np.inf))
    return PaddingProbe(keys, lacking, probed, rewards, changed, delta, probe_error=probe_error)


@dataclasses.dataclass(frozen=True, eq=False)
class ConventionRuns:
    """What :func:`convention_runs` found: the plug-in's rewards and dones under each convention.

    Attributes
    ----------
    conventions : tuple of str
        The contract's conventions, the reference (the default) first.
    rewards, dones : dict of str to array of shape ``[N]``
        Each convention's rewards (float64) and dones (bool).
    reward_changed, done_changed : bool arrays of shape ``[N]``
        Rows where some other convention's reward / done differs from the reference's.
    delta : float64 array of shape ``[N]``
        The largest ``|reward - reference reward|`` of each row (0 where equal).
    errors : dict of str to str
        The first line of the plug-in's failure under a convention (that convention is then not compared).

    Examples
    --------
    >>> np.flatnonzero(runs.reward_changed | runs.done_changed)  # doctest: +SKIP
    array([52, 101])
    """

    conventions: tuple
    rewards: dict
    dones: dict
    reward_changed: np.ndarray
    done_changed: np.ndarray
    delta: np.ndarray
    errors: dict

    @property
    def changed(self) -> np.ndarray:
        """Rows whose reward or done differs between conventions."""
        return self.reward_changed | self.done_changed


def convention_runs(frame: pl.DataFrame, plugin, *, contract: str | Contract | None = None,
                    spec: FrameSpec | None = None, isolate: bool | None = None,
                    timeout: float | None = None) -> ConventionRuns | None:
    """Run ``plugin`` on whole episodes (``contiguous=True``) under each of the contract's conventions.

    What :func:`rewardlab.plugins.check.check_plugin` compares for its simulation-convention warning
    (its ``episodes (contiguous=True)`` run against the simulation one), row by row.

    Parameters
    ----------
    frame : polars.DataFrame
    plugin : Plugin or path
    contract, spec, isolate, timeout
        As :func:`rewardlab.plugins.apply_plugins`.

    Returns
    -------
    ConventionRuns or None
        None for a contract with fewer than two conventions (the ``steps`` contract has none).

    Examples
    --------
    >>> runs = convention_runs(kanachan_frame, "end_of_round.py", isolate=False)  # doctest: +SKIP
    >>> runs.conventions  # doctest: +SKIP
    ('offline', 'simulation')
    """
    check_frame(frame)
    chosen, frame_spec = contract_for(frame, contract, spec=spec)
    conventions = tuple(chosen.conventions)
    if len(conventions) < 2:
        return None
    [arrays] = shard_arrays([frame], lambda f: chosen.arrays(f, frame_spec))
    locator = ShardLocator([frame], columns=chosen.locator_columns(frame_spec))
    outcomes, failure = _episode_runs([[arrays]] * len(conventions), plugin, contract=chosen,
                                      conventions=list(conventions), contiguous=True, locator=locator, seed=0,
                                      isolate=isolate, timeout=timeout)
    n = arrays.n
    errors = {c: _error_text(o) for c, o in zip(conventions, outcomes) if o.error is not None}
    for c in conventions[len(outcomes):]:
        errors[c] = (failure or "the plug-in's process ended").split("\n")[0]
    rewards = {c: o.rewards for c, o in zip(conventions, outcomes)}
    dones = {c: o.dones for c, o in zip(conventions, outcomes)}
    reward_changed, done_changed, delta = np.zeros(n, bool), np.zeros(n, bool), np.zeros(n)
    ref = conventions[0]
    if ref in rewards and ref not in errors:
        for c in conventions[1:]:
            if c in errors or c not in rewards:
                continue
            moved = reward_changes(rewards[c], rewards[ref])
            reward_changed |= moved
            done_changed |= np.asarray(dones[c], bool) != np.asarray(dones[ref], bool)
            with np.errstate(invalid="ignore"):
                delta = np.fmax(delta, np.where(moved, np.abs(rewards[c] - rewards[ref]), 0.0))
    return ConventionRuns(conventions, rewards, dones, reward_changed, done_changed, delta, errors)
