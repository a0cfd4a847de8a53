"""v3's DiT rotation + attention as one Triton kernel (``dit_attention``) against the module math, and the prepared DiT
using it. Without a GPU the kernel runs in Triton's interpreter (conftest sets TRITON_INTERPRET=1)."""

from __future__ import annotations

import copy
import functools

import pytest
import torch

pytest.importorskip("triton", reason="the DiT attention kernel is a Triton kernel")

from cosydesk.model import load  # noqa: E402
from cosydesk.model.dit import attention_masks  # noqa: E402
from cosydesk.runtime.backends.cudagraph import dit_attention as da  # noqa: E402
from cosydesk.runtime.backends.cudagraph.dit_prepared import (  # noqa: E402
    FusedQKVAttention,
    KernelQKVAttention,
    fuse_qkv,
    use_prepared_dit,
)
from tests.conftest import interpreted  # noqa: E402
from tests.support.paths import fixture_dir  # noqa: E402


@functools.lru_cache(maxsize=None)
def _flow():
    return load(fixture_dir("v3") / "model").flow


def _attention(seed: int = 0) -> FusedQKVAttention:
    """The fixture's first DiT attention (2 heads of 64, rotary over head 0), q/k/v fused, with fresh weights."""
    attn = copy.deepcopy(_flow().estimator.transformer_blocks[0].attn)
    torch.manual_seed(seed)
    with torch.no_grad():
        for p in attn.parameters():
            p.normal_(0.0, 0.3)
    fuse_qkv(attn)
    return attn


@interpreted
@pytest.mark.parametrize("dtype, tol", [(torch.float32, 1e-5), (torch.float16, 3e-3)])
@pytest.mark.parametrize("frames, valid, chunk", [(70, 70, 0), (70, 51, 25), (128, 100, 50)])
def test_kernel_gives_the_module_attention(dtype, tol, frames, valid, chunk):
    """Rotated head 0, plain other heads, padding and the streaming chunk rule, frames not a multiple of the
    block: the kernel's [B, T, H*D] is the module's attention before its output projection."""
    attn = _attention()
    g = torch.Generator().manual_seed(frames)
    qkv = torch.randn(2, frames, attn.qkv.out_features, generator=g).to(dtype)
    mask = torch.ones(2, 1, frames)
    mask[1, :, valid:] = 0
    allowed, query_valid = attention_masks(mask, chunk)
    cos, sin = _flow().estimator.rotary_embed(frames, torch.device("cpu"))
    ours = da.launch(qkv, allowed[:, 0], cos, sin, attn.heads).float()
    ref = da._module_mix(attn, qkv.float(), allowed[:, 0], (cos, sin), query_valid).float()
    scale = ref.abs().max()
    assert float((ours - ref).abs().max() / scale) < tol


@interpreted
def test_the_rotation_matters_and_only_for_head_zero():
    """Against the module without rotation the kernel differs in head 0 only (the test above would pass for a
    kernel that forgot to rotate if the table were the identity)."""
    attn = _attention(seed=1)
    frames = 40
    qkv = torch.randn(1, frames, attn.qkv.out_features, generator=torch.Generator().manual_seed(5))
    allowed = torch.ones(1, frames, frames, dtype=torch.bool)
    cos, sin = _flow().estimator.rotary_embed(frames, torch.device("cpu"))
    ours = da.launch(qkv, allowed, cos, sin, attn.heads)
    plain = da._module_mix(attn, qkv, allowed, (torch.ones_like(cos), torch.zeros_like(sin)), None)
    head = attn.dim_head
    assert float((ours[..., :head] - plain[..., :head]).abs().max()) > 1e-2
    torch.testing.assert_close(ours[..., head:], plain[..., head:], rtol=0, atol=1e-5)


@interpreted
def test_the_prepared_dit_with_the_kernel_gives_the_plain_velocity():
    """``use_dit_attention_kernel`` switches every block after its trial, and the prepared DiT then gives the plain
    DiT's velocity in both attention modes (the boolean mask reaches the kernel, not the additive one)."""
    sampler = copy.deepcopy(_flow().decoder).eval()
    dit = copy.deepcopy(sampler.estimator)
    use_prepared_dit(sampler)
    prepared = sampler.estimator
    assert da.use_dit_attention_kernel(prepared) == len(prepared.blocks)
    assert all(type(b.attn) is KernelQKVAttention for b in prepared.dit.transformer_blocks)
    g = torch.Generator().manual_seed(9)
    frames = 90
    x, mu, cond = (torch.randn(2, 80, frames, generator=g) for _ in range(3))
    mask = torch.ones(2, 1, frames)
    mask[1, :, 70:] = 0
    t, spks = torch.tensor([0.3, 0.3]), torch.randn(2, 80, generator=g)
    with torch.inference_mode():
        for streaming in (False, True):
            ours = prepared(x, mask, mu, t, spks, cond, times=prepared.time_projections(t),
                            allowed=prepared.attention_mask(mask, streaming))
            ref = dit(x, mask, mu, t, spks, cond, streaming=streaming)
            torch.testing.assert_close(ours, ref, rtol=0, atol=1e-5)


def test_shapes_the_kernel_does_not_take_keep_sdpa():
    """head_dim not a multiple of 32, or a rotary table narrower than head 0: not supported, nothing switched."""
    attn = _attention()
    assert da.supports(attn, attn.dim_head)
    assert not da.supports(attn, attn.dim_head // 2)
    attn.dim_head = 48
    assert not da.supports(attn, 48)
    sampler = copy.deepcopy(_flow().decoder).eval()
    use_prepared_dit(sampler)
    sampler.estimator.dit.rotary_embed.inv_freq = sampler.estimator.dit.rotary_embed.inv_freq[:8]
    assert da.use_dit_attention_kernel(sampler.estimator) == 0


def test_a_failing_trial_warns_and_keeps_sdpa(monkeypatch):
    """A kernel that does not run on this GPU / Triton: a warning naming it, and every block keeps SDPA."""
    sampler = copy.deepcopy(_flow().decoder).eval()
    use_prepared_dit(sampler)

    def broken(*args, **kwargs):
        raise RuntimeError("no kernel image for this device")

    monkeypatch.setattr(da, "launch", broken)
    with pytest.warns(RuntimeWarning, match="DiT attention kernel unavailable.*no kernel image"):
        assert da.use_dit_attention_kernel(sampler.estimator) == 0
    assert all(type(b.attn) is FusedQKVAttention for b in sampler.estimator.dit.transformer_blocks)
