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
    assert "passed" in dialog.summary.text() and "warnings" in dialog.summary.text()


def test_help_menu_opens_diagnostics(qtbot, tmp_path):
    window = make_window(qtbot, tmp_path, factory())
    assert window.diagnostics_action.objectName() == "diagnosticsAction"
    assert window.help_menu.title()  # translated title is set
    dialog = window.open_diagnostics()
    qtbot.addWidget(dialog)
    qtbot.waitUntil(lambda: dialog.finished_checks, timeout=60000)
    assert "[OK  ] Python" in dialog.report.toPlainText()


def test_help_menu_about_names_version_folders_and_opens_the_data_folder(qtbot, data_dir, monkeypatch):
    """Help → About CosyDesk: the installed version, the torch / Qt it runs on, the data and models folders;
    "Open data folder" hands that folder to the desktop's file manager, and says so where none opens it."""
    from importlib import metadata

    from PySide6.QtGui import QDesktopServices

    from cosydesk.ui.about import AboutDialog

    window = make_window(qtbot, data_dir, factory())
    assert window.about_action in window.help_menu.actions() and window.about_action.text()
    dialog = window.open_about()
    assert isinstance(dialog, AboutDialog) and dialog.isVisible()
    text = dialog.text.text()
    assert metadata.version("cosydesk") in text and "torch" in text and "Qt" in text
    assert str(data_dir) in text and "models" in text
    opened = []
    monkeypatch.setattr(QDesktopServices, "openUrl", lambda url: opened.append(url.toLocalFile()) or True)
    dialog.open_folder_button.click()
    assert opened == [str(data_dir)] and dialog.status.text() == ""
    monkeypatch.setattr(QDesktopServices, "openUrl", lambda url: False)
    assert not dialog.open_data_folder()
    assert str(data_dir) in dialog.status.text()
    dialog.close()
    window.shutdown()
