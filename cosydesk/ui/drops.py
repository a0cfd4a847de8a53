"""Files dragged onto the app: which local paths a drag carries and what each one is.

The main window sends a dropped folder to the model manager ("Add folder…"), a recording to a new voice (the
voice dialog with it loaded) and anything else to the editor (as File > Open text…); the voice dialog takes a
recording. A drag that carries no local file (plain text, a web link) is left to the widget under it, so text
still drags and drops inside the editor as usual.
"""

from __future__ import annotations

import functools
from pathlib import Path
from typing import Literal

import soundfile
from PySide6.QtCore import QEvent, QMimeData

DropKind = Literal["folder", "audio", "text"]
DRAG_EVENTS = (QEvent.Type.DragEnter, QEvent.Type.DragMove, QEvent.Type.Drop)


def dropped_paths(mime: QMimeData) -> list[Path]:
    """The local files and folders a drag carries (remote URLs are not files here)."""
    if not mime.hasUrls():
        return []
    return [Path(url.toLocalFile()) for url in mime.urls() if url.isLocalFile()]


@functools.lru_cache(maxsize=1)
def audio_suffixes() -> frozenset[str]:
    """File name endings of the formats libsndfile decodes (what a voice prompt is read with), plus common
    spellings libsndfile's format names do not give (.aif, .opus, .oga)."""
    return frozenset("." + name.lower() for name in soundfile.available_formats()) | {".aif", ".opus", ".oga"}


def drop_kind(path: Path) -> DropKind:
    if path.is_dir():
        return "folder"
    return "audio" if path.suffix.lower() in audio_suffixes() else "text"


class FileDrops:
    """Mixin, listed before the Qt widget class: local files dragged onto the widget, or onto the fields given to
    ``accept_file_drops`` (text fields would otherwise insert the path), go to ``files_dropped``; other drags
    reach the widget under the cursor as usual."""

    def accept_file_drops(self, *fields) -> None:
        self.setAcceptDrops(True)
        for field in fields:
            field.installEventFilter(self)

    def files_dropped(self, paths: list[Path]) -> None:
        raise NotImplementedError

    def eventFilter(self, watched, event) -> bool:  # noqa: N802
        if event.type() in DRAG_EVENTS and dropped_paths(event.mimeData()):
            self._take_file_drag(event)
            return True
        return super().eventFilter(watched, event)

    def dragEnterEvent(self, event) -> None:  # noqa: N802
        self._take_file_drag(event)

    def dragMoveEvent(self, event) -> None:  # noqa: N802
        self._take_file_drag(event)

    def dropEvent(self, event) -> None:  # noqa: N802
        self._take_file_drag(event)

    def _take_file_drag(self, event) -> None:
        paths = dropped_paths(event.mimeData())
        if not paths:
            event.ignore()
            return
        event.acceptProposedAction()
        if event.type() == QEvent.Type.Drop:
            self.files_dropped(paths)
