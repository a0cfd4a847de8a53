"""Ring buffer wrap-around and discard; atomic audio export."""

from __future__ import annotations

import errno
import os

import numpy as np
import pytest
import soundfile as sf

from cosydesk.audio import export
from cosydesk.audio.ringbuffer import RingBuffer


def test_capacity_is_power_of_two_and_wraps():
    ring = RingBuffer(1000)
    assert ring.capacity == 1024
    data = np.arange(3000, dtype=np.float32)
    out = np.zeros(3000, np.float32)
    written = read = 0
    while read < 3000:  # interleave writes and reads of odd sizes so indices wrap many times
        written += ring.write(data[written:written + 700])
        read += ring.read_into(out[read:read + 333])
    np.testing.assert_array_equal(out, data)
    assert ring.readable() == 0 and ring.writable() == 1024


def test_write_stops_when_full_and_discard_drops_everything():
    ring = RingBuffer(16)
    assert ring.write(np.ones(40, np.float32)) == 16
    assert ring.write(np.ones(1, np.float32)) == 0
    ring.discard_all()
    assert ring.readable() == 0
    out = np.full(8, 7.0, np.float32)
    assert ring.read_into(out) == 0 and (out == 7.0).all()
    assert ring.write(np.arange(4, dtype=np.float32)) == 4
    assert ring.read_into(out) == 4 and list(out[:4]) == [0, 1, 2, 3]


def test_wav_and_flac_round_trip(tmp_path):
    rate = 24000
    pcm = (0.5 * np.sin(np.arange(rate) * 2 * np.pi * 440 / rate)).astype(np.float32)
    for suffix in (".wav", ".flac"):
        path = export.write_audio(tmp_path / f"a{suffix}", pcm, rate)
        back, back_rate = export.read_audio(path)
        assert back_rate == rate and back.shape == pcm.shape
        assert np.abs(back - pcm).max() <= 1 / 32767
    exact = export.write_audio(tmp_path / "exact.wav", pcm, rate, subtype="FLOAT")
    np.testing.assert_array_equal(sf.read(exact, dtype="float32")[0], pcm)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["a.flac", "a.wav", "exact.wav"]


def test_disk_full_leaves_no_partial_file(tmp_path, monkeypatch):
    (tmp_path / "keep.wav").write_bytes(b"old")

    def full_disk(handle, *args, **kwargs):
        handle.write(b"RIFF....partial")
        raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr(export.sf, "write", full_disk)
    with pytest.raises(export.ExportError, match="not enough disk space"):
        export.write_audio(tmp_path / "keep.wav", np.zeros(10, np.float32), 24000)
    assert os.listdir(tmp_path) == ["keep.wav"]
    assert (tmp_path / "keep.wav").read_bytes() == b"old"


def test_bad_suffix_and_missing_folder(tmp_path):
    with pytest.raises(export.ExportError, match=r"a\.aiff: use one of \.wav, \.flac"):
        export.write_audio(tmp_path / "a.aiff", np.zeros(4), 24000)
    with pytest.raises(export.ExportError, match="does not exist"):
        export.write_audio(tmp_path / "no" / "a.wav", np.zeros(4), 24000)
