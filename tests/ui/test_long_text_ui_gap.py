"""The UI thread never blocks > 100 ms while 100,000 characters of English are spoken (issue 31 item 3).

A QTimer ticks every 10 ms on the UI thread; the longest interval between two ticks is the longest the event loop
was blocked. Setting the text, pressing Speak, two seconds of synthesis and playback with the tiny model, and
Stop are all measured.
"""

from __future__ import annotations

import os
import time

import numpy as np
import pytest
from PySide6.QtCore import QTimer

from cosydesk.audio.player import Player
from tests.audio.fake_sd import FakeSoundDevice
from tests.reliability.test_long_text_first_audio import long_english
from tests.ui.helpers import make_window, wait_idle

GAP_LIMIT_MS = 100.0


class GapMeter:
    """Longest interval between ticks of a 10 ms QTimer on the UI thread."""

    def __init__(self) -> None:
        self.ticks: list[float] = []
        self.timer = QTimer()
        self.timer.setInterval(10)
        self.timer.timeout.connect(lambda: self.ticks.append(time.perf_counter()))

    def start(self) -> None:
        self.ticks = [time.perf_counter()]
        self.timer.start()

    def stop(self) -> float:
        self.timer.stop()
        self.ticks.append(time.perf_counter())
        return float(np.diff(self.ticks).max() * 1000.0)


def test_ui_never_blocks_with_100k_characters(qtbot, data_dir, tiny_v2, tiny_factory):
    window = make_window(qtbot, data_dir, tiny_factory, player=Player(sd_module=FakeSoundDevice(speed=1.0)),
                         model_dir=tiny_v2, warmup=True)
    wait_idle(qtbot, window)
    meter = GapMeter()
    meter.start()
    qtbot.wait(1000)  # idle first: is this machine quiet enough to judge a 100 ms bound?
    idle_gap = meter.stop()
    print(f"[metric] ui_longest_gap_idle_ms = {idle_gap:.1f}")
    if idle_gap > 40.0:
        window.shutdown()
        pytest.skip(f"this machine is too busy to judge UI blocking: the idle event loop already stalls "
                    f"{idle_gap:.0f} ms (load average {os.getloadavg()[0]:.1f})")
    text = long_english()
    chunks: list = []
    window.controller.worker.chunkReady.connect(chunks.append)
    meter.start()
    phases = {}
    t0 = time.perf_counter()
    window.text_edit.setPlainText(text)
    phases["set_text_ms"] = (time.perf_counter() - t0) * 1000.0
    qtbot.wait(200)
    t0 = time.perf_counter()
    window.speak_button.click()
    phases["speak_click_ms"] = (time.perf_counter() - t0) * 1000.0
    qtbot.waitUntil(lambda: len(chunks) >= 1, timeout=30000)
    qtbot.wait(2000)
    t0 = time.perf_counter()
    window.stop_button.click()
    phases["stop_click_ms"] = (time.perf_counter() - t0) * 1000.0
    wait_idle(qtbot, window)
    qtbot.waitUntil(lambda: window.history_panel.list.count() == 1, timeout=10000)  # the partial take, listed
    qtbot.wait(300)
    longest = meter.stop()
    print(f"[metric] ui_longest_gap_100k_ms = {longest:.1f} chunks={len(chunks)} "
          + " ".join(f"{k}={v:.1f}" for k, v in phases.items()))
    assert window.state == "ready" and len(chunks) >= 1
    assert window.text_edit.toPlainText() == text
    assert window.history.entries()[0].text == text
    window.shutdown()
    assert longest < GAP_LIMIT_MS, f"the UI thread was blocked {longest:.0f} ms ({phases})"
