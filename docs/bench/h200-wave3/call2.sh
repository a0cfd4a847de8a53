#!/usr/bin/env bash
# Device call 2 (H200): the committed issue-28 runs with this tree (flow / encoder graphs up to 1408 frames),
# cudagraph timed, eager-fp32 as the fidelity reference on the first sentences; then the per-stage profile.
set -uo pipefail
python3 -m pip install -q --no-index --no-deps --no-compile --target /tmp/site ../.whl/*.whl 2>/dev/null || exit 1
export PYTHONPATH=/tmp/site:$PWD PYTHONUNBUFFERED=1 HF_HUB_OFFLINE=1 COSYDESK_COMMIT=${COSYDESK_COMMIT:-head}
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader | tee $OUT/machine.txt
b() { name=$1; shift; timeout ${T:-150} python3 -m cosydesk bench --out $OUT/bench --name $name --backends cudagraph,eager-fp32 "$@" > $OUT/$name.log 2>&1; echo "$name rc=$?"; tail -3 $OUT/$name.log; (cd $OUT && tar czf runs.tgz *.log bench/*.json); }
T=110 b h200-v2 --random v2 --warmup 3 --fidelity 3 --eager-limit 2 --limit 200
T=150 b h200-v2-long --random v2 --corpus long --warmup 2 --fidelity 2 --eager-limit 1 --limit 60
T=110 b h200-v3 --random v3 --warmup 3 --fidelity 3 --eager-limit 2 --limit 200
T=150 b h200-v3-long --random v3 --corpus long --warmup 2 --fidelity 2 --eager-limit 1 --limit 60
T=90 b h200-v1 --random v1 --warmup 3 --fidelity 3 --eager-limit 2 --limit 150
timeout 60 python3 docs/bench/h200-wave3/stage_profile.py --version v3 --out $OUT/bench/profile-v3.json > $OUT/profile-v3.log 2>&1; echo "profile v3 rc=$?"; grep -A3 '"flow_by_length"' $OUT/profile-v3.log | head -3
cd $OUT && tar czf runs.tgz *.log bench/*.json; ls $OUT/bench
