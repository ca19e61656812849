"""Named reward terms beside the reward: where a plug-in writes them and the checks they pass.

Every contract: a plug-in may also write named terms of a composite reward
beside its reward, each under ``("next", "reward_terms", <name>)``
(:data:`TERMS_KEY`), ``<name>`` matching ``[A-Za-z_][A-Za-z0-9_]*``.  Each is
checked like the reward (:func:`check_terms`: a CPU float16/32/64 tensor of
shape ``[B]`` or ``[B, 1]``, finite), and the set of names must be the same on
every call.  Terms need not sum to the reward.  A plug-in that writes none is
checked and run as before.

Examples
--------
>>> import torch
>>> check_terms({term_key("task"): torch.zeros(2)}, 2) is None
True
"""

from __future__ import annotations

import re

import torch  # noqa: F401  (the doctests' tensors)

from rewardlab.contracts.checks import Violation, check_float_values, key_text

__all__ = ["TERMS_KEY", "TERM_RULES", "term_key", "find_terms", "check_terms"]

#: Where a plug-in may write named reward terms: ``data["next", "reward_terms", name]``.
TERMS_KEY = ("next", "reward_terms")
#: The rules of :func:`check_terms`.
TERM_RULES = ("term_key", "term_name", "term_type", "term_device", "term_dtype", "term_shape",
              "term_not_finite", "term_names_vary")
_TERM_NAME_RE = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")


def term_key(name: str) -> tuple[str, str, str]:
    """The OUT key of reward term ``name``.

    Examples
    --------
    >>> term_key("progress")
    ('next', 'reward_terms', 'progress')
    """
    return (*TERMS_KEY, name)


def find_terms(leaves: dict) -> dict:
    """The leaves under :data:`TERMS_KEY` (``{key: value}``, in order), from a call's ``{key: leaf}``.

    ``leaves`` are a TensorDict's leaves by tuple key (nested keys flattened);
    an empty dict when the plug-in wrote no terms.

    Examples
    --------
    >>> find_terms({("next", "reward"): 0, ("next", "reward_terms", "a"): 1, "obs": 2})
    {('next', 'reward_terms', 'a'): 1}
    """
    n = len(TERMS_KEY)
    return {k: v for k, v in leaves.items() if isinstance(k, tuple) and k[:n] == TERMS_KEY}


def check_terms(terms: dict, batch_size: int, *, names: tuple | None = None) -> Violation | None:
    """Check the reward terms a plug-in left under ``("next", "reward_terms", name)`` after a call.

    Parameters
    ----------
    terms : dict
        ``{key: value}`` of the leaves under :data:`TERMS_KEY` (:func:`find_terms`; empty: no terms,
        which is always fine when ``names`` is None or empty).
    batch_size : int
        ``B``, the batch's size.
    names : tuple of str or None
        The term names of the plug-in's first call (None: this is the first call).

    Returns
    -------
    Violation or None
        Rules (:data:`TERM_RULES`) ``term_key`` (a value at ``("next", "reward_terms")`` itself, or nested
        deeper than one name), ``term_name``, ``term_type``, ``term_device``, ``term_dtype``,
        ``term_shape``, ``term_not_finite`` (row: the first non-finite one), ``term_names_vary``
        (the set of names differs from the first call's). The message names the term.

    Examples
    --------
    >>> ok = {term_key("task"): torch.zeros(3), term_key("bonus"): torch.ones(3, 1, dtype=torch.float16)}
    >>> check_terms(ok, 3) is None
    True
    >>> check_terms({term_key("task"): torch.zeros(3, 2)}, 3).message
    'data["next", "reward_terms", "task"] should have shape [B] or [B, 1] with B = 3; got [3, 2]'
    >>> check_terms({term_key("task"): torch.zeros(3)}, 3, names=("task", "bonus")).rule
    'term_names_vary'
    """
    n = len(TERMS_KEY)
    found = []
    for key, value in terms.items():
        name = key_text(key)
        if len(key) != n + 1:
            where = ("holds a tensor itself" if len(key) == n else "nests terms deeper than one name")
            return Violation("term_key", f"{name}: {key_text(TERMS_KEY)} {where}; write each term as "
                             f'data["next", "reward_terms", NAME] = tensor of shape [B]')
        term = key[n]
        if not isinstance(term, str) or not _TERM_NAME_RE.match(term):
            return Violation("term_name", f"{name}: a term's name should match [A-Za-z_][A-Za-z0-9_]* "
                             f"(letters, digits, underscores: it becomes a column name); got {term!r}")
        found.append(term)
        bad = check_float_values(value, batch_size, name=name, rule="term")
        if bad is not None:
            return bad
    if names is not None and set(found) != set(names):
        missing = [t for t in names if t not in found]
        extra = [t for t in found if t not in names]
        parts = ([f"missing {', '.join(map(repr, missing))}"] if missing else []) + (
            [f"new {', '.join(map(repr, extra))}"] if extra else [])
        return Violation("term_names_vary", f"{key_text(TERMS_KEY)} should hold the same term names on every "
                         f"call: the first call gave {_names(names)}, this one {_names(found)} "
                         f"({'; '.join(parts)}); write every term on every call (0.0 where it does not apply)")
    return None


def _names(names) -> str:
    return "[" + ", ".join(map(repr, names)) + "]" if names else "no terms"
