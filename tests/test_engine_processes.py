"""The processes engine (rewardlab.engines.processes): item order, errors, a dying worker, and a dataset folder
through it giving what the embedded engine gives, bit for bit (the reference is the embedded engine's run,
itself checked against the whole frame elsewhere)."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time

import pytest

from rewardlab.analysis.stats_parts import dataset_reward_stats
from rewardlab.core.errors import ContractError, EngineError, ParameterError, PluginRuntimeError
from rewardlab.engines import check_engine, get_engine
from rewardlab.engines.processes import map_items_processes
from rewardlab.plugins.apply_parts import apply_to_dataset
from rewardlab.plugins.check_parts import check_plugin_dataset
from rewardlab.sources.datasets import open_dataset
from rewardlab.sources.datasets.convert import convert_to_parts

PLUGINS = ["data/plugins/rank_top.py", "data/plugins/raw_points.py"]


def uneven(x):
    time.sleep(0.05 if x % 3 == 0 else 0.0)
    return x * x - 3


def pid_of(x):
    return os.getpid()


def raise_on_three(x):
    if x == 3:
        raise ParameterError("x", "should not be 3", x)
    return x


def die_on_two(x):
    if x == 2:
        os._exit(9)
    return x


@pytest.fixture(scope="module")
def corpus(tmp_path_factory):
    out = tmp_path_factory.mktemp("proc-parts") / "corpus"
    convert_to_parts("data/sample.tsv.gz", out, part_rows=30_000, progress=False)
    return out


def test_registered_and_refuses_an_address():
    assert get_engine("processes").map is map_items_processes
    with pytest.raises(ParameterError, match="applies only to engines that join a cluster"):
        check_engine("processes", address="auto")


@pytest.mark.slow
def test_results_in_item_order_from_other_processes():
    items = list(range(13))
    assert list(map_items_processes(uneven, items, workers=2)) == [uneven(x) for x in items]
    pids = set(map_items_processes(pid_of, range(6), workers=2))
    assert os.getpid() not in pids and len(pids) <= 2


def test_one_worker_runs_here():
    assert set(map_items_processes(pid_of, range(3), workers=1)) == {os.getpid()}


@pytest.mark.slow
def test_an_items_error_arrives_as_itself_after_the_items_before_it():
    got = []
    with pytest.raises(ParameterError, match="should not be 3"):
        for r in map_items_processes(raise_on_three, range(8), workers=2):
            got.append(r)
    assert got == [0, 1, 2]


@pytest.mark.slow
def test_a_worker_that_dies_is_an_engine_error_naming_the_item():
    with pytest.raises(EngineError, match=r"a worker process died .* before work item [0-2] was done"):
        list(map_items_processes(die_on_two, range(5), workers=2))


@pytest.mark.slow
@pytest.mark.parametrize("mode", ["episodes", "sequential"])
def test_apply_through_processes_equals_the_embedded_engine_bit_for_bit(corpus, tmp_path, mode):
    want, got = tmp_path / "embedded", tmp_path / "processes"
    apply_to_dataset(corpus, PLUGINS, want, batch_mode=mode, workers=2, progress=False)
    apply_to_dataset(corpus, PLUGINS, got, batch_mode=mode, engine="processes", workers=2, progress=False)
    assert open_dataset(got).load().equals(open_dataset(want).load())
    assert not got.with_name(got.name + ".partial").exists()
    scopes = ("all", "episode_return")
    assert dataset_reward_stats(got, scopes=scopes, engine="processes", workers=2) == \
        dataset_reward_stats(want, scopes=scopes, workers=2)


@pytest.mark.slow
def test_check_plugin_through_processes_merges_every_part(corpus):
    report = check_plugin_dataset(corpus, PLUGINS[0], batch_sizes=(64,), engine="processes", workers=2)
    assert report.ok and report.parts == (len(open_dataset(corpus)),) * 2


@pytest.mark.slow
@pytest.mark.parametrize("body, error, words", [
    ('raise ValueError("seat three")', PluginRuntimeError, "seat three"),
    ("data['next', 'reward'] = data['next', 'end_of_game'].double() / 0", ContractError, "finite"),
])
def test_a_failing_plugin_is_named_with_its_part_and_row_as_on_the_embedded_engine(corpus, tmp_path, body, error,
                                                                                    words):
    # the processes engine's plug-in process reads the parts itself, and names the row there
    bad = tmp_path / "bad.py"
    bad.write_text(f"def get_reward(data, contiguous):\n    {body}\n")
    errors = []
    for engine in ("embedded", "processes"):
        with pytest.raises(error) as caught:
            apply_to_dataset(corpus, [bad], tmp_path / engine, engine=engine, workers=2, progress=False)
        errors.append(str(caught.value))
        assert not (tmp_path / engine).exists()
    assert errors[0] == errors[1] and words in errors[0] and "part " in errors[0] and "game " in errors[0]


POLARS_SEEN = """
import os, re

def get_reward(data, contiguous):
    # 1.0 where Polars' pool runs in the plug-in's own process: it read the part there
    names = [open(f"/proc/self/task/{t}/comm").read().strip() for t in os.listdir("/proc/self/task")]
    seen = any(re.fullmatch(r"polars-\\d+", n) for n in names)
    data['next', 'reward'] = data['next', 'end_of_game'].double() * 0 + float(seen)
"""


@pytest.mark.slow
@pytest.mark.filterwarnings("ignore::rewardlab.core.errors.RewardScaleWarning")
@pytest.mark.skipif(not os.path.isdir("/proc/self/task"), reason="reads thread names from /proc (Linux)")
def test_the_plugin_process_reads_its_parts_itself_on_the_processes_engine(corpus, tmp_path):
    # a fresh worker process never starts Polars' pool, so its plug-in process may: it reads each part and
    # writes its rewards itself (nothing of a part crosses a pipe); the embedded engine's process has the
    # pool running, so it feeds the arrays (a forked child's Polars would wait forever on the pool's threads)
    plugin = tmp_path / "seen.py"
    plugin.write_text(POLARS_SEEN)
    for engine, want in (("processes", 1.0), ("embedded", 0.0)):
        apply_to_dataset(corpus, [plugin], tmp_path / engine, engine=engine, workers=2, progress=False)
        rewards = open_dataset(tmp_path / engine).load()["reward_seen"]
        assert rewards.len() == open_dataset(corpus).rows
        assert set(rewards.to_list()) == {want}, engine


@pytest.mark.slow
@pytest.mark.parametrize("engine", ["processes", "embedded"])
def test_killing_the_driver_leaves_no_process_running(corpus, tmp_path, engine):
    # every process below the driver (workers, the plug-ins' keepers and workers) ends with it
    slow = tmp_path / "slow.py"
    slow.write_text("import time\n\ndef get_reward(data, contiguous):\n    time.sleep(60)\n")
    code = ("import sys; from rewardlab.plugins.apply_parts import apply_to_dataset; "
            "apply_to_dataset(sys.argv[1], [sys.argv[2]], sys.argv[3], engine=sys.argv[4], workers=2, "
            "progress=False)")
    driver = subprocess.Popen([sys.executable, "-c", code, str(corpus), str(slow), str(tmp_path / "out"), engine],
                              start_new_session=True)
    deadline = time.monotonic() + 90
    below: set[int] = set()
    while time.monotonic() < deadline and not _running_plugins({driver.pid} | below):
        time.sleep(0.5)
        below = _descendants(driver.pid)
    assert _running_plugins({driver.pid} | below), "no plug-in process started"
    os.kill(driver.pid, signal.SIGKILL)
    driver.wait()
    deadline = time.monotonic() + 20
    while time.monotonic() < deadline and any(_alive(p) for p in below):
        time.sleep(0.2)
    assert not [p for p in below if _alive(p)]
    assert not (tmp_path / "out").exists()


def _running_plugins(pids: set[int]) -> bool:
    """Whether some process of ``pids`` has a child and a grandchild (a keeper and its plug-in worker)."""
    return any(_children(p) and any(_children(c) for c in _children(p)) for p in pids)


def _descendants(pid: int) -> set[int]:
    found, todo = set(), [pid]
    while todo:
        for child in _children(todo.pop()):
            if child not in found:
                found.add(child)
                todo.append(child)
    return found


def _children(pid: int) -> set[int]:
    found = set()
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                with open(f"/proc/{entry}/stat") as f:
                    fields = f.read().rsplit(")", 1)[1].split()
            except OSError:
                continue
            if int(fields[1]) == pid:
                found.add(int(entry))
    return found


def _alive(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().rsplit(")", 1)[1].split()[0] != "Z"
    except OSError:
        return False


@pytest.mark.skipif(not os.path.isdir("/proc/self/task"), reason="reads thread names from /proc (Linux)")
def test_a_fresh_process_forks_cleanly_until_polars_starts_its_pool():
    code = ("import polars as pl\n"
            "from rewardlab.plugins import apply_parts, isolation\n"
            "print(isolation.polars_forks_cleanly())\n"
            "pl.DataFrame({'x': list(range(10))}).group_by('x').len()\n"
            "print(isolation.polars_forks_cleanly())\n")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.split() == ["True", "False"]
