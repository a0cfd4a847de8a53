"""Main window against a fake Synthesizer (same interface as the runtime's): speak, stop, export, history."""

from __future__ import annotations

import time
from pathlib import Path

import numpy as np
import pytest
import soundfile as sf
from PySide6.QtCore import Qt

from tests.support.alsa_capture import capture_path, read_capture
from cosydesk.audio.player import Player
from cosydesk.ui.main_window import PROFILE, SPEAKER, voice_key
from tests.audio.fake_sd import FakeSoundDevice
from tests.ui.fake_synth import FakeSynthesizer, factory
from tests.ui.helpers import make_window, wait_idle


def _expected(window, text, chunks=4, chunk_s=0.2):
    samples = int(chunk_s * 24000)
    return np.concatenate([FakeSynthesizer.expected_pcm(i, samples, len(text) % 3) for i in range(chunks)])


def test_stable_object_names(qtbot, data_dir):
    window = make_window(qtbot, data_dir, factory())
    for name in ("textEdit", "speakButton", "stopButton", "exportButton", "speakerCombo", "styleCombo",
                 "historyList", "telemetryDock"):
        assert window.findChild(object, name) is not None, name
    window.shutdown()


def test_ctrl_enter_speaks_and_audio_reaches_the_device(qtbot, data_dir, fake_model_dir):
    if capture_path() is None:
        pytest.skip("sounddevice was imported before the ALSA capture config was installed")
    pytest.importorskip("sounddevice", exc_type=OSError)
    window = make_window(qtbot, data_dir, factory(), player=Player(), model_dir=fake_model_dir)
    qtbot.keyClicks(window.text_edit, "Hello there")
    with qtbot.waitSignal(window.controller.worker.jobFinished, timeout=10000) as finished:
        qtbot.keyClick(window.text_edit, Qt.Key.Key_Return, Qt.KeyboardModifier.ControlModifier)
    wait_idle(qtbot, window)
    result = finished.args[0]
    expected = _expected(window, "Hello there")
    np.testing.assert_array_equal(result.pcm, expected)
    window.player.close()
    captured = read_capture()
    # The ALSA file device is unpaced: silence fills the gaps between chunks; every sample arrives once, in order.
    np.testing.assert_array_equal(captured[captured != 0], expected[expected != 0])
    assert window.text_edit.toPlainText() == "Hello there"  # Ctrl+Enter did not insert a line break
    window.shutdown()


def test_selection_only_is_spoken(qtbot, data_dir, fake_model_dir):
    made = factory()
    window = make_window(qtbot, data_dir, made, model_dir=fake_model_dir)
    window.text_edit.setPlainText("first part. second part.")
    cursor = window.text_edit.textCursor()
    cursor.setPosition(0)
    cursor.setPosition(11, cursor.MoveMode.KeepAnchor)
    window.text_edit.setTextCursor(cursor)
    with qtbot.waitSignal(window.controller.worker.jobFinished, timeout=10000):
        window.speak_button.click()
    assert made.made[-1].requests[-1].text == "first part."
    window.shutdown()


def test_stop_midway_silences_and_leaves_app_ready(qtbot, data_dir, fake_model_dir):
    fake_sd = FakeSoundDevice(speed=1.0)
    made = factory(chunks=40, delay_s=0.05)
    window = make_window(qtbot, data_dir, made, player=Player(sd_module=fake_sd), model_dir=fake_model_dir)
    window.text_edit.setPlainText("a long text")
    with qtbot.waitSignal(window.controller.worker.chunkReady, timeout=10000):
        window.speak_button.click()
    assert window.stop_button.isEnabled()
    stopped_at = time.perf_counter()
    with qtbot.waitSignal(window.controller.worker.jobFinished, timeout=5000) as finished:
        qtbot.keyClick(window.text_edit, Qt.Key.Key_Escape)
    assert finished.args[0].cancelled
    assert time.perf_counter() - stopped_at < 0.5  # within about one chunk (50 ms here)
    played_at_stop = window.player.frames_played
    qtbot.wait(200)
    assert window.player.frames_played - played_at_stop < 24000 * 0.1  # silent right away
    assert window.state == "ready" and window.speak_button.isEnabled()
    [partial] = window.history.entries()  # what was synthesised until Stop is kept, marked partial
    assert partial.partial and partial.duration_s == round(len(finished.args[0].pcm) / 24000, 3)
    made.made[-1].chunks = 2
    with qtbot.waitSignal(window.controller.worker.jobFinished, timeout=5000) as again:
        window.speak_button.click()
    assert not again.args[0].cancelled and len(again.args[0].pcm) == 2 * 4800
    window.shutdown()


def test_pause_holds_the_audio_and_resume_goes_on(qtbot, data_dir, fake_model_dir):
    """Pause (button or the Pause key) holds playback where it is while synthesis finishes into the queue; Resume
    plays the rest; Stop while paused silences and resets the button; nothing to pause while silent."""
    fake_sd = FakeSoundDevice(speed=1.0)
    made = factory(chunks=6, delay_s=0.01)
    window = make_window(qtbot, data_dir, made, player=Player(sd_module=fake_sd), model_dir=fake_model_dir)
    assert not window.pause_button.isEnabled()
    window.text_edit.setPlainText("a text to pause")
    finished = []
    window.controller.worker.jobFinished.connect(finished.append)
    with qtbot.waitSignal(window.controller.worker.chunkReady, timeout=10000):
        window.speak_button.click()
    qtbot.waitUntil(window.pause_button.isEnabled, timeout=5000)
    window.pause_button.click()
    assert window.player.paused and window.pause_button.isChecked() and window.pause_button.text() == "Resume"
    qtbot.waitUntil(lambda: bool(finished), timeout=10000)  # synthesis is not held by the pause
    assert not finished[0].cancelled
    played = window.player.frames_played
    qtbot.wait(300)
    assert window.player.frames_played == played and window.player.buffered_seconds() > 0.5
    qtbot.keyClick(window.text_edit, Qt.Key.Key_Pause)  # the keyboard's Pause key resumes
    assert not window.player.paused and window.pause_button.text() == "Pause"
    qtbot.waitUntil(lambda: window.player.frames_played > played, timeout=2000)
    window.pause_button.click()
    assert window.player.paused
    window.stop_button.click()
    qtbot.waitUntil(lambda: not window.pause_button.isEnabled(), timeout=5000)
    assert not window.player.paused and not window.pause_button.isChecked()
    window.shutdown()


def test_export_round_trip(qtbot, data_dir, fake_model_dir, tmp_path):
    window = make_window(qtbot, data_dir, factory(), model_dir=fake_model_dir)
    assert not window.export_button.isEnabled()
    window.text_edit.setPlainText("export me")
    with qtbot.waitSignal(window.controller.worker.jobFinished, timeout=10000):
        window.speak_button.click()
    qtbot.waitUntil(lambda: window.last_result is not None)  # exports before then wait for the utterance's end
    for name in ("out.wav", "out.flac"):
        assert window.export_current(tmp_path / name)
        data, rate = sf.read(tmp_path / name, dtype="float32")
        assert rate == 24000
        assert np.abs(data - _expected(window, "export me")).max() <= 1 / 32767
    assert not window.export_current(tmp_path / "missing-folder" / "x.wav")
    assert "does not exist" in window.error_label.text()
    window.shutdown()


def test_history_survives_restart_and_replays(qtbot, data_dir, fake_model_dir, tmp_path):
    window = make_window(qtbot, data_dir, factory(), model_dir=fake_model_dir)
    window.text_edit.setPlainText("remember me")
    with qtbot.waitSignal(window.controller.worker.jobFinished, timeout=10000):
        window.speak_button.click()
    qtbot.waitUntil(lambda: window.history_panel.list.count() == 1)
    window.shutdown()
    window.close()

    fake_sd = FakeSoundDevice(speed=8.0)
    again = make_window(qtbot, data_dir, factory(), player=Player(sd_module=fake_sd), model_dir=fake_model_dir)
    assert again.history_panel.list.count() == 1
    entry = again.history.entries()[0]
    assert entry.text == "remember me" and entry.voice == "中文女"
    assert entry.duration_s == pytest.approx(0.8) and entry.first_audio_ms > 0 and entry.rtf > 0
    item_text = again.history_panel.list.item(0).text()
    assert "remember me" in item_text and "RTF" in item_text
    again.history_panel.list.setCurrentRow(0)
    with qtbot.waitSignal(again.controller.worker.jobFinished, timeout=10000):
        again.history_panel.replay_button.click()
    wait_idle(qtbot, again)
    played = fake_sd.all_played()
    np.testing.assert_array_equal(played[played != 0][:19200], _expected(again, "remember me"))
    assert again.history_panel.export_entry(entry.id, tmp_path / "h.wav")
    assert sf.info(str(tmp_path / "h.wav")).frames == 19200
    again.history_panel.delete_button.click()
    assert again.history_panel.list.count() == 0 and again.history.entries() == []
    again.shutdown()


def test_errors_are_one_clear_message(qtbot, data_dir, fake_model_dir):
    window = make_window(qtbot, data_dir, factory())
    window.text_edit.setPlainText("no model yet")
    window.speak()
    assert "No model is loaded" in window.error_label.text()
    window.load_model(fake_model_dir)
    qtbot.waitUntil(lambda: window.state == "ready")
    window.text_edit.setPlainText("   ")
    window.speak()
    assert "Type something" in window.error_label.text()
    window.text_edit.setPlainText("hi")
    window.speaker_combo.addItem("ghost", voice_key(SPEAKER, "ghost"))
    window.speaker_combo.setCurrentIndex(window.speaker_combo.count() - 1)
    with qtbot.waitSignal(window.controller.worker.jobFinished, timeout=5000):
        window.speak()
    qtbot.waitUntil(lambda: "Unknown speaker 'ghost'" in window.error_label.text())
    assert window.state == "ready" and window.speak_button.isEnabled()
    window.shutdown()


def test_load_failure_is_reported(qtbot, data_dir, fake_model_dir):
    window = make_window(qtbot, data_dir, factory(fail_load="llm.pt is corrupt (truncated)"))
    with qtbot.waitSignal(window.controller.worker.loadFailed, timeout=5000):
        window.load_model(fake_model_dir)
    qtbot.waitUntil(lambda: "llm.pt is corrupt" in window.error_label.text() and window.state == "no_model")
    window.shutdown()


def test_styles_and_free_text_instruct(qtbot, data_dir, fake_model_dir):
    """With a voice profile (a v2 model's styles need prompt audio): presets and free text become the instruct."""
    made = factory()
    window = make_window(qtbot, data_dir, made, model_dir=fake_model_dir)
    t = np.arange(24000 * 4) / 24000
    window.voices.add("Alice", (0.3 * np.sin(2 * np.pi * 200 * t)).astype(np.float32), 24000, "hello from alice")
    window.refresh_voices()
    window.speaker_combo.setCurrentIndex(window.speaker_combo.findData(voice_key(PROFILE, "Alice")))
    assert window.style_combo.isEnabled()
    assert [window.style_combo.itemData(i) for i in range(window.style_combo.count())] == ["", "Happy", "Sad"]
    window.style_combo.setCurrentIndex(1)
    assert window.current_instruct() == "Happy"
    window.style_combo.setEditText("用温柔的语气说")
    assert window.current_instruct() == "用温柔的语气说"
    window.style_combo.setCurrentIndex(0)
    assert window.current_instruct() is None
    window.speed_spin.setValue(1.3)
    assert window.build_request("x").speed == 1.3
    window.shutdown()


def test_voice_profile_becomes_a_prompt_request(qtbot, data_dir, fake_model_dir):
    window = make_window(qtbot, data_dir, factory(), model_dir=fake_model_dir)
    t = np.arange(24000 * 4) / 24000
    pcm = (0.3 * (0.5 + 0.5 * np.sin(2 * np.pi * 3 * t)) * np.sin(2 * np.pi * 200 * t)).astype(np.float32)
    window.voices.add("Alice", pcm, 24000, "hello from alice")
    window.refresh_voices()
    index = window.speaker_combo.findData(voice_key(PROFILE, "Alice"))
    assert index >= 0
    window.speaker_combo.setCurrentIndex(index)
    request = window.build_request("hi")
    assert request.prompt_text == "hello from alice" and request.prompt_wav.endswith("prompt.wav")
    assert request.speaker is None
    window.shutdown()


def test_open_text_file_fills_the_editor_undoably_and_speaks_it(qtbot, data_dir, fake_model_dir, tmp_path,
                                                                monkeypatch):
    """File > Open text… (Ctrl+O): UTF-8 with a bad byte opens (U+FFFD in its place) and is what Speak sends; the
    old text is one Ctrl+Z away; a missing or oversized file changes nothing and says why."""
    from PySide6.QtGui import QKeySequence

    import cosydesk.ui.file_actions as file_actions

    made = factory()
    window = make_window(qtbot, data_dir, made, model_dir=fake_model_dir)
    assert window.open_text_action.shortcut() == QKeySequence(QKeySequence.StandardKey.Open)
    assert window.open_text_action in window.file_menu.actions()
    window.text_edit.setPlainText("typed before")
    path = tmp_path / "chapter.txt"
    path.write_bytes("第一章。Hello ".encode() + b"\xff" + " world.\n".encode())  # one invalid UTF-8 byte
    assert window.open_text_file(path)
    assert window.text_edit.toPlainText() == "第一章。Hello \ufffd world.\n"
    assert "chapter.txt" in window.error_label.text()
    with qtbot.waitSignal(window.controller.worker.jobFinished, timeout=10000):
        window.speak_button.click()
    assert made.made[-1].requests[-1].text == "第一章。Hello \ufffd world.\n"
    window.text_edit.undo()
    assert window.text_edit.toPlainText() == "typed before"

    assert not window.open_text_file(tmp_path / "missing.txt")
    assert "Cannot read" in window.error_label.text() and "missing.txt" in window.error_label.text()
    monkeypatch.setattr(file_actions, "MAX_TEXT_FILE_BYTES", 10)
    assert not window.open_text_file(path)
    assert "split it" in window.error_label.text()
    assert window.text_edit.toPlainText() == "typed before"
    wait_idle(qtbot, window)
    window.shutdown()


def test_open_recent_lists_opened_files_newest_first_and_survives_a_restart(qtbot, data_dir, fake_model_dir,
                                                                          tmp_path):
    """File > Open Recent: files opened (menu, drop or recent) are listed newest first with their full path as
    tip, at most 8; choosing one opens it; one that was deleted says so and leaves the list; Clear Menu empties
    it; a new window with the same settings shows the same list."""
    from cosydesk.ui.recent_files import RECENT_LIMIT

    window = make_window(qtbot, data_dir, factory(), model_dir=fake_model_dir)
    menu = window.recent_menu
    assert menu.menuAction() in window.file_menu.actions() and menu.title() == "Open &Recent"

    def entries():
        menu.refill()
        return [a for a in menu.actions() if a.toolTip() and not a.isSeparator() and a.isEnabled()
                and a.text() != "Clear Menu"]

    menu.refill()
    assert [a.text() for a in menu.actions()] == ["No recent files"] and not menu.actions()[0].isEnabled()
    files = []
    for name in ("a.txt", "b & c.txt"):
        files.append(tmp_path / name)
        files[-1].write_text(f"text of {name}", encoding="utf-8")
        assert window.open_text_file(files[-1])
    assert [a.text() for a in entries()] == ["&1 b && c.txt", "&2 a.txt"]
    assert [a.toolTip() for a in entries()] == [str(files[1]), str(files[0])]

    entries()[1].trigger()  # a.txt again: opens it and moves it to the top
    assert window.text_edit.toPlainText() == "text of a.txt"
    assert [a.toolTip() for a in entries()] == [str(files[0]), str(files[1])]

    files[1].unlink()
    entries()[1].trigger()
    assert "Cannot read" in window.error_label.text() and window.text_edit.toPlainText() == "text of a.txt"
    assert [a.toolTip() for a in entries()] == [str(files[0])]

    for i in range(RECENT_LIMIT + 2):
        path = tmp_path / f"n{i}.txt"
        path.write_text(str(i), encoding="utf-8")
        window.open_text_file(path)
    assert len(entries()) == RECENT_LIMIT and entries()[0].toolTip() == str(tmp_path / f"n{RECENT_LIMIT + 1}.txt")
    wait_idle(qtbot, window)
    window.shutdown()

    again = make_window(qtbot, data_dir, factory())
    again.recent_menu.refill()
    assert [a.toolTip() for a in again.recent_menu.actions()][0] == str(tmp_path / f"n{RECENT_LIMIT + 1}.txt")
    next(a for a in again.recent_menu.actions() if a.text() == "Clear Menu").trigger()
    again.recent_menu.refill()
    assert [a.text() for a in again.recent_menu.actions()] == ["No recent files"]
    again.shutdown()


def test_dropped_files_open_where_they_belong(qtbot, data_dir, fake_model_dir, tmp_path):
    """Dragged from a file manager: a text file onto the editor replaces its text (one Ctrl+Z brings it back), a
    recording onto the window opens a new voice with it loaded, a model folder goes to the model manager and
    loads; two files at once change nothing and say so; a plain text drag still drops into the editor."""
    import shutil

    from PySide6.QtWidgets import QApplication

    from cosydesk.settings import Key
    from cosydesk.ui.model_manager import ModelManagerDialog
    from cosydesk.ui.voice_dialog import VoiceProfileDialog
    from tests.ui.helpers import drag_and_drop

    window = make_window(qtbot, data_dir, factory(), model_dir=fake_model_dir)
    window.text_edit.setPlainText("typed before")
    story = tmp_path / "story.txt"
    story.write_text("从前有座山。\n", encoding="utf-8")
    assert drag_and_drop(window.text_edit.viewport(), [story]) == [True, True, True]
    assert window.text_edit.toPlainText() == "从前有座山。\n" and "story.txt" in window.error_label.text()
    window.text_edit.undo()
    assert window.text_edit.toPlainText() == "typed before"

    assert drag_and_drop(window.text_edit.viewport(), [story, story])[-1]
    assert "one file" in window.error_label.text() and window.text_edit.toPlainText() == "typed before"

    t = np.arange(24000 * 5) / 24000
    speech = (0.3 * (0.5 + 0.5 * np.sin(2 * np.pi * 3 * t)) * np.sin(2 * np.pi * 200 * t)).astype(np.float32)
    sf.write(tmp_path / "Alice.flac", speech, 24000)
    drag_and_drop(window.centralWidget(), [tmp_path / "Alice.flac"])
    dialogs = [w for w in QApplication.topLevelWidgets() if isinstance(w, VoiceProfileDialog) and w.isVisible()]
    assert len(dialogs) == 1 and dialogs[0].pcm is not None and dialogs[0].name_edit.text() == "Alice"
    dialogs[0].reject()

    second = shutil.copytree(fake_model_dir, tmp_path / "SecondModel")
    drag_and_drop(window.centralWidget(), [second])
    managers = [w for w in QApplication.topLevelWidgets() if isinstance(w, ModelManagerDialog) and w.isVisible()]
    assert len(managers) == 1 and "Added" in managers[0].status.text()
    assert str(second) in window.settings.get(Key.EXTRA_MODEL_DIRS)
    qtbot.waitUntil(lambda: window.state == "ready" and window.model is not None
                    and Path(window.model.model_dir) == second, timeout=30000)
    managers[0].reject()

    drag_and_drop(window.text_edit.viewport(), text=" and more")
    assert "and more" in window.text_edit.toPlainText() and "typed before" in window.text_edit.toPlainText()
    window.shutdown()


def test_language_switch_to_chinese_and_back(qtbot, data_dir):
    window = make_window(qtbot, data_dir, factory())
    assert window.set_language("zh_CN") == "zh_CN"
    assert window.speak_button.text() == "朗读"
    assert window.telemetry_dock.windowTitle() == "性能监控"
    window.recent_menu.refill()
    assert window.recent_menu.title() == "最近打开(&R)"
    assert [a.text() for a in window.recent_menu.actions()] == ["没有最近打开的文件"]
    # reading.py translates through window.tr: lupdate files these under no class, build_translations moves them
    assert window.reading.from_cursor_action.text() == "从光标处播放"
    assert window.reading.next_action.toolTip() == "跳到下一句（Alt+→）"
    assert window.set_language("en") == "en"
    assert window.speak_button.text() == "Speak" and window.recent_menu.title() == "Open &Recent"
    assert window.reading.from_cursor_action.text() == "Play from cursor"
    window.shutdown()


def test_no_model_opens_manager_on_default(qtbot, data_dir):
    from cosydesk.settings import Settings
    from cosydesk.ui.app import build_main_window
    from tests.ui.fake_synth import factory as fake_factory

    window = build_main_window(None, settings=Settings.at(data_dir / "s.ini"), synthesizer_factory=fake_factory(),
                               player=Player(sd_module=FakeSoundDevice()), warmup=False)
    qtbot.addWidget(window)
    window.show()
    qtbot.waitUntil(lambda: window.findChild(object, "modelManager") is not None)
    dialog = window.findChild(object, "modelManager")
    qtbot.waitUntil(dialog.isVisible)
    assert dialog.selected_name() == "CosyVoice2-0.5B"
    dialog.close()
    window.shutdown()


def test_worker_signals_are_handled_on_the_ui_thread(qtbot, data_dir):
    """Regression: a lambda connected to a worker-thread signal runs in the worker thread and touches widgets."""
    import threading as _threading

    window = make_window(qtbot, data_dir, factory())
    seen = []
    original = window.show_message

    def recording_show_message(text, is_error=False):
        seen.append(_threading.current_thread() is _threading.main_thread())
        original(text, is_error)

    window.show_message = recording_show_message
    emitter = _threading.Thread(target=lambda: window.controller.worker.audioError.emit("device gone"))
    emitter.start()
    emitter.join()
    qtbot.waitUntil(lambda: "device gone" in window.error_label.text())
    assert seen == [True]
    window.shutdown()


def test_tensorrt_is_labelled_experimental_in_the_backend_menu(qtbot, data_dir):
    """TensorRT never ran on a GPU of ours, so the app says so where it is chosen (auto never picks it)."""
    window = make_window(qtbot, data_dir, factory())
    dialog = window.open_preferences()
    combo = dialog.backend_combo
    labels = {combo.itemData(i): combo.itemText(i) for i in range(combo.count())}
    assert "experimental" in labels["tensorrt"] and "experimental" not in labels["cudagraph"]
    dialog.close()
