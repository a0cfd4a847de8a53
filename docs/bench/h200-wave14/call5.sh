#!/usr/bin/env bash
# Device call 5 (H200), wave 14: megakernel_variants2.py's call-5 set: without the fence before the barrier's
# release atomic (NO_FENCE), with the norm weights and q/k/v bias prefetched into L2 before the barrier ahead of
# their phase (PREFETCH_NORMS), both, and both with clock stamps.
set -uo pipefail
export PYTHONUNBUFFERED=1 TRITON_CACHE_DIR=/tmp/tc PYTHONPATH=$PWD
timeout 400 python3 docs/bench/h200-wave14/megakernel_variants2.py $OUT/variants2.json call5 2>&1 | tee $OUT/variants2.log | tail -30
