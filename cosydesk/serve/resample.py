"""A streaming polyphase resampler: chunks in, chunks out, the same samples as one pass over the whole signal.

Needed where a format fixes the rate: OpenAI's `pcm` is 24 kHz and Opus takes 8/12/16/24/48 kHz, while
CosyVoice v1 speaks at 22050 Hz. The low-pass FIR (Kaiser window, like scipy.signal.resample_poly's) is
designed once; each output sample is a dot product over the input samples that its filter phase touches, so
keeping the last few input samples between calls makes chunked output identical to the one-shot output.
"""

from __future__ import annotations

from functools import lru_cache
from math import gcd

import numpy as np


@lru_cache(maxsize=8)
def _low_pass(up: int, down: int, half: int) -> np.ndarray:
    """The anti-aliasing FIR in the upsampled domain (gain `up`, so the upsampling zeros are made up for)."""
    from scipy.signal import firwin

    taps = firwin(2 * half + 1, 1.0 / max(up, down), window=("kaiser", 5.0)) * up
    taps.setflags(write=False)
    return taps


class StreamResampler:
    """rate_in -> rate_out for float32 mono; feed() any chunk sizes, finish() flushes the filter's tail."""

    def __init__(self, rate_in: int, rate_out: int, zero_crossings: int = 10) -> None:
        divisor = gcd(rate_in, rate_out)
        self.up, self.down = rate_out // divisor, rate_in // divisor
        self.rate_in, self.rate_out = rate_in, rate_out
        half = zero_crossings * max(self.up, self.down) if self.up != self.down else 0
        self.taps = _low_pass(self.up, self.down, half) if half else np.ones(1)
        self.delay = half  # centre of the filter, in upsampled samples: the output is not shifted in time
        self._history = np.zeros(0, dtype=np.float64)  # input samples still needed, starting at index _base
        self._base = 0  # absolute input index of _history[0]
        self._received = 0  # input samples so far
        self._emitted = 0  # output samples so far

    @property
    def passthrough(self) -> bool:
        return self.up == self.down

    def _compute(self, last: int) -> np.ndarray:
        """Output samples _emitted .. last-1 from the input held (zeros beyond it)."""
        if last <= self._emitted:
            return np.zeros(0, dtype=np.float32)
        m = np.arange(self._emitted, last, dtype=np.int64)
        t = m * self.down + self.delay  # upsampled index under the filter's centre
        newest = t // self.up  # newest input sample the filter reaches
        y = np.zeros(len(m), dtype=np.float64)
        length = len(self.taps)
        for k in range((length + self.up - 1) // self.up + 1):
            i = newest - k
            j = t - i * self.up
            local = i - self._base
            valid = (j < length) & (i >= 0) & (local >= 0) & (local < len(self._history))
            y[valid] += self.taps[j[valid]] * self._history[local[valid]]
        self._emitted = last
        return y.astype(np.float32)

    def _trim(self) -> None:
        """Forget input samples that no future output sample reaches."""
        oldest_needed = max(0, (self._emitted * self.down + self.delay - len(self.taps) + 1) // self.up)
        drop = min(oldest_needed - self._base, len(self._history))
        if drop > 0:
            self._history = self._history[drop:]
            self._base += drop

    def feed(self, pcm: np.ndarray) -> np.ndarray:
        samples = np.asarray(pcm, dtype=np.float32).reshape(-1)
        if self.passthrough:
            return samples
        self._history = np.concatenate([self._history, samples.astype(np.float64)])
        self._received += len(samples)
        # output m is final once the newest input it needs has arrived: (m*down + delay)//up <= received-1
        ready = max(0, ((self._received - 1) * self.up - self.delay) // self.down + 1) if self._received else 0
        out = self._compute(ready)
        self._trim()
        return out

    def finish(self) -> np.ndarray:
        if self.passthrough:
            return np.zeros(0, dtype=np.float32)
        total = -(-self._received * self.up // self.down)  # ceil(received * up / down)
        return self._compute(total)
