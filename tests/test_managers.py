"""Reward managers (issue 25): PRLT's reset / get_reward over a joint frame, isolated, checked and never a false pass.

References are independent of the runner: the vectorized El Farol rewards of
``rewardlab.domains.el_farol`` (bit for bit), a plain loop over a Python
dict of the frame's rows (call order, agent order, state and joint action),
and a brute-force sort for the joint order.
"""

from __future__ import annotations

import textwrap
from pathlib import Path

import numpy as np
import polars as pl
import pytest

import rewardlab
from rewardlab.cli import main
from rewardlab.contracts import get_contract
from rewardlab.contracts.manager import MANAGER, check_returns
from rewardlab.contracts.registry import claimed_contract
from rewardlab.core.errors import (
    ContractError, ParameterError, PluginLoadError, PluginRuntimeError, PluginTimeoutError, SpecError,
)
from rewardlab.core.spec import FrameSpec
from rewardlab.domains.el_farol import SMALL, difference_reward, global_reward, simulate_actions, simulate_bar
from rewardlab.plugins import apply_plugins, check_plugin, isolation
from rewardlab.plugins.manager_check import ManagerCheckReport, check_manager
from rewardlab.plugins.manager_steps import joint_arrays, joint_order, trajectory_steps
from rewardlab.plugins.managers import load_manager, manager_items, run_trials

ROOT = Path(__file__).resolve().parents[1]
GLOBAL = ROOT / "examples" / "managers" / "el_farol_global.py"
DIFFERENCE = ROOT / "examples" / "managers" / "el_farol_difference.py"

fork = pytest.mark.skipif(not isolation.AVAILABLE, reason="needs os.fork")


def write(tmp_path, name, text):
    path = tmp_path / f"{name}.py"
    path.write_text(textwrap.dedent(text))
    return path


def manager(tmp_path, name, get_reward, *, reset="pass", init="pass", header=""):
    """A manager file whose get_reward body is ``get_reward`` (agent, state, joint_action in scope)."""
    return write(tmp_path, name, header + "\n\nclass RewardManager:\n    def __init__(self):\n"
                 + textwrap.indent(textwrap.dedent(init), "        ") + "\n\n    def reset(self):\n"
                 + textwrap.indent(textwrap.dedent(reset), "        ")
                 + "\n\n    def get_reward(self, agent, state, joint_action):\n"
                 + textwrap.indent(textwrap.dedent(get_reward), "        ") + "\n")


def small_bar(episodes=3, weeks=4, seed=0):
    return simulate_bar(SMALL, episodes=episodes, weeks=weeks, seed=seed)


# --- the El Farol managers against the vectorized rewards, bit for bit -------------------------------------------


@pytest.mark.parametrize("isolate", [pytest.param(True, marks=fork), False])
def test_el_farol_managers_equal_the_vectorized_rewards(isolate):
    actions = simulate_actions(SMALL, episodes=4, weeks=9, seed=7)
    frame = simulate_bar(SMALL, episodes=4, weeks=9, seed=7)
    out = apply_plugins(frame, [GLOBAL, DIFFERENCE], isolate=isolate).sort("episode_id", "t", "agent_id")
    flat = actions.reshape(-1, SMALL.agents)
    g = np.repeat(global_reward(flat, **SMALL.reward_options()), SMALL.agents)
    d = difference_reward(flat, **SMALL.reward_options()).ravel()
    assert out["reward_el_farol_global"].dtype == pl.Float64
    assert np.array_equal(out["reward_el_farol_global"].to_numpy(), g)  # frame rows are (episode, t, agent)
    assert np.array_equal(out["reward_el_farol_difference"].to_numpy(), d)
    last = out["truncated"].to_numpy()  # PRLT's bar manager never finishes: done only at the data's end
    assert np.array_equal(out["done_el_farol_global"].to_numpy(), last)


@fork
def test_a_shuffled_frame_and_a_loaded_step_table_give_the_same_rewards(tmp_path):
    frame = small_bar(episodes=2, weeks=5, seed=3)
    reference = apply_plugins(frame, DIFFERENCE).sort("episode_id", "t", "agent_id")["reward_el_farol_difference"]
    reference = reference.to_numpy()
    rng = np.random.default_rng(0)
    # rows of an episode in any order (episodes still contiguous): the runner orders them by step and agent id
    shuffled = pl.concat([part.sample(fraction=1.0, shuffle=True, seed=int(rng.integers(1000)))
                          for part in frame.partition_by("episode_id", maintain_order=True)])
    out = apply_plugins(shuffled, DIFFERENCE).sort("episode_id", "t", "agent_id")
    assert np.array_equal(out["reward_el_farol_difference"].to_numpy(), reference)
    path = tmp_path / "bar.parquet"
    frame.write_parquet(path)
    loaded = rewardlab.load(path)  # the steps source keys each agent's trajectory; a trial is the episode
    out = apply_plugins(loaded, DIFFERENCE).sort("episode_id", "t", "agent_id")
    assert np.array_equal(out["reward_el_farol_difference"].to_numpy(), reference)


# --- the calling protocol against a plain loop ------------------------------------------------------------------


RECORDER = """\
class RewardManager:
    def __init__(self):
        self.log = []

    def reset(self):
        self.log.append(("reset",))

    def get_reward(self, agent, state, joint_action):
        self.log.append(("call", agent, {k: v.tolist() for k, v in state.items()}, joint_action.tolist()))
        return float(agent), False
"""


def test_calls_follow_prlt_order_with_state_and_joint_action_in_agent_order(tmp_path):
    rng = np.random.default_rng(5)
    ids = [10, 3, 7]
    rows = [(e, t, a) for e in (4, 1) for t in range(3) for a in ids]
    order = rng.permutation(len(rows))
    rows = [rows[i] for i in order]
    rows.sort(key=lambda r: r[0] != 4)  # episodes contiguous (4 first), rows inside shuffled
    frame = pl.DataFrame({"episode_id": [r[0] for r in rows], "t": [r[1] for r in rows],
                          "agent_id": [r[2] for r in rows],
                          "action": [r[0] * 100 + r[1] * 10 + r[2] for r in rows],
                          "obs": [float(r[2]) / 2 + r[1] for r in rows],
                          "pos": [[r[2], -r[1]] for r in rows]})
    plugin = load_manager(write(tmp_path, "recorder", RECORDER))
    rewards, finished, instance = run_trials(plugin, joint_arrays(frame))
    expected = []
    for e in (4, 1):  # the plain loop: trial by trial, step by step, agents by ascending id
        expected.append(("reset",))
        for t in range(3):
            agents = sorted(ids)
            joint = [e * 100 + t * 10 + a for a in agents]
            state = {"obs": [a / 2 + t for a in agents], "pos": [[a, -t] for a in agents]}
            expected += [("call", i, state, joint) for i in range(len(agents))]
    assert instance.log == expected
    assert rewards.tolist() == [0.0, 1.0, 2.0] * 6 and not finished.any()


def test_state_arrays_and_joint_action_are_read_only(tmp_path):
    path = manager(tmp_path, "writer", "joint_action[0] = 1\nreturn 0.0, False")
    with pytest.raises(PluginRuntimeError, match=r"get_reward raised ValueError.*episode_id=0, step t=0, agent "
                       r"agent_id=0 \(position 0 of 50\)"):
        apply_plugins(small_bar(), path, isolate=False)


def test_finished_early_marks_done_and_the_last_step_is_always_done(tmp_path):
    path = manager(tmp_path, "ends", "return 1.0, bool(joint_action.sum() >= 0) and self.t == 1",
                   init="self.t = -1", reset="self.t = -1",
                   header="")
    path.write_text(path.read_text().replace("    def get_reward(self, agent, state, joint_action):\n",
                                             "    def get_reward(self, agent, state, joint_action):\n"
                                             "        self.t += agent == 0\n"))
    frame = small_bar(episodes=2, weeks=4)
    out = apply_plugins(frame, path, isolate=False)
    expected = (frame["t"] == 1) | frame["truncated"]
    assert out["done_ends"].to_list() == expected.to_list()


# --- the joint order and bad layouts --------------------------------------------------------------------------------


def test_joint_order_matches_a_sort_and_blocks():
    rng = np.random.default_rng(1)
    for _ in range(30):
        episodes = rng.integers(1, 4)
        ep, st, ag = [], [], []
        for e in rng.permutation(10)[:episodes]:
            agents = rng.permutation(20)[:rng.integers(1, 5)]
            block = [(e, t, a) for t in rng.permutation(6)[:rng.integers(1, 4)] for a in agents]
            for i in rng.permutation(len(block)):
                ep.append(block[i][0]), st.append(block[i][1]), ag.append(block[i][2])
        steps = joint_order(np.array(ep), np.array(st), np.array(ag))
        firsts = list(dict.fromkeys(ep))
        expected = sorted(range(len(ep)), key=lambda i: (firsts.index(ep[i]), st[i], ag[i]))
        assert steps.order.tolist() == expected
        sizes = [(len({a for e2, a in zip(ep, ag) if e2 == e}), len({t for e2, t in zip(ep, st) if e2 == e}))
                 for e in firsts]
        assert list(zip(steps.agents.tolist(), steps.steps.tolist())) == sizes
        assert steps.starts.tolist() == np.cumsum([0] + [a * t for a, t in sizes]).tolist()


def joint_order_loop(episode, step, agent):
    """:func:`joint_order`'s rules by a plain loop: ``(order, agents, steps)`` or ``(episode, step, agent, rule)``."""
    runs, seen = [], []
    for i, e in enumerate(episode):
        if not runs or episode[runs[-1][-1]] != e:
            if e in seen:
                return (f"episode {e}", step[i], agent[i], "split")
            seen.append(e)
            runs.append([])
        runs[-1].append(i)
    order = [i for rows in runs for i in sorted(rows, key=lambda i: (step[i], agent[i]))]
    keys = [(r, step[i], agent[i]) for r, rows in enumerate(runs)
            for i in sorted(rows, key=lambda i: (step[i], agent[i]))]
    for k in range(1, len(keys)):
        if keys[k] == keys[k - 1]:
            return (f"episode {episode[runs[keys[k][0]][0]]}", keys[k][1], keys[k][2], "duplicate")
    agents, steps = [], []
    for r, rows in enumerate(runs):
        groups = {}
        for i in rows:
            groups.setdefault(step[i], []).append(agent[i])
        first = sorted(groups[min(groups)])
        for t in sorted(groups):
            here = sorted(groups[t])
            if here != first:
                missing = sorted(set(first) - set(here))
                who = missing[0] if missing else sorted(set(here) - set(first))[0]
                return (f"episode {episode[rows[0]]}", t, who, "missing" if missing else "joins")
        agents.append(len(first))
        steps.append(len(groups))
    return order, agents, steps


@pytest.mark.parametrize("shapes", ["one shape", "trials of different shapes"])
def test_trajectory_layout_is_transposed_as_the_plain_loop_orders_it(shapes):
    # each agent's trajectory together, agents ascending, the same steps for each agent of a trial (gaps and
    # offsets allowed): trajectory_steps transposes it, and gives what the plain loop gives
    rng = np.random.default_rng(5)
    checked = 0
    for _ in range(50):
        ep, st, ag = [], [], []
        uniform = (int(rng.integers(1, 5)), int(rng.integers(1, 6)))
        for e in rng.permutation(40)[:rng.integers(1, 8)]:
            a_count, s_count = uniform if shapes == "one shape" else (int(rng.integers(1, 5)), int(rng.integers(1, 6)))
            agents = np.sort(rng.permutation(20)[:a_count])
            steps = np.sort(rng.permutation(9)[:s_count]) + int(rng.integers(0, 3))
            for a in agents:
                for t in steps:
                    ep.append(e), st.append(t), ag.append(a)
        ep, st, ag = np.array(ep), np.array(st), np.array(ag)
        change = np.concatenate(([True], ep[1:] != ep[:-1]))
        direct = trajectory_steps(change, st, ag)
        assert direct is not None
        expected = joint_order_loop(ep.tolist(), st.tolist(), ag.tolist())
        for got in (direct, joint_order(ep, st, ag)):
            assert (got.order.tolist(), got.agents.tolist(), got.steps.tolist()) == expected
        # the rows on either side of a change of agent within a trial swapped: not the layout (the caller sorts)
        inside = np.flatnonzero(np.concatenate(([False], (ag[1:] != ag[:-1]) & ~change[1:])))
        if inside.size:
            i = int(inside[0])
            swapped = ag.copy()
            swapped[i - 1], swapped[i] = swapped[i], swapped[i - 1]
            assert trajectory_steps(change, st, swapped) is None
            checked += 1
    assert checked


@pytest.mark.parametrize("layout", ["joint", "trajectory", "trajectory, agents descending"])
def test_joint_order_refuses_what_a_plain_loop_refuses(layout):
    # joint order (a simulator's), each agent's trajectory together (a loaded step table's), or those with the
    # agents in another order: the three ways joint_order orders rows (none, a transpose, the lexsort)
    rng = np.random.default_rng(11)
    rules = {"split": "split", "duplicate": "two rows", "missing": "missing", "joins": "joins"}
    seen = set()
    agent_order = (5, 2, 0) if "descending" in layout else (0, 2, 5)
    for _ in range(300):
        if layout == "joint":
            rows = [(e, t, a) for e in range(3) for t in range(3) for a in (0, 2, 5)]
        else:
            rows = [(e, t, a) for e in range(3) for a in agent_order for t in range(3)]
        for _ in range(rng.integers(0, 3)):
            k = int(rng.integers(len(rows)))
            kind = rng.integers(4)
            if kind == 0:
                rows.pop(k)
            elif kind == 1:
                rows.insert(int(rng.integers(len(rows))), rows[k])
            elif kind == 2:
                rows[k] = (rows[k][0], rows[k][1], int(rng.integers(7)))
            else:
                rows[k] = (rows[k][0], int(rng.integers(4)), rows[k][2])
        ep, st, ag = (np.array([r[j] for r in rows]) for j in range(3))
        expected = joint_order_loop(ep.tolist(), st.tolist(), ag.tolist())
        if len(expected) == 3:
            got = joint_order(ep, st, ag)
            assert (got.order.tolist(), got.agents.tolist(), got.steps.tolist()) == expected
            seen.add("ok")
            continue
        episode, t, who, rule = expected
        with pytest.raises(SpecError, match=rf"^{episode}, step {t}, agent {who}: .*{rules[rule]}"):
            joint_order(ep, st, ag)
        seen.add(rule)
    assert seen == {"ok", "split", "duplicate", "missing", "joins"}


@pytest.mark.parametrize("change, message", [
    (lambda f: f.filter(~((pl.col("episode_id") == 1) & (pl.col("t") == 2) & (pl.col("agent_id") == 7))),
     r"episode_id=1, step t=2, agent agent_id=7: the agent is missing at this step"),
    (lambda f: pl.concat([f, f.filter((pl.col("episode_id") == 1) & (pl.col("t") == 3) & (pl.col("agent_id") == 4))
                          ]).sort("episode_id", maintain_order=True),
     r"episode_id=1, step t=3, agent agent_id=4: two rows for this agent at this step"),
    (lambda f: f.with_columns(pl.when((pl.col("episode_id") == 2) & (pl.col("t") >= 1) & (pl.col("agent_id") == 9))
                              .then(99).otherwise(pl.col("agent_id")).alias("agent_id")),
     r"episode_id=2, step t=1, agent agent_id=9: the agent is missing"),
    (lambda f: pl.concat([f.filter(pl.col("t") < 2), f.filter(pl.col("t") >= 2)]),
     r"episode_id=0, step t=2, agent agent_id=0: the episode's rows are split"),
])
def test_bad_joint_frames_name_the_episode_step_and_agent(tmp_path, change, message):
    frame = change(small_bar(episodes=3, weeks=4))
    with pytest.raises(SpecError, match=message):
        apply_plugins(frame, GLOBAL, isolate=False)


def test_an_agent_joining_mid_episode_is_refused():
    with pytest.raises(SpecError, match=r"episode 5, step 1, agent 2: the agent joins the episode at this step"):
        joint_order([5, 5, 5, 5, 5], [0, 0, 1, 1, 1], [0, 1, 0, 1, 2])


def test_a_frame_without_the_joint_columns_is_refused(tmp_path, capsys):
    with pytest.raises(SpecError, match="runs on a joint frame .* no agent column 'agent_id'.* Name it with "
                       r"agent='COLUMN' when loading the table"):
        apply_plugins(small_bar().drop("agent_id"), GLOBAL, isolate=False)
    # a table with its own action column's name: no loader option names the action, so the remedy is a rename,
    # in the command's words as in Python's
    own = small_bar().rename({"action": "choice"})
    with pytest.raises(SpecError, match=r"no action column 'action' .* Rename the column holding each agent's "
                       r"action to 'action'"):
        apply_plugins(own, GLOBAL, isolate=False)
    table = tmp_path / "bar.csv"
    own.select("episode_id", "t", "agent_id", "choice", "terminated", "truncated").write_csv(table)
    assert main(["apply", str(table), "--plugin", str(GLOBAL), "--out", str(tmp_path / "r.parquet")]) == 2
    err = capsys.readouterr().err
    assert "no action column 'action'" in err and "Rename the column holding each agent's action to 'action'" in err


# --- recognition, loading, the registry --------------------------------------------------------------------------


def test_a_manager_file_is_recognised_by_its_class(tmp_path):
    assert claimed_contract({"RewardManager"}) is MANAGER and get_contract("manager") is MANAGER
    assert manager_items([GLOBAL, DIFFERENCE])[0][1] == "el_farol_global"
    plain = write(tmp_path, "plain", "def get_reward(data, contiguous):\n    pass\n")
    assert manager_items(plain) is None
    with pytest.raises(ParameterError, match="all reward managers or all get_reward plug-ins"):
        apply_plugins(small_bar(), [GLOBAL, plain], isolate=False)
    with pytest.raises(ParameterError, match="batch_mode"):
        apply_plugins(small_bar(), GLOBAL, batch_mode="shuffled", isolate=False)
    with pytest.raises(ParameterError, match="should not be named like a column"):
        apply_plugins(apply_plugins(small_bar(), GLOBAL, isolate=False), GLOBAL, isolate=False)
    again = apply_plugins(apply_plugins(small_bar(), GLOBAL, isolate=False), GLOBAL, isolate=False, replace=True)
    assert again.columns.count("reward_el_farol_global") == 1


@pytest.mark.parametrize("text, message", [
    ("RewardManager = 3\n", "`RewardManager` should be a class"),
    ("class RewardManager:\n    def reset(self):\n        pass\n", "defines no method `get_reward`"),
    ("class RewardManager:\n    def reset(self):\n        pass\n"
     "    def get_reward(self, agent):\n        return 0.0, False\n",
     r"`RewardManager.get_reward` should be `def get_reward\(self, agent, state, joint_action\)`"),
    ("class RewardManager:\n    def __init__(self, n):\n        pass\n", "RewardManager"),
])
def test_a_malformed_manager_fails_to_load(tmp_path, text, message):
    with pytest.raises(PluginLoadError, match=message):
        apply_plugins(small_bar(), write(tmp_path, "bad", text), isolate=False)


def test_check_returns_rules():
    assert check_returns([(1, np.True_), (np.float32(2.5), np.True_)], agents=2)[0].tolist() == [1.0, 2.5]
    assert check_returns([(True, False)], agents=1).rule == "reward_type"
    assert check_returns([(1.0, 0)], agents=1).rule == "finished_type"
    assert check_returns([(1.0, False), None], agents=1).index == 1
    assert check_returns([(1.0, False), [2.0, False]], agents=1)[0].tolist() == [1.0, 2.0]  # any pair is taken
    assert check_returns([(1.0, False), "abc"], agents=1).rule == "result_length"
    assert check_returns([(10 ** 400, False)], agents=1).rule == "reward_finite"
    assert check_returns([(1.0, False)] * 3 + [(1.0, True)], agents=2).index == 3


# --- hostile managers: each failure names the plug-in, episode, step and agent -----------------------------------


WHERE = r"episode_id=1, step t=2, agent agent_id=3 \(position 3 of 50\)"
AT = "if self.week == 2 and self.trial == 1 and agent == 3:\n    {}\nreturn 0.0, False"
COUNTERS = dict(init="self.trial = -1\nself.week = -1", reset="self.trial += 1\nself.week = -1")


def hostile(tmp_path, name, action, header=""):
    text = AT.format(action)
    path = manager(tmp_path, name, text, header=header, **COUNTERS)
    path.write_text(path.read_text().replace("    def get_reward(self, agent, state, joint_action):\n",
                                             "    def get_reward(self, agent, state, joint_action):\n"
                                             "        self.week += agent == 0\n"))
    return path


@pytest.mark.parametrize("isolate", [pytest.param(True, marks=fork), False])
@pytest.mark.parametrize("action, error, message", [
    ("raise KeyError('no night')", PluginRuntimeError, r"get_reward raised KeyError: 'no night' at " + WHERE),
    ("return 1.0, False, 'extra'", ContractError,
     r"get_reward returned a tuple of 3 items, not \(reward, finished\) at " + WHERE + r" \[rule: result_length"),
    ("return 1.0", ContractError, r"get_reward returned float 1.0, not a \(reward, finished\) tuple at " + WHERE),
    ("return float('nan'), False", ContractError, r"get_reward returned reward nan, not a finite number at " + WHERE),
    ("return 0.0, True", ContractError,
     r"get_reward returned finished True here but False for the step's first agent.* at "
     + WHERE + r" \[rule: finished_consistent"),
    ("sys.exit(3)", PluginRuntimeError, r"get_reward raised SystemExit: 3 at " + WHERE + r" \(it called sys.exit"),
])
def test_hostile_manager_errors_name_plugin_episode_step_and_agent(tmp_path, isolate, action, error, message):
    path = hostile(tmp_path, "hostile", action, header="import sys\n")
    with pytest.raises(error, match=r"plug-in 'hostile' \(.*hostile.py, line \d+\): " + message):
        apply_plugins(small_bar(episodes=3, weeks=4), path, isolate=isolate)


def test_string_agent_ids_are_named_as_they_are(tmp_path):
    # PettingZoo-style ids ('agent_1'): the message names the agent by its id, not by a NumPy scalar's
    frame = pl.DataFrame({"episode_id": [0] * 4, "t": [0, 1, 0, 1], "agent_id": ["agent_0", "agent_0", "agent_1",
                                                                               "agent_1"], "action": [1, 2, 3, 4]})
    path = manager(tmp_path, "strings", "if agent == 1:\n    return 1.0, False, 'extra'\nreturn 0.0, False")
    with pytest.raises(ContractError,
                       match=r"at episode_id=0, step t=0, agent agent_id='agent_1' \(position 1 of 2\)"):
        apply_plugins(frame, path, isolate=False)
    twice = pl.concat([frame, frame.tail(1)])  # agent_1 twice at step 1
    with pytest.raises(SpecError, match=r"episode_id=0, step t=1, agent agent_id='agent_1': two rows for this agent"):
        apply_plugins(twice, path, isolate=False)
    missing = frame.head(3)  # agent_1 missing at step 1
    with pytest.raises(SpecError, match=r"episode_id=0, step t=1, agent agent_id='agent_1': the agent is missing"):
        apply_plugins(missing, path, isolate=False)


@pytest.mark.parametrize("isolate", [pytest.param(True, marks=fork), False])
def test_a_reset_that_raises_names_the_trial(tmp_path, isolate):
    path = manager(tmp_path, "bad_reset", "return 0.0, False", init="self.n = 0",
                   reset="self.n += 1\nif self.n == 2:\n    raise RuntimeError('cannot reset')")
    with pytest.raises(PluginRuntimeError, match=r"plug-in 'bad_reset' .*reset\(\) raised RuntimeError: cannot reset "
                       r"at the start of trial episode_id=1, before step t=0 \(no agent called yet\)"):
        apply_plugins(small_bar(), path, isolate=isolate)


def test_a_constructor_that_raises_is_reported(tmp_path):
    path = manager(tmp_path, "bad_init", "return 0.0, False", init="raise ValueError('no setting')")
    with pytest.raises(PluginRuntimeError, match=r"RewardManager\(\) raised ValueError: no setting"):
        apply_plugins(small_bar(), path, isolate=False)


@fork
def test_a_manager_that_ends_its_process_is_reported_with_its_trial(tmp_path):
    path = hostile(tmp_path, "exits", "os._exit(4)", header="import os\n")
    with pytest.raises(PluginRuntimeError, match=r"plug-in 'exits' .*exit status 4.*trial episode_id=1"):
        apply_plugins(small_bar(), path)


@fork
def test_a_hanging_manager_times_out_with_its_stack(tmp_path):
    path = hostile(tmp_path, "hangs", "while True:\n        pass")
    with pytest.raises(PluginTimeoutError, match=r"plug-in 'hangs' .*did not finish within 1 s.*trial "
                       r"episode_id=1") as info:
        apply_plugins(small_bar(), path, timeout=1.0)
    assert "hangs.py" in (info.value.plugin_traceback or "")


# --- check-plugin: determinism and reset, never a false pass --------------------------------------------------------


@fork
def test_check_plugin_passes_the_el_farol_managers():
    for path in (GLOBAL, DIFFERENCE):
        report = check_plugin(small_bar(episodes=4, weeks=3), path)
        assert isinstance(report, ManagerCheckReport) and report.ok, str(report)
        assert len(report.runs) == 4 and "result: PASS" in str(report)


@pytest.mark.parametrize("name, body, reset, verdict", [
    ("counts_calls", "self.calls += 1\nreturn float(self.calls), False", "pass", "determinism: FAIL"),
    ("keeps_total", "self.total += joint_action.sum() * (agent == 0)\nreturn float(self.total), False",
     "self.week = 0", "reset: FAIL"),
])
def test_check_plugin_fails_a_manager_whose_reset_does_not_reset(tmp_path, name, body, reset, verdict):
    path = manager(tmp_path, name, body, init="self.calls = 0\nself.total = 0", reset=reset)
    report = check_plugin(small_bar(episodes=3, weeks=2), path, isolate=False)
    assert not report.ok and verdict in str(report) and "result: FAIL" in str(report)
    assert report.differences and "episode_id=" in str(report.differences[0])


def test_a_manager_that_passes_in_order_but_depends_on_order_fails(tmp_path):
    # it counts resets modulo the 3 trials: the same 3 trials again give the same rewards, another order does not
    path = manager(tmp_path, "counts_resets", "return float(self.resets % 3), False", init="self.resets = 0",
                   reset="self.resets += 1")
    report = check_plugin(small_bar(episodes=3, weeks=2), path, isolate=False)
    assert not report.ok
    assert "determinism: ok" in str(report) and "reset: FAIL" in str(report)


@fork
def test_check_plugin_reports_a_crash_as_failure(tmp_path):
    report = check_plugin(small_bar(), hostile(tmp_path, "nan", "return float('nan'), False"))
    assert not report.ok and "returned reward nan" in str(report) and "episode_id=1, step t=2" in str(report)
    report = check_plugin(small_bar(), hostile(tmp_path, "exits", "os._exit(4)", header="import os\n"))
    assert not report.ok and report.stopped and "trials in order" in report.stopped
    assert "exit status 4" in str(report)


def test_check_plugin_on_no_rows_is_not_a_pass():
    report = check_manager(small_bar().head(0), GLOBAL, isolate=False)
    assert not report.ok and report.transitions == 0


@fork
def test_the_cli_applies_and_checks_a_manager(tmp_path, capsys):
    data = tmp_path / "bar.parquet"
    small_bar().write_parquet(data)
    out = tmp_path / "rewards.parquet"
    assert main(["apply", str(data), "--plugin", str(DIFFERENCE), "--out", str(out)]) == 0
    table = pl.read_parquet(out).sort("episode_id", "t", "agent_id")
    reference = difference_reward(simulate_actions(SMALL, episodes=3, weeks=4, seed=0).reshape(-1, 50),
                                  **SMALL.reward_options()).ravel()
    assert np.array_equal(table["reward_el_farol_difference"].to_numpy(), reference)
    assert main(["check-plugin", "--data", str(data), str(GLOBAL)]) == 0
    assert "result: PASS" in capsys.readouterr().out
    bad = manager(tmp_path, "counts_calls", "self.calls += 1\nreturn float(self.calls), False", init="self.calls = 0")
    assert main(["check-plugin", "--data", str(data), str(bad)]) == 1
    assert "result: FAIL" in capsys.readouterr().out


def test_a_spec_names_the_trial_columns_and_state(tmp_path):
    frame = small_bar(episodes=2, weeks=2).rename({"episode_id": "game", "agent_id": "seat"}).with_columns(
        (pl.col("action") * 2).alias("bonus"))
    spec = FrameSpec(name="joint", episode=("game",), step="t", agent="seat", terminated="terminated",
                     truncated="truncated", columns=("action", "bonus"))
    path = manager(tmp_path, "bonus", "return float(state['bonus'][agent]) + float(joint_action[agent]), False")
    out = apply_plugins(frame, path, spec=spec, isolate=False)
    assert out["reward_bonus"].to_list() == (frame["action"] * 3).cast(pl.Float64).to_list()


@fork
def test_check_plugin_stops_a_hanging_manager_and_fails(tmp_path):
    report = check_plugin(small_bar(), hostile(tmp_path, "hangs", "while True:\n        pass"), timeout=1.0)
    assert not report.ok and "ran out of time" in report.stopped and "result: FAIL" in str(report)
    assert "trial episode_id=1" in str(report)


@fork
def test_a_keyboard_interrupt_raised_by_the_manager_is_its_failure(tmp_path):
    path = hostile(tmp_path, "interrupts", "raise KeyboardInterrupt")
    with pytest.raises(PluginRuntimeError, match=r"get_reward raised KeyboardInterrupt.* at " + WHERE):
        apply_plugins(small_bar(), path)


def test_trials_may_have_their_own_agents(tmp_path):
    # a manager sees each trial's agents; another trial may have other agents (and another count)
    frame = pl.DataFrame({"episode_id": [0, 0, 1, 1, 1], "t": [0, 0, 0, 0, 0], "agent_id": [2, 5, 1, 2, 9],
                          "action": [1, 2, 3, 4, 5]})
    path = manager(tmp_path, "width", "return float(joint_action.shape[0] * 10 + agent), False")
    out = apply_plugins(frame, path, isolate=False)
    assert out["reward_width"].to_list() == [20.0, 21.0, 30.0, 31.0, 32.0]


def test_check_plugin_reports_trials_finished_early_as_a_fact(tmp_path):
    path = manager(tmp_path, "ends_week_one", "self.week += agent == 0\nreturn 1.0, self.week == 1",
                   init="self.week = -1", reset="self.week = -1")
    report = check_plugin(small_bar(episodes=3, weeks=4), path, isolate=False)
    assert report.ok and report.finished_early == (3, "episode_id=0, step t=1, agent agent_id=0 (position 0 of 50)")
    assert "ended 3 of 3 trials before their last recorded step" in str(report)


# --- the runner's fast paths against the item-by-item checks and a plain loop -----------------------------------


class _Float(float):
    pass


def test_exact_type_fast_paths_agree_with_the_item_by_item_checks(monkeypatch):
    import rewardlab.contracts.manager as contract

    rng = np.random.default_rng(11)
    kinds = [lambda: float(rng.normal()), lambda: int(rng.integers(-5, 5)), lambda: np.float64(rng.normal()),
             lambda: np.float32(1.5), lambda: True, lambda: None, lambda: "1.0", lambda: float("nan"),
             lambda: float("inf"), lambda: 10 ** 400, lambda: _Float(2.5), lambda: [1.0]]
    flags = [lambda: False, lambda: True, lambda: np.False_, lambda: np.True_, lambda: 0, lambda: 1.0, lambda: None]
    cases = []
    for _ in range(400):
        n = int(rng.integers(0, 13))
        common = rng.random() < 0.7  # mostly the common case (exact floats, exact bools) with a few odd items
        rewards = [float(rng.normal()) if common and rng.random() < 0.9 else kinds[rng.integers(len(kinds))]()
                   for _ in range(n)]
        finished = [bool(rng.random() < 0.2) if common and rng.random() < 0.9 else flags[rng.integers(len(flags))]()
                    for _ in range(n)]
        cases.append((rewards, finished, int(rng.choice([1, n or 1]))))
    cases += [([1.5] * 6, [True] * 6, 3), ([1.5] * 6, [False] * 3 + [True] * 3, 3), ([0.0] * 2, [False, 0], 1)]

    def results():
        out = []
        for rewards, finished, agents in cases:
            if len(rewards) % agents:
                agents = 1
            got = contract.check_pairs(list(rewards), list(finished), agents=agents)
            out.append(got if isinstance(got, contract.ManagerViolation) else
                       (got[0].tobytes(), got[0].dtype, got[1].tolist(), got[1].dtype))
        return out

    fast = results()
    monkeypatch.setattr(contract, "exact_floats", lambda values: None)
    monkeypatch.setattr(contract, "exact_bools", lambda values: None)
    assert fast == results()
    assert sum(not isinstance(r, contract.ManagerViolation) for r in fast) > 50  # both kinds of result were met


def test_exact_floats_and_bools_refuse_anything_else():
    from rewardlab.contracts.manager import exact_bools, exact_floats

    assert exact_floats([0.5, -0.0, 1e300]).tolist() == [0.5, -0.0, 1e300]
    for other in (1, True, np.float64(1.0), _Float(1.0), None, "g" * 8, b"g" * 8, [1.0], (1.0,)):
        assert exact_floats([1.0, other, 2.0]) is None, other
    assert exact_bools([True, False, True]).tolist() == [True, False, True]
    for other in (0, 1, np.True_, None, 0.0, b"T", "F"):
        assert exact_bools([False, other]) is None, other


def test_each_step_gets_a_fresh_state_dict_of_its_own_rows(tmp_path):
    rows = [(e, t, a) for e in range(2) for t in range(3) for a in range(2)]
    frame = pl.DataFrame({"episode_id": [r[0] for r in rows], "t": [r[1] for r in rows],
                          "agent_id": [r[2] for r in rows], "action": [0] * len(rows),
                          "obs": [10.0 * r[0] + r[1] + r[2] / 10 for r in rows]})
    # the manager writes into the dict it gets: a later step must not see it
    path = manager(tmp_path, "scribbler", "seen = 'mark' in state\nstate['mark'] = 1\n"
                   "return float(state['obs'][agent]) + (100.0 if seen and agent == 0 else 0.0), False")
    rewards, _, _ = run_trials(load_manager(path), joint_arrays(frame))
    expected = [10.0 * e + t + a / 10 for e, t, a in rows]  # the plain loop: a fresh dict per step
    assert rewards.tolist() == expected


# --- the comparison board: manager files are candidates on a joint frame ------------------------------------------


def test_the_board_compares_managers_on_a_joint_frame_per_agent_episode(tmp_path):
    from rewardlab.sessions.comparison import ComparisonSession

    actions = simulate_actions(SMALL, episodes=3, weeks=4, seed=9)
    frame = simulate_bar(SMALL, episodes=3, weeks=4, seed=9)  # joint order: (episode, week, agent)
    session = ComparisonSession(frame, [DIFFERENCE])
    assert session.add_plugin(GLOBAL) == "el_farol_global"  # a manager file added to the board
    returns = session.results.returns.sort("episode_id", "agent_id")
    # the reference: each agent's episode return, summed from the vectorized rewards [episodes, weeks, agents]
    d = difference_reward(actions.reshape(-1, SMALL.agents), **SMALL.reward_options()).reshape(3, 4, SMALL.agents)
    g = global_reward(actions.reshape(-1, SMALL.agents), **SMALL.reward_options()).reshape(3, 4)
    assert returns.height == 3 * SMALL.agents
    assert np.allclose(returns["el_farol_difference"].to_numpy(), d.sum(axis=1).ravel(), rtol=0, atol=1e-12)
    assert np.allclose(returns["el_farol_global"].to_numpy(), np.repeat(g.sum(axis=1), SMALL.agents), rtol=0,
                       atol=1e-12)
    assert session.results.comparison.episodes == 3 * SMALL.agents


def test_trajectory_order_keeps_rows_and_makes_agents_episodes_contiguous():
    from rewardlab.plugins.manager_steps import trajectory_order
    from rewardlab.sources.registry import spec_of

    frame = simulate_bar(SMALL, episodes=3, weeks=4, seed=1)
    spec = spec_of(frame)
    ordered = trajectory_order(frame, spec)
    expected = frame.sort("episode_id", "agent_id", "t")  # ids ascend here, so a plain sort is the reference
    assert ordered.equals(expected)
    assert trajectory_order(ordered, spec) is ordered  # already contiguous: as it is
    out_joint = apply_plugins(frame, DIFFERENCE, isolate=False).sort("episode_id", "agent_id", "t")
    out_ordered = apply_plugins(ordered, DIFFERENCE, isolate=False)
    assert out_joint.equals(out_ordered)  # the manager's rewards do not depend on the row order
