"""Statistics and normalization constants: exact values against NumPy and plain loops, scopes, errors."""

from __future__ import annotations

import dataclasses
import math

import numpy as np
import polars as pl
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from analysis_data import rewards_table, with_rewards
from rewardlab.core.errors import ColumnNotFoundError, FrameError, ParameterError, SpecError
from rewardlab.analysis.compare import episode_return_table
from rewardlab.analysis.return_tables import episode_returns
from rewardlab.analysis.scopes import SCOPES, scope_values
from rewardlab.analysis.stats import (
    Moments, NormalizationConstants, describe_rewards, normalization_constants, reward_moments, reward_stats,
)


@pytest.fixture(scope="module")
def frame(sample_frame):
    return with_rewards(sample_frame)


@pytest.fixture(scope="module")
def table(frame):
    return rewards_table(frame)


# --------------------------------------------------------------------------
# loop references
# --------------------------------------------------------------------------


def scope_values_loop(frame: pl.DataFrame, name: str, scope: str) -> list[float]:
    """The values of a scope, one row at a time."""
    r = frame[f"reward_{name}"].to_list()
    out: list[float] = []
    if scope in ("episode_return", "trajectory_return"):  # whole episodes / cut at done too
        done = frame[f"done_{name}"].to_list() if scope == "trajectory_return" else [False] * len(r)
        eog = frame["end_of_game"].to_list() if "end_of_game" in frame.columns else None
        keys = list(zip(frame["game_id"].cast(pl.String).to_list(), frame["seat"].to_list())) \
            if "game_id" in frame.columns else None
        acc = 0.0
        for i in range(len(r)):
            acc += r[i]
            last = i == len(r) - 1
            game_end = (eog[i] if eog is not None else (keys is not None and not last and keys[i] != keys[i + 1]))
            if done[i] or game_end or last:
                out.append(acc)
                acc = 0.0
        return out
    for i, x in enumerate(r):
        if scope == "all":
            keep = True
        elif scope == "nonzero":
            keep = x != 0
        elif scope in ("end_of_game", "episode_end"):  # kanachan's word for the generic scope
            keep = frame["end_of_game"][i]
        elif scope in ("end_of_round", "boundary"):
            keep = frame["end_of_round"][i] or frame["end_of_game"][i]
        else:
            raise AssertionError(f"no loop reference for scope {scope!r}")
        if keep:
            out.append(x)
    return out


# --------------------------------------------------------------------------
# Moments
# --------------------------------------------------------------------------


def test_moments_of_matches_numpy():
    x = np.random.default_rng(0).normal(5.0, 3.0, size=1001)
    m = Moments.of(x)
    assert m.count == 1001
    assert m.mean == pytest.approx(x.mean(), rel=1e-14)
    assert m.var == pytest.approx(x.var(), rel=1e-12)
    assert m.sample_std == pytest.approx(x.std(ddof=1), rel=1e-12)
    assert (m.min, m.max) == (x.min(), x.max())


@settings(max_examples=60, deadline=None)
@given(st.lists(st.floats(-1e6, 1e6, allow_nan=False), min_size=0, max_size=40), st.integers(0, 40))
def test_moments_of_with_zeros_equals_the_materialised_column(values, zeros):
    x = np.array(values, dtype=np.float64)
    column = np.concatenate([x, np.zeros(zeros)])
    sparse, whole = Moments.of(x, zeros=zeros), Moments.of(column)
    assert sparse.count == whole.count == column.size
    if column.size:
        scale = max(1.0, float(np.abs(x).max()) if x.size else 1.0)
        assert sparse.mean == pytest.approx(whole.mean, abs=1e-12 * scale)
        assert sparse.m2 == pytest.approx(whole.m2, rel=1e-9, abs=1e-9 * scale * scale)
        assert (sparse.min, sparse.max) == (whole.min, whole.max)
    else:
        assert sparse == Moments()


def test_moments_of_refuses_a_bad_zero_count():
    with pytest.raises(ParameterError, match="`zeros`"):
        Moments.of([1.0], zeros=-1)
    with pytest.raises(ParameterError, match="`zeros`"):
        Moments.of([1.0], zeros=True)


def test_moments_of_sums_in_an_order_fixed_by_the_length():
    """The squared deviations are NumPy's pairwise sum, not a BLAS dot (whose order is the processor's)."""
    x = np.random.default_rng(1).normal(0.3, 2.0, size=10_007)
    mean = float(np.add.reduce(x)) / x.size
    d = (x - mean) ** 2
    assert Moments.of(x).m2 == float(np.add.reduce(d))
    assert Moments.of(x).mean == float(x.mean())


@settings(max_examples=60, deadline=None)
@given(st.lists(st.floats(-1e6, 1e6, allow_nan=False), min_size=0, max_size=60),
       st.lists(st.integers(0, 60), max_size=5))
def test_merge_of_parts_equals_whole(values, cuts):
    x = np.array(values, dtype=np.float64)
    bounds = sorted({0, len(x), *[min(c, len(x)) for c in cuts]})
    merged = Moments()
    for lo, hi in zip(bounds[:-1], bounds[1:]):
        merged = merged.update(x[lo:hi])
    whole = Moments.of(x)
    assert merged.count == whole.count
    if whole.count:
        scale = max(1.0, float(np.abs(x).max()))
        assert merged.mean == pytest.approx(whole.mean, abs=1e-9 * scale)
        assert merged.m2 == pytest.approx(whole.m2, rel=1e-9, abs=1e-6 * scale)
        assert (merged.min, merged.max) == (whole.min, whole.max)


def test_merge_is_order_independent_and_handles_empty():
    a, b = Moments.of([1.0, 2.0]), Moments.of([10.0])
    assert (a + b).mean == pytest.approx((b + a).mean)
    assert (a + b).m2 == pytest.approx((b + a).m2)
    assert a + Moments() is a and Moments() + b is b
    empty = Moments()
    assert math.isnan(empty.var) and math.isnan(empty.std) and math.isnan(empty.sample_std)
    assert Moments.of([3.0]).var == 0.0 and math.isnan(Moments.of([3.0]).sample_var)


def test_merge_rejects_other_types():
    with pytest.raises(ParameterError, match=r"`other` should be a Moments. Received 'float'"):
        Moments().merge(1.0)


def test_moments_to_dict_is_json_ready():
    d = Moments().to_dict()
    assert d["min"] is None and d["std"] is None and d["count"] == 0


# --------------------------------------------------------------------------
# reward_stats over scopes
# --------------------------------------------------------------------------


@pytest.mark.parametrize("scope", SCOPES)
@pytest.mark.parametrize("name", ["top", "points", "delta"])
def test_reward_stats_match_loop_reference(frame, name, scope):
    expected = np.array(scope_values_loop(frame, name, scope))
    s = reward_stats(frame, name, scope=scope)
    assert s.count == expected.size
    assert s.mean == pytest.approx(expected.mean(), rel=1e-9, abs=1e-12)
    assert s.std == pytest.approx(expected.std(), rel=1e-9)
    assert s.sample_std == pytest.approx(expected.std(ddof=1), rel=1e-9)
    assert (s.min, s.max) == (expected.min(), expected.max())
    assert s.zero_fraction == pytest.approx((expected == 0).mean())
    for q, v in s.quantiles.items():
        assert v == pytest.approx(np.quantile(expected, q), rel=1e-12, abs=1e-12)
    np.testing.assert_allclose(scope_values(frame, name, scope=scope), expected, rtol=1e-12, atol=1e-12)


def test_end_of_round_scope_includes_the_games_last_step(small_frame):
    f = small_frame.with_columns(reward_a=pl.lit(1.0), done_a=pl.col("end_of_game"))
    s = reward_stats(f, "a", scope="end_of_round")
    rounds = f.select(pl.struct("game", "round").n_unique()).item()
    assert s.count == 4 * rounds  # every round of every player, the last ones on end_of_game rows
    assert s.count == int(f["end_of_round"].sum() + f["end_of_game"].sum())


def test_rewards_table_lazy_and_parquet_agree(frame, table, tmp_path):
    path = tmp_path / "rewards.parquet"
    table.write_parquet(path)
    for scope in ("all", "nonzero", "episode_return", "trajectory_return"):
        ref = reward_stats(frame, "delta", scope=scope)
        for data in (table, table.lazy(), path, str(path)):
            got = reward_stats(data, "delta", scope=scope)
            assert got.count == ref.count
            assert got.mean == pytest.approx(ref.mean, rel=1e-12, abs=1e-15)
            assert got.std == pytest.approx(ref.std, rel=1e-12)


def test_episode_return_scope_cuts_at_game_end_in_a_rewards_table():
    # done never set: episodes still end where (game_id, seat) changes
    t = pl.DataFrame({"game_id": ["g", "g", "g", "h"], "seat": [0, 0, 1, 0], "step": [0, 1, 0, 0],
                      "reward_a": [1.0, 2.0, 4.0, 8.0], "done_a": [False] * 4})
    assert scope_values(t, "a", scope="episode_return").tolist() == [3.0, 4.0, 8.0]
    assert scope_values(t, "a", scope="trajectory_return").tolist() == [3.0, 4.0, 8.0]
    t = t.with_columns(done_a=pl.Series([True, False, False, False]))
    assert scope_values(t, "a", scope="episode_return").tolist() == [3.0, 4.0, 8.0]  # done does not cut
    assert scope_values(t, "a", scope="trajectory_return").tolist() == [1.0, 2.0, 4.0, 8.0]


def test_episode_and_trajectory_returns_count_episodes_and_trajectories_on_the_sample(frame, table):
    # the words of the CLI, the scopes and the plots agree: an episode return is one sum per
    # (game_id, seat); a trajectory return one sum per trajectory cut at the plug-in's own done
    episodes = frame.select("game_id", "seat").unique().height
    rounds = int((frame["end_of_round"] | frame["end_of_game"]).sum())
    assert (episodes, rounds) == (960, 8304)  # the sample's numbers the README quotes
    for data in (frame, table):
        assert reward_stats(data, "delta", scope="episode_return").count == episodes
        assert reward_stats(data, "delta", scope="trajectory_return").count == rounds
        assert reward_stats(data, "top", scope="trajectory_return").count == episodes
    assert episode_return_table(table).height == episodes
    assert episode_returns(frame, "delta").height == rounds


def test_scope_needing_absent_column_says_what_to_pass(table):
    with pytest.raises(FrameError, match=r"scope 'end_of_game' needs the column 'end_of_game'.*full frame"):
        reward_stats(table, "top", scope="end_of_game")
    with pytest.raises(FrameError, match=r"scope 'end_of_round' needs the column 'end_of_round'"):
        normalization_constants(table, "top", scope="end_of_round")


def test_errors_name_the_argument(frame):
    with pytest.raises(ParameterError, match=r"`scope` should be one of 'all', .*Received 'games'"):
        reward_stats(frame, "top", scope="games")
    with pytest.raises(ColumnNotFoundError, match=r"'reward_nope' not found; available: reward_top"):
        reward_stats(frame, "nope")
    with pytest.raises(ParameterError, match=r"`quantiles` should contain numbers in \[0, 1\]"):
        reward_stats(frame, "top", quantiles=(0.5, 1.5))
    with pytest.raises(ParameterError, match=r"`data` should be a polars DataFrame"):
        reward_stats(42, "top")
    with pytest.raises(ColumnNotFoundError, match=r"'done_x' not found"):
        reward_stats(pl.DataFrame({"reward_x": [1.0]}), "x", scope="trajectory_return")
    with pytest.raises(SpecError, match=r"scope 'episode_return' needs episodes.*scope='trajectory_return'"):
        reward_stats(pl.DataFrame({"reward_x": [1.0]}), "x", scope="episode_return")


def test_reward_column_name_is_accepted_too(frame):
    assert reward_stats(frame, "reward_top").reward == "top"


def test_null_rewards_are_refused():
    with pytest.raises(FrameError, match=r"1 null and 0 NaN values"):
        reward_stats(pl.DataFrame({"reward_a": [1.0, None]}), "a")


def test_empty_scope_gives_nan_not_an_error():
    s = reward_stats(pl.DataFrame({"reward_a": [0.0, 0.0]}), "a", scope="nonzero")
    assert s.count == 0 and math.isnan(s.mean) and math.isnan(s.quantiles[0.5])


def test_stats_to_dict_is_stable(frame):
    d = reward_stats(frame, "top", quantiles=(0.25, 0.5)).to_dict()
    assert list(d) == ["reward", "scope", "count", "mean", "std", "sample_std", "min", "max",
                       "zero_fraction", "quantiles", "normalized_by", "quantile_method", "quantile_rank_error"]
    assert list(d["quantiles"]) == ["0.25", "0.5"]


def test_describe_rewards_one_row_per_reward_and_scope(frame):
    d = describe_rewards(frame, scopes=("all", "end_of_game"), quantiles=(0.5,))
    assert d.select("reward", "scope").rows() == [
        ("top", "all"), ("top", "end_of_game"), ("points", "all"), ("points", "end_of_game"),
        ("delta", "all"), ("delta", "end_of_game")]
    assert d.columns[-1] == "q0.5"
    row = d.filter((pl.col("reward") == "points") & (pl.col("scope") == "end_of_game")).row(0, named=True)
    assert row["mean"] == pytest.approx(reward_stats(frame, "points", scope="end_of_game").mean)
    with pytest.raises(FrameError, match="no reward_<name> columns"):
        describe_rewards(pl.DataFrame({"x": [1]}))


def test_reward_moments_stream_and_merge_across_files(table, tmp_path):
    half = table.height // 2
    a, b = tmp_path / "a.parquet", tmp_path / "b.parquet"
    table.slice(0, half).write_parquet(a)
    table.slice(half).write_parquet(b)
    merged = reward_moments(a, "points") + reward_moments(b, "points")
    whole = reward_moments(table, "points")
    assert merged.count == whole.count
    assert merged.mean == pytest.approx(whole.mean, abs=1e-15)
    assert merged.std == pytest.approx(whole.std, rel=1e-12)
    both = reward_moments([a, b], "points")
    assert both.count == whole.count


# --------------------------------------------------------------------------
# normalization constants
# --------------------------------------------------------------------------


@pytest.mark.parametrize("scope", ["all", "nonzero", "end_of_game", "end_of_round", "episode_return",
                                   "trajectory_return"])
def test_constants_normalize_their_own_data_to_0_and_1(frame, scope):
    c = normalization_constants(frame, "points", scope=scope)
    expected = np.array(scope_values_loop(frame, "points", scope))
    assert c.mean == pytest.approx(expected.mean(), abs=1e-12)
    assert c.std == pytest.approx(expected.std(), rel=1e-12)
    assert (c.count, c.rows, c.scope, c.reward) == (expected.size, frame.height, scope, "points")
    after = reward_stats(frame, "points", scope=scope, constants=c)
    assert after.mean == pytest.approx(0.0, abs=1e-12)
    assert after.std == pytest.approx(1.0, rel=1e-12)
    assert after.normalized_by == c.to_dict()


def test_constants_record_their_source(frame, table, tmp_path):
    path = tmp_path / "r.parquet"
    table.write_parquet(path)
    from_path = normalization_constants(path, "points", scope="nonzero")
    from_frame = normalization_constants(table, "points", scope="nonzero")
    assert from_path.source == str(path) and from_frame.source is None
    assert from_path.fingerprint == from_frame.fingerprint
    assert from_path.fingerprint.startswith("blake2b-128:") and len(from_path.fingerprint) == 12 + 32
    changed = table.with_columns(pl.col("reward_points") * 2)
    assert normalization_constants(changed, "points", scope="nonzero").fingerprint != from_path.fingerprint


def test_constants_are_a_frozen_plain_dataclass(frame):
    c = normalization_constants(frame, "top", scope="end_of_game")
    assert dataclasses.is_dataclass(c)
    with pytest.raises(dataclasses.FrozenInstanceError):
        c.mean = 1.0
    assert NormalizationConstants.from_dict(c.to_dict()) == c
    np.testing.assert_allclose(c.apply([c.mean, c.mean + c.std]), [0.0, 1.0])
    with pytest.raises(ParameterError, match=r"`d` should have exactly the keys"):
        NormalizationConstants.from_dict(c.to_dict() | {"extra": 1})


def test_constants_validate_their_fields():
    with pytest.raises(ParameterError, match=r"`std` should be > 0. Received 0.0."):
        NormalizationConstants("a", "all", 0.0, 0.0, 1, None, 1, "x")
    with pytest.raises(ParameterError, match=r"`mean` should be a finite number"):
        NormalizationConstants("a", "all", math.nan, 1.0, 1, None, 1, "x")


def test_constant_or_empty_scope_cannot_be_normalized():
    f = pl.DataFrame({"reward_a": [0.0, 2.0, 0.0, 2.0]})
    with pytest.raises(FrameError, match=r"constant \(2.0\) over the 2 values in scope 'nonzero'"):
        normalization_constants(f, "a", scope="nonzero")
    with pytest.raises(FrameError, match=r"no values in scope 'nonzero'"):
        normalization_constants(pl.DataFrame({"reward_a": [0.0]}), "a", scope="nonzero")


@pytest.mark.parametrize("scope", ["all", "nonzero", "episode_return", "trajectory_return"])
def test_streaming_path_without_quantiles_agrees(frame, scope):
    streaming = reward_stats(frame, "delta", scope=scope, quantiles=())
    exact = reward_stats(frame, "delta", scope=scope)
    assert streaming.quantiles == {}
    assert streaming.count == exact.count
    assert streaming.mean == pytest.approx(exact.mean, abs=1e-15)
    assert streaming.std == pytest.approx(exact.std, rel=1e-12)
    assert streaming.zero_fraction == exact.zero_fraction
    assert (streaming.min, streaming.max) == (exact.min, exact.max)
    with pytest.raises(FrameError, match=r"1 null and 0 NaN values"):
        reward_stats(pl.DataFrame({"reward_a": [1.0, None]}), "a", quantiles=())
    with pytest.raises(FrameError, match=r"0 null and 1 NaN values"):
        reward_stats(pl.DataFrame({"reward_a": [1.0, float("nan")]}), "a")
