"""The ray engine (rewardlab.engines.raydata): Ray Data tasks, one per work item, results in item order.

Every test that runs Ray shares one local 2-CPU Ray (the ``ray_local`` fixture
in conftest.py); they are skipped with a message when the ``ray`` extra is
missing outside CI, and fail under CI.  The reference for every result is a
plain loop, or the embedded engine on the same items.
"""

from __future__ import annotations

import functools
import importlib.util
import os
import re
import signal
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pytest

from rewardlab.core.errors import ParameterError
from rewardlab.engines import check_engine, get_engine
from rewardlab.engines import raydata
from rewardlab.engines.embedded import map_items
from rewardlab.engines.raydata import EngineError, map_items_ray


# --- functions the workers run (module level: they pickle by reference; conftest puts tests/ on the
# --- workers' path)

def square(x):
    return x * x


def uneven(x):
    """Early items slow, late ones fast: completion order is not item order."""
    time.sleep(0.4 if x < 3 else 0.0)
    return (x, os.getpid())


@dataclass(frozen=True)
class Summary:
    part: int
    rows: int
    total: float


def summarize(part):
    """A part (whole episodes as arrays) -> what a pass over a part returns: arrays, a dataclass, bytes."""
    index, rewards, episode = part
    ends = np.flatnonzero(np.diff(episode, append=episode[-1] + 1)) + 1
    return {"summary": Summary(index, len(rewards), float(rewards.sum())),
            "episode_returns": np.add.reduceat(rewards, np.r_[0, ends[:-1]]),
            "sketch": rewards.astype("<f8").tobytes()[:64],
            "episodes": np.unique(episode)}


def make_parts(count, seed=7):
    rng = np.random.default_rng(seed)
    parts = []
    for k in range(count):
        lengths = rng.integers(1, 400, size=rng.integers(1, 6))
        episode = np.repeat(np.arange(len(lengths)) + 100 * k, lengths)
        parts.append((k, rng.normal(size=len(episode)), episode))
    return parts


def raise_parameter_error(x):
    if x == 4:
        raise ParameterError("gamma", "should be in [0, 1]", 1.5, hint="Pick a discount in [0, 1].")
    return x


def two_failures(x):
    if x == 1:
        time.sleep(0.5)
        raise ValueError("item 1, the first in order")
    if x == 2:
        raise KeyError("item 2, raised first in time")
    return x


class NeedsTwoArguments(Exception):
    def __init__(self, a, b):
        super().__init__(f"{a}/{b}")


def raise_unrebuildable(x):
    raise NeedsTwoArguments("left", "right")


def kill_once(markers: Path, victim: int, x):
    """Item ``victim`` kills its own worker process the first time it runs."""
    (markers / f"ran-{x}-{os.getpid()}-{time.monotonic_ns()}").write_text("")
    if x == victim and not (markers / "killed").exists():
        (markers / "killed").write_text(str(os.getpid()))
        os.kill(os.getpid(), signal.SIGKILL)
    return x * 10


def always_exit(markers: Path, victim: int, x):
    (markers / f"ran-{x}-{os.getpid()}-{time.monotonic_ns()}").write_text("")
    if x == victim:
        os._exit(3)
    return x


def mark_and_sleep(markers: Path, x):
    (markers / f"started-{x}").write_text("")
    time.sleep(0.2)
    return x


def runs_of(markers: Path, item: int) -> int:
    return len(list(markers.glob(f"ran-{item}-*")))


# --- results, order, whole items

def test_results_in_item_order_with_uneven_durations(ray_local):
    got = list(map_items_ray(uneven, range(8), workers=2))
    assert [x for x, _ in got] == list(range(8))
    assert {pid for _, pid in got} != {os.getpid()}  # ran in Ray workers, not here


def test_equals_embedded_on_whole_parts(ray_local):
    parts = make_parts(9)
    on_ray = list(get_engine("ray").map(summarize, parts, workers=2))
    embedded = list(map_items(summarize, parts, workers=2))
    plain = [summarize(p) for p in parts]
    assert len(on_ray) == len(embedded) == len(plain) == 9
    for r, e, p, part in zip(on_ray, embedded, plain, parts):
        assert r["summary"] == e["summary"] == p["summary"]
        assert r["summary"].rows == len(part[1])  # the item arrived whole
        np.testing.assert_array_equal(r["episode_returns"], e["episode_returns"])
        np.testing.assert_array_equal(r["episodes"], np.unique(part[2]))  # no episode cut or lost
        assert r["sketch"] == e["sketch"] == p["sketch"]


def test_every_item_runs_once_and_workers_none_uses_the_cluster(ray_local, tmp_path):
    got = list(map_items_ray(functools.partial(kill_once, tmp_path, -1), range(12)))
    assert got == [x * 10 for x in range(12)]
    assert [runs_of(tmp_path, x) for x in range(12)] == [1] * 12


def test_callers_data_context_left_as_it_was(ray_local):
    from ray.data import DataContext

    options = DataContext.get_current().execution_options
    before = options.preserve_order
    options.preserve_order = False
    try:
        assert [x for x, _ in map_items_ray(uneven, range(5), workers=2)] == list(range(5))
        assert DataContext.get_current().execution_options.preserve_order is False
    finally:
        options.preserve_order = before


def test_no_items_starts_nothing(ray_installed, monkeypatch):
    monkeypatch.setattr(raydata, "connect", lambda address: pytest.fail("connected for no items"))
    assert list(map_items_ray(square, [])) == []


# --- errors raised by fn

def test_parameter_error_arrives_as_itself(ray_local):
    with pytest.raises(ParameterError) as caught:
        list(map_items_ray(raise_parameter_error, range(8), workers=2))
    with pytest.raises(ParameterError) as embedded:
        list(map_items(raise_parameter_error, range(8), workers=2))
    assert str(caught.value) == str(embedded.value) == (
        "`gamma` should be in [0, 1]. Received 1.5. Pick a discount in [0, 1].")
    assert (caught.value.name, caught.value.value, caught.value.hint) == ("gamma", 1.5, "Pick a discount in [0, 1].")
    assert isinstance(caught.value, ValueError)
    assert any("work item 4 in a Ray worker" in note and "raise_parameter_error" in note
               for note in caught.value.__notes__)


def test_first_error_in_item_order_wins(ray_local):
    with pytest.raises(ValueError, match="item 1, the first in order"):
        list(map_items_ray(two_failures, range(6), workers=2))
    results = []
    with pytest.raises(ValueError):
        for value in map_items_ray(two_failures, range(6), workers=2):
            results.append(value)
    assert results == [0]  # the item before the failure was yielded first


def test_exception_that_cannot_be_rebuilt_is_named(ray_local):
    with pytest.raises(EngineError, match=r"work item 0 raised test_engine_ray\.NeedsTwoArguments: left/right") \
            as caught:
        list(map_items_ray(raise_unrebuildable, [0]))
    assert "raise_unrebuildable" in str(caught.value)  # the worker's traceback


def test_function_missing_on_the_workers_is_the_items_error(ray_local, tmp_path, monkeypatch):
    (tmp_path / "driver_only_plugin.py").write_text("def reward(x):\n    return x + 1\n")
    monkeypatch.syspath_prepend(str(tmp_path))  # the driver can import it; the workers cannot
    from driver_only_plugin import reward

    with pytest.raises(ModuleNotFoundError, match="driver_only_plugin") as caught:
        list(map_items_ray(reward, range(3)))
    assert any("work item 0 in a Ray worker" in note for note in caught.value.__notes__)


def result_that_does_not_pickle(x):
    import threading

    return threading.Lock() if x == 1 else x


def test_result_that_does_not_pickle_is_the_items_error(ray_local):
    got = []
    with pytest.raises(TypeError, match="pickle") as caught:
        for value in map_items_ray(result_that_does_not_pickle, range(4), workers=2):
            got.append(value)
    assert got == [0]
    assert any("work item 1 in a Ray worker" in note for note in caught.value.__notes__)


# --- streaming

def test_first_result_before_every_item_started_and_close_stops_the_rest(ray_local, tmp_path):
    items = 80  # 80 x 0.2 s on 2 workers: 8 s of work
    results = map_items_ray(functools.partial(mark_and_sleep, tmp_path), range(items), workers=2)
    assert next(results) == 0
    started_at_first = len(list(tmp_path.glob("started-*")))
    assert started_at_first < items
    results.close()
    at_close = len(list(tmp_path.glob("started-*")))
    time.sleep(1.5)
    later = len(list(tmp_path.glob("started-*")))
    assert later <= at_close + 2 and later < items  # at most the tasks already handed to the 2 workers


# --- faults: a worker that dies

def test_killed_worker_item_is_retried(ray_local, tmp_path):
    fn = functools.partial(kill_once, tmp_path, 3)
    got = list(map_items_ray(fn, range(7), workers=2))
    assert got == [x * 10 for x in range(7)]  # complete and in order
    assert (tmp_path / "killed").exists()
    assert runs_of(tmp_path, 3) == 2  # killed once, run again
    assert [runs_of(tmp_path, x) for x in range(7) if x != 3] == [1] * 6


@pytest.mark.parametrize("victim, retries", [(1, 1), (2, 0)])  # a later item comes back; the last one dies
def test_worker_dying_every_time_is_an_engine_error_naming_the_item(ray_local, monkeypatch, tmp_path, victim, retries):
    monkeypatch.setattr(raydata, "TASK_RETRIES", retries)
    runs = "2 times" if retries else "1 time"
    with pytest.raises(EngineError, match=rf"work item {victim} of 3 did not come back from Ray: Ray ran it {runs} "
                                          r"and its worker died each time") as caught:
        list(map_items_ray(functools.partial(always_exit, tmp_path, victim), range(3), workers=2))
    assert runs_of(tmp_path, victim) == 1 + retries  # the first run and TASK_RETRIES retries, no more
    assert "rewardlab, at the driver's version, is installed on every node" in str(caught.value)
    assert isinstance(caught.value, RuntimeError)


# --- validation, and no Ray needed to import or check

def test_check_engine_address(ray_installed):
    assert check_engine("ray", address="auto") is raydata.ENGINE
    assert check_engine("ray", address="ray://head:10001").name == "ray"
    with pytest.raises(ParameterError, match="`address` should be a cluster address"):
        check_engine("ray", address="")
    with pytest.raises(ParameterError, match="`address` should be a cluster address"):
        check_engine("ray", address=10001)
    with pytest.raises(ParameterError, match=r"applies only to engines that join a cluster \(ray\)"):
        check_engine("embedded", address="auto")


def test_map_arguments_checked_before_any_work(monkeypatch):
    monkeypatch.setattr(raydata, "connect", lambda address: pytest.fail("connected before the checks"))
    with pytest.raises(ParameterError, match=r"`workers` should be an integer in \[1, 1024\], or None"):
        map_items_ray(square, [1], workers=0)
    with pytest.raises(ParameterError, match="`workers`"):
        map_items_ray(square, [1], workers=True)
    with pytest.raises(ParameterError, match="`address` should be a Ray cluster address"):
        map_items_ray(square, [1], address=5)


def test_missing_ray_says_what_to_install(monkeypatch):
    real = importlib.util.find_spec
    monkeypatch.setattr(importlib.util, "find_spec", lambda name, *a: None if name == "ray" else real(name, *a))
    from rewardlab.core.extras import extra_hint, install_command

    assert raydata.missing() == f"Ray (ray[data]==2.60.0) is not installed. {extra_hint('ray')}"
    with pytest.raises(ParameterError, match=r"`engine` names an engine that cannot run here: Ray .* is not "
                                             r"installed\. .*" + re.escape(install_command("ray"))):
        check_engine("ray")
    with pytest.raises(EngineError, match=re.escape(install_command("ray"))):
        map_items_ray(square, [1])
    assert check_engine("embedded").name == "embedded"


def test_import_does_not_import_ray():
    code = ("import sys, rewardlab.engines as e; e.registered_engines(); e.check_engine('ray', address='auto'); "
            "print('ray' in sys.modules)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "False"


@pytest.mark.parametrize("address, message, hint", [
    ("ray://head:10001", "ValueError: Ray Client requires pip package `ray[client]`.",
     "pip install 'ray[client]==2.60.0'"),
    ("head:6379", "ConnectionError: could not reach the GCS", "Check the address"),
])
def test_cluster_that_cannot_be_joined_is_an_engine_error(ray_installed, monkeypatch, address, message, hint):
    ray = ray_installed
    kind, text = message.split(": ", 1)

    def refuse(**options):
        assert options["address"] == address
        raise {"ValueError": ValueError, "ConnectionError": ConnectionError}[kind](text)

    monkeypatch.setattr(ray, "is_initialized", lambda: False)
    monkeypatch.setattr(ray, "init", refuse)
    with pytest.raises(EngineError) as caught:
        list(map_items_ray(square, [1], address=address))
    assert str(caught.value).startswith(f"could not join the Ray cluster at {address!r}: {message}")
    assert hint in str(caught.value)
