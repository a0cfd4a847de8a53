"""The token side of the streaming flow on new tokens only: the look-ahead conv (v2, v3) and v2's upsampling
conformer encoder, with `FrameCache` state from the earlier calls of the request.

Why this is exact in a non-final streaming call: the token embeddings and ``embed`` layers are per token; the
look-ahead conv's first conv sees a token and the next ``pre_lookahead_len`` ones, which a non-final call always
has (the withheld look-ahead tokens), its second conv is left-padded; the conformer layers use chunk masks
(``static_chunk_size`` tokens, all left chunks) with relative positions, whose scores depend only on
query - key; the upsampling is nearest x2 followed by a left-padded conv; the up-encoders use chunk masks of
2x the chunk in frames; ``after_norm`` is per frame. So tokens in complete chunks never change when tokens are
appended, and each layer only needs the keys/values and conv contexts of the tokens already done.

Two caches per request: ``tokens`` (look-ahead conv, conformer layers, upsampling conv - token positions) and
``frames`` (up-encoders - frame positions).
"""

from __future__ import annotations

import torch
import torch.nn.functional as F

from cosydesk.model.stream_cache import FrameCache, chunk_visibility
from cosydesk.model.transformer import ConformerEncoderLayer, PreLookaheadLayer, UpsampleConformerEncoder


def supports_incremental(encoder: torch.nn.Module) -> str | None:
    """None if `encode_new_tokens` computes exactly what ``encoder(..., streaming=True)`` does, else why not."""
    if type(encoder) is not UpsampleConformerEncoder:
        return f"flow encoder is {type(encoder).__name__}, not the plain UpsampleConformerEncoder"
    if encoder.static_chunk_size <= 0:
        return "flow encoder has no streaming chunk size (full attention)"
    layers = list(encoder.encoders) + list(encoder.up_encoders)
    if any(type(layer) is not ConformerEncoderLayer for layer in layers):
        return "flow encoder layers were replaced"
    return None


def look_ahead_new_tokens(
    layer: PreLookaheadLayer, x: torch.Tensor, context: torch.Tensor | None, cache: FrameCache
) -> torch.Tensor:
    """`PreLookaheadLayer` on new tokens x [1, n, C]; ``context`` [1, <=L, C] = the tokens after them (None or fewer
    than L at the end of the stream: zeros, as the full layer); the second conv's left context from ``cache``."""
    h = x.transpose(1, 2)
    missing = layer.pre_lookahead_len
    if context is not None and context.size(1) > 0:
        h = torch.cat([h, context.transpose(1, 2).to(h.dtype)], dim=2)
        missing -= context.size(1)
    h = F.leaky_relu(layer.conv1(F.pad(h, (0, missing))), 0.01)
    left = layer.conv2.kernel_size[0] - 1
    h = cache.causal(h, left, layer.conv2)
    return h.transpose(1, 2) + x


def _conformer_stack(layers, xs: torch.Tensor, first: int, chunk: int, embed, cache: FrameCache) -> torch.Tensor:
    n_new = xs.size(1)
    n_keys = first + n_new
    mask = chunk_visibility(first, n_new, n_keys, chunk, xs.device).unsqueeze(0)  # [1, n, K]
    # relative positions of the new queries (the last n of the K positions) against every key
    pos_emb = embed.pos_enc.relative(n_keys, n_new, xs.device, xs.dtype)
    for layer in layers:
        xs = layer(xs, mask, pos_emb, kv_cache=cache.store())
    return xs


def encode_new_tokens(
    encoder: UpsampleConformerEncoder,
    tokens_cache: FrameCache,
    frames_cache: FrameCache,
    first_token: int,
    xs: torch.Tensor,
    context: torch.Tensor | None,
) -> torch.Tensor:
    """Streaming-mode encoder output [1, stride*n, D] for the new tokens xs [1, n, input_size] at positions
    [first_token, first_token + n); ``context``: the withheld look-ahead token embeddings (None at the end)."""
    chunk = encoder.static_chunk_size
    stride = encoder.up_stride
    xs = encoder.embed(xs)
    context = encoder.embed(context) if context is not None and context.size(1) > 0 else None
    xs = look_ahead_new_tokens(encoder.pre_lookahead_layer, xs, context, tokens_cache)
    xs = _conformer_stack(encoder.encoders, xs, first_token, chunk, encoder.embed, tokens_cache)

    up = encoder.up_layer
    # the up conv's 2*stride zero frames of left padding are 2 tokens' worth of repeated frames
    hidden = tokens_cache.causal(
        xs.transpose(1, 2), 2, lambda full: up.conv(torch.repeat_interleave(full, stride, dim=2))
    )
    xs = encoder.up_embed(hidden.transpose(1, 2))
    xs = _conformer_stack(encoder.up_encoders, xs, first_token * stride, chunk * stride, encoder.up_embed, frames_cache)
    if encoder.normalize_before:
        xs = encoder.after_norm(xs)
    return xs
