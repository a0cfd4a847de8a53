#!/usr/bin/env bash
# Install the desktop entry, AppStream metainfo and icon for the current user (or PREFIX=/usr/local with sudo),
# so CosyDesk shows up in the application menu. Needs `cosydesk-gui` on PATH: a `pip install` of CosyDesk
# provides it, or link packaging/dist/cosydesk/cosydesk-gui into ~/.local/bin for the frozen app.
set -euo pipefail
cd "$(dirname "$0")/.."
PREFIX=${PREFIX:-$HOME/.local}
install -Dm644 packaging/io.cosydesk.CosyDesk.desktop "$PREFIX/share/applications/io.cosydesk.CosyDesk.desktop"
install -Dm644 packaging/io.cosydesk.CosyDesk.metainfo.xml "$PREFIX/share/metainfo/io.cosydesk.CosyDesk.metainfo.xml"
install -Dm644 resources/icons/cosydesk.svg "$PREFIX/share/icons/hicolor/scalable/apps/io.cosydesk.CosyDesk.svg"
command -v update-desktop-database >/dev/null && update-desktop-database -q "$PREFIX/share/applications" || true
echo "installed the CosyDesk menu entry under $PREFIX/share"
