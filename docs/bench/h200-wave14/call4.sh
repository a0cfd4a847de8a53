#!/usr/bin/env bash
# Device call 4 (H200), wave 14: megakernel_variants2.py again, on the source after call 3's reading: the norm weight,
# bias and residual rows loaded with each phase's input (one L2 round trip a phase), the rows of a warp reduced
# together, the rotary row loaded once a step, the head's cache rows prefetched into L2 before barrier 1's wait.
set -uo pipefail
export PYTHONUNBUFFERED=1 TRITON_CACHE_DIR=/tmp/tc PYTHONPATH=$PWD
timeout 400 python3 docs/bench/h200-wave14/megakernel_variants2.py $OUT/variants2.json 2>&1 | tee $OUT/variants2.log | tail -30
