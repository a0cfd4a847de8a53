"""Triton kernels of the estimator's transformer block (cudagraph backend, on by default) against the module math.

Without a GPU they run in Triton's CPU interpreter (conftest sets TRITON_INTERPRET=1).
"""

from __future__ import annotations

import pytest
import torch

pytest.importorskip("triton", reason="the flow kernels are Triton kernels")

from cosydesk.model.unet import BasicTransformerBlock, attention_allowed  # noqa: E402
from cosydesk.runtime.backends.cudagraph import flow_kernels as fk  # noqa: E402
from cosydesk.runtime.backends.cudagraph.fuse import fuse_estimator_attention  # noqa: E402
from tests.conftest import cuda, interpreted  # noqa: E402


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
    """Max error of the kernels vs the module, relative to the size of what the block adds to x (the residual
    stream itself is much larger and would hide errors in the branches)."""
    ref = block(x, allowed)
    ours = fk.transformer_block_forward(block, x, allowed)
    scale = float((ref.float() - x.float()).abs().max())
    err = float((ours.float() - ref.float()).abs().max()) / scale
    assert err <= tol, err
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


def _compare_float16(width, heads, head_dim, frames, device):
    """Float16 kernels are as close to the float32 module as the float16 module is (errors relative to the
    block's own contribution; on the interpreter both are ~2e-3, i.e. about one float16 step of the output):
    a wrong scale, mask or layout shows far above that, a rounding placed differently does not."""
    block = _block(width, heads, head_dim, device=device, dtype=torch.float16)
    reference = _block(width, heads, head_dim, device=device)  # same seed: the same weights in float32
    x, allowed = _inputs(2, frames, width, 10, 25, device, torch.float16)
    with torch.no_grad():
        exact = reference(x.float(), allowed)
        scale = float((exact - x.float()).abs().max())
        module_err = float((block(x, allowed).float() - exact).abs().max()) / scale
        kernel_err = float((fk.transformer_block_forward(block, x, allowed).float() - exact).abs().max()) / scale
    assert kernel_err <= 1.5 * module_err + 1e-4, (kernel_err, module_err)
    assert module_err < 1e-2  # the yardstick itself is float16-sized


@interpreted
def test_block_float16_is_as_accurate_as_the_float16_module_cpu():
    for frames in (40, 70):
        _compare_float16(64, 2, 32, frames, "cpu")


@interpreted
def test_a_fully_masked_first_key_block_cpu():
    """Rows whose first 64-key block is entirely masked (keys 0..65 off): the online softmax starts from
    nothing there (no NaN, no weight for masked keys)."""
    block = _block(64, 2, 32)
    x, allowed = _inputs(2, 140, 64, 0, 0, "cpu", torch.float32)
    allowed = allowed.clone()
    allowed[:, :, :66] = False
    with torch.no_grad():
        _compare(block, x, allowed, 1e-5)


@interpreted
def test_one_batch_row_and_a_transposed_view_cpu():
    """B = 1 and the [B, C, T] -> [B, T, C] transposed view that ``_run_transformers`` really passes."""
    block = _block(64, 2, 32)
    x = torch.randn(1, 64, 96, generator=torch.Generator().manual_seed(2)).transpose(1, 2)
    mask = torch.ones(1, 1, 96)
    with torch.no_grad():
        _compare(block, x, attention_allowed(mask, 25), 1e-5)


def test_the_mask_shape_is_checked():
    with pytest.raises(ValueError, match="attention mask of shape"):
        fk.masked_attention(torch.zeros(8, 3 * 64), torch.ones(1, 4, 4, dtype=torch.bool), 2, 4, 2, 32)


@interpreted
@interpreted
def test_only_supported_blocks_are_switched_after_a_trial_run_cpu():
    """Fused q/k/v, power-of-two widths, float16 only; the switch runs one block both ways first."""
    plain = BasicTransformerBlock(64, 2, 32).half()
    fused = _block(64, 2, 32, dtype=torch.float16)
    narrow = _block(24, 2, 12, dtype=torch.float16)
    wide32 = _block(64, 2, 32)  # float32: tl.dot would be TF32 on a GPU
    root = torch.nn.ModuleList([plain, fused, narrow, wide32])
    assert fk.use_flow_kernels(root, frames=40) == 1
    assert type(fused) is fk.KernelTransformerBlock
    assert all(type(b) is BasicTransformerBlock for b in (plain, narrow, wide32))


@interpreted
@pytest.mark.parametrize("tiles", [fk.TUNED_TILES, fk.SMALL_TILES], ids=["tuned", "small"])
def test_both_tile_sets_match_the_module_float32_cpu(tiles):
    """70 frames (64-row attention blocks end part-way), a padded batch row, chunks."""
    block = _block(64, 2, 32)
    x, allowed = _inputs(2, 70, 64, 10, 25, "cpu", torch.float32)
    with torch.no_grad():
        ref = block(x, allowed)
        ours = fk.transformer_block_forward(block, x, allowed, tiles=tiles)
    assert float((ours - ref).abs().max()) <= 1e-5 * float((ref - x).abs().max())


@interpreted
def test_a_gpu_short_of_shared_memory_gets_the_small_tiles(monkeypatch):
    """The tuned tiles fail (as on a 64 KB-per-block GPU): the blocks switch with the small ones, and say so."""
    real_forward = fk.transformer_block_forward

    def forward(block, x, allowed, pdl=False, tiles=fk.TUNED_TILES):
        if tiles == fk.TUNED_TILES:
            raise RuntimeError("out of resource: shared memory")
        return real_forward(block, x, allowed, pdl, tiles)

    monkeypatch.setattr(fk, "transformer_block_forward", forward)
    fused = _block(64, 2, 32, dtype=torch.float16)
    with pytest.warns(RuntimeWarning, match="shared memory.*using pdl=False"):
        assert fk.use_flow_kernels(torch.nn.ModuleList([fused]), frames=40) == 1
    assert type(fused) is fk.KernelTransformerBlock and fused.tiles == fk.SMALL_TILES and not fused.pdl


@interpreted
@pytest.mark.parametrize("k", [64, 512])
def test_whole_k_product_matches_the_looped_one_cpu(k):
    """70 rows (not a multiple of the 16-row tile: masked rows), 48 columns (a part-filled 32-column block),
    with and without bias: the one-product kernel gives torch's and the looped kernel's result."""
    g = torch.Generator().manual_seed(0)
    a, w = torch.randn(70, k, generator=g), torch.randn(48, k, generator=g) * 0.1
    b, res = torch.randn(48, generator=g), torch.randn(70, 48, generator=g)
    assert fk.whole_k_tile(70, k, a) == (16, 32, 4)
    for bias in (b, None):
        ref = res + torch.nn.functional.linear(a, w, bias)
        whole = fk.linear_residual(a, w, bias, res, whole_k=True)
        loop = fk.linear_residual(a, w, bias, res, tile=(16, 16, 4), block_k=32)
        assert torch.allclose(whole, ref, atol=1e-4, rtol=1e-4)
        assert torch.allclose(whole, loop, atol=1e-4, rtol=1e-4)


def test_whole_k_tiles_follow_the_rows_and_the_shared_memory(monkeypatch):
    a = torch.zeros(1, dtype=torch.float16)
    assert fk.whole_k_tile(256, 1024, a) == (16, 32, 4)  # bucket 128, CFG batch of 2
    assert fk.whole_k_tile(512, 1024, a) == (32, 32, 8)
    assert fk.whole_k_tile(4096, 512, a) == (64, 32, 8)
    assert fk.whole_k_tile(256, 768, a) is None and fk.whole_k_tile(256, 2048, a) is None  # the loop serves those
    monkeypatch.setattr(fk, "_shared_memory_limit", lambda device: 100 * 1024)  # a consumer GPU
    assert fk.whole_k_tile(512, 1024, a) == (16, 32, 4)  # (16 + 32) x 1024 x 2 B fits, 32 rows would not
    monkeypatch.setattr(fk, "_shared_memory_limit", lambda device: 64 * 1024)  # Turing
    assert fk.whole_k_tile(256, 1024, a) is None
    assert fk.whole_k_tile(256, 512, a) == (16, 32, 4)


def test_ln_linear_tiles_follow_the_rows_and_the_shared_memory(monkeypatch):
    x = torch.zeros(1, dtype=torch.float16)
    tile = lambda rows, tiles=fk.TUNED_TILES: fk.ln_linear_tile(rows, 256, x, tiles)  # noqa: E731
    assert tile(192) == tile(256) == (16, 256, 8)  # buckets 96 and 128 (the first chunk's), CFG batch of 2
    assert tile(320) == (16, 128, 4)
    assert tile(384) == tile(1024) == fk.TUNED_TILES.ln_linear
    assert tile(256, fk.SMALL_TILES) == fk.SMALL_TILES.ln_linear
    monkeypatch.setattr(fk, "_shared_memory_limit", lambda device: 100 * 1024)  # a consumer GPU
    assert tile(256) == (16, 128, 4)  # (16 + 256) x 256 x 2 B does not fit, (16 + 128) x 256 x 2 B does
    assert fk.ln_linear_tile(256, 512, x, fk.TUNED_TILES) == (16, 128, 4)  # wider rows halve block_n: 16 x 64
    assert tile(384) == fk.TUNED_TILES.ln_linear


@interpreted
def test_the_small_tiles_keep_the_looped_product_cpu(monkeypatch):
    def refuse(*args):
        raise AssertionError("whole-K form asked for with the small tiles")

    monkeypatch.setattr(fk, "whole_k_tile", refuse)
    block = _block(64, 2, 32)
    x, allowed = _inputs(2, 40, 64, 0, 25, "cpu", torch.float32)
    with torch.no_grad():
        fk.transformer_block_forward(block, x, allowed, tiles=fk.SMALL_TILES)
        with pytest.raises(AssertionError, match="whole-K form"):
            fk.transformer_block_forward(block, x, allowed, tiles=fk.TUNED_TILES)


def test_a_failing_kernel_leaves_the_blocks_alone(monkeypatch):
    def broken(*args):
        raise RuntimeError("no such kernel on this GPU")

    monkeypatch.setattr(fk, "transformer_block_forward", broken)
    fused = _block(64, 2, 32, dtype=torch.float16)
    with pytest.warns(RuntimeWarning, match="flow Triton kernels unavailable"):
        assert fk.use_flow_kernels(torch.nn.ModuleList([fused])) == 0
    assert type(fused) is BasicTransformerBlock


@cuda
@pytest.mark.gpu
def test_full_size_block_on_the_gpu():
    """The released width (256, 8 heads of 64), float16, chunked attention, at frame counts whose rows take each
    ``ln_linear`` tile (96 and 128: 16 x 256, 160: 16 x 128, 256: the tuned one; half the buckets are not
    multiples of the 64-row tiles)."""
    for frames in (128, 96, 160, 256):
        _compare_float16(256, 8, 64, frames, "cuda")
    block = _block(256, 8, 64, device="cuda", dtype=torch.float16)
    assert fk.use_flow_kernels(torch.nn.ModuleList([block])) == 1
    # the whole-K products at the widths and row counts the buckets give, against the looped kernel
    g = torch.Generator(device="cuda").manual_seed(4)
    for rows, k in ((256, 512), (256, 1024), (512, 1024), (1024, 1024)):
        assert fk.whole_k_tile(rows, k, block.attn1.w_qkv) is not None
        a = torch.randn(rows, k, device="cuda", generator=g).half()
        w = (torch.randn(256, k, device="cuda", generator=g) * 0.05).half()
        b = torch.randn(256, device="cuda", generator=g).half()
        res = torch.randn(rows, 256, device="cuda", generator=g).half()
        whole = fk.linear_residual(a, w, b, res, whole_k=True).float()
        loop = fk.linear_residual(a, w, b, res).float()
        assert float((whole - loop).abs().max()) <= 1e-2 * float((loop - res.float()).abs().max())


def test_flow_kernels_default_on_cuda_only(monkeypatch):
    from cosydesk.runtime.backends.cudagraph import model

    monkeypatch.delenv("COSYDESK_FLOW_KERNELS", raising=False)
    assert not model.flow_kernels_wanted(torch.device("cpu"))  # only on CUDA with Triton
    monkeypatch.setattr(model, "compile_enabled", lambda device: device.type == "cuda")  # as on a GPU machine
    assert model.flow_kernels_wanted(torch.device("cuda"))  # on by default
    monkeypatch.setenv("COSYDESK_FLOW_KERNELS", "0")
    assert not model.flow_kernels_wanted(torch.device("cuda"))


@cuda
@pytest.mark.gpu
def test_programmatic_dependent_launch_changes_nothing_on_the_gpu():
    """Four blocks chained (20 kernels, each launched before the previous one ended) in a CUDA graph, as the
    estimator runs them: bit-identical to plain launches, over inputs that change between replays."""
    from cosydesk.runtime.backends.cudagraph.pdl import pdl_available

    if not pdl_available(torch.device("cuda")):
        pytest.skip("programmatic dependent launch needs a Hopper GPU and a Triton with gdc_wait")
    blocks = [_block(256, 8, 64, seed=i, device="cuda", dtype=torch.float16) for i in range(4)]
    x, allowed = _inputs(2, 128, 256, 20, 25, "cuda", torch.float16)
    g = torch.Generator(device="cuda").manual_seed(3)
    inputs = [torch.randn(x.shape, device="cuda", generator=g).half() for _ in range(3)]
    results = []
    for pdl in (False, True):
        static_in = torch.zeros_like(x)

        def body():
            h = static_in
            for block in blocks:
                h = fk.transformer_block_forward(block, h, allowed, pdl)
            return h

        body()  # compile outside the capture
        graph = torch.cuda.CUDAGraph()
        with torch.cuda.graph(graph):
            out = body()
        seen = []
        for value in inputs:
            static_in.copy_(value)
            graph.replay()
            seen.append(out.clone())
        results.append(torch.stack(seen))
    assert torch.equal(results[0], results[1])
    from cosydesk.runtime.backends.cudagraph.pdl import compiled_with_pdl

    kernels = (fk.ln_linear_kernel, fk.linear_residual_whole_k_kernel, fk.masked_attention_kernel)
    assert all(compiled_with_pdl(k) for k in kernels)  # PDL really was compiled in and launched
