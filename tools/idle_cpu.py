"""Developer tool, not part of the app: the main window's idle CPU cost with the telemetry dock visible.

    python tools/idle_cpu.py [--seconds 15] [--settle 3]              # offscreen Qt
    Xvfb :99 -screen 0 1280x800x24 -nolisten tcp & DISPLAY=:99 QT_QPA_PLATFORM=xcb python tools/idle_cpu.py

It opens the real MainWindow (no model loaded, telemetry dock shown, the system's telemetry source: NVML or
CPU/RAM), lets it settle, then reads this process's utime+stime from /proc/self/stat before and after
`--seconds` of idling in the Qt event loop and prints the share of one core that was used.
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
import time


def cpu_seconds() -> float:
    """utime + stime of this process (all threads) in seconds, from /proc/self/stat."""
    with open("/proc/self/stat") as stat:
        fields = stat.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seconds", type=float, default=15.0)
    parser.add_argument("--settle", type=float, default=3.0)
    args = parser.parse_args(argv)
    os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")
    os.environ.setdefault("COSYDESK_DATA_DIR", tempfile.mkdtemp(prefix="cosydesk-idle-"))
    from PySide6.QtCore import QEventLoop, QTimer

    from cosydesk.ui.app import create_application
    from cosydesk.ui.main_window import MainWindow

    app = create_application([sys.argv[0]])
    window = MainWindow(warmup=False)
    window.resize(1280, 800)
    window.show()
    window.telemetry_dock.show()

    def idle(seconds: float) -> None:
        loop = QEventLoop()
        QTimer.singleShot(int(seconds * 1000), loop.quit)
        loop.exec()

    idle(args.settle)
    assert window.telemetry_dock.isVisible(), "the telemetry dock must be visible for this measurement"
    cpu0, wall0 = cpu_seconds(), time.monotonic()
    idle(args.seconds)
    cpu1, wall1 = cpu_seconds(), time.monotonic()
    share = 100.0 * (cpu1 - cpu0) / (wall1 - wall0)
    print(f"idle CPU with the telemetry dock visible: {share:.1f} % of one core "
          f"({cpu1 - cpu0:.2f} s CPU in {wall1 - wall0:.1f} s, platform {app.platformName()})")
    window.shutdown()
    return 0


if __name__ == "__main__":
    sys.exit(main())
