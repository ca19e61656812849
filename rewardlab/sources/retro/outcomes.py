"""How each episode of a retro frame ended, and the counts per level that ``rewardlab info`` shows.

An episode's outcome is read from its last step and final state, in the
order ``contest_done`` checks them:

- ``stage``: S2's ``game_mode`` is 16 (a bonus stage) or S3K's
  ``special_stage`` is not 0 after the last step (terminated);
- ``lost_life``: ``lives`` after the last step is below its value before it
  (terminated);
- ``finished``: terminated for another reason (the contest ends an episode
  there when the level's end is reached);
- ``timed_out``: truncated (the time limit) and not terminated.

Examples
--------
>>> from rewardlab.sources.retro.reader import load_retro
>>> table = level_outcomes(load_retro("data/retro/sonic_sample.parquet"))
>>> table.columns
['game', 'state', 'episodes', 'finished', 'lost_life', 'timed_out', 'stage']
"""

from __future__ import annotations

import polars as pl

from rewardlab.sources.retro import layout as L

__all__ = ["OUTCOMES", "episode_outcomes", "level_outcomes", "outcome_lines"]

#: The outcomes, in the order they are decided.
OUTCOMES = ("stage", "lost_life", "finished", "timed_out")


def episode_outcomes(frame: pl.DataFrame) -> pl.DataFrame:
    """One row per episode: ``episode_id``, ``game``, ``state``, ``steps``, ``frames`` (after the last step)
    and ``outcome`` (one of :data:`OUTCOMES`, or ``"unknown"`` without flags).

    Examples
    --------
    >>> from rewardlab.sources.retro.reader import load_retro
    >>> out = episode_outcomes(load_retro("data/retro/sonic_sample.parquet"))
    >>> sorted(out["outcome"].unique())
    ['finished', 'lost_life', 'timed_out']
    """
    names = frame.columns
    last = frame.filter(pl.col(L.EPISODE).ne_missing(pl.col(L.EPISODE).shift(-1)))
    stage = pl.lit(False)
    if "game_mode" in names:
        stage = stage | ((pl.col(L.GAME) == "SonicTheHedgehog2-Genesis-v0")
                         & (pl.col(L.final_name("game_mode")) == 16)).fill_null(False)
    if "special_stage" in names:
        stage = stage | ((pl.col(L.GAME) == "SonicAndKnuckles3-Genesis-v0")
                         & (pl.col(L.final_name("special_stage")) != 0)).fill_null(False)
    lost = (pl.col(L.final_name("lives")) < pl.col("lives")).fill_null(False) if "lives" in names else pl.lit(False)
    term, trunc = pl.col(L.TERMINATED), pl.col(L.TRUNCATED)
    outcome = (pl.when(term & stage).then(pl.lit("stage"))
               .when(term & lost).then(pl.lit("lost_life"))
               .when(term).then(pl.lit("finished"))
               .when(trunc).then(pl.lit("timed_out"))
               .otherwise(pl.lit("unknown")))
    return last.select(L.EPISODE, L.GAME, L.STATE, (pl.col(L.STEP) + 1).alias("steps"),
                       pl.col(L.final_name(L.FRAME)).alias("frames"), outcome.alias("outcome"))


def level_outcomes(frame: pl.DataFrame) -> pl.DataFrame:
    """Per (game, state), in order of first appearance: episodes and how many ended each way.

    Examples
    --------
    >>> import polars as pl
    >>> from rewardlab.sources.retro.reader import load_retro
    >>> t = level_outcomes(load_retro("data/retro/sonic_sample.parquet"))
    >>> int(t["episodes"].sum()) == int(t.select(pl.sum_horizontal(OUTCOMES[::-1])).to_series().sum())
    True
    """
    per = episode_outcomes(frame)
    return (per.group_by(L.GAME, L.STATE, maintain_order=True)
            .agg(pl.len().alias("episodes"), *((pl.col("outcome") == o).sum().alias(o)
                                               for o in ("finished", "lost_life", "timed_out", "stage")))
            .with_columns(pl.col("episodes").cast(pl.Int64), *(pl.col(o).cast(pl.Int64) for o in OUTCOMES)))


def outcome_lines(table: pl.DataFrame) -> dict[str, str]:
    """``{"<game> <state>": "N episodes: finished a, lost a life b, timed out c[, bonus/special stage d]"}``:
    what ``rewardlab info`` prints per level.

    Examples
    --------
    >>> t = pl.DataFrame({"game": ["G"], "state": ["S"], "episodes": [3], "finished": [1], "lost_life": [1],
    ...                   "timed_out": [1], "stage": [0]})
    >>> outcome_lines(t)
    {'G S': '3 episodes: finished 1, lost a life 1, timed out 1'}
    """
    out = {}
    for row in table.iter_rows(named=True):
        text = (f"{row['episodes']} episodes: finished {row['finished']}, lost a life {row['lost_life']}, "
                f"timed out {row['timed_out']}")
        if row["stage"]:
            text += f", bonus/special stage {row['stage']}"
        out[f"{row['game']} {row['state']}"] = text
    return out
