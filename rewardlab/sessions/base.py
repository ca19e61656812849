"""What every session shares: parameters, validation, recompute, observers, pins, undo and saved state.

:class:`Session` and :class:`Param` (a parameter attribute); what sessions
read (data, numbers typed as text, cancel tokens) is in
:mod:`rewardlab.sessions.inputs`, the state file in
:mod:`rewardlab.sessions.state`.  The overview of the sessions is in
:mod:`rewardlab.sessions`.

Examples
--------
>>> from rewardlab.sessions import EpsilonScheduleSession
>>> s = EpsilonScheduleSession(kind="linear", epsilon_stable=0.1, warmup_steps=0, decay_steps=1000,
...                            n_steps=5000, threshold=0.5)
>>> s.try_update(epsilon_stable=2)
False
"""

from __future__ import annotations

import contextlib
import math
import threading
import time
import warnings
from pathlib import Path
from typing import Callable, ClassVar

import numpy as np
import polars as pl

from rewardlab._version import __version__
from rewardlab.core.errors import (
    FrameError, ParameterError, RewardlabError, RewardlabWarning, check_choice,
)
from rewardlab.core.files import check_input
from rewardlab.core.fronts import text_of
from rewardlab.sessions.inputs import LoadedData, check_bool, load_frame, parse_number
from rewardlab.sessions.state import Pinned, SavedState, pin_label_rule, read_state, state_error, write_state

__all__ = [
    "Param",
    "Session",
    "Pinned",
    "HISTORY_LIMIT",
    "saved_data",
    "check_fingerprint",
]


# --------------------------------------------------------------------------
# The session base: parameters, validation, recompute, observers
# --------------------------------------------------------------------------

#: Parameter changes :meth:`Session.undo` can go back (the oldest are forgotten first).
HISTORY_LIMIT = 100


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
        :meth:`attempt` (a :class:`~rewardlab.core.fronts.Text`, so a widget
        words its remedy its own way); cleared by the next success.
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
    #: The kind written in state files and pinned records (``"ranking"``, ...); set by each tuner.
    state_kind: ClassVar[str] = ""
    #: Every tuner by its state kind (filled as the subclasses are defined), for :meth:`load_state`.
    kinds: ClassVar[dict[str, type]] = {}

    def __init_subclass__(cls, **kwargs):
        super().__init_subclass__(**kwargs)
        if cls.__dict__.get("state_kind"):
            Session.kinds[cls.state_kind] = cls

    def __init__(self) -> None:
        self.lock = threading.RLock()
        self._observers: list[Callable] = []
        self._params: dict = {}
        self.results = None
        self.last_error: str | None = None
        self.version = 0
        self.recompute_seconds = math.nan
        self._undo: list = []
        self._redo: list = []
        self._pins: dict[str, Pinned] = {}
        self._pinned_cache: dict[str, tuple] = {}
        self.pins_version = 0
        self.data_path: str | None = None
        self.data_paths: tuple[str, ...] | None = None
        self.state_path: Path | None = None
        self._state_snapshot: dict | None = None

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
            self.last_error = text_of(exc)  # its remedy terms kept, for a widget's words
            self._notify()
            return False
        return True

    @contextlib.contextmanager
    def _change(self, changes: dict, *, record: bool = True):
        """Apply the state changes made in the ``with`` block, recompute, and keep them only if all is well.

        The results are computed before anything is kept; an error in the
        block or in the recompute, or a non-finite statistic in the new
        results (:meth:`_nonfinite`), restores the previous state and
        raises (a ParameterError naming ``changes`` for a non-finite
        statistic).  On success the results are replaced, the previous
        state goes on the undo history (with ``record``, when the state
        changed; the redo history is cleared) and the observers are told.
        """
        with self.lock:  # one change at a time (a widget's background work may change the session too)
            saved = dict(self.__dict__)
            saved["_params"] = dict(self._params)
            before = self._snapshot() if record and self.results is not None else None
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
            if before is not None and not self._same_state(before, self._snapshot()):
                self._undo.append(before)
                del self._undo[:-HISTORY_LIMIT]
                self._redo.clear()
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

    # -- undo / redo -------------------------------------------------------------
    @property
    def can_undo(self) -> bool:
        """True when :meth:`undo` has a change to take back."""
        return bool(self._undo)

    @property
    def can_redo(self) -> bool:
        """True when :meth:`redo` has an undone change to apply again."""
        return bool(self._redo)

    def undo(self) -> bool:
        """Go back to the state before the last parameter change; False when there is none.

        Every accepted change (a parameter, a preset, constants from data...)
        is remembered, up to :data:`HISTORY_LIMIT`; a refused change is not.
        The observers are told as for any change.

        Examples
        --------
        >>> from rewardlab.sessions import EpsilonScheduleSession
        >>> s = EpsilonScheduleSession(n_steps=1000)
        >>> s.n_steps = 2000
        >>> s.undo(), s.n_steps
        (True, 1000)
        >>> s.redo(), s.n_steps
        (True, 2000)
        """
        return self._travel(self._undo, self._redo, "undo")

    def redo(self) -> bool:
        """Apply again the change :meth:`undo` took back; False when there is none (a new change clears it).

        Examples
        --------
        >>> from rewardlab.sessions import EpsilonScheduleSession
        >>> EpsilonScheduleSession().redo()
        False
        """
        return self._travel(self._redo, self._undo, "redo")

    def _travel(self, source: list, target: list, what: str) -> bool:
        if not source:
            return False
        current = self._snapshot()
        with self._change({what: "previous state"}, record=False):
            self._restore(source[-1])
        source.pop()
        target.append(current)
        return True

    def _snapshot(self) -> dict:
        """What undo restores: the parameters (subclasses add what else defines the candidate)."""
        return {"params": dict(self._params)}

    def _restore(self, snapshot: dict) -> None:
        self._params = dict(snapshot["params"])

    @staticmethod
    def _same_state(a: dict, b: dict) -> bool:
        return a == b

    # -- pinned candidates -----------------------------------------------------------
    @property
    def pinned(self) -> tuple[Pinned, ...]:
        """The pinned candidates, oldest first.

        Examples
        --------
        >>> from rewardlab.sessions import EpsilonScheduleSession
        >>> s = EpsilonScheduleSession()
        >>> _ = s.pin("first"); [p.label for p in s.pinned]
        ['first']
        """
        return tuple(self._pins.values())

    def pin(self, label: str | None = None) -> Pinned:
        """Keep the current candidate (parameters, constants and their origin, statistics) under ``label``.

        Parameters
        ----------
        label : str, optional
            Default: ``"pin 1"``, ``"pin 2"``, ... (the first free one).
            Must differ from the other pins and from ``"live"`` and
            ``"statistic"`` (the comparison table's columns).

        Returns
        -------
        Pinned

        Examples
        --------
        >>> from rewardlab.sessions import EpsilonScheduleSession
        >>> s = EpsilonScheduleSession()
        >>> s.pin().label
        'pin 1'
        >>> s.pin("pin 1")
        Traceback (most recent call last):
        rewardlab.core.errors.ParameterError: `label` should differ from the pinned candidates' labels (pin 1). Received 'pin 1'.
        """
        if label is None:
            n = 1
            while f"pin {n}" in self._pins:
                n += 1
            label = f"pin {n}"
        self._check_label(label)
        record = Pinned(label=label, kind=self.state_kind, parameters=self._state_parameters(),
                        constants=self._state_constants(), summary=self._summary(self.results))
        self._pins[label] = record
        self._pins_changed()
        return record

    def _check_label(self, label) -> None:
        problem = pin_label_rule(label, self._pins)
        if problem is not None:
            raise ParameterError("label", problem, label)

    def unpin(self, label: str) -> Pinned:
        """Forget the pinned candidate ``label``; returns it.

        Examples
        --------
        >>> from rewardlab.sessions import EpsilonScheduleSession
        >>> s = EpsilonScheduleSession()
        >>> s.unpin("best")
        Traceback (most recent call last):
        rewardlab.core.errors.ParameterError: `label` should be one of the pinned candidates (none are pinned). Received 'best'.
        """
        if label not in self._pins:
            names = ", ".join(map(repr, self._pins)) or "none are pinned"
            raise ParameterError("label", f"should be one of the pinned candidates ({names})", label)
        record = self._pins.pop(label)
        self._pins_changed()
        return record

    def clear_pins(self) -> None:
        """Forget every pinned candidate.

        Examples
        --------
        >>> from rewardlab.sessions import EpsilonScheduleSession
        >>> s = EpsilonScheduleSession(); _ = s.pin(); s.clear_pins(); s.pinned
        ()
        """
        self._pins.clear()
        self._pins_changed()

    def _pins_changed(self) -> None:
        self.pins_version += 1
        self._notify()

    def pinned_results(self, label: str):
        """The results a pinned candidate gives on the session's data, recomputed (the live state is untouched).

        What the widgets overlay on the live plots (e.g. the pinned reward
        distributions).  Computed on a shallow copy of the session, so a
        background export or another reader never sees the pinned state.

        Examples
        --------
        >>> from rewardlab.sessions import EpsilonScheduleSession
        >>> s = EpsilonScheduleSession(n_steps=100); _ = s.pin("short"); s.n_steps = 200
        >>> int(s.pinned_results("short").steps[-1]), int(s.results.steps[-1])
        (100, 200)
        """
        if label not in self._pins:
            names = ", ".join(map(repr, self._pins)) or "none are pinned"
            raise ParameterError("label", f"should be one of the pinned candidates ({names})", label)
        pin = self._pins[label]
        data = getattr(self, "frame", None)  # what the results depend on besides the pin (a board adds columns)
        cached = self._pinned_cache.get(label)
        if cached is not None and cached[0] is pin and cached[1] is data:
            return cached[2]
        clone = object.__new__(type(self))
        clone.__dict__.update(self.__dict__)
        clone._params, clone._observers = dict(self._params), []
        clone._apply_state(dict(pin.parameters), pin.constants)
        with np.errstate(over="ignore", invalid="ignore"):
            results = clone._compute()
        self._pinned_cache[label] = (pin, data, results)  # redraws of the live candidate reuse it
        return results

    def live_summary(self) -> dict:
        """The statistics of the live candidate, as :meth:`pin` records them (statistic -> number or None).

        Examples
        --------
        >>> from rewardlab.sessions import EpsilonScheduleSession
        >>> EpsilonScheduleSession(n_steps=10).live_summary()["steps"]
        10
        """
        return dict(Pinned(label="live", kind=self.state_kind, parameters={}, constants=None,
                           summary=self._summary(self.results)).summary)

    def compare_pinned(self, labels=None) -> pl.DataFrame:
        """The pinned candidates' statistics beside the live one's: one row per statistic.

        Columns: ``statistic``, ``live``, then for each pin ``<label>`` and
        ``<label> - live`` (its value minus the live value).  A statistic a
        candidate does not have (e.g. an absent rank, another reward) is
        null.  What the statistics are is each tuner's (its ``_summary``).

        Parameters
        ----------
        labels : sequence of str, optional
            The pins to show (default: all, oldest first).

        Returns
        -------
        polars.DataFrame

        Examples
        --------
        >>> from rewardlab.sessions import EpsilonScheduleSession
        >>> s = EpsilonScheduleSession(n_steps=1000); _ = s.pin("short"); s.n_steps = 2000
        >>> s.compare_pinned().filter(pl.col("statistic") == "steps").row(0)
        ('steps', 2000.0, 1000.0, -1000.0)
        """
        if labels is None:
            labels = list(self._pins)
        elif isinstance(labels, str):
            labels = [labels]
        pins = []
        for label in labels:
            if label not in self._pins:
                names = ", ".join(map(repr, self._pins)) or "none are pinned"
                raise ParameterError("labels", f"should name pinned candidates ({names})", label)
            pins.append(self._pins[label])
        live = self.live_summary()
        names = list(live)
        for p in pins:
            names += [k for k in p.summary if k not in names]
        data: dict = {"statistic": names, "live": [live.get(k) for k in names]}
        for p in pins:
            values = [p.summary.get(k) for k in names]
            data[p.label] = values
            data[f"{p.label} - live"] = [None if v is None or w is None else v - w
                                         for v, w in zip(values, data["live"])]
        schema = {"statistic": pl.String, **{k: pl.Float64 for k in data if k != "statistic"}}
        return pl.DataFrame(data, schema=schema)

    # -- saved state --------------------------------------------------------------------
    def data_fingerprint(self) -> str | None:
        """A fingerprint of the columns the session reads (None when it reads no data).

        Examples
        --------
        >>> from rewardlab.sessions import EpsilonScheduleSession
        >>> EpsilonScheduleSession().data_fingerprint() is None
        True
        """
        return None

    def _data_rows(self) -> int | None:
        return None

    def saved_state(self) -> SavedState:
        """What :meth:`save_state` writes, as a record.

        Examples
        --------
        >>> from rewardlab.sessions import EpsilonScheduleSession
        >>> EpsilonScheduleSession(n_steps=10).saved_state().parameters["n_steps"]
        10
        """
        return SavedState(kind=self.state_kind, version=__version__, parameters=self._state_parameters(),
                          constants=self._state_constants(), pinned=self.pinned, data_path=self.data_path,
                          data_paths=self.data_paths,
                          fingerprint=self.data_fingerprint(), rows=self._data_rows(),
                          options=self._state_options())

    def save_state(self, path: str | Path, *, overwrite: bool = False) -> Path:
        """Save the parameters, constants and their origin, pinned candidates and the data's fingerprint.

        A small JSON file, written atomically; an existing file is replaced
        only with ``overwrite``.  :meth:`load_state` and :meth:`restore`
        read it back; a plug-in exported afterwards names it in its header.

        Raises
        ------
        ParameterError, OutputExistsError
            Before anything is written.

        Examples
        --------
        >>> s.save_state("tuner.state.json")  # doctest: +SKIP
        PosixPath('tuner.state.json')
        """
        target = write_state(self.saved_state(), path, overwrite=check_bool("overwrite", overwrite))
        self.state_path, self._state_snapshot = target, self._snapshot()
        return target

    @property
    def state_note(self) -> str | None:
        """The state file this session was saved to or loaded from, and whether it changed since; or None.

        What an exported plug-in's header says about its origin.

        Examples
        --------
        >>> from rewardlab.sessions import EpsilonScheduleSession
        >>> EpsilonScheduleSession().state_note is None
        True
        """
        if self.state_path is None:
            return None
        same = self._state_snapshot is not None and self._same_state(self._state_snapshot, self._snapshot())
        return str(self.state_path) + ("" if same else " (parameters changed since)")

    @classmethod
    def load_state(cls, path: str | Path, data=None, *, on_mismatch: str = "raise", **options) -> "Session":
        """A new session in the state saved in ``path`` (parameters, constants, pinned candidates).

        Parameters
        ----------
        path : str or Path
            A file written by :meth:`save_state`.
        data : DataFrame, LazyFrame or path(s), optional
            The data to tune on; default: the data path the file records
            (tuners that read no data take none).
        on_mismatch : {"raise", "warn"}
            When ``data``'s fingerprint differs from the file's:
            :class:`~rewardlab.core.errors.FrameError`, or a
            :class:`~rewardlab.core.errors.RewardlabWarning` and the state is
            applied anyway.
        **options
            Passed to the session's constructor (e.g. ``spec=``; a
            comparison's ``plugins=``: loading a state file runs no plug-in
            the call does not name, see
            :meth:`rewardlab.sessions.ComparisonSession.saved_plugins`).

        Raises
        ------
        DataFormatError
            The file is not a state file of this kind, or one of its values
            (the parameters, constants, a pinned candidate) breaks the
            session's rules (naming the file and the field).
        FrameError
            The data differs from the data the state was saved with.

        Examples
        --------
        >>> s = RankingTuningSession.load_state("tuner.state.json", "data/sample.tsv.gz")  # doctest: +SKIP
        """
        check_choice("on_mismatch", on_mismatch, ("raise", "warn"))
        state = read_state(path, kinds=tuple(Session.kinds))
        target = Session.kinds[state.kind]
        if cls is not Session and target is not cls:
            raise state_error(path, "kind", f"is {state.kind!r}; {cls.__name__} reads {cls.state_kind!r} "
                              f"(load it with {target.__name__}.load_state)")
        session = target._open_state(state, data, path, on_mismatch, **options)
        session._apply_saved(state, path, on_mismatch)
        session._undo.clear()
        session._redo.clear()
        return session

    def restore(self, path: str | Path, *, on_mismatch: str = "raise") -> None:
        """Put this session in the state saved in ``path`` (its pinned candidates replace the current ones).

        One change for :meth:`undo` (the pins are not part of the history).
        Errors as in :meth:`load_state`; nothing changes then.  No plug-in
        runs: a session restores parameters and pins on the data it holds.

        Examples
        --------
        >>> s.restore("tuner.state.json")  # doctest: +SKIP
        """
        check_choice("on_mismatch", on_mismatch, ("raise", "warn"))
        state = read_state(path)
        if state.kind != self.state_kind:
            raise state_error(path, "kind", f"is {state.kind!r}; this {type(self).__name__} reads "
                              f"{self.state_kind!r}")
        self._apply_saved(state, path, on_mismatch)

    @classmethod
    def _from_state(cls, state: SavedState, data, path, **options) -> "Session":
        """A fresh session on ``data`` (default: the path the state records), before the state is applied."""
        return cls(saved_data(state, data, path), **options)

    @classmethod
    def _open_state(cls, state: SavedState, data, path, on_mismatch: str, **options) -> "Session":
        """:meth:`_from_state`; a tuner that runs code to build itself (plug-ins) checks the data first."""
        return cls._from_state(state, data, path, **options)

    def _apply_saved(self, state: SavedState, path, on_mismatch: str) -> None:
        self._check_options(state, path)
        check_fingerprint(state, path, self.data_fingerprint(), self._data_rows(), on_mismatch=on_mismatch)
        checked = self._checked_pins(state, path)
        try:
            with self._change({"state": str(path)}):
                self._apply_state(dict(state.parameters), state.constants)
        except _REFUSED as exc:
            raise _refusal(path, "", exc, state.parameters, state.constants) from None
        self._pins = {p.label: p for p in state.pinned}
        self._pinned_cache.update(checked)
        self.state_path, self._state_snapshot = Path(path), self._snapshot()
        self._pins_changed()

    def _checked_pins(self, state: SavedState, path) -> dict:
        """Each pinned candidate of ``state`` through the session's own rules: its parameters and constants
        validated, its results computed and finite (as for a live change); the results, for
        :meth:`pinned_results`."""
        data = getattr(self, "frame", None)
        checked = {}
        for k, pin in enumerate(state.pinned):
            clone = object.__new__(type(self))
            clone.__dict__.update(self.__dict__)
            clone._params, clone._observers = dict(self._params), []
            try:
                clone._apply_state(dict(pin.parameters), pin.constants)
                with np.errstate(over="ignore", invalid="ignore"):
                    results = clone._compute()
                bad = clone._nonfinite(results)
                if bad:
                    raise ParameterError("parameters", "should keep every statistic finite, but with them "
                                         + "; ".join(bad[:3]), dict(pin.parameters))
            except _REFUSED as exc:
                raise _refusal(path, f"pinned[{k}].", exc, pin.parameters, pin.constants) from None
            checked[pin.label] = (pin, data, results)
        return checked

    # state hooks (subclasses refine them)
    def _state_parameters(self) -> dict:
        """The parameters as JSON data (what a pin and a state file record)."""
        return dict(self._params)

    def _state_constants(self) -> dict | None:
        """Constants and their provenance as JSON data, for tuners that have them."""
        return None

    def _state_options(self) -> dict:
        """What the session was built with besides its parameters, as JSON data."""
        return {}

    def _check_options(self, state: SavedState, path) -> None:
        """Refuse (naming the file and the field) ``options`` of the wrong shape; they are not applied here."""

    def _apply_state(self, parameters: dict, constants) -> None:
        """Set the saved parameters (inside a change: validated, recomputed, kept only if all is well)."""
        unknown = [k for k in parameters if k not in self._param_names]
        if unknown:
            raise ParameterError("parameter", "should be one of " + ", ".join(self._param_names), unknown[0])
        values = {k: tuple(v) if isinstance(v, (list, tuple)) else v for k, v in parameters.items()}
        self._params = self._validate({**self._params, **values}, values)

    def _summary(self, results) -> dict:
        """The statistics a pin records and :meth:`compare_pinned` shows (statistic -> number)."""
        return {}

    # subclasses
    def _validate(self, params: dict, changes: dict) -> dict:  # pragma: no cover - abstract
        raise NotImplementedError

    def _compute(self):  # pragma: no cover - abstract
        raise NotImplementedError

    def _nonfinite(self, results) -> list[str]:
        """What in ``results`` is not finite (an empty list when all is well); subclasses list their numbers."""
        return []


#: What applying a state file's values may raise besides a rewardlab error (values of the wrong shape).
_REFUSED = (RewardlabError, KeyError, TypeError, ValueError, ArithmeticError, IndexError, AttributeError)


def _refusal(path, prefix: str, exc: BaseException, parameters, constants):
    """The state-file error for a value the session refused: the field is ``prefix`` + where the value is."""
    if isinstance(exc, ParameterError):
        name = exc.name
        field = f"parameters.{name}" if name in parameters else \
            f"constants.{name}" if constants is not None and name in constants else \
            "constants.provenance" if name == "provenance" and constants is not None else \
            "constants" if name == "constants" else "parameters"
        return state_error(path, prefix + field, f"is refused: {exc}")
    if isinstance(exc, RewardlabError):
        return state_error(path, prefix + "parameters", f"is refused: {exc}")
    return state_error(path, prefix + "parameters", f"is incomplete or of the wrong type ({type(exc).__name__}: "
                       f"{str(exc)[:200]})")


def check_fingerprint(state: SavedState, path, found: str | None, rows: int | None, *, on_mismatch: str,
                      expected: str | None = None, what: str = "the data") -> None:
    """Compare the data's fingerprint ``found`` with the one the state file ``path`` records.

    ``expected``: the recorded fingerprint (default: ``state.fingerprint``).
    A difference raises a FrameError (``on_mismatch="raise"``) or warns
    (:class:`~rewardlab.core.errors.RewardlabWarning`, ``"warn"``); both
    name the file and the two fingerprints.

    Examples
    --------
    >>> from rewardlab.sessions.state import read_state
    >>> check_fingerprint(read_state("s.json"), "s.json", "blake2b-128:00", 10, on_mismatch="raise")  # doctest: +SKIP
    Traceback (most recent call last):
    rewardlab.core.errors.FrameError: the data differs from the data the state file s.json was saved with: ...
    """
    expected = state.fingerprint if expected is None else expected
    if expected == found:
        return
    saved = f"{expected}" + (f" ({state.data_path}" if state.data_path else " (in memory")
    saved += f", {state.rows:,} rows)" if state.rows is not None else ")"
    now = f"{found}" + (f" ({rows:,} rows)" if rows is not None else "")
    text = (f"{what} differs from the data the state file {path} was saved with: fingerprint "
            f"expected {saved}, found {now}")
    if on_mismatch == "raise":
        raise FrameError(text, hint="Load the state with the data it was saved with, or pass on_mismatch='warn' "
                         "to apply its parameters to this data anyway")
    warnings.warn(f"{text}; the state is applied anyway", RewardlabWarning, stacklevel=4)


def saved_data(state: SavedState, data, path):
    """``data``, or when None the data the state file records, read (a ParameterError when it records none).

    The recorded paths are read here (:class:`~rewardlab.sessions.inputs.LoadedData`,
    which a session takes as it takes the paths), so a recorded path that
    cannot be read (missing, not a file, no access, not data) is a
    DataFormatError naming the state file and the field.

    Examples
    --------
    >>> saved_data(None, "a.tsv", "s.json")
    'a.tsv'
    """
    if data is not None:
        return data
    if not state.data_paths:
        raise ParameterError("data", f"should be given: the state file {path} records no data path (the data "
                             "was in memory)", None)
    hint = "Pass the data to load_state, or fix the field."
    for k, recorded in enumerate(state.data_paths):
        try:
            check_input(recorded, folder=True)
        except (RewardlabError, ValueError) as exc:  # ValueError: a path the system cannot name
            raise state_error(path, f"data.paths[{k}]", f"names data that cannot be read: {exc}",
                              hint=hint) from None
    paths = list(state.data_paths) if len(state.data_paths) > 1 else state.data_paths[0]
    try:
        frame, source = load_frame(paths)
    except RewardlabError as exc:
        raise state_error(path, "data.paths", f"names data that does not load: {exc}", hint=hint) from None
    return LoadedData(frame, source, tuple(state.data_paths))
