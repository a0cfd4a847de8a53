"""Exports from the window and the history (D1, D9), partial utterances kept, history rows, search, delete with
undo and Enter (D13, D14), against the real worker thread and player with a fake synthesizer."""

from __future__ import annotations

import numpy as np
import pytest
import soundfile as sf
from PySide6.QtCore import Qt

from cosydesk.ui.main_window import PROFILE, voice_key
from cosydesk.audio.player import Player
from cosydesk.audio.utterance_export import export_file_stem
from cosydesk.settings import Key
from tests.audio.fake_sd import FakeSoundDevice
from tests.ui.fake_synth import factory
from tests.ui.helpers import make_window, wait_idle
from tests.ui.save_dialog import answer_save_dialog


def _speak(qtbot, window, text):
    window.text_edit.setPlainText(text)
    with qtbot.waitSignal(window.controller.worker.jobFinished, timeout=20000) as finished:
        window.speak_button.click()
    result = finished.args[0]
    qtbot.waitUntil(lambda: window.exports.finished_job == result.job_id, timeout=5000)  # the window has seen it
    return result


def test_ctrl_s_while_speaking_exports_the_utterance_being_spoken_not_the_previous(qtbot, data_dir, fake_model_dir,
                                                                                tmp_path):
    """D1: a short utterance, then a long one; Ctrl+S during the long one. The file must hold the long one
    (written once its synthesis is complete) and "Saved" appears only then."""
    made = factory(chunks=3, delay_s=0.01)
    window = make_window(qtbot, data_dir, made, player=Player(sd_module=FakeSoundDevice(speed=4.0)),
                         model_dir=fake_model_dir)
    earlier = _speak(qtbot, window, "short one")
    wait_idle(qtbot, window)
    made.made[-1].chunks, made.made[-1].delay_s = 30, 0.03
    window.text_edit.setPlainText("a long text that is still being spoken")
    finished = []
    window.controller.worker.jobFinished.connect(finished.append)
    with qtbot.waitSignal(window.controller.worker.chunkReady, timeout=10000):
        window.speak_button.click()
    target = tmp_path / "now.wav"
    answer_save_dialog(str(target))
    qtbot.keyClick(window.text_edit, Qt.Key.Key_S, Qt.KeyboardModifier.ControlModifier)
    assert not finished and not target.exists()  # still synthesising: nothing written, nothing claimed
    assert "Saved" not in window.error_label.text()
    qtbot.waitUntil(lambda: target.exists(), timeout=20000)
    assert finished and not finished[0].cancelled
    audio, rate = sf.read(target, dtype="float32")
    assert rate == 24000 and len(audio) == len(finished[0].pcm) == 30 * 4800 != len(earlier.pcm)
    np.testing.assert_allclose(audio, finished[0].pcm, atol=1 / 32767 + 1e-6)
    assert window.error_label.text() == f"Saved {target}"
    window.shutdown()


def test_stop_keeps_what_was_synthesised_marked_partial_and_export_saves_it(qtbot, data_dir, fake_model_dir,
                                                                           tmp_path):
    made = factory(chunks=40, delay_s=0.03)
    window = make_window(qtbot, data_dir, made, player=Player(sd_module=FakeSoundDevice(speed=4.0)),
                         model_dir=fake_model_dir)
    window.text_edit.setPlainText("a long text to stop")
    with qtbot.waitSignal(window.controller.worker.chunkReady, timeout=10000):
        window.speak_button.click()
    qtbot.wait(150)
    assert window.export_current(tmp_path / "stopped.flac")  # queued until the utterance ends
    with qtbot.waitSignal(window.controller.worker.jobFinished, timeout=5000) as stopped:
        window.stop_button.click()
    result = stopped.args[0]
    assert result.cancelled and 0 < len(result.pcm) < 40 * 4800
    # the window keeps the take from its own jobFinished slot, which may run just after this test's (~10 ms)
    qtbot.waitUntil(lambda: bool(window.history.entries()), timeout=5000)
    [entry] = window.history.entries()
    assert entry.partial and entry.duration_s == round(len(result.pcm) / 24000, 3)
    assert "partial" in window.history_panel.describe(entry)
    audio, _ = sf.read(tmp_path / "stopped.flac", dtype="float32")
    assert len(audio) == len(result.pcm) and "partial" in window.error_label.text()
    window.shutdown()


def test_save_dialog_adds_the_filters_ending_remembers_the_folder_and_names_files_after_the_text(
        qtbot, data_dir, fake_model_dir, tmp_path):
    """D9: a name without ending under the FLAC filter gives name.flac; the next dialog opens in that folder;
    window and history suggest the same name for the same text."""
    window = make_window(qtbot, data_dir, factory(), model_dir=fake_model_dir)
    text = "Hello there: a/b test?\nSecond line"
    _speak(qtbot, window, text)
    folder = tmp_path / "exports"
    folder.mkdir()
    seen = []
    answer_save_dialog(str(folder / "no-ending"), "FLAC audio (*.flac)", seen)
    window.export_action.trigger()
    assert (folder / "no-ending.flac").is_file(), window.error_label.text()
    assert sf.info(str(folder / "no-ending.flac")).format == "FLAC"
    assert seen[0][1] == export_file_stem(text) + ".wav" == "Hello there a b test Second line.wav"
    assert window.settings.get(Key.EXPORT_FOLDER) == str(folder) and window.settings.get(Key.EXPORT_FORMAT) == "flac"
    window.history_panel.list.setCurrentRow(0)
    answer_save_dialog("from-history", "MP3 audio (*.mp3)", seen)
    window.history_panel.export_button.click()
    assert seen[1] == (str(folder), export_file_stem(text) + ".flac")  # same folder, same name, last format
    assert sf.info(str(folder / "from-history.mp3")).format == "MP3"
    window.shutdown()


def test_history_rows_search_delete_undo_and_enter(qtbot, data_dir, fake_model_dir):
    window = make_window(qtbot, data_dir, factory(), model_dir=fake_model_dir)
    # a style needs a voice profile on this (v2-like) model: a built-in speaker disables Style (D5)
    t = np.arange(24000 * 4) / 24000
    window.voices.add("Alice", (0.3 * np.sin(2 * np.pi * 200 * t)).astype(np.float32), 24000, "hello from alice")
    window.refresh_voices()
    window.speaker_combo.setCurrentIndex(window.speaker_combo.findData(voice_key(PROFILE, "Alice")))
    window.speed_spin.setValue(1.3)
    window.style_combo.setCurrentIndex(window.style_combo.findData("Happy"))
    assert window.current_instruct() == "Happy"
    _speak(qtbot, window, "Roses are red,\n  violets are blue,\nsugar is sweet")
    _speak(qtbot, window, "Another entry")
    panel = window.history_panel
    assert len(window.history.entries()) == 2, window.error_label.text()
    lines = panel.describe(window.history.entries()[1]).split("\n")
    # D13: the text's own lines kept (two of them, "…" for the rest) and every detail on the line below
    assert lines[:2] == ["Roses are red,", "violets are blue, …"]
    assert lines[2].startswith("Alice · Happy · FakeModel · 1.3× · 0.8 s · first audio ") and " ms · RTF " in lines[2]
    assert panel.list.sizeHintForRow(1) > panel.list.sizeHintForRow(0)  # the row is tall enough for its lines
    # typing in the search box reads no entry again (the casefolded text is kept per row at reload)
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(panel.store, "get", lambda *_a: pytest.fail("the search read an entry on a keystroke"))
        panel.search_edit.setText("VIOLETS")
        assert panel.apply_filter() == 1 and panel.list.item(0).isHidden()
        panel.search_edit.setText("fakemodel ROSES happy")  # model and style are searched with the text
        assert panel.apply_filter() == 1
    panel.search_edit.setText("")
    # D14: Del removes the row, the Undo bar (and Ctrl+Z) bring it back with its audio
    panel.list.setFocus()
    panel.list.setCurrentRow(1)
    deleted_id = panel.current_id()
    pcm_before, _ = window.history.audio(deleted_id)
    qtbot.keyClick(panel.list, Qt.Key.Key_Delete)
    assert [e.id for e in window.history.entries()] != [] and deleted_id not in [e.id for e in window.history.entries()]
    assert panel.undo_bar.isVisible() and "Roses are red," in panel.undo_label.text()
    panel.undo_button.click()
    assert [e.id for e in window.history.entries()][1] == deleted_id and panel.current_id() == deleted_id
    np.testing.assert_array_equal(window.history.audio(deleted_id)[0], pcm_before)
    qtbot.keyClick(panel.list, Qt.Key.Key_Delete)
    qtbot.keyClick(panel.list, Qt.Key.Key_Z, Qt.KeyboardModifier.ControlModifier)
    assert deleted_id in [e.id for e in window.history.entries()]
    # Enter replays the selected row
    with qtbot.waitSignal(panel.replayRequested, timeout=2000) as replay:
        qtbot.keyClick(panel.list, Qt.Key.Key_Return)
    assert replay.args == [deleted_id]
    qtbot.keyClick(panel.list, Qt.Key.Key_Delete)
    window.shutdown()  # deletes for good what could still be undone
    assert not list((data_dir / "history").glob(".deleted-*"))


def test_an_older_index_without_the_new_fields_still_loads(tmp_path):
    import json

    from cosydesk.ui.history import HistoryStore

    root = tmp_path / "history"
    root.mkdir()
    sf.write(root / "old.wav", np.zeros(2400, np.float32), 24000, subtype="FLOAT")
    sf.write(root / "bad.wav", np.zeros(2400, np.float32), 24000, subtype="FLOAT")
    old = {"id": "old", "created": 1.0, "text": "an old one", "voice": "v", "style": "", "model": "m",
           "duration_s": 0.1, "first_audio_ms": 40.0, "rtf": 0.2, "sample_rate": 24000, "file": "old.wav"}
    bad = {**old, "id": "bad", "file": "bad.wav", "partial": "yes"}
    (root / "index.json").write_text(json.dumps([old, bad]))
    store = HistoryStore(root)
    [entry] = store.entries()
    assert entry.speed is None and entry.partial is False and entry.sentences is None
    assert [(r.start, r.end, r.text_start, r.text_end) for r in entry.sentence_ranges] == [(0, 2400, 0, 10)]
    assert "'partial' is 'yes'" in store.problems[0]
