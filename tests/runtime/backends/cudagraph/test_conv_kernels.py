"""The estimator's conv kernel (``conv_kernels``) and the row-layout causal estimator (``row_estimator``) against
the module math. Without a GPU the kernels run in Triton's CPU interpreter (conftest sets TRITON_INTERPRET=1)."""

from __future__ import annotations

import pytest
import torch

pytest.importorskip("triton", reason="the conv kernels are Triton kernels")

import triton  # noqa: E402
import triton.language as tl  # noqa: E402

from cosydesk.model.unet import CausalConditionalDecoder, ConditionalDecoder, ConvNormMish, ResnetBlock1D  # noqa: E402
from cosydesk.runtime.backends.cudagraph import row_estimator as re_  # noqa: E402
from cosydesk.runtime.backends.cudagraph.conv_kernels import ChannelTiles, _mish, conv_rows, conv_taps  # noqa: E402
from cosydesk.runtime.backends.cudagraph.fuse import convs_as_gemm, fuse_estimator_attention  # noqa: E402
from tests.conftest import cuda, interpreted  # noqa: E402


def _randomise_norms(root: torch.nn.Module, seed: int = 0) -> None:
    """LayerNorm weights/biases off their 1/0 defaults, so a missing or misplaced affine shows."""
    g = torch.Generator().manual_seed(seed)
    with torch.no_grad():
        for m in root.modules():
            if isinstance(m, torch.nn.LayerNorm):
                m.weight.copy_(1 + 0.2 * torch.randn(m.weight.shape, generator=g))
                m.bias.copy_(0.2 * torch.randn(m.bias.shape, generator=g))


def _rows(x: torch.Tensor) -> torch.Tensor:
    """[B, C, T] -> rows [B*T, C]."""
    return x.transpose(1, 2).reshape(-1, x.shape[1]).contiguous()


def _mask(batch: int, frames: int, padded: int) -> torch.Tensor:
    mask = torch.ones(batch, 1, frames)
    if padded:
        mask[-1, :, frames - padded:] = 0
    return mask


@interpreted
@pytest.mark.parametrize("tile", [(16, 64, 4), ChannelTiles(16, 16, 4)], ids=["fused", "channel-tiled"])
@pytest.mark.parametrize("frames,padded", [(37, 9), (16, 0)])
def test_resnet_halves_match_the_module_cpu(frames, padded, tile):
    """Block 1 + time projection and block 2 + masked 1x1 residual conv, for a resnet whose input is wider than
    its output (the up block's 2x width); 37 frames: not a multiple of the 16-frame tile; padded frames. Both
    forms: one fused kernel per half, and the channel-tiled conv (2 channel tiles) + row-norm kernel."""
    torch.manual_seed(0)
    resnet = ResnetBlock1D(48, 32, 20, causal=True).eval()
    _randomise_norms(resnet)
    x = torch.randn(2, 48, frames)
    mask = _mask(2, frames, padded)
    time_emb = torch.randn(2, 20)
    with torch.no_grad():
        ref = resnet(x, mask, time_emb)
        add = resnet.mlp(time_emb)
        b1, b2 = resnet.block1.block, resnet.block2.block
        rows, rows_mask = _rows(x), mask.reshape(-1)
        mid = conv_rows(rows, rows_mask, 2, conv_taps(b1[0].weight), b1[0].bias, norm=b1[2], add=add, tile=tile)
        ours = conv_rows(mid, rows_mask, 2, conv_taps(b2[0].weight), b2[0].bias, norm=b2[2],
                         res=(rows, conv_taps(resnet.res_conv.weight), resnet.res_conv.bias), tile=tile)
    assert torch.allclose(ours, _rows(ref), atol=2e-5, rtol=1e-5), float((ours - _rows(ref)).abs().max())


@interpreted
def test_plain_causal_conv_and_masked_projection_cpu():
    """No norm: a causal kernel-3 conv of the masked input; a 1x1 projection to 10 channels (not a power of two)
    with the output masked too, as the estimator's last layer; a 1x1 conv to 40 channels split over 16-channel
    programs."""
    torch.manual_seed(1)
    block = ConvNormMish(24, 24, causal=True)
    conv = block.block[0]
    proj = torch.nn.Conv1d(24, 10, 1)
    x = torch.randn(2, 24, 21)
    mask = _mask(2, 21, 5)
    rows, rows_mask = _rows(x), mask.reshape(-1)
    with torch.no_grad():
        ours = conv_rows(rows, rows_mask, 2, conv_taps(conv.weight), conv.bias)
        assert torch.allclose(ours, _rows(conv(x * mask)), atol=1e-5)
        ours = conv_rows(rows, rows_mask, 2, conv_taps(proj.weight), proj.bias, mask_out=True)
        assert torch.allclose(ours, _rows(proj(x * mask) * mask), atol=1e-5)
        wide = torch.nn.Conv1d(24, 40, 1)
        split = conv_rows(rows, rows_mask, 2, conv_taps(wide.weight), wide.bias, block_c=16)
        assert torch.allclose(split, _rows(wide(x * mask)), atol=1e-5)  # 3 programs, the last one partly masked
        # the channel-tiled form: the same convs (40 channels in 16-channel tiles); the masked projection keeps
        # the fused kernel
        tiles = ChannelTiles(16, 16, 4)
        ours = conv_rows(rows, rows_mask, 2, conv_taps(conv.weight), conv.bias, tile=tiles)
        assert torch.allclose(ours, _rows(conv(x * mask)), atol=1e-5)
        ours = conv_rows(rows, rows_mask, 2, conv_taps(wide.weight), wide.bias, tile=tiles)
        assert torch.allclose(ours, _rows(wide(x * mask)), atol=1e-5)
        ours = conv_rows(rows, rows_mask, 2, conv_taps(proj.weight), proj.bias, mask_out=True, tile=tiles)
        assert torch.allclose(ours, _rows(proj(x * mask) * mask), atol=1e-5)


def test_shapes_are_checked():
    taps = torch.zeros(3, 8, 8)
    with pytest.raises(ValueError, match="do not fit"):
        conv_rows(torch.zeros(10, 6), torch.ones(10), 2, taps, torch.zeros(8))
    with pytest.raises(ValueError, match="do not fit"):
        conv_rows(torch.zeros(9, 8), torch.ones(9), 2, taps, torch.zeros(8))


def _estimator(dtype=torch.float32, device="cpu", seed=0, mid=2):
    """A small v2-layout estimator (one level, causal, LayerNorm blocks), prepared as the graph backend does."""
    torch.manual_seed(seed)
    est = CausalConditionalDecoder(in_channels=32, out_channels=8, channels=(32,), attention_head_dim=16,
                                   n_blocks=1, num_mid_blocks=mid, num_heads=2, static_chunk_size=10).eval()
    _randomise_norms(est, seed)
    est.requires_grad_(False).to(device=device, dtype=dtype)
    fuse_estimator_attention(est)
    convs_as_gemm(est)
    return est


def _inputs(frames, padded, dtype=torch.float32, device="cpu", batch=2):
    g = torch.Generator().manual_seed(3)
    x, mu, cond = (torch.randn(batch, 8, frames, generator=g) for _ in range(3))
    spks = torch.randn(batch, 8, generator=g)
    mask = _mask(batch, frames, padded)
    t = torch.tensor([0.25] * batch)
    return [v.to(device=device, dtype=dtype) for v in (x, mask, mu, t, spks, cond)]


@interpreted
@pytest.mark.parametrize("tile", [None, ChannelTiles(16, 16, 4), re_.CHANNEL_TILES],
                         ids=["chosen", "channel-tiled", "channel-tiled-default"])
@pytest.mark.parametrize("streaming", [True, False])
def test_row_estimator_matches_the_module_cpu(streaming, tile):
    """The whole estimator, switched by ``use_row_estimator`` (its trial run included), equals the module's
    forward: chunked (streaming) and full attention, a padded batch row, 27 frames; with the tile the trial chose
    on this machine and with the channel-tiled form (chosen where PDL runs)."""
    est = _estimator()
    args = _inputs(27, 6)
    with torch.no_grad():
        ref = CausalConditionalDecoder.forward(est, *args, streaming=streaming)
        assert re_.use_row_estimator(est, frames=20)
        assert type(est) is re_.RowCausalDecoder
        if tile is not None:
            est.conv_tile = tile
        ours = est(*args, streaming=streaming)
    assert ours.shape == ref.shape
    assert torch.allclose(ours, ref, atol=2e-5, rtol=1e-5), float((ours - ref).abs().max())


@interpreted
def test_valid_frames_do_not_depend_on_padding_cpu():
    """Graph buckets pad requests: the first 20 frames are the same alone and padded to 32."""
    est = _estimator()
    assert re_.use_row_estimator(est, frames=20)
    alone = _inputs(20, 0, batch=1)
    padded = _inputs(32, 12, batch=1)
    for a, p in zip(alone, padded):
        if a.dim() == 3:
            p[..., :20] = a
    padded[4].copy_(alone[4])
    with torch.no_grad():
        short = est(*alone, streaming=True)
        long = est(*padded, streaming=True)
    assert torch.allclose(short, long[..., :20], atol=1e-5)


@interpreted
def test_graphed_solver_with_precomputed_times_and_masks_matches_the_solver_cpu(monkeypatch):
    """With the row estimator the graphed solver takes the time projections from a table made at load and the
    attention mask from a per-request buffer: same output as the plain solver (both modes, requests of
    different lengths in the 48-frame bucket, padded tails), and inside the steps neither is computed again."""
    from cosydesk.model.cfm import FlowMatchingSampler, cosine_time_grid
    from cosydesk.runtime.backends.cudagraph.cfm import GraphedSampler, solve_cfm

    est = _estimator()
    assert re_.use_row_estimator(est, frames=20)
    sampler = FlowMatchingSampler(est, inference_cfg_rate=0.7, n_steps=3)
    graphed = GraphedSampler(sampler, [32, 48], (False, True), spk_dim=8, mel_dim=8)
    assert graphed.prepared and graphed.time_table.shape == (3, 2, est.time_weight.shape[0])
    calls = {"time": 0, "mask": 0}
    real_time, real_mask = est.time_projections, est.attention_mask
    monkeypatch.setattr(est, "time_projections", lambda *a: calls.__setitem__("time", calls["time"] + 1) or real_time(*a))
    monkeypatch.setattr(est, "attention_mask", lambda *a: calls.__setitem__("mask", calls["mask"] + 1) or real_mask(*a))
    g = torch.Generator().manual_seed(5)
    for streaming, frames in ((True, 40), (False, 34)):  # one bucket (48), different lengths and modes
        z, mu, cond = (torch.randn(1, 8, frames, generator=g) for _ in range(3))
        spks, mask = torch.randn(1, 8, generator=g), torch.ones(1, 1, frames)
        with torch.no_grad():
            ref = solve_cfm(sampler, z, mask, mu, spks, cond, streaming, cosine_time_grid(3))
            calls["time"] = calls["mask"] = 0
            ours = graphed(z, mask, mu, spks, cond, streaming=streaming)
        assert calls == {"time": 0, "mask": 1}, calls
        assert torch.allclose(ours, ref, atol=1e-5, rtol=1e-5), (streaming, frames)


@interpreted
@pytest.mark.parametrize("channel_tiled", [False, True], ids=["chosen", "channel-tiled"])
def test_row_estimator_float16_rounds_where_the_module_does_cpu(channel_tiled):
    """Float16 (where the rounding points matter; float32 hides them): batch 1 and 2, odd lengths, a padded
    row; the row form is as close to the float32 module as the float16 module is."""
    exact, half = _estimator(), _estimator(dtype=torch.float16)
    assert re_.use_row_estimator(half, frames=20)
    if channel_tiled:
        half.conv_tile = ChannelTiles(16, 16, 4)
    for batch, frames, padded in ((1, 7, 0), (2, 27, 6)):
        args = _inputs(frames, padded, batch=batch)
        with torch.no_grad():
            ref = CausalConditionalDecoder.forward(exact, *args, streaming=True)
            low = [a.half() for a in args]
            module = CausalConditionalDecoder.forward(half, *low, streaming=True).float()
            ours = half(*low, streaming=True).float()
        scale = float(ref.abs().max())
        module_err, ours_err = (float((v - ref).abs().max()) / scale for v in (module, ours))
        assert ours_err <= 1.5 * module_err + 1e-4, (batch, frames, ours_err, module_err)
        assert float((ours - module).abs().max()) / scale < 5e-3


@triton.jit
def _mish_kernel(x_ptr, out_ptr, N: tl.constexpr):
    i = tl.arange(0, N)
    tl.store(out_ptr + i, _mish(tl.load(x_ptr + i)))


@interpreted
def test_mish_keeps_its_precision_for_very_negative_inputs_cpu():
    """The kernel's Mish against torch's over -60..25 (relative error: tiny negative outputs included, where
    the 1 - 2 / (e^2s + 1) form of tanh(softplus) loses every digit)."""
    x = torch.linspace(-60, 25, 256)
    out = torch.empty_like(x)
    _mish_kernel[(1,)](x, out, N=256)
    ref = torch.nn.functional.mish(x.double()).float()
    assert torch.allclose(out, ref, rtol=1e-5, atol=1e-30), float(((out - ref) / ref.abs().clamp_min(1e-30)).abs().max())


@interpreted
def test_one_graph_per_bucket_serves_both_attention_modes_cpu(monkeypatch):
    """With the row estimator the streaming and full-attention steps differ only in the mask buffer, so one
    graph per bucket is captured; replayed for a non-streaming request it gives the non-streaming solve."""
    from cosydesk.model.cfm import FlowMatchingSampler, cosine_time_grid
    from cosydesk.runtime.backends.cudagraph import cfm

    est = _estimator()
    assert re_.use_row_estimator(est, frames=20)
    sampler = FlowMatchingSampler(est, inference_cfg_rate=0.7, n_steps=2)
    graphed = cfm.GraphedSampler(sampler, [32], (False, True), spk_dim=8, mel_dim=8)
    captured = []

    class Replayed:  # stands in for a CUDA graph: replaying it runs the captured job
        def __init__(self, job):
            self.replay = job

    def capture(jobs, *args, **kwargs):
        captured.extend(name for name, _ in jobs)
        return {name: Replayed(job) for name, job in jobs}

    monkeypatch.setattr(cfm, "capture_graphs", capture)
    graphed.capture()
    assert captured == [(32, True)]
    g = torch.Generator().manual_seed(6)
    z, mu, cond = (torch.randn(1, 8, 30, generator=g) for _ in range(3))
    spks, mask = torch.randn(1, 8, generator=g), torch.ones(1, 1, 30)
    refs = []
    with torch.no_grad():
        for streaming in (False, True):
            refs.append(cfm.solve_cfm(sampler, z, mask, mu, spks, cond, streaming, cosine_time_grid(2)))
            ours = graphed(z, mask, mu, spks, cond, streaming=streaming)
            assert graphed.eager_calls == 0
            assert torch.allclose(ours, refs[-1], atol=1e-5, rtol=1e-5), streaming
    assert not torch.allclose(refs[0], refs[1], atol=1e-3)  # the modes differ here: the check above means something


def test_unsupported_estimators_keep_their_forward():
    v1 = ConditionalDecoder(in_channels=32, out_channels=8, channels=(32, 32), attention_head_dim=16,
                            n_blocks=1, num_mid_blocks=1, num_heads=2)
    assert "not the causal U-Net" in re_.why_not_rows(v1)
    assert not re_.use_row_estimator(v1)
    assert type(v1) is ConditionalDecoder
    two_levels = CausalConditionalDecoder(in_channels=32, out_channels=8, channels=(32, 32), attention_head_dim=16,
                                          n_blocks=1, num_mid_blocks=1, num_heads=2)
    assert "more than one U-Net level" in re_.why_not_rows(two_levels)


@interpreted
def test_a_failing_trial_leaves_the_module_with_a_warning(monkeypatch):
    """Every launch variant fails (as a Triton that cannot compile the kernel): warning, module forward kept."""
    est = _estimator()

    def broken(*args, **kwargs):
        raise RuntimeError("no kernel today")

    monkeypatch.setattr(re_, "conv_rows", broken)
    with pytest.warns(RuntimeWarning, match="row kernels unavailable.*no kernel today"):
        assert not re_.use_row_estimator(est, frames=20)
    assert type(est) is CausalConditionalDecoder
    assert "time_weight" not in est.__dict__ and not any("taps" in m.__dict__ for m in est.modules())


@cuda
@pytest.mark.gpu
def test_full_size_row_estimator_float16_in_a_graph():
    """The released v2 estimator shape in float16 on the GPU, captured in a CUDA graph: as close to the float32
    module as the float16 module is; with PDL (where available) bit-identical to plain launches."""
    from cosydesk.runtime.backends.cudagraph.flow_kernels import use_flow_kernels
    from cosydesk.runtime.backends.cudagraph.pdl import pdl_available

    def build(dtype):
        torch.manual_seed(0)
        est = CausalConditionalDecoder(320, 80, (256,), 64, 4, 12, 8, "gelu", static_chunk_size=50).eval()
        _randomise_norms(est)
        est.requires_grad_(False).to(device="cuda", dtype=dtype)
        fuse_estimator_attention(est)
        convs_as_gemm(est)
        return est

    exact, half = build(torch.float32), build(torch.float16)
    frames = 150
    g = torch.Generator().manual_seed(3)
    x, mu, cond = (torch.randn(2, 80, frames, generator=g).cuda() for _ in range(3))
    spks = torch.randn(2, 80, generator=g).cuda()
    mask = torch.ones(2, 1, frames, device="cuda")
    mask[1, :, 120:] = 0
    t = torch.tensor([0.4, 0.4], device="cuda")
    h = lambda v: v.half()  # noqa: E731
    with torch.inference_mode():
        ref = exact(x, mask, mu, t, spks, cond, streaming=True)
        module = half(h(x), h(mask), h(mu), h(t), h(spks), h(cond), streaming=True).float()
        use_flow_kernels(half)
        assert re_.use_row_estimator(half)
        if pdl_available(torch.device("cuda")):  # the channel-tiled form is tried first with PDL
            assert half.conv_tile == re_.CHANNEL_TILES and half.pdl
        out = torch.empty(2, 80, frames, device="cuda")
        graph = torch.cuda.CUDAGraph()
        run = lambda: out.copy_(half(h(x), h(mask), h(mu), h(t), h(spks), h(cond), streaming=True))  # noqa: E731
        run()
        torch.cuda.synchronize()
        with torch.cuda.graph(graph):
            run()
        graph.replay()
        torch.cuda.synchronize()
        scale = float(ref.abs().max())
        module_err = float((module - ref).abs().max()) / scale
        ours_err = float((out - ref).abs().max()) / scale
        assert ours_err <= 1.5 * module_err + 1e-4, (ours_err, module_err)
        if pdl_available(torch.device("cuda")):
            from cosydesk.runtime.backends.cudagraph.conv_kernels import conv_rows_kernel
            from cosydesk.runtime.backends.cudagraph.pdl import compiled_with_pdl

            assert half.pdl and compiled_with_pdl(conv_rows_kernel)
            with_pdl = out.clone()
            half.pdl = False
            plain = half(h(x), h(mask), h(mu), h(t), h(spks), h(cond), streaming=True).float()
            assert torch.equal(plain, with_pdl)


@pytest.mark.parametrize("pdl", [True, False])
def test_the_channel_tiled_form_is_tried_first_where_pdl_runs(monkeypatch, pdl):
    """Its gain comes from loading weights before the PDL wait: with PDL it is the first variant, without PDL it
    is not tried (the fused kernel with the tuned tile is)."""
    est = _estimator()
    tried = []
    monkeypatch.setattr(re_, "pdl_available", lambda device: pdl)
    monkeypatch.setattr(re_, "_trial", lambda est, frames, pdl, tile: tried.append((pdl, tile)))
    assert re_.use_row_estimator(est, frames=20)
    expected = (True, re_.CHANNEL_TILES) if pdl else (False, re_.TUNED_CONV_TILE)
    assert tried == [expected] and (est.pdl, est.conv_tile) == expected
