"""The UI thread never blocks > 100 ms while 100,000 characters of English are spoken (issue 31 item 3).

A QTimer ticks every 10 ms on the UI thread; the longest interval between two ticks is the longest the event loop
was blocked. Setting the text (the draft is saved 1.5 s later), pressing Speak, two seconds of synthesis and
playback with the tiny model, Stop, the partial take kept in a history that already lists long takes, its row
selected and searched, and typing into the long text are all measured.
"""

from __future__ import annotations

import gc
import os
import time

import numpy as np
import pytest
from PySide6.QtCore import QTimer
from PySide6.QtGui import QFont

from cosydesk.audio.player import Player
from tests.audio.fake_sd import FakeSoundDevice
from tests.reliability.test_long_text_first_audio import long_english
from tests.ui.helpers import make_window, wait_idle

GAP_LIMIT_MS = 100.0
EARLIER_TAKES = 12


class GapMeter:
    """Longest interval between ticks of a 10 ms QTimer on the UI thread."""

    def __init__(self) -> None:
        self.ticks: list[float] = []
        self.marks: list[tuple[float, str]] = []
        self.timer = QTimer()
        self.timer.setInterval(10)
        self.timer.timeout.connect(lambda: self.ticks.append(time.perf_counter()))

    def start(self) -> None:
        self.ticks, self.marks = [time.perf_counter()], []
        self.timer.start()

    def mark(self, step: str) -> None:
        """Name what the UI thread does from now on (the report says in which step the longest gap ended)."""
        self.marks.append((time.perf_counter(), step))

    def worst_step(self) -> str:
        gaps = np.diff(self.ticks)
        end = self.ticks[int(gaps.argmax()) + 1]
        return next((step for at, step in reversed(self.marks) if at <= end), "start")

    def stop(self) -> float:
        self.timer.stop()
        self.ticks.append(time.perf_counter())
        return float(np.diff(self.ticks).max() * 1000.0)


@pytest.fixture
def own_heap():
    """The app's heap, not the test session's: objects left by earlier tests are frozen out of the collector, so
    a full collection of the whole session (a few hundred ms in a long run) is not timed as the app's blocking."""
    gc.collect()
    gc.freeze()
    yield
    gc.unfreeze()


def test_ui_never_blocks_with_100k_characters(qtbot, data_dir, tiny_v2, tiny_factory, own_heap):
    window = make_window(qtbot, data_dir, tiny_factory, player=Player(sd_module=FakeSoundDevice(speed=1.0)),
                         model_dir=tiny_v2, warmup=True)
    wait_idle(qtbot, window)
    # the editor lays text out without optional shaping (Latin kerning and ligatures): 2/3 of the time for this text
    assert window.text_edit.font().styleStrategy() & QFont.StyleStrategy.PreferNoShaping
    text = long_english()
    for _ in range(EARLIER_TAKES):  # earlier long takes in the history: every repaint of the list shows them
        window.history.add(text, np.zeros(2400, np.float32), 24000)
    window.history_panel.reload()
    meter = GapMeter()
    meter.start()
    qtbot.wait(1000)  # idle first: is this machine quiet enough to judge a 100 ms bound?
    idle_gap = meter.stop()
    print(f"[metric] ui_longest_gap_idle_ms = {idle_gap:.1f}")
    if idle_gap > 40.0:
        window.shutdown()
        pytest.skip(f"this machine is too busy to judge UI blocking: the idle event loop already stalls "
                    f"{idle_gap:.0f} ms (load average {os.getloadavg()[0]:.1f})")
    chunks: list = []
    window.controller.worker.chunkReady.connect(chunks.append)
    meter.start()
    phases = {}
    meter.mark("set text")
    t0 = time.perf_counter()
    window.text_edit.setPlainText(text)
    phases["set_text_ms"] = (time.perf_counter() - t0) * 1000.0
    qtbot.wait(200)
    meter.mark("speak")
    t0 = time.perf_counter()
    window.speak_button.click()
    phases["speak_click_ms"] = (time.perf_counter() - t0) * 1000.0
    qtbot.waitUntil(lambda: len(chunks) >= 1, timeout=30000)
    meter.mark("speaking")
    qtbot.wait(2000)
    meter.mark("stop")
    t0 = time.perf_counter()
    window.stop_button.click()
    phases["stop_click_ms"] = (time.perf_counter() - t0) * 1000.0
    wait_idle(qtbot, window)
    meter.mark("history")
    qtbot.waitUntil(lambda: window.history_panel.list.count() == EARLIER_TAKES + 1, timeout=10000)  # the partial take
    window.history_panel.list.setCurrentRow(0)  # its row, tooltip and details
    window.history_panel.search_edit.setText("Chapter 99")  # a search through the whole text
    qtbot.wait(100)
    assert window.history_panel.apply_filter() == EARLIER_TAKES + 1
    window.history_panel.search_edit.setText("")
    meter.mark("typing")
    for key in "more":  # typing into the long text, one key at a time as a user does (~15 ms each: Qt lays
        qtbot.keyClick(window.text_edit, key)  # out the whole 100k-character paragraph again)
        qtbot.wait(30)
    qtbot.wait(300)
    longest = meter.stop()
    worst = meter.worst_step()
    print(f"[metric] ui_longest_gap_100k_ms = {longest:.1f} (during: {worst}) chunks={len(chunks)} "
          + " ".join(f"{k}={v:.1f}" for k, v in phases.items()))
    assert window.state == "ready" and len(chunks) >= 1
    assert len(window.text_edit.toPlainText()) == len(text) + 4
    assert window.history.entries()[0].text == text and window.history.entries()[0].partial
    if longest >= GAP_LIMIT_MS:  # the machine again, idle, right after: was it the app or another process?
        meter.start()
        qtbot.wait(1000)
        idle_after = meter.stop()
        if idle_after > 40.0:
            window.shutdown()
            pytest.skip(f"the machine became too busy to judge UI blocking: the idle event loop stalled "
                        f"{idle_after:.0f} ms right after the run (load average {os.getloadavg()[0]:.1f})")
    window.shutdown()
    assert longest < GAP_LIMIT_MS, f"the UI thread was blocked {longest:.0f} ms during {worst} ({phases})"


def test_a_history_row_previews_the_start_of_a_long_take_not_all_of_it():
    from cosydesk.ui.history_panel import PREVIEW_CHARS, text_lines

    text = long_english()
    [line] = text_lines(text)  # one 100,000-character paragraph: eliding all of it on each paint is what blocked
    assert line.endswith(" …") and len(line) <= PREVIEW_CHARS + 2 and text.startswith(line[:-2].rstrip())
    assert text_lines("First line\n\n  second   line  \nthird") == ["First line", "second line …"]
    assert text_lines("Short.") == ["Short."]


def test_the_synthesis_thread_hands_the_gil_back_to_the_ui_within_a_millisecond(qtbot, tiny_factory):
    """At Python's default 5 ms switch interval the speak phase above blocked the UI 60-120 ms (each return from Qt
    into Python waited for the worker's Python glue); the controller shortens it when the worker thread starts."""
    import sys

    from cosydesk.ui.worker import SynthController

    before = sys.getswitchinterval()
    sys.setswitchinterval(0.005)
    try:
        controller = SynthController(tiny_factory, warmup=False)
        assert sys.getswitchinterval() <= 0.001
        assert controller.shutdown()
    finally:
        sys.setswitchinterval(before)
