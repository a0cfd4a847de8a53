#!/usr/bin/env bash
# Device call 2 (H200), wave 11: the DiT step probe (fused q/k/v as committed, and with the feed-forward's
# GELU in cuBLASLt's epilogue). Log in dit-step-probe.log.
set -uo pipefail
python3 -m pip install -q --no-index --no-deps --no-compile --target /tmp/site .whl/*.whl 2>/dev/null || exit 1
export PYTHONPATH=/tmp/site:$PWD PYTHONUNBUFFERED=1 HF_HUB_OFFLINE=1 TRITON_CACHE_DIR=/tmp/tc TORCHINDUCTOR_CACHE_DIR=/tmp/ti
nvidia-smi --query-gpu=name,driver_version --format=csv > $OUT/machine.txt
timeout 300 python3 docs/bench/h200-wave11/dit_step_probe.py > $OUT/dit-step-probe.log 2>&1; echo "probe rc=$?"
grep '^{' $OUT/dit-step-probe.log | cut -c1-900; grep -iE "error|Traceback" $OUT/dit-step-probe.log | head -5 | cut -c1-300
