#!/usr/bin/env bash
# Issue 15's GPU checks, as one prepared run on a lent device machine (the `run` tool, carry [".whl"]):
#   here first: scripts/device_wheels
#   run: bash benchmarks/device_check.sh        (about 7 minutes on an H200, run with timeout_s 540; output under $OUT)
# 1. the kernel tests on the GPU (compiled kernels, not the interpreter), 2. benchmarks/kernel_bench.py,
# whose report is benchmarks/results/kernels.md once copied back. Its end-to-end part ran out of time on the
# second run of 2026-12-04 (limits cut to fit the device time left): these limits are for a whole lease.
set -uo pipefail
export PYTHONUNBUFFERED=1 PYTHONDONTWRITEBYTECODE=1
OUT=${OUT:-/tmp/device-out}
mkdir -p "$OUT"
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl || exit 1
export PYTHONPATH=/tmp/site:$PWD:$PWD/tests:$PWD/benchmarks
nvidia-smi --query-gpu=name,memory.total,clocks.max.sm,driver_version --format=csv | tee "$OUT/gpu.txt"
python3 -c "import sys, torch, triton, transformers; print(sys.version.split()[0], torch.__version__, triton.__version__, transformers.__version__)" | tee -a "$OUT/gpu.txt"
timeout 90 python3 -m pytest tests/test_kernels.py -q -p no:cacheprovider 2>&1 | tee "$OUT/tests.log"
timeout 360 python3 benchmarks/kernel_bench.py --out "$OUT/kernels.md" --profile-dir "$OUT" 2>&1 | tee "$OUT/bench.log"
