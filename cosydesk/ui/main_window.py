"""The main window: type, pick a voice and a style, press Ctrl+Enter, hear it; history and telemetry beside.

What it is for: wiring widgets to the SynthController (worker thread), the Player, the history store, voice
profiles and the telemetry dock. Every long operation goes through the controller; the UI thread only
reacts to signals and to a housekeeping timer (100 ms while busy, 500 ms idle).

The window is assembled from mixins, one concern each: window_layout (widgets), window_menus (menus and
actions), model_bar (models), voice_bar (voices and styles), speak_control (speaking and job signals),
file_actions (open, drop, export, draft) and window_status (state, status bar, enabled controls). This module
builds them in order, connects the signals, and saves and restores the window. The mixins' handlers carry no
@Slot: PySide6 runs a @Slot defined on a non-QObject base in the emitting thread, while a plain bound method of
the window is queued to the window's (UI) thread as it must be.

What it must not do: call the Synthesizer, wait on the worker thread or on PortAudio.
"""

from __future__ import annotations

from pathlib import Path

from PySide6.QtCore import QEvent, QTimer
from PySide6.QtWidgets import QMainWindow

from cosydesk import hub
from cosydesk.audio.player import Player
from cosydesk.audio.profiles import VoiceProfileStore
from cosydesk.runtime.types import Request
from cosydesk.settings import Key, Settings
from cosydesk.telemetry.sampler import TelemetrySampler
from cosydesk.ui.drops import FileDrops
from cosydesk.ui.file_actions import FileActions
from cosydesk.ui.history import HistoryStore
from cosydesk.ui.model_bar import ModelBar
from cosydesk.ui.reading import ReadingProgress
from cosydesk.ui.speak_control import SpeakControl
from cosydesk.ui.voice_bar import PROFILE, SPEAKER, VoiceBar, voice_key
from cosydesk.ui.window_layout import WindowLayout
from cosydesk.ui.window_menus import WindowMenus
from cosydesk.ui import theme
from cosydesk.ui.window_status import IDLE_TICK_MS, WindowStatus
from cosydesk.ui.worker import ModelSummary, SynthController, UtteranceResult
from cosydesk.ui.export_actions import SENTENCES, SUBTITLES, WindowExports

__all__ = ["MainWindow", "PROFILE", "SPEAKER", "voice_key"]


class MainWindow(WindowLayout, WindowMenus, ModelBar, VoiceBar, SpeakControl, FileActions, WindowStatus, FileDrops,
                 QMainWindow):
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
        self.history = HistoryStore(self.data_dir / "history", max_entries=self.settings.get(Key.HISTORY_SIZE))
        theme.apply_theme(self.settings.get(Key.THEME))
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
        self.reading = ReadingProgress(self)
        self.statusBar().addPermanentWidget(self.reading.label)
        self.statusBar().addPermanentWidget(self.reading.bar)
        self._build_menus()
        self._connect()
        self.retranslate()
        self._restore()
        self.refresh_models()
        self.refresh_voices()
        self._keep_draft()

        self.housekeeping = QTimer(self)
        self.housekeeping.setInterval(IDLE_TICK_MS)  # _tick runs it at BUSY_TICK_MS while audio plays
        self.housekeeping.timeout.connect(self._tick)
        self.housekeeping.start()
        self.accept_file_drops(self.text_edit.viewport())  # files onto the window or the editor: files_dropped

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
        self.preferences_action.triggered.connect(lambda: self.open_preferences())
        self.speaker_combo.currentIndexChanged.connect(self._update_controls)
        self.history_panel.replayRequested.connect(self.replay)
        self.history_panel.message.connect(self.show_message)
        worker = self.controller.worker
        worker.loadProgress.connect(self._on_load_progress)
        worker.loaded.connect(self._on_loaded)
        worker.loadFailed.connect(self._on_load_failed)
        worker.loadRefused.connect(self._keep_previous_model)
        # Bound slots only: a lambda connected to a signal of the worker thread would run in that thread.
        worker.warmingUp.connect(self._on_warming_up)
        worker.warmedUp.connect(self._on_warmed_up)
        worker.jobStarted.connect(self._on_job_started)
        worker.chunkReady.connect(self._on_chunk)
        worker.jobFailed.connect(self._on_job_failed)
        worker.jobFinished.connect(self._on_job_finished)
        worker.audioError.connect(self._on_audio_error)
        worker.bufferingChanged.connect(self._on_buffering)
        worker.reloadFailed.connect(self._keep_previous_model)

    # ------------------------------------------------------------------------------------------ texts
    def changeEvent(self, event) -> None:  # noqa: N802
        if event.type() == QEvent.Type.LanguageChange:
            self.retranslate()
        super().changeEvent(event)

    def retranslate(self) -> None:
        self._retranslate_widgets()
        self._retranslate_menus()
        self.reading.retranslate()
        self.refresh_styles()
        self._update_status()
        self._update_controls()

    def _restore(self) -> None:
        geometry = self.settings.get(Key.GEOMETRY)
        if geometry:
            self.restoreGeometry(geometry)
        state = self.settings.get(Key.WINDOW_STATE)
        if state:
            self.restoreState(state)
        self.speed_spin.setValue(self.settings.get(Key.SPEED))

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
