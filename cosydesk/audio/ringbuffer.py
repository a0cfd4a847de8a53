"""Single-producer / single-consumer float32 ring buffer for the audio callback.

What it is for: moving PCM from the synthesis thread to PortAudio's callback thread without locks, so the
callback never waits. Capacity is a power of two: positions are ever-growing counters and the slot is
`counter & mask`.

What it must not do: allocate, lock or log in `read_into` (it runs on the real-time audio thread), or be
written by two threads at once (callers serialise their producer side; see Player).
"""

from __future__ import annotations

import numpy as np


class RingBuffer:
    def __init__(self, min_capacity: int) -> None:
        if min_capacity < 1:
            raise ValueError(f"ring buffer capacity must be positive, got {min_capacity}")
        capacity = 1 << (int(min_capacity) - 1).bit_length()
        self._buf = np.zeros(capacity, dtype=np.float32)
        self._mask = capacity - 1
        # Counters only grow. Each is written by exactly one side; a plain int store is atomic under the GIL,
        # and the producer publishes `_write` only after the samples are in place.
        self._write = 0
        self._read = 0
        self._discard_upto = 0  # producer's request: the consumer skips everything before this counter

    @property
    def capacity(self) -> int:
        return self._mask + 1

    def readable(self) -> int:
        return self._write - max(self._read, self._discard_upto)

    def writable(self) -> int:
        return self.capacity - (self._write - self._read)

    # -- producer side ---------------------------------------------------------------------------------
    def write(self, samples: np.ndarray) -> int:
        """Copy as many samples as fit; returns how many were taken."""
        count = min(len(samples), self.writable())
        if count <= 0:
            return 0
        start = self._write & self._mask
        first = min(count, self.capacity - start)
        self._buf[start:start + first] = samples[:first]
        if count > first:
            self._buf[:count - first] = samples[first:count]
        self._write += count
        return count

    def discard_all(self) -> None:
        """Ask the consumer to drop everything written so far (takes effect at its next read)."""
        self._discard_upto = self._write

    # -- consumer side ---------------------------------------------------------------------------------
    def read_into(self, out: np.ndarray) -> int:
        """Fill the front of `out` with up to len(out) samples; returns how many. The rest is left as is."""
        if self._discard_upto > self._read:
            self._read = self._discard_upto
        count = min(len(out), self._write - self._read)
        if count <= 0:
            return 0
        start = self._read & self._mask
        first = min(count, self.capacity - start)
        out[:first] = self._buf[start:start + first]
        if count > first:
            out[first:count] = self._buf[:count - first]
        self._read += count
        return count
