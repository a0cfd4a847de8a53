#!/usr/bin/env bash
# Device call 2 (H200): v3's free-but-reserved memory in torch's default pool (call 1: 284 MB after the build's
# empty_cache), with and without expandable segments, and what those blocks held; then the v3 short run with
# its eager-fp32 fidelity pass (wave 5's was cut).
set -uo pipefail
python3 -m pip install -q --no-index --no-deps --no-compile --target /tmp/site .whl/*.whl 2>/dev/null || exit 1
export PYTHONPATH=/tmp/site:$PWD PYTHONUNBUFFERED=1 HF_HUB_OFFLINE=1 COSYDESK_COMMIT=${COSYDESK_COMMIT:-head}
mkdir -p $OUT/bench
pack() { (cd $OUT && tar czf runs.tgz *.log *.json bench/*.json 2>/dev/null); }
b() { name=$1; shift; timeout ${T:-100} python3 -m cosydesk bench --out $OUT/bench --name $name --backends cudagraph,eager-fp32 "$@" > $OUT/$name.log 2>&1; echo "$name rc=$?"; grep -E "first audio p50" $OUT/$name.log | cut -c1-200; pack; }
for conf in expandable_segments:True expandable_segments:False; do
  tag=${conf#*:}
  PYTORCH_CUDA_ALLOC_CONF=$conf timeout 120 python3 docs/bench/h200-wave6/memory_probe.py --version v3 --out $OUT/memory-v3-$tag.json > $OUT/memory-v3-$tag.log 2>&1; echo "memory v3 $conf rc=$?"; grep -v "^[0-9.]* (0" $OUT/memory-v3-$tag.log | grep -v "^ *\[\|^ *\]\|^ *\"flow\|^ *\"vocoder\|^ *\"llm\|^ *[0-9.]*,\?$" | tail -60 | cut -c1-260; pack
done
T=150 b h200-v3 --random v3 --warmup 3 --fidelity 3 --eager-limit 2 --limit 120
pack; ls $OUT/bench
