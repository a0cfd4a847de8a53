#!/usr/bin/env bash
# Copy this worktree (minus .git) to /work/main/.dev-backends and main at 34e1cff to /work/main/.ab-base-27, the
# two trees the device tool carries for call.sh.
set -euo pipefail
rm -rf /work/main/.dev-backends && mkdir -p /work/main/.dev-backends
tar -C /work/wt-backends --exclude=./.git --exclude='*.png' --exclude='__pycache__' --exclude=./cosydesk/resources --exclude=./tests/fixtures -cf - . \
  | tar -C /work/main/.dev-backends -xf -
rm -rf /work/main/.ab-base-27 && mkdir -p /work/main/.ab-base-27
git -C /work/main archive 34e1cff cosydesk resources pyproject.toml | tar -C /work/main/.ab-base-27 -xf -
du -sh /work/main/.dev-backends /work/main/.ab-base-27
