#!/usr/bin/env bash
# Device call 4 (H200; call 3 was cut when the machine was taken back, and the device time left allowed three runs):
# the committed v3 short, v2 short and v3 long runs, cudagraph timed, eager-fp32 the fidelity reference.
set -uo pipefail
python3 -m pip install -q --no-index --no-deps --no-compile --target /tmp/site .whl/*.whl 2>/dev/null || exit 1
export PYTHONPATH=/tmp/site:$PWD PYTHONUNBUFFERED=1 HF_HUB_OFFLINE=1 COSYDESK_COMMIT=${COSYDESK_COMMIT:-head}
mkdir -p $OUT/bench
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader | tee $OUT/machine.txt
pack() { (cd $OUT && tar czf runs.tgz *.log *.txt bench/*.json bench/*.png 2>/dev/null); }
b() { name=$1; shift; timeout ${T:-100} python3 -m cosydesk bench --out $OUT/bench --name $name --backends cudagraph,eager-fp32 "$@" > $OUT/$name.log 2>&1; echo "$name rc=$?"; grep "first audio p50" $OUT/$name.log | cut -c1-240; pack; }
T=100 b h200-v3 --random v3 --warmup 3 --fidelity 3 --eager-limit 2 --limit 120
T=100 b h200-v2 --random v2 --warmup 3 --fidelity 3 --eager-limit 2 --limit 120
T=80 b h200-v3-long --random v3 --corpus long --warmup 2 --fidelity 2 --eager-limit 1 --limit 30
pack; ls $OUT/bench
