"""Microphone recording for voice profiles (sounddevice InputStream into a preallocated buffer).

What it must not do: touch Qt or allocate in the callback; it only copies samples and stores the block peak.
Its buffer is sized once from the rate and the length limit, so both are checked first: a rate outside the
8-384 kHz a voice prompt may have, or more than the prompt limit (frontend/limits.py), is refused in one line.
"""

from __future__ import annotations

import threading
from typing import Any

import numpy as np

from cosydesk.audio.player import AudioDeviceError, load_sounddevice
from cosydesk.frontend.limits import MAX_PROMPT_SECONDS

MIN_RATE_HZ, MAX_RATE_HZ = 8000, 384000  # as frontend.audio_io accepts for prompt files


class MicRecorder:
    def __init__(self, sample_rate: int = 24000, max_seconds: float = 30.0, device: int | str | None = None,
                 sd_module: Any | None = None) -> None:
        if not MIN_RATE_HZ <= int(sample_rate) <= MAX_RATE_HZ:
            raise ValueError(f"cannot record at {sample_rate} Hz: choose {MIN_RATE_HZ}-{MAX_RATE_HZ} Hz")
        if not 0 < max_seconds <= MAX_PROMPT_SECONDS:
            raise ValueError(f"cannot record {max_seconds} s: a voice prompt is at most {MAX_PROMPT_SECONDS:g} s")
        self.sample_rate = int(sample_rate)
        self.device = device
        self._sd = sd_module
        self._buffer = np.zeros(int(sample_rate * max_seconds), np.float32)
        self._count = 0
        self._stream = None
        self._lock = threading.Lock()
        self.level = 0.0  # peak of the latest block, for a meter

    @property
    def seconds(self) -> float:
        return self._count / self.sample_rate

    @property
    def recording(self) -> bool:
        return self._stream is not None

    def start(self) -> None:
        with self._lock:
            if self._stream is not None:
                return
            self._count = 0
            sd = self._sd or load_sounddevice()
            try:
                stream = sd.InputStream(samplerate=self.sample_rate, channels=1, dtype="float32",
                                        device=self.device, callback=self._callback)
                stream.start()
            except Exception as error:  # noqa: BLE001 - PortAudioError / ValueError
                raise AudioDeviceError(f"cannot open the microphone: {error}") from error
            self._stream = stream

    def stop(self) -> np.ndarray:
        with self._lock:
            stream, self._stream = self._stream, None
            if stream is not None:
                try:
                    stream.stop()
                    stream.close()
                except Exception:  # noqa: BLE001 - a vanished mic cannot spoil what was recorded
                    pass
            return self._buffer[: self._count].copy()

    def _callback(self, indata, frames, time_info, status) -> None:
        room = len(self._buffer) - self._count
        take = min(frames, room)
        if take > 0:
            self._buffer[self._count:self._count + take] = indata[:take, 0]
            self._count += take
        if frames:
            self.level = float(np.abs(indata[:, 0]).max())
