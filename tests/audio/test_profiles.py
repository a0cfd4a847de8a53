"""Voice-profile validation messages and the on-disk store."""

from __future__ import annotations

import numpy as np
import pytest
import soundfile as sf

from cosydesk.audio.profiles import ProfileError, VoiceProfileStore, check_prompt_audio, load_prompt_audio

RATE = 16000


def _speech_like(seconds, rate=RATE):
    t = np.arange(int(seconds * rate)) / rate
    envelope = 0.5 + 0.5 * np.sin(2 * np.pi * 3 * t)  # syllable-like amplitude changes
    return (0.3 * envelope * np.sin(2 * np.pi * 180 * t)).astype(np.float32)


def test_good_prompt_passes():
    assert check_prompt_audio(_speech_like(5), RATE).ok


@pytest.mark.parametrize("pcm, rate, message", [
    (np.zeros(RATE * 5, np.float32), RATE, "silent"),
    (_speech_like(1.0), RATE, "too short (1.0 s)"),
    (_speech_like(60.0), RATE, "too long (60.0 s)"),
    (_speech_like(5, 8000), 8000, "8000 Hz is too low"),
])
def test_bad_prompts_say_why(pcm, rate, message):
    check = check_prompt_audio(pcm, rate)
    assert not check.ok
    assert any(message in p for p in check.problems), check.problems


def test_mostly_silent_prompt():
    pcm = np.zeros(RATE * 6, np.float32)
    pcm[: RATE // 2] = _speech_like(0.5)
    assert any("almost silent" in p for p in check_prompt_audio(pcm, RATE).problems)


def test_files_stereo_and_not_audio(tmp_path):
    stereo = np.stack([_speech_like(4), _speech_like(4)], axis=1)
    sf.write(tmp_path / "s.wav", stereo, RATE)
    pcm, rate, warnings = load_prompt_audio(tmp_path / "s.wav")
    assert pcm.ndim == 1 and rate == RATE and "mixed down to mono" in warnings[0]
    (tmp_path / "x.wav").write_text("this is not audio")
    with pytest.raises(ProfileError, match="not an audio file"):
        load_prompt_audio(tmp_path / "x.wav")


def test_store_add_list_delete(tmp_path):
    store = VoiceProfileStore(tmp_path / "voices")
    profile = store.add("我的声音 / test", _speech_like(4), RATE, "你好，这是一段测试录音。")
    assert profile.wav_path.is_file() and profile.duration_s == 4.0
    again = VoiceProfileStore(tmp_path / "voices")  # a restart
    assert again.names() == ["我的声音 / test"]
    assert again.get("我的声音 / test").transcript == "你好，这是一段测试录音。"
    with pytest.raises(ProfileError) as info:
        again.add("我的声音 / test", np.zeros(RATE, np.float32), RATE, " ")
    text = str(info.value)
    assert "exists already" in text and "transcript is empty" in text and "silent" in text
    assert again.delete("我的声音 / test") and again.names() == []


def test_reserved_speaker_names(tmp_path):
    store = VoiceProfileStore(tmp_path)
    with pytest.raises(ProfileError, match="exists already"):
        store.add("中文女", _speech_like(4), RATE, "text", reserved_names=("中文女",))


def test_a_folder_named_like_a_recording_is_called_a_folder(tmp_path):
    (tmp_path / "take.wav").mkdir()
    with pytest.raises(ProfileError, match="is a folder, not a recording"):
        load_prompt_audio(tmp_path / "take.wav")
    with pytest.raises(ProfileError, match="does not exist"):
        load_prompt_audio(tmp_path / "missing.wav")
