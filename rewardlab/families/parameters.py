"""A family's parameters: dataclass fields with docs and widget hints, and their checks.

A family's parameters are a frozen dataclass.  Each field carries its doc and
widget hints (``min``, ``max``, ``step``) as metadata (:func:`param_field`,
read back with :func:`field_hints`); every family has the normalization
fields ``mean``, ``std`` (:func:`mean_field`, :func:`std_field`) and
``provenance`` (:func:`provenance_field`), validated in the dataclass's
``__post_init__`` by :func:`validate_normalization`.

Examples
--------
>>> import dataclasses
>>> @dataclasses.dataclass(frozen=True)
... class BonusParams:
...     bonus: float = param_field(1000.0, "Paid once at the end.", min=0.0, max=10000.0, step=1.0)
...     mean: float = mean_field(1000.0, 0.001)
...     std: float = std_field(1000.0, 0.001)
...     provenance: Provenance = provenance_field()
...     def __post_init__(self):
...         validate_normalization(self)
...     def raw_extremes(self):
...         return [(self.bonus, "the end", "bonus", self.bonus)]
>>> BonusParams(std=2).std, field_hints(BonusParams)["bonus"]["max"]
(2.0, 10000.0)
"""

from __future__ import annotations

import dataclasses
import math
import numbers

import numpy as np

from rewardlab.core.errors import ParameterError
from rewardlab.families.provenance import Provenance
from rewardlab.families.rendering import check_reward_range

__all__ = ["param_field", "field_hints", "check_real", "check_normalization", "mean_field", "std_field",
           "provenance_field", "validate_normalization"]


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
    >>> import dataclasses
    >>> @dataclasses.dataclass(frozen=True)
    ... class P:
    ...     std: float = std_field(10.0, 0.01)
    >>> field_hints(P)["std"]["min"] > 0
    True
    """
    return {f.name: dict(f.metadata) for f in dataclasses.fields(params_type) if f.metadata}


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


def validate_normalization(params) -> None:
    """Validate and normalize the ``mean``, ``std``, ``provenance`` fields of a frozen ``params``.

    Called from the parameter dataclasses' ``__post_init__``; also checks the
    reward range (:func:`rewardlab.families.rendering.check_reward_range`), so
    ``params`` provides ``raw_extremes()``.

    Examples
    --------
    >>> from types import SimpleNamespace
    >>> params = SimpleNamespace(mean=1, std=2, provenance=Provenance(), raw_extremes=lambda: [])
    >>> validate_normalization(params)
    >>> params.std  # validate_normalization made it a float
    2.0
    """
    mean, std = check_normalization(params.mean, params.std)
    object.__setattr__(params, "mean", mean)
    object.__setattr__(params, "std", std)
    if not isinstance(params.provenance, Provenance):
        # the name users import it by (rewardlab.families.Provenance is the same class)
        raise ParameterError("provenance", "should be a rewardlab.domains.mahjong.families.Provenance",
                             params.provenance)
    check_reward_range(params)
