"""The base class of every tunable reward family, and the registry domains register their families on.

A *family* is a reward formula with tunable parameters (a frozen dataclass,
see :mod:`rewardlab.families.parameters`).  :class:`RewardFamily` holds what
does not depend on the domain: construction from presets and parameter
changes (a typo is refused), normalization constants typed or fitted on data
with their :class:`~rewardlab.families.provenance.Provenance` and staleness,
one-line descriptions, and the whole-frame evaluation
``(raw - mean) / std`` over the family's scope.  A domain's subclass
provides the rest: how data is prepared (:meth:`RewardFamily.prepare`), the
raw reward (:meth:`RewardFamily.raw_values`), the plug-in contract
(:meth:`RewardFamily.get_reward`) and the exported file's code.

A domain's *prepared* object (e.g. the mahjong families' ``PreparedFrame``)
provides ``n_rows``, ``rows(scope)`` (the rows in a scope, ``[R]`` int64),
``done(scope)`` (``[n_rows]`` bool), ``source`` (the data's path(s) or
None) and ``fingerprint`` (the content fingerprint of what the families read).

Examples
--------
>>> from rewardlab.domains.mahjong.families import Ranking
>>> isinstance(Ranking.from_preset("top"), RewardFamily), get_family("ranking") is Ranking
(True, True)
"""

from __future__ import annotations

import dataclasses
from typing import ClassVar

import numpy as np
import polars as pl

from rewardlab.core import columns
from rewardlab.core.errors import ParameterError
from rewardlab.families.parameters import check_normalization
from rewardlab.families.provenance import Provenance, constants_stale, population_constants
from rewardlab.families.rendering import check_reward_range, format_value

__all__ = ["RewardFamily", "register_family", "registered_families", "get_family"]


class RewardFamily:
    """Base of the reward families: a frozen dataclass holding one ``params`` object.

    Subclasses set :attr:`name`, :attr:`title`, :attr:`params_type`,
    :attr:`scope`, :attr:`presets`, and implement :meth:`prepare`,
    :meth:`raw_values` (NumPy, over the domain's prepared object),
    :meth:`get_reward` (the plug-in contract) and
    :meth:`export_literals` / :attr:`export_body` / :attr:`export_formula` /
    :attr:`export_helpers` / :attr:`export_for` (the exported file,
    :func:`rewardlab.families.export.render_family`).  A family built from
    other arguments than one ``params`` object overrides :meth:`from_params`;
    one whose file has a header of its own overrides :meth:`export_header`.

    Examples
    --------
    >>> from rewardlab.domains.mahjong.families import Ranking
    >>> Ranking.from_preset("top_two").params.vector
    (1.0, 1.0, -1.0, -1.0)
    """

    name: ClassVar[str]
    title: ClassVar[str]
    params_type: ClassVar[type]
    #: The steps the family rewards (a scope of :mod:`rewardlab.analysis.stats`); 0.0 elsewhere.
    scope: ClassVar[str]
    presets: ClassVar[dict[str, dict]] = {}
    #: Source of ``get_reward`` in the exported file; uses the names from :meth:`export_literals`.
    export_body: ClassVar[str]
    #: What the exported file is a plug-in for, in its header (e.g. ``"kanachan"``).
    export_for: ClassVar[str]
    #: The exported file's ``reward:`` header lines: what it computes (:mod:`rewardlab.families.export`).
    export_formula: ClassVar[tuple[str, ...]] = ()
    #: Fixed helper code of the exported file, before ``get_reward`` (``_RL_`` names; none by default).
    export_helpers: ClassVar[str] = ""

    params: object  # set by the dataclass subclasses

    def __post_init__(self):
        if not isinstance(self.params, self.params_type):
            raise ParameterError("params", f"should be a {self.params_type.__name__}",
                                 type(self.params).__name__)

    # -- construction --------------------------------------------------------
    @classmethod
    def from_preset(cls, preset: str, **changes):
        """The family with a named preset's parameters (``changes`` override fields).

        Examples
        --------
        >>> from rewardlab.domains.mahjong.families import Ranking
        >>> Ranking.from_preset("tenhou_houou_7dan").params.vector
        (90.0, 45.0, 0.0, -135.0)
        """
        key = preset.replace("-", "_") if isinstance(preset, str) else preset
        if key not in cls.presets:
            raise ParameterError("preset", f"should be one of {', '.join(cls.presets)} "
                                 f"for the {cls.name} family", preset)
        cls._check_fields(changes)
        return cls.from_params(cls.params_type(**{**cls.presets[key], **changes}))

    @classmethod
    def from_params(cls, params):
        """The family holding ``params`` (a :attr:`params_type`): ``cls(params)``.

        What :meth:`from_preset` and :meth:`with_params` build with; a family
        whose constructor takes other arguments (e.g.
        :class:`rewardlab.families.scaling.StepsScaling`) overrides it.

        Examples
        --------
        >>> from rewardlab.domains.mahjong.families import Points
        >>> Points.from_params(Points.from_preset("thousands").params).params.divisor
        1000.0
        """
        return cls(params)

    def with_params(self, **changes):
        """A copy with some parameters changed (validated again).

        The normalization constants and their provenance are kept; refill
        them with :meth:`with_constants_from` after changing the formula.
        A name that is not a parameter is refused (no typo passes silently).

        Examples
        --------
        >>> from rewardlab.domains.mahjong.families import Ranking
        >>> Ranking.from_preset("top").with_params(vector=(1, 0, 0, -1)).params.vector
        (1.0, 0.0, 0.0, -1.0)
        >>> Ranking.from_preset("top").with_params(vectr=(1, 0, 0, -1))
        Traceback (most recent call last):
        rewardlab.core.errors.ParameterError: `vectr` should be a parameter of the ranking family: vector, mean, std, provenance. Received (1, 0, 0, -1).
        """
        self._check_fields(changes)
        return type(self).from_params(dataclasses.replace(self.params, **changes))

    @classmethod
    def _check_fields(cls, changes: dict) -> None:
        names = [f.name for f in dataclasses.fields(cls.params_type)]
        for key, value in changes.items():
            if key not in names:
                raise ParameterError(key, f"should be a parameter of the {cls.name} family: "
                                     + ", ".join(names), value)

    def with_constants(self, mean: float, std: float, *, provenance: Provenance | None = None):
        """A copy with normalization constants ``mean``, ``std`` (provenance: typed by default).

        Examples
        --------
        >>> from rewardlab.domains.mahjong.families import Points
        >>> Points.from_preset("raw").with_constants(25000, 9000).params.provenance.kind
        'typed'
        """
        mean, std = check_normalization(mean, std)
        provenance = Provenance.typed() if provenance is None else provenance
        if not isinstance(provenance, Provenance):
            raise ParameterError("provenance", "should be a Provenance", provenance)
        return self.with_params(mean=mean, std=std, provenance=provenance)

    def with_constants_from(self, data):
        """A copy whose mean and std are the population mean and std of the raw reward on ``data``.

        Computed over the family's scope (e.g. the end-of-game steps, or for
        the mahjong per-round family the end-of-round and end-of-game steps).
        The provenance records the dataset, its row count, the step count and
        a content fingerprint of the data the rewards depend on.

        Parameters
        ----------
        data : data the family's :meth:`prepare` accepts, its prepared object, or NormalizationConstants
            A dataset, or constants already computed with
            :func:`rewardlab.analysis.stats.normalization_constants` over this family's
            *raw* reward (mean 0, std 1) in the family's scope.

        Examples
        --------
        >>> fam = Ranking.from_preset("top").with_constants_from("data/sample.tsv.gz")  # doctest: +SKIP
        >>> fam.params.std  # doctest: +SKIP
        0.8660254037844386
        """
        from rewardlab.analysis.stats import NormalizationConstants

        if isinstance(data, NormalizationConstants):
            if data.scope != self.scope:
                raise ParameterError("data.scope", f"should be {self.scope!r} for the {self.name} family",
                                     data.scope)
            prov = Provenance("dataset", detail=f"from rewardlab.analysis.stats, values {data.fingerprint}",
                              dataset=data.source, rows=data.rows, steps=data.count, scope=data.scope,
                              fitted_for=self.parameter_key())
            return self.with_constants(data.mean, data.std, provenance=prov)
        check_reward_range(self.params, normalized=False)  # name the parameter, not an overflowing std
        prepared = self.prepare(data)
        raw = self.raw_values(prepared)
        mean, std = population_constants(raw)
        if not std > 0:
            raise ParameterError("std", "should be > 0, but the raw reward is constant on this data", std,
                                 hint="Every step in scope has the same raw reward; "
                                 "change the parameters or type the constants.")
        prov = Provenance("dataset", dataset=prepared.source, rows=prepared.n_rows, steps=int(raw.size),
                          scope=self.scope, fingerprint=prepared.fingerprint, fitted_for=self.parameter_key())
        return self.with_params(mean=mean, std=std, provenance=prov)

    # -- frame path (NumPy) ----------------------------------------------------
    def prepare(self, data):
        """Gather what the family reads from ``data`` once: the domain's prepared object (``data`` if it is one).

        Examples
        --------
        >>> prepared = Ranking().prepare(frame)  # doctest: +SKIP
        """
        raise NotImplementedError(f"{type(self).__name__}.prepare")  # pragma: no cover - abstract

    def raw_values(self, prepared) -> np.ndarray:
        """The raw (unnormalized) float64 reward at the rows in scope, ``[G]`` or ``[R]``.

        Examples
        --------
        >>> Ranking.from_preset("top").raw_values(prepared)[:4]  # doctest: +SKIP
        array([-1., -1.,  1., -1.])
        """
        raise NotImplementedError(f"{type(self).__name__}.raw_values")  # pragma: no cover - abstract

    def evaluate(self, prepared) -> tuple[np.ndarray, np.ndarray]:
        """Rewards and done flags for every row, from the domain's prepared object (or data).

        Returns
        -------
        reward : float64 array ``[n_rows]``
            ``(raw - mean) / std`` on the rows in scope, ``0.0`` elsewhere.
        done : bool array ``[n_rows]``

        Examples
        --------
        >>> reward, done = Ranking.from_preset("top").evaluate(prepared)  # doctest: +SKIP
        """
        prepared = self.prepare(prepared)
        p = self.params
        reward = np.zeros(prepared.n_rows, dtype=np.float64)
        reward[prepared.rows(self.scope)] = (self.raw_values(prepared) - p.mean) / p.std
        return reward, prepared.done(self.scope)

    def with_columns(self, frame: pl.DataFrame, name: str, *, prepared=None) -> pl.DataFrame:
        """``frame`` with columns ``reward_<name>`` (Float64) and ``done_<name>`` (Boolean) added.

        Examples
        --------
        >>> Ranking.from_preset("top").with_columns(frame, "top").columns[-2:]  # doctest: +SKIP
        ['reward_top', 'done_top']
        """
        reward, done = self.evaluate(frame if prepared is None else prepared)
        if reward.shape[0] != frame.height:
            raise ParameterError("prepared", f"should describe a frame of {frame.height} rows",
                                 reward.shape[0])
        return frame.with_columns(pl.Series(columns.reward_column(name), reward),
                                  pl.Series(columns.done_column(name), done))

    # -- plug-in contract --------------------------------------------------------
    def get_reward(self, data, contiguous: bool) -> None:
        """Set ``data["next", "reward"]`` and ``data["next", "done"]`` like the exported plug-in.

        Examples
        --------
        >>> Ranking.from_preset("top").get_reward(td, False)  # doctest: +SKIP
        """
        raise NotImplementedError(f"{type(self).__name__}.get_reward")  # pragma: no cover - abstract

    # -- export ----------------------------------------------------------------
    def export_literals(self) -> dict[str, object]:
        """The module-level constants of the exported file: ``{_RL_NAME: float | int | tuple}``.

        Examples
        --------
        >>> from rewardlab.domains.mahjong.families import Ranking
        >>> Ranking.from_preset("top").export_literals()["_RL_VECTOR"]
        (1.0, -1.0, -1.0, -1.0)
        """
        p = self.params
        return {"_RL_MEAN": p.mean, "_RL_STD": p.std}

    def export_header(self, *, created, source=None, state=None) -> list[str] | None:
        """The exported file's header lines, or None for the core's (the default).

        The core's header (:func:`rewardlab.families.export.family_header`:
        the family, its parameters, constants and their provenance, the
        formula) suits most families; a family whose exported file has always
        had a header of its own returns it here, so the file's text stays as it
        was (``created``: the header's time, already checked; ``source`` and
        ``state``: notes, already checked).

        Examples
        --------
        >>> from rewardlab.domains.mahjong.families import Points
        >>> Points.from_preset("raw").export_header(created=None) is None
        True
        """
        return None

    def parameter_key(self) -> str:
        """The family and its tunable parameters in one line: what fitted constants are fitted for.

        Examples
        --------
        >>> from rewardlab.domains.mahjong.families import Points
        >>> Points.from_preset("thousands").parameter_key()
        'points: offset=25000.0, divisor=1000.0'
        """
        return f"{self.name}: " + ", ".join(f"{k}={format_value(v)}" for k, v in self.parameter_summary().items())

    @property
    def constants_stale(self) -> bool:
        """True when mean and std were fitted (data or the wiki's recipe) for other parameters than these.

        Constants typed by the user, the default (0, 1), and fitted constants
        whose provenance does not record what they were fitted for are not
        stale (:func:`rewardlab.families.provenance.constants_stale`).

        Examples
        --------
        >>> from rewardlab.domains.mahjong.families import Ranking
        >>> fam = Ranking.from_preset("top").with_seed_constants()
        >>> fam.constants_stale, fam.with_params(vector=(2, 0, 0, -1)).constants_stale
        (False, True)
        """
        return constants_stale(self.params.provenance, self.parameter_key())

    def parameter_summary(self) -> dict[str, object]:
        """The tunable parameters (without mean, std, provenance), for headers and displays.

        Examples
        --------
        >>> from rewardlab.domains.mahjong.families import Points
        >>> Points.from_preset("thousands").parameter_summary()
        {'offset': 25000.0, 'divisor': 1000.0}
        """
        return {f.name: getattr(self.params, f.name) for f in dataclasses.fields(self.params)
                if f.name not in ("mean", "std", "provenance")}

    def describe(self) -> str:
        """One paragraph: family, parameters, constants and their provenance.

        Examples
        --------
        >>> print(Ranking.from_preset("top").describe())  # doctest: +SKIP
        """
        params = ", ".join(f"{k}={format_value(v)}" for k, v in self.parameter_summary().items())
        p = self.params
        return (f"{self.title} ({self.name}): {params}; mean={p.mean!r}, std={p.std!r} "
                f"from {p.provenance.describe()}")


# ---------------------------------------------------------------------------
# The registry: every domain's families, by name
# ---------------------------------------------------------------------------

#: Registered family classes by name, in registration order (see :func:`register_family`).
FAMILY_REGISTRY: dict[str, type[RewardFamily]] = {}


def register_family(cls: type[RewardFamily]) -> type[RewardFamily]:
    """Register a family class under its :attr:`RewardFamily.name` (usable as a class decorator).

    A name is taken once: registering another class under a registered name
    is refused (the same class, or a reload of its module, replaces it).
    A domain's families register when the domain's module is imported.

    Examples
    --------
    >>> from rewardlab.domains.mahjong.families import Points
    >>> register_family(Points) is Points
    True
    """
    if not (isinstance(cls, type) and issubclass(cls, RewardFamily)):
        raise ParameterError("cls", "should be a subclass of rewardlab.families.RewardFamily", cls)
    name = getattr(cls, "name", None)
    if not isinstance(name, str) or not name.isidentifier():
        raise ParameterError("cls.name", "should be an identifier naming the family", name)
    held = FAMILY_REGISTRY.get(name)
    if held is not None and (held.__module__, held.__qualname__) != (cls.__module__, cls.__qualname__):
        raise ParameterError("cls.name", f"should be a name no other family holds ({held.__module__}."
                             f"{held.__qualname__} is registered as {name!r})", name)
    FAMILY_REGISTRY[name] = cls
    return cls


def registered_families() -> dict[str, type[RewardFamily]]:
    """The registered family classes by name (a copy), in registration order.

    Examples
    --------
    >>> import rewardlab.domains.mahjong.families.presets
    >>> {"ranking", "points", "ranking_points", "round_delta"} <= set(registered_families())
    True
    """
    return dict(FAMILY_REGISTRY)


def get_family(name: str) -> type[RewardFamily]:
    """The registered family class called ``name`` (``-`` read as ``_``).

    Examples
    --------
    >>> import rewardlab.domains.mahjong.families.presets
    >>> get_family("round-delta").__name__
    'RoundDelta'
    """
    key = name.replace("-", "_") if isinstance(name, str) else name
    if key not in FAMILY_REGISTRY:
        raise ParameterError("family", "should be one of " + ", ".join(FAMILY_REGISTRY), name,
                             hint="A domain's families are registered when its module is imported "
                             "(e.g. rewardlab.domains.mahjong.families; the steps scaling: "
                             "rewardlab.families.scaling).")
    return FAMILY_REGISTRY[key]
