"""Feature bases for a shaping potential: a registry of functions from states to features or ids.

A basis maps states ``[M, D]`` to features ``[M, K]`` (float), or to integer
ids ``[M]`` meaning one indicator feature per distinct id.  Built in:
``"tabular"`` (:func:`tabular_ids`: one indicator per distinct state row),
``"linear"`` (:func:`linear_features`) and ``"quadratic"``
(:func:`quadratic_features`); :func:`register_basis` adds one,
:func:`registered_bases` lists them, and :func:`resolve_basis` picks one by
name (``"auto"``: ``"tabular"`` for integer or Boolean states, else
``"linear"``).  The potential is fitted in a basis by
:func:`rewardlab.analysis.shaping.fit_potential`.

Examples
--------
>>> import numpy as np
>>> from rewardlab.analysis.potential_bases import resolve_basis
>>> name, fn = resolve_basis("auto", np.array([[0], [3], [0]]))
>>> name, fn(np.array([[0], [3], [0]])).tolist()
('tabular', [0, 1, 0])
"""

from __future__ import annotations

from typing import Callable

import numpy as np

from rewardlab.core.errors import ParameterError

__all__ = [
    "register_basis", "unregister_basis", "registered_bases", "resolve_basis", "tabular_ids", "compact_ids",
    "linear_features", "quadratic_features", "as_states",
]


def as_states(x, name: str, length: int | None = None) -> np.ndarray:
    """States ``[N]`` or ``[N, D]`` (numbers or booleans) as a 2-D array ``[N, D]``; ``name`` for messages.

    Examples
    --------
    >>> as_states(np.array([1, 2]), "states").shape
    (2, 1)
    """
    arr = np.asarray(x)
    if arr.ndim == 1:
        arr = arr[:, None]
    if arr.ndim != 2:
        raise ParameterError(name, "should have shape [N] or [N, D]", arr.shape)
    if length is not None and arr.shape[0] != length:
        raise ParameterError(name, f"should have {length} rows like `difference`", arr.shape)
    if arr.dtype.kind not in "biuf":
        raise ParameterError(name, "should hold numbers or booleans", str(arr.dtype))
    return arr


# --------------------------------------------------------------------------
# Bases
# --------------------------------------------------------------------------


def _canonical(rows: np.ndarray) -> np.ndarray:
    """Float rows with -0.0 as 0.0 and one NaN, so equal values have equal bytes."""
    if rows.dtype.kind == "f":
        rows = rows + 0.0
        rows[np.isnan(rows)] = np.nan
    return rows


def tabular_ids(states) -> np.ndarray:
    """One id per distinct state row (the ``"tabular"`` basis: one indicator feature per distinct state).

    Rows are compared by value: integer and Boolean rows exactly, float rows by their bytes (``-0.0`` is
    ``0.0``).

    Parameters
    ----------
    states : array of shape ``[M]`` or ``[M, D]``

    Returns
    -------
    int64 array of shape ``[M]``
        ``0 .. K-1`` in the order of the sorted distinct rows.

    Examples
    --------
    >>> tabular_ids(np.array([[1, 2], [0, 5], [1, 2]])).tolist()
    [1, 0, 1]
    """
    s = as_states(states, "states")
    m, d = s.shape
    if m == 0:
        return np.zeros(0, dtype=np.int64)
    if s.dtype == bool:
        s = s.astype(np.int8)
    if s.dtype.kind in "iu":
        lo = s.min(axis=0).astype(np.int64)
        span = s.max(axis=0).astype(np.int64) - lo + 1
        total = float(np.prod(span.astype(np.float64)))
        if np.all(span > 0) and total < 2.0 ** 62:
            key = np.zeros(m, dtype=np.int64)
            for k in range(d):  # mixed radix: one int64 per row
                key = key * span[k] + (s[:, k].astype(np.int64) - lo[k])
            return compact_ids(key) if total <= 8 * m + 1024 else \
                np.unique(key, return_inverse=True)[1].astype(np.int64).ravel()
    if d == 1:
        return np.unique(_canonical(s[:, 0]), return_inverse=True)[1].astype(np.int64).ravel()
    rows = np.ascontiguousarray(_canonical(s))
    void = rows.view(np.dtype((np.void, rows.dtype.itemsize * d))).ravel()
    return np.unique(void, return_inverse=True)[1].astype(np.int64).ravel()


def compact_ids(ids) -> np.ndarray:
    """Non-negative integer ids renumbered ``0 .. K-1`` in increasing order, in linear time (for ids up to a
    few times their count; :func:`numpy.unique` otherwise).

    Examples
    --------
    >>> compact_ids(np.array([7, 3, 7, 9])).tolist()
    [1, 0, 1, 2]
    """
    ids = np.asarray(ids)
    if ids.size == 0:
        return np.zeros(0, dtype=np.int64)
    if ids.min() < 0 or ids.max() > 8 * ids.size + 1024:
        return np.unique(ids, return_inverse=True)[1].astype(np.int64).ravel()
    present = np.zeros(int(ids.max()) + 1, dtype=bool)
    present[ids] = True
    return (np.cumsum(present) - 1)[ids].astype(np.int64)


def _standardized(s: np.ndarray) -> np.ndarray:
    """Columns centred and scaled (the span of polynomials in them is unchanged; the fit is better posed)."""
    x = s.astype(np.float64)
    if x.shape[0] == 0:
        return x
    mid = x.sum(axis=0) / x.shape[0]
    gram = np.diag(x.T @ x) / x.shape[0]  # one BLAS pass; exactness does not matter (same span)
    spread = np.sqrt(np.maximum(gram - mid ** 2, 0.0))
    spread[spread == 0] = 1.0
    return (x - mid) / spread


def linear_features(states) -> np.ndarray:
    """``[1, s_1, ..., s_D]``: the ``"linear"`` basis, ``phi(s) = w . s + c``.

    The state columns are centred and scaled on the rows given first (same span, better conditioning).

    Examples
    --------
    >>> linear_features(np.array([[0.0], [2.0]])).tolist()
    [[1.0, -1.0], [1.0, 1.0]]
    """
    x = _standardized(as_states(states, "states"))
    return np.hstack([np.ones((x.shape[0], 1)), x])


def quadratic_features(states) -> np.ndarray:
    """:func:`linear_features` plus every product ``s_i * s_j`` (``i <= j``): the ``"quadratic"`` basis.

    Examples
    --------
    >>> quadratic_features(np.zeros((3, 2))).shape
    (3, 6)
    """
    x = _standardized(as_states(states, "states"))
    i, j = np.triu_indices(x.shape[1])
    return np.hstack([np.ones((x.shape[0], 1)), x, x[:, i] * x[:, j]])


_BASES: dict[str, Callable] = {"tabular": tabular_ids, "linear": linear_features,
                               "quadratic": quadratic_features}
_BUILTIN = tuple(_BASES)


def register_basis(name: str, fn: Callable, *, replace: bool = False) -> Callable:
    """Register a feature basis for the potential: ``fn(states [M, D]) -> features [M, K]`` (float) or
    integer ids ``[M]`` (one indicator feature per distinct id, as ``"tabular"``).

    ``fn`` is called once on the states and the non-terminal next states stacked, so a basis that depends
    on the data (a scaling, a discretization) is the same for both.

    Examples
    --------
    >>> _ = register_basis("norm", lambda s: np.stack([np.ones(len(s)), np.linalg.norm(s, axis=1)], 1))
    >>> "norm" in registered_bases()
    True
    >>> _ = unregister_basis("norm")
    """
    if not isinstance(name, str) or not name or name == "auto":
        raise ParameterError("name", "should be a non-empty string other than 'auto'", name)
    if not callable(fn):
        raise ParameterError("fn", "should be a function of the states [M, D]", type(fn).__name__)
    if name in _BASES and not replace:
        raise ParameterError("name", "is already a registered basis (pass replace=True to replace it)", name)
    _BASES[name] = fn
    return fn


def unregister_basis(name: str) -> Callable:
    """Remove and return the basis registered as ``name`` (the built-in ones stay).

    Examples
    --------
    >>> unregister_basis("linear")
    Traceback (most recent call last):
    ...
    rewardlab.core.errors.ParameterError: `name` should name a basis registered by the user. Received 'linear'.
    """
    if name not in _BASES or name in _BUILTIN:
        raise ParameterError("name", "should name a basis registered by the user", name)
    return _BASES.pop(name)


def registered_bases() -> dict[str, Callable]:
    """The bases by name (a copy).

    Examples
    --------
    >>> list(registered_bases())[:3]
    ['tabular', 'linear', 'quadratic']
    """
    return dict(_BASES)


def resolve_basis(basis: str, states) -> tuple[str, Callable]:
    """``(name, fn)`` of ``basis``; ``"auto"`` is ``"tabular"`` when ``states`` are integer or Boolean, else
    ``"linear"``.

    Examples
    --------
    >>> resolve_basis("auto", np.zeros((2, 1), dtype=np.int16))[0], resolve_basis("auto", np.zeros(2))[0]
    ('tabular', 'linear')
    """
    if basis == "auto":
        kind = np.asarray(states).dtype.kind
        basis = "tabular" if kind in "iub" else "linear"
    if basis not in _BASES:
        raise ParameterError("basis", "should be 'auto' or a registered basis: " + ", ".join(_BASES), basis)
    return basis, _BASES[basis]
