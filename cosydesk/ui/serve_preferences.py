"""Preferences > Local API: the "Serve other apps" switch (the same QAction as the tray and Tools menu), and
the address, port and API key it serves on.

What it is for: one place where a user turns the in-app speech server on and sees where it listens. Address,
port and key are stored at once; they take effect the next time the server starts (turn it off and on), which
the page says. It must not start or stop anything itself: the ServeSwitch does (ui/serve_switch.py).
"""

from __future__ import annotations

from PySide6.QtCore import QEvent
from PySide6.QtWidgets import QCheckBox, QFormLayout, QLabel, QLineEdit, QSpinBox, QVBoxLayout, QWidget

from cosydesk.settings import Key, Settings


class ServePreferences(QWidget):
    """A Preferences page bound to ``switch.action`` and the Key.SERVE_* settings."""

    def __init__(self, switch, settings: Settings, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.setObjectName("servePage")
        self.switch, self.settings = switch, settings
        self.enabled_box = QCheckBox(self)
        self.enabled_box.setObjectName("serveEnabled")
        self.enabled_box.setChecked(switch.action.isChecked())
        self.enabled_box.toggled.connect(self._toggled)
        switch.action.toggled.connect(self._action_toggled)  # the tray or Tools menu changed it
        self.host_edit = QLineEdit(settings.get(Key.SERVE_HOST), self)
        self.host_edit.setObjectName("serveHost")
        self.host_edit.editingFinished.connect(
            lambda: settings.set(Key.SERVE_HOST, self.host_edit.text().strip() or "127.0.0.1"))
        self.port_spin = QSpinBox(self)
        self.port_spin.setObjectName("servePort")
        self.port_spin.setRange(1, 65535)
        self.port_spin.setValue(min(max(int(settings.get(Key.SERVE_PORT)), 1), 65535))
        self.port_spin.valueChanged.connect(lambda value: settings.set(Key.SERVE_PORT, int(value)))
        self.key_edit = QLineEdit(settings.get(Key.SERVE_API_KEY), self)
        self.key_edit.setObjectName("serveApiKey")
        self.key_edit.setEchoMode(QLineEdit.EchoMode.PasswordEchoOnEdit)
        self.key_edit.editingFinished.connect(lambda: settings.set(Key.SERVE_API_KEY, self.key_edit.text().strip()))
        self.note = QLabel(self)
        self.note.setWordWrap(True)
        form = QFormLayout()
        self._labels = [QLabel(self) for _ in range(3)]
        form.addRow(self._labels[0], self.host_edit)
        form.addRow(self._labels[1], self.port_spin)
        form.addRow(self._labels[2], self.key_edit)
        layout = QVBoxLayout(self)
        layout.addWidget(self.enabled_box)
        layout.addLayout(form)
        layout.addWidget(self.note)
        layout.addStretch(1)
        self.retranslate()

    def _toggled(self, on: bool) -> None:
        if self.switch.action.isChecked() != on:
            self.switch.action.trigger()  # as a click in the tray: the switch stores and starts / stops

    def _action_toggled(self, on: bool) -> None:
        try:
            if self.enabled_box.isChecked() != on:
                self.enabled_box.blockSignals(True)
                self.enabled_box.setChecked(on)
                self.enabled_box.blockSignals(False)
        except RuntimeError:  # the page was closed and deleted; the action lives on
            pass

    def changeEvent(self, event) -> None:  # noqa: N802 - Qt override
        if event.type() == QEvent.Type.LanguageChange:
            self.retranslate()
        super().changeEvent(event)

    def retranslate(self) -> None:
        self.enabled_box.setText(self.tr("Serve other apps (OpenAI-compatible /v1/audio/speech)"))
        self.enabled_box.setToolTip(self.switch.action.toolTip())
        self._labels[0].setText(self.tr("Address"))
        self._labels[1].setText(self.tr("Port"))
        self._labels[2].setText(self.tr("API key"))
        self.host_edit.setToolTip(self.tr("127.0.0.1 serves this computer only; any other address needs an API key"))
        self.port_spin.setToolTip(self.tr("The TCP port other programs connect to (base URL http://ADDRESS:PORT/v1)"))
        self.key_edit.setToolTip(self.tr("Clients send it as 'Authorization: Bearer KEY'; empty: no key"))
        self.note.setText(self.tr("Your own speech and other programs' requests take turns on the model loaded "
                                  "here. A new address, port or key applies the next time the server starts."))
