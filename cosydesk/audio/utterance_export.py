"""Exporting one utterance: default file names made from its text, and one audio file per sentence.

The name rule is shared by the main window and the history panel (so both offer the same name for the same
text). Plain Python; no Qt.
"""

from __future__ import annotations

import os
import re
from pathlib import Path

import numpy as np

from cosydesk.audio.export import write_audio
from cosydesk.audio.subtitles import SentenceRange

NAME_CHARS = 40
_UNSAFE = re.compile(r'[<>:"/\\|?*\x00-\x1f\x7f]')  # not allowed in file names on Windows, or never sensible


def export_file_stem(text: str, limit: int = NAME_CHARS) -> str:
    """A file name (without ending) from the start of `text`: its first words up to `limit` characters, cut at a
    word boundary where there is one, characters no file system takes removed; "speech" for empty text."""
    words = " ".join(_UNSAFE.sub(" ", text or "").split())
    if len(words) > limit:
        cut = words[:limit + 1]
        space = cut.rfind(" ")
        words = cut[:space] if space >= limit // 2 else words[:limit]
    stem = words.strip(" .")
    return stem or "speech"


def sentence_file_paths(base: str | os.PathLike, count: int) -> list[Path]:
    """base-01.ext, base-02.ext, … (zero-padded to the width of `count`)."""
    path = Path(base)
    width = max(2, len(str(count)))
    return [path.with_name(f"{path.stem}-{number:0{width}d}{path.suffix}") for number in range(1, count + 1)]


def write_sentence_files(base: str | os.PathLike, pcm: np.ndarray, sample_rate: int,
                         ranges: list[SentenceRange]) -> list[Path]:
    """One file per sentence, named after `base` (sentence_file_paths), each written atomically. ExportError
    from the file that failed; the ones before it stay (each is complete)."""
    samples = np.asarray(pcm, dtype=np.float32).reshape(-1)
    written = []
    for path, sentence in zip(sentence_file_paths(base, len(ranges)), ranges):
        written.append(write_audio(path, samples[sentence.start:sentence.end], sample_rate))
    return written
