#!/usr/bin/env bash
# Device call (H200), run from /work/main's copy: `cd .dev-backends && bash docs/bench/h200-arch/call.sh`
# (sync.sh made .dev-backends = this branch, .ab-base-27 = main at 34e1cff).
# Issue 27 item 3 A/B: the same bench call on main at 34e1cff and on this branch (random full-size v2 weights,
# short corpus, cudagraph + the eager-fp32 reference), then the GPU tests of the tests/runtime files whose code
# this branch changed (graphed parts, static LMs, kernels' capability checks).
set -uo pipefail
python3 -m pip install -q --no-index --no-deps --no-compile --target /tmp/site ../.whl/*.whl 2>/dev/null || exit 1
export PYTHONUNBUFFERED=1 HF_HUB_OFFLINE=1 QT_QPA_PLATFORM=offscreen
[ -e tests/fixtures ] || ln -s ../../tests/fixtures tests/fixtures  # the fixtures as main carries them (unchanged)
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader | tee $OUT/machine.txt
args="--random v2 --backends cudagraph,eager-fp32 --warmup 3 --fidelity 2 --eager-limit 2 --limit 100 --out $OUT"
b() { name=$1; path=$2; commit=$3
  (cd $path && PYTHONPATH=/tmp/site:$PWD COSYDESK_COMMIT=$commit timeout 125 python3 -m cosydesk bench $args --name $name \
     > $OUT/$name.log 2>&1; echo "$name rc=$?"); grep "first audio p50" $OUT/$name.log | tail -2; }
b ab-branch . backends
b ab-base ../.ab-base-27 34e1cff
PYTHONPATH=/tmp/site:$PWD timeout 130 python3 -m pytest -q -m gpu -p no:cacheprovider tests/runtime/test_host_copy.py \
  tests/runtime/test_cudagraph.py tests/runtime/test_static_transformer_lm.py tests/runtime/test_hift_padded.py \
  tests/runtime/test_conv_kernels.py tests/runtime/test_flow_kernels.py tests/runtime/test_decode_kernels.py \
  > $OUT/gpu-tests.log 2>&1; echo "gpu tests rc=$?"; tail -3 $OUT/gpu-tests.log
