"""Two tiny Triton kernels for the tests of ``triton_compile``: one compiles, one reads a plain Python global
(accepted by Triton's interpreter, rejected by its compiler). Never launched by the suite."""

from __future__ import annotations

import triton
import triton.language as tl

SCALE = 0.5  # a plain global: compiled Triton refuses to read it


@triton.jit
def scaled_copy(src_ptr, dst_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    tl.store(dst_ptr + offs, tl.load(src_ptr + offs, mask=offs < n) * 0.5, mask=offs < n)


@triton.jit
def scaled_copy_by_global(src_ptr, dst_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    tl.store(dst_ptr + offs, tl.load(src_ptr + offs, mask=offs < n) * SCALE, mask=offs < n)
