"""Streaming flow that computes only what is new, exactly (v2 and v3; not v1).

In a non-final streaming call the official v2/v3 flow runs on every token so far with chunk-causal attention
and causal convolutions (``encoder_stream``, ``unet_stream``, ``dit_stream`` say why per network), its noise is
the fixed table's first T columns, and the runtime schedule pads the prompt so that every non-final call ends on
a chunk boundary. So the frames an earlier call computed come out the same, at every CFM step and every layer,
in the next call. `FlowStreamState` keeps, per request, what those frames contribute to later ones (per CFM
step: attention keys/values of both CFG rows and conv left contexts; the encoder's keys/values and contexts;
the mel), and `incremental_inference` computes only the frames after the last complete chunk, returning the same
mel as the recomputing ``flow.inference(streaming=True)``.

Not cacheable, by construction of the official model:
* the final call of the official schedule runs with full attention (``streaming=False``): every frame then
  sees every later token, so the runtime recomputes it (`incremental_inference` accepts ``finalize=True`` only
  in streaming mode, which the official schedule never uses);
* v1: full-attention encoder, non-causal U-Net (centred convs, GroupNorm over time, full attention) and
  120-token windows: each call's frames depend on the whole window. Its per-call work is already bounded.

Memory: the per-step keys/values are ``bytes_per_frame`` per mel frame (full-size v2 float32: ~4.6 MB/frame).
A state over ``max_bytes`` releases its caches and the rest of the request recomputes (same output).

Pure torch math; the state is passed explicitly and lives as long as one request.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import torch
from torch import nn

from cosydesk.model import dit_stream, encoder_stream, unet_stream
from cosydesk.model.cfm import FlowMatchingSampler
from cosydesk.model.stream_cache import FrameCache, grown_capacity
from cosydesk.model.transformer import PreLookaheadLayer

DEFAULT_MAX_BYTES = 2 << 30  # per request; beyond it the request falls back to recomputing


@dataclass(frozen=True)
class StreamCall:
    """What one flow call of a request did: its frames (prompt included) and how many the estimator ran on."""

    total_frames: int
    computed_frames: int
    incremental: bool


def _plain(module: nn.Module) -> bool:
    """Only our model classes and torch.nn layers inside: a backend that swapped in fused kernels, graphs or
    engines (cosydesk.runtime.*) keeps its own recompute path."""
    return all(type(m).__module__.startswith(("cosydesk.model.", "torch.nn.")) for m in module.modules())


def why_not_incremental(flow: nn.Module) -> str | None:
    """None when ``flow`` (as currently wired) can stream incrementally, else the reason."""
    decoder = getattr(flow, "decoder", None)
    if type(decoder) is not FlowMatchingSampler:
        return f"flow decoder is {type(decoder).__name__}, not the plain FlowMatchingSampler"
    encoder = getattr(flow, "encoder", None)
    if encoder is not None:
        why = encoder_stream.supports_incremental(encoder) or unet_stream.supports_incremental(flow.estimator)
        if why is None and encoder.up_stride != flow.token_mel_ratio:
            why = "encoder upsampling differs from token_mel_ratio"
    elif type(getattr(flow, "pre_lookahead_layer", None)) is PreLookaheadLayer:
        why = dit_stream.supports_incremental(flow.estimator)
    else:
        why = f"{type(flow).__name__} is not a causal (v2/v3) flow"
    if why is None and not _plain(flow):
        why = "flow modules were replaced by a backend"
    if why is None and flow.estimator.static_chunk_size % flow.token_mel_ratio:
        why = "estimator chunk is not a whole number of tokens"
    return why


def _token_granularity(flow: nn.Module) -> int:
    """Commit boundaries (in tokens, prompt included): complete chunks of every chunked layer."""
    tokens = flow.estimator.static_chunk_size // flow.token_mel_ratio
    encoder = getattr(flow, "encoder", None)
    return tokens if encoder is None else math.lcm(tokens, encoder.static_chunk_size)


def _bytes_per_frame(flow: nn.Module) -> int:
    """Key/value bytes a state holds per mel frame (conv contexts and mel are negligible)."""
    estimator = flow.estimator
    element = next(estimator.parameters()).element_size()
    inner = sum(m.heads * m.dim_head for m in estimator.modules() if hasattr(m, "to_q") and hasattr(m, "dim_head"))
    per_frame = flow.decoder.n_steps * 2 * 2 * inner * element  # CFG rows x (K, V)
    encoder = getattr(flow, "encoder", None)
    if encoder is not None:
        width = encoder.output_size()
        per_frame += 2 * width * element * (len(encoder.encoders) / encoder.up_stride + len(encoder.up_encoders))
    return int(per_frame)


class FlowStreamState:
    """One request's incremental flow state. Create with ``flow.stream_state()``, pass to every non-final
    streaming ``flow.inference(..., stream_state=state)`` of the request, drop it afterwards."""

    def __init__(self, n_steps: int, granularity: int, bytes_per_frame: int, max_bytes: int):
        self.granularity = granularity
        self.bytes_per_frame = bytes_per_frame
        self.max_bytes = max_bytes
        self.steps = [FrameCache() for _ in range(n_steps)]
        self.tokens_cache = FrameCache()  # look-ahead conv, v2 conformer layers, v2 upsampling conv
        self.frames_cache = FrameCache()  # v2 up-encoders
        self.committed_tokens = 0  # prompt included; frames = tokens * token_mel_ratio
        self.mel: torch.Tensor | None = None  # committed frames [1, 80, F]
        self.ids: torch.Tensor | None = None  # prompt + tokens of the last call, for the continuation check
        self.prompt_feat: torch.Tensor | None = None
        self.embedding: torch.Tensor | None = None
        self.calls: list[StreamCall] = []
        self.released = False  # over budget or finished: later calls recompute / are refused
        self.finished = False

    def nbytes(self) -> int:
        caches = self.steps + [self.tokens_cache, self.frames_cache]
        mel = 0 if self.mel is None else self.mel.numel() * self.mel.element_size()
        return sum(c.nbytes() for c in caches) + mel

    def bytes_after(self, total_frames: int) -> int:
        """What the key/value stores will have allocated after a call over ``total_frames`` frames."""
        stores = self.steps[0].stores
        capacity = stores[0].capacity() if stores else 0
        return self.bytes_per_frame * grown_capacity(capacity, total_frames)

    def release(self) -> None:
        """Free every cached tensor (the request goes on by recomputing)."""
        self.steps = [FrameCache() for _ in self.steps]
        self.tokens_cache, self.frames_cache = FrameCache(), FrameCache()
        self.mel = None
        self.released = True


def new_state(flow: nn.Module, max_bytes: int = DEFAULT_MAX_BYTES) -> FlowStreamState | None:
    """A fresh state for ``flow``, or None when it cannot stream incrementally (`why_not_incremental`)."""
    if why_not_incremental(flow) is not None:
        return None
    return FlowStreamState(flow.decoder.n_steps, _token_granularity(flow), _bytes_per_frame(flow), max_bytes)


def _check_continuation(state: FlowStreamState, ids: torch.Tensor, prompt_feat: torch.Tensor,
                        embedding: torch.Tensor, lookahead: int) -> None:
    if state.finished:
        raise ValueError("this flow stream state already ran its final call: make a new one per request")
    if state.ids is None:
        state.prompt_feat, state.embedding = prompt_feat, embedding
        return
    if not (torch.equal(prompt_feat, state.prompt_feat) and torch.equal(embedding, state.embedding)):
        raise ValueError("a flow stream state was continued with another prompt or speaker embedding")
    # committed frames depend on the tokens up to the look-ahead of the last committed token
    depends = min(state.committed_tokens + lookahead, state.ids.shape[1])
    if ids.shape[1] < depends or not torch.equal(ids[:, :depends], state.ids[:, :depends]):
        raise ValueError("a flow stream state was continued with tokens that do not extend the previous call's")


def _new_mu(flow: nn.Module, state: FlowStreamState, ids: torch.Tensor, first: int, main: int) -> torch.Tensor:
    """mu [1, 80, ratio*(main-first)] of the tokens [first, main); ids after ``main`` are look-ahead context."""
    emb = flow.input_embedding(ids[:, first:].clamp(min=0))
    tokens, context = emb[:, : main - first], emb[:, main - first :]
    context = context if context.shape[1] > 0 else None
    if getattr(flow, "encoder", None) is not None:
        hidden = encoder_stream.encode_new_tokens(flow.encoder, state.tokens_cache, state.frames_cache, first,
                                                  tokens, context)
        mu = flow.encoder_proj(hidden)
    else:
        hidden = encoder_stream.look_ahead_new_tokens(flow.pre_lookahead_layer, tokens, context, state.tokens_cache)
        mu = hidden.repeat_interleave(flow.token_mel_ratio, dim=1)
    return mu.transpose(1, 2).contiguous()


def _new_cond(prompt_feat: torch.Tensor, first: int, end: int, like: torch.Tensor) -> torch.Tensor:
    """cond [1, 80, end-first]: the prompt mel where frames [first, end) overlap it, zeros elsewhere."""
    cond = like.new_zeros(1, end - first, like.shape[1])
    overlap = max(0, min(prompt_feat.shape[1], end) - first)
    if overlap:
        cond[:, :overlap] = prompt_feat[:, first : first + overlap].to(cond.dtype)
    return cond.transpose(1, 2).contiguous()


def serve(flow: nn.Module, state: FlowStreamState | None, streaming: bool, finalize: bool, token: torch.Tensor,
          prompt_token: torch.Tensor, prompt_feat: torch.Tensor, embedding: torch.Tensor,
          noise: torch.Tensor | None) -> torch.Tensor | None:
    """What a flow's ``inference`` asks first: the incremental mel of a streaming call that has a state; None
    means recompute (no state, or the state is over its budget)."""
    if state is None:
        return None
    if not streaming:
        raise ValueError("a flow stream state only serves streaming calls (the full-attention call recomputes)")
    return incremental_inference(flow, state, token, prompt_token, prompt_feat, embedding, finalize=finalize,
                                 noise=noise)


@torch.inference_mode()  # the state's tensors are inference tensors: every use must be inside this mode too
def incremental_inference(
    flow: nn.Module,
    state: FlowStreamState,
    token: torch.Tensor,
    prompt_token: torch.Tensor,
    prompt_feat: torch.Tensor,
    embedding: torch.Tensor,
    finalize: bool = False,
    noise: torch.Tensor | None = None,
) -> torch.Tensor | None:
    """Generated mel [1, 80, T_gen] equal to ``flow.inference(..., streaming=True, finalize=finalize)``, computing
    only the frames after ``state``'s committed ones; ``token`` holds every token so far ([1, N]).
    None: the state is over its memory budget (released): the caller recomputes the call."""
    if token.shape[0] != 1:
        raise ValueError("flow inference takes one utterance at a time (batch 1)")
    ids = torch.cat([prompt_token, token], dim=1).to(torch.long)
    lookahead = flow.pre_lookahead_len
    _check_continuation(state, ids, prompt_feat, embedding, lookahead)
    ratio = flow.token_mel_ratio
    main = ids.shape[1] - (0 if finalize else lookahead)  # tokens that get frames
    total = main * ratio
    first = state.committed_tokens
    if main < first:
        raise ValueError(f"streaming call with {main} tokens after one that committed {first}")
    if state.released or state.bytes_after(total) > state.max_bytes:
        state.release()
        state.finished = finalize
        state.calls.append(StreamCall(total, total, incremental=False))
        return None  # the caller recomputes this call (and the state stays released)
    commit = (main // state.granularity) * state.granularity
    first_frame, commit_frame = first * ratio, commit * ratio
    source = flow.rand_noise if noise is None else noise
    if source.shape[2] < total:
        raise ValueError(f"utterance of {total} mel frames exceeds the {source.shape[2]}-frame noise")

    state.tokens_cache.begin(commit - first)
    state.frames_cache.begin(commit_frame - first_frame)
    for cache in state.steps:
        cache.begin(commit_frame - first_frame)
    spks = flow.speaker_vector(embedding)
    mu = _new_mu(flow, state, ids, first, main)
    z = source[:, :, first_frame:total].to(device=mu.device, dtype=mu.dtype)
    cond = _new_cond(prompt_feat, first_frame, total, mu)
    mask = torch.ones_like(mu[:, :1])
    network = unet_stream if getattr(flow, "encoder", None) is not None else dit_stream
    sampler = flow.decoder

    def velocity(x: torch.Tensor, t: torch.Tensor, step: int) -> torch.Tensor:
        cache = state.steps[step]

        def estimator(x2, mask2, mu2, t2, spks2, cond2, streaming=True):
            return network.forward_new_frames(flow.estimator, cache, first_frame, x2, mu2, t2, spks2, cond2)

        return sampler.guided_velocity(x, mask, mu, t, spks, cond, streaming=True, estimator=estimator)

    new = sampler.integrate(z, velocity)
    mel = new if state.mel is None else torch.cat([state.mel, new], dim=2)

    state.tokens_cache.commit(commit)
    state.frames_cache.commit(commit_frame)
    for cache in state.steps:
        cache.commit(commit_frame)
    state.mel = mel[:, :, :commit_frame]
    state.committed_tokens = commit
    state.ids = ids
    state.calls.append(StreamCall(total, total - first_frame, incremental=True))
    if finalize:
        state.finished = True
        state.release()
    return mel[:, :, prompt_feat.shape[1]:].float()
