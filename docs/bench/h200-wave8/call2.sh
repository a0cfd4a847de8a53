#!/usr/bin/env bash
# Device call 2 (H200): the committed v3 long, v2 short, v2 long and v1 runs at this wave's tree, each with its
# eager-fp32 fidelity pass. All in runs.tgz.
set -uo pipefail
python3 -m pip install -q --no-index --no-deps --no-compile --target /tmp/site .whl/*.whl 2>/dev/null || exit 1
export PYTHONPATH=/tmp/site:$PWD PYTHONUNBUFFERED=1 HF_HUB_OFFLINE=1 COSYDESK_COMMIT=${COSYDESK_COMMIT:-head}
unset PYTORCH_CUDA_ALLOC_CONF PYTORCH_ALLOC_CONF
R=$OUT/r; mkdir -p $R/bench
pack() { (cd $R && tar czf $OUT/runs.tgz .); }
b() { name=$1; shift; timeout ${T:-100} python3 -m cosydesk bench --out $R/bench --name $name --backends cudagraph,eager-fp32 "$@" > $R/$name.log 2>&1; echo "$name rc=$?"; grep -E "cudagraph: first audio p50" $R/$name.log | cut -c1-120; python3 -c "
import json,sys; c=json.load(open('$R/bench/$name.json'))['backends']['cudagraph']; print('nvml', round(c['peak_nvml_gb'],3), 'reserved', round(c['peak_reserved_gb'],3), 'drift', round(c['vram_drift_pct'],3), 'fid', c['fidelity'], 'rtf', round(c['rtf'],4))"; pack; }
nvidia-smi --query-gpu=name,driver_version --format=csv > $R/machine.txt
T=130 b h200-v3-long --random v3 --corpus long --warmup 2 --fidelity 2 --eager-limit 1 --limit 30
T=160 b h200-v2 --random v2 --warmup 3 --fidelity 3 --eager-limit 2 --limit 120
T=120 b h200-v2-long --random v2 --corpus long --warmup 2 --fidelity 2 --eager-limit 1 --limit 30
T=150 b h200-v1 --random v1 --warmup 3 --fidelity 3 --eager-limit 2 --limit 120
pack
