"""Per-utterance and per-chunk speed records (first-audio latency, real-time factor).

What it is for: the synthesis worker records, the telemetry dock and the history read snapshots. Thread-safe.
What it must not do: import Qt.
"""

from __future__ import annotations

import threading
import time
from collections import deque
from dataclasses import dataclass


@dataclass(frozen=True)
class UtteranceRecord:
    time_s: float
    first_audio_ms: float
    rtf: float  # wall time / audio time; < 1 is faster than real time
    audio_s: float
    chunks: int
    cancelled: bool = False


@dataclass(frozen=True)
class ChunkRecord:
    time_s: float
    audio_s: float
    compute_s: float

    @property
    def rtf(self) -> float:
        return self.compute_s / self.audio_s if self.audio_s > 0 else float("inf")


class LatencyRecorder:
    def __init__(self, keep: int = 500) -> None:
        self._lock = threading.Lock()
        self._utterances: deque[UtteranceRecord] = deque(maxlen=keep)
        self._chunks: deque[ChunkRecord] = deque(maxlen=keep * 4)
        self.version = 0  # bumps on every record: lets a UI skip redraws when nothing changed

    def record_chunk(self, audio_s: float, compute_s: float) -> ChunkRecord:
        record = ChunkRecord(time.monotonic(), audio_s, compute_s)
        with self._lock:
            self._chunks.append(record)
            self.version += 1
        return record

    def record_utterance(self, first_audio_ms: float, rtf: float, audio_s: float, chunks: int,
                         cancelled: bool = False) -> UtteranceRecord:
        record = UtteranceRecord(time.monotonic(), first_audio_ms, rtf, audio_s, chunks, cancelled)
        with self._lock:
            self._utterances.append(record)
            self.version += 1
        return record

    def utterances(self) -> list[UtteranceRecord]:
        with self._lock:
            return list(self._utterances)

    def chunks(self) -> list[ChunkRecord]:
        with self._lock:
            return list(self._chunks)

    def clear(self) -> None:
        with self._lock:
            self._utterances.clear()
            self._chunks.clear()
            self.version += 1
