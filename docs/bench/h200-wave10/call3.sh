#!/usr/bin/env bash
# Device call 3 (H200): call 2 again after its two failures (the kernels' tanh-GELU constants were Python globals,
# which compiled Triton rejects, so the backend kept the compiled blocks; the probe's rotary table was on the CPU):
# the tile sweep, then the committed v3 short and v3 long runs with the DiT kernels. All in runs.tgz.
set -uo pipefail
python3 -m pip install -q --no-index --no-deps --no-compile --target /tmp/site .whl/*.whl 2>/dev/null || exit 1
export PYTHONPATH=/tmp/site:$PWD PYTHONUNBUFFERED=1 HF_HUB_OFFLINE=1 COSYDESK_COMMIT=${COSYDESK_COMMIT:-head}
export TRITON_CACHE_DIR=/tmp/tc TORCHINDUCTOR_CACHE_DIR=/tmp/ti
unset PYTORCH_CUDA_ALLOC_CONF PYTORCH_ALLOC_CONF
R=$OUT/r; mkdir -p $R/bench
pack() { (cd $R && tar czf $OUT/runs.tgz .); }
nvidia-smi --query-gpu=name,driver_version --format=csv > $R/machine.txt
timeout 90 python3 docs/bench/h200-wave10/dit_probe.py > $R/dit-probe.log 2>&1; echo "dit probe rc=$?"; grep '^{' $R/dit-probe.log | cut -c1-200; grep -iE "error|Traceback" $R/dit-probe.log | head -5 | cut -c1-300; pack
b() { name=$1; shift; timeout ${T:-100} python3 -m cosydesk bench --out $R/bench --name $name --backends cudagraph,eager-fp32 "$@" > $R/$name.log 2>&1; echo "$name rc=$?"; grep -E "cudagraph: first audio p50" $R/$name.log | cut -c1-400; python3 -c "
import json,sys; c=json.load(open('$R/bench/$name.json'))['backends']['cudagraph']; print('nvml', round(c['peak_nvml_gb'],3), 'drift', round(c['vram_drift_pct'],3), 'fid', c['fidelity'], 'rtf', round(c['rtf'],4), 'dit_kernel_blocks', c['kernels'].get('dit_kernel_blocks'), 'compiled', c['kernels'].get('dit_compiled_blocks'))"; grep -iE "warning|error" $R/$name.log | head -5 | cut -c1-600; pack; }
T=170 b h200-v3 --random v3 --warmup 3 --fidelity 3 --eager-limit 2 --limit 120
T=130 b h200-v3-long --random v3 --corpus long --warmup 2 --fidelity 2 --eager-limit 1 --limit 30
pack
