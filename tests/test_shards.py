"""Shard-ready execution: a stream of episode-aligned shards gives the results of one frame, bit for bit."""

from __future__ import annotations

import hashlib

import numpy as np
import polars as pl
import pytest

from rewardlab.plugins.batch_modes import SHUFFLE_WINDOW, plan_batches, plan_shuffled
from rewardlab.contracts.kanachan.batching import FrameArrays
from rewardlab.core.errors import ContractError, ParameterError, ShardError
from rewardlab.plugins import apply_plugins, check_plugin, load_plugin
from rewardlab.plugins.shards import BatchStream, merge_outcomes, run_shards, split_shards, stream_shards

# the test plug-ins' rewards are not normalized; that warning is not what is tested here
pytestmark = pytest.mark.filterwarnings("ignore::rewardlab.core.errors.RewardScaleWarning")

# rewards that depend on the whole batch (minus the batch mean), and a record of every batch
BATCHY = """\
import hashlib
import torch

BATCHES = []


def get_reward(data, contiguous):
    h = hashlib.sha256()
    for key, value in data.items(include_nested=True, leaves_only=True):
        h.update(repr(key).encode())
        h.update(value.numpy().tobytes())
    BATCHES.append((h.hexdigest(), contiguous))
    x = data["sparse"][:, 3].double() + 0.25 * data["next", "numeric"][:, 2].double() / 1000
    data["next", "reward"] = (x - x.mean()).float()
"""

# a NaN reward on one action of one late game: a contract problem deep in the stream
LATE_NAN = """\
import torch


def get_reward(data, contiguous):
    bad = ((data["numeric"] == torch.tensor({numeric})).all(dim=1)
           & (data["progression"] == torch.tensor({progression})).all(dim=1))
    data["next", "reward"] = torch.where(bad, float("nan"), 0.5 * data["action"].double())
"""


def _frame(sample_frame, games):
    ends = sample_frame["end_of_game"].to_numpy().nonzero()[0]
    return sample_frame.head(int(ends[4 * games - 1]) + 1)


@pytest.fixture(scope="module")
def frame(sample_frame):
    """The first 12 games of the sample (48 episodes, whole)."""
    return _frame(sample_frame, 12)


def _random_ends(rng, episodes):
    return np.cumsum(rng.integers(1, 40, size=episodes))


def _random_split(rng, ends, shards):
    """Shard ends: a random subset of the episode ends (always the last)."""
    cut = np.sort(rng.choice(ends.size, size=min(shards, ends.size), replace=False))
    stops = np.unique(np.append(ends[cut], ends[-1]))
    if rng.random() < 0.3:  # an empty shard somewhere
        at = int(rng.integers(0, stops.size))
        stops = np.insert(stops, at, stops[at - 1] if at else 0)
    return stops


def _streamed(stops, ends, mode, **settings):
    """Plan with BatchStream shard by shard; batches in stream positions (a plain loop)."""
    stream = BatchStream(mode, **settings)
    out, start, window_start = [], 0, 0
    for k, stop in enumerate(stops):
        shard_ends = ends[(ends > start) & (ends <= stop)] - start
        done, plan = stream.feed(shard_ends, last=k == len(stops) - 1)
        for rows, contiguous in plan:
            rows = np.arange(rows.start, rows.stop) if isinstance(rows, slice) else np.asarray(rows)
            assert rows.size == 0 or rows.max() < done  # only rows the window finished
            out.append((rows + window_start, contiguous))
        window_start += done
        start = stop
    assert stream.carried == 0 and window_start == (ends[-1] if ends.size else 0)
    return out


def _flat(plan):
    return [(np.arange(r.start, r.stop) if isinstance(r, slice) else np.asarray(r), c) for r, c in plan]


def _same_plans(a, b):
    return len(a) == len(b) and all(ra.tolist() == rb.tolist() and ca == cb
                                    for (ra, ca), (rb, cb) in zip(a, b))


SETTINGS = ([("episodes", dict(batch_size=1, contiguous=c)) for c in (False, True)]
            + [(m, dict(batch_size=b)) for m in ("sequential", "fragments") for b in (1, 3, 16, 64)]
            + [("dataloader", dict(batch_size=b, num_workers=w)) for b in (1, 5, 16) for w in (0, 1, 2, 3)]
            + [("shuffled", dict(batch_size=b, seed=s, shuffle_window=w))
               for b in (4, 16) for s in (0, 9) for w in (7, 64, 100, SHUFFLE_WINDOW)])


@pytest.mark.parametrize("mode, settings", SETTINGS, ids=lambda x: str(x))
def test_streamed_plans_equal_the_single_frame_plan_over_random_shard_splits(mode, settings):
    rng = np.random.default_rng(11)
    for trial in range(40):
        ends = _random_ends(rng, int(rng.integers(1, 30)))
        whole = _flat(plan_batches(mode, ends, **settings))
        for shards in (1, 2, int(rng.integers(1, ends.size + 1)), ends.size):
            stops = _random_split(rng, ends, shards)
            assert _same_plans(_streamed(stops, ends, mode, **settings), whole), (trial, stops.tolist())


def test_windowed_shuffle_matches_a_loop_and_is_today_s_shuffle_within_one_window():
    for n, batch, window, seed in ((0, 3, 5, 1), (17, 4, 5, 2), (40, 8, 16, 3), (33, 5, 40, 4), (9, 2, 9, 0)):
        rng = np.random.default_rng(seed)
        expected = []
        for start in range(0, n, window):
            perm = rng.permutation(min(window, n - start)) + start
            expected += [perm[a:a + batch] for a in range(0, perm.size, batch)]
        got = [rows for rows, _ in plan_shuffled(n, batch, seed, window=window)]
        assert [r.tolist() for r in got] == [r.tolist() for r in expected]
    # with every row in one window: one permutation of all rows (the definition before windows)
    perm = np.random.default_rng(6).permutation(50)
    assert [r.tolist() for r, _ in plan_shuffled(50, 8, 6)] == [perm[a:a + 8].tolist() for a in range(0, 50, 8)]


def test_shuffle_window_is_validated_with_its_name_and_value():
    with pytest.raises(ParameterError, match=r"shuffle_window.*integer >= 1.*0"):
        list(plan_batches("shuffled", np.array([3]), batch_size=2, shuffle_window=0))


def test_split_shards_cuts_whole_episodes(frame):
    shards = split_shards(frame, rows_per_shard=300)
    assert len(shards) > 5 and pl.concat(shards).equals(frame)
    for shard in shards:
        assert shard["end_of_game"][-1]
        assert shard.height >= 300 or shard is shards[-1]


def _digest(series: pl.Series) -> str:
    return hashlib.sha256(series.to_numpy().tobytes()).hexdigest()


RUNS = [("episodes", None, False), ("episodes", None, True), ("sequential", 64, None),
        ("sequential", 1000, None), ("dataloader", 64, None), ("dataloader", 700, None),
        ("fragments", 16, None), ("shuffled", 64, None), ("shuffled", 500, None)]


@pytest.mark.parametrize("mode, size, contiguous", RUNS)
def test_shards_give_the_single_frame_batches_and_rewards_bit_for_bit(tmp_path, frame, mode, size, contiguous):
    path = tmp_path / "batchy.py"
    path.write_text(BATCHY)
    plugin = load_plugin(path)
    batches = plugin.get_reward.__globals__["BATCHES"]
    options = dict(batch_mode=mode, batch_size=size, contiguous=contiguous, seed=4, isolate=False,
                   progress=False)
    whole = apply_plugins(frame, plugin, **options)
    reference = list(batches)
    assert len(reference) > 3
    for rows_per_shard in (1, 97, 1200):
        batches.clear()
        shards = split_shards(frame, rows_per_shard=rows_per_shard)
        out = apply_plugins(shards, plugin, **options)
        assert isinstance(out, list) and [s.height for s in out] == [s.height for s in shards]
        assert batches == reference, rows_per_shard  # every call: same rows, same TensorDict, same flag
        joined = pl.concat(out)
        for column in ("reward_batchy", "done_batchy"):
            assert joined[column].dtype == whole[column].dtype
            assert _digest(joined[column]) == _digest(whole[column]), (rows_per_shard, column)


def test_a_shuffle_window_smaller_than_the_data_gives_the_same_batches_in_shards(tmp_path, frame):
    path = tmp_path / "batchy.py"
    path.write_text(BATCHY)
    plugin = load_plugin(path)
    batches = plugin.get_reward.__globals__["BATCHES"]
    settings = dict(mode="shuffled", batch_size=64, seed=2, shuffle_window=1000)
    arrays = FrameArrays(frame)
    [whole] = run_shards([arrays], [plugin], **settings)
    reference = list(batches)
    assert len(reference) > frame.height // 64
    batches.clear()
    [parts] = run_shards([FrameArrays(s) for s in split_shards(frame, rows_per_shard=333)], [plugin],
                         **settings)
    assert batches == reference
    assert parts.rewards.tobytes() == whole.rewards.tobytes() and parts.calls == whole.calls


def test_check_report_of_shards_is_the_frame_s_report(tmp_path, frame):
    path = tmp_path / "batchy.py"
    path.write_text(BATCHY)
    whole = check_plugin(frame, path, isolate=False, progress=False, batch_sizes=(64, 900))
    shards = check_plugin(split_shards(frame, rows_per_shard=450), path, isolate=False, progress=False,
                          batch_sizes=(64, 900))
    assert not whole.ok and whole.differences  # batch statistics: the runs differ, with rows named
    assert str(shards) == str(whole)


def test_a_problem_in_a_late_shard_is_reported_with_the_frame_s_rows_and_file_line(tmp_path, frame):
    last_game = frame.filter(pl.col("game_id") == frame["game_id"][-1])
    row = last_game.row(10, named=True)
    path = tmp_path / "late_nan.py"
    path.write_text(LATE_NAN.format(numeric=list(row["numeric"]), progression=list(row["progression"])))
    messages = []
    for data in (frame, split_shards(frame, rows_per_shard=250)):
        with pytest.raises(ContractError) as info:
            apply_plugins(data, path, batch_mode="sequential", batch_size=100, isolate=False,
                          progress=False)
        messages.append(str(info.value))
    assert messages[0] == messages[1]
    assert "reward_not_finite" in messages[0] and "sample.tsv.gz:" in messages[0]
    match = ((frame["numeric"].to_numpy() == np.array(row["numeric"])).all(axis=1)
             & (frame["progression"].to_numpy() == np.array(row["progression"])).all(axis=1))
    at = int(np.flatnonzero(match)[0])  # the first transition the plug-in gives NaN
    assert at > frame.height * 3 // 4  # in one of the last shards
    hit = frame.row(at, named=True)
    assert f"batch {at // 100} of mode 'sequential'" in messages[0]
    assert f"frame row {at} (game {hit['game_id']}, seat {hit['seat']}, step {hit['step']}; " in messages[0]
    assert f"sample.tsv.gz:{hit['source_line']}) [rule: reward_not_finite]" in messages[0]


def test_results_merge_shard_by_shard(tmp_path, frame):
    path = tmp_path / "batchy.py"
    path.write_text(BATCHY)
    plugin = load_plugin(path)
    shards = split_shards(frame, rows_per_shard=800)
    per_shard = [run_shards([FrameArrays(s)], [plugin], mode="episodes", batch_size=None)[0] for s in shards]
    [whole] = run_shards([FrameArrays(frame)], [plugin], mode="episodes", batch_size=None)
    merged = merge_outcomes(per_shard)  # episodes never cross a shard: each shard can run alone
    assert merged.rewards.tobytes() == whole.rewards.tobytes()
    assert merged.calls == whole.calls == 48 and merged.reward_dtypes == ("float32",)


def test_a_shard_cut_inside_an_episode_is_refused_naming_the_shard(tmp_path, frame):
    path = tmp_path / "batchy.py"
    path.write_text(BATCHY)
    shards = [frame.head(500), frame.slice(500)]
    with pytest.raises(ShardError, match=r"^shard 0: the frame's last row is not the end of a game.*"
                                          r"A shard holds whole episodes"):
        apply_plugins(shards, path, isolate=False, progress=False)


def test_shards_must_be_data_frames(tmp_path, frame):
    path = tmp_path / "batchy.py"
    path.write_text(BATCHY)
    with pytest.raises(ParameterError, match=r"shard 1 is a LazyFrame.*Collect LazyFrames first"):
        apply_plugins([frame, frame.lazy()], path, isolate=False, progress=False)
    with pytest.raises(ParameterError, match=r"eager polars.DataFrame \(collect it first\)"):
        check_plugin(frame.lazy(), path, isolate=False, progress=False)


def test_shards_run_in_a_child_process_too(tmp_path, frame):
    path = tmp_path / "batchy.py"
    path.write_text(BATCHY)
    small = _frame(frame, 3)
    whole = apply_plugins(small, path, batch_mode="dataloader", batch_size=50, progress=False)
    parts = apply_plugins(split_shards(small, rows_per_shard=200), path, batch_mode="dataloader",
                          batch_size=50, progress=False)
    assert _digest(pl.concat(parts)["reward_batchy"]) == _digest(whole["reward_batchy"])


@pytest.mark.parametrize("mode, size, window, ahead", [("episodes", None, SHUFFLE_WINDOW, 2),
                                                       ("sequential", 64, SHUFFLE_WINDOW, 4),
                                                       ("shuffled", 64, 1000, 6)])
def test_a_stream_is_read_shard_by_shard_and_each_shard_comes_back_whole(tmp_path, frame, mode, size,
                                                                         window, ahead):
    path = tmp_path / "batchy.py"
    path.write_text(BATCHY)
    plugin = load_plugin(path)
    shards = split_shards(frame, rows_per_shard=250)
    shards.insert(3, frame.head(0))  # an empty shard is a shard too
    pulled = []

    def source():  # a reader that hands out one shard at a time
        for shard in shards:
            pulled.append(shard.height)
            yield FrameArrays(shard)

    got = []
    for index, [outcome] in stream_shards(source(), [plugin], mode=mode, batch_size=size,
                                          shuffle_window=window, seed=1):
        # held back: one shard of look-ahead, and the shards (the empty one too) that fill one block
        assert len(pulled) - index <= ahead
        assert outcome.rewards.size == outcome.dones.size == shards[index].height
        got.append(outcome)
    assert len(got) == len(shards)
    [whole] = run_shards([FrameArrays(frame)], [plugin], mode=mode, batch_size=size,
                         shuffle_window=window, seed=1)
    merged = merge_outcomes(got)
    assert merged.rewards.tobytes() == whole.rewards.tobytes()
    assert merged.dones.tobytes() == whole.dones.tobytes() and merged.calls == whole.calls


def test_frame_arrays_window_keeps_whole_episode_tails_and_concat_joins_them(frame):
    arrays = FrameArrays(frame)
    eog = np.flatnonzero(arrays.end_of_game) + 1
    tail = arrays.window(100, int(eog[2]))
    rest = arrays.window(int(eog[2]), arrays.n)
    joined = FrameArrays.concat([tail, rest])
    rows = np.arange(100, arrays.n)
    assert joined.n == rows.size
    for a, b in zip(joined.tensordict().values(include_nested=True, leaves_only=True),
                    arrays.tensordict(rows).values(include_nested=True, leaves_only=True)):
        assert a.numpy().tobytes() == b.numpy().tobytes()
    with pytest.raises(ParameterError, match=r"^`start, stop` should satisfy 0 <= start <= stop <= \d+\. "
                                             r"Received \(5, 0\)\.$"):
        arrays.window(5, 0)


LATE_CRASH = """\
import torch


def get_reward(data, contiguous):
    if ((data["progression"] == torch.tensor({progression})).all(dim=1)
            & (data["numeric"] == torch.tensor({numeric})).all(dim=1)).any():
        raise RuntimeError("late trouble")
    data["next", "reward"] = torch.zeros(data.batch_size[0])
"""


def test_a_plugin_that_raises_in_a_late_shard_gets_the_frame_s_check_report(tmp_path, frame):
    row = frame.row(frame.height - 300, named=True)
    path = tmp_path / "late_crash.py"
    path.write_text(LATE_CRASH.format(numeric=list(row["numeric"]), progression=list(row["progression"])))
    whole = check_plugin(frame, path, isolate=False, progress=False)
    shards = check_plugin(split_shards(frame, rows_per_shard=700), path, isolate=False, progress=False)
    assert all(r.error for r in whole.runs) and "late trouble" in str(whole)
    assert "sample.tsv.gz:" in str(whole)  # the batch's first transition, by file:line
    assert str(shards) == str(whole)
