"""D20: the voice-profile manager lists saved voices and previews, renames, re-records and deletes them."""

from __future__ import annotations

import numpy as np
import soundfile as sf

from cosydesk.audio.profiles import VoiceProfileStore
from cosydesk.ui.main_window import PROFILE, voice_key
from cosydesk.ui.voice_manager import VoiceManagerDialog
from tests.ui.fake_synth import factory
from tests.ui.helpers import make_window, wait_idle


def _speech(seconds: float, rate: int = 24000, pitch: float = 180.0) -> np.ndarray:
    t = np.arange(int(seconds * rate)) / rate
    envelope = 0.5 + 0.5 * np.sin(2 * np.pi * 3 * t)
    return (0.3 * envelope * np.sin(2 * np.pi * pitch * t)).astype(np.float32)


def test_rename_rerecord_delete_and_reserved_names(qtbot, tmp_path):
    store = VoiceProfileStore(tmp_path / "voices")
    store.add("Alice", _speech(4), 24000, "hello, this is Alice")
    store.add("Bob", _speech(5), 24000, "hello, this is Bob")
    dialog = VoiceManagerDialog(store, reserved_names=("中文女",))
    qtbot.addWidget(dialog)
    assert [dialog.list.item(r).data(0x0100) for r in range(dialog.list.count())] == ["Alice", "Bob"]
    assert "4.0 s" in dialog.list.item(0).text() and "hello, this is Alice" in dialog.list.item(0).text()
    assert not dialog.buttons["preview"].isEnabled()  # no player given
    dialog.list.setCurrentRow(0)
    assert not dialog.rename_current("Bob") and "exists already" in dialog.problems_label.text()
    assert not dialog.rename_current("中文女") and "exists already" in dialog.problems_label.text()
    assert dialog.rename_current("Alice (studio)")
    assert store.names() == ["Alice (studio)", "Bob"] and dialog.current_name() == "Alice (studio)"
    assert VoiceProfileStore(tmp_path / "voices").get("Alice (studio)").transcript == "hello, this is Alice"
    # re-record: new audio and transcript, same name; a bad recording leaves the old one in place
    editor = dialog.rerecord_current(modal=False)
    assert editor.name_edit.isReadOnly() and editor.name_edit.text() == "Alice (studio)"
    editor.set_audio(np.zeros(24000, np.float32), 24000)
    assert not editor.save() and store.get("Alice (studio)").duration_s == 4.0
    editor.set_audio(_speech(6, pitch=220), 24000)
    editor.transcript_edit.setPlainText("a new recording of Alice")
    assert editor.save()
    again = VoiceProfileStore(tmp_path / "voices").get("Alice (studio)")
    assert again.duration_s == 6.0 and again.transcript == "a new recording of Alice"
    np.testing.assert_allclose(sf.read(again.wav_path, dtype="float32")[0], _speech(6, pitch=220), atol=1 / 32767)
    assert "6.0 s" in dialog.list.currentItem().text()
    dialog.list.setCurrentRow(1)
    assert dialog.delete_current(confirm=False) and store.names() == ["Alice (studio)"]
    assert dialog.list.count() == 1


def test_preview_plays_the_recording_through_the_window_player(qtbot, data_dir, fake_model_dir):
    window = make_window(qtbot, data_dir, factory(), model_dir=fake_model_dir)
    window.voices.add("Carol", _speech(3.5), 24000, "hello, this is Carol")
    dialog = window.open_voice_manager(modal=False)
    qtbot.addWidget(dialog)
    with qtbot.waitSignal(window.controller.worker.jobFinished, timeout=10000):
        dialog.buttons["preview"].click()
    wait_idle(qtbot, window)
    played = window.player._sd.all_played()  # the FakeSoundDevice make_window gives the player
    recorded = sf.read(window.voices.get("Carol").wav_path, dtype="float32")[0]
    start, first = np.flatnonzero(played)[0], np.flatnonzero(recorded)[0]
    np.testing.assert_array_equal(played[start:start + 24000], recorded[first:first + 24000])
    assert dialog.rename_current("Caroline")  # the window's voice list follows
    assert window.speaker_combo.findData(voice_key(PROFILE, "Caroline")) >= 0
    assert window.speaker_combo.findData(voice_key(PROFILE, "Carol")) < 0
    window.shutdown()


def test_voice_profiles_are_marked_with_an_icon_that_draws_without_an_emoji_font(qtbot, data_dir, fake_model_dir):
    """The 🎙 prefix drew as a box where no emoji font is installed: a bundled SVG microphone marks profiles
    instead, the item's text is the plain name, and a choice saved with the old prefix is still found."""
    from cosydesk.settings import Key

    window = make_window(qtbot, data_dir, factory(), model_dir=fake_model_dir)
    window.voices.add("Bob", _speech(4), 24000, "hello from bob")
    window.refresh_voices()
    combo = window.speaker_combo
    index = combo.findData(voice_key(PROFILE, "Bob"))
    assert index >= 0 and combo.itemText(index) == "Bob"
    icon = combo.itemIcon(index)
    assert not icon.isNull()
    image = icon.pixmap(16, 16).toImage()
    opaque = sum(image.pixelColor(x, y).alpha() > 128 for x in range(image.width()) for y in range(image.height()))
    assert opaque > 20  # the SVG was drawn (Qt's SVG plugin is there), not an empty placeholder
    assert "recorded" in combo.itemData(index, 3)  # Qt.ToolTipRole
    speakers = [combo.itemText(i) for i in range(combo.count()) if combo.itemIcon(i).isNull() and combo.itemText(i)]
    assert speakers == ["中文女", "英文男"]  # built-in speakers carry no mark
    window.settings.set(Key.SPEAKER, "🎙 Bob")  # saved before the icon
    combo.setCurrentIndex(-1)
    window.refresh_voices()
    assert window.current_voice() == (PROFILE, "Bob")
    window.shutdown()
