"""A stand-in Synthesizer with the runtime's interface: deterministic sine chunks, paced by a short sleep."""

from __future__ import annotations

import threading
import time
from pathlib import Path

import numpy as np

from cosydesk.frontend.segments import Segment
from cosydesk.frontend.sentences import reading_sentences
from cosydesk.runtime.types import AudioChunk, Request


class FakeSynthesizer:
    sample_rate = 24000
    version = "v2"
    device = "cpu"
    backend = "eager"

    def __init__(self, model_dir, progress=None, device="auto", backend="auto", precision="auto",
                 chunk_s: float = 0.2, chunks: int = 4, delay_s: float = 0.02, fail_load: str | None = None,
                 per_sentence: bool = False, delay_of=None, missing_devices: tuple[str, ...] = ()):
        """per_sentence: ``chunks`` chunks for every sentence (segments(): the reader's sentences), each
        with its sentence_index and span, as the Synthesizer streams a long text. delay_of(request) -> seconds per
        chunk overrides delay_s; the wait ends early on cancel, as the runtime stops between decode steps.
        missing_devices: devices whose load fails as on a machine without them."""
        if fail_load:
            raise ValueError(fail_load)
        if device in missing_devices:
            raise RuntimeError(f"{device} was asked for, but this machine has no {device.upper()} device")
        self.per_sentence, self.delay_of = per_sentence, delay_of
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

    def segments(self, text: str, per_sentence: bool = True):
        for number, unit in enumerate(reading_sentences(text)):
            yield Segment(text[unit.start:unit.end], unit.start, unit.end, sentence=number)

    def stream(self, request: Request, cancel: threading.Event | None = None):
        if not request.text.strip():
            raise ValueError("the text is empty: type something to say")
        if request.speaker and request.speaker not in self.speakers():
            raise ValueError(f"unknown speaker {request.speaker!r}")
        self.requests.append(request)
        samples = int(self.chunk_s * self.sample_rate)
        delay = self.delay_of(request) if self.delay_of else self.delay_s
        sentences = list(self.segments(request.text)) if self.per_sentence else [None]
        index = 0
        for s_index, segment in enumerate(sentences):
            for part in range(self.chunks):
                if self.delay_of and cancel is not None:
                    cancel.wait(delay)
                else:
                    time.sleep(delay)
                if cancel is not None and cancel.is_set():
                    return
                last = s_index == len(sentences) - 1 and part == self.chunks - 1
                yield AudioChunk(self.expected_pcm(index, samples, len(request.text) % 3), self.sample_rate, index,
                                 last, sentence_index=s_index,
                                 span=(segment.start, segment.end) if segment else None,
                                 timings={"ready": time.perf_counter()})
                index += 1

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
