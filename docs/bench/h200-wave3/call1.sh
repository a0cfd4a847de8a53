#!/usr/bin/env bash
# Device call 1 (H200), the code at the session's start: the issue-28 run set on the cudagraph backend (v2/v3
# short + long, v1 short), the eager-fp16 incremental streaming flow once (v2 short, fidelity against fp32),
# and the per-stage profile of v3 (and v2 for contrast). Everything lands under $OUT.
set -uo pipefail
python3 -m pip install -q --no-index --no-deps --no-compile --target /tmp/site ../.whl/*.whl 2>/dev/null || exit 1
export PYTHONPATH=/tmp/site:$PWD PYTHONUNBUFFERED=1 HF_HUB_OFFLINE=1 COSYDESK_COMMIT=${COSYDESK_COMMIT:-d1bbd9f}
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem --format=csv,noheader | tee $OUT/machine.txt
b() { name=$1; shift; timeout ${T:-150} python3 -m cosydesk bench --out $OUT/bench --name $name "$@" > $OUT/$name.log 2>&1; echo "$name rc=$?"; tail -2 $OUT/$name.log; }
T=150 b base-v2 --random v2 --backends cudagraph --warmup 3 --fidelity 3 --limit 150
T=120 b base-v2-long --random v2 --backends cudagraph --corpus long --warmup 2 --fidelity 2 --limit 50
T=150 b base-v3 --random v3 --backends cudagraph --warmup 3 --fidelity 3 --limit 150
T=150 b base-v3-long --random v3 --backends cudagraph --corpus long --warmup 2 --fidelity 2 --limit 40
T=90 b incr-fp16-v2 --random v2 --backends eager-fp16,eager-fp32 --warmup 1 --fidelity 3 --eager-limit 3 --limit 3
timeout 100 python3 docs/bench/h200-wave3/stage_profile.py --version v3 --out $OUT/profile-v3.json > $OUT/profile-v3.log 2>&1; echo "profile v3 rc=$?"
timeout 80 python3 docs/bench/h200-wave3/stage_profile.py --version v2 --out $OUT/profile-v2.json > $OUT/profile-v2.log 2>&1; echo "profile v2 rc=$?"
cd $OUT && tar czf logs.tgz *.log bench/*.json profile-*.json 2>/dev/null; ls -la $OUT $OUT/bench
