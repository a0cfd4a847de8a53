"""Messages built below the UI (engine, audio, files, Diagnostics) in the UI's language.

The lower layers raise plain English (they are Qt-free and shared with the CLI and the API); the app passes every
such message it shows through `translate_message`. The tables are the modules of cosydesk/ui/message_tables,
each defining ``ZH_CN: dict[str, str]``: an English template -> its Chinese template.

Template format: literal text with numbered fields ``{0}``, ``{1}``, … in order of appearance in the English
text (the Chinese template may use them in any order). Matching: each English template is compiled into an
anchored full-match regex (re.DOTALL), each field a lazy group, its first letter matching either case (the app
capitalises what it shows); entries with more literal text are tried first, and the first that matches wins. A
captured field is itself translated when it fully matches an entry (nested phrases, a "<file>: <message>"
prefix, "Cannot load X: <message>"), otherwise kept verbatim. Joiners, entries whose literal text holds no
letter (``{0}: {1}``, ``{0}; {1}``), come last: every place their separator divides the text is tried and the
division that leaves the fewest parts untranslated wins; a joiner never applies when none of its parts
translates, so text no table knows comes back unchanged. A "; "-joined list whose every message some entry
knows is translated message by message when that keeps fewer Latin words than the entry matching it whole (whose
field would otherwise swallow the messages before it). Text of several lines is translated line by line
first. A KeyError's quotes (``str(KeyError("…"))``) are looked through. Numbers stay as they were formatted.

What it must not do: raise (unknown text comes back unchanged), or change English text.
"""

from __future__ import annotations

import functools
import importlib
import pkgutil
import re
from dataclasses import dataclass

FIELD = re.compile(r"\{(\d+)\}")
LIST_SEPARATOR = "; "  # between the messages of a list (hub's folder problems, Diagnostics details)
LATIN_WORD = re.compile(r"[A-Za-z]{2,}")
MAX_JOINED_CHARS = 3000  # longer text is not divided at its joiners (every division is tried: quadratic)


@dataclass(frozen=True)
class _Entry:
    english: str
    translated: str
    pattern: re.Pattern
    literal_length: int
    anchor: str  # its longest literal piece, lower case: text without it cannot match (a cheap test first)
    separator: str | None  # a joiner ("{0}: {1}", no letter in its literal text): what stands between its fields


@dataclass(frozen=True)
class _Table:
    entries: tuple[_Entry, ...]  # with letters in their literal text, most literal text first
    joiners: tuple[_Entry, ...]


def _compile(english: str) -> re.Pattern:
    parts: list[str] = []
    position = 0
    for match in FIELD.finditer(english):
        parts.append(_literal(english[position:match.start()], position == 0))
        parts.append("(.*?)")
        position = match.end()
    parts.append(_literal(english[position:], position == 0))
    return re.compile("".join(parts), re.DOTALL)


def _literal(text: str, at_start: bool) -> str:
    if at_start and text[:1].isalpha() and text[:1].lower() != text[:1].upper():
        return f"[{re.escape(text[0].lower())}{re.escape(text[0].upper())}]" + re.escape(text[1:])
    return re.escape(text)


def _table(mapping: dict[str, str]) -> _Table:
    entries, joiners = [], []
    for english, translated in mapping.items():
        literal = FIELD.sub("", english)
        if not literal:
            continue  # "{0}" alone would match everything and translate nothing
        anchor = max(FIELD.split(english)[::2], key=len).lower()
        if any(char.isalpha() for char in literal):
            entries.append(_Entry(english, translated, _compile(english), len(literal), anchor, None))
        else:
            shape = re.fullmatch(r"\{0\}(.+)\{1\}", english)
            joiners.append(_Entry(english, translated, _compile(english), len(literal), anchor,
                                  shape.group(1) if shape and not FIELD.search(shape.group(1)) else None))
    entries.sort(key=lambda entry: (-entry.literal_length, entry.english))
    joiners.sort(key=lambda entry: (-entry.literal_length, entry.english))
    return _Table(tuple(entries), tuple(joiners))


@functools.lru_cache(maxsize=None)
def tables(language: str) -> _Table:
    """The compiled entries for `language` ('zh_CN' -> every message_tables module's ZH_CN)."""
    from cosydesk.ui import message_tables

    attribute = language.upper()
    merged: dict[str, str] = {}
    for module_info in sorted(pkgutil.iter_modules(message_tables.__path__), key=lambda info: info.name):
        module = importlib.import_module(f"{message_tables.__name__}.{module_info.name}")
        merged.update(getattr(module, attribute, {}) or {})
    return _table(merged)


def merged_table(language: str = "zh_CN") -> dict[str, str]:
    """English template -> translated template, over all table modules (for tests and tools)."""
    table = tables(language)
    return {entry.english: entry.translated for entry in table.entries + table.joiners}


def _fill(template: str, fields: list[str]) -> str:
    return FIELD.sub(lambda m: fields[int(m.group(1))] if int(m.group(1)) < len(fields) else m.group(), template)


def _has_letters(text: str) -> bool:
    return any(char.isascii() and char.isalpha() for char in text)


def _fields(values, language: str) -> tuple[list[str], int, bool]:
    """Each captured value translated where an entry matches it: (texts, untranslated parts, any translated)."""
    texts, untranslated, translated_any = [], 0, False
    for value in values:
        inner = _translate(value, language)
        if inner is None:
            texts.append(value)
            untranslated += _has_letters(value)
        else:
            texts.append(inner[0])
            untranslated += inner[1]
            translated_any = True
    return texts, untranslated, translated_any


@functools.lru_cache(maxsize=8192)
def _translate(text: str, language: str) -> tuple[str, int] | None:
    """(translation, how many parts with letters stayed as they were) when an entry matches `text` whole."""
    if not text.strip():
        return None
    table = tables(language)
    if "\n" in text:  # lines first: a field of a one-line entry must not swallow the lines after it
        lines = [_translate(line, language) for line in text.split("\n")]
        if any(line is not None for line in lines):
            kept = sum(_has_letters(old) for old, new in zip(text.split("\n"), lines) if new is None)
            return "\n".join(new[0] if new is not None else old
                             for old, new in zip(text.split("\n"), lines)), kept + sum(
                new[1] for new in lines if new is not None)
    listed = _list_of_messages(text, language)
    lowered = text.lower()
    for entry in table.entries:
        if entry.anchor not in lowered:
            continue
        match = entry.pattern.fullmatch(text)
        if match is not None:
            texts, untranslated, _ = _fields(match.groups(), language)
            whole = _fill(entry.translated, texts)
            if listed is not None and _latin_words(listed[0]) < _latin_words(whole):
                return listed  # the entry's field swallowed messages of the list: each on its own leaves less
            return whole, untranslated
    if listed is not None:
        return listed
    best: tuple[int, int, str] | None = None  # (untranslated parts, -translated parts, text): least left first
    for joiner in table.joiners if len(text) <= MAX_JOINED_CHARS else ():
        if joiner.anchor not in lowered:
            continue
        for values in _splits(joiner, text):
            texts, untranslated, translated_any = _fields(values, language)
            if not translated_any:
                continue
            candidate = (untranslated, -sum(_translate(v, language) is not None for v in values),
                         _fill(joiner.translated, texts))
            if best is None or candidate[:2] < best[:2]:
                best = candidate
    return (best[2], best[0]) if best is not None else None


def _latin_words(text: str) -> int:
    """How many Latin words a translation kept (names, paths and prose alike: only compared between two
    translations of the same text, which keep the same names)."""
    return len(LATIN_WORD.findall(text))


def _list_of_messages(text: str, language: str) -> tuple[str, int] | None:
    """Text that is a "; "-joined list of messages each of which an entry or joiner knows (hub's folder problems,
    as Diagnostics shows them): each translated, joined. Preferred to an entry that matches the whole text when
    it keeps fewer Latin words: the entry's field swallowed the messages before it ("…; llm.pt is missing (model
    weights)" read as one "{0} is missing (model weights)")."""
    if LIST_SEPARATOR not in text or len(text) > MAX_JOINED_CHARS:
        return None
    joiner = next((entry for entry in tables(language).joiners if entry.separator == LIST_SEPARATOR), None)
    parts = [_translate(part, language) for part in text.split(LIST_SEPARATOR)]
    if joiner is None or any(part is None for part in parts):
        return None
    joined = parts[0][0]
    for part in parts[1:]:
        joined = _fill(joiner.translated, [joined, part[0]])
    return joined, sum(part[1] for part in parts)


def _splits(joiner: _Entry, text: str):
    """Every way `joiner` divides `text`: at each occurrence of its separator (one regex match otherwise)."""
    if joiner.separator is None:
        match = joiner.pattern.fullmatch(text)
        if match is not None:
            yield match.groups()
        return
    start = text.find(joiner.separator, 1)
    while start > 0:
        end = start + len(joiner.separator)
        if end < len(text):
            yield text[:start], text[end:]
        start = text.find(joiner.separator, start + 1)


def current_language() -> str:
    """The language ui/i18n.py installed last ('en' before any)."""
    from cosydesk.ui import i18n

    return i18n.current_language()


def _cached(text: str, language: str) -> str:
    translated = _translate(text, language)
    if translated is None and len(text) > 2 and text[0] == text[-1] == "'":  # str(KeyError("…")) adds quotes
        translated = _translate(text[1:-1], language)
    return translated[0] if translated is not None else text


def translate_message(text: str, language: str | None = None) -> str:
    """`text` (an English message from below the UI) in `language` (None: the UI's language now); English, an
    unknown language and text no table knows come back unchanged. Never raises."""
    try:
        language = language or current_language()
        if language == "en" or not isinstance(text, str) or not text:
            return text
        return _cached(text, language)
    except Exception:  # noqa: BLE001 - a broken table must never cost the user the message itself
        return text


_PLAIN_FIRST_WORD = re.compile(r"[a-z]+(?=[\s,:;]|$)")


def sentence_case(text: str) -> str:
    """The message as a sentence: a first word in plain lower case gets its capital ("speed 3.0 is…" -> "Speed
    3.0 is…"); one that is a name as written (``llm.pt``, ``speech_tokenizer_v2.onnx``, ``eager-fp16``) stays."""
    return text[:1].upper() + text[1:] if _PLAIN_FIRST_WORD.match(text or "") else text


def display_message(text: str, language: str | None = None) -> str:
    """What the app shows for an engine message: translated, starting with a capital letter."""
    return sentence_case(translate_message(text, language))
