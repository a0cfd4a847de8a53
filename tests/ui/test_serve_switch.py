"""The "Serve other apps" switch (issue 30, item 4): the speech API inside the app, on the model the app holds.

The real `openai` client talks to the in-app server while the app's own speech runs on the same tiny model; the
model's stream is watched from inside the gate, so the test compares the order of events (who synthesised when),
not wall-clock bounds.
"""

from __future__ import annotations

import io
import socket
import threading
import wave

import numpy as np
import pytest

from cosydesk.settings import Key
from cosydesk.ui.desktop import DesktopIntegration, speak_text
from tests.ui.fake_synth import factory as fake_factory
from tests.ui.helpers import make_window, wait_idle

openai = pytest.importorskip("openai")


class Watched:
    """The real Synthesizer; each stream logs (thread name, "enter"/"exit"); API streams can be held after their
    first chunk until `release` is set."""

    def __init__(self, synth) -> None:
        self._synth = synth
        self.events: list[tuple[str, str]] = []
        self.hold_api = threading.Event()
        self.holding = threading.Event()
        self.release = threading.Event()

    def __getattr__(self, name):
        return getattr(self._synth, name)

    def stream(self, request, cancel=None):
        who = "api" if threading.current_thread().name == "cosydesk-serve-engine" else "app"  # or the QThread
        self.events.append((who, "enter"))
        try:
            for index, chunk in enumerate(self._synth.stream(request, cancel)):
                yield chunk
                if index == 0 and self.hold_api.is_set() and who == "api":
                    self.holding.set()
                    self.release.wait(60)
        finally:
            self.events.append((who, "exit"))


@pytest.fixture
def watched(tiny_v2_synth):
    return Watched(tiny_v2_synth)


def _loaded_window(qtbot, data_dir, tiny_v2, synth_or_factory):
    build = synth_or_factory if callable(synth_or_factory) else (lambda model_dir, progress=None, **o: synth_or_factory)
    window = make_window(qtbot, data_dir, build, model_dir=tiny_v2)
    window.settings.set(Key.SERVE_PORT, 0)  # any free port
    return window


def test_in_app_server_answers_openai_and_takes_turns_with_the_app(qtbot, data_dir, tiny_v2, watched):
    window = _loaded_window(qtbot, data_dir, tiny_v2, watched)
    integration = DesktopIntegration(window)
    switch = integration.serve
    assert switch.state == "off" and not integration.status_api.isVisible()
    switch.action.trigger()  # Tools > Serve other apps (the same action as the tray's)
    qtbot.waitUntil(lambda: switch.state == "on", timeout=60000)
    assert window.settings.get(Key.SERVE_ENABLED) is True
    assert switch.engine.synth.inner is watched  # the model the app holds: no second engine
    assert integration.status_api.text().startswith("API: on http://127.0.0.1:")

    client = openai.OpenAI(base_url=switch.url, api_key="local", max_retries=0, timeout=120)
    assert "中文女" in {voice["id"] for voice in client.get("/audio/voices", cast_to=object)["data"]}
    wav = client.audio.speech.create(model="tts-1", voice="中文女", input="Hello there.", response_format="wav")
    with wave.open(io.BytesIO(wav.read())) as reader:
        assert reader.getframerate() == 24000 and reader.getnframes() > 0

    # An API request holds the model (after its first chunk); the app's own speech waits for its turn.
    watched.events.clear()
    watched.hold_api.set()
    result: dict = {}

    def api_request() -> None:
        response = client.audio.speech.create(model="tts-1", voice="中文女", input="今天天气很好，我们去公园散步吧。",
                                              response_format="pcm")
        result["pcm"] = np.frombuffer(response.read(), dtype=np.int16)

    thread = threading.Thread(target=api_request)
    thread.start()
    assert watched.holding.wait(60)
    qtbot.waitUntil(lambda: "API: 1 request" in integration.status_api.text(), timeout=5000)
    assert "OpenAI/Python" in integration.status_api.text()  # the last client
    with qtbot.waitSignal(window.controller.worker.jobFinished, timeout=120000) as finished:
        speak_text(window, "Hello from the app.")
        qtbot.waitUntil(lambda: window.controller.worker.gate.waiting() == 1, timeout=10000)
        assert [who for who, what in watched.events if what == "enter"] == ["api"]
        watched.release.set()
        thread.join(120)
    assert finished.args[0].error is None and len(finished.args[0].pcm) > 0
    assert len(result["pcm"]) > 0
    assert watched.events == [("api", "enter"), ("api", "exit"), ("app", "enter"), ("app", "exit")]
    wait_idle(qtbot, window)
    qtbot.waitUntil(lambda: window.history_panel.list.count() == 1)  # the app's speech went to its history

    port = int(switch.url.rsplit(":", 1)[1].split("/")[0])
    switch.action.trigger()  # off
    qtbot.waitUntil(lambda: switch.state == "off", timeout=20000)
    assert window.settings.get(Key.SERVE_ENABLED) is False and not integration.status_api.isVisible()
    with pytest.raises(OSError):
        socket.create_connection(("127.0.0.1", port), timeout=2).close()
    window.close()


def test_the_switch_follows_the_model_and_is_restored_at_start(qtbot, data_dir, fake_model_dir, tmp_path):
    build = fake_factory()
    window = make_window(qtbot, data_dir, build, model_dir=fake_model_dir)
    window.settings.set(Key.SERVE_PORT, 0)
    window.settings.set(Key.SERVE_ENABLED, True)  # as a previous session left it
    integration = DesktopIntegration(window)
    switch = integration.serve
    assert switch.action.isChecked()
    qtbot.waitUntil(lambda: switch.state == "on", timeout=30000)
    first_engine = switch.engine
    assert first_engine.synth.inner is build.made[-1]
    other = tmp_path / "OtherModel"
    other.mkdir()
    for child in fake_model_dir.rglob("*"):
        target = other / child.relative_to(fake_model_dir)
        target.mkdir() if child.is_dir() else target.write_bytes(child.read_bytes())
    window.load_model(other)  # the server stops before the old model goes, and starts on the new one
    qtbot.waitUntil(lambda: switch.state == "on" and switch.engine is not first_engine, timeout=30000)
    assert switch.engine.synth.inner is build.made[-1] and len(build.made) == 2
    assert switch.model_dir == str(other)
    window.close()
    assert switch.engine is None and switch.server is None  # closing the window stopped it


def test_a_busy_port_or_an_open_address_without_key_turns_the_switch_off(qtbot, data_dir, fake_model_dir):
    window = make_window(qtbot, data_dir, fake_factory(), model_dir=fake_model_dir)
    integration = DesktopIntegration(window)
    switch = integration.serve
    taken = socket.socket()
    taken.bind(("127.0.0.1", 0))
    taken.listen(1)
    try:
        window.settings.set(Key.SERVE_PORT, taken.getsockname()[1])
        with qtbot.waitSignal(switch.failed, timeout=30000) as failed:
            switch.set_enabled(True)
        assert "cannot listen on 127.0.0.1" in failed.args[0]
        assert not switch.action.isChecked() and window.settings.get(Key.SERVE_ENABLED) is False
        assert "Serve other apps: cannot listen" in window.error_label.text()
    finally:
        taken.close()
    window.settings.set(Key.SERVE_HOST, "0.0.0.0")
    with qtbot.waitSignal(switch.failed, timeout=5000) as failed:
        switch.set_enabled(True)
    assert "other computers" in failed.args[0] and "API key" in failed.args[0]
    assert switch.state == "off" and switch.server is None
    window.settings.set(Key.SERVE_PORT, 70000)
    window.settings.set(Key.SERVE_HOST, "127.0.0.1")
    with qtbot.waitSignal(switch.failed, timeout=5000) as failed:
        switch.set_enabled(True)
    assert "70000" in failed.args[0]
    window.close()


def test_preferences_local_api_page_is_the_same_switch(qtbot, data_dir, fake_model_dir):
    """Preferences > Local API shows the switch the tray and Tools menu show: turning it on there starts the
    server; turning it off in the menu unticks it there; port and key are stored."""
    window = make_window(qtbot, data_dir, fake_factory(), model_dir=fake_model_dir)
    window.settings.set(Key.SERVE_PORT, 0)
    integration = DesktopIntegration(window)
    switch = integration.serve
    dialog = window.open_preferences()
    page = dialog.pages["servePage"]
    assert dialog.tabs.tabText(dialog.tabs.indexOf(page)) == "Local API"
    assert not page.enabled_box.isChecked() and page.port_spin.value() == 1  # 0 (any free port) shown as 1..65535
    window.settings.set(Key.SERVE_PORT, 0)  # keep "any free port" for this test's server
    page.enabled_box.setChecked(True)
    qtbot.waitUntil(lambda: switch.state == "on", timeout=30000)
    assert switch.action.isChecked() and window.settings.get(Key.SERVE_ENABLED) is True
    switch.action.trigger()  # off from the Tools menu / tray
    qtbot.waitUntil(lambda: switch.state == "off", timeout=20000)
    assert not page.enabled_box.isChecked()
    page.port_spin.setValue(8123)
    page.key_edit.setText("secret")
    page.key_edit.editingFinished.emit()
    assert window.settings.get(Key.SERVE_PORT) == 8123 and window.settings.get(Key.SERVE_API_KEY) == "secret"
    dialog.close()
    window.close()
