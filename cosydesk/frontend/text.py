"""Text normalisation and sentence splitting before tokenisation.

Reproduces what the official CosyVoice frontend does to user text when the `wetext`
normaliser is available (the `ttsfrd` engine is not supported): language choice by
"contains a CJK ideograph", wetext TN, a few Chinese clean-ups, and the greedy
sentence packer that cuts long paragraphs into segments synthesised one at a time.

This module must not tokenise, load models or touch audio. The only heavy object
is the wetext normaliser, built lazily once per process (its FSTs ship inside the
wetext wheel; importing wetext reads all of them, about 0.35 s on 2 CPU cores).

Deliberate deviations from the official code (documented so nobody "fixes" them back):
* English text is normalised with wetext forced to `lang="en"`. The official code lets
  wetext auto-detect, and wetext calls an all-digit string ("2024") Chinese, so an
  English-branch text made only of digits would be read out in Chinese.
* Digits that survive wetext's English TN are spelled with wetext's own English
  number grammar instead of the `inflect` package (one dependency fewer). wetext's
  English TN already spells practically every digit sequence, so this is a fallback.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from functools import lru_cache
from typing import Literal

import regex

# Same ideograph range as the official language test (CJK Unified Ideographs only).
_CJK_IDEOGRAPH = re.compile(r"[\u4e00-\u9fff]")
# Unicode punctuation or symbol classes; `regex` understands \p{..}, `re` does not.
_ONLY_PUNCT_OR_SYMBOL = regex.compile(r"[\p{P}\p{S}]*")
_PRONOUNCEABLE = regex.compile(r"[^\p{P}\p{S}\s]")
_ASCII_DIGIT_RUN = re.compile(r"[0-9]+")
_TRAILING_COMMAS = re.compile(r"[，,、]+$")

# Sentence-ending marks per language; commas join them when comma_split is asked for.
_ZH_SENTENCE_END = ("。", "？", "！", "；", "：", "、", ".", "?", "!", ";")
_EN_SENTENCE_END = (".", "?", "!", ";", ":")
_COMMAS = ("，", ",")
_CLOSING_QUOTES = ('"', "”")

SUPPORTED_VERSIONS = ("v1", "v2", "v3")


def detect_lang(text: str) -> Literal["zh", "en"]:
    """'zh' when the text holds at least one CJK ideograph, else 'en' (official rule)."""
    return "zh" if _CJK_IDEOGRAPH.search(text) else "en"


def is_only_punctuation(text: str) -> bool:
    """True for an empty string or one made only of punctuation/symbol characters.

    Whitespace is neither, so " " is not "only punctuation" (as in the official check).
    """
    return _ONLY_PUNCT_OR_SYMBOL.fullmatch(text) is not None


def says_nothing(text: str) -> bool:
    """True when ``text`` holds only punctuation, symbols and blanks (is_only_punctuation with the blanks
    removed), found by one scan that stops at the first letter: a long text is not copied to be checked."""
    return _PRONOUNCEABLE.search(text) is None


def has_markup(text: str) -> bool:
    """Texts with `<|...|>` control tags (e.g. `<|endofprompt|>`) skip normalisation."""
    return "<|" in text and "|>" in text


@lru_cache(maxsize=1)
def _wetext_normalizer():
    # Imported here: importing wetext loads every FST of the package.
    from wetext import Normalizer

    return Normalizer(remove_erhua=False)


def _drop_blanks_next_to_non_ascii(text: str) -> str:
    """Keep a space only when both neighbours are non-space ASCII characters.

    This removes the blanks between CJK characters (and between CJK and Latin text)
    that wetext or the user left. A space at either end of the string is dropped too.
    """
    kept: list[str] = []
    last = len(text) - 1
    for i, ch in enumerate(text):
        if ch != " ":
            kept.append(ch)
            continue
        if 0 < i < last:
            before, after = text[i - 1], text[i + 1]
            if before.isascii() and before != " " and after.isascii() and after != " ":
                kept.append(ch)
    return "".join(kept)


def _zh_cleanup(text: str, final: bool = True) -> str:
    text = text.replace("\n", "")
    text = _drop_blanks_next_to_non_ascii(text)
    text = text.replace("²", "平方").replace("³", "立方")
    text = text.replace(".", "。")
    text = text.replace(" - ", "，")
    # Brackets and backquotes carry no sound; an em-dash pair becomes a pause.
    for mark in ("（", "）", "【", "】", "`"):
        text = text.replace(mark, "")
    text = text.replace("——", " ")
    # A dangling comma at the very end would leave the last clause unfinished.
    return _TRAILING_COMMAS.sub("。", text) if final else text


def _spell_leftover_digits(text: str) -> str:
    normalizer = _wetext_normalizer()
    return _ASCII_DIGIT_RUN.sub(lambda m: normalizer.normalize(m.group(0), lang="en"), text)


# Full-width digits (U+FF10-FF19, typed with a CJK input method) read like ASCII ones in English text: wetext's
# English grammar only knows ASCII digits.
_FULL_WIDTH_DIGITS = str.maketrans("０１２３４５６７８９", "0123456789")


def normalize(text: str, version: str) -> str:
    """Normalise one user text the way the official frontend does (split=False).

    `version` ('v1'/'v2'/'v3') is validated only: the rules are the same for all three.
    Text with `<|...|>` markup, and the empty string, are returned unchanged.
    """
    if version not in SUPPORTED_VERSIONS:
        raise ValueError(f"unknown model version {version!r}; expected one of {SUPPORTED_VERSIONS}")
    if text == "" or has_markup(text):
        return text
    return normalize_piece(text, version, detect_lang(text), final=True)


def normalize_piece(text: str, version: str, lang: str, final: bool = True) -> str:
    """``normalize`` for one piece of a longer text whose language (``lang``) was decided on the whole text;
    ``final``: the piece ends the text (only there does a dangling comma become a full stop)."""
    if version not in SUPPORTED_VERSIONS:
        raise ValueError(f"unknown model version {version!r}; expected one of {SUPPORTED_VERSIONS}")
    # wetext's token parser asserts on empty tokens, which runs of blanks produce: collapse them first
    text = re.sub(r"[^\S\n]+", " ", text).strip()
    if not text:
        return text
    if lang == "en":
        text = text.translate(_FULL_WIDTH_DIGITS)
    normalizer = _wetext_normalizer()
    try:
        normalised = normalizer.normalize(text, lang=lang)
    except (AssertionError, ValueError, IndexError):
        normalised = text  # an input the grammar cannot parse is spoken as written rather than refused
    if lang == "zh":
        return _zh_cleanup(normalised, final)
    return _spell_leftover_digits(normalised)


def _cut_at_marks(text: str, marks: tuple[str, ...]) -> list[str]:
    """Cut after every sentence mark; a closing quote right after a mark stays with it."""
    pieces: list[str] = []
    start = 0
    i = 0
    while i < len(text):
        if text[i] in marks:
            end = i + 1
            if end < len(text) and text[end] in _CLOSING_QUOTES:
                end += 1
            if i > start:
                pieces.append(text[start:end])
            elif end > i + 1 and pieces:
                # A mark with an empty body still hands its quote to the previous piece.
                pieces[-1] += text[i + 1 : end]
            start = end
            i = end
            continue
        i += 1
    return pieces


def split_sentences(
    text: str,
    encode: Callable[[str], list[int]],
    lang: str,
    token_max_n: int = 80,
    token_min_n: int = 60,
    merge_len: int = 20,
    comma_split: bool = False,
) -> list[str]:
    """Split a normalised paragraph into synthesis segments (official split_paragraph rules).

    Lengths are counted in characters for 'zh' and in `encode` tokens otherwise. Pieces
    ending at sentence marks are packed greedily: a segment is closed once it is longer
    than `token_min_n` and adding the next piece would pass `token_max_n`; a final
    remainder shorter than `merge_len` is glued to the previous segment. A missing final
    mark is added ('。' for zh, '.' otherwise). Segments made only of punctuation are dropped.
    """
    if not text:
        return []
    is_zh = lang == "zh"

    def length(segment: str) -> int:
        return len(segment) if is_zh else len(encode(segment))

    marks = _ZH_SENTENCE_END if is_zh else _EN_SENTENCE_END
    if comma_split:
        marks = marks + _COMMAS
    if text[-1] not in marks:
        text += "。" if is_zh else "."

    segments: list[str] = []
    current = ""
    for piece in _cut_at_marks(text, marks):
        if length(current + piece) > token_max_n and length(current) > token_min_n:
            segments.append(current)
            current = ""
        current += piece
    if current:
        if segments and length(current) < merge_len:
            segments[-1] += current
        else:
            segments.append(current)
    return [s for s in segments if not is_only_punctuation(s)]
