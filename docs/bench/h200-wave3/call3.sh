#!/usr/bin/env bash
# Device call 3 (H200), the two runs call 2 cut short: the committed issue-28 runs with this tree (flow / encoder graphs up to 1408 frames),
set -uo pipefail
python3 -m pip install -q --no-index --no-deps --no-compile --target /tmp/site ../.whl/*.whl 2>/dev/null || exit 1
export PYTHONPATH=/tmp/site:$PWD PYTHONUNBUFFERED=1 HF_HUB_OFFLINE=1 COSYDESK_COMMIT=${COSYDESK_COMMIT:-head}
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader | tee $OUT/machine.txt
b() { name=$1; shift; timeout ${T:-150} python3 -m cosydesk bench --out $OUT/bench --name $name --backends cudagraph,eager-fp32 "$@" > $OUT/$name.log 2>&1; echo "$name rc=$?"; tail -3 $OUT/$name.log; (cd $OUT && tar czf runs.tgz *.log bench/*.json); }
T=165 b h200-v2 --random v2 --warmup 3 --fidelity 3 --eager-limit 2 --limit 200
T=150 b h200-v1 --random v1 --warmup 3 --fidelity 2 --eager-limit 1 --limit 100
cd $OUT && tar czf runs.tgz *.log bench/*.json; ls $OUT/bench
cd $OUT && tar czf runs.tgz *.log bench/*.json
