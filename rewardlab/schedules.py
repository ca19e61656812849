"""Epsilon-greedy schedules: ReinforcementLearning.jl's explorer and kanachan's EpsilonGreedy.

Two training programs, two schedules, one module style: parameters in frozen
dataclasses validated on construction (with doc and widget hints in the
field metadata), epsilon vectorized over a NumPy array of steps, summary
figures, and the parameters as a JSON or YAML snippet for the training
program's configuration.

ReinforcementLearning.jl (:class:`ExplorerSchedule`)
----------------------------------------------------
``EpsilonGreedyExplorer{kind}(; ϵ_stable, ϵ_init=1.0, warmup_steps=0,
decay_steps=0)``; its step counter starts at 1 and grows by one per action.

* ``linear``: ``ϵ_init`` while ``step <= warmup_steps``; ``ϵ_stable`` once
  ``step >= warmup_steps + decay_steps``; in between
  ``ϵ_stable + (warmup_steps + decay_steps - step) / decay_steps * (ϵ_init - ϵ_stable)``.
* ``exp``: ``ϵ_init`` while ``step <= warmup_steps``; then
  ``ϵ_stable + (ϵ_init - ϵ_stable) * exp(-(step - warmup_steps) / decay_steps)``
  (with ``decay_steps = 0`` that is ``ϵ_stable`` at once, as in Julia where
  ``n / 0 = Inf``).

kanachan (:class:`KanachanEpsilonGreedy`)
-----------------------------------------
``EpsilonGreedy(epsilon_first, epsilon_last, annealing_steps)``; the caller
calls ``step(k)`` to report ``k`` more steps, and epsilon is
``epsilon_first * (A - s) / A + epsilon_last * s / A`` with ``A =
annealing_steps`` and ``s`` its internal step.

* **Intended** (:meth:`KanachanEpsilonGreedy.intended`): ``s`` is the number
  of steps reported so far, capped at ``A``: a linear anneal from
  ``epsilon_first`` to ``epsilon_last`` over ``A`` steps.
* **Actual** (:meth:`KanachanEpsilonGreedy.actual`): ``step(k)`` only ever
  sets ``s = A``, and only when ``s + k >= A``; it never adds ``k``.  Since
  ``s`` starts at 0, epsilon stays at ``epsilon_first`` until **one single
  call** reports ``k >= A`` steps, and then jumps to ``epsilon_last`` for
  good.  A caller that reports steps in increments smaller than ``A`` (e.g.
  ``step(1)`` per action or ``step(batch_size)`` per batch) never leaves
  ``epsilon_first``.  Both methods take the caller's ``increment`` (the ``k``
  of each call, one call every ``k`` steps); :meth:`actual_after_calls` takes
  an arbitrary sequence of increments.

Steps are numbered as each program counts them: 1, 2, ... for
ReinforcementLearning.jl (the explorer's ``step`` when an action is chosen),
0, 1, ... for kanachan (steps already reported when an action is chosen).
The *expected number of random actions* over ``N`` steps is the sum of epsilon
over them (a random action may happen to equal the greedy one).

A horizon (``n_steps`` of the summaries and of ``steps``) sizes the work: the
summaries evaluate epsilon at every step.  It is at most :data:`MAX_HORIZON`
(10**9 steps, about half a minute), on every front: the library
(:func:`check_horizon`), ``rewardlab schedule --steps`` and the epsilon tuner.
The schedules' own parameters (warm-up, decay and annealing steps, the
caller's increment) cost nothing and may be up to 2**52 (exact in float64).

Examples
--------
>>> import numpy as np
>>> from rewardlab.schedules import ExplorerSchedule, KanachanEpsilonGreedy
>>> s = ExplorerSchedule(kind="linear", epsilon_init=0.9, epsilon_stable=0.1, warmup_steps=100, decay_steps=100)
>>> s.epsilon(np.array([1, 100, 150, 200, 500])).round(3).tolist()
[0.9, 0.9, 0.5, 0.1, 0.1]
>>> k = KanachanEpsilonGreedy(epsilon_first=1.0, epsilon_last=0.1, annealing_steps=1000)
>>> k.actual(np.array([0, 999, 5000]), increment=32).tolist()
[1.0, 1.0, 1.0]
>>> k.intended(np.array([0, 500, 5000])).tolist()
[1.0, 0.55, 0.1]
"""

from __future__ import annotations

import dataclasses
import json
import math
import re

import numpy as np

from rewardlab.core.errors import ParameterError, check_int
from rewardlab.families.parameters import check_real, param_field

__all__ = [
    "ExplorerSchedule",
    "KanachanEpsilonGreedy",
    "ScheduleSummary",
    "explorer_epsilon",
    "kanachan_intended_epsilon",
    "kanachan_actual_epsilon",
    "first_step_below",
    "expected_random_actions",
    "summarize_epsilon",
    "to_json",
    "to_yaml",
    "MAX_HORIZON",
    "check_horizon",
]

_MAX_STEPS = 1 << 52  # exact in float64
_CHUNK = 1 << 22  # steps evaluated at a time by the summaries
#: The longest horizon a summary (or :meth:`ExplorerSchedule.steps`) takes: 10**9 steps.
MAX_HORIZON = 10**9


def check_horizon(n_steps, *, name: str = "n_steps", low: int = 1) -> int:
    """Validate a horizon (a number of steps to evaluate): an integer in ``[low, MAX_HORIZON]``.

    The one bound on the work a schedule's summary does; ``name`` is the
    argument as the user typed it (``--steps`` on the command line).

    Examples
    --------
    >>> check_horizon(1000)
    1000
    >>> check_horizon(10**13, name="--steps")
    Traceback (most recent call last):
    ...
    rewardlab.core.errors.ParameterError: `--steps` should be <= 1000000000. Received 10000000000000.
    """
    return check_int(name, n_steps, low=low, high=MAX_HORIZON, integral_float=True)


def _check_epsilon(name: str, value) -> float:
    value = check_real(name, value)
    if not 0.0 <= value <= 1.0:
        raise ParameterError(name, "should be in [0, 1] (a probability)", value)
    return value


def _steps_array(steps, *, low: int, name: str = "steps") -> np.ndarray:
    arr = np.asarray(steps)
    if arr.size == 0:
        return arr.astype(np.int64)
    if arr.dtype == bool or arr.dtype.kind not in "iu":
        raise ParameterError(name, "should be an integer array", f"array of dtype {arr.dtype}")
    arr = arr.astype(np.int64, copy=False)
    if arr.min() < low or arr.max() > _MAX_STEPS:
        raise ParameterError(name, f"should be in [{low}, 2**52]", f"min {arr.min()}, max {arr.max()}")
    return arr


# ---------------------------------------------------------------------------
# Pure array functions
# ---------------------------------------------------------------------------


def explorer_epsilon(steps: np.ndarray, *, kind: str, epsilon_init: float, epsilon_stable: float,
                     warmup_steps: int, decay_steps: int) -> np.ndarray:
    """ReinforcementLearning.jl's ``get_ϵ(explorer, step)`` for an array of steps.

    Parameters
    ----------
    steps : int array, any shape
        The explorer's step counter (1 at the first action).
    kind : {"linear", "exp"}
    epsilon_init, epsilon_stable : float
    warmup_steps, decay_steps : int

    Returns
    -------
    float64 array, same shape as ``steps``

    Examples
    --------
    >>> explorer_epsilon(np.array([0, 5, 10]), kind="linear", epsilon_init=1.0, epsilon_stable=0.0,
    ...                  warmup_steps=0, decay_steps=10).tolist()
    [1.0, 0.5, 0.0]
    """
    step = np.asarray(steps, dtype=np.int64)
    out = np.empty(step.shape, dtype=np.float64)
    warm = step <= warmup_steps
    out[warm] = epsilon_init
    rest = ~warm
    if kind == "linear":
        stable = rest & (step >= warmup_steps + decay_steps)
        out[stable] = epsilon_stable
        mid = rest & ~stable  # empty when decay_steps == 0
        steps_left = warmup_steps + decay_steps - step[mid]
        out[mid] = epsilon_stable + steps_left / decay_steps * (epsilon_init - epsilon_stable)
    elif kind == "exp":
        if decay_steps == 0:
            out[rest] = epsilon_stable  # exp(-n / 0) = exp(-Inf) = 0 in Julia
        else:
            n = step[rest] - warmup_steps
            out[rest] = epsilon_stable + (epsilon_init - epsilon_stable) * np.exp(-1.0 * n / decay_steps)
    else:
        raise ParameterError("kind", "should be 'linear' or 'exp'", kind)
    return out


def kanachan_intended_epsilon(steps: np.ndarray, *, epsilon_first: float, epsilon_last: float,
                              annealing_steps: int, increment: int = 1) -> np.ndarray:
    """kanachan's EpsilonGreedy as meant: a linear anneal over ``annealing_steps``.

    ``s = min(reported, A)`` where ``reported`` is the steps reported by the
    ``floor(step / increment)`` calls of ``step(increment)`` made so far.

    Returns
    -------
    float64 array, same shape as ``steps``

    Examples
    --------
    >>> kanachan_intended_epsilon(np.array([0, 50, 100, 200]), epsilon_first=1.0, epsilon_last=0.0,
    ...                           annealing_steps=100).tolist()
    [1.0, 0.5, 0.0, 0.0]
    """
    step = np.asarray(steps, dtype=np.int64)
    if annealing_steps == 0:
        return np.full(step.shape, epsilon_first, dtype=np.float64)
    reported = (step // increment) * increment
    s = np.minimum(reported, annealing_steps)
    a = annealing_steps
    return epsilon_first * ((a - s) / a) + epsilon_last * (s / a)


def kanachan_actual_epsilon(steps: np.ndarray, *, epsilon_first: float, epsilon_last: float,
                            annealing_steps: int, increment: int = 1) -> np.ndarray:
    """kanachan's EpsilonGreedy as it behaves when the caller calls ``step(increment)`` every ``increment`` steps.

    Epsilon is ``epsilon_last`` once a call has been made if
    ``increment >= annealing_steps``, and ``epsilon_first`` otherwise, for
    ever (see the module docstring).

    Returns
    -------
    float64 array, same shape as ``steps``

    Examples
    --------
    >>> kanachan_actual_epsilon(np.array([0, 99, 100, 10**6]), epsilon_first=1.0, epsilon_last=0.0,
    ...                         annealing_steps=100, increment=100).tolist()
    [1.0, 1.0, 0.0, 0.0]
    """
    step = np.asarray(steps, dtype=np.int64)
    if annealing_steps == 0 or increment < annealing_steps:
        return np.full(step.shape, epsilon_first, dtype=np.float64)
    return np.where(step >= increment, epsilon_last, epsilon_first).astype(np.float64)


def first_step_below(steps: np.ndarray, epsilon: np.ndarray, threshold: float) -> int | None:
    """The first of ``steps`` where ``epsilon < threshold``, or None.

    Examples
    --------
    >>> first_step_below(np.arange(5), np.array([1.0, 0.8, 0.4, 0.2, 0.1]), 0.5)
    2
    """
    below = np.asarray(epsilon) < threshold
    if not below.any():
        return None
    return int(np.asarray(steps)[np.argmax(below)])


def expected_random_actions(epsilon: np.ndarray) -> float:
    """The expected number of random actions: the sum of epsilon over the steps.

    Examples
    --------
    >>> expected_random_actions(np.array([1.0, 0.5, 0.25]))
    1.75
    """
    return float(np.sum(np.asarray(epsilon, dtype=np.float64)))


@dataclasses.dataclass(frozen=True)
class ScheduleSummary:
    """Summary figures of a schedule over ``n_steps`` steps.

    Attributes
    ----------
    n_steps : int
    first_step : int
        The first step's number (1 for ReinforcementLearning.jl, 0 for kanachan).
    threshold : float
    first_below : int or None
        The first step where epsilon < threshold (None: never in range).
    steps_until_below : int or None
        How many steps come before it (``first_below - first_step``).
    expected_random_actions : float
        Sum of epsilon over the steps.
    mean_epsilon, final_epsilon : float

    Examples
    --------
    >>> print(ExplorerSchedule(epsilon_stable=0.0, decay_steps=10).summary(100, threshold=0.5))
    100 steps: epsilon < 0.5 from step 6 (after 5 steps); expected random actions 4.5 (mean epsilon 0.0450, final 0.0000)
    """

    n_steps: int
    first_step: int
    threshold: float
    first_below: int | None
    steps_until_below: int | None
    expected_random_actions: float
    mean_epsilon: float
    final_epsilon: float

    def __str__(self) -> str:
        below = (f"epsilon < {self.threshold:g} from step {self.first_below:,} "
                 f"(after {self.steps_until_below:,} steps)") if self.first_below is not None \
            else f"epsilon never < {self.threshold:g}"
        return (f"{self.n_steps:,} steps: {below}; expected random actions "
                f"{self.expected_random_actions:,.1f} (mean epsilon {self.mean_epsilon:.4f}, "
                f"final {self.final_epsilon:.4f})")


def summarize_epsilon(fn, n_steps: int, *, first_step: int, threshold: float) -> ScheduleSummary:
    """Summarize ``fn(steps) -> epsilon`` over steps ``first_step .. first_step + n_steps - 1``.

    Evaluated in chunks of 4 million steps, so long horizons use bounded memory;
    ``n_steps`` is at most :data:`MAX_HORIZON` (:func:`check_horizon`).

    Examples
    --------
    >>> s = summarize_epsilon(lambda st: np.where(st < 10, 1.0, 0.0), 100, first_step=0, threshold=0.5)
    >>> s.first_below, s.expected_random_actions
    (10, 10.0)
    """
    n_steps = check_horizon(n_steps)
    threshold = check_real("threshold", threshold)
    total = 0.0
    first = None
    last = math.nan
    for start in range(first_step, first_step + n_steps, _CHUNK):
        steps = np.arange(start, min(start + _CHUNK, first_step + n_steps), dtype=np.int64)
        eps = fn(steps)
        total += expected_random_actions(eps)
        if first is None:
            first = first_step_below(steps, eps, threshold)
        last = float(eps[-1])
    return ScheduleSummary(n_steps=n_steps, first_step=first_step, threshold=threshold, first_below=first,
                           steps_until_below=None if first is None else first - first_step,
                           expected_random_actions=total, mean_epsilon=total / n_steps,
                           final_epsilon=last)


# ---------------------------------------------------------------------------
# Parameter dataclasses
# ---------------------------------------------------------------------------


@dataclasses.dataclass(frozen=True, kw_only=True)
class ExplorerSchedule:
    """ReinforcementLearning.jl's ``EpsilonGreedyExplorer`` schedule (see the module docstring).

    Attributes
    ----------
    epsilon_stable : float
        ``ϵ_stable``: epsilon after the decay, in [0, 1] (Julia has no default; 0.05 here).
    kind : {"linear", "exp"}
    epsilon_init : float
        ``ϵ_init``: epsilon during the warm-up, in [0, 1].
    warmup_steps : int
        Steps (counted from 1) that use ``epsilon_init``.
    decay_steps : int
        Steps over which epsilon decays (linear) or its decay constant (exp).

    Examples
    --------
    >>> ExplorerSchedule(epsilon_stable=1.5)
    Traceback (most recent call last):
    ...
    rewardlab.core.errors.ParameterError: `epsilon_stable` should be in [0, 1] (a probability). Received 1.5.
    """

    epsilon_stable: float = param_field(0.05, "ϵ_stable: epsilon after the decay.", min=0.0, max=1.0,
                                        step=0.01)
    kind: str = dataclasses.field(default="linear", metadata={
        "doc": "How epsilon decays after the warm-up: 'linear' or 'exp'.", "choices": ("linear", "exp")})
    epsilon_init: float = param_field(1.0, "ϵ_init: epsilon during the warm-up.", min=0.0, max=1.0, step=0.01)
    warmup_steps: int = param_field(0, "Steps (counted from 1) that use ϵ_init.", min=0, max=10_000_000,
                                    step=1000)
    decay_steps: int = param_field(0, "Steps of the linear decay, or the exp decay's time constant.",
                                   min=0, max=10_000_000, step=1000)

    def __post_init__(self):
        if self.kind not in ("linear", "exp"):
            raise ParameterError("kind", "should be 'linear' or 'exp'", self.kind)
        object.__setattr__(self, "epsilon_stable", _check_epsilon("epsilon_stable", self.epsilon_stable))
        object.__setattr__(self, "epsilon_init", _check_epsilon("epsilon_init", self.epsilon_init))
        object.__setattr__(self, "warmup_steps", check_int("warmup_steps", self.warmup_steps, low=0,
                                                           high=_MAX_STEPS, integral_float=True))
        object.__setattr__(self, "decay_steps", check_int("decay_steps", self.decay_steps, low=0,
                                                          high=_MAX_STEPS, integral_float=True))

    first_step = 1

    def steps(self, n_steps: int) -> np.ndarray:
        """The step numbers of the first ``n_steps`` actions: ``1 .. n_steps``.

        Examples
        --------
        >>> ExplorerSchedule(epsilon_stable=0.1).steps(3).tolist()
        [1, 2, 3]
        """
        n_steps = check_horizon(n_steps, low=0)
        return np.arange(1, n_steps + 1, dtype=np.int64)

    def epsilon(self, steps) -> np.ndarray:
        """Epsilon at each step (float64, same shape as ``steps``).

        Examples
        --------
        >>> ExplorerSchedule(epsilon_stable=0.0, decay_steps=4).epsilon(np.arange(1, 6)).tolist()
        [0.75, 0.5, 0.25, 0.0, 0.0]
        """
        return explorer_epsilon(_steps_array(steps, low=0), kind=self.kind, epsilon_init=self.epsilon_init,
                                epsilon_stable=self.epsilon_stable, warmup_steps=self.warmup_steps,
                                decay_steps=self.decay_steps)

    def summary(self, n_steps: int, *, threshold: float = 0.1) -> ScheduleSummary:
        """Summary over the first ``n_steps`` actions (steps 1 .. n_steps).

        Examples
        --------
        >>> ExplorerSchedule(epsilon_stable=0.0, decay_steps=100).summary(1000, threshold=0.5).first_below
        51
        """
        return summarize_epsilon(self.epsilon, n_steps, first_step=1, threshold=threshold)

    def to_config(self) -> dict:
        """The explorer's keyword arguments, keyed as in Julia (``ϵ_init``, ``ϵ_stable``, ...).

        Examples
        --------
        >>> ExplorerSchedule(epsilon_stable=0.1).to_config()["ϵ_stable"]
        0.1
        """
        return {"kind": self.kind, "ϵ_init": self.epsilon_init, "ϵ_stable": self.epsilon_stable,
                "warmup_steps": self.warmup_steps, "decay_steps": self.decay_steps}

    def julia(self) -> str:
        """The Julia constructor call.

        Examples
        --------
        >>> ExplorerSchedule(epsilon_stable=0.1, decay_steps=100).julia()
        'EpsilonGreedyExplorer(kind=:linear, ϵ_init=1.0, ϵ_stable=0.1, warmup_steps=0, decay_steps=100)'
        """
        return (f"EpsilonGreedyExplorer(kind=:{self.kind}, ϵ_init={self.epsilon_init!r}, "
                f"ϵ_stable={self.epsilon_stable!r}, warmup_steps={self.warmup_steps}, "
                f"decay_steps={self.decay_steps})")


@dataclasses.dataclass(frozen=True, kw_only=True)
class KanachanEpsilonGreedy:
    """kanachan's ``EpsilonGreedy`` parameters, with its own validation rules.

    Attributes
    ----------
    epsilon_first : float
        Epsilon at the start, in [0, 1].
    epsilon_last : float
        Epsilon after the anneal, in [0, epsilon_first].
    annealing_steps : int
        Steps of the (intended) linear anneal, >= 0; 0 only if
        ``epsilon_first == epsilon_last``.

    Examples
    --------
    >>> KanachanEpsilonGreedy(epsilon_first=0.1, epsilon_last=0.2, annealing_steps=10)
    Traceback (most recent call last):
    ...
    rewardlab.core.errors.ParameterError: `epsilon_last` should be <= epsilon_first (0.1). Received 0.2.
    """

    epsilon_first: float = param_field(1.0, "Epsilon at the start.", min=0.0, max=1.0, step=0.01)
    epsilon_last: float = param_field(0.05, "Epsilon after the anneal (<= epsilon_first).", min=0.0,
                                      max=1.0, step=0.01)
    annealing_steps: int = param_field(1_000_000, "Steps of the intended linear anneal.", min=0,
                                       max=100_000_000, step=10_000)

    def __post_init__(self):
        first = _check_epsilon("epsilon_first", self.epsilon_first)
        last = _check_epsilon("epsilon_last", self.epsilon_last)
        if last > first:
            raise ParameterError("epsilon_last", f"should be <= epsilon_first ({first!r})", last)
        steps = check_int("annealing_steps", self.annealing_steps, low=0, high=_MAX_STEPS,
                          integral_float=True)
        if steps == 0 and first != last:
            raise ParameterError("annealing_steps", "should be > 0 unless epsilon_first == epsilon_last",
                                 steps)
        object.__setattr__(self, "epsilon_first", first)
        object.__setattr__(self, "epsilon_last", last)
        object.__setattr__(self, "annealing_steps", steps)

    first_step = 0

    def _kw(self) -> dict:
        return {"epsilon_first": self.epsilon_first, "epsilon_last": self.epsilon_last,
                "annealing_steps": self.annealing_steps}

    def steps(self, n_steps: int) -> np.ndarray:
        """The step numbers of the first ``n_steps`` actions: ``0 .. n_steps - 1``.

        Examples
        --------
        >>> KanachanEpsilonGreedy(annealing_steps=10).steps(3).tolist()
        [0, 1, 2]
        """
        n_steps = check_horizon(n_steps, low=0)
        return np.arange(0, n_steps, dtype=np.int64)

    def intended(self, steps, *, increment: int = 1) -> np.ndarray:
        """Epsilon as meant (linear anneal), the caller reporting ``increment`` steps per call.

        Examples
        --------
        >>> k = KanachanEpsilonGreedy(epsilon_first=1.0, epsilon_last=0.0, annealing_steps=4)
        >>> k.intended(np.arange(6)).tolist()
        [1.0, 0.75, 0.5, 0.25, 0.0, 0.0]
        """
        increment = check_int("increment", increment, low=1, high=_MAX_STEPS, integral_float=True)
        return kanachan_intended_epsilon(_steps_array(steps, low=0), increment=increment, **self._kw())

    def actual(self, steps, *, increment: int = 1) -> np.ndarray:
        """Epsilon as kanachan's code behaves, the caller reporting ``increment`` steps per call.

        Examples
        --------
        >>> k = KanachanEpsilonGreedy(epsilon_first=1.0, epsilon_last=0.0, annealing_steps=4)
        >>> k.actual(np.arange(6)).tolist(), k.actual(np.arange(6), increment=4).tolist()
        ([1.0, 1.0, 1.0, 1.0, 1.0, 1.0], [1.0, 1.0, 1.0, 1.0, 0.0, 0.0])
        """
        increment = check_int("increment", increment, low=1, high=_MAX_STEPS, integral_float=True)
        return kanachan_actual_epsilon(_steps_array(steps, low=0), increment=increment, **self._kw())

    def actual_after_calls(self, increments) -> np.ndarray:
        """Epsilon after each of a sequence of ``step(k)`` calls, as kanachan's code computes it.

        Parameters
        ----------
        increments : int array ``[C]``
            The ``k`` of each call, >= 0.

        Returns
        -------
        float64 array ``[C]``: ``epsilon_last`` from the first call with
        ``k >= annealing_steps`` on, ``epsilon_first`` before.

        Examples
        --------
        >>> KanachanEpsilonGreedy(epsilon_first=1.0, epsilon_last=0.0, annealing_steps=10
        ...                       ).actual_after_calls([4, 4, 4, 12, 1]).tolist()
        [1.0, 1.0, 1.0, 0.0, 0.0]
        """
        k = _steps_array(increments, low=0, name="increments")
        if self.annealing_steps == 0:
            return np.full(k.shape, self.epsilon_first, dtype=np.float64)
        jumped = np.maximum.accumulate(k >= self.annealing_steps) if k.size else k.astype(bool)
        return np.where(jumped, self.epsilon_last, self.epsilon_first).astype(np.float64)

    def summary(self, n_steps: int, *, threshold: float = 0.1, actual: bool = True,
                increment: int = 1) -> ScheduleSummary:
        """Summary over the first ``n_steps`` actions (steps 0 .. n_steps - 1), actual or intended.

        Examples
        --------
        >>> k = KanachanEpsilonGreedy(epsilon_first=1.0, epsilon_last=0.0, annealing_steps=100)
        >>> k.summary(1000, threshold=0.5).first_below is None
        True
        >>> k.summary(1000, threshold=0.5, actual=False).first_below
        51
        """
        fn = (lambda s: self.actual(s, increment=increment)) if actual else \
            (lambda s: self.intended(s, increment=increment))
        return summarize_epsilon(fn, n_steps, first_step=0, threshold=threshold)

    def to_config(self) -> dict:
        """The constructor's keyword arguments (``epsilon_first``, ``epsilon_last``, ``annealing_steps``).

        Examples
        --------
        >>> KanachanEpsilonGreedy(annealing_steps=10).to_config()
        {'epsilon_first': 1.0, 'epsilon_last': 0.05, 'annealing_steps': 10}
        """
        return self._kw()


# ---------------------------------------------------------------------------
# Snippets
# ---------------------------------------------------------------------------


def _config(schedule) -> dict:
    if not isinstance(schedule, (ExplorerSchedule, KanachanEpsilonGreedy)):
        raise ParameterError("schedule", "should be an ExplorerSchedule or a KanachanEpsilonGreedy",
                             type(schedule).__name__)
    return schedule.to_config()


def to_json(schedule, *, indent: int | None = 2) -> str:
    """The training program's parameters as a JSON object.

    Examples
    --------
    >>> print(to_json(KanachanEpsilonGreedy(epsilon_first=1.0, epsilon_last=0.05, annealing_steps=1000),
    ...               indent=None))
    {"epsilon_first": 1.0, "epsilon_last": 0.05, "annealing_steps": 1000}
    """
    return json.dumps(_config(schedule), indent=indent, ensure_ascii=False)


_PLAIN_KEY = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")


def _yaml_scalar(value) -> str:
    if isinstance(value, bool):  # pragma: no cover - no boolean parameters today
        return "true" if value else "false"
    if isinstance(value, int):
        return str(value)
    if isinstance(value, float):
        text = repr(value)
        mantissa, e, exponent = text.partition("e")
        if e and "." not in mantissa:  # YAML 1.1 floats need a dot: 1e-05 -> 1.0e-05
            text = f"{mantissa}.0e{exponent}"
        return text
    return json.dumps(str(value), ensure_ascii=False)  # a JSON string is a YAML double-quoted scalar


def to_yaml(schedule) -> str:
    """The training program's parameters as a YAML mapping (written without a YAML library).

    Examples
    --------
    >>> print(to_yaml(ExplorerSchedule(epsilon_stable=1e-05, decay_steps=10)), end="")
    kind: "linear"
    "ϵ_init": 1.0
    "ϵ_stable": 1.0e-05
    warmup_steps: 0
    decay_steps: 10
    """
    lines = []
    for key, value in _config(schedule).items():
        k = key if _PLAIN_KEY.match(key) else json.dumps(key, ensure_ascii=False)
        lines.append(f"{k}: {_yaml_scalar(value)}")
    return "\n".join(lines) + "\n"
