"""Triton kernels for CosyVoice3's DiT block (cudagraph backend): 5 kernels per block instead of ~19.

Why (H200, v3 short sentences, kernel profile at cbc79ed, ``docs/bench/h200-wave10``): the 22 compiled blocks
of a CFM step ran q, k and v as three cuBLAS products and six Inductor element-wise kernels around them and cuDNN's
attention (LayerNorm + modulation, the rotation, the attention mask's layout, mask + gate + residual + the next
LayerNorm, GELU, gate + residual), ~1.15 ms a step of 1-5 us kernels. Here a block is:

1. ``modulated_ln_linear``: affine-free LayerNorm (float32 statistics, one pass) modulated by the block's
   shift / scale as the prologue of the fused q/k/v product, bias and the rotation of head 0's q and k channels
   (interleaved pairs) in its epilogue.
2. ``flow_kernels.masked_attention`` (the U-Net's kernel: same layout, boolean mask, float32 softmax).
3. ``linear_gate_residual``: output projection + bias, zeroed at the frames the mask's last query row hides,
   times the attention gate, + residual.
4. ``modulated_ln_linear`` (tanh-GELU form): LayerNorm + modulation + first feed-forward product + bias + GELU.
5. ``linear_gate_residual``: second feed-forward product + bias, times the feed-forward gate, + residual.

Numerics follow ``cosydesk.model.dit.DiTBlock.modulated`` in float16: float32 accumulation, statistics and
rotation, float16 where the module rounds (modulated input, each projection, GELU, the gated branch, the sums).
The modulations are rows of the prepared time table (``dit_prepared.py``), read per batch row inside the
kernels. ``COSYDESK_FLOW_KERNELS=0`` keeps the compiled blocks, as for the U-Net.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch
import triton
import triton.language as tl

from cosydesk.model.dit import ADALN_EPS, DiTBlock
from cosydesk.runtime.backends.cudagraph.capture import capture_graphs
from cosydesk.runtime.backends.cudagraph.dit_prepared import ModulatedDiTBlock
from cosydesk.runtime.backends.cudagraph.flow_kernels import masked_attention
from cosydesk.runtime.backends.cudagraph.fuse import concat_parameters
from cosydesk.runtime.backends.cudagraph.pdl import launch_args, pdl_available, pdl_start, pdl_wait
from cosydesk.runtime.backends.cudagraph.variants import first_working

# the tanh-GELU's constants (sqrt(2 / pi) and 0.044715, as torch's) are literals in the kernel: compiled Triton
# rejects plain globals (the interpreter does not)


@triton.jit
def modulated_ln_linear_kernel(x_ptr, mod_ptr, mod_stride, shift_at, scale_at, w_ptr, bias_ptr, cos_ptr, sin_ptr,
                               out_ptr, M, N, T, eps, K: tl.constexpr, ROT: tl.constexpr, ROT_EVERY: tl.constexpr,
                               GELU: tl.constexpr, BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr,
                               BLOCK_K: tl.constexpr, PDL: tl.constexpr):
    """out[M, N] = (LN(x) * (1 + scale_b) + shift_b) @ W[N, K]^T + bias, then (ROT > 0) the first ROT channels of
    every ROT_EVERY-wide column group rotated by pairs with cos/sin [T, ROT/2], or (GELU) tanh-GELU. Row r is
    frame r % T of batch row r // T; shift_b / scale_b are mod[b, shift_at:+K] / mod[b, scale_at:+K]."""
    pdl_start(PDL)
    pdl_wait(PDL)  # the loop reads x with the weights: wait first
    rows = tl.program_id(0) * BLOCK_M + tl.arange(0, BLOCK_M)
    cols = tl.program_id(1) * BLOCK_N + tl.arange(0, BLOCK_N)
    rmask = rows < M
    batch = rows // T
    kk = tl.arange(0, BLOCK_K)
    # statistics in one pass: per-chunk mean and squared deviations, merged (Chan et al.)
    mean = tl.zeros([BLOCK_M], dtype=tl.float32)
    m2 = tl.zeros([BLOCK_M], dtype=tl.float32)
    for k0 in range(0, K, BLOCK_K):
        xc = tl.load(x_ptr + rows[:, None] * K + (k0 + kk)[None, :], mask=rmask[:, None], other=0.0).to(tl.float32)
        chunk_mean = tl.sum(xc, 1) / BLOCK_K
        dev = xc - chunk_mean[:, None]
        chunk_m2 = tl.sum(dev * dev, 1)
        delta = chunk_mean - mean
        mean += delta * (BLOCK_K / (k0 + BLOCK_K))
        m2 += chunk_m2 + delta * delta * (k0 * BLOCK_K / (k0 + BLOCK_K))
    rstd = 1.0 / tl.sqrt(m2 / K + eps)
    acc = tl.zeros([BLOCK_M, BLOCK_N], dtype=tl.float32)
    for k0 in range(0, K, BLOCK_K):
        ks = k0 + kk
        x = tl.load(x_ptr + rows[:, None] * K + ks[None, :], mask=rmask[:, None], other=0.0)
        at = batch[:, None] * mod_stride + ks[None, :]
        shift = tl.load(mod_ptr + at + shift_at, mask=rmask[:, None], other=0.0).to(tl.float32)
        scale = tl.load(mod_ptr + at + scale_at, mask=rmask[:, None], other=0.0).to(tl.float32)
        h = ((x.to(tl.float32) - mean[:, None]) * rstd[:, None] * (1.0 + scale) + shift).to(x.dtype)
        w = tl.load(w_ptr + cols[None, :] * K + ks[:, None], mask=cols[None, :] < N, other=0.0)  # [BLOCK_K, BLOCK_N]
        acc = tl.dot(h, w, acc)
    acc += tl.load(bias_ptr + cols, mask=cols < N, other=0.0).to(tl.float32)[None, :]
    y = acc.to(out_ptr.dtype.element_ty)
    if ROT > 0:  # pairs (2i, 2i+1) of the leading ROT channels of each ROT_EVERY-wide group (q | k | v)
        yf = tl.reshape(y.to(tl.float32), (BLOCK_M, BLOCK_N // 2, 2))
        even, odd = tl.split(yf)
        pair_cols = tl.program_id(1) * BLOCK_N + 2 * tl.arange(0, BLOCK_N // 2)
        local = pair_cols % ROT_EVERY
        rotates = (local < ROT) & (pair_cols < 2 * ROT_EVERY)  # q and k only
        at = (rows % T)[:, None] * (ROT // 2) + (local // 2)[None, :]
        cmask = rmask[:, None] & rotates[None, :]
        cos = tl.load(cos_ptr + at, mask=cmask, other=1.0)
        sin = tl.load(sin_ptr + at, mask=cmask, other=0.0)
        turned = tl.reshape(tl.join(even * cos - odd * sin, odd * cos + even * sin), (BLOCK_M, BLOCK_N))
        turns = ((cols % ROT_EVERY) < ROT) & (cols < 2 * ROT_EVERY)
        y = tl.where(turns[None, :], turned.to(y.dtype), y)
    if GELU:
        yf = y.to(tl.float32)
        inner = 0.7978845608028654 * (yf + 0.044715 * yf * yf * yf)
        tanh = 1.0 - 2.0 / (tl.exp(2.0 * inner) + 1.0)
        y = (0.5 * yf * (1.0 + tanh)).to(y.dtype)
    tl.store(out_ptr + rows[:, None] * N + cols[None, :], y, mask=rmask[:, None] & (cols[None, :] < N))


@triton.jit
def linear_gate_residual_kernel(a_ptr, w_ptr, bias_ptr, res_ptr, mod_ptr, mod_stride, gate_at, valid_ptr,
                                valid_stride_b, valid_stride_k, out_ptr, M, N, T, K: tl.constexpr,
                                MASKED: tl.constexpr, BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr,
                                BLOCK_K: tl.constexpr, PDL: tl.constexpr):
    """out[M, N] = res + gate_b * (a @ W[N, K]^T + bias), the product zeroed where (MASKED) valid[b, t] is 0;
    each of product, gated branch and sum rounded to the output type as the module does."""
    pdl_start(PDL)
    pdl_wait(PDL)
    rows = tl.program_id(0) * BLOCK_M + tl.arange(0, BLOCK_M)
    cols = tl.program_id(1) * BLOCK_N + tl.arange(0, BLOCK_N)
    rmask = rows < M
    kk = tl.arange(0, BLOCK_K)
    acc = tl.zeros([BLOCK_M, BLOCK_N], dtype=tl.float32)
    for k0 in range(0, K, BLOCK_K):
        ks = k0 + kk
        a = tl.load(a_ptr + rows[:, None] * K + ks[None, :], mask=rmask[:, None], other=0.0)
        w = tl.load(w_ptr + cols[None, :] * K + ks[:, None], mask=cols[None, :] < N, other=0.0)
        acc = tl.dot(a, w, acc)
    acc += tl.load(bias_ptr + cols, mask=cols < N, other=0.0).to(tl.float32)[None, :]
    omask = rmask[:, None] & (cols[None, :] < N)
    res = tl.load(res_ptr + rows[:, None] * N + cols[None, :], mask=omask, other=0.0)
    y = acc.to(res.dtype)
    batch = rows // T
    if MASKED:
        valid = tl.load(valid_ptr + batch * valid_stride_b + (rows % T) * valid_stride_k, mask=rmask, other=0)
        y = tl.where(valid[:, None] != 0, y, 0.0)
    gate = tl.load(mod_ptr + batch[:, None] * mod_stride + gate_at + cols[None, :], mask=omask, other=0.0)
    branch = (gate.to(tl.float32) * y.to(tl.float32)).to(res.dtype)
    tl.store(out_ptr + rows[:, None] * N + cols[None, :], (res.to(tl.float32) + branch.to(tl.float32)).to(res.dtype),
             mask=omask)


@dataclass(frozen=True)
class DiTTiles:
    """(block_m, block_n, block_k, warps) of the two kernels: the modulated products (q/k/v, first feed-forward)
    and the gated residual products (output projection, second feed-forward)."""

    ln_linear: tuple[int, int, int, int] = (64, 128, 64, 4)
    gate_residual: tuple[int, int, int, int] = (64, 64, 64, 4)


TUNED_TILES = DiTTiles()
SMALL_TILES = DiTTiles(ln_linear=(32, 64, 64, 4), gate_residual=(32, 64, 32, 4))  # 64 KB shared-memory GPUs


def modulated_ln_linear(x: torch.Tensor, modulation: torch.Tensor, shift_at: int, scale_at: int,
                        weight: torch.Tensor, bias: torch.Tensor, frames: int,
                        rope: tuple[torch.Tensor, torch.Tensor] | None = None, rotate_every: int = 0,
                        gelu: bool = False, tile: tuple[int, int, int, int] = TUNED_TILES.ln_linear,
                        pdl: bool = False) -> torch.Tensor:
    """x [M, K] contiguous (M = B * frames) -> [M, N]; ``modulation`` [B, *] holds shift / scale at those offsets;
    ``rope`` (cos, sin) [frames, R/2] float32 rotates the first R channels of each ``rotate_every`` group of q, k."""
    m, k = x.shape
    n = weight.shape[0]
    block_m, block_n, block_k, warps = tile
    if k % block_k:
        raise ValueError(f"width {k} is not a multiple of the {block_k}-wide reduction block")
    out = torch.empty(m, n, device=x.device, dtype=x.dtype)
    cos, sin = rope if rope is not None else (x, x)
    rot = 2 * cos.shape[-1] if rope is not None else 0
    if rot and (rotate_every < rot or block_n % 2):
        raise ValueError(f"{rot} rotated channels need groups at least as wide (got {rotate_every}) and an even tile")
    grid = (triton.cdiv(m, block_m), triton.cdiv(n, block_n))
    modulated_ln_linear_kernel[grid](x, modulation, modulation.stride(0), shift_at, scale_at, weight, bias, cos, sin,
                                     out, m, n, frames, ADALN_EPS, K=k, ROT=rot, ROT_EVERY=max(rotate_every, 1),
                                     GELU=gelu, BLOCK_M=block_m, BLOCK_N=block_n, BLOCK_K=block_k,
                                     num_warps=warps, **launch_args(pdl))
    return out


def linear_gate_residual(a: torch.Tensor, weight: torch.Tensor, bias: torch.Tensor, res: torch.Tensor,
                         modulation: torch.Tensor, gate_at: int, frames: int, valid: torch.Tensor | None = None,
                         tile: tuple[int, int, int, int] = TUNED_TILES.gate_residual,
                         pdl: bool = False) -> torch.Tensor:
    """res + gate * (a @ weight.T + bias) for a [M, K], res [M, N] contiguous; ``valid`` [B, frames] (bool/uint8,
    any strides) zeroes the product at hidden frames; the gate is ``modulation[b, gate_at:+N]``."""
    m, k = a.shape
    n = weight.shape[0]
    block_m, block_n, block_k, warps = tile
    if k % block_k:
        raise ValueError(f"width {k} is not a multiple of the {block_k}-wide reduction block")
    out = torch.empty_like(res)
    flags = valid.view(torch.uint8) if valid is not None and valid.dtype == torch.bool else valid
    grid = (triton.cdiv(m, block_m), triton.cdiv(n, block_n))
    linear_gate_residual_kernel[grid](a, weight, bias, res, modulation, modulation.stride(0), gate_at,
                                      flags if flags is not None else a, flags.stride(0) if flags is not None else 0,
                                      flags.stride(1) if flags is not None else 0, out, m, n, frames, K=k,
                                      MASKED=flags is not None, BLOCK_M=block_m, BLOCK_N=block_n, BLOCK_K=block_k,
                                      num_warps=warps, **launch_args(pdl))
    return out


def fuse_qkv(block: DiTBlock) -> tuple[torch.Tensor, torch.Tensor]:
    """One [3 * inner, dim] weight and [3 * inner] bias for ``block``'s q/k/v (the modules' parameters re-pointed
    at their slices, so the weights exist once); kept on the block as ``w_qkv`` / ``b_qkv``."""
    if not hasattr(block, "w_qkv"):
        attn = block.attn
        block.w_qkv = concat_parameters([attn.to_q.weight, attn.to_k.weight, attn.to_v.weight])
        block.b_qkv = concat_parameters([attn.to_q.bias, attn.to_k.bias, attn.to_v.bias])
    return block.w_qkv, block.b_qkv


def dit_block_forward(block: DiTBlock, h: torch.Tensor, modulation: torch.Tensor, allowed: torch.Tensor,
                      rope: tuple[torch.Tensor, torch.Tensor], pdl: bool = False,
                      tiles: DiTTiles = TUNED_TILES) -> torch.Tensor:
    """``DiTBlock.modulated`` as the five kernels: h [B, T, dim], ``modulation`` [B, 6 * dim] (the block's six
    chunks side by side, any row stride), ``allowed`` [B, 1, T, T] bool, ``rope`` (cos, sin) [T, R/2] -> [B, T, dim]."""
    batch, frames, dim = h.shape
    attn, ff = block.attn, block.ff.ff
    if modulation.stride(-1) != 1:
        modulation = modulation.contiguous()
    w_qkv, b_qkv = fuse_qkv(block)
    inner = attn.heads * attn.dim_head
    mask = allowed[:, 0]
    rows = h.reshape(batch * frames, dim).contiguous()
    qkv = modulated_ln_linear(rows, modulation, 0, dim, w_qkv, b_qkv, frames, rope=rope, rotate_every=inner,
                              tile=tiles.ln_linear, pdl=pdl)
    heads = masked_attention(qkv, mask, batch, frames, attn.heads, attn.dim_head, pdl=pdl)
    last_query = mask[:, -1, :]  # [B, T]: where the module reads its output mask
    rows = linear_gate_residual(heads, attn.to_out[0].weight, attn.to_out[0].bias, rows, modulation, 2 * dim, frames,
                                valid=last_query, tile=tiles.gate_residual, pdl=pdl)
    hidden = modulated_ln_linear(rows, modulation, 3 * dim, 4 * dim, ff[0][0].weight, ff[0][0].bias, frames,
                                 gelu=True, tile=tiles.ln_linear, pdl=pdl)
    rows = linear_gate_residual(hidden, ff[2].weight, ff[2].bias, rows, modulation, 5 * dim, frames,
                                tile=tiles.gate_residual, pdl=pdl)
    return rows.view(batch, frames, dim)


class KernelDiTBlock(ModulatedDiTBlock):
    """A ``ModulatedDiTBlock`` running ``dit_block_forward`` (``pdl`` and ``tiles`` set by ``use_dit_kernels``);
    a subclass, so ``compile.ESTIMATOR_BLOCKS`` (exact types) leaves it uncompiled."""

    pdl = False
    tiles = TUNED_TILES

    def forward(self, h: torch.Tensor, modulation: torch.Tensor, allowed: torch.Tensor, query_valid: torch.Tensor,
                rope: tuple[torch.Tensor, torch.Tensor]) -> torch.Tensor:
        return dit_block_forward(self.block, h, modulation, allowed, rope, self.pdl, self.tiles)


def supports_block(block: DiTBlock) -> bool:
    """Blocks the kernels take: float16/bfloat16 contiguous weights (float32 ``tl.dot`` runs as TF32 on a GPU),
    widths that the 64-wide reduction blocks divide, the rotation inside head 0."""
    attn, ff = block.attn, block.ff.ff
    weights = (attn.to_q.weight, attn.to_out[0].weight, ff[0][0].weight, ff[2].weight)
    dim, hidden = attn.to_q.weight.shape[1], ff[0][0].weight.shape[0]
    return (all(w.is_contiguous() for w in weights) and weights[0].dtype in (torch.float16, torch.bfloat16)
            and dim % 64 == 0 and hidden % 64 == 0 and attn.dim_head in (32, 64, 128))


def use_dit_kernels(estimator, frames: int = 96) -> int:
    """Switch every ``ModulatedDiTBlock`` of a ``PreparedDiT`` to the kernels; returns how many. One block is
    first run both ways on random inputs of ``frames`` frames (on CUDA also captured): with PDL where available
    and the tuned tiles, then without PDL, then with the small tiles; if none works or agrees with the module,
    nothing is switched and a warning says why."""
    wrappers = [m for m in estimator.modules() if type(m) is ModulatedDiTBlock and supports_block(m.block)]
    if not wrappers:
        return 0
    probe = wrappers[0].block
    rope = estimator.dit.rotary_embed(frames, probe.attn.to_q.weight.device)
    pdl = pdl_available(probe.attn.to_q.weight.device)
    variants = [(pdl, TUNED_TILES), (False, TUNED_TILES), (False, SMALL_TILES)][0 if pdl else 1:]
    chosen = first_working(variants, lambda pdl, tiles: _trial(probe, frames, rope, pdl, tiles), "DiT Triton kernels",
                           "the DiT keeps its compiled blocks")
    if chosen is None:
        return 0
    for wrapper in wrappers:
        fuse_qkv(wrapper.block)
        wrapper.__class__ = KernelDiTBlock
        wrapper.pdl, wrapper.tiles = chosen
    return len(wrappers)


def _trial(block: DiTBlock, frames: int, rope, pdl: bool, tiles: DiTTiles) -> str | None:
    """Why the kernels cannot stand in for ``block`` with these launch settings, or None when they can."""
    try:
        weight = block.attn.to_q.weight
        dim = weight.shape[1]
        g = torch.Generator(device=weight.device).manual_seed(0)
        h = torch.randn(2, frames, dim, device=weight.device, generator=g).to(weight.dtype)
        modulation = (0.1 * torch.randn(2, 6 * dim, device=weight.device, generator=g)).to(weight.dtype)
        allowed = torch.ones(2, 1, frames, frames, dtype=torch.bool, device=weight.device)
        allowed[1, :, :, frames - 8:] = False  # padded keys of batch row 1, hidden output frames
        query_valid = allowed[:, 0, -1, :, None]
        with torch.inference_mode():
            ours = dit_block_forward(block, h, modulation, allowed, rope, pdl, tiles).float()
            ref = block.modulated(h, modulation.chunk(6, dim=-1), allowed, query_valid, rope).float()
        error = float((ours - ref).abs().max() / (ref - h.float()).abs().max().clamp_min(1e-6))
        if not error < 5e-2:
            return f"kernels disagree with the module (relative error {error:.3g})"
        if weight.device.type == "cuda":
            capture_graphs([("trial", lambda: dit_block_forward(block, h, modulation, allowed, rope, pdl, tiles))],
                           weight.device)
    except Exception as exc:  # noqa: BLE001 - any failure means: try the next variant
        return f"{type(exc).__name__}: ...{str(exc)[-300:]}"  # a compile error names its cause last
    return None
