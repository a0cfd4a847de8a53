"""Hand-written Triton kernels for the Qwen2 decode step (one row): 5 kernels per layer instead of 13.

Why (H200, Qwen2-0.5B shape, profile of the compiled decode graph at 152e929): Inductor's form of the layer
was 13 kernels, 38 us per layer. Its matrix-vector products ran at 1-2 TB/s (the down projection, 896 rows
reduced over 4,864, at 1 TB/s: too few rows to fill the GPU) and the attention with its rotary and cache
writes took six small kernels. Here a layer is:

1. ``rms_gemv``: RMSNorm of the layer input fused into the q/k/v product (+ bias). It also finishes the
   previous layer: input = residual + the down projection's split-K partial sums, stored for step 3.
2. ``attend``: rotary on q and k, k/v written into the static cache at the position, attention over the
   cache up to the position (online softmax), one program per query head.
3. ``gemv_residual``: the output projection + the residual add.
4. ``rms_gemv`` (GLU form): RMSNorm, gate and up rows of one product, silu(gate) * up.
5. ``gemv_split``: the down projection as split-K partial sums (float32), summed by the next step 1.

The final norm + ``llm_decoder`` is one more ``rms_gemv``. Numerics follow ``qwen.decoder_layer``: float32
accumulation and statistics, float16 (the model dtype) at the same points (normed input, projections,
residual sums). The kernels write every output into static buffers, so the step is captured in a CUDA graph.
On CPU they run under Triton's interpreter (``TRITON_INTERPRET=1``), which is how CI tests them.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch
import triton
import triton.language as tl

from cosydesk.runtime.backends.cudagraph.pdl import launch_args, pdl_available, pdl_start, pdl_wait


@triton.jit
def _layer_input(res_ptr, part_ptr, offs, mask, K, SPLIT: tl.constexpr, HAS_PARTIAL: tl.constexpr):
    """The layer input at ``offs``: the residual, plus the previous layer's down projection (float32 partial
    sums, rounded to the model dtype first, as the unfused layer adds a rounded projection)."""
    x = tl.load(res_ptr + offs, mask=mask, other=0.0)
    if HAS_PARTIAL:
        s = tl.arange(0, SPLIT)
        part = tl.load(part_ptr + s[:, None] * K + offs[None, :], mask=mask[None, :], other=0.0)
        down = tl.sum(part, 0).to(x.dtype)
        x = (x.to(tl.float32) + down.to(tl.float32)).to(x.dtype)
    return x


@triton.jit
def rms_gemv_kernel(res_ptr, part_ptr, x_out_ptr, ln_ptr, w_ptr, bias_ptr, out_ptr, eps, N, K,
                    SPLIT: tl.constexpr, HAS_PARTIAL: tl.constexpr, STORE_X: tl.constexpr, HAS_BIAS: tl.constexpr,
                    GLU: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr, PDL: tl.constexpr):
    """out[n] = W[n] . rmsnorm(x) (+ bias[n]) for this program's BLOCK_N rows; GLU: out[n] = silu(W[n] . h) *
    (W[N + n] . h). x = ``_layer_input``; STORE_X: program 0 also stores x (the residual of step 3).
    BLOCK_K >= K: the whole row is loaded at once (no dependent loop: this kernel is latency-bound)."""
    pdl_start(PDL)
    pid = tl.program_id(0)
    offs = tl.arange(0, BLOCK_K)
    kmask = offs < K
    rows = pid * BLOCK_N + tl.arange(0, BLOCK_N)
    rmask = rows < N
    wmask = rmask[:, None] & kmask[None, :]
    # the weight loads (DRAM, the kernel's real cost) are issued first, so they are in flight while the
    # input and its norm are computed from L2-resident vectors
    w = tl.load(w_ptr + rows[:, None] * K + offs[None, :], mask=wmask, other=0.0)
    if GLU:
        w_up = tl.load(w_ptr + (rows[:, None] + N) * K + offs[None, :], mask=wmask, other=0.0)
    ln = tl.load(ln_ptr + offs, mask=kmask, other=0.0)
    pdl_wait(PDL)  # the weights are constant: loaded before the previous kernel's results are awaited
    x = _layer_input(res_ptr, part_ptr, offs, kmask, K, SPLIT, HAS_PARTIAL)
    if STORE_X:
        if pid == 0:
            tl.store(x_out_ptr + offs, x, mask=kmask)
    xf = x.to(tl.float32)
    rstd = 1.0 / tl.sqrt(tl.sum(xf * xf, 0) / K + eps)
    h = (xf * rstd).to(x.dtype)
    h = (h.to(tl.float32) * ln.to(tl.float32)).to(x.dtype).to(tl.float32)  # weight * normed, model dtype
    acc = tl.sum(w.to(tl.float32) * h[None, :], 1)
    dtype = ln_ptr.dtype.element_ty
    if HAS_BIAS:
        acc += tl.load(bias_ptr + rows, mask=rmask, other=0.0).to(tl.float32)
    y = acc.to(dtype)
    if GLU:
        up = tl.sum(w_up.to(tl.float32) * h[None, :], 1).to(dtype).to(tl.float32)
        gate = y.to(tl.float32)
        gate = (gate / (1.0 + tl.exp(-gate))).to(dtype)
        y = (gate.to(tl.float32) * up).to(dtype)
    tl.store(out_ptr + rows, y.to(out_ptr.dtype.element_ty), mask=rmask)


@triton.jit
def _rotated(ptr, cos, sin, d, HEAD_DIM: tl.constexpr):
    """Rotary embedding of the head vector at ``ptr`` (rotate-half form), in float32, rounded to its dtype."""
    x = tl.load(ptr + d)
    half: tl.constexpr = HEAD_DIM // 2
    partner = tl.load(ptr + (d + half) % HEAD_DIM).to(tl.float32)
    partner = tl.where(d < half, -partner, partner)
    return (x.to(tl.float32) * cos + partner * sin).to(x.dtype)


@triton.jit
def _fold_keys(m_i, l_i, acc, k, v, keys, pos, q, k_new, v_new, scale):
    """Online-softmax step over one block of cache rows ``keys`` (k / v as loaded, rows >= pos masked to 0):
    the row at pos takes this step's k / v from registers, rows past pos are left out."""
    current = (keys == pos)[:, None]
    k = tl.where(current, k_new[None, :], k).to(tl.float32)
    v = tl.where(current, v_new[None, :], v).to(tl.float32)
    scores = tl.sum(k * q[None, :], 1) * scale
    scores = tl.where(keys <= pos, scores, float("-inf"))
    m_new = tl.maximum(m_i, tl.max(scores, 0))
    p = tl.exp(scores - m_new)
    alpha = tl.exp(m_i - m_new)
    return m_new, l_i * alpha + tl.sum(p, 0), acc * alpha + tl.sum(p[:, None] * v, 0)


@triton.jit
def attend_kernel(qkv_ptr, cos_ptr, sin_ptr, pos_ptr, k_cache_ptr, v_cache_ptr, out_ptr, scale, MAX_LEN,
                  HEADS: tl.constexpr, KV_HEADS: tl.constexpr, HEAD_DIM: tl.constexpr, BLOCK_L: tl.constexpr,
                  PDL: tl.constexpr):
    """Query head ``program_id`` attends over its key/value head's cache [KV_HEADS, MAX_LEN, HEAD_DIM] at
    positions <= pos. The new k/v (position pos) are taken from registers, not the cache: the first head of
    each group writes them, and the other heads of the group must not depend on that store.

    Only q/k/v come from the kernel before this one. The position (set by the host or by the previous graph
    replay's last node), its rotary rows and the first BLOCK_L cache rows below it (written by earlier steps:
    this step writes row pos only) are loaded before the PDL wait (H200, exp. probe 40: decode step
    0.457 -> 0.433 ms at position 70, 0.508 -> 0.489 at 200; logits bit-identical)."""
    pdl_start(PDL)
    head = tl.program_id(0)
    group: tl.constexpr = HEADS // KV_HEADS
    kv_head = head // group
    pos = tl.load(pos_ptr)
    d = tl.arange(0, HEAD_DIM)
    # a position past the cache reads and writes nothing (the callers refuse it before launching a step)
    inside = d < tl.where(pos < MAX_LEN, HEAD_DIM, 0)
    cos = tl.load(cos_ptr + pos * HEAD_DIM + d, mask=inside, other=0.0)
    sin = tl.load(sin_ptr + pos * HEAD_DIM + d, mask=inside, other=0.0)
    base = kv_head * MAX_LEN * HEAD_DIM
    first = tl.arange(0, BLOCK_L)
    old = (first < pos)[:, None] & (first < MAX_LEN)[:, None]
    k_first = tl.load(k_cache_ptr + base + first[:, None] * HEAD_DIM + d[None, :], mask=old, other=0.0)
    v_first = tl.load(v_cache_ptr + base + first[:, None] * HEAD_DIM + d[None, :], mask=old, other=0.0)
    pdl_wait(PDL)  # q / k / v of this step come from the previous kernel
    q = _rotated(qkv_ptr + head * HEAD_DIM, cos, sin, d, HEAD_DIM).to(tl.float32)
    k_new = _rotated(qkv_ptr + (HEADS + kv_head) * HEAD_DIM, cos, sin, d, HEAD_DIM)
    v_new = tl.load(qkv_ptr + (HEADS + KV_HEADS + kv_head) * HEAD_DIM + d)
    if head % group == 0:  # the group's writer
        tl.store(k_cache_ptr + base + pos * HEAD_DIM + d, k_new, mask=inside)
        tl.store(v_cache_ptr + base + pos * HEAD_DIM + d, v_new, mask=inside)
    m_i = tl.zeros([], dtype=tl.float32) - float("inf")
    l_i = tl.zeros([], dtype=tl.float32)
    acc = tl.zeros([HEAD_DIM], dtype=tl.float32)
    m_i, l_i, acc = _fold_keys(m_i, l_i, acc, k_first, v_first, first, pos, q, k_new, v_new, scale)
    for start in range(BLOCK_L, pos + 1, BLOCK_L):
        keys = start + tl.arange(0, BLOCK_L)
        old = (keys < pos)[:, None] & (keys < MAX_LEN)[:, None]
        offs = base + keys[:, None] * HEAD_DIM + d[None, :]
        k = tl.load(k_cache_ptr + offs, mask=old, other=0.0)
        v = tl.load(v_cache_ptr + offs, mask=old, other=0.0)
        m_i, l_i, acc = _fold_keys(m_i, l_i, acc, k, v, keys, pos, q, k_new, v_new, scale)
    tl.store(out_ptr + head * HEAD_DIM + d, (acc / l_i).to(v_new.dtype))


@triton.jit
def _row_dots(x_ptr, w_ptr, rows, rmask, k_start, k_stop, K, BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr):
    """float32 W[rows, k_start:k_stop] . x[k_start:k_stop] in BLOCK_K chunks (columns past K masked); each
    chunk's weight load is issued before its input load."""
    acc = tl.zeros([BLOCK_N], dtype=tl.float32)
    for k0 in range(k_start, k_stop, BLOCK_K):
        offs = k0 + tl.arange(0, BLOCK_K)
        kmask = offs < K
        w = tl.load(w_ptr + rows[:, None] * K + offs[None, :], mask=rmask[:, None] & kmask[None, :], other=0.0)
        x = tl.load(x_ptr + offs, mask=kmask, other=0.0).to(tl.float32)
        acc += tl.sum(w.to(tl.float32) * x[None, :], 1)
    return acc


@triton.jit
def gemv_residual_kernel(x_ptr, w_ptr, res_ptr, out_ptr, N, K, BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr,
                         PDL: tl.constexpr):
    """out[n] = res[n] + (W[n] . x), the product rounded to the model dtype before the add."""
    pdl_start(PDL)
    pdl_wait(PDL)  # the looped row dots load weights and input chunk by chunk: wait first
    rows = tl.program_id(0) * BLOCK_N + tl.arange(0, BLOCK_N)
    rmask = rows < N
    acc = _row_dots(x_ptr, w_ptr, rows, rmask, 0, K, K, BLOCK_N, BLOCK_K)
    res = tl.load(res_ptr + rows, mask=rmask, other=0.0)
    y = (res.to(tl.float32) + acc.to(res.dtype).to(tl.float32)).to(res.dtype)
    tl.store(out_ptr + rows, y, mask=rmask)


@triton.jit
def gemv_split_kernel(x_ptr, w_ptr, part_ptr, N, K, K_PER_SPLIT, BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr,
                      PDL: tl.constexpr):
    """part[s, n] = W[n, ks] . x[ks] over split s's slice of K (``K_PER_SPLIT`` is a multiple of BLOCK_K, so
    the slices do not overlap). Many short rows reductions in parallel instead of few long ones."""
    pdl_start(PDL)
    pdl_wait(PDL)
    rows = tl.program_id(0) * BLOCK_N + tl.arange(0, BLOCK_N)
    split = tl.program_id(1)
    rmask = rows < N
    acc = _row_dots(x_ptr, w_ptr, rows, rmask, split * K_PER_SPLIT, (split + 1) * K_PER_SPLIT, K, BLOCK_N, BLOCK_K)
    tl.store(part_ptr + split * N + rows, acc, mask=rmask)


def power_of_two(n: int) -> bool:
    return n >= 1 and n & (n - 1) == 0


@dataclass(frozen=True)
class GemvConfig:
    """Rows per program, reduction chunk (ignored by ``rms_gemv``: it takes whole rows) and warps of one
    matrix-vector kernel."""

    block_n: int
    block_k: int
    warps: int = 4


@dataclass(frozen=True)
class DecodeKernelConfig:
    """Launch shapes of the decode kernels; ``split``: how many partial sums the down projection's reduction
    is cut into (a power of two). Defaults: the fastest of a sweep on the H200 at the Qwen2-0.5B shape, each
    kernel over 24 layers in a CUDA graph, position 70 (exp. probe 11, us per layer): q/k/v 4.2, attention
    4.1, output 3.6, gate/up 8.5, down 5.8 (split 8; 16 was 6.0); with the weight loads issued first (probe
    12, same shapes): q/k/v 3.9, output 2.6, gate/up 7.8, down 5.2. Programmatic dependent launch: see
    ``pdl``."""

    qkv: GemvConfig = GemvConfig(4, 0, 8)
    out: GemvConfig = GemvConfig(4, 1024, 8)
    gate_up: GemvConfig = GemvConfig(2, 0, 4)
    down: GemvConfig = GemvConfig(4, 256, 4)
    logits: GemvConfig = GemvConfig(8, 0, 4)
    split: int = 8
    block_l: int = 128
    attend_warps: int = 4
    # programmatic dependent launch: each kernel lets the next one launch at once and waits for its inputs
    # inside (``pdl.pdl_wait``), after issuing its weight loads. None: where ``pdl_available`` (H200, decode
    # graph, probe 15: 0.553 -> 0.494 ms, logits bit-identical)
    pdl: bool | None = None

    def __post_init__(self):
        gemvs = {"qkv": self.qkv, "out": self.out, "gate_up": self.gate_up, "down": self.down, "logits": self.logits}
        for name, cfg in gemvs.items():
            if not power_of_two(cfg.block_n) or not power_of_two(cfg.warps):
                raise ValueError(f"{name}: block_n and warps must be powers of two (got {cfg})")
        for name in ("out", "down"):  # the looped kernels; rms_gemv takes whole rows and ignores block_k
            if not power_of_two(gemvs[name].block_k):
                raise ValueError(f"{name}: block_k must be a power of two (got {gemvs[name]})")
        if not (power_of_two(self.split) and power_of_two(self.block_l) and power_of_two(self.attend_warps)):
            raise ValueError(f"split, block_l and attend_warps must be powers of two (got {self})")


def rms_gemv(res: torch.Tensor, partial: torch.Tensor | None, x_out: torch.Tensor | None, ln: torch.Tensor,
             eps: float, weight: torch.Tensor, bias: torch.Tensor | None, out: torch.Tensor, cfg: GemvConfig,
             glu: bool = False, pdl: bool = False) -> None:
    """``out`` = weight @ rmsnorm(res + sum(partial)) (+ bias), or its GLU form (weight = [gate; up])."""
    rows = weight.shape[0] // 2 if glu else weight.shape[0]
    k = res.shape[-1]
    split = partial.shape[0] if partial is not None else 1
    grid = (triton.cdiv(rows, cfg.block_n),)
    rms_gemv_kernel[grid](res, partial if partial is not None else res, x_out if x_out is not None else res, ln,
                          weight, bias if bias is not None else ln, out, float(eps), rows, k,
                          SPLIT=split, HAS_PARTIAL=partial is not None, STORE_X=x_out is not None,
                          HAS_BIAS=bias is not None, GLU=glu, BLOCK_N=cfg.block_n,
                          BLOCK_K=triton.next_power_of_2(k), num_warps=cfg.warps, **launch_args(pdl))


def attend(qkv: torch.Tensor, cos: torch.Tensor, sin: torch.Tensor, position: torch.Tensor, k_cache: torch.Tensor,
           v_cache: torch.Tensor, out: torch.Tensor, heads: int, kv_heads: int, block_l: int, warps: int = 4,
           pdl: bool = False) -> None:
    """Rotary + cache write + attention of one decode row (``k_cache``/``v_cache``: [kv_heads, L, d])."""
    head_dim = k_cache.shape[-1]
    attend_kernel[(heads,)](qkv, cos, sin, position, k_cache, v_cache, out, head_dim ** -0.5, k_cache.shape[-2],
                            HEADS=heads, KV_HEADS=kv_heads, HEAD_DIM=head_dim, BLOCK_L=block_l, num_warps=warps,
                            **launch_args(pdl))


def gemv_residual(x: torch.Tensor, weight: torch.Tensor, res: torch.Tensor, out: torch.Tensor,
                  cfg: GemvConfig, pdl: bool = False) -> None:
    rows, k = weight.shape
    gemv_residual_kernel[(triton.cdiv(rows, cfg.block_n),)](x, weight, res, out, rows, k, BLOCK_N=cfg.block_n,
                                                            BLOCK_K=cfg.block_k, num_warps=cfg.warps,
                                                            **launch_args(pdl))


def gemv_split(x: torch.Tensor, weight: torch.Tensor, partial: torch.Tensor, cfg: GemvConfig,
               pdl: bool = False) -> None:
    """partial [split, rows] float32 partial products of weight @ x."""
    rows, k = weight.shape
    split = partial.shape[0]
    per_split = triton.cdiv(triton.cdiv(k, split), cfg.block_k) * cfg.block_k
    gemv_split_kernel[(triton.cdiv(rows, cfg.block_n), split)](x, weight, partial, rows, k, per_split,
                                                               BLOCK_N=cfg.block_n, BLOCK_K=cfg.block_k,
                                                               num_warps=cfg.warps, **launch_args(pdl))


def supports(heads: int, kv_heads: int, head_dim: int) -> bool:
    """Shapes the attention kernel handles: a power-of-two head size, whole query groups per key head."""
    return head_dim >= 2 and power_of_two(head_dim) and heads % kv_heads == 0


class TritonDecoder:
    """One decode row through every layer with the kernels above, on buffers allocated once.

    ``layers``: ``qwen.LayerWeights`` per layer; ``head``: the final norm weight/eps and ``llm_decoder``
    (weight, bias). ``step`` reads the embedded input row from ``self.x`` (written by the caller), the
    position from a device scalar, and writes float32 logits into the caller's buffer.
    """

    def __init__(self, layers, final_norm: torch.Tensor, final_eps: float, head_weight: torch.Tensor,
                 head_bias: torch.Tensor | None, heads: int, kv_heads: int, head_dim: int,
                 config: DecodeKernelConfig | None = None):
        if not supports(heads, kv_heads, head_dim):
            raise ValueError(f"decode kernels need a power-of-two head size and whole query groups "
                             f"(heads {heads}, kv heads {kv_heads}, head size {head_dim})")
        tensors = [t for w in layers for t in (w.ln1, w.w_qkv, w.b_qkv, w.w_o, w.ln2, w.w_gate_up, w.w_down)]
        if not all(t.is_contiguous() for t in tensors + [head_weight]):
            raise ValueError("decode kernels read weight rows at a stride of their width: weights must be contiguous")
        self.layers = layers
        self.final_norm, self.final_eps = final_norm, final_eps
        self.head_weight, self.head_bias = head_weight, head_bias
        self.heads, self.kv_heads = heads, kv_heads
        self.config = config or DecodeKernelConfig()
        first = layers[0]
        self.pdl = pdl_available(first.w_o.device)
        hidden, inner = first.w_o.shape[0], first.w_down.shape[1]
        def new(*shape, dtype=first.w_o.dtype):
            return torch.zeros(*shape, dtype=dtype, device=first.w_o.device)

        self.x = new(hidden)  # the input row; then each layer's input after attention (residual + output proj)
        self.residual = new(hidden)  # each layer's input (residual of the output projection)
        self.qkv = new(first.w_qkv.shape[0])
        self.attn = new(heads * head_dim)
        self.act = new(inner)
        self.partial = new(self.config.split, hidden, dtype=torch.float32)

    @property
    def uses_pdl(self) -> bool:
        """Whether the kernels launch with programmatic dependent launch (the config's choice, else the GPU's)."""
        return self.pdl if self.config.pdl is None else self.config.pdl

    def step(self, k_cache: torch.Tensor, v_cache: torch.Tensor, cos: torch.Tensor, sin: torch.Tensor,
             position: torch.Tensor, logits: torch.Tensor) -> None:
        """Logits of the row in ``self.x`` at ``position``; writes its K/V into the caches
        [layers, 1, kv_heads, max_len, head_dim]. Launches 5 kernels per layer and one for the head."""
        cfg = self.config
        pdl = self.uses_pdl
        partial = None  # layer 0's input is the embedded row itself
        for i, w in enumerate(self.layers):
            rms_gemv(self.x, partial, self.residual, w.ln1, w.eps, w.w_qkv, w.b_qkv, self.qkv, cfg.qkv, pdl=pdl)
            attend(self.qkv, cos, sin, position, k_cache[i, 0], v_cache[i, 0], self.attn, self.heads,
                   self.kv_heads, cfg.block_l, cfg.attend_warps, pdl=pdl)
            gemv_residual(self.attn, w.w_o, self.residual, self.x, cfg.out, pdl=pdl)
            rms_gemv(self.x, None, None, w.ln2, w.eps, w.w_gate_up, None, self.act, cfg.gate_up, glu=True, pdl=pdl)
            gemv_split(self.act, w.w_down, self.partial, cfg.down, pdl=pdl)
            partial = self.partial
        rms_gemv(self.x, partial, None, self.final_norm, self.final_eps, self.head_weight, self.head_bias, logits,
                 cfg.logits, pdl=pdl)
