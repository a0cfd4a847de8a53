"""The contract between the runtime core and a backend: what ``pipeline`` / ``token2wav`` / ``synthesizer`` call on
``model.llm``, ``model.flow`` and ``model.hift``, as typed Protocols.

Every backend (eager, cudagraph, tensorrt) returns a ``BackendModel`` whose parts satisfy these; the core codes
against them and never against a backend's classes. Optional capabilities are Protocols of their own, checked
with ``isinstance`` (``runtime_checkable``): a device-side generation loop (``DeviceLoopLM``), an incremental
streaming flow (``IncrementalFlow``), a flow solver that reports each Euler step (``SteppedSolver``).

What this module must not do: import torch at runtime or any backend module (the core imports it).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol, runtime_checkable

if TYPE_CHECKING:
    import torch


@runtime_checkable
class SpeechLM(Protocol):
    """Text (+ prompt) -> speech token ids, one step at a time (``model.sampling.generate_speech_tokens`` drives it).
    ``stop_ids``: ids that end a sentence; ``min_len_masked_ids``: ids masked before the minimum length;
    ``silent_tokens``: ids the caller drops from the output (v3's breath/silence ids; empty elsewhere)."""

    stop_ids: frozenset[int]
    min_len_masked_ids: tuple[int, ...]
    silent_tokens: tuple[int, ...]

    def prefill(self, text, prompt_text, prompt_speech_token, embedding=None) -> tuple["torch.Tensor", Any]: ...

    def decode_step(self, token, state) -> tuple["torch.Tensor", Any]: ...


@runtime_checkable
class DeviceLoopLM(SpeechLM, Protocol):
    """A speech LM with its own generation loop (the choice made on the device, steps queued ahead of the host);
    the runtime uses it instead of the generic host loop."""

    def generate_speech_tokens(self, text, prompt_text, prompt_speech_token, embedding, greedy: bool = False,
                               min_len_ratio: float = 2, max_len_ratio: float = 20,
                               generator: "torch.Generator | None" = None,
                               forced: Sequence[int] | None = None) -> Iterator[int]: ...


@runtime_checkable
class FlowSolver(Protocol):
    """The flow's CFM solver (``flow.decoder``): ``n_steps`` Euler steps."""

    n_steps: int


@runtime_checkable
class SteppedSolver(FlowSolver, Protocol):
    """A solver that calls ``after_step(step)`` right after launching each step (None: no hook): the pipeline uses
    it to let the held-back LLM resume during a first chunk's last steps."""

    after_step: Callable[[int], None] | None


@runtime_checkable
class Flow(Protocol):
    """Speech tokens (+ prompt) -> mel. v2/v3 call ``inference(..., streaming=, finalize=[, stream_state=])``; v1
    calls ``inference_with_cache(..., flow_cache=, generator=)`` -> (mel, new cache)."""

    decoder: FlowSolver

    def inference(self, token, token_len, prompt_token, prompt_token_len, prompt_feat, prompt_feat_len, embedding,
                  streaming: bool = False, finalize: bool = True, **kwargs: Any) -> "torch.Tensor": ...

    def inference_with_cache(self, token, token_len, prompt_token, prompt_token_len, prompt_feat, prompt_feat_len,
                             embedding, **kwargs: Any) -> tuple["torch.Tensor", Any]: ...


@runtime_checkable
class IncrementalFlow(Flow, Protocol):
    """A flow that can stream incrementally: ``stream_state()`` -> per-request state to pass to ``inference``, or
    None where its current wiring cannot (the call then recomputes)."""

    def stream_state(self) -> Any: ...


@runtime_checkable
class Vocoder(Protocol):
    """Mel -> waveform (float32 in/out at the core's side). v1/v2 stream with a source cache."""

    def inference_with_source(self, mel, cache_source=None, zero_noise: bool = False,
                              **kwargs: Any) -> tuple["torch.Tensor", "torch.Tensor"]: ...

    def inference(self, mel, *args: Any, **kwargs: Any) -> "torch.Tensor": ...


class CausalVocoder(Protocol):
    """v3's causal HiFT as ``model.hift_stream.CausalHiFTStream`` drives it: one bounded mel window per chunk, the
    harmonic phase carried across windows."""

    samples_per_frame: int
    num_harmonics: int
    f0_predictor: Any

    def stream_left_context_frames(self) -> int: ...

    def inference_window(self, mel, finalize: bool, first_frame: int, phase_in,
                         phase_valid_from: int) -> tuple["torch.Tensor", "torch.Tensor"]: ...


@runtime_checkable
class BackendModel(Protocol):
    """What ``accelerate`` returns and the core runs: a ``cosydesk.model.CosyVoiceModel``-shaped object."""

    version: str
    model_dir: Path
    config: dict[str, Any]
    llm: SpeechLM
    flow: Flow
    hift: Vocoder
    device: "torch.device"
    dtype: "torch.dtype"

    @property
    def sample_rate(self) -> int: ...

    @property
    def token_mel_ratio(self) -> int: ...


__all__ = ["BackendModel", "DeviceLoopLM", "Flow", "FlowSolver", "IncrementalFlow", "SpeechLM", "SteppedSolver",
           "Vocoder"]
