"""Reading long texts in the window (issue 29: D2, D3, D4, D5, D6/D7, D8): sentence progress and highlight,
moving by sentence, buffering when synthesis is slower than real time, Speak while speaking, runtime options that
cannot load, a deleted last model, styles an SFT speaker cannot take, Tab out of the editor.

The real SynthController/worker and Player run; the synthesizer is tests/ui/fake_synth.py and the audio device
tests/audio/fake_sd.py (paced at real time where timing matters)."""

from __future__ import annotations

import time

import numpy as np
from PySide6.QtCore import Qt

from cosydesk.audio.player import Player
from cosydesk.settings import Key, Settings
from tests.audio.fake_sd import FakeSoundDevice
from cosydesk.ui.engine_choices import Capabilities
from tests.ui.fake_synth import factory
from tests.ui.helpers import make_window, wait_idle

SENTENCES = ["The first sentence is here.", "A second one follows.", "Then comes the third.",
             "The fourth is short.", "And the fifth ends it."]
TEXT = " ".join(SENTENCES)


def sentence_span(text: str, sentence: str) -> tuple[int, int]:
    start = text.index(sentence)
    return start, start + len(sentence)


def highlighted(window) -> str:
    selections = window.text_edit.extraSelections()
    return selections[0].cursor.selectedText() if selections else ""


def test_long_text_shows_sentence_n_of_n_highlights_it_and_moves_by_sentence(qtbot, data_dir, fake_model_dir):
    made = factory(per_sentence=True, chunks=2, chunk_s=0.15, delay_s=0.01)
    window = make_window(qtbot, data_dir, made, model_dir=fake_model_dir,
                         player=Player(sd_module=FakeSoundDevice(speed=1.0)))
    window.text_edit.setPlainText(TEXT)
    cursor_before = window.text_edit.textCursor().position()
    window.speak()
    # the highlight follows what is heard (the device's position), the label counts the sentences
    qtbot.waitUntil(lambda: window.reading.label.text() == "Sentence 2 of 5", timeout=10000)
    assert highlighted(window) == SENTENCES[1]
    assert window.reading.bar.isVisible() and window.reading.bar.maximum() == len(TEXT)
    assert window.text_edit.textCursor().position() == cursor_before  # the user's cursor stays where it was

    window.reading.next_action.trigger()  # Alt+Right
    qtbot.waitUntil(lambda: made.made[-1].requests[-1].text.startswith(SENTENCES[2]), timeout=5000)
    qtbot.waitUntil(lambda: window.reading.label.text() == "Sentence 3 of 5", timeout=10000)
    assert highlighted(window) == SENTENCES[2]
    window.reading.repeat_action.trigger()  # Ctrl+R
    qtbot.waitUntil(lambda: len(made.made[-1].requests) == 3, timeout=5000)
    assert made.made[-1].requests[-1].text == TEXT[sentence_span(TEXT, SENTENCES[2])[0]:]
    qtbot.waitUntil(lambda: highlighted(window) == SENTENCES[2], timeout=10000)
    window.reading.previous_action.trigger()  # Alt+Left
    qtbot.waitUntil(lambda: len(made.made[-1].requests) == 4, timeout=5000)
    assert made.made[-1].requests[-1].text == TEXT[sentence_span(TEXT, SENTENCES[1])[0]:]

    cursor = window.text_edit.textCursor()
    cursor.setPosition(sentence_span(TEXT, SENTENCES[3])[0] + 5)  # inside the fourth sentence
    window.text_edit.setTextCursor(cursor)
    window.reading.from_cursor_action.trigger()  # Ctrl+Shift+Enter
    qtbot.waitUntil(lambda: len(made.made[-1].requests) == 5, timeout=5000)
    assert made.made[-1].requests[-1].text == TEXT[sentence_span(TEXT, SENTENCES[3])[0]:]
    qtbot.waitUntil(lambda: window.reading.label.text() == "Sentence 4 of 5", timeout=10000)

    menu = [a.text() for a in window.playback_menu.actions()]
    for action in window.reading.actions():
        assert action.text() in menu and action.toolTip() and not action.shortcut().isEmpty()
    qtbot.waitUntil(lambda: window.reading.job is not None and window.reading.job.current >= 0, timeout=5000)
    window.stop()
    qtbot.waitUntil(lambda: not window.reading.label.isVisible() and not window.text_edit.extraSelections())
    # moving about left no trail of fragments in the history (one partial take per key press): the first take
    # (made to its end before the first key press) and the last one are kept
    wait_idle(qtbot, window)
    last = TEXT[sentence_span(TEXT, SENTENCES[3])[0]:]
    qtbot.waitUntil(lambda: any(e.text == last for e in window.history.entries()), timeout=5000)
    qtbot.wait(200)
    assert [e.text for e in window.history.entries()] == [last, TEXT]
    window.shutdown()


def test_stop_after_synthesis_ended_clears_the_highlight_and_progress(qtbot, data_dir, fake_model_dir):
    """Met walking the app: the text was all synthesised and its last sentences were still being heard; Stop
    silenced them but left "Sentence n of N" and the highlight on screen for good."""
    made = factory(per_sentence=True, chunks=2, chunk_s=0.3, delay_s=0.005)
    window = make_window(qtbot, data_dir, made, model_dir=fake_model_dir,
                         player=Player(sd_module=FakeSoundDevice(speed=1.0)))
    window.text_edit.setPlainText(TEXT)
    with qtbot.waitSignal(window.controller.worker.jobFinished, timeout=10000):
        window.speak()
    qtbot.waitUntil(lambda: window.reading.label.text() == "Sentence 2 of 5", timeout=10000)
    assert window.player.is_playing and window.text_edit.extraSelections()
    window.stop()
    qtbot.wait(300)
    assert not window.reading.label.isVisible() and not window.text_edit.extraSelections()
    window.shutdown()


def gaps(played: np.ndarray, min_len: int = 64) -> int:
    """Runs of exact silence of at least ``min_len`` samples between the first and last sound."""
    sound = np.flatnonzero(played != 0.0)
    if not len(sound):
        return 0
    silent = played[sound[0]:sound[-1] + 1] == 0.0
    edges = np.diff(np.concatenate([[0], silent.astype(np.int8), [0]]))
    starts, ends = np.flatnonzero(edges == 1), np.flatnonzero(edges == -1)
    return int(np.sum(ends - starts >= min_len))


def test_synthesis_slower_than_real_time_buffers_each_sentence_so_none_has_a_gap(qtbot, data_dir, fake_model_dir):
    """D7: each chunk takes 1.5x its duration to make; played as made, every chunk boundary was a gap. Now each
    sentence is held until complete ("Buffering…"), so silence falls only between sentences, never counted as
    underruns."""
    sd = FakeSoundDevice(speed=1.0)
    made = factory(per_sentence=True, chunks=3, chunk_s=0.1, delay_s=0.15)
    window = make_window(qtbot, data_dir, made, model_dir=fake_model_dir, player=Player(sd_module=sd))
    window.text_edit.setPlainText(" ".join(SENTENCES[:3]))
    seen = []
    window.speak()
    deadline = time.monotonic() + 20
    while (window.current_job is not None or window.player.is_playing) and time.monotonic() < deadline:
        seen.append(window.status_state.text())
        qtbot.wait(20)
    wait_idle(qtbot, window)
    played = sd.all_played()
    assert np.count_nonzero(played) >= 9 * 2400 * 0.98  # all nine chunks were heard
    assert gaps(played) <= 2, f"{gaps(played)} gaps: playback paused inside a sentence"
    assert window.player.underruns == 0
    assert "Buffering…" in seen
    window.shutdown()


def test_speak_while_speaking_starts_the_new_text_at_once_and_measures_from_the_key_press(qtbot, data_dir,
                                                                                         fake_model_dir):
    """D2: the old request's chunks take 0.6 s each; Speak again right after one arrives. The new request must not
    wait for another old chunk, and "first audio" is the key press to the first new sample handed to the
    device (it was measured from when the worker got round to the new job)."""
    sd = FakeSoundDevice(speed=1.0)
    made = factory(per_sentence=True, chunks=2, chunk_s=0.5,
                   delay_of=lambda request: 0.6 if request.text.startswith("Old") else 0.05)
    window = make_window(qtbot, data_dir, made, model_dir=fake_model_dir, player=Player(sd_module=sd))
    window.text_edit.setPlainText("Old text, long. " * 6)
    window.speak()
    old_job = window.current_job
    chunks = []
    window.controller.worker.chunkReady.connect(lambda info: chunks.append(info.job_id))
    qtbot.waitUntil(lambda: chunks.count(old_job) >= 2, timeout=10000)
    window.text_edit.setPlainText("New words to say.")
    pressed = time.perf_counter()
    new_job = window.speak()
    qtbot.waitUntil(lambda: window.controller.first_audio_ms(new_job) is not None, timeout=10000)
    device_ms = window.controller.first_audio_ms(new_job)
    played_at = window.player.first_sample_time(window.controller.worker.audio_tokens[new_job])
    assert abs(device_ms - (played_at - pressed) * 1000.0) < 5.0
    assert device_ms < 450, f"the new text was heard {device_ms:.0f} ms after the key press"
    qtbot.waitUntil(lambda: "first audio after" in window.status_state.text(), timeout=5000)
    shown = float(window.status_state.text().split("after ")[1].split(" ms")[0])
    assert abs(shown - device_ms) < 2.0
    wait_idle(qtbot, window)
    window.shutdown()


def test_choosing_a_device_that_is_missing_keeps_the_working_model(qtbot, data_dir, fake_model_dir):
    """D3: Compute device -> cuda (or Backend -> tensorrt) on a machine without it: the model in use stays loaded
    and says why; the setting goes back to what runs; auto again works; Speak works throughout."""
    made = factory(missing_devices=("cuda",))
    window = make_window(qtbot, data_dir, made, model_dir=fake_model_dir)
    working = window.model
    # Preferences believes a GPU is there (as when torch sees one that then fails to load the model)
    dialog = window.open_preferences(capabilities=Capabilities(cuda=True, cuda_reason="", tensorrt=False,
                                                               tensorrt_reason="TensorRT is not installed"))
    with qtbot.waitSignal(window.controller.worker.reloadFailed, timeout=10000):
        assert dialog.set_engine(Key.DEVICE, "cuda")
    qtbot.waitUntil(lambda: window.state == "ready", timeout=5000)
    assert window.model is working
    assert window.settings.get(Key.DEVICE) == "auto"
    assert dialog.device_combo.currentData() == "auto"  # the dialog shows what runs
    message = window.error_label.text()
    assert message.startswith("Cannot load") and "no CUDA device" in message and "Still using" in message
    assert dialog.set_engine(Key.DEVICE, "auto") and window.settings.get(Key.DEVICE) == "auto"
    assert window.state == "ready" and window.model is working
    dialog.close()
    window.text_edit.setPlainText("Still speaking.")
    with qtbot.waitSignal(window.controller.worker.jobFinished, timeout=10000) as finished:
        window.speak()
    assert finished.args[0].error is None and len(finished.args[0].pcm)
    wait_idle(qtbot, window)
    window.shutdown()


def test_a_deleted_last_model_opens_another_installed_one(qtbot, data_dir, fake_model_dir, tmp_path):
    """D4: the folder used last time is gone; another valid model (here one added by hand) opens instead of the
    first-run model manager."""
    import shutil

    from cosydesk.ui.app import build_main_window

    other = tmp_path / "OtherModel"
    shutil.copytree(fake_model_dir, other)
    settings = Settings.at(data_dir / "settings.ini")
    settings.set(Key.MODEL_DIR, str(fake_model_dir))
    settings.set(Key.EXTRA_MODEL_DIRS, [str(other)])
    shutil.rmtree(fake_model_dir)
    window = build_main_window(None, settings=settings, synthesizer_factory=factory(), data_dir=data_dir,
                               player=Player(sd_module=FakeSoundDevice(speed=8.0)), warmup=False)
    qtbot.addWidget(window)
    qtbot.waitUntil(lambda: window.model is not None, timeout=10000)
    assert window.model.model_dir == str(other)
    assert "is gone" in window.error_label.text() and "OtherModel" in window.error_label.text()
    window.shutdown()


def test_style_is_off_for_a_built_in_speaker_that_cannot_take_one(qtbot, data_dir, fake_model_dir):
    """D5: on a v2 model a style needs a voice profile: with an SFT speaker the Style box is disabled and says
    why, no instruct is sent; with a profile it is on. Errors shown start with a capital letter."""
    made = factory()
    window = make_window(qtbot, data_dir, made, model_dir=fake_model_dir)
    assert window.current_voice()[0] == "speaker"
    assert not window.style_combo.isEnabled()
    assert "voice profile" in window.style_combo.toolTip() and window.style_combo.toolTip()[0].isupper()
    window.style_combo.setCurrentIndex(1)
    assert window.build_request("x").instruct is None
    t = np.arange(24000 * 4) / 24000
    window.voices.add("Bob", (0.3 * np.sin(2 * np.pi * 180 * t)).astype(np.float32), 24000, "hello from bob")
    window.refresh_voices()
    window.speaker_combo.setCurrentIndex(window.speaker_combo.count() - 1)
    assert window.style_combo.isEnabled()
    window.style_combo.setCurrentIndex(1)
    assert window.build_request("x").instruct == "Happy"
    window.show_message("the text is empty: type something to say", True)
    assert window.error_label.text().startswith("The text is empty")
    window.shutdown()


def test_tab_moves_focus_out_of_the_editor(qtbot, data_dir):
    """D8: Tab goes to the next control instead of typing a tab character."""
    window = make_window(qtbot, data_dir, factory())
    window.activateWindow()
    window.text_edit.setFocus()
    qtbot.waitUntil(window.text_edit.hasFocus)
    qtbot.keyClick(window.text_edit, Qt.Key.Key_Tab)
    assert "\t" not in window.text_edit.toPlainText()
    assert window.text_edit.tabChangesFocus()
    window.shutdown()


def test_the_real_synthesizer_is_followed_sentence_by_sentence(qtbot, data_dir, tiny_v2, tiny_factory, tmp_path):
    """Progress, highlight and subtitles count the sentences a reader sees, not the model's packed segments (the
    tiny v2 model packed this whole text into one segment: "Sentence 1 of 1" and one subtitle cue)."""
    from cosydesk.audio.subtitles import to_srt

    text = "Hello there, my friend. How are you today? Yes. 你好，世界。今天天气很好！"
    expected = [("Sentence 1 of 5", "Hello there, my friend."), ("Sentence 2 of 5", "How are you today?"),
                ("Sentences 3–4 of 5", "Yes. 你好，世界。"), ("Sentence 5 of 5", "今天天气很好！")]
    window = make_window(qtbot, data_dir, tiny_factory, model_dir=tiny_v2,
                         player=Player(sd_module=FakeSoundDevice(speed=1.0)))
    window.text_edit.setPlainText(text)
    seen = []
    finished = []
    window.controller.worker.jobFinished.connect(finished.append)
    window.speak()
    deadline = time.monotonic() + 30
    while not (finished and not window.player.is_playing) and time.monotonic() < deadline:
        shown = (window.reading.label.text(), highlighted(window))
        if window.reading.label.isVisible() and (not seen or seen[-1] != shown):
            seen.append(shown)
        qtbot.wait(5)
    assert seen == expected
    result = finished[0]
    assert [text[r.text_start:r.text_end] for r in result.sentences] == [e[1] for e in expected]
    srt = to_srt(text, result.sentences, result.sample_rate)
    assert srt.count(" --> ") == 4 and "Yes. 你好，世界。" in srt
    assert window.exports.export(tmp_path / "read.srt", "subtitles")  # the window's own export says so too
    assert window.error_label.text().startswith("Saved subtitles for 5 sentences")
    assert (tmp_path / "read.srt").read_text(encoding="utf-8") == srt
    wait_idle(qtbot, window)
    window.shutdown()
