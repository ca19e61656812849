"""The El Farol rewards as a tunable family on the family core, exported as a reward-manager file.

:class:`ElFarolFamily` (registered as ``"el_farol"``) holds the bar
problem's reward as parameters (:class:`ElFarolParams`: the ``kind`` of
reward, the capacity ``b``, the number of nights ``K``, whether agents may
stay ``home``, the Wonderful Life ``clamp``) with the core's normalization
constants and their provenance.  :meth:`ElFarolFamily.evaluate` lines a joint
frame up (:func:`rewardlab.analysis.joint.joint_view`), computes the
vectorized reward of :func:`rewardlab.domains.el_farol.rewards.agent_rewards`
over the ``[S, n]`` joint actions and puts it back in frame row order
(:func:`~rewardlab.analysis.joint.scatter_rows`).

Its export is not a ``get_reward`` plug-in but a **reward manager**
(:mod:`rewardlab.contracts.manager`, PRLT's form): a stand-alone file that
imports numpy only, whose every parameter is a literal
(:func:`rewardlab.families.rendering.render_literal`) and whose header is
sanitized comments (:func:`rewardlab.families.export.render_family` with the
family's ``export_library = "numpy"``).  As PRLT's Bar Problem manager does,
it computes the week's shared work on agent 0's call: the attendance, ``G``
(appended to ``world_utility``, the world utility PRLT logs) and every
agent's reward, which the other agents' calls only look up.  It never says a
trial is finished (PRLT's bar problem has no termination), so the runner's
``done_<name>`` is True on each trial's last step only.

:func:`export_el_farol_manager` writes the file; with ``data`` it first runs
the round trip (:func:`manager_roundtrip`): the file through
:func:`rewardlab.plugins.managers.apply_managers` must give
``family.evaluate(data)`` bit for bit (and the trials' last steps as done),
and :func:`rewardlab.plugins.manager_check.check_manager` must pass; nothing
is written otherwise (:class:`~rewardlab.core.errors.RoundTripError`).

Examples
--------
>>> from rewardlab.domains.el_farol import SMALL, simulate_bar
>>> frame = simulate_bar(SMALL, episodes=1, weeks=2, seed=0)
>>> fam = ElFarolFamily.from_preset("difference")
>>> fam.evaluate(frame).shape, fam.params.capacity
((100,), 4.0)
>>> "class RewardManager:" in fam.render()
True
"""

from __future__ import annotations

import dataclasses
import datetime as _dt
import hashlib
import math
from pathlib import Path

import numpy as np
import polars as pl

from rewardlab.analysis.joint import JointView, joint_view, scatter_rows
from rewardlab.core import columns
from rewardlab.core.errors import (ParameterError, SpecError, check_choice,
                                   check_int, check_positive)
from rewardlab.core.spec import FrameSpec
from rewardlab.domains.el_farol.rewards import REWARD_KINDS, agent_rewards
from rewardlab.domains.el_farol.simulate import SPEC
from rewardlab.families.base import RewardFamily, register_family
from rewardlab.families.export import FamilyExport, export_target, render_family, write_checked
from rewardlab.families.parameters import mean_field, param_field, provenance_field, std_field, validate_normalization
from rewardlab.families.provenance import Provenance
from rewardlab.families.manager_roundtrip import ManagerRoundTrip, manager_roundtrip
from rewardlab.sources.registry import spec_of

__all__ = ["KIND_ALIASES", "ElFarolParams", "ElFarolPrepared", "ElFarolFamily", "ManagerRoundTrip",
           "manager_roundtrip", "ElFarolExport", "export_el_farol_manager"]

#: Short names accepted for :attr:`ElFarolParams.kind` (the kinds of :data:`~rewardlab.domains.el_farol.REWARD_KINDS`).
KIND_ALIASES = {"G": "global", "L": "local", "D": "difference", "WL": "wonderful_life", "UD": "uniform_division",
                "uniform": "uniform_division"}


def _kind(kind) -> str:
    return check_choice("kind", KIND_ALIASES.get(kind, kind) if isinstance(kind, str) else kind, REWARD_KINDS)


@dataclasses.dataclass(frozen=True)
class ElFarolParams:
    """Parameters of :class:`ElFarolFamily` (validated on construction).

    ``kind`` is one of :data:`~rewardlab.domains.el_farol.REWARD_KINDS` (or
    its short name of :data:`KIND_ALIASES`: ``G``, ``L``, ``D``, ``WL``,
    ``UD``/``uniform``); ``clamp`` is only for ``wonderful_life`` (None: the
    agent is clamped away, which makes WL equal D; a night ``c``: clamped
    to ``c``).

    Examples
    --------
    >>> ElFarolParams(kind="D").kind, ElFarolParams(capacity=6).capacity
    ('difference', 6.0)
    >>> ElFarolParams(kind="local", clamp=2)
    Traceback (most recent call last):
    rewardlab.core.errors.ParameterError: `clamp` should be None unless kind is 'wonderful_life'. Received 2.
    """

    kind: str = param_field("global", "The reward: global G, local, uniform_division, difference D = G(z) - G(z_-i) "
                            "or wonderful_life WL = G(z) - G(CL_i(z)); short names G, L, UD, D, WL.")
    capacity: float = param_field(4.0, "b: a night's utility x exp(-x / b) is largest at attendance b.",
                                  min=0.5, max=100.0, step=0.5)
    nights: int = param_field(6, "K: the nights an agent chooses from (actions 0 .. K-1).", min=1, max=30, step=1)
    home: bool = param_field(False, "Action K means 'stays home' (attends no night).")
    clamp: int | None = param_field(None, "wonderful_life only: the night agent i is clamped to (None: clamped "
                                    "away, no night, which makes WL equal D).")
    mean: float = mean_field(1000.0, 0.0001)
    std: float = std_field(1000.0, 0.0001)
    provenance: Provenance = provenance_field()

    def __post_init__(self):
        object.__setattr__(self, "kind", _kind(self.kind))
        object.__setattr__(self, "nights", check_int("nights", self.nights, low=1))
        object.__setattr__(self, "capacity", check_positive("capacity", self.capacity))
        if not isinstance(self.home, (bool, np.bool_)):
            raise ParameterError("home", "should be True or False", self.home)
        object.__setattr__(self, "home", bool(self.home))
        if self.clamp is not None:
            if self.kind != "wonderful_life":
                raise ParameterError("clamp", "should be None unless kind is 'wonderful_life'", self.clamp)
            top = self.nights if self.home else self.nights - 1
            object.__setattr__(self, "clamp", check_int("clamp", self.clamp, low=0, high=top,
                                                        rule=f"should be None or a night in 0..{top}"))
        validate_normalization(self)

    def reward_options(self) -> dict:
        """The keyword options of :func:`~rewardlab.domains.el_farol.agent_rewards` (``kind`` included).

        Examples
        --------
        >>> ElFarolParams().reward_options()
        {'kind': 'global', 'nights': 6, 'capacity': 4.0, 'clamp': None, 'home': False}
        """
        return {"kind": self.kind, "nights": self.nights, "capacity": self.capacity, "clamp": self.clamp,
                "home": self.home}

    def raw_extremes(self):
        """Bounds of the raw reward for every joint action (``f(x) = x exp(-x / b)``: ``f <= b / e``,
        ``-exp(-2) <= f(x) - f(x - 1) <= 1``)."""
        b, k = self.capacity, self.nights
        low_step = -math.exp(-2.0)
        bounds = {"global": (k * b * math.exp(-1.0), 0.0), "local": (b * math.exp(-1.0), 0.0),
                  "uniform_division": (1.0, 0.0), "difference": (1.0, low_step),
                  "wonderful_life": (1.0 - low_step, low_step - 1.0)}[self.kind]
        return [(bounds[0], "the largest reward any joint action gives (a bound)", "capacity", b),
                (bounds[1], "the smallest reward any joint action gives (a bound)", "capacity", b)]


@dataclasses.dataclass(frozen=True, eq=False)
class ElFarolPrepared:
    """A joint frame lined up once (the family core's *prepared* object).

    Attributes
    ----------
    view : JointView
    source : str or None
    fingerprint : str
        Of the actions and the joint steps (what the rewards depend on).
    """

    view: JointView
    source: str | None
    fingerprint: str

    @property
    def n_rows(self) -> int:
        return self.view.height

    def rows(self, scope: str) -> np.ndarray:
        """Every row, in joint order (the rewards are paid at every step)."""
        return self.view.rows.ravel()

    def done(self, scope: str) -> np.ndarray:
        """True on every agent's row of each trial's last step (the manager runner's ``done_<name>``)."""
        view = self.view
        last = np.ones(view.steps, bool)
        last[:-1] = view.episode[1:] != view.episode[:-1]
        return scatter_rows(view, np.repeat(last[:, None], view.n_agents, axis=1))


def _spec_of(frame: pl.DataFrame) -> FrameSpec:
    """``frame``'s spec, else El Farol's when it has the runner's default columns (as the manager runner reads it)."""
    try:
        return spec_of(frame)
    except SpecError:
        if not all(c in frame.columns for c in ("episode_id", "t", "agent_id", "action")):
            raise
        return SPEC.project(frame.columns)


def _fingerprint(view: JointView) -> str:
    digest = hashlib.blake2b(digest_size=16)
    for array in (view.actions, view.episode, view.t):
        digest.update(np.ascontiguousarray(array).tobytes())
    digest.update(repr(view.agents).encode())
    return "blake2b-128:" + digest.hexdigest()


#: The literal ``_RL_KIND`` of the exported file: a kind's position in REWARD_KINDS.
_KIND_CODES = {kind: code for code, kind in enumerate(REWARD_KINDS)}

_BODY = '''
class RewardManager:
    """PRLT's reward manager: reset() per trial, get_reward(agent, state, joint_action) per agent and step."""

    def __init__(self):
        self.agents = -1
        self.table = None  # f(x) = x exp(-x / b) for x = 0 .. n + 1
        self.step = None  # f(x) - f(x - 1), 0 for x = 0
        self.world_utility = []  # G of each week of the trial (PRLT logs it)
        self.rewards = None

    def reset(self):
        self.world_utility = []
        self.rewards = None

    def get_reward(self, agent, state, joint_action):
        if agent == 0:  # the week's first call: the shared work for every agent
            self.rewards = self.week(joint_action)
        return self.rewards[agent], False

    def week(self, joint_action):
        np = _RL_numpy
        joint = np.asarray(joint_action)
        if joint.ndim != 1 or joint.dtype.kind not in "iu":
            raise ValueError(f"joint_action should be a 1-D array of integer nights, not {joint.dtype} "
                             f"of shape {joint.shape}")
        n = joint.shape[0]
        top = _RL_NIGHTS if _RL_HOME else _RL_NIGHTS - 1
        if n and (int(joint.min()) < 0 or int(joint.max()) > top):
            raise ValueError(f"an action is not a night in 0..{top}: {joint.tolist()}")
        if self.agents != n:
            x = np.arange(n + 2).astype(np.float64)
            self.table = x * np.exp(-x / _RL_CAPACITY)
            self.step = np.empty_like(self.table)
            self.step[0] = 0.0
            self.step[1:] = self.table[1:] - self.table[:-1]
            self.agents = n
        counts = np.bincount(joint, minlength=_RL_NIGHTS + 1)
        counts[_RL_NIGHTS] = 0  # staying home is no night
        g = self.table[counts[None, :]].sum(axis=1)[0]
        self.world_utility.append(float(g))
        own = counts[joint]  # the attendance of each agent's night, 0 at home
        if _RL_KIND == 0:  # global: G for everyone
            raw = np.full(n, g)
        elif _RL_KIND == 1:  # local: f(x_k)
            raw = self.table[own]
        elif _RL_KIND == 2:  # uniform division: f(x_k) / x_k
            raw = np.where(own > 0, np.exp(-own / _RL_CAPACITY), 0.0)
        elif _RL_KIND == 3:  # difference: G(z) - G(z_-i) = f(x_k) - f(x_k - 1)
            raw = self.step[own]
        elif _RL_CLAMP == _RL_NIGHTS:  # Wonderful Life clamped away: the difference reward
            raw = self.step[own]
        else:  # Wonderful Life clamped to night c: f(x_k) - f(x_k - 1) + f(x_c) - f(x_c + 1), 0 at c
            at = counts[_RL_CLAMP]
            raw = np.where(joint == _RL_CLAMP, 0.0, self.step[own] + (self.table[at] - self.table[at + 1]))
        return ((raw - _RL_MEAN) / _RL_STD).tolist()
'''

_FORMULAS = {
    "global": ("G(z) = sum over nights k of f(x_k), f(x) = x exp(-x / b), x_k the night's attendance;",
               "every agent gets G (computed on agent 0's call, logged in world_utility)"),
    "local": ("L_i = f(x_k), k agent i's night (0 at home), f(x) = x exp(-x / b)",),
    "uniform_division": ("UD_i = f(x_k) / x_k = exp(-x_k / b), k agent i's night (0 at home)",),
    "difference": ("D_i = G(z) - G(z_-i) = f(x_k) - f(x_k - 1), k agent i's night (0 at home),",
                   "f(x) = x exp(-x / b)"),
    "wonderful_life": ("WL_i = G(z) - G(CL_i(z)): agent i clamped to night CLAMP (CLAMP = NIGHTS: clamped away,",
                       "WL = D); f(x_k) - f(x_k - 1) + f(x_c) - f(x_c + 1), 0 for agents at c"),
}


@register_family
@dataclasses.dataclass(frozen=True)
class ElFarolFamily(RewardFamily):
    """The El Farol bar problem's per-agent rewards (see the module docstring).

    Examples
    --------
    >>> ElFarolFamily().params.kind, ElFarolFamily.from_preset("wonderful_life", clamp=0).params.clamp
    ('global', 0)
    """

    params: ElFarolParams = dataclasses.field(default_factory=ElFarolParams)

    name = "el_farol"
    title = "El Farol bar reward"
    params_type = ElFarolParams
    scope = "all"
    presets = {"global": {"kind": "global"}, "difference": {"kind": "difference"}, "local": {"kind": "local"},
               "wonderful_life": {"kind": "wonderful_life"}, "uniform_division": {"kind": "uniform_division"}}
    export_for = "rewardlab's reward-manager runner (PRLT's RewardManager: rewardlab apply JOINT --plugin FILE.py)"
    export_library = "numpy"
    export_body = _BODY

    @property
    def export_formula(self) -> tuple[str, ...]:
        """The header's ``reward:`` lines: this kind's formula, then the normalization."""
        return (*_FORMULAS[self.params.kind], "then (raw - mean) / std; finished is always False")

    # -- data -------------------------------------------------------------------
    def prepare(self, data, *, spec: FrameSpec | None = None) -> ElFarolPrepared:
        """The joint view of a joint frame (one row per trial, week and agent), or ``data`` if prepared.

        The spec is ``spec``, else the frame's (attached or registered), else
        El Farol's :data:`~rewardlab.domains.el_farol.SPEC` when the frame has
        its columns (``episode_id``, ``t``, ``agent_id``, ``action``), as the
        manager runner reads a frame without a spec.

        Examples
        --------
        >>> from rewardlab.domains.el_farol import SMALL, simulate_bar
        >>> ElFarolFamily().prepare(simulate_bar(SMALL, episodes=1, weeks=3, seed=0)).view.actions.shape
        (3, 50)
        """
        if isinstance(data, ElFarolPrepared):
            return data
        if not isinstance(data, pl.DataFrame):
            raise ParameterError("data", "should be a polars.DataFrame of a joint frame (one row per episode, step "
                                 "and agent)", type(data).__name__)
        view = joint_view(data, spec=_spec_of(data) if spec is None else spec)
        return ElFarolPrepared(view, None, _fingerprint(view))

    def raw_cells(self, prepared) -> np.ndarray:
        """The raw reward ``[S, n]`` (joint steps, agents) of :func:`~rewardlab.domains.el_farol.agent_rewards`.

        Examples
        --------
        >>> from rewardlab.domains.el_farol import SMALL, simulate_bar
        >>> ElFarolFamily().raw_cells(simulate_bar(SMALL, episodes=1, weeks=3, seed=0)).shape
        (3, 50)
        """
        return agent_rewards(self.prepare(prepared).view.actions, **self.params.reward_options())

    def raw_values(self, prepared) -> np.ndarray:
        """The raw reward of every row, in the order of ``prepared.rows("all")`` (joint order)."""
        return self.raw_cells(prepared).ravel()

    def evaluate(self, prepared, *, spec: FrameSpec | None = None) -> np.ndarray:
        """Every row's reward ``(raw - mean) / std``, float64 ``[R]`` in frame row order.

        Unlike the core's ``evaluate`` this returns the rewards only (the
        done flags are :meth:`ElFarolPrepared.done`: the trials' last steps).

        Examples
        --------
        >>> from rewardlab.domains.el_farol import SMALL, simulate_bar, difference_reward
        >>> frame = simulate_bar(SMALL, episodes=1, weeks=3, seed=0)
        >>> view = joint_view(frame)
        >>> bool((ElFarolFamily.from_preset("difference").evaluate(frame)
        ...       == view.scatter(difference_reward(view.actions, **SMALL.reward_options()))).all())
        True
        """
        prepared = self.prepare(prepared, spec=spec)
        p = self.params
        return scatter_rows(prepared.view, (self.raw_cells(prepared) - p.mean) / p.std)

    def with_columns(self, frame: pl.DataFrame, name: str, *, prepared=None) -> pl.DataFrame:
        """``frame`` with ``reward_<name>`` (Float64) and ``done_<name>`` (the trials' last steps) added.

        Examples
        --------
        >>> from rewardlab.domains.el_farol import SMALL, simulate_bar
        >>> ElFarolFamily().with_columns(simulate_bar(SMALL, episodes=1, weeks=2, seed=0), "g").columns[-2:]
        ['reward_g', 'done_g']
        """
        prepared = self.prepare(frame if prepared is None else prepared)
        if prepared.n_rows != frame.height:
            raise ParameterError("prepared", f"should describe a frame of {frame.height} rows", prepared.n_rows)
        return frame.with_columns(pl.Series(columns.reward_column(name), self.evaluate(prepared)),
                                  pl.Series(columns.done_column(name), prepared.done(self.scope)))

    # -- the manager ------------------------------------------------------------
    def export_literals(self) -> dict[str, object]:
        p = self.params
        return {"_RL_KIND": _KIND_CODES[p.kind], "_RL_NIGHTS": p.nights, "_RL_CAPACITY": p.capacity,
                "_RL_HOME": int(p.home), "_RL_CLAMP": p.nights if p.clamp is None else p.clamp,
                "_RL_MEAN": p.mean, "_RL_STD": p.std}

    def render(self, *, source: str | None = None, created: _dt.datetime | None = None) -> str:
        """The exported manager file's text (:func:`rewardlab.families.export.render_family`)."""
        return render_family(self, source=source, created=created)

    def reward_manager(self):
        """A ``RewardManager()`` of the exported file's code (run here), e.g. to call it step by step.

        Examples
        --------
        >>> m = ElFarolFamily.from_preset("difference").reward_manager()
        >>> m.reset(); m.get_reward(0, {}, np.array([0, 0, 1]))[1]
        False
        """
        namespace: dict = {}
        text = self.render(created=_dt.datetime(2000, 1, 1, tzinfo=_dt.timezone.utc))
        exec(compile(text, "<el_farol manager>", "exec"), namespace)
        return namespace["RewardManager"]()


# ---------------------------------------------------------------------------
# The export
# ---------------------------------------------------------------------------


class ElFarolExport(FamilyExport):
    """What :func:`export_el_farol_manager` wrote, and its :class:`ManagerRoundTrip` (None without data).

    Examples
    --------
    >>> str(ElFarolExport(Path("bar.py"), None))
    'wrote bar.py'
    """


def export_el_farol_manager(family: ElFarolFamily, path, *, data: pl.DataFrame | None = None,
                            overwrite: bool = False, source: str | None = None,
                            created: _dt.datetime | None = None) -> ElFarolExport:
    """Write an El Farol family as one stand-alone reward-manager file (numpy only), after its round trip on ``data``.

    Parameters
    ----------
    family : ElFarolFamily
    path : str or Path
        The ``.py`` file (an existing one is replaced only with ``overwrite``).
    data : polars.DataFrame, optional
        A joint frame: the file is applied to it through the manager runner
        and compared bit for bit with ``family.evaluate(data)`` (dones: the
        trials' last steps), and check-plugin runs on whole trials; nothing
        is written unless both pass (:func:`manager_roundtrip`).
    overwrite : bool
    source : str, optional
        A note for the file's header (sanitized into a comment).
    created : datetime, optional
        The header's creation time (default: now).

    Returns
    -------
    ElFarolExport
        The file written and its round trip (None without ``data``); printed,
        what the CLI prints.

    Raises
    ------
    RoundTripError
        The file differs from the family on ``data`` or fails check-plugin.
    OutputExistsError
        ``path`` exists and ``overwrite`` is False.

    Examples
    --------
    >>> from rewardlab.domains.el_farol import SMALL, simulate_bar
    >>> frame = simulate_bar(SMALL, episodes=2, weeks=3, seed=0)
    >>> print(export_el_farol_manager(ElFarolFamily.from_preset("difference"), "d.py", data=frame))  # doctest: +SKIP
    wrote d.py
      round trip: identical to rewardlab's rewards and dones on all 300 agent-steps; check-plugin: PASS (...)
    """
    target = export_target(family, ElFarolFamily, path, overwrite=overwrite)  # before any work
    text = family.render(source=source, created=created)
    check = None
    if data is not None:
        prepared = family.prepare(data)
        expected = (family.evaluate(prepared), prepared.done(family.scope))

        def check(temporary):
            return manager_roundtrip(temporary, data, expected, spec=_spec_of(data))
    return ElFarolExport(target, write_checked(text, target, overwrite=overwrite, check=check))
