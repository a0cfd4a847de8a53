#!/usr/bin/env bash
# Device call 3 (H200), wave 12: two switches of the working tree, A/B in this one call (experiment hooks, env
# only): COSYDESK_EXP_F0_F32=1 runs v3's vocoder f0 predictor in float32 (no TF32) inside its graphs instead of
# float64; COSYDESK_EXP_LLM_PRIORITY=-1 gives the LLM's CUDA stream the high priority.
set -uo pipefail
python3 -m pip install -q --no-index --no-deps --no-compile --target /tmp/site .whl/*.whl 2>/dev/null || exit 1
export PYTHONUNBUFFERED=1 HF_HUB_OFFLINE=1 TRITON_CACHE_DIR=/tmp/tc TORCHINDUCTOR_CACHE_DIR=/tmp/ti
unset PYTORCH_CUDA_ALLOC_CONF PYTORCH_ALLOC_CONF
HERE=$PWD R=$OUT/r; mkdir -p $R/bench
pack() { (cd $R && tar czf $OUT/runs.tgz .); }
nvidia-smi --query-gpu=name,driver_version --format=csv > $R/machine.txt
# b NAME F0F32 PRIORITY ARGS...
b() { name=$1 f0=$2 prio=$3; shift 3; (COSYDESK_EXP_F0_F32=$f0 COSYDESK_EXP_LLM_PRIORITY=$prio PYTHONPATH=/tmp/site:$HERE COSYDESK_COMMIT=$name timeout ${T:-110} python3 -m cosydesk bench --out $R/bench --name $name --backends cudagraph,eager-fp32 "$@" > $R/$name.log 2>&1); echo "$name rc=$?"; python3 -c "
import json; c=json.load(open('$R/bench/$name.json'))['backends']['cudagraph']; s=c['stages']; print('nvml', round(c['peak_nvml_gb'],3), 'drift', round(c['vram_drift_pct'],3), 'fid', c['fidelity'], 'rtf', round(c['rtf'],4), 'first', round(c['first_audio_ms']['p50'],2), round(c['first_audio_ms']['p99'],2), 'mean', round(c['total_ms']['mean'],2), 'prefill', round(s['llm_prefill_ms'],2), 'tok', round(s['llm_ms_per_token'],4), 'flow1', round(s['flow_first_chunk_ms'],2), 'flow', round(s['flow_ms_per_call'],2), 'wait', round(s['final_call_wait_ms'],2), 'tail', round(s['after_last_token_ms'],2), 'load', round(c['load_and_warmup_s'],1))"; grep -iE "warning|error" $R/$name.log | head -3 | cut -c1-300; pack; }
A="--warmup 3 --fidelity 3 --eager-limit 2 --limit 100"
b v3-base 0 0 --random v3 $A
b v3-f0f32 1 0 --random v3 $A
b v3-prio 0 -1 --random v3 $A
b v3-f0f32-prio 1 -1 --random v3 $A
b v2-prio 0 -1 --random v2 $A
b v2-base 0 0 --random v2 $A
pack
