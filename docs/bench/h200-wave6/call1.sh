#!/usr/bin/env bash
# Device call 1 (H200), wave 6: the CUDA cases of the DiT tests (never run on a GPU before), where v3's reserved
# memory sits (per graph pool, the largest allocations of the build), then the runs wave 5 left out: v2 long and
# v1 with their eager-fp32 fidelity pass. Results travel as one archive, re-made after every step.
set -uo pipefail
python3 -m pip install -q --no-index --no-deps --no-compile --target /tmp/site .whl/*.whl 2>/dev/null || exit 1
export PYTHONPATH=/tmp/site:$PWD PYTHONUNBUFFERED=1 HF_HUB_OFFLINE=1 COSYDESK_COMMIT=${COSYDESK_COMMIT:-head}
mkdir -p $OUT/bench
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader | tee $OUT/machine.txt
pack() { (cd $OUT && tar czf runs.tgz *.log *.txt *.json bench/*.json 2>/dev/null); }
b() { name=$1; shift; timeout ${T:-100} python3 -m cosydesk bench --out $OUT/bench --name $name --backends cudagraph,eager-fp32 "$@" > $OUT/$name.log 2>&1; echo "$name rc=$?"; grep -E "first audio p50|fidelity|mel" $OUT/$name.log | cut -c1-240; pack; }
timeout 150 python3 -m pytest -q -p no:cacheprovider -rs tests/runtime/backends/cudagraph/test_dit_conv.py tests/runtime/backends/cudagraph/test_dit_prepared.py > $OUT/gpu-tests.log 2>&1; echo "gpu tests rc=$?"; tail -4 $OUT/gpu-tests.log; pack
PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True timeout 120 python3 docs/bench/h200-wave6/memory_probe.py --version v3 --out $OUT/memory-v3.json > $OUT/memory-v3.log 2>&1; echo "memory v3 rc=$?"; tail -45 $OUT/memory-v3.log | cut -c1-300; pack
T=150 b h200-v2-long --random v2 --corpus long --warmup 2 --fidelity 2 --eager-limit 1 --limit 30
T=140 b h200-v1 --random v1 --warmup 3 --fidelity 3 --eager-limit 2 --limit 120
pack; ls $OUT/bench
