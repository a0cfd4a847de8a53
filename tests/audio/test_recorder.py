"""MicRecorder: its buffer is sized from the rate and the length limit, so both are refused up front when
outside what a voice prompt may be (issue 31)."""

from __future__ import annotations

import numpy as np
import pytest

from cosydesk.audio.recorder import MicRecorder


@pytest.mark.parametrize("rate", [0, 7, 7999, 384001, 10**9])
def test_impossible_rates_are_one_line(rate):
    with pytest.raises(ValueError, match=f"cannot record at {rate} Hz") as caught:
        MicRecorder(sample_rate=rate)
    assert "\n" not in str(caught.value)


@pytest.mark.parametrize("seconds", [0, -1, 31, 7200])
def test_lengths_beyond_the_prompt_limit_are_refused(seconds):
    with pytest.raises(ValueError, match="at most 30 s"):
        MicRecorder(sample_rate=192000, max_seconds=seconds)


def test_a_high_rate_recording_fills_a_bounded_buffer_and_stops_there():
    recorder = MicRecorder(sample_rate=384000, max_seconds=1.0)
    block = np.ones((1000, 1), np.float32)
    for _ in range(500):  # 500,000 frames offered, 384,000 kept
        recorder._callback(block, 1000, None, None)
    assert recorder.seconds == pytest.approx(1.0)
    assert recorder.stop().shape == (384000,)
