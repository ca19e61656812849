"""Factoredness and learnability: the vectorized estimator against its brute force (below), hand-worked cases,
the El Farol facts (G and D fully factored, D far more learnable than G, local the least factored),
the plots, and docs/alignment.md's table against what the code computes."""

from __future__ import annotations

import contextlib
import io
import re
from pathlib import Path

import numpy as np
import polars as pl
import pytest
from hypothesis import given, settings, strategies as st

from rewardlab.analysis.alignment import (
    TIES, AlignmentResult, action_set_of, alignment, alignment_table, bootstrap_counts, counterfactual_draws,
    kept_indices, percentile_interval, step_units,
)
from rewardlab.analysis.joint import joint_view
from rewardlab.core.errors import ParameterError
from rewardlab.core.spec import FrameSpec, StateColumn
from rewardlab.domains.el_farol import (
    SMALL, difference_reward, global_reward, local_reward, simulate_bar, wonderful_life_reward,
)
from rewardlab.plots.alignment import plot_agent_alignment, plot_alignment_comparison, plot_reward_vs_global

ROOT = Path(__file__).resolve().parents[1]
SPEC = FrameSpec(name="s", episode=("ep", "agent"), step="t", agent="agent",
                 states=(StateColumn("obs_v", None, "float64", 0.0),))
BAR_SPEC = FrameSpec(name="el_farol", episode=("episode_id", "agent_id"), step="t", agent="agent_id",
                     terminated="terminated", truncated="truncated", columns=("action",))


def view_of(actions, obs=None):
    actions = np.asarray(actions)
    steps, n = actions.shape
    obs = np.zeros(actions.shape) if obs is None else np.asarray(obs, dtype=np.float64)
    frame = pl.DataFrame({"ep": np.zeros(steps * n, dtype=np.int64), "t": np.repeat(np.arange(steps), n),
                          "agent": np.tile(np.arange(n), steps), "action": actions.ravel(),
                          "obs_v": obs.ravel()})
    return joint_view(frame, spec=SPEC)


# --- the brute force: one [1, n] joint action at a time, plain loops, a loop bootstrap -----------------


def alignment_loop(view, reward_fn, g_fn, *, action_set=None, samples=None, seed=0, resamples=1000,
                   confidence=0.95, ties="agree", rtol=1e-9, units=1000, keep=2000):
    """The module docstring's definitions, literally; the same draws as alignment()."""
    actions = view.actions.astype(np.int64)
    steps, n = actions.shape
    states = view.inputs
    draws = counterfactual_draws(actions, action_set_of(actions, action_set), samples=samples, seed=seed)
    m = draws.alternatives.shape[2]

    def at(s, joint):
        one = {k: v[s:s + 1] for k, v in states.items()}
        row = np.array([joint], dtype=np.int64)
        g = [float(x) for x in np.asarray(reward_fn(row, one)).reshape(n)]
        G = [float(x) for x in np.asarray(g_fn(row, one)).reshape(-1)]
        return g, (G * n if len(G) == 1 else G)

    base = [at(s, actions[s].tolist()) for s in range(steps)]
    tol_g = rtol * max(abs(x) for g, _ in base for x in g)
    tol_G = rtol * max(abs(x) for _, G in base for x in G)

    def sign(d, tol):
        return 1 if d > tol else (-1 if d < -tol else 0)

    cell = {k: [[0.0] * n for _ in range(steps)] for k in ("agree", "counted", "ties", "own", "others", "pairs")}
    changes = []
    for s in range(steps):
        for i in range(n):
            for j in range(m):
                joint = actions[s].tolist()
                joint[i] = int(draws.alternatives[s, i, j])
                g, G = at(s, joint)
                dg, dG = g[i] - base[s][0][i], G[i] - base[s][1][i]
                changes.append((i, dg, dG))
                tie = sign(dg, tol_g) == 0 and sign(dG, tol_G) == 0
                cell["ties"][s][i] += tie
                if not (tie and ties == "exclude"):
                    cell["counted"][s][i] += 1
                    cell["agree"][s][i] += sign(dg, tol_g) == sign(dG, tol_G) and not (tie and ties == "disagree")
                cell["own"][s][i] += abs(dg)
                cell["pairs"][s][i] += 1
                other = actions[draws.other_steps[s, i, j]].tolist()
                other[i] = int(actions[s, i])
                cell["others"][s][i] += abs(at(s, other)[0][i] - base[s][0][i])
    starts = step_units(steps, units).tolist() + [steps]
    unit = {k: [[sum(v[s][i] for s in range(starts[u], starts[u + 1])) for i in range(n)]
                for u in range(len(starts) - 1)] for k, v in cell.items()}

    def stat(weights, num, den, agents):
        top = sum(w * unit[num][u][i] for u, w in enumerate(weights) for i in agents)
        bottom = sum(w * unit[den][u][i] for u, w in enumerate(weights) for i in agents)
        with np.errstate(divide="ignore", invalid="ignore"):
            return float(np.float64(top) / np.float64(bottom))

    ones, everyone = [1] * (len(starts) - 1), range(n)
    counts = bootstrap_counts(len(starts) - 1, resamples, seed)
    kept = kept_indices(steps * n * m, keep, seed, 1)
    cells = kept_indices(steps * n, keep, seed, 2)
    return {
        "factoredness": [stat(ones, "agree", "counted", [i]) for i in everyone],
        "learnability": [stat(ones, "own", "others", [i]) for i in everyone],
        "tie_share": [stat(ones, "ties", "pairs", [i]) for i in everyone],
        "own_change": [stat(ones, "own", "pairs", [i]) for i in everyone],
        "others_change": [stat(ones, "others", "pairs", [i]) for i in everyone],
        "factoredness_ci": percentile_interval([[stat(w, "agree", "counted", [i]) for i in everyone]
                                                for w in counts], confidence),
        "learnability_ci": percentile_interval([[stat(w, "own", "others", [i]) for i in everyone]
                                                for w in counts], confidence),
        "overall_factoredness": stat(ones, "agree", "counted", everyone),
        "overall_learnability": stat(ones, "own", "others", everyone),
        "overall_tie_share": stat(ones, "ties", "pairs", everyone),
        "overall_factoredness_ci": percentile_interval([stat(w, "agree", "counted", everyone) for w in counts],
                                                       confidence),
        "overall_learnability_ci": percentile_interval([stat(w, "own", "others", everyone) for w in counts],
                                                       confidence),
        "pairs": {"agent": [changes[k][0] for k in kept], "reward_change": [changes[k][1] for k in kept],
                  "global_change": [changes[k][2] for k in kept]},
        "values": {"agent": [c % n for c in cells], "reward": [base[c // n][0][c % n] for c in cells],
                   "global": [base[c // n][1][c % n] for c in cells]},
        "counterfactuals": m, "exact": samples is None, "steps": steps, "agents": view.agents,
    }


def same_result(a: AlignmentResult, b: dict):
    for name, want in b.items():
        got = getattr(a, name)
        if isinstance(want, dict):
            for k in want:
                np.testing.assert_allclose(got[k], np.asarray(want[k], dtype=np.float64), rtol=1e-12, atol=1e-15,
                                           err_msg=f"{name}.{k}")
        elif isinstance(want, (int, bool, tuple)):
            assert got == want, name
        else:
            np.testing.assert_allclose(np.asarray(got, dtype=np.float64), np.asarray(want, dtype=np.float64),
                                       rtol=1e-12, atol=1e-12, equal_nan=True, err_msg=name)


def same_results(a: AlignmentResult, b: AlignmentResult):
    same_result(a, {k: getattr(b, k) for k in (
        "factoredness", "factoredness_ci", "learnability", "learnability_ci", "tie_share", "own_change",
        "others_change", "overall_factoredness", "overall_learnability", "overall_tie_share",
        "overall_factoredness_ci", "overall_learnability_ci", "counterfactuals", "exact", "steps", "agents")})


# --- the estimator against its brute force -----------------------------------------------------------

NIGHTS = 3


def bar_g(a, s):
    return global_reward(a, nights=NIGHTS, capacity=1.5)


REWARDS = {
    "global": lambda a, s: np.repeat(bar_g(a, s)[:, None], a.shape[1], axis=1),
    "difference": lambda a, s: difference_reward(a, nights=NIGHTS, capacity=1.5),
    "local": lambda a, s: local_reward(a, nights=NIGHTS, capacity=1.5),
    # reads the states, and is flat for action 0 (ties)
    "stateful": lambda a, s: np.where(a == 0, 0.0, s["obs_v"] * a + np.roll(a, 1, axis=1)),
}


@settings(max_examples=40, deadline=None)
@given(steps=st.integers(1, 5), n=st.integers(1, 3), reward=st.sampled_from(sorted(REWARDS)),
       ties=st.sampled_from(TIES), samples=st.sampled_from([None, 1, 3]), units=st.sampled_from([1, 2, 1000]),
       seed=st.integers(0, 3), data=st.data())
def test_estimator_matches_the_brute_force(steps, n, reward, ties, samples, units, seed, data):
    actions = data.draw(st.lists(st.integers(0, NIGHTS - 1), min_size=steps * n, max_size=steps * n))
    obs = data.draw(st.lists(st.sampled_from([-1.0, 0.5, 2.0]), min_size=steps * n, max_size=steps * n))
    view = view_of(np.reshape(actions, (steps, n)), np.reshape(obs, (steps, n)))
    options = dict(action_set=NIGHTS, samples=samples, seed=seed, resamples=25, ties=ties, units=units, keep=7)
    fast = alignment(view, REWARDS[reward], bar_g, **options)
    slow = alignment_loop(view, REWARDS[reward], bar_g, **options)
    same_result(fast, slow)


def test_chunked_evaluation_matches_the_brute_force(monkeypatch):
    """Many steps per chunk and a chunk boundary inside the data: set the chunk small."""
    import rewardlab.analysis.alignment as module

    monkeypatch.setattr(module, "CHUNK", 70)  # 2 steps per chunk (4 agents x 2 changes x 4 wide = 32 each); 9 steps
    rng = np.random.default_rng(5)
    view = view_of(rng.integers(NIGHTS, size=(9, 4)), rng.normal(size=(9, 4)))
    for reward in REWARDS.values():
        same_result(alignment(view, reward, bar_g, samples=2, resamples=20, units=4),
                    alignment_loop(view, reward, bar_g, samples=2, resamples=20, units=4))


# --- hand-worked cases --------------------------------------------------------------------------------


def test_ties_count_as_the_option_says():
    """G = [a_0 >= 1]; agent 0's reward is G, agent 1's is 0.  Agent 0's two own changes (to 1, to 2) move
    both by +1; agent 1's move neither (ties)."""
    view = view_of([[0, 0]])

    def g_fn(a, s):
        return (a[:, 0] >= 1).astype(float)

    def reward(a, s):
        return np.stack([g_fn(a, s), np.zeros(len(a))], axis=1)

    expected = {"agree": ([1.0, 1.0], 1.0), "disagree": ([1.0, 0.0], 0.5), "exclude": ([1.0, np.nan], 1.0)}
    for ties, (per_agent, overall) in expected.items():
        r = alignment(view, reward, g_fn, action_set=3, ties=ties, resamples=10)
        np.testing.assert_array_equal(r.factoredness, per_agent)
        assert r.overall_factoredness == overall
        np.testing.assert_array_equal(r.tie_share, [0.0, 1.0])
        assert r.counterfactuals == 2 and r.exact


def test_opposed_reward_is_never_factored_and_learnability_is_a_ratio_of_mean_changes():
    actions = np.array([[0, 0], [2, 2], [1, 0]])
    view = view_of(actions)

    def g_fn(a, s):
        return a.sum(axis=1).astype(float)

    def opposed(a, s):  # -a_i - 2 a_other
        return -(a + 2 * a[:, ::-1]).astype(float)

    r = alignment(view, opposed, g_fn, action_set=3, seed=1, resamples=50)
    np.testing.assert_array_equal(r.factoredness, [0.0, 0.0])
    # own changes: |dg| = |a' - a_i| over the two other actions; others': |2 (a_other(s') - a_other(s))|
    draws = counterfactual_draws(actions, np.arange(3), samples=None, seed=1)
    for i in range(2):
        own = np.mean([abs(draws.alternatives[s, i, j] - actions[s, i]) for s in range(3) for j in range(2)])
        others = np.mean([abs(2 * (actions[draws.other_steps[s, i, j], 1 - i] - actions[s, 1 - i]))
                          for s in range(3) for j in range(2)])
        assert r.own_change[i] == pytest.approx(own) and r.others_change[i] == pytest.approx(others)
        assert r.learnability[i] == pytest.approx(own / others)


def test_draws_never_repeat_the_recorded_action_and_enumerate_every_other():
    rng = np.random.default_rng(0)
    actions = rng.choice([1, 4, 6, 9], size=(50, 3))
    action_set = action_set_of(actions)
    assert action_set.tolist() == [1, 4, 6, 9]
    exact = counterfactual_draws(actions, action_set, samples=None, seed=0)
    assert exact.alternatives.shape == (50, 3, 3)
    for s in range(50):
        for i in range(3):
            assert sorted(exact.alternatives[s, i].tolist() + [actions[s, i]]) == [1, 4, 6, 9]
    drawn = counterfactual_draws(actions, action_set, samples=40, seed=1)
    assert (drawn.alternatives != actions[..., None]).all()
    assert set(np.unique(drawn.alternatives)) == {1, 4, 6, 9}
    assert drawn.other_steps.min() >= 0 and drawn.other_steps.max() < 50
    again = counterfactual_draws(actions, action_set, samples=40, seed=1)
    assert np.array_equal(drawn.alternatives, again.alternatives)
    assert np.array_equal(drawn.other_steps, again.other_steps)


def test_bootstrap_pieces():
    assert step_units(10, 3).tolist() == [0, 3, 6] and step_units(2, 5).tolist() == [0, 1]
    counts = bootstrap_counts(7, 100, seed=3)
    assert counts.shape == (100, 7) and (counts.sum(axis=1) == 7).all()
    assert np.array_equal(counts, bootstrap_counts(7, 100, seed=3))
    assert not np.array_equal(counts, bootstrap_counts(7, 100, seed=4))


def test_bad_reward_functions_and_options_are_named():
    view = view_of([[0, 1], [1, 1]])

    def g_fn(a, s):
        return a.sum(axis=1) * 1.0

    with pytest.raises(ParameterError, match=r"`reward_fn` should return a float array of shape \[L, n\] = \[2, 2\]"):
        alignment(view, lambda a, s: a.sum(axis=1) * 1.0, g_fn)
    with pytest.raises(ParameterError, match=r"`g_fn` should return a float array of shape \[L\]"):
        alignment(view, lambda a, s: a * 1.0, lambda a, s: np.zeros((len(a), 3)))

    def breaks_on_two(a, s):
        return np.where(a == 2, np.nan, a * 1.0)

    with pytest.raises(ParameterError) as err:
        alignment(view, breaks_on_two, g_fn, action_set=3)
    assert "returned nan for episode 0, step t=0, agent 0 with its action set to 2" in str(err.value)
    with pytest.raises(ParameterError, match="`action_set` should hold at least two actions"):
        alignment(view_of([[1, 1]]), lambda a, s: a * 1.0, g_fn)
    with pytest.raises(ParameterError, match="`action_set` should hold every recorded action"):
        alignment(view, lambda a, s: a * 1.0, g_fn, action_set=[0, 2])
    with pytest.raises(ParameterError, match="`ties` should be one of"):
        alignment(view, lambda a, s: a * 1.0, g_fn, ties="maybe")
    with pytest.raises(ParameterError, match="`samples` should be None"):
        alignment(view, lambda a, s: a * 1.0, g_fn, samples=0)
    with pytest.raises(ParameterError, match="`reward_fn` should be a function"):
        alignment(view, None, g_fn)
    frame = pl.DataFrame({"ep": [0, 0], "t": [0, 0], "agent": [0, 1], "action": [0.5, 1.0], "obs_v": [0.0, 0.0]})
    with pytest.raises(ParameterError, match="one integer action per agent and step"):
        alignment(joint_view(frame, spec=SPEC), lambda a, s: a * 1.0, g_fn)


def test_seeded_and_reproducible():
    rng = np.random.default_rng(1)
    view = view_of(rng.integers(NIGHTS, size=(30, 3)))
    a = alignment(view, REWARDS["local"], bar_g, samples=2, seed=5, resamples=100)
    b = alignment(view, REWARDS["local"], bar_g, samples=2, seed=5, resamples=100)
    same_results(a, b)
    c = alignment(view, REWARDS["local"], bar_g, samples=2, seed=6, resamples=100)
    assert not np.array_equal(a.factoredness_ci, c.factoredness_ci)
    assert a.factoredness_ci.shape == (2, 3) and (a.factoredness_ci[0] <= a.factoredness_ci[1]).all()
    assert a.table().columns[:4] == ["agent", "factoredness", "factoredness_low", "factoredness_high"]


# --- El Farol -----------------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def el_farol():
    view = joint_view(simulate_bar(SMALL, episodes=2, weeks=60, seed=7), spec=BAR_SPEC)
    bar = SMALL.reward_options()

    def g_fn(a, s):
        return global_reward(a, **bar)

    rewards = {"G": lambda a, s: np.repeat(g_fn(a, s)[:, None], a.shape[1], axis=1),
               "L": lambda a, s: local_reward(a, **bar), "D": lambda a, s: difference_reward(a, **bar),
               "WL": lambda a, s: wonderful_life_reward(a, clamp=2, **bar)}
    return {k: alignment(view, fn, g_fn, action_set=SMALL.nights, seed=1, resamples=400, name=k)
            for k, fn in rewards.items()}


def test_el_farol_g_and_d_fully_factored_d_far_more_learnable_local_least_factored(el_farol):
    G, L, D, WL = (el_farol[k] for k in ("G", "L", "D", "WL"))
    for r in (G, D, WL):  # D_i moves exactly as G under any change of agent i's action
        assert (r.factoredness == 1.0).all() and r.overall_factoredness == 1.0
        assert (r.factoredness_ci == 1.0).all() and r.overall_factoredness_ci == (1.0, 1.0)
    assert (L.factoredness < 1.0).all()
    assert L.overall_factoredness < 0.75 and L.overall_factoredness_ci[1] < 0.8
    # an own change moves G and D_i alike; the others' changes move G far more
    np.testing.assert_allclose(D.own_change, G.own_change, rtol=1e-12)
    assert (D.learnability > G.learnability).all()
    assert D.overall_learnability > 3 * G.overall_learnability
    assert D.overall_learnability_ci[0] > 2 * G.overall_learnability_ci[1]
    # ties: the same changes move neither G nor D (a night of x to a night of x - 1)
    np.testing.assert_array_equal(D.tie_share, G.tie_share)
    assert 0 < G.overall_tie_share < 0.5


def test_loyal_agents_make_g_more_learnable_and_d_still_more_so():
    """With the preference policy the others move less, so G is more learnable; D stays well ahead."""
    view = joint_view(simulate_bar(SMALL, episodes=2, weeks=60, seed=7, policy="preference"), spec=BAR_SPEC)
    bar = SMALL.reward_options()

    def g_fn(a, s):
        return global_reward(a, **bar)

    G = alignment(view, lambda a, s: np.repeat(g_fn(a, s)[:, None], a.shape[1], axis=1), g_fn, resamples=200)
    D = alignment(view, lambda a, s: difference_reward(a, **bar), g_fn, resamples=200)
    assert D.overall_factoredness == 1.0 and G.overall_factoredness == 1.0
    assert D.overall_learnability_ci[0] > 1.5 * G.overall_learnability_ci[1]


def test_plots_draw_the_result(el_farol):
    D = el_farol["D"]
    axes = plot_agent_alignment(D)
    assert len(axes[0].patches) == 50 and len(axes[1].patches) == 50
    np.testing.assert_allclose([p.get_height() for p in axes[0].patches], D.factoredness)
    np.testing.assert_allclose([p.get_height() for p in axes[1].patches], D.learnability)
    from matplotlib.container import ErrorbarContainer

    bars = [c for c in axes[1].containers if isinstance(c, ErrorbarContainer)]
    whiskers = bars[0].lines[2][0].get_segments()
    np.testing.assert_allclose([seg[0][1] for seg in whiskers], D.learnability_ci[0])
    np.testing.assert_allclose([seg[1][1] for seg in whiskers], D.learnability_ci[1])
    ax = plot_reward_vs_global(el_farol["L"])
    offsets = ax.collections[0].get_offsets()
    np.testing.assert_allclose(offsets[:, 0], el_farol["L"].pairs["global_change"])
    np.testing.assert_allclose(offsets[:, 1], el_farol["L"].pairs["reward_change"])
    ax = plot_reward_vs_global(D, what="values")
    np.testing.assert_allclose(ax.collections[0].get_offsets()[:, 1], D.values["reward"])
    axes = plot_alignment_comparison(list(el_farol.values()))
    assert [p.get_height() for p in axes[0].patches] == [r.overall_factoredness for r in el_farol.values()]
    with pytest.raises(ParameterError, match="`result` should be an AlignmentResult"):
        plot_agent_alignment("D")


# --- the docs page ------------------------------------------------------------------------------------


def test_docs_table_is_what_the_code_computes():
    page = (ROOT / "docs" / "alignment.md").read_text()
    code = re.search(r"## El Farol.*?```python\n(.*?)```", page, re.S).group(1)
    printed = io.StringIO()
    with contextlib.redirect_stdout(printed):
        exec(compile(code, "docs/alignment.md", "exec"), {"__name__": "docs_alignment"})
    table = printed.getvalue()
    assert table.startswith("| reward | factoredness |") and table.count("\n") == 6
    assert "\n" + table + "\n" in page, "regenerate the table: run the page's El Farol code block"
    # and the page's words about it
    assert "G (global) | 1.000 | [1.000, 1.000]" in table and "D (difference) | 1.000 | [1.000, 1.000]" in table


def test_alignment_table_format():
    view = view_of([[0, 1], [1, 0]])
    r = alignment(view, lambda a, s: a * 1.0, lambda a, s: a.sum(axis=1) * 1.0, resamples=20, name="own",
                  confidence=0.9)
    text = alignment_table([r], digits=1)
    assert text.splitlines()[0] == "| reward | factoredness | 90% interval | learnability | 90% interval | ties |"
    assert text.splitlines()[2].startswith("| own | 1.0 | [1.0, 1.0] | ")
    with pytest.raises(ParameterError):
        alignment_table([])
