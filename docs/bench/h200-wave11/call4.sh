#!/usr/bin/env bash
# Device call 4 (H200), wave 11: v3 with its DiT rotation + attention as one Triton kernel (this tree) against the
# tree before it (05ead09, carried as .ab/base): v3 short, both trees in this one call, then v3 long on this tree.
set -uo pipefail
python3 -m pip install -q --no-index --no-deps --no-compile --target /tmp/site .whl/*.whl 2>/dev/null || exit 1
export PYTHONUNBUFFERED=1 HF_HUB_OFFLINE=1 TRITON_CACHE_DIR=/tmp/tc TORCHINDUCTOR_CACHE_DIR=/tmp/ti
unset PYTORCH_CUDA_ALLOC_CONF PYTORCH_ALLOC_CONF
HERE=$PWD R=$OUT/r; mkdir -p $R/bench
pack() { (cd $R && tar czf $OUT/runs.tgz .); }
nvidia-smi --query-gpu=name,driver_version --format=csv > $R/machine.txt
# b DIR NAME ARGS...: one bench run from the tree in DIR (python -m puts the working directory first on the path)
b() { dir=$1 name=$2; shift 2; (cd $dir && PYTHONPATH=/tmp/site:$dir COSYDESK_COMMIT=${C:-$name} timeout ${T:-100} python3 -m cosydesk bench --out $R/bench --name $name --backends cudagraph,eager-fp32 "$@" > $R/$name.log 2>&1); echo "$name rc=$?"; grep -E "cudagraph: first audio p50" $R/$name.log | cut -c1-400; python3 -c "
import json; c=json.load(open('$R/bench/$name.json'))['backends']['cudagraph']; s=c['stages']; print('nvml', round(c['peak_nvml_gb'],3), 'drift', round(c['vram_drift_pct'],3), 'fid', c['fidelity'], 'rtf', round(c['rtf'],4), 'first', round(c['first_audio_ms']['p50'],2), round(c['first_audio_ms']['p99'],2), 'flow1', round(s['flow_first_chunk_ms'],2), 'flow', round(s['flow_ms_per_call'],2), 'tail', round(s['after_last_token_ms'],2), 'attn_kernels', c['kernels'].get('dit_attention_kernels'), 'compiled', c['kernels'].get('dit_compiled_blocks'), 'load', round(c['load_and_warmup_s'],1))"; grep -iE "warning|error" $R/$name.log | head -5 | cut -c1-600; pack; }
T=170 b $HERE h200-v3 --random v3 --warmup 3 --fidelity 3 --eager-limit 2 --limit 120
C=05ead09 T=160 b $HERE/.ab/base h200-v3-base --random v3 --warmup 3 --fidelity 3 --eager-limit 2 --limit 120
T=130 b $HERE h200-v3-long --random v3 --corpus long --warmup 2 --fidelity 2 --eager-limit 1 --limit 30
pack
