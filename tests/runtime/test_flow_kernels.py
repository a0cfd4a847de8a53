"""Triton kernels of the estimator's transformer block (opt-in, cudagraph backend) against the module math.

Without a GPU they run in Triton's CPU interpreter (conftest sets TRITON_INTERPRET=1).
"""

from __future__ import annotations

import os

import pytest
import torch

pytest.importorskip("triton", reason="the flow kernels are Triton kernels")

from cosydesk.model.unet import BasicTransformerBlock, attention_allowed  # noqa: E402
from cosydesk.runtime.cudagraph import flow_kernels as fk  # noqa: E402
from cosydesk.runtime.cudagraph.fuse import fuse_estimator_attention  # noqa: E402

cuda = pytest.mark.skipif(not torch.cuda.is_available(), reason="needs CUDA")
interpreted = pytest.mark.skipif(os.environ.get("TRITON_INTERPRET") != "1",
                                 reason="CPU tensors need Triton's interpreter (TRITON_INTERPRET=1)")


def _block(width, heads, head_dim, seed=0, device="cpu", dtype=torch.float32):
    torch.manual_seed(seed)
    block = BasicTransformerBlock(width, heads, head_dim).eval().requires_grad_(False)
    with torch.no_grad():
        for norm in (block.norm1, block.norm3):
            norm.weight.normal_(1.0, 0.1)
            norm.bias.normal_(0.0, 0.1)
    block.to(device=device, dtype=dtype)  # before fusing: the fused q/k/v weight is a plain attribute
    holder = torch.nn.ModuleList([block])
    assert fuse_estimator_attention(holder) == 1
    return block


def _inputs(batch, frames, width, padded, chunk, device, dtype):
    g = torch.Generator().manual_seed(1)
    x = torch.randn(batch, frames, width, generator=g).to(device, dtype)
    mask = torch.ones(batch, 1, frames, device=device)
    mask[-1, :, frames - padded:] = 0
    return x, attention_allowed(mask, chunk)


def _compare(block, x, allowed, tol):
    ref = block(x, allowed)
    kernel_block = fk.KernelTransformerBlock.__new__(fk.KernelTransformerBlock)
    kernel_block.__dict__.update(block.__dict__)
    ours = kernel_block(x, allowed)
    scale = float(ref.float().abs().max())
    err = float((ours.float() - ref.float()).abs().max())
    assert err <= tol * scale, err
    return err


@interpreted
@pytest.mark.parametrize("chunk", [0, 25])
def test_block_matches_the_module_float32_cpu(chunk):
    """Two batch rows, 70 frames (not a multiple of the 32/64 tiles), the last 10 of row 1 padded; full and
    chunked attention."""
    block = _block(64, 2, 32)
    x, allowed = _inputs(2, 70, 64, 10, chunk, "cpu", torch.float32)
    with torch.no_grad():
        _compare(block, x, allowed, 1e-5)


@interpreted
def test_block_float16_stays_close_to_the_float16_module_cpu():
    block = _block(64, 2, 32, dtype=torch.float16)
    x, allowed = _inputs(2, 40, 64, 5, 25, "cpu", torch.float16)
    with torch.no_grad():  # measured 2e-3 absolute (max |ref| ~4): float16's own noise, as module vs float32
        _compare(block, x, allowed, 2e-3)


def test_only_supported_blocks_are_switched():
    """Fused q/k/v and power-of-two widths only: a block without the fused weight keeps its own forward."""
    plain = BasicTransformerBlock(64, 2, 32)
    fused = _block(64, 2, 32)
    narrow = _block(24, 2, 12)
    root = torch.nn.ModuleList([plain, fused, narrow])
    assert fk.use_flow_kernels(root) == 1
    assert type(fused) is fk.KernelTransformerBlock
    assert type(plain) is BasicTransformerBlock and type(narrow) is BasicTransformerBlock


@cuda
@pytest.mark.gpu
def test_full_size_block_on_the_gpu():
    """The released width (256, 8 heads of 64), 2 x 128 frames, float16, chunked attention."""
    block = _block(256, 8, 64, device="cuda", dtype=torch.float16)
    x, allowed = _inputs(2, 128, 256, 20, 25, "cuda", torch.float16)
    with torch.no_grad():
        _compare(block, x, allowed, 1e-2)


def test_flow_kernels_are_opt_in(monkeypatch):
    from cosydesk.runtime.cudagraph.compile import compile_enabled
    from cosydesk.runtime.cudagraph.model import flow_kernels_wanted

    monkeypatch.delenv("COSYDESK_FLOW_KERNELS", raising=False)
    assert not flow_kernels_wanted(torch.device("cpu"))
    monkeypatch.setenv("COSYDESK_FLOW_KERNELS", "1")
    assert not flow_kernels_wanted(torch.device("cpu"))  # and only on CUDA with Triton
    if torch.cuda.is_available():
        assert flow_kernels_wanted(torch.device("cuda")) == compile_enabled(torch.device("cuda"))
