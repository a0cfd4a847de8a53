#!/usr/bin/env bash
# Device call 1 (H200): the GPU tests of the new code, the v3 flow profile (memory by part, kernels of a first-chunk
# flow call) and an A/B of the token2wav stream priority (v3 short on / off / on with the LLM never held; v2 on).
# Results travel as one archive (the device tool brings back at most 8 files), re-made after every step.
set -uo pipefail
python3 -m pip install -q --no-index --no-deps --no-compile --target /tmp/site .whl/*.whl 2>/dev/null || exit 1
export PYTHONPATH=/tmp/site:$PWD PYTHONUNBUFFERED=1 HF_HUB_OFFLINE=1 COSYDESK_COMMIT=${COSYDESK_COMMIT:-head}
mkdir -p $OUT/bench
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader | tee $OUT/machine.txt
pack() { (cd $OUT && tar czf runs.tgz *.log *.json bench/*.json 2>/dev/null); }
b() { name=$1; backends=$2; shift 2; timeout ${T:-100} python3 -m cosydesk bench --out $OUT/bench --name $name --backends $backends "$@" > $OUT/$name.log 2>&1; echo "$name rc=$?"; grep "first audio p50" $OUT/$name.log | cut -c1-330; pack; }
timeout 100 python3 -m pytest -q -p no:cacheprovider tests/runtime/test_pipeline_streams.py tests/runtime/backends/cudagraph/test_dit_prepared.py tests/runtime/backends/cudagraph/test_cudagraph.py -k "stream or priority or first_chunk or dit" > $OUT/gpu-tests.log 2>&1; echo "gpu tests rc=$?"; tail -3 $OUT/gpu-tests.log; pack
timeout 100 python3 docs/bench/h200-wave5/flow_profile.py --version v3 --frames 106 --out $OUT/profile-v3.json > $OUT/profile-v3.log 2>&1; echo "profile rc=$?"; tail -32 $OUT/profile-v3.log; pack
T=100 b v3-prio cudagraph,eager-fp32 --random v3 --warmup 3 --fidelity 2 --eager-limit 1 --limit 120
COSYDESK_TOKEN2WAV_PRIORITY=0 T=70 b v3-noprio cudagraph --random v3 --warmup 3 --fidelity 2 --limit 120
COSYDESK_FIRST_CHUNK_SHARED_STEPS=10 T=70 b v3-prio-shared10 cudagraph --random v3 --warmup 3 --fidelity 2 --limit 120
T=70 b v2-prio cudagraph --random v2 --warmup 3 --fidelity 2 --limit 120
pack; ls $OUT $OUT/bench
