#!/usr/bin/env bash
# Device call 2 (H200): memory accounting and the kernels of a first-chunk flow call (v3, v2), then what the LLM
# running beside the first chunk costs: v3 with the LLM held for the whole first chunk (shared steps 0), v3 without
# programmatic dependent launch (its waiting programs sit on SMs), v2 with shared steps 0.
set -uo pipefail
python3 -m pip install -q --no-index --no-deps --no-compile --target /tmp/site .whl/*.whl 2>/dev/null || exit 1
export PYTHONPATH=/tmp/site:$PWD PYTHONUNBUFFERED=1 HF_HUB_OFFLINE=1 COSYDESK_COMMIT=${COSYDESK_COMMIT:-head}
mkdir -p $OUT/bench
pack() { (cd $OUT && tar czf runs.tgz *.log *.json bench/*.json 2>/dev/null); }
b() { name=$1; backends=$2; shift 2; timeout ${T:-100} python3 -m cosydesk bench --out $OUT/bench --name $name --backends $backends "$@" > $OUT/$name.log 2>&1; echo "$name rc=$?"; grep "first audio p50" $OUT/$name.log | cut -c1-200; pack; }
for v in v3 v2; do
  PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True timeout 110 python3 docs/bench/h200-wave5/flow_profile.py --version $v --frames 106 --out $OUT/profile-$v.json > $OUT/profile-$v.log 2>&1; echo "profile $v rc=$?"; grep -v "^ *\[" $OUT/profile-$v.log | tail -40 | cut -c1-160; pack
done
COSYDESK_FIRST_CHUNK_SHARED_STEPS=0 T=70 b v3-shared0 cudagraph --random v3 --warmup 3 --fidelity 1 --limit 80
COSYDESK_PDL=0 T=70 b v3-nopdl cudagraph --random v3 --warmup 3 --fidelity 1 --limit 80
COSYDESK_FIRST_CHUNK_SHARED_STEPS=0 T=70 b v2-shared0 cudagraph --random v2 --warmup 3 --fidelity 1 --limit 80
pack; ls $OUT
