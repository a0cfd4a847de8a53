#!/usr/bin/env bash
# Device call 1 (H200): local-memory probe of the built v3 backend (stack limit, NVML when it is lowered), the
# resources of every Triton kernel the build compiled (cuobjdump -res-usage), the CUDA tests of this wave's
# shared graph inputs and pinned v3 noise, then v3 short with its eager-fp32 fidelity pass. All in runs.tgz.
set -uo pipefail
python3 -m pip install -q --no-index --no-deps --no-compile --target /tmp/site .whl/*.whl 2>/dev/null || exit 1
export PYTHONPATH=/tmp/site:$PWD PYTHONUNBUFFERED=1 HF_HUB_OFFLINE=1 COSYDESK_COMMIT=${COSYDESK_COMMIT:-head}
export TRITON_CACHE_DIR=/tmp/tc TORCHINDUCTOR_CACHE_DIR=/tmp/ti
unset PYTORCH_CUDA_ALLOC_CONF PYTORCH_ALLOC_CONF
R=$OUT/r; mkdir -p $R/bench
pack() { (cd $R && tar czf $OUT/runs.tgz .); }
b() { name=$1; shift; timeout ${T:-100} python3 -m cosydesk bench --out $R/bench --name $name --backends cudagraph,eager-fp32 "$@" > $R/$name.log 2>&1; echo "$name rc=$?"; grep -E "cudagraph: first audio p50" $R/$name.log | cut -c1-120; python3 -c "
import json,sys; c=json.load(open('$R/bench/$name.json'))['backends']['cudagraph']; print('nvml', round(c['peak_nvml_gb'],3), 'reserved', round(c['peak_reserved_gb'],3), 'drift', round(c['vram_drift_pct'],3), 'fid', c['fidelity'], 'rtf', round(c['rtf'],4))"; pack; }
nvidia-smi --query-gpu=name,driver_version --format=csv > $R/machine.txt
timeout 170 python3 docs/bench/h200-wave8/lmem_probe.py --version v3 > $R/lmem-v3.log 2>&1; echo "lmem v3 rc=$?"; grep after $R/lmem-v3.log | cut -c1-220; tail -3 $R/lmem-v3.log | cut -c1-300; pack
find /tmp/tc /tmp/ti -name "*.cubin" 2>/dev/null > $R/cubins.txt; wc -l < $R/cubins.txt
while read f; do cuobjdump -res-usage "$f" 2>/dev/null | grep -E "Function|REG"; done < $R/cubins.txt > $R/res-usage.txt
python3 - $R/res-usage.txt <<'PY'
import re, sys
rows = []
name = None
for line in open(sys.argv[1]):
    m = re.search(r"Function (\S+):", line)
    if m: name = m.group(1); continue
    m = re.search(r"REG:(\d+) STACK:(\d+) SHARED:(\d+) LOCAL:(\d+)", line)
    if m and name: rows.append((int(m.group(2)), int(m.group(4)), int(m.group(1)), name[:90]))
rows.sort(reverse=True)
print(len(rows), "kernels; largest STACK / LOCAL (bytes per thread), REG:")
for r in rows[:12]: print(r)
PY
timeout 200 python3 -m pytest -q -p no:cacheprovider -rs tests/runtime/backends/cudagraph/test_causal_hift.py tests/runtime/backends/cudagraph/test_hift_padded.py tests/runtime/backends/cudagraph/test_graph_table.py tests/model/test_hift.py -k "gpu or cuda or noise or graph" > $R/gpu-tests.log 2>&1; echo "gpu tests rc=$?"; tail -2 $R/gpu-tests.log
timeout 200 python3 -m pytest -q -p no:cacheprovider -rs tests/runtime/backends/cudagraph/test_cudagraph.py -k "cublas or reserve_nothing or matches_eager or sampler" >> $R/gpu-tests.log 2>&1; echo "gpu tests 2 rc=$?"; tail -2 $R/gpu-tests.log; pack
T=170 b h200-v3 --random v3 --warmup 3 --fidelity 3 --eager-limit 2 --limit 120
pack
