"""The main window's files: File > Open text…, files dropped onto the window, Export, and the editor's draft.

What it is for: reading text files into the editor (undoably), routing dropped files (folder, recording, text),
writing the current utterance to WAV/FLAC, and keeping the editor's text across restarts. A mixin of MainWindow.

What it must not do: block on large files (they are refused above MAX_TEXT_FILE_BYTES) or lose the editor's text.
"""

from __future__ import annotations

from pathlib import Path

from PySide6.QtCore import QTimer
from PySide6.QtGui import QTextCursor
from PySide6.QtWidgets import QFileDialog

from cosydesk.audio.export import ExportError, write_audio
from cosydesk.frontend.text_file import TextFileError, read_text_file
from cosydesk.ui.draft import DraftStore
from cosydesk.ui.drops import drop_kind

# File > Open text…: larger files are refused with a message (a book is hours of speech; the editor stays responsive)
MAX_TEXT_FILE_BYTES = 4 * 1024 * 1024
DRAFT_SAVE_DELAY_MS = 1500  # after the last keystroke: a pause in typing, not every key


class FileActions:
    """Mixin of MainWindow: open, drop, export, draft."""

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
        if self.last_result is None:
            self.show_message(self.tr("Nothing to export yet: speak something first."), True)
            return
        path, _ = QFileDialog.getSaveFileName(self, self.tr("Export audio"), "cosydesk.wav",
                                              self.tr("WAV audio (*.wav);;FLAC audio (*.flac)"))
        if path:
            self.export_current(path)

    def export_current(self, path: str | Path) -> bool:
        if self.last_result is None:
            self.show_message(self.tr("Nothing to export yet: speak something first."), True)
            return False
        try:
            written = write_audio(path, self.last_result.pcm, self.last_result.sample_rate)
        except ExportError as error:
            self.show_message(str(error), True)
            return False
        self.show_message(self.tr("Saved {path}").format(path=written), False)
        return True

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
