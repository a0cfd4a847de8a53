"""What a newcomer sees while the first model loads (issue 26): the title names CosyDesk once, loading shows its
stage (a busy bar while the weights are read, a percentage once a stage reports one) on one status line, and
Speak stays disabled — saying why — until the model is there."""

from __future__ import annotations

import threading

from PySide6.QtWidgets import QApplication

from cosydesk.ui.app import create_application
from tests.ui.fake_synth import FakeSynthesizer
from tests.ui.helpers import make_window


def _gated_factory(gates: list[threading.Event]):
    """Reports each loading stage, then waits for the test to open that stage's gate."""
    stages = (("Loading model", 0.0), ("Loading text frontend", 0.7), ("Ready", 1.0))

    def build(model_dir, progress=None, **options):
        for (stage, fraction), gate in zip(stages, gates):
            progress(stage, fraction)
            assert gate.wait(30), "the test never released this loading stage"
        return FakeSynthesizer(model_dir)

    return build


def test_the_title_names_the_app_once(qtbot, data_dir):
    app = create_application()
    window = make_window(qtbot, data_dir, None)
    # Qt shows "<window title> — <application display name>"; the title itself must not repeat the name.
    assert app.applicationDisplayName() == "CosyDesk"
    assert "CosyDesk" not in window.windowTitle() and window.windowTitle() == "Local speech synthesis"
    window.set_language("zh_CN")
    assert window.windowTitle() == "本地语音合成"
    window.set_language("en")
    window.shutdown()


def test_loading_shows_its_stage_on_one_line_and_speak_waits_for_the_model(qtbot, data_dir, fake_model_dir):
    gates = [threading.Event() for _ in range(3)]
    window = make_window(qtbot, data_dir, _gated_factory(gates))
    window.resize(700, 500)
    window.text_edit.setPlainText("Hello there")
    assert not window.speak_button.isEnabled() and "Load a model first" in window.speak_button.toolTip()
    try:
        window.load_model(fake_model_dir)
        qtbot.waitUntil(lambda: window.load_stage == "Loading model")
        bar = window.load_progress
        assert bar.isVisible() and (bar.minimum(), bar.maximum()) == (0, 0), "reading weights: a busy bar, not 0 %"
        status = window.status_state.text()
        assert status == f"Loading {fake_model_dir.name}: Loading model…" and "0%" not in status
        assert not window.speak_button.isEnabled() and not window.speak_action.isEnabled()
        assert window.speak_button.toolTip() == "Speak is available once the model has loaded"
        window.speak_action.trigger()  # Ctrl+Enter while loading does nothing either
        assert window.current_job is None and window._pending_request is None

        gates[0].set()
        qtbot.waitUntil(lambda: window.load_stage == "Loading text frontend")
        assert (bar.maximum(), bar.value()) == (100, 70)
        assert window.status_state.text().endswith("Loading text frontend… 70%")

        # A stage name longer than the status bar: one line, elided, the whole text in the tooltip.
        window._on_load_progress("Capturing the flow decoder for every shape bucket of the streaming path " * 3, 0.8)
        label = window.status_state
        assert "\n" not in label.text() and not label.wordWrap()
        assert label.shown_text().endswith("…") and label.toolTip() == label.text()
        assert label.height() <= 2 * label.fontMetrics().height()
    finally:
        for gate in gates:
            gate.set()
    qtbot.waitUntil(lambda: window.model is not None and window.state == "ready", timeout=10000)
    assert not window.load_progress.isVisible()
    assert window.speak_button.isEnabled() and window.speak_action.isEnabled()
    assert window.speak_button.toolTip() == "Speak the selection or the whole text (Ctrl+Enter)"
    assert window.speak() is not None
    window.shutdown()


def test_a_failed_load_leaves_speak_disabled_with_the_reason(qtbot, data_dir, fake_model_dir):
    def broken(model_dir, progress=None, **options):
        raise ValueError("llm.pt does not open")

    window = make_window(qtbot, data_dir, broken)
    window.load_model(fake_model_dir)
    qtbot.waitUntil(lambda: window.state == "no_model")
    assert not window.speak_button.isEnabled() and "Load a model first" in window.speak_button.toolTip()
    assert QApplication.instance() is not None
    window.shutdown()
