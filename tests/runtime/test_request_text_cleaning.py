"""What the request frontend drops from a text before it is split (control and format characters, lone
surrogates, variation selectors), found in one scan, and spans that still point into the text as typed."""

from __future__ import annotations

import sys

from cosydesk.runtime.request_inputs import RequestFrontend, _pronounceable_char, unpronounceable_positions


class CharTokenizer:
    """One id per character: enough for the splitter, which only counts tokens."""

    def encode(self, text: str) -> list[int]:
        return [ord(ch) for ch in text]


def test_the_scan_drops_exactly_what_the_per_character_rule_drops_over_all_of_unicode():
    every = "".join(chr(code) for code in range(sys.maxunicode + 1))
    expected = [i for i, ch in enumerate(every) if not _pronounceable_char(ch)]
    assert unpronounceable_positions(every) == expected
    assert len(expected) > 2000  # C0/C1 controls, 2,048 surrogates, format characters, selectors
    assert unpronounceable_positions("Hello,\tworld.\nSecond line.") == []


def test_spans_count_the_dropped_characters(tmp_path):
    frontend = RequestFrontend("v2", tmp_path, 24000, CharTokenizer(), {})
    first = "\x07Hello\u200b there, my friend."
    text = first + " \ufe0fSecond \ud800sentence is here." + "\u2060"
    segments = list(frontend.segments(text, per_sentence=True))
    assert [s.text for s in segments][0].startswith("Hello there")
    assert "\u200b" not in "".join(s.text for s in segments) and "\ud800" not in "".join(s.text for s in segments)
    assert segments[0].start == 1  # the bell is gone, its position still counts
    assert text[segments[0].start:segments[0].end].rstrip() == first[1:]
    assert text[segments[-1].start:segments[-1].end].startswith("Second")
    assert segments[-1].end <= len(text) - 1  # the word joiner at the very end is not pronounced


def test_a_text_with_nothing_to_drop_is_split_as_given(tmp_path):
    frontend = RequestFrontend("v2", tmp_path, 24000, CharTokenizer(), {})
    text = "First sentence here. Second one follows."
    spans = [(s.start, s.end) for s in frontend.segments(text, per_sentence=True)]
    assert spans[0][0] == 0 and text[spans[-1][0]:spans[-1][1]].startswith("Second")
