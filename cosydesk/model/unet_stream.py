"""The v2 causal U-Net estimator evaluated on new frames only, with a per-step `FrameCache` of earlier frames.

Why this is exact (``CausalConditionalDecoder`` with ``streaming=True`` and an all-ones frame mask, which is
what the flow passes): every convolution is left-padded (a frame sees itself and the k-1 frames before it), the
norms (LayerNorm over channels), the time MLP, the 1x1 convs and the feed-forwards are per frame, and attention
lets a frame see only its own and earlier ``static_chunk_size``-frame chunks. So the velocity of frames in
complete chunks never changes when frames are appended, and a later call only needs, per layer, the last k-1
inputs of each conv and the keys/values of each attention layer for the frames already done.

Only the one-level layout (``channels`` of length 1, the released v2 config) is supported: a deeper U-Net
downsamples with a centred stride-2 conv, which looks one frame to the right. `supports_incremental` says so.

Same operations as ``unet.ConditionalDecoder.forward`` in the same order (the mask multiplications by ones are
left out: they are exact no-ops), so results agree to float rounding.
"""

from __future__ import annotations

import torch
import torch.nn.functional as F

from cosydesk.model.stream_cache import FrameCache, chunk_visibility
from cosydesk.model.unet import (
    BasicTransformerBlock,
    CausalConditionalDecoder,
    ConvNormMish,
    LeftPaddedConv1d,
    ResnetBlock1D,
    sinusoidal_time_features,
)


def supports_incremental(estimator: torch.nn.Module) -> str | None:
    """None if `forward_new_frames` computes exactly what ``estimator(..., streaming=True)`` does, else why not."""
    if type(estimator) is not CausalConditionalDecoder:
        return f"estimator is {type(estimator).__name__}, not the plain CausalConditionalDecoder"
    if len(estimator.down_blocks) != 1:
        return "multi-level U-Net: its stride-2 downsampling conv looks one frame ahead"
    if estimator.static_chunk_size <= 0:
        return "estimator has no streaming chunk size (full attention)"
    return None


def _conv(conv: LeftPaddedConv1d, x: torch.Tensor, cache: FrameCache) -> torch.Tensor:
    return cache.causal(x, conv.left_context, lambda full: conv._conv_forward(full, conv.weight, conv.bias))


def _conv_norm_mish(block: ConvNormMish, x: torch.Tensor, cache: FrameCache) -> torch.Tensor:
    conv, *rest = block.block
    hidden = _conv(conv, x, cache)
    for layer in rest:  # transpose, LayerNorm over channels, transpose, Mish: all per frame
        hidden = layer(hidden)
    return hidden


def _resnet(block: ResnetBlock1D, x: torch.Tensor, time_emb: torch.Tensor, cache: FrameCache) -> torch.Tensor:
    hidden = _conv_norm_mish(block.block1, x, cache) + block.mlp(time_emb).unsqueeze(-1)
    return _conv_norm_mish(block.block2, hidden, cache) + block.res_conv(x)


def _transformer(block: BasicTransformerBlock, x: torch.Tensor, allowed: torch.Tensor,
                 cache: FrameCache) -> torch.Tensor:
    """x [B, n, C] (new frames); allowed bool [n, K] over all keys so far."""
    attn = block.attn1
    batch, frames, _ = x.shape
    h = block.norm1(x)

    def heads(proj: torch.Tensor) -> torch.Tensor:
        return proj.view(batch, frames, attn.heads, attn.dim_head).transpose(1, 2)

    q, k, v = heads(attn.to_q(h)), heads(attn.to_k(h)), heads(attn.to_v(h))
    keys, values = cache.store().update(k, v)
    out = F.scaled_dot_product_attention(q, keys, values, attn_mask=allowed)
    out = out.transpose(1, 2).reshape(batch, frames, attn.heads * attn.dim_head)
    x = x + attn.to_out[0](out)
    return x + block.ff(block.norm3(x))


def _transformers(stack, x: torch.Tensor, allowed: torch.Tensor, cache: FrameCache) -> torch.Tensor:
    hidden = x.transpose(1, 2)
    for block in stack:
        hidden = _transformer(block, hidden, allowed, cache)
    return hidden.transpose(1, 2)


def forward_new_frames(
    estimator: CausalConditionalDecoder,
    cache: FrameCache,
    first_frame: int,
    x: torch.Tensor,
    mu: torch.Tensor,
    t: torch.Tensor,
    spks: torch.Tensor,
    cond: torch.Tensor,
) -> torch.Tensor:
    """Streaming-mode velocity [B, 80, n] of frames [first_frame, first_frame + n) given x/mu/cond [B, 80, n] of
    those frames; earlier frames come from ``cache`` (``cache.begin`` must have been called for this call)."""
    time_emb = estimator.time_mlp(sinusoidal_time_features(t, estimator.in_channels).to(x.dtype))
    frames = x.shape[-1]
    hidden = torch.cat([x, mu, spks.unsqueeze(-1).expand(-1, -1, frames), cond], dim=1)
    allowed = chunk_visibility(first_frame, frames, first_frame + frames, estimator.static_chunk_size, x.device)

    (resnet, stack, resample), = estimator.down_blocks
    hidden = _resnet(resnet, hidden, time_emb, cache)
    hidden = _transformers(stack, hidden, allowed, cache)
    skip = hidden
    hidden = _conv(resample, hidden, cache)

    for resnet, stack in estimator.mid_blocks:
        hidden = _resnet(resnet, hidden, time_emb, cache)
        hidden = _transformers(stack, hidden, allowed, cache)

    (resnet, stack, resample), = estimator.up_blocks
    hidden = torch.cat([hidden, skip], dim=1)
    hidden = _resnet(resnet, hidden, time_emb, cache)
    hidden = _transformers(stack, hidden, allowed, cache)
    hidden = _conv(resample, hidden, cache)

    hidden = _conv_norm_mish(estimator.final_block, hidden, cache)
    return estimator.final_proj(hidden)
