"""Settings → Preferences… (item 3): every setting in one dialog, applied at once; engine choices that cannot
work here are disabled with the reason, and changing the engine goes through the window's load path."""

from __future__ import annotations

from PySide6.QtGui import QKeySequence
from PySide6.QtWidgets import QApplication

from cosydesk.settings import Key
from cosydesk.ui import theme
from cosydesk.ui.engine_choices import Capabilities
from tests.ui.fake_synth import factory
from tests.ui.helpers import make_window

NO_GPU = Capabilities(cuda=False, cuda_reason="torch sees no NVIDIA GPU on this computer", tensorrt=False,
                      tensorrt_reason="TensorRT is not installed")
GPU = Capabilities(cuda=True, cuda_reason="", tensorrt=False, tensorrt_reason="TensorRT is not installed",
                   gpu_name="NVIDIA H200")


def test_menu_has_preferences_with_ctrl_comma_and_no_raw_engine_menus(qtbot, data_dir):
    window = make_window(qtbot, data_dir, factory())
    titles = [a.text() for a in window.settings_menu.actions()]
    assert titles == ["Preferences…"] and window.preferences_action.shortcut() == QKeySequence("Ctrl+,")
    assert not hasattr(window, "device_group") and not hasattr(window, "backend_group")
    window.shutdown()


def test_gpu_only_choices_are_disabled_with_the_reason_without_a_gpu(qtbot, data_dir):
    window = make_window(qtbot, data_dir, factory())
    dialog = window.open_preferences(capabilities=NO_GPU)
    for combo, value in ((dialog.device_combo, "cuda"), (dialog.backend_combo, "cudagraph"),
                         (dialog.backend_combo, "tensorrt"), (dialog.precision_combo, "fp16")):
        assert not dialog.choice_enabled(combo, value), value
        item = combo.model().item(combo.findData(value))
        assert "no NVIDIA GPU" in item.toolTip() or "TensorRT" in item.toolTip()
    assert dialog.choice_enabled(dialog.device_combo, "cpu") and dialog.choice_enabled(dialog.backend_combo, "eager")
    assert "unavailable here" in dialog.engine_note.text()
    assert not dialog.set_engine(Key.DEVICE, "cuda")
    assert window.settings.get(Key.DEVICE) == "auto"  # a dead end is never stored
    dialog.close()
    window.shutdown()


def test_cpu_device_disables_gpu_engines_even_with_a_gpu(qtbot, data_dir):
    window = make_window(qtbot, data_dir, factory())
    dialog = window.open_preferences(capabilities=GPU)
    assert dialog.choice_enabled(dialog.backend_combo, "cudagraph")
    assert not dialog.choice_enabled(dialog.backend_combo, "tensorrt")  # not installed
    assert dialog.set_engine(Key.DEVICE, "cpu")
    assert not dialog.choice_enabled(dialog.backend_combo, "cudagraph")
    assert "GPU: NVIDIA H200" in dialog.engine_note.text()
    dialog.close()
    window.shutdown()


def test_engine_change_reloads_through_the_window_and_keeps_the_model_until_then(qtbot, data_dir, fake_model_dir):
    made = factory()
    window = make_window(qtbot, data_dir, made, model_dir=fake_model_dir)
    dialog = window.open_preferences(capabilities=NO_GPU)
    calls = []
    original = window._set_runtime_option
    window._set_runtime_option = lambda key, value: (calls.append((key, value)), original(key, value))
    assert dialog.set_engine(Key.PRECISION, "fp32")
    assert calls == [(Key.PRECISION, "fp32")]
    qtbot.waitUntil(lambda: len(made.made) == 2 and window.model is not None, timeout=10000)
    assert window.settings.get(Key.PRECISION) == "fp32"
    dialog.close()
    window.shutdown()


def test_language_theme_history_and_output_apply_at_once(qtbot, data_dir):
    window = make_window(qtbot, data_dir, factory())
    dialog = window.open_preferences(capabilities=NO_GPU)
    try:
        dialog.theme_combo.setCurrentIndex(dialog.theme_combo.findData("dark"))
        dialog.theme_combo.activated.emit(dialog.theme_combo.currentIndex())
        assert theme.current_theme().name == "dark" and window.settings.get(Key.THEME) == "dark"
        assert QApplication.instance().palette().base().color().name() == theme.DARK.base
        qtbot.waitUntil(lambda: window.telemetry_dock.plot_colours[0] == theme.DARK.base, timeout=3000)
        dialog.history_spin.setValue(40)
        assert window.history.max_entries == 40 and window.settings.get(Key.HISTORY_SIZE) == 40
        dialog.language_combo.setCurrentIndex(dialog.language_combo.findData("zh_CN"))
        dialog.language_combo.activated.emit(dialog.language_combo.currentIndex())
        assert window.speak_button.text() == "朗读"
        qtbot.waitUntil(lambda: dialog.windowTitle() == "首选项" and dialog.tabs.tabText(2) == "引擎", timeout=3000)
        assert dialog.output_combo.itemData(0) == ""  # the system default, then PortAudio's devices
        last = dialog.output_combo.count() - 1
        dialog.output_combo.setCurrentIndex(last)
        dialog.output_combo.activated.emit(last)
        name = dialog.output_combo.itemData(last)
        assert window.settings.get(Key.AUDIO_DEVICE) == name and window.player.device == (name or None)
    finally:
        window.set_language("en")
        theme.apply_theme("light")
        dialog.close()
        window.shutdown()


def test_export_defaults_are_stored_and_a_bad_folder_is_refused(qtbot, data_dir, tmp_path):
    window = make_window(qtbot, data_dir, factory())
    dialog = window.open_preferences(capabilities=NO_GPU)
    dialog.format_combo.setCurrentIndex(dialog.format_combo.findData("mp3"))
    dialog.format_combo.activated.emit(dialog.format_combo.currentIndex())
    assert window.settings.get(Key.EXPORT_FORMAT) == "mp3"
    dialog.folder_edit.setText(str(tmp_path))
    dialog.folder_edit.editingFinished.emit()
    assert window.settings.get(Key.EXPORT_DIR) == str(tmp_path)
    dialog.folder_edit.setText(str(tmp_path / "nope"))
    dialog.folder_edit.editingFinished.emit()
    assert window.settings.get(Key.EXPORT_DIR) == str(tmp_path) and "is not a folder" in dialog.folder_edit.toolTip()
    dialog.close()
    window.shutdown()


def test_other_parts_can_add_a_section(qtbot, data_dir):
    from PySide6.QtWidgets import QCheckBox

    window = make_window(qtbot, data_dir, factory())
    dialog = window.open_preferences(capabilities=NO_GPU)
    index = dialog.add_section("Serve other apps", QCheckBox("Serve"), "serveSection")
    assert dialog.tabs.tabText(index) == "Serve other apps" and dialog.pages["serveSection"] is dialog.tabs.widget(index)
    dialog.close()
    window.shutdown()


def test_voice_recording_limit_applies_to_the_next_recording(qtbot, data_dir):
    """Preferences' "Voice recordings up to" is how long New voice… records before it stops by itself."""
    import numpy as np

    window = make_window(qtbot, data_dir, factory())
    dialog = window.open_preferences(capabilities=NO_GPU)
    dialog.prompt_spin.setValue(8)
    assert window.settings.get(Key.VOICE_PROMPT_MAX_S) == 8.0
    dialog.close()
    made = []

    class Recorder:
        def __init__(self, sample_rate, max_seconds):
            made.append(max_seconds)
            self.sample_rate, self.seconds, self.level = sample_rate, 0.0, 0.1

        def start(self):
            pass

        def stop(self):
            return np.zeros(int(self.sample_rate * self.seconds), np.float32)

    voice = window.open_voice_dialog(modal=False)
    voice._recorder_factory = Recorder
    assert voice.max_seconds == 8.0
    voice.record_button.setChecked(True)
    assert made == [8.0]
    voice._recorder.seconds = 8.0  # the recorder has reached the limit: the next meter tick stops it
    voice._update_meter()
    assert not voice.record_button.isChecked() and voice._recorder is None
    voice.close()
    window.shutdown()
