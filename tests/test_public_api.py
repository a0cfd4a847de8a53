"""The package's one obvious entry: `from cosydesk import Synthesizer, Request, AudioChunk, EngineOptions`."""

from __future__ import annotations

import subprocess
import sys

import numpy as np


def test_import_is_cheap_and_exports_the_api():
    code = ("import sys, cosydesk\n"
            "from cosydesk import Request, AudioChunk, EngineOptions\n"
            "assert 'torch' not in sys.modules, 'importing the API types pulled in torch'\n"
            "from cosydesk import Synthesizer\n"
            "print(cosydesk.__version__, sorted(cosydesk.__all__))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert "AudioChunk" in out and "Synthesizer" in out


def test_synthesizer_takes_engine_options(tiny_v2_dir, monkeypatch):
    import cosydesk.runtime.pipeline as pipeline
    from cosydesk import EngineOptions, Request, Synthesizer

    seen = []
    real = pipeline.run_sentence

    def spy(*args, **kwargs):
        seen.append(kwargs.get("shared_steps"))
        return real(*args, **kwargs)

    monkeypatch.setattr(pipeline, "run_sentence", spy)
    monkeypatch.setenv("COSYDESK_FIRST_CHUNK_SHARED_STEPS", "5")
    from_env = Synthesizer(tiny_v2_dir, device="cpu")
    assert from_env.options.first_chunk_shared_steps == 5  # the environment gives the defaults, read once
    synth = Synthesizer(tiny_v2_dir, device="cpu", options=EngineOptions(first_chunk_shared_steps=2))
    monkeypatch.setenv("COSYDESK_FIRST_CHUNK_SHARED_STEPS", "7")  # read at construction, not per sentence
    chunks = list(synth.stream(Request("你好。", speaker=synth.speakers()[0], seed=1)))
    assert chunks and all(np.isfinite(c.pcm).all() for c in chunks)
    assert seen and set(seen) == {2}
