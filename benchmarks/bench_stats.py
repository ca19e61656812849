"""Analysis: statistics over 10 million rewards (exact and KLL-sketched, whole and part by part),
the rank-reward recompute path, replays and returns."""

from __future__ import annotations

import gc
import statistics
import time

import numpy as np
import polars as pl

import rewardlab
from benchmarks._data import best_time, SAMPLE, tiled_frame
from rewardlab.core.spec import FrameSpec
from rewardlab.analysis.normalizers import gymnasium_normalize_reward, sb3_normalize_reward
from rewardlab.domains.mahjong.ranking import RankTable, expected_reward
from rewardlab.analysis.returns import discounted_reward_to_go, generalized_advantage_estimate
from rewardlab.analysis.sketches import QuantileSketch
from rewardlab.analysis.stats import DEFAULT_QUANTILES, normalization_constants, reward_moments, reward_stats
from rewardlab.analysis.stats_parts import normalization_constants_of_parts, reward_stats_of_parts

#: The flags the scopes read, without kanachan's episode keys: one stream whose episodes end at end_of_game.
FLAGS = FrameSpec(name="kanachan_flags", terminated="end_of_game", boundaries=("end_of_round",))


def _rewards_of(frame: pl.DataFrame) -> pl.DataFrame:
    """Two kanachan-style rewards (rank, final points) and the flags the scopes read."""
    table = RankTable.from_frame(frame)
    top = table.step_rewards(table.episode_rewards([1.0, -1.0, -1.0, -1.0]))
    points = table.step_rewards((table.final_score - 25000) / 1000.0)
    return frame.select("end_of_round", "end_of_game").with_columns(
        reward_top=pl.Series(top), done_top=pl.col("end_of_game"),
        reward_points=pl.Series(points), done_points=pl.col("end_of_game"),
    )


def run(report) -> None:
    frame = rewardlab.load_kanachan(SAMPLE, progress=False)
    small = _rewards_of(frame)

    # --- statistics over 10 million rewards ---------------------------------------------
    big = tiled_frame(small, 10_000_000)
    n = big.height
    report("rewards in the statistics input", n, "rows")
    t = best_time(lambda: reward_stats(big, "points", scope="all"))
    report("reward_stats, sparse reward, scope all (moments + 7 exact quantiles)", t, "s", "target < 1 s")
    report("reward_stats throughput, scope all", n / t, "rows/s")
    dense = pl.DataFrame({"reward_dense": np.random.default_rng(1).normal(size=n)})
    t = best_time(lambda: reward_stats(dense, "dense", scope="all"))
    report("reward_stats, dense reward (every step nonzero), scope all", t, "s", "target < 1 s")
    _sketches(report, dense)
    del dense
    t = best_time(lambda: reward_moments(big, "points", scope="all"))
    report("reward_moments (streaming, mergeable part only)", t, "s")
    t = best_time(lambda: normalization_constants(big, "points", scope="all"))
    report("normalization_constants, scope all (incl. fingerprint)", t, "s")
    t = best_time(lambda: reward_stats(big, "points", scope="end_of_game", spec=FLAGS))
    report("reward_stats, scope end_of_game", t, "s")
    t = best_time(lambda: reward_stats(big, "points", scope="episode_return", spec=FLAGS))
    report("reward_stats, scope episode_return (segmented sums)", t, "s")
    del big
    gc.collect()

    # --- the rank-reward recompute path over 1 million transitions ------------------------
    million = tiled_frame(frame.select("game", "seat", "results", "end_of_round", "end_of_game"), 1_000_000)
    t0 = time.perf_counter()
    table = RankTable.from_frame(million)
    report("RankTable.from_frame over 1M transitions (once per dataset)", time.perf_counter() - t0, "s")
    report("episodes in the 1M-transition table", table.episodes, "episodes")
    rng = np.random.default_rng(0)
    vectors = np.sort(rng.normal(size=(200, 4)), axis=1)[:, ::-1]
    probabilities = table.probabilities

    def recompute(v):
        per_episode = table.episode_rewards(v)
        table.moments(per_episode, scope="all")
        table.moments(per_episode, scope="end_of_game")
        table.mean_by_rank(per_episode)
        expected_reward(v, probabilities)

    recompute(vectors[0])
    times = []
    for v in vectors:
        t0 = time.perf_counter()
        recompute(v)
        times.append(time.perf_counter() - t0)
    report("rank-vector recompute over 1M transitions (median of 200)", statistics.median(times) * 1e3,
           "ms", "target < 50 ms")
    report("rank-vector recompute over 1M transitions (max of 200)", max(times) * 1e3, "ms")
    del million
    gc.collect()

    # --- sequential recursions over 1 million steps (returns vectorized, replays compiled) ---
    steps = tiled_frame(small, 1_000_000)
    r = steps["reward_points"].to_numpy()
    d = steps["done_points"].to_numpy()
    m = len(r)
    t = best_time(lambda: gymnasium_normalize_reward(r, d))
    report("Gymnasium NormalizeReward replay, 1M steps", t, "s")
    t = best_time(lambda: sb3_normalize_reward(r, d))
    report("SB3 VecNormalize reward replay, 1M steps", t, "s")
    t = best_time(lambda: discounted_reward_to_go(r, d, gamma=0.99))
    report("discounted reward-to-go, 1M steps", t, "s")
    v = rng.normal(size=m)
    nv = np.append(v[1:], 0.0)
    t = best_time(lambda: generalized_advantage_estimate(r, v, nv, d, gamma=0.99, lmbda=0.95))
    report("GAE, 1M steps", t, "s")


def _sketches(report, dense: pl.DataFrame) -> None:
    """The exact quantile path beside the KLL sketch's update and merge, over the same 10^7 values."""
    x = dense["reward_dense"].to_numpy()
    n = x.size
    t = best_time(lambda: np.quantile(x, DEFAULT_QUANTILES))
    report("exact quantiles (np.quantile, 7 levels), 10^7 values", n / t, "values/s")
    t = best_time(lambda: QuantileSketch().update(x))
    report("KLL sketch update (k=1000), 10^7 values in one call", n / t, "values/s")
    pieces = np.array_split(x, 100)
    blobs = [QuantileSketch().update(p).to_bytes() for p in pieces]
    report("KLL sketch of 10^5 values, serialized", statistics.mean(map(len, blobs)), "bytes")

    def merge_all():
        out = QuantileSketch()
        for b in blobs:
            out.merge(QuantileSketch.from_bytes(b))
        return out

    t = best_time(merge_all)
    report("KLL merge of 100 serialized sketches (10^7 values)", n / t, "values/s")
    report("KLL merge of serialized sketches", len(blobs) / t, "sketches/s")
    parts = [dense.slice(i * (n // 10), n // 10) for i in range(10)]
    t = best_time(lambda: reward_stats_of_parts(parts, "dense"))
    report("reward_stats_of_parts, 10 parts, exact (<= 10^7 values kept)", n / t, "values/s")
    t = best_time(lambda: reward_stats_of_parts(parts, "dense", exact_limit=0))
    report("reward_stats_of_parts, 10 parts, KLL sketch", n / t, "values/s")
    t = best_time(lambda: normalization_constants_of_parts(parts, "dense"))
    report("normalization_constants_of_parts, 10 parts, exact fingerprint", n / t, "values/s")
    t = best_time(lambda: normalization_constants_of_parts(parts, "dense", exact_limit=0))
    report("normalization_constants_of_parts, 10 parts, per-part fingerprint", n / t, "values/s")
