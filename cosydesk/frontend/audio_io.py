"""Read a user's prompt recording into a mono float32 tensor at the rate a consumer needs.

Decoding is libsndfile (python-soundfile: WAV, FLAC, OGG/Opus, MP3 ...). Resampling is a
band-limited (Hann-windowed sinc, 6 zero crossings, 0.99 roll-off) polyphase resampler,
the same design as the torchaudio `Resample` transform the official frontend uses, so
prompt features stay close to the official ones.

Bad input raises AudioInputError with a message a user can act on. This module must not
compute features or run models.
"""

from __future__ import annotations

import math
import warnings
from functools import lru_cache
from pathlib import Path

import numpy as np
import soundfile
import torch

from cosydesk.frontend.limits import MAX_PROMPT_SECONDS  # noqa: F401 - re-exported for the frontend's users

MIN_PROMPT_SECONDS = 0.1  # below this the spectrogram paddings have nothing to reflect
SILENCE_RMS = 1e-4  # about -80 dBFS
LOW_RATE_HZ = 16000  # the official loader refuses anything below this

_SINC_ZERO_CROSSINGS = 6
_ROLLOFF = 0.99


class AudioInputError(ValueError):
    """The audio file cannot be used as a prompt (message says why)."""


class LowSampleRateWarning(UserWarning):
    """The recording is band-limited below 8 kHz; the cloned voice will sound muffled."""


@lru_cache(maxsize=16)
def _sinc_kernels(orig: int, new: int) -> tuple[torch.Tensor, int]:
    """[new, 1, taps] filters, one per output phase, and the one-sided filter reach in input samples."""
    cutoff = min(orig, new) * _ROLLOFF  # in units where the lower rate's Nyquist is min/2
    reach = math.ceil(_SINC_ZERO_CROSSINGS * orig / cutoff)
    taps = torch.arange(-reach, reach + orig, dtype=torch.float64) / orig
    # The phase offsets are rounded to float32 before joining the float64 taps: that is
    # what torchaudio does, and matching it keeps us bit-close to the official features.
    phases = (-torch.arange(new, dtype=torch.float32)[:, None] / new).to(torch.float64)
    t = (phases + taps[None, :]) * cutoff
    t = t.clamp(-_SINC_ZERO_CROSSINGS, _SINC_ZERO_CROSSINGS)
    window = torch.cos(t * math.pi / _SINC_ZERO_CROSSINGS / 2) ** 2
    t = t * math.pi
    sinc = torch.where(t == 0, torch.ones_like(t), torch.sin(t) / t)
    kernels = (sinc * window * (cutoff / orig)).to(torch.float32)
    return kernels.unsqueeze(1), reach


def resample(wav: torch.Tensor, orig_sr: int, new_sr: int) -> torch.Tensor:
    """[C, N] float32 at orig_sr -> [C, ceil(N * new_sr / orig_sr)] at new_sr."""
    if orig_sr == new_sr:
        return wav
    common = math.gcd(int(orig_sr), int(new_sr))
    orig, new = int(orig_sr) // common, int(new_sr) // common
    kernels, reach = _sinc_kernels(orig, new)
    channels, length = wav.shape
    padded = torch.nn.functional.pad(wav.reshape(channels, 1, length), (reach, reach + orig))
    # Each stride step of `orig` input samples yields `new` output samples (one per phase).
    phased = torch.nn.functional.conv1d(padded, kernels, stride=orig)
    out = phased.transpose(1, 2).reshape(channels, -1)
    return out[:, : math.ceil(new * length / orig)].contiguous()


def load_audio(
    path: str | Path,
    target_sr: int,
    *,
    max_seconds: float | None = MAX_PROMPT_SECONDS,
    min_rms: float = SILENCE_RMS,
) -> torch.Tensor:
    """Decode, mix to mono and resample an audio file: -> [1, N] float32 at target_sr.

    Raises AudioInputError when the file is missing, not decodable audio, empty or shorter
    than 0.1 s, silent (RMS below `min_rms`), or longer than `max_seconds` (None: no limit).
    Warns LowSampleRateWarning for recordings below 16 kHz (accepted, upsampled).
    """
    path = Path(path)
    if not path.exists():
        raise AudioInputError(f"audio file not found: {path}")
    if not path.is_file():
        raise AudioInputError(f"not a file: {path}")
    try:
        samples, rate = soundfile.read(str(path), dtype="float32", always_2d=True)
    except (soundfile.LibsndfileError, RuntimeError, TypeError, ValueError) as exc:
        raise AudioInputError(f"{path.name} is not a readable audio file ({exc})") from exc

    frames = samples.shape[0]
    if frames == 0:
        raise AudioInputError(f"{path.name} contains no audio")
    seconds = frames / rate
    if seconds < MIN_PROMPT_SECONDS:
        raise AudioInputError(f"{path.name} is too short ({seconds * 1000:.0f} ms)")
    if max_seconds is not None and seconds > max_seconds:
        raise AudioInputError(f"{path.name} is {seconds:.1f} s long; at most {max_seconds:g} s are supported")

    mono = samples.mean(axis=1, dtype=np.float32)
    if not np.all(np.isfinite(mono)):
        raise AudioInputError(f"{path.name} contains invalid (NaN/inf) samples")
    rms = float(np.sqrt(np.mean(np.square(mono, dtype=np.float64))))
    if rms < min_rms:
        raise AudioInputError(f"{path.name} is silent (RMS {rms:.1e})")
    if rate < LOW_RATE_HZ:
        warnings.warn(
            f"{path.name} is sampled at {rate} Hz; below {LOW_RATE_HZ} Hz the voice loses its high band",
            LowSampleRateWarning,
            stacklevel=2,
        )
    return resample(torch.from_numpy(mono).unsqueeze(0), rate, target_sr)
