#!/usr/bin/env bash
# Device call A (H200): the GPU tests of every file that has them (after the EngineOptions refactor, which
# moved every cudagraph switch from the environment to EngineOptions), then the local server's time to first
# byte (pcm over loopback) against the engine's own first audio, on the tiny v2 model with the cudagraph backend.
set -uo pipefail
python3 -m pip install -q --no-index --no-deps --no-compile --target /tmp/site .whl/*.whl || exit 1
export PYTHONPATH=/tmp/site:$PWD PYTHONUNBUFFERED=1 QT_QPA_PLATFORM=offscreen HF_HUB_OFFLINE=1
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader | tee $OUT/machine.txt
timeout 330 python3 -m pytest -q -m gpu -p no:cacheprovider tests/runtime/test_host_copy.py tests/runtime/test_cudagraph.py \
  tests/runtime/test_select_kernel.py tests/runtime/test_static_transformer_lm.py tests/runtime/test_conv_kernels.py \
  tests/runtime/test_hift_padded.py tests/runtime/test_tensorrt_backend.py tests/runtime/test_decode_kernels.py \
  tests/runtime/test_tensorrt_runner.py tests/runtime/test_flow_kernels.py tests/telemetry/test_sampler_gpu.py \
  2>&1 | tee $OUT/gpu-tests.log | tail -15
python3 -m cosydesk.synthetic.tiny_model /tmp/tiny-v2 --version v2 >/dev/null
timeout 200 python3 -m cosydesk.serve.ttfb --model /tmp/tiny-v2 --device cuda --backend cudagraph --requests 40 \
  2>&1 | tee $OUT/ttfb.log | tail -12
