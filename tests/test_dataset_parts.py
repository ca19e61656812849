"""Dataset folders of parts: convert to one, read it back, refuse damaged ones, apply plug-ins part by part.

The references are the in-memory paths: the frame :func:`rewardlab.load` gives
for the same input, and :func:`rewardlab.plugins.apply_plugins` over that
whole frame (bit for bit, in every batch mode).
"""

from __future__ import annotations

import json
import os
import shutil

import numpy as np
import polars as pl
import pytest

import rewardlab
from rewardlab.core.errors import (
    DataFormatError, FileAccessError, OutputExistsError, ParameterError, PluginRuntimeError,
)
from rewardlab.plugins import apply_plugins
from rewardlab.plugins.apply_parts import apply_to_dataset
from rewardlab.sources.datasets import MANIFEST_NAME, PartedDataset, PartWriter, open_dataset
from rewardlab.sources.datasets.convert import convert_to_parts, parse_size

PLUGINS = ["data/plugins/rank_top.py", "data/plugins/raw_points.py"]
REWARDS = ["reward_rank_top", "done_rank_top", "reward_raw_points", "done_raw_points"]


@pytest.fixture(scope="module")
def sample():
    return rewardlab.load("data/sample.tsv.gz")


@pytest.fixture(scope="module")
def corpus(tmp_path_factory, sample):
    out = tmp_path_factory.mktemp("parts") / "corpus"
    convert_to_parts("data/sample.tsv.gz", out, part_rows=20_000, progress=False)
    return out


def test_the_parts_concatenate_to_the_frame_load_gives(corpus, sample):
    ds = open_dataset(corpus)
    assert len(ds) > 3 and ds.rows == sample.height
    assert ds.load().equals(sample)
    assert rewardlab.load(corpus).equals(sample)  # the dataset source reads a folder through its manifest
    heights = [f.height for f in ds.frames(columns=["seat"])]
    assert sum(heights) == sample.height and all(h >= 20_000 for h in heights[:-1])
    ends = 0
    for part in ds.frames(columns=["end_of_game"]):  # every part ends at an episode's end
        assert part["end_of_game"][-1]
        ends += int(part["end_of_game"].sum())
    assert ends == ds.episodes == sample["end_of_game"].sum()


def test_verify_reads_every_part(corpus):
    open_dataset(corpus).verify()


def _copy(corpus, tmp_path):
    target = tmp_path / "copy"
    shutil.copytree(corpus, target)
    return target


def test_a_missing_part_is_named(corpus, tmp_path):
    target = _copy(corpus, tmp_path)
    (target / "part-000001.parquet").unlink()
    with pytest.raises(DataFormatError, match="missing_part|part 1 of"):
        PartedDataset(target)


def test_a_truncated_part_is_named(corpus, tmp_path):
    target = _copy(corpus, tmp_path)
    path = target / "part-000002.parquet"
    path.write_bytes(path.read_bytes()[:-100])
    with pytest.raises(DataFormatError, match="part-000002.parquet.*truncated"):
        PartedDataset(target)


def test_a_part_copied_over_another_is_named(corpus, tmp_path):
    target = _copy(corpus, tmp_path)
    manifest = json.loads((target / MANIFEST_NAME).read_text())
    shutil.copy(target / "part-000000.parquet", target / "part-000003.parquet")
    manifest["parts"][3]["bytes"] = (target / "part-000003.parquet").stat().st_size
    (target / MANIFEST_NAME).write_text(json.dumps(manifest))
    with pytest.raises(DataFormatError, match="part 0 of this dataset, copied over part 3"):
        PartedDataset(target)


def test_a_foreign_part_is_named(corpus, tmp_path):
    target = _copy(corpus, tmp_path)
    other = tmp_path / "other"
    convert_to_parts("data/sample.tsv.gz", other, part_rows=20_000, progress=False)
    shutil.copy(other / "part-000000.parquet", target / "part-000000.parquet")
    with pytest.raises(DataFormatError, match="another dataset"):
        PartedDataset(target)
    shutil.copy(corpus / "part-000000.parquet", target / "part-000000.parquet")
    shutil.copy(other / "part-000001.parquet", target / "part-999999.parquet")  # a stray file
    with pytest.raises(DataFormatError, match="does not list"):
        PartedDataset(target)


@pytest.mark.parametrize("how, rule", [("missing", "missing_part"), ("truncated", "part_size"),
                                       ("duplicated", "duplicated_part"), ("foreign", "foreign_part")])
def test_each_bad_part_error_names_the_part_file_and_its_rule(corpus, tmp_path, how, rule):
    target = _copy(corpus, tmp_path)
    path = target / "part-000002.parquet"
    if how == "missing":
        path.unlink()
    elif how == "truncated":
        path.write_bytes(path.read_bytes()[:-100])
    elif how == "duplicated":
        manifest = json.loads((target / MANIFEST_NAME).read_text())
        shutil.copy(target / "part-000001.parquet", path)
        manifest["parts"][2]["bytes"] = path.stat().st_size
        (target / MANIFEST_NAME).write_text(json.dumps(manifest))
    else:  # another dataset's part 2, the size the manifest lists
        convert_to_parts("data/sample.tsv.gz", tmp_path / "other", part_rows=20_000, progress=False)
        shutil.copy(tmp_path / "other" / path.name, path)
    with pytest.raises(DataFormatError, match=rf"^{path}: .* \[rule: {rule}\]") as info:
        PartedDataset(target)
    assert info.value.path == str(path)


def test_a_damaged_manifest_is_named(corpus, tmp_path):
    target = _copy(corpus, tmp_path)
    (target / MANIFEST_NAME).write_text("{not json")
    with pytest.raises(DataFormatError, match="not JSON"):
        PartedDataset(target)
    (target / MANIFEST_NAME).unlink()
    with pytest.raises(DataFormatError, match="no rewardlab-dataset.json"):
        PartedDataset(target)


def test_convert_refuses_an_existing_output_and_leaves_nothing_on_failure(corpus, tmp_path):
    with pytest.raises(OutputExistsError):
        convert_to_parts("data/sample.tsv.gz", corpus, progress=False)
    bad = tmp_path / "bad.tsv"
    bad.write_text("not a kanachan line\n")
    out = tmp_path / "never"
    with pytest.raises(DataFormatError):
        convert_to_parts(bad, out, format="kanachan", progress=False)
    assert not out.exists() and not (tmp_path / "never.partial").exists()
    with pytest.raises(ParameterError, match="memory"):
        parse_size("lots")


def test_a_part_write_failing_in_the_writer_thread_fails_the_convert_and_leaves_nothing(tmp_path, monkeypatch):
    # parts are written one behind in a thread: a full disk on part 1 must still stop the run with its error
    from rewardlab.sources.datasets import part_files as writer  # where a part file is written

    real = writer.write_dataset

    def full_disk(frame, path, **kw):
        if ".parquet." in path.name and path.name.startswith("part-000001."):
            real(frame.head(10), path, **kw)  # a few bytes made it to disk
            raise OSError(28, "No space left on device")
        return real(frame, path, **kw)

    monkeypatch.setattr(writer, "write_dataset", full_disk)
    out = tmp_path / "full"
    with pytest.raises(FileAccessError, match=r"part-0*1\.parquet: part 1 could not be written \(No space left"):
        convert_to_parts("data/sample.tsv.gz", out, memory="4M", progress=False)
    assert not out.exists() and not (tmp_path / "full.partial").exists()


@pytest.mark.parametrize("writers", [2, 5])
def test_several_writer_threads_write_the_same_parts(sample, tmp_path, writers, monkeypatch):
    """Parts written several at once: the same parts, in order, as one writer writes; a failing part still
    fails the run, whichever of the parts in flight it is."""
    from rewardlab.sources.datasets import part_files as writer  # where a part file is written

    spec = rewardlab.spec_of(sample)
    outs = {}
    for n in (1, writers):
        with PartWriter(tmp_path / f"w{n}", spec=spec, part_rows=6_000, writers=n) as w:
            for start in range(0, sample.height, 10_000):
                w.add(sample.slice(start, 10_000))
        outs[n] = open_dataset(tmp_path / f"w{n}")
    one, many = outs[1], outs[writers]
    assert len(one) > 2 * writers
    assert [(e.rows, e.episodes) for e in one.manifest.parts] == [(e.rows, e.episodes) for e in many.manifest.parts]
    assert many.load().equals(one.load()) and many.load().equals(sample)
    real = writer.write_dataset

    def full_disk(frame, path, **kw):
        if path.name.startswith("part-000003."):
            raise OSError(28, "No space left on device")
        return real(frame, path, **kw)

    monkeypatch.setattr(writer, "write_dataset", full_disk)
    with pytest.raises(FileAccessError, match=r"part 3 could not be written"):
        with PartWriter(tmp_path / "full", spec=spec, part_rows=6_000, writers=writers) as w:
            for start in range(0, sample.height, 10_000):
                w.add(sample.slice(start, 10_000))
    assert not (tmp_path / "full").exists() and not (tmp_path / "full.partial").exists()
    with pytest.raises(ParameterError, match="`writers` should be an integer in"):
        PartWriter(tmp_path / "x", spec=spec, writers=0)


@pytest.mark.parametrize("mode,size", [("episodes", None), ("sequential", 64), ("dataloader", 96),
                                       ("fragments", 16), ("shuffled", 64)])
def test_apply_part_by_part_equals_one_pass_bit_for_bit(corpus, sample, tmp_path, mode, size):
    out = tmp_path / "rewards"
    manifest = apply_to_dataset(corpus, PLUGINS, out, batch_mode=mode, batch_size=size, workers=2)
    ds = open_dataset(out)
    assert ds.base.folder == open_dataset(corpus).folder and len(manifest.parts) == len(ds.base)
    got = ds.load()
    want = apply_plugins(sample, PLUGINS, batch_mode=mode, batch_size=size)
    for column in REWARDS:
        assert got[column].dtype == want[column].dtype
        assert got[column].equals(want[column]), column
    # the rewards dataset reads its base's columns part by part
    joined = ds.read(0, ["reward_rank_top", "sparse"])
    assert joined["sparse"].equals(sample["sparse"].slice(0, joined.height))


def test_a_failing_plugin_names_the_part_and_leaves_no_output(corpus, tmp_path):
    plugin = tmp_path / "breaks.py"
    plugin.write_text(
        "def get_reward(data, contiguous):\n"
        "    if data['next', 'end_of_game'].any():\n"
        "        raise RuntimeError('boom')\n"
        "    data['next', 'reward'] = data['next', 'end_of_game'].float() * 0\n")
    out = tmp_path / "rewards"
    with pytest.raises(PluginRuntimeError, match=r"boom") as info:
        apply_to_dataset(corpus, [plugin], out, workers=2)
    assert "part 0" in str(info.value)
    assert not out.exists() and not (tmp_path / "rewards.partial").exists()


def test_a_rewards_dataset_without_its_base_is_refused(corpus, tmp_path):
    base = _copy(corpus, tmp_path)
    out = tmp_path / "rewards"
    apply_to_dataset(base, PLUGINS[:1], out, workers=1)
    shutil.rmtree(base)
    with pytest.raises(DataFormatError, match="input .* is not there"):
        PartedDataset(out)


def test_the_cli_converts_and_applies_a_dataset_folder(tmp_path, sample, capsys):
    from rewardlab.cli import main

    corpus, rewards = tmp_path / "corpus", tmp_path / "rewards"
    assert main(["convert", "data/sample.tsv.gz", "--out", str(corpus), "--memory", "32M"]) == 0
    assert main(["apply", str(corpus), "--plugin", PLUGINS[0], "--out", str(rewards), "--workers", "2"]) == 0
    frame = open_dataset(rewards).load()
    assert frame.height == sample.height and "reward_rank_top" in frame.columns
    assert main(["apply", "data/sample.tsv.gz", "--plugin", PLUGINS[0], "--out", str(tmp_path / "x.parquet"),
                 "--ray-address", "auto"]) == 2
    assert "`--ray-address` applies to a dataset folder" in capsys.readouterr().err
    assert sorted(os.listdir(tmp_path)) == ["corpus", "rewards"]


def test_verify_names_a_part_whose_bytes_changed(corpus, tmp_path):
    target = _copy(corpus, tmp_path)
    manifest = json.loads((target / MANIFEST_NAME).read_text())
    manifest["parts"][1]["crc32"] = "00000000"
    (target / MANIFEST_NAME).write_text(json.dumps(manifest))
    with pytest.raises(DataFormatError, match=r"part-000001.parquet.*CRC-32 is [0-9a-f]{8}, the manifest says 00000000"):
        PartedDataset(target).verify()


def test_a_manifest_of_another_version_says_to_upgrade(corpus, tmp_path):
    target = _copy(corpus, tmp_path)
    manifest = json.loads((target / MANIFEST_NAME).read_text())
    manifest["version"] = 99
    (target / MANIFEST_NAME).write_text(json.dumps(manifest))
    with pytest.raises(DataFormatError, match="version 99 is not 1.*Upgrade rewardlab"):
        PartedDataset(target)


def test_outputs_that_are_not_dataset_folders_are_never_replaced(corpus, tmp_path):
    precious = tmp_path / "precious"
    precious.mkdir()
    (precious / "notes.txt").write_text("keep me")
    with pytest.raises(FileAccessError, match="is not a dataset folder, so it is not replaced even with overwrite"):
        convert_to_parts("data/sample.tsv.gz", precious, overwrite=True, progress=False)
    assert (precious / "notes.txt").read_text() == "keep me"
    with pytest.raises(ParameterError, match="should be a folder name for a dataset of parts"):
        PartWriter(tmp_path / "x.parquet", spec=open_dataset(corpus).spec)
    (tmp_path / "left.partial").mkdir()  # what a killed run leaves
    with pytest.raises(FileAccessError, match="left.partial: is left from a run of this output that did not finish"):
        convert_to_parts("data/sample.tsv.gz", tmp_path / "left", progress=False)


def test_overwrite_replaces_an_old_dataset_folder(corpus, tmp_path):
    target = _copy(corpus, tmp_path)
    old_id = open_dataset(target).manifest.id
    convert_to_parts("data/sample.tsv.gz", target, part_rows=50_000, overwrite=True, progress=False)
    assert open_dataset(target).manifest.id != old_id and not list(tmp_path.glob("copy.old-*"))


def test_the_feed_reports_why_it_stopped():
    import numpy as np

    from rewardlab.plugins.isolation import ChildFailure, run_in_child

    def total(status, send, items):
        return sum(int(x.sum()) for x in items)

    def damaged():
        yield np.ones(4)
        raise DataFormatError("corpus/part-000001.parquet", None, None, "part_size", "the part is short")

    assert run_in_child(total, feed=(np.ones(10) for _ in range(3))) == 30
    with pytest.raises(DataFormatError, match="part-000001.parquet.*the part is short"):
        run_in_child(total, feed=damaged())

    def dies(status, send, items):
        next(items)
        os._exit(3)

    failure = run_in_child(dies, feed=(np.ones(1 << 20) for _ in range(64)))  # the feeder is left blocked
    assert isinstance(failure, ChildFailure) and failure.detail == "exit status 3"


def test_the_feed_reads_each_item_when_the_child_asks_and_sends_arrays_whole():
    import time

    import numpy as np

    from rewardlab.plugins.isolation import run_in_child

    read = []

    def items():
        for k in range(5):
            read.append(k)
            yield {"k": k, "a": np.arange(10 ** 5, dtype=np.int64) * k, "strided": np.arange(40.0)[::3],
                   "names": np.array(["x", None], dtype=object)}

    def unpack(status, send, fed):
        return [(item["k"], int(item["a"].sum()), item["strided"].tolist(), item["names"].tolist())
                for item in fed]

    got = run_in_child(unpack, feed=items())
    assert got == [(k, k * (10 ** 5) * (10 ** 5 - 1) // 2, np.arange(40.0)[::3].tolist(), ["x", None])
                   for k in range(5)]
    assert read == [0, 1, 2, 3, 4]

    # laziness, seen from the parent: with the child slow, the parent reads one item ahead of the one the
    # child works on (item k+1 as soon as the child takes item k), never more
    read_at, taken_at = [], []

    def timed():
        for k in range(4):
            read_at.append(time.monotonic())
            yield k

    def consumer(status, send, fed):
        for _ in fed:
            send(time.monotonic())
            time.sleep(0.3)
        return "done"

    assert run_in_child(consumer, feed=timed(), on_part=taken_at.append) == "done"
    assert len(read_at) == len(taken_at) == 4
    # item k+1 is read while the child works on item k (well before the child takes it)...
    assert all(read_at[k + 1] < taken_at[k] + 0.2 for k in range(3)), (read_at, taken_at)
    # ...and item k+2 only once the child has taken item k+1 (after it finished item k)
    assert all(read_at[k + 2] >= taken_at[k + 1] - 0.05 for k in range(2)), (read_at, taken_at)
    assert all(b - a >= 0.25 for a, b in zip(read_at[1:], read_at[2:])), read_at


def test_the_cli_names_its_own_engine_options(corpus, tmp_path, capsys):
    from rewardlab.cli import main

    assert main(["apply", str(corpus), "--plugin", PLUGINS[0], "--out", str(tmp_path / "r"), "--engine", "spark"]) == 2
    assert "`--engine` should be one of 'embedded', 'processes', 'ray'. Received 'spark'." in capsys.readouterr().err
    assert main(["apply", str(corpus), "--plugin", PLUGINS[0], "--out", str(tmp_path / "r"),
                 "--ray-address", "auto"]) == 2
    assert "`--ray-address` applies only to engines that join a cluster (ray)" in capsys.readouterr().err
    assert not (tmp_path / "r").exists()


@pytest.fixture(scope="module")
def rewards(corpus, tmp_path_factory):
    out = tmp_path_factory.mktemp("rewards") / "rewards"
    apply_to_dataset(corpus, PLUGINS, out, workers=2)
    return out


@pytest.mark.parametrize("workers", [1, 3])
def test_stats_of_a_rewards_folder_equal_the_in_memory_ones(rewards, tmp_path, capsys, workers):
    from rewardlab.cli import main

    whole = tmp_path / "whole.parquet"
    open_dataset(rewards).load().write_parquet(whole)
    scopes = ["--scope", "all", "--scope", "episode_return", "--scope", "end_of_game"]
    assert main(["stats", str(rewards), "--json", "--workers", str(workers), *scopes]) == 0
    parted = json.loads(capsys.readouterr().out)
    assert main(["stats", str(whole), "--json", *scopes]) == 0
    in_memory = json.loads(capsys.readouterr().out)
    assert parted["rows"] == in_memory["rows"] == open_dataset(rewards).rows
    assert parted["rewards"] == in_memory["rewards"]  # exact: under 10^7 values the quantiles are NumPy's
    assert set(parted["rewards"]) == {"rank_top", "raw_points"}


def test_stats_of_a_rewards_folder_past_the_exact_limit_are_a_sketch_with_its_error(rewards):
    from rewardlab.analysis.stats import reward_stats
    from rewardlab.analysis.stats_parts import dataset_reward_stats

    got = dataset_reward_stats(rewards, "raw_points", ("all",), exact_limit=1000, workers=2)["raw_points"]["all"]
    want = reward_stats(open_dataset(rewards).load(), "raw_points")
    assert got.quantile_method == "kll" and 0 < got.quantile_rank_error < 0.01
    assert got.count == want.count and got.mean == pytest.approx(want.mean, rel=1e-12, abs=1e-15)
    assert got.min == want.min and got.max == want.max


def test_the_scopes_sketched_in_the_workers_are_those_whose_count_passes_the_limit(rewards):
    # past the limit a part's values go into a sketch in its worker (only the sketch's bytes reach the
    # driver): the count taken from the manifest must be the count reading gives, or a scope of fewer
    # values than the limit would lose its exact quantiles
    from rewardlab.analysis.stats_parts import part_stats, dataset_reward_stats, sketched_scopes

    ds = open_dataset(rewards)
    scopes = ("all", "episode_end", "end_of_game", "episode_return", "nonzero")
    stats = dataset_reward_stats(rewards, "raw_points", scopes, workers=2)["raw_points"]
    for scope, got in stats.items():
        assert got.quantile_method == "exact"
        assert sketched_scopes(ds, [scope], got.count) == ()
        assert sketched_scopes(ds, [scope], got.count - 1) == (() if scope == "nonzero" else (scope,))
    path, rows, index = ds.part_items()[0]
    part = part_stats((path, rows, index, ["raw_points"], ["all", "nonzero"], (0.5,), 10 ** 7, ("all",)))
    assert part[("raw_points", "all")].values.method == "kll"
    assert part[("raw_points", "nonzero")].values.method == "exact"


def test_stats_engine_options_apply_to_a_folder_only(rewards, tmp_path, capsys):
    from rewardlab.cli import main

    whole = tmp_path / "whole.parquet"
    open_dataset(rewards).load().write_parquet(whole)
    assert main(["stats", str(whole), "--workers", "2"]) == 2
    assert "`--workers` applies to a dataset folder" in capsys.readouterr().err
    assert main(["stats", str(rewards), "--engine", "spark"]) == 2
    assert "`--engine` should be one of" in capsys.readouterr().err
    assert main(["stats", str(rewards), "--workers", "0"]) == 2
    assert "`--workers` should be an integer in [1," in capsys.readouterr().err


# --- resuming a stopped apply ----------------------------------------------------------------------------

def _slow_plugin(folder) -> Path:
    """rank_top, a few ms slower per call: a run lasts long enough to be killed midway."""
    from pathlib import Path

    text = Path("data/plugins/rank_top.py").read_text().replace(
        "def get_reward(data: TensorDict, contiguous: bool) -> None:\n",
        "def get_reward(data: TensorDict, contiguous: bool) -> None:\n    import time\n    time.sleep(0.01)\n")
    path = Path(folder) / "slow_top.py"
    path.write_text(text)
    return path


@pytest.mark.parametrize("engine, workers", [("embedded", "1"), pytest.param("processes", "2", marks=pytest.mark.slow)])
def test_apply_killed_midway_resumes_from_its_finished_parts(corpus, tmp_path, engine, workers):
    # on the processes engine the plug-in processes write the parts and the worker processes journal them
    import signal
    import subprocess
    import sys
    import time

    from rewardlab.cli import main
    from rewardlab.sources.datasets.writer import RUN_NAME

    plugin = _slow_plugin(tmp_path)
    out = tmp_path / "rewards"
    staging = tmp_path / "rewards.partial"
    cmd = [sys.executable, "-m", "rewardlab", "apply", str(corpus), "--plugin", str(plugin), "--out", str(out),
           "--workers", workers, "--engine", engine]
    proc = subprocess.Popen(cmd, start_new_session=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        deadline = time.monotonic() + 120
        while time.monotonic() < deadline and proc.poll() is None:
            lines = sum(len(j.read_text().splitlines()) for j in staging.glob("journal-*.jsonl"))
            if lines >= 2:
                break
            time.sleep(0.05)
        assert proc.poll() is None, "the run ended before it could be killed"
        os.killpg(proc.pid, signal.SIGKILL)
    finally:
        proc.wait()
    assert not out.exists() and (staging / RUN_NAME).exists()
    journaled = [json.loads(line)["entry"]["name"] for j in staging.glob("journal-*.jsonl")
                 for line in j.read_text().splitlines()]
    kept = {name: (staging / name).stat() for name in journaled}
    n_parts = len(open_dataset(corpus))
    assert 2 <= len(kept) < n_parts

    assert main(cmd[3:]) == 2  # again without --resume: refused, naming the way on
    assert main([*cmd[3:], "--resume"]) == 0
    assert not staging.exists()
    for name, before in kept.items():  # the finished parts were kept, not written again
        after = (out / name).stat()
        assert (after.st_ino, after.st_mtime_ns) == (before.st_ino, before.st_mtime_ns), name
    assert sorted(p.name for p in out.iterdir()) == sorted([*(p.name for p in open_dataset(out).paths), MANIFEST_NAME])

    fresh = tmp_path / "fresh"
    apply_to_dataset(corpus, [plugin], fresh, workers=2)
    resumed = open_dataset(out)
    resumed.verify()
    assert resumed.load().equals(open_dataset(fresh).load())


def test_resume_refuses_another_runs_staging_folder(corpus, tmp_path, capsys):
    from rewardlab.cli import main

    plugin = _slow_plugin(tmp_path)
    out = tmp_path / "rewards"
    staging = tmp_path / "rewards.partial"
    with pytest.raises(KeyboardInterrupt):  # Ctrl-C: the staging folder stays for --resume
        _interrupt(corpus, plugin, out)
    assert staging.exists() and not out.exists()
    plugin.write_text(plugin.read_text() + "\n# changed\n")
    assert main(["apply", str(corpus), "--plugin", str(plugin), "--out", str(out), "--resume"]) == 2
    assert "was left by another run (its plugins differ from this one's)" in capsys.readouterr().err
    assert main(["apply", str(corpus), "--plugin", str(plugin), "--out", str(out), "--resume",
                 "--batch-mode", "sequential"]) == 2
    assert "`--resume` applies to --batch-mode episodes and fragments" in capsys.readouterr().err
    assert staging.exists()


def _interrupt(corpus, plugin, out):
    """apply_to_dataset stopped by Ctrl-C once its first part is journaled.

    Ctrl-C raises KeyboardInterrupt here whatever this process inherited: a shell without job control starts
    a background command with SIGINT ignored, and then ``interrupt_main`` does nothing."""
    import signal
    import threading
    import _thread

    staging = out.with_name(out.name + ".partial")

    def watch():
        while not list(staging.glob("journal-*.jsonl")):
            if not threading.main_thread().is_alive():
                return
            threading.Event().wait(0.02)
        _thread.interrupt_main()

    previous = signal.signal(signal.SIGINT, signal.default_int_handler)
    try:
        threading.Thread(target=watch, daemon=True).start()
        apply_to_dataset(corpus, [plugin], out, workers=1, progress=False)
    finally:
        signal.signal(signal.SIGINT, previous)


# --- per-episode tables and step values of a folder, part by part ----------------------------------------

@pytest.mark.parametrize("workers", [1, 3])
def test_episode_and_trajectory_returns_of_a_folder_equal_the_whole_frames(rewards, workers):
    from rewardlab.analysis.compare import compare_rewards, episode_return_table
    from rewardlab.analysis.episode_parts import dataset_episode_returns, dataset_trajectory_returns
    from rewardlab.analysis.return_tables import trajectory_returns

    whole = open_dataset(rewards).load()
    got = dataset_episode_returns(rewards, workers=workers, progress=False)
    want = episode_return_table(whole)
    assert got.equals(want) and got.height == open_dataset(rewards).episodes
    cmp = compare_rewards(got)
    assert np.array_equal(cmp.spearman, compare_rewards(want).spearman)
    got = dataset_trajectory_returns(rewards, "raw_points", workers=workers, progress=False)
    assert got.equals(trajectory_returns(whole, "raw_points"))


def test_step_values_keep_everything_up_to_the_limit_then_a_uniform_sample_whatever_the_grouping():
    from rewardlab.analysis.episode_parts import StepValues

    parts = [np.arange(k * 1000, (k + 1) * 1000, dtype=np.float64) for k in range(10)]
    whole = StepValues(limit=20_000)
    for k, p in enumerate(parts):
        whole.add(p, part=k)
    assert not whole.sampled and np.array_equal(whole.values, np.concatenate(parts))

    one = StepValues(limit=500)
    for k, p in enumerate(parts):
        one.add(p, part=k)
    halves = [StepValues(limit=500), StepValues(limit=500)]
    for k, p in enumerate(parts):
        halves[k // 5].add(p, part=k)
    merged = halves[0].merge(halves[1])
    assert one.sampled and one.total == 10_000 and len(one.values) == 500
    assert np.array_equal(one.values, merged.values)  # the same sample in any grouping
    assert len(np.unique(one.values)) == 500 and np.all(np.diff(one.values) > 0)  # no repeats, data order
    assert abs(one.values.mean() - 4999.5) < 300  # uniform over the 10,000 (seeded: the same every run)
    with pytest.raises(ParameterError, match="other"):
        one.merge(StepValues(limit=3))


def test_plot_of_a_folder_reads_it_part_by_part(rewards, tmp_path, capsys):
    from rewardlab.cli import main

    for kind in ("hist", "returns", "correlation", "episodes", "by-rank"):
        out = tmp_path / f"{kind}.png"
        assert main(["plot", str(rewards), "--kind", kind, "--out", str(out), "--workers", "2"]) == 0
        assert out.stat().st_size > 1000
    capsys.readouterr()
    assert main(["plot", str(rewards), "--kind", "normalization", "--out", str(tmp_path / "r.png"),
                 "--workers", "2"]) == 0  # the replays carry their state from part to part


# --- check-plugin on a folder, part by part -----------------------------------------------------------

def test_check_plugin_on_a_folder_merges_the_parts_reports(corpus, sample):
    from rewardlab.plugins import check_plugin
    from rewardlab.plugins.check_parts import check_plugin_dataset

    got = check_plugin_dataset(corpus, PLUGINS[1], batch_sizes=(64,), workers=2, progress=False)
    whole = check_plugin(sample, PLUGINS[1], batch_sizes=(64,), progress=False)
    assert got.ok and whole.ok and got.parts == (len(open_dataset(corpus)),) * 2
    assert (got.transitions, got.episodes) == (whole.transitions, whole.episodes)
    assert [r.label for r in got.runs] == [r.label for r in whole.runs]
    assert got.scale.count == whole.scale.count and got.scale.count_all == whole.scale.count_all
    assert got.scale.mean == pytest.approx(whole.scale.mean, abs=1e-12)
    assert got.scale.std == pytest.approx(whole.scale.std, rel=1e-9)
    assert "parts, each checked on its own (batches do not cross parts)" in str(got)


def test_check_plugin_on_a_folder_stops_at_the_first_failing_part_and_names_it(corpus, tmp_path, capsys):
    from rewardlab.cli import main

    plugin = tmp_path / "batchnorm.py"
    plugin.write_text(
        "import torch\n"
        "def get_reward(data, contiguous):\n"
        "    score = data['next', 'results'][:, 4].double()\n"
        "    centered = (score - score.mean()) / 10000.0\n"
        "    data['next', 'reward'] = torch.where(data['next', 'end_of_game'], centered, 0.0)\n")
    ds = open_dataset(corpus)
    code = main(["check-plugin", str(plugin), "--data", str(corpus), "--batch-sizes", "16", "--workers", "1"])
    text = capsys.readouterr().out
    assert code == 1 and text.rstrip().endswith("result: FAIL")
    assert f"1 of {len(ds)} parts" in text and "stopped at the first part that failed" in text
    assert "sequential x16 differs from episodes" in text and ", part 0 (part-000000.parquet)" in text

    assert main(["check-plugin", str(plugin), "--data", "data/sample.tsv.gz", "--workers", "2"]) == 2
    assert "`--workers` applies to a dataset folder" in capsys.readouterr().err
    assert main(["check-plugin", str(plugin), "--data", str(corpus), "--workers", "0"]) == 2
    assert "`--workers` should be an integer in [1," in capsys.readouterr().err


def test_merge_reports_sums_counts_and_names_the_part_of_each_first_occurrence(corpus):
    import dataclasses

    from rewardlab.plugins import check_plugin
    from rewardlab.plugins.check import Difference
    from rewardlab.plugins.check_parts import merge_reports

    base = check_plugin(open_dataset(corpus).read(0), PLUGINS[0], batch_sizes=(64,), progress=False)
    d = Difference("sequential x64", "episodes", 3, 1, 0.5, 7, "frame row 7", (0.5, 0.0, True, True), False)
    a = dataclasses.replace(base, problems=(("reward_shape", "first in a", 2, "episodes"),))
    b = dataclasses.replace(base, problems=(("reward_shape", "first in b", 5, "sequential x64"),),
                            differences=(d,), runs=(dataclasses.replace(base.runs[0], error="boom"),
                                                    *base.runs[1:]))
    merged = merge_reports([(0, 0, a), (1, 2000, b)], total_parts=2, paths=["c/part-000000.parquet",
                                                                           "c/part-000001.parquet"])
    assert merged.transitions == 2 * base.transitions and merged.parts == (2, 2) and not merged.ok
    assert merged.problems == (("reward_shape", "first in a (part 0 (part-000000.parquet))", 7,
                                "episodes, sequential x64"),)
    (diff,) = merged.differences
    assert diff.row == 2007 and diff.where == "frame row 7, part 1 (part-000001.parquet)"
    assert merged.runs[0].error == "part 1 (part-000001.parquet): boom"
    assert merged.runs[0].calls == 2 * base.runs[0].calls


def test_compare_command_on_a_folder_equals_it_on_the_whole_table(rewards, tmp_path, capsys):
    from rewardlab.cli import main

    whole = tmp_path / "whole.parquet"
    open_dataset(rewards).load().write_parquet(whole)
    assert main(["compare", str(rewards), "--json", "--top", "3", "--workers", "2"]) == 0
    parted = json.loads(capsys.readouterr().out)
    assert main(["compare", str(whole), "--json", "--top", "3"]) == 0
    in_memory = json.loads(capsys.readouterr().out)
    assert parted["episodes"] == in_memory["episodes"] == open_dataset(rewards).episodes
    assert parted["pairs"] == in_memory["pairs"] and len(parted["pairs"][0]["most_disagreeing"]) == 3
    assert main(["compare", str(rewards), "--reward", "rank_top,raw_points", "--top", "0"]) == 0
    text = capsys.readouterr().out
    assert "2 candidates (rank_top, raw_points)" in text and "most disagreeing" not in text
    assert main(["compare", str(rewards), "--reward", "rank_top"]) == 2
    assert "`--reward` should name at least two candidates" in capsys.readouterr().err
    assert main(["compare", str(whole), "--workers", "2"]) == 2
    assert "`--workers` applies to a dataset folder" in capsys.readouterr().err


@pytest.mark.parametrize("part_rows", [20_000, 3_000, 500])
def test_summary_of_a_folder_equals_the_whole_frames_though_games_straddle_parts(tmp_path, sample, part_rows):
    from rewardlab.dataset import summarize, summarize_dataset

    out = tmp_path / "c"
    convert_to_parts("data/sample.tsv.gz", out, part_rows=part_rows, progress=False)
    ds = open_dataset(out)
    firsts = [ds.read(i, ["game_id"])["game_id"][0] for i in range(len(ds))]
    lasts = [ds.read(i, ["game_id"])["game_id"][-1] for i in range(len(ds))]
    if part_rows <= 3_000:  # small parts: some game's seats lie in two parts (or more)
        assert any(a == b for a, b in zip(lasts, firsts[1:]))
    assert summarize(out) == summarize(sample) == summarize_dataset(out, workers=2)


def test_info_of_a_folder_reads_it_part_by_part_and_says_what_info_of_one_file_says(tmp_path, capsys):
    from rewardlab.cli import main

    folder, single = tmp_path / "c", tmp_path / "c.parquet"
    convert_to_parts("data/sample.tsv.gz", folder, part_rows=2_000, progress=False)  # games straddle parts
    assert main(["convert", "data/sample.tsv.gz", "--out", str(single)]) == 0
    capsys.readouterr()
    for flags in ([], ["--json"]):
        assert main(["info", str(folder), *flags]) == 0
        parted = capsys.readouterr().out
        assert main(["info", str(single), *flags]) == 0
        assert parted == capsys.readouterr().out
    assert "games                 240" in parted or '"games": 240' in parted


def test_info_of_a_rewards_folder_shows_its_returns(rewards, capsys):
    from rewardlab.cli import main

    assert main(["info", str(rewards)]) == 0
    text = capsys.readouterr().out
    assert f"a folder of {len(open_dataset(rewards))} parts" in text
    assert "return rank_top" in text and "return raw_points" in text


def test_resume_refuses_a_staging_folder_another_run_is_still_writing(corpus, tmp_path):
    from rewardlab.sources.datasets.writer import RUN_NAME

    out = tmp_path / "rewards"
    ds = open_dataset(corpus)
    first = PartWriter(out, spec=ds.spec, base=ds, run={"k": 1})
    try:
        assert (out.with_name("rewards.partial") / RUN_NAME).exists()
        with pytest.raises(FileAccessError, match="is being written by a run still going"):
            PartWriter(out, spec=ds.spec, base=ds, run={"k": 1}, resume=True)
        with pytest.raises(FileAccessError, match="did not finish.*--resume"):
            PartWriter(out, spec=ds.spec, base=ds, run={"k": 1})
    finally:
        first.abort(keep=True)  # as after Ctrl-C: the folder stays, the lock goes
    again = PartWriter(out, spec=ds.spec, base=ds, run={"k": 1}, resume=True)
    assert again.resumed and again.id == first.id
    again.abort()
    assert not out.with_name("rewards.partial").exists()


def test_resume_refuses_a_staging_folder_another_process_is_writing(corpus, tmp_path):
    import subprocess
    import sys
    import time

    out = tmp_path / "rewards"
    code = ("import sys, time\n"
            "from rewardlab.sources.datasets import PartWriter, open_dataset\n"
            f"ds = open_dataset({str(corpus)!r})\n"
            f"w = PartWriter({str(out)!r}, spec=ds.spec, base=ds, run={{'k': 1}})\n"
            "print('ready', flush=True)\n"
            "time.sleep(60)\n")
    proc = subprocess.Popen([sys.executable, "-c", code], stdout=subprocess.PIPE, text=True)
    try:
        assert proc.stdout.readline().strip() == "ready"
        ds = open_dataset(corpus)
        with pytest.raises(FileAccessError, match="is being written by a run still going"):
            PartWriter(out, spec=ds.spec, base=ds, run={"k": 1}, resume=True)
    finally:
        proc.kill()
        proc.wait()
    time.sleep(0.1)
    again = PartWriter(out, spec=open_dataset(corpus).spec, base=open_dataset(corpus), run={"k": 1}, resume=True)
    assert again.resumed
    again.abort()


@pytest.mark.parametrize("drop_game", [False, True])
def test_rank_table_and_reward_by_rank_of_a_folder_equal_the_whole_frames(sample, rewards, tmp_path, drop_game):
    from rewardlab.core.spec import attach, attached
    from rewardlab.domains.mahjong.ranking import RankTable, reward_by_rank
    from rewardlab.domains.mahjong.ranking_parts import dataset_reward_by_rank, rank_table_of_dataset

    frame = sample.drop("game") if drop_game else sample
    frame = attach(frame, attached(sample).project(frame.columns))
    out = tmp_path / "c"
    with PartWriter(out, spec=attached(frame), part_rows=700) as w:  # small parts: games straddle them
        w.add(frame)
    got, want = rank_table_of_dataset(out, workers=2), RankTable.from_frame(frame)
    for field in ("rank", "final_score", "row", "game", "seat"):
        assert np.array_equal(getattr(got, field), getattr(want, field)), field
    assert got.n_rows == want.n_rows
    assert dataset_reward_by_rank(rewards, workers=2).equals(reward_by_rank(open_dataset(rewards).load()))


def test_work_items_refuse_a_part_whose_rows_differ_from_the_manifest(rewards, tmp_path):
    from rewardlab.analysis.episode_parts import dataset_episode_returns
    from rewardlab.analysis.stats_parts import dataset_reward_stats

    copy = tmp_path / "r"
    shutil.copytree(rewards, copy)
    manifest = json.loads((copy / MANIFEST_NAME).read_text())
    manifest["parts"][1]["rows"] += 1  # the files are intact: only the manifest lies
    (copy / MANIFEST_NAME).write_text(json.dumps(manifest))
    for run in (lambda: dataset_reward_stats(copy, workers=2), lambda: dataset_episode_returns(copy, workers=2)):
        with pytest.raises(DataFormatError, match=r"part-000001\.parquet.*the part holds [0-9,]+ rows, the "
                                                  r"manifest says"):
            run()


def test_apply_to_a_folder_reports_progress_in_transitions(corpus, tmp_path):
    calls = []
    apply_to_dataset(corpus, PLUGINS[:1], tmp_path / "r", workers=2, progress=lambda f, m: calls.append((f, m)))
    rows = open_dataset(corpus).rows
    assert calls and calls[-1][0] == 1.0
    assert calls[-1][1].endswith(f"{rows:,} of {rows:,} transitions")
    assert [f for f, _ in calls] == sorted(f for f, _ in calls)


def test_the_part_by_part_analyses_refuse_a_dataset_with_no_parts_by_name(sample, tmp_path):
    from rewardlab.analysis.episode_parts import dataset_episode_summary
    from rewardlab.core.errors import FrameError
    from rewardlab.domains.mahjong.ranking_parts import rank_table_of_dataset
    from rewardlab.plugins.check_parts import check_plugin_dataset

    out = tmp_path / "empty"
    with PartWriter(out, spec=rewardlab.core.spec.attached(sample)):
        pass
    assert len(open_dataset(out)) == 0
    with pytest.raises(DataFormatError, match=r"empty: the dataset has no parts \[rule: empty_dataset\]"):
        dataset_episode_summary(out)
    with pytest.raises(FrameError, match="has no parts"):
        rank_table_of_dataset(out)
    with pytest.raises(ParameterError, match="`dataset` should hold at least one part to check a plug-in on"):
        check_plugin_dataset(out, PLUGINS[0])
    with pytest.raises(ParameterError, match="`plugin` should be a plug-in file"):
        check_plugin_dataset(out, object())


def test_part_writer_resume_needs_the_runs_description_and_a_readable_record(corpus, tmp_path):
    from rewardlab.sources.datasets.writer import RUN_NAME

    ds = open_dataset(corpus)
    out = tmp_path / "r"
    with pytest.raises(ParameterError, match="`resume` needs the run's description"):
        PartWriter(out, spec=ds.spec, base=ds, resume=True)
    first = PartWriter(out, spec=ds.spec, base=ds, run={"k": 1})
    first.abort(keep=True)
    (tmp_path / "r.partial" / RUN_NAME).write_text("{not json")
    with pytest.raises(FileAccessError, match="holds no readable record of the run that left it"):
        PartWriter(out, spec=ds.spec, base=ds, run={"k": 1}, resume=True)


def _plugin_file(path, *lines: str):
    """A plug-in file of these lines."""
    path.write_text("\n".join(lines) + "\n")
    return path


@pytest.mark.parametrize("engine", ["embedded", "processes"])
def test_the_scale_warning_of_a_folder_has_the_figures_of_every_reward(corpus, tmp_path, engine):
    # each part's sums are made in its plug-in process and merged in the command's: the warning's figures
    # are those of all the rewards at once, recomputed here with a plain loop over them
    plugin = _plugin_file(tmp_path / "points.py", "import torch",
                          "def get_reward(data, contiguous):",
                          "    end = data['next', 'end_of_game']",
                          "    data['next', 'reward'] = end.to(torch.float64) * data['next', 'results'][:, 4].to(torch.float64)")
    out = tmp_path / "rewards"
    with pytest.warns(rewardlab.core.errors.RewardScaleWarning) as record:
        apply_to_dataset(corpus, [plugin], out, workers=2, engine=engine)
    frame = open_dataset(out).load()
    carried, every = [], []
    for reward, done in zip(frame["reward_points"].to_list(), frame["done_points"].to_list()):
        every.append(reward)
        if reward != 0 or done:
            carried.append(reward)

    def mean_std(values):
        mean = sum(values) / len(values)
        return mean, (sum((v - mean) ** 2 for v in values) / len(values)) ** 0.5

    want = rewardlab.contracts.checks.RewardScale(*mean_std(carried), len(carried), *mean_std(every), len(every))
    [warning] = record
    assert str(want) in str(warning.message)
    assert f"over the {len(carried):,} transitions" in str(warning.message)


@pytest.mark.parametrize("how, engine", [("hangs", "embedded"), ("exits", "embedded"),
                                         pytest.param("hangs", "processes", marks=pytest.mark.slow)])
def test_a_plugin_hanging_or_exiting_on_a_folder_names_its_part(corpus, tmp_path, how, engine):
    # the plug-in process reads the next part in a thread of its own (embedded), or reads the parts itself
    # (processes): a hang's stack dump must still show the plug-in's line, not a thread waiting on the pipe
    # (the 300th call, an episode of part 1: the message names that part, and what its rows count from; on
    # the processes engine both work items hang, and the first one's error is raised)
    stop = "time.sleep(0.01)  # the line the report names" if how == "hangs" else "os._exit(3)"
    plugin = _plugin_file(tmp_path / "stuck.py", "import os, time", "CALLS = [0]",
                          "def get_reward(data, contiguous):",
                          "    CALLS[0] += 1",
                          "    while CALLS[0] == 300:",
                          f"        {stop}",
                          "    data['next', 'reward'] = data['next', 'end_of_game'].double()")
    out = tmp_path / "rewards"
    error = rewardlab.core.errors.PluginTimeoutError if how == "hangs" else PluginRuntimeError
    with pytest.raises(error) as info:
        apply_to_dataset(corpus, [plugin], out, workers=1 if engine == "embedded" else 2, timeout=3, engine=engine)
    text = str(info.value)
    if how == "hangs":
        assert 'stuck.py", line 6 in get_reward' in text, text
        assert "read_ahead" not in text
    else:
        assert "ended rewardlab's child process (exit status 3) while running plug-in 'stuck'" in text, text
    ds = PartedDataset(corpus)
    assert f"(part 1: {ds.paths[1]}; its rows count from the first row of part 0)" in text, text
    first, last = map(int, text.split("; rows ")[1].split(",")[0].split("-"))
    assert ds.manifest.parts[0].rows <= first <= last < ds.manifest.parts[0].rows + ds.manifest.parts[1].rows
    assert not out.exists()


def test_an_embedded_apply_writes_a_few_parts_at_once_whatever_the_workers(corpus, tmp_path, monkeypatch):
    # memory: the command's process holds the tables and Parquet buffers of at most WRITES_AT_ONCE parts,
    # however many work items run in its threads (here 2 at once, with 6 work items finishing together)
    import threading
    import time

    from rewardlab.plugins import apply_parts

    monkeypatch.setattr(apply_parts, "_WRITING", threading.BoundedSemaphore(2))
    writing, most, lock = [0], [0], threading.Lock()
    write = apply_parts.write_part_file

    def slow_write(*args, **kwargs):
        with lock:
            writing[0] += 1
            most[0] = max(most[0], writing[0])
        time.sleep(1.0)
        try:
            return write(*args, **kwargs)
        finally:
            with lock:
                writing[0] -= 1

    monkeypatch.setattr(apply_parts, "write_part_file", slow_write)
    assert len(PartedDataset(corpus)) >= 6
    manifest = apply_to_dataset(corpus, PLUGINS, tmp_path / "rewards", workers=6)
    assert most[0] == 2
    assert len(manifest.parts) == len(PartedDataset(corpus))
