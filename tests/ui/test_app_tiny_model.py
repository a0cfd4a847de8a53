"""The app on a real Synthesizer with a tiny official-format model (v2, written by cosydesk.synthetic.tiny_model).

Covers the issue's must-shows: Speak plays (through PortAudio into an ALSA capture file) exactly what the
Synthesizer returned; Stop mid-way; UI responsiveness while synthesising on CPU; 200 rapid Speak/Stop cycles
without deadlock or leaked threads / audio streams.
"""

from __future__ import annotations

import json
import os
import threading
import time

import numpy as np
import psutil
import pytest
from PySide6.QtCore import QTimer

from tests.support.alsa_capture import capture_path, read_capture
from cosydesk.audio.player import Player
from tests.audio.fake_sd import FakeSoundDevice
from tests.ui.helpers import make_window, wait_idle

LONG_TEXT = ("Hello, this is a longer passage for the desktop test. It has several sentences, so that the model "
             "streams more than one chunk. 你好，这是一段用于测试的中文文本。今天天气很好，我们一起去公园散步吧。"
             "The third part keeps the worker busy for a while longer.")
RESULTS_FILE = os.environ.get("COSYDESK_UI_METRICS", "")


def _report(name: str, value) -> None:
    """Numbers for the issue note: printed (pytest -s) and, if COSYDESK_UI_METRICS names a file, stored there."""
    print(f"[metric] {name} = {value}")
    if RESULTS_FILE:
        data = json.loads(open(RESULTS_FILE).read()) if os.path.exists(RESULTS_FILE) else {}
        data[name] = value
        with open(RESULTS_FILE, "w") as handle:
            json.dump(data, handle, indent=1)


def test_speak_plays_exactly_what_the_synthesizer_returned(qtbot, data_dir, tiny_v2, tiny_factory):
    if capture_path() is None:
        pytest.skip("sounddevice was imported before the ALSA capture config was installed")
    pytest.importorskip("sounddevice", exc_type=OSError)
    window = make_window(qtbot, data_dir, tiny_factory, player=Player(), model_dir=tiny_v2)
    assert window.model.version == "v2" and window.model.sample_rate == 24000
    assert "中文女" in [window.speaker_combo.itemText(i) for i in range(window.speaker_combo.count())]
    chunks = []
    window.controller.worker.chunkReady.connect(chunks.append)
    qtbot.keyClicks(window.text_edit, "Hello world.")
    with qtbot.waitSignal(window.controller.worker.jobFinished, timeout=60000) as finished:
        window.speak_button.click()
    wait_idle(qtbot, window)
    result = finished.args[0]
    assert result.error is None and not result.cancelled and len(result.pcm) > 0
    window.player.close()
    captured = read_capture()
    np.testing.assert_array_equal(captured[captured != 0], result.pcm[result.pcm != 0])
    qtbot.waitUntil(lambda: window.history_panel.list.count() == 1)
    entry = window.history.entries()[0]
    stored, rate = window.history.audio(entry.id)
    np.testing.assert_array_equal(stored, result.pcm)
    assert rate == 24000 and entry.first_audio_ms == pytest.approx(result.first_audio_ms, abs=0.1)
    window.shutdown()


def test_stop_midway_with_the_tiny_model(qtbot, data_dir, tiny_v2, tiny_factory):
    window = make_window(qtbot, data_dir, tiny_factory, player=Player(sd_module=FakeSoundDevice(speed=1.0)),
                         model_dir=tiny_v2)
    window.text_edit.setPlainText(LONG_TEXT)
    with qtbot.waitSignal(window.controller.worker.chunkReady, timeout=60000):
        window.speak_button.click()
    stop_at = time.perf_counter()
    with qtbot.waitSignal(window.controller.worker.jobFinished, timeout=30000) as finished:
        window.stop_button.click()
    stop_s = time.perf_counter() - stop_at
    _report("tiny_v2_stop_to_finished_ms", round(stop_s * 1000, 1))
    assert finished.args[0].cancelled
    assert not window.player.is_playing or window.player.buffered_seconds() == 0
    assert window.state == "ready" and window.speak_button.isEnabled()
    window.text_edit.setPlainText("Again.")
    with qtbot.waitSignal(window.controller.worker.jobFinished, timeout=60000) as again:
        window.speak_button.click()
    assert again.args[0].error is None and len(again.args[0].pcm) > 0
    window.shutdown()


def test_ui_stays_responsive_while_synthesising(qtbot, data_dir, tiny_v2, tiny_factory):
    # As in the app, loading ends with a warm-up utterance: one-time work (the text normaliser's FST graphs load
    # while holding the GIL for ~0.5 s) happens there, not on the user's first Speak.
    window = make_window(qtbot, data_dir, tiny_factory, player=Player(sd_module=FakeSoundDevice(speed=1.0)),
                         model_dir=tiny_v2, warmup=True)
    ticks: list[float] = []
    timer = QTimer()
    timer.setInterval(10)
    timer.timeout.connect(lambda: ticks.append(time.perf_counter()))
    timer.start()
    qtbot.wait(1000)  # the same timer with the app idle: how busy is this machine anyway?
    idle_p99 = float(np.percentile((np.diff(ticks) - 0.010) * 1000.0, 99))
    _report("ui_timer_10ms_lateness_p99_idle_ms", round(idle_p99, 2))
    if idle_p99 > 20.0:  # a quiet machine idles at ~1-2 ms; above 20 ms it cannot judge a 50 ms bound
        timer.stop()
        window.shutdown()
        pytest.skip(f"this machine is too busy to judge UI latency: idle P99 already {idle_p99:.0f} ms "
                    f"(load average {os.getloadavg()[0]:.1f})")
    ticks.clear()
    window.text_edit.setPlainText(" ".join([LONG_TEXT] * 3))  # long enough to keep the worker busy for seconds
    with qtbot.waitSignal(window.controller.worker.jobFinished, timeout=120000) as finished:
        window.speak_button.click()
    timer.stop()
    assert finished.args[0].error is None and finished.args[0].chunks >= 1
    lateness_ms = (np.diff(ticks) - 0.010) * 1000.0
    p99 = float(np.percentile(lateness_ms, 99))
    _report("ui_timer_10ms_lateness_p99_ms", round(p99, 2))
    _report("ui_timer_10ms_lateness_max_ms", round(float(lateness_ms.max()), 2))
    _report("ui_timer_ticks_during_synthesis", len(ticks))
    _report("tiny_v2_first_audio_ms", round(finished.args[0].first_audio_ms, 1))
    _report("tiny_v2_rtf_cpu", round(finished.args[0].rtf, 3))
    assert len(ticks) > 50, "synthesis was too short to measure anything"
    if p99 >= 50.0:  # the machine again, idle, right after: was it the app or another process?
        ticks.clear()
        timer.start()
        qtbot.wait(1000)
        timer.stop()
        idle_after = float(np.percentile((np.diff(ticks) - 0.010) * 1000.0, 99))
        if idle_after > 20.0:
            window.shutdown()
            pytest.skip(f"the machine became too busy to judge UI latency: idle P99 {idle_after:.0f} ms right after "
                        f"the run (load average {os.getloadavg()[0]:.1f})")
    assert p99 < 50.0, f"10 ms timer lateness P99 {p99:.1f} ms"
    window.shutdown()


def _python_threads() -> int:
    """Threads Python started. A QThread that first runs Python code mid-test shows up as a _DummyThread once and
    stays listed; it is no leak (native threads are counted separately, with process.num_threads())."""
    return sum(1 for t in threading.enumerate() if not isinstance(t, threading._DummyThread))


def test_200_rapid_speak_stop_cycles(qtbot, data_dir, tiny_v2, tiny_factory, tiny_v2_synth):
    player = Player(sd_module=FakeSoundDevice(speed=1.0))
    window = make_window(qtbot, data_dir, tiny_factory, player=player, model_dir=tiny_v2)
    window.text_edit.setPlainText(LONG_TEXT)
    process = psutil.Process()
    wait_idle(qtbot, window)
    threads_before = _python_threads()
    native_before = process.num_threads()
    rng = np.random.default_rng(0)
    start = time.perf_counter()
    for cycle in range(200):
        window.speak()
        qtbot.wait(int(rng.integers(0, 15)))
        window.stop()
    qtbot.waitUntil(lambda: window.controller.pending_jobs == 0, timeout=60000)
    wait_idle(qtbot, window)
    cycles_s = time.perf_counter() - start
    window.player.reap()
    qtbot.waitUntil(lambda: all(not t.is_alive() for t in tiny_v2_synth.live_threads), timeout=30000)
    try:
        qtbot.waitUntil(lambda: _python_threads() <= threads_before, timeout=10000)
    except Exception:
        print("threads left:", [(t.name, t.daemon) for t in threading.enumerate()])
        raise
    _report("speak_stop_200_cycles_s", round(cycles_s, 2))
    _report("speak_stop_python_threads_before_after", [threads_before, _python_threads()])
    _report("speak_stop_native_threads_before_after", [native_before, process.num_threads()])
    _report("speak_stop_streams_open_after", player.open_streams)
    assert player.open_streams == 0
    assert _python_threads() <= threads_before
    assert process.num_threads() <= native_before + 2  # torch/OpenMP pools may settle, but nothing per cycle
    assert window.state == "ready"
    window.text_edit.setPlainText("Still working.")
    with qtbot.waitSignal(window.controller.worker.jobFinished, timeout=60000) as last:
        window.speak_button.click()
    assert last.args[0].error is None and len(last.args[0].pcm) > 0
    window.shutdown()
