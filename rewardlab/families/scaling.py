"""The steps scaling on the family core: a column of a step table scaled by normalization constants.

:class:`StepsScaling` (registered as ``"scaling"``) is the family of the
steps contract's scaling plug-ins::

    reward = (data[key] - shift) / scale        (float64, every step; done left as given)

with ``shift = mean`` (``0.0`` when ``center=False``) and ``scale = std`` of
constants measured by :func:`rewardlab.normalization_constants`.  Its
parameters (:class:`ScalingParams`) are the constants, the root IN key read
(a numeric scalar column the steps contract hands at the root:
:func:`check_scaling_key`) and ``center``; its presets are ``standardize``
and ``scale_only`` (no centring: what the constants of a return scope
allow).  It renders through the core (:func:`rewardlab.families.export.render_family`)
with a header of its own, the one its files have always had (the constants'
reward, scope, values, data, rows and fingerprint: :func:`constants_header`),
and round-trips through :func:`rewardlab.families.roundtrip.family_roundtrip`.
The checked export with its blow-up warning is :mod:`rewardlab.scaling`'s
(:func:`rewardlab.scaling.export_scaling_plugin`), which re-exports the names
here.

Examples
--------
>>> from rewardlab.families.base import get_family
>>> c = NormalizationConstants("recorded", "all", 1.0, 2.0, 4, None, 4, "blake2b-128:00")
>>> get_family("scaling") is StepsScaling, StepsScaling.from_preset("scale_only", constants=c).shift
(True, 0.0)
>>> "def get_reward(data, contiguous):" in StepsScaling(c).render()
True
"""

from __future__ import annotations

import dataclasses
import datetime as _dt

import numpy as np
import polars as pl

from rewardlab.analysis.scopes import RETURN_SCOPES
from rewardlab.analysis.stats import NormalizationConstants, normalization_constants
from rewardlab.core import columns
from rewardlab.core.errors import ParameterError
from rewardlab.core.fronts import Fix, Text
from rewardlab.core.spec import FrameSpec
from rewardlab.families.base import RewardFamily, register_family
from rewardlab.families.export import generated_line, render_family
from rewardlab.families.parameters import param_field
from rewardlab.families.provenance import Provenance
from rewardlab.families.rendering import KeyLiteral, float_literal
from rewardlab.sources.registry import spec_of
from rewardlab.sources.steps.reader import RECORDED

__all__ = ["RECORDED_KEY", "SCALE_LIMIT", "ScalingParams", "StepsScaling", "scaling_keys", "check_scaling_key",
           "constants_header"]

#: The root IN key under which step-table sources hand the recorded reward to steps plug-ins: the
#: candidate column ``reward_recorded`` itself (an extra column of the spec; see
#: :data:`rewardlab.sources.steps.RECORDED`).
RECORDED_KEY = RECORDED
#: The smallest std the constants may have: a smaller one makes ``(x - shift) / scale`` overflow for
#: ordinary rewards.
SCALE_LIMIT = 1e-300

_BODY = '''
def get_reward(data, contiguous):
    raw = data[_RL_KEY].to(_RL_torch.float64)
    data["next", "reward"] = (raw - _RL_SHIFT) / _RL_SCALE
'''


def scaling_keys(frame: pl.DataFrame, spec: FrameSpec) -> list[str]:
    """The columns a scaling plug-in can scale: numeric scalar columns the steps contract hands at the root.

    Those are the spec's states and its extra columns (``columns``) whose
    dtype is a number, one per step (not an Array or List, not Boolean).

    Examples
    --------
    >>> from rewardlab.core.spec import StateColumn
    >>> f = pl.DataFrame({"e": [0, 0], "obs": [[0.0, 1.0], [2.0, 3.0]], "action": [1, 0],
    ...                   "reward_recorded": [1.0, 5.0]}, schema_overrides={"obs": pl.Array(pl.Float64, 2)})
    >>> spec = FrameSpec(name="s", episode=("e",), states=(StateColumn("obs", 2, "float64", 0.0),),
    ...                  columns=("action", "reward_recorded"))
    >>> scaling_keys(f, spec)
    ['action', 'reward_recorded']
    """
    handed = dict.fromkeys([*spec.state_names, *spec.columns])
    return [c for c in handed if c in frame.columns and frame.schema[c].is_numeric()]


def check_scaling_key(frame: pl.DataFrame, key, *, spec: FrameSpec | None = None, name: str = "key") -> FrameSpec:
    """Refuse a ``key`` that is not a numeric scalar column the steps contract hands at the root; the spec.

    The one check of the key a scaling plug-in reads (:class:`StepsScaling`,
    :func:`rewardlab.scaling.export_scaling_plugin`, ``rewardlab export scaling --key``):
    the message names the key, what it is, and the columns that would work
    (:func:`scaling_keys`).  ``name`` is the argument's name as the user typed
    it.

    Examples
    --------
    >>> f = pl.DataFrame({"e": [0, 0], "reward_recorded": [1.0, 5.0], "flag": [True, False]})
    >>> check_scaling_key(f, "flag", spec=FrameSpec(name="s", episode=("e",), columns=("reward_recorded", "flag")))
    Traceback (most recent call last):
    ...
    rewardlab.core.errors.ParameterError: `key` should be a numeric scalar column the steps contract hands to plug-ins at the root (a state or an extra column of the spec); 'flag' holds Boolean. Received 'flag'. Columns that would work: reward_recorded.
    """
    if not isinstance(frame, pl.DataFrame):
        raise ParameterError("frame", "should be a polars DataFrame", type(frame).__name__)
    columns.check_name(key, what=name)
    here = spec_of(frame, spec)
    usable = scaling_keys(frame, here)
    hint = ("Columns that would work: " + ", ".join(usable) + ".") if usable else \
        "No column would: list a numeric column in the spec's columns (FrameSpec(columns=...))."
    what = "a numeric scalar column the steps contract hands to plug-ins at the root (a state or an extra " \
           "column of the spec)"
    if key not in frame.columns:
        raise ParameterError(name, f"should be a column of the frame ({what}); the data has none of that name",
                             key, hint=hint)
    if key not in here.columns and key not in here.state_names:
        raise ParameterError(name, f"should be handed to plug-ins: list it in the {here.name} spec's columns "
                             f"(FrameSpec(columns=...)); it should be {what}", key, hint=hint)
    dtype = frame.schema[key]
    if not dtype.is_numeric():
        kind = " (a vector per step)" if isinstance(dtype, (pl.Array, pl.List)) else ""
        raise ParameterError(name, f"should be {what}; {key!r} holds {dtype}{kind}", key, hint=hint)
    return here


def constants_header(c: NormalizationConstants) -> list[str]:
    """The header lines of an exported file that say where its constants come from (reward, scope, values,
    data, rows, fingerprint).

    Examples
    --------
    >>> constants_header(NormalizationConstants("recorded", "all", 1.0, 2.0, 4, None, 4, "blake2b-128:00"))[1]
    '  constants:   mean = 1.0, std = 2.0 (over 4 values)'
    """
    return [f"constants from: rewardlab.normalization_constants of reward {c.reward!r}, scope {c.scope!r}",
            f"  constants:   mean = {c.mean!r}, std = {c.std!r} (over {c.count:,} values)",
            f"  data:        {c.source if c.source else '(in memory)'}",
            f"  rows:        {c.rows:,}",
            f"  fingerprint: {c.fingerprint}"]


@dataclasses.dataclass(frozen=True)
class ScalingParams:
    """Parameters of :class:`StepsScaling` (validated on construction).

    ``mean`` and ``std`` are what the core's families normalize with,
    ``(raw - mean) / std``: here the shift (the constants' mean, or 0.0
    without centring) and the constants' std; ``provenance`` is the
    constants' data.

    Examples
    --------
    >>> c = NormalizationConstants("recorded", "all", 1.0, 2.0, 4, "t.parquet", 4, "blake2b-128:00")
    >>> p = ScalingParams(c, center=False)
    >>> p.mean, p.std, p.provenance.describe()
    (0.0, 2.0, 'dataset t.parquet, 4 rows, 4 steps, fingerprint blake2b-128:00 (rewardlab.normalization_constants of reward recorded, scope all)')
    """

    constants: NormalizationConstants | None = param_field(
        None, "Mean and std from rewardlab.normalization_constants, of the reward the key holds.")
    key: str = param_field(RECORDED_KEY, "The root IN key holding the raw reward (a numeric scalar column the "
                           "spec hands to plug-ins).")
    center: bool = param_field(True, "Subtract the mean (False for constants of a return scope: divide only).")

    def __post_init__(self):
        if not isinstance(self.constants, NormalizationConstants):
            hint = "Pass constants=rewardlab.normalization_constants(data, reward)." if self.constants is None \
                else None
            raise ParameterError("constants", "should be rewardlab.NormalizationConstants (from "
                                 "rewardlab.normalization_constants)", type(self.constants).__name__, hint=hint)
        columns.check_name(self.key, what="key")
        if not isinstance(self.center, bool):
            raise ParameterError("center", "should be True or False", self.center)
        if self.center and self.constants.scope in RETURN_SCOPES:
            raise ParameterError("center", f"should be False for constants of scope {self.constants.scope!r} "
                                 "(their mean is a per-episode sum; subtracting it from every step would "
                                 "shift returns by length x mean)", self.center,
                                 hint=Text(Fix("center", False, verb="Pass"), " to divide by the return std only, "
                                           "or measure constants over steps (scope='all')."))
        float_literal("constants.mean", float(self.constants.mean))
        if not float(self.constants.std) >= SCALE_LIMIT:
            raise ParameterError("constants.std", f"should be >= {SCALE_LIMIT} (rewards are divided by it)",
                                 self.constants.std)

    @property
    def mean(self) -> float:
        """What is subtracted: the constants' mean, or 0.0 without centring."""
        return float(self.constants.mean) if self.center else 0.0

    @property
    def std(self) -> float:
        """What the shifted reward is divided by: the constants' std."""
        return float(self.constants.std)

    @property
    def provenance(self) -> Provenance:
        """The constants' data as a :class:`~rewardlab.families.provenance.Provenance` (kind ``"dataset"``)."""
        c = self.constants
        return Provenance("dataset", detail=f"rewardlab.normalization_constants of reward {c.reward}, scope {c.scope}",
                          dataset=c.source, rows=c.rows, steps=c.count, scope=c.scope, fingerprint=c.fingerprint)

    def raw_extremes(self) -> list:
        """None known: the raw reward is the data's column (the export checks the data's scaled rewards)."""
        return []


@register_family
@dataclasses.dataclass(frozen=True)
class StepsScaling(RewardFamily):
    """``(data[key] - shift) / scale`` on every step, for the steps contract, from normalization constants.

    Parameters
    ----------
    constants : NormalizationConstants
        From :func:`rewardlab.normalization_constants` (of the reward the key
        holds, e.g. ``"recorded"``): ``scale`` is its ``std``, ``shift`` its ``mean``.
    key : str
        The root IN key holding the raw reward (a scalar extra column of the
        spec); default :data:`RECORDED_KEY`.
    center : bool
        Subtract the mean (default).  Constants of a return scope
        (``episode_return``, ``trajectory_return``) only scale: their mean
        is per episode, not per step, so ``center`` must be False there.

    Attributes
    ----------
    params : ScalingParams
        The same three values, as the family core holds a family's parameters.

    Examples
    --------
    >>> c = NormalizationConstants("recorded", "episode_return", 10.0, 4.0, 3, None, 30, "x")
    >>> StepsScaling(c, center=False).shift
    0.0
    >>> StepsScaling(c, center=False).with_params(key="reward_other").params.key
    'reward_other'
    """

    constants: NormalizationConstants
    key: str = RECORDED_KEY
    center: bool = True

    name = "scaling"
    title = "Steps-contract scaling"
    params_type = ScalingParams
    scope = "all"
    presets = {"standardize": {}, "scale_only": {"center": False}}
    export_for = "the steps contract"
    export_body = _BODY

    def __post_init__(self):
        object.__setattr__(self, "params", ScalingParams(self.constants, key=self.key, center=self.center))
        super().__post_init__()

    @classmethod
    def from_params(cls, params: ScalingParams) -> "StepsScaling":
        """The scaling holding ``params``' constants, key and center.

        Examples
        --------
        >>> c = NormalizationConstants("recorded", "all", 1.0, 2.0, 4, None, 4, "x")
        >>> StepsScaling.from_params(ScalingParams(c, center=False)) == StepsScaling(c, center=False)
        True
        """
        if not isinstance(params, ScalingParams):
            raise ParameterError("params", "should be a ScalingParams", type(params).__name__)
        return cls(params.constants, key=params.key, center=params.center)

    @property
    def shift(self) -> float:
        """What is subtracted: the constants' mean, or 0.0 without centering."""
        return self.params.mean

    @property
    def scale(self) -> float:
        """What the shifted reward is divided by: the constants' std."""
        return self.params.std

    # -- constants ---------------------------------------------------------------
    def with_constants(self, mean: float, std: float, *, provenance: Provenance | None = None):
        """Refused: a scaling's constants come from data, with the reward, scope and fingerprint its file names.

        Examples
        --------
        >>> StepsScaling(NormalizationConstants("a", "all", 0.0, 1.0, 1, None, 1, "x")).with_constants(0.0, 2.0)
        Traceback (most recent call last):
        rewardlab.core.errors.ParameterError: `constants` should come from rewardlab.normalization_constants (the exported file names their reward, scope, data and fingerprint). Received {'mean': 0.0, 'std': 2.0}. Use with_constants_from(data), or with_params(constants=NormalizationConstants(...)).
        """
        raise ParameterError("constants", "should come from rewardlab.normalization_constants (the exported file "
                             "names their reward, scope, data and fingerprint)", {"mean": mean, "std": std},
                             hint="Use with_constants_from(data), or "
                             "with_params(constants=NormalizationConstants(...)).")

    def with_constants_from(self, data) -> "StepsScaling":
        """A copy with constants ``data`` (NormalizationConstants), or measured on ``data`` over the same scope.

        Parameters
        ----------
        data : NormalizationConstants, or data :func:`rewardlab.normalization_constants` accepts
            Data is measured for the key's column over the current constants' scope.

        Examples
        --------
        >>> f = pl.DataFrame({"reward_recorded": [1.0, 3.0]})
        >>> s = StepsScaling(NormalizationConstants("recorded", "all", 0.0, 1.0, 1, None, 1, "x"))
        >>> s.with_constants_from(f).scale
        1.0
        """
        if not isinstance(data, NormalizationConstants):
            data = normalization_constants(data, self.key, scope=self.constants.scope)
        return self.with_params(constants=data)

    def parameter_summary(self) -> dict[str, object]:
        """The key and ``center`` (the constants are given apart: :meth:`describe`, the file's header).

        Examples
        --------
        >>> StepsScaling(NormalizationConstants("a", "all", 0.0, 1.0, 1, None, 1, "x")).parameter_summary()
        {'key': 'reward_recorded', 'center': True}
        """
        return {"key": self.key, "center": self.center}

    # -- frame path --------------------------------------------------------------
    def evaluate(self, frame: pl.DataFrame, *, spec: FrameSpec | None = None) -> tuple[np.ndarray, np.ndarray]:
        """The rewards and dones the plug-in gives on ``frame``, in NumPy (the library's side of the round trip).

        Returns
        -------
        reward : float64 array ``[N]``
        done : bool array ``[N]``
            True on each episode's last step (the plug-in leaves ``done`` as given).

        Examples
        --------
        >>> f = pl.DataFrame({"e": [0, 0], "reward_recorded": [1.0, 5.0]})
        >>> c = NormalizationConstants("recorded", "all", 3.0, 2.0, 2, None, 2, "x")
        >>> r, d = StepsScaling(c).evaluate(f, spec=FrameSpec(name="s", episode=("e",), columns=("reward_recorded",)))
        >>> r.tolist(), d.tolist()
        ([-1.0, 1.0], [False, True])
        """
        here = self.check_frame(frame, spec=spec)
        raw = frame[self.key].cast(pl.Float64).to_numpy()
        done = frame.select(here.episode_end(frame.columns)).to_series().to_numpy().astype(bool)
        return (raw - self.shift) / self.scale, done

    def check_frame(self, frame: pl.DataFrame, *, spec: FrameSpec | None = None) -> FrameSpec:
        """Refuse a frame whose key column a steps plug-in cannot read (:func:`check_scaling_key`); its spec.

        Examples
        --------
        >>> f = pl.DataFrame({"e": [0, 0], "reward_recorded": [1.0, 5.0]})
        >>> c = NormalizationConstants("recorded", "all", 3.0, 2.0, 2, None, 2, "x")
        >>> StepsScaling(c).check_frame(f, spec=FrameSpec(name="s", episode=("e",), columns=("reward_recorded",))).name
        's'
        """
        return check_scaling_key(frame, self.key, spec=spec)

    # -- plug-in -----------------------------------------------------------------
    def get_reward(self, data, contiguous: bool) -> None:
        """Run the exported file's ``get_reward`` on a steps-contract TensorDict (the same code as the file).

        Examples
        --------
        >>> StepsScaling(c).get_reward(td, False)  # doctest: +SKIP
        """
        namespace: dict = {}
        text = self.render(created=_dt.datetime(2000, 1, 1, tzinfo=_dt.timezone.utc))
        exec(compile(text, "<scaling>", "exec"), namespace)
        namespace["get_reward"](data, contiguous)

    # -- export ------------------------------------------------------------------
    @property
    def export_formula(self) -> tuple[str, ...]:
        """The header's ``reward:`` line."""
        return (f"(data[{self.key!r}] - shift) / scale in float64 on every step; done left as given",)

    def export_literals(self) -> dict[str, object]:
        """``_RL_KEY`` (the key, a :class:`~rewardlab.families.rendering.KeyLiteral`), ``_RL_SHIFT``, ``_RL_SCALE``.

        Examples
        --------
        >>> StepsScaling(NormalizationConstants("a", "all", 0.5, 2.0, 1, None, 1, "x")).export_literals()["_RL_SHIFT"]
        0.5
        """
        return {"_RL_KEY": KeyLiteral(self.key), "_RL_SHIFT": self.shift, "_RL_SCALE": self.scale}

    def export_header(self, *, created, source=None, state=None) -> list[str]:
        """The header its files have always had: what the file computes, then the constants' origin.

        Examples
        --------
        >>> c = NormalizationConstants("recorded", "all", 0.5, 2.0, 4, None, 4, "blake2b-128:ab")
        >>> StepsScaling(c).export_header(created=_dt.datetime(2026, 1, 1, tzinfo=_dt.timezone.utc))[5]
        "key:         'reward_recorded' (a root IN key of the steps contract)"
        """
        header = [
            generated_line(f"Reward plug-in for {self.export_for}", created),
            "Self-contained (imports torch only).  To change it, measure the constants again in rewardlab",
            "and export again; the literals below are exactly rewardlab's values.",
            "",
            "reward:      " + self.export_formula[0],
            f"key:         {self.key!r} (a root IN key of the steps contract)",
            f"shift:       {self.shift!r} ({'the mean' if self.center else 'not centered'})",
            f"scale:       {self.scale!r} (the population std)",
            *constants_header(self.constants),
        ]
        if source is not None:
            header.append(f"source:      {source}")
        if state is not None:
            header.append(f"state:       {state}")
        return header

    def render(self, *, created: _dt.datetime | None = None, source: str | None = None) -> str:
        """The plug-in file's text (:func:`rewardlab.families.export.render_family`); checks every literal first.

        Examples
        --------
        >>> c = NormalizationConstants("recorded", "all", 0.5, 2.0, 4, "t.parquet", 4, "blake2b-128:ab")
        >>> text = StepsScaling(c).render(created=_dt.datetime(2026, 1, 1, tzinfo=_dt.timezone.utc))
        >>> [line for line in text.splitlines() if line.startswith("_RL_")]
        ["_RL_KEY = 'reward_recorded'", '_RL_SHIFT = 0.5', '_RL_SCALE = 2.0']
        """
        return render_family(self, source=source, created=created)
