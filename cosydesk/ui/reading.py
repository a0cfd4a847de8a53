"""Reading long texts aloud: "Sentence n of N" with a progress bar, the sentence being heard highlighted in the
editor and kept in view, and moving about by sentence (play from the cursor, next, previous, repeat).

What it is for: following the job the window is speaking. The worker reports each chunk's sentence and span
(AudioChunk.span: offsets into the text the request was given) and where it starts in the utterance's audio;
the sentence count arrives as it is counted (SentenceCount). The window's 100 ms timer calls ``tick``, which asks
the player how much has been heard, so the highlight follows the sound, not the synthesis running ahead of it.
Moving by sentence starts a new request on the rest of the editor's text (``speak_from``), so it is as quick as a
fresh Speak.

What it must not do: call the worker or the Synthesizer directly, or move the user's text cursor.
"""

from __future__ import annotations

import bisect
from dataclasses import dataclass, field

from PySide6.QtCore import QObject, Qt
from PySide6.QtGui import QAction, QColor, QKeySequence, QTextCharFormat, QTextCursor
from PySide6.QtWidgets import QLabel, QProgressBar, QTextEdit

from cosydesk.frontend.segments import raw_pieces
from cosydesk.ui.worker import ChunkInfo, SentenceCount


@dataclass
class ReadingJob:
    """One utterance being read: where its text starts in the editor and what is known about its sentences."""

    job_id: int
    document: str  # the editor's text when it started
    offset: int  # where the spoken text starts in ``document``
    before: list[tuple[int, int]] = field(default_factory=list)  # document spans of sentences before ``offset``
    spans: list[tuple[int, int]] = field(default_factory=list)  # counted spans of the spoken text (document)
    counted: bool = False
    chunks: list[tuple[int, int, tuple[int, int] | None]] = field(default_factory=list)  # start frame, sentence, span
    current: int = -1  # index into chunks of the one being heard
    synthesised: bool = False  # every chunk has been made; reading ends when the audio has been heard

    def sentence_span(self, chunk: int) -> tuple[int, int] | None:
        span = self.chunks[chunk][2]
        return (span[0] + self.offset, span[1] + self.offset) if span else None



class ReadingProgress(QObject):
    """The window's reading state; its widgets live in the status bar, its actions in the Playback menu."""

    def __init__(self, window) -> None:
        super().__init__(window)
        self.window = window
        self.job: ReadingJob | None = None
        self.last: ReadingJob | None = None  # the job last read (for previous / repeat after it ended)
        self.buffering = False
        self.known: set[tuple[int, int]] = set()  # sentence spans of ``known_document`` learnt by any job
        self.known_document = ""
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
    def start(self, job_id: int, document: str, offset: int) -> None:
        if document != self.known_document:
            self.known, self.known_document = set(), document
        before = sorted(s for s in self.known if s[1] <= offset)
        if self.job is not None:
            self.last = self.job
        self.job = ReadingJob(job_id, document, offset, before)
        self.buffering = False
        span = self.current_span()
        if span is not None:
            self._highlight(span)
        self._show()

    def on_chunk(self, info: ChunkInfo) -> None:
        job = self.job
        if job is None or info.job_id != job.job_id:
            return
        job.chunks.append((info.start_frame, info.sentence_index, info.span))
        span = job.sentence_span(len(job.chunks) - 1)
        if span is not None:
            self.known.add(span)
        if self.window.controller.frames_played(job.job_id) is None:  # no audio device: follow synthesis
            self._move_to(len(job.chunks) - 1)

    def on_count(self, count: SentenceCount) -> None:
        job = self.job
        if job is None or count.job_id != job.job_id:
            return
        job.spans = [(a + job.offset, b + job.offset) for a, b in count.spans]
        self.known.update(job.spans)
        job.counted = count.complete
        if job.current < 0 and job.spans and self.window.text_edit.toPlainText() == job.document:
            self._highlight(job.spans[0])  # the sentence it starts with, until the audio says otherwise
        self._show()

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

    def tick(self) -> None:
        job = self.job
        if job is None or not job.chunks:
            return
        played = self.window.controller.frames_played(job.job_id)
        if played is None:
            return
        if job.synthesised and not self.window.player.is_playing:
            self.finish(job.job_id)
            return
        starts = [c[0] for c in job.chunks]
        index = max(0, bisect.bisect_right(starts, played) - 1)
        if index != job.current:
            self._move_to(index)

    # -- what is shown ------------------------------------------------------------------------------------
    def current_span(self) -> tuple[int, int] | None:
        job = self.job or self.last
        if job is None:
            return None
        if not (0 <= job.current < len(job.chunks)):  # nothing heard yet: the sentence it starts with, if known
            return next((s for s in self.all_spans() if s[0] == job.offset), None)
        return job.sentence_span(job.current)

    def sentence_number(self) -> tuple[int, int | None] | None:
        """(n, N) of the sentence being heard, 1-based; N is None until the text has been counted."""
        job = self.job
        span = self.current_span()
        if job is None or span is None:
            return None
        spans = self.all_spans()
        heard = job.chunks[job.current][1] if 0 <= job.current < len(job.chunks) else 0
        number = spans.index(span) + 1 if span in spans else len(job.before) + heard + 1
        total = len(job.before) + len(job.spans) if job.counted else None
        return number, (max(total, number) if total is not None else None)

    def status_text(self) -> str:
        if self.buffering and self.window.player.buffering:
            return self.window.tr("Buffering…")
        return ""

    def _move_to(self, index: int) -> None:
        job = self.job
        job.current = index
        span = job.sentence_span(index)
        editor = self.window.text_edit
        if span is None or editor.toPlainText() != job.document:  # the text was edited: nothing to point at
            editor.setExtraSelections([])
        else:
            self._highlight(span)
        self._show()

    def _highlight(self, span: tuple[int, int]) -> None:
        editor = self.window.text_edit
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
        number, total = numbers
        tr = self.window.tr
        self.label.setText(tr("Sentence {n} of {total}").format(n=number, total=total) if total is not None
                           else tr("Sentence {n} of …").format(n=number))
        span = self.current_span()
        self.bar.setRange(0, max(1, len(job.document)))
        self.bar.setValue(span[1] if span else job.offset)
        self.label.setVisible(True)
        self.bar.setVisible(True)

    # -- moving about ---------------------------------------------------------------------------------------
    def play_from_cursor(self) -> None:
        text = self.window.text_edit.toPlainText()
        position = self.window.text_edit.textCursor().position()
        self.window.speak_from(sentence_start(text, position, self._known_spans(text)))

    def next_sentence(self) -> None:
        span, spans = self._where()
        if span is None:
            return self.play_from_cursor()
        self.window.speak_from(span[1])

    def previous_sentence(self) -> None:
        span, spans = self._where()
        if span is None:
            return self.play_from_cursor()
        earlier = [s for s in spans if s[1] <= span[0]]
        self.window.speak_from(earlier[-1][0] if earlier else 0)

    def repeat_sentence(self) -> None:
        span, _ = self._where()
        if span is None:
            return self.play_from_cursor()
        self.window.speak_from(span[0])

    def all_spans(self) -> list[tuple[int, int]]:
        return sorted(self.known)

    def _where(self) -> tuple[tuple[int, int] | None, list[tuple[int, int]]]:
        job = self.job or self.last
        text = self.window.text_edit.toPlainText()
        if job is None or job.document != text:
            return None, []
        span = self.current_span()
        if span is None:  # its sentences are not known yet: the raw sentence it starts with
            span = next(((a, b) for a, b in raw_pieces(text) if a <= job.offset < b), (job.offset, len(text)))
        return span, self.all_spans()

    def _known_spans(self, text: str) -> list[tuple[int, int]]:
        return self.all_spans() if text == self.known_document else []


def sentence_start(text: str, position: int, known: list[tuple[int, int]] = ()) -> int:
    """Where the sentence holding ``position`` starts: a sentence already spoken (its span) if one holds it, else
    the start of the raw sentence piece around it (frontend.segments.raw_pieces), leading blanks skipped."""
    for start, end in known:
        if start <= position < end:
            return start
    for start, end in raw_pieces(text):
        if position < end or end >= len(text):
            while start < end and text[start].isspace():
                start += 1
            return start
    return 0
