"""What every reward family shares: parameter fields, provenance, the prepared frame, the base class.

A *family* is a reward formula with tunable parameters (a frozen dataclass).
Every family evaluates the same numbers three ways, bit for bit:

* on a kanachan TensorDict batch, in torch (:meth:`RewardFamily.get_reward`,
  the plug-in contract: it sets ``("next", "reward")`` and ``("next", "done")``);
* on a whole frame, in NumPy, from a :class:`PreparedFrame` that holds the
  final ranks, final scores and round deltas once, so re-tuning a parameter
  is a gather and an element-wise formula, not a re-run
  (:meth:`RewardFamily.evaluate`);
* in the stand-alone file written by :func:`rewardlab.export_plugin`.

Bit-identity comes from doing the same IEEE operations in the same order in
each path: the family's *raw* reward is gathered or computed exactly
(integers, table look-ups, one float64 subtraction and one division), then
normalized as ``(raw - mean) / std`` in float64; rows outside the family's
scope get ``0.0``.

Examples
--------
>>> from rewardlab.domains.mahjong.families import Ranking
>>> fam = Ranking.from_preset("top")
>>> prepared = fam.prepare(frame)  # doctest: +SKIP
>>> reward, done = fam.evaluate(prepared)  # doctest: +SKIP
"""

from __future__ import annotations

import dataclasses
import math
import numbers
from pathlib import Path
from typing import ClassVar, Iterable

import numpy as np
import polars as pl
import torch

from rewardlab.sources.kanachan import schema as S
from rewardlab.core import columns
from rewardlab.core.errors import FrameError, ParameterError, check_int
from rewardlab.domains.mahjong.families.prepared import SCOPE_GAME, SCOPE_ROUND, PreparedFrame, prepare_frame

__all__ = [
    "affine_extremes",
    "SCOPE_WORDS",
    "td_seat",
    "td_ranks",
    "td_game_rows",
    "Provenance",
    "PreparedFrame",
    "RewardFamily",
    "param_field",
    "field_hints",
    "prepare_frame",
    "population_constants",
    "REWARD_LIMIT",
    "SCORE_RANGE",
    "check_reward_range",
]

#: What each scope (:data:`SCOPE_GAME`, :data:`SCOPE_ROUND`) rewards, in words.
SCOPE_WORDS = {SCOPE_GAME: "end-of-game steps", SCOPE_ROUND: "end-of-round and end-of-game steps"}

#: Largest magnitude a family's raw or normalized reward may reach: far beyond any useful reward,
#: and small enough that means, variances and expected rewards over 10**12 steps stay finite
#: in float64 (a square of 1e154 already overflows).
REWARD_LIMIT = 1e100
#: The final scores and round deltas a plug-in can receive (``results`` is Int32).
SCORE_RANGE = (-(2**31), 2**31 - 1)


# ---------------------------------------------------------------------------
# Fields: docs and widget hints in the dataclass metadata
# ---------------------------------------------------------------------------


def param_field(default, doc: str, *, min: float | None = None, max: float | None = None,
                step: float | None = None):
    """A dataclass field carrying its doc and widget hints (``min``, ``max``, ``step``) as metadata.

    Examples
    --------
    >>> import dataclasses
    >>> @dataclasses.dataclass(frozen=True)
    ... class P:
    ...     std: float = param_field(1.0, "Divide by this.", min=0.01, max=10.0, step=0.01)
    >>> dataclasses.fields(P)[0].metadata["max"]
    10.0
    """
    meta = {"doc": doc, "min": min, "max": max, "step": step}
    if isinstance(default, (list, dict, set)):
        raise TypeError("use an immutable default (tuple) for a frozen parameter field")
    return dataclasses.field(default=default, metadata=meta)


def field_hints(params_type) -> dict[str, dict]:
    """The doc and widget hints of each field of a parameter dataclass, by field name.

    Examples
    --------
    >>> from rewardlab.domains.mahjong.families import RankingParams
    >>> field_hints(RankingParams)["std"]["min"] > 0
    True
    """
    return {f.name: dict(f.metadata) for f in dataclasses.fields(params_type) if f.metadata}


# ---------------------------------------------------------------------------
# Validation helpers (messages: name, rule, value)
# ---------------------------------------------------------------------------


def check_real(name: str, value, *, hint: str | None = None) -> float:
    """``float(value)`` for a finite real number (not bool), else ParameterError (with ``hint``).

    Examples
    --------
    >>> check_real("mean", 2)
    2.0
    """
    if isinstance(value, (bool, np.bool_)) or not isinstance(value, numbers.Real):
        raise ParameterError(name, "should be a real number", value, hint=hint)
    out = float(value)
    if not math.isfinite(out):
        raise ParameterError(name, "should be a finite number (not NaN or infinite)", value, hint=hint)
    return out


def check_vector(name: str, value, length: int = 4) -> tuple[float, ...]:
    """A tuple of ``length`` finite floats, else ParameterError naming the entry.

    Examples
    --------
    >>> check_vector("vector", [1, 0, 0, -1])
    (1.0, 0.0, 0.0, -1.0)
    """
    if isinstance(value, (str, bytes)) or not isinstance(value, Iterable):
        raise ParameterError(name, f"should be a sequence of {length} numbers (one per final rank)", value)
    items = list(value.tolist() if isinstance(value, (np.ndarray, torch.Tensor)) else value)
    if len(items) != length:
        raise ParameterError(name, f"should have {length} entries (one per final rank), not {len(items)}",
                             value)
    return tuple(check_real(f"{name}[{k}]", v) for k, v in enumerate(items))


def check_normalization(mean, std) -> tuple[float, float]:
    """Validated ``(mean, std)``: finite, ``std > 0``.

    Examples
    --------
    >>> check_normalization(0, 2)
    (0.0, 2.0)
    """
    hint = "Type a finite number, or fit the constants from data."
    mean = check_real("mean", mean, hint=hint)
    std = check_real("std", std, hint=hint)
    if std <= 0:
        raise ParameterError("std", "should be > 0 (rewards are divided by it)", std,
                             hint="Use std=1.0 for no scaling, or fill it from data.")
    return mean, std


# ---------------------------------------------------------------------------
# Provenance of the normalization constants
# ---------------------------------------------------------------------------

_PROVENANCE_KINDS = ("default", "typed", "seed", "dataset")


@dataclasses.dataclass(frozen=True)
class Provenance:
    """Where a family's normalization constants (mean, std) came from.

    Attributes
    ----------
    kind : str
        ``"default"`` (mean 0, std 1: no normalization), ``"typed"`` (given
        by the user), ``"seed"`` (the recipe of the example in kanachan's wiki, e.g. the mean and
        sample std of the rank vector), ``"dataset"`` (measured on data).
    detail : str
        A short free-text note (the recipe, for ``"seed"``).
    dataset : str or None
        The dataset's path(s) or source files, for ``"dataset"``.
    rows : int or None
        Rows (transitions) in the dataset.
    steps : int or None
        Steps the constants were computed over (the family's scope).
    scope : str or None
        ``"end_of_game"``, or ``"end_of_round"`` (the end of every round,
        including the game's last step), as in :mod:`rewardlab.analysis.stats`.
    fingerprint : str or None
        Content fingerprint of the data the rewards depend on
        (``sha256:`` + 16 hex digits, see :class:`PreparedFrame`).
    fitted_for : str or None
        For ``"dataset"`` and ``"seed"``: the family and parameters the
        constants were fitted for (:meth:`RewardFamily.parameter_key`), so
        constants kept after a parameter change are recognised as stale
        (:attr:`RewardFamily.constants_stale`).

    Examples
    --------
    >>> Provenance.typed().describe()
    'typed by the user'
    """

    kind: str = "default"
    detail: str = ""
    dataset: str | None = None
    rows: int | None = None
    steps: int | None = None
    scope: str | None = None
    fingerprint: str | None = None
    fitted_for: str | None = None

    def __post_init__(self):
        if self.kind not in _PROVENANCE_KINDS:
            raise ParameterError("kind", "should be one of " + ", ".join(map(repr, _PROVENANCE_KINDS)),
                                 self.kind)
        for name in ("detail", "dataset", "scope", "fingerprint", "fitted_for"):
            value = getattr(self, name)
            if value is not None and not isinstance(value, str):
                raise ParameterError(name, "should be a string or None", value)
        for name in ("rows", "steps"):
            value = getattr(self, name)
            if value is not None:
                check_int(name, value, low=0, integral_float=True)

    @classmethod
    def default(cls) -> "Provenance":
        """No normalization (mean 0, std 1)."""
        return cls("default")

    @classmethod
    def typed(cls, detail: str = "") -> "Provenance":
        """Constants typed by the user."""
        return cls("typed", detail)

    @classmethod
    def seed(cls, detail: str, *, fitted_for: str | None = None) -> "Provenance":
        """Constants from the recipe of kanachan's wiki example (``fitted_for``: the parameters it was applied to)."""
        return cls("seed", detail, fitted_for=fitted_for)

    def describe(self) -> str:
        """One line of text for headers, widgets and the CLI.

        Examples
        --------
        >>> Provenance.seed("vector mean / sample std").describe()
        "the wiki's recipe: vector mean / sample std"
        """
        if self.kind == "default":
            return "default (mean 0, std 1: no normalization)"
        if self.kind == "typed":
            return "typed by the user" + (f" ({self.detail})" if self.detail else "")
        if self.kind == "seed":
            return f"the wiki's recipe: {self.detail}" if self.detail else "the wiki's recipe"
        parts = [f"dataset {self.dataset}" if self.dataset else "dataset (in memory)"]
        if self.rows is not None:
            parts.append(f"{self.rows:,} rows")
        if self.steps is not None:
            parts.append(f"{self.steps:,} {SCOPE_WORDS.get(self.scope, 'steps')}")
        if self.fingerprint:
            parts.append(f"fingerprint {self.fingerprint}")
        text = ", ".join(parts)
        return text + (f" ({self.detail})" if self.detail else "")


def population_constants(values: np.ndarray) -> tuple[float, float]:
    """Mean and population standard deviation (ddof 0) of ``values``, via :class:`rewardlab.analysis.stats.Moments`.

    Examples
    --------
    >>> population_constants(np.array([1.0, -1.0, -1.0, -1.0]))
    (-0.5, 0.8660254037844386)
    """
    from rewardlab.analysis.stats import Moments

    moments = Moments.of(np.asarray(values, dtype=np.float64))
    if moments.count == 0:
        raise FrameError("no steps to compute normalization constants from",
                         hint="The dataset has no complete episodes.")
    return moments.mean, moments.std


# ---------------------------------------------------------------------------
# torch pieces of the TensorDict path (the exported file repeats them verbatim)
# ---------------------------------------------------------------------------


def td_seat(data, rows: torch.Tensor) -> torch.Tensor:
    """The acting player's seat (``sparse[:, 6] - 71``) on ``rows`` of a batch; ``[R] -> [R]`` int64.

    Examples
    --------
    >>> td_seat(batch, rows)  # doctest: +SKIP
    tensor([0, 3])
    """
    seat = data["sparse"][rows, S.SEAT_POSITION].to(torch.int64) - S.SEAT_OFFSET
    if bool(((seat < 0) | (seat > 3)).any()):
        raise FrameError("sparse[:, 6] - 71 should be a seat 0-3 on the rows a reward is given "
                         f"(found {sorted(set(seat.tolist()))[:4]})")
    return seat


def td_ranks(scores: torch.Tensor, seat: torch.Tensor) -> torch.Tensor:
    """Ranks, kanachan's rule: ``#{j < seat: s_j >= s} + #{j > seat: s_j > s}``; ``[G, 4], [G] -> [G]``.

    Examples
    --------
    >>> td_ranks(torch.tensor([[100, 300, 300, 0]]), torch.tensor([2])).tolist()
    [1]
    """
    own = scores.gather(1, seat.unsqueeze(1))
    seats = torch.arange(4).unsqueeze(0)
    mine = seat.unsqueeze(1)
    higher = ((seats < mine) & (scores >= own)) | ((seats > mine) & (scores > own))
    return higher.sum(1)


def td_game_rows(data):
    """``(end_of_game, rows, seat, final scores [G, 4] int64)`` of a batch.

    Examples
    --------
    >>> end_of_game, rows, seat, scores = td_game_rows(batch)  # doctest: +SKIP
    """
    end_of_game = data["next", "end_of_game"]
    rows = end_of_game.nonzero().squeeze(1)
    seat = td_seat(data, rows)
    scores = data["next", "results"][rows, 4:8].to(torch.int64)
    return end_of_game, rows, seat, scores


def end_of_game_export_body(raw: str) -> str:
    """``get_reward`` source for an exported end-of-game family.

    ``raw`` are the lines (4-space indented) that compute ``raw``, one value
    per end-of-game row, from ``rows``, ``seat`` and ``scores`` (final
    scores of the four seats); the rest is the same for every such family.

    Examples
    --------
    >>> print(end_of_game_export_body("    raw = scores[:, 0].to(_RL_torch.float64)").splitlines()[1])
    def get_reward(data, contiguous):
    """
    return f'''
def get_reward(data, contiguous):
    end_of_game = data["next", "end_of_game"]
    rows = end_of_game.nonzero().squeeze(1)
    seat = _RL_seat(data, rows)
    scores = data["next", "results"][rows, 4:8].to(_RL_torch.int64)
{raw.strip(chr(10))}
    reward = _RL_torch.zeros(end_of_game.shape[0], dtype=_RL_torch.float64)
    reward[rows] = (raw - _RL_MEAN) / _RL_STD
    data["next", "reward"] = reward
    data["next", "done"] = end_of_game.clone()
'''


# ---------------------------------------------------------------------------
# The base class
# ---------------------------------------------------------------------------


class RewardFamily:
    """Base of the reward families: a frozen dataclass holding one ``params`` object.

    Subclasses set :attr:`name`, :attr:`params_type`, :attr:`scope`,
    :attr:`presets`, and implement :meth:`_raw_frame` (NumPy, over a
    :class:`PreparedFrame`), :meth:`_raw_td` (torch, over a batch) and
    :meth:`export_literals` / :attr:`export_body` (the exported file).

    Examples
    --------
    >>> from rewardlab.domains.mahjong.families import Ranking
    >>> Ranking.from_preset("top_two").params.vector
    (1.0, 1.0, -1.0, -1.0)
    """

    name: ClassVar[str]
    title: ClassVar[str]
    params_type: ClassVar[type]
    scope: ClassVar[str] = SCOPE_GAME
    presets: ClassVar[dict[str, dict]] = {}
    #: Source of ``get_reward`` in the exported file; uses the names from :meth:`export_literals`.
    export_body: ClassVar[str]

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
        return cls(cls.params_type(**{**cls.presets[key], **changes}))

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
        return type(self)(dataclasses.replace(self.params, **changes))

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

        Computed over the family's scope: the end-of-game steps, or for the
        per-round family the end-of-round and end-of-game steps.  The
        provenance records the dataset, its row count, the step count and a
        content fingerprint of the data the rewards depend on.

        Parameters
        ----------
        data : DataFrame, LazyFrame, path(s), PreparedFrame, or NormalizationConstants
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
        prepared = data if isinstance(data, PreparedFrame) else prepare_frame(data)
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
    def prepare(self, data) -> PreparedFrame:
        """Gather what the families read from ``data`` once (see :func:`prepare_frame`).

        Examples
        --------
        >>> prepared = Ranking().prepare(frame)  # doctest: +SKIP
        """
        return data if isinstance(data, PreparedFrame) else prepare_frame(data)

    def raw_values(self, prepared: PreparedFrame) -> np.ndarray:
        """The raw (unnormalized) float64 reward at the rows in scope, ``[G]`` or ``[R]``.

        Examples
        --------
        >>> Ranking.from_preset("top").raw_values(prepared)[:4]  # doctest: +SKIP
        array([-1., -1.,  1., -1.])
        """
        return self._raw_frame(prepared)

    def evaluate(self, prepared) -> tuple[np.ndarray, np.ndarray]:
        """Rewards and done flags for every row, from a :class:`PreparedFrame` (or data).

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
        reward[prepared.rows(self.scope)] = (self._raw_frame(prepared) - p.mean) / p.std
        return reward, prepared.done(self.scope)

    def with_columns(self, frame: pl.DataFrame, name: str, *, prepared: PreparedFrame | None = None
                     ) -> pl.DataFrame:
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

    # -- TensorDict path (torch) -------------------------------------------------
    def get_reward(self, data, contiguous: bool) -> None:
        """Set ``data["next", "reward"]`` (float64 ``[B]``) and ``data["next", "done"]`` like the plug-in.

        Same semantics, bit for bit, as the exported file (and as
        :meth:`evaluate` on the same rows).  ``contiguous`` is accepted for the
        contract; these families do not need it (every row's reward depends
        only on that row).

        Examples
        --------
        >>> td = rewardlab.to_tensordict(frame, rows=slice(0, 256))  # doctest: +SKIP
        >>> Ranking.from_preset("top").get_reward(td, False)  # doctest: +SKIP
        >>> td["next", "reward"].dtype  # doctest: +SKIP
        torch.float64
        """
        p = self.params
        rows, raw, done = self._raw_td(data)
        reward = torch.zeros(data["next", "end_of_game"].shape[0], dtype=torch.float64)
        reward[rows] = (raw - p.mean) / p.std
        data["next", "reward"] = reward
        data["next", "done"] = done

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

    def parameter_key(self) -> str:
        """The family and its tunable parameters in one line: what fitted constants are fitted for.

        Examples
        --------
        >>> from rewardlab.domains.mahjong.families import Points
        >>> Points.from_preset("thousands").parameter_key()
        'points: offset=25000.0, divisor=1000.0'
        """
        return f"{self.name}: " + ", ".join(f"{k}={_fmt(v)}" for k, v in self.parameter_summary().items())

    @property
    def constants_stale(self) -> bool:
        """True when mean and std were fitted (data or the wiki's recipe) for other parameters than these.

        Constants typed by the user, the default (0, 1), and fitted constants
        whose provenance does not record what they were fitted for are not
        stale.

        Examples
        --------
        >>> from rewardlab.domains.mahjong.families import Ranking
        >>> fam = Ranking.from_preset("top").with_seed_constants()
        >>> fam.constants_stale, fam.with_params(vector=(2, 0, 0, -1)).constants_stale
        (False, True)
        """
        prov = self.params.provenance
        return (prov.kind in ("dataset", "seed") and prov.fitted_for is not None
                and prov.fitted_for != self.parameter_key())

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
        params = ", ".join(f"{k}={_fmt(v)}" for k, v in self.parameter_summary().items())
        p = self.params
        return (f"{self.title} ({self.name}): {params}; mean={p.mean!r}, std={p.std!r} "
                f"from {p.provenance.describe()}")

    # subclasses
    def _raw_frame(self, prepared: PreparedFrame) -> np.ndarray:  # pragma: no cover - abstract
        raise NotImplementedError

    def _raw_td(self, data) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:  # pragma: no cover
        raise NotImplementedError


def _fmt(value) -> str:
    if isinstance(value, tuple):
        return "[" + ", ".join(repr(v) for v in value) + "]"
    return repr(value)


#: Fixed helper code of the exported file (the torch pieces above, with ``_RL_``
#: names so a file ``exec``-ed into another module's globals clobbers nothing).
EXPORT_HELPERS = '''
def _RL_seat(data, rows):
    seat = data["sparse"][rows, 6].to(_RL_torch.int64) - 71
    if bool(((seat < 0) | (seat > 3)).any()):
        raise ValueError("sparse[:, 6] - 71 should be a seat 0-3 on the rows a reward is given")
    return seat


def _RL_ranks(scores, seat):
    own = scores.gather(1, seat.unsqueeze(1))
    seats = _RL_torch.arange(4).unsqueeze(0)
    mine = seat.unsqueeze(1)
    higher = ((seats < mine) & (scores >= own)) | ((seats > mine) & (scores > own))
    return higher.sum(1)
'''


def mean_field(max_abs: float, step: float):
    """The ``mean`` field of a parameter dataclass (widget range ``[-max_abs, max_abs]``).

    Examples
    --------
    >>> mean_field(10.0, 0.01).metadata["min"]
    -10.0
    """
    return param_field(0.0, "Normalization: subtracted from the raw reward (0.0: none).",
                       min=-max_abs, max=max_abs, step=step)


def std_field(max_value: float, step: float):
    """The ``std`` field of a parameter dataclass (widget range ``[step, max_value]``).

    Examples
    --------
    >>> std_field(10.0, 0.01).default
    1.0
    """
    return param_field(1.0, "Normalization: the raw reward minus mean is divided by it; > 0 (1.0: none).",
                       min=step, max=max_value, step=step)


def provenance_field():
    """The ``provenance`` field of a parameter dataclass (default: :meth:`Provenance.default`).

    Examples
    --------
    >>> provenance_field().default.kind
    'default'
    """
    return dataclasses.field(default=Provenance(), metadata={
        "doc": "Where mean and std came from (default, typed, the wiki's recipe, or a dataset)."})


def affine_extremes(offset: float, divisor: float, what: str) -> list[tuple[float, str, str, float]]:
    """``(raw, where, parameter, value)`` of ``(x - offset) / divisor`` at the lowest and highest Int32 ``x``.

    Computed in float64, as an exported file computes it; the parameter blamed
    is ``offset`` when it is itself out of range, else ``divisor``.

    Examples
    --------
    >>> affine_extremes(0, 1, "a final score")[0][:2]
    (-2147483648.0, 'a final score of -2147483648')
    """
    name, value = ("offset", offset) if not abs(offset) <= REWARD_LIMIT else ("divisor", divisor)
    with np.errstate(all="ignore"):
        return [(float((np.float64(x) - np.float64(offset)) / np.float64(divisor)), f"{what} of {x}",
                 name, value) for x in SCORE_RANGE]


def validate_normalization(params) -> None:
    """Validate and normalize the ``mean``, ``std``, ``provenance`` fields of a frozen ``params``.

    Called from the parameter dataclasses' ``__post_init__``.

    Examples
    --------
    >>> from rewardlab.domains.mahjong.families import RankingParams
    >>> RankingParams(mean=1, std=2).std  # validate_normalization made it a float
    2.0
    """
    mean, std = check_normalization(params.mean, params.std)
    object.__setattr__(params, "mean", mean)
    object.__setattr__(params, "std", std)
    if not isinstance(params.provenance, Provenance):
        raise ParameterError("provenance", "should be a rewardlab.domains.mahjong.families.Provenance", params.provenance)
    check_reward_range(params)


def check_reward_range(params, *, normalized: bool = True) -> None:
    """Refuse parameters whose raw or normalized reward can leave ``±REWARD_LIMIT`` (or be non-finite).

    The reward is monotonic in the input between the extremes a plug-in
    can receive (each rank's vector entry; the lowest and highest Int32
    score or delta), so checking the values there, computed with the same
    float64 operations as the exported file, covers every input.  Beyond
    the limit the exported file's rewards, or the statistics of them
    (means, variances, expected rewards), overflow to inf or NaN and
    ``check-plugin`` fails.

    Parameters
    ----------
    params : a family's parameter dataclass
        It provides ``raw_extremes()``: ``(raw, where, name, value)`` per
        extreme input, ``name`` / ``value`` being the parameter to blame for
        a raw value out of range.
    normalized : bool
        Also check ``(raw - mean) / std`` (False: the raw reward only, before
        constants are fitted).

    Raises
    ------
    ParameterError
        Naming the parameter (``vector[k]``, ``offset``, ``divisor``,
        ``mean`` or ``std``), the rule and the value, with what to do.

    Examples
    --------
    >>> from rewardlab.domains.mahjong.families import RankingParams
    >>> RankingParams(vector=(1e308, 0, 0, -1e308))
    Traceback (most recent call last):
    rewardlab.core.errors.ParameterError: `vector[0]` should keep the raw reward within ±1e+100 (beyond, rewards or their means and variances overflow); it gives 1e+308 at final rank 1. Received 1e+308. Use rewards of a sensible size (kanachan asks for rewards near mean 0, std 1).
    >>> RankingParams(vector=(1, 0, 0, -1), std=1e-320)
    Traceback (most recent call last):
    rewardlab.core.errors.ParameterError: `std` should keep the normalized reward (raw - mean) / std within ±1e+100 (beyond, rewards or their means and variances overflow); it gives inf for the raw reward 1.0 (final rank 1). Received 1e-320. Fit the constants from data, or use a std close to the spread of the raw reward.
    """
    extremes = params.raw_extremes()
    overflow = "(beyond, rewards or their means and variances overflow)"
    for raw, where, name, value in extremes:
        if not abs(raw) <= REWARD_LIMIT:
            raise ParameterError(name, f"should keep the raw reward within ±{REWARD_LIMIT:g} {overflow}; it gives "
                                 f"{raw!r} at {where}", value,
                                 hint="Use rewards of a sensible size (kanachan asks for rewards near mean 0, "
                                 "std 1).")
    if not normalized:
        return
    mean, std = params.mean, params.std
    if not abs(mean) <= REWARD_LIMIT:
        raise ParameterError("mean", f"should be within ±{REWARD_LIMIT:g} {overflow}", mean,
                             hint="Fit the constants from data, or type the mean of the raw reward.")
    with np.errstate(all="ignore"):
        for raw, where, _, _ in extremes:
            z = float((np.float64(raw) - np.float64(mean)) / np.float64(std))
            if not abs(z) <= REWARD_LIMIT:
                raise ParameterError("std", "should keep the normalized reward (raw - mean) / std within "
                                     f"±{REWARD_LIMIT:g} {overflow}; it gives {z!r} for the raw reward {raw!r} "
                                     f"({where})", std,
                                     hint="Fit the constants from data, or use a std close to the spread of "
                                     "the raw reward.")
