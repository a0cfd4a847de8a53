"""Prompt audio loading: validation errors, mixing, resampling."""

from __future__ import annotations

import math
import warnings

import numpy as np
import pytest
import soundfile
import torch

from cosydesk.frontend.audio_io import AudioInputError, LowSampleRateWarning, load_audio, resample


def _write(path, samples: np.ndarray, rate: int, subtype: str = "PCM_16"):
    soundfile.write(str(path), samples, rate, subtype=subtype)
    return path


def _sine(rate: int, seconds: float, hz: float = 440.0, amplitude: float = 0.5) -> np.ndarray:
    t = np.arange(int(rate * seconds)) / rate
    return (amplitude * np.sin(2 * np.pi * hz * t)).astype(np.float32)


def test_missing_file(tmp_path):
    with pytest.raises(AudioInputError, match="not found"):
        load_audio(tmp_path / "nope.wav", 16000)


def test_directory_is_not_a_file(tmp_path):
    with pytest.raises(AudioInputError, match="not a file"):
        load_audio(tmp_path, 16000)


def test_not_audio(tmp_path):
    bogus = tmp_path / "notes.wav"
    bogus.write_text("this is not a RIFF file\n" * 20)
    with pytest.raises(AudioInputError, match="not a readable audio file"):
        load_audio(bogus, 16000)


def test_empty_and_too_short(tmp_path):
    with pytest.raises(AudioInputError, match="no audio"):
        load_audio(_write(tmp_path / "empty.wav", np.zeros(0, np.float32), 16000), 16000)
    with pytest.raises(AudioInputError, match="too short"):
        load_audio(_write(tmp_path / "blip.wav", _sine(16000, 0.05), 16000), 16000)


def test_silent(tmp_path):
    with pytest.raises(AudioInputError, match="silent"):
        load_audio(_write(tmp_path / "silence.wav", np.zeros(16000, np.float32), 16000), 16000)
    with pytest.raises(AudioInputError, match="silent"):
        load_audio(_write(tmp_path / "hiss.wav", _sine(16000, 1.0, amplitude=5e-5), 16000, "FLOAT"), 16000)


def test_too_long(tmp_path):
    long_file = _write(tmp_path / "long.wav", _sine(8000, 30.5), 8000)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", LowSampleRateWarning)
        with pytest.raises(AudioInputError, match="30.5 s long"):
            load_audio(long_file, 16000)
        assert load_audio(long_file, 16000, max_seconds=None).shape == (1, 16000 * 30 + 8000)


def test_stereo_is_mixed_down_and_resampled(tmp_path):
    left = _sine(44100, 1.0, 440.0, 0.6)
    right = -0.5 * left  # mean = 0.25 * left
    path = _write(tmp_path / "stereo.flac", np.stack([left, right], axis=1), 44100)
    wav = load_audio(path, 16000)
    assert wav.shape == (1, 16000) and wav.dtype == torch.float32
    rms = float(wav[:, 1000:-1000].pow(2).mean().sqrt())
    assert rms == pytest.approx(0.15 / math.sqrt(2), rel=2e-3)


def test_native_rate_is_passed_through(tmp_path):
    samples = _sine(24000, 0.5)
    path = _write(tmp_path / "native.wav", samples, 24000, "FLOAT")
    assert torch.equal(load_audio(path, 24000), torch.from_numpy(samples).unsqueeze(0))


def test_low_rate_warns_but_loads(tmp_path):
    path = _write(tmp_path / "phone.wav", _sine(8000, 1.0), 8000)
    with pytest.warns(LowSampleRateWarning):
        wav = load_audio(path, 24000)
    assert wav.shape == (1, 24000)


def test_resampler_keeps_a_tone_and_removes_aliases():
    rate_in, rate_out = 48000, 16000
    t = torch.arange(rate_in) / rate_in
    tone = torch.sin(2 * math.pi * 1000 * t).unsqueeze(0)
    out = resample(tone, rate_in, rate_out)
    assert out.shape == (1, 16000)
    expected = torch.sin(2 * math.pi * 1000 * torch.arange(rate_out) / rate_out)
    assert float((out[0, 200:-200] - expected[200:-200]).abs().max()) < 2e-3
    # 12 kHz is above the new Nyquist (8 kHz): it must be filtered, not folded to 4 kHz.
    alias = resample(torch.sin(2 * math.pi * 12000 * t).unsqueeze(0), rate_in, rate_out)
    assert float(alias[0, 200:-200].abs().max()) < 1e-2


def test_resampler_lengths():
    x = torch.randn(2, 22050 + 13)
    assert resample(x, 22050, 16000).shape == (2, math.ceil((22050 + 13) * 16000 / 22050))
    assert resample(x, 22050, 22050) is x
