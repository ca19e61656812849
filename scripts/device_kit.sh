#!/bin/bash
# Prepare the packages a lent many-core machine lacks, for benchmarks/device_cores.sh (issue 21's 16-core runs).
#
# The lent machines (see the device tool's README) run their own python3 (3.12) with torch, numpy, numba,
# pyarrow, matplotlib and tqdm, cannot reach a package registry, and take at most 64 MiB of files a call,
# the repository included.  This downloads the rest of rewardlab's dependencies as CPython 3.12 wheels into
# .whl/ (ignored through .git/info/exclude), the Polars runtime repacked as prt.tar.xz (its wheel, 54 MB,
# would not fit beside the repository; xz brings it to about 33 MB).  Run it here once, then:
#
#     run(command="bash benchmarks/device_cores.sh 480", carry=[".whl"], timeout_s=560)
#
# Usage: bash scripts/device_kit.sh            (PYVER=3.11: wheels for this machine's Python, to try the run here)
set -euo pipefail
cd "$(dirname "$0")/.."
PYVER=${PYVER:-3.12}
PIP=${PIP:-.venv/bin/python -m pip}
# the pins of pyproject.toml that the machine's image lacks, and their own needs
PACKAGES="polars==2.1.0 polars-runtime-32==2.1.0 tensordict==0.15.3 pyvers==0.2.2 isal==1.9.1 datasketches==5.2.0"

grep -qxF '/.whl/' .git/info/exclude 2>/dev/null || echo '/.whl/' >> .git/info/exclude
rm -rf .whl && mkdir -p .whl/dl
platforms=""
for n in 17 24 27 28 31 34 35; do platforms="$platforms --platform manylinux_2_${n}_x86_64"; done
for package in $PACKAGES; do
    $PIP download --quiet --disable-pip-version-check --no-deps --only-binary=:all: --python-version "$PYVER" \
        --implementation cp $platforms --platform manylinux2014_x86_64 --platform manylinux1_x86_64 \
        -d .whl/dl "$package"
done
# the runtime as an xz tarball of its installed files; the other wheels as they are
mkdir -p .whl/prt
(cd .whl/prt && python3 -m zipfile -e ../dl/polars_runtime_32-*.whl . && tar -cf - . | xz -T0 -6 > ../prt.tar.xz)
rm -rf .whl/prt .whl/dl/polars_runtime_32-*.whl
mv .whl/dl/*.whl .whl/ && rmdir .whl/dl
du -ch .whl/* | tail -1
echo "ready: run(command=\"bash benchmarks/device_cores.sh 480\", carry=[\".whl\"], timeout_s=560)"
