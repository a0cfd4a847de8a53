"""History panel: every utterance with text, voice, duration, first-audio latency and RTF; replay/export/delete."""

from __future__ import annotations

from pathlib import Path

from PySide6.QtCore import QEvent, Qt, Signal
from PySide6.QtWidgets import (QFileDialog, QHBoxLayout, QLabel, QListWidget, QListWidgetItem, QPushButton,
                               QVBoxLayout, QWidget)

from cosydesk.audio.export import ExportError
from cosydesk.ui.history import HistoryEntry, HistoryStore

ID_ROLE = Qt.ItemDataRole.UserRole


class HistoryPanel(QWidget):
    replayRequested = Signal(str)  # entry id
    message = Signal(str, bool)  # text, is_error

    def __init__(self, store: HistoryStore, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.store = store
        self.list = QListWidget(self)
        self.list.setObjectName("historyList")
        self.list.setAlternatingRowColors(True)
        self.list.itemDoubleClicked.connect(lambda item: self.replayRequested.emit(item.data(ID_ROLE)))
        self.list.currentItemChanged.connect(lambda *_: self._update_buttons())
        self.replay_button = QPushButton(self)
        self.replay_button.setObjectName("historyReplayButton")
        self.export_button = QPushButton(self)
        self.export_button.setObjectName("historyExportButton")
        self.delete_button = QPushButton(self)
        self.delete_button.setObjectName("historyDeleteButton")
        self.replay_button.clicked.connect(lambda: self._with_current(self.replayRequested.emit))
        self.export_button.clicked.connect(lambda: self._with_current(self._ask_export))
        self.delete_button.clicked.connect(lambda: self._with_current(self.delete_entry))
        buttons = QHBoxLayout()
        for button in (self.replay_button, self.export_button, self.delete_button):
            buttons.addWidget(button)
        # what was wrong with the stored history (skipped entries, a damaged index set aside): said, not fatal
        self.problems_label = QLabel(self)
        self.problems_label.setObjectName("historyProblems")
        self.problems_label.setWordWrap(True)
        self.problems_label.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)
        layout = QVBoxLayout(self)
        layout.setContentsMargins(0, 0, 0, 0)
        layout.addWidget(self.problems_label)
        layout.addWidget(self.list, 1)
        layout.addLayout(buttons)
        self.retranslate()
        self.reload()

    def changeEvent(self, event) -> None:  # noqa: N802
        if event.type() == QEvent.Type.LanguageChange:
            self.retranslate()
            self.reload()
        super().changeEvent(event)

    def retranslate(self) -> None:
        self.replay_button.setText(self.tr("Replay"))
        self.export_button.setText(self.tr("Export…"))
        self.delete_button.setText(self.tr("Delete"))

    def describe(self, entry: HistoryEntry) -> str:
        text = " ".join(entry.text.split())
        text = text if len(text) <= 60 else text[:57] + "…"
        latency = "–" if entry.first_audio_ms is None else f"{entry.first_audio_ms:.0f} ms"
        rtf = "–" if entry.rtf is None else f"{entry.rtf:.2f}"
        details = self.tr("{voice} · {duration} s · first audio {latency} · RTF {rtf}").format(
            voice=entry.voice or "–", duration=f"{entry.duration_s:.1f}", latency=latency, rtf=rtf)
        return f"{text}\n{details}"

    def reload(self) -> None:
        self.problems_label.setText("\n".join(self.store.problems))
        self.problems_label.setVisible(bool(self.store.problems))
        current = self.current_id()
        self.list.clear()
        for entry in self.store.entries():
            item = QListWidgetItem(self.describe(entry))
            item.setData(ID_ROLE, entry.id)
            item.setToolTip(entry.text[:2000])
            self.list.addItem(item)
            if entry.id == current:
                self.list.setCurrentItem(item)
        self._update_buttons()

    def add_entry(self, entry: HistoryEntry) -> None:
        """Show the store as it is now: the new entry, minus what the cap pruned, plus what another CosyDesk on
        the same data folder added meanwhile."""
        self.reload()

    def current_id(self) -> str | None:
        item = self.list.currentItem()
        return item.data(ID_ROLE) if item is not None else None

    def _with_current(self, action) -> None:
        entry_id = self.current_id()
        if entry_id:
            action(entry_id)

    def _update_buttons(self) -> None:
        has = self.list.currentItem() is not None
        for button in (self.replay_button, self.export_button, self.delete_button):
            button.setEnabled(has)

    def _ask_export(self, entry_id: str) -> None:
        path, _ = QFileDialog.getSaveFileName(self, self.tr("Export audio"), f"{entry_id}.wav",
                                              self.tr("WAV audio (*.wav);;FLAC audio (*.flac)"))
        if path:
            self.export_entry(entry_id, path)

    def export_entry(self, entry_id: str, path: str | Path) -> bool:
        try:
            written = self.store.export(entry_id, path)
        except (ExportError, KeyError, OSError) as error:
            self.message.emit(str(error), True)
            return False
        self.message.emit(self.tr("Saved {path}").format(path=written), False)
        return True

    def delete_entry(self, entry_id: str) -> None:
        try:
            deleted = self.store.delete(entry_id)
        except OSError as error:  # a read-only folder, or another instance holding the index's lock
            self.message.emit(self.tr("Could not delete from history: {e}").format(e=error), True)
            return
        if deleted:
            for row in range(self.list.count()):
                if self.list.item(row).data(ID_ROLE) == entry_id:
                    self.list.takeItem(row)
                    break
        self._update_buttons()
