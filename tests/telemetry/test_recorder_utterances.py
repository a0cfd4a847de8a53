"""Chunks grouped per utterance (the dock's chunk-RTF lines) and underruns attributed per utterance."""

from __future__ import annotations

from cosydesk.telemetry.recorder import LatencyRecorder
from cosydesk.telemetry.underruns import UnderrunsPerUtterance


def test_chunks_belong_to_the_utterance_they_were_recorded_in():
    recorder = LatencyRecorder()
    recorder.record_chunk(0.5, 0.1)
    recorder.record_chunk(0.5, 0.2)
    first = recorder.record_utterance(100.0, 0.3, 1.0, 2)
    recorder.record_chunk(0.5, 0.4)  # the second utterance, still in progress
    assert first.number == 1 and recorder.utterance_count == 1
    groups = recorder.chunks_by_utterance(5)
    assert [(n, [round(c.rtf, 2) for c in chunks]) for n, chunks in groups] == [(1, [0.2, 0.4]), (2, [0.8])]
    assert recorder.chunks_by_utterance(1)[0][0] == 2


def test_underruns_are_counted_for_the_utterance_playing_when_they_happen():
    tracker = UnderrunsPerUtterance()
    assert not tracker.observe(0, 7)  # the player's total before anything was watched is nobody's
    assert tracker.observe(1, 7)  # utterance 1 starts: known, with 0
    tracker.observe(1, 9)
    tracker.observe(2, 9)
    tracker.observe(2, 12)
    assert tracker.counts([1, 2, 3]) == [2, 3, 0]
    assert not tracker.observe(2, 0)  # a new player starts counting from 0: nothing is lost or negative
    assert tracker.count(2) == 3
