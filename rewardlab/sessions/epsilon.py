"""The epsilon-greedy schedule session: ReinforcementLearning.jl's explorer and kanachan's EpsilonGreedy.

Examples
--------
>>> s = EpsilonScheduleSession(kind="exp", decay_steps=1000, n_steps=5000)
>>> s.results.kind
'exp'
"""

from __future__ import annotations

import dataclasses
from pathlib import Path

import numpy as np

from rewardlab.core.errors import ParameterError, check_choice, check_in_range, check_int
from rewardlab.export import export_target, write_text
from rewardlab.schedules import MAX_HORIZON, ExplorerSchedule, KanachanEpsilonGreedy, check_horizon, to_json, to_yaml
from rewardlab.sessions.base import Param, Session
from rewardlab.sessions.inputs import check_bool, parse_number

__all__ = ["SCHEDULE_KINDS", "EpsilonResults", "EpsilonScheduleSession"]


#: The schedule kinds: ReinforcementLearning.jl's explorer, and kanachan's EpsilonGreedy as meant / as it runs.
SCHEDULE_KINDS = ("linear", "exp", "kanachan_intended", "kanachan_actual")
_CURVE_POINTS = 1500


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

    kind = Param("linear / exp (ReinforcementLearning.jl), kanachan_intended / kanachan_actual.")
    epsilon_init = Param("ϵ_init (ReinforcementLearning.jl): epsilon during the warm-up.")
    epsilon_stable = Param("ϵ_stable (ReinforcementLearning.jl): epsilon after the decay.")
    warmup_steps = Param("Steps (counted from 1) that use ϵ_init.")
    decay_steps = Param("Steps of the linear decay, or the exp decay's time constant.")
    epsilon_first = Param("kanachan: epsilon at the start.")
    epsilon_last = Param("kanachan: epsilon after the anneal (<= epsilon_first).")
    annealing_steps = Param("kanachan: steps of the intended linear anneal.")
    increment = Param("kanachan: steps the caller reports per step() call.")
    n_steps = Param("Horizon: number of actions plotted and summarized.")
    threshold = Param("Steps-to-threshold: first step with epsilon < threshold.")
    _param_names = ("kind", "epsilon_init", "epsilon_stable", "warmup_steps", "decay_steps",
                    "epsilon_first", "epsilon_last", "annealing_steps", "increment", "n_steps", "threshold")
    _numeric = {"epsilon_init": "float", "epsilon_stable": "float", "epsilon_first": "float",
                "epsilon_last": "float", "warmup_steps": "int", "decay_steps": "int", "annealing_steps": "int",
                "increment": "int", "n_steps": "int", "threshold": "float"}
    state_kind = "epsilon"

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
        params["increment"] = check_int("increment", params["increment"], low=1, high=MAX_HORIZON,
                                        integral_float=True)
        params["n_steps"] = check_horizon(params["n_steps"])
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

    # -- pins and saved state ---------------------------------------------------
    def _restore(self, snapshot: dict) -> None:
        self._params = self._validate(dict(snapshot["params"]), {})

    @classmethod
    def _from_state(cls, state, data, path, **options) -> "EpsilonScheduleSession":
        if data is not None:
            raise ParameterError("data", "should be None: an epsilon schedule reads no data", type(data).__name__)
        return cls(**options)

    def _summary(self, r: EpsilonResults) -> dict:
        """Steps to the threshold, expected random actions, mean and final epsilon over the horizon.

        Examples
        --------
        >>> sorted(EpsilonScheduleSession(n_steps=10)._summary(EpsilonScheduleSession(n_steps=10).results))[:2]
        ['expected random actions', 'final epsilon']
        """
        m = r.summary
        return {"steps": m.n_steps, "first step below the threshold": m.first_below,
                "steps until below the threshold": m.steps_until_below,
                "expected random actions": m.expected_random_actions, "mean epsilon": m.mean_epsilon,
                "final epsilon": m.final_epsilon}

    def export(self, path: str | Path, *, overwrite: bool = False) -> Path:
        """Write the parameter snippet: JSON for ``.json``, YAML for ``.yaml`` / ``.yml`` (atomic write).

        Examples
        --------
        >>> EpsilonScheduleSession().export("explorer.yaml")  # doctest: +SKIP
        PosixPath('explorer.yaml')
        """
        overwrite = check_bool("overwrite", overwrite)
        target = export_target(path, overwrite=overwrite)
        fmt = {".json": "json", ".yaml": "yaml", ".yml": "yaml"}.get(target.suffix.lower())
        if fmt is None:
            raise ParameterError("path", "should end in .json, .yaml or .yml", str(path))
        write_text(target, self.results.snippets[fmt].rstrip("\n") + "\n", overwrite=overwrite, shown=path)
        return target
