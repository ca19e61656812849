"""El Farol domain: vectorized rewards against brute-force loops, factoredness, the seeded simulation."""

import numpy as np
import polars as pl
import pytest
from hypothesis import given, settings, strategies as st

from rewardlab.core.errors import ParameterError
from rewardlab.domains.el_farol import (
    LARGE, REWARD_KINDS, SMALL, BarSetting, agent_rewards, attendance, difference_reward, difference_reward_loop,
    global_reward, global_reward_loop, local_reward, local_reward_loop, simulate_actions, simulate_bar,
    step_table, uniform_division_reward, uniform_division_reward_loop, wonderful_life_reward,
    wonderful_life_reward_loop,
)

ATOL = 1e-12


@st.composite
def problems(draw):
    """A random bar problem and joint actions ``[S, n]``, with or without the home action."""
    nights = draw(st.integers(1, 5))
    home = draw(st.booleans())
    steps = draw(st.integers(1, 6))
    agents = draw(st.integers(1, 12))
    capacity = draw(st.floats(0.25, 12.0))
    top = nights if home else nights - 1
    flat = draw(st.lists(st.integers(0, top), min_size=steps * agents, max_size=steps * agents))
    actions = np.array(flat, dtype=np.int64).reshape(steps, agents)
    clamp = draw(st.one_of(st.none(), st.integers(0, top)))
    return actions, dict(nights=nights, capacity=capacity, home=home), clamp


@settings(max_examples=300, deadline=None)
@given(problems())
def test_every_reward_equals_its_brute_force(problem):
    actions, opts, clamp = problem
    np.testing.assert_allclose(global_reward(actions, **opts), global_reward_loop(actions, **opts), rtol=0, atol=ATOL)
    np.testing.assert_allclose(local_reward(actions, **opts), local_reward_loop(actions, **opts), rtol=0, atol=ATOL)
    np.testing.assert_allclose(uniform_division_reward(actions, **opts), uniform_division_reward_loop(actions, **opts),
                               rtol=0, atol=ATOL)
    np.testing.assert_allclose(difference_reward(actions, **opts), difference_reward_loop(actions, **opts),
                               rtol=0, atol=ATOL)
    np.testing.assert_allclose(wonderful_life_reward(actions, clamp=clamp, **opts),
                               wonderful_life_reward_loop(actions, clamp=clamp, **opts), rtol=0, atol=ATOL)


def test_difference_reward_equals_the_brute_force_on_simulated_data():
    for setting in (SMALL, LARGE):
        actions = simulate_actions(setting, episodes=2, weeks=10, seed=3, policy="preference").reshape(-1, setting.agents)
        opts = setting.reward_options()
        np.testing.assert_allclose(difference_reward(actions, **opts), difference_reward_loop(actions, **opts),
                                   rtol=0, atol=ATOL)
        # Wonderful Life clamped away is D (the facts' null clamp).
        np.testing.assert_array_equal(wonderful_life_reward(actions, **opts), difference_reward(actions, **opts))


def test_global_reward_is_the_same_for_every_agent_of_a_step():
    actions = simulate_actions(SMALL, episodes=1, weeks=20, seed=5)[0]
    g = agent_rewards(actions, kind="global", **SMALL.reward_options())
    assert g.shape == actions.shape
    assert (g == g[:, :1]).all()
    np.testing.assert_array_equal(g[:, 0], global_reward(actions, **SMALL.reward_options()))
    x = attendance(actions, nights=SMALL.nights)
    assert (x.sum(axis=1) == SMALL.agents).all()
    np.testing.assert_allclose(g[:, 0], (x * np.exp(-x / SMALL.capacity)).sum(axis=1), rtol=0, atol=ATOL)


def test_agent_rewards_dispatches_every_kind():
    actions = simulate_actions(SMALL, episodes=1, weeks=5, seed=2)[0]
    opts = SMALL.reward_options()
    direct = {"local": local_reward, "uniform_division": uniform_division_reward, "difference": difference_reward,
              "wonderful_life": wonderful_life_reward}
    for kind in REWARD_KINDS:
        out = agent_rewards(actions, kind=kind, **opts)
        assert out.shape == actions.shape and out.dtype == np.float64
        if kind in direct:
            np.testing.assert_array_equal(out, direct[kind](actions, **opts))
    np.testing.assert_array_equal(agent_rewards(actions, kind="wonderful_life", clamp=2, **opts),
                                  wonderful_life_reward(actions, clamp=2, **opts))


def _changes(actions, opts, reward):
    """Every counterfactual change of one agent's action: (agent, change in G, change in its reward)."""
    rows = []
    top = opts["nights"] + int(opts["home"])
    for s in range(actions.shape[0]):
        base = actions[s:s + 1]
        g0, r0 = global_reward(base, **opts)[0], reward(base, **opts)[0]
        for i in range(actions.shape[1]):
            for a in range(top):
                if a == base[0, i]:
                    continue
                moved = base.copy()
                moved[0, i] = a
                rows.append((i, global_reward(moved, **opts)[0] - g0, reward(moved, **opts)[0, i] - r0[i]))
    return np.array(rows)


@pytest.mark.parametrize("home", [False, True])
def test_difference_and_wonderful_life_are_factored_and_local_is_not(home):
    setting = BarSetting(agents=12, nights=4, capacity=2.0, home=home)
    opts = setting.reward_options()
    actions = simulate_actions(setting, episodes=1, weeks=6, seed=11, policy="preference")[0]
    factored = [difference_reward,
                lambda a, **o: wonderful_life_reward(a, **o),
                lambda a, **o: wonderful_life_reward(a, clamp=1, **o)]
    for reward in factored:
        changes = _changes(actions, opts, reward)
        d_g, d_r = changes[:, 1], changes[:, 2]
        np.testing.assert_allclose(d_r, d_g, rtol=0, atol=1e-12)  # moves exactly as G does
        moving = np.abs(d_g) > 1e-9
        assert moving.sum() > 100
        assert (np.sign(d_r[moving]) == np.sign(d_g[moving])).all()
    local = _changes(actions, opts, local_reward)
    moving = (np.abs(local[:, 1]) > 1e-9) & (np.abs(local[:, 2]) > 1e-9)
    assert (np.sign(local[moving, 1]) != np.sign(local[moving, 2])).any()


def test_a_concrete_change_where_local_disagrees_with_global():
    # Agent 0 is alone on night 0; the other three share night 1 (b = 4).  If agent 0 joins them, the
    # night it joins nears capacity (its local reward rises) but night 0 empties (G falls); D follows G.
    before, after = np.array([[0, 1, 1, 1]]), np.array([[1, 1, 1, 1]])
    opts = dict(nights=2, capacity=4.0)
    d_g = global_reward(after, **opts)[0] - global_reward(before, **opts)[0]
    d_l = local_reward(after, **opts)[0, 0] - local_reward(before, **opts)[0, 0]
    d_d = difference_reward(after, **opts)[0, 0] - difference_reward(before, **opts)[0, 0]
    f = lambda x: x * np.exp(-x / 4.0)  # noqa: E731
    assert d_g == pytest.approx(f(4) - f(1) - f(3), abs=1e-12) and d_g < 0
    assert d_l == pytest.approx(f(4) - f(1), abs=1e-12) and d_l > 0
    assert d_d == pytest.approx(d_g, abs=1e-12)


def test_the_simulation_is_seeded():
    a = simulate_bar(SMALL, episodes=3, weeks=7, seed=42, policy="preference")
    assert a.equals(simulate_bar(SMALL, episodes=3, weeks=7, seed=42, policy="preference"))
    assert not a.equals(simulate_bar(SMALL, episodes=3, weeks=7, seed=43, policy="preference"))
    # The first k trials do not depend on how many follow.
    head = simulate_actions(SMALL, episodes=2, weeks=7, seed=42, policy="preference")
    np.testing.assert_array_equal(head, simulate_actions(SMALL, episodes=5, weeks=7, seed=42, policy="preference")[:2])


def test_the_preference_policy_gives_structure_and_uniform_does_not():
    actions = simulate_actions(SMALL, episodes=4, weeks=200, seed=0, policy="preference", loyalty=0.8)
    flat = actions.reshape(-1, SMALL.agents)
    top_share = np.array([np.bincount(flat[:, i], minlength=SMALL.nights).max() / flat.shape[0]
                          for i in range(SMALL.agents)])
    assert (top_share > 0.75).all()  # 0.8 + 0.2 / 6 expected
    # The favourite is the same in every trial.
    favourites = [np.bincount(actions[e, :, 0], minlength=SMALL.nights).argmax() for e in range(4)]
    assert len(set(favourites)) == 1
    uniform = simulate_actions(SMALL, episodes=4, weeks=200, seed=0).reshape(-1, SMALL.agents)
    shares = np.bincount(uniform.ravel(), minlength=SMALL.nights) / uniform.size
    np.testing.assert_allclose(shares, 1 / SMALL.nights, atol=0.01)


def test_the_home_action_is_drawn_only_when_allowed():
    with_home = BarSetting(agents=20, nights=3, capacity=2.0, home=True)
    actions = simulate_actions(with_home, episodes=1, weeks=50, seed=1)
    assert actions.max() == 3 and actions.min() == 0
    assert simulate_actions(BarSetting(agents=20, nights=3, capacity=2.0), episodes=1, weeks=50, seed=1).max() == 2
    x = attendance(actions[0], nights=3, home=True)
    assert (x.sum(axis=1) == (actions[0] != 3).sum(axis=1)).all()


def test_the_step_table_shape_columns_and_order():
    actions = simulate_actions(SMALL, episodes=3, weeks=4, seed=9, policy="preference")
    frame = simulate_bar(SMALL, episodes=3, weeks=4, seed=9, policy="preference")
    assert frame.columns == ["episode_id", "t", "agent_id", "action", "terminated", "truncated"]
    assert frame.dtypes == [pl.Int64] * 4 + [pl.Boolean] * 2
    assert frame.shape == (3 * 4 * SMALL.agents, 6)
    assert frame.equals(frame.sort(["episode_id", "agent_id", "t"]))  # each agent's weeks together
    # The plain loop: row r is (episode, agent, week) in nested order.
    rows = frame.rows()
    r = 0
    for e in range(3):
        for i in range(SMALL.agents):
            for t in range(4):
                assert rows[r] == (e, t, i, actions[e, t, i], False, t == 3)
                r += 1
    per_step = frame.group_by(["episode_id", "t"]).agg(pl.col("agent_id").n_unique().alias("n"))
    assert (per_step["n"] == SMALL.agents).all()


def test_bad_input_is_refused_with_the_rule():
    opts = dict(nights=2, capacity=4.0)
    with pytest.raises(ParameterError, match=r"`actions` should hold nights in 0..1"):
        difference_reward([[0, 2]], **opts)
    with pytest.raises(ParameterError, match=r"`actions` should hold nights in 0..1"):
        global_reward([[-1, 0]], **opts)
    with pytest.raises(ParameterError, match=r"should be 2-D"):
        local_reward([0, 1], **opts)
    with pytest.raises(ParameterError, match=r"should hold integers"):
        local_reward([[0.0, 1.0]], **opts)
    with pytest.raises(ParameterError, match=r"`capacity` should be > 0"):
        global_reward([[0]], nights=2, capacity=0)
    with pytest.raises(ParameterError, match=r"`nights` should be >= 1"):
        global_reward([[0]], nights=0, capacity=1)
    with pytest.raises(ParameterError, match=r"`clamp` should be None or a night in 0..1"):
        wonderful_life_reward([[0]], clamp=2, **opts)
    with pytest.raises(ParameterError, match=r"`kind` should be one of"):
        agent_rewards([[0]], kind="team", **opts)
    with pytest.raises(ParameterError, match=r"`clamp` should be None unless"):
        agent_rewards([[0]], kind="difference", clamp=0, **opts)
    with pytest.raises(ParameterError, match=r"`policy` should be one of"):
        simulate_actions(SMALL, episodes=1, weeks=1, seed=0, policy="greedy")
    with pytest.raises(ParameterError, match=r"`loyalty` should be in \[0, 1\]"):
        simulate_actions(SMALL, episodes=1, weeks=1, seed=0, policy="preference", loyalty=1.5)
    with pytest.raises(ParameterError, match=r"`capacity` should be > 0"):
        BarSetting(agents=3, nights=2, capacity=-1)
    with pytest.raises(ParameterError, match=r"should be 3-D"):
        step_table(np.zeros((2, 3), dtype=np.int64))
