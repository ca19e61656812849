"""The round trip of an exported plug-in file: applied through the frame's contract, compared bit for bit.

Every export checks the file it is about to write the same way, whatever
the family or the domain:

1. the file is applied with :func:`rewardlab.plugins.apply_plugins` in each
   batch mode asked for (:func:`compare_modes`; default every mode of
   :data:`~rewardlab.plugins.batch_modes.BATCH_MODES`), through the
   contract and spec of the frame (:func:`rewardlab.contracts.contract_for`),
   and each reward compared bit for bit, each done exactly, with the
   library's own evaluation of the family (:func:`compare_bits`);
2. :func:`rewardlab.check_plugin` runs on a deterministic sample of whole
   episodes spread evenly over the data (:func:`sample_whole_episodes`); in
   a multi-agent spec (one whose ``agent`` column is part of the episode
   key, as kanachan's seats) the episodes that share the rest of the key (a
   kanachan game) are kept together.

:func:`plugin_roundtrip` does both and returns a :class:`ModesRoundTrip`;
:func:`family_roundtrip` runs it against a registered family's own
:meth:`~rewardlab.families.RewardFamily.evaluate`.
The pieces are public so a session can run them with its own progress and
cancel (:mod:`rewardlab.sessions.roundtrip`), and an export that compares
against another plug-in (:mod:`rewardlab.normalized_export`) can reuse them.

Examples
--------
>>> [a.tolist() for a in group_spans(np.array([1, 3, 6]), np.array([0, 0, 1]))]
[[0, 4], [4, 7]]
>>> rt = plugin_roundtrip("scaled.py", frame, scaling.evaluate(frame))  # doctest: +SKIP
>>> rt.ok  # doctest: +SKIP
True
"""

from __future__ import annotations

import contextlib
import dataclasses
import warnings

import numpy as np
import polars as pl

from rewardlab.contracts import contract_for
from rewardlab.core import columns
from rewardlab.core.errors import ParameterError, RewardlabWarning, check_int
from rewardlab.core.rows import spread_episodes
from rewardlab.core.spec import FrameSpec, attach
from rewardlab.families.base import RewardFamily
from rewardlab.plugins import apply_plugins, check_plugin, load_plugin
from rewardlab.plugins.batch_modes import BATCH_MODES
from rewardlab.sources.registry import spec_of

__all__ = ["CHECK_ROWS", "ModesRoundTrip", "compare_bits", "group_spans", "episode_end_rows", "whole_episodes",
           "sample_whole_episodes", "WarningLog", "collect_warnings", "compare_modes", "plugin_roundtrip",
           "family_roundtrip"]

#: Rows of whole episodes check-plugin runs on in a round trip (all rows when fewer).
CHECK_ROWS = 20_000


def compare_bits(file_reward: np.ndarray, file_done: np.ndarray, lib_reward: np.ndarray,
                 lib_done: np.ndarray) -> tuple[int, int, float]:
    """Rewards differing bit for bit, dones differing, and the largest ``|file - library|`` reward difference.

    Parameters
    ----------
    file_reward, lib_reward : float64 arrays ``[N]``
    file_done, lib_done : bool arrays ``[N]``

    Examples
    --------
    >>> compare_bits(np.array([0.0, 1.0]), np.array([False, True]), np.array([-0.0, 1.0]), np.array([False, True]))
    (1, 0, 0.0)
    """
    differing = file_reward.view(np.uint64) != lib_reward.view(np.uint64)
    with np.errstate(all="ignore"):
        diff = np.abs(file_reward - lib_reward)
    largest = float(np.nanmax(diff[differing])) if differing.any() else 0.0
    return int(differing.sum()), int((file_done != lib_done).sum()), largest


def group_spans(end_rows: np.ndarray, group: np.ndarray | None) -> tuple[np.ndarray, np.ndarray]:
    """Start and end (exclusive) rows of every group of consecutive episodes, from the episodes' end rows.

    Parameters
    ----------
    end_rows : int array ``[E]``
        Each episode's last row, ascending.
    group : array ``[E]`` or None
        Each episode's group (consecutive equal values form one group);
        None: every episode is its own group.

    Returns
    -------
    starts, stops : int64 arrays ``[G]``

    Examples
    --------
    >>> [a.tolist() for a in group_spans(np.array([1, 3, 6]), None)]
    [[0, 2, 4], [2, 4, 7]]
    """
    ends = np.asarray(end_rows, dtype=np.int64) + 1
    starts = np.concatenate([[0], ends[:-1]]).astype(np.int64)
    if group is not None and ends.size:
        first = np.concatenate([[True], group[1:] != group[:-1]])
        starts = starts[first]
        ends = np.concatenate([starts[1:], [ends[-1]]]).astype(np.int64)
    return starts, ends.astype(np.int64)


def episode_end_rows(frame: pl.DataFrame, *, spec: FrameSpec | None = None) -> np.ndarray:
    """The last row of every episode of ``frame``, by its spec (:meth:`FrameSpec.episode_end`); ``[E]`` int64.

    Examples
    --------
    >>> f = pl.DataFrame({"e": [0, 0, 1]})
    >>> episode_end_rows(f, spec=FrameSpec(name="s", episode=("e",))).tolist()
    [1, 2]
    """
    here = spec_of(frame, spec)
    ends = frame.select(here.episode_end(frame.columns)).to_series().to_numpy().astype(bool)
    return np.flatnonzero(ends).astype(np.int64)


def whole_episodes(frame: pl.DataFrame, *, spec: FrameSpec | None = None,
                   end_rows: np.ndarray | None = None) -> tuple[np.ndarray, np.ndarray]:
    """Start and end (exclusive) rows of the units a round trip samples whole: episodes, or groups of them.

    In a spec whose ``agent`` column is part of the episode key (each
    agent's trajectory an episode, e.g. a kanachan seat), the consecutive
    episodes that share the rest of the key (a kanachan game) form one unit;
    otherwise each episode is its own.

    Parameters
    ----------
    frame : polars.DataFrame
    spec : FrameSpec, optional
        ``frame``'s spec, when it carries none.
    end_rows : int array ``[E]``, optional
        The episodes' last rows, when already known (default:
        :func:`episode_end_rows`).

    Examples
    --------
    >>> f = pl.DataFrame({"g": [0, 0, 0, 0, 1, 1], "a": [0, 0, 1, 1, 0, 1]})
    >>> [s.tolist() for s in whole_episodes(f, spec=FrameSpec(name="s", episode=("g", "a"), agent="a"))]
    [[0, 4], [4, 6]]
    """
    here = spec_of(frame, spec)
    rows = episode_end_rows(frame, spec=here) if end_rows is None else np.asarray(end_rows, dtype=np.int64)
    shared = [c for c in here.episode if c != here.agent] if here.agent in here.episode else []
    group = None
    if shared and rows.size and all(c in frame.columns for c in shared):
        keys = frame.select(shared)[rows]
        change = keys.select(pl.any_horizontal(pl.col(c).ne_missing(pl.col(c).shift(1)) for c in shared))
        group = np.cumsum(change.to_series().fill_null(True).to_numpy())
    return group_spans(rows, group)


def sample_whole_episodes(frame: pl.DataFrame, rows: int, *, spec: FrameSpec | None = None,
                          end_rows: np.ndarray | None = None) -> tuple[np.ndarray | None, int, int]:
    """A deterministic sample of whole episodes (:func:`whole_episodes`) with about ``rows`` rows, spread evenly.

    Returns
    -------
    positions : int64 array or None
        The sample's rows in frame order; None when the frame has at most
        ``rows`` rows (check everything).
    picked, units : int
        Units (episodes, or groups of them) in the sample and in the frame.

    Examples
    --------
    >>> f = pl.DataFrame({"e": [0, 0, 1, 1, 2, 2]})
    >>> positions, picked, units = sample_whole_episodes(f, 2, spec=FrameSpec(name="s", episode=("e",)))
    >>> positions.tolist(), picked, units
    ([0, 1], 1, 3)
    """
    starts, stops = whole_episodes(frame, spec=spec, end_rows=end_rows)
    return spread_episodes(starts, stops, rows)


class WarningLog:
    """The texts of the :class:`~rewardlab.core.errors.RewardlabWarning` s caught by :func:`collect_warnings`.

    Examples
    --------
    >>> with collect_warnings() as log:
    ...     warnings.warn(RewardlabWarning("far from mean 0"))
    >>> log.texts
    ('far from mean 0',)
    """

    def __init__(self):
        self.caught: list = []

    @property
    def texts(self) -> tuple[str, ...]:
        """The first warning of each text, in order."""
        return tuple(dict.fromkeys(str(w.message) for w in self.caught if issubclass(w.category, RewardlabWarning)))


@contextlib.contextmanager
def collect_warnings():
    """Record every :class:`~rewardlab.core.errors.RewardlabWarning` raised inside (each one, not the first only).

    Yields
    ------
    WarningLog

    Examples
    --------
    >>> with collect_warnings() as log:
    ...     pass
    >>> log.texts
    ()
    """
    log = WarningLog()
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always", RewardlabWarning)
        try:
            yield log
        finally:
            log.caught = list(caught)


def compare_modes(frame: pl.DataFrame, plugin, expected: tuple[np.ndarray, np.ndarray], *,
                  modes=BATCH_MODES, spec: FrameSpec | None = None, contract=None, batch_size: int | None = None,
                  progress=False, cancel=None) -> dict[str, tuple[int, int, float]]:
    """Apply a loaded plug-in in each batch mode and compare it bit for bit with ``expected``.

    Parameters
    ----------
    frame : polars.DataFrame
    plugin : Plugin
        From :func:`rewardlab.load_plugin` (its name names the columns read back).
    expected : (float64 array ``[N]``, bool array ``[N]``)
        The library's rewards and dones.
    modes : sequence of str
        Batch modes (default every one).
    spec, contract
        Passed to :func:`rewardlab.apply_plugins` (default: the frame's).
    batch_size : int, optional
    progress : bool, None or callable
        As :func:`rewardlab.apply_plugins`; a callable gets each mode's run.
    cancel : callable, optional
        Polled; True stops the run (:class:`~rewardlab.core.errors.PluginRunCancelled`).

    Returns
    -------
    dict
        ``{mode: (rewards differing, dones differing, largest |difference|)}``.

    Examples
    --------
    >>> compare_modes(frame, load_plugin("r.py"), expected)["episodes"]  # doctest: +SKIP
    (0, 0, 0.0)
    """
    lib_reward, lib_done = expected
    n = frame.height
    if lib_reward.shape != (n,) or lib_done.shape != (n,):
        raise ParameterError("expected", f"should be two arrays of {n} rows (rewards, dones)",
                             (lib_reward.shape, lib_done.shape))
    reward_col, done_col = columns.reward_column(plugin.name), columns.done_column(plugin.name)
    out = {}
    for mode in modes:
        # replace: only the plug-in's own columns are read back (the data's reward_exported may go)
        applied = apply_plugins(frame, plugin, batch_mode=mode, batch_size=batch_size, spec=spec, contract=contract,
                                replace=True, cancel=cancel, progress=progress)
        got = applied[reward_col].cast(pl.Float64).to_numpy()
        out[mode] = compare_bits(got, applied[done_col].to_numpy(), lib_reward, lib_done)
    return out


@dataclasses.dataclass(frozen=True, eq=False)
class ModesRoundTrip:
    """A plug-in file compared with the library in every batch mode (see :func:`plugin_roundtrip`).

    Attributes
    ----------
    rows : int
        Transitions compared bit for bit in each batch mode.
    differing : dict
        ``{mode: (rewards differing, dones differing)}`` for every batch mode.
    report : CheckReport
        check-plugin on ``checked_rows`` transitions of whole episodes.
    warnings : tuple of str
        The first warning of each kind raised while applying the file.
    checked_rows, checked_episodes, episodes : int

    Examples
    --------
    >>> from types import SimpleNamespace
    >>> rt = ModesRoundTrip(4, {"episodes": (0, 0)}, SimpleNamespace(ok=True), (), 4, 2, 2)
    >>> rt.ok, str(rt).endswith("(on 4 transitions, 2 whole episodes of 2)")
    (True, True)
    """

    rows: int
    differing: dict
    report: object
    warnings: tuple
    checked_rows: int
    checked_episodes: int
    episodes: int

    @property
    def identical(self) -> bool:
        """Every reward bit for bit and every done equal, in every batch mode."""
        return all(r == 0 and d == 0 for r, d in self.differing.values())

    @property
    def ok(self) -> bool:
        """Identical and passing check-plugin."""
        return self.identical and bool(self.report.ok)

    def __str__(self) -> str:
        modes = ", ".join(self.differing)
        if self.identical:
            same = f"identical to rewardlab's rewards and dones on all {self.rows:,} transitions in every " \
                   f"batch mode ({modes})"
        else:
            bad = "; ".join(f"{m}: {r:,} rewards, {d:,} dones" for m, (r, d) in self.differing.items() if r or d)
            same = f"DIFFERS from rewardlab ({bad}) of {self.rows:,} transitions"
        check = ("check-plugin: PASS" if self.report.ok else "check-plugin: FAIL") + \
            f" (on {self.checked_rows:,} transitions, {self.checked_episodes:,} whole episodes of {self.episodes:,})"
        text = f"round trip: {same}; {check}"
        if not self.report.ok:
            text += "\n" + str(self.report)
        return text + "".join(f"\nwarning: {w}" for w in self.warnings)


def plugin_roundtrip(path, frame: pl.DataFrame, expected: tuple[np.ndarray, np.ndarray], *,
                     spec: FrameSpec | None = None, contract=None, modes=BATCH_MODES,
                     check_rows: int = CHECK_ROWS, progress: bool | None = False) -> ModesRoundTrip:
    """Apply a plug-in file in every batch mode of the frame's contract, compare bit for bit, run check-plugin.

    The family-agnostic round trip of every export: ``expected`` is the
    family's own evaluation on ``frame`` (e.g. ``family.evaluate(frame)``,
    :meth:`rewardlab.scaling.StepsScaling.evaluate`).  The contract is the
    one the frame's spec names (:func:`rewardlab.contracts.contract_for`)
    unless ``contract`` is given.

    Parameters
    ----------
    path : str or Path
        The plug-in file.
    frame : polars.DataFrame
    expected : (float64 array ``[N]``, bool array ``[N]``)
        The library's rewards and dones on ``frame``.
    spec : FrameSpec, optional
        ``frame``'s spec, when it carries none.
    contract : str or Contract, optional
        The plug-in contract (default: the spec's).
    modes : sequence of str
        Batch modes compared (default every one).
    check_rows : int
        Rows of whole episodes check-plugin runs on (all rows when the frame is no bigger).
    progress : bool or None
        A progress bar for each run (None: on an interactive terminal or in Jupyter).

    Returns
    -------
    ModesRoundTrip

    Examples
    --------
    >>> print(plugin_roundtrip("scaled.py", frame, StepsScaling(c).evaluate(frame)))  # doctest: +SKIP
    """
    check_rows = check_int("check_rows", check_rows, low=1, rule="should be an integer >= 1")
    chosen, found = contract_for(frame, contract, spec=spec)
    here = spec if spec is not None else found
    plugin = load_plugin(path, name="exported", contract=chosen)
    with collect_warnings() as log:
        compared = compare_modes(frame, plugin, expected, modes=modes, spec=here, contract=chosen, progress=progress)
    positions, picked, episodes = sample_whole_episodes(frame, check_rows, spec=here)
    sample = frame if positions is None else frame[positions]
    report = check_plugin(sample, plugin, progress=progress, spec=here, contract=chosen)
    return ModesRoundTrip(rows=frame.height, differing={m: (r, d) for m, (r, d, _) in compared.items()},
                          report=report, warnings=log.texts, checked_rows=sample.height, checked_episodes=picked,
                          episodes=episodes)



def family_roundtrip(family: RewardFamily, path, frame: pl.DataFrame, *, spec: FrameSpec | None = None,
                     contract=None, modes=BATCH_MODES, check_rows: int = CHECK_ROWS,
                     progress: bool | None = False) -> ModesRoundTrip:
    """:func:`plugin_roundtrip` of a family's exported file against the family's own ``evaluate(frame)``.

    Parameters
    ----------
    family : RewardFamily
        What the file should reproduce (e.g. the family it was rendered
        from by :func:`rewardlab.families.export.render_family`).
    path, frame, spec, contract, modes, check_rows, progress
        As :func:`plugin_roundtrip`; the family evaluates ``frame`` under
        ``spec`` too, when it is given.

    Returns
    -------
    ModesRoundTrip

    Examples
    --------
    >>> from rewardlab.domains.mahjong.families import Ranking
    >>> rt = family_roundtrip(Ranking.from_preset("top"), "top.py", rewardlab.load("data/sample.tsv.gz"))  # doctest: +SKIP
    >>> rt.ok  # doctest: +SKIP
    True
    """
    if not isinstance(family, RewardFamily):
        raise ParameterError("family", "should be a reward family (rewardlab.families.RewardFamily)",
                             type(family).__name__)
    if spec is not None and not isinstance(frame, pl.DataFrame):
        raise ParameterError("frame", "should be a polars DataFrame", type(frame).__name__)
    # the family evaluates the frame under the spec the file is applied with (a copy carries it: the
    # caller's frame keeps its own)
    evaluated = family.evaluate(frame if spec is None else attach(frame.clone(), spec))
    return plugin_roundtrip(path, frame, evaluated, spec=spec, contract=contract, modes=modes,
                            check_rows=check_rows, progress=progress)
