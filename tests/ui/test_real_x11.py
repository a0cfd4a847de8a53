"""A real X11 window: Xvfb on a free display, a QWidget through Qt's xcb plugin (not offscreen), its pixels read
back from the X server. This is what fails on a desktop missing the xcb libraries (libxcb-icccm4, ...).

Needs the `xvfb` package (Debian/Ubuntu) or `xorg-x11-server-Xvfb` (Fedora); skipped, saying so, without it."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys

import pytest

from cosydesk import qt_platform
from tests.conftest import REPO_ROOT

pytestmark = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="X11 / xcb is the Linux platform")

# Shows a red 200x120 widget, then asks the X server (not Qt's backing store) for the screen's pixels there.
_WINDOW = """
import json, sys
from PySide6.QtCore import QTimer
from PySide6.QtGui import QColor, QGuiApplication
from PySide6.QtWidgets import QApplication, QWidget

app = QApplication(sys.argv[:1])
widget = QWidget()
widget.setStyleSheet("background: #ff0000")
widget.setAutoFillBackground(True)
widget.setGeometry(10, 10, 200, 120)
widget.show()
result = {}

def sample():
    image = QGuiApplication.primaryScreen().grabWindow(0).toImage()
    pixel = QColor(image.pixel(10 + 100, 10 + 60))
    result.update(platform=app.platformName(), visible=widget.isVisible(), exposed=widget.windowHandle().isExposed(),
                  window_id=int(widget.winId()), pixel=[pixel.red(), pixel.green(), pixel.blue()])
    app.quit()

QTimer.singleShot(700, sample)
app.exec()
print(json.dumps(result))
"""


def _start_xvfb(xvfb: str) -> tuple[subprocess.Popen, str]:
    """Xvfb on a display number it picks itself (-displayfd): no race with other servers on this machine."""
    read_end, write_end = os.pipe()
    server = subprocess.Popen([xvfb, "-displayfd", str(write_end), "-screen", "0", "640x480x24", "-nolisten", "tcp"],
                              pass_fds=(write_end,), stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    os.close(write_end)
    with os.fdopen(read_end) as pipe:
        number = pipe.readline().strip()  # written once the server accepts connections
    if not number:
        server.kill()
        raise AssertionError(f"Xvfb did not start: {server.stderr.read().decode(errors='replace')[-2000:]}")
    return server, f":{number}"


def test_a_qwidget_opens_on_a_real_x_server():
    xvfb = shutil.which("Xvfb")
    if xvfb is None:
        pytest.skip("Xvfb is not installed (apt-get install xvfb): cannot open a real X11 window here")
    report = qt_platform.check_platform("xcb")
    assert report.ok, "the xcb plugin cannot load: " + " / ".join(qt_platform.advice(report))
    server, display = _start_xvfb(xvfb)
    try:
        env = {**os.environ, "DISPLAY": display, "QT_QPA_PLATFORM": "xcb", "PYTHONPATH": str(REPO_ROOT)}
        env.pop("WAYLAND_DISPLAY", None)
        window = subprocess.run([sys.executable, "-c", _WINDOW], capture_output=True, text=True, env=env, timeout=120)
    finally:
        server.terminate()
        server.wait(timeout=10)
    assert window.returncode == 0, window.stderr[-3000:]
    result = json.loads(window.stdout.strip().splitlines()[-1])
    assert result["platform"] == "xcb" and result["visible"] and result["exposed"] and result["window_id"] > 0, result
    assert result["pixel"] == [255, 0, 0], f"the X server shows {result['pixel']} where the red widget is"
