"""A stand-in for the sounddevice module: a paced output stream that records what it played.

It runs the player's callback on its own thread at `speed` x real time, can be unplugged mid-stream
(PortAudio then ends the stream and reports nothing but a finished callback) and refuse to open.
"""

from __future__ import annotations

import threading
import time
from types import SimpleNamespace

import numpy as np


class CallbackStop(Exception):
    pass


class PortAudioError(Exception):
    pass


class FakeSoundDevice:
    CallbackStop = CallbackStop
    PortAudioError = PortAudioError

    def __init__(self, speed: float = 1.0, blocksize: int = 256):
        self.speed = speed
        self.blocksize = blocksize
        self.played: list[np.ndarray] = []
        self.unplugged = False
        self.streams: list[FakeOutputStream] = []

    def query_devices(self):
        return [{"name": "Fake Speakers", "max_output_channels": 2, "max_input_channels": 0},
                {"name": "Fake Mic", "max_output_channels": 0, "max_input_channels": 1}]

    def OutputStream(self, **kwargs):  # noqa: N802 - mirrors sounddevice
        if self.unplugged:
            raise PortAudioError("Error opening OutputStream: Device unavailable [PaErrorCode -9985]")
        stream = FakeOutputStream(self, **kwargs)
        self.streams.append(stream)
        return stream

    def all_played(self) -> np.ndarray:
        return np.concatenate(self.played) if self.played else np.zeros(0, np.float32)


class FakeOutputStream:
    def __init__(self, owner: FakeSoundDevice, samplerate, channels, dtype, device, latency, callback,
                 finished_callback):
        self.owner = owner
        self.samplerate = samplerate
        self.callback = callback
        self.finished_callback = finished_callback
        self.active = False
        self.closed = False
        self._thread: threading.Thread | None = None
        self._abort = threading.Event()

    def start(self):
        self.active = True
        self._thread = threading.Thread(target=self._run, daemon=True)
        self._thread.start()

    def _run(self):
        frames = self.owner.blocksize
        period = frames / self.samplerate / self.owner.speed
        status = SimpleNamespace(output_underflow=False)
        next_time = time.perf_counter()
        try:
            while not self._abort.is_set():
                if self.owner.unplugged:
                    break
                out = np.zeros((frames, 1), np.float32)
                try:
                    self.callback(out, frames, None, status)
                except CallbackStop:
                    self.owner.played.append(out[:, 0].copy())
                    break
                self.owner.played.append(out[:, 0].copy())
                next_time += period
                time.sleep(max(0.0, next_time - time.perf_counter()))
        finally:
            self.active = False
            self.finished_callback()

    def abort(self):
        self._abort.set()
        if self._thread is not None and self._thread is not threading.current_thread():
            self._thread.join(2)

    stop = abort

    def close(self):
        self.abort()
        self.closed = True
