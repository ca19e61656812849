"""Run test code in a child process whose address space is capped just above what a warmed-up load uses.

The hostile-input suites (RLlib packed columns, Minari datasets) load files that claim huge sizes: a load
that allocated what a file claims fails there with a MemoryError instead of exhausting the machine.  The
child first runs ``warm`` (a real load: thread pools, caches), then caps ``RLIMIT_AS`` at its current size
plus ``headroom`` and checks that the cap bites, then runs ``body``, which prints one JSON object per line.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

_CAP = """
import json, resource
import numpy as np


def _used():
    with open("/proc/self/status") as f:
        return next(int(line.split()[1]) * 1024 for line in f if line.startswith("VmSize:"))


_cap = _used() + {headroom}
resource.setrlimit(resource.RLIMIT_AS, (_cap, _cap))
try:
    np.ones({headroom} * 2, dtype=np.uint8)
    print(json.dumps({{"cap": "does not bite"}}), flush=True)
except MemoryError:
    pass
"""


def run_capped(warm: str, body: str, *, headroom: int, timeout: int, cwd=None) -> list[dict]:
    """Run ``warm``, cap the address space at its size + ``headroom`` bytes, run ``body``; the JSON lines printed.

    Fails the test when the child dies or the cap does not bite.
    """
    prelude = f"import sys\nsys.path.insert(0, {str(Path(__file__).parent)!r})\n"
    code = prelude + textwrap.dedent(warm) + _CAP.format(headroom=int(headroom)) + textwrap.dedent(body)
    env = {**os.environ, "MALLOC_ARENA_MAX": "2", "POLARS_MAX_THREADS": "2"}
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=timeout, env=env,
                          cwd=cwd)
    out = [json.loads(line) for line in done.stdout.splitlines() if line.startswith("{")]
    assert done.returncode == 0, f"the child died ({done.returncode}) after {out[-3:]}\n{done.stderr[-3000:]}"
    assert {"cap": "does not bite"} not in out
    return out
