"""Sentence ranges, subtitle text and file names for exports (no Qt, no model)."""

from __future__ import annotations

import pytest

from cosydesk.audio.subtitles import (SentenceRange, SentenceTimeline, SubtitleError, ranges_from_json, to_srt,
                                      to_vtt, write_subtitles)
from cosydesk.audio.utterance_export import export_file_stem, sentence_file_paths
from cosydesk.ui.export_actions import with_filter_suffix

TEXT = "First one.\nSecond <b>&</b> two."


def test_timeline_joins_a_sentences_chunks_and_cues_are_contiguous():
    timeline = SentenceTimeline()
    for sentence, span, samples in ((0, (0, 10), 1000), (0, (0, 10), 1400), (1, (11, 32), 2000)):
        timeline.add(sentence, span, samples, len(TEXT))
    assert timeline.ranges == [SentenceRange(0, 2400, 0, 10), SentenceRange(2400, 4400, 11, 32)]
    srt = to_srt(TEXT, timeline.ranges, 24000)
    assert srt == ("1\n00:00:00,000 --> 00:00:00,100\nFirst one.\n\n"
                   "2\n00:00:00,100 --> 00:00:00,183\nSecond <b>&</b> two.\n")
    vtt = to_vtt(TEXT, timeline.ranges, 24000)
    assert vtt.startswith("WEBVTT\n\n1\n00:00:00.000 --> 00:00:00.100\n")
    assert "Second &lt;b&gt;&amp;&lt;/b&gt; two." in vtt  # cue text is markup in WebVTT: escaped


def test_stored_ranges_are_checked():
    good = [[0, 10, 0, 5], [10, 30, 5, 9]]
    assert ranges_from_json(good, 30, 9) == [SentenceRange(0, 10, 0, 5), SentenceRange(10, 30, 5, 9)]
    for bad in ([[0, 10, 0, 5], [11, 30, 5, 9]], [[0, 10, 0, 50]], [[0, 10, 0, True]], "x", [], [[0, 29, 0, 1]]):
        assert ranges_from_json(bad, 30, 9) is None, bad


def test_write_subtitles_refuses_other_endings_and_missing_folders(tmp_path):
    ranges = [SentenceRange(0, 24000, 0, 10)]
    with pytest.raises(SubtitleError, match=r"x\.txt: use a name ending in \.srt or \.vtt"):
        write_subtitles(tmp_path / "x.txt", TEXT, ranges, 24000)
    with pytest.raises(SubtitleError, match="does not exist"):
        write_subtitles(tmp_path / "no" / "x.srt", TEXT, ranges, 24000)
    assert write_subtitles(tmp_path / "x.SRT", TEXT, ranges, 24000).read_text().endswith("First one.\n")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["x.SRT"]


def test_file_names_from_text():
    assert export_file_stem("  Hello,   world: a/b?  ") == "Hello, world a b"
    assert export_file_stem("今天天气很好。" * 10) == ("今天天气很好。" * 10)[:40]
    assert export_file_stem("one two three four five six seven eight nine ten") == "one two three four five six seven eight"
    assert export_file_stem("...") == export_file_stem("") == "speech"
    assert [p.name for p in sentence_file_paths("/x/talk.mp3", 3)] == ["talk-01.mp3", "talk-02.mp3", "talk-03.mp3"]
    assert sentence_file_paths("/x/t.wav", 120)[0].name == "t-001.wav"


def test_the_chosen_filter_adds_its_ending():
    allowed = (".wav", ".flac", ".mp3")
    assert with_filter_suffix("/x/talk", "FLAC audio (*.flac)", allowed) == "/x/talk.flac"
    assert with_filter_suffix("/x/talk.v2", "FLAC audio (*.flac)", allowed) == "/x/talk.v2.flac"
    assert with_filter_suffix("/x/talk.WAV", "FLAC audio (*.flac)", allowed) == "/x/talk.WAV"  # typed: kept
