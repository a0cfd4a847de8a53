"""1-D U-Net velocity estimators of the v1 and v2 flow decoders (the "Matcha" U-Net family).

Both estimators map ``(x, mask, mu, t, spks, cond) -> velocity`` with x/mu/cond ``[B, 80, T]``, mask ``[B, 1, T]``,
t ``[B]`` and spks ``[B, 80]``:

* `ConditionalDecoder` (v1): non-causal; every level but the last halves the time axis (stride-2 conv) and the
  up path restores it with a transposed conv, cropping to the skip length (odd T works).
* `CausalConditionalDecoder` (v2): same layout with left-padded convs and LayerNorm inside the conv blocks;
  with ``streaming=True`` self-attention only sees its own and earlier ``static_chunk_size``-frame chunks.

Sub-module attribute names follow the official state-dict keys (``down_blocks.0.1.0.attn1.to_q`` ...), which is
the file format we load; the code itself is ours.

What this module must not do: draw random numbers, read data-dependent values back to the host, or branch on
tensor values in ``forward`` (the estimator is meant to be captured in CUDA graphs). It is dtype-agnostic: norm
statistics are computed in float32 so a float16 run cannot overflow there.
"""

from __future__ import annotations

import math
from typing import Any

import torch
import torch.nn.functional as F
from torch import nn

from cosydesk.model.norms import Fp32GroupNorm, Fp32LayerNorm

# ----------------------------------------------------------------------------------------------------------------
# Small numeric building blocks
# ----------------------------------------------------------------------------------------------------------------


class SwapTimeAndChannels(nn.Module):
    """[B, C, T] <-> [B, T, C]; sits between a conv and a LayerNorm (parameterless, keeps key indices aligned)."""

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return x.transpose(1, 2)


class LeftPaddedConv1d(nn.Conv1d):
    """Stride-1 Conv1d that sees only the current and past frames (kernel_size-1 zeros on the left)."""

    def __init__(self, in_channels: int, out_channels: int, kernel_size: int):
        super().__init__(in_channels, out_channels, kernel_size, padding=0)
        self.left_context = kernel_size - 1

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return super().forward(F.pad(x, (self.left_context, 0)))


def sinusoidal_time_features(t: torch.Tensor, dim: int, scale: float = 1000.0) -> torch.Tensor:
    """[B] flow times -> [B, dim] features [sin | cos] of scale*t at dim/2 log-spaced frequencies (float32)."""
    half = dim // 2
    step = math.log(10000.0) / (half - 1)
    freqs = torch.exp(torch.arange(half, device=t.device, dtype=torch.float32) * -step)
    angles = scale * t.float().reshape(-1, 1) * freqs.unsqueeze(0)
    return torch.cat([angles.sin(), angles.cos()], dim=-1)


class TimestepEmbedding(nn.Module):
    """Linear -> SiLU -> Linear on the sinusoidal time features."""

    def __init__(self, in_channels: int, time_embed_dim: int):
        super().__init__()
        self.linear_1 = nn.Linear(in_channels, time_embed_dim)
        self.act = nn.SiLU()
        self.linear_2 = nn.Linear(time_embed_dim, time_embed_dim)

    def forward(self, features: torch.Tensor) -> torch.Tensor:
        return self.linear_2(self.act(self.linear_1(features)))


# ----------------------------------------------------------------------------------------------------------------
# Convolutional blocks
# ----------------------------------------------------------------------------------------------------------------


class ConvNormMish(nn.Module):
    """Masked conv k3 -> norm -> Mish.

    Non-causal: centred conv + GroupNorm(8) (keys block.0 / block.1).
    Causal: left-padded conv + LayerNorm over channels (keys block.0 / block.2; 1 and 3 are transposes).
    """

    def __init__(self, dim: int, dim_out: int, causal: bool, groups: int = 8):
        super().__init__()
        if causal:
            self.block = nn.Sequential(
                LeftPaddedConv1d(dim, dim_out, 3),
                SwapTimeAndChannels(),
                Fp32LayerNorm(dim_out),
                SwapTimeAndChannels(),
                nn.Mish(),
            )
        else:
            self.block = nn.Sequential(nn.Conv1d(dim, dim_out, 3, padding=1), Fp32GroupNorm(groups, dim_out), nn.Mish())

    def forward(self, x: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
        return self.block(x * mask) * mask


class ResnetBlock1D(nn.Module):
    """Two ConvNormMish blocks with the time embedding added in between, plus a 1x1 residual projection."""

    def __init__(self, dim: int, dim_out: int, time_emb_dim: int, causal: bool):
        super().__init__()
        self.mlp = nn.Sequential(nn.Mish(), nn.Linear(time_emb_dim, dim_out))
        self.block1 = ConvNormMish(dim, dim_out, causal)
        self.block2 = ConvNormMish(dim_out, dim_out, causal)
        self.res_conv = nn.Conv1d(dim, dim_out, 1)

    def forward(self, x: torch.Tensor, mask: torch.Tensor, time_emb: torch.Tensor) -> torch.Tensor:
        hidden = self.block1(x, mask) + self.mlp(time_emb).unsqueeze(-1)
        return self.block2(hidden, mask) + self.res_conv(x * mask)


class Downsample1D(nn.Module):
    """Halve the time axis: Conv1d k3, stride 2, padding 1 (T -> ceil(T/2))."""

    def __init__(self, dim: int):
        super().__init__()
        self.conv = nn.Conv1d(dim, dim, 3, 2, 1)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.conv(x)


class Upsample1D(nn.Module):
    """Double the time axis: ConvTranspose1d k4, stride 2, padding 1 (T -> 2T)."""

    def __init__(self, dim: int):
        super().__init__()
        self.conv = nn.ConvTranspose1d(dim, dim, 4, 2, 1)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.conv(x)


# ----------------------------------------------------------------------------------------------------------------
# Transformer block (the subset of the diffusers BasicTransformerBlock these models use)
# ----------------------------------------------------------------------------------------------------------------


class SelfAttention(nn.Module):
    """Multi-head self-attention with bias-free q/k/v, an output projection with bias, boolean key mask."""

    def __init__(self, dim: int, heads: int, dim_head: int):
        super().__init__()
        inner = heads * dim_head
        self.heads = heads
        self.dim_head = dim_head
        self.to_q = nn.Linear(dim, inner, bias=False)
        self.to_k = nn.Linear(dim, inner, bias=False)
        self.to_v = nn.Linear(dim, inner, bias=False)
        self.to_out = nn.ModuleList([nn.Linear(inner, dim), nn.Dropout(0.0)])

    def forward(self, x: torch.Tensor, allowed: torch.Tensor) -> torch.Tensor:
        """x [B, T, C]; allowed bool [B, T, T] (query, key) -> [B, T, C]."""
        batch, frames, _ = x.shape

        def split_heads(proj: torch.Tensor) -> torch.Tensor:
            return proj.view(batch, frames, self.heads, self.dim_head).transpose(1, 2)

        q, k, v = split_heads(self.to_q(x)), split_heads(self.to_k(x)), split_heads(self.to_v(x))
        # Every query row keeps at least one allowed key (see attention_allowed), so masked weights are exactly 0,
        # as with the official additive -1e10 bias.
        out = F.scaled_dot_product_attention(q, k, v, attn_mask=allowed.unsqueeze(1))
        out = out.transpose(1, 2).reshape(batch, frames, self.heads * self.dim_head)
        return self.to_out[0](out)


class GeluProjection(nn.Module):
    """Linear followed by exact (erf) GELU; the first stage of the feed-forward."""

    def __init__(self, dim: int, inner: int):
        super().__init__()
        self.proj = nn.Linear(dim, inner)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return F.gelu(self.proj(x))


class FeedForward(nn.Module):
    """dim -> 4*dim (GELU) -> dim."""

    def __init__(self, dim: int, mult: int = 4):
        super().__init__()
        self.net = nn.ModuleList([GeluProjection(dim, dim * mult), nn.Dropout(0.0), nn.Linear(dim * mult, dim)])

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        for layer in self.net:
            x = layer(x)
        return x


class BasicTransformerBlock(nn.Module):
    """Pre-norm block: x += attn(LN(x)); x += ff(LN(x)). (norm2/attn2 of diffusers are absent here.)"""

    def __init__(self, dim: int, num_heads: int, head_dim: int, act_fn: str = "gelu"):
        super().__init__()
        if act_fn != "gelu":
            raise ValueError(f"estimator act_fn {act_fn!r} is not supported (only 'gelu' is used by CosyVoice)")
        self.norm1 = Fp32LayerNorm(dim)
        self.attn1 = SelfAttention(dim, num_heads, head_dim)
        self.norm3 = Fp32LayerNorm(dim)
        self.ff = FeedForward(dim)

    def forward(self, x: torch.Tensor, allowed: torch.Tensor) -> torch.Tensor:
        x = x + self.attn1(self.norm1(x), allowed)
        return x + self.ff(self.norm3(x))


def attention_allowed(frame_mask: torch.Tensor, chunk_size: int) -> torch.Tensor:
    """Which keys each query may see: bool [B, T, T] from a [B, 1, T] frame mask.

    chunk_size 0: every valid frame. chunk_size > 0: additionally only frames of the query's own and earlier
    chunks (all left chunks). A query row with no allowed key is opened completely, as the official mask code
    does; written branch-free so it can be graph-captured.
    """
    valid = frame_mask.bool()
    frames = valid.shape[-1]
    if chunk_size > 0:
        position = torch.arange(frames, device=valid.device)
        chunk_end = (torch.div(position, chunk_size, rounding_mode="floor") + 1) * chunk_size
        allowed = valid & (position.unsqueeze(0) < chunk_end.unsqueeze(1)).unsqueeze(0)
    else:
        allowed = valid
    allowed = allowed | ~allowed.any(dim=-1, keepdim=True)
    return allowed.expand(valid.shape[0], frames, frames)


# ----------------------------------------------------------------------------------------------------------------
# The U-Net
# ----------------------------------------------------------------------------------------------------------------


def _transformer_stack(dim: int, n_blocks: int, num_heads: int, head_dim: int, act_fn: str) -> nn.ModuleList:
    return nn.ModuleList([BasicTransformerBlock(dim, num_heads, head_dim, act_fn) for _ in range(n_blocks)])


def _run_transformers(stack: nn.ModuleList, x: torch.Tensor, allowed: torch.Tensor) -> torch.Tensor:
    hidden = x.transpose(1, 2)
    for block in stack:
        hidden = block(hidden, allowed)
    return hidden.transpose(1, 2)


class ConditionalDecoder(nn.Module):
    """v1 estimator: U-Net over [x, mu, spks, cond] (4 x 80 = in_channels), full attention."""

    causal = False

    def __init__(
        self,
        in_channels: int = 320,
        out_channels: int = 80,
        channels: tuple[int, ...] | list[int] = (256, 256),
        attention_head_dim: int = 64,
        n_blocks: int = 1,
        num_mid_blocks: int = 2,
        num_heads: int = 4,
        act_fn: str = "gelu",
        static_chunk_size: int = 0,
        num_decoding_left_chunks: int = -1,
    ):
        super().__init__()
        channels = tuple(int(c) for c in channels)
        self.in_channels = in_channels
        self.out_channels = out_channels
        # The official chunk mask ignores the left-chunk limit (always all left chunks); kept for reference only.
        self.static_chunk_size = int(static_chunk_size)
        self.num_decoding_left_chunks = int(num_decoding_left_chunks)
        time_dim = channels[0] * 4
        self.time_mlp = TimestepEmbedding(in_channels, time_dim)
        causal = self.causal

        def stack(dim: int) -> nn.ModuleList:
            return _transformer_stack(dim, n_blocks, num_heads, attention_head_dim, act_fn)

        def same_length_conv(dim: int) -> nn.Module:
            return LeftPaddedConv1d(dim, dim, 3) if causal else nn.Conv1d(dim, dim, 3, padding=1)

        self.down_blocks = nn.ModuleList()
        level_in = in_channels
        for level, width in enumerate(channels):
            last = level == len(channels) - 1
            resample = same_length_conv(width) if last else Downsample1D(width)
            self.down_blocks.append(
                nn.ModuleList([ResnetBlock1D(level_in, width, time_dim, causal), stack(width), resample])
            )
            level_in = width

        self.mid_blocks = nn.ModuleList()
        for _ in range(num_mid_blocks):
            width = channels[-1]
            self.mid_blocks.append(nn.ModuleList([ResnetBlock1D(width, width, time_dim, causal), stack(width)]))

        # Up path mirrors the down path; each level eats the concatenation [x, skip] (hence 2x input width).
        up_widths = channels[::-1] + (channels[0],)
        self.up_blocks = nn.ModuleList()
        for level in range(len(up_widths) - 1):
            width_in, width = up_widths[level] * 2, up_widths[level + 1]
            last = level == len(up_widths) - 2
            resample = same_length_conv(width) if last else Upsample1D(width)
            self.up_blocks.append(nn.ModuleList([ResnetBlock1D(width_in, width, time_dim, causal), stack(width), resample]))

        self.final_block = ConvNormMish(up_widths[-1], up_widths[-1], causal)
        self.final_proj = nn.Conv1d(up_widths[-1], out_channels, 1)

    @classmethod
    def from_config(cls, node: Any) -> "ConditionalDecoder":
        """Build from the yaml `estimator` Node (sizes from its kwargs only)."""
        kwargs = dict(
            in_channels=node.get("in_channels", 320),
            out_channels=node.get("out_channels", 80),
            channels=node.get("channels", (256, 256)),
            attention_head_dim=node.get("attention_head_dim", 64),
            n_blocks=node.get("n_blocks", 1),
            num_mid_blocks=node.get("num_mid_blocks", 2),
            num_heads=node.get("num_heads", 4),
            act_fn=node.get("act_fn", "gelu"),
        )
        if cls.causal:
            kwargs["static_chunk_size"] = node.get("static_chunk_size", 50)
            kwargs["num_decoding_left_chunks"] = node.get("num_decoding_left_chunks", 2)
        return cls(**kwargs)

    def forward(
        self,
        x: torch.Tensor,
        mask: torch.Tensor,
        mu: torch.Tensor,
        t: torch.Tensor,
        spks: torch.Tensor,
        cond: torch.Tensor,
        streaming: bool = False,
    ) -> torch.Tensor:
        """Velocity [B, 80, T] at flow time t for state x, encoder output mu, speaker spks, prompt cond."""
        time_emb = self.time_mlp(sinusoidal_time_features(t, self.in_channels).to(x.dtype))
        frames = x.shape[-1]
        hidden = torch.cat([x, mu, spks.unsqueeze(-1).expand(-1, -1, frames), cond], dim=1)
        # Chunked attention only exists for the causal estimator in streaming mode (python flag, not data).
        chunk = self.static_chunk_size if (self.causal and streaming) else 0

        allowed_by_mask: dict[int, torch.Tensor] = {}

        def allowed(level_mask: torch.Tensor) -> torch.Tensor:
            # Levels that share a frame mask share the attention mask: built once per forward, not per block
            # (v2's one-level U-Net would otherwise rebuild the same [B, T, T] mask 14 times per step).
            if id(level_mask) not in allowed_by_mask:
                allowed_by_mask[id(level_mask)] = attention_allowed(level_mask, chunk)
            return allowed_by_mask[id(level_mask)]

        skips: list[torch.Tensor] = []
        level_masks = [mask]
        for resnet, transformers, resample in self.down_blocks:
            level_mask = level_masks[-1]
            hidden = resnet(hidden, level_mask, time_emb)
            hidden = _run_transformers(transformers, hidden, allowed(level_mask))
            skips.append(hidden)
            hidden = resample(hidden * level_mask)
            level_masks.append(level_mask[:, :, ::2])

        mid_mask = level_masks[-2]
        for resnet, transformers in self.mid_blocks:
            hidden = resnet(hidden, mid_mask, time_emb)
            hidden = _run_transformers(transformers, hidden, allowed(mid_mask))

        up_mask = mask
        for level, (resnet, transformers, resample) in enumerate(self.up_blocks):
            up_mask = level_masks[-2 - level]
            skip = skips[-1 - level]
            # The transposed conv yields 2*ceil(T/2) frames: crop to the skip length (odd T).
            hidden = torch.cat([hidden[:, :, : skip.shape[-1]], skip], dim=1)
            hidden = resnet(hidden, up_mask, time_emb)
            hidden = _run_transformers(transformers, hidden, allowed(up_mask))
            hidden = resample(hidden * up_mask)

        hidden = self.final_block(hidden, up_mask)
        return self.final_proj(hidden * up_mask) * mask


class CausalConditionalDecoder(ConditionalDecoder):
    """v2 estimator: causal convs, LayerNorm blocks, optional chunked attention (``streaming=True``)."""

    causal = True

    def __init__(self, *args: Any, static_chunk_size: int = 50, num_decoding_left_chunks: int = 2, **kwargs: Any):
        super().__init__(
            *args, static_chunk_size=static_chunk_size, num_decoding_left_chunks=num_decoding_left_chunks, **kwargs
        )


def build_estimator(node: Any) -> ConditionalDecoder:
    """Estimator for a yaml `estimator` Node: ConditionalDecoder (v1) or CausalConditionalDecoder (v2)."""
    classes = {"ConditionalDecoder": ConditionalDecoder, "CausalConditionalDecoder": CausalConditionalDecoder}
    if node.class_name not in classes:
        raise ValueError(f"unsupported flow estimator {node.target}")
    return classes[node.class_name].from_config(node)
