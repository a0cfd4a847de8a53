"""Streaming audio output on PortAudio (sounddevice), fed through a lock-free ring buffer.

What it is for: playing synthesised chunks the moment the first one exists, for the desktop app and for
`cosydesk say --play` (see `play_stream`). The producer (the synthesis thread) writes PCM; PortAudio's
callback copies it out; running dry before the utterance is over counts as an underrun.

What it must not do: touch Qt, take locks or allocate in the callback, or block the caller of `stop()`
(the UI thread) on PortAudio. A device that disappears is reported as AudioDeviceError and the next
utterance opens a fresh stream.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

import numpy as np

from cosydesk.audio.ringbuffer import RingBuffer


class AudioDeviceError(RuntimeError):
    """The audio device could not be opened or stopped working; the message says which and why."""


def load_sounddevice():
    """Import sounddevice with a helpful message when PortAudio is missing."""
    try:
        import sounddevice
    except OSError as error:  # the Linux wheel does not bundle PortAudio
        raise AudioDeviceError(
            "PortAudio is not installed (Debian/Ubuntu: apt install libportaudio2); audio playback is off"
        ) from error
    return sounddevice


def list_output_devices(sd_module: Any | None = None) -> list[tuple[int, str]]:
    """(index, name) of every device that can play; [] when PortAudio is missing or lists nothing."""
    try:
        sd = sd_module or load_sounddevice()
        devices = sd.query_devices()
    except Exception:  # noqa: BLE001 - no audio stack means no devices, not a crash
        return []
    return [(i, d["name"]) for i, d in enumerate(devices) if d.get("max_output_channels", 0) > 0]


def _is_active(stream) -> bool:
    try:
        return bool(stream.active)
    except Exception:  # noqa: BLE001 - PortAudio reports a vanished device as an error here
        return False


@dataclass
class PlaybackStats:
    frames_written: int = 0
    frames_played: int = 0
    underruns: int = 0
    first_audio_s: float | None = None  # from play_stream's start to the first chunk entering the buffer
    sample_rate: int = 0
    cancelled: bool = False

    @property
    def duration_s(self) -> float:
        return self.frames_played / self.sample_rate if self.sample_rate else 0.0


# The device buffer PortAudio is asked for. The callback is Python and needs the GIL, which another thread of the
# app may hold for up to the interpreter's 5 ms switch interval: with PortAudio's "low" (8.7 ms on PulseAudio) one
# such thread made playback click or nearly stall; with 30 ms it played cleanly (tests/audio/test_player_realtime.py).
OUTPUT_LATENCY_S = 0.03


class Player:
    """One output stream at a time, reopened per utterance.

    Producer API (any thread, serialised by an internal lock): begin(sample_rate) -> token, write(pcm, token),
    end(token), stop(). Tokens make writes from a stopped utterance harmless.
    """

    def __init__(self, device: int | str | None = None, buffer_seconds: float = 60.0,
                 latency: str | float = OUTPUT_LATENCY_S, sd_module: Any | None = None) -> None:
        self._sd = sd_module
        self.device = device
        self._buffer_seconds = buffer_seconds
        self._latency = latency
        self._lock = threading.RLock()
        self._ring: RingBuffer | None = None
        self._stream = None
        self._stream_rate = 0
        self._generation = 0
        self._ended = True
        self._started_utterance = False
        self._callback_error: str | None = None
        self._stop_requested = False  # set by the callback right before it ends the stream on purpose
        self._paused = False  # the callback plays silence and leaves the queue as it is
        # Buffering (synthesis slower than real time): the producer holds a sentence back until it is complete,
        # so running dry meanwhile is a pause between sentences, not an underrun (wait_for_more).
        self._waiting = False
        self._utterance_start_played = 0  # frames_played when the current utterance's first sample was played
        self._first_sample_at: float | None = None  # perf_counter of the utterance's first sample to the device
        # Counters written only by the callback (plain int stores).
        self.underruns = 0
        self.frames_played = 0
        self.frames_written = 0
        self.streams_opened = 0
        self.streams_closed = 0
        self.last_error: str | None = None

    # -- properties ------------------------------------------------------------------------------------
    @property
    def sample_rate(self) -> int:
        return self._stream_rate

    @property
    def is_playing(self) -> bool:
        stream = self._stream
        return stream is not None and _is_active(stream)

    @property
    def open_streams(self) -> int:
        return self.streams_opened - self.streams_closed

    @property
    def paused(self) -> bool:
        return self._paused

    @property
    def buffering(self) -> bool:
        """Silent because the producer is buffering the next stretch (see ``wait_for_more``)."""
        ring = self._ring
        return self._waiting and (ring is None or ring.readable() == 0)

    def first_sample_time(self, token: int | None) -> float | None:
        """perf_counter time at which the utterance ``token`` handed its first sample to the device (None: not yet,
        or another utterance is current)."""
        return self._first_sample_at if token is not None and token == self._generation else None

    def utterance_frames_played(self, token: int | None) -> int | None:
        """Frames of the utterance ``token`` the device has played so far (None when it is no longer current)."""
        if token is None or token != self._generation:
            return None
        return self.frames_played - self._utterance_start_played if self._first_sample_at is not None else 0

    def wait_for_more(self, waiting: bool) -> None:
        """The producer is buffering a stretch before it writes it (synthesis slower than real time): running dry
        meanwhile is a deliberate pause between sentences, not an underrun. False when it writes again."""
        self._waiting = bool(waiting)

    def buffered_seconds(self) -> float:
        ring = self._ring
        return ring.readable() / self._stream_rate if ring and self._stream_rate else 0.0

    # -- producer API ----------------------------------------------------------------------------------
    def set_device(self, device: int | str | None) -> None:
        with self._lock:
            self.stop()
            self.device = device
            self._close_stream()

    def begin(self, sample_rate: int) -> int:
        """Start a new utterance at `sample_rate`; drops whatever is still queued. Returns its token."""
        with self._lock:
            self._generation += 1
            if self._ring is not None:
                self._ring.discard_all()
            if self._stream_rate != sample_rate or self._ring is None:
                self._close_stream()
                self._stream_rate = int(sample_rate)
                self._ring = RingBuffer(int(sample_rate * self._buffer_seconds))
            self._ended = False
            self._started_utterance = False
            self._paused = False
            self._waiting = False
            self._first_sample_at = None
            self.last_error = None
            return self._generation

    def write(self, pcm: np.ndarray, token: int | None = None, cancel: threading.Event | None = None,
              timeout_s: float = 600.0) -> bool:
        """Queue samples for playback, waiting while the buffer is full. False if the utterance was stopped.

        The first write of an utterance opens the output stream (so playback starts with the first chunk).
        Raises AudioDeviceError when the device cannot be opened or stops mid-way.
        """
        samples = np.ascontiguousarray(pcm, dtype=np.float32).reshape(-1)
        deadline = time.monotonic() + timeout_s
        offset = 0
        while True:
            with self._lock:
                if (token is not None and token != self._generation) or self._ring is None or self._ended:
                    return False
                if cancel is not None and cancel.is_set():
                    return False
                taken = self._ring.write(samples[offset:])
                offset += taken
                self.frames_written += taken
                if offset > 0 or not len(samples):
                    self._ensure_running()
                if offset >= len(samples):
                    return True
            if self._paused:  # a full queue waits for the listener, not for a stalled device
                deadline = time.monotonic() + timeout_s
            elif time.monotonic() > deadline:
                raise AudioDeviceError("audio output is not consuming samples (device stalled?)")
            time.sleep(0.005)  # buffer full: the device drains it in real time

    def end(self, token: int | None = None) -> None:
        """No more samples for this utterance: running dry from now on is the normal end, not an underrun."""
        with self._lock:
            if token is None or token == self._generation:
                self._ended = True

    def pause(self) -> bool:
        """Hold playback where it is: the device plays silence, queued samples wait, writers keep queueing (up to
        the buffer) and no underrun is counted. False when nothing is playing."""
        with self._lock:
            if not self.is_playing:
                return False
            self._paused = True
            return True

    def resume(self) -> None:
        """Go on from where ``pause`` held it."""
        self._paused = False

    def stop(self) -> None:
        """Silence now and forget queued samples. Never waits for PortAudio."""
        with self._lock:
            self._generation += 1
            self._ended = True
            self._paused = False
            self._waiting = False
            if self._ring is not None:
                self._ring.discard_all()

    def wait_done(self, timeout_s: float = 600.0, cancel: threading.Event | None = None) -> bool:
        """Block until the queued samples have been played (True) or timeout/cancel (False).

        Raises AudioDeviceError if the stream died with samples still queued.
        """
        deadline = time.monotonic() + timeout_s
        while time.monotonic() < deadline:
            if cancel is not None and cancel.is_set():
                return False
            if self._paused:  # paused time does not count against the timeout
                deadline = time.monotonic() + timeout_s
            with self._lock:
                ring, stream = self._ring, self._stream
                if ring is None or stream is None:
                    return True
                if not _is_active(stream):
                    self._raise_if_died()
                    if ring.readable() == 0 or self._stop_requested:
                        return True
                    self._callback_error = "audio output stopped with samples still queued (device gone?)"
                    self._raise_if_died()
            time.sleep(0.005)
        return False

    def close(self) -> None:
        with self._lock:
            self.stop()
            self._close_stream()

    def reap(self) -> None:
        """Close a stream that finished on its own (cheap; the app calls it from a timer)."""
        with self._lock:
            if self._stream is not None and not _is_active(self._stream) and self._ended:
                self._close_stream()

    # -- internals -------------------------------------------------------------------------------------
    def _raise_if_died(self) -> None:
        if self._callback_error:
            message, self._callback_error = self._callback_error, None
            self.last_error = message
            self._close_stream()
            raise AudioDeviceError(message)

    def _ensure_running(self) -> None:
        stream = self._stream
        if stream is not None and _is_active(stream):
            self._started_utterance = True
            return
        if stream is not None and not self._stop_requested:
            # It stopped although nobody asked it to: the device went away (or never ran).
            self._callback_error = self._callback_error or "audio device stopped during playback"
            self._raise_if_died()
        self._close_stream()
        self._open_stream()
        self._started_utterance = True

    def _open_stream(self) -> None:
        sd = self._sd or load_sounddevice()
        self._sd = sd
        self._callback_error = None
        self._stop_requested = False
        try:
            stream = sd.OutputStream(samplerate=self._stream_rate, channels=1, dtype="float32",
                                     device=self.device, latency=self._latency, callback=self._callback,
                                     finished_callback=self._finished)
            stream.start()
        except Exception as error:  # noqa: BLE001 - PortAudioError, ValueError for unknown device names
            name = "default device" if self.device is None else f"device {self.device!r}"
            if not list_output_devices(sd):
                self.last_error = ("no audio output device found (no sound card, or PulseAudio/PipeWire not running); "
                                   "synthesis still works and can be exported")
            else:
                self.last_error = f"cannot open audio output on {name} at {self._stream_rate} Hz: {error}"
            raise AudioDeviceError(self.last_error) from error
        self._stream = stream
        self.streams_opened += 1

    def _close_stream(self) -> None:
        stream, self._stream = self._stream, None
        if stream is None:
            return
        try:
            if _is_active(stream):
                stream.abort()
            stream.close()
        except Exception:  # noqa: BLE001 - a vanished device may fail to close; the handle is gone anyway
            pass
        self.streams_closed += 1

    def _finished(self) -> None:
        # PortAudio thread. Ended by CallbackStop (normal) or by a device error; wait_done/_ensure_running decide.
        if not self._stop_requested:
            self._callback_error = "audio device stopped during playback (unplugged or taken by another program?)"

    def _callback(self, outdata, frames, time_info, status) -> None:
        # Real-time thread: copy, count, nothing else.
        out = outdata[:, 0]
        if self._paused:
            out[:] = 0.0
            return
        ring = self._ring
        got = ring.read_into(out) if ring is not None else 0
        if got < frames:
            out[got:] = 0.0
        if got and self._first_sample_at is None:
            self._first_sample_at = time.perf_counter()
            self._utterance_start_played = self.frames_played
        self.frames_played += got
        if status.output_underflow:
            self.underruns += 1
        if got < frames:
            if self._ended:
                if ring is None or ring.readable() == 0:
                    self._stop_requested = True
                    raise self._sd.CallbackStop
            elif self._started_utterance and not self._waiting:  # waiting for a first chunk or a buffered sentence
                self.underruns += 1


def play_stream(chunks: Iterable, sample_rate: int, device: int | str | None = None,
                cancel: threading.Event | None = None, player: Player | None = None) -> PlaybackStats:
    """Play an iterator of AudioChunk (or float32 arrays) as it is produced; blocks until heard.

    For the CLI. Returns counts and the time until the first chunk arrived.
    """
    own_player = player is None
    player = player or Player(device=device)
    start = time.perf_counter()
    stats = PlaybackStats(sample_rate=sample_rate)
    underruns_before, played_before = player.underruns, player.frames_played
    token = player.begin(sample_rate)
    try:
        for chunk in chunks:
            pcm = getattr(chunk, "pcm", chunk)
            if stats.first_audio_s is None:
                stats.first_audio_s = time.perf_counter() - start
            if not player.write(pcm, token, cancel=cancel):
                stats.cancelled = True
                break
            stats.frames_written += len(pcm)
        player.end(token)
        if not stats.cancelled:
            stats.cancelled = not player.wait_done(cancel=cancel)
    finally:
        if stats.cancelled:
            player.stop()
        stats.underruns = player.underruns - underruns_before
        stats.frames_played = player.frames_played - played_before
        if own_player:
            player.close()
    return stats
