"""Runtime rewrites of the U-Net estimator (v1/v2) for the graph backend; same math as ``cosydesk.model.unet``.

- ``fuse_estimator_attention``: q, k and v as one GEMM instead of three. The estimator runs 56 attention blocks
  per step and 10 steps per chunk: two fewer kernels per block is ~1,100 fewer kernel launches per chunk. The
  fused weight is one tensor; the modules' q/k/v parameters are re-pointed at its slices (weights held once).
- ``convs_as_gemm``: every stride-1 Conv1d of kernel > 1 becomes one GEMM over k shifted copies of its input.
  cuDNN runs the estimator's 31 such convs per step as NCHW->NHWC transpose, conv, transpose back; compiled,
  the shifted copies are one fused Triton kernel and the product one cuBLAS GEMM (same float32 accumulation).
- ``mask_group_norms``: v1's non-causal blocks normalise with GroupNorm over channels *and time*, so padding a
  request to a graph bucket would change the statistics and every valid frame (measured: 5 % mel error on the
  H200 before this). The rewrite takes the statistics over valid frames only: identical for an unpadded input,
  and padding-invariant, so v1 can use the same bucketed graphs as v2/v3.
- ``speaker_projection_without_cublas``: a product that ran outside the graphs on every request (the speaker
  embedding's projection, [1, 192] x [192, 80]) as a float32 multiply-and-sum. As a cuBLAS call it made cuBLAS
  allocate its 32 MiB workspace for each new stream a request ran on (the H200 bench: a 42 MB mapping during the
  first sentence, on v2 and v3). The other one, v2's encoder projection, runs inside the encoder graphs
  (``GraphedEncoder(projection=...)``).
"""

from __future__ import annotations

from collections.abc import Sequence

import torch
import torch.nn.functional as F

from cosydesk.model.unet import ConvNormMish, Fp32GroupNorm, LeftPaddedConv1d, SelfAttention


def concat_parameters(parameters: Sequence[torch.Tensor]) -> torch.Tensor:
    """One tensor of ``parameters`` stacked along dim 0; each parameter's data is re-pointed at its slice, so
    the weights exist once and the original modules keep working."""
    fused = torch.cat([p.data for p in parameters], dim=0)
    start = 0
    for p in parameters:
        rows = p.shape[0]
        p.data = fused[start:start + rows]
        start += rows
    return fused


class FusedSelfAttention(SelfAttention):
    """SelfAttention with ``w_qkv`` [3*inner, dim]: same math, one projection GEMM."""

    w_qkv: torch.Tensor

    def forward(self, x: torch.Tensor, allowed: torch.Tensor) -> torch.Tensor:
        batch, frames, _ = x.shape
        qkv = F.linear(x, self.w_qkv).view(batch, frames, 3, self.heads, self.dim_head)
        q, k, v = qkv.permute(2, 0, 3, 1, 4).unbind(0)  # each [B, heads, T, dim_head]
        out = F.scaled_dot_product_attention(q, k, v, attn_mask=allowed.unsqueeze(1))
        out = out.transpose(1, 2).reshape(batch, frames, self.heads * self.dim_head)
        return self.to_out[0](out)


def fuse_estimator_attention(root: torch.nn.Module) -> int:
    """Turn every bias-free ``SelfAttention`` under ``root`` into a ``FusedSelfAttention``; returns the count."""
    count = 0
    for module in root.modules():
        if type(module) is not SelfAttention:
            continue
        projections = (module.to_q, module.to_k, module.to_v)
        if any(p.bias is not None for p in projections):
            continue
        module.w_qkv = concat_parameters([p.weight for p in projections])  # plain attribute: not saved
        module.__class__ = FusedSelfAttention
        count += 1
    return count


def masked_group_norm(x: torch.Tensor, mask: torch.Tensor, norm: torch.nn.GroupNorm) -> torch.Tensor:
    """GroupNorm of x [B, C, T] with float32 statistics over the frames where mask [B, 1, T] is 1."""
    batch, channels, frames = x.shape
    groups = norm.num_groups
    xg = x.float().view(batch, groups, channels // groups, frames)
    m = mask.float().view(batch, 1, 1, frames)
    count = m.sum(dim=(2, 3), keepdim=True) * (channels // groups)
    mean = (xg * m).sum(dim=(2, 3), keepdim=True) / count
    var = ((xg - mean) * m).pow(2).sum(dim=(2, 3), keepdim=True) / count
    y = ((xg - mean) * torch.rsqrt(var + norm.eps)).view(batch, channels, frames)
    return (y * norm.weight.float().view(1, -1, 1) + norm.bias.float().view(1, -1, 1)).to(x.dtype)


class MaskedConvNormMish(ConvNormMish):
    """Non-causal ConvNormMish whose GroupNorm ignores masked (padded) frames."""

    def forward(self, x: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
        conv, norm, mish = self.block
        return mish(masked_group_norm(conv(x * mask), mask, norm)) * mask


def mask_group_norms(root: torch.nn.Module) -> int:
    """Turn every GroupNorm ``ConvNormMish`` under ``root`` into a ``MaskedConvNormMish``; returns the count."""
    count = 0
    for module in root.modules():
        if type(module) is ConvNormMish and isinstance(module.block[1], Fp32GroupNorm):
            module.__class__ = MaskedConvNormMish
            count += 1
    return count


class GemmConv1d(torch.nn.Conv1d):
    """Stride-1 Conv1d computed as weight [O, C*k] @ (k shifted copies of the zero-padded input) [B, C*k, T]."""

    pad_left: int
    pad_right: int

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        k = self.kernel_size[0]
        padded = F.pad(x, (self.pad_left, self.pad_right))
        frames = padded.shape[-1] - (k - 1)
        shifted = torch.stack([padded[..., j:j + frames] for j in range(k)], dim=2).flatten(1, 2)  # (c, j) order
        out = torch.matmul(self.weight.flatten(1), shifted)
        return out if self.bias is None else out + self.bias.unsqueeze(-1)


def convs_as_gemm(root: torch.nn.Module) -> int:
    """Turn every plain stride-1, kernel > 1, ungrouped Conv1d under ``root`` (LeftPaddedConv1d included) into a
    ``GemmConv1d`` with the same weights and padding; returns the count."""
    count = 0
    for module in root.modules():
        if type(module) not in (torch.nn.Conv1d, LeftPaddedConv1d):
            continue
        if (module.kernel_size[0] < 2 or module.stride != (1,) or module.dilation != (1,) or module.groups != 1
                or module.padding_mode != "zeros" or isinstance(module.padding, str)):
            continue
        if type(module) is LeftPaddedConv1d:
            left, right = module.left_context, 0
        else:
            left = right = module.padding[0]
        module.__class__ = GemmConv1d
        module.pad_left, module.pad_right = left, right
        count += 1
    return count


class ReducedLinear(torch.nn.Linear):
    """``nn.Linear`` computed as an elementwise product and a sum in float32: for a projection of one row no cuBLAS
    handle (and so no per-stream cuBLAS workspace) is needed, and the accumulation is float32 as cuBLAS's."""

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        out = (x.float().unsqueeze(-2) * self.weight.float()).sum(-1)
        if self.bias is not None:
            out = out + self.bias.float()
        return out.to(x.dtype)


def speaker_projection_without_cublas(flow: torch.nn.Module) -> bool:
    """Make ``flow.spk_embed_affine_layer`` (every version's flow has one) a ``ReducedLinear``; returns whether
    it did."""
    layer = getattr(flow, "spk_embed_affine_layer", None)
    if type(layer) is not torch.nn.Linear:
        return False
    layer.__class__ = ReducedLinear
    return True
