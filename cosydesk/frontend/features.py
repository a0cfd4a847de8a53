"""Audio features the frontend computes from a prompt recording.

Three different spectrogram recipes, each dictated by the network that consumes it:
* `kaldi_fbank`: 80 log mel filterbanks, Kaldi conventions (input of the CAM++ speaker
  encoder), equal to torchaudio.compliance.kaldi.fbank with its defaults and dither 0.
* `whisper_log_mel`: 128 log10 mels, whisper conventions (input of the speech tokenizers).
* `prompt_mel`: 80 natural-log mels at the model rate (the flow's own feature, i.e. the
  official yaml's `feat_extractor`, a Matcha-TTS/HiFi-GAN style mel).

Mel filterbanks are built here (no librosa): Kaldi's HTK-like triangles for the fbank and
the Slaney-style, area-normalised triangles that librosa.filters.mel makes by default
for the other two. Everything is CPU float32 torch and deterministic; this module must
not read files or run models.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from functools import lru_cache
from typing import Any

import numpy as np
import torch

from cosydesk.model.versions import V1, V2, V3

# ---------------------------------------------------------------- Slaney mel scale


_SLANEY_LINEAR_HZ_PER_MEL = 200.0 / 3.0  # linear below 1 kHz
_SLANEY_BREAK_HZ = 1000.0
_SLANEY_BREAK_MEL = _SLANEY_BREAK_HZ / _SLANEY_LINEAR_HZ_PER_MEL  # 15 mel
_SLANEY_LOG_STEP = math.log(6.4) / 27.0  # log-spaced above 1 kHz


def hz_to_slaney_mel(hz: np.ndarray) -> np.ndarray:
    hz = np.asarray(hz, dtype=np.float64)
    linear = hz / _SLANEY_LINEAR_HZ_PER_MEL
    with np.errstate(divide="ignore"):
        logarithmic = _SLANEY_BREAK_MEL + np.log(np.maximum(hz, 1e-300) / _SLANEY_BREAK_HZ) / _SLANEY_LOG_STEP
    return np.where(hz >= _SLANEY_BREAK_HZ, logarithmic, linear)


def slaney_mel_to_hz(mel: np.ndarray) -> np.ndarray:
    mel = np.asarray(mel, dtype=np.float64)
    linear = mel * _SLANEY_LINEAR_HZ_PER_MEL
    logarithmic = _SLANEY_BREAK_HZ * np.exp(_SLANEY_LOG_STEP * (mel - _SLANEY_BREAK_MEL))
    return np.where(mel >= _SLANEY_BREAK_MEL, logarithmic, linear)


@lru_cache(maxsize=16)
def _slaney_mel_basis_np(sample_rate: int, n_fft: int, n_mels: int, fmin: float, fmax: float) -> np.ndarray:
    # Triangle i rises from edge i to edge i+1 and falls to edge i+2; edges are equally
    # spaced on the Slaney mel scale. Each triangle is scaled to unit area (2 / width).
    edges_hz = slaney_mel_to_hz(np.linspace(hz_to_slaney_mel(fmin), hz_to_slaney_mel(fmax), n_mels + 2))
    bin_hz = np.arange(n_fft // 2 + 1, dtype=np.float64) * sample_rate / n_fft
    widths = np.diff(edges_hz)
    offsets = edges_hz[:, None] - bin_hz[None, :]
    rising = -offsets[:-2] / widths[:-1, None]
    falling = offsets[2:] / widths[1:, None]
    # librosa stores the triangles in float32 before scaling; rounding the same way keeps
    # our basis within one float32 ulp of the one the official code used.
    triangles = np.maximum(0.0, np.minimum(rising, falling)).astype(np.float32)
    area_norm = 2.0 / (edges_hz[2:] - edges_hz[:-2])
    return (triangles.astype(np.float64) * area_norm[:, None]).astype(np.float32)


def slaney_mel_basis(sample_rate: int, n_fft: int, n_mels: int, fmin: float = 0.0, fmax: float | None = None) -> torch.Tensor:
    """[n_mels, n_fft//2+1] float32, as librosa.filters.mel(htk=False, norm='slaney')."""
    top = sample_rate / 2.0 if fmax is None else float(fmax)
    return torch.from_numpy(_slaney_mel_basis_np(int(sample_rate), int(n_fft), int(n_mels), float(fmin), top).copy())


# ---------------------------------------------------------------- Kaldi fbank

FBANK_SAMPLE_RATE = 16000
_FBANK_FRAME = 400  # 25 ms
_FBANK_SHIFT = 160  # 10 ms
_FBANK_FFT = 512  # frame zero-padded to a power of two
_FBANK_BINS = 80
_FBANK_LOW_HZ = 20.0
_PREEMPHASIS = 0.97
_POVEY_POWER = 0.85


def _kaldi_mel(hz: torch.Tensor | float):
    if isinstance(hz, torch.Tensor):
        return 1127.0 * torch.log(1.0 + hz / 700.0)
    return 1127.0 * math.log(1.0 + hz / 700.0)


@lru_cache(maxsize=1)
def _kaldi_mel_banks() -> torch.Tensor:
    """[80, 257] triangles equally spaced on Kaldi's mel scale from 20 Hz to Nyquist."""
    low = _kaldi_mel(_FBANK_LOW_HZ)
    high = _kaldi_mel(FBANK_SAMPLE_RATE / 2.0)
    step = (high - low) / (_FBANK_BINS + 1)
    index = torch.arange(_FBANK_BINS, dtype=torch.float32).unsqueeze(1)
    left = low + index * step
    centre = low + (index + 1.0) * step
    right = low + (index + 2.0) * step
    bin_mel = _kaldi_mel(torch.arange(_FBANK_FFT // 2, dtype=torch.float32) * (FBANK_SAMPLE_RATE / _FBANK_FFT))
    rising = (bin_mel - left) / (centre - left)
    falling = (right - bin_mel) / (right - centre)
    banks = torch.clamp(torch.minimum(rising, falling), min=0.0)
    # Kaldi leaves the Nyquist bin out of every triangle.
    return torch.nn.functional.pad(banks, (0, 1))


@lru_cache(maxsize=1)
def _povey_window() -> torch.Tensor:
    return torch.hann_window(_FBANK_FRAME, periodic=False, dtype=torch.float32).pow(_POVEY_POWER)


def kaldi_fbank(wav16k: torch.Tensor) -> torch.Tensor:
    """[1, N] float waveform at 16 kHz -> [T, 80] log mel filterbank energies.

    Kaldi defaults: 25 ms frames every 10 ms without edge padding (T = 1 + (N-400)//160),
    per-frame DC removal, pre-emphasis 0.97, Povey window, 512-point power spectrum,
    log floored at float32 epsilon. No dither.
    """
    signal = wav16k.reshape(-1).to(torch.float32)
    if signal.numel() < _FBANK_FRAME:
        return torch.zeros((0, _FBANK_BINS), dtype=torch.float32)
    frames = signal.unfold(0, _FBANK_FRAME, _FBANK_SHIFT)
    frames = frames - frames.mean(dim=1, keepdim=True)
    # Pre-emphasis inside each frame; the first sample is emphasised against itself.
    previous = torch.cat([frames[:, :1], frames[:, :-1]], dim=1)
    frames = (frames - _PREEMPHASIS * previous) * _povey_window()
    frames = torch.nn.functional.pad(frames, (0, _FBANK_FFT - _FBANK_FRAME))
    # The spectrum and the mel sums in float64: in float32 their last digits follow the CPU's FFT / GEMM kernels
    # (AVX-512 and SSE paths differed by 3e-5 on the log energies), which no reference could then match.
    power = torch.fft.rfft(frames.double()).abs().pow(2.0)
    energies = (power @ _kaldi_mel_banks().double().T).float()
    return torch.clamp(energies, min=torch.finfo(torch.float32).eps).log()


# ---------------------------------------------------------------- whisper log-mel

_WHISPER_FFT = 400
_WHISPER_HOP = 160


@lru_cache(maxsize=1)
def _periodic_hann(length: int) -> torch.Tensor:
    return torch.hann_window(length, periodic=True, dtype=torch.float32)


def whisper_log_mel(wav16k: torch.Tensor, n_mels: int = 128) -> torch.Tensor:
    """[1, N] waveform at 16 kHz -> [n_mels, N // 160] whisper log-mel features.

    Centred (reflect-padded) 400-point STFT every 160 samples with the last frame dropped,
    power spectrum, Slaney mels, log10 floored at 1e-10, then compressed to at most 8
    below the utterance maximum and mapped by (x + 4) / 4.
    """
    signal = wav16k.reshape(-1).to(torch.float32)
    spectrum = torch.stft(
        signal,
        _WHISPER_FFT,
        _WHISPER_HOP,
        window=_periodic_hann(_WHISPER_FFT),
        center=True,
        pad_mode="reflect",
        return_complex=True,
    )
    power = spectrum[:, :-1].abs().pow(2)
    mels = slaney_mel_basis(FBANK_SAMPLE_RATE, _WHISPER_FFT, n_mels) @ power
    log_mels = torch.clamp(mels, min=1e-10).log10()
    log_mels = torch.maximum(log_mels, log_mels.max() - 8.0)
    return (log_mels + 4.0) / 4.0


# ---------------------------------------------------------------- flow prompt mel


@dataclass(frozen=True)
class MelSettings:
    """The flow's feat_extractor parameters (official yaml `feat_extractor`)."""

    sample_rate: int
    n_fft: int
    hop: int
    win: int
    n_mels: int
    fmin: float
    fmax: float | None  # None: up to Nyquist


FLOW_MEL_SETTINGS = {
    "v1": MelSettings(V1.sample_rate, 1024, V1.samples_per_mel_frame, 1024, 80, 0.0, 8000.0),
    "v2": MelSettings(V2.sample_rate, 1920, V2.samples_per_mel_frame, 1920, 80, 0.0, 8000.0),
    "v3": MelSettings(V3.sample_rate, 1920, V3.samples_per_mel_frame, 1920, 80, 0.0, None),
}


def mel_settings_from_config(config: dict[str, Any]) -> MelSettings:
    """MelSettings from a parsed model yaml (cosydesk.model.config.read_yaml output)."""
    node = config["feat_extractor"]
    fmax = node.get("fmax")
    return MelSettings(
        sample_rate=int(node["sampling_rate"]),
        n_fft=int(node["n_fft"]),
        hop=int(node["hop_size"]),
        win=int(node["win_size"]),
        n_mels=int(node["num_mels"]),
        fmin=float(node.get("fmin", 0)),
        fmax=None if fmax is None else float(fmax),
    )


def log_mel(wav: torch.Tensor, settings: MelSettings) -> torch.Tensor:
    """[1, N] waveform -> [1, n_mels, N // hop] natural-log magnitude mels (flow features)."""
    signal = wav.reshape(1, -1).to(torch.float32)
    # Symmetric reflect padding with an uncentred STFT gives exactly N // hop frames.
    side = (settings.n_fft - settings.hop) // 2
    signal = torch.nn.functional.pad(signal.unsqueeze(1), (side, side), mode="reflect").squeeze(1)
    # float64 for the STFT and the mel sums, as in kaldi_fbank: float32 results depend on the CPU's kernels.
    spectrum = torch.stft(
        signal.double(),
        settings.n_fft,
        hop_length=settings.hop,
        win_length=settings.win,
        window=_periodic_hann(settings.win).double(),
        center=False,
        normalized=False,
        onesided=True,
        return_complex=True,
    )
    spectrum = torch.view_as_real(spectrum)
    magnitude = torch.sqrt(spectrum.pow(2).sum(-1) + 1e-9)
    basis = slaney_mel_basis(settings.sample_rate, settings.n_fft, settings.n_mels, settings.fmin, settings.fmax)
    return torch.log(torch.clamp(basis.double() @ magnitude, min=1e-5)).float()


def prompt_mel(wav: torch.Tensor, sample_rate: int, version: str) -> torch.Tensor:
    """[1, N] prompt waveform at the model rate -> [1, T, 80] flow prompt features."""
    if version not in FLOW_MEL_SETTINGS:
        raise ValueError(f"unknown model version {version!r}")
    settings = FLOW_MEL_SETTINGS[version]
    if sample_rate != settings.sample_rate:
        raise ValueError(f"{version} prompt mels are computed at {settings.sample_rate} Hz, got audio at {sample_rate} Hz")
    return log_mel(wav, settings).transpose(1, 2).contiguous()
