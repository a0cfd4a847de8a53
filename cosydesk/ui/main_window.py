"""The main window: type, pick a voice and a style, press Ctrl+Enter, hear it; history and telemetry beside.

What it is for: wiring widgets to the SynthController (worker thread), the Player, the history store, voice
profiles and the telemetry dock. Every long operation goes through the controller; the UI thread only
reacts to signals and to a 100 ms housekeeping timer.

What it must not do: call the Synthesizer, wait on the worker thread or on PortAudio.
"""

from __future__ import annotations

from pathlib import Path

from PySide6.QtCore import QEvent, Qt, QTimer, Slot
from PySide6.QtGui import QAction, QActionGroup, QIcon, QKeySequence, QTextCursor
from PySide6.QtWidgets import (QComboBox, QDockWidget, QDoubleSpinBox, QFileDialog, QHBoxLayout, QLabel,
                               QMainWindow, QPlainTextEdit, QProgressBar, QPushButton, QVBoxLayout, QWidget)

from cosydesk import hub
from cosydesk.audio.player import Player, list_output_devices
from cosydesk.audio.profiles import VoiceProfileStore
from cosydesk.frontend.text_file import TextFileError, read_text_file
from cosydesk.runtime.types import Request
from cosydesk.settings import Key, Settings
from cosydesk.telemetry.sampler import TelemetrySampler
from cosydesk.ui import i18n
from cosydesk.ui.draft import DraftStore
from cosydesk.ui.drops import FileDrops, drop_kind
from cosydesk.ui.export_actions import AUDIO, SENTENCES, SUBTITLES, WindowExports
from cosydesk.ui.history import HistoryStore
from cosydesk.ui.history_panel import HistoryPanel
from cosydesk.ui.load_status import StatusLine, loading_text, show_load_progress, speak_tooltip
from cosydesk.ui.model_manager import ModelManagerDialog, known_model_dirs
from cosydesk.ui.recent_files import RecentFilesMenu, RecentTextFiles
from cosydesk.ui.resources import icon_path
from cosydesk.ui.telemetry_dock import TelemetryDock
from cosydesk.ui.voice_dialog import VoiceProfileDialog
from cosydesk.ui.worker import ChunkInfo, ModelSummary, SynthController, UtteranceResult

SPEAKER, PROFILE = "speaker", "profile"
# File > Open text…: larger files are refused with a message (a book is hours of speech; the editor stays responsive)
MAX_TEXT_FILE_BYTES = 4 * 1024 * 1024
DRAFT_SAVE_DELAY_MS = 1500  # after the last keystroke: a pause in typing, not every key


def voice_key(kind: str, name: str) -> str:
    """Item data of the speaker combo: kind and name in one string (QVariant keeps strings comparable)."""
    return f"{kind}:{name}"


class MainWindow(FileDrops, QMainWindow):
    def __init__(self, settings: Settings | None = None, synthesizer_factory=None, player: Player | None = None,
                 sampler: TelemetrySampler | None = None, data_dir: Path | None = None, warmup: bool = True,
                 models_dir: Path | None = None) -> None:
        super().__init__()
        self.setObjectName("mainWindow")
        self.settings = settings or Settings()
        self.data_dir = Path(data_dir) if data_dir else hub.app_data_dir()
        self.models_dir = models_dir
        audio_device = self.settings.get(Key.AUDIO_DEVICE) or None
        self.player = player if player is not None else Player(device=audio_device)
        self.sampler = sampler or TelemetrySampler()
        self.sampler.start()
        self.history = HistoryStore(self.data_dir / "history")
        self.voices = VoiceProfileStore(self.data_dir / "voices")
        self.controller = SynthController(synthesizer_factory, self.player, warmup=warmup, parent=self)
        self.model: ModelSummary | None = None
        self.state = "no_model"
        self.load_fraction = 0.0
        self.load_stage = ""
        # How long closing waits for the synthesis thread. The app's process exits right after its window
        # closes (run_app), so it waits a moment only; in-process users (tests) wait for a clean end.
        self.close_wait_ms = 10_000
        self.current_job: int | None = None
        self.last_result: UtteranceResult | None = None
        self._pending_request: Request | None = None
        self.exports = WindowExports(self)  # File > Export… of the current utterance; finished ones to history

        self._build_widgets()
        self._build_menus()
        self._connect()
        self.retranslate()
        self._restore()
        self.refresh_models()
        self.refresh_voices()
        self._keep_draft()

        self.housekeeping = QTimer(self)
        self.housekeeping.setInterval(100)
        self.housekeeping.timeout.connect(self._tick)
        self.housekeeping.start()
        self.accept_file_drops(self.text_edit.viewport())  # files onto the window or the editor: files_dropped

    # ------------------------------------------------------------------------------------------ building
    def _build_widgets(self) -> None:
        self.setWindowIcon(QIcon(str(icon_path())))
        central = QWidget(self)
        self.model_combo = QComboBox(central)
        self.model_combo.setObjectName("modelCombo")
        self.model_combo.setMinimumWidth(220)
        self.models_button = QPushButton(central)
        self.models_button.setObjectName("modelsButton")
        self.speaker_combo = QComboBox(central)
        self.speaker_combo.setObjectName("speakerCombo")
        self.speaker_combo.setMinimumWidth(160)
        self.new_voice_button = QPushButton(central)
        self.new_voice_button.setObjectName("newVoiceButton")
        self.style_combo = QComboBox(central)
        self.style_combo.setObjectName("styleCombo")
        self.style_combo.setEditable(True)
        self.style_combo.setInsertPolicy(QComboBox.InsertPolicy.NoInsert)
        self.style_combo.setMinimumWidth(160)
        self.speed_spin = QDoubleSpinBox(central)
        self.speed_spin.setObjectName("speedSpin")
        self.speed_spin.setRange(0.5, 2.0)
        self.speed_spin.setSingleStep(0.1)
        self.speed_spin.setDecimals(1)
        self.speed_spin.setSuffix("×")
        self.text_edit = QPlainTextEdit(central)
        self.text_edit.setObjectName("textEdit")
        self.speak_button = QPushButton(central)
        self.speak_button.setObjectName("speakButton")
        self.stop_button = QPushButton(central)
        self.stop_button.setObjectName("stopButton")
        self.pause_button = QPushButton(central)
        self.pause_button.setObjectName("pauseButton")
        self.pause_button.setCheckable(True)
        self.export_button = QPushButton(central)
        self.export_button.setObjectName("exportButton")
        self.error_label = QLabel(central)
        self.error_label.setObjectName("errorLabel")
        self.error_label.setWordWrap(True)
        self.error_label.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)
        self.model_label_caption = QLabel(central)
        self.voice_label_caption = QLabel(central)
        self.style_label_caption = QLabel(central)
        self.speed_label_caption = QLabel(central)

        top = QHBoxLayout()
        top.addWidget(self.model_label_caption)
        top.addWidget(self.model_combo, 1)
        top.addWidget(self.models_button)
        voice = QHBoxLayout()
        voice.addWidget(self.voice_label_caption)
        voice.addWidget(self.speaker_combo, 2)
        voice.addWidget(self.new_voice_button)
        voice.addSpacing(12)
        voice.addWidget(self.style_label_caption)
        voice.addWidget(self.style_combo, 2)
        voice.addSpacing(12)
        voice.addWidget(self.speed_label_caption)
        voice.addWidget(self.speed_spin)
        actions = QHBoxLayout()
        actions.addWidget(self.speak_button)
        actions.addWidget(self.stop_button)
        actions.addWidget(self.pause_button)
        actions.addStretch(1)
        actions.addWidget(self.export_button)
        layout = QVBoxLayout(central)
        layout.addLayout(top)
        layout.addLayout(voice)
        layout.addWidget(self.text_edit, 1)
        layout.addWidget(self.error_label)
        layout.addLayout(actions)
        self.setCentralWidget(central)

        self.history_panel = HistoryPanel(self.history, self)
        self.history_dock = QDockWidget(self)
        self.history_dock.setObjectName("historyDock")
        self.history_dock.setWidget(self.history_panel)
        self.addDockWidget(Qt.DockWidgetArea.BottomDockWidgetArea, self.history_dock)
        self.telemetry_dock = TelemetryDock(self.sampler, self.controller.recorder, self.player, self)
        self.addDockWidget(Qt.DockWidgetArea.RightDockWidgetArea, self.telemetry_dock)
        # Telemetry takes the full height on the right; history sits under the editor only.
        self.setCorner(Qt.Corner.BottomRightCorner, Qt.DockWidgetArea.RightDockWidgetArea)
        self.resizeDocks([self.telemetry_dock], [400], Qt.Orientation.Horizontal)
        self.resizeDocks([self.history_dock], [170], Qt.Orientation.Vertical)

        bar = self.statusBar()
        self.status_state = StatusLine(self)
        self.status_state.setObjectName("statusState")
        self.status_model = QLabel(self)
        self.status_model.setObjectName("statusModel")
        self.status_device = QLabel(self)
        self.status_device.setObjectName("statusDevice")
        self.status_backend = QLabel(self)
        self.status_backend.setObjectName("statusBackend")
        self.load_progress = QProgressBar(self)
        self.load_progress.setObjectName("loadProgress")
        self.load_progress.setRange(0, 0)
        self.load_progress.setTextVisible(False)
        self.load_progress.setMaximumWidth(160)
        self.load_progress.hide()
        bar.addWidget(self.status_state, 1)
        bar.addPermanentWidget(self.load_progress)
        for label in (self.status_model, self.status_device, self.status_backend):
            bar.addPermanentWidget(label)
        self.resize(1180, 760)

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

    def _connect(self) -> None:
        self.speak_button.clicked.connect(self.speak)
        self.stop_button.clicked.connect(self.stop)
        self.pause_button.clicked.connect(self.toggle_pause)
        self.pause_action.triggered.connect(self.toggle_pause)
        self.export_button.clicked.connect(self._ask_export)
        self.export_action.triggered.connect(self._ask_export)
        self.export_sentences_action.triggered.connect(lambda: self.exports.ask(SENTENCES))
        self.export_subtitles_action.triggered.connect(lambda: self.exports.ask(SUBTITLES))
        self.open_text_action.triggered.connect(self._ask_open_text)
        self.quit_action.triggered.connect(self.close)
        self.diagnostics_action.triggered.connect(lambda: self.open_diagnostics())
        self.about_action.triggered.connect(lambda: self.open_about())
        self.speak_action.triggered.connect(self.speak)
        self.stop_action.triggered.connect(self.stop)
        self.models_button.clicked.connect(lambda: self.open_model_manager())
        self.new_voice_button.clicked.connect(lambda: self.open_voice_dialog())
        self.voices_action.triggered.connect(lambda: self.open_voice_manager())
        self.model_combo.activated.connect(self._on_model_chosen)
        self.language_group.triggered.connect(lambda a: self.set_language(a.data()))
        self.device_group.triggered.connect(lambda a: self._set_runtime_option(Key.DEVICE, a.data()))
        self.backend_group.triggered.connect(lambda a: self._set_runtime_option(Key.BACKEND, a.data()))
        self.speaker_combo.currentIndexChanged.connect(self._update_controls)
        self.history_panel.replayRequested.connect(self.replay)
        self.history_panel.message.connect(self.show_message)
        worker = self.controller.worker
        worker.loadProgress.connect(self._on_load_progress)
        worker.loaded.connect(self._on_loaded)
        worker.loadFailed.connect(self._on_load_failed)
        # Bound slots only: a lambda connected to a signal of the worker thread would run in that thread.
        worker.warmingUp.connect(self._on_warming_up)
        worker.warmedUp.connect(self._on_warmed_up)
        worker.jobStarted.connect(self._on_job_started)
        worker.chunkReady.connect(self._on_chunk)
        worker.jobFailed.connect(self._on_job_failed)
        worker.jobFinished.connect(self._on_job_finished)
        worker.audioError.connect(self._on_audio_error)

    # ------------------------------------------------------------------------------------------ texts
    def changeEvent(self, event) -> None:  # noqa: N802
        if event.type() == QEvent.Type.LanguageChange:
            self.retranslate()
        super().changeEvent(event)

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

    def retranslate(self) -> None:
        # Qt appends the application's display name (" — CosyDesk"), so the name is not repeated here.
        self.setWindowTitle(self.tr("Local speech synthesis"))
        self.model_label_caption.setText(self.tr("Model"))
        self.models_button.setText(self.tr("Models…"))
        self.voice_label_caption.setText(self.tr("Voice"))
        self.new_voice_button.setText(self.tr("New voice…"))
        self.style_label_caption.setText(self.tr("Style"))
        self.speed_label_caption.setText(self.tr("Speed"))
        self.text_edit.setPlaceholderText(self.tr("Type or paste Chinese or English text, then press Ctrl+Enter."))
        self.speak_button.setText(self.tr("Speak"))
        self.stop_button.setText(self.tr("Stop"))
        self.stop_button.setToolTip(self.tr("Stop (Esc)"))
        self.pause_button.setToolTip(self.tr("Pause or resume playback (Pause key)"))
        self.pause_action.setText(self.tr("Pause"))
        self.export_button.setText(self.tr("Export…"))
        self.history_dock.setWindowTitle(self.tr("History"))
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
        self.speaker_combo.setAccessibleName(self.tr("Voice"))
        self.style_combo.setAccessibleName(self.tr("Style"))
        self.text_edit.setAccessibleName(self.tr("Text to speak"))
        self.refresh_styles()
        self._update_status()
        self._update_controls()

    def set_language(self, choice: str) -> str:
        self.settings.set(Key.LANGUAGE, choice)
        language = i18n.set_language(choice)
        # Qt also posts LanguageChange to every widget; re-label now so the switch is visible at once.
        self.retranslate()
        self.telemetry_dock.retranslate()
        self.history_panel.retranslate()
        self.history_panel.reload()
        return language

    # ------------------------------------------------------------------------------------------ models
    def refresh_models(self) -> None:
        current = self.settings.get(Key.MODEL_DIR)
        self.model_combo.blockSignals(True)
        self.model_combo.clear()
        folders = known_model_dirs(self.settings, self.models_dir)
        if current and Path(current) not in folders and hub.check_model_dir(current).loadable:
            folders.append(Path(current))
        for folder in folders:
            self.model_combo.addItem(folder.name, str(folder))
            self.model_combo.setItemData(self.model_combo.count() - 1, str(folder), Qt.ItemDataRole.ToolTipRole)
        index = self.model_combo.findData(current)
        self.model_combo.setCurrentIndex(index if index >= 0 else -1)
        self.model_combo.setPlaceholderText(self.tr("No model installed"))
        self.model_combo.blockSignals(False)

    def load_model(self, folder: str | Path) -> bool:
        report = hub.check_model_dir(folder)
        if not report.loadable:
            self.show_message(self.tr("Cannot use {folder}: {problems}").format(
                folder=folder, problems="; ".join(report.problems)), True)
            return False
        self.settings.set(Key.MODEL_DIR, str(report.path))
        self.refresh_models()
        self.model = None
        self.current_job = None
        self.load_fraction = 0.0
        self.load_stage = ""
        show_load_progress(self.load_progress, 0.0, "")
        self._set_state("loading")
        self.show_message("", False)
        self.controller.load(str(report.path), device=self.settings.get(Key.DEVICE),
                             backend=self.settings.get(Key.BACKEND), precision=self.settings.get(Key.PRECISION))
        return True

    def _on_model_chosen(self, index: int) -> None:
        folder = self.model_combo.itemData(index)
        if folder and (self.model is None or folder != self.model.model_dir):
            self.load_model(folder)

    def _set_runtime_option(self, key: Key, value: str) -> None:
        self.settings.set(key, value)
        if self.model is not None:
            self.load_model(self.model.model_dir)

    def open_model_manager(self, select: str | None = None, modal: bool = True) -> ModelManagerDialog:
        dialog = ModelManagerDialog(self.settings, self.models_dir, select=select, parent=self)
        dialog.modelChosen.connect(lambda folder: (self.refresh_models(), self.load_model(folder)))
        if modal:
            dialog.exec()
            self.refresh_models()
        else:
            dialog.setAttribute(Qt.WidgetAttribute.WA_DeleteOnClose)
            dialog.show()
        return dialog

    @Slot(str, float)
    def _on_load_progress(self, stage: str, fraction: float) -> None:
        self.load_fraction = max(self.load_fraction, min(1.0, fraction))  # never backwards
        self.load_stage = stage
        show_load_progress(self.load_progress, self.load_fraction, stage)
        self._update_status()

    @Slot(object)
    def _on_loaded(self, summary: ModelSummary) -> None:
        self.model = summary
        self._set_state("ready")
        self.refresh_voices()
        self.refresh_styles()
        if self._pending_request is not None:
            request, self._pending_request = self._pending_request, None
            self.current_job = self.controller.speak(request)

    @Slot(str)
    def _on_load_failed(self, message: str) -> None:
        self.model = None
        self._set_state("no_model")
        self.show_message(message, True)

    @Slot()
    def _on_warming_up(self) -> None:
        self._set_state("warming")

    @Slot(str)
    def _on_audio_error(self, message: str) -> None:
        self.show_message(self.tr("Audio: {m}").format(m=message), True)

    @Slot(float)
    def _on_warmed_up(self, seconds: float) -> None:
        if self.state == "warming":
            self._set_state("ready")

    # ------------------------------------------------------------------------------------------ voices
    def refresh_voices(self) -> None:
        wanted = self.speaker_combo.currentText() or self.settings.get(Key.SPEAKER)
        self.speaker_combo.blockSignals(True)
        self.speaker_combo.clear()
        speakers = self.model.speakers if self.model else []
        for name in speakers:
            self.speaker_combo.addItem(name, voice_key(SPEAKER, name))
        zero_shot = self.model is None or self.model.modes.get("zero_shot", False)
        if zero_shot:
            profiles = self.voices.list()
            if profiles and speakers:
                self.speaker_combo.insertSeparator(self.speaker_combo.count())
            for profile in profiles:
                self.speaker_combo.addItem("🎙 " + profile.name, voice_key(PROFILE, profile.name))
        index = max(0, self.speaker_combo.findText(wanted)) if wanted else 0
        if self.speaker_combo.count():
            self.speaker_combo.setCurrentIndex(index)
        self.speaker_combo.setPlaceholderText(self.tr("Create a voice profile"))
        self.speaker_combo.blockSignals(False)
        self.new_voice_button.setEnabled(zero_shot)
        self._update_controls()

    def refresh_styles(self) -> None:
        if not hasattr(self, "style_combo"):
            return
        typed = self.style_combo.currentText() if self.style_combo.currentIndex() < 0 else None
        current = self.style_combo.currentData()
        self.style_combo.blockSignals(True)
        self.style_combo.clear()
        self.style_combo.addItem(self.tr("(no style)"), "")
        if self.model is not None:
            chinese = i18n.resolve_language(self.settings.get(Key.LANGUAGE)) == "zh_CN"
            for label in self.model.styles:
                shown = self.model.style_labels_zh.get(label, label) if chinese else label
                self.style_combo.addItem(shown, label)
        index = self.style_combo.findData(current) if current else 0
        self.style_combo.setCurrentIndex(max(0, index))
        if typed:
            self.style_combo.setEditText(typed)
        self.style_combo.blockSignals(False)
        self._update_controls()

    def current_voice(self) -> tuple[str, str] | None:
        data = self.speaker_combo.currentData()
        if not data or ":" not in data:
            return None
        kind, name = data.split(":", 1)
        return kind, name

    def current_instruct(self) -> str | None:
        index = self.style_combo.currentIndex()
        text = self.style_combo.currentText().strip()
        if index >= 0 and text == self.style_combo.itemText(index):
            return self.style_combo.itemData(index) or None
        return text or None  # free text typed by the user

    def open_voice_dialog(self, modal: bool = True) -> VoiceProfileDialog:
        reserved = tuple(self.model.speakers) if self.model else ()
        dialog = VoiceProfileDialog(self.voices, reserved_names=reserved, parent=self)
        dialog.accepted.connect(lambda: self._on_profile_saved(dialog))
        if modal:
            dialog.exec()
        else:
            dialog.show()
        return dialog

    def open_voice_manager(self, modal: bool = True):
        """File > Voice profiles…: preview, rename, re-record, delete (voice_manager.py)."""
        from cosydesk.ui.voice_manager import VoiceManagerDialog

        reserved = tuple(self.model.speakers) if self.model else ()
        dialog = VoiceManagerDialog(self.voices, reserved, preview=self.controller.replay, parent=self)
        dialog.changed.connect(self.refresh_voices)
        dialog.exec() if modal else dialog.show()
        return dialog

    def _on_profile_saved(self, dialog: VoiceProfileDialog) -> None:
        if dialog.profile is not None:
            self.refresh_voices()
            index = self.speaker_combo.findData(voice_key(PROFILE, dialog.profile.name))
            if index >= 0:
                self.speaker_combo.setCurrentIndex(index)

    # ------------------------------------------------------------------------------------------ speaking
    def text_to_speak(self) -> str:
        selected = self.text_edit.textCursor().selectedText().replace("\u2029", "\n")
        return selected if selected.strip() else self.text_edit.toPlainText()

    def build_request(self, text: str) -> Request:
        voice = self.current_voice()
        kwargs: dict = {"text": text, "instruct": self.current_instruct(), "speed": round(self.speed_spin.value(), 2)}
        if voice and voice[0] == PROFILE:
            profile = self.voices.get(voice[1])
            if profile is not None:
                kwargs.update(prompt_wav=str(profile.wav_path), prompt_text=profile.transcript)
        elif voice:
            kwargs["speaker"] = voice[1]
        return Request(**kwargs)

    @Slot()
    def speak(self) -> int | None:
        text = self.text_to_speak()
        if not text.strip():
            self.show_message(self.tr("Type something to say first."), True)
            return None
        if self.state in ("no_model",) or (self.model is None and self.state != "loading"):
            self.show_message(self.tr("No model is loaded: choose or download one with “Models…”."), True)
            return None
        self.show_message("", False)
        request = self.build_request(text)
        self._remember_voice()
        if self.model is None:  # still loading: speak as soon as it is ready
            self._pending_request = request
            return None
        self.current_job = self.controller.speak(request)
        voice = self.current_voice()
        self.exports.spoken(self.current_job, request, voice[1] if voice else "",
                            Path(self.model.model_dir).name if self.model else "")
        self._set_state("speaking")
        return self.current_job

    @Slot()
    def stop(self) -> None:
        self._pending_request = None
        self.controller.stop()
        self.current_job = None
        if self.state == "speaking":
            self._set_state("ready")
        self._update_controls()

    @Slot()
    def toggle_pause(self) -> None:
        """Pause the audio where it is (synthesis goes on into the queue) or resume it; nothing while silent."""
        if self.player.paused:
            self.player.resume()
        else:
            self.player.pause()
        self._update_controls()

    def replay(self, entry_id: str) -> None:
        try:
            pcm, rate = self.history.audio(entry_id)
        except (KeyError, OSError) as error:
            self.show_message(str(error), True)
            return
        self.current_job = self.controller.replay(pcm, rate)
        self._set_state("speaking")

    @Slot(int)
    def _on_job_started(self, job_id: int) -> None:
        if job_id == self.current_job:
            self._set_state("speaking")

    @Slot(object)
    def _on_chunk(self, info: ChunkInfo) -> None:
        if info.job_id == self.current_job and info.first_audio_ms is not None:
            self.status_state.setText(self.tr("Speaking… first audio after {ms} ms").format(
                ms=f"{info.first_audio_ms:.0f}"))

    @Slot(int, str)
    def _on_job_failed(self, job_id: int, message: str) -> None:
        if job_id == self.current_job:
            self.show_message(message, True)

    @Slot(object)
    def _on_job_finished(self, result: UtteranceResult) -> None:
        if not result.extra.get("replay"):
            self.exports.job_finished(result)  # history (a stopped one marked partial), waiting exports
        if result.job_id != self.current_job:
            return
        self.current_job = None
        if self.state == "speaking":
            self._set_state("ready")

    # ------------------------------------------------------------------------------------------ open text
    def _ask_open_text(self) -> None:
        path, _ = QFileDialog.getOpenFileName(self, self.tr("Open text"), "",
                                              self.tr("Text files (*.txt);;All files (*)"))
        if path:
            self.open_text_file(path)

    def open_text_file(self, path: str | Path) -> bool:
        """Put a text file's contents in the editor, decoded as the CLI reads ``--text-file`` (``read_text_file``:
        UTF-8, UTF-16 with a mark or GB18030; binary files refused). Replaces the editor's text as one edit, so
        Ctrl+Z brings the old text back; a file that cannot be read leaves the editor as it was and says why. Opened files go to the top of File > Open Recent;
        one that is gone leaves it."""
        try:
            text = read_text_file(path, max_bytes=MAX_TEXT_FILE_BYTES)
        except TextFileError as error:
            self.show_message(str(error), True)
            if not Path(path).exists():
                self.recent_files.forget(path)
            return False
        cursor = self.text_edit.textCursor()
        cursor.select(QTextCursor.SelectionType.Document)
        cursor.insertText(text)
        self.recent_files.add(path)
        self.show_message(self.tr("Opened {name}").format(name=Path(path).name), False)
        return True

    # ------------------------------------------------------------------------------------------ dropped files
    def files_dropped(self, paths: list[Path]) -> bool:
        """Files dragged onto the window: a folder goes to the model manager (as "Add folder…"), a recording to a
        new voice (the voice dialog with it loaded), anything else to the editor (as File > Open text…)."""
        if len(paths) != 1:
            self.show_message(self.tr("Drop one file or folder at a time."), True)
            return False
        path = paths[0]
        kind = drop_kind(path)
        if kind == "folder":
            return self.open_model_manager(modal=False).add_folder(path)
        if kind == "audio":
            return self.open_voice_dialog(modal=False).load_file(path)
        return self.open_text_file(path)

    # ------------------------------------------------------------------------------------------ export
    def _ask_export(self) -> None:
        self.exports.ask(AUDIO)

    def export_current(self, path: str | Path) -> bool:
        """Export the current utterance to `path` (when it is still being synthesised: once it is complete)."""
        return self.exports.export(path)

    # ------------------------------------------------------------------------------------------ audio device
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

    # ------------------------------------------------------------------------------------------ state
    def show_message(self, text: str, is_error: bool = False) -> None:
        self.error_label.setText(text)
        self.error_label.setStyleSheet("" if is_error else "color: #1e6b30; font-weight: normal;")
        self.error_label.setVisible(bool(text))

    def _set_state(self, state: str) -> None:
        self.state = state
        self.load_progress.setVisible(state == "loading")
        self._update_status()
        self._update_controls()

    def _update_status(self) -> None:
        if not hasattr(self, "status_state"):
            return
        names = {
            "no_model": self.tr("No model loaded"),
            "loading": loading_text(Path(self.settings.get(Key.MODEL_DIR) or "").name, self.load_stage,
                                    self.load_fraction),
            "warming": self.tr("Warming up…"),
            "ready": self.tr("Ready"),
            "speaking": self.tr("Speaking…"),
        }
        if not (self.state == "speaking" and self.status_state.text().startswith(names["speaking"][:-1])):
            self.status_state.setText(names.get(self.state, self.state))
        model = self.model
        self.status_model.setText(self.tr("Model: {name} ({version}, {rate} Hz)").format(
            name=Path(model.model_dir).name, version=model.version, rate=model.sample_rate) if model else "")
        self.status_device.setText(self.tr("Device: {d}").format(d=model.device) if model else "")
        self.status_backend.setText(self.tr("Backend: {b}").format(b=model.backend) if model else "")

    def _update_controls(self) -> None:
        if not hasattr(self, "stop_button"):
            return
        loaded = self.model is not None
        self.speak_button.setEnabled(loaded)
        self.speak_action.setEnabled(loaded)
        tooltip = speak_tooltip(loaded, self.state == "loading")
        if self.speak_button.toolTip() != tooltip:
            self.speak_button.setToolTip(tooltip)
        busy = self.state == "speaking" or self.player.is_playing or self._pending_request is not None
        self.stop_button.setEnabled(busy)
        paused = self.player.paused
        self.pause_button.setEnabled(self.player.is_playing)
        self.pause_button.setChecked(paused)
        self.pause_button.setText(self.tr("Resume") if paused else self.tr("Pause"))
        self.export_button.setEnabled(self.last_result is not None or self.exports.speaking_job() is not None)
        has_styles = bool(self.model and self.model.styles) or bool(
            self.model and (self.model.modes.get("instruct") or self.model.modes.get("instruct2")))
        self.style_combo.setEnabled(has_styles)
        self.speed_spin.setEnabled(self.model is not None)

    def _tick(self) -> None:
        self.player.reap()
        self._update_controls()

    def _remember_voice(self) -> None:
        self.settings.set(Key.SPEAKER, self.speaker_combo.currentText())
        self.settings.set(Key.SPEED, self.speed_spin.value())

    def _restore(self) -> None:
        geometry = self.settings.get(Key.GEOMETRY)
        if geometry:
            self.restoreGeometry(geometry)
        state = self.settings.get(Key.WINDOW_STATE)
        if state:
            self.restoreState(state)
        self.speed_spin.setValue(self.settings.get(Key.SPEED))

    def _keep_draft(self) -> None:
        """The editor starts with the text it had when the app last closed, and keeps it on disk from then on:
        saved once the typing has paused for DRAFT_SAVE_DELAY_MS, and at shutdown."""
        self.draft = DraftStore(self.data_dir)
        text = self.draft.load()
        if text:
            self.text_edit.setPlainText(text)
        self.draft_timer = QTimer(self)
        self.draft_timer.setSingleShot(True)
        self.draft_timer.setInterval(DRAFT_SAVE_DELAY_MS)
        self.draft_timer.timeout.connect(self.save_draft)
        self.text_edit.textChanged.connect(self.draft_timer.start)

    def save_draft(self) -> bool:
        return self.draft.save(self.text_edit.toPlainText())

    # ------------------------------------------------------------------------------------------ shutdown
    def shutdown(self) -> None:
        """Stop audio and the worker thread (waiting close_wait_ms at most), save the editor's text and the
        window layout. Safe to call twice."""
        if getattr(self, "_shut", False):
            return
        self._shut = True
        self.draft_timer.stop()
        self.save_draft()
        self.history_panel.shutdown()  # what Undo could still bring back is deleted for good
        self.housekeeping.stop()
        self.telemetry_dock.timer.stop()
        self.settings.set(Key.GEOMETRY, self.saveGeometry())
        self.settings.set(Key.WINDOW_STATE, self.saveState())
        self.settings.sync()
        self.controller.shutdown(self.close_wait_ms)
        self.sampler.stop()

    def closeEvent(self, event) -> None:  # noqa: N802
        self.shutdown()
        super().closeEvent(event)
