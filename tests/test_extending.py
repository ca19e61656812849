"""A new source and a new contract are one module each, registered from outside rewardlab.

The module below is written into a temporary folder and imported from there:
it declares a toy trajectory format (``#toy`` text files: a robot's position
on a grid per tick) with its :class:`~rewardlab.core.spec.FrameSpec`, and a
toy plug-in contract (entry point ``reward_fn(data)``, one argument, its own
TensorDict keys and done rule).  The whole pipeline then runs on it through
rewardlab's public entry points, with no change to rewardlab's modules:
load (format detected), convert to a dataset and reopen, apply plug-ins in
every batch mode, check-plugin (in a child process), statistics, returns,
comparison, a normalization session, a plot, and the CLI.
"""

from __future__ import annotations

import importlib.util
import sys
import textwrap

import matplotlib
import numpy as np
import polars as pl
import pytest

import rewardlab
from rewardlab.cli import main
from rewardlab.contracts import registry as contracts_registry
from rewardlab.core.spec import attached
from rewardlab.core.errors import ContractError, SpecError
from rewardlab.plugins.batch_modes import BATCH_MODES
from rewardlab.sessions import NormalizationSession
from rewardlab.sources import registry as sources_registry

matplotlib.use("Agg")

TOY_MODULE = '''
"""A toy source and a toy contract, defined outside rewardlab."""
import numpy as np
import polars as pl
import torch
from tensordict import TensorDict

from rewardlab.contracts.checks import Violation, check_done_form
from rewardlab.contracts import Contract, register_contract
from rewardlab.core.rows import RowArrays
from rewardlab.core.spec import FrameSpec, StateColumn, attach
from rewardlab.sources.registry import Source, register_source

SPEC = FrameSpec(name="toy", episode=("run",), step="tick", terminated="over", truncated="cut",
                 states=(StateColumn("pos", 2, "float32", -1.0),), columns=("move",), contract="toy")


def load(paths):
    rows = []
    for path in paths:
        for number, line in enumerate(path.read_text().splitlines(), 1):
            if line.startswith("#") or not line.strip():
                continue
            run, tick, x, y, move, end = line.split()
            rows.append((int(run), int(tick), [float(x), float(y)], int(move), end == "over", end == "cut"))
    frame = pl.DataFrame(rows, schema={"run": pl.Int32, "tick": pl.Int32, "pos": pl.Array(pl.Float32, 2),
                                       "move": pl.Int8, "over": pl.Boolean, "cut": pl.Boolean},
                         orient="row")
    return attach(frame, SPEC)


def sniff(path):
    with open(path, "rb") as f:
        return f.read(4) == b"#toy"


class ToyArrays(RowArrays):
    row_fields = ("pos", "move", "ends")

    def __init__(self, frame, spec):
        spec.validate(frame)
        self.n = frame.height
        self.pos = frame["pos"].to_numpy().astype(np.float32)
        self.move = frame["move"].to_numpy().astype(np.int64)
        self.ends = (frame["over"] | frame["cut"]).to_numpy()

    def tensordict(self, rows=None):
        rows = np.arange(self.n)[slice(None) if rows is None else rows]
        nxt = np.minimum(rows + 1, self.n - 1)
        ends = self.ends[rows]
        following = np.where(ends[:, None], np.float32(-1.0), self.pos[nxt])
        return TensorDict({"pos": torch.from_numpy(self.pos[rows].copy()),
                           "move": torch.from_numpy(self.move[rows].copy()),
                           "next": {"pos": torch.from_numpy(following),
                                    "done": torch.from_numpy(ends.copy())}},
                          batch_size=[rows.size])


class ToyContract(Contract):
    name = "toy"
    entry_point = "reward_fn"
    parameters = ("data",)
    description = "toy robots: reward_fn(data) on pos, move, (next, pos)"

    def arrays(self, frame, spec):
        return ToyArrays(frame, spec)

    def in_keys(self, arrays):
        return ("pos", "move", ("next", "pos"))

    def episode_flags(self, arrays):
        return arrays.ends

    def done_flags(self, arrays, rows):
        return (np.ascontiguousarray(arrays.ends[rows]),)

    def check_done(self, done, ends):
        bad = check_done_form(done, int(ends.shape[0]))
        if bad is not None:
            return bad
        if not torch.equal(done, torch.from_numpy(ends)):
            row = int(np.argmax(done.numpy() != ends))
            return Violation("done_changed", "the toy contract's done may not change", row)
        return None


register_source(Source(name="toy", spec=SPEC, load=load, suffixes=(".toy",), sniff=sniff,
                       description="toy robot runs (#toy text)"), replace=True)
register_contract(ToyContract(), replace=True)
'''

DISTANCE = '''
import torch

def reward_fn(data):
    step = data["next", "pos"] - data["pos"]
    moved = torch.where(data["next", "done"], torch.zeros(()), step.abs().sum(-1))
    data["next", "reward"] = moved.to(torch.float64)
'''

GOAL = '''
import torch

def reward_fn(data):
    data["next", "reward"] = torch.where(data["next", "done"], 1.0, -0.01).to(torch.float32)
'''

BROKEN = '''
def reward_fn(data):
    data["next", "reward"] = data["pos"][:, 0].double()
    data["pos"][:, 0] = 0.0
'''


def toy_text(seed: int = 0, runs: int = 30) -> str:
    rng = np.random.default_rng(seed)
    lines = ["#toy v1"]
    for run in range(runs):
        length = int(rng.integers(1, 12))
        x, y = 0.0, 0.0
        for tick in range(length):
            move = int(rng.integers(0, 4))
            end = "-" if tick < length - 1 else ("over" if rng.random() < 0.6 else "cut")
            lines.append(f"{run} {tick} {x} {y} {move} {end}")
            x, y = x + (move == 0) - (move == 1), y + (move == 2) - (move == 3)
    return "\n".join(lines) + "\n"


@pytest.fixture
def toy(tmp_path):
    """Import the toy module from a temporary folder; unregister its source and contract afterwards."""
    module_path = tmp_path / "toy_robots.py"
    module_path.write_text(textwrap.dedent(TOY_MODULE))
    spec = importlib.util.spec_from_file_location("toy_robots", module_path)
    module = importlib.util.module_from_spec(spec)
    sys.modules["toy_robots"] = module
    spec.loader.exec_module(module)
    data = tmp_path / "runs.txt"  # no .toy suffix: found by content
    data.write_text(toy_text())
    plugins = {}
    for name, text in (("distance", DISTANCE), ("goal", GOAL), ("broken", BROKEN)):
        plugins[name] = tmp_path / f"{name}.py"
        plugins[name].write_text(textwrap.dedent(text))
    yield module, data, plugins
    sources_registry.unregister_source("toy")
    contracts_registry.unregister_contract("toy")
    sys.modules.pop("toy_robots", None)


def reference_rewards(frame: pl.DataFrame) -> tuple[np.ndarray, np.ndarray]:
    """The two plug-ins' rewards by a plain loop over rows."""
    pos = frame["pos"].to_list()
    ends = (frame["over"] | frame["cut"]).to_list()
    distance, goal = [], []
    for i in range(frame.height):
        if ends[i]:
            distance.append(0.0)
            goal.append(1.0)
        else:
            distance.append(abs(pos[i + 1][0] - pos[i][0]) + abs(pos[i + 1][1] - pos[i][1]))
            goal.append(np.float32(-0.01))
    return np.array(distance), np.array(goal, dtype=np.float64)


def test_a_registered_source_and_contract_run_the_whole_pipeline(toy, tmp_path):
    module, data, plugins = toy
    frame = rewardlab.load(data)
    assert attached(frame) == module.SPEC
    # convert to a dataset and reopen it with its spec
    dataset = tmp_path / "runs.parquet"
    rewardlab.convert(data, dataset)
    again = rewardlab.load(dataset)
    assert attached(again) == module.SPEC and again.equals(frame)

    # apply: the toy contract's entry point, in every batch mode, equal to a plain loop
    distance, goal = reference_rewards(frame)
    for mode in BATCH_MODES:
        out = rewardlab.apply_plugins(frame, [plugins["distance"], plugins["goal"]], batch_mode=mode,
                                      isolate=False, progress=False)
        np.testing.assert_array_equal(out["reward_distance"].to_numpy(), distance)
        np.testing.assert_array_equal(out["reward_goal"].to_numpy(), goal)
        np.testing.assert_array_equal(out["done_goal"].to_numpy(), (frame["over"] | frame["cut"]).to_numpy())
    out = rewardlab.apply_plugins(frame, [plugins["distance"], plugins["goal"]], progress=False)
    assert attached(out) is not None  # the result still carries the toy spec

    # check-plugin: a good plug-in passes (in a child process), a bad one is caught with its row
    report = rewardlab.check_plugin(frame, plugins["goal"], progress=False)
    assert report.ok, str(report)
    with pytest.raises(ContractError, match="pos"):
        rewardlab.apply_plugins(frame, plugins["broken"], isolate=False, progress=False)

    # statistics, returns, comparison, normalization session, a plot
    ends = (frame["over"] | frame["cut"]).to_numpy()
    stats = rewardlab.reward_stats(out, "goal", scope="episode_end")
    assert stats.count == frame["run"].n_unique() == ends.sum()
    returns = rewardlab.episode_returns(out, "goal")
    lengths = frame.group_by("run", maintain_order=True).len()["len"].to_numpy()
    np.testing.assert_allclose(returns["return"].to_numpy(), 1.0 + np.float32(-0.01) * (lengths - 1))
    assert returns["truncated"].to_list() == frame.filter(pl.col("over") | pl.col("cut"))["cut"].to_list()
    togo = rewardlab.reward_to_go(out, "distance", gamma=1.0)
    assert togo.len() == frame.height
    comparison = rewardlab.compare_rewards(out, ["distance", "goal"])
    by_run = out.group_by("run", maintain_order=True).agg(pl.col("reward_distance", "reward_goal").sum())
    expected = np.corrcoef(by_run["reward_distance"].to_numpy(), by_run["reward_goal"].to_numpy())[0, 1]
    assert comparison.names == ("distance", "goal")
    assert comparison.pearson[0, 1] == pytest.approx(expected, rel=1e-12)
    session = NormalizationSession(out, reward="distance", scope="episode_return")
    assert session.results.before.count == ends.sum()
    ax = rewardlab.plot_return_distribution(rewardlab.episode_return_table(out))
    assert ax.get_title() or ax.get_xlabel()


def test_the_cli_runs_a_registered_format(toy, tmp_path, capsys):
    module, data, plugins = toy
    dataset = tmp_path / "runs.parquet"
    assert main(["convert", str(data), "--out", str(dataset), "--format", "toy"]) == 0
    assert main(["info", str(dataset)]) == 0
    assert "toy" in capsys.readouterr().out
    table = tmp_path / "rewards.parquet"
    assert main(["apply", str(dataset), "--plugin", str(plugins["goal"]), "--out", str(table)]) == 0
    assert main(["stats", str(table), "--scope", "episode_end", "--json"]) == 0
    capsys.readouterr()
    assert main(["check-plugin", str(plugins["goal"]), "--data", str(dataset)]) == 0
    assert main(["check-plugin", str(plugins["broken"]), "--data", str(dataset)]) != 0
    assert "pos" in capsys.readouterr().out


def test_a_source_that_hands_over_bad_episodes_is_refused_at_load(toy, tmp_path):
    """Episodes out of order or a missing terminal flag are errors naming column and row, not wrong statistics."""
    module, data, plugins = toy
    lines = data.read_text().splitlines()
    # move the first run's last line to the end: run 0 comes back after the others
    first_run = [i for i, line in enumerate(lines) if line.startswith("0 ")]
    moved = lines[:first_run[-1]] + lines[first_run[-1] + 1:] + [lines[first_run[-1]]]
    shuffled = tmp_path / "shuffled.txt"
    shuffled.write_text("\n".join(moved) + "\n")
    with pytest.raises(SpecError) as info:
        rewardlab.load(shuffled)
    assert info.value.column == "run" and "episode 0 is not contiguous" in str(info.value)
    # a run whose last step carries no flag
    unflagged = tmp_path / "unflagged.txt"
    last = first_run[-1]
    fields = lines[last].split()
    unflagged.write_text("\n".join(lines[:last] + [" ".join(fields[:-1] + ["-"])] + lines[last + 1:]) + "\n")
    with pytest.raises(SpecError) as info:
        rewardlab.load(unflagged)
    assert (info.value.column, info.value.row) == ("over", last - 1)  # the "#toy" header line is not a row
    assert "no terminal flag fires on the episode's last step" in str(info.value)
