"""The v3 DiT estimator evaluated on new frames only, with a per-step `FrameCache` of earlier frames.

Why this is exact (``DiT`` with ``streaming=True`` and an all-ones frame mask, as the flow passes): the input
projection, the AdaLN modulations (from the time embedding only), the feed-forwards and the output head are per
frame; the conv position embedding is two left-padded grouped convs (kernel 31: 30 frames of left context each);
rotary angles depend on the absolute frame position only (the new frames keep their positions); attention lets
a frame see its own and earlier ``static_chunk_size``-frame chunks. The output mask (the last query row of the
attention mask) is all True for an all-ones frame mask, in streaming too (the last chunk sees every key), so it
is left out. Hence frames in complete chunks never change when frames are appended.

Same operations as ``dit.DiT.forward`` in the same order, so results agree to float rounding.
"""

from __future__ import annotations

import torch
import torch.nn.functional as F

from cosydesk.model.dit import DiT, DiTBlock, _CausalConvMish, _modulate, rotate_leading_channels
from cosydesk.model.stream_cache import FrameCache, chunk_visibility


def supports_incremental(estimator: torch.nn.Module) -> str | None:
    """None if `forward_new_frames` computes exactly what ``estimator(..., streaming=True)`` does, else why not."""
    if type(estimator) is not DiT:
        return f"estimator is {type(estimator).__name__}, not the plain DiT"
    if estimator.static_chunk_size <= 0:
        return "estimator has no streaming chunk size (full attention)"
    if any(type(block) is not DiTBlock for block in estimator.transformer_blocks):
        return "DiT blocks were replaced"
    return None


def _conv_mish(layer: _CausalConvMish, h: torch.Tensor, cache: FrameCache) -> torch.Tensor:
    conv, mish = layer[0], layer[1]
    return cache.causal(h, layer.left_pad, lambda full: mish(conv(full)))


def _block(block: DiTBlock, h: torch.Tensor, temb: torch.Tensor, allowed: torch.Tensor,
           rope: tuple[torch.Tensor, torch.Tensor], cache: FrameCache) -> torch.Tensor:
    shift_msa, scale_msa, gate_msa, shift_mlp, scale_mlp, gate_mlp = block.attn_norm(temb)
    attn = block.attn
    normed = _modulate(h, shift_msa, scale_msa)
    cos, sin = rope
    q = attn._split_heads(rotate_leading_channels(attn.to_q(normed), cos, sin))
    k = attn._split_heads(rotate_leading_channels(attn.to_k(normed), cos, sin))
    v = attn._split_heads(attn.to_v(normed))
    keys, values = cache.store().update(k, v)
    mixed = F.scaled_dot_product_attention(q, keys, values, attn_mask=allowed)
    attended = attn.to_out[0](mixed.transpose(1, 2).flatten(2))
    h = h + gate_msa[:, None, :] * attended
    fed = block.ff(_modulate(h, shift_mlp, scale_mlp))
    return h + gate_mlp[:, None, :] * fed


def forward_new_frames(
    estimator: DiT,
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
    temb = estimator.embed_time(t, x.shape[0])
    frames = x.shape[-1]
    embed = estimator.input_embed
    stacked = torch.cat([x, cond, mu, spks[:, :, None].expand(-1, -1, frames)], dim=1)
    h = embed.proj(stacked.transpose(1, 2))
    pos = _conv_mish(embed.conv_pos_embed.conv1, h.transpose(1, 2), cache)
    pos = _conv_mish(embed.conv_pos_embed.conv2, pos, cache)
    h = h + pos.transpose(1, 2)

    allowed = chunk_visibility(first_frame, frames, first_frame + frames, estimator.static_chunk_size, x.device)
    rope = estimator.rotary_embed(frames, x.device, start=first_frame)
    for block in estimator.transformer_blocks:
        h = _block(block, h, temb, allowed, rope, cache)
    return estimator.proj_out(estimator.norm_out(h, temb)).transpose(1, 2)
