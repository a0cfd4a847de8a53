"""D15 for "New voice…": a file that is not a recording (a text file named .wav, a WAV cut off before its data)
reads in Chinese when the UI language is zh_CN. Found on Xvfb: the dialog showed "text.wav 不是可读取的音频文件
（WAV、FLAC 或 OGG）：Error opening '…/text.wav': Format not recognised." - libsndfile's own words stayed English.
The real dialog, the real soundfile read. And the history row's first audio in the unit the telemetry line uses."""

from __future__ import annotations

import re

import numpy as np
import pytest
import soundfile as sf

from cosydesk.audio.profiles import VoiceProfileStore
from cosydesk.ui.voice_dialog import VoiceProfileDialog


@pytest.fixture
def zh_dialog(qtbot, tmp_path):
    from cosydesk.ui import i18n

    i18n.set_language("zh_CN")
    dialog = VoiceProfileDialog(VoiceProfileStore(tmp_path / "voices"))
    qtbot.addWidget(dialog)
    yield dialog
    i18n.set_language("en")


def _prose(text: str) -> str:
    """The shown problems without the file names and formats they quote."""
    return re.sub(r"'[^']*'|\S+\.wav|WAV|FLAC|OGG", " ", text)


def test_a_text_file_named_wav_is_refused_in_chinese(zh_dialog, tmp_path):
    fake = tmp_path / "text.wav"
    fake.write_text("this is not audio")
    assert not zh_dialog.load_file(fake)
    shown = zh_dialog.problems_label.text()
    assert "无法打开" in shown and "无法识别文件格式" in shown
    assert re.findall(r"[A-Za-z]{2,}", _prose(shown)) == []


def test_a_cut_off_wav_is_refused_in_chinese(zh_dialog, tmp_path):
    whole = tmp_path / "whole.wav"
    sf.write(whole, np.zeros(24000, dtype=np.float32), 24000)
    cut = tmp_path / "cut.wav"
    cut.write_bytes(whole.read_bytes()[:30])
    assert not zh_dialog.load_file(cut)
    shown = zh_dialog.problems_label.text()
    assert "WAV 文件有误" in shown
    assert re.findall(r"[A-Za-z]{2,}", _prose(shown)) == []


def test_english_keeps_libsndfiles_words(qtbot, tmp_path):
    fake = tmp_path / "text.wav"
    fake.write_text("this is not audio")
    dialog = VoiceProfileDialog(VoiceProfileStore(tmp_path / "voices"))
    qtbot.addWidget(dialog)
    assert not dialog.load_file(fake)
    assert "Format not recognised" in dialog.problems_label.text()


def test_history_row_writes_milliseconds_as_the_telemetry_line_does(qtbot, tmp_path):
    """The history row said "首音 2910 ms" beside the telemetry line's "首音 2910 毫秒"."""
    from cosydesk.ui import i18n
    from cosydesk.ui.history import HistoryEntry, HistoryStore
    from cosydesk.ui.history_panel import HistoryPanel

    panel = HistoryPanel(HistoryStore(tmp_path / "history"))
    qtbot.addWidget(panel)
    entry = HistoryEntry(id="a", created=0.0, text="你好。", voice="中文女", style="", model="tiny-v2", duration_s=0.3,
                         first_audio_ms=2910.4, rtf=9.09, sample_rate=24000, file="a.wav", speed=1.0)
    i18n.set_language("zh_CN")
    try:
        assert panel.details(entry) == "中文女 · tiny-v2 · 1× · 0.3 秒 · 首音 2910 毫秒 · 实时率 9.09"
    finally:
        i18n.set_language("en")
    assert panel.details(entry) == "中文女 · tiny-v2 · 1× · 0.3 s · first audio 2910 ms · RTF 9.09"


OS_ERRORS = ("ENOENT", "EACCES", "EROFS", "ENOSPC", "EDQUOT", "EFBIG", "EEXIST", "ENOTDIR", "EISDIR", "ENAMETOOLONG",
             "EPERM", "EIO", "EINVAL", "EMFILE", "EBUSY", "ELOOP", "ENOTEMPTY", "EAGAIN", "ENOMEM", "ESTALE",
             "EADDRINUSE", "EADDRNOTAVAIL", "ECONNREFUSED", "ETIMEDOUT", "ENETUNREACH")


@pytest.mark.parametrize("name", OS_ERRORS)
def test_the_operating_systems_error_texts_translate(name):
    """What the OS says inside export, history and server messages (an export to a 200-character name said
    "…：File name too long；未写入任何内容")."""
    import errno
    import os

    from cosydesk.ui.error_text import translate_message

    assert re.search(r"[\u4e00-\u9fff]", translate_message(os.strerror(getattr(errno, name)), "zh_CN"))


def test_an_export_to_a_too_long_name_reads_in_chinese(tmp_path):
    from cosydesk.audio.export import ExportError, write_audio
    from cosydesk.ui.error_text import display_message

    with pytest.raises(ExportError) as refused:
        write_audio(tmp_path / ("长" * 200 + ".wav"), np.zeros(2400, dtype=np.float32), 24000)
    shown = display_message(str(refused.value), "zh_CN")
    assert shown.endswith("：文件名过长；未写入任何内容"), shown


def test_a_number_after_ying_wei_keeps_its_space():
    """A yaml with 96 mel bins read "…：应为80（CosyVoice 使用 80 维梅尔频谱）" (no space before the number, as
    everywhere else in the table: "为 96", "使用 80 维")."""
    from cosydesk.model.config_values import MEL_BINS
    from cosydesk.ui.error_text import translate_message

    message = f"/m/cosyvoice2.yaml: flow.output_size is 96: it must be {MEL_BINS} (CosyVoice works on {MEL_BINS}-bin mels)"
    assert translate_message(message, "zh_CN").endswith("flow.output_size 为 96：应为 80（CosyVoice 使用 80 维梅尔频谱）")


@pytest.mark.parametrize("choice", ["light", "dark"])
def test_the_problems_read_in_the_themes_error_colour(qtbot, tmp_path, choice):
    """The problems label takes its colour from the theme (it had a fixed dark red, hard to read on the dark
    theme), and no dialog or window part keeps a colour of its own in a style sheet."""
    from pathlib import Path

    from PySide6.QtGui import QColor

    from cosydesk.ui import theme

    applied = theme.apply_theme(choice)
    try:
        dialog = VoiceProfileDialog(VoiceProfileStore(tmp_path / "voices"))
        qtbot.addWidget(dialog)
        fake = tmp_path / "text.wav"
        fake.write_text("this is not audio")
        assert not dialog.load_file(fake)
        dialog.show()
        qtbot.waitExposed(dialog)
        label = dialog.problems_label
        label.ensurePolished()
        assert label.palette().color(label.foregroundRole()) == QColor(applied.error)
    finally:
        theme.apply_theme("light")
    ui = Path(__file__).resolve().parents[2] / "cosydesk" / "ui"
    fixed = [p.name for p in ui.rglob("*.py") if re.search(r'setStyleSheet\(\s*f?"[^"]*color:\s*#', p.read_text())]
    assert fixed == []
