#!/usr/bin/env bash
# Device call 1 (H200), wave 12: Inductor's programmatic dependent launch (TORCHINDUCTOR_ENABLE_PDL=1) for the
# torch.compile'd blocks (v3's DiT blocks, the prefill layer, the vocoders' compiled parts), against the same tree
# without it, v3 and v2 short, all in this one call. Each setting compiles into its own Inductor cache.
set -uo pipefail
python3 -m pip install -q --no-index --no-deps --no-compile --target /tmp/site .whl/*.whl 2>/dev/null || exit 1
export PYTHONUNBUFFERED=1 HF_HUB_OFFLINE=1
unset PYTORCH_CUDA_ALLOC_CONF PYTORCH_ALLOC_CONF
HERE=$PWD R=$OUT/r; mkdir -p $R/bench
pack() { (cd $R && tar czf $OUT/runs.tgz .); }
nvidia-smi --query-gpu=name,driver_version --format=csv > $R/machine.txt
# b NAME PDL ARGS...: one bench run of this tree, Inductor PDL on (1) or off (0), its own compile caches
b() { name=$1 pdl=$2; shift 2; (TRITON_CACHE_DIR=/tmp/tc$pdl TORCHINDUCTOR_CACHE_DIR=/tmp/ti$pdl TORCHINDUCTOR_ENABLE_PDL=$pdl PYTHONPATH=/tmp/site:$HERE COSYDESK_COMMIT=${C:-$name} timeout ${T:-140} python3 -m cosydesk bench --out $R/bench --name $name --backends cudagraph,eager-fp32 "$@" > $R/$name.log 2>&1); echo "$name rc=$?"; grep -E "cudagraph: first audio p50" $R/$name.log | cut -c1-400; python3 -c "
import json; c=json.load(open('$R/bench/$name.json'))['backends']['cudagraph']; s=c['stages']; print('nvml', round(c['peak_nvml_gb'],3), 'drift', round(c['vram_drift_pct'],3), 'fid', c['fidelity'], 'rtf', round(c['rtf'],4), 'first', round(c['first_audio_ms']['p50'],2), round(c['first_audio_ms']['p99'],2), 'mean', round(c['total_ms']['mean'],2), 'prefill', round(s['llm_prefill_ms'],2), 'tok', round(s['llm_ms_per_token'],4), 'flow1', round(s['flow_first_chunk_ms'],2), 'flow', round(s['flow_ms_per_call'],2), 'tail', round(s['after_last_token_ms'],2), 'compiled', c['kernels'].get('dit_compiled_blocks'), 'load', round(c['load_and_warmup_s'],1))"; grep -iE "warning|error" $R/$name.log | head -5 | cut -c1-600; pack; }
b v3-base 0 --random v3 --warmup 3 --fidelity 3 --eager-limit 2 --limit 120
b v3-pdl 1 --random v3 --warmup 3 --fidelity 3 --eager-limit 2 --limit 120
b v2-pdl 1 --random v2 --warmup 3 --fidelity 3 --eager-limit 2 --limit 120
b v2-base 0 --random v2 --warmup 3 --fidelity 3 --eager-limit 2 --limit 120
pack
