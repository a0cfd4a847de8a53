"""v3's DiT with its time embedding and attention mask prepared outside the captured step (``dit_prepared``): the
plain DiT's velocity in both attention modes, and the graphed solver gives the plain solver's mel with one graph
per bucket serving both modes."""

from __future__ import annotations

import copy
import functools

import pytest
import torch

from cosydesk.model import load
from cosydesk.runtime.backends.cudagraph.dit_prepared import FusedQKVAttention, PreparedDiT, fuse_qkv, use_prepared_dit
from tests.support.paths import fixture_dir


@functools.lru_cache(maxsize=None)
def _flow():
    return load(fixture_dir("v3") / "model").flow


def _inputs(frames: int, valid: int, seed: int = 0):
    g = torch.Generator().manual_seed(seed)
    x, mu, cond = (torch.randn(2, 80, frames, generator=g) for _ in range(3))
    mask = torch.zeros(2, 1, frames)
    mask[:, :, :valid] = 1
    return x, mask, mu, torch.tensor([0.3, 0.3]), torch.randn(2, 80, generator=g), cond


@pytest.mark.parametrize("streaming", [False, True])
def test_prepared_inputs_give_the_plain_dit_velocity_cpu(streaming):
    dit = _flow().estimator.eval()
    prepared = PreparedDiT(dit)
    x, mask, mu, t, spks, cond = _inputs(80, 63)
    with torch.inference_mode():
        ref = dit(x, mask, mu, t, spks, cond, streaming=streaming)
        ours = prepared(x, mask, mu, t, spks, cond, streaming=not streaming,  # the mask decides, not the flag
                        times=prepared.time_projections(t), allowed=prepared.attention_mask(mask, streaming))
        plain = prepared(x, mask, mu, t, spks, cond, streaming=streaming)
    torch.testing.assert_close(ours, ref, rtol=0, atol=1e-6)
    assert torch.equal(plain, ref)
    assert prepared.static_chunk_size == dit.static_chunk_size  # attributes read through


def test_the_graphed_solver_with_a_prepared_dit_gives_the_plain_solver_cpu():
    """``GraphedSampler`` on the CPU (its step runs eagerly on the bucket's buffers): one graph key per bucket, and
    streaming and full-attention calls give what the plain sampler gives."""
    from cosydesk.runtime.backends.cudagraph.cfm import GraphedSampler

    sampler = copy.deepcopy(_flow().decoder).eval()
    reference = copy.deepcopy(sampler)
    assert use_prepared_dit(sampler) and not use_prepared_dit(sampler)  # wraps the plain DiT only, once
    assert all(type(b.attn) is FusedQKVAttention for b in sampler.estimator.dit.transformer_blocks)
    graphed = GraphedSampler(sampler, [32, 64], (False, True))
    assert graphed.prepared and graphed._graph_mode(False) == graphed._graph_mode(True)
    _solves_like(graphed, reference, frames=50, seed=2)


def _solves_like(graphed, reference, frames: int, seed: int) -> tuple[torch.Tensor, ...]:
    """Both samplers on one request of ``frames`` frames, in both attention modes, give the same mel; returns the
    request (z, mask, mu, spks, cond)."""
    g = torch.Generator().manual_seed(seed)
    z, mu, cond = (torch.randn(1, 80, frames, generator=g) for _ in range(3))
    mask, spks = torch.ones(1, 1, frames), torch.randn(1, 80, generator=g)
    with torch.inference_mode():
        for streaming in (True, False):
            ref = reference(z.clone(), mask, mu, spks, cond, streaming=streaming)
            ours = graphed(z.clone(), mask, mu, spks, cond, streaming=streaming)
            torch.testing.assert_close(ours, ref, rtol=0, atol=1e-4)
    return z, mask, mu, spks, cond


def test_the_time_weights_leave_once_the_table_is_built_and_longer_calls_still_solve_cpu():
    """The sampler's table holds every time-decided modulation, so the time MLP and the AdaLN linears are dropped
    (0.28 GB at full size); a call longer than every bucket (the eager solver) reads the same table."""
    from cosydesk.runtime.backends.cudagraph.cfm import GraphedSampler

    sampler = copy.deepcopy(_flow().decoder).eval()
    reference = copy.deepcopy(sampler)
    use_prepared_dit(sampler)
    before = sum(p.numel() for p in sampler.estimator.parameters())
    expected = sum(p.numel() for m in [sampler.estimator.dit.time_embed, sampler.estimator.dit.norm_out.linear]
                   + [b.attn_norm for b in sampler.estimator.dit.transformer_blocks] for p in m.parameters())
    graphed = GraphedSampler(sampler, [32], (False, True))
    assert graphed.time_table.shape == (sampler.n_steps, 2, sampler.estimator.width)
    assert before - sum(p.numel() for p in sampler.estimator.parameters()) == expected > 0
    assert all(b.attn_norm is None for b in sampler.estimator.dit.transformer_blocks)
    z, mask, mu, spks, cond = _solves_like(graphed, reference, frames=45, seed=3)  # 45 frames > the 32 bucket
    with torch.inference_mode():
        with pytest.raises(RuntimeError, match="released"):
            sampler.estimator(z.expand(2, -1, -1), mask.expand(2, -1, -1), mu.expand(2, -1, -1),
                              torch.tensor([0.5, 0.5]), spks.expand(2, -1), cond.expand(2, -1, -1))


def test_fused_qkv_is_one_product_of_the_stacked_weights_and_keeps_the_velocity_cpu():
    """``fuse_qkv``: one [3*inner, dim] product replaces to_q / to_k / to_v (no weight held twice), and the DiT's
    velocity stays the plain one in both attention modes; fusing again does nothing."""
    dit = _flow().estimator.eval()
    fused = copy.deepcopy(dit)
    attn = dit.transformer_blocks[0].attn
    assert all(fuse_qkv(block.attn) for block in fused.transformer_blocks)
    assert not fuse_qkv(fused.transformer_blocks[0].attn)
    first = fused.transformer_blocks[0].attn
    assert not hasattr(first, "to_q") and "attn.to_q.weight" not in fused.transformer_blocks[0].state_dict()
    assert torch.equal(first.qkv.weight, torch.cat([attn.to_q.weight, attn.to_k.weight, attn.to_v.weight]))
    assert torch.equal(first.qkv.bias, torch.cat([attn.to_q.bias, attn.to_k.bias, attn.to_v.bias]))
    assert sum(p.numel() for p in fused.parameters()) == sum(p.numel() for p in dit.parameters())
    x, mask, mu, t, spks, cond = _inputs(70, 52, seed=4)
    with torch.inference_mode():
        for streaming in (False, True):
            torch.testing.assert_close(fused(x, mask, mu, t, spks, cond, streaming=streaming),
                                       dit(x, mask, mu, t, spks, cond, streaming=streaming), rtol=0, atol=1e-6)


def test_the_prepared_blocks_compiled_keep_the_velocity_with_one_entry_for_every_block_cpu():
    """The compiled unit (``ModulatedDiTBlock``: the previous block's last residual first, this block's left
    pending) through torch.compile (aot_eager on CI) gives the plain DiT's velocity, and its 22 (here: the
    fixture's) instances share one compiled entry per shape regime."""
    import torch._dynamo
    from torch._dynamo.utils import counters

    from cosydesk.runtime.backends.cudagraph.compile import ESTIMATOR_BLOCKS, compile_blocks

    torch._dynamo.reset()
    counters.clear()
    sampler = copy.deepcopy(_flow().decoder).eval()
    dit = copy.deepcopy(sampler.estimator)
    use_prepared_dit(sampler)
    prepared = sampler.estimator
    assert compile_blocks(prepared, ESTIMATOR_BLOCKS, torch.device("cpu"), backend="aot_eager") > 0
    assert all(getattr(b, "_compiled_call_impl", None) is not None for b in prepared.blocks)
    with torch.inference_mode():
        for frames, valid in ((64, 50), (96, 96), (128, 77)):
            x, mask, mu, t, spks, cond = _inputs(frames, valid, seed=frames)
            for streaming in (False, True):
                ours = prepared(x, mask, mu, t, spks, cond, times=prepared.time_projections(t),
                                allowed=prepared.attention_mask(mask, streaming))
                torch.testing.assert_close(ours, dit(x, mask, mu, t, spks, cond, streaming=streaming), rtol=0,
                                           atol=1e-5)
    assert counters["stats"]["unique_graphs"] <= 2  # static first length, then one dynamic entry
    torch._dynamo.reset()
