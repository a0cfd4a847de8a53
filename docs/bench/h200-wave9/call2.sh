#!/usr/bin/env bash
# Device call 2 (H200): the green-context probe's partition only while the first chunk runs
# (--modes green-first-chunk) for v2 and v3, short corpus, several partition sizes. All in runs.tgz.
set -uo pipefail
python3 -m pip install -q --no-index --no-deps --no-compile --target /tmp/site .whl/*.whl 2>/dev/null || exit 1
export PYTHONPATH=/tmp/site:$PWD PYTHONUNBUFFERED=1 HF_HUB_OFFLINE=1
export TRITON_CACHE_DIR=/tmp/tc TORCHINDUCTOR_CACHE_DIR=/tmp/ti
unset PYTORCH_CUDA_ALLOC_CONF PYTORCH_ALLOC_CONF
R=$OUT/r; mkdir -p $R
pack() { (cd $R && tar czf $OUT/runs.tgz .); }
nvidia-smi --query-gpu=name,driver_version --format=csv > $R/machine.txt
for v in v2 v3; do
  timeout $([ $v = v2 ] && echo 260 || echo 260) python3 docs/bench/h200-wave9/green_probe.py --version $v --sentences 40 \
    --sms $([ $v = v2 ] && echo 32,48,66,88,110 || echo 48,66,88,110) --modes green-first-chunk > $R/green-chunk-$v.log 2>&1
  echo "green-first-chunk $v rc=$?"; grep '"run"' $R/green-chunk-$v.log | cut -c1-260; grep -iE "error|Traceback" $R/green-chunk-$v.log | head -5 | cut -c1-300
  pack
done
