"""core.heap.frozen_heap: the collector's passes skip older objects inside, and nothing stays frozen after."""

import gc
import threading

import pytest

from rewardlab.core.heap import frozen_heap


@pytest.fixture(autouse=True)
def _clean_heap():
    assert gc.get_freeze_count() == 0
    yield
    gc.unfreeze()


def _collected(objects) -> list[bool]:
    """Whether each object is in one of the collector's generations (a frozen one is in none)."""
    seen = {id(o) for o in gc.get_objects()}
    return [id(o) in seen for o in objects]


def test_objects_alive_before_are_frozen_inside_and_not_after():
    before = [[] for _ in range(10)]  # alive across the block
    with frozen_heap():
        inside = [[] for _ in range(5)]
        gc.collect()  # a full pass inside does not move the frozen objects back
        assert not any(_collected(before)) and all(_collected(inside))
    assert gc.get_freeze_count() == 0
    assert all(_collected(before + inside))


def test_an_inner_block_freezes_what_the_outer_body_made_and_only_the_outermost_unfreezes():
    with frozen_heap():
        made = [[] for _ in range(100)]
        assert all(_collected(made))  # made inside the outer block: still the collector's
        with frozen_heap():
            assert not any(_collected(made))
        assert not any(_collected(made)) and gc.get_freeze_count() > 0
    assert gc.get_freeze_count() == 0 and all(_collected(made))


def test_a_callers_own_freeze_is_left_alone():
    gc.freeze()
    count = gc.get_freeze_count()
    with frozen_heap():
        extra = [[] for _ in range(1000)]  # noqa: F841
    assert gc.get_freeze_count() == count  # neither unfrozen nor frozen further


def test_nothing_happens_with_the_collector_disabled():
    gc.disable()
    try:
        with frozen_heap():
            assert gc.get_freeze_count() == 0
    finally:
        gc.enable()


def test_blocks_open_in_several_threads_unfreeze_when_the_last_closes():
    entered, release = threading.Barrier(3), threading.Event()

    def work():
        with frozen_heap():
            entered.wait()
            release.wait()

    threads = [threading.Thread(target=work) for _ in range(2)]
    for t in threads:
        t.start()
    entered.wait()
    assert gc.get_freeze_count() > 0
    release.set()
    for t in threads:
        t.join()
    assert gc.get_freeze_count() == 0


def test_a_plugin_run_leaves_nothing_frozen(small_frame):
    import numpy as np

    import rewardlab
    from rewardlab.plugins import load_plugin
    from rewardlab.plugins.batch_modes import episode_ends, plan_batches
    from rewardlab.plugins.runner import Locator, run_plugins
    from conftest import PLUGINS_DIR

    arrays = rewardlab.FrameArrays(small_frame)
    plan = plan_batches("episodes", episode_ends(arrays.end_of_game), batch_size=1)
    [out] = run_plugins(arrays, Locator(small_frame), [load_plugin(PLUGINS_DIR / "round_delta.py")], plan,
                        mode="episodes", batch_size=None)
    assert out.calls > 0 and np.isfinite(out.rewards).all()
    assert gc.get_freeze_count() == 0
