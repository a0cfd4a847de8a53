"""The main window's menus and window-wide shortcuts: File, Settings (language, compute device, backend,
audio output), View and Help, plus Speak / Stop / Pause as actions.

What it is for: building and labelling the menus, and the small handlers that live only in them (language,
audio output device, Help dialogs). A mixin of MainWindow.

What it must not do: speak, load models or touch the worker beyond stopping it for a device change.
"""

from __future__ import annotations

from PySide6.QtCore import Qt
from PySide6.QtGui import QAction, QActionGroup, QKeySequence

from cosydesk import hub
from cosydesk.audio.player import list_output_devices
from cosydesk.settings import Key
from cosydesk.ui import i18n
from cosydesk.ui.recent_files import RecentFilesMenu, RecentTextFiles


class WindowMenus:
    """Mixin of MainWindow: menus, actions and their handlers."""

    def _build_menus(self) -> None:
        menu = self.menuBar()
        self.file_menu = menu.addMenu("")
        self.open_text_action = QAction(self)
        self.open_text_action.setShortcut(QKeySequence.StandardKey.Open)
        self.export_action = QAction(self)
        self.export_action.setShortcut(QKeySequence.StandardKey.Save)
        self.quit_action = QAction(self)
        self.quit_action.setShortcut(QKeySequence.StandardKey.Quit)
        self.file_menu.addAction(self.open_text_action)
        self.recent_files = RecentTextFiles(self.settings)
        self.recent_menu = RecentFilesMenu(self.recent_files, self.open_text_file, self)
        self.file_menu.addMenu(self.recent_menu)
        self.file_menu.addAction(self.export_action)
        self.file_menu.addSeparator()
        self.file_menu.addAction(self.quit_action)

        self.speak_action = QAction(self)
        self.speak_action.setShortcuts([QKeySequence("Ctrl+Return"), QKeySequence("Ctrl+Enter")])
        self.speak_action.setShortcutContext(Qt.ShortcutContext.WindowShortcut)
        self.stop_action = QAction(self)
        self.stop_action.setShortcut(QKeySequence(Qt.Key.Key_Escape))
        self.stop_action.setShortcutContext(Qt.ShortcutContext.WindowShortcut)
        self.pause_action = QAction(self)  # the keyboard's Pause key or a media play/pause key
        self.pause_action.setShortcuts([QKeySequence(Qt.Key.Key_Pause), QKeySequence(Qt.Key.Key_MediaTogglePlayPause)])
        self.pause_action.setShortcutContext(Qt.ShortcutContext.WindowShortcut)
        self.addAction(self.speak_action)
        self.addAction(self.stop_action)
        self.addAction(self.pause_action)
        self.playback_menu = menu.addMenu("")
        self.playback_menu.setToolTipsVisible(True)
        for action in (self.speak_action, self.stop_action, self.pause_action):
            self.playback_menu.addAction(action)
        self.playback_menu.addSeparator()
        for action in self.reading.actions():
            self.playback_menu.addAction(action)

        self.settings_menu = menu.addMenu("")
        self.language_menu = self.settings_menu.addMenu("")
        self.language_group = QActionGroup(self)
        self.language_actions: dict[str, QAction] = {}
        for code in ("system", "en", "zh_CN"):
            action = QAction(self.language_group)
            action.setCheckable(True)
            action.setData(code)
            self.language_menu.addAction(action)
            self.language_actions[code] = action
        self.language_actions.get(self.settings.get(Key.LANGUAGE), self.language_actions["system"]).setChecked(True)
        self.device_menu = self.settings_menu.addMenu("")
        self.device_group = QActionGroup(self)
        for code in ("auto", "cpu", "cuda"):
            action = QAction(code, self.device_group)
            action.setCheckable(True)
            action.setData(code)
            action.setChecked(code == self.settings.get(Key.DEVICE))
            self.device_menu.addAction(action)
        self.backend_menu = self.settings_menu.addMenu("")
        self.backend_group = QActionGroup(self)
        for code in ("auto", "eager", "cudagraph", "tensorrt"):
            action = QAction(code, self.backend_group)
            action.setCheckable(True)
            action.setData(code)
            action.setChecked(code == self.settings.get(Key.BACKEND))
            self.backend_menu.addAction(action)
        self.audio_menu = self.settings_menu.addMenu("")
        self.audio_menu.aboutToShow.connect(self._fill_audio_menu)
        self.audio_group = QActionGroup(self)
        self.view_menu = menu.addMenu("")
        self.view_menu.addAction(self.history_dock.toggleViewAction())
        self.view_menu.addAction(self.telemetry_dock.toggleViewAction())
        self.help_menu = menu.addMenu("")
        self.diagnostics_action = QAction(self)
        self.diagnostics_action.setObjectName("diagnosticsAction")
        self.help_menu.addAction(self.diagnostics_action)
        self.about_action = QAction(self)
        self.about_action.setObjectName("aboutAction")
        self.about_action.setMenuRole(QAction.MenuRole.AboutRole)
        self.help_menu.addAction(self.about_action)

    def _retranslate_menus(self) -> None:
        self.pause_action.setText(self.tr("Pause"))
        self.file_menu.setTitle(self.tr("&File"))
        self.open_text_action.setText(self.tr("Open text…"))
        self.recent_menu.retranslate()
        self.export_action.setText(self.tr("Export current utterance…"))
        self.quit_action.setText(self.tr("Quit"))
        self.speak_action.setText(self.tr("Speak"))
        self.stop_action.setText(self.tr("Stop"))
        self.playback_menu.setTitle(self.tr("&Playback"))
        self.speak_action.setToolTip(self.tr("Speak the selection, or the whole text (Ctrl+Enter)"))
        self.stop_action.setToolTip(self.tr("Stop speaking (Esc)"))
        self.pause_action.setToolTip(self.tr("Pause or resume playback (Pause key)"))
        self.settings_menu.setTitle(self.tr("&Settings"))
        self.language_menu.setTitle(self.tr("Language"))
        self.language_actions["system"].setText(self.tr("Follow the system"))
        self.language_actions["en"].setText("English")
        self.language_actions["zh_CN"].setText("中文（简体）")
        self.device_menu.setTitle(self.tr("Compute device"))
        self.backend_menu.setTitle(self.tr("Backend"))
        for action in self.backend_group.actions():
            if action.data() == "tensorrt":  # never run on a GPU of ours yet: never chosen by auto (backends.py)
                action.setText(self.tr("tensorrt (experimental)"))
                action.setToolTip(self.tr("TensorRT engines are built and cached, but none has run on a GPU "
                                          "of ours yet; auto never picks it"))
        self.audio_menu.setTitle(self.tr("Audio output"))
        self.view_menu.setTitle(self.tr("&View"))
        self.help_menu.setTitle(self.tr("&Help"))
        self.diagnostics_action.setText(self.tr("Diagnostics…"))
        self.about_action.setText(self.tr("About CosyDesk"))

    def open_diagnostics(self):
        """Help → Diagnostics: the doctor's checks, run in the background (the window stays responsive)."""
        from cosydesk.ui.diagnostics import DiagnosticsDialog

        dialog = DiagnosticsDialog(self)
        dialog.show()
        return dialog

    def open_about(self):
        """Help → About CosyDesk: version, libraries, data and models folders (non-modal)."""
        from cosydesk.ui.about import AboutDialog

        dialog = AboutDialog(self.data_dir, self.models_dir or hub.default_models_dir(), self)
        dialog.setAttribute(Qt.WidgetAttribute.WA_DeleteOnClose)
        dialog.show()
        return dialog

    def set_language(self, choice: str) -> str:
        self.settings.set(Key.LANGUAGE, choice)
        language = i18n.set_language(choice)
        # Qt also posts LanguageChange to every widget; re-label now so the switch is visible at once.
        self.retranslate()
        self.telemetry_dock.retranslate()
        self.history_panel.retranslate()
        self.history_panel.reload()
        return language

    def _fill_audio_menu(self) -> None:
        self.audio_menu.clear()
        for action in self.audio_group.actions():
            self.audio_group.removeAction(action)
        current = self.settings.get(Key.AUDIO_DEVICE)
        entries = [("", self.tr("System default"))] + [(name, name) for _, name in list_output_devices()]
        for value, text in entries:
            action = QAction(text, self.audio_group)
            action.setCheckable(True)
            action.setChecked(value == current)
            action.triggered.connect(lambda _=False, v=value: self.set_audio_device(v))
            self.audio_menu.addAction(action)

    def set_audio_device(self, name: str) -> None:
        self.settings.set(Key.AUDIO_DEVICE, name)
        self.controller.stop()
        self.player.set_device(name or None)

