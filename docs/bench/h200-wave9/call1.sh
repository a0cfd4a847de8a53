#!/usr/bin/env bash
# Device call 1 (H200): the green-context probe (decode step captured in an SM partition, the LLM never held)
# for v2 and v3, short corpus. All in runs.tgz.
set -uo pipefail
python3 -m pip install -q --no-index --no-deps --no-compile --target /tmp/site .whl/*.whl 2>/dev/null || exit 1
export PYTHONPATH=/tmp/site:$PWD PYTHONUNBUFFERED=1 HF_HUB_OFFLINE=1
export TRITON_CACHE_DIR=/tmp/tc TORCHINDUCTOR_CACHE_DIR=/tmp/ti
unset PYTORCH_CUDA_ALLOC_CONF PYTORCH_ALLOC_CONF
R=$OUT/r; mkdir -p $R
pack() { (cd $R && tar czf $OUT/runs.tgz .); }
nvidia-smi --query-gpu=name,driver_version --format=csv > $R/machine.txt
for v in v2 v3; do
  timeout $([ $v = v2 ] && echo 200 || echo 170) python3 docs/bench/h200-wave9/green_probe.py --version $v --sentences 30 --sms $([ $v = v2 ] && echo 16,32,66 || echo 32) > $R/green-$v.log 2>&1
  echo "green $v rc=$?"; grep '"run"' $R/green-$v.log | cut -c1-260; grep -iE "error|Traceback" $R/green-$v.log | head -5 | cut -c1-300
  pack
done
