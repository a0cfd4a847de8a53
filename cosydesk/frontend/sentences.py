"""Sentences as a reader sees them, and synthesis segments made one sentence at a time (the app's reading path).

Why: the official frontend packs several short sentences into one synthesis segment (up to ~80 tokens), which is
right for throughput but wrong for reading along: the app's "Sentence n of N", the highlight, next / previous /
repeat and subtitles would mark whole blocks. Here the *original* text is cut at sentence-final punctuation
(。！？ always; . ! ? … when a blank and no lower-case letter follow, so "3.14", "e.g. this" and "said! she"
stay whole, and a '.' not after a title or an initial: "Dr. Smith", "J. K. Rowling"), at blank lines, and at a line break that does not continue a wrapped line. The cut needs no
normaliser and no tokenizer, so the window can count a 100,000-character text's sentences at once and the
synthesizer speaks exactly the same units.

Fragments too short to synthesise well (fewer than MIN_WORDS words, a CJK character counting as a word: "Yes.",
"好的。", "Mr.") are merged into the sentence after them (the last one into the one before; one that ends a line,
such as a heading, stays on its own); such a unit says how
many sentences it holds (``count``), so the window can say "Sentences 4–5 of 20" honestly. A sentence longer
than the synthesizer takes in one go is spoken in parts (the official packer, cut at its marks, within that
sentence only); all its parts carry the sentence's span.

What it must not do: import torch or Qt; tokenise beyond the ``encode`` callable it is given.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator
from dataclasses import dataclass

from cosydesk.frontend.segments import MAX_PIECE_CHARS, Segment, _soft_cut
from cosydesk.frontend.text import (_EN_SENTENCE_END, _ZH_SENTENCE_END, detect_lang, has_markup, is_only_punctuation,
                                    normalize_piece, split_sentences)

MIN_WORDS = 2  # a sentence with fewer words ("Yes.", "好。", "Mr.") is merged into its neighbour before synthesis

_CLOSERS = "\"'”’）)」』】》］]"
# a CJK sentence mark ends a sentence wherever it stands; an ASCII one only before a blank (or the end) not
# followed by a lower-case letter; a blank line always; a single line break is handled in _breaks
_END = re.compile(
    rf"[。！？]+[{re.escape(_CLOSERS)}]*"
    rf"|(?:[.!?]+|…+)[{re.escape(_CLOSERS)}]*(?=\s+[^\sa-z]|\s*$|[\u3000-\u9fff\uff00-\uffef])"
    r"|\n[^\S\n]*\n\s*"
)
_NORMALISED_CLOSERS = _CLOSERS + "\\"  # wetext writes an ASCII quote as \"
# English titles and abbreviations a capitalised word or a number usually follows ("Dr. Smith", "Fig. 3"); a "."
# after them does not end a sentence ("No." and "etc." often do, so they are not here)
_ABBREVIATIONS = frozenset("Mr Mrs Ms Mx Dr Prof Sr Jr St Mt Rev Hon Gen Col Capt Lt Sgt Gov Sen Rep Pres "
                           "vs Inc Ltd Co Corp Vol Fig Figs pp cf approx Jan Feb Mar Apr Jun Jul Aug "
                           "Sep Sept Oct Nov Dec".split())
_LINE_BREAK = re.compile(r"\n")
_WORD = re.compile(r"[\u3040-\u30ff\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff]|[^\W\u3040-\u30ff\u3400-\u4dbf"
                   r"\u4e00-\u9fff\uf900-\ufaff]+")
_CONTINUES_LINE = ",，、;；:：-–(（"  # a line ending in one of these goes on on the next line


@dataclass(frozen=True)
class ReadingSentence:
    """One unit of reading: ``[start, end)`` of the text (no blanks at either end), holding ``count`` sentences
    (more than one where too-short ones were merged)."""

    start: int
    end: int
    count: int = 1


def _after_abbreviation(text: str, dot: int) -> bool:
    """The '.' at ``dot`` closes a title or abbreviation ("Mr.", "Dr.", "etc.") or an initial ("J. K."), not a
    sentence."""
    start = dot
    while start > 0 and text[start - 1].isalpha() and dot - start < 8:
        start -= 1
    word = text[start:dot]
    if start > 0 and (text[start - 1].isalnum() or text[start - 1] == "."):
        return False  # "U.S." and "a.m." are judged by what follows them
    return word in _ABBREVIATIONS or (len(word) == 1 and word.isupper())


def _breaks(text: str) -> dict[int, bool]:
    """Where sentences end (offsets just past the mark / line break): True where the end is a line break."""
    cuts = {m.end(): "\n" in m.group() for m in _END.finditer(text)
            if not (m.group().startswith(".") and _after_abbreviation(text, m.start()))}
    for match in _LINE_BREAK.finditer(text):
        before, after = match.start() - 1, match.end()
        while before >= 0 and text[before].isspace():
            before -= 1
        while after < len(text) and text[after].isspace():
            after += 1
        if before < 0 or after >= len(text):
            continue
        wrapped = (text[after].islower() and text[after].isascii()) or text[before] in _CONTINUES_LINE
        if not wrapped and match.end() not in cuts:
            cuts[match.end()] = True
    return dict(sorted(cuts.items()))


def _trimmed(text: str, start: int, end: int) -> tuple[int, int]:
    while start < end and text[start].isspace():
        start += 1
    while end > start and text[end - 1].isspace():
        end -= 1
    return start, end


def _raw_sentences(text: str) -> Iterator[tuple[int, int, bool]]:
    """Every sentence's trimmed span, and whether a line break ends it (a heading, a paragraph's end); one longer
    than MAX_PIECE_CHARS is cut (at a blank or comma) into pieces."""
    start = 0
    for cut, line_end in [*_breaks(text).items(), (len(text), True)]:
        while cut - start > MAX_PIECE_CHARS:
            soft = _soft_cut(text, start, start + MAX_PIECE_CHARS)
            span = _trimmed(text, start, soft)
            if span[0] < span[1]:
                yield span[0], span[1], False
            start = soft
        span = _trimmed(text, start, cut)
        if span[0] < span[1]:
            yield span[0], span[1], line_end
        start = max(start, cut)


def words(text: str, start: int = 0, end: int | None = None, at_most: int | None = None) -> int:
    """Words in ``text[start:end]``: each CJK character, and each run of other letters or digits (counting stops
    at ``at_most``)."""
    end = len(text) if end is None else end
    found = 0
    match = _WORD.search(text, start, end)
    while match is not None:
        found += 1
        if at_most is not None and found >= at_most:
            break
        match = _WORD.search(text, match.end(), end)
    return found


def reading_sentences(text: str) -> list[ReadingSentence]:
    """The reading units of ``text`` in order (see the module docstring). A text with ``<|...|>`` markup is one
    unit (the synthesizer takes it whole); text without a word (punctuation, emoji) joins the sentence before it.
    Cheap (no normaliser): about 10 ms for 100,000 characters, so the window counts them on its own thread."""
    if has_markup(text):
        span = _trimmed(text, 0, len(text))
        return [ReadingSentence(*span)] if span[0] < span[1] else []
    units: list[ReadingSentence] = []
    pending: ReadingSentence | None = None  # short sentences waiting for the next one
    for start, end, line_end in _raw_sentences(text):
        found = words(text, start, end, at_most=MIN_WORDS)
        if not found:
            if pending is not None:
                pending = ReadingSentence(pending.start, end, pending.count)
            elif units:
                units[-1] = ReadingSentence(units[-1].start, end, units[-1].count)
            else:
                pending = ReadingSentence(start, end, 0)
            continue
        if pending is not None:
            unit = ReadingSentence(pending.start, end, pending.count + 1)
            short = pending.count == 0 and found < MIN_WORDS  # merged words add up; leading punctuation does not
        else:
            unit, short = ReadingSentence(start, end), found < MIN_WORDS
        if short and not line_end:  # a short heading (it ends its line) stays on its own
            pending = unit
            continue
        units.append(unit)
        pending = None
    if pending is not None:
        if units and pending.count:
            last = units[-1]
            units[-1] = ReadingSentence(last.start, pending.end, last.count + pending.count)
        elif pending.count:
            units.append(pending)
    return units


def iter_sentence_segments(text: str, version: str, encode: Callable[[str], list[int]],
                           token_max_n: int = 80) -> Iterator[Segment]:
    """Synthesis segments of ``text`` one reading sentence at a time, normalised lazily; each carries the
    sentence's span and its number (``Segment.sentence``). A sentence longer than ``token_max_n`` (characters in
    Chinese, ``encode`` tokens otherwise) is split by the official packer into parts that share its span."""
    if not text:
        return
    if has_markup(text):
        yield Segment(text, 0, len(text), sentence=0)
        return
    lang = detect_lang(text)  # decided once on the whole text, as the official rule does
    for number, unit in enumerate(reading_sentences(text)):
        # a wrapped line goes on after a blank (the Chinese clean-up drops line breaks, which glued the words)
        normalised = normalize_piece(re.sub(r"\s*\n\s*", " ", text[unit.start:unit.end]), version, lang, final=True)
        body = normalised.rstrip(_NORMALISED_CLOSERS)
        if not body.strip():
            continue
        parts = split_sentences(body, encode, lang, token_max_n=token_max_n)
        if parts and body[-1] in (_ZH_SENTENCE_END if lang == "zh" else _EN_SENTENCE_END):
            parts[-1] += normalised[len(body):]  # the closing quote after the final mark, not a mark after it
        for part in parts:
            if part.strip() and not is_only_punctuation(re.sub(r"\s+", "", part)):
                yield Segment(part, unit.start, unit.end, sentence=number)
