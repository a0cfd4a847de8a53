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
from tests.support.paths import REPO_ROOT

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


# The main window as `cosydesk` builds it, and its title as the X server holds it (_NET_WM_NAME, what a window
# manager shows), read with libX11 — Qt formats "<title> — <display name>" only on the way to the server.
_TITLE = """
import ctypes, json, sys
from PySide6.QtCore import QTimer
from cosydesk.settings import Settings
from cosydesk.ui.app import create_application
from cosydesk.ui.main_window import MainWindow

app = create_application(sys.argv[:1])
window = MainWindow(settings=Settings.at(sys.argv[1] + "/settings.ini"), data_dir=sys.argv[1])
window.show()

def net_wm_name(window_id):
    x11 = ctypes.CDLL("libX11.so.6")
    x11.XOpenDisplay.restype = ctypes.c_void_p
    x11.XInternAtom.restype = ctypes.c_ulong
    x11.XInternAtom.argtypes = [ctypes.c_void_p, ctypes.c_char_p, ctypes.c_int]
    x11.XGetWindowProperty.argtypes = [ctypes.c_void_p, ctypes.c_ulong, ctypes.c_ulong, ctypes.c_long, ctypes.c_long,
        ctypes.c_int, ctypes.c_ulong, ctypes.POINTER(ctypes.c_ulong), ctypes.POINTER(ctypes.c_int),
        ctypes.POINTER(ctypes.c_ulong), ctypes.POINTER(ctypes.c_ulong), ctypes.POINTER(ctypes.c_char_p)]
    display = x11.XOpenDisplay(None)
    kind, fmt, count, after, value = ctypes.c_ulong(), ctypes.c_int(), ctypes.c_ulong(), ctypes.c_ulong(), ctypes.c_char_p()
    x11.XGetWindowProperty(display, window_id, x11.XInternAtom(display, b"_NET_WM_NAME", 0), 0, 4096, 0, 0,
                           ctypes.byref(kind), ctypes.byref(fmt), ctypes.byref(count), ctypes.byref(after),
                           ctypes.byref(value))
    return (value.value or b"").decode("utf-8")

def report():
    print(json.dumps({"qt_title": window.windowTitle(), "x11_title": net_wm_name(int(window.winId()))}))
    window.shutdown()
    app.quit()

QTimer.singleShot(700, report)
app.exec()
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


def test_the_main_windows_title_names_cosydesk_once(tmp_path):
    """Issue 26: the title bar read "CosyDesk — local speech synthesis — CosyDesk"."""
    xvfb = shutil.which("Xvfb")
    if xvfb is None:
        pytest.skip("Xvfb is not installed (apt-get install xvfb): cannot open a real X11 window here")
    server, display = _start_xvfb(xvfb)
    try:
        env = {**os.environ, "DISPLAY": display, "QT_QPA_PLATFORM": "xcb", "PYTHONPATH": str(REPO_ROOT),
               "COSYDESK_DATA_DIR": str(tmp_path)}
        env.pop("WAYLAND_DISPLAY", None)
        child = subprocess.run([sys.executable, "-c", _TITLE, str(tmp_path)], capture_output=True, text=True,
                               env=env, timeout=180)
    finally:
        server.terminate()
        server.wait(timeout=10)
    assert child.returncode == 0, child.stderr[-3000:]
    titles = json.loads(child.stdout.strip().splitlines()[-1])
    assert titles["x11_title"] == "Local speech synthesis — CosyDesk", titles
    assert titles["x11_title"].count("CosyDesk") == 1
