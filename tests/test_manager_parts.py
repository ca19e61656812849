"""Reward managers over a dataset folder (issue 25): part by part, equal to the whole frame bit for bit.

The reference is :func:`rewardlab.plugins.managers.apply_managers` on the
parts concatenated (the in-memory path), and for the El Farol managers the
vectorized rewards of ``rewardlab.domains.el_farol``.  Part sizes are chosen
so that trials span parts (a step table's parts are cut at one agent's
trajectory, not at a trial).
"""

from __future__ import annotations

import textwrap
from pathlib import Path

import numpy as np
import polars as pl
import pytest

from rewardlab.cli import main
from rewardlab.core.errors import ContractError, ParameterError, PluginRuntimeError, PluginTimeoutError, SpecError
from rewardlab.domains.el_farol import SMALL, difference_reward, simulate_actions, simulate_bar
from rewardlab.plugins import isolation
from rewardlab.plugins.apply_parts import apply_to_dataset
from rewardlab.plugins.manager_parts import trial_chunks
from rewardlab.plugins.managers import apply_managers
from rewardlab.sources.datasets import PartedDataset
from rewardlab.sources.datasets.convert import convert_to_parts

ROOT = Path(__file__).resolve().parents[1]
MANAGERS = [ROOT / "examples" / "managers" / "el_farol_difference.py",
            ROOT / "examples" / "managers" / "el_farol_global.py"]
COLUMNS = ["reward_el_farol_difference", "done_el_farol_difference", "reward_el_farol_global",
           "done_el_farol_global"]
fork = pytest.mark.skipif(not isolation.AVAILABLE, reason="needs os.fork")

# a manager that keeps a count across trials and reads a state column: any change of call order or of the
# object between parts shows in its rewards
COUNTING = """\
class RewardManager:
    def __init__(self):
        self.calls = 0
        self.trials = 0

    def reset(self):
        self.trials += 1

    def get_reward(self, agent, state, joint_action):
        self.calls += 1
        return float(self.calls * 1000 + self.trials) + float(state["score"][agent]), False
"""


def folder(tmp_path, frame, part_rows, name="folder"):
    source = tmp_path / f"{name}.parquet"
    frame.write_parquet(source)
    convert_to_parts(source, tmp_path / name, part_rows=part_rows, progress=False)
    return PartedDataset(tmp_path / name)


def whole(ds):
    return pl.concat([ds.read(i) for i in range(len(ds))])


def written(manifest, out):
    return pl.concat([pl.read_parquet(Path(out) / p.name) for p in manifest.parts])


def same_bits(a: pl.Series, b: pl.Series) -> bool:
    return a.dtype == b.dtype and a.to_numpy().tobytes() == b.to_numpy().tobytes()


@pytest.mark.parametrize("isolate", [pytest.param(True, marks=fork), False])
@pytest.mark.parametrize("part_rows", [130, 250, 400, 10_000])
def test_managers_over_parts_equal_the_whole_frame_bit_for_bit(tmp_path, isolate, part_rows):
    frame = simulate_bar(SMALL, episodes=6, weeks=5, seed=1)
    ds = folder(tmp_path, frame, part_rows)
    manifest = apply_to_dataset(ds.folder, MANAGERS, tmp_path / "out", isolate=isolate)
    got = written(manifest, tmp_path / "out")
    expected = apply_managers(whole(ds), MANAGERS, spec=ds.spec, isolate=False)
    assert [p.rows for p in manifest.parts] == [p.rows for p in ds.manifest.parts]  # the input's parts, row for row
    assert got.select(ds.spec.episode + ("t",)).equals(expected.select(ds.spec.episode + ("t",)))
    for column in COLUMNS:
        assert same_bits(got[column], expected[column]), column
    # and against the vectorized difference reward, row by row (an independent reference)
    actions = simulate_actions(SMALL, episodes=6, weeks=5, seed=1)
    d = difference_reward(actions.reshape(-1, SMALL.agents), **SMALL.reward_options())
    by_row = {(e, t, a): d[e * 5 + t, a] for e in range(6) for t in range(5) for a in range(SMALL.agents)}
    keys = zip(got["episode_id"].to_list(), got["t"].to_list(), got["agent_id"].to_list())
    assert got["reward_el_farol_difference"].to_list() == [by_row[k] for k in keys]


def test_trials_spanning_parts_are_fed_whole_and_one_object_runs_them_in_order(tmp_path):
    rng = np.random.default_rng(3)
    rows = [(e, t, a) for e in range(5) for t in range(4) for a in range(3)]
    frame = pl.DataFrame({"episode_id": [r[0] for r in rows], "t": [r[1] for r in rows],
                          "agent_id": [r[2] for r in rows], "action": rng.integers(0, 4, len(rows)),
                          "score": rng.normal(size=len(rows)),
                          "terminated": [False] * len(rows), "truncated": [r[1] == 3 for r in rows]})
    ds = folder(tmp_path, frame, 8)  # two agents' trajectories a part: every trial spans two parts
    chunks = list(trial_chunks(ds, range(len(ds))))
    assert sum(len(c.rows) for c in chunks) == len(ds) and max(len(c.rows) for c in chunks) >= 2
    assert sorted(k for c in chunks for k in c.positions) == list(range(len(ds)))
    path = tmp_path / "counting.py"
    path.write_text(COUNTING)
    manifest = apply_to_dataset(ds.folder, path, tmp_path / "out", isolate=False)
    got = written(manifest, tmp_path / "out")
    expected = apply_managers(whole(ds), path, spec=ds.spec, isolate=False)
    assert same_bits(got["reward_counting"], expected["reward_counting"])
    assert same_bits(got["done_counting"], expected["done_counting"])
    assert got["reward_counting"].max() > 60_000  # one object: its count runs across every part


class Parts:
    """A dataset folder's reading side over frames in memory (what trial_chunks reads), to lay out bad parts."""

    def __init__(self, frames, spec):
        self.frames, self.spec = frames, spec
        self.paths = [f"part-{i:06d}.parquet" for i in range(len(frames))]
        self.part_indexes = tuple(range(len(frames)))
        self.all_columns = tuple(frames[0].columns)

    def read(self, index):
        return self.frames[index]


def test_a_trial_that_comes_back_in_a_later_part_is_refused(tmp_path):
    frame = simulate_bar(SMALL, episodes=3, weeks=2, seed=0)
    ds = folder(tmp_path, frame, 100)
    parts = [ds.read(i) for i in range(len(ds))]
    assert len(parts) == 3 and all(p["episode_id"].n_unique() == 1 for p in parts)
    # episode 0, then 1, then 0 again: one trial split by another, which the whole frame refuses too
    again = parts[0].with_columns(pl.col("t") + 10)
    with pytest.raises(SpecError, match=r"split by another episode"):
        apply_managers(pl.concat([parts[0], parts[1], again]), MANAGERS[0], spec=ds.spec, isolate=False)
    chunks = trial_chunks(Parts([parts[0], parts[1], again], ds.spec), range(3))
    assert next(chunks).rows == (100,) and next(chunks).rows == (100,)
    with pytest.raises(SpecError, match=r"episode_id=0, step t=10, agent agent_id=0: the episode's rows are split "
                       r"by another episode's .*it comes back at row 0 of part 2: part-000002\.parquet"):
        next(chunks)
    # a part whose rows are no joint steps names the parts it was read with
    broken = parts[1].filter(~((pl.col("agent_id") == 7) & (pl.col("t") == 1)))
    with pytest.raises(SpecError, match=r"episode_id=1, step t=1, agent agent_id=7: the agent is missing.*"
                       r"\(in part 1: part-000001\.parquet; rows count from the first\)"):
        list(trial_chunks(Parts([parts[0], broken], ds.spec), range(2)))


@pytest.mark.parametrize("isolate", [pytest.param(True, marks=fork), False])
def test_a_failing_manager_names_the_episode_step_agent_and_part(tmp_path, isolate):
    ds = folder(tmp_path, simulate_bar(SMALL, episodes=3, weeks=4, seed=0), 150)
    path = tmp_path / "bad.py"
    path.write_text(textwrap.dedent("""\
        class RewardManager:
            def __init__(self):
                self.trial = -1

            def reset(self):
                self.trial += 1

            def get_reward(self, agent, state, joint_action):
                if self.trial == 1 and agent == 3:
                    raise KeyError("no night")
                return 0.0, False
        """))
    with pytest.raises(PluginRuntimeError, match=r"get_reward raised KeyError: 'no night' at episode_id=1 "
                       r"\(part \d: .*part-00000\d\.parquet\), step t=0, agent agent_id=3 \(position 3 of 50\)"):
        apply_to_dataset(ds.folder, path, tmp_path / "out", isolate=isolate)
    assert not (tmp_path / "out").exists()  # nothing written


def test_a_bad_return_is_a_contract_error(tmp_path):
    ds = folder(tmp_path, simulate_bar(SMALL, episodes=2, weeks=3, seed=0), 100)
    path = tmp_path / "none.py"
    path.write_text("class RewardManager:\n    def reset(self):\n        pass\n\n"
                    "    def get_reward(self, agent, state, joint_action):\n        return None\n")
    with pytest.raises(ContractError, match=r"returned NoneType None, not a \(reward, finished\) tuple at "
                       r"episode_id=0 \(part 0"):
        apply_to_dataset(ds.folder, path, tmp_path / "out", isolate=False)


@pytest.mark.parametrize("option, value", [("batch_mode", "sequential"), ("batch_size", 8),
                                           ("contiguous", True), ("resume", True)])
def test_options_a_manager_has_no_use_for_are_refused(tmp_path, option, value):
    ds = folder(tmp_path, simulate_bar(SMALL, episodes=2, weeks=3, seed=0), 100)
    with pytest.raises(ParameterError, match=option if option != "batch_size" and option != "contiguous"
                       else "batch_mode"):
        apply_to_dataset(ds.folder, MANAGERS[0], tmp_path / "out", **{option: value})


def test_managers_and_plugins_are_not_mixed(tmp_path):
    ds = folder(tmp_path, simulate_bar(SMALL, episodes=2, weeks=3, seed=0), 100)
    plain = tmp_path / "plain.py"
    plain.write_text("def get_reward(data, contiguous):\n    return data['next', 'reward']\n")
    with pytest.raises(ParameterError, match="all reward managers or all get_reward plug-ins"):
        apply_to_dataset(ds.folder, [MANAGERS[0], plain], tmp_path / "out")


@fork
def test_the_cli_applies_a_manager_to_a_folder(tmp_path, capsys):
    frame = simulate_bar(SMALL, episodes=4, weeks=3, seed=2)
    ds = folder(tmp_path, frame, 200)
    out = tmp_path / "rewards"
    assert main(["apply", str(ds.folder), "--plugin", str(MANAGERS[0]), "--out", str(out)]) == 0
    assert "wrote" in capsys.readouterr().out
    rewards = PartedDataset(out)
    got = pl.concat([rewards.read(i) for i in range(len(rewards))])
    expected = apply_managers(whole(ds), MANAGERS[0], spec=ds.spec, isolate=False)
    assert same_bits(got["reward_el_farol_difference"], expected["reward_el_farol_difference"])


@fork
def test_a_hanging_manager_times_out_naming_its_trial_and_part(tmp_path):
    ds = folder(tmp_path, simulate_bar(SMALL, episodes=2, weeks=2, seed=0), 100)
    path = tmp_path / "hang.py"
    path.write_text("import time\n\n\nclass RewardManager:\n    def reset(self):\n        pass\n\n"
                    "    def get_reward(self, agent, state, joint_action):\n        time.sleep(100)\n"
                    "        return 0.0, False\n")
    with pytest.raises(PluginTimeoutError, match=r"did not finish within 1 s while running plug-in 'hang': trial "
                       r"episode_id=0 \(part 0: .*part-000000\.parquet\)"):
        apply_to_dataset(ds.folder, path, tmp_path / "out", timeout=1)
    assert not (tmp_path / "out").exists() and not list(tmp_path.glob("out*"))
