"""Reward columns for the analysis tests, built with plain Polars expressions (no plug-in runner).

``with_rewards(frame)`` adds three candidate rewards the way kanachan's wiki
examples would compute them:

* ``top``: +1 for first place, -1 otherwise, on end-of-game steps; done at end of game;
* ``points``: ``(final score - 25000) / 1000`` on end-of-game steps; done at end of game;
* ``delta``: the player's round score delta / 1000 at every round end (the
  game's last step included); done at every round end, so per-round trajectories.
"""

from __future__ import annotations

import polars as pl



def _rank_expr() -> pl.Expr:
    seat = pl.col("seat").cast(pl.Int64)
    score = pl.col("results").arr.get(seat + 4)
    rank = pl.lit(0, dtype=pl.Int64)
    for j in range(4):
        other = pl.col("results").arr.get(4 + j)
        rank = rank + pl.when((pl.lit(j) < seat) & (other >= score)).then(1).otherwise(0)
        rank = rank + pl.when((pl.lit(j) > seat) & (other > score)).then(1).otherwise(0)
    return rank


def with_rewards(frame: pl.DataFrame) -> pl.DataFrame:
    seat = pl.col("seat").cast(pl.Int64)
    eog = pl.col("end_of_game")
    eor = pl.col("end_of_round") | eog
    # (Polars 2.1 fails on arr.get with a column index inside when/then, so gather first.)
    helpers = frame.select(
        _score=pl.col("results").arr.get(seat + 4).cast(pl.Float64),
        _delta=pl.col("results").arr.get(seat).cast(pl.Float64),
        _rank=_rank_expr(),
    )
    return frame.with_columns(
        reward_top=pl.when(eog).then(pl.when(helpers["_rank"] == 0).then(1.0).otherwise(-1.0)).otherwise(0.0),
        done_top=eog,
        reward_points=pl.when(eog).then((helpers["_score"] - 25000.0) / 1000.0).otherwise(0.0),
        done_points=eog,
        reward_delta=pl.when(eor).then(helpers["_delta"] / 1000.0).otherwise(0.0),
        done_delta=eor,
    )


def rewards_table(frame: pl.DataFrame) -> pl.DataFrame:
    """What ``rewardlab apply`` writes: keys and reward/done columns only."""
    return frame.select("game_id", "seat", "step", *[c for c in frame.columns
                                                    if c.startswith(("reward_", "done_"))])
