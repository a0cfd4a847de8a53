#!/usr/bin/env bash
# Device call 3 (H200): the allocator setting takes effect when set after torch is imported (as Synthesizer does);
# the GPU tests of the DiT release; then the committed v3 short, v3 long and v2 short runs with their eager-fp32
# fidelity pass, with the released DiT weights allocated again in one run.
set -uo pipefail
python3 -m pip install -q --no-index --no-deps --no-compile --target /tmp/site .whl/*.whl 2>/dev/null || exit 1
export PYTHONPATH=/tmp/site:$PWD PYTHONUNBUFFERED=1 HF_HUB_OFFLINE=1 COSYDESK_COMMIT=${COSYDESK_COMMIT:-head}
unset PYTORCH_CUDA_ALLOC_CONF PYTORCH_ALLOC_CONF
mkdir -p $OUT/bench
pack() { (cd $OUT && tar czf runs.tgz *.log bench/*.json 2>/dev/null); }
b() { name=$1; shift; timeout ${T:-100} python3 -m cosydesk bench --out $OUT/bench --name $name --backends cudagraph,eager-fp32 "$@" > $OUT/$name.log 2>&1; echo "$name rc=$?"; grep -E "first audio p50" $OUT/$name.log | cut -c1-200; grep -E "nvml|NVML" $OUT/$name.log | tail -2 | cut -c1-200; pack; }
python3 -c "
import torch
from cosydesk.runtime.allocator import prefer_expandable_segments
print('set:', prefer_expandable_segments())
x = torch.empty(64 << 20, dtype=torch.uint8, device='cuda')
print('expandable segments in effect:', all(s.get('is_expandable') for s in torch.cuda.memory_snapshot()))
" > $OUT/allocator.log 2>&1; cat $OUT/allocator.log
timeout 120 python3 -m pytest -q -p no:cacheprovider -rs tests/runtime/backends/cudagraph/test_dit_prepared.py tests/runtime/test_allocator.py > $OUT/gpu-tests.log 2>&1; echo "gpu tests rc=$?"; tail -4 $OUT/gpu-tests.log; pack
T=150 b h200-v3 --random v3 --warmup 3 --fidelity 3 --eager-limit 2 --limit 120
T=120 b h200-v3-long --random v3 --corpus long --warmup 2 --fidelity 2 --eager-limit 1 --limit 30
T=140 b h200-v2 --random v2 --warmup 3 --fidelity 3 --eager-limit 2 --limit 120
pack; ls $OUT/bench
