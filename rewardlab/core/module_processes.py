"""Worker processes started as ``python -m MODULE``: fresh interpreters that import this rewardlab.

A fresh interpreter forks none of the caller's threads and imports nothing
of its ``__main__`` (a user's script needs no ``if __name__ == "__main__"``
guard), and it finds the same rewardlab as the caller wherever that is
imported from.  Used by the kanachan reader's file workers and by the
processes that write a dataset's parts.

Examples
--------
>>> import tempfile
>>> with tempfile.TemporaryFile() as log:
...     p = start_module("rewardlab.core.module_processes", [], stderr=log)
...     print(how_it_stopped(p, log))
 with exit status 0
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

__all__ = ["start_module", "how_it_stopped"]

#: Where this rewardlab is imported from (the folder holding the package).
ROOT = str(Path(__file__).resolve().parents[2])


def start_module(module: str, args: list[str], *, stderr) -> subprocess.Popen:
    """Start ``python -m module args...`` with pipes on its standard input and output, its standard error into
    ``stderr`` (a file opened for binary writing)."""
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(filter(None, [ROOT, os.environ.get("PYTHONPATH")]))}
    return subprocess.Popen([sys.executable, "-m", module, *args], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                            stderr=stderr, env=env)


def how_it_stopped(process: subprocess.Popen, log) -> str:
    """`` with exit status N: LAST LINES OF ITS LOG`` for a process that stopped answering (its status waited for
    up to 5 s; ``log``, its standard error, read back from the start)."""
    try:
        code = process.wait(timeout=5)
    except subprocess.TimeoutExpired:
        code = None
    log.seek(0)
    tail = log.read()[-2000:].decode("utf-8", "replace").strip()
    return (f" with exit status {code}" if code is not None else "") + (f": {tail}" if tail else "")
