"""The audio file formats CosyDesk writes, one table for the app's exports, the CLI and the speech server.

Each format names its libsndfile container and codec (soundfile's ``format`` / ``subtype``), the options it
is written with and the sample rates it takes (Opus only 8/12/16/24/48 kHz: other rates are resampled to
24 kHz). Whether this installation's libsndfile can write it (MP3 needs >= 1.1, Opus >= 1.0.29) is asked
with ``available``.

What it must not do: import Qt, or anything above the audio layer.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

MP3_COMPRESSION_LEVEL = 0.5  # with constant bitrate: 80 kbit/s at 22.05/24 kHz mono
OPUS_RATES = (8000, 12000, 16000, 24000, 48000)
OPUS_FALLBACK_RATE = 24000


@dataclass(frozen=True)
class AudioFormat:
    key: str  # "wav", "flac", "mp3", "opus", "ogg"
    suffix: str  # the file name ending, with its dot
    major: str  # soundfile format
    subtype: str  # soundfile subtype (codec)
    label: str  # what the save dialog's filter says
    options: dict = field(default_factory=dict)  # more soundfile.SoundFile keyword arguments
    rates: tuple[int, ...] = ()  # the sample rates the codec takes; empty: any

    def rate_for(self, sample_rate: int) -> int:
        """The rate a `sample_rate` signal is written at (resampled when the codec does not take it)."""
        if not self.rates or sample_rate in self.rates:
            return sample_rate
        return OPUS_FALLBACK_RATE if OPUS_FALLBACK_RATE in self.rates else self.rates[-1]

    @property
    def name_filter(self) -> str:
        """A Qt file-dialog filter: "MP3 audio (*.mp3)"."""
        return f"{self.label} (*{self.suffix})"


FORMATS: dict[str, AudioFormat] = {
    "wav": AudioFormat("wav", ".wav", "WAV", "PCM_16", "WAV audio"),
    "flac": AudioFormat("flac", ".flac", "FLAC", "PCM_16", "FLAC audio"),
    "mp3": AudioFormat("mp3", ".mp3", "MP3", "MPEG_LAYER_III", "MP3 audio",
                       {"compression_level": MP3_COMPRESSION_LEVEL, "bitrate_mode": "CONSTANT"}),
    "opus": AudioFormat("opus", ".opus", "OGG", "OPUS", "Opus audio", rates=OPUS_RATES),
    "ogg": AudioFormat("ogg", ".ogg", "OGG", "VORBIS", "Ogg Vorbis audio"),
}


def available(key: str) -> bool:
    """Can this installation's libsndfile write format `key`?"""
    import soundfile

    spec = FORMATS.get(key)
    if spec is None:
        return False
    majors = soundfile.available_formats()
    return spec.major in majors and spec.subtype in soundfile.available_subtypes(spec.major)


def writable_formats() -> list[AudioFormat]:
    """The formats of FORMATS this installation can write, in the table's order."""
    return [spec for key, spec in FORMATS.items() if available(key)]


def format_for_path(path: str | Path) -> AudioFormat | None:
    """The format a file name's ending asks for (case-insensitive), or None."""
    suffix = Path(path).suffix.lower()
    return next((spec for spec in FORMATS.values() if spec.suffix == suffix), None)


def resample(pcm: np.ndarray, rate_in: int, rate_out: int) -> np.ndarray:
    """The whole signal at another rate (polyphase FIR, scipy): for codecs with fixed rates."""
    if rate_in == rate_out:
        return np.asarray(pcm, dtype=np.float32)
    from math import gcd

    from scipy.signal import resample_poly

    divisor = gcd(rate_in, rate_out)
    return resample_poly(np.asarray(pcm, dtype=np.float64), rate_out // divisor, rate_in // divisor).astype(np.float32)
