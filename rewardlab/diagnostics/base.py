"""What every diagnostic shares: findings, candidates, the context they read, and the registry.

A *diagnostic* looks at candidate rewards on recorded data and returns
:class:`Finding` objects: a verdict, one line of words, the numbers behind it
and the rows and episodes that triggered it (so a front can open them in the
episode view).  Diagnostics register themselves (:func:`register_diagnostic`);
:func:`rewardlab.diagnostics.diagnose` builds one :class:`DiagnosisContext` (the
frame, its spec, each candidate's rewards and reward terms, the options) and
runs every registered diagnostic that applies.  Adding one is a module with a
``run(context) -> list[Finding]`` and one :func:`register_diagnostic` call; the
built-in ones are listed in :data:`BUILTIN_DIAGNOSTICS` and imported on the
registry's first use.

Verdicts (:data:`VERDICTS`):

``"fail"``
    Something is wrong with the candidate or the data (``rewardlab diagnose``
    exits with status 1).
``"warn"``
    Probably a mistake; read the evidence.
``"pass"``
    The diagnostic ran and found nothing.
``"info"``
    A measurement with no judgement (a distance, a term table's row).
``"n/a"``
    The diagnostic cannot run on this candidate or data; the summary says why.

Examples
--------
>>> f = Finding("constant", "flat", "fail", "the reward is 0.0 on every step",
...             evidence={"value": 0.0}, rows=(0, 1))
>>> f.failed, f.rows
(True, (0, 1))
>>> findings_table([f]).select("diagnostic", "candidate", "verdict").row(0)
('constant', 'flat', 'fail')
"""

from __future__ import annotations

import importlib
import json
import math
from dataclasses import dataclass, field
from typing import Callable, Mapping

import numpy as np
import polars as pl

from rewardlab.core.errors import (ParameterError, check_choice, check_finite, check_in_range, check_int,
                                   check_positive)
from rewardlab.core.spec import FrameSpec

__all__ = [
    "VERDICTS", "MAX_ROWS", "Finding", "Candidate", "DiagnosisOptions", "DiagnosisContext", "Diagnostic",
    "register_diagnostic", "unregister_diagnostic", "registered_diagnostics", "get_diagnostic",
    "findings_table", "BUILTIN_DIAGNOSTICS", "FINDINGS_SCHEMA", "worst_verdict",
]

#: The verdicts, from worst to best (``n/a`` last: nothing was judged).
VERDICTS = ("fail", "warn", "pass", "info", "n/a")

#: At most this many rows (and episodes) are kept in a finding; the evidence counts them all.
MAX_ROWS = 1000


def _plain(value):
    """``value`` as a JSON-able Python scalar (NumPy scalars unwrapped, non-finite floats kept as floats)."""
    if isinstance(value, (np.bool_, bool)):
        return bool(value)
    if isinstance(value, (np.integer, int)):
        return int(value)
    if isinstance(value, (np.floating, float)):
        return float(value)
    if isinstance(value, str) or value is None:
        return value
    if isinstance(value, (list, tuple)):
        return [_plain(v) for v in value]
    raise ParameterError("Finding.evidence", "should map names to numbers, strings, booleans or lists of them",
                         type(value).__name__)


@dataclass(frozen=True)
class Finding:
    """One diagnostic's verdict on one candidate (or a pair: ``other``).

    Parameters
    ----------
    diagnostic : str
        The registered diagnostic's name (``"shaping"``, ``"epic"``, ``"trap.constant"``, ...).
    candidate : str
        The candidate's name.
    verdict : str
        One of :data:`VERDICTS`.
    summary : str
        One line in words: what was found, and for ``fail`` / ``warn`` what to do.
    evidence : mapping
        The numbers behind the verdict (``{name: number, string, bool or list}``), JSON-able.
    rows : tuple of int
        Frame rows that trigger the finding (at most :data:`MAX_ROWS`; count them in ``evidence``).
    episodes : tuple of int
        Episode numbers (0, 1, ... in frame order, :attr:`DiagnosisContext.episode_of_row`)
        to open in the episode view, worst first (at most :data:`MAX_ROWS`).
    other : str or None
        The second candidate of a pair diagnostic (the base of ``shaping``, the other side of a distance).

    Examples
    --------
    >>> Finding("epic", "a", "info", "EPIC distance 0.12", other="b").other
    'b'
    """

    diagnostic: str
    candidate: str
    verdict: str
    summary: str
    evidence: Mapping = field(default_factory=dict)
    rows: tuple = ()
    episodes: tuple = ()
    other: str | None = None

    def __post_init__(self):
        check_choice("Finding.verdict", self.verdict, VERDICTS)
        object.__setattr__(self, "evidence", {str(k): _plain(v) for k, v in dict(self.evidence).items()})
        object.__setattr__(self, "rows", tuple(int(r) for r in self.rows[:MAX_ROWS]))
        object.__setattr__(self, "episodes", tuple(int(e) for e in self.episodes[:MAX_ROWS]))

    @property
    def failed(self) -> bool:
        """True for a ``fail`` verdict."""
        return self.verdict == "fail"


#: The columns of :func:`findings_table`.
FINDINGS_SCHEMA = {
    "diagnostic": pl.String, "candidate": pl.String, "other": pl.String, "verdict": pl.String,
    "summary": pl.String, "evidence": pl.String, "rows": pl.List(pl.Int64), "episodes": pl.List(pl.Int64),
}


def findings_table(findings) -> pl.DataFrame:
    """The findings as a table, one row each, in order (``evidence`` as a JSON object's text).

    Examples
    --------
    >>> t = findings_table([Finding("x", "a", "pass", "fine", evidence={"n": 3})])
    >>> t["evidence"][0]
    '{"n": 3}'
    """
    rows = [{"diagnostic": f.diagnostic, "candidate": f.candidate, "other": f.other, "verdict": f.verdict,
             "summary": f.summary, "evidence": json.dumps(f.evidence, allow_nan=True),
             "rows": list(f.rows), "episodes": list(f.episodes)} for f in findings]
    return pl.DataFrame(rows, schema=FINDINGS_SCHEMA)


def worst_verdict(findings) -> str | None:
    """The worst verdict among ``findings`` (:data:`VERDICTS` order); None when there are none.

    Examples
    --------
    >>> worst_verdict([Finding("x", "a", "pass", ""), Finding("y", "a", "warn", "")])
    'warn'
    """
    verdicts = [f.verdict for f in findings]
    return min(verdicts, key=VERDICTS.index) if verdicts else None


@dataclass(frozen=True, eq=False)
class Candidate:
    """One reward under diagnosis, evaluated on every row of the context's frame.

    Parameters
    ----------
    name : str
        Its name (a plug-in's name, or a reward column's name without ``reward_``: ``"recorded"``).
    rewards : float64 array of shape ``[N]``
        The rewards on the frame's rows, exactly as given (a float16 or float32 reward widened to float64).
    dtype : str
        The dtype the plug-in returned (``"float16"``, ``"float32"``, ``"float64"``).
    plugin : Plugin, path or None
        The plug-in as the user gave it (a loaded :class:`~rewardlab.plugins.Plugin` or the file's
        path), so a diagnostic may run it again with :func:`rewardlab.plugins.apply_plugins` (on probes or
        on recombined transitions; pass ``replace=True`` on a frame that already holds its column);
        None for a reward read from a column.
    terms : mapping of str to float64 array of shape ``[N]``
        The named reward terms the plug-in reported beside its reward (empty when it reports none).
    dones : bool array of shape ``[N]`` or None
        The done flags the plug-in gave (None for a column).

    Examples
    --------
    >>> Candidate("recorded", np.zeros(3)).is_plugin
    False
    """

    name: str
    rewards: np.ndarray
    dtype: str = "float64"
    plugin: object = None
    terms: Mapping = field(default_factory=dict)
    dones: np.ndarray | None = None

    @property
    def is_plugin(self) -> bool:
        """True when the candidate is a plug-in (it can be run again)."""
        return self.plugin is not None


@dataclass(frozen=True)
class DiagnosisOptions:
    """The settings every diagnostic reads (one home for their validation).

    Parameters
    ----------
    gamma : float
        The discount of the trainer, in ``(0, 1]`` (shaping, telescoping, the discount trap).
    basis : str
        The potential's feature basis for the shaping test: ``"auto"`` (``"tabular"`` when every state
        column is integer or Boolean, else ``"linear"``) or a registered basis
        (:func:`rewardlab.analysis.potential_bases.registered_bases`).
    tolerance : float
        Relative residual (to the reward's scale) under which a difference counts as shaping.
    expect_shaping : bool
        When True, a candidate whose difference from the base is not potential-based shaping *fails*
        (it was meant to be shaping); otherwise that verdict is ``info``.
    epic_states, epic_pairs : int
        EPIC's sample: how many recorded states ``s`` are canonicalized, and how many recorded
        ``(a, s')`` pairs the expectations average over.
    epic_repeats : int
        Independent samples drawn to report EPIC's sampling error.
    bootstrap : int
        Bootstrap resamples (rank-vector sensitivity, intervals).
    normalizer : str or None
        The reward normalizer the trainer uses (``"gymnasium"``: ``NormalizeReward``; ``"sb3"``:
        ``VecNormalize``), for the clip trap; None skips it.
    clip : float
        The normalizer's reward clip (``VecNormalize(clip_reward=...)``; 10.0 is its default).
    seed : int
        Seed of every sample drawn.
    isolate : bool or None
        Run plug-ins in a child process (see :func:`rewardlab.plugins.apply_plugins`).
    timeout : float or None
        Seconds before an isolated plug-in run is stopped.

    Examples
    --------
    >>> DiagnosisOptions(gamma=0.9).gamma
    0.9
    >>> DiagnosisOptions(gamma=1.5)
    Traceback (most recent call last):
    ...
    rewardlab.core.errors.ParameterError: `gamma` should be in (0, 1]. Received 1.5.
    """

    gamma: float = 0.99
    basis: str = "auto"
    tolerance: float = 1e-6
    expect_shaping: bool = False
    epic_states: int = 512
    epic_pairs: int = 512
    epic_repeats: int = 5
    bootstrap: int = 200
    normalizer: str | None = None
    clip: float = 10.0
    seed: int = 0
    isolate: bool | None = None
    timeout: float | None = None

    def __post_init__(self):
        gamma = check_finite("gamma", self.gamma)
        if not 0.0 < gamma <= 1.0:
            raise ParameterError("gamma", "should be in (0, 1]", self.gamma)
        object.__setattr__(self, "gamma", float(gamma))
        if not isinstance(self.basis, str):
            raise ParameterError("basis", "should be 'auto' or a registered basis name", self.basis)
        object.__setattr__(self, "tolerance", float(check_in_range("tolerance", self.tolerance, 0.0, 1.0)))
        if not isinstance(self.expect_shaping, bool):
            raise ParameterError("expect_shaping", "should be True or False", self.expect_shaping)
        for name in ("epic_states", "epic_pairs", "epic_repeats", "bootstrap"):
            object.__setattr__(self, name, check_int(name, getattr(self, name), low=1))
        if self.normalizer is not None:
            check_choice("normalizer", self.normalizer, ("gymnasium", "sb3"))
        object.__setattr__(self, "clip", check_positive("clip", self.clip))
        object.__setattr__(self, "seed", check_int("seed", self.seed, low=0))
        if self.timeout is not None and not (isinstance(self.timeout, (int, float)) and self.timeout > 0
                                             and math.isfinite(self.timeout)):
            raise ParameterError("timeout", "should be None or a number of seconds > 0", self.timeout)


@dataclass(frozen=True, eq=False)
class DiagnosisContext:
    """What a diagnostic reads: the data, its spec and contract, the candidates, the base, the options.

    Parameters
    ----------
    frame : polars.DataFrame
        The frame the candidates were evaluated on (episode order, whole episodes).
    spec : FrameSpec
        Its spec (states, final states, flags).
    contract : Contract
        The plug-in contract of the frame (``"steps"`` or ``"kanachan"``, ...).
    candidates : tuple of Candidate
        The candidates, in the order given.
    base : Candidate or None
        What candidates are compared with (the recorded reward where the data has one, unless given);
        None when there is none.
    options : DiagnosisOptions
    episode_of_row : int64 array of shape ``[N]``
        The episode number (0, 1, ... in frame order) of each row.
    episode_starts : int64 array of shape ``[E + 1]``
        Row where each episode starts, then ``N``.
    terminated, truncated : bool arrays of shape ``[N]``
        The episode-end flags of each row (both False but on an episode's last row; a last row with
        neither flag, as in kanachan's ``end_of_game``, counts as terminated).

    Examples
    --------
    >>> ctx = DiagnosisContext.build(frame, [Candidate("a", r)], spec=spec)  # doctest: +SKIP
    >>> ctx.n_episodes  # doctest: +SKIP
    12
    """

    frame: pl.DataFrame
    spec: FrameSpec
    contract: object
    candidates: tuple
    base: Candidate | None
    options: DiagnosisOptions
    episode_of_row: np.ndarray
    episode_starts: np.ndarray
    terminated: np.ndarray
    truncated: np.ndarray

    @property
    def n(self) -> int:
        """Rows of the frame."""
        return int(self.episode_of_row.shape[0])

    @property
    def n_episodes(self) -> int:
        """Episodes of the frame."""
        return int(self.episode_starts.shape[0] - 1)

    @property
    def episode_end(self) -> np.ndarray:
        """True on each episode's last row."""
        end = np.zeros(self.n, dtype=bool)
        end[self.episode_starts[1:] - 1] = True
        return end

    def candidate(self, name: str) -> Candidate:
        """The candidate (or base) called ``name``."""
        for c in (*self.candidates, *((self.base,) if self.base is not None else ())):
            if c.name == name:
                return c
        raise ParameterError("candidate", "should name one of the candidates: "
                             + ", ".join(c.name for c in self.candidates), name)

    def episodes_of(self, rows) -> tuple:
        """The distinct episodes of ``rows``, in the order first met."""
        return tuple(dict.fromkeys(int(e) for e in self.episode_of_row[np.asarray(rows, dtype=np.int64)]))


@dataclass(frozen=True)
class Diagnostic:
    """One registered diagnostic.

    Parameters
    ----------
    name : str
        Its name in findings, on the command line (``--only NAME``) and in the docs.
    title : str
        A few words for tables and the report (``"potential-based shaping"``).
    run : callable
        ``run(context: DiagnosisContext) -> list[Finding]``; it returns ``n/a`` findings (with the
        reason) rather than raising when it cannot apply.
    doc : str
        Its definition, its assumptions and how to read it (the report and ``docs/diagnostics.md``).
    order : int
        Where it runs and is listed (lower first).

    Examples
    --------
    >>> d = Diagnostic("noop", "nothing", lambda ctx: [], doc="Finds nothing.")
    >>> d.name
    'noop'
    """

    name: str
    title: str
    run: Callable
    doc: str = ""
    order: int = 100


#: The diagnostics rewardlab ships: name -> the module that registers it when imported
#: (on the registry's first use), in this order.
BUILTIN_DIAGNOSTICS: dict[str, str] = {
    "terms": "rewardlab.diagnostics.terms",
    "shaping": "rewardlab.diagnostics.shaping",
    "epic": "rewardlab.diagnostics.epic",
    "traps": "rewardlab.diagnostics.traps",
    "ranks": "rewardlab.diagnostics.ranks",
}

_DIAGNOSTICS: dict[str, Diagnostic] = {}
_IMPORTED = False


def _import_builtins() -> None:
    global _IMPORTED
    if _IMPORTED:
        return
    _IMPORTED = True
    for module in BUILTIN_DIAGNOSTICS.values():
        importlib.import_module(module)


def register_diagnostic(diagnostic: Diagnostic, *, replace: bool = False) -> Diagnostic:
    """Add ``diagnostic`` to the registry (``replace`` an existing one of its name).

    Examples
    --------
    >>> d = register_diagnostic(Diagnostic("noop_doc", "nothing", lambda ctx: []))
    >>> "noop_doc" in registered_diagnostics()
    True
    >>> _ = unregister_diagnostic("noop_doc")
    """
    if not isinstance(diagnostic, Diagnostic):
        raise ParameterError("diagnostic", "should be a rewardlab.diagnostics.Diagnostic",
                             type(diagnostic).__name__)
    if diagnostic.name in _DIAGNOSTICS and not replace:
        raise ParameterError("diagnostic", "is already registered (pass replace=True to replace it)",
                             diagnostic.name)
    _DIAGNOSTICS[diagnostic.name] = diagnostic
    return diagnostic


def unregister_diagnostic(name: str) -> Diagnostic:
    """Remove and return the diagnostic registered as ``name``."""
    _import_builtins()
    if name not in _DIAGNOSTICS:
        raise ParameterError("name", "should name a registered diagnostic: " + ", ".join(_DIAGNOSTICS), name)
    return _DIAGNOSTICS.pop(name)


def registered_diagnostics() -> dict[str, Diagnostic]:
    """The registered diagnostics by name, in their ``order``."""
    _import_builtins()
    return dict(sorted(_DIAGNOSTICS.items(), key=lambda item: item[1].order))


def get_diagnostic(name: str) -> Diagnostic:
    """The diagnostic registered as ``name``."""
    found = registered_diagnostics()
    if name not in found:
        raise ParameterError("diagnostic", "should name a registered diagnostic: " + ", ".join(found), name)
    return found[name]
