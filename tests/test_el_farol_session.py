"""The El Farol tuner: its session against from-scratch computations, its state, its export, its widget.

References: the rewards come from the plain loops of :mod:`rewardlab.domains.el_farol.rewards` (each agent's
reward with G recomputed from scratch) on actions simulated anew with :func:`simulate_actions`; the alignment
from :func:`rewardlab.analysis.alignment.alignment` on a joint view built from scratch; the per-agent constants
from Python's :mod:`statistics` over each agent's column; a week's ``G`` without an agent from ``G``'s loop on
the joint action with that agent left out.
"""

from __future__ import annotations

import statistics

import numpy as np
import polars as pl
import pytest

from rewardlab.analysis.alignment import alignment
from rewardlab.analysis.joint import joint_view
from rewardlab.core.errors import FrameError, OutputExistsError, ParameterError
from rewardlab.domains.el_farol import BarSetting, global_reward, global_reward_loop, simulate_actions, simulate_bar
from rewardlab.domains.el_farol import rewards as R
from rewardlab.plugins import apply_plugins, isolation
from rewardlab.plugins.loading import plugin_name
from rewardlab.sessions import ElFarolSession, Session

fork = pytest.mark.skipif(not isolation.AVAILABLE, reason="needs os.fork")

OPTIONS = dict(episodes=2, weeks=8, seed=3, samples=2, resamples=40)
LOOPS = {"G": lambda a, o: np.repeat(R.global_reward_loop(a, **o)[:, None], a.shape[1], axis=1),
         "local": lambda a, o: R.local_reward_loop(a, **o), "D": lambda a, o: R.difference_reward_loop(a, **o)}


def reference(session: ElFarolSession) -> dict:
    """Everything the session shows, recomputed from scratch (a new simulation, plain loops)."""
    p = session.parameters
    setting = BarSetting(agents=p["agents"], nights=p["nights"], capacity=p["capacity"])
    actions = simulate_actions(setting, episodes=session.episodes, weeks=session.weeks, seed=session.seed,
                               policy=session.policy).reshape(-1, p["agents"])
    bar = {"nights": p["nights"], "capacity": p["capacity"]}
    if p["kind"] == "WL":
        rewards = R.wonderful_life_reward_loop(actions, clamp=p["clamp"], **bar)
    else:
        rewards = LOOPS[p["kind"]](actions, bar)
    view = joint_view(simulate_bar(setting, episodes=session.episodes, weeks=session.weeks, seed=session.seed,
                                   policy=session.policy))
    kind = {"G": "global", "local": "local", "D": "difference", "WL": "wonderful_life"}[p["kind"]]
    clamp = p["clamp"] if p["kind"] == "WL" else None
    result = alignment(view, lambda a, s: R.agent_rewards(a, kind=kind, clamp=clamp, **bar),
                       lambda a, s: global_reward(a, **bar), action_set=p["nights"], samples=session.samples,
                       seed=session.alignment_seed, resamples=session.resamples)
    return {"actions": actions, "rewards": rewards, "g": global_reward_loop(actions, **bar), "alignment": result}


def assert_matches(session: ElFarolSession) -> None:
    r, ref = session.results, reference(session)
    assert np.array_equal(r.view.actions, ref["actions"])
    np.testing.assert_allclose(r.rewards, ref["rewards"], rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(r.global_reward, ref["g"], rtol=1e-12, atol=1e-12)
    a, b = r.alignment, ref["alignment"]
    for name in ("factoredness", "factoredness_ci", "learnability", "learnability_ci", "tie_share"):
        assert np.array_equal(getattr(a, name), getattr(b, name)), name
    assert a.overall_factoredness == b.overall_factoredness
    assert a.overall_learnability_ci == b.overall_learnability_ci
    counts = np.zeros((r.rewards.shape[0], session.nights), np.int64)
    for s, row in enumerate(ref["actions"]):
        for night in row:
            counts[s, night] += 1
    assert np.array_equal(r.attendance, counts)


def test_every_change_equals_a_computation_from_scratch():
    s = ElFarolSession(**OPTIONS, agents=12, nights=4)
    assert_matches(s)
    for change in ({"kind": "G"}, {"capacity": "2.5"}, {"kind": "local"}, {"agents": 7}, {"nights": 5},
                   {"kind": "WL", "clamp": 1}, {"kind": "WL", "clamp": None}, {"kind": "D", "agents": 20}):
        s.update(**change)
        assert_matches(s)


def test_the_shipped_facts_hold_g_and_d_factored_local_not_d_more_learnable_than_g():
    s = ElFarolSession(episodes=2, weeks=30, samples=3, resamples=50)
    results = {}
    for kind in ("G", "local", "D"):
        s.kind = kind
        results[kind] = s.results.alignment
    assert results["G"].overall_factoredness == 1.0 and results["D"].overall_factoredness == 1.0
    assert results["local"].overall_factoredness < 0.7
    assert results["D"].overall_learnability > 2 * results["G"].overall_learnability


def test_per_agent_constants_against_a_plain_loop():
    s = ElFarolSession(**OPTIONS, agents=9, kind="local")
    r = s.results
    assert r.constants.height == 9 and r.constants["agent"].to_list() == [str(i) for i in range(9)]
    for i in range(9):
        column = [float(row[i]) for row in r.rewards.tolist()]
        mean, std = statistics.fmean(column), statistics.pstdev(column)
        row = r.constants.row(i, named=True)
        assert row["count"] == len(column) and row["min"] == min(column) and row["max"] == max(column)
        assert row["mean"] == pytest.approx(mean, rel=1e-12, abs=1e-15)
        assert row["std"] == pytest.approx(std, rel=1e-12, abs=1e-15)
        assert row["normalizable"] == (std > 0)
        if std > 0:
            c = s.agent_constants(i)
            assert (c.mean, c.std, c.count, c.scope) == (row["mean"], row["std"], len(column), "all")
            np.testing.assert_allclose(c.apply(column), [(v - mean) / std for v in column], rtol=1e-10, atol=1e-12)
    everything = [v for row in r.rewards.tolist() for v in row]
    assert r.overall.mean == pytest.approx(statistics.fmean(everything), rel=1e-12)
    assert r.overall.std == pytest.approx(statistics.pstdev(everything), rel=1e-12)


def test_a_constant_agent_reward_cannot_be_normalized():
    # one week: every agent's reward is one value, std 0
    s = ElFarolSession(episodes=1, weeks=1, samples=1, resamples=5, agents=4)
    assert not s.results.constants["normalizable"].any()
    with pytest.raises(FrameError, match="constant"):
        s.agent_constants(0)


def test_a_week_opened_against_g_recomputed_without_each_agent():
    s = ElFarolSession(**OPTIONS, agents=10, nights=3, kind="WL", clamp=0)
    w = s.week({"episode_id": 1, "t": 2})
    assert w.step == 1 * OPTIONS["weeks"] + 2 and (w.episode, w.t) == (1, 2)
    actions = s.results.view.actions[w.step]
    assert w.attendance.tolist() == [int((actions == k).sum()) for k in range(3)]
    assert w.global_reward == pytest.approx(sum(w.utility)) and w.global_reward == s.results.global_reward[w.step]
    for i, row in enumerate(w.agents.iter_rows(named=True)):
        others = [int(a) for j, a in enumerate(actions) if j != i]
        expected = global_reward_loop([others], nights=3, capacity=s.capacity)[0] if others else 0.0
        assert row["without_agent"] == pytest.approx(expected, abs=1e-12)
        assert row["night"] == actions[i] and row["reward"] == s.results.rewards[w.step, i]
    with pytest.raises(ParameterError, match="joint step"):
        s.week(10_000)
    with pytest.raises(ParameterError, match="week of the data"):
        s.week({"episode_id": 9, "t": 0})


def test_refused_values_name_the_parameter_and_change_nothing():
    s = ElFarolSession(**OPTIONS, agents=6)
    version = s.version
    for change, text in (({"kind": "X"}, "`kind`"), ({"agents": 1}, "`agents`"), ({"nights": "2.5"}, "`nights`"),
                         ({"capacity": 0}, "`capacity`"), ({"kind": "WL", "clamp": 9}, "`clamp`"),
                         ({"clamp": "x"}, "`clamp`")):
        assert not s.try_update(**change)
        assert text in str(s.last_error)
    assert s.version == version and s.kind == "D" and s.agents == 6
    s.update(kind="WL", clamp=3)
    assert not s.try_update(nights=3)  # the clamp night would not exist any more
    assert "`clamp`" in str(s.last_error) and s.nights == 6


def test_pin_undo_redo_and_the_state_file_round_trip(tmp_path):
    s = ElFarolSession(**OPTIONS, agents=8)
    before = s.results.rewards.copy()
    pin = s.pin("D")
    assert pin.summary["factoredness"] == 1.0 and pin.parameters["kind"] == "D"
    s.update(kind="local", capacity=3.0)
    s.agents = 10
    assert s.undo() and s.agents == 8 and s.kind == "local"
    assert s.undo() and s.kind == "D" and np.array_equal(s.results.rewards, before)
    assert s.redo() and s.kind == "local" and s.capacity == 3.0
    table = s.compare_pinned()
    assert "D" in table.columns and "factoredness" in table["statistic"].to_list()
    assert np.array_equal(s.pinned_results("D").rewards, before)
    path = s.save_state(tmp_path / "bar.state.json")
    again = Session.load_state(path)
    assert isinstance(again, ElFarolSession) and again.parameters == s.parameters
    assert (again.episodes, again.weeks, again.seed, again.samples, again.resamples) == \
        (s.episodes, s.weeks, s.seed, s.samples, s.resamples)
    assert [p.label for p in again.pinned] == ["D"] and again.pinned[0] == pin
    assert np.array_equal(again.results.rewards, s.results.rewards)
    s.update(kind="G", nights=4)
    s.restore(path)
    assert s.kind == "local" and s.nights == 6 and s.undo() and s.kind == "G"


def test_recorded_data_keeps_the_first_agents_and_checks_its_fingerprint(tmp_path):
    frame = simulate_bar(BarSetting(agents=6, nights=5, capacity=2.0), episodes=2, weeks=4, seed=1,
                         policy="preference")
    path = tmp_path / "bar.parquet"
    frame.write_parquet(path)
    s = ElFarolSession(str(path), samples=1, resamples=10)
    assert (s.agents, s.nights, s.simulated) == (6, 5, False)
    full = s.results.rewards
    np.testing.assert_allclose(full, R.difference_reward_loop(joint_view(frame).actions, nights=5, capacity=4.0))
    s.agents = 4
    actions = joint_view(frame).actions[:, :4]
    assert np.array_equal(s.results.view.actions, actions)
    np.testing.assert_allclose(s.results.rewards, R.difference_reward_loop(actions, nights=5, capacity=4.0))
    assert not s.try_update(agents=7) and "recorded agents" in str(s.last_error)
    assert not s.try_update(nights=4) and "recorded action" in str(s.last_error)
    state = s.save_state(tmp_path / "s.json")
    assert Session.load_state(state).agents == 4
    other = frame.with_columns(action=(pl.col("action") + 1) % 5)
    with pytest.raises(FrameError, match="differs"):
        ElFarolSession.load_state(state, other)


@fork
def test_the_export_writes_a_manager_that_gives_the_session_rewards(tmp_path):
    s = ElFarolSession(episodes=2, weeks=3, samples=1, resamples=5, agents=5, kind="WL", clamp=2, capacity=3.0)
    target = tmp_path / "wl.py"
    result = s.export(target)
    assert result.path == target and result.roundtrip is not None and result.roundtrip.ok
    out = apply_plugins(s.joint_frame(), target)
    rewards = out[f"reward_{plugin_name(target)}"].to_numpy()
    assert np.array_equal(rewards, s.results.view.scatter(s.results.rewards))
    with pytest.raises(OutputExistsError):
        s.export(target)


def test_the_widget_drives_the_session(tmp_path):
    from rewardlab.widgets import ElFarolTuner

    s = ElFarolSession(**OPTIONS, agents=6)
    tuner = ElFarolTuner(s, background=False, export_path=str(tmp_path / "d.py"))
    draws = tuner.agents_plot.draws
    tuner.kind.value = "local"
    assert s.kind == "local" and tuner.agents_plot.draws == draws + 1
    assert "rewardlab-factoredness" in tuner.summary.value
    tuner.capacity.value = "abc"
    assert s.capacity == 4.0 and "`capacity`" in tuner.error.value and tuner.capacity.value == "4.0"
    tuner.agents.value = "5"
    assert s.results.rewards.shape == (16, 5) and len(tuner.agents_plot.axes[0].collections[0].get_segments()) == 5
    assert tuner.clamp.disabled
    tuner.kind.value = "WL"
    tuner.clamp.value = "1"
    assert s.clamp == 1 and not tuner.clamp.disabled
    tuner.pin_button.click()
    assert len(tuner.comparison_plot.axes[0].patches) == 2 and "pin 1" in tuner.pinned.value
    tuner.weeks_plot.click(0, 6.2, 0.0)
    assert tuner.opened == 6 and tuner.week.value == "6" and "t=6" in tuner.week_summary.value
    tuner.week.value = "3"
    assert tuner.opened == 3 and len(tuner.weeks_plot.axes[1].patches) == s.nights
    tuner.undo_button.click()
    assert s.kind == "WL" and s.clamp is None and tuner.clamp.value == "none"
    tuner.export_button.click()
    tuner.wait_for_export()
    assert (tmp_path / "d.py").is_file() and "wrote" in tuner.export_result.value
    assert tuner.alignment_plot.png()[:4] == b"\x89PNG"
