"""Stop ends a request stuck in the frontend (a speech-tokenizer ONNX run that never returns), the next request
runs, and the worker thread still ends at shutdown (issue 31: Stop had no effect, every later request waited
forever, and closing aborted). The real SynthWorker and the real tiny Synthesizer; only the speech tokenizer's
run is replaced by one that blocks until the test ends."""

from __future__ import annotations

import threading
import time

import numpy as np
import pytest
import soundfile as sf

from cosydesk.audio.player import Player
from cosydesk.runtime.types import Request
from cosydesk.ui.worker import SynthController
from tests.audio.fake_sd import FakeSoundDevice

STOP_WITHIN_S = 0.5


@pytest.fixture
def stuck_tokenizer(monkeypatch):
    """SpeechTokenizer.tokens blocks (as an ONNX run that never finishes) until the test is over."""
    from cosydesk.frontend import prompt

    entered, release = threading.Event(), threading.Event()

    def never_returns(self, wav16k):
        entered.set()
        release.wait(120)
        raise RuntimeError("released at the end of the test")

    monkeypatch.setattr(prompt.SpeechTokenizer, "tokens", never_returns)
    yield entered
    release.set()


def prompt_wav(path):
    rate = 16000
    t = np.arange(3 * rate) / rate
    sf.write(path, (0.3 * np.sin(2 * np.pi * 180 * t)).astype(np.float32), rate)
    return str(path)


def test_stop_ends_a_request_stuck_in_the_frontend_and_the_next_one_runs(qtbot, tiny_factory, stuck_tokenizer,
                                                                         tmp_path):
    controller = SynthController(tiny_factory, player=Player(sd_module=FakeSoundDevice(speed=50.0)), warmup=False)
    try:
        with qtbot.waitSignal(controller.worker.loaded, timeout=60000):
            controller.load("tiny")
        stuck = controller.speak(Request("你好，世界。", prompt_wav=prompt_wav(tmp_path / "p.wav"),
                                         prompt_text="提示文本。"))
        assert stuck_tokenizer.wait(60), "the request never reached the speech tokenizer"
        with qtbot.waitSignal(controller.worker.jobFinished, timeout=10000) as finished:
            stopped_at = time.perf_counter()
            controller.stop()
        stop_s = time.perf_counter() - stopped_at
        assert finished.args[0].job_id == stuck and finished.args[0].cancelled
        assert stop_s < STOP_WITHIN_S, f"Stop took {stop_s:.2f} s"
        with qtbot.waitSignal(controller.worker.jobFinished, timeout=60000) as finished:
            controller.speak(Request("你好，世界。", speaker="中文女", seed=1))
        result = finished.args[0]
        assert result.error is None and not result.cancelled and len(result.pcm) > 0
    finally:
        assert controller.shutdown(5000), "the worker thread did not end"

