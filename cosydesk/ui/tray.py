"""The tray icon and its menu: Read clipboard, Pause, Stop, Show, Serve other apps, Quit.

What it is for: reaching the app without its window (read what was just copied, pause or stop the voice, switch
the speech API on or off). The menu is a plain QMenu built from callbacks, so it works (and is tested) where the
desktop has no system tray; the icon itself (QSystemTrayIcon) is only created where one is available.

What it must not do: own any state; every action calls into the window / the desktop integration.
"""

from __future__ import annotations

from collections.abc import Callable

from PySide6.QtCore import QObject, Signal
from PySide6.QtGui import QAction, QIcon
from PySide6.QtWidgets import QMenu, QSystemTrayIcon, QWidget


class TrayMenu(QMenu):
    """The tray's menu. `is_playing`/`is_paused`/`is_busy` are read each time the menu opens."""

    def __init__(self, read_clipboard: Callable[[], object], toggle_pause: Callable[[], object],
                 stop: Callable[[], object], show_window: Callable[[], object], quit_app: Callable[[], object],
                 serve_action: QAction | None = None, is_playing: Callable[[], bool] = lambda: False,
                 is_paused: Callable[[], bool] = lambda: False, is_busy: Callable[[], bool] = lambda: False,
                 parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.setObjectName("trayMenu")
        self._is_playing, self._is_paused, self._is_busy = is_playing, is_paused, is_busy
        self.read_clipboard_action = self._add("trayReadClipboard", read_clipboard)
        self.addSeparator()
        self.pause_action = self._add("trayPause", toggle_pause)
        self.pause_action.setCheckable(True)
        self.stop_action = self._add("trayStop", stop)
        self.addSeparator()
        self.show_action = self._add("trayShow", show_window)
        self.serve_action = serve_action
        if serve_action is not None:
            self.addAction(serve_action)
        self.addSeparator()
        self.quit_action = self._add("trayQuit", quit_app)
        self.aboutToShow.connect(self.refresh)
        self.retranslate()
        self.refresh()

    def _add(self, name: str, callback: Callable[[], object]) -> QAction:
        action = QAction(self)
        action.setObjectName(name)
        action.triggered.connect(lambda _checked=False: callback())
        self.addAction(action)
        return action

    def retranslate(self) -> None:
        self.read_clipboard_action.setText(self.tr("Read clipboard"))
        self.stop_action.setText(self.tr("Stop"))
        self.show_action.setText(self.tr("Show CosyDesk"))
        self.quit_action.setText(self.tr("Quit"))
        self.refresh()

    def refresh(self) -> None:
        """Enable Pause while audio plays and Stop while anything runs; Pause shows Resume when paused."""
        paused = bool(self._is_paused())
        self.pause_action.setEnabled(bool(self._is_playing()) or paused)
        self.pause_action.setChecked(paused)
        self.pause_action.setText(self.tr("Resume") if paused else self.tr("Pause"))
        self.stop_action.setEnabled(bool(self._is_busy()))


class TrayIcon(QObject):
    """The QSystemTrayIcon (when the desktop has a tray) around a TrayMenu; a click shows the window."""

    activated = Signal()

    def __init__(self, menu: TrayMenu, icon: QIcon, parent: QObject | None = None) -> None:
        super().__init__(parent)
        self.menu = menu
        self.icon: QSystemTrayIcon | None = None
        if QSystemTrayIcon.isSystemTrayAvailable():
            self.icon = QSystemTrayIcon(icon, self)
            self.icon.setContextMenu(menu)
            self.icon.setToolTip("CosyDesk")
            self.icon.activated.connect(self._on_activated)
            self.icon.show()

    @property
    def available(self) -> bool:
        return self.icon is not None

    def _on_activated(self, reason) -> None:
        if reason in (QSystemTrayIcon.ActivationReason.Trigger, QSystemTrayIcon.ActivationReason.DoubleClick):
            self.activated.emit()

    def set_tooltip(self, text: str) -> None:
        if self.icon is not None:
            self.icon.setToolTip(text)

    def notify(self, title: str, text: str, error: bool = False) -> bool:
        """A desktop notification from the tray icon (False where there is no tray)."""
        if self.icon is None or not QSystemTrayIcon.supportsMessages():
            return False
        kind = QSystemTrayIcon.MessageIcon.Warning if error else QSystemTrayIcon.MessageIcon.Information
        self.icon.showMessage(title, text, kind, 4000)
        return True

    def hide(self) -> None:
        if self.icon is not None:
            self.icon.hide()
