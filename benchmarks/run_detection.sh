#!/usr/bin/env bash
# Detection results in benchmarks/results/: the three dataset specs, every detector, one model
# trained per split (on that split's normal training lines only). Several CPU-hours on 2 cores.
# Models are cached under $LOGSTREAM_EVAL_CACHE (default ~/.cache/logstream/eval-models).
set -euo pipefail
cd "$(dirname "$0")/.."
STEPS=${LM_STEPS:-200}
for spec in hdfs_blocks bgl_chrono bgl_random; do
    logstream eval "benchmarks/specs/$spec.yaml" --out benchmarks/results --lm-steps "$STEPS" --no-progress
done
python benchmarks/detection_summary.py --steps "$STEPS"
