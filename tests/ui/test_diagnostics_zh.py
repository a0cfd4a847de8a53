"""D15 for Help > Diagnostics: a folder added by hand that holds no model reads in Chinese, one problem after the
other. Found on Xvfb: the line came out as "[失败] 模型 wavs：缺少 no model config in …：缺少 expected one of
cosyvoice.yaml / … (is this the folder that contains llm.pt?); llm.pt（模型权重）；缺少 flow.pt（模型权重）；
hift.pt（模型权重）" - "{0} is missing (model weights)" had taken the whole "; "-joined list as its file name.
The real doctor check, the dialog's line builder."""

from __future__ import annotations

import re

from cosydesk.doctor_models import check_model_folder
from cosydesk.ui.diagnostics import check_line
from cosydesk.ui.error_text import translate_message

NAMES = re.compile(r"\S+\.(?:yaml|pt)\b|\S*/\S*|\bmodel-less\b")


def test_a_folder_without_a_model_lists_each_problem_in_chinese(tmp_path):
    folder = tmp_path / "model-less"
    folder.mkdir()
    (folder / "voice.wav").write_bytes(b"RIFF")
    line = check_line(check_model_folder(folder, verify_hashes=False), "zh_CN")
    assert line.startswith("[失败] 模型 model-less：")
    assert "中没有模型配置：应有以下之一：" in line
    assert "；缺少 llm.pt（模型权重）；缺少 flow.pt（模型权重）；缺少 hift.pt（模型权重）" in line
    assert re.findall(r"[A-Za-z]{2,}", NAMES.sub(" ", line.split("\n")[0])) == []


def test_a_list_is_only_split_where_that_leaves_less_english():
    zh = "zh_CN"
    listed = ("no model config in /m: expected one of a.yaml / b.yaml (is this the folder that contains llm.pt?); "
              "llm.pt is missing (model weights); hift.pt is missing (model weights)")
    assert translate_message(listed, zh) == ("/m 中没有模型配置：应有以下之一：a.yaml / b.yaml（这是包含 llm.pt 的那个"
                                             "文件夹吗？）；缺少 llm.pt（模型权重）；缺少 hift.pt（模型权重）")
    # an entry whose own text holds "; " still wins over splitting it
    assert translate_message("x.json is not valid JSON (bad); it was kept as y.json", zh) == \
        "x.json 不是有效的 JSON（bad）；已保留为 y.json"
    # text no table knows comes back as it was
    assert translate_message("Something odd; twice", zh) == "Something odd; twice"


def test_the_window_lists_a_folders_problems_with_chinese_separators(qtbot, data_dir, tmp_path):
    """Loading a folder that holds no model: "无法使用 …：…（这是包含 llm.pt 的那个文件夹吗？）; 缺少 llm.pt…" joined
    its problems with an ASCII "; " in Chinese."""
    from tests.ui.fake_synth import factory
    from tests.ui.helpers import make_window

    folder = tmp_path / "recordings"
    folder.mkdir()
    window = make_window(qtbot, data_dir, factory())
    try:
        window.set_language("zh_CN")
        assert not window.load_model(folder)
        shown = window.error_label.text()
        window.set_language("en")
        assert not window.load_model(folder)
        assert "; llm.pt is missing (model weights); flow.pt" in window.error_label.text()
    finally:
        window.set_language("en")
        window.close()
    assert shown.startswith(f"无法使用 {folder}：{folder} 中没有模型配置：")
    assert shown.endswith("？）；缺少 llm.pt（模型权重）；缺少 flow.pt（模型权重）；缺少 hift.pt（模型权重）")
    assert "; " not in shown
