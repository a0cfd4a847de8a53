#!/usr/bin/env bash
# Device call 2 (H200): what the built v3 / v2 backends allocate while they synthesise (run_memory_probe.py).
set -uo pipefail
python3 -m pip install -q --no-index --no-deps --no-compile --target /tmp/site .whl/*.whl 2>/dev/null || exit 1
export PYTHONPATH=/tmp/site:$PWD PYTHONUNBUFFERED=1 HF_HUB_OFFLINE=1
unset PYTORCH_CUDA_ALLOC_CONF PYTORCH_ALLOC_CONF
for v in v3 v2; do
  timeout 200 python3 docs/bench/h200-wave7/run_memory_probe.py --version $v --out $OUT/run-mem-$v.json > $OUT/run-mem-$v.log 2>&1; echo "$v rc=$?"
  grep -v Warning $OUT/run-mem-$v.log | head -80 | cut -c1-330
done
