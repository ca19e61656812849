"""Returns, reward-to-go and GAE: every vectorized function against a plain loop."""

from __future__ import annotations

import numpy as np
import polars as pl
import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

from analysis_data import rewards_table, with_rewards
from rewardlab.core.errors import ColumnNotFoundError, ParameterError
from rewardlab.analysis.return_tables import episode_returns, gae, reward_to_go
from rewardlab.analysis.returns import (
    discounted_reward_to_go, generalized_advantage_estimate, linear_scan, segment_ids, segment_returns,
)

# --------------------------------------------------------------------------
# loop references
# --------------------------------------------------------------------------


def scan_loop(coef, offset, reverse):
    n = len(offset)
    out = [0.0] * n
    acc = 0.0
    order = range(n - 1, -1, -1) if reverse else range(n)
    for t in order:
        acc = offset[t] + (coef[t] * acc if coef[t] != 0 else 0.0)  # a cut starts afresh
        out[t] = acc
    return np.array(out)


def reward_to_go_loop(r, done, gamma):
    out = [0.0] * len(r)
    acc = 0.0
    for t in range(len(r) - 1, -1, -1):
        if done[t]:
            acc = 0.0
        acc = r[t] + gamma * acc
        out[t] = acc
    return np.array(out)


def gae_loop(r, v, nv, done, term, gamma, lmbda):
    adv = [0.0] * len(r)
    last = 0.0
    for t in range(len(r) - 1, -1, -1):
        boot = 0.0 if term[t] else nv[t]
        delta = r[t] + gamma * boot - v[t]
        last = delta + (0.0 if done[t] else gamma * lmbda * last)
        adv[t] = last
    adv = np.array(adv)
    return adv, adv + np.array(v)


def segment_returns_loop(r, done):
    rets, lens = [], []
    acc, n = 0.0, 0
    for t in range(len(r)):
        acc += r[t]
        n += 1
        if done[t] or t == len(r) - 1:
            rets.append(acc)
            lens.append(n)
            acc, n = 0.0, 0
    return np.array(rets), np.array(lens)


def random_case(seed, n, p_done):
    rng = np.random.default_rng(seed)
    r = np.where(rng.random(n) < 0.3, rng.normal(size=n), 0.0)
    return r, rng.random(n) < p_done


GAMMAS = [0.0, 0.5, 0.9, 0.99, 1.0]
CASES = [(0, 1, 0.5), (1, 50, 0.0), (2, 300, 0.05), (3, 1000, 0.01), (4, 257, 1.0)]


@pytest.mark.parametrize("gamma", GAMMAS)
@pytest.mark.parametrize("seed,n,p_done", CASES)
def test_reward_to_go_matches_loop(seed, n, p_done, gamma):
    r, d = random_case(seed, n, p_done)
    np.testing.assert_allclose(discounted_reward_to_go(r, d, gamma=gamma), reward_to_go_loop(r, d, gamma),
                               rtol=1e-10, atol=1e-10)


@pytest.mark.parametrize("reverse", [True, False])
@pytest.mark.parametrize("seed,n,p_done", CASES)
def test_linear_scan_matches_loop(seed, n, p_done, reverse):
    rng = np.random.default_rng(seed + 100)
    coef = rng.uniform(-1.0, 1.0, n) * (rng.random(n) > p_done)
    offset = rng.normal(size=n)
    np.testing.assert_allclose(linear_scan(coef, offset, reverse=reverse), scan_loop(coef, offset, reverse),
                               rtol=1e-10, atol=1e-10)


@pytest.mark.parametrize("reverse", [True, False])
def test_a_non_finite_value_does_not_cross_a_cut(reverse):
    rng = np.random.default_rng(7)
    n = 300
    coef = rng.uniform(0.1, 1.0, n) * (rng.random(n) > 0.1)
    offset = rng.normal(size=n)
    offset[rng.choice(n, 6, replace=False)] = [np.nan, np.inf, -np.inf, np.nan, np.inf, np.nan]
    got, want = linear_scan(coef, offset, reverse=reverse), scan_loop(coef, offset, reverse)
    np.testing.assert_array_equal(np.isfinite(got), np.isfinite(want))
    finite = np.isfinite(want)
    np.testing.assert_allclose(got[finite], want[finite], rtol=1e-10, atol=1e-10)
    assert finite.sum() > n // 2  # the cuts kept most of the stream finite


@settings(max_examples=80, deadline=None)
@given(hnp.arrays(np.float64, st.integers(0, 80), elements=st.floats(-100, 100)),
       st.data(), st.floats(0.0, 1.0), st.floats(0.0, 1.0))
def test_gae_and_reward_to_go_hypothesis(r, data, gamma, lmbda):
    n = r.shape[0]
    done = data.draw(hnp.arrays(np.bool_, n))
    term = done & data.draw(hnp.arrays(np.bool_, n))  # terminal steps are a subset of done ones
    v = data.draw(hnp.arrays(np.float64, n, elements=st.floats(-10, 10)))
    nv = data.draw(hnp.arrays(np.float64, n, elements=st.floats(-10, 10)))
    np.testing.assert_allclose(discounted_reward_to_go(r, done, gamma=gamma), reward_to_go_loop(r, done, gamma),
                               rtol=1e-9, atol=1e-9)
    adv, target = generalized_advantage_estimate(r, v, nv, done, terminated=term, gamma=gamma, lmbda=lmbda)
    ref_adv, ref_target = gae_loop(r, v, nv, done, term, gamma, lmbda)
    np.testing.assert_allclose(adv, ref_adv, rtol=1e-9, atol=1e-9)
    np.testing.assert_allclose(target, ref_target, rtol=1e-9, atol=1e-9)
    rets, lens = segment_returns(r, done)
    ref_rets, ref_lens = segment_returns_loop(r, done)
    np.testing.assert_allclose(rets, ref_rets, rtol=1e-12, atol=1e-9)
    np.testing.assert_array_equal(lens, ref_lens)


def test_terminated_cuts_bootstrap_done_cuts_recursion():
    r = np.zeros(3)
    v = np.zeros(3)
    nv = np.array([0.0, 5.0, 0.0])
    done = np.array([False, True, True])
    # step 1 ends the trajectory but is not terminal: its next value is bootstrapped
    adv, _ = generalized_advantage_estimate(r, v, nv, done, terminated=np.array([False, False, True]),
                                            gamma=1.0, lmbda=1.0)
    assert adv.tolist() == [5.0, 5.0, 0.0]
    adv, _ = generalized_advantage_estimate(r, v, nv, done, gamma=1.0, lmbda=1.0)  # terminated = done
    assert adv.tolist() == [0.0, 0.0, 0.0]


def test_segment_ids():
    assert segment_ids(np.array([True, False, True, False])).tolist() == [0, 1, 1, 2]
    assert segment_ids(np.zeros(0, bool)).tolist() == []


def test_torch_in_torch_out_and_column_vectors():
    r = torch.tensor([[1.0], [2.0], [3.0]])
    d = torch.tensor([False, True, True])
    out = discounted_reward_to_go(r, d, gamma=1.0)
    assert isinstance(out, torch.Tensor) and out.dtype == torch.float64
    assert out.tolist() == [3.0, 2.0, 3.0]
    rets, lens = segment_returns(r, d)
    assert isinstance(rets, torch.Tensor) and lens.tolist() == [2, 1]


def test_validation_messages():
    with pytest.raises(ParameterError, match=r"`gamma` should be in \[0, 1\]. Received 1.5."):
        discounted_reward_to_go(np.zeros(2), np.zeros(2, bool), gamma=1.5)
    with pytest.raises(ParameterError, match=r"`done` should have shape \[2\] like `reward`. Received \(3,\)"):
        discounted_reward_to_go(np.zeros(2), np.zeros(3, bool), gamma=0.5)
    with pytest.raises(ParameterError, match=r"`reward` should be 1-D with shape \[T\]"):
        discounted_reward_to_go(np.zeros((2, 2)), np.zeros(2, bool), gamma=0.5)
    with pytest.raises(ParameterError, match=r"`done` should hold booleans"):
        discounted_reward_to_go(np.zeros(2), np.array([0.0, 0.5]), gamma=0.5)
    with pytest.raises(ParameterError, match=r"`lmbda` should be in \[0, 1\]"):
        generalized_advantage_estimate(np.zeros(1), np.zeros(1), np.zeros(1), np.ones(1, bool),
                                       gamma=0.9, lmbda=-0.1)


# --------------------------------------------------------------------------
# frame layer
# --------------------------------------------------------------------------


@pytest.fixture(scope="module")
def frame(sample_frame):
    return with_rewards(sample_frame)


def test_episode_returns_per_game_and_per_round(frame):
    per_game = episode_returns(frame, "points")
    assert per_game.height == int(frame["end_of_game"].sum())
    assert per_game["length"].sum() == frame.height
    assert per_game["return"].sum() == pytest.approx(frame["reward_points"].sum(), abs=1e-9)
    per_round = episode_returns(frame, "delta")  # done at every round end
    assert per_round.height == int(frame["end_of_round"].sum() + frame["end_of_game"].sum())
    assert per_round.columns == ["episode", "game_id", "seat", "start", "length", "return"]
    ref_rets, ref_lens = segment_returns_loop(frame["reward_delta"].to_list(), frame["done_delta"].to_list())
    np.testing.assert_allclose(per_round["return"].to_numpy(), ref_rets, atol=1e-12)
    np.testing.assert_array_equal(per_round["length"].to_numpy(), ref_lens)


def test_trajectories_never_cross_a_game_end(frame):
    # done = end_of_round only (the kanachan pitfall): the game's last round still ends at end_of_game
    f = frame.with_columns(done_delta=pl.col("end_of_round"))
    assert episode_returns(f, "delta").height == episode_returns(frame, "delta").height
    # a rewards table has no end_of_game: a change of (game_id, seat) ends the trajectory
    t = rewards_table(f)
    np.testing.assert_allclose(episode_returns(t, "delta")["return"].to_numpy(),
                               episode_returns(frame, "delta")["return"].to_numpy())


def test_reward_to_go_frame_layer(frame):
    g = reward_to_go(frame, "points", gamma=0.9)
    assert g.name == "return_to_go_points" and g.len() == frame.height
    ref = reward_to_go_loop(frame["reward_points"].to_list(), frame["done_points"].to_list(), 0.9)
    np.testing.assert_allclose(g.to_numpy(), ref, atol=1e-12)


def test_gae_frame_layer_uses_next_row_value_and_cuts_at_game_end(frame):
    rng = np.random.default_rng(3)
    f = frame.with_columns(v=pl.Series(rng.normal(size=frame.height)))
    out = gae(f, "delta", value="v", gamma=0.99, lmbda=0.95, terminated="end_of_game")
    v = f["v"].to_numpy()
    nv = np.append(v[1:], 0.0)
    done = f["done_delta"].to_numpy()
    term = f["end_of_game"].to_numpy()
    ref_adv, ref_target = gae_loop(f["reward_delta"].to_numpy(), v, nv, done, term, 0.99, 0.95)
    np.testing.assert_allclose(out["advantage"].to_numpy(), ref_adv, atol=1e-10)
    np.testing.assert_allclose(out["value_target"].to_numpy(), ref_target, atol=1e-10)
    # default terminated: the plug-in's done
    default = gae(f, "delta", value="v", gamma=0.99, lmbda=0.95)
    ref_adv, _ = gae_loop(f["reward_delta"].to_numpy(), v, nv, done, done, 0.99, 0.95)
    np.testing.assert_allclose(default["advantage"].to_numpy(), ref_adv, atol=1e-10)


def test_frame_layer_errors(frame):
    with pytest.raises(ColumnNotFoundError, match=r"'nope' not found"):
        gae(frame, "top", value="nope", gamma=0.9, lmbda=0.9)
    with pytest.raises(ColumnNotFoundError, match=r"'done_a' not found"):
        episode_returns(pl.DataFrame({"reward_a": [1.0]}), "a")
    with pytest.raises(ParameterError, match=r"`gamma` should be in \[0, 1\]"):
        reward_to_go(frame, "top", gamma=2)


# --------------------------------------------------------------------------
# truncation done right: a Gymnasium recording whose episodes end both ways
# --------------------------------------------------------------------------

import rewardlab  # noqa: E402
from conftest import ROOT  # noqa: E402
from rewardlab.core.spec import FrameSpec, keep_spec  # noqa: E402

MOUNTAINCAR = ROOT / "data" / "gym" / "mountaincar_scripted.parquet"


def bootstrapping_loops(r, v, v_final, terminated, truncated, gamma, lmbda):
    """Reward-to-go and GAE step by step over whole episodes, TorchRL's semantics.

    At an episode's last step: termination bootstraps with 0, truncation with ``v_final`` (V of the
    final observation); elsewhere the next state's value is the next row's ``v``.
    """
    n = len(r)
    g, adv = [0.0] * n, [0.0] * n
    acc = last = 0.0
    for t in range(n - 1, -1, -1):
        end = terminated[t] or truncated[t]
        if end:
            boot = 0.0 if terminated[t] else v_final[t]
            acc = r[t] + gamma * boot
            last = r[t] + gamma * boot - v[t]
        else:
            acc = r[t] + gamma * acc
            last = r[t] + gamma * v[t + 1] - v[t] + gamma * lmbda * last
        g[t], adv[t] = acc, last
    return np.array(g), np.array(adv)


def recorded_frame(seed):
    frame = rewardlab.load(MOUNTAINCAR)
    rng = np.random.default_rng(seed)
    n = frame.height
    term, trunc = frame["terminated"].to_numpy(), frame["truncated"].to_numpy()
    v = rng.normal(-50.0, 10.0, n)
    v_final = np.where(trunc, rng.normal(-30.0, 5.0, n), np.nan)  # V(final observation), only where cut
    # V(s[t+1]): the next row's value inside an episode; at a cut, the final observation's; NaN where it ended
    next_value = np.where(term, np.nan, np.where(trunc, v_final, np.append(v[1:], np.nan)))
    return keep_spec(frame, frame.with_columns(  # the recording's spec: episodes, terminated, truncated
        reward_recorded=pl.col("reward_recorded") * 0.1, v=pl.Series(v), next_v=pl.Series(next_value))), v_final


@pytest.mark.parametrize("gamma,lmbda", [(0.99, 0.95), (0.9, 1.0), (1.0, 0.5), (0.0, 0.9)])
def test_returns_of_a_recording_bootstrap_truncation_and_zero_termination(gamma, lmbda):
    frame, v_final = recorded_frame(1)
    term, trunc = frame["terminated"].to_numpy(), frame["truncated"].to_numpy()
    assert term.sum() == 10 and trunc.sum() == 10  # episodes end both ways
    r, v = frame["reward_recorded"].to_numpy(), frame["v"].to_numpy()
    ref_g, ref_adv = bootstrapping_loops(r, v, v_final, term, trunc, gamma, lmbda)
    g = reward_to_go(frame, "recorded", gamma=gamma, next_value="next_v")
    np.testing.assert_allclose(g.to_numpy(), ref_g, rtol=1e-10, atol=1e-9)
    out = gae(frame, "recorded", value="v", next_value="next_v", gamma=gamma, lmbda=lmbda)
    np.testing.assert_allclose(out["advantage"].to_numpy(), ref_adv, rtol=1e-10, atol=1e-9)
    np.testing.assert_allclose(out["value_target"].to_numpy(), ref_adv + v, rtol=1e-10, atol=1e-9)
    # without the final values: the truncated episodes get the return of their recorded part, flagged
    partial = reward_to_go(frame, "recorded", gamma=gamma, flag_truncated=True)
    ref_partial, _ = bootstrapping_loops(r, v, np.zeros(frame.height), term, trunc, gamma, lmbda)
    np.testing.assert_allclose(partial["return_to_go_recorded"].to_numpy(), ref_partial, rtol=1e-10, atol=1e-9)
    cut_episodes = set(frame.filter(pl.col("truncated"))["episode_id"].to_list())
    assert partial["truncated"].to_list() == [e in cut_episodes for e in frame["episode_id"].to_list()]
    with pytest.raises(ParameterError, match=r"`next_value` should name a column holding V\(s\[t\+1\]\): 10 "
                                             r"steps are truncated \(first at row \d+\)"):
        gae(frame, "recorded", value="v", gamma=gamma, lmbda=lmbda)


def test_a_step_flagged_terminated_and_truncated_ends_without_bootstrap():
    """Gymnasium can flag a step both ways (a time limit on the terminal step): it ended, V(next) = 0."""
    spec = FrameSpec(name="both", episode=("episode_id",), terminated="terminated", truncated="truncated")
    frame = pl.DataFrame({"episode_id": [0, 0, 1, 1], "reward_a": [1.0, 2.0, 3.0, 4.0],
                          "terminated": [False, True, False, False], "truncated": [False, True, False, True],
                          "v": [0.5, 0.5, 0.5, 0.5], "next_v": [0.5, np.nan, 0.5, 10.0]}).with_columns(
        done_a=pl.col("terminated") | pl.col("truncated"))
    g = reward_to_go(frame, "a", gamma=0.5, next_value="next_v", spec=spec)
    assert g.to_list() == [1.0 + 0.5 * 2.0, 2.0, 3.0 + 0.5 * (4.0 + 0.5 * 10.0), 4.0 + 0.5 * 10.0]
    adv = gae(frame, "a", value="v", next_value="next_v", gamma=0.5, lmbda=1.0, spec=spec)["advantage"]
    ref = bootstrapping_loops([1.0, 2.0, 3.0, 4.0], [0.5] * 4, [np.nan, np.nan, np.nan, 10.0],
                              [False, True, False, False], [False, False, False, True], 0.5, 1.0)[1]
    np.testing.assert_allclose(adv.to_numpy(), ref)
    assert not reward_to_go(frame, "a", gamma=0.5, spec=spec, flag_truncated=True)["truncated"][:2].any()
