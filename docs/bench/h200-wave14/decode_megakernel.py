"""Experiment (wave 14, not in the app): the Qwen2 decode step's layers as one persistent CUDA kernel
(``decode_megakernel.cu``, beside this file), compiled with NVRTC. Measured slower than the Triton step; see README.md here.

Why: the Triton decode step (``decode_kernels.py``) is 120 small kernels a step. Each one starts only when
the previous one has drained (PDL lets it load its weights a little earlier), so a step is ~120 dependency
latencies *plus* the weight traffic (H200: 0.44 ms against a ~0.16 ms weight-bandwidth floor). Here one block
per SM keeps its slices of a whole layer's weights in shared memory and copies the next layer's slices while
the grid waits at the barriers between the phases, so the traffic runs under the latencies instead of after
them. The final norm + ``llm_decoder`` stay the Triton ``rms_gemv`` of ``decode_kernels``.

It needs every block resident at once (one per SM, ~227 KB of shared memory each at the Qwen2-0.5B shape):
``plan`` and ``fits`` say whether a GPU can hold it. The kernel
is compiled at load by torch's NVRTC wrapper (no nvcc needed) for the GPU it runs on.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from pathlib import Path

import torch

from cosydesk.runtime.backends.cudagraph import decode_kernels

THREADS = 256
STAMPS = 20  # PROBE_TIMES's clock stamps a layer (NSTAMPS in the .cu)
SOURCE = "decode_megakernel.cu"
KERNEL = "qwen_decode_layers"


@dataclass(frozen=True)
class MegakernelPlan:
    """Rows of each phase per block and the shared memory that layout needs, for ``blocks`` blocks."""

    blocks: int
    rows_qkv: int
    rows_o: int
    rows_gu: int
    rows_down: int
    shared_bytes: int

    def defines(self, hidden: int, inner: int, heads: int, kv_heads: int, head_dim: int, layers: int,
                max_len: int) -> list[str]:
        values = {"HIDDEN": hidden, "INNER": inner, "HEADS": heads, "KV_HEADS": kv_heads, "HEAD_DIM": head_dim,
                  "LAYERS": layers, "MAX_LEN": max_len, "BLOCKS": self.blocks, "THREADS": THREADS,
                  "ROWS_QKV": self.rows_qkv, "ROWS_O": self.rows_o, "ROWS_GU": self.rows_gu,
                  "ROWS_DOWN": self.rows_down}
        return [f"-D{k}={v}" for k, v in values.items()]


def plan(blocks: int, hidden: int, inner: int, heads: int, kv_heads: int, head_dim: int) -> MegakernelPlan:
    """The per-block row split of every phase over ``blocks`` blocks and its shared memory (bytes)."""
    qkv_rows = (heads + 2 * kv_heads) * head_dim
    rows = [math.ceil(n / blocks) for n in (qkv_rows, hidden, inner, hidden)]
    tiles = 2 * hidden * (rows[0] + rows[1] + 2 * rows[2]) + 2 * inner * rows[3]
    warps = THREADS // 32
    scratch = max(4 * (3 * head_dim + warps * (head_dim + 2)), 4 * warps * rows[3]) + 32  # + 4 mbarriers
    return MegakernelPlan(blocks, *rows, shared_bytes=tiles + scratch)


def supports(hidden: int, inner: int, heads: int, kv_heads: int, head_dim: int) -> str | None:
    """Why these shapes do not suit the kernel, or None (16-byte row vectors, whole query groups, at most one
    head per block and key head size a multiple of 8)."""
    if hidden % 8 or inner % 8 or head_dim % 8:
        return f"row sizes must be multiples of 8 (hidden {hidden}, inner {inner}, head size {head_dim})"
    if heads % kv_heads:
        return f"{heads} query heads do not split into {kv_heads} key/value groups"
    if head_dim > THREADS or hidden > 32 * 8 * 32:
        return f"head size {head_dim} or width {hidden} too large for {THREADS} threads"
    return None


def fits(device: torch.device, p: MegakernelPlan) -> str | None:
    """Why the plan cannot run on ``device``, or None: every block must be resident at once."""
    props = torch.cuda.get_device_properties(device)
    limit = getattr(props, "shared_memory_per_block_optin", 48 * 1024)
    if p.shared_bytes > limit:
        return f"needs {p.shared_bytes} bytes of shared memory per block, the GPU allows {limit}"
    if p.blocks > props.multi_processor_count:
        return f"{p.blocks} blocks on {props.multi_processor_count} SMs"
    return None


def compile_kernel(p: MegakernelPlan, dims: dict[str, int], capability: str | None = None,
                   extra: tuple[str, ...] = ()):
    """The NVRTC-compiled kernel for this plan (torch's ``_compile_kernel``: cubin for the current GPU)."""
    source = (Path(__file__).parent / SOURCE).read_text()
    options = p.defines(**dims) + ["--std=c++17", *extra]
    kernel = torch.cuda._compile_kernel(source, KERNEL, compute_capability=capability, nvcc_options=options)
    kernel.set_shared_memory_config(p.shared_bytes)
    return kernel


class MegakernelDecoder:
    """Drop-in for ``decode_kernels.TritonDecoder``: ``x`` is the input row, ``step`` writes float32 logits.

    ``blocks``: the grid (default: every SM of the GPU, the only size the grid barrier is safe at on a shared
    GPU: one block per SM, so the resident blocks never wait on blocks that cannot be scheduled).
    """

    def __init__(self, layers, final_norm: torch.Tensor, final_eps: float, head_weight: torch.Tensor,
                 head_bias: torch.Tensor | None, heads: int, kv_heads: int, head_dim: int, max_len: int,
                 blocks: int | None = None, config: decode_kernels.DecodeKernelConfig | None = None,
                 extra_defines: tuple[str, ...] = ()):
        first = layers[0]
        device = first.w_o.device
        hidden, inner = first.w_o.shape[0], first.w_down.shape[1]
        reason = supports(hidden, inner, heads, kv_heads, head_dim)
        if reason is None and first.w_o.dtype != torch.float16:
            reason = f"float16 weights only (got {first.w_o.dtype})"
        tensors = [t for w in layers for t in (w.ln1, w.w_qkv, w.b_qkv, w.w_o, w.ln2, w.w_gate_up, w.w_down)]
        if reason is None and not all(t.is_contiguous() and t.data_ptr() % 16 == 0 for t in tensors):
            reason = "weights must be contiguous and 16-byte aligned"
        if reason is None and len({w.eps for w in layers}) != 1:
            reason = "one RMSNorm epsilon for every layer"
        blocks = blocks or torch.cuda.get_device_properties(device).multi_processor_count
        self.plan = plan(blocks, hidden, inner, heads, kv_heads, head_dim)
        reason = reason or fits(device, self.plan)
        if reason:
            raise ValueError(f"decode megakernel unavailable: {reason}")
        dims = dict(hidden=hidden, inner=inner, heads=heads, kv_heads=kv_heads, head_dim=head_dim,
                    layers=len(layers), max_len=max_len)
        self.kernel = compile_kernel(self.plan, dims, extra=extra_defines)
        self.layers, self.max_len = layers, max_len  # the layers keep alive the weights ``pointers`` addresses
        self.eps, self.scale = float(first.eps), head_dim ** -0.5
        self.final_norm, self.final_eps = final_norm, final_eps
        self.head_weight, self.head_bias = head_weight, head_bias
        self.config = config or decode_kernels.DecodeKernelConfig()
        self.pdl = decode_kernels.pdl_available(device)

        def new(n, dtype=torch.float16):
            return torch.zeros(n, dtype=dtype, device=device)

        self.x = new(hidden)
        self.qkv = new(first.w_qkv.shape[0])
        self.attn = new(heads * head_dim)
        self.act = new(inner)
        # the grid barrier's counter(s) (only grow; ATTN_SPLIT's per-head tickets at 16..), room for PROBE_TIMES's
        # clock stamps, then ATTN_SPLIT's partial softmax states (float32, more room than needed)
        self.barrier = new(blocks * (1 + STAMPS * len(layers)) + heads * (blocks // heads) * (head_dim + 2),
                           torch.int64)
        self.pointers = torch.tensor([t.data_ptr() for t in tensors], dtype=torch.int64, device=device)

    def stamps(self) -> torch.Tensor:
        """PROBE_TIMES's clock stamps of the last launch, [blocks, layers, STAMPS] (SM cycles, on the host)."""
        blocks, layers = self.plan.blocks, len(self.layers)
        return self.barrier[blocks:blocks * (1 + STAMPS * layers)].view(blocks, layers, STAMPS).double().cpu()

    @property
    def uses_pdl(self) -> bool:
        """Whether the head's Triton kernel launches with programmatic dependent launch."""
        return self.pdl if self.config.pdl is None else self.config.pdl

    def step(self, k_cache: torch.Tensor, v_cache: torch.Tensor, cos: torch.Tensor, sin: torch.Tensor,
             position: torch.Tensor, logits: torch.Tensor) -> None:
        """Logits of the row in ``self.x`` at ``position`` (caches [layers, 1, kv_heads, max_len, head_dim]):
        the layers in one launch, then the final norm + head."""
        if k_cache.shape[-2] != self.max_len or not (k_cache.is_contiguous() and v_cache.is_contiguous()):
            raise ValueError("the caches must be contiguous and as long as the kernel was compiled for")
        self.kernel(grid=(self.plan.blocks, 1, 1), block=(THREADS, 1, 1),
                    args=[self.pointers, self.x, self.qkv, self.attn, self.act, k_cache, v_cache, cos, sin, position,
                          self.barrier, float(self.eps), float(self.scale)],
                    shared_mem=self.plan.shared_bytes)
        decode_kernels.rms_gemv(self.x, None, None, self.final_norm, self.final_eps, self.head_weight,
                                self.head_bias, logits, self.config.logits, pdl=self.uses_pdl)
