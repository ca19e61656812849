"""Literal-only rendering of exported plug-in files, and the reward range every export keeps.

An exported plug-in file holds only fixed code and numbers: every value
written as code goes through :func:`render_literal` (a finite ``int`` or
``float``, a tuple of them, or a data key marked as :class:`KeyLiteral`) or
:func:`float_literal` (a finite float), and user text appears only in ``#``
comments, through
:func:`sanitize_comment`.  :func:`check_reward_range` refuses parameters whose
raw or normalized reward can leave ``±``:data:`REWARD_LIMIT` for some input.

Examples
--------
>>> render_literal("vector", (1.0, -1, 0.5))
'(1.0, -1, 0.5)'
>>> sanitize_comment("a.tsv\\nimport os")
'a.tsv\\\\nimport os'
"""

from __future__ import annotations

import dataclasses
import math

import numpy as np

from rewardlab.core import columns
from rewardlab.core.errors import ParameterError

__all__ = ["REWARD_LIMIT", "MAX_COMMENT", "sanitize_comment", "KeyLiteral", "render_literal", "float_literal",
           "format_value", "check_reward_range"]

#: Largest magnitude a family's raw or normalized reward may reach: far beyond any useful reward,
#: and small enough that means, variances and expected rewards over 10**12 steps stay finite
#: in float64 (a square of 1e154 already overflows).
REWARD_LIMIT = 1e100
#: Longest text :func:`sanitize_comment` keeps (longer text is cut with ``...``).
MAX_COMMENT = 300


def sanitize_comment(text: object, *, limit: int = MAX_COMMENT) -> str:
    """``text`` as one line of printable ASCII, safe inside a ``#`` comment.

    Line breaks, control and non-ASCII characters are escaped the way Python
    escapes them (``\\n``, ``\\x00``, ``\\u2028``), so nothing can end the
    comment; long text is cut to ``limit`` characters with ``...``.

    Examples
    --------
    >>> sanitize_comment('a.tsv\\nimport os; os.system("x")')
    'a.tsv\\\\nimport os; os.system("x")'
    """
    escaped = "".join(ch if " " <= ch <= "~" else ascii(ch)[1:-1] for ch in str(text))
    if len(escaped) > limit:
        escaped = escaped[: limit - 3] + "..."
    return escaped


@dataclasses.dataclass(frozen=True)
class KeyLiteral:
    """A data key a plug-in reads (``data[key]``), written into it as a string literal by :func:`render_literal`.

    Only a name of ``[A-Za-z_][A-Za-z0-9_]*`` (:func:`rewardlab.core.columns.check_name`);
    a family marks a value as a key explicitly, so a string anywhere else is
    still refused.

    Examples
    --------
    >>> render_literal("_RL_KEY", KeyLiteral("reward_recorded"))
    "'reward_recorded'"
    >>> KeyLiteral("x'); import os #")
    Traceback (most recent call last):
    rewardlab.core.errors.ParameterError: `key` should match [A-Za-z_][A-Za-z0-9_]* (letters, digits, underscores). Received "x'); import os #".
    """

    key: str

    def __post_init__(self):
        columns.check_name(self.key, what="key")


def render_literal(name: str, value) -> str:
    """Python source of a number, a tuple of numbers or a :class:`KeyLiteral`, refusing anything else (``name``:
    what to blame).

    Examples
    --------
    >>> render_literal("std", 0.1)
    '0.1'
    >>> render_literal("ranks", (3,)), render_literal("ranks", (1, 2.5))
    ('(3,)', '(1, 2.5)')
    >>> render_literal("std", float("nan"))
    Traceback (most recent call last):
    rewardlab.core.errors.ParameterError: `std` should be a finite number to be written into a plug-in. Received nan.
    """
    if isinstance(value, tuple):
        if not value:
            raise ParameterError(name, "should not be empty", value)
        items = [render_literal(f"{name}[{k}]", v) for k, v in enumerate(value)]
        return "(" + ", ".join(items) + ("," if len(items) == 1 else "") + ")"  # (x,): a one-element tuple
    if type(value) is int:
        return repr(value)
    if type(value) is KeyLiteral:
        return repr(columns.check_name(value.key, what=name))
    if type(value) is float:
        if not math.isfinite(value):
            raise ParameterError(name, "should be a finite number to be written into a plug-in", value)
        text = repr(value)
        if float(text) != value:  # pragma: no cover - repr round-trips floats by definition
            raise ParameterError(name, "should round-trip through repr", value)
        return text
    raise ParameterError(name, "should be an int or float (or a tuple of them) to be written into a "
                         "plug-in", value)


def float_literal(name: str, value) -> str:
    """``repr(value)`` of a finite float, to be written into a plug-in; anything else is refused (``name``).

    Examples
    --------
    >>> float_literal("shift", 0.1)
    '0.1'
    """
    if type(value) is not float or not math.isfinite(value):
        raise ParameterError(name, "should be a finite float to be written into a plug-in", value)
    return repr(value)


def format_value(value) -> str:
    """A parameter's value for headers and one-line descriptions (a tuple as ``[a, b]``).

    Examples
    --------
    >>> format_value((1.0, -1.0)), format_value(25000.0)
    ('[1.0, -1.0]', '25000.0')
    """
    if isinstance(value, tuple):
        return "[" + ", ".join(repr(v) for v in value) + "]"
    return repr(value)


def check_reward_range(params, *, normalized: bool = True) -> None:
    """Refuse parameters whose raw or normalized reward can leave ``±REWARD_LIMIT`` (or be non-finite).

    The reward is monotonic in the input between the extremes a plug-in
    can receive (e.g. each rank's vector entry; the lowest and highest Int32
    score or delta), so checking the values there, computed with the same
    float64 operations as the exported file, covers every input.  Beyond
    the limit the exported file's rewards, or the statistics of them
    (means, variances, expected rewards), overflow to inf or NaN and
    ``check-plugin`` fails.

    Parameters
    ----------
    params : a family's parameter dataclass
        It provides ``mean``, ``std`` and ``raw_extremes()``: ``(raw, where,
        name, value)`` per extreme input, ``name`` / ``value`` being the
        parameter to blame for a raw value out of range.
    normalized : bool
        Also check ``(raw - mean) / std`` (False: the raw reward only, before
        constants are fitted).

    Raises
    ------
    ParameterError
        Naming the parameter (e.g. ``vector[k]``, ``offset``, ``divisor``,
        ``mean`` or ``std``), the rule and the value, with what to do.

    Examples
    --------
    >>> from types import SimpleNamespace
    >>> params = SimpleNamespace(mean=0.0, std=1e-320, raw_extremes=lambda: [(1.0, "the top", "bonus", 1.0)])
    >>> check_reward_range(params, normalized=False)
    >>> check_reward_range(params)
    Traceback (most recent call last):
    rewardlab.core.errors.ParameterError: `std` should keep the normalized reward (raw - mean) / std within ±1e+100 (beyond, rewards or their means and variances overflow); it gives inf for the raw reward 1.0 (the top). Received 1e-320. Fit the constants from data, or use a std close to the spread of the raw reward.
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
