#!/usr/bin/env bash
# Device call 6 (H200), wave 14: every block's time per segment of a layer (megakernel_stamps.py).
set -uo pipefail
export PYTHONUNBUFFERED=1 TRITON_CACHE_DIR=/tmp/tc PYTHONPATH=$PWD
timeout 300 python3 docs/bench/h200-wave14/megakernel_stamps.py $OUT/stamps.json 2>&1 | tee $OUT/stamps.log | tail -60
