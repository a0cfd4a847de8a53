#!/usr/bin/env bash
# Device call 11 (H200), wave 14: call 10's four probes once more after the review (one run_step and one stamps
# reader shared through probe_setup.py / MegakernelDecoder.stamps): do they still run and reproduce call 10?
set -uo pipefail
export PYTHONUNBUFFERED=1 TRITON_CACHE_DIR=/tmp/tc PYTHONPATH=$PWD
H=docs/bench/h200-wave14
timeout 150 python3 $H/megakernel_probe.py $OUT/probe.json > $OUT/probe.log 2>&1; echo "probe rc=$?"; tail -7 $OUT/probe.log
timeout 100 python3 $H/megakernel_variants.py $OUT/variants.json > $OUT/variants.log 2>&1; echo "variants rc=$?"; cat $OUT/variants.log
timeout 150 python3 $H/megakernel_variants2.py $OUT/variants2.json call9 > $OUT/variants2.log 2>&1; echo "variants2 rc=$?"; cat $OUT/variants2.log
timeout 100 python3 $H/megakernel_stamps.py $OUT/stamps.json > $OUT/stamps.log 2>&1; echo "stamps rc=$?"; grep -E "position|layer  " $OUT/stamps.log
