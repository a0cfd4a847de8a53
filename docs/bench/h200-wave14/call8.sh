#!/usr/bin/env bash
# Device call 8 (H200), wave 14: call 7's stamps again (its read of the stamps failed: the buffer had grown).
set -uo pipefail
export PYTHONUNBUFFERED=1 TRITON_CACHE_DIR=/tmp/tc PYTHONPATH=$PWD
timeout 200 python3 docs/bench/h200-wave14/megakernel_stamps.py $OUT/stamps.json 2>&1 | tee $OUT/stamps.log | tail -50
