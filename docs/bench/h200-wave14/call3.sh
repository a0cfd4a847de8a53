#!/usr/bin/env bash
# Device call 3 (H200), wave 14: the megakernel with the split barrier, the down loads together, cp.async or TMA.
set -uo pipefail
export PYTHONUNBUFFERED=1 TRITON_CACHE_DIR=/tmp/tc PYTHONPATH=$PWD
nvidia-smi -q -d CLOCK | grep -A4 -E "^    Clocks$|Max Clocks" > $OUT/clocks.txt
timeout 400 python3 docs/bench/h200-wave14/megakernel_variants2.py $OUT/variants2.json 2>&1 | tee $OUT/variants2.log | tail -30
