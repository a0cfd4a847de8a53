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
