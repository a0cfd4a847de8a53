#!/usr/bin/env bash
# Device call (H200): per-kernel device time of short sentences, v2 and v3, PDL on and off. All in runs.tgz.
set -uo pipefail
python3 -m pip install -q --no-index --no-deps --no-compile --target /tmp/site .whl/*.whl 2>/dev/null || exit 1
export PYTHONPATH=/tmp/site:$PWD PYTHONUNBUFFERED=1 HF_HUB_OFFLINE=1
export TRITON_CACHE_DIR=/tmp/tc TORCHINDUCTOR_CACHE_DIR=/tmp/ti
unset PYTORCH_CUDA_ALLOC_CONF PYTORCH_ALLOC_CONF
R=$OUT/r; mkdir -p $R
pack() { (cd $R && tar czf $OUT/runs.tgz .); }
nvidia-smi --query-gpu=name,driver_version --format=csv > $R/machine.txt
for v in v2 v3; do
  for pdl in 1 0; do
    COSYDESK_PDL=$pdl timeout 170 python3 docs/bench/h200-wave10/kernel_profile.py --version $v > $R/profile-$v-pdl$pdl.log 2>&1
    echo "profile $v pdl=$pdl rc=$?"; head -25 $R/profile-$v-pdl$pdl.log | cut -c1-230; grep -iE "error|Traceback" $R/profile-$v-pdl$pdl.log | head -5 | cut -c1-300
    pack
  done
done
