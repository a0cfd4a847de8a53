"""Player against a paced fake PortAudio: order of samples, stop, underruns, device loss and recovery."""

from __future__ import annotations

import threading
import time

import numpy as np
import pytest

from cosydesk.audio.player import AudioDeviceError, Player, list_output_devices, play_stream
from tests.audio.fake_sd import FakeSoundDevice

RATE = 8000


def _chunks(count=5, size=800, gap_s=0.0):
    for i in range(count):
        if gap_s:
            time.sleep(gap_s)
        yield (np.arange(size, dtype=np.float32) + i * size) / 10000.0


def test_play_stream_plays_every_sample_in_order():
    fake = FakeSoundDevice(speed=8.0)
    player = Player(sd_module=fake)
    stats = play_stream(_chunks(), RATE, player=player)
    expected = np.concatenate(list(_chunks()))
    played = fake.all_played()
    assert played[:4000].tolist() == expected.tolist()  # the fake primes no zeros: exact from sample 0
    assert not played[4000:].any()
    assert stats.frames_written == 4000 and stats.frames_played == 4000
    assert stats.underruns == 0 and not stats.cancelled
    assert not fake.streams[0].active  # the stream ends itself once drained
    player.close()
    assert fake.streams[0].closed and player.open_streams == 0


def test_slow_producer_counts_underruns():
    fake = FakeSoundDevice(speed=1.0)
    player = Player(sd_module=fake)
    stats = play_stream(_chunks(count=3, size=400, gap_s=0.12), RATE, player=player)
    assert stats.underruns > 0
    assert stats.frames_played == 1200
    player.close()


def test_the_wait_for_a_new_utterances_first_chunk_is_not_an_underrun():
    """A new utterance cutting off one still playing keeps the stream running; until its first chunk arrives
    the device plays silence, which is waiting, not running dry (it counted ~12 underruns per switch in the app)."""
    fake = FakeSoundDevice(speed=1.0)
    player = Player(sd_module=fake)
    token = player.begin(RATE)
    assert player.write(np.full(RATE, 0.25, np.float32), token)
    time.sleep(0.1)
    token = player.begin(RATE)  # the next line, while the first still plays
    time.sleep(0.2)  # its "synthesis": ~6 callbacks of silence
    assert player.is_playing and player.underruns == 0
    assert player.write(np.full(800, 0.5, np.float32), token)
    player.end(token)
    assert player.wait_done(timeout_s=2.0)
    sound = fake.all_played()[fake.all_played() != 0]  # the first line's start, then all of the second
    assert player.underruns == 0 and sound[-800:].tolist() == [0.5] * 800 and (sound[:-800] == 0.25).all()
    player.close()


def test_stop_silences_within_a_callback_and_player_is_reusable():
    fake = FakeSoundDevice(speed=1.0)
    player = Player(sd_module=fake)
    token = player.begin(RATE)
    assert player.write(np.full(RATE * 5, 0.25, np.float32), token)
    time.sleep(0.1)
    player.stop()
    assert not player.write(np.ones(10, np.float32), token)  # stale token is ignored
    assert player.wait_done(timeout_s=1.0)
    assert player.frames_played < RATE  # far less than the 5 s queued
    stats = play_stream([np.full(800, 0.5, np.float32)], RATE, player=player)
    assert stats.frames_played == 800
    player.close()
    assert player.open_streams == 0


def test_device_vanishes_mid_playback_then_recovers():
    fake = FakeSoundDevice(speed=1.0)
    player = Player(sd_module=fake)
    token = player.begin(RATE)
    player.write(np.full(RATE * 2, 0.1, np.float32), token)
    time.sleep(0.05)
    fake.unplugged = True
    with pytest.raises(AudioDeviceError, match="stopped"):
        player.end(token)
        player.wait_done(timeout_s=2.0)
    with pytest.raises(AudioDeviceError, match="cannot open audio output"):
        play_stream([np.ones(100, np.float32)], RATE, player=player)
    fake.unplugged = False  # plugged back in
    stats = play_stream([np.full(400, 0.3, np.float32)], RATE, player=player)
    assert stats.frames_played == 400
    player.close()
    assert player.open_streams == 0


def test_cancel_during_play_stream():
    fake = FakeSoundDevice(speed=1.0)
    cancel = threading.Event()
    threading.Timer(0.1, cancel.set).start()
    start = time.monotonic()
    stats = play_stream([np.zeros(RATE * 10, np.float32) + 0.1], RATE, player=Player(sd_module=fake), cancel=cancel)
    assert stats.cancelled and time.monotonic() - start < 2.0


def test_device_list_from_fake_and_without_portaudio():
    assert list_output_devices(FakeSoundDevice()) == [(0, "Fake Speakers")]

    class Broken:
        def query_devices(self):
            raise OSError("no PortAudio")

    assert list_output_devices(Broken()) == []


def test_no_output_device_at_all_says_so():
    fake = FakeSoundDevice()
    fake.query_devices = lambda: []
    fake.unplugged = True
    with pytest.raises(AudioDeviceError, match="no audio output device found"):
        play_stream([np.ones(10, np.float32)], RATE, player=Player(sd_module=fake))


def test_pause_holds_the_queue_plays_silence_and_resume_goes_on():
    """Paused: the device gets silence, nothing queued is consumed or lost, no underrun is counted, and a writer
    facing a full queue waits past its stall timeout; resumed: every sample plays, in order."""
    fake = FakeSoundDevice(speed=4.0)
    player = Player(sd_module=fake, buffer_seconds=0.5)
    assert not player.pause()  # nothing playing yet
    token = player.begin(RATE)
    samples = np.arange(1, RATE + 1, dtype=np.float32) / RATE  # 1 s, never zero: silence is told apart
    assert player.write(samples[:RATE // 4], token)
    time.sleep(0.02)
    assert player.pause() and player.paused and player.is_playing
    played, underruns = player.frames_played, player.underruns
    done = threading.Event()
    # 0.75 s more than the 0.5 s queue holds: it waits for the listener, paused 3x longer than its stall timeout
    # (which still has to cover the drain after resume on a loaded CI machine: 0.1 s did not)
    writer = threading.Thread(target=lambda: done.set() if player.write(samples[RATE // 4:], token, timeout_s=0.5)
                              else None)
    writer.start()
    time.sleep(1.5)
    assert player.frames_played == played and player.underruns == underruns and not done.is_set()
    player.resume()
    writer.join(timeout=5)
    assert done.is_set() and not player.paused
    player.end(token)
    assert player.wait_done(timeout_s=5)
    audible = fake.all_played()[np.flatnonzero(fake.all_played())]
    assert np.array_equal(audible, samples) and player.underruns == underruns
    token = player.begin(RATE)  # a new utterance (or stop) is never born paused
    assert not player.paused
    player.close()
