"""The desktop app (offscreen, the real synthesis worker and Synthesizer) shows a malformed model folder's one line
- the text the CLI prints - and keeps the model it had loaded: still selected, still ready to speak."""

from __future__ import annotations

from tests.reliability.malformed_folders import CASES, make_case_folder

CASE = next(case for case in CASES if case["id"] == "spk2info_wrong_embedding_shape")


def _cli_line(folder, capsys) -> str:
    from cosydesk import cli

    capsys.readouterr()
    assert cli.main(["say", "你好。", "--model", str(folder), "--device", "cpu"]) == 2
    return capsys.readouterr().err.strip().removeprefix("cosydesk: error: ")


def test_app_reports_the_cli_line_and_keeps_the_loaded_model(qtbot, data_dir, tiny_v2_dir, tmp_path, capsys):
    from cosydesk.settings import Key
    from tests.ui.helpers import make_window

    broken = make_case_folder(CASE, {"v2": tiny_v2_dir}, tmp_path / "case")
    expected = _cli_line(broken, capsys)
    window = make_window(qtbot, data_dir, None, model_dir=tiny_v2_dir)  # None: the real Synthesizer
    worker = window.controller.worker
    loaded = worker.synth
    with qtbot.waitSignal(worker.loadRefused, timeout=60000) as refused:
        window.load_model(broken)
    assert refused.args[0] == f"Cannot load {broken.name}: {expected}"
    qtbot.waitUntil(lambda: expected in window.error_label.text() and window.state == "ready", timeout=5000)
    assert worker.synth is loaded and window.model is not None
    assert window.model.model_dir == str(tiny_v2_dir) and window.settings.get(Key.MODEL_DIR) == str(tiny_v2_dir)
    assert window.speak_button.isEnabled()
    window.shutdown()


def test_app_without_a_model_reports_the_same_line(qtbot, data_dir, tiny_v2_dir, tmp_path, capsys):
    from tests.ui.helpers import make_window

    broken = make_case_folder(CASE, {"v2": tiny_v2_dir}, tmp_path / "case")
    expected = _cli_line(broken, capsys)
    window = make_window(qtbot, data_dir, None)
    with qtbot.waitSignal(window.controller.worker.loadFailed, timeout=60000) as failed:
        window.load_model(broken)
    assert failed.args[0] == f"Cannot load {broken.name}: {expected}"
    qtbot.waitUntil(lambda: expected in window.error_label.text() and window.state == "no_model", timeout=5000)
    window.shutdown()
