"""Huge recordings without the disk space: an RF64 (64-bit WAV) header that declares hours of multichannel
audio over a sparse file, so the loaders' header checks can be tested without writing gigabytes."""

from __future__ import annotations

import os
import struct
from pathlib import Path

import numpy as np
import soundfile as sf


def write_sparse_rf64(path: Path, seconds: float, rate: int, channels: int) -> Path:
    """A 16-bit RF64 file of ``seconds`` x ``rate`` x ``channels`` whose samples are a sparse hole (zeros)."""
    probe_frames = 4
    with sf.SoundFile(str(path), "w", samplerate=rate, channels=channels, format="RF64", subtype="PCM_16") as out:
        out.write(np.zeros((probe_frames, channels), np.float32))
    header = os.path.getsize(path) - probe_frames * channels * 2
    frames = int(seconds * rate)
    data = frames * channels * 2
    with open(path, "r+b") as handle:
        handle.seek(20)  # the ds64 chunk: RIFF size, data size, sample count (64-bit each)
        handle.write(struct.pack("<QQQ", header + data - 8, data, frames))
        handle.truncate(header + data)
    assert sf.info(str(path)).frames == frames
    return path
