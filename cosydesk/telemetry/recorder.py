"""Per-utterance and per-chunk speed records (first-audio latency, real-time factor).

Chunks belong to the utterance in progress: every chunk recorded after one record_utterance() call and up to
the next belongs to the utterance that call closes (the worker records its chunks, then the utterance).

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
    number: int = 0  # 1 for the first utterance recorded, counting on past `keep`


@dataclass(frozen=True)
class ChunkRecord:
    time_s: float
    audio_s: float
    compute_s: float
    utterance: int = 0  # number of the utterance it belongs to (1 = the first recorded), see LatencyRecorder

    @property
    def rtf(self) -> float:
        return self.compute_s / self.audio_s if self.audio_s > 0 else float("inf")


class LatencyRecorder:
    def __init__(self, keep: int = 500) -> None:
        self._lock = threading.Lock()
        self._utterances: deque[UtteranceRecord] = deque(maxlen=keep)
        self._chunks: deque[ChunkRecord] = deque(maxlen=keep * 4)
        self._utterance_count = 0
        self.version = 0  # bumps on every record: lets a UI skip redraws when nothing changed

    @property
    def utterance_count(self) -> int:
        """Utterances recorded so far (including those that fell out of `keep`)."""
        return self._utterance_count

    def record_chunk(self, audio_s: float, compute_s: float) -> ChunkRecord:
        """A chunk of the utterance in progress: the one the next record_utterance() call will close."""
        with self._lock:
            record = ChunkRecord(time.monotonic(), audio_s, compute_s, self._utterance_count + 1)
            self._chunks.append(record)
            self.version += 1
        return record

    def record_utterance(self, first_audio_ms: float, rtf: float, audio_s: float, chunks: int,
                         cancelled: bool = False) -> UtteranceRecord:
        with self._lock:
            self._utterance_count += 1
            record = UtteranceRecord(time.monotonic(), first_audio_ms, rtf, audio_s, chunks, cancelled,
                                     self._utterance_count)
            self._utterances.append(record)
            self.version += 1
        return record

    def utterances(self) -> list[UtteranceRecord]:
        with self._lock:
            return list(self._utterances)

    def chunks(self) -> list[ChunkRecord]:
        with self._lock:
            return list(self._chunks)

    def chunks_by_utterance(self, last: int) -> list[tuple[int, list[ChunkRecord]]]:
        """The chunks of the `last` most recent utterances (the one in progress included), oldest first, as
        (utterance number, its chunks in order)."""
        groups: dict[int, list[ChunkRecord]] = {}
        for chunk in self.chunks():
            groups.setdefault(chunk.utterance, []).append(chunk)
        return sorted(groups.items())[-last:] if last > 0 else []

    def clear(self) -> None:
        with self._lock:
            self._utterances.clear()
            self._chunks.clear()
            self.version += 1
