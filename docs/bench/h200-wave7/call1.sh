#!/usr/bin/env bash
# Device call 1 (H200): the CUDA tests of place_model and the DiT; v3's and v2's memory at every build stage,
# placed as the app now does and as it did before; then v3 short with its eager-fp32 fidelity pass.
set -uo pipefail
python3 -m pip install -q --no-index --no-deps --no-compile --target /tmp/site .whl/*.whl 2>/dev/null || exit 1
export PYTHONPATH=/tmp/site:$PWD PYTHONUNBUFFERED=1 HF_HUB_OFFLINE=1 COSYDESK_COMMIT=${COSYDESK_COMMIT:-head}
unset PYTORCH_CUDA_ALLOC_CONF PYTORCH_ALLOC_CONF
mkdir -p $OUT/bench
pack() { (cd $OUT && tar czf runs.tgz *.log *.json bench/*.json 2>/dev/null); }
b() { name=$1; shift; timeout ${T:-100} python3 -m cosydesk bench --out $OUT/bench --name $name --backends cudagraph,eager-fp32 "$@" > $OUT/$name.log 2>&1; echo "$name rc=$?"; grep -E "first audio p50" $OUT/$name.log | cut -c1-200; grep -E "nvml|NVML" $OUT/$name.log | tail -2 | cut -c1-200; pack; }
nvidia-smi --query-gpu=name,driver_version,memory.used --format=csv > $OUT/machine.txt
timeout 150 python3 -m pytest -q -p no:cacheprovider -rs tests/runtime/backends/test_place_model.py tests/runtime/backends/cudagraph/test_dit_prepared.py > $OUT/gpu-tests.log 2>&1; echo "gpu tests rc=$?"; tail -3 $OUT/gpu-tests.log; pack
for v in v3 v2; do for p in place_model fp32-then-cast; do
  [ $v = v2 ] && [ $p = fp32-then-cast ] && continue
  timeout 150 python3 docs/bench/h200-wave7/memory_probe.py --version $v --placement $p --out $OUT/mem-$v-$p.json > $OUT/mem-$v-$p.log 2>&1; echo "mem $v $p rc=$?"; grep -E '"built"|weights placed' $OUT/mem-$v-$p.log; tail -1 $OUT/mem-$v-$p.log | cut -c1-400; pack
done; done
T=170 b h200-v3 --random v3 --warmup 3 --fidelity 3 --eager-limit 2 --limit 120
pack; ls $OUT
