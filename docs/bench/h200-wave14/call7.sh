#!/usr/bin/env bash
# Device call 7 (H200), wave 14: attention spread over every block (ATTN_SPLIT: 9 blocks a head, each a range of
# keys with its first key row loaded before barrier 1's wait; the last block of a head merges), then the stamps.
set -uo pipefail
export PYTHONUNBUFFERED=1 TRITON_CACHE_DIR=/tmp/tc PYTHONPATH=$PWD
timeout 300 python3 docs/bench/h200-wave14/megakernel_variants2.py $OUT/variants2.json call7 2>&1 | tee $OUT/variants2.log | tail -12
sed -i 's/"-DPREFETCH_NORMS", "-DPROBE_TIMES=1"/"-DPREFETCH_NORMS", "-DATTN_SPLIT", "-DPROBE_TIMES=1"/' docs/bench/h200-wave14/megakernel_stamps.py
timeout 200 python3 docs/bench/h200-wave14/megakernel_stamps.py $OUT/stamps.json 2>&1 | tee $OUT/stamps.log | grep -A22 "position 70"
