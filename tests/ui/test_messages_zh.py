"""D15 in the window: engine refusals, a bad recording and the Diagnostics lines read in Chinese when the UI
language is zh_CN, and exactly as before (English, starting with a capital letter) otherwise. The refusals come
through the real worker and the real Synthesizer on the tiny v2 model (tests/data/malformed_model_folders.json
for the folder)."""

from __future__ import annotations

from pathlib import Path

import re

import numpy as np
import pytest
import soundfile as sf

from cosydesk.ui.error_text import display_message, translate_message
from tests.reliability.malformed_folders import CASES, make_case_folder
from tests.ui.helpers import make_window

CJK = re.compile(r"[\u4e00-\u9fff]")
ONLY_PUNCTUATION = "the text holds only punctuation, symbols or emoji: there is nothing to pronounce"


@pytest.fixture
def ui_language():
    """Sets the UI language for a test without a main window; English again afterwards."""
    from cosydesk.ui import i18n

    yield i18n.set_language
    i18n.set_language("en")


def _shown(window) -> str:
    return window.error_label.text() if window.error_label.isVisible() else ""


def test_engine_refusals_through_the_real_worker_in_both_languages(qtbot, data_dir, tiny_v2, tmp_path):
    window = make_window(qtbot, data_dir, None, model_dir=tiny_v2)  # None: the real Synthesizer
    try:
        # a request the engine refuses (runtime/request_inputs.py)
        for language, expected in (("zh_CN", "文本只有标点、符号或表情：没有可朗读的内容"),
                                   ("en", ONLY_PUNCTUATION[0].upper() + ONLY_PUNCTUATION[1:])):
            window.set_language(language)
            window.text_edit.setPlainText("!!! ???")
            window.show_message("", False)
            window.speak()
            qtbot.waitUntil(lambda: _shown(window) != "", timeout=20000)
            assert _shown(window) == expected
            qtbot.waitUntil(lambda: window.current_job is None, timeout=20000)

        # a malformed model folder, refused by the worker's folder check; the loaded model stays
        case = next(case for case in CASES if case["id"] == "zero_dimension")
        (tmp_path / "case").mkdir()
        folder = make_case_folder(case, {"v2": tiny_v2}, tmp_path / "case")
        from cosydesk.runtime.synthesizer import check_model_folder

        with pytest.raises(ValueError) as refused:
            check_model_folder(folder)
        english = f"Cannot load {folder.name}: {refused.value}"
        for language, expected in (("zh_CN", display_message(english, "zh_CN")), ("en", english)):
            window.set_language(language)
            window.load_model(folder)
            qtbot.waitUntil(lambda: _shown(window) != "" and window.state == "ready", timeout=20000)
            shown, reason = _shown(window), expected.rstrip("。.")
            assert shown.startswith(reason)
            assert Path(tiny_v2).name in shown[len(reason):]  # then which model is still in use
            assert window.model is not None and window.model.model_dir == str(tiny_v2)
        assert expected == english  # English: byte for byte what the worker said
        chinese = display_message(english, "zh_CN")
        assert chinese.startswith(f"无法加载 {folder.name}：{folder / 'cosyvoice2.yaml'}") and "Cannot" not in chinese
    finally:
        window.set_language("en")


def _speechless(seconds: float, rate: int = 24000) -> np.ndarray:
    return np.zeros(int(seconds * rate), np.float32)


def test_a_bad_recording_is_explained_in_chinese(qtbot, tmp_path, ui_language):
    from cosydesk.audio.profiles import VoiceProfileStore
    from cosydesk.ui.voice_dialog import VoiceProfileDialog

    sf.write(tmp_path / "quiet.wav", _speechless(1.0), 24000)  # silent and too short
    dialog = VoiceProfileDialog(VoiceProfileStore(tmp_path / "voices"))
    qtbot.addWidget(dialog)
    ui_language("zh_CN")
    dialog.load_file(tmp_path / "quiet.wav")
    text = dialog.problems_label.text()
    assert "• 太短（1.0 秒）：请使用 3–" in text and "• 录音没有声音：请检查麦克风，或换一个文件" in text
    assert not re.search(r"[A-Za-z]{3,}", text), text  # no English word left
    ui_language("en")
    dialog.load_file(tmp_path / "quiet.wav")
    text = dialog.problems_label.text()
    assert "• Too short (1.0 s): use 3–" in text
    assert "• The recording is silent: check the microphone or pick another file" in text


def test_diagnostics_lines_in_both_languages(ui_language):
    from cosydesk.doctor import Check
    from cosydesk.ui.diagnostics import check_line

    checks = [Check("CJK font", "WARN", "no Chinese font: Chinese text shows as boxes in the app",
                    "sudo apt install fonts-wqy-microhei"),
              Check("TensorRT", "OK", "not installed; not needed without an NVIDIA GPU"),
              Check("model Tiny", "FAIL", "llm.pt is missing (model weights); flow.pt is empty (an interrupted "
                                          "download?)", "cosydesk models --download CosyVoice2-0.5B")]
    assert [check_line(c, "en") for c in checks] == [c.line() for c in checks]
    assert [check_line(c, "zh_CN") for c in checks] == [
        "[警告] 中文字体：没有中文字体：应用中的中文会显示为方框\n       修复：sudo apt install fonts-wqy-microhei",
        "[正常] TensorRT：未安装；没有 NVIDIA GPU 时不需要",
        "[失败] 模型 Tiny：缺少 llm.pt（模型权重）；flow.pt 是空的（下载中断了？）\n"
        "       修复：cosydesk models --download CosyVoice2-0.5B"]


def test_the_real_diagnostics_report_follows_the_language(ui_language, tmp_path):
    from cosydesk.ui.diagnostics import diagnostics_report

    ui_language("zh_CN")
    text, _summary = diagnostics_report(models_dir=tmp_path / "models")
    lines = [line for line in text.splitlines() if line.startswith("[")]
    assert lines and all(re.match(r"\[(正常|警告|失败)\] ", line) for line in lines), text
    assert "[正常] Python：" in text and "模型" in text
    untranslated = [line for line in lines  # paths aside (the temporary folder's name has English words)
                    if re.search(r"\b(?:is|not|the|no|cannot|of|and)\b", re.sub(r"/\S*?(?=[（ ]|$)", "", line))]
    assert untranslated == [], untranslated
    ui_language("en")
    english, _summary = diagnostics_report(models_dir=tmp_path / "models")
    assert "[OK  ] Python: " in english and not CJK.search(english.replace("中文", ""))


def test_loading_stages_follow_the_language(ui_language):
    from cosydesk.ui.load_status import loading_text

    ui_language("zh_CN")
    assert "正在编译并捕获语音 LM（2/8）" in loading_text("Tiny", "Compiling and capturing the speech LM (2/8)", 0.3)
    assert translate_message("Downloading CosyVoice2-0.5B (12 of 900 MB)") == "正在下载 CosyVoice2-0.5B（已下载 12 / 900 MB）"
    ui_language("en")
    assert loading_text("Tiny", "Loading model", 0.05) == "Loading Tiny: Loading model… 5%"
