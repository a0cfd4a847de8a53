"""CosyVoice3 flow-matching estimator: a diffusion transformer (DiT) over mel frames.

What it computes (official v3 behaviour, pinned by the v3-tiny fixtures):
  velocity[B,80,T] = DiT(x, mask, mu, t, spks, cond)
  1. time embedding: sinusoid of 1000*t (256 features, [sin, cos]) -> Linear -> SiLU -> Linear;
  2. input embedding: Linear over the channel concatenation [x, cond, mu, spks], plus a causal
     convolutional position embedding (two grouped convs, kernel 31, left padding, Mish) as a residual;
  3. `depth` blocks of AdaLN-modulated attention + tanh-GELU feed-forward;
     rotary position embedding is applied to the projected q/k *before* the head split, so only the
     first dim_head channels (head 0) rotate, with interleaved pairs (2i, 2i+1);
  4. final AdaLN (chunk order scale, shift) and a Linear back to 80 channels.

Masks: the padding mask [B,1,T] limits the keys; in streaming mode frames also see only their own and
earlier chunks of `static_chunk_size` frames. The attention output is zeroed at frames where the last
query row of the mask is False (masked frames are *not* zero in the output).

What it must not do: no host syncs or data-dependent Python branches in `forward` (it gets captured in
CUDA graphs); no third-party rotary package; no fp16 overflow - LayerNorm statistics, the rotation and
the time sinusoid are computed in fp32, and attention goes through `scaled_dot_product_attention`,
whose fused kernels keep the softmax in fp32.
"""

from __future__ import annotations

import math

import torch
import torch.nn.functional as F
from torch import nn

from cosydesk.model.config import Node

TIME_FEATURES = 256  # width of the sinusoidal time features (hard-coded upstream)
TIME_SCALE = 1000.0  # t in [0, 1] is stretched to [0, 1000] before the sinusoid
POS_CONV_KERNEL = 31
POS_CONV_GROUPS = 16
ADALN_EPS = 1e-6
ROPE_BASE = 10000.0


def _norm_fp32(x: torch.Tensor) -> torch.Tensor:
    """Affine-free LayerNorm over the last dim with statistics in fp32 (fp16 squares overflow at |x|>256)."""
    return F.layer_norm(x.float(), (x.shape[-1],), eps=ADALN_EPS)


def _modulate(x: torch.Tensor, shift: torch.Tensor, scale: torch.Tensor) -> torch.Tensor:
    """LN(x) * (1 + scale) + shift per batch item; shift/scale are [B, dim]. Returns x's dtype."""
    out = _norm_fp32(x) * (1 + scale.float()[:, None, :]) + shift.float()[:, None, :]
    return out.to(x.dtype)


def time_features(t: torch.Tensor, n_features: int = TIME_FEATURES) -> torch.Tensor:
    """[B] times -> [B, n_features] = [sin(1000 t w_i), cos(1000 t w_i)], w_i = 10000^(-i/(half-1)), in fp32."""
    half = n_features // 2
    step = math.log(10000.0) / (half - 1)
    freqs = torch.exp(torch.arange(half, device=t.device, dtype=torch.float32) * -step)
    angles = TIME_SCALE * t.float()[:, None] * freqs[None, :]
    return torch.cat([angles.sin(), angles.cos()], dim=-1)


class TimestepEmbedding(nn.Module):
    """Sinusoidal features of the flow time followed by a two-layer MLP (keys `time_mlp.0`, `time_mlp.2`)."""

    def __init__(self, dim: int, n_features: int = TIME_FEATURES):
        super().__init__()
        self.n_features = n_features
        self.time_mlp = nn.Sequential(nn.Linear(n_features, dim), nn.SiLU(), nn.Linear(dim, dim))

    def forward(self, t: torch.Tensor) -> torch.Tensor:
        features = time_features(t, self.n_features).to(self.time_mlp[0].weight.dtype)
        return self.time_mlp(features)


class _CausalConvMish(nn.Sequential):
    """Grouped Conv1d with left-only zero padding, then Mish (keys `.0.weight`, `.0.bias`)."""

    def __init__(self, dim: int, kernel: int, groups: int):
        super().__init__(nn.Conv1d(dim, dim, kernel, groups=groups), nn.Mish())
        self.left_pad = kernel - 1

    def forward(self, x: torch.Tensor) -> torch.Tensor:  # x [B, C, T]
        return super().forward(F.pad(x, (self.left_pad, 0)))


class CausalConvPositionEmbedding(nn.Module):
    """Two causal grouped convolutions that give every frame a sense of its left neighbourhood."""

    def __init__(self, dim: int, kernel: int = POS_CONV_KERNEL, groups: int = POS_CONV_GROUPS):
        super().__init__()
        self.conv1 = _CausalConvMish(dim, kernel, groups)
        self.conv2 = _CausalConvMish(dim, kernel, groups)

    def forward(self, h: torch.Tensor) -> torch.Tensor:  # h [B, T, C] -> [B, T, C]
        return self.conv2(self.conv1(h.transpose(1, 2))).transpose(1, 2)


class InputEmbedding(nn.Module):
    """Projects the per-frame concatenation [x, cond, mu, spks] to the model width and adds the conv position embedding."""

    def __init__(self, in_features: int, dim: int):
        super().__init__()
        self.proj = nn.Linear(in_features, dim)
        self.conv_pos_embed = CausalConvPositionEmbedding(dim)

    def forward(self, x: torch.Tensor, cond: torch.Tensor, mu: torch.Tensor, spks: torch.Tensor) -> torch.Tensor:
        """x, cond, mu [B, C, T] (channels first), spks [B, S] -> [B, T, dim]."""
        frames = x.shape[-1]
        stacked = torch.cat([x, cond, mu, spks[:, :, None].expand(-1, -1, frames)], dim=1)
        h = self.proj(stacked.transpose(1, 2))
        return h + self.conv_pos_embed(h)


class RotaryTable(nn.Module):
    """Holds the rotary inverse frequencies (persistent buffer `inv_freq`, stored in flow.pt) and makes cos/sin tables."""

    def __init__(self, rotary_dim: int, base: float = ROPE_BASE):
        super().__init__()
        exponents = torch.arange(0, rotary_dim, 2, dtype=torch.float32) / rotary_dim
        self.register_buffer("inv_freq", 1.0 / (base ** exponents), persistent=True)

    @property
    def rotary_dim(self) -> int:
        return 2 * self.inv_freq.shape[0]

    def forward(self, n_frames: int, device: torch.device, start: int = 0) -> tuple[torch.Tensor, torch.Tensor]:
        """cos and sin of pos * inv_freq[i], each [T, rotary_dim/2], fp32. Positions are start..start+T-1 (0.. in a
        whole-utterance forward, whatever the mask; later positions for the new frames of a streaming call)."""
        positions = torch.arange(start, start + n_frames, device=device, dtype=torch.float32)
        angles = positions[:, None] * self.inv_freq.float()[None, :]
        return angles.cos(), angles.sin()


def rotate_leading_channels(h: torch.Tensor, cos: torch.Tensor, sin: torch.Tensor) -> torch.Tensor:
    """Rotate channel pairs (2i, 2i+1) of the first 2*len(inv_freq) channels of h [B, T, C]; the rest pass through."""
    width = 2 * cos.shape[-1]
    head, tail = h[..., :width].float(), h[..., width:]
    pairs = head.unflatten(-1, (-1, 2))
    even, odd = pairs[..., 0], pairs[..., 1]
    rotated = torch.stack([even * cos - odd * sin, odd * cos + even * sin], dim=-1).flatten(-2)
    return torch.cat([rotated.to(h.dtype), tail], dim=-1)


class AdaLayerNormZero(nn.Module):
    """Per-block modulation: Linear(SiLU(t)) -> 6 chunks (shift_msa, scale_msa, gate_msa, shift_mlp, scale_mlp, gate_mlp)."""

    def __init__(self, dim: int):
        super().__init__()
        self.linear = nn.Linear(dim, 6 * dim)

    def forward(self, temb: torch.Tensor) -> tuple[torch.Tensor, ...]:
        return self.linear(F.silu(temb)).chunk(6, dim=-1)


class AdaLayerNormZeroFinal(nn.Module):
    """Output modulation: Linear(SiLU(t)) -> 2 chunks in the order (scale, shift), applied to LN(x)."""

    def __init__(self, dim: int):
        super().__init__()
        self.linear = nn.Linear(dim, 2 * dim)

    def forward(self, h: torch.Tensor, temb: torch.Tensor) -> torch.Tensor:
        return self.apply_modulation(h, self.linear(F.silu(temb)))

    @staticmethod
    def apply_modulation(h: torch.Tensor, modulation: torch.Tensor) -> torch.Tensor:
        """LN(h) modulated by ``modulation`` [B, 2*dim], the linear's output (scale, shift)."""
        scale, shift = modulation.chunk(2, dim=-1)
        return _modulate(h, shift, scale)


class Attention(nn.Module):
    """Multi-head self-attention with biased q/k/v, RoPE on the leading dim_head projected channels."""

    def __init__(self, dim: int, heads: int, dim_head: int):
        super().__init__()
        self.heads = heads
        self.dim_head = dim_head
        inner = heads * dim_head
        self.to_q = nn.Linear(dim, inner)
        self.to_k = nn.Linear(dim, inner)
        self.to_v = nn.Linear(dim, inner)
        self.to_out = nn.ModuleList([nn.Linear(inner, dim)])

    def _split_heads(self, h: torch.Tensor) -> torch.Tensor:  # [B, T, H*D] -> [B, H, T, D]
        return h.unflatten(-1, (self.heads, self.dim_head)).transpose(1, 2)

    def forward(
        self, h: torch.Tensor, allowed: torch.Tensor, query_valid: torch.Tensor, rope: tuple[torch.Tensor, torch.Tensor]
    ) -> torch.Tensor:
        """h [B,T,dim]; allowed [B,1,T,T] bool (query, key); query_valid [B,T,1] bool; rope = (cos, sin)."""
        return self.attend(self.to_q(h), self.to_k(h), self.to_v(h), allowed, query_valid, rope)

    def attend(
        self, q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, allowed: torch.Tensor, query_valid: torch.Tensor,
        rope: tuple[torch.Tensor, torch.Tensor],
    ) -> torch.Tensor:
        """The attention given the projections q, k, v [B,T,H*D]; ``allowed`` a bool mask or its additive form."""
        cos, sin = rope
        q = self._split_heads(rotate_leading_channels(q, cos, sin))
        k = self._split_heads(rotate_leading_channels(k, cos, sin))
        mixed = F.scaled_dot_product_attention(q, k, self._split_heads(v), attn_mask=allowed)
        out = self.to_out[0](mixed.transpose(1, 2).flatten(2))
        return out.masked_fill(~query_valid, 0.0)


class FeedForward(nn.Module):
    """Linear -> tanh-GELU -> Linear, laid out as `ff.0.0` / `ff.2` like the official checkpoint."""

    def __init__(self, dim: int, mult: float):
        super().__init__()
        hidden = int(dim * mult)
        self.ff = nn.Sequential(
            nn.Sequential(nn.Linear(dim, hidden), nn.GELU(approximate="tanh")),
            nn.Identity(),  # slot of the training-time dropout; keeps the official index of the output layer
            nn.Linear(hidden, dim),
        )

    def forward(self, h: torch.Tensor) -> torch.Tensor:
        return self.ff(h)


class DiTBlock(nn.Module):
    """x += gate_msa * attn(mod(LN x)); x += gate_mlp * ff(mod(LN x)), all modulations from the time embedding."""

    def __init__(self, dim: int, heads: int, dim_head: int, ff_mult: float):
        super().__init__()
        self.attn_norm = AdaLayerNormZero(dim)
        self.attn = Attention(dim, heads, dim_head)
        self.ff = FeedForward(dim, ff_mult)

    def forward(
        self,
        h: torch.Tensor,
        temb: torch.Tensor,
        allowed: torch.Tensor,
        query_valid: torch.Tensor,
        rope: tuple[torch.Tensor, torch.Tensor],
    ) -> torch.Tensor:
        return self.modulated(h, self.attn_norm(temb), allowed, query_valid, rope)

    def modulated(
        self,
        h: torch.Tensor,
        modulations: tuple[torch.Tensor, ...],
        allowed: torch.Tensor,
        query_valid: torch.Tensor,
        rope: tuple[torch.Tensor, torch.Tensor],
    ) -> torch.Tensor:
        """The block given its six modulations ([B, dim] each, ``attn_norm``'s chunks) instead of the time embedding."""
        h, fed = self.attend_and_feed(h, modulations, allowed, query_valid, rope)
        return h + modulations[5][:, None, :] * fed

    def attend_and_feed(self, h: torch.Tensor, modulations: tuple[torch.Tensor, ...], allowed: torch.Tensor,
                        query_valid: torch.Tensor, rope: tuple[torch.Tensor, torch.Tensor]
                        ) -> tuple[torch.Tensor, torch.Tensor]:
        """``modulated`` short of its last residual: (h after the attention residual, the feed-forward's output),
        which ``modulated`` combines as h + gate_mlp * fed."""
        shift_msa, scale_msa, gate_msa, shift_mlp, scale_mlp, _gate_mlp = modulations
        attended = self.attn(_modulate(h, shift_msa, scale_msa), allowed, query_valid, rope)
        h = h + gate_msa[:, None, :] * attended
        return h, self.ff(_modulate(h, shift_mlp, scale_mlp))


def attention_masks(mask: torch.Tensor, chunk_frames: int) -> tuple[torch.Tensor, torch.Tensor]:
    """Padding mask [B,1,T] -> (allowed [B,1,T,T] bool, query_valid [B,T,1] bool).

    chunk_frames > 0 adds the streaming rule: a frame sees keys up to the end of its own chunk.
    A query row with no allowed key is opened completely (official behaviour; avoids a NaN softmax).
    query_valid is the last query row, which is where the official code reads the output mask.
    """
    keys = mask.bool()  # [B, 1, T]
    frames = keys.shape[-1]
    if chunk_frames > 0:
        pos = torch.arange(frames, device=mask.device)
        chunk_end = (pos // chunk_frames + 1) * chunk_frames
        visible = pos[None, :] < chunk_end[:, None]  # [T(query), T(key)]
        allowed = keys & visible[None]
    else:
        allowed = keys.expand(-1, frames, -1)
    allowed = allowed | ~allowed.any(dim=-1, keepdim=True)
    query_valid = allowed[:, -1, :, None]
    return allowed[:, None], query_valid


class DiT(nn.Module):
    """The v3 estimator. Attribute names follow the official `decoder.estimator.*` state-dict keys."""

    def __init__(
        self,
        dim: int,
        depth: int = 8,
        heads: int = 8,
        dim_head: int = 64,
        ff_mult: float = 4,
        mel_dim: int = 80,
        mu_dim: int | None = None,
        spk_dim: int | None = None,
        out_channels: int | None = None,
        static_chunk_size: int = 50,
        num_decoding_left_chunks: int = -1,
    ):
        super().__init__()
        mu_dim = mel_dim if mu_dim is None else mu_dim
        spk_dim = 0 if spk_dim is None else spk_dim
        self.dim = dim
        self.mel_dim = mel_dim
        self.out_channels = mel_dim if out_channels is None else out_channels
        self.static_chunk_size = int(static_chunk_size)
        # Kept for reference only: the official chunk mask ignores a left-chunk limit.
        self.num_decoding_left_chunks = int(num_decoding_left_chunks)

        self.time_embed = TimestepEmbedding(dim)
        self.input_embed = InputEmbedding(2 * mel_dim + mu_dim + spk_dim, dim)
        self.rotary_embed = RotaryTable(dim_head)
        self.transformer_blocks = nn.ModuleList([DiTBlock(dim, heads, dim_head, ff_mult) for _ in range(depth)])
        self.norm_out = AdaLayerNormZeroFinal(dim)
        self.proj_out = nn.Linear(dim, mel_dim)

    @classmethod
    def from_config(cls, node: Node) -> "DiT":
        """Build from the yaml node `flow.decoder.estimator` (a `cosyvoice.flow.DiT.dit.DiT` Node)."""
        return cls(
            dim=int(node["dim"]),
            depth=int(node.get("depth", 8)),
            heads=int(node.get("heads", 8)),
            dim_head=int(node.get("dim_head", 64)),
            ff_mult=node.get("ff_mult", 4),
            mel_dim=int(node.get("mel_dim", 80)),
            mu_dim=node.get("mu_dim"),
            spk_dim=node.get("spk_dim"),
            out_channels=node.get("out_channels"),
            static_chunk_size=int(node.get("static_chunk_size", 50)),
            num_decoding_left_chunks=int(node.get("num_decoding_left_chunks", -1)),
        )

    # Pieces exposed for tests and for callers that want intermediates.
    def embed_time(self, t: torch.Tensor, batch: int) -> torch.Tensor:
        """t: 0-d, [1] or [B] -> time embedding [B, dim]."""
        return self.time_embed(t.reshape(-1).expand(batch))

    def embed_input(self, x: torch.Tensor, cond: torch.Tensor, mu: torch.Tensor, spks: torch.Tensor) -> torch.Tensor:
        """Channels-first x, cond, mu [B, C, T] and spks [B, S] -> frame features [B, T, dim]."""
        return self.input_embed(x, cond, mu, spks)

    def masks(self, mask: torch.Tensor, streaming: bool) -> tuple[torch.Tensor, torch.Tensor]:
        return attention_masks(mask, self.static_chunk_size if streaming else 0)

    def run_blocks(
        self, h: torch.Tensor, temb: torch.Tensor, mask: torch.Tensor, streaming: bool = False, n_blocks: int | None = None
    ) -> torch.Tensor:
        """Apply the first n_blocks (default all) transformer blocks to frame features h [B, T, dim]."""
        allowed, query_valid = self.masks(mask, streaming)
        rope = self.rotary_embed(h.shape[1], h.device)
        for block in self.transformer_blocks[:n_blocks]:
            h = block(h, temb, allowed, query_valid, rope)
        return h

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
        """x, mu, cond [B,80,T]; mask [B,1,T] (1 = valid); t 0-d or [B]; spks [B,80] -> velocity [B,80,T]."""
        temb = self.embed_time(t, x.shape[0])
        h = self.embed_input(x, cond, mu, spks)
        h = self.run_blocks(h, temb, mask, streaming)
        return self.proj_out(self.norm_out(h, temb)).transpose(1, 2)
