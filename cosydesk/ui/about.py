"""Help → About CosyDesk: version, the libraries it runs on, where its files live, licences.

The dialog sizes itself to the wrapped text and cannot be made smaller than it (a word-wrapped label in a
freely resizable dialog was cut off at the bottom, D16).

"Open data folder" shows the folder holding history, voice profiles and downloaded models in the system's file
manager (Qt's QDesktopServices), which is where people look when they want to back up or free disk space.
"""

from __future__ import annotations

import html
import platform
from importlib import metadata
from pathlib import Path

import PySide6
from PySide6.QtCore import Qt, QUrl, qVersion
from PySide6.QtGui import QDesktopServices
from PySide6.QtWidgets import QDialog, QDialogButtonBox, QLabel, QLayout, QPushButton, QVBoxLayout, QWidget

TEXT_WIDTH_CHARS = 64  # the text column's least width in average characters; the dialog sizes itself to the text


def installed_version(name: str, missing: str = "not installed") -> str:
    """The installed distribution's version, or ``missing`` (CosyDesk itself: a source tree never installed)."""
    try:
        return metadata.version(name)
    except metadata.PackageNotFoundError:
        return missing


class AboutDialog(QDialog):
    def __init__(self, data_dir: Path, models_dir: Path, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.setObjectName("aboutDialog")
        self.data_dir = Path(data_dir)
        self.setWindowTitle(self.tr("About CosyDesk"))
        rows = [
            (self.tr("Version"), installed_version("cosydesk", missing="unknown")),
            (self.tr("Runs on"), f"Python {platform.python_version()}, torch {installed_version('torch')}, "
                                 f"Qt {qVersion()} (PySide6 {PySide6.__version__})"),
            (self.tr("Data folder"), str(self.data_dir)),
            (self.tr("Models folder"), str(models_dir)),
        ]
        table = "".join(f"<tr><td><b>{html.escape(k)}</b>&nbsp;&nbsp;</td><td>{html.escape(v)}</td></tr>"
                        for k, v in rows)
        self.text = QLabel(self)
        self.text.setObjectName("aboutText")
        self.text.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)  # paths can be copied
        self.text.setWordWrap(True)
        self.text.setMinimumWidth(self.fontMetrics().averageCharWidth() * TEXT_WIDTH_CHARS)
        self.text.setText(
            "<h3>CosyDesk</h3><p>" + html.escape(self.tr("Local, real-time CosyVoice speech synthesis on your own GPU."))
            + f"</p><table>{table}</table><p>"
            + html.escape(self.tr("CosyDesk is licensed under Apache-2.0. The CosyVoice models are by FunAudioLLM "
                                  "(Alibaba Tongyi Lab), under the licences their model cards state."))
            + "</p>")
        self.open_folder_button = QPushButton(self.tr("Open data folder"), self)
        self.open_folder_button.setObjectName("openDataFolderButton")
        self.open_folder_button.clicked.connect(self.open_data_folder)
        self.status = QLabel(self)
        self.status.setObjectName("aboutStatus")
        self.status.setWordWrap(True)
        buttons = QDialogButtonBox(QDialogButtonBox.StandardButton.Close, self)
        buttons.addButton(self.open_folder_button, QDialogButtonBox.ButtonRole.ActionRole)
        buttons.rejected.connect(self.reject)
        self.open_folder_button.setToolTip(self.tr("Show the folder with history, voices and models in the file manager"))
        layout = QVBoxLayout(self)
        layout.setSizeConstraint(QLayout.SizeConstraint.SetFixedSize)  # exactly as big as the wrapped text
        layout.addWidget(self.text)
        layout.addWidget(self.status)
        layout.addWidget(buttons)

    def open_data_folder(self) -> bool:
        """Show the data folder in the file manager; where none can open it, say so (the path is selectable)."""
        opened = QDesktopServices.openUrl(QUrl.fromLocalFile(str(self.data_dir)))
        self.status.setText("" if opened else self.tr("No file manager could open {path}; copy the path above.")
                            .format(path=self.data_dir))
        return opened
