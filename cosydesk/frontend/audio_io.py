"""Read a user's prompt recording into a mono float32 tensor at the rate a consumer needs.

Decoding is libsndfile (python-soundfile: WAV, FLAC, OGG/Opus, MP3 ...). Resampling is a
band-limited (Hann-windowed sinc, 6 zero crossings, 0.99 roll-off) polyphase resampler,
the same design as the torchaudio `Resample` transform the official frontend uses, so
prompt features stay close to the official ones.

Memory stays bounded for any rate from 8 kHz to 384 kHz: the filter bank holds one filter per
output phase, and the number of phases is the reduced ratio's numerator (44,101 Hz -> 16 kHz
is 16000/44101: a 2.8 GB bank). When the exact bank would exceed ``MAX_FILTER_BANK``
coefficients, the nearest ratio with small enough terms is used instead (Fraction.limit_denominator;
rate error below 0.05 % - under a cent of pitch, far below what an ear hears). A file's rate, length and channel count
are checked from its header (soundfile.info) before anything is decoded, and decoding goes
block by block, mixed to mono, so a 2-hour 8-channel 192 kHz file costs a header read.

Bad input raises AudioInputError with a message a user can act on. This module must not
compute features or run models.
"""

from __future__ import annotations

import math
import warnings
from fractions import Fraction
from functools import lru_cache
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np
import soundfile

if TYPE_CHECKING:  # torch is imported where it is used: read_mono serves torch-free callers (voice profiles)
    import torch

from cosydesk.frontend.limits import MAX_PROMPT_SECONDS  # noqa: F401 - re-exported for the frontend's users

MIN_PROMPT_SECONDS = 0.1  # below this the spectrogram paddings have nothing to reflect
SILENCE_RMS = 1e-4  # about -80 dBFS
LOW_RATE_HZ = 16000  # the official loader refuses anything below this
MIN_RATE_HZ = 8000  # telephone band: the lowest rate a voice can still be cloned from
MAX_RATE_HZ = 384000  # the highest rate audio interfaces record at
MAX_CHANNELS = 64
MAX_FILTER_BANK = 1 << 20  # resampler coefficients (4 MB float32; the float64 design stage takes a few times that)
_READ_BLOCK_FRAMES = 1 << 16

_SINC_ZERO_CROSSINGS = 6
_ROLLOFF = 0.99


class AudioInputError(ValueError):
    """The audio file cannot be used as a prompt (message says why)."""


class LowSampleRateWarning(UserWarning):
    """The recording is band-limited below 8 kHz; the cloned voice will sound muffled."""


@lru_cache(maxsize=8)  # at most MAX_FILTER_BANK float32 each: 32 MB when full
def _sinc_kernels(orig: int, new: int) -> tuple[torch.Tensor, int]:
    """[new, 1, taps] filters, one per output phase, and the one-sided filter reach in input samples."""
    import torch

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


def _bank_size(orig: int, new: int) -> int:
    """Coefficients in the filter bank of an orig -> new (reduced) ratio: new phases x taps."""
    cutoff = min(orig, new) * _ROLLOFF
    return new * (2 * math.ceil(_SINC_ZERO_CROSSINGS * orig / cutoff) + orig)


def resampling_ratio(orig_sr: int, new_sr: int) -> tuple[int, int]:
    """(orig, new): the reduced ratio new/orig the resampler uses, exact when its filter bank fits in
    MAX_FILTER_BANK coefficients, else the nearest ratio with terms small enough (raises ValueError for rates
    that are not positive)."""
    if orig_sr <= 0 or new_sr <= 0:
        raise ValueError(f"sample rates must be positive, got {orig_sr} -> {new_sr}")
    exact = Fraction(int(new_sr), int(orig_sr))
    if _bank_size(exact.denominator, exact.numerator) <= MAX_FILTER_BANK:
        return exact.denominator, exact.numerator

    def nearest(limit: int) -> Fraction:  # the closest ratio whose terms are both at most about `limit`
        if exact >= 1:
            return 1 / (1 / exact).limit_denominator(limit)
        return exact.limit_denominator(limit)

    low, high = 1, max(exact.numerator, exact.denominator)  # binary search: the finest ratio that fits
    while low < high:
        middle = (low + high + 1) // 2
        candidate = nearest(middle)
        if _bank_size(candidate.denominator, candidate.numerator) <= MAX_FILTER_BANK:
            low = middle
        else:
            high = middle - 1
    ratio = nearest(low)
    return ratio.denominator, ratio.numerator


def resample(wav: torch.Tensor, orig_sr: int, new_sr: int) -> torch.Tensor:
    """[C, N] float32 at orig_sr -> [C, ceil(N * new / orig)] at new_sr, where new/orig is
    ``resampling_ratio`` (exactly new_sr/orig_sr for every usual rate)."""
    import torch

    if orig_sr == new_sr:
        return wav
    orig, new = resampling_ratio(int(orig_sr), int(new_sr))
    if orig == new:  # a rate within a few ppm of the target (16,001 Hz -> 16 kHz)
        return wav
    kernels, reach = _sinc_kernels(orig, new)
    channels, length = wav.shape
    padded = torch.nn.functional.pad(wav.reshape(channels, 1, length), (reach, reach + orig))
    # Each stride step of `orig` input samples yields `new` output samples (one per phase).
    phased = torch.nn.functional.conv1d(padded, kernels, stride=orig)
    out = phased.transpose(1, 2).reshape(channels, -1)
    return out[:, : math.ceil(new * length / orig)].contiguous()


def read_mono(path: str | Path, max_seconds: float | None = MAX_PROMPT_SECONDS) -> tuple[np.ndarray, int]:
    """A recording's samples mixed to mono float32, and its rate, refusing what cannot be a prompt before
    decoding it: no audio, a rate outside 8 kHz..384 kHz, more than MAX_CHANNELS channels, or longer than
    ``max_seconds`` (None: no limit; a header that under-reports its length is caught while decoding).
    Raises AudioInputError (one line naming the file)."""
    path = Path(path)
    if not path.exists():
        raise AudioInputError(f"audio file not found: {path}")
    if not path.is_file():
        raise AudioInputError(f"not a file: {path}")
    try:
        info = soundfile.info(str(path))
    except (soundfile.LibsndfileError, RuntimeError, TypeError, ValueError) as exc:
        raise AudioInputError(f"{path.name} is not a readable audio file ({exc})") from exc
    rate, channels = int(info.samplerate), int(info.channels)
    if not MIN_RATE_HZ <= rate <= MAX_RATE_HZ:
        where = "too low" if rate < MIN_RATE_HZ else "too high"
        raise AudioInputError(f"{path.name} is sampled at {rate} Hz, {where}: voice recordings need "
                              f"{MIN_RATE_HZ // 1000}-{MAX_RATE_HZ // 1000} kHz (16 kHz or more sounds best)")
    if not 1 <= channels <= MAX_CHANNELS:
        raise AudioInputError(f"{path.name} has {channels} channels; a recording has 1 to {MAX_CHANNELS}")
    limit_frames = None if max_seconds is None else int(math.floor(max_seconds * rate))

    def too_long(frames: int) -> AudioInputError:
        return AudioInputError(f"{path.name} is {frames / rate:.1f} s long, too long: at most {max_seconds:g} s "
                               "are supported (trim it to one or two sentences)")

    if limit_frames is not None and info.frames > limit_frames:
        raise too_long(int(info.frames))
    pieces: list[np.ndarray] = []
    frames = 0
    try:
        with soundfile.SoundFile(str(path)) as audio:
            for block in audio.blocks(blocksize=_READ_BLOCK_FRAMES, dtype="float32", always_2d=True):
                frames += block.shape[0]
                if limit_frames is not None and frames > limit_frames:
                    raise too_long(frames + max(0, int(info.frames) - frames))
                pieces.append(block.mean(axis=1, dtype=np.float32) if block.shape[1] > 1 else block[:, 0].copy())
    except (soundfile.LibsndfileError, RuntimeError, TypeError, ValueError) as exc:
        if isinstance(exc, AudioInputError):
            raise
        raise AudioInputError(f"{path.name} is not a readable audio file ({exc})") from exc
    mono = np.concatenate(pieces) if pieces else np.zeros(0, np.float32)
    return mono, rate


def load_audio(
    path: str | Path,
    target_sr: int,
    *,
    max_seconds: float | None = MAX_PROMPT_SECONDS,
    min_rms: float = SILENCE_RMS,
) -> torch.Tensor:
    """Decode, mix to mono and resample an audio file: -> [1, N] float32 at target_sr.

    Raises AudioInputError when the file is missing, not decodable audio, sampled outside 8-384 kHz, empty or
    shorter than 0.1 s, silent (RMS below `min_rms`), or longer than `max_seconds` (None: no limit).
    Warns LowSampleRateWarning for recordings below 16 kHz (accepted, upsampled).
    """
    path = Path(path)
    mono, rate = read_mono(path, max_seconds)
    frames = mono.shape[0]
    if frames == 0:
        raise AudioInputError(f"{path.name} contains no audio")
    seconds = frames / rate
    if seconds < MIN_PROMPT_SECONDS:
        raise AudioInputError(f"{path.name} is too short ({seconds * 1000:.0f} ms)")
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
    import torch

    return resample(torch.from_numpy(mono).unsqueeze(0), rate, target_sr)
