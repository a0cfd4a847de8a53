#!/usr/bin/env bash
# Device call (H200): the "before" half of issue 27's A/B - the session's start (ee20caa, carried as .ab-base)
# run from inside its own folder, so `python3 -m cosydesk` imports that tree and not this one (the first try,
# ab_bench.sh, ran this tree twice: python puts the working directory first on sys.path).
set -uo pipefail
python3 -m pip install -q --no-index --no-deps --no-compile --target /tmp/site .whl/*.whl 2>/dev/null || exit 1
out=$OUT
cd .ab-base || exit 1
export PYTHONUNBUFFERED=1 HF_HUB_OFFLINE=1 PYTHONPATH=/tmp/site COSYDESK_COMMIT=ee20caa
python3 -c "import cosydesk, os; print('cosydesk from', os.path.dirname(cosydesk.__file__))"
timeout 200 python3 -m cosydesk bench --random v2 --backends cudagraph --warmup 2 --fidelity 2 --out $out --limit 150 \
  --name ab-base 2>&1 | tail -3
