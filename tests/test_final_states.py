"""Every episode's final state (issue: N+1 states per episode): the spec's final columns, the steps contract's
("next", state) on last steps, Gymnasium recordings, returns that bootstrap from it, check-plugin's padding
warning, datasets and shards that keep it.  References are plain loops over the true transitions and
Gymnasium's own flags."""

from __future__ import annotations

import dataclasses
import json

import gymnasium
import numpy as np
import polars as pl
import pytest

import rewardlab
from conftest import ROOT
from rewardlab.analysis.episodes import episode_detail
from rewardlab.analysis.return_tables import bootstrap_from_final, gae, reward_to_go
from rewardlab.cli import main
from rewardlab.contracts.steps.arrays import StepsArrays
from rewardlab.core.errors import ParameterError, SpecError
from rewardlab.core.spec import FrameSpec, StateColumn, attach, attached, final_column
from rewardlab.plugins.batch_modes import BATCH_MODES

MOUNTAINCAR = ROOT / "data" / "gym" / "mountaincar_scripted.parquet"
SHAPING = ROOT / "data" / "plugins" / "steps" / "potential_shaping.py"
GAMMA = 0.99  # potential_shaping.py's

GOAL = """\
import torch


def get_reward(data, contiguous):
    # MountainCar's goal: the car's position after the step is at the flag (0.5)
    data["next", "reward"] = (data["next", "obs"][:, 0] >= 0.5).to(torch.float64)
"""


@pytest.fixture(scope="module")
def mountaincar():
    return rewardlab.load(MOUNTAINCAR)


@pytest.fixture
def goal(tmp_path):
    path = tmp_path / "goal.py"
    path.write_text(GOAL)
    return path


def without_finals(frame: pl.DataFrame) -> pl.DataFrame:
    """The same frame with its final states dropped (what every step table gave before)."""
    spec = attached(frame)
    plain = dataclasses.replace(spec, states=tuple(dataclasses.replace(s, final=None) for s in spec.states))
    return attach(frame.drop(spec.final_names), plain)


def true_transitions(frame: pl.DataFrame):
    """(obs, next obs, terminated, truncated) of every step, the next obs read row by row: the following row
    of the same episode, or the episode's final observation."""
    rows = frame.to_dicts()
    out = []
    for i, row in enumerate(rows):
        last = i + 1 == len(rows) or rows[i + 1]["episode_id"] != row["episode_id"]
        nxt = row["final_obs"] if last else rows[i + 1]["obs"]
        out.append((np.array(row["obs"], dtype=np.float32), np.array(nxt, dtype=np.float32),
                    row["terminated"], row["truncated"]))
    return out


# --- the spec -------------------------------------------------------------------


def test_a_final_column_is_checked_against_its_state():
    spec = FrameSpec(name="s", episode=("e",), terminated="term",
                     states=(StateColumn("obs", None, "float32", 0.0, final="final_obs"),))
    assert spec.required == ("e", "term", "obs", "final_obs")
    good = pl.DataFrame({"e": [0, 0, 1], "obs": [0.0, 1.0, 2.0], "final_obs": [None, 1.5, None],
                         "term": [False, True, True]}, schema_overrides={"obs": pl.Float32, "final_obs": pl.Float32})
    spec.validate(good)
    stray = good.with_columns(final_obs=pl.Series([0.5, 1.5, None], dtype=pl.Float32))
    with pytest.raises(SpecError, match="not its episode's last step") as info:
        spec.validate(stray)
    assert info.value.column == "final_obs" and info.value.row == 0
    with pytest.raises(SpecError, match="its state's dtype"):
        spec.validate(good.with_columns(pl.col("final_obs").cast(pl.Float64)))
    with pytest.raises(SpecError, match="lacks it"):
        spec.validate(good.drop("final_obs"))
    assert FrameSpec.from_json(spec.to_json()) == spec
    assert spec.project(["e", "term", "obs"]).states[0].final is None
    # a spec stored before final columns existed reads back with none
    old = json.loads(spec.to_json())
    del old["states"][0]["final"]
    assert FrameSpec.from_dict(old).states[0].final is None
    with pytest.raises(ParameterError, match="another column than the state"):
        StateColumn("obs", None, "float32", 0.0, final="obs")
    assert final_column("obs") == "final_obs"


# --- the steps contract ----------------------------------------------------------------------


def test_next_state_on_last_steps_is_the_final_observation(mountaincar):
    spec = attached(mountaincar)
    arrays = StepsArrays(mountaincar, spec)
    td = arrays.tensordict()
    expected = np.stack([t[1] for t in true_transitions(mountaincar)])
    np.testing.assert_array_equal(td["next", "obs"].numpy(), expected)
    assert not arrays.missing_final.any()
    # any order of rows, any window: the same next states
    rows = np.random.default_rng(0).permutation(mountaincar.height)
    np.testing.assert_array_equal(arrays.tensordict(rows)["next", "obs"].numpy(), expected[rows])
    window = arrays.window(200, 600)  # whole episodes: a window holds each next state but the ends'
    np.testing.assert_array_equal(window.tensordict()["next", "obs"].numpy(), expected[200:600])
    plain = StepsArrays(without_finals(mountaincar), attached(without_finals(mountaincar)))
    ends = plain.episode_end
    assert plain.missing_final.tolist() == ends.tolist()
    assert (plain.tensordict()["next", "obs"].numpy()[ends] == 0).all()  # padding, where the data lacks it


def test_goal_reward_fires_exactly_on_the_episodes_gymnasium_terminated(mountaincar, goal):
    applied = rewardlab.apply_plugins(mountaincar, [goal])
    per_episode = applied.group_by("episode_id", maintain_order=True).agg(
        pl.col("reward_goal").sum(), pl.col("terminated").any())
    assert per_episode["terminated"].sum() == 10  # the recording has both endings
    assert ((per_episode["reward_goal"] > 0) == per_episode["terminated"]).all()
    # and only on the last step: the goal ends the episode
    fired = applied.filter(pl.col("reward_goal") > 0)
    assert fired["terminated"].all()
    # the same data without its final states: the goal never fires (the old behaviour); a constant 0 reward
    # gives no scale warning on a step table (only kanachan's contract asks for mean 0 / std 1)
    assert rewardlab.apply_plugins(without_finals(mountaincar), [goal])["reward_goal"].sum() == 0


def test_goal_reward_on_a_fresh_recording_matches_gymnasium(goal):
    env = gymnasium.make("MountainCar-v0", max_episode_steps=120)
    rng = np.random.default_rng(1)
    frame = rewardlab.record(env, lambda obs: 2 if obs[1] >= 0 or rng.random() < 0.1 else 0, episodes=6, seed=40)
    applied = rewardlab.apply_plugins(frame, [goal])
    ends = applied.filter(pl.col("done_recorded"))
    assert ends["terminated"].any() and ends["truncated"].any()
    assert (ends["reward_goal"] > 0).to_list() == ends["terminated"].to_list()


@pytest.mark.parametrize("mode", BATCH_MODES)
def test_every_batch_mode_hands_the_final_state(mountaincar, goal, mode):
    size = None if mode == "episodes" else 64
    applied = rewardlab.apply_plugins(mountaincar, [goal, SHAPING], batch_mode=mode, batch_size=size)
    reference = rewardlab.apply_plugins(mountaincar, [goal, SHAPING])
    for name in ("reward_goal", "reward_potential_shaping"):
        np.testing.assert_array_equal(applied[name].to_numpy(), reference[name].to_numpy())


def test_potential_shaping_equals_a_loop_over_the_true_transitions(mountaincar):
    applied = rewardlab.apply_plugins(mountaincar, [SHAPING])
    expected = []
    for obs, nxt, terminated, _ in true_transitions(mountaincar):
        phi = -np.linalg.norm(obs.astype(np.float64))
        phi_next = 0.0 if terminated else -np.linalg.norm(nxt.astype(np.float64))
        expected.append(GAMMA * phi_next - phi)
    np.testing.assert_allclose(applied["reward_potential_shaping"].to_numpy(), expected, rtol=1e-12, atol=1e-12)
    truncated_ends = applied.filter(pl.col("truncated"))
    assert truncated_ends.height == 10  # where the real final observation made the difference


def test_shards_and_a_converted_dataset_keep_final_states(mountaincar, goal, tmp_path):
    reference = rewardlab.apply_plugins(mountaincar, [goal, SHAPING])
    spec = attached(mountaincar)
    groups = [(0, 1), (1, 8), (8, 9), (9, 20)]  # episode-aligned shards of uneven sizes
    frames = [attach(mountaincar.filter(pl.col("episode_id").is_between(a, b - 1)), spec) for a, b in groups]
    assert sum(f.height for f in frames) == mountaincar.height
    sharded = rewardlab.apply_plugins(frames, [goal, SHAPING], batch_mode="sequential", batch_size=100)
    for name in ("reward_goal", "reward_potential_shaping"):
        np.testing.assert_array_equal(pl.concat(sharded)[name].to_numpy(), reference[name].to_numpy())
    out = tmp_path / "mc.parquet"
    rewardlab.convert(MOUNTAINCAR, out)
    back = rewardlab.load(out)
    assert attached(back) == spec
    assert back["final_obs"].to_list() == mountaincar["final_obs"].to_list()
    np.testing.assert_array_equal(rewardlab.apply_plugins(back, [SHAPING])["reward_potential_shaping"].to_numpy(),
                                  reference["reward_potential_shaping"].to_numpy())
    lazy = rewardlab.scan(out)
    assert lazy.select(pl.col("final_obs").null_count()).collect().item() == mountaincar.height - 20


# --- returns ---------------------------------------------------------------------------------


def value(states: np.ndarray) -> np.ndarray:
    """A state-value function of MountainCar observations (position and velocity)."""
    return 10.0 * states[:, 0].astype(np.float64) - 3.0 * states[:, 1].astype(np.float64)


def test_returns_bootstrap_truncated_episodes_from_the_final_state(mountaincar):
    frame = attach(mountaincar.with_columns(reward_r=pl.col("reward_recorded"), done_r=pl.col("done_recorded")),
                   attached(mountaincar))
    gamma = 0.9
    got = reward_to_go(frame, "r", gamma=gamma, next_value=value).to_numpy()
    expected = np.zeros(frame.height)
    transitions = true_transitions(mountaincar)
    rewards = frame["reward_r"].to_numpy()
    g = 0.0
    for i in range(frame.height - 1, -1, -1):
        _, nxt, terminated, truncated = transitions[i]
        last = i + 1 == frame.height or transitions[i][2] or transitions[i][3] or \
            frame["episode_id"][i + 1] != frame["episode_id"][i]
        if last:
            g = rewards[i] + (gamma * value(nxt[None])[0] if truncated else 0.0)
        else:
            g = rewards[i] + gamma * g
        expected[i] = g
    np.testing.assert_allclose(got, expected, rtol=1e-10)
    # a column of V(s[t+1]) holding the same values gives the same returns
    column = frame.with_columns(nv=pl.Series([value(t[1][None])[0] for t in transitions]))
    np.testing.assert_allclose(reward_to_go(column, "r", gamma=gamma, next_value="nv", spec=attached(mountaincar)),
                               got, rtol=1e-12)
    v = frame.with_columns(v=pl.Series(value(np.stack([t[0] for t in transitions]))))
    a = gae(v, "r", value="v", gamma=gamma, lmbda=0.95, next_value=value, spec=attached(mountaincar))
    nv = np.array([value(t[1][None])[0] for t in transitions])
    b = gae(v.with_columns(nv=pl.Series(nv)), "r", value="v", gamma=gamma, lmbda=0.95, next_value="nv",
            spec=attached(mountaincar))
    np.testing.assert_allclose(a["advantage"].to_numpy(), b["advantage"].to_numpy(), rtol=1e-10)


def test_a_value_function_needs_the_final_states(mountaincar):
    plain = without_finals(mountaincar)
    frame = attach(plain.with_columns(reward_r=pl.col("reward_recorded"), done_r=pl.col("done_recorded")),
                   attached(plain))
    with pytest.raises(ParameterError, match="keeps final states"):
        reward_to_go(frame, "r", gamma=0.9, next_value=value)
    spec = attached(mountaincar)
    holed = mountaincar.with_columns(reward_r=pl.col("reward_recorded"), done_r=pl.col("done_recorded"),
                                     final_obs=pl.when(pl.col("episode_id") != 0).then(pl.col("final_obs")))
    with pytest.raises(ParameterError, match="lacks it for 1 of 10"):
        reward_to_go(attach(holed, spec), "r", gamma=0.9, next_value=value)
    with pytest.raises(ParameterError, match="10 finite values"):
        bootstrap_from_final(lambda s: s[:, 0][:3], {"obs": mountaincar["final_obs"]},
                             np.flatnonzero(mountaincar["truncated"].to_numpy()))


# --- what the fronts say ---------------------------------------------------------------------------


def test_check_plugin_warns_when_a_plug_in_reads_padding(mountaincar, goal):
    report = rewardlab.check_plugin(mountaincar, goal)
    assert report.ok and not report.warnings  # the data keeps every final state
    assert report.final_states == (20, 20) and "final states kept for 20 of them" in str(report)
    plain = without_finals(mountaincar)
    report = rewardlab.check_plugin(plain, goal)
    assert report.final_states == (0, 20) and "the next state is padding" in str(report)
    [warning] = report.warnings
    assert "reads data[\"next\", \"obs\"]" in warning and "20 episodes whose final state the data lacks" in warning
    assert "episode_id 0, t 199" in warning
    shaping = rewardlab.check_plugin(plain, SHAPING)
    [warning] = shaping.warnings
    assert "on 10 steps" in warning  # the truncated episodes only: termination uses 0
    recorded = rewardlab.check_plugin(plain, ROOT / "data" / "plugins" / "steps" / "recorded_reward.py")
    assert not recorded.warnings  # a plug-in that does not read the next state


def test_check_plugin_names_only_the_episodes_that_lack_their_final_state(mountaincar, goal):
    holed = attach(mountaincar.with_columns(final_obs=pl.when(pl.col("episode_id") != 5).then(pl.col("final_obs"))),
                   attached(mountaincar))
    [warning] = rewardlab.check_plugin(holed, goal).warnings
    assert "the 1 episode whose" in warning and "episode_id 5" in warning and "on 1 step " in warning


def test_info_and_the_episode_summary_say_how_many_episodes_keep_their_final_state(mountaincar, capsys):
    summary = rewardlab.episode_summary(mountaincar)
    assert summary["final_state"].all()
    holed = attach(mountaincar.with_columns(final_obs=pl.when(pl.col("episode_id") >= 3).then(pl.col("final_obs"))),
                   attached(mountaincar))
    assert rewardlab.episode_summary(holed)["final_state"].sum() == 17
    assert main(["info", str(MOUNTAINCAR)]) == 0
    assert "final states     kept for 20 of 20 episodes" in capsys.readouterr().out
    assert main(["info", str(ROOT / "data" / "sample.tsv.gz")]) == 0
    assert "kanachan's contract pads the state" in capsys.readouterr().out
    detail = episode_detail(mountaincar, {"episode_id": 2}, rewards="recorded")
    assert detail.final["obs"] == pytest.approx(mountaincar.filter(pl.col("episode_id") == 2)["final_obs"][-1].to_list())


@pytest.mark.parametrize("dtype, values, pad", [
    ("float32", [0.5, 2.0, float("nan")], 0.0), ("uint8", [0, 255], 0), ("uint8", [3, 7], 0),
    ("int16", [-5, 9], 1),
])
def test_padding_probes_hold_values_the_data_does_not(dtype, values, pad):
    polars_dtype = {"float32": pl.Float32, "uint8": pl.UInt8, "int16": pl.Int16}[dtype]
    spec = FrameSpec(name="toy", episode=("ep",), terminated="term",
                     states=(StateColumn("s", None, dtype, pad),))
    frame = pl.DataFrame({"ep": [0] * len(values), "s": pl.Series(values, dtype=polars_dtype),
                          "term": [False] * (len(values) - 1) + [True]})
    arrays = StepsArrays(frame, spec)
    seen = {v for v in values if v == v}
    for high in (True, False):
        value = arrays.probe(high=high).tensordict()["next", "s"][-1].item()
        assert value != pad  # the probe changes the padding
        full = dtype == "uint8" and seen == {0, 255}
        if not full:  # outside the data's range where the dtype leaves room
            assert value not in seen and (value > max(seen) or value < min(seen))
    np.testing.assert_array_equal(arrays.probe(high=True).tensordict()["s"].numpy(),
                                  arrays.tensordict()["s"].numpy())  # the states themselves are unchanged


def test_check_plugin_says_when_a_plug_in_fails_on_changed_padding(mountaincar, tmp_path):
    """A plug-in that only works while the padding stays inside the data's range: the probe run fails, and the
    report says it reads the padding (the run itself passes)."""
    path = tmp_path / "fragile.py"
    path.write_text("import torch\n\n\ndef get_reward(data, contiguous):\n"
                    "    if bool((data['next', 'obs'].abs() > 1.5).any()):\n"
                    "        raise ValueError('an observation out of range')\n"
                    "    data['next', 'reward'] = data['next', 'obs'][:, 0].to(torch.float64)\n")
    report = rewardlab.check_plugin(without_finals(mountaincar), path)
    assert report.ok
    [warning] = report.warnings
    assert warning.startswith("the plug-in failed when the padding in data[\"next\", \"obs\"] on the last step "
                              "of the 20 episodes whose final state the data lacks")
