"""The normalization session and ``plot --kind normalization`` on a dataset folder: the whole frame's figures.

One frame is cut into many parts; the folder's replays carry the normalizers'
state from part to part and must equal the whole-frame replay bit for bit,
and so must every figure the session and the plot show.
"""

from __future__ import annotations

import numpy as np
import polars as pl
import pytest

import rewardlab
from rewardlab.analysis.limits import normalization_limits
from rewardlab.analysis.normalizer_parts import dataset_normalized_rewards, sample_positions
from rewardlab.analysis.normalizers import normalization_summary, normalized_rewards
from rewardlab.analysis.stats import normalization_constants
from rewardlab.core.errors import ParameterError
from rewardlab.core.spec import FrameSpec, attach
from rewardlab.sessions import NormalizationSession
from rewardlab.sources.datasets import PartWriter, open_dataset


@pytest.fixture(scope="module")
def reward_frame(sample_frame):
    from rewardlab.domains.mahjong.families import RoundDelta

    return RoundDelta.from_preset("thousands").with_columns(sample_frame, "delta")


@pytest.fixture(scope="module")
def folder(reward_frame, tmp_path_factory):
    path = tmp_path_factory.mktemp("norm") / "rewards"
    with PartWriter(path, spec=rewardlab.spec_of(reward_frame), part_rows=3_000) as writer:
        writer.add(reward_frame)
    assert len(open_dataset(path)) > 20  # many parts: the state crosses many boundaries
    return path


def _same(a: pl.DataFrame, b: pl.DataFrame) -> None:
    assert a.columns == b.columns
    for c in a.columns:  # bit for bit (NaN-safe)
        x, y = a[c].to_numpy(), b[c].to_numpy()
        assert x.dtype == y.dtype, c
        assert (x.tolist() == y.tolist()) if x.dtype == object else x.tobytes() == y.tobytes(), c


@pytest.mark.parametrize("scope", ["nonzero", "end_of_round", "episode_return"])
def test_session_on_a_folder_shows_the_frames_figures(reward_frame, folder, scope):
    on_frame = NormalizationSession(reward_frame, reward="delta", scope=scope)
    on_folder = NormalizationSession(str(folder), reward="delta", scope=scope)
    assert on_folder.frame is None and on_folder.scopes == on_frame.scopes
    for gamma in (0.99, 0.5):
        on_frame.gamma = on_folder.gamma = gamma
        a, b = on_frame.results, on_folder.results
        assert a.constants == b.constants and a.constants_error == b.constants_error
        assert a.before == b.before and a.after == b.after and a.note == b.note
        _same(a.replays, b.replays)
        _same(a.summary, b.summary)
        assert a.fraction_clipped == b.fraction_clipped and not b.sampled
        assert np.array_equal(b.sample_rows, np.arange(reward_frame.height))
        la, lb = normalization_limits(a.replays), normalization_limits(b.replays)
        assert la == lb
        assert on_frame.live_summary() == on_folder.live_summary()
    assert on_frame.data_fingerprint() == on_folder.data_fingerprint()
    for value, column in ((2.5, "raw"), (-1.0, "gymnasium")):
        key = on_frame.episode_near(value, column=column)
        assert on_folder.episode_near(value, column=column) == key
        _same(on_frame.episode(key).steps, on_folder.episode(key).steps)


def test_replays_carry_the_state_across_parts_with_truncated_episodes(tmp_path):
    rng = np.random.default_rng(7)
    lengths = rng.integers(1, 9, size=300)
    e = np.repeat(np.arange(lengths.size), lengths)
    last = np.r_[e[1:] != e[:-1], True]
    trunc = last & (rng.random(e.size) < 0.5)  # half the episodes are cut: Gymnasium carries G across them
    spec = FrameSpec(name="steps", episode=("e",), terminated="term", truncated="trunc")
    frame = attach(pl.DataFrame({"e": e, "term": last & ~trunc, "trunc": trunc,
                                 "reward_a": rng.normal(size=e.size) * (rng.random(e.size) < 0.6),
                                 "done_a": rng.random(e.size) < 0.05}), spec)
    with PartWriter(tmp_path / "f", spec=spec, part_rows=7) as writer:
        writer.add(frame)
    c = normalization_constants(frame, "a", scope="nonzero", spec=spec)
    ref = normalized_rewards(frame, "a", constants=c, gamma=0.9, clip_reward=1.5, spec=spec)
    out = dataset_normalized_rewards(tmp_path / "f", "a", constants=c, gamma=0.9, clip_reward=1.5,
                                     workers=2, progress=False)
    _same(ref, out.replays)
    _same(normalization_summary(ref), out.summary)
    # past the limit: the same rows' values, and the summary of every step to rounding
    sampled = dataset_normalized_rewards(tmp_path / "f", "a", constants=c, gamma=0.9, clip_reward=1.5,
                                         limit=300, progress=False)
    assert sampled.sampled and sampled.replays.height == 300 and np.all(np.diff(sampled.rows) > 0)
    _same(ref[sampled.rows], sampled.replays)
    whole = normalization_summary(ref)
    assert sampled.summary["count"].to_list() == whole["count"].to_list()
    for column in ("mean", "std", "min", "max", "nonzero_mean", "nonzero_std", "fraction_clipped"):
        np.testing.assert_allclose(sampled.summary[column].to_numpy(), whole[column].to_numpy(), rtol=1e-9,
                                   atol=1e-15)
    assert sampled.fraction_clipped == float(ref["sb3_clipped"].mean())


def test_sample_positions_are_uniform_and_seeded():
    rows = [1000] * 50
    a, b = sample_positions(rows, limit=5000), sample_positions(rows, limit=5000)
    assert sum(p.size for p in a) == 5000 and all(np.array_equal(x, y) for x, y in zip(a, b))
    counts = np.array([p.size for p in a])
    assert counts.min() > 50 and counts.max() < 150  # about 100 a part
    assert all(np.all(np.diff(p) > 0) and (p.size == 0 or p[-1] < 1000) for p in a)
    assert sample_positions(rows, limit=50_000) is None
    with pytest.raises(ParameterError, match="limit"):
        sample_positions(rows, limit=0)


def test_plot_normalization_of_a_folder(reward_frame, folder, tmp_path):
    from rewardlab.cli import main

    out = tmp_path / "n.png"
    assert main(["plot", str(folder), "--kind", "normalization", "--reward", "delta", "--out", str(out),
                 "--workers", "2"]) == 0
    assert out.stat().st_size > 1000
    _same(normalized_rewards(reward_frame, "delta"), dataset_normalized_rewards(folder, "delta").replays)


def test_folder_session_refuses_plugins_it_cannot_read(folder, tmp_path):
    plugin = tmp_path / "other.py"
    plugin.write_text("def reward(batch):\n    return batch\n")
    with pytest.raises(ParameterError, match="rewardlab apply"):
        NormalizationSession(str(folder), plugins=[plugin])
    s = NormalizationSession(str(folder), reward="delta")
    assert "steps contract" in s.export_blocker()  # as on the frame: kanachan data exports a family
