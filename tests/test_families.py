"""Reward families: validation, presets, constants, and three evaluation paths against a plain loop."""

from __future__ import annotations

import dataclasses
import math

import numpy as np
import polars as pl
import pytest
import torch
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import rewardlab
from reference import wiki_rank
from rewardlab.core.errors import FrameError, ParameterError
from rewardlab.domains.mahjong.families import (
    FAMILIES,
    Points,
    PointsParams,
    PreparedFrame,
    Provenance,
    Ranking,
    RankingParams,
    RankingPoints,
    RankingPointsParams,
    RoundDelta,
    RoundDeltaParams,
    all_presets,
    check_seed_normalization,
    field_hints,
    family_class,
    prepare_frame,
    preset_names,
    ranking_preset,
    seed_constants,
)


# ---------------------------------------------------------------------------
# A plain per-row reference, written from the seed's loops (no NumPy in the formulas)
# ---------------------------------------------------------------------------


_ROWS_CACHE: dict[int, tuple] = {}


def _rows(frame: pl.DataFrame):
    """Python lists of the columns the reference reads (cached: the session frames are reused)."""
    key = id(frame)
    if key not in _ROWS_CACHE or _ROWS_CACHE[key][0] is not frame:
        seat_ids = frame["sparse"].arr.get(6).to_list()
        results = frame["results"].to_list()
        eor = frame["end_of_round"].to_list()
        eog = frame["end_of_game"].to_list()
        _ROWS_CACHE[key] = (frame, (seat_ids, results, eor, eog))
    return _ROWS_CACHE[key][1]


def reference(family, frame: pl.DataFrame) -> tuple[list[float], list[bool]]:
    """Rewards and dones of ``family`` on ``frame``, one row at a time."""
    p = family.params
    seat_ids, results, eor, eog = _rows(frame)
    rewards, dones = [], []
    for i in range(frame.height):
        seat = seat_ids[i] - 71
        reward = 0.0
        if family.name == "round_delta":
            done = eor[i] or eog[i]
            if done:
                raw = (float(results[i][seat]) - p.offset) / p.divisor
                reward = (raw - p.mean) / p.std
        else:
            done = eog[i]
            if done:
                scores = list(results[i][4:8])
                score = scores[seat]
                if family.name == "ranking":
                    raw = p.vector[wiki_rank(scores, seat)]
                elif family.name == "points":
                    raw = (float(score) - p.offset) / p.divisor
                else:
                    raw = p.vector[wiki_rank(scores, seat)] + (score - p.offset) // p.divisor
                reward = (raw - p.mean) / p.std
        rewards.append(reward)
        dones.append(done)
    return rewards, dones


def bits(x) -> np.ndarray:
    arr = x.numpy() if isinstance(x, torch.Tensor) else np.asarray(x, dtype=np.float64)
    return np.ascontiguousarray(arr, dtype=np.float64).view(np.int64)


def td_path(family, frame, rows=None):
    td = rewardlab.to_tensordict(frame, rows=rows)
    family.get_reward(td, rows is None)
    return td["next", "reward"], td["next", "done"]


@pytest.fixture(scope="module")
def prepared(sample_frame) -> PreparedFrame:
    return prepare_frame(sample_frame)


# ---------------------------------------------------------------------------
# Validation
# ---------------------------------------------------------------------------


@pytest.mark.parametrize("make, message", [
    (lambda: RankingParams(vector=(1, 2, 3)),
     "`vector` should have 4 entries (one per final rank), not 3. Received (1, 2, 3)."),
    (lambda: RankingParams(vector=(1, float("nan"), 0, 0)),
     "`vector[1]` should be a finite number (not NaN or infinite). Received nan."),
    (lambda: RankingParams(vector=(1, 0, 0, float("-inf"))),
     "`vector[3]` should be a finite number (not NaN or infinite). Received -inf."),
    (lambda: RankingParams(vector=(1, "a", 0, 0)), "`vector[1]` should be a real number. Received 'a'."),
    (lambda: RankingParams(vector=(True, 0, 0, 0)), "`vector[0]` should be a real number. Received True."),
    (lambda: RankingParams(vector="1,2,3,4"),
     "`vector` should be a sequence of 4 numbers (one per final rank). Received '1,2,3,4'."),
    (lambda: RankingParams(std=0.0),
     "`std` should be > 0 (rewards are divided by it). Received 0.0. "
     "Use std=1.0 for no scaling, or fill it from data."),
    (lambda: RankingParams(std=-2), "`std` should be > 0 (rewards are divided by it). Received -2.0."),
    (lambda: RankingParams(mean=float("nan")), "`mean` should be a finite number (not NaN or infinite)."),
    (lambda: PointsParams(divisor=0), "`divisor` should be a nonzero number. Received 0.0."),
    (lambda: PointsParams(offset=float("inf")), "`offset` should be a finite number"),
    (lambda: RoundDeltaParams(divisor=-0.0), "`divisor` should be a nonzero number. Received -0.0."),
    (lambda: RankingPointsParams(divisor=0), "`divisor` should be >= 1. Received 0."),
    (lambda: RankingPointsParams(offset=2.5), "`offset` should be an integer. Received 2.5."),
    (lambda: RankingPointsParams(vector=(1, 2, 3, 4, 5)), "`vector` should have 4 entries"),
    (lambda: RankingParams(provenance="typed"),
     "`provenance` should be a rewardlab.domains.mahjong.families.Provenance. Received 'typed'."),
    (lambda: Ranking(PointsParams()), "`params` should be a RankingParams. Received 'PointsParams'."),
    (lambda: Ranking.from_preset("nope"), "`preset` should be one of top, top_two"),
    (lambda: Provenance("guess"), "`kind` should be one of 'default', 'typed', 'seed', 'dataset'."),
])
def test_invalid_parameters_name_rule_and_value(make, message):
    with pytest.raises(ParameterError) as info:
        make()
    assert message in str(info.value)


def test_parameters_are_normalized_and_frozen():
    p = RankingParams(vector=np.array([90, 45, 0, -135]))
    assert p.vector == (90.0, 45.0, 0.0, -135.0) and all(type(v) is float for v in p.vector)
    assert RankingPointsParams(offset=25000.0, divisor=100.0).offset == 25000
    assert type(RankingPointsParams(offset=25000.0).offset) is int
    with pytest.raises(dataclasses.FrozenInstanceError):
        p.std = 2.0


@pytest.mark.parametrize("params_type", [RankingParams, PointsParams, RankingPointsParams, RoundDeltaParams])
def test_every_numeric_field_has_doc_and_widget_hints(params_type):
    hints = field_hints(params_type)
    for f in dataclasses.fields(params_type):
        assert hints[f.name]["doc"], f.name
        if f.name == "provenance":
            continue
        h = hints[f.name]
        assert h["min"] < h["max"] and h["step"] > 0, f.name
    # the defaults are inside the hinted ranges
    default = params_type()
    for name in ("mean", "std"):
        assert hints[name]["min"] <= getattr(default, name) <= hints[name]["max"]


def test_presets():
    assert Ranking.from_preset("tenhou_houou_7dan").params.vector == (90.0, 45.0, 0.0, -135.0)
    assert Ranking.from_preset("top").params.vector == (1.0, -1.0, -1.0, -1.0)
    assert Ranking.from_preset("top-two").params.vector == (1.0, 1.0, -1.0, -1.0)
    assert Ranking.from_preset("tenhou_tokujo_6dan").params.vector == (75.0, 30.0, 0.0, -120.0)
    assert Ranking.from_preset("mahjongsoul_throne_celestial").params.vector == (1.0, 0.4, -0.4, -1.0)
    jade = RankingPoints.from_preset("mahjongsoul_jade_saint3").params
    assert (jade.vector, jade.offset, jade.divisor) == ((135.0, 65.0, -5.0, -255.0), 25000, 1000)
    ml = ranking_preset("mleague").params
    assert (ml.vector, ml.offset, ml.divisor) == ((500.0, 100.0, -100.0, -300.0), 30000, 100)
    assert "mleague" in preset_names("ranking") and "top" in preset_names("ranking")
    assert family_class("round-delta") is RoundDelta
    assert {f.name for f in all_presets()} == set(FAMILIES)
    with pytest.raises(ParameterError, match="`preset` should be one of"):
        ranking_preset("houou")
    with pytest.raises(ParameterError, match="`family` should be one of"):
        family_class("elo")


# ---------------------------------------------------------------------------
# Evaluation: frame path == TensorDict path == plain loop, bit for bit
# ---------------------------------------------------------------------------


def _variants():
    out = list(all_presets())
    out += [cls.from_preset(next(iter(cls.presets))).with_constants(0.3, 1.7) for cls in FAMILIES.values()]
    out.append(Ranking(RankingParams(vector=(0.1, 0.2, 0.3, -0.7), mean=0.1, std=0.3)))
    out.append(RankingPoints(RankingPointsParams(vector=(1.5, 0.5, -0.5, -1.5), offset=-3, divisor=7,
                                                 mean=-0.25, std=3.3)))
    out.append(Points(PointsParams(offset=12345.6, divisor=-3.3, mean=0.7, std=0.9)))
    out.append(RoundDelta(RoundDeltaParams(offset=150.0, divisor=77.7, mean=0.01, std=1.3)))
    return out


@pytest.mark.parametrize("family", _variants(), ids=lambda f: f.describe()[:60])
def test_frame_and_tensordict_paths_match_the_loop_bit_for_bit(family, sample_frame, prepared):
    ref_reward, ref_done = reference(family, sample_frame)
    reward, done = family.evaluate(prepared)
    td_reward, td_done = td_path(family, sample_frame)
    assert reward.dtype == np.float64 and td_reward.dtype == torch.float64
    assert np.array_equal(bits(reward), bits(ref_reward))
    assert np.array_equal(bits(td_reward), bits(ref_reward))
    assert np.array_equal(done, np.array(ref_done)) and np.array_equal(td_done.numpy(), done)


def test_tensordict_path_on_shuffled_rows_is_the_same_gather(sample_frame, prepared):
    perm = np.random.default_rng(5).permutation(sample_frame.height)[:5000]
    for family in (RankingPoints.from_preset("mleague").with_constants(3.0, 7.0),
                   RoundDelta.from_preset("thousands").with_constants(0.1, 4.0)):
        reward, done = family.evaluate(prepared)
        td_reward, td_done = td_path(family, sample_frame, rows=perm)
        assert np.array_equal(bits(td_reward), bits(reward[perm]))
        assert np.array_equal(td_done.numpy(), done[perm])


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    vector=st.lists(st.floats(-1e6, 1e6, allow_nan=False), min_size=4, max_size=4),
    offset=st.integers(-50000, 50000),
    divisor=st.integers(1, 5000),
    mean=st.floats(-1e3, 1e3, allow_nan=False),
    std=st.floats(1e-3, 1e4, allow_nan=False),
    which=st.sampled_from(sorted(FAMILIES)),
)
def test_random_parameters_agree_everywhere(small_frame, vector, offset, divisor, mean, std, which):
    cls = family_class(which)
    fields = {f.name for f in dataclasses.fields(cls.params_type)}
    kw = {"mean": mean, "std": std}
    if "vector" in fields:
        kw["vector"] = vector
    if "offset" in fields:
        kw["offset"], kw["divisor"] = offset, divisor
    family = cls(cls.params_type(**kw))
    ref_reward, ref_done = reference(family, small_frame)
    reward, done = family.evaluate(small_frame)
    td_reward, td_done = td_path(family, small_frame)
    assert np.array_equal(bits(reward), bits(ref_reward))
    assert np.array_equal(bits(td_reward), bits(ref_reward))
    assert done.tolist() == ref_done == td_done.tolist()


def test_ranks_break_ties_by_seat(small_frame):
    # game 3 of small_frame ends with scores (25000, 25000, 30000, 20000)
    prepared = prepare_frame(small_frame)
    ends = small_frame.filter(pl.col("end_of_game"))
    game3 = (ends["game"] == 2).to_numpy()
    seats = ends["seat"].to_numpy()[game3]
    ranks = prepared.rank[game3]
    assert dict(zip(seats.tolist(), ranks.tolist())) == {0: 1, 1: 2, 2: 0, 3: 3}
    family = Ranking(RankingParams(vector=(10.0, 20.0, 30.0, 40.0)))
    reward, _ = family.evaluate(prepared)
    assert reward[prepared.game_rows[game3]].tolist() == [20.0, 30.0, 10.0, 40.0]


def test_round_delta_rewards_every_round_end_and_sets_done_there(small_frame):
    family = RoundDelta(RoundDeltaParams(offset=0, divisor=1000))
    reward, done = family.evaluate(small_frame)
    eor = small_frame["end_of_round"].to_numpy()
    eog = small_frame["end_of_game"].to_numpy()
    assert np.array_equal(done, eor | eog)
    assert np.all(reward[~(eor | eog)] == 0.0)
    # tests/lines.py: every round end carries deltas (1000, -1000, 0, 0), the game end (6000, -2000, ...)
    seat = small_frame["seat"].to_numpy()
    expected_eor = np.array([1.0, -1.0, 0.0, 0.0])[seat[eor]]
    assert np.array_equal(reward[eor], expected_eor)
    assert np.array_equal(reward[eog], np.array([6.0, -2.0, -2.0, -2.0])[seat[eog]])


def test_with_columns_adds_reward_and_done(small_frame):
    out = Ranking.from_preset("top").with_columns(small_frame, "top")
    assert out.columns[-2:] == ["reward_top", "done_top"]
    assert out.schema["reward_top"] == pl.Float64 and out.schema["done_top"] == pl.Boolean
    with pytest.raises(ParameterError, match="`name` should match"):
        Ranking().with_columns(small_frame, "bad name")


def test_with_params_revalidates_and_keeps_constants():
    fam = Ranking.from_preset("top").with_constants(1.0, 2.0)
    changed = fam.with_params(vector=(4, 3, 2, 1))
    assert changed.params.vector == (4.0, 3.0, 2.0, 1.0) and changed.params.std == 2.0
    with pytest.raises(ParameterError, match=r"`vector\[2\]` should be a finite number"):
        fam.with_params(vector=(4, 3, math.nan, 1))


# ---------------------------------------------------------------------------
# Normalization constants and provenance
# ---------------------------------------------------------------------------


@pytest.mark.parametrize("family", [Ranking.from_preset("tenhou_houou_7dan"),
                                    RankingPoints.from_preset("mleague"), Points.from_preset("thousands"),
                                    RoundDelta.from_preset("thousands")], ids=lambda f: f.name)
def test_constants_from_data_are_population_moments_over_the_scope(family, sample_frame, sample_path):
    data = sample_path if family.name == "ranking" else sample_frame  # a path once (parsing is slow)
    raw = np.array(reference(family, sample_frame)[0])
    scope = sample_frame["end_of_game"].to_numpy()
    if family.name == "round_delta":
        scope = scope | sample_frame["end_of_round"].to_numpy()
    values = raw[scope]
    filled = family.with_constants_from(data)
    assert filled.params.mean == pytest.approx(float(np.mean(values)), rel=1e-12, abs=1e-12)
    assert filled.params.std == pytest.approx(float(np.std(values)), rel=1e-12)
    prov = filled.params.provenance
    assert (prov.kind, prov.dataset, prov.rows, prov.steps, prov.scope) == (
        "dataset", str(sample_path), sample_frame.height, int(scope.sum()), family.scope)
    assert prov.fingerprint.startswith("sha256:") and len(prov.fingerprint) == 7 + 16
    reward, _ = filled.evaluate(sample_frame)
    assert abs(reward[scope].mean()) < 1e-12 and reward[scope].std() == pytest.approx(1.0, abs=1e-12)
    assert f"{sample_frame.height:,} rows" in prov.describe()


def test_constants_from_a_frame_name_its_source_files(sample_frame, sample_path):
    fam = Ranking.from_preset("top").with_constants_from(sample_frame)
    assert fam.params.provenance.dataset == str(sample_path)


def test_constants_from_stats_normalization_constants(sample_frame):
    from rewardlab.analysis.stats import normalization_constants

    family = RoundDelta.from_preset("thousands")
    with_raw = family.with_columns(sample_frame, "delta")
    constants = normalization_constants(with_raw, "delta", scope="end_of_round")
    filled = family.with_constants_from(constants)
    direct = family.with_constants_from(sample_frame)
    assert filled.params.mean == pytest.approx(direct.params.mean, abs=1e-12)
    assert filled.params.std == pytest.approx(direct.params.std, rel=1e-12)
    assert filled.params.provenance.steps == direct.params.provenance.steps
    wrong = normalization_constants(with_raw, "delta", scope="end_of_game")
    with pytest.raises(ParameterError, match="`data.scope` should be 'end_of_round'"):
        family.with_constants_from(wrong)


def test_constant_raw_reward_cannot_be_normalized(small_frame):
    with pytest.raises(ParameterError, match="`std` should be > 0, but the raw reward is constant"):
        Ranking(RankingParams(vector=(1, 1, 1, 1))).with_constants_from(small_frame)


def test_fingerprint_follows_the_content(small_frame):
    a = prepare_frame(small_frame).fingerprint
    assert prepare_frame(small_frame.clone()).fingerprint == a
    last = small_frame.height - 1
    results = small_frame["results"].to_numpy().copy()
    results[last, 4] += 100
    changed = small_frame.with_columns(pl.Series("results", results, dtype=small_frame.schema["results"]))
    assert prepare_frame(changed).fingerprint != a


def test_prepare_refuses_incomplete_episodes_and_bad_seats(small_frame):
    with pytest.raises(FrameError, match="last row is not the end of a game"):
        prepare_frame(small_frame.head(small_frame.height - 1))
    sparse = small_frame["sparse"].to_numpy().copy()
    sparse[-1, 6] = 80
    bad = small_frame.with_columns(pl.Series("sparse", sparse, dtype=small_frame.schema["sparse"]))
    with pytest.raises(FrameError, match="sparse\\[6\\] is 80, not a seat id"):
        prepare_frame(bad)
    td = rewardlab.to_tensordict(bad)
    with pytest.raises(FrameError, match="should be a seat 0-3"):
        Ranking().get_reward(td, True)


def test_seed_constants_and_the_pitfall(sample_frame, prepared):
    assert seed_constants((1, -1, -1, -1)) == (-0.5, 1.0)
    mean, std = seed_constants((90, 45, 0, -135))
    assert mean == 0.0 and std == pytest.approx(math.sqrt((90**2 + 45**2 + 135**2) / 3))
    fam = Ranking.from_preset("tenhou_houou_7dan").with_seed_constants()
    assert fam.params.provenance.kind == "seed" and "sample std" in fam.params.provenance.describe()
    check = check_seed_normalization(prepared, (90, 45, 0, -135))
    # complete games: every rank once per game, so the std is exactly sqrt(3)/2 (up to rounding)
    assert check.measured_std == pytest.approx(math.sqrt(3) / 2, abs=1e-12)
    assert check.complete_games_std == pytest.approx(0.8660254037844386)
    assert check.steps == int(sample_frame["end_of_game"].sum())
    assert check.data_std == pytest.approx(check.seed_std * math.sqrt(3) / 2)
    assert "std 0.866" in str(check)
    reward, _ = fam.evaluate(prepared)
    assert reward[prepared.game_rows].std() == pytest.approx(check.measured_std, abs=1e-12)


def test_describe_shows_parameters_and_provenance():
    text = RankingPoints.from_preset("mleague").with_constants(1.5, 2.0).describe()
    assert "vector=[500.0, 100.0, -100.0, -300.0]" in text and "offset=30000" in text
    assert "mean=1.5, std=2.0 from typed by the user" in text


def test_unknown_parameter_names_are_refused_with_the_valid_names():
    from rewardlab.core.errors import ParameterError
    from rewardlab.domains.mahjong.families import Points, Ranking

    with pytest.raises(ParameterError, match=r"`divsor` should be a parameter of the points family: "
                       r"offset, divisor, mean, std, provenance\. Received 10\."):
        Points.from_preset("raw", divsor=10)
    with pytest.raises(ParameterError, match="`vectr` should be a parameter of the ranking family"):
        Ranking.from_preset("top").with_params(vectr=(1, 0, 0, -1))


# ---------------------------------------------------------------------------
# Issue 10: what fitted constants were fitted for; the reward range every input stays in
# ---------------------------------------------------------------------------


@pytest.mark.parametrize("family", [Ranking.from_preset("top"), RankingPoints.from_preset("mleague"),
                                    Points.from_preset("thousands"), RoundDelta.from_preset("thousands")],
                         ids=lambda f: f.name)
def test_fitted_constants_record_what_they_were_fitted_for(family, small_frame):
    fitted = family.with_constants_from(small_frame)
    assert fitted.params.provenance.fitted_for == family.parameter_key() and not fitted.constants_stale
    field = next(iter(family.parameter_summary()))
    value = getattr(family.params, field)
    moved = fitted.with_params(**{field: tuple(v + 1 for v in value) if isinstance(value, tuple) else value + 1})
    assert moved.constants_stale and moved.params.provenance == fitted.params.provenance
    assert not moved.with_constants(0.0, 1.0).constants_stale  # typed constants are the user's choice
    assert not family.constants_stale  # default constants
    assert family.parameter_key().startswith(family.name + ": ")


def test_seed_constants_record_their_vector():
    seeded = Ranking.from_preset("tenhou_houou_7dan").with_seed_constants()
    assert seeded.params.provenance.fitted_for == "ranking: vector=[90.0, 45.0, 0.0, -135.0]"
    assert seeded.with_params(vector=(90, 45, 0, -136)).constants_stale
    old = dataclasses.replace(seeded.params.provenance, fitted_for=None)  # e.g. made by hand
    assert not seeded.with_params(provenance=old, vector=(1, 0, 0, -1)).constants_stale


def test_raw_extremes_bound_every_reward(sample_frame):
    """Every reward on real data lies between the extremes the range check looks at."""
    prepared = prepare_frame(sample_frame)
    for family in all_presets():
        family = family.with_constants_from(prepared)
        raws = np.array([r for r, *_ in family.params.raw_extremes()])
        values = family.raw_values(prepared)
        assert raws.min() <= values.min() and values.max() <= raws.max(), family.name
        assert np.all(np.isfinite(raws))
