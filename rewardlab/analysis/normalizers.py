"""What normalization does: fixed constants, and replays of the running normalizers users reach for.

Replays walk the dataset in frame order as **one environment** would, with
the running statistics starting fresh (mean 0, variance 1, count ``1e-4``,
the ``RunningMeanStd`` both libraries use) and updated after every step:

* **Gymnasium** ``NormalizeReward(gamma, epsilon)`` (``gymnasium.wrappers``,
  1.x): keeps the discounted sum ``G[t] = G[t - 1] * gamma * (1 -
  terminated[t]) + r[t]`` (the step's own ``terminated`` zeroes the carried
  sum *before* adding its reward; truncation never resets it, and neither
  does ``reset()``, so the next episode's first step carries ``gamma * G``
  of a truncated one), feeds ``G[t]`` to the running variance, and returns
  ``r[t] / sqrt(var[t] + epsilon)`` (float64); no mean is subtracted.
* **Stable-Baselines3** ``VecNormalize(norm_reward=True, gamma, epsilon,
  clip_reward)``: keeps ``G[t] = G[t - 1] * gamma + r[t]`` and zeroes it
  *after* any done step (terminated or truncated: a ``VecEnv``'s ``done``),
  feeds ``G[t]`` to the running variance, and returns ``clip(r[t] /
  sqrt(var[t] + epsilon), -clip_reward, clip_reward)`` cast to float32.
  SB3's ``DummyVecEnv`` stores the environment's rewards as float32 before
  ``VecNormalize`` sees them: pass ``reward.astype(np.float32)`` to replay
  that exactly (plug-in rewards that are float32 already need nothing).

Exactness
---------
Both are sequential recursions, replayed by compiled loops
(:mod:`rewardlab.analysis.replay_kernels`) that perform the classes' own
float64 operations in the same order, so the replays equal the real classes
bit for bit: ``tests/test_normalizers.py`` runs
``gymnasium.wrappers.NormalizeReward`` and
``stable_baselines3.common.vec_env.VecNormalize`` over the committed
Gymnasium recordings (``data/gym/``) and random streams with episodes that end
both ways, and compares with ``==``.  About 9 ms per million steps each
(``make bench``).
:func:`running_mean_var` is the vectorized closed form of the same running
variance (equal up to rounding), for analyses that want it without a loop.

Examples
--------
>>> import numpy as np
>>> from rewardlab.analysis.normalizers import sb3_normalize_reward
>>> out = sb3_normalize_reward(np.array([0.0, 0.0, 5.0]), np.array([False, False, True]), clip_reward=1.0)
>>> out.fraction_clipped
0.3333333333333333
"""

from __future__ import annotations

import dataclasses

import numpy as np
import polars as pl

from rewardlab.core import columns
from rewardlab.core.spec import FrameSpec
from rewardlab.core.errors import ColumnNotFoundError, ParameterError, check_in_range, check_positive
from rewardlab.analysis.returns import as_array
from rewardlab.analysis.replay_kernels import gymnasium_replay, initial_state, sb3_replay
from rewardlab.analysis.scopes import RETURN_SCOPES, cut_expr, declared_spec, scope_mask_expr, trajectory_end_expr
from rewardlab.analysis.stats import NormalizationConstants
from rewardlab.analysis.tables import column_names, lazy_table, resolve_reward

__all__ = [
    "RMS_PRIOR_COUNT",
    "NormalizerReplay",
    "running_mean_var",
    "gymnasium_normalize_reward",
    "sb3_normalize_reward",
    "normalized_rewards",
    "replay_inputs",
    "constants_column",
    "normalization_summary",
    "REPLAY_METHODS",
    "replay_methods",
]

#: The normalized columns :func:`normalized_rewards` may give, in the order they are shown.
REPLAY_METHODS = ("constants", "gymnasium", "sb3")


def replay_methods(normalized: pl.DataFrame) -> list[str]:
    """The normalized columns of a :func:`normalized_rewards` frame (``constants`` first when applied).

    Examples
    --------
    >>> replay_methods(pl.DataFrame({"raw": [1.0], "gymnasium": [0.5], "sb3": [0.5], "sb3_clipped": [False]}))
    ['gymnasium', 'sb3']
    """
    return [m for m in REPLAY_METHODS if m in normalized.columns]


#: Initial ``count`` of Gymnasium's and SB3's ``RunningMeanStd`` (its ``epsilon`` argument).
RMS_PRIOR_COUNT = 1e-4


@dataclasses.dataclass(frozen=True)
class NormalizerReplay:
    """The outcome of replaying a running reward normalizer over a trajectory.

    Attributes
    ----------
    normalized : numpy.ndarray of shape ``[T]``
        The rewards the agent would have received (float64 from Gymnasium's
        wrapper, float32 from SB3's).
    returns : numpy.ndarray of shape ``[T]``
        The discounted sums fed to the running statistics.
    var : numpy.ndarray of shape ``[T]``
        The running variance used at each step (after that step's update).
    clipped : numpy.ndarray of shape ``[T]``, bool
        Steps where clipping saturated (``|r / sqrt(var + eps)| > clip``);
        all False without clipping.

    Examples
    --------
    >>> out = gymnasium_normalize_reward(np.array([1.0, 1.0]), np.array([False, True]))
    >>> out.normalized.shape, out.fraction_clipped
    ((2,), 0.0)
    """

    normalized: np.ndarray
    returns: np.ndarray
    var: np.ndarray
    clipped: np.ndarray

    @property
    def fraction_clipped(self) -> float:
        """Fraction of steps whose normalized reward clipping saturated (0.0 for no steps)."""
        return float(self.clipped.mean()) if self.clipped.size else 0.0


def running_mean_var(values, *, prior_count: float = RMS_PRIOR_COUNT) -> tuple[np.ndarray, np.ndarray]:
    """Mean and variance of ``RunningMeanStd`` after each single-value update, vectorized.

    The statistics start at mean 0, variance 1, count ``prior_count`` and
    ``update`` is called with ``values[t]`` alone at step ``t``.

    Parameters
    ----------
    values : float array of shape ``[T]``
    prior_count : float
        The initial count (``RunningMeanStd(epsilon=...)``), > 0.

    Returns
    -------
    mean : numpy.ndarray of shape ``[T]``, float64
    var : numpy.ndarray of shape ``[T]``, float64

    Examples
    --------
    >>> mean, var = running_mean_var(np.array([2.0, 2.0]), prior_count=1e-12)
    >>> np.round(mean, 6), np.round(var, 6)
    (array([2., 2.]), array([0., 0.]))
    """
    c0 = check_positive("prior_count", prior_count)
    x = as_array(values, "values")
    if x.size == 0:
        return np.zeros(0), np.zeros(0)
    n = np.arange(1, x.size + 1, dtype=np.float64)
    # moments of the data prefixes alone, by cumulative sums around the overall mean
    k = float(x.mean())
    d = x - k
    s1 = np.cumsum(d)
    data_mean_k = s1 / n
    data_m2 = np.maximum(np.cumsum(d * d) - s1 * data_mean_k, 0.0)
    data_mean = k + data_mean_k
    # merged with the prior pseudo-sample (mean 0, variance 1, weight c0): Chan's update, all terms >= 0
    count = c0 + n
    mean = data_mean * (n / count)
    m2 = c0 * 1.0 + data_m2 + data_mean * data_mean * (c0 * n / count)
    return mean, m2 / count


def _check_common(reward, flags, flags_name: str, gamma: float, epsilon: float):
    gamma = check_in_range("gamma", gamma, 0.0, 1.0)
    epsilon = check_positive("epsilon", epsilon)
    r = as_array(reward, "reward")
    f = as_array(flags, flags_name, dtype=bool, length=r.shape[0])
    return r, f, float(gamma), float(epsilon)


def gymnasium_normalize_reward(reward, terminated, *, gamma: float = 0.99,
                               epsilon: float = 1e-8) -> NormalizerReplay:
    """Replay Gymnasium's ``NormalizeReward`` wrapper over one environment's reward stream, bit for bit.

    ``G[t] = G[t - 1] * gamma * (1 - terminated[t]) + r[t]``; the running
    variance of ``G`` (updated with ``G[t]`` first) scales ``r[t]``:
    ``r[t] / sqrt(var[t] + epsilon)``.  Truncation never resets ``G`` (nor
    does the wrapper's ``reset``); no clipping.  Pass the rewards of
    consecutive episodes in the order the wrapper saw them.

    Parameters
    ----------
    reward : float array or tensor of shape ``[T]``
    terminated : bool array or tensor of shape ``[T]``
        Gymnasium's ``terminated`` (not ``truncated``).
    gamma : float
        Discount in [0, 1] (Gymnasium's default 0.99).
    epsilon : float
        Added to the variance, > 0 (default 1e-8).

    Returns
    -------
    NormalizerReplay
        ``normalized`` float64, as the wrapper returns it.

    Examples
    --------
    >>> out = gymnasium_normalize_reward(np.array([0.0, 1.0, 0.0]), np.array([False, True, False]))
    >>> out.returns
    array([0.  , 1.  , 0.99])
    """
    r, term, gamma, epsilon = _check_common(reward, terminated, "terminated", gamma, epsilon)
    n = r.shape[0]
    normalized, returns, var = np.empty(n), np.empty(n), np.empty(n)
    gymnasium_replay(np.ascontiguousarray(r), np.ascontiguousarray(term), gamma, epsilon,
                     initial_state(RMS_PRIOR_COUNT), normalized, returns, var)
    return NormalizerReplay(normalized, returns, var, np.zeros(n, dtype=bool))


def sb3_normalize_reward(reward, done, *, gamma: float = 0.99, epsilon: float = 1e-8,
                         clip_reward: float = 10.0) -> NormalizerReplay:
    """Replay Stable-Baselines3's ``VecNormalize`` reward normalization for one environment, bit for bit.

    ``G[t] = G[t - 1] * gamma + r[t]`` with ``G`` zeroed after every done
    step; the running variance of ``G`` (updated with ``G[t]`` first) scales
    ``r[t]``, which is clipped to ``[-clip_reward, clip_reward]`` and cast to
    float32, as ``VecNormalize`` hands it over.  ``DummyVecEnv`` rounds the
    environment's rewards to float32 first: pass ``reward.astype(np.float32)``
    to replay that.

    Parameters
    ----------
    reward : float array or tensor of shape ``[T]``
    done : bool array or tensor of shape ``[T]``
        Terminated or truncated.
    gamma : float
        Discount in [0, 1] (SB3's default 0.99).
    epsilon : float
        Added to the variance, > 0 (default 1e-8).
    clip_reward : float
        Bound of the normalized reward, > 0 (default 10).

    Returns
    -------
    NormalizerReplay
        ``normalized`` float32; ``clipped`` marks the steps clipping saturated.

    Examples
    --------
    >>> out = sb3_normalize_reward(np.array([0.0, 1.0, 0.0]), np.array([False, True, False]))
    >>> out.returns
    array([0., 1., 0.])
    """
    r, d, gamma, epsilon = _check_common(reward, done, "done", gamma, epsilon)
    clip_reward = float(check_positive("clip_reward", clip_reward))
    n = r.shape[0]
    normalized, returns, var = np.empty(n, dtype=np.float32), np.empty(n), np.empty(n)
    clipped = np.empty(n, dtype=bool)
    sb3_replay(np.ascontiguousarray(r), np.ascontiguousarray(d), gamma, epsilon, clip_reward,
               initial_state(RMS_PRIOR_COUNT), normalized, returns, var, clipped)
    return NormalizerReplay(normalized, returns, var, clipped)


# --------------------------------------------------------------------------
# Frame layer
# --------------------------------------------------------------------------


def normalized_rewards(data, reward: str, *, constants: NormalizationConstants | None = None,
                       gamma: float = 0.99, epsilon: float = 1e-8,
                       clip_reward: float = 10.0, spec: FrameSpec | None = None) -> pl.DataFrame:
    """The rewards of plug-in ``reward`` raw and as each normalizer would hand them to the agent.

    The replays walk the rows in frame order, as one environment that plays
    the episodes one after another; trajectories end at ``done_<name>`` and at
    every episode end of the frame's spec (in kanachan data, the end of each
    player's game).  SB3 resets its running return after every trajectory end
    (its ``done``: terminated or truncated).  Gymnasium resets it on
    ``terminated`` only, as its wrapper does: an episode end where the spec's
    ``truncated`` flag fires (and its ``terminated`` flag does not) carries
    the running return into the next episode; a plug-in's own ``done``
    counts as terminated.  Both replays equal the libraries' classes bit for
    bit (see the module docstring); the ``sb3`` column holds the float32
    values ``VecNormalize`` hands over.

    Parameters
    ----------
    data : polars.DataFrame, LazyFrame, or path(s) to Parquet
        A rewards table or a frame with ``reward_<name>`` / ``done_<name>``.
    reward : str
        The plug-in name.
    constants : NormalizationConstants, optional
        Also apply ``(r - mean) / std`` to the steps of ``constants.scope``
        (other steps keep their raw value, as a kanachan plug-in that only
        rewards those steps would), in column ``constants``.
    gamma, epsilon, clip_reward
        The running normalizers' parameters (their libraries' defaults).
    spec : FrameSpec, optional
        How the rows form episodes (default: the frame's spec, see
        :func:`rewardlab.sources.registry.spec_of`).

    Returns
    -------
    polars.DataFrame
        Float64 columns ``raw``, ``constants`` (when given), ``gymnasium``,
        ``sb3``, and Boolean ``sb3_clipped``; one row per input row.

    Examples
    --------
    >>> import polars as pl
    >>> f = pl.DataFrame({"reward_a": [0.0, 4.0], "done_a": [False, True]})
    >>> normalized_rewards(f, "a").columns
    ['raw', 'gymnasium', 'sb3', 'sb3_clipped']
    """
    df = replay_inputs(data, reward, constants=constants, spec=spec)
    r = df["raw"].to_numpy()
    b = df["boundary"].to_numpy()
    gym = gymnasium_normalize_reward(r, df["terminated"].to_numpy(), gamma=gamma, epsilon=epsilon)
    sb3 = sb3_normalize_reward(r, b, gamma=gamma, epsilon=epsilon, clip_reward=clip_reward)
    cols = {"raw": r}
    if constants is not None:
        cols["constants"] = np.where(df["in_scope"].to_numpy(), constants.apply(r), r)
    cols |= {"gymnasium": gym.normalized, "sb3": sb3.normalized.astype(np.float64), "sb3_clipped": sb3.clipped}
    return pl.DataFrame(cols)


def replay_inputs(data, reward: str, *, constants: NormalizationConstants | None = None,
                  spec: FrameSpec | None = None) -> pl.DataFrame:
    """What the replays of :func:`normalized_rewards` read, per row: ``raw``, ``boundary``, ``terminated``
    (and ``in_scope`` with ``constants``).

    ``boundary`` ends a trajectory (SB3's ``done``), ``terminated`` is
    Gymnasium's (every trajectory end but a cut one).  A dataset folder's
    replay (:mod:`rewardlab.analysis.normalizer_parts`) reads each part
    through here, so both read the same flags.

    Examples
    --------
    >>> import polars as pl
    >>> f = pl.DataFrame({"reward_a": [0.0, 4.0], "done_a": [False, True]})
    >>> replay_inputs(f, "a").columns
    ['raw', 'boundary', 'terminated']
    """
    lf, _ = lazy_table(data)
    names = column_names(lf)
    name = resolve_reward(names, reward)
    done = columns.done_column(name)
    if done not in names:
        raise ColumnNotFoundError(done, [c for c in names if c.startswith(columns.DONE_PREFIX)])
    declared, here = declared_spec(lf, spec)
    boundary = trajectory_end_expr(names, done, here)
    terminated = boundary & ~cut_expr(names, here)  # Gymnasium's: every trajectory end but a cut one
    exprs = [pl.col(columns.reward_column(name)).cast(pl.Float64).alias("raw"),
             boundary.alias("boundary"), terminated.alias("terminated")]
    if constants is not None:
        exprs.append(_in_scope_expr(names, name, constants, here, declared))
    return lf.select(exprs).collect()


def _in_scope_expr(names: list[str], name: str, constants, here: FrameSpec, declared) -> pl.Expr:
    """The steps ``constants`` apply to (column ``in_scope``); a return scope cannot be applied per step."""
    if not isinstance(constants, NormalizationConstants):
        raise ParameterError("constants", "should be NormalizationConstants (see normalization_constants)",
                             type(constants).__name__)
    if constants.scope in RETURN_SCOPES:
        raise ParameterError("constants", "should have a per-step scope to be applied step by step "
                             "(not 'episode_return' or 'trajectory_return')", constants.scope)
    return scope_mask_expr(names, name, constants.scope, here, declared).alias("in_scope")


def constants_column(data, reward: str, constants: NormalizationConstants, *,
                     spec: FrameSpec | None = None) -> np.ndarray:
    """The ``constants`` column of :func:`normalized_rewards` alone: ``(r - mean) / std`` in scope, ``r`` elsewhere.

    What a session adds to replays it keeps while only the constants change.

    Returns
    -------
    numpy.ndarray of shape ``[N]``, float64

    Examples
    --------
    >>> import polars as pl
    >>> from rewardlab.analysis.stats import normalization_constants
    >>> f = pl.DataFrame({"reward_a": [0.0, 4.0, 2.0], "done_a": [False, True, True]})
    >>> c = normalization_constants(f, "a", scope="nonzero")
    >>> constants_column(f, "a", c).tolist()
    [0.0, 1.0, -1.0]
    """
    lf, _ = lazy_table(data)
    names = column_names(lf)
    name = resolve_reward(names, reward)
    declared, here = declared_spec(lf, spec)
    df = lf.select(pl.col(columns.reward_column(name)).cast(pl.Float64).alias("raw"),
                   _in_scope_expr(names, name, constants, here, declared)).collect()
    r = df["raw"].to_numpy()
    return np.where(df["in_scope"].to_numpy(), constants.apply(r), r)


def normalization_summary(normalized: pl.DataFrame) -> pl.DataFrame:
    """Statistics of each column of :func:`normalized_rewards`: what each normalizer does to the rewards.

    Parameters
    ----------
    normalized : polars.DataFrame
        The output of :func:`normalized_rewards`.

    Returns
    -------
    polars.DataFrame
        One row per method (``raw``, ``constants``, ``gymnasium``, ``sb3``):
        ``count, mean, std, min, max, nonzero_mean, nonzero_std,
        fraction_clipped`` (population std; ``nonzero_*`` over the steps
        whose raw reward is not 0).

    Examples
    --------
    >>> import polars as pl
    >>> f = pl.DataFrame({"reward_a": [0.0, 4.0], "done_a": [False, True]})
    >>> normalization_summary(normalized_rewards(f, "a"))["method"].to_list()
    ['raw', 'gymnasium', 'sb3']
    """
    if not isinstance(normalized, pl.DataFrame) or "raw" not in normalized.columns:
        raise ParameterError("normalized", "should be the frame normalized_rewards() returns",
                             type(normalized).__name__)
    methods = ["raw", *replay_methods(normalized)]
    nz = pl.col("raw") != 0
    clipped = normalized["sb3_clipped"].mean() if "sb3_clipped" in normalized.columns else None
    stats = ("count", "mean", "std", "min", "max", "nonzero_mean", "nonzero_std")

    def exprs(c: pl.Expr) -> list[pl.Expr]:
        return [pl.len(), c.mean(), c.std(ddof=0), c.min(), c.max(), c.filter(nz).mean(), c.filter(nz).std(ddof=0)]

    values = normalized.select([e.alias(f"{m}/{k}") for m in methods  # one pass over every column
                                for k, e in zip(stats, exprs(pl.col(m)))]).row(0)
    rows = []
    for i, m in enumerate(methods):
        row = dict(zip(stats, values[i * len(stats):(i + 1) * len(stats)]))
        row["fraction_clipped"] = float(clipped or 0.0) if m == "sb3" else 0.0
        rows.append({"method": m} | row)
    schema = {"method": pl.String, "count": pl.Int64} | {
        k: pl.Float64 for k in ("mean", "std", "min", "max", "nonzero_mean", "nonzero_std",
                                "fraction_clipped")}
    return pl.DataFrame(rows, schema=schema)
