#!/usr/bin/env bash
# Device call 2 (H200), wave 12: the DiT estimator call in four compile variants (dit_variants_probe.py), one
# process each, then each variant's output against the app's.
set -uo pipefail
python3 -m pip install -q --no-index --no-deps --no-compile --target /tmp/site .whl/*.whl 2>/dev/null || exit 1
export PYTHONUNBUFFERED=1 HF_HUB_OFFLINE=1 PYTHONPATH=/tmp/site:$PWD TRITON_CACHE_DIR=/tmp/tc TORCHINDUCTOR_CACHE_DIR=/tmp/ti
R=$OUT/r; mkdir -p $R
for v in app efficient autotune both; do
  timeout 200 python3 docs/bench/h200-wave12/dit_variants_probe.py $v $R > $R/probe-$v.log 2>&1; echo "$v rc=$?"
  grep '^{' $R/probe-$v.log | cut -c1-900; grep -iE "error|warn" $R/probe-$v.log | head -3 | cut -c1-300
done
python3 - <<PY
import torch
ref = torch.load("$R/dit-app.pt")
for v in ("efficient", "autotune", "both"):
    try:
        o = torch.load(f"$R/dit-{v}.pt")
    except FileNotFoundError:
        continue
    print(v, {f: round(float((o[f] - ref[f]).abs().max() / ref[f].abs().max()), 6) for f in ref})
PY
rm -f $R/*.pt
