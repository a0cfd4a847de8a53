"""Triton kernels for the U-Net estimator's transformer block (v1/v2): 5 kernels per block instead of ~16.

Why (H200, one CFM step at bucket 128, streaming, profile at 152e929): 886 kernels, 2.7 ms, launch-bound. The
56 transformer blocks per step were ~31 us each: cuBLAS GEMMs of 3-4 us with bias/GELU/residual/LayerNorm as
separate element-wise kernels, and cuDNN attention behind a layout kernel and a memset. Here a block is:

1. ``ln_linear``: LayerNorm (float32 statistics) as the prologue of the q/k/v product.
2. ``masked_attention``: flash-style attention reading q/k/v from that product and the boolean key mask,
   writing heads side by side (the output projection's input layout).
3. ``linear_residual``: output projection + bias + residual.
4. ``ln_linear`` (GELU form): LayerNorm + first feed-forward product + bias + exact GELU.
5. ``linear_residual``: second feed-forward product + bias + residual.

Numerics follow ``cosydesk.model.unet.BasicTransformerBlock`` in float16: float32 accumulation and statistics,
float16 at the module boundaries (normed input, projections, attention output, residual sums), attention
weights cast to float16 for the value product as flash attention does. On by default on CUDA with Triton
(``COSYDESK_FLOW_KERNELS=0`` turns them off); on CPU the kernels run in Triton's interpreter (tests).
Measured on the H200 (probe 13, f48a292, before the tuned tiles): 886 -> 550 kernels and 2.72 -> 2.57 ms per CFM
step at bucket 128; solve output within 5e-4 (relative) of the compiled blocks; with the tuned tiles 2.39 ms
(probe 16). Where a GPU has it, the kernels launch with programmatic dependent launch (``pdl.py``).
Steps 3 and 5 take their whole reduction (512 / 1,024) in one product, the weight columns loaded before the
previous kernel is awaited, over ~128 programs of 32 columns instead of 32 looping ones (probe 32: CFM step
1.93 -> 1.78 ms at bucket 128, 2.45 -> 2.05 ms at 256); GPUs without the shared memory for it keep the loop.
Steps 1 and 2 as one kernel (q/k/v projected per head on the fly inside the attention) was tried and dropped:
every query block recomputes the key rows' k/v, and on the H200 (probe 22) the block took 25.6-31 us at 128
frames and 37.6-47 us at 256 against 23.6 / 30.4 us as five kernels (CFM step 1.94 -> 2.30 ms).
"""

from __future__ import annotations

import functools
from dataclasses import dataclass

import torch
import triton
import triton.language as tl

from cosydesk.model.unet import BasicTransformerBlock
from cosydesk.runtime.backends.cudagraph.capture import capture_graphs
from cosydesk.runtime.backends.cudagraph.fuse import FusedSelfAttention
from cosydesk.runtime.backends.cudagraph.pdl import launch_args, pdl_available, pdl_start, pdl_wait
from cosydesk.runtime.backends.cudagraph.variants import first_working


@triton.jit
def ln_linear_kernel(x_ptr, ln_w_ptr, ln_b_ptr, w_ptr, bias_ptr, out_ptr, M, N, eps, K: tl.constexpr,
                     HAS_BIAS: tl.constexpr, GELU: tl.constexpr, BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr,
                     PDL: tl.constexpr):
    """out[M, N] = LN(x[M, K]) @ W[N, K]^T (+ bias) (GELU); K is the whole row (a power of two)."""
    pdl_start(PDL)
    rows = tl.program_id(0) * BLOCK_M + tl.arange(0, BLOCK_M)
    cols = tl.program_id(1) * BLOCK_N + tl.arange(0, BLOCK_N)
    k = tl.arange(0, K)
    w = tl.load(w_ptr + cols[None, :] * K + k[:, None], mask=cols[None, :] < N, other=0.0)  # [K, BLOCK_N]
    gamma = tl.load(ln_w_ptr + k).to(tl.float32)
    beta = tl.load(ln_b_ptr + k).to(tl.float32)
    pdl_wait(PDL)  # weights and norm parameters are constant: loaded before the input is awaited
    x = tl.load(x_ptr + rows[:, None] * K + k[None, :], mask=rows[:, None] < M, other=0.0)
    xf = x.to(tl.float32)
    mean = tl.sum(xf, 1) / K
    centred = xf - mean[:, None]
    rstd = 1.0 / tl.sqrt(tl.sum(centred * centred, 1) / K + eps)
    h = (centred * rstd[:, None] * gamma[None, :] + beta[None, :]).to(x.dtype)
    acc = tl.dot(h, w)
    if HAS_BIAS:
        acc += tl.load(bias_ptr + cols, mask=cols < N, other=0.0).to(tl.float32)[None, :]
    y = acc.to(x.dtype)
    if GELU:
        yf = y.to(tl.float32)
        y = (0.5 * yf * (1.0 + tl.math.erf(yf * 0.7071067811865476))).to(x.dtype)
    tl.store(out_ptr + rows[:, None] * N + cols[None, :], y, mask=(rows[:, None] < M) & (cols[None, :] < N))


@triton.jit
def linear_residual_kernel(a_ptr, w_ptr, bias_ptr, res_ptr, out_ptr, M, N, K, HAS_BIAS: tl.constexpr,
                           BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr, PDL: tl.constexpr):
    """out[M, N] = res + (a[M, K] @ W[N, K]^T + bias), the product rounded before the add."""
    pdl_start(PDL)
    pdl_wait(PDL)  # the loop loads weights and input together: wait first
    rows = tl.program_id(0) * BLOCK_M + tl.arange(0, BLOCK_M)
    cols = tl.program_id(1) * BLOCK_N + tl.arange(0, BLOCK_N)
    kk = tl.arange(0, BLOCK_K)
    acc = tl.zeros([BLOCK_M, BLOCK_N], dtype=tl.float32)
    for k0 in range(0, K, BLOCK_K):
        ks = k0 + kk
        w = tl.load(w_ptr + cols[None, :] * K + ks[:, None], mask=(cols[None, :] < N) & (ks[:, None] < K), other=0.0)
        a = tl.load(a_ptr + rows[:, None] * K + ks[None, :], mask=(rows[:, None] < M) & (ks[None, :] < K), other=0.0)
        acc = tl.dot(a, w, acc)
    if HAS_BIAS:
        acc += tl.load(bias_ptr + cols, mask=cols < N, other=0.0).to(tl.float32)[None, :]
    omask = (rows[:, None] < M) & (cols[None, :] < N)
    res = tl.load(res_ptr + rows[:, None] * N + cols[None, :], mask=omask, other=0.0)
    y = (res.to(tl.float32) + acc.to(res.dtype).to(tl.float32)).to(res.dtype)
    tl.store(out_ptr + rows[:, None] * N + cols[None, :], y, mask=omask)


@triton.jit
def linear_residual_whole_k_kernel(a_ptr, w_ptr, bias_ptr, res_ptr, out_ptr, M, N, K: tl.constexpr,
                                   HAS_BIAS: tl.constexpr, BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr,
                                   PDL: tl.constexpr):
    """``linear_residual_kernel`` with the whole reduction (K, a power of two) in one product: the program's
    weight columns are loaded before the previous kernel is awaited, and many small programs share the work."""
    pdl_start(PDL)
    rows = tl.program_id(0) * BLOCK_M + tl.arange(0, BLOCK_M)
    cols = tl.program_id(1) * BLOCK_N + tl.arange(0, BLOCK_N)
    ks = tl.arange(0, K)
    w = tl.load(w_ptr + cols[None, :] * K + ks[:, None], mask=cols[None, :] < N, other=0.0)  # [K, BLOCK_N]
    if HAS_BIAS:
        bias = tl.load(bias_ptr + cols, mask=cols < N, other=0.0).to(tl.float32)
    pdl_wait(PDL)  # weights and bias are constant: loaded before the input is awaited
    a = tl.load(a_ptr + rows[:, None] * K + ks[None, :], mask=rows[:, None] < M, other=0.0)
    acc = tl.dot(a, w)
    if HAS_BIAS:
        acc += bias[None, :]
    omask = (rows[:, None] < M) & (cols[None, :] < N)
    res = tl.load(res_ptr + rows[:, None] * N + cols[None, :], mask=omask, other=0.0)
    y = (res.to(tl.float32) + acc.to(res.dtype).to(tl.float32)).to(res.dtype)
    tl.store(out_ptr + rows[:, None] * N + cols[None, :], y, mask=omask)


@triton.jit
def masked_attention_kernel(qkv_ptr, allowed_ptr, out_ptr, T, stride_ab, stride_aq, stride_ak, scale,
                            HEADS: tl.constexpr, D: tl.constexpr, BLOCK_Q: tl.constexpr, BLOCK_K: tl.constexpr,
                            PDL: tl.constexpr):
    """One (query block, batch x head): softmax(q k^T * scale, keys where allowed) v. qkv rows [B*T, 3*H*D]
    (q | k | v, heads side by side), allowed [B, T, T] (uint8, any strides), out rows [B*T, H*D]."""
    pdl_start(PDL)
    pdl_wait(PDL)  # q/k/v and the mask come from earlier kernels
    batch = tl.program_id(1) // HEADS
    head = tl.program_id(1) % HEADS
    inner: tl.constexpr = HEADS * D
    queries = tl.program_id(0) * BLOCK_Q + tl.arange(0, BLOCK_Q)
    d = tl.arange(0, D)
    qmask = queries < T
    q = tl.load(qkv_ptr + (batch * T + queries)[:, None] * (3 * inner) + head * D + d[None, :],
                mask=qmask[:, None], other=0.0)
    m_i = tl.zeros([BLOCK_Q], dtype=tl.float32) - float("inf")
    l_i = tl.zeros([BLOCK_Q], dtype=tl.float32)
    acc = tl.zeros([BLOCK_Q, D], dtype=tl.float32)
    for k0 in range(0, T, BLOCK_K):
        keys = k0 + tl.arange(0, BLOCK_K)
        kmask = keys < T
        base = qkv_ptr + (batch * T + keys)[:, None] * (3 * inner) + head * D + d[None, :]
        k = tl.load(base + inner, mask=kmask[:, None], other=0.0)
        v = tl.load(base + 2 * inner, mask=kmask[:, None], other=0.0)
        ok = tl.load(allowed_ptr + batch * stride_ab + queries[:, None] * stride_aq + keys[None, :] * stride_ak,
                     mask=qmask[:, None] & kmask[None, :], other=0)
        s = tl.dot(q, tl.trans(k)) * scale
        s = tl.where(ok != 0, s, float("-inf"))
        m_new = tl.maximum(m_i, tl.max(s, 1))
        m_safe = tl.where(m_new == float("-inf"), 0.0, m_new)  # no allowed key yet in this row
        p = tl.exp(s - m_safe[:, None])
        alpha = tl.exp(m_i - m_safe)
        l_i = l_i * alpha + tl.sum(p, 1)
        acc = acc * alpha[:, None] + tl.dot(p.to(v.dtype), v)
        m_i = m_new
    out = acc / tl.where(l_i > 0, l_i, 1.0)[:, None]
    tl.store(out_ptr + (batch * T + queries)[:, None] * inner + head * D + d[None, :], out.to(q.dtype),
             mask=qmask[:, None])


@dataclass(frozen=True)
class FlowTiles:
    """Launch tiles (block_m, block_n, warps) of ``ln_linear`` and ``linear_residual``. Defaults from an H200
    sweep at bucket 128 (256 rows, width 256; probe 13): q/k/v 5.8 -> 4.2 us with 32x128 tiles, the second
    feed-forward product 5.9 -> 5.0 us with 64x32 tiles and 8 warps (attention: 64 / 4 warps was best already).
    ``whole_k``: ``linear_residual`` takes its whole-reduction form where it fits (``whole_k_tile``; the looped
    tile then serves only other widths)."""

    ln_linear: tuple[int, int, int] = (32, 128, 4)
    linear_residual: tuple[int, int, int] = (64, 32, 8)
    whole_k: bool = True
    ln_linear_by_rows: bool = True  # ``ln_linear_tile``: narrower row tiles for few rows where they fit


TUNED_TILES = FlowTiles()
# the tuned q/k/v tile needs ~80 KB of shared memory: GPUs with 64 KB per block (Turing: T4, RTX 20xx) take these
SMALL_TILES = FlowTiles(ln_linear=(32, 64, 4), linear_residual=(32, 32, 4), whole_k=False, ln_linear_by_rows=False)
WHOLE_K_COLUMNS = 32
# ``ln_linear`` tiles for up to this many rows (2 x the flow bucket). H200, CFM step graph (probe 37, 7 tiles x 8
# buckets): 16 x 256 / 8 warps took the step 1.47 -> 1.27 ms at bucket 96 and 1.47 -> 1.29 ms at 128 (the
# first chunk's), 16 x 128 / 4 warps 1.63 -> 1.42 ms at 160; from 192 on the tuned 32 x 128 was within 3 % of
# the best.
LN_LINEAR_BY_ROWS = ((256, (16, 256, 8)), (320, (16, 128, 4)))


@functools.lru_cache(maxsize=None)
def _shared_memory_limit(device: torch.device) -> int:
    """Bytes of shared memory one program may use on ``device`` (no limit in the CPU interpreter), less a
    margin for what the compiler adds around the operands."""
    if device.type != "cuda":
        return 1 << 30
    index = device.index if device.index is not None else torch.cuda.current_device()
    return triton.runtime.driver.active.utils.get_device_properties(index)["max_shared_mem"] - 16 * 1024


def _fits_shared_memory(block_m: int, block_n: int, k: int, x: torch.Tensor) -> bool:
    """Whether a program's operands (block_m rows and block_n weight columns of length k, like ``x``) fit."""
    return (block_m + block_n) * k * x.element_size() <= _shared_memory_limit(x.device)


def _ln_linear_columns(block_n: int, k: int) -> int:
    """A program holds K x block_n weights in registers: narrower tiles for rows wider than 256."""
    return block_n // 2 if k > 256 else block_n


def whole_k_tile(rows: int, k: int, a: torch.Tensor) -> tuple[int, int, int] | None:
    """The (block_m, block_n, warps) of ``linear_residual_whole_k_kernel`` for ``rows`` x ``k`` inputs like ``a``,
    or None where it does not apply (k not a power of two in 16..1024, or its operands would not fit in shared
    memory). About 128 programs of 32 columns at the CFM buckets: H200, CFM step graph (probe 32), 256 rows
    16 x 32 / 4 warps, 512 rows 32 x 32 / 8 warps were the fastest of 7 tiles; the step took 1.93 -> 1.78 ms
    (bucket 128) and 2.45 -> 2.05 ms (bucket 256) against the looped kernel's tuned 64 x 32 tile."""
    if k < 16 or k > 1024 or k & (k - 1):
        return None
    block_m = min(64, max(16, triton.next_power_of_2(rows) // 16))
    while block_m >= 16 and not _fits_shared_memory(block_m, WHOLE_K_COLUMNS, k, a):
        block_m //= 2
    if block_m < 16:
        return None
    return block_m, WHOLE_K_COLUMNS, 4 if block_m == 16 else 8


def ln_linear_tile(rows: int, k: int, x: torch.Tensor, tiles: FlowTiles) -> tuple[int, int, int]:
    """The ``ln_linear`` tile for ``rows`` x ``k`` inputs like ``x``: ``LN_LINEAR_BY_ROWS`` where ``tiles`` asks for
    it and the tile's operands fit in the GPU's shared memory (64-100 KB GPUs keep the tuned tile), else
    ``tiles.ln_linear``."""
    if tiles.ln_linear_by_rows:
        for most_rows, tile in LN_LINEAR_BY_ROWS:
            block_m, block_n, _ = tile
            if rows <= most_rows and _fits_shared_memory(block_m, _ln_linear_columns(block_n, k), k, x):
                return tile
    return tiles.ln_linear


def ln_linear(x: torch.Tensor, norm: torch.nn.LayerNorm, weight: torch.Tensor, bias: torch.Tensor | None,
              gelu: bool = False, tile: tuple[int, int, int] = TUNED_TILES.ln_linear,
              pdl: bool = False) -> torch.Tensor:
    """LN(x) @ weight.T (+ bias) (GELU) for x [M, K] contiguous -> [M, N]; ``tile``: block_m, block_n, warps."""
    m, k = x.shape
    n = weight.shape[0]
    out = torch.empty(m, n, device=x.device, dtype=x.dtype)
    block_m, block_n, warps = tile
    block_n = _ln_linear_columns(block_n, k)
    grid = (triton.cdiv(m, block_m), triton.cdiv(n, block_n))
    ln_linear_kernel[grid](x, norm.weight, norm.bias, weight, bias if bias is not None else weight, out, m, n,
                           float(norm.eps), K=k, HAS_BIAS=bias is not None, GELU=gelu, BLOCK_M=block_m,
                           BLOCK_N=block_n, num_warps=warps, **launch_args(pdl))
    return out


def linear_residual(a: torch.Tensor, weight: torch.Tensor, bias: torch.Tensor | None, res: torch.Tensor,
                    tile: tuple[int, int, int] = TUNED_TILES.linear_residual, block_k: int = 64,
                    pdl: bool = False, whole_k: bool = False) -> torch.Tensor:
    """res + a @ weight.T + bias for a [M, K], res [M, N], both contiguous; ``tile``: block_m, block_n, warps of
    the looped kernel; ``whole_k``: the one-product kernel where ``whole_k_tile`` allows it."""
    m, k = a.shape
    n = weight.shape[0]
    out = torch.empty_like(res)
    whole = whole_k_tile(m, k, a) if whole_k else None
    if whole is not None:
        block_m, block_n, warps = whole
        linear_residual_whole_k_kernel[(triton.cdiv(m, block_m), triton.cdiv(n, block_n))](
            a, weight, bias if bias is not None else weight, res, out, m, n, K=k, HAS_BIAS=bias is not None,
            BLOCK_M=block_m, BLOCK_N=block_n, num_warps=warps, **launch_args(pdl))
        return out
    block_m, block_n, warps = tile
    grid = (triton.cdiv(m, block_m), triton.cdiv(n, block_n))
    linear_residual_kernel[grid](a, weight, bias if bias is not None else weight, res, out, m, n, k,
                                 HAS_BIAS=bias is not None, BLOCK_M=block_m, BLOCK_N=block_n, BLOCK_K=block_k,
                                 num_warps=warps, **launch_args(pdl))
    return out


def masked_attention(qkv: torch.Tensor, allowed: torch.Tensor, batch: int, frames: int, heads: int,
                     head_dim: int, block: int = 64, warps: int = 4, pdl: bool = False) -> torch.Tensor:
    """Attention of qkv rows [B*T, 3*heads*head_dim] under allowed bool [B, T, T] -> [B*T, heads*head_dim]."""
    if tuple(allowed.shape) != (batch, frames, frames):  # the module broadcasts; this kernel does not
        raise ValueError(f"attention mask of shape {tuple(allowed.shape)}, expected {(batch, frames, frames)}")
    out = torch.empty(batch * frames, heads * head_dim, device=qkv.device, dtype=qkv.dtype)
    mask = allowed.view(torch.uint8) if allowed.dtype == torch.bool else allowed
    grid = (triton.cdiv(frames, block), batch * heads)
    masked_attention_kernel[grid](qkv, mask, out, frames, mask.stride(0), mask.stride(1), mask.stride(2),
                                  head_dim ** -0.5, HEADS=heads, D=head_dim, BLOCK_Q=block, BLOCK_K=block,
                                  num_warps=warps, **launch_args(pdl))
    return out


def supports_block(block) -> bool:
    """Blocks the kernels take: fused bias-free q/k/v (``FusedSelfAttention``), power-of-two width and head
    size, contiguous float16/bfloat16 weights (in float32 ``tl.dot`` would run at TF32 precision on a GPU)."""
    attn = block.attn1
    if not isinstance(attn, FusedSelfAttention):
        return False
    width = block.norm1.normalized_shape[0]
    power = lambda n: n >= 16 and n & (n - 1) == 0  # noqa: E731
    weights = (attn.w_qkv, attn.to_out[0].weight, block.ff.net[0].proj.weight, block.ff.net[2].weight)
    return (power(width) and power(attn.dim_head) and all(w.is_contiguous() for w in weights)
            and attn.w_qkv.dtype in (torch.float16, torch.bfloat16))


def transformer_block_forward(block, x: torch.Tensor, allowed: torch.Tensor, pdl: bool = False,
                              tiles: FlowTiles = TUNED_TILES) -> torch.Tensor:
    """``BasicTransformerBlock.forward`` of a block with fused q/k/v, as the five kernels -> [B, T, C];
    ``pdl``: launched with programmatic dependent launch (``pdl.py``; same results)."""
    batch, frames, width = x.shape
    attn, ff = block.attn1, block.ff
    rows = x.reshape(batch * frames, width).contiguous()
    lt, rt = ln_linear_tile(batch * frames, width, rows, tiles), tiles.linear_residual
    qkv = ln_linear(rows, block.norm1, attn.w_qkv, None, tile=lt, pdl=pdl)
    heads = masked_attention(qkv, allowed, batch, frames, attn.heads, attn.dim_head, pdl=pdl)
    rows = linear_residual(heads, attn.to_out[0].weight, attn.to_out[0].bias, rows, tile=rt, pdl=pdl,
                           whole_k=tiles.whole_k)
    inner = ln_linear(rows, block.norm3, ff.net[0].proj.weight, ff.net[0].proj.bias, gelu=True, tile=lt, pdl=pdl)
    rows = linear_residual(inner, ff.net[2].weight, ff.net[2].bias, rows, tile=rt, pdl=pdl, whole_k=tiles.whole_k)
    return rows.view(batch, frames, width)


class KernelTransformerBlock(BasicTransformerBlock):
    """A ``BasicTransformerBlock`` (with ``FusedSelfAttention``) running ``transformer_block_forward``
    (``pdl`` and ``tiles`` set by ``use_flow_kernels``)."""

    pdl = False
    tiles = TUNED_TILES

    def forward(self, x: torch.Tensor, allowed: torch.Tensor) -> torch.Tensor:
        return transformer_block_forward(self, x, allowed, self.pdl, self.tiles)


def use_flow_kernels(root: torch.nn.Module, frames: int = 96) -> int:
    """Switch every supported transformer block under ``root`` to the kernels (after
    ``fuse.fuse_estimator_attention``); returns how many. The blocks keep their parameters.

    One block is first run both ways on a random input of ``frames`` frames (and on CUDA captured in a graph):
    with PDL where available and the tuned tiles; if that fails, without PDL; then with the small tiles. If no
    variant compiles on this GPU / Triton, or the kernels disagree with the module, nothing is switched and a
    warning says why."""
    blocks = [m for m in root.modules() if type(m) is BasicTransformerBlock and supports_block(m)]
    if not blocks:
        return 0
    probe = blocks[0]
    pdl = pdl_available(probe.attn1.w_qkv.device)
    variants = [(pdl, TUNED_TILES), (False, TUNED_TILES), (False, SMALL_TILES)][0 if pdl else 1:]
    chosen = first_working(variants, lambda pdl, tiles: _trial(probe, frames, pdl, tiles), "flow Triton kernels",
                           "the estimator keeps its compiled blocks")
    if chosen is None:
        return 0
    pdl, tiles = chosen
    for module in blocks:
        module.__class__ = KernelTransformerBlock
        module.pdl, module.tiles = pdl, tiles
    return len(blocks)


def _trial(block, frames: int, pdl: bool, tiles: FlowTiles) -> str | None:
    """Why the kernels cannot stand in for ``block`` with these launch settings, or None when they can."""
    try:
        width = block.norm1.normalized_shape[0]
        weight = block.attn1.w_qkv
        g = torch.Generator(device=weight.device).manual_seed(0)
        x = torch.randn(2, frames, width, device=weight.device, generator=g).to(weight.dtype)
        allowed = torch.ones(2, frames, frames, dtype=torch.bool, device=weight.device)
        with torch.inference_mode():
            ours = transformer_block_forward(block, x, allowed, pdl, tiles).float()
            ref = BasicTransformerBlock.forward(block, x, allowed).float()
        error = float((ours - ref).abs().max() / (ref - x.float()).abs().max().clamp_min(1e-6))
        if not error < 5e-2:
            return f"kernels disagree with the module (relative error {error:.3g})"
        if weight.device.type == "cuda":  # the launches must also be capturable (PDL needs driver support)
            capture_graphs([("trial", lambda: transformer_block_forward(block, x, allowed, pdl, tiles))],
                           weight.device)
    except Exception as exc:  # noqa: BLE001 - any failure means: try the next variant
        return f"{type(exc).__name__}: {exc}"[:300]
    return None
