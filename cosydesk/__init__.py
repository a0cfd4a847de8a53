"""CosyDesk: local, real-time CosyVoice speech synthesis.

The Python API (the desktop app, the CLI and the local server use the same)::

    from cosydesk import EngineOptions, Request, Synthesizer

    synth = Synthesizer("CosyVoice2-0.5B")                    # a catalogue name (downloaded on first use)
    synth = Synthesizer("path/to/CosyVoice2-0.5B")            # or a model folder
    for chunk in synth.stream(Request("你好，世界。", speaker="中文女")):
        play(chunk.pcm, chunk.sample_rate)                     # float32 mono, as it is synthesised
    audio = synth.synthesize(Request("Hello there."))          # or the whole utterance at once

Importing this package is cheap: torch is loaded when a Synthesizer is made.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

__version__ = "0.1.0"
__all__ = ["AudioChunk", "EngineOptions", "Request", "Synthesizer", "__version__"]

if TYPE_CHECKING:
    from cosydesk.runtime.options import EngineOptions
    from cosydesk.runtime.synthesizer import Synthesizer
    from cosydesk.runtime.types import AudioChunk, Request


def __getattr__(name: str) -> Any:
    if name in ("AudioChunk", "Request"):
        from cosydesk.runtime import types

        return getattr(types, name)
    if name == "EngineOptions":
        from cosydesk.runtime.options import EngineOptions

        return EngineOptions
    if name == "Synthesizer":
        from cosydesk.runtime.synthesizer import Synthesizer

        return Synthesizer
    raise AttributeError(f"module 'cosydesk' has no attribute {name!r}")
