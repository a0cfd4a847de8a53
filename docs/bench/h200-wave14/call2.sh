#!/usr/bin/env bash
# Device call 2 (H200), wave 14: where the megakernel's step time goes (barrier variants, barriers alone, phases alone, copies alone); run twice: before and after the copies-only mode was added.
set -uo pipefail
export PYTHONUNBUFFERED=1 TRITON_CACHE_DIR=/tmp/tc PYTHONPATH=$PWD
timeout 300 python3 docs/bench/h200-wave14/megakernel_variants.py $OUT/variants.json 2>&1 | tee $OUT/variants.log | tail -20
