"""Lazy text segmentation: a long text becomes synthesis segments one at a time, each with its place in the text.

Why: normalising a whole 100,000-character text first (what the official frontend does) takes tens of seconds
before the first sentence can be synthesised, and wetext holds the GIL while it works, so the desktop app's
window froze with it. Here the text is cut cheaply into raw pieces (at paragraph breaks and sentence marks
that cannot be part of a number), each piece is normalised only when the segments before it have been taken,
and the official greedy packer (``text.split_sentences``) runs incrementally over the normalised pieces. First
audio for a long text therefore costs what one paragraph's normalisation costs.

Same result as normalising the whole text and packing it (``normalize`` + ``split_sentences``) whenever the
normaliser treats pieces independently, which is what wetext does at the cut points used here (tested on
Chinese and English paragraphs). The language is decided once, on the whole text, as the official rule does.
Texts with ``<|...|>`` markup are passed through untouched as one segment, as the official frontend does.

Every segment carries the span ``[start, end)`` of the original text it was made from, so the app can
highlight the sentence being spoken.

What it must not do: tokenise beyond the ``encode`` callable it is given, or import torch.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator
from dataclasses import dataclass

from cosydesk.frontend.text import (_CLOSING_QUOTES, _COMMAS, _EN_SENTENCE_END, _ZH_SENTENCE_END, detect_lang,
                                    has_markup, is_only_punctuation, normalize_piece)

# A raw piece ends after one of these (a '.' ':' ';' only before whitespace, so "3.14" and "12:30" stay whole),
# or at a line break; a piece without any is cut at MAX_PIECE_CHARS (at a space or comma when there is one).
_RAW_CUT = re.compile(r"[。！？；!?]+[\"”’）)]*|[.;:](?=\s)|\n+")
MAX_PIECE_CHARS = 400


@dataclass(frozen=True)
class Segment:
    """One synthesis segment: the normalised text, and the span of the original text it came from.

    sentence: the reading sentence it belongs to (frontend.sentences, the app's reading path; several segments of
    one long sentence share it); None for the official packing, where every segment is its own unit."""

    text: str
    start: int
    end: int
    sentence: int | None = None


def raw_pieces(text: str) -> Iterator[tuple[int, int]]:
    """Spans [start, end) that cover ``text`` in order, cut after sentence marks and line breaks."""
    start = 0
    for match in _RAW_CUT.finditer(text):
        end = match.end()
        while end - start > MAX_PIECE_CHARS:
            cut = _soft_cut(text, start, start + MAX_PIECE_CHARS)
            yield start, cut
            start = cut
        if end > start:
            yield start, end
            start = end
    while start < len(text):
        cut = _soft_cut(text, start, min(len(text), start + MAX_PIECE_CHARS)) if len(text) - start > MAX_PIECE_CHARS \
            else len(text)
        yield start, cut
        start = cut


def _soft_cut(text: str, start: int, limit: int) -> int:
    """A cut at or before ``limit``: after the last space or comma of the window, else exactly at it."""
    window = text[start:limit]
    best = max(window.rfind(" "), window.rfind("，"), window.rfind(","))
    return start + best + 1 if best > 0 else limit


class _MarkCutter:
    """``text._cut_at_marks`` over a stream of normalised pieces: whatever follows a piece's last mark is
    carried into the next piece (the official code cuts the whole normalised text at once)."""

    def __init__(self, marks: tuple[str, ...]):
        self.marks = marks
        self.carry = ""
        self.carry_start = 0

    def feed(self, text: str, start: int, end: int) -> list[tuple[str, int, int]]:
        """Pieces ending at a mark, each with the span of the original text it covers."""
        out: list[tuple[str, int, int]] = []
        body = self.carry + text
        begin = self.carry_start if self.carry else start
        i = piece_start = 0
        while i < len(body):
            if body[i] not in self.marks:
                i += 1
                continue
            stop = i + 1
            if stop < len(body) and body[stop] in _CLOSING_QUOTES:
                stop += 1
            if i > piece_start:
                out.append((body[piece_start:stop], begin, end))
                begin = start  # later pieces of this feed start within this raw piece
            elif stop > i + 1 and out:  # a mark with an empty body hands its quote to the previous piece
                out[-1] = (out[-1][0] + body[i + 1:stop], out[-1][1], end)
            piece_start = i = stop
        self.carry = body[piece_start:]
        self.carry_start = begin if self.carry else 0
        return out


def _joined(previous: str, text: str, start: int, normalised: str, is_zh: bool) -> str:
    """``normalised`` (the piece of ``text`` from ``start``) with the one blank the whole-text normaliser would
    have kept before it: where whitespace separates the piece from the text before it, always in English, in
    Chinese text only between ASCII characters."""
    blank = text[start:start + 1].isspace() or (start > 0 and text[start - 1].isspace())
    if not previous or not normalised or not blank or previous[-1] == " ":
        return normalised
    if not is_zh or (previous[-1].isascii() and normalised[0].isascii()):
        return " " + normalised
    return normalised


def iter_segments(text: str, version: str, encode: Callable[[str], list[int]], token_max_n: int = 80,
                  token_min_n: int = 60, merge_len: int = 20) -> Iterator[Segment]:
    """The synthesis segments of ``text`` (already cleaned of control characters), normalised lazily.

    Packing follows ``split_sentences``: pieces ending at sentence marks are packed greedily, a segment closes
    once it is longer than ``token_min_n`` and the next piece would pass ``token_max_n``, a final remainder
    shorter than ``merge_len`` joins the previous segment, and a missing final mark is added. Lengths are
    characters for Chinese and ``encode`` tokens otherwise.
    """
    if not text:
        return
    if has_markup(text):  # official: markup texts are neither normalised nor split
        yield Segment(text, 0, len(text))
        return
    lang = detect_lang(text)
    is_zh = lang == "zh"
    marks = _ZH_SENTENCE_END if is_zh else _EN_SENTENCE_END

    def length(segment: str) -> int:
        return len(segment) if is_zh else len(encode(segment))

    cutter = _MarkCutter(marks)
    pieces_iter = raw_pieces(text)
    current, current_span = "", None
    previous = ""  # the last character normalised so far
    pending: Segment | None = None  # the last closed segment: a short final remainder may still join it
    upcoming = next(pieces_iter, None)
    while upcoming is not None:
        start, end = upcoming
        upcoming = next(pieces_iter, None)
        final = upcoming is None
        normalised = _joined(previous, text, start, normalize_piece(text[start:end], version, lang, final=final),
                             is_zh)
        previous = (previous + normalised)[-1:] if normalised else previous
        if final:
            tail = (cutter.carry + normalised) if (cutter.carry or normalised) else ""
            if tail and tail[-1] not in marks:
                normalised += "。" if is_zh else "."
        for piece, p_start, p_end in cutter.feed(normalised, start, end):
            if current and length(current + piece) > token_max_n and length(current) > token_min_n:
                if pending is not None and not is_only_punctuation(pending.text):
                    yield pending
                pending, current, current_span = Segment(current, *current_span), "", None
            current += piece
            current_span = (p_start, p_end) if current_span is None else (current_span[0], p_end)
            if pending is not None and length(current) >= merge_len:
                if not is_only_punctuation(pending.text):
                    yield pending  # the remainder can no longer be short enough to join it
                pending = None
    if current:
        if pending is not None and length(current) < merge_len:
            pending = Segment(pending.text + current, pending.start, current_span[1])
        else:
            if pending is not None and not is_only_punctuation(pending.text):
                yield pending
            pending = Segment(current, *current_span)
    if pending is not None and not is_only_punctuation(pending.text):
        yield pending
