"""Returns of frames and dataset folders: trajectory returns, reward-to-go and GAE of a plug-in's reward.

The frame layer over the pure array functions of
:mod:`rewardlab.analysis.returns`: each function takes a frame and a reward
name and reads ``reward_<name>``, the plug-in's own ``done_<name>``, and the
episodes and terminal flags through the frame's spec
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

Examples
--------
>>> import polars as pl
>>> from rewardlab.analysis.return_tables import trajectory_returns
>>> frame = pl.DataFrame({"reward_a": [1.0, 2.0, 4.0], "done_a": [False, True, True]})
>>> trajectory_returns(frame, "a")["return"].to_list()
[3.0, 4.0]
"""

from __future__ import annotations

import numpy as np
import polars as pl

from rewardlab.core import columns
from rewardlab.core.spec import FrameSpec, attach
from rewardlab.core.errors import ColumnNotFoundError, ParameterError, check_choice, check_in_range
from rewardlab.sources.datasets import PartedDataset, is_dataset_folder
from rewardlab.sources.registry import spec_of
from rewardlab.analysis.returns import (as_array, discounted_reward_to_go, generalized_advantage_estimate,
                                        segment_ids, segment_returns)
from rewardlab.analysis.scopes import cut_expr, episode_end_expr, trajectory_end_expr
from rewardlab.analysis.tables import column_names, lazy_table, resolve_reward

__all__ = ["episode_returns", "trajectory_returns", "reward_to_go", "gae", "bootstrap_from_final"]


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


def _frame_only(out, on_error: str = "raise") -> None:
    if check_choice("on_error", on_error, ("raise", "skip")) != "raise":
        raise ParameterError("on_error", "applies to a dataset folder (its bad parts are left out); a frame is "
                             "read whole", on_error)
    if out is not None:
        raise ParameterError("out", "applies to a dataset folder (on a frame, the result is returned)", str(out),
                             hint="Pass a dataset folder (`rewardlab convert ... --out FOLDER`) as data, or "
                             "write the returned frame yourself.")


def _result(table: pl.DataFrame, spec: FrameSpec) -> pl.DataFrame:
    """Attach the data's spec (projected to the table's key columns) to an output table."""
    return attach(table, spec.project(table.columns)) if spec.episode else table


def trajectory_returns(data, reward: str, *, spec: FrameSpec | None = None, engine: str = "embedded",
                       workers: int | None = None, address: str | None = None,
                       progress: bool | None = None, on_error: str = "raise") -> pl.DataFrame:
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
    on_error : {"raise", "skip"}
        A dataset folder only: ``"skip"`` leaves a missing, truncated, foreign
        or duplicated part out whole, with a warning naming it; the result is
        the folder's without it, bit for bit
        (:func:`rewardlab.analysis.returns_parts.reward_to_go_of_dataset`).

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
                                             address=address, progress=progress, on_error=on_error)
    _frame_only(None, on_error)
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
                 progress: bool | None = None, on_error: str = "raise"):
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
    engine, workers, address, progress, on_error
        A dataset folder only: as :func:`trajectory_returns` (``on_error="skip"``:
        a folder written with ``out`` lists the input parts left out in its
        manifest, so a later read joins part for part and says so).

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
                                       engine=engine, workers=workers, address=address, progress=progress,
                                       on_error=on_error)
    _frame_only(out, on_error)
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
        workers: int | None = None, address: str | None = None, progress: bool | None = None,
        on_error: str = "raise"):
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
    out, overwrite, engine, workers, address, progress, on_error
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
                              workers=workers, address=address, progress=progress, on_error=on_error)
    _frame_only(out, on_error)
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
