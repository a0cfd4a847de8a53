#!/usr/bin/env bash
# Device call 3 (H200), wave 13. The bench's eager-fp32 reference without TF32 (bench.backend_run.float32_reference):
# v3 and v2 on this tree, then v3 with the DiT's residual stream in float32 (dit-fp32-residual.patch, `patch -p1`).
set -uo pipefail
python3 -m pip install -q --no-index --no-deps --no-compile --target /tmp/site .whl/*.whl 2>/dev/null || exit 1
export PYTHONUNBUFFERED=1 HF_HUB_OFFLINE=1 TRITON_CACHE_DIR=/tmp/tc TORCHINDUCTOR_CACHE_DIR=/tmp/ti
unset PYTORCH_CUDA_ALLOC_CONF PYTORCH_ALLOC_CONF
HERE=$PWD R=$OUT/r; mkdir -p $R/bench; START=$SECONDS
pack() { (cd $R && tar czf $OUT/runs.tgz .); }
nvidia-smi --query-gpu=name,driver_version --format=csv > $R/machine.txt
rm -rf .ab/res && mkdir -p .ab/res && cp -r cosydesk resources pyproject.toml .ab/res/ \
  && (cd .ab/res && patch -p1 < ../../docs/bench/h200-wave13/dit-fp32-residual.patch) || { echo "patch failed"; exit 1; }
grep -c "residual stream h stays float32" .ab/res/cosydesk/runtime/backends/cudagraph/dit_prepared.py
b() { name=$1 tree=$2; shift 2; (cd $tree && PYTHONPATH=/tmp/site:$tree COSYDESK_COMMIT=$name timeout ${T:-110} python3 -m cosydesk bench --out $R/bench --name $name --backends cudagraph,eager-fp32 "$@" > $R/$name.log 2>&1); echo "$name rc=$? at $((SECONDS-START)) s"; python3 -c "
import json; c=json.load(open('$R/bench/$name.json'))['backends']['cudagraph']; s=c['stages']; print('nvml', round(c['peak_nvml_gb'],3), 'drift', round(c['vram_drift_pct'],3), 'fid', c['fidelity'], 'rtf', round(c['rtf'],4), 'first', round(c['first_audio_ms']['p50'],2), round(c['first_audio_ms']['p99'],2), 'mean', round(c['total_ms']['mean'],2), 'flow1', round(s['flow_first_chunk_ms'],2), 'flowcall', round(s['flow_ms_per_call'],2), 'tail', round(s['after_last_token_ms'],2), 'load', round(c['load_and_warmup_s'],1))"; grep -iE "warning|error" $R/$name.log | head -3 | cut -c1-300; pack; }
A="--warmup 3 --fidelity 3 --eager-limit 2 --limit 60"
b v3-ref32 $HERE --random v3 $A
b v2-ref32 $HERE --random v2 $A
b v3-res32-ref32 $HERE/.ab/res --random v3 $A
pack; exit 0
pack
