#!/usr/bin/env bash
# Copy this worktree (minus .git and the fixtures) to /work/main/.dev-engine, which the device tool carries.
set -euo pipefail
rm -rf /work/main/.dev-engine && mkdir -p /work/main/.dev-engine
tar -C /work/wt-engine --exclude=./.git --exclude=./tests/fixtures --exclude='*.png' --exclude='__pycache__' -cf - . | tar -C /work/main/.dev-engine -xf -
du -sh /work/main/.dev-engine
