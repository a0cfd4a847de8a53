#!/usr/bin/env bash
# Device call 3 (H200): CUDA tests of this wave's changes; what the built backends allocate while they synthesise
# (after: no cuBLAS product on the request path, v3's noise on the GPU in 5-s steps); then the committed v3 short
# and v2 short runs with their eager-fp32 fidelity pass. Everything comes back in runs.tgz.
set -uo pipefail
python3 -m pip install -q --no-index --no-deps --no-compile --target /tmp/site .whl/*.whl 2>/dev/null || exit 1
export PYTHONPATH=/tmp/site:$PWD PYTHONUNBUFFERED=1 HF_HUB_OFFLINE=1 COSYDESK_COMMIT=${COSYDESK_COMMIT:-head}
unset PYTORCH_CUDA_ALLOC_CONF PYTORCH_ALLOC_CONF
R=$OUT/r; mkdir -p $R/bench
pack() { (cd $R && tar czf $OUT/runs.tgz .); }
b() { name=$1; shift; timeout ${T:-100} python3 -m cosydesk bench --out $R/bench --name $name --backends cudagraph,eager-fp32 "$@" > $R/$name.log 2>&1; echo "$name rc=$?"; grep -E "cudagraph: first audio p50" $R/$name.log | cut -c1-120; python3 -c "
import json,sys; c=json.load(open('$R/bench/$name.json'))['backends']['cudagraph']; print('nvml', round(c['peak_nvml_gb'],3), 'drift', round(c['vram_drift_pct'],3), 'fid', c['fidelity'], 'rtf', round(c['rtf'],4))"; pack; }
nvidia-smi --query-gpu=name,driver_version --format=csv > $R/machine.txt
timeout 200 python3 -m pytest -q -p no:cacheprovider -rs tests/runtime/backends/test_place_model.py tests/model/test_hift.py -k "cuda or place or five_second" > $R/gpu-tests.log 2>&1; echo "gpu tests rc=$?"; tail -2 $R/gpu-tests.log
timeout 200 python3 -m pytest -q -p no:cacheprovider -rs tests/runtime/backends/cudagraph/test_cudagraph.py -k "cublas or reserve_nothing" >> $R/gpu-tests.log 2>&1; echo "gpu tests 2 rc=$?"; tail -2 $R/gpu-tests.log; pack
for v in v3 v2; do
  timeout 150 python3 docs/bench/h200-wave7/run_memory_probe.py --version $v --out $R/run-mem-$v.json > $R/run-mem-$v.log 2>&1; echo "run-mem $v rc=$?"
  grep -E '"after"' $R/run-mem-$v.log | head -3 | cut -c1-200; grep -A4 "== segment_growth" $R/run-mem-$v.log | cut -c1-200; pack
done
T=170 b h200-v3 --random v3 --warmup 3 --fidelity 3 --eager-limit 2 --limit 120
T=160 b h200-v2 --random v2 --warmup 3 --fidelity 3 --eager-limit 2 --limit 120
pack
