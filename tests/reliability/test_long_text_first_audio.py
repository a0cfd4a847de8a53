"""First audio for 100,000 characters of English comes about as fast as for one sentence (issue 31 item 3).

Text is normalised and split lazily (cosydesk.frontend.segments.iter_segments), so the Synthesizer starts on the
first sentence without looking at the rest. This compares the time to the first chunk of both texts on the same
tiny model and process; it asserts a ratio, not absolute milliseconds.
"""

from __future__ import annotations

import threading
import time

import pytest

from cosydesk.runtime import Request, Synthesizer

SENTENCE = "The quick brown fox jumps over the lazy dog near the quiet river bank."


def long_english(chars: int = 100_000) -> str:
    """Varied English prose of exactly `chars` characters (numbers included, so the normaliser has work)."""
    parts, size, n = [], 0, 0
    while size < chars:
        part = f"Chapter {n} begins on page {n * 3 + 7}, and the reader has {n % 11} questions left. {SENTENCE} "
        parts.append(part)
        size += len(part)
        n += 1
    return "".join(parts)[:chars]


def first_chunk_ms(synth: Synthesizer, text: str) -> float:
    cancel = threading.Event()
    start = time.perf_counter()
    stream = synth.stream(Request(text, speaker="中文女", seed=1), cancel=cancel)
    try:
        next(stream)
        return (time.perf_counter() - start) * 1000.0
    finally:
        cancel.set()
        stream.close()


@pytest.fixture(scope="module")
def synth(tiny_v2_dir):
    return Synthesizer(tiny_v2_dir, device="cpu")


def test_first_audio_for_100k_characters_is_about_as_fast_as_for_one_sentence(synth):
    text = long_english()
    assert len(text) == 100_000
    first_chunk_ms(synth, SENTENCE)  # warm-up: normaliser graphs, torch kernels
    short = min(first_chunk_ms(synth, SENTENCE) for _ in range(2))
    long = min(first_chunk_ms(synth, text) for _ in range(2))
    print(f"[metric] first_chunk_ms one_sentence={short:.1f} english_100k={long:.1f}")
    assert long <= 3.0 * short + 150.0, f"first chunk: 100k chars {long:.0f} ms vs one sentence {short:.0f} ms"
