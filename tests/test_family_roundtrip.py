"""The family core's round trip (rewardlab.families.roundtrip): an exported file equals its family in every batch
mode of the frame's contract, bit for bit, and a file that differs is caught (mahjong and steps families alike)."""

from __future__ import annotations

import numpy as np
import polars as pl

import rewardlab
from conftest import ROOT
from rewardlab.domains.mahjong.families import RoundDelta
from rewardlab.export import export_plugin
from rewardlab.families.roundtrip import family_roundtrip, plugin_roundtrip
from rewardlab.plugins.batch_modes import BATCH_MODES
from rewardlab.core.spec import keep_spec
from rewardlab.scaling import StepsScaling


def test_a_mahjong_export_equals_its_family_in_every_batch_mode(sample_frame, tmp_path):
    family = RoundDelta.from_preset("thousands")
    path = export_plugin(family, tmp_path / "delta.py")
    rt = family_roundtrip(family, path, sample_frame, check_rows=5_000)
    assert set(rt.differing) == set(BATCH_MODES) and rt.rows == sample_frame.height
    assert all(d == (0, 0) for d in rt.differing.values()) and rt.ok, str(rt)


def test_an_altered_file_is_caught_in_every_mode(sample_frame, tmp_path):
    family = RoundDelta.from_preset("thousands")
    path = export_plugin(family, tmp_path / "delta.py")
    text = path.read_text()
    body = text.rstrip() + "\n    data['next', 'reward'] = data['next', 'reward'] * 1.0000001\n"
    assert "def get_reward" in text
    path.write_text(body)
    rt = family_roundtrip(family, path, sample_frame, modes=("episodes", "sequential"), check_rows=2_000)
    assert not rt.ok
    assert all(rewards > 0 for rewards, _ in rt.differing.values()), rt.differing


def test_a_steps_scaling_export_goes_through_the_same_round_trip(tmp_path):
    recorded = rewardlab.load(ROOT / "data" / "gym" / "mountaincar_scripted.parquet")
    noise = np.random.default_rng(3).normal(0.5, 2.0, recorded.height)  # MountainCar's own reward is constant
    frame = keep_spec(recorded, recorded.with_columns(pl.Series("reward_recorded", noise)))
    scaling = StepsScaling(rewardlab.normalization_constants(frame, "recorded"), center=False)
    path = tmp_path / "scale.py"
    path.write_text(scaling.render())
    expected = scaling.evaluate(frame)
    rt = plugin_roundtrip(path, frame, expected, contract="steps", check_rows=2_000)
    assert set(rt.differing) == set(BATCH_MODES) and rt.ok, str(rt)
    rewards = np.asarray(expected[0])
    assert np.isfinite(rewards).all()
