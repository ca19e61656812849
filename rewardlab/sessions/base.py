"""What every session shares: the parameter machinery and the helpers the tuners use.

:class:`Session` (parameters, validation, recompute, observers) and
:class:`Param` (a parameter attribute); :func:`parse_number` (numbers typed
as text); :class:`CancelToken`, :func:`cancel_token` and
:func:`progress_callback` (long work that reports progress and can stop);
:func:`locate` (the sample data from a notebook); :func:`load_frame`,
:func:`base_columns` and :func:`check_bool` (the sessions' inputs).  The
overview of the sessions is in :mod:`rewardlab.sessions`.

Examples
--------
>>> parse_number("offset", "25000", integer=True)
25000
"""

from __future__ import annotations

import contextlib
import math
import re
import threading
import time
from pathlib import Path
from typing import Callable, ClassVar

import numpy as np
import polars as pl

from rewardlab.core import columns
from rewardlab.core.spec import keep_spec
from rewardlab.dataset import as_lazy
from rewardlab.errors import ExportCancelled, ParameterError, RewardlabError

__all__ = [
    "locate",
    "parse_number",
    "CancelToken",
    "cancel_token",
    "progress_callback",
    "Param",
    "Session",
    "check_bool",
    "load_frame",
    "base_columns",
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


def cancel_token(cancel) -> CancelToken:
    """The token long work checks: ``cancel`` itself, or a fresh one when None.

    Examples
    --------
    >>> cancel_token(None).cancelled
    False
    >>> cancel_token("stop")
    Traceback (most recent call last):
    rewardlab.errors.ParameterError: `cancel` should be a rewardlab.sessions.CancelToken or None. Received 'stop'.
    """
    if cancel is None:
        return CancelToken()
    if not isinstance(cancel, CancelToken):
        raise ParameterError("cancel", "should be a rewardlab.sessions.CancelToken or None", cancel)
    return cancel


def progress_callback(progress) -> Callable[[float, str], None]:
    """``progress(fraction, message)`` itself, or a callable that does nothing when None.

    Examples
    --------
    >>> progress_callback(None)(0.5, "half way")
    >>> progress_callback(print)(1.0, "done")
    1.0 done
    """
    if progress is None:
        return lambda fraction, message: None
    if not callable(progress):
        raise ParameterError("progress", "should be a callable progress(fraction, message) or None", progress)
    return progress


# --------------------------------------------------------------------------
# The session base: parameters, validation, recompute, observers
# --------------------------------------------------------------------------


class Param:
    """A session parameter: reading returns its value, assigning calls :meth:`Session.update`.

    Examples
    --------
    >>> from rewardlab.sessions import EpsilonScheduleSession
    >>> EpsilonScheduleSession.n_steps.__doc__
    'Horizon: number of actions plotted and summarized.'
    """

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
    >>> from rewardlab.sessions import EpsilonScheduleSession
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
        >>> from rewardlab.sessions import EpsilonScheduleSession
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
        >>> from rewardlab.sessions import EpsilonScheduleSession
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
        >>> from rewardlab.sessions import EpsilonScheduleSession
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
        >>> from rewardlab.sessions import EpsilonScheduleSession
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
        >>> from rewardlab.sessions import EpsilonScheduleSession
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


def check_bool(name: str, value) -> bool:
    """``value`` as a bool when it is one (numpy's included); otherwise a ParameterError naming ``name``.

    Examples
    --------
    >>> check_bool("overwrite", True)
    True
    >>> check_bool("overwrite", "yes")
    Traceback (most recent call last):
    rewardlab.errors.ParameterError: `overwrite` should be True or False. Received 'yes'.
    """
    if not isinstance(value, (bool, np.bool_)):
        raise ParameterError(name, "should be True or False", value)
    return bool(value)


def load_frame(data) -> tuple[pl.DataFrame, str | None]:
    """An eager frame and, when ``data`` was a path, its description.

    The spec ``data`` carries (:func:`rewardlab.core.spec.attached`) stays
    attached to the frame returned.

    Examples
    --------
    >>> load_frame(pl.DataFrame({"x": [1]}))[1] is None
    True
    """
    if isinstance(data, pl.DataFrame):
        return data, None
    if isinstance(data, pl.LazyFrame):
        return keep_spec(data, data.collect()), None
    if isinstance(data, (str, Path)) or (isinstance(data, (list, tuple)) and data
                                          and all(isinstance(p, (str, Path)) for p in data)):
        paths = [data] if isinstance(data, (str, Path)) else list(data)
        lazy = as_lazy(data)
        return keep_spec(lazy, lazy.collect()), ", ".join(str(p) for p in paths)
    raise ParameterError("data", "should be a polars DataFrame or LazyFrame, or path(s) to a dataset",
                         type(data).__name__)


def base_columns(frame: pl.DataFrame) -> pl.DataFrame:
    """The frame without reward / done columns (so a re-applied plug-in cannot clash).

    Examples
    --------
    >>> base_columns(pl.DataFrame({"x": [1], "reward_a": [0.0], "done_a": [True]})).columns
    ['x']
    """
    keep = [c for c in frame.columns if not c.startswith((columns.REWARD_PREFIX, columns.DONE_PREFIX))]
    return frame.select(keep) if len(keep) != len(frame.columns) else frame
