"""The engine registry and the embedded engine's map semantics (rewardlab.engines).

The reference for every result is a plain loop over the same items.  The Ray
engine's own tests are in test_engine_ray.py; here it is only listed.
"""

from __future__ import annotations

import threading
import time

import pytest

from rewardlab.core.errors import ParameterError
from rewardlab.engines import (
    BUILTIN_ENGINES, DEFAULT_ENGINE, Engine, check_engine, get_engine, register_engine, registered_engines,
    unregister_engine,
)
from rewardlab.engines import embedded
from rewardlab.engines.embedded import MAX_WORKERS, available_cores, check_workers, map_items


def uneven(x):
    time.sleep(0.05 if x % 3 == 0 else 0.0)  # some early items finish after later ones
    return x * x - 3


class Recorder:
    """fn that records which items started (and in which thread), and fails on chosen items."""

    def __init__(self, fail=(), slow=()):
        self.fail = dict(fail)
        self.slow = dict(slow)
        self.started = []
        self.threads = set()
        self.lock = threading.Lock()

    def __call__(self, x):
        with self.lock:
            self.started.append(x)
            self.threads.add(threading.get_ident())
        time.sleep(self.slow.get(x, 0.0))
        if x in self.fail:
            raise self.fail[x]
        return x


# --- embedded: order and laziness

@pytest.mark.parametrize("workers", [1, 2, 3, 8])
def test_results_in_item_order(workers):
    items = list(range(25))
    assert list(map_items(uneven, items, workers=workers)) == [uneven(x) for x in items]


def test_empty_items():
    assert list(map_items(uneven, [], workers=3)) == []


def test_items_read_lazily_at_most_two_per_worker_ahead():
    read = []

    def source():
        for k in range(100):
            read.append(k)
            yield k

    results = map_items(lambda x: x, source(), workers=3)
    for expected in range(10):
        assert next(results) == expected
        assert len(read) <= expected + 1 + 2 * 3  # the item yielded, plus at most 2 * workers ahead
    results.close()
    assert len(read) < 100


def test_workers_one_runs_in_this_thread_one_at_a_time():
    fn = Recorder()
    results = map_items(fn, iter(range(5)), workers=1)
    assert fn.started == []  # nothing runs before the first next()
    assert next(results) == 0 and fn.started == [0]
    assert list(results) == [1, 2, 3, 4]
    assert fn.threads == {threading.get_ident()}


def test_several_workers_run_in_other_threads():
    fn = Recorder(slow={k: 0.02 for k in range(6)})
    assert list(map_items(fn, range(6), workers=3)) == list(range(6))
    assert threading.get_ident() not in fn.threads
    assert len(fn.threads) > 1


# --- embedded: the first exception stops the run

@pytest.mark.parametrize("workers", [1, 2, 4])
def test_first_exception_in_item_order_propagates(workers):
    # item 2 fails late, item 3 fails at once: item 2's error is the one raised
    fn = Recorder(fail={2: ValueError("item 2"), 3: KeyError("item 3")}, slow={2: 0.1})
    got = []
    with pytest.raises(ValueError, match="item 2"):
        for value in map_items(fn, range(50), workers=workers):
            got.append(value)
    assert got == [0, 1]


@pytest.mark.parametrize("workers", [1, 2, 4])
def test_later_items_not_started_after_an_exception(workers):
    fn = Recorder(fail={1: ParameterError("gamma", "should be in [0, 1]", 2.0)}, slow={0: 0.05})
    with pytest.raises(ParameterError, match=r"`gamma` should be in \[0, 1\]. Received 2.0.") as caught:
        list(map_items(fn, range(200), workers=workers))
    assert caught.value.name == "gamma"
    started = len(fn.started)
    assert max(fn.started) <= 1 + 2 * workers  # no more than were submitted ahead of item 1
    time.sleep(0.1)
    assert len(fn.started) == started  # the pool is shut: nothing starts later


def test_closing_early_stops_the_run():
    fn = Recorder(slow={k: 0.01 for k in range(200)})
    results = map_items(fn, range(200), workers=2)
    assert [next(results) for _ in range(3)] == [0, 1, 2]
    results.close()
    started = len(fn.started)
    assert started <= 3 + 2 * 2
    time.sleep(0.1)
    assert len(fn.started) == started


# --- embedded: workers checked

def test_check_workers():
    assert check_workers(1) == 1 and check_workers(MAX_WORKERS) == MAX_WORKERS
    assert check_workers(None) == available_cores() >= 1
    for bad in (0, -1, MAX_WORKERS + 1, 2.0, True, "2"):
        with pytest.raises(ParameterError) as caught:
            check_workers(bad)
        assert str(caught.value) == f"`workers` should be an integer in [1, {MAX_WORKERS}]. Received {bad!r}."
    with pytest.raises(ParameterError, match=r"^`--workers` should be an integer"):
        check_workers(0, argument="--workers")


def test_map_checks_workers():
    with pytest.raises(ParameterError, match="`workers`"):
        list(map_items(uneven, [1], workers=0))


# --- the registry

def test_builtin_engines_listed_first():
    engines = registered_engines()
    assert list(engines)[:3] == ["embedded", "processes", "ray"] == list(BUILTIN_ENGINES)
    assert DEFAULT_ENGINE == "embedded" and get_engine("embedded") is embedded.ENGINE
    assert engines["ray"].joins_cluster and not engines["embedded"].joins_cluster
    assert all(engine.description for engine in engines.values())


def serial_map(fn, items, *, workers=None, address=None):
    return (fn(item) for item in items)


def test_register_replace_unregister():
    engine = register_engine(Engine("serial_test", map=serial_map, description="a plain loop"))
    try:
        assert get_engine("serial_test") is engine and "serial_test" in registered_engines()
        assert list(check_engine("serial_test").map(abs, [-1, -2])) == [1, 2]
        assert register_engine(engine) is engine  # the same engine again: no error
        other = Engine("serial_test", map=serial_map, description="another")
        with pytest.raises(ParameterError, match=r"names an engine already registered \('serial_test'\); pass "
                                                 r"replace=True"):
            register_engine(other)
        assert register_engine(other, replace=True) is other and get_engine("serial_test") is other
    finally:
        assert unregister_engine("serial_test").description == "another"
    assert "serial_test" not in registered_engines()
    with pytest.raises(ParameterError, match="should name a registered engine.*Registered: embedded, processes, ray"):
        unregister_engine("serial_test")


def test_register_refuses_bad_engines():
    with pytest.raises(ParameterError, match="`engine` should be a rewardlab.engines.Engine"):
        register_engine(serial_map)
    with pytest.raises(ParameterError, match="`engine.name` should be a Python identifier"):
        register_engine(Engine("two words", map=serial_map))


def test_unknown_engine_lists_the_registered_ones():
    with pytest.raises(ParameterError) as caught:
        get_engine("spark")
    assert str(caught.value) == "`engine` should be one of 'embedded', 'processes', 'ray'. Received 'spark'."
    with pytest.raises(ParameterError, match=r"should be one of 'embedded', 'processes', 'ray'. Received 'spark'."):
        check_engine("spark")


def test_check_engine_refuses_an_address_where_no_cluster_is_joined():
    with pytest.raises(ParameterError) as caught:
        check_engine("embedded", address="auto", argument="--engine", address_argument="--ray-address")
    assert str(caught.value) == ("`--ray-address` applies only to engines that join a cluster (ray). Received "
                                 "'auto'. Leave it out, or pick --engine='ray'.")


def test_check_engine_refuses_an_engine_that_cannot_run_here():
    engine = register_engine(Engine("absent_test", map=serial_map, missing=lambda: "pip install absent"))
    try:
        with pytest.raises(ParameterError, match="`engine` names an engine that cannot run here: pip install "
                                                 "absent. Received 'absent_test'."):
            check_engine("absent_test")
        with pytest.raises(ParameterError, match="cannot run here"):
            check_engine(engine)
    finally:
        unregister_engine("absent_test")


# --- prefetch: a serial producer a few items ahead in a background thread ------------------------------

def test_prefetch_yields_every_item_in_order():
    assert list(embedded.prefetch(iter(range(100)), depth=3)) == list(range(100))


def test_prefetch_runs_the_producer_at_most_depth_ahead():
    produced = []

    def items():
        for i in range(50):
            produced.append(i)
            yield i

    it = embedded.prefetch(items(), depth=2)
    assert next(it) == 0
    time.sleep(0.3)
    assert len(produced) <= 1 + 2 + 1  # the one taken, the queue, the one waiting to be put
    it.close()


def test_prefetch_raises_the_producers_error_after_the_items_before_it():
    def items():
        yield 1
        yield 2
        raise ValueError("damaged at item 3")

    it = embedded.prefetch(items())
    assert next(it) == 1 and next(it) == 2
    with pytest.raises(ValueError, match="damaged at item 3"):
        next(it)


def test_prefetch_closed_early_stops_and_closes_the_producer():
    closed = threading.Event()

    def items():
        try:
            for i in range(10 ** 9):
                yield i
        finally:
            closed.set()

    it = embedded.prefetch(items(), depth=1)
    assert next(it) == 0
    it.close()
    assert closed.wait(5)


def test_prefetch_checks_depth():
    with pytest.raises(ParameterError, match="depth"):
        list(embedded.prefetch(iter([1]), depth=0))
