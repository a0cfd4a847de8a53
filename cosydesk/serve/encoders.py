"""Audio encoders that turn a stream of float32 chunks into the bytes of one response, chunk by chunk.

    encoder = make_encoder("mp3", sample_rate=24000)
    body = encoder.start() + encoder.feed(chunk1) + encoder.feed(chunk2) + ... + encoder.finish()

- pcm: raw signed 16-bit little-endian mono at 24 kHz (OpenAI's pcm; other model rates are resampled).
- wav: a streaming header (RIFF and data sizes 0xFFFFFFFF: "until the stream ends"), then 16-bit PCM.
- mp3 / opus: libsndfile (soundfile) writes into an in-memory sink; what it has written after each chunk is
  sent. MP3 is constant-bitrate (players estimate its length from the file size); Opus in Ogg with a short
  page latency, so pages leave per chunk; rates other than Opus's are resampled to 24 kHz.
- flac: buffered, sent whole at the end (its header holds the length and MD5, which only the end knows).
"""

from __future__ import annotations

import struct

import numpy as np

from cosydesk.audio.formats import FORMATS, available
from cosydesk.serve.resample import StreamResampler

PCM_RATE = 24000  # OpenAI documents pcm as 24 kHz 16-bit mono
STREAMING_FORMATS = ("mp3", "opus", "wav", "pcm")
OGG_PAGE_LATENCY_MS = 20.0
_SFC_SET_OGG_PAGE_LATENCY_MS = 0x1302  # sndfile.h; soundfile has no wrapper for it


def to_s16le(pcm: np.ndarray) -> bytes:
    samples = np.clip(np.asarray(pcm, dtype=np.float32), -1.0, 1.0)
    return (np.round(samples * 32767.0)).astype("<i2").tobytes()


def available_formats() -> tuple[str, ...]:
    """The response formats this installation can write (MP3 and Opus need libsndfile >= 1.1 / 1.0.29)."""
    found = ["pcm", "wav"] + [key for key in ("flac", "mp3", "opus") if available(key)]
    return tuple(sorted(found, key=["mp3", "opus", "flac", "wav", "pcm"].index))


class PcmEncoder:
    """Raw s16le at `rate_out` (resampling from the model's rate when they differ)."""

    def __init__(self, sample_rate: int, rate_out: int = PCM_RATE) -> None:
        self.sample_rate = rate_out
        self._resampler = StreamResampler(sample_rate, rate_out)

    def start(self) -> bytes:
        return b""

    def feed(self, pcm: np.ndarray) -> bytes:
        return to_s16le(self._resampler.feed(pcm))

    def finish(self) -> bytes:
        return to_s16le(self._resampler.finish())


class WavEncoder:
    """A WAV whose length is unknown when its header leaves: both sizes are 0xFFFFFFFF (read to the end)."""

    def __init__(self, sample_rate: int) -> None:
        self.sample_rate = sample_rate

    def start(self) -> bytes:
        rate = self.sample_rate
        fmt = struct.pack("<HHIIHH", 1, 1, rate, rate * 2, 2, 16)  # PCM, mono, rate, byte rate, align, bits
        return b"RIFF" + struct.pack("<I", 0xFFFFFFFF) + b"WAVE" + b"fmt " + struct.pack("<I", len(fmt)) + fmt \
            + b"data" + struct.pack("<I", 0xFFFFFFFF)

    def feed(self, pcm: np.ndarray) -> bytes:
        return to_s16le(pcm)

    def finish(self) -> bytes:
        return b""


class _Sink:
    """A write-only file for libsndfile: bytes go to a buffer that take() empties. libsndfile seeks back at
    close to patch headers; bytes already taken are gone, so writes before the taken mark are dropped."""

    def __init__(self) -> None:
        self._buffer = bytearray()
        self._base = 0  # absolute offset of _buffer[0]
        self._pos = 0

    def write(self, data) -> int:
        data = bytes(data)
        count = len(data)
        if self._pos < self._base:  # patching bytes already sent
            skip = min(self._base - self._pos, count)
            data, self._pos = data[skip:], self._pos + skip
        offset = self._pos - self._base
        end = offset + len(data)
        if end > len(self._buffer):
            self._buffer.extend(bytes(end - len(self._buffer)))
        self._buffer[offset:end] = data
        self._pos += len(data)
        return count

    def seek(self, offset: int, whence: int = 0) -> int:
        if whence == 0:
            self._pos = offset
        elif whence == 1:
            self._pos += offset
        else:
            self._pos = self._base + len(self._buffer) + offset
        return self._pos

    def tell(self) -> int:
        return self._pos

    def read(self, size: int = -1) -> bytes:
        return b""

    def take(self) -> bytes:
        out = bytes(self._buffer)
        self._base += len(out)
        self._buffer.clear()
        return out


def _strip_mp3_placeholder(data: bytes) -> tuple[bytes, bool]:
    """LAME reserves its first frame (a header, then zeros) for a tag it writes at close by seeking back.
    A stream cannot be patched, and decoders that meet the empty frame report errors: drop it.
    Returns (data, decided): decided is False while too few bytes arrived to tell."""
    if len(data) < 4 or data[0] != 0xFF or data[1] & 0xE0 != 0xE0:
        return data, len(data) >= 4
    index = 4
    while index < len(data) and data[index] == 0:
        index += 1
    if index == len(data):
        return data, False
    if index >= 36 and data[index] == 0xFF and index + 1 < len(data) and data[index + 1] & 0xE0 == 0xE0:
        return data[index:], True
    return data, index + 1 < len(data)


class SoundFileEncoder:
    """mp3, opus (Ogg) or flac through libsndfile, written into memory block by block."""

    def __init__(self, fmt: str, sample_rate: int) -> None:
        import soundfile

        if fmt not in ("mp3", "opus", "flac"):
            raise ValueError(f"SoundFileEncoder does not write {fmt!r}")
        spec = FORMATS[fmt]
        self.format = fmt
        rate = spec.rate_for(sample_rate)
        self._resampler = StreamResampler(sample_rate, rate)
        self.sample_rate = rate
        self._sink = _Sink()
        self._file = soundfile.SoundFile(self._sink, mode="w", samplerate=rate, channels=1, format=spec.major,
                                         subtype=spec.subtype, **spec.options)
        if fmt == "opus":
            _set_ogg_page_latency(self._file, OGG_PAGE_LATENCY_MS)
        self._pending = b""  # mp3: bytes held until the placeholder frame is recognised
        self._mp3_start_decided = fmt != "mp3"
        self.streams = fmt != "flac"

    def _drain(self) -> bytes:
        if not self.streams:  # flac: everything stays in the sink until close has patched the header
            return b""
        data = self._sink.take()
        if not self._mp3_start_decided:
            data, self._mp3_start_decided = _strip_mp3_placeholder(self._pending + data)
            self._pending = b"" if self._mp3_start_decided else data
            return data if self._mp3_start_decided else b""
        return data

    def start(self) -> bytes:
        return b""

    def feed(self, pcm: np.ndarray) -> bytes:
        samples = self._resampler.feed(pcm)
        if len(samples):
            self._file.write(samples)
        return self._drain()

    def finish(self) -> bytes:
        tail = self._resampler.finish()
        if len(tail):
            self._file.write(tail)
        self._file.close()
        data = self._sink.take() if not self.streams else self._drain()
        if not self._mp3_start_decided:
            data, self._pending = self._pending + data, b""
        return data


def _set_ogg_page_latency(sound_file, milliseconds: float) -> None:
    """Ask libsndfile to close an Ogg page every `milliseconds` (default ~1 s): pages leave with each chunk."""
    try:
        from soundfile import _ffi, _snd

        value = _ffi.new("double*", milliseconds)
        _snd.sf_command(sound_file._file, _SFC_SET_OGG_PAGE_LATENCY_MS, value, _ffi.sizeof("double"))
    except (ImportError, AttributeError):  # another soundfile build: pages then leave about once a second
        pass


def make_encoder(fmt: str, sample_rate: int):
    """The encoder for a response format (one of available_formats())."""
    if fmt == "pcm":
        return PcmEncoder(sample_rate)
    if fmt == "wav":
        return WavEncoder(sample_rate)
    return SoundFileEncoder(fmt, sample_rate)
