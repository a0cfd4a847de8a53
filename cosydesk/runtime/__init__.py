"""Runtime: the Synthesizer (text -> streamed AudioChunks), chunk schedules, token2wav, backends.

Layout (imports point down this list, never up):
- the core: ``synthesizer`` (requests -> sentences), ``pipeline`` (LLM thread + token2wav consumer), ``token2wav``
  (per-request flow/HiFT state), ``schedule`` (chunk schedules), ``buckets`` (shape buckets), ``options``, ``errors``,
  ``types``, host copies and sampling;
- ``backends/``: the contract (``protocols.py``: what the core calls on ``model.llm`` / ``.flow`` / ``.hift``), the
  registry (``accelerate``, names, where measured; torch-free to import) and the eager backends (``eager.py``); the
  core reaches a backend only through this package;
- ``backends/cudagraph/``, ``backends/tensorrt/``: the GPU backends, imported on demand by ``backends.accelerate``;
  they use the core's public modules (buckets, schedule, options, errors) and ``cosydesk.model`` (with
  ``model.versions``), never each other.

Imports are lazy so `from cosydesk.runtime import Request` does not pull in torch.
"""

from __future__ import annotations

from cosydesk.runtime.types import AudioChunk, Request

__all__ = ["AudioChunk", "Request", "Synthesizer", "stream_token2wav"]


def __getattr__(name: str):
    if name == "Synthesizer":
        from cosydesk.runtime.synthesizer import Synthesizer

        return Synthesizer
    if name == "stream_token2wav":
        from cosydesk.runtime.token2wav import stream_token2wav

        return stream_token2wav
    raise AttributeError(name)
