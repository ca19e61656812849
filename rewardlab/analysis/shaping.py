"""Is a reward difference potential-based shaping?  A least-squares potential in a feature basis.

Ng, Harada and Russell (1999): adding ``F(s, a, s') = gamma * phi(s') - phi(s)``
to a reward leaves its optimal policies unchanged, and it is the only additive
change that always does.  Given the difference ``r' - r`` of two rewards on
recorded transitions, :func:`fit_potential` finds the potential ``phi`` (in a
feature basis) that explains it best,

    ``r'[t] - r[t] = gamma * (1 - terminated[t]) * phi(s'[t]) - phi(s[t]) + residual[t]``

(the potential of a terminal state is 0; after a truncation the next state is
real and its potential counts), by least squares, and reports the residual
**relative to the reward's scale** (:func:`reward_scale`), never R^2: a bonus
of 0.1 on one state of a 20-state chain leaves a residual of 0.1 on its
visits, and R^2 is still 0.9998.

Bases (:mod:`rewardlab.analysis.potential_bases`:
:func:`~rewardlab.analysis.potential_bases.register_basis`,
:func:`~rewardlab.analysis.potential_bases.registered_bases`) map states
``[M, D]`` to features ``[M, K]`` (float), or to integer ids ``[M]`` meaning one
indicator feature per distinct id (``"tabular"``: one per distinct state row).
``"auto"`` (:func:`~rewardlab.analysis.potential_bases.resolve_basis`) is
``"tabular"`` for integer or Boolean states, else ``"linear"``.

Identifiability: when the data leave no residual degree of freedom (every
state seen once: any difference has a potential), the answer is ``"cannot
tell"`` (:meth:`PotentialFit.verdict`), never ``"shaping"``.

The same property is tested per episode, without a basis, by
:func:`rewardlab.analysis.telescoping.telescoping_check`.

Each vectorized function has a plain-loop twin (``*_reference``), which the
tests compare.

Examples
--------
>>> import numpy as np
>>> s = np.array([[0], [1], [2], [0], [1], [2]]); nxt = np.array([[1], [2], [0], [1], [2], [0]])
>>> term = np.array([False, False, True, False, False, True])
>>> phi = np.array([1.0, 5.0, -2.0])
>>> diff = 0.9 * np.where(term, 0.0, phi[nxt[:, 0]]) - phi[s[:, 0]]
>>> fit = fit_potential(diff, s, nxt, terminated=term, gamma=0.9, basis="tabular")
>>> fit.verdict(1e-9), fit.dof
('shaping', 3)
>>> bonus = np.array([0.0, 0.1, 0.0, 0.0, 0.0, 0.0])  # on the first visit of state 1 only
>>> fit_potential(diff + bonus, s, nxt, terminated=term, gamma=0.9, basis="tabular").verdict(1e-9)
'not shaping'
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from rewardlab.analysis.potential_bases import as_states, compact_ids, resolve_basis
from rewardlab.analysis.returns import as_array
from rewardlab.core.errors import ParameterError, check_in_range, check_positive

__all__ = [
    "reward_scale", "PotentialFit", "fit_potential", "fit_potential_reference", "DENSE_LIMIT", "RANK_RTOL",
    "SHAPING_VERDICTS",
]

#: Up to this many features the normal equations are solved densely (eigendecomposition: exact rank and
#: leverages); above it (large tabular bases only) by preconditioned conjugate gradients.
DENSE_LIMIT = 512

#: Eigenvalues of the column-scaled normal matrix below this fraction of the largest count as zero (rank).
RANK_RTOL = 1e-10

#: What :meth:`PotentialFit.verdict` answers.
SHAPING_VERDICTS = ("shaping", "not shaping", "cannot tell")

_CG_TOL = 1e-12
_CG_MAXITER = 3000
_PROBES = 2


# --------------------------------------------------------------------------
# The fit
# --------------------------------------------------------------------------


def reward_scale(*rewards) -> float:
    """The scale residuals are judged against: the largest root mean square of ``rewards`` (1.0 when all
    are 0, so a relative residual is always defined).

    Examples
    --------
    >>> reward_scale(np.array([3.0, -4.0]), np.zeros(2))
    3.5355339059327378
    >>> reward_scale(np.zeros(3))
    1.0
    """
    found = 0.0
    for r in rewards:
        r = np.asarray(r, dtype=np.float64)
        if r.size:
            found = max(found, float(np.sqrt(np.mean(np.square(r)))))
    return found if found > 0 and np.isfinite(found) else 1.0


class _Dense:
    """The design matrix ``X = gamma * (1 - term) * Phi(s') - Phi(s)`` held whole ``[N, K]``."""

    def __init__(self, x: np.ndarray):
        self.x = x
        self.k = x.shape[1]

    def matvec(self, w):
        return self.x @ w

    def rmatvec(self, y):
        return self.x.T @ y

    def normal(self):
        return self.x.T @ self.x

    def leverage(self, p):
        out = np.empty(self.x.shape[0])
        step = max(1, 2 ** 22 // max(self.k, 1))
        for a in range(0, self.x.shape[0], step):
            part = self.x[a:a + step]
            out[a:a + step] = ((part @ p) * part) @ np.ones(self.k)
        return out


class _Indicator:
    """``X`` of an indicator basis: row ``t`` is ``c[t] * e[jn[t]] - e[j[t]]`` (two entries)."""

    def __init__(self, j, jn, c, k):
        self.j, self.jn, self.c, self.k = j, jn, c, k

    def matvec(self, w):
        c = self.c if w.ndim == 1 else self.c[:, None]
        return c * w[self.jn] - w[self.j]

    def rmatvec(self, y):
        if y.ndim == 2:
            return np.stack([self.rmatvec(y[:, i]) for i in range(y.shape[1])], axis=1)
        return (np.bincount(self.jn, self.c * y, minlength=self.k)
                - np.bincount(self.j, y, minlength=self.k))

    def normal(self):
        k = self.k
        flat = np.concatenate([self.j * k + self.j, self.jn * k + self.jn, self.j * k + self.jn,
                               self.jn * k + self.j])
        weights = np.concatenate([np.ones(self.j.size), self.c ** 2, -self.c, -self.c])
        return np.bincount(flat, weights, minlength=k * k).reshape(k, k)

    def compressed(self):
        """The normal matrix ``X^T X`` as ``(diag [K], rows, cols, values)`` of its off-diagonal entries
        (one per distinct transition; each listed once, apply it both ways)."""
        k = self.k
        pairs, inverse = np.unique(self.j * k + self.jn, return_inverse=True)
        inverse = inverse.ravel()
        pj, pn = pairs // k, pairs % k
        count = np.bincount(inverse, minlength=pairs.size).astype(np.float64)
        sc = np.bincount(inverse, self.c, minlength=pairs.size)
        sc2 = np.bincount(inverse, self.c ** 2, minlength=pairs.size)
        loop = pj == pn
        diag = (np.bincount(pj, count, minlength=k) + np.bincount(pn, sc2, minlength=k)
                - 2 * np.bincount(pj[loop], sc[loop], minlength=k))
        off = ~loop & (sc != 0)
        return diag, pj[off], pn[off], -sc[off]

    def leverage(self, p):
        return (p[self.j, self.j] - 2 * self.c * p[self.j, self.jn] + self.c ** 2 * p[self.jn, self.jn])


def _solve_dense(op, d):
    """Least squares through the column-scaled normal matrix's eigendecomposition, refined twice."""
    a = op.normal()
    diag = np.diag(a).copy()
    s = np.zeros(op.k)
    s[diag > 0] = 1.0 / np.sqrt(diag[diag > 0])
    lam, v = np.linalg.eigh(a * s[:, None] * s[None, :])
    good = lam > (lam.max() * RANK_RTOL if lam.size and lam.max() > 0 else np.inf)
    vr = v[:, good] * s[:, None]
    inv = 1.0 / lam[good]

    def apply(g):
        return vr @ (inv * (vr.T @ g))

    w = apply(op.rmatvec(d))
    for _ in range(2):
        w = w + apply(op.rmatvec(d - op.matvec(w)))
    lev = op.leverage((vr * inv) @ vr.T)
    return w, int(good.sum()), lev, True, 0


def _solve_cg(op, d, seed=0):
    """Jacobi-preconditioned conjugate gradients on the normal equations for ``d`` and random probes.

    The normal matrix is applied in its compressed form (one entry per distinct transition), so an
    iteration costs the number of distinct transitions, not of rows."""
    rng = np.random.default_rng(seed)
    rhs = np.column_stack([d, rng.standard_normal((d.shape[0], _PROBES))])
    diag, rows, cols, vals = op.compressed()
    k = op.k

    def normal(p):
        out = diag[:, None] * p
        for i in range(p.shape[1]):
            out[:, i] += (np.bincount(rows, vals * p[cols, i], minlength=k)
                          + np.bincount(cols, vals * p[rows, i], minlength=k))
        return out

    pre = np.where(diag > 0, 1.0 / np.where(diag > 0, diag, 1.0), 0.0)[:, None]
    w = np.zeros((k, rhs.shape[1]))
    iterations, converged = 0, False
    for _ in range(2):  # a restart from the true residual polishes what rounding left
        converged = False
        r = op.rmatvec(rhs - op.matvec(w))
        z = pre * r
        p = z.copy()
        rz = np.einsum("ki,ki->i", r, z)
        first = np.where(rz > 0, rz, 1.0)
        for _ in range(_CG_MAXITER):
            if np.all(rz <= _CG_TOL ** 2 * first):
                converged = True
                break
            q = normal(p)
            pq = np.einsum("ki,ki->i", p, q)
            alpha = np.where(pq > 0, rz / np.where(pq > 0, pq, 1.0), 0.0)
            w += alpha * p
            r -= alpha * q
            z = pre * r
            rz_new = np.einsum("ki,ki->i", r, z)
            p = z + np.where(rz > 0, rz_new / np.where(rz > 0, rz, 1.0), 0.0) * p
            rz = rz_new
            iterations += 1
    probes = rhs[:, 1:] - op.matvec(w[:, 1:])
    lev = np.clip(1.0 - np.mean(probes ** 2, axis=1), 0.0, 1.0)
    lev[np.all(np.abs(probes) < 1e-6, axis=1)] = 1.0
    rank = int(round(d.shape[0] - float(np.mean(np.sum(probes ** 2, axis=0)))))
    return w[:, 0], rank, lev, converged, iterations


@dataclass(frozen=True, eq=False)
class PotentialFit:
    """The least-squares potential of a reward difference, and what is left unexplained.

    Attributes
    ----------
    basis : str
        The basis used (``"auto"`` resolved).
    weights : float64 array of shape ``[K]``
        The potential's weights on the basis' features (one per distinct id for an indicator basis).
    potential, next_potential : float64 arrays of shape ``[N]``
        ``phi(s)`` and ``phi(s')`` on each row (``next_potential`` is 0 on terminated rows).
    residuals : float64 array of shape ``[N]``
        ``difference - (gamma * next_potential - potential)``.
    scale : float
        The reward's scale the residual is judged against (:func:`reward_scale`).
    max_abs_residual, rms_residual, relative_residual : float
        ``max |residual|``, its root mean square, and ``max |residual| / scale``.
    r_squared : float
        ``1 - SS_res / SS_tot`` of the difference (NaN for a constant difference): shown, never judged.
    n_features, rank, dof : int
        Features, the rank of the design, and the residual degrees of freedom ``N - rank``.
    dof_exact : bool
        False when ``rank`` / ``dof`` are estimated (large indicator bases, solved iteratively).
    leverage : float64 array of shape ``[N]``
        Each row's leverage: 1 where the row is fitted exactly whatever the difference (it cannot show a
        violation); estimated from random probes when ``dof_exact`` is False.
    n_testable : int
        Rows whose leverage is below 1: the rows the data can test.
    converged : bool
        False when the iterative solver stopped at its iteration cap (the residual may be overstated).
    iterations : int
        Conjugate-gradient iterations (0 for the dense solve).
    """

    basis: str
    weights: np.ndarray
    potential: np.ndarray
    next_potential: np.ndarray
    residuals: np.ndarray
    scale: float
    max_abs_residual: float
    rms_residual: float
    relative_residual: float
    r_squared: float
    n_features: int
    rank: int
    dof: int
    dof_exact: bool
    leverage: np.ndarray
    n_testable: int
    converged: bool
    iterations: int

    def verdict(self, tolerance: float) -> str:
        """``"cannot tell"`` without residual degrees of freedom, else ``"shaping"`` when the relative
        residual is at most ``tolerance``, else ``"not shaping"``."""
        tolerance = check_in_range("tolerance", tolerance, 0.0, np.inf)
        if self.dof <= 0 or self.n_testable == 0:
            return "cannot tell"
        return "shaping" if self.relative_residual <= tolerance else "not shaping"

    def breaking_rows(self, tolerance: float) -> np.ndarray:
        """Rows whose ``|residual|`` exceeds ``tolerance * scale``, largest first (int64 ``[R]``)."""
        tolerance = check_in_range("tolerance", tolerance, 0.0, np.inf)
        bad = np.flatnonzero(np.abs(self.residuals) > tolerance * self.scale)
        return bad[np.argsort(-np.abs(self.residuals[bad]), kind="stable")].astype(np.int64)


def _check_fit_inputs(difference, states, next_states, terminated, gamma, scale):
    d = as_array(difference, "difference")
    n = d.shape[0]
    if not np.all(np.isfinite(d)):
        raise ParameterError("difference", "should be finite on every row",
                             f"{int((~np.isfinite(d)).sum())} non-finite values, first at row "
                             f"{int(np.flatnonzero(~np.isfinite(d))[0])}")
    s = as_states(states, "states", n)
    sn = as_states(next_states, "next_states", n)
    if s.shape[1] != sn.shape[1]:
        raise ParameterError("next_states", f"should have the {s.shape[1]} columns of `states`", sn.shape)
    term = as_array(terminated, "terminated", dtype=bool, length=n)
    gamma = check_in_range("gamma", gamma, 0.0, 1.0)
    scale = reward_scale(d) if scale is None else check_positive("scale", scale)
    return d, s, sn, term, gamma, scale


def _features(fn, name, s, sn, term):
    """The basis on the states and the non-terminal next states: ``("ids", ids)`` or ``("dense", F)``."""
    live = ~term
    stacked = np.concatenate([s, sn[live]])
    out = np.asarray(fn(stacked))
    if out.ndim == 1 and out.dtype.kind in "iub" and out.shape[0] == stacked.shape[0]:
        return "ids", compact_ids(out.astype(np.int64))
    if out.ndim == 2 and out.shape[0] == stacked.shape[0] and out.dtype.kind in "iuf":
        out = out.astype(np.float64, copy=False)
        if not np.all(np.isfinite(out)):
            raise ParameterError("basis", "should give finite features", name)
        return "dense", out
    raise ParameterError("basis", f"should map states [{stacked.shape[0]}, D] to float features "
                         f"[{stacked.shape[0]}, K] or integer ids [{stacked.shape[0]}]", f"{name}: array of "
                         f"shape {out.shape} and dtype {out.dtype}")


def fit_potential(difference, states, next_states, *, terminated, gamma: float, basis: str = "linear",
                  scale: float | None = None) -> PotentialFit:
    """Fit ``difference = gamma * (1 - terminated) * phi(next_states) - phi(states)`` by least squares.

    Parameters
    ----------
    difference : float array of shape ``[N]``
        ``r' - r`` on each transition.
    states, next_states : arrays of shape ``[N]`` or ``[N, D]``
        ``s`` and ``s'`` of each transition (``next_states`` is not read where ``terminated``).
    terminated : bool array of shape ``[N]``
        True where ``s'`` is terminal (its potential is 0).  A truncated transition is not terminated: its
        next state is real and ``phi(s')`` counts.
    gamma : float
        The discount, in [0, 1].
    basis : str
        ``"auto"`` or a registered basis (:func:`~rewardlab.analysis.potential_bases.registered_bases`;
        ``"linear"`` by default).
    scale : float, optional
        The reward's scale the residual is judged against; default :func:`reward_scale` of ``difference``.

    Returns
    -------
    PotentialFit

    Notes
    -----
    Up to :data:`DENSE_LIMIT` features the normal equations are solved through an eigendecomposition of
    the column-scaled normal matrix (exact rank, leverages), refined twice; a larger indicator basis is
    solved by preconditioned conjugate gradients, with its rank and leverages estimated from two random
    probes (``dof_exact=False``).

    Examples
    --------
    >>> s = np.array([0.0, 1.0, 2.0, 3.0]); nxt = s + 1
    >>> diff = 0.5 * (2 * nxt + 1) - (2 * s + 1)
    >>> fit = fit_potential(diff, s, nxt, terminated=np.zeros(4, bool), gamma=0.5)
    >>> fit.verdict(1e-9), fit.relative_residual < 1e-12, fit.dof
    ('shaping', True, 2)
    """
    d, s, sn, term, gamma, scale = _check_fit_inputs(difference, states, next_states, terminated, gamma, scale)
    name, fn = resolve_basis(basis, s)
    n = d.shape[0]
    c = np.where(term, 0.0, gamma)
    kind, feats = _features(fn, name, s, sn, term)
    if kind == "ids":
        k = int(feats.max()) + 1 if feats.size else 0
        jn = np.zeros(n, dtype=np.int64)
        jn[~term] = feats[n:]
        op = _Indicator(feats[:n], jn, c, k)
        solved = _solve_dense(op, d) if k <= DENSE_LIMIT else _solve_cg(op, d)
        w = solved[0]
        pot = w[op.j] if k else np.zeros(n)
        nxt = np.where(term, 0.0, w[jn]) if k else np.zeros(n)
    else:
        k = feats.shape[1]
        phin = np.zeros((n, k))
        phin[~term] = feats[n:]
        op = _Dense(c[:, None] * phin - feats[:n])
        solved = _solve_dense(op, d)
        w = solved[0]
        pot = feats[:n] @ w
        nxt = phin @ w
    w, rank, lev, converged, iterations = solved
    res = d - (gamma * nxt - pot)
    ss_tot = float(np.sum((d - d.mean()) ** 2)) if n else 0.0
    max_abs = float(np.abs(res).max()) if n else 0.0
    return PotentialFit(
        basis=name, weights=w, potential=pot, next_potential=nxt, residuals=res, scale=float(scale),
        max_abs_residual=max_abs, rms_residual=float(np.sqrt(np.mean(res ** 2))) if n else 0.0,
        relative_residual=max_abs / scale, r_squared=1.0 - float(np.sum(res ** 2)) / ss_tot if ss_tot > 0
        else float("nan"), n_features=k, rank=rank, dof=n - rank, dof_exact=kind == "dense" or k <= DENSE_LIMIT,
        leverage=lev, n_testable=int(np.sum(lev < 1.0 - 1e-8)), converged=converged, iterations=iterations)


def fit_potential_reference(difference, states, next_states, *, terminated, gamma: float,
                            basis: str = "linear", scale: float | None = None) -> dict:
    """Plain-loop twin of :func:`fit_potential`: the design matrix built row by row, ``numpy.linalg.lstsq``.

    Returns
    -------
    dict
        ``residuals`` [N], ``rank``, ``dof``, ``relative_residual``, ``leverage`` [N].

    Examples
    --------
    >>> out = fit_potential_reference(np.array([1.0, 2.0]), np.array([0, 1]), np.array([1, 0]),
    ...                               terminated=np.array([False, True]), gamma=0.9, basis="tabular")
    >>> out["dof"]
    0
    """
    d, s, sn, term, gamma, scale = _check_fit_inputs(difference, states, next_states, terminated, gamma, scale)
    name, fn = resolve_basis(basis, s)
    n = d.shape[0]
    kind, feats = _features(fn, name, s, sn, term)
    if kind == "ids":
        k = int(feats.max()) + 1 if feats.size else 0
        dense = np.zeros((feats.shape[0], k))
        for row, i in enumerate(feats):
            dense[row, i] = 1.0
        feats = dense
    k = feats.shape[1]
    x = np.zeros((n, k))
    live = 0
    for t in range(n):
        x[t] = -feats[t]
        if not term[t]:
            x[t] += gamma * feats[n + live]
            live += 1
    w, *_ = np.linalg.lstsq(x, d, rcond=None)
    res = d - x @ w
    rank = int(np.linalg.matrix_rank(x)) if n and k else 0
    q = np.linalg.pinv(x)
    lev = np.array([float(x[t] @ q[:, t]) for t in range(n)])
    return {"residuals": res, "rank": rank, "dof": n - rank, "leverage": lev,
            "relative_residual": (float(np.abs(res).max()) if n else 0.0) / scale}
