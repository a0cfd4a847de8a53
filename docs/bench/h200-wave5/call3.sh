#!/usr/bin/env bash
# Device call 3 (H200): the DiT position-conv kernel's GPU tests, then the committed runs (cudagraph timed,
# eager-fp32 the fidelity reference) of v3, v2 (short and long corpus) and v1, as one archive re-made after each run.
set -uo pipefail
python3 -m pip install -q --no-index --no-deps --no-compile --target /tmp/site .whl/*.whl 2>/dev/null || exit 1
export PYTHONPATH=/tmp/site:$PWD PYTHONUNBUFFERED=1 HF_HUB_OFFLINE=1 COSYDESK_COMMIT=${COSYDESK_COMMIT:-head}
mkdir -p $OUT/bench
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader | tee $OUT/machine.txt
pack() { (cd $OUT && tar czf runs.tgz *.log *.txt bench/*.json bench/*.png 2>/dev/null); }
b() { name=$1; shift; timeout ${T:-100} python3 -m cosydesk bench --out $OUT/bench --name $name --backends cudagraph,eager-fp32 "$@" > $OUT/$name.log 2>&1; echo "$name rc=$?"; grep "first audio p50" $OUT/$name.log | cut -c1-240; pack; }
timeout 45 python3 -m pytest -q -p no:cacheprovider tests/runtime/backends/cudagraph/test_dit_conv.py > $OUT/gpu-tests.log 2>&1; echo "gpu tests rc=$?"; tail -2 $OUT/gpu-tests.log; pack
T=100 b h200-v3 --random v3 --warmup 3 --fidelity 3 --eager-limit 2 --limit 120
T=100 b h200-v2 --random v2 --warmup 3 --fidelity 3 --eager-limit 2 --limit 120
T=85 b h200-v3-long --random v3 --corpus long --warmup 2 --fidelity 2 --eager-limit 1 --limit 30
T=85 b h200-v2-long --random v2 --corpus long --warmup 2 --fidelity 2 --eager-limit 1 --limit 30
T=110 b h200-v1 --random v1 --warmup 3 --fidelity 2 --eager-limit 1 --limit 120
pack; ls $OUT/bench
