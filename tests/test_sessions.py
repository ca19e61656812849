"""Sessions driven directly: parameters, validation messages, recompute against plain-loop references."""

from __future__ import annotations

import json
import math
import os
import statistics
from pathlib import Path

import numpy as np
import polars as pl
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from rewardlab.core.errors import OutputExistsError, ParameterError
from rewardlab.sessions import (
    ComparisonSession, EpsilonScheduleSession, NormalizationSession, RankingTuningSession, locate,
    roundtrip_check,
)

ROOT = Path(__file__).resolve().parents[1]


# --------------------------------------------------------------------------
# Plain-loop references
# --------------------------------------------------------------------------


def loop_episodes(frame: pl.DataFrame, vector, *, points=False, offset=0, divisor=1, mean=0.0, std=1.0):
    """(reward, raw, rank) per end-of-game row, one row at a time, with kanachan's tie rule."""
    out = []
    for sparse, results in frame.filter(pl.col("end_of_game")).select("sparse", "results").rows():
        seat = sparse[6] - 71
        scores = list(results[4:8])
        score = scores[seat]
        rank = sum(1 for j in range(4) if (j < seat and scores[j] >= score) or (j > seat and scores[j] > score))
        raw = float(vector[rank]) + (float((score - offset) // divisor) if points else 0.0)
        out.append(((raw - mean) / std, raw, rank))
    return out


def loop_moments(values, n_rows=None):
    """Mean and population std of ``values`` (padded with zeros up to ``n_rows``)."""
    values = list(values) + [0.0] * ((n_rows or len(values)) - len(values))
    return statistics.fmean(values), statistics.pstdev(values)


# --------------------------------------------------------------------------
# locate
# --------------------------------------------------------------------------


def test_locate_from_a_subfolder_and_from_elsewhere(tmp_path):
    assert locate("data/plugins", start=ROOT / "notebooks") == ROOT / "data" / "plugins"
    # Not under tmp_path: found next to the rewardlab package (the repository).
    assert locate("data/plugins", start=tmp_path) == ROOT / "data" / "plugins"


def test_locate_messages(tmp_path):
    assert locate("/etc") == Path("/etc")  # the user's own absolute path, as it is
    with pytest.raises(ParameterError, match=r"`path` should exist under .* pass its absolute path"):
        locate("no/such/file.txt", start=tmp_path)


# --------------------------------------------------------------------------
# The session base: observers, update / try_update
# --------------------------------------------------------------------------


def test_observers_update_and_errors():
    s = EpsilonScheduleSession(n_steps=1000)
    calls = []
    cb = s.observe(lambda session: calls.append((session.version, session.last_error)))
    v = s.version
    s.n_steps = 2000  # attribute assignment validates, recomputes, notifies once
    assert calls == [(v + 1, None)] and s.results.summary.n_steps == 2000
    s.update(kind="exp", decay_steps=100)  # several at once: one recompute
    assert len(calls) == 2 and s.kind == "exp"
    with pytest.raises(ParameterError) as err:
        s.n_steps = 0
    assert str(err.value) == "`n_steps` should be >= 1. Received 0."
    assert s.n_steps == 2000 and len(calls) == 2  # nothing changed, nobody told
    assert s.try_update(epsilon_stable=1.5) is False
    assert s.last_error == "`epsilon_stable` should be in [0, 1] (a probability). Received 1.5."
    assert calls[-1] == (s.version, s.last_error) and s.epsilon_stable == 0.05
    assert s.try_update(epsilon_stable=0.2) is True and s.last_error is None
    s.unobserve(cb)
    s.n_steps = 3000
    assert len(calls) == 4
    with pytest.raises(ParameterError, match=r"^`parameter` should be one of kind, .*threshold\. "
                       r"Received 'gamma'\.$"):
        s.update(gamma=0.9)
    with pytest.raises(ParameterError, match="`callback` should be callable"):
        s.observe(42)


# --------------------------------------------------------------------------
# Ranking
# --------------------------------------------------------------------------


@pytest.fixture(scope="module")
def ranking(sample_frame):
    return RankingTuningSession(sample_frame, preset="tenhou_tokujo_6dan", constants="none")


CASES = [
    dict(vector=(75.0, 30.0, 0.0, -120.0), points=False),
    dict(vector=(500.0, 100.0, -100.0, -300.0), points=True, offset=30000, divisor=100),
    dict(vector=(3.0, 1.0, -1.0, -3.0), points=False, mean=0.25, std=2.5),
    dict(vector=(10.0, 5.0, 0.0, -15.0), points=True, offset=25000, divisor=1000, mean=-1.0, std=7.0),
]


@pytest.mark.parametrize("case", CASES, ids=lambda c: f"{c['vector']}-points={c['points']}")
def test_ranking_results_match_a_loop(ranking, sample_frame, case):
    ranking.update(**{"mean": 0.0, "std": 1.0, **case})
    kw = {"offset": case.get("offset", 0), "divisor": case.get("divisor", 1), "mean": case.get("mean", 0.0),
          "std": case.get("std", 1.0)}
    ref = loop_episodes(sample_frame, case["vector"], points=case["points"], **kw)
    r = ranking.results
    reward = [x[0] for x in ref]
    raw = [x[1] for x in ref]
    assert r.reward.tolist() == reward  # bit for bit: same operations
    assert r.raw.tolist() == raw
    n = sample_frame.height
    for moments, values, rows in ((r.raw_moments, raw, None), (r.reward_moments, reward, None),
                                  (r.raw_moments_all, raw, n), (r.reward_moments_all, reward, n)):
        mean, std = loop_moments(values, rows)
        assert moments.mean == pytest.approx(mean, rel=1e-12, abs=1e-12)
        assert moments.std == pytest.approx(std, rel=1e-12)
    by_rank = {k: [x[0] for x in ref if x[2] == k] for k in range(4)}
    assert r.mean_by_rank.tolist() == pytest.approx([statistics.fmean(by_rank[k]) for k in range(4)], rel=1e-12)
    probabilities = [len(by_rank[k]) / len(ref) for k in range(4)]
    assert r.rank_probabilities.tolist() == pytest.approx(probabilities)
    expected = sum(p * statistics.fmean(by_rank[k]) for k, p in enumerate(probabilities))
    assert r.expected_reward == pytest.approx(expected, rel=1e-12, abs=1e-12)
    assert r.histogram_counts.sum() == len(ref)
    assert r.zero_steps == n - len(ref) + sum(1 for x in reward if x == 0)
    # What the plots get is what the family (and the exported file) computes.
    step = ranking.step_rewards()
    lib_reward, _ = ranking.family.evaluate(ranking.prepared)
    assert step.view(np.uint64).tolist() == lib_reward.view(np.uint64).tolist()
    assert ranking.family.name == ("ranking_points" if case["points"] else "ranking")


@pytest.fixture(scope="module")
def small_ranking(small_frame):
    return RankingTuningSession(small_frame, preset="top", constants="none")


@settings(max_examples=25, deadline=None)
@given(vector=st.lists(st.floats(-1000, 1000, allow_nan=False), min_size=4, max_size=4),
       std=st.floats(0.01, 100.0))
def test_ranking_random_vectors(small_ranking, small_frame, vector, std):
    small_ranking.update(vector=tuple(vector), mean=0.5, std=std)
    ref = loop_episodes(small_frame, vector, mean=0.5, std=std)
    assert small_ranking.results.reward.tolist() == [x[0] for x in ref]


def test_ranking_validation_messages(ranking):
    ranking.update(vector=(1.0, 0.0, 0.0, -1.0), points=False, mean=0.0, std=1.0)
    for assign, message in [
        (dict(vector=(1, 2, 3)), "`vector` should have 4 entries (one per final rank), not 3. Received (1, 2, 3)."),
        (dict(vector=(1, 2, float("nan"), 4)), "`vector[2]` should be a finite number (not NaN or infinite). "
         "Received nan."),
        (dict(std=0.0), "`std` should be > 0 (rewards are divided by it). Received 0.0. Use std=1.0 for no "
         "scaling, or fill it from data."),
        (dict(divisor=0), "`divisor` should be >= 1. Received 0."),
        (dict(points="yes"), "`points` should be True or False. Received 'yes'."),
    ]:
        name, value = next(iter(assign.items()))
        with pytest.raises(ParameterError) as err:
            setattr(ranking, name, value)
        assert str(err.value) == message
        assert ranking.vector == (1.0, 0.0, 0.0, -1.0) and ranking.std == 1.0 and ranking.divisor >= 1
    with pytest.raises(ParameterError, match=r"^`preset` should be one of 'top', .*'mleague'\. Received 'nope'\.$"):
        ranking.preset = "nope"
    with pytest.raises(ParameterError, match=r"^`rank` should be an integer 0-3"):
        ranking.set_rank_value(4, 1.0)


def test_ranking_presets_and_constants(ranking):
    ranking.preset = "mleague"
    assert (ranking.points, ranking.offset, ranking.divisor) == (True, 30000, 100)
    assert ranking.preset == "mleague"
    ranking.set_rank_value(0, 501.0)
    assert ranking.preset is None and ranking.vector[0] == 501.0
    ranking.constants_from_data()
    assert ranking.provenance.kind == "dataset" and not ranking.constants_stale
    assert ranking.results.reward_moments.mean == pytest.approx(0.0, abs=1e-12)
    assert ranking.results.reward_moments.std == pytest.approx(1.0, rel=1e-12)
    ranking.set_rank_value(0, 600.0)
    assert ranking.constants_stale  # fitted for the previous vector
    with pytest.raises(ParameterError, match="^`points` should be off for the wiki's recipe"):
        ranking.seed_constants()
    ranking.auto_constants = True
    assert ranking.results.reward_moments.std == pytest.approx(1.0, rel=1e-12) and not ranking.constants_stale
    ranking.set_rank_value(3, -500.0)  # refitted on every change
    assert ranking.results.reward_moments.std == pytest.approx(1.0, rel=1e-12)
    ranking.mean = 2.0  # typing a constant ends the refit
    assert ranking.auto_constants is False and ranking.provenance.kind == "typed"
    ranking.apply_preset("top")
    ranking.seed_constants()  # mean -0.5 and sample std 1.0 of (1, -1, -1, -1): std 0.866 on complete games
    assert (ranking.mean, ranking.std) == (-0.5, 1.0) and ranking.provenance.kind == "seed"
    assert ranking.results.reward_moments.std == pytest.approx(math.sqrt(3) / 2, rel=1e-12)
    ranking.reset_constants()
    assert (ranking.mean, ranking.std, ranking.provenance.kind) == (0.0, 1.0, "default")


def test_ranking_constants_from_data_when_raw_is_constant(ranking):
    ranking.update(vector=(1.0, 1.0, 1.0, 1.0), points=False)
    assert ranking.attempt(ranking.constants_from_data) is False
    assert ranking.last_error.startswith("`std` should be > 0, but the raw reward is constant on this data.")


def test_ranking_export_round_trip(small_frame, tmp_path):
    session = RankingTuningSession(small_frame, preset="mahjongsoul_jade_saint3")
    session.set_rank_value(3, -300.0)
    path = tmp_path / "reward.py"
    result = session.export(path)
    assert result.path == path and path.is_file()
    assert result.header.startswith("# Reward plug-in for kanachan") and "vector = [135.0, 65.0, -5.0, -300.0]" \
        in result.header and "offset = 25000" in result.header
    assert result.roundtrip.identical and result.roundtrip.report.ok and result.ok
    assert "bit for bit" in str(result) and "check-plugin: PASS" in str(result)
    text = path.read_text()
    session.set_rank_value(3, -400.0)
    with pytest.raises(OutputExistsError, match="already exists; pass overwrite=True"):
        session.export(path)
    assert path.read_text() == text  # refused before writing anything
    again = session.export(path, overwrite=True, check=False)
    assert again.roundtrip is None and not again.ok and "-400.0" in path.read_text()


def test_roundtrip_detects_a_different_file(small_frame, tmp_path):
    session = RankingTuningSession(small_frame, preset="top")
    path = session.export(tmp_path / "top.py", check=False).path
    edited = tmp_path / "edited.py"
    edited.write_text(path.read_text().replace("_RL_VECTOR = (1.0,", "_RL_VECTOR = (2.0,"))
    rt = roundtrip_check(session.family, edited, small_frame)
    assert not rt.identical and rt.rewards_differing == 3 and rt.dones_differing == 0  # one winner per game
    assert rt.max_abs_difference == pytest.approx(1.0 / session.std)
    assert "DIFFERS from rewardlab on 3 rewards" in str(rt) and not rt.ok


# --------------------------------------------------------------------------
# Epsilon schedules
# --------------------------------------------------------------------------


def loop_linear(step, init, stable, warmup, decay):
    if step <= warmup:
        return init
    if step >= warmup + decay:
        return stable
    return stable + (warmup + decay - step) / decay * (init - stable)


def loop_exp(step, init, stable, warmup, decay):
    if step <= warmup:
        return init
    return stable + (init - stable) * math.exp(-1.0 * (step - warmup) / decay)


@pytest.mark.parametrize("kind,ref", [("linear", loop_linear), ("exp", loop_exp)])
def test_explorer_curve_matches_a_loop(kind, ref):
    s = EpsilonScheduleSession(kind=kind, epsilon_init=0.9, epsilon_stable=0.05, warmup_steps=1000,
                               decay_steps=4000, n_steps=20_000, threshold=0.2)
    r = s.results
    expected = [ref(int(t), 0.9, 0.05, 1000, 4000) for t in r.steps]
    np.testing.assert_allclose(r.epsilon, expected, rtol=1e-14, atol=0)
    assert r.steps[0] == 1 and r.steps[-1] == 20_000 and np.all(np.diff(r.steps) > 0)
    assert r.marks["warmup end"] == 1000 and {999, 1000} <= set(r.steps.tolist())
    if kind == "linear":
        assert r.marks["decay end"] == 5000
    first = next(t for t in range(1, 20_001) if ref(t, 0.9, 0.05, 1000, 4000) < 0.2)
    assert r.summary.first_below == first == r.marks["below threshold"]
    assert r.summary.expected_random_actions == pytest.approx(
        sum(ref(t, 0.9, 0.05, 1000, 4000) for t in range(1, 20_001)), rel=1e-12)
    assert "EpsilonGreedyExplorer(kind=:" + kind in r.snippets["julia"]
    assert json.loads(r.snippets["json"]) == s.schedule.to_config()


def test_kanachan_actual_and_intended():
    s = EpsilonScheduleSession(kind="kanachan_actual", epsilon_first=1.0, epsilon_last=0.05,
                               annealing_steps=1000, increment=32, n_steps=10_000, threshold=0.1)
    r = s.results
    assert np.all(r.epsilon == 1.0) and r.summary.first_below is None  # step(32) never reaches 1000
    assert r.reference[0] == "kanachan_intended" and r.reference[1][-1] == 0.05
    assert "jump" not in r.marks and r.marks["annealing end"] == 1000
    s.increment = 1000
    assert s.results.summary.first_below == 1000 == s.results.marks["jump"]
    s.update(kind="kanachan_intended", increment=1)
    r = s.results
    expected = [1.0 * ((1000 - min(t, 1000)) / 1000) + 0.05 * (min(t, 1000) / 1000) for t in r.steps]
    np.testing.assert_allclose(r.epsilon, expected, rtol=1e-14)
    assert r.reference[0] == "kanachan_actual" and np.all(r.reference[1] == 1.0)
    assert "julia" not in r.snippets and r.summary.first_below == 948


def test_schedule_messages():
    s = EpsilonScheduleSession()
    for changes, message in [
        (dict(kind="cosine"), "`kind` should be one of 'linear', 'exp', 'kanachan_intended', 'kanachan_actual'. "
         "Received 'cosine'."),
        (dict(epsilon_first=0.3, epsilon_last=0.5), "`epsilon_last` should be <= epsilon_first (0.3). Received 0.5."),
        (dict(warmup_steps=-1), "`warmup_steps` should be >= 0. Received -1."),
        (dict(threshold=2.0), "`threshold` should be in [0, 1]. Received 2.0."),
        (dict(increment=0), "`increment` should be >= 1. Received 0."),
    ]:
        with pytest.raises(ParameterError) as err:
            s.update(**changes)
        assert str(err.value) == message
    assert s.parameters == EpsilonScheduleSession().parameters


def test_schedule_export(tmp_path):
    s = EpsilonScheduleSession(kind="kanachan_intended", annealing_steps=2000)
    path = s.export(tmp_path / "eps.yaml")
    assert path.read_text() == "epsilon_first: 1.0\nepsilon_last: 0.05\nannealing_steps: 2000\n"
    assert json.loads(s.export(tmp_path / "eps.json").read_text())["annealing_steps"] == 2000
    with pytest.raises(OutputExistsError):
        s.export(tmp_path / "eps.yaml")
    with pytest.raises(ParameterError, match=r"^`path` should end in \.json, \.yaml or \.yml\. Received "):
        s.export(tmp_path / "eps.toml")


# --------------------------------------------------------------------------
# Normalization
# --------------------------------------------------------------------------


@pytest.fixture(scope="module")
def reward_frame(sample_frame):
    from rewardlab.domains.mahjong.families import Points, RoundDelta

    frame = Points.from_preset("raw").with_columns(sample_frame, "score")
    frame = RoundDelta.from_preset("thousands").with_columns(frame, "delta")
    return frame.with_columns(pl.lit(1.0).alias("reward_one"), pl.col("end_of_game").alias("done_one"))


@pytest.mark.parametrize("scope", ["all", "nonzero", "end_of_round", "end_of_game"])
def test_normalization_constants_per_scope(reward_frame, scope):
    s = NormalizationSession(reward_frame, reward="delta", scope=scope)
    r = s.results
    values = reward_frame["reward_delta"].to_numpy()
    eog, eor = reward_frame["end_of_game"].to_numpy(), reward_frame["end_of_round"].to_numpy()
    mask = {"all": np.ones(values.size, bool), "nonzero": values != 0, "end_of_game": eog,
            "end_of_round": eor | eog}[scope]
    selected = [float(v) for v, m in zip(values, mask) if m]
    mean, std = loop_moments(selected)
    assert (r.constants.count, r.constants.scope) == (len(selected), scope)
    assert r.constants.mean == pytest.approx(mean, rel=1e-9, abs=1e-12)
    assert r.constants.std == pytest.approx(std, rel=1e-12)
    assert r.after.mean == pytest.approx(0.0, abs=1e-9) and r.after.std == pytest.approx(1.0, rel=1e-9)
    assert r.before.count == len(selected) and r.note is None
    applied = r.replays["constants"].to_numpy()
    np.testing.assert_array_equal(applied[mask], (values[mask] - r.constants.mean) / r.constants.std)
    np.testing.assert_array_equal(applied[~mask], values[~mask])
    assert set(r.summary["method"]) == {"raw", "constants", "gymnasium", "sb3"}


def test_normalization_episode_returns_and_errors(reward_frame):
    s = NormalizationSession(reward_frame, reward="score", scope="episode_return", clip_reward=0.5)
    r = s.results
    assert "constants" not in r.replays.columns and "episode returns" in r.note
    assert r.constants.count == 960 and r.fraction_clipped > 0
    s.reward = "one"
    s.scope = "all"  # constant reward: no constants, the reason shown instead
    assert s.results.constants is None and "constant" in s.results.constants_error and s.results.after is None
    with pytest.raises(ParameterError, match=r"^`scope` should be one of 'all', .* Received 'rounds'\.$"):
        s.scope = "rounds"
    with pytest.raises(ParameterError, match=r"^`reward` should be one of 'score', 'delta', 'one'\. "
                       r"Received 'nope'\.$"):
        s.reward = "nope"
    with pytest.raises(ParameterError, match=r"^`gamma` should be in \[0, 1\]\. Received 1\.5\.$"):
        s.gamma = 1.5


# --------------------------------------------------------------------------
# Comparison
# --------------------------------------------------------------------------


def loop_episode_returns(frame: pl.DataFrame, name: str) -> list[float]:
    out, total = [], 0.0
    for reward, end in zip(frame[f"reward_{name}"].to_list(), frame["end_of_game"].to_list()):
        total += reward
        if end:
            out.append(total)
            total = 0.0
    return out


def test_comparison_matches_a_loop(reward_frame):
    s = ComparisonSession(reward_frame.drop("reward_one", "done_one"), k=5)
    assert s.candidates == ("score", "delta") and s.chosen == ("score", "delta")
    r = s.results
    score, delta = loop_episode_returns(reward_frame, "score"), loop_episode_returns(reward_frame, "delta")
    assert r.returns["score"].to_list() == pytest.approx(score) and r.returns["delta"].to_list() == pytest.approx(delta)
    assert r.comparison.pearson[0, 1] == pytest.approx(np.corrcoef(score, delta)[0, 1], rel=1e-12)
    assert r.matrix.columns == ["reward", "score", "delta"] and r.metric == "spearman"
    assert r.disagreements.height == 5 and r.disagreements["gap"].is_sorted(descending=True)
    z = lambda x: (np.asarray(x) - np.mean(x)) / np.std(x)  # noqa: E731
    assert r.disagreements["gap"][0] == pytest.approx(np.max(np.abs(z(score) - z(delta))), rel=1e-12)
    s.chosen = ("score",)
    assert s.results.comparison is None and s.results.matrix is None and list(s.results.step_rewards) == ["score"]
    for changes, message in [
        (dict(chosen=("score", "nope")), "`chosen` should be one of 'score', 'delta'. Received 'nope'."),
        (dict(chosen=()), "`chosen` should name at least one candidate. Received ()."),
        (dict(b="score"), "`b` should differ from `a`. Received 'score'."),
        (dict(k=0), "`k` should be a positive integer. Received 0."),
        (dict(metric="kendall"), "`metric` should be one of 'pearson', 'spearman', 'pearson_distance', 'epic'. "
                                   "Received 'kendall'."),
    ]:
        with pytest.raises(ParameterError) as err:
            s.update(**changes)
        assert str(err.value) == message


USER_PLUGIN = '''
import torch


def get_reward(data, contiguous):
    end_of_game = data["next", "end_of_game"]
    data["next", "reward"] = torch.where(end_of_game, 1.0, 0.0).to(torch.float64)
'''


def test_comparison_add_a_users_plugin(small_frame, tmp_path):
    from rewardlab.domains.mahjong.families import Ranking

    frame = Ranking.from_preset("top").with_columns(small_frame, "top")
    s = ComparisonSession(frame, [ROOT / "data" / "plugins" / "raw_points.py"])
    assert s.candidates == ("top", "raw_points")
    path = tmp_path / "my_reward.py"
    path.write_text(USER_PLUGIN)
    with pytest.warns(Warning):  # a constant reward is far from mean 0 / std 1
        assert s.add_plugin(path) == "my_reward"
    assert s.candidates == ("top", "raw_points", "my_reward") and "my_reward" in s.chosen
    assert s.results.returns["my_reward"].to_list() == [1.0] * 12
    with pytest.raises(ParameterError, match=r"^`name` should differ from the candidates already loaded"):
        s.add_plugin(path)
    assert s.attempt(s.add_plugin, tmp_path / "missing.py") is False and "missing.py" in s.last_error


def test_comparison_add_plugin_reports_progress_and_keeps_nothing_when_cancelled(small_frame):
    from rewardlab.core.errors import PluginRunCancelled
    from rewardlab.domains.mahjong.families import Ranking
    from rewardlab.sessions import CancelToken

    frame = Ranking.from_preset("top").with_columns(small_frame, "top")
    s = ComparisonSession(frame)
    seen = []
    assert s.add_plugin(ROOT / "data" / "plugins" / "rank_top_two.py", progress=lambda f, m: seen.append((f, m)))
    assert seen[-1] == (1.0, f"apply_plugins (episodes): {frame.height:,} of {frame.height:,} transitions")
    assert (s.a, s.b) == ("top", "rank_top_two")  # one candidate had no partner: the new one is
    assert [f for f, _ in seen] == sorted(f for f, _ in seen)
    before = (s.candidates, s.version, s.frame.columns)
    token = CancelToken()
    token.cancel()
    with pytest.raises(PluginRunCancelled, match="running plug-in 'raw_points' was cancelled; no result was kept"):
        s.add_plugin(ROOT / "data" / "plugins" / "raw_points.py", cancel=token)
    assert (s.candidates, s.version, s.frame.columns) == before
    with pytest.raises(ParameterError, match="`cancel` should be a rewardlab.sessions.CancelToken or None"):
        s.add_plugin(ROOT / "data" / "plugins" / "raw_points.py", cancel=lambda: True)
    with pytest.raises(ParameterError, match=r"`progress` should be a callable progress\(fraction, message\)"):
        s.add_plugin(ROOT / "data" / "plugins" / "raw_points.py", progress="yes")


# --------------------------------------------------------------------------
# Issue 10: tuners must not pass bad results off as good
# --------------------------------------------------------------------------


def test_parse_number_reads_text_like_a_person():
    from rewardlab.sessions import parse_number

    assert parse_number("n", "25000", integer=True) == 25000 and parse_number("n", " 1e6 ", integer=True) == 10**6
    assert parse_number("n", "3.0", integer=True) == 3 and parse_number("x", "-.5") == -0.5
    assert parse_number("x", "+2E-3") == 0.002 and parse_number("x", 7) == 7
    for typed, integer in [("1.5", True), ("15.", False), ("1,5", False), ("1_000", True), ("", False), ("inf", False),
                           ("nan", False), ("0x10", True), ("１２", True), ("1e999", False), ("- 1", False)]:
        if typed == "15.":
            assert parse_number("x", typed) == 15.0
            continue
        with pytest.raises(ParameterError) as err:
            parse_number("x", typed, integer=integer)
        assert str(err.value).startswith("`x` should be a ") and f"Received {typed!r}." in str(err.value)


def test_sessions_take_text_and_refuse_what_a_person_would_not_mean(small_frame):
    s = RankingTuningSession(small_frame, preset="mleague", constants="none")
    s.update(offset="25000", divisor=" 1000 ")
    assert (s.offset, s.divisor) == (25000, 1000)
    with pytest.raises(ParameterError, match=r"^`divisor` should be a whole number such as 1000\. Received '1\.5'\.$"):
        s.divisor = "1.5"  # an IntText made it 15 (in the browser) or 1 (in Python)
    assert s.divisor == 1000
    s.set_rank_value(2, "-7.5")
    assert s.vector[2] == -7.5
    e = EpsilonScheduleSession(n_steps="1e4")
    assert e.n_steps == 10_000
    assert e.try_update(warmup_steps="10.5") is False and e.warmup_steps == 10_000
    assert e.last_error == "`warmup_steps` should be a whole number such as 1000. Received '10.5'."


def test_ranking_refuses_overflowing_values_and_keeps_the_last_good_ones(small_frame):
    s = RankingTuningSession(small_frame, preset="top", constants="none")
    good = (s.vector, s.mean, s.std, s.version)
    for change, message in [
        (lambda: s.set_rank_value(0, 1e308), "`vector[0]` should keep the raw reward within ±1e+100 (beyond, "
         "rewards or their means and variances overflow); it gives 1e+308 at final rank 1. Received 1e+308."),
        (lambda: s.update(vector=(1e300, 0, 0, -1e300)), "`vector[0]` should keep the raw reward within ±1e+100"),
        (lambda: s.update(std=1e-320), "`std` should keep the normalized reward (raw - mean) / std within ±1e+100 "
         "(beyond, rewards or their means and variances overflow); it gives inf for the raw reward 1.0 (final rank "
         "1). Received 1e-320."),
        (lambda: s.update(mean=-1e200), "`mean` should be within ±1e+100"),
        (lambda: s.update(points=True, offset=0, divisor=1, std=1e-93), "`std` should keep the normalized reward"),
    ]:
        with pytest.raises(ParameterError) as err:
            change()
        assert message in str(err.value)
        assert (s.vector, s.mean, s.std, s.version) == good and not s.points
    assert s.try_update(std="1e-320") is False and "`std` should keep" in s.last_error and s.std == 1.0
    # with constants from data and the refit on: the overflowing entry is named, not an inf std
    d = RankingTuningSession(small_frame, preset="top")
    assert d.auto_constants
    with pytest.raises(ParameterError, match=r"^`vector\[3\]` should keep the raw reward within"):
        d.set_rank_value(3, -1e308)
    with pytest.raises(ParameterError, match=r"^`vector\[0\]` should keep the raw reward within"):
        RankingTuningSession(small_frame, preset="top").update(vector=(1e200, 0, 0, -1), auto_constants=False)
    assert d.export_blocker() is None and np.isfinite(d.results.reward_moments.std)


def test_a_nonfinite_statistic_is_refused_whatever_the_cause(monkeypatch):
    """The session computes before it keeps a change: a non-finite statistic undoes it."""
    from rewardlab.schedules import ExplorerSchedule

    s = EpsilonScheduleSession()
    good = (s.parameters, s.version, s.results)
    real = ExplorerSchedule.summary

    def broken(self, *args, **kwargs):  # a schedule whose summary overflows
        return dataclasses.replace(real(self, *args, **kwargs), expected_random_actions=math.inf)

    import dataclasses

    monkeypatch.setattr(ExplorerSchedule, "summary", broken)
    assert s.try_update(decay_steps=1234) is False
    assert s.last_error == ("`decay_steps` should keep every statistic finite, but with it the expected random "
                            "actions would be inf. Received 1234. Nothing changed: the previous values are kept.")
    assert (s.parameters, s.version, s.results) == good


def test_normalization_refuses_a_reward_whose_statistics_overflow(reward_frame):
    from rewardlab.domains.mahjong.families import Ranking, RankingParams

    params = RankingParams(vector=(1e100, 0, 0, -1e100))
    huge = Ranking(params).with_columns(reward_frame, "huge")
    squared = huge.with_columns((pl.col("reward_huge") * 1e100 * 1e100).alias("reward_huge"))  # finite, 1e300
    s = NormalizationSession(squared, reward="score", scope="end_of_game")
    good = (s.reward, s.version, s.results)
    assert s.try_update(reward="huge") is False
    assert s.last_error.startswith("`reward` should keep every statistic finite, but with it ")
    assert "the std of reward_huge over end_of_game would be " in s.last_error and "Received 'huge'." in s.last_error
    assert (s.reward, s.version, s.results) == good  # the last good state, not half of the new one
    with pytest.raises(ParameterError, match=r"^`reward` should keep every statistic finite"):
        NormalizationSession(squared, reward="huge")


def test_stale_constants_are_not_exported_silently(small_frame, tmp_path):
    s = RankingTuningSession(small_frame, preset="top")
    s.auto_constants = False  # freeze the constants fitted for "top"
    fitted = s.provenance
    assert fitted.fitted_for == "ranking: vector=[1.0, -1.0, -1.0, -1.0]" and not s.constants_stale
    for change in (lambda: s.apply_preset("top_two"), lambda: s.set_rank_value(0, 2.0),
                   lambda: s.update(points=True, offset=25000, divisor=1000)):
        change()
        assert s.constants_stale and s.provenance == fitted
        assert "`constants` should be fitted for the exported parameters" in s.export_blocker()
        with pytest.raises(ParameterError) as err:
            s.export(tmp_path / "r.py")
        assert str(err.value).startswith("`constants` should be fitted for the exported parameters (")
        assert "not for ranking: vector=[1.0, -1.0, -1.0, -1.0]" in str(err.value)
        assert "keep_constants=True" in str(err.value) and not (tmp_path / "r.py").exists()
        s.apply_preset("top")
        assert not s.constants_stale
    s.set_rank_value(0, 2.0)
    kept = s.export(tmp_path / "kept.py", keep_constants=True)
    assert ("# constants fit: NOT fitted for these parameters: fitted for ranking: vector=[1.0, -1.0, -1.0, -1.0] "
            f"(data fingerprint {s.prepared.fingerprint}); exported as they are on request (keep_constants=True)"
            in kept.header) and kept.ok
    s.constants_from_data()
    fresh = s.export(tmp_path / "fresh.py")
    assert f"# constants fit: fitted for exactly these parameters (data fingerprint {s.prepared.fingerprint})" \
        in fresh.header
    s.seed_constants()  # the seed recipe is fitted too, and ends the refit
    assert not s.auto_constants and not s.constants_stale
    s.set_rank_value(1, 0.5)
    assert s.constants_stale
    s.reset_constants()
    typed = s.export(tmp_path / "typed.py")
    assert "# constants fit: not fitted (default (mean 0, std 1: no normalization))" in typed.header


def test_export_checks_what_the_session_holds_with_progress(sample_frame, tmp_path, monkeypatch):
    from rewardlab.domains.mahjong.families import MahjongFamily as RewardFamily, PreparedFrame
    from rewardlab.sessions import sample_whole_games

    s = RankingTuningSession(sample_frame, preset="tenhou_tokujo_6dan")
    s.set_rank_value(3, -150.0)

    def no_redo(*args, **kwargs):
        raise AssertionError("the export redid work the session already holds")

    monkeypatch.setattr(RewardFamily, "evaluate", no_redo)
    monkeypatch.setattr(RewardFamily, "prepare", no_redo)
    monkeypatch.setattr("rewardlab.domains.mahjong.families.base.prepare_frame", no_redo)
    calls = []
    result = s.export(tmp_path / "r.py", check_rows=5000, progress=lambda f, m: calls.append((f, m)))
    rt = result.roundtrip
    assert result.ok and rt.rows == sample_frame.height and rt.identical
    fractions = [f for f, _ in calls]
    assert fractions == sorted(fractions) and fractions[-1] == 1.0 and fractions[0] == 0.0
    assert any("bit for bit" in m for _, m in calls) and any("check-plugin in every batch mode" in m for _, m in calls)
    assert calls[-1][1] == f"wrote {tmp_path / 'r.py'}"
    # check-plugin ran on whole games spread over the data, and the text says exactly what was checked how
    positions, sampled, games = sample_whole_games(sample_frame, s.prepared, 5000)
    assert rt.checked_rows == positions.size == rt.report.transitions and rt.checked_games == sampled
    assert 5000 * 0.8 <= rt.checked_rows <= 5000 * 1.25 and games == 240 and 0 < sampled < games
    sample = sample_frame[positions]
    whole = dict(sample_frame.group_by("game").len().rows())
    assert sample["end_of_game"][-1] and all(whole[g] == k for g, k in sample.group_by("game").len().rows())
    text = str(rt)
    assert (f"round trip: identical to rewardlab's rewards and dones on all {sample_frame.height:,} transitions "
            "(compared bit for bit, sequential batches of 8,192 rows); check-plugin: PASS (contract and batch "
            f"invariance in every batch mode, on {rt.checked_rows:,} transitions: {sampled} whole games of 240, "
            "spread evenly over the data)") == text
    assert isinstance(s.prepared, PreparedFrame)


def test_export_can_be_cancelled_and_writes_nothing(sample_frame, tmp_path):
    from rewardlab.core.errors import ExportCancelled
    from rewardlab.sessions import CancelToken

    s = RankingTuningSession(sample_frame, preset="top")
    token = CancelToken()
    steps = []

    def progress(fraction, message):
        steps.append(message)
        if len(steps) == 2:  # after the first chunk compared
            token.cancel()

    with pytest.raises(ExportCancelled, match=r"^export of '.*r\.py' cancelled during .*; nothing was written$"):
        s.export(tmp_path / "r.py", progress=progress, cancel=token)
    assert not (tmp_path / "r.py").exists() and list(tmp_path.iterdir()) == []


def test_export_path_errors_name_the_path_as_typed(small_frame, tmp_path, monkeypatch):
    from rewardlab.core.errors import ExportWriteError

    s = RankingTuningSession(small_frame, preset="top")
    (tmp_path / "f.txt").write_text("x")
    for typed, message in [
        ("", "`path` should name the file to write; it is empty. Received ''."),
        (str(tmp_path), f"`path` should name a file, not a folder. Received {str(tmp_path)!r}."),
        (str(tmp_path / "f.txt" / "r.py"), f"`path` cannot be written: {tmp_path / 'f.txt'} is a file, not a folder"),
    ]:
        for overwrite in (False, True):
            with pytest.raises(ParameterError) as err:
                s.export(typed, overwrite=overwrite)
            assert message in str(err.value)
    fifo = tmp_path / "pipe.py"
    os.mkfifo(fifo)
    with pytest.raises(ParameterError, match="is a FIFO \\(named pipe\\), not a regular file"):
        s.export(fifo, overwrite=True)

    def denied(*args, **kwargs):
        raise PermissionError(13, "Permission denied")

    monkeypatch.setattr("rewardlab.export.atomic_open", denied)
    monkeypatch.chdir(tmp_path)
    (tmp_path / "ro").mkdir()  # a folder that exists (a missing one is refused before any work)
    with pytest.raises(ExportWriteError, match=r"^cannot write 'ro/r\.py': Permission denied\. Nothing was written"):
        s.export("ro/r.py")
    with pytest.raises(ExportWriteError, match="cannot write"):
        EpsilonScheduleSession().export(tmp_path / "eps.yaml")


def test_a_file_that_fails_its_round_trip_is_not_written(small_frame, tmp_path, monkeypatch):
    from rewardlab.core.errors import RoundTripError
    from rewardlab.export import render_plugin

    s = RankingTuningSession(small_frame, preset="top")

    def wrong(family, **kwargs):  # as a bug in the renderer would
        return render_plugin(family, **kwargs).replace("_RL_VECTOR = (1.0,", "_RL_VECTOR = (2.0,")

    monkeypatch.setattr("rewardlab.sessions.ranking.render_plugin", wrong)
    with pytest.raises(RoundTripError) as err:
        s.export(tmp_path / "r.py")
    text = str(err.value)
    assert text.startswith(f"{str(tmp_path / 'r.py')!r} was not written: the file failed its round-trip check.")
    assert "DIFFERS from rewardlab on 3 rewards and 0 dones of 56 transitions" in text
    assert err.value.roundtrip.rewards_differing == 3 and list(tmp_path.iterdir()) == []
    assert s.export(tmp_path / "r.py", check=False).roundtrip is None  # unchecked, on request
