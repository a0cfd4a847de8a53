"""The main window's menus and window-wide shortcuts: File, Settings (Preferences…, Ctrl+,), View and Help,
plus Speak / Stop / Pause as actions.

What it is for: building and labelling the menus, and the small handlers behind them (Preferences and what its
changes do: language, theme, audio output device, engine options, history size; Help dialogs). A mixin of
MainWindow.

What it must not do: speak, load models or touch the worker beyond stopping it for a device change.
"""

from __future__ import annotations

from PySide6.QtCore import Qt
from PySide6.QtGui import QAction, QKeySequence

from cosydesk import hub
from cosydesk.settings import Key
from cosydesk.ui import i18n, theme
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
        self.export_sentences_action = QAction(self)
        self.export_subtitles_action = QAction(self)
        self.file_menu.addAction(self.export_sentences_action)
        self.file_menu.addAction(self.export_subtitles_action)
        self.voices_action = QAction(self)
        self.voices_action.setObjectName("voicesAction")
        self.file_menu.addAction(self.voices_action)
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
        self.preferences_action = QAction(self)  # every setting, applied live (ui/preferences.py)
        self.preferences_action.setObjectName("preferencesAction")
        self.preferences_action.setShortcut(QKeySequence("Ctrl+,"))
        self.preferences_action.setMenuRole(QAction.MenuRole.PreferencesRole)
        self.settings_menu.addAction(self.preferences_action)
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
        self.export_sentences_action.setText(self.tr("Export one file per sentence…"))
        self.export_subtitles_action.setText(self.tr("Export subtitles (.srt, .vtt)…"))
        self.voices_action.setText(self.tr("Voice profiles…"))
        self.quit_action.setText(self.tr("Quit"))
        self.speak_action.setText(self.tr("Speak"))
        self.stop_action.setText(self.tr("Stop"))
        self.playback_menu.setTitle(self.tr("&Playback"))
        self.speak_action.setToolTip(self.tr("Speak the selection, or the whole text (Ctrl+Enter)"))
        self.stop_action.setToolTip(self.tr("Stop speaking (Esc)"))
        self.pause_action.setToolTip(self.tr("Pause or resume playback (Pause key)"))
        self.settings_menu.setTitle(self.tr("&Settings"))
        self.preferences_action.setText(self.tr("Preferences…"))
        self.view_menu.setTitle(self.tr("&View"))
        self.help_menu.setTitle(self.tr("&Help"))
        self.diagnostics_action.setText(self.tr("Diagnostics…"))
        self.about_action.setText(self.tr("About CosyDesk"))

    def open_diagnostics(self):
        """Help → Diagnostics: the doctor's checks, run in the background (the window stays responsive)."""
        from cosydesk.ui.diagnostics import DiagnosticsDialog

        known = [*self.settings.get(Key.EXTRA_MODEL_DIRS), self.settings.get(Key.MODEL_DIR)]
        dialog = DiagnosticsDialog(self, model_dirs=[p for p in dict.fromkeys(known) if p],
                                   models_dir=self.models_dir or hub.default_models_dir())
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

    def open_preferences(self, modal: bool = False, capabilities=None):
        """Settings → Preferences… (Ctrl+,): every setting, applied at once through apply_preference."""
        from cosydesk.ui.preferences import PreferencesDialog

        dialog = PreferencesDialog(self.settings, apply=self.apply_preference, capabilities=capabilities, parent=self)
        self.preferences_dialog = dialog  # refilled when an engine change is taken back (_check_runtime_actions)
        for add_section in getattr(self, "preferences_sections", ()):  # pages other parts add (the local API)
            add_section(dialog)
        if modal:
            dialog.exec()
        else:
            dialog.setAttribute(Qt.WidgetAttribute.WA_DeleteOnClose)
            dialog.show()
        return dialog

    def apply_preference(self, key: Key, value) -> None:
        """A setting changed in Preferences (already stored): make it take effect now."""
        if key == Key.LANGUAGE:
            self.set_language(value)
        elif key == Key.THEME:
            theme.apply_theme(value)
        elif key == Key.AUDIO_DEVICE:
            self.set_audio_device(value)
        elif key in (Key.DEVICE, Key.BACKEND, Key.PRECISION):
            self._set_runtime_option(key, value)  # reloads through load_model: the old model stays until then
        elif key == Key.HISTORY_SIZE:
            self.history.max_entries = int(value)

    def set_audio_device(self, name: str) -> None:
        self.settings.set(Key.AUDIO_DEVICE, name)
        self.controller.stop()
        self.player.set_device(name or None)

