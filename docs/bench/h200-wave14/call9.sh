#!/usr/bin/env bash
# Device call 9 (H200), wave 14: is the weight stream what slows the phases? The split-attention kernel as is,
# with the weights' bulk copies marked L2 evict-first (EVICT_FIRST), and with no stream after layer 0 (every layer
# reuses layer 0's slices, PROBE_MODE=4: wrong results), with and without barriers.
set -uo pipefail
export PYTHONUNBUFFERED=1 TRITON_CACHE_DIR=/tmp/tc PYTHONPATH=$PWD
timeout 300 python3 docs/bench/h200-wave14/megakernel_variants2.py $OUT/variants2.json call9 2>&1 | tee $OUT/variants2.log | tail -12
