"""The joint view: [steps, agents] arrays from a frame with one row per (episode, step, agent).

Checked against a plain-loop twin (joint_view_loop) on random frames in random row order, against the
arrays the El Farol simulation started from (in memory and loaded back through the steps source),
on a multi-agent RLlib frame made from the shipped recording, and on broken frames (the same error,
word for word, from both builds)."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import polars as pl
import pytest
from hypothesis import given, settings, strategies as st

import rewardlab
from rewardlab.analysis.joint import joint_view, joint_view_loop, scatter_rows, scatter_rows_loop
from rewardlab.core.errors import ColumnNotFoundError, ParameterError, SpecError
from rewardlab.core.spec import FrameSpec, attached
from rewardlab.domains.el_farol import SMALL, simulate_actions, simulate_bar
from rllib_lines import write_lines

ROOT = Path(__file__).resolve().parents[1]
BAR_SPEC = FrameSpec(name="bar", episode=("episode_id", "agent_id"), step="t", agent="agent_id",
                     terminated="terminated", truncated="truncated", columns=("action",))


def same_view(a, b):
    assert a.agents == b.agents and a.height == b.height
    assert a.episode_keys.equals(b.episode_keys)
    for name in ("episode", "t", "rows", "actions", "terminated", "truncated"):
        assert np.array_equal(getattr(a, name), getattr(b, name)), name
    assert a.states.keys() == b.states.keys() and a.extras.keys() == b.extras.keys()
    for k in a.states:
        assert np.array_equal(a.states[k], b.states[k])
    for k in a.extras:
        assert np.array_equal(a.extras[k], b.extras[k])


# --- El Farol: the simulation's own arrays ---------------------------------------------------------


def test_el_farol_frame_gives_back_the_simulated_actions_and_rows():
    actions = simulate_actions(SMALL, episodes=3, weeks=7, seed=4, policy="preference")
    frame = simulate_bar(SMALL, episodes=3, weeks=7, seed=4, policy="preference")
    view = joint_view(frame, spec=BAR_SPEC)
    assert view.agents == tuple(range(50)) and view.steps == 21 and view.n_agents == 50
    assert np.array_equal(view.actions, actions.reshape(21, 50))
    assert view.episode.tolist() == np.repeat([0, 1, 2], 7).tolist() and view.t.tolist() == list(range(7)) * 3
    assert view.truncated[:, 0].tolist() == [t == 6 for t in range(7)] * 3 and not view.terminated.any()
    assert np.array_equal(frame["action"].to_numpy()[view.rows], view.actions)
    assert np.array_equal(view.scatter(view.actions), frame["action"].to_numpy())
    assert not view.actions.flags.writeable
    same_view(view, joint_view_loop(frame, spec=BAR_SPEC))


def test_step_table_with_agent_id_loads_as_a_joint_frame(tmp_path):
    """A step table (episode_id, t, agent_id, action, flags, a state, a reward) through rewardlab.load."""
    actions = simulate_actions(SMALL, episodes=2, weeks=5, seed=1)
    frame = simulate_bar(SMALL, episodes=2, weeks=5, seed=1)
    frame = frame.with_columns(obs_night=pl.col("action") * 0.5 + pl.col("agent_id"),
                               reward=pl.col("agent_id").cast(pl.Float64) / 10)
    shuffled = np.random.default_rng(3).permutation(frame.height)
    frame = frame.with_columns(_k=pl.Series(shuffled)).sort("episode_id", "t", "_k").drop("_k")  # any agent order
    path = tmp_path / "bar.parquet"
    frame.write_parquet(path)
    loaded = rewardlab.load(path, format="steps")
    spec = attached(loaded)
    assert spec.agent == "agent_id" and spec.episode == ("episode_id", "agent_id")
    view = joint_view(loaded)  # the attached spec
    assert set(view.extras) == {"reward_recorded"} and set(view.states) == {"obs_night"}
    order = view.episode_keys["episode_id"].to_numpy()
    assert np.array_equal(view.actions.reshape(2, 5, 50), actions[order])
    assert np.allclose(view.states["obs_night"], view.actions * 0.5 + np.arange(50))
    assert np.allclose(view.extras["reward_recorded"], np.arange(50) / 10)
    same_view(view, joint_view_loop(loaded))
    # back to the loaded frame's rows
    assert np.array_equal(view.scatter(view.actions), loaded["action"].to_numpy())


# --- random frames: vectorized against the loop ----------------------------------------------------


@st.composite
def joint_frames(draw):
    episodes = draw(st.integers(1, 4))
    n = draw(st.integers(1, 4))
    ids = draw(st.sampled_from(["int", "str"]))
    agent_ids = draw(st.lists(st.integers(-5, 30), min_size=n, max_size=n, unique=True))
    if ids == "str":
        agent_ids = [f"a{v}" for v in agent_ids]
    rows = []
    for e in range(episodes):
        steps = draw(st.lists(st.integers(0, 9), min_size=1, max_size=5, unique=True))
        for t in steps:
            for a in agent_ids:
                rows.append((e * 7 + 3, t, a, draw(st.integers(0, 4)), draw(st.floats(-2, 2, width=32))))
    perm = draw(st.permutations(range(len(rows))))
    rows = [rows[i] for i in perm]
    frame = pl.DataFrame(rows, schema=["ep", "t", "agent", "action", "obs_v"], orient="row")
    return frame.with_columns(done=pl.col("t") == 9)


SPEC = FrameSpec(name="s", episode=("ep", "agent"), step="t", agent="agent", terminated="done",
                 states=(rewardlab.StateColumn("obs_v", None, "float64", 0.0),))


@settings(max_examples=80, deadline=None)
@given(joint_frames())
def test_view_matches_the_loop_and_scatters_back(frame):
    view = joint_view(frame, spec=SPEC)
    same_view(view, joint_view_loop(frame, spec=SPEC))
    # a plain dict reference: every cell is the frame row of that (episode, step, agent)
    cell = {(e, t, a): r for r, (e, t, a) in enumerate(frame.select("ep", "t", "agent").rows())}
    for s in range(view.steps):
        e = view.episode_keys["ep"][int(view.episode[s])]
        for i, a in enumerate(view.agents):
            assert view.rows[s, i] == cell[(e, int(view.t[s]), a)]
    assert list(view.agents) == sorted(set(frame["agent"]))
    values = np.arange(view.steps * view.n_agents, dtype=np.float64).reshape(view.steps, view.n_agents)
    assert np.array_equal(scatter_rows(view, values), scatter_rows_loop(view, values))
    assert np.array_equal(scatter_rows(view, view.states["obs_v"]), frame["obs_v"].to_numpy())
    wide = np.stack([values, -values], axis=2)
    assert scatter_rows(view, wide).shape == (frame.height, 2)
    assert np.array_equal(scatter_rows(view, wide), scatter_rows_loop(view, wide))


def _error(build, frame):
    with pytest.raises(SpecError) as err:
        build(frame, spec=SPEC)
    return str(err.value)


@settings(max_examples=80, deadline=None)
@given(joint_frames(), st.sampled_from(["drop", "duplicate", "rename"]), st.data())
def test_broken_frames_give_the_same_error_from_both_builds(frame, how, data):
    r = data.draw(st.integers(0, frame.height - 1))
    if how == "drop":
        broken = frame.filter(pl.int_range(pl.len()) != r)
    elif how == "duplicate":
        broken = pl.concat([frame, frame[r]])
    else:
        other = "zz" if frame["agent"].dtype == pl.String else 99
        broken = frame.with_columns(agent=pl.when(pl.int_range(pl.len()) == r).then(pl.lit(other))
                                    .otherwise(pl.col("agent")))
    try:
        joint_view_loop(broken, spec=SPEC)
    except SpecError as err:
        assert _error(joint_view, broken) == str(err)
        assert "episode " in str(err) and "agent" in str(err)
    else:  # dropping a step's only agent, or the whole of a one-row step, leaves a valid frame
        same_view(joint_view(broken, spec=SPEC), joint_view_loop(broken, spec=SPEC))


# --- each error, word for word ----------------------------------------------------------------------


def small(rows):
    return pl.DataFrame(rows, schema=["ep", "t", "agent", "action"], orient="row").with_columns(
        obs_v=pl.lit(0.0), done=pl.lit(False))


def test_two_rows_for_one_agent_and_step():
    frame = small([(0, 0, 1, 0), (0, 0, 2, 0), (0, 1, 1, 0), (0, 1, 2, 0), (0, 1, 2, 1)])
    text = _error(joint_view, frame)
    assert text.startswith("column 'agent', row 4: episode 0, step t=1, agent 2: two rows for one agent and step "
                           "(rows 3 and 4)")
    assert text == _error(joint_view_loop, frame)


def test_agent_missing_from_a_step():
    frame = small([(5, t, a, 0) for t in range(3) for a in (1, 2) if (t, a) != (1, 2)])
    text = _error(joint_view, frame)
    assert text.startswith("column 'agent', row 2: episode 5, step t=1, agent 2: the agent has no row at this "
                           "step, though it acts before (t=0) and after (t=2); agents [1] act here")
    assert text == _error(joint_view_loop, frame)


def test_agents_that_change_mid_episode():
    frame = small([(0, 0, "a", 0), (0, 0, "b", 0), (0, 1, "a", 0), (0, 1, "c", 0)])
    text = _error(joint_view, frame)
    # the first step, in joint order, that lacks an agent of the episode: t=0 lacks 'c', which joins at t=1
    assert text.startswith("column 'agent', row 0: episode 0, step t=0: the agents change mid-episode: agent 'c' "
                           "acts at steps t=1..1 of the episode and not at t=0, where agents ['a', 'b'] act")
    assert text == _error(joint_view_loop, frame)


def test_episodes_with_different_agents():
    frame = small([(0, 0, 1, 0), (0, 0, 2, 0), (1, 0, 1, 0), (1, 0, 3, 0)])
    text = _error(joint_view, frame)
    assert text.startswith("column 'agent', row 2: episode 1 has agents [1, 3] and episode 0 has agents [1, 2]")
    assert text == _error(joint_view_loop, frame)


def test_frames_that_are_not_joint_frames():
    frame = small([(0, 0, 1, 0)])
    with pytest.raises(SpecError, match="names no agent column"):
        joint_view(frame, spec=FrameSpec(name="s", episode=("ep",), step="t"))
    with pytest.raises(SpecError, match="names no step column"):
        joint_view(frame, spec=FrameSpec(name="s", episode=("ep",), agent="agent"))
    with pytest.raises(SpecError, match="only the agent column"):
        joint_view(frame, spec=FrameSpec(name="s", episode=("agent",), step="t", agent="agent"))
    with pytest.raises(ColumnNotFoundError):
        joint_view(frame.drop("action"), spec=SPEC)
    with pytest.raises(ParameterError, match="polars DataFrame"):
        joint_view(frame.lazy(), spec=SPEC)
    nulls = frame.with_columns(agent=pl.lit(None, dtype=pl.Int64))
    with pytest.raises(SpecError, match="column 'agent', row 0: a joint view needs a value here"):
        joint_view(nulls, spec=SPEC)
    view = joint_view(frame, spec=SPEC)
    with pytest.raises(ParameterError, match=r"should have shape \[S, n\] = \[1, 1\]"):
        view.scatter(np.zeros((2, 1)))


# --- RLlib ------------------------------------------------------------------------------------------


def test_view_of_a_multi_agent_rllib_frame(tmp_path):
    """data/rllib holds single-agent CartPole only: two policies' batches of one real line make a
    multi-agent batch (as tests/test_rllib_source.py does); the shipped frame gives a one-agent view."""
    old = ROOT / "data" / "rllib" / "old_stack_json" / "data"
    line = next(p for p in sorted(old.glob("*.json"))).read_bytes().splitlines()[0]
    obj = json.loads(line)
    a = obj["policy_batches"]["default_policy"]
    b = json.loads(json.dumps(a))
    b["agent_index"] = [1] * len(b["t"])
    b["actions"] = [1 - x for x in b["actions"]]
    b["obs"] = [[v + 10 for v in o] for o in b["obs"]]
    b["new_obs"] = [[v + 10 for v in o] for o in b["new_obs"]]
    obj["policy_batches"] = {"runner": a, "chaser": b}
    path = write_lines(tmp_path / "ma.json", [json.dumps(obj).encode()])
    frame = rewardlab.load(path, format="rllib", options={"unfinished": "truncate"})
    view = joint_view(frame)
    assert view.agents == (0, 1) and view.action_column == "actions" and view.steps == len(a["t"])
    assert np.array_equal(view.actions[:, 1], 1 - view.actions[:, 0])
    assert view.states["obs"].shape == (view.steps, 2, 4)
    assert np.allclose(view.states["obs"][:, 1], view.states["obs"][:, 0] + 10)
    assert np.allclose(view.extras["reward_recorded"][:, 0], view.extras["reward_recorded"][:, 1])
    same_view(view, joint_view_loop(frame))
    assert np.array_equal(view.scatter(view.states["obs"]), np.stack(frame["obs"].to_numpy()))

    shipped = rewardlab.load(old, format="rllib", options={"unfinished": "truncate"})
    one = joint_view(shipped)
    assert one.agents == (0,) and one.steps == shipped.height
    assert np.array_equal(one.actions[:, 0], shipped["actions"].to_numpy()[one.rows[:, 0]])
