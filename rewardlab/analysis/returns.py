"""Returns: per-episode return and length, discounted reward-to-go, generalized advantage estimation.

Two layers, in the style of TorchRL's ``objectives/value/functional.py``:

* **pure array functions** (NumPy arrays or torch tensors in, the same type
  out, float64) over one flat time axis ``[T]`` holding many trajectories one
  after another, delimited by ``done``: :func:`segment_ids`,
  :func:`segment_returns`, :func:`discounted_reward_to_go`,
  :func:`generalized_advantage_estimate`, and the linear-recurrence scan
  under them, :func:`linear_scan`;
* **a thin frame layer** that takes a frame and a reward name and reads
  ``reward_<name>``, the plug-in's own ``done_<name>``, and the episodes and
  terminal flags through the frame's spec
  (:func:`rewardlab.sources.registry.spec_of`, or ``spec=``):
  :func:`trajectory_returns` (older name `episode_returns`), :func:`reward_to_go`, :func:`gae`.
  A dataset folder is read part by part (:mod:`rewardlab.analysis.returns_parts`;
  ``out=`` writes the per-step columns as a folder of the same parts), with
  the same results bit for bit: parts hold whole episodes.

Episode boundaries in the frame layer
-------------------------------------
A trajectory ends where the plug-in's ``done_<name>`` is True, so a plug-in
that ends trajectories every round has per-round returns.  A trajectory never
runs across an episode: an episode end (a terminal flag of the spec, a change
of the episode key, the data's last row) ends one too, because the next row
belongs to another episode; in a kanachan frame, ``end_of_game`` or a change
of ``game_id`` / ``seat``, the next row being another player's.  (A plug-in
that sets ``done = end_of_round`` on offline data leaves the game's last step
``done=False``; kanachan's format notes say why.)  A table of reward and done
columns alone is one stream cut at ``done_<name>``.

Termination and truncation
--------------------------
Where the spec has a ``truncated`` flag, a trajectory that ends on a
truncated step was *cut*, not ended: its next state has a value.  As in
TorchRL, termination bootstraps with zero and truncation with the next
state's value: :func:`gae` and :func:`reward_to_go` take it from a
``next_value`` column at truncated steps (the following row belongs to
another episode there), or compute it from the episode's **final state**
when ``next_value`` is a function and the data keeps final states (the
spec's :attr:`~rewardlab.core.spec.StateColumn.final` columns: Gymnasium
recordings, RLlib's ``new_obs``, Minari, step tables with a ``final`` row).
Without ``next_value``, :func:`reward_to_go` gives
the return of the recorded part (``flag_truncated=True`` says which steps),
and :func:`gae` refuses, naming the first truncated step.

Vectorization
-------------
The recursions ``x[t] = b[t] + a[t] * x[t + 1]`` are evaluated with a
doubling (Hillis-Steele) scan: ``ceil(log2(L))`` whole-array passes where
``L`` is the longest run without a cut, stopping early once every
coefficient product is 0.  Results equal the plain loop up to floating-point
reassociation (tests compare them with ``rtol=1e-10``).

Examples
--------
>>> import numpy as np
>>> from rewardlab.analysis.returns import discounted_reward_to_go
>>> discounted_reward_to_go(np.array([1.0, 1.0, 1.0]), np.array([False, True, True]), gamma=0.5)
array([1.5, 1. , 1. ])
"""

from __future__ import annotations

import numpy as np
import polars as pl
import torch

from rewardlab.core import columns
from rewardlab.core.spec import FrameSpec, attach
from rewardlab.core.errors import ColumnNotFoundError, ParameterError, check_in_range
from rewardlab.sources.datasets import PartedDataset, is_dataset_folder
from rewardlab.sources.registry import spec_of
from rewardlab.analysis.scopes import cut_expr, episode_end_expr, trajectory_end_expr
from rewardlab.analysis.sums import segment_sums
from rewardlab.analysis.tables import column_names, lazy_table, resolve_reward

__all__ = [
    "as_array",
    "linear_scan",
    "segment_ids",
    "segment_returns",
    "discounted_reward_to_go",
    "generalized_advantage_estimate",
    "episode_returns", "trajectory_returns",
    "reward_to_go",
    "gae",
    "bootstrap_from_final",
]


# --------------------------------------------------------------------------
# Array plumbing
# --------------------------------------------------------------------------


def as_array(x, name: str, *, dtype=np.float64, length: int | None = None) -> np.ndarray:
    """``x`` (array-like or tensor, shape ``[T]`` or ``[T, 1]``) as a 1-D array of ``dtype``; ``name`` for messages.

    Examples
    --------
    >>> as_array([[1.0], [2.0]], "reward")
    array([1., 2.])
    """
    if isinstance(x, torch.Tensor):
        x = x.detach().cpu().numpy()
    arr = np.asarray(x)
    if arr.ndim == 2 and arr.shape[1] == 1:  # [T, 1], as kanachan allows for rewards
        arr = arr[:, 0]
    if arr.ndim != 1:
        raise ParameterError(name, "should be 1-D with shape [T]", arr.shape)
    if length is not None and arr.shape[0] != length:
        raise ParameterError(name, f"should have shape [{length}] like `reward`", arr.shape)
    if dtype is bool:
        if arr.dtype != np.bool_:
            if not np.all((arr == 0) | (arr == 1)):
                raise ParameterError(name, "should hold booleans (or 0/1)", arr[:5].tolist())
            arr = arr.astype(bool)
        return arr
    return arr.astype(dtype, copy=False)


def _like(template, arr: np.ndarray):
    """Return ``arr`` as a torch tensor if ``template`` is one (float64), else as is."""
    if isinstance(template, torch.Tensor):
        return torch.from_numpy(np.ascontiguousarray(arr))
    return arr


# --------------------------------------------------------------------------
# Pure functions
# --------------------------------------------------------------------------


def linear_scan(coef, offset, *, reverse: bool = True):
    """Solve the first-order linear recurrence over a flat time axis.

    ``reverse=True``: ``x[t] = offset[t] + coef[t] * x[t + 1]`` with
    ``x[T] = 0`` (returns, advantages).  ``reverse=False``:
    ``x[t] = offset[t] + coef[t] * x[t - 1]`` with ``x[-1] = 0`` (running
    discounted sums, as reward normalizers keep).

    Parameters
    ----------
    coef : array or tensor of shape ``[T]``
        Per-step coefficients; 0 cuts the recursion.
    offset : array or tensor of shape ``[T]``
        Per-step additive terms.
    reverse : bool
        Direction of the recursion.

    Returns
    -------
    array or tensor of shape ``[T]``, float64
        Same type as ``offset``.

    Examples
    --------
    >>> linear_scan(np.array([0.5, 0.5, 0.0]), np.array([1.0, 2.0, 4.0]))
    array([3., 4., 4.])
    >>> linear_scan(np.array([0.0, 0.5, 0.5]), np.array([1.0, 2.0, 4.0]), reverse=False)
    array([1.  , 2.5 , 5.25])

    A non-finite value stays behind a cut (``coef`` 0):

    >>> linear_scan(np.array([0.5, 0.0, 0.5]), np.array([1.0, 2.0, np.nan]))
    array([ 2.,  2., nan])
    """
    b = as_array(offset, "offset")
    a = as_array(coef, "coef", length=b.shape[0])
    if not reverse:
        return _like(offset, _reverse_scan(a[::-1], b[::-1])[::-1].copy())
    return _like(offset, _reverse_scan(a, b))


def _reverse_scan(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """Doubling scan for ``x[t] = b[t] + a[t] * x[t + 1]``, ``x[T] = 0``.

    After the pass with shift ``s``, ``x[t]`` is the solution restricted to
    ``[t, t + 2s)`` and ``A[t]`` the product of ``a`` over that window, so one
    pass doubles the window; once every ``A`` is 0 no window reaches further.
    """
    x = np.array(b, dtype=np.float64, copy=True)
    A = np.array(a, dtype=np.float64, copy=True)
    n = x.shape[0]
    if n == 0:
        return x
    A[-1] = 0.0  # nothing follows the last step
    # a non-finite value must not cross a cut: 0 * inf is NaN, so where the window's product is 0 the
    # step adds nothing (only checked when some value is not finite: finite data keeps the plain path)
    guard = not (np.isfinite(x).all() and np.isfinite(A).all())
    s = 1
    while s < n and A.any():
        with np.errstate(invalid="ignore" if guard else "warn"):
            step = A[:-s] * x[s:]
        if guard:
            step[A[:-s] == 0.0] = 0.0
        x[:-s] += step
        A[:-s] *= A[s:]
        A[-s:] = 0.0
        s *= 2
    return x


def segment_ids(done):
    """Index of the trajectory each step belongs to (0, 1, ...); a trajectory ends at each ``done``.

    Parameters
    ----------
    done : bool array or tensor of shape ``[T]``

    Returns
    -------
    int64 array or tensor of shape ``[T]``

    Examples
    --------
    >>> segment_ids(np.array([False, True, False, True, False]))
    array([0, 0, 1, 1, 2])
    """
    d = as_array(done, "done", dtype=bool)
    ids = np.zeros(d.shape[0], dtype=np.int64)
    if d.shape[0] > 1:
        np.cumsum(d[:-1], out=ids[1:])
    return _like(done, ids)


def segment_returns(reward, done):
    """Undiscounted return and length of each trajectory (trailing steps without ``done`` form the last one).

    Like ReinforcementLearning.jl's ``TotalRewardPerEpisode`` and
    ``StepsPerEpisode`` hooks, over a recorded trajectory.

    Parameters
    ----------
    reward : float array or tensor of shape ``[T]``
    done : bool array or tensor of shape ``[T]``

    Returns
    -------
    returns : float64 array or tensor of shape ``[E]``
    lengths : int64 array or tensor of shape ``[E]``

    Examples
    --------
    >>> segment_returns(np.array([1.0, 2.0, 4.0]), np.array([False, True, True]))
    (array([3., 4.]), array([2, 1]))
    """
    r = as_array(reward, "reward")
    d = as_array(done, "done", dtype=bool, length=r.shape[0])
    if r.shape[0] == 0:
        return _like(reward, np.zeros(0)), _like(reward, np.zeros(0, dtype=np.int64))
    ends = np.flatnonzero(d)
    if ends.size == 0 or ends[-1] != r.shape[0] - 1:
        ends = np.append(ends, r.shape[0] - 1)
    starts = np.concatenate(([0], ends[:-1] + 1))
    returns = segment_sums(r, starts)  # compensated, in order: the same wherever the segment lies
    lengths = (ends - starts + 1).astype(np.int64)
    return _like(reward, returns), _like(reward, lengths)


def discounted_reward_to_go(reward, done, *, gamma: float, terminated=None, next_value=None):
    """Discounted reward-to-go ``G[t] = r[t] + gamma * (1 - done[t]) * G[t + 1]``, bootstrapping cut trajectories.

    A trajectory that ends ``done`` but not ``terminated`` (truncated: cut by
    a time limit or the end of a recording) adds ``gamma * next_value[t]`` at
    its last step, TorchRL's TD(1) return: ``G[t] = r[t] + gamma *
    next_value[t]`` there.

    Parameters
    ----------
    reward : float array or tensor of shape ``[T]``
    done : bool array or tensor of shape ``[T]``
        True on the last step of each trajectory.
    gamma : float
        Discount factor in [0, 1].
    terminated : bool array or tensor of shape ``[T]``, optional
        Terminal steps; default ``done`` (no bootstrap anywhere).
    next_value : float array or tensor of shape ``[T]``, optional
        ``V(s[t + 1])``; read only where ``done and not terminated`` (NaN
        elsewhere is fine).  Needed when such steps exist.

    Returns
    -------
    float64 array or tensor of shape ``[T]``

    Examples
    --------
    >>> discounted_reward_to_go(np.array([0.0, 0.0, 1.0]), np.array([False, False, True]), gamma=0.9)
    array([0.81, 0.9 , 1.  ])
    >>> discounted_reward_to_go(np.array([0.0, 1.0]), np.array([False, True]), gamma=0.5,
    ...                         terminated=np.array([False, False]), next_value=np.array([0.0, 4.0]))
    array([1.5, 3. ])
    """
    gamma = check_in_range("gamma", gamma, 0.0, 1.0)
    r = as_array(reward, "reward")
    n = r.shape[0]
    d = as_array(done, "done", dtype=bool, length=n)
    offset = r
    if terminated is not None:
        term = as_array(terminated, "terminated", dtype=bool, length=n)
        cut = d & ~term
        if cut.any():
            if next_value is None:
                raise ParameterError("next_value", f"should be given: {int(cut.sum())} trajectories end "
                                     f"done but not terminated (first at step {int(np.flatnonzero(cut)[0])}) "
                                     "and bootstrap with the next state's value", None)
            nv = as_array(next_value, "next_value", length=n)
            boot = nv[cut]
            if not np.all(np.isfinite(boot)):
                raise ParameterError("next_value", "should be finite where a trajectory is cut "
                                     "(done and not terminated)", boot[~np.isfinite(boot)][:3].tolist())
            offset = r.copy()
            offset[cut] += gamma * boot
    return _like(reward, _reverse_scan(gamma * (~d), offset))


def generalized_advantage_estimate(reward, value, next_value, done, *, terminated=None,
                                   gamma: float, lmbda: float):
    """Generalized advantage estimation (Schulman et al. 2016) with separate terminated / done flags.

    ``delta[t] = r[t] + gamma * (1 - terminated[t]) * next_value[t] - value[t]``
    and ``A[t] = delta[t] + gamma * lmbda * (1 - done[t]) * A[t + 1]``:
    ``terminated`` cuts the bootstrap (the next state is terminal, worth 0),
    ``done`` cuts the recursion (the trajectory ends, whether or not the state
    is terminal), as in TorchRL's functional GAE.

    Parameters
    ----------
    reward, value, next_value : float arrays or tensors of shape ``[T]``
        Rewards, ``V(s[t])`` and ``V(s[t + 1])``.
    done : bool array or tensor of shape ``[T]``
        End of each trajectory.
    terminated : bool array or tensor of shape ``[T]``, optional
        Terminal next states; default ``done``.
    gamma, lmbda : float
        Discount and GAE lambda, in [0, 1].

    Returns
    -------
    advantage : float64 array or tensor of shape ``[T]``
    value_target : float64 array or tensor of shape ``[T]``
        ``advantage + value``.

    Examples
    --------
    >>> r = np.array([0.0, 1.0]); v = np.array([0.5, 0.5]); nv = np.array([0.5, 9.0])
    >>> adv, target = generalized_advantage_estimate(r, v, nv, np.array([False, True]), gamma=1.0, lmbda=1.0)
    >>> adv
    array([0.5, 0.5])
    """
    gamma = check_in_range("gamma", gamma, 0.0, 1.0)
    lmbda = check_in_range("lmbda", lmbda, 0.0, 1.0)
    r = as_array(reward, "reward")
    n = r.shape[0]
    v = as_array(value, "value", length=n)
    nv = as_array(next_value, "next_value", length=n)
    d = as_array(done, "done", dtype=bool, length=n)
    term = d if terminated is None else as_array(terminated, "terminated", dtype=bool, length=n)
    delta = r + gamma * np.where(term, 0.0, nv) - v
    adv = _reverse_scan(gamma * lmbda * (~d), delta)
    return _like(reward, adv), _like(reward, adv + v)


# --------------------------------------------------------------------------
# Frame layer
# --------------------------------------------------------------------------


def _final_state_exprs(names: list[str], spec: FrameSpec) -> dict[str, pl.Expr]:
    """``{state: expression}`` of the spec's final-state columns present in ``names``."""
    return {s.name: pl.col(s.final).alias(f"_final {s.name}") for s in spec.states
            if s.final is not None and s.final in names}


def bootstrap_from_final(fn, finals: dict[str, pl.Series], rows: np.ndarray) -> np.ndarray:
    """``fn`` of the final states at ``rows`` (truncated last steps): the values a cut trajectory bootstraps with.

    Parameters
    ----------
    fn : callable
        ``fn(final) -> values``: ``final`` is the final states of the ``K``
        rows, a NumPy array ``[K]`` or ``[K, width]`` when the data has one
        state with final values, else a dict ``{state: array}``; ``values`` a
        finite float array ``[K]`` (a state-value function ``V(s)``).
    finals : dict
        ``{state: Series}`` of the final-state columns, one value per row
        (null off the episodes' last rows).
    rows : int array ``[K]``
        The rows that bootstrap.

    Returns
    -------
    numpy.ndarray
        float64 ``[K]``.

    Examples
    --------
    >>> import polars as pl
    >>> finals = {"obs": pl.Series([None, [0.5, 1.0]], dtype=pl.Array(pl.Float32, 2))}
    >>> bootstrap_from_final(lambda s: s.sum(axis=1), finals, np.array([1])).tolist()
    [1.5]
    """
    if not finals:
        raise ParameterError("next_value", "can be a function of the final state only where the data keeps "
                             "final states (a state column with a final column in the spec), and this data "
                             "has none", getattr(fn, "__name__", type(fn).__name__),
                             hint="Pass the name of a column holding V(s[t+1]) instead, or load data that "
                             "keeps each episode's final observation (rewardlab.record, RLlib with new_obs, "
                             "Minari, a step table with final rows)")
    states = {}
    for name, series in finals.items():
        picked = series.gather(rows)
        if picked.null_count():
            missing = rows[picked.is_null().to_numpy()]
            raise ParameterError("next_value", f"needs the final state of every truncated episode, and the data "
                                 f"lacks it for {missing.size} of {rows.size} (state {name!r}; first at row "
                                 f"{int(missing[0])})", getattr(fn, "__name__", type(fn).__name__),
                                 hint="Pass a column holding V(s[t+1]) for those steps instead")
        states[name] = picked.to_numpy()
    values = fn(next(iter(states.values())) if len(states) == 1 else states)
    values = as_array(values, "next_value(final)")
    if values.shape != (rows.size,) or not np.isfinite(values).all():
        raise ParameterError("next_value", f"should return {rows.size} finite values (one per truncated "
                             "episode's final state)", f"shape {values.shape}, "
                             f"{int((~np.isfinite(values)).sum()) if values.ndim == 1 else '?'} not finite")
    return values


class _Trajectories:
    """One reward's trajectories in a frame: the columns the frame layer reads, as NumPy arrays."""

    def __init__(self, data, reward: str, spec: FrameSpec | None, extra: dict | None = None, *,
                 episode_end: bool = False):
        lf, _ = lazy_table(data)
        names = column_names(lf)
        self.name = name = resolve_reward(names, reward)
        done = columns.done_column(name)
        if done not in names:
            raise ColumnNotFoundError(done, [c for c in names if c.startswith(columns.DONE_PREFIX)])
        self.spec = here = spec_of(lf, spec)
        self.keys = [k for k in here.episode if k in names]
        flags = {}
        if here.truncated is not None:  # only then does how a trajectory ended tell anything
            flags["_truncated"] = pl.col(here.truncated).fill_null(False)
            if here.terminated is not None:
                flags["_terminated"] = pl.col(here.terminated).fill_null(False)
            flags["_cut"] = cut_expr(names, here)
        extra = dict(extra or {})
        finals = _final_state_exprs(names, here)
        extra.update({f"_final {k}": e for k, e in finals.items()})
        if episode_end:
            extra["_episode_end"] = episode_end_expr(names, here)
        df = lf.select(
            *self.keys,
            pl.col(columns.reward_column(name)).cast(pl.Float64).alias("_reward"),
            trajectory_end_expr(names, done, here).alias("_boundary"),
            *[e.alias(k) for k, e in (flags | extra).items()],
        ).collect()
        self.frame = df
        self.reward = df["_reward"].to_numpy()
        self.boundary = df["_boundary"].to_numpy()
        # a cut trajectory bootstraps (scopes.cut_expr: a step flagged both ways ended)
        self.truncated = df["_cut"].to_numpy() & self.boundary if "_cut" in df.columns else \
            np.zeros(df.height, dtype=bool)
        self.finals = {k: df[f"_final {k}"] for k in finals}

    def bootstrap(self, fn) -> np.ndarray:
        """``fn`` of the truncated last steps' final states, ``[T]`` with NaN elsewhere."""
        nv = np.full(self.reward.shape[0], np.nan)
        rows = np.flatnonzero(self.truncated)
        if rows.size:
            nv[rows] = bootstrap_from_final(fn, self.finals, rows)
        return nv

    def key_frame(self, rows: np.ndarray) -> list[pl.Series]:
        return [self.frame[k].gather(rows) for k in self.keys]


def _is_folder(data) -> bool:
    """True for a dataset folder (a path holding a manifest, or an opened one): it is read part by part."""
    return isinstance(data, PartedDataset) or is_dataset_folder(data)


def _frame_only(out) -> None:
    if out is not None:
        raise ParameterError("out", "applies to a dataset folder (on a frame, the result is returned)", str(out),
                             hint="Pass a dataset folder (`rewardlab convert ... --out FOLDER`) as data, or "
                             "write the returned frame yourself.")


def _result(table: pl.DataFrame, spec: FrameSpec) -> pl.DataFrame:
    """Attach the data's spec (projected to the table's key columns) to an output table."""
    return attach(table, spec.project(table.columns)) if spec.episode else table


def trajectory_returns(data, reward: str, *, spec: FrameSpec | None = None, engine: str = "embedded",
                       workers: int | None = None, address: str | None = None,
                       progress: bool | None = None) -> pl.DataFrame:
    """One row per trajectory of plug-in ``reward``: its undiscounted return (a *trajectory return*) and length.

    Trajectories end at ``done_<name>`` and at every episode end (see the
    module docstring): the sums of scope ``"trajectory_return"``.  For one sum
    per whole episode (an *episode return*, scope ``"episode_return"``, what
    the plots show), see :func:`rewardlab.analysis.compare.episode_return_table`.
    ``episode_returns`` is this function's older name, kept working.

    Parameters
    ----------
    data : polars.DataFrame, LazyFrame, path(s) to Parquet, or a dataset folder
        A rewards table or a frame with ``reward_<name>`` / ``done_<name>``;
        a dataset folder (or :class:`~rewardlab.sources.datasets.PartedDataset`)
        is read part by part (:mod:`rewardlab.analysis.returns_parts`).
    reward : str
        The plug-in name.
    spec : FrameSpec, optional
        How the rows form episodes (default: the frame's spec, see
        :func:`rewardlab.sources.registry.spec_of`).
    engine, workers, address, progress
        A dataset folder only: where its parts run (:mod:`rewardlab.engines`)
        and a bar over them (default: when interactive).

    Returns
    -------
    polars.DataFrame
        Columns ``episode`` (0, 1, ...: the trajectory's index, called
        ``trajectory`` when an episode key column is called ``episode``), the
        spec's episode key columns present in the data (of the trajectory's
        first step; kanachan's ``game_id``, ``seat``), ``start`` (row index of its first step),
        ``length``, ``return``; in data order.  When the spec has a
        ``truncated`` flag, also Boolean ``terminated`` and ``truncated``:
        the spec's flags on the trajectory's last step (both False where the
        plug-in's done or the end of the data cut it; kanachan's spec has no
        truncated flag, every game ends terminated, so its table has neither).

    Examples
    --------
    >>> import polars as pl
    >>> f = pl.DataFrame({"reward_a": [1.0, 2.0, 4.0], "done_a": [False, True, True]})
    >>> trajectory_returns(f, "a")["return"].to_list()
    [3.0, 4.0]
    """
    if _is_folder(data):
        from rewardlab.analysis.returns_parts import trajectory_returns_of_dataset  # same floor; it imports this

        return trajectory_returns_of_dataset(data, reward, spec=spec, engine=engine, workers=workers,
                                             address=address, progress=progress)
    tr = _Trajectories(data, reward, spec)
    returns, lengths = segment_returns(tr.reward, tr.boundary)
    starts = np.concatenate(([0], np.cumsum(lengths)[:-1])).astype(np.int64) if lengths.size else \
        np.zeros(0, dtype=np.int64)
    ends = starts + lengths - 1
    index = "episode" if "episode" not in tr.keys else "trajectory"
    cols = [pl.Series(index, np.arange(lengths.size, dtype=np.int64)), *tr.key_frame(starts)]
    cols += [pl.Series("start", starts), pl.Series("length", lengths), pl.Series("return", returns)]
    if "_truncated" in tr.frame.columns:
        if "_terminated" in tr.frame.columns:
            cols.append(tr.frame["_terminated"].gather(ends).alias("terminated"))
        cols.append(tr.frame["_truncated"].gather(ends).alias("truncated"))
    return _result(pl.DataFrame(cols), tr.spec)


#: The older name of :func:`trajectory_returns` (one row per trajectory, not per episode).
episode_returns = trajectory_returns


def reward_to_go(data, reward: str, *, gamma: float, next_value=None,
                 flag_truncated: bool = False, spec: FrameSpec | None = None, out=None, overwrite: bool = False,
                 engine: str = "embedded", workers: int | None = None, address: str | None = None,
                 progress: bool | None = None):
    """Discounted reward-to-go of plug-in ``reward`` at every step (trajectories as in :func:`trajectory_returns`).

    At a step where the spec's ``truncated`` flag fires the episode was cut,
    and the return cannot bootstrap without a value: with ``next_value`` it
    adds ``gamma * next_value`` there (TorchRL's TD(1) return); without, each
    step of that trajectory gets the discounted return of the recorded part
    (as if the episode had ended there), and ``flag_truncated=True`` says
    which steps those are.  Terminated trajectories bootstrap with zero.

    Parameters
    ----------
    data : polars.DataFrame, LazyFrame, path(s) to Parquet, or a dataset folder
        A rewards table or a frame with ``reward_<name>`` / ``done_<name>``;
        a dataset folder is read part by part, with the same results bit
        for bit (:func:`rewardlab.analysis.returns_parts.reward_to_go_of_dataset`).
    reward : str
        The plug-in name.
    gamma : float
        Discount in [0, 1].
    next_value : str or callable, optional
        Column holding ``V(s[t + 1])``, read at truncated steps only; or a
        function of the final state, ``next_value(final) -> values`` (see
        :func:`bootstrap_from_final`), where the data keeps each episode's
        final state.
    flag_truncated : bool
        Return a frame with a Boolean column ``truncated`` as well: True on
        every step whose value is the return of a recorded part only (its
        trajectory ended truncated and was not bootstrapped).
    spec : FrameSpec, optional
        How the rows form episodes (default: the frame's spec).
    out : path, optional
        A dataset folder only: write the result as a dataset folder there,
        part for part (the episode keys and the columns returned; its
        manifest names ``data`` as its base), and return it opened.  Without
        it, a folder's result is returned in memory.
    overwrite : bool
        Replace a dataset folder at ``out``.
    engine, workers, address, progress
        A dataset folder only: as :func:`trajectory_returns`.

    Returns
    -------
    polars.Series, or polars.DataFrame with ``flag_truncated=True``
        Float64, named ``return_to_go_<name>``, one value per row; with
        ``out``, the written folder (a :class:`~rewardlab.sources.datasets.PartedDataset`).

    Examples
    --------
    >>> import polars as pl
    >>> f = pl.DataFrame({"reward_a": [0.0, 1.0, 1.0], "done_a": [False, True, True]})
    >>> reward_to_go(f, "a", gamma=0.5).to_list()
    [0.5, 1.0, 1.0]
    """
    if _is_folder(data):
        from rewardlab.analysis.returns_parts import reward_to_go_of_dataset  # same floor; it imports this

        return reward_to_go_of_dataset(data, reward, gamma=gamma, next_value=next_value,
                                       flag_truncated=flag_truncated, spec=spec, out=out, overwrite=overwrite,
                                       engine=engine, workers=workers, address=address, progress=progress)
    _frame_only(out)
    gamma = check_in_range("gamma", gamma, 0.0, 1.0)
    if not isinstance(flag_truncated, bool):
        raise ParameterError("flag_truncated", "should be True or False", flag_truncated)
    lf, _ = lazy_table(data)
    extra = {}
    if next_value is not None and not callable(next_value):
        _check_value_column(column_names(lf), next_value, "next_value")
        extra["_next_value"] = pl.col(next_value).cast(pl.Float64)
    tr = _Trajectories(lf, reward, spec, extra)
    cut = tr.truncated
    if next_value is not None:
        nv = (tr.bootstrap(next_value) if callable(next_value)
              else tr.frame["_next_value"].fill_null(np.nan).to_numpy())
        g = discounted_reward_to_go(tr.reward, tr.boundary, gamma=gamma, terminated=tr.boundary & ~cut,
                                    next_value=nv)
        partial = np.zeros(tr.reward.shape[0], dtype=bool)
    else:
        g = discounted_reward_to_go(tr.reward, tr.boundary, gamma=gamma)
        ids = segment_ids(tr.boundary)
        partial = np.zeros(int(ids[-1]) + 1 if ids.size else 0, dtype=bool)
        partial[ids[cut]] = True
        partial = partial[ids]
    series = pl.Series(f"return_to_go_{tr.name}", g)
    if not flag_truncated:
        return series
    return pl.DataFrame([series, pl.Series("truncated", partial)])


def _check_value_column(names: list[str], col, what: str) -> None:
    if not isinstance(col, str):
        raise ParameterError(what, "should be a column name", col)
    if col not in names:
        raise ColumnNotFoundError(col, names)


def gae(data, reward: str, *, value: str, gamma: float, lmbda: float,
        terminated: str | None = None, next_value=None,
        spec: FrameSpec | None = None, out=None, overwrite: bool = False, engine: str = "embedded",
        workers: int | None = None, address: str | None = None, progress: bool | None = None):
    """Generalized advantage estimation of plug-in ``reward`` given a state-value column.

    The next state's value is the following row's ``value`` (each state is
    stored once; the row after a non-final step is the next step of the same
    episode), or the ``next_value`` column when given.  ``done_<name>`` (and
    every episode end) cuts the recursion; ``terminated`` cuts the bootstrap
    (zero); a step where the spec's ``truncated`` flag fires bootstraps with
    ``next_value`` (TorchRL's ``done`` / ``terminated`` semantics).

    Parameters
    ----------
    data : polars.DataFrame, LazyFrame, path(s) to Parquet, or a dataset folder
        A frame with ``reward_<name>``, ``done_<name>`` and ``value``; a
        dataset folder is read part by part, with the same results bit for
        bit (:func:`rewardlab.analysis.returns_parts.gae_of_dataset`; a
        rewards folder reads ``value`` from its base).
    reward : str
        The plug-in name.
    value : str
        Column holding ``V(s[t])`` for each row.
    gamma, lmbda : float
        Discount and GAE lambda, in [0, 1].
    terminated : str, optional
        Boolean column of terminal steps.  Default: the plug-in's done
        (kanachan treats the end of a trajectory as terminal).  An episode
        end is terminal too, unless the spec's ``truncated`` flag fires on it.
    next_value : str or callable, optional
        Column holding ``V(s[t + 1])``, used at every step that bootstraps.
        Needed when the data has truncated steps (there the following row is
        another episode's first state).  Or a function of the final state,
        ``next_value(final) -> values`` (see :func:`bootstrap_from_final`),
        where the data keeps each episode's final state: it gives the
        truncated steps' next values, and the following row's ``value`` the
        others'.
    spec : FrameSpec, optional
        How the rows form episodes (default: the frame's spec).
    out, overwrite, engine, workers, address, progress
        A dataset folder only: as :func:`reward_to_go`.

    Returns
    -------
    polars.DataFrame
        Columns ``advantage`` and ``value_target``, one row per input row;
        with ``out``, the written folder.

    Examples
    --------
    >>> import polars as pl
    >>> from rewardlab.core.spec import FrameSpec
    >>> f = pl.DataFrame({"reward_a": [0.0, 1.0], "done_a": [False, True], "v": [0.5, 0.5]})
    >>> gae(f, "a", value="v", gamma=1.0, lmbda=1.0, spec=FrameSpec(name="stream"))["advantage"].to_list()
    [0.5, 0.5]
    """
    if _is_folder(data):
        from rewardlab.analysis.returns_parts import gae_of_dataset  # same floor; it imports this

        return gae_of_dataset(data, reward, value=value, gamma=gamma, lmbda=lmbda, terminated=terminated,
                              next_value=next_value, spec=spec, out=out, overwrite=overwrite, engine=engine,
                              workers=workers, address=address, progress=progress)
    _frame_only(out)
    gamma = check_in_range("gamma", gamma, 0.0, 1.0)
    lmbda = check_in_range("lmbda", lmbda, 0.0, 1.0)
    lf, _ = lazy_table(data)
    names = column_names(lf)
    for col, what in ((value, "value"), (terminated, "terminated"),
                      (None if callable(next_value) else next_value, "next_value")):
        if col is not None:
            _check_value_column(names, col, what)
    name = resolve_reward(names, reward)
    extra = {"_value": pl.col(value).cast(pl.Float64),
             "_term": pl.col(terminated if terminated is not None else columns.done_column(name))}
    if next_value is not None and not callable(next_value):
        extra["_next_value"] = pl.col(next_value).cast(pl.Float64)
    tr = _Trajectories(lf, name, spec, extra, episode_end=True)
    df = tr.frame
    v = df["_value"].to_numpy()
    if np.isnan(v).any() or df["_value"].null_count():
        raise ParameterError("value", "should name a column without null or NaN values", value)
    term = (df["_term"].to_numpy() | df["_episode_end"].to_numpy()) & ~tr.truncated
    if next_value is None:
        if tr.truncated.any():
            first = int(np.flatnonzero(tr.truncated)[0])
            raise ParameterError(
                "next_value", f"should name a column holding V(s[t+1]): {int(tr.truncated.sum())} steps are "
                f"truncated (first at row {first}), and there the following row is another episode's "
                "first state", None,
                hint="A truncated episode bootstraps with its next state's value (termination with zero)")
        nv = np.append(v[1:], 0.0)  # the last row is always terminal or truncated, so its 0 is never used
    elif callable(next_value):
        nv = np.append(v[1:], 0.0)
        nv[tr.truncated] = bootstrap_from_final(next_value, tr.finals, np.flatnonzero(tr.truncated))
        nv = np.where(term, 0.0, nv)
    else:
        nv = df["_next_value"].fill_null(np.nan).to_numpy()
        bad = ~term & ~np.isfinite(nv)
        if bad.any():
            raise ParameterError("next_value", "should name a column without null or NaN values on the "
                                 f"steps that bootstrap (first at row {int(np.flatnonzero(bad)[0])})",
                                 next_value)
        nv = np.where(term, 0.0, nv)
    adv, target = generalized_advantage_estimate(
        tr.reward, v, nv, tr.boundary, terminated=term, gamma=gamma, lmbda=lmbda)
    return pl.DataFrame({"advantage": adv, "value_target": target})
