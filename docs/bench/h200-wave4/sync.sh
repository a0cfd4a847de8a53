#!/usr/bin/env bash
# Copy this worktree (minus .git, images and the fixtures) to /work/main/.dev-engine3, which the device tool carries;
# the fixtures (unchanged on this branch) are a link to main's copy, which the device tool sends anyway.
set -euo pipefail
rm -rf /work/main/.dev-engine3 && mkdir -p /work/main/.dev-engine3
tar -C /work/wt-engine3 --exclude=./.git --exclude='*.png' --exclude='__pycache__' --exclude=./tests/fixtures -cf - . \
  | tar -C /work/main/.dev-engine3 -xf -
ln -s ../../tests/fixtures /work/main/.dev-engine3/tests/fixtures
du -sh /work/main/.dev-engine3
