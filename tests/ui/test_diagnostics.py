"""Help → Diagnostics shows the doctor's checks without blocking the window."""

from __future__ import annotations

from tests.ui.fake_synth import factory
from tests.ui.helpers import make_window


def test_diagnostics_dialog_lists_checks(qtbot):
    from cosydesk.ui.diagnostics import DiagnosticsDialog

    dialog = DiagnosticsDialog()
    qtbot.addWidget(dialog)
    qtbot.waitUntil(lambda: dialog.finished_checks, timeout=60000)
    text = dialog.report.toPlainText()
    assert "Python" in text and "torch" in text and "PortAudio" in text
    assert "OK" in dialog.summary.text()


def test_help_menu_opens_diagnostics(qtbot, tmp_path):
    window = make_window(qtbot, tmp_path, factory())
    assert window.diagnostics_action.objectName() == "diagnosticsAction"
    assert window.help_menu.title()  # translated title is set
    dialog = window.open_diagnostics()
    qtbot.addWidget(dialog)
    qtbot.waitUntil(lambda: dialog.finished_checks, timeout=60000)
    assert "[OK  ] Python" in dialog.report.toPlainText()
