"""The El Farol tuner's session: capacity, reward kind, agents and nights; alignment, per-agent rewards and constants.

:class:`ElFarolSession` tunes the bar problem's per-agent rewards
(:mod:`rewardlab.domains.el_farol`): the capacity ``b``, the reward kind
(``"G"`` global, ``"local"``, ``"D"`` difference, ``"WL"`` Wonderful Life
with its ``clamp``), the number of agents and of nights.  Each recompute
evaluates the reward on every (week, agent) of the joint actions
(:func:`~rewardlab.domains.el_farol.agent_rewards`), measures its alignment
with ``G`` (:func:`~rewardlab.analysis.alignment.alignment`: factoredness and
learnability with bootstrap intervals, with ``samples`` own changes per
(week, agent) and ``resamples`` bootstrap resamples, small by default so a
change stays interactive) and each agent's reward distribution and
normalization constants (:class:`~rewardlab.analysis.moments.Moments` per agent).

The joint actions
-----------------
* **Simulated** (``data=None``, the default): :func:`~rewardlab.domains.el_farol.simulate_bar`
  with ``episodes``, ``weeks``, ``seed`` and ``policy``.  Changing ``agents``
  or ``nights`` **simulates again with the same seed** (the bar's setting
  changes, so the agents' choices do); ``capacity``, ``kind`` and ``clamp``
  only re-evaluate the rewards on the same actions.  The simulations of the
  last few (agents, nights) pairs are kept, so undo and pins do not simulate
  again.
* **Recorded** (``data=`` a joint frame or its path: one row per (episode,
  week, agent) with an integer ``action``, e.g. a saved ``simulate_bar``
  table): ``agents = k`` keeps the **first k agents** (ascending agent id) of
  every week, and ``nights`` must exceed every recorded action.

Examples
--------
>>> s = ElFarolSession(episodes=2, weeks=20, samples=2, resamples=50)
>>> s.kind, s.capacity, s.agents, s.nights
('D', 4.0, 50, 6)
>>> s.results.alignment.overall_factoredness
1.0
>>> s.kind = "local"
>>> s.results.alignment.overall_factoredness < 1.0
True
"""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import polars as pl

from rewardlab.analysis.alignment import alignment
from rewardlab.analysis.joint import JointView, joint_view
from rewardlab.analysis.moments import Moments
from rewardlab.analysis.stats import NormalizationConstants, check_normalizable, fingerprint
from rewardlab.core.errors import ParameterError, check_choice, check_int, check_positive
from rewardlab.core.spec import FrameSpec
from rewardlab.domains.el_farol import POLICIES, SMALL, SPEC, BarSetting, agent_rewards, attendance, global_reward, \
    night_utility, simulate_bar
from rewardlab.domains.el_farol.family import ElFarolExport, ElFarolFamily, ElFarolParams, export_el_farol_manager
from rewardlab.sessions.base import Param, Session, saved_data
from rewardlab.sessions.el_farol_results import ElFarolResults, WeekDetail, agent_moments, constants_table, joint_spec
from rewardlab.sessions.fingerprints import fingerprint_columns
from rewardlab.sessions.inputs import cancel_token, check_bool, load_frame, parse_number, progress_callback, \
    source_paths

__all__ = ["EL_FAROL_KINDS", "KIND_NAMES", "MAX_AGENTS", "MAX_NIGHTS", "ElFarolSession", "ElFarolResults",
           "WeekDetail"]

#: The reward kinds the tuner offers (the El Farol family's names).
EL_FAROL_KINDS = ("G", "local", "D", "WL")
#: Each kind's :func:`~rewardlab.domains.el_farol.agent_rewards` kind.
KIND_NAMES = {"G": "global", "local": "local", "D": "difference", "WL": "wonderful_life"}
#: Largest number of agents: one recompute's alignment costs about ``agents**2 * weeks * samples``.
MAX_AGENTS = 200
#: Largest number of nights.
MAX_NIGHTS = 30
#: Joint views kept, by (agents, nights): the live one and those undo and the pins go back to.
_VIEWS_KEPT = 8


class ElFarolSession(Session):
    """Tune El Farol's per-agent rewards: capacity, kind (G, local, D, WL), agents and nights.

    Parameters
    ----------
    data : None, polars.DataFrame or path(s)
        None: simulate (:func:`~rewardlab.domains.el_farol.simulate_bar`, see the module docstring);
        otherwise a recorded joint frame (one row per episode, week and agent, integer ``action``).
    kind : {"G", "local", "D", "WL"}
    capacity : float
        ``b > 0``: a night's utility ``x exp(-x / b)`` is largest at ``x = b`` agents.
    agents : int
        ``2 .. MAX_AGENTS`` (recorded data: at most its agents; the first ``agents`` are kept).
    nights : int
        ``2 .. MAX_NIGHTS`` (recorded data: more than its largest action).
    clamp : int or None
        ``"WL"`` only: the night agent ``i`` is clamped to (None: clamped away, which makes WL equal D).
        Kept when another kind is chosen, used only by WL.
    episodes, weeks, seed, policy
        The simulation (``data=None`` only; ignored otherwise).
    samples : int
        Own changes (and others' changes) per (week, agent) in the alignment analysis.
    resamples : int
        Bootstrap resamples of its intervals.
    alignment_seed : int
        Seeds the analysis' draws.
    spec : FrameSpec, optional
        Recorded data only: how its rows form (episode, week, agent) (default: :func:`joint_spec`).

    Attributes
    ----------
    simulated : bool
        Whether the joint actions are simulated.
    frame : polars.DataFrame or None
        The recorded frame (None when simulated).

    Examples
    --------
    >>> s = ElFarolSession(episodes=1, weeks=10, samples=1, resamples=20)
    >>> s.update(kind="WL", clamp=0)
    >>> s.results.rewards.shape
    (10, 50)
    >>> int(s.week(3).attendance.sum())
    50
    """

    kind = Param("The reward: G (global), local (the agent's night), D (difference), WL (Wonderful Life).")
    capacity = Param("b: a night's utility x exp(-x / b) is largest with b agents.")
    agents = Param("Number of agents (simulated again with the seed when it changes, or the first k recorded).")
    nights = Param("Number of nights (simulated again with the seed when it changes).")
    clamp = Param("WL only: the night agent i is clamped to (None: clamped away, WL = D).")
    _param_names = ("kind", "capacity", "agents", "nights", "clamp")
    _numeric = {"capacity": "float", "agents": "int", "nights": "int"}
    state_kind = "el_farol"

    def __init__(self, data=None, *, kind: str = "D", capacity: float = SMALL.capacity, agents: int | None = None,
                 nights: int | None = None, clamp: int | None = None, episodes: int = 4, weeks: int = 50,
                 seed: int = 0, policy: str = "uniform", samples: int = 4, resamples: int = 200,
                 alignment_seed: int = 0, spec: FrameSpec | None = None):
        super().__init__()
        self.samples = check_int("samples", samples, low=1)
        self.resamples = check_int("resamples", resamples, low=1)
        self.alignment_seed = check_int("alignment_seed", alignment_seed, low=0)
        self._views: dict[tuple[int, int], JointView] = {}
        self._fingerprint: str | None = None
        if data is None:
            if spec is not None:
                raise ParameterError("spec", "should be None when the joint actions are simulated (data=None)",
                                     spec)
            self.simulated, self.frame, self.spec = True, None, SPEC
            self.episodes = check_int("episodes", episodes, low=1)
            self.weeks = check_int("weeks", weeks, low=1)
            self.seed = check_int("seed", seed, low=0)
            self.policy = check_choice("policy", policy, POLICIES)
            agents = SMALL.agents if agents is None else agents
            nights = SMALL.nights if nights is None else nights
        else:
            frame, source = load_frame(data)
            self.data_path, self.data_paths = source, source_paths(data)
            self.simulated, self.frame = False, frame
            self.episodes = self.weeks = self.seed = self.policy = None
            self.spec = joint_spec(frame, spec)
            full = joint_view(frame, spec=self.spec)
            if full.actions.ndim != 2 or full.actions.dtype.kind not in "iu":
                raise ParameterError("data", "should have one integer action (night) per agent and week",
                                     f"actions of dtype {full.actions.dtype}")
            if full.actions.size and full.actions.min() < 0:
                raise ParameterError("data", "should hold nights >= 0 as actions", int(full.actions.min()))
            self._views[(full.n_agents, 0)] = full
            self.recorded_agents = full.n_agents
            self.recorded_nights = int(full.actions.max()) + 1 if full.actions.size else 1
            agents = full.n_agents if agents is None else agents
            nights = max(self.recorded_nights, 2) if nights is None else nights
        params = dict(kind=kind, capacity=capacity, agents=agents, nights=nights, clamp=clamp)
        params = {k: parse_number(k, v, integer=self._numeric[k] == "int") if k in self._numeric else v
                  for k, v in params.items()}
        self._params = self._validate(params, params)
        self._refresh({"data": self.data_path or ("simulation" if self.simulated else "frame")})

    # -- parameters ---------------------------------------------------------------------------
    def _validate(self, params: dict, changes: dict) -> dict:
        check_choice("kind", params["kind"], EL_FAROL_KINDS)
        params["capacity"] = check_positive("capacity", params["capacity"])
        if self.simulated:
            params["agents"] = check_int("agents", params["agents"], low=2, high=MAX_AGENTS, integral_float=True)
            params["nights"] = check_int("nights", params["nights"], low=2, high=MAX_NIGHTS, integral_float=True)
        else:
            params["agents"] = check_int("agents", params["agents"], low=2, high=self.recorded_agents,
                                         integral_float=True,
                                         rule=f"should be in 2..{self.recorded_agents} (the recorded agents; the "
                                         "first ones are kept)")
            low = max(self.recorded_nights, 2)
            params["nights"] = check_int("nights", params["nights"], low=low, high=max(MAX_NIGHTS, low),
                                         integral_float=True,
                                         rule=f"should be in {low}..{max(MAX_NIGHTS, low)} (more than every "
                                         "recorded action)")
        params["clamp"] = self._clamp(params["clamp"], params["nights"])
        return params

    @staticmethod
    def _clamp(value, nights: int):
        """None (also from empty text or ``"none"``) or a night in ``0 .. nights - 1``."""
        if value is None or (isinstance(value, str) and value.strip().lower() in ("", "none")):
            return None
        value = parse_number("clamp", value, integer=True)
        return check_int("clamp", value, low=0, high=nights - 1, integral_float=True,
                         rule=f"should be None (clamped away) or a night in 0..{nights - 1}")

    @property
    def setting(self) -> BarSetting:
        """The bar's setting with the session's agents, nights and capacity."""
        p = self._params
        return BarSetting(agents=p["agents"], nights=p["nights"], capacity=p["capacity"])

    def reward_options(self, params: dict | None = None) -> dict:
        """The keyword options of :func:`~rewardlab.domains.el_farol.agent_rewards` for the parameters.

        Examples
        --------
        >>> ElFarolSession(episodes=1, weeks=2, resamples=5).reward_options()
        {'kind': 'difference', 'nights': 6, 'capacity': 4.0, 'clamp': None}
        """
        p = self._params if params is None else params
        return {"kind": KIND_NAMES[p["kind"]], "nights": p["nights"], "capacity": p["capacity"],
                "clamp": p["clamp"] if p["kind"] == "WL" else None}

    def family(self, params: dict | None = None) -> ElFarolFamily:
        """The El Farol family with the session's parameters (or ``params``): no normalization (mean 0, std 1).

        Examples
        --------
        >>> ElFarolSession(episodes=1, weeks=2, resamples=5).family().params.kind
        'difference'
        """
        p = self._params if params is None else params
        return ElFarolFamily(ElFarolParams(kind=p["kind"], capacity=p["capacity"], nights=p["nights"],
                                           clamp=p["clamp"] if p["kind"] == "WL" else None))

    # -- the joint actions ------------------------------------------------------------------------
    def view(self, agents: int | None = None, nights: int | None = None) -> JointView:
        """The joint view the parameters (or ``agents`` / ``nights``) analyse: simulated or the recorded agents.

        Examples
        --------
        >>> ElFarolSession(episodes=1, weeks=3, resamples=5).view(agents=4).actions.shape
        (3, 4)
        """
        agents = self._params["agents"] if agents is None else agents
        nights = self._params["nights"] if nights is None else nights
        key = (agents, nights) if self.simulated else (agents, 0)
        view = self._views.get(key)
        if view is None:
            if self.simulated:
                setting = BarSetting(agents=agents, nights=nights, capacity=SMALL.capacity)
                frame = simulate_bar(setting, episodes=self.episodes, weeks=self.weeks, seed=self.seed,
                                     policy=self.policy)
                view = joint_view(frame)
            else:  # the first ``agents`` recorded agents (the whole view is always kept, see __init__)
                every = self._views[(self.recorded_agents, 0)]
                keep = list(every.agents[:agents])
                view = joint_view(self.frame.filter(pl.col(every.agent_column).is_in(keep)), spec=self.spec)
            if len(self._views) >= _VIEWS_KEPT:  # the oldest goes (never the recorded data's whole view)
                oldest = next(k for k in self._views if self.simulated or k[0] != self.recorded_agents)
                self._views.pop(oldest)
            self._views[key] = view
        return view

    # -- results -------------------------------------------------------------------------------------
    def _compute(self) -> ElFarolResults:
        p = self._params
        view = self.view()
        actions = view.actions.astype(np.int64, copy=False)
        options = self.reward_options()
        bar = {"nights": p["nights"], "capacity": p["capacity"]}

        def reward_fn(a, _states):
            return agent_rewards(a, **options)

        def g_fn(a, _states):
            return global_reward(a, **bar)

        rewards = reward_fn(actions, None)
        g = g_fn(actions, None)
        result = alignment(view, reward_fn, g_fn, action_set=p["nights"], samples=self.samples,
                           seed=self.alignment_seed, resamples=self.resamples, name=p["kind"])
        moments = agent_moments(rewards)
        overall = Moments.of(rewards)
        constants = constants_table(view.agents, moments)
        return ElFarolResults(kind=p["kind"], setting=self.setting, family=self.family(), view=view,
                              rewards=rewards, global_reward=g, attendance=attendance(actions, nights=p["nights"]),
                              alignment=result, moments=moments, overall=overall, constants=constants)

    def _nonfinite(self, r: ElFarolResults) -> list[str]:
        return self._finite_problems([("an agent's reward", r.rewards), ("G", r.global_reward)])

    def _summary(self, r: ElFarolResults) -> dict:
        """Factoredness and learnability with their intervals, tie share, reward and G statistics.

        Examples
        --------
        >>> s = ElFarolSession(episodes=1, weeks=5, samples=1, resamples=10)
        >>> sorted(s._summary(s.results))[:3]
        ['factoredness', 'factoredness high', 'factoredness low']
        """
        a = r.alignment
        finite = [v if math.isfinite(v) else None for v in
                  (a.overall_learnability, *a.overall_learnability_ci)]
        stds = r.constants["std"].to_numpy()
        return {"factoredness": a.overall_factoredness, "factoredness low": a.overall_factoredness_ci[0],
                "factoredness high": a.overall_factoredness_ci[1], "learnability": finite[0],
                "learnability low": finite[1], "learnability high": finite[2], "tie share": a.overall_tie_share,
                "mean reward": r.overall.mean, "reward std": r.overall.std,
                "smallest agent std": float(stds.min()), "largest agent std": float(stds.max()),
                "mean G": float(r.global_reward.mean())}

    def agent_constants(self, agent: int) -> NormalizationConstants:
        """Agent ``agent``'s (a position, ``0 .. agents - 1``) normalization constants over every week.

        Raises
        ------
        FrameError
            Its reward is constant (std 0): it cannot be normalized.

        Examples
        --------
        >>> s = ElFarolSession(episodes=1, weeks=20, resamples=5)
        >>> c = s.agent_constants(0)
        >>> c.scope, c.count
        ('all', 20)
        """
        r = self.results
        agent = check_int("agent", agent, low=0, high=r.rewards.shape[1] - 1)
        values = np.ascontiguousarray(r.rewards[:, agent])
        m = r.moments[agent]
        name = f"el_farol_{r.kind}[agent {r.view.agents[agent]}]"
        check_normalizable(name, "all", m)
        return NormalizationConstants(reward=name, scope="all", mean=m.mean, std=m.std, count=m.count,
                                      source=self.data_path, rows=int(r.rewards.size), fingerprint=fingerprint(values))

    # -- drill-down -------------------------------------------------------------------------------
    def week(self, step) -> WeekDetail:
        """One week (joint step) opened: attendance, each night's utility, ``G`` and every agent's reward.

        Parameters
        ----------
        step : int or dict
            The joint step (``0 .. S - 1``), or ``{"episode_id": e, "t": t}`` (the data's step column
            for ``"t"``).

        Examples
        --------
        >>> s = ElFarolSession(episodes=2, weeks=5, resamples=5)
        >>> w = s.week({"episode_id": 1, "t": 0})
        >>> w.step, float(w.utility.sum()) == w.global_reward
        (5, True)
        """
        r = self.results
        view = r.view
        step = self._step_index(step, view)
        p = self._params
        actions = view.actions[step].astype(np.int64)
        counts = r.attendance[step]
        utility = night_utility(counts, capacity=p["capacity"])
        g = float(r.global_reward[step])
        difference = agent_rewards(actions[None, :], kind="difference", nights=p["nights"],
                                   capacity=p["capacity"])[0]
        agents = pl.DataFrame({
            "agent": pl.Series([str(a) for a in view.agents], dtype=pl.String),
            "night": actions, "reward": r.rewards[step], "attendance": counts[actions].astype(np.int64),
            "without_agent": g - difference})
        return WeekDetail(step=step, episode=view.episode_value(step), t=view.t[step].item(), kind=p["kind"],
                          capacity=p["capacity"], attendance=counts.astype(np.int64), utility=utility,
                          global_reward=g, agents=agents)

    @staticmethod
    def _step_index(step, view: JointView) -> int:
        if isinstance(step, dict):
            unknown = sorted(set(step) - {"episode_id", "t"})
            if unknown or set(step) != {"episode_id", "t"}:
                raise ParameterError("step", "should be a joint step index or {'episode_id': ..., 't': ...}", step)
            keys = view.episode_keys
            episode = keys.with_row_index("k").filter(pl.col(view.episode_columns[0]) == step["episode_id"])
            hits = np.flatnonzero((view.episode == (episode["k"][0] if episode.height else -1))
                                  & (view.t == step["t"]))
            if not hits.size:
                raise ParameterError("step", "should name a week of the data", step)
            return int(hits[0])
        return check_int("step", step, low=0, high=view.steps - 1,
                         rule=f"should be a joint step in 0..{view.steps - 1} or {{'episode_id': ..., 't': ...}}")

    # -- saved state ---------------------------------------------------------------------------------
    def data_fingerprint(self) -> str | None:
        """A fingerprint of the recorded columns read (None when simulated: the options define the data).

        Examples
        --------
        >>> ElFarolSession(episodes=1, weeks=2, resamples=5).data_fingerprint() is None
        True
        """
        if self.simulated:
            return None
        if self._fingerprint is None:
            full = self._views[(self.recorded_agents, 0)]
            names = [*full.episode_columns, full.step_column, full.agent_column, full.action_column]
            self._fingerprint = fingerprint_columns(self.frame, list(dict.fromkeys(names)))
        return self._fingerprint

    def _data_rows(self) -> int | None:
        return None if self.simulated else self.frame.height

    def _state_options(self) -> dict:
        options = {"samples": self.samples, "resamples": self.resamples, "alignment_seed": self.alignment_seed}
        if self.simulated:
            options.update(episodes=self.episodes, weeks=self.weeks, seed=self.seed, policy=self.policy)
        return options

    @classmethod
    def _from_state(cls, state, data, path, **options) -> "ElFarolSession":
        saved = dict(state.options)
        for name in ("samples", "resamples", "alignment_seed"):
            if name in saved:
                options.setdefault(name, saved[name])
        if data is None and not state.data_paths:  # simulated: the saved simulation
            for name in ("episodes", "weeks", "seed", "policy"):
                if name in saved:
                    options.setdefault(name, saved[name])
            return cls(**options)
        return cls(saved_data(state, data, path), **options)

    # -- export ------------------------------------------------------------------------------------
    def export(self, path, *, overwrite: bool = False, check: bool = True, source: str | None = None,
               progress=None, cancel=None) -> ElFarolExport:
        """Write the reward manager with the session's parameters, after its round trip on the joint actions.

        :func:`~rewardlab.domains.el_farol.family.export_el_farol_manager`: with ``check`` the file is applied to :meth:`joint_frame` by the manager runner and compared
        bit for bit with the family's rewards, and check-plugin runs on whole trials; nothing is written
        unless both pass.

        Parameters
        ----------
        path : str or Path
            The ``.py`` file (an existing one is replaced only with ``overwrite``).
        overwrite, check : bool
        source : str, optional
            A note for the file's header (default: the saved state file, or the data: its path or the
            simulation's settings).
        progress : callable, optional
            ``progress(fraction, message)``.
        cancel : CancelToken, optional
            Cancelling before the round trip starts raises :class:`~rewardlab.core.errors.ExportCancelled`;
            nothing is written.

        Returns
        -------
        ElFarolExport
            The path and the round trip (None without ``check``).

        Raises
        ------
        RoundTripError
            The file differs from the family on the joint actions or fails check-plugin.
        OutputExistsError
            ``path`` exists and ``overwrite`` is False.

        Examples
        --------
        >>> print(ElFarolSession(episodes=1, weeks=3).export("el_farol_d.py"))  # doctest: +SKIP
        wrote el_farol_d.py
          round trip: identical ...
        """
        token, report = cancel_token(cancel), progress_callback(progress)
        overwrite, check = check_bool("overwrite", overwrite), check_bool("check", check)
        if source is not None and not isinstance(source, str):
            raise ParameterError("source", "should be None or a string", type(source).__name__)
        family = self.results.family
        note = source if source is not None else (self.state_note or self.data_path or self.simulation_note)
        token.check(path, "the start")
        report(0.05, "checking the manager on the joint actions, then writing it" if check else "writing")
        data = self.joint_frame() if check else None
        result = export_el_farol_manager(family, Path(path), data=data, overwrite=overwrite, source=note)
        report(1.0, f"wrote {path}")
        return result

    @property
    def simulation_note(self) -> str | None:
        """The simulation's settings in words (None for recorded data): an exported file's source note.

        Examples
        --------
        >>> ElFarolSession(episodes=1, weeks=2, resamples=5).simulation_note
        'simulate_bar(50 agents, 6 nights, episodes=1, weeks=2, seed=0, policy=uniform)'
        """
        if not self.simulated:
            return None
        p = self._params
        return (f"simulate_bar({p['agents']} agents, {p['nights']} nights, episodes={self.episodes}, "
                f"weeks={self.weeks}, seed={self.seed}, policy={self.policy})")

    def joint_frame(self) -> pl.DataFrame:
        """The joint frame the session analyses (the simulated table, or the recorded agents kept).

        Examples
        --------
        >>> ElFarolSession(episodes=1, weeks=2, resamples=5, agents=3).joint_frame().height
        6
        """
        p = self._params
        if self.simulated:
            return simulate_bar(BarSetting(agents=p["agents"], nights=p["nights"], capacity=p["capacity"]),
                                episodes=self.episodes, weeks=self.weeks, seed=self.seed, policy=self.policy)
        if p["agents"] == self.recorded_agents:
            return self.frame
        keep = list(self.results.view.agents)
        return self.frame.filter(pl.col(self.results.view.agent_column).is_in(keep))
