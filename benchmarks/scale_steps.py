"""Run one CLI step as a child process and measure its wall time and peak resident memory.

Memory figures, all per process (never summed, but for ``tree_sum``), in bytes:

``peak``
    The largest peak RSS of any one process of the step: the maximum of
    ``os.wait4``'s ``ru_maxrss`` (Linux reports, for the reaped child, the
    larger of its own peak and the peaks of every descendant it waited for:
    the plug-in keeper and worker of ``rewardlab.plugins.isolation``) and the
    sampled ``VmHWM`` of every process below the child (which also covers
    processes nobody waited for, such as Ray's raylet and workers).  The issue's
    "under 2 GiB per process" target is checked on this figure.  The step is
    started from a small shim (:data:`_SHIM`), not from the benchmark itself:
    Linux carries a peak RSS across ``fork`` and ``exec``, so a step forked
    from a big benchmark process would report that process's peak as its own.
``main``
    ``VmHWM`` of the CLI process itself, read from ``/proc`` every
    :data:`SAMPLE_SECONDS` (a lower bound: growth in its last moments is missed).
``child``
    The largest sampled ``VmHWM`` of a process below the CLI process (a forked
    plug-in worker shares its parent's pages copy-on-write: pages it touches
    count in its RSS too).
``tree_sum``
    The largest sum of ``VmRSS`` over the whole tree at one sample (shared pages
    counted once per process: an upper bound on what the step held at once).

CPU figures, in seconds, say whether a step kept its cores busy:

``cpu``
    User plus system time of the CLI process and of every descendant it (or
    a descendant) waited for, from ``os.wait4``: the plug-in processes, the
    worker processes of the processes engine, the file workers.  Not Ray's
    raylet or workers, which Ray itself starts and reaps.
``cpu_sys``
    The system part of ``cpu``: the kernel's work for the step (pipes, page
    faults of fresh memory, file reads and writes).  A share that grows with
    the workers points at the kernel (contended page faults), not at Python.
``main_cpu``
    User plus system time of the CLI process alone, its threads included, as
    last sampled from ``/proc/PID/stat`` (a lower bound, like ``main``).

``cpu / seconds`` is the cores the step kept busy on average (:attr:`Step.busy`);
``main_cpu / seconds`` near 1.0 on many cores says the CLI process itself, one
interpreter, is what the step waits for.

Examples
--------
>>> step = run_step("true", ["true"], rows=0)
>>> step.ok, step.peak > 0
(True, True)
"""

from __future__ import annotations

import os
import subprocess
import sys
import tempfile
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path

SAMPLE_SECONDS = 0.2
GIB = 1024 ** 3


@dataclass
class Step:
    """One measured step."""

    label: str
    argv: list[str]
    rows: int
    seconds: float = 0.0
    returncode: int | None = None
    peak: int = 0
    main: int = 0
    child: int = 0
    child_name: str = ""
    tree_sum: int = 0
    processes: int = 0
    cpu: float = 0.0
    cpu_sys: float = 0.0
    main_cpu: float = 0.0
    stdout: str = ""
    stderr: str = ""
    skipped: str = ""  # why the step did not run

    @property
    def ok(self) -> bool:
        return self.returncode == 0 and not self.skipped

    @property
    def rate(self) -> float:
        return self.rows / self.seconds if self.ok and self.seconds > 0 else float("nan")

    @property
    def busy(self) -> float:
        """Cores kept busy on average: CPU seconds of the step's process tree per second of wall time."""
        return self.cpu / self.seconds if self.ok and self.seconds > 0 else float("nan")

    @property
    def main_busy(self) -> float:
        """Cores the CLI process itself kept busy on average (its threads; 1.0: one core all the time)."""
        return self.main_cpu / self.seconds if self.ok and self.seconds > 0 else float("nan")

    @property
    def cpu_per_million(self) -> float:
        """CPU seconds of the step's process tree per 10^6 transitions: what it costs, whatever the cores."""
        return self.cpu / self.rows * 1e6 if self.ok and self.rows else float("nan")

    def cpu_text(self) -> str:
        """The CPU figures in words, for a report line."""
        sys_share = self.cpu_sys / self.cpu if self.cpu > 0 else float("nan")
        return (f"{self.cpu_per_million:.2f} CPU-s per 10^6 ({sys_share:.0%} system), {self.busy:.1f} cores busy "
                f"(the CLI process {self.main_busy:.2f})")


_TICKS = os.sysconf("SC_CLK_TCK") if hasattr(os, "sysconf") else 100


def _stat_fields(pid: int) -> list[bytes] | None:
    """The fields of ``/proc/PID/stat`` after the command name (field 3, the state, first); None when gone."""
    try:
        with open(f"/proc/{pid}/stat", "rb") as f:
            stat = f.read()
    except OSError:
        return None
    return stat[stat.rindex(b")") + 2:].split()


def _cpu_seconds(pid: int) -> float | None:
    """User plus system CPU seconds of ``pid`` itself (all its threads), from ``/proc/PID/stat``."""
    fields = _stat_fields(pid)
    return None if fields is None else (int(fields[11]) + int(fields[12])) / _TICKS  # utime, stime: 14, 15


def _status(pid: int) -> dict[str, int]:
    """VmHWM and VmRSS of ``pid`` in bytes (empty when it is gone or a zombie)."""
    out: dict[str, int] = {}
    try:
        with open(f"/proc/{pid}/status", "rb") as f:
            for line in f:
                if line.startswith((b"VmHWM:", b"VmRSS:")):
                    key, value = line.split(b":", 1)
                    out[key.decode()] = int(value.split()[0]) * 1024
    except OSError:
        pass
    return out


def descendants(root: int) -> list[int]:
    """Every live process below ``root`` (by parent id, read from ``/proc/PID/stat``)."""
    children: dict[int, list[int]] = {}
    for entry in os.scandir("/proc"):
        if not entry.name.isdigit():
            continue
        fields = _stat_fields(int(entry.name))
        if fields is None:
            continue
        children.setdefault(int(fields[1]), []).append(int(entry.name))  # field 4, the parent's pid
    found, todo = [], [root]
    while todo:
        for pid in children.get(todo.pop(), ()):
            found.append(pid)
            todo.append(pid)
    return found


def _comm(pid: int) -> str:
    try:
        with open(f"/proc/{pid}/comm") as f:
            return f.read().strip()
    except OSError:
        return "?"


@dataclass
class _Sampler:
    root: int
    hwm: dict[int, int] = field(default_factory=dict)
    names: dict[int, str] = field(default_factory=dict)
    cpu: dict[int, float] = field(default_factory=dict)
    tree_sum: int = 0
    stop: threading.Event = field(default_factory=threading.Event)

    def sample(self) -> None:
        total = 0
        for pid in [self.root, *descendants(self.root)]:
            status = _status(pid)
            if not status:
                continue
            if pid not in self.names:
                self.names[pid] = _comm(pid)
            self.hwm[pid] = max(self.hwm.get(pid, 0), status.get("VmHWM", 0))
            total += status.get("VmRSS", 0)
            cpu = _cpu_seconds(pid)
            if cpu is not None:
                self.cpu[pid] = max(self.cpu.get(pid, 0.0), cpu)
        self.tree_sum = max(self.tree_sum, total)

    def loop(self) -> None:
        while not self.stop.wait(SAMPLE_SECONDS):
            self.sample()


def tail(text: str, lines: int = 15) -> str:
    return "\n".join(text.rstrip().splitlines()[-lines:])


#: Runs the step as its own child and reports that child's pid and ``ru_maxrss``.  Linux carries a
#: process's peak RSS across ``exec`` and into ``fork``'s child, so a step started straight from a
#: big benchmark process would report the benchmark's own peak; the step started from this small
#: shim (its grandchild) starts from zero.
_SHIM = """
import os, sys
report, argv = sys.argv[1], sys.argv[2:]
pid = os.fork()
if pid == 0:
    try:
        os.execvp(argv[0], argv)
    finally:
        os._exit(127)
with open(report, "w") as f:
    f.write(f"{pid}\\n")
_, status, usage = os.wait4(pid, 0)
with open(report, "a") as f:
    f.write(f"{usage.ru_maxrss}\\n{usage.ru_utime + usage.ru_stime!r}\\n{usage.ru_stime!r}\\n")
code = os.waitstatus_to_exitcode(status)
sys.exit(code if code >= 0 else 128 - code)
"""


def run_step(label: str, argv: list[str], *, rows: int, env: dict[str, str] | None = None,
             cwd: Path | None = None) -> Step:
    """Run ``argv`` to its end, timed (wall) and with its memory sampled; never raises for a failed command.

    Examples
    --------
    >>> run_step("fails", ["false"], rows=10).ok
    False
    """
    step = Step(label, list(argv), rows)
    with tempfile.TemporaryFile("w+") as out, tempfile.TemporaryFile("w+") as err, \
            tempfile.NamedTemporaryFile("r", suffix=".shim") as report:
        t0 = time.perf_counter()
        try:
            proc = subprocess.Popen([sys.executable, "-S", "-c", _SHIM, report.name, *argv], stdout=out,
                                    stderr=err, stdin=subprocess.DEVNULL, env=env, cwd=cwd)
        except OSError as exc:
            step.skipped = f"could not start: {exc}"
            return step
        sampler = _Sampler(proc.pid)
        thread = threading.Thread(target=sampler.loop, daemon=True)
        thread.start()
        proc.wait()
        step.seconds = time.perf_counter() - t0
        sampler.stop.set()
        thread.join()
        step.returncode = proc.returncode
        out.seek(0)
        err.seek(0)
        step.stdout, step.stderr = out.read(), err.read()
        shim = report.read().split()
    hwm = dict(sampler.hwm)
    hwm.pop(proc.pid, None)  # the shim
    pid = int(shim[0]) if shim else -1
    maxrss = int(shim[1]) * 1024 if len(shim) > 1 else 0
    step.cpu = float(shim[2]) if len(shim) > 2 else 0.0
    step.cpu_sys = float(shim[3]) if len(shim) > 3 else 0.0
    step.main_cpu = sampler.cpu.get(pid, 0.0)
    step.main = hwm.pop(pid, 0)
    if hwm:
        child = max(hwm, key=hwm.__getitem__)
        step.child, step.child_name = hwm[child], sampler.names.get(child, "?")
    step.processes = 1 + len(hwm)
    step.tree_sum = sampler.tree_sum  # the shim's few MB included
    step.peak = max(maxrss, step.main, step.child)
    return step
