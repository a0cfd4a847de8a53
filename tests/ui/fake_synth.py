"""A stand-in Synthesizer with the runtime's interface: deterministic sine chunks, paced by a short sleep."""

from __future__ import annotations

import threading
import time
from pathlib import Path

import numpy as np

from cosydesk.runtime.types import AudioChunk, Request


class FakeSynthesizer:
    sample_rate = 24000
    version = "v2"
    device = "cpu"
    backend = "eager"

    def __init__(self, model_dir, progress=None, device="auto", backend="auto", precision="auto",
                 chunk_s: float = 0.2, chunks: int = 4, delay_s: float = 0.02, fail_load: str | None = None):
        if fail_load:
            raise ValueError(fail_load)
        self.model_dir = Path(model_dir)
        self.chunk_s, self.chunks, self.delay_s = chunk_s, chunks, delay_s
        self.requests: list[Request] = []
        for stage, fraction in (("Loading model", 0.0), ("Loading text frontend", 0.7), ("Ready", 1.0)):
            if progress:
                progress(stage, fraction)

    def speakers(self):
        return ["中文女", "英文男"]

    def styles(self):
        return ["Happy", "Sad"]

    def supports(self, mode):
        return mode in ("sft", "zero_shot", "instruct2")

    @staticmethod
    def expected_pcm(index: int, samples: int, seed: int = 0) -> np.ndarray:
        t = np.arange(samples) + index * samples
        return (0.3 * np.sin(2 * np.pi * (220 + 40 * seed) * t / 24000) + 0.01).astype(np.float32)

    def stream(self, request: Request, cancel: threading.Event | None = None):
        if not request.text.strip():
            raise ValueError("the text is empty: type something to say")
        if request.speaker and request.speaker not in self.speakers():
            raise ValueError(f"unknown speaker {request.speaker!r}")
        self.requests.append(request)
        samples = int(self.chunk_s * self.sample_rate)
        for index in range(self.chunks):
            time.sleep(self.delay_s)
            if cancel is not None and cancel.is_set():
                return
            yield AudioChunk(self.expected_pcm(index, samples, len(request.text) % 3), self.sample_rate, index,
                             index == self.chunks - 1, timings={"ready": time.perf_counter()})

    def synthesize(self, request: Request) -> np.ndarray:
        return np.concatenate([c.pcm for c in self.stream(request)])


def factory(**overrides):
    """A synthesizer_factory for MainWindow/SynthController that builds FakeSynthesizers with `overrides`."""
    made: list[FakeSynthesizer] = []

    def build(model_dir, progress=None, **options):
        synth = FakeSynthesizer(model_dir, progress, **{**options, **overrides})
        made.append(synth)
        return synth

    build.made = made
    return build
