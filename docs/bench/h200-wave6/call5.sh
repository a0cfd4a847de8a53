#!/usr/bin/env bash
# Device call 5 (H200): v3 long again at the final tree (call 3 ran with the host round trip of the DiT weights,
# since removed), with its eager-fp32 fidelity pass. (v3 short at an equivalent tree is call 2's run.)
set -uo pipefail
python3 -m pip install -q --no-index --no-deps --no-compile --target /tmp/site .whl/*.whl 2>/dev/null || exit 1
export PYTHONPATH=/tmp/site:$PWD PYTHONUNBUFFERED=1 HF_HUB_OFFLINE=1 COSYDESK_COMMIT=${COSYDESK_COMMIT:-head}
unset PYTORCH_CUDA_ALLOC_CONF PYTORCH_ALLOC_CONF
mkdir -p $OUT/bench
timeout ${T:-120} python3 -m cosydesk bench --out $OUT/bench --name h200-v3-long --backends cudagraph,eager-fp32 --random v3 --corpus long --warmup 2 --fidelity 2 --eager-limit 1 --limit 30 > $OUT/h200-v3-long.log 2>&1; echo "rc=$?"
grep -E "first audio p50" $OUT/h200-v3-long.log | cut -c1-200; rm -f $OUT/bench/*.png $OUT/bench/*.partial.json
