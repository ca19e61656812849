"""Scaling that blows rare values up is said, with the numbers, in Python and on the command line (issue 23)."""

from __future__ import annotations

import math
import warnings

import numpy as np
import polars as pl
import pytest

import rewardlab
from rewardlab.cli import main
from rewardlab.core.errors import RewardlabWarning
from rewardlab.core.spec import FrameSpec, attach
from rewardlab.scaling import (
    BLOWUP_LIMIT, ScalingBlowUpWarning, StepsScaling, export_scaling_plugin, scaling_blowup,
)

SPEC = FrameSpec(name="acrobot", episode=("episode_id",), step="t", terminated="terminated", truncated="truncated",
                 columns=("reward_recorded",), contract="steps")


def acrobot(lengths=(500, 500, 500, 420, 380, 500)) -> pl.DataFrame:
    """Acrobot's rewards: -1 on every step, 0 on the step that reaches the goal; the 500th step truncates."""
    rows = {"episode_id": [], "t": [], "reward_recorded": [], "done_recorded": [], "terminated": [], "truncated": []}
    for e, n in enumerate(lengths):
        for t in range(n):
            last = t == n - 1
            goal = last and n < 500
            rows["episode_id"].append(e)
            rows["t"].append(t)
            rows["reward_recorded"].append(0.0 if goal else -1.0)
            rows["done_recorded"].append(last)
            rows["terminated"].append(goal)
            rows["truncated"].append(last and not goal)
    return attach(pl.DataFrame(rows), SPEC)


def test_a_near_constant_reward_warns_with_the_numbers(tmp_path):
    frame = acrobot()
    constants = rewardlab.normalization_constants(frame, "recorded")
    raw = frame["reward_recorded"].to_list()
    mean = math.fsum(raw) / len(raw)  # the constants, by a plain loop
    std = math.sqrt(math.fsum((x - mean) ** 2 for x in raw) / len(raw))
    assert constants.mean == pytest.approx(mean, rel=1e-12) and constants.std == pytest.approx(std, rel=1e-12)
    scaled = [(x - constants.mean) / constants.std for x in raw]
    beyond = [i for i, v in enumerate(scaled) if abs(v) > BLOWUP_LIMIT]
    assert len(beyond) == 2 and all(raw[i] == 0.0 for i in beyond)  # the two goals
    out = tmp_path / "scaled.py"
    with pytest.warns(ScalingBlowUpWarning) as caught:
        result = export_scaling_plugin(constants, out, data=frame)
    [w] = [w for w in caught if issubclass(w.category, ScalingBlowUpWarning)]
    assert w.filename == __file__  # the caller's line, not rewardlab's
    b = result.blowup
    assert (b.raw, b.count, b.rows, b.row) == (0.0, 2, frame.height, beyond[0])
    assert b.largest == scaled[beyond[0]] and b.largest > 30  # bit for bit: (x - shift) / scale
    assert (b.shift, b.scale) == (constants.mean, constants.std)
    message = str(w.message)
    assert message == str(b) and result.warnings == (message,)
    assert f"reward_recorded 0 becomes {b.largest:.6g}" in message
    assert f"shift {constants.mean!r}, scale {constants.std!r}" in message and f"2 of {frame.height:,} steps" in message
    assert str(result).endswith("\nwarning: " + message)
    assert out.exists()


def test_an_error_filter_writes_nothing(tmp_path):
    frame = acrobot()
    constants = rewardlab.normalization_constants(frame, "recorded")
    with warnings.catch_warnings():
        warnings.simplefilter("error", ScalingBlowUpWarning)
        with pytest.raises(ScalingBlowUpWarning):
            export_scaling_plugin(constants, tmp_path / "scaled.py", data=frame)
    assert list(tmp_path.iterdir()) == []


def test_a_reward_that_varies_does_not_warn(tmp_path):
    rng = np.random.default_rng(3)
    frame = acrobot().with_columns(pl.Series("reward_recorded", rng.normal(2.0, 3.0, 2800)))
    frame = attach(frame, SPEC)
    constants = rewardlab.normalization_constants(frame, "recorded")
    with warnings.catch_warnings():
        warnings.simplefilter("error", RewardlabWarning)
        result = export_scaling_plugin(constants, tmp_path / "scaled.py", data=frame)
    assert result.blowup is None and result.warnings == () and "warning:" not in str(result)
    scaling = StepsScaling(constants)
    assert scaling_blowup(scaling, frame) is None
    tight = scaling_blowup(scaling, frame, limit=1.0)  # the same rule, a lower limit: a plain count
    scaled = (frame["reward_recorded"].to_numpy() - constants.mean) / constants.std
    assert tight.count == sum(1 for v in scaled if abs(v) > 1.0)
    assert abs(tight.largest) == max(abs(v) for v in scaled)


def test_the_command_line_prints_the_warning(tmp_path, capsys):
    from rewardlab.sources.storage import write_dataset

    dataset = tmp_path / "acrobot.parquet"
    write_dataset(acrobot(), dataset, spec=SPEC)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ScalingBlowUpWarning)  # the Python warning: see the printed line
        assert main(["export", "scaling", "--data", str(dataset), "--out", str(tmp_path / "scaled.py")]) == 0
    printed = capsys.readouterr().out
    assert "check-plugin: PASS" in printed
    assert "\nwarning: scaling blows up rare values: reward_recorded 0 becomes" in printed
