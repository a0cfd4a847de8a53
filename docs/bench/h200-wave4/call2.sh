#!/usr/bin/env bash
# Device call 2 (H200): the committed issue-28 runs with this tree (v3 causal HiFT window graphs, v3 prepared DiT
# with one flow graph per bucket, v2 encoder attention in query blocks past 576 frames, empty_cache after capture),
# cudagraph timed, eager-fp32 as the fidelity reference on the first sentences.
set -uo pipefail
python3 -m pip install -q --no-index --no-deps --no-compile --target /tmp/site ../.whl/*.whl 2>/dev/null || exit 1
export PYTHONPATH=/tmp/site:$PWD PYTHONUNBUFFERED=1 HF_HUB_OFFLINE=1 COSYDESK_COMMIT=${COSYDESK_COMMIT:-head}
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader | tee $OUT/machine.txt
b() { name=$1; shift; timeout ${T:-150} python3 -m cosydesk bench --out $OUT/bench --name $name --backends cudagraph,eager-fp32 "$@" > $OUT/$name.log 2>&1; echo "$name rc=$?"; tail -4 $OUT/$name.log | cut -c1-400; }
T=120 b h200-v3 --random v3 --warmup 3 --fidelity 3 --eager-limit 2 --limit 120
T=110 b h200-v2 --random v2 --warmup 3 --fidelity 3 --eager-limit 2 --limit 120
T=95 b h200-v3-long --random v3 --corpus long --warmup 2 --fidelity 2 --eager-limit 1 --limit 30
T=95 b h200-v2-long --random v2 --corpus long --warmup 2 --fidelity 2 --eager-limit 1 --limit 30
ls $OUT/bench
# added after the run: the device tool brings back at most 8 files, so the runs travel as one archive
cd $OUT && tar czf runs.tgz *.log bench/*.json
