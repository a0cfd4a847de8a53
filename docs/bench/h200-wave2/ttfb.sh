#!/usr/bin/env bash
# Device call (H200): the local server's time to first byte (pcm over loopback) against the engine's own first
# audio, tiny v2 model, cudagraph backend (the HTTP layer's overhead; the model's size does not enter it).
set -uo pipefail
python3 -m pip install -q --no-index --no-deps --no-compile --target /tmp/site .whl/*.whl || exit 1
export PYTHONPATH=/tmp/site:$PWD PYTHONUNBUFFERED=1 HF_HUB_OFFLINE=1
python3 -m cosydesk.synthetic.tiny_model /tmp/tiny-v2 --version v2 >/dev/null || exit 1
timeout 240 python3 -m cosydesk.serve.ttfb --model /tmp/tiny-v2 --device cuda --backend cudagraph --requests 40 \
  2>&1 | tee $OUT/ttfb.log | tail -14
