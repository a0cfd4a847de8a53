"""Lazy segmentation (cosydesk/frontend/segments.py): the official result on ordinary texts, spans into the
original text, normalisation on demand, markup passed through, full-width digits spelled."""

from __future__ import annotations

import pytest

import cosydesk.frontend.segments as segments
from cosydesk.frontend.segments import iter_segments, raw_pieces
from cosydesk.frontend.text import detect_lang, normalize, split_sentences

TEXTS = [
    "你好，世界。今天天气很好！我们去公园散步吧？好的。",
    "Hello there. How are you today? I am fine, thanks! It is 3.14 and 12:30 now; see you at 5 pm.",
    "第一段文字，包含数字123和英文ABC。\n第二段：这里有2024年5月1日的日期，还有百分之50的折扣！\n第三段没有句号",
    "This is a long English paragraph. " * 30,
    "这是一个很长的中文段落，里面有很多句子。" * 40,
    'He said, "Hello." Then he left. She replied: "Goodbye!" And that was it',
    "价格是3.5元，时间是12:30。温度25°C，概率95%。电话13800138000。",
    "Mixed 中文 and English. 这是混合的。OK.",
]


def whole_text(text: str, encode) -> list[str]:
    normalised = normalize(text, "v2")
    return split_sentences(normalised, encode, detect_lang(normalised))


@pytest.mark.parametrize("text", TEXTS)
@pytest.mark.parametrize("encode", [list, str.split], ids=["chars", "words"])
def test_same_segments_as_normalising_the_whole_text(text, encode):
    assert [s.text for s in iter_segments(text, "v2", encode)] == whole_text(text, encode)


def test_spans_cover_the_text_in_order():
    text = TEXTS[2] + "\n" + TEXTS[3]
    found = list(iter_segments(text, "v2", list))
    assert found[0].start == 0 and found[-1].end == len(text.rstrip())  # trailing blanks say nothing
    assert all(a.end <= b.start or a.start == b.start for a, b in zip(found, found[1:]))
    assert all(s.start < s.end for s in found)
    pieces = list(raw_pieces("a" * 1000 + "。b"))
    assert pieces[0] == (0, 400) and pieces[-1][1] == 1002
    assert all(end - start <= segments.MAX_PIECE_CHARS for start, end in pieces)


def test_numbers_are_not_cut(monkeypatch):
    assert list(raw_pieces("It is 3.14 now. 12:30 then.")) == [(0, 15), (15, 27)]


def test_long_text_is_normalised_on_demand(monkeypatch):
    calls = []
    real = segments.normalize_piece

    def counting(text, version, lang, final=True):
        calls.append(text)
        return real(text, version, lang, final)

    monkeypatch.setattr(segments, "normalize_piece", counting)
    text = "The first sentence is here. " * 5000  # 140,000 characters
    it = iter_segments(text, "v2", str.split)
    first = next(it)
    assert first.text.startswith("The first sentence is here.")
    # a segment holds 60-80 words (~13 of these sentences); one more piece decides where it ends
    assert len(calls) <= 20, f"{len(calls)} pieces normalised before the first segment"
    assert sum(len(c) for c in calls) < 1000 < len(text) / 100


def test_markup_is_passed_through_as_the_official_frontend_does():
    text = "You are a helpful assistant.<|endofprompt|>今天123天气，好"
    assert [s.text for s in iter_segments(text, "v2", list)] == [text]


def test_full_width_digits_are_spelled_in_english():
    (segment,) = iter_segments("I have １２３ apples.", "v2", str.split)
    assert "one hundred" in segment.text and "１" not in segment.text
