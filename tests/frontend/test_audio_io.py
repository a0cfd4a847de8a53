"""Prompt audio loading: validation errors, mixing, resampling."""

from __future__ import annotations

import math
from pathlib import Path
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


# ------------------------------------------------------------------ any rate 8-384 kHz, bounded memory (issue 31)
@pytest.mark.parametrize("rate", [1, 7, 7999])
def test_rates_below_8_khz_are_refused_in_one_line(rate, tmp_path):
    path = _write(tmp_path / f"r{rate}.wav", _sine(max(rate, 1), 3.0, hz=0.2), rate)
    with pytest.raises(AudioInputError, match=f"sampled at {rate} Hz, too low") as caught:
        load_audio(path, 16000)
    assert "\n" not in str(caught.value)


@pytest.mark.parametrize("rate", [44101, 48001, 8001, 383999, 384000])
@pytest.mark.parametrize("target", [16000, 24000])
def test_odd_rates_resample_to_the_right_length_and_pitch(rate, target, tmp_path):
    path = _write(tmp_path / "odd.wav", _sine(rate, 1.0, hz=440.0), rate, "FLOAT")
    wav = load_audio(path, target)
    assert abs(wav.shape[1] - target) <= 1 + 5e-4 * target  # the ratio may be approximated by < 0.05 %
    spectrum = np.abs(np.fft.rfft(wav[0].numpy() * np.hanning(wav.shape[1])))
    assert abs(np.argmax(spectrum) * target / wav.shape[1] - 440.0) < 1.5


def test_the_filter_bank_stays_small_and_the_rate_error_inaudible():
    from cosydesk.frontend.audio_io import MAX_FILTER_BANK, _bank_size, resampling_ratio

    rng = np.random.default_rng(0)
    rates = [8000, 8001, 11025, 22050, 44100, 44101, 47983, 48000, 48001, 96000, 192000, 383999, 384000]
    rates += [int(r) for r in rng.integers(8000, 384001, 400)]
    for target in (16000, 22050, 24000):
        for rate in rates:
            orig, new = resampling_ratio(rate, target)
            assert _bank_size(orig, new) <= MAX_FILTER_BANK, (rate, target)
            assert abs(new / orig / (target / rate) - 1) < 5e-4, (rate, target, orig, new)  # < 0.05 %: 0.9 cent
    assert resampling_ratio(44100, 16000) == (441, 160)  # usual rates stay exact (official-close features)
    assert resampling_ratio(22050, 24000) == (147, 160)


def test_a_two_hour_8_channel_192_khz_file_is_refused_from_its_header(tmp_path, monkeypatch):
    from tests.support.sparse_audio import write_sparse_rf64

    path = write_sparse_rf64(tmp_path / "concert.wav", 7200, 192000, 8)
    monkeypatch.setattr(soundfile.SoundFile, "blocks", lambda *a, **k: pytest.fail("decoded before refusing"))
    with pytest.raises(AudioInputError, match=r"7200\.0 s long, too long: at most 30 s") as caught:
        load_audio(path, 16000)
    assert "\n" not in str(caught.value)


def test_a_header_that_under_reports_its_length_is_caught_while_decoding(tmp_path, monkeypatch):
    from cosydesk.frontend import audio_io

    path = _write(tmp_path / "long.wav", _sine(16000, 40.0), 16000)
    real_info = soundfile.info

    def lying_info(file):
        info = real_info(file)
        info.frames = 16000
        return info

    monkeypatch.setattr(audio_io.soundfile, "info", lying_info)
    with pytest.raises(AudioInputError, match="too long"):
        load_audio(path, 16000)


PEAK_PROBE = """
import sys, numpy as np, torch
from cosydesk.frontend.audio_io import resample
torch.set_num_threads(1)
def hwm_mb():
    return next(int(l.split()[1]) for l in open('/proc/self/status') if l.startswith('VmHWM')) / 1024
x = torch.from_numpy(np.random.default_rng(0).standard_normal((1, 30 * 44101)).astype(np.float32))
resample(torch.zeros(1, 100), 8000, 16000)  # torch's conv path warmed up
open('/proc/self/clear_refs', 'w').write('5')  # resets the RSS high-water mark
base = hwm_mb()
for target in (16000, 24000):
    resample(x, 44101, target)
print(round(hwm_mb() - base, 1))
"""


@pytest.mark.skipif(not Path("/proc/self/clear_refs").exists(), reason="needs Linux /proc (RSS high-water mark)")
def test_resampling_30_s_at_44101_hz_peaks_below_200_mb():
    """At main this asked for 5.6 GB (a 16000 x 44125 filter bank) and the process died."""
    import os
    import subprocess
    import sys

    from tests.support.paths import REPO_ROOT

    env = {**os.environ, "PYTHONPATH": str(REPO_ROOT), "OMP_NUM_THREADS": "1"}
    result = subprocess.run([sys.executable, "-c", PEAK_PROBE], capture_output=True, text=True, env=env,
                            timeout=120, cwd=REPO_ROOT)
    assert result.returncode == 0, result.stderr[-2000:]
    peak_mb = float(result.stdout.split()[-1])
    assert peak_mb < 200, f"resampling 44,101 Hz peaked {peak_mb} MB above the baseline"
