"""v3's DiT attention as one Triton kernel that also rotates: the q/k/v product's rows in, heads side by side out.

Why (H200 profile, wave 11): after q/k/v became one product, a DiT block's attention was still two kernels, an
Inductor kernel rotating head 0's q and k (3.1 us) and cuDNN's attention (8.3 us at 128 frames), 22 blocks a CFM
step. Here one kernel per (query block, batch x head) reads q, k and v straight from the product's rows
[B*T, 3*H*D] (q | k | v, heads side by side), rotates head 0's q and k on the way in, and writes [B*T, H*D], the
output projection's input layout. Flash-style: float32 scores and softmax, the weights cast to float16 for the
value product.

The rotation (``dit.rotate_leading_channels``: interleaved pairs (2i, 2i+1) of the first D channels, head 0 only)
needs no register shuffles: q and k are loaded as their even and odd channels, and q.k is the sum of the even
halves' and the odd halves' products, so the rotated halves go straight into two dots. Rotated values are made in
float32 and rounded to the input dtype, as the module does. Heads other than 0 load cos 1 / sin 0, which leaves
them exact.

Used for ``FusedQKVAttention`` blocks (``dit_prepared``) on CUDA with the flow kernels on (``COSYDESK_FLOW_KERNELS``),
when head_dim is a multiple of 32 and the rotary table covers exactly head 0; the kernel goes through a torch
custom op, so the compiled blocks call it as one opaque launch. A load-time trial compares it with the module and
keeps SDPA (with a warning) when it fails or disagrees. On CPU it runs in Triton's interpreter (tests).
"""

from __future__ import annotations

import torch
import triton
import triton.language as tl

from cosydesk.runtime.backends.cudagraph.capture import capture_graphs
from cosydesk.runtime.backends.cudagraph.variants import first_working

BLOCK = 64
WARPS = 4


@triton.jit
def dit_attention_kernel(qkv_ptr, allowed_ptr, cos_ptr, sin_ptr, out_ptr, T, stride_ab, stride_aq, stride_ak, scale,
                         HEADS: tl.constexpr, D: tl.constexpr, BLOCK_Q: tl.constexpr, BLOCK_K: tl.constexpr):
    """softmax(rot(q) rot(k)^T * scale, keys where allowed) v for one (query block, batch x head). cos / sin
    [T, D/2] float32 rotate head 0 only; allowed [B, T, T] uint8 (any strides)."""
    batch = tl.program_id(1) // HEADS
    head = tl.program_id(1) % HEADS
    inner: tl.constexpr = HEADS * D
    half: tl.constexpr = D // 2
    queries = tl.program_id(0) * BLOCK_Q + tl.arange(0, BLOCK_Q)
    pair = tl.arange(0, half)
    d = tl.arange(0, D)
    qmask = queries < T
    rotated_rows = qmask & ((tl.zeros([BLOCK_Q], dtype=tl.int32) + head) == 0)  # head 0 rotates, as a row mask
    q_at = qkv_ptr + (batch * T + queries)[:, None] * (3 * inner) + head * D + 2 * pair[None, :]
    q_even = tl.load(q_at, mask=qmask[:, None], other=0.0)
    q_odd = tl.load(q_at + 1, mask=qmask[:, None], other=0.0)
    table = queries[:, None] * half + pair[None, :]
    cos = tl.load(cos_ptr + table, mask=rotated_rows[:, None], other=1.0)
    sin = tl.load(sin_ptr + table, mask=rotated_rows[:, None], other=0.0)
    qe, qo = q_even.to(tl.float32), q_odd.to(tl.float32)
    q_even = (qe * cos - qo * sin).to(q_at.dtype.element_ty)
    q_odd = (qo * cos + qe * sin).to(q_at.dtype.element_ty)
    m_i = tl.zeros([BLOCK_Q], dtype=tl.float32) - float("inf")
    l_i = tl.zeros([BLOCK_Q], dtype=tl.float32)
    acc = tl.zeros([BLOCK_Q, D], dtype=tl.float32)
    for k0 in range(0, T, BLOCK_K):
        keys = k0 + tl.arange(0, BLOCK_K)
        kmask = keys < T
        rows = (batch * T + keys)[:, None] * (3 * inner) + head * D
        k_at = qkv_ptr + rows + inner + 2 * pair[None, :]
        ke = tl.load(k_at, mask=kmask[:, None], other=0.0).to(tl.float32)
        ko = tl.load(k_at + 1, mask=kmask[:, None], other=0.0).to(tl.float32)
        ktable = keys[:, None] * half + pair[None, :]
        rotated_keys = kmask & ((tl.zeros([BLOCK_K], dtype=tl.int32) + head) == 0)
        kcos = tl.load(cos_ptr + ktable, mask=rotated_keys[:, None], other=1.0)
        ksin = tl.load(sin_ptr + ktable, mask=rotated_keys[:, None], other=0.0)
        k_even = (ke * kcos - ko * ksin).to(q_even.dtype)
        k_odd = (ko * kcos + ke * ksin).to(q_even.dtype)
        v = tl.load(qkv_ptr + rows + 2 * inner + d[None, :], mask=kmask[:, None], other=0.0)
        ok = tl.load(allowed_ptr + batch * stride_ab + queries[:, None] * stride_aq + keys[None, :] * stride_ak,
                     mask=qmask[:, None] & kmask[None, :], other=0)
        s = (tl.dot(q_even, tl.trans(k_even)) + tl.dot(q_odd, tl.trans(k_odd))) * scale
        s = tl.where(ok != 0, s, float("-inf"))
        m_new = tl.maximum(m_i, tl.max(s, 1))
        m_safe = tl.where(m_new == float("-inf"), 0.0, m_new)  # no allowed key yet in this row
        p = tl.exp(s - m_safe[:, None])
        alpha = tl.exp(m_i - m_safe)
        l_i = l_i * alpha + tl.sum(p, 1)
        acc = acc * alpha[:, None] + tl.dot(p.to(v.dtype), v)
        m_i = m_new
    out = acc / tl.where(l_i > 0, l_i, 1.0)[:, None]
    tl.store(out_ptr + (batch * T + queries)[:, None] * inner + head * D + d[None, :], out.to(q_even.dtype),
             mask=qmask[:, None])


def launch(qkv: torch.Tensor, allowed: torch.Tensor, cos: torch.Tensor, sin: torch.Tensor, heads: int) -> torch.Tensor:
    """qkv [B, T, 3*H*D] (contiguous), allowed [B, T, T] bool, cos / sin [T, D/2] float32 -> [B, T, H*D]."""
    batch, frames = allowed.shape[0], allowed.shape[1]
    inner = qkv.shape[-1] // 3
    head_dim = inner // heads
    if tuple(qkv.shape) != (batch, frames, 3 * inner) or not qkv.is_contiguous():
        raise ValueError(f"q/k/v rows of shape {tuple(qkv.shape)} for a mask of {tuple(allowed.shape)}")
    if tuple(cos.shape) != (frames, head_dim // 2):
        raise ValueError(f"rotary table of shape {tuple(cos.shape)}, expected {(frames, head_dim // 2)}")
    out = torch.empty(batch, frames, inner, device=qkv.device, dtype=qkv.dtype)
    mask = allowed.view(torch.uint8) if allowed.dtype == torch.bool else allowed
    grid = (triton.cdiv(frames, BLOCK), batch * heads)
    dit_attention_kernel[grid](qkv, mask, cos.float().contiguous(), sin.float().contiguous(), out, frames,
                               mask.stride(0), mask.stride(1), mask.stride(2), head_dim ** -0.5, HEADS=heads,
                               D=head_dim, BLOCK_Q=BLOCK, BLOCK_K=BLOCK, num_warps=WARPS)
    return out


@torch.library.custom_op("cosydesk::dit_attention", mutates_args=())
def dit_attention(qkv: torch.Tensor, allowed: torch.Tensor, cos: torch.Tensor, sin: torch.Tensor,
                  heads: int) -> torch.Tensor:
    """``launch`` as one opaque op for torch.compile (Inductor calls it; dynamo does not trace the kernel)."""
    return launch(qkv, allowed, cos, sin, heads)


@dit_attention.register_fake
def _(qkv, allowed, cos, sin, heads):
    return qkv.new_empty(allowed.shape[0], allowed.shape[1], qkv.shape[-1] // 3)


def supports(attn, rotary_dim: int) -> bool:
    """The kernel's shapes: head_dim a multiple of 32 (two dots over its halves) and rotation of head 0 exactly."""
    return attn.dim_head % 32 == 0 and rotary_dim == attn.dim_head


def trial(attn, rotary, frames: int = 96) -> str | None:
    """Why the kernel cannot stand in for ``attn`` (a ``FusedQKVAttention``), or None when it can: one random input
    of ``frames`` frames with a padded second row, both ways (and on CUDA captured in a graph)."""
    try:
        weight = attn.qkv.weight
        device = weight.device
        g = torch.Generator(device=device).manual_seed(0)
        qkv = torch.randn(2, frames, weight.shape[0], device=device, generator=g).to(weight.dtype)
        allowed = torch.ones(2, frames, frames, dtype=torch.bool, device=device)
        allowed[1, :, frames - 17:] = False
        cos, sin = rotary(frames, device)
        valid = torch.ones(2, frames, 1, dtype=torch.bool, device=device)
        with torch.inference_mode():
            ours = launch(qkv, allowed, cos, sin, attn.heads).float()
            ref = _module_mix(attn, qkv, allowed, (cos, sin), valid).float()
        error = float((ours - ref).abs().max() / ref.abs().max().clamp_min(1e-6))
        if not error < 2e-2:
            return f"the kernel disagrees with the module (relative error {error:.3g})"
        if device.type == "cuda":
            capture_graphs([("trial", lambda: launch(qkv, allowed, cos, sin, attn.heads))], device)
    except Exception as exc:  # noqa: BLE001 - any failure means: keep SDPA
        return f"{type(exc).__name__}: {exc}"[:300]
    return None


def _module_mix(attn, qkv, allowed, rope, valid) -> torch.Tensor:
    """The module's attention before its output projection, [B, T, H*D] (heads side by side)."""
    q, k, v = qkv.chunk(3, dim=-1)
    split = attn._split_heads
    from cosydesk.model.dit import rotate_leading_channels

    cos, sin = rope
    mixed = torch.nn.functional.scaled_dot_product_attention(
        split(rotate_leading_channels(q, cos, sin)), split(rotate_leading_channels(k, cos, sin)), split(v),
        attn_mask=allowed[:, None])
    return mixed.transpose(1, 2).flatten(2)


def use_dit_attention_kernel(prepared) -> int:
    """Switch every ``FusedQKVAttention`` of a ``PreparedDiT`` to ``KernelQKVAttention`` after one trial; returns how
    many (0, with a warning when the trial failed, or when the shapes do not fit the kernel)."""
    from cosydesk.runtime.backends.cudagraph.dit_prepared import FusedQKVAttention, KernelQKVAttention

    rotary = prepared.dit.rotary_embed
    attentions = [b.attn for b in prepared.dit.transformer_blocks
                  if type(b.attn) is FusedQKVAttention and supports(b.attn, rotary.rotary_dim)]
    if not attentions or len(attentions) != len(prepared.dit.transformer_blocks):
        return 0
    if first_working([(False, "one kernel per query block")], lambda _pdl, _how: trial(attentions[0], rotary),
                     "DiT attention kernel", "the DiT keeps SDPA") is None:
        return 0
    for attn in attentions:
        attn.__class__ = KernelQKVAttention
    return len(attentions)
