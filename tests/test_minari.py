"""The Minari source (format "minari"): rewardlab's own reading of the Arrow, Parquet and HDF5 storages,
checked against Minari's API (minari.MinariDataset / load_dataset, iterate_episodes) as the reference."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
import warnings

import gymnasium
import minari
import numpy as np
import polars as pl
import pytest
from minari.data_collector import EpisodeBuffer

import rewardlab
from conftest import ROOT
from rewardlab.contracts.steps.arrays import StepsArrays
from rewardlab.core.errors import DataFormatError, ParameterError, StepTableError
from rewardlab.core.spec import attached
from rewardlab.sources.minari import COLUMNS, FINAL_OBS, load_minari, minari_spec
from rewardlab.sources.registry import detect_source

DATA = ROOT / "data" / "minari"
ARROW, HDF5 = DATA / "mountaincar-arrow-v0", DATA / "mountaincar-hdf5-v0"
BACKENDS = pytest.mark.parametrize("root", [ARROW, HDF5], ids=["arrow", "hdf5"])


def reference(data_folder) -> list:
    """Minari's own reading of the dataset: its episodes, in order."""
    return list(minari.MinariDataset(data_folder).iterate_episodes())


def episodes_of(frame: pl.DataFrame) -> list[pl.DataFrame]:
    return frame.partition_by("episode_id", maintain_order=True)


def build(tmp_path, monkeypatch, episodes, *, observation_space, action_space, data_format, dataset_id="toy-v0"):
    """A dataset written by Minari itself (create_dataset_from_buffers) under ``tmp_path``; its data folder.

    Each episode is ``(observations, actions, rewards, terminations, truncations)``."""
    monkeypatch.setenv("MINARI_DATASETS_PATH", str(tmp_path))
    buffers = [EpisodeBuffer(observations=list(o), actions=list(a), rewards=list(r), terminations=list(te),
                             truncations=list(tr)) for o, a, r, te, tr in episodes]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # Minari's notes on missing authors and evaluation environments
        minari.create_dataset_from_buffers(dataset_id, buffers, observation_space=observation_space,
                                           action_space=action_space, data_format=data_format,
                                           algorithm_name="test", author="test", author_email="test",
                                           code_permalink="test", description="test")
    return tmp_path / dataset_id / "data"


def toy_episode(n, *, obs_width=3, end="terminated", seed=0, final=True, box_actions=False):
    rng = np.random.default_rng(seed)
    obs = rng.normal(size=(n + 1 if final else n, obs_width)).astype(np.float32)
    actions = (rng.uniform(-1, 1, size=(n, 2)).astype(np.float32) if box_actions
               else rng.integers(0, 3, size=n))
    rewards = rng.normal(size=n)
    terminations, truncations = np.zeros(n, bool), np.zeros(n, bool)
    if end in ("terminated", "both"):
        terminations[-1] = True
    if end in ("truncated", "both"):
        truncations[-1] = True
    return obs, actions, rewards, terminations, truncations


BOX3 = gymnasium.spaces.Box(-10, 10, shape=(3,), dtype=np.float32)
DISCRETE3 = gymnasium.spaces.Discrete(3)


def copy_dataset(root, tmp_path):
    target = tmp_path / root.name
    shutil.copytree(root, target)
    return target / "data"


# --------------------------------------------------------------------------
# the committed datasets against Minari's API
# --------------------------------------------------------------------------


@BACKENDS
def test_the_frame_holds_what_minaris_api_returns(root):
    frame = rewardlab.load(root / "data")
    eps = reference(root / "data")
    assert len(eps) == 8 and frame["episode_id"].n_unique() == len(eps)
    assert frame.height == sum(len(e) for e in eps) == minari.MinariDataset(root / "data").total_steps
    for ep, rows in zip(eps, episodes_of(frame), strict=True):
        n = len(ep)
        assert rows["episode_id"].unique().to_list() == [ep.id]
        assert rows["t"].to_list() == list(range(n))
        assert ep.observations.shape[0] == n + 1
        assert np.array_equal(rows["obs"].to_numpy(), ep.observations[:-1])
        assert np.array_equal(rows["action"].to_numpy(), ep.actions)
        assert np.array_equal(rows["reward_recorded"].to_numpy(), ep.rewards)
        assert rows["reward_recorded"].sum() == pytest.approx(float(ep.rewards.sum()))  # the return
        assert rows["done_recorded"].to_list() == [False] * (n - 1) + [True]
        terminated, truncated = bool(ep.terminations[-1]), bool(ep.truncations[-1])
        assert rows["terminated"].to_list() == [False] * (n - 1) + [terminated]
        assert rows["truncated"].to_list() == [False] * (n - 1) + [truncated and not terminated]
        final = rows[FINAL_OBS]
        assert final.null_count() == n - 1 and final[-1] is not None
        assert np.array_equal(np.asarray(final[-1].to_list(), dtype=np.float32), ep.observations[-1])


def test_the_committed_data_ends_every_way_and_is_small():
    eps = reference(HDF5 / "data")
    ends = [(bool(e.terminations[-1]), bool(e.truncations[-1])) for e in eps]
    assert ends.count((True, False)) >= 2 and ends.count((False, True)) >= 2
    assert (True, True) in ends  # the flag reached on the time limit's last step: Minari keeps both flags
    frame = rewardlab.load(HDF5 / "data")
    both = eps[ends.index((True, True))].id
    last = frame.filter(pl.col("episode_id") == both).row(-1, named=True)
    assert (last["terminated"], last["truncated"]) == (True, False)  # recorded as terminated only
    size = sum(p.stat().st_size for p in DATA.rglob("*") if p.is_file())
    assert size < 400_000
    readme = (DATA / "README.md").read_text()
    assert "Minari 0.5.4" in readme and "Gymnasium 1.4.0" in readme and "make_minari_data.py" in readme


def test_both_storages_give_the_same_frame_and_minaris_load_dataset_agrees(monkeypatch):
    arrow, hdf5 = rewardlab.load(ARROW / "data"), rewardlab.load(HDF5 / "data")
    assert arrow.equals(hdf5)
    monkeypatch.setenv("MINARI_DATASETS_PATH", str(DATA))
    dataset = minari.load_dataset("mountaincar-arrow-v0")
    assert dataset.total_episodes == arrow["episode_id"].n_unique()
    assert [float(e.rewards.sum()) for e in dataset.iterate_episodes()] == (
        arrow.group_by("episode_id", maintain_order=True).agg(pl.col("reward_recorded").sum())["reward_recorded"]
        .to_list())


@BACKENDS
def test_the_spec_is_attached_and_the_steps_contract_hands_the_final_observation(root):
    frame = rewardlab.load(root / "data")
    spec = attached(frame)
    assert spec == minari_spec(2, "float32")
    assert spec.states[0].final == FINAL_OBS and spec.contract == "steps"
    assert "infos not read" in spec.description
    spec.validate(frame)
    arrays = StepsArrays(frame, spec)
    assert not arrays.missing_final.any()
    td = arrays.tensordict()
    following = td["next", "obs"].numpy()
    last = frame["done_recorded"].to_numpy()
    eps = reference(root / "data")
    assert np.array_equal(following[last], np.stack([e.observations[-1] for e in eps]))
    obs = frame["obs"].to_numpy()
    assert np.array_equal(following[~last], obs[1:][~last[:-1]])  # elsewhere: the next row's observation
    assert td["next", "done"].numpy().tolist() == last.tolist()
    assert td["next", "terminated"].numpy().tolist() == frame["terminated"].to_list()
    assert td["reward_recorded"].numpy().tolist() == frame["reward_recorded"].to_list()


# --------------------------------------------------------------------------
# detection, folders, options
# --------------------------------------------------------------------------


def test_load_detects_a_minari_data_folder_and_format_minari_takes_the_dataset_folder():
    by_detection = rewardlab.load(ARROW / "data")
    assert attached(by_detection).name == "minari"
    assert detect_source(ARROW / "data").name == "minari" == detect_source(HDF5 / "data").name
    assert detect_source(HDF5 / "data" / "main_data.hdf5").name == "minari"
    assert detect_source(ARROW / "data" / "metadata.json").name == "minari"
    for path in (ARROW, ARROW / "data", ARROW / "data" / "metadata.json", [ARROW, ARROW / "data"]):
        assert rewardlab.load(path, format="minari").equals(by_detection)
    assert rewardlab.load(HDF5, format="minari", options={"max_episodes": 3}).equals(
        by_detection.filter(pl.col("episode_id") < 3))
    assert rewardlab.scan(ARROW / "data").collect().equals(by_detection)


def test_options_are_checked_and_named():
    with pytest.raises(ParameterError, match=r"`unfinished` should be one of 'error', 'truncate'"):
        rewardlab.load(ARROW, format="minari", unfinished="drop")
    for bad in (0, True, "2", 1.5):
        with pytest.raises(ParameterError, match="`max_episodes` should be None or an int >= 1"):
            load_minari(ARROW, max_episodes=bad)
    with pytest.raises(ParameterError, match=r"options of the 'minari' format \(unfinished, max_episodes\)"):
        rewardlab.load(ARROW, format="minari", on_error="skip")
    with pytest.raises(ParameterError, match="should name one Minari dataset"):
        load_minari([ARROW, HDF5])


# --------------------------------------------------------------------------
# other spaces and storages, written by Minari itself
# --------------------------------------------------------------------------


@pytest.mark.parametrize("data_format", ["arrow", "parquet", "hdf5"])
def test_discrete_observations_and_box_actions_in_every_storage(tmp_path, monkeypatch, data_format):
    rng = np.random.default_rng(1)
    episodes = []
    for n, end in ((4, "terminated"), (1, "truncated"), (6, "both")):
        obs = rng.integers(0, 5, size=n + 1)
        actions = rng.uniform(-1, 1, size=(n, 2)).astype(np.float32)
        flags = toy_episode(n, end=end)[3:]
        episodes.append((obs, actions, rng.normal(size=n), *flags))
    folder = build(tmp_path, monkeypatch, episodes, observation_space=gymnasium.spaces.Discrete(5),
                   action_space=gymnasium.spaces.Box(-1, 1, shape=(2,), dtype=np.float32), data_format=data_format)
    frame = rewardlab.load(folder)
    assert frame.schema["obs"] == pl.Array(pl.Float64, 1) == frame.schema[FINAL_OBS]
    assert frame.schema["action"] == pl.Array(pl.Float32, 2)
    for ep, rows in zip(reference(folder), episodes_of(frame), strict=True):
        assert rows["obs"].to_numpy()[:, 0].tolist() == ep.observations[:-1].tolist()
        assert rows[FINAL_OBS][-1].to_list() == [float(ep.observations[-1])]
        assert np.array_equal(rows["action"].to_numpy(), ep.actions)
        assert rows["reward_recorded"].to_list() == ep.rewards.tolist()
    assert frame.group_by("episode_id", maintain_order=True).agg(pl.col("truncated").last())["truncated"].to_list() \
        == [False, True, False]


def test_box_observations_of_several_axes_are_flattened(tmp_path, monkeypatch):
    rng = np.random.default_rng(2)
    obs = rng.normal(size=(4, 2, 3)).astype(np.float64)
    folder = build(tmp_path, monkeypatch, [(obs, [0, 1, 2], [1.0, 2.0, 3.0], [False, False, True], [False] * 3)],
                   observation_space=gymnasium.spaces.Box(-9, 9, shape=(2, 3), dtype=np.float64),
                   action_space=DISCRETE3, data_format="hdf5")
    frame = rewardlab.load(folder)
    assert frame.schema["obs"] == pl.Array(pl.Float64, 6)
    assert np.array_equal(frame["obs"].to_numpy(), obs[:-1].reshape(3, 6))
    assert frame[FINAL_OBS][-1].to_list() == obs[-1].reshape(6).tolist()


def test_multi_discrete_observations_multi_binary_actions_and_an_empty_dataset(tmp_path, monkeypatch):
    obs = [np.array([1, 2]), np.array([0, 1]), np.array([2, 0])]
    actions = [np.array([1, 0, 1], np.int8), np.array([0, 0, 1], np.int8)]
    folder = build(tmp_path, monkeypatch, [(obs, actions, [1, 2], [False, True], [False, False])],
                   observation_space=gymnasium.spaces.MultiDiscrete([3, 3]),
                   action_space=gymnasium.spaces.MultiBinary(3), data_format="hdf5")
    frame = rewardlab.load(folder)
    (ep,) = reference(folder)
    assert frame.schema["obs"] == pl.Array(pl.Float64, 2) and frame.schema["action"] == pl.Array(pl.Int64, 3)
    assert np.array_equal(frame["obs"].to_numpy(), ep.observations[:-1])
    assert np.array_equal(frame["action"].to_numpy(), ep.actions)
    assert frame[FINAL_OBS].to_list() == [None, [2.0, 0.0]]
    assert frame["reward_recorded"].dtype == pl.Float64 and frame["reward_recorded"].to_list() == [1.0, 2.0]
    empty = build(tmp_path, monkeypatch, [], observation_space=BOX3, action_space=DISCRETE3, data_format="arrow",
                  dataset_id="empty-v0")
    frame = rewardlab.load(empty)
    assert frame.height == 0 and frame.columns == list(COLUMNS)
    assert attached(frame) == minari_spec(3, "float32")


@pytest.mark.parametrize("jpeg_encoding", [True, False])
def test_images_minari_stored_as_jpeg_are_refused_raw_ones_load(tmp_path, monkeypatch, jpeg_encoding):
    space = gymnasium.spaces.Box(0, 255, shape=(32, 32, 3), dtype=np.uint8)
    frames = [np.full((32, 32, 3), k * 40, np.uint8) for k in range(3)]
    monkeypatch.setenv("MINARI_DATASETS_PATH", str(tmp_path))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        minari.create_dataset_from_buffers(
            "pixels-v0", [EpisodeBuffer(observations=frames, actions=[0, 1], rewards=[0.0, 1.0],
                                        terminations=[False, True], truncations=[False, False])],
            observation_space=space, action_space=DISCRETE3, data_format="hdf5", jpeg_encoding=jpeg_encoding)
    folder = tmp_path / "pixels-v0" / "data"
    if jpeg_encoding:
        with pytest.raises(DataFormatError, match=r"holds images \(Box\(32, 32, 3\) uint8\) that Minari "
                           r"stored JPEG-encoded \[rule: unsupported_space\] Write the dataset again with "
                           r"jpeg_encoding=False"):
            rewardlab.load(folder)
        return
    frame = rewardlab.load(folder)
    assert frame.schema["obs"] == pl.Array(pl.Float64, 32 * 32 * 3)
    assert frame[FINAL_OBS][-1].to_list() == [80.0] * (32 * 32 * 3)


@pytest.mark.parametrize("data_format", ["arrow", "hdf5"])
def test_an_unfinished_episode_is_an_error_or_truncated(tmp_path, monkeypatch, data_format):
    folder = build(tmp_path, monkeypatch, [toy_episode(3, end="terminated"), toy_episode(4, end="none", seed=1)],
                   observation_space=BOX3, action_space=DISCRETE3, data_format=data_format)
    with pytest.raises(StepTableError, match=r"episode 1, step 3 is the episode's last step and is flagged "
                       r"neither.*\[rule: unfinished\].*unfinished='truncate'") as info:
        rewardlab.load(folder)
    assert info.value.path.endswith("main_data.hdf5" if data_format == "hdf5" else "part-0.arrow")
    frame = rewardlab.load(folder, unfinished="truncate")
    assert frame.filter(pl.col("episode_id") == 1)["truncated"].to_list() == [False, False, False, True]


# --------------------------------------------------------------------------
# errors: folders, files, counts
# --------------------------------------------------------------------------


def test_a_missing_or_foreign_folder_is_named(tmp_path):
    with pytest.raises(DataFormatError, match=r"nope: no such file \[rule: missing_file\]"):
        rewardlab.load(tmp_path / "nope", format="minari")
    (tmp_path / "notes.txt").write_text("hello")
    with pytest.raises(DataFormatError, match=r"is not a Minari dataset: it holds no metadata.json.*"
                       r"\[rule: not_minari\] Pass a Minari dataset's data folder"):
        rewardlab.load(tmp_path, format="minari")
    with pytest.raises(DataFormatError, match=r"holds 2 Minari datasets \(mountaincar-arrow-v0, "
                       r"mountaincar-hdf5-v0\), not one"):
        rewardlab.load(DATA, format="minari")
    (tmp_path / "metadata.json").write_text(json.dumps({"id": 0, "total_steps": 3}))
    with pytest.raises(DataFormatError, match=r"metadata.json: is an episode's metadata \(of the arrow storage\), "
                       r"not a dataset's \[rule: bad_metadata\] Pass the dataset's data folder"):
        rewardlab.load(tmp_path, format="minari")
    with pytest.raises(ParameterError, match="could not be detected"):
        rewardlab.load(tmp_path)  # an episode's metadata.json is not a dataset's
    (tmp_path / "metadata.json").write_text(json.dumps({"data_format": "zarr", "total_episodes": 1}))
    with pytest.raises(DataFormatError, match=r"names the storage format 'zarr'; rewardlab reads Minari 0.5's "
                       r"'arrow', 'parquet', 'hdf5' \[rule: bad_metadata\]"):
        rewardlab.load(tmp_path, format="minari")


@pytest.mark.parametrize("root,name", [(ARROW, "3/part-0.arrow"), (HDF5, "main_data.hdf5")],
                         ids=["arrow", "hdf5"])
def test_a_truncated_file_is_named(tmp_path, root, name):
    folder = copy_dataset(root, tmp_path)
    target = folder / name
    data = target.read_bytes()
    target.write_bytes(data[: len(data) // 2])
    with pytest.raises(DataFormatError, match=r"cannot be read as .*\[rule: damaged_file\] The file is damaged "
                       r"or incomplete") as info:
        rewardlab.load(folder)
    assert info.value.path == str(target)


def test_a_missing_episode_and_counts_that_disagree_are_named(tmp_path):
    folder = copy_dataset(ARROW, tmp_path)
    shutil.rmtree(folder / "5")
    with pytest.raises(DataFormatError, match=r"episode 5 of the 8 that .*metadata.json counts is missing "
                       r"\[rule: missing_episode\]"):
        rewardlab.load(folder)
    folder = copy_dataset(HDF5, tmp_path / "h")
    meta = json.loads((folder / "metadata.json").read_text())
    (folder / "metadata.json").write_text(json.dumps(meta | {"total_steps": meta["total_steps"] + 1}))
    with pytest.raises(DataFormatError, match=r"counts total_steps 1023, and its 8 episodes hold 1022 steps "
                       r"\[rule: step_count\]"):
        rewardlab.load(folder)
    (folder / "metadata.json").write_text(json.dumps(meta | {"total_episodes": 9}))
    with pytest.raises(DataFormatError, match=r"has no group 'episode_8'.*\[rule: missing_episode\]"):
        rewardlab.load(folder)
    (folder / "metadata.json").write_text(json.dumps(meta | {"total_episodes": 7, "total_steps": 892}))
    with pytest.raises(DataFormatError, match=r"counts total_episodes 7, and main_data.hdf5 holds groups up to "
                       r"episode_7 \(1 more\) \[rule: episode_count\]"):
        rewardlab.load(folder)


@pytest.mark.parametrize("data_format", ["arrow", "hdf5"])
def test_an_episode_without_its_final_observation_is_named(tmp_path, monkeypatch, data_format):
    folder = build(tmp_path, monkeypatch, [toy_episode(3), toy_episode(5, final=False, seed=1)],
                   observation_space=BOX3, action_space=DISCRETE3, data_format=data_format)
    stored = "episode_1/observations" if data_format == "hdf5" else "observations"
    with pytest.raises(StepTableError, match=rf"column '{stored}': episode 1 holds 5 observations for 5 steps.*"
                       r"\[rule: observation_count\]"):
        rewardlab.load(folder)


@pytest.mark.parametrize("data_format", ["arrow", "hdf5"])
def test_a_flag_before_the_episode_end_is_named(tmp_path, monkeypatch, data_format):
    episode = toy_episode(5, end="truncated")
    episode[3][2] = True  # terminations
    folder = build(tmp_path, monkeypatch, [toy_episode(2), episode], observation_space=BOX3,
                   action_space=DISCRETE3, data_format=data_format)
    stored = "episode_1/terminations" if data_format == "hdf5" else "terminations"
    with pytest.raises(StepTableError, match=rf"row 2: column '{stored}': episode 1, step 2 is flagged "
                       r"terminations before the episode's last step \(5 steps\) \[rule: flag_before_end\]"):
        rewardlab.load(folder)


def test_dict_observations_are_refused_naming_the_file_and_the_remedy(tmp_path, monkeypatch):
    space = gymnasium.spaces.Dict({"a": BOX3})
    monkeypatch.setenv("MINARI_DATASETS_PATH", str(tmp_path))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        minari.create_dataset_from_buffers(
            "dict-v0", [EpisodeBuffer(observations={"a": [np.zeros(3, np.float32)] * 2}, actions=[0], rewards=[1.0],
                                      terminations=[True], truncations=[False])],
            observation_space=space, action_space=DISCRETE3, data_format="hdf5")
    with pytest.raises(DataFormatError, match=r"dict-v0/data/metadata.json: the dataset's observation space is a "
                       r"Dict space.*\[rule: unsupported_space\].*FlattenObservation"):
        rewardlab.load(tmp_path / "dict-v0" / "data")


def test_a_missing_h5py_names_the_extra():
    code = (
        "import builtins\n"
        "real = builtins.__import__\n"
        "def guard(name, *a, **k):\n"
        "    if name.split('.')[0] == 'h5py':\n"
        "        raise ImportError('No module named ' + name)\n"
        "    return real(name, *a, **k)\n"
        "builtins.__import__ = guard\n"
        "import rewardlab\n"
        "assert rewardlab.load('data/minari/mountaincar-arrow-v0/data').height == 1022\n"
        "try:\n"
        "    rewardlab.load('data/minari/mountaincar-hdf5-v0/data')\n"
        "except ImportError as exc:\n"
        "    print(exc)\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT)
    assert out.returncode == 0, out.stderr
    from rewardlab.core.extras import missing_extra

    assert out.stdout.strip() == str(missing_extra("Reading a Minari dataset's HDF5 storage", "h5py", "minari"))


# --------------------------------------------------------------------------
# converted datasets, the script
# --------------------------------------------------------------------------


@pytest.mark.parametrize("suffix", [".parquet", ".arrow"])
def test_a_converted_dataset_keeps_the_final_observations(tmp_path, suffix):
    from rewardlab.dataset import convert

    out = tmp_path / f"mountaincar{suffix}"
    result = convert(HDF5, out, format="minari")
    loaded = rewardlab.load(out)
    assert loaded.equals(result.frame) and loaded.equals(rewardlab.load(HDF5, format="minari"))
    spec = attached(loaded)
    assert spec.states[0].final == FINAL_OBS
    assert not StepsArrays(loaded, spec).missing_final.any()


def test_the_cli_converts_and_describes_a_minari_dataset(tmp_path):
    from rewardlab.cli import main

    out = tmp_path / "m.parquet"
    assert main(["convert", str(ARROW / "data"), "--out", str(out)]) == 0
    assert attached(rewardlab.load(out)).states[0].final == FINAL_OBS
    out = subprocess.run([sys.executable, "-m", "rewardlab", "info", str(HDF5), "--format", "minari"],
                         capture_output=True, text=True, cwd=ROOT)
    assert out.returncode == 0, out.stderr
    assert "minari" in out.stdout and "1,022" in out.stdout and "infos      not read" in out.stdout


def test_the_script_rebuilds_the_committed_datasets(tmp_path):
    import importlib.util
    import os

    spec = importlib.util.spec_from_file_location("make_minari_data", ROOT / "scripts" / "make_minari_data.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    before = os.environ.get("MINARI_DATASETS_PATH")
    module.main(["--out", str(tmp_path)])
    assert os.environ.get("MINARI_DATASETS_PATH") == before
    assert sorted(p.name for p in tmp_path.iterdir()) == ["mountaincar-arrow-v0", "mountaincar-hdf5-v0"]
    for root in (ARROW, HDF5):
        assert rewardlab.load(tmp_path / root.name / "data").equals(rewardlab.load(root / "data"))
