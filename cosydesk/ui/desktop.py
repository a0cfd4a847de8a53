"""Desktop integration around the main window: the single-instance socket, read-aloud, tray and speech API switch.

    integration = DesktopIntegration(window, instance.server)      # after build_main_window (ui/app.py)

What it is for: what reaches the app from outside its window. A second `cosydesk` start raises the window (and
opens the model it was given); `cosydesk read` hands text over the local socket and the app speaks it with the
voice chosen in the window, without raising it (a tray notification says what is being read when the window is
not in front); the tray menu (Read clipboard, Pause, Stop, Show, Serve other apps, Quit); Tools > Serve other
apps and the API activity in the status bar.

What it must not do: change what the window does by itself; it only calls the window's public operations.
"""

from __future__ import annotations

import logging

from PySide6.QtCore import QEvent, QObject
from PySide6.QtGui import QClipboard, QGuiApplication, QIcon
from PySide6.QtWidgets import QLabel, QMenu

from cosydesk import hub
from cosydesk.ui.resources import icon_path
from cosydesk.ui.error_text import display_message, translate_message
from cosydesk.ui.serve_switch import ServeSwitch
from cosydesk.ui.tray import TrayIcon, TrayMenu

log = logging.getLogger("cosydesk.ui.desktop")
PREVIEW_CHARS = 80


def speak_text(window, text: str) -> int | None:
    """Speak `text` (not the editor's) as Speak would: the window's voice, style and speed; into the history.
    Returns the job id, or None (nothing to say, no model, or queued until the model being loaded is ready)."""
    if not text.strip():
        return None
    if window.model is None and window.state != "loading":
        window.show_message(window.tr("No model is loaded: choose or download one with “Models…”."), True)
        return None
    request = window.build_request(text)
    if window.model is None:  # still loading: spoken as soon as it is ready (as Speak does)
        window._pending_request = request
        return None
    window.show_message("", False)
    window.current_job = window.controller.speak(request)
    window._set_state("speaking")
    return window.current_job


class DesktopIntegration(QObject):
    def __init__(self, window, instance_server=None, settings=None) -> None:
        super().__init__(window)
        self.window = window
        self.settings = settings or window.settings
        self.instance_server = instance_server
        self.serve = ServeSwitch(window.controller, self.settings, voices_dir=window.data_dir / "voices", parent=self)
        self.serve.failed.connect(self._on_serve_failed)
        self.serve.statusText.connect(self._on_serve_status)

        self.tools_menu = QMenu(window)
        self.tools_menu.setObjectName("toolsMenu")
        self.read_clipboard_action = self.tools_menu.addAction("")
        self.read_clipboard_action.setObjectName("readClipboardAction")
        self.read_clipboard_action.triggered.connect(lambda _checked=False: self.read_clipboard())
        self.tools_menu.addSeparator()
        self.tools_menu.addAction(self.serve.action)
        help_menu = getattr(window, "help_menu", None)
        if help_menu is not None:
            window.menuBar().insertMenu(help_menu.menuAction(), self.tools_menu)
        else:
            window.menuBar().addMenu(self.tools_menu)

        self.status_api = QLabel(window)
        self.status_api.setObjectName("statusApi")
        self.status_api.hide()
        window.statusBar().addPermanentWidget(self.status_api)

        self.tray_menu = TrayMenu(self.read_clipboard, window.toggle_pause, window.stop, self.show_window,
                                  window.close, serve_action=self.serve.action,
                                  is_playing=lambda: window.player.is_playing, is_paused=lambda: window.player.paused,
                                  is_busy=self._busy, parent=window)
        self.tray = TrayIcon(self.tray_menu, QIcon(str(icon_path())), self)
        self.tray.activated.connect(self.show_window)

        if instance_server is not None:
            instance_server.showRequested.connect(self._on_show_requested)
            instance_server.readRequested.connect(self.read_text)
        window.preferences_sections = [*getattr(window, "preferences_sections", []), self._add_serve_page]
        window.installEventFilter(self)
        self.retranslate()
        self._shut = False

    def _add_serve_page(self, dialog) -> None:
        """Preferences > Local API: the switch and where it serves."""
        from cosydesk.ui.serve_preferences import ServePreferences

        page = ServePreferences(self.serve, self.settings, dialog)
        dialog.add_section(self.tr("Local API"), page, "servePage")

    # -- texts -------------------------------------------------------------------------------------------------
    def retranslate(self) -> None:
        self.tools_menu.setTitle(self.tr("&Tools"))
        self.read_clipboard_action.setText(self.tr("Read clipboard"))
        self.tray_menu.retranslate()
        self.serve.retranslate()

    def eventFilter(self, watched, event) -> bool:  # noqa: N802
        if watched is self.window:
            if event.type() == QEvent.Type.LanguageChange:
                self.retranslate()
            elif event.type() == QEvent.Type.Close:
                self.shutdown()
        return False

    # -- reading aloud -----------------------------------------------------------------------------------------
    def _busy(self) -> bool:
        window = self.window
        return window.current_job is not None or window.player.is_playing or window._pending_request is not None

    def read_clipboard(self) -> int | None:
        text = QGuiApplication.clipboard().text(QClipboard.Mode.Clipboard)
        if not text.strip():
            self._tell(self.tr("The clipboard holds no text to read."), error=True)
            return None
        return self.read_text(text, "clipboard")

    def read_text(self, text: str, source: str = "cli") -> int | None:
        """Speak text that came from outside the window (the local socket, the tray)."""
        if self.window.model is None and self.window.state != "loading":
            self._tell(self.tr("No model is loaded: open CosyDesk and choose one."), error=True)
            return None
        job = speak_text(self.window, text)
        preview = " ".join(text.split())
        preview = preview if len(preview) <= PREVIEW_CHARS else preview[:PREVIEW_CHARS - 1] + "…"
        if not self.window.isActiveWindow():
            self.tray.notify("CosyDesk", self.tr("Reading: {text}").format(text=preview))
        log.info("reading %d characters from %s", len(text), source)
        return job

    def _tell(self, text: str, error: bool = False) -> None:
        self.window.show_message(text, error)
        if not self.window.isActiveWindow():
            self.tray.notify("CosyDesk", display_message(text), error)

    # -- the window --------------------------------------------------------------------------------------------
    def show_window(self) -> None:
        window = self.window
        if window.isMinimized():
            window.showNormal()
        window.show()
        window.raise_()
        window.activateWindow()

    def _on_show_requested(self, model_dir) -> None:
        self.show_window()
        if model_dir and (self.window.model is None or str(model_dir) != self.window.model.model_dir):
            report = hub.check_model_dir(model_dir)
            if report.loadable:
                self.window.load_model(model_dir)
            else:
                self.window.show_message("\n".join(hub.validate_model_dir(model_dir)), True)

    # -- the speech API ----------------------------------------------------------------------------------------
    def _on_serve_status(self, text: str) -> None:
        self.status_api.setText(text)
        self.status_api.setVisible(bool(text))
        self.tray.set_tooltip(f"CosyDesk · {text}" if text else "CosyDesk")

    def _on_serve_failed(self, why: str) -> None:
        self._tell(self.tr("Serve other apps: {why}").format(why=translate_message(why)), error=True)

    def shutdown(self) -> None:
        if self._shut:
            return
        self._shut = True
        self.serve.shutdown(timeout_s=max(0.1, self.window.close_wait_ms / 1000))  # the app exits right after
        self.tray.hide()
        if self.instance_server is not None:
            self.instance_server.close()
