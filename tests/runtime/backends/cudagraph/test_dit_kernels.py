"""Triton kernels of CosyVoice3's DiT block (cudagraph backend) against ``DiTBlock.modulated``, and the prepared
DiT switched to them giving the velocity it gave before.

Without a GPU they run in Triton's CPU interpreter (conftest sets TRITON_INTERPRET=1).
"""

from __future__ import annotations

import copy
import functools

import pytest
import torch

pytest.importorskip("triton", reason="the DiT kernels are Triton kernels")

from cosydesk.model import load  # noqa: E402
from cosydesk.model.dit import DiTBlock, RotaryTable, attention_masks  # noqa: E402
from cosydesk.runtime.backends.cudagraph import dit_kernels as dk  # noqa: E402
from cosydesk.runtime.backends.cudagraph.dit_prepared import PreparedDiT  # noqa: E402
from tests.conftest import cuda, interpreted  # noqa: E402
from tests.support.paths import fixture_dir  # noqa: E402

SMALL = dk.DiTTiles(ln_linear=(32, 64, 32, 4), gate_residual=(32, 32, 32, 4))  # several tiles at these widths


def _block(dim=128, heads=4, dim_head=32, ff_mult=2.0, seed=0, device="cpu", dtype=torch.float32):
    torch.manual_seed(seed)
    block = DiTBlock(dim, heads, dim_head, ff_mult).eval().requires_grad_(False)
    with torch.no_grad():
        for p in block.parameters():
            p.normal_(0.0, 0.08)
    return block.to(device=device, dtype=dtype)


def _inputs(dim, frames, padded, chunk, rot, device, dtype, seed=1):
    """h, modulation (different per batch row), allowed [B,1,T,T], query_valid, rope."""
    g = torch.Generator().manual_seed(seed)
    h = torch.randn(2, frames, dim, generator=g).to(device, dtype)
    modulation = (0.3 * torch.randn(2, 6 * dim, generator=g)).to(device, dtype)
    mask = torch.ones(2, 1, frames, device=device)
    mask[1, :, frames - padded:] = 0
    allowed, query_valid = attention_masks(mask, chunk)
    rope = RotaryTable(rot)(frames, torch.device(device))
    return h, modulation, allowed, query_valid, rope


def _errors(block, reference, h, modulation, allowed, query_valid, rope, tiles):
    """(kernel error, module error) against ``reference`` (the block in float32), relative to what the block adds
    to h (the residual stream is larger and would hide errors in the branches)."""
    with torch.no_grad():
        exact = reference.modulated(h.float(), modulation.float().chunk(6, -1), allowed, query_valid,
                                    rope).float()
        module = block.modulated(h, modulation.chunk(6, -1), allowed, query_valid, rope).float()
        ours = dk.dit_block_forward(block, h, modulation, allowed, rope, tiles=tiles).float()
    scale = float((exact - h.float()).abs().max())
    return float((ours - exact).abs().max()) / scale, float((module - exact).abs().max()) / scale


@interpreted
@pytest.mark.parametrize("chunk", [0, 25])
def test_block_matches_the_module_float32_cpu(chunk):
    """70 frames (not a multiple of the tiles), the last 10 keys of row 1 padded (and its output frames zeroed
    there), full and chunk-causal masks, a modulation per batch row, head 0's q/k rotated."""
    block = _block()
    args = _inputs(128, 70, 10, chunk, 32, "cpu", torch.float32)
    kernel_err, _ = _errors(block, block, *args, tiles=SMALL)
    assert kernel_err <= 1e-5, kernel_err


@interpreted
def test_the_rotation_touches_only_head_0_of_q_and_k_cpu():
    """A rotation table that differs only at frame 3 changes q/k of head 0 there: the kernel's q/k/v product with
    that table differs from the unrotated one in exactly those columns and rows."""
    block = _block()
    h, modulation, _, _, (cos, sin) = _inputs(128, 40, 0, 0, 32, "cpu", torch.float32)
    w, b = dk.fuse_qkv(block)
    rows = h.reshape(80, 128)
    plain = dk.modulated_ln_linear(rows, modulation, 0, 128, w, b, 40, tile=SMALL.ln_linear)
    turned = dk.modulated_ln_linear(rows, modulation, 0, 128, w, b, 40, rope=(cos, sin), rotate_every=128,
                                    tile=SMALL.ln_linear)
    changed = (turned != plain).nonzero()
    assert changed.numel() > 0
    columns = set(changed[:, 1].tolist())
    assert columns <= set(range(32)) | set(range(128, 160))  # head 0 of q, head 0 of k; never v
    assert set(changed[:, 0].tolist()) >= {1, 2, 41}  # frame 0 has angle 0: unrotated in both batch rows


def _compare_float16(frames, device, tiles):
    block = _block(device=device, dtype=torch.float16)
    reference = _block(device=device)  # same seed: the same weights in float32
    args = _inputs(128, frames, 10, 25, 32, device, torch.float16)
    kernel_err, module_err = _errors(block, reference, *args, tiles=tiles)
    assert kernel_err <= 1.5 * module_err + 1e-4, (kernel_err, module_err)
    assert module_err < 2e-2  # the yardstick itself is float16-sized


@interpreted
def test_block_float16_is_as_accurate_as_the_float16_module_cpu():
    for frames in (40, 70):
        _compare_float16(frames, "cpu", SMALL)


@cuda
def test_block_float16_on_the_gpu_cuda():
    for frames in (64, 96, 200):
        for tiles in (dk.TUNED_TILES, dk.SMALL_TILES):
            _compare_float16(frames, "cuda", tiles)


@functools.lru_cache(maxsize=None)
def _fixture_flow():
    return load(fixture_dir("v3") / "model").flow


@interpreted
@pytest.mark.parametrize("streaming", [False, True])
def test_the_fixture_dit_switched_to_the_kernels_gives_its_velocity_cpu(streaming):
    """The official-format v3 fixture's DiT (width 64, two heads of 64: q/k/v wider than the rows), prepared and
    switched, in float16 as the backend runs it: every block switched, velocity as close to the float32 DiT as the
    float16 compiled-block form is."""
    dit = copy.deepcopy(_fixture_flow().estimator).eval()
    half = PreparedDiT(copy.deepcopy(dit).half())
    kernels = PreparedDiT(copy.deepcopy(dit).half())
    assert dk.use_dit_kernels(kernels, frames=40) == len(dit.transformer_blocks)
    assert all(type(b) is dk.KernelDiTBlock for b in kernels.blocks)
    assert dk.use_dit_kernels(kernels) == 0  # already switched
    g = torch.Generator().manual_seed(0)
    x, mu, cond = (torch.randn(2, 80, 70, generator=g) for _ in range(3))
    mask = torch.ones(2, 1, 70)
    mask[:, :, 60:] = 0
    t, spks = torch.tensor([0.3, 0.3]), torch.randn(2, 80, generator=g)
    with torch.inference_mode():
        exact = dit(x, mask, mu, t, spks, cond, streaming=streaming)
        args = [a.half() for a in (x, mask, mu, t, spks, cond)]
        times = half.time_projections(args[3])
        allowed = half.attention_mask(args[1], streaming)
        kernels.attention_mask(args[1], streaming)  # keeps its rotary table, as the sampler does
        module = half(*args, times=times, allowed=allowed).float()
        ours = kernels(*args, times=times, allowed=allowed).float()
    scale = float(exact.abs().max())
    module_err = float((module - exact).abs().max()) / scale
    kernel_err = float((ours - exact).abs().max()) / scale
    assert kernel_err <= 1.5 * module_err + 1e-4, (kernel_err, module_err)


@interpreted
def test_blocks_the_kernels_cannot_take_are_left_alone_cpu():
    """Float32 weights (a GPU's float32 product would be TF32) are not switched."""
    kernels = PreparedDiT(copy.deepcopy(_fixture_flow().estimator).eval())
    assert dk.use_dit_kernels(kernels) == 0
    assert all(type(b).__name__ == "ModulatedDiTBlock" for b in kernels.blocks)
