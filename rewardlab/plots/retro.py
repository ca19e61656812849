"""The retro contest tuner's figures: finish rates per level, the time bonus by finishing frame, the options' effect.

Each function draws tables the session computed
(:class:`rewardlab.sessions.retro.ContestResults`: ``levels``, ``episodes``,
``options``) or plain arrays, and returns the Axes; nothing is computed here.
Episode returns use :func:`rewardlab.plots.plot_return_distribution`.

Examples
--------
>>> import polars as pl
>>> levels = pl.DataFrame({"game": ["SonicTheHedgehog-Genesis-v0"], "state": ["GreenHillZone.Act1"],
...                        "episodes": [4], "finished": [2], "lost_life": [1], "timed_out": [1], "stage": [0],
...                        "other": [0], "finish_rate": [0.5]})
>>> ax = plot_finish_rates(levels)
>>> [t.get_text() for t in ax.get_yticklabels()]
['S1 GreenHillZone.Act1']
"""

from __future__ import annotations

import numpy as np
import polars as pl

from rewardlab.core.errors import ParameterError
from rewardlab.plots.axes import legend_outside, one_axes, require_columns

__all__ = ["OUTCOME_COLORS", "GAME_SHORT", "plot_finish_rates", "plot_bonus_by_frame", "plot_option_effects"]

#: The colour of each outcome, the same in every figure.
OUTCOME_COLORS = {"finished": "#2a9d8f", "lost_life": "#e76f51", "timed_out": "#8d99ae", "stage": "#e9c46a",
                  "other": "#b5838d"}
_OUTCOME_LABELS = {"finished": "finished", "lost_life": "lost a life", "timed_out": "timed out",
                   "stage": "bonus/special stage", "other": "recorded finished, end not reached"}
#: Short names of the contest games on axes.
GAME_SHORT = {"SonicTheHedgehog-Genesis-v0": "S1", "SonicTheHedgehog2-Genesis-v0": "S2",
              "SonicAndKnuckles3-Genesis-v0": "S3K"}


def plot_finish_rates(levels: pl.DataFrame, *, ax=None):
    """Episodes per level by how they ended (stacked bars), each level's finish rate written beside its bar.

    Parameters
    ----------
    levels : polars.DataFrame
        ``game``, ``state``, ``episodes``, ``finish_rate`` and one count column per outcome
        (``finished``, ``lost_life``, ``timed_out``, ``stage``, ``other``; those missing are skipped), one
        row per level (:attr:`rewardlab.sessions.ContestResults.levels`).
    ax : Axes, optional

    Returns
    -------
    Axes
        One horizontal bar per level, the first level on top; a segment per outcome.

    Examples
    --------
    >>> ax = plot_finish_rates(session.results.levels)  # doctest: +SKIP
    """
    if not isinstance(levels, pl.DataFrame):
        raise ParameterError("levels", "should be a polars.DataFrame (ContestResults.levels)", type(levels).__name__)
    require_columns(levels, ("game", "state", "episodes", "finish_rate"), "levels")
    ax = one_axes(ax)
    y = np.arange(levels.height)[::-1]
    left = np.zeros(levels.height)
    for outcome, color in OUTCOME_COLORS.items():
        if outcome not in levels.columns:
            continue
        counts = levels[outcome].to_numpy().astype(np.float64)
        if not counts.any():
            continue
        ax.barh(y, counts, left=left, color=color, label=_OUTCOME_LABELS[outcome], height=0.7)
        left = left + counts
    for yi, total, rate in zip(y, levels["episodes"].to_numpy(), levels["finish_rate"].to_numpy()):
        ax.text(total, yi, f" {rate:.0%}", va="center", fontsize="small")
    ax.set_yticks(y, [f"{GAME_SHORT.get(g, g)} {s}" for g, s in zip(levels["game"], levels["state"])],
                  fontsize="small")
    ax.set_xlabel("episodes (finish rate at the bar's end)")
    ax.set_title("Episodes per level by outcome", fontsize="medium")
    if levels.height:
        ax.set_xlim(0, float(levels["episodes"].max()) * 1.25)
    legend_outside(ax)
    return ax


def plot_bonus_by_frame(episodes: pl.DataFrame, *, frame_limit: float | None = None, pinned=None, ax=None):
    """The time bonus each finished episode earned against the frame it finished on.

    Parameters
    ----------
    episodes : polars.DataFrame
        ``finish_frame`` and ``bonus`` per episode (:attr:`rewardlab.sessions.ContestResults.episodes`);
        rows with a null ``finish_frame`` (episodes that did not finish) are not drawn.
    frame_limit : float, optional
        Drawn as a vertical line (the bonus is 0 from there on).
    pinned : mapping of str to polars.DataFrame, optional
        Pinned candidates' episodes (the same columns), drawn hollow.
    ax : Axes, optional

    Returns
    -------
    Axes
        The live points first (a PathCollection labelled ``live``).

    Examples
    --------
    >>> e = pl.DataFrame({"finish_frame": [3908, 4645, None], "bonus": [782.9, 741.9, 0.0]})
    >>> ax = plot_bonus_by_frame(e, frame_limit=18000)
    >>> ax.collections[0].get_offsets().shape
    (3, 2)
    """

    def points(frame, what: str):
        if not isinstance(frame, pl.DataFrame):
            raise ParameterError(what, "should be a polars.DataFrame (ContestResults.episodes)",
                                 type(frame).__name__)
        require_columns(frame, ("finish_frame", "bonus"), what)
        return (frame["finish_frame"].cast(pl.Float64).fill_null(np.nan).to_numpy(),
                frame["bonus"].cast(pl.Float64).to_numpy())

    frames, bonus = points(episodes, "episodes")
    shown = int(np.isfinite(frames).sum())
    ax = one_axes(ax)
    ax.scatter(frames, bonus, s=22, color="C0", zorder=3, label=f"live ({shown} finished)")
    for k, (label, frame) in enumerate((pinned or {}).items()):
        f, b = points(frame, f"pinned[{label!r}]")
        ax.scatter(f, b, s=30, facecolors="none", edgecolors=f"C{k + 1}", label=f"pinned: {label}")
    if frame_limit is not None:
        ax.axvline(float(frame_limit), color="0.4", linestyle="--", linewidth=1.0,
                   label=f"frame limit {float(frame_limit):,.0f}")
    ax.set_xlabel("frame the level was finished on")
    ax.set_ylabel("time bonus paid")
    ax.set_title("Time bonus against the finishing frame", fontsize="medium")
    ax.set_xlim(left=0)
    legend_outside(ax)
    return ax


def plot_option_effects(options: pl.DataFrame, *, columns, ax=None):
    """Mean episode return per episode group under each option combination (grouped bars).

    Parameters
    ----------
    options : polars.DataFrame
        ``group`` and one column of mean returns per combination
        (:attr:`rewardlab.sessions.ContestResults.options`).
    columns : sequence of str
        The combinations to draw (e.g. ``["no options", "backtracking"]``: the scaler's divide every
        return by 100, so they are drawn apart).
    ax : Axes, optional

    Returns
    -------
    Axes
        One bar container per column, in order.

    Examples
    --------
    >>> t = pl.DataFrame({"group": ["all", "timed out"], "no options": [6808.1, 344.8],
    ...                   "backtracking": [6812.8, 382.1]})
    >>> len(plot_option_effects(t, columns=["no options", "backtracking"]).containers)
    2
    """
    if not isinstance(options, pl.DataFrame):
        raise ParameterError("options", "should be a polars.DataFrame (ContestResults.options)",
                             type(options).__name__)
    columns = [columns] if isinstance(columns, str) else list(columns)
    require_columns(options, ("group", *columns), "options")
    ax = one_axes(ax)
    x = np.arange(options.height)
    width = 0.8 / max(len(columns), 1)
    for k, name in enumerate(columns):
        ax.bar(x + (k - (len(columns) - 1) / 2) * width, options[name].to_numpy(), width=width, color=f"C{k}",
               label=name)
    ax.set_xticks(x, options["group"].to_list(), fontsize="small", rotation=20)
    ax.set_ylabel("mean episode return")
    ax.set_title("What the options pay, by outcome", fontsize="medium")
    ax.axhline(0.0, color="0.3", linewidth=0.8)
    legend_outside(ax)
    return ax
