#!/usr/bin/env bash
# Device call 1 (H200), development: the GPU tests of the touched parts, then the memory / vocoder probe for v3 and v2.
set -uo pipefail
python3 -m pip install -q --no-index --no-deps --no-compile --target /tmp/site ../.whl/*.whl 2>/dev/null || exit 1
export PYTHONPATH=/tmp/site:$PWD PYTHONUNBUFFERED=1 HF_HUB_OFFLINE=1
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader | tee $OUT/machine.txt
timeout 130 python3 -m pytest -q -p no:cacheprovider -m gpu tests/runtime/test_causal_hift.py tests/runtime/test_hift_padded.py \
  tests/runtime/test_v3_streaming.py tests/runtime/test_cudagraph.py > $OUT/gpu-tests.log 2>&1; echo "tests rc=$?"; tail -15 $OUT/gpu-tests.log
mkdir -p $OUT/bench
for v in v3 v2; do
  timeout 75 python3 docs/bench/h200-wave4/memory_probe.py --version $v --out $OUT/bench/memory-$v.json > $OUT/memory-$v.log 2>&1; echo "probe $v rc=$?"; tail -12 $OUT/memory-$v.log
done
