#!/usr/bin/env bash
# Device call 4 (H200), wave 12: the benches' random vocoders voiced (synthetic.full_size.voice_random_f0), so
# the fp32 reference and the graphed float16 path are compared with the sine source in the waveform: v3 and v2
# short; then, if time is left, v3 with call 3's float32 f0 predictor (call3-hooks.patch applied to the device's
# copy of the tree only).
set -uo pipefail
python3 -m pip install -q --no-index --no-deps --no-compile --target /tmp/site .whl/*.whl 2>/dev/null || exit 1
export PYTHONUNBUFFERED=1 HF_HUB_OFFLINE=1 TRITON_CACHE_DIR=/tmp/tc TORCHINDUCTOR_CACHE_DIR=/tmp/ti
unset PYTORCH_CUDA_ALLOC_CONF PYTORCH_ALLOC_CONF
HERE=$PWD R=$OUT/r; mkdir -p $R/bench; START=$SECONDS
pack() { (cd $R && tar czf $OUT/runs.tgz .); }
nvidia-smi --query-gpu=name,driver_version --format=csv > $R/machine.txt
b() { name=$1 f0=$2; shift 2; (COSYDESK_EXP_F0_F32=$f0 PYTHONPATH=/tmp/site:$HERE COSYDESK_COMMIT=$name timeout ${T:-100} python3 -m cosydesk bench --out $R/bench --name $name --backends cudagraph,eager-fp32 "$@" > $R/$name.log 2>&1); echo "$name rc=$? at $((SECONDS-START)) s"; python3 -c "
import json; c=json.load(open('$R/bench/$name.json'))['backends']['cudagraph']; s=c['stages']; print('nvml', round(c['peak_nvml_gb'],3), 'drift', round(c['vram_drift_pct'],3), 'fid', c['fidelity'], 'rtf', round(c['rtf'],4), 'first', round(c['first_audio_ms']['p50'],2), round(c['first_audio_ms']['p99'],2), 'mean', round(c['total_ms']['mean'],2), 'flow1', round(s['flow_first_chunk_ms'],2), 'tail', round(s['after_last_token_ms'],2), 'load', round(c['load_and_warmup_s'],1))"; grep -iE "warning|error" $R/$name.log | head -3 | cut -c1-300; pack; }
A="--warmup 3 --fidelity 3 --eager-limit 2 --limit 60"
b v3-voiced 0 --random v3 $A
b v2-voiced 0 --random v2 $A
if [ $((SECONDS-START)) -lt 190 ]; then (git apply docs/bench/h200-wave12/call3-hooks.patch 2>/dev/null || patch -p1 -s < docs/bench/h200-wave12/call3-hooks.patch) && b v3-voiced-f0f32 1 --random v3 $A; fi
pack
