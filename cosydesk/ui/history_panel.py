"""History panel: every utterance with its text (line breaks kept), voice, style, model, speed, duration and
first-audio latency; search, replay (Enter or double-click), export (audio, per sentence, subtitles) and
delete with undo (the Undo bar, or Ctrl+Z in the list).

What it must not do: touch the audio or the synthesis; replays go out as replayRequested(entry id).
"""

from __future__ import annotations

from pathlib import Path

from PySide6.QtCore import QEvent, QRect, QSize, Qt, QTimer, Signal
from PySide6.QtGui import QAction, QFont, QFontMetrics, QKeySequence, QPalette
from PySide6.QtWidgets import (QHBoxLayout, QLabel, QLineEdit, QListWidget, QListWidgetItem, QMenu, QPushButton,
                               QStyle, QStyledItemDelegate, QToolButton, QVBoxLayout, QWidget)

from cosydesk.audio.export import ExportError
from cosydesk.ui.error_text import display_message
from cosydesk.ui.export_actions import AUDIO, SENTENCES, SUBTITLES, Utterance, ask_save_path, write_export
from cosydesk.ui.history import HistoryEntry, HistoryStore

ID_ROLE = Qt.ItemDataRole.UserRole
LINES_ROLE = Qt.ItemDataRole.UserRole + 1  # the text lines shown (at most TEXT_LINES)
DETAILS_ROLE = Qt.ItemDataRole.UserRole + 2
PARTIAL_ROLE = Qt.ItemDataRole.UserRole + 3
SEARCH_ROLE = Qt.ItemDataRole.UserRole + 4  # what the search box matches, casefolded once per reload
TEXT_LINES = 2
PREVIEW_CHARS = 1000  # of a history entry's text, for its row: far more than a row's width shows
UNDO_SHOWN_MS = 15_000


def text_lines(text: str, limit: int = TEXT_LINES) -> list[str]:
    """The first `limit` non-empty lines of `text` (spaces within a line collapsed); "…" ends the last shown
    line when more follow. Only the first PREVIEW_CHARS characters are looked at: a row is elided to its width
    anyway, and eliding (or splitting) a 100,000-character paragraph on every paint blocks the UI thread."""
    head = text[:PREVIEW_CHARS]
    lines = [" ".join(line.split()) for line in head.splitlines()]
    lines = [line for line in lines if line] or [""]
    shown = lines[:limit]
    if len(lines) > limit or len(text) > len(head):
        shown[-1] += " …"
    return shown


class HistoryRowDelegate(QStyledItemDelegate):
    """Paints a row as its text lines (elided to the width) above a smaller, dimmer details line."""

    PADDING = 4

    def _fonts(self, option) -> tuple[QFont, QFont]:
        details = QFont(option.font)
        details.setPointSizeF(max(7.0, option.font.pointSizeF() * 0.9))
        return option.font, details

    def sizeHint(self, option, index) -> QSize:  # noqa: N802
        text_font, details_font = self._fonts(option)
        lines = len(index.data(LINES_ROLE) or [""])
        height = lines * QFontMetrics(text_font).lineSpacing() + QFontMetrics(details_font).lineSpacing()
        return QSize(200, height + 2 * self.PADDING)

    def paint(self, painter, option, index) -> None:
        style = option.widget.style() if option.widget else None
        self.initStyleOption(option, index)
        option.text = ""
        if style is not None:
            style.drawControl(QStyle.ControlElement.CE_ItemViewItem, option, painter, option.widget)
        text_font, details_font = self._fonts(option)
        selected = bool(option.state & QStyle.StateFlag.State_Selected)
        role = QPalette.ColorRole.HighlightedText if selected else QPalette.ColorRole.Text
        rect = option.rect.adjusted(self.PADDING + 2, self.PADDING, -self.PADDING, -self.PADDING)
        painter.save()
        painter.setFont(text_font)
        painter.setPen(option.palette.color(role))
        metrics = QFontMetrics(text_font)
        y = rect.top()
        for line in index.data(LINES_ROLE) or [""]:
            elided = metrics.elidedText(line, Qt.TextElideMode.ElideRight, rect.width())
            painter.drawText(QRect(rect.left(), y, rect.width(), metrics.lineSpacing()),
                             Qt.AlignmentFlag.AlignLeft | Qt.AlignmentFlag.AlignVCenter, elided)
            y += metrics.lineSpacing()
        painter.setFont(details_font)
        dim = option.palette.color(role)
        if not selected:
            dim = option.palette.color(QPalette.ColorGroup.Disabled, QPalette.ColorRole.Text)
        painter.setPen(dim)
        details_metrics = QFontMetrics(details_font)
        details = details_metrics.elidedText(index.data(DETAILS_ROLE) or "", Qt.TextElideMode.ElideRight, rect.width())
        painter.drawText(QRect(rect.left(), y, rect.width(), details_metrics.lineSpacing()),
                         Qt.AlignmentFlag.AlignLeft | Qt.AlignmentFlag.AlignVCenter, details)
        painter.restore()


class HistoryPanel(QWidget):
    replayRequested = Signal(str)  # entry id
    message = Signal(str, bool)  # text, is_error

    def __init__(self, store: HistoryStore, parent: QWidget | None = None, settings=None) -> None:
        super().__init__(parent)
        self.store = store
        self._settings = settings
        self.search_edit = QLineEdit(self)
        self.search_edit.setObjectName("historySearch")
        self.search_edit.setClearButtonEnabled(True)
        self.search_edit.textChanged.connect(self.apply_filter)
        self.list = QListWidget(self)
        self.list.setObjectName("historyList")
        self.list.setAlternatingRowColors(True)
        self.list.setItemDelegate(HistoryRowDelegate(self.list))
        self.list.itemActivated.connect(lambda item: self.replayRequested.emit(item.data(ID_ROLE)))  # Enter
        self.list.itemDoubleClicked.connect(lambda item: self.replayRequested.emit(item.data(ID_ROLE)))
        self.list.currentItemChanged.connect(lambda *_: self._update_buttons())
        self.replay_button = QPushButton(self)
        self.replay_button.setObjectName("historyReplayButton")
        self.export_button = QToolButton(self)
        self.export_button.setObjectName("historyExportButton")
        self.export_button.setPopupMode(QToolButton.ToolButtonPopupMode.MenuButtonPopup)
        self.export_menu = QMenu(self.export_button)
        self.export_audio_action = self.export_menu.addAction("", lambda: self._with_current(self._ask_export))
        self.export_sentences_action = self.export_menu.addAction(
            "", lambda: self._with_current(lambda i: self._ask_export(i, SENTENCES)))
        self.export_subtitles_action = self.export_menu.addAction(
            "", lambda: self._with_current(lambda i: self._ask_export(i, SUBTITLES)))
        self.export_button.setMenu(self.export_menu)
        self.delete_button = QPushButton(self)
        self.delete_button.setObjectName("historyDeleteButton")
        self.replay_button.clicked.connect(lambda: self._with_current(self.replayRequested.emit))
        self.export_button.clicked.connect(lambda: self._with_current(self._ask_export))
        self.delete_button.clicked.connect(lambda: self._with_current(self.delete_entry))
        self.delete_action = QAction(self.list)
        self.delete_action.setShortcut(QKeySequence(QKeySequence.StandardKey.Delete))
        self.delete_action.setShortcutContext(Qt.ShortcutContext.WidgetShortcut)
        self.delete_action.triggered.connect(lambda: self._with_current(self.delete_entry))
        self.undo_action = QAction(self.list)
        self.undo_action.setShortcut(QKeySequence(QKeySequence.StandardKey.Undo))
        self.undo_action.setShortcutContext(Qt.ShortcutContext.WidgetShortcut)
        self.undo_action.triggered.connect(self.undo_delete)
        self.list.addAction(self.delete_action)
        self.list.addAction(self.undo_action)
        buttons = QHBoxLayout()
        for button in (self.replay_button, self.export_button, self.delete_button):
            buttons.addWidget(button, 1)
        # after a delete: "Deleted “…”" and an Undo button, for UNDO_SHOWN_MS (Ctrl+Z works as long as the session)
        self.undo_bar = QWidget(self)
        self.undo_bar.setObjectName("historyUndoBar")
        self.undo_label = QLabel(self.undo_bar)
        self.undo_button = QPushButton(self.undo_bar)
        self.undo_button.setObjectName("historyUndoButton")
        self.undo_button.clicked.connect(self.undo_delete)
        undo_layout = QHBoxLayout(self.undo_bar)
        undo_layout.setContentsMargins(4, 0, 4, 0)
        undo_layout.addWidget(self.undo_label, 1)
        undo_layout.addWidget(self.undo_button)
        self.undo_bar.hide()
        self.undo_timer = QTimer(self)
        self.undo_timer.setSingleShot(True)
        self.undo_timer.setInterval(UNDO_SHOWN_MS)
        self.undo_timer.timeout.connect(self.undo_bar.hide)
        # what was wrong with the stored history (skipped entries, a damaged index set aside): said, not fatal
        self.problems_label = QLabel(self)
        self.problems_label.setObjectName("historyProblems")
        self.problems_label.setWordWrap(True)
        self.problems_label.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)
        layout = QVBoxLayout(self)
        layout.setContentsMargins(0, 0, 0, 0)
        layout.addWidget(self.problems_label)
        layout.addWidget(self.search_edit)
        layout.addWidget(self.list, 1)
        layout.addWidget(self.undo_bar)
        layout.addLayout(buttons)
        self.retranslate()
        self.reload()

    @property
    def settings(self):
        if self._settings is None:
            window = self.window()
            self._settings = getattr(window, "settings", None)
            if self._settings is None:
                from cosydesk.settings import Settings

                self._settings = Settings()
        return self._settings

    def changeEvent(self, event) -> None:  # noqa: N802
        if event.type() == QEvent.Type.LanguageChange:
            self.retranslate()
            self.reload()
        super().changeEvent(event)

    def retranslate(self) -> None:
        self.search_edit.setPlaceholderText(self.tr("Search the history (text, voice, style, model)"))
        self.search_edit.setToolTip(self.tr("Show only the utterances whose text, voice, style or model hold every "
                                            "word typed here"))
        self.list.setToolTip(self.tr("Every utterance spoken: Enter replays, Delete removes (Ctrl+Z brings it back)"))
        self.replay_button.setText(self.tr("Replay"))
        self.replay_button.setToolTip(self.tr("Play the selected utterance again (Enter)"))
        self.export_button.setText(self.tr("Export…"))
        self.export_button.setToolTip(self.tr("Save the selected utterance's audio; the arrow offers one file per "
                                              "sentence and subtitles"))
        self.export_audio_action.setText(self.tr("Audio…"))
        self.export_sentences_action.setText(self.tr("One file per sentence…"))
        self.export_subtitles_action.setText(self.tr("Subtitles (.srt, .vtt)…"))
        self.delete_button.setText(self.tr("Delete"))
        self.delete_button.setToolTip(self.tr("Remove the selected utterance (Del); Undo brings it back"))
        self.undo_button.setText(self.tr("Undo"))

    def details(self, entry: HistoryEntry) -> str:
        """The details line: voice · style · model · speed · duration · first audio · RTF (· partial)."""
        parts = [entry.voice or "–"]
        if entry.style:
            parts.append(entry.style)
        if entry.model:
            parts.append(entry.model)
        if entry.speed is not None:
            parts.append(f"{entry.speed:g}×")
        parts.append(self.tr("{seconds} s").format(seconds=f"{entry.duration_s:.1f}"))
        latency = "–" if entry.first_audio_ms is None else self.tr("{ms} ms").format(ms=f"{entry.first_audio_ms:.0f}")
        parts.append(self.tr("first audio {latency}").format(latency=latency))
        if entry.rtf is not None:
            parts.append(self.tr("RTF {rtf}").format(rtf=f"{entry.rtf:.2f}"))
        if entry.partial:
            parts.append(self.tr("partial (stopped before the end)"))
        return " · ".join(parts)

    def describe(self, entry: HistoryEntry) -> str:
        """The row as plain text: its text lines, then the details line."""
        return "\n".join(text_lines(entry.text) + [self.details(entry)])

    def reload(self) -> None:
        self.problems_label.setText("\n".join(map(display_message, self.store.problems)))
        self.problems_label.setVisible(bool(self.store.problems))
        current = self.current_id()
        self.list.clear()
        for entry in self.store.entries():
            item = QListWidgetItem(self.describe(entry))
            item.setData(ID_ROLE, entry.id)
            item.setData(LINES_ROLE, text_lines(entry.text))
            item.setData(DETAILS_ROLE, self.details(entry))
            item.setData(PARTIAL_ROLE, entry.partial)
            item.setData(SEARCH_ROLE, " ".join((entry.text, entry.voice, entry.style, entry.model)).casefold())
            item.setData(Qt.ItemDataRole.AccessibleTextRole, self.describe(entry))
            item.setToolTip(entry.text[:2000])
            self.list.addItem(item)
            if entry.id == current:
                self.list.setCurrentItem(item)
        self.apply_filter()

    def apply_filter(self, *_args) -> int:
        """Hide the rows that do not hold every word of the search box; returns how many are shown."""
        words = self.search_edit.text().casefold().split()
        shown = 0
        for row in range(self.list.count()):
            item = self.list.item(row)
            haystack = item.data(SEARCH_ROLE) or ""
            visible = all(word in haystack for word in words)
            item.setHidden(not visible)
            shown += visible
        self._update_buttons()
        return shown

    def add_entry(self, entry: HistoryEntry) -> None:
        """Show the store as it is now: the new entry, minus what the cap pruned, plus what another CosyDesk on
        the same data folder added meanwhile."""
        self.reload()

    def current_id(self) -> str | None:
        item = self.list.currentItem()
        return item.data(ID_ROLE) if item is not None and not item.isHidden() else None

    def _with_current(self, action) -> None:
        entry_id = self.current_id()
        if entry_id:
            action(entry_id)

    def _update_buttons(self) -> None:
        has = self.current_id() is not None
        for button in (self.replay_button, self.export_button, self.delete_button):
            button.setEnabled(has)

    def utterance(self, entry_id: str) -> Utterance:
        entry = self.store.get(entry_id)
        if entry is None:
            raise KeyError(f"no history entry {entry_id}")
        pcm, rate = self.store.audio(entry_id)
        return Utterance(entry.text, pcm, rate, entry.sentence_ranges, partial=entry.partial)

    def _ask_export(self, entry_id: str, kind: str = AUDIO) -> None:
        entry = self.store.get(entry_id)
        if entry is None:
            return
        path = ask_save_path(self, self.settings, entry.text, kind)
        if path:
            self.export_entry(entry_id, path, kind)

    def export_entry(self, entry_id: str, path: str | Path, kind: str = AUDIO) -> bool:
        try:
            message = write_export(self, self.utterance(entry_id), str(path), kind)
        except (ExportError, KeyError, OSError) as error:
            self.message.emit(str(error), True)
            return False
        self.message.emit(message, False)
        return True

    def delete_entry(self, entry_id: str) -> None:
        entry = self.store.get(entry_id)
        try:
            deleted = self.store.delete(entry_id)
        except OSError as error:  # a read-only folder, or another instance holding the index's lock
            self.message.emit(self.tr("Could not delete from history: {e}").format(e=error), True)
            return
        if deleted:
            row = next((r for r in range(self.list.count()) if self.list.item(r).data(ID_ROLE) == entry_id), None)
            if row is not None:
                self.list.takeItem(row)
            first = text_lines(entry.text if entry else "")[0]
            first = first if len(first) <= 40 else first[:39] + "…"
            self.undo_label.setText(self.tr("Deleted “{text}”.").format(text=first))
            self.undo_bar.show()
            self.undo_timer.start()
        self._update_buttons()

    def undo_delete(self) -> bool:
        """Bring back the entry deleted last (its row selected again)."""
        try:
            entry = self.store.undo_delete()
        except OSError as error:
            self.message.emit(self.tr("Could not undo the delete: {e}").format(e=error), True)
            return False
        self.undo_bar.setVisible(self.store.can_undo and self.undo_timer.isActive())
        if entry is None:
            return False
        self.reload()
        for row in range(self.list.count()):
            if self.list.item(row).data(ID_ROLE) == entry.id:
                self.list.setCurrentRow(row)
        return True

    def shutdown(self) -> None:
        self.undo_timer.stop()
        self.store.purge_deleted()
