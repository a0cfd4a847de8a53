"""Speech tokens -> waveform, chunk by chunk, with the official caches and cross-fades.

A ``Token2Wav`` object holds the state of ONE request (flow cache, HiFT mel/source cache, faded tail,
accumulated mel); it is created per sentence and dropped afterwards, so nothing leaks between requests.

Per version (official behaviour, reproduced bit-for-bit by the fixtures' e2e cases):
- v2: flow over all tokens so far (chunked attention while streaming; the final call uses full attention),
  new mel from ``token_offset * 2``; non-final calls run incrementally (``model.flow_stream``: only the new
  frames are computed, same mel) when the flow offers ``stream_state()`` and returns a state for its current
  wiring (the GPU backends' graphed/engine flows do not, and recompute); HiFT prepends the last 8 mel frames and reuses the last 3840 source
  samples of the previous call; the last 3840 output samples are held back and cross-faded (Hamming 7680).
- v1: flow over a 120-token window with the flow's z/mu cache; 34 mel frames of overlap cross-faded in
  log-mel (Hamming 68); HiFT mel cache 20 frames, source cache 5120 samples, speech fade Hamming 10240.
- v3: flow as v2 (incremental likewise); officially the causal HiFT re-vocodes the whole accumulated mel and returns only new samples;
  ``_v3`` gives the same samples while vocoding a bounded window per chunk (``model.hift_stream``).
"""

from __future__ import annotations

import time
from collections.abc import Iterator

import numpy as np
import torch
import torch.nn.functional as F

from cosydesk.model.hift_stream import CausalHiFTStream
from cosydesk.model.versions import V1, V2
from cosydesk.runtime.backends.protocols import IncrementalFlow
from cosydesk.runtime.schedule import ChunkCall, make_schedule


# v2/v3 HiFT streaming cache: the last 8 mel frames are vocoded again with the next chunk, reusing the last
# 8 * 480 source samples (the cudagraph backend captures HiFT for exactly these chunk shapes).
V2_MEL_CACHE_FRAMES = V2.hift_mel_cache_frames
V2_SOURCE_CACHE_SAMPLES = V2.hift_source_cache_samples
# v1: 20 cached mel frames / 20 * 256 source samples likewise, and 34 frames (20 tokens' worth) of flow mel held
# back from each non-final call and cross-faded into the next one.
V1_MEL_CACHE_FRAMES = V1.hift_mel_cache_frames
V1_SOURCE_CACHE_SAMPLES = V1.hift_source_cache_samples
V1_MEL_OVERLAP_FRAMES = V1.mel_frames_for_tokens(V1.chunk_overlap)


def _hamming(length: int) -> torch.Tensor:
    return torch.from_numpy(np.hamming(length))  # float64, as the official numpy window


def cross_fade(fade_in: torch.Tensor, fade_out_tail: torch.Tensor, window: torch.Tensor) -> torch.Tensor:
    """Blend the start of ``fade_in`` with the end of ``fade_out_tail`` over half the window (last axis)."""
    overlap = window.shape[0] // 2
    window = window.to(fade_in.device)
    head = fade_in[..., :overlap].double() * window[:overlap] + fade_out_tail[..., -overlap:].double() * window[overlap:]
    out = fade_in.clone()
    out[..., :overlap] = head.to(fade_in.dtype)
    return out


class Token2Wav:
    """Per-request token -> wave state machine. Call it with each ChunkCall of the request's schedule."""

    def __init__(
        self,
        model,
        prompt_token: torch.Tensor,
        prompt_feat: torch.Tensor,
        embedding: torch.Tensor,
        zero_noise: bool = False,
        speed: float = 1.0,
        streaming: bool = True,
        generator: torch.Generator | None = None,
        incremental: bool = True,
    ):
        """``incremental=False`` recomputes every flow call (the official way; for comparisons)."""
        self.model = model
        self.version = model.version
        device = model.device
        self.prompt_token = prompt_token.to(device=device, dtype=torch.int32)
        self.prompt_feat = prompt_feat.to(device=device, dtype=model.dtype)
        self.embedding = embedding.to(device=device, dtype=model.dtype)
        self.zero_noise = zero_noise
        # the v1 flow's start noise and the v1/v2 HiFT source draws: from this generator (a seeded request) or
        # torch's global RNG, which moves with every request, so a seed alone would not repeat the audio
        self.generator = generator
        self.speed = speed
        self.streaming = streaming
        self.token_mel_ratio = model.token_mel_ratio
        if self.version == "v1":
            self.mel_overlap_len = V1_MEL_OVERLAP_FRAMES
            self.mel_window = _hamming(2 * self.mel_overlap_len).to(device)
            self.mel_cache_len, self.source_cache_len = V1_MEL_CACHE_FRAMES, V1_SOURCE_CACHE_SAMPLES
            self.flow_cache = torch.zeros(1, 80, 0, 2, device=device, dtype=model.dtype)
            self.mel_overlap = torch.zeros(1, 80, 0, device=device, dtype=model.dtype)
        else:
            self.mel_cache_len, self.source_cache_len = V2_MEL_CACHE_FRAMES, V2_SOURCE_CACHE_SAMPLES
        # on the device once per request, not copied there at every cross-fade
        self.speech_window = _hamming(2 * self.source_cache_len).to(device) if self.version != "v3" else None
        self.hift_cache: dict[str, torch.Tensor] | None = None
        self.v3_stream: CausalHiFTStream | None = None  # v3 vocoder state (bounded-work streaming)
        self.timings: dict[str, float] = {}  # perf_counter of flow_done / vocoder_done for the last call
        # per-request incremental flow state (None: every call recomputes); dropped before the final call
        self.flow_stream = self._new_flow_stream() if streaming and incremental and self.version != "v1" else None
        self.flow_calls: list[dict[str, int | bool]] = []  # per flow call: frames in total / computed, incremental

    def _new_flow_stream(self):
        flow = self.model.flow
        return flow.stream_state() if isinstance(flow, IncrementalFlow) else None

    # -- flow -------------------------------------------------------------------------------------------
    def _flow(self, tokens: torch.Tensor, streaming: bool, finalize: bool) -> torch.Tensor:
        flow = self.model.flow
        device = self.prompt_token.device
        args = dict(
            token=tokens.to(device=device, dtype=torch.int32),
            token_len=torch.tensor([tokens.shape[1]], dtype=torch.int32, device=device),
            prompt_token=self.prompt_token,
            prompt_token_len=torch.tensor([self.prompt_token.shape[1]], dtype=torch.int32, device=device),
            prompt_feat=self.prompt_feat,
            prompt_feat_len=torch.tensor([self.prompt_feat.shape[1]], dtype=torch.int32, device=device),
            embedding=self.embedding,
        )
        if self.version == "v1":
            mel, self.flow_cache = flow.inference_with_cache(**args, flow_cache=self.flow_cache, generator=self.generator)
            return self._log_call(mel)
        state = self.flow_stream if streaming else None
        if finalize:
            self.flow_stream = None  # the full-attention final call recomputes: free the cache first
        if state is None:
            return self._log_call(flow.inference(**args, streaming=streaming, finalize=finalize))
        calls_before = len(state.calls)
        mel = flow.inference(**args, streaming=streaming, finalize=finalize, stream_state=state)
        return self._log_call(mel, state.calls[-1] if len(state.calls) > calls_before else None)

    def _log_call(self, mel: torch.Tensor, record=None) -> torch.Tensor:
        """Append the call's frame counts to ``flow_calls`` (a recompute computes every frame)."""
        if record is None:
            total = mel.shape[2] + self.prompt_feat.shape[1]
            entry = {"total_frames": total, "computed_frames": total, "incremental": False}
        else:
            entry = {"total_frames": record.total_frames, "computed_frames": record.computed_frames,
                     "incremental": record.incremental}
        self.flow_calls.append(entry)
        return mel

    # -- hift -------------------------------------------------------------------------------------------
    def _hift(self, mel: torch.Tensor, cache_source: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        seeded = {"generator": self.generator} if self.generator is not None and not self.zero_noise else {}
        speech, source = self.model.hift.inference_with_source(mel, cache_source=cache_source, zero_noise=self.zero_noise,
                                                               **seeded)
        self.timings["vocoder_done"] = time.perf_counter()
        return speech, source

    def __call__(self, tokens: torch.Tensor, call: ChunkCall) -> torch.Tensor:
        """Run one call on ``tokens`` (the whole token list so far, [1, N]); returns new samples [L]."""
        window = tokens[:, call.start:call.end]
        if self.version == "v3":
            return self._v3(window, call)
        streaming = self.streaming and not call.finalize  # the official final call runs with full attention
        mel = self._flow(window, streaming=streaming, finalize=call.finalize)
        self.timings["flow_done"] = time.perf_counter()
        mel = mel[:, :, call.token_offset * self.token_mel_ratio:]
        if self.version == "v1" and self.mel_overlap.shape[2] != 0:
            mel = cross_fade(mel, self.mel_overlap, self.mel_window)
        if self.hift_cache is not None:
            mel = torch.cat([self.hift_cache["mel"], mel], dim=2)
            cache_source = self.hift_cache["source"]
        else:
            cache_source = torch.zeros(1, 1, 0, device=mel.device, dtype=mel.dtype)
        if not call.finalize:
            if self.version == "v1":
                self.mel_overlap = mel[:, :, -self.mel_overlap_len:]
                mel = mel[:, :, : -self.mel_overlap_len]
            speech, source = self._hift(mel, cache_source)
            if self.hift_cache is not None:
                speech = cross_fade(speech, self.hift_cache["speech"], self.speech_window)
            self.hift_cache = {
                "mel": mel[:, :, -self.mel_cache_len:],
                "source": source[:, :, -self.source_cache_len:],
                "speech": speech[:, -self.source_cache_len:],
            }
            return speech[0, : -self.source_cache_len]
        if self.speed != 1.0:
            if self.hift_cache is not None:
                raise ValueError("speed can only be changed in non-streaming synthesis")
            mel = F.interpolate(mel, size=max(1, int(mel.shape[2] / self.speed)), mode="linear")
        speech, _ = self._hift(mel, cache_source)
        if self.hift_cache is not None:
            speech = cross_fade(speech, self.hift_cache["speech"], self.speech_window)
        return speech[0]

    def _v3(self, tokens: torch.Tensor, call: ChunkCall) -> torch.Tensor:
        """Official v3 output (the causal HiFT re-vocoding the whole accumulated mel, new samples only), but
        vocoding only the window the new samples depend on (``CausalHiFTStream``): bounded work per chunk."""
        streaming = self.streaming and not call.finalize
        mel = self._flow(tokens, streaming=streaming, finalize=call.finalize)
        self.timings["flow_done"] = time.perf_counter()
        mel = mel[:, :, call.token_offset * self.token_mel_ratio:]
        if self.speed != 1.0:
            if call.token_offset != 0 or not call.finalize:
                raise ValueError("speed can only be changed in non-streaming synthesis")
            mel = F.interpolate(mel, size=max(1, int(mel.shape[2] / self.speed)), mode="linear")
        if self.v3_stream is None:
            self.v3_stream = CausalHiFTStream(self.model.hift)
        speech = self.v3_stream.push(mel, finalize=call.finalize)[0]
        self.timings["vocoder_done"] = time.perf_counter()
        return speech


def stream_token2wav(
    model,
    tokens: torch.Tensor,
    prompt_token: torch.Tensor,
    prompt_feat: torch.Tensor,
    embedding: torch.Tensor,
    stream: bool = True,
    zero_noise: bool = False,
    speed: float = 1.0,
) -> Iterator[np.ndarray]:
    """Re-voice a complete list of speech tokens (the official `vc` path), chunked exactly as streaming does.

    model: from ``cosydesk.model.load``. tokens [1, N] int; prompt_token [1, P]; prompt_feat [1, F, 80];
    embedding [1, 192]. stream=False is one finalize=True call, as the official non-streaming path.
    Yields float32 numpy chunks.
    """
    tokens = torch.as_tensor(tokens).reshape(1, -1)
    state = Token2Wav(model, torch.as_tensor(prompt_token), torch.as_tensor(prompt_feat), torch.as_tensor(embedding),
                      zero_noise=zero_noise, speed=speed, streaming=stream)
    n = tokens.shape[1]
    with torch.inference_mode():
        if not stream:
            yield state(tokens, ChunkCall(0, n, 0, finalize=True)).float().cpu().numpy()
            return
        schedule = make_schedule(model.version, state.prompt_token.shape[1])
        while True:
            call = schedule.next_call(n, done=True)
            yield state(tokens, call).float().cpu().numpy()
            if call.finalize:
                return
