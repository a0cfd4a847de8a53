"""Where each sentence of an utterance lies in its audio, and subtitles (.srt, .vtt) made from that.

What it is for: the synthesizer tags every AudioChunk with its sentence (``sentence_index``, ``span`` into the
request's text) and each sentence's chunks arrive together, so adding up chunk lengths per sentence gives each
sentence's sample range. Ranges are contiguous (a sentence owns the pause after it) and the last one ends
where the audio does, so cue timings add up to the audio's length. The same ranges cut "one file per
sentence" exports.

What it must not do: import Qt, or guess: without spans (an old history entry) the whole text is one cue.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

from cosydesk.atomic_file import write_atomically
from cosydesk.audio.export import ExportError

SUBTITLE_SUFFIXES = (".srt", ".vtt")


class SubtitleError(ExportError):
    """A subtitle file cannot be written; the message names the file and why."""


@dataclass(frozen=True)
class SentenceRange:
    start: int  # first sample of the sentence in the utterance
    end: int  # one past its last sample
    text_start: int  # [text_start, text_end) of the utterance's text
    text_end: int

    def to_json(self) -> list[int]:
        return [self.start, self.end, self.text_start, self.text_end]


class SentenceTimeline:
    """Collects (sentence, samples) chunk by chunk into SentenceRanges."""

    def __init__(self) -> None:
        self.ranges: list[SentenceRange] = []
        self._sentence: int | None = None
        self.samples = 0

    def add(self, sentence_index: int, span: tuple[int, int] | None, samples: int, text_length: int) -> None:
        text_start, text_end = span if span is not None else (0, text_length)
        if self._sentence == sentence_index and self.ranges:
            last = self.ranges[-1]
            self.ranges[-1] = SentenceRange(last.start, last.end + samples, last.text_start, last.text_end)
        else:
            self.ranges.append(SentenceRange(self.samples, self.samples + samples, text_start, text_end))
            self._sentence = sentence_index
        self.samples += samples


def whole_text_range(samples: int, text: str) -> list[SentenceRange]:
    """One range over everything: for audio whose sentences are not known."""
    return [SentenceRange(0, samples, 0, len(text))]


def ranges_from_json(value, samples: int, text_length: int) -> list[SentenceRange] | None:
    """Stored ranges ([[start, end, text_start, text_end], ...]) if they are contiguous and inside the audio and
    the text; None for anything else (the caller then treats the audio as one sentence)."""
    if not isinstance(value, list) or not value or len(value) > 100_000:
        return None
    ranges, expected = [], 0
    for item in value:
        if (not isinstance(item, list) or len(item) != 4
                or not all(isinstance(v, int) and not isinstance(v, bool) and v >= 0 for v in item)):
            return None
        start, end, text_start, text_end = item
        if start != expected or end < start or text_end < text_start or text_end > text_length:
            return None
        ranges.append(SentenceRange(*item))
        expected = end
    return ranges if expected == samples else None


def _clock(samples: int, sample_rate: int, separator: str) -> str:
    milliseconds = (samples * 1000 + sample_rate // 2) // sample_rate  # rounded from samples: cues stay contiguous
    hours, rest = divmod(milliseconds, 3_600_000)
    minutes, rest = divmod(rest, 60_000)
    seconds, millis = divmod(rest, 1000)
    return f"{hours:02d}:{minutes:02d}:{seconds:02d}{separator}{millis:03d}"


def cue_text(text: str, sentence: SentenceRange) -> str:
    """The sentence's words on one line (line breaks in the text would end a cue early)."""
    return " ".join(text[sentence.text_start:sentence.text_end].split())


def to_srt(text: str, ranges: list[SentenceRange], sample_rate: int) -> str:
    cues = []
    for number, sentence in enumerate(ranges, 1):
        cues.append(f"{number}\n{_clock(sentence.start, sample_rate, ',')} --> "
                    f"{_clock(sentence.end, sample_rate, ',')}\n{cue_text(text, sentence)}\n")
    return "\n".join(cues)


def to_vtt(text: str, ranges: list[SentenceRange], sample_rate: int) -> str:
    cues = ["WEBVTT\n"]
    for number, sentence in enumerate(ranges, 1):
        words = cue_text(text, sentence).replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")
        cues.append(f"{number}\n{_clock(sentence.start, sample_rate, '.')} --> "
                    f"{_clock(sentence.end, sample_rate, '.')}\n{words}\n")
    return "\n".join(cues)


def write_subtitles(path: str | os.PathLike, text: str, ranges: list[SentenceRange], sample_rate: int) -> Path:
    """Write .srt or .vtt (by the file's ending) atomically; SubtitleError names the file and the reason."""
    target = Path(path).expanduser()
    suffix = target.suffix.lower()
    if suffix not in SUBTITLE_SUFFIXES:
        raise SubtitleError(f"cannot write subtitles to {target.name}: use a name ending in .srt or .vtt")
    if not target.parent.is_dir():
        raise SubtitleError(f"cannot write {target.name}: folder {target.parent} does not exist")
    body = to_srt(text, ranges, sample_rate) if suffix == ".srt" else to_vtt(text, ranges, sample_rate)
    try:
        write_atomically(target, body)
    except OSError as error:
        raise SubtitleError(f"could not write {target}: {error.strerror or error}; nothing was written") from error
    return target
