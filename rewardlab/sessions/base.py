"""Tuning sessions: the state behind every widget, in plain Python (no ipywidgets here).

A session owns its **parameters** (validated with the families' and
schedules' own rules and messages), **recomputes** its **results** whenever a
parameter changes, and tells its **observers** (plain callables, called with
the session) afterwards.  The widgets in :mod:`rewardlab.widgets` only wire
controls to :meth:`Session.try_update` and observers to their outputs; tests
and scripts drive sessions directly.

Setting parameters
------------------
* ``session.vector = (1, 0, 0, -1)`` or ``session.update(vector=..., mean=...)``
  validate, recompute and notify, or raise
  :class:`~rewardlab.errors.ParameterError` and change nothing.
* ``session.try_update(...)`` (what the widgets call) never raises a
  rewardlab error: it stores the message in :attr:`Session.last_error`,
  notifies the observers so the UI can show it, and returns False.
  :meth:`Session.attempt` does the same for any method (loading a plug-in,
  exporting).
* Numeric parameters also take **text**, read the way a person reads it
  (:func:`parse_number`): ``session.offset = "25000"`` works, ``"1.5"`` for
  an integer is refused, not read as 15.  The text boxes of the widgets
  send what was typed.
* A change is computed **before** it is kept: when the new results would
  hold a non-finite statistic (mean, std, expected reward, constants), the
  change is refused with a message naming the parameter and the session
  keeps its last good values.

Sessions
--------
* :class:`RankingTuningSession`: a rank vector (preset or typed), the
  optional points term, normalization constants (from data in one call,
  the seed's recipe, or typed); results from the precomputed rank table
  (a gather per change); :meth:`~RankingTuningSession.export` checks the
  plug-in round trip (with progress and a :class:`CancelToken`), then
  writes it.
* :class:`EpsilonScheduleSession`: ReinforcementLearning.jl's linear / exp
  explorer and kanachan's EpsilonGreedy (intended and actual).
* :class:`NormalizationSession`: normalization constants of a reward column
  in a scope, before / after statistics, Gymnasium and SB3 replays.
* :class:`ComparisonSession`: candidate plug-ins side by side.

Examples
--------
>>> from rewardlab.sessions import EpsilonScheduleSession
>>> s = EpsilonScheduleSession(kind="linear", epsilon_stable=0.1, warmup_steps=0, decay_steps=1000,
...                            n_steps=5000, threshold=0.5)
>>> s.results.summary.first_below
556
>>> s.try_update(epsilon_stable=1.5)
False
>>> s.last_error
'`epsilon_stable` should be in [0, 1] (a probability). Received 1.5.'
"""

from __future__ import annotations

import contextlib
import dataclasses
import math
import re
import tempfile
import threading
import time
import warnings
from pathlib import Path
from typing import Callable, ClassVar

import numpy as np
import polars as pl

from rewardlab import schema as S
from rewardlab.compare import compare_rewards, episode_return_table, most_disagreeing_episodes
from rewardlab.dataset import as_lazy
from rewardlab.errors import (
    ExportCancelled, FrameError, ParameterError, PluginRunCancelled, RewardlabError, RewardlabWarning,
    RoundTripError, check_choice, check_in_range, check_positive,
)
from rewardlab.export import check_constants_fit, export_target, render_plugin, write_text
from rewardlab.families import (
    Provenance, Ranking, RankingParams, RankingPoints, RankingPointsParams, prepare_frame, preset_names,
    ranking_preset,
)
from rewardlab.families.base import check_int
from rewardlab.normalizers import normalization_summary, normalized_rewards
from rewardlab.plugins import Plugin, apply_plugins, check_plugin, load_plugin
from rewardlab.ranking import RankTable, expected_reward
from rewardlab.schedules import ExplorerSchedule, KanachanEpsilonGreedy, to_json, to_yaml
from rewardlab.stats import SCOPES, normalization_constants, reward_stats

__all__ = [
    "locate",
    "parse_number",
    "CancelToken",
    "CHECK_ROWS",
    "Session",
    "RankingTuningSession",
    "RankingResults",
    "ExportResult",
    "RoundTrip",
    "roundtrip_check",
    "EpsilonScheduleSession",
    "EpsilonResults",
    "SCHEDULE_KINDS",
    "NormalizationSession",
    "NormalizationResults",
    "ComparisonSession",
    "ComparisonResults",
]


# --------------------------------------------------------------------------
# Finding the sample data from a notebook
# --------------------------------------------------------------------------


def locate(relative: str | Path, *, start: str | Path | None = None) -> Path:
    """Find ``relative`` (e.g. ``"data/sample.tsv.gz"``) in ``start`` or one of its parents.

    Notebooks run with the kernel's working directory wherever the notebook
    is (JupyterLab: ``notebooks/``), so a repository file is looked for in
    the working directory and its parents, then next to the installed
    ``rewardlab`` package (an editable install: the repository).

    Parameters
    ----------
    relative : str or Path
        A relative path.
    start : str or Path, optional
        Where to start looking (default: the current working directory).

    Returns
    -------
    Path
        The absolute path found.

    Raises
    ------
    ParameterError
        Nothing of that name exists in any of those folders.

    Examples
    --------
    >>> locate("data/sample.tsv.gz").name  # doctest: +SKIP
    'sample.tsv.gz'
    """
    if not isinstance(relative, (str, Path)) or Path(relative).is_absolute():
        raise ParameterError("relative", "should be a relative path such as 'data/sample.tsv.gz'", relative)
    here = Path.cwd() if start is None else Path(start)
    package_root = Path(__file__).resolve().parents[1]
    searched = []
    for base in (here.resolve(), package_root):
        for folder in (base, *base.parents):
            if folder in searched:
                continue
            searched.append(folder)
            candidate = folder / relative
            if candidate.exists():
                return candidate
    raise ParameterError("relative", f"should exist under {here} or one of its parents (or next to the "
                         "rewardlab package)", str(relative),
                         hint="Pass an absolute path to your own data instead.")


# --------------------------------------------------------------------------
# Reading numbers typed as text; cancelling long work
# --------------------------------------------------------------------------

_INTEGER_TEXT = re.compile(r"[+-]?[0-9]+")
_DECIMAL_TEXT = re.compile(r"[+-]?([0-9]+\.?[0-9]*|\.[0-9]+)([eE][+-]?[0-9]+)?")


def parse_number(name: str, value, *, integer: bool = False):
    """A number from what a person typed: ``"25000"``, ``"-1.5"``, ``"1e6"``; numbers pass through.

    Only ASCII decimal notation is read (digits, one dot, an optional
    exponent, surrounding spaces ignored): no thousands separators, no
    decimal comma, no ``inf`` / ``nan``, no digit groups with ``_``.  An
    integer field takes whole numbers only (``"1e6"`` and ``"3.0"`` are
    whole; ``"1.5"`` is refused, never read as 15 or 1).  Range rules are
    the session's.

    Parameters
    ----------
    name : str
        The parameter, for the message.
    value : str, int or float
        Text as typed, or a number (returned unchanged).
    integer : bool
        Whole numbers only; returns an ``int``.

    Returns
    -------
    int or float (or ``value`` unchanged when it is not a string)

    Raises
    ------
    ParameterError
        Naming the parameter and echoing the text.

    Examples
    --------
    >>> parse_number("divisor", " 1e3 ", integer=True), parse_number("std", "0.25")
    (1000, 0.25)
    >>> parse_number("divisor", "1.5", integer=True)
    Traceback (most recent call last):
    rewardlab.errors.ParameterError: `divisor` should be a whole number such as 1000. Received '1.5'.
    >>> parse_number("std", "1,5")
    Traceback (most recent call last):
    rewardlab.errors.ParameterError: `std` should be a number such as 0.5, -3 or 1e-3 (a dot for decimals, no thousands separators). Received '1,5'.
    """
    if not isinstance(value, str):
        return value
    text = value.strip()
    if integer and _INTEGER_TEXT.fullmatch(text):
        return int(text)
    if not _DECIMAL_TEXT.fullmatch(text):
        rule = ("should be a whole number such as 1000" if integer else
                "should be a number such as 0.5, -3 or 1e-3 (a dot for decimals, no thousands separators)")
        raise ParameterError(name, rule, value)
    number = float(text)
    if not math.isfinite(number):
        raise ParameterError(name, "should be a finite number (it overflows float64)", value)
    if integer:
        if not number.is_integer():
            raise ParameterError(name, "should be a whole number such as 1000", value)
        return int(number)
    return number


class CancelToken:
    """Ask long work (an export and its round-trip check) to stop at its next check point.

    Thread-safe: a UI thread calls :meth:`cancel` while the work runs in
    another thread; the work raises :class:`~rewardlab.errors.ExportCancelled`
    at its next check point (between chunks of the comparison, before and
    after check-plugin), having written nothing.

    Examples
    --------
    >>> token = CancelToken()
    >>> token.cancelled
    False
    >>> token.cancel()
    >>> token.check("reward.py", "the comparison")
    Traceback (most recent call last):
    rewardlab.errors.ExportCancelled: export of 'reward.py' cancelled during the comparison; nothing was written
    """

    def __init__(self) -> None:
        self._event = threading.Event()

    def cancel(self) -> None:
        """Ask the work to stop."""
        self._event.set()

    @property
    def cancelled(self) -> bool:
        """True once :meth:`cancel` was called."""
        return self._event.is_set()

    def check(self, path, stage: str) -> None:
        """Raise :class:`~rewardlab.errors.ExportCancelled` when cancelled."""
        if self._event.is_set():
            raise ExportCancelled(path, stage)


def _cancel_token(cancel) -> CancelToken:
    if cancel is None:
        return CancelToken()
    if not isinstance(cancel, CancelToken):
        raise ParameterError("cancel", "should be a rewardlab.sessions.CancelToken or None", cancel)
    return cancel


def _progress_callback(progress) -> Callable[[float, str], None]:
    if progress is None:
        return lambda fraction, message: None
    if not callable(progress):
        raise ParameterError("progress", "should be a callable progress(fraction, message) or None", progress)
    return progress


# --------------------------------------------------------------------------
# The session base: parameters, validation, recompute, observers
# --------------------------------------------------------------------------


class _Param:
    """A session parameter: reading returns its value, assigning calls :meth:`Session.update`."""

    def __init__(self, doc: str):
        self.__doc__ = doc

    def __set_name__(self, owner, name: str) -> None:
        self.name = name

    def __get__(self, obj, objtype=None):
        if obj is None:
            return self
        return obj._params[self.name]

    def __set__(self, obj, value) -> None:
        obj.update(**{self.name: value})


class Session:
    """Base class: parameters, validation, recompute, results, observers.

    Subclasses declare their parameters as class attributes (assigning one
    validates and recomputes), implement ``_validate(params, changes)`` (a
    dict of the new values, validated, or a ParameterError) and
    ``_compute()`` (the results object).

    Attributes
    ----------
    results : object
        The results of the last successful recompute.
    last_error : str or None
        The message of the last error caught by :meth:`try_update` /
        :meth:`attempt`; cleared by the next success.
    version : int
        Incremented on every recompute.
    recompute_seconds : float
        Wall time of the last recompute.

    Examples
    --------
    >>> s = EpsilonScheduleSession()
    >>> seen = []
    >>> _ = s.observe(lambda session: seen.append(session.version))
    >>> s.n_steps = 2000
    >>> seen == [s.version]
    True
    """

    _param_names: ClassVar[tuple[str, ...]] = ()
    #: Parameters that also take text (:func:`parse_number`): ``"int"`` or ``"float"``.
    _numeric: ClassVar[dict[str, str]] = {}

    def __init__(self) -> None:
        self._observers: list[Callable] = []
        self._params: dict = {}
        self.results = None
        self.last_error: str | None = None
        self.version = 0
        self.recompute_seconds = math.nan

    # -- observers ---------------------------------------------------------
    def observe(self, callback: Callable) -> Callable:
        """Call ``callback(session)`` after every recompute and every caught error; returns it.

        Examples
        --------
        >>> s = EpsilonScheduleSession()
        >>> cb = s.observe(print)
        >>> s.unobserve(cb)
        """
        if not callable(callback):
            raise ParameterError("callback", "should be callable", callback)
        self._observers.append(callback)
        return callback

    def unobserve(self, callback: Callable) -> None:
        """Stop calling ``callback`` (no error if it was not registered)."""
        self._observers = [cb for cb in self._observers if cb is not callback]

    def _notify(self) -> None:
        for callback in list(self._observers):
            callback(self)

    # -- parameters ----------------------------------------------------------
    @property
    def parameters(self) -> dict:
        """The current parameter values (a copy).

        Examples
        --------
        >>> sorted(EpsilonScheduleSession().parameters)[:3]
        ['annealing_steps', 'decay_steps', 'epsilon_first']
        """
        return dict(self._params)

    def update(self, **changes) -> None:
        """Set several parameters at once: validate all, then recompute once and notify.

        Raises
        ------
        ParameterError
            An unknown parameter name, or a value breaking a rule; nothing
            changes then.

        Examples
        --------
        >>> s = EpsilonScheduleSession()
        >>> s.update(kind="exp", decay_steps=100)
        >>> s.kind
        'exp'
        """
        unknown = [k for k in changes if k not in self._param_names]
        if unknown:
            raise ParameterError("parameter", "should be one of " + ", ".join(self._param_names),
                                 unknown[0])
        changes = {k: parse_number(k, v, integer=self._numeric[k] == "int") if k in self._numeric else v
                   for k, v in changes.items()}
        with self._change(changes):
            self._params = self._validate({**self._params, **changes}, changes)

    def try_update(self, **changes) -> bool:
        """:meth:`update`, but a rewardlab error goes to :attr:`last_error` (observers notified).

        Returns
        -------
        bool
            True when the change was applied.

        Examples
        --------
        >>> s = EpsilonScheduleSession()
        >>> s.try_update(n_steps=0), s.last_error
        (False, '`n_steps` should be >= 1. Received 0.')
        """
        return self.attempt(self.update, **changes)

    def attempt(self, method: Callable, *args, **kwargs) -> bool:
        """Call ``method(*args, **kwargs)``; catch a rewardlab error into :attr:`last_error`.

        What a UI calls so that an invalid value shows a message instead of
        raising inside a widget callback.

        Returns
        -------
        bool
            True when the call returned normally.

        Examples
        --------
        >>> s = EpsilonScheduleSession()
        >>> s.attempt(s.update, kind="cosine")
        False
        """
        try:
            method(*args, **kwargs)
        except RewardlabError as exc:
            self.last_error = str(exc)
            self._notify()
            return False
        return True

    @contextlib.contextmanager
    def _change(self, changes: dict):
        """Apply the state changes made in the ``with`` block, recompute, and keep them only if all is well.

        The results are computed before anything is kept; an error in the
        block or in the recompute, or a non-finite statistic in the new
        results (:meth:`_nonfinite`), restores the previous state and
        raises (a ParameterError naming ``changes`` for a non-finite
        statistic).  On success the results are replaced and the observers
        told.
        """
        saved = dict(self.__dict__)
        saved["_params"] = dict(self._params)
        try:
            yield
            t0 = time.perf_counter()
            with np.errstate(over="ignore", invalid="ignore"):  # overflow is reported below, not warned
                results = self._compute()
            seconds = time.perf_counter() - t0
            bad = self._nonfinite(results)
            if bad:
                name = ", ".join(changes) or "data"
                value = next(iter(changes.values())) if len(changes) == 1 else changes
                raise ParameterError(name, "should keep every statistic finite, but with it "
                                     + "; ".join(bad[:3]), value,
                                     hint="Nothing changed: the previous values are kept.")
        except BaseException:
            self.__dict__.clear()
            self.__dict__.update(saved)
            raise
        self.results = results
        self.recompute_seconds = seconds
        self.version += 1
        self.last_error = None
        self._notify()

    def _refresh(self, changes: dict | None = None) -> None:
        with self._change({} if changes is None else changes):
            pass

    @staticmethod
    def _finite_problems(checks) -> list[str]:
        """``"<what> would be <value>"`` for each ``(what, value)`` whose value is not finite."""
        out = []
        for what, value in checks:
            array = np.asarray(value, dtype=np.float64)
            if array.size and not np.isfinite(array).all():
                bad = array[~np.isfinite(array)].flat[0]
                out.append(f"{what} would be {float(bad)!r}")
        return out

    # subclasses
    def _validate(self, params: dict, changes: dict) -> dict:  # pragma: no cover - abstract
        raise NotImplementedError

    def _compute(self):  # pragma: no cover - abstract
        raise NotImplementedError

    def _nonfinite(self, results) -> list[str]:
        """What in ``results`` is not finite (an empty list when all is well); subclasses list their numbers."""
        return []


def _check_bool(name: str, value) -> bool:
    if not isinstance(value, (bool, np.bool_)):
        raise ParameterError(name, "should be True or False", value)
    return bool(value)


def _load_frame(data) -> tuple[pl.DataFrame, str | None]:
    """An eager frame and, when ``data`` was a path, its description."""
    if isinstance(data, pl.DataFrame):
        return data, None
    if isinstance(data, pl.LazyFrame):
        return data.collect(), None
    if isinstance(data, (str, Path)) or (isinstance(data, (list, tuple)) and data
                                          and all(isinstance(p, (str, Path)) for p in data)):
        paths = [data] if isinstance(data, (str, Path)) else list(data)
        return as_lazy(data).collect(), ", ".join(str(p) for p in paths)
    raise ParameterError("data", "should be a polars DataFrame or LazyFrame, or path(s) to a dataset",
                         type(data).__name__)


def _base_columns(frame: pl.DataFrame) -> pl.DataFrame:
    """The frame without reward / done columns (so a re-applied plug-in cannot clash)."""
    keep = [c for c in frame.columns if not c.startswith((S.REWARD_PREFIX, S.DONE_PREFIX))]
    return frame.select(keep) if len(keep) != len(frame.columns) else frame


# --------------------------------------------------------------------------
# Export and the round-trip check
# --------------------------------------------------------------------------


#: Rows of whole games that :func:`roundtrip_check` runs check-plugin on (every batch mode);
#: every row is compared bit for bit in one fast batch mode.
CHECK_ROWS = 20_000
#: How the exported file is applied for the bit-for-bit comparison (one run in a child process,
#: which a cancel stops at once).
COMPARE_MODE = "sequential"
COMPARE_BATCH_SIZE = 8192
#: Cost of a check-plugin row relative to a compared row, for the progress fraction: check-plugin runs
#: the file seven times or more (every mode, small batches, strict IN-field checks), measured at about
#: 60x per row on 10**6 transitions (benchmarks/bench_export.py).
_CHECK_COST = 60


@dataclasses.dataclass(frozen=True, eq=False)
class RoundTrip:
    """An exported plug-in file compared with the in-library family (see :func:`roundtrip_check`).

    Attributes
    ----------
    rows : int
        Transitions compared bit for bit: every row of the data.
    rewards_differing, dones_differing : int
        Transitions whose reward (compared bit for bit) or done differs.
    max_abs_difference : float
        Largest ``|file - library|`` reward difference (0.0 when identical).
    report : CheckReport
        :func:`rewardlab.check_plugin` on the file (every batch mode, two
        batch sizes) over ``checked_rows`` transitions.
    warnings : tuple of str
        The first warning of each kind raised while applying the file (e.g.
        a reward scale far from mean 0 / std 1).
    compare_mode, compare_batch_size : str, int
        The batch mode the comparison applied the file in.
    checked_rows, checked_games, games : int
        Transitions and whole games check-plugin ran on, of ``games`` in
        the data (all of them when the data is small).

    Examples
    --------
    >>> result = session.export("reward.py").roundtrip  # doctest: +SKIP
    >>> result.identical, result.report.ok  # doctest: +SKIP
    (True, True)
    """

    rows: int
    rewards_differing: int
    dones_differing: int
    max_abs_difference: float
    report: object
    warnings: tuple
    compare_mode: str = COMPARE_MODE
    compare_batch_size: int = COMPARE_BATCH_SIZE
    checked_rows: int = 0
    checked_games: int = 0
    games: int = 0

    @property
    def identical(self) -> bool:
        """True when every reward is bit for bit and every done equal to the library's."""
        return self.rewards_differing == 0 and self.dones_differing == 0

    @property
    def ok(self) -> bool:
        """Identical and passing ``check-plugin``."""
        return self.identical and bool(self.report.ok)

    @property
    def checked_all(self) -> bool:
        """True when check-plugin ran on every row (not on a sample of whole games)."""
        return self.checked_rows == self.rows

    def __str__(self) -> str:
        how = f"compared bit for bit, {self.compare_mode} batches of {self.compare_batch_size:,} rows"
        if self.identical:
            same = f"identical to rewardlab's rewards and dones on all {self.rows:,} transitions ({how})"
        else:
            same = (f"DIFFERS from rewardlab on {self.rewards_differing:,} rewards and "
                    f"{self.dones_differing:,} dones of {self.rows:,} transitions (largest |difference| "
                    f"{self.max_abs_difference:.6g}; {how})")
        if self.checked_all:
            where = f"all {self.checked_rows:,} transitions"
        else:
            where = (f"{self.checked_rows:,} transitions: {self.checked_games:,} whole games of "
                     f"{self.games:,}, spread evenly over the data")
        check = ("check-plugin: PASS" if self.report.ok else "check-plugin: FAIL") + \
            f" (contract and batch invariance in every batch mode, on {where})"
        text = f"round trip: {same}; {check}"
        if not self.report.ok:
            text += "\n" + str(self.report)
        for w in self.warnings:
            text += f"\nwarning: {w}"
        return text


def whole_games(frame: pl.DataFrame, prepared) -> tuple[np.ndarray, np.ndarray]:
    """Start and end (exclusive) rows of every game of a frame, from its episode ends.

    A game is a run of consecutive episodes with the same ``game`` value
    (each episode its own game when the frame has no ``game`` column).

    Returns
    -------
    starts, stops : int64 arrays ``[G]``

    Examples
    --------
    >>> starts, stops = whole_games(frame, prepare_frame(frame))  # doctest: +SKIP
    """
    ends = prepared.game_rows + 1
    starts = np.concatenate([[0], ends[:-1]]).astype(np.int64)
    if S.GAME in frame.columns and ends.size:
        game = frame[S.GAME].gather(prepared.game_rows).to_numpy()
        first = np.concatenate([[True], game[1:] != game[:-1]])
        starts = starts[first]
        ends = np.concatenate([starts[1:], [ends[-1]]]).astype(np.int64)
    return starts, ends.astype(np.int64)


def sample_whole_games(frame: pl.DataFrame, prepared, rows: int) -> tuple[np.ndarray | None, int, int]:
    """A deterministic sample of whole games with about ``rows`` rows, spread evenly over the frame.

    Returns
    -------
    positions : int64 array or None
        The sample's rows in frame order; None when the frame has at most
        ``rows`` rows (check everything).
    games_sampled, games : int

    Examples
    --------
    >>> positions, k, g = sample_whole_games(frame, prepared, 20_000)  # doctest: +SKIP
    """
    starts, stops = whole_games(frame, prepared)
    games = int(starts.size)
    if prepared.n_rows <= rows or games == 0:
        return None, games, games
    wanted = max(1, min(games, round(rows * games / prepared.n_rows)))
    pick = np.unique(np.linspace(0, games - 1, wanted).round().astype(np.int64))
    positions = np.concatenate([np.arange(a, b, dtype=np.int64) for a, b in zip(starts[pick], stops[pick])])
    return positions, int(pick.size), games


def roundtrip_check(family, path: str | Path, frame: pl.DataFrame, *, prepared=None, expected=None,
                    check_rows: int = CHECK_ROWS, progress=None, cancel: CancelToken | None = None) -> RoundTrip:
    """Load a plug-in file, compare it with ``family`` bit for bit on every row, and run check-plugin.

    1. The file is applied to **every** row in one fast batch mode
       (:data:`COMPARE_MODE`, in chunks of whole episodes) and each reward
       compared bit for bit, each done exactly, with the library's.
    2. :func:`rewardlab.check_plugin` (contract and batch invariance, in
       every batch mode) runs on a deterministic sample of **whole games**
       spread evenly over the data, about ``check_rows`` rows (all rows
       when the data is no bigger).

    Parameters
    ----------
    family : rewardlab.families.RewardFamily
        What the file should reproduce.
    path : str or Path
        The plug-in file (e.g. written by :func:`rewardlab.export_plugin`).
    frame : polars.DataFrame
        The common frame to apply it to.
    prepared : PreparedFrame, optional
        ``family.prepare(frame)``, if already computed.
    expected : (float64 array ``[n_rows]``, bool array ``[n_rows]``), optional
        The library's rewards and dones, if already computed (default:
        ``family.evaluate(prepared)``).
    check_rows : int
        Rows of whole games for check-plugin.
    progress : callable, optional
        ``progress(fraction, message)``, called as the work advances
        (``fraction`` from 0 to 1).
    cancel : CancelToken, optional
        Checked between chunks and around check-plugin; raises
        :class:`~rewardlab.errors.ExportCancelled`.

    Returns
    -------
    RoundTrip

    Examples
    --------
    >>> rt = roundtrip_check(fam, "reward.py", frame)  # doctest: +SKIP
    >>> print(rt)  # doctest: +SKIP
    """
    say = _progress_callback(progress)
    token = _cancel_token(cancel)
    if isinstance(check_rows, bool) or not isinstance(check_rows, (int, np.integer)) or check_rows < 1:
        raise ParameterError("check_rows", "should be an integer >= 1", check_rows)
    frame = _base_columns(frame)
    prepared = family.prepare(frame) if prepared is None else prepared
    n = frame.height
    if expected is None:
        expected = family.evaluate(prepared)
    lib_reward, lib_done = expected
    if lib_reward.shape != (n,) or lib_done.shape != (n,):
        raise ParameterError("expected", f"should be two arrays of {n} rows (rewards, dones)",
                             (lib_reward.shape, lib_done.shape))
    plugin = load_plugin(path, name="exported")
    positions, sampled, games = sample_whole_games(frame, prepared, int(check_rows))
    checked = n if positions is None else int(positions.size)
    total = n + _CHECK_COST * checked or 1

    say(0.0, f"comparing the file with rewardlab bit for bit on {n:,} transitions")
    token.check(path, "the bit-for-bit comparison")
    with warnings.catch_warnings(record=True) as caught:  # one run: warnings cover every row
        warnings.simplefilter("always", RewardlabWarning)
        try:  # a cancel stops the run's child process at once
            applied = apply_plugins(frame, plugin, batch_mode=COMPARE_MODE, batch_size=COMPARE_BATCH_SIZE,
                                    cancel=lambda: token.cancelled, progress=False)
        except PluginRunCancelled:
            token.check(path, "the bit-for-bit comparison")
            raise
    found = tuple(dict.fromkeys(str(w.message) for w in caught if issubclass(w.category, RewardlabWarning)))
    file_reward = applied[S.reward_column(plugin.name)].cast(pl.Float64).to_numpy()
    file_done = applied[S.done_column(plugin.name)].to_numpy()
    say(n / total, f"compared {n:,} transitions bit for bit")
    token.check(path, "check-plugin")
    what = f"all {n:,} transitions" if positions is None else \
        f"{checked:,} transitions ({sampled:,} whole games of {games:,})"
    say(n / total, f"check-plugin in every batch mode on {what}")
    sample = frame if positions is None else frame[positions]
    try:  # a cancel stops check-plugin's child process at once
        report = check_plugin(sample, plugin, progress=False, cancel=lambda: token.cancelled)
    except PluginRunCancelled:
        token.check(path, "check-plugin")
        raise
    token.check(path, "check-plugin")
    say(1.0, "round trip checked")
    differing = file_reward.view(np.uint64) != lib_reward.view(np.uint64)
    with np.errstate(all="ignore"):
        diff = np.abs(file_reward - lib_reward)
    return RoundTrip(
        rows=int(n), rewards_differing=int(differing.sum()),
        dones_differing=int((file_done != lib_done).sum()),
        max_abs_difference=float(np.nanmax(diff[differing])) if differing.any() else 0.0,
        report=report, warnings=found,
        checked_rows=checked, checked_games=sampled, games=games)


@dataclasses.dataclass(frozen=True, eq=False)
class ExportResult:
    """What :meth:`RankingTuningSession.export` wrote and how the round trip went.

    Attributes
    ----------
    path : Path
        The file written.
    header : str
        Its header comment (family, parameters, constants, their origin and
        whether they were fitted for exactly these parameters).
    roundtrip : RoundTrip or None
        None when the check was not asked for.
    seconds : float
        Wall time of the export (check included).

    Examples
    --------
    >>> print(session.export("reward.py"))  # doctest: +SKIP
    """

    path: Path
    header: str
    roundtrip: RoundTrip | None
    seconds: float = math.nan

    @property
    def ok(self) -> bool:
        """True when the round trip was checked and passed."""
        return self.roundtrip is not None and self.roundtrip.ok

    def __str__(self) -> str:
        text = f"wrote {self.path}\n{self.header}"
        if self.roundtrip is not None:
            text += "\n" + str(self.roundtrip)
        else:
            text += "\nround trip: not checked (check=False)"
        return text


def _header_of(text: str) -> str:
    lines = []
    for line in text.splitlines():
        if not line.startswith("#"):
            break
        lines.append(line)
    return "\n".join(lines)


# --------------------------------------------------------------------------
# Ranking reward tuning
# --------------------------------------------------------------------------


@dataclasses.dataclass(frozen=True, eq=False)
class RankingResults:
    """What a ranking reward does on the data (see :class:`RankingTuningSession`).

    ``raw`` is the reward before normalization (``vector[rank]``, plus the
    points term when on), ``reward`` after (``(raw - mean) / std``), both
    per episode, i.e. at the end-of-game steps; every other step gets 0.

    Attributes
    ----------
    family : RewardFamily
        :class:`~rewardlab.families.Ranking` or
        :class:`~rewardlab.families.RankingPoints` with the session's parameters.
    raw, reward : float64 arrays ``[E]``
        Per episode (end-of-game step), in data order.
    raw_moments, reward_moments : Moments
        Over the end-of-game steps, before and after normalization.
    raw_moments_all, reward_moments_all : Moments
        Over every step (zeros off the end of the game).
    histogram_counts : int array ``[B]``
    histogram_edges : float array ``[B + 1]``
        Histogram of ``reward`` (end-of-game steps).
    zero_steps : int
        Steps whose reward is exactly 0.
    rank_counts, rank_probabilities : arrays ``[4]``
        The data's final-rank distribution.
    raw_mean_by_rank, mean_by_rank : float arrays ``[4]``
        Mean reward per final rank (NaN for an absent rank).
    expected_raw, expected_reward : float
        Expected per-game reward under the data's rank distribution
        (``sum_k p[k] * mean_by_rank[k]``), before and after normalization.

    Examples
    --------
    >>> r = RankingTuningSession("data/sample.tsv.gz").results  # doctest: +SKIP
    >>> r.reward_moments.mean, r.reward_moments.std  # doctest: +SKIP
    """

    family: object
    raw: np.ndarray
    reward: np.ndarray
    raw_moments: object
    reward_moments: object
    raw_moments_all: object
    reward_moments_all: object
    histogram_counts: np.ndarray
    histogram_edges: np.ndarray
    zero_steps: int
    rank_counts: np.ndarray
    rank_probabilities: np.ndarray
    raw_mean_by_rank: np.ndarray
    mean_by_rank: np.ndarray
    expected_raw: float
    expected_reward: float

    def by_rank_table(self, name: str = "reward") -> pl.DataFrame:
        """Mean reward per final rank as the frame :func:`rewardlab.plot_reward_by_rank` draws.

        Examples
        --------
        >>> results.by_rank_table().columns  # doctest: +SKIP
        ['reward', 'rank', 'mean']
        """
        return pl.DataFrame({"reward": [name] * S.NUM_SEATS, "rank": list(range(S.NUM_SEATS)),
                             "mean": self.mean_by_rank},
                            schema={"reward": pl.String, "rank": pl.Int64, "mean": pl.Float64})

    def __str__(self) -> str:
        b, a = self.raw_moments, self.reward_moments
        by_rank = ", ".join(f"{v:.4g}" for v in self.mean_by_rank)
        return (f"{self.family.describe()}\n"
                f"end-of-game steps ({b.count:,}): before mean {b.mean:.4g} std {b.std:.4g}; "
                f"after mean {a.mean:.4g} std {a.std:.4g}\n"
                f"mean reward by final rank: {by_rank}; expected reward {self.expected_reward:.4g}")


_HIST_BINS = 40


class RankingTuningSession(Session):
    """Tune an end-of-game ranking reward (optionally plus points) on a dataset.

    The dataset is read once: final ranks and scores
    (:class:`rewardlab.ranking.RankTable` and the families'
    :class:`~rewardlab.families.PreparedFrame`).  Every parameter change is
    then a gather over episodes plus a few reductions, not a pass over the
    transitions (see ``benchmarks/bench_sessions.py``).

    Parameters
    ----------
    data : polars.DataFrame, LazyFrame, or path(s)
        The common frame or a dataset path (annotation files or a converted
        dataset), complete episodes in episode order.
    preset : str
        Initial preset: any name of :func:`rewardlab.families.preset_names`
        ``("ranking")`` (ranking presets, and ranking + points presets).
    constants : {"data", "seed", "none"}
        Initial normalization constants: measured on the data (mean and
        population std over the end-of-game steps) and refitted after every
        change (``auto_constants``; set it False to freeze them), the seed's
        recipe (vector mean and sample std; pure ranking vectors only), or
        none (0, 1).

    Notes
    -----
    Constants fitted (on data or by the seed recipe) for other parameters
    than the current ones are *stale* (:attr:`constants_stale`):
    :meth:`export` refuses them unless ``keep_constants=True``, and the
    file's header says whether the constants were fitted for exactly the
    exported parameters.

    Examples
    --------
    >>> s = RankingTuningSession("data/sample.tsv.gz", preset="tenhou_tokujo_6dan")  # doctest: +SKIP
    >>> s.set_rank_value(3, -150.0)  # doctest: +SKIP
    >>> s.results.raw_moments.mean  # doctest: +SKIP
    >>> s.constants_from_data()  # doctest: +SKIP
    >>> s.export("my_reward.py").ok  # doctest: +SKIP
    True
    """

    vector = _Param("Raw reward by final rank: 4 numbers, entry 0 for first place.")
    points = _Param("Add the points term (score - offset) // divisor (the ranking + points family).")
    offset = _Param("Points term: subtracted from the final score (integer).")
    divisor = _Param("Points term: the score minus offset is floor-divided by it (integer >= 1).")
    mean = _Param("Normalization: subtracted from the raw reward (typing it marks the constants typed).")
    std = _Param("Normalization: divides the raw reward minus mean; > 0.")
    auto_constants = _Param("Refit mean and std on the data after every change (then after-normalization "
                            "statistics stay at mean 0, std 1).")
    _param_names = ("vector", "points", "offset", "divisor", "mean", "std", "auto_constants")
    _numeric = {"offset": "int", "divisor": "int", "mean": "float", "std": "float"}

    def __init__(self, data, *, preset: str = "tenhou_tokujo_6dan", constants: str = "data"):
        super().__init__()
        check_choice("constants", constants, ("data", "seed", "none"))
        check_choice("preset", preset, preset_names("ranking"))
        frame, source = _load_frame(data)
        self.frame = _base_columns(frame)
        prepared = prepare_frame(self.frame)
        if source is not None:
            prepared = dataclasses.replace(prepared, source=source)
        self.prepared = prepared
        self.table = RankTable.from_frame(self.frame)
        if not np.array_equal(self.table.rank, prepared.rank):  # defensive: two readers of one frame
            raise FrameError("the rank table and the prepared frame disagree on final ranks")
        self._probabilities = self.table.probabilities
        self._counts = self.table.counts
        self._params = {"mean": 0.0, "std": 1.0, "auto_constants": constants == "data",
                        **self._preset_params(preset)}
        self._family, _ = self._build(self._params, Provenance.default())
        if constants == "data":
            self._family = self._family.with_constants_from(self.prepared)
        elif constants == "seed":
            self._family = self._seeded(self._family)
        self._adopt_constants()
        self._refresh({"preset": preset})

    # -- presets -----------------------------------------------------------------
    @staticmethod
    def preset_names() -> list[str]:
        """Every preset the tuner offers (ranking, then ranking + points).

        Examples
        --------
        >>> "mleague" in RankingTuningSession.preset_names()
        True
        """
        return preset_names("ranking")

    @staticmethod
    def _preset_params(name: str) -> dict:
        fam = ranking_preset(name)
        if isinstance(fam, RankingPoints):
            return {"vector": fam.params.vector, "points": True, "offset": fam.params.offset,
                    "divisor": fam.params.divisor}
        return {"vector": fam.params.vector, "points": False, "offset": 25000, "divisor": 1000}

    @property
    def preset(self) -> str | None:
        """The preset the current parameters equal, or None (custom); assign a name to apply one.

        Examples
        --------
        >>> s.preset = "mleague"  # doctest: +SKIP
        """
        for name in self.preset_names():
            p = self._preset_params(name)
            if p["vector"] == self.vector and p["points"] == self.points and (
                    not p["points"] or (p["offset"], p["divisor"]) == (self.offset, self.divisor)):
                return name
        return None

    @preset.setter
    def preset(self, name: str) -> None:
        self.apply_preset(name)

    def apply_preset(self, name: str) -> None:
        """Set the vector (and points term) of a preset; the constants are kept unless auto.

        Examples
        --------
        >>> s.apply_preset("top_two")  # doctest: +SKIP
        """
        check_choice("preset", name, self.preset_names())
        self.update(**self._preset_params(name))

    def set_rank_value(self, rank: int, value: float) -> None:
        """Set one entry of the vector (``rank`` 0 = first place).

        Examples
        --------
        >>> s.set_rank_value(0, 100.0)  # doctest: +SKIP
        """
        if isinstance(rank, bool) or not isinstance(rank, (int, np.integer)) or not 0 <= rank < S.NUM_SEATS:
            raise ParameterError("rank", "should be an integer 0-3 (0 = first place)", rank)
        vector = list(self.vector)
        vector[int(rank)] = parse_number(f"vector[{int(rank)}]", value)
        self.update(vector=tuple(vector))

    # -- the family --------------------------------------------------------------
    @property
    def family(self):
        """The reward family with the current parameters and constants (what :meth:`export` writes)."""
        return self._family

    @property
    def provenance(self):
        """Where the current mean and std came from (:class:`rewardlab.families.Provenance`)."""
        return self._family.params.provenance

    @property
    def constants_stale(self) -> bool:
        """True when the constants were fitted (data or seed recipe) for other parameters than now.

        See :attr:`rewardlab.families.RewardFamily.constants_stale`; :meth:`export`
        refuses stale constants unless ``keep_constants=True``.
        """
        return self._family.constants_stale

    def export_blocker(self, *, keep_constants: bool = False) -> str | None:
        """Why :meth:`export` would refuse the current state, or None when it may export.

        Examples
        --------
        >>> s.set_rank_value(0, 100.0); s.auto_constants = False  # doctest: +SKIP
        >>> s.export_blocker()  # doctest: +SKIP
        '`constants` should be fitted for the exported parameters ...'
        """
        bad = self._nonfinite(self.results)
        if bad:
            return "the results are not finite: " + "; ".join(bad)
        try:  # the export's own rule, so the button and the file agree
            check_constants_fit(self._family, keep_constants=keep_constants)
        except ParameterError as exc:
            return str(exc)
        return None

    def _build(self, params: dict, provenance):
        if params["points"]:
            pp = RankingPointsParams(vector=params["vector"], offset=params["offset"], divisor=params["divisor"],
                                     mean=params["mean"], std=params["std"], provenance=provenance)
            return RankingPoints(pp), pp
        family = Ranking(RankingParams(vector=params["vector"], mean=params["mean"], std=params["std"],
                                       provenance=provenance))
        # Validate the points term even when it is off, with the family's own rules (its range alone).
        pp = RankingPointsParams(vector=(0.0,) * S.NUM_SEATS, offset=params["offset"], divisor=params["divisor"])
        return family, pp

    def _seeded(self, family):
        if not isinstance(family, Ranking):
            raise ParameterError("points", "should be off for the seed's recipe (the seed normalizes a "
                                 "pure rank vector by its mean and sample std)", True,
                                 hint="Use constants from data instead.")
        return family.with_seed_constants()

    def _adopt_constants(self) -> None:
        """Copy the family's constants into the parameters (their provenance says what they were fitted for)."""
        p = self._family.params
        self._params["mean"], self._params["std"] = p.mean, p.std

    def _validate(self, params: dict, changes: dict) -> dict:
        params["points"] = _check_bool("points", params["points"])
        typed = "mean" in changes or "std" in changes
        if typed and "auto_constants" not in changes:
            params["auto_constants"] = False  # typing a constant ends the automatic refit
        params["auto_constants"] = _check_bool("auto_constants", params["auto_constants"])
        provenance = Provenance.typed() if typed else self.provenance
        family, points_params = self._build(params, provenance)
        params["offset"], params["divisor"] = points_params.offset, points_params.divisor
        if params["auto_constants"]:
            family = family.with_constants_from(self.prepared)
        params["vector"] = family.params.vector
        self._family = family
        p = family.params
        params["mean"], params["std"] = p.mean, p.std
        return params

    # -- constants ------------------------------------------------------------------
    def constants_from_data(self) -> None:
        """Fit mean and std on the data: population mean and std of the raw reward over the end-of-game steps.

        Examples
        --------
        >>> s.constants_from_data()  # doctest: +SKIP
        >>> round(s.results.reward_moments.std, 12)  # doctest: +SKIP
        1.0
        """
        with self._change({"constants": "from data"}):
            self._family = self._family.with_constants_from(self.prepared)
            self._adopt_constants()

    def seed_constants(self) -> None:
        """The seed's recipe: mean and **sample** std of the 4-entry vector (std ~0.87 on complete games).

        Ends the automatic refit from data (``auto_constants``).

        Examples
        --------
        >>> s.seed_constants()  # doctest: +SKIP
        """
        with self._change({"constants": "seed recipe"}):
            self._family = self._seeded(self._family)
            self._adopt_constants()
            self._params["auto_constants"] = False

    def reset_constants(self) -> None:
        """No normalization: mean 0, std 1.

        Examples
        --------
        >>> s.reset_constants()  # doctest: +SKIP
        """
        with self._change({"constants": "none"}):
            self._family = self._family.with_constants(0.0, 1.0, provenance=Provenance.default())
            self._adopt_constants()
            self._params["auto_constants"] = False

    # -- recompute -------------------------------------------------------------------
    def _compute(self) -> RankingResults:
        family = self._family
        p = family.params
        raw = family.raw_values(self.prepared)
        reward = (raw - p.mean) / p.std  # the same IEEE operations as family.evaluate()
        table = self.table
        counts, edges = np.histogram(reward, bins=_HIST_BINS) if reward.size else (
            np.zeros(_HIST_BINS, np.int64), np.linspace(-1.0, 1.0, _HIST_BINS + 1))
        raw_by_rank = table.mean_by_rank(raw)
        by_rank = table.mean_by_rank(reward)
        expected_raw = expected_reward(np.nan_to_num(raw_by_rank, nan=0.0), self._probabilities) \
            if reward.size else math.nan
        return RankingResults(
            family=family, raw=raw, reward=reward,
            raw_moments=table.moments(raw, scope="end_of_game"),
            reward_moments=table.moments(reward, scope="end_of_game"),
            raw_moments_all=table.moments(raw, scope="all"),
            reward_moments_all=table.moments(reward, scope="all"),
            histogram_counts=counts, histogram_edges=edges,
            zero_steps=int(table.n_rows - reward.size + np.count_nonzero(reward == 0)),
            rank_counts=self._counts, rank_probabilities=self._probabilities,
            raw_mean_by_rank=raw_by_rank, mean_by_rank=by_rank,
            expected_raw=float(expected_raw), expected_reward=float((expected_raw - p.mean) / p.std),
        )

    def _nonfinite(self, r: RankingResults) -> list[str]:
        present = r.rank_counts > 0  # an absent rank's mean is NaN by definition
        return self._finite_problems([
            ("the raw reward", r.raw), ("the reward", r.reward),
            ("the mean of the raw reward (end-of-game steps)", r.raw_moments.mean),
            ("the std of the raw reward (end-of-game steps)", r.raw_moments.std),
            ("the mean of the reward (end-of-game steps)", r.reward_moments.mean),
            ("the std of the reward (end-of-game steps)", r.reward_moments.std),
            ("the mean of the raw reward (all steps)", r.raw_moments_all.mean),
            ("the std of the raw reward (all steps)", r.raw_moments_all.std),
            ("the mean of the reward (all steps)", r.reward_moments_all.mean),
            ("the std of the reward (all steps)", r.reward_moments_all.std),
            ("the mean raw reward by final rank", r.raw_mean_by_rank[present]),
            ("the mean reward by final rank", r.mean_by_rank[present]),
            ("the expected raw reward", r.expected_raw), ("the expected reward", r.expected_reward),
            ("the constants", (r.family.params.mean, r.family.params.std)),
        ])

    def step_rewards(self) -> np.ndarray:
        """The reward of every step (``[n_rows]``, zeros off the end of the game), for plots.

        Examples
        --------
        >>> s.step_rewards().shape  # doctest: +SKIP
        """
        return self.table.step_rewards(self.results.reward)

    # -- export ------------------------------------------------------------------------
    def export(self, path: str | Path, *, overwrite: bool = False, check: bool = True,
               source: str | None = None, keep_constants: bool = False, check_rows: int = CHECK_ROWS,
               progress=None, cancel: CancelToken | None = None) -> ExportResult:
        """Check the plug-in file round trip, then write it (nothing is written when anything fails).

        In order, each step before the next:

        1. the path is validated (empty, a folder, inside a file, existing
           without ``overwrite``: refused, naming the path as typed);
        2. the state is validated: no non-finite result, no constants fitted
           for other parameters unless ``keep_constants``;
        3. the text is rendered (every literal finite, every reward the file
           can give within range: :func:`rewardlab.export.render_plugin`);
        4. with ``check``, the text is written to a temporary file and checked
           by :func:`roundtrip_check` against what the session already holds
           (its prepared frame and its rewards): bit for bit on every row,
           check-plugin on whole games; a file that fails is not written
           (:class:`~rewardlab.errors.RoundTripError`);
        5. the file is written atomically.

        The session is read once at the start, so changing parameters while an
        export runs (e.g. in a widget's background thread) does not change
        what is exported.

        Parameters
        ----------
        path : str or Path
            The ``.py`` file to write.
        overwrite : bool
            Replace an existing file (otherwise
            :class:`~rewardlab.errors.OutputExistsError`, nothing written).
        check : bool
            Run the round trip before writing.
        source : str, optional
            A note for the file's header.
        keep_constants : bool
            Export constants fitted for other parameters as they are (the
            header says so).
        check_rows : int
            Rows of whole games check-plugin runs on (see :func:`roundtrip_check`).
        progress : callable, optional
            ``progress(fraction, message)`` as the work advances.
        cancel : CancelToken, optional
            Cancelling raises :class:`~rewardlab.errors.ExportCancelled` at the
            next check point; nothing is written.

        Returns
        -------
        ExportResult

        Raises
        ------
        ParameterError, OutputExistsError, RoundTripError, ExportCancelled, ExportWriteError
            Each before anything is written (ExportWriteError: the write itself
            failed; the target is untouched).

        Examples
        --------
        >>> result = s.export("my_reward.py")  # doctest: +SKIP
        >>> result.ok  # doctest: +SKIP
        True
        """
        t0 = time.perf_counter()
        check = _check_bool("check", check)
        overwrite = _check_bool("overwrite", overwrite)
        keep_constants = _check_bool("keep_constants", keep_constants)
        say = _progress_callback(progress)
        token = _cancel_token(cancel)
        target = export_target(path, overwrite=overwrite)
        shown = str(path)
        family, results = self._family, self.results  # one consistent state, whatever happens meanwhile
        bad = self._nonfinite(results)
        if bad:
            raise ParameterError("results", "should be finite to export", "; ".join(bad))
        text = render_plugin(family, source=source or "rewardlab RankingTuningSession",
                             keep_constants=keep_constants)
        roundtrip = None
        if check:
            expected = (self.table.step_rewards(results.reward), self.prepared.done(family.scope))
            with tempfile.TemporaryDirectory(prefix="rewardlab-export-") as tmp:
                trial = Path(tmp) / "exported.py"
                trial.write_text(text, encoding="utf-8")
                try:
                    roundtrip = roundtrip_check(family, trial, self.frame, prepared=self.prepared,
                                                expected=expected, check_rows=check_rows, progress=say,
                                                cancel=token)
                except ExportCancelled as exc:
                    raise ExportCancelled(shown, exc.stage) from None
            if not roundtrip.ok:
                raise RoundTripError(shown, roundtrip)
        token.check(shown, "writing")
        write_text(target, text, overwrite=overwrite, shown=shown)
        say(1.0, f"wrote {shown}")
        return ExportResult(path=target, header=_header_of(text), roundtrip=roundtrip,
                            seconds=time.perf_counter() - t0)


# --------------------------------------------------------------------------
# Epsilon-greedy schedules
# --------------------------------------------------------------------------

#: The schedule kinds: ReinforcementLearning.jl's explorer, and kanachan's EpsilonGreedy as meant / as it runs.
SCHEDULE_KINDS = ("linear", "exp", "kanachan_intended", "kanachan_actual")
_CURVE_POINTS = 1500
_MAX_HORIZON = 10**9


@dataclasses.dataclass(frozen=True, eq=False)
class EpsilonResults:
    """One epsilon schedule over a horizon (see :class:`EpsilonScheduleSession`).

    Attributes
    ----------
    kind : str
    schedule : ExplorerSchedule or KanachanEpsilonGreedy
    steps : int array ``[P]``
        Sampled step numbers (the marks and both sides of every jump included).
    epsilon : float array ``[P]``
    reference : tuple of (str, float array ``[P]``) or None
        For kanachan kinds, the other curve (intended vs actual) on the same steps.
    marks : dict of str to int
        Named steps: ``"warmup end"``, ``"decay end"``, ``"annealing end"``,
        ``"jump"``, ``"below threshold"``, within the horizon.
    summary : ScheduleSummary
        Steps until epsilon < threshold, expected random actions, ...
    snippets : dict of str to str
        ``"json"``, ``"yaml"`` (and ``"julia"`` for the explorer): the
        training program's parameters.
    """

    kind: str
    schedule: object
    steps: np.ndarray
    epsilon: np.ndarray
    reference: tuple | None
    marks: dict
    summary: object
    snippets: dict

    def __str__(self) -> str:
        return f"{self.kind}: {self.summary}"


class EpsilonScheduleSession(Session):
    """Explore an epsilon-greedy schedule: ReinforcementLearning.jl's explorer or kanachan's EpsilonGreedy.

    Parameters
    ----------
    kind : {"linear", "exp", "kanachan_intended", "kanachan_actual"}
        Keyword-only, like every parameter below; each is also an attribute.
    epsilon_init, epsilon_stable, warmup_steps, decay_steps
        :class:`rewardlab.schedules.ExplorerSchedule` (``linear`` / ``exp``).
    epsilon_first, epsilon_last, annealing_steps
        :class:`rewardlab.schedules.KanachanEpsilonGreedy`.
    increment : int
        kanachan: steps the caller reports per ``step()`` call.
    n_steps : int
        Horizon (actions) of the plot and the summary, 1 .. 10**9.
    threshold : float
        Steps-to-threshold: first step with epsilon < threshold, in [0, 1].

    Examples
    --------
    >>> s = EpsilonScheduleSession(kind="kanachan_actual", epsilon_first=1.0, epsilon_last=0.05,
    ...                            annealing_steps=1000, n_steps=10000)
    >>> s.results.summary.first_below is None
    True
    >>> s.increment = 1000
    >>> s.results.summary.first_below
    1000
    """

    kind = _Param("linear / exp (ReinforcementLearning.jl), kanachan_intended / kanachan_actual.")
    epsilon_init = _Param("ϵ_init (ReinforcementLearning.jl): epsilon during the warm-up.")
    epsilon_stable = _Param("ϵ_stable (ReinforcementLearning.jl): epsilon after the decay.")
    warmup_steps = _Param("Steps (counted from 1) that use ϵ_init.")
    decay_steps = _Param("Steps of the linear decay, or the exp decay's time constant.")
    epsilon_first = _Param("kanachan: epsilon at the start.")
    epsilon_last = _Param("kanachan: epsilon after the anneal (<= epsilon_first).")
    annealing_steps = _Param("kanachan: steps of the intended linear anneal.")
    increment = _Param("kanachan: steps the caller reports per step() call.")
    n_steps = _Param("Horizon: number of actions plotted and summarized.")
    threshold = _Param("Steps-to-threshold: first step with epsilon < threshold.")
    _param_names = ("kind", "epsilon_init", "epsilon_stable", "warmup_steps", "decay_steps",
                    "epsilon_first", "epsilon_last", "annealing_steps", "increment", "n_steps", "threshold")
    _numeric = {"epsilon_init": "float", "epsilon_stable": "float", "epsilon_first": "float",
                "epsilon_last": "float", "warmup_steps": "int", "decay_steps": "int", "annealing_steps": "int",
                "increment": "int", "n_steps": "int", "threshold": "float"}

    def __init__(self, *, kind: str = "linear", epsilon_init: float = 1.0, epsilon_stable: float = 0.05,
                 warmup_steps: int = 10_000, decay_steps: int = 500_000, epsilon_first: float = 1.0,
                 epsilon_last: float = 0.05, annealing_steps: int = 500_000, increment: int = 1,
                 n_steps: int = 1_000_000, threshold: float = 0.1):
        super().__init__()
        params = dict(kind=kind, epsilon_init=epsilon_init, epsilon_stable=epsilon_stable,
                      warmup_steps=warmup_steps, decay_steps=decay_steps, epsilon_first=epsilon_first,
                      epsilon_last=epsilon_last, annealing_steps=annealing_steps, increment=increment,
                      n_steps=n_steps, threshold=threshold)
        params = {k: parse_number(k, v, integer=self._numeric[k] == "int") if k in self._numeric else v
                  for k, v in params.items()}
        self._params = self._validate(params, params)
        self._refresh({"kind": kind})

    @property
    def schedule(self):
        """The current schedule object (ExplorerSchedule or KanachanEpsilonGreedy)."""
        return self._schedule

    def _validate(self, params: dict, changes: dict) -> dict:
        check_choice("kind", params["kind"], SCHEDULE_KINDS)
        for name in ("warmup_steps", "decay_steps", "annealing_steps", "increment", "n_steps"):
            value = params[name]
            if isinstance(value, float) and value.is_integer():
                params[name] = int(value)
        explorer = ExplorerSchedule(kind=params["kind"] if params["kind"] in ("linear", "exp") else "linear",
                                    epsilon_init=params["epsilon_init"], epsilon_stable=params["epsilon_stable"],
                                    warmup_steps=params["warmup_steps"], decay_steps=params["decay_steps"])
        kanachan = KanachanEpsilonGreedy(epsilon_first=params["epsilon_first"],
                                         epsilon_last=params["epsilon_last"],
                                         annealing_steps=params["annealing_steps"])
        params["increment"] = check_int("increment", params["increment"], low=1, high=_MAX_HORIZON)
        params["n_steps"] = check_int("n_steps", params["n_steps"], low=1, high=_MAX_HORIZON)
        params["threshold"] = check_in_range("threshold", params["threshold"], 0.0, 1.0)
        for name in ("epsilon_init", "epsilon_stable", "warmup_steps", "decay_steps"):
            params[name] = getattr(explorer, name)
        for name in ("epsilon_first", "epsilon_last", "annealing_steps"):
            params[name] = getattr(kanachan, name)
        self._schedule = explorer if params["kind"] in ("linear", "exp") else kanachan
        return params

    def _curve_fn(self, kind: str):
        s, inc = self._schedule, self._params["increment"]
        if kind in ("linear", "exp"):
            return s.epsilon
        if kind == "kanachan_intended":
            return lambda steps: s.intended(steps, increment=inc)
        return lambda steps: s.actual(steps, increment=inc)

    def _compute(self) -> EpsilonResults:
        p = self._params
        kind, schedule = p["kind"], self._schedule
        first = schedule.first_step
        last = first + p["n_steps"] - 1
        summary = schedule.summary(p["n_steps"], threshold=p["threshold"]) if kind in ("linear", "exp") \
            else schedule.summary(p["n_steps"], threshold=p["threshold"], actual=kind == "kanachan_actual",
                                  increment=p["increment"])
        marks: dict[str, int] = {}
        if kind in ("linear", "exp"):
            marks["warmup end"] = p["warmup_steps"]
            if kind == "linear":
                marks["decay end"] = p["warmup_steps"] + p["decay_steps"]
        else:
            marks["annealing end"] = p["annealing_steps"]
            if p["increment"] >= p["annealing_steps"] > 0:
                marks["jump"] = p["increment"]
        if summary.first_below is not None:
            marks["below threshold"] = summary.first_below
        marks = {k: int(v) for k, v in marks.items() if first <= v <= last}
        base = np.unique(np.linspace(first, last, min(_CURVE_POINTS, p["n_steps"])).round().astype(np.int64))
        extra = np.array([m + d for m in marks.values() for d in (-1, 0)], dtype=np.int64)
        steps = np.unique(np.concatenate([base, extra[(extra >= first) & (extra <= last)]]))
        epsilon = self._curve_fn(kind)(steps)
        reference = None
        if kind.startswith("kanachan"):
            other = "kanachan_actual" if kind == "kanachan_intended" else "kanachan_intended"
            reference = (other, self._curve_fn(other)(steps))
        snippets = {"json": to_json(schedule), "yaml": to_yaml(schedule)}
        if kind in ("linear", "exp"):
            snippets["julia"] = schedule.julia()
        return EpsilonResults(kind=kind, schedule=schedule, steps=steps, epsilon=epsilon, reference=reference,
                              marks=marks, summary=summary, snippets=snippets)

    def _nonfinite(self, r: EpsilonResults) -> list[str]:
        m = r.summary
        return self._finite_problems([
            ("epsilon", r.epsilon), ("the other curve", r.reference[1] if r.reference else ()),
            ("the expected random actions", m.expected_random_actions), ("the mean epsilon", m.mean_epsilon),
            ("the final epsilon", m.final_epsilon)])

    def export(self, path: str | Path, *, overwrite: bool = False) -> Path:
        """Write the parameter snippet: JSON for ``.json``, YAML for ``.yaml`` / ``.yml`` (atomic write).

        Examples
        --------
        >>> EpsilonScheduleSession().export("explorer.yaml")  # doctest: +SKIP
        PosixPath('explorer.yaml')
        """
        overwrite = _check_bool("overwrite", overwrite)
        target = export_target(path, overwrite=overwrite)
        fmt = {".json": "json", ".yaml": "yaml", ".yml": "yaml"}.get(target.suffix.lower())
        if fmt is None:
            raise ParameterError("path", "should end in .json, .yaml or .yml", str(path))
        write_text(target, self.results.snippets[fmt].rstrip("\n") + "\n", overwrite=overwrite, shown=path)
        return target


# --------------------------------------------------------------------------
# Normalization
# --------------------------------------------------------------------------


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
        :func:`rewardlab.normalizers.normalized_rewards`: ``raw``,
        ``constants`` (per-step scopes), ``gymnasium``, ``sb3``, ``sb3_clipped``.
    summary : polars.DataFrame
        :func:`rewardlab.normalizers.normalization_summary` of the replays.
    note : str or None
        Why the constants are not applied step by step (``episode_return``).
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

    @property
    def fraction_clipped(self) -> float:
        """Fraction of steps SB3's clipping saturates."""
        return float(self.replays["sb3_clipped"].mean() or 0.0) if self.replays.height else 0.0


class NormalizationSession(Session):
    """Where normalization constants come from and what they, and running normalizers, do.

    Parameters
    ----------
    data : polars.DataFrame
        A frame with ``reward_<name>`` / ``done_<name>`` columns (e.g. from
        :func:`rewardlab.apply_plugins`); the full frame, so the
        end-of-round / end-of-game scopes work.
    reward : str, optional
        The reward name (default: the first reward column).
    scope : str
        One of :data:`rewardlab.stats.SCOPES`.
    gamma, epsilon, clip_reward : float
        The running normalizers' parameters (Gymnasium's and SB3's defaults).

    Examples
    --------
    >>> s = NormalizationSession(frame, reward="rank_top", scope="end_of_game")  # doctest: +SKIP
    >>> s.results.constants.std  # doctest: +SKIP
    >>> s.scope = "all"  # doctest: +SKIP
    """

    reward = _Param("The reward name (a reward_<name> column of the frame).")
    scope = _Param("Which values the constants come from: all, nonzero, end_of_round, end_of_game, "
                   "episode_return.")
    gamma = _Param("Discount of the running normalizers' returns, in [0, 1].")
    epsilon = _Param("Added to the running variance, > 0.")
    clip_reward = _Param("SB3's clipping bound of the normalized reward, > 0.")
    _param_names = ("reward", "scope", "gamma", "epsilon", "clip_reward")
    _numeric = {"gamma": "float", "epsilon": "float", "clip_reward": "float"}

    def __init__(self, data, *, reward: str | None = None, scope: str = "end_of_game", gamma: float = 0.99,
                 epsilon: float = 1e-8, clip_reward: float = 10.0):
        super().__init__()
        frame, _ = _load_frame(data)
        self.frame = frame
        names = S.reward_names(frame)
        if not names:
            raise FrameError("the frame has no reward_<name> columns",
                             hint="Apply plug-ins first (rewardlab.apply_plugins)")
        self.rewards = tuple(names)
        params = dict(reward=names[0] if reward is None else reward, scope=scope, gamma=gamma,
                      epsilon=epsilon, clip_reward=clip_reward)
        params = {k: parse_number(k, v) if k in self._numeric else v for k, v in params.items()}
        self._params = self._validate(params, params)
        self._refresh({"reward": params["reward"]})

    def _validate(self, params: dict, changes: dict) -> dict:
        check_choice("reward", params["reward"], self.rewards)
        check_choice("scope", params["scope"], SCOPES)
        params["gamma"] = check_in_range("gamma", params["gamma"], 0.0, 1.0)
        params["epsilon"] = check_positive("epsilon", params["epsilon"])
        params["clip_reward"] = check_positive("clip_reward", params["clip_reward"])
        return params

    def _compute(self) -> NormalizationResults:
        p = self._params
        name, scope = p["reward"], p["scope"]
        try:
            constants, error = normalization_constants(self.frame, name, scope=scope), None
        except RewardlabError as exc:  # no values, a constant reward, or statistics that overflow
            constants, error = None, str(exc)
        before = reward_stats(self.frame, name, scope=scope)
        after = reward_stats(self.frame, name, scope=scope, constants=constants) if constants else None
        per_step = constants is not None and scope != "episode_return"
        note = None
        if constants is not None and not per_step:
            note = ("constants over episode returns scale returns, not single steps; the replays show "
                    "the raw reward and the running normalizers only")
        replays = normalized_rewards(self.frame, name, constants=constants if per_step else None,
                                     gamma=p["gamma"], epsilon=p["epsilon"], clip_reward=p["clip_reward"])
        return NormalizationResults(reward=name, scope=scope, constants=constants, constants_error=error,
                                    before=before, after=after, replays=replays,
                                    summary=normalization_summary(replays), note=note)

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


# --------------------------------------------------------------------------
# Comparing candidate plug-ins
# --------------------------------------------------------------------------


@dataclasses.dataclass(frozen=True, eq=False)
class ComparisonResults:
    """Chosen candidates side by side (see :class:`ComparisonSession`).

    Attributes
    ----------
    chosen : tuple of str
    step_rewards : dict of str to float array ``[n_rows]``
        Each chosen candidate's step rewards (for overlaid distributions).
    returns : polars.DataFrame
        Episode returns (:func:`rewardlab.compare.episode_return_table`) of the chosen.
    comparison : RewardComparison or None
        Correlations and EPIC-style distances (None with fewer than two chosen).
    matrix : polars.DataFrame or None
        ``comparison.matrix(metric)``.
    pair_returns : polars.DataFrame
        Episode returns of the pair ``(a, b)`` (keys, then columns ``a`` and ``b``).
    disagreements : polars.DataFrame or None
        :func:`rewardlab.compare.most_disagreeing_episodes` for the pair ``(a, b)``
        (None when ``a == b``).
    """

    chosen: tuple
    metric: str
    a: str
    b: str
    step_rewards: dict
    returns: pl.DataFrame
    comparison: object
    matrix: pl.DataFrame | None
    pair_returns: pl.DataFrame
    disagreements: pl.DataFrame | None


class ComparisonSession(Session):
    """Compare candidate reward plug-ins on one dataset.

    Parameters
    ----------
    data : polars.DataFrame, LazyFrame, or path(s)
        The common frame; reward columns already in it are candidates too.
    plugins : sequence of paths or Plugin objects
        Applied once each (:func:`rewardlab.apply_plugins`).
    batch_mode, batch_size
        How the plug-ins are applied (see :func:`rewardlab.apply_plugins`).
    chosen : sequence of str, optional
        Candidates shown (default: all).
    metric : {"pearson", "spearman", "epic"}
        The matrix shown.
    k : int
        How many most-disagreeing episodes to list.

    Examples
    --------
    >>> s = ComparisonSession(frame, ["data/plugins/rank_top.py", "data/plugins/raw_points.py"])  # doctest: +SKIP
    >>> s.results.comparison.pairs()  # doctest: +SKIP
    >>> s.add_plugin("my_reward.py")  # doctest: +SKIP
    """

    chosen = _Param("The candidates shown (names of reward columns).")
    a = _Param("First candidate of the pair whose disagreements are listed.")
    b = _Param("Second candidate of the pair.")
    metric = _Param("Matrix shown: pearson, spearman, or epic (distance).")
    k = _Param("How many most-disagreeing episodes to list (>= 1).")
    _param_names = ("chosen", "a", "b", "metric", "k")
    _numeric = {"k": "int"}

    def __init__(self, data, plugins=(), *, batch_mode: str = "episodes", batch_size: int | None = None,
                 chosen=None, metric: str = "spearman", k: int = 10):
        super().__init__()
        frame, _ = _load_frame(data)
        self.frame = frame
        self.batch_mode = batch_mode
        self.batch_size = batch_size
        if isinstance(plugins, (str, Path)) or not hasattr(plugins, "__iter__"):
            plugins = [plugins]
        plugins = list(plugins)
        if plugins:
            self.frame = self._apply(self.frame, plugins)
        self._refresh_candidates()
        names = self.candidates
        if not names:
            raise FrameError("there is nothing to compare: no plug-ins and no reward_<name> columns",
                             hint="Pass plug-in files")
        chosen = tuple(names) if chosen is None else tuple(chosen) if not isinstance(chosen, str) else (chosen,)
        pair = [c for c in chosen if c in names][:2] or list(names[:2])
        params = dict(chosen=chosen, a=pair[0], b=pair[1] if len(pair) > 1 else pair[0], metric=metric, k=k)
        self._params = self._validate(params, params)
        self._refresh({"chosen": chosen})

    def _apply(self, frame: pl.DataFrame, plugins: list) -> pl.DataFrame:
        return apply_plugins(frame, plugins, batch_mode=self.batch_mode, batch_size=self.batch_size)

    def _refresh_candidates(self) -> None:
        self.candidates = tuple(S.reward_names(self.frame))
        self._returns = episode_return_table(self.frame, list(self.candidates)) if self.candidates \
            else pl.DataFrame()

    def add_plugin(self, plugin, *, name: str | None = None, choose: bool = True) -> str:
        """Load (if a path), apply and add a candidate; returns its name.

        Parameters
        ----------
        plugin : path or Plugin
            E.g. a user's own plug-in file.
        name : str, optional
            Its name (default: from the file name).
        choose : bool
            Add it to the chosen candidates.

        Examples
        --------
        >>> s.add_plugin("my_reward.py")  # doctest: +SKIP
        'my_reward'
        """
        loaded = plugin if isinstance(plugin, Plugin) else load_plugin(plugin, name=name)
        if loaded.name in self.candidates:
            raise ParameterError("name", "should differ from the candidates already loaded ("
                                 + ", ".join(self.candidates) + ")", loaded.name,
                                 hint="Pass name= to load it under another name.")
        self.frame = self._apply(self.frame, [loaded])
        self._refresh_candidates()
        chosen = self.chosen + ((loaded.name,) if _check_bool("choose", choose) else ())
        self.update(chosen=chosen)
        return loaded.name

    def _validate(self, params: dict, changes: dict) -> dict:
        chosen = params["chosen"]
        if isinstance(chosen, str) or not hasattr(chosen, "__iter__"):
            raise ParameterError("chosen", "should be a sequence of candidate names", chosen)
        chosen = tuple(dict.fromkeys(chosen))
        if not chosen:
            raise ParameterError("chosen", "should name at least one candidate", chosen)
        for c in chosen:
            check_choice("chosen", c, self.candidates)
        params["chosen"] = chosen
        check_choice("a", params["a"], self.candidates)
        check_choice("b", params["b"], self.candidates)
        if params["a"] == params["b"] and len(self.candidates) > 1:
            raise ParameterError("b", "should differ from `a`", params["b"])
        check_choice("metric", params["metric"], ("pearson", "spearman", "epic"))
        k = params["k"]
        if isinstance(k, float) and k.is_integer():
            k = int(k)
        if isinstance(k, bool) or not isinstance(k, (int, np.integer)) or k < 1:
            raise ParameterError("k", "should be a positive integer", params["k"])
        params["k"] = int(k)
        return params

    def _compute(self) -> ComparisonResults:
        p = self._params
        chosen = p["chosen"]
        keys = [c for c in ("episode", S.GAME_ID, S.SEAT) if c in self._returns.columns]
        returns = self._returns.select(*keys, *chosen)
        comparison = compare_rewards(returns) if len(chosen) >= 2 else None
        pair = self._returns.select(*keys, *dict.fromkeys((p["a"], p["b"])))
        disagreements = most_disagreeing_episodes(pair, p["a"], p["b"], k=p["k"]) if p["a"] != p["b"] else None
        steps = {c: self.frame[S.reward_column(c)].to_numpy() for c in chosen}
        return ComparisonResults(chosen=chosen, metric=p["metric"], a=p["a"], b=p["b"], step_rewards=steps,
                                 returns=returns, comparison=comparison,
                                 matrix=None if comparison is None else comparison.matrix(p["metric"]),
                                 pair_returns=pair, disagreements=disagreements)
