#!/usr/bin/env bash
# Device call (H200): issue 27's before/after A/B (the session's start, ee20caa, carried as .ab-base, against
# this tree) on the short v2 corpus, then this tree on the long corpus. cudagraph only, one process each.
set -uo pipefail
python3 -m pip install -q --no-index --no-deps --no-compile --target /tmp/site .whl/*.whl 2>/dev/null || exit 1
export PYTHONUNBUFFERED=1 HF_HUB_OFFLINE=1 COSYDESK_COMMIT=${COSYDESK_COMMIT:-head}
args="--random v2 --backends cudagraph --warmup 2 --fidelity 2 --out $OUT"
PYTHONPATH=/tmp/site:$PWD timeout 170 python3 -m cosydesk bench $args --limit 150 --name ab-head 2>&1 | tail -3
PYTHONPATH=/tmp/site:$PWD/.ab-base COSYDESK_COMMIT=ee20caa timeout 170 python3 -m cosydesk bench $args --limit 150 --name ab-base 2>&1 | tail -3
PYTHONPATH=/tmp/site:$PWD timeout 200 python3 -m cosydesk bench $args --corpus long --limit 60 --name h200-v2-long 2>&1 | tail -3
