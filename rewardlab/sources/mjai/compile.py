"""``python -m rewardlab.sources.mjai.compile``: compile the MJAI kernels now (``make`` does, once per install).

numba caches them on disk, so the first load after ``make`` does not compile.
"""

from __future__ import annotations

import time

from rewardlab.sources.mjai import scanner, tracker

if __name__ == "__main__":
    t0 = time.perf_counter()
    scanner.compile_all()
    tracker.compile_all()
    print(f"rewardlab: MJAI scanner and tracker ready ({time.perf_counter() - t0:.1f} s; compiled once, then "
          "cached by numba)")
