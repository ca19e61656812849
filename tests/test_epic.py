"""EPIC (issue 26): the canonicalization and distance, recombined transitions, the ``epic`` diagnostic.

Known truth: a reward and ``k R + gamma phi(s') - phi(s)`` (k > 0) are at EPIC distance 0; an
unrelated reward is far; the Pearson distance of episode returns is not invariant to shaping.
"""

from __future__ import annotations

import json
import math
import textwrap

import numpy as np
import polars as pl
import pytest

import rewardlab
from rewardlab.analysis.compare import correlation_matrix, pearson_distance
from rewardlab.analysis.epic import (canonicalize, canonicalize_loop, epic_distance, epic_distance_loop,
                                     mean_and_stderr)
from rewardlab.contracts import get_contract
from rewardlab.contracts.steps.recombine import grid_transitions, next_states, transition_pool, transitions_frame
from rewardlab.core.errors import ParameterError
from rewardlab.core.spec import FrameSpec, StateColumn, attach
from rewardlab.diagnostics.base import Candidate, DiagnosisContext, DiagnosisOptions, get_diagnostic
from rewardlab.diagnostics.epic import EPIC_METHOD, FALLBACK_METHOD, epic_matrix

from conftest import ROOT

GAMMA = 0.9


# --------------------------------------------------------------------------
# Pure functions
# --------------------------------------------------------------------------


def test_canonicalize_equals_the_plain_loop():
    rng = np.random.default_rng(1)
    for shape in ((1, 1), (3, 5), (7, 2)):
        grid, nxt = rng.normal(size=shape), rng.normal(size=(shape[1], shape[1]))
        for gamma in (1.0, 0.5):
            np.testing.assert_allclose(canonicalize(grid, nxt, gamma), canonicalize_loop(grid, nxt, gamma),
                                       rtol=1e-12, atol=1e-12)
    with pytest.raises(ParameterError, match=r"`r_next` should have shape \[P, P\]"):
        canonicalize(np.zeros((2, 3)), np.zeros((2, 3)), 0.9)
    with pytest.raises(ParameterError, match=r"`gamma` should be in \(0, 1\]"):
        canonicalize(np.zeros((2, 3)), np.zeros((3, 3)), 0.0)


def test_epic_distance_equals_the_plain_loop():
    rng = np.random.default_rng(2)
    a, b = rng.normal(size=(4, 6)), rng.normal(size=(4, 6))
    w = rng.random(24)
    assert epic_distance(a, b) == pytest.approx(epic_distance_loop(a, b), abs=1e-12)
    assert epic_distance(a, b, w) == pytest.approx(epic_distance_loop(a, b, w), abs=1e-12)
    assert epic_distance(a, -a) == pytest.approx(1.0) and epic_distance(a, 2 * a + 1) == pytest.approx(0.0, abs=1e-7)
    assert math.isnan(epic_distance(np.ones(5), np.arange(5.0)))  # a constant: undefined
    with pytest.raises(ParameterError, match="`weights` should be 24 finite non-negative"):
        epic_distance(a, b, -w)


def test_mean_and_stderr_equals_the_formula():
    v = np.array([[0.1, 0.5], [0.3, np.nan], [0.2, 0.7]])
    mean, se = mean_and_stderr(v, axis=0)
    assert mean[0] == pytest.approx(0.2) and se[0] == pytest.approx(np.std([0.1, 0.3, 0.2], ddof=1) / math.sqrt(3))
    assert mean[1] == pytest.approx(0.6) and se[1] == pytest.approx(np.std([0.5, 0.7], ddof=1) / math.sqrt(2))
    assert math.isnan(mean_and_stderr(np.array([0.4]))[1])


def _reward(s, a, s2):
    return s[..., 0] * s2[..., 1] + 0.5 * a - s2[..., 0] ** 2


def _phi(s):
    return np.sin(s[..., 0]) + s[..., 1] ** 2


def _grid(reward, states, actions, nexts):
    """r_grid [S, P] and r_next [P, P] of a reward function by brute force."""
    grid = np.array([[reward(s, a, n) for a, n in zip(actions, nexts)] for s in states])
    nxt = np.array([[reward(s, a, n) for a, n in zip(actions, nexts)] for s in nexts])
    return grid, nxt


def test_known_truth_shaping_and_scale_give_zero_unrelated_does_not():
    rng = np.random.default_rng(3)
    states, nexts = rng.normal(size=(40, 2)), rng.normal(size=(30, 2))
    actions = rng.integers(0, 3, 30).astype(float)
    c1 = canonicalize(*_grid(_reward, states, actions, nexts), GAMMA)
    shaped = lambda s, a, n: 3.0 * _reward(s, a, n) + GAMMA * _phi(n) - _phi(s)  # noqa: E731
    c2 = canonicalize(*_grid(shaped, states, actions, nexts), GAMMA)
    unrelated = lambda s, a, n: np.cos(3 * s[..., 1]) * a  # noqa: E731
    c3 = canonicalize(*_grid(unrelated, states, actions, nexts), GAMMA)
    assert epic_distance(c1, c2) < 1e-7
    assert epic_distance(c1, c3) > 0.3
    # the canonicalization alone: 3 C(R) plus a constant
    diff = c2 - 3.0 * c1
    assert np.ptp(diff) < 1e-9
    # pure shaping canonicalizes to a constant: undefined distance
    c_phi = canonicalize(*_grid(lambda s, a, n: GAMMA * _phi(n) - _phi(s), states, actions, nexts), GAMMA)
    assert np.ptp(c_phi) < 1e-9 and math.isnan(epic_distance(c1, c_phi))


def test_pearson_distance_of_episode_returns_is_not_shaping_invariant():
    """The motivation for the rename: the old board metric moves under potential shaping."""
    rng = np.random.default_rng(4)
    returns_r, returns_shaped = [], []
    for _ in range(60):
        length = int(rng.integers(3, 10))
        s = rng.normal(size=(length + 1, 2))
        a = rng.integers(0, 3, length).astype(float)
        r = _reward(s[:-1], a, s[1:])
        shaped = 3.0 * r + GAMMA * _phi(s[1:]) - _phi(s[:-1])
        returns_r.append(r.sum())
        returns_shaped.append(shaped.sum())
    rho = correlation_matrix(np.column_stack([returns_r, returns_shaped]))[0, 1]
    assert pearson_distance(rho) > 0.05


# --------------------------------------------------------------------------
# Recombined transitions
# --------------------------------------------------------------------------


SPEC = FrameSpec(name="toy_epic", episode=("episode_id",), step="t", terminated="terminated",
                 truncated="truncated", states=(StateColumn("obs", 2, "float32", 0.0, final="final_obs"),),
                 columns=("action", "reward_recorded"), contract="steps")


def steps_frame(seed: int = 0, episodes: int = 30) -> pl.DataFrame:
    """Episodes ending terminated or truncated; every third one lacks its final observation."""
    rng = np.random.default_rng(seed)
    rows = {k: [] for k in ("episode_id", "t", "obs", "final_obs", "action", "reward_recorded", "terminated",
                            "truncated")}
    for e in range(episodes):
        length = int(rng.integers(2, 10))
        how = "terminated" if e % 2 else "truncated"
        obs = rng.normal(size=(length + 1, 2)).astype(np.float32)
        for t in range(length):
            last = t == length - 1
            rows["episode_id"].append(e)
            rows["t"].append(t)
            rows["obs"].append(obs[t].tolist())
            rows["final_obs"].append(obs[t + 1].tolist() if last and e % 3 else None)
            rows["action"].append(int(rng.integers(0, 3)))
            rows["reward_recorded"].append(float(rng.normal()))
            rows["terminated"].append(last and how == "terminated")
            rows["truncated"].append(last and how == "truncated")
    frame = pl.DataFrame(rows, schema_overrides={"obs": pl.Array(pl.Float32, 2), "final_obs": pl.Array(pl.Float32, 2),
                                                 "t": pl.Int64, "episode_id": pl.Int64})
    return attach(frame, SPEC)


def test_recombined_transitions_equal_a_plain_loop():
    frame = steps_frame()
    pool = transition_pool(frame, SPEC)
    obs, final, ep = frame["obs"].to_list(), frame["final_obs"].to_list(), frame["episode_id"].to_list()
    # loop: a row's next state is the next row of its episode, else its final state (none: excluded)
    nexts = {}
    for i in range(frame.height):
        if i + 1 < frame.height and ep[i + 1] == ep[i]:
            nexts[i] = obs[i + 1]
        elif final[i] is not None:
            nexts[i] = final[i]
    assert pool.pair_rows.tolist() == sorted(nexts) and pool.excluded == frame.height - len(nexts) == 10
    state_rows, pair_rows = np.array([0, 5, 5, 17]), pool.pair_rows[[3, 0, 40]]
    states, following, extra_rows = grid_transitions(pool, state_rows, pair_rows)
    out, spec = transitions_frame(pool.arrays, states, following, extra_rows)
    starts = [obs[i] for i in state_rows] + [nexts[j] for j in pair_rows]
    expect = [(s, nexts[j], frame["action"][int(j)], frame["reward_recorded"][int(j)])
              for s in starts for j in pair_rows]
    got = list(zip(out["obs"].to_list(), out[spec.states[0].final].to_list(), out["action"].to_list(),
                   out["reward_recorded"].to_list()))
    assert len(got) == (4 + 3) * 3
    for (s, n, a, r), (gs, gn, ga, gr) in zip(expect, got):
        assert gs == pytest.approx(s) and gn == pytest.approx(n) and ga == a and gr == r
    td = get_contract("steps").arrays(out, spec).tensordict()
    assert not td["next", "terminated"].any() and td["next", "truncated"].all()  # never-ending: truncated
    np.testing.assert_array_equal(td["next", "obs"].numpy(), out[spec.states[0].final].to_numpy())


# --------------------------------------------------------------------------
# Through real plug-ins
# --------------------------------------------------------------------------


R1 = """
import torch
def r1(obs, action, nxt):
    return obs[:, 0].double() * nxt[:, 1].double() + 0.5 * action.double() - nxt[:, 0].double() ** 2
def get_reward(data, contiguous):
    data["next", "reward"] = r1(data["obs"], data["action"], data["next", "obs"])
"""

R2 = R1 + """
def phi(x):
    return torch.sin(x[:, 0].double()) + x[:, 1].double() ** 2
def get_reward(data, contiguous):  # 3 R1 + gamma phi(s') - phi(s), no terminal masking
    base = r1(data["obs"], data["action"], data["next", "obs"])
    data["next", "reward"] = 3.0 * base + GAMMA * phi(data["next", "obs"]) - phi(data["obs"])
GAMMA = 0.9
"""

R3 = """
import torch
def get_reward(data, contiguous):
    data["next", "reward"] = torch.cos(3.0 * data["obs"][:, 1].double()) * data["action"].double()
"""

R4 = R1 + """
def get_reward(data, contiguous):
    data["next", "reward"] = r1(data["obs"], data["action"], data["next", "obs"]) + data["reward_recorded"]
"""


@pytest.fixture(scope="module")
def plugins(tmp_path_factory):
    folder = tmp_path_factory.mktemp("epic_plugins")
    paths = {}
    for name, text in (("r1", R1), ("r2", R2), ("r3", R3), ("r4", R4)):
        paths[name] = folder / f"{name}.py"
        paths[name].write_text(textwrap.dedent(text))
    return paths


def test_epic_matrix_known_truth_through_plugins(plugins):
    frame = steps_frame()
    m = epic_matrix(frame, [plugins[n] for n in ("r1", "r2", "r3", "r4")], gamma=GAMMA, n_states=40, n_pairs=30,
                    repeats=3, seed=5, isolate=False)
    assert m.names == ("r1", "r2", "r3", "r4") and m.method == EPIC_METHOD and m.excluded_pairs == 10
    assert m.distance[0, 1] < 1e-6 and m.stderr[0, 1] < 1e-6  # same reward up to shaping and scale
    assert m.distance[0, 2] > 0.3 and m.distance[1, 2] == pytest.approx(m.distance[0, 2], abs=1e-6)
    assert m.stderr[0, 2] > 0  # three different samples
    assert m.evaluable == (True, True, True, False)
    assert "reads 'reward_recorded'" in m.reasons[3] and "(state, action, next state)" in m.reasons[3]
    assert np.isnan(m.distance[3]).all() and np.isnan(m.distance[:, 3]).all()
    # the same samples by brute force (the draws epic_matrix makes: per repeat, states then pairs)
    pool = transition_pool(frame, SPEC)
    rng = np.random.default_rng(5)
    s_all = pool.arrays.states["obs"].astype(np.float64)
    unrelated = lambda s, a, n: np.cos(3 * s[..., 1]) * a  # noqa: E731
    distances = []
    for _ in range(3):
        state_rows = rng.integers(0, pool.n, 40)
        pair_rows = pool.pair_rows[rng.integers(0, pool.pair_rows.size, 30)]
        pair_next = next_states(pool.arrays, pair_rows)["obs"].astype(np.float64)
        actions = pool.arrays.extras["action"][pair_rows].astype(np.float64)
        c1 = canonicalize(*_grid(_reward, s_all[state_rows], actions, pair_next), GAMMA)
        c3 = canonicalize(*_grid(unrelated, s_all[state_rows], actions, pair_next), GAMMA)
        distances.append(epic_distance(c1, c3))
    assert m.distance[0, 2] == pytest.approx(np.mean(distances), abs=1e-9)
    assert m.stderr[0, 2] == pytest.approx(np.std(distances, ddof=1) / math.sqrt(3), abs=1e-9)


def _context(frame, spec, contract, candidates, base=None, options=None):
    ends = frame.select(spec.episode_end()).to_series().to_numpy().astype(bool)
    starts = np.concatenate([[0], np.flatnonzero(ends) + 1]).astype(np.int64)
    episode_of_row = (np.cumsum(ends) - ends).astype(np.int64)
    return DiagnosisContext(frame=frame, spec=spec, contract=contract, candidates=tuple(candidates), base=base,
                            options=options or DiagnosisOptions(gamma=GAMMA, epic_states=30, epic_pairs=20,
                                                                epic_repeats=2, isolate=False),
                            episode_of_row=episode_of_row, episode_starts=starts, terminated=ends & False,
                            truncated=ends & False)


def test_the_diagnostic_reports_pairs_base_and_reasons(plugins):
    frame = steps_frame(1)
    n = frame.height
    cands = [Candidate(name, np.zeros(n), plugin=plugins[name]) for name in ("r1", "r2", "r4")]
    base = Candidate("recorded", frame["reward_recorded"].to_numpy())
    found = get_diagnostic("epic").run(_context(frame, SPEC, get_contract("steps"), cands, base))
    pairs = [(f.candidate, f.other, f.verdict) for f in found]
    assert pairs == [("r1", "r2", "info"), ("r1", "r4", "n/a"), ("r2", "r4", "n/a"),
                     ("r1", "recorded", "n/a"), ("r2", "recorded", "n/a"), ("r4", "recorded", "n/a")]
    assert found[0].evidence["distance"] < 1e-6 and found[0].evidence["n_states"] == 30
    assert found[0].evidence["method"] == EPIC_METHOD and found[0].evidence["excluded_pairs"] > 0
    assert "reward_recorded" in found[1].summary
    assert "column of recorded rewards" in found[3].summary


def test_kanachan_falls_back_to_the_pearson_distance_of_episode_returns(sample_frame):
    from rewardlab.sources.registry import spec_of

    frame = sample_frame
    spec = spec_of(frame)
    rng = np.random.default_rng(6)
    a, b = rng.normal(size=frame.height), rng.normal(size=frame.height)
    ctx = _context(frame, spec, get_contract("kanachan"), [Candidate("a", a), Candidate("b", b)])
    (f,) = get_diagnostic("epic").run(ctx)
    assert f.verdict == "info" and f.evidence["method"] == FALLBACK_METHOD == \
        "pearson_distance of episode returns (fallback: not EPIC)"
    assert "round results are not functions" in f.evidence["reason"]
    # loop reference: sum each episode, Pearson distance of the sums
    ra, rb, sa, sb = [], [], 0.0, 0.0
    for i, end in enumerate(ctx.episode_end):
        sa, sb = sa + a[i], sb + b[i]
        if end:
            ra.append(sa), rb.append(sb)
            sa = sb = 0.0
    assert f.evidence["distance"] == pytest.approx(float(pearson_distance(np.corrcoef(ra, rb)[0, 1])), abs=1e-9)


def test_epic_on_the_recorded_mountaincar(plugins):
    """End to end on the committed recording, plug-ins in a child process (the default)."""
    frame = rewardlab.load(ROOT / "data" / "gym" / "mountaincar_scripted.parquet")
    shaping = ROOT / "data" / "plugins" / "steps" / "potential_shaping.py"
    recorded = ROOT / "data" / "plugins" / "steps" / "recorded_reward.py"
    m = epic_matrix(frame, [plugins["r1"], plugins["r2"], shaping, recorded], gamma=GAMMA, n_states=64,
                    n_pairs=48, repeats=2, seed=0)
    assert m.distance[0, 1] < 1e-6 and m.evaluable[:3] == (True, True, True)
    # the shipped potential-shaping plug-in is pure shaping: constant after canonicalization (GAMMA 0.99 in it,
    # 0.9 here, so not exactly): far from r1 either way
    assert m.distance[0, 2] > 0.1 or math.isnan(m.distance[0, 2])
    # MountainCar's recorded reward is -1 on every step: reading it cannot be told from not reading it, and the
    # reward is constant: an undefined distance, never a number
    assert math.isnan(m.distance[0, 3])


def test_compare_command_says_pearson_distance(tmp_path, capsys):
    from rewardlab.cli import main

    path = tmp_path / "r.parquet"
    pl.DataFrame({"game_id": ["g", "h", "i"], "seat": [0, 0, 0], "reward_a": [1.0, 2.0, 3.0],
                  "reward_b": [2.0, 1.0, 7.0]}).write_parquet(path)
    assert main(["compare", str(path), "--json", "--top", "0"]) == 0
    pair = json.loads(capsys.readouterr().out)["pairs"][0]
    assert "pearson_distance" in pair and "epic" not in pair
    assert main(["compare", str(path), "--top", "0"]) == 0
    text = capsys.readouterr().out
    assert "pearson_distance" in text and "not EPIC" in text
