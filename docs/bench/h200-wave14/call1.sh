#!/usr/bin/env bash
# Device call 1 (H200), wave 14: the decode megakernel probe (numerics and step time against the Triton step).
set -uo pipefail
export PYTHONUNBUFFERED=1 TRITON_CACHE_DIR=/tmp/tc PYTHONPATH=$PWD
nvidia-smi --query-gpu=name,driver_version --format=csv > $OUT/machine.txt
python3 -c "import torch, triton; print(torch.__version__, triton.__version__, hasattr(torch.cuda, '_compile_kernel'))"
timeout 400 python3 docs/bench/h200-wave14/megakernel_probe.py $OUT/probe.json 2>&1 | tee $OUT/probe.log | tail -40
