#!/bin/bash
# On a lent many-core machine: `python -m benchmarks cores` (issue 21's 16-core figures) with the packages
# scripts/device_kit.sh put in .whl/ (carried), its log in $OUT/cores.log.
#
#     run(command="bash benchmarks/device_cores.sh 480", carry=[".whl"], timeout_s=560)
#
# Argument: the seconds the benchmark may run (default 480; the call's own limit is 600, and installing and
# compiling take about a minute).  Environment, passed on to the benchmark (see benchmarks/bench_cores.py):
# N (default 4e7 here: many parts per worker, the steady state a corpus runs at), PARTS (default pipeline),
# PIPELINE_WORKERS (default 16: 8 was measured before, 0.88M/s convert, 0.66M/s apply), APPLY_ENGINE,
# STATS_ENGINE, APPLY_MODE (default episodes,dataloader here: apply's default mode and the one kanachan's
# offline trainer calls plug-ins in, each with its own 10^9 projection), LINES_PER_FILE.  PYTHON: the
# interpreter (default python3, the machine's own).
set -uo pipefail
limit=${1:-480}
python=${PYTHON:-python3}
out=${OUT:-/tmp/device-out}
site=/tmp/rewardlab-site
mkdir -p "$out" "$site"
start=$(date +%s)

$python -m pip install --quiet --no-index --no-deps --no-compile --no-cache-dir --upgrade --target "$site" \
    .whl/*.whl || { echo "device_cores: installing the carried wheels failed"; exit 2; }
tar -xJf .whl/prt.tar.xz -C "$site" || { echo "device_cores: unpacking the Polars runtime failed"; exit 2; }
export PYTHONPATH="$site:$PWD" PYTHONUNBUFFERED=1 REWARDLAB_PROGRESS=0
$python - <<'EOF' 2>&1 | tee "$out/versions.txt" || exit 2
import os, sys
import numba, numpy, polars, pyarrow, tensordict, torch
print(f"python {sys.version.split()[0]}; cores {len(os.sched_getaffinity(0))}; polars {polars.__version__}, "
      f"tensordict {tensordict.__version__}, torch {torch.__version__}, numpy {numpy.__version__}, "
      f"numba {numba.__version__}, pyarrow {pyarrow.__version__}")
EOF
# the compile steps the pipeline uses (numba, cached next to the modules), once, before the workers start
$python -m rewardlab.sources.kanachan.tokenizer && $python -m rewardlab.analysis.sums \
    || { echo "device_cores: compiling the kernels failed"; exit 2; }
echo "device_cores: ready after $(( $(date +%s) - start )) s; the benchmark may run ${limit} s"

N=${N:-4e7} PARTS=${PARTS:-pipeline} PIPELINE_WORKERS=${PIPELINE_WORKERS:-16} \
    APPLY_MODE=${APPLY_MODE:-episodes,dataloader} \
    timeout --signal=INT --kill-after=20 "$limit" $python -m benchmarks cores 2>&1 | tee "$out/cores.log"
status=${PIPESTATUS[0]}
echo "device_cores: benchmark exit status $status after $(( $(date +%s) - start )) s (124: stopped at ${limit} s)"
exit "$status"
