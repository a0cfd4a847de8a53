"""The real PortAudio path: samples reach the (ALSA file-capture) device bit-exactly."""

from __future__ import annotations

import numpy as np
import pytest

from tests.support.alsa_capture import capture_path, read_capture
from cosydesk.audio.player import AudioDeviceError, Player, list_output_devices, play_stream


def _sounddevice_or_skip():
    if capture_path() is None:
        pytest.skip("sounddevice was imported before the ALSA capture config could be installed")
    try:
        import sounddevice  # noqa: F401
    except OSError:
        pytest.skip("libportaudio2 is not installed")


def test_played_samples_reach_the_device_exactly():
    _sounddevice_or_skip()
    assert list_output_devices(), "ALSA capture device not listed"
    rate = 24000
    rng = np.random.default_rng(0)
    chunks = [(0.3 * rng.standard_normal(n)).astype(np.float32) for n in (4000, 123, 9000)]
    player = Player()
    stats = play_stream(iter(chunks), rate, player=player)
    player.close()
    expected = np.concatenate(chunks)
    captured = read_capture()
    assert stats.frames_played == len(expected)
    # The ALSA null device is not paced: while the producer is between chunks the stream plays silence
    # (counted as underruns). Every sample must still arrive once, in order and bit-exact.
    np.testing.assert_array_equal(captured[captured != 0], expected[expected != 0])


def test_unknown_device_gives_clear_error():
    _sounddevice_or_skip()
    with pytest.raises(AudioDeviceError, match="no-such-device"):
        play_stream([np.zeros(100, np.float32)], 24000, device="no-such-device")
