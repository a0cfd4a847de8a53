"""Reading long texts aloud: "Sentence n of N" with a progress bar, the sentence being heard highlighted in the
editor and kept in view, and moving about by sentence (play from the cursor, next, previous, repeat).

What it is for: following the job the window is speaking. The sentences are the reader's sentences of the
editor's text (frontend.sentences.reading_sentences, counted at once on this thread); the window asks the
synthesizer for the same units (Request.per_sentence), so every chunk's span (AudioChunk.span: offsets into the
text the request was given) falls in one of them. A unit that holds several sentences (too-short ones merged to
be synthesised well) says so: "Sentences 4–5 of 20". The window's 100 ms timer calls ``tick``, which asks the
player how much has been heard, so the highlight follows the sound, not the synthesis running ahead of it.
Moving by sentence starts a new request on the rest of the editor's text (``speak_from``), so it is as quick as a
fresh Speak.

What it must not do: call the worker or the Synthesizer directly, or move the user's text cursor.
"""

from __future__ import annotations

import bisect
from dataclasses import dataclass, field

from PySide6.QtCore import QObject, Qt, QTimer
from PySide6.QtGui import QAction, QColor, QKeySequence, QTextCharFormat, QTextCursor
from PySide6.QtWidgets import QLabel, QProgressBar, QTextEdit

from cosydesk.frontend.sentences import ReadingSentence, reading_sentences
from cosydesk.ui.worker import ChunkInfo


COUNT_DELAY_MS = 150  # after the last edit, the editor's sentences are counted


class Sentences:
    """The reading sentences of one text, with the sentence number each unit starts at."""

    def __init__(self, text: str) -> None:
        self.text = text
        self.units: list[ReadingSentence] = reading_sentences(text)
        self.starts = [unit.start for unit in self.units]
        self.numbers: list[int] = []  # sentences before each unit
        total = 0
        for unit in self.units:
            self.numbers.append(total)
            total += unit.count
        self.total = total

    def unit_at(self, position: int) -> int | None:
        """The unit holding ``position`` (the one before it, where it falls between two); None for no units."""
        if not self.units:
            return None
        return max(0, bisect.bisect_right(self.starts, position) - 1)

    def span(self, index: int) -> tuple[int, int]:
        return self.units[index].start, self.units[index].end


@dataclass
class ReadingJob:
    """One utterance being read: where its text starts in the editor and which sentences have been made."""

    job_id: int
    document: str  # the editor's text when it started
    offset: int  # where the spoken text starts in ``document``
    first_unit: int | None  # the unit it starts in
    chunks: list[tuple[int, int | None]] = field(default_factory=list)  # start frame, unit
    current: int = -1  # index into chunks of the one being heard
    synthesised: bool = False  # every chunk has been made; reading ends when the audio has been heard


class ReadingProgress(QObject):
    """The window's reading state; its widgets live in the status bar, its actions in the Playback menu."""

    def __init__(self, window) -> None:
        super().__init__(window)
        self.window = window
        self.job: ReadingJob | None = None
        self.last: ReadingJob | None = None  # the job last read (for previous / repeat after it ended)
        self.buffering = False
        self._sentences: Sentences | None = None  # of the text last read (counted once per text)
        # counted while the text sits still, before Speak: the worker normalising holds the GIL (wetext), and
        # counting a 100,000-character text behind it on the key press took 30-70 ms instead of 10
        self._count_timer = QTimer(self)
        self._count_timer.setSingleShot(True)
        self._count_timer.setInterval(COUNT_DELAY_MS)
        self._count_timer.timeout.connect(lambda: self.sentences(window.text_edit.toPlainText()))
        window.text_edit.textChanged.connect(self._count_timer.start)
        self.label = QLabel(window)
        self.label.setObjectName("sentenceProgressLabel")
        self.bar = QProgressBar(window)
        self.bar.setObjectName("sentenceProgress")
        self.bar.setMaximumWidth(180)
        self.bar.setTextVisible(False)
        self.label.hide()
        self.bar.hide()
        self.from_cursor_action = QAction(window)
        self.from_cursor_action.setObjectName("playFromCursorAction")
        self.from_cursor_action.setShortcut(QKeySequence("Ctrl+Shift+Return"))
        self.next_action = QAction(window)
        self.next_action.setObjectName("nextSentenceAction")
        self.next_action.setShortcut(QKeySequence("Alt+Right"))
        self.previous_action = QAction(window)
        self.previous_action.setObjectName("previousSentenceAction")
        self.previous_action.setShortcut(QKeySequence("Alt+Left"))
        self.repeat_action = QAction(window)
        self.repeat_action.setObjectName("repeatSentenceAction")
        self.repeat_action.setShortcut(QKeySequence("Ctrl+R"))
        for action in self.actions():
            action.setShortcutContext(Qt.ShortcutContext.WindowShortcut)
            window.addAction(action)
        self.from_cursor_action.triggered.connect(self.play_from_cursor)
        self.next_action.triggered.connect(self.next_sentence)
        self.previous_action.triggered.connect(self.previous_sentence)
        self.repeat_action.triggered.connect(self.repeat_sentence)

    def actions(self) -> list[QAction]:
        return [self.from_cursor_action, self.previous_action, self.next_action, self.repeat_action]

    def retranslate(self) -> None:
        tr = self.window.tr
        self.from_cursor_action.setText(tr("Play from cursor"))
        self.from_cursor_action.setToolTip(
            tr("Read from the start of the sentence at the text cursor (Ctrl+Shift+Enter)"))
        self.next_action.setText(tr("Next sentence"))
        self.next_action.setToolTip(tr("Skip to the next sentence (Alt+Right)"))
        self.previous_action.setText(tr("Previous sentence"))
        self.previous_action.setToolTip(tr("Go back to the previous sentence (Alt+Left)"))
        self.repeat_action.setText(tr("Repeat sentence"))
        self.repeat_action.setToolTip(tr("Hear the current sentence again (Ctrl+R)"))
        self.bar.setToolTip(tr("How far through the text the reading is"))
        self._show()

    # -- following a job --------------------------------------------------------------------------------
    def sentences(self, document: str) -> Sentences:
        if self._sentences is None or self._sentences.text != document:
            self._sentences = Sentences(document)
        return self._sentences

    def start(self, job_id: int, document: str, offset: int) -> None:
        if self.job is not None:
            self.last = self.job
        self.job = ReadingJob(job_id, document, offset, self.sentences(document).unit_at(offset))
        self.buffering = False
        unit = self.current_unit()
        if unit is not None:
            self._highlight(self._sentences.span(unit))
        self._show()

    def on_chunk(self, info: ChunkInfo) -> None:
        job = self.job
        if job is None or info.job_id != job.job_id:
            return
        unit = self.sentences(job.document).unit_at(info.span[0] + job.offset) if info.span else None
        job.chunks.append((info.start_frame, unit))
        if self.window.controller.frames_played(job.job_id) is None:  # no audio device: follow synthesis
            self._move_to(len(job.chunks) - 1)

    def on_buffering(self, job_id: int, holding: bool) -> None:
        if self.job is not None and job_id == self.job.job_id:
            self.buffering = holding

    def synthesis_done(self, job_id: int) -> None:
        if self.job is not None and self.job.job_id == job_id:
            self.job.synthesised = True
            self.buffering = False
            if self.window.controller.frames_played(job_id) is None or not self.window.player.is_playing:
                self.tick()
                self.finish(job_id)

    def finish(self, job_id: int) -> None:
        if self.job is not None and self.job.job_id == job_id:
            self.last, self.job = self.job, None
            self.buffering = False
            self.window.text_edit.setExtraSelections([])
            self._show()

    def stop(self) -> None:
        """Stop: the job being followed ends now (its highlight and progress go)."""
        if self.job is not None:
            self.finish(self.job.job_id)

    def tick(self) -> None:
        job = self.job
        if job is None or not job.chunks:
            return
        played = self.window.controller.frames_played(job.job_id)
        if played is None:
            if job.synthesised:  # made to its end and no longer playing (the device went away)
                self.finish(job.job_id)
            return
        if job.synthesised and not self.window.player.is_playing:
            self.finish(job.job_id)
            return
        starts = [c[0] for c in job.chunks]
        index = max(0, bisect.bisect_right(starts, played) - 1)
        if index != job.current:
            self._move_to(index)

    # -- what is shown ------------------------------------------------------------------------------------
    def current_unit(self, job: ReadingJob | None = None) -> int | None:
        """The unit being heard (before any audio: the one the job starts in)."""
        job = job or self.job or self.last
        if job is None:
            return None
        if 0 <= job.current < len(job.chunks):
            return job.chunks[job.current][1]
        return job.first_unit

    def current_span(self) -> tuple[int, int] | None:
        job = self.job or self.last
        unit = self.current_unit(job)
        return self.sentences(job.document).span(unit) if unit is not None else None

    def sentence_number(self) -> tuple[int, int, int] | None:
        """(first, last, N) of the sentences being heard, 1-based (first == last but where short ones were merged)."""
        job = self.job
        unit = self.current_unit(job) if job is not None else None
        if unit is None:
            return None
        sentences = self.sentences(job.document)
        first = sentences.numbers[unit] + 1
        return first, first + sentences.units[unit].count - 1, sentences.total

    def status_text(self) -> str:
        if self.buffering and self.window.player.buffering:
            return self.window.tr("Buffering…")
        return ""

    def _move_to(self, index: int) -> None:
        job = self.job
        job.current = index
        span = self.current_span()
        editor = self.window.text_edit
        if span is None or editor.toPlainText() != job.document:  # the text was edited: nothing to point at
            editor.setExtraSelections([])
        else:
            self._highlight(span)
        self._show()

    def _highlight(self, span: tuple[int, int]) -> None:
        editor = self.window.text_edit
        if editor.toPlainText() != self._sentences.text:
            return
        cursor = QTextCursor(editor.document())
        cursor.setPosition(span[0])
        cursor.setPosition(span[1], QTextCursor.MoveMode.KeepAnchor)
        selection = QTextEdit.ExtraSelection()
        fmt = QTextCharFormat()
        highlight = QColor(editor.palette().highlight().color())
        highlight.setAlpha(90)
        fmt.setBackground(highlight)
        selection.format = fmt
        selection.cursor = cursor
        editor.setExtraSelections([selection])
        self._keep_in_view(span[0])

    def _keep_in_view(self, position: int) -> None:
        """Scroll so the sentence's first line is visible (a third down from the top), the text cursor untouched."""
        editor = self.window.text_edit
        cursor = QTextCursor(editor.document())
        cursor.setPosition(position)
        if editor.viewport().rect().contains(editor.cursorRect(cursor).center()):
            return
        block = cursor.block()
        line = block.layout().lineForTextPosition(position - block.position())
        first_line = block.firstLineNumber() + (line.lineNumber() if line.isValid() else 0)
        visible_lines = max(1, editor.viewport().height() // max(1, editor.fontMetrics().lineSpacing()))
        editor.verticalScrollBar().setValue(max(0, first_line - visible_lines // 3))

    def _show(self) -> None:
        job = self.job
        numbers = self.sentence_number()
        if job is None or numbers is None:
            self.label.setVisible(False)
            self.bar.setVisible(False)
            return
        first, last, total = numbers
        tr = self.window.tr
        if first == last:
            self.label.setText(tr("Sentence {n} of {total}").format(n=first, total=total))
        else:  # short sentences spoken as one
            self.label.setText(tr("Sentences {n}–{m} of {total}").format(n=first, m=last, total=total))
        span = self.current_span()
        self.bar.setRange(0, max(1, len(job.document)))
        self.bar.setValue(span[1] if span else job.offset)
        self.label.setVisible(True)
        self.bar.setVisible(True)

    # -- moving about ---------------------------------------------------------------------------------------
    def play_from_cursor(self) -> None:
        text = self.window.text_edit.toPlainText()
        position = self.window.text_edit.textCursor().position()
        self.window.speak_from(sentence_start(self.sentences(text), position))

    def next_sentence(self) -> None:
        unit, sentences = self._where()
        if unit is None:
            return self.play_from_cursor()
        following = unit + 1
        self.window.speak_from(sentences.units[following].start if following < len(sentences.units)
                               else len(sentences.text))  # past the last one: the reading ends

    def previous_sentence(self) -> None:
        unit, sentences = self._where()
        if unit is None:
            return self.play_from_cursor()
        self.window.speak_from(sentences.units[max(0, unit - 1)].start)

    def repeat_sentence(self) -> None:
        unit, sentences = self._where()
        if unit is None:
            return self.play_from_cursor()
        self.window.speak_from(sentences.units[unit].start)

    def _where(self) -> tuple[int | None, Sentences]:
        """The unit being read (or last read) in the editor's text, if that text is the one it was read from."""
        job = self.job or self.last
        text = self.window.text_edit.toPlainText()
        sentences = self.sentences(text)
        if job is None or job.document != text:
            return None, sentences
        return self.current_unit(job), sentences


def sentence_start(sentences: Sentences, position: int) -> int:
    """Where the sentence holding ``position`` starts (the next one's start where it falls in the blanks after a
    sentence; 0 for a text without sentences)."""
    unit = sentences.unit_at(position)
    if unit is None:
        return 0
    if position >= sentences.units[unit].end and unit + 1 < len(sentences.units):
        return sentences.units[unit + 1].start
    return sentences.units[unit].start
