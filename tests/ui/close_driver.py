"""Child process for tests/ui/test_close_exit.py: the real `cosydesk --model DIR` (cli.main, run_app), its window
closed at a chosen moment; prints `closing <time.monotonic()>` just before it closes the window.

    python tests/ui/close_driver.py MODEL_DIR {ready|speaking|loading}

ready:    closed once the model is loaded and warmed up (idle).
speaking: closed while the worker is inside a synthesis step that takes 60 s and ignores Stop.
loading:  closed while the model load takes 60 s (it cannot be interrupted).
frontend: closed while a voice-profile request is inside a speech-tokenizer run that never returns (issue 31:
          closing then aborted with rc -6).
A close that waited for the worker would therefore take a minute.
"""

from __future__ import annotations

import sys
import threading
import time

from PySide6.QtCore import QTimer
from PySide6.QtWidgets import QApplication

from cosydesk import cli
from cosydesk.ui import worker
from cosydesk.ui.app import create_application

BLOCK_S = 60.0
model_dir, moment = sys.argv[1], sys.argv[2]
inside_slow_step = threading.Event()
warmed_up = threading.Event()
real_factory = worker._default_factory


class SlowSecondChunk:
    """The real Synthesizer, except that its second chunk takes BLOCK_S and does not look at the cancel event."""

    def __init__(self, synth) -> None:
        self._synth = synth

    def __getattr__(self, name):
        return getattr(self._synth, name)

    def stream(self, request, cancel=None):
        for index, chunk in enumerate(self._synth.stream(request, cancel)):
            if index == 1 and request.text != worker.WARMUP_TEXT:
                inside_slow_step.set()
                time.sleep(BLOCK_S)
            yield chunk


def factory(model, progress, **options):
    if moment == "loading":
        progress("Loading model", 0.0)
        inside_slow_step.set()
        time.sleep(BLOCK_S)
    return SlowSecondChunk(real_factory(model, progress=progress, **options))


worker._default_factory = factory
if moment == "frontend":
    from cosydesk.frontend import prompt

    def never_returns(self, wav16k):
        inside_slow_step.set()
        threading.Event().wait()

    prompt.SpeechTokenizer.tokens = never_returns
app = create_application([sys.argv[0]])


def poll() -> None:
    from cosydesk.ui.main_window import MainWindow

    windows = [w for w in QApplication.topLevelWidgets() if isinstance(w, MainWindow) and w.isVisible()]
    if not windows:
        return
    window = windows[0]
    if not getattr(window, "_driver_watching", False):
        window._driver_watching = True
        window.controller.worker.warmedUp.connect(lambda seconds: warmed_up.set())
    if moment == "frontend" and warmed_up.is_set() and window.state == "ready" and window.current_job is None:
        import numpy as np
        import soundfile as sf

        from cosydesk.runtime.types import Request

        wav = f"{window.data_dir}/prompt-for-close.wav"
        sf.write(wav, (0.3 * np.sin(np.arange(48000) * 0.07)).astype(np.float32), 16000)
        window.build_request = lambda text: Request(text, prompt_wav=wav, prompt_text="提示文本。")
        window.text_edit.setPlainText("你好，世界。")
        window.speak()
        return
    if moment == "speaking" and warmed_up.is_set() and window.state == "ready" and window.current_job is None:
        window.text_edit.setPlainText("今天天气很好，我们去公园散步吧。明天会下雨，记得带伞。后天是晴天。")
        window.speak()
        return
    ready = moment == "ready" and warmed_up.is_set() and window.state == "ready"
    if ready or (moment != "ready" and inside_slow_step.is_set()):
        timer.stop()
        print(f"closing {time.monotonic():.4f}", flush=True)
        window.close()


timer = QTimer()
timer.timeout.connect(poll)
timer.start(50)
sys.exit(cli.main(["--model", model_dir]))
