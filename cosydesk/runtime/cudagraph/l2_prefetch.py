"""Prefetching weights into the GPU's L2 cache from inside a kernel that does not need the memory bus itself.

Why: a decode step reads every weight once (~0.7 GB for Qwen2-0.5B), but half of its kernels (q/k/v, the
attention, the output projection) are latency-bound and leave the memory bus idle, while the MLP kernels
that follow wait on DRAM. A kernel early in the layer can ask for the MLP weights ahead of time
(``cp.async.bulk.prefetch.L2``, Hopper and newer: one asynchronous instruction per chunk, nothing waits for
it), so the MLP kernels find them in L2. A prefetch is only a hint: results are bit-identical with or without.

Each program of the issuing kernel prefetches its share of the byte range; the last chunk of a range is
moved back so that it ends at the range's end (no byte past the tensor is touched). Triton's CPU interpreter
has no inline assembly, so the helper compiles to nothing unless ``CHUNKS`` > 0, which only a CUDA caller asks for.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch
import triton
import triton.language as tl

from cosydesk.runtime.cudagraph.compile import env_switch


# One thread issues each chunk: a tensor smaller than the program is replicated across its threads (thread t
# holds element t mod size), and without the predicate every replica would issue the same prefetch.
_PREFETCH_ASM = tl.constexpr("""{
    .reg .pred p;
    .reg .u32 t, n, r;
    mov.u32 t, %tid.x;
    mov.u32 n, %ntid.x;
    rem.u32 r, $3, n;
    setp.eq.u32 p, r, t;
    setp.ne.and.u32 p, $4, 0, p;
    @p cp.async.bulk.prefetch.L2.global [$1], $2;
    mov.u32 $0, 0;
}""")


@triton.jit
def l2_prefetch(ptr, nbytes, CHUNKS: tl.constexpr, CHUNK: tl.constexpr):
    """Prefetch this program's (up to) CHUNKS chunks of CHUNK bytes of [ptr, ptr + nbytes) into L2; chunk i
    goes to program i mod programs (programs numbered over a 1- or 2-D grid). ``nbytes`` >= CHUNK, both
    multiples of 16 (``PrefetchRange`` checks)."""
    if CHUNKS > 0:
        programs = tl.num_programs(0) * tl.num_programs(1)
        pid = tl.program_id(0) + tl.program_id(1) * tl.num_programs(0)
        local = tl.arange(0, CHUNKS)
        index = pid + local.to(tl.int64) * programs
        valid = index * CHUNK < nbytes
        start = tl.minimum(index * CHUNK, nbytes - CHUNK)  # the last chunk ends at the range's end
        addr = ptr.to(tl.pointer_type(tl.int8)) + start
        size = tl.full([CHUNKS], CHUNK, tl.int32)
        tl.inline_asm_elementwise(_PREFETCH_ASM, "=r,l,r,r,r", [addr, size, local, valid.to(tl.int32)],
                                  dtype=tl.int32, is_pure=False, pack=1)


@dataclass(frozen=True)
class PrefetchRange:
    """A tensor's bytes to prefetch, split over the ``programs`` of the issuing kernel (``chunks`` per program,
    a power of two for ``tl.arange``)."""

    tensor: torch.Tensor
    chunks: int
    chunk: int

    @staticmethod
    def plan(tensor: torch.Tensor, programs: int, chunk: int) -> "PrefetchRange | None":
        """None where the range cannot be prefetched in ``chunk``-byte pieces (too small, not 16-byte sized)."""
        nbytes = tensor.numel() * tensor.element_size()
        if chunk % 16 or nbytes % 16 or nbytes < chunk or not tensor.is_contiguous() or tensor.data_ptr() % 16:
            return None
        per_program = triton.cdiv(triton.cdiv(nbytes, chunk), programs)
        return PrefetchRange(tensor, triton.next_power_of_2(per_program), chunk)

    @property
    def nbytes(self) -> int:
        return self.tensor.numel() * self.tensor.element_size()


def kernel_args(first: PrefetchRange | None, second: PrefetchRange | None, fallback: torch.Tensor) -> dict:
    """Keyword arguments for a kernel taking two prefetch ranges (``pf0_*``, ``pf1_*``); an absent range
    points at ``fallback`` and prefetches nothing."""
    args = {}
    for name, r in (("pf0", first), ("pf1", second)):
        args[f"{name}_ptr"] = r.tensor if r else fallback
        args[f"{name}_bytes"] = r.nbytes if r else 0
        args[f"{name.upper()}_CHUNKS"] = r.chunks if r else 0
        args[f"{name.upper()}_CHUNK"] = r.chunk if r else 16
    return args


def prefetch_available(device: torch.device) -> bool:
    """Bulk L2 prefetch needs a Hopper-or-newer GPU; ``COSYDESK_L2_PREFETCH=0`` turns it off."""
    return (device.type == "cuda" and torch.cuda.is_available()
            and torch.cuda.get_device_capability(device)[0] >= 9 and env_switch("COSYDESK_L2_PREFETCH", True))
