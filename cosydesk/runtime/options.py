"""Engine options: the GPU path's switches as one typed value, passed to the Synthesizer.

``EngineOptions()`` holds the measured defaults; ``EngineOptions.from_env()`` takes them from the
``COSYDESK_*`` variables (cosydesk/environment.py), read once. The Synthesizer makes the backend under
``using(options)``, so the code that builds graphs and kernels reads :func:`active` instead of the
environment, and the request loop reads the Synthesizer's own copy.

What it must not do: import torch (the CLI builds options before any model is loaded).
"""

from __future__ import annotations

import contextlib
import contextvars
import dataclasses
from collections.abc import Iterator, Mapping

from cosydesk import environment

# H200 A/Bs behind each default: docs/performance.md.
DECODE_AHEAD = 3
# 0: a request's first chunk has the GPU to itself (H200, wave 5: v3 first audio P99 56.3 -> 42.9 ms, v2 44.3 ->
# 37.8 ms); the throughput it costs falls on the first sentence only (later ones run their LLM beside playback)
FIRST_CHUNK_SHARED_STEPS = 0


@dataclasses.dataclass(frozen=True)
class EngineOptions:
    """How the ``cudagraph`` backend runs (the eager backends ignore these).

    compile: torch.compile and Triton kernels at all (off: plain torch inside the CUDA graphs).
    decode_kernels: the speech LM's decode step as Triton kernels.
    flow_kernels: the flow estimator's transformer blocks as Triton kernels.
    row_estimator: v2's estimator in time-major row form (Triton conv kernels).
    pdl: programmatic dependent launch on Hopper or newer.
    decode_ahead: decode steps queued before the host reads each chosen token (>= 1).
    first_chunk_shared_steps: of the first chunk's CFM steps, how many run beside the resumed LLM.
    final_hift_graphs / v1_hift_graphs / v1_encoder_graphs: capture those parts as padded graphs.
    v3_hift_graphs: v3's causal vocoder stream windows as padded graphs.
    """

    compile: bool = True
    decode_kernels: bool = True
    flow_kernels: bool = True
    row_estimator: bool = True
    pdl: bool = True
    decode_ahead: int = DECODE_AHEAD
    first_chunk_shared_steps: int = FIRST_CHUNK_SHARED_STEPS
    final_hift_graphs: bool = True
    v1_hift_graphs: bool = True
    v1_encoder_graphs: bool = True
    v3_hift_graphs: bool = True

    def __post_init__(self) -> None:
        if self.decode_ahead < 1:
            raise ValueError(f"decode_ahead must be at least 1, not {self.decode_ahead}")
        if self.first_chunk_shared_steps < 0:
            raise ValueError(f"first_chunk_shared_steps must not be negative, not {self.first_chunk_shared_steps}")

    @classmethod
    def from_env(cls, environ: Mapping[str, str] | None = None) -> "EngineOptions":
        """The defaults, overridden by the COSYDESK_* variables that are set (read now, once)."""
        defaults = cls()
        values = {}
        for field in dataclasses.fields(cls):
            name = f"COSYDESK_{field.name.upper()}"
            default = getattr(defaults, field.name)
            if isinstance(default, bool):
                values[field.name] = environment.switch(name, default, environ)
            else:
                values[field.name] = environment.count(name, default, minimum=1 if field.name == "decode_ahead" else 0,
                                                       environ=environ)
        return cls(**values)


_ACTIVE: contextvars.ContextVar[EngineOptions | None] = contextvars.ContextVar("cosydesk_engine_options", default=None)


def active() -> EngineOptions:
    """The options of the backend being built (inside :func:`using`), else those of the environment."""
    options = _ACTIVE.get()
    return options if options is not None else EngineOptions.from_env()


@contextlib.contextmanager
def using(options: EngineOptions) -> Iterator[EngineOptions]:
    """Build a backend with ``options``: everything it reads through :func:`active` sees them."""
    token = _ACTIVE.set(options)
    try:
        yield options
    finally:
        _ACTIVE.reset(token)
