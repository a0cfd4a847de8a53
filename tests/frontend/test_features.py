"""Spectral features: Slaney mel basis, Kaldi fbank, whisper log-mel, flow prompt mel.

Reference numbers were computed once with torchaudio.compliance.kaldi.fbank,
librosa.filters.mel and whisper's shipped mel filters (one-off, outside the project);
our implementations matched them bit-exactly at the time.
"""

from __future__ import annotations

import math

import pytest
import torch

from cosydesk.frontend.features import (
    FLOW_MEL_SETTINGS,
    hz_to_slaney_mel,
    kaldi_fbank,
    mel_settings_from_config,
    prompt_mel,
    slaney_mel_basis,
    slaney_mel_to_hz,
    whisper_log_mel,
)
from cosydesk.model.config import read_yaml
from tests.support.paths import fixture_dir


def _tone(sample_rate: int, seconds: float) -> torch.Tensor:
    t = torch.arange(int(sample_rate * seconds), dtype=torch.float64) / sample_rate
    x = 0.5 * torch.sin(2 * math.pi * 440 * t) + 0.1 * torch.sin(2 * math.pi * 3000 * t)
    x = x + 0.05 * torch.sin(2 * math.pi * 97 * t * t)
    return x.to(torch.float32).unsqueeze(0)


# The torchaudio / Matcha reference values below are float32 results of those libraries on the CPU they were
# recorded on; their last digits follow that CPU's FFT and GEMM kernels (MKL's SSE path reproduces them
# exactly, its AVX-512 path differs by up to 3.3e-5 at a low-energy log entry and 1.1e-5 on a mean). Our
# features are computed in float64 (CPU-independent), so the comparison allows the reference's own rounding.
REFERENCE_ATOL = 5e-5


def _summary(m: torch.Tensor) -> tuple[float, float, float]:
    m = m.double()
    return float(m.mean()), float(m.max()), float(m.min())


# ------------------------------------------------------------------ Slaney mels


def test_slaney_scale_fixed_points():
    assert hz_to_slaney_mel(0.0) == 0.0
    assert hz_to_slaney_mel(1000.0) == pytest.approx(15.0)
    assert hz_to_slaney_mel(500.0) == pytest.approx(7.5)
    # Above 1 kHz the scale is logarithmic: 27 mel per factor 6.4.
    assert hz_to_slaney_mel(6400.0) == pytest.approx(15.0 + 27.0)
    for hz in (0.0, 123.0, 999.0, 1000.0, 4321.0, 12000.0):
        assert slaney_mel_to_hz(hz_to_slaney_mel(hz)) == pytest.approx(hz)


def _reference_filter_entry(sr: int, n_fft: int, n_mels: int, fmax: float, band: int, fft_bin: int) -> float:
    """One basis entry written out from the definition, scalar by scalar."""

    def to_mel(hz):
        return hz * 3 / 200 if hz < 1000 else 15 + 27 * math.log(hz / 1000) / math.log(6.4)

    def to_hz(mel):
        return mel * 200 / 3 if mel < 15 else 1000 * 6.4 ** ((mel - 15) / 27)

    top = to_mel(fmax)
    left, centre, right = (to_hz(top * (band + k) / (n_mels + 1)) for k in range(3))
    hz = fft_bin * sr / n_fft
    height = max(0.0, min((hz - left) / (centre - left), (right - hz) / (right - centre)))
    return height * 2 / (right - left)


@pytest.mark.parametrize(
    "sr, n_fft, n_mels, fmax, band, fft_bin",
    [(22050, 1024, 80, 8000, 10, 20), (24000, 1920, 80, 12000, 79, 900), (16000, 400, 128, 8000, 33, 20)],
)
def test_slaney_basis_entry_matches_definition(sr, n_fft, n_mels, fmax, band, fft_bin):
    basis = slaney_mel_basis(sr, n_fft, n_mels, 0.0, fmax)
    expected = _reference_filter_entry(sr, n_fft, n_mels, fmax, band, fft_bin)
    assert expected > 0
    assert float(basis[band, fft_bin]) == pytest.approx(expected, rel=1e-6)


def test_slaney_basis_known_librosa_values_and_shape():
    basis = slaney_mel_basis(22050, 1024, 80, 0.0, 8000.0)
    assert basis.shape == (80, 513) and basis.dtype == torch.float32
    assert float(basis[10, 20]) == pytest.approx(0.011686574667692184, rel=1e-6)
    assert float(slaney_mel_basis(24000, 1920, 80, 0.0, None)[79, 900]) == pytest.approx(0.0010178409283980727, rel=1e-6)
    # Nothing above fmax, every band non-empty.
    assert float(basis[:, int(8000 * 1024 / 22050) + 1 :].abs().max()) == 0.0
    assert bool((basis.sum(dim=1) > 0).all())


# ------------------------------------------------------------------ Kaldi fbank


def test_kaldi_fbank_matches_torchaudio_reference():
    feats = kaldi_fbank(_tone(16000, 1.0))
    assert feats.shape == (98, 80) and feats.dtype == torch.float32  # 1 + (16000 - 400) // 160
    mean, top, bottom = _summary(feats)
    assert mean == pytest.approx(-10.462223285850973, abs=REFERENCE_ATOL)
    assert top == pytest.approx(5.2304229736328125, abs=REFERENCE_ATOL)
    assert bottom == pytest.approx(math.log(torch.finfo(torch.float32).eps), abs=1e-5)
    assert float(feats[10, 12]) == pytest.approx(0.42401236295700073, abs=REFERENCE_ATOL)
    assert float(feats[60, 30]) == pytest.approx(-14.434135437011719, abs=REFERENCE_ATOL)


def test_kaldi_fbank_frame_count_and_short_input():
    assert kaldi_fbank(torch.zeros(1, 399)).shape == (0, 80)
    assert kaldi_fbank(torch.randn(1, 400)).shape == (1, 80)
    assert kaldi_fbank(torch.randn(1, 16000 * 3 + 7)).shape == (1 + (48007 - 400) // 160, 80)


# ------------------------------------------------------------------ whisper log-mel


def test_whisper_log_mel_matches_whisper_reference():
    feats = whisper_log_mel(_tone(16000, 1.0))
    assert feats.shape == (128, 100) and feats.dtype == torch.float32
    mean, top, bottom = _summary(feats)
    assert mean == pytest.approx(-0.31619039326440546, abs=1e-5)
    assert top == pytest.approx(1.4853795766830444, abs=1e-5)
    assert bottom == pytest.approx(-0.5146204233169556, abs=1e-5)
    # Dynamic range is compressed to 8 decades, i.e. 2 after the /4 scaling.
    assert top - bottom <= 2.0 + 1e-6


def test_whisper_log_mel_frames():
    assert whisper_log_mel(torch.randn(1, 16000 * 2 + 159) * 0.1).shape == (128, 200)
    assert whisper_log_mel(torch.randn(1, 16000) * 0.1, n_mels=80).shape == (80, 100)


# ------------------------------------------------------------------ flow prompt mel


@pytest.mark.parametrize(
    "version, expected",
    [
        ("v1", (43, -8.266137143696637, 1.4427965879440308)),
        ("v2", (25, -8.347990209506825, 2.280550241470337)),
        ("v3", (25, -8.537198780221864, 2.106440305709839)),
    ],
)
def test_prompt_mel_matches_matcha_reference(version, expected):
    settings = FLOW_MEL_SETTINGS[version]
    frames, mean, top = expected
    mel = prompt_mel(_tone(settings.sample_rate, 0.5), settings.sample_rate, version)
    assert mel.shape == (1, frames, 80) and mel.dtype == torch.float32
    ours_mean, ours_top, ours_bottom = _summary(mel)
    assert ours_mean == pytest.approx(mean, abs=REFERENCE_ATOL)
    assert ours_top == pytest.approx(top, abs=REFERENCE_ATOL)
    assert ours_bottom == pytest.approx(math.log(1e-5), abs=1e-5)


def test_prompt_mel_frame_rate_and_rate_check():
    assert prompt_mel(torch.randn(1, 24000 * 3) * 0.1, 24000, "v2").shape == (1, 150, 80)  # 50 fps
    assert prompt_mel(torch.randn(1, 22050) * 0.1, 22050, "v1").shape == (1, 22050 // 256, 80)
    with pytest.raises(ValueError, match="22050"):
        prompt_mel(torch.randn(1, 24000), 24000, "v1")


@pytest.mark.parametrize("version, yaml_name", [("v1", "cosyvoice.yaml"), ("v2", "cosyvoice2.yaml"), ("v3", "cosyvoice3.yaml")])
def test_mel_settings_table_matches_official_yaml(version, yaml_name):
    config = read_yaml(fixture_dir(version) / "model" / yaml_name)
    assert mel_settings_from_config(config) == FLOW_MEL_SETTINGS[version]
    assert config["sample_rate"] == FLOW_MEL_SETTINGS[version].sample_rate
