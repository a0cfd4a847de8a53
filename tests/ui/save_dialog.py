"""Drive the app's real (Qt, non-native) save dialog from a test: type a name, pick a filter, press Save."""

from __future__ import annotations

from PySide6.QtCore import QTimer
from PySide6.QtWidgets import QApplication, QFileDialog, QLineEdit


def answer_save_dialog(name: str, name_filter: str | None = None, seen: list | None = None) -> None:
    """When the next file dialog opens: choose `name_filter` (e.g. "FLAC audio (*.flac)"), type `name` (a bare
    name, relative to the folder it opened in, or an absolute path) and accept. `seen` gets (folder, the
    suggested file name) as the dialog showed them."""

    def answer() -> None:
        dialog = next((w for w in QApplication.topLevelWidgets() if isinstance(w, QFileDialog) and w.isVisible()),
                      None)
        if dialog is None:
            QTimer.singleShot(20, answer)
            return
        edit = dialog.findChild(QLineEdit, "fileNameEdit")
        if seen is not None:
            seen.append((dialog.directory().absolutePath(), edit.text()))
        if name_filter is not None:
            dialog.selectNameFilter(name_filter)
            dialog.filterSelected.emit(name_filter)
        edit.setText(name)
        dialog.accept()

    QTimer.singleShot(0, answer)
