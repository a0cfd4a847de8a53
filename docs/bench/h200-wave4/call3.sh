#!/usr/bin/env bash
# Device call 3 (H200), on main after the merges (backends refactor + cudagraph/tensorrt under runtime/backends/,
# engine3's v3 graphs): the committed issue-28 runs, cudagraph timed, eager-fp32 as the fidelity reference.
# The runs travel as one archive (the device tool brings back at most 8 files), re-made after every run.
set -uo pipefail
python3 -m pip install -q --no-index --no-deps --no-compile --target /tmp/site .whl/*.whl 2>/dev/null || exit 1
export PYTHONPATH=/tmp/site:$PWD PYTHONUNBUFFERED=1 HF_HUB_OFFLINE=1 COSYDESK_COMMIT=${COSYDESK_COMMIT:-head}
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader | tee $OUT/machine.txt
pack() { (cd $OUT && tar czf runs.tgz *.log bench/*.json 2>/dev/null); }
b() { name=$1; shift; timeout ${T:-150} python3 -m cosydesk bench --out $OUT/bench --name $name --backends cudagraph,eager-fp32 "$@" > $OUT/$name.log 2>&1; echo "$name rc=$?"; tail -3 $OUT/$name.log | cut -c1-300; pack; }
T=115 b h200-v3 --random v3 --warmup 3 --fidelity 3 --eager-limit 2 --limit 120
T=105 b h200-v2 --random v2 --warmup 3 --fidelity 3 --eager-limit 2 --limit 120
T=90 b h200-v3-long --random v3 --corpus long --warmup 2 --fidelity 2 --eager-limit 1 --limit 30
T=90 b h200-v2-long --random v2 --corpus long --warmup 2 --fidelity 2 --eager-limit 1 --limit 30
timeout 60 python3 -m pytest -q -p no:cacheprovider tests/runtime/backends/cudagraph/test_causal_hift.py > $OUT/gpu-tests.log 2>&1; echo "gpu tests rc=$?"; tail -2 $OUT/gpu-tests.log
pack; ls $OUT/bench
