"""Exporting from the app: save dialogs (audio, one file per sentence, subtitles) and the window's File > Export.

What it is for:
- one save dialog for the window and the history panel: every writable format as a filter, the filter's
  ending added to a name typed without one (D9), opened in the folder of the last export with a name made
  from the text (export_file_stem), the folder and the format remembered in the settings;
- "Export current utterance…" while an utterance is still being synthesised exports *that* utterance: the
  file is written the moment its synthesis ends (the status line says it is waiting); Stop writes what was
  synthesised until then and says it is partial. Nothing else is ever saved in its place (D1).

What it must not do: block the UI thread on synthesis, or write a file half-way.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import numpy as np
from PySide6.QtCore import QObject, QStandardPaths
from PySide6.QtWidgets import QFileDialog, QMessageBox, QWidget

from cosydesk.audio.export import ExportError, write_audio
from cosydesk.audio.formats import FORMATS, format_for_path, writable_formats
from cosydesk.audio.subtitles import SentenceRange, write_subtitles
from cosydesk.audio.utterance_export import export_file_stem, sentence_file_paths, write_sentence_files
from cosydesk.settings import Key, Settings
from cosydesk.ui.error_text import translate_message

AUDIO, SENTENCES, SUBTITLES = "audio", "sentences", "subtitles"
SUBTITLE_FILTERS = {".srt": "SubRip subtitles (*.srt)", ".vtt": "WebVTT subtitles (*.vtt)"}


@dataclass
class Utterance:
    """What an export writes: the audio, its text and where each sentence lies in it."""

    text: str
    pcm: np.ndarray
    sample_rate: int
    sentences: list[SentenceRange]
    partial: bool = False


def _suffix_of_filter(name_filter: str) -> str:
    inside = name_filter[name_filter.rfind("(") + 1:].rstrip(")").split()
    return inside[0].lstrip("*") if inside else ""


def with_filter_suffix(path: str, name_filter: str, allowed: tuple[str, ...]) -> str:
    """`path` as typed, plus the chosen filter's ending when it has none of the `allowed` endings."""
    if not path or Path(path).suffix.lower() in allowed:
        return path
    return path + _suffix_of_filter(name_filter)


def default_folder(settings: Settings) -> str:
    folder = settings.get(Key.EXPORT_FOLDER)
    if folder and Path(folder).is_dir():
        return folder
    music = QStandardPaths.writableLocation(QStandardPaths.StandardLocation.MusicLocation)
    return music if music and Path(music).is_dir() else str(Path.home())


def ask_save_path(parent: QWidget, settings: Settings, text: str, kind: str = AUDIO) -> str | None:
    """The file an export goes to (None: cancelled). AUDIO and SENTENCES offer the audio formats (SENTENCES:
    the name the numbered files are made from), SUBTITLES .srt and .vtt."""
    if kind == SUBTITLES:
        filters = dict(SUBTITLE_FILTERS)
        chosen = ".srt"
    else:
        filters = {spec.suffix: spec.name_filter for spec in writable_formats()}
        chosen = FORMATS.get(settings.get(Key.EXPORT_FORMAT), FORMATS["wav"]).suffix
        chosen = chosen if chosen in filters else next(iter(filters))
    titles = {AUDIO: parent.tr("Export audio"), SENTENCES: parent.tr("Export one file per sentence"),
              SUBTITLES: parent.tr("Export subtitles")}
    dialog = QFileDialog(parent, titles[kind], default_folder(settings))
    dialog.setObjectName("exportDialog")
    dialog.setAcceptMode(QFileDialog.AcceptMode.AcceptSave)
    dialog.setNameFilters(list(filters.values()))
    dialog.selectNameFilter(filters[chosen])
    dialog.setDefaultSuffix(chosen.lstrip("."))
    dialog.filterSelected.connect(lambda f: dialog.setDefaultSuffix(_suffix_of_filter(f).lstrip(".")))
    dialog.selectFile(export_file_stem(text) + chosen)
    if kind == SENTENCES:  # the numbered files are checked below, not the base name
        dialog.setOption(QFileDialog.Option.DontConfirmOverwrite, True)
    if not dialog.exec() or not dialog.selectedFiles():
        return None
    path = with_filter_suffix(dialog.selectedFiles()[0], dialog.selectedNameFilter(), tuple(filters))
    settings.set(Key.EXPORT_FOLDER, str(Path(path).parent))
    spec = format_for_path(path)
    if kind != SUBTITLES and spec is not None:
        settings.set(Key.EXPORT_FORMAT, spec.key)
    return path


def write_export(parent: QWidget, utterance: Utterance, path: str, kind: str) -> str:
    """Write `utterance` as `kind` to `path`; returns what to tell the user. ExportError says what failed."""
    if kind == SUBTITLES:
        written = write_subtitles(path, utterance.text, utterance.sentences, utterance.sample_rate)
        return parent.tr("Saved subtitles for {n} sentences to {path}").format(n=len(utterance.sentences),
                                                                               path=written)
    if kind == SENTENCES:
        existing = [p for p in sentence_file_paths(path, len(utterance.sentences)) if p.exists()]
        if existing and QMessageBox.question(
                parent, parent.tr("Replace files?"),
                parent.tr("{n} of the files ({first}, …) exist already. Replace them?").format(
                    n=len(existing), first=existing[0].name)) != QMessageBox.StandardButton.Yes:
            return parent.tr("Nothing was exported.")
        files = write_sentence_files(path, utterance.pcm, utterance.sample_rate, utterance.sentences)
        return parent.tr("Saved {n} files, {first} … {last}").format(n=len(files), first=files[0].name,
                                                                   last=files[-1].name)
    written = write_audio(path, utterance.pcm, utterance.sample_rate)
    if utterance.partial:
        return parent.tr("Saved {path} (partial: {seconds} s, stopped before the end)").format(
            path=written, seconds=f"{len(utterance.pcm) / utterance.sample_rate:.1f}")
    return parent.tr("Saved {path}").format(path=written)


class WindowExports(QObject):
    """The main window's current utterance: File > Export… of it, and each finished one kept in the history.

    The current utterance is the one last started with Speak: while it is being synthesised an export waits
    for its end; Stop ends it early (its audio so far is kept, marked partial). A replay plays a history entry
    and is not a new utterance."""

    def __init__(self, window) -> None:
        super().__init__(window)
        self.window = window
        self.spoken_job: int | None = None
        self.spoken_request = None
        self.finished_job: int | None = None
        self._labels: dict[int, tuple[str, str]] = {}  # job -> (voice, model) as they were at Speak
        self.pending: dict[int, list[tuple[str, str]]] = {}  # job id -> [(path, kind)] waiting for its end

    def spoken(self, job_id: int | None, request, voice: str, model: str) -> None:
        if job_id is None:
            return
        self.spoken_job, self.spoken_request = job_id, request
        self._labels[job_id] = (voice, model)

    def speaking_job(self) -> int | None:
        """The job of the current utterance while it is still being synthesised, else None."""
        return self.spoken_job if self.spoken_job is not None and self.spoken_job != self.finished_job else None

    def current_text(self) -> str | None:
        if self.speaking_job() is not None:
            return self.spoken_request.text
        result = self.window.last_result
        return result.request.text if result is not None and result.request is not None else None

    def ask(self, kind: str = AUDIO) -> None:
        text = self.current_text()
        if text is None:
            self.window.show_message(self.tr("Nothing to export yet: speak something first."), True)
            return
        job = self.speaking_job()
        path = ask_save_path(self.window, self.window.settings, text, kind)
        if path:
            self.export(path, kind, job)

    def export(self, path: str | Path, kind: str = AUDIO, job: int | None = None) -> bool:
        """Export the utterance of `job` (None: the current one): at once when its audio is complete, else
        when its synthesis ends. Returns True when written now or queued."""
        job = self.speaking_job() if job is None else job
        last = self.window.last_result
        if job is not None and not (last is not None and last.job_id == job):
            self.pending.setdefault(job, []).append((str(path), kind))
            self.window.show_message(self.tr("Still synthesising: {name} is saved when it is complete "
                                             "(Stop saves what is ready).").format(name=Path(path).name), False)
            return True
        if last is None:
            self.window.show_message(self.tr("Nothing to export yet: speak something first."), True)
            return False
        return self._write(last, str(path), kind)

    def job_finished(self, result) -> None:
        """From the window's jobFinished handler (replays excluded): keep it in the history, make it the
        current utterance if it is, and write what waited for it."""
        voice, model = self._labels.pop(result.job_id, ("", ""))
        if len(result.pcm):
            self._keep_in_history(result, voice, model)
        if result.job_id == self.spoken_job:
            self.finished_job = result.job_id
            if len(result.pcm):
                self.window.last_result = result
        for path, kind in self.pending.pop(result.job_id, []):
            if len(result.pcm):
                self._write(result, path, kind)
            else:
                self.window.show_message(self.tr("Nothing was synthesised: {name} was not saved.").format(
                    name=Path(path).name), True)

    def _keep_in_history(self, result, voice: str, model: str) -> None:
        request = result.request
        try:
            entry = self.window.history.add(
                request.text, result.pcm, result.sample_rate, voice=voice, style=request.instruct or "",
                model=model, first_audio_ms=result.first_audio_ms, rtf=result.rtf, speed=request.speed,
                partial=bool(result.cancelled or result.error), sentences=result.sentences)
            self.window.history_panel.add_entry(entry)
        except (ExportError, OSError) as error:
            self.window.show_message(self.tr("Could not save to history: {e}").format(e=translate_message(str(error))),
                                     True)

    def _write(self, result, path: str, kind: str) -> bool:
        utterance = Utterance(result.request.text if result.request else "", result.pcm, result.sample_rate,
                              result.sentences or [SentenceRange(0, len(result.pcm), 0, 0)],
                              partial=bool(result.cancelled or result.error))
        try:
            message = write_export(self.window, utterance, path, kind)
        except ExportError as error:
            self.window.show_message(str(error), True)
            return False
        self.window.show_message(message, False)
        return True
