"""Reading sentences (cosydesk/frontend/sentences.py): the text cut where a reader sees sentences end, in Chinese
and English, single words merged, and synthesis segments made one sentence at a time with the sentence's span."""

from __future__ import annotations

from cosydesk.frontend.segments import iter_segments
from cosydesk.frontend.sentences import iter_sentence_segments, reading_sentences


def cut(text: str) -> list[tuple[str, int]]:
    return [(text[unit.start:unit.end], unit.count) for unit in reading_sentences(text)]


def test_chinese_and_english_sentences_as_a_reader_sees_them():
    text = ("你好，世界。今天天气很好！我们去公园散步吧？好的。"
            "Hello there. How are you today? It is 3.14 and 12:30 now; see you at 5 p.m. tomorrow, e.g. at noon.")
    assert cut(text) == [("你好，世界。", 1), ("今天天气很好！", 1), ("我们去公园散步吧？", 1), ("好的。", 1),
                         ("Hello there.", 1), ("How are you today?", 1),
                         ("It is 3.14 and 12:30 now; see you at 5 p.m. tomorrow, e.g. at noon.", 1)]
    # quotes stay with their sentence; a sentence with only punctuation or emoji joins the one before it
    assert cut("他说：“你好。”然后走了。🙂🙂\nDone now here.") == [("他说：“你好。”", 1), ("然后走了。🙂🙂", 1),
                                                             ("Done now here.", 1)]
    assert cut("。。。 ！！") == [] and cut("") == []


def test_single_words_are_merged_and_say_how_many_sentences_they_hold():
    assert cut("Yes. I will come tomorrow. Dr. Smith said so. 好。我知道了。") == [
        ("Yes. I will come tomorrow.", 2), ("Dr. Smith said so.", 1), ("好。我知道了。", 2)]
    assert cut("I am here. No.") == [("I am here. No.", 2)]  # the last one joins the one before
    assert cut("Fine.") == [("Fine.", 1)]


def test_titles_and_initials_do_not_end_a_sentence():
    """Met reading a mixed text: "好。 Mr." was spoken as one unit and "Smith read…" as the next."""
    assert cut("好。 Mr. Smith read it at 9 a.m. on Monday. J. K. Rowling wrote it, see Fig. 3. No. I do not.") == [
        ("好。 Mr. Smith read it at 9 a.m. on Monday.", 2), ("J. K. Rowling wrote it, see Fig. 3.", 1),
        ("No. I do not.", 2)]


def test_line_breaks_end_headings_and_paragraphs_but_not_wrapped_lines():
    text = "Chapter 1\n\nThis line is wrapped here and\ngoes on. 第二段\n第三段开始了，\n还没有完。"
    assert cut(text) == [("Chapter 1", 1), ("This line is wrapped here and\ngoes on.", 1), ("第二段", 1),
                         ("第三段开始了，\n还没有完。", 1)]


def test_segments_follow_the_reading_sentences_with_their_spans():
    text = "第一段文字，包含数字123。\n第二段：2024年5月1日！Hello. The end is near, 3.5 miles away.\n没有句号"
    units = reading_sentences(text)
    segments = list(iter_sentence_segments(text, "v2", str.split))
    assert [(s.start, s.end) for s in segments] == [(u.start, u.end) for u in units]
    assert [s.sentence for s in segments] == list(range(len(units)))
    assert segments[0].text == "第一段文字，包含数字一百二十三。"
    assert segments[-1].text == "没有句号。"  # a missing final mark is added, as the official frontend does
    assert "三点五" in segments[-2].text  # the whole text is Chinese by the official rule: zh normalisation


def test_a_long_sentence_is_spoken_in_parts_that_share_its_span():
    sentence = "这是一个很长的句子、" * 20 + "终于结束了。"
    text = "开始了。" + sentence + "Done, finally here."
    segments = list(iter_sentence_segments(text, "v2", list))
    long_parts = [s for s in segments if s.sentence == 1]
    assert len(long_parts) > 1 and all(len(s.text) <= 80 for s in long_parts)
    assert {(s.start, s.end) for s in long_parts} == {(4, 4 + len(sentence))}
    assert "".join(s.text for s in long_parts) == sentence


def test_one_sentence_is_the_same_segment_as_the_official_packing():
    """Short texts: the app's reading path sends the model exactly what the CLI and API send."""
    for text in ["Hello world.", "你好，世界。", "It costs 3.5 dollars, and that is fine", "今天是2024年5月1日"]:
        assert [s.text for s in iter_sentence_segments(text, "v2", str.split)] == \
            [s.text for s in iter_segments(text, "v2", str.split)]


def test_a_long_text_is_counted_without_normalising_it():
    text = "The first sentence is here. Mr. Smith said hi.\n" * 3000  # 141,000 characters
    units = reading_sentences(text)
    assert len(units) == 6000 and units[1].count == 1 and text[units[-1].start:units[-1].end] == "Mr. Smith said hi."
