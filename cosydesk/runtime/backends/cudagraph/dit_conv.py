"""v3's DiT position convolutions as one Triton kernel each, on the time-major rows the DiT works on.

Why (H200, profile of one first-chunk flow call at 106 frames, bucket 128, ``docs/bench/h200-wave5``): the input
embedding's two causal grouped convolutions (1024 channels, 16 groups, kernel 31, then Mish) ran through cuDNN
as one convolution kernel *per group* behind an NCHW -> NHWC and an NHWC -> NCHW transpose each: 32 convolution
and 64 layout kernels a CFM step, more than half of the flow call's GPU time, for 2 GFLOP a step.

Here a conv + bias + Mish is one kernel over rows [B*T, C]: a program takes BLOCK_T frames of one batch row and
one group, and adds, tap by tap, its [BLOCK_T, group] slice of the input (shifted back by k-1-j frames, zeros
before frame 0: the left padding) times the tap's [group, group] weights. No transposes: the DiT's rows go in
and come out. Numerics as the module in float16: float32 accumulation, the conv output (bias added) rounded to
float16, Mish in float32 rounded to float16.
"""

from __future__ import annotations

import warnings

import torch
import triton
import triton.language as tl
from torch import nn

from cosydesk.model.dit import CausalConvPositionEmbedding, _CausalConvMish
from cosydesk.runtime.backends.cudagraph.conv_kernels import _mish

BLOCK_T = 32


@triton.jit
def causal_group_conv_mish_kernel(x_ptr, w_ptr, b_ptr, out_ptr, T, C: tl.constexpr, CG: tl.constexpr,
                                  K: tl.constexpr, BLOCK: tl.constexpr):
    """out[b*T + t, g*CG + o] = mish(bias + sum_j sum_c x[b*T + t - (K-1) + j, g*CG + c] * w[g, j, c, o])."""
    t = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    g = tl.program_id(1)
    b = tl.program_id(2)
    ch = tl.arange(0, CG)
    acc = tl.zeros([BLOCK, CG], dtype=tl.float32)
    for j in range(K):
        src = t - (K - 1) + j
        ok = (src >= 0) & (src < T)
        x = tl.load(x_ptr + (b * T + src)[:, None] * C + g * CG + ch[None, :], mask=ok[:, None], other=0.0)
        w = tl.load(w_ptr + ((g * K + j) * CG + ch[:, None]) * CG + ch[None, :])  # [CG in, CG out]
        acc = tl.dot(x, w, acc)
    bias = tl.load(b_ptr + g * CG + ch).to(tl.float32)
    dtype = out_ptr.dtype.element_ty
    y = (acc + bias[None, :]).to(dtype).to(tl.float32)
    y = _mish(y).to(dtype)
    tl.store(out_ptr + (b * T + t)[:, None] * C + g * CG + ch[None, :], y, mask=(t < T)[:, None])


def group_taps(conv: nn.Conv1d) -> torch.Tensor:
    """Conv1d weight [C, CG, K] -> [G, K, CG (in), CG (out)] contiguous: one tap's weights are one tile."""
    channels, group, k = conv.weight.shape
    groups = channels // group
    return conv.weight.detach().view(groups, group, group, k).permute(0, 3, 2, 1).contiguous()


def causal_group_conv_mish(rows: torch.Tensor, taps: torch.Tensor, bias: torch.Tensor) -> torch.Tensor:
    """mish(causal grouped conv(rows) + bias) for rows [B, T, C] contiguous -> [B, T, C]."""
    batch, frames, channels = rows.shape
    groups, k, group, _ = taps.shape
    out = torch.empty_like(rows)
    grid = (triton.cdiv(frames, BLOCK_T), groups, batch)
    causal_group_conv_mish_kernel[grid](rows, taps, bias, out, frames, C=channels, CG=group, K=k, BLOCK=BLOCK_T,
                                        num_warps=4)
    return out


class RowPositionConvs(nn.Module):
    """Stands in for ``CausalConvPositionEmbedding`` (same input and output [B, T, C]): its two conv + Mish as
    ``causal_group_conv_mish``. Holds the taps layout only (the module's conv weights are not kept twice)."""

    def __init__(self, embed: CausalConvPositionEmbedding):
        super().__init__()
        self.taps1 = nn.Parameter(group_taps(embed.conv1[0]), requires_grad=False)
        self.bias1 = nn.Parameter(embed.conv1[0].bias.detach().clone(), requires_grad=False)
        self.taps2 = nn.Parameter(group_taps(embed.conv2[0]), requires_grad=False)
        self.bias2 = nn.Parameter(embed.conv2[0].bias.detach().clone(), requires_grad=False)

    def forward(self, h: torch.Tensor) -> torch.Tensor:
        h = h.contiguous()
        return causal_group_conv_mish(causal_group_conv_mish(h, self.taps1, self.bias1), self.taps2, self.bias2)


def supports(embed: nn.Module) -> bool:
    """The layout the kernel takes: two ``_CausalConvMish`` with biased grouped convs whose group width is a power of
    two of at least 16 (``tl.dot``), float16 / bfloat16 weights (float32 ``tl.dot`` runs at TF32 on a GPU)."""
    if type(embed) is not CausalConvPositionEmbedding:
        return False
    convs = [embed.conv1, embed.conv2]
    if not all(type(c) is _CausalConvMish and type(c[1]) is nn.Mish for c in convs):
        return False
    for wrapped in convs:
        conv = wrapped[0]
        channels, group, k = conv.weight.shape
        if (conv.bias is None or conv.stride != (1,) or conv.dilation != (1,) or conv.padding != (0,)
                or conv.groups * group != channels or wrapped.left_pad != k - 1):
            return False
        if group < 16 or group & (group - 1) or conv.weight.dtype not in (torch.float16, torch.bfloat16):
            return False
    return True


def use_row_position_convs(dit: nn.Module, frames: int = 96) -> bool:
    """Replace the DiT's ``input_embed.conv_pos_embed`` with ``RowPositionConvs`` when ``supports`` it and the kernel
    agrees with the module on a random input of ``frames`` frames (else a warning says why, and the module stays);
    returns whether it did."""
    embed = dit.input_embed.conv_pos_embed
    if not supports(embed):
        return False
    try:
        rows = RowPositionConvs(embed)
        weight = embed.conv1[0].weight
        g = torch.Generator(device=weight.device).manual_seed(0)
        h = torch.randn(2, frames, weight.shape[0], device=weight.device, generator=g).to(weight.dtype)
        with torch.inference_mode():
            ours, ref = rows(h).float(), embed(h).float()
        error = float((ours - ref).abs().max() / ref.abs().max().clamp_min(1e-6))
        if not error < 1e-2:
            raise ValueError(f"kernel disagrees with the module (relative error {error:.3g})")
    except Exception as exc:  # noqa: BLE001 - any failure: the module stays
        warnings.warn(f"DiT position conv kernel unavailable ({type(exc).__name__}: {exc}"[:300] + ")", RuntimeWarning,
                      stacklevel=2)
        return False
    dit.input_embed.conv_pos_embed = rows
    return True
