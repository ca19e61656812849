"""Reward-to-go, GAE and trajectory returns of a dataset folder, part by part: bit for bit the whole frame's."""

from __future__ import annotations

import numpy as np
import polars as pl
import pytest

import rewardlab
from analysis_data import with_rewards
from conftest import ROOT
from rewardlab.analysis.return_tables import gae, reward_to_go, trajectory_returns
from rewardlab.analysis.returns_parts import gae_of_dataset, reward_to_go_of_dataset, step_columns
from rewardlab.core.errors import OutputExistsError, ParameterError
from rewardlab.core.spec import attach, attached
from rewardlab.sources.datasets import PartedDataset, PartWriter

MOUNTAINCAR = ROOT / "data" / "gym" / "mountaincar_scripted.parquet"


def write_folder(frame: pl.DataFrame, out, part_rows: int) -> PartedDataset:
    """``frame`` cut into parts of whole episodes of about ``part_rows`` rows."""
    with PartWriter(out, spec=attached(frame), part_rows=part_rows, writers=1) as w:
        w.add(frame)
    return PartedDataset(out)


def assert_bits(got, expected) -> None:
    """The same columns, in the same order, with the same bits (floats compared as their 64-bit patterns)."""
    got = got.to_frame() if isinstance(got, pl.Series) else got
    expected = expected.to_frame() if isinstance(expected, pl.Series) else expected
    assert got.columns == expected.columns and got.height == expected.height
    for name in expected.columns:
        a, b = got[name], expected[name]
        assert a.dtype == b.dtype, name
        if b.dtype == pl.Float64:
            assert np.array_equal(a.to_numpy().view(np.uint64), b.to_numpy().view(np.uint64)), name
        else:
            assert a.to_list() == b.to_list(), name


def value(states: np.ndarray) -> np.ndarray:
    """A state-value function of MountainCar observations, state by state."""
    return 10.0 * states[:, 0].astype(np.float64) - 3.0 * states[:, 1].astype(np.float64)


@pytest.fixture(scope="module")
def recording():
    """MountainCar: 20 episodes ending terminated or truncated, final states kept, a value column, V(s[t+1])."""
    frame = rewardlab.load(MOUNTAINCAR)
    spec = attached(frame)
    rng = np.random.default_rng(7)
    v = rng.normal(-50.0, 10.0, frame.height)
    term, trunc = frame["terminated"].to_numpy(), frame["truncated"].to_numpy()
    final_v = value(np.stack(frame["final_obs"].fill_null([0.0, 0.0]).to_list()))
    nv = np.where(term, np.nan, np.where(trunc, final_v, np.append(v[1:], np.nan)))
    frame = frame.with_columns(reward_r=pl.col("reward_recorded") * 0.1 + pl.Series(rng.normal(0, 1, frame.height)),
                               done_r=pl.col("done_recorded") | pl.Series(rng.random(frame.height) < 0.01),
                               v=pl.Series(v), next_v=pl.Series(nv))
    return attach(frame, spec)


@pytest.fixture(scope="module")
def recording_folder(recording, tmp_path_factory):
    ds = write_folder(recording, tmp_path_factory.mktemp("rec") / "corpus", 150)
    assert len(ds) >= 10 and ds.rows == recording.height
    return ds


CASES = {
    "rtg column": (reward_to_go, dict(gamma=0.97, next_value="next_v")),
    "rtg final state": (reward_to_go, dict(gamma=0.97, next_value=value)),
    "rtg flagged": (reward_to_go, dict(gamma=0.9, flag_truncated=True)),
    "rtg gamma 1": (reward_to_go, dict(gamma=1.0, next_value=value, flag_truncated=True)),
    "gae column": (gae, dict(value="v", gamma=0.99, lmbda=0.95, next_value="next_v")),
    "gae final state": (gae, dict(value="v", gamma=0.99, lmbda=0.95, next_value=value)),
    "gae terminated": (gae, dict(value="v", gamma=0.9, lmbda=1.0, terminated="terminated", next_value=value)),
}


@pytest.mark.parametrize("case", sorted(CASES))
@pytest.mark.parametrize("workers", [1, 3])
def test_a_folder_gives_the_whole_frames_values_bit_for_bit(recording, recording_folder, case, workers):
    fn, options = CASES[case]
    expected = fn(recording, "r", **options)
    assert_bits(fn(recording_folder.folder, "r", workers=workers, **options), expected)


def test_written_folder_holds_the_same_values_part_for_part(recording, recording_folder, tmp_path):
    expected = gae(recording, "r", value="v", gamma=0.99, lmbda=0.95, next_value=value)
    out = gae(recording_folder.folder, "r", value="v", gamma=0.99, lmbda=0.95, next_value=value,
              out=tmp_path / "adv", workers=2)
    assert isinstance(out, PartedDataset) and out.base.folder == recording_folder.folder
    assert [p.rows for p in out.manifest.parts] == [p.rows for p in recording_folder.manifest.parts]
    assert [p.episodes for p in out.manifest.parts] == [p.episodes for p in recording_folder.manifest.parts]
    assert out.columns == ("episode_id", "advantage", "value_target")
    out.verify()
    assert_bits(out.load(["advantage", "value_target"]).select("advantage", "value_target"), expected)
    joined = out.read(3, ["obs", "advantage"])  # the base's columns through the output's manifest
    assert joined.columns == ["episode_id", "obs", "advantage"]
    rtg = reward_to_go(recording_folder.folder, "r", gamma=0.9, flag_truncated=True, out=tmp_path / "rtg")
    assert rtg.columns == ("episode_id", *step_columns("reward_to_go", "r", flag_truncated=True))
    assert_bits(rtg.load().drop("episode_id"), reward_to_go(recording, "r", gamma=0.9, flag_truncated=True))
    # an existing output is refused, replaced with overwrite; the input never
    with pytest.raises(OutputExistsError):
        reward_to_go(recording_folder.folder, "r", gamma=0.5, out=tmp_path / "rtg")
    again = reward_to_go(recording_folder.folder, "r", gamma=0.5, out=tmp_path / "rtg", overwrite=True)
    assert_bits(again.load().drop("episode_id"), reward_to_go(recording, "r", gamma=0.5).to_frame())
    with pytest.raises(ParameterError, match="`out` should not name one of the command's inputs"):
        reward_to_go(recording_folder.folder, "r", gamma=0.5, out=recording_folder.folder, overwrite=True)
    assert not list(tmp_path.glob("*.partial"))
    with pytest.raises(ParameterError, match="`out` applies to a dataset folder"):
        reward_to_go(recording, "r", gamma=0.5, out=tmp_path / "x")


def test_a_rewards_folder_reads_values_and_final_states_from_its_base(recording, tmp_path):
    """A rewards folder (what `apply --out` writes) holds keys, flags and rewards; value and final states are
    its base's, read part by part."""
    rewards = ["reward_r", "done_r"]
    base = write_folder(attach(recording.drop(rewards), attached(recording)), tmp_path / "corpus", 200)
    keep = ["episode_id", "t", "terminated", "truncated"]
    spec = base.spec.project(keep)
    starts = base.part_starts()
    with PartWriter(tmp_path / "rewards", spec=spec, base=base) as w:
        for i in range(len(base)):
            rows = recording.slice(int(starts[i]), int(starts[i + 1] - starts[i]))
            w.write_part(i, attach(base.read(i, keep).hstack(rows.select(rewards).get_columns()), spec))
    folder = tmp_path / "rewards"
    assert "v" not in PartedDataset(folder).columns and "final_obs" not in PartedDataset(folder).columns
    for fn, options in CASES.values():
        assert_bits(fn(folder, "r", **options), fn(recording, "r", **options))
    assert_bits(trajectory_returns(folder, "r"), trajectory_returns(recording, "r"))
    out = gae_of_dataset(folder, "r", value="v", gamma=0.9, lmbda=0.9, next_value=value, out=tmp_path / "adv")
    assert out.base.folder == folder.resolve() or out.base.folder == folder


def test_trajectory_returns_of_a_folder(recording, recording_folder):
    expected = trajectory_returns(recording, "r")
    got = trajectory_returns(recording_folder.folder, "r", workers=2)
    assert_bits(got, expected)
    assert attached(got) == attached(expected)


def test_kanachan_games_cut_into_parts(sample_frame, tmp_path):
    """Kanachan: trajectories per seat and per round (the plug-in's done), across many parts."""
    frame = with_rewards(sample_frame)
    frame = attach(frame.with_columns(v=pl.Series(np.random.default_rng(3).normal(0, 1, frame.height))),
                   attached(sample_frame))
    folder = write_folder(frame, tmp_path / "corpus", max(50, frame.height // 12)).folder
    for name in ("points", "top"):
        for gamma in (0.99, 1.0):
            assert_bits(reward_to_go(folder, name, gamma=gamma), reward_to_go(frame, name, gamma=gamma))
        assert_bits(gae(folder, name, value="v", gamma=0.99, lmbda=0.9), gae(frame, name, value="v", gamma=0.99,
                                                                          lmbda=0.9))
        assert_bits(trajectory_returns(folder, name), trajectory_returns(frame, name))


def test_errors_name_the_part(recording, recording_folder):
    with pytest.raises(ParameterError, match=r"`next_value` should name a column holding V\(s\[t\+1\]\).* \(in part "
                                             r"\d+, .*part-\d+\.parquet: rows counted from the part's first row\)"):
        gae(recording_folder.folder, "r", value="v", gamma=0.9, lmbda=0.9)
    with pytest.raises(Exception, match="nope"):
        gae_of_dataset(recording_folder.folder, "r", value="nope", gamma=0.9, lmbda=0.9)
    with pytest.raises(ParameterError, match="`gamma` should be in"):
        reward_to_go_of_dataset(recording_folder.folder, "r", gamma=1.5)
