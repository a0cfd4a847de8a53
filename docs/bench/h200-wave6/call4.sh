#!/usr/bin/env bash
# Device call 4 (H200): why moving the released DiT to the host and back left the holes reserved (call 3's test).
set -uo pipefail
python3 -m pip install -q --no-index --no-deps --no-compile --target /tmp/site .whl/*.whl 2>/dev/null || exit 1
export PYTHONPATH=/tmp/site:$PWD PYTHONUNBUFFERED=1
unset PYTORCH_CUDA_ALLOC_CONF PYTORCH_ALLOC_CONF
echo "== default allocator"; timeout 60 python3 docs/bench/h200-wave6/release_probe.py 2>&1 | tee $OUT/release-default.log
echo "== expandable"; PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True timeout 60 python3 docs/bench/h200-wave6/release_probe.py 2>&1 | tee $OUT/release-expandable.log
