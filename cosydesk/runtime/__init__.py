"""Runtime: the Synthesizer (text -> streamed AudioChunks), chunk schedules, token2wav, backends.

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
