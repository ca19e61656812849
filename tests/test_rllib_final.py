"""format="rllib" keeps each episode's final observation (its last ``new_obs``) as ``final_obs``.

The expected values are read here a second way, straight from RLlib's files
(``json`` line by line, RLlib's packed columns undone with the standard
library's pickle, ``pyarrow`` for Parquet rows), never through the reader.
"""

from __future__ import annotations

import base64
import json
import pickle
import shutil

import lz4.frame
import numpy as np
import polars as pl
import pytest

import rewardlab
from conftest import ROOT
from rllib_lines import batch_of, with_batch, write_lines
from rewardlab.cli import main
from rewardlab.contracts.steps import StepsArrays
from rewardlab.core.errors import SkippedLinesWarning
from rewardlab.core.spec import attached
from rewardlab.plugins import apply_plugins
from rewardlab.sources.rllib import read_rllib

DATA = ROOT / "data" / "rllib"
OLD = DATA / "old_stack_json"
PACKED = DATA / "old_stack_compressed"
NEW = DATA / "new_stack_parquet"
TRUNCATE = {"unfinished": "truncate"}
FOLDERS = [OLD, PACKED, NEW]


def data_files(folder) -> list:
    """The files a folder load reads, in its order."""
    return sorted(p for p in (folder / "data").rglob("*") if p.suffix in (".json", ".parquet"))


def json_file_of(folder):
    (path,) = data_files(folder)
    return path


def lines(folder) -> list[bytes]:
    return json_file_of(folder).read_bytes().split(b"\n")[:-1]


# --- the independent read ---------------------------------------------------------------------------------


def unpack(value: str) -> np.ndarray:
    """RLlib's ``compression.pack`` undone (base64, LZ4 frame, pickle): committed files only."""
    return pickle.loads(lz4.frame.decompress(base64.b64decode(value)))


def json_finals(paths) -> dict:
    """``{(eps_id, agent_index): last new_obs}`` of JSON-lines files, in file and line order."""
    last = {}
    for path in paths:
        for raw in path.read_bytes().split(b"\n"):
            if not raw.strip():
                continue
            obj = json.loads(raw)
            batches = obj["policy_batches"].values() if obj["type"] == "MultiAgentBatch" else [obj]
            for batch in batches:
                new_obs = batch["new_obs"]
                if isinstance(new_obs, str):
                    new_obs = unpack(new_obs)
                agents = batch.get("agent_index", [0] * len(batch["eps_id"]))
                for eps, agent, value in zip(batch["eps_id"], agents, new_obs):
                    last[(eps, agent)] = np.asarray(value)
    return last


def parquet_finals(paths) -> dict:
    """``{(eps_id, agent_id or 'default_agent'): last new_obs}`` of new-stack Parquet files, in row order."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    last = {}
    for path in paths:
        table = pq.read_table(path)
        column = table.column("new_obs")
        if isinstance(column.type, pa.ExtensionType):  # Ray Data's tensor type
            column = pa.chunked_array([c.storage for c in column.chunks])
        agents = table.column("agent_id").to_pylist()
        for eps, agent, value in zip(table.column("eps_id").to_pylist(), agents, column.to_pylist()):
            last[(eps, agent or "default_agent")] = np.asarray(value, dtype=np.float32)
    return last


def raw_finals(paths) -> dict:
    paths = list(paths)
    return parquet_finals(paths) if paths[0].suffix == ".parquet" else json_finals(paths)


def last_rows(frame: pl.DataFrame) -> np.ndarray:
    """True on each (episode, agent)'s last row (the blocks are contiguous)."""
    block = frame.select(pl.struct("eps_id", "agent").rle_id()).to_series().to_numpy()
    return np.append(block[1:] != block[:-1], True) if frame.height else np.zeros(0, dtype=bool)


def check_finals(frame: pl.DataFrame, expected: dict):
    """``final_obs`` holds ``expected`` on each episode's last row and nothing elsewhere; the steps
    contract hands it as ``("next", "obs")``."""
    spec = attached(frame)
    (state,) = spec.states
    assert state.name == "obs" and state.final == "final_obs"
    spec.validate(frame)
    assert "new_obs" not in frame.columns
    assert frame.schema["final_obs"] == frame.schema["obs"]
    last = last_rows(frame)
    np.testing.assert_array_equal(frame["final_obs"].is_null().to_numpy(), ~last)
    ends = frame.filter(pl.Series(last))
    keys = list(zip(ends["eps_id"].to_list(), ends["agent"].to_list()))
    assert len(set(keys)) == len(keys) and set(keys) <= set(expected)
    want = np.stack([expected[k] for k in keys]) if keys else np.zeros((0, state.width))
    got = np.stack(ends["final_obs"].to_numpy()) if keys else want
    np.testing.assert_array_equal(got, want)
    arrays = StepsArrays(frame, spec)
    assert not arrays.missing_final.any()
    following = arrays.tensordict()["next", "obs"].numpy()
    np.testing.assert_array_equal(following[last], want)
    obs = np.stack(frame["obs"].to_numpy()) if frame.height else want
    np.testing.assert_array_equal(following[:-1][~last[:-1]], obs[1:][~last[:-1]])
    return keys


# --- the committed recordings ----------------------------------------------------------------------------------


@pytest.mark.parametrize("folder", FOLDERS, ids=lambda f: f.name)
def test_each_episodes_last_new_obs_is_its_final_obs(folder):
    frame = rewardlab.load(folder / "data", format="rllib", options=TRUNCATE)
    expected = raw_finals(data_files(folder))
    keys = check_finals(frame, expected)
    assert set(keys) == set(expected)  # every episode, the one the run stopped in too
    assert frame["final_obs"].null_count() == frame.height - len(expected)


def test_the_episode_cut_by_the_end_of_the_recording_keeps_its_last_new_obs():
    frame = rewardlab.load(OLD / "data", format="rllib", options=TRUNCATE)
    last = batch_of(lines(OLD)[-1])
    cut = frame.filter(pl.col("eps_id") == last["eps_id"][-1])
    assert cut["truncated"][-1] and not cut["terminated"][-1]
    assert cut["final_obs"][-1].to_list() == last["new_obs"][-1]


def test_a_file_cut_mid_episode_keeps_that_episodes_last_new_obs(tmp_path):
    # the first line alone: its last episode goes on in line 2, so its final state is line 1's last new_obs
    rows = lines(OLD)
    first = batch_of(rows[0])
    assert first["eps_id"][-1] == batch_of(rows[1])["eps_id"][0]
    path = write_lines(tmp_path / "one.json", rows[:1])
    frame = rewardlab.load(path, format="rllib", options=TRUNCATE)
    check_finals(frame, json_finals([path]))
    assert frame["final_obs"][-1].to_list() == first["new_obs"][-1]


GOAL = '''
import math

import torch

THETA, X = 12 * 2 * math.pi / 360, 2.4  # CartPole-v1's bounds


def get_reward(data, contiguous):
    after = data["next", "obs"]
    fell = (after[:, 2].abs() > THETA) | (after[:, 0].abs() > X)
    data["next", "reward"] = -fell.to(torch.float64)
'''


@pytest.mark.parametrize("folder", FOLDERS, ids=lambda f: f.name)
def test_a_goal_plugin_sees_the_real_final_observation(tmp_path, folder):
    # CartPole ends an episode when the observation after the step is out of bounds: a plug-in
    # reading ("next", "obs") finds exactly the terminated steps only with the real final states
    frame = rewardlab.load(folder / "data", format="rllib", options=TRUNCATE)
    path = tmp_path / "goal.py"
    path.write_text(GOAL)
    out = apply_plugins(frame, path, isolate=False, progress=False)
    terminated = frame["terminated"].to_numpy()
    assert terminated.sum() > 40
    np.testing.assert_array_equal(out["reward_goal"].to_numpy(), -terminated.astype(np.float64))
    # the same rule on the independent read of the files
    last = last_rows(frame)
    expected = raw_finals(data_files(folder))
    ends = frame.filter(pl.Series(last))
    after = np.stack([expected[k] for k in zip(ends["eps_id"].to_list(), ends["agent"].to_list())])
    fell = (np.abs(after[:, 2]) > 12 * 2 * np.pi / 360) | (np.abs(after[:, 0]) > 2.4)
    np.testing.assert_array_equal(fell, ends["terminated"].to_numpy())


@pytest.mark.parametrize("suffix", ["parquet", "arrow"])
@pytest.mark.parametrize("folder", [OLD, NEW], ids=lambda f: f.name)
def test_converted_datasets_keep_the_final_observations(tmp_path, folder, suffix):
    out = tmp_path / f"rllib.{suffix}"
    result = rewardlab.convert(folder / "data", out, format="rllib", options=TRUNCATE)
    back = rewardlab.load(out)
    assert attached(back) == attached(result.frame) and attached(back).states[0].final == "final_obs"
    assert back.equals(result.frame)
    check_finals(back, raw_finals(data_files(folder)))
    assert rewardlab.scan(out).collect().equals(back)


def test_the_convert_command_keeps_the_final_observations(tmp_path, capsys):
    out = tmp_path / "rllib.parquet"
    assert main(["convert", str(NEW / "data"), "--out", str(out), "--format", "rllib",
                 "--option", "unfinished=truncate"]) == 0
    back = rewardlab.load(out)
    check_finals(back, raw_finals(data_files(NEW)))
    capsys.readouterr()
    assert main(["info", str(out)]) == 0
    assert "final_obs" in capsys.readouterr().out


# --- skip mode, several files, several agents ---------------------------------------------------------


def test_skip_mode_keeps_the_final_observations_of_the_kept_episodes(tmp_path):
    rows = lines(OLD)
    batch = batch_of(rows[4])
    batch["new_obs"][-3] = [1.0, 2.0, 3.0, 4.0]  # breaks the episode (next_obs_mismatch)
    path = write_lines(tmp_path / "out.json", [*rows[:4], with_batch(rows[4], batch), *rows[5:8], b"{not json",
                                               *rows[8:]])
    with pytest.warns(SkippedLinesWarning):
        result = read_rllib(path, on_error="skip")
    assert {"next_obs_mismatch", "unfinished", "bad_json"} <= set(result.skip_counts)  # counted by line
    kept = result.frame
    keys = check_finals(kept, json_finals([json_file_of(OLD)]))
    assert len(keys) == kept.select("eps_id", "agent").n_unique() < 134
    # the same values as a clean load's, episode for episode
    clean = rewardlab.load(OLD / "data", format="rllib", options=TRUNCATE)
    same = clean.filter(pl.col("eps_id").is_in(kept["eps_id"].to_list()))
    assert same.drop("truncated", "done_recorded").equals(kept.drop("truncated", "done_recorded"))


def test_parquet_skip_mode_keeps_the_final_observations_of_the_kept_episodes(tmp_path):
    import pyarrow as pa
    import pyarrow.parquet as pq

    sources = data_files(NEW)
    table = pq.read_table(sources[1])
    terminated = table.column("terminateds").to_pylist()
    terminated[100] = True  # fires mid-episode
    table = table.set_column(table.schema.get_field_index("terminateds"), "terminateds", pa.array(terminated))
    folder = tmp_path / "in"
    folder.mkdir()
    shutil.copy(sources[0], folder / "a.parquet")
    pq.write_table(table, folder / "b.parquet", row_group_size=400)
    shutil.copy(sources[2], folder / "c.parquet")
    with pytest.warns(SkippedLinesWarning):
        result = read_rllib(folder, on_error="skip")  # the episode the run stopped in is skipped too
    assert set(result.skip_counts) == {"flag_before_end", "unfinished"}
    kept = result.frame
    keys = check_finals(kept, parquet_finals([sources[0], sources[1], sources[2]]))
    broken = table.column("eps_id")[100].as_py()
    assert broken not in {e for e, _ in keys} and kept["terminated"].to_numpy()[last_rows(kept)].all()


def test_episodes_over_several_files_keep_their_last_new_obs(tmp_path):
    rows = lines(OLD)
    a = write_lines(tmp_path / "a.json", rows[:5])
    b = write_lines(tmp_path / "b.json", rows[5:])
    assert batch_of(rows[4])["eps_id"][-1] == batch_of(rows[5])["eps_id"][0]  # one episode in both
    frame = rewardlab.load([a, b], format="rllib", options=TRUNCATE)
    check_finals(frame, json_finals([a, b]))
    assert frame.equals(rewardlab.load(OLD / "data", format="rllib", options=TRUNCATE))


def test_each_agent_of_a_multi_agent_episode_keeps_its_own_final_observation(tmp_path):
    rows = lines(OLD)
    out = []
    for row in rows[:3]:  # episodes continue over the lines, and over the two files
        obj = json.loads(row)
        a = obj["policy_batches"]["default_policy"]
        b = json.loads(json.dumps(a))
        b["agent_index"] = [1] * len(b["t"])
        b["obs"] = [[v + 10 for v in o] for o in b["obs"]]
        b["new_obs"] = [[v + 10 for v in o] for o in b["new_obs"]]
        obj["policy_batches"] = {"runner": a, "chaser": b}
        out.append(json.dumps(obj).encode())
    first = write_lines(tmp_path / "a.json", out[:2])
    second = write_lines(tmp_path / "b.json", out[2:])
    frame = rewardlab.load([first, second], format="rllib", options=TRUNCATE)
    expected = json_finals([first, second])
    keys = check_finals(frame, expected)
    assert set(keys) == set(expected) and {agent for _, agent in keys} == {0, 1}
    for eps, agent in keys:
        if agent == 1:
            np.testing.assert_array_equal(expected[(eps, 1)], expected[(eps, 0)] + 10)


# --- without new_obs ---------------------------------------------------------------------------------


def test_without_new_obs_the_spec_names_no_final_column(tmp_path):
    import pyarrow.parquet as pq

    rows = []
    for row in lines(OLD)[:2]:
        batch = batch_of(row)
        del batch["new_obs"]
        rows.append(with_batch(row, batch))
    json_path = write_lines(tmp_path / "plain.json", rows)
    parquet_path = tmp_path / "plain.parquet"
    pq.write_table(pq.read_table(data_files(NEW)[0]).drop_columns(["new_obs"]), parquet_path)
    for path in (json_path, parquet_path):
        frame = rewardlab.load(path, format="rllib", options=TRUNCATE)
        spec = attached(frame)
        assert spec.states[0].final is None and "final_obs" not in frame.columns
        spec.validate(frame)
        arrays = StepsArrays(frame, spec)
        last = last_rows(frame)
        np.testing.assert_array_equal(arrays.missing_final, last)
        assert (arrays.tensordict()["next", "obs"].numpy()[last] == 0).all()  # the pad


# --- the array function, against a plain loop --------------------------------------------------------


@pytest.mark.parametrize("seed", range(5))
def test_final_states_against_a_plain_loop(seed):
    from rewardlab.sources.values import final_state_column

    rng = np.random.default_rng(seed)
    n_episodes = int(rng.integers(1, 30))
    lengths = rng.integers(1, 6, n_episodes)
    kept = np.sort(rng.choice(2 * n_episodes, n_episodes, replace=False))  # skipped episodes leave gaps
    episode = np.repeat(kept, lengths)
    for shape in ((2 * n_episodes,), (2 * n_episodes, 3)):
        finals = rng.normal(size=shape).astype(np.float32)
        got = final_state_column(episode, finals, "final_obs").to_list()
        want = []
        for i, e in enumerate(episode):
            is_last = i == len(episode) - 1 or episode[i + 1] != e
            want.append(finals[e].tolist() if is_last else None)
        assert got == want
    assert final_state_column(np.zeros(0, dtype=np.int64), np.zeros((0, 3)), "final_obs").len() == 0
