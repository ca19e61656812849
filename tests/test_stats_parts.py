"""Statistics part by part: accumulators over episode-aligned parts against the in-memory path on one frame."""

from __future__ import annotations

import math
import pickle

import numpy as np
import polars as pl
import pytest

from analysis_data import rewards_table, with_rewards
from rewardlab.analysis.scopes import SCOPES, scope_values
from rewardlab.analysis.sketches import QuantileSketch
from rewardlab.analysis.stats import DEFAULT_QUANTILES, Moments, normalization_constants, reward_stats
from rewardlab.analysis.stats_parts import (
    NormalizationParts, RewardStatsParts, normalization_constants_of_parts, reward_stats_of_parts,
)
from rewardlab.core.errors import FrameError, ParameterError
from rewardlab.core.spec import FrameSpec, attach
from rewardlab.plugins.shards import split_shards

REWARDS = ("top", "points", "delta")
KLL_BOUND = QuantileSketch().bound


@pytest.fixture(scope="module")
def frame(sample_frame):
    return with_rewards(sample_frame)


def as_dict(stats) -> dict:
    """RewardStats as comparable data (NaN as None), every field."""
    return stats.to_dict()


def in_workers(parts, make):
    """What an engine does: one accumulator per part in a worker, pickled back, merged in part order."""
    states = [pickle.dumps(make().add(p, part=i)) for i, p in enumerate(parts)]
    acc = pickle.loads(states[0])
    for s in states[1:]:
        acc.merge(pickle.loads(s))
    return acc


def true_rank_distance(values: np.ndarray, value: float, q: float) -> float:
    xs = np.sort(values)
    lo = np.searchsorted(xs, value, side="left") / xs.size
    hi = np.searchsorted(xs, value, side="right") / xs.size
    return max(lo - q, q - hi, 0.0)


# --------------------------------------------------------------------------
# exact mode: identical to reward_stats on the whole frame
# --------------------------------------------------------------------------


@pytest.mark.parametrize("rows_per_shard", [1, 997, 20_000])
def test_parts_equal_the_frame_bit_for_bit(frame, rows_per_shard):
    parts = split_shards(frame, rows_per_shard=rows_per_shard)
    assert len(parts) > 1 and sum(p.height for p in parts) == frame.height
    for name in REWARDS:
        for scope in SCOPES:
            whole = reward_stats(frame, name, scope=scope)
            got = reward_stats_of_parts(parts, name, scope=scope)
            assert got.quantile_method == "exact" and got.quantile_rank_error == 0.0
            assert as_dict(got) == as_dict(whole), (name, scope)
            # the moments, bit for bit, not merely close
            assert (got.mean, got.std, got.sample_std) == (whole.mean, whole.std, whole.sample_std)


def test_workers_merged_in_part_order_equal_the_frame(frame):
    parts = split_shards(rewards_table(frame), rows_per_shard=5_000)
    for scope in ("all", "episode_return", "trajectory_return"):
        acc = in_workers(parts, lambda: RewardStatsParts("reward_delta", scope=scope, quantiles=(0.1, 0.5, 0.9)))
        assert acc.result() == reward_stats(rewards_table(frame), "delta", scope=scope, quantiles=(0.1, 0.5, 0.9))


def test_parts_of_a_generic_spec_with_attached_specs():
    rng = np.random.default_rng(5)
    lengths = rng.integers(1, 30, size=300)
    spec = FrameSpec(name="toy", episode=("e",), terminated="term")
    e = np.repeat(np.arange(lengths.size), lengths)
    last = np.r_[e[1:] != e[:-1], True]
    f = pl.DataFrame({"e": e, "term": last, "reward_r": rng.normal(size=e.size).round(2),
                      "done_r": last | (rng.random(e.size) < 0.1)})
    attach(f, spec)
    parts = [attach(p, spec) for p in split_shards(f, rows_per_shard=200)]
    for scope in ("all", "nonzero", "episode_end", "episode_return", "trajectory_return"):
        assert reward_stats_of_parts(parts, "r", scope=scope) == reward_stats(f, "r", scope=scope), scope
        assert normalization_constants_of_parts(parts, "r", scope=scope) == \
            normalization_constants(f, "r", scope=scope), scope


def test_parquet_parts_and_lazy_parts(frame, tmp_path):
    table = rewards_table(frame)
    paths = []
    for i, p in enumerate(split_shards(table, rows_per_shard=30_000, spec=None)):
        paths.append(tmp_path / f"part-{i}.parquet")
        p.write_parquet(paths[-1])
    whole = reward_stats(table, "points", scope="episode_return")
    assert reward_stats_of_parts(paths, "points", scope="episode_return") == whole
    assert reward_stats_of_parts((pl.scan_parquet(p) for p in paths), "points", scope="episode_return") == whole


def test_constants_applied_part_by_part(frame):
    c = normalization_constants(frame, "points", scope="end_of_game")
    parts = split_shards(frame, rows_per_shard=10_000)
    got = reward_stats_of_parts(parts, "points", scope="end_of_game", constants=c)
    assert got == reward_stats(frame, "points", scope="end_of_game", constants=c)
    assert got.normalized_by == c.to_dict()


def test_no_quantiles_keeps_no_values(frame):
    parts = split_shards(frame, rows_per_shard=10_000)
    acc = in_workers(parts, lambda: RewardStatsParts("points", quantiles=()))
    assert acc.values is None
    got, whole = acc.result(), reward_stats(frame, "points", quantiles=())
    assert got.quantiles == {} and got.count == whole.count and got.zero_fraction == whole.zero_fraction
    assert got.mean == pytest.approx(whole.mean, rel=1e-12) and got.std == pytest.approx(whole.std, rel=1e-12)


# --------------------------------------------------------------------------
# past the exact limit: merged moments, KLL quantiles within their bound
# --------------------------------------------------------------------------


@pytest.mark.parametrize("scope", ["all", "end_of_round", "episode_return", "trajectory_return"])
def test_sketched_quantiles_lie_within_their_bound(frame, scope):
    parts = split_shards(frame, rows_per_shard=4_000)
    values = scope_values(frame, "delta", scope=scope)
    whole = reward_stats(frame, "delta", scope=scope)
    acc = in_workers(parts, lambda: RewardStatsParts("delta", scope=scope, exact_limit=0))
    assert len(pickle.dumps(acc)) < 60_000  # moments, counts and a sketch: no values
    got = acc.result()
    assert got.quantile_method == "kll" and got.quantile_rank_error == pytest.approx(KLL_BOUND)
    assert got.to_dict()["quantile_method"] == "kll"
    assert (got.count, got.min, got.max, got.zero_fraction) == (whole.count, whole.min, whole.max,
                                                                whole.zero_fraction)
    assert got.mean == pytest.approx(whole.mean, rel=1e-12, abs=1e-15)
    assert got.std == pytest.approx(whole.std, rel=1e-12)
    for q in DEFAULT_QUANTILES:
        assert true_rank_distance(values, got.quantiles[q], q) <= got.quantile_rank_error, q


def test_merged_moments_are_chan_merges_of_the_parts(frame):
    """Past the limit the moments are the parts' Moments.of merged in order: what they are, bit for bit."""
    parts = split_shards(frame, rows_per_shard=7_000)
    expected = Moments()
    for p in parts:
        expected = expected.merge(Moments.of(scope_values(p, "points", scope="all")))
    got = reward_stats_of_parts(parts, "points", exact_limit=0)
    assert (got.count, got.mean, got.std) == (expected.count, expected.mean, expected.std)


def test_the_switch_happens_past_the_limit(frame):
    parts = split_shards(frame, rows_per_shard=30_000)
    n = frame.height
    at = reward_stats_of_parts(parts, "top", exact_limit=n)
    assert at.quantile_method == "exact" and at == reward_stats(frame, "top")
    past = reward_stats_of_parts(parts, "top", exact_limit=n - 1)
    assert past.quantile_method == "kll"
    # a scope with fewer values stays exact under the same limit
    eog = reward_stats_of_parts(parts, "top", scope="end_of_game", exact_limit=n - 1)
    assert eog.quantile_method == "exact"


# --------------------------------------------------------------------------
# normalization constants
# --------------------------------------------------------------------------


@pytest.mark.parametrize("scope", ["all", "end_of_game", "episode_return"])
def test_normalization_parts_equal_the_frame(frame, scope):
    parts = split_shards(frame, rows_per_shard=3_000)
    whole = normalization_constants(frame, "points", scope=scope)
    assert normalization_constants_of_parts(parts, "points", scope=scope) == whole
    acc = in_workers(parts, lambda: NormalizationParts("points", scope=scope))
    assert acc.result() == whole  # fingerprint and rows included


def test_normalization_past_the_limit(frame):
    cut_a = split_shards(frame, rows_per_shard=3_000)
    cut_b = split_shards(frame, rows_per_shard=9_000)
    whole = normalization_constants(frame, "points")
    a = normalization_constants_of_parts(cut_a, "points", exact_limit=0, source="data/")
    again = in_workers(cut_a, lambda: NormalizationParts("points", exact_limit=0, source="data/")).result()
    b = normalization_constants_of_parts(cut_b, "points", exact_limit=0)
    assert a.fingerprint.startswith("blake2b-128-parts:") and a.fingerprint == again.fingerprint
    assert b.fingerprint != a.fingerprint  # per part: another cut, another fingerprint
    assert (a.count, a.rows, a.source) == (whole.count, whole.rows, "data/")
    assert a.mean == pytest.approx(whole.mean, rel=1e-12) and a.std == pytest.approx(whole.std, rel=1e-12)
    # the fingerprint reads the values: one changed value changes it
    changed = [cut_a[0].with_columns(reward_points=pl.col("reward_points") + 1e-9), *cut_a[1:]]
    assert normalization_constants_of_parts(changed, "points", exact_limit=0).fingerprint != a.fingerprint


def test_normalization_errors_name_the_part():
    good = pl.DataFrame({"reward_a": [1.0, 2.0]})
    bad = pl.DataFrame({"reward_a": [1.0, math.inf]})
    with pytest.raises(FrameError, match=r"reward 'a' in part 1 has 1 non-finite values in scope 'all'"):
        normalization_constants_of_parts([good, bad], "a")
    with pytest.raises(FrameError, match="is constant"):
        normalization_constants_of_parts([pl.DataFrame({"reward_a": [2.0]})] * 3, "a")
    with pytest.raises(FrameError, match="has no values in scope 'nonzero'"):
        normalization_constants_of_parts([pl.DataFrame({"reward_a": [0.0]})], "a", scope="nonzero")
    with pytest.raises(FrameError, match="has no values"):
        normalization_constants_of_parts([], "a")
    with pytest.raises(FrameError, match=r"reward 'a' in part 0 has 0 null and 1 NaN"):
        reward_stats_of_parts([pl.DataFrame({"reward_a": [math.nan]})], "a")


def test_empty_parts_give_nan_stats():
    s = reward_stats_of_parts([], "reward_a")
    assert s.reward == "a" and s.count == 0 and math.isnan(s.mean) and s.quantile_method == "exact"
    assert all(math.isnan(v) for v in s.quantiles.values())
    t = reward_stats_of_parts([pl.DataFrame({"reward_a": [0.0]})], "a", scope="nonzero")
    assert t.count == 0  # NaN fields: compare the dicts (NaN as None)
    assert t.to_dict() == reward_stats(pl.DataFrame({"reward_a": [0.0]}), "a", scope="nonzero").to_dict()


def test_merge_refuses_unlike_accumulators():
    a = RewardStatsParts("a").add(pl.DataFrame({"reward_a": [1.0]}))
    with pytest.raises(ParameterError, match="same scope"):
        a.merge(RewardStatsParts("a", scope="nonzero"))
    with pytest.raises(ParameterError, match="same quantiles"):
        a.merge(RewardStatsParts("a", quantiles=(0.5,)))
    with pytest.raises(ParameterError, match="same reward"):
        a.merge(RewardStatsParts("b").add(pl.DataFrame({"reward_b": [1.0]})))
    with pytest.raises(ParameterError, match="RewardStatsParts"):
        a.merge(NormalizationParts("a"))
    with pytest.raises(ParameterError, match="same scope"):
        NormalizationParts("a").merge(NormalizationParts("a", scope="nonzero"))
    with pytest.raises(ParameterError, match="exact_limit"):
        NormalizationParts("a", exact_limit=-1)
    with pytest.raises(ParameterError, match="reward"):
        RewardStatsParts(3)


def test_cli_stats_says_how_quantiles_were_computed(frame, tmp_path, capsys):
    import json

    from rewardlab.cli import main

    path = tmp_path / "rewards.parquet"
    rewards_table(frame).write_parquet(path)
    assert main(["stats", str(path), "--reward", "points"]) == 0
    assert "\n  quantiles: exact\n" in capsys.readouterr().out
    assert main(["stats", str(path), "--reward", "points", "--json"]) == 0
    got = json.loads(capsys.readouterr().out)["rewards"]["points"]["all"]
    assert (got["quantile_method"], got["quantile_rank_error"]) == ("exact", 0.0)


def test_the_footnote_names_each_scope_when_methods_differ(frame):
    from rewardlab.cli.analysis import _quantile_note

    parts = split_shards(frame, rows_per_shard=20_000)
    per = {"all": reward_stats_of_parts(parts, "points", exact_limit=50_000),
           "end_of_game": reward_stats_of_parts(parts, "points", scope="end_of_game", exact_limit=50_000)}
    assert _quantile_note(per) == "  quantiles: all: KLL sketch, rank error ±0.28%; end_of_game: exact"
    assert _quantile_note({"all": per["end_of_game"]}) == "  quantiles: exact"
