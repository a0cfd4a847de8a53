"""New voice profile (or a new recording for an existing one): a WAV file or a microphone recording, plus what
is said in it."""

from __future__ import annotations

from pathlib import Path

import numpy as np
from PySide6.QtCore import QTimer
from PySide6.QtWidgets import (QDialog, QDialogButtonBox, QFileDialog, QFormLayout, QHBoxLayout, QLabel, QLineEdit,
                               QPlainTextEdit, QProgressBar, QPushButton, QVBoxLayout, QWidget)

from cosydesk.audio.player import AudioDeviceError
from cosydesk.audio.profiles import (MAX_SECONDS, ProfileError, VoiceProfile, VoiceProfileStore, check_prompt_audio,
                                     load_prompt_audio)
from cosydesk.audio.recorder import MicRecorder
from cosydesk.ui.drops import FileDrops
from cosydesk.ui.error_text import display_message


class VoiceProfileDialog(FileDrops, QDialog):
    def __init__(self, store: VoiceProfileStore, reserved_names: tuple[str, ...] = (),
                 recorder_factory=MicRecorder, parent: QWidget | None = None,
                 replacing: VoiceProfile | None = None, max_seconds: float = MAX_SECONDS) -> None:
        super().__init__(parent)
        # how long a recording may run (Preferences: "Voice recordings up to"); never above what the models take
        self.max_seconds = min(max(float(max_seconds), 1.0), MAX_SECONDS)
        self.replacing = replacing  # re-record: this profile keeps its name, gets new audio and transcript
        self.setObjectName("voiceProfileDialog")
        self.store = store
        self.reserved_names = reserved_names
        self._recorder_factory = recorder_factory
        self._recorder: MicRecorder | None = None
        self.pcm: np.ndarray | None = None
        self.sample_rate = 0
        self.profile: VoiceProfile | None = None

        self.name_edit = QLineEdit(self)
        self.name_edit.setObjectName("voiceNameEdit")
        self.file_button = QPushButton(self.tr("Choose WAV file…"), self)
        self.file_button.setObjectName("voiceFileButton")
        self.record_button = QPushButton(self.tr("Record"), self)
        self.record_button.setObjectName("voiceRecordButton")
        self.record_button.setCheckable(True)
        self.level = QProgressBar(self)
        self.level.setRange(0, 100)
        self.level.setTextVisible(False)
        self.level.setMaximumHeight(8)
        self.audio_label = QLabel(self.tr("No audio yet."), self)
        self.audio_label.setObjectName("voiceAudioLabel")
        self.transcript_edit = QPlainTextEdit(self)
        self.transcript_edit.setObjectName("voiceTranscriptEdit")
        self.transcript_edit.setPlaceholderText(self.tr("Type exactly what is said in the recording."))
        self.transcript_edit.setMaximumHeight(90)
        self.problems_label = QLabel(self)
        self.problems_label.setObjectName("voiceProblemsLabel")
        self.problems_label.setWordWrap(True)
        self.problems_label.setProperty("message", "error")  # the theme's error colour (light and dark)
        buttons = QDialogButtonBox(QDialogButtonBox.StandardButton.Save | QDialogButtonBox.StandardButton.Cancel, self)
        buttons.accepted.connect(self.save)
        buttons.rejected.connect(self.reject)
        source = QHBoxLayout()
        source.addWidget(self.file_button)
        source.addWidget(self.record_button)
        form = QFormLayout()
        form.addRow(self.tr("Name"), self.name_edit)
        form.addRow(self.tr("Audio (3–30 s)"), source)
        form.addRow("", self.level)
        form.addRow("", self.audio_label)
        form.addRow(self.tr("Transcript"), self.transcript_edit)
        layout = QVBoxLayout(self)
        layout.addLayout(form)
        layout.addWidget(self.problems_label)
        layout.addWidget(buttons)
        self.setWindowTitle(self.tr("New voice profile"))
        if replacing is not None:
            self.setWindowTitle(self.tr("Re-record “{name}”").format(name=replacing.name))
            self.name_edit.setText(replacing.name)
            self.name_edit.setReadOnly(True)
            self.transcript_edit.setPlainText(replacing.transcript)
        self.file_button.clicked.connect(self._ask_file)
        self.record_button.toggled.connect(self._toggle_recording)
        # a recording dragged onto the dialog (its text fields included) loads as "Choose WAV file…" would
        self.accept_file_drops(self.name_edit, self.transcript_edit.viewport())
        self._meter = QTimer(self)
        self._meter.setInterval(100)
        self._meter.timeout.connect(self._update_meter)

    # -- audio sources ------------------------------------------------------------------------------------
    def _ask_file(self) -> None:
        path, _ = QFileDialog.getOpenFileName(self, self.tr("Prompt audio"), "",
                                              self.tr("Audio (*.wav *.flac *.ogg);;All files (*)"))
        if path:
            self.load_file(path)

    def load_file(self, path: str | Path) -> bool:
        try:
            pcm, rate, warnings = load_prompt_audio(path)
        except ProfileError as error:
            self._show_problems(error.problems)
            return False
        self.set_audio(pcm, rate, warnings)
        if not self.name_edit.text().strip():
            self.name_edit.setText(Path(path).stem)
        return True

    def files_dropped(self, paths: list[Path]) -> None:
        if len(paths) != 1 or paths[0].is_dir():
            self._show_problems([self.tr("Drop one recording at a time.")])
            return
        self.load_file(paths[0])

    def set_audio(self, pcm: np.ndarray, sample_rate: int, warnings: list[str] | None = None) -> None:
        self.pcm, self.sample_rate = pcm, sample_rate
        check = check_prompt_audio(pcm, sample_rate)
        self.audio_label.setText(self.tr("{seconds} s at {rate} Hz").format(
            seconds=f"{len(pcm) / sample_rate:.1f}" if sample_rate else "0", rate=sample_rate))
        self._show_problems(check.problems + check.warnings + list(warnings or []))

    def _toggle_recording(self, on: bool) -> None:
        if on:
            try:
                self._recorder = self._recorder_factory(sample_rate=24000, max_seconds=self.max_seconds)
                self._recorder.start()
            except AudioDeviceError as error:
                self._recorder = None
                self.record_button.setChecked(False)
                self._show_problems([str(error)])
                return
            self.record_button.setText(self.tr("Stop recording"))
            self._meter.start()
        elif self._recorder is not None:
            recorder, self._recorder = self._recorder, None
            self._meter.stop()
            self.record_button.setText(self.tr("Record"))
            self.set_audio(recorder.stop(), recorder.sample_rate)

    def _update_meter(self) -> None:
        if self._recorder is not None:
            self.level.setValue(int(min(1.0, self._recorder.level) * 100))
            self.audio_label.setText(self.tr("Recording… {seconds} s").format(seconds=f"{self._recorder.seconds:.1f}"))
            if self._recorder.seconds >= self.max_seconds:
                self.record_button.setChecked(False)

    # -- save -------------------------------------------------------------------------------------------
    def _show_problems(self, problems: list[str]) -> None:
        self.problems_label.setText("\n".join(f"• {display_message(p)}" for p in problems))

    def save(self) -> bool:
        if self.pcm is None:
            self._show_problems([self.tr("Choose a WAV file or record your voice first.")])
            return False
        try:
            if self.replacing is not None:
                self.profile = self.store.replace_recording(self.replacing.name, self.pcm, self.sample_rate,
                                                            self.transcript_edit.toPlainText())
            else:
                self.profile = self.store.add(self.name_edit.text(), self.pcm, self.sample_rate,
                                              self.transcript_edit.toPlainText(), self.reserved_names)
        except ProfileError as error:
            self._show_problems(error.problems)
            return False
        self.accept()
        return True

    def done(self, result: int) -> None:
        if self._recorder is not None:
            self._recorder.stop()
            self._recorder = None
        self._meter.stop()
        super().done(result)
