"""The main window's widgets and their layout: model bar, voice bar, editor, buttons, docks, status bar.

What it is for: building the widgets MainWindow is made of (`_build_widgets`) and labelling them in the current
language (`_retranslate_widgets`). A mixin of MainWindow; the names it creates are the window's attributes.

What it must not do: connect signals or hold behaviour (main_window.py wires them).
"""

from __future__ import annotations

from PySide6.QtCore import Qt
from PySide6.QtGui import QFont, QIcon
from PySide6.QtWidgets import (QComboBox, QDockWidget, QDoubleSpinBox, QHBoxLayout, QLabel, QPlainTextEdit,
                               QProgressBar, QPushButton, QVBoxLayout, QWidget)

from cosydesk.runtime.types import SPEED_RANGE
from cosydesk.ui.history_panel import HistoryPanel
from cosydesk.ui.load_status import StatusLine
from cosydesk.ui.resources import icon_path
from cosydesk.ui.telemetry_dock import TelemetryDock


class WindowLayout:
    """Mixin of MainWindow: the widgets."""

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
        self.speed_spin.setRange(*SPEED_RANGE)
        self.speed_spin.setSingleStep(0.1)
        self.speed_spin.setDecimals(1)
        self.speed_spin.setSuffix("×")
        self.text_edit = QPlainTextEdit(central)
        self.text_edit.setObjectName("textEdit")
        self.text_edit.setTabChangesFocus(True)  # Tab moves on to the next control, as everywhere else
        # Qt shapes Latin text only for kerning and ligatures (cosmetic); scripts that need shaping still get it.
        # Skipping it lays out a 100,000-character paragraph in ~2/3 of the time (the paste / open / first paint
        # is one UI-thread block: tests/ui/test_long_text_ui_gap.py).
        editor_font = self.text_edit.font()
        editor_font.setStyleStrategy(QFont.StyleStrategy.PreferNoShaping)
        self.text_edit.setFont(editor_font)
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

    def _retranslate_widgets(self) -> None:
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
        self.export_button.setText(self.tr("Export…"))
        self.export_button.setToolTip(self.tr("Save the current utterance as WAV, FLAC, MP3, Ogg or Opus (Ctrl+S)"))
        self.models_button.setToolTip(self.tr("Download, add or remove models"))
        self.new_voice_button.setToolTip(self.tr("Record or open a short recording to make a voice profile"))
        self.model_combo.setToolTip(self.tr("The model that speaks; changing it loads the new one first"))
        self.speaker_combo.setToolTip(self.tr("Who speaks: a built-in speaker or one of your voice profiles"))
        self.speed_spin.setToolTip(self.tr("Speaking rate: 0.25 to 4 times normal speed"))
        self.text_edit.setToolTip(self.tr("The text to speak; Ctrl+Enter speaks it, Tab moves to the next control"))
        self.history_dock.setWindowTitle(self.tr("History"))
        self.speaker_combo.setAccessibleName(self.tr("Voice"))
        self.style_combo.setAccessibleName(self.tr("Style"))
        self.text_edit.setAccessibleName(self.tr("Text to speak"))
