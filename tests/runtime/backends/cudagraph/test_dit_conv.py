"""v3's DiT position convolutions as the Triton kernel (``dit_conv``) against the module math. Without a GPU the
kernel runs in Triton's CPU interpreter (conftest sets TRITON_INTERPRET=1)."""

from __future__ import annotations

import pytest
import torch

pytest.importorskip("triton", reason="the position conv kernel is a Triton kernel")

from cosydesk.model.dit import DiT, CausalConvPositionEmbedding  # noqa: E402
from cosydesk.runtime.backends.cudagraph.dit_conv import (RowPositionConvs, supports,  # noqa: E402
                                                          use_row_position_convs)
from tests.conftest import cuda, interpreted  # noqa: E402


def _embed(dim: int = 256, device: str = "cpu", seed: int = 0) -> CausalConvPositionEmbedding:
    torch.manual_seed(seed)
    embed = CausalConvPositionEmbedding(dim)  # 16 groups, kernel 31
    with torch.no_grad():
        for p in embed.parameters():
            p.mul_(4)  # past Mish's near-linear range, so a wrong tap or group shows
    return embed.to(device=device, dtype=torch.float16).eval()


def _check(device: str, frames: int) -> None:
    embed = _embed(device=device)
    rows = RowPositionConvs(embed)
    g = torch.Generator(device=device).manual_seed(1)
    h = torch.randn(2, frames, 256, device=device, generator=g).to(torch.float16)
    with torch.inference_mode():
        ours = rows(h).float()
        ref = embed.float()(h.float())  # the module on the same float16 weights, in float32
    assert ours.shape == ref.shape == (2, frames, 256)
    torch.testing.assert_close(ours, ref, rtol=2e-2, atol=2e-2)
    # causal: the first frames do not see later ones
    with torch.inference_mode():
        head = rows(h[:, :frames // 2].contiguous()).float()
    torch.testing.assert_close(head, ours[:, :frames // 2], rtol=0, atol=0)


@interpreted
@pytest.mark.parametrize("frames", [32, 45])
def test_the_kernel_gives_the_modules_position_embedding_cpu(frames):
    _check("cpu", frames)


@cuda
@pytest.mark.parametrize("frames", [32, 45, 128, 1408])
def test_the_kernel_gives_the_modules_position_embedding_on_the_gpu(frames):
    _check("cuda", frames)


@interpreted
def test_a_dit_takes_the_kernel_and_keeps_its_output_cpu():
    torch.manual_seed(0)
    dit = DiT(dim=256, depth=1, heads=4, dim_head=64, ff_mult=2, mu_dim=80, spk_dim=80).eval()
    x, mu, cond = (torch.randn(2, 80, 40) for _ in range(3))
    mask, t, spks = torch.ones(2, 1, 40), torch.tensor([0.4, 0.4]), torch.randn(2, 80)
    half = dit.half()
    with torch.inference_mode():
        reference = half.float()(x, mask, mu, t, spks, cond).clone()
    half = half.half()
    assert use_row_position_convs(half)
    assert type(half.input_embed.conv_pos_embed) is RowPositionConvs
    with torch.inference_mode():
        embedded = half.float()  # the rest of the DiT in float32 on the CPU; the kernel keeps float16 taps
        ours = embedded(x, mask, mu, t, spks, cond)
    torch.testing.assert_close(ours, reference, rtol=3e-2, atol=3e-2)


def test_layouts_the_kernel_does_not_take_stay_modules():
    narrow = _embed(dim=64)  # 4 channels a group: too narrow for tl.dot
    assert not supports(narrow)
    assert not supports(_embed().float())  # float32 weights (tl.dot would run at TF32)
    dit = DiT(dim=64, depth=1, heads=2, dim_head=32, mu_dim=80, spk_dim=80).half()
    assert not use_row_position_convs(dit) and type(dit.input_embed.conv_pos_embed) is CausalConvPositionEmbedding
