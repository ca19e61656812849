"""Plug-ins that outlive the run (issue 22): a plug-in's processes end with its run.

Each test here failed before the change it pins: the runner waited for the
result pipe's end rather than for its child, so a grandchild holding the pipe
hid the child's exit; and processes a plug-in started (a plain fork, a new
session, a double-forked daemon) were still running after ``apply_plugins`` or
``check_plugin`` returned.  The fuzz test at the end runs seeded hostile
plug-ins (exits, signals, forks, sleeping children, large outputs, ``__del__``
and ``atexit`` tricks) with a short timeout: each ends in a result or a
rewardlab error naming the plug-in, promptly, with none of its processes left.
"""

from __future__ import annotations

import os
import random
import signal
import textwrap
import threading
import time
import warnings

import numpy as np
import pytest

from rewardlab.cli import main
from rewardlab.core.errors import PluginRunCancelled, PluginRuntimeError, PluginTimeoutError, \
    RewardlabError
from rewardlab.plugins import apply_plugins, check_plugin, isolation

from conftest import PLUGINS_DIR

pytestmark = [pytest.mark.skipif(not isolation.AVAILABLE, reason="needs os.fork"),
              pytest.mark.skipif(not os.path.isdir("/proc/self"), reason="reads /proc to find processes")]

GOOD = ('data["next", "reward"] = torch.where(data["next", "end_of_game"], '
        '(data["sparse"][:, 6] % 2).double() * 2 - 1, 0.0)\n')

HEADER = """\
import atexit, ctypes, os, signal, subprocess, sys, threading, time
import torch

PIDS = {pids!r}


def note(pid):
    fd = os.open(PIDS, os.O_WRONLY | os.O_APPEND | os.O_CREAT)
    os.write(fd, f"{{pid}}\\n".encode())
    os.close(fd)


def daemon():
    # the classic double fork: a new session, the middle process exits, the daemon is orphaned
    r, w = os.pipe()
    middle = os.fork()
    if middle == 0:
        os.setsid()
        if os.fork() == 0:
            os.write(w, str(os.getpid()).encode())
            time.sleep(60)
            os._exit(0)
        os._exit(0)
    os.close(w)
    pid = int(os.read(r, 32))
    os.close(r)
    os.waitpid(middle, 0)
    note(pid)


def sleeper(seconds=60):
    # a forked grandchild that keeps every inherited descriptor open (the result pipe too)
    pid = os.fork()
    if pid == 0:
        time.sleep(seconds)
        os._exit(0)
    note(pid)


def session(seconds=60):
    note(subprocess.Popen(["sleep", str(seconds)], start_new_session=True).pid)


CALLS = 0
"""


def plugin(tmp_path, name, *, at_import="", at_call="", reward=GOOD):
    """A plug-in file running ``at_import`` when loaded and ``at_call`` before its reward."""
    pids = tmp_path / f"{name}.pids"
    text = (HEADER.format(pids=str(pids)) + textwrap.dedent(at_import)
            + "\n\ndef get_reward(data, contiguous):\n    global CALLS\n    CALLS += 1\n"
            + textwrap.indent(textwrap.dedent(at_call) + reward, "    "))
    path = tmp_path / f"{name}.py"
    path.write_text(text)
    return path, pids


def noted(pids) -> list[int]:
    return [int(p) for p in pids.read_text().split()] if pids.exists() else []


def running(pid: int) -> bool:
    """Whether ``pid`` is a process that has not ended (a zombie has ended)."""
    try:
        with open(f"/proc/{pid}/stat", "rb") as f:
            data = f.read()
    except (FileNotFoundError, ProcessLookupError):
        return False
    return data[data.rfind(b")") + 2:data.rfind(b")") + 3] not in (b"Z", b"X")


def exists(pid: int) -> bool:
    """Whether ``pid`` is still in the process table (a zombie not reaped counts)."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    return True


def descendants() -> set[int]:
    """This test process's descendants, from /proc."""
    children: dict[int, list[int]] = {}
    for name in os.listdir("/proc"):
        if name.isdigit():
            try:
                with open(f"/proc/{name}/stat", "rb") as f:
                    data = f.read()
            except OSError:
                continue
            children.setdefault(int(data[data.rfind(b")") + 2:].split()[1]), []).append(int(name))
    found, todo = set(), [os.getpid()]
    while todo:
        for child in children.get(todo.pop(), ()):
            found.add(child)
            todo.append(child)
    return found


@pytest.fixture
def no_leftovers():
    """Fails the test if it leaves a descendant of this process behind."""
    before = descendants()
    yield
    for thread in threading.enumerate():  # rewardlab reaps its exiting keeper process in the background
        if thread.name.startswith("rewardlab-reap-"):
            thread.join(10)
    left = {pid for pid in descendants() - before if running(pid)}
    assert not left, f"processes left behind: {sorted(left)}"


@pytest.fixture(scope="module")
def reference(small_frame):
    path = PLUGINS_DIR / "rank_top.py"
    return apply_plugins(small_frame, path, isolate=False, progress=False)["reward_rank_top"]


def good_rewards(frame) -> np.ndarray:
    seat = frame["sparse"].to_numpy()[:, 6].astype(np.int64)
    return np.where(frame["end_of_game"].to_numpy(), (seat % 2) * 2.0 - 1, 0.0)


# --- the child's exit, not the pipe's end -----------------------------------------------------


def test_grandchild_holding_the_pipe_does_not_hide_the_childs_exit(tmp_path, small_frame, no_leftovers):
    path, pids = plugin(tmp_path, "leaver", at_call="sleeper(30)\nos._exit(3)\n")
    start = time.monotonic()
    with pytest.raises(PluginRuntimeError) as info:
        apply_plugins(small_frame, path, progress=False)
    assert time.monotonic() - start < 15  # before: the grandchild's 30 s
    assert ("plug-in 'leaver'" in str(info.value)
            and "ended rewardlab's child process (exit status 3) while running plug-in 'leaver'"
            in str(info.value))
    [grandchild] = noted(pids)
    assert not exists(grandchild)


def test_run_in_child_reports_the_exit_while_a_grandchild_holds_the_pipe(no_leftovers):
    def job(status, send):
        pid = os.fork()
        if pid == 0:
            time.sleep(30)
            os._exit(0)
        send(pid)
        os._exit(4)

    parts = []
    start = time.monotonic()
    failure = isolation.run_in_child(job, on_part=parts.append)
    assert time.monotonic() - start < 15
    assert isinstance(failure, isolation.ChildFailure)
    assert (failure.how, failure.detail) == ("exit", "exit status 4")
    assert not exists(parts[0])


# --- processes a plug-in starts end with its run ----------------------------------------------


STARTERS = {
    "fork": "sleeper()\n",
    "new_session": "session()\n",
    "double_fork": "daemon()\n",
    "all_three": "sleeper()\nsession()\ndaemon()\n",
}


@pytest.mark.parametrize("starter", list(STARTERS))
@pytest.mark.parametrize("when", ["at_import", "at_call"])
def test_processes_a_plugin_starts_are_ended_when_apply_returns(tmp_path, small_frame, starter, when,
                                                                no_leftovers):
    code = STARTERS[starter]
    path, pids = plugin(tmp_path, "starter", **{when: code if when == "at_import" else
                                                "if CALLS == 1:\n" + textwrap.indent(code, "    ")})
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        out = apply_plugins(small_frame, path, progress=False)
    np.testing.assert_array_equal(out["reward_starter"].to_numpy(), good_rewards(small_frame))
    started = noted(pids)
    assert len(started) == (3 if starter == "all_three" else 1)
    assert not [pid for pid in started if exists(pid)]


@pytest.mark.parametrize("starter", ["new_session", "double_fork"])
def test_processes_a_plugin_starts_are_ended_when_check_plugin_returns(tmp_path, small_frame, starter,
                                                                       no_leftovers):
    path, pids = plugin(tmp_path, "checked",  # one every 15 calls, through the runs of the check
                        at_call="if CALLS % 15 == 1:\n" + textwrap.indent(STARTERS[starter], "    "))
    report = check_plugin(small_frame, path, batch_sizes=(5,), progress=False)
    assert report.ok, str(report)
    started = noted(pids)
    assert len(started) >= 3
    assert not [pid for pid in started if exists(pid)]


def test_check_plugin_command_leaves_no_daemon(tmp_path, small_frame, capsys, no_leftovers):
    data = tmp_path / "small.parquet"
    small_frame.write_parquet(data)
    path, pids = plugin(tmp_path, "cli", at_import="daemon()\nsession()\n")
    assert main(["check-plugin", str(path), "--data", str(data)]) == 0
    assert capsys.readouterr().out.rstrip().endswith("result: PASS")
    assert len(noted(pids)) == 2 and not [pid for pid in noted(pids) if exists(pid)]


def test_normal_plugin_results_are_unchanged(small_frame, reference, no_leftovers):
    path = PLUGINS_DIR / "rank_top.py"
    isolated = apply_plugins(small_frame, path, progress=False)
    assert isolated["reward_rank_top"].equals(reference)
    assert check_plugin(small_frame, path, batch_sizes=(5,), progress=False).ok


def test_forked_copy_returning_into_rewardlab_stops_quietly(tmp_path, small_frame, no_leftovers):
    # the plug-in forks on every call and both copies return: only the child's results count
    path, pids = plugin(tmp_path, "copier", at_call="os.fork()\nnote(os.getpid())\n")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        out = apply_plugins(small_frame, path, batch_mode="sequential", batch_size=8, progress=False)
    np.testing.assert_array_equal(out["reward_copier"].to_numpy(), good_rewards(small_frame))
    started = noted(pids)
    calls = -(-small_frame.height // 8)
    assert len(started) <= 2 * calls  # a copy stops at its next step: no fork explosion
    assert not [pid for pid in started if exists(pid)]


# --- timeouts, cancel and Ctrl-C end the whole tree -------------------------------------------


def test_timeout_ends_the_plugins_processes(tmp_path, small_frame, no_leftovers):
    path, pids = plugin(tmp_path, "stuck", at_call="sleeper()\nsession()\ndaemon()\nwhile True: pass\n")
    start = time.monotonic()
    with pytest.raises(PluginTimeoutError, match="did not finish within 1.5 s while running plug-in 'stuck'"):
        apply_plugins(small_frame, path, timeout=1.5, progress=False)
    assert time.monotonic() - start < 15
    assert len(noted(pids)) == 3 and not [pid for pid in noted(pids) if exists(pid)]


def test_cancel_ends_the_plugins_processes(tmp_path, small_frame, no_leftovers):
    path, pids = plugin(tmp_path, "slow", at_call="daemon()\nsession()\ntime.sleep(30)\n")
    start = time.monotonic()
    with pytest.raises(PluginRunCancelled, match="running plug-in 'slow' was cancelled"):
        check_plugin(small_frame, path, progress=False, cancel=lambda: time.monotonic() - start > 1.0)
    assert time.monotonic() - start < 15
    assert len(noted(pids)) == 2 and not [pid for pid in noted(pids) if exists(pid)]


def test_ctrl_c_ends_the_plugins_processes(tmp_path, no_leftovers):
    def job(status, send):
        send(os.getpid())
        pid = os.fork()
        if pid == 0:
            os.setsid()
            time.sleep(60)
            os._exit(0)
        send(pid)
        time.sleep(60)

    pids = []
    old = signal.signal(signal.SIGALRM, lambda *a: (_ for _ in ()).throw(KeyboardInterrupt()))
    try:
        signal.setitimer(signal.ITIMER_REAL, 1.0)
        with pytest.raises(KeyboardInterrupt):
            isolation.run_in_child(job, on_part=pids.append)
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, old)
    assert len(pids) == 2 and not [pid for pid in pids if exists(pid)]


def test_timeout_of_a_plugin_that_stopped_itself_is_prompt(tmp_path, small_frame, no_leftovers):
    path, _ = plugin(tmp_path, "frozen", at_call="os.kill(os.getpid(), signal.SIGSTOP)\n")
    start = time.monotonic()
    with pytest.raises(PluginTimeoutError, match="did not finish within 1 s"):
        apply_plugins(small_frame, path, timeout=1, progress=False)
    assert time.monotonic() - start < 5  # before: 1 s, then 5 s waiting for a stack a stopped process cannot print


# --- a plug-in turning on its parent process --------------------------------------------------


def test_plugin_that_stops_its_parent_process_still_gets_its_result(tmp_path, small_frame, no_leftovers):
    path, _ = plugin(tmp_path, "stopper", at_call="os.kill(os.getppid(), signal.SIGSTOP)\n")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        out = apply_plugins(small_frame, path, progress=False, timeout=30)
    np.testing.assert_array_equal(out["reward_stopper"].to_numpy(), good_rewards(small_frame))


def test_plugin_that_kills_its_parent_process_is_reported(tmp_path, small_frame, no_leftovers):
    path, pids = plugin(tmp_path, "killer", at_call="note(os.getpid())\nsession()\n"
                        "os.kill(os.getppid(), signal.SIGKILL)\ntime.sleep(60)\n")
    start = time.monotonic()
    with pytest.raises(PluginRuntimeError, match="plug-in 'killer'.*killed by SIGKILL"):
        apply_plugins(small_frame, path, progress=False)
    assert time.monotonic() - start < 15
    [worker, child] = noted(pids)
    # the process that ran the plug-in lost its parent: it and its children are stopped (a zombie
    # left to init is not running)
    assert not running(worker) and not running(child)


# --- what comes back through the pipe ---------------------------------------------------------


def pipe_inodes() -> set[str]:
    found = set()
    for fd in os.listdir("/proc/self/fd"):
        try:
            target = os.readlink(f"/proc/self/fd/{fd}")
        except OSError:
            continue
        if target.startswith("pipe:"):
            found.add(target)
    return found


@pytest.mark.parametrize("junk", [
    b"\xff" * 8 + b"junk",  # a negative length
    (12).to_bytes(8, "little") + b"not a pickle",
    (1 << 40).to_bytes(8, "little") + b"x" * 100,  # a length never reached
])
def test_junk_on_the_result_pipe_is_a_failure_not_a_traceback(junk, no_leftovers):
    inherited = pipe_inodes()

    def job(status, send):  # find the result pipe (the one pipe the parent did not have) and soil it
        for fd in os.listdir("/proc/self/fd"):
            try:
                target = os.readlink(f"/proc/self/fd/{fd}")
            except OSError:
                continue
            if target.startswith("pipe:") and target not in inherited:
                os.write(int(fd), junk)
        return 42

    failure = isolation.run_in_child(job)
    assert isinstance(failure, isolation.ChildFailure) and failure.how == "raised"
    assert "rewardlab could not read what the child process sent back" in failure.detail


def test_large_results_come_back_whole(no_leftovers):
    big = np.arange(3_000_000, dtype=np.float64)
    parts = []
    result = isolation.run_in_child(lambda status, send: (send(big[:1000]), big)[1], on_part=parts.append)
    np.testing.assert_array_equal(result, big)
    np.testing.assert_array_equal(parts[0], big[:1000])


# --- hostile plug-ins, seeded -----------------------------------------------------------------


ACTIONS = {
    "nothing": "pass\n",
    "exit": "os._exit({code})\n",
    "sys_exit": "sys.exit({code})\n",
    "raise": "raise {exc}('hostile')\n",
    "signal": "os.kill(os.getpid(), signal.{sig})\n",
    "segfault": "ctypes.string_at(0)\n",
    "fork_sleeping": "sleeper({seconds})\n",
    "fork_returning": "os.fork()\nnote(os.getpid())\n",
    "new_session": "session({seconds})\n",
    "same_group": "note(subprocess.Popen(['sleep', '{seconds}']).pid)\n",
    "double_fork": "daemon()\n",
    "thread_forks_later": ("threading.Thread(target=lambda: (time.sleep(0.01), sleeper({seconds})), "
                           "daemon=True).start()\n"),
    "large_stdout": "sys.stdout.write('x' * {size}); sys.stdout.flush()\n",
    "large_stderr": "os.write(2, b'y' * {size})\n",
    "atexit": "atexit.register(lambda: os._exit(9))\natexit.register(lambda: 1 / 0)\n",
    "del_raises": ("class Bad:\n    def __del__(self):\n        raise RuntimeError('from __del__')\n"
                   "Bad()\n"),
    "del_exits": "class Bye:\n    def __del__(self):\n        os._exit({code})\nBye()\n",
    "closes_fds": "os.closerange(3, 4096)\n",
    "stop_parent": "os.kill(os.getppid(), signal.SIGSTOP)\n",
    "hang": "while True: pass\n",
    "sleep": "time.sleep(60)\n",
    "stop_self": "os.kill(os.getpid(), signal.SIGSTOP)\n",
    "bad_reward": "data['next', 'reward'] = torch.full((3,), float('nan'))\nreturn\n",
}
#: Actions after which nothing else runs (the process ends or waits for the timeout).
FINAL = {"exit", "sys_exit", "raise", "signal", "segfault", "hang", "sleep", "stop_self", "bad_reward",
         "del_exits", "closes_fds"}


def hostile(rng: random.Random, tmp_path, index: int):
    """A seeded hostile plug-in: 1 to 3 actions at import or at some call."""
    actions = rng.sample(sorted(ACTIONS), rng.randint(1, 3))
    actions.sort(key=lambda a: a in FINAL)  # a final action last
    code = ""
    for action in actions:
        code += ACTIONS[action].format(
            code=rng.choice([0, 1, 3, 70, 255]), exc=rng.choice(["ValueError", "KeyboardInterrupt",
                                                                 "MemoryError", "SystemExit"]),
            sig=rng.choice(["SIGKILL", "SIGSEGV", "SIGTERM", "SIGABRT", "SIGUSR2", "SIGBUS"]),
            seconds=rng.choice([5, 60]), size=rng.choice([10_000, 200_000]))
    where = rng.choice(["at_import", "at_call", "at_call"])
    if where == "at_call":
        code = f"if CALLS == {rng.randint(1, 4)}:\n" + textwrap.indent(code, "    ")
    name = f"hostile{index}"
    path, pids = plugin(tmp_path, name, **{where: code})
    return name, path, pids, actions


def run_hostile(tmp_path, frame, seed: int, count: int, timeout: float = 1.0):
    rng = random.Random(seed)
    for index in range(count):
        name, path, pids, actions = hostile(rng, tmp_path, index)
        check = rng.random() < 0.3
        start = time.monotonic()
        try:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                if check:
                    result = check_plugin(frame, path, batch_sizes=(7,), timeout=timeout, progress=False)
                    assert f"plug-in '{name}'" in str(result) or name in str(result)
                else:
                    out = apply_plugins(frame, path, timeout=timeout, progress=False)
                    assert out.height == frame.height and f"reward_{name}" in out.columns
        except RewardlabError as exc:
            assert f"'{name}'" in str(exc), (actions, str(exc))
        elapsed = time.monotonic() - start
        assert elapsed < timeout * (8 if check else 1) + 12, (actions, elapsed)
        left = [pid for pid in noted(pids) if exists(pid)]
        assert not left, (actions, left)


def test_hostile_plugins_end_in_a_result_or_an_error_and_leave_nothing(tmp_path, small_frame, no_leftovers):
    run_hostile(tmp_path, small_frame, seed=22, count=12)


@pytest.mark.long_fuzz
def test_hostile_plugins_long(tmp_path, small_frame, no_leftovers):
    for seed in range(8):
        (tmp_path / str(seed)).mkdir()
        run_hostile(tmp_path / str(seed), small_frame, seed=1000 + seed, count=40)
