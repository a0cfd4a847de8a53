#!/usr/bin/env bash
# Device call 3 (H200), wave 11: wave 10's kernel profile of v3 short sentences again on this tree (PDL off, as
# wave 10's table), to count what the fused DiT step runs. Log in profile-v3-pdl0.log.
set -uo pipefail
python3 -m pip install -q --no-index --no-deps --no-compile --target /tmp/site .whl/*.whl 2>/dev/null || exit 1
export PYTHONPATH=/tmp/site:$PWD PYTHONUNBUFFERED=1 HF_HUB_OFFLINE=1 TRITON_CACHE_DIR=/tmp/tc TORCHINDUCTOR_CACHE_DIR=/tmp/ti
unset PYTORCH_CUDA_ALLOC_CONF PYTORCH_ALLOC_CONF
nvidia-smi --query-gpu=name,driver_version --format=csv > $OUT/machine.txt
COSYDESK_PDL=0 timeout 200 python3 docs/bench/h200-wave10/kernel_profile.py --version v3 > $OUT/profile-v3-pdl0.log 2>&1
echo "profile rc=$?"; head -40 $OUT/profile-v3-pdl0.log | cut -c1-260; grep -iE "error|Traceback" $OUT/profile-v3-pdl0.log | head -5 | cut -c1-300
