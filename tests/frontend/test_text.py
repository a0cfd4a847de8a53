"""Text normalisation and sentence splitting (official text_normalize semantics)."""

from __future__ import annotations

import time

import pytest

from cosydesk.frontend.text import detect_lang, is_only_punctuation, normalize, says_nothing, split_sentences


def test_wetext_loads_offline_and_fast():
    start = time.perf_counter()
    assert normalize("I have 2 cats.", "v2") == "I have two cats."
    # Importing wetext reads all its packaged FSTs (~0.35 s here); generous bound for CI.
    assert time.perf_counter() - start < 10.0


@pytest.mark.parametrize(
    "text, expected",
    [
        ("今天是2024年3月5日，气温25.5°C。", "今天是二零二四年三月五日，气温二十五点五摄氏度。"),
        ("他说：这是第1名，比分3:2。", "他说：这是第一名，比分三比二。"),
        # zh clean-ups: blanks between CJK dropped, brackets removed, '.' -> '。', trailing comma -> '。'
        ("你好 世界（测试）【注】，", "你好世界测试注。"),
        ("面积10m² 很大", "面积十平方米很大"),
        # blanks next to CJK go first, so only an ASCII " - " becomes a comma
        ("我用 A - B 方案", "我用A，B方案"),
        ("Version 3.5 版本——很好`代码`", "Version三点五版本 很好代码"),
    ],
)
def test_normalize_chinese(text, expected):
    assert normalize(text, "v2") == expected


@pytest.mark.parametrize(
    "text, expected",
    [
        ("  I have 23 apples.  ", "I have twenty three apples."),
        ("in 1999", "in nineteen ninety nine"),
        # All digits: the official auto-detection would read this in Chinese; we keep English.
        ("123", "one hundred and twenty three"),
        ("Hello world", "Hello world"),
    ],
)
def test_normalize_english(text, expected):
    assert normalize(text, "v1") == expected


def test_markup_and_empty_text_are_left_alone():
    marked = "You are a helpful assistant.<|endofprompt|> 我有3个苹果"
    assert normalize(marked, "v3") == marked
    assert normalize("", "v3") == ""


def test_unknown_version_is_rejected():
    with pytest.raises(ValueError, match="v9"):
        normalize("hi", "v9")


def test_detect_lang():
    assert detect_lang("hello 世界") == "zh"
    assert detect_lang("hello world 123") == "en"
    assert detect_lang("こんにちは") == "en"  # kana are not CJK ideographs (official rule)


@pytest.mark.parametrize("text", ["", "。", "...", "!?", "，。！", "……", "+=$"])
def test_only_punctuation(text):
    assert is_only_punctuation(text)


@pytest.mark.parametrize("text", [" ", "a.", "。好", "1!"])
def test_not_only_punctuation(text):
    assert not is_only_punctuation(text)


@pytest.mark.parametrize("text", ["", " ", "。 。", "... \n!?", "\u3000，。！\t", "+=$", "a.", " 。好", "1 !", "é", "\u200b"])
def test_says_nothing_is_only_punctuation_once_blanks_are_gone(text):
    import re

    assert says_nothing(text) == is_only_punctuation(re.sub(r"\s+", "", text))


def _word_encode(text: str) -> list[int]:
    return [0] * len(text.split())


def test_split_english_packs_sentences_between_min_and_max():
    sentence = "This is a sentence with exactly ten words in it."
    paragraph = " ".join([sentence] * 20)
    parts = split_sentences(paragraph, _word_encode, "en", token_max_n=80, token_min_n=60, merge_len=20)
    # 20 sentences of 10 words: a segment closes only when the next sentence would pass 80.
    assert [len(p.split()) for p in parts] == [80, 80, 40]
    assert "".join(parts).replace(" ", "") == paragraph.replace(" ", "")


def test_split_chinese_counts_characters_and_merges_short_tail():
    sentence = "这是一个测试句子，长度刚好为十五个字。"  # 19 characters
    paragraph = sentence * 6 + "好的。"
    parts = split_sentences(paragraph, _word_encode, "zh", token_max_n=80, token_min_n=60, merge_len=20)
    assert "".join(parts) == paragraph
    # 4 sentences (76 chars) pass the minimum; the rest (2x19 + 3 = 41) is long enough to stand alone.
    assert [len(p) for p in parts] == [76, 41]
    short_tail = split_sentences(sentence * 4 + "好的。", _word_encode, "zh")
    assert [len(p) for p in short_tail] == [79]


def test_split_mixed_paragraph_punctuation_quotes_and_final_mark():
    text = "第一句。第二句！“第三句？”第四句…… 。。最后一句没有句号"
    parts = split_sentences(text, _word_encode, "zh", token_max_n=8, token_min_n=4, merge_len=2)
    # The quote stays with its sentence, "……" is no sentence mark, the repeated "。" vanishes
    # and the missing final mark is added.
    assert parts == ["第一句。第二句！", "“第三句？”", "第四句…… 。", "最后一句没有句号。"]
    assert split_sentences("Hello there", _word_encode, "en") == ["Hello there."]


def test_split_drops_punctuation_only_segments_and_empty_input():
    assert split_sentences("", _word_encode, "en") == []
    assert split_sentences("!!!", _word_encode, "en") == []


def test_comma_split():
    parts = split_sentences("一二三四五，六七八九十，甲乙丙丁戊。", _word_encode, "zh", 6, 4, 1, comma_split=True)
    assert parts == ["一二三四五，", "六七八九十，", "甲乙丙丁戊。"]
