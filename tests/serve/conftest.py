"""Fixtures of the speech-server tests: one tiny CPU Synthesizer per session, servers on loopback free ports,
the real `openai` client, and Synthesizer proxies that hold a stream at a known point (so tests compare the
order of events instead of wall-clock bounds that a busy 2-core machine could break)."""

from __future__ import annotations

import threading
from contextlib import contextmanager
from pathlib import Path

import numpy as np
import pytest

openai = pytest.importorskip("openai")

from cosydesk.audio.profiles import VoiceProfileStore  # noqa: E402
from cosydesk.serve.app import create_app  # noqa: E402
from cosydesk.serve.config import ServeConfig  # noqa: E402
from cosydesk.serve.engine import SpeechEngine  # noqa: E402
from cosydesk.serve.runner import ServerThread  # noqa: E402

# One sentence, one chunk on the tiny v2 model; and a text of several streaming chunks.
SHORT_TEXT = "Hello there."
LONG_TEXT = "今天天气很好，我们去公园散步吧。" * 4
PROFILE_NAME = "My voice"


@pytest.fixture(scope="session")
def tiny_synth(tiny_v2_dir):
    from cosydesk.runtime import Synthesizer

    return Synthesizer(tiny_v2_dir, device="cpu")


@pytest.fixture(scope="session")
def voices_dir(tmp_path_factory) -> Path:
    """A voice-profile folder holding one saved profile (a synthetic, speech-like prompt)."""
    folder = tmp_path_factory.mktemp("voices")
    rate = 16000
    t = np.arange(4 * rate) / rate
    pcm = (0.3 * (0.5 + 0.5 * np.sin(2 * np.pi * 3 * t)) * np.sin(2 * np.pi * 180 * t)).astype(np.float32)
    VoiceProfileStore(folder).add(PROFILE_NAME, pcm, rate, "This is my own voice, recorded for the test.")
    return folder


class SynthProxy:
    """The real Synthesizer, with stream() open to hooks (everything else is delegated)."""

    def __init__(self, synth) -> None:
        self._synth = synth

    def __getattr__(self, name):
        return getattr(self._synth, name)

    def stream(self, request, cancel=None):
        yield from self._synth.stream(request, cancel=cancel)


class HoldAfterFirstChunk(SynthProxy):
    """After a stream's first chunk, wait until `release` is set or the request is cancelled (60 s at most);
    `resumed_by` says which came first ("release", "cancel" or "timeout")."""

    def __init__(self, synth) -> None:
        super().__init__(synth)
        self.release = threading.Event()
        self.holding = threading.Event()
        self.resumed_by: list[str] = []
        self.chunks_after_resume: list[int] = []

    def stream(self, request, cancel=None):
        cancel = cancel or threading.Event()
        after = None
        for index, chunk in enumerate(self._synth.stream(request, cancel=cancel)):
            if after is not None:
                after += 1
            yield chunk
            if index == 0:
                self.holding.set()
                for _ in range(6000):
                    if self.release.is_set() or cancel.is_set():
                        break
                    cancel.wait(0.01)
                self.resumed_by.append("release" if self.release.is_set() else "cancel" if cancel.is_set() else "timeout")
                after = 0
        self.chunks_after_resume.append(after or 0)


class HoldBeforeStart(SynthProxy):
    """Every stream waits for `release` before synthesising (keeps the engine busy on purpose)."""

    def __init__(self, synth) -> None:
        super().__init__(synth)
        self.release = threading.Event()
        self.started = threading.Event()

    def stream(self, request, cancel=None):
        self.started.set()
        self.release.wait(60)
        yield from self._synth.stream(request, cancel=cancel)


@contextmanager
def running_server(synth, max_waiting: int = 16, **config_fields):
    """(ServerThread, SpeechEngine) on a free loopback port."""
    engine = SpeechEngine(synth, max_waiting=max_waiting, keep_finished=100_000)
    config = ServeConfig(model_id="tiny-v2", **config_fields)
    server = ServerThread(create_app(engine, config)).start()
    try:
        yield server, engine
    finally:
        server.stop()
        engine.close()


def openai_client(server, api_key: str = "not-needed", **kwargs):
    return openai.OpenAI(base_url=server.base_url, api_key=api_key, max_retries=0, timeout=120, **kwargs)


@pytest.fixture
def server(tiny_synth, voices_dir):
    with running_server(tiny_synth, voices_dir=voices_dir) as pair:
        yield pair


@pytest.fixture
def client(server):
    with openai_client(server[0]) as c:
        yield c
