#!/usr/bin/env bash
# Copy this worktree (minus .git and the fixtures' images) to /work/main/.dev-engine3, which the device tool carries.
set -euo pipefail
rm -rf /work/main/.dev-engine3 && mkdir -p /work/main/.dev-engine3
tar -C /work/wt-engine3 --exclude=./.git --exclude='*.png' --exclude='__pycache__' --exclude=./tests/fixtures/cosyvoice-official/v1-tiny -cf - . | tar -C /work/main/.dev-engine3 -xf -
du -sh /work/main/.dev-engine3
